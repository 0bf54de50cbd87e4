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
 * sleeps on a completion channel or a socket) and the helper serves.  An
 * application that called within MV_AWAY_NS gets one progress round
 * each time: the ACKs that round holds for the application's reply
 * (libmroce's ACK deferral) stay held until the reply (perftest's WRITE
 * latency test answers each WRITE it sees in memory with one), so the
 * peer's poll finds the reply and the ACK together instead of the ACK
 * alone, which would send it back to polling memory and to its own
 * helper.  An application that has not called for MV_AWAY_NS (a passive
 * target) gets more: the helper drives progress until the due work is
 * done and then spins MV_SPIN_NS after each packet for the next one,
 * yielding its core to any runnable thread meanwhile, unless the
 * application's thread has spent most of its time on a core since the
 * last look (app_busy: it polls memory, and a spinning helper would take
 * the core it needs); it stops serving as soon as the application calls
 * in again.
 *
 * Real-time priority, opt-in (MROCE_IBV_HELPER_RT=1, where the process may:
 * root, CAP_SYS_NICE or an RLIMIT_RTPRIO; a refusal keeps the normal
 * policy silently): the helper then runs at SCHED_FIFO priority MV_RT_PRIO,
 * so that a wake-up preempts the application's loop at once.  It never
 * spins at that priority: it blocks in poll() on the fd or sleeps; its
 * serving drops to SCHED_OTHER before the spin after work and once it has
 * moved packets for MV_RT_BUDGET_NS without a break, and goes back to
 * SCHED_FIFO before it blocks again.  Off by default: on the 2-core host
 * it was measured on, with other work keeping both cores busy, it showed
 * no gain in perftest's latency (bench/LOG.md, 2026-12-03).
 *
 * MROCE_IBV_PROGRESS=thread uses libmroce's progress thread instead (no
 * helper), =app neither (only the application's calls progress).
 */
#define _GNU_SOURCE /* gettid */
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "verbs_int.h"

#define MV_GRACE_NS 5000L         /* a polling application calls this often */
#define MV_LOOK_MIN_NS 10000L     /* the first look-away */
#define MV_LOOK_MAX_NS 500000L    /* the longest look-away */
#define MV_SPIN_NS 50000ull       /* serving: spin this long after work */
#define MV_AWAY_NS 1000000ull     /* no call this long: the app is away */
#define MV_BLOCK_MS 10            /* sleep on the fd at most this long */
#define MV_RT_PRIO 1              /* SCHED_FIFO priority, the lowest */
#define MV_RT_BUDGET_NS 200000ull /* real-time serving without a break */

int mv_tid(void)
{
    static __thread int tid;
    if (!tid)
        tid = (int)gettid();
    return tid;
}

/* CPU time of thread tid of this process (its CPUCLOCK_SCHED clock, the
 * kernel's encoding of a thread's clock id); 0 when it has gone. */
static uint64_t thread_cpu_ns(int tid)
{
    struct timespec ts;
    clockid_t c = (clockid_t)((~(unsigned)tid << 3) | 6);
    if (!tid || clock_gettime(c, &ts))
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Whether the application's thread ran for most of the time since the
 * last sample *s: one that has stopped calling yet keeps its core (it
 * polls memory, as perftest's WRITE latency test does) needs that core,
 * and a helper spinning beside it would take it. */
struct cpu_sample {
    int tid;
    uint64_t wall, cpu;
};

static int app_busy(struct mv_context *ctx, struct cpu_sample *s)
{
    int tid = atomic_load_explicit(&ctx->app_tid, memory_order_relaxed);
    uint64_t wall = mv_now_ns(), cpu = thread_cpu_ns(tid);
    int busy = tid == s->tid && cpu && wall > s->wall &&
               cpu - s->cpu > (wall - s->wall) / 2;
    *s = (struct cpu_sample){tid, wall, cpu};
    return busy;
}

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

/* The helper's scheduling: rt (0/1) says whether it may run at real-time
 * priority, on whether it does now. */
struct prio {
    int rt, on;
};

/* SCHED_FIFO at MV_RT_PRIO (fifo) or back to SCHED_OTHER, when rt. */
static void set_fifo(struct prio *p, int fifo)
{
    if (!p->rt || p->on == fifo)
        return;
    struct sched_param sp = {.sched_priority = fifo ? MV_RT_PRIO : 0};
    if (pthread_setschedparam(pthread_self(), fifo ? SCHED_FIFO : SCHED_OTHER,
                              &sp) == 0)
        p->on = fifo;
    else if (fifo)
        p->rt = 0; /* refused: stay at the normal policy */
}

/* MROCE_IBV_HELPER_RT=1: real-time priority where permitted. */
static int rt_wanted(void)
{
    const char *e = getenv("MROCE_IBV_HELPER_RT");
    return e && strcmp(e, "1") == 0;
}

/* Drives progress until the application calls in again (app_ns moves
 * from seen) or the context stops; without spin, only until the due work
 * is done.  Real-time priority covers the due work alone, at most
 * MV_RT_BUDGET_NS of it. */
static void serve(struct mv_context *ctx, int fd, uint64_t seen, int spin,
                  struct prio *pr)
{
    uint64_t last = mv_now_ns(), start = last;
    while (!atomic_load_explicit(&ctx->stop, memory_order_relaxed) &&
           app_ns(ctx) == seen) {
        if (mroce_device_progress(ctx->mdev) > 0) {
            if (!spin)
                return; /* one round: its held ACKs wait for the reply */
            last = mv_now_ns();
            if (pr->on && last - start > MV_RT_BUDGET_NS)
                set_fifo(pr, 0);
            continue;
        }
        if (!spin)
            return;
        set_fifo(pr, 0); /* never spin at real-time priority */
        if (mv_now_ns() - last < MV_SPIN_NS) {
            /* A runnable application thread on this core goes first. */
            sched_yield();
            continue;
        }
        set_fifo(pr, 1);                    /* blocks next: wake at once */
        mv_async_tick(ctx, mv_now_ns(), 1); /* events: the app is away */
        if (wait_readable(fd, MV_BLOCK_MS))
            last = start = mv_now_ns();
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
    struct prio pr = {rt_wanted(), 0};
    struct cpu_sample cs = {0, 0, 0};
    while (!atomic_load(&ctx->stop)) {
        set_fifo(&pr, 1); /* blocks (or sleeps) next: wake at once */
        mv_async_tick(ctx, mv_now_ns(), 1);
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
        int away = mv_now_ns() - seen > MV_AWAY_NS;
        serve(ctx, fd, seen, away && !app_busy(ctx, &cs), &pr);
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
