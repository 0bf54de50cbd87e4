/*
 * cq.c - completion queues.  Completions are how every work request ends
 * (success or an error status); the ring grows rather than drop one, so
 * nothing a user posted is lost silently.
 */
#include "engine_int.h"

int mre_cq_new(mre_ep *ep, uint32_t depth, mre_cq **pcq)
{
    if (!ep || !pcq || depth == 0 || depth > (1u << 24))
        return MROCE_EINVAL;
    mre_cq *cq = mre_mem_calloc(&ep->mem, 1, sizeof(*cq));
    if (!cq)
        return MROCE_ENOMEM;
    cq->ring = mre_mem_calloc(&ep->mem, depth, sizeof(*cq->ring));
    if (!cq->ring) {
        mre_mem_free(&ep->mem, cq);
        return MROCE_ENOMEM;
    }
    cq->ep = ep;
    cq->cap = depth;
    cq->next = ep->cqs;
    ep->cqs = cq;
    *pcq = cq;
    return 0;
}

int mre_cq_del(mre_cq *cq)
{
    if (!cq)
        return MROCE_EINVAL;
    if (cq->users)
        return MROCE_EBUSY;
    mre_cq **pp = &cq->ep->cqs;
    while (*pp && *pp != cq)
        pp = &(*pp)->next;
    if (*pp)
        *pp = cq->next;
    mre_mem_free(&cq->ep->mem, cq->ring);
    mre_mem_free(&cq->ep->mem, cq);
    return 0;
}

int mre_cq_push(mre_cq *cq, const struct mroce_wc *wc)
{
    if (cq->count == cq->cap) {
        uint32_t n = cq->cap * 2;
        struct mroce_wc *r = mre_mem_calloc(&cq->ep->mem, n, sizeof(*r));
        if (!r)
            return MROCE_ENOMEM;
        for (uint32_t i = 0; i < cq->count; i++)
            r[i] = cq->ring[(cq->head + i) % cq->cap];
        mre_mem_free(&cq->ep->mem, cq->ring);
        cq->ring = r;
        cq->cap = n;
        cq->head = 0;
    }
    uint32_t t = cq->head + cq->count;
    if (t >= cq->cap)
        t -= cq->cap;
    cq->ring[t] = *wc;
    cq->count++;
    if ((wc->wc_flags & MROCE_WC_SOLICITED) || wc->status != MROCE_WC_SUCCESS)
        cq->nsol++;
    return 0;
}

int mre_cq_poll(mre_cq *cq, int n, struct mroce_wc *wc)
{
    if (!cq || n < 0 || (n && !wc))
        return MROCE_EINVAL;
    int k = 0;
    while (k < n && cq->count) {
        wc[k++] = cq->ring[cq->head];
        if (++cq->head == cq->cap)
            cq->head = 0;
        cq->count--;
    }
    return k;
}

uint32_t mre_cq_count(const mre_cq *cq)
{
    return cq ? cq->count : 0;
}

uint32_t mre_cq_solicited(const mre_cq *cq)
{
    return cq ? cq->nsol : 0;
}

void mre_cq_free_all(mre_ep *ep)
{
    while (ep->cqs) {
        mre_cq *cq = ep->cqs;
        ep->cqs = cq->next;
        mre_mem_free(&ep->mem, cq->ring);
        mre_mem_free(&ep->mem, cq);
    }
}
