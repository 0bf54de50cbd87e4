/*
 * seeded_dup.c - the engine's duplicate-path seeded faults (seeded_dup.h).
 *
 * Compiled into the engine of every build, but empty unless
 * MROCE_SEEDED_FAULTS is defined: only the fault build used by
 * mroce-conform-agent-faults gets the code.
 */
#include "seeded_dup.h"

#ifdef MROCE_SEEDED_FAULTS

#include "engine_int.h"

/* atomic_twice: run a duplicated FETCH_ADD / CMP_SWAP on memory again,
 * instead of only replaying the kept result (violates SEM-13, REL-8). */
static void dup_atomic(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    uint8_t code = 0;
    if (h->raddr & 7)
        return;
    mre_mr *mr = mre_mr_check_remote(qp->ep, qp->attr.pd, h->rkey, h->raddr,
                                     MROCE_ATOMIC_LEN,
                                     MROCE_ACCESS_REMOTE_ATOMIC, &code);
    if (!mr)
        return;
    uint8_t *t = mr->addr + (h->raddr - (uint64_t)(uintptr_t)mr->addr);
    uint64_t old, nv;
    memcpy(&old, t, 8);
    nv = old;
    if (pkt->base.opcode == MROCE_OP_FETCH_ADD)
        nv = old + pkt->u.rq.atomic.swap_add;
    else if (old == pkt->u.rq.atomic.compare)
        nv = pkt->u.rq.atomic.swap_add;
    memcpy(t, &nv, 8);
}

/* dup_send_twice: deliver a duplicated SEND packet again, into the oldest
 * receive no packet has bound yet (violates REL-8). */
static void dup_send(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    struct mre_rwqe *r;
    for (uint32_t k = 0; (r = mre_resp_rq_next(qp, &k));) {
        if (r->started)
            continue;
        if (h->msg_len > r->capacity)
            return;
        r->started = 1;
        r->msg_len = h->msg_len;
        r->last_psn = pkt->base.psn;
        mre_mr_sge_scatter(r->sge, r->num_sge, h->offset, pkt->payload,
                           pkt->payload_len);
        if (pkt->base.flags & MROCE_F_IMM) {
            r->has_imm = 1;
            r->imm = h->imm;
        }
        r->placed += pkt->payload_len;
        if (r->placed >= r->msg_len) {
            r->done = 1;
            r->status = MROCE_WC_SUCCESS;
        }
        mre_resp_complete_recvs(qp);
        return;
    }
}

/* stream_dup_new: on a stream QP, a duplicate PSN whose (stream, MSN) is
 * its stream's next message is taken as that message: a SEND is placed
 * into the stream's receive, a WRITE into memory (violates SEM-39). */
static void dup_stream_new(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    unsigned op = pkt->base.opcode;
    if ((op != MROCE_OP_SEND && op != MROCE_OP_WRITE) || !qp->streams_on ||
        h->stream >= qp->nstreams || h->msn != qp->streams[h->stream].rx_msn)
        return;
    if (op == MROCE_OP_SEND) {
        int stale;
        struct mre_rwqe *r = mre_stream_recv_for(qp, h->stream, h->rsn, &stale);
        if (!r || r->done || h->msg_len > r->capacity)
            return;
        r->started = 1;
        r->msg_len = h->msg_len;
        r->msn = h->msn;
        r->last_psn = pkt->base.psn;
        mre_mr_sge_scatter(r->sge, r->num_sge, h->offset, pkt->payload,
                           pkt->payload_len);
        r->placed += pkt->payload_len;
        if (r->placed >= r->msg_len) {
            r->done = 1;
            r->status = MROCE_WC_SUCCESS;
        }
    } else if (op == MROCE_OP_WRITE && !(pkt->base.flags & MROCE_F_IMM)) {
        uint8_t code = 0;
        mre_mr *mr = mre_mr_check_remote(qp->ep, qp->attr.pd, h->rkey, h->raddr,
                                         h->msg_len, MROCE_ACCESS_REMOTE_WRITE,
                                         &code);
        if (!mr)
            return;
        memcpy(mr->addr +
                   (h->raddr + h->offset - (uint64_t)(uintptr_t)mr->addr),
               pkt->payload, pkt->payload_len);
    } else {
        return;
    }
    mre_stream_rx_placed(qp, pkt); /* completes the stream's receives */
}

void mre_seeded_dup(struct mre_qp *qp, const struct mrw_pkt *pkt)
{
    unsigned op = pkt->base.opcode;
    if (MROCE_SEEDED_FAULT(ATOMIC_TWICE) &&
        (op == MROCE_OP_FETCH_ADD || op == MROCE_OP_CMP_SWAP))
        dup_atomic(qp, pkt);
    if (MROCE_SEEDED_FAULT(DUP_SEND_TWICE) && op == MROCE_OP_SEND)
        dup_send(qp, pkt);
    if (MROCE_SEEDED_FAULT(STREAM_DUP_NEW))
        dup_stream_new(qp, pkt);
}

#else

/* Normal builds: nothing (ISO C wants a declaration in every file). */
typedef int mre_seeded_dup_unused;

#endif
