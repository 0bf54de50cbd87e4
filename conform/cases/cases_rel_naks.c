/*
 * cases_rel_naks.c - reliability.md sections 5 and 6: NAKs in both
 * directions (each NAK code's completion status and QP state, RNR retry
 * and its exhaustion, a responder that holds a fatal NAK: REL-27..REL-31,
 * REL-40) and peer liveness (keepalives, their answer, a passive QP's
 * failure, rnr_retry 7 retrying forever: REL-34..REL-37).  The tester plays
 * the peer and decides when it is "stopped"; liveness timings are checked
 * with wide margins, as the order of events, not their precision.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

CT_CASE(edge_held_fatal_nak_answers_later_refusals,
        "REL-40 REL-27 SEM-18 REL-22",
        "after a bad-RKey WRITE at PSN p is NAKed: a SEND with no receive "
        "(p+1) and an out-of-bounds WRITE (p+2) are each answered with "
        "p's NAK on the answered packet's entropy (not RNR, not BOUNDS, "
        "not silence); a valid WRITE (p+3) is placed and SACKed with Cum "
        "PSN p; p resent on another entropy gets its NAK again there")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt bad, p;
    const struct ct_rx *rx;
    uint8_t d[32];
    uint32_t psn0, msn0;
    int64_t rnr0;

    ct_pattern(d, sizeof(d), 70);
    rnr0 = ct_rl_counter(t, c->aqp, "rnr_naks_tx");
    ch_req_pkt(c, &bad, MROCE_OP_WRITE, mr.addr, mr.rkey ^ 0x00ff0000, d,
               sizeof(d));
    ct_send(c, &bad);
    ct_consume(c, &bad);
    psn0 = bad.base.psn;
    msn0 = bad.u.rq.req.msn;
    ct_expect_nak(c, psn0, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);

    ch_req_pkt(c, &p, MROCE_OP_SEND, 0, 0, d, sizeof(d));
    p.base.entropy = ct_entropy(t, 1 % ct_num_entropies(t));
    ct_send(c, &p);
    ct_consume(c, &p);
    rx = ct_expect_nak(c, psn0, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    CT_EQ(t, "held NAK's MSN (answering the SEND)", msn0, rx->p.u.nak.msn);
    CT_EQ(t, "held NAK's Cum PSN", psn0, rx->p.u.nak.cum_psn);
    CT_EQ(t, "held NAK's Entropy (the SEND's)", p.base.entropy,
          rx->p.base.entropy);

    ch_req_pkt(c, &p, MROCE_OP_WRITE, mr.addr + 4096 - 8, mr.rkey, d,
               sizeof(d));
    ct_send(c, &p);
    ct_consume(c, &p);
    ct_expect_nak(c, psn0, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);

    ch_req_pkt(c, &p, MROCE_OP_WRITE, mr.addr + 64, mr.rkey, d, sizeof(d));
    ct_send(c, &p);
    ct_consume(c, &p);
    for (;;) {
        rx = ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
        if (ct_ack_covers(&rx->p, p.base.psn))
            break;
    }
    CT_EQ(t, "ACK Cum PSN (p is never marked)", psn0, rx->p.u.ack.cum_psn);
    ct_expect_mem(t, &mr, 64, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, 0, 64, 0);
    ct_expect_mem_fill(t, &mr, 4096 - 8, 8, 0);

    bad.base.flags |= MROCE_F_RETX;
    bad.base.entropy = ct_entropy(t, 2 % ct_num_entropies(t));
    ct_send(c, &bad);
    rx = ct_expect_nak(c, psn0, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    CT_EQ(t, "held NAK's Entropy (the retransmission's)", bad.base.entropy,
          rx->p.base.entropy);
    ct_rl_expect_counter(t, c->aqp, "rnr_naks_tx", rnr0, 0);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
}

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
        CT_REQUIRE(t, is_keepalive(rx), "idle QP sent %s", ct_describe(t, rx));
        answer(c);
        kas++;
    }
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    /* One per quarter of peer_timeout after each answer: ~8 in 4 s. */
    CT_REQUIRE(t, kas >= 3,
               "only %d keepalives in 4 s (peer_timeout "
               "2000 ms)",
               kas);
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
    CT_REQUIRE(t, rx->p.base.opcode == MROCE_OP_ACK, "expected an ACK, got %s",
               ct_describe(t, rx));
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
    CT_REQUIRE(t, kas >= 2,
               "%d keepalives before failing (REL-34: one at "
               "250 ms, then every 62.5 ms)",
               kas);
    ct_expect_silence(t, CT_QUIET);
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

CT_CASE(ops_iut_rnr_retry_exceeded, "REL-30 SEM-25 SEM-23 CONN-20",
        "IUT's SEND NAKed RNR (delay 50 = 500 us) on every transmission, "
        "rnr_retry=2: each retransmission at least 500 us after the NAK, "
        "the third round fails it RNR_RETRY_EXC_ERR, the WRITE behind it "
        "WR_FLUSH_ERR, QP in ERROR, no further SEND")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "rnr_retry=2 min_rto_us=100000");
    const struct ct_rx *rx;
    uint32_t spsn = 0;
    int rounds = 0;
    uint64_t naked = 0;

    c->auto_ack = 0;
    ct_agent(t, "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=64", c->aqp,
             mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    while (rounds < 3) {
        uint64_t now;
        rx = ct_expect_data(c, CT_WAIT);
        if (rx->p.base.opcode != MROCE_OP_SEND ||
            (rx->p.base.flags & MROCE_F_PROBE))
            continue;
        now = ct_now_ns();
        if (rounds == 0)
            spsn = rx->p.base.psn;
        CT_EQ(t, "SEND PSN (a retransmission keeps it)", spsn, rx->p.base.psn);
        if (rounds > 0)
            CT_REQUIRE(t, now - naked >= 450000,
                       "SEND retransmitted %llu us after an RNR NAK with "
                       "RNR Delay 50 (500 us)",
                       (unsigned long long)(now - naked) / 1000);
        naked = ct_now_ns();
        ct_send_nak(c, spsn, rx->p.u.rq.req.msn, MROCE_NAK_RNR, 50, spsn);
        rounds++;
    }
    ct_expect_wc(t, c->aqp, "send", 1, "RNR_RETRY_EXC_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", 0);
    while ((rx = ct_recv(t, 0)) != NULL)
        ;
    ct_expect_silence(t, 20);
}

CT_CASE(ops_iut_nak_cum_completes_earlier, "REL-28 SEM-23 SEM-25",
        "IUT's two WRITEs, no ACK; a NAK INVALID_REQUEST for the second "
        "whose Cum PSN covers the first: the first completes SUCCESS (the "
        "NAK's Cum PSN acknowledges it), the second REM_INV_REQ_ERR")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt q[2];
    uint32_t hi = 0;
    int any = 0;

    c->auto_ack = 0;
    for (int i = 1; i <= 2; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=64 "
                 "raddr=0x1000 rkey=0x99",
                 c->aqp, i, mr.id);
    for (int i = 0; i < 2; i++)
        q[i] = ch_next_new_data(c, &hi, &any)->p;
    ct_send_nak(c, q[1].base.psn, q[1].u.rq.req.msn, MROCE_NAK_INVALID_REQUEST,
                0, q[1].base.psn);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "REM_INV_REQ_ERR", CT_WAIT);
}

CT_CASE(ops_iut_rnr_retry_zero, "REL-30 SEM-25",
        "rnr_retry=0: the first RNR NAK for the IUT's SEND fails it at once "
        "with RNR_RETRY_EXC_ERR and the QP enters ERROR")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "rnr_retry=0 min_rto_us=100000");
    const struct ct_rx *rx;

    c->auto_ack = 0;
    ct_agent(t, "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=32", c->aqp,
             mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    ct_send_nak(c, rx->p.base.psn, rx->p.u.rq.req.msn, MROCE_NAK_RNR, 1,
                rx->p.base.psn);
    ct_expect_wc(t, c->aqp, "send", 1, "RNR_RETRY_EXC_ERR", CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", 0);
}

CT_CASE(ops_iut_rnr_holds_whole_message, "REL-30 REL-29 SEM-3",
        "IUT's 3-packet SEND; its first packet NAKed RNR (delay 100 = 1 "
        "ms): all three packets are resent (RETX, same PSNs), none before "
        "the delay; ACKed, the SEND completes SUCCESS")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "mtu=1024 min_rto_us=100000");
    struct mrw_pkt q[3];
    uint32_t hi = 0;
    int any = 0, seen = 0;
    uint64_t naked, end;

    c->auto_ack = 0;
    ct_agent(t, "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=3000", c->aqp,
             mr.id);
    for (int i = 0; i < 3; i++)
        q[i] = ch_next_new_data(c, &hi, &any)->p;
    naked = ct_now_ns();
    ct_send_nak(c, q[0].base.psn, q[0].u.rq.req.msn, MROCE_NAK_RNR, 100,
                q[0].base.psn);
    end = naked + (uint64_t)ct_ms(t, CT_WAIT) * 1000000u;
    while (seen != 7) {
        const struct ct_rx *rx = ct_next(c, 10);
        uint32_t k;
        if (!rx || !mrw_opcode_has_psn(rx->p.base.opcode)) {
            CT_REQUIRE(t, ct_now_ns() < end,
                       "after the RNR NAK only packets 0x%x of the SEND "
                       "were resent within %d ms (REL-30: every "
                       "unacknowledged packet of the message)",
                       seen, ct_ms(t, CT_WAIT));
            continue;
        }
        k = rx->p.base.psn - q[0].base.psn;
        CT_REQUIRE(t, k < 3, "unexpected PSN %u", rx->p.base.psn);
        CT_REQUIRE(t, rx->p.base.flags & MROCE_F_RETX,
                   "resent packet %u without RETX", k);
        CT_REQUIRE(t, ct_now_ns() - naked >= 900000,
                   "packet %u resent %.2f ms after an RNR NAK with RNR "
                   "Delay 100 (1 ms)",
                   k, (ct_now_ns() - naked) / 1e6);
        seen |= 1 << k;
    }
    ct_send_ack(c, NULL);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
}

CT_CASE(rel2_nak_cum_beyond_snd_nxt, "REL-28 REL-31 SEM-25",
        "1 WRITE WR; a NAK REMOTE_ACCESS_KEY for its PSN whose Cum PSN is 5 "
        "past snd_nxt: the Cum PSN acknowledges nothing (drop_invalid +1), "
        "the NAK still applies: REM_ACCESS_ERR, QP ERROR")
{
    struct ct_rl_pkt pk[1];
    struct ct_mr mr;
    struct ct_conn *c = ch_iut_sends(t, "", 1, pk, &mr);
    int64_t di = ct_rl_counter(t, c->aqp, "drop_invalid");

    ct_rl_send_nak(c, pk[0].p.base.psn, pk[0].p.u.rq.req.msn,
                   MROCE_NAK_REMOTE_ACCESS_KEY, 0, c->astart + 6);
    ct_expect_wc(t, c->aqp, "send", 1, "REM_ACCESS_ERR", RL_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", RL_WAIT);
    ct_rl_expect_counter(t, c->aqp, "drop_invalid", di, 1);
}

/* 3 WRITE WRs; a NAK with code for the 2nd with Cum PSN = its PSN (so the
 * 1st is acknowledged by it, REL-28): WR 1 SUCCESS, WR 2 `status`, WR 3
 * WR_FLUSH_ERR, QP in ERROR, nothing more sent. */
static void nak_maps(struct ct *t, uint8_t code, const char *status)
{
    struct ct_rl_pkt pk[3];
    struct ct_mr mr;
    struct ct_conn *c = ch_iut_sends(t, "", 3, pk, &mr);

    ct_rl_send_nak(c, pk[1].p.base.psn, pk[1].p.u.rq.req.msn, code, 0,
                   pk[1].p.base.psn);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, status, RL_WAIT);
    ct_expect_wc(t, c->aqp, "send", 3, "WR_FLUSH_ERR", RL_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", RL_WAIT);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(rel2_nak_invalid_request, "REL-31 REL-28 SEM-25 SEM-23 CONN-20",
        "NAK INVALID_REQUEST for the 2nd of 3 WRITEs (Cum PSN = it): "
        "SUCCESS, REM_INV_REQ_ERR, WR_FLUSH_ERR; QP ERROR")
{
    nak_maps(t, MROCE_NAK_INVALID_REQUEST, "REM_INV_REQ_ERR");
}

CT_CASE(rel2_nak_access_key, "REL-31 REL-28 SEM-25 SEM-23 CONN-20",
        "NAK REMOTE_ACCESS_KEY for the 2nd of 3 WRITEs: SUCCESS, "
        "REM_ACCESS_ERR, WR_FLUSH_ERR; QP ERROR")
{
    nak_maps(t, MROCE_NAK_REMOTE_ACCESS_KEY, "REM_ACCESS_ERR");
}

CT_CASE(rel2_nak_access_bounds, "REL-31 REL-28 SEM-25 SEM-23 CONN-20",
        "NAK REMOTE_ACCESS_BOUNDS for the 2nd of 3 WRITEs: SUCCESS, "
        "REM_ACCESS_ERR, WR_FLUSH_ERR; QP ERROR")
{
    nak_maps(t, MROCE_NAK_REMOTE_ACCESS_BOUNDS, "REM_ACCESS_ERR");
}

CT_CASE(rel2_nak_access_perm, "REL-31 REL-28 SEM-25 SEM-23 CONN-20",
        "NAK REMOTE_ACCESS_PERM for the 2nd of 3 WRITEs: SUCCESS, "
        "REM_ACCESS_ERR, WR_FLUSH_ERR; QP ERROR")
{
    nak_maps(t, MROCE_NAK_REMOTE_ACCESS_PERM, "REM_ACCESS_ERR");
}

CT_CASE(rel2_nak_remote_op_error, "REL-31 REL-28 SEM-25 SEM-23 CONN-20",
        "NAK REMOTE_OP_ERROR for the 2nd of 3 WRITEs: SUCCESS, REM_OP_ERR, "
        "WR_FLUSH_ERR; QP ERROR")
{
    nak_maps(t, MROCE_NAK_REMOTE_OP_ERROR, "REM_OP_ERR");
}

CT_CASE(rel2_nak_invalid_opcode, "REL-31 REL-28 SEM-25 SEM-23 CONN-20",
        "NAK INVALID_OPCODE for the 2nd of 3 WRITEs: SUCCESS, "
        "REM_INV_REQ_ERR, WR_FLUSH_ERR; QP ERROR")
{
    nak_maps(t, MROCE_NAK_INVALID_OPCODE, "REM_INV_REQ_ERR");
}

CT_CASE(rel2_nak_for_acked_psn_dropped, "REL-28",
        "WR 1 acknowledged and completed; a fatal NAK naming its PSN is "
        "stale: dropped (drop_stale +1), QP stays in RTS, WR 2 completes")
{
    struct ct_rl_pkt pk[2];
    struct ct_mr mr;
    struct ct_conn *c = ch_iut_sends(t, "", 2, pk, &mr);
    int64_t ds;

    ct_rl_send_ack(c, c->astart + 1, NULL, 0, &pk[0].p, 0);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    ds = ct_rl_counter(t, c->aqp, "drop_stale");
    ct_rl_send_nak(c, pk[0].p.base.psn, pk[0].p.u.rq.req.msn,
                   MROCE_NAK_REMOTE_ACCESS_KEY, 0, c->astart + 1);
    ct_expect_no_wc(t, c->aqp, "send", 30);
    ct_rl_expect_counter(t, c->aqp, "drop_stale", ds, 1);
    CT_REQUIRE(t, strcmp(ct_qp_state(t, c->aqp), "RTS") == 0,
               "QP state after a stale NAK: expected RTS, got %s",
               ct_qp_state(t, c->aqp));
    ct_rl_send_ack(c, c->astart + 2, NULL, 0, &pk[1].p, 0);
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", RL_WAIT);
}

CT_CASE(rel2_nak_cum_past_psn_ignored, "REL-28 REL-25",
        "1 WRITE WR; a fatal NAK for its PSN whose Cum PSN already "
        "acknowledges that PSN: the NAK is ignored, the WR completes SUCCESS, "
        "QP in RTS")
{
    struct ct_rl_pkt pk[1];
    struct ct_mr mr;
    struct ct_conn *c = ch_iut_sends(t, "", 1, pk, &mr);

    ct_rl_send_nak(c, pk[0].p.base.psn, pk[0].p.u.rq.req.msn,
                   MROCE_NAK_REMOTE_ACCESS_KEY, 0, c->astart + 1);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    CT_REQUIRE(t, strcmp(ct_qp_state(t, c->aqp), "RTS") == 0,
               "QP state: expected RTS, got %s", ct_qp_state(t, c->aqp));
}

CT_CASE(rel2_rnr_nak_then_resend, "REL-30 REL-29 LOSS-15",
        "a SEND refused with NAK RNR, RNR Delay 3: resent with RETX, same "
        "PSN, no earlier than 30 us after the first (TSval); ACKed: SUCCESS")
{
    struct ct_conn *c = ct_accept(t, "min_rto_us=20000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x62);
    struct ct_rl_pkt a, b;
    int64_t rr = ct_rl_counter(t, c->aqp, "rnr_naks_rx");

    c->auto_ack = 0;
    ct_agent(t, "POST_SEND qp=%d wrid=5 op=SEND mr=%d off=0 len=100", c->aqp,
             mr.id);
    ct_rl_expect_data(c, 0, RL_WAIT, &a);
    ct_rl_send_nak(c, a.p.base.psn, a.p.u.rq.req.msn, MROCE_NAK_RNR, 3,
                   a.p.base.psn);
    ct_rl_expect_data(c, 0, RL_WAIT, &b);
    CT_EQ(t, "resent PSN", a.p.base.psn, b.p.base.psn);
    CT_REQUIRE(t, b.p.base.flags & MROCE_F_RETX,
               "the resent SEND lacks RETX (flags 0x%x, LOSS-15)",
               b.p.base.flags);
    CT_REQUIRE(t, ct_rl_ts_diff(a.p.base.tsval, b.p.base.tsval) >= 30000,
               "resent %u ns after the first transmission, before the "
               "RNR Delay of 30 us (REL-30)",
               ct_rl_ts_diff(a.p.base.tsval, b.p.base.tsval));
    ct_rl_send_ack(c, a.p.base.psn + 1, NULL, 0, &b.p, 0);
    ct_expect_wc(t, c->aqp, "send", 5, "SUCCESS", RL_WAIT);
    ct_rl_expect_counter(t, c->aqp, "rnr_naks_rx", rr, 1);
}

CT_CASE(rel2_rnr_retry_exceeded, "REL-30 SEM-25 CONN-20",
        "rnr_retry=1: a SEND NAKed RNR twice (2 rounds = rnr_retry + 1): "
        "RNR_RETRY_EXC_ERR, QP ERROR, nothing more sent")
{
    struct ct_conn *c = ct_accept(t, "rnr_retry=1 min_rto_us=20000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x63);
    struct ct_rl_pkt a, b;

    c->auto_ack = 0;
    ct_agent(t, "POST_SEND qp=%d wrid=6 op=SEND mr=%d off=0 len=100", c->aqp,
             mr.id);
    ct_rl_expect_data(c, 0, RL_WAIT, &a);
    ct_rl_send_nak(c, a.p.base.psn, a.p.u.rq.req.msn, MROCE_NAK_RNR, 1,
                   a.p.base.psn);
    ct_rl_expect_data(c, 0, RL_WAIT, &b);
    CT_EQ(t, "resent PSN", a.p.base.psn, b.p.base.psn);
    ct_expect_no_wc(t, c->aqp, "send", 0);
    ct_rl_send_nak(c, b.p.base.psn, b.p.u.rq.req.msn, MROCE_NAK_RNR, 1,
                   b.p.base.psn);
    ct_expect_wc(t, c->aqp, "send", 6, "RNR_RETRY_EXC_ERR", RL_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", RL_WAIT);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(sem_fatal_nak_sticky, "REL-27 REL-12",
        "the same bad-RKey WRITE sent twice (second with RETX): the same NAK "
        "both times, nothing placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint8_t d[16];

    ct_pattern(d, sizeof(d), 3);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey ^ 0x00ff0000;
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    p.base.flags |= MROCE_F_RETX;
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_mem_fill(t, &mr, 0, 64, 0);
}
