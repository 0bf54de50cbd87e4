/*
 * test_engine_listener_rto.c - the listener's loss timer before its first
 * RTT sample (LOSS-29, LOSS-30, CONN-8, CONN-11): host 1 connects to a
 * listener on host 0, and the listener WRITEs to it as soon as it has
 * answered, before the requester's confirming ACK can be back.
 *
 * 1. long haul (5 ms one way, 10 ms RTT, no loss): until the confirming
 *    ACK arrives nothing the listener sent can be acknowledged; its loss
 *    timer resends the CONNECT_RESP instead of probing or timing out its
 *    data (LOSS-30), so the transfer has no probe, no timeout and no
 *    retransmission.  With the data-centre initial RTO alone (5 min_rto,
 *    1 ms, below the RTT) the first window was probed and timed out.
 *    The confirmation gives the listener's handshake time (LOSS-29): one
 *    round trip.
 * 2. long haul, the first CONNECT_RESP lost: the requester is still
 *    connecting when the listener's first window arrives and drops it;
 *    the CONNECT_RESP the listener's timer resends (and the one answering
 *    the resent CONNECT_REQ) connect it, and the window is repaired; the
 *    data arrive intact.
 * 3. data centre (1 us one way): the confirming ACK is back long before
 *    5 min_rto: one CONNECT_RESP, no probe, no timeout, no retransmission.
 * 4. a peer that goes silent after its CONNECT_REQ: the listener keeps
 *    resending its CONNECT_RESP, and fails the QP once more than
 *    retry_cnt of them went unanswered and the peer has been silent for
 *    peer_timeout (LOSS-14, REL-32), as it would after timeouts; the
 *    peer's later packets do not re-arm the failed QP's loss timer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "testbed.h"
#include "testutil.h"
#include "xfer.h"

#define LONG_WAY 5000000ull /* ns one way */
#define DC_WAY 1000ull
#define SIZE (16u << 20)
#define MODEL_LIMIT 5000000000ull /* 5 s of model time: a hang */

/* What host 0 (the listener) sent and what host 1 (the requester) may
 * send: drop_resp drops host 0's first CONNECT_RESP; mute drops
 * everything of host 1's but its CONNECT_REQs. */
struct hook {
    int drop_resp, mute;
    uint32_t resps, resp_drops, muted;
};

static int hook_fn(void *user, struct mroce_netdrive_pkt *pkt)
{
    struct hook *h = user;
    struct mrw_pkt p;
    if (mrw_pkt_decode(&p, pkt->buf, pkt->len) != 0)
        return MROCE_NETDRIVE_PASS;
    if (pkt->src == 0 && p.base.opcode == MROCE_OP_CONNECT_RESP) {
        h->resps++;
        if (h->drop_resp && h->resp_drops == 0) {
            h->resp_drops++;
            return MROCE_NETDRIVE_DROP;
        }
    }
    if (pkt->src == 1 && h->mute && p.base.opcode != MROCE_OP_CONNECT_REQ) {
        h->muted++;
        return MROCE_NETDRIVE_DROP;
    }
    return MROCE_NETDRIVE_PASS;
}

struct rts_wait {
    mre_qp *qp;
};

static int not_rts(void *user)
{
    const struct rts_wait *w = user;
    return mre_qp_state(w->qp) != MROCE_QPS_RTS;
}

/* Host 1 connects to a listener on host 0; returns once the listener is
 * in RTS (its CONNECT_RESP on the way), the requester still connecting. */
static struct mroce_testbed *open_pair(mroce_tstamp one_way,
                                       const struct mre_qp_attr *attr,
                                       struct hook *h, mre_qp **lq, mre_qp **rq)
{
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    cfg.net.hosts = 2;
    cfg.net.delay = one_way;
    struct mroce_testbed *tb = NULL;
    CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0);
    mroce_netdrive_set_tx_hook(tb->d, hook_fn, h);
    struct mre_qp_attr a = *attr;
    a.send_cq = tb->h[0].scq;
    a.recv_cq = tb->h[0].rcq;
    CHECK(mre_qp_new(tb->h[0].ep, &a, lq) == 0);
    a.send_cq = tb->h[1].scq;
    a.recv_cq = tb->h[1].rcq;
    CHECK(mre_qp_new(tb->h[1].ep, &a, rq) == 0);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    struct mre_addr to;
    mroce_netdrive_addr(0, &to);
    CHECK(mre_qp_listen(*lq, now) == 0);
    CHECK(mre_qp_connect(*rq, &to, mre_qp_num(*lq), now) == 0);
    struct rts_wait w = {*lq};
    mroce_netdrive_kick_all(tb->d);
    CHECK(mroce_netdrive_run_while(tb->d, not_rts, &w, now + MODEL_LIMIT));
    CHECK(mre_qp_state(*rq) == MROCE_QPS_CONNECTING);
    return tb;
}

static void counters(mre_qp *qp, struct mroce_qp_counters *c)
{
    mre_qp_get_counters(qp, c);
}

/* 1 and 3: the listener sends at once over a clean path. */
static void clean_run(mroce_tstamp one_way)
{
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.window = 8192;
    a.max_send_wr = 64;
    struct hook h;
    memset(&h, 0, sizeof(h));
    mre_qp *lq = NULL, *rq = NULL;
    struct mroce_testbed *tb = open_pair(one_way, &a, &h, &lq, &rq);
    CHECK(lq->hs_wait);
    struct xfer x;
    xfer_setup(tb, &x, SIZE, 5);
    xfer_post(&x, lq, rq, mroce_netdrive_now(tb->d));
    CHECK(xfer_run(tb, &x, NULL, NULL, MODEL_LIMIT));
    xfer_check_data(&x);
    struct mroce_qp_counters c;
    counters(lq, &c);
    printf("listener, %llu ns one way: CONNECT_RESPs %u, probes %llu, "
           "timeouts %llu, retransmitted %llu, handshake time %llu ns\n",
           (unsigned long long)one_way, h.resps, (unsigned long long)c.probes,
           (unsigned long long)c.timeouts, (unsigned long long)c.retx_pkts,
           (unsigned long long)lq->hs_rtt);
    CHECK(!lq->hs_wait);
    CHECK_EQ(c.probes, 0);
    CHECK_EQ(c.timeouts, 0);
    CHECK_EQ(c.retx_pkts, 0);
    CHECK_EQ(c.spurious_rto, 0);
    /* LOSS-29: the confirming ACK came one round trip after the
     * CONNECT_RESP */
    CHECK(lq->hs_rtt >= 2 * one_way && lq->hs_rtt < 3 * one_way);
    if (one_way == DC_WAY)
        CHECK_EQ(h.resps, 1); /* confirmed before any timer */
    else
        CHECK(h.resps > 1); /* LOSS-30 resent it while waiting */
    xfer_free(&x);
    mroce_tb_del(tb);
}

/* 2: the first CONNECT_RESP is lost; the listener's window with it. */
static void lost_resp(void)
{
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.window = 8192;
    a.max_send_wr = 64;
    struct hook h;
    memset(&h, 0, sizeof(h));
    h.drop_resp = 1;
    mre_qp *lq = NULL, *rq = NULL;
    struct mroce_testbed *tb = open_pair(LONG_WAY, &a, &h, &lq, &rq);
    struct xfer x;
    xfer_setup(tb, &x, 4u << 20, 9);
    xfer_post(&x, lq, rq, mroce_netdrive_now(tb->d));
    CHECK(xfer_run(tb, &x, NULL, NULL, MODEL_LIMIT));
    xfer_check_data(&x);
    struct mroce_qp_counters c, r;
    counters(lq, &c);
    counters(rq, &r);
    printf("first CONNECT_RESP lost: CONNECT_RESPs %u, requester dropped "
           "%llu while connecting; listener probes %llu, timeouts %llu, "
           "retransmitted %llu\n",
           h.resps, (unsigned long long)r.drop_state,
           (unsigned long long)c.probes, (unsigned long long)c.timeouts,
           (unsigned long long)c.retx_pkts);
    CHECK_EQ(h.resp_drops, 1);
    CHECK(h.resps > 2);
    CHECK(r.drop_state > 0); /* the first window met a connecting QP */
    CHECK(c.retx_pkts > 0);  /* and repaired */
    CHECK(!lq->hs_wait);
    CHECK(mre_qp_state(lq) == MROCE_QPS_RTS);
    xfer_free(&x);
    mroce_tb_del(tb);
}

struct err_wait {
    mre_qp *qp;
};

static int not_error(void *user)
{
    const struct err_wait *w = user;
    return mre_qp_state(w->qp) != MROCE_QPS_ERROR;
}

/* 4: nothing of the requester's reaches the listener after its
 * CONNECT_REQs. */
static void silent_peer(void)
{
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.peer_timeout = 100000000; /* 100 ms */
    struct hook h;
    memset(&h, 0, sizeof(h));
    h.mute = 1;
    mre_qp *lq = NULL, *rq = NULL;
    struct mroce_testbed *tb = open_pair(LONG_WAY, &a, &h, &lq, &rq);
    struct xfer x;
    xfer_setup(tb, &x, 4u << 20, 3);
    xfer_post(&x, lq, rq, mroce_netdrive_now(tb->d));
    struct err_wait w = {lq};
    mroce_netdrive_kick_all(tb->d);
    CHECK(mroce_netdrive_run_while(tb->d, not_error, &w,
                                   mroce_netdrive_now(tb->d) + MODEL_LIMIT));
    struct mroce_qp_counters c;
    counters(lq, &c);
    printf("silent peer: CONNECT_RESPs %u, muted %u, listener failed "
           "(peer_timeouts %llu, timeouts %llu)\n",
           h.resps, h.muted, (unsigned long long)c.peer_timeouts,
           (unsigned long long)c.timeouts);
    CHECK(mre_qp_state(lq) == MROCE_QPS_ERROR);
    CHECK_EQ(c.peer_timeouts, 1);
    CHECK_EQ(c.timeouts, 0);
    CHECK(h.resps > (uint32_t)a.retry_cnt + 1);
    CHECK(lq->hs_wait);
    struct mroce_wc wc;
    CHECK(mre_cq_poll(tb->h[0].scq, 1, &wc) == 1 &&
          wc.status == MROCE_WC_RETRY_EXC_ERR);
    /* The requester's packets (its keepalives) now reach the failed
     * listener: they confirm nothing and arm no timer there. */
    h.mute = 0;
    uint64_t rx0 = lq->cnt.rx_pkts;
    struct mroce_netdrive_counters d0, d1;
    mroce_netdrive_get_counters(tb->d, &d0);
    mroce_netdrive_run_until(tb->d, mroce_netdrive_now(tb->d) + 300000000);
    mroce_netdrive_get_counters(tb->d, &d1);
    CHECK(lq->cnt.rx_pkts > rx0);
    CHECK(mre_qp_state(lq) == MROCE_QPS_ERROR);
    CHECK_EQ(lq->loss_deadline, MROCE_TSTAMP_INF);
    CHECK_EQ(d1.expiry_stuck, d0.expiry_stuck);
    xfer_free(&x);
    mroce_tb_del(tb);
}

int main(void)
{
    clean_run(LONG_WAY);
    lost_resp();
    clean_run(DC_WAY);
    silent_peer();
    return TESTUTIL_SUMMARY("test_engine_listener_rto");
}
