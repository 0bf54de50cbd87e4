/*
 * progress.c - the context's progress helper: a thread that moves packets
 * while the application is not calling into the library.
 *
 * Verbs programs expect the adapter to answer on its own: the target of an
 * RDMA WRITE or READ posts nothing and polls nothing, and perftest's
 * servers wait on a TCP socket meanwhile.  libmroce's APP progress mode
 * moves packets only inside the application's calls (the fastest mode when
 * it polls), so each context runs this helper: it sleeps on the device's
 * event fd (mroce_device_fd: readable when a packet or a timer is due) and,
 * when woken, looks whether the application has called in (post, poll)
 * within the last MV_IDLE_NS; only if it has not does the helper drive
 * progress itself, and then at once each time it wakes until the
 * application calls again (a program that polls memory, as perftest's
 * WRITE latency test does, never calls).  A polling application keeps the
 * helper out of its way, an absent one is stood in for.
 * MROCE_IBV_PROGRESS=thread uses libmroce's progress thread instead (no
 * helper), =app neither (only the application's calls progress).
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "verbs_int.h"

#define MV_IDLE_NS 50000

static void *helper(void *arg)
{
    struct mv_context *ctx = arg;
    int fd = mroce_device_fd(ctx->mdev);
    if (fd < 0)
        return NULL;
    unsigned long last = atomic_load(&ctx->calls);
    int absent = 0; /* no application call since the helper last looked */
    while (!atomic_load(&ctx->stop)) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, 10);
        unsigned long now = atomic_load(&ctx->calls);
        absent = now == last && (absent || r == 0);
        last = now;
        if (r <= 0)
            continue;
        if (!absent) {
            /* Give a polling application MV_IDLE_NS to take it. */
            struct timespec ts = {0, MV_IDLE_NS};
            nanosleep(&ts, NULL);
            now = atomic_load(&ctx->calls);
            if (now != last) {
                last = now;
                continue;
            }
            absent = 1;
        }
        mroce_device_progress(ctx->mdev);
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
