/*
 * test_udp_datapath.c - the UDP datapath (src/udp) alone on loopback, with
 * no engine: batching and GSO (a run of equal packets is one send, and
 * still arrives as separate datagrams with the right source ports), GRO
 * splitting, sendmmsg grouping, ECN and DSCP read back, ICMP errors,
 * source-port pools, and fault injection rates within statistical
 * tolerance (time is passed in, so the hold-back queue is deterministic).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mroce/wire.h>

#include "../src/udp/fault.h"
#include "../src/udp/udp.h"
#include "case_table.h"
#include "testutil.h"

#define MAXLOG 8192

/* What a receiver saw. */
struct rxlog {
    unsigned n;
    uint32_t seq[MAXLOG];
    uint16_t sport[MAXLOG];
    uint8_t ecn[MAXLOG];
    uint32_t len[MAXLOG];
    uint8_t same[MAXLOG]; /* mroce_udp_rx_same_datagram(u), if u is set */
    struct mroce_udp *u;
    unsigned corrupt; /* payloads that do not match their pattern */
    unsigned errs;    /* ICMP errors reported */
    int last_err;
    struct mre_addr err_to;
};

static uint8_t pattern(uint32_t seq, size_t i)
{
    return (uint8_t)(seq * 31 + i * 7 + 1);
}

static void fill(uint8_t *b, size_t len, uint32_t seq)
{
    memcpy(b, &seq, 4);
    for (size_t i = 4; i < len; i++)
        b[i] = pattern(seq, i);
}

static void on_rx(void *user, const uint8_t *pkt, size_t len,
                  const struct mre_rx_info *info)
{
    struct rxlog *l = user;
    uint32_t seq = 0;
    if (len >= 4)
        memcpy(&seq, pkt, 4);
    int bad = len < 4;
    for (size_t i = 4; i < len && !bad; i++)
        bad = pkt[i] != pattern(seq, i);
    l->corrupt += (unsigned)bad;
    if (l->n < MAXLOG) {
        struct sockaddr_storage ss;
        uint16_t port = 0;
        if (mroce_udp_addr_to_sa(&info->from, &ss))
            port = ntohs(ss.ss_family == AF_INET
                             ? ((struct sockaddr_in *)&ss)->sin_port
                             : ((struct sockaddr_in6 *)&ss)->sin6_port);
        l->seq[l->n] = seq;
        l->sport[l->n] = port;
        l->ecn[l->n] = info->ecn;
        l->len[l->n] = (uint32_t)len;
        l->same[l->n] = l->u ? (uint8_t)mroce_udp_rx_same_datagram(l->u) : 0;
    }
    l->n++;
}

static void on_err(void *user, const struct mre_addr *to, int err)
{
    struct rxlog *l = user;
    l->errs++;
    l->last_err = err;
    l->err_to = *to;
}

/* Opens a datapath on 127.0.0.1 (or ::1) at a free port. */
static int open_udp(struct mroce_udp **u, struct mroce_udp_config *cfg,
                    const char *ip)
{
    static unsigned salt;
    for (int i = 0; i < 50; i++) {
        uint16_t port = (uint16_t)(20000 +
                                   ((unsigned)getpid() * 97u + salt++ * 7919u) %
                                       20000u);
        if (mroce_udp_resolve(ip, port, AF_UNSPEC, &cfg->local) < 0)
            return MROCE_EADDR;
        int rc = mroce_udp_open(u, cfg);
        if (rc != MROCE_EADDR)
            return rc;
    }
    return MROCE_EADDR;
}

/* A receiver on 127.0.0.1 that sees every GSO segment as its own datagram
 * (no GRO) and a sender configured by sc; 1 if both opened. */
static int open_lo_pair(struct mroce_udp **rx, struct mroce_udp **tx,
                        struct mroce_udp_config *sc)
{
    struct mroce_udp_config rc;
    mroce_udp_config_default(&rc);
    rc.use_gro = 0;
    return CHECK(open_udp(rx, &rc, "127.0.0.1") == 0) &&
           CHECK(open_udp(tx, sc, "127.0.0.1") == 0);
}

static struct mre_addr addr_of(struct mroce_udp *u, const char *ip)
{
    struct sockaddr_storage ss;
    struct mre_addr a;
    mroce_udp_resolve(ip, mroce_udp_port(u), AF_UNSPEC, &ss);
    mroce_udp_addr_from_sa(&a, (struct sockaddr *)&ss, sizeof(ss));
    return a;
}

/* A sender configured by sc and a receiver as open_lo_pair opens them,
 * the receiver's address, the sender's first source port and a log for
 * what arrives: what most datapath cases start from. */
struct lo_case {
    struct mroce_udp *rx, *tx;
    struct mre_addr to;
    uint16_t base;
    struct rxlog *l;
};

/* 1 if everything opened (a failed CHECK if not). */
static int lo_open(struct lo_case *c, struct mroce_udp_config *sc)
{
    if (!open_lo_pair(&c->rx, &c->tx, sc))
        return 0;
    c->to = addr_of(c->rx, "127.0.0.1");
    c->base = mroce_udp_src_base(c->tx);
    c->l = calloc(1, sizeof(*c->l));
    return CHECK(c->l != NULL);
}

static void lo_close(struct lo_case *c)
{
    free(c->l);
    mroce_udp_close(c->tx);
    mroce_udp_close(c->rx);
}

/* Stages one packet of len bytes carrying seq, with commit flags fl
 * (MROCE_UDP_TX_LATE or 0). */
static void put_fl(struct mroce_udp *u, const struct mre_addr *to,
                   uint16_t entropy, size_t len, uint32_t seq, unsigned fl,
                   mroce_tstamp now)
{
    size_t cap;
    uint8_t *b = mroce_udp_tx_slot(u, &cap);
    fill(b, len, seq);
    struct mre_tx_info ti;
    memset(&ti, 0, sizeof(ti));
    ti.to = *to;
    ti.entropy = entropy;
    ti.ecn = MROCE_ECN_ECT0;
    mroce_udp_tx_commit(u, len, &ti, fl, now);
}

static void put(struct mroce_udp *u, const struct mre_addr *to,
                uint16_t entropy, size_t len, uint32_t seq, mroce_tstamp now)
{
    put_fl(u, to, entropy, len, seq, 0, now);
}

/* Receives until `want` packets were logged or 1 s passed. */
static void drain(struct mroce_udp *u, struct rxlog *l, unsigned want,
                  mroce_tstamp now)
{
    for (int i = 0; i < 1000 && l->n < want; i++) {
        if (mroce_udp_recv(u, on_rx, on_err, l, now) == 0) {
            struct pollfd p = {mroce_udp_fd(u), POLLIN, 0};
            poll(&p, 1, 1);
        }
    }
    /* Anything else already queued (duplicates beyond want). */
    while (mroce_udp_recv(u, on_rx, on_err, l, now) > 0) {
    }
}

/* MROCE_UDP_TX_LATE: late packets go after the others of the same flush;
 * mroce_udp_flush_early() keeps them staged, intact, for the next flush. */
static void test_late(void)
{
    struct mroce_udp_config sc;
    struct lo_case lc;
    mroce_udp_config_default(&sc);
    sc.src_port_count = 4;
    if (!lo_open(&lc, &sc))
        return;
    /* seq 0 (late), 1, 2 (late), 3: one socket, so arrival order is send
     * order; the late ones must arrive last, in their own order. */
    for (uint32_t seq = 0; seq < 4; seq++)
        put_fl(lc.tx, &lc.to, lc.base, 100 + seq, seq,
               seq % 2 == 0 ? MROCE_UDP_TX_LATE : 0, 0);
    /* Early flush: 1 and 3 leave, 0 and 2 stay staged. */
    CHECK_EQ(mroce_udp_flush_early(lc.tx, 0), 2);
    CHECK_EQ(mroce_udp_tx_pending(lc.tx), 2);
    drain(lc.rx, lc.l, 2, 0);
    CHECK_EQ(lc.l->n, 2);
    CHECK_EQ(lc.l->seq[0], 1);
    CHECK_EQ(lc.l->seq[1], 3);
    /* A new normal packet (4), then a full flush: 4 first, then 0 and 2. */
    put(lc.tx, &lc.to, lc.base, 50, 4, 0);
    CHECK_EQ_INT(mroce_udp_flush(lc.tx, 0), 3);
    drain(lc.rx, lc.l, 5, 0);
    CHECK_EQ(lc.l->n, 5);
    CHECK_EQ(lc.l->seq[2], 4);
    CHECK_EQ(lc.l->seq[3], 0);
    CHECK_EQ(lc.l->seq[4], 2);
    CHECK_EQ(lc.l->len[3], 100);
    CHECK_EQ(lc.l->len[4], 102);
    CHECK_EQ(lc.l->corrupt, 0); /* the kept packets were moved intact */
    lo_close(&lc);
}

static void test_gso_and_ports(void)
{
    struct mroce_udp_config sc;
    struct lo_case lc;
    mroce_udp_config_default(&sc);
    sc.src_port_count = 16;
    if (!lo_open(&lc, &sc))
        return;
    CHECK(lc.base >= 49152 && lc.base + 16 <= 65536);
    /* Run 1: 10 packets on entropy lc.base+3, the last shorter (GSO allows
     * it); run 2: 5 packets on lc.base+5; then one packet whose entropy is
     * outside the pool (an ACK answering a peer's entropy): it wraps lc.to
     * socket entropy % 16. */
    uint32_t seq = 0;
    for (int i = 0; i < 10; i++)
        put(lc.tx, &lc.to, (uint16_t)(lc.base + 3), i == 9 ? 500 : 1000, seq++,
            0);
    for (int i = 0; i < 5; i++)
        put(lc.tx, &lc.to, (uint16_t)(lc.base + 5), 1000, seq++, 0);
    put(lc.tx, &lc.to, 7, 300, seq++, 0);
    CHECK_EQ(mroce_udp_tx_pending(lc.tx), 16);
    CHECK_EQ_INT(mroce_udp_flush(lc.tx, 0), 16);
    struct mroce_udp_counters c;
    mroce_udp_get_counters(lc.tx, &c);
    CHECK_EQ(c.tx_syscalls, 3); /* one per run: three sockets */
    CHECK_EQ(c.tx_gso_sends, 2);
    CHECK_EQ(c.tx_gso_segs, 15);
    CHECK_EQ(c.tx_pkts, 16);
    CHECK_EQ(c.tx_errors, 0);
    drain(lc.rx, lc.l, 16, 0);
    CHECK_EQ(lc.l->n, 16);
    struct mroce_udp_counters r;
    mroce_udp_get_counters(lc.rx, &r);
    CHECK_EQ(r.rx_datagrams, 16); /* segmented by the kernel */
    /* The receive buffer as granted: the 8 MiB asked (doubled by the
     * kernel) where SO_RCVBUFFORCE is allowed (CAP_NET_ADMIN), else what
     * net.core.rmem_max allows, at least the kernel's minimum. */
    CHECK(r.rx_sockbuf >= 4096);
    {
        int probe = socket(AF_INET, SOCK_DGRAM, 0), v = 8 << 20;
        if (probe >= 0 &&
            setsockopt(probe, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)) == 0)
            CHECK_MSG(r.rx_sockbuf >= (8u << 20), "rx_sockbuf %llu",
                      (unsigned long long)r.rx_sockbuf);
        if (probe >= 0)
            close(probe);
    }
    CHECK_EQ(lc.l->corrupt, 0);
    uint32_t next3 = 0, next5 = 10;
    for (unsigned i = 0; i < lc.l->n && i < MAXLOG; i++) {
        uint32_t s = lc.l->seq[i];
        CHECK_EQ(lc.l->ecn[i], MROCE_ECN_ECT0);
        if (s < 10) {
            CHECK_EQ(lc.l->sport[i], lc.base + 3);
            CHECK_EQ(s, next3); /* in order within a path */
            next3++;
            CHECK_EQ(lc.l->len[i], s == 9 ? 500 : 1000);
        } else if (s < 15) {
            CHECK_EQ(lc.l->sport[i], lc.base + 5);
            CHECK_EQ(s, next5);
            next5++;
        } else {
            CHECK_EQ(lc.l->sport[i], lc.base + 7 % 16);
            CHECK_EQ(lc.l->len[i], 300);
        }
    }

    /* sendmmsg: consecutive packets on one socket lc.to two destinations are
     * two send units and one syscall. */
    struct mroce_udp *rx2;
    struct mroce_udp_config rc2;
    mroce_udp_config_default(&rc2);
    if (CHECK(open_udp(&rx2, &rc2, "127.0.0.1") == 0)) {
        struct mre_addr to2 = addr_of(rx2, "127.0.0.1");
        for (int i = 0; i < 4; i++)
            put(lc.tx, i & 1 ? &to2 : &lc.to, (uint16_t)(lc.base + 1), 200,
                100 + i, 0);
        mroce_udp_flush(lc.tx, 0);
        mroce_udp_get_counters(lc.tx, &c);
        CHECK_EQ(c.tx_syscalls, 4);
        CHECK_EQ(c.tx_pkts, 20);
        memset(lc.l, 0, sizeof(*lc.l));
        drain(lc.rx, lc.l, 2, 0);
        drain(rx2, lc.l, 4, 0);
        CHECK_EQ(lc.l->n, 4);

        /* GRO: rx2 receives a GSO run as one datagram and splits it. */
        memset(lc.l, 0, sizeof(*lc.l));
        for (int i = 0; i < 12; i++)
            put(lc.tx, &to2, (uint16_t)(lc.base + 2), i == 11 ? 77 : 1200,
                200 + i, 0);
        mroce_udp_flush(lc.tx, 0);
        struct mroce_udp_counters before;
        mroce_udp_get_counters(rx2, &before);
        lc.l->u = rx2;
        drain(rx2, lc.l, 12, 0);
        mroce_udp_get_counters(rx2, &r);
        CHECK_EQ(lc.l->n, 12);
        CHECK_EQ(lc.l->corrupt, 0);
        /* The first segment of each datagram is "new", the rest "same". */
        unsigned firsts = 0;
        for (unsigned i = 0; i < 12; i++)
            firsts += !lc.l->same[i];
        CHECK_EQ(lc.l->same[0], 0);
        CHECK_EQ(firsts, r.rx_datagrams - before.rx_datagrams);
        CHECK_EQ(mroce_udp_rx_same_datagram(rx2), 0); /* outside a callback */
        for (unsigned i = 0; i < 12; i++) {
            CHECK_EQ(lc.l->seq[i], 200 + i);
            CHECK_EQ(lc.l->len[i], i == 11 ? 77 : 1200);
        }
        CHECK_MSG(r.rx_datagrams - before.rx_datagrams < 12,
                  "GRO: %llu datagrams for 12 packets",
                  (unsigned long long)(r.rx_datagrams - before.rx_datagrams));
        CHECK(r.rx_gro_segs > 0);
        mroce_udp_close(rx2);
    }

    /* Pools: a fixed range that is taken fails; automatic finds another. */
    struct mroce_udp *t2;
    struct mroce_udp_config fc;
    mroce_udp_config_default(&fc);
    fc.src_port_base = lc.base;
    fc.src_port_count = 16;
    CHECK_EQ_INT(open_udp(&t2, &fc, "127.0.0.1"), MROCE_EADDR);
    fc.src_port_base = 0;
    if (CHECK(open_udp(&t2, &fc, "127.0.0.1") == 0)) {
        CHECK(mroce_udp_src_base(t2) != lc.base);
        mroce_udp_close(t2);
    }
    fc.src_port_count = 0;
    CHECK_EQ_INT(mroce_udp_open(&t2, &fc), MROCE_EINVAL);
    lo_close(&lc);
}

/* DSCP and ECT(0) in the TOS byte, read by a plain socket; and ICMP port
 * unreachable for a packet sent from the receive socket. */
static void test_tos_and_icmp(void)
{
    struct mroce_udp_config sc;
    struct mroce_udp *tx;
    mroce_udp_config_default(&sc);
    sc.src_port_count = 4;
    sc.dscp = 10;
    if (!CHECK(open_udp(&tx, &sc, "127.0.0.1") == 0))
        return;
    int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1;
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
    socklen_t sl = sizeof(sin);
    getsockname(fd, (struct sockaddr *)&sin, &sl);
    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
    struct mre_addr to;
    mroce_udp_addr_from_sa(&to, (struct sockaddr *)&sin, sizeof(sin));
    put(tx, &to, 0, 100, 1, 0);
    mroce_udp_flush(tx, 0);
    uint8_t buf[256], ctrl[64];
    struct iovec iov = {buf, sizeof(buf)};
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctrl;
    m.msg_controllen = sizeof(ctrl);
    struct pollfd p = {fd, POLLIN, 0};
    poll(&p, 1, 1000);
    int tos = -1;
    if (CHECK(recvmsg(fd, &m, MSG_DONTWAIT) == 100))
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
            if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
                tos = *(uint8_t *)CMSG_DATA(c);
    CHECK_EQ_INT(tos, (10 << 2) | MROCE_ECN_ECT0);

    /* ICMP: close the plain socket, send to its port from the receive
     * socket; the error comes back through err_fn with the address. */
    close(fd);
    size_t cap;
    uint8_t *b = mroce_udp_tx_slot(tx, &cap);
    fill(b, 64, 9);
    struct mre_tx_info ti;
    memset(&ti, 0, sizeof(ti));
    ti.to = to;
    mroce_udp_tx_commit(tx, 64, &ti, MROCE_UDP_TX_FROM_RX, 0);
    mroce_udp_flush(tx, 0);
    struct rxlog *l = calloc(1, sizeof(*l));
    for (int i = 0; i < 200 && !l->errs; i++) {
        mroce_udp_recv(tx, on_rx, on_err, l, 0);
        if (!l->errs)
            mroce_udp_drain_errors(tx, on_err, l);
        if (!l->errs)
            usleep(1000);
    }
    CHECK_EQ(l->errs, 1);
    CHECK_EQ_INT(l->last_err, ECONNREFUSED);
    CHECK(l->err_to.len == to.len && !memcmp(l->err_to.data, to.data, to.len));
    free(l);
    mroce_udp_close(tx);
}

/* IPv6 on ::1, if the host has it: ECN through IPV6_TCLASS. */
static void test_ipv6(void)
{
    struct mroce_udp_config c6;
    struct mroce_udp *a, *b;
    mroce_udp_config_default(&c6);
    c6.src_port_count = 4;
    if (open_udp(&a, &c6, "::1") != 0) {
        printf("  ::1 not available, IPv6 skipped\n");
        return;
    }
    if (!CHECK(open_udp(&b, &c6, "::1") == 0)) {
        mroce_udp_close(a);
        return;
    }
    CHECK_EQ_INT(mroce_udp_family(a), AF_INET6);
    struct mre_addr to = addr_of(a, "::1");
    CHECK_EQ(to.len, sizeof(struct sockaddr_in6));
    for (int i = 0; i < 6; i++)
        put(b, &to, (uint16_t)(mroce_udp_src_base(b) + 1), 900, (uint32_t)i, 0);
    mroce_udp_flush(b, 0);
    struct rxlog *l = calloc(1, sizeof(*l));
    drain(a, l, 6, 0);
    CHECK_EQ(l->n, 6);
    CHECK_EQ(l->corrupt, 0);
    for (unsigned i = 0; i < l->n && i < 6; i++) {
        CHECK_EQ(l->ecn[i], MROCE_ECN_ECT0);
        CHECK_EQ(l->sport[i], mroce_udp_src_base(b) + 1);
    }
    free(l);
    mroce_udp_close(a);
    mroce_udp_close(b);
}

/* Sends n packets through tx (faults on its side or rx's) in batches and
 * collects them at rx.  Time advances 1 us per packet. */
static void run_faults(struct mroce_udp *tx, struct mroce_udp *rx,
                       struct rxlog *l, unsigned n)
{
    struct mre_addr to = addr_of(rx, "127.0.0.1");
    mroce_tstamp now = 1000000;
    for (unsigned s = 0; s < n; s++) {
        put(tx, &to, (uint16_t)(mroce_udp_src_base(tx) + s % 4), 200, s, now);
        now += 1000;
        if (s % 50 == 49 || s == n - 1) {
            mroce_udp_flush(tx, now);
            drain(rx, l, 0, now);
        }
    }
    /* Release everything still held back (after reorder_us). */
    now += 10000000;
    mroce_udp_flush(tx, now);
    for (int i = 0; i < 20; i++) {
        mroce_udp_recv(rx, on_rx, on_err, l, now);
        usleep(500);
    }
    CHECK_EQ(mroce_udp_expiry(tx), MROCE_TSTAMP_INF);
    CHECK_EQ(mroce_udp_expiry(rx), MROCE_TSTAMP_INF);
}

/* |got - want| within 5 standard deviations of a binomial(n, p). */
static int near(double got, double n, double p)
{
    double sd = sqrt(n * p * (1 - p));
    return fabs(got - n * p) <= 5 * sd + 1;
}

static void test_faults(void)
{
    const unsigned n = 4000;
    struct {
        const char *name;
        int tx;
        struct mroce_fault f;
    } cases[] = {
        {"tx drop", 1, {0.1, 0, 0, 0, 0}},
        {"tx dup", 1, {0, 0.1, 0, 0, 0}},
        {"tx reorder", 1, {0, 0, 0.1, 0, 0}},
        {"tx corrupt", 1, {0, 0, 0, 0.1, 0}},
        {"rx drop", 0, {0.2, 0, 0, 0, 0}},
        {"rx dup", 0, {0, 0.05, 0, 0, 0}},
        {"rx reorder", 0, {0, 0, 0.1, 0, 0}},
        {"rx corrupt", 0, {0, 0, 0, 0.05, 0}},
    };
    struct rxlog *l = calloc(1, sizeof(*l));
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        struct mroce_udp_config tc, rc;
        struct mroce_udp *tx, *rx;
        mroce_udp_config_default(&tc);
        mroce_udp_config_default(&rc);
        tc.src_port_count = 4;
        tc.fault_seed = rc.fault_seed = 1234 + k;
        if (cases[k].tx)
            tc.tx_fault = cases[k].f;
        else
            rc.rx_fault = cases[k].f;
        if (!CHECK(open_udp(&rx, &rc, "127.0.0.1") == 0))
            continue;
        if (!CHECK(open_udp(&tx, &tc, "127.0.0.1") == 0)) {
            mroce_udp_close(rx);
            continue;
        }
        memset(l, 0, sizeof(*l));
        run_faults(tx, rx, l, n);
        struct mroce_udp_counters ct, cr;
        mroce_udp_get_counters(tx, &ct);
        mroce_udp_get_counters(rx, &cr);
        const struct mroce_fault *f = &cases[k].f;
        unsigned inversions = 0;
        uint32_t maxseq = 0;
        for (unsigned i = 0; i < l->n && i < MAXLOG; i++) {
            if (i && l->seq[i] < maxseq)
                inversions++;
            if (l->seq[i] > maxseq)
                maxseq = l->seq[i];
        }
        uint64_t drops = ct.fault_tx_drop + cr.fault_rx_drop;
        uint64_t dups = ct.fault_tx_dup + cr.fault_rx_dup;
        uint64_t reord = ct.fault_tx_reorder + cr.fault_rx_reorder;
        uint64_t corr = ct.fault_tx_corrupt + cr.fault_rx_corrupt;
        printf(
            "  %-10s: received %u of %u, drops %llu dups %llu reordered %llu "
            "(inversions %u) corrupted %llu (seen %u)\n",
            cases[k].name, l->n, n, (unsigned long long)drops,
            (unsigned long long)dups, (unsigned long long)reord, inversions,
            (unsigned long long)corr, l->corrupt);
        CHECK_MSG(near((double)drops, n, f->drop), "%s drops %llu",
                  cases[k].name, (unsigned long long)drops);
        CHECK_MSG(near((double)dups, n, f->dup), "%s dups", cases[k].name);
        CHECK_MSG(near((double)reord, n, f->reorder), "%s reorder",
                  cases[k].name);
        CHECK_MSG(near((double)corr, n, f->corrupt), "%s corrupt",
                  cases[k].name);
        /* Every packet accounted for: sent - dropped + duplicated. */
        CHECK_EQ(l->n, n - drops + dups);
        CHECK_EQ(cr.rx_truncated, 0);
        if (f->corrupt == 0)
            CHECK_EQ(l->corrupt, 0);
        else /* a flipped bit in the 4-byte seq can look like another seq */
            CHECK(l->corrupt <= corr && l->corrupt + 20 >= corr * 196 / 200);
        if (f->reorder > 0)
            CHECK_MSG(inversions >= reord / 2, "inversions %u", inversions);
        else if (f->corrupt == 0) /* a corrupted seq may look out of order */
            CHECK_EQ(inversions, 0);
        mroce_udp_close(tx);
        mroce_udp_close(rx);
    }
    free(l);

    /* Same seed, same decisions. */
    struct mroce_faultgen g1, g2;
    struct mroce_fault f = {0.3, 0.3, 0.3, 0.3, 0};
    mroce_faultgen_init(&g1, &f, 77);
    mroce_faultgen_init(&g2, &f, 77);
    int same = 1;
    for (int i = 0; i < 1000; i++)
        same &= mroce_faultgen_decide(&g1) == mroce_faultgen_decide(&g2);
    CHECK(same);
    CHECK_EQ(g1.f.reorder_us, 50); /* default */
    struct mroce_fault badf = {1.5, 0, 0, 0, 0};
    CHECK_EQ_INT(mroce_faultgen_init(&g1, &badf, 1), MROCE_EINVAL);
}

static void test_fault_parse(void)
{
    struct mroce_fault tx, rx;
    uint64_t seed = 5;
    memset(&tx, 0, sizeof(tx));
    memset(&rx, 0, sizeof(rx));
    CHECK_EQ_INT(
        mroce_fault_parse("tx:drop=0.01,dup=0.001,reorder=0.02,corrupt=0,"
                          "reorder_us=80;rx:drop=0.03",
                          &tx, &rx, &seed),
        0);
    CHECK(tx.drop == 0.01 && tx.dup == 0.001 && tx.reorder == 0.02);
    CHECK(tx.corrupt == 0 && tx.reorder_us == 80);
    CHECK(rx.drop == 0.03 && rx.dup == 0);
    CHECK_EQ(seed, 5);
    CHECK_EQ_INT(mroce_fault_parse("seed=42;both:corrupt=0.5", &tx, &rx, &seed),
                 0);
    CHECK_EQ(seed, 42);
    CHECK(tx.corrupt == 0.5 && rx.corrupt == 0.5 && tx.drop == 0.01);
    CHECK_EQ_INT(mroce_fault_parse("", &tx, &rx, &seed), 0);
    const char *bad[] = {"tx:drop=2",    "tx:drop",     "xx:drop=0.1",
                         "tx:lose=0.1",  "tx:drop=abc", "seed=",
                         "rx:drop=0.1x", "tx:drop=-0.1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK_MSG(mroce_fault_parse(bad[i], &tx, &rx, &seed) == MROCE_EINVAL,
                  "accepted \"%s\"", bad[i]);
}

static void test_addresses(void)
{
    struct sockaddr_storage ss;
    struct mre_addr a, b;
    CHECK_EQ_INT(mroce_udp_resolve("127.0.0.1", 4794, AF_INET, &ss), 0);
    CHECK_EQ_INT(mroce_udp_addr_from_sa(&a, (struct sockaddr *)&ss, sizeof(ss)),
                 0);
    CHECK_EQ(a.len, sizeof(struct sockaddr_in));
    CHECK(mroce_udp_addr_to_sa(&a, &ss) == sizeof(struct sockaddr_in));
    CHECK_EQ(ntohs(((struct sockaddr_in *)&ss)->sin_port), 4794);
    /* v4 for a v6 device: v4-mapped; equal inputs give equal bytes. */
    CHECK_EQ_INT(mroce_udp_resolve("127.0.0.1", 1, AF_INET6, &ss), 0);
    CHECK_EQ_INT(ss.ss_family, AF_INET6);
    mroce_udp_addr_from_sa(&a, (struct sockaddr *)&ss, sizeof(ss));
    mroce_udp_resolve("127.0.0.1", 1, AF_INET6, &ss);
    mroce_udp_addr_from_sa(&b, (struct sockaddr *)&ss, sizeof(ss));
    CHECK(a.len == b.len && !memcmp(a.data, b.data, a.len));
    CHECK_EQ_INT(mroce_udp_resolve("::1", 1, AF_INET, &ss), MROCE_EADDR);
    CHECK_EQ_INT(mroce_udp_resolve("999.1.1.1", 1, AF_INET, &ss), MROCE_EADDR);
    CHECK_EQ_INT(mroce_udp_resolve(NULL, 1, AF_INET, &ss), MROCE_EADDR);
    memset(&a, 0, sizeof(a));
    CHECK_EQ(mroce_udp_addr_to_sa(&a, &ss), 0);
}

/* Zero-copy commits (mroce_udp_tx_commit_zc): headers and CRC in the slot,
 * the payload elsewhere; mixed with whole packets in one GSO run (and
 * without GSO), they must arrive as the same bytes in order.  With a tx
 * fault configured (dup), the payload is copied into the slot and the
 * duplicates are intact too. */
static void zc_put(struct mroce_udp *u, const struct mre_addr *to,
                   uint16_t entropy, size_t len, uint32_t seq, size_t hdr)
{
    static uint8_t ext[2048];
    size_t cap;
    uint8_t *b = mroce_udp_tx_slot(u, &cap);
    fill(ext, len, seq);
    memcpy(b, ext, hdr);
    memcpy(b + hdr, ext + len - MROCE_CRC_LEN, MROCE_CRC_LEN);
    struct mre_tx_info ti;
    memset(&ti, 0, sizeof(ti));
    ti.to = *to;
    ti.entropy = entropy;
    mroce_udp_tx_commit_zc(u, len, hdr, ext + hdr, &ti, 0, 0);
    /* The kernel reads ext at the flush: flush before it is refilled. */
    mroce_udp_flush(u, 0);
}

static void zc_run(int gso, int dup)
{
    struct mroce_udp_config sc;
    struct lo_case lc;
    mroce_udp_config_default(&sc);
    sc.src_port_count = 4;
    sc.use_gso = (uint8_t)gso;
    if (dup)
        sc.tx_fault.dup = 1.0;
    if (!lo_open(&lc, &sc))
        return;
    /* One GSO run of whole and zero-copy packets of 1000 bytes, then a
     * shorter zero-copy one, which ends the run: each zc packet is
     * flushed alone (its payload buffer is reused), so also stage whole
     * packets in between, flushed with the next zc packet. */
    uint32_t seq = 0;
    for (int i = 0; i < 6; i++) {
        put(lc.tx, &lc.to, lc.base, 1000, seq++, 0);
        zc_put(lc.tx, &lc.to, lc.base, 1000, seq++, 20 + (size_t)i);
    }
    put(lc.tx, &lc.to, lc.base, 1000, seq++, 0);
    put(lc.tx, &lc.to, lc.base, 1000, seq++, 0);
    zc_put(lc.tx, &lc.to, lc.base, 600, seq++, 44);
    unsigned want = seq * (dup ? 2u : 1u);
    drain(lc.rx, lc.l, want, 0);
    CHECK_EQ(lc.l->n, want);
    CHECK_EQ(lc.l->corrupt, 0);
    int order = 1;
    for (unsigned i = 0; i < lc.l->n && i < want; i++)
        order &= lc.l->seq[i] == (dup ? i / 2 : i);
    CHECK_MSG(order, "zero-copy packets in send order (gso %d dup %d)", gso,
              dup);
    CHECK_EQ(lc.l->len[want - 1], 600);
    struct mroce_udp_counters c;
    mroce_udp_get_counters(lc.tx, &c);
    CHECK_EQ(c.tx_pkts, want);
    CHECK_EQ(c.tx_errors, 0);
    if (gso && !dup)
        CHECK(c.tx_gso_sends > 0);
    lo_close(&lc);
}

static void test_zerocopy(void)
{
    zc_run(1, 0);
    zc_run(0, 0);
    zc_run(1, 1);
}

/* Staging is bounded in bytes too: large packets leave once ~128 KiB of
 * them are staged, before the slots run out, so a long burst's first
 * packets reach the peer while the rest is still being built.  A late
 * packet (an ACK) staged first stays staged through those sends and
 * leaves after the data at the flush. */
static void test_stage_bytes(void)
{
    struct mroce_udp_config sc;
    struct lo_case lc;
    mroce_udp_config_default(&sc);
    sc.src_port_count = 1;
    if (!lo_open(&lc, &sc))
        return;
    put_fl(lc.tx, &lc.to, lc.base, 64, 0, MROCE_UDP_TX_LATE, 0);
    const unsigned n = 20; /* 20 x 16000 bytes: well under 64 slots */
    for (uint32_t seq = 1; seq <= n; seq++)
        put(lc.tx, &lc.to, lc.base, 16000, seq, 0);
    struct mroce_udp_counters c;
    mroce_udp_get_counters(lc.tx, &c);
    unsigned pending = mroce_udp_tx_pending(lc.tx);
    CHECK_MSG(c.tx_syscalls >= 2 && pending < n / 2,
              "staged %u of %u large packets before the flush, %llu sends",
              pending, n + 1, (unsigned long long)c.tx_syscalls);
    mroce_udp_flush(lc.tx, 0);
    drain(lc.rx, lc.l, n + 1, 0);
    CHECK_EQ(lc.l->n, n + 1);
    int order = 1;
    for (unsigned i = 0; i < n && i < lc.l->n; i++)
        order &= lc.l->seq[i] == i + 1;
    CHECK_MSG(order, "large packets in send order");
    CHECK_EQ(lc.l->seq[n], 0); /* the late one last */
    CHECK_EQ(lc.l->len[n], 64);
    CHECK_EQ(lc.l->corrupt, 0);
    lo_close(&lc);
}

static const struct test_case cases[] = {
    {"addresses", test_addresses},
    {"fault_parse", test_fault_parse},
    {"gso_and_ports", test_gso_and_ports},
    {"late", test_late},
    {"stage_bytes", test_stage_bytes},
    {"zerocopy", test_zerocopy},
    {"tos_and_icmp", test_tos_and_icmp},
    {"ipv6", test_ipv6},
    {"faults", test_faults},
};

int main(int argc, char **argv)
{
    return TEST_CASES_MAIN("test_udp_datapath", cases, argc, argv);
}
