/*
 * mroce_conn.c - peers and their QPs: RDM over MetaRoCE's connected QPs.
 *
 * Active side: the first send to an fi_addr creates a QP, starts the
 * handshake (mroce_connect_start, non-blocking) to the peer's name (its
 * device's IP and UDP port) and at once posts a HELLO carrying our own
 * name, then the message itself: libmroce queues work on a connecting QP
 * and sends it once connected, so nothing waits in the provider.  If the
 * handshake fails, the queued work completes with errors (flushed) and the
 * next send to that peer connects again.
 *
 * Passive side: each endpoint keeps MFI_LISTENERS QPs listening (libmroce
 * gives a CONNECT_REQ to the oldest listener), each with bounce buffers
 * already posted, so an accepted QP can receive at once.  When a listener
 * turns out to be connected (its first receive completes, or a periodic
 * check sees it leave LISTEN), a fresh listener replaces it.  The HELLO,
 * always the first message on the QP, tells which peer it belongs to; the
 * acceptor also sends on that QP if it has none of its own to the peer,
 * so a pair of endpoints usually shares one QP.  If both connect at once,
 * each keeps sending on its own QP: messages from one side still travel
 * one QP, which keeps them in order.
 *
 * With shared connections (mroce_shared.c) the QP is the domain's, one
 * per peer device, and mfi_conn_tx, mfi_conn_listen and mfi_conn_hello
 * hand over to that file; a conn is then an endpoint's view of it.
 *
 * RMA: an MR's key is valid on the domain's device only, so READs and
 * WRITEs for an endpoint on a device of its own go to its domain's device
 * (whose port the endpoint's name carries, mfi_name_set_dom), over a peer
 * of their own: the target's first endpoint accepts that QP and its
 * engine places the data.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "mroce_fi.h"

struct mfi_conn *mfi_conn_by_qpn(struct mfi_ep *ep, uint32_t qpn)
{
    if (ep->qpn_cache && ep->qpn_cache->qpn == qpn)
        return ep->qpn_cache;
    for (struct mfi_conn *c = ep->conns; c; c = c->next)
        if (c->qpn == qpn)
            return ep->qpn_cache = c;
    return NULL;
}

void mfi_qp_attr(struct mroce_qp_init_attr *a, mroce_cq *cq, int mtu,
                 uint32_t sq, uint32_t rq, uint16_t streams)
{
    mroce_qp_init_attr_default(a);
    a->send_cq = a->recv_cq = cq;
    /* Sends, rendezvous READs and control messages share the send queue;
     * the endpoint's tx size bounds what the application can post. */
    a->eng.max_send_wr = sq;
    a->eng.max_recv_wr = rq;
    a->eng.max_streams = streams;
    a->eng.mtu = (uint16_t)mtu;
    a->eng.npaths = (uint16_t)mfi_param.paths;
    a->eng.rnr_retry = (uint8_t)mfi_param.rnr_retry;
    a->eng.retry_cnt = (uint8_t)mfi_param.retry_cnt;
    a->eng.peer_timeout = (mroce_tstamp)mfi_param.peer_timeout * 1000000ull;
    a->eng.handshake_timeout = (mroce_tstamp)mfi_param.conn_timeout *
                               1000000ull;
    if (mfi_param.cc && !strcmp(mfi_param.cc, "none"))
        a->eng.cc_algo = MROCE_CC_NONE;
}

int mfi_qp_create(mroce_pd *pd, const struct mroce_qp_init_attr *a,
                  mroce_qp **qp)
{
    int rc = mroce_create_qp(pd, a, qp);
    if (rc < 0) {
        MFI_WARN(FI_LOG_EP_CTRL, "cannot create a QP: %s\n",
                 mroce_strerror(rc));
        return mfi_errno(rc);
    }
    return 0;
}

void mfi_conn_post_rx(struct mfi_ep *ep, struct mfi_conn *c)
{
    for (int i = 0; i < mfi_param.rx_depth; i++) {
        struct mfi_buf *b = mfi_buf_get(ep, 1);
        if (!b || mfi_buf_post_rx(ep, c, b) < 0) {
            c->rx_owed++;
            if (b == NULL)
                break;
        }
    }
}

int mfi_qp_connect(mroce_qp *qp, const struct sockaddr_storage *to)
{
    char host[INET6_ADDRSTRLEN];
    uint16_t port;
    if (to->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const void *)to;
        inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
        port = ntohs(s->sin6_port);
    } else {
        const struct sockaddr_in *s = (const void *)to;
        inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
        port = ntohs(s->sin_port);
    }
    int rc = mroce_connect_start(qp, host, port, 0);
    if (rc < 0) {
        MFI_WARN(FI_LOG_EP_CTRL, "connect to %s:%u: %s\n", host, port,
                 mroce_strerror(rc));
        return mfi_errno(rc);
    }
    return 0;
}

/* A QP with bounce buffers posted, linked into ep->conns. */
static struct mfi_conn *conn_new(struct mfi_ep *ep, int *err)
{
    struct mfi_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        *err = -FI_ENOMEM;
        return NULL;
    }
    struct mroce_qp_init_attr a;
    mfi_qp_attr(&a, ep->cq, ep->mtu, 2 * MFI_TX_SIZE,
                (uint32_t)mfi_param.rx_depth, 1);
    int rc = mfi_qp_create(ep->pd, &a, &c->qp);
    if (rc < 0) {
        free(c);
        *err = rc;
        return NULL;
    }
    c->qpn = mroce_qp_num(c->qp);
    c->next = ep->conns;
    ep->conns = c;
    mfi_conn_post_rx(ep, c);
    return c;
}

int mfi_conn_listen(struct mfi_ep *ep)
{
    if (ep->dom->shared)
        return mfi_shared_listen(ep->dom);
    int live = 0, err = 0;
    for (struct mfi_conn *c = ep->conns; c; c = c->next) {
        if (!c->listening)
            continue;
        enum mroce_qp_state st = mroce_qp_get_state(c->qp);
        if (st == MROCE_QPS_LISTEN) {
            live++;
        } else {
            c->listening = 0; /* accepted (or failed) */
            if (st == MROCE_QPS_ERROR)
                c->dead = 1;
        }
    }
    while (live < MFI_LISTENERS) {
        struct mfi_conn *c = conn_new(ep, &err);
        if (!c)
            return err;
        int rc = mroce_listen(c->qp);
        if (rc < 0) {
            c->dead = 1;
            return mfi_errno(rc);
        }
        c->listening = 1;
        live++;
    }
    return 0;
}

static struct mfi_peer *peer_find(struct mfi_ep *ep, const struct sockaddr *sa)
{
    for (struct mfi_peer *p = ep->peers; p; p = p->next)
        if (mfi_sa_equal((const struct sockaddr *)&p->addr, sa))
            return p;
    return NULL;
}

static struct mfi_peer *peer_new(struct mfi_ep *ep, const struct sockaddr *sa);

struct mfi_peer *mfi_peer_get(struct mfi_ep *ep, const struct sockaddr *sa)
{
    struct mfi_peer *p = peer_find(ep, sa);
    return p ? p : peer_new(ep, sa);
}

static struct mfi_peer *peer_new(struct mfi_ep *ep, const struct sockaddr *sa)
{
    struct mfi_peer *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->len = mfi_sa_len(sa);
    memcpy(&p->addr, sa, p->len);
    p->fi_addr = FI_ADDR_NOTAVAIL;
    p->av_gen = ep->av ? ep->av->gen - 1 : 0; /* resolve on first use */
    p->next = ep->peers;
    ep->peers = p;
    return p;
}

struct mfi_peer *mfi_conn_peer(struct mfi_ep *ep, fi_addr_t a, int *err)
{
    if (a < ep->by_fiaddr_n && ep->by_fiaddr[a])
        return ep->by_fiaddr[a];
    const struct mfi_av_ent *e = mfi_av_get(ep->av, a);
    if (!e) {
        *err = -FI_EINVAL;
        return NULL;
    }
    const struct sockaddr *sa = (const struct sockaddr *)&e->addr;
    struct mfi_peer *p = peer_find(ep, sa);
    if (!p && !(p = peer_new(ep, sa))) {
        *err = -FI_ENOMEM;
        return NULL;
    }
    if (a >= ep->by_fiaddr_n) {
        size_t n = ep->by_fiaddr_n ? ep->by_fiaddr_n : 64;
        while (n <= a)
            n *= 2;
        struct mfi_peer **t = realloc(ep->by_fiaddr, n * sizeof(*t));
        if (!t) {
            *err = -FI_ENOMEM;
            return NULL;
        }
        memset(t + ep->by_fiaddr_n, 0, (n - ep->by_fiaddr_n) * sizeof(*t));
        ep->by_fiaddr = t;
        ep->by_fiaddr_n = n;
    }
    ep->by_fiaddr[a] = p;
    return p;
}

struct mfi_conn *mfi_conn_tx(struct mfi_ep *ep, struct mfi_peer *p, int *err)
{
    if (p->tx && !p->tx->dead)
        return p->tx;
    if (ep->dom->shared)
        return mfi_shared_tx(ep, p, err);
    struct mfi_conn *c = conn_new(ep, err);
    if (!c)
        return NULL;
    int rc = mfi_qp_connect(c->qp, &p->addr);
    if (rc < 0) {
        c->dead = 1;
        *err = rc;
        return NULL;
    }
    c->peer = p;
    p->tx = c;
    rc = mfi_send_ctrl(ep, c, MFI_PKT_HELLO, &ep->addr, ep->addrlen);
    if (rc < 0) {
        /* The handshake already failed (an ICMP error can come back
         * before this line when another thread drives the device). */
        mfi_conn_failed(ep, c);
        *err = rc == -FI_EOPBADSTATE ? -FI_EHOSTUNREACH : rc;
        return NULL;
    }
    return c;
}

void mfi_conn_hello(struct mfi_ep *ep, struct mfi_conn *c, const void *name,
                    size_t len)
{
    if (ep->dom->shared) {
        mfi_shared_hello(ep, c, name, len);
        return;
    }
    struct sockaddr_storage ss;
    if (!mfi_proto_hello(name, len, &ss))
        return;
    const struct sockaddr *sa = (const struct sockaddr *)&ss;
    struct mfi_peer *p = peer_find(ep, sa);
    if (!p && !(p = peer_new(ep, sa)))
        return;
    c->peer = p;
    c->listening = 0;
    if (!p->tx || p->tx->dead)
        p->tx = c; /* answer on the peer's QP rather than open another */
}

void mfi_name_set_dom(struct sockaddr_storage *name, uint16_t dom)
{
    uint16_t be = htons(dom);
    if (name->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)name)->sin6_flowinfo = be;
    else
        memcpy(((struct sockaddr_in *)name)->sin_zero, &be, sizeof(be));
}

uint16_t mfi_name_dom(const struct sockaddr *name)
{
    if (mfi_param.shared_conn)
        return 0; /* every endpoint is on its domain's device */
    uint16_t be;
    if (name->sa_family == AF_INET6) {
        uint32_t fl =
            ((const struct sockaddr_in6 *)(const void *)name)->sin6_flowinfo;
        if (fl > UINT16_MAX)
            return 0; /* not a port: a name from elsewhere */
        be = (uint16_t)fl;
    } else {
        memcpy(&be, ((const struct sockaddr_in *)(const void *)name)->sin_zero,
               sizeof(be));
    }
    return ntohs(be);
}

struct mfi_peer *mfi_conn_rma_peer(struct mfi_ep *ep, struct mfi_peer *p,
                                   int *err)
{
    if (p->rma)
        return p->rma;
    const struct sockaddr *sa = (const struct sockaddr *)&p->addr;
    uint16_t dom = mfi_name_dom(sa), port;
    struct sockaddr_storage ss;
    memcpy(&ss, &p->addr, sizeof(ss));
    if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
        port = ntohs(s->sin6_port);
        s->sin6_port = htons(dom);
        s->sin6_flowinfo = 0;
    } else {
        struct sockaddr_in *s = (struct sockaddr_in *)&ss;
        port = ntohs(s->sin_port);
        s->sin_port = htons(dom);
        memset(s->sin_zero, 0, sizeof(s->sin_zero));
    }
    if (!dom || dom == port)
        return p->rma = p;
    struct mfi_peer *d = peer_find(ep, (const struct sockaddr *)&ss);
    if (!d && !(d = peer_new(ep, (const struct sockaddr *)&ss))) {
        *err = -FI_ENOMEM;
        return NULL;
    }
    return p->rma = d;
}

fi_addr_t mfi_conn_src(struct mfi_ep *ep, struct mfi_conn *c)
{
    struct mfi_peer *p = c ? c->peer : NULL;
    if (!p || !ep->av)
        return FI_ADDR_NOTAVAIL;
    if (p->av_gen != ep->av->gen) {
        p->fi_addr = mfi_av_find(ep->av, (const struct sockaddr *)&p->addr,
                                 p->len);
        p->av_gen = ep->av->gen;
    }
    return p->fi_addr;
}

int mfi_conn_layout_check(struct mfi_ep *ep, struct mfi_conn *c,
                          uint8_t version)
{
    int shared = ep->dom->shared;
    if (shared ? version >= MFI_PROTO_VERSION : version < MFI_PROTO_VERSION)
        return 0;
    MFI_WARN(FI_LOG_EP_CTRL,
             "QP 0x%x: the peer sent protocol version %u, so it runs "
             "FI_MROCE_SHARED_CONN=%d; this side runs "
             "FI_MROCE_SHARED_CONN=%d: both sides must use the same "
             "setting; the connection fails\n",
             c->qpn, version, !shared, shared);
    if (shared)
        mfi_shared_refuse(ep, c);
    else
        mfi_conn_failed(ep, c);
    return 1;
}

void mfi_conn_fail_view(struct mfi_ep *ep, struct mfi_conn *c)
{
    if (c->dead)
        return;
    c->dead = 1;
    c->listening = 0;
    if (c->peer && c->peer->tx == c)
        c->peer->tx = NULL;
    mfi_msg_conn_failed(ep, c);
    mfi_atomic_conn_failed(ep, c);
}

void mfi_conn_failed(struct mfi_ep *ep, struct mfi_conn *c)
{
    if (c->dq) { /* a shared QP: every endpoint's work on it fails */
        mfi_shared_failed(ep->dom, c->qpn);
        return;
    }
    if (c->dead)
        return;
    /* Flush whatever is still queued so it completes (with errors). */
    mroce_modify_qp_error(c->qp);
    mfi_conn_fail_view(ep, c);
}

void mfi_conn_close_all(struct mfi_ep *ep)
{
    while (ep->conns) {
        struct mfi_conn *c = ep->conns;
        ep->conns = c->next;
        if (!c->dq) /* shared QPs are the domain's */
            mroce_destroy_qp(c->qp);
        free(c);
    }
    ep->qpn_cache = NULL;
    while (ep->peers) {
        struct mfi_peer *p = ep->peers;
        ep->peers = p->next;
        free(p);
    }
}
