/*
 * timers.c - the endpoint's timer heap: every QP with a deadline, ordered
 * by its earliest one, so mre_ep_expiry() is O(1) and
 * mre_ep_handle_expiry() touches only the QPs that are due.
 *
 * A QP's deadlines (ACK delay, loss/probe, out-of-order re-check, RNR,
 * handshake/close, keepalive/peer silence) change only while the engine
 * works on that QP: in mre_ep_recv() for its packets,
 * mre_ep_write_pkt() when it sends, handle_expiry() when it is due, and
 * the API calls on it.  Each of those
 * ends with mre_timer_update(), which re-keys the QP here (O(log n)).
 * An endpoint can hold thousands of QPs (a simulated all-to-all), so no
 * call scans them all.
 */
#include "engine_int.h"

/* The heap is an array of (deadline, QP) entries and the positions are
 * kept by slot in ep->theap_pos, so a sift reads and writes those two
 * arrays only: reading the deadline through each QP and writing the
 * position into it would make every level of a sift a cache miss on
 * another QP (a simulated endpoint has many, a few KB each). */
static void heap_set(mre_ep *ep, uint32_t i, struct mre_theap_ent e)
{
    ep->theap[i] = e;
    ep->theap_pos[e.slot] = i;
}

static void sift_up(mre_ep *ep, uint32_t i)
{
    struct mre_theap_ent e = ep->theap[i];
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!(e.key < ep->theap[p].key))
            break;
        heap_set(ep, i, ep->theap[p]);
        i = p;
    }
    heap_set(ep, i, e);
}

static void sift_down(mre_ep *ep, uint32_t i)
{
    struct mre_theap_ent e = ep->theap[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= ep->theap_n)
            break;
        if (c + 1 < ep->theap_n && ep->theap[c + 1].key < ep->theap[c].key)
            c++;
        if (!(ep->theap[c].key < e.key))
            break;
        heap_set(ep, i, ep->theap[c]);
        i = c;
    }
    heap_set(ep, i, e);
}

void mre_timer_remove(mre_ep *ep, mre_qp *qp)
{
    uint32_t i = ep->theap_pos[qp->slot];
    if (i == MROCE_NONE32)
        return;
    ep->theap_pos[qp->slot] = MROCE_NONE32;
    struct mre_theap_ent last = ep->theap[--ep->theap_n];
    if (last.slot == qp->slot)
        return;
    heap_set(ep, i, last);
    sift_up(ep, i);
    sift_down(ep, ep->theap_pos[last.slot]);
}

void mre_timer_update(mre_ep *ep, mre_qp *qp)
{
    mroce_tstamp e = mre_qp_expiry(qp);
    if (e == MROCE_TSTAMP_INF) {
        mre_timer_remove(ep, qp);
        return;
    }
    uint32_t i = ep->theap_pos[qp->slot];
    if (i == MROCE_NONE32) {
        i = ep->theap_n++;
        heap_set(ep, i, (struct mre_theap_ent){e, qp->slot, 0});
        sift_up(ep, i);
        return;
    }
    mroce_tstamp old = ep->theap[i].key;
    if (e == old)
        return;
    ep->theap[i].key = e;
    /* An earlier deadline can only move up, a later one only down: the
     * other sift would compare and move nothing. */
    if (e < old)
        sift_up(ep, i);
    else
        sift_down(ep, i);
}

mroce_tstamp mre_ep_expiry(const mre_ep *ep)
{
    if (!ep || ep->theap_n == 0)
        return MROCE_TSTAMP_INF;
    return ep->theap[0].key;
}

void mre_ep_handle_expiry(mre_ep *ep, mroce_tstamp now)
{
    if (!ep)
        return;
    /* Each due QP is handled once per call: a QP whose timer is still due
     * afterwards waits for the next call rather than spinning here. */
    uint32_t budget = ep->theap_n;
    while (budget-- && ep->theap_n && ep->theap[0].key <= now) {
        mre_qp *qp = ep->qps[ep->theap[0].slot];
        mre_qp_ctrl_timer(qp, now);
        mre_resp_ack_timer(qp, now);
        mre_loss_timers(qp, now);
        mre_live_timer(qp, now);
        mre_rh_timer(qp, now);
        if (qp->ctrl || qp->ack_now || mre_req_has_data(qp))
            mre_ep_mark_ready(ep, qp);
        mre_timer_update(ep, qp);
        if (ep->theap_pos[qp->slot] == 0 && ep->theap[0].key <= now)
            break; /* still due: the caller will come back */
    }
}
