/*
 * datapath.c - ibv_post_send, ibv_post_recv and ibv_poll_cq (the ops the
 * inline functions of <infiniband/verbs.h> call) translated to libmroce's.
 *
 * Work requests are converted in batches of up to MV_BATCH on the stack;
 * scatter-gather lists have the same layout in both APIs and are passed
 * through.  Opcodes outside RC SEND/WRITE/READ/atomics (local invalidate,
 * memory window binds, send with invalidate, TSO) fail with EOPNOTSUPP and
 * *bad_wr names them.  A receive completion of a SEND with immediate is
 * IBV_WC_RECV with IBV_WC_WITH_IMM, of a WRITE with immediate
 * IBV_WC_RECV_RDMA_WITH_IMM with it (libmroce's MROCE_WC_RDMA_WRITE).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "verbs_int.h"

#define MV_BATCH 32

_Static_assert(sizeof(struct ibv_sge) == sizeof(struct mroce_sge) &&
                   offsetof(struct ibv_sge, lkey) ==
                       offsetof(struct mroce_sge, lkey),
               "ibv_sge and mroce_sge share a layout");

/* Passive side: a send must wait until the peer's CONNECT_REQ arrives. */
static int wait_connected(struct mv_qp *q)
{
    while (mroce_qp_get_state(q->mqp) == MROCE_QPS_LISTEN) {
        int rc = mroce_accept(q->mqp, 100);
        if (rc == 0)
            return 0;
        if (rc != MROCE_ETIMEDOUT)
            return mv_errno(rc);
    }
    return 0;
}

static int conv_send(const struct mv_qp *q, const struct ibv_send_wr *w,
                     struct mroce_send_wr *m)
{
    memset(m, 0, sizeof(*m));
    if (w->num_sge < 0 || w->num_sge > MV_MAX_SGE)
        return EINVAL;
    m->wr_id = w->wr_id;
    m->sg_list = (struct mroce_sge *)w->sg_list;
    m->num_sge = w->num_sge;
    m->imm_data = w->imm_data;
    unsigned f = (unsigned)w->send_flags;
    if (f & ~(unsigned)(IBV_SEND_FENCE | IBV_SEND_SIGNALED |
                        IBV_SEND_SOLICITED | IBV_SEND_INLINE))
        return EOPNOTSUPP; /* IP checksum offload */
    m->send_flags = ((f & IBV_SEND_FENCE) ? MROCE_SEND_FENCE : 0) |
                    ((f & IBV_SEND_SIGNALED) || q->sq_sig_all
                         ? MROCE_SEND_SIGNALED
                         : 0) |
                    ((f & IBV_SEND_SOLICITED) ? MROCE_SEND_SOLICITED : 0) |
                    ((f & IBV_SEND_INLINE) ? MROCE_SEND_INLINE : 0);
    switch (w->opcode) {
    case IBV_WR_SEND:
        m->opcode = MROCE_WR_SEND;
        return 0;
    case IBV_WR_SEND_WITH_IMM:
        m->opcode = MROCE_WR_SEND_WITH_IMM;
        return 0;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
        m->opcode = w->opcode == IBV_WR_RDMA_WRITE  ? MROCE_WR_WRITE
                    : w->opcode == IBV_WR_RDMA_READ ? MROCE_WR_READ
                                                    : MROCE_WR_WRITE_WITH_IMM;
        m->remote_addr = w->wr.rdma.remote_addr;
        m->rkey = w->wr.rdma.rkey;
        return 0;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        m->opcode = w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD
                        ? MROCE_WR_FETCH_ADD
                        : MROCE_WR_CMP_SWAP;
        m->remote_addr = w->wr.atomic.remote_addr;
        m->rkey = w->wr.atomic.rkey;
        m->compare_add = w->wr.atomic.compare_add;
        m->swap = w->wr.atomic.swap;
        return 0;
    default:
        return EOPNOTSUPP;
    }
}

int mv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                 struct ibv_send_wr **bad_wr)
{
    struct mv_qp *q = (struct mv_qp *)qp;
    mv_app_call(q->ctx);
    if (bad_wr)
        *bad_wr = wr;
    if (q->attr.qp_state != IBV_QPS_RTS)
        return EINVAL;
    int rc = wait_connected(q);
    if (rc)
        return rc;
    while (wr) {
        struct mroce_send_wr m[MV_BATCH];
        struct ibv_send_wr *src[MV_BATCH];
        int n = 0;
        for (; wr && n < MV_BATCH; wr = wr->next, n++) {
            rc = conv_send(q, wr, &m[n]);
            if (rc) {
                /* Post what precedes the bad WR, then report it. */
                break;
            }
            src[n] = wr;
            if (n)
                m[n - 1].next = &m[n];
        }
        if (n) {
            struct mroce_send_wr *bad = NULL;
            int mrc = mroce_post_send(q->mqp, m, &bad);
            if (mrc < 0) {
                if (bad_wr)
                    *bad_wr = bad ? src[bad - m] : src[0];
                return mv_errno(mrc);
            }
        }
        if (rc) {
            if (bad_wr)
                *bad_wr = wr;
            return rc;
        }
    }
    return 0;
}

int mv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                 struct ibv_recv_wr **bad_wr)
{
    struct mv_qp *q = (struct mv_qp *)qp;
    mv_app_call(q->ctx);
    if (bad_wr)
        *bad_wr = wr;
    if (q->attr.qp_state == IBV_QPS_RESET)
        return EINVAL;
    while (wr) {
        struct mroce_recv_wr m[MV_BATCH];
        struct ibv_recv_wr *src[MV_BATCH];
        int n = 0;
        for (; wr && n < MV_BATCH; wr = wr->next, n++) {
            if (wr->num_sge < 0 || wr->num_sge > MV_MAX_SGE) {
                if (bad_wr)
                    *bad_wr = wr;
                return EINVAL;
            }
            memset(&m[n], 0, sizeof(m[n]));
            m[n].wr_id = wr->wr_id;
            m[n].sg_list = (struct mroce_sge *)wr->sg_list;
            m[n].num_sge = wr->num_sge;
            src[n] = wr;
            if (n)
                m[n - 1].next = &m[n];
        }
        struct mroce_recv_wr *bad = NULL;
        int rc = mroce_post_recv(q->mqp, m, &bad);
        if (rc < 0) {
            if (bad_wr)
                *bad_wr = bad ? src[bad - m] : src[0];
            return mv_errno(rc);
        }
    }
    return 0;
}

static enum ibv_wc_status wc_status(enum mroce_wc_status s)
{
    switch (s) {
    case MROCE_WC_SUCCESS:
        return IBV_WC_SUCCESS;
    case MROCE_WC_LOC_LEN_ERR:
        return IBV_WC_LOC_LEN_ERR;
    case MROCE_WC_LOC_PROT_ERR:
        return IBV_WC_LOC_PROT_ERR;
    case MROCE_WC_LOC_QP_OP_ERR:
        return IBV_WC_LOC_QP_OP_ERR;
    case MROCE_WC_REM_ACCESS_ERR:
        return IBV_WC_REM_ACCESS_ERR;
    case MROCE_WC_REM_INV_REQ_ERR:
        return IBV_WC_REM_INV_REQ_ERR;
    case MROCE_WC_REM_OP_ERR:
        return IBV_WC_REM_OP_ERR;
    case MROCE_WC_RNR_RETRY_EXC_ERR:
        return IBV_WC_RNR_RETRY_EXC_ERR;
    case MROCE_WC_RETRY_EXC_ERR:
        return IBV_WC_RETRY_EXC_ERR;
    case MROCE_WC_WR_FLUSH_ERR:
        return IBV_WC_WR_FLUSH_ERR;
    }
    return IBV_WC_GENERAL_ERR;
}

static enum ibv_wc_opcode wc_opcode(enum mroce_wc_opcode o, unsigned flags)
{
    switch (o) {
    case MROCE_WC_SEND:
        return IBV_WC_SEND;
    case MROCE_WC_WRITE:
        return IBV_WC_RDMA_WRITE;
    case MROCE_WC_READ:
        return IBV_WC_RDMA_READ;
    case MROCE_WC_FETCH_ADD:
        return IBV_WC_FETCH_ADD;
    case MROCE_WC_CMP_SWAP:
        return IBV_WC_COMP_SWAP;
    case MROCE_WC_RECV_WITH_IMM:
        if (flags & MROCE_WC_RDMA_WRITE)
            return IBV_WC_RECV_RDMA_WITH_IMM;
        break;
    case MROCE_WC_RECV:
        break;
    }
    return IBV_WC_RECV;
}

int mv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
    struct mv_cq *c = (struct mv_cq *)cq;
    struct mv_context *ctx = mv_ctx(cq->context);
    mv_app_call(ctx);
    mv_async_tick(ctx, atomic_load_explicit(&ctx->app_ns, memory_order_relaxed),
                  0);
    struct mroce_wc m[MV_BATCH];
    int got = 0;
    while (got < num_entries) {
        int want = num_entries - got < MV_BATCH ? num_entries - got : MV_BATCH;
        int n = mroce_poll_cq(c->mcq, want, m);
        if (n < 0)
            return got ? got : -1;
        for (int i = 0; i < n; i++) {
            struct ibv_wc *w = &wc[got + i];
            memset(w, 0, sizeof(*w));
            w->wr_id = m[i].wr_id;
            w->status = wc_status(m[i].status);
            w->opcode = wc_opcode(m[i].opcode, m[i].wc_flags);
            w->byte_len = m[i].byte_len;
            w->imm_data = m[i].imm_data;
            w->qp_num = m[i].qp_num;
            /* RC: the one peer; RoCE has no LIDs (slid, sl, path bits 0). */
            w->src_qp = mv_peer_qpn(ctx, m[i].qp_num);
            w->wc_flags = (m[i].wc_flags & MROCE_WC_WITH_IMM) ? IBV_WC_WITH_IMM
                                                              : 0;
        }
        got += n;
        for (int i = 0; i < n; i++)
            if (m[i].status != MROCE_WC_SUCCESS) {
                /* Its QP has gone to ERROR: queue the event now. */
                mv_async_scan(ctx);
                break;
            }
        if (n < want)
            break;
    }
    return got;
}
