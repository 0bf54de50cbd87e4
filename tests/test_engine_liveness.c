/*
 * test_engine_liveness.c - when a QP gives up on a silent peer, and the
 * keepalive (REL-32..REL-37, LOSS-14), with literal timestamps.
 *
 * Two endpoints exchange packets directly (no network model): each step
 * runs the due timers of every end that is not stopped and hands each
 * packet one end writes to the other at once.  A stopped end is a host
 * that does not run (SIGSTOP, a descheduled process): it writes nothing,
 * its timers do not run, and what is sent to it is lost.
 *
 *  1. A stall shorter than peer_timeout: the WRITE's sender sees its peer
 *     vanish for 1.9 s with peer_timeout 2 s; well over retry_cnt RTOs fire
 *     and the QP survives; resumed, the WRITE completes, data intact.
 *  2. Longer: the sender fails RETRY_EXC_ERR exactly peer_timeout after it
 *     last heard from the peer, not a nanosecond sooner.
 *  3. Idle: nothing is sent before a quarter of peer_timeout; then a
 *     keepalive (ACK, ACK_REQ, echo DUP), answered by a plain ACK that
 *     resets the clock; a minute of idling costs a few packets a second.
 *  4. A passive side (a WRITE target with receives posted) whose peer
 *     stops: keepalives at a quarter of peer_timeout and then every
 *     sixteenth, the QP in ERROR exactly peer_timeout after the last
 *     packet, the oldest receive RETRY_EXC_ERR, the other flushed.
 *  5. RNR: rnr_retry 7 retries forever (a receive posted after 2 s still
 *     gets the SEND); rnr_retry 6 still fails after 7 rounds.
 *  6. peer_timeout 0: retry_cnt timeouts alone fail the QP (verbs' rule),
 *     and an idle QP sends nothing, however long.
 *  7. Ask before giving up: a QP whose own host stopped for 3 x its
 *     peer_timeout (the peer, with a longer one, is alive) and a QP whose
 *     peer_timeout is switched on after an idle hour both send a keepalive
 *     first, get the answer and stay in RTS; with the peer gone the latter
 *     fails a sixteenth of peer_timeout after asking.
 */
#include <stdlib.h>
#include <string.h>

#include <mroce/wire.h>

#include "case_table.h"
#include "engine_int.h"
#include "testutil.h"

#define MS 1000000ull
#define SEC 1000000000ull

struct end {
    mre_ep *ep;
    mre_cq *cq;
    mre_qp *qp;
    struct mre_addr addr;
    uint64_t seed;
    int stopped;
    uint64_t keepalives, plain_acks, pkts; /* packets it sent */
    int last_ack_req, last_echo_dup;       /* of its last ACK */
};

struct world {
    struct end e[2];
    mroce_tstamp now;
};

static int end_new(struct end *e, uint8_t id)
{
    struct mre_ep_config c;
    memset(e, 0, sizeof(*e));
    mre_ep_config_default(&c);
    c.mem.calloc = testutil_calloc;
    c.mem.free = testutil_free;
    c.rand = testutil_rand_bytes;
    e->seed = 77 + id;
    c.rand_user = &e->seed;
    e->addr.len = 6;
    e->addr.data[0] = 10;
    e->addr.data[3] = id;
    if (mre_ep_new(&e->ep, &c) < 0)
        return -1;
    return mre_cq_new(e->ep, 256, &e->cq);
}

/* Move packets both ways until neither end has one, or `max` have moved
 * (a stopped end writes nothing; what goes to it is lost). */
static void exchange_n(struct world *w, long max)
{
    uint8_t buf[MROCE_MAX_PKT_LEN];
    struct mre_tx_info ti;
    int moved;
    do {
        moved = 0;
        for (int i = 0; i < 2; i++) {
            struct end *from = &w->e[i], *to = &w->e[1 - i];
            int n;
            if (from->stopped)
                continue;
            while (max > 0 && (n = mre_ep_write_pkt(from->ep, buf, sizeof(buf),
                                                    &ti, w->now)) > 0) {
                struct mrw_pkt p;
                moved++;
                max--;
                from->pkts++;
                if (mrw_pkt_decode(&p, buf, (size_t)n) == 0 &&
                    p.base.opcode == MROCE_OP_ACK) {
                    from->last_ack_req = !!(p.base.flags & MROCE_F_ACK_REQ);
                    from->last_echo_dup = !!(p.u.ack.echo_flags &
                                             MROCE_ECHO_DUP);
                    if (from->last_ack_req)
                        from->keepalives++;
                    else
                        from->plain_acks++;
                }
                if (!to->stopped) {
                    struct mre_rx_info ri = {from->addr, MROCE_ECN_ECT0, 0};
                    mre_ep_recv(to->ep, buf, (size_t)n, &ri, w->now);
                }
            }
        }
    } while (moved && max > 0);
}

static void exchange(struct world *w)
{
    exchange_n(w, 1L << 40);
}

static mroce_tstamp next_expiry(const struct world *w)
{
    mroce_tstamp t = MROCE_TSTAMP_INF;
    for (int i = 0; i < 2; i++) {
        mroce_tstamp x = w->e[i].stopped ? MROCE_TSTAMP_INF
                                         : mre_ep_expiry(w->e[i].ep);
        if (x < t)
            t = x;
    }
    return t;
}

/* Run the timers, in order, up to `until` (then the clock reads until);
 * stops early, at the moment it happens, if `watch` leaves RTS. */
static void run_to(struct world *w, mroce_tstamp until, const mre_qp *watch)
{
    for (long steps = 0; steps < 10000000; steps++) {
        exchange(w);
        if (watch && mre_qp_state(watch) != MROCE_QPS_RTS)
            return;
        mroce_tstamp t = next_expiry(w);
        if (t > until)
            break;
        if (t > w->now)
            w->now = t;
        for (int i = 0; i < 2; i++)
            if (!w->e[i].stopped)
                mre_ep_handle_expiry(w->e[i].ep, w->now);
    }
    w->now = until;
    exchange(w);
}

/* Two ends, connected at t = 1 s with attributes `a` (both sides). */
static int world_new(struct world *w, const struct mre_qp_attr *a)
{
    memset(w, 0, sizeof(*w));
    w->now = SEC;
    for (int i = 0; i < 2; i++) {
        if (!CHECK(end_new(&w->e[i], (uint8_t)(i + 1)) == 0))
            return -1;
        struct mre_qp_attr x = *a;
        x.send_cq = x.recv_cq = w->e[i].cq;
        if (!CHECK(mre_qp_new(w->e[i].ep, &x, &w->e[i].qp) == 0))
            return -1;
    }
    CHECK(mre_qp_listen(w->e[1].qp, w->now) == 0);
    CHECK(mre_qp_connect(w->e[0].qp, &w->e[1].addr, 0, w->now) == 0);
    exchange(w);
    if (!CHECK(mre_qp_state(w->e[0].qp) == MROCE_QPS_RTS) ||
        !CHECK(mre_qp_state(w->e[1].qp) == MROCE_QPS_RTS))
        return -1;
    return 0;
}

static void world_del(struct world *w)
{
    for (int i = 0; i < 2; i++)
        if (w->e[i].ep)
            mre_ep_del(w->e[i].ep);
}

static struct mre_qp_attr attr(mroce_tstamp peer_timeout)
{
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.min_rto = 1 * MS; /* as libmroce */
    a.max_rto = 100 * MS;
    a.retry_cnt = 7;
    a.peer_timeout = peer_timeout;
    a.window = 64;
    a.npaths = 4;
    a.max_send_wr = a.max_recv_wr = 8;
    return a;
}

static uint64_t counter_timeouts(const mre_qp *qp)
{
    struct mroce_qp_counters c;
    mre_qp_get_counters(qp, &c);
    return c.timeouts;
}

#define XFER (256u * 1024)

/* Host 0 WRITEs XFER bytes to host 1; the peer stops 1 ms in, for `stall`
 * (forever if 0). */
static void test_stall(mroce_tstamp stall)
{
    const mroce_tstamp pt = 2 * SEC;
    struct world w;
    struct mre_qp_attr a = attr(pt);
    uint8_t *src = malloc(XFER), *dst = calloc(1, XFER);
    /* Hints without asking: the packets exchanged before the stop (at one
     * instant of the model's clock) must include data and its ACK, an RTT
     * sample for the timeouts to count from.  Asking (rate_hint 2) sends
     * only the share request then: the first packet waits for a random
     * point after it (CC-43) and the paced ones for the clock. */
    a.rate_hint = 1;
    mre_mr *ms = NULL, *md = NULL;
    if (world_new(&w, &a) < 0)
        goto out;
    for (uint32_t i = 0; i < XFER; i++)
        src[i] = (uint8_t)(i * 7 + 3);
    CHECK(mre_mr_reg(w.e[0].ep, src, XFER, MROCE_ACCESS_LOCAL_WRITE, &ms) == 0);
    CHECK(mre_mr_reg(w.e[1].ep, dst, XFER,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                     &md) == 0);
    struct mroce_sge sg = {(uintptr_t)src, XFER, mre_mr_lkey(ms)};
    struct mroce_send_wr wr = {.wr_id = 1,
                               .sg_list = &sg,
                               .num_sge = 1,
                               .opcode = MROCE_WR_WRITE,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .remote_addr = (uintptr_t)dst,
                               .rkey = mre_mr_rkey(md)};
    mre_qp *qa = w.e[0].qp;
    CHECK(mre_qp_post_send(qa, &wr, NULL, w.now) == 0);
    /* A few packets go, then the peer stops with the rest outstanding. */
    mroce_tstamp t_stop = w.now + 10000;
    w.now = t_stop;
    exchange_n(&w, 24);
    w.e[1].stopped = 1;
    mroce_tstamp heard = qa->heard;
    CHECK(heard <= t_stop);
    struct mroce_wc wc;
    if (stall) {
        run_to(&w, t_stop + stall, qa);
        CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
        uint64_t to = counter_timeouts(qa);
        CHECK_MSG(to > 2u * a.retry_cnt, "only %llu timeouts in the stall",
                  (unsigned long long)to);
        CHECK_EQ(mre_cq_poll(w.e[0].cq, 1, &wc), 0);
        w.e[1].stopped = 0; /* SIGCONT */
        run_to(&w, w.now + 2 * SEC, NULL);
        CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
        CHECK_EQ(mre_qp_state(w.e[1].qp), MROCE_QPS_RTS);
        if (CHECK(mre_cq_poll(w.e[0].cq, 1, &wc) == 1)) {
            CHECK_EQ(wc.wr_id, 1u);
            CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        }
        CHECK(memcmp(src, dst, XFER) == 0);
        printf("stall of %.1f s (peer_timeout %.1f s): %llu timeouts, QP "
               "alive, WRITE intact\n",
               (double)stall / SEC, (double)pt / SEC, (unsigned long long)to);
    } else {
        /* Alive until peer_timeout after it last heard from the peer... */
        run_to(&w, heard + pt - 1, qa);
        CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
        /* ...and failed right then. */
        run_to(&w, heard + pt + 10 * SEC, qa);
        CHECK_EQ(mre_qp_state(qa), MROCE_QPS_ERROR);
        CHECK_MSG(w.now == heard + pt, "failed %lld ns after peer_timeout",
                  (long long)(w.now - (heard + pt)));
        if (CHECK(mre_cq_poll(w.e[0].cq, 1, &wc) == 1))
            CHECK_EQ(wc.status, MROCE_WC_RETRY_EXC_ERR);
        struct mroce_qp_counters c;
        mre_qp_get_counters(qa, &c);
        CHECK_EQ(c.peer_timeouts, 1u);
    }
out:
    if (ms)
        mre_mr_dereg(ms);
    if (md)
        mre_mr_dereg(md);
    world_del(&w);
    free(src);
    free(dst);
}

static void test_idle(void)
{
    const mroce_tstamp pt = 4 * SEC;
    struct world w;
    struct mre_qp_attr a = attr(pt);
    if (world_new(&w, &a) < 0)
        goto out;
    mre_qp *qa = w.e[0].qp, *qb = w.e[1].qp;
    mroce_tstamp t0 = w.now;
    uint64_t p0 = w.e[0].pkts + w.e[1].pkts;
    /* Host 1 does not run its timers for now: host 0's keepalive and its
     * answer are seen alone. */
    w.e[1].stopped = 1;
    run_to(&w, t0 + pt / 4 - 1, NULL);
    CHECK_EQ(w.e[0].pkts + w.e[1].pkts, p0); /* quiet until then */
    w.now = t0 + pt / 4;
    mre_ep_handle_expiry(w.e[0].ep, w.now);
    uint8_t buf[MROCE_MAX_PKT_LEN];
    struct mre_tx_info ti;
    int n = mre_ep_write_pkt(w.e[0].ep, buf, sizeof(buf), &ti, w.now);
    struct mrw_pkt p;
    if (CHECK(n > 0) && CHECK(mrw_pkt_decode(&p, buf, (size_t)n) == 0)) {
        CHECK_EQ(p.base.opcode, MROCE_OP_ACK);
        CHECK(p.base.flags & MROCE_F_ACK_REQ);
        CHECK(p.u.ack.echo_flags & MROCE_ECHO_DUP);
        CHECK_EQ(p.u.ack.cum_psn, qa->rxwin.cum);
    }
    CHECK_EQ_INT(mre_ep_write_pkt(w.e[0].ep, buf, sizeof(buf), &ti, w.now), 0);
    /* Host 1 answers at once, with a plain ACK. */
    mroce_tstamp t_ans = w.now + 20000;
    w.now = t_ans;
    struct mre_rx_info ri = {w.e[0].addr, MROCE_ECN_ECT0, 0};
    mre_ep_recv(w.e[1].ep, buf, (size_t)n, &ri, w.now);
    n = mre_ep_write_pkt(w.e[1].ep, buf, sizeof(buf), &ti, w.now);
    if (CHECK(n > 0) && CHECK(mrw_pkt_decode(&p, buf, (size_t)n) == 0)) {
        CHECK_EQ(p.base.opcode, MROCE_OP_ACK);
        CHECK(!(p.base.flags & MROCE_F_ACK_REQ));
        CHECK(p.u.ack.echo_flags & MROCE_ECHO_DUP);
    }
    CHECK_EQ_INT(mre_ep_write_pkt(w.e[1].ep, buf, sizeof(buf), &ti, w.now), 0);
    struct mre_rx_info rb = {w.e[1].addr, MROCE_ECN_ECT0, 0};
    mre_ep_recv(w.e[0].ep, buf, (size_t)n, &rb, w.now);
    CHECK_EQ(qa->heard, t_ans);
    /* The answer resets host 0's clock: its next keepalive is due a
     * quarter of peer_timeout after it. */
    run_to(&w, t_ans + pt / 4 - 1, NULL);
    CHECK_EQ(w.e[0].keepalives, 0u); /* the one above was sent by hand */
    run_to(&w, t_ans + pt / 4, NULL);
    CHECK_EQ(w.e[0].keepalives, 1u);
    /* A minute of idling, both running: alive, and cheap. */
    w.e[1].stopped = 0;
    uint64_t before = w.e[0].pkts + w.e[1].pkts;
    run_to(&w, w.now + 60 * SEC, NULL);
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
    CHECK_EQ(mre_qp_state(qb), MROCE_QPS_RTS);
    uint64_t sent = w.e[0].pkts + w.e[1].pkts - before;
    uint64_t kas = w.e[0].keepalives + w.e[1].keepalives;
    CHECK_MSG(sent >= 60 / 1 && sent <= 4 * 60 / (pt / 4 / SEC),
              "%llu packets in a minute of idling", (unsigned long long)sent);
    CHECK(kas > 0 && w.e[0].plain_acks + w.e[1].plain_acks > 0);
    printf("idle minute, peer_timeout %.0f s: %llu packets (%llu "
           "keepalives)\n",
           (double)pt / SEC, (unsigned long long)sent, (unsigned long long)kas);
out:
    world_del(&w);
}

static void test_passive(void)
{
    const mroce_tstamp pt = 800 * MS;
    struct world w;
    struct mre_qp_attr a = attr(pt);
    static uint8_t rbuf[64];
    mre_mr *mr = NULL;
    if (world_new(&w, &a) < 0)
        goto out;
    mre_qp *qa = w.e[0].qp;
    CHECK(mre_mr_reg(w.e[0].ep, rbuf, sizeof(rbuf),
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                     &mr) == 0);
    struct mroce_sge sg = {(uintptr_t)rbuf, sizeof(rbuf), mre_mr_lkey(mr)};
    struct mroce_recv_wr r1 = {.wr_id = 11, .sg_list = &sg, .num_sge = 1};
    struct mroce_recv_wr r0 = {.wr_id = 10,
                               .next = &r1,
                               .sg_list = &sg,
                               .num_sge = 1};
    CHECK(mre_qp_post_recv(qa, &r0, NULL) == 0);
    run_to(&w, w.now + 100 * MS, NULL);
    w.e[1].stopped = 1; /* SIGKILL: nothing more from it */
    mroce_tstamp heard = qa->heard;
    run_to(&w, heard + pt / 4 - 1, qa);
    CHECK_EQ(w.e[0].keepalives, 0u);
    run_to(&w, heard + pt / 4, qa);
    CHECK_EQ(w.e[0].keepalives, 1u);
    run_to(&w, heard + pt - 1, qa);
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
    /* One at pt/4, then one every pt/16 until pt: 12 in all. */
    CHECK_EQ(w.e[0].keepalives, 12u);
    run_to(&w, heard + 10 * pt, qa);
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_ERROR);
    CHECK_MSG(w.now == heard + pt, "failed %lld ns after peer_timeout",
              (long long)(w.now - (heard + pt)));
    struct mroce_wc wc[2];
    if (CHECK(mre_cq_poll(w.e[0].cq, 2, wc) == 2)) {
        CHECK_EQ(wc[0].wr_id, 10u);
        CHECK_EQ(wc[0].status, MROCE_WC_RETRY_EXC_ERR);
        CHECK_EQ(wc[1].wr_id, 11u);
        CHECK_EQ(wc[1].status, MROCE_WC_WR_FLUSH_ERR);
    }
    printf("passive side: peer gone, QP failed %.0f ms after its last "
           "packet (peer_timeout), %llu keepalives\n",
           (double)(w.now - heard) / MS, (unsigned long long)w.e[0].keepalives);
out:
    if (mr)
        mre_mr_dereg(mr);
    world_del(&w);
}

/* Host 0 SENDs to host 1, which posts its receive `late` after the SEND. */
static void test_rnr(uint8_t rnr_retry, mroce_tstamp late)
{
    struct world w;
    struct mre_qp_attr a = attr(5 * SEC);
    a.rnr_retry = rnr_retry;
    static uint8_t sbuf[64], rbuf[64];
    mre_mr *ms = NULL, *mr = NULL;
    if (world_new(&w, &a) < 0)
        goto out;
    mre_qp *qa = w.e[0].qp;
    CHECK(mre_mr_reg(w.e[0].ep, sbuf, sizeof(sbuf), MROCE_ACCESS_LOCAL_WRITE,
                     &ms) == 0);
    CHECK(mre_mr_reg(w.e[1].ep, rbuf, sizeof(rbuf), MROCE_ACCESS_LOCAL_WRITE,
                     &mr) == 0);
    memset(sbuf, 0x5a, sizeof(sbuf));
    struct mroce_sge ss = {(uintptr_t)sbuf, sizeof(sbuf), mre_mr_lkey(ms)};
    struct mroce_send_wr wr = {.wr_id = 5,
                               .sg_list = &ss,
                               .num_sge = 1,
                               .opcode = MROCE_WR_SEND,
                               .send_flags = MROCE_SEND_SIGNALED};
    CHECK(mre_qp_post_send(qa, &wr, NULL, w.now) == 0);
    run_to(&w, w.now + late, qa);
    struct mroce_qp_counters c;
    mre_qp_get_counters(qa, &c);
    struct mroce_wc wc;
    if (rnr_retry == MROCE_RNR_RETRY_FOREVER) {
        CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
        CHECK_MSG(c.rnr_naks_rx > 1000, "%llu RNR NAKs",
                  (unsigned long long)c.rnr_naks_rx);
        struct mroce_sge rs = {(uintptr_t)rbuf, sizeof(rbuf), mre_mr_lkey(mr)};
        struct mroce_recv_wr rw = {.wr_id = 6, .sg_list = &rs, .num_sge = 1};
        CHECK(mre_qp_post_recv(w.e[1].qp, &rw, NULL) == 0);
        run_to(&w, w.now + 100 * MS, NULL);
        if (CHECK(mre_cq_poll(w.e[0].cq, 1, &wc) == 1))
            CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        if (CHECK(mre_cq_poll(w.e[1].cq, 1, &wc) == 1))
            CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        CHECK(memcmp(sbuf, rbuf, sizeof(rbuf)) == 0);
        printf("rnr_retry 7: %llu RNR rounds in %.1f s, then delivered\n",
               (unsigned long long)c.rnr_naks_rx, (double)late / SEC);
    } else {
        CHECK_EQ(mre_qp_state(qa), MROCE_QPS_ERROR);
        CHECK_EQ(c.rnr_naks_rx, (uint64_t)rnr_retry + 1);
        if (CHECK(mre_cq_poll(w.e[0].cq, 1, &wc) == 1))
            CHECK_EQ(wc.status, MROCE_WC_RNR_RETRY_EXC_ERR);
    }
out:
    if (ms)
        mre_mr_dereg(ms);
    if (mr)
        mre_mr_dereg(mr);
    world_del(&w);
}

static void test_no_time_rule(void)
{
    struct world w;
    struct mre_qp_attr a = attr(0);
    static uint8_t sbuf[64];
    mre_mr *ms = NULL;
    if (world_new(&w, &a) < 0)
        goto out;
    mre_qp *qa = w.e[0].qp;
    uint64_t p0 = w.e[0].pkts + w.e[1].pkts;
    run_to(&w, w.now + 3600 * SEC, NULL);
    CHECK_EQ(w.e[0].pkts + w.e[1].pkts, p0); /* an idle hour: silence */
    CHECK_EQ(mre_ep_expiry(w.e[0].ep), MROCE_TSTAMP_INF);
    CHECK(mre_mr_reg(w.e[0].ep, sbuf, sizeof(sbuf), MROCE_ACCESS_LOCAL_WRITE,
                     &ms) == 0);
    struct mroce_sge ss = {(uintptr_t)sbuf, sizeof(sbuf), mre_mr_lkey(ms)};
    struct mroce_send_wr wr = {.wr_id = 5,
                               .sg_list = &ss,
                               .num_sge = 1,
                               .opcode = MROCE_WR_SEND,
                               .send_flags = MROCE_SEND_SIGNALED};
    w.e[1].stopped = 1;
    CHECK(mre_qp_post_send(qa, &wr, NULL, w.now) == 0);
    run_to(&w, w.now + 10 * SEC, qa);
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_ERROR);
    CHECK_EQ(counter_timeouts(qa), (uint64_t)a.retry_cnt + 1);
    struct mroce_wc wc;
    if (CHECK(mre_cq_poll(w.e[0].cq, 1, &wc) == 1))
        CHECK_EQ(wc.status, MROCE_WC_RETRY_EXC_ERR);
out:
    if (ms)
        mre_mr_dereg(ms);
    world_del(&w);
}

static void test_ask_first(void)
{
    struct world w;
    struct mre_qp_attr a = attr(10 * SEC);
    if (world_new(&w, &a) < 0)
        goto out;
    mre_qp *qa = w.e[0].qp, *qb = w.e[1].qp;
    struct mre_qp_attr m = *mre_qp_get_attr(qa);
    m.peer_timeout = 1 * SEC;
    CHECK(mre_qp_modify(qa, &m, MROCE_QP_MOD_TIMEOUT) == 0);
    run_to(&w, w.now + 100 * MS, NULL);
    w.e[0].stopped = 1; /* host 0 stops for 3 s; host 1 waits */
    run_to(&w, w.now + 3 * SEC, NULL);
    w.e[0].stopped = 0;
    uint64_t k0 = w.e[0].keepalives;
    run_to(&w, w.now + 200 * MS, NULL);
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
    CHECK_EQ(mre_qp_state(qb), MROCE_QPS_RTS);
    CHECK(w.e[0].keepalives > k0);
    world_del(&w);

    a = attr(0);
    if (world_new(&w, &a) < 0)
        goto out;
    qa = w.e[0].qp;
    run_to(&w, w.now + 3600 * SEC, NULL);
    m = *mre_qp_get_attr(qa);
    m.peer_timeout = 1 * SEC;
    CHECK(mre_qp_modify(qa, &m, MROCE_QP_MOD_TIMEOUT) == 0);
    CHECK(mre_ep_expiry(w.e[0].ep) <= w.now);
    run_to(&w, w.now + 10 * MS, NULL);
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
    CHECK_EQ(w.e[0].keepalives, 1u);
    CHECK_EQ(qa->heard, w.now - 10 * MS); /* answered at once */
    /* Peer gone: asked once more at the next quarter, then failed. */
    w.e[1].stopped = 1;
    mroce_tstamp heard = qa->heard;
    run_to(&w, heard + 10 * SEC, qa);
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_ERROR);
    CHECK_EQ(w.now, heard + 1 * SEC);
out:
    world_del(&w);
}

static void case_stall(void)
{
    test_stall(1900 * MS);
    test_stall(0);
}

static void case_rnr(void)
{
    test_rnr(MROCE_RNR_RETRY_FOREVER, 2 * SEC);
    test_rnr(6, 100 * MS);
}

static const struct test_case cases[] = {
    {"stall", case_stall},
    {"idle", test_idle},
    {"passive", test_passive},
    {"rnr", case_rnr},
    {"no_time_rule", test_no_time_rule},
    {"ask_first", test_ask_first},
};

int main(int argc, char **argv)
{
    return TEST_CASES_MAIN("test_engine_liveness", cases, argc, argv);
}
