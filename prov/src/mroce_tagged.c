/*
 * mroce_tagged.c - FI_TAGGED entry points.  Sends and receives are the
 * engine in mroce_msg.c with the tag queues; this file adds what only
 * tagged receives have: FI_PEEK (is a matching message waiting?), FI_CLAIM
 * (take it now, receive it later through the same fi_context), and
 * FI_DISCARD.
 *
 * A claimed message leaves the unexpected queue and its bounce buffer is
 * remembered in the application's fi_context (internal[0]); the later
 * fi_trecvmsg with FI_CLAIM and that context delivers or discards it.  So
 * FI_CLAIM requires the application to pass a struct fi_context, as the
 * libfabric man page says.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <string.h>

#include "mroce_fi.h"

#define EP(fep) ((struct mfi_ep *)(fep))

static struct mfi_buf *ue_buf(struct mtm_entry *e)
{
    return (struct mfi_buf *)((char *)e - offsetof(struct mfi_buf, ue));
}

static ssize_t tagged_peek(struct mfi_ep *ep, const struct fi_msg_tagged *msg,
                           uint64_t flags)
{
    if (!ep->rx_cq)
        return -FI_EOPBADSTATE;
    mfi_ep_progress(ep); /* let what has arrived be seen */
    mfi_msg_refresh_unexp(ep);
    fi_addr_t src = (ep->caps & FI_DIRECTED_RECV) ? msg->addr : FI_ADDR_UNSPEC;
    struct mtm_entry *e = mtm_find_unexp(&ep->unexp[1], msg->tag, msg->ignore,
                                         src);
    if (!e)
        return mfi_cq_write_err(ep->rx_cq, msg->context, FI_RECV | FI_TAGGED, 0,
                                NULL, 0, 0, 0, FI_ENOMSG, 0, FI_ADDR_NOTAVAIL);
    struct mfi_buf *b = ue_buf(e);
    uint64_t len, data, tag;
    int cq_data;
    mfi_msg_peek_info(b, &len, &data, &tag, &cq_data);
    uint64_t cqf = FI_RECV | FI_TAGGED | (cq_data ? FI_REMOTE_CQ_DATA : 0);
    int rc = mfi_cq_write(ep->rx_cq, msg->context, cqf, len, NULL, data, tag,
                          e->src);
    if (flags & FI_CLAIM) {
        if (!msg->context)
            return -FI_EINVAL;
        mtm_remove(&ep->unexp[1], e);
        ((struct fi_context *)msg->context)->internal[0] = b;
    } else if (flags & FI_DISCARD) {
        mtm_remove(&ep->unexp[1], e);
        mfi_msg_discard(ep, b);
    }
    return rc;
}

static ssize_t tagged_claim(struct mfi_ep *ep, const struct fi_msg_tagged *msg,
                            uint64_t flags)
{
    struct fi_context *ctx = msg->context;
    struct mfi_buf *b = ctx ? ctx->internal[0] : NULL;
    if (!b)
        return -FI_EINVAL;
    ctx->internal[0] = NULL;
    if (flags & FI_DISCARD) {
        uint64_t tag = b->ue.tag; /* the header's, set on arrival */
        fi_addr_t src = b->ue.src;
        mfi_msg_discard(ep, b);
        return ep->rx_cq ? mfi_cq_write(ep->rx_cq, ctx, FI_RECV | FI_TAGGED, 0,
                                        NULL, 0, tag, src)
                         : 0;
    }
    struct mfi_op *op = mfi_op_get(ep);
    if (!op)
        return -FI_ENOMEM;
    op->type = MFI_OP_RECV;
    op->tagged = 1;
    op->context = ctx;
    op->cq_flags = FI_RECV | FI_TAGGED;
    op->op_flags = flags;
    op->nocomp = ep->rx_selective && !(flags & FI_COMPLETION);
    for (size_t i = 0; i < msg->iov_count && i < MFI_IOV_LIMIT; i++) {
        op->iov[i] = msg->msg_iov[i];
        op->len += msg->msg_iov[i].iov_len;
        op->iov_count++;
    }
    ep->rx_posted_ops++;
    mfi_msg_deliver(ep, op, b);
    return 0;
}

static ssize_t tagged_recvmsg(struct fid_ep *fep,
                              const struct fi_msg_tagged *msg, uint64_t flags)
{
    struct mfi_ep *ep = EP(fep);
    ssize_t rc;
    mfi_lock(ep->dom);
    if (!ep->enabled)
        rc = -FI_EOPBADSTATE;
    else if (flags & FI_PEEK)
        rc = tagged_peek(ep, msg, flags);
    else if (flags & FI_CLAIM)
        rc = tagged_claim(ep, msg, flags);
    else
        rc = mfi_recv_common(ep, msg->msg_iov, msg->desc, msg->iov_count,
                             msg->addr, msg->tag, msg->ignore, flags,
                             msg->context, 1);
    mfi_unlock(ep->dom);
    return rc;
}

static ssize_t tagged_recv(struct fid_ep *fep, void *buf, size_t len,
                           void *desc, fi_addr_t src, uint64_t tag,
                           uint64_t ignore, void *context)
{
    struct iovec iov = {buf, len};
    mfi_lock(EP(fep)->dom);
    ssize_t rc = mfi_recv_common(EP(fep), &iov, &desc, 1, src, tag, ignore,
                                 EP(fep)->rx_op_flags, context, 1);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t tagged_recvv(struct fid_ep *fep, const struct iovec *iov,
                            void **desc, size_t count, fi_addr_t src,
                            uint64_t tag, uint64_t ignore, void *context)
{
    mfi_lock(EP(fep)->dom);
    ssize_t rc = mfi_recv_common(EP(fep), iov, desc, count, src, tag, ignore,
                                 EP(fep)->rx_op_flags, context, 1);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t tsend(struct fid_ep *fep, const struct iovec *iov, void **desc,
                     size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
                     uint64_t flags, void *context, int inject)
{
    mfi_lock(EP(fep)->dom);
    ssize_t rc = mfi_send_common(EP(fep), iov, desc, count, dest, tag, data,
                                 flags, context, 1, inject);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t tagged_send(struct fid_ep *fep, const void *buf, size_t len,
                           void *desc, fi_addr_t dest, uint64_t tag,
                           void *context)
{
    struct iovec iov = {(void *)buf, len};
    return tsend(fep, &iov, &desc, 1, dest, tag, 0, EP(fep)->tx_op_flags,
                 context, 0);
}

static ssize_t tagged_sendv(struct fid_ep *fep, const struct iovec *iov,
                            void **desc, size_t count, fi_addr_t dest,
                            uint64_t tag, void *context)
{
    return tsend(fep, iov, desc, count, dest, tag, 0, EP(fep)->tx_op_flags,
                 context, 0);
}

static ssize_t tagged_sendmsg(struct fid_ep *fep,
                              const struct fi_msg_tagged *msg, uint64_t flags)
{
    return tsend(fep, msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
                 msg->tag, msg->data, flags, msg->context, 0);
}

static ssize_t tagged_inject(struct fid_ep *fep, const void *buf, size_t len,
                             fi_addr_t dest, uint64_t tag)
{
    struct iovec iov = {(void *)buf, len};
    return tsend(fep, &iov, NULL, 1, dest, tag, 0, 0, NULL, 1);
}

static ssize_t tagged_senddata(struct fid_ep *fep, const void *buf, size_t len,
                               void *desc, uint64_t data, fi_addr_t dest,
                               uint64_t tag, void *context)
{
    struct iovec iov = {(void *)buf, len};
    return tsend(fep, &iov, &desc, 1, dest, tag, data,
                 EP(fep)->tx_op_flags | FI_REMOTE_CQ_DATA, context, 0);
}

static ssize_t tagged_injectdata(struct fid_ep *fep, const void *buf,
                                 size_t len, uint64_t data, fi_addr_t dest,
                                 uint64_t tag)
{
    struct iovec iov = {(void *)buf, len};
    return tsend(fep, &iov, NULL, 1, dest, tag, data, FI_REMOTE_CQ_DATA, NULL,
                 1);
}

struct fi_ops_tagged mfi_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = tagged_recv,
    .recvv = tagged_recvv,
    .recvmsg = tagged_recvmsg,
    .send = tagged_send,
    .sendv = tagged_sendv,
    .sendmsg = tagged_sendmsg,
    .inject = tagged_inject,
    .senddata = tagged_senddata,
    .injectdata = tagged_injectdata,
};
