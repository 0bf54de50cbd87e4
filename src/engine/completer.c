/*
 * completer.c - ACKs and NAKs in: acknowledged packets, RTT, congestion
 * feedback and send completions.
 *
 * Each ACK is applied to the transmit ring (txring.c) PSN by PSN; what it
 * says about losses goes to the loss detector (loss.c), which also owns the
 * loss timers; acknowledged response packets are reported to the responder
 * (mre_resp_on_acked(), the one seam from this stage to another).  Send
 * completions are produced strictly in posting order, per stream on a QP
 * of several streams (stream.c).
 */
#include "engine_int.h"
#include "../wire/seeded_fault.h"

static void update_rtt(mre_qp *qp, mroce_tstamp rtt)
{
    if (!qp->min_rtt || rtt < qp->min_rtt)
        qp->min_rtt = rtt;
    if (!qp->srtt) {
        qp->srtt = rtt;
        qp->rttvar = rtt / 2;
    } else {
        mroce_tstamp d = qp->srtt > rtt ? qp->srtt - rtt : rtt - qp->srtt;
        qp->rttvar = (3 * qp->rttvar + d) / 4;
        qp->srtt = (7 * qp->srtt + rtt) / 8;
    }
    qp->cc.srtt = qp->srtt;
    qp->cnt.rtt_last = rtt;
}

static void swqe_acked(mre_qp *qp, uint32_t msn)
{
    struct mre_swqe *w = &qp->sq[msn & qp->sq_mask];
    if (w->state == SWQE_POSTED && w->msn == msn)
        w->acked_pkts++;
}

/* Acknowledge PSN psn (for ACK a); returns 1 if newly acknowledged. */
static int ack_one(mre_qp *qp, uint32_t psn, const struct mrw_ack_hdr *a,
                   mroce_tstamp rtt, uint32_t *acked_bytes,
                   uint32_t *lost_bytes)
{
    uint32_t idx = psn & qp->tx_mask;
    uint32_t echo_psn = a->echo_psn;
    struct mre_txent *e = &qp->tx[idx];
    if (e->state == TX_ACKED || e->state == TX_FREE)
        return 0;
    if (e->state == TX_INFLIGHT && e->probe_from != MROCE_PATH_NONE)
        mre_loss_probe_proves(qp, e, psn, a, lost_bytes);
    if (e->state == TX_INFLIGHT) {
        /* What was sent earlier on its path and is still out is lost. */
        mre_loss_on_path_ack(qp, idx, lost_bytes);
        if (e->state == TX_INFLIGHT) {
            if (!e->retx && e->sent_time > qp->rack_time)
                qp->rack_time = e->sent_time;
            mre_txr_unflight(qp, idx);
            mre_path_on_ack(&qp->paths, e->path,
                            psn == echo_psn && !e->retx ? rtt : 0, qp->min_rtt);
            /* CC-22: a clean acknowledgement grows its path's window. */
            if (!qp->path_slots[e->path].ce_last)
                mre_cc_path_feedback(&qp->cc, &qp->paths, e->path, 0,
                                     (uint32_t)e->len + MROCE_MAX_DATA_HDR_LEN +
                                         MROCE_CRC_LEN);
        }
    }
    /* PATH-23, also for a probe already declared lost: it got there, if
     * the ACK proves that transmission arrived (its only one, or the one
     * echoed), not an earlier copy over another plane. */
    if (!e->retx || (psn == echo_psn && (uint32_t)e->sent_time == a->echo_ts))
        mre_plane_on_path_ack(qp, e->path);
    e->state = TX_ACKED;
    qp->tx_sacked[idx >> 6] |= 1ull << (idx & 63);
    e->probe = 0;
    *acked_bytes += e->len;
    if (e->kind == TXK_REQ)
        swqe_acked(qp, e->ref);
    else
        mre_resp_on_acked(qp, e->ref);
    return 1;
}

void mre_comp_on_ack(mre_qp *qp, const struct mrw_pkt *pkt, mroce_tstamp now)
{
    const struct mrw_ack_hdr *a = &pkt->u.ack;
    /* Acknowledges what we never sent, or carries more SACK words than
     * this side accepts (REL-42). */
    if (mrw_psn_diff(a->cum_psn, qp->snd_nxt) > 0 ||
        32u * a->sack_words > qp->sack_span) {
        qp->cnt.drop_invalid++;
        return;
    }
    /* RTT from the echoed timestamp; the receiver's hold time removed. */
    mroce_tstamp rtt = 0;
    uint32_t raw = (uint32_t)now - a->echo_ts;
    if (raw < 0x80000000u && !(a->echo_flags & MROCE_ECHO_DUP)) {
        rtt = raw > a->ack_delay ? raw - a->ack_delay : raw;
        if (rtt == 0)
            rtt = 1;
        update_rtt(qp, rtt);
    }
    /* RACK: the echoed timestamp says a packet sent at that time arrived,
     * whichever transmission it was, so it is unambiguous even for
     * retransmissions (under heavy loss most packets in flight are). */
    if (raw < 0x80000000u && now - raw > qp->rack_time)
        qp->rack_time = now - raw;
    /* Which path did the echoed packet take?  Only if it is this very
     * transmission (its timestamp matches). */
    int echo_slot = -1;
    if (mrw_psn_diff(a->echo_psn, qp->snd_una) >= 0 &&
        mrw_psn_diff(a->echo_psn, qp->snd_nxt) < 0) {
        const struct mre_txent *e = &qp->tx[a->echo_psn & qp->tx_mask];
        if (e->state == TX_INFLIGHT && (uint32_t)e->sent_time == a->echo_ts &&
            qp->path_slots[e->path].entropy == a->echo_entropy)
            echo_slot = e->path;
    }
    if (echo_slot >= 0) {
        int ce = (a->echo_flags & MROCE_ECHO_CE) != 0;
        mre_path_on_ecn_echo(&qp->paths, (uint16_t)echo_slot, ce);
        mre_path_on_echo(&qp->paths, (uint16_t)echo_slot, now);
        mre_cc_path_on_echo(&qp->cc, &qp->paths, (uint16_t)echo_slot, ce,
                            rtt); /* CC-21 */
    }

    uint32_t acked_bytes = 0, lost_bytes = 0, acked = 0;
    uint32_t high = qp->snd_una;
    for (uint32_t psn = qp->snd_una; mrw_psn_diff(psn, a->cum_psn) < 0; psn++) {
        acked += (uint32_t)ack_one(qp, psn, a, rtt, &acked_bytes, &lost_bytes);
        high = psn + 1;
    }
    /* A wide SACK (REL-42) repeats what earlier ACKs told: only its bits
     * not yet acknowledged are looked at, so an ACK costs O(words) plus
     * its news, not O(PSNs reported). */
    for (int j = 0; j < a->sack_words; j++) {
        uint32_t w = a->sack[j] &
                     ~mre_txr_sacked_word(qp,
                                          a->cum_psn + 1 + (uint32_t)(32 * j));
        while (w) {
            int i = __builtin_ctz(w);
            w &= w - 1;
            uint32_t psn = a->cum_psn + 1 + (uint32_t)(32 * j + i);
            if (mrw_psn_diff(psn, qp->snd_una) < 0 ||
                mrw_psn_diff(psn, qp->snd_nxt) >= 0)
                continue;
            acked += (uint32_t)ack_one(qp, psn, a, rtt, &acked_bytes,
                                       &lost_bytes);
            if (mrw_psn_diff(psn + 1, high) > 0)
                high = psn + 1;
        }
    }
    if (mrw_psn_diff(high, qp->snd_high_acked) > 0)
        qp->snd_high_acked = high;
    mre_txr_advance_una(qp);
    if (mrw_psn_diff(qp->snd_high_acked, qp->snd_una) < 0)
        qp->snd_high_acked = qp->snd_una;

    if (acked) {
        qp->last_progress = now;
        qp->heard = now;
        qp->probes_sent = 0;
        qp->backoff = 0;
        qp->consec_timeouts = 0;
    }
    mre_loss_ooo_scan(qp, now, &lost_bytes, 0);

    /* ECN counts are cumulative; ACKs may arrive out of order. */
    uint32_t dce = 0, drx = 0;
    if (mrw_psn_diff(a->rx_count, qp->last_rx) > 0) {
        drx = a->rx_count - qp->last_rx;
        dce = mrw_psn_diff(a->ce_count, qp->last_ce) > 0
                  ? a->ce_count - qp->last_ce
                  : 0;
        qp->last_rx = a->rx_count;
        qp->last_ce = a->ce_count;
    }
    struct mre_cc_ack ev = {
        .acked_bytes = acked_bytes,
        .acked_pkts = acked,
        .ce_pkts = dce,
        .rx_pkts = drx,
        .rtt = rtt,
        .inflight = qp->inflight_bytes,
        .starved = qp->starved,
        .now = now,
        .held = a->ack_delay,
    };
    qp->starved = 0;
    if (!qp->cc.base_rtt || (rtt && rtt < qp->cc.base_rtt))
        qp->cc.base_rtt = rtt ? rtt : qp->cc.base_rtt;
    qp->cc.ops->on_ack(&qp->cc, &ev);
    if (qp->cc.jumped)
        mre_cc_path_raise(&qp->cc, &qp->paths); /* CC-40 */
    if (lost_bytes)
        qp->cc.ops->on_loss(&qp->cc, lost_bytes, now);
    /* After the congestion feedback: the stalled ACK's delay sample and the
     * losses it exposes belong to the spurious episode too. */
    if (acked && qp->rto_undo)
        mre_loss_rto_verdict(qp, a, raw);
    if (qp->rh.on) {
        qp->peer_credit = mre_rh_on_hint(qp, a->credit, now); /* CC-27 */
    } else if (a->credit != MROCE_CREDIT_UNLIMITED) {
        uint32_t floor = (uint32_t)qp->mtu + MROCE_MAX_DATA_HDR_LEN +
                         MROCE_CRC_LEN;
        qp->peer_credit = a->credit < floor ? floor : a->credit;
    } else {
        qp->peer_credit = MROCE_CREDIT_UNLIMITED;
    }
    mre_comp_complete_sends(qp);
    mre_loss_arm_timer(qp, now);
    mre_qp_try_close(qp, now);
}

static enum mroce_wc_status nak_status(uint8_t code)
{
    switch (code) {
    case MROCE_NAK_REMOTE_ACCESS_KEY:
    case MROCE_NAK_REMOTE_ACCESS_BOUNDS:
    case MROCE_NAK_REMOTE_ACCESS_PERM:
        return MROCE_WC_REM_ACCESS_ERR;
    case MROCE_NAK_REMOTE_OP_ERROR:
        return MROCE_WC_REM_OP_ERR;
    default:
        return MROCE_WC_REM_INV_REQ_ERR;
    }
}

void mre_comp_on_nak(mre_qp *qp, const struct mrw_pkt *pkt, mroce_tstamp now)
{
    const struct mrw_nak_hdr *n = &pkt->u.nak;
    uint32_t psn = n->nak_psn;
    if (mrw_psn_diff(psn, qp->snd_una) < 0 ||
        mrw_psn_diff(psn, qp->snd_nxt) >= 0) {
        qp->cnt.drop_stale++;
        return;
    }
    struct mre_txent *e = &qp->tx[psn & qp->tx_mask];
    if (e->kind != TXK_REQ || e->state == TX_ACKED || e->state == TX_FREE) {
        qp->cnt.drop_stale++;
        return;
    }
    struct mre_swqe *w = &qp->sq[e->ref & qp->sq_mask];
    if (w->state != SWQE_POSTED || w->msn != e->ref) {
        qp->cnt.drop_stale++;
        return;
    }
    /* REL-28: the NAK's Cum PSN acknowledges everything before it, as an
     * ACK without SACK words would, before the code is acted on.  Without
     * this, WRs that finished just before a fatal NAK (their coalesced ACK
     * not sent yet) would be flushed instead of completing successfully.
     * No RTT sample (DUP echo, LOSS-3), no ECN news (counts unchanged). */
    struct mrw_pkt ack;
    memset(&ack, 0, sizeof(ack));
    ack.base.opcode = MROCE_OP_ACK;
    ack.u.ack.cum_psn = n->cum_psn;
    ack.u.ack.echo_psn = qp->snd_una - 1;
    ack.u.ack.echo_flags = MROCE_ECHO_DUP;
    ack.u.ack.rx_count = qp->last_rx;
    ack.u.ack.ce_count = qp->last_ce;
    ack.u.ack.credit = qp->rh.on ? qp->rh.hint : qp->peer_credit;
    mre_comp_on_ack(qp, &ack, now);
    if (w->state != SWQE_POSTED || w->msn != e->ref || e->state == TX_ACKED ||
        e->state == TX_FREE)
        return; /* Cum PSN covered the NAKed PSN itself: the ACK wins */
    if (n->code == MROCE_NAK_RNR) {
        qp->cnt.rnr_naks_rx++;
        mroce_tstamp delay = (mroce_tstamp)(n->rnr_delay ? n->rnr_delay : 1) *
                             10000;
        /* Count one RNR round per message: every packet of a multi-packet
         * SEND may be NAKed, and on a slow link one round's NAKs can span
         * more than the delay.  A new round is a NAK for a packet the RNR
         * timer released (cause RNR) after the last counted round; NAKs for
         * the rest of the burst, or for first transmissions of the message's
         * later packets, belong to the round already counted. */
        if (!w->rnr_tries ||
            (e->cause == LOSS_RNR && e->sent_time >= w->rnr_last)) {
            if (w->rnr_tries < 255)
                w->rnr_tries++;
            w->rnr_last = now;
        }
        /* The peer is there, only short of receives (REL-32). */
        qp->heard = now;
        /* REL-37: rnr_retry 7 retries forever, as in verbs. */
        if (qp->attr.rnr_retry != MROCE_RNR_RETRY_FOREVER &&
            w->rnr_tries > qp->attr.rnr_retry) {
            w->status = MROCE_WC_RNR_RETRY_EXC_ERR;
            mre_qp_enter_error(qp);
            return;
        }
        /* Hold every packet of this message until the delay passes. */
        for (uint32_t p = qp->snd_una; p != qp->snd_nxt; p++) {
            struct mre_txent *t = &qp->tx[p & qp->tx_mask];
            if (t->kind == TXK_REQ && t->ref == e->ref &&
                (t->state == TX_INFLIGHT || t->state == TX_LOST)) {
                if (t->state == TX_INFLIGHT)
                    mre_txr_unflight(qp, p & qp->tx_mask);
                t->state = TX_RNR;
            }
        }
        if (now + delay < qp->rnr_deadline)
            qp->rnr_deadline = now + delay;
        mre_loss_arm_timer(qp, now);
        return;
    }
    w->status = (uint8_t)nak_status(n->code);
    mre_qp_enter_error(qp);
}

static enum mroce_wc_opcode wc_opcode_of(const struct mre_swqe *w)
{
    switch (w->opcode) {
    case MROCE_WR_WRITE:
    case MROCE_WR_WRITE_WITH_IMM:
        return MROCE_WC_WRITE;
    case MROCE_WR_READ:
        return MROCE_WC_READ;
    case MROCE_WR_FETCH_ADD:
        return MROCE_WC_FETCH_ADD;
    case MROCE_WR_CMP_SWAP:
        return MROCE_WC_CMP_SWAP;
    default:
        return MROCE_WC_SEND;
    }
}

static int swqe_is_rd(const struct mre_swqe *w)
{
    return w->opcode == MROCE_WR_READ || w->opcode == MROCE_WR_FETCH_ADD ||
           w->opcode == MROCE_WR_CMP_SWAP;
}

/* Every request packet acknowledged (cumulatively or by SACK, which is
 * never reneged, REL-13) or, for READ and atomics, the whole response
 * placed. */
static int swqe_finished(const struct mre_swqe *w)
{
    return swqe_is_rd(w) ? w->resp_done : w->acked_pkts >= w->npkts;
}

/* Complete finished WQE w: its completion, if signaled, and its regions. */
static void complete_swqe(mre_qp *qp, struct mre_swqe *w)
{
    if (swqe_is_rd(w)) {
        qp->rd_outstanding--;
        /* The response proves the request arrived: retire its packet
         * so it is never resent for a finished work request. */
        struct mre_txent *e = &qp->tx[w->first_psn & qp->tx_mask];
        if (mrw_psn_diff(w->first_psn, qp->snd_una) >= 0 &&
            mrw_psn_diff(w->first_psn, qp->snd_nxt) < 0 && e->kind == TXK_REQ &&
            e->ref == w->msn && e->state != TX_ACKED && e->state != TX_FREE) {
            if (e->state == TX_INFLIGHT)
                mre_txr_unflight(qp, w->first_psn & qp->tx_mask);
            e->state = TX_ACKED;
            e->probe = 0;
        }
    }
    if (w->flags & MROCE_SEND_SIGNALED) {
        struct mroce_wc wc;
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = w->wr_id;
        wc.status = MROCE_WC_SUCCESS;
        wc.opcode = wc_opcode_of(w);
        wc.byte_len = w->length;
        wc.qp_num = qp->qpn;
        wc.stream = w->stream;
        mre_cq_push(qp->attr.send_cq, &wc);
        qp->cnt.completions++;
    }
    mre_qp_release_swqe(qp, w);
    w->state = SWQE_DONE;
}

/* Several streams: a WQE completes once finished and every earlier WQE of
 * its stream has completed, whatever other streams' WQEs before it wait
 * for (SEM-33, SEM-34).  Completed WQEs stay in the ring until its head
 * passes them. */
static void complete_sends_streams(mre_qp *qp)
{
    for (uint32_t i = qp->sq_head; i != qp->sq_tx; i++) {
        struct mre_swqe *w = &qp->sq[i & qp->sq_mask];
        if (w->state != SWQE_POSTED)
            continue;
        struct mre_stream *st = &qp->streams[w->stream];
        if (w->smsn != st->cmp_msn || !swqe_finished(w)) {
            if (MROCE_SEEDED_FAULT(STREAM_SEND_HOL))
                break; /* the QP-wide order of one stream */
            continue;
        }
        complete_swqe(qp, w);
        st->cmp_msn++;
    }
    while (qp->sq_head != qp->sq_tx &&
           qp->sq[qp->sq_head & qp->sq_mask].state == SWQE_DONE)
        qp->sq_head++;
}

void mre_comp_complete_sends(mre_qp *qp)
{
    if (qp->streams_on) {
        complete_sends_streams(qp);
    } else {
        while (qp->sq_head != qp->sq_tx) {
            struct mre_swqe *w = &qp->sq[qp->sq_head & qp->sq_mask];
            if (!swqe_finished(w))
                break;
            complete_swqe(qp, w);
            qp->sq_head++;
        }
    }
    mre_txr_advance_una(qp);
}

void mre_comp_reset(mre_qp *qp)
{
    mre_comp_complete_sends(qp);
    while (qp->sq_head != qp->sq_tail) {
        struct mre_swqe *w = &qp->sq[qp->sq_head & qp->sq_mask];
        if (w->state == SWQE_DONE) { /* completed out of ring order */
            qp->sq_head++;
            continue;
        }
        struct mroce_wc wc;
        memset(&wc, 0, sizeof(wc));
        wc.wr_id = w->wr_id;
        wc.status = w->status != MROCE_WC_SUCCESS
                        ? (enum mroce_wc_status)w->status
                        : MROCE_WC_WR_FLUSH_ERR;
        wc.opcode = wc_opcode_of(w); /* error completions name it too */
        wc.qp_num = qp->qpn;
        wc.stream = w->stream;
        mre_cq_push(qp->attr.send_cq, &wc);
        qp->cnt.completions++;
        mre_qp_release_swqe(qp, w);
        w->state = SWQE_DONE;
        qp->sq_head++;
    }
}
