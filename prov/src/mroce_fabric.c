/*
 * mroce_fabric.c - the fabric object: the root every domain hangs from.
 * MetaRoCE needs no fabric-wide state (each domain is its own libmroce
 * device), so the fabric only counts its domains and opens them and event
 * queues (mroce_eq.c).  Wait sets are not offered: completions are found
 * by polling.
 */
#include <stdlib.h>
#include <string.h>

#include "mroce_fi.h"

int mfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
    return -FI_ENOSYS;
}

int mfi_no_control(struct fid *fid, int command, void *arg)
{
    return -FI_ENOSYS;
}

int mfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
                    void **ops, void *context)
{
    return -FI_ENOSYS;
}

int mfi_no_tostr(const struct fid *fid, char *buf, size_t len)
{
    return -FI_ENOSYS;
}

int mfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
                   void *context)
{
    return -FI_ENOSYS;
}

static int fabric_close(struct fid *fid)
{
    struct mfi_fabric *f = (struct mfi_fabric *)fid;
    if (f->refs)
        return -FI_EBUSY;
    free(f);
    return 0;
}

static struct fi_ops fabric_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = fabric_close,
    .bind = mfi_no_bind,
    .control = mfi_no_control,
    .ops_open = mfi_no_ops_open,
    .tostr = mfi_no_tostr,
    .ops_set = mfi_no_ops_set,
};

static int no_wait(struct fid_fabric *fabric, struct fi_wait_attr *attr,
                   struct fid_wait **waitset)
{
    return -FI_ENOSYS;
}

static int no_pep(struct fid_fabric *fabric, struct fi_info *info,
                  struct fid_pep **pep, void *context)
{
    return -FI_ENOSYS;
}

/* Nothing to wait on: completions are found by polling. */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids,
                          int count)
{
    return -FI_EAGAIN;
}

/* fi_domain2 (domain flags such as FI_PEER): no flags are known. */
static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
                          struct fid_domain **dom, uint64_t flags,
                          void *context)
{
    if (flags)
        return -FI_EBADFLAGS;
    return mfi_domain_open(fabric, info, dom, context);
}

static struct fi_ops_fabric fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = mfi_domain_open,
    .passive_ep = no_pep,
    .eq_open = mfi_eq_open,
    .wait_open = no_wait,
    .trywait = fabric_trywait,
    .domain2 = fabric_domain2,
};

int mfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
                    void *context)
{
    if (attr && attr->name && strcmp(attr->name, MFI_NAME))
        return -FI_ENODATA;
    struct mfi_fabric *f = calloc(1, sizeof(*f));
    if (!f)
        return -FI_ENOMEM;
    f->fab.fid.fclass = FI_CLASS_FABRIC;
    f->fab.fid.context = context;
    f->fab.fid.ops = &fabric_fi_ops;
    f->fab.ops = &fabric_ops;
    *fabric = &f->fab;
    return 0;
}
