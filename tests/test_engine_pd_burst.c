/*
 * test_engine_pd_burst.c - protection domains and path bursts.
 *
 * Protection domains: a QP may use, locally and remotely, only regions of
 * its own PD: a local lkey of another PD is refused at post time
 * (MROCE_EACCESS); a remote rkey of another PD is answered with a remote
 * access NAK and nothing is written (SEC-3).
 * Path bursts: with path_burst = B the requester sends B consecutive data
 * packets on one path before picking the next (what a UDP GSO datapath
 * needs), or fewer when the congestion window would otherwise span fewer
 * than MROCE_PATH_WINDOW_PICKS picks (PATH-3); the transfer stays correct
 * under loss, also when PATH-16 reuses slots.
 */
#include <stdlib.h>
#include <string.h>

#include <mroce/wire.h>

#include "case_table.h"
#include "path.h"
#include "testbed.h"
#include "testutil.h"

static void test_pd(void)
{
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    struct mroce_testbed *tb;
    if (!CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0))
        return;
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.pd = 1;
    mre_qp *qa, *qb;
    CHECK(mroce_tb_connect(tb, 0, 1, &at, &qa, &qb, 100000000) == 0);
    static uint8_t src[4096], own[4096], other[4096];
    memset(src, 0xab, sizeof(src));
    mre_mr *ms0, *ms1, *mown, *mother;
    CHECK(mre_mr_reg_pd(tb->h[0].ep, 0, src, sizeof(src),
                        MROCE_ACCESS_LOCAL_WRITE, &ms0) == 0);
    CHECK(mre_mr_reg_pd(tb->h[0].ep, 1, src, sizeof(src),
                        MROCE_ACCESS_LOCAL_WRITE, &ms1) == 0);
    unsigned rw = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    CHECK(mre_mr_reg_pd(tb->h[1].ep, 1, own, sizeof(own), rw, &mown) == 0);
    CHECK(mre_mr_reg_pd(tb->h[1].ep, 2, other, sizeof(other), rw, &mother) ==
          0);
    mroce_tstamp now = mroce_netdrive_now(tb->d);

    /* Local: an lkey of PD 0 on a PD 1 QP is refused at once. */
    struct mroce_sge bad = {(uint64_t)(uintptr_t)src, 64, mre_mr_lkey(ms0)};
    struct mroce_send_wr w0 = {.wr_id = 1,
                               .sg_list = &bad,
                               .num_sge = 1,
                               .opcode = MROCE_WR_WRITE,
                               .remote_addr = (uint64_t)(uintptr_t)own,
                               .rkey = mre_mr_rkey(mown)};
    CHECK_EQ_INT(mre_qp_post_send(qa, &w0, NULL, now), MROCE_EACCESS);

    /* Same PD: works. */
    struct mroce_sge ok = {(uint64_t)(uintptr_t)src, 64, mre_mr_lkey(ms1)};
    struct mroce_send_wr w1 = {.wr_id = 2,
                               .sg_list = &ok,
                               .num_sge = 1,
                               .opcode = MROCE_WR_WRITE,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .remote_addr = (uint64_t)(uintptr_t)own,
                               .rkey = mre_mr_rkey(mown)};
    CHECK_EQ_INT(mre_qp_post_send(qa, &w1, NULL, now), 0);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 1, 100000000));
    struct mroce_wc wc;
    CHECK_EQ_INT(mre_cq_poll(tb->h[0].scq, 1, &wc), 1);
    CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
    CHECK(own[0] == 0xab && own[63] == 0xab);

    /* Remote: an rkey of PD 2 through the PD 1 QP: remote access error,
     * nothing written. */
    struct mroce_send_wr w2 = w1;
    w2.wr_id = 3;
    w2.remote_addr = (uint64_t)(uintptr_t)other;
    w2.rkey = mre_mr_rkey(mother);
    CHECK_EQ_INT(mre_qp_post_send(qa, &w2, NULL, mroce_netdrive_now(tb->d)), 0);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 1, 100000000));
    CHECK_EQ_INT(mre_cq_poll(tb->h[0].scq, 1, &wc), 1);
    CHECK_EQ(wc.wr_id, 3u);
    CHECK_EQ(wc.status, MROCE_WC_REM_ACCESS_ERR);
    static const uint8_t zero[4096];
    CHECK(memcmp(other, zero, sizeof(other)) == 0);
    mroce_tb_del(tb);
}

struct burst_obs {
    uint16_t last;
    uint32_t run, runs, pkts, maxrun;
    uint32_t hist[65];
};

static int tx_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct burst_obs *o = user;
    struct mrw_pkt pkt;
    if (p->src != 0 || mrw_pkt_decode(&pkt, p->buf, p->len) < 0 ||
        pkt.base.opcode != MROCE_OP_WRITE || (pkt.base.flags & MROCE_F_RETX))
        return MROCE_NETDRIVE_PASS;
    o->pkts++;
    if (o->run && pkt.base.entropy == o->last) {
        o->run++;
    } else {
        if (o->run)
            o->hist[o->run > 64 ? 64 : o->run]++;
        o->runs++;
        o->run = 1;
        o->last = pkt.base.entropy;
    }
    if (o->run > o->maxrun)
        o->maxrun = o->run;
    return MROCE_NETDRIVE_PASS;
}

/* window: a fixed congestion window in bytes (CC none), so that the burst
 * the window allows (PATH-3: at least MROCE_PATH_WINDOW_PICKS picks per
 * window) is known; expect: the run length that gives. */
static void test_burst(uint8_t burst, double loss, uint32_t window,
                       unsigned expect, uint8_t reuse)
{
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    cfg.net.loss = loss;
    cfg.net.seed = 7 + burst;
    struct mroce_testbed *tb;
    if (!CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0))
        return;
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.path_burst = burst;
    at.path_reuse = reuse;
    at.npaths = 16;
    at.cc_algo = MROCE_CC_NONE;
    at.init_cwnd = window;
    at.rate_hint = 0; /* the burst bound below is the window's alone */
    mre_qp *qa, *qb;
    CHECK(mroce_tb_connect(tb, 0, 1, &at, &qa, &qb, 100000000) == 0);
    size_t len = 4u << 20;
    uint8_t *src = malloc(len), *dst = calloc(1, len);
    for (size_t i = 0; i < len; i++)
        src[i] = (uint8_t)(i * 31 + (i >> 9));
    mre_mr *ms, *md;
    mre_mr_reg(tb->h[0].ep, src, len, MROCE_ACCESS_LOCAL_WRITE, &ms);
    mre_mr_reg(tb->h[1].ep, dst, len,
               MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE, &md);
    struct burst_obs o;
    memset(&o, 0, sizeof(o));
    mroce_netdrive_set_tx_hook(tb->d, tx_hook, &o);
    struct mroce_sge sg = {(uint64_t)(uintptr_t)src, (uint32_t)len,
                           mre_mr_lkey(ms)};
    struct mroce_send_wr wr = {.wr_id = 1,
                               .sg_list = &sg,
                               .num_sge = 1,
                               .opcode = MROCE_WR_WRITE,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .remote_addr = (uint64_t)(uintptr_t)dst,
                               .rkey = mre_mr_rkey(md)};
    CHECK_EQ_INT(mre_qp_post_send(qa, &wr, NULL, mroce_netdrive_now(tb->d)), 0);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 1, 2000000000));
    struct mroce_wc wc;
    CHECK_EQ_INT(mre_cq_poll(tb->h[0].scq, 1, &wc), 1);
    CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
    CHECK(memcmp(src, dst, len) == 0);
    if (o.run)
        o.hist[o.run > 64 ? 64 : o.run]++;
    /* First transmissions come in runs of exactly `burst` packets on one
     * entropy (the last run may be shorter; a retransmission in between
     * may cut one short).  Consecutive runs may share an entropy only by
     * picking the same slot twice, which the round robin never does with
     * 16 healthy slots, so the longest run is `burst`.  With PATH-16 a
     * burst may reuse the slot just acknowledged, at most
     * MROCE_PATH_REUSE_RUN times in a row before the round robin picks:
     * runs of up to REUSE_RUN + 1 bursts, never longer. */
    double mean = (double)o.pkts / (double)o.runs;
    unsigned longest = reuse ? (MROCE_PATH_REUSE_RUN + 1) * expect : expect;
    printf("burst %u loss %.2f window %u reuse %u: %u first transmissions in "
           "%u runs "
           "(mean %.2f, longest %u)\n",
           burst, loss, window, reuse, o.pkts, o.runs, mean, o.maxrun);
    CHECK(o.maxrun <= longest);
    CHECK(mean > 0.9 * expect);
    free(src);
    free(dst);
    mroce_tb_del(tb);
}

/* One packet of a full 4 KiB MTU, headers and CRC included. */
#define PD_BURST_PKT (4096 + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN)

static void case_burst(void)
{
    /* 4 MiB windows allow any burst; 2 * PICKS packets of ~4.2 KiB allow
     * 2, 1 MiB about 31 */
    uint32_t pkt = PD_BURST_PKT;
    test_burst(1, 0, 4u << 20, 1, 0);
    test_burst(8, 0, 4u << 20, 8, 0);
    test_burst(8, 0.02, 4u << 20, 8, 0);
    test_burst(32, 0, 4u << 20, 32, 0);
    test_burst(8, 0, 2 * MROCE_PATH_WINDOW_PICKS * pkt, 2, 0);
    test_burst(32, 0, 1u << 20, (1u << 20) / (MROCE_PATH_WINDOW_PICKS * pkt),
               0);
}

static void case_burst_reuse(void)
{
    /* PATH-16 on, as libmroce runs it */
    uint32_t pkt = PD_BURST_PKT;
    test_burst(8, 0, 4u << 20, 8, 1);
    test_burst(8, 0.02, 4u << 20, 8, 1);
    test_burst(32, 0, 1u << 20, (1u << 20) / (MROCE_PATH_WINDOW_PICKS * pkt),
               1);
}

static const struct test_case cases[] = {
    {"pd", test_pd},
    {"burst", case_burst},
    {"burst_reuse", case_burst_reuse},
};

int main(int argc, char **argv)
{
    return TEST_CASES_MAIN("test_engine_pd_burst", cases, argc, argv);
}
