/*
 * cases_cc_path.c - per-path windows and the receiver's rate hint
 * (congestion.md sections 6 and 7): RATE in the CONNECT Flags by default
 * (CC-24), the hint in the IUT's ACKs as a receiver (CC-25, CC-26), and
 * the IUT as a sender: pacing at the hint (CC-28), its window capped by
 * it (CC-27), and a path whose echoes come back CE holding at most its
 * window (CC-20, CC-21).
 *
 * The tester advertises RATE only where a case says so (par.flags), so
 * the other chapters' cases run without hints.  The IUT's receive rate is
 * its default (libmroce: 100,000 Mbit/s unless MROCE_RX_RATE says
 * otherwise), so the share checks are bounds, not values.  The IUT's QPs
 * get min_rto 200 ms where the tester withholds ACKs: retransmissions and
 * probes reuse PSNs, so distinct new PSNs are what the limits bound.
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

#define RX_MBPS 100000u /* the IUT's default receive rate */
#define PKT (1024u + 80u)

CT_CASE(cc_rate_flag_default, "CC-24 WIRE-8",
        "QP with default attributes: RATE in its CONNECT_RESP and its "
        "CONNECT_REQ Flags; with rate_hint=0 in neither")
{
    struct ct_conn *c = ct_conn_new(t, "");
    struct ct_conn *a = ct_conn_new(t, "");
    struct ct_conn *o = ct_conn_new(t, "rate_hint=0");

    ct_conn_connect(c);
    CT_REQUIRE(t, c->hs.u.conn.flags & MROCE_CONN_RATE,
               "CONNECT_RESP Flags 0x%x lack RATE", c->hs.u.conn.flags);
    ct_conn_accept(a);
    CT_REQUIRE(t, a->hs.u.conn.flags & MROCE_CONN_RATE,
               "CONNECT_REQ Flags 0x%x lack RATE", a->hs.u.conn.flags);
    ct_conn_connect(o);
    CT_EQ(t, "CONNECT_RESP RATE flag with rate_hint=0", 0,
          o->hs.u.conn.flags & MROCE_CONN_RATE);
}

/* A one-packet WRITE with ACK_REQ to c; returns its ACK's Credit. */
static uint32_t hint_of(struct ct_conn *c, const struct ct_mr *mr)
{
    uint8_t d[16] = {0};
    uint32_t psn = ct_send_write(c, mr, 0, d, sizeof(d), 0);
    return ct_expect_ack(c, psn + 1, CT_WAIT)->p.u.ack.credit;
}

static struct ct_conn *rate_peer(struct ct *t, int rate)
{
    struct ct_conn *c = ct_conn_new(t, "mtu=1024");

    c->par.flags = rate ? MROCE_CONN_RATE : 0;
    c->par.mtu = 1024;
    ct_conn_connect(c);
    return c;
}

CT_CASE(cc_rate_hint_share, "CC-26 CC-25 CC-24 REL-14 CONN-27 WIRE-37",
        "two RATE peers and one without: a WRITE on the first is ACKed with "
        "a hint of 1..100000 Mbit/s (the IUT's receive rate); after WRITEs "
        "on both RATE peers, each is hinted at most half of it; the peer "
        "without RATE gets 0xFFFFFFFF")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *a = rate_peer(t, 1), *b = rate_peer(t, 1);
    struct ct_conn *o = rate_peer(t, 0);
    uint32_t h;

    h = hint_of(a, &mr);
    CT_REQUIRE(t, h != MROCE_CREDIT_UNLIMITED && h >= 1 && h <= RX_MBPS,
               "hint %u Mbit/s to the only active sender: CC-26 gives a share "
               "of the receive rate (%u)",
               h, RX_MBPS);
    (void)hint_of(b, &mr);
    h = hint_of(a, &mr);
    CT_REQUIRE(t, h >= 1 && h <= RX_MBPS / 2,
               "hint %u Mbit/s with two active senders: the shares of CC-26 "
               "add up to at most the receive rate (%u)",
               h, RX_MBPS);
    h = hint_of(b, &mr);
    CT_REQUIRE(t, h >= 1 && h <= RX_MBPS / 2,
               "hint %u Mbit/s to the second active sender (at most %u)", h,
               RX_MBPS / 2);
    CT_EQ(t, "Credit to a peer without RATE", MROCE_CREDIT_UNLIMITED,
          hint_of(o, &mr));
}

/* The IUT as a sender with rate_hint 1 to c (RATE, MTU 1024) with n
 * 1024-byte WRITEs posted, the tester not acknowledging on its own. */
static struct ct_conn *rate_sender(struct ct *t, int n, const char *opts)
{
    struct ct_mr mr = ct_mr_reg(t, 1024, "lw", 0);
    char o[256];
    struct ct_conn *c;

    /* rate_hint 1: these cases are about hints alone (CC-24..29), the
     * first window leaving before any hint. */
    snprintf(o, sizeof o, "%s rate_hint=1", opts);
    c = ct_conn_new(t, o);
    c->par.flags = MROCE_CONN_RATE;
    c->par.mtu = 1024;
    ct_conn_accept(c);
    c->auto_ack = 0;
    for (int i = 0; i < n; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=1024 "
                 "raddr=0x100 rkey=1",
                 c->aqp, i, mr.id);
    return c;
}

/* Receives for ms; counts new PSNs above *hi; acknowledges each with
 * Credit `hint` if ack. */
static uint32_t count_new(struct ct_conn *c, int ms, uint32_t *hi, int *any,
                          int ack, uint32_t hint)
{
    uint64_t end = ct_now_ns() + (uint64_t)ms * 1000000u;
    uint32_t n = 0;

    while (ct_now_ns() < end) {
        const struct ct_rx *rx = ct_next(c, 2);
        struct mrw_pkt p;
        if (!rx || !mrw_opcode_has_psn(rx->p.base.opcode) ||
            rx->p.base.opcode == MROCE_OP_ACK)
            continue;
        p = rx->p;
        p.payload = NULL;
        if (!*any || mrw_psn_diff(p.base.psn, *hi) > 0) {
            n += *any ? (uint32_t)mrw_psn_diff(p.base.psn, *hi) : 1;
            *hi = p.base.psn;
            *any = 1;
        }
        if (ack)
            ct_send_ack_credit(c, &p, hint);
    }
    return n;
}

CT_CASE(cc_rate_paces, "CC-28 CC-24",
        "IUT requester with 250 WRITEs of 1024 bytes to a RATE peer that "
        "acknowledges every packet with a hint of 5 Mbit/s (1104 bytes "
        "every 1.77 ms): after 10 ms (the first window, sent before any "
        "hint, is acknowledged), at most 24 new packets in 30 ms, and some")
{
    struct ct_conn *c = rate_sender(t, 250, "mtu=1024 min_rto_us=200000");
    uint32_t hi, n;
    int any = 1;
    const struct ct_rx *rx = ct_expect_data(c, CT_WAIT);
    struct mrw_pkt p = rx->p;

    p.payload = NULL;
    hi = p.base.psn;
    ct_send_ack_credit(c, &p, 5);
    (void)count_new(c, 10, &hi, &any, 1, 5);
    n = count_new(c, 30, &hi, &any, 1, 5);
    CT_REQUIRE(t, n <= 24,
               "%u new packets of 1104 wire bytes in 30 ms at a hint of 5 "
               "Mbit/s (CC-28 paces at the hint: about 17, and 2 ahead)",
               n);
    CT_REQUIRE(t, n >= 3, "only %u new packets in 30 ms at 5 Mbit/s", n);
}

CT_CASE(cc_rate_caps_window, "CC-27 CC-2 CC-24",
        "IUT requester with 250 WRITEs of 1024 bytes to a RATE peer that "
        "acknowledges every packet with a hint of 100 Mbit/s for 10 ms and "
        "then nothing: then at most 16 new packets in flight (hint x srtt "
        "+ 4 packets, srtt under 1 ms) where its window alone allows 59")
{
    struct ct_conn *c = rate_sender(t, 250, "mtu=1024 min_rto_us=200000");
    uint32_t hi, n;
    int any = 1;
    const struct ct_rx *rx = ct_expect_data(c, CT_WAIT);
    struct mrw_pkt p = rx->p;

    p.payload = NULL;
    hi = p.base.psn;
    ct_send_ack_credit(c, &p, 100);
    (void)count_new(c, 10, &hi, &any, 1, 100);
    n = count_new(c, 60, &hi, &any, 0, 0);
    CT_REQUIRE(t, n <= 16,
               "%u new packets in flight after hints of 100 Mbit/s "
               "(CC-27: hint x srtt / 8000 + 4 x (MTU + 80) bytes)",
               n);
    CT_REQUIRE(t, n >= 2, "only %u new packets after the last ACK", n);
}

/* A loaded host can hold the tester's ACKs for milliseconds: an IUT
 * whose min_rtt is 1 ms or more runs under the long-haul rules (CC-51: a
 * path's window regrows by up to 256 packets per window between marks,
 * CC-40 raises it), not the data-centre ones this case checks. */
#define MARKED_LONG_RTT_NS 1000000
#define MARKED_WARM 8 /* one-packet round trips per warm-up round */
#define MARKED_WARM_ROUNDS 4

/* One-packet WRITEs on c, each acknowledged at once, in rounds of
 * MARKED_WARM until the IUT's min_rtt is under 1 ms (at most
 * MARKED_WARM_ROUNDS rounds: a stalled IUT thread takes its ACKs late).
 * Returns the min_rtt (-1 if the IUT does not report it, 0 if it took no
 * sample); *wrid and *hi (the last PSN) move on. */
static int64_t marked_warm(struct ct *t, struct ct_conn *c,
                           const struct ct_mr *mr, int *wrid, uint32_t *hi)
{
    int64_t min_rtt = -1;

    for (int r = 1; r <= MARKED_WARM_ROUNDS; r++) {
        uint64_t end;
        for (int i = 0; i < MARKED_WARM; i++) {
            const struct ct_rx *rx;
            struct mrw_pkt p;
            ct_agent(t,
                     "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=1024 "
                     "raddr=0x100 rkey=1",
                     c->aqp, (*wrid)++, mr->id);
            rx = ct_expect_data(c, CT_WAIT);
            p = rx->p;
            p.payload = NULL;
            ch_ack_upto(c, &p, 0);
            *hi = p.base.psn;
        }
        /* the ACKs' RTT samples count once the IUT has taken them */
        end = ct_now_ns() + (uint64_t)ct_ms(t, 200) * 1000000u;
        while (ct_counter(t, c->aqp, "rx_acks") < r * MARKED_WARM &&
               ct_now_ns() < end)
            (void)ct_next(c, 1);
        min_rtt = ct_counter(t, c->aqp, "min_rtt");
        if (min_rtt != 0 && min_rtt < MARKED_LONG_RTT_NS)
            break;
    }
    return min_rtt;
}

/* One run of cc_path_window_marked on a new connection: the new packets
 * the marked path and the others carry once the tester goes quiet, and
 * the IUT's min_rtt after the warm-up, before the bulk (-1 if it does not
 * report it).  A min_rtt only falls, so if it is under 1 ms there, every
 * window of the bulk grew by the data-centre rules; measured at the end
 * instead, it could have fallen there after windows had grown by the
 * long-haul ones.  Returns 0, without the bulk, if that min_rtt is 0 (the
 * IUT took no sample) or 1 ms or more; else 1. */
static int marked_run(struct ct *t, uint32_t *onx, uint32_t *other,
                      int64_t *min_rtt)
{
    struct ct_conn *c =
        rate_sender(t, 0,
                    "mtu=1024 npaths=4 path_burst=1 path_reuse=0 "
                    "min_rto_us=200000 target_qdelay_us=100000");
    struct ct_mr mr = ct_mr_reg(t, 1024, "lw", 0);
    uint16_t x = 0;
    uint32_t seen = 0, hi = 0, warm_hi = 0;
    int toggle = 0, have_x = 0, wrid = 0;
    uint64_t end;

    *onx = *other = 0;
    *min_rtt = marked_warm(t, c, &mr, &wrid, &warm_hi);
    if (*min_rtt == 0 || *min_rtt >= MARKED_LONG_RTT_NS) {
        ct_log(t, "min_rtt %lld ns after the warm-up: no sample or long-haul",
               (long long)*min_rtt);
        return 0;
    }
    hi = warm_hi;
    for (int i = 0; i < 200; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=1024 "
                 "raddr=0x100 rkey=1",
                 c->aqp, wrid++, mr.id);
    end = ct_now_ns() + (uint64_t)ct_ms(t, 2000) * 1000000u;
    while (seen < 120 && ct_now_ns() < end) {
        const struct ct_rx *rx = ct_next(c, 5);
        struct mrw_pkt p;
        if (!rx || rx->p.base.opcode == MROCE_OP_ACK ||
            !mrw_opcode_has_psn(rx->p.base.opcode) ||
            mrw_psn_diff(rx->p.base.psn, warm_hi) <= 0)
            continue; /* a copy of a warm-up packet */
        p = rx->p;
        p.payload = NULL;
        if (mrw_psn_diff(p.base.psn, hi) > 0)
            hi = p.base.psn;
        if (!have_x) {
            x = p.base.entropy;
            have_x = 1;
        }
        seen++;
        if (p.base.entropy == x) {
            ch_ack_upto(c, &p, toggle % 4 == 0);
            toggle++;
        } else {
            ch_ack_upto(c, &p, 0);
        }
    }
    CT_REQUIRE(t, seen >= 120, "only %u packets in 2 s", seen);
    /* Whatever was sent before the last ACKs arrived is still in flight;
     * count only what comes in the quiet that follows. */
    end = ct_now_ns() + (uint64_t)ct_ms(t, 60) * 1000000u;
    while (ct_now_ns() < end) {
        const struct ct_rx *rx = ct_next(c, 2);
        if (!rx || rx->p.base.opcode == MROCE_OP_ACK ||
            !mrw_opcode_has_psn(rx->p.base.opcode) ||
            (rx->p.base.flags & MROCE_F_PROBE) ||
            mrw_psn_diff(rx->p.base.psn, hi) <= 0)
            continue;
        hi = rx->p.base.psn;
        if (rx->p.base.entropy == x)
            (*onx)++;
        else
            (*other)++;
    }
    ct_log(t,
           "marked path %u new packets, the others %u, min_rtt %lld ns "
           "before the bulk, %lld ns after",
           *onx, *other, (long long)*min_rtt,
           (long long)ct_counter(t, c->aqp, "min_rtt"));
    return 1;
}

CT_CASE(cc_path_window_marked, "CC-20 CC-21 PATH-5",
        "IUT requester over 4 paths (path_burst 1, no PATH-16 reuse, "
        "target_qdelay 100 ms so that only CE trims a path) with WRITEs of "
        "1024 bytes, 8 acknowledged one by one (up to 32, until the IUT's "
        "min_rtt is under 1 ms), then 200: the tester echoes every fourth "
        "packet of one path with CE (the rest clean, so its weight stays "
        "up) for 120 packets, then stops acknowledging: the others then "
        "carry at least 18 new packets, and that path at most 5 and at most "
        "a fifth of what the others carry (without its window it takes its "
        "turn, a third).  A run where the connection's window let the "
        "others carry fewer, or where the IUT's min_rtt stayed at 1 ms or "
        "more (long-haul rules, CC-51), says nothing about the path's "
        "window and is repeated, up to 5 runs")
{
    uint32_t onx = 0, other = 0;
    int64_t min_rtt = -1;

    for (int run = 1; run <= 5; run++) {
        if (!marked_run(t, &onx, &other, &min_rtt) || other < 18)
            continue;
        /* Halved by every fourth echo and grown by a packet per window
         * between, the path's window peaks just above 3 packets, so it
         * holds 4 (tests/test_cc.c, path_marked_model); spraying in turn
         * would give it a third of the others' count. */
        CT_REQUIRE(t, onx <= 5 && onx * 5 <= other,
                   "the CE-marked path got %u new packets, the others %u "
                   "(min_rtt %lld ns before the bulk): its window, halved by "
                   "each CE echo (CC-21) and grown a packet per window "
                   "between them, holds a few (CC-20)",
                   onx, other, (long long)min_rtt);
        return;
    }
    ct_skip(t,
            "in 5 runs the clean paths never carried 18 new packets at a "
            "data-centre RTT (last: %u, min_rtt %lld ns before the bulk)",
            other, (long long)min_rtt);
}
