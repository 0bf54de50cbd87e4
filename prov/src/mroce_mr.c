/*
 * mroce_mr.c - memory registration.  A registration is a libmroce MR on the
 * domain's device (the QPs of the endpoint on it share its protection
 * domain), so the key the application sends to peers is the engine's rkey
 * (FI_MR_PROV_KEY) and remote addresses are virtual addresses
 * (FI_MR_VIRT_ADDR).  The domain's further endpoints have devices of their
 * own (mroce_fi.h): RMA into them is sent to the domain's device instead
 * (mfi_conn_rma_peer), and RMA from them registers its local buffers
 * itself (mroce_rma.c).  fi_mr_desc
 * gives the struct mfi_mr, from which RMA takes the lkey instead of
 * registering the buffer itself.  A rendezvous send registers its buffer
 * anyway (mroce_msg.c): its completion waits until libmroce drops that
 * registration, which must be the send's alone.
 *
 * Registration in the engine is a table entry (no pinning: libmroce is
 * software), and libmroce's check that the memory is mapped reads only the
 * lines of /proc/self/maps up to the buffer: cheap enough that the data path
 * also registers unregistered rendezvous buffers per operation.  Memory that
 * is not mapped fails with -FI_EFAULT, write rights on read-only memory with
 * -FI_EACCES (SEM-28).
 */
#include <stdlib.h>

#include "mroce_fi.h"

static int mr_close(struct fid *fid)
{
    struct mfi_mr *mr = (struct mfi_mr *)fid;
    struct mfi_domain *d = mr->dom;
    mfi_lock(d);
    int rc = mroce_dereg_mr(mr->vmr);
    if (rc == MROCE_EBUSY) {
        mfi_unlock(d);
        return -FI_EBUSY;
    }
    for (struct mfi_mr **pp = &d->mrs; *pp; pp = &(*pp)->next)
        if (*pp == mr) {
            *pp = mr->next;
            break;
        }
    d->refs--;
    mfi_unlock(d);
    free(mr);
    return 0;
}

static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    /* Counting remote accesses per registration (FI_MR_RMA_EVENT) is not
     * offered: endpoints count them (FI_RMA_EVENT, mroce_rma_event.c). */
    if (bfid && bfid->fclass == FI_CLASS_CNTR)
        return -FI_ENOSYS;
    return 0; /* keys are device-wide: nothing to bind to */
}

static int mr_control(struct fid *fid, int command, void *arg)
{
    return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops mr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = mr_close,
    .bind = mr_bind,
    .control = mr_control,
    .ops_open = mfi_no_ops_open,
    .tostr = mfi_no_tostr,
    .ops_set = mfi_no_ops_set,
};

int mfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
               uint64_t offset, uint64_t requested_key, uint64_t flags,
               struct fid_mr **pmr, void *context)
{
    if (fid->fclass != FI_CLASS_DOMAIN)
        return -FI_EINVAL;
    struct mfi_domain *d = (struct mfi_domain *)fid;
    struct mfi_mr *mr = calloc(1, sizeof(*mr));
    if (!mr)
        return -FI_ENOMEM;
    /* Every right: the engine checks rights per access, and libfabric's
     * access flags are advisory for a provider without FI_MR_LOCAL.  But
     * libmroce refuses write rights on memory that is not writable
     * (SEM-28): read-only memory gets REMOTE_READ alone, unless access asks
     * for a right that writes into it (-FI_EACCES then). */
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_READ |
                   MROCE_ACCESS_REMOTE_WRITE | MROCE_ACCESS_REMOTE_ATOMIC;
    /* A zero-length registration still needs a valid range in the
     * engine: register one byte (never accessed). */
    mfi_lock(d);
    int rc = mroce_reg_mr(d->pd, (void *)buf, len ? len : 1, acc, &mr->vmr);
    mr->writable = 1;
    if (rc == MROCE_EACCESS &&
        !(access & (FI_RECV | FI_READ | FI_REMOTE_WRITE))) {
        rc = mroce_reg_mr(d->pd, (void *)buf, len ? len : 1,
                          MROCE_ACCESS_REMOTE_READ, &mr->vmr);
        mr->writable = 0;
    }
    if (rc < 0) {
        mfi_unlock(d);
        free(mr);
        return rc == MROCE_ENOMEM    ? -FI_ENOMEM
               : rc == MROCE_EFAULT  ? -FI_EFAULT
               : rc == MROCE_EACCESS ? -FI_EACCES
                                     : -FI_EINVAL;
    }
    d->refs++;
    mr->dom = d;
    mr->base = (uintptr_t)buf;
    mr->len = len;
    mr->lkey = mroce_mr_lkey(mr->vmr);
    mr->mr.fid.fclass = FI_CLASS_MR;
    mr->mr.fid.context = context;
    mr->mr.fid.ops = &mr_fi_ops;
    mr->mr.mem_desc = mr;
    mr->mr.key = mroce_mr_rkey(mr->vmr);
    mr->next = d->mrs;
    d->mrs = mr;
    mfi_unlock(d);
    (void)offset;
    (void)requested_key;
    *pmr = &mr->mr;
    return 0;
}

struct mfi_mr *mfi_mr_find(struct mfi_domain *d, uint64_t key, uint64_t addr,
                           size_t len)
{
    for (struct mfi_mr *mr = d->mrs; mr; mr = mr->next)
        if (mr->mr.key == key)
            return addr >= mr->base && len <= mr->len &&
                           addr - mr->base <= mr->len - len
                       ? mr
                       : NULL;
    return NULL;
}

int mfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
                uint64_t access, uint64_t offset, uint64_t requested_key,
                uint64_t flags, struct fid_mr **mr, void *context)
{
    if (count != 1)
        return -FI_EINVAL; /* mr_iov_limit is 1 */
    return mfi_mr_reg(fid, iov[0].iov_base, iov[0].iov_len, access, offset,
                      requested_key, flags, mr, context);
}

int mfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
                   uint64_t flags, struct fid_mr **mr)
{
    if (!attr || attr->iov_count != 1)
        return -FI_EINVAL;
    return mfi_mr_reg(fid, attr->mr_iov[0].iov_base, attr->mr_iov[0].iov_len,
                      attr->access, attr->offset, attr->requested_key, flags,
                      mr, attr->context);
}
