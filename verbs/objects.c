/*
 * objects.c - protection domains, memory regions, completion queues and
 * completion channels over libmroce's, and the context's ops table.
 *
 * Memory access flags have the same values in both APIs; MetaRoCE has no
 * memory windows, on-demand paging, zero-based or DMA-buf regions, and
 * refuses them (EOPNOTSUPP).
 *
 * A completion channel's fd is an epoll set of its CQs' libmroce eventfds
 * (mroce_cq_fd), each registered one-shot and disarmed: ibv_req_notify_cq
 * arms it (mroce_cq_arm: readable now if completions wait, else at the
 * next; with solicited_only mroce_cq_arm_solicited: at the next solicited
 * or failed completion), so the channel fd becomes readable, for poll()/epoll users too,
 * when an armed CQ has a completion; ibv_get_cq_event() takes that event
 * (blocking unless the fd is O_NONBLOCK), which disarms the CQ again.
 * Whoever drives progress writes the eventfds: the progress helper while
 * the application sleeps, libmroce's thread with MROCE_IBV_PROGRESS=thread;
 * with =app, ibv_get_cq_event drives progress itself while it waits.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "verbs_int.h"

int mv_errno(int rc)
{
    switch (rc) {
    case 0:
        return 0;
    case MROCE_ENOMEM:
    case MROCE_EFULL:
        return ENOMEM;
    case MROCE_EBUSY:
        return EBUSY;
    case MROCE_EFAULT:
        return EFAULT;
    case MROCE_EACCESS:
        return EACCES;
    case MROCE_ETIMEDOUT:
        return ETIMEDOUT;
    case MROCE_EUNREACH:
        return EHOSTUNREACH;
    case MROCE_EADDR:
        return EADDRNOTAVAIL;
    case MROCE_ESOCKET:
        return EIO;
    default:
        return EINVAL;
    }
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    if (!context) {
        errno = EINVAL;
        return NULL;
    }
    struct mv_pd *p = calloc(1, sizeof(*p));
    if (!p) {
        errno = ENOMEM;
        return NULL;
    }
    int rc = mroce_pd_alloc(mv_ctx(context)->mdev, &p->mpd);
    if (rc < 0) {
        free(p);
        errno = mv_errno(rc);
        return NULL;
    }
    p->pd.context = context;
    return &p->pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
    if (!pd)
        return EINVAL;
    struct mv_pd *p = (struct mv_pd *)pd;
    int rc = mroce_pd_free(p->mpd);
    if (rc < 0)
        return mv_errno(rc);
    free(p);
    return 0;
}

#define MV_ACCESS_SUPPORTED                             \
    (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
                                uint64_t iova, unsigned int access)
{
    if (!pd) {
        errno = EINVAL;
        return NULL;
    }
    /* Optional flags (relaxed ordering...) may be ignored by definition. */
    unsigned acc = access & ~(unsigned)IBV_ACCESS_OPTIONAL_RANGE;
    if ((acc & ~(unsigned)MV_ACCESS_SUPPORTED) ||
        iova != (uint64_t)(uintptr_t)addr) {
        errno = EOPNOTSUPP;
        return NULL;
    }
    struct mv_mr *m = calloc(1, sizeof(*m));
    if (!m) {
        errno = ENOMEM;
        return NULL;
    }
    int rc = mroce_reg_mr(((struct mv_pd *)pd)->mpd, addr, length, acc,
                          &m->mmr);
    if (rc < 0) {
        free(m);
        errno = mv_errno(rc);
        return NULL;
    }
    m->mr.context = pd->context;
    m->mr.pd = pd;
    m->mr.addr = addr;
    m->mr.length = length;
    m->mr.lkey = mroce_mr_lkey(m->mmr);
    m->mr.rkey = mroce_mr_rkey(m->mmr);
    return &m->mr;
}

#undef ibv_reg_mr
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
                          int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, (uint64_t)(uintptr_t)addr,
                            (unsigned)access);
}

#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
                               uint64_t iova, int access)
{
    return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
    if (!mr)
        return EINVAL;
    struct mv_mr *m = (struct mv_mr *)mr;
    int rc = mroce_dereg_mr(m->mmr);
    if (rc < 0)
        return mv_errno(rc);
    free(m);
    return 0;
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
    struct mv_channel *c = calloc(1, sizeof(*c));
    if (!context || !c) {
        free(c);
        errno = context ? ENOMEM : EINVAL;
        return NULL;
    }
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (c->epfd < 0) {
        free(c);
        return NULL;
    }
    c->ch.context = context;
    c->ch.fd = c->epfd;
    return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    if (!channel)
        return EINVAL;
    struct mv_channel *c = (struct mv_channel *)channel;
    if (channel->refcnt)
        return EBUSY;
    close(c->epfd);
    free(c);
    return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
                             void *cq_context, struct ibv_comp_channel *channel,
                             int comp_vector)
{
    if (!context || cqe < 1 || cqe > MV_MAX_CQE || comp_vector != 0) {
        errno = EINVAL;
        return NULL;
    }
    struct mv_cq *c = calloc(1, sizeof(*c));
    if (!c) {
        errno = ENOMEM;
        return NULL;
    }
    int rc = mroce_create_cq(mv_ctx(context)->mdev, (uint32_t)cqe, &c->mcq);
    if (rc < 0) {
        free(c);
        errno = mv_errno(rc);
        return NULL;
    }
    if (channel) {
        /* Registered disarmed (no events): req_notify_cq arms it. */
        int fd = mroce_cq_fd(c->mcq);
        struct epoll_event ev = {.events = EPOLLONESHOT, .data.ptr = c};
        if (fd < 0 || epoll_ctl(((struct mv_channel *)channel)->epfd,
                                EPOLL_CTL_ADD, fd, &ev) < 0) {
            int e = fd < 0 ? mv_errno(fd) : errno;
            mroce_destroy_cq(c->mcq);
            free(c);
            errno = e;
            return NULL;
        }
    }
    c->cq.context = context;
    c->cq.channel = channel;
    c->cq.cq_context = cq_context;
    c->cq.cqe = cqe;
    pthread_mutex_init(&c->cq.mutex, NULL);
    pthread_cond_init(&c->cq.cond, NULL);
    if (channel)
        channel->refcnt++;
    return &c->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
    if (!cq)
        return EINVAL;
    struct mv_cq *c = (struct mv_cq *)cq;
    int fd = cq->channel ? mroce_cq_fd(c->mcq) : -1;
    int rc = mroce_destroy_cq(c->mcq);
    if (rc < 0)
        return mv_errno(rc);
    if (cq->channel) {
        /* The eventfd closed with the CQ; an armed one may linger in the
         * set until then: remove it (ENOENT/EBADF afterwards are fine). */
        struct mv_channel *ch = (struct mv_channel *)cq->channel;
        (void)epoll_ctl(ch->epfd, EPOLL_CTL_DEL, fd, NULL);
        cq->channel->refcnt--;
    }
    pthread_mutex_destroy(&cq->mutex);
    pthread_cond_destroy(&cq->cond);
    free(c);
    return 0;
}

int mv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    struct mv_cq *c = (struct mv_cq *)cq;
    if (!cq->channel)
        return 0; /* armed, but events have nowhere to go */
    int fd = mroce_cq_fd(c->mcq);
    if (fd < 0)
        return mv_errno(fd);
    /* Armed in the set before the CQ: a completion in between signals. */
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = c};
    if (epoll_ctl(((struct mv_channel *)cq->channel)->epfd, EPOLL_CTL_MOD, fd,
                  &ev) < 0)
        return errno;
    /* solicited_only: only a solicited or failed completion wakes. */
    int rc = solicited_only ? mroce_cq_arm_solicited(c->mcq)
                            : mroce_cq_arm(c->mcq);
    return rc < 0 ? mv_errno(rc) : 0;
}

/* MROCE_IBV_PROGRESS=app: nobody else drives progress, so a wait on the
 * channel does, until the channel fd is readable or timeout_ms passes. */
static void drive_until_readable(struct mv_context *ctx, int epfd,
                                 int timeout_ms)
{
    mroce_device_progress(ctx->mdev);
    struct pollfd p[2] = {{.fd = epfd, .events = POLLIN},
                          {.fd = mroce_device_fd(ctx->mdev), .events = POLLIN}};
    (void)poll(p, p[1].fd >= 0 ? 2 : 1, timeout_ms);
}

/* Takes the next event of the channel: an armed CQ that has completions.
 * Blocks unless the channel fd is O_NONBLOCK (then EAGAIN). */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                     void **cq_context)
{
    if (!channel || !cq) {
        errno = EINVAL;
        return -1;
    }
    struct mv_channel *ch = (struct mv_channel *)channel;
    struct mv_context *ctx = mv_ctx(channel->context);
    int fl = fcntl(ch->epfd, F_GETFL);
    int block = fl >= 0 && !(fl & O_NONBLOCK);
    struct epoll_event ev;
    int n;
    if (ctx->has_helper || !block)
        n = epoll_wait(ch->epfd, &ev, 1, block ? -1 : 0);
    else
        while ((n = epoll_wait(ch->epfd, &ev, 1, 0)) == 0)
            drive_until_readable(ctx, ch->epfd, 10);
    if (n < 0)
        return -1; /* errno from epoll_wait (EINTR) */
    if (n == 0) {
        errno = EAGAIN;
        return -1;
    }
    struct mv_cq *c = ev.data.ptr;
    mroce_cq_ack_event(c->mcq);
    *cq = &c->cq;
    if (cq_context)
        *cq_context = c->cq.cq_context;
    return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
    if (cq)
        cq->comp_events_completed += nevents;
}

void mv_device_ops_init(struct mv_context *ctx);

void mv_ops_init(struct mv_context *ctx)
{
    struct ibv_context_ops *o = &ctx->vctx.context.ops;
    o->poll_cq = mv_poll_cq;
    o->req_notify_cq = mv_req_notify_cq;
    o->post_send = mv_post_send;
    o->post_recv = mv_post_recv;
    mv_device_ops_init(ctx);
}
