/*
 * dpdk_port.c - the DPDK datapath's entry (dpdk_link.h): EAL, once per
 * process, and one ethdev port with one receive and one transmit queue,
 * polled by the library's progress like a socket; closing it.
 *
 * The port is a virtual device named by MROCE_DPDK_VDEV (memif pairs up by
 * role=auto, af_packet gets frames that hold a jumbo packet) or the first
 * port EAL found.  Setup picks what the port offers: the checksum offload,
 * an MTU of 9000, and zero-copy transmit (dpdk_tx.c) on the PMDs that are
 * done with a frame when rte_eth_tx_burst returns.  The descriptor for
 * epoll is an eventfd kept readable: a poll-mode port has no interrupt,
 * so a sleeping progress thread never sleeps on it.
 */
#define _GNU_SOURCE
#include "dpdk_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <mroce/mroce.h>
#include <mroce/wire.h>

#include <rte_bus_vdev.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include "dpdk_int.h"

static int eal_done; /* EAL initialises once per process */
static int port_busy;
static unsigned seq; /* names devices and pools apart */

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
    dpdk_tx_flush(d);
    dpdk_rx_release(d);
    if (getenv("MROCE_DUMP_COUNTERS"))
        fprintf(stderr,
                "libmroce dpdk: rx_ok %llu drops: short %llu mac %llu "
                "ethertype %llu ip_hdr %llu fragment %llu proto %llu "
                "ip_dst %llu port %llu udp_len %llu udp_csum %llu "
                "multiseg %llu arp %llu nd %llu; arp_ok %llu nd_ok %llu; "
                "tx nombuf %llu ring_full %llu resolve_req %llu "
                "resolve_reply %llu; rx_csum_good %llu rx_csum_zero %llu; "
                "zc %d tx %llu copied %llu waits %llu held %u\n",
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
                (unsigned long long)d->rx_csum_good,
                (unsigned long long)d->rx_csum_zero, d->zc,
                (unsigned long long)d->zc_tx, (unsigned long long)d->zc_copy,
                (unsigned long long)d->zc_waits, (unsigned)d->zc_out);
    if (!d->memif) {
        rte_eth_dev_stop(d->port_id);
        rte_eth_dev_close(d->port_id);
        rte_mempool_free(d->pool);
        rte_mempool_free(d->ext_pool);
    }
    if (d->evfd >= 0)
        close(d->evfd);
    free(d->linear);
    /* A payload a PMD still holds points at d->zcs (its free callback):
     * then d stays allocated. */
    if (!__atomic_load_n(&d->zc_out, __ATOMIC_ACQUIRE))
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
    dpdk_rx_recv, dpdk_tx_send, dpdk_tx_flush, dl_fd, dl_close,
};

/* EAL once per process, keeping the caller's CPU affinity (EAL pins the
 * calling thread to its first lcore). */
static int eal_init(char *err, size_t errlen)
{
    if (eal_done)
        return 0;
    const char *args = getenv("MROCE_DPDK_ARGS");
    const char *vdev = getenv("MROCE_DPDK_VDEV");
    /* memif's zero-copy mode shares all of the process's DPDK memory with
     * its peer, which needs that memory in one file descriptor per
     * segment list (--single-file-segments; memfd without hugepages). */
    if ((!args || !*args) && vdev && strstr(vdev, "zero-copy=yes"))
        args = "--no-huge --no-shconf -m 128 --no-pci --no-telemetry -l 0 "
               "--log-level=lib.eal:warning --single-file-segments";
    else if (!args || !*args)
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

/* Whether transmit may chain payloads from registered memory (dpdk_tx.c):
 * the port takes chained frames, and its PMD reads a frame with the CPU
 * and is done with it when rte_eth_tx_burst returns: memif in copy mode
 * and af_packet copy it into their rings, tap writes it to its
 * descriptor; null frees what it is given unread, chains included, though
 * it does not report RTE_ETH_TX_OFFLOAD_MULTI_SEGS.  A PMD that DMAs
 * needs the registered memory mapped for the device first, and memif's
 * zero-copy mode lends the buffers to its peer: both copy.
 * MROCE_DPDK_ZC=0 turns it off. */
static int zc_allowed(const struct rte_eth_dev_info *info, int lent)
{
    static const char *const copies[] = {"net_memif", "net_af_packet",
                                         "net_tap"};
    const char *e = getenv("MROCE_DPDK_ZC");
    if ((e && strcmp(e, "0") == 0) || lent || !info->driver_name)
        return 0;
    if (strcmp(info->driver_name, "net_null") == 0)
        return 1;
    if (!(info->tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS))
        return 0;
    for (size_t i = 0; i < sizeof copies / sizeof copies[0]; i++)
        if (strcmp(info->driver_name, copies[i]) == 0)
            return 1;
    return 0;
}

/* Configures and starts the port; lent: a memif port in zero-copy mode. */
static int port_setup(struct dlink *d, int lent, char *err, size_t errlen)
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
    /* Without the offload an IPv4 frame leaves its UDP checksum 0: WIRE-13
     * allows it and every receiver accepts it, and CRC32C covers the
     * packet end to end, so summing each payload twice in software (to
     * send and to receive) buys no protection.  MROCE_DPDK_UDP_CSUM=1
     * computes it; IPv6 always does. */
    const char *uc = getenv("MROCE_DPDK_UDP_CSUM");
    if (d->tx_csum)
        d->csum = MROCE_ETH_CSUM_OFFLOAD;
    else if (d->family6 || (uc && strcmp(uc, "1") == 0))
        d->csum = MROCE_ETH_CSUM_SW;
    else
        d->csum = MROCE_ETH_CSUM_NONE;
    if (rte_eth_dev_info_get(d->port_id, &info) == 0 &&
        zc_allowed(&info, lent)) {
        conf.txmode.offloads |= info.tx_offload_capa &
                                RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
        d->zc = 1;
    }
    if (getenv("MROCE_DUMP_COUNTERS") &&
        rte_eth_dev_info_get(d->port_id, &info) == 0)
        fprintf(stderr,
                "libmroce dpdk: port %u (%s) checksum offload: tx ipv4 %d "
                "udp %d, rx ipv4 %d udp %d; used: tx %d rx %d; udp "
                "checksum sent: %s; mtu %u; zero-copy tx %d\n",
                d->port_id, info.driver_name ? info.driver_name : "?",
                !!(info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM),
                !!(info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM),
                !!(info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_IPV4_CKSUM),
                !!(info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_UDP_CKSUM),
                d->tx_csum, d->rx_csum,
                d->csum == MROCE_ETH_CSUM_OFFLOAD ? "port"
                : d->csum == MROCE_ETH_CSUM_SW    ? "software"
                                                  : "none",
                (unsigned)conf.rxmode.mtu, d->zc);
    int r = rte_eth_dev_configure(d->port_id, 1, 1, &conf);
    if (r == 0)
        r = rte_eth_rx_queue_setup(d->port_id, 0, DPDK_RING_SIZE,
                                   (unsigned)rte_eth_dev_socket_id(d->port_id),
                                   NULL, d->pool);
    if (r == 0)
        r = rte_eth_tx_queue_setup(d->port_id, 0, DPDK_RING_SIZE,
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

/* Creates the virtual device MROCE_DPDK_VDEV names ("driver,args") and
 * finds its port; *lent tells a memif port in zero-copy mode.  Returns 0,
 * or MROCE_EDATAPATH with the cause in err. */
static int vdev_create(struct dlink *d, const char *vdev, int *lent, char *err,
                       size_t errlen)
{
    char name[64], vargs[512];
    const char *comma = strchr(vdev, ',');
    size_t nl = comma ? (size_t)(comma - vdev) : strlen(vdev);
    snprintf(name, sizeof name, "%.*s_mroce%u", (int)(nl < 40 ? nl : 40), vdev,
             seq++);
    snprintf(vargs, sizeof vargs, "%s", comma ? comma + 1 : "");
    /* memif: every frame in one shared-memory buffer (the largest
     * MetaRoCE packet fits), so the port never chains buffers. */
    if (strncmp(vdev, "net_memif", 9) == 0 && !strstr(vargs, "bsize=")) {
        size_t vl = strlen(vargs);
        snprintf(vargs + vl, sizeof vargs - vl, "%sbsize=16384", vl ? "," : "");
    }
    int auto_server = strncmp(vdev, "net_memif", 9) == 0 &&
                      memif_auto_role(vargs, sizeof vargs);
    /* af_packet: frames of up to 8 KiB in one mbuf (its default is 2
     * KiB); its ring needs a block size that is a multiple of the
     * frame size. */
    if (strncmp(vdev, "net_af_packet", 13) == 0 && !strstr(vargs, "framesz=")) {
        size_t vl = strlen(vargs);
        snprintf(vargs + vl, sizeof vargs - vl,
                 "%sblocksz=16384,framesz=8192,framecnt=512", vl ? "," : "");
    }
    *lent = strstr(vargs, "zero-copy=yes") != NULL;
    int r = rte_vdev_init(name, vargs);
    char *role = strstr(vargs, "role=server");
    d->memif = strncmp(vdev, "net_memif", 9) == 0;
    if (r < 0 && auto_server && role) {
        memcpy(role, "role=client", 11); /* a server came first */
        snprintf(name, sizeof name, "%.*s_mroce%u", (int)(nl < 40 ? nl : 40),
                 vdev, seq++);
        r = rte_vdev_init(name, vargs);
    }
    if (r < 0 || rte_eth_dev_get_port_by_name(name, &d->port_id) != 0) {
        snprintf(err, errlen, "cannot create DPDK device %s (%s): %s", name,
                 vdev, rte_strerror(r < 0 ? -r : ENODEV));
        return MROCE_EDATAPATH;
    }
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
    char pname[64];
    rc = MROCE_EDATAPATH;
    int lent = 0;
    if (vdev && *vdev) {
        if (vdev_create(d, vdev, &lent, err, errlen) < 0)
            goto fail;
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
    d->pool = rte_pktmbuf_pool_create(pname, DPDK_NB_MBUF, 256, 0,
                                      DPDK_DATA_ROOM, SOCKET_ID_ANY);
    snprintf(pname, sizeof pname, "mroce_ext%u", seq++);
    if (d->pool)
        d->ext_pool = rte_pktmbuf_pool_create(pname, 1023, 64, 0, 0,
                                              SOCKET_ID_ANY);
    if (!d->pool || !d->ext_pool) {
        snprintf(err, errlen, "cannot create the mbuf pools: %s",
                 rte_strerror(rte_errno));
        rc = MROCE_ENOMEM;
        goto fail;
    }
    struct rte_ether_addr ea;
    if (rte_eth_macaddr_get(d->port_id, &ea) == 0)
        memcpy(d->self.mac, ea.addr_bytes, 6);
    if (macs && *macs && dpdk_neigh_parse_mac(macs, d->self.mac) < 0) {
        snprintf(err, errlen, "cannot parse MROCE_DPDK_MAC=\"%s\"", macs);
        rc = MROCE_EINVAL;
        goto fail;
    }
    if (neigh && *neigh && dpdk_neigh_parse(d, neigh) < 0) {
        snprintf(err, errlen, "cannot parse MROCE_DPDK_NEIGH=\"%s\"", neigh);
        rc = MROCE_EINVAL;
        goto fail;
    }
    rc = port_setup(d, lent, err, errlen);
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
    rte_mempool_free(d->pool);
    rte_mempool_free(d->ext_pool);
    free(d->linear);
    free(d);
    return rc;
}
