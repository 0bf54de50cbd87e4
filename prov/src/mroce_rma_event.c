/*
 * mroce_rma_event.c - FI_RMA_EVENT: the target of a READ, WRITE or atomic
 * counts it on the counters bound with FI_REMOTE_READ / FI_REMOTE_WRITE
 * and reports it on its receive CQ (flags FI_RMA or FI_ATOMIC with
 * FI_REMOTE_READ or FI_REMOTE_WRITE, buf the target address, len the
 * bytes).
 *
 * The target's engine places READs and WRITEs without telling the
 * provider, so the initiator tells it: once one of its READs or WRITEs
 * completes successfully, an initiator whose endpoint has FI_RMA_EVENT
 * sends an RMA_EVENT notice (mroce_proto.h) on the same QP, or, when the
 * operation went to the target's domain device (an endpoint on a device
 * of its own, mroce_rma.c), on its QP to the target endpoint.  A WRITE
 * completes only once the target has acknowledged its data, which the
 * target's engine does after placing it; a READ completes with the data
 * it read.  So when the target sees the notice the data is in place (and
 * a READ's source is no longer needed), and notices come in the order of
 * the initiator's completions on that QP (towards that endpoint).  Both
 * endpoints must ask for FI_RMA_EVENT (the initiator sends notices only
 * then); a target without it ignores them.  A WRITE with immediate data
 * already produces its CQ entry from the immediate: its notice only
 * counts.  A WRITE with CQ data that went to the domain's device carries
 * no immediate; its notice, sent whether or not the initiator has
 * FI_RMA_EVENT, carries the data in its header (MFI_HDR_CQ_DATA), and the
 * target reports it as the immediate would have been (and counts it if it
 * has FI_RMA_EVENT).  A failed READ or WRITE sends no notice.  Atomics are executed by the target's provider
 * (mroce_atomic.c), which reports them itself, without a notice.
 */
#include <string.h>

#include "mroce_fi.h"

void mfi_rmaev_report(struct mfi_ep *ep, int write, uint64_t kind,
                      uint64_t addr, size_t len, int cq)
{
    if (!ep->rma_event)
        return;
    mfi_cntr_report(ep->cntr[write ? MFI_CNTR_RWRITE : MFI_CNTR_RREAD], 0);
    if (cq && ep->rx_cq)
        mfi_cq_write(ep->rx_cq, NULL,
                     kind | (write ? FI_REMOTE_WRITE : FI_REMOTE_READ), len,
                     (void *)(uintptr_t)addr, 0, 0, FI_ADDR_NOTAVAIL);
}

void mfi_rmaev_send(struct mfi_ep *ep, const struct mfi_op *op)
{
    if (!op->rma_ev && !op->rma_cqdata)
        return;
    struct mfi_conn *c = op->conn;
    int err = 0;
    if (op->rma_target) /* the WRITE or READ went to the domain's device */
        c = mfi_conn_tx(ep, op->rma_target, &err);
    if (!c || c->dead) {
        if (op->rma_cqdata)
            MFI_WARN(FI_LOG_EP_DATA, "cannot send remote CQ data: %s\n",
                     fi_strerror(err ? -err : FI_EIO));
        return;
    }
    struct mfi_rma_event ev = {
        .addr = op->rma_addr,
        .len = op->len,
        .key = op->rma_key,
        .op = op->type == MFI_OP_WRITE ? MFI_RMAEV_WRITE : MFI_RMAEV_READ,
        .flags = (op->op_flags & FI_REMOTE_CQ_DATA) ? MFI_RMAEV_IMM : 0};
    int rc = op->rma_cqdata
                 ? mfi_send_ctrl_data(ep, c, MFI_PKT_RMA_EVENT, op->data, &ev,
                                      sizeof(ev))
                 : mfi_send_ctrl(ep, c, MFI_PKT_RMA_EVENT, &ev, sizeof(ev));
    if (rc < 0)
        MFI_WARN(FI_LOG_EP_DATA, "cannot send an RMA event notice: %s\n",
                 fi_strerror(-rc));
}

void mfi_rmaev_rx(struct mfi_ep *ep, struct mfi_buf *b, const struct mfi_pkt *p)
{
    const struct mfi_rma_event *ev = &p->rmaev;
    /* The CQ data of a WRITE sent to the domain's device: its entry, as
     * the immediate would have made it (mfi_rma_rx_imm). */
    if ((p->flags & MFI_HDR_CQ_DATA) && ev->op == MFI_RMAEV_WRITE && ep->rx_cq)
        mfi_cq_write(ep->rx_cq, NULL,
                     FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, 0, NULL,
                     (uint32_t)p->data, 0, mfi_conn_src(ep, b->conn));
    mfi_rmaev_report(ep, ev->op == MFI_RMAEV_WRITE, FI_RMA, ev->addr,
                     (size_t)ev->len, !(ev->flags & MFI_RMAEV_IMM));
    mfi_unexp_release(ep, b); /* not held: reposted on its QP */
}
