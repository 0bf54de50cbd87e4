/*
 * mroce_msg.c - FI_MSG entry points and the send/receive engine that
 * FI_TAGGED shares (mroce_tagged.c only adds tags, peek and claim).
 *
 * Send: a message of up to eager_size bytes is copied behind a struct
 * mfi_hdr into a registered bounce buffer and sent as one MetaRoCE SEND
 * (so fi_inject and FI_INJECT cost nothing more); its completion comes
 * when the engine has the SEND acknowledged (transmit complete).  A larger
 * message sends an RTS naming the registered source buffer; the receiver
 * READs it once matched and answers FIN.  The FIN finishes the send, which
 * completes once libmroce has also released the buffer: the READ
 * responses are resent from it until the receiver acknowledges them, and
 * the FIN may overtake those ACKs (mroce_ep.c, op_finish).
 *
 * Receive: each QP's bounce buffers take whatever arrives.  A message is
 * matched against the posted receives (oldest first); an eager one is
 * copied out, an RTS starts the READ into the receive's buffers.  With no
 * match the buffer itself waits in the unexpected queue until a receive
 * claims it (see mroce_ep.c for the bound and the back-pressure).
 *
 * Truncation: a message longer than the receive gets the first bytes and
 * an FI_ETRUNC error entry (olen = bytes dropped).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "mroce_fi.h"

static const uint64_t kind_flag[2] = {FI_MSG, FI_TAGGED};

static int post_buf(struct mfi_ep *ep, struct mfi_conn *c, struct mfi_buf *b,
                    size_t len)
{
    struct mroce_sge sge = {(uintptr_t)b->data, (uint32_t)len, b->lkey};
    struct mroce_send_wr wr = {.wr_id = (uintptr_t)b,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = MROCE_WR_SEND,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .stream = c->stream};
    b->conn = c;
    mfi_hdr_stamp(ep, b);
    int rc = mroce_post_send(c->qp, &wr, NULL);
    if (rc == 0)
        ep->wr_outstanding++;
    return rc;
}

/* A control message: header (flags, data), then the payload. */
static int mfi_send_ctrl_hdr(struct mfi_ep *ep, struct mfi_conn *c,
                             uint8_t kind, uint16_t flags, uint64_t data,
                             const void *payload, size_t len)
{
    struct mfi_buf *b = mfi_buf_get(ep, 0);
    if (!b)
        return -FI_ENOMEM;
    struct mfi_hdr *h = (struct mfi_hdr *)b->data;
    memset(h, 0, sizeof(*h));
    h->version = MFI_PROTO_VERSION;
    h->kind = kind;
    h->flags = flags;
    h->data = data;
    h->len = len;
    memcpy(h + 1, payload, len);
    b->len = (uint32_t)(sizeof(*h) + len);
    int rc = mfi_flow_ctrl(ep, c, b); /* waits if the send queue is full */
    if (rc < 0)
        mfi_buf_put(ep, b);
    return rc;
}

int mfi_send_ctrl(struct mfi_ep *ep, struct mfi_conn *c, uint8_t kind,
                  const void *payload, size_t len)
{
    return mfi_send_ctrl_hdr(ep, c, kind, 0, 0, payload, len);
}

int mfi_send_ctrl_data(struct mfi_ep *ep, struct mfi_conn *c, uint8_t kind,
                       uint64_t data, const void *payload, size_t len)
{
    return mfi_send_ctrl_hdr(ep, c, kind, MFI_HDR_CQ_DATA, data, payload, len);
}

ssize_t mfi_send_common(struct mfi_ep *ep, const struct iovec *iov, void **desc,
                        size_t count, fi_addr_t dest, uint64_t tag,
                        uint64_t data, uint64_t flags, void *context,
                        int tagged, int inject)
{
    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    if (count > MFI_IOV_LIMIT)
        return -FI_EINVAL;
    size_t len = 0;
    for (size_t i = 0; i < count; i++)
        len += iov[i].iov_len;
    if (len > MFI_MAX_MSG)
        return -FI_EMSGSIZE;
    int eager = len <= (size_t)mfi_param.eager_size;
    if ((inject || (flags & FI_INJECT)) && !eager)
        return -FI_EMSGSIZE;
    if (ep->tx_inflight >= MFI_TX_SIZE) {
        mfi_ep_progress(ep);
        if (ep->tx_inflight >= MFI_TX_SIZE)
            return -FI_EAGAIN;
    }
    int err = 0;
    struct mfi_peer *p = mfi_conn_peer(ep, dest, &err);
    struct mfi_conn *c = p ? mfi_conn_tx(ep, p, &err) : NULL;
    if (!c)
        return err;

    struct mfi_op *op = NULL;
    if (!inject) {
        if (!(op = mfi_op_get(ep)))
            return -FI_ENOMEM;
        op->type = MFI_OP_SEND;
        op->tagged = (uint8_t)tagged;
        op->context = context;
        op->cq_flags = FI_SEND | kind_flag[tagged];
        op->op_flags = flags;
        op->nocomp = ep->tx_selective && !(flags & FI_COMPLETION);
        op->len = len;
        op->tag = tag;
        op->data = data;
        op->addr = dest;
        op->conn = c;
    }
    struct mfi_buf *b = mfi_buf_get(ep, 0);
    if (!b) {
        if (op)
            mfi_op_put(ep, op);
        return -FI_EAGAIN;
    }
    struct mfi_hdr *h = (struct mfi_hdr *)b->data;
    h->version = MFI_PROTO_VERSION;
    h->flags = (flags & FI_REMOTE_CQ_DATA) ? MFI_HDR_CQ_DATA : 0;
    h->rsvd = 0;
    h->tag = tagged ? tag : 0;
    h->data = data;
    h->len = len;
    size_t wire;
    if (eager) {
        h->kind = tagged ? MFI_PKT_TAGGED : MFI_PKT_MSG;
        mfi_copy_from_iov(h + 1, iov, count, len);
        wire = sizeof(*h) + len;
        b->op = op; /* the SEND's completion completes the request */
        b->counted = inject;
    } else {
        /* Rendezvous: the receiver READs the source buffer in place,
         * through a registration of the request's own, also when the
         * application passed one (desc): the send completes only once
         * libmroce has dropped every use of it (mfi_op_dereg), which a
         * registration shared with the application's other operations
         * cannot tell. */
        void *src = count == 1 ? iov[0].iov_base : NULL;
        uint32_t rkey = 0;
        int rc = 0;
        if (count > 1) {
            if (!(op->copy = malloc(len)))
                rc = -FI_ENOMEM;
            else
                mfi_copy_from_iov(op->copy, iov, count, len);
            src = op->copy;
        }
        if (!rc)
            rc = mfi_op_reg(ep, op, src, len, MROCE_ACCESS_REMOTE_READ, NULL,
                            &rkey);
        if (rc) {
            mfi_buf_put(ep, b);
            mfi_op_put(ep, op);
            return rc;
        }
        h->kind = tagged ? MFI_PKT_RTS_TAGGED : MFI_PKT_RTS_MSG;
        struct mfi_rts *r = (struct mfi_rts *)(h + 1);
        r->addr = (uintptr_t)src;
        r->cookie = op->cookie = ++ep->next_cookie;
        r->rkey = rkey;
        r->rsvd = 0;
        wire = sizeof(*h) + sizeof(*r);
        b->op = NULL; /* the RTS is internal; FIN completes the send */
    }
    int rc = post_buf(ep, c, b, wire);
    if (rc < 0) {
        mfi_buf_put(ep, b);
        if (op)
            mfi_op_put(ep, op);
        /* The connection failed between its set-up and this post (an ICMP
         * error read by another thread, or a slow host): unreachable, as
         * when it fails in mfi_conn_tx(). */
        if (rc == MROCE_ESTATE &&
            mroce_qp_get_state(c->qp) == MROCE_QPS_ERROR) {
            mfi_conn_failed(ep, c);
            return -FI_EHOSTUNREACH;
        }
        return mfi_errno(rc);
    }
    if (!eager) {
        op->next = ep->rndv;
        ep->rndv = op;
    }
    ep->tx_inflight++;
    return 0;
}

/* Source addresses of unexpected messages that arrived before their
 * sender was in the AV are looked up again once the AV changes. */
void mfi_msg_refresh_unexp(struct mfi_ep *ep)
{
    if (!ep->av || ep->unexp_gen == ep->av->gen)
        return;
    ep->unexp_gen = ep->av->gen;
    for (int t = 0; t < 2; t++)
        for (struct mtm_entry *e = ep->unexp[t].head.next;
             e != &ep->unexp[t].head; e = e->next) {
            struct mfi_buf *b =
                (struct mfi_buf *)((char *)e - offsetof(struct mfi_buf, ue));
            if (e->src == FI_ADDR_NOTAVAIL)
                e->src = mfi_conn_src(ep, b->conn);
        }
}

ssize_t mfi_recv_common(struct mfi_ep *ep, const struct iovec *iov, void **desc,
                        size_t count, fi_addr_t src, uint64_t tag,
                        uint64_t ignore, uint64_t flags, void *context,
                        int tagged)
{
    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    if (count > MFI_IOV_LIMIT)
        return -FI_EINVAL;
    if (ep->rx_posted_ops >= MFI_RX_SIZE)
        return -FI_EAGAIN;
    if (!(ep->caps & FI_DIRECTED_RECV))
        src = FI_ADDR_UNSPEC;
    if (!tagged)
        tag = ignore = 0;
    if ((flags & FI_MULTI_RECV) && !tagged)
        return mfi_mrecv_post(ep, iov, count, src, flags, context);
    struct mfi_op *op = mfi_op_get(ep);
    if (!op)
        return -FI_ENOMEM;
    op->type = MFI_OP_RECV;
    op->tagged = (uint8_t)tagged;
    op->context = context;
    op->cq_flags = FI_RECV | kind_flag[tagged];
    op->op_flags = flags;
    op->nocomp = ep->rx_selective && !(flags & FI_COMPLETION);
    for (size_t i = 0; i < count; i++) {
        op->iov[i] = iov[i];
        op->len += iov[i].iov_len;
    }
    op->iov_count = count;
    op->tag = tag;
    op->ignore = ignore;
    op->addr = src;
    ep->rx_posted_ops++;
    mfi_msg_refresh_unexp(ep);
    struct mtm_entry *e = mtm_find_unexp(&ep->unexp[tagged], tag, ignore, src);
    if (e) {
        mtm_remove(&ep->unexp[tagged], e);
        mfi_msg_deliver(ep, op,
                        (struct mfi_buf *)((char *)e -
                                           offsetof(struct mfi_buf, ue)));
        return 0;
    }
    op->me.tag = tag;
    op->me.ignore = ignore;
    op->me.src = src;
    mtm_append(&ep->posted[tagged], &op->me);
    return 0;
}

/* Rendezvous READs in flight per message: with FI_MROCE_RNDV_SEG a long
 * message is read in slices, this many at a time, the next posted as one
 * completes. */
#define MFI_RNDV_INFLIGHT 4

/* Posts the next slices of a rendezvous read (from op->rd_off) until
 * MFI_RNDV_INFLIGHT are in flight or the message is all posted.  The
 * slices go as one chain in one mroce_post_send: one doorbell, so the
 * READ requests leave in one flush and reach the responder in one batch.
 * Posted one by one, each paid its own sendmsg (~1.5 us on loopback, the
 * responder's receive path included) before the next was posted, and the
 * responder, woken by the first, produced the whole first slice before it
 * read the others (a capture showed its responses pause there in nearly
 * every 1 MiB message).  A send queue that is full while some READ is in
 * flight is tried again when that one completes.  Returns 0; 1 when the
 * send queue is full and none of op's READs is in flight (the caller
 * queues op: mfi_flow_rd_wait); or a negative fi error when nothing is in
 * flight and nothing could be posted. */
static int rndv_post(struct mfi_ep *ep, struct mfi_op *op)
{
    size_t seg = mfi_param.rndv_seg ? (size_t)mfi_param.rndv_seg : op->rd_want;
    struct mroce_send_wr wr[MFI_RNDV_INFLIGHT];
    struct mroce_sge sge[MFI_RNDV_INFLIGHT][MFI_IOV_LIMIT];
    size_t len[MFI_RNDV_INFLIGHT];
    int nw = 0;
    for (size_t off = op->rd_off;
         off < op->rd_want && op->rd_pending + (uint32_t)nw < MFI_RNDV_INFLIGHT;
         nw++) {
        size_t left = op->rd_want - off;
        size_t chunk = left < seg ? left : seg, got = 0, pos = 0;
        int ns = 0;
        /* The slice [off, off + chunk) of the receive's iovs. */
        for (size_t i = 0; i < op->iov_count && got < chunk; i++) {
            size_t l = op->iov[i].iov_len, at = off + got;
            if (at >= pos + l) {
                pos += l;
                continue;
            }
            size_t take = l - (at - pos);
            if (take > chunk - got)
                take = chunk - got;
            sge[nw][ns].addr = (uintptr_t)op->iov[i].iov_base + (at - pos);
            sge[nw][ns].length = (uint32_t)take;
            sge[nw][ns].lkey = op->rd_lkey[i];
            ns++;
            got += take;
            pos += l;
        }
        wr[nw] = (struct mroce_send_wr){.wr_id = (uintptr_t)op,
                                        .sg_list = sge[nw],
                                        .num_sge = ns,
                                        .opcode = MROCE_WR_READ,
                                        .send_flags = MROCE_SEND_SIGNALED,
                                        .remote_addr = op->rd_raddr + off,
                                        .rkey = op->rd_rkey,
                                        .stream = op->conn->stream};
        if (nw)
            wr[nw - 1].next = &wr[nw];
        len[nw] = chunk;
        off += chunk;
    }
    if (!nw)
        return 0;
    struct mroce_send_wr *bad = NULL;
    int rc = mroce_post_send(op->conn->qp, wr, &bad);
    /* On failure bad points at the refused WR of the chain (the first one
     * if the call refused it whole); those before it are queued. */
    int posted = rc ? (int)(bad - wr) : nw;
    for (int i = 0; i < posted; i++) {
        ep->wr_outstanding++;
        op->rd_pending++;
        op->rd_off += len[i];
    }
    if (rc) {
        if (rc == MROCE_EFULL)
            return op->rd_pending ? 0 /* again when a READ completes */
                                  : 1 /* again from progress */;
        if (op->rd_pending) {
            op->rd_status = -1; /* fail once those complete */
            return 0;
        }
        return mfi_errno(rc);
    }
    return 0;
}

/* A rendezvous read that could not start: the sender is told, the
 * receive fails with err (a negative fi error). */
static void rndv_abort(struct mfi_ep *ep, struct mfi_op *op, int err)
{
    struct mfi_fin fin = {op->rcookie, 1, 0};
    mfi_send_ctrl(ep, op->conn, MFI_PKT_FIN, &fin, sizeof(fin));
    mfi_op_fail(ep, op, -err, 0, 0, 0, op->src);
}

/* Starts the READ of a matched RTS into op's buffers: one READ, or with
 * FI_MROCE_RNDV_SEG a pipeline of slices (rndv_post); the last READ to
 * complete finishes the receive (mfi_op_wc). */
static void rndv_start(struct mfi_ep *ep, struct mfi_op *op,
                       const struct mfi_rts *r)
{
    size_t want = op->rlen < op->len ? op->rlen : op->len;
    size_t left = want;
    int rc = 0;
    for (size_t i = 0; i < op->iov_count && left; i++) {
        size_t l = op->iov[i].iov_len < left ? op->iov[i].iov_len : left;
        if (!l)
            continue;
        if ((rc = mfi_op_reg(ep, op, op->iov[i].iov_base, l,
                             MROCE_ACCESS_LOCAL_WRITE, &op->rd_lkey[i], NULL)))
            break;
        left -= l;
    }
    if (!rc && want == 0) {
        /* Nothing to read (empty receive buffer): done at once. */
        struct mfi_fin fin = {op->rcookie, 0, 0};
        mfi_send_ctrl(ep, op->conn, MFI_PKT_FIN, &fin, sizeof(fin));
        if (op->rlen > op->len)
            mfi_op_fail(ep, op, FI_ETRUNC, 0, 0, op->rlen, op->src);
        else
            mfi_op_complete(ep, op, 0, op->data, op->tag, op->src);
        return;
    }
    op->rd_pending = 0;
    op->rd_status = 0;
    op->rd_off = 0;
    op->rd_want = want;
    op->rd_raddr = r->addr;
    op->rd_rkey = r->rkey;
    if (!rc) {
        /* Behind the reads already waiting for send-queue room, so that
         * receives are served in the order they matched. */
        rc = ep->rd_wait ? 1 : rndv_post(ep, op);
        if (rc == 1)
            mfi_flow_rd_wait(ep, op);
        if (rc >= 0)
            return;
    }
    rndv_abort(ep, op, rc);
}

int mfi_rndv_resume(struct mfi_ep *ep, struct mfi_op *op)
{
    if (op->conn->dead) {
        mfi_op_fail(ep, op, FI_EIO, 0, 0, 0, op->src);
        return 0;
    }
    int rc = rndv_post(ep, op);
    if (rc < 0)
        rndv_abort(ep, op, rc);
    return rc == 1;
}

/* The decoded header of a buffer that mfi_msg_rx() accepted (so parsing
 * cannot fail now; the buffer has not changed since). */
static void buf_pkt(const struct mfi_buf *b, struct mfi_pkt *p)
{
    if (mfi_proto_parse(b->data, b->len, p) != MFI_PARSE_OK)
        memset(p, 0, sizeof(*p));
}

void mfi_msg_deliver(struct mfi_ep *ep, struct mfi_op *op, struct mfi_buf *b)
{
    struct mfi_pkt p;
    buf_pkt(b, &p);
    fi_addr_t src = b->ue.src;
    if (p.flags & MFI_HDR_CQ_DATA)
        op->cq_flags |= FI_REMOTE_CQ_DATA;
    op->data = p.data;
    op->tag = p.tag;
    op->src = src;
    if (p.kind == MFI_PKT_RTS_MSG || p.kind == MFI_PKT_RTS_TAGGED) {
        op->type = MFI_OP_RNDV_READ;
        op->conn = b->conn;
        op->rcookie = p.rts.cookie;
        op->rlen = p.len;
        mfi_unexp_release(ep, b);
        rndv_start(ep, op, &p.rts);
        return;
    }
    size_t mlen = p.plen;
    mfi_copy_to_iov(op->iov, op->iov_count, p.payload,
                    mlen < op->len ? mlen : op->len);
    mfi_unexp_release(ep, b);
    if (mlen > op->len)
        mfi_op_fail(ep, op, FI_ETRUNC, 0, op->len, mlen - op->len, src);
    else
        mfi_op_complete(ep, op, mlen, op->data, op->tag, src);
}

void mfi_msg_discard(struct mfi_ep *ep, struct mfi_buf *b)
{
    struct mfi_pkt p;
    buf_pkt(b, &p);
    if (p.kind == MFI_PKT_RTS_MSG || p.kind == MFI_PKT_RTS_TAGGED) {
        struct mfi_fin fin = {p.rts.cookie, 0, 0};
        if (b->conn && !b->conn->dead)
            mfi_send_ctrl(ep, b->conn, MFI_PKT_FIN, &fin, sizeof(fin));
    }
    mfi_unexp_release(ep, b);
}

void mfi_msg_peek_info(const struct mfi_buf *b, uint64_t *len, uint64_t *data,
                       uint64_t *tag, int *cq_data)
{
    struct mfi_pkt p;
    buf_pkt(b, &p);
    *len = p.len;
    *data = p.data;
    *tag = p.tag;
    *cq_data = (p.flags & MFI_HDR_CQ_DATA) != 0;
}

static void fin_rx(struct mfi_ep *ep, const struct mfi_fin *f)
{
    for (struct mfi_op **pp = &ep->rndv; *pp; pp = &(*pp)->next) {
        struct mfi_op *op = *pp;
        if (op->cookie != f->cookie)
            continue;
        *pp = op->next;
        if (f->status)
            mfi_op_fail(ep, op, FI_EIO, 0, 0, 0, FI_ADDR_NOTAVAIL);
        else
            mfi_op_complete(ep, op, op->len, 0, op->tag, FI_ADDR_NOTAVAIL);
        return;
    }
}

void mfi_msg_conn_failed(struct mfi_ep *ep, struct mfi_conn *c)
{
    for (struct mfi_op **pp = &ep->rndv; *pp;) {
        struct mfi_op *op = *pp;
        if (op->conn != c) {
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        mfi_op_fail(ep, op, FI_EIO, 0, 0, 0, FI_ADDR_NOTAVAIL);
    }
}

void mfi_msg_rx(struct mfi_ep *ep, struct mfi_buf *b)
{
    struct mfi_pkt p;
    struct mfi_conn *c = b->conn;
    int rc = mfi_proto_parse(b->data, b->len, &p);
    if (rc != MFI_PARSE_OK) {
        MFI_WARN(FI_LOG_EP_DATA,
                 "dropped a malformed message (%u bytes, "
                 "kind %s, error %d)\n",
                 b->len, b->len > 1 ? mfi_pkt_kind_str(b->data[1]) : "-", rc);
        mfi_unexp_release(ep, b);
        return;
    }
    if (c && mfi_conn_layout_check(ep, c, p.version)) {
        mfi_unexp_release(ep, b);
        return;
    }
    if (p.kind == MFI_PKT_HELLO) {
        mfi_conn_hello(ep, c, p.payload, p.plen);
        mfi_unexp_release(ep, b);
        return;
    }
    if (c && c->dq) {
        /* A shared QP: the sender is the peer device's endpoint the
         * header names; handle it through our view towards it. */
        struct mfi_conn *v = mfi_shared_rx_view(ep, c, p.src_idx);
        if (!v) {
            MFI_WARN(FI_LOG_EP_DATA,
                     "dropped a message from an unknown endpoint (%u)\n",
                     p.src_idx);
            mfi_unexp_release(ep, b);
            return;
        }
        b->conn = c = v;
    }
    switch (p.kind) {
    case MFI_PKT_FIN:
        fin_rx(ep, &p.fin);
        mfi_unexp_release(ep, b);
        return;
    case MFI_PKT_ATOMIC:
    case MFI_PKT_ATOMIC_RESP:
        mfi_atomic_rx(ep, b, &p);
        return;
    case MFI_PKT_RMA_EVENT:
        mfi_rmaev_rx(ep, b, &p);
        return;
    default:
        break; /* MSG, TAGGED, RTS_MSG, RTS_TAGGED */
    }
    int t = p.kind == MFI_PKT_TAGGED || p.kind == MFI_PKT_RTS_TAGGED;
    fi_addr_t src = mfi_conn_src(ep, c);
    b->ue.src = src;
    b->ue.tag = p.tag;
    b->ue.ignore = 0;
    struct mtm_entry *e = mtm_find_posted(&ep->posted[t], p.tag, src);
    if (e) {
        struct mfi_op *op = (struct mfi_op *)((char *)e -
                                              offsetof(struct mfi_op, me));
        if (op->mr_parent) { /* stays posted while it has room */
            mfi_mrecv_deliver(ep, op, b);
            return;
        }
        mtm_remove(&ep->posted[t], e);
        mfi_msg_deliver(ep, op, b);
        return;
    }
    /* Unexpected: the buffer waits with the message and the QP gets
     * another one; past the bound a copy of the message waits instead
     * and the buffer goes straight back (mroce_flow.c); past the copies'
     * bound the QP runs down: RNR. */
    if (ep->unexp_held >= (uint32_t)mfi_param.unexp_max) {
        struct mfi_buf *cb = mfi_flow_copy(ep, b);
        if (cb) {
            mtm_append(&ep->unexp[t], &cb->ue);
            if (mfi_buf_post_rx(ep, c, b) != 0)
                mfi_rxc(c)->rx_owed++;
            return;
        }
    }
    b->held = MFI_HELD_BUF;
    ep->unexp_held++;
    mtm_append(&ep->unexp[t], &b->ue);
    if (ep->unexp_held <= (uint32_t)mfi_param.unexp_max) {
        struct mfi_buf *nb = mfi_buf_get(ep, 1);
        if (nb && mfi_buf_post_rx(ep, c, nb) == 0)
            return;
    }
    mfi_rxc(c)->rx_owed++;
    if (!ep->unexp_warned) {
        ep->unexp_warned = 1;
        MFI_WARN(FI_LOG_EP_DATA,
                 "%u unexpected messages buffered (FI_MROCE_UNEXP_MAX=%d, "
                 "%zu bytes copied, FI_MROCE_UNEXP_COPY_MAX=%d): receive "
                 "buffers are no longer reposted; senders see RNR "
                 "back-pressure until receives are posted\n",
                 ep->unexp_held, mfi_param.unexp_max, ep->copy_bytes,
                 mfi_param.unexp_copy_max);
    }
}

static int cancel_pred(const struct mtm_entry *e, void *arg)
{
    const struct mfi_op *op =
        (const struct mfi_op *)((const char *)e - offsetof(struct mfi_op, me));
    return op->context == arg;
}

ssize_t mfi_msg_cancel(struct mfi_ep *ep, void *context)
{
    for (int t = 0; t < 2; t++) {
        struct mtm_entry *e = mtm_find_if(&ep->posted[t], cancel_pred, context);
        if (!e)
            continue;
        mtm_remove(&ep->posted[t], e);
        struct mfi_op *op = (struct mfi_op *)((char *)e -
                                              offsetof(struct mfi_op, me));
        mfi_op_fail(ep, op, FI_ECANCELED, 0, 0, 0, FI_ADDR_NOTAVAIL);
        return 0;
    }
    return -FI_ENOENT;
}

void mfi_op_wc(struct mfi_ep *ep, struct mfi_op *op, const struct mroce_wc *wc)
{
    int ok = wc->status == MROCE_WC_SUCCESS;
    switch (op->type) {
    case MFI_OP_RNDV_READ: {
        if (!ok && !op->rd_status)
            op->rd_status = (int)wc->status;
        if (op->rd_pending)
            op->rd_pending--;
        if (!op->rd_status && op->rd_off < op->rd_want) {
            int rc = rndv_post(ep, op);
            if (rc == 1) {
                mfi_flow_rd_wait(ep, op); /* none in flight: progress
                                             posts the rest */
                return;
            }
            if (rc < 0)
                op->rd_status = -1;
        }
        if (op->rd_pending)
            return; /* more READs of this message in flight */
        ok = !op->rd_status;
        struct mfi_fin fin = {op->rcookie, ok ? 0 : 1, 0};
        if (op->conn && !op->conn->dead)
            mfi_send_ctrl(ep, op->conn, MFI_PKT_FIN, &fin, sizeof(fin));
        if (!ok)
            mfi_op_fail(ep, op, FI_EIO, op->rd_status > 0 ? op->rd_status : 0,
                        0, 0, op->src);
        else if (op->rlen > op->len)
            mfi_op_fail(ep, op, FI_ETRUNC, 0, op->len, op->rlen - op->len,
                        op->src);
        else
            mfi_op_complete(ep, op, op->rlen, op->data, op->tag, op->src);
        return;
    }
    case MFI_OP_SEND:
    case MFI_OP_READ:
    case MFI_OP_WRITE:
    default:
        if (ok && (op->rma_ev || op->rma_cqdata))
            mfi_rmaev_send(ep, op); /* before op may be freed */
        if (ok)
            mfi_op_complete(ep, op, op->type == MFI_OP_SEND ? 0 : op->len, 0, 0,
                            FI_ADDR_NOTAVAIL);
        else
            /* The libmroce status (fi_cq_strerror names it) says why:
             * e.g. retries exhausted, or flushed after the QP failed. */
            mfi_op_fail(ep, op, FI_EIO, wc->status, 0, 0, FI_ADDR_NOTAVAIL);
        return;
    }
}

/* --- FI_MSG entry points --- */

#define EP(fep) ((struct mfi_ep *)(fep))

static ssize_t msg_recv(struct fid_ep *fep, void *buf, size_t len, void *desc,
                        fi_addr_t src, void *context)
{
    struct iovec iov = {buf, len};
    mfi_lock(EP(fep)->dom);
    ssize_t rc = mfi_recv_common(EP(fep), &iov, &desc, 1, src, 0, 0,
                                 EP(fep)->rx_op_flags, context, 0);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t msg_recvv(struct fid_ep *fep, const struct iovec *iov,
                         void **desc, size_t count, fi_addr_t src,
                         void *context)
{
    mfi_lock(EP(fep)->dom);
    ssize_t rc = mfi_recv_common(EP(fep), iov, desc, count, src, 0, 0,
                                 EP(fep)->rx_op_flags, context, 0);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t msg_recvmsg(struct fid_ep *fep, const struct fi_msg *msg,
                           uint64_t flags)
{
    mfi_lock(EP(fep)->dom);
    ssize_t rc = mfi_recv_common(EP(fep), msg->msg_iov, msg->desc,
                                 msg->iov_count, msg->addr, 0, 0, flags,
                                 msg->context, 0);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t send_one(struct fid_ep *fep, const void *buf, size_t len,
                        void *desc, uint64_t data, fi_addr_t dest,
                        uint64_t flags, void *context, int inject)
{
    struct iovec iov = {(void *)buf, len};
    mfi_lock(EP(fep)->dom);
    ssize_t rc = mfi_send_common(EP(fep), &iov, &desc, 1, dest, 0, data, flags,
                                 context, 0, inject);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t msg_send(struct fid_ep *fep, const void *buf, size_t len,
                        void *desc, fi_addr_t dest, void *context)
{
    return send_one(fep, buf, len, desc, 0, dest, EP(fep)->tx_op_flags, context,
                    0);
}

static ssize_t msg_sendv(struct fid_ep *fep, const struct iovec *iov,
                         void **desc, size_t count, fi_addr_t dest,
                         void *context)
{
    mfi_lock(EP(fep)->dom);
    ssize_t rc = mfi_send_common(EP(fep), iov, desc, count, dest, 0, 0,
                                 EP(fep)->tx_op_flags, context, 0, 0);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t msg_sendmsg(struct fid_ep *fep, const struct fi_msg *msg,
                           uint64_t flags)
{
    mfi_lock(EP(fep)->dom);
    ssize_t rc = mfi_send_common(EP(fep), msg->msg_iov, msg->desc,
                                 msg->iov_count, msg->addr, 0, msg->data, flags,
                                 msg->context, 0, 0);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t msg_inject(struct fid_ep *fep, const void *buf, size_t len,
                          fi_addr_t dest)
{
    return send_one(fep, buf, len, NULL, 0, dest, 0, NULL, 1);
}

static ssize_t msg_senddata(struct fid_ep *fep, const void *buf, size_t len,
                            void *desc, uint64_t data, fi_addr_t dest,
                            void *context)
{
    return send_one(fep, buf, len, desc, data, dest,
                    EP(fep)->tx_op_flags | FI_REMOTE_CQ_DATA, context, 0);
}

static ssize_t msg_injectdata(struct fid_ep *fep, const void *buf, size_t len,
                              uint64_t data, fi_addr_t dest)
{
    return send_one(fep, buf, len, NULL, data, dest, FI_REMOTE_CQ_DATA, NULL,
                    1);
}

struct fi_ops_msg mfi_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = msg_recv,
    .recvv = msg_recvv,
    .recvmsg = msg_recvmsg,
    .send = msg_send,
    .sendv = msg_sendv,
    .sendmsg = msg_sendmsg,
    .inject = msg_inject,
    .senddata = msg_senddata,
    .injectdata = msg_injectdata,
};
