/*
 * progress.c - the context's progress helper: a thread that moves packets
 * while the application is not calling into the library.
 *
 * libmroce runs in APP progress mode: the application's own calls
 * (ibv_poll_cq above all, which reaches mroce_poll_cq) drive the engine,
 * with no thread in the way, the fastest path on few cores.  But verbs
 * programs expect the adapter to answer on its own: the target of an RDMA
 * WRITE or READ posts nothing and polls nothing, perftest's servers wait
 * on a TCP socket meanwhile, and a program that waits on a completion
 * channel sleeps in poll().  So each context runs this helper, for
 * liveness only.
 *
 * Every datapath call of the application (ibv_poll_cq, ibv_post_send,
 * ibv_post_recv) records its time in the context's app_ns (mv_app_call).
 * The helper sleeps on the device's event fd (readable while a packet or
 * a timer is due).  Woken, it leaves the work to an application that
 * called within MV_GRACE_NS and calls again within MV_GRACE_NS more: that
 * one polls, and its next call drives progress; the helper then looks
 * away before it watches the fd again, doubling from MV_LOOK_MIN_NS up to
 * MV_LOOK_MAX_NS while the application keeps taking the work, so a
 * polling application is not preempted by a wake-up per packet nor kept
 * waiting for the device lock.  Otherwise the application has stopped
 * calling (it polls memory, as perftest's WRITE latency test does, or it
 * sleeps on a completion channel or a socket) and the helper serves: it
 * drives progress until the due work is done, or, once the application
 * has not called for MV_AWAY_NS (a passive target), it also spins
 * MV_SPIN_NS after each packet for the next one, yielding its core to
 * any runnable thread meanwhile; it stops serving as soon as the
 * application calls in again.
 * MROCE_IBV_PROGRESS=thread uses libmroce's progress thread instead (no
 * helper), =app neither (only the application's calls progress).
 */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <time.h>

#include "verbs_int.h"

#define MV_GRACE_NS 5000L      /* a polling application calls this often */
#define MV_LOOK_MIN_NS 10000L  /* the first look-away */
#define MV_LOOK_MAX_NS 500000L /* the longest look-away */
#define MV_SPIN_NS 50000ull    /* serving: spin this long after work */
#define MV_AWAY_NS 1000000ull  /* no call this long: the app is away */
#define MV_BLOCK_MS 10         /* sleep on the fd at most this long */

uint64_t mv_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t app_ns(struct mv_context *ctx)
{
    return atomic_load_explicit(&ctx->app_ns, memory_order_relaxed);
}

static int wait_readable(int fd, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, timeout_ms) > 0;
}

static void sleep_ns(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* Drives progress until the application calls in again (app_ns moves
 * from seen) or the context stops; without spin, only until the due work
 * is done. */
static void serve(struct mv_context *ctx, int fd, uint64_t seen, int spin)
{
    uint64_t last = mv_now_ns();
    while (!atomic_load_explicit(&ctx->stop, memory_order_relaxed) &&
           app_ns(ctx) == seen) {
        if (mroce_device_progress(ctx->mdev) > 0) {
            last = mv_now_ns();
            continue;
        }
        if (!spin)
            return;
        if (mv_now_ns() - last < MV_SPIN_NS) {
            /* A runnable application thread on this core goes first. */
            sched_yield();
            continue;
        }
        if (wait_readable(fd, MV_BLOCK_MS))
            last = mv_now_ns();
    }
}

static void *helper(void *arg)
{
    struct mv_context *ctx = arg;
    int fd = mroce_device_fd(ctx->mdev);
    if (fd < 0)
        return NULL;
    /* Short sleeps are meant as given, not 50 us later. */
    (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    long look = 0; /* ns to look away before watching the fd again */
    while (!atomic_load(&ctx->stop)) {
        mv_async_tick(ctx);
        if (look)
            sleep_ns(look);
        if (!wait_readable(fd, MV_BLOCK_MS))
            continue;
        uint64_t seen = app_ns(ctx);
        if (mv_now_ns() - seen < MV_GRACE_NS) {
            /* It has just called: give it its turn at the work. */
            sleep_ns(MV_GRACE_NS);
            if (app_ns(ctx) != seen) {
                /* It polls: watch less often while it keeps doing so. */
                look = look ? look * 2 : MV_LOOK_MIN_NS;
                if (look > MV_LOOK_MAX_NS)
                    look = MV_LOOK_MAX_NS;
                continue;
            }
        }
        look = 0;
        serve(ctx, fd, seen, mv_now_ns() - seen > MV_AWAY_NS);
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
