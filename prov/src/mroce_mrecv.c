/*
 * mroce_mrecv.c - FI_MULTI_RECV: one posted buffer that takes message
 * after message (untagged receives only, as libfabric defines it).
 *
 * The buffer's own request (mr_parent) sits in the posted queue like any
 * receive.  Each message it matches gets a receive of its own (a child,
 * mrecv pointing at the buffer's request) over the buffer's unused part,
 * so eager copies, rendezvous READs and truncation work as for any
 * receive, and the child's completion names its place (fi_cq entry buf).
 * Messages are placed one after the other: the next starts where the
 * previous one ends.  Once less than FI_OPT_MIN_MULTI_RECV bytes are left
 * (default eager_size) the buffer leaves the posted queue, and the last of
 * its children to be reported carries FI_MULTI_RECV: from then on the
 * provider does not touch the buffer again.  A cancelled buffer reports
 * FI_ECANCELED (with FI_MULTI_RECV if no child is in flight, else the
 * last child carries it).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "mroce_fi.h"

/* Gives the message in b the next part of parent's buffer; returns 1 when
 * that leaves the buffer too little room (it is then out of the posted
 * queue, if it was in it). */
static int carve(struct mfi_ep *ep, struct mfi_op *parent, struct mfi_buf *b)
{
    uint64_t mlen, data, tag;
    int cq_data;
    mfi_msg_peek_info(b, &mlen, &data, &tag, &cq_data);
    size_t room = parent->len - parent->mr_off;
    struct mfi_op *c = mfi_op_get(ep);
    if (!c) {
        /* Not a silent loss: the sender's FIN says so for a rendezvous,
         * and the log for an eager message. */
        MFI_WARN(FI_LOG_EP_DATA, "out of memory: a message for a "
                                 "multi-receive buffer is dropped\n");
        mfi_msg_discard(ep, b);
        return 0;
    }
    c->type = MFI_OP_RECV;
    c->context = parent->context;
    c->cq_flags = FI_RECV | FI_MSG;
    c->op_flags = parent->op_flags;
    c->nocomp = parent->nocomp;
    c->iov[0].iov_base = (char *)parent->iov[0].iov_base + parent->mr_off;
    c->iov[0].iov_len = room;
    c->iov_count = 1;
    c->len = room;
    c->addr = parent->addr;
    c->mrecv = parent;
    parent->mr_off += mlen < room ? (size_t)mlen : room;
    parent->mr_children++;
    ep->rx_posted_ops++;
    int retire = parent->len - parent->mr_off < ep->min_multi_recv;
    if (retire) {
        parent->mr_retired = 1;
        if (mtm_queued(&parent->me))
            mtm_remove(&ep->posted[0], &parent->me);
    }
    /* May report c at once, and with it free parent if retired. */
    mfi_msg_deliver(ep, c, b);
    return retire;
}

ssize_t mfi_mrecv_post(struct mfi_ep *ep, const struct iovec *iov, size_t count,
                       fi_addr_t src, uint64_t flags, void *context)
{
    if (count != 1 || !iov)
        return -FI_EINVAL;
    struct mfi_op *op = mfi_op_get(ep);
    if (!op)
        return -FI_ENOMEM;
    op->type = MFI_OP_RECV;
    op->context = context;
    op->cq_flags = FI_RECV | FI_MSG;
    op->op_flags = flags;
    op->nocomp = ep->rx_selective && !(flags & FI_COMPLETION);
    op->iov[0] = iov[0];
    op->iov_count = 1;
    op->len = iov[0].iov_len;
    op->addr = src;
    op->mr_parent = 1;
    ep->rx_posted_ops++;
    mfi_msg_refresh_unexp(ep);
    struct mtm_entry *e;
    while ((e = mtm_find_unexp(&ep->unexp[0], 0, 0, src))) {
        mtm_remove(&ep->unexp[0], e);
        if (carve(ep, op,
                  (struct mfi_buf *)((char *)e - offsetof(struct mfi_buf, ue))))
            return 0;
    }
    op->me.tag = 0;
    op->me.ignore = 0;
    op->me.src = src;
    mtm_append(&ep->posted[0], &op->me);
    return 0;
}

void mfi_mrecv_deliver(struct mfi_ep *ep, struct mfi_op *parent,
                       struct mfi_buf *b)
{
    carve(ep, parent, b);
}

void mfi_mrecv_child_flags(struct mfi_op *op)
{
    const struct mfi_op *p = op->mrecv;
    if (p->mr_retired && p->mr_children == 1)
        op->cq_flags |= FI_MULTI_RECV;
}

void mfi_mrecv_reported(struct mfi_ep *ep, struct mfi_op *parent)
{
    parent->mr_children--;
    if (parent->mr_retired && !parent->mr_children) {
        ep->rx_posted_ops--;
        mfi_op_put(ep, parent);
    }
}

int mfi_mrecv_parent_done(struct mfi_op *op)
{
    op->mr_retired = 1;
    if (op->mr_children)
        return 0;
    op->cq_flags |= FI_MULTI_RECV;
    return 1;
}
