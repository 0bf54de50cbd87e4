/*
 * mroce_shared.c - shared connections (FI_MROCE_SHARED_CONN=1, the
 * default; 0 selects a device per endpoint, prov/README.md): every endpoint of a domain lives on the domain's device, and
 * the domain keeps one libmroce QP per peer device, of MFI_EP_CNT + 1
 * ordered streams, which all its endpoints share.
 *
 * Names.  An endpoint's name is the domain's address with the endpoint's
 * index i (0..MFI_EP_CNT - 1) in the padding of its sockaddr_in (or the
 * flow label field of a sockaddr_in6): endpoint identity is (IP, port, i),
 * device identity (IP, port).  Index 0's name is the domain's address.
 *
 * Streams.  Stream 1 + j carries everything addressed to endpoint j of
 * the side that receives it, in both directions, so the sender picks the
 * stream from the destination's name and no message negotiates it.  The
 * provider header's rsvd word carries the sending endpoint's index
 * (MFI_PROTO_VERSION 2): with the QP's peer device it names the sender.
 * The side that connects a QP sends a HELLO (its device's name) on
 * stream 1 + j before its first message to endpoint j, so that endpoint
 * learns the peer device before anything else from it on that stream
 * (streams complete in their own order, not with each other).
 *
 * Per endpoint and QP the endpoint keeps one receive side (a struct
 * mfi_conn with rxc pointing at itself: FI_MROCE_RX_DEPTH bounce buffers
 * posted on stream 1 + i) and one view per peer endpoint it talks to (a
 * struct mfi_conn whose sends go on that peer's stream, rxc its receive
 * side).  Everything above this file (mroce_msg.c, mroce_rma.c, ...)
 * works on views as on the QPs of the other layout.
 *
 * Completions come on the domain's one CQ; each wr_id names a request or
 * buffer of one endpoint, which handles it (mfi_shared_poll).  A failed
 * QP fails every endpoint's work on it.  A closed endpoint's buffers stay
 * posted (libmroce cannot take them back): their memory moves to the
 * domain, and what still arrives for them is dropped and counted, or
 * handed to a newer endpoint of the same index.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "mroce_fi.h"

uint16_t mfi_name_idx(const struct sockaddr *name)
{
    if (!mfi_param.shared_conn)
        return 0;
    if (name->sa_family == AF_INET6) {
        uint32_t fl =
            ((const struct sockaddr_in6 *)(const void *)name)->sin6_flowinfo;
        return fl > UINT16_MAX ? UINT16_MAX : (uint16_t)ntohs((uint16_t)fl);
    }
    uint16_t be;
    memcpy(&be, ((const struct sockaddr_in *)(const void *)name)->sin_zero,
           sizeof(be));
    return ntohs(be);
}

void mfi_name_set_idx(struct sockaddr_storage *name, uint16_t idx)
{
    uint16_t be = htons(idx);
    if (name->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)name)->sin6_flowinfo = be;
    else
        memcpy(((struct sockaddr_in *)name)->sin_zero, &be, sizeof(be));
}

/* The device of name sa: sa with index 0. */
static void dev_name(const struct sockaddr *sa, struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    memcpy(out, sa, mfi_sa_len(sa));
    mfi_name_set_idx(out, 0);
}

void mfi_hdr_stamp(struct mfi_ep *ep, struct mfi_buf *b)
{
    struct mfi_hdr *h = (struct mfi_hdr *)b->data;
    h->version = ep->dom->shared ? MFI_PROTO_VERSION : MFI_PROTO_VERSION_MIN;
    h->rsvd = ep->dom->shared ? (uint32_t)ep->idx : 0;
}

static uint32_t pow2_cap(uint32_t n)
{
    uint32_t p = 1;
    while (p < n && p < 65536)
        p <<= 1;
    return p;
}

/* Receive slots a QP needs for the domain's endpoints as they are now. */
static uint32_t rq_need(const struct mfi_domain *d)
{
    uint32_t n = d->nep > 0 ? (uint32_t)d->nep : 1;
    return pow2_cap(n * (uint32_t)mfi_param.rx_depth);
}

/* ep's receive side on dq (NULL: none yet). */
static struct mfi_conn *rx_side(struct mfi_ep *ep, const struct mfi_dqp *dq)
{
    for (struct mfi_conn *c = ep->conns; c; c = c->next)
        if (c->dq == dq && c->rxc == c)
            return c;
    return NULL;
}

/* Gives ep a receive side on dq with its bounce buffers posted; with
 * stream0, first one buffer on stream 0 (CONN-38), where nothing of a
 * peer of the same layout ever arrives: a per-endpoint peer
 * (FI_MROCE_SHARED_CONN=0) has no other stream, so its first message
 * lands there and is refused (mfi_conn_layout_check) instead of waiting
 * for a receive forever.  It takes the place of one of the endpoints'
 * buffers, which is owed and posted once a slot frees. */
static int attach(struct mfi_ep *ep, struct mfi_dqp *dq, int stream0)
{
    if (rx_side(ep, dq))
        return 0;
    struct mfi_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return -FI_ENOMEM;
    c->qp = dq->qp;
    c->qpn = dq->qpn;
    c->dq = dq;
    c->rxc = c;
    c->next = ep->conns;
    ep->conns = c;
    struct mfi_buf *b = stream0 ? mfi_buf_get(ep, 1) : NULL;
    if (b)
        (void)mfi_buf_post_rx_on(ep, c, b, 0); /* refused: none there */
    mfi_conn_post_rx(ep, c);
    return 0;
}

/* A new QP of the domain's (listening if !raddr, else connecting to it),
 * with the receive side of every enabled endpoint on it. */
static struct mfi_dqp *dq_new(struct mfi_domain *d,
                              const struct sockaddr_storage *raddr, int *err)
{
    struct mfi_dqp *dq = calloc(1, sizeof(*dq));
    if (!dq) {
        *err = -FI_ENOMEM;
        return NULL;
    }
    uint32_t n = d->nep > 0 ? (uint32_t)d->nep : 1;
    struct mroce_qp_init_attr a;
    dq->rq_cap = rq_need(d);
    mfi_qp_attr(&a, d->cq, d->mtu, pow2_cap(n * 2 * MFI_TX_SIZE), dq->rq_cap,
                MFI_EP_CNT + 1);
    int rc = mfi_qp_create(d->pd, &a, &dq->qp);
    if (rc < 0) {
        free(dq);
        *err = rc;
        return NULL;
    }
    dq->qpn = mroce_qp_num(dq->qp);
    dq->next = d->dqps;
    d->dqps = dq;
    int stream0 = !raddr; /* a listener: a peer may connect to it */
    for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
        if (ep->enabled) {
            attach(ep, dq, stream0);
            stream0 = 0;
        }
    if (!raddr) {
        rc = mroce_listen(dq->qp);
        if (rc < 0) {
            dq->dead = 1;
            *err = mfi_errno(rc);
            return NULL;
        }
        dq->listening = 1;
        return dq;
    }
    memcpy(&dq->raddr, raddr, sizeof(dq->raddr));
    dq->rlen = mfi_sa_len((const struct sockaddr *)raddr);
    dq->active = 1;
    rc = mfi_qp_connect(dq->qp, raddr);
    if (rc < 0) {
        mfi_shared_failed(d, dq->qpn);
        *err = rc;
        return NULL;
    }
    return dq;
}

/* Bounce buffers still posted on dq, all endpoints. */
static uint32_t dq_posted(struct mfi_domain *d, const struct mfi_dqp *dq)
{
    uint32_t n = 0;
    for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next) {
        struct mfi_conn *c = rx_side(ep, dq);
        if (c)
            n += c->rx_posted;
    }
    return n;
}

/* Retires a listener that was never accepted (to size it anew): its
 * receives are flushed, so their buffers go back to their endpoints'
 * pools, then it is destroyed (kept, failed, until the last close if
 * some flush has not come back yet). */
static void dq_drop_listener(struct mfi_domain *d, struct mfi_dqp *dq)
{
    dq->dead = 1;
    dq->listening = 0;
    mroce_modify_qp_error(dq->qp);
    for (int i = 0; i < 16 && dq_posted(d, dq) && !d->polling; i++)
        mfi_shared_poll(d);
    if (dq_posted(d, dq))
        return;
    for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
        for (struct mfi_conn **pp = &ep->conns; *pp;) {
            struct mfi_conn *c = *pp;
            if (c->dq != dq) {
                pp = &c->next;
                continue;
            }
            *pp = c->next;
            if (ep->qpn_cache == c)
                ep->qpn_cache = NULL;
            free(c);
        }
    mroce_destroy_qp(dq->qp);
    for (struct mfi_dqp **pp = &d->dqps; *pp; pp = &(*pp)->next)
        if (*pp == dq) {
            *pp = dq->next;
            break;
        }
    free(dq);
}

int mfi_shared_listen(struct mfi_domain *d)
{
    int live = 0, err = 0;
    uint32_t need = rq_need(d);
    for (struct mfi_dqp *dq = d->dqps, *next; dq; dq = next) {
        next = dq->next;
        if (!dq->listening)
            continue;
        enum mroce_qp_state st = mroce_qp_get_state(dq->qp);
        if (st == MROCE_QPS_LISTEN) {
            /* Too small for the endpoints: replaced, unless completions
             * are being handled (the replacement polls them itself). */
            if (dq->rq_cap < need && !d->polling)
                dq_drop_listener(d, dq);
            else
                live++;
        } else {
            dq->listening = 0; /* accepted (or failed) */
            if (st == MROCE_QPS_ERROR)
                mfi_shared_failed(d, dq->qpn);
        }
    }
    while (live < MFI_LISTENERS) {
        if (!dq_new(d, NULL, &err))
            return err;
        live++;
    }
    return 0;
}

int mfi_shared_ep_open(struct mfi_domain *d, struct mfi_ep *ep)
{
    int idx = 0;
    while (idx < MFI_EP_CNT && d->ep_by_idx[idx])
        idx++;
    if (idx == MFI_EP_CNT) {
        MFI_WARN(FI_LOG_EP_CTRL, "%d endpoints per domain (ep_cnt)\n",
                 MFI_EP_CNT);
        return -FI_EBUSY;
    }
    ep->idx = idx;
    ep->gen = ++d->ep_gen;
    d->ep_by_idx[idx] = ep;
    ep->dev = d->dev;
    ep->pd = d->pd;
    ep->cq = d->cq;
    memcpy(&ep->addr, &d->addr, sizeof(ep->addr));
    mfi_name_set_idx(&ep->addr, (uint16_t)idx);
    ep->addrlen = d->addrlen;
    ep->mtu = d->mtu;
    if (!d->dev_ep)
        d->dev_ep = ep;
    return 0;
}

int mfi_shared_ep_enable(struct mfi_ep *ep)
{
    struct mfi_domain *d = ep->dom;
    int rc = mfi_shared_listen(d);
    if (rc)
        return rc;
    for (struct mfi_dqp *dq = d->dqps; dq; dq = dq->next)
        if (!dq->dead && (rc = attach(ep, dq, 0)) != 0)
            return rc;
    return 0;
}

/* ep's view of dq towards peer endpoint j (p, if known, is its peer). */
static struct mfi_conn *view_get(struct mfi_ep *ep, struct mfi_dqp *dq,
                                 uint16_t j, struct mfi_peer *p, int *err)
{
    for (struct mfi_conn *c = ep->conns; c; c = c->next)
        if (c->dq == dq && c->rxc != c && c->stream == 1 + j) {
            if (!c->peer)
                c->peer = p;
            return c;
        }
    struct mfi_conn *rx = rx_side(ep, dq);
    if (!rx) {
        if ((*err = attach(ep, dq, 0)) != 0)
            return NULL;
        rx = rx_side(ep, dq);
    }
    struct mfi_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        *err = -FI_ENOMEM;
        return NULL;
    }
    c->qp = dq->qp;
    c->qpn = dq->qpn;
    c->dq = dq;
    c->stream = (uint16_t)(1 + j);
    c->rxc = rx;
    c->peer = p;
    c->next = ep->conns;
    ep->conns = c;
    return c;
}

/* The order of CONN-37 on device names: family, then IP address bytes,
 * then port; negative, 0 or positive as a is below, equal to or above b. */
static int dev_cmp(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return a->sa_family < b->sa_family ? -1 : 1;
    const void *xa, *ya;
    size_t n;
    uint16_t xp, yp;
    if (a->sa_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        xa = &x->sin6_addr;
        ya = &y->sin6_addr;
        n = sizeof(x->sin6_addr);
        xp = ntohs(x->sin6_port);
        yp = ntohs(y->sin6_port);
    } else {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        xa = &x->sin_addr;
        ya = &y->sin_addr;
        n = sizeof(x->sin_addr);
        xp = ntohs(x->sin_port);
        yp = ntohs(y->sin_port);
    }
    int c = memcmp(xa, ya, n);
    if (c)
        return c;
    return xp < yp ? -1 : xp > yp;
}

/* The domain's QP to device dn to send on.  Of two (both devices
 * connected at once) it is the one the lower-named device connected
 * (CONN-37): ours if our name is the lower, else the accepted one whose
 * HELLO named dn; a QP of ours that lost the tie-break is no longer
 * chosen (superseded).  With one QP, that one. */
static struct mfi_dqp *dq_find(struct mfi_domain *d,
                               const struct sockaddr_storage *dn)
{
    struct mfi_dqp *mine = NULL, *theirs = NULL;
    for (struct mfi_dqp *dq = d->dqps; dq; dq = dq->next) {
        if (dq->dead || dq->superseded || !dq->rlen ||
            !mfi_dev_equal((const struct sockaddr *)&dq->raddr,
                           (const struct sockaddr *)dn))
            continue;
        if (dq->active)
            mine = dq;
        else
            theirs = dq;
    }
    if (!mine || !theirs)
        return mine ? mine : theirs;
    return dev_cmp((const struct sockaddr *)&d->addr,
                   (const struct sockaddr *)dn) < 0
               ? mine
               : theirs;
}

struct mfi_conn *mfi_shared_tx(struct mfi_ep *ep, struct mfi_peer *p, int *err)
{
    struct mfi_domain *d = ep->dom;
    uint16_t j = mfi_name_idx((const struct sockaddr *)&p->addr);
    if (j >= MFI_EP_CNT) {
        *err = -FI_EINVAL;
        return NULL;
    }
    struct sockaddr_storage dn;
    dev_name((const struct sockaddr *)&p->addr, &dn);
    struct mfi_dqp *dq = dq_find(d, &dn);
    if (!dq && !(dq = dq_new(d, &dn, err)))
        return NULL;
    struct mfi_conn *c = view_get(ep, dq, j, p, err);
    if (!c)
        return NULL;
    if (c->dead) { /* a view of a QP that failed and was replaced */
        c->dead = 0;
        c->peer = p;
    }
    p->tx = c;
    uint64_t bit = 1ull << j;
    if (dq->active && !(dq->hello_sent & bit)) {
        int rc = mfi_send_ctrl(ep, c, MFI_PKT_HELLO, &d->addr, d->addrlen);
        if (rc < 0) {
            /* The handshake already failed (an ICMP error can come back
             * before this line when another thread drives the device). */
            mfi_shared_failed(d, dq->qpn);
            *err = rc == -FI_EOPBADSTATE ? -FI_EHOSTUNREACH : rc;
            return NULL;
        }
        dq->hello_sent |= bit;
    }
    return c;
}

void mfi_shared_hello(struct mfi_ep *ep, struct mfi_conn *c, const void *name,
                      size_t len)
{
    struct sockaddr_storage ss;
    struct mfi_dqp *dq = c->dq;
    if (!dq || dq->rlen || !mfi_proto_hello(name, len, &ss))
        return;
    dev_name((const struct sockaddr *)&ss, &dq->raddr);
    dq->rlen = mfi_sa_len((const struct sockaddr *)&ss);
    dq->listening = 0;
    /* CONN-37: the peer connected while we did too.  If its name is the
     * lower, our QP loses: it carries on until nothing is outstanding
     * (so no message overtakes one sent before it), then closes
     * (mfi_shared_retire).  Else the peer retires the QP it connected. */
    struct mfi_domain *d = ep->dom;
    if (dev_cmp((const struct sockaddr *)&d->addr,
                (const struct sockaddr *)&dq->raddr) <= 0)
        return;
    for (struct mfi_dqp *o = d->dqps; o; o = o->next)
        if (o != dq && o->active && !o->dead && o->rlen &&
            mfi_dev_equal((const struct sockaddr *)&o->raddr,
                          (const struct sockaddr *)&dq->raddr)) {
            o->superseded = 1;
            d->superseded++;
        }
}

/* Nothing of the domain's endpoints is outstanding: no WR, no message
 * awaiting its peer's answer, no control message or READ waiting. */
static int dom_quiet(const struct mfi_domain *d)
{
    for (const struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
        if (ep->wr_outstanding || ep->tx_inflight || ep->ctrl_wait ||
            ep->rd_wait || ep->releasing)
            return 0;
    return 1;
}

/* CONN-37: closes the QPs of ours that lost the tie-break once the domain
 * is quiet.  The views on them stop being send paths (the next send
 * takes the peer's QP), and the orderly close (DISCONNECT once what we
 * sent is acknowledged) tells the peer to drop its side. */
static void shared_retire(struct mfi_domain *d)
{
    if (!d->superseded || !dom_quiet(d))
        return;
    for (struct mfi_dqp *dq = d->dqps; dq; dq = dq->next) {
        if (!dq->superseded || dq->dead)
            continue;
        for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
            for (struct mfi_conn *c = ep->conns; c; c = c->next)
                if (c->dq == dq && c->peer && c->peer->tx == c)
                    c->peer->tx = NULL;
        dq->dead = 1;
        dq->listening = 0;
        d->retired++;
        (void)mroce_disconnect(dq->qp, 0); /* starts it: no wait */
    }
    d->superseded = 0;
}

struct mfi_conn *mfi_shared_rx_view(struct mfi_ep *ep, struct mfi_conn *c,
                                    uint32_t src_idx)
{
    struct mfi_dqp *dq = c->dq;
    if (!dq || src_idx >= MFI_EP_CNT || !dq->rlen) {
        ep->dom->rx_orphaned++;
        return NULL;
    }
    struct sockaddr_storage name;
    memcpy(&name, &dq->raddr, sizeof(name));
    mfi_name_set_idx(&name, (uint16_t)src_idx);
    struct mfi_peer *p = mfi_peer_get(ep, (const struct sockaddr *)&name);
    if (!p)
        return NULL;
    int err = 0;
    struct mfi_conn *v = view_get(ep, dq, (uint16_t)src_idx, p, &err);
    if (v && (!p->tx || p->tx->dead)) {
        /* Answer on the pair's QP (CONN-37): the one the peer uses
         * unless both connected, then the lower name's. */
        struct mfi_dqp *pq = dq_find(ep->dom, &dq->raddr);
        struct mfi_conn *t = pq && pq != dq
                                 ? view_get(ep, pq, (uint16_t)src_idx, p, &err)
                                 : v;
        p->tx = t ? t : v;
    }
    return v;
}

void mfi_shared_failed(struct mfi_domain *d, uint32_t qpn)
{
    struct mfi_dqp *dq = d->dqps;
    while (dq && dq->qpn != qpn)
        dq = dq->next;
    if (!dq || dq->dead)
        return;
    dq->dead = 1;
    dq->listening = 0;
    /* Flush whatever is still queued so it completes (with errors). */
    mroce_modify_qp_error(dq->qp);
    for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
        for (struct mfi_conn *c = ep->conns; c; c = c->next)
            if (c->dq == dq)
                mfi_conn_fail_view(ep, c);
}

void mfi_shared_refuse(struct mfi_ep *ep, struct mfi_conn *c)
{
    struct mfi_domain *d = ep->dom;
    struct mfi_dqp *dq = c->dq;
    if (!dq || dq->dead)
        return;
    /* The rx side's stream is 0: the peer's only one.  Its header says
     * version 2, which the peer refuses in turn (CONN-38). */
    struct mfi_conn *rx = mfi_rxc(c);
    (void)mfi_send_ctrl(ep, rx, MFI_PKT_HELLO, &d->addr, d->addrlen);
    dq->dead = 1;
    dq->listening = 0;
    for (struct mfi_ep *e = d->eps; e; e = e->dom_next)
        for (struct mfi_conn *v = e->conns; v; v = v->next)
            if (v->dq == dq)
                mfi_conn_fail_view(e, v);
    (void)mroce_disconnect(dq->qp, 0); /* after the HELLO: no wait */
}

/* The endpoint a completion belongs to (NULL: a closed endpoint's
 * buffer no newer endpoint can take). */
static struct mfi_ep *wc_owner(struct mfi_domain *d, const struct mroce_wc *wc)
{
    uint8_t kind = *(const uint8_t *)(uintptr_t)wc->wr_id;
    if (kind == MFI_WR_OP)
        return ((struct mfi_op *)(uintptr_t)wc->wr_id)->ep;
    struct mfi_buf *b = (struct mfi_buf *)(uintptr_t)wc->wr_id;
    if (kind == MFI_WR_TXBUF)
        return b->ep;
    struct mfi_ep *ep = b->sidx < MFI_EP_CNT ? d->ep_by_idx[b->sidx] : NULL;
    if (!ep || ep->gen == b->epgen)
        return ep;
    /* A closed endpoint's buffer, on the stream of a newer endpoint of
     * the same index: it becomes that endpoint's. */
    struct mfi_conn *rx = NULL;
    for (struct mfi_conn *c = ep->conns; c && !rx; c = c->next)
        if (c->dq && c->rxc == c && c->qpn == wc->qp_num)
            rx = c;
    if (!rx)
        return NULL;
    b->conn = rx;
    rx->rx_posted++;
    b->ep = ep;
    b->epgen = ep->gen;
    return ep;
}

/* A closed endpoint's buffer took a message: dropped (counted), and the
 * buffer goes back on its stream, so that stream keeps draining and the
 * sender meets no RNR that would fail the QP for every endpoint. */
static void orphan_repost(struct mfi_domain *d, const struct mroce_wc *wc)
{
    struct mfi_buf *b = (struct mfi_buf *)(uintptr_t)wc->wr_id;
    struct mfi_dqp *dq = d->dqps;
    while (dq && dq->qpn != wc->qp_num)
        dq = dq->next;
    d->rx_orphaned++;
    if (!dq || dq->dead)
        return;
    size_t size = (sizeof(struct mfi_hdr) + (size_t)mfi_param.eager_size + 63) &
                  ~(size_t)63; /* every endpoint's buf_size */
    struct mroce_sge sge = {(uintptr_t)b->data, (uint32_t)size, b->lkey};
    struct mroce_recv_wr wr = {.wr_id = (uintptr_t)b,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .stream = (uint16_t)(1 + b->sidx)};
    mroce_post_recv(dq->qp, &wr, NULL);
}

void mfi_shared_poll(struct mfi_domain *d)
{
    if (d->polling)
        return; /* called again from a completion's handling */
    d->polling = 1;
    struct mroce_wc wc[32];
    for (int round = 0; round < 4; round++) {
        int n = mroce_poll_cq(d->cq, 32, wc);
        if (n <= 0)
            break;
        for (int i = 0; i < n; i++) {
            if (wc[i].status == MROCE_WC_LOC_QP_OP_ERR && wc[i].stream > 0)
                MFI_WARN(FI_LOG_EP_CTRL,
                         "QP 0x%x: the peer accepted too few streams for "
                         "shared connections, so it runs "
                         "FI_MROCE_SHARED_CONN=0; this side runs "
                         "FI_MROCE_SHARED_CONN=1: both sides must use the "
                         "same setting; the connection fails\n",
                         wc[i].qp_num);
            if (wc[i].status != MROCE_WC_SUCCESS) {
                if (wc[i].status != MROCE_WC_WR_FLUSH_ERR)
                    MFI_WARN(FI_LOG_EP_DATA, "QP 0x%x failed: %s\n",
                             wc[i].qp_num, mroce_wc_status_str(wc[i].status));
                mfi_shared_failed(d, wc[i].qp_num);
            }
            struct mfi_ep *ep = wc_owner(d, &wc[i]);
            if (!ep || ep->closed) {
                /* A closed endpoint's: nothing to report. */
                uint8_t kind = *(const uint8_t *)(uintptr_t)wc[i].wr_id;
                if (kind == MFI_WR_RXBUF && wc[i].status == MROCE_WC_SUCCESS)
                    orphan_repost(d, &wc[i]);
                if (ep && kind != MFI_WR_RXBUF)
                    ep->wr_outstanding--;
                continue;
            }
            mfi_ep_handle_wc(ep, &wc[i]);
        }
        if (n < 32)
            break;
    }
    shared_retire(d);
    d->polling = 0;
}

/* Frees the buffer memory of closed endpoints (no QP left uses it). */
static void free_orphans(struct mfi_domain *d)
{
    for (size_t i = 0; i < d->norphans; i++) {
        mroce_dereg_mr(d->orphans[i].mr);
        free(d->orphans[i].data);
        free(d->orphans[i].meta);
    }
    free(d->orphans);
    d->orphans = NULL;
    d->norphans = 0;
}

void mfi_shared_ep_close(struct mfi_ep *ep)
{
    struct mfi_domain *d = ep->dom;
    d->ep_by_idx[ep->idx] = NULL;
    if (d->nep > 1) {
        /* Others go on over the QPs: its buffers stay posted there, so
         * their memory is the domain's from now on. */
        struct mfi_slab *o = realloc(d->orphans,
                                     (d->norphans + ep->nslabs) * sizeof(*o));
        if (o) {
            memcpy(o + d->norphans, ep->slabs, ep->nslabs * sizeof(*o));
            d->orphans = o;
            d->norphans += ep->nslabs;
            ep->nslabs = 0;
        } else {
            MFI_WARN(FI_LOG_EP_CTRL, "no memory to keep the buffers of a "
                                     "closed endpoint: they leak\n");
            ep->nslabs = 0;
        }
        return;
    }
    /* The last endpoint: the QPs go, then whatever their CQ still holds
     * for closed endpoints, then the memory they received into. */
    while (d->dqps) {
        struct mfi_dqp *dq = d->dqps;
        d->dqps = dq->next;
        mroce_destroy_qp(dq->qp);
        free(dq);
    }
    ep->closed = 1;
    struct mroce_wc wc[32];
    while (mroce_poll_cq(d->cq, 32, wc) > 0) {
    }
    free_orphans(d);
}

void mfi_shared_domain_close(struct mfi_domain *d)
{
    while (d->dqps) {
        struct mfi_dqp *dq = d->dqps;
        d->dqps = dq->next;
        mroce_destroy_qp(dq->qp);
        free(dq);
    }
    free_orphans(d);
    while (d->zombies) {
        struct mfi_ep *ep = d->zombies;
        d->zombies = ep->dom_next;
        mfi_ep_free(ep);
    }
}
