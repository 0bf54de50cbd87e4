/*
 * cases_planes_paths.c - slot homes and plane shares (multipath.md section
 * 7: PATH-18, PATH-24) and the IUT's per-path windows and first window
 * (congestion.md sections 6 and 7: CC-22, CC-23, CC-29), judged from what
 * the IUT sends: which entropy (plane) each data packet uses, how many a
 * path carries while the tester withholds its ACKs, how long the bursts of
 * one path run, and how much leaves before any ACK.
 *
 * As in cases_planes.c the tester plays a two-plane peer whose plane 1 is
 * its entropy socket 1 (DEVICE planes=2, AGENT-25).  The path-window cases
 * give the IUT target_qdelay 100 ms, so that only the tester's CE echoes
 * (not a loaded host's delays) lower weights and windows, and advertise a
 * max_ack_delay of 90 ms where ACKs are withheld, so that the withheld
 * packets wait out their loss guard (LOSS-7 (c)) and their timeout while
 * the case counts them.
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

#define PKT (1024u + 80u) /* a full data packet on the wire (CC-2) */

/* A connection of the IUT with `opts`, the tester's two planes agreed
 * (plane 0 on the MetaRoCE port, plane 1 on entropy socket 1). */
static struct ct_conn *pp_two_plane_conn(struct ct *t, const char *opts)
{
    struct ct_conn *c = ct_conn_new(t, opts);

    c->par.nplanes = 2;
    ct_plane_entry(t, -1, &c->par.planes[0]);
    ct_plane_entry(t, 1, &c->par.planes[1]);
    ct_conn_connect(c);
    CT_EQ(t, "CONNECT_RESP PLANES Count", 2, c->hs.u.conn.nplanes);
    return c;
}

/* ACK of the IUT's data packet p, cumulative up to p only (so that the
 * echoes of later packets are still attributed to their paths, PATH-5),
 * echoing it with CE if ce (REL-17). */
static void pp_ack(struct ct_conn *c, const struct mrw_pkt *p, int ce)
{
    struct mrw_pkt a;
    unsigned words = 0;

    c->rx_count++;
    c->ce_count += ce != 0;
    ct_pkt_ctl(c, &a, MROCE_OP_ACK);
    if (mrw_psn_diff(c->rcv_cum, p->base.psn + 1) > 0) {
        a.u.ack.cum_psn = p->base.psn + 1;
    } else {
        a.u.ack.cum_psn = c->rcv_cum;
        for (unsigned k = 1; k < CT_RCV_BITS; k++)
            if (c->rcv_bits[k / 8] & (1u << (k % 8))) {
                unsigned b = k - 1;
                a.u.ack.sack[b / 32] |= 1u << (b % 32);
                words = b / 32 + 1;
            }
    }
    a.u.ack.sack_words = (uint8_t)words;
    a.u.ack.echo_psn = p->base.psn;
    a.u.ack.echo_ts = p->base.tsval;
    a.u.ack.echo_entropy = p->base.entropy;
    a.u.ack.echo_flags = ce ? MROCE_ECHO_CE : 0;
    a.u.ack.ce_count = c->ce_count;
    a.u.ack.rx_count = c->rx_count;
    a.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    a.base.entropy = p->base.entropy;
    ct_send(c, &a);
}

static void pp_post_write(struct ct *t, struct ct_conn *c,
                          const struct ct_mr *mr, uint64_t wrid, unsigned npk)
{
    ct_agent(t,
             "POST_SEND qp=%d wrid=%llu op=WRITE mr=%d off=0 len=%u "
             "raddr=0x40000 rkey=0x7a",
             c->aqp, (unsigned long long)wrid, mr->id, 1024u * npk);
}

/* The next data packet of the IUT on c within RL_WAIT (a first
 * transmission unless it has RETX), or NULL once the WRITE wrid has
 * completed successfully; fails the case if neither happens in 20 s. */
static const struct ct_rx *pp_next_data(struct ct *t, struct ct_conn *c,
                                        uint64_t wrid, uint64_t end,
                                        unsigned *n)
{
    for (;;) {
        const struct ct_rx *rx = ct_next(c, 20);
        if (!rx || ++*n % 64 == 0) {
            struct ct_wc w = ct_poll(t, c->aqp, "send", 0);
            if (w.n) {
                CT_REQUIRE(t, w.wrid == wrid && !strcmp(w.status, "SUCCESS"),
                           "WRITE completed with %s", w.status);
                return NULL;
            }
            CT_REQUIRE(t, ct_now_ns() < end,
                       "the IUT's WRITE did not complete in 20 s");
        }
        if (rx && mrw_opcode_has_psn(rx->p.base.opcode) &&
            rx->p.base.opcode != MROCE_OP_ACK)
            return rx;
    }
}

CT_CASE(planes_slot_homes, "PATH-18 PATH-19 PATH-3",
        "two planes agreed, 8 paths, no PATH-16 reuse: the first 8 PSNs of "
        "a WRITE of the IUT (the round robin's first sweep, slots 0..7 in "
        "turn) carry 8 distinct entropies, PSN k of plane k mod 2 (entropy "
        "mod 2): slot s at home on plane s mod P, 4 slots per plane")
{
    struct ct_mr mr;
    struct ct_conn *c;
    uint16_t ent[8];
    uint32_t psn0;
    int got = 0, have = 0;

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 65536, "lw", 0);
    c = pp_two_plane_conn(t, "npaths=8 mtu=1024 path_reuse=0 path_burst=1 "
                             "target_qdelay_us=100000");
    psn0 = c->rcv_cum;
    pp_post_write(t, c, &mr, 1, 32);
    /* The planes arrive on two sockets, read in either order: PSNs give
     * the order of sending. */
    while (got < 32) {
        const struct ct_rx *rx = ct_expect_data(c, RL_WAIT);
        uint32_t k = rx->p.base.psn - psn0;
        if (rx->p.base.flags & MROCE_F_RETX)
            continue;
        if (k < 8 && !(have & (1 << k))) {
            ent[k] = rx->p.base.entropy;
            have |= 1 << k;
        }
        got++;
    }
    CT_REQUIRE(t, have == 0xff, "the first 8 PSNs did not all arrive");
    ct_log(t, "first sweep: %u %u %u %u %u %u %u %u", ent[0], ent[1], ent[2],
           ent[3], ent[4], ent[5], ent[6], ent[7]);
    for (int k = 0; k < 8; k++) {
        for (int j = 0; j < k; j++)
            CT_REQUIRE(t, ent[j] != ent[k],
                       "PSNs %d and %d of the first sweep share Entropy %u: "
                       "8 slots are 8 paths (PATH-1)",
                       j, k, ent[k]);
        CT_REQUIRE(t, ent[k] % 2u == (unsigned)k % 2u,
                   "PSN %d of the first sweep (slot %d) has Entropy %u, plane "
                   "%u: slot s is at home on plane s mod 2 (PATH-18)",
                   k, k, ent[k], ent[k] % 2u);
    }
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
}

CT_CASE(planes_weight_share, "PATH-24 PATH-6",
        "two planes agreed, 8 paths (4 on each), fixed window (no per-path "
        "windows), no reuse, target_qdelay 100 ms: the tester echoes every "
        "packet of plane 1 with CE during a 1024-packet WRITE of the IUT, so "
        "plane 1's slots fall to weight 1 while plane 0's stay at 8; after "
        "the first 256 packets plane 1 gets under a quarter of the packets "
        "(its weights' share is a ninth, a plane in turn would get half), "
        "and some")
{
    struct ct_mr mr;
    struct ct_conn *c;
    uint64_t end;
    unsigned n = 0, seen = 0, on[2] = {0, 0};
    const struct ct_rx *rx;

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 1u << 20, "lw", 0);
    c = pp_two_plane_conn(
        t, "npaths=8 mtu=1024 cc=fixed path_reuse=0 path_burst=1 "
           "target_qdelay_us=100000");
    c->auto_ack = 0;
    end = ct_now_ns() + (uint64_t)ct_ms(t, 20000) * 1000000u;
    pp_post_write(t, c, &mr, 1, 1024);
    while ((rx = pp_next_data(t, c, 1, end, &n)) != NULL) {
        struct mrw_pkt p = rx->p;
        int plane = rx->sock == 1;
        CT_REQUIRE(t, rx->sock == -1 || rx->sock == 1,
                   "data arrived on entropy socket %d, not a plane", rx->sock);
        p.payload = NULL;
        if (++seen > 256)
            on[plane]++;
        pp_ack(c, &p, plane);
    }
    c->auto_ack = 1;
    ct_log(t, "after the first 256 packets: plane 0 %u, plane 1 %u", on[0],
           on[1]);
    CT_REQUIRE(t, on[0] + on[1] >= 512, "only %u packets after the first 256",
               on[0] + on[1]);
    CT_REQUIRE(t, on[1] * 4 < on[0] + on[1],
               "plane 1, every echo CE-marked, got %u of %u packets: planes "
               "are chosen in proportion to their slots' weights (PATH-24)",
               on[1], on[0] + on[1]);
    CT_REQUIRE(t, on[1] > 0, "plane 1 got nothing at weight 1");
}

CT_CASE(planes_unusable_never_sent, "PATH-24 PATH-29 CONN-30",
        "DEVICE planes=2 (IPv4); the tester lists plane 1 at ::1, an address "
        "the IUT cannot use: the IUT still agrees to two planes, and the "
        "first transmissions of a 64-packet WRITE over 8 paths all arrive "
        "on the tester's plane-0 port with even entropies (plane 0), 8 "
        "distinct ones (every slot of the unusable plane moved, none "
        "staying)")
{
    struct ct_mr mr;
    struct ct_conn *c;
    uint16_t ent[8];
    unsigned nent = 0;
    int got = 0;

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 65536, "lw", 0);
    c = ct_conn_new(t, "npaths=8 mtu=1024 path_reuse=0 path_burst=1 "
                       "target_qdelay_us=100000");
    c->par.nplanes = 2;
    ct_plane_entry(t, -1, &c->par.planes[0]);
    ct_plane_entry(t, 1, &c->par.planes[1]);
    memset(c->par.planes[1].addr, 0, 16);
    c->par.planes[1].addr[15] = 1; /* ::1, not IPv4-mapped */
    ct_conn_connect(c);
    CT_EQ(t, "CONNECT_RESP PLANES Count", 2, c->hs.u.conn.nplanes);
    pp_post_write(t, c, &mr, 1, 64);
    while (got < 64) {
        const struct ct_rx *rx = ct_expect_data(c, RL_WAIT);
        uint16_t e = rx->p.base.entropy;
        unsigned k = 0;
        if (rx->p.base.flags & MROCE_F_RETX)
            continue;
        CT_REQUIRE(t, rx->sock == -1 && e % 2u == 0,
                   "PSN %u, Entropy %u (plane %u), arrived on %s%d: a plane "
                   "whose peer address the IUT cannot use is never sent on "
                   "(PATH-24)",
                   rx->p.base.psn, e, e % 2u,
                   rx->sock < 0 ? "the MetaRoCE port " : "entropy socket ",
                   rx->sock);
        while (k < nent && ent[k] != e)
            k++;
        if (k == nent && nent < 8)
            ent[nent++] = e;
        got++;
    }
    CT_REQUIRE(t, nent == 8,
               "64 packets over 8 paths used %u entropies: the unusable "
               "plane's slots move to plane 0, none staying (PATH-29)",
               nent);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
}

/* What moved_phase saw of plane 0: each entropy's count and where in
 * plane 0's packets it first and fourth appeared. */
#define MV_MAX 64
struct moved_log {
    unsigned n, nent;
    uint16_t ent[MV_MAX];
    unsigned cnt[MV_MAX], first[MV_MAX], fourth[MV_MAX];
};

static void moved_note(struct moved_log *l, uint16_t e)
{
    unsigned i = 0;

    while (i < l->nent && l->ent[i] != e)
        i++;
    if (i == l->nent) {
        if (l->nent == MV_MAX)
            return;
        l->ent[l->nent++] = e;
        l->cnt[i] = 0;
        l->first[i] = l->n;
    }
    if (++l->cnt[i] == 4)
        l->fourth[i] = l->n;
    l->n++;
}

/* A WRITE of npk packets from the IUT over c's two planes, every packet
 * of plane 0 ACKed cleanly at once; plane 1's are ACKed with CE (drop 0)
 * or lost, unanswered (drop 1).  Plane 0's packets go into *l. */
static void moved_phase(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                        uint64_t wrid, unsigned npk, int drop,
                        struct moved_log *l)
{
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, 20000) * 1000000u;
    unsigned n = 0;

    memset(l, 0, sizeof(*l));
    c->auto_ack = 0;
    pp_post_write(t, c, mr, wrid, npk);
    for (;;) {
        uint8_t bits[CT_RCV_BITS / 8];
        uint32_t cum = c->rcv_cum, rxn = c->rx_count, ce = c->ce_count;
        const struct ct_rx *rx;
        struct mrw_pkt p;
        memcpy(bits, c->rcv_bits, sizeof(bits));
        rx = pp_next_data(t, c, wrid, end, &n);
        if (!rx)
            break;
        CT_REQUIRE(t, rx->sock == -1 || rx->sock == 1,
                   "data arrived on entropy socket %d, not a plane", rx->sock);
        p = rx->p;
        p.payload = NULL;
        if (rx->sock != 1) {
            moved_note(l, p.base.entropy);
            pp_ack(c, &p, 0);
        } else if (!drop) {
            pp_ack(c, &p, 1);
        } else { /* lost on plane 1 */
            c->rcv_cum = cum;
            c->rx_count = rxn;
            c->ce_count = ce;
            memcpy(c->rcv_bits, bits, sizeof(bits));
        }
    }
    c->auto_ack = 1;
}

/* The median, over the entropies of l's plane 0 not in home[0..nhome),
 * of the gap between their first and fourth packets (*ng: how many had
 * 4). */
static unsigned moved_median(const struct moved_log *l, const uint16_t *home,
                             unsigned nhome, unsigned *ng, unsigned *lo,
                             unsigned *hi)
{
    unsigned gaps[MV_MAX], n = 0;

    for (unsigned i = 0; i < l->nent; i++) {
        unsigned k = 0;
        while (k < nhome && home[k] != l->ent[i])
            k++;
        if (k < nhome || l->cnt[i] < 4)
            continue; /* a home slot of plane 0, or one seen too little */
        gaps[n++] = l->fourth[i] - l->first[i];
    }
    for (unsigned i = 1; i < n; i++) /* sort the few gaps */
        for (unsigned j = i; j > 0 && gaps[j - 1] > gaps[j]; j--) {
            unsigned g = gaps[j];
            gaps[j] = gaps[j - 1];
            gaps[j - 1] = g;
        }
    *ng = n;
    *lo = n ? gaps[0] : 0;
    *hi = n ? gaps[n - 1] : 0;
    return n ? gaps[n / 2] : 0;
}

CT_CASE(planes_moved_slot_fresh, "PATH-30 PATH-29 PATH-6",
        "two planes agreed, 8 paths, fixed window, no reuse, target_qdelay "
        "100 ms, min_rto 1 ms: during a 512-packet WRITE of the IUT every "
        "echo of plane 1 is CE-marked (its slots fall to weight 1), then "
        "plane 1 drops everything during a 2048-packet WRITE: the slots that "
        "move to plane 0 (new even entropies) are new paths at weight 8, "
        "so each sends its first 4 packets within 50 of plane 0's (7 slots "
        "at full weight: about 21), not at weight 1's pace; the median over "
        "the moved slots is judged.  A run whose first WRITE saw other than "
        "4 entropies on plane 0 (a loaded host's losses retired or moved "
        "slots) says nothing and is repeated, up to 3 runs")
{
    static struct moved_log l;
    struct ct_mr mr;
    uint16_t home[MV_MAX];

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 2u << 20, "lw", 0);
    for (int run = 1; run <= 3; run++) {
        struct ct_conn *c =
            pp_two_plane_conn(t, "npaths=8 mtu=1024 cc=fixed path_reuse=0 "
                                 "path_burst=1 target_qdelay_us=100000 "
                                 "min_rto_us=1000");
        unsigned nhome, ng, lo, hi, med;
        moved_phase(t, c, &mr, 1, 512, 0, &l);
        nhome = l.nent;
        memcpy(home, l.ent, sizeof(home));
        if (nhome != 4) {
            ct_log(t, "run %d: %u entropies on plane 0 before the failure", run,
                   nhome);
            continue;
        }
        moved_phase(t, c, &mr, 2, 2048, 1, &l);
        med = moved_median(&l, home, nhome, &ng, &lo, &hi);
        ct_log(t,
               "run %d: plane 0 had %u entropies during the failure, %u of "
               "them new with 4 packets; their first-to-fourth gaps: %u .. "
               "%u",
               run, l.nent, ng, lo, hi);
        CT_REQUIRE(t, ng >= 2,
                   "only %u new entropies on plane 0 carried 4 packets while "
                   "plane 1 was down: its slots but one move there (PATH-29)",
                   ng);
        CT_REQUIRE(t, med <= 50,
                   "the slots moved to plane 0 took a median of %u of its "
                   "packets to send their first 4 (7 slots at weight 8: "
                   "about 21): a moved slot is a new path, at weight 8 "
                   "(PATH-30)",
                   med);
        return;
    }
    ct_skip(t, "in 3 runs plane 0 never kept its 4 entropies through the "
               "first WRITE");
}

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
    pp_post_write(t, c, &mr, 1, 1024);
    while ((rx = pp_next_data(t, c, 1, end, &n)) != NULL) {
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
        pp_ack(c, &p, on_x);
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
static void pp_mark_rcv(struct ct_conn *c, uint32_t psn)
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

/* One phase of cc_path_fresh_window: ACKs every packet on path *a at
 * once, none on *b (lost to the tester's receive state, their PSNs kept in
 * bpsn), until the IUT's PSNs reach FRESH_SPAN beyond where the phase
 * began.  The first two entropies seen name a and b if unset.  Returns the
 * packets on b, or -1 if a retransmission or a third entropy appeared (a
 * loss or a retirement: the run says nothing about b's window). */
static int fresh_phase(struct ct *t, struct ct_conn *c, int *have, uint16_t *a,
                       uint16_t *b, uint32_t *bpsn, struct mrw_pkt *last_a)
{
    uint32_t from = c->rcv_cum;
    int nb = 0;

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
        if (p.base.flags & MROCE_F_RETX)
            return -1;
        if (*have == 0) {
            *a = p.base.entropy; /* the first path seen is A */
            *have = 1;
        } else if (*have == 1 && p.base.entropy != *a) {
            *b = p.base.entropy;
            *have = 2;
        }
        if (p.base.entropy == *a) {
            ct_send_ack(c, &p);
            *last_a = p;
        } else if (*have == 2 && p.base.entropy == *b) {
            c->rcv_cum = cum; /* withheld: lost to our receive state */
            c->rx_count = rxn;
            memcpy(c->rcv_bits, bits, sizeof(bits));
            if (nb < FRESH_MAX_B)
                bpsn[nb] = p.base.psn;
            nb++;
        } else {
            return -1;
        }
        if (mrw_psn_diff(p.base.psn, from) >= FRESH_SPAN)
            return nb;
    }
}

CT_CASE(cc_path_fresh_window, "CC-22 CC-23 CC-20",
        "IUT requester over 2 paths (init_cwnd 64 KiB, no reuse, "
        "target_qdelay 100 ms) with a 512-packet WRITE to a tester that "
        "advertises max_ack_delay 90 ms, ACKs every packet of path A at once "
        "and none of path B: B, starting at cwnd / npaths = 32 KiB, holds "
        "at most 34 packets (30 fit) where the connection's window allows "
        "about 59; then one ACK covers B's packets (30 acknowledged on a "
        "window of 30 grow it by one packet) and B, withheld again, holds "
        "at most 4 more than before.  A run with a retransmission or a "
        "retirement says nothing and is repeated, up to 3 runs")
{
    static uint32_t bpsn[FRESH_MAX_B];
    int nb1 = -1, nb2 = -1;

    for (int run = 1; run <= 3; run++) {
        struct ct_mr mr = ct_mr_reg(t, 1u << 19, "lw", 0);
        struct ct_conn *c =
            ct_conn_new(t, "npaths=2 mtu=1024 path_reuse=0 path_burst=1 "
                           "min_rto_us=200000 target_qdelay_us=100000");
        struct mrw_pkt last_a;
        uint16_t a = 0, b = 0;
        int have = 0;

        c->par.max_ack_delay = 90000000; /* ns: LOSS-7's floor, LOSS-8 */
        ct_conn_connect(c);
        c->auto_ack = 0;
        pp_post_write(t, c, &mr, 1, 512);
        nb1 = fresh_phase(t, c, &have, &a, &b, bpsn, &last_a);
        if (nb1 < 0) {
            ct_log(t, "run %d: a loss or retirement in phase 1", run);
            continue;
        }
        for (int i = 0; i < nb1 && i < FRESH_MAX_B; i++)
            pp_mark_rcv(c, bpsn[i]);
        ct_send_ack(c, &last_a); /* B's packets acknowledged, cleanly */
        nb2 = fresh_phase(t, c, &have, &a, &b, bpsn, &last_a);
        ct_log(t, "run %d: path B held %d packets, %d once they were acked",
               run, nb1, nb2);
        if (nb2 < 0)
            continue;
        CT_REQUIRE(t, nb1 <= 34 && nb1 >= 20,
                   "path B, never acknowledged, carried %d packets: a new "
                   "path's window is cwnd / npaths, 32 KiB or 30 packets "
                   "(CC-22, CC-20)",
                   nb1);
        CT_REQUIRE(t, nb2 <= nb1 + 4 && nb2 + 1 >= nb1,
                   "path B held %d packets, then %d once they were "
                   "acknowledged cleanly: a window acknowledged grows the "
                   "path by one full packet (CC-22)",
                   nb1, nb2);
        return;
    }
    ct_skip(t, "3 runs each had a retransmission or a retirement");
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
    pp_post_write(t, c, mr, 1, 100);
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
