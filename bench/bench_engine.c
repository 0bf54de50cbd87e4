/*
 * bench_engine.c - what the protocol engine costs per packet and per byte,
 * with nothing else in the way.
 *
 * Two endpoints in one process, one core, no loss.  Two wires:
 *   direct - packets go from one engine's write_pkt straight into the other's
 *            recv (an ideal zero-delay wire): the figure is engine work only
 *            (codec, CRC32C both ways, placement copy, ACK generation and
 *            processing, completions);
 *   model  - the same through the deterministic network model (100 Gbit/s,
 *            2 us), adding the model's own cost: closer to how the tests run.
 * "direct 64B acked" interleaves the two sides packet by packet, so the
 * receiver ACKs at the protocol's own rate (every 4th packet) instead of
 * once per drained burst: the honest per-packet figure.
 * Reported: packets per second and ns per data packet for 64 B messages;
 * goodput for 4 KiB and 64 KiB WRITEs; and, measured in the same run, memcpy
 * bandwidth (in cache, 64 KiB) so the engine's goodput can be stated as a
 * ratio of what the machine can copy.  Every time is process CPU time, so
 * a loaded host slows the run without counting other tenants' turns.
 * Goals (issue 2): < 150 ns engine work per small packet; 64 KiB goodput
 * >= 25% of memcpy bandwidth.
 *
 * Usage: bench_engine [--quick] [--json FILE] [--only small|acked|large]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mroce/wire.h>

#include "testbed.h"

/* All times are this process's CPU time: the benchmark is one thread, and
 * on a shared host wall time would count the other tenants' turns too. */
static double cpu_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --- memcpy reference --- */
static double memcpy_gbps(size_t len, double secs)
{
    uint8_t *a = aligned_alloc(64, len), *b = aligned_alloc(64, len);
    memset(a, 1, len);
    memset(b, 2, len);
    uint64_t n = 0;
    double t0 = cpu_secs(), t;
    do {
        for (int i = 0; i < 64; i++) {
            memcpy(b, a, len);
            __asm__ volatile("" ::"r"(b) : "memory"); /* keep the copy */
            a[i] ^= 1;
        }
        n += 64;
        t = cpu_secs();
    } while (t - t0 < secs);
    free(a);
    free(b);
    return (double)n * (double)len / (t - t0) / 1e9;
}

/* --- a pair of engines joined by the direct wire --- */
struct pair {
    mre_ep *ep[2];
    mre_cq *scq[2], *rcq[2];
    mre_qp *qp[2];
    uint64_t rnd;
    mroce_tstamp now;
    uint64_t pkts[2];
};

static void rnd_fill(uint8_t *buf, size_t len, void *user)
{
    uint64_t *s = user;
    for (size_t i = 0; i < len; i++) {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        buf[i] = (uint8_t)*s;
    }
}

/* Interleaved: the sender hands over one packet, then the receiver sends
 * whatever it wants to (ACKs), so ACKs are generated at the protocol's
 * own rate (one per ACK_FREQ packets) rather than once per burst. */
static int interleave;

static uint64_t pump_one(struct pair *p, int s, int max)
{
    static uint8_t buf[MROCE_MAX_PKT_LEN];
    struct mre_tx_info ti;
    struct mre_rx_info ri;
    memset(&ri, 0, sizeof(ri));
    ri.ecn = MROCE_ECN_ECT0;
    ri.from.len = 1;
    ri.from.data[0] = (uint8_t)s;
    uint64_t moved = 0;
    int n;
    while ((max < 0 || (int)moved < max) &&
           (n = mre_ep_write_pkt(p->ep[s], buf, sizeof(buf), &ti, p->now)) >
               0) {
        mre_ep_recv(p->ep[!s], buf, (size_t)n, &ri, p->now);
        p->pkts[s]++;
        moved++;
    }
    return moved;
}

/* Move every packet each side has to the other; returns packets moved. */
static uint64_t pump(struct pair *p)
{
    if (interleave) {
        uint64_t moved = 0, m;
        do {
            m = pump_one(p, 0, 1);
            m += pump_one(p, 1, -1);
            moved += m;
        } while (m);
        return moved;
    }
    static uint8_t buf[MROCE_MAX_PKT_LEN];
    uint64_t moved = 0;
    for (int s = 0; s < 2; s++) {
        struct mre_tx_info ti;
        struct mre_rx_info ri;
        memset(&ri, 0, sizeof(ri));
        ri.ecn = MROCE_ECN_ECT0;
        int n;
        while ((n = mre_ep_write_pkt(p->ep[s], buf, sizeof(buf), &ti, p->now)) >
               0) {
            ri.from.len = 1;
            ri.from.data[0] = (uint8_t)s;
            mre_ep_recv(p->ep[!s], buf, (size_t)n, &ri, p->now);
            p->pkts[s]++;
            moved++;
        }
    }
    return moved;
}

static void pair_new(struct pair *p, uint32_t mtu, uint16_t npaths)
{
    memset(p, 0, sizeof(*p));
    p->rnd = 88172645463325252ull;
    p->now = 1000;
    for (int s = 0; s < 2; s++) {
        struct mre_ep_config c;
        mre_ep_config_default(&c);
        c.mem = mroce_tb_stdmem;
        c.rand = rnd_fill;
        c.rand_user = &p->rnd;
        mre_ep_new(&p->ep[s], &c);
        mre_cq_new(p->ep[s], 4096, &p->scq[s]);
        mre_cq_new(p->ep[s], 4096, &p->rcq[s]);
        struct mre_qp_attr a;
        mre_qp_attr_default(&a);
        a.send_cq = p->scq[s];
        a.recv_cq = p->rcq[s];
        a.mtu = (uint16_t)mtu;
        a.npaths = npaths;
        a.max_send_wr = 1024;
        a.max_recv_wr = 1024;
        a.window = 4096;
        a.cc_algo = MROCE_CC_NONE; /* the ideal wire has no queue to manage */
        a.init_cwnd = 1u << 30;
        mre_qp_new(p->ep[s], &a, &p->qp[s]);
    }
    struct mre_addr to = {.len = 1, .data = {1}};
    mre_qp_listen(p->qp[1], p->now);
    mre_qp_connect(p->qp[0], &to, mre_qp_num(p->qp[1]), p->now);
    for (int i = 0; i < 10; i++)
        pump(p);
}

static void pair_del(struct pair *p)
{
    mre_ep_del(p->ep[0]);
    mre_ep_del(p->ep[1]);
}

struct result {
    double secs;
    uint64_t msgs, bytes, data_pkts, all_pkts;
};

/* Post `total` WRITEs of msg bytes (signaled every 16th, 256 outstanding)
 * and run them to completion over the direct wire. */
static struct result run_direct(uint32_t msg, uint64_t total, uint32_t mtu)
{
    struct pair p;
    pair_new(&p, mtu, 64);
    /* Source and target stay cache-resident (256 KiB each), as the memcpy
     * reference does: the figure is the engine's cost, not DRAM's. */
    uint32_t nslots = (uint32_t)(262144 / msg);
    nslots = nslots < 2 ? 2 : nslots > 64 ? 64 : nslots;
    size_t rlen = (size_t)msg * nslots;
    uint8_t *src = aligned_alloc(64, rlen), *dst = aligned_alloc(64, rlen);
    memset(src, 7, rlen);
    memset(dst, 0, rlen);
    mre_mr *ms, *md;
    mre_mr_reg(p.ep[0], src, rlen, MROCE_ACCESS_LOCAL_WRITE, &ms);
    mre_mr_reg(p.ep[1], dst, rlen,
               MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE, &md);
    uint64_t posted = 0, done = 0;
    struct mroce_wc wc[64];
    struct mroce_qp_counters c0;
    mre_qp_get_counters(p.qp[0], &c0);
    uint64_t tx0 = c0.tx_data_pkts;
    double t0 = cpu_secs();
    while (done < total) {
        while (posted < total && posted - done < 256) {
            uint32_t slot = (uint32_t)(posted % nslots);
            struct mroce_sge sg = {(uint64_t)(uintptr_t)(src +
                                                         (size_t)slot * msg),
                                   msg, mre_mr_lkey(ms)};
            struct mroce_send_wr wr = {
                .wr_id = posted,
                .sg_list = &sg,
                .num_sge = 1,
                .opcode = MROCE_WR_WRITE,
                .send_flags = (posted & 15) == 15 || posted + 1 == total
                                  ? MROCE_SEND_SIGNALED
                                  : 0,
                .remote_addr = (uint64_t)(uintptr_t)(dst + (size_t)slot * msg),
                .rkey = mre_mr_rkey(md)};
            if (mre_qp_post_send(p.qp[0], &wr, NULL, p.now) < 0)
                break;
            posted++;
        }
        p.now += 100;
        if (!pump(&p)) {
            /* Nothing moved: let coalesced ACKs out. */
            mroce_tstamp e = mre_ep_expiry(p.ep[1]);
            if (e != MROCE_TSTAMP_INF && e > p.now)
                p.now = e;
            mre_ep_handle_expiry(p.ep[1], p.now);
            mre_ep_handle_expiry(p.ep[0], p.now);
        }
        int n;
        while ((n = mre_cq_poll(p.scq[0], 64, wc)) > 0)
            for (int i = 0; i < n; i++) {
                if (wc[i].status != MROCE_WC_SUCCESS) {
                    fprintf(stderr, "bench: completion error %s\n",
                            mroce_wc_status_str(wc[i].status));
                    exit(1);
                }
                done = wc[i].wr_id + 1;
            }
    }
    struct result r;
    r.secs = cpu_secs() - t0;
    mre_qp_get_counters(p.qp[0], &c0);
    r.msgs = total;
    r.bytes = total * msg;
    r.data_pkts = c0.tx_data_pkts - tx0;
    r.all_pkts = p.pkts[0] + p.pkts[1];
    if (memcmp(src, dst, rlen) != 0) {
        fprintf(stderr, "bench: data mismatch\n");
        exit(1);
    }
    pair_del(&p);
    free(src);
    free(dst);
    return r;
}

/* The same workload through the network model. */
static struct result run_model(uint32_t msg, uint64_t total, uint32_t mtu)
{
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    /* Infinitely fast links and no delay: measure CPU, not model time (with
     * a delay the whole window sits in the model's buffers, out of cache). */
    cfg.net.rate_bps = 0;
    cfg.net.delay = 0;
    struct mroce_testbed *tb;
    mroce_tb_new(&tb, &cfg, NULL);
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.mtu = (uint16_t)mtu;
    a.max_send_wr = 1024;
    a.window = 4096;
    a.cc_algo = MROCE_CC_NONE;
    a.init_cwnd = 1u << 30;
    mre_qp *qa, *qb;
    mroce_tb_connect(tb, 0, 1, &a, &qa, &qb, 100000000);
    /* Source and target stay cache-resident (256 KiB each), as the memcpy
     * reference does: the figure is the engine's cost, not DRAM's. */
    uint32_t nslots = (uint32_t)(262144 / msg);
    nslots = nslots < 2 ? 2 : nslots > 64 ? 64 : nslots;
    size_t rlen = (size_t)msg * nslots;
    uint8_t *src = aligned_alloc(64, rlen), *dst = aligned_alloc(64, rlen);
    memset(src, 9, rlen);
    memset(dst, 0, rlen);
    mre_mr *ms, *md;
    mre_mr_reg(tb->h[0].ep, src, rlen, MROCE_ACCESS_LOCAL_WRITE, &ms);
    mre_mr_reg(tb->h[1].ep, dst, rlen,
               MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE, &md);
    uint64_t posted = 0, done = 0;
    struct mroce_wc wc[64];
    struct mroce_netdrive_counters d0, d1;
    mroce_netdrive_get_counters(tb->d, &d0);
    double t0 = cpu_secs();
    while (done < total) {
        while (posted < total && posted - done < 256) {
            uint32_t slot = (uint32_t)(posted % nslots);
            struct mroce_sge sg = {(uint64_t)(uintptr_t)(src +
                                                         (size_t)slot * msg),
                                   msg, mre_mr_lkey(ms)};
            struct mroce_send_wr wr = {
                .wr_id = posted,
                .sg_list = &sg,
                .num_sge = 1,
                .opcode = MROCE_WR_WRITE,
                .send_flags = (posted & 15) == 15 || posted + 1 == total
                                  ? MROCE_SEND_SIGNALED
                                  : 0,
                .remote_addr = (uint64_t)(uintptr_t)(dst + (size_t)slot * msg),
                .rkey = mre_mr_rkey(md)};
            if (mre_qp_post_send(qa, &wr, NULL, mroce_netdrive_now(tb->d)) < 0)
                break;
            posted++;
        }
        mroce_netdrive_kick(tb->d, 0);
        for (int i = 0; i < 64 && mroce_netdrive_step(tb->d); i++)
            ;
        int n;
        while ((n = mre_cq_poll(tb->h[0].scq, 64, wc)) > 0)
            for (int i = 0; i < n; i++) {
                if (wc[i].status != MROCE_WC_SUCCESS) {
                    fprintf(stderr, "bench: completion error\n");
                    exit(1);
                }
                done = wc[i].wr_id + 1;
            }
    }
    struct result r;
    r.secs = cpu_secs() - t0;
    mroce_netdrive_get_counters(tb->d, &d1);
    struct mroce_qp_counters c;
    mre_qp_get_counters(qa, &c);
    r.msgs = total;
    r.bytes = total * msg;
    r.data_pkts = c.tx_data_pkts;
    r.all_pkts = d1.tx_pkts - d0.tx_pkts;
    if (memcmp(src, dst, rlen) != 0) {
        fprintf(stderr, "bench: data mismatch (model)\n");
        exit(1);
    }
    mroce_tb_del(tb);
    free(src);
    free(dst);
    return r;
}

static void report(FILE *js, const char *name, const struct result *r,
                   double memcpy_bw, int *first)
{
    double ns_pkt = r->secs * 1e9 / (double)r->data_pkts;
    double gbps = (double)r->bytes / r->secs / 1e9;
    printf("%-22s %10.3f Mpkt/s %8.1f ns/data-pkt %8.2f GB/s goodput "
           "(%5.1f%% of memcpy)  acks+ctrl/data %.2f\n",
           name, (double)r->data_pkts / r->secs / 1e6, ns_pkt, gbps,
           100.0 * gbps / memcpy_bw,
           (double)(r->all_pkts - r->data_pkts) / (double)r->data_pkts);
    if (js)
        fprintf(js,
                "%s\n  \"%s\": {\"mpps\": %.4f, \"ns_per_data_pkt\": %.2f, "
                "\"goodput_GBps\": %.4f, \"pct_of_memcpy\": %.2f}",
                *first ? "" : ",", name, (double)r->data_pkts / r->secs / 1e6,
                ns_pkt, gbps, 100.0 * gbps / memcpy_bw);
    *first = 0;
}

int main(int argc, char **argv)
{
    int quick = 0;
    const char *json = NULL, *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = argv[++i]; /* profile one case: small | acked | large */
        else {
            fprintf(stderr, "usage: bench_engine [--quick] [--json FILE]\n");
            return 2;
        }
    }
    uint64_t scale = quick ? 1 : 8;
    if (only) {
        int small = !strcmp(only, "small") || !strcmp(only, "acked");
        interleave = !strcmp(only, "acked");
        struct result o = small ? run_direct(64, 2000000, 4096)
                                : run_direct(65536, 40000, 4096);
        printf("%s: %.1f ns per data packet\n", only,
               o.secs * 1e9 / (double)o.data_pkts);
        return 0;
    }
    double mbw = memcpy_gbps(65536, quick ? 0.2 : 1.0);
    printf("memcpy 64 KiB in cache: %.2f GB/s (reference, same run; all "
           "times CPU time)\n",
           mbw);
    FILE *js = json ? fopen(json, "w") : NULL;
    if (js)
        fprintf(js, "{\n  \"memcpy_GBps\": %.4f,", mbw);
    int first = 1;
    struct result r;
    r = run_direct(64, 100000 * scale, 4096);
    report(js, "direct 64B", &r, mbw, &first);
    double ns_small = r.secs * 1e9 / (double)r.data_pkts;
    interleave = 1;
    r = run_direct(64, 100000 * scale, 4096);
    report(js, "direct 64B acked", &r, mbw, &first);
    double ns_small_acked = r.secs * 1e9 / (double)r.data_pkts;
    interleave = 0;
    r = run_direct(4096, 20000 * scale, 4096);
    report(js, "direct 4KiB", &r, mbw, &first);
    r = run_direct(65536, 2000 * scale, 4096);
    report(js, "direct 64KiB", &r, mbw, &first);
    double pct64 = 100.0 * ((double)r.bytes / r.secs / 1e9) / mbw;
    r = run_direct(65536, 2000 * scale, 8192);
    report(js, "direct 64KiB mtu8192", &r, mbw, &first);
    r = run_model(64, 50000 * scale, 4096);
    report(js, "model 64B", &r, mbw, &first);
    r = run_model(65536, 1000 * scale, 4096);
    report(js, "model 64KiB", &r, mbw, &first);
    printf("goal: <150 ns per small packet: %.1f ns batched, %.1f ns with an "
           "ACK per 4 packets (%s); 64 KiB goodput >= 25%% of memcpy: %.1f%% "
           "(%s)\n",
           ns_small, ns_small_acked,
           ns_small_acked < 150 ? "met"
           : ns_small < 150     ? "met batched only"
                                : "missed",
           pct64, pct64 >= 25 ? "met" : "missed");
    if (js) {
        fprintf(js, "\n}\n");
        fclose(js);
    }
    return 0;
}
