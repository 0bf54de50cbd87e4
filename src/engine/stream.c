/*
 * stream.c - many ordered streams over one queue pair.
 *
 * A stream divides ordering and completion, never reliability: PSNs, the
 * transmit ring, paths, congestion control and loss recovery stay per QP.
 * Per stream the requester numbers its messages (MSN) and the receives
 * they consume (RSN) and completes them in that stream's posting order;
 * the responder consumes the stream's own receives by that RSN and
 * completes a message once it and every earlier message of its stream are
 * placed, so a hole in one stream's packets never holds another's
 * completions (SEM-30..41).  A stream is opened by its first work request
 * and packet and needs no handshake: its state is one entry of the table
 * allocated with the QP for attr.max_streams streams.
 *
 * The responder tracks placement per message: the stream's oldest
 * incomplete message (rx_msn) in the stream entry itself, later messages
 * of any stream in a pool of MRE_STREAM_MSGS records, at most
 * MRE_STREAM_MSGS_PER_STREAM of them per stream, and none for a message
 * refused (RNR) before any of it is placed.  A packet of a later message
 * that finds no record it may take is dropped unmarked and sent again by
 * the requester's loss recovery; the oldest message of each stream always
 * has room, so every stream makes progress (SEM-41).  Receives of all
 * streams share the QP's ring; a completed receive's slot goes back to a
 * free list at once, so no stream's receives pin another's (SEM-40).
 *
 * Nothing here runs on a QP of one stream (streams_on 0) beyond the
 * handshake hooks, the post-time check and the numbering, which there
 * give today's MSN and RSN.
 */
#include "engine_int.h"
#include "../wire/seeded_fault.h"

int mre_stream_alloc(mre_qp *qp)
{
    const struct mre_mem *m = &qp->ep->mem;
    uint16_t n = qp->attr.max_streams;
    qp->nstreams = n;
    qp->streams_on = n > 1;
    qp->streams = mre_mem_calloc(m, n, sizeof(*qp->streams));
    if (!qp->streams)
        return MROCE_ENOMEM;
    if (qp->streams_on) {
        uint32_t depth = qp->attr.max_recv_wr;
        qp->smsgs = mre_mem_calloc(m, MRE_STREAM_MSGS, sizeof(*qp->smsgs));
        qp->rq_free = mre_mem_calloc(m, depth, sizeof(*qp->rq_free));
        if (!qp->smsgs || !qp->rq_free)
            return MROCE_ENOMEM;
        for (uint32_t i = 0; i < depth; i++) /* slot 0 is taken first */
            qp->rq_free[i] = (uint16_t)(depth - 1 - i);
        qp->rq_nfree = depth;
    }
    return 0;
}

void mre_stream_free(const struct mre_mem *m, mre_qp *qp)
{
    mre_mem_free(m, qp->streams);
    mre_mem_free(m, qp->smsgs);
    mre_mem_free(m, qp->rq_free);
    qp->streams = NULL;
    qp->smsgs = NULL;
    qp->rq_free = NULL;
}

/* --- handshake (SEM-31) --- */

void mre_stream_conn_build(const mre_qp *qp, struct mrw_conn_hdr *c)
{
    /* Absent for one stream: today's CONNECT, byte for byte. */
    if (qp->attr.max_streams > 1 || MROCE_SEEDED_FAULT(STREAM_EXT_ALWAYS))
        c->max_streams = qp->attr.max_streams;
}

void mre_stream_conn_adopt(mre_qp *qp, const struct mrw_conn_hdr *c)
{
    uint16_t peer = c->max_streams ? c->max_streams : 1;
    qp->nstreams = peer < qp->attr.max_streams ? peer : qp->attr.max_streams;
    if (MROCE_SEEDED_FAULT(STREAM_NO_MIN))
        qp->nstreams = qp->attr.max_streams;
}

/* --- post time --- */

int mre_stream_check(const mre_qp *qp, uint16_t stream)
{
    return stream < qp->nstreams ? 0 : MROCE_EINVAL;
}

void mre_stream_number_send(mre_qp *qp, struct mre_swqe *w, int consumes_recv)
{
    struct mre_stream *st = &qp->streams[w->stream];
    w->smsn = st->next_msn++;
    if (consumes_recv)
        w->rsn = st->next_rsn++;
}

uint32_t mre_stream_rq_slot(mre_qp *qp)
{
    if (MROCE_SEEDED_FAULT(STREAM_RQ_RING)) {
        /* stream_rq_ring: the ring's next slot, which the caller has
         * found free; taken out of the free list (violates SEM-40). */
        uint32_t slot = qp->rq_tail & qp->rq_mask;
        for (uint32_t i = 0; i < qp->rq_nfree; i++)
            if (qp->rq_free[i] == slot) {
                qp->rq_free[i] = qp->rq_free[--qp->rq_nfree];
                break;
            }
        return slot;
    }
    /* The caller has checked that fewer than max_recv_wr receives are
     * outstanding, so a slot is free. */
    return qp->rq_free[--qp->rq_nfree];
}

void mre_stream_link_recv(mre_qp *qp, uint32_t slot)
{
    if (!qp->streams_on)
        return;
    struct mre_rwqe *r = &qp->rq[slot];
    struct mre_stream *st = &qp->streams[r->stream];
    if (st->rq_posted == st->rq_done)
        st->rq_first = (uint16_t)slot;
    else
        qp->rq[st->rq_last].snext = (uint16_t)slot;
    st->rq_last = (uint16_t)slot;
    st->rq_posted++;
}

/* --- requester --- */

struct mre_swqe *mre_stream_find_swqe(mre_qp *qp, uint16_t stream, uint32_t msn)
{
    for (uint32_t i = qp->sq_head; i != qp->sq_tx; i++) {
        struct mre_swqe *w = &qp->sq[i & qp->sq_mask];
        if (w->state == SWQE_POSTED &&
            (w->stream == stream || MROCE_SEEDED_FAULT(STREAM_RESP_ANY)) &&
            w->smsn == msn)
            return w;
    }
    return NULL;
}

/* --- responder --- */

static struct mre_stream_msg *find_msg(mre_qp *qp, uint16_t stream,
                                       uint32_t msn)
{
    for (uint32_t i = 0; i < MRE_STREAM_MSGS; i++) {
        struct mre_stream_msg *g = &qp->smsgs[i];
        if (g->used && g->stream == stream && g->msn == msn)
            return g;
    }
    return NULL;
}

int mre_stream_rx_admit(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    if (h->stream >= qp->nstreams) {
        qp->cnt.drop_invalid++; /* a stream not negotiated (SEM-32) */
        return -1;
    }
    const struct mre_stream *st = &qp->streams[h->stream];
    int32_t d = (int32_t)(h->msn - st->rx_msn);
    if (d < 0 || d > (int32_t)qp->rxwin.size) {
        /* A new PSN for a message already placed, or one further ahead
         * than the window allows messages: not a conforming peer. */
        qp->cnt.drop_invalid++;
        return -1;
    }
    if (d == 0 || find_msg(qp, h->stream, h->msn))
        return 0;
    if (st->nmsgs < MRE_STREAM_MSGS_PER_STREAM ||
        MROCE_SEEDED_FAULT(STREAM_POOL_HOG)) {
        for (uint32_t i = 0; i < MRE_STREAM_MSGS; i++) {
            struct mre_stream_msg *g = &qp->smsgs[i];
            if (!g->used) {
                memset(g, 0, sizeof(*g));
                g->used = 1;
                g->stream = h->stream;
                g->msn = h->msn;
                qp->streams[h->stream].nmsgs++;
                return 0;
            }
        }
    }
    /* No record free, or the stream holds its share (SEM-41): resent by
     * the requester's loss recovery. */
    qp->cnt.drop_state++;
    return -1;
}

void mre_stream_rx_refused(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    struct mre_stream_msg *g = find_msg(qp, h->stream, h->msn);
    /* Nothing of its message is placed yet: the record holds no state, and
     * kept it would pin the pool for as long as the receiver is not ready
     * on the stream (SEM-41). */
    if (g && !g->seen && !MROCE_SEEDED_FAULT(STREAM_RNR_HOLDS)) {
        g->used = 0;
        qp->streams[h->stream].nmsgs--;
    }
}

struct mre_rwqe *mre_stream_recv_for(mre_qp *qp, uint16_t stream, uint32_t rsn,
                                     int *stale)
{
    const struct mre_stream *st = &qp->streams[stream];
    int32_t d = (int32_t)(rsn - st->rq_done);
    *stale = 0;
    if (d < 0) {
        *stale = 1;
        return NULL;
    }
    if ((uint32_t)d >= st->rq_posted - st->rq_done)
        return NULL; /* receiver not ready on this stream (SEM-37) */
    uint32_t slot = st->rq_first;
    while (d-- > 0)
        slot = qp->rq[slot].snext;
    return &qp->rq[slot];
}

static int is_rd_atomic_op(uint8_t op)
{
    return op == MROCE_OP_READ_REQ || op == MROCE_OP_FETCH_ADD ||
           op == MROCE_OP_CMP_SWAP;
}

/* The stream's oldest incomplete message is now placed: move on to the
 * next, taking over its record. */
static void advance(mre_qp *qp, struct mre_stream *st, uint16_t stream)
{
    for (;;) {
        st->rx_msn++;
        st->rx_placed = 0;
        struct mre_stream_msg *g = find_msg(qp, stream, st->rx_msn);
        if (!g)
            return;
        g->used = 0;
        st->nmsgs--;
        if (!g->seen || g->placed < g->len) {
            st->rx_placed = g->placed;
            return;
        }
    }
}

void mre_stream_rx_placed(mre_qp *qp, const struct mrw_pkt *pkt)
{
    const struct mrw_req_hdr *h = &pkt->u.rq.req;
    struct mre_stream *st = &qp->streams[h->stream];
    /* A READ or atomic request is its message's only packet. */
    uint32_t bytes = is_rd_atomic_op(pkt->base.opcode) ? h->msg_len
                                                       : pkt->payload_len;
    if (h->msn != st->rx_msn) {
        struct mre_stream_msg *g = find_msg(qp, h->stream, h->msn);
        if (g) { /* admitted: always found */
            g->placed += bytes;
            g->len = h->msg_len;
            g->seen = 1;
        }
        return;
    }
    st->rx_placed += bytes;
    if (st->rx_placed < h->msg_len)
        return;
    advance(qp, st, h->stream);
    mre_stream_complete_recvs(qp, h->stream);
}

int mre_stream_rjob_ready(const mre_qp *qp, const struct mre_rjob *j)
{
    /* Every earlier message of its stream is placed (SEM-35). */
    return (int32_t)(qp->streams[j->stream].rx_msn - j->req_msn) > 0 &&
           !(MROCE_SEEDED_FAULT(STREAM_RESP_WAITS_OTHER) &&
             mrw_psn_diff(qp->rxwin.cum, j->psn) <= 0);
}

void mre_stream_complete_recvs(mre_qp *qp, uint16_t stream)
{
    int live = qp->state == MROCE_QPS_RTS || qp->state == MROCE_QPS_CLOSING;
    struct mre_stream *st = &qp->streams[stream];
    while (st->rq_done != st->rq_posted) {
        struct mre_rwqe *r = &qp->rq[st->rq_first];
        if (!r->done)
            break;
        if (r->status == MROCE_WC_SUCCESS &&
            ((int32_t)(st->rx_msn - r->msn) <= 0 ||
             (MROCE_SEEDED_FAULT(STREAM_RECV_HOL) &&
              mrw_psn_diff(qp->rxwin.cum, r->last_psn) <= 0))) {
            if (live)
                break; /* placed, but an earlier message of the stream is
                          not yet (SEM-33) */
            r->status = MROCE_WC_WR_FLUSH_ERR; /* SEM-24 */
        }
        mre_resp_push_recv_wc(qp, r);
        /* Receives of different streams complete out of ring order: the
         * slot is free at once, whatever other streams still hold. */
        r->posted = 0;
        qp->rq_free[qp->rq_nfree++] = st->rq_first;
        qp->rq_head++;
        st->rq_done++;
        st->rq_first = r->snext;
    }
}

void mre_stream_complete_all_recvs(mre_qp *qp)
{
    for (uint32_t s = 0; s < qp->attr.max_streams; s++)
        if (qp->streams[s].rq_done != qp->streams[s].rq_posted)
            mre_stream_complete_recvs(qp, (uint16_t)s);
}
