/*
 * cases_cc_ask.c - asking for the rate share before data (congestion.md
 * section 7, CC-30..38): the IUT as a sender with rate_hint=3 sends a
 * share request (an ACK with ACK_REQ and CREDIT) before its first data
 * and holds the data until the answer (CC-30), with rate_hint 2 (the
 * default) sends at most its first packet behind the request (CC-36),
 * gives up waiting after about min_rto (CC-31), starts its pacing clock
 * at a random point (CC-30), keeps its share fresh between packets paced
 * at a small hint (CC-34) and asks again after an idle spell (CC-35); the
 * IUT as a receiver counts a requester active, answers a lone sender at
 * once (CC-37) and requests that arrive together with the share of all of
 * them (CC-32, CC-33).
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

/* Waits up to ms for c's share request; returns the data packets that
 * arrived before it.  Fails on more than `data_ok` of them: none for
 * rate_hint 3 (CC-30); one for rate_hint 2, whose first packet, sent
 * right behind the request, may overtake it on another path (CC-36). */
static unsigned expect_request(struct ct *t, struct ct_conn *c, int ms,
                               unsigned data_ok, const char *what)
{
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, ms) * 1000000u;
    unsigned data = 0;

    while (ct_now_ns() < end) {
        const struct ct_rx *rx = ct_next(c, 2);
        if (!rx)
            continue;
        if (mrw_opcode_has_psn(rx->p.base.opcode))
            CT_REQUIRE(t, ++data <= data_ok,
                       "%s: %u data packets (the last %s) before any share "
                       "request (CC-30: an ACK with ACK_REQ and CREDIT "
                       "first; CC-36: with rate_hint 2 at most its first "
                       "packet as well)",
                       what, data, ct_describe(t, rx));
        if (is_request(rx))
            return data;
    }
    ct_fail(t, "%s: no share request within %d ms", what, ms);
}

/* Posts n WRITEs of len bytes from mr on c's QP, wrids from wrid0. */
static void post_writes(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                        int n, int wrid0, uint32_t len)
{
    for (int i = 0; i < n; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=%u "
                 "raddr=0x100 rkey=1",
                 c->aqp, wrid0 + i, mr->id, len);
}

/* One IUT sender that asks: the connection, the region it writes and
 * the data packets that arrived before its share request. */
struct ask_run {
    struct ct_conn *c;
    struct ct_mr mr;
    unsigned early;
};

/* The IUT as a sender with QP attributes `opts` (its rate_hint among
 * them, or the default, 2) to a RATE peer of MTU 1024, the tester not
 * acknowledging on its own, with n WRITEs of len bytes posted and its
 * share request (CC-30) received: the set-up every sender case here
 * shares. */
static struct ask_run ask_start(struct ct *t, const char *opts, int n,
                                uint32_t len)
{
    unsigned data_ok = strstr(opts, "rate_hint=3") ? 0 : 1;
    struct ask_run r;

    r.mr = ct_mr_reg(t, len, "lw", 0);
    r.c = ct_conn_new(t, opts);
    r.c->par.flags = MROCE_CONN_RATE;
    r.c->par.mtu = 1024;
    ct_conn_accept(r.c);
    r.c->auto_ack = 0;
    post_writes(t, r.c, &r.mr, n, 1, len);
    r.early = expect_request(t, r.c, CT_WAIT, data_ok,
                             "first packets after POST_SEND");
    return r;
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
        "IUT requester with rate_hint=3 and one WRITE of 8192 bytes (MTU "
        "1024) to a RATE peer: a share request (ACK with ACK_REQ and "
        "CREDIT) before any data packet; no data for 50 ms without an "
        "answer (min_rto 200 ms); after an answer of 1000 Mbit/s, data")
{
    struct ask_run r = ask_start(t, "mtu=1024 min_rto_us=200000 rate_hint=3", 1,
                                 8192);
    unsigned reqs = 0, n;

    n = count_data(r.c, 50, &reqs, 0, 0);
    CT_REQUIRE(t, n == 0,
               "%u data packets before the share request was answered "
               "(CC-30 holds the data until the answer)",
               n);
    send_dup_ack(r.c, 1000, 0);
    CT_REQUIRE(t, ct_expect_data(r.c, CT_WAIT) != NULL,
               "no data after the answer");
}

CT_CASE(cc_ask_first_packet, "CC-36 CC-30 CC-24",
        "IUT requester with its default rate_hint (2) and one WRITE of 8192 "
        "bytes (MTU 1024, 8 packets) to a RATE peer: a share request "
        "first, then at most one data packet in 50 ms without an answer "
        "(min_rto 200 ms); after an answer of 1000 Mbit/s, more data")
{
    struct ask_run r = ask_start(t, "mtu=1024 min_rto_us=200000", 1, 8192);
    unsigned reqs = 0, n;

    n = r.early + count_data(r.c, 50, &reqs, 0, 0);
    CT_REQUIRE(t, n <= 1,
               "%u data packets before the share request was answered "
               "(CC-36: rate_hint 2 sends at most its first packet "
               "behind the request)",
               n);
    send_dup_ack(r.c, 1000, 0);
    CT_REQUIRE(t, ct_expect_data(r.c, CT_WAIT) != NULL,
               "no data after the answer");
}

CT_CASE(cc_ask_gives_up, "CC-31 CC-30",
        "IUT requester with rate_hint=3, min_rto 20 ms and two WRITEs to a "
        "RATE peer that never answers its share request: data within "
        "500 ms, and no second share request before it")
{
    struct ask_run r = ask_start(t, "mtu=1024 min_rto_us=20000 rate_hint=3", 2,
                                 1024);
    uint64_t end;
    unsigned reqs = 0;

    end = ct_now_ns() + (uint64_t)ct_ms(t, CT_WAIT) * 1000000u;
    for (;;) {
        const struct ct_rx *rx = ct_next(r.c, 2);
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

/* n RATE peers of the IUT, connected by the tester. */
static void rate_peers(struct ct *t, struct ct_conn **c, int n)
{
    for (int i = 0; i < n; i++) {
        c[i] = ct_conn_new(t, "mtu=1024");
        c[i]->par.flags = MROCE_CONN_RATE;
        c[i]->par.mtu = 1024;
        ct_conn_connect(c[i]);
    }
}

/* Sends c's share request; returns how long the IUT took to count it
 * (its rx_acks), in ns, or at least `limit` if it did not within that. */
static uint64_t request_counted(struct ct *t, struct ct_conn *c, uint64_t limit)
{
    int64_t before = ct_counter(t, c->aqp, "rx_acks");
    uint64_t t0 = ct_now_ns();

    send_dup_ack(c, MROCE_CREDIT_UNLIMITED, MROCE_F_ACK_REQ | MROCE_F_CREDIT);
    while (ct_counter(t, c->aqp, "rx_acks") == before &&
           ct_now_ns() - t0 < limit)
        ;
    return ct_now_ns() - t0;
}

/* The answer to c's share request within CT_WAIT: its Credit. */
static uint32_t answer_of(struct ct *t, struct ct_conn *c)
{
    const struct ct_rx *rx = ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);

    CT_REQUIRE(t, !(rx->p.base.flags & MROCE_F_ACK_REQ),
               "the answer to a share request asks for an ACK itself");
    return rx->p.u.ack.credit;
}

CT_CASE(cc_ask_answered_together, "CC-32 CC-33 CC-37 CC-26",
        "three RATE peers send the IUT a share request before any data: "
        "the first alone (answered), then the second and, once the IUT "
        "has counted the second (rx_acks), the third, both counted within "
        "400 us of the second's sending: the second and third are each "
        "answered by an ACK (no ACK_REQ) whose Credit is at most a third "
        "of the IUT's receive rate (three are active senders, and the "
        "second answer waits for the third request)")
{
    /* The third request must reach the IUT in a later receive round
     * than the second (else an IUT that answers at once sees all three
     * active too) and within its gather (libmroce: rate_active / 8 =
     * 500 us).  The tester waits until the IUT's rx_acks shows the
     * second processed, then sends the third and waits for it to be
     * counted too; an attempt where both took over 400 us from the
     * second's sending (a descheduled IUT) says nothing either way and
     * is repeated. */
    /* Three connections an attempt, and a case may open 16. */
    for (int attempt = 0; attempt < 5; attempt++) {
        struct ct_conn *c[3];
        uint32_t h[3];
        uint64_t el, t0, t1;

        rate_peers(t, c, 3);
        /* Quiet for longer than rate_active (4 ms): no sender of an
         * earlier case or attempt is still counted. */
        ct_expect_no_op(c[0], MROCE_OP_WRITE, 20);
        t0 = ct_now_ns();
        (void)request_counted(t, c[0], 0);
        (void)answer_of(t, c[0]);
        t1 = ct_now_ns();
        el = request_counted(t, c[1], 300000u);
        if (el >= 300000u) {
            /* The second request was not counted within 300 us: the
             * third was never sent, and the attempt says nothing. */
            ct_log(t,
                   "attempt %d: the IUT counted the second request only "
                   "after %llu us",
                   attempt, (unsigned long long)(el / 1000u));
            (void)ct_next(c[1], ct_ms(t, 10));
            continue;
        }
        (void)request_counted(t, c[2], 300000u);
        el = ct_now_ns() - t1;
        if (ct_now_ns() - t0 >= 3000000u) {
            /* The first sender sends no data: it is active for
             * rate_active (4 ms) from its request only, and a share
             * computed after that divides among two. */
            ct_log(t,
                   "attempt %d: the third request was counted %llu us "
                   "after the first",
                   attempt, (unsigned long long)((ct_now_ns() - t0) / 1000u));
            for (int i = 1; i < 3; i++)
                (void)ct_next(c[i], ct_ms(t, 10));
            continue;
        }
        if (el >= 400000u) {
            /* The IUT took the third request more than 400 us after the
             * second was sent: it may have been processed after the
             * gather, and the attempt says nothing either way. */
            ct_log(t,
                   "attempt %d: the IUT counted both requests only after "
                   "%llu us",
                   attempt, (unsigned long long)(el / 1000u));
            for (int i = 1; i < 3; i++)
                (void)ct_next(c[i], ct_ms(t, 10));
            continue;
        }
        for (int i = 1; i < 3; i++)
            h[i] = answer_of(t, c[i]);
        for (int i = 1; i < 3; i++)
            CT_REQUIRE(t, h[i] >= 1 && h[i] <= RX_MBPS / 3,
                       "answer %d carries %u Mbit/s: with three requesters "
                       "active (CC-32) and the last two answered together "
                       "(CC-33), at most %u",
                       i, h[i], RX_MBPS / 3);
        return;
    }
    ct_skip(t, "in 5 attempts the IUT never counted the second request "
               "within 300 us and both within 400 us, 3 ms after the "
               "first");
}

CT_CASE(cc_ask_lone_at_once, "CC-37 CC-32",
        "a RATE peer sends the IUT, with no other sender active, a share "
        "request: in one of 4 attempts the answer arrives within 400 us "
        "(the IUT's gather, rate_active / 8, is 500 us: a lone sender's "
        "answer is not held for it), carrying a share above half the "
        "receive rate")
{
    uint64_t best = UINT64_MAX;

    for (int attempt = 0; attempt < 4; attempt++) {
        struct ct_conn *c;
        uint64_t t0, el;
        uint32_t h;

        rate_peers(t, &c, 1);
        ct_expect_no_op(c, MROCE_OP_WRITE, 20); /* nobody active */
        t0 = ct_now_ns();
        send_dup_ack(c, MROCE_CREDIT_UNLIMITED,
                     MROCE_F_ACK_REQ | MROCE_F_CREDIT);
        h = answer_of(t, c);
        el = ct_now_ns() - t0;
        CT_REQUIRE(t, h > RX_MBPS / 2 && h != MROCE_CREDIT_UNLIMITED,
                   "the lone sender's answer carries %u Mbit/s (CC-26: "
                   "the whole receive rate for one sender)",
                   h);
        if (el < best)
            best = el;
        if (el < 400000u)
            return;
        ct_log(t, "attempt %d: answered after %llu us", attempt,
               (unsigned long long)(el / 1000u));
    }
    ct_fail(t,
            "a lone sender's share request was answered after %llu us at "
            "best (CC-37: at once, not after the 500 us gather)",
            (unsigned long long)(best / 1000u));
}

CT_CASE(cc_ask_random_start, "CC-30",
        "IUT requester with rate_hint=3, 8 times on a new connection: one "
        "WRITE of 1024 bytes, its share request answered with 1 Mbit/s "
        "(a full packet every 8.8 ms); the time from the answer to the "
        "data packet is more than 2 ms in at least 2 of the 8 (a pacing "
        "clock started at a random point within one packet)")
{
    unsigned late = 0;
    uint64_t d[8];

    for (int i = 0; i < 8; i++) {
        struct ask_run r = ask_start(t,
                                     "mtu=1024 min_rto_us=200000 rate_hint=3",
                                     1, 1024);
        uint64_t t0 = ct_now_ns();

        send_dup_ack(r.c, 1, 0);
        (void)ct_expect_data(r.c, CT_WAIT);
        d[i] = ct_now_ns() - t0;
        late += d[i] > 2000000u;
    }
    CT_REQUIRE(t, late >= 2,
               "the data followed the answer after more than 2 ms in %u of "
               "8 runs (%llu %llu %llu %llu %llu %llu %llu %llu us; CC-30: "
               "the pacing clock starts at a random point within one "
               "packet's time at the hint, here 8.8 ms)",
               late, (unsigned long long)(d[0] / 1000u),
               (unsigned long long)(d[1] / 1000u),
               (unsigned long long)(d[2] / 1000u),
               (unsigned long long)(d[3] / 1000u),
               (unsigned long long)(d[4] / 1000u),
               (unsigned long long)(d[5] / 1000u),
               (unsigned long long)(d[6] / 1000u),
               (unsigned long long)(d[7] / 1000u));
}

CT_CASE(cc_ask_fresh_while_paced, "CC-34 CC-30",
        "IUT requester with rate_hint=3 and 8 WRITEs of 1024 bytes; its "
        "share request answered with 1 Mbit/s and every packet "
        "acknowledged at once with that hint (a packet every 8.8 ms, "
        "longer than rate_active): no second share request in 60 ms")
{
    struct ask_run r = ask_start(t, "mtu=1024 min_rto_us=200000 rate_hint=3", 8,
                                 1024);
    unsigned reqs = 0, n;

    send_dup_ack(r.c, 1, 0);
    n = count_data(r.c, 60, &reqs, 1, 1);
    CT_REQUIRE(t, reqs == 0,
               "%u share requests between data packets paced at 1 Mbit/s "
               "(CC-34: the share stays fresh for 4 packets at the hint)",
               reqs);
    CT_REQUIRE(t, n >= 2, "only %u data packets in 60 ms", n);
}

CT_CASE(cc_ask_again_after_idle, "CC-35 CC-30",
        "IUT requester with rate_hint=3: one WRITE after an answered share "
        "request, acknowledged; 30 ms idle (rate_active 4 ms); a second "
        "WRITE is again preceded by a share request")
{
    struct ask_run r = ask_start(t, "mtu=1024 min_rto_us=200000 rate_hint=3", 1,
                                 1024);
    const struct ct_rx *rx;
    struct mrw_pkt p;
    unsigned reqs = 0;

    send_dup_ack(r.c, 50000, 0);
    rx = ct_expect_data(r.c, CT_WAIT);
    p = rx->p;
    p.payload = NULL;
    ct_send_ack_credit(r.c, &p, 50000);
    (void)count_data(r.c, 30, &reqs, 1, 50000);
    post_writes(t, r.c, &r.mr, 1, 2, 1024);
    (void)expect_request(t, r.c, CT_WAIT, 0, "the WRITE after 30 ms idle");
}
