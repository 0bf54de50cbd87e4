/*
 * cases_cc_ask.c - asking for the rate share before data (congestion.md
 * section 7, CC-30..35): the IUT as a sender with rate_hint=2 sends a
 * share request (an ACK with ACK_REQ and CREDIT) before its first data
 * and holds the data until the answer (CC-30), or gives up waiting after
 * about min_rto (CC-31), keeps its share fresh between packets paced at a
 * small hint (CC-34) and asks again after an idle spell (CC-35); the IUT
 * as a receiver counts a requester active and answers requests that
 * arrive together with the share of all of them (CC-32, CC-33).
 *
 * The tester advertises RATE on every connection here and answers share
 * requests only where a case says so.  The IUT's receive rate is its
 * default (libmroce: 100,000 Mbit/s) and its rate_active libmroce's 4 ms.
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

#define RX_MBPS 100000u /* the IUT's default receive rate */

static int is_request(const struct ct_rx *rx)
{
    return rx->p.base.opcode == MROCE_OP_ACK &&
           (rx->p.base.flags & MROCE_F_ACK_REQ) &&
           (rx->p.base.flags & MROCE_F_CREDIT);
}

/* An ACK of nothing new (DUP, no RTT sample) with Credit `hint`, flags
 * added: the tester's answer to a share request, or (ACK_REQ | CREDIT)
 * its own share request. */
static void send_dup_ack(struct ct_conn *c, uint32_t hint, uint16_t flags)
{
    struct mrw_pkt p;

    ct_pkt_ctl(c, &p, MROCE_OP_ACK);
    p.base.flags |= flags;
    p.u.ack.cum_psn = c->rcv_cum;
    p.u.ack.echo_psn = c->rcv_cum;
    p.u.ack.echo_flags = MROCE_ECHO_DUP;
    p.u.ack.ce_count = c->ce_count;
    p.u.ack.rx_count = c->rx_count;
    p.u.ack.credit = hint;
    ct_send(c, &p);
}

/* The IUT as a sender with rate_hint=2 to c (RATE, MTU 1024), the
 * tester not acknowledging on its own. */
static struct ct_conn *ask_sender(struct ct *t, const char *opts)
{
    struct ct_conn *c = ct_conn_new(t, opts);

    c->par.flags = MROCE_CONN_RATE;
    c->par.mtu = 1024;
    ct_conn_accept(c);
    c->auto_ack = 0;
    return c;
}

static void post_writes(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                        int n, int wrid0)
{
    for (int i = 0; i < n; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=1024 "
                 "raddr=0x100 rkey=1",
                 c->aqp, wrid0 + i, mr->id);
}

/* Waits up to ms for c's share request; fails on data before it. */
static void expect_request(struct ct *t, struct ct_conn *c, int ms,
                           const char *what)
{
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, ms) * 1000000u;

    while (ct_now_ns() < end) {
        const struct ct_rx *rx = ct_next(c, 2);
        if (!rx)
            continue;
        CT_REQUIRE(t, !mrw_opcode_has_psn(rx->p.base.opcode),
                   "%s: a data packet (%s) before any share request "
                   "(CC-30: an ACK with ACK_REQ and CREDIT first)",
                   what, ct_describe(t, rx));
        if (is_request(rx))
            return;
    }
    ct_fail(t, "%s: no share request within %d ms", what, ms);
}

/* Receives c's packets for ms; returns the data packets among them and
 * counts share requests in *reqs; ACKs each data packet with `hint` if
 * ack. */
static unsigned count_data(struct ct_conn *c, int ms, unsigned *reqs, int ack,
                           uint32_t hint)
{
    uint64_t end = ct_now_ns() + (uint64_t)ms * 1000000u;
    unsigned n = 0;

    while (ct_now_ns() < end) {
        const struct ct_rx *rx = ct_next(c, 2);
        struct mrw_pkt p;
        if (!rx)
            continue;
        if (is_request(rx)) {
            (*reqs)++;
            continue;
        }
        if (!mrw_opcode_has_psn(rx->p.base.opcode))
            continue;
        n++;
        p = rx->p;
        p.payload = NULL;
        if (ack)
            ct_send_ack_credit(c, &p, hint);
    }
    return n;
}

CT_CASE(cc_ask_first, "CC-30 CC-24 WIRE-6",
        "IUT requester with rate_hint=2 and one WRITE of 8192 bytes (MTU "
        "1024) to a RATE peer: a share request (ACK with ACK_REQ and "
        "CREDIT) before any data packet; no data for 50 ms without an "
        "answer (min_rto 200 ms); after an answer of 1000 Mbit/s, data")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw", 0);
    struct ct_conn *c = ask_sender(t, "mtu=1024 min_rto_us=200000 "
                                      "rate_hint=2");
    unsigned reqs = 0, n;

    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=8192 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    expect_request(t, c, CT_WAIT, "first packets after POST_SEND");
    n = count_data(c, 50, &reqs, 0, 0);
    CT_REQUIRE(t, n == 0,
               "%u data packets before the share request was answered "
               "(CC-30 holds the data until the answer)",
               n);
    send_dup_ack(c, 1000, 0);
    CT_REQUIRE(t, ct_expect_data(c, CT_WAIT) != NULL,
               "no data after the answer");
}

CT_CASE(cc_ask_gives_up, "CC-31 CC-30",
        "IUT requester with rate_hint=2, min_rto 20 ms and two WRITEs to a "
        "RATE peer that never answers its share request: data within "
        "500 ms, and no second share request before it")
{
    struct ct_mr mr = ct_mr_reg(t, 1024, "lw", 0);
    struct ct_conn *c = ask_sender(t, "mtu=1024 min_rto_us=20000 "
                                      "rate_hint=2");
    uint64_t end;
    unsigned reqs = 0;

    post_writes(t, c, &mr, 2, 1);
    expect_request(t, c, CT_WAIT, "first packets after POST_SEND");
    end = ct_now_ns() + (uint64_t)ct_ms(t, CT_WAIT) * 1000000u;
    for (;;) {
        const struct ct_rx *rx = ct_next(c, 2);
        if (rx && mrw_opcode_has_psn(rx->p.base.opcode))
            break;
        if (rx && is_request(rx))
            reqs++;
        CT_REQUIRE(t, ct_now_ns() < end,
                   "no data packet within %d ms of an unanswered share "
                   "request (CC-31: after 2 x srtt + gather, or min_rto + "
                   "gather before an RTT sample)",
                   CT_WAIT);
    }
    CT_REQUIRE(t, reqs == 0,
               "%u more share requests before the data (CC-31: none "
               "before the data has been sent)",
               reqs);
}

CT_CASE(cc_ask_answered_together, "CC-32 CC-33 CC-26",
        "two RATE peers each send the IUT a share request before any data, "
        "the second once the IUT has counted the first (rx_acks) and "
        "within 300 us of it: each is answered by an ACK (no ACK_REQ) "
        "whose Credit is at most half of the IUT's receive rate (both are "
        "active senders, and the first answer waits for the second "
        "request)")
{
    /* The second request must reach the IUT in a later receive round
     * than the first (else an IUT that answers at once sees both active
     * too) and within its gather (libmroce: rate_active / 8 = 500 us).
     * The tester waits until the IUT's rx_acks shows the first processed;
     * an attempt where that took over 300 us (a descheduled IUT) says
     * nothing either way and is repeated. */
    for (int attempt = 0; attempt < 4; attempt++) {
        struct ct_conn *c[2];
        uint32_t h[2];

        for (int i = 0; i < 2; i++) {
            c[i] = ct_conn_new(t, "mtu=1024");
            c[i]->par.flags = MROCE_CONN_RATE;
            c[i]->par.mtu = 1024;
            ct_conn_connect(c[i]);
        }
        /* Quiet for longer than rate_active (4 ms): no sender of an
         * earlier case or attempt is still counted. */
        ct_expect_no_op(c[0], MROCE_OP_WRITE, 20);
        int64_t before = ct_counter(t, c[0]->aqp, "rx_acks");
        uint64_t t0 = ct_now_ns(), el;
        send_dup_ack(c[0], MROCE_CREDIT_UNLIMITED,
                     MROCE_F_ACK_REQ | MROCE_F_CREDIT);
        while (ct_counter(t, c[0]->aqp, "rx_acks") == before &&
               ct_now_ns() - t0 < 300000u)
            ;
        el = ct_now_ns() - t0;
        if (el >= 300000u) {
            ct_log(t,
                   "attempt %d: the IUT counted the first request only "
                   "after %llu us",
                   attempt, (unsigned long long)(el / 1000u));
            (void)ct_expect_op(c[0], MROCE_OP_ACK, 0, CT_WAIT);
            continue;
        }
        send_dup_ack(c[1], MROCE_CREDIT_UNLIMITED,
                     MROCE_F_ACK_REQ | MROCE_F_CREDIT);
        for (int i = 0; i < 2; i++) {
            const struct ct_rx *rx = ct_expect_op(c[i], MROCE_OP_ACK, 0,
                                                  CT_WAIT);
            CT_REQUIRE(t, !(rx->p.base.flags & MROCE_F_ACK_REQ),
                       "the answer to a share request asks for an ACK "
                       "itself");
            h[i] = rx->p.u.ack.credit;
        }
        for (int i = 0; i < 2; i++)
            CT_REQUIRE(t, h[i] >= 1 && h[i] <= RX_MBPS / 2,
                       "answer %d carries %u Mbit/s: with two requesters "
                       "active (CC-32) and answered together (CC-33), at "
                       "most %u",
                       i, h[i], RX_MBPS / 2);
        return;
    }
    ct_skip(t, "in 4 attempts the IUT never counted a share request "
               "within 300 us");
}

CT_CASE(cc_ask_fresh_while_paced, "CC-34 CC-30",
        "IUT requester with rate_hint=2 and 8 WRITEs of 1024 bytes; its "
        "share request answered with 1 Mbit/s and every packet "
        "acknowledged at once with that hint (a packet every 8.8 ms, "
        "longer than rate_active): no second share request in 60 ms")
{
    struct ct_mr mr = ct_mr_reg(t, 1024, "lw", 0);
    struct ct_conn *c = ask_sender(t, "mtu=1024 min_rto_us=200000 "
                                      "rate_hint=2");
    unsigned reqs = 0, n;

    post_writes(t, c, &mr, 8, 1);
    expect_request(t, c, CT_WAIT, "first packets after POST_SEND");
    send_dup_ack(c, 1, 0);
    n = count_data(c, 60, &reqs, 1, 1);
    CT_REQUIRE(t, reqs == 0,
               "%u share requests between data packets paced at 1 Mbit/s "
               "(CC-34: the share stays fresh for 4 packets at the hint)",
               reqs);
    CT_REQUIRE(t, n >= 2, "only %u data packets in 60 ms", n);
}

CT_CASE(cc_ask_again_after_idle, "CC-35 CC-30",
        "IUT requester with rate_hint=2: one WRITE after an answered share "
        "request, acknowledged; 30 ms idle (rate_active 4 ms); a second "
        "WRITE is again preceded by a share request")
{
    struct ct_mr mr = ct_mr_reg(t, 1024, "lw", 0);
    struct ct_conn *c = ask_sender(t, "mtu=1024 min_rto_us=200000 "
                                      "rate_hint=2");
    const struct ct_rx *rx;
    struct mrw_pkt p;
    unsigned reqs = 0;

    post_writes(t, c, &mr, 1, 1);
    expect_request(t, c, CT_WAIT, "first packets after POST_SEND");
    send_dup_ack(c, 50000, 0);
    rx = ct_expect_data(c, CT_WAIT);
    p = rx->p;
    p.payload = NULL;
    ct_send_ack_credit(c, &p, 50000);
    (void)count_data(c, 30, &reqs, 1, 50000);
    post_writes(t, c, &mr, 1, 2);
    expect_request(t, c, CT_WAIT, "the WRITE after 30 ms idle");
}
