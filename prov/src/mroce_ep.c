/*
 * mroce_ep.c - the RDM endpoint: binding to an AV and CQs, enabling
 * (which starts the listening QPs), the name, cancel, close; the bounce
 * buffer pool; and progress, which turns libmroce completions into
 * protocol steps (mroce_msg.c, mroce_rma.c) and CQ entries.
 *
 * A libmroce work request's wr_id points at either a bounce buffer or a
 * request (struct mfi_op); both start with a kind byte, so one shared CQ
 * serves every QP of the device.
 *
 * Bounce buffers (header + eager size each) come in registered slabs of
 * MFI_BUF_SLAB.  Each QP keeps rx_depth of them posted.  A buffer that
 * receives an unexpected message stays with the message (no copy) and the
 * QP gets a fresh one, until unexp_max buffers hold unexpected messages;
 * then copies of the messages wait instead (mroce_flow.c), and once those
 * reach their byte bound too the QP is owed a buffer instead, its posted
 * receives run down, and the sender meets RNR NAKs (back-pressure) until
 * receives consume the backlog.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mroce_fi.h"

/* --- requests --- */

struct mfi_op *mfi_op_get(struct mfi_ep *ep)
{
    struct mfi_op *op = ep->op_free, *all;
    if (op) {
        ep->op_free = op->next;
        all = op->all_next;
    } else {
        if (!(op = malloc(sizeof(*op))))
            return NULL;
        all = ep->all_ops;
        ep->all_ops = op;
    }
    memset(op, 0, sizeof(*op));
    op->all_next = all;
    op->kind = MFI_WR_OP;
    op->ep = ep;
    return op;
}

/* Called for requests that libmroce never saw (refused at post time) and
 * for finished ones whose registrations are released, so nothing here is
 * still busy. */
void mfi_op_put(struct mfi_ep *ep, struct mfi_op *op)
{
    if (!mfi_op_dereg(op))
        MFI_WARN(FI_LOG_EP_DATA, "request freed with a busy registration\n");
    free(op->copy);
    op->copy = NULL;
    op->next = ep->op_free;
    ep->op_free = op;
}

int mfi_op_reg(struct mfi_ep *ep, struct mfi_op *op, void *addr, size_t len,
               unsigned access, uint32_t *lkey, uint32_t *rkey)
{
    if (op->nmr == MFI_IOV_LIMIT)
        return -FI_EINVAL;
    mroce_mr *mr;
    int rc = mroce_reg_mr(ep->pd, addr, len ? len : 1, access, &mr);
    if (rc == MROCE_EACCESS)
        return -FI_EACCES; /* a buffer to be written is read-only */
    if (rc < 0)
        return mfi_errno(rc);
    op->mr[op->nmr++] = mr;
    if (lkey)
        *lkey = mroce_mr_lkey(mr);
    if (rkey)
        *rkey = mroce_mr_rkey(mr);
    return 0;
}

/* MROCE_EBUSY: a work request or a READ responder's job still uses the
 * region (a job holds it until the requester has acknowledged every
 * response packet, and resends from it until then); it stays in op->mr to
 * be tried again. */
int mfi_op_dereg(struct mfi_op *op)
{
    int busy = 0;
    for (int i = 0; i < op->nmr; i++) {
        int rc = mroce_dereg_mr(op->mr[i]);
        if (rc == MROCE_EBUSY)
            op->mr[busy++] = op->mr[i];
        else if (rc < 0)
            MFI_WARN(FI_LOG_EP_DATA, "deregistration failed: %d\n", rc);
    }
    op->nmr = busy;
    return busy == 0;
}

static struct mfi_cq *op_cq(struct mfi_ep *ep, struct mfi_op *op)
{
    return op->type == MFI_OP_RECV || op->type == MFI_OP_RNDV_READ ? ep->rx_cq
                                                                   : ep->tx_cq;
}

static int is_tx(const struct mfi_op *op)
{
    return op->type == MFI_OP_SEND || op->type == MFI_OP_READ ||
           op->type == MFI_OP_WRITE || op->type == MFI_OP_ATOMIC;
}

/* The counter slot a request of op's type counts in (-1: none). */
static int op_cntr_slot(const struct mfi_op *op)
{
    switch (op->type) {
    case MFI_OP_SEND:
        return MFI_CNTR_SEND;
    case MFI_OP_RECV:
    case MFI_OP_RNDV_READ:
        return MFI_CNTR_RECV;
    case MFI_OP_READ:
        return MFI_CNTR_READ;
    case MFI_OP_WRITE:
        return MFI_CNTR_WRITE;
    case MFI_OP_ATOMIC: /* fi_atomic counts as a write, fetching ones as reads */
        return op->cq_flags & FI_READ ? MFI_CNTR_READ : MFI_CNTR_WRITE;
    default:
        return -1;
    }
}

/* The completion of a finished request whose buffers libmroce has
 * released (a buffer is never touched after its completion), then the
 * request is freed.  Counters count it whether or not a CQ entry is
 * written.  A part of a multi-receive buffer reports where its data lies
 * (and FI_MULTI_RECV when it is the buffer's last); a cancelled buffer
 * with parts still in flight stays until they are reported
 * (mroce_mrecv.c). */
static void op_report(struct mfi_ep *ep, struct mfi_op *op)
{
    struct mfi_op *parent = op->mrecv;
    int keep = op->mr_parent && !mfi_mrecv_parent_done(op);
    void *buf = NULL;
    if (parent) {
        mfi_mrecv_child_flags(op);
        buf = op->iov[0].iov_base;
    }
    struct mfi_cq *cq = op_cq(ep, op);
    const struct mfi_done *d = &op->done;
    if (cq && d->err)
        mfi_cq_write_err(cq, op->context, op->cq_flags, d->len, buf, d->data,
                         d->tag, d->olen, d->err, d->prov, d->src);
    else if (cq && !op->nocomp)
        mfi_cq_write(cq, op->context, op->cq_flags, d->len, buf, d->data,
                     d->tag, d->src);
    int slot = op_cntr_slot(op);
    if (slot >= 0)
        mfi_cntr_report(ep->cntr[slot], d->err != 0);
    if (keep)
        return;
    if (is_tx(op))
        ep->tx_inflight--;
    else
        ep->rx_posted_ops--;
    mfi_op_put(ep, op);
    if (parent)
        mfi_mrecv_reported(ep, parent);
}

/* A request can finish before libmroce is done with its buffers: a
 * rendezvous send finishes when its FIN arrives, but the READ responses
 * that carried its data may still await their ACKs, and libmroce resends
 * them from the buffer until then.  Such a request waits on
 * ep->releasing, still counted in flight, until its registrations can be
 * dropped; the others complete at once. */
static void op_finish(struct mfi_ep *ep, struct mfi_op *op)
{
    if (mfi_op_dereg(op)) {
        op_report(ep, op);
        return;
    }
    op->next = ep->releasing;
    ep->releasing = op;
}

/* Progress: completes the requests whose buffers libmroce has released
 * since. */
static void release_retry(struct mfi_ep *ep)
{
    for (struct mfi_op **pp = &ep->releasing; *pp;) {
        struct mfi_op *op = *pp;
        if (!mfi_op_dereg(op)) {
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        op_report(ep, op);
    }
}

void mfi_op_complete(struct mfi_ep *ep, struct mfi_op *op, size_t len,
                     uint64_t data, uint64_t tag, fi_addr_t src)
{
    op->done.len = len;
    op->done.olen = 0;
    op->done.data = data;
    op->done.tag = tag;
    op->done.src = src;
    op->done.err = op->done.prov = 0;
    op_finish(ep, op);
}

void mfi_op_fail(struct mfi_ep *ep, struct mfi_op *op, int err, int prov,
                 size_t len, size_t olen, fi_addr_t src)
{
    op->done.len = len;
    op->done.olen = olen;
    op->done.data = op->data;
    op->done.tag = op->tag;
    op->done.src = src;
    op->done.err = err ? err : FI_EIO;
    op->done.prov = prov;
    op_finish(ep, op);
}

int mfi_errno(int e)
{
    switch (e) {
    case MROCE_EFULL:
        return -FI_EAGAIN;
    case MROCE_ENOMEM:
        return -FI_ENOMEM;
    case MROCE_ESTATE:
        return -FI_EOPBADSTATE;
    case MROCE_EINVAL:
    case MROCE_EACCESS:
    case MROCE_ERANGE:
        return -FI_EINVAL;
    case MROCE_EFAULT:
        return -FI_EFAULT;
    case MROCE_EUNREACH:
        return -FI_EHOSTUNREACH;
    case MROCE_ETIMEDOUT:
        return -FI_ETIMEDOUT;
    default:
        return -FI_EIO;
    }
}

size_t mfi_copy_to_iov(const struct iovec *iov, size_t n, const void *src,
                       size_t len)
{
    size_t done = 0;
    for (size_t i = 0; i < n && done < len; i++) {
        size_t c = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;
        memcpy(iov[i].iov_base, (const char *)src + done, c);
        done += c;
    }
    return done;
}

size_t mfi_copy_from_iov(void *dst, const struct iovec *iov, size_t n,
                         size_t len)
{
    size_t done = 0;
    for (size_t i = 0; i < n && done < len; i++) {
        size_t c = iov[i].iov_len < len - done ? iov[i].iov_len : len - done;
        memcpy((char *)dst + done, iov[i].iov_base, c);
        done += c;
    }
    return done;
}

/* --- bounce buffers --- */

static int grow_pool(struct mfi_ep *ep)
{
    if (ep->nslabs == ep->slab_cap) {
        size_t cap = ep->slab_cap ? ep->slab_cap * 2 : 16;
        struct mfi_slab *s = realloc(ep->slabs, cap * sizeof(*s));
        if (!s)
            return -FI_ENOMEM;
        ep->slabs = s;
        ep->slab_cap = cap;
    }
    struct mfi_slab *s = &ep->slabs[ep->nslabs];
    s->data = aligned_alloc(64, MFI_BUF_SLAB * ep->buf_size);
    s->meta = calloc(MFI_BUF_SLAB, sizeof(*s->meta));
    if (!s->data || !s->meta ||
        mroce_reg_mr(ep->pd, s->data, MFI_BUF_SLAB * ep->buf_size,
                     MROCE_ACCESS_LOCAL_WRITE, &s->mr) < 0) {
        free(s->data);
        free(s->meta);
        return -FI_ENOMEM;
    }
    ep->nslabs++;
    uint32_t lkey = mroce_mr_lkey(s->mr);
    for (int i = 0; i < MFI_BUF_SLAB; i++) {
        struct mfi_buf *b = &s->meta[i];
        b->data = s->data + (size_t)i * ep->buf_size;
        b->lkey = lkey;
        b->next = ep->rx_free;
        ep->rx_free = b;
    }
    return 0;
}

struct mfi_buf *mfi_buf_get(struct mfi_ep *ep, int rx)
{
    if (!ep->rx_free && grow_pool(ep))
        return NULL;
    struct mfi_buf *b = ep->rx_free;
    ep->rx_free = b->next;
    b->next = NULL;
    b->kind = rx ? MFI_WR_RXBUF : MFI_WR_TXBUF;
    b->held = b->counted = 0;
    b->ep = ep;
    b->epgen = ep->gen;
    b->sidx = UINT16_MAX;
    b->conn = NULL;
    b->op = NULL;
    b->len = 0;
    return b;
}

void mfi_buf_put(struct mfi_ep *ep, struct mfi_buf *b)
{
    b->next = ep->rx_free;
    ep->rx_free = b;
}

int mfi_buf_post_rx(struct mfi_ep *ep, struct mfi_conn *c, struct mfi_buf *b)
{
    c = mfi_rxc(c);
    return mfi_buf_post_rx_on(ep, c, b,
                              c->dq ? (uint16_t)(1 + ep->idx) : (uint16_t)0);
}

int mfi_buf_post_rx_on(struct mfi_ep *ep, struct mfi_conn *c, struct mfi_buf *b,
                       uint16_t stream)
{
    c = mfi_rxc(c); /* a view's buffers are its receive side's */
    b->kind = MFI_WR_RXBUF;
    b->conn = c;
    b->held = 0;
    b->ep = ep;
    b->epgen = ep->gen;
    b->sidx = c->dq ? (uint16_t)ep->idx : UINT16_MAX;
    struct mroce_sge sge = {(uintptr_t)b->data, (uint32_t)ep->buf_size,
                            b->lkey};
    struct mroce_recv_wr wr = {.wr_id = (uintptr_t)b,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .stream = stream};
    int rc = mroce_post_recv(c->qp, &wr, NULL);
    if (rc < 0) {
        mfi_buf_put(ep, b);
        return rc;
    }
    c->rx_posted++;
    return 0;
}

void mfi_unexp_release(struct mfi_ep *ep, struct mfi_buf *b)
{
    if (b->held == MFI_HELD_COPY) {
        mfi_flow_copy_free(ep, b); /* its buffer went back on arrival */
        return;
    }
    if (b->held) {
        b->held = 0;
        ep->unexp_held--;
        /* Back-pressure ends: the first QP owed a buffer gets this one. */
        for (struct mfi_conn *c = ep->conns; c; c = c->next)
            if (c->rx_owed && !c->dead) {
                c->rx_owed--;
                mfi_buf_post_rx(ep, c, b);
                return;
            }
        mfi_buf_put(ep, b);
        return;
    }
    /* Delivered straight from the QP: repost it there. */
    struct mfi_conn *c = b->conn;
    if (c && !c->dead)
        mfi_buf_post_rx(ep, c, b);
    else
        mfi_buf_put(ep, b);
}

/* --- progress --- */

void mfi_ep_handle_wc(struct mfi_ep *ep, const struct mroce_wc *wc)
{
    uint8_t kind = *(const uint8_t *)(uintptr_t)wc->wr_id;
    /* Shared QPs: mfi_shared_poll has failed the QP for every endpoint. */
    if (wc->status != MROCE_WC_SUCCESS && !ep->dom->shared) {
        struct mfi_conn *c = mfi_conn_by_qpn(ep, wc->qp_num);
        if (c && !c->dead) {
            if (wc->status != MROCE_WC_WR_FLUSH_ERR)
                MFI_WARN(FI_LOG_EP_DATA, "QP 0x%x failed: %s\n", wc->qp_num,
                         mroce_wc_status_str(wc->status));
            mfi_conn_failed(ep, c);
        }
    }
    if (kind == MFI_WR_RXBUF) {
        struct mfi_buf *b = (struct mfi_buf *)(uintptr_t)wc->wr_id;
        if (b->conn)
            b->conn->rx_posted--;
        if (wc->status != MROCE_WC_SUCCESS) {
            mfi_buf_put(ep, b);
            return;
        }
        if (b->conn &&
            (b->conn->listening || (b->conn->dq && b->conn->dq->listening)))
            mfi_conn_listen(ep); /* an accepted QP: replace the listener */
        if (wc->opcode == MROCE_WC_RECV_WITH_IMM) {
            mfi_rma_rx_imm(ep, b, wc);
            return;
        }
        b->len = wc->byte_len;
        mfi_msg_rx(ep, b);
    } else if (kind == MFI_WR_TXBUF) {
        struct mfi_buf *b = (struct mfi_buf *)(uintptr_t)wc->wr_id;
        ep->wr_outstanding--;
        struct mfi_op *op = b->op;
        if (b->counted) {
            ep->tx_inflight--;
            if (!op) /* an fi_inject: counted, never in a CQ */
                mfi_cntr_report(ep->cntr[MFI_CNTR_SEND],
                                wc->status != MROCE_WC_SUCCESS);
        }
        mfi_buf_put(ep, b);
        if (op)
            mfi_op_wc(ep, op, wc);
    } else {
        ep->wr_outstanding--;
        mfi_op_wc(ep, (struct mfi_op *)(uintptr_t)wc->wr_id, wc);
    }
}

void mfi_ep_progress(struct mfi_ep *ep)
{
    if (ep->dom->shared) {
        mfi_shared_poll(ep->dom); /* every endpoint's completions */
    } else {
        struct mroce_wc wc[32];
        for (int round = 0; round < 4; round++) {
            int n = mroce_poll_cq(ep->cq, 32, wc);
            if (n <= 0)
                break;
            for (int i = 0; i < n; i++)
                mfi_ep_handle_wc(ep, &wc[i]);
            if (n < 32)
                break;
        }
    }
    mfi_ep_after_poll(ep);
}

void mfi_ep_after_poll(struct mfi_ep *ep)
{
    if (ep->releasing)
        release_retry(ep);
    if (ep->ctrl_wait || ep->rd_wait)
        mfi_flow_retry(ep); /* completions made send-queue room */
    if (ep->amo_resend)
        mfi_atomic_progress(ep);
    /* Accepted QPs also show up through their first receive; this catches
     * ones whose HELLO has not arrived yet. */
    if ((++ep->progress_calls & 255) == 0)
        mfi_conn_listen(ep);
}

/* --- fabric object --- */

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    struct mfi_ep *ep = (struct mfi_ep *)fid;
    int rc = 0;
    mfi_lock(ep->dom);
    switch (bfid->fclass) {
    case FI_CLASS_AV:
        if (ep->av)
            rc = -FI_EINVAL;
        else
            ep->av = (struct mfi_av *)bfid;
        break;
    case FI_CLASS_CQ: {
        struct mfi_cq *cq = (struct mfi_cq *)bfid;
        if (cq->dom != ep->dom) {
            rc = -FI_EINVAL;
            break;
        }
        if (flags & FI_TRANSMIT) {
            ep->tx_cq = cq;
            cq->users++;
            ep->tx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
        }
        if (flags & FI_RECV) {
            ep->rx_cq = cq;
            cq->users++;
            ep->rx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
        }
        break;
    }
    case FI_CLASS_EQ:
        break; /* no events to report: nothing to keep */
    case FI_CLASS_CNTR: {
        struct mfi_cntr *cn = (struct mfi_cntr *)bfid;
        static const uint64_t slot_flag[MFI_CNTR_N] = {
            FI_SEND,  FI_RECV,        FI_READ,
            FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE};
        if (cn->dom != ep->dom ||
            (flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
                       FI_REMOTE_WRITE))) {
            rc = -FI_EINVAL;
            break;
        }
        /* Remote accesses are counted from the initiators' notices,
         * which come only to endpoints that asked for FI_RMA_EVENT
         * (mroce_rma_event.c). */
        if ((flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) && !ep->rma_event) {
            MFI_WARN(FI_LOG_EP_CTRL, "remote-access counters need "
                                     "FI_RMA_EVENT in the endpoint's caps\n");
            rc = -FI_ENOSYS;
            break;
        }
        for (int i = 0; i < MFI_CNTR_N; i++)
            if (flags & slot_flag[i]) {
                if (ep->cntr[i])
                    ep->cntr[i]->users--;
                ep->cntr[i] = cn;
                cn->users++;
            }
        break;
    }
    default:
        rc = -FI_ENOSYS;
    }
    mfi_unlock(ep->dom);
    return rc;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
    struct mfi_ep *ep = (struct mfi_ep *)fid;
    if (command != FI_ENABLE)
        return -FI_ENOSYS;
    if (!ep->av || (!ep->tx_cq && !ep->rx_cq))
        return -FI_ENOAV;
    mfi_lock(ep->dom);
    int rc = 0;
    if (ep->enabled) {
    } else if (ep->dom->shared) {
        ep->enabled = 1; /* the QPs it creates take its buffers too */
        if ((rc = mfi_shared_ep_enable(ep)) != 0)
            ep->enabled = 0;
    } else if ((rc = mfi_conn_listen(ep)) == 0) {
        ep->enabled = 1;
    }
    mfi_unlock(ep->dom);
    return rc;
}

/* Close: give what was sent a chance to arrive (a message posted just
 * before closing must not vanish when its QP is destroyed), then linger
 * until the peers have been quiet for MFI_LINGER_NS: a peer whose last
 * ACK from us was lost retransmits, and a destroyed QP would never answer
 * (its send would fail with "retry exceeded" after ~0.6 s).  MetaRoCE's
 * DISCONNECT does not help here: it flushes the peer's outstanding work.
 * Then tear everything down. */
#define MFI_LINGER_NS 50000000ull

static void ep_drain(struct mfi_ep *ep)
{
    uint64_t t0 = mfi_now_ns(),
             limit = (uint64_t)mfi_param.conn_timeout * 1000000ull;
    while (
        (ep->wr_outstanding || ep->releasing || ep->ctrl_wait || ep->rd_wait) &&
        mfi_now_ns() - t0 < limit)
        mfi_ep_progress(ep);
    /* Shared QPs stay for the domain's other endpoints: nothing to
     * linger for. */
    if (ep->dom->shared && ep->dom->nep > 1)
        return;
    struct mroce_udp_counters uc;
    mroce_device_get_udp_counters(ep->dev, &uc);
    uint64_t rx = uc.rx_pkts, quiet = mfi_now_ns();
    struct timespec nap = {0, 100000};
    while (mfi_now_ns() - quiet < MFI_LINGER_NS && mfi_now_ns() - t0 < limit) {
        mfi_ep_progress(ep);
        mroce_device_progress(ep->dev); /* send deferred ACKs now */
        mroce_device_get_udp_counters(ep->dev, &uc);
        if (uc.rx_pkts != rx) {
            rx = uc.rx_pkts;
            quiet = mfi_now_ns();
        }
        nanosleep(&nap, NULL);
    }
}

static int ep_close(struct fid *fid)
{
    struct mfi_ep *ep = (struct mfi_ep *)fid;
    struct mfi_domain *d = ep->dom;
    mfi_lock(d);
    if (ep->enabled)
        ep_drain(ep);
    if (d->shared)
        mfi_shared_ep_close(ep);
    mfi_conn_close_all(ep);
    mfi_flow_close(ep);
    mfi_atomic_close(ep);
    if (ep->tx_cq)
        ep->tx_cq->users--;
    if (ep->rx_cq)
        ep->rx_cq->users--;
    for (int i = 0; i < MFI_CNTR_N; i++)
        if (ep->cntr[i])
            ep->cntr[i]->users--;
    for (struct mfi_ep **pp = &d->eps; *pp; pp = &(*pp)->dom_next)
        if (*pp == ep) {
            *pp = ep->dom_next;
            break;
        }
    if (d->dev_ep == ep)
        d->dev_ep = NULL;
    d->nep--;
    d->refs--;
    if (d->shared && d->nep > 0 && ep->wr_outstanding) {
        /* Its requests are still on QPs that stay: their completions
         * must find it (and are dropped) until the domain closes. */
        MFI_WARN(FI_LOG_EP_CTRL,
                 "endpoint closed with %u sends in "
                 "flight: kept until its domain closes\n",
                 ep->wr_outstanding);
        ep->closed = 1;
        ep->dom_next = d->zombies;
        d->zombies = ep;
        mfi_unlock(d);
        return 0;
    }
    mfi_unlock(d);
    mfi_ep_free(ep);
    return 0;
}

void mfi_ep_free(struct mfi_ep *ep)
{
    /* Requests still posted or in flight die with their QPs, which have
     * released their registrations. */
    while (ep->all_ops) {
        struct mfi_op *op = ep->all_ops;
        ep->all_ops = op->all_next;
        if (!mfi_op_dereg(op))
            MFI_WARN(FI_LOG_EP_CTRL, "a registration is still busy at close\n");
        free(op->copy);
        free(op);
    }
    for (size_t i = 0; i < ep->nslabs; i++) {
        mroce_dereg_mr(ep->slabs[i].mr);
        free(ep->slabs[i].data);
        free(ep->slabs[i].meta);
    }
    free(ep->slabs);
    free(ep->by_fiaddr);
    if (ep->own_dev)
        mroce_device_close(ep->dev); /* its PD, CQ and what is left */
    free(ep);
}

static struct fi_ops ep_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = ep_close,
    .bind = ep_bind,
    .control = ep_control,
    .ops_open = mfi_no_ops_open,
    .tostr = mfi_no_tostr,
    .ops_set = mfi_no_ops_set,
};

static ssize_t ep_cancel(fid_t fid, void *context)
{
    struct mfi_ep *ep = (struct mfi_ep *)fid;
    mfi_lock(ep->dom);
    ssize_t rc = mfi_msg_cancel(ep, context);
    mfi_unlock(ep->dom);
    return rc;
}

/* Options: FI_OPT_MIN_MULTI_RECV (the room below which a multi-receive
 * buffer is released). */
static int ep_getopt(fid_t fid, int level, int optname, void *optval,
                     size_t *optlen)
{
    struct mfi_ep *ep = (struct mfi_ep *)fid;
    if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
        return -FI_ENOPROTOOPT;
    if (!optval || !optlen || *optlen < sizeof(size_t))
        return -FI_ETOOSMALL;
    mfi_lock(ep->dom);
    *(size_t *)optval = ep->min_multi_recv;
    mfi_unlock(ep->dom);
    *optlen = sizeof(size_t);
    return 0;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval,
                     size_t optlen)
{
    struct mfi_ep *ep = (struct mfi_ep *)fid;
    if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
        return -FI_ENOPROTOOPT;
    if (!optval || optlen != sizeof(size_t))
        return -FI_EINVAL;
    mfi_lock(ep->dom);
    ep->min_multi_recv = *(const size_t *)optval;
    mfi_unlock(ep->dom);
    return 0;
}

static ssize_t ep_rx_size_left(struct fid_ep *fep)
{
    struct mfi_ep *ep = (struct mfi_ep *)fep;
    return MFI_RX_SIZE > ep->rx_posted_ops ? MFI_RX_SIZE - ep->rx_posted_ops
                                           : 0;
}

static ssize_t ep_tx_size_left(struct fid_ep *fep)
{
    struct mfi_ep *ep = (struct mfi_ep *)fep;
    return MFI_TX_SIZE > ep->tx_inflight ? MFI_TX_SIZE - ep->tx_inflight : 0;
}

/* No transmit or receive contexts of their own (tx_ctx_cnt 1). */
static int ep_no_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
                        struct fid_ep **tx_ep, void *context)
{
    return -FI_ENOSYS;
}

static int ep_no_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
                        struct fid_ep **rx_ep, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops_ep ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = ep_no_tx_ctx,
    .rx_ctx = ep_no_rx_ctx,
    .rx_size_left = ep_rx_size_left,
    .tx_size_left = ep_tx_size_left,
};

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
    struct mfi_ep *ep = (struct mfi_ep *)fid;
    size_t n = ep->addrlen;
    if (*addrlen < n) {
        *addrlen = n;
        return -FI_ETOOSMALL;
    }
    memcpy(addr, &ep->addr, n);
    *addrlen = n;
    return 0;
}

static int ep_setname(fid_t fid, void *addr, size_t addrlen)
{
    return -FI_ENOSYS; /* the name is its device's address */
}

static int ep_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
    return -FI_ENOSYS;
}

/* Connection management belongs to FI_EP_MSG; an RDM endpoint connects
 * on its own (mroce_conn.c), so these have nothing to do.  fi_shutdown is
 * what portable code calls on any endpoint before closing it. */
static int ep_no_connect(struct fid_ep *ep, const void *addr, const void *param,
                         size_t paramlen)
{
    return -FI_ENOSYS;
}

static int ep_no_listen(struct fid_pep *pep)
{
    return -FI_ENOSYS;
}

static int ep_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
    return -FI_ENOSYS;
}

static int ep_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
                        size_t paramlen)
{
    return -FI_ENOSYS;
}

static int ep_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
    return -FI_ENOSYS;
}

static int ep_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
                      struct fid_mc **mc, void *context)
{
    return -FI_ENOSYS;
}

static struct fi_ops_cm ep_cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = ep_setname,
    .getname = ep_getname,
    .getpeer = ep_getpeer,
    .connect = ep_no_connect,
    .listen = ep_no_listen,
    .accept = ep_no_accept,
    .reject = ep_no_reject,
    .shutdown = ep_no_shutdown,
    .join = ep_no_join,
};

/* The port of sa (0: none asked for). */
static uint16_t sa_port(const struct sockaddr *sa)
{
    if (!sa)
        return 0;
    if (sa->sa_family == AF_INET6)
        return ntohs(
            ((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
    return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
}

/* Gives ep its device: the domain's if no endpoint has it and sa asks for
 * no other port (NULL, port 0 or the domain's own), else one of its own:
 * on sa's address and port if sa names another port, else on the
 * domain's address and a free port.  Lock held.  0 or -FI_*. */
static int ep_device(struct mfi_domain *d, struct mfi_ep *ep,
                     const struct sockaddr *sa)
{
    uint16_t want = sa_port(sa);
    if (want == sa_port((const struct sockaddr *)&d->addr))
        want = 0; /* the domain's fi_info, passed on to every endpoint */
    if (!d->dev_ep && !want) {
        d->dev_ep = ep;
        ep->dev = d->dev;
        ep->pd = d->pd;
        ep->cq = d->cq;
        memcpy(&ep->addr, &d->addr, sizeof(ep->addr));
        ep->addrlen = d->addrlen;
        ep->mtu = d->mtu;
        return 0;
    }
    if (d->nep >= MFI_EP_CNT) {
        MFI_WARN(FI_LOG_EP_CTRL, "%d endpoints per domain (ep_cnt)\n",
                 MFI_EP_CNT);
        return -FI_EBUSY;
    }
    struct sockaddr_storage any;
    if (!sa || sa->sa_family != d->addr.ss_family || !want) {
        memcpy(&any, &d->addr, sizeof(any));
        if (any.ss_family == AF_INET6)
            ((struct sockaddr_in6 *)&any)->sin6_port = 0;
        else
            ((struct sockaddr_in *)&any)->sin_port = 0;
        sa = (const struct sockaddr *)&any;
    }
    int rc = mfi_dev_open(sa, &ep->dev, &ep->addr, &ep->addrlen, &ep->mtu);
    if (rc)
        return rc;
    /* Peers send RMA for this endpoint to the domain's device. */
    mfi_name_set_dom(&ep->addr, sa_port((const struct sockaddr *)&d->addr));
    if (mroce_pd_alloc(ep->dev, &ep->pd) < 0 ||
        mroce_create_cq(ep->dev, MFI_CQ_DEPTH, &ep->cq) < 0) {
        mroce_device_close(ep->dev);
        return -FI_ENOMEM;
    }
    ep->own_dev = 1;
    return 0;
}

int mfi_ep_open(struct fid_domain *fd, struct fi_info *info,
                struct fid_ep **fep, void *context)
{
    struct mfi_domain *d = (struct mfi_domain *)fd;
    if (info && info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
        info->ep_attr->type != FI_EP_UNSPEC)
        return -FI_EINVAL;
    struct mfi_ep *ep = calloc(1, sizeof(*ep));
    if (!ep)
        return -FI_ENOMEM;
    mfi_lock(d);
    int rc = d->shared ? mfi_shared_ep_open(d, ep)
                       : ep_device(d, ep, info ? info->src_addr : NULL);
    if (rc) {
        mfi_unlock(d);
        free(ep);
        return rc;
    }
    ep->dom = d;
    ep->caps = info && info->caps ? info->caps : ~0ull;
    /* Only when asked for: it costs a notice per READ and WRITE. */
    ep->rma_event = info && (info->caps & FI_RMA_EVENT) &&
                    (info->caps & (FI_RMA | FI_ATOMIC));
    ep->tx_op_flags = info && info->tx_attr ? info->tx_attr->op_flags : 0;
    ep->rx_op_flags = info && info->rx_attr ? info->rx_attr->op_flags : 0;
    ep->min_multi_recv = (size_t)mfi_param.eager_size;
    ep->buf_size = (sizeof(struct mfi_hdr) + (size_t)mfi_param.eager_size +
                    63) &
                   ~(size_t)63;
    for (int i = 0; i < 2; i++) {
        mtm_queue_init(&ep->posted[i]);
        mtm_queue_init(&ep->unexp[i]);
    }
    ep->ep.fid.fclass = FI_CLASS_EP;
    ep->ep.fid.context = context;
    ep->ep.fid.ops = &ep_fi_ops;
    ep->ep.ops = &ep_ops;
    ep->ep.cm = &ep_cm_ops;
    ep->ep.msg = &mfi_msg_ops;
    ep->ep.tagged = &mfi_tagged_ops;
    ep->ep.rma = &mfi_rma_ops;
    ep->ep.atomic = &mfi_atomic_ops;
    ep->ep.collective = &mfi_coll_ops;
    ep->dom_next = d->eps;
    d->eps = ep;
    d->nep++;
    d->refs++;
    mfi_unlock(d);
    *fep = &ep->ep;
    return 0;
}
