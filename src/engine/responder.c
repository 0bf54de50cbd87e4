/*
 * responder.c - data packets in: placement, execution, receive completions,
 * and the ACKs and NAKs that answer them.
 *
 * Every data packet that reaches here has passed the codec (CRC, lengths,
 * field consistency) and the token check.  The receive window classifies its
 * PSN: duplicates are never placed or executed twice (this is what makes
 * atomics exactly-once), out-of-window packets are dropped.  A new packet is
 * checked against the rules for its opcode (registered memory, bounds,
 * rights, posted receives) and either placed in memory, executed, or answered
 * with a NAK; only after placement is its PSN marked received, so an ACK
 * never covers data that is not in memory (REL-*, SEM-*, SEC-*).
 *
 * It calls no other stage: a READ or atomic response it places at the
 * requester is reported to its caller (mre_resp_on_data() returns 1, and
 * ep.c runs the completer), and the completer reports acknowledged response
 * packets here through mre_resp_on_acked().
 */
#include "engine_int.h"
#include "seeded_dup.h"

int mre_qp_post_recv(mre_qp *qp, struct mroce_recv_wr *wr,
                     struct mroce_recv_wr **bad_wr)
{
    if (bad_wr)
        *bad_wr = wr;
    if (!qp || !wr)
        return MROCE_EINVAL;
    if (qp->state == MROCE_QPS_ERROR || qp->state == MROCE_QPS_CLOSED)
        return MROCE_ESTATE;
    for (; wr; wr = wr->next) {
        if (bad_wr)
            *bad_wr = wr;
        if (wr->num_sge < 0 || wr->num_sge > MROCE_MAX_SGE ||
            (wr->num_sge && !wr->sg_list))
            return MROCE_EINVAL;
        if (mre_stream_check(qp, wr->stream) < 0)
            return MROCE_EINVAL; /* SEM-30 */
        if (qp->rq_tail - qp->rq_head > qp->rq_mask)
            return MROCE_EFULL;
        if (MROCE_SEEDED_FAULT(STREAM_RQ_RING) && qp->streams_on &&
            qp->rq[qp->rq_tail & qp->rq_mask].posted)
            return MROCE_EFULL; /* stream_rq_ring (SEM-40) */
        uint32_t slot = qp->streams_on ? mre_stream_rq_slot(qp)
                                       : qp->rq_tail & qp->rq_mask;
        struct mre_rwqe *r = &qp->rq[slot];
        memset(r, 0, sizeof(*r));
        uint64_t total = 0;
        for (int i = 0; i < wr->num_sge; i++) {
            const struct mroce_sge *s = &wr->sg_list[i];
            mre_mr *mr = mre_mr_lookup(qp->ep, s->lkey);
            uint64_t start = mr ? (uint64_t)(uintptr_t)mr->addr : 0;
            if (!mr || mr->pd != qp->attr.pd ||
                !(mr->access & MROCE_ACCESS_LOCAL_WRITE) || s->addr < start ||
                s->addr - start > mr->len ||
                s->length > mr->len - (s->addr - start)) {
                for (int k = 0; k < i; k++)
                    r->mrs[k] = NULL;
                if (qp->streams_on)
                    qp->rq_free[qp->rq_nfree++] = (uint16_t)slot;
                return MROCE_EACCESS;
            }
            r->sge[i] = *s;
            r->mrs[i] = mr;
            total += s->length;
        }
        if (total > 0x7fffffffu) {
            if (qp->streams_on)
                qp->rq_free[qp->rq_nfree++] = (uint16_t)slot;
            return MROCE_ERANGE;
        }
        for (int i = 0; i < wr->num_sge; i++)
            r->mrs[i]->refs++;
        r->wr_id = wr->wr_id;
        r->num_sge = (uint8_t)wr->num_sge;
        r->capacity = (uint32_t)total;
        r->stream = wr->stream;
        r->posted = 1;
        mre_stream_link_recv(qp, slot);
        qp->rq_tail++;
    }
    if (bad_wr)
        *bad_wr = NULL;
    return 0;
}

struct mre_rwqe *mre_resp_rq_next(mre_qp *qp, uint32_t *k)
{
    if (!qp->streams_on) {
        if (*k == qp->rq_tail - qp->rq_head)
            return NULL;
        return &qp->rq[(qp->rq_head + (*k)++) & qp->rq_mask];
    }
    while (*k <= qp->rq_mask) {
        struct mre_rwqe *r = &qp->rq[(*k)++];
        if (r->posted)
            return r;
    }
    return NULL;
}

void mre_resp_push_recv_wc(mre_qp *qp, struct mre_rwqe *r)
{
    struct mroce_wc wc;
    memset(&wc, 0, sizeof(wc));
    wc.wr_id = r->wr_id;
    wc.status = (enum mroce_wc_status)r->status;
    wc.opcode = r->has_imm ? MROCE_WC_RECV_WITH_IMM : MROCE_WC_RECV;
    /* Overlapping segments from a faulty peer can count bytes twice:
     * never report more than the message, which fits the buffers. */
    wc.byte_len = r->is_write || r->placed > r->msg_len ? r->msg_len
                                                        : r->placed;
    if (r->has_imm) {
        wc.imm_data = r->imm;
        wc.wc_flags = MROCE_WC_WITH_IMM |
                      (r->is_write ? MROCE_WC_RDMA_WRITE : 0);
    }
    if (r->solicited)
        wc.wc_flags |= MROCE_WC_SOLICITED;
    wc.qp_num = qp->qpn;
    wc.stream = r->stream;
    mre_cq_push(qp->attr.recv_cq, &wc);
    qp->cnt.completions++;
    mre_qp_release_rwqe(qp, r);
}

void mre_resp_complete_recvs(mre_qp *qp)
{
    if (qp->streams_on) {
        mre_stream_complete_all_recvs(qp);
        return;
    }
    int live = qp->state == MROCE_QPS_RTS || qp->state == MROCE_QPS_CLOSING;
    while (qp->rq_head != qp->rq_tail) {
        struct mre_rwqe *r = &qp->rq[qp->rq_head & qp->rq_mask];
        if (!r->done)
            break;
        if (r->status == MROCE_WC_SUCCESS &&
            mrw_psn_diff(qp->rxwin.cum, r->last_psn) <= 0) {
            if (live)
                break; /* placed, but an earlier message is not yet */
            /* Failing: without its predecessors it cannot be reported as
             * a success (SEM-24). */
            r->status = MROCE_WC_WR_FLUSH_ERR;
        }
        mre_resp_push_recv_wc(qp, r);
        qp->rq_head++;
    }
}

/* The region of a remote access through qp, or NULL and the NAK code:
 * the QP's own refusals (deny_remote) first, then the region's checks. */
static mre_mr *check_remote(mre_qp *qp, uint32_t rkey, uint64_t addr,
                            uint64_t len, unsigned access, uint8_t *code)
{
    if (qp->attr.deny_remote & access) {
        *code = MROCE_NAK_REMOTE_ACCESS_PERM;
        return NULL;
    }
    return mre_mr_check_remote(qp->ep, qp->attr.pd, rkey, addr, len, access,
                               code);
}

/* Queue the NAK refusing pkt (REL-27).  Until the first fatal NAK a later
 * refusal replaces a pending NAK, and an RNR NAK never replaces a fatal
 * one.  From the first fatal NAK on, the QP holds it (REL-40): every later
 * refusal, whatever its own code, is answered with the held NAK again. */
static void queue_nak(mre_qp *qp, const struct mrw_pkt *pkt, uint8_t code,
                      int fatal)
{
    if (MROCE_SEEDED_FAULT(NAK_SILENT))
        return;
    if (qp->fatal_nak) {
        /* The held NAK, on the path of the packet it answers (REL-22). */
        qp->nak_entropy = pkt->base.entropy;
        qp->ctrl |= CTRL_NAK;
        return;
    }
    qp->nak.nak_psn = pkt->base.psn;
    qp->nak.msn = pkt->u.rq.req.msn;
    qp->nak.code = code;
    qp->nak.rnr_delay = code == MROCE_NAK_RNR ? 2 : 0; /* 20 us */
    qp->nak.stream = MROCE_SEEDED_FAULT(STREAM_RNR_NAK0)
                         ? 0
                         : pkt->u.rq.req.stream; /* 0 with one stream */
    qp->nak_entropy = pkt->base.entropy;
    qp->fatal_nak = (uint8_t)fatal;
    qp->ctrl |= CTRL_NAK;
    if (code == MROCE_NAK_RNR)
        qp->cnt.rnr_naks_tx++;
}

/* Find the receive a SEND / WRITE_WITH_IMM consumes; NULL means RNR (or a
 * stale rsn, reported through *stale). */
static struct mre_rwqe *recv_for(mre_qp *qp, const struct mrw_req_hdr *h,
                                 int *stale)
{
    uint32_t rsn = h->rsn;
    if (qp->streams_on) /* the stream's own receives (SEM-36) */
        return mre_stream_recv_for(qp, h->stream, rsn, stale);
    *stale = 0;
    int32_t d = mrw_psn_diff(rsn, qp->rq_head);
    if (d < 0) {
        *stale = 1;
        return NULL;
    }
    if ((uint32_t)d >= qp->rq_tail - qp->rq_head)
        return NULL;
    return &qp->rq[rsn & qp->rq_mask];
}

/* Bind a receive to the first packet of its message that arrives; later
 * packets must agree (SEM-19).  Checked before anything is placed. */
static int recv_bind(struct mre_rwqe *r, const struct mrw_pkt *pkt,
                     int is_write)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    if (!r->started) {
        r->started = 1;
        r->msg_len = h->msg_len;
        r->is_write = (uint8_t)is_write;
        r->last_psn = pkt->base.psn;
        r->msn = h->msn;
    } else if (r->msg_len != h->msg_len || r->is_write != is_write) {
        return -1; /* packets of one message disagree: protocol error */
    }
    return 0;
}

/* Account a placed packet's bytes to its receive; the message is complete
 * when all of its bytes have arrived (duplicates never reach here). */
static int recv_account(mre_qp *qp, struct mre_rwqe *r,
                        const struct mrw_pkt *pkt, int is_write)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    (void)qp;
    (void)is_write;
    if (mrw_psn_diff(pkt->base.psn, r->last_psn) > 0)
        r->last_psn = pkt->base.psn;
    if (pkt->base.flags & MROCE_F_IMM) {
        r->has_imm = 1;
        r->imm = h->imm;
    }
    if (pkt->base.flags & MROCE_F_SOLICITED)
        r->solicited = 1;
    r->placed += pkt->payload_len;
    if (r->placed >= r->msg_len) {
        r->done = 1;
        r->status = MROCE_WC_SUCCESS;
    }
    return 0;
}

static int on_send(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    int stale;
    struct mre_rwqe *r = recv_for(qp, h, &stale);
    if (!r) {
        if (stale) {
            qp->cnt.drop_stale++;
            return -1;
        }
        queue_nak(qp, pkt, MROCE_NAK_RNR, 0);
        return -1;
    }
    if (r->done && r->status != MROCE_WC_SUCCESS) {
        qp->cnt.drop_stale++; /* its receive already failed */
        return -1;
    }
    if (h->msg_len > r->capacity) {
        /* Receive too small: the receive completes in error, the requester
         * is told with a fatal NAK (SEM). */
        r->done = 1;
        r->started = 1;
        r->msn = h->msn;
        r->status = MROCE_WC_LOC_LEN_ERR;
        queue_nak(qp, pkt, MROCE_NAK_INVALID_REQUEST, 1);
        /* SEM-21: it completes now (in receive order), not whenever some
         * later message happens to complete receives. */
        mre_resp_complete_recvs(qp);
        return -1;
    }
    if (recv_bind(r, pkt, 0) < 0) {
        queue_nak(qp, pkt, MROCE_NAK_INVALID_REQUEST, 1);
        return -1;
    }
    mre_mr_sge_scatter(r->sge, r->num_sge, h->offset, pkt->payload,
                       pkt->payload_len);
    recv_account(qp, r, pkt, 0);
    return 0;
}

static int on_write(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    struct mre_rwqe *r = NULL;
    if (pkt->base.flags & MROCE_F_IMM) {
        int stale;
        r = recv_for(qp, h, &stale);
        if (!r) {
            if (stale)
                qp->cnt.drop_stale++;
            else
                queue_nak(qp, pkt, MROCE_NAK_RNR, 0);
            return -1;
        }
    }
    /* Check the whole message, so a bad length fails on the first packet
     * to arrive rather than part-way; the codec guarantees that this
     * packet lies inside it (offset + payload_len <= msg_len), and the
     * check is overflow-safe, so the packet's range needs no check of its
     * own. */
    uint8_t code = 0;
    mre_mr *mr = check_remote(qp, h->rkey, h->raddr, h->msg_len,
                              MROCE_ACCESS_REMOTE_WRITE, &code);
    if (!mr) {
        queue_nak(qp, pkt, code, 1);
        return -1;
    }
    uint64_t addr = h->raddr + h->offset;
    if (r && recv_bind(r, pkt, 1) < 0) {
        queue_nak(qp, pkt, MROCE_NAK_INVALID_REQUEST, 1);
        return -1;
    }
    if (pkt->payload_len && !MROCE_SEEDED_FAULT(ACK_BEFORE_PLACE))
        memcpy(mr->addr + (addr - (uint64_t)(uintptr_t)mr->addr), pkt->payload,
               pkt->payload_len);
    if (r)
        recv_account(qp, r, pkt, 1);
    return 0;
}

/* Responder jobs (READ data and atomic results we owe).  A job is accepted
 * when its request packet arrives (access checked, PSN marked received) but
 * executed only once every earlier PSN has arrived too, so a READ or atomic
 * sees every WRITE posted before it, as on an RDMA reliable connection
 * (SEM ordering).  It keeps a reference on its memory region until the
 * requester has acknowledged the whole response. */
static struct mre_rjob *alloc_rjob(mre_qp *qp, const struct mrw_pkt *pkt,
                                   mre_mr *mr)
{
    for (uint32_t i = 0; i < qp->nrjobs; i++)
        if (!qp->rjobs[i].active) {
            struct mre_rjob *j = &qp->rjobs[i];
            memset(j, 0, sizeof(*j));
            j->active = 1;
            j->waiting = 1;
            j->seq = qp->rjob_seq++;
            j->psn = pkt->base.psn;
            j->req_msn = pkt->u.rq.req.msn;
            j->stream = pkt->u.rq.req.stream;
            j->mr = mr;
            mr->refs++;
            qp->rjobs_waiting++;
            return j;
        }
    return NULL;
}

void mre_resp_free_rjob(mre_qp *qp, struct mre_rjob *j)
{
    if (!j->active)
        return;
    if (j->waiting)
        qp->rjobs_waiting--;
    else if (j->sent_pkts < j->npkts)
        qp->rjobs_unsent--;
    if (j->mr)
        j->mr->refs--;
    j->mr = NULL;
    j->active = 0;
    j->waiting = 0;
}

void mre_resp_on_acked(mre_qp *qp, uint32_t slot)
{
    if (slot >= qp->nrjobs)
        return;
    struct mre_rjob *j = &qp->rjobs[slot];
    if (!j->active)
        return;
    j->acked_pkts++;
    if (j->acked_pkts >= j->npkts && j->sent_pkts >= j->npkts)
        mre_resp_free_rjob(qp, j); /* the atomic result may be forgotten */
}

static void exec_rjob(mre_qp *qp, struct mre_rjob *j)
{
    if (j->is_atomic) {
        uint64_t old;
        memcpy(&old, j->target, 8);
        uint64_t nv = old;
        if (j->op == MROCE_OP_FETCH_ADD)
            nv = old + j->swap_add;
        else if (old == j->compare)
            nv = j->swap_add;
        memcpy(j->target, &nv, 8);
        /* The result lives in the job until the requester acknowledges the
         * ATOMIC_RESP's PSN; a retransmitted request is a duplicate PSN and
         * is never executed again (SEM exactly-once). */
        j->atomic_result = old;
    }
    j->waiting = 0;
    qp->rjobs_waiting--;
    qp->rjobs_unsent++; /* every job has at least one packet to send */
}

/* Execute, in PSN order, every waiting job all of whose predecessors have
 * now arrived. */
static void run_ready_rjobs(mre_qp *qp)
{
    while (qp->rjobs_waiting) {
        struct mre_rjob *best = NULL;
        for (uint32_t i = 0; i < qp->nrjobs; i++) {
            struct mre_rjob *j = &qp->rjobs[i];
            if (j->active && j->waiting &&
                (qp->streams_on ? mre_stream_rjob_ready(qp, j)
                                : mrw_psn_diff(qp->rxwin.cum, j->psn) > 0) &&
                (!best || mrw_psn_diff(j->psn, best->psn) < 0))
                best = j;
        }
        if (!best)
            return;
        exec_rjob(qp, best);
    }
}

static int on_read(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    uint8_t code = 0;
    mre_mr *mr = check_remote(qp, h->rkey, h->raddr, h->msg_len,
                              MROCE_ACCESS_REMOTE_READ, &code);
    if (!mr) {
        queue_nak(qp, pkt, code, 1);
        return -1;
    }
    struct mre_rjob *j = alloc_rjob(qp, pkt, mr);
    if (!j) {
        /* Peer exceeded max_rd_atomic: drop unmarked; it will retry. */
        qp->cnt.drop_state++;
        return -1;
    }
    j->len = h->msg_len;
    j->npkts = h->msg_len ? (h->msg_len + qp->mtu - 1) / qp->mtu : 1;
    j->src = mr->addr + (h->raddr - (uint64_t)(uintptr_t)mr->addr);
    return 0;
}

static int on_atomic(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    uint8_t code = 0;
    if (h->raddr & 7) {
        queue_nak(qp, pkt, MROCE_NAK_INVALID_REQUEST, 1);
        return -1;
    }
    mre_mr *mr = check_remote(qp, h->rkey, h->raddr, MROCE_ATOMIC_LEN,
                              MROCE_ACCESS_REMOTE_ATOMIC, &code);
    if (!mr) {
        queue_nak(qp, pkt, code, 1);
        return -1;
    }
    struct mre_rjob *j = alloc_rjob(qp, pkt, mr);
    if (!j) {
        qp->cnt.drop_state++;
        return -1;
    }
    j->is_atomic = 1;
    j->op = pkt->base.opcode;
    j->target = mr->addr + (h->raddr - (uint64_t)(uintptr_t)mr->addr);
    j->swap_add = pkt->u.rq.atomic.swap_add;
    j->compare = pkt->u.rq.atomic.compare;
    j->len = MROCE_ATOMIC_LEN;
    j->npkts = 1;
    return 0;
}

/* READ_RESP / ATOMIC_RESP arriving at the requester. */
static int on_response(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_resp_hdr *h = &pkt->u.resp;
    struct mre_swqe *w = &qp->sq[h->req_msn & qp->sq_mask];
    if (qp->streams_on) {
        /* Matched by (stream, MSN) (SEM-35). */
        w = mre_stream_find_swqe(qp, h->stream, h->req_msn);
        if (!w) {
            qp->cnt.drop_invalid++;
            return -1;
        }
    } else if (h->stream) {
        qp->cnt.drop_invalid++; /* no stream but 0 on this QP */
        return -1;
    }
    int want_atomic = pkt->base.opcode == MROCE_OP_ATOMIC_RESP;
    int is_atomic = w->opcode == MROCE_WR_FETCH_ADD ||
                    w->opcode == MROCE_WR_CMP_SWAP;
    if (w->state != SWQE_POSTED || w->smsn != h->req_msn ||
        (!qp->streams_on && mrw_psn_diff(h->req_msn, qp->sq_tx) >= 0) ||
        w->sent_pkts == 0 ||
        (want_atomic ? !is_atomic : w->opcode != MROCE_WR_READ) ||
        h->msg_len != (want_atomic ? MROCE_ATOMIC_LEN : w->length)) {
        qp->cnt.drop_invalid++;
        return -1;
    }
    if (want_atomic) {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
            v = v << 8 | pkt->payload[i];
        w->atomic_result = v;
        mre_mr_sge_scatter(w->sge, w->num_sge, 0, (const uint8_t *)&v, 8);
        w->resp_bytes = 8;
    } else {
        mre_mr_sge_scatter(w->sge, w->num_sge, h->offset, pkt->payload,
                           pkt->payload_len);
        w->resp_bytes += pkt->payload_len;
    }
    if (w->resp_bytes >= w->length)
        w->resp_done = 1;
    return 0;
}

int mre_resp_on_data(mre_qp *qp, const struct mrw_pkt *pkt,
                     const struct mre_rx_info *info, mroce_tstamp now)
{
    uint32_t psn = pkt->base.psn;
    int ce = info->ecn == MROCE_ECN_CE && !MROCE_SEEDED_FAULT(ECN_IGNORE);
    if (pkt->payload_len > qp->mtu) {
        qp->cnt.drop_invalid++; /* larger than negotiated (CONN-12, WIRE-31) */
        return 0;
    }
    if (pkt->base.flags & MROCE_F_CREDIT)
        qp->credit_seen = now;
    if (qp->fatal_nak && psn == qp->nak.nak_psn) {
        /* Our NAK was lost: say it again, on the retransmission's path. */
        qp->nak_entropy = pkt->base.entropy;
        qp->ctrl |= CTRL_NAK;
        return 0;
    }
    int cls = mre_rxwin_classify(&qp->rxwin, psn);
    if (cls == RXWIN_AHEAD &&
        !(MROCE_SEEDED_FAULT(WINDOW_ANY) &&
          mrw_psn_diff(psn, qp->rxwin.cum) < 2 * (int32_t)qp->rxwin.size)) {
        qp->cnt.drop_window++;
        return 0;
    }
    if (ce)
        qp->cnt.rx_ecn_ce++;
    if (cls == RXWIN_DUP) {
        qp->cnt.rx_dups++;
        qp->echo_psn = psn;
        qp->echo_ts = pkt->base.tsval;
        qp->echo_entropy = pkt->base.entropy;
        qp->echo_flags =
            (uint8_t)((MROCE_SEEDED_FAULT(DUP_NO_FLAG) ? 0 : MROCE_ECHO_DUP) |
                      (ce ? MROCE_ECHO_CE : 0));
        qp->echo_arrival = now;
        qp->ack_now = 1;
        MROCE_SEEDED_FAULT_DUP(qp, pkt); /* seeded_dup.c */
        return 0;
    }
    int is_req = pkt->base.opcode != MROCE_OP_READ_RESP &&
                 pkt->base.opcode != MROCE_OP_ATOMIC_RESP;
    if (is_req) {
        if (!qp->streams_on) {
            if (pkt->u.rq.req.stream && !MROCE_SEEDED_FAULT(STREAM_FLAG_ANY)) {
                qp->cnt.drop_invalid++; /* STREAM not negotiated (SEM-32) */
                return 0;
            }
        } else if (mre_stream_rx_admit(qp, pkt) < 0) {
            return 0;
        }
    }
    int rc;
    switch (pkt->base.opcode) {
    case MROCE_OP_SEND:
        rc = on_send(qp, pkt);
        break;
    case MROCE_OP_WRITE:
        rc = on_write(qp, pkt);
        break;
    case MROCE_OP_READ_REQ:
        rc = on_read(qp, pkt);
        break;
    case MROCE_OP_FETCH_ADD:
    case MROCE_OP_CMP_SWAP:
        rc = on_atomic(qp, pkt);
        break;
    default:
        rc = on_response(qp, pkt);
        /* A response shows the request arrived, as an ACK would (REL-32). */
        if (rc == 0)
            qp->heard = now;
        break;
    }
    if (rc < 0) {
        if (is_req && qp->streams_on)
            mre_stream_rx_refused(qp, pkt);
        return 0; /* NAKed or dropped: not marked, nothing acknowledged */
    }
    uint32_t old_cum = qp->rxwin.cum;
    int gap = mrw_psn_diff(qp->rxwin.high, old_cum) > 0;
    mre_rxwin_mark(&qp->rxwin, psn);
    qp->rx_count++;
    if (ce)
        qp->ce_count++;
    if (is_req && qp->streams_on)
        mre_stream_rx_placed(qp, pkt); /* completes the stream's receives */
    if (qp->ack_pending++ == 0)
        qp->ack_deadline = now +
                           qp->attr.max_ack_delay *
                               (MROCE_SEEDED_FAULT(ACK_DELAY_LONG) ? 50000 : 1);
    /* ack_delay is measured from the echoed packet's own arrival: using the
     * first coalesced packet's would make the sender subtract too much and
     * see RTTs below the real path delay. */
    qp->echo_arrival = now;
    qp->echo_psn = psn;
    qp->echo_ts = pkt->base.tsval;
    qp->echo_entropy = pkt->base.entropy;
    qp->echo_flags = ce ? MROCE_ECHO_CE : 0;
    /* Immediate ACK: asked for, congestion signal, a hole just filled at the
     * cumulative point (the sender learns its repair worked), or enough
     * packets coalesced. */
    if ((pkt->base.flags & MROCE_F_ACK_REQ) || ce || (gap && psn == old_cum) ||
        qp->ack_pending >= MROCE_ACK_FREQ)
        qp->ack_now = 1;
    /* Any packet may have moved cum_psn, which releases waiting READs and
     * atomics and receive completions held for ordering. */
    if (qp->rjobs_waiting)
        run_ready_rjobs(qp);
    if (!qp->streams_on && qp->rq_head != qp->rq_tail)
        mre_resp_complete_recvs(qp);
    return pkt->base.opcode == MROCE_OP_READ_RESP ||
           pkt->base.opcode == MROCE_OP_ATOMIC_RESP;
}

int mre_resp_write_ack(mre_qp *qp, uint8_t *buf, size_t cap,
                       struct mre_tx_info *info, mroce_tstamp now)
{
    struct mrw_pkt p;
    mre_qp_base_hdr(qp, &p, MROCE_OP_ACK, qp->snd_nxt, now);
    /* answer on the path it came by */
    p.base.entropy = qp->echo_entropy ^ MROCE_SEEDED_FAULT(ENTROPY_NO_ECHO);
    struct mrw_ack_hdr *a = &p.u.ack;
    a->cum_psn = qp->rxwin.cum + MROCE_SEEDED_FAULT(ACK_UNRECEIVED);
    a->echo_psn = qp->echo_psn;
    a->echo_ts = qp->echo_ts;
    a->echo_entropy = qp->echo_entropy ^ MROCE_SEEDED_FAULT(ENTROPY_NO_ECHO);
    a->echo_flags = qp->echo_flags;
    /* REL-42's span, and no more words than the caller's buffer holds (a
     * buffer sized for a small MTU is below a wide ACK's 1,084 bytes) */
    size_t fixed = MROCE_BASE_HDR_LEN + MROCE_ACK_HDR_LEN + MROCE_CRC_LEN;
    size_t room = cap > fixed ? (cap - fixed) / 4 : 0;
    int words = room < qp->ack_sack_words ? (int)room : qp->ack_sack_words;
    a->sack_words = (uint8_t)mre_rxwin_sack(&qp->rxwin, a->sack, words);
    a->ce_count = qp->ce_count;
    a->rx_count = qp->rx_count;
    a->credit = mre_ep_credit_share(qp->ep, qp, now);
    mroce_tstamp d = now > qp->echo_arrival ? now - qp->echo_arrival : 0;
    a->ack_delay = d > 0xffffffffu ? 0xffffffffu : (uint32_t)d;
    if (qp->ka & KA_PROBE)
        p.base.flags |= MROCE_F_ACK_REQ; /* a keepalive (REL-34) */
    if (mre_rh_asking(qp))               /* a share request (CC-30) */
        p.base.flags |= MROCE_F_ACK_REQ | MROCE_F_CREDIT;
    /* A keepalive, or its answer, or a share request that echoes no packet
     * newer than the last ACK's carries DUP: its echo is old and no RTT
     * sample (REL-35). */
    if ((qp->ka || mre_rh_asking(qp)) && !qp->ack_pending)
        a->echo_flags |= MROCE_ECHO_DUP;
    size_t n = mrw_pkt_encode(&p, buf, cap);
    if (n == 0)
        return MROCE_ENOBUF;
    if (qp->ka & KA_PROBE)
        qp->cnt.tx_keepalives++;
    qp->ka = 0;
    mre_rh_on_ack_sent(qp);
    qp->ack_now = 0;
    qp->ack_pending = 0;
    qp->ack_deadline = MROCE_TSTAMP_INF;
    qp->echo_flags = 0;
    qp->cnt.tx_acks++;
    if (a->echo_flags & MROCE_ECHO_CE)
        qp->cnt.tx_ecn_echo++;
    info->to = qp->peer;
    info->entropy = p.base.entropy;
    return (int)n;
}

int mre_resp_write_nak(mre_qp *qp, uint8_t *buf, size_t cap,
                       struct mre_tx_info *info, mroce_tstamp now)
{
    struct mrw_pkt p;
    mre_qp_base_hdr(qp, &p, MROCE_OP_NAK, qp->snd_nxt, now);
    p.base.entropy = qp->nak_entropy ^ MROCE_SEEDED_FAULT(ENTROPY_NO_ECHO);
    p.u.nak = qp->nak;
    p.u.nak.cum_psn = qp->rxwin.cum;
    size_t n = mrw_pkt_encode(&p, buf, cap);
    if (n == 0)
        return MROCE_ENOBUF;
    qp->ctrl &= (uint8_t)~CTRL_NAK;
    qp->cnt.tx_naks++;
    info->to = qp->peer;
    info->entropy = p.base.entropy;
    return (int)n;
}

void mre_resp_ack_timer(mre_qp *qp, mroce_tstamp now)
{
    if (qp->ack_deadline <= now) {
        qp->ack_deadline = MROCE_TSTAMP_INF;
        if (qp->ack_pending)
            qp->ack_now = 1;
    }
}

void mre_resp_reset(mre_qp *qp)
{
    /* Receives whose message finished keep their success; the others are
     * flushed.  Completion order stays the posting order. */
    struct mre_rwqe *r;
    for (uint32_t k = 0; (r = mre_resp_rq_next(qp, &k));) {
        if (!r->done) {
            r->done = 1;
            r->status = MROCE_WC_WR_FLUSH_ERR;
        }
    }
    mre_resp_complete_recvs(qp);
    for (uint32_t i = 0; i < qp->nrjobs; i++)
        mre_resp_free_rjob(qp, &qp->rjobs[i]);
}
