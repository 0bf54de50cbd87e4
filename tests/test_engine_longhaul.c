/*
 * test_engine_longhaul.c - the engine on a long-haul path (REL-46,
 * LOSS-26, CC-39, CC-40, CC-51, CC-52): two hosts of the network model 1 ms apart one way
 * (2 ms RTT, 100 Gbit/s, no loss), a QP with a window of 8192 PSNs.
 *
 * 1. window: a QP window of MRE_MAX_WINDOW (2^18) is accepted, one above
 *    it refused, and 65536 (above the former bound) kept (REL-46).
 * 2. first window: host 0 WRITEs 32 MiB.  The requester's handshake
 *    time (about 2 ms) sets its first RTO (LOSS-26), so the first
 *    window's ACKs, 2 ms after it, arrive before any timer: no probe, no
 *    timeout, no retransmission.  With the data-centre rule alone (the
 *    first RTO 5 * min_rto = 1 ms) the first window is probed and timed
 *    out, and slow start ends at init_cwnd.
 * 3. ramp: the 32 MiB complete within TRANSFER_MAX_RTTS RTTs.  The first
 *    train of ACKs over the idle path shows its rate, and the window
 *    jumps to that rate times the RTT (CC-39) with the path windows
 *    (CC-40): about 4 RTTs.  Doubling from 64 KiB by CC-51's growth by the
 *    round alone takes about 10 RTTs, and without that about 30 (growth
 *    by the ACK stops after the first ACK of each round).
 * 4. activity: the receiver counts a long-haul sender active for two of
 *    its RTTs after its last data packet (CC-52).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "testbed.h"
#include "testutil.h"
#include "xfer.h"

#define ONE_WAY 1000000ull /* ns */
#define SIZE (32u << 20)
#define TRANSFER_MAX_RTTS 6.0
#define MODEL_LIMIT 5000000000ull /* 5 s of model time: a hang */

static struct mroce_testbed *bed(void)
{
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    cfg.net.hosts = 2;
    cfg.net.delay = ONE_WAY;
    struct mroce_testbed *tb = NULL;
    CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0);
    return tb;
}

static void test_window_bounds(void)
{
    struct mroce_testbed *tb = bed();
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.send_cq = tb->h[0].scq;
    a.recv_cq = tb->h[0].rcq;
    mre_qp *qp = NULL;
    a.window = MRE_MAX_WINDOW;
    if (CHECK(mre_qp_new(tb->h[0].ep, &a, &qp) == 0)) {
        CHECK_EQ(qp->attr.window, MRE_MAX_WINDOW);
        mre_qp_del(qp);
    }
    a.window = MRE_MAX_WINDOW + 1;
    CHECK(mre_qp_new(tb->h[0].ep, &a, &qp) == MROCE_EINVAL);
    a.window = 65536;
    if (CHECK(mre_qp_new(tb->h[0].ep, &a, &qp) == 0)) {
        CHECK_EQ(qp->attr.window, 65536);
        mre_qp_del(qp);
    }
    mroce_tb_del(tb);
}

static void test_first_window_and_ramp(void)
{
    struct mroce_testbed *tb = bed();
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.window = 8192;
    a.max_send_wr = 64;
    mre_qp *qa = NULL, *qb = NULL;
    CHECK(mroce_tb_connect(tb, 0, 1, &a, &qa, &qb, 100000000) == 0);
    /* the requester saw the handshake's round trip (LOSS-26) */
    CHECK(qa->hs_rtt >= 2 * ONE_WAY && qa->hs_rtt < 3 * ONE_WAY);
    struct xfer x;
    xfer_setup(tb, &x, SIZE, 7);
    mroce_tstamp t0 = mroce_netdrive_now(tb->d);
    xfer_post(&x, qa, qb, t0);
    CHECK(xfer_run(tb, &x, NULL, NULL, MODEL_LIMIT));
    double rtts = (double)(mroce_netdrive_now(tb->d) - t0) /
                  (double)(2 * ONE_WAY);
    xfer_check_data(&x);
    struct mroce_qp_counters c;
    mre_qp_get_counters(qa, &c);
    printf("32 MiB over a 2 ms RTT: %.1f RTTs, probes %llu, timeouts %llu, "
           "retransmitted %llu\n",
           rtts, (unsigned long long)c.probes, (unsigned long long)c.timeouts,
           (unsigned long long)c.retx_pkts);
    CHECK_EQ(c.probes, 0);
    CHECK_EQ(c.timeouts, 0);
    CHECK_EQ(c.retx_pkts, 0);
    CHECK(rtts < TRANSFER_MAX_RTTS);
    /* CC-39: the window holds about the path's bandwidth-delay product
     * (100 Gbit/s x 2 ms = 25 MB), far above what doubling reached */
    CHECK(qa->cc.cwnd > 20000000u);
    uint64_t psum = 0;
    for (uint16_t k = 0; k < qa->paths.npaths; k++)
        psum += qa->paths.paths[k].cwnd;
    CHECK(psum >= qa->cc.cwnd / 2); /* CC-40: the paths' windows too */
    xfer_free(&x);
    mroce_tb_del(tb);
}

/* CC-52: the receiver keeps a long-haul sender active for two of its
 * RTTs after its last data packet (not rate_active, 50 us), so a window-
 * limited sender, silent for most of each RTT, is not retired between
 * its windows; after that it is retired. */
static void test_active_two_rtts(void)
{
    struct mroce_testbed *tb = bed();
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    mre_qp *qa = NULL, *qb = NULL;
    CHECK(mroce_tb_connect(tb, 0, 1, &a, &qa, &qb, 100000000) == 0);
    CHECK(qa->rh.on && qb->rh.on);
    struct xfer x;
    xfer_setup(tb, &x, 4u << 20, 3);
    xfer_post(&x, qa, qb, mroce_netdrive_now(tb->d));
    CHECK(xfer_run(tb, &x, NULL, NULL, MODEL_LIMIT));
    mre_ep *rx = tb->h[1].ep;
    mroce_tstamp last = qb->rh.last;
    CHECK(qb->rh.active);
    /* one RTT after the last data packet: still counted */
    mroce_netdrive_run_until(tb->d, last + 2 * ONE_WAY);
    mre_rh_share(rx, qb, mroce_netdrive_now(tb->d));
    CHECK(qb->rh.active);
    CHECK_EQ(rx->rh.nactive, 1);
    /* three RTTs after it: retired */
    mroce_netdrive_run_until(tb->d, last + 6 * ONE_WAY);
    mre_rh_share(rx, qb, mroce_netdrive_now(tb->d));
    CHECK(!qb->rh.active);
    CHECK_EQ(rx->rh.nactive, 0);
    xfer_free(&x);
    mroce_tb_del(tb);
}

int main(void)
{
    test_window_bounds();
    test_first_window_and_ramp();
    test_active_two_rtts();
    return TESTUTIL_SUMMARY("test_engine_longhaul");
}
