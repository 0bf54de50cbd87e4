/* Event channels and events.  A channel's fd is an eventfd that holds a
 * count exactly while the channel has events queued, so poll(), select()
 * and epoll see it readable as they would the kernel's rdma_cm fd, and
 * rdma_get_cm_event blocks on it unless the application made it
 * O_NONBLOCK (then EAGAIN).  Each queued event counts against the id it
 * belongs to until acknowledged: rdma_destroy_id waits for those, as
 * librdmacm's does.  A REP is turned into ESTABLISHED (QP to RTR and RTS,
 * RTU sent) by the rdma_get_cm_event that returns it, in the caller's
 * thread, as librdmacm does. */
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rdmacm_int.h"

static void channel_sync(struct cm_channel *c)
{
    uint64_t v = 1;
    if (c->head && !c->signalled) {
        if (write(c->ch.fd, &v, sizeof(v)) == sizeof(v))
            c->signalled = 1;
    } else if (!c->head && c->signalled) {
        if (read(c->ch.fd, &v, sizeof(v)) == sizeof(v))
            c->signalled = 0;
    }
}

struct cm_channel *cm_channel_new(void)
{
    struct cm_channel *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->ch.fd = eventfd(0, EFD_CLOEXEC);
    if (c->ch.fd < 0) {
        free(c);
        return NULL;
    }
    return c;
}

void cm_channel_free(struct cm_channel *c)
{
    if (!c)
        return;
    while (c->head) {
        struct cm_event *e = c->head;
        c->head = e->next;
        free(e);
    }
    close(c->ch.fd);
    free(c);
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
    int rc = cm_init();
    if (rc) {
        errno = rc;
        return NULL;
    }
    struct cm_channel *c = cm_channel_new();
    return c ? &c->ch : NULL;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
    if (!channel)
        return;
    pthread_mutex_lock(&cm_lock);
    struct cm_channel *c = cm_channel_of(channel);
    /* Events of ids the application leaked with the channel. */
    while (c->head) {
        struct cm_event *e = c->head;
        c->head = e->next;
        e->owner->outstanding--;
        free(e);
    }
    pthread_mutex_unlock(&cm_lock);
    cm_channel_free(c);
}

struct cm_event *cm_event_new(struct cm_id *id, enum rdma_cm_event_type type,
                              int status)
{
    struct cm_event *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->owner = id;
    e->ev.id = &id->id;
    e->ev.event = type;
    e->ev.status = status;
    return e;
}

/* The connection parameters of a REQ, REP or REJ, as the receiver sees
 * them: the sender's responder resources are our initiator depth. */
void cm_event_conn(struct cm_event *e, const struct cm_msg *m)
{
    struct rdma_conn_param *p = &e->ev.param.conn;
    memcpy(e->pdata, m->pdata, m->pdata_len);
    p->private_data = m->pdata_len ? e->pdata : NULL;
    p->private_data_len = m->pdata_len;
    p->responder_resources = m->init_depth;
    p->initiator_depth = m->resp_res;
    p->flow_control = m->flow_control;
    p->retry_count = m->retry;
    p->rnr_retry_count = m->rnr_retry;
    p->srq = m->srq;
    p->qp_num = m->qpn;
}

void cm_event_queue(struct cm_event *e)
{
    struct cm_channel *c = cm_channel_of(e->owner->id.channel);
    e->owner->outstanding++;
    if (c->tail)
        c->tail->next = e;
    else
        c->head = e;
    c->tail = e;
    channel_sync(c);
}

void cm_event_post(struct cm_id *id, enum rdma_cm_event_type type, int status)
{
    struct cm_event *e = cm_event_new(id, type, status);
    if (e)
        cm_event_queue(e);
}

/* Unlinks the events for ID (and the connect requests ID listened for,
 * whose new ids are released: their peers see REJECTED). */
void cm_channel_drop(struct cm_channel *c, struct cm_id *id)
{
    struct cm_event **pp = &c->head, *last = NULL;
    while (*pp) {
        struct cm_event *e = *pp;
        int child = e->ev.listen_id == &id->id && e->owner != id;
        if (e->owner == id || child) {
            *pp = e->next;
            e->owner->outstanding--;
            if (child) {
                cm_id_release(e->owner);
                free(e->owner);
            }
            free(e);
            continue;
        }
        last = e;
        pp = &e->next;
    }
    c->tail = last;
    channel_sync(c);
}

void cm_channel_move(struct cm_id *id, struct cm_channel *to)
{
    struct cm_channel *from = cm_channel_of(id->id.channel);
    struct cm_event **pp = &from->head, *last = NULL, *moved = NULL;
    struct cm_event **mt = &moved;
    while (*pp) {
        struct cm_event *e = *pp;
        if (e->owner == id) {
            *pp = e->next;
            e->next = NULL;
            *mt = e;
            mt = &e->next;
            continue;
        }
        last = e;
        pp = &e->next;
    }
    from->tail = last;
    channel_sync(from);
    id->id.channel = &to->ch;
    while (moved) {
        struct cm_event *e = moved;
        moved = e->next;
        e->next = NULL;
        id->outstanding--; /* cm_event_queue counts it again */
        cm_event_queue(e);
    }
}

/* The REP that completes an active connection: QP to RTR and RTS, then
 * RTU; without a QP (the application moves its own, rdma_establish sends
 * RTU) it is delivered as CONNECT_RESPONSE. */
static void complete_rep(struct cm_event *e)
{
    struct cm_id *id = e->owner;
    e->rep = 0;
    if (!id->id.qp) {
        e->ev.event = RDMA_CM_EVENT_CONNECT_RESPONSE;
        return;
    }
    int rc = cm_connect_qp(id);
    pthread_mutex_lock(&cm_lock);
    struct cm_msg m = {.type = CM_RTU};
    if (!rc && (id->peer_gone || id->state != CM_REP_RCVD))
        rc = ECONNRESET;
    if (!rc && cm_send(id, &m))
        rc = ECONNRESET;
    if (rc) {
        struct cm_msg rej = {.type = CM_REJ, .reason = 28};
        cm_send(id, &rej);
        if (id->conn)
            cm_conn_close(id->conn);
        id->state = CM_CLOSED;
        e->ev.event = RDMA_CM_EVENT_CONNECT_ERROR;
        e->ev.status = -rc;
    } else {
        id->state = CM_CONNECTED;
        e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
    }
    pthread_mutex_unlock(&cm_lock);
}

int rdma_get_cm_event(struct rdma_event_channel *channel,
                      struct rdma_cm_event **event)
{
    if (!channel || !event)
        return cm_err(EINVAL);
    struct cm_channel *c = cm_channel_of(channel);
    pthread_mutex_lock(&cm_lock);
    while (!c->head) {
        int fl = fcntl(c->ch.fd, F_GETFL);
        pthread_mutex_unlock(&cm_lock);
        if (fl >= 0 && (fl & O_NONBLOCK))
            return cm_err(EAGAIN);
        struct pollfd p = {.fd = c->ch.fd, .events = POLLIN};
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            return -1;
        pthread_mutex_lock(&cm_lock);
    }
    struct cm_event *e = c->head;
    c->head = e->next;
    if (!c->head)
        c->tail = NULL;
    e->next = NULL;
    channel_sync(c);
    if (e->ev.event == RDMA_CM_EVENT_DISCONNECTED)
        e->owner->disc_delivered = 1;
    pthread_mutex_unlock(&cm_lock);
    if (e->rep)
        complete_rep(e);
    *event = &e->ev;
    return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
    if (!event)
        return cm_err(EINVAL);
    struct cm_event *e = (struct cm_event *)event;
    pthread_mutex_lock(&cm_lock);
    e->owner->outstanding--;
    pthread_cond_broadcast(&cm_acked);
    pthread_mutex_unlock(&cm_lock);
    free(e);
    return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
    static const char *const names[] = {
        [RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
        [RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
        [RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
        [RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
        [RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
        [RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
        [RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
        [RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
        [RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
        [RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
        [RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
        [RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
        [RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
        [RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
        [RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
        [RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
    };
    unsigned i = (unsigned)event;
    return i < sizeof(names) / sizeof(names[0]) && names[i] ? names[i]
                                                            : "UNKNOWN EVENT";
}
