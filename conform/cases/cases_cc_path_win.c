/*
 * cases_cc_path_win.c - the IUT's per-path windows and its first window
 * (congestion.md sections 6 and 7), judged from what it sends: a path's
 * window starting at cwnd / npaths and growing one full packet per window
 * acknowledged (CC-22), never below path_burst full packets, so a marked
 * path keeps its bursts (CC-23), and the first window leaving as the
 * window allows before any rate hint and without hints (CC-29).
 * cases_cc_path.c has the windows' marks (CC-20, CC-21) and the hints.
 *
 * The IUT's QPs get target_qdelay 100 ms, so that only the tester's CE
 * echoes (not a loaded host's delays) trim windows, and where ACKs are
 * withheld or late the tester advertises a max_ack_delay of 90 ms: the
 * withheld packets then wait out their loss guard (LOSS-7 (c)) and their
 * timeout (LOSS-8) while the case counts them.  A withheld packet at
 * snd_una waits only 4 rttvar for the ACK hold (LOSS-31), so
 * cc_path_fresh_window keeps the IUT's rttvar at tens of milliseconds
 * with late copies of its ACKs (a network that delays some ACKs).
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

CT_CASE(cc_path_burst_floor, "CC-23 CC-21 PATH-3",
        "IUT requester over 4 paths with path_burst 4, no reuse, "
        "target_qdelay 100 ms; the tester echoes every packet of one path X "
        "with CE during a 1024-packet WRITE: each echo halves X's window, "
        "which stays at its floor of path_burst x (MTU + 80), 4 packets, so "
        "at least half of X's bursts (consecutive packets on X) after its "
        "first two carry 2 or more (most carry 4; some find X's last burst "
        "still in flight); without the floor X would hold one packet, its "
        "bursts single packets")
{
    struct ct_mr mr = ct_mr_reg(t, 1u << 20, "lw", 0);
    struct ct_conn *c;
    uint64_t end;
    unsigned n = 0, run = 0, runs = 0, full = 0, hist[6] = {0};
    uint16_t x = 0;
    int have_x = 0, prev_x = 0;
    const struct ct_rx *rx;

    c = ct_conn_new(t, "npaths=4 mtu=1024 path_burst=4 path_reuse=0 "
                       "min_rto_us=200000 target_qdelay_us=100000");
    c->par.max_ack_delay = 90000000; /* ns: no loss from a late ACK */
    ct_conn_connect(c);
    c->auto_ack = 0;
    end = ct_now_ns() + (uint64_t)ct_ms(t, 20000) * 1000000u;
    ch_post_write(t, c, &mr, 1, 0, 1024u * 1024);
    while ((rx = ch_next_data_until_done(t, c, 1, end, &n)) != NULL) {
        struct mrw_pkt p = rx->p;
        int on_x;
        p.payload = NULL;
        if (!have_x) {
            x = p.base.entropy;
            have_x = 1;
        }
        on_x = p.base.entropy == x;
        if (!(p.base.flags & MROCE_F_RETX)) {
            if (on_x) {
                run++;
            } else if (prev_x) { /* X's burst ended */
                if (++runs > 2) {
                    hist[run < 5 ? run : 5]++;
                    full += run >= 2;
                }
                run = 0;
            }
            prev_x = on_x;
        }
        ch_ack_upto(c, &p, on_x);
    }
    c->auto_ack = 1;
    ct_log(t,
           "%u bursts on X after its first two: %u of 1 packet, %u of 2, %u "
           "of 3, %u of 4, %u longer",
           runs > 2 ? runs - 2 : 0, hist[1], hist[2], hist[3], hist[4],
           hist[5]);
    CT_REQUIRE(t, runs >= 6, "X had only %u bursts in 1024 packets", runs);
    CT_REQUIRE(t, full * 2 >= runs - 2,
               "only %u of X's %u bursts after its first two had 2 packets "
               "or more: a path's window stays at least path_burst x (MTU + "
               "80) (CC-23), so a burst fits it",
               full, runs - 2);
    CT_REQUIRE(t, hist[5] == 0,
               "%u bursts on X were longer than path_burst 4 (PATH-3)",
               hist[5]);
}

/* The tester has received the IUT's packet psn after all: its receive
 * state as expect.c keeps it (bit k: rcv_cum + k). */
static void mark_rcv(struct ct_conn *c, uint32_t psn)
{
    int32_t d = mrw_psn_diff(psn, c->rcv_cum);

    if (d < 0 || d >= CT_RCV_BITS)
        return;
    c->rcv_bits[d / 8] |= (uint8_t)(1u << (d % 8));
    c->rx_count++;
    while (c->rcv_bits[0] & 1u) {
        for (unsigned i = 0; i < sizeof(c->rcv_bits); i++)
            c->rcv_bits[i] = (uint8_t)((c->rcv_bits[i] >> 1) |
                                       (i + 1 < sizeof(c->rcv_bits)
                                            ? c->rcv_bits[i + 1] << 7
                                            : 0));
        c->rcv_cum++;
    }
}

#define FRESH_SPAN 200 /* PSNs per phase: within the 256 SACK bits */
#define FRESH_MAX_B 256
#define FRESH_STOP 40    /* new packets on A alone: B's window is full */
#define FRESH_LATE_MS 20 /* how late the late copies of ACKs arrive */
#define FRESH_WARM 4     /* one-packet WRITEs before the bulk */

/* The late copies of the tester's ACKs: `cur`, a packet received at least
 * FRESH_LATE_MS ago, whose ACK fresh_late() sends again, and `next`, the
 * one that takes its place once that old. */
struct fresh_late {
    struct mrw_pkt cur, next;
    uint64_t next_at;
    int have_next;
};

/* An ACK of c's current receive state echoing late->cur, as a copy of
 * cur's ACK delayed in the network would: an RTT sample of
 * FRESH_LATE_MS or more (LOSS-3), nothing newly acknowledged, no path
 * echo (cur is below snd_una).  Alternating with the immediate ACKs'
 * samples of tens of microseconds, it holds the IUT's rttvar near half
 * its srtt, about 10 ms (LOSS-4), so LOSS-31's 4 rttvar for the packet at
 * snd_una stays tens of milliseconds, while min_rtt stays the immediate
 * ACKs' (under 1 ms: no long-haul rules, CC-51).  p, just received, is
 * the candidate for the next copies. */
static void fresh_late(struct ct_conn *c, struct fresh_late *late,
                       const struct mrw_pkt *p)
{
    uint64_t now = ct_now_ns();

    if (late->have_next &&
        now - late->next_at >= (uint64_t)FRESH_LATE_MS * 1000000u) {
        late->cur = late->next;
        late->have_next = 0;
    }
    if (!late->have_next) {
        late->next = *p;
        late->next_at = now;
        late->have_next = 1;
    }
    ct_send_ack(c, &late->cur);
}

/* The warm-up of cc_path_fresh_window: FRESH_WARM one-packet WRITEs,
 * each acknowledged at once and again FRESH_LATE_MS later (fresh_late's
 * samples, from the start), so that the bulk starts with an rttvar of
 * milliseconds.  Leaves the last packet as late->cur. */
static void fresh_warm(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                       struct fresh_late *late)
{
    for (int i = 0; i < FRESH_WARM; i++) {
        const struct ct_rx *rx;
        struct mrw_pkt p;
        uint64_t end;
        ch_post_write(t, c, mr, 100 + (uint64_t)i, 0, 1024);
        rx = ct_expect_data(c, CT_WAIT);
        p = rx->p;
        p.payload = NULL;
        ct_send_ack(c, &p);
        end = ct_now_ns() + (uint64_t)FRESH_LATE_MS * 1000000u;
        while (ct_now_ns() < end)
            (void)ct_next(c, 1);
        ct_send_ack(c, &p);
        late->cur = p;
    }
    late->have_next = 0;
}

/* One phase of cc_path_fresh_window: ACKs every packet on path *a at
 * once (and a late copy, fresh_late), none on *b (lost to the tester's
 * receive state, their PSNs kept in bpsn), until FRESH_STOP new packets
 * in a row after b's latest went on a (b's window is full: nothing on b
 * is acknowledged, so it cannot open again) or the IUT's PSNs reach
 * FRESH_SPAN beyond where the phase began.  The first two entropies seen
 * name a and b if unset.  Returns the packets on b; *early is 1 if the
 * phase ended before that on a retransmission or a third entropy (a loss,
 * a probe or a retirement: the count is then only a lower bound of what b
 * may hold). */
static int fresh_phase(struct ct *t, struct ct_conn *c, int *have, uint16_t *a,
                       uint16_t *b, uint32_t *bpsn, struct mrw_pkt *last_a,
                       struct fresh_late *late, int *early)
{
    uint32_t from = c->rcv_cum;
    int nb = 0, only_a = 0;

    for (;;) {
        uint8_t bits[CT_RCV_BITS / 8];
        uint32_t cum = c->rcv_cum, rxn = c->rx_count;
        const struct ct_rx *rx;
        struct mrw_pkt p;
        memcpy(bits, c->rcv_bits, sizeof(bits));
        rx = ct_next(c, ct_ms(t, 500));
        CT_REQUIRE(t, rx != NULL, "the IUT sent nothing for 500 ms");
        if (!mrw_opcode_has_psn(rx->p.base.opcode) ||
            rx->p.base.opcode == MROCE_OP_ACK)
            continue;
        p = rx->p;
        p.payload = NULL;
        *early = 1;
        if (p.base.flags & MROCE_F_RETX)
            return nb;
        *early = 0;
        if (*have == 0) {
            *a = p.base.entropy; /* the first path seen is A */
            *have = 1;
        } else if (*have == 1 && p.base.entropy != *a) {
            *b = p.base.entropy;
            *have = 2;
        }
        if (p.base.entropy == *a) {
            ct_send_ack(c, &p);
            fresh_late(c, late, &p);
            *last_a = p;
            only_a++;
        } else if (*have == 2 && p.base.entropy == *b) {
            c->rcv_cum = cum; /* withheld: lost to our receive state */
            c->rx_count = rxn;
            memcpy(c->rcv_bits, bits, sizeof(bits));
            if (nb < FRESH_MAX_B)
                bpsn[nb] = p.base.psn;
            nb++;
            only_a = 0;
        } else {
            *early = 1;
            return nb;
        }
        if ((nb > 0 && only_a >= FRESH_STOP) ||
            mrw_psn_diff(p.base.psn, from) >= FRESH_SPAN)
            return nb;
    }
}

CT_CASE(cc_path_fresh_window, "CC-22 CC-23 CC-20",
        "IUT requester over 2 paths (init_cwnd 64 KiB, no reuse, "
        "target_qdelay 100 ms) to a tester that advertises max_ack_delay "
        "90 ms and sends each ACK twice, at once and a copy 20-40 ms late "
        "(the IUT's srtt and rttvar about 10 ms, its min_rtt the immediate "
        "ACKs', so LOSS-31 leaves a withheld packet at snd_una tens of ms); "
        "after 4 one-packet WRITEs, a 512-packet WRITE whose packets "
        "on path A are acknowledged and none on path B until 40 new packets "
        "in a row go on A: B, starting at cwnd / npaths = 32 KiB, holds at "
        "most 34 packets (30 fit) where the connection's window allows "
        "about 59; then one ACK covers B's packets (30 acknowledged on a "
        "window of 30 grow it by one packet) and B, withheld again, holds "
        "at most 4 more than before.  A phase cut short by a retransmission "
        "or a retirement judges only the upper bound, and a run where the "
        "IUT's min_rtt reached 1 ms (long-haul rules, CC-51) nothing; such "
        "a run is repeated, up to 3 runs")
{
    static uint32_t bpsn[FRESH_MAX_B];
    int nb1 = -1, nb2 = -1;

    for (int run = 1; run <= 3; run++) {
        struct ct_mr mr = ct_mr_reg(t, 1u << 19, "lw", 0);
        struct ct_conn *c =
            ct_conn_new(t, "npaths=2 mtu=1024 path_reuse=0 path_burst=1 "
                           "min_rto_us=200000 target_qdelay_us=100000");
        struct mrw_pkt last_a;
        struct fresh_late late;
        uint16_t a = 0, b = 0;
        int have = 0, early = 0;
        int64_t min_rtt;

        c->par.max_ack_delay = 90000000; /* ns: LOSS-7's floor, LOSS-8 */
        ct_conn_connect(c);
        c->auto_ack = 0;
        fresh_warm(t, c, &mr, &late);
        ch_post_write(t, c, &mr, 1, 0, 1024u * 512);
        nb1 = fresh_phase(t, c, &have, &a, &b, bpsn, &last_a, &late, &early);
        min_rtt = ct_counter(t, c->aqp, "min_rtt");
        ct_log(t,
               "run %d: path B held %d packets%s (min_rtt %lld ns, srtt %lld "
               "ns)",
               run, nb1, early ? ", then a loss or probe" : "",
               (long long)min_rtt, (long long)ct_counter(t, c->aqp, "srtt"));
        /* A loaded host can hold the tester's ACKs for a millisecond: an
         * IUT whose min_rtt is 1 ms or more runs under the long-haul rules
         * (CC-51, CC-40 raises the windows), not the ones judged here. */
        if (min_rtt >= 1000000)
            continue;
        CT_REQUIRE(t, nb1 <= 34,
                   "path B, never acknowledged, carried %d packets: a new "
                   "path's window is cwnd / npaths, 32 KiB or 30 packets "
                   "(CC-22, CC-20)",
                   nb1);
        if (early)
            continue;
        CT_REQUIRE(t, nb1 >= 20,
                   "path B, never acknowledged, carried only %d packets "
                   "(CC-22: cwnd / npaths, 30)",
                   nb1);
        for (int i = 0; i < nb1 && i < FRESH_MAX_B; i++)
            mark_rcv(c, bpsn[i]);
        ct_send_ack(c, &last_a); /* B's packets acknowledged, cleanly */
        nb2 = fresh_phase(t, c, &have, &a, &b, bpsn, &last_a, &late, &early);
        min_rtt = ct_counter(t, c->aqp, "min_rtt");
        ct_log(t,
               "run %d: path B held %d packets once they were acked%s "
               "(min_rtt %lld ns)",
               run, nb2, early ? ", then a loss or probe" : "",
               (long long)min_rtt);
        if (min_rtt >= 1000000)
            continue;
        CT_REQUIRE(t, nb2 <= nb1 + 4,
                   "path B held %d packets, then %d once they were "
                   "acknowledged cleanly: a window acknowledged grows the "
                   "path by one full packet (CC-22)",
                   nb1, nb2);
        if (early)
            continue;
        CT_REQUIRE(t, nb2 + 1 >= nb1,
                   "path B held %d packets, then only %d once they were "
                   "acknowledged cleanly (CC-22: it grows)",
                   nb1, nb2);
        return;
    }
    ct_skip(t, "3 runs each had a retransmission, a retirement or a "
               "long-haul min_rtt");
}

/* Counts the IUT's new PSNs on c, no ACKs sent, until `want` or `ms`
 * (unscaled: a faulty IUT that paces must not gain from --slow). */
static unsigned first_window(struct ct *t, struct ct_conn *c,
                             const struct ct_mr *mr, unsigned want, int ms)
{
    uint64_t end = ct_now_ns() + (uint64_t)ms * 1000000u;
    uint32_t hi = 0;
    int any = 0;
    unsigned n = 0;

    c->auto_ack = 0;
    ch_post_write(t, c, mr, 1, 0, 1024u * 100);
    while (n < want && ct_now_ns() < end) {
        const struct ct_rx *rx = ct_next(c, 20);
        if (!rx || !mrw_opcode_has_psn(rx->p.base.opcode) ||
            rx->p.base.opcode == MROCE_OP_ACK ||
            (any && mrw_psn_diff(rx->p.base.psn, hi) <= 0))
            continue;
        hi = rx->p.base.psn;
        any = 1;
        n++;
    }
    return n;
}

CT_CASE(cc_rate_first_window, "CC-29 CC-2 CC-24",
        "IUT requester (rate_hint 1, MTU 1024, init_cwnd 64 KiB: 59 packets) "
        "with a 100-packet WRITE to a RATE peer that sends no ACK: before "
        "its first hint only the window limits it, so at least 48 new "
        "packets arrive within 300 ms; likewise to a peer without RATE (no "
        "hints: CC-1..19 alone)")
{
    struct ct_mr mr = ct_mr_reg(t, 1u << 17, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "mtu=1024 rate_hint=1 path_burst=1 "
                                       "min_rto_us=200000");
    struct ct_conn *d;
    unsigned n;

    c->par.flags = MROCE_CONN_RATE;
    ct_conn_connect(c);
    CT_REQUIRE(t, c->hs.u.conn.flags & MROCE_CONN_RATE,
               "CONNECT_RESP Flags 0x%x lack RATE", c->hs.u.conn.flags);
    n = first_window(t, c, &mr, 48, 300);
    ct_log(t, "RATE peer: %u new packets before any ACK", n);
    CT_REQUIRE(t, n >= 48,
               "%u new packets in 300 ms before any hint: the first window "
               "goes out as without hints (CC-29)",
               n);
    d = ct_conn_new(t, "mtu=1024 rate_hint=1 path_burst=1 min_rto_us=200000");
    ct_conn_connect(d);
    n = first_window(t, d, &mr, 48, 300);
    ct_log(t, "peer without RATE: %u new packets before any ACK", n);
    CT_REQUIRE(t, n >= 48,
               "%u new packets in 300 ms to a peer without RATE: without "
               "hints CC-1..19 alone apply (CC-29)",
               n);
}
