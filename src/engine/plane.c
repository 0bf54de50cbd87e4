/*
 * plane.c - planes of a connection (PATH-17..24, CONN-28..30): the PLANES
 * handshake extension, the plane and destination of each packet sent, and
 * each plane's up/down state from the paths' retirements and the ACKs that
 * arrive over it.
 *
 * The evidence a plane's share of the spray rests on is its slots'
 * weights: path.c's deficit round robin over all slots gives each plane
 * the sum of its slots' weights, which clean ACKs raise and marks, delay
 * and losses lower (PATH-6), so planes are chosen per packet in proportion
 * to their clean-ACK evidence and a path within the plane by the same
 * pick.  What this file adds is the plane as a unit of failure: when every
 * slot of a plane has been retired with no ACK over the plane in between,
 * the plane is down; the picker then skips its slots (path.c,
 * planes_block) except for one probe per RTO, which asks for an immediate
 * ACK, and the first ACK or NAK that arrives over the plane brings it
 * back.  The last plane up is never marked down: a connection with no
 * plane left is the loss and liveness rules' business (LOSS-14, REL-32).
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
            p->unusable = 1; /* PATH-24: never sent on */
            pl->ndown++;
        }
    }
    for (uint32_t k = 0; k < qp->paths.npaths; k++) /* up to 256 slots */
        pl->p[qp->path_slots[k].plane].nslots++;
    qp->planes = pl;
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

/* The plane works: forget its retirements; if it was down, it is up. */
static void plane_proven(mre_qp *qp, struct mre_planes *pl, uint8_t plane)
{
    struct mre_plane *p = &pl->p[plane];

    if (p->dead) {
        for (uint32_t i = plane; i < qp->paths.npaths; i += pl->n)
            pl->dead_bits[i >> 6] &= ~(1ull << (i & 63));
        p->dead = 0;
    }
    if (p->down && !MROCE_SEEDED_FAULT(PLANES_NEVER_UP)) { /* PATH-23 */
        p->down = 0;
        pl->ndown--;
    }
}

void mre_plane_on_ack_rx(mre_qp *qp, uint8_t plane)
{
    struct mre_planes *pl = qp->planes;

    if (!pl || plane >= pl->n || pl->p[plane].unusable)
        return;
    pl->p[plane].rx_acks++;
    plane_proven(qp, pl, plane);
}

/* A probe's acknowledgement proves the plane too, whichever plane the ACK
 * came over: the receiver answers on the plane of the latest packet it
 * got, and the probe seldom is that one by the time the ACK leaves. */
void mre_plane_on_path_ack(mre_qp *qp, uint16_t slot)
{
    struct mre_planes *pl = qp->planes;
    uint8_t k;

    if (!pl || slot >= qp->paths.npaths)
        return;
    k = qp->path_slots[slot].plane;
    if (pl->p[k].down)
        plane_proven(qp, pl, k);
}

void mre_plane_on_retire(mre_qp *qp, uint16_t slot)
{
    struct mre_planes *pl = qp->planes;
    struct mre_plane *p;
    uint64_t bit;

    if (!pl || slot >= qp->paths.npaths)
        return;
    bit = 1ull << (slot & 63);
    if (pl->dead_bits[slot >> 6] & bit)
        return;
    pl->dead_bits[slot >> 6] |= bit;
    p = &pl->p[qp->path_slots[slot].plane];
    p->dead++;
    /* PATH-21: every slot of the plane retired since an ACK came over it;
     * the last plane up stays up. */
    if (!p->down && p->dead >= p->nslots && pl->ndown + 1 < pl->n &&
        !MROCE_SEEDED_FAULT(PLANES_NO_DOWN)) {
        p->down = 1;
        p->downs++;
        p->probe_at = 0;
        pl->ndown++;
    }
}

/* One probe per RTO (PATH-22): LOSS-8's, without backoff. */
static mroce_tstamp plane_probe_interval(const mre_qp *qp)
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

void mre_plane_pick_begin(mre_qp *qp, mroce_tstamp now)
{
    struct mre_planes *pl = qp->planes;
    uint8_t block = 0, i;

    if (!pl)
        return;
    if (pl->ndown) {
        for (i = 0; i < pl->n; i++) {
            struct mre_plane *p = &pl->p[i];
            if (p->unusable) {
                block |= (uint8_t)(1u << i);
            } else if (p->down) {
                if (p->probe_at == 0)
                    p->probe_at = now + plane_probe_interval(qp);
                if (now < p->probe_at)
                    block |= (uint8_t)(1u << i);
            }
        }
    }
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
    p->probe_at = now + plane_probe_interval(qp);
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
    }
    return pl->n;
}
