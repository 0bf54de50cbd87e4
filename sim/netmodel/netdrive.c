/*
 * netdrive.c - the discrete-event loop that runs engines over the network
 * model (netdrive.h).
 *
 * Each step picks the earliest of: the fabric's next event, and for every
 * endpoint min(its expiry, the time its uplink can take a packet if it wants
 * to write).  The per-endpoint times are cached in an indexed min-heap keyed
 * by (time, host), so the loop never scans all hosts per packet; an entry is
 * refreshed only after the driver has called into that endpoint.  Hosts due
 * at a step are taken out of the heap before any is served, so a host that
 * stays due (an infinitely fast link, max_burst reached) is served once per
 * step and the loop still makes progress through the other hosts.  That
 * heap is an index of hosts, re-keyed in place, not a queue of events: the
 * events themselves (packets) are the fabric's, in the core's event queue
 * (sim/core/simcore.h), whose splitmix64 also gives the engines their
 * random bytes (mroce_netdrive_rand).
 */
#include "netdrive.h"
#include "simcore.h"

#include <stdlib.h>
#include <string.h>

#define NO_POS UINT32_MAX

struct dhost {
    mre_ep *ep;
    mroce_tstamp floor;      /* expiries are not retried before this (stuck) */
    mroce_tstamp key;        /* heap key: when this host next needs service */
    mroce_tstamp stalled_at; /* when stalled was set */
    uint32_t pos;            /* index in d->hheap, NO_POS if not in it */
    uint8_t stalled;         /* write_pkt gave nothing although want_write said
                             yes: ignore want_write until something changes */
    uint8_t dirty;           /* in d->dirty: received this step, so served */
};

struct mroce_netdrive {
    struct mroce_netdrive_config cfg;
    mroce_net *net;
    struct dhost *h;
    uint32_t nhosts;
    uint32_t nplanes; /* the fabric's, at least 1 */
    uint32_t *hheap;  /* host ids, min-heap on (key, id) */
    uint32_t nhheap;
    uint32_t *scratch; /* hosts due this step */
    uint32_t *dirty;   /* hosts that received packets this step */
    uint32_t ndirty;
    mroce_tstamp now;
    mroce_netdrive_hook_fn tx_hook, rx_hook;
    void *tx_user, *rx_user;
    uint64_t rand_state;
    struct mroce_netdrive_counters c;
};

/* ---- indexed host heap ---- */

static int hh_before(const mroce_netdrive *d, uint32_t a, uint32_t b)
{
    return d->h[a].key < d->h[b].key || (d->h[a].key == d->h[b].key && a < b);
}

static void hh_set(mroce_netdrive *d, uint32_t i, uint32_t id)
{
    d->hheap[i] = id;
    d->h[id].pos = i;
}

static void hh_sift_up(mroce_netdrive *d, uint32_t i)
{
    uint32_t id = d->hheap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!hh_before(d, id, d->hheap[parent]))
            break;
        hh_set(d, i, d->hheap[parent]);
        i = parent;
    }
    hh_set(d, i, id);
}

static void hh_sift_down(mroce_netdrive *d, uint32_t i)
{
    uint32_t id = d->hheap[i], n = d->nhheap;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && hh_before(d, d->hheap[c + 1], d->hheap[c]))
            c++;
        if (!hh_before(d, d->hheap[c], id))
            break;
        hh_set(d, i, d->hheap[c]);
        i = c;
    }
    hh_set(d, i, id);
}

/* Insert host id, or restore heap order after its key changed. */
static void hh_update(mroce_netdrive *d, uint32_t id)
{
    uint32_t i = d->h[id].pos;
    if (i == NO_POS) {
        i = d->nhheap++;
        hh_set(d, i, id);
        hh_sift_up(d, i);
        return;
    }
    if (i > 0 && hh_before(d, id, d->hheap[(i - 1) / 2]))
        hh_sift_up(d, i);
    else
        hh_sift_down(d, i);
}

static void hh_remove(mroce_netdrive *d, uint32_t id)
{
    uint32_t i = d->h[id].pos, last;
    if (i == NO_POS)
        return;
    d->h[id].pos = NO_POS;
    last = d->hheap[--d->nhheap];
    if (i == d->nhheap)
        return;
    hh_set(d, i, last);
    hh_update(d, last);
}

/* ---- per-host state ---- */

/* Re-read the endpoint and reposition it in the heap. */
static void refresh(mroce_netdrive *d, uint32_t id)
{
    struct dhost *x = &d->h[id];
    mroce_tstamp key = mre_ep_expiry(x->ep);
    if (key < x->floor)
        key = x->floor;
    if (!x->stalled && mre_ep_want_write(x->ep)) {
        mroce_tstamp r = mroce_net_uplink_ready(d->net, id,
                                                d->cfg.uplink_queue_bytes);
        if (r < key)
            key = r;
    }
    /* kick_all() runs after every run_while predicate: make the common
     * "nothing changed" case cost no heap work. */
    if (x->pos != NO_POS && key == x->key)
        return;
    x->key = key;
    hh_update(d, id);
}

void mroce_netdrive_kick(mroce_netdrive *d, uint32_t host)
{
    if (host >= d->nhosts || !d->h[host].ep)
        return;
    d->h[host].stalled = 0;
    refresh(d, host);
}

void mroce_netdrive_kick_all(mroce_netdrive *d)
{
    for (uint32_t i = 0; i < d->nhosts; i++)
        mroce_netdrive_kick(d, i);
}

/* The re-read run_while does after each predicate call.  Unlike a kick it
 * keeps a stall set at this very instant: otherwise an endpoint whose
 * want_write says yes while write_pkt has nothing would be retried, stall
 * and be re-read again forever without time advancing. */
static void reread_all(mroce_netdrive *d)
{
    for (uint32_t i = 0; i < d->nhosts; i++) {
        struct dhost *x = &d->h[i];
        if (!x->ep)
            continue;
        if (x->stalled && d->now > x->stalled_at)
            x->stalled = 0;
        refresh(d, i);
    }
}

/* ---- addresses and randomness ---- */

void mroce_netdrive_addr(uint32_t host, struct mre_addr *addr)
{
    memset(addr, 0, sizeof(*addr));
    addr->len = 4;
    addr->data[0] = (uint8_t)(host >> 24);
    addr->data[1] = (uint8_t)(host >> 16);
    addr->data[2] = (uint8_t)(host >> 8);
    addr->data[3] = (uint8_t)host;
}

void mroce_netdrive_plane_addr(uint32_t host, uint32_t plane,
                               struct mre_addr *addr)
{
    mroce_netdrive_addr(host, addr);
    if (plane) {
        addr->len = 5;
        addr->data[4] = (uint8_t)plane;
    }
}

int mroce_netdrive_plane_of(const struct mre_addr *addr)
{
    if (addr->len == 4)
        return 0;
    if (addr->len == 5 && addr->data[4] > 0 &&
        addr->data[4] < MROCE_NET_MAX_PLANES)
        return addr->data[4];
    return -1;
}

int mroce_netdrive_host_of(const struct mre_addr *addr)
{
    uint32_t h;
    if (mroce_netdrive_plane_of(addr) < 0)
        return -1;
    h = (uint32_t)addr->data[0] << 24 | (uint32_t)addr->data[1] << 16 |
        (uint32_t)addr->data[2] << 8 | addr->data[3];
    return h > INT32_MAX ? -1 : (int)h;
}

/* The PLANES entry of (host, plane): fc00::<plane>:0:<host>, port 4791. */
static void plane_entry(uint32_t host, uint32_t plane, struct mre_plane_addr *a)
{
    memset(a->addr, 0, sizeof(a->addr));
    a->addr[0] = 0xfc;
    a->addr[9] = (uint8_t)plane;
    a->addr[12] = (uint8_t)(host >> 24);
    a->addr[13] = (uint8_t)(host >> 16);
    a->addr[14] = (uint8_t)(host >> 8);
    a->addr[15] = (uint8_t)host;
    a->port = 4791;
}

/* The engine's plane_addr: a peer's PLANES entry back to its model
 * address.  Anything plane_entry() does not write is refused (the bytes
 * came from the network). */
static int plane_to_addr(struct mre_addr *out, const struct mre_plane_addr *in,
                         void *user)
{
    static const uint8_t zero[8];
    uint32_t host;
    (void)user;
    if (in->addr[0] != 0xfc || memcmp(in->addr + 1, zero, 8) != 0 ||
        in->addr[9] >= MROCE_NET_MAX_PLANES || in->addr[10] || in->addr[11] ||
        in->port != 4791)
        return -1;
    host = (uint32_t)in->addr[12] << 24 | (uint32_t)in->addr[13] << 16 |
           (uint32_t)in->addr[14] << 8 | in->addr[15];
    if (host > INT32_MAX)
        return -1;
    mroce_netdrive_plane_addr(host, in->addr[9], out);
    return 0;
}

void mroce_netdrive_ep_planes(struct mre_ep_config *cfg, uint32_t host,
                              uint32_t nplanes)
{
    if (nplanes > MROCE_NET_MAX_PLANES)
        nplanes = MROCE_NET_MAX_PLANES;
    cfg->nplanes = (uint8_t)(nplanes > 1 ? nplanes : 0);
    cfg->plane_addr = nplanes > 1 ? plane_to_addr : NULL;
    cfg->plane_user = NULL;
    for (uint32_t k = 0; k < nplanes && nplanes > 1; k++)
        plane_entry(host, k, &cfg->planes[k]);
}

void mroce_netdrive_rand(uint8_t *buf, size_t len, void *user)
{
    mroce_netdrive *d = user;
    while (len > 0) {
        uint64_t z;
        size_t n = len < 8 ? len : 8;
        z = rng_next(&d->rand_state); /* the core's splitmix64 */
        memcpy(buf, &z, n);
        buf += n;
        len -= n;
    }
}

/* ---- lifetime ---- */

void mroce_netdrive_config_default(struct mroce_netdrive_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    mroce_net_config_default(&cfg->net);
    cfg->uplink_queue_bytes = 8192;
    cfg->max_burst = 64;
    cfg->start_time = 0;
    cfg->pred_may_post = 1;
}

int mroce_netdrive_new(mroce_netdrive **pd,
                       const struct mroce_netdrive_config *cfg)
{
    mroce_netdrive *d;
    int rc;
    *pd = NULL;
    if (cfg->max_burst == 0)
        return MROCE_EINVAL;
    d = calloc(1, sizeof(*d));
    if (!d)
        return MROCE_ENOMEM;
    d->cfg = *cfg;
    rc = mroce_net_new(&d->net, &cfg->net);
    if (rc < 0) {
        free(d);
        return rc;
    }
    d->nhosts = cfg->net.hosts;
    d->nplanes = mroce_net_planes(d->net);
    d->h = calloc(d->nhosts, sizeof(*d->h));
    d->hheap = calloc(d->nhosts, sizeof(*d->hheap));
    d->scratch = calloc(d->nhosts, sizeof(*d->scratch));
    d->dirty = calloc(d->nhosts, sizeof(*d->dirty));
    if (!d->h || !d->hheap || !d->scratch || !d->dirty) {
        mroce_netdrive_del(d);
        return MROCE_ENOMEM;
    }
    for (uint32_t i = 0; i < d->nhosts; i++)
        d->h[i].pos = NO_POS;
    d->now = cfg->start_time;
    /* A stream of its own, distinct from the fabric's. */
    d->rand_state = cfg->net.seed ^ 0x647269766572ull;
    *pd = d;
    return 0;
}

void mroce_netdrive_del(mroce_netdrive *d)
{
    if (!d)
        return;
    mroce_net_del(d->net);
    free(d->h);
    free(d->hheap);
    free(d->scratch);
    free(d->dirty);
    free(d);
}

mroce_net *mroce_netdrive_net(mroce_netdrive *d)
{
    return d->net;
}

int mroce_netdrive_attach(mroce_netdrive *d, uint32_t host, mre_ep *ep)
{
    struct dhost *x;
    if (host >= d->nhosts)
        return MROCE_EINVAL;
    x = &d->h[host];
    if (!ep) {
        hh_remove(d, host);
        x->ep = NULL;
        return 0;
    }
    if (x->ep)
        return MROCE_EBUSY;
    x->ep = ep;
    x->stalled = 0;
    x->floor = 0;
    refresh(d, host);
    return 0;
}

mre_ep *mroce_netdrive_ep(const mroce_netdrive *d, uint32_t host)
{
    return host < d->nhosts ? d->h[host].ep : NULL;
}

void mroce_netdrive_set_tx_hook(mroce_netdrive *d, mroce_netdrive_hook_fn fn,
                                void *user)
{
    d->tx_hook = fn;
    d->tx_user = user;
}

void mroce_netdrive_set_rx_hook(mroce_netdrive *d, mroce_netdrive_hook_fn fn,
                                void *user)
{
    d->rx_hook = fn;
    d->rx_user = user;
}

void mroce_netdrive_get_counters(const mroce_netdrive *d,
                                 struct mroce_netdrive_counters *c)
{
    *c = d->c;
}

/* ---- the loop ---- */

mroce_tstamp mroce_netdrive_now(const mroce_netdrive *d)
{
    return d->now;
}

mroce_tstamp mroce_netdrive_next_time(const mroce_netdrive *d)
{
    mroce_tstamp t = mroce_net_next_event_time(d->net);
    if (d->nhheap && d->h[d->hheap[0]].key < t)
        t = d->h[d->hheap[0]].key;
    return t != MROCE_TSTAMP_INF && t < d->now ? d->now : t;
}

static void on_deliver(void *user, const struct mroce_net_pkt *pk)
{
    mroce_netdrive *d = user;
    struct dhost *x = &d->h[pk->dst];
    struct mre_rx_info info;
    uint8_t *buf = pk->buf;
    size_t len = pk->len;
    uint8_t ecn = pk->ecn;

    if (!x->ep) {
        d->c.rx_no_host++;
        return;
    }
    if (d->rx_hook) {
        struct mroce_netdrive_pkt hp = {
            .src = pk->src,
            .dst = pk->dst,
            .entropy = pk->entropy,
            .ecn = pk->ecn,
            .spine = pk->spine,
            .plane = pk->plane,
            .qp_num = 0,
            .buf = pk->buf,
            .len = pk->len,
            .now = d->now,
        };
        if (d->rx_hook(d->rx_user, &hp) == MROCE_NETDRIVE_DROP) {
            d->c.rx_hook_drops++;
            return;
        }
        len = hp.len < MROCE_NET_MAX_PKT ? hp.len : MROCE_NET_MAX_PKT;
        ecn = hp.ecn;
    }
    memset(&info, 0, sizeof info);
    mroce_netdrive_plane_addr(pk->src, pk->plane, &info.from);
    info.ecn = ecn;
    info.plane = pk->plane;
    mre_ep_recv(x->ep, buf, len, &info, d->now);
    d->c.rx_pkts++;
    x->stalled = 0;
    if (!x->dirty) {
        x->dirty = 1;
        d->dirty[d->ndirty++] = pk->dst;
    }
}

/* Let host id hand packets to its uplink while the uplink has room. */
static void drain(mroce_netdrive *d, uint32_t id, mroce_tstamp t)
{
    struct dhost *x = &d->h[id];
    for (uint32_t burst = 0; burst < d->cfg.max_burst; burst++) {
        struct mre_tx_info info;
        uint8_t *buf;
        int n, dst, plane;
        uint16_t entropy;
        uint8_t ecn;
        size_t len;

        if (mroce_net_uplink_ready(d->net, id, d->cfg.uplink_queue_bytes) > t)
            return;
        if (!mre_ep_want_write(x->ep))
            return;
        buf = mroce_net_tx_buf(d->net);
        if (!buf) {
            d->c.tx_errors++;
            x->stalled = 1;
            x->stalled_at = t;
            return;
        }
        memset(&info, 0, sizeof(info));
        n = mre_ep_write_pkt(x->ep, buf, MROCE_NET_MAX_PKT, &info, t);
        if (n <= 0) {
            if (n < 0)
                d->c.tx_errors++;
            else
                d->c.write_stalls++;
            x->stalled = 1;
            x->stalled_at = t;
            return;
        }
        dst = mroce_netdrive_host_of(&info.to);
        plane = mroce_netdrive_plane_of(&info.to);
        if (dst < 0 || (uint32_t)dst >= d->nhosts || info.plane >= d->nplanes) {
            d->c.tx_bad_addr++;
            continue; /* the staged buffer is reused for the next packet */
        }
        if (plane != info.plane) {
            /* Planes are not cross-connected (PATH-17): from plane k, an
             * address on another plane is unreachable. */
            d->c.tx_cross_plane++;
            continue;
        }
        entropy = info.entropy;
        ecn = info.ecn;
        len = (size_t)n;
        if (d->tx_hook) {
            struct mroce_netdrive_pkt hp = {
                .src = id,
                .dst = (uint32_t)dst,
                .entropy = entropy,
                .ecn = ecn,
                .spine = (uint16_t)mroce_net_spine_of_plane(d->net, info.plane,
                                                            id, (uint32_t)dst,
                                                            entropy),
                .plane = info.plane,
                .qp_num = info.qp_num,
                .buf = buf,
                .len = len,
                .now = t,
            };
            if (d->tx_hook(d->tx_user, &hp) == MROCE_NETDRIVE_DROP) {
                d->c.tx_hook_drops++;
                continue;
            }
            entropy = hp.entropy;
            ecn = hp.ecn;
            len = hp.len < MROCE_NET_MAX_PKT ? hp.len : MROCE_NET_MAX_PKT;
        }
        d->c.tx_pkts++;
        mroce_net_send_staged_plane(d->net, info.plane, id, (uint32_t)dst,
                                    entropy, ecn, len, t);
    }
}

/* One step at t, the value of mroce_netdrive_next_time() (not INF).
 * Returns 0 if it ran no endpoint or hook code: only internal fabric events
 * (a packet reaching its downlink), which no predicate can observe. */
static int step_at(mroce_netdrive *d, mroce_tstamp t)
{
    uint32_t ndue = 0;
    size_t ndeliv;

    d->now = t;
    d->c.steps++;

    /* 1. Packets due now.  Receivers are served in this step whatever
     * their heap key, so they are not re-read until after that. */
    ndeliv = mroce_net_deliver_due(d->net, t, on_deliver, d);
    for (uint32_t i = 0; i < d->ndirty; i++) {
        uint32_t id = d->dirty[i];
        d->h[id].dirty = 0;
        if (d->h[id].ep) {
            hh_remove(d, id);
            d->scratch[ndue++] = id;
        }
    }
    d->ndirty = 0;

    /* 2. Take every other due host out of the heap before serving any
     * (see top of file). */
    while (d->nhheap && d->h[d->hheap[0]].key <= t) {
        uint32_t id = d->hheap[0];
        hh_remove(d, id);
        d->scratch[ndue++] = id;
    }

    /* 3. Serve them: timers, then sending, then re-read. */
    for (uint32_t i = 0; i < ndue; i++) {
        uint32_t id = d->scratch[i];
        struct dhost *x = &d->h[id];
        /* Fresh, not the cached value: a receive may have set a timer. */
        if (mre_ep_expiry(x->ep) <= t && x->floor <= t) {
            mre_ep_handle_expiry(x->ep, t);
            d->c.expiries++;
            x->stalled = 0;
            if (mre_ep_expiry(x->ep) <= t) {
                /* A timer that stays due would spin this instant forever;
                 * look at it again 1 ns later instead. */
                d->c.expiry_stuck++;
                x->floor = t + 1;
            }
        }
        if (!x->stalled)
            drain(d, id, t);
        refresh(d, id);
    }
    return ndeliv > 0 || ndue > 0;
}

int mroce_netdrive_step(mroce_netdrive *d)
{
    mroce_tstamp t = mroce_netdrive_next_time(d);
    if (t == MROCE_TSTAMP_INF)
        return 0;
    step_at(d, t);
    return 1;
}

void mroce_netdrive_run_until(mroce_netdrive *d, mroce_tstamp t)
{
    mroce_tstamp nt;
    mroce_netdrive_kick_all(d);
    while ((nt = mroce_netdrive_next_time(d)) <= t && nt != MROCE_TSTAMP_INF)
        step_at(d, nt);
    if (t != MROCE_TSTAMP_INF && t > d->now)
        d->now = t;
}

int mroce_netdrive_run_while(mroce_netdrive *d, int (*pred)(void *user),
                             void *user, mroce_tstamp limit)
{
    int touched = 1;
    mroce_netdrive_kick_all(d);
    for (;;) {
        mroce_tstamp nt;
        /* A step that ran no endpoint or hook cannot change what pred sees
         * (about half the steps: packets reaching a downlink), so pred and
         * the re-read after it are skipped then. */
        if (touched) {
            if (!pred(user))
                return 1;
            if (d->cfg.pred_may_post)
                reread_all(d);
        }
        nt = mroce_netdrive_next_time(d);
        if (nt == MROCE_TSTAMP_INF || nt > limit) {
            if (limit != MROCE_TSTAMP_INF && limit > d->now)
                d->now = limit;
            return 0;
        }
        touched = step_at(d, nt);
    }
}

int mroce_netdrive_run_idle(mroce_netdrive *d, mroce_tstamp limit)
{
    mroce_tstamp nt;
    mroce_netdrive_kick_all(d);
    for (;;) {
        nt = mroce_netdrive_next_time(d);
        if (nt == MROCE_TSTAMP_INF)
            return 1;
        if (nt > limit) {
            if (limit != MROCE_TSTAMP_INF && limit > d->now)
                d->now = limit;
            return 0;
        }
        step_at(d, nt);
    }
}
