/*
 * cases_planes_paths.c - the paths of a connection over planes
 * (multipath.md section 7) judged from the entropies of the IUT's data
 * packets: slot s at home on plane s mod P (PATH-18), planes shared in
 * proportion to their slots' weights and a peer plane the IUT cannot
 * address never sent on (PATH-24), and a slot that moves to another plane
 * starting there as a new path, at full weight (PATH-30).
 *
 * As in cases_planes.c the tester plays a two-plane peer whose plane 1 is
 * its entropy socket 1 (DEVICE planes=2, AGENT-25); a plane failure is the
 * tester dropping what arrives there.  Packets of the two planes arrive on
 * two sockets and are read in either order, so order within the spray is
 * judged by PSN, or within one plane.  The IUT's QPs get target_qdelay
 * 100 ms, so that only the tester's CE echoes (not a loaded host's
 * delays) lower weights, and path_reuse 0, so that the round robin alone
 * chooses (PATH-3).
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

/* Connects c with the tester's two planes agreed (plane 0 on the
 * MetaRoCE port, plane 1 on entropy socket 1); pp_two_plane_conn: a new
 * connection of the IUT with `opts` so connected. */
static void pp_connect_planes(struct ct *t, struct ct_conn *c)
{
    c->par.nplanes = 2;
    ct_plane_entry(t, -1, &c->par.planes[0]);
    ct_plane_entry(t, 1, &c->par.planes[1]);
    ct_conn_connect(c);
    CT_EQ(t, "CONNECT_RESP PLANES Count", 2, c->hs.u.conn.nplanes);
}

static struct ct_conn *pp_two_plane_conn(struct ct *t, const char *opts)
{
    struct ct_conn *c = ct_conn_new(t, opts);

    pp_connect_planes(t, c);
    return c;
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
    ch_post_write(t, c, &mr, 1, 0, 1024u * 32);
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
        "windows), no reuse, target_qdelay 100 ms, the tester's "
        "max_ack_delay 90 ms: the tester echoes every "
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
    c = ct_conn_new(t, "npaths=8 mtu=1024 cc=fixed path_reuse=0 "
                       "path_burst=1 target_qdelay_us=100000");
    /* Nothing is lost here: a late ACK must not count as a loss, which
     * would lower weights or retire slots (PATH-6, PATH-9). */
    c->par.max_ack_delay = 90000000;
    pp_connect_planes(t, c);
    c->auto_ack = 0;
    end = ct_now_ns() + (uint64_t)ct_ms(t, 20000) * 1000000u;
    ch_post_write(t, c, &mr, 1, 0, 1024u * 1024);
    while ((rx = ch_next_data_until_done(t, c, 1, end, &n)) != NULL) {
        struct mrw_pkt p = rx->p;
        int plane = rx->sock == 1;
        CT_REQUIRE(t, rx->sock == -1 || rx->sock == 1,
                   "data arrived on entropy socket %d, not a plane", rx->sock);
        p.payload = NULL;
        if (++seen > 256)
            on[plane]++;
        ch_ack_upto(c, &p, plane);
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
    ch_post_write(t, c, &mr, 1, 0, 1024u * 64);
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
#define MV_TAIL 64
struct moved_log {
    unsigned n, nent;
    uint16_t ent[MV_MAX];
    unsigned cnt[MV_MAX], first[MV_MAX], fourth[MV_MAX];
    uint16_t tail[MV_TAIL]; /* the entropies of the last MV_TAIL */
    unsigned nbefore;       /* ... as they were when plane 1 failed */
    uint16_t before[MV_TAIL];
    unsigned nent_before[2]; /* distinct entropies per plane until then */
};

static void moved_note(struct moved_log *l, uint16_t e)
{
    unsigned i = 0;

    l->tail[l->n % MV_TAIL] = e;
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
 * of plane 0 ACKed cleanly at once, plane 1's ACKed with CE for the
 * first `fail_at` packets (of both planes) and lost, unanswered, from
 * then on.  Plane 0's packets from then on go into *l, its last MV_TAIL
 * before into l->before. */
static void moved_phase(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                        uint64_t wrid, unsigned npk, unsigned fail_at,
                        struct moved_log *l)
{
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, 20000) * 1000000u;
    unsigned n = 0, seen = 0, nent[2] = {0, 0};
    uint16_t ent[2][MV_MAX];
    int drop = 0;

    memset(l, 0, sizeof(*l));
    c->auto_ack = 0;
    ch_post_write(t, c, mr, wrid, 0, 1024u * npk);
    for (;;) {
        uint8_t bits[CT_RCV_BITS / 8];
        uint32_t cum = c->rcv_cum, rxn = c->rx_count, ce = c->ce_count;
        const struct ct_rx *rx;
        struct mrw_pkt p;
        memcpy(bits, c->rcv_bits, sizeof(bits));
        rx = ch_next_data_until_done(t, c, wrid, end, &n);
        if (!rx)
            break;
        CT_REQUIRE(t, rx->sock == -1 || rx->sock == 1,
                   "data arrived on entropy socket %d, not a plane", rx->sock);
        p = rx->p;
        p.payload = NULL;
        if (!drop && ++seen > fail_at) { /* plane 1 fails now */
            unsigned nb = l->n < MV_TAIL ? l->n : MV_TAIL;
            uint16_t before[MV_TAIL];
            memcpy(before, l->tail, sizeof(before));
            memset(l, 0, sizeof(*l));
            memcpy(l->before, before, sizeof(before));
            l->nbefore = nb;
            l->nent_before[0] = nent[0];
            l->nent_before[1] = nent[1];
            drop = 1;
        }
        if (!drop) { /* the distinct entropies of each plane so far */
            int pl = rx->sock == 1;
            unsigned k = 0;
            while (k < nent[pl] && ent[pl][k] != p.base.entropy)
                k++;
            if (k == nent[pl] && k < MV_MAX)
                ent[pl][nent[pl]++] = p.base.entropy;
        }
        if (rx->sock != 1) {
            moved_note(l, p.base.entropy);
            ch_ack_upto(c, &p, 0);
        } else if (!drop) {
            ch_ack_upto(c, &p, 1);
        } else { /* lost on plane 1 */
            c->rcv_cum = cum;
            c->rx_count = rxn;
            c->ce_count = ce;
            memcpy(c->rcv_bits, bits, sizeof(bits));
        }
    }
    c->auto_ack = 1;
}

/* The slots moved off a plane that went down reach plane 0 together,
 * each with its first packet within a sweep of the others; a slot of
 * plane 0 retired meanwhile (a loaded host's losses) comes alone.  So the
 * moved ones are the first three new entropies of l (not in
 * home[0..nhome)), if their first packets lie within 16 of plane 0's.
 * Returns the longest of their first-to-fourth gaps (also in *hi, the
 * shortest in *lo), or -1 if they did not come so, or without 4 packets
 * each. */
static int moved_longest(const struct moved_log *l, const uint16_t *home,
                         unsigned nhome, unsigned *lo, unsigned *hi)
{
    unsigned idx[MV_MAX], n = 0, g[3];

    for (unsigned i = 0; i < l->nent; i++) {
        unsigned k = 0;
        while (k < nhome && home[k] != l->ent[i])
            k++;
        if (k == nhome)
            idx[n++] = i; /* in order of first appearance */
    }
    if (n >= 3) {
        const unsigned *e = idx;
        if (l->first[e[2]] - l->first[e[0]] > 16)
            return -1;
        if (l->cnt[e[0]] < 4 || l->cnt[e[1]] < 4 || l->cnt[e[2]] < 4)
            return -1;
        for (int k = 0; k < 3; k++)
            g[k] = l->fourth[e[k]] - l->first[e[k]];
        *lo = g[0] < g[1] ? (g[0] < g[2] ? g[0] : g[2])
                          : (g[1] < g[2] ? g[1] : g[2]);
        *hi = g[0] > g[1] ? (g[0] > g[2] ? g[0] : g[2])
                          : (g[1] > g[2] ? g[1] : g[2]);
        return (int)*hi;
    }
    return -1;
}

CT_CASE(
    planes_moved_slot_fresh, "PATH-30 PATH-29 PATH-6",
    "two planes agreed, 8 paths, fixed window, no reuse, target_qdelay "
    "100 ms, min_rto 1 ms; a 2560-packet WRITE of the IUT: for its first "
    "384 packets every echo of plane 1 is CE-marked (its slots fall to "
    "weight 1), then plane 1 drops everything: the slots that move to "
    "plane 0 (new even entropies) are new paths at weight 8, so each "
    "sends its first 4 packets within 50 of plane 0's (7 slots at full "
    "weight: about 21), not at weight 1's pace; the longest of the moved "
    "slots (the first 3 new entropies, whose first packets must come "
    "within 16 of plane 0's) is judged (a slot retired on plane 1 before it "
    "went down starts at 8 in any case).  A run where plane 0 was not on "
    "4 entropies when plane 1 failed (its last 64 packets; earlier, "
    "plane 1 can be down for a while from an earlier connection's "
    "finding, PATH-27), plane 1 had other than 4 before (plane 0 was "
    "down and moved slots there), or whose first 3 new entropies on "
    "plane 0 did not come together with 4 packets each (a loaded host's "
    "losses retired a slot of plane 0 first, whose fresh entropy starts "
    "at weight 8 in any case), says nothing and is repeated, up to 8 "
    "runs")
{
    static struct moved_log l;
    struct ct_mr mr;
    uint16_t home[MV_MAX];

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 3u << 20, "lw", 0);
    for (int run = 1; run <= 8; run++) {
        struct ct_conn *c =
            ct_conn_new(t, "npaths=8 mtu=1024 cc=fixed path_reuse=0 "
                           "path_burst=1 target_qdelay_us=100000 "
                           "min_rto_us=1000");
        unsigned nhome = 0, lo = 0, hi = 0;
        int med;
        /* A late ACK of up to 1 ms is no loss (LOSS-7's floor): few of a
         * loaded host's, while plane 1's losses are still found within a
         * few ms. */
        c->par.max_ack_delay = 1000000;
        pp_connect_planes(t, c);
        moved_phase(t, c, &mr, 1, 2560, 384, &l);
        for (unsigned i = 0; i < l.nbefore; i++) {
            unsigned k = 0;
            while (k < nhome && home[k] != l.before[i])
                k++;
            if (k == nhome)
                home[nhome++] = l.before[i];
        }
        if (nhome != 4 || l.nent_before[1] != 4) {
            ct_log(t,
                   "run %d: planes 0 and 1 had %u and %u entropies before "
                   "plane 1 failed",
                   run, l.nent_before[0], l.nent_before[1]);
            continue;
        }
        med = moved_longest(&l, home, nhome, &lo, &hi);
        if (med < 0) {
            ct_log(t,
                   "run %d: plane 0 had %u entropies during the failure, "
                   "its first 3 new ones not together with 4 packets each",
                   run, l.nent);
            continue;
        }
        ct_log(t,
               "run %d: plane 0 had %u entropies during the failure; the "
               "three that moved together took %u .. %u packets from their "
               "first to their fourth",
               run, l.nent, lo, hi);
        CT_REQUIRE(t, med <= 50,
                   "a slot moved to plane 0 took %d of its packets to send "
                   "its first 4 (7 slots at weight 8: "
                   "about 21): a moved slot is a new path, at weight 8 "
                   "(PATH-30)",
                   med);
        return;
    }
    ct_skip(t, "in 8 runs the planes never kept their 4 entropies each until "
               "plane 1 failed with exactly 3 slots moving to plane 0 "
               "together");
}
