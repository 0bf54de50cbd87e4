/*
 * timers.c - the endpoint's timer heap: every QP with a deadline, ordered
 * by its earliest one, so mroce_ep_expiry() is O(1) and
 * mroce_ep_handle_expiry() touches only the QPs that are due.
 *
 * A QP's deadlines (ACK delay, loss/probe, out-of-order re-check, RNR,
 * handshake/close) change only while the engine works on that QP: in
 * mroce_ep_recv() for its packets, mroce_ep_write_pkt() when it sends,
 * handle_expiry() when it is due, and the API calls on it.  Each of those
 * ends with mroce_ep_timer_update(), which re-keys the QP here (O(log n)).
 * With thousands of QPs per endpoint (a simulated all-to-all) a scan over
 * every QP per call was the engine's largest cost.
 */
#include "engine_int.h"

static int before(const mroce_qp *a, const mroce_qp *b)
{
    return a->expiry_key < b->expiry_key;
}

static void heap_set(mroce_ep *ep, uint32_t i, mroce_qp *qp)
{
    ep->theap[i] = qp;
    qp->heap_idx = i;
}

static void sift_up(mroce_ep *ep, uint32_t i)
{
    mroce_qp *qp = ep->theap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!before(qp, ep->theap[p]))
            break;
        heap_set(ep, i, ep->theap[p]);
        i = p;
    }
    heap_set(ep, i, qp);
}

static void sift_down(mroce_ep *ep, uint32_t i)
{
    mroce_qp *qp = ep->theap[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= ep->theap_n)
            break;
        if (c + 1 < ep->theap_n && before(ep->theap[c + 1], ep->theap[c]))
            c++;
        if (!before(ep->theap[c], qp))
            break;
        heap_set(ep, i, ep->theap[c]);
        i = c;
    }
    heap_set(ep, i, qp);
}

void mroce_ep_timer_remove(mroce_ep *ep, mroce_qp *qp)
{
    uint32_t i = qp->heap_idx;
    if (i == MROCE_NONE32)
        return;
    qp->heap_idx = MROCE_NONE32;
    mroce_qp *last = ep->theap[--ep->theap_n];
    if (last == qp)
        return;
    heap_set(ep, i, last);
    sift_up(ep, i);
    sift_down(ep, last->heap_idx);
}

void mroce_ep_timer_update(mroce_ep *ep, mroce_qp *qp)
{
    mroce_tstamp e = mroce_qp_expiry(qp);
    if (e == MROCE_TSTAMP_INF) {
        mroce_ep_timer_remove(ep, qp);
        return;
    }
    if (qp->heap_idx == MROCE_NONE32) {
        qp->expiry_key = e;
        heap_set(ep, ep->theap_n++, qp);
        sift_up(ep, qp->heap_idx);
        return;
    }
    if (e == qp->expiry_key)
        return;
    qp->expiry_key = e;
    sift_up(ep, qp->heap_idx);
    sift_down(ep, qp->heap_idx);
}

mroce_tstamp mroce_ep_expiry(const mroce_ep *ep)
{
    if (!ep || ep->theap_n == 0)
        return MROCE_TSTAMP_INF;
    return ep->theap[0]->expiry_key;
}

void mroce_ep_handle_expiry(mroce_ep *ep, mroce_tstamp now)
{
    if (!ep)
        return;
    /* Each due QP is handled once per call: a QP whose timer is still due
     * afterwards waits for the next call rather than spinning here. */
    uint32_t budget = ep->theap_n;
    while (budget-- && ep->theap_n && ep->theap[0]->expiry_key <= now) {
        mroce_qp *qp = ep->theap[0];
        mroce_qp_ctrl_timer(qp, now);
        mroce_resp_ack_timer(qp, now);
        mroce_comp_timers(qp, now);
        if (qp->ctrl || qp->ack_now || mroce_req_has_data(qp))
            mroce_ep_mark_ready(ep, qp);
        mroce_ep_timer_update(ep, qp);
        if (qp->heap_idx == 0 && qp->expiry_key <= now)
            break; /* still due: the caller will come back */
    }
}
