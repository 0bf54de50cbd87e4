/*
 * objects.c - protection domains, memory regions, completion queues and
 * completion channels over libmroce's, and the context's ops table.
 *
 * Memory access flags have the same values in both APIs; MetaRoCE has no
 * memory windows, on-demand paging, zero-based or DMA-buf regions, and
 * refuses them (EOPNOTSUPP).  Completion channels work by polling: a
 * channel's fd never becomes readable, and ibv_get_cq_event() waits on the
 * CQ armed through it, driving progress (libmroce's APP mode has no
 * interrupts).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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
    c->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (c->efd < 0) {
        free(c);
        return NULL;
    }
    c->ch.context = context;
    c->ch.fd = c->efd;
    return &c->ch;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
    if (!channel)
        return EINVAL;
    struct mv_channel *c = (struct mv_channel *)channel;
    if (channel->refcnt)
        return EBUSY;
    close(c->efd);
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
    int rc = mroce_destroy_cq(c->mcq);
    if (rc < 0)
        return mv_errno(rc);
    if (cq->channel) {
        struct mv_channel *ch = (struct mv_channel *)cq->channel;
        if (ch->armed == c)
            ch->armed = NULL;
        cq->channel->refcnt--;
    }
    pthread_mutex_destroy(&cq->mutex);
    pthread_cond_destroy(&cq->cond);
    free(c);
    return 0;
}

int mv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
    (void)solicited_only; /* every completion wakes: a superset, allowed */
    ((struct mv_cq *)cq)->armed = 1;
    return 0;
}

/* Waits until the CQ last armed through this channel (req_notify_cq) has
 * a completion, driving progress meanwhile; a channel shared by several
 * CQs waits on the one armed last. */
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
                     void **cq_context)
{
    struct mv_cq *c = channel ? ((struct mv_channel *)channel)->armed : NULL;
    if (!cq || !c) {
        errno = EINVAL;
        return -1;
    }
    for (;;) {
        int rc = mroce_cq_wait(c->mcq, 100);
        if (rc < 0) {
            errno = mv_errno(rc);
            return -1;
        }
        if (rc > 0)
            break;
    }
    c->armed = 0;
    ((struct mv_channel *)channel)->armed = NULL;
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

static int req_notify(struct ibv_cq *cq, int solicited_only)
{
    if (cq->channel)
        ((struct mv_channel *)cq->channel)->armed = (struct mv_cq *)cq;
    return mv_req_notify_cq(cq, solicited_only);
}

/* No asynchronous events are generated (async_fd is -1). */
int ibv_get_async_event(struct ibv_context *context,
                        struct ibv_async_event *event)
{
    (void)context;
    (void)event;
    errno = EOPNOTSUPP;
    return -1;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
    (void)event;
}

void mv_device_ops_init(struct mv_context *ctx);

void mv_ops_init(struct mv_context *ctx)
{
    struct ibv_context_ops *o = &ctx->vctx.context.ops;
    o->poll_cq = mv_poll_cq;
    o->req_notify_cq = req_notify;
    o->post_send = mv_post_send;
    o->post_recv = mv_post_recv;
    mv_device_ops_init(ctx);
}
