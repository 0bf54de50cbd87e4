/*
 * resources.c - protection domains, memory regions and completion queues:
 * thin, checked wrappers over the engine's objects, plus the CQ's eventfd
 * for event-driven users and mroce_cq_wait() for blocking ones.
 *
 * A PD is a number the engine stamps on MRs and QPs (mre_mr_reg_pd,
 * qp attr.pd): remote accesses through a QP may only use regions of its PD.
 * Registration refuses memory that is not mapped with the rights it grants
 * (memcheck.c), which the engine, making no OS calls, cannot see.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "lib_int.h"

/* --- protection domains --- */

int mroce_pd_alloc(mroce_device *dev, mroce_pd **ppd)
{
    int rc = lib_check(dev, MAGIC_DEV);
    if (rc < 0)
        return rc;
    if (!ppd)
        return MROCE_EINVAL;
    mroce_pd *pd = calloc(1, sizeof(*pd));
    if (!pd)
        return MROCE_ENOMEM;
    pd->h.magic = MAGIC_PD;
    pd->dev = dev;
    lib_lock(dev);
    pd->num = dev->next_pd++;
    lib_list_add(&dev->pds, &pd->h);
    lib_unlock(dev);
    *ppd = pd;
    return 0;
}

int mroce_pd_free(mroce_pd *pd)
{
    int rc = lib_check(pd, MAGIC_PD);
    if (rc < 0)
        return rc;
    mroce_device *dev = pd->dev;
    lib_lock(dev);
    if (pd->users) {
        lib_unlock(dev);
        return MROCE_EBUSY;
    }
    lib_list_del(&dev->pds, &pd->h);
    lib_bury(pd);
    lib_unlock(dev);
    return 0;
}

/* --- memory regions --- */

int mroce_reg_mr(mroce_pd *pd, void *addr, size_t length, unsigned access,
                 mroce_mr **pmr)
{
    int rc = lib_check(pd, MAGIC_PD);
    if (rc < 0)
        return rc;
    if (!pmr)
        return MROCE_EINVAL;
    /* The engine's arithmetic checks first (SEM-28 (a)-(c)), then whether
     * the memory is really there with the rights asked (SEM-28 (d), (e)):
     * a write right of any kind means the engine will write into it. */
    rc = mre_mr_reg_check(addr, length, access);
    if (rc == 0)
        rc = lib_mem_check(addr, length,
                           (access & (MROCE_ACCESS_LOCAL_WRITE |
                                      MROCE_ACCESS_REMOTE_WRITE |
                                      MROCE_ACCESS_REMOTE_ATOMIC)) != 0);
    if (rc < 0)
        return rc;
    mroce_mr *mr = calloc(1, sizeof(*mr));
    if (!mr)
        return MROCE_ENOMEM;
    mroce_device *dev = pd->dev;
    lib_lock(dev);
    rc = mre_mr_reg_pd(dev->ep, pd->num, addr, length, access, &mr->eng);
    if (rc < 0) {
        lib_unlock(dev);
        free(mr);
        return rc;
    }
    mr->h.magic = MAGIC_MR;
    mr->dev = dev;
    mr->pd = pd;
    mr->info.addr = addr;
    mr->info.length = length;
    mr->info.lkey = mre_mr_lkey(mr->eng);
    mr->info.rkey = mre_mr_rkey(mr->eng);
    mr->info.access = access;
    pd->users++;
    lib_list_add(&dev->mrs, &mr->h);
    lib_unlock(dev);
    *pmr = mr;
    return 0;
}

int mroce_dereg_mr(mroce_mr *mr)
{
    int rc = lib_check(mr, MAGIC_MR);
    if (rc < 0)
        return rc;
    mroce_device *dev = mr->dev;
    lib_lock(dev);
    rc = mre_mr_dereg(mr->eng);
    if (rc == 0) {
        mr->pd->users--;
        lib_list_del(&dev->mrs, &mr->h);
        lib_bury(mr);
    }
    lib_unlock(dev);
    return rc;
}

void mroce_mr_query(const mroce_mr *mr, struct mroce_mr_info *info)
{
    if (!info)
        return;
    if (lib_check(mr, MAGIC_MR) < 0) {
        memset(info, 0, sizeof(*info));
        return;
    }
    *info = mr->info;
}

uint32_t mroce_mr_lkey(const mroce_mr *mr)
{
    return lib_check(mr, MAGIC_MR) < 0 ? 0 : mr->info.lkey;
}

uint32_t mroce_mr_rkey(const mroce_mr *mr)
{
    return lib_check(mr, MAGIC_MR) < 0 ? 0 : mr->info.rkey;
}

/* --- completion queues --- */

int mroce_create_cq(mroce_device *dev, uint32_t depth, mroce_cq **pcq)
{
    int rc = lib_check(dev, MAGIC_DEV);
    if (rc < 0)
        return rc;
    if (!pcq)
        return MROCE_EINVAL;
    mroce_cq *cq = calloc(1, sizeof(*cq));
    if (!cq)
        return MROCE_ENOMEM;
    lib_lock(dev);
    rc = mre_cq_new(dev->ep, depth, &cq->eng);
    if (rc < 0) {
        lib_unlock(dev);
        free(cq);
        return rc;
    }
    cq->h.magic = MAGIC_CQ;
    cq->dev = dev;
    cq->efd = -1;
    lib_list_add(&dev->cqs, &cq->h);
    lib_unlock(dev);
    *pcq = cq;
    return 0;
}

void lib_cq_release(mroce_cq *cq)
{
    if (cq->efd >= 0) {
        close(cq->efd);
        cq->efd = -1;
        cq->dev->ncq_armed--;
    }
    lib_bury(cq);
}

int mroce_destroy_cq(mroce_cq *cq)
{
    int rc = lib_check(cq, MAGIC_CQ);
    if (rc < 0)
        return rc;
    mroce_device *dev = cq->dev;
    lib_lock(dev);
    if (cq->users) {
        lib_unlock(dev);
        return MROCE_EBUSY;
    }
    rc = mre_cq_del(cq->eng);
    if (rc == 0) {
        lib_list_del(&dev->cqs, &cq->h);
        lib_cq_release(cq);
    }
    lib_unlock(dev);
    return rc;
}

int mroce_poll_cq(mroce_cq *cq, int n, struct mroce_wc *wc)
{
    int rc = lib_check(cq, MAGIC_CQ);
    if (rc < 0)
        return rc;
    if (n < 0 || (n > 0 && !wc))
        return MROCE_EINVAL;
    mroce_device *dev = cq->dev;
    lib_lock(dev);
    int k = mre_cq_poll(cq->eng, n, wc);
    if (k == 0 && n > 0 && dev->attr.progress == MROCE_PROGRESS_APP) {
        lib_progress_locked(dev);
        k = mre_cq_poll(cq->eng, n, wc);
    }
    if (!mre_cq_count(cq->eng))
        cq->signaled = 0; /* seen empty: the next completion signals */
    int yield = k == 0 && lib_idle_take_locked(dev);
    lib_unlock(dev);
    lib_idle_yield(yield);
    return k;
}

/* Creates the eventfd on first use.  Lock held. */
static int cq_arm_locked(mroce_cq *cq)
{
    if (cq->efd >= 0)
        return 0;
    cq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (cq->efd < 0)
        return MROCE_ESOCKET;
    cq->dev->ncq_armed++;
    cq->signaled = 0;
    lib_signal_cqs_locked(cq->dev);
    return 0;
}

int mroce_cq_fd(mroce_cq *cq)
{
    int rc = lib_check(cq, MAGIC_CQ);
    if (rc < 0)
        return rc;
    lib_lock(cq->dev);
    rc = cq_arm_locked(cq);
    int fd = cq->efd;
    lib_unlock(cq->dev);
    return rc < 0 ? rc : fd;
}

int mroce_cq_arm(mroce_cq *cq)
{
    int rc = lib_check(cq, MAGIC_CQ);
    if (rc < 0)
        return rc;
    lib_lock(cq->dev);
    rc = cq_arm_locked(cq);
    cq->sol_only = 0;
    if (rc == 0) {
        rc = (int)mre_cq_count(cq->eng);
        uint64_t v = 1;
        if (rc == 0) {
            /* Empty: an earlier signal is stale; the next one counts. */
            if (read(cq->efd, &v, sizeof(v)) < 0) {
                /* EAGAIN: nothing stale */
            }
            cq->signaled = 0;
        } else {
            if (write(cq->efd, &v, sizeof(v)) < 0) {
                /* Only fails if the counter would overflow: readable. */
            }
            cq->signaled = 1;
        }
    }
    lib_unlock(cq->dev);
    return rc;
}

int mroce_cq_arm_solicited(mroce_cq *cq)
{
    int rc = lib_check(cq, MAGIC_CQ);
    if (rc < 0)
        return rc;
    lib_lock(cq->dev);
    rc = cq_arm_locked(cq);
    if (rc == 0) {
        /* What is already queued does not count: only the next one. */
        uint64_t v;
        if (read(cq->efd, &v, sizeof(v)) < 0) {
            /* EAGAIN: nothing stale */
        }
        cq->signaled = 0;
        cq->sol_only = 1;
        cq->sol_mark = mre_cq_solicited(cq->eng);
        rc = (int)mre_cq_count(cq->eng);
    }
    lib_unlock(cq->dev);
    return rc;
}

void mroce_cq_ack_event(mroce_cq *cq)
{
    if (lib_check(cq, MAGIC_CQ) < 0 || cq->efd < 0)
        return;
    uint64_t v;
    if (read(cq->efd, &v, sizeof(v)) < 0) {
        /* EAGAIN: nothing to acknowledge */
    }
}

static int cq_nonempty(void *arg)
{
    return mre_cq_count(((mroce_cq *)arg)->eng) != 0;
}

int mroce_cq_wait(mroce_cq *cq, int timeout_ms)
{
    int rc = lib_check(cq, MAGIC_CQ);
    if (rc < 0)
        return rc;
    mroce_device *dev = cq->dev;
    mroce_tstamp deadline = lib_deadline(timeout_ms);
    if (dev->attr.progress == MROCE_PROGRESS_APP)
        return lib_wait(dev, cq_nonempty, cq, deadline);
    /* Thread mode: the progress thread writes the eventfd when the CQ
     * turns non-empty; sleep on it. */
    lib_lock(dev);
    rc = cq_arm_locked(cq);
    lib_unlock(dev);
    if (rc < 0)
        return rc;
    for (;;) {
        lib_lock(dev);
        if (mre_cq_count(cq->eng)) {
            lib_unlock(dev);
            return 1;
        }
        /* Empty: consume a stale event so poll() below really waits, and
         * let the next completion signal again. */
        uint64_t v;
        if (read(cq->efd, &v, sizeof(v)) < 0) {
        }
        cq->signaled = 0;
        int fd = cq->efd;
        lib_unlock(dev);
        mroce_tstamp now = lib_now();
        if (now >= deadline)
            return 0;
        struct pollfd p = {fd, POLLIN, 0};
        struct timespec ts, *tsp = NULL;
        if (deadline != MROCE_TSTAMP_INF) {
            uint64_t ns = deadline - now;
            ts.tv_sec = (time_t)(ns / 1000000000ull);
            ts.tv_nsec = (long)(ns % 1000000000ull);
            tsp = &ts;
        }
        (void)ppoll(&p, 1, tsp, NULL);
    }
}
