/* The CM thread: the TCP side of the CM exchange.  It accepts on the
 * listening sockets, finishes non-blocking connects (then sends the REQ),
 * reads and parses messages, and turns each into the state change and
 * event it means (README.md, "The CM exchange").  Malformed input closes
 * the connection and is counted (cm_bad_msgs, reported on stderr); the
 * peer's end is then handled as a closed connection.  The CM timers
 * (cm_timer.c) fire here too: epoll_wait waits until the next deadline,
 * and an eventfd wakes it when one is armed.  A closed
 * connection is marked dead and freed here, after the batch of epoll
 * events that may still name it. */
#define _GNU_SOURCE /* accept4 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "rdmacm_int.h"

pthread_mutex_t cm_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cm_acked = PTHREAD_COND_INITIALIZER;
unsigned long cm_bad_msgs;

static int epfd = -1;
static char wake_tag; /* the epoll data of cm_timer's eventfd */
static struct cm_conn *dead;
static struct cm_conn *live; /* every connection not yet freed */

struct cm_conn *cm_conn_add(struct cm_id *id, int fd, int listening,
                            int connecting)
{
    struct cm_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->fd = fd;
    c->listening = listening;
    c->connecting = connecting;
    c->id = id;
    struct epoll_event ev = {
        .events = connecting ? EPOLLOUT : EPOLLIN | EPOLLRDHUP,
        .data.ptr = c,
    };
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
        int e = errno;
        free(c);
        errno = e;
        return NULL;
    }
    if (id)
        id->conn = c;
    c->all_next = live;
    live = c;
    return c;
}

/* Accepted connections still waiting for their REQ when LIS goes. */
void cm_conn_drop_listener(struct cm_id *lis)
{
    for (struct cm_conn *c = live; c; c = c->all_next)
        if (c->listener == lis)
            cm_conn_close(c);
}

void cm_conn_close(struct cm_conn *c)
{
    if (c->dead)
        return;
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->dead = 1;
    if (c->id && c->id->conn == c)
        c->id->conn = NULL;
    c->id = NULL;
    c->listener = NULL;
    c->next_dead = dead;
    dead = c;
}

/* Messages are a few hundred bytes at most and a connection carries a
 * handful: a send that the socket buffer cannot take at once is a failed
 * connection. */
int cm_send(struct cm_id *id, const struct cm_msg *m)
{
    uint8_t buf[CM_MSG_MAX];
    size_t n = cm_msg_encode(m, buf);
    if (!n || !id->conn || id->conn->connecting)
        return -1;
    ssize_t w = send(id->conn->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    return w == (ssize_t)n ? 0 : -1;
}

static void post_conn(struct cm_id *id, enum rdma_cm_event_type t, int status,
                      const struct cm_msg *m)
{
    struct cm_event *e = cm_event_new(id, t, status);
    if (!e)
        return;
    if (m)
        cm_event_conn(e, m);
    cm_event_queue(e);
}

/* A REQ on an accepted connection: a new id on the listener's channel,
 * bound to the device of the address the peer reached. */
static void on_req(struct cm_conn *c, struct cm_id *lis, const struct cm_msg *m)
{
    struct sockaddr_storage la, pa;
    socklen_t ll = sizeof(la), pl = sizeof(pa);
    getsockname(c->fd, (struct sockaddr *)&la, &ll);
    getpeername(c->fd, (struct sockaddr *)&pa, &pl);
    struct cm_dev *d = cm_dev_by_addr((struct sockaddr *)&la);
    if (!d)
        d = lis->dev ? lis->dev : cm_dev_by_family(la.ss_family);
    struct cm_id *id = d ? cm_id_alloc(cm_channel_of(lis->id.channel),
                                       lis->id.context, lis->id.ps)
                         : NULL;
    if (!id) {
        cm_conn_close(c);
        return;
    }
    id->dev = d;
    id->id.verbs = d->ctx;
    id->id.pd = d->pd;
    id->id.port_num = 1;
    memcpy(&id->id.route.addr.src_storage, &la, ll);
    memcpy(&id->id.route.addr.dst_storage, &pa, pl);
    memcpy(id->id.route.addr.addr.ibaddr.sgid.raw, d->gid.raw, 16);
    memcpy(id->id.route.addr.addr.ibaddr.dgid.raw, m->gid, 16);
    id->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
    id->state = CM_REQ_RCVD;
    memcpy(id->peer_gid, m->gid, 16);
    id->peer_qpn = m->qpn;
    id->peer_resp_res = m->resp_res;
    id->peer_init_depth = m->init_depth;
    id->peer_known = 1;
    id->retry = m->retry;
    id->rnr_retry = m->rnr_retry;
    c->id = id;
    id->conn = c;
    struct cm_event *e = cm_event_new(id, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
    if (!e) {
        cm_conn_close(c);
        cm_id_release(id);
        free(id);
        return;
    }
    e->ev.listen_id = &lis->id;
    cm_event_conn(e, m);
    cm_event_queue(e);
    /* As rdma_cm does for a request its application has not yet
     * answered: the active side now waits longer for the REP. */
    struct cm_msg mra = {.type = CM_MRA};
    cm_send(id, &mra);
}

void cm_on_timeout(struct cm_id *id)
{
    if (id->conn)
        cm_conn_close(id->conn);
    switch (id->state) {
    case CM_CONNECTING: /* no MRA, REP or REJ: IB's REQ timeout */
    case CM_ACCEPTED:   /* no RTU: IB's REP timeout */
        id->state = CM_CLOSED;
        post_conn(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL);
        break;
    case CM_DISCONNECTING: /* no DREP: IB's DREQ timeout */
        id->state = CM_DISCONNECTED;
        post_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        break;
    default:
        break;
    }
}

/* The peer closed the connection (or sent what we cannot parse). */
static void on_close(struct cm_conn *c)
{
    struct cm_id *id = c->id;
    cm_conn_close(c);
    if (!id)
        return;
    switch (id->state) {
    case CM_CONNECTING:
        id->state = CM_CLOSED;
        post_conn(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET, NULL);
        break;
    case CM_REP_RCVD:
    case CM_REQ_RCVD:
        id->peer_gone = 1;
        break;
    case CM_ACCEPTED:
        id->state = CM_CLOSED;
        post_conn(id, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET, NULL);
        break;
    case CM_CONNECTED:
    case CM_DISCONNECTING:
        id->state = CM_DISCONNECTED;
        post_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        break;
    default:
        break;
    }
}

/* One message; returns 0, or -1 when the connection is to be closed. */
static int on_msg(struct cm_conn *c, const struct cm_msg *m)
{
    struct cm_id *id = c->id;
    if (!id) {
        struct cm_id *lis = c->listener;
        if (!lis || m->type != CM_REQ)
            return -1;
        c->listener = NULL;
        on_req(c, lis, m);
        return 0;
    }
    switch (m->type) {
    case CM_MRA:
        if (id->state != CM_CONNECTING)
            return -1;
        cm_timer_arm(id, CM_MRA_MULT);
        return 0;
    case CM_REP:
        if (id->state != CM_CONNECTING)
            return -1;
        memcpy(id->peer_gid, m->gid, 16);
        memcpy(id->id.route.addr.addr.ibaddr.dgid.raw, m->gid, 16);
        id->peer_qpn = m->qpn;
        id->peer_resp_res = m->resp_res;
        id->peer_init_depth = m->init_depth;
        id->peer_known = 1;
        id->state = CM_REP_RCVD;
        struct cm_event *e = cm_event_new(id, RDMA_CM_EVENT_ESTABLISHED, 0);
        if (e) {
            cm_event_conn(e, m);
            e->rep = 1;
            cm_event_queue(e);
        }
        return 0;
    case CM_RTU:
        if (id->state != CM_ACCEPTED)
            return -1;
        id->state = CM_CONNECTED;
        post_conn(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL);
        return 0;
    case CM_REJ:
        if (id->state == CM_CONNECTING) {
            id->state = CM_CLOSED;
            post_conn(id, RDMA_CM_EVENT_REJECTED, m->reason, m);
        } else if (id->state == CM_ACCEPTED) {
            id->state = CM_CLOSED;
            post_conn(id, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNREFUSED, NULL);
        }
        return -1;
    case CM_DREQ: {
        struct cm_msg r = {.type = CM_DREP};
        cm_send(id, &r);
        if (id->state == CM_CONNECTED || id->state == CM_DISCONNECTING ||
            id->state == CM_ACCEPTED) {
            id->state = CM_DISCONNECTED;
            post_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        }
        return -1;
    }
    case CM_DREP:
        if (id->state == CM_DISCONNECTING) {
            id->state = CM_DISCONNECTED;
            post_conn(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL);
        }
        return -1;
    default:
        return -1;
    }
}

static void on_readable(struct cm_conn *c)
{
    for (;;) {
        ssize_t n = read(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            on_close(c);
            return;
        }
        if (n < 0)
            return;
        c->rlen += (size_t)n;
        size_t off = 0;
        while (!c->dead) {
            struct cm_msg m;
            int k = cm_msg_parse(c->rbuf + off, c->rlen - off, &m);
            if (k == 0)
                break;
            if (k < 0) {
                cm_bad_msgs++;
                fprintf(stderr,
                        "librdmacm (MetaRoCE): malformed CM message, "
                        "connection dropped (%lu so far)\n",
                        cm_bad_msgs);
                on_close(c);
                return;
            }
            off += (size_t)k;
            if (on_msg(c, &m)) {
                if (c->id)
                    on_close(c);
                else
                    cm_conn_close(c);
                return;
            }
        }
        if (c->dead)
            return;
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
    }
}

static void on_accept(struct cm_conn *lc)
{
    for (;;) {
        int fd = accept4(lc->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        /* The new connection belongs to the listener until its REQ. */
        struct cm_conn *c = cm_conn_add(NULL, fd, 0, 0);
        if (!c) {
            close(fd);
            continue;
        }
        c->listener = lc->id;
    }
}

static void on_connected(struct cm_conn *c)
{
    int err = 0;
    socklen_t l = sizeof(err);
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
    struct cm_id *id = c->id;
    if (err) {
        cm_conn_close(c);
        if (id && id->state == CM_CONNECTING) {
            id->state = CM_CLOSED;
            if (err == ECONNREFUSED) /* no listener: IB's invalid service ID */
                post_conn(id, RDMA_CM_EVENT_REJECTED, 8, NULL);
            else
                post_conn(id, RDMA_CM_EVENT_UNREACHABLE, -err, NULL);
        }
        return;
    }
    c->connecting = 0;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
    ssize_t w = send(c->fd, c->req, c->req_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w != (ssize_t)c->req_len)
        on_close(c);
}

static void *cm_thread(void *arg)
{
    (void)arg;
    struct epoll_event evs[32];
    int wait_ms = -1;
    for (;;) {
        int n = epoll_wait(epfd, evs, 32, wait_ms);
        pthread_mutex_lock(&cm_lock);
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == &wake_tag) {
                cm_timer_wake_ack();
                continue;
            }
            struct cm_conn *c = evs[i].data.ptr;
            if (c->dead)
                continue;
            if (c->listening)
                on_accept(c);
            else if (c->connecting)
                on_connected(c);
            else
                on_readable(c);
        }
        cm_timer_expire();
        if (dead) {
            struct cm_conn **pp = &live;
            while (*pp) {
                if ((*pp)->dead)
                    *pp = (*pp)->all_next;
                else
                    pp = &(*pp)->all_next;
            }
        }
        while (dead) {
            struct cm_conn *c = dead;
            dead = c->next_dead;
            free(c);
        }
        wait_ms = cm_timer_next_ms();
        pthread_mutex_unlock(&cm_lock);
    }
    return NULL;
}

int cm_thread_start(void)
{
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0)
        return errno;
    int wfd = cm_timer_init();
    struct epoll_event wev = {.events = EPOLLIN, .data.ptr = &wake_tag};
    if (wfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, wfd, &wev))
        return errno;
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &a, cm_thread, NULL);
    pthread_attr_destroy(&a);
    return rc;
}
