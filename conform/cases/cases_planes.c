/*
 * cases_planes.c - planes (multipath.md section 7, connection.md section
 * 6) on the wire: the PLANES extension of the handshake, absent with one
 * plane and in a CONNECT_RESP to a CONNECT_REQ without it (CONN-28,
 * CONN-29), and, with two planes agreed, every packet of the IUT on the
 * plane its entropy names, towards the address the tester listed for that
 * plane (PATH-19, PATH-20, CONN-30).
 *
 * The tester has one address, so it plays a two-plane peer whose plane 1
 * is one of its entropy sockets: a packet of the IUT on plane 1 arrives on
 * that socket, one on plane 0 on the tester's MetaRoCE port; a plane
 * failure is the tester dropping what arrives on that socket.  The IUT's
 * planes come from DEVICE planes=2 (AGENT-25); an agent without planes
 * answers ENOTSUP and those cases are skipped.
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

#define CONN_LEN (MROCE_BASE_HDR_LEN + MROCE_CONN_HDR_LEN + MROCE_CRC_LEN)

/* Lists the tester's two planes in c's CONNECT: plane 0 on entropy socket
 * e0 (-1: the MetaRoCE port), plane 1 on entropy socket e1. */
static void two_planes(struct ct_conn *c, int e0, int e1)
{
    c->par.nplanes = 2;
    ct_plane_entry(c->t, e0, &c->par.planes[0]);
    ct_plane_entry(c->t, e1, &c->par.planes[1]);
}

CT_CASE(planes_one_plane_no_ext, "CONN-28 CONN-29 PATH-17",
        "an IUT with one plane (window 256: no SACK extension either): its "
        "CONNECT_REQ carries no PLANES (68 bytes), and its CONNECT_RESP to a "
        "CONNECT_REQ listing two planes carries none either")
{
    struct ct_conn *c = ct_conn_new(t, "window=256");
    struct ct_conn *d;

    ct_conn_accept(c);
    CT_EQ(t, "CONNECT_REQ PLANES Count (absent with one plane)", 0,
          c->hs.u.conn.nplanes);
    CT_EQ(t, "CONNECT_REQ Pkt Len", CONN_LEN, c->hs.base.pkt_len);
    d = ct_conn_new(t, "");
    two_planes(d, -1, 1);
    ct_conn_connect(d);
    CT_EQ(t, "CONNECT_RESP PLANES Count (one plane: P = 1, none)", 0,
          d->hs.u.conn.nplanes);
    CT_EQ(t, "CONNECT_RESP Pkt Len", CONN_LEN, d->hs.base.pkt_len);
}

CT_CASE(planes_resp_iff_req, "CONN-29 CONN-28",
        "DEVICE planes=2: no PLANES in the CONNECT_RESP to a CONNECT_REQ "
        "without it; PLANES with Count 2 (plane 0 at the IUT's port) to one "
        "listing two planes, and in the IUT's own CONNECT_REQ")
{
    struct ct_conn *c, *d, *e;

    ct_agent(t, "DEVICE planes=2");
    c = ct_conn_new(t, "");
    ct_conn_connect(c);
    CT_EQ(t, "CONNECT_RESP PLANES Count to a CONNECT_REQ without PLANES", 0,
          c->hs.u.conn.nplanes);
    CT_EQ(t, "CONNECT_RESP Pkt Len", CONN_LEN, c->hs.base.pkt_len);
    d = ct_conn_new(t, "");
    two_planes(d, -1, 1);
    ct_conn_connect(d);
    CT_EQ(t, "CONNECT_RESP PLANES Count to a two-plane CONNECT_REQ", 2,
          d->hs.u.conn.nplanes);
    CT_EQ(t, "CONNECT_RESP plane 0 UDP Port (the IUT's MetaRoCE port)",
          ct_iut_port(t), d->hs.u.conn.planes[0].port);
    CT_REQUIRE(t, d->hs.u.conn.planes[1].port != 0,
               "CONNECT_RESP plane 1 has UDP Port 0");
    e = ct_conn_new(t, "");
    ct_conn_accept(e);
    CT_EQ(t, "IUT's CONNECT_REQ PLANES Count with two planes", 2,
          e->hs.u.conn.nplanes);
}

CT_CASE(planes_data_on_named_plane, "PATH-19 PATH-20 CONN-30",
        "two planes agreed, the tester's plane 1 on entropy socket 1 and "
        "its plane-0 entry on socket 2: a 32-packet WRITE of the IUT sends "
        "odd entropies to socket 1, even ones to the MetaRoCE port (the "
        "handshake's address), some of each")
{
    struct ct_mr mr;
    struct ct_conn *c;
    int got = 0, on[2] = {0, 0};

    ct_agent(t, "DEVICE planes=2");
    if (ct_num_entropies(t) < 3)
        ct_skip(t, "needs 3 tester entropy sockets");
    mr = ct_mr_reg(t, 65536, "lw", 0);
    c = ct_conn_new(t, "npaths=8 mtu=1024");
    two_planes(c, 2, 1);
    ct_conn_connect(c);
    CT_EQ(t, "CONNECT_RESP PLANES Count", 2, c->hs.u.conn.nplanes);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=%u "
             "raddr=0x40000 rkey=0x7a",
             c->aqp, mr.id, 1024u * 32);
    while (got < 32) {
        const struct ct_rx *rx = ct_expect_data(c, RL_WAIT);
        unsigned plane = rx->p.base.entropy % 2u;
        if (rx->p.base.flags & MROCE_F_RETX)
            continue;
        CT_REQUIRE(t, rx->sock == (plane ? 1 : -1),
                   "data PSN %u, Entropy %u (plane %u) arrived on %s%d, "
                   "expected %s (PATH-20, CONN-30)",
                   rx->p.base.psn, rx->p.base.entropy, plane,
                   rx->sock < 0 ? "the MetaRoCE port " : "entropy socket ",
                   rx->sock,
                   plane ? "entropy socket 1 (our plane 1)"
                         : "the MetaRoCE port (plane 0 is the handshake's)");
        on[plane]++;
        got++;
    }
    ct_log(t, "plane 0: %d packets, plane 1: %d", on[0], on[1]);
    CT_REQUIRE(t, on[0] > 0 && on[1] > 0,
               "a 32-packet WRITE over 8 paths on 2 planes used only plane "
               "%d (PATH-18, PATH-24)",
               on[0] ? 0 : 1);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
}

/* An entropy socket of the tester whose port has the given parity, or
 * -1. */
static int socket_of_parity(struct ct *t, unsigned parity)
{
    for (int e = 0; e < ct_num_entropies(t); e++)
        if (ct_entropy(t, e) % 2u == parity)
            return e;
    return -1;
}

CT_CASE(planes_ack_on_echoed_plane, "PATH-20 REL-22",
        "two planes agreed: the ACK of a WRITE sent with an odd entropy "
        "arrives on the tester's plane-1 socket, that of one with an even "
        "entropy on its MetaRoCE port (plane 0)")
{
    struct ct_mr mr;
    struct ct_conn *c;
    int odd, even;
    uint8_t d[64];

    ct_agent(t, "DEVICE planes=2");
    odd = socket_of_parity(t, 1);
    even = socket_of_parity(t, 0);
    if (odd < 0 || even < 0)
        ct_skip(t, "the tester's entropy ports are all of one parity");
    mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    c = ct_conn_new(t, "");
    two_planes(c, -1, odd);
    ct_conn_connect(c);
    CT_EQ(t, "CONNECT_RESP PLANES Count", 2, c->hs.u.conn.nplanes);
    ct_pattern(d, sizeof(d), 71);
    for (int k = 0; k < 2; k++) {
        struct mrw_pkt p;
        int from = k == 0 ? odd : even;
        uint32_t psn = c->snd_nxt;
        const struct ct_rx *rx;
        ct_rl_write_pkt(c, &p, &mr, 64u * (uint32_t)k, d, sizeof(d), psn,
                        MROCE_F_ACK_REQ);
        p.base.entropy = ct_entropy(t, from);
        ct_send(c, &p);
        c->snd_nxt++;
        c->msn++;
        rx = ct_expect_ack(c, psn + 1, RL_WAIT);
        CT_EQ(t, "ACK Entropy (REL-22)", ct_entropy(t, from),
              rx->p.base.entropy);
        CT_REQUIRE(t, rx->sock == (k == 0 ? odd : -1),
                   "ACK echoing Entropy %u (plane %u) arrived on %s%d, "
                   "expected %s (PATH-20)",
                   rx->p.base.entropy, rx->p.base.entropy % 2u,
                   rx->sock < 0 ? "the MetaRoCE port " : "entropy socket ",
                   rx->sock,
                   k == 0 ? "our plane-1 socket" : "the MetaRoCE port");
    }
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

/* The IUT's receive state in c, kept aside so that a packet can be
 * "lost" after ct_next has recorded it. */
struct rcv_snap {
    uint32_t cum, rx_count, ce_count;
    uint8_t bits[CT_RCV_BITS / 8];
};

static void snap_take(const struct ct_conn *c, struct rcv_snap *s)
{
    s->cum = c->rcv_cum;
    s->rx_count = c->rx_count;
    s->ce_count = c->ce_count;
    memcpy(s->bits, c->rcv_bits, sizeof(s->bits));
}

static void snap_put(struct ct_conn *c, const struct rcv_snap *s)
{
    c->rcv_cum = s->cum;
    c->rx_count = s->rx_count;
    c->ce_count = s->ce_count;
    memcpy(c->rcv_bits, s->bits, sizeof(s->bits));
}

/* What write_over_planes saw, for the cases that look closer: the
 * distinct entropies per plane, every data packet on plane 1 (when the
 * tester read it, whether it was a retransmission), and when a PSN that
 * had already arrived on plane 0 arrived again (a spurious
 * retransmission: the IUT took a packet of plane 0 for lost). */
#define PL_MAX_ENT 256
#define PL_MAX_P1 4096
#define PL_MAX_PSN 16384
#define PL_MAX_SPUR 256
#define PL_TAIL 512  /* each plane's last packets, for its slots in use */
#define PL_BLOCK 128 /* ... judged in blocks of this many */
struct plane_log {
    unsigned nent[2];
    uint16_t ent[2][PL_MAX_ENT];
    unsigned ntail[2];
    uint16_t tail[2][PL_TAIL]; /* entropies of each plane's last packets */
    unsigned n1;
    uint64_t t1[PL_MAX_P1];
    uint8_t retx1[PL_MAX_P1];
    uint32_t psn0; /* the first PSN of the WRITE */
    uint8_t got0[PL_MAX_PSN / 8];
    unsigned nspur;
    uint64_t spur[PL_MAX_SPUR];
};

/* Notes a data packet of PSN psn that arrived on plane `plane`. */
static void log_psn(struct plane_log *l, unsigned plane, uint32_t psn)
{
    uint32_t r = psn - l->psn0;

    if (r >= PL_MAX_PSN)
        return;
    if (l->got0[r / 8] & (1u << (r % 8))) {
        if (l->nspur < PL_MAX_SPUR)
            l->spur[l->nspur++] = ct_now_ns();
    } else if (plane == 0) {
        l->got0[r / 8] |= (uint8_t)(1u << (r % 8));
    }
}

static void log_entropy(struct plane_log *l, unsigned plane, uint16_t e)
{
    l->tail[plane][l->ntail[plane]++ % PL_TAIL] = e;
    for (unsigned i = 0; i < l->nent[plane]; i++)
        if (l->ent[plane][i] == e)
            return;
    if (l->nent[plane] < PL_MAX_ENT)
        l->ent[plane][l->nent[plane]++] = e;
}

/* The slots a plane sprays over now: the median, over its last 4 blocks
 * of PL_BLOCK packets, of the distinct entropies in a block (fewer blocks
 * if it had fewer).  Over a whole transfer the count of entropies also
 * takes in those that slots retired or recycled (PATH-16) left behind, and
 * one block can hold a retirement or two; the median of four rarely does. */
static unsigned tail_distinct(const struct plane_log *l, unsigned plane)
{
    const uint16_t *tail = l->tail[plane];
    unsigned n = l->ntail[plane], nb = n / PL_BLOCK, use = nb < 4 ? nb : 4,
             d[4], r;

    if (nb > PL_TAIL / PL_BLOCK)
        nb = PL_TAIL / PL_BLOCK; /* older blocks are overwritten */
    if (use > nb)
        use = nb;
    for (unsigned b = 0; b < use; b++) {
        /* Block b counted back from the newest complete one. */
        unsigned first = (n / PL_BLOCK - 1 - b) * PL_BLOCK;
        d[b] = 0;
        for (unsigned i = 0; i < PL_BLOCK; i++) {
            uint16_t e = tail[(first + i) % PL_TAIL];
            unsigned j = 0;
            while (j < i && tail[(first + j) % PL_TAIL] != e)
                j++;
            d[b] += j == i;
        }
    }
    if (!use)
        return 0;
    for (unsigned i = 1; i < use; i++) /* sort the few counts */
        for (unsigned j = i; j > 0 && d[j - 1] > d[j]; j--) {
            r = d[j];
            d[j] = d[j - 1];
            d[j - 1] = r;
        }
    return d[use / 2];
}

/* Posts a WRITE of npk packets (MTU 1024) from the IUT and answers its
 * data until the WRITE completes: packets arriving on the tester's plane-1
 * socket (entropy socket 1) are dropped unanswered when drop1 (as if plane
 * 1 had failed), every other data packet is ACKed at once.  Counts the
 * data packets (all transmissions) per plane into on[2] and logs them
 * under `what`, and into *pl if not NULL; returns the milliseconds it
 * took. */
static uint64_t write_over_planes_log(struct ct *t, struct ct_conn *c,
                                      const struct ct_mr *mr, uint64_t wrid,
                                      unsigned npk, int drop1, const char *what,
                                      unsigned on[2], struct plane_log *pl)
{
    uint64_t t0 = ct_now_ns();
    uint64_t end = t0 + (uint64_t)ct_ms(t, 20000) * 1000000u;
    unsigned n = 0;

    c->auto_ack = 0;
    on[0] = on[1] = 0;
    if (pl)
        pl->psn0 = c->rcv_cum;
    ct_agent(t,
             "POST_SEND qp=%d wrid=%llu op=WRITE mr=%d off=0 len=%u "
             "raddr=0x40000 rkey=0x7a",
             c->aqp, (unsigned long long)wrid, mr->id, 1024u * npk);
    for (;;) {
        struct rcv_snap s;
        const struct ct_rx *rx;
        snap_take(c, &s);
        rx = ct_next(c, 20);
        if (!rx || ++n % 64 == 0) {
            struct ct_wc w = ct_poll(t, c->aqp, "send", 0);
            if (w.n) {
                CT_REQUIRE(t, w.wrid == wrid && !strcmp(w.status, "SUCCESS"),
                           "WRITE completed with %s", w.status);
                break;
            }
            CT_REQUIRE(t, ct_now_ns() < end,
                       "the IUT's %u-packet WRITE did not complete in 20 s",
                       npk);
        }
        if (!rx || !mrw_opcode_has_psn(rx->p.base.opcode))
            continue;
        CT_REQUIRE(t, rx->sock == -1 || rx->sock == 1,
                   "data arrived on entropy socket %d, not a plane", rx->sock);
        on[rx->sock == 1]++;
        if (pl) {
            log_entropy(pl, rx->sock == 1, rx->p.base.entropy);
            log_psn(pl, rx->sock == 1, rx->p.base.psn);
            if (rx->sock == 1 && pl->n1 < PL_MAX_P1) {
                pl->t1[pl->n1] = ct_now_ns();
                pl->retx1[pl->n1++] = (rx->p.base.flags & MROCE_F_RETX) != 0;
            }
        }
        if (rx->sock == 1 && drop1) {
            snap_put(c, &s); /* lost on plane 1 */
            continue;
        }
        ct_send_ack(c, &rx->p);
    }
    c->auto_ack = 1;
    uint64_t ms = (ct_now_ns() - t0) / 1000000u;
    ct_log(t, "%s: plane 0 %u, plane 1 %u packets in %llu ms", what, on[0],
           on[1], (unsigned long long)ms);
    return ms;
}

static uint64_t write_over_planes(struct ct *t, struct ct_conn *c,
                                  const struct ct_mr *mr, uint64_t wrid,
                                  unsigned npk, int drop1, const char *what,
                                  unsigned on[2])
{
    return write_over_planes_log(t, c, mr, wrid, npk, drop1, what, on, NULL);
}

/* A connection of the IUT with `opts`, its two planes agreed. */
static struct ct_conn *two_plane_conn(struct ct *t, const char *opts)
{
    struct ct_conn *c = ct_conn_new(t, opts);
    two_planes(c, -1, 1);
    ct_conn_connect(c);
    CT_EQ(t, "CONNECT_RESP PLANES Count", 2, c->hs.u.conn.nplanes);
    return c;
}

CT_CASE(planes_failed_plane_probes_only, "PATH-21 PATH-22 PATH-23",
        "two planes agreed; plane 1 drops everything during a 2048-packet "
        "WRITE of the IUT: it completes, plane 1 gets at most half of "
        "plane 0's packets and 1024 + 2 per ms (its paths' bursts and "
        "retransmissions until they are all retired, then probes, min_rto "
        "1 ms); then plane 1 works again: it carries at least 1/8 of the "
        "next WRITE")
{
    struct ct_mr mr;
    struct ct_conn *c;
    unsigned on[2];
    uint64_t ms;

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 2u << 20, "lw", 0);
    c = two_plane_conn(t, "npaths=8 mtu=1024 min_rto_us=1000");
    ms = write_over_planes(t, c, &mr, 1, 2048, 1, "plane 1 failed", on);
    CT_REQUIRE(t, on[1] * 2 <= on[0] && on[1] <= 1024 + 2 * ms,
               "a failed plane got %u packets against %u on the other in "
               "%llu ms: it must be marked down once its paths are retired "
               "and get only a probe per RTO (PATH-21, PATH-22)",
               on[1], on[0], (unsigned long long)ms);
    write_over_planes(t, c, &mr, 2, 2048, 0, "plane 1 back", on);
    CT_REQUIRE(t, on[1] * 8 >= on[0] + on[1],
               "a plane that works again got %u of %u packets: the "
               "acknowledgement of its probe must bring it back (PATH-23)",
               on[1], on[0] + on[1]);
}

CT_CASE(planes_quorum_down, "PATH-25 PATH-21",
        "two planes agreed, 128 paths (64 on each plane); plane 1 drops "
        "everything during a 2048-packet WRITE of the IUT: a quorum of its "
        "slots losing packets with no ACK over it takes it down before its "
        "slots are all retired, which takes 3 losses each (PATH-9), so it "
        "gets fewer than 192 packets and its probes, 2 + 1 per 4 ms "
        "(min_rto 1 ms, PATH-28)")
{
    struct ct_mr mr;
    struct ct_conn *c;
    unsigned on[2];
    uint64_t ms;

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 2u << 20, "lw", 0);
    c = two_plane_conn(t, "npaths=128 mtu=1024 min_rto_us=1000");
    ms = write_over_planes(t, c, &mr, 1, 2048, 1, "plane 1 failed", on);
    CT_REQUIRE(t, on[1] < 3 * 64 + 2 + ms / 4,
               "a failed plane got %u packets in %llu ms: a quorum of its "
               "slots with losses and no ACK over it must take it down "
               "(PATH-25)",
               on[1], (unsigned long long)ms);
}

CT_CASE(planes_shared_health, "PATH-27 PATH-28 PATH-23",
        "two connections of the IUT, two planes each; plane 1 drops "
        "everything during a WRITE on the first: a 128-packet WRITE on the "
        "second then gets at most 3 + 1 per 4 ms packets on plane 1 (probes, "
        "min_rto 1 ms, PATH-28), as the endpoint already knows the plane is "
        "down; "
        "once plane 1 works again it carries at least 1/8 of the second's "
        "next WRITE")
{
    struct ct_mr mr;
    struct ct_conn *c, *d;
    unsigned on[2];
    uint64_t ms;

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 2u << 20, "lw", 0);
    c = two_plane_conn(t, "npaths=8 mtu=1024 min_rto_us=1000");
    d = two_plane_conn(t, "npaths=8 mtu=1024 min_rto_us=1000");
    write_over_planes(t, c, &mr, 1, 2048, 1, "first connection, plane 1 failed",
                      on);
    ms = write_over_planes(t, d, &mr, 2, 128, 1,
                           "second connection, plane 1 failed", on);
    CT_REQUIRE(t, on[1] <= 3 + ms / 4,
               "the second connection sent %u packets on a plane the first "
               "had found down, in %llu ms: the endpoint's connections share "
               "plane health (PATH-27)",
               on[1], (unsigned long long)ms);
    write_over_planes(t, d, &mr, 3, 2048, 0, "second connection, plane 1 back",
                      on);
    CT_REQUIRE(t, on[1] * 8 >= on[0] + on[1],
               "a plane that works again got %u of %u packets (PATH-23)", on[1],
               on[0] + on[1]);
}

CT_CASE(planes_rehome_and_return, "PATH-29 PATH-31 PATH-19",
        "two planes agreed, 8 paths (4 on each); plane 1 drops everything "
        "during a 2048-packet WRITE of the IUT: once it is down, 3 of its 4 "
        "slots move to plane 0, which then sprays over at least 6 distinct "
        "(even) entropies per 128 packets (the median of its last 4 "
        "blocks) where it had 4; then plane 1 works again: its "
        "slots come home, and the first of the next WRITEs (up to 6) "
        "with at least 128 packets on plane 1 (and plane 0 up: fewer than 7 "
        "entropies per 128 packets on plane 1, at least 3 on plane 0) sprays "
        "over at least 3 "
        "distinct odd entropies per 128 packets on plane 1 (the median of "
        "its last 4 blocks; not only the probe slot's, which a retirement "
        "can renew) and plane 0 over fewer than 7 per 128 of its packets "
        "(its own 4 slots, not the 3 moved there)")
{
    static struct plane_log l;
    struct ct_mr mr;
    struct ct_conn *c;
    unsigned on[2];

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 2u << 20, "lw", 0);
    c = two_plane_conn(t, "npaths=8 mtu=1024 min_rto_us=1000");
    memset(&l, 0, sizeof(l));
    write_over_planes_log(t, c, &mr, 1, 2048, 1, "plane 1 failed", on, &l);
    ct_log(t,
           "plane 1 failed: %u distinct entropies on plane 0 (%u in a "
           "block of its last %u packets), %u on 1",
           l.nent[0], tail_distinct(&l, 0), PL_BLOCK, l.nent[1]);
    CT_REQUIRE(t, tail_distinct(&l, 0) >= 6,
               "plane 0 sprayed over %u distinct entropies per %u packets "
               "while plane 1 was down (%u in all): the down plane's slots "
               "but one must move to the planes up, each with an entropy of "
               "its new plane (PATH-29)",
               tail_distinct(&l, 0), PL_BLOCK, l.nent[0]);
    /* The plane comes back with the first probe's ACK, which waits up to
     * 4 RTOs (PATH-28), and RTOs grow on a loaded host: up to 6 WRITEs, and
     * the first in which plane 1 carries more than probes is judged, unless
     * plane 1 sprayed over at least 7 distinct entropies at once or plane
     * 0 over fewer than 3 at the end: then plane 0 was down for a while (a
     * loaded host can make its losses look like a failure, PATH-25), its
     * slots on plane 1 too (PATH-29), and an IUT whose slots never go
     * home also has several there.  The
     * slots are counted per block (tail_distinct): spurious losses on a
     * loaded host retire slots, and over a whole WRITE the probe slot
     * alone can leave 4 entropies behind. */
    for (int k = 0; k < 6; k++) {
        memset(&l, 0, sizeof(l));
        write_over_planes_log(t, c, &mr, 2 + (uint64_t)k, 2048, 0,
                              "plane 1 back", on, &l);
        ct_log(t,
               "plane 1 back: %u distinct entropies on plane 0, %u on 1 "
               "(%u and %u in a block of their last %u packets)",
               l.nent[0], l.nent[1], tail_distinct(&l, 0), tail_distinct(&l, 1),
               PL_BLOCK);
        if (on[1] >= PL_BLOCK && tail_distinct(&l, 1) < 7 &&
            tail_distinct(&l, 0) >= 3)
            break;
    }
    if (on[1] < PL_BLOCK || tail_distinct(&l, 1) >= 7 ||
        tail_distinct(&l, 0) < 3)
        ct_skip(t, "no WRITE of 6 with plane 1 up and plane 0 never down");
    CT_REQUIRE(t, tail_distinct(&l, 1) >= 3,
               "plane 1, up again, sprayed over %u distinct entropies per %u "
               "packets (%u in all): the slots moved off it must come back "
               "(PATH-31)",
               tail_distinct(&l, 1), PL_BLOCK, l.nent[1]);
    CT_REQUIRE(t, tail_distinct(&l, 0) < 7,
               "plane 0, with plane 1 up again, still sprayed over %u "
               "distinct entropies per %u packets: the slots moved onto it "
               "must go home (PATH-31)",
               tail_distinct(&l, 0), PL_BLOCK);
}

CT_CASE(planes_retx_off_failing, "PATH-26 PATH-22",
        "two planes agreed, 128 paths (64 on each); plane 1 drops "
        "everything during a 2048-packet WRITE of the IUT: no two "
        "retransmissions arrive on plane 1 within 500 us of each other "
        "(while plane 1 loses everything and plane 0 nothing, a "
        "retransmission keeps off plane 1 until it is down; then only its "
        "probes go there, at most one per RTO, min_rto 1 ms), but within "
        "1 ms of a spurious retransmission (plane 0 had a loss then)")
{
    static struct plane_log l;
    struct ct_mr mr;
    struct ct_conn *c;
    unsigned on[2], close = 0, retx = 0, excused = 0;
    uint64_t last = 0;

    ct_agent(t, "DEVICE planes=2");
    mr = ct_mr_reg(t, 2u << 20, "lw", 0);
    c = two_plane_conn(t, "npaths=128 mtu=1024 min_rto_us=1000");
    memset(&l, 0, sizeof(l));
    write_over_planes_log(t, c, &mr, 1, 2048, 1, "plane 1 failed", on, &l);
    for (unsigned i = 0; i < l.n1; i++) {
        if (!l.retx1[i])
            continue;
        int spur = 0;
        for (unsigned k = 0; k < l.nspur && !spur; k++)
            spur = l.spur[k] + 1000000u > l.t1[i] &&
                   l.t1[i] + 1000000u > l.spur[k];
        if (retx++ && l.t1[i] - last < 500000u) {
            if (spur)
                excused++;
            else
                close++;
        }
        last = l.t1[i];
    }
    ct_log(t,
           "%u packets on plane 1, %u retransmissions, %u of them within "
           "500 us of the one before (%u more near a spurious one)",
           l.n1, retx, close, excused);
    CT_REQUIRE(t, close == 0,
               "%u retransmissions went into plane 1 within 500 us of the "
               "one before, while it lost everything and plane 0 nothing "
               "(PATH-26)",
               close);
}

CT_CASE(planes_probe_backoff, "PATH-28 PATH-22",
        "two planes agreed, 8 paths, min_rto 20 ms (above what the RTT adds "
        "on a loaded host); plane 1 drops everything during a 65536-packet "
        "WRITE of the IUT: from 100 ms after its first packet lost until "
        "the WRITE completes, plane 1 gets at most 2 + 1 per 40 ms (probes "
        "that back off to 4 RTOs), not one per RTO")
{
    static struct plane_log l;
    struct ct_mr mr;
    struct ct_conn *c;
    unsigned on[2], late = 0;
    uint64_t from, span;

    ct_agent(t, "DEVICE planes=2");
    /* 64 MiB: long enough that the WRITE outlasts the first 300 ms at
     * the rate a quiet host moves it over plane 0 alone. */
    mr = ct_mr_reg(t, 64u << 20, "lw", 0);
    c = two_plane_conn(t, "npaths=8 mtu=1024 min_rto_us=20000");
    memset(&l, 0, sizeof(l));
    write_over_planes_log(t, c, &mr, 1, 65536, 1, "plane 1 failed", on, &l);
    CT_REQUIRE(t, l.n1 > 0, "nothing arrived on plane 1");
    from = l.t1[0] + 100000000u;
    span = ct_now_ns() > from ? ct_now_ns() - from : 0;
    for (unsigned i = 0; i < l.n1; i++)
        late += l.t1[i] >= from;
    ct_log(t, "%u packets on plane 1 in the %llu ms after the first 100", late,
           (unsigned long long)(span / 1000000u));
    if (span < 200000000u)
        ct_skip(t, "the WRITE ended within 300 ms: too short to tell");
    CT_REQUIRE(t, late <= 2 + span / 40000000u,
               "a down plane got %u packets in %llu ms: its probe interval "
               "must double after each probe, to 4 RTOs (PATH-28)",
               late, (unsigned long long)(span / 1000000u));
}
