/*
 * plane.c - planes of a connection (PATH-17..31, CONN-28..30): the PLANES
 * handshake extension, the plane and destination of each packet sent, and
 * each plane's up/down state from the paths' retirements and the ACKs that
 * arrive over it.
 *
 * The evidence a plane's share of the spray rests on is its slots'
 * weights: path.c's deficit round robin over all slots gives each plane
 * the sum of its slots' weights, which clean ACKs raise and marks, delay
 * and losses lower (PATH-6), so planes are chosen per packet in proportion
 * to their clean-ACK evidence and a path within the plane by the same
 * pick.  What this file adds is the plane as a unit of failure.  Each
 * loss marks its slot lossy until an ACK arrives over the plane or
 * acknowledges a packet sent on it; once a quorum of the plane's slots is
 * lossy and an RTT has passed with no such ACK (PATH-25), or every slot has
 * been retired (PATH-21), the plane is down.  A slot retired in between
 * keeps its plane and waits for that ACK, fresh entropy and all, and
 * retransmissions keep off such a plane while another is clean (PATH-26).
 * The picker skips a down plane's slots (path.c, planes_block) except for
 * probes at an interval that backs off from one RTO (PATH-22, PATH-28),
 * each asking for an immediate ACK, and the first ACK or NAK that arrives
 * over the plane brings it back.  A plane that goes down loses what is in
 * flight on it, and all its slots but one (slot k of plane k, for the
 * probes) move to the planes up as new paths; when it is back, its home
 * slots return, each once it has drained (PATH-29..31).  So a connection
 * keeps spraying over npaths - 1 paths while a plane is down, and nothing
 * it sent into the dead plane holds its window or the peer's credit until
 * a timeout.  Up and down go into the endpoint's
 * table, which every connection of the endpoint takes in at its next pick
 * (PATH-27), so the others neither send into a plane one of them found
 * down nor keep away from one it found working again.  The last plane up
 * is never marked down: a connection with no plane left is the loss and
 * liveness rules' business (LOSS-14, REL-32).
 */
#include "engine_int.h"

#include "../wire/seeded_fault.h"

_Static_assert(MROCE_EP_MAX_PLANES == MROCE_MAX_PLANES,
               "engine and wire plane limits agree");

static uint8_t plane_local_count(const mre_ep *ep)
{
    return ep->cfg.nplanes > 1 ? ep->cfg.nplanes : 1;
}

/* PATH-19: n planes of npaths slots each need span >= max(2n, npaths * n)
 * entropies (mre_pathset_set_planes); any smaller P then fits too. */
static int plane_fits(const mre_qp *qp, uint8_t n)
{
    uint32_t span = qp->paths.entropy_span;
    return span >= 2u * n && qp->paths.npaths <= span / n;
}

static void plane_move_out(mre_qp *qp, struct mre_planes *pl, uint8_t k,
                           int keep);

void mre_plane_conn_ext(const mre_qp *qp, struct mrw_conn_hdr *c, int resp)
{
    const mre_ep *ep = qp->ep;
    uint8_t n = plane_local_count(ep), i;

    if (MROCE_SEEDED_FAULT(PLANES_ALWAYS) && n < 2) {
        c->nplanes = 1; /* a one-plane endpoint lists its (unknown) plane */
        return;
    }
    if (n < 2 || !plane_fits(qp, n) ||
        (resp && !qp->planes && !MROCE_SEEDED_FAULT(PLANES_RESP_UNASKED)))
        return; /* CONN-28, CONN-29: a side that cannot meet PATH-19
                   lists no planes, so both use one */
    if (resp && qp->planes && qp->planes->n < n)
        n = qp->planes->n; /* CONN-25: no longer than the CONNECT_REQ */
    c->nplanes = n;
    for (i = 0; i < n; i++) {
        memcpy(c->planes[i].addr, ep->cfg.planes[i].addr, 16);
        c->planes[i].port = ep->cfg.planes[i].port;
        c->planes[i].reserved = 0;
    }
}

void mre_plane_free(mre_qp *qp)
{
    if (qp->planes) {
        mre_mem_free(&qp->ep->mem, qp->planes);
        qp->planes = NULL;
    }
}

void mre_plane_negotiate(mre_qp *qp, const struct mrw_conn_hdr *c)
{
    mre_ep *ep = qp->ep;
    uint8_t n = plane_local_count(ep), i;
    struct mre_planes *pl;

    if (c->nplanes < n)
        n = c->nplanes; /* absent (0): one plane */
    if (n < 2 || qp->planes || !plane_fits(qp, plane_local_count(ep)))
        return; /* without our PLANES sent the peer uses one plane too */
    pl = mre_mem_calloc(&ep->mem, 1, sizeof(*pl));
    if (!pl)
        return; /* one plane; the CONNECT_RESP then says so (CONN-29) */
    if (mre_pathset_set_planes(&qp->paths, n) < 0) {
        mre_mem_free(&ep->mem, pl);
        (void)mre_pathset_set_planes(&qp->paths, 1);
        return;
    }
    pl->n = n;
    for (i = 0; i < n; i++) {
        struct mre_plane *p = &pl->p[i];
        struct mre_plane_addr a;
        if (i == 0) {
            p->peer = qp->peer; /* the address the handshake used */
            continue;
        }
        memcpy(a.addr, c->planes[i].addr, 16);
        a.port = c->planes[i].port;
        if (!ep->cfg.plane_addr ||
            ep->cfg.plane_addr(&p->peer, &a, ep->cfg.plane_user) != 0 ||
            p->peer.len > sizeof(p->peer.data)) {
            if (MROCE_SEEDED_FAULT(PLANE_SEND_UNUSABLE)) {
                p->peer = qp->peer; /* sent on, towards plane 0's peer */
                continue;
            }
            p->unusable = 1; /* PATH-24: never sent on */
            pl->ndown++;
        }
    }
    for (uint32_t k = 0; k < qp->paths.npaths; k++) /* up to 256 slots */
        pl->p[qp->path_slots[k].plane].nslots++;
    pl->ep_gen = ep->planes.gen - 1; /* the first pick takes in the table */
    qp->planes = pl;
    for (i = 1; i < n; i++)
        if (pl->p[i].unusable)
            plane_move_out(qp, pl, i, 0); /* PATH-29: never sent on */
}

void mre_plane_tx(mre_qp *qp, struct mre_tx_info *info)
{
    struct mre_planes *pl = qp->planes;
    uint8_t k;

    if (!pl)
        return;
    k = (uint8_t)(info->entropy % pl->n); /* PATH-19, PATH-20 */
    if (pl->p[k].unusable || MROCE_SEEDED_FAULT(PLANES_TX_ZERO))
        k = 0;
    info->plane = k;
    if (k != 0)
        info->to = pl->p[k].peer;
    pl->p[k].tx_pkts++;
}

/* Quorum of PATH-25: a quarter of the plane's slots, at least two (all of
 * them if it has fewer). */
static uint16_t plane_quorum(const struct mre_plane *p)
{
    uint16_t q = (uint16_t)((p->nslots + 3) / 4);
    if (q < 2)
        q = 2;
    return q < p->nslots ? q : p->nslots;
}

static int bit_get(const uint64_t *bits, uint32_t i)
{
    return (int)((bits[i >> 6] >> (i & 63)) & 1);
}

/* Sets or clears bit i; returns 1 if that changed it. */
static int bit_put(uint64_t *bits, uint32_t i, int on)
{
    uint64_t bit = 1ull << (i & 63);
    if (!!(bits[i >> 6] & bit) == on)
        return 0;
    bits[i >> 6] ^= bit;
    return 1;
}

/* Slots move between planes (PATH-29), so a plane's slots are those whose
 * plane field names it, not i % P. */
static void bits_clear_plane(uint64_t *bits, const mre_qp *qp, uint8_t plane)
{
    for (uint32_t i = 0; i < qp->paths.npaths; i++)
        if (qp->path_slots[i].plane == plane)
            bits[i >> 6] &= ~(1ull << (i & 63));
}

static void slot_hold(struct mre_pathset *ps, uint32_t i, int on)
{
    if (bit_put(ps->held, i, on))
        ps->nheld = (uint16_t)(on ? ps->nheld + 1 : ps->nheld - 1);
}

/* PATH-26: the plane's retired slots may be chosen again (not those
 * waiting to go home, PATH-31). */
static void plane_release_held(mre_qp *qp, struct mre_planes *pl, uint8_t plane)
{
    struct mre_pathset *ps = &qp->paths;

    if (!ps->nheld)
        return;
    for (uint32_t i = 0; i < ps->npaths; i++)
        if (qp->path_slots[i].plane == plane && !bit_get(pl->back_bits, i))
            slot_hold(ps, i, 0);
}

/* A plane packets may be sent on: not down, its peer address usable. */
static int plane_open(const struct mre_planes *pl, uint8_t k)
{
    return !pl->p[k].down && !pl->p[k].unusable;
}

/* Bit k: plane k is open and holds slots, so data can go on it.  With
 * npaths < P some planes hold none: another plane "up" is then no place
 * to send. */
static uint8_t plane_live(const struct mre_planes *pl)
{
    uint8_t live = 0;

    for (uint8_t k = 0; k < pl->n; k++)
        if (plane_open(pl, k) && pl->p[k].nslots)
            live |= (uint8_t)(1u << k);
    return live;
}

/* PATH-30: what is in flight on slot i went into a plane now down: lost
 * (cause path, no congestion signal, as for a retired slot's packets),
 * to be resent on the planes up, and no longer holding the window. */
static void slot_flush(mre_qp *qp, uint32_t i)
{
    struct mre_path *p = &qp->path_slots[i];

    while (p->list_head != MROCE_PATH_NONE) {
        uint32_t idx = p->list_head;
        mre_txr_mark_lost(qp, qp->snd_una + ((idx - qp->snd_una) & qp->tx_mask),
                          LOSS_PATH);
    }
}

/* Moves slot i, nothing in flight on it, to plane `to` (PATH-29..31): the
 * counts of its old plane forget it, and it starts afresh (path.c). */
static void slot_move(mre_qp *qp, struct mre_planes *pl, uint32_t i, uint8_t to)
{
    struct mre_path *sp = &qp->path_slots[i];
    struct mre_plane *from = &pl->p[sp->plane];
    uint8_t k = sp->plane;

    if (mre_path_rehome(&qp->paths, (uint16_t)i, to) < 0)
        return; /* no entropy of that residue left: it stays */
    if (bit_put(pl->lossy_bits, i, 0) && --from->lossy == 0) {
        pl->suspect &= (uint8_t) ~(1u << k);
        from->suspect_at = 0;
    }
    if (bit_put(pl->dead_bits, i, 0))
        from->dead--;
    if (bit_put(pl->back_bits, i, 0))
        pl->nback--;
    slot_hold(&qp->paths, i, 0);
    from->nslots--;
    pl->p[to].nslots++;
    from->moved_out++;
}

/* The open plane with the fewest slots other than `not`, or `not` if none. */
static uint8_t plane_least(const struct mre_planes *pl, uint8_t not )
{
    uint8_t best = not ;

    for (uint8_t k = 0; k < pl->n; k++)
        if (k != not &&plane_open(pl, k) &&
            (best == not || pl->p[k].nslots < pl->p[best].nslots))
            best = k;
    return best;
}

/* PATH-29, PATH-30: plane k is down (or unusable): what is in flight on it
 * is lost, and every slot on it moves to an open plane (its home if that
 * is open, else the one with the fewest slots) but, if keep, slot k, its
 * first home slot, which stays (or comes back) for the probes of PATH-22. */
static void plane_move_out(mre_qp *qp, struct mre_planes *pl, uint8_t k,
                           int keep)
{
    uint32_t n = qp->paths.npaths;

    for (uint32_t i = 0; i < n; i++)
        if (qp->path_slots[i].plane == k)
            slot_flush(qp, i);
    if (keep && k < n && qp->path_slots[k].plane != k) {
        slot_flush(qp, k); /* on its way home from an earlier failure */
        slot_move(qp, pl, k, k);
    }
    if (MROCE_SEEDED_FAULT(PLANES_NO_REHOME))
        return;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t home = (uint8_t)(i % pl->n), to;
        if (qp->path_slots[i].plane != k || (keep && i == k))
            continue;
        to = home != k && plane_open(pl, home) ? home : plane_least(pl, k);
        if (to != k)
            slot_move(qp, pl, i, to);
    }
}

/* PATH-31: plane k is up again; the slots whose home it is go back, each
 * once nothing is in flight on it (held meanwhile, so that it drains). */
static void plane_call_home(mre_qp *qp, struct mre_planes *pl, uint8_t k)
{
    if (MROCE_SEEDED_FAULT(PLANES_NO_RETURN))
        return;
    for (uint32_t i = k; i < qp->paths.npaths; i += pl->n) {
        if (qp->path_slots[i].plane == k)
            continue;
        if (qp->path_slots[i].list_head == MROCE_PATH_NONE) {
            slot_move(qp, pl, i, k);
        } else if (bit_put(pl->back_bits, i, 1)) {
            pl->nback++;
            slot_hold(&qp->paths, i, 1);
        }
    }
}

/* PATH-31: the waiting slots that have drained go home; those whose home
 * went down again stay where they are, in use. */
static void plane_homes_drained(mre_qp *qp, struct mre_planes *pl)
{
    for (uint32_t i = 0; i < qp->paths.npaths && pl->nback; i++) {
        uint8_t home = (uint8_t)(i % pl->n);
        if (!bit_get(pl->back_bits, i))
            continue;
        if (!plane_open(pl, home)) {
            bit_put(pl->back_bits, i, 0);
            pl->nback--;
            slot_hold(&qp->paths, i, 0);
        } else if (qp->path_slots[i].list_head == MROCE_PATH_NONE) {
            slot_move(qp, pl, i, home);
        }
    }
}

/* PATH-27: tell the endpoint's other connections. */
static void plane_publish(mre_qp *qp, uint8_t plane, int down)
{
    struct mre_ep_planes *t = &qp->ep->planes;
    uint8_t bit = (uint8_t)(1u << plane);

    if (MROCE_SEEDED_FAULT(PLANES_NO_SHARE) || !!(t->down & bit) == down)
        return;
    t->down = (uint8_t)(down ? t->down | bit : t->down & ~bit);
    t->gen++;
    if (qp->planes->ep_gen == t->gen - 1)
        qp->planes->ep_gen = t->gen; /* nothing new for this one */
}

/* The plane works: forget its losses and retirements; if it was down, it
 * is up.  publish: the evidence is this connection's own. */
static void plane_up(mre_qp *qp, struct mre_planes *pl, uint8_t plane,
                     int publish)
{
    struct mre_plane *p = &pl->p[plane];

    if (p->dead) {
        bits_clear_plane(pl->dead_bits, qp, plane);
        p->dead = 0;
    }
    if (p->lossy) { /* a slot is held only while its plane is lossy */
        bits_clear_plane(pl->lossy_bits, qp, plane);
        p->lossy = 0;
        pl->suspect &= (uint8_t) ~(1u << plane);
        p->suspect_at = 0;
        plane_release_held(qp, pl, plane);
    }
    if (p->down && !MROCE_SEEDED_FAULT(PLANES_NEVER_UP)) { /* PATH-23 */
        p->down = 0;
        p->backoff = 0;
        pl->ndown--;
        if (publish)
            plane_publish(qp, plane, 0);
        plane_call_home(qp, pl, plane);
    }
}

/* One probe per RTO (PATH-22): LOSS-8's, without its backoff. */
static mroce_tstamp plane_rto(const mre_qp *qp)
{
    mroce_tstamp rto = qp->srtt + 4 * qp->rttvar + qp->peer_ack_delay;
    if (qp->srtt == 0)
        rto = 5 * qp->attr.min_rto;
    if (rto < qp->attr.min_rto)
        rto = qp->attr.min_rto;
    if (rto > qp->attr.max_rto)
        rto = qp->attr.max_rto;
    return rto;
}

/* PATH-28: doubled for each unanswered probe, at most PLANE_PROBE_MAX_SHIFT
 * times. */
#define PLANE_PROBE_MAX_SHIFT 2

static mroce_tstamp plane_probe_interval(const mre_qp *qp,
                                         const struct mre_plane *p)
{
    return plane_rto(qp) << p->backoff;
}

/* Whether the connection keeps a slot to send data on once plane k is
 * down (PATH-21's last plane up): a slot on an open plane, or one of k's
 * that moves to one, other than k's probe slot, slot k, which stays
 * (PATH-29).  With npaths < P some planes hold no slot, and such a plane
 * is up in name only: were every plane with slots down, each packet would
 * go out on a down plane, as a probe or as none at all. */
static int plane_down_leaves_slots(const mre_qp *qp,
                                   const struct mre_planes *pl, uint8_t k)
{
    int open = 0;

    for (uint8_t j = 0; j < pl->n; j++)
        open |= j != k && plane_open(pl, j);
    if (!open)
        return 0;
    for (uint32_t i = 0; i < qp->paths.npaths; i++) {
        uint8_t j = qp->path_slots[i].plane;
        if (i != k && (j == k || plane_open(pl, j)))
            return 1;
    }
    return 0;
}

/* Down (PATH-21, PATH-25, PATH-27), unless it is the last plane up, or
 * the last with slots; returns 1 if it went down.  The plane's held slots
 * go back to the plane block, which now covers them, so that its probes
 * can use any. */
static int plane_down(mre_qp *qp, struct mre_planes *pl, uint8_t plane,
                      mroce_tstamp now, int publish)
{
    struct mre_plane *p = &pl->p[plane];

    if (p->down || p->unusable || pl->ndown + 1 >= pl->n ||
        !plane_down_leaves_slots(qp, pl, plane) ||
        (publish && MROCE_SEEDED_FAULT(PLANES_NO_DOWN)))
        return 0;
    p->down = 1;
    p->downs++;
    p->backoff = 0;
    p->probe_at = now ? now + plane_probe_interval(qp, p) : 0;
    pl->ndown++;
    plane_release_held(qp, pl, plane);
    plane_move_out(qp, pl, plane, 1);
    if (publish)
        plane_publish(qp, plane, 1);
    else
        p->adopted++;
    return 1;
}

void mre_plane_on_ack_rx(mre_qp *qp, uint8_t plane)
{
    struct mre_planes *pl = qp->planes;

    if (!pl || plane >= pl->n || pl->p[plane].unusable)
        return;
    pl->p[plane].rx_acks++;
    plane_up(qp, pl, plane, 1);
}

/* A packet sent on the slot was acknowledged, over whichever plane: the
 * plane carries data (PATH-23 for a probe, and the end of PATH-25's
 * evidence). */
void mre_plane_on_path_ack(mre_qp *qp, uint16_t slot)
{
    struct mre_planes *pl = qp->planes;
    uint8_t k;

    if (!pl || slot >= qp->paths.npaths)
        return;
    k = qp->path_slots[slot].plane;
    if (pl->p[k].down || pl->p[k].lossy)
        plane_up(qp, pl, k, 1);
}

void mre_plane_on_loss(mre_qp *qp, uint16_t slot, int retired)
{
    struct mre_planes *pl = qp->planes;
    struct mre_plane *p;
    uint64_t bit;
    uint8_t k;

    if (!pl || slot >= qp->paths.npaths)
        return;
    k = qp->path_slots[slot].plane;
    p = &pl->p[k];
    bit = 1ull << (slot & 63);
    if (!(pl->lossy_bits[slot >> 6] & bit)) {
        pl->lossy_bits[slot >> 6] |= bit;
        p->lossy++;
        pl->suspect |= (uint8_t)(1u << k);
    }
    if (!retired || (pl->dead_bits[slot >> 6] & bit))
        return;
    pl->dead_bits[slot >> 6] |= bit;
    p->dead++;
    /* PATH-26: a slot retired while its plane is under suspicion waits,
     * fresh entropy and all, for the plane to answer; never the last slot
     * of the last plane up. */
    if (!p->down && (plane_live(pl) & ~(1u << k)) &&
        !MROCE_SEEDED_FAULT(PLANES_NO_HOLD))
        slot_hold(&qp->paths, slot, 1);
    /* PATH-21: every slot of the plane retired since an ACK came over it;
     * the last plane up stays up. */
    if (!p->down && p->dead >= p->nslots)
        (void)plane_down(qp, pl, k, 0, 1); /* probe_at: next pick */
}

/* PATH-25: a quorum of lossy slots, and no ACK over the plane for half an
 * RTT since the first of their losses was seen.  Each of those losses
 * already waited out its path's guard (LOSS-7: srtt + 4 rttvar at least)
 * with no ACK for that path, and any ACK over the plane, or of a packet
 * sent on it, clears them all. */
static void plane_judge(mre_qp *qp, struct mre_planes *pl, mroce_tstamp now)
{
    mroce_tstamp hold = qp->min_rtt / 2;

    for (uint8_t i = 0; i < pl->n; i++) {
        struct mre_plane *p = &pl->p[i];
        if (!((pl->suspect >> i) & 1))
            continue;
        if (p->down) {
            pl->suspect &= (uint8_t) ~(1u << i);
            continue;
        }
        if (p->suspect_at == 0)
            p->suspect_at = now;
        if (p->lossy >= plane_quorum(p) && now - p->suspect_at >= hold &&
            !MROCE_SEEDED_FAULT(PLANES_NO_QUORUM))
            (void)plane_down(qp, pl, i, now, 1);
    }
}

/* PATH-27: what the endpoint's other connections learnt since the last
 * look. */
static void plane_adopt(mre_qp *qp, struct mre_planes *pl, mroce_tstamp now)
{
    const struct mre_ep_planes *t = &qp->ep->planes;

    pl->ep_gen = t->gen;
    for (uint8_t i = 0; i < pl->n; i++) {
        int down = (t->down >> i) & 1;
        if (down && !pl->p[i].down)
            (void)plane_down(qp, pl, i, now, 0);
        else if (!down && pl->p[i].down)
            plane_up(qp, pl, i, 0);
    }
}

void mre_plane_pick_begin(mre_qp *qp, mroce_tstamp now, int retx)
{
    struct mre_planes *pl = qp->planes;
    uint8_t block = 0, i;

    if (!pl)
        return;
    if (pl->ep_gen != qp->ep->planes.gen)
        plane_adopt(qp, pl, now);
    if (pl->suspect)
        plane_judge(qp, pl, now);
    if (pl->nback)
        plane_homes_drained(qp, pl);
    if (pl->ndown) {
        for (i = 0; i < pl->n; i++) {
            struct mre_plane *p = &pl->p[i];
            if (p->down && p->probe_at == 0)
                p->probe_at = now + plane_probe_interval(qp, p);
            if (p->unusable || (p->down && now < p->probe_at))
                block |= (uint8_t)(1u << i);
        }
    }
    /* PATH-26: a retransmission stays off a plane under suspicion too,
     * while another plane is open to it. */
    if (retx && pl->suspect && !MROCE_SEEDED_FAULT(PLANES_NO_HOLD) &&
        (plane_live(pl) & ~(block | pl->suspect)))
        block |= pl->suspect;
    qp->paths.planes_block = block;
}

int mre_plane_picked(mre_qp *qp, uint16_t slot, mroce_tstamp now)
{
    struct mre_planes *pl = qp->planes;
    struct mre_plane *p;

    if (!pl || slot >= qp->paths.npaths)
        return 0;
    p = &pl->p[qp->path_slots[slot].plane];
    if (!p->down)
        return 0;
    p->probes++;
    p->probe_at = now + plane_probe_interval(qp, p);
    if (p->backoff < PLANE_PROBE_MAX_SHIFT &&
        !MROCE_SEEDED_FAULT(PLANES_NO_BACKOFF))
        p->backoff++;
    return 1;
}

int mre_qp_plane_stats(const mre_qp *qp, struct mre_plane_stats *st, int n)
{
    const struct mre_planes *pl;
    int k;

    if (!qp || n < 0 || (n && !st))
        return MROCE_EINVAL;
    pl = qp->planes;
    if (!pl) {
        if (n > 0) {
            memset(&st[0], 0, sizeof(st[0]));
            st[0].up = 1;
            st[0].paths = qp->paths.npaths;
            st[0].tx_pkts = qp->cnt.tx_pkts;
            st[0].rx_acks = qp->cnt.rx_acks + qp->cnt.rx_naks;
        }
        return 1;
    }
    for (k = 0; k < n && k < pl->n; k++) {
        const struct mre_plane *p = &pl->p[k];
        memset(&st[k], 0, sizeof(st[k]));
        st[k].up = !p->down && !p->unusable;
        st[k].paths = p->nslots;
        st[k].tx_pkts = p->tx_pkts;
        st[k].rx_acks = p->rx_acks;
        st[k].downs = p->downs;
        st[k].probes = p->probes;
        st[k].dead = p->dead;
        st[k].lossy = p->lossy;
        st[k].adopted = p->adopted;
        st[k].moved = p->moved_out;
    }
    return pl->n;
}
