/*
 * test_engine_incast.c - congestion control under incast (CC-*).
 *
 * Three senders WRITE to one receiver whose downlink is the bottleneck (the
 * network model's drop-tail queue with an ECN marking threshold).  Run four
 * ways: a fixed large window (no congestion control: the baseline), the
 * default (delay+ECN with per-path windows and the receiver's rate hint,
 * the receive rate set to the link's), receiver-driven credits, and
 * delay+ECN without hints.  Checks: data
 * intact in every mode; with congestion control the bottleneck queue peaks
 * far lower than without and nothing is dropped; goodput of each sender is
 * within 20% of a fair share; the link stays busy (aggregate goodput close to
 * the bottleneck rate).  Prints a table of the runs.
 */
#include <stdlib.h>
#include <string.h>

#include "testbed.h"
#include "testutil.h"

#define NSEND 3
#define NMODES 4
#define MSG (64u * 1024)
#define TOTAL (8u << 20)    /* per sender */
#define RATE 25000000000ull /* 25 Gbit/s links */

struct run_result {
    double gbps[NSEND], agg_gbps;
    uint64_t max_queue, drops, ce, retx;
    int intact;
};

static struct run_result run(int mode)
{
    struct run_result res;
    memset(&res, 0, sizeof(res));
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    cfg.net.hosts = NSEND + 1;
    cfg.net.spines = 4;
    cfg.net.rate_bps = RATE;
    cfg.net.queue_limit = 512 * 1024;
    cfg.net.ecn_thresh = 32 * 1024;
    cfg.net.seed = 11;
    struct mre_ep_config ec;
    mre_ep_config_default(&ec);
    /* Credits: the receiver's bandwidth-delay product (25 Gbit/s * ~8 us =
     * 25 KB) times a margin for ACK coalescing (an ACK per 4 packets), so
     * the link stays busy while the queue stays short. */
    ec.rx_credit_bytes = mode == 2 ? 96 * 1024 : 0;
    ec.rx_rate_mbps = (uint32_t)(RATE / 1000000u); /* hints: the link */
    struct mroce_testbed *tb;
    if (!CHECK(mroce_tb_new(&tb, &cfg, &ec) == 0))
        return res;
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.cc_algo = mode == 0 ? MROCE_CC_NONE : MROCE_CC_DELAY_ECN;
    at.init_cwnd = mode == 0 ? 2u << 20 : 64 * 1024;
    at.credit_mode = mode == 2;
    at.rate_hint = mode == 1; /* the baselines keep their own mechanism */
    at.max_send_wr = 1024;
    mre_qp *qs[NSEND], *qr[NSEND];
    uint8_t *src[NSEND], *dst[NSEND];
    mre_mr *ms[NSEND], *md[NSEND];
    for (int i = 0; i < NSEND; i++) {
        CHECK(mroce_tb_connect(tb, (uint32_t)i, NSEND, &at, &qs[i], &qr[i],
                               100000000) == 0);
        src[i] = malloc(TOTAL);
        dst[i] = calloc(1, TOTAL);
        for (uint32_t k = 0; k < TOTAL; k++)
            src[i][k] = (uint8_t)(k * 7 + (uint32_t)i * 13 + (k >> 12));
        mre_mr_reg(tb->h[i].ep, src[i], TOTAL, MROCE_ACCESS_LOCAL_WRITE,
                   &ms[i]);
        mre_mr_reg(tb->h[NSEND].ep, dst[i], TOTAL,
                   MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                   &md[i]);
    }
    mroce_tstamp t0 = mroce_netdrive_now(tb->d);
    for (int i = 0; i < NSEND; i++) {
        for (uint32_t off = 0; off < TOTAL; off += MSG) {
            struct mroce_sge sg = {(uint64_t)(uintptr_t)(src[i] + off), MSG,
                                   mre_mr_lkey(ms[i])};
            struct mroce_send_wr wr = {
                .wr_id = off,
                .sg_list = &sg,
                .num_sge = 1,
                .opcode = MROCE_WR_WRITE,
                .send_flags = off + MSG == TOTAL ? MROCE_SEND_SIGNALED : 0,
                .remote_addr = (uint64_t)(uintptr_t)(dst[i] + off),
                .rkey = mre_mr_rkey(md[i])};
            CHECK(mre_qp_post_send(qs[i], &wr, NULL, t0) == 0);
        }
    }
    mroce_tstamp done[NSEND] = {0};
    int ndone = 0;
    mroce_netdrive_kick_all(tb->d);
    while (ndone < NSEND && mroce_netdrive_now(tb->d) < t0 + 1000000000ull) {
        if (!mroce_netdrive_step(tb->d))
            break;
        for (int i = 0; i < NSEND; i++) {
            struct mroce_wc wc;
            if (!done[i] && mre_cq_poll(tb->h[i].scq, 1, &wc) == 1) {
                CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
                done[i] = mroce_netdrive_now(tb->d);
                ndone++;
            }
        }
    }
    CHECK_EQ(ndone, NSEND);
    res.intact = 1;
    mroce_tstamp last = t0;
    for (int i = 0; i < NSEND; i++) {
        if (memcmp(src[i], dst[i], TOTAL) != 0)
            res.intact = 0;
        if (done[i] > last)
            last = done[i];
        res.gbps[i] = done[i] > t0 ? TOTAL * 8.0 / (double)(done[i] - t0) : 0;
        struct mroce_qp_counters c;
        mre_qp_get_counters(qs[i], &c);
        res.retx += c.retx_pkts;
    }
    res.agg_gbps = NSEND * (double)TOTAL * 8.0 / (double)(last - t0);
    struct mroce_net_host_counters hc;
    mroce_net_get_host_counters(mroce_netdrive_net(tb->d), NSEND, &hc);
    res.max_queue = hc.down_max_queue;
    res.drops = hc.down_drops;
    res.ce = hc.down_ce_marks;
    for (int i = 0; i < NSEND; i++) {
        free(src[i]);
        free(dst[i]);
    }
    mroce_tb_del(tb);
    return res;
}

int main(void)
{
    static const char *const names[] = {"fixed window", "default", "credits",
                                        "delay+ECN"};
    struct run_result r[NMODES];
    printf("%-13s %8s %8s %8s %9s %10s %7s %7s %6s\n", "mode", "s0 Gb/s",
           "s1 Gb/s", "s2 Gb/s", "agg Gb/s", "max queue", "drops", "CE",
           "retx");
    for (int m = 0; m < NMODES; m++) {
        r[m] = run(m);
        printf("%-13s %8.2f %8.2f %8.2f %9.2f %10llu %7llu %7llu %6llu\n",
               names[m], r[m].gbps[0], r[m].gbps[1], r[m].gbps[2],
               r[m].agg_gbps, (unsigned long long)r[m].max_queue,
               (unsigned long long)r[m].drops, (unsigned long long)r[m].ce,
               (unsigned long long)r[m].retx);
        CHECK(r[m].intact);
    }
    /* Without congestion control the queue overflows; with it, it stays
     * far below the limit and nothing is dropped. */
    CHECK(r[0].drops > 0);
    for (int m = 1; m < NMODES; m++) {
        CHECK_MSG(r[m].drops == 0, "%s dropped %llu", names[m],
                  (unsigned long long)r[m].drops);
        CHECK_MSG(r[m].max_queue * 2 < r[0].max_queue, "%s queue %llu",
                  names[m], (unsigned long long)r[m].max_queue);
        double fair = r[m].agg_gbps / NSEND;
        for (int i = 0; i < NSEND; i++)
            CHECK_MSG(r[m].gbps[i] > 0.8 * fair,
                      "%s sender %d %.2f vs fair %.2f", names[m], i,
                      r[m].gbps[i], fair);
        /* The bottleneck stays busy: at least 80% of its rate as goodput. */
        CHECK_MSG(r[m].agg_gbps > 0.8 * RATE / 1e9, "%s aggregate %.2f",
                  names[m], r[m].agg_gbps);
    }
    return TESTUTIL_SUMMARY("test_engine_incast");
}
