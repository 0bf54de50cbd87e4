/* Communication identifiers: the rdma_cm calls that create, bind,
 * resolve, listen, connect, accept, reject and disconnect them, and the
 * QP rdma_create_qp puts on one.  Address and route resolution are local
 * (the device of the source address; the GID of the destination is its
 * IPv4-mapped address) and complete at once with their event; the rest
 * is the CM exchange over TCP (cm_thread.c).  Ids created without a
 * channel (rdma_create_ep) are synchronous: each call waits for its event
 * on a private channel (cm_complete), as in librdmacm. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdmacm_int.h"

#define CM_MAX_RD_ATOMIC 16 /* what our libibverbs' devices report */

struct cm_id *cm_id_alloc(struct cm_channel *ch, void *context,
                          enum rdma_port_space ps)
{
    struct cm_id *id = calloc(1, sizeof(*id));
    if (!id)
        return NULL;
    id->id.channel = &ch->ch;
    id->id.context = context;
    id->id.ps = ps;
    id->id.qp_type = IBV_QPT_RC;
    id->sock = -1;
    id->retry = 7;
    id->rnr_retry = 7;
    return id;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id,
                   void *context, enum rdma_port_space ps)
{
    int rc = cm_init();
    if (rc)
        return cm_err(rc);
    if (!id)
        return cm_err(EINVAL);
    if (ps != RDMA_PS_TCP) {
        fprintf(stderr,
                "librdmacm (MetaRoCE): port space 0x%x is not "
                "supported: only RDMA_PS_TCP (RC), no UD, IPoIB "
                "or multicast\n",
                (unsigned)ps);
        return cm_err(EOPNOTSUPP);
    }
    struct cm_channel *ch = channel ? cm_channel_of(channel) : cm_channel_new();
    if (!ch)
        return -1;
    struct cm_id *c = cm_id_alloc(ch, context, ps);
    if (!c) {
        if (!channel)
            cm_channel_free(ch);
        return cm_err(ENOMEM);
    }
    c->sync = !channel;
    *id = &c->id;
    return 0;
}

void cm_id_release(struct cm_id *id)
{
    if (id->conn) {
        struct cm_msg m = {0};
        if (id->state == CM_REQ_RCVD) {
            m.type = CM_REJ;
            m.reason = 28;
        } else if (id->state == CM_CONNECTED || id->state == CM_ACCEPTED ||
                   id->state == CM_REP_RCVD) {
            m.type = CM_DREQ;
        }
        if (m.type)
            cm_send(id, &m);
        cm_conn_close(id->conn);
    }
    if (id->sock >= 0)
        close(id->sock);
    id->sock = -1;
    cm_timer_stop(id);
    cm_conn_drop_listener(id);
    cm_channel_drop(cm_channel_of(id->id.channel), id);
}

int rdma_destroy_id(struct rdma_cm_id *rid)
{
    if (!rid)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    if (rid->event) {
        rdma_ack_cm_event(rid->event);
        rid->event = NULL;
    }
    pthread_mutex_lock(&cm_lock);
    id->destroying = 1;
    cm_id_release(id);
    while (id->outstanding > 0)
        pthread_cond_wait(&cm_acked, &cm_lock);
    pthread_mutex_unlock(&cm_lock);
    if (id->sync)
        cm_channel_free(cm_channel_of(rid->channel));
    free(id->qp_init_attr);
    free(id);
    return 0;
}

int cm_complete(struct cm_id *id)
{
    if (!id->sync)
        return 0;
    if (id->id.event) {
        rdma_ack_cm_event(id->id.event);
        id->id.event = NULL;
    }
    if (rdma_get_cm_event(id->id.channel, &id->id.event))
        return -1;
    struct rdma_cm_event *e = id->id.event;
    if (e->event == RDMA_CM_EVENT_REJECTED)
        return cm_err(ECONNREFUSED);
    if (e->status)
        return cm_err(e->status < 0 ? -e->status : e->status);
    return 0;
}

static void set_dev(struct cm_id *id, struct cm_dev *d)
{
    id->dev = d;
    id->id.verbs = d->ctx;
    if (!id->id.pd)
        id->id.pd = d->pd;
    id->id.port_num = 1;
    memcpy(id->id.route.addr.addr.ibaddr.sgid.raw, d->gid.raw, 16);
    id->id.route.addr.addr.ibaddr.pkey = htons(0xffff);
}

static int addr_ok(const struct sockaddr *a)
{
    return a && (a->sa_family == AF_INET || a->sa_family == AF_INET6);
}

/* A TCP socket bound to A (port included); -1 with errno. */
static int bound_socket(const struct sockaddr *a)
{
    int fd = socket(a->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a, cm_addrlen(a))) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int rdma_bind_addr(struct rdma_cm_id *rid, struct sockaddr *addr)
{
    if (!rid || !addr_ok(addr))
        return cm_err(rid && addr ? EAFNOSUPPORT : EINVAL);
    struct cm_id *id = cm_id_of(rid);
    if (id->state != CM_IDLE)
        return cm_err(EINVAL);
    struct cm_dev *d = NULL;
    if (!cm_addr_any(addr) && !(d = cm_dev_by_addr(addr)))
        return cm_err(ENODEV); /* no MetaRoCE device has this address */
    int fd = bound_socket(addr);
    if (fd < 0)
        return -1;
    socklen_t l = sizeof(rid->route.addr.src_storage);
    getsockname(fd, &rid->route.addr.src_addr, &l);
    pthread_mutex_lock(&cm_lock);
    id->sock = fd;
    id->state = CM_BOUND;
    if (d)
        set_dev(id, d);
    pthread_mutex_unlock(&cm_lock);
    return 0;
}

/* ENETUNREACH or EHOSTUNREACH when the kernel has no route to DST (a UDP
 * socket's connect() asks the routing table and sends nothing), else 0. */
static int no_route(const struct sockaddr *dst)
{
    struct sockaddr_storage a;
    memcpy(&a, dst, cm_addrlen(dst));
    ((struct sockaddr_in *)&a)->sin_port = htons(9); /* sin6_port alike */
    int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int e = connect(fd, (struct sockaddr *)&a, cm_addrlen(dst)) ? errno : 0;
    close(fd);
    return e == ENETUNREACH || e == EHOSTUNREACH ? e : 0;
}

int rdma_resolve_addr(struct rdma_cm_id *rid, struct sockaddr *src_addr,
                      struct sockaddr *dst_addr, int timeout_ms)
{
    /* Resolution is local and immediate: nothing waits for timeout_ms.  A
     * destination without a route fails at once (ADDR_ERROR, as rdma_cm's
     * route lookup does); a silent host is found by rdma_connect's REQ
     * timeout (cm_timer.c). */
    (void)timeout_ms;
    if (!rid || !addr_ok(dst_addr))
        return cm_err(rid && dst_addr ? EAFNOSUPPORT : EINVAL);
    struct cm_id *id = cm_id_of(rid);
    if (src_addr && id->state == CM_IDLE && rdma_bind_addr(rid, src_addr))
        return -1;
    if (id->state != CM_IDLE && id->state != CM_BOUND)
        return cm_err(EINVAL);
    /* Unbound, or bound to a wildcard: the first device of the
     * destination's family (MROCE_IBV_DEVICES order), not the routing
     * table's choice: two processes on one host use two loopback
     * addresses, and the route to either is the same. */
    struct cm_dev *d = id->dev ? id->dev
                               : cm_dev_by_family(dst_addr->sa_family);
    int unreach = d ? no_route(dst_addr) : 0;
    pthread_mutex_lock(&cm_lock);
    memcpy(&rid->route.addr.dst_storage, dst_addr, cm_addrlen(dst_addr));
    if (!d || d->addr.ss_family != dst_addr->sa_family) {
        cm_event_post(id, RDMA_CM_EVENT_ADDR_ERROR, d ? -EINVAL : -ENODEV);
    } else if (unreach) {
        cm_event_post(id, RDMA_CM_EVENT_ADDR_ERROR, -unreach);
    } else {
        set_dev(id, d);
        if (id->state == CM_IDLE) {
            memcpy(&rid->route.addr.src_storage, &d->addr, sizeof(d->addr));
        } else if (cm_addr_any(&rid->route.addr.src_addr)) {
            in_port_t port = rid->route.addr.src_sin.sin_port;
            memcpy(&rid->route.addr.src_storage, &d->addr, sizeof(d->addr));
            rid->route.addr.src_sin.sin_port = port;
        }
        union ibv_gid *g = &rid->route.addr.addr.ibaddr.dgid;
        memset(g, 0, sizeof(*g));
        if (dst_addr->sa_family == AF_INET) {
            g->raw[10] = g->raw[11] = 0xff;
            memcpy(&g->raw[12], &((struct sockaddr_in *)dst_addr)->sin_addr, 4);
        } else {
            memcpy(g->raw, &((struct sockaddr_in6 *)dst_addr)->sin6_addr, 16);
        }
        id->state = CM_ADDR_RESOLVED;
        cm_event_post(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
    }
    pthread_mutex_unlock(&cm_lock);
    return cm_complete(id);
}

int rdma_resolve_route(struct rdma_cm_id *rid, int timeout_ms)
{
    (void)timeout_ms;
    if (!rid)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    pthread_mutex_lock(&cm_lock);
    if (id->state != CM_ADDR_RESOLVED) {
        pthread_mutex_unlock(&cm_lock);
        return cm_err(EINVAL);
    }
    id->state = CM_ROUTE_RESOLVED;
    cm_event_post(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    pthread_mutex_unlock(&cm_lock);
    return cm_complete(id);
}

int rdma_listen(struct rdma_cm_id *rid, int backlog)
{
    if (!rid)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    pthread_mutex_lock(&cm_lock);
    int rc = 0;
    if (id->state != CM_BOUND)
        rc = EINVAL;
    else if (listen(id->sock, backlog > 0 ? backlog : 128))
        rc = errno;
    else if (!cm_conn_add(id, id->sock, 1, 0))
        rc = errno;
    if (!rc) {
        id->sock = -1;
        id->state = CM_LISTEN;
    }
    pthread_mutex_unlock(&cm_lock);
    return rc ? cm_err(rc) : 0;
}

static uint8_t depth(const struct rdma_conn_param *p, int resp, uint8_t dflt)
{
    uint8_t v = !p     ? RDMA_MAX_RESP_RES
                : resp ? p->responder_resources
                       : p->initiator_depth;
    if (v == RDMA_MAX_RESP_RES)
        v = dflt;
    return v > CM_MAX_RD_ATOMIC ? CM_MAX_RD_ATOMIC : v;
}

static void fill_msg(struct cm_id *id, struct cm_msg *m, uint8_t type,
                     uint32_t qpn, const struct rdma_conn_param *p)
{
    m->type = type;
    memcpy(m->gid, id->dev->gid.raw, 16);
    m->qpn = qpn;
    m->resp_res = id->resp_res;
    m->init_depth = id->init_depth;
    m->retry = id->retry;
    m->rnr_retry = id->rnr_retry;
    if (p) {
        m->flow_control = p->flow_control;
        m->srq = p->srq;
        m->pdata_len = p->private_data_len;
        if (p->private_data_len)
            memcpy(m->pdata, p->private_data, p->private_data_len);
    }
}

int rdma_connect(struct rdma_cm_id *rid, struct rdma_conn_param *p)
{
    if (!rid)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    if (id->state != CM_ROUTE_RESOLVED || (!rid->qp && !p) ||
        (p && p->private_data_len > CM_REQ_PDATA) ||
        (p && p->private_data_len && !p->private_data))
        return cm_err(EINVAL);
    id->resp_res = depth(p, 1, CM_MAX_RD_ATOMIC);
    id->init_depth = depth(p, 0, CM_MAX_RD_ATOMIC);
    if (p) {
        id->retry = p->retry_count > 7 ? 7 : p->retry_count;
        id->rnr_retry = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
    }
    struct cm_msg m = {0};
    fill_msg(id, &m, CM_REQ, rid->qp ? rid->qp->qp_num : p->qp_num, p);
    int fd = id->sock;
    if (fd < 0) {
        struct sockaddr_storage src = id->dev->addr;
        fd = bound_socket((struct sockaddr *)&src);
        if (fd < 0)
            return -1;
    }
    pthread_mutex_lock(&cm_lock);
    id->sock = -1;
    id->state = CM_CONNECTING;
    int r = connect(fd, &rid->route.addr.dst_addr,
                    cm_addrlen(&rid->route.addr.dst_addr));
    int err = r ? errno : 0;
    struct cm_conn *c = NULL;
    if (!r || err == EINPROGRESS) {
        c = cm_conn_add(id, fd, 0, err == EINPROGRESS);
        if (!c)
            err = errno;
    }
    if (c) {
        cm_timer_arm(id, 1); /* until the peer's CM answers (MRA, REP, REJ) */
        c->req_len = cm_msg_encode(&m, c->req);
        if (!c->connecting &&
            send(fd, c->req, c->req_len, MSG_NOSIGNAL | MSG_DONTWAIT) !=
                (ssize_t)c->req_len) {
            cm_conn_close(c);
            id->state = CM_CLOSED;
            cm_event_post(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET);
        }
    } else {
        close(fd);
        id->state = CM_CLOSED;
        if (err == ECONNREFUSED)
            cm_event_post(id, RDMA_CM_EVENT_REJECTED, 8);
        else
            cm_event_post(id, RDMA_CM_EVENT_UNREACHABLE, -err);
    }
    pthread_mutex_unlock(&cm_lock);
    return cm_complete(id);
}

int rdma_accept(struct rdma_cm_id *rid, struct rdma_conn_param *p)
{
    if (!rid)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    if (id->state != CM_REQ_RCVD || (!rid->qp && !p) ||
        (p && p->private_data_len > CM_REP_PDATA) ||
        (p && p->private_data_len && !p->private_data))
        return cm_err(EINVAL);
    id->init_depth = depth(p, 0, id->peer_resp_res);
    id->resp_res = depth(p, 1, id->peer_init_depth);
    if (rid->qp) {
        int rc = cm_connect_qp(id);
        if (rc)
            return cm_err(rc);
    }
    struct cm_msg m = {0};
    fill_msg(id, &m, CM_REP, rid->qp ? rid->qp->qp_num : p->qp_num, p);
    pthread_mutex_lock(&cm_lock);
    if (id->peer_gone || cm_send(id, &m)) {
        if (id->conn)
            cm_conn_close(id->conn);
        id->state = CM_CLOSED;
        cm_event_post(id, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET);
    } else {
        id->state = CM_ACCEPTED;
        /* The RTU waits for the active application's next
         * rdma_get_cm_event: as long as after an MRA. */
        cm_timer_arm(id, CM_MRA_MULT);
    }
    pthread_mutex_unlock(&cm_lock);
    return cm_complete(id);
}

static int reject(struct rdma_cm_id *rid, const void *pdata, uint8_t len,
                  uint8_t reason)
{
    if (!rid || len > CM_REJ_PDATA || (len && !pdata))
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    pthread_mutex_lock(&cm_lock);
    if (id->state != CM_REQ_RCVD) {
        pthread_mutex_unlock(&cm_lock);
        return cm_err(EINVAL);
    }
    struct cm_msg m = {.type = CM_REJ, .reason = reason, .pdata_len = len};
    if (len)
        memcpy(m.pdata, pdata, len);
    cm_send(id, &m);
    if (id->conn)
        cm_conn_close(id->conn);
    id->state = CM_CLOSED;
    pthread_mutex_unlock(&cm_lock);
    return 0;
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data,
                uint8_t private_data_len)
{
    return reject(id, private_data, private_data_len, 28); /* consumer */
}

int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
                    uint8_t private_data_len)
{
    return reject(id, private_data, private_data_len, 35);
}

int rdma_disconnect(struct rdma_cm_id *rid)
{
    if (!rid)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    if (rid->qp) {
        struct ibv_qp_attr a = {.qp_state = IBV_QPS_ERR};
        int rc = ibv_modify_qp(rid->qp, &a, IBV_QP_STATE);
        if (rc)
            return cm_err(rc);
    }
    pthread_mutex_lock(&cm_lock);
    switch (id->state) {
    case CM_CONNECTED:
    case CM_ACCEPTED:
    case CM_REP_RCVD: {
        struct cm_msg m = {.type = CM_DREQ};
        id->state = CM_DISCONNECTING;
        cm_timer_arm(id, 1); /* the peer's CM answers a DREQ itself */
        if (cm_send(id, &m)) {
            if (id->conn)
                cm_conn_close(id->conn);
            id->state = CM_DISCONNECTED;
            cm_event_post(id, RDMA_CM_EVENT_DISCONNECTED, 0);
        }
        break;
    }
    case CM_DISCONNECTING:
    case CM_DISCONNECTED:
        break;
    default:
        pthread_mutex_unlock(&cm_lock);
        return cm_err(EINVAL);
    }
    int wait = !id->disc_delivered;
    pthread_mutex_unlock(&cm_lock);
    return wait ? cm_complete(id) : 0;
}

int rdma_establish(struct rdma_cm_id *rid)
{
    if (!rid || rid->qp)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    pthread_mutex_lock(&cm_lock);
    int rc = 0;
    struct cm_msg m = {.type = CM_RTU};
    if (id->state != CM_REP_RCVD)
        rc = EINVAL;
    else if (id->peer_gone || cm_send(id, &m))
        rc = ECONNRESET;
    else
        id->state = CM_CONNECTED;
    pthread_mutex_unlock(&cm_lock);
    return rc ? cm_err(rc) : 0;
}

int rdma_migrate_id(struct rdma_cm_id *rid, struct rdma_event_channel *channel)
{
    if (!rid)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    struct cm_channel *to = channel ? cm_channel_of(channel) : cm_channel_new();
    if (!to)
        return -1;
    pthread_mutex_lock(&cm_lock);
    struct cm_channel *old = cm_channel_of(rid->channel);
    int was_sync = id->sync;
    cm_channel_move(id, to);
    id->sync = !channel;
    pthread_mutex_unlock(&cm_lock);
    if (was_sync)
        cm_channel_free(old);
    return 0;
}

int rdma_set_option(struct rdma_cm_id *rid, int level, int optname,
                    void *optval, size_t optlen)
{
    if (!rid || !optval)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_ACK_TIMEOUT &&
        optlen == sizeof(uint8_t)) {
        uint8_t t = *(uint8_t *)optval;
        if (t > 31)
            return cm_err(EINVAL);
        id->ack_timeout = t;
        return 0;
    }
    if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_REUSEADDR &&
        optlen == sizeof(int))
        return 0; /* the CM's TCP sockets always reuse addresses */
    /* TOS (MetaRoCE's UDP datapath sets its own DSCP/ECN), AFONLY and IB
     * path records: not honoured, so refused. */
    return cm_err(EOPNOTSUPP);
}

__be16 rdma_get_src_port(struct rdma_cm_id *id)
{
    return id->route.addr.src_addr.sa_family == AF_INET6
               ? id->route.addr.src_sin6.sin6_port
               : id->route.addr.src_sin.sin_port;
}

__be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
    return id->route.addr.dst_addr.sa_family == AF_INET6
               ? id->route.addr.dst_sin6.sin6_port
               : id->route.addr.dst_sin.sin_port;
}

/* The connection is established when ESTABLISHED is reported: COMM_EST
 * has nothing to force. */
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
    if (!id)
        return cm_err(EINVAL);
    return event == IBV_EVENT_COMM_EST ? 0 : cm_err(EINVAL);
}
