/*
 * async.c - asynchronous events: ibv_get_async_event, ibv_ack_async_event
 * and the context's async_fd.
 *
 * The context keeps its RC QPs in a list (mv_async_add_qp at creation) and
 * a queue of at most MV_ASYNC_MAX events; async_fd is the read end of a
 * pipe that holds one byte per queued event, so it is readable, for
 * poll() and epoll users, while an event waits.  A scan (mv_async_scan)
 * compares each QP's libmroce state with the one it saw last and queues:
 *   - IBV_EVENT_COMM_EST once, when MetaRoCE's handshake has connected the
 *     QP (RTR on both sides is only where verbs starts it, qp.c);
 *   - IBV_EVENT_QP_FATAL once, when the QP has gone to ERROR without the
 *     application asking (ibv_modify_qp to IBV_QPS_ERR does not count):
 *     retries exhausted, the peer's access or protocol NAK, the handshake
 *     timing out.  libmroce keeps no finer cause, so QP_REQ_ERR and
 *     QP_ACCESS_ERR are not told apart from it; the error completions say
 *     what failed.
 * Scans come at most every MV_SCAN_NS from ibv_poll_cq, or, while the
 * program does not call it, from the progress helper each time it is
 * about to wait; at once from ibv_poll_cq on any unsuccessful completion;
 * and from ibv_get_async_event before it waits (and every 10 ms
 * meanwhile, for contexts without the helper).  Port and CQ
 * events are never queued: the port has no link to lose (it is up while
 * the device is open) and a CQ never overruns (libmroce grows it rather
 * than drop a completion).  A QP's queued events go with it when it is
 * destroyed; a queue that is full drops new events and counts them
 * (async_dropped).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "verbs_int.h"

#define MV_SCAN_NS 1000000ull /* the helper scans at most this often */

int mv_async_init(struct mv_context *ctx)
{
    struct mv_async *a = &ctx->async;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    /* The write end never blocks (the queue bounds it); the read end
     * blocks unless the application sets O_NONBLOCK, as with verbs. */
    (void)fcntl(p[1], F_SETFL, O_NONBLOCK);
    a->rfd = p[0];
    a->wfd = p[1];
    pthread_mutex_init(&a->lock, NULL);
    return 0;
}

void mv_async_fini(struct mv_context *ctx)
{
    struct mv_async *a = &ctx->async;
    close(a->rfd);
    close(a->wfd);
    pthread_mutex_destroy(&a->lock);
}

/* Queues an event; lock held. */
static void push(struct mv_async *a, enum ibv_event_type type,
                 struct ibv_qp *qp)
{
    if (a->n == MV_ASYNC_MAX) {
        a->dropped++;
        return;
    }
    struct ibv_async_event *e = &a->q[(a->head + a->n) % MV_ASYNC_MAX];
    memset(e, 0, sizeof(*e));
    e->event_type = type;
    e->element.qp = qp;
    a->n++;
    char b = 1;
    if (write(a->wfd, &b, 1) < 0) {
        /* Cannot fill: the pipe holds 64 KiB, the queue MV_ASYNC_MAX. */
    }
}

void mv_async_add_qp(struct mv_context *ctx, struct mv_qp *q)
{
    struct mv_async *a = &ctx->async;
    pthread_mutex_lock(&a->lock);
    q->anext = a->qps;
    a->qps = q;
    pthread_mutex_unlock(&a->lock);
}

void mv_async_del_qp(struct mv_context *ctx, struct mv_qp *q)
{
    struct mv_async *a = &ctx->async;
    pthread_mutex_lock(&a->lock);
    for (struct mv_qp **p = &a->qps; *p; p = &(*p)->anext)
        if (*p == q) {
            *p = q->anext;
            break;
        }
    /* Its queued events go with it (compacting the ring in order). */
    unsigned keep = 0;
    for (unsigned i = 0; i < a->n; i++) {
        struct ibv_async_event e = a->q[(a->head + i) % MV_ASYNC_MAX];
        if (e.element.qp == &q->qp) {
            char b;
            if (read(a->rfd, &b, 1) < 0) {
                /* Cannot fail: one byte per queued event. */
            }
            continue;
        }
        a->q[(a->head + keep++) % MV_ASYNC_MAX] = e;
    }
    a->n = keep;
    pthread_mutex_unlock(&a->lock);
}

void mv_async_scan(struct mv_context *ctx)
{
    struct mv_async *a = &ctx->async;
    pthread_mutex_lock(&a->lock);
    for (struct mv_qp *q = a->qps; q; q = q->anext) {
        enum mroce_qp_state st = mroce_qp_get_state(q->mqp);
        if (!q->established &&
            (st == MROCE_QPS_RTS || st == MROCE_QPS_CLOSING ||
             st == MROCE_QPS_CLOSED)) {
            q->established = 1;
            push(a, IBV_EVENT_COMM_EST, &q->qp);
        }
        if (st == MROCE_QPS_ERROR && !q->fatal &&
            !atomic_load_explicit(&q->user_err, memory_order_acquire)) {
            q->fatal = 1;
            push(a, IBV_EVENT_QP_FATAL, &q->qp);
        }
    }
    pthread_mutex_unlock(&a->lock);
}

void mv_async_tick(struct mv_context *ctx, uint64_t now, int helper)
{
    struct mv_async *a = &ctx->async;
    uint64_t last = atomic_load_explicit(&a->scan_ns, memory_order_relaxed);
    if (now - last < MV_SCAN_NS)
        return;
    /* The helper leaves the scan to an application that calls in (its
     * ibv_poll_cq ticks too): taking the device lock from under a polling
     * program would make it wait for a wake-up. */
    if (helper &&
        now - atomic_load_explicit(&ctx->app_ns, memory_order_relaxed) <
            MV_SCAN_NS)
        return;
    if (!atomic_compare_exchange_strong(&a->scan_ns, &last, now))
        return; /* another thread scans */
    mv_async_scan(ctx);
}

/* Takes the oldest event into *event; 0, or -1 when none waits. */
static int pop(struct mv_async *a, struct ibv_async_event *event)
{
    pthread_mutex_lock(&a->lock);
    int rc = -1;
    if (a->n) {
        *event = a->q[a->head];
        a->head = (a->head + 1) % MV_ASYNC_MAX;
        a->n--;
        char b;
        if (read(a->rfd, &b, 1) < 0) {
            /* Cannot fail: one byte per queued event. */
        }
        rc = 0;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

int ibv_get_async_event(struct ibv_context *context,
                        struct ibv_async_event *event)
{
    if (!context || !event) {
        errno = EINVAL;
        return -1;
    }
    struct mv_context *ctx = mv_ctx(context);
    struct mv_async *a = &ctx->async;
    int fl = fcntl(a->rfd, F_GETFL);
    int block = fl >= 0 && !(fl & O_NONBLOCK);
    for (;;) {
        mv_async_scan(ctx);
        if (pop(a, event) == 0)
            return 0;
        if (!block) {
            errno = EAGAIN;
            return -1;
        }
        /* Without the helper nothing else scans: look again every 10 ms,
         * driving progress meanwhile when nothing else does. */
        if (!ctx->has_helper && !ctx->lib_thread)
            mroce_device_progress(ctx->mdev);
        struct pollfd p = {.fd = a->rfd, .events = POLLIN};
        if (poll(&p, 1, 10) < 0 && errno != EINTR)
            return -1;
    }
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
    if (!event)
        return;
    switch (event->event_type) {
    case IBV_EVENT_COMM_EST:
    case IBV_EVENT_QP_FATAL: {
        struct ibv_qp *qp = event->element.qp;
        pthread_mutex_lock(&qp->mutex);
        qp->events_completed++;
        pthread_cond_signal(&qp->cond);
        pthread_mutex_unlock(&qp->mutex);
        break;
    }
    default:
        break;
    }
}
