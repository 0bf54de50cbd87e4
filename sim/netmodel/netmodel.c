/*
 * netmodel.c - the fabric of the deterministic network model (netmodel.h).
 *
 * A packet costs two events: "arrive" (end of propagation: it crosses its
 * spine and joins the destination's downlink queue) and "deliver" (its last
 * bit leaves the downlink).  A spine with a rate (per-path rate) adds a
 * third between them, "spine out" (its last bit leaves the spine queue, it
 * joins the downlink queue); spines without one cost nothing extra.  A
 * packet has at most one event pending at any time.  The uplink needs no event: it is a FIFO with no
 * drops, so a packet's departure time is known when it is sent.  The
 * downlink does need one, because packets from different senders reach it
 * in an order only the event queue knows.  Queue occupancy is derived from
 * the time a link stays busy rather than from a byte counter, so it does not
 * depend on how simultaneous events happen to be ordered.
 *
 * Planes: with P planes each host has P uplinks and P downlinks and
 * each plane its own `spines` spines, all in flat arrays: host h's links on
 * plane k are hosts[k * H + h], plane k's spine i is spines[k * S + i].
 * With one plane that is the layout, and the hash, of a fabric without
 * planes.
 *
 * Every queue (uplinks, spine queues, downlinks) is the core's link
 * primitive (link.h) at a fixed-point rate, with its drop-tail and step
 * ECN rules; the spine faults and the global faults are this file's.
 * Events and randomness come from the simulation core (simcore.h): an
 * event's type is the packet's stage and its index the packet's slot in
 * the packet table (byid), and events pop in (time, insertion order), the
 * same order for the same calls.  Everything the hot path touches is
 * preallocated: packets come from a free list grown in chunks, and the
 * event heap is kept at least as large as the number of packets that
 * exist, so pushing an event does not need memory.
 */
#include "netmodel.h"
#include "link.h"
#include "simcore.h"

#include <stdlib.h>
#include <string.h>

#define PS_PER_NS 1000u
#define PKTS_PER_CHUNK 32u
#define MAX_HOSTS (1u << 20) /* the spine hash packs src/dst in 20 bits */
#define MAX_SPINES 65535u    /* all planes' together */
#define P_ONE (1ull << 53)   /* probability 1.0 as a threshold on 53 bits */

enum { ST_ARRIVE = 0, ST_DELIVER = 1, ST_SPINE_OUT = 2 };

struct pkt {
    struct pkt *next; /* free list */
    uint32_t id;      /* slot in the packet table: its events' index */
    uint32_t src, dst;
    uint32_t len;
    uint16_t entropy;
    uint16_t spine; /* global index: plane * spines + spine in the plane */
    uint8_t plane;
    uint8_t ecn;
    uint8_t stage;
    uint8_t data[MROCE_NET_MAX_PKT];
};

struct chunk {
    struct chunk *next;
    size_t n;
    struct pkt pkts[];
};

struct host {
    struct slink up, down; /* fixed-point rates (link.h) */
    struct mroce_net_host_counters c;
};

struct spine {
    uint64_t delay_ps;
    uint64_t loss_th;
    int blackhole;
    double loss;
    struct slink link;    /* per-path rate: rate 0 = no spine queue */
    uint32_t queue_limit; /* spine queue drop-tail limit, bytes */
    uint32_t ecn_thresh;  /* spine queue CE threshold, bytes */
    struct mroce_net_spine_counters c;
};

struct mroce_net {
    struct mroce_net_config cfg;
    uint32_t nplanes;     /* cfg.planes, at least 1 */
    struct host *hosts;   /* hosts * nplanes: links of (plane, host) */
    struct spine *spines; /* spines * nplanes */

    struct evq q;      /* ps; type = stage, idx = packet id */
    struct pkt **byid; /* packet table, npkts entries */

    struct pkt *free_list;
    struct chunk *chunks;
    size_t npkts;     /* packets allocated (pool size) */
    size_t in_flight; /* packets in the event heap */
    struct pkt *staged;

    uint64_t delay_ps;
    uint64_t loss_th, dup_th, corrupt_th, reorder_th;
    uint64_t hash_seed;
    /* One stream per kind of decision, so that enabling one fault does not
     * shift the random sequence another one sees. */
    uint64_t r_loss, r_dup, r_corrupt, r_reorder, r_spine;

    struct mroce_net_counters c;
};

/* ---- randomness: splitmix64 streams of the core (rng_*) ---- */

static int prob_ok(double p)
{
    return p >= 0.0 && p <= 1.0; /* also rejects NaN */
}

static uint64_t prob_th(double p)
{
    return (uint64_t)(p * (double)P_ONE);
}

/* ---- time ---- */

static uint64_t ns_to_ps(mroce_tstamp ns)
{
    return ns >= UINT64_MAX / PS_PER_NS ? UINT64_MAX : ns * PS_PER_NS;
}

static mroce_tstamp ps_to_ns_ceil(uint64_t ps)
{
    return ps / PS_PER_NS + (ps % PS_PER_NS != 0);
}

/* A queue limit or threshold of the API (MROCE_NET_UNLIMITED: none) in
 * the link primitive's terms. */
static uint64_t lim64(uint32_t v)
{
    return v == MROCE_NET_UNLIMITED ? SLINK_UNLIMITED : v;
}

/* ---- events ---- */

static void drop_pkt(mroce_net *net, struct pkt *p);

/* Schedules p's next stage at t.  The heap has room for every packet, so
 * only a sequence number beyond the core's range can fail (after 2^36
 * events): the packet is then dropped and counted as drop_nomem. */
static void ev_push(mroce_net *net, uint64_t t, struct pkt *p)
{
    if (evq_push(&net->q, t, p->stage, p->id) < 0) {
        net->c.drop_nomem++;
        drop_pkt(net, p);
    }
}

/* ---- packet pool ---- */

static int pool_grow(mroce_net *net)
{
    size_t n = PKTS_PER_CHUNK;
    struct chunk *ch;
    size_t lim = (size_t)EV_IDX_MAX + 1; /* packet ids fit an event index */
    struct pkt **byid;
    if (net->cfg.max_pkts && net->cfg.max_pkts < lim)
        lim = net->cfg.max_pkts;
    if (net->npkts >= lim)
        return -1;
    if (n > lim - net->npkts)
        n = lim - net->npkts;
    /* Grow the heap first so that every existing packet has a slot. */
    if (net->q.cap < net->npkts + n) {
        size_t cap = net->q.cap;
        while (cap < net->npkts + n)
            cap *= 2;
        if (evq_reserve(&net->q, cap) < 0)
            return -1;
    }
    byid = realloc(net->byid, (net->npkts + n) * sizeof(*byid));
    if (!byid)
        return -1;
    net->byid = byid;
    ch = malloc(sizeof(*ch) + n * sizeof(struct pkt));
    if (!ch)
        return -1;
    ch->n = n;
    ch->next = net->chunks;
    net->chunks = ch;
    for (size_t i = 0; i < n; i++) {
        ch->pkts[i].id = (uint32_t)(net->npkts + i);
        byid[net->npkts + i] = &ch->pkts[i];
        ch->pkts[i].next = net->free_list;
        net->free_list = &ch->pkts[i];
    }
    net->npkts += n;
    return 0;
}

static struct pkt *pkt_get(mroce_net *net)
{
    struct pkt *p = net->free_list;
    if (!p) {
        if (pool_grow(net) < 0)
            return NULL;
        p = net->free_list;
    }
    net->free_list = p->next;
    return p;
}

static void pkt_put(mroce_net *net, struct pkt *p)
{
    p->next = net->free_list;
    net->free_list = p;
}

/* ---- lifetime ---- */

void mroce_net_config_default(struct mroce_net_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->seed = 1;
    cfg->hosts = 2;
    cfg->spines = 4;
    cfg->delay = 2000;
    cfg->rate_bps = 100000000000ull;
    cfg->queue_limit = 1u << 20;
    cfg->ecn_thresh = 64u << 10;
    cfg->reorder_max = 10000;
}

static int rate_ok(uint64_t rate)
{
    return rate == 0 || rate >= 1000;
}

int mroce_net_new(mroce_net **pnet, const struct mroce_net_config *cfg)
{
    mroce_net *net;
    *pnet = NULL;
    if (cfg->hosts < 1 || cfg->hosts > MAX_HOSTS || cfg->spines < 1 ||
        cfg->spines > MAX_SPINES || !rate_ok(cfg->rate_bps) ||
        !prob_ok(cfg->loss) || !prob_ok(cfg->dup) || !prob_ok(cfg->corrupt) ||
        !prob_ok(cfg->reorder))
        return MROCE_EINVAL;
    uint32_t np = cfg->planes ? cfg->planes : 1;
    if (np > MROCE_NET_MAX_PLANES || cfg->spines * np > MAX_SPINES)
        return MROCE_EINVAL;
    net = calloc(1, sizeof(*net));
    if (!net)
        return MROCE_ENOMEM;
    net->cfg = *cfg;
    net->nplanes = np;
    net->hosts = calloc((size_t)cfg->hosts * np, sizeof(*net->hosts));
    net->spines = calloc((size_t)cfg->spines * np, sizeof(*net->spines));
    if (!net->hosts || !net->spines || evq_init(&net->q, 64) < 0) {
        mroce_net_del(net);
        return MROCE_ENOMEM;
    }
    for (uint32_t i = 0; i < cfg->hosts * np; i++)
        net->hosts[i].up.rate = net->hosts[i].down.rate = slink_rate_fixed(
            cfg->rate_bps);
    net->delay_ps = ns_to_ps(cfg->delay);
    net->loss_th = prob_th(cfg->loss);
    net->dup_th = prob_th(cfg->dup);
    net->corrupt_th = prob_th(cfg->corrupt);
    net->reorder_th = prob_th(cfg->reorder);
    /* Distinct, well-mixed seeds per stream from the one user seed. */
    net->hash_seed = rng_mix64(cfg->seed ^ 0x6e65746d6f64656cull);
    net->r_loss = rng_mix64(cfg->seed + 1);
    net->r_dup = rng_mix64(cfg->seed + 2);
    net->r_corrupt = rng_mix64(cfg->seed + 3);
    net->r_reorder = rng_mix64(cfg->seed + 4);
    net->r_spine = rng_mix64(cfg->seed + 5);
    *pnet = net;
    return 0;
}

void mroce_net_del(mroce_net *net)
{
    struct chunk *ch, *next;
    if (!net)
        return;
    for (ch = net->chunks; ch; ch = next) {
        next = ch->next;
        free(ch);
    }
    evq_free(&net->q);
    free(net->byid);
    free(net->hosts);
    free(net->spines);
    free(net);
}

const struct mroce_net_config *mroce_net_config_get(const mroce_net *net)
{
    return &net->cfg;
}

/* ---- sending ---- */

uint32_t mroce_net_spine_of_plane(const mroce_net *net, uint32_t plane,
                                  uint32_t src, uint32_t dst, uint16_t entropy)
{
    /* src and dst are < 2^20 and plane < 8, so the fields do not overlap;
     * plane 0 hashes as a fabric without planes. */
    uint64_t h = rng_mix64(net->hash_seed ^ ((uint64_t)plane << 60) ^
                           ((uint64_t)src << 40) ^ ((uint64_t)dst << 16) ^
                           entropy);
    return plane * net->cfg.spines +
           (uint32_t)(((h >> 32) * net->cfg.spines) >> 32);
}

uint32_t mroce_net_spine_of(const mroce_net *net, uint32_t src, uint32_t dst,
                            uint16_t entropy)
{
    return mroce_net_spine_of_plane(net, 0, src, dst, entropy);
}

uint32_t mroce_net_planes(const mroce_net *net)
{
    return net->nplanes;
}

/* The links of host h on plane k. */
static struct host *host_at(mroce_net *net, uint32_t plane, uint32_t h)
{
    return &net->hosts[(size_t)plane * net->cfg.hosts + h];
}

/* Send one copy from the end of the uplink (time t) towards the spine. */
static void inject(mroce_net *net, struct pkt *p, uint64_t t)
{
    if (net->corrupt_th && rng_hit(&net->r_corrupt, net->corrupt_th) &&
        p->len > 0) {
        uint64_t bit = rng_range(&net->r_corrupt, (uint64_t)p->len * 8);
        p->data[bit >> 3] ^= (uint8_t)(1u << (bit & 7));
        net->c.corrupted++;
    }
    t += net->delay_ps + net->spines[p->spine].delay_ps;
    if (net->reorder_th && net->cfg.reorder_max &&
        rng_hit(&net->r_reorder, net->reorder_th)) {
        uint64_t extra = 1 + rng_range(&net->r_reorder, net->cfg.reorder_max);
        t += ns_to_ps(extra);
        net->c.reordered++;
    }
    p->stage = ST_ARRIVE;
    net->in_flight++;
    ev_push(net, t, p);
}

uint8_t *mroce_net_tx_buf(mroce_net *net)
{
    if (!net->staged)
        net->staged = pkt_get(net);
    return net->staged ? net->staged->data : NULL;
}

int mroce_net_send_staged_plane(mroce_net *net, uint32_t plane, uint32_t src,
                                uint32_t dst, uint16_t entropy, uint8_t ecn,
                                size_t len, mroce_tstamp now)
{
    struct pkt *p = net->staged;
    struct host *up;
    uint64_t t;
    if (src >= net->cfg.hosts || dst >= net->cfg.hosts ||
        plane >= net->nplanes || !p)
        return MROCE_EINVAL;
    if (len > MROCE_NET_MAX_PKT) {
        net->c.drop_oversize++;
        return MROCE_ERANGE;
    }
    net->staged = NULL;
    p->src = src;
    p->dst = dst;
    p->len = (uint32_t)len;
    p->entropy = entropy;
    p->plane = (uint8_t)plane;
    p->ecn = ecn & 3;
    net->c.tx_pkts++;
    net->c.tx_bytes += len;
    up = host_at(net, plane, src);
    up->c.up_pkts++;
    up->c.up_bytes += len;
    t = slink_tx(&up->up, ns_to_ps(now), p->len);

    if (net->loss_th && rng_hit(&net->r_loss, net->loss_th)) {
        net->c.drop_loss++;
        pkt_put(net, p);
        return 0;
    }
    p->spine = (uint16_t)mroce_net_spine_of_plane(net, plane, src, dst,
                                                  entropy);
    if (net->dup_th && rng_hit(&net->r_dup, net->dup_th)) {
        /* Copy before the original can be corrupted: each copy gets its
         * own corruption and reordering draws. */
        struct pkt *q = pkt_get(net);
        if (q) {
            uint32_t qid = q->id;
            memcpy(q, p, offsetof(struct pkt, data) + p->len);
            q->id = qid;
            net->c.dups++;
            inject(net, p, t);
            inject(net, q, t);
            return 0;
        }
        net->c.drop_nomem++;
    }
    inject(net, p, t);
    return 0;
}

int mroce_net_send_staged(mroce_net *net, uint32_t src, uint32_t dst,
                          uint16_t entropy, uint8_t ecn, size_t len,
                          mroce_tstamp now)
{
    return mroce_net_send_staged_plane(net, 0, src, dst, entropy, ecn, len,
                                       now);
}

int mroce_net_send(mroce_net *net, uint32_t src, uint32_t dst, uint16_t entropy,
                   uint8_t ecn, const uint8_t *buf, size_t len,
                   mroce_tstamp now)
{
    uint8_t *b;
    if (src >= net->cfg.hosts || dst >= net->cfg.hosts)
        return MROCE_EINVAL;
    if (len > MROCE_NET_MAX_PKT) {
        net->c.drop_oversize++;
        return MROCE_ERANGE;
    }
    b = mroce_net_tx_buf(net);
    if (!b) {
        net->c.drop_nomem++;
        return MROCE_ENOMEM;
    }
    if (len)
        memmove(b, buf, len); /* buf may be the staged buffer itself */
    return mroce_net_send_staged(net, src, dst, entropy, ecn, len, now);
}

/* ---- events ---- */

static int is_ect(uint8_t ecn)
{
    return ecn == MROCE_ECN_ECT0 || ecn == MROCE_ECN_ECT1;
}

/* A packet in flight leaves the fabric without being delivered. */
static void drop_pkt(mroce_net *net, struct pkt *p)
{
    net->in_flight--;
    pkt_put(net, p);
}

static void downlink(mroce_net *net, uint64_t t, struct pkt *p);

/* The packet reaches the spine: spine faults, then either the spine queue
 * (spine with a rate) or straight on to the downlink. */
static void arrive(mroce_net *net, uint64_t t, struct pkt *p)
{
    struct spine *sp = &net->spines[p->spine];
    uint32_t occ = 0;
    uint64_t fill;

    sp->c.pkts++;
    sp->c.bytes += p->len;
    if (sp->blackhole) {
        sp->c.drops++;
        net->c.drop_blackhole++;
        drop_pkt(net, p);
        return;
    }
    if (sp->loss_th && rng_hit(&net->r_spine, sp->loss_th)) {
        sp->c.drops++;
        net->c.drop_spine_loss++;
        drop_pkt(net, p);
        return;
    }
    if (!slink_rate_finite(&sp->link.rate)) {
        downlink(net, t, p);
        return;
    }
    /* Per-path rate: the spine queue, with the downlink's rules. */
    occ = slink_backlog(&sp->link, t);
    fill = (uint64_t)occ + p->len;
    if (slink_droptail(occ, p->len, lim64(sp->queue_limit))) {
        sp->c.drops++;
        sp->c.queue_drops++;
        net->c.drop_spine_queue++;
        drop_pkt(net, p);
        return;
    }
    if (is_ect(p->ecn) && slink_ecn_step(occ, lim64(sp->ecn_thresh))) {
        p->ecn = MROCE_ECN_CE;
        net->c.ce_marked_spine++;
        sp->c.queue_ce_marks++;
    }
    if (fill > sp->c.queue_max)
        sp->c.queue_max = fill;
    p->stage = ST_SPINE_OUT;
    ev_push(net, slink_tx(&sp->link, t, p->len), p);
}

/* The packet has left a rate-limited spine's queue.  A blackhole raised
 * while it was queued takes it too (the switch's buffers die with it). */
static void spine_out(mroce_net *net, uint64_t t, struct pkt *p)
{
    struct spine *sp = &net->spines[p->spine];
    if (sp->blackhole) {
        sp->c.drops++;
        net->c.drop_blackhole++;
        drop_pkt(net, p);
        return;
    }
    downlink(net, t, p);
}

/* The packet joins its destination's downlink: drop-tail, ECN. */
static void downlink(mroce_net *net, uint64_t t, struct pkt *p)
{
    struct spine *sp = &net->spines[p->spine];
    struct host *h = host_at(net, p->plane, p->dst);
    uint32_t occ = 0;
    uint64_t fill;

    occ = slink_backlog(&h->down, t);
    fill = (uint64_t)occ + p->len;
    if (slink_droptail(occ, p->len, lim64(net->cfg.queue_limit))) {
        h->c.down_drops++;
        net->c.drop_queue++;
        drop_pkt(net, p);
        return;
    }
    if (is_ect(p->ecn) && slink_ecn_step(occ, lim64(net->cfg.ecn_thresh))) {
        p->ecn = MROCE_ECN_CE;
        net->c.ce_marked++;
        h->c.down_ce_marks++;
        sp->c.ce_marks++;
    }
    if (fill > h->c.down_max_queue)
        h->c.down_max_queue = fill;
    p->stage = ST_DELIVER;
    ev_push(net, slink_tx(&h->down, t, p->len), p);
}

mroce_tstamp mroce_net_next_event_time(const mroce_net *net)
{
    return net->q.n ? ps_to_ns_ceil(net->q.h[0].t) : MROCE_TSTAMP_INF;
}

size_t mroce_net_deliver_due(mroce_net *net, mroce_tstamp now,
                             mroce_net_deliver_fn cb, void *user)
{
    uint64_t lim = ns_to_ps(now);
    size_t n = 0;
    while (net->q.n && net->q.h[0].t <= lim) {
        struct ev e;
        struct pkt *p;
        evq_pop(&net->q, &e);
        p = net->byid[ev_idx(&e)];
        struct mroce_net_pkt out;
        struct host *h;
        if (p->stage == ST_ARRIVE) {
            arrive(net, e.t, p);
            continue;
        }
        if (p->stage == ST_SPINE_OUT) {
            spine_out(net, e.t, p);
            continue;
        }
        h = host_at(net, p->plane, p->dst);
        h->c.down_pkts++;
        h->c.down_bytes += p->len;
        net->c.rx_pkts++;
        net->c.rx_bytes += p->len;
        net->in_flight--;
        n++;
        out.src = p->src;
        out.dst = p->dst;
        out.entropy = p->entropy;
        out.ecn = p->ecn;
        out.spine = p->spine;
        out.plane = p->plane;
        out.buf = p->data;
        out.len = p->len;
        out.time = ps_to_ns_ceil(e.t);
        out.time_ps = e.t;
        if (cb)
            cb(user, &out);
        pkt_put(net, p); /* after cb: cb may send and so take packets */
    }
    return n;
}

size_t mroce_net_in_flight(const mroce_net *net)
{
    return net->in_flight;
}

/* ---- uplink back-pressure ---- */

uint32_t mroce_net_uplink_backlog(const mroce_net *net, uint32_t host,
                                  mroce_tstamp now)
{
    uint32_t most = 0;
    if (host >= net->cfg.hosts)
        return 0;
    for (uint32_t k = 0; k < net->nplanes; k++) {
        uint32_t b = slink_backlog(&net->hosts[k * net->cfg.hosts + host].up,
                                   ns_to_ps(now));
        if (b > most)
            most = b;
    }
    return most;
}

mroce_tstamp mroce_net_uplink_ready(const mroce_net *net, uint32_t host,
                                    uint32_t queue_bytes)
{
    uint64_t last = 0;
    if (host >= net->cfg.hosts)
        return MROCE_TSTAMP_INF;
    for (uint32_t k = 0; k < net->nplanes; k++) {
        uint64_t r = slink_ready_ps(&net->hosts[k * net->cfg.hosts + host].up,
                                    queue_bytes);
        if (r > last)
            last = r;
    }
    return ps_to_ns_ceil(last);
}

/* ---- settings ---- */

int mroce_net_set_loss(mroce_net *net, double p)
{
    if (!prob_ok(p))
        return MROCE_EINVAL;
    net->cfg.loss = p;
    net->loss_th = prob_th(p);
    return 0;
}

int mroce_net_set_dup(mroce_net *net, double p)
{
    if (!prob_ok(p))
        return MROCE_EINVAL;
    net->cfg.dup = p;
    net->dup_th = prob_th(p);
    return 0;
}

int mroce_net_set_corrupt(mroce_net *net, double p)
{
    if (!prob_ok(p))
        return MROCE_EINVAL;
    net->cfg.corrupt = p;
    net->corrupt_th = prob_th(p);
    return 0;
}

int mroce_net_set_reorder(mroce_net *net, double p, mroce_tstamp max_extra)
{
    if (!prob_ok(p))
        return MROCE_EINVAL;
    net->cfg.reorder = p;
    net->cfg.reorder_max = max_extra;
    net->reorder_th = prob_th(p);
    return 0;
}

void mroce_net_set_delay(mroce_net *net, mroce_tstamp delay)
{
    net->cfg.delay = delay;
    net->delay_ps = ns_to_ps(delay);
}

void mroce_net_set_queue(mroce_net *net, uint32_t queue_limit,
                         uint32_t ecn_thresh)
{
    net->cfg.queue_limit = queue_limit;
    net->cfg.ecn_thresh = ecn_thresh;
}

int mroce_net_set_rate(mroce_net *net, uint64_t rate_bps)
{
    if (!rate_ok(rate_bps))
        return MROCE_EINVAL;
    net->cfg.rate_bps = rate_bps;
    for (uint32_t i = 0; i < net->cfg.hosts * net->nplanes; i++)
        net->hosts[i].up.rate = net->hosts[i].down.rate = slink_rate_fixed(
            rate_bps);
    return 0;
}

int mroce_net_set_host_rate(mroce_net *net, uint32_t host, uint64_t up_bps,
                            uint64_t down_bps)
{
    if (host >= net->cfg.hosts || !rate_ok(up_bps) || !rate_ok(down_bps))
        return MROCE_EINVAL;
    for (uint32_t k = 0; k < net->nplanes; k++) {
        host_at(net, k, host)->up.rate = slink_rate_fixed(up_bps);
        host_at(net, k, host)->down.rate = slink_rate_fixed(down_bps);
    }
    return 0;
}

int mroce_net_set_spine_delay(mroce_net *net, uint32_t spine,
                              mroce_tstamp extra)
{
    if (spine >= net->cfg.spines * net->nplanes)
        return MROCE_EINVAL;
    net->spines[spine].delay_ps = ns_to_ps(extra);
    return 0;
}

int mroce_net_set_spine_loss(mroce_net *net, uint32_t spine, double p)
{
    if (spine >= net->cfg.spines * net->nplanes || !prob_ok(p))
        return MROCE_EINVAL;
    net->spines[spine].loss = p;
    net->spines[spine].loss_th = prob_th(p);
    return 0;
}

int mroce_net_set_spine_blackhole(mroce_net *net, uint32_t spine, int on)
{
    if (spine >= net->cfg.spines * net->nplanes)
        return MROCE_EINVAL;
    net->spines[spine].blackhole = !!on;
    return 0;
}

int mroce_net_set_spine_rate(mroce_net *net, uint32_t spine, uint64_t rate_bps,
                             uint32_t queue_limit, uint32_t ecn_thresh)
{
    struct spine *sp;
    if (spine >= net->cfg.spines * net->nplanes || !rate_ok(rate_bps))
        return MROCE_EINVAL;
    sp = &net->spines[spine];
    sp->link.rate = slink_rate_fixed(rate_bps);
    sp->queue_limit = queue_limit;
    sp->ecn_thresh = ecn_thresh;
    return 0;
}

/* ---- counters ---- */

void mroce_net_get_counters(const mroce_net *net, struct mroce_net_counters *c)
{
    *c = net->c;
}

int mroce_net_get_spine_counters(const mroce_net *net, uint32_t spine,
                                 struct mroce_net_spine_counters *c)
{
    if (spine >= net->cfg.spines * net->nplanes)
        return MROCE_EINVAL;
    *c = net->spines[spine].c;
    return 0;
}

int mroce_net_get_host_counters(const mroce_net *net, uint32_t host,
                                struct mroce_net_host_counters *c)
{
    if (host >= net->cfg.hosts)
        return MROCE_EINVAL;
    memset(c, 0, sizeof(*c));
    for (uint32_t k = 0; k < net->nplanes; k++) {
        const struct mroce_net_host_counters *x =
            &net->hosts[k * net->cfg.hosts + host].c;
        c->up_pkts += x->up_pkts;
        c->up_bytes += x->up_bytes;
        c->down_pkts += x->down_pkts;
        c->down_bytes += x->down_bytes;
        c->down_drops += x->down_drops;
        c->down_ce_marks += x->down_ce_marks;
        if (x->down_max_queue > c->down_max_queue)
            c->down_max_queue = x->down_max_queue;
    }
    return 0;
}

void mroce_net_reset_counters(mroce_net *net)
{
    memset(&net->c, 0, sizeof(net->c));
    for (uint32_t i = 0; i < net->cfg.hosts * net->nplanes; i++)
        memset(&net->hosts[i].c, 0, sizeof(net->hosts[i].c));
    for (uint32_t i = 0; i < net->cfg.spines * net->nplanes; i++)
        memset(&net->spines[i].c, 0, sizeof(net->spines[i].c));
}
