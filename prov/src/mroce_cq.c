/*
 * mroce_cq.c - completion queues: what the application reads.  The
 * provider's progress turns libmroce completions (and matches, FINs,
 * cancels) into entries here; fi_cq_read drives that progress when it finds
 * the queue empty (FI_PROGRESS_MANUAL).
 *
 * Entries are kept in the widest format (fi_cq_tagged_entry plus the
 * source address) and copied out in the format the CQ was opened with:
 * context, msg, data and tagged are prefixes of one another.  The ring
 * grows instead of overflowing: a completion is never lost, and the
 * endpoint's own limits (tx size, rx size) bound how many can be pending.
 * Error entries wait in their own list; fi_cq_read returns -FI_EAVAIL while
 * any is waiting, and fi_cq_readerr hands them out in order.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mroce_fi.h"

static size_t entry_size(enum fi_cq_format f)
{
    switch (f) {
    case FI_CQ_FORMAT_CONTEXT:
        return sizeof(struct fi_cq_entry);
    case FI_CQ_FORMAT_MSG:
        return sizeof(struct fi_cq_msg_entry);
    case FI_CQ_FORMAT_DATA:
        return sizeof(struct fi_cq_data_entry);
    default:
        return sizeof(struct fi_cq_tagged_entry);
    }
}

int mfi_cq_write(struct mfi_cq *cq, void *context, uint64_t flags, size_t len,
                 void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
    if (cq->count == cq->cap) {
        size_t cap = cq->cap * 2;
        struct mfi_cqe *r = malloc(cap * sizeof(*r));
        if (!r)
            return -FI_ENOMEM;
        for (size_t i = 0; i < cq->count; i++)
            r[i] = cq->ring[(cq->head + i) % cq->cap];
        free(cq->ring);
        cq->ring = r;
        cq->head = 0;
        cq->cap = cap;
    }
    struct mfi_cqe *e = &cq->ring[(cq->head + cq->count) % cq->cap];
    e->e.op_context = context;
    e->e.flags = flags;
    e->e.len = len;
    e->e.buf = buf;
    e->e.data = data;
    e->e.tag = tag;
    e->src = src;
    cq->count++;
    return 0;
}

int mfi_cq_write_err(struct mfi_cq *cq, void *context, uint64_t flags,
                     size_t len, void *buf, uint64_t data, uint64_t tag,
                     size_t olen, int err, int prov_errno, fi_addr_t src)
{
    struct mfi_cqerr *x = calloc(1, sizeof(*x));
    if (!x)
        return -FI_ENOMEM;
    x->e.op_context = context;
    x->e.flags = flags;
    x->e.len = len;
    x->e.buf = buf;
    x->e.data = data;
    x->e.tag = tag;
    x->e.olen = olen;
    x->e.err = err;
    x->e.prov_errno = prov_errno;
    x->src = src;
    if (cq->err_tail)
        cq->err_tail->next = x;
    else
        cq->err_head = x;
    cq->err_tail = x;
    return 0;
}

/* Copies up to count entries out.  Lock held. */
static ssize_t cq_take(struct mfi_cq *cq, void *buf, size_t count,
                       fi_addr_t *src)
{
    if (cq->err_head)
        return -FI_EAVAIL;
    size_t esz = entry_size(cq->format), n = 0;
    while (n < count && cq->count) {
        struct mfi_cqe *e = &cq->ring[cq->head];
        memcpy((char *)buf + n * esz, &e->e, esz);
        if (src)
            src[n] = e->src;
        cq->head = (cq->head + 1) % cq->cap;
        cq->count--;
        n++;
    }
    return n ? (ssize_t)n : -FI_EAGAIN;
}

static ssize_t cq_readfrom(struct fid_cq *fcq, void *buf, size_t count,
                           fi_addr_t *src)
{
    struct mfi_cq *cq = (struct mfi_cq *)fcq;
    mfi_lock(cq->dom);
    if (!cq->count && !cq->err_head)
        mfi_domain_progress(cq->dom);
    ssize_t rc = cq_take(cq, buf, count, src);
    mfi_unlock(cq->dom);
    return rc;
}

static ssize_t cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
    return cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf,
                          uint64_t flags)
{
    struct mfi_cq *cq = (struct mfi_cq *)fcq;
    mfi_lock(cq->dom);
    struct mfi_cqerr *x = cq->err_head;
    if (!x) {
        mfi_unlock(cq->dom);
        return -FI_EAGAIN;
    }
    cq->err_head = x->next;
    if (!cq->err_head)
        cq->err_tail = NULL;
    free(cq->err_last);
    cq->err_last = x;
    /* No provider error data (max_err_data is 0): the caller's err_data
     * buffer is left alone and reported empty. */
    void *ed = buf->err_data;
    *buf = x->e;
    buf->err_data = ed;
    buf->err_data_size = 0;
    mfi_unlock(cq->dom);
    return 1;
}

static ssize_t cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count,
                            fi_addr_t *src, const void *cond, int timeout)
{
    struct mfi_cq *cq = (struct mfi_cq *)fcq;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        ssize_t rc = cq_readfrom(fcq, buf, count, src);
        if (rc != -FI_EAGAIN)
            return rc;
        if (atomic_exchange(&cq->signaled, 0))
            return -FI_EAGAIN; /* woken by fi_cq_signal */
        clock_gettime(CLOCK_MONOTONIC, &t);
        long ms = (t.tv_sec - t0.tv_sec) * 1000 +
                  (t.tv_nsec - t0.tv_nsec) / 1000000;
        if (timeout >= 0 && ms >= timeout)
            return -FI_EAGAIN;
        sched_yield();
    }
}

static ssize_t cq_sread(struct fid_cq *fcq, void *buf, size_t count,
                        const void *cond, int timeout)
{
    return cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

/* Wakes the thread blocked in fi_cq_sread on this CQ, or, if none is, the
 * next one to block (the signal is not lost in between). */
static int cq_signal(struct fid_cq *fcq)
{
    atomic_store(&((struct mfi_cq *)fcq)->signaled, 1);
    return 0;
}

static const char *cq_strerror(struct fid_cq *fcq, int prov_errno,
                               const void *err_data, char *buf, size_t len)
{
    const char *s = prov_errno > 0 ? mroce_wc_status_str(prov_errno)
                                   : "no provider detail";
    if (buf && len) {
        strncpy(buf, s, len - 1);
        buf[len - 1] = 0;
        return buf;
    }
    return s;
}

static int cq_close(struct fid *fid)
{
    struct mfi_cq *cq = (struct mfi_cq *)fid;
    struct mfi_domain *d = cq->dom;
    mfi_lock(d);
    if (cq->users) {
        mfi_unlock(d);
        return -FI_EBUSY;
    }
    d->refs--;
    mfi_unlock(d);
    while (cq->err_head) {
        struct mfi_cqerr *x = cq->err_head;
        cq->err_head = x->next;
        free(x);
    }
    free(cq->err_last);
    free(cq->ring);
    free(cq);
    return 0;
}

static struct fi_ops cq_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cq_close,
    .bind = mfi_no_bind,
    .control = mfi_no_control,
    .ops_open = mfi_no_ops_open,
    .tostr = mfi_no_tostr,
    .ops_set = mfi_no_ops_set,
};

static struct fi_ops_cq cq_ops = {
    .size = sizeof(struct fi_ops_cq),
    .read = cq_read,
    .readfrom = cq_readfrom,
    .readerr = cq_readerr,
    .sread = cq_sread,
    .sreadfrom = cq_sreadfrom,
    .signal = cq_signal,
    .strerror = cq_strerror,
};

int mfi_cq_open(struct fid_domain *fd, struct fi_cq_attr *attr,
                struct fid_cq **fcq, void *context)
{
    struct mfi_domain *d = (struct mfi_domain *)fd;
    if (!attr)
        return -FI_EINVAL;
    switch (attr->format) {
    case FI_CQ_FORMAT_UNSPEC:
    case FI_CQ_FORMAT_CONTEXT:
    case FI_CQ_FORMAT_MSG:
    case FI_CQ_FORMAT_DATA:
    case FI_CQ_FORMAT_TAGGED:
        break;
    default:
        return -FI_ENOSYS;
    }
    /* Wait objects: sread polls (there is no fd to sleep on yet). */
    if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
        return -FI_ENOSYS;
    struct mfi_cq *cq = calloc(1, sizeof(*cq));
    if (!cq)
        return -FI_ENOMEM;
    cq->dom = d;
    cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT
                                                     : attr->format;
    cq->cap = attr->size ? attr->size : 1024;
    cq->ring = malloc(cq->cap * sizeof(*cq->ring));
    if (!cq->ring) {
        free(cq);
        return -FI_ENOMEM;
    }
    cq->cq.fid.fclass = FI_CLASS_CQ;
    cq->cq.fid.context = context;
    cq->cq.fid.ops = &cq_fi_ops;
    cq->cq.ops = &cq_ops;
    mfi_lock(d);
    d->refs++;
    mfi_unlock(d);
    *fcq = &cq->cq;
    return 0;
}
