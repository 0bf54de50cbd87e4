/*
 * fabric.c - links, output-queued switches, ECMP, ECN, PFC and faults.
 *
 * A directed link is a transmitter with an output queue at its source: a
 * packet handed to it starts serializing at once if the transmitter is idle
 * (one event: its arrival at the far end after serialization + propagation)
 * or waits in the FIFO (one more event: EV_LINK_FREE when the transmitter
 * is done with the packet ahead).  Switches are output-queued: an arriving
 * packet is routed (down by host range, up by ECMP over a 5-tuple hash that
 * includes the entropy / UDP source port) and queued on the egress link with
 * drop-tail at `buffer` bytes and RED/ECN marking between ecn_kmin and
 * ecn_kmax on the bytes waiting ahead.  With PFC (baseline only) switches
 * never drop: bytes from each ingress link are counted and the upstream
 * transmitter is paused above pfc_xoff and resumed below pfc_xon, the
 * PAUSE frame taking one propagation delay to act.
 *
 * The transmitter and the queue rules are the simulation core's link
 * primitive (sim/core/link.h): each link's serialization clock runs at a
 * round-to-nearest rate (slink_rate_nearest), and drop-tail and RED are
 * its slink_droptail and slink_ecn_red on the bytes waiting ahead, which
 * this file counts; routing, PFC and the link faults are this file's.
 *
 * A packet in flight is a struct hop in its link's ring (arrival order),
 * carrying the fields switches read, so forwarding touches the ring of the
 * link it came by and of the one it leaves by, never the packet header;
 * only the head of each ring is in the event heap (sim/core/evq.c).
 *
 * Where packets go next: link_send is a link's receive function (what a
 * host or switch hands a packet to); an arrival goes to the far end's
 * sink: a switch forwards it here (switch_forward, onto its next link), a
 * host gets it through its interface (s->host_if.recv), as does the
 * "uplink has room" signal (s->host_if.ready).  So fabric.c calls nothing
 * of host.c by name and nothing of run.c: it schedules its own events on
 * the core's queue, and run.c's loop dispatches them back to it.
 *
 * Packet headers and engine buffers come from free-list pools grown in
 * chunks of the run's huge-page arena (arena.c), so after warm-up nothing
 * is allocated per packet.  Most datagrams in flight are the headers of
 * zero-copy data packets or ACKs (host.c): those live in the packet
 * header itself (struct pkt's inl), and only larger ones take a 4 KiB
 * buffer.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct pkt *pkt_alloc(struct sim *s)
{
    if (!s->pkt_free) {
        enum { CH = 4096 };
        struct pkt *c = arena_bump(&s->arena, CH * sizeof(*c));
        if (!c) {
            fprintf(stderr, "mroce-sim: out of memory (packets)\n");
            exit(2);
        }
        for (int i = 0; i < CH; i++) {
            c[i].next = s->pkt_free;
            s->pkt_free = &c[i];
        }
        s->pkts_alloc += CH;
    }
    struct pkt *p = s->pkt_free;
    s->pkt_free = p->next;
    memset(p, 0, offsetof(struct pkt, inl));
    p->psn = 0;
    p->msg = 0;
    p->in_link = NONE32;
    s->pkts_live++;
    return p;
}

/* Carve one huge page's worth of buffers of `size` bytes into pool b. */
static void pool_grow(struct sim *s, struct bufpool *b, size_t size)
{
    size_t ch = ((size_t)2 << 20) / size; /* 2 MiB: one huge page */
    uint8_t *c = arena_bump(&s->arena, ch * size);
    if (!c) {
        fprintf(stderr, "mroce-sim: out of memory (buffers)\n");
        exit(2);
    }
    if (b->cap < b->alloc + ch) {
        size_t nc = (b->alloc + ch) * 2;
        uint8_t **n = realloc(b->free, nc * sizeof(*n));
        if (!n) {
            fprintf(stderr, "mroce-sim: out of memory\n");
            exit(2);
        }
        b->free = n;
        b->cap = nc;
    }
    for (size_t i = 0; i < ch; i++)
        b->free[b->n++] = c + i * size;
    b->alloc += ch;
}

void pkt_set_buf(struct sim *s, struct pkt *p, size_t bytes)
{
    p->big = bytes > SIM_SMALL_BUF;
    if (!p->big) {
        p->buf = p->inl;
        return;
    }
    struct bufpool *b = &s->bufs;
    if (!b->n)
        pool_grow(s, b, SIM_BUF_CAP);
    p->buf = b->free[--b->n]; /* LIFO: the most recently freed is warm */
}

void pkt_free(struct sim *s, struct pkt *p)
{
    if (p->big) {
        struct bufpool *b = &s->bufs;
        b->free[b->n++] = p->buf;
        p->big = 0;
    }
    p->buf = NULL;
    p->next = s->pkt_free;
    s->pkt_free = p;
    s->pkts_live--;
}

void fabric_free_pools(struct sim *s)
{
    for (uint32_t i = 0; s->links && i < s->nlinks; i++) {
        free(s->links[i].ring);
        free(s->links[i].wq);
        s->links[i].ring = NULL;
        s->links[i].wq = NULL;
    }
    /* the chunks themselves are in the arena, released with it */
    free(s->bufs.free);
    memset(&s->bufs, 0, sizeof(s->bufs));
    s->pkt_free = NULL;
}

static inline uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

/* The ECMP hash of the 5-tuple: addresses (hosts), protocol and destination
 * port are fixed per pair, the source port is the entropy. */
static inline uint32_t ecmp_hash(const struct node *n, const struct hop *h)
{
    if (n->hash != HASH_5TUPLE)
        return vendors_hash(n, h->src, h->dst, h->entropy);
    uint64_t k = ((uint64_t)h->src << 32 | h->dst) ^ n->salt;
    k = fmix64(k ^ ((uint64_t)h->entropy << 40 | 4794u << 8 | 17u));
    return (uint32_t)(k >> 32);
}

/* The up link ECMP picks at switch `node` for (src, dst, entropy), ignoring
 * failures: for diagnostics (host.c's per-flow dump). */
uint32_t fabric_up_link(const struct sim *s, uint32_t node, uint32_t src,
                        uint32_t dst, uint16_t entropy)
{
    const struct node *n = &s->nodes[node];
    struct hop h = {0};
    h.src = src;
    h.dst = dst;
    h.entropy = entropy;
    return n->nup ? n->up[ecmp_hash(n, &h) % n->nup] : 0;
}

static void ring_grow(struct link *l)
{
    uint32_t cap = l->ring ? 2 * (l->rmask + 1) : 16;
    struct hop *n = malloc((size_t)cap * sizeof(*n));
    if (!n) {
        fprintf(stderr, "mroce-sim: out of memory (links)\n");
        exit(2);
    }
    for (uint32_t i = l->rhead; i != l->rtail; i++)
        n[i & (cap - 1)] = l->ring[i & l->rmask];
    free(l->ring);
    l->ring = n;
    if (l->lazy) {
        uint64_t *w = malloc((size_t)cap * sizeof(*w));
        if (!w) {
            fprintf(stderr, "mroce-sim: out of memory (links)\n");
            exit(2);
        }
        for (uint32_t i = l->rwait; i != l->rtail; i++)
            w[i & (cap - 1)] = l->wq[i & l->rmask];
        free(l->wq);
        l->wq = w;
    }
    l->rmask = cap - 1;
}

/* wq entries: start time and wire bytes of a waiting packet. */
#define WQ_TX_LIMIT (1ULL << 48) /* ps, 281 s of simulated time */
_Static_assert(SIM_BUF_CAP + FRAME_OVERHEAD < 65536, "wire fits 16 bits");

/* Put a packet in flight on link li: it enters the heap if it is the
 * link's first (arrivals on a link are in order: a transmitter sends one
 * packet after the other and the propagation delay is fixed).  Like every
 * event it is ordered by (time, type, link), sequence number 0. */
static inline void ring_push(struct sim *s, uint32_t li, struct link *l,
                             const struct hop *h)
{
    /* far end in another process: the packets in flight are there, and
     * the waiting ones of a lazy link stay here for its queue length */
    if (l->remote)
        l->rhead = l->lazy ? l->rwait : l->rtail;
    if (l->rtail - l->rhead > l->rmask || !l->ring)
        ring_grow(l);
    struct hop *e = &l->ring[l->rtail & l->rmask];
    *e = *h;
    e->seq = 0;
    if (l->remote) {
        l->rtail++;
        dist_send_hop(s, li, e);
        return;
    }
    if (l->rtail++ == l->rhead &&
        evq_push_seq(sim_queue(s, e->t, EV_ARRIVE, li), e->t, 0, EV_ARRIVE,
                     li) < 0) {
        fprintf(stderr, "mroce-sim: out of memory (events)\n");
        exit(2);
    }
}

static inline void hop_of(struct hop *h, const struct pkt *p)
{
    h->p = (struct pkt *)p;
    h->src = p->src;
    h->dst = p->dst;
    h->wire = p->wire;
    h->entropy = p->entropy;
    h->ecn = p->ecn;
    h->pad_ = 0;
}

static void start_tx(struct sim *s, uint32_t li, struct pkt *p)
{
    struct link *l = &s->links[li];
    if (p->in_link != NONE32) {
        struct link *in = &s->links[p->in_link];
        in->ing_bytes -= p->wire;
        if (in->pause_sent && in->ing_bytes <= s->sc->pfc_xon) {
            in->pause_sent = 0;
            sim_schedule(s, s->now + in->prop_ps, EV_RESUME, p->in_link);
        }
        p->in_link = NONE32;
    }
    /* the transmitter is idle: a queued packet starts when it is free */
    uint64_t done = slink_tx(&l->tx, s->now, p->wire);
    l->tx_bytes += p->wire;
    l->tx_pkts++;
    struct hop h;
    hop_of(&h, p);
    h.t = done + l->prop_ps;
    ring_push(s, li, l, &h);
}

/* Lazy link: forget the queued packets whose transmission has started by
 * now (their arrivals are already in the ring). */
static inline void lazy_trim(struct sim *s, struct link *l)
{
    if (l->rwait == l->rtail || l->wait_tx > s->now)
        return;
    for (;;) {
        l->q_bytes -= (uint32_t)(l->wq[l->rwait & l->rmask] & 0xffff);
        l->q_pkts--;
        if (++l->rwait == l->rtail)
            return;
        l->wait_tx = l->wq[l->rwait & l->rmask] >> 16;
        if (l->wait_tx > s->now)
            return;
    }
}

/* Lazy link: the first waiting packet leaves the output queue (it is
 * arriving).  Only that one: the queue is read after a lazy_trim at the
 * sender's time, and a partition that runs the link's receiving end may
 * be ahead of the one that runs its sender (run.c), so the receiving end
 * trims nothing that the sender could still see waiting. */
static inline void lazy_trim_head(struct link *l)
{
    l->q_bytes -= (uint32_t)(l->wq[l->rwait & l->rmask] & 0xffff);
    l->q_pkts--;
    if (++l->rwait != l->rtail)
        l->wait_tx = l->wq[l->rwait & l->rmask] >> 16;
}

/* Lazy link: the packet starts when the transmitter is free, its arrival is
 * scheduled now, and it counts in the output queue (for the queue length
 * that drop and ECN decisions see) until it starts. */
static void lazy_send(struct sim *s, uint32_t li, struct hop *h)
{
    struct link *l = &s->links[li];
    uint64_t start = slink_start(&l->tx, s->now);
    lazy_trim(s, l);
    h->t = slink_tx(&l->tx, s->now, h->wire) + l->prop_ps;
    l->tx_bytes += h->wire;
    l->tx_pkts++;
    if (start > s->now) {
        if (start >= WQ_TX_LIMIT) {
            fprintf(stderr, "mroce-sim: simulated time beyond 281 s\n");
            exit(2);
        }
        if (l->rwait == l->rtail)
            l->wait_tx = start;
        l->q_bytes += h->wire;
        l->q_pkts++;
        if (l->q_bytes > l->q_max)
            l->q_max = l->q_bytes;
        l->q_sum += l->q_bytes;
        l->q_samples++;
        ring_push(s, li, l, h);
        l->wq[(l->rtail - 1) & l->rmask] = start << 16 | h->wire;
    } else {
        /* the transmitter was idle: everything before it has started and
         * been trimmed (rwait == rtail), and so has this one */
        ring_push(s, li, l, h);
        l->rwait = l->rtail;
    }
}

/* A non-lazy link (host NIC, PFC port): start now or wait in the queue. */
static void queue_send(struct sim *s, uint32_t li, struct pkt *p)
{
    struct link *l = &s->links[li];
    if (!l->paused && !l->qh && l->tx.busy_ps <= s->now) {
        start_tx(s, li, p);
        return;
    }
    p->next = NULL;
    if (l->qt)
        l->qt->next = p;
    else
        l->qh = p;
    l->qt = p;
    l->q_bytes += p->wire;
    l->q_pkts++;
    if (l->q_bytes > l->q_max)
        l->q_max = l->q_bytes;
    l->q_sum += l->q_bytes;
    l->q_samples++;
    if (!l->free_pending && !l->paused) {
        l->free_pending = 1;
        sim_schedule(s, slink_start(&l->tx, s->now), EV_LINK_FREE, li);
    }
}

void link_send(struct sim *s, uint32_t li, struct pkt *p)
{
    struct link *l = &s->links[li];
    if (l->src < s->nhosts)
        s->pkts_sent++;
    if (l->lazy) {
        struct hop h;
        hop_of(&h, p);
        lazy_send(s, li, &h);
        return;
    }
    queue_send(s, li, p);
}

void fabric_on_link_free(struct sim *s, uint32_t li)
{
    struct link *l = &s->links[li];
    l->free_pending = 0;
    if (l->paused)
        return;
    struct pkt *p = l->qh;
    if (p) {
        l->qh = p->next;
        if (!l->qh)
            l->qt = NULL;
        l->q_bytes -= p->wire;
        l->q_pkts--;
        start_tx(s, li, p);
        if (l->qh) {
            l->free_pending = 1;
            sim_schedule(s, l->tx.busy_ps, EV_LINK_FREE, li);
        }
    }
    if (l->src < s->nhosts)
        s->host_if.ready(s, l->src);
}

void fabric_on_pause(struct sim *s, uint32_t li, int on)
{
    struct link *l = &s->links[li];
    if (on) {
        if (!l->paused) {
            l->paused = 1;
            l->paused_since = s->now;
        }
        return;
    }
    if (!l->paused)
        return;
    l->paused = 0;
    l->paused_ps += s->now - l->paused_since;
    if (l->qh && !l->free_pending) {
        l->free_pending = 1;
        sim_schedule(s, slink_start(&l->tx, s->now), EV_LINK_FREE, li);
    }
}

/* h arrived at a switch by link in_li and goes out on link out. */
static void switch_enqueue(struct sim *s, uint32_t in_li, uint32_t out,
                           struct hop *h)
{
    const struct scenario *sc = s->sc;
    struct link *o = &s->links[out];
    int pfc = s->tp->pfc;
    if (o->lazy)
        lazy_trim(s, o);
    if (!pfc && slink_droptail(o->q_bytes, h->wire, o->q_limit)) {
        o->drops_q++;
        s->drops_q++;
        pkt_free(s, h->p);
        return;
    }
    /* a CE packet draws as an ECT one does, so the stream stays aligned */
    if (h->ecn != MROCE_ECN_NOT_ECT &&
        slink_ecn_red(o->q_bytes, o->q_kmin, o->q_kmax, o->q_pmax, &o->rng)) {
        if (h->ecn != MROCE_ECN_CE) {
            h->ecn = MROCE_ECN_CE;
            o->ecn_marks++;
            s->ecn_marks++;
        }
    }
    if (pfc) {
        struct link *in = &s->links[in_li];
        struct pkt *p = h->p;
        in->ing_bytes += h->wire;
        if (in->ing_bytes > in->ing_max)
            in->ing_max = in->ing_bytes;
        p->in_link = in_li;
        if (!in->pause_sent && in->ing_bytes > sc->pfc_xoff) {
            in->pause_sent = 1;
            in->pfc_xoff++;
            s->pfc_pauses++;
            sim_schedule(s, s->now + in->prop_ps, EV_PAUSE, in_li);
        }
    }
    if (o->lazy) {
        lazy_send(s, out, h);
    } else {
        h->p->ecn = h->ecn;
        queue_send(s, out, h->p);
    }
}

static void switch_forward(struct sim *s, uint32_t in_li, struct node *n,
                           struct hop *h)
{
    uint32_t out;
    if (h->dst >= n->lo && h->dst < n->hi) {
        out = n->down[(h->dst - n->lo) / n->span];
    } else {
        const uint32_t *cand = n->up;
        uint32_t nc = n->nup;
        if (n->rt) {
            uint32_t t = h->dst / s->hosts_per_tor;
            nc = n->rt_n[t];
            cand = n->rt + (size_t)t * n->nup;
        }
        if (!nc) {
            s->drops_noroute++;
            pkt_free(s, h->p);
            return;
        }
        out = cand[ecmp_hash(n, h) % nc];
    }
    switch_enqueue(s, in_li, out, h);
}

void fabric_on_arrive(struct sim *s, uint32_t li)
{
    struct link *l = &s->links[li];
    s->pkt_events++;
    if (l->lazy && l->rwait == l->rhead)
        lazy_trim_head(l); /* it has started: it leaves the output queue */
    struct hop h = l->ring[l->rhead & l->rmask];
    if (++l->rhead != l->rtail) {
        const struct hop *nx = &l->ring[l->rhead & l->rmask];
        evq_replace_top(&s->q, nx->t, nx->seq, EV_ARRIVE, li);
    } else {
        evq_pop(&s->q, NULL);
    }
    sim_prefetch_next(s);
    if (l->state != L_UP) {
        l->drops_fail++;
        s->drops_fail++;
        pkt_free(s, h.p);
        return;
    }
    if (l->loss > 0 && rng_unif(&l->rng_rx) < l->loss) {
        l->drops_loss++;
        s->drops_loss++;
        pkt_free(s, h.p);
        return;
    }
    if (l->dst < s->nhosts) {
        s->pkts_delivered++;
        h.p->ecn = h.ecn;
        h.p->rx_plane = s->nodes[l->src].plane;
        s->host_if.recv(s, l->dst, h.p);
    } else
        switch_forward(s, li, &s->nodes[l->dst], &h);
}

void fabric_inject(struct sim *s, uint32_t li, struct hop *h)
{
    struct link *l = &s->links[li];
    ring_push(s, li, l, h);
    if (l->lazy) /* the sender's process keeps its output queue */
        l->rwait = l->rtail;
}

uint64_t fabric_inflight(const struct sim *s)
{
    uint64_t n = 0;
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const struct link *l = &s->links[i];
        if (l->remote) /* in flight on the receiver's process */
            continue;
        n += l->rtail - l->rhead;
        if (!l->lazy)
            n += l->q_pkts;
    }
    return n;
}

void fabric_apply_fault(struct sim *s, uint32_t i)
{
    const struct fault *f = &s->sc->faults[i];
    if (f->kind >= F_PLANE_DOWN) { /* whole planes, all hosts: planes.c */
        planes_apply_fault(s, i);
        return;
    }
    uint32_t li = topo_find_link(s, f->a, f->b);
    if (li == NONE32) {
        fprintf(stderr, "mroce-sim: fault: no cable %s-%s\n", f->a, f->b);
        return;
    }
    struct link *ab = &s->links[li], *ba = &s->links[ab->peer];
    switch (f->kind) {
    case F_DOWN:
        ab->state = ba->state = f->local ? L_DOWN_LOCAL : L_DOWN;
        sim_schedule(s, s->now + f->detect_ps, EV_ROUTE, 0);
        break;
    case F_BLACKHOLE:
        ab->state = ba->state = L_BLACKHOLE;
        break;
    case F_UP:
        ab->state = ba->state = L_UP;
        sim_schedule(s, s->now + f->detect_ps, EV_ROUTE, 0);
        break;
    case F_LOSS:
        ab->loss = ba->loss = f->val;
        break;
    case F_RATE:
        ab->rate_bps = ba->rate_bps = (uint64_t)f->val;
        ab->tx.rate = ba->tx.rate = slink_rate_nearest(f->val);
        break;
    }
}
