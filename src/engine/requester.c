/*
 * requester.c - work requests in, packets out.
 *
 * mre_qp_post_send() validates a work request against the local rules
 * (lkeys, bounds, rights, sizes) and queues it.  mre_req_write_data() then
 * produces the QP's next data packet, in priority order: packets declared
 * lost (and tail-loss probes), responses we owe the peer (READ data, atomic
 * results), then new request packets.  Each new packet gets the next PSN and
 * a path from the path set; its payload is read straight from registered
 * memory into the caller's buffer (no intermediate copy), and it is recorded
 * in the transmit ring (txring.c) until acknowledged (REL-*, PATH-*).  A
 * transmission arms the loss timer (loss.c); nothing here calls the
 * completer or the responder.
 */
#include "engine_int.h"
#include "../wire/seeded_fault.h"

static int wr_opcode_valid(unsigned op)
{
    return op <= MROCE_WR_CMP_SWAP;
}

static int is_rd_atomic(unsigned op)
{
    return op == MROCE_WR_READ || op == MROCE_WR_FETCH_ADD ||
           op == MROCE_WR_CMP_SWAP;
}

static int is_atomic(unsigned op)
{
    return op == MROCE_WR_FETCH_ADD || op == MROCE_WR_CMP_SWAP;
}

static int consumes_recv(unsigned op)
{
    return op == MROCE_WR_SEND || op == MROCE_WR_SEND_WITH_IMM ||
           op == MROCE_WR_WRITE_WITH_IMM;
}

/* Validate one work request and fill the WQE of SQ slot `slot`; 0 or a
 * negative error (MROCE_ENOMEM: the first inline WR found no memory for
 * the QP's inline copies). */
static int prepare_swqe(mre_qp *qp, const struct mroce_send_wr *wr,
                        struct mre_swqe *w, uint32_t slot)
{
    if (!wr_opcode_valid(wr->opcode) || wr->num_sge < 0 ||
        wr->num_sge > MROCE_MAX_SGE || (wr->num_sge && !wr->sg_list) ||
        (wr->send_flags & ~15u))
        return MROCE_EINVAL;
    /* Clear the header fields only: sge[] and mrs[] are written for the
     * entries in use below and never read beyond num_sge, and they are most
     * of the WQE, which a small-message post should not pay to clear.  In
     * pieces of at most 64 bytes: GCC expands a longer constant memset into
     * `rep stos`, whose start-up costs more than the whole header's vector
     * stores (bench/LOG.md, issue 21). */
    _Static_assert(offsetof(struct mre_swqe, sge) >= 64 &&
                       offsetof(struct mre_swqe, sge) <= 128,
                   "the WQE header is cleared in two pieces");
    memset(w, 0, 64);
    memset((uint8_t *)w + 64, 0, offsetof(struct mre_swqe, sge) - 64);
    w->wr_id = wr->wr_id;
    w->opcode = (uint8_t)wr->opcode;
    w->flags = (uint8_t)wr->send_flags;
    w->remote_addr = wr->remote_addr;
    w->rkey = wr->rkey;
    w->imm = wr->imm_data;
    w->compare_add = wr->compare_add;
    w->swap = wr->swap;
    w->stream = wr->stream;
    uint64_t total = 0;
    for (int i = 0; i < wr->num_sge; i++)
        total += wr->sg_list[i].length;
    if (total > 0x7fffffffu)
        return MROCE_ERANGE;
    if (is_atomic(wr->opcode) &&
        (wr->num_sge != 1 || total != MROCE_ATOMIC_LEN ||
         (wr->remote_addr & 7)))
        return MROCE_EINVAL;
    if (wr->send_flags & MROCE_SEND_INLINE) {
        if (wr->opcode != MROCE_WR_SEND &&
            wr->opcode != MROCE_WR_SEND_WITH_IMM &&
            wr->opcode != MROCE_WR_WRITE &&
            wr->opcode != MROCE_WR_WRITE_WITH_IMM)
            return MROCE_EINVAL;
        if (total > MROCE_MAX_INLINE)
            return MROCE_ERANGE;
        /* The inline copies (MROCE_MAX_INLINE per SQ slot) are allocated by
         * the first inline WR: most QPs never post one, and a simulated
         * all-to-all of a million QPs would otherwise zero a GB for them. */
        if (!qp->inline_buf) {
            qp->inline_buf = mre_mem_calloc(&qp->ep->mem, qp->sq_mask + 1u,
                                            MROCE_MAX_INLINE);
            if (!qp->inline_buf)
                return MROCE_ENOMEM;
        }
        uint8_t *inl = qp->inline_buf + (size_t)slot * MROCE_MAX_INLINE;
        /* Copy now: the caller may reuse its buffer as soon as we return. */
        uint32_t off = 0;
        for (int i = 0; i < wr->num_sge; i++) {
            if (wr->sg_list[i].length && !wr->sg_list[i].addr)
                return MROCE_EINVAL;
            memcpy(inl + off, (const void *)(uintptr_t)wr->sg_list[i].addr,
                   wr->sg_list[i].length);
            off += wr->sg_list[i].length;
        }
        w->num_sge = 1;
        w->mrs[0] = NULL; /* the copy lives in the QP, not in a region */
        w->sge[0].addr = (uint64_t)(uintptr_t)inl;
        w->sge[0].length = off;
        w->length = off;
        return 0;
    }
    unsigned need = is_rd_atomic(wr->opcode) ? MROCE_ACCESS_LOCAL_WRITE : 0;
    for (int i = 0; i < wr->num_sge; i++) {
        const struct mroce_sge *s = &wr->sg_list[i];
        mre_mr *mr = mre_mr_lookup(qp->ep, s->lkey);
        if (!mr || mr->pd != qp->attr.pd)
            return MROCE_EACCESS;
        uint64_t start = (uint64_t)(uintptr_t)mr->addr;
        if (s->addr < start || s->addr - start > mr->len ||
            s->length > mr->len - (s->addr - start))
            return MROCE_EACCESS;
        if ((mr->access & need) != need)
            return MROCE_EACCESS;
        w->sge[i] = *s;
        w->mrs[i] = mr;
    }
    w->num_sge = (uint8_t)wr->num_sge;
    w->length = (uint32_t)total;
    return 0;
}

int mre_qp_post_send(mre_qp *qp, struct mroce_send_wr *wr,
                     struct mroce_send_wr **bad_wr, mroce_tstamp now)
{
    (void)now;
    if (bad_wr)
        *bad_wr = wr;
    if (!qp || !wr)
        return MROCE_EINVAL;
    if (qp->state != MROCE_QPS_RTS && qp->state != MROCE_QPS_CONNECTING)
        return MROCE_ESTATE;
    int rc = 0;
    for (; wr; wr = wr->next) {
        if (bad_wr)
            *bad_wr = wr;
        if (qp->sq_tail - qp->sq_head > qp->sq_mask) {
            rc = MROCE_EFULL;
            break;
        }
        if (mre_stream_check(qp, wr->stream) < 0) {
            rc = MROCE_EINVAL; /* SEM-30 */
            break;
        }
        uint32_t slot = qp->sq_tail & qp->sq_mask;
        struct mre_swqe *w = &qp->sq[slot];
        rc = prepare_swqe(qp, wr, w, slot);
        if (rc < 0) {
            memset(w, 0, sizeof(*w));
            break;
        }
        for (int i = 0; i < w->num_sge; i++)
            if (w->mrs[i])
                w->mrs[i]->refs++;
        w->msn = qp->sq_tail;
        mre_stream_number_send(qp, w, consumes_recv(w->opcode));
        if (is_rd_atomic(w->opcode) || w->length <= qp->mtu)
            w->npkts = 1;
        else
            w->npkts = (w->length + qp->mtu - 1) / qp->mtu;
        w->state = SWQE_POSTED;
        w->status = MROCE_WC_SUCCESS;
        qp->sq_tail++;
    }
    if (rc == 0 && bad_wr)
        *bad_wr = NULL;
    /* Also when a later WR of the chain was refused: the ones before it are
     * queued and must be sent. */
    if (qp->state == MROCE_QPS_RTS && qp->sq_tx != qp->sq_tail)
        mre_ep_mark_ready(qp->ep, qp);
    return rc;
}

int mre_req_has_data(const mre_qp *qp)
{
    if (qp->state != MROCE_QPS_RTS && qp->state != MROCE_QPS_CLOSING)
        return 0;
    if (qp->retxq_head != qp->retxq_tail)
        return 1;
    return qp->rjobs_unsent || qp->sq_tx != qp->sq_tail;
}

/* Room for one more packet of `bytes` payload under the window, the
 * congestion window and the receiver's credit?  A refusal by cwnd itself
 * (not by the credit) is noted for mre_ep_write_pkt (CC-19). */
static int can_send(mre_qp *qp, uint32_t bytes)
{
    if (qp->inflight_pkts == 0)
        return 1; /* always allow one packet so the connection moves */
    if (!mre_path_has_room(&qp->paths)) {
        qp->cwnd_refused = 1; /* every path's window is full (CC-20) */
        return 0;
    }
    uint64_t need = (uint64_t)qp->inflight_bytes + bytes +
                    MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN;
    if (need <= qp->cc.cwnd && need <= qp->peer_credit)
        return 1;
    if (need > qp->cc.cwnd && qp->cc.cwnd <= qp->peer_credit)
        qp->cwnd_refused = 1;
    return 0;
}

/* A new PSN must also fit the peer's receive window.  Retransmissions reuse
 * a PSN already inside it and so only need can_send(): with the window full
 * of lost packets, applying the window to them would stall the QP for good
 * (nothing in flight, so no timer either). */
static int can_send_new(mre_qp *qp, uint32_t bytes)
{
    if ((uint32_t)(qp->snd_nxt - qp->snd_una) >= qp->peer_window)
        return 0;
    return can_send(qp, bytes);
}

static uint8_t wr_to_opcode(unsigned op)
{
    switch (op) {
    case MROCE_WR_SEND:
    case MROCE_WR_SEND_WITH_IMM:
        return MROCE_OP_SEND;
    case MROCE_WR_WRITE:
    case MROCE_WR_WRITE_WITH_IMM:
        return MROCE_OP_WRITE;
    case MROCE_WR_READ:
        return MROCE_OP_READ_REQ;
    case MROCE_WR_FETCH_ADD:
        return MROCE_OP_FETCH_ADD;
    default:
        return MROCE_OP_CMP_SWAP;
    }
}

/* Payloads from this length up are gathered with the CRC fused in
 * (mrw_pkt_crc_copy); below it a header CRC chained to the payload's costs
 * more than the pass it saves. */
#define FUSED_CRC_MIN 256

/* Encode the packet described by tx entry psn (first transmission or not)
 * into buf, for path slot `path`; ack_req 1 sets ACK_REQ if it is a LAST
 * packet (REL-23), 2 whatever it is (a plane's probe, PATH-22).  Returns
 * its length, 0 if the entry no longer needs sending, or MROCE_ENOBUF. */
static int build_pkt(mre_qp *qp, uint32_t psn, uint16_t path, uint8_t *buf,
                     size_t cap, int ack_req, mroce_tstamp now)
{
    struct mre_txent *e = &qp->tx[psn & qp->tx_mask];
    struct mrw_pkt p;
    const uint8_t *src = NULL;
    const struct mroce_sge *sgl = NULL;
    int nsge = 0;
    uint8_t be8[8];

    if (e->kind == TXK_REQ) {
        struct mre_swqe *w = &qp->sq[e->ref & qp->sq_mask];
        if (w->msn != e->ref || w->state != SWQE_POSTED)
            return 0; /* its work request has already completed */
        mre_qp_base_hdr(qp, &p, wr_to_opcode(w->opcode), psn, now);
        struct mrw_req_hdr *r = &p.u.rq.req;
        r->msn = MROCE_SEEDED_FAULT(STREAM_MSN_GLOBAL) ? w->msn : w->smsn;
        r->rsn = w->rsn;
        r->stream = w->stream;
        r->stream_resvd = 0;
        if (w->stream)
            p.base.flags |= MROCE_F_STREAM; /* SEM-32 */
        r->raddr = w->remote_addr;
        r->rkey = w->rkey;
        r->msg_len = w->length;
        r->offset = e->offset;
        r->imm = 0;
        if (w->opcode == MROCE_WR_SEND_WITH_IMM ||
            w->opcode == MROCE_WR_WRITE_WITH_IMM) {
            p.base.flags |= MROCE_F_IMM;
            r->imm = w->imm;
        }
        if (w->opcode == MROCE_WR_SEND || w->opcode == MROCE_WR_SEND_WITH_IMM) {
            r->raddr = 0;
            r->rkey = 0;
        }
        if (w->flags & MROCE_SEND_SOLICITED)
            p.base.flags |= MROCE_F_SOLICITED;
        if (is_atomic(w->opcode)) {
            p.u.rq.atomic.swap_add = w->opcode == MROCE_WR_FETCH_ADD
                                         ? w->compare_add
                                         : w->swap;
            p.u.rq.atomic.compare = w->opcode == MROCE_WR_CMP_SWAP
                                        ? w->compare_add
                                        : 0;
        }
        if (w->opcode == MROCE_WR_READ || is_atomic(w->opcode)) {
            if (is_atomic(w->opcode))
                r->msg_len = MROCE_ATOMIC_LEN;
            p.payload_len = 0;
        } else {
            p.payload_len = e->len;
            sgl = w->sge;
            nsge = w->num_sge;
        }
        if (e->offset == 0)
            p.base.flags |= MROCE_F_FIRST;
        if (e->offset + e->len == r->msg_len || p.payload_len == 0)
            p.base.flags |= MROCE_F_LAST;
    } else {
        struct mre_rjob *j = &qp->rjobs[e->ref];
        mre_qp_base_hdr(qp, &p,
                        j->is_atomic ? MROCE_OP_ATOMIC_RESP
                                     : MROCE_OP_READ_RESP,
                        psn, now);
        p.u.resp.req_msn = j->req_msn;
        p.u.resp.msg_len = j->len;
        p.u.resp.offset = e->offset;
        p.u.resp.stream = j->stream;
        p.u.resp.reserved = 0;
        p.payload_len = e->len;
        if (j->is_atomic) {
            for (int i = 0; i < 8; i++)
                be8[i] = (uint8_t)(j->atomic_result >> (56 - 8 * i));
            src = be8;
        } else {
            src = j->src + e->offset;
        }
        if (e->offset == 0)
            p.base.flags |= MROCE_F_FIRST;
        if (e->offset + e->len == j->len)
            p.base.flags |= MROCE_F_LAST;
    }
    if (e->retx)
        p.base.flags |= MROCE_F_RETX;
    if (e->probe)
        p.base.flags |= MROCE_F_PROBE | MROCE_F_ACK_REQ;
    if (ack_req > 1 || (ack_req && (p.base.flags & MROCE_F_LAST)))
        p.base.flags |= MROCE_F_ACK_REQ;
    if (qp->attr.credit_mode)
        p.base.flags |= MROCE_F_CREDIT;
    p.base.entropy = qp->path_slots[path].entropy;
    size_t h = mrw_pkt_encode_hdr(&p, buf, cap);
    if (h == 0)
        return MROCE_ENOBUF;
    struct mre_tx_zc *zc = qp->ep->tx_zc;
    if (zc && !qp->sec_on && p.payload_len && src != be8) {
        /* Zero-copy: the payload stays where it is, if it is one piece (not
         * the atomic result, which lives on this stack). */
        const uint8_t *at = sgl ? mre_mr_sge_span(sgl, nsge, e->offset, e->len)
                                : src;
        if (at) {
            zc->payload = at;
            zc->payload_len = e->len;
            return (int)mrw_pkt_seal_split(buf, h, at, e->len);
        }
    }
    if (qp->sec_on || e->len < FUSED_CRC_MIN) {
        /* Secure: the tag takes the CRC's place (SEC-19), so a plain
         * copy.  Short: one CRC call over the whole packet costs less
         * than a header CRC chained to a fused copy. */
        if (sgl)
            mre_mr_sge_gather(sgl, nsge, e->offset, buf + h, e->len);
        else if (src && e->len)
            memcpy(buf + h, src, e->len);
        if (qp->sec_on)
            return (int)(h + e->len + MROCE_CRC_LEN);
        return (int)mrw_pkt_seal(buf, h + e->len);
    }
    /* The gather and the CRC in one pass over the payload. */
    uint32_t crc = mrw_pkt_crc_hdr(buf, h);
    if (sgl)
        crc = mre_mr_sge_gather_crc(sgl, nsge, e->offset, buf + h, e->len, crc);
    else if (src)
        crc = mrw_pkt_crc_copy(crc, buf + h, src, e->len);
    return (int)mrw_pkt_seal_crc(buf, h + e->len, crc);
}

/* Pick the path before building, since the header carries its entropy.
 * recovery: a probe or a retransmission after a timeout goes on the slot
 * most recently proven to work both ways (PATH-15), not the next in turn. */
static int send_entry(mre_qp *qp, uint32_t psn, uint16_t avoid, int recovery,
                      uint8_t *buf, size_t cap, struct mre_tx_info *info,
                      int ack_req, mroce_tstamp now)
{
    struct mre_txent *e = &qp->tx[psn & qp->tx_mask];
    /* PATH-3: the window bounds the burst (credit mode: the grant too). */
    mre_path_set_window(&qp->paths,
                        qp->cc.cwnd < qp->peer_credit ? qp->cc.cwnd
                                                      : qp->peer_credit,
                        qp->mtu + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN);
    mre_plane_pick_begin(qp, now, e->retx > 0); /* PATH-21, PATH-22 */
    uint16_t picked = recovery ? mre_path_pick_proven(&qp->paths, avoid)
                               : mre_path_pick(&qp->paths, avoid);
    if (mre_plane_picked(qp, picked, now))
        ack_req = 2; /* a down plane's probe, LAST or not (PATH-22): its
                        ACK, at once, brings the plane back */
    int n = build_pkt(qp, psn, picked, buf, cap, ack_req, now);
    if (n <= 0)
        return n;
    if (qp->inflight_pkts == 0)
        qp->last_progress = now;
    info->to = qp->peer;
    info->entropy = qp->path_slots[picked].entropy;
    e->path = picked;
    e->path_seq = mre_path_on_sent(&qp->paths, picked, e->len);
    e->sent_time = now;
    e->state = TX_INFLIGHT;
    mre_txr_enflight(qp, psn & qp->tx_mask);
    qp->cnt.tx_data_pkts++;
    if (qp->loss_deadline == MROCE_TSTAMP_INF)
        mre_loss_arm_timer(qp, now);
    return n;
}

/* Retransmit the oldest packet declared lost (or a probe). */
static int write_retx(mre_qp *qp, uint8_t *buf, size_t cap,
                      struct mre_tx_info *info, mroce_tstamp now)
{
    while (qp->retxq_head != qp->retxq_tail) {
        uint32_t psn = qp->retxq[qp->retxq_head & qp->tx_mask];
        struct mre_txent *e = &qp->tx[psn & qp->tx_mask];
        int probe = e->probe && e->state == TX_INFLIGHT;
        if (mrw_psn_diff(psn, qp->snd_una) < 0 ||
            mrw_psn_diff(psn, qp->snd_nxt) >= 0 ||
            (e->state != TX_LOST && !probe)) {
            qp->retxq_head++; /* acked meanwhile: nothing to do */
            e->probe = 0;
            continue;
        }
        if (!probe && !can_send(qp, e->len))
            return 0;
        uint16_t old = e->path;
        uint8_t old_state = e->state;
        /* A probe replaces an in-flight transmission; if the probe arrives
         * first, that one was lost (LOSS-20).  Not for a transmission made
         * less than min_rtt before: the probe might just overtake it. */
        mroce_tstamp guard = qp->min_rtt ? qp->min_rtt : qp->attr.min_rto;
        uint16_t from = probe && now - e->sent_time >= guard ? old
                                                             : MROCE_PATH_NONE;
        uint16_t from_entropy = qp->path_slots[old].entropy;
        if (probe)
            mre_txr_unflight(qp, psn & qp->tx_mask);
        e->retx++;
        /* Until an ACK shows progress after a timeout, every retransmission
         * is a recovery transmission too (PATH-15). */
        int n = send_entry(qp, psn, old, probe || qp->consec_timeouts > 0, buf,
                           cap, info, 1, now);
        if (n < 0) {
            e->retx--;
            if (probe) {
                e->state = old_state; /* send_entry kept e->path */
                mre_txr_enflight(qp, psn & qp->tx_mask);
            }
            return n;
        }
        qp->retxq_head++;
        e->probe_from = from;
        e->probe_from_entropy = from_entropy;
        if (n == 0) {
            /* Stale request whose WR completed: treat as acknowledged. */
            e->state = TX_ACKED;
            e->probe = 0;
            continue;
        }
        qp->cnt.retx_pkts++;
        if (probe)
            qp->cnt.retx_probe++;
        else
            switch (e->cause) {
            case LOSS_PATH:
                qp->cnt.retx_path++;
                break;
            case LOSS_OOO:
                qp->cnt.retx_ooo++;
                break;
            case LOSS_RTO:
                qp->cnt.retx_rto++;
                break;
            case LOSS_PROBE:
                qp->cnt.retx_probe++;
                break;
            default:
                qp->cnt.retx_rnr++;
                break;
            }
        e->probe = 0;
        return n;
    }
    return 0;
}

static int write_resp(mre_qp *qp, uint8_t *buf, size_t cap,
                      struct mre_tx_info *info, mroce_tstamp now)
{
    struct mre_rjob *best = NULL;
    uint32_t bi = 0;
    if (!qp->rjobs_unsent)
        return 0;
    for (uint32_t i = 0; i < qp->nrjobs; i++) {
        struct mre_rjob *j = &qp->rjobs[i];
        if (j->active && !j->waiting && j->sent_pkts < j->npkts &&
            (!best || j->seq < best->seq)) {
            best = j;
            bi = i;
        }
    }
    if (!best)
        return 0;
    uint32_t len = best->len - best->sent_off;
    if (len > qp->mtu)
        len = qp->mtu;
    if (!can_send_new(qp, len))
        return 0;
    uint32_t psn = mre_txr_push(qp, TXK_RESP, bi, best->sent_off, len);
    int n = send_entry(qp, psn, MROCE_PATH_NONE, 0, buf, cap, info, 1, now);
    if (n <= 0) {
        mre_txr_unpush(qp, psn);
        return n;
    }
    best->sent_off += len;
    if (++best->sent_pkts == best->npkts)
        qp->rjobs_unsent--;
    return n;
}

static int write_new_req(mre_qp *qp, uint8_t *buf, size_t cap,
                         struct mre_tx_info *info, mroce_tstamp now)
{
    /* CLOSING too: work posted before mre_qp_disconnect() is still sent
     * (CONN-15); new posts are refused in CLOSING. */
    if (qp->sq_tx == qp->sq_tail ||
        (qp->state != MROCE_QPS_RTS && qp->state != MROCE_QPS_CLOSING))
        return 0;
    struct mre_swqe *w = &qp->sq[qp->sq_tx & qp->sq_mask];
    if (w->sent_pkts == 0) {
        /* The responder keeps 2x its max_rd_atomic job slots (so a slot
         * freed late by a lost ACK does not stall us); use half. */
        uint32_t lim = qp->peer_rd_atomic / 2 ? qp->peer_rd_atomic / 2 : 1;
        if (is_rd_atomic(w->opcode) && qp->rd_outstanding >= lim)
            return 0;
        if ((w->flags & MROCE_SEND_FENCE) && qp->rd_outstanding)
            return 0;
        if (w->stream >= qp->nstreams) {
            /* Posted before the handshake on a stream the connection did
             * not negotiate (SEM-31): the QP fails on it. */
            w->status = MROCE_WC_LOC_QP_OP_ERR;
            mre_qp_enter_error(qp);
            return 0;
        }
        /* Count packets with the negotiated MTU: a WR posted while
         * CONNECTING was counted with our own, and a smaller peer MTU would
         * otherwise end the message early (and complete it successfully).
         * A message of one packet (or none) needs no division. */
        if (!is_rd_atomic(w->opcode))
            w->npkts = w->length <= qp->mtu
                           ? 1
                           : (w->length + qp->mtu - 1) / qp->mtu;
    }
    uint32_t len = 0;
    if (!is_rd_atomic(w->opcode)) {
        len = w->length - qp->tx_off;
        if (len > qp->mtu)
            len = qp->mtu;
    }
    if (!can_send_new(qp, len))
        return 0;
    uint32_t psn = mre_txr_push(qp, TXK_REQ, w->msn, qp->tx_off, len);
    /* Ask for an immediate ACK on a message's last packet when nothing else
     * is queued behind it, so its completion is not held by ACK delay. */
    int last_queued = qp->sq_tx + 1 == qp->sq_tail;
    int n = send_entry(qp, psn, MROCE_PATH_NONE, 0, buf, cap, info, last_queued,
                       now);
    if (n <= 0) {
        mre_txr_unpush(qp, psn);
        return n;
    }
    if (w->sent_pkts == 0) {
        w->first_psn = psn;
        if (is_rd_atomic(w->opcode))
            qp->rd_outstanding++;
    }
    w->sent_pkts++;
    qp->tx_off += len;
    if (w->sent_pkts == w->npkts) {
        qp->sq_tx++;
        qp->tx_off = 0;
    }
    return n;
}

int mre_req_write_data(mre_qp *qp, uint8_t *buf, size_t cap,
                       struct mre_tx_info *info, mroce_tstamp now)
{
    size_t hdr = qp->streams_on ? MROCE_MAX_STREAM_DATA_HDR_LEN
                                : MROCE_MAX_DATA_HDR_LEN;
    if (cap < (size_t)qp->mtu + hdr + MROCE_CRC_LEN)
        return MROCE_ENOBUF;
    if (!mre_rh_may_send(qp, now))
        return 0; /* paced at the receiver's hint (CC-28), or waiting for
                     the answer to its share request (CC-30) */
    int n = write_retx(qp, buf, cap, info, now);
    if (n == 0)
        n = write_resp(qp, buf, cap, info, now);
    if (n == 0)
        n = write_new_req(qp, buf, cap, info, now);
    if (n > 0)
        mre_rh_on_sent(qp, (size_t)n, now);
    return n;
}

void mre_req_reset(mre_qp *qp)
{
    qp->sq_tx = qp->sq_tail;
    qp->tx_off = 0;
    qp->rd_outstanding = 0;
}
