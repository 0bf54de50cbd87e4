/*
 * mroce_rma.c - FI_RMA: fi_read, fi_write, fi_writedata and their inject
 * forms, straight onto MetaRoCE READ, WRITE and WRITE_WITH_IMM.  The key
 * is the target's engine rkey and the address a virtual address
 * (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR), so the target's provider does nothing
 * for a read or write: its engine places the data.
 *
 * Local buffers: the lkey of the fi_mr passed as desc, else the buffer is
 * registered for the operation.  Writes of up to 256 bytes from one iov go
 * inline (copied at post time).  An inject (fi_inject_write[data], or
 * FI_INJECT on writemsg) leaves the caller's buffer free at return: up to
 * MROCE_MAX_INLINE bytes from one iov go inline, anything else up to
 * inject_size (the eager size) is copied into a bounce buffer that the
 * WRITE is posted from and that returns to the pool on its completion.
 *
 * fi_writedata: the immediate (cq_data_size 4) consumes a bounce buffer
 * at the target, which reports it as an FI_REMOTE_CQ_DATA completion.
 *
 * The target's registrations are on its domain's device: a READ or WRITE
 * for an endpoint on a device of its own goes over a QP to that device
 * (mfi_conn_rma_peer), and one with CQ data goes there as a plain WRITE,
 * its data following in a notice to the endpoint addressed once the WRITE
 * has completed, i.e. once the data is in place.
 *
 * FI_RMA_EVENT: each completed READ or WRITE is followed by a notice to
 * the target endpoint (mroce_rma_event.c).
 */
#define _GNU_SOURCE
#include <string.h>

#include "mroce_fi.h"

#define EP(fep) ((struct mfi_ep *)(fep))

static ssize_t rma_common(struct mfi_ep *ep, int write, const struct iovec *iov,
                          void **desc, size_t count, fi_addr_t peer,
                          uint64_t raddr, uint64_t key, uint64_t data,
                          uint64_t flags, void *context, int inject)
{
    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    if (count > MFI_IOV_LIMIT || key > UINT32_MAX)
        return -FI_EINVAL;
    size_t len = 0;
    for (size_t i = 0; i < count; i++)
        len += iov[i].iov_len;
    int copy = write && (inject || (flags & FI_INJECT));
    if (copy && len > (size_t)mfi_param.eager_size)
        return -FI_EMSGSIZE; /* tx_attr->inject_size */
    int inl = write && count == 1 && len <= MROCE_MAX_INLINE;
    int bounce = copy && !inl;
    if (ep->tx_inflight >= MFI_TX_SIZE) {
        mfi_ep_progress(ep);
        if (ep->tx_inflight >= MFI_TX_SIZE)
            return -FI_EAGAIN;
    }
    int err = 0;
    struct mfi_peer *p = mfi_conn_peer(ep, peer, &err);
    struct mfi_peer *rp = p ? mfi_conn_rma_peer(ep, p, &err) : NULL;
    struct mfi_conn *c = rp ? mfi_conn_tx(ep, rp, &err) : NULL;
    if (!c)
        return err;
    int cqdata = write && (flags & FI_REMOTE_CQ_DATA);
    int via_dom = rp != p; /* the target is not on its domain's device */
    /* The CQ data goes in a notice after the WRITE (not as an immediate)
     * when the WRITE goes to the target's domain device, and on shared
     * QPs, where only a provider header names the writer. */
    int notice_cq = cqdata && (via_dom || ep->dom->shared);
    struct mfi_op *op = mfi_op_get(ep);
    if (!op)
        return -FI_ENOMEM;
    op->type = write ? MFI_OP_WRITE : MFI_OP_READ;
    op->context = context;
    op->cq_flags = FI_RMA | (write ? FI_WRITE : FI_READ);
    op->op_flags = flags;
    op->nocomp = inject || (ep->tx_selective && !(flags & FI_COMPLETION));
    op->len = len;
    op->conn = c;
    op->rma_ev = (uint8_t)ep->rma_event;
    op->rma_addr = raddr;
    op->rma_key = (uint32_t)key;
    op->rma_target = via_dom ? p : NULL;
    op->rma_cqdata = (uint8_t)notice_cq;
    op->data = data;
    struct mroce_sge sge[MFI_IOV_LIMIT];
    struct mfi_buf *b = NULL;
    if (bounce) {
        if (!(b = mfi_buf_get(ep, 0))) {
            mfi_op_put(ep, op);
            return -FI_EAGAIN;
        }
        mfi_copy_from_iov(b->data, iov, count, len);
        b->op = op; /* the WRITE's completion completes the request */
        sge[0].addr = (uintptr_t)b->data;
        sge[0].length = (uint32_t)len;
        sge[0].lkey = b->lkey;
        count = 1;
    }
    int rc = 0;
    for (size_t i = 0; i < count && !rc && !b; i++) {
        sge[i].addr = (uintptr_t)iov[i].iov_base;
        sge[i].length = (uint32_t)iov[i].iov_len;
        sge[i].lkey = 0;
        if (inl)
            continue;
        /* A registration's lkey is its device's: another endpoint
         * registers the buffer itself. */
        if (desc && desc[i] && ep->dev == ep->dom->dev)
            sge[i].lkey = ((struct mfi_mr *)desc[i])->lkey;
        else
            rc = mfi_op_reg(ep, op, iov[i].iov_base, iov[i].iov_len,
                            write ? 0 : MROCE_ACCESS_LOCAL_WRITE, &sge[i].lkey,
                            NULL);
    }
    if (rc) {
        mfi_op_put(ep, op);
        return rc;
    }
    struct mroce_send_wr wr = {.wr_id = b ? (uintptr_t)b : (uintptr_t)op,
                               .sg_list = sge,
                               .num_sge = (int)count,
                               .opcode = !write ? MROCE_WR_READ
                                         : cqdata && !notice_cq
                                             ? MROCE_WR_WRITE_WITH_IMM
                                             : MROCE_WR_WRITE,
                               .send_flags = MROCE_SEND_SIGNALED |
                                             (inl ? MROCE_SEND_INLINE : 0),
                               .imm_data = (uint32_t)data,
                               .remote_addr = raddr,
                               .rkey = (uint32_t)key,
                               .stream = c->stream};
    rc = mroce_post_send(c->qp, &wr, NULL);
    if (rc < 0) {
        if (b)
            mfi_buf_put(ep, b);
        mfi_op_put(ep, op);
        return mfi_errno(rc);
    }
    ep->wr_outstanding++;
    ep->tx_inflight++;
    return 0;
}

void mfi_rma_rx_imm(struct mfi_ep *ep, struct mfi_buf *b,
                    const struct mroce_wc *wc)
{
    fi_addr_t src = mfi_conn_src(ep, b->conn);
    if (ep->rx_cq)
        mfi_cq_write(ep->rx_cq, NULL,
                     FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, 0, NULL,
                     wc->imm_data, 0, src);
    mfi_unexp_release(ep, b); /* not held: reposted on its QP */
}

static ssize_t rma_one(struct fid_ep *fep, int write, const void *buf,
                       size_t len, void *desc, fi_addr_t peer, uint64_t addr,
                       uint64_t key, uint64_t data, uint64_t flags,
                       void *context, int inject)
{
    struct iovec iov = {(void *)buf, len};
    mfi_lock(EP(fep)->dom);
    ssize_t rc = rma_common(EP(fep), write, &iov, &desc, 1, peer, addr, key,
                            data, flags, context, inject);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t rma_read(struct fid_ep *fep, void *buf, size_t len, void *desc,
                        fi_addr_t src, uint64_t addr, uint64_t key,
                        void *context)
{
    return rma_one(fep, 0, buf, len, desc, src, addr, key, 0,
                   EP(fep)->tx_op_flags, context, 0);
}

static ssize_t rma_readv(struct fid_ep *fep, const struct iovec *iov,
                         void **desc, size_t count, fi_addr_t src,
                         uint64_t addr, uint64_t key, void *context)
{
    mfi_lock(EP(fep)->dom);
    ssize_t rc = rma_common(EP(fep), 0, iov, desc, count, src, addr, key, 0,
                            EP(fep)->tx_op_flags, context, 0);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t rma_msg(struct fid_ep *fep, int write,
                       const struct fi_msg_rma *msg, uint64_t flags)
{
    if (msg->rma_iov_count != 1)
        return -FI_EINVAL; /* rma_iov_limit 1 */
    mfi_lock(EP(fep)->dom);
    ssize_t rc = rma_common(EP(fep), write, msg->msg_iov, msg->desc,
                            msg->iov_count, msg->addr, msg->rma_iov[0].addr,
                            msg->rma_iov[0].key, msg->data, flags, msg->context,
                            0);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t rma_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
                           uint64_t flags)
{
    return rma_msg(fep, 0, msg, flags);
}

static ssize_t rma_write(struct fid_ep *fep, const void *buf, size_t len,
                         void *desc, fi_addr_t dest, uint64_t addr,
                         uint64_t key, void *context)
{
    return rma_one(fep, 1, buf, len, desc, dest, addr, key, 0,
                   EP(fep)->tx_op_flags, context, 0);
}

static ssize_t rma_writev(struct fid_ep *fep, const struct iovec *iov,
                          void **desc, size_t count, fi_addr_t dest,
                          uint64_t addr, uint64_t key, void *context)
{
    mfi_lock(EP(fep)->dom);
    ssize_t rc = rma_common(EP(fep), 1, iov, desc, count, dest, addr, key, 0,
                            EP(fep)->tx_op_flags, context, 0);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

static ssize_t rma_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
                            uint64_t flags)
{
    return rma_msg(fep, 1, msg, flags);
}

static ssize_t rma_inject(struct fid_ep *fep, const void *buf, size_t len,
                          fi_addr_t dest, uint64_t addr, uint64_t key)
{
    return rma_one(fep, 1, buf, len, NULL, dest, addr, key, 0, 0, NULL, 1);
}

static ssize_t rma_writedata(struct fid_ep *fep, const void *buf, size_t len,
                             void *desc, uint64_t data, fi_addr_t dest,
                             uint64_t addr, uint64_t key, void *context)
{
    return rma_one(fep, 1, buf, len, desc, dest, addr, key, data,
                   EP(fep)->tx_op_flags | FI_REMOTE_CQ_DATA, context, 0);
}

static ssize_t rma_injectdata(struct fid_ep *fep, const void *buf, size_t len,
                              uint64_t data, fi_addr_t dest, uint64_t addr,
                              uint64_t key)
{
    return rma_one(fep, 1, buf, len, NULL, dest, addr, key, data,
                   FI_REMOTE_CQ_DATA, NULL, 1);
}

struct fi_ops_rma mfi_rma_ops = {
    .size = sizeof(struct fi_ops_rma),
    .read = rma_read,
    .readv = rma_readv,
    .readmsg = rma_readmsg,
    .write = rma_write,
    .writev = rma_writev,
    .writemsg = rma_writemsg,
    .inject = rma_inject,
    .writedata = rma_writedata,
    .injectdata = rma_injectdata,
};
