/*
 * liveness.c - when a connected QP gives up on its peer, and the keepalive
 * that lets a passive side find out (REL-32..REL-37).
 *
 * The give-up rule is stated in time, not in retransmissions: a QP fails
 * for an unresponsive peer only once the peer has been silent for the QP's
 * peer_timeout (default 5 s), whatever the RTO backoff did meanwhile, so a
 * host stall of a second or two (a descheduled process, a paused VM) costs
 * retransmissions, never the connection.  "Silent" is measured from
 * qp->heard: the last ACK that acknowledged something of ours, the last
 * response to one of our READs or atomics, the last RNR NAK (the peer is
 * there, only short of receives), and, while nothing of ours is
 * outstanding, the last packet of any kind from the peer.
 *
 * A side with nothing outstanding (a WRITE target, a receiver waiting for
 * SENDs) has no retransmission to time out, so it asks: after a quarter of
 * peer_timeout without a packet it sends a keepalive, an ACK carrying
 * ACK_REQ (REL-34), and repeats it every sixteenth of peer_timeout while
 * the silence lasts; the peer answers each with a plain ACK (REL-35).  An
 * idle connection costs one such exchange per quarter of peer_timeout.
 * The silence fails the QP only once a keepalive sent after the peer's
 * last sign of life has had a sixteenth of peer_timeout to be answered:
 * in the normal course the last one goes at 15/16 of it, but a QP whose
 * own host stalled for longer than peer_timeout, or whose peer_timeout
 * was just shortened, asks once before it gives up.
 *
 * peer_timeout 0 turns the time rule off: retry_cnt timeouts alone fail a
 * QP, as in verbs, and no keepalive is sent (REL-32).
 *
 * qp->heard is written on every packet, but the timer is not re-keyed on
 * each: live_deadline stays where it is and, when it comes, moves on to
 * the deadline that the latest qp->heard gives.
 */
#include "engine_int.h"

/* Silence before the first keepalive, and between the later ones. */
static mroce_tstamp ka_idle(const mre_qp *qp)
{
    mroce_tstamp t = qp->attr.peer_timeout / 4;
    return t ? t : 1;
}

static mroce_tstamp ka_repeat(const mre_qp *qp)
{
    mroce_tstamp t = qp->attr.peer_timeout / 16;
    return t ? t : 1;
}

static mroce_tstamp silence(const mre_qp *qp, mroce_tstamp now)
{
    return now > qp->heard ? now - qp->heard : 0;
}

void mre_live_start(mre_qp *qp, mroce_tstamp now)
{
    qp->heard = now;
    qp->live_deadline = qp->attr.peer_timeout ? now + ka_idle(qp)
                                              : MROCE_TSTAMP_INF;
}

int mre_live_expired(const mre_qp *qp, mroce_tstamp now)
{
    return silence(qp, now) >= qp->attr.peer_timeout;
}

void mre_live_fail(mre_qp *qp)
{
    if (qp->sq_head != qp->sq_tail) {
        qp->sq[qp->sq_head & qp->sq_mask].status = MROCE_WC_RETRY_EXC_ERR;
    } else {
        /* No send work: the oldest receive not finished tells a receiver
         * why, where a flush alone would look like a local one. */
        struct mre_rwqe *r;
        for (uint32_t k = 0; (r = mre_resp_rq_next(qp, &k));) {
            if (!r->done) {
                r->done = 1;
                r->status = MROCE_WC_RETRY_EXC_ERR;
                break;
            }
        }
    }
    qp->cnt.peer_timeouts++;
    mre_qp_enter_error(qp);
}

void mre_live_timer(mre_qp *qp, mroce_tstamp now)
{
    if (qp->live_deadline > now)
        return;
    if ((qp->state != MROCE_QPS_RTS && qp->state != MROCE_QPS_CLOSING) ||
        !qp->attr.peer_timeout) {
        qp->live_deadline = MROCE_TSTAMP_INF;
        return;
    }
    mroce_tstamp s = silence(qp, now);
    if (s < ka_idle(qp)) {
        qp->live_deadline = qp->heard + ka_idle(qp); /* heard meanwhile */
        return;
    }
    if (s >= qp->attr.peer_timeout && qp->ka_time > qp->heard &&
        now - qp->ka_time >= ka_repeat(qp) &&
        (qp->snd_una == qp->snd_nxt ||
         qp->consec_timeouts > qp->attr.retry_cnt)) {
        mre_live_fail(qp);
        return;
    }
    /* Silent for a while (or for peer_timeout, with fewer than retry_cnt
     * timeouts of outstanding data so far: LOSS-14 decides at the next
     * one): ask the peer. */
    qp->ka |= KA_PROBE;
    qp->ack_now = 1;
    qp->ka_time = now;
    mroce_tstamp next = now + ka_repeat(qp);
    mroce_tstamp end = qp->heard + qp->attr.peer_timeout;
    qp->live_deadline = s < qp->attr.peer_timeout && next > end ? end : next;
}

void mre_live_on_probe(mre_qp *qp)
{
    if (qp->state != MROCE_QPS_RTS && qp->state != MROCE_QPS_CLOSING)
        return;
    qp->ka |= KA_ANSWER;
    qp->ack_now = 1;
}
