/*
 * mroce_cntr.c - completion counters (fi_cntr_open) and poll sets
 * (fi_poll_open).
 *
 * A counter holds a success count and an error count.  Endpoints bound
 * to it (FI_SEND, FI_RECV, FI_READ, FI_WRITE) add one to either when a
 * request of that kind finishes (mfi_cntr_report, called where the CQ
 * entry is written or would be): every request counts, also those whose
 * CQ entry FI_SELECTIVE_COMPLETION or FI_INJECT suppresses, as libfabric
 * defines counters to.  Remote-access counting (FI_REMOTE_READ,
 * FI_REMOTE_WRITE: FI_RMA_EVENT) is refused at bind time: the target's
 * engine places READs and WRITEs without telling the provider.
 *
 * Values change only under the domain lock, and each change broadcasts
 * the counter's condition variable (waited on with that same lock), so
 * fi_cntr_wait cannot miss a wake-up between its check and its sleep.
 * The waiter drives progress itself (FI_PROGRESS_MANUAL has nobody else
 * to do it), first by polling, then by sleeping in short slices: with
 * manual progress in mroce_cq_wait, which drives the device meanwhile and
 * returns as soon as a completion is waiting (so a long rendezvous keeps
 * moving at full speed); with FI_PROGRESS_AUTO on the condition, which
 * the progress thread's completions broadcast.  Either way a change made
 * by another thread is seen within a slice and the timeout is kept.
 *
 * A poll set lists CQs and counters of one domain; fi_poll runs progress
 * once and returns the contexts of the CQs holding entries and of the
 * counters whose values moved since the set last reported them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mroce_fi.h"

/* fi_cntr_wait polls (progress, then yields the core) this long before
 * it sleeps, and then sleeps at most MFI_CNTR_NAP_NS between its own
 * progress passes: a reply that comes soon (a ping-pong) is seen at once,
 * and a long wait does not keep a core busy. */
#define MFI_CNTR_SPIN_NS 2000000ull
#define MFI_CNTR_NAP_NS 1000000L

void mfi_cntr_report(struct mfi_cntr *c, int err)
{
    if (!c)
        return;
    if (err)
        c->err++;
    else
        c->val++;
    pthread_cond_broadcast(&c->cond);
}

static uint64_t cntr_read(struct fid_cntr *fc)
{
    struct mfi_cntr *c = (struct mfi_cntr *)fc;
    mfi_lock(c->dom);
    mfi_domain_progress(c->dom);
    uint64_t v = c->val;
    mfi_unlock(c->dom);
    return v;
}

static uint64_t cntr_readerr(struct fid_cntr *fc)
{
    struct mfi_cntr *c = (struct mfi_cntr *)fc;
    mfi_lock(c->dom);
    mfi_domain_progress(c->dom);
    uint64_t v = c->err;
    mfi_unlock(c->dom);
    return v;
}

/* Sets or adds to the success (err 0) or error count. */
static int cntr_change(struct fid_cntr *fc, uint64_t value, int add, int err)
{
    struct mfi_cntr *c = (struct mfi_cntr *)fc;
    mfi_lock(c->dom);
    uint64_t *p = err ? &c->err : &c->val;
    *p = add ? *p + value : value;
    pthread_cond_broadcast(&c->cond);
    mfi_unlock(c->dom);
    return 0;
}

static int cntr_add(struct fid_cntr *fc, uint64_t v)
{
    return cntr_change(fc, v, 1, 0);
}
static int cntr_set(struct fid_cntr *fc, uint64_t v)
{
    return cntr_change(fc, v, 0, 0);
}
static int cntr_adderr(struct fid_cntr *fc, uint64_t v)
{
    return cntr_change(fc, v, 1, 1);
}
static int cntr_seterr(struct fid_cntr *fc, uint64_t v)
{
    return cntr_change(fc, v, 0, 1);
}

/* Waits until the count reaches threshold (0), an error is counted
 * (-FI_EAVAIL), or timeout ms pass (-FI_ETIMEDOUT; < 0: no limit). */
static int cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
    struct mfi_cntr *c = (struct mfi_cntr *)fc;
    uint64_t deadline = timeout >= 0
                            ? mfi_now_ns() + (uint64_t)timeout * 1000000ull
                            : UINT64_MAX;
    int rc;
    mfi_lock(c->dom);
    uint64_t err0 = c->err, spin_until = mfi_now_ns() + MFI_CNTR_SPIN_NS;
    for (;;) {
        mfi_domain_progress(c->dom);
        if (c->val >= threshold) {
            rc = 0;
            break;
        }
        if (c->err != err0) {
            rc = -FI_EAVAIL;
            break;
        }
        uint64_t now = mfi_now_ns();
        if (now >= deadline) {
            rc = -FI_ETIMEDOUT;
            break;
        }
        if (now < spin_until) {
            mfi_unlock(c->dom);
            sched_yield();
            mfi_lock(c->dom);
            continue;
        }
        uint64_t nap = deadline - now < (uint64_t)MFI_CNTR_NAP_NS
                           ? deadline - now
                           : (uint64_t)MFI_CNTR_NAP_NS;
        if (c->dom->data_progress != FI_PROGRESS_AUTO) {
            /* Outside the lock, as the auto-progress thread waits. */
            mfi_unlock(c->dom);
            mroce_cq_wait(c->dom->cq,
                          nap >= 1000000 ? (int)(nap / 1000000) : 1);
            mfi_lock(c->dom);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += (long)nap;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&c->cond, &c->dom->lock, &ts);
    }
    mfi_unlock(c->dom);
    return rc;
}

static int cntr_close(struct fid *fid)
{
    struct mfi_cntr *c = (struct mfi_cntr *)fid;
    struct mfi_domain *d = c->dom;
    mfi_lock(d);
    if (c->users) {
        mfi_unlock(d);
        return -FI_EBUSY;
    }
    d->refs--;
    mfi_unlock(d);
    pthread_cond_destroy(&c->cond);
    free(c);
    return 0;
}

static struct fi_ops cntr_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = cntr_close,
    .bind = mfi_no_bind,
    .control = mfi_no_control,
    .ops_open = mfi_no_ops_open,
    .tostr = mfi_no_tostr,
    .ops_set = mfi_no_ops_set,
};

static struct fi_ops_cntr cntr_ops = {
    .size = sizeof(struct fi_ops_cntr),
    .read = cntr_read,
    .readerr = cntr_readerr,
    .add = cntr_add,
    .set = cntr_set,
    .wait = cntr_wait,
    .adderr = cntr_adderr,
    .seterr = cntr_seterr,
};

int mfi_cntr_open(struct fid_domain *fd, struct fi_cntr_attr *attr,
                  struct fid_cntr **fc, void *context)
{
    struct mfi_domain *d = (struct mfi_domain *)fd;
    if (!fc)
        return -FI_EINVAL;
    if (attr) {
        if (attr->events != FI_CNTR_EVENTS_COMP || attr->flags)
            return -FI_EINVAL;
        /* No file descriptor or wait set to sleep on: fi_cntr_wait sleeps
         * on a condition variable. */
        switch (attr->wait_obj) {
        case FI_WAIT_NONE:
        case FI_WAIT_UNSPEC:
        case FI_WAIT_YIELD:
        case FI_WAIT_MUTEX_COND:
            break;
        default:
            return -FI_ENOSYS;
        }
    }
    struct mfi_cntr *c = calloc(1, sizeof(*c));
    if (!c)
        return -FI_ENOMEM;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&c->cond, &ca);
    pthread_condattr_destroy(&ca);
    c->dom = d;
    c->cntr.fid.fclass = FI_CLASS_CNTR;
    c->cntr.fid.context = context;
    c->cntr.fid.ops = &cntr_fi_ops;
    c->cntr.ops = &cntr_ops;
    mfi_lock(d);
    d->refs++;
    mfi_unlock(d);
    *fc = &c->cntr;
    return 0;
}

/* --- poll sets --- */

struct mfi_poll_ent {
    struct fid *fid;
    uint64_t seen, seen_err; /* counter: values last reported */
};

struct mfi_poll {
    struct fid_poll poll;
    struct mfi_domain *dom;
    struct mfi_poll_ent *ent;
    size_t n, cap;
};

static int poll_run(struct fid_poll *fp, void **context, int count)
{
    struct mfi_poll *ps = (struct mfi_poll *)fp;
    if (count < 0 || (count && !context))
        return -FI_EINVAL;
    int n = 0;
    mfi_lock(ps->dom);
    mfi_domain_progress(ps->dom);
    for (size_t i = 0; i < ps->n && n < count; i++) {
        struct mfi_poll_ent *e = &ps->ent[i];
        if (e->fid->fclass == FI_CLASS_CQ) {
            struct mfi_cq *cq = (struct mfi_cq *)e->fid;
            if (cq->count || cq->err_head)
                context[n++] = e->fid->context;
        } else {
            struct mfi_cntr *c = (struct mfi_cntr *)e->fid;
            if (c->val != e->seen || c->err != e->seen_err) {
                e->seen = c->val;
                e->seen_err = c->err;
                context[n++] = e->fid->context;
            }
        }
    }
    mfi_unlock(ps->dom);
    return n;
}

/* The users count of a CQ or counter (it cannot close while listed). */
static int *member_users(struct fid *fid)
{
    return fid->fclass == FI_CLASS_CQ ? &((struct mfi_cq *)fid)->users
                                      : &((struct mfi_cntr *)fid)->users;
}

static struct mfi_domain *member_dom(struct fid *fid)
{
    return fid->fclass == FI_CLASS_CQ ? ((struct mfi_cq *)fid)->dom
                                      : ((struct mfi_cntr *)fid)->dom;
}

static int poll_add(struct fid_poll *fp, struct fid *fid, uint64_t flags)
{
    struct mfi_poll *ps = (struct mfi_poll *)fp;
    if (!fid || flags ||
        (fid->fclass != FI_CLASS_CQ && fid->fclass != FI_CLASS_CNTR) ||
        member_dom(fid) != ps->dom)
        return -FI_EINVAL;
    mfi_lock(ps->dom);
    int rc = 0;
    for (size_t i = 0; i < ps->n; i++)
        if (ps->ent[i].fid == fid)
            rc = -FI_EALREADY;
    if (!rc && ps->n == ps->cap) {
        size_t cap = ps->cap ? ps->cap * 2 : 4;
        struct mfi_poll_ent *e = realloc(ps->ent, cap * sizeof(*e));
        if (!e)
            rc = -FI_ENOMEM;
        else {
            ps->ent = e;
            ps->cap = cap;
        }
    }
    if (!rc) {
        struct mfi_poll_ent *e = &ps->ent[ps->n++];
        e->fid = fid;
        e->seen = e->seen_err = 0;
        if (fid->fclass == FI_CLASS_CNTR) {
            e->seen = ((struct mfi_cntr *)fid)->val;
            e->seen_err = ((struct mfi_cntr *)fid)->err;
        }
        (*member_users(fid))++;
    }
    mfi_unlock(ps->dom);
    return rc;
}

static int poll_del(struct fid_poll *fp, struct fid *fid, uint64_t flags)
{
    struct mfi_poll *ps = (struct mfi_poll *)fp;
    if (!fid || flags)
        return -FI_EINVAL;
    mfi_lock(ps->dom);
    int rc = -FI_ENOENT;
    for (size_t i = 0; i < ps->n; i++)
        if (ps->ent[i].fid == fid) {
            (*member_users(fid))--;
            ps->ent[i] = ps->ent[--ps->n];
            rc = 0;
            break;
        }
    mfi_unlock(ps->dom);
    return rc;
}

static int poll_close(struct fid *fid)
{
    struct mfi_poll *ps = (struct mfi_poll *)fid;
    struct mfi_domain *d = ps->dom;
    mfi_lock(d);
    for (size_t i = 0; i < ps->n; i++)
        (*member_users(ps->ent[i].fid))--;
    d->refs--;
    mfi_unlock(d);
    free(ps->ent);
    free(ps);
    return 0;
}

static struct fi_ops poll_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = poll_close,
    .bind = mfi_no_bind,
    .control = mfi_no_control,
    .ops_open = mfi_no_ops_open,
    .tostr = mfi_no_tostr,
    .ops_set = mfi_no_ops_set,
};

static struct fi_ops_poll poll_ops = {
    .size = sizeof(struct fi_ops_poll),
    .poll = poll_run,
    .poll_add = poll_add,
    .poll_del = poll_del,
};

int mfi_poll_open(struct fid_domain *fd, struct fi_poll_attr *attr,
                  struct fid_poll **fp)
{
    struct mfi_domain *d = (struct mfi_domain *)fd;
    if (!fp || (attr && attr->flags))
        return -FI_EINVAL;
    struct mfi_poll *ps = calloc(1, sizeof(*ps));
    if (!ps)
        return -FI_ENOMEM;
    ps->dom = d;
    ps->poll.fid.fclass = FI_CLASS_POLL;
    ps->poll.fid.ops = &poll_fi_ops;
    ps->poll.ops = &poll_ops;
    mfi_lock(d);
    d->refs++;
    mfi_unlock(d);
    *fp = &ps->poll;
    return 0;
}
