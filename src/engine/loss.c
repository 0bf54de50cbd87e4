/*
 * loss.c - loss detection and the loss timers: which packets in flight are
 * lost, when to probe, when a retransmission timeout fires, and whether a
 * timeout was spurious.
 *
 * A gap in the acknowledged PSNs is never by itself a loss: with spraying,
 * packets on different paths overtake each other.  A packet is declared lost
 * only by (LOSS-*):
 *   path  - a packet sent later on the same path was acknowledged (a path
 *           keeps order, so the earlier one is gone);
 *   ooo   - the highest acknowledged PSN is ooo_thresh beyond it and it has
 *           been out for at least the lowest RTT;
 *   probe - no ACK for a probe timeout: the newest outstanding packet the
 *           receiver can acknowledge (within the SACK span) is resent to
 *           solicit a SACK that exposes the real losses;
 *   rto   - no progress for a retransmission timeout (exponential backoff;
 *           retry_cnt timeouts in a row and peer_timeout of silence fail
 *           the QP, liveness.c).
 * The completer feeds it each acknowledgement; the requester and the
 * completer re-arm its timer; it changes the transmit ring only through
 * txring.c.  Like ngtcp2's recovery code over its rtb, it sits between the
 * stages and the ring and calls neither stage.
 */
#include "engine_int.h"

/* Before the first RTT sample: five min_rto, or, if the handshake took
 * longer than that allows for (a long-haul path), three handshake times
 * plus the peer's ACK delay (LOSS-26; the listener's handshake time,
 * LOSS-29), so the first window's ACKs are not taken for a timeout. */
static mroce_tstamp rto_initial(const mre_qp *qp)
{
    mroce_tstamp r = qp->attr.min_rto * 5;
    mroce_tstamp h = 3 * qp->hs_rtt + qp->peer_ack_delay;
    return qp->hs_rtt && h > r ? h : r;
}

static mroce_tstamp rto_base(const mre_qp *qp)
{
    if (!qp->srtt)
        return rto_initial(qp);
    mroce_tstamp r = qp->srtt + 4 * qp->rttvar + qp->peer_ack_delay;
    return r < qp->attr.min_rto ? qp->attr.min_rto : r;
}

/* Backed off per timeout in a row (LOSS-8), and on a listener waiting for
 * its CONNECT_RESP to be confirmed, per CONNECT_RESP resent (LOSS-30; no
 * timeout happens then, so backoff is 0). */
static mroce_tstamp cur_rto(const mre_qp *qp)
{
    mroce_tstamp r = rto_base(qp);
    int n = qp->backoff + qp->hs_probes;
    for (int i = 0; i < n && r < qp->attr.max_rto; i++)
        r *= 2;
    return r > qp->attr.max_rto ? qp->attr.max_rto : r;
}

/* The probe timeout (LOSS-9): min(RTO_eff, 2 srtt + max_ack_delay), with
 * the peer's max_ack_delay (LOSS-25), as in the RTO and the loss guards. */
static mroce_tstamp cur_pto(const mre_qp *qp)
{
    mroce_tstamp rto = cur_rto(qp);
    mroce_tstamp pto = qp->srtt ? 2 * qp->srtt + qp->peer_ack_delay : rto;
    return pto < rto ? pto : rto;
}

void mre_loss_hs_confirmed(mre_qp *qp, mroce_tstamp now)
{
    /* LOSS-29: from the first CONNECT_RESP, so an upper bound on the RTT
     * when one was lost or the peer's first packet waited. */
    qp->hs_rtt = now > qp->conn_start ? now - qp->conn_start : 1;
    qp->hs_wait = 0;
    qp->hs_probes = 0;
    mre_loss_arm_timer(qp, now);
}

void mre_loss_arm_timer(mre_qp *qp, mroce_tstamp now)
{
    (void)now;
    if (qp->snd_una == qp->snd_nxt || qp->inflight_pkts == 0) {
        qp->loss_deadline = MROCE_TSTAMP_INF;
        return;
    }
    qp->loss_deadline = qp->last_progress +
                        (qp->probes_sent ? cur_rto(qp) : cur_pto(qp));
}

/* Declare an in-flight packet lost; may retire its path, whose remaining
 * in-flight packets are then lost too (they went into the dead path). */
static void lose_ex(mre_qp *qp, uint32_t idx, int cause, uint32_t *lost_bytes,
                    int blame_path);

static void lose(mre_qp *qp, uint32_t idx, int cause, uint32_t *lost_bytes)
{
    lose_ex(qp, idx, cause, lost_bytes, 1);
}

/* Count a loss against slot `path` (PATH-9); if that retires it, its
 * in-flight packets went into the dead path too: lost, cause path. */
static void blame(mre_qp *qp, uint16_t path)
{
    int retired = mre_path_on_loss(&qp->paths, path);
    mre_plane_on_loss(qp, path, retired); /* PATH-21, PATH-25 */
    if (retired) {
        qp->cnt.paths_retired++;
        struct mre_path *p = &qp->path_slots[path];
        while (p->list_head != MROCE_PATH_NONE) {
            uint32_t i = p->list_head;
            uint32_t q = qp->snd_una + ((i - qp->snd_una) & qp->tx_mask);
            mre_txr_mark_lost(qp, q, LOSS_PATH);
        }
    }
}

/* blame_path = 0: the loss says nothing about its path (an RTO's sweep
 * beyond each path's oldest packet), so it does not count towards the
 * path's consecutive losses and cannot retire it. */
static void lose_ex(mre_qp *qp, uint32_t idx, int cause, uint32_t *lost_bytes,
                    int blame_path)
{
    struct mre_txent *e = &qp->tx[idx];
    uint16_t path = e->path;
    uint32_t psn = qp->snd_una + ((idx - qp->snd_una) & qp->tx_mask);
    /* Only a path's first loss since its last ack is a congestion signal
     * (CC-12).  Congestion drops at a shared queue hit all paths alike;
     * losses that repeat on one entropy (and those swept up when it is
     * retired) mean the path is broken, and cutting cwnd for each of them
     * would starve the paths that still work. */
    if (qp->path_slots[path].consec_losses == 0)
        *lost_bytes += e->len;
    mre_txr_mark_lost(qp, psn, cause);
    if (blame_path)
        blame(qp, path);
}

void mre_loss_on_path_ack(mre_qp *qp, uint32_t idx, uint32_t *lost_bytes)
{
    struct mre_txent *e = &qp->tx[idx];
    struct mre_path *p = &qp->path_slots[e->path];
    if (!e->retx)
        while (p->list_head != idx && p->list_head != MROCE_PATH_NONE &&
               qp->tx[p->list_head].path_seq < e->path_seq)
            lose(qp, p->list_head, LOSS_PATH, lost_bytes);
}

/* LOSS-20: the ACK newly acknowledging an in-flight packet whose latest
 * transmission is a tail-loss probe echoes that very probe (its TSval, not
 * a duplicate): the receiver got the PSN from the probe first, so the
 * transmission the probe replaced was lost.  Charged to its slot like any
 * loss (PATH-9, LOSS-18), unless the slot has been retired since.  So
 * packets sent into a dead path and rescued by probes still count against
 * that path: with a small window the newest packet is often the one on the
 * dead path, and a path charged nothing for it would stay in use. */
void mre_loss_probe_proves(mre_qp *qp, struct mre_txent *e, uint32_t psn,
                           const struct mrw_ack_hdr *a, uint32_t *lost_bytes)
{
    uint16_t from = e->probe_from;
    if (from >= qp->paths.npaths || from == e->path || psn != a->echo_psn ||
        (a->echo_flags & MROCE_ECHO_DUP) ||
        a->echo_ts != (uint32_t)e->sent_time ||
        qp->path_slots[from].entropy != e->probe_from_entropy)
        return;
    if (qp->path_slots[from].consec_losses == 0)
        *lost_bytes += e->len;
    blame(qp, from);
}

/* The floor of LOSS-7's guards (c) for a packet on slot `path`: the larger
 * of its own path's RTO-style bound (srtt + 4 rttvar) and the slowest
 * path's srtt (`slowest`, from mre_pathset_max_srtt; twice that for a slot
 * with no sample yet, LOSS-28), plus max_ack_delay;
 * 0 while neither has a sample.  The connection's srtt and min_rtt are
 * dominated by the fast paths; a packet sprayed onto a path with a deeper
 * queue (an oversubscribed spine link while another is idle) is late by
 * that queue, not lost, and a slot's own estimate can be a burst old. */
static mroce_tstamp path_guard(const mre_qp *qp, uint16_t path,
                               mroce_tstamp slowest)
{
    const struct mre_path *p = &qp->path_slots[path];
    mroce_tstamp g = p->srtt ? p->srtt + 4 * p->rttvar : 0;
    /* LOSS-28: a fresh entropy may hash onto the deepest queue of all,
     * and `slowest`, smoothed, trails a queue that still grows. */
    mroce_tstamp s = p->srtt ? slowest : 2 * slowest;
    if (s > g)
        g = s;
    return g ? g + qp->peer_ack_delay : 0;
}

/* LOSS-7 for one packet: declares it lost or notes its guard time; returns
 * 0 if it waits for an ACK (step 2), else 1.  With nofloor set the path
 * floor (c) does not apply (LOSS-7 (d)). */
static int ooo_judge(mre_qp *qp, uint32_t psn, mroce_tstamp now, uint32_t end,
                     mroce_tstamp guard, mroce_tstamp tguard,
                     mroce_tstamp slowest, int nofloor, uint32_t *lost_bytes)
{
    struct mre_txent *e = &qp->tx[psn & qp->tx_mask];
    if (e->state != TX_INFLIGHT)
        return 1;
    mroce_tstamp g = mrw_psn_diff(psn, end) < 0 ? guard : tguard;
    if (g == MROCE_TSTAMP_INF)
        return 1;
    mroce_tstamp pg = nofloor ? 0 : path_guard(qp, e->path, slowest);
    if (pg > g)
        g = pg;
    /* Only what was sent before something that has been acknowledged
     * can be judged (RACK): a retransmission is younger than the ACKs
     * that made it; look again once later traffic is acknowledged. */
    if (e->sent_time >= qp->rack_time)
        return 0;
    if (now - e->sent_time >= g)
        lose(qp, psn & qp->tx_mask, LOSS_OOO, lost_bytes);
    else if (e->sent_time + g < qp->reo_deadline)
        qp->reo_deadline = e->sent_time + g;
    return 1;
}

/* Out-of-order loss (LOSS-7).  A packet below the highest acknowledged PSN
 * is lost once it has been out
 *   - at least the lowest RTT, if it is ooo_thresh or more PSNs behind;
 *   - at least a probe timeout (2*srtt + max_ack_delay), if it is closer:
 *     the SACK a probe would solicit is already here.  Without this a window
 *     smaller than ooo_thresh (a 100G/5us BDP is ~15 packets) holds packets
 *     sent into a dead path until an RTO;
 *   - and in both cases at least the floor of path_guard (its own path's
 *     srtt + 4 rttvar, the slowest path's srtt, plus max_ack_delay):
 *     reordering across sprayed paths is the spread of their delays, which
 *     the connection-wide srtt and min_rtt do not bound when one path's
 *     queue is much deeper than another's.
 * ACK-driven scans start where the previous one ended (O(new PSNs) per
 * ACK); packets still too young are re-checked by a full scan when
 * reo_deadline fires. */
void mre_loss_ooo_scan(mre_qp *qp, mroce_tstamp now, uint32_t *lost_bytes,
                       int full)
{
    mroce_tstamp guard = qp->min_rtt ? qp->min_rtt : qp->attr.min_rto;
    mroce_tstamp tguard = qp->srtt ? 2 * qp->srtt + qp->peer_ack_delay
                                   : MROCE_TSTAMP_INF;
    if (tguard < guard)
        tguard = guard;
    uint32_t end = qp->snd_high_acked - qp->attr.ooo_thresh;
    uint32_t una = qp->snd_una, psn = una;
    /* Taken before any judgement: a loss can retire a slot and change it.
     * The path set keeps the maximum (path.h): no slot is read unless it
     * fell since the last look. */
    mroce_tstamp slowest = mre_pathset_max_srtt(&qp->paths);
    /* LOSS-7 (d): the receiver acknowledges nothing beyond the SACK span
     * after its cumulative point (REL-15, REL-42: qp->sack_span).  Once the highest acknowledged
     * PSN is at the end of that span, the packet at snd_una holds up every
     * later acknowledgement: waiting the path floor for it (a slot sampled
     * during a host stall can raise it to several ms) only waits for the
     * RTO.  So it is judged without the floor, and by every ACK. */
    int blocked = mrw_psn_diff(qp->snd_high_acked, una) >
                  (int32_t)qp->sack_span;
    if (full) {
        qp->reo_deadline = MROCE_TSTAMP_INF;
    } else {
        /* Start at the first packet waiting for a later ACK (cursor), or
         * at the previous distance edge if that is lower: packets between
         * the old and the new edge just became eligible for guard (a). */
        uint32_t from = qp->ooo_cursor;
        if (mrw_psn_diff(qp->ooo_edge, from) < 0)
            from = qp->ooo_edge;
        if (mrw_psn_diff(from, psn) > 0 &&
            mrw_psn_diff(from, qp->snd_high_acked) <= 0)
            psn = from;
    }
    qp->ooo_edge = end;
    uint32_t first_wait = qp->snd_high_acked;
    if (blocked && psn != una &&
        !ooo_judge(qp, una, now, end, guard, tguard, slowest, 1, lost_bytes))
        first_wait = una;
    for (; mrw_psn_diff(psn, qp->snd_high_acked) < 0; psn++) {
        int nofloor = blocked && psn == una;
        if (!ooo_judge(qp, psn, now, end, guard, tguard, slowest, nofloor,
                       lost_bytes) &&
            first_wait == qp->snd_high_acked)
            first_wait = psn; /* waits for an ACK: later scans start here */
    }
    qp->ooo_cursor = first_wait;
}

/* Spurious-RTO detection (LOSS-19).  The first ACK after an RTO episode
 * that newly acknowledges data decides it: if that ACK echoes the timestamp
 * of a transmission made before the episode's first RTO (not a DUP echo,
 * which may name a later copy), an original got through and the timeout
 * was spurious.  Then the congestion state is put back as it was before the
 * RTO (CC-13) and the path losses the RTOs charged are taken back, so a
 * stall of either host neither collapses cwnd nor retires paths.  Either
 * way the episode is over. */
void mre_loss_rto_verdict(mre_qp *qp, const struct mrw_ack_hdr *a, uint32_t raw)
{
    qp->rto_undo = 0;
    if ((a->echo_flags & MROCE_ECHO_DUP) || raw >= 0x80000000u ||
        (int32_t)(a->echo_ts - (uint32_t)qp->rto_time) >= 0)
        return;
    qp->cnt.spurious_rto++;
    if (qp->cc.ops->undo) {
        qp->cc.ops->undo(&qp->cc, &qp->rto_cc);
    } else {
        qp->cc.cwnd = qp->rto_cc.cwnd;
        qp->cc.last_decrease = qp->rto_cc.last_decrease;
        qp->cc.ai_acc = qp->rto_cc.ai_acc;
        memcpy(qp->cc.scratch, qp->rto_cc.scratch, sizeof(qp->cc.scratch));
    }
    for (uint16_t i = 0; i < qp->paths.npaths; i++) {
        struct mre_path *p = &qp->path_slots[i];
        uint8_t n = p->rto_losses < p->consec_losses ? p->rto_losses
                                                     : p->consec_losses;
        p->consec_losses = (uint8_t)(p->consec_losses - n);
        p->rto_losses = 0;
    }
    /* The originals are arriving: what the RTOs declared lost and have not
     * resent yet is in flight again (the retransmission queue skips it),
     * rather than resent at the restored window all at once.  Judged
     * afresh by the usual rules, so the loss scan restarts at snd_una. */
    for (uint32_t p = qp->snd_una; p != qp->snd_nxt; p++) {
        struct mre_txent *e = &qp->tx[p & qp->tx_mask];
        if (e->state == TX_LOST && e->cause == LOSS_RTO &&
            e->sent_time < qp->rto_time)
            mre_txr_reflight(qp, p & qp->tx_mask);
    }
    qp->ooo_cursor = qp->snd_una;
    /* Drop their queue entries now, so that losing one again cannot queue
     * it twice (the queue holds a window of PSNs). */
    uint32_t w = qp->retxq_head;
    for (uint32_t h = qp->retxq_head; h != qp->retxq_tail; h++) {
        uint32_t psn = qp->retxq[h & qp->tx_mask];
        const struct mre_txent *e = &qp->tx[psn & qp->tx_mask];
        if (mrw_psn_diff(psn, qp->snd_una) >= 0 &&
            mrw_psn_diff(psn, qp->snd_nxt) < 0 &&
            (e->state == TX_LOST || (e->probe && e->state == TX_INFLIGHT)))
            qp->retxq[w++ & qp->tx_mask] = psn;
    }
    qp->retxq_tail = w;
}

void mre_loss_timers(mre_qp *qp, mroce_tstamp now)
{
    uint32_t lost_bytes = 0;
    if (qp->state != MROCE_QPS_RTS && qp->state != MROCE_QPS_CLOSING)
        return;
    if (qp->rnr_deadline <= now) {
        qp->rnr_deadline = MROCE_TSTAMP_INF;
        for (uint32_t p = qp->snd_una; p != qp->snd_nxt; p++)
            if (qp->tx[p & qp->tx_mask].state == TX_RNR)
                mre_txr_mark_lost(qp, p, LOSS_RNR);
    }
    if (qp->reo_deadline <= now)
        mre_loss_ooo_scan(qp, now, &lost_bytes, 1);
    if (qp->loss_deadline <= now) {
        if (qp->snd_una == qp->snd_nxt || qp->inflight_pkts == 0) {
            qp->loss_deadline = MROCE_TSTAMP_INF;
        } else if (qp->hs_wait && qp->state == MROCE_QPS_RTS) {
            /* LOSS-30: nothing from the peer since the CONNECT_RESP, so
             * nothing sent since can have been acknowledged: no loss can
             * be told from the silence and the window stays.  Resending
             * the CONNECT_RESP asks the peer for a confirming ACK
             * (CONN-11), whose echo is the first RTT sample; a lost
             * CONNECT_RESP is replaced too.  The peer's silence fails
             * the QP as for timeouts (LOSS-14, REL-32). */
            if (qp->hs_probes > qp->attr.retry_cnt &&
                mre_live_expired(qp, now)) {
                mre_live_fail(qp);
                return;
            }
            qp->ctrl |= CTRL_CONN_RESP;
            if (qp->hs_probes < 30)
                qp->hs_probes++;
            qp->last_progress = now;
            qp->loss_deadline = now + cur_rto(qp);
        } else if (!qp->probes_sent) {
            /* Tail-loss probe: resend the newest packet still in flight
             * that the receiver can acknowledge (LOSS-12): one beyond the
             * SACK span after snd_una cannot be reported while snd_una is
             * missing, so probing it solicits nothing and the next expiry
             * is an RTO.  The newest in flight if none is within. */
            uint32_t top = qp->snd_nxt;
            if (mrw_psn_diff(top, qp->snd_una) > (int32_t)qp->sack_span + 1) {
                uint32_t p = qp->snd_una + qp->sack_span + 1;
                while (p != qp->snd_una &&
                       qp->tx[(p - 1) & qp->tx_mask].state != TX_INFLIGHT)
                    p--;
                if (p != qp->snd_una)
                    top = p;
            }
            for (uint32_t p = top; p != qp->snd_una;) {
                p--;
                struct mre_txent *e = &qp->tx[p & qp->tx_mask];
                if (e->state == TX_INFLIGHT) {
                    /* At the head of the queue: a probe does not wait for
                     * the window (LOSS-12), so it must not wait behind
                     * lost packets that do.  At the tail it would sit
                     * there whenever cwnd holds back a retransmission (as
                     * it does right after a timeout), never be sent, and
                     * the next expiry would be a timeout instead. */
                    e->probe = 1;
                    qp->retxq[--qp->retxq_head & qp->tx_mask] = p;
                    break;
                }
            }
            qp->probes_sent = 1;
            qp->cnt.probes++;
            qp->loss_deadline = now + cur_rto(qp);
        } else {
            qp->cnt.timeouts++;
            if (qp->consec_timeouts < 255)
                qp->consec_timeouts++;
            /* LOSS-14: retry_cnt timeouts in a row are the least a QP
             * survives; it fails only once the peer has also been silent
             * for peer_timeout (REL-32), so a stall of either host shorter
             * than that costs retransmissions at max_rto, not the QP. */
            if (qp->consec_timeouts > qp->attr.retry_cnt &&
                mre_live_expired(qp, now)) {
                mre_live_fail(qp);
                return;
            }
            if (qp->backoff < 30)
                qp->backoff++;
            /* The first RTO of an episode (no progress since) saves what
             * a spurious verdict would restore (LOSS-19). */
            if (!qp->rto_undo) {
                qp->rto_undo = 1;
                qp->rto_time = now;
                qp->rto_cc = qp->cc;
                for (uint16_t i = 0; i < qp->paths.npaths; i++)
                    qp->path_slots[i].rto_losses = 0;
            }
            /* An RTO means nothing got through, not that every path broke:
             * blame each path once (its oldest packet), so three RTOs in
             * a row retire a path but one RTO during a stall of the host
             * (descheduling) does not retire every path with 3+ packets
             * in flight. */
            uint64_t blamed[4] = {0, 0, 0, 0};
            for (uint32_t p = qp->snd_una; p != qp->snd_nxt; p++) {
                struct mre_txent *e = &qp->tx[p & qp->tx_mask];
                if (e->state != TX_INFLIGHT)
                    continue;
                uint16_t s = e->path;
                int first = !(blamed[s >> 6] >> (s & 63) & 1);
                blamed[s >> 6] |= 1ull << (s & 63);
                /* Counted before the loss: a retirement resets it. */
                if (first && qp->path_slots[s].rto_losses < 255)
                    qp->path_slots[s].rto_losses++;
                uint16_t f = e->probe_from;
                lose_ex(qp, p & qp->tx_mask, LOSS_RTO, &lost_bytes, first);
                /* A probe's packet: the transmission the probe replaced has
                 * gone unanswered just as long, so its slot is blamed too
                 * (LOSS-13).  Otherwise a dead slot whose packet a probe
                 * took over would come out of the timeout unblamed, and
                 * stay first in line for recovery transmissions (PATH-15). */
                if (f < qp->paths.npaths && f != s &&
                    qp->path_slots[f].entropy == e->probe_from_entropy &&
                    !(blamed[f >> 6] >> (f & 63) & 1)) {
                    blamed[f >> 6] |= 1ull << (f & 63);
                    if (qp->path_slots[f].rto_losses < 255)
                        qp->path_slots[f].rto_losses++;
                    blame(qp, f);
                }
            }
            /* Resend in PSN order, oldest first.  The queue is in order of
             * detection, so a hole at the cumulative point that was lost
             * again can sit behind hundreds of PSNs the receiver already
             * holds but cannot SACK (beyond the SACK span); with cwnd cut to one
             * MTU each RTO would then resend one of those, its DUP ACK
             * acknowledging nothing, until retry_cnt ran out. */
            qp->retxq_head = qp->retxq_tail;
            for (uint32_t p = qp->snd_una; p != qp->snd_nxt; p++)
                if (qp->tx[p & qp->tx_mask].state == TX_LOST)
                    qp->retxq[qp->retxq_tail++ & qp->tx_mask] = p;
            qp->cc.ops->on_timeout(&qp->cc, now);
            lost_bytes = 0;
            qp->last_progress = now;
            /* A probe is allowed again (LOSS-10): with cwnd at one packet
             * the retransmission tests a single path, and the probe a PTO
             * later a second one (PATH-15), so after a link failure that
             * killed a good part of the paths one unlucky pick does not
             * cost a whole doubled timeout. */
            qp->probes_sent = 0;
            qp->loss_deadline = now + cur_pto(qp);
        }
    }
    if (lost_bytes)
        qp->cc.ops->on_loss(&qp->cc, lost_bytes, now);
}

void mre_loss_reset(mre_qp *qp)
{
    qp->loss_deadline = qp->reo_deadline = qp->rnr_deadline = MROCE_TSTAMP_INF;
}
