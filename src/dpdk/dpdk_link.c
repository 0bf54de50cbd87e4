/*
 * dpdk_link.c - the DPDK datapath's link (dpdk_link.h): EAL and one ethdev
 * port with one receive and one transmit queue, polled by the library's
 * progress like a socket.
 *
 * Transmit copies each datagram's gather list once, into an mbuf after
 * the headers ethframe.c writes, and sends the burst at flush.  Receive
 * parses each frame strictly (ethframe.c: foreign EtherTypes, wrong MACs,
 * fragments, bad IP/UDP headers are dropped and counted) and hands the
 * UDP payload to the library inside the mbuf, where the engine's placement
 * is the one copy; the mbufs are freed at the next receive call.  The
 * descriptor for epoll is an eventfd kept readable: a poll-mode port has
 * no interrupt, so a sleeping progress thread never sleeps on it.  The
 * link also answers and sends ARP and IPv6 Neighbor Discovery, and hands
 * the checksums to a port that offers the offload.
 */
#define _GNU_SOURCE
#include "dpdk_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <getopt.h>
#include <unistd.h>

#include <mroce/mroce.h>
#include <mroce/wire.h>

#include <rte_bus_vdev.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "ethframe.h"

#define BURST 64
#define NB_MBUF 4095
#define RING_SIZE 1024
/* Room for a jumbo frame in one segment: the DPDK datapath carries
 * packets of up to 9 KiB (MTU <= 9000). */
#define DATA_ROOM (RTE_PKTMBUF_HEADROOM + 9216)
#define MAX_NEIGH 64

struct neigh {
    uint8_t ip[16];
    uint8_t mac[6];
    uint8_t resolved; /* 0: asked by ARP, sent to broadcast meanwhile */
    uint64_t asked;   /* TSC of the last ARP request */
};

struct dlink {
    uint16_t port_id;
    int family6;
    int evfd;
    struct rte_mempool *pool;
    struct mroce_eth_end self;
    struct rte_mbuf *tx[BURST];
    unsigned ntx;
    struct rte_mbuf *held[BURST]; /* the last receive's mbufs */
    unsigned nheld;
    uint8_t *linear; /* a multi-segment frame, made contiguous */
    struct neigh neigh[MAX_NEIGH];
    unsigned nneigh, neigh_next;
    struct mroce_eth_counters ec;
    uint64_t tx_nombuf, tx_ring_full, rx_multiseg;
    uint64_t arp_req_tx, arp_reply_tx;
    int memif;             /* a memif port: parked at close (see dl_close) */
    int tx_csum, rx_csum;  /* the port computes / checks the checksums */
    uint64_t rx_csum_good; /* UDP checksums the port vouched for */
};

static int eal_done; /* EAL initialises once per process */
static int port_busy;

static int parse_mac(const char *s, uint8_t mac[6])
{
    unsigned v[6];
    if (sscanf(s, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4],
               &v[5]) != 6)
        return -1;
    for (int i = 0; i < 6; i++) {
        if (v[i] > 255)
            return -1;
        mac[i] = (uint8_t)v[i];
    }
    return 0;
}

static struct neigh *neigh_find(struct dlink *d, const uint8_t *ip)
{
    size_t al = d->family6 ? 16 : 4;
    for (unsigned i = 0; i < d->nneigh; i++)
        if (memcmp(d->neigh[i].ip, ip, al) == 0)
            return &d->neigh[i];
    return NULL;
}

/* The entry for ip, made (replacing the oldest when full) if missing. */
static struct neigh *neigh_get(struct dlink *d, const uint8_t *ip)
{
    struct neigh *n = neigh_find(d, ip);
    if (n)
        return n;
    unsigned k = d->nneigh < MAX_NEIGH ? d->nneigh++
                                       : d->neigh_next++ % MAX_NEIGH;
    n = &d->neigh[k];
    memset(n, 0, sizeof *n);
    memcpy(n->ip, ip, d->family6 ? 16 : 4);
    return n;
}

static void neigh_set(struct dlink *d, const uint8_t *ip, const uint8_t *mac)
{
    struct neigh *n = neigh_get(d, ip);
    memcpy(n->mac, mac, 6);
    n->resolved = 1;
}

/* "IP=MAC,IP=MAC"; returns -1 on a malformed entry. */
static int neigh_parse(struct dlink *d, const char *spec)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        uint8_t ip[16] = {0}, mac[6];
        if (!eq)
            return -1;
        *eq = 0;
        if (inet_pton(d->family6 ? AF_INET6 : AF_INET, t, ip) != 1 ||
            parse_mac(eq + 1, mac) < 0)
            return -1;
        neigh_set(d, ip, mac);
    }
    return 0;
}

static const uint8_t bcast_mac[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void dl_flush(void *ctx);

/* Queues an ARP frame (a) or an ND one (n) to eth_dst in the burst. */
static void tx_resolve(struct dlink *d, const uint8_t eth_dst[6],
                       const struct mroce_arp *a, const struct mroce_nd *n)
{
    if (d->ntx == BURST)
        dl_flush(d);
    struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
    uint16_t len = a ? MROCE_ARP_FRAME_LEN : MROCE_ND_FRAME_LEN;
    uint8_t *p = m ? (uint8_t *)rte_pktmbuf_append(m, len) : NULL;
    if (!p) {
        d->tx_nombuf++;
        if (m)
            rte_pktmbuf_free(m);
        return;
    }
    if (a)
        (void)mroce_eth_arp_build(p, len, eth_dst, a);
    else
        (void)mroce_eth_nd_build(p, len, d->self.mac, eth_dst, n);
    d->tx[d->ntx++] = m;
    if (a ? a->op == MROCE_ARP_REQUEST : n->type == MROCE_ND_SOLICIT)
        d->arp_req_tx++;
    else
        d->arp_reply_tx++;
}

/* The MAC to send to ip.  A peer not yet resolved is asked by ARP or an
 * IPv6 Neighbor Solicitation (again every 100 ms while unanswered) and
 * sent to broadcast meanwhile. */
static void neigh_lookup(struct dlink *d, const uint8_t *ip, uint8_t mac[6])
{
    struct neigh *n = neigh_get(d, ip);
    if (n->resolved) {
        memcpy(mac, n->mac, 6);
        return;
    }
    memcpy(mac, bcast_mac, 6);
    uint64_t now = rte_get_tsc_cycles();
    if (n->asked && now - n->asked < rte_get_tsc_hz() / 10)
        return;
    n->asked = now;
    if (d->family6) {
        struct mroce_nd ns;
        memset(&ns, 0, sizeof ns);
        ns.type = MROCE_ND_SOLICIT;
        memcpy(ns.src, d->self.ip, 16);
        memcpy(ns.target, ip, 16);
        tx_resolve(d, bcast_mac, NULL, &ns);
        return;
    }
    struct mroce_arp a;
    memset(&a, 0, sizeof a);
    a.op = MROCE_ARP_REQUEST;
    memcpy(a.sha, d->self.mac, 6);
    memcpy(a.spa, d->self.ip, 4);
    memcpy(a.tpa, ip, 4);
    tx_resolve(d, bcast_mac, &a, NULL);
}

/* An ARP frame: a request for our address is answered, and a request or
 * reply aimed at our address teaches the sender's MAC. */
static void arp_in(struct dlink *d, const uint8_t *f, size_t len)
{
    struct mroce_arp a;
    if (memcmp(f, d->self.mac, 6) != 0 && memcmp(f, bcast_mac, 6) != 0) {
        d->ec.drop_mac++;
        return;
    }
    if (mroce_eth_arp_parse(f, len, &a, &d->ec) < 0 ||
        memcmp(a.tpa, d->self.ip, 4) != 0)
        return;
    static const uint8_t zero4[4];
    if (memcmp(a.spa, zero4, 4) != 0) /* not an address probe */
        neigh_set(d, a.spa, a.sha);
    if (a.op != MROCE_ARP_REQUEST)
        return;
    struct mroce_arp r;
    r.op = MROCE_ARP_REPLY;
    memcpy(r.sha, d->self.mac, 6);
    memcpy(r.spa, d->self.ip, 4);
    memcpy(r.tha, a.sha, 6);
    memcpy(r.tpa, a.spa, 4);
    tx_resolve(d, a.sha, &r, NULL);
}

/* An ICMPv6 frame: a solicitation for our address is answered and teaches
 * the solicitor's MAC; an advertisement teaches the target's.  Other
 * ICMPv6 is dropped and counted. */
static void nd_in(struct dlink *d, const uint8_t *f, size_t len)
{
    struct mroce_nd n;
    if (memcmp(f, d->self.mac, 6) != 0 && memcmp(f, bcast_mac, 6) != 0 &&
        !(f[0] == 0x33 && f[1] == 0x33 && f[2] == 0xff &&
          memcmp(f + 3, d->self.ip + 13, 3) == 0)) {
        d->ec.drop_mac++;
        return;
    }
    if (mroce_eth_nd_parse(f, len, &n, &d->ec) < 0)
        return;
    if (n.type == MROCE_ND_ADVERT) {
        /* only for a neighbour we know or asked about */
        if (n.has_mac && neigh_find(d, n.target))
            neigh_set(d, n.target, n.mac);
        return;
    }
    if (memcmp(n.target, d->self.ip, 16) != 0)
        return;
    static const uint8_t zero16[16];
    int dad = memcmp(n.src, zero16, 16) == 0; /* a duplicate-address probe */
    if (dad)
        return;
    if (n.has_mac)
        neigh_set(d, n.src, n.mac);
    struct mroce_nd r;
    memset(&r, 0, sizeof r);
    r.type = MROCE_ND_ADVERT;
    memcpy(r.src, d->self.ip, 16);
    memcpy(r.dst, n.src, 16);
    memcpy(r.target, d->self.ip, 16);
    tx_resolve(d, n.has_mac ? n.mac : f + 6, NULL, &r);
}

static void release_held(struct dlink *d)
{
    for (unsigned i = 0; i < d->nheld; i++)
        rte_pktmbuf_free(d->held[i]);
    d->nheld = 0;
}

static int dl_recv(void *ctx, struct mroce_link_rx *rx, unsigned max)
{
    struct dlink *d = ctx;
    struct rte_mbuf *m[BURST];
    release_held(d);
    if (max > BURST)
        max = BURST;
    unsigned n = rte_eth_rx_burst(d->port_id, 0, m, (uint16_t)max);
    unsigned out = 0, lin_used = 0, arps = 0;
    for (unsigned i = 0; i < n; i++) {
        uint8_t *f = rte_pktmbuf_mtod(m[i], uint8_t *);
        size_t len = rte_pktmbuf_pkt_len(m[i]);
        if (!d->family6 && rte_pktmbuf_data_len(m[i]) >= MROCE_ETH_HDR_LEN &&
            f[12] == MROCE_ETHERTYPE_ARP >> 8 &&
            f[13] == (MROCE_ETHERTYPE_ARP & 0xff)) {
            arp_in(d, f, rte_pktmbuf_data_len(m[i]));
            rte_pktmbuf_free(m[i]);
            arps++;
            continue;
        }
        if (d->family6 && rte_pktmbuf_data_len(m[i]) >= MROCE_ETH_V6_HDRS &&
            f[12] == MROCE_ETHERTYPE_IPV6 >> 8 &&
            f[13] == (MROCE_ETHERTYPE_IPV6 & 0xff) && f[14 + 6] == 58) {
            nd_in(d, f, rte_pktmbuf_data_len(m[i]));
            rte_pktmbuf_free(m[i]);
            arps++;
            continue;
        }
        if (m[i]->nb_segs > 1) {
            /* One linear buffer per burst: later chained frames wait for
             * the next call's buffer, so they are dropped and counted. */
            if (lin_used || len > MROCE_MAX_PKT_LEN + 128) {
                d->rx_multiseg++;
                rte_pktmbuf_free(m[i]);
                continue;
            }
            f = (uint8_t *)rte_pktmbuf_read(m[i], 0, (uint32_t)len, d->linear);
            lin_used = 1;
        }
        struct mroce_eth_rx er;
        int verdict = 0;
        if (d->rx_csum) {
            uint64_t l4 = m[i]->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
            verdict = l4 == RTE_MBUF_F_RX_L4_CKSUM_GOOD  ? 1
                      : l4 == RTE_MBUF_F_RX_L4_CKSUM_BAD ? -1
                                                         : 0;
        }
        if (!f || mroce_eth_parse_ex(f, len, d->family6, &d->self, &er, &d->ec,
                                     verdict) < 0) {
            rte_pktmbuf_free(m[i]);
            continue;
        }
        d->rx_csum_good += verdict > 0;
        neigh_set(d, er.src.ip, er.src.mac);
        struct mroce_link_rx *r = &rx[out++];
        memset(&r->from, 0, sizeof r->from);
        if (d->family6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&r->from;
            s6->sin6_family = AF_INET6;
            s6->sin6_port = htons(er.src.port);
            memcpy(&s6->sin6_addr, er.src.ip, 16);
        } else {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&r->from;
            s4->sin_family = AF_INET;
            s4->sin_port = htons(er.src.port);
            memcpy(&s4->sin_addr, er.src.ip, 4);
        }
        r->buf = f + er.payload_off;
        r->len = er.payload_len;
        r->ecn = er.tos & 3;
        d->held[d->nheld++] = m[i];
    }
    if (arps)
        dl_flush(d); /* replies leave now, not with the next data */
    return (int)out;
}

static void dl_flush(void *ctx)
{
    struct dlink *d = ctx;
    unsigned sent = 0;
    for (int spins = 0; sent < d->ntx && spins < 64; spins++)
        sent += rte_eth_tx_burst(d->port_id, 0, d->tx + sent,
                                 (uint16_t)(d->ntx - sent));
    for (unsigned i = sent; i < d->ntx; i++) {
        d->tx_ring_full++;
        rte_pktmbuf_free(d->tx[i]);
    }
    d->ntx = 0;
}

static int dl_send(void *ctx, uint16_t src_port, const struct sockaddr *to,
                   const struct iovec *iov, int iovcnt, uint8_t tos)
{
    struct dlink *d = ctx;
    struct mroce_eth_end dst;
    memset(&dst, 0, sizeof dst);
    if (d->family6 && to->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)to;
        memcpy(dst.ip, &s6->sin6_addr, 16);
        dst.port = ntohs(s6->sin6_port);
    } else if (!d->family6 && to->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)to;
        memcpy(dst.ip, &s4->sin_addr, 4);
        dst.port = ntohs(s4->sin_port);
    } else {
        return -1;
    }
    neigh_lookup(d, dst.ip, dst.mac);
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++)
        len += iov[i].iov_len;
    size_t hdrs = d->family6 ? MROCE_ETH_V6_HDRS : MROCE_ETH_V4_HDRS;
    struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
    if (!m) {
        d->tx_nombuf++;
        return -1;
    }
    uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(hdrs + len));
    if (!p || hdrs + len > UINT16_MAX) {
        rte_pktmbuf_free(m);
        return -1;
    }
    size_t off = hdrs;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(p + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    struct mroce_eth_end src = d->self;
    src.port = src_port;
    if (mroce_eth_build_ex(p, hdrs + len, d->family6, &src, &dst, tos, len,
                           d->tx_csum) != hdrs) {
        rte_pktmbuf_free(m);
        return -1;
    }
    if (d->tx_csum) {
        m->l2_len = MROCE_ETH_HDR_LEN;
        m->l3_len = d->family6 ? 40 : 20;
        m->ol_flags |= RTE_MBUF_F_TX_UDP_CKSUM |
                       (d->family6
                            ? RTE_MBUF_F_TX_IPV6
                            : RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM);
    }
    if (d->ntx == BURST) /* an ARP request took the last place */
        dl_flush(d);
    d->tx[d->ntx++] = m;
    if (d->ntx == BURST)
        dl_flush(d);
    return 0;
}

static int dl_fd(void *ctx)
{
    return ((struct dlink *)ctx)->evfd;
}

/* A memif port tears its connection down in two threads: EAL's interrupt
 * thread, when the peer hangs up, and the caller's, in rte_eth_dev_stop
 * or rte_eth_dev_close.  Both free the shared regions and rings, with no
 * lock between them, so when the two ends close together a port can free
 * them twice ("EAL: Error: Invalid memory", or a crash at exit).  A closed
 * memif port is therefore parked, never stopped by the caller: the peer's
 * hang-up tears it down in the interrupt thread alone, and its mbuf pool
 * stays with it until the process exits.  The next device a process opens
 * gets a new memif port. */
static void dl_close(void *ctx)
{
    struct dlink *d = ctx;
    dl_flush(d);
    release_held(d);
    if (getenv("MROCE_DUMP_COUNTERS"))
        fprintf(stderr,
                "libmroce dpdk: rx_ok %llu drops: short %llu mac %llu "
                "ethertype %llu ip_hdr %llu fragment %llu proto %llu "
                "ip_dst %llu port %llu udp_len %llu udp_csum %llu "
                "multiseg %llu arp %llu nd %llu; arp_ok %llu nd_ok %llu; "
                "tx nombuf %llu ring_full %llu resolve_req %llu "
                "resolve_reply %llu; rx_csum_good %llu\n",
                (unsigned long long)d->ec.rx_ok,
                (unsigned long long)d->ec.drop_short,
                (unsigned long long)d->ec.drop_mac,
                (unsigned long long)d->ec.drop_ethertype,
                (unsigned long long)d->ec.drop_ip_hdr,
                (unsigned long long)d->ec.drop_fragment,
                (unsigned long long)d->ec.drop_proto,
                (unsigned long long)d->ec.drop_ip_dst,
                (unsigned long long)d->ec.drop_port,
                (unsigned long long)d->ec.drop_udp_len,
                (unsigned long long)d->ec.drop_udp_csum,
                (unsigned long long)d->rx_multiseg,
                (unsigned long long)d->ec.drop_arp,
                (unsigned long long)d->ec.drop_nd,
                (unsigned long long)d->ec.arp_ok,
                (unsigned long long)d->ec.nd_ok,
                (unsigned long long)d->tx_nombuf,
                (unsigned long long)d->tx_ring_full,
                (unsigned long long)d->arp_req_tx,
                (unsigned long long)d->arp_reply_tx,
                (unsigned long long)d->rx_csum_good);
    if (!d->memif) {
        rte_eth_dev_stop(d->port_id);
        rte_eth_dev_close(d->port_id);
        rte_mempool_free(d->pool);
    }
    if (d->evfd >= 0)
        close(d->evfd);
    free(d->linear);
    free(d);
    port_busy = 0;
}

/* Whether a listening Unix socket named path (abstract: "@path") exists:
 * /proc/net/unix lists it, flags __SO_ACCEPTCON (00010000). */
static int unix_listening(const char *name)
{
    FILE *f = fopen("/proc/net/unix", "r");
    if (!f)
        return 0;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char flags[16], path[300] = "";
        if (sscanf(line, "%*s %*s %*s %15s %*s %*s %*s %299s", flags, path) ==
                2 &&
            strcmp(flags, "00010000") == 0 && strcmp(path, name) == 0)
            found = 1;
    }
    fclose(f);
    return found;
}

/* memif "role=auto": client when a memif server already listens on the
 * socket, server otherwise, so two processes started with the same
 * MROCE_DPDK_VDEV pair up (the first one to open is the server; when two
 * open at once, the second's bind fails and it retries as the client).
 * Rewrites the role in vargs; returns 1 when it chose the server. */
static int memif_auto_role(char *vargs, size_t cap)
{
    char *r = strstr(vargs, "role=auto");
    if (!r)
        return 0;
    const char *sk = strstr(vargs, "socket=");
    char sock[256] = "/run/memif.sock", name[300];
    if (sk)
        sscanf(sk + 7, "%255[^,]", sock);
    int abstract = !strstr(vargs, "socket-abstract=no");
    snprintf(name, sizeof name, "%s%s", abstract ? "@" : "", sock);
    int server = !unix_listening(name);
    char rest[512];
    snprintf(rest, sizeof rest, "%s", r + strlen("role=auto"));
    snprintf(r, cap - (size_t)(r - vargs), "role=%s%s",
             server ? "server" : "client", rest);
    return server;
}

static const struct mroce_link_ops dpdk_ops = {
    dl_recv, dl_send, dl_flush, dl_fd, dl_close,
};

/* EAL once per process, keeping the caller's CPU affinity (EAL pins the
 * calling thread to its first lcore). */
static int eal_init(char *err, size_t errlen)
{
    if (eal_done)
        return 0;
    const char *args = getenv("MROCE_DPDK_ARGS");
    if (!args || !*args)
        args = "--no-huge --no-shconf -m 128 --no-pci --no-telemetry -l 0 "
               "--log-level=lib.eal:warning";
    char buf[1024];
    char *argv[64];
    int argc = 0;
    argv[argc++] = (char *)"libmroce";
    snprintf(buf, sizeof buf, "%s", args);
    for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < 63;
         t = strtok_r(NULL, " ", &save))
        argv[argc++] = t;
    argv[argc] = NULL;
    cpu_set_t cs;
    int have_cs = sched_getaffinity(0, sizeof cs, &cs) == 0;
    /* The program may have run getopt already: EAL parses with it too. */
    int saved_optind = optind;
    optind = 1;
    int r = rte_eal_init(argc, argv);
    optind = saved_optind;
    if (have_cs)
        (void)sched_setaffinity(0, sizeof cs, &cs);
    if (r < 0) {
        snprintf(err, errlen,
                 "rte_eal_init failed (MROCE_DPDK_ARGS=\"%s\"): %s", args,
                 rte_strerror(rte_errno));
        return MROCE_EDATAPATH;
    }
    eal_done = 1;
    return 0;
}

static int port_setup(struct dlink *d, char *err, size_t errlen)
{
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    /* Checksums go to the port where it offers them, unless
     * MROCE_DPDK_OFFLOAD=0; software otherwise. */
    struct rte_eth_dev_info info;
    const char *off = getenv("MROCE_DPDK_OFFLOAD");
    int allow = !(off && strcmp(off, "0") == 0);
    /* The largest frame the link sends (MTU 9000), where the port allows:
     * a port left at its default 1500 drops larger frames (net_tap);
     * af_packet reports 1518-byte frames and carries larger ones anyway. */
    if (rte_eth_dev_info_get(d->port_id, &info) == 0) {
        uint32_t mtu = 9000;
        if (info.max_mtu < mtu)
            mtu = info.max_mtu;
        if (info.max_rx_pktlen < mtu + 18u) /* Ethernet header and CRC */
            mtu = info.max_rx_pktlen > 18u ? info.max_rx_pktlen - 18u : 0;
        if (mtu > RTE_ETHER_MTU)
            conf.rxmode.mtu = mtu;
    }
    if (rte_eth_dev_info_get(d->port_id, &info) == 0 && allow) {
        const uint64_t tx4 = RTE_ETH_TX_OFFLOAD_IPV4_CKSUM |
                             RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
        const uint64_t rx4 = RTE_ETH_RX_OFFLOAD_IPV4_CKSUM |
                             RTE_ETH_RX_OFFLOAD_UDP_CKSUM;
        if ((info.tx_offload_capa & tx4) == tx4) {
            conf.txmode.offloads |= tx4;
            d->tx_csum = 1;
        }
        if ((info.rx_offload_capa & rx4) == rx4) {
            conf.rxmode.offloads |= rx4;
            d->rx_csum = 1;
        }
    }
    if (getenv("MROCE_DUMP_COUNTERS") &&
        rte_eth_dev_info_get(d->port_id, &info) == 0)
        fprintf(stderr,
                "libmroce dpdk: port %u (%s) checksum offload: tx ipv4 %d "
                "udp %d, rx ipv4 %d udp %d; used: tx %d rx %d; mtu %u\n",
                d->port_id, info.driver_name ? info.driver_name : "?",
                !!(info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM),
                !!(info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM),
                !!(info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM),
                !!(info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM),
                d->tx_csum, d->rx_csum, (unsigned)conf.rxmode.mtu);
    int r = rte_eth_dev_configure(d->port_id, 1, 1, &conf);
    if (r == 0)
        r = rte_eth_rx_queue_setup(d->port_id, 0, RING_SIZE,
                                   (unsigned)rte_eth_dev_socket_id(d->port_id),
                                   NULL, d->pool);
    if (r == 0)
        r = rte_eth_tx_queue_setup(d->port_id, 0, RING_SIZE,
                                   (unsigned)rte_eth_dev_socket_id(d->port_id),
                                   NULL);
    if (r == 0)
        r = rte_eth_dev_start(d->port_id);
    if (r < 0) {
        snprintf(err, errlen, "DPDK port %u setup failed: %s", d->port_id,
                 rte_strerror(-r));
        return MROCE_EDATAPATH;
    }
    (void)rte_eth_promiscuous_enable(d->port_id);
    return 0;
}

int mroce_dpdk_link_open(struct mroce_link *l,
                         const struct sockaddr_storage *local, char *err,
                         size_t errlen)
{
    if (port_busy) {
        snprintf(err, errlen, "one DPDK device per process is open already");
        return MROCE_EINVAL;
    }
    int rc = eal_init(err, errlen);
    if (rc < 0)
        return rc;
    struct dlink *d = calloc(1, sizeof *d);
    if (!d || !(d->linear = malloc(MROCE_MAX_PKT_LEN + 128))) {
        free(d);
        snprintf(err, errlen, "out of memory");
        return MROCE_ENOMEM;
    }
    d->evfd = -1;
    d->family6 = local->ss_family == AF_INET6;
    if (d->family6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)local;
        memcpy(d->self.ip, &s6->sin6_addr, 16);
        d->self.port = ntohs(s6->sin6_port);
    } else {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)local;
        memcpy(d->self.ip, &s4->sin_addr, 4);
        d->self.port = ntohs(s4->sin_port);
    }
    if (!d->self.port)
        d->self.port = MROCE_UDP_PORT;
    const char *vdev = getenv("MROCE_DPDK_VDEV");
    const char *neigh = getenv("MROCE_DPDK_NEIGH");
    const char *macs = getenv("MROCE_DPDK_MAC");
    static unsigned seq;
    char pname[64];
    rc = MROCE_EDATAPATH;
    if (vdev && *vdev) {
        char name[64], vargs[512];
        const char *comma = strchr(vdev, ',');
        size_t nl = comma ? (size_t)(comma - vdev) : strlen(vdev);
        snprintf(name, sizeof name, "%.*s_mroce%u", (int)(nl < 40 ? nl : 40),
                 vdev, seq++);
        snprintf(vargs, sizeof vargs, "%s", comma ? comma + 1 : "");
        /* memif: every frame in one shared-memory buffer (the largest
         * MetaRoCE packet fits), so the port never chains buffers. */
        if (strncmp(vdev, "net_memif", 9) == 0 && !strstr(vargs, "bsize=")) {
            size_t vl = strlen(vargs);
            snprintf(vargs + vl, sizeof vargs - vl, "%sbsize=16384",
                     vl ? "," : "");
        }
        int auto_server = strncmp(vdev, "net_memif", 9) == 0 &&
                          memif_auto_role(vargs, sizeof vargs);
        /* af_packet: frames of up to 8 KiB in one mbuf (its default is 2
         * KiB); its ring needs a block size that is a multiple of the
         * frame size. */
        if (strncmp(vdev, "net_af_packet", 13) == 0 &&
            !strstr(vargs, "framesz=")) {
            size_t vl = strlen(vargs);
            snprintf(vargs + vl, sizeof vargs - vl,
                     "%sblocksz=16384,framesz=8192,framecnt=512",
                     vl ? "," : "");
        }
        int r = rte_vdev_init(name, vargs);
        char *role = strstr(vargs, "role=server");
        d->memif = strncmp(vdev, "net_memif", 9) == 0;
        if (r < 0 && auto_server && role) {
            memcpy(role, "role=client", 11); /* a server came first */
            snprintf(name, sizeof name, "%.*s_mroce%u",
                     (int)(nl < 40 ? nl : 40), vdev, seq++);
            r = rte_vdev_init(name, vargs);
        }
        if (r < 0 || rte_eth_dev_get_port_by_name(name, &d->port_id) != 0) {
            snprintf(err, errlen, "cannot create DPDK device %s (%s): %s", name,
                     vdev, rte_strerror(r < 0 ? -r : ENODEV));
            goto fail;
        }
        snprintf(pname, sizeof pname, "%s", name);
    } else {
        uint16_t pid;
        int found = 0;
        RTE_ETH_FOREACH_DEV(pid)
        {
            d->port_id = pid;
            found = 1;
            break;
        }
        if (!found) {
            snprintf(err, errlen,
                     "no DPDK port found (set MROCE_DPDK_VDEV or bind a NIC)");
            goto fail;
        }
    }
    snprintf(pname, sizeof pname, "mroce_pool%u", seq++);
    d->pool = rte_pktmbuf_pool_create(pname, NB_MBUF, 256, 0, DATA_ROOM,
                                      SOCKET_ID_ANY);
    if (!d->pool) {
        snprintf(err, errlen, "cannot create the mbuf pool: %s",
                 rte_strerror(rte_errno));
        rc = MROCE_ENOMEM;
        goto fail;
    }
    struct rte_ether_addr ea;
    if (rte_eth_macaddr_get(d->port_id, &ea) == 0)
        memcpy(d->self.mac, ea.addr_bytes, 6);
    if (macs && *macs && parse_mac(macs, d->self.mac) < 0) {
        snprintf(err, errlen, "cannot parse MROCE_DPDK_MAC=\"%s\"", macs);
        rc = MROCE_EINVAL;
        goto fail;
    }
    if (neigh && *neigh && neigh_parse(d, neigh) < 0) {
        snprintf(err, errlen, "cannot parse MROCE_DPDK_NEIGH=\"%s\"", neigh);
        rc = MROCE_EINVAL;
        goto fail;
    }
    rc = port_setup(d, err, errlen);
    if (rc < 0)
        goto fail;
    d->evfd = eventfd(1, EFD_NONBLOCK | EFD_CLOEXEC);
    if (d->evfd < 0) {
        snprintf(err, errlen, "eventfd: %s", strerror(errno));
        rte_eth_dev_stop(d->port_id);
        rc = MROCE_ESOCKET;
        goto fail;
    }
    l->ops = &dpdk_ops;
    l->ctx = d;
    port_busy = 1;
    return 0;
fail:
    if (d->pool)
        rte_mempool_free(d->pool);
    free(d->linear);
    free(d);
    return rc;
}
