/*
 * conntab.c - the endpoint's handshake lookups: which connected QP a
 * retransmitted CONNECT_REQ belongs to, and which LISTEN QP a new one goes
 * to.  Each is O(1) expected, so setting up N connections on one endpoint
 * costs O(N) rather than a scan over every QP per request.
 *
 * Connection table: a chained hash table of buckets allocated once with the
 * endpoint (one per QP slot, rounded up to a power of two, so the load
 * factor stays <= 1), chained through qp->conn_next.  Its members are every
 * QP in RTS, CLOSING, CLOSED or ERROR.  A QP enters when it leaves RESET,
 * LISTEN or CONNECTING (its peer key is final by then: nothing changes the
 * peer's address, QPN or token after that) and leaves only when destroyed.
 * Where several members share a key the one with the lowest live index
 * wins: the first of them in ep->live, so the answer does not depend on
 * bucket order.
 *
 * The peer chooses its QPN and token, so the bucket hash is keyed with a
 * per-endpoint value: a peer cannot aim all its connections at one chain
 * without knowing it.  The key comes from the endpoint's address, not from
 * the caller's random source, so it draws nothing from that stream (QPNs,
 * tokens and start PSNs do not depend on it); it only decides bucket
 * placement, never which QP is found.
 *
 * Listeners: a doubly linked FIFO (oldest first, so dst_qpn 0 takes the
 * longest-waiting one); a request naming a QPN finds its QP by slot.
 */
#include "engine_int.h"

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static uint32_t conn_bucket(const mre_ep *ep, const struct mre_addr *a,
                            uint32_t qpn, uint64_t token)
{
    uint64_t h = ep->conn_seed ^ a->len;
    uint8_t n = a->len < sizeof(a->data) ? a->len : sizeof(a->data);
    for (uint8_t i = 0; i < n; i++)
        h = (h ^ a->data[i]) * 0x100000001b3ull; /* FNV-1a step */
    h = mix64(h ^ qpn);
    h = mix64(h ^ token);
    return (uint32_t)h & ep->conn_mask;
}

int mre_conntab_init(mre_ep *ep)
{
    uint32_t n = 1;
    while (n < ep->nqps_slots)
        n <<= 1;
    ep->conn_tab = mre_mem_calloc(&ep->mem, n, sizeof(*ep->conn_tab));
    if (!ep->conn_tab)
        return MROCE_ENOMEM;
    ep->conn_mask = n - 1;
    ep->conn_seed = mix64((uint64_t)(uintptr_t)ep ^ 0x6a09e667f3bcc909ull);
    return 0;
}

void mre_conntab_free(mre_ep *ep)
{
    mre_mem_free(&ep->mem, ep->conn_tab);
    ep->conn_tab = NULL;
}

void mre_conntab_insert(mre_ep *ep, mre_qp *qp)
{
    if (qp->in_conn)
        return;
    uint32_t b = conn_bucket(ep, &qp->peer, qp->peer_qpn, qp->peer_token);
    qp->conn_next = ep->conn_tab[b];
    ep->conn_tab[b] = qp;
    qp->in_conn = 1;
}

void mre_conntab_remove(mre_ep *ep, mre_qp *qp)
{
    if (!qp->in_conn)
        return;
    uint32_t b = conn_bucket(ep, &qp->peer, qp->peer_qpn, qp->peer_token);
    mre_qp **pp = &ep->conn_tab[b];
    while (*pp && *pp != qp)
        pp = &(*pp)->conn_next;
    if (*pp)
        *pp = qp->conn_next;
    qp->conn_next = NULL;
    qp->in_conn = 0;
}

mre_qp *mre_conntab_find(mre_ep *ep, const struct mre_addr *from,
                         uint32_t peer_qpn, uint64_t peer_token)
{
    if (from->len > sizeof(from->data))
        return NULL; /* no member has such an address */
    mre_qp *best = NULL;
    for (mre_qp *q = ep->conn_tab[conn_bucket(ep, from, peer_qpn, peer_token)];
         q; q = q->conn_next)
        if (q->peer_qpn == peer_qpn && q->peer_token == peer_token &&
            q->peer.len == from->len &&
            !memcmp(q->peer.data, from->data, from->len) &&
            (!best || q->live_idx < best->live_idx))
            best = q;
    return best;
}

void mre_conntab_listen_append(mre_ep *ep, mre_qp *qp)
{
    qp->listen_next = NULL;
    qp->listen_prev = ep->listen_tail;
    if (ep->listen_tail)
        ep->listen_tail->listen_next = qp;
    else
        ep->listen_head = qp;
    ep->listen_tail = qp;
}

void mre_conntab_listen_remove(mre_ep *ep, mre_qp *qp)
{
    if (qp->listen_prev)
        qp->listen_prev->listen_next = qp->listen_next;
    else
        ep->listen_head = qp->listen_next;
    if (qp->listen_next)
        qp->listen_next->listen_prev = qp->listen_prev;
    else
        ep->listen_tail = qp->listen_prev;
    qp->listen_prev = qp->listen_next = NULL;
}

mre_qp *mre_conntab_listen_find(mre_ep *ep, uint32_t dst_qpn)
{
    if (dst_qpn == 0)
        return ep->listen_head;
    /* The list holds exactly the QPs in LISTEN. */
    mre_qp *qp = mre_ep_find_qp(ep, dst_qpn);
    return qp && qp->state == MROCE_QPS_LISTEN ? qp : NULL;
}
