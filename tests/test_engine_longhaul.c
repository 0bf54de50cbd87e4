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
 * 5. SACK span (WIRE-52, REL-42): the SACK extension each side states and
 *    the span adopted from the peer's, with and without it; then 32 MiB
 *    with one in 1,000 data packets dropped once.  With the span
 *    negotiated (window 8192: 255 words) ACKs carry more than 8 words and
 *    only the dropped packets are resent; with sack_words 8 (a peer
 *    without the extension) no ACK carries more than 8 words, and the
 *    sender too resends only the dropped packets (the hole at snd_una is
 *    repaired before the ACKs reach the end of the span, LOSS-31).
 *    An ACK of one word more than a side accepts is dropped (WIRE-53).
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

/* Drops each data packet of host 0 whose PSN is 500 mod 1000, once, and
 * records the most SACK words in host 1's ACKs. */
struct sack_hook {
    uint32_t start_psn, drops, max_words;
    uint8_t dropped[SIZE / 4096 / 1000 + 2];
};

static int sack_hook_fn(void *user, struct mroce_netdrive_pkt *pkt)
{
    struct sack_hook *h = user;
    struct mrw_pkt p;
    if (mrw_pkt_decode(&p, pkt->buf, pkt->len) != 0)
        return MROCE_NETDRIVE_PASS;
    if (pkt->src == 1 && p.base.opcode == MROCE_OP_ACK &&
        p.u.ack.sack_words > h->max_words)
        h->max_words = p.u.ack.sack_words;
    if (pkt->src != 0 || p.base.opcode != MROCE_OP_WRITE)
        return MROCE_NETDRIVE_PASS;
    uint32_t d = p.base.psn - h->start_psn;
    if (d % 1000 != 500 || d / 1000 >= sizeof(h->dropped) ||
        h->dropped[d / 1000])
        return MROCE_NETDRIVE_PASS;
    h->dropped[d / 1000] = 1;
    h->drops++;
    return MROCE_NETDRIVE_DROP;
}

static void sack_run(uint8_t sack_words, uint64_t *retx, uint32_t *max_words,
                     uint32_t *drops)
{
    struct mroce_testbed *tb = bed();
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.window = 8192;
    a.max_send_wr = 64;
    a.sack_words = sack_words;
    mre_qp *qa = NULL, *qb = NULL;
    CHECK(mroce_tb_connect(tb, 0, 1, &a, &qa, &qb, 100000000) == 0);
    uint32_t words = sack_words ? sack_words : MROCE_SACK_WORDS_LIMIT;
    CHECK_EQ(qa->sack_span, 32 * words);
    CHECK_EQ(qb->ack_sack_words, words);
    struct sack_hook h;
    memset(&h, 0, sizeof(h));
    h.start_psn = qa->snd_nxt;
    mroce_netdrive_set_tx_hook(tb->d, sack_hook_fn, &h);
    struct xfer x;
    xfer_setup(tb, &x, SIZE, 11);
    xfer_post(&x, qa, qb, mroce_netdrive_now(tb->d));
    CHECK(xfer_run(tb, &x, NULL, NULL, MODEL_LIMIT));
    xfer_check_data(&x);
    struct mroce_qp_counters c;
    mre_qp_get_counters(qa, &c);
    printf("sack_words %u: 32 MiB, %u dropped: retransmitted %llu, most "
           "SACK words in an ACK %u, timeouts %llu\n",
           sack_words, h.drops, (unsigned long long)c.retx_pkts, h.max_words,
           (unsigned long long)c.timeouts);
    *retx = c.retx_pkts;
    *max_words = h.max_words;
    *drops = h.drops;
    /* WIRE-53: an ACK of more words than this side accepts is dropped
     * (drop_invalid); one of as many is taken. */
    struct mrw_pkt ack;
    memset(&ack, 0, sizeof(ack));
    ack.base.opcode = MROCE_OP_ACK;
    ack.u.ack.cum_psn = qa->snd_una;
    ack.u.ack.echo_flags = MROCE_ECHO_DUP;
    ack.u.ack.sack_words = (uint8_t)words;
    uint64_t inv = qa->cnt.drop_invalid;
    mre_comp_on_ack(qa, &ack, mroce_netdrive_now(tb->d));
    CHECK_EQ(qa->cnt.drop_invalid, inv);
    if (words < MROCE_SACK_WORDS_LIMIT) { /* the byte holds no more */
        ack.u.ack.sack_words = (uint8_t)(words + 1);
        mre_comp_on_ack(qa, &ack, mroce_netdrive_now(tb->d));
        CHECK_EQ(qa->cnt.drop_invalid, inv + 1);
    }
    mroce_netdrive_set_tx_hook(tb->d, NULL, NULL);
    xfer_free(&x);
    mroce_tb_del(tb);
}

static void test_sack_span(void)
{
    struct mroce_testbed *tb = bed();
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.send_cq = tb->h[0].scq;
    a.recv_cq = tb->h[0].rcq;
    mre_qp *qp = NULL;
    struct mrw_conn_hdr c;
    /* What a QP states: window / 32 words, at most 255; none at 8. */
    const struct {
        uint32_t window;
        uint8_t attr, req, resp_after_none;
    } t[] = {{1024, 0, 32, 0},  {8192, 0, 255, 0}, {8192, 8, 0, 0},
             {8192, 64, 64, 0}, {256, 0, 0, 0},    {1024, 200, 32, 0}};
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        a.window = t[i].window;
        a.sack_words = t[i].attr;
        if (!CHECK(mre_qp_new(tb->h[0].ep, &a, &qp) == 0))
            continue;
        CHECK_EQ(qp->sack_span, 32 * MROCE_MAX_SACK_WORDS);
        memset(&c, 0, sizeof(c));
        mre_sack_conn_build(qp, &c, 0);
        CHECK_EQ(c.sack_words, t[i].req);
        /* A peer without the extension: 256 PSNs both ways (REL-42). */
        memset(&c, 0, sizeof(c));
        mre_sack_conn_adopt(qp, &c);
        CHECK_EQ(qp->ack_sack_words, MROCE_MAX_SACK_WORDS);
        CHECK_EQ(qp->sack_span, 32 * MROCE_MAX_SACK_WORDS);
        /* ... and the CONNECT_RESP to it carries none (CONN-25). */
        mre_sack_conn_build(qp, &c, 1);
        CHECK_EQ(c.sack_words, t[i].resp_after_none);
        /* A peer accepting 16 words: ACKs to it carry 16, ours as many
         * as we stated, if we stated any. */
        c.sack_words = 16;
        mre_sack_conn_adopt(qp, &c);
        CHECK_EQ(qp->ack_sack_words, t[i].req ? 16 : MROCE_MAX_SACK_WORDS);
        CHECK_EQ(qp->sack_span, 32u * (t[i].req ? t[i].req : 8));
        mre_qp_del(qp);
    }
    mroce_tb_del(tb);

    uint64_t retx_wide, retx_narrow;
    uint32_t words_wide, words_narrow, drops_wide, drops_narrow;
    sack_run(0, &retx_wide, &words_wide, &drops_wide);
    sack_run(MROCE_MAX_SACK_WORDS, &retx_narrow, &words_narrow, &drops_narrow);
    CHECK(drops_wide >= 5 && drops_narrow >= 5);
    CHECK(words_wide > MROCE_MAX_SACK_WORDS);
    CHECK(words_narrow <= MROCE_MAX_SACK_WORDS);
    CHECK_EQ(retx_wide, drops_wide);
    CHECK_EQ(retx_narrow, drops_narrow);
}

int main(void)
{
    test_window_bounds();
    test_first_window_and_ramp();
    test_active_two_rtts();
    test_sack_span();
    return TESTUTIL_SUMMARY("test_engine_longhaul");
}
