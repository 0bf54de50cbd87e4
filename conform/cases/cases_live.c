/*
 * cases_live.c - peer liveness (REL-32..REL-37, LOSS-21, WIRE-28): the
 * keepalive an idle QP sends and the answer it gets, a passive QP that
 * fails when its peer stops answering, a sender that rides out a silence
 * shorter than peer_timeout however many timeouts fire, and rnr_retry 7
 * retrying forever.  The tester plays the peer and decides when it is
 * "stopped" (it reads the IUT's packets but answers nothing).  Timings
 * are checked with wide margins: a case asserts the order of events
 * (nothing before a quarter of peer_timeout, a failure only after it), not
 * their precision.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

#define RL_WAIT 2000

/* 1 if rx is a keepalive for c (an ACK with ACK_REQ, WIRE-28). */
static int is_keepalive(const struct ct_rx *rx)
{
    return rx->p.base.opcode == MROCE_OP_ACK &&
           (rx->p.base.flags & MROCE_F_ACK_REQ);
}

/* Our answer to a keepalive: an ACK of our receive state, DUP echo. */
static void answer(struct ct_conn *c)
{
    ct_rl_send_ack(c, c->rcv_cum, NULL, 0, NULL, MROCE_ECHO_DUP);
}

CT_CASE(live_keepalive_idle, "REL-34 REL-32 WIRE-28 CONN-23",
        "QP with peer_timeout_ms=2000, idle: nothing for the first 250 ms, "
        "then a keepalive (ACK with ACK_REQ and the DUP echo, Cum PSN = our "
        "next PSN) within 2000 ms; each answered, the QP stays in RTS for 2 "
        "x peer_timeout and keeps sending them")
{
    struct ct_conn *c = ct_accept(t, "peer_timeout_ms=2000");
    const struct ct_rx *rx;
    uint64_t t0 = ct_now_ns(), end;
    int kas = 0;

    if (!c)
        return;
    c->auto_ack = 0;
    rx = ct_rl_next(c, 2000);
    if (!rx)
        ct_fail(t, "no keepalive within 2000 ms of an idle connection");
    CT_REQUIRE(t, is_keepalive(rx), "expected a keepalive, got %s",
               ct_describe(t, rx));
    CT_REQUIRE(t, ct_now_ns() - t0 >= 250000000ull,
               "keepalive %llu ms after RTS, before peer_timeout / 4 = 500 ms",
               (unsigned long long)((ct_now_ns() - t0) / 1000000));
    CT_REQUIRE(t, rx->p.u.ack.echo_flags & MROCE_ECHO_DUP,
               "keepalive without the DUP echo (REL-34): %s",
               ct_describe(t, rx));
    CT_EQ(t, "keepalive Cum PSN (our next PSN)", c->snd_nxt,
          rx->p.u.ack.cum_psn);
    answer(c);
    kas = 1;
    end = ct_now_ns() + 2 * 2000000000ull;
    while (ct_now_ns() < end) {
        rx = ct_rl_next(c, 50);
        if (!rx)
            continue;
        CT_REQUIRE(t, is_keepalive(rx), "idle QP sent %s",
                   ct_describe(t, rx));
        answer(c);
        kas++;
    }
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    /* One per quarter of peer_timeout after each answer: ~8 in 4 s. */
    CT_REQUIRE(t, kas >= 3, "only %d keepalives in 4 s (peer_timeout "
               "2000 ms)", kas);
}

CT_CASE(live_keepalive_answered, "REL-35 WIRE-28",
        "a keepalive from the tester (ACK with ACK_REQ, DUP echo) is "
        "answered at once by an ACK without ACK_REQ, with the DUP echo and "
        "the IUT's receive state")
{
    struct ct_conn *c = ct_accept(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;

    if (!c)
        return;
    c->auto_ack = 0;
    ct_pkt_ctl(c, &p, MROCE_OP_ACK);
    p.base.flags = MROCE_F_ACK_REQ;
    p.u.ack.cum_psn = c->rcv_cum;
    p.u.ack.echo_psn = c->rcv_cum;
    p.u.ack.echo_flags = MROCE_ECHO_DUP;
    p.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    ct_send(c, &p);
    rx = ct_rl_next(c, CT_WAIT);
    if (!rx)
        ct_fail(t, "keepalive not answered within %d ms", CT_WAIT);
    CT_REQUIRE(t, rx->p.base.opcode == MROCE_OP_ACK,
               "expected an ACK, got %s", ct_describe(t, rx));
    CT_REQUIRE(t, !(rx->p.base.flags & MROCE_F_ACK_REQ),
               "the answer carries ACK_REQ: %s", ct_describe(t, rx));
    CT_REQUIRE(t, rx->p.u.ack.echo_flags & MROCE_ECHO_DUP,
               "the answer lacks the DUP echo: %s", ct_describe(t, rx));
    CT_EQ(t, "answer's Cum PSN (our next PSN)", c->snd_nxt,
          rx->p.u.ack.cum_psn);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
}

CT_CASE(live_passive_peer_timeout, "REL-36 REL-33 REL-34 CONN-20 SEM-23",
        "QP with peer_timeout_ms=1000 and two receives posted, the tester "
        "silent from RTS on: keepalives go unanswered; still RTS at 300 ms; "
        "then receive 1 RETRY_EXC_ERR, receive 2 WR_FLUSH_ERR, QP ERROR, "
        "and silence")
{
    struct ct_conn *c = ct_accept(t, "peer_timeout_ms=1000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    uint64_t t0 = ct_now_ns();
    const struct ct_rx *rx;
    int kas = 0;

    if (!c)
        return;
    c->auto_ack = 0;
    ct_post_recv(t, c->aqp, 1, &mr, 0, 64);
    ct_post_recv(t, c->aqp, 2, &mr, 64, 64);
    while (ct_now_ns() - t0 < 300000000ull)
        if ((rx = ct_rl_next(c, 20)) != NULL && is_keepalive(rx))
            kas++;
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    ct_expect_wc(t, c->aqp, "recv", 1, "RETRY_EXC_ERR", RL_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 2, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", 0);
    CT_REQUIRE(t, ct_now_ns() - t0 >= 600000000ull,
               "failed %llu ms after RTS, well before peer_timeout 1000 ms",
               (unsigned long long)((ct_now_ns() - t0) / 1000000));
    while ((rx = ct_rl_next(c, 5)) != NULL) {
        CT_REQUIRE(t, is_keepalive(rx), "expected only keepalives, got %s",
                   ct_describe(t, rx));
        kas++;
    }
    CT_REQUIRE(t, kas >= 2, "%d keepalives before failing (REL-34: one at "
               "250 ms, then every 62.5 ms)", kas);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(live_silence_survives_rtos, "LOSS-21 LOSS-14 REL-32 LOSS-13",
        "retry=1, min_rto 1 ms, peer_timeout_ms=3000: the tester answers "
        "nothing for 700 ms while the IUT's WRITE times out again and again "
        "(more than retry_cnt + 1 timeout retransmissions); the QP stays in "
        "RTS, and once ACKed the WRITE completes SUCCESS")
{
    struct ct_conn *c = ct_accept(t, "retry=1 min_rto_us=1000 "
                                     "peer_timeout_ms=3000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    const struct ct_rx *rx;
    struct ct_rl_pkt last;
    uint64_t t0;
    int retx = 0, have = 0;

    if (!c)
        return;
    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=32 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    t0 = ct_now_ns();
    while (ct_now_ns() - t0 < 700000000ull) {
        rx = ct_rl_next(c, 20);
        if (!rx || !mrw_opcode_has_psn(rx->p.base.opcode))
            continue;
        if (have && !(rx->p.base.flags & MROCE_F_PROBE))
            retx++;
        ct_rl_save(rx, &last);
        have = 1;
    }
    CT_REQUIRE(t, have, "the IUT sent no WRITE");
    CT_REQUIRE(t, retx > 2, "only %d timeout retransmissions in 700 ms "
               "(min_rto 1 ms, max_rto 100 ms)", retx);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    ct_expect_no_wc(t, c->aqp, "send", 0);
    ct_rl_send_ack(c, last.p.base.psn + 1, NULL, 0, &last.p, 0);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
}

CT_CASE(live_rnr_retry_forever, "REL-37 REL-30",
        "rnr_retry=7: the IUT's SEND NAKed RNR 12 times (more than 7 "
        "rounds) is resent after each, never fails; ACKed, it completes "
        "SUCCESS")
{
    struct ct_conn *c = ct_accept(t, "rnr_retry=7 min_rto_us=100000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x5c);
    struct ct_rl_pkt a;
    int64_t rr;

    if (!c)
        return;
    rr = ct_rl_counter(t, c->aqp, "rnr_naks_rx");
    c->auto_ack = 0;
    ct_agent(t, "POST_SEND qp=%d wrid=9 op=SEND mr=%d off=0 len=100", c->aqp,
             mr.id);
    for (int i = 0; i < 12; i++) {
        ct_rl_expect_data(c, 1, RL_WAIT, &a);
        ct_rl_send_nak(c, a.p.base.psn, a.p.u.rq.req.msn, MROCE_NAK_RNR, 1,
                       a.p.base.psn);
    }
    ct_rl_expect_data(c, 1, RL_WAIT, &a);
    ct_expect_no_wc(t, c->aqp, "send", 0);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    ct_rl_send_ack(c, a.p.base.psn + 1, NULL, 0, &a.p, 0);
    ct_expect_wc(t, c->aqp, "send", 9, "SUCCESS", RL_WAIT);
    ct_rl_expect_counter(t, c->aqp, "rnr_naks_rx", rr, 12);
}
