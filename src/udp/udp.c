/*
 * udp.c - the UDP datapath (see udp.h): socket setup, batched receive with
 * GRO splitting and ECN, batched transmit with GSO, ICMP error reporting,
 * and the hooks where fault injection acts on each packet.
 *
 * Syscall budget, which is what bounds a software transport on one core:
 * receive is one recvmmsg per batch of up to rx_batch datagrams, and with
 * GRO each datagram may carry many packets; transmit is one sendmsg per run
 * of packets that share a path, a destination and a size (GSO), and runs on
 * the same socket share one sendmmsg.  The engine cooperates by sending
 * bursts of packets on one path (qp attr path_burst).
 *
 * Memory traffic, the other bound: a zero-copy packet's payload is not
 * copied into its slot (the kernel reads it from where it lies), and the
 * receive batch is kept small enough to stay in L2 until the engine has
 * checked and placed it (cfg rx_batch).
 */
#define _GNU_SOURCE
#include "udp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <mroce/wire.h>

#include "fault.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

/* GSO limits: older kernels accept at most 64 segments per send, and the
 * whole send must fit one IP packet's 16-bit length (65507 bytes of IPv4
 * UDP payload); stay a little below. */
#define GSO_MAX_SEGS 64
#define GSO_MAX_BYTES 65000
/* A GRO datagram can hold up to 64 KiB of coalesced payload. */
#define RX_BUF_SIZE 65536
#define RX_CTRL_SIZE 128
#define TX_CTRL_SIZE CMSG_SPACE(sizeof(uint16_t))
#define RCVBUF_BYTES (8 << 20)
/* Bytes of packets (other than MROCE_UDP_TX_LATE ones) that may wait in the
 * staging area before they are sent, even if slots are left: the first
 * bytes of a burst then reach the peer while the rest is still being built
 * (each packet's CRC pass over its payload), so its receiver starts
 * working sooner.  With 16 KiB packets the 64 slots would hold a whole
 * 1 MiB rendezvous READ's responses, and the first would leave only after
 * the last was built.  Smaller packets reach tx_batch first. */
#define TX_STAGE_BYTES (128u << 10)

/* One staged packet; its bytes are in slot i of the transmit arena. */
struct txpkt {
    uint32_t len; /* on the wire */
    int32_t sock; /* index in tx_fds, -1 = the receive socket */
    uint8_t late; /* MROCE_UDP_TX_LATE: sent after the others */
    struct mre_addr to;
    /* Zero-copy (zc != NULL): the slot holds zc_hdr bytes of headers and
     * the CRC after them; zc[0..len - zc_hdr - 4) goes between. */
    const uint8_t *zc;
    uint32_t zc_hdr;
};

struct mroce_udp {
    struct mroce_udp_config cfg;
    int family;
    int rx_fd;
    uint16_t port, src_base, src_count;
    int *tx_fds; /* src_count send sockets */
    int gso_ok;  /* cleared if the kernel refuses UDP_SEGMENT */

    /* receive batch */
    uint8_t *rx_bufs; /* rx_batch * RX_BUF_SIZE */
    struct mmsghdr *rx_msgs;
    struct iovec *rx_iov;
    struct sockaddr_storage *rx_addrs;
    uint8_t *rx_ctrl; /* rx_batch * RX_CTRL_SIZE */

    /* transmit batch: slot i holds packet i */
    uint8_t *tx_slots; /* tx_batch * slot_size */
    struct txpkt *tx_pkts;
    unsigned tx_n;
    size_t tx_bytes;         /* staged bytes of packets that are not late */
    uint8_t rx_short;        /* the last receive call did not fill its batch */
    uint8_t rx_same;         /* the packet being delivered is a GRO segment
                                after the first of its datagram */
    unsigned rx_dirty;       /* rx_msgs entries the last call filled */
    struct mmsghdr *tx_msgs; /* one per send unit (GSO run or single) */
    struct iovec *tx_iov;    /* up to three per packet (zero-copy) */
    struct sockaddr_storage *tx_addrs;
    uint8_t *tx_ctrl; /* tx_batch * TX_CTRL_SIZE */
    int32_t *unit_sock;
    uint32_t *unit_npkts;
    uint32_t *unit_first; /* the unit's first packet */
    uint8_t *unit_late;

    struct mroce_faultgen txf, rxf;
    struct mroce_holdq txh, rxh;
    struct mroce_udp_counters cnt;
    uint8_t blackhole; /* test hook: drop all traffic (set_blackhole) */
};

void mroce_udp_config_default(struct mroce_udp_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    struct sockaddr_in *sin = (struct sockaddr_in *)&cfg->local;
    sin->sin_family = AF_INET;
    sin->sin_port = htons(MROCE_UDP_PORT);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cfg->src_port_count = 256;
    cfg->use_gso = 1;
    cfg->use_gro = 1;
    /* 8 GRO datagrams of up to 64 KiB (usually 8 packets of 4 KiB): at
     * most 512 KiB, which the engine reads (CRC) and copies out while it
     * is still in a typical L2 cache (shared with the kernel's buffers
     * and the placement's targets); a larger batch is evicted before its
     * end.  It is the batch's footprint that matters, not the number of
     * receive calls per round (docs/LOG.md). */
    cfg->rx_batch = 8;
    cfg->tx_batch = 64;
    cfg->slot_size = MROCE_MAX_PKT_LEN;
}

/* --- addresses --- */

int mroce_udp_addr_from_sa(struct mre_addr *a, const struct sockaddr *sa,
                           socklen_t len)
{
    memset(a, 0, sizeof(*a));
    if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        struct sockaddr_in s;
        memset(&s, 0, sizeof(s));
        s.sin_family = AF_INET;
        s.sin_port = in->sin_port;
        s.sin_addr = in->sin_addr;
        memcpy(a->data, &s, sizeof(s));
        a->len = sizeof(s);
        return 0;
    }
    if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        struct sockaddr_in6 s;
        memset(&s, 0, sizeof(s));
        s.sin6_family = AF_INET6;
        s.sin6_port = in6->sin6_port;
        s.sin6_addr = in6->sin6_addr;
        s.sin6_scope_id = in6->sin6_scope_id;
        memcpy(a->data, &s, sizeof(s));
        a->len = sizeof(s);
        return 0;
    }
    return MROCE_EADDR;
}

socklen_t mroce_udp_addr_to_sa(const struct mre_addr *a,
                               struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (a->len != sizeof(struct sockaddr_in) &&
        a->len != sizeof(struct sockaddr_in6))
        return 0;
    memcpy(ss, a->data, a->len);
    if (ss->ss_family == AF_INET && a->len == sizeof(struct sockaddr_in))
        return sizeof(struct sockaddr_in);
    if (ss->ss_family == AF_INET6 && a->len == sizeof(struct sockaddr_in6))
        return sizeof(struct sockaddr_in6);
    return 0;
}

int mroce_udp_resolve(const char *host, uint16_t port, int family,
                      struct sockaddr_storage *ss)
{
    struct in_addr v4;
    struct in6_addr v6;
    memset(ss, 0, sizeof(*ss));
    if (!host)
        return MROCE_EADDR;
    if (inet_pton(AF_INET, host, &v4) == 1) {
        if (family == AF_INET6) {
            struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
            s->sin6_family = AF_INET6;
            s->sin6_port = htons(port);
            s->sin6_addr.s6_addr[10] = 0xff;
            s->sin6_addr.s6_addr[11] = 0xff;
            memcpy(&s->sin6_addr.s6_addr[12], &v4, 4);
        } else {
            struct sockaddr_in *s = (struct sockaddr_in *)ss;
            s->sin_family = AF_INET;
            s->sin_port = htons(port);
            s->sin_addr = v4;
        }
        return 0;
    }
    if (inet_pton(AF_INET6, host, &v6) == 1) {
        if (family == AF_INET)
            return MROCE_EADDR;
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
        s->sin6_family = AF_INET6;
        s->sin6_port = htons(port);
        s->sin6_addr = v6;
        return 0;
    }
    /* Names (and scoped IPv6 literals): the system resolver. */
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = family;
    hints.ai_socktype = SOCK_DGRAM;
    if (family == AF_INET6)
        hints.ai_flags = AI_V4MAPPED;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return MROCE_EADDR;
    int rc = MROCE_EADDR;
    if (res->ai_addrlen <= sizeof(*ss)) {
        memcpy(ss, res->ai_addr, res->ai_addrlen);
        if (ss->ss_family == AF_INET)
            ((struct sockaddr_in *)ss)->sin_port = htons(port);
        else
            ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
        rc = 0;
    }
    freeaddrinfo(res);
    return rc;
}

static int addr_eq(const struct mre_addr *a, const struct mre_addr *b)
{
    return a->len == b->len && !memcmp(a->data, b->data, a->len);
}

static socklen_t sa_len(int family)
{
    return family == AF_INET6 ? sizeof(struct sockaddr_in6)
                              : sizeof(struct sockaddr_in);
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
}

/* --- sockets --- */

/* socket() that, on EMFILE, raises the soft descriptor limit to the hard
 * one once: a device needs src_port_count + 1 descriptors, more than the
 * usual soft limit of 1024 allows for a few devices. */
static int udp_socket(int family)
{
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 && errno == EMFILE) {
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
                fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                            0);
        }
        if (fd < 0)
            errno = EMFILE;
    }
    return fd;
}

/* TOS (DSCP and ECT(0)) and DF on a socket that sends. */
static int setup_tx_opts(int fd, int family, uint8_t dscp)
{
    int tos = (dscp << 2) | MROCE_ECN_ECT0;
    int pmtu = IP_PMTUDISC_DO;
    /* IPv4 options also act on v4-mapped traffic of an IPv6 socket. */
    if (setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) < 0 &&
        family == AF_INET)
        return -1;
    if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) < 0 &&
        family == AF_INET)
        return -1;
    if (family == AF_INET6) {
        int v6pmtu = IPV6_PMTUDISC_DO, one = 1;
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos)) < 0)
            return -1;
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &v6pmtu,
                         sizeof(v6pmtu));
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_DONTFRAG, &one, sizeof(one));
    }
    return 0;
}

static int open_rx_socket(struct mroce_udp *u)
{
    int one = 1, zero = 0, fd = udp_socket(u->family);
    if (fd < 0)
        return MROCE_ESOCKET;
    u->rx_fd = fd;
    if (u->family == AF_INET6)
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    int rcv = RCVBUF_BYTES;
    /* FORCE needs CAP_NET_ADMIN; without it the plain option is capped by
     * net.core.rmem_max, which is still better than the default.  A
     * library must not change that host-wide setting: it asks, and reports
     * what it got (rx_sockbuf; the kernel doubles the value for its
     * bookkeeping).  8 MiB holds a full default window (1024 PSNs of 4 KiB)
     * with the kernel's per-buffer overhead, so the receiver can be
     * descheduled for a whole window without a drop: the window, not the
     * socket buffer, bounds what is queued (an open-loop sender such as
     * the blaster still overruns it, by design).  With the usual 208 KiB
     * rmem_max the buffer
     * holds a few dozen 4 KiB packets; raise net.core.rmem_max if
     * rx_sockbuf shows that and transfers suffer losses. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv)) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    socklen_t rl = sizeof(rcv);
    if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &rl) == 0 && rcv > 0)
        u->cnt.rx_sockbuf = (uint64_t)rcv;
    /* ECN of each datagram, and ICMP errors for what we send from this
     * socket (CONNECT_REQ): a dead port answers "port unreachable". */
    if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) < 0 &&
        u->family == AF_INET)
        return MROCE_ESOCKET;
    (void)setsockopt(fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one));
    if (u->family == AF_INET6) {
        if (setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one)) <
            0)
            return MROCE_ESOCKET;
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &one, sizeof(one));
    }
    if (setup_tx_opts(fd, u->family, u->cfg.dscp) < 0)
        return MROCE_ESOCKET;
    if (u->cfg.use_gro &&
        setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) < 0)
        u->cfg.use_gro = 0; /* kernel without UDP GRO: plain datagrams */
    if (bind(fd, (const struct sockaddr *)&u->cfg.local, sa_len(u->family)) < 0)
        return MROCE_EADDR;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return MROCE_ESOCKET;
    u->port = ntohs(ss.ss_family == AF_INET6
                        ? ((struct sockaddr_in6 *)&ss)->sin6_port
                        : ((struct sockaddr_in *)&ss)->sin_port);
    return 0;
}

static void close_tx_sockets(struct mroce_udp *u)
{
    for (unsigned i = 0; i < u->src_count; i++)
        if (u->tx_fds[i] >= 0) {
            close(u->tx_fds[i]);
            u->tx_fds[i] = -1;
        }
}

/* Binds the whole range [base, base + count); on failure closes what it
 * opened.  Returns 0, MROCE_EADDR (a port was taken: errno EADDRINUSE) or
 * MROCE_ESOCKET. */
static int bind_tx_range(struct mroce_udp *u, uint16_t base)
{
    struct sockaddr_storage ss = u->cfg.local;
    for (unsigned i = 0; i < u->src_count; i++) {
        int fd = udp_socket(u->family);
        if (fd < 0) {
            int e = errno;
            close_tx_sockets(u);
            errno = e;
            return MROCE_ESOCKET;
        }
        u->tx_fds[i] = fd;
        int zero = 0;
        if (u->family == AF_INET6)
            (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero,
                             sizeof(zero));
        if (setup_tx_opts(fd, u->family, u->cfg.dscp) < 0) {
            int e = errno;
            close_tx_sockets(u);
            errno = e;
            return MROCE_ESOCKET;
        }
        sa_set_port(&ss, (uint16_t)(base + i));
        if (bind(fd, (const struct sockaddr *)&ss, sa_len(u->family)) < 0) {
            int e = errno;
            close_tx_sockets(u);
            errno = e;
            return e == EADDRINUSE || e == EACCES ? MROCE_EADDR : MROCE_ESOCKET;
        }
    }
    u->src_base = base;
    return 0;
}

/* With a link: no sockets.  The port is the configured one (0: the
 * default), the source ports a range written into frames, and the link's
 * descriptor stands in for the receive socket. */
static int open_link(struct mroce_udp *u)
{
    const struct sockaddr_storage *ss = &u->cfg.local;
    uint16_t port = ntohs(ss->ss_family == AF_INET6
                              ? ((const struct sockaddr_in6 *)ss)->sin6_port
                              : ((const struct sockaddr_in *)ss)->sin_port);
    u->port = port ? port : MROCE_UDP_PORT;
    u->src_base = u->cfg.src_port_base ? u->cfg.src_port_base : 49152;
    if ((uint32_t)u->src_base + u->src_count > 65536)
        return MROCE_EINVAL;
    u->cfg.use_gso = 0;
    u->cfg.use_gro = 0;
    u->rx_fd = u->cfg.link.ops->fd(u->cfg.link.ctx);
    return 0;
}

static int open_tx_sockets(struct mroce_udp *u)
{
    if (u->cfg.src_port_base) {
        if ((uint32_t)u->cfg.src_port_base + u->src_count > 65536)
            return MROCE_EINVAL;
        return bind_tx_range(u, u->cfg.src_port_base);
    }
    /* Automatic: random contiguous ranges in the dynamic port range
     * 49152..65535 (1024.. if the pool is larger), until one is free. */
    uint32_t lo = u->src_count <= 16384 ? 49152 : 1024;
    uint32_t span = 65536 - lo - u->src_count + 1;
    int rc = MROCE_EADDR;
    for (int attempt = 0; attempt < 64; attempt++) {
        uint32_t r = 0;
        if (getrandom(&r, sizeof(r), 0) != sizeof(r))
            r = (uint32_t)time(NULL) * 2654435761u + (uint32_t)attempt;
        rc = bind_tx_range(u, (uint16_t)(lo + r % span));
        if (rc != MROCE_EADDR)
            return rc;
    }
    errno = EADDRINUSE;
    return rc;
}

void mroce_udp_close(struct mroce_udp *u)
{
    if (!u)
        return;
    if (u->cfg.link.ops)
        u->cfg.link.ops->close(u->cfg.link.ctx);
    else if (u->rx_fd >= 0)
        close(u->rx_fd);
    if (u->tx_fds)
        close_tx_sockets(u);
    mroce_holdq_clear(&u->txh);
    mroce_holdq_clear(&u->rxh);
    free(u->tx_fds);
    free(u->rx_bufs);
    free(u->rx_msgs);
    free(u->rx_iov);
    free(u->rx_addrs);
    free(u->rx_ctrl);
    free(u->tx_slots);
    free(u->tx_pkts);
    free(u->tx_msgs);
    free(u->tx_iov);
    free(u->tx_addrs);
    free(u->tx_ctrl);
    free(u->unit_sock);
    free(u->unit_npkts);
    free(u->unit_first);
    free(u->unit_late);
    free(u);
}

int mroce_udp_open(struct mroce_udp **pu, const struct mroce_udp_config *cfg)
{
    if (!pu || !cfg)
        return MROCE_EINVAL;
    *pu = NULL;
    int fam = cfg->local.ss_family;
    if ((fam != AF_INET && fam != AF_INET6) || cfg->dscp > 63 ||
        cfg->src_port_count == 0 || cfg->src_port_count > 4096 ||
        cfg->rx_batch == 0 || cfg->rx_batch > 256 || cfg->tx_batch == 0 ||
        cfg->tx_batch > 256 || cfg->slot_size < 256 ||
        cfg->slot_size > MROCE_MAX_PKT_LEN)
        return MROCE_EINVAL;
    struct mroce_udp *u = calloc(1, sizeof(*u));
    if (!u) {
        if (cfg->link.ops)
            cfg->link.ops->close(cfg->link.ctx);
        return MROCE_ENOMEM;
    }
    u->cfg = *cfg;
    u->family = fam;
    u->rx_fd = -1;
    u->src_count = cfg->src_port_count;
    u->gso_ok = 1;
    uint64_t seed = cfg->fault_seed;
    if (!seed) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    }
    int rc = MROCE_ENOMEM;
    if (mroce_faultgen_init(&u->txf, &cfg->tx_fault, seed ^ 0x7478ull) < 0 ||
        mroce_faultgen_init(&u->rxf, &cfg->rx_fault, seed ^ 0x7278ull) < 0) {
        rc = MROCE_EINVAL;
        goto fail;
    }
    size_t rb = cfg->rx_batch, tb = cfg->tx_batch;
    u->tx_fds = malloc(u->src_count * sizeof(int));
    u->rx_bufs = malloc(rb * RX_BUF_SIZE);
    u->rx_msgs = calloc(rb, sizeof(*u->rx_msgs));
    u->rx_iov = calloc(rb, sizeof(*u->rx_iov));
    u->rx_addrs = calloc(rb, sizeof(*u->rx_addrs));
    u->rx_ctrl = calloc(rb, RX_CTRL_SIZE);
    u->tx_slots = malloc(tb * cfg->slot_size);
    u->tx_pkts = calloc(tb, sizeof(*u->tx_pkts));
    u->tx_msgs = calloc(tb, sizeof(*u->tx_msgs));
    u->tx_iov = calloc(3 * tb, sizeof(*u->tx_iov));
    u->tx_addrs = calloc(tb, sizeof(*u->tx_addrs));
    u->tx_ctrl = calloc(tb, TX_CTRL_SIZE);
    u->unit_sock = calloc(tb, sizeof(*u->unit_sock));
    u->unit_npkts = calloc(tb, sizeof(*u->unit_npkts));
    u->unit_first = calloc(tb, sizeof(*u->unit_first));
    u->unit_late = calloc(tb, sizeof(*u->unit_late));
    if (!u->tx_fds || !u->rx_bufs || !u->rx_msgs || !u->rx_iov ||
        !u->rx_addrs || !u->rx_ctrl || !u->tx_slots || !u->tx_pkts ||
        !u->tx_msgs || !u->tx_iov || !u->tx_addrs || !u->tx_ctrl ||
        !u->unit_sock || !u->unit_npkts || !u->unit_first || !u->unit_late)
        goto fail;
    for (unsigned i = 0; i < u->src_count; i++)
        u->tx_fds[i] = -1;
    for (size_t i = 0; i < rb; i++) {
        u->rx_iov[i].iov_base = u->rx_bufs + i * RX_BUF_SIZE;
        u->rx_iov[i].iov_len = RX_BUF_SIZE;
        u->rx_msgs[i].msg_hdr.msg_iov = &u->rx_iov[i];
        u->rx_msgs[i].msg_hdr.msg_iovlen = 1;
        u->rx_msgs[i].msg_hdr.msg_name = &u->rx_addrs[i];
        u->rx_msgs[i].msg_hdr.msg_control = u->rx_ctrl + i * RX_CTRL_SIZE;
    }
    u->rx_dirty = (unsigned)rb; /* lengths set by the first receive */
    if (u->cfg.link.ops) {
        rc = open_link(u);
        if (rc < 0)
            goto fail;
        *pu = u;
        return 0;
    }
    rc = open_rx_socket(u);
    if (rc < 0)
        goto fail;
    rc = open_tx_sockets(u);
    if (rc < 0)
        goto fail;
    *pu = u;
    return 0;
fail:;
    int e = errno;
    mroce_udp_close(u);
    errno = e;
    return rc;
}

int mroce_udp_fd(const struct mroce_udp *u)
{
    return u->rx_fd;
}
uint16_t mroce_udp_port(const struct mroce_udp *u)
{
    return u->port;
}
int mroce_udp_rx_drained(const struct mroce_udp *u)
{
    return u->rx_short;
}
int mroce_udp_rx_same_datagram(const struct mroce_udp *u)
{
    return u->rx_same;
}
uint16_t mroce_udp_src_base(const struct mroce_udp *u)
{
    return u->src_base;
}
uint16_t mroce_udp_src_count(const struct mroce_udp *u)
{
    return u->src_count;
}
int mroce_udp_family(const struct mroce_udp *u)
{
    return u->family;
}

void mroce_udp_get_counters(const struct mroce_udp *u,
                            struct mroce_udp_counters *c)
{
    *c = u->cnt;
}

mroce_tstamp mroce_udp_expiry(const struct mroce_udp *u)
{
    mroce_tstamp a = mroce_holdq_expiry(&u->txh);
    mroce_tstamp b = mroce_holdq_expiry(&u->rxh);
    return a < b ? a : b;
}

/* --- receive --- */

static void deliver(struct mroce_udp *u, const uint8_t *buf, size_t len,
                    const struct mre_rx_info *info, mroce_udp_rx_fn fn,
                    void *user)
{
    u->cnt.rx_pkts++;
    u->cnt.rx_bytes += len;
    if (info->ecn == MROCE_ECN_CE)
        u->cnt.rx_ecn_ce++;
    fn(user, buf, len, info);
}

/* Hands out held-back packets that are ready; returns how many. */
static int rx_release(struct mroce_udp *u, mroce_udp_rx_fn fn, void *user,
                      mroce_tstamp now)
{
    int n = 0, i;
    while ((i = mroce_holdq_ready(&u->rxh, now)) >= 0) {
        struct mroce_held h;
        struct mre_rx_info info;
        memset(&info, 0, sizeof info);
        info.plane = u->cfg.plane;
        mroce_holdq_take(&u->rxh, i, &h);
        info.from = h.addr;
        info.ecn = h.ecn;
        deliver(u, h.buf, h.len, &info, fn, user);
        free(h.buf);
        n++;
    }
    return n;
}

/* One received packet through the rx fault stage.  buf is ours to modify
 * (corruption flips a bit in place).  Returns packets delivered. */
static int rx_one(struct mroce_udp *u, uint8_t *buf, size_t len,
                  const struct mre_rx_info *info, mroce_udp_rx_fn fn,
                  void *user, mroce_tstamp now)
{
    if (u->blackhole) {
        u->cnt.fault_rx_drop++;
        return 0;
    }
    unsigned a = mroce_faultgen_decide(&u->rxf);
    int n = 0;
    if (a & MROCE_FAULT_DROP) {
        u->cnt.fault_rx_drop++;
        return 0;
    }
    if (a & MROCE_FAULT_CORRUPT) {
        u->cnt.fault_rx_corrupt++;
        mroce_faultgen_corrupt(&u->rxf, buf, len);
    }
    if (a & MROCE_FAULT_REORDER) {
        struct mroce_held meta;
        memset(&meta, 0, sizeof(meta));
        meta.addr = info->from;
        meta.ecn = info->ecn;
        meta.countdown = mroce_faultgen_countdown(&u->rxf);
        meta.deadline = now + (mroce_tstamp)u->rxf.f.reorder_us * 1000;
        if (mroce_holdq_push(&u->rxh, buf, (uint32_t)len, &meta) == 0) {
            u->cnt.fault_rx_reorder++;
            return 0;
        }
    }
    deliver(u, buf, len, info, fn, user);
    n++;
    if (a & MROCE_FAULT_DUP) {
        u->cnt.fault_rx_dup++;
        deliver(u, buf, len, info, fn, user);
        n++;
    }
    if (u->rxh.n) {
        mroce_holdq_tick(&u->rxh);
        n += rx_release(u, fn, user, now);
    }
    return n;
}

int mroce_udp_drain_errors(struct mroce_udp *u, mroce_udp_err_fn err_fn,
                           void *user)
{
    int n = 0;
    if (u->cfg.link.ops)
        return 0; /* a link reports no ICMP errors */
    for (int guard = 0; guard < 256; guard++) {
        struct sockaddr_storage ss;
        uint8_t ctrl[512], data[64];
        struct iovec iov = {data, sizeof(data)};
        struct msghdr m;
        memset(&m, 0, sizeof(m));
        m.msg_name = &ss;
        m.msg_namelen = sizeof(ss);
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctrl;
        m.msg_controllen = sizeof(ctrl);
        u->cnt.rx_syscalls++;
        if (recvmsg(u->rx_fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            break;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (!((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
                  (c->cmsg_level == IPPROTO_IPV6 &&
                   c->cmsg_type == IPV6_RECVERR)))
                continue;
            struct sock_extended_err ee;
            memcpy(&ee, CMSG_DATA(c), sizeof(ee));
            if (ee.ee_origin != SO_EE_ORIGIN_ICMP &&
                ee.ee_origin != SO_EE_ORIGIN_ICMP6)
                continue;
            u->cnt.rx_icmp_errors++;
            struct mre_addr to;
            if (err_fn && m.msg_namelen &&
                mroce_udp_addr_from_sa(&to, (struct sockaddr *)&ss,
                                       m.msg_namelen) == 0) {
                err_fn(user, &to, (int)ee.ee_errno);
                n++;
            }
        }
    }
    return n;
}

/* One burst from the link, each datagram through the rx fault stage
 * straight from the link's buffer. */
static int recv_link(struct mroce_udp *u, mroce_udp_rx_fn fn, void *user,
                     mroce_tstamp now)
{
    struct mroce_link_rx rx[64];
    unsigned batch = u->cfg.rx_batch < 64 ? u->cfg.rx_batch : 64;
    u->cnt.rx_syscalls++; /* polls of the link, as receive calls */
    int r = u->cfg.link.ops->recv(u->cfg.link.ctx, rx, batch);
    if (r <= 0) {
        u->cnt.rx_empty++;
        u->rx_short = 1;
        return 0;
    }
    u->cnt.rx_datagrams += (uint64_t)r;
    u->rx_short = (unsigned)r < batch;
    int delivered = 0;
    for (int i = 0; i < r; i++) {
        struct mre_rx_info info;
        memset(&info, 0, sizeof info);
        info.plane = u->cfg.plane;
        info.ecn = rx[i].ecn;
        if (mroce_udp_addr_from_sa(&info.from, (struct sockaddr *)&rx[i].from,
                                   sizeof rx[i].from) < 0)
            info.from.len = 0;
        delivered += rx_one(u, rx[i].buf, rx[i].len, &info, fn, user, now);
    }
    return delivered;
}

int mroce_udp_recv(struct mroce_udp *u, mroce_udp_rx_fn fn,
                   mroce_udp_err_fn err_fn, void *user, mroce_tstamp now)
{
    int delivered = 0;
    if (u->rxh.n)
        delivered += rx_release(u, fn, user, now);
    if (u->cfg.link.ops)
        return delivered + recv_link(u, fn, user, now);
    unsigned batch = u->cfg.rx_batch;
    /* The kernel rewrites the lengths and flags of the entries it filled,
     * and only those: reset just the ones the last call used (polling
     * mostly finds nothing, and then there is nothing to reset). */
    for (unsigned i = 0; i < u->rx_dirty; i++) {
        struct msghdr *m = &u->rx_msgs[i].msg_hdr;
        m->msg_namelen = sizeof(struct sockaddr_storage);
        m->msg_controllen = RX_CTRL_SIZE;
        m->msg_flags = 0;
    }
    u->rx_dirty = 0;
    int r;
    for (int tries = 0;; tries++) {
        u->cnt.rx_syscalls++;
        r = recvmmsg(u->rx_fd, u->rx_msgs, batch, MSG_DONTWAIT, NULL);
        if (r >= 0)
            break;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            u->cnt.rx_empty++;
            u->rx_short = 1;
            return delivered;
        }
        /* A pending ICMP error (sk_err) is reported by the next receive
         * call: read the error queue, then try again once. */
        u->cnt.rx_errors++;
        mroce_udp_drain_errors(u, err_fn, user);
        if (tries)
            return delivered;
    }
    u->cnt.rx_datagrams += (uint64_t)r;
    u->rx_dirty = (unsigned)r;
    u->rx_short = (unsigned)r < batch;
    for (int i = 0; i < r; i++) {
        struct msghdr *m = &u->rx_msgs[i].msg_hdr;
        size_t len = u->rx_msgs[i].msg_len;
        uint8_t *buf = u->rx_iov[i].iov_base;
        if (m->msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
            u->cnt.rx_truncated++;
            continue;
        }
        struct mre_rx_info info;
        memset(&info, 0, sizeof info);
        info.plane = u->cfg.plane;
        info.ecn = MROCE_ECN_NOT_ECT;
        size_t seg = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
            if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
                uint8_t tos;
                memcpy(&tos, CMSG_DATA(c), 1);
                info.ecn = tos & 3;
            } else if (c->cmsg_level == IPPROTO_IPV6 &&
                       c->cmsg_type == IPV6_TCLASS) {
                int tc;
                memcpy(&tc, CMSG_DATA(c), sizeof(tc));
                info.ecn = (uint8_t)(tc & 3);
            } else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
                int gs;
                memcpy(&gs, CMSG_DATA(c), sizeof(gs));
                seg = gs > 0 ? (size_t)gs : 0;
            }
        }
        if (mroce_udp_addr_from_sa(&info.from, (struct sockaddr *)m->msg_name,
                                   m->msg_namelen) < 0)
            info.from.len = 0;
        if (!seg || seg >= len) {
            delivered += rx_one(u, buf, len, &info, fn, user, now);
            continue;
        }
        /* GRO: equal segments of `seg` bytes, the last may be shorter. */
        u->cnt.rx_gro_datagrams++;
        for (size_t off = 0; off < len; off += seg) {
            size_t l = len - off < seg ? len - off : seg;
            u->cnt.rx_gro_segs++;
            u->rx_same = off > 0;
            delivered += rx_one(u, buf + off, l, &info, fn, user, now);
        }
        u->rx_same = 0;
    }
    return delivered;
}

/* --- transmit --- */

static uint8_t *slot_at(struct mroce_udp *u, unsigned i)
{
    return u->tx_slots + (size_t)i * u->cfg.slot_size;
}

static int sock_fd(const struct mroce_udp *u, int32_t s)
{
    return s < 0 ? u->rx_fd : u->tx_fds[s];
}

/* Path entropy -> send socket.  The library gives each QP the pool's range
 * as its entropy range; entropies from elsewhere (an ACK answers on the
 * peer's entropy) wrap into the pool. */
static int32_t entropy_sock(const struct mroce_udp *u, uint16_t e)
{
    uint16_t d = (uint16_t)(e - u->src_base);
    return d < u->src_count ? d : e % u->src_count;
}

static void account_sent(struct mroce_udp *u, unsigned unit)
{
    struct msghdr *m = &u->tx_msgs[unit].msg_hdr;
    uint32_t n = u->unit_npkts[unit];
    u->cnt.tx_pkts += n;
    for (size_t k = 0; k < m->msg_iovlen; k++)
        u->cnt.tx_bytes += m->msg_iov[k].iov_len;
    if (n > 1) {
        u->cnt.tx_gso_sends++;
        u->cnt.tx_gso_segs += n;
    }
}

/* The kernel refused a GSO send (no UDP_SEGMENT support on this route):
 * send the unit's packets one by one, and stop using GSO. */
static void send_unit_plain(struct mroce_udp *u, int fd, unsigned unit)
{
    struct msghdr *m = &u->tx_msgs[unit].msg_hdr;
    struct iovec *v = m->msg_iov;
    u->gso_ok = 0;
    for (uint32_t k = 0; k < u->unit_npkts[unit]; k++) {
        const struct txpkt *p = &u->tx_pkts[u->unit_first[unit] + k];
        struct msghdr one = *m;
        one.msg_iov = v;
        one.msg_iovlen = p->zc ? 3 : 1;
        one.msg_control = NULL;
        one.msg_controllen = 0;
        v += one.msg_iovlen;
        u->cnt.tx_syscalls++;
        if (sendmsg(fd, &one, 0) < 0) {
            u->cnt.tx_errors++;
        } else {
            u->cnt.tx_pkts++;
            u->cnt.tx_bytes += p->len;
        }
    }
}

/* Sends units [k, m) through the link: one datagram each (no GSO). */
static void send_units_link(struct mroce_udp *u, unsigned k, unsigned m)
{
    uint8_t tos = (uint8_t)(u->cfg.dscp << 2 | MROCE_ECN_ECT0);
    for (; k < m; k++) {
        const struct msghdr *h = &u->tx_msgs[k].msg_hdr;
        int32_t s = u->unit_sock[k];
        uint16_t sp = s < 0 ? u->port : (uint16_t)(u->src_base + s);
        u->cnt.tx_syscalls++;
        if (u->cfg.link.ops->send(u->cfg.link.ctx, sp, h->msg_name, h->msg_iov,
                                  (int)h->msg_iovlen, tos) < 0)
            u->cnt.tx_errors += u->unit_npkts[k];
        else
            account_sent(u, k);
    }
    u->cfg.link.ops->flush(u->cfg.link.ctx);
}

/* Sends units [k, m), which share a socket. */
static void send_units(struct mroce_udp *u, unsigned k, unsigned m)
{
    if (u->cfg.link.ops) {
        send_units_link(u, k, m);
        return;
    }
    int fd = sock_fd(u, u->unit_sock[k]);
    int waited = 0;
    while (k < m) {
        int r;
        u->cnt.tx_syscalls++;
        if (m - k == 1) {
            r = sendmsg(fd, &u->tx_msgs[k].msg_hdr, 0) < 0 ? -1 : 1;
        } else {
            r = sendmmsg(fd, &u->tx_msgs[k], m - k, 0);
        }
        if (r > 0) {
            for (int i = 0; i < r; i++)
                account_sent(u, k + (unsigned)i);
            k += (unsigned)r;
            waited = 0;
            continue;
        }
        int e = errno;
        if (e == EINTR)
            continue;
        if ((e == EAGAIN || e == ENOBUFS) && !waited) {
            /* Socket buffer or qdisc full: wait briefly once, then give up
             * on this packet; the engine retransmits what is lost. */
            struct pollfd p = {fd, POLLOUT, 0};
            u->cnt.tx_eagain++;
            (void)poll(&p, 1, 1);
            waited = 1;
            continue;
        }
        if ((e == EIO || e == EINVAL) && u->unit_npkts[k] > 1) {
            send_unit_plain(u, fd, k);
        } else {
            u->cnt.tx_errors += u->unit_npkts[k];
        }
        k++;
        waited = 0;
    }
}

/* Sends every staged packet (keep_late: all but the MROCE_UDP_TX_LATE
 * ones, which stay staged): builds send units (GSO runs), then groups
 * consecutive units on one socket into sendmmsg calls. */
static void send_staged(struct mroce_udp *u, int keep_late)
{
    unsigned n = u->tx_n, nu = 0, i = 0, vi = 0;
    int gso = u->cfg.use_gso && u->gso_ok;
    while (i < n) {
        const struct txpkt *p = &u->tx_pkts[i];
        unsigned j = i + 1;
        size_t total = p->len;
        if (gso) {
            while (j < n && j - i < GSO_MAX_SEGS) {
                const struct txpkt *q = &u->tx_pkts[j];
                /* Every segment but the last has the full size. */
                if (u->tx_pkts[j - 1].len != p->len || q->sock != p->sock ||
                    q->late != p->late || q->len > p->len ||
                    total + q->len > GSO_MAX_BYTES || !addr_eq(&q->to, &p->to))
                    break;
                total += q->len;
                j++;
            }
        }
        socklen_t sl = mroce_udp_addr_to_sa(&p->to, &u->tx_addrs[nu]);
        if (!sl) {
            u->cnt.tx_errors += j - i;
            i = j;
            continue;
        }
        struct msghdr *m = &u->tx_msgs[nu].msg_hdr;
        memset(m, 0, sizeof(*m));
        m->msg_name = &u->tx_addrs[nu];
        m->msg_namelen = sl;
        m->msg_iov = &u->tx_iov[vi];
        for (unsigned k = i; k < j; k++) {
            const struct txpkt *q = &u->tx_pkts[k];
            struct iovec *v = &u->tx_iov[vi];
            v[0].iov_base = slot_at(u, k);
            if (!q->zc) {
                v[0].iov_len = q->len;
                vi++;
                continue;
            }
            /* headers | the payload where it lies | CRC */
            v[0].iov_len = q->zc_hdr;
            v[1].iov_base = (void *)(uintptr_t)q->zc;
            v[1].iov_len = q->len - q->zc_hdr - MROCE_CRC_LEN;
            v[2].iov_base = slot_at(u, k) + q->zc_hdr;
            v[2].iov_len = MROCE_CRC_LEN;
            vi += 3;
        }
        m->msg_iovlen = (size_t)(&u->tx_iov[vi] - m->msg_iov);
        if (j - i > 1) {
            uint8_t *ctrl = u->tx_ctrl + (size_t)nu * TX_CTRL_SIZE;
            memset(ctrl, 0, TX_CTRL_SIZE);
            m->msg_control = ctrl;
            m->msg_controllen = TX_CTRL_SIZE;
            struct cmsghdr *c = CMSG_FIRSTHDR(m);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t gs = (uint16_t)p->len;
            memcpy(CMSG_DATA(c), &gs, sizeof(gs));
        }
        u->unit_sock[nu] = p->sock;
        u->unit_npkts[nu] = j - i;
        u->unit_first[nu] = i;
        u->unit_late[nu] = p->late;
        nu++;
        i = j;
    }
    /* Two passes: the packets without MROCE_UDP_TX_LATE, then the late
     * ones; in each, consecutive units on one socket share a sendmmsg. */
    for (uint8_t late = 0; late <= (keep_late ? 0 : 1); late++) {
        for (unsigned k = 0; k < nu;) {
            if (u->unit_late[k] != late) {
                k++;
                continue;
            }
            unsigned m = k + 1;
            while (m < nu && u->unit_sock[m] == u->unit_sock[k] &&
                   u->unit_late[m] == late)
                m++;
            send_units(u, k, m);
            k = m;
        }
    }
    unsigned w = 0;
    if (keep_late) {
        /* Move the kept packets to the front of the staging area. */
        for (unsigned r = 0; r < n; r++) {
            if (!u->tx_pkts[r].late)
                continue;
            if (r != w) {
                const struct txpkt *p = &u->tx_pkts[r];
                memmove(slot_at(u, w), slot_at(u, r),
                        p->zc ? p->zc_hdr + MROCE_CRC_LEN : p->len);
                u->tx_pkts[w] = *p;
            }
            w++;
        }
    }
    u->tx_n = w;
    u->tx_bytes = 0; /* what stays is late */
}

uint8_t *mroce_udp_tx_slot(struct mroce_udp *u, size_t *cap)
{
    if (u->tx_n == u->cfg.tx_batch)
        send_staged(u, 0);
    else if (u->tx_bytes >= TX_STAGE_BYTES)
        send_staged(u, 1); /* late ones (ACKs) stay behind the flush's data */
    if (cap)
        *cap = u->cfg.slot_size;
    return slot_at(u, u->tx_n);
}

static void stage(struct mroce_udp *u, size_t len, int32_t sock,
                  const struct mre_addr *to, uint8_t late)
{
    struct txpkt *p = &u->tx_pkts[u->tx_n++];
    p->len = (uint32_t)len;
    p->sock = sock;
    p->late = late;
    if (!late)
        u->tx_bytes += len;
    p->to = *to;
    p->zc = NULL;
    p->zc_hdr = 0;
}

/* Stages a copy of bytes that are not in the current slot. */
static void stage_copy(struct mroce_udp *u, const uint8_t *buf, size_t len,
                       int32_t sock, const struct mre_addr *to, uint8_t late)
{
    uint8_t *dst = mroce_udp_tx_slot(u, NULL);
    memmove(dst, buf, len);
    stage(u, len, sock, to, late);
}

static void tx_release(struct mroce_udp *u, mroce_tstamp now)
{
    int i;
    while ((i = mroce_holdq_ready(&u->txh, now)) >= 0) {
        struct mroce_held h;
        mroce_holdq_take(&u->txh, i, &h);
        stage_copy(u, h.buf, h.len, h.sock, &h.addr, 0);
        free(h.buf);
    }
}

void mroce_udp_tx_commit(struct mroce_udp *u, size_t len,
                         const struct mre_tx_info *info, unsigned flags,
                         mroce_tstamp now)
{
    if (len == 0 || len > u->cfg.slot_size || u->tx_n == u->cfg.tx_batch) {
        u->cnt.tx_errors++;
        return;
    }
    if (u->blackhole) {
        u->cnt.fault_tx_drop++;
        return;
    }
    int32_t sock = (flags & MROCE_UDP_TX_FROM_RX)
                       ? -1
                       : entropy_sock(u, info->entropy);
    uint8_t *buf = slot_at(u, u->tx_n);
    unsigned a = mroce_faultgen_decide(&u->txf);
    if (a & MROCE_FAULT_DROP) {
        u->cnt.fault_tx_drop++;
        return; /* the slot is simply reused */
    }
    if (a & MROCE_FAULT_CORRUPT) {
        u->cnt.fault_tx_corrupt++;
        mroce_faultgen_corrupt(&u->txf, buf, len);
    }
    if (a & MROCE_FAULT_REORDER) {
        struct mroce_held meta;
        memset(&meta, 0, sizeof(meta));
        meta.sock = sock;
        meta.addr = info->to;
        meta.countdown = mroce_faultgen_countdown(&u->txf);
        meta.deadline = now + (mroce_tstamp)u->txf.f.reorder_us * 1000;
        if (mroce_holdq_push(&u->txh, buf, (uint32_t)len, &meta) == 0) {
            u->cnt.fault_tx_reorder++;
            return;
        }
    }
    uint8_t late = (flags & MROCE_UDP_TX_LATE) ? 1 : 0;
    stage(u, len, sock, &info->to, late);
    if (a & MROCE_FAULT_DUP) {
        u->cnt.fault_tx_dup++;
        stage_copy(u, buf, len, sock, &info->to, late);
    }
    if (u->txh.n) {
        mroce_holdq_tick(&u->txh);
        tx_release(u, now);
    }
}

void mroce_udp_tx_commit_zc(struct mroce_udp *u, size_t len, size_t hdr_len,
                            const uint8_t *payload,
                            const struct mre_tx_info *info, unsigned flags,
                            mroce_tstamp now)
{
    if (!payload) {
        mroce_udp_tx_commit(u, len, info, flags, now);
        return;
    }
    if (len > u->cfg.slot_size || hdr_len + MROCE_CRC_LEN > len ||
        u->tx_n == u->cfg.tx_batch) {
        u->cnt.tx_errors++;
        return;
    }
    size_t plen = len - hdr_len - MROCE_CRC_LEN;
    if (u->blackhole) {
        u->cnt.fault_tx_drop++;
        return;
    }
    if (u->txf.active) {
        /* Fault injection works on whole packets in the slot (corrupt,
         * duplicate, hold back): put the payload there after all. */
        uint8_t *buf = slot_at(u, u->tx_n);
        memmove(buf + hdr_len + plen, buf + hdr_len, MROCE_CRC_LEN);
        memcpy(buf + hdr_len, payload, plen);
        mroce_udp_tx_commit(u, len, info, flags, now);
        return;
    }
    int32_t sock = (flags & MROCE_UDP_TX_FROM_RX)
                       ? -1
                       : entropy_sock(u, info->entropy);
    stage(u, len, sock, &info->to, (flags & MROCE_UDP_TX_LATE) ? 1 : 0);
    struct txpkt *p = &u->tx_pkts[u->tx_n - 1];
    p->zc = payload;
    p->zc_hdr = (uint32_t)hdr_len;
    if (u->txh.n) {
        mroce_holdq_tick(&u->txh);
        tx_release(u, now);
    }
}

int mroce_udp_flush(struct mroce_udp *u, mroce_tstamp now)
{
    if (u->txh.n)
        tx_release(u, now);
    unsigned n = u->tx_n;
    if (n)
        send_staged(u, 0);
    return (int)n;
}

unsigned mroce_udp_flush_early(struct mroce_udp *u, mroce_tstamp now)
{
    if (u->txh.n)
        tx_release(u, now);
    if (u->tx_n)
        send_staged(u, 1);
    return u->tx_n;
}

unsigned mroce_udp_tx_pending(const struct mroce_udp *u)
{
    return u->tx_n;
}

void mroce_udp_set_blackhole(struct mroce_udp *u, int on)
{
    u->blackhole = on != 0;
}
