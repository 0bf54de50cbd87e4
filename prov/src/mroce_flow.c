/*
 * mroce_flow.c - what the provider does when a resource runs out under
 * it, so that nothing posted fails or is lost for want of room:
 *
 * A full send queue.  A QP's send queue (2 * MFI_TX_SIZE entries) also
 * carries the rendezvous READs of every receive matched on it, and the
 * FINs and other control messages; many large receives in flight fill it.
 * A control message or a READ that finds it full waits on an endpoint
 * list (oldest first, so the order in which they were issued holds) and
 * progress posts it once completions have made room.  A control message
 * waits too while others for its QP do (so a QP's control messages keep
 * their order); one for another QP goes at once (a new QP's HELLO must
 * be its first SEND, ahead of the application's).
 *
 * Unexpected messages past the held-buffer bound.  An unexpected message
 * keeps the bounce buffer it arrived in (no copy) up to
 * FI_MROCE_UNEXP_MAX held buffers.  Past that, its bytes (header and
 * payload, exactly as received) are copied into memory of their own size
 * that stands for the buffer in the unexpected queue, and the buffer goes
 * back to its QP: the sender is never refused, so an application that
 * posts its receives only after many messages arrived (or in another
 * order, waiting for each) still gets them all.  The copies are bounded
 * too, by FI_MROCE_UNEXP_COPY_MAX bytes; past that the QP is owed its
 * buffer (mroce_ep.c) and the sender meets RNR back-pressure until
 * receives consume the backlog.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "mroce_fi.h"

static int ctrl_post(struct mfi_ep *ep, struct mfi_buf *b)
{
    struct mroce_sge sge = {(uintptr_t)b->data, b->len, b->lkey};
    struct mroce_send_wr wr = {.wr_id = (uintptr_t)b,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = MROCE_WR_SEND,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .stream = b->conn->stream};
    mfi_hdr_stamp(ep, b);
    int rc = mroce_post_send(b->conn->qp, &wr, NULL);
    if (rc == 0)
        ep->wr_outstanding++;
    return rc;
}

static void ctrl_enqueue(struct mfi_ep *ep, struct mfi_buf *b)
{
    b->conn->ctrl_waiting++;
    b->next = NULL;
    if (!ep->ctrl_wait)
        ep->ctrl_wait_tail = &ep->ctrl_wait;
    *ep->ctrl_wait_tail = b;
    ep->ctrl_wait_tail = &b->next;
}

int mfi_flow_ctrl(struct mfi_ep *ep, struct mfi_conn *c, struct mfi_buf *b)
{
    b->conn = c;
    if (c->ctrl_waiting) {
        ctrl_enqueue(ep, b); /* behind the ones already waiting for c */
        return 0;
    }
    int rc = ctrl_post(ep, b);
    if (rc == MROCE_EFULL) {
        ctrl_enqueue(ep, b);
        return 0;
    }
    return rc < 0 ? mfi_errno(rc) : 0;
}

void mfi_flow_rd_wait(struct mfi_ep *ep, struct mfi_op *op)
{
    op->next = NULL;
    if (!ep->rd_wait)
        ep->rd_wait_tail = &ep->rd_wait;
    *ep->rd_wait_tail = op;
    ep->rd_wait_tail = &op->next;
}

void mfi_flow_retry(struct mfi_ep *ep)
{
    /* Control messages first: a FIN lets its sender complete and free
     * its side, and takes one entry where a READ may take four. */
    while (ep->ctrl_wait) {
        struct mfi_buf *b = ep->ctrl_wait;
        int rc = b->conn->dead ? MROCE_ESTATE : ctrl_post(ep, b);
        if (rc == MROCE_EFULL)
            break;
        ep->ctrl_wait = b->next;
        b->next = NULL;
        b->conn->ctrl_waiting--;
        if (rc < 0)
            mfi_buf_put(ep, b); /* its QP failed: nobody to tell */
    }
    while (ep->rd_wait) {
        struct mfi_op *op = ep->rd_wait;
        ep->rd_wait = op->next;
        op->next = NULL;
        if (mfi_rndv_resume(ep, op) == 1) {
            /* Still full: back at the head, and wait for completions. */
            op->next = ep->rd_wait;
            if (!ep->rd_wait)
                ep->rd_wait_tail = &op->next;
            ep->rd_wait = op;
            break;
        }
    }
}

struct mfi_buf *mfi_flow_copy(struct mfi_ep *ep, const struct mfi_buf *b)
{
    if (ep->copy_bytes + b->len > (size_t)mfi_param.unexp_copy_max)
        return NULL;
    struct mfi_buf *cb = malloc(sizeof(*cb) + b->len);
    if (!cb)
        return NULL;
    memset(cb, 0, sizeof(*cb));
    cb->kind = MFI_WR_RXBUF;
    cb->held = MFI_HELD_COPY;
    cb->ue = b->ue; /* source and tag; linked by the caller */
    cb->conn = b->conn;
    cb->len = b->len;
    cb->data = (uint8_t *)(cb + 1);
    memcpy(cb->data, b->data, b->len);
    cb->next = ep->copies;
    if (ep->copies)
        ep->copies->pprev = &cb->next;
    cb->pprev = &ep->copies;
    ep->copies = cb;
    ep->copy_bytes += b->len;
    return cb;
}

void mfi_flow_copy_free(struct mfi_ep *ep, struct mfi_buf *b)
{
    *b->pprev = b->next;
    if (b->next)
        b->next->pprev = b->pprev;
    ep->copy_bytes -= b->len;
    free(b);
}

void mfi_flow_close(struct mfi_ep *ep)
{
    while (ep->copies)
        mfi_flow_copy_free(ep, ep->copies);
}
