/*
 * progress.c - the context's progress helper: a thread that moves packets
 * while the application is not calling into the library.
 *
 * Verbs programs expect the adapter to answer on its own: the target of an
 * RDMA WRITE or READ posts nothing and polls nothing, and perftest's
 * servers wait on a TCP socket meanwhile.  libmroce's APP progress mode
 * moves packets only inside the application's calls (the fastest mode when
 * it polls), so each context runs this helper.  It waits on the device's
 * event fd (mroce_device_fd: readable while a packet or a timer is due);
 * woken, it leaves the application MV_IDLE_NS to take the work (its next
 * poll drains the fd) and only if the fd is still readable then drives
 * progress itself.  Each time the application took the work, the helper
 * looks away longer before it watches the fd again (doubling up to
 * MV_BACKOFF_MAX_NS), so a polling application is not preempted by a
 * wake-up per packet; each time it had to step in, it watches at once
 * again, and without leaving MV_IDLE_NS first (a program that polls
 * memory, as perftest's WRITE latency test does, or the passive side of
 * READs never calls in while it waits).
 * MROCE_IBV_PROGRESS=thread uses libmroce's progress thread instead (no
 * helper), =app neither (only the application's calls progress).
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "verbs_int.h"

#define MV_IDLE_NS 20000           /* due work waits this for the app */
#define MV_BACKOFF_MAX_NS 1000000L /* the longest look-away */

static int readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, timeout_ms) > 0;
}

static void *helper(void *arg)
{
    struct mv_context *ctx = arg;
    int fd = mroce_device_fd(ctx->mdev);
    if (fd < 0)
        return NULL;
    long backoff = 0; /* ns to sleep before watching the fd again */
    int stepped = 0;  /* the helper had to step in last time */
    while (!atomic_load(&ctx->stop)) {
        if (backoff) {
            struct timespec ts = {0, backoff};
            nanosleep(&ts, NULL);
        }
        if (!readable(fd, 10))
            continue;
        if (!stepped) {
            struct timespec ts = {0, MV_IDLE_NS};
            nanosleep(&ts, NULL);
        }
        if (!readable(fd, 0)) {
            stepped = 0;
            /* The application took it: watch less often. */
            backoff = backoff ? backoff * 2 : MV_IDLE_NS;
            if (backoff > MV_BACKOFF_MAX_NS)
                backoff = MV_BACKOFF_MAX_NS;
            continue;
        }
        mroce_device_progress(ctx->mdev);
        backoff = 0;
        stepped = 1;
    }
    return NULL;
}

int mv_progress_start(struct mv_context *ctx)
{
    atomic_store(&ctx->stop, 0);
    if (pthread_create(&ctx->helper, NULL, helper, ctx) != 0)
        return -1;
    ctx->has_helper = 1;
    return 0;
}

void mv_progress_stop(struct mv_context *ctx)
{
    if (!ctx->has_helper)
        return;
    atomic_store(&ctx->stop, 1);
    pthread_join(ctx->helper, NULL);
    ctx->has_helper = 0;
}
