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
 * Packet headers and engine buffers come from free-list pools grown in
 * chunks, so after warm-up nothing is allocated per packet.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static int keep_chunk(struct sim *s, void *c)
{
    if (s->nchunks == s->capchunks) {
        size_t nc = s->capchunks ? 2 * s->capchunks : 64;
        void **n = realloc(s->chunks, nc * sizeof(*n));
        if (!n)
            return -1;
        s->chunks = n;
        s->capchunks = nc;
    }
    s->chunks[s->nchunks++] = c;
    return 0;
}

struct pkt *pkt_alloc(struct sim *s)
{
    if (!s->pkt_free) {
        enum { CH = 4096 };
        struct pkt *c = malloc(CH * sizeof(*c));
        if (!c || keep_chunk(s, c) < 0) {
            free(c);
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
    memset(p, 0, sizeof(*p));
    p->in_link = NONE32;
    s->pkts_live++;
    return p;
}

uint8_t *buf_alloc(struct sim *s)
{
    if (!s->nbuf_free) {
        enum { CH = 512 };
        uint8_t *c = malloc((size_t)CH * SIM_BUF_CAP);
        if (!c || keep_chunk(s, c) < 0) {
            free(c);
            fprintf(stderr, "mroce-sim: out of memory (buffers)\n");
            exit(2);
        }
        if (s->capbuf_free < s->bufs_alloc + CH) {
            size_t nc = (s->bufs_alloc + CH) * 2;
            uint8_t **n = realloc(s->buf_free, nc * sizeof(*n));
            if (!n) {
                fprintf(stderr, "mroce-sim: out of memory\n");
                exit(2);
            }
            s->buf_free = n;
            s->capbuf_free = nc;
        }
        for (int i = 0; i < CH; i++)
            s->buf_free[s->nbuf_free++] = c + (size_t)i * SIM_BUF_CAP;
        s->bufs_alloc += CH;
    }
    return s->buf_free[--s->nbuf_free];
}

void pkt_free(struct sim *s, struct pkt *p)
{
    if (p->buf)
        s->buf_free[s->nbuf_free++] = p->buf;
    p->buf = NULL;
    p->next = s->pkt_free;
    s->pkt_free = p;
    s->pkts_live--;
}

void fabric_free_pools(struct sim *s)
{
    for (size_t i = 0; i < s->nchunks; i++)
        free(s->chunks[i]);
    free(s->chunks);
    free(s->buf_free);
    s->chunks = NULL;
    s->buf_free = NULL;
    s->nchunks = s->capchunks = s->nbuf_free = s->capbuf_free = 0;
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
static inline uint32_t ecmp_hash(const struct node *n, const struct pkt *p)
{
    uint64_t k = ((uint64_t)p->src << 32 | p->dst) ^ n->salt;
    k = fmix64(k ^ ((uint64_t)p->entropy << 40 | 4794u << 8 | 17u));
    return (uint32_t)(k >> 32);
}

static void start_tx(struct sim *s, uint32_t li, struct pkt *p)
{
    struct link *l = &s->links[li];
    if (p->in_link != NONE32) {
        struct link *in = &s->links[p->in_link];
        in->ing_bytes -= p->wire;
        if (in->pause_sent && in->ing_bytes <= s->sc->pfc_xon) {
            in->pause_sent = 0;
            sim_schedule(s, s->now + in->prop_ps, EV_RESUME, p->in_link, NULL);
        }
        p->in_link = NONE32;
    }
    uint64_t ser = (uint64_t)((double)p->wire * l->ps_per_byte + 0.5);
    l->busy_until = s->now + ser;
    l->tx_bytes += p->wire;
    l->tx_pkts++;
    p->link = li;
    sim_schedule(s, l->busy_until + l->prop_ps, EV_ARRIVE, 0, p);
}

/* Lazy link: forget the queued packets whose transmission has started by
 * now (their arrivals are already scheduled). */
static inline void lazy_trim(struct sim *s, struct link *l)
{
    struct pkt *q;
    while ((q = l->qh) != NULL && q->t_tx <= s->now) {
        l->qh = q->next;
        l->q_bytes -= q->wire;
        l->q_pkts--;
    }
    if (!l->qh)
        l->qt = NULL;
}

/* Lazy link: the packet starts when the transmitter is free, its arrival is
 * scheduled now, and it waits in the FIFO (for the queue length that drop
 * and ECN decisions see) until it starts. */
static void lazy_send(struct sim *s, uint32_t li, struct pkt *p)
{
    struct link *l = &s->links[li];
    uint64_t start = l->busy_until > s->now ? l->busy_until : s->now;
    uint64_t ser = (uint64_t)((double)p->wire * l->ps_per_byte + 0.5);
    lazy_trim(s, l);
    l->busy_until = start + ser;
    l->tx_bytes += p->wire;
    l->tx_pkts++;
    p->link = li;
    p->t_tx = start;
    if (start > s->now) {
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
    }
    sim_schedule(s, l->busy_until + l->prop_ps, EV_ARRIVE, 0, p);
}

void link_send(struct sim *s, uint32_t li, struct pkt *p)
{
    struct link *l = &s->links[li];
    if (l->src < s->nhosts)
        s->pkts_sent++;
    if (l->lazy) {
        lazy_send(s, li, p);
        return;
    }
    if (!l->paused && !l->qh && l->busy_until <= s->now) {
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
        sim_schedule(s, l->busy_until > s->now ? l->busy_until : s->now,
                     EV_LINK_FREE, li, NULL);
    }
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
            sim_schedule(s, l->busy_until, EV_LINK_FREE, li, NULL);
        }
    }
    if (l->src < s->nhosts)
        host_pull(s, &s->hosts[l->src]);
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
        sim_schedule(s, l->busy_until > s->now ? l->busy_until : s->now,
                     EV_LINK_FREE, li, NULL);
    }
}

static void switch_enqueue(struct sim *s, uint32_t out, struct pkt *p)
{
    const struct scenario *sc = s->sc;
    struct link *o = &s->links[out];
    int pfc = s->tp->pfc;
    if (o->lazy)
        lazy_trim(s, o);
    if (!pfc && o->q_bytes + p->wire > sc->buffer) {
        o->drops_q++;
        s->drops_q++;
        pkt_free(s, p);
        return;
    }
    if (p->ecn != MROCE_ECN_NOT_ECT && o->q_bytes > sc->ecn_kmin) {
        int mark = o->q_bytes >= sc->ecn_kmax;
        if (!mark) {
            double pr = sc->ecn_pmax * (double)(o->q_bytes - sc->ecn_kmin) /
                        (double)(sc->ecn_kmax - sc->ecn_kmin);
            mark = sim_unif(&s->rng_fabric) < pr;
        }
        if (mark && p->ecn != MROCE_ECN_CE) {
            p->ecn = MROCE_ECN_CE;
            o->ecn_marks++;
            s->ecn_marks++;
        }
    }
    if (pfc) {
        struct link *in = &s->links[p->link];
        in->ing_bytes += p->wire;
        p->in_link = p->link;
        if (!in->pause_sent && in->ing_bytes > sc->pfc_xoff) {
            in->pause_sent = 1;
            in->pfc_xoff++;
            s->pfc_pauses++;
            sim_schedule(s, s->now + in->prop_ps, EV_PAUSE, p->link, NULL);
        }
    }
    link_send(s, out, p);
}

static void switch_forward(struct sim *s, struct node *n, struct pkt *p)
{
    uint32_t out;
    if (p->dst >= n->lo && p->dst < n->hi) {
        out = n->down[(p->dst - n->lo) / n->span];
    } else {
        const uint32_t *cand = n->up;
        uint32_t nc = n->nup;
        if (n->rt) {
            uint32_t t = p->dst / s->hosts_per_tor;
            nc = n->rt_n[t];
            cand = n->rt + (size_t)t * n->nup;
        }
        if (!nc) {
            s->drops_noroute++;
            pkt_free(s, p);
            return;
        }
        out = cand[ecmp_hash(n, p) % nc];
    }
    switch_enqueue(s, out, p);
}

void fabric_on_arrive(struct sim *s, struct pkt *p)
{
    struct link *l = &s->links[p->link];
    s->pkt_events++;
    if (l->lazy && l->qh)
        lazy_trim(s, l); /* p has started: it leaves the FIFO (p->next) */
    if (l->state != L_UP) {
        l->drops_fail++;
        s->drops_fail++;
        pkt_free(s, p);
        return;
    }
    if (l->loss > 0 && sim_unif(&s->rng_fabric) < l->loss) {
        l->drops_loss++;
        s->drops_loss++;
        pkt_free(s, p);
        return;
    }
    if (l->dst < s->nhosts) {
        s->pkts_delivered++;
        host_on_pkt(s, &s->hosts[l->dst], p);
    } else
        switch_forward(s, &s->nodes[l->dst], p);
}

void fabric_apply_fault(struct sim *s, uint32_t i)
{
    const struct fault *f = &s->sc->faults[i];
    uint32_t li = topo_find_link(s, f->a, f->b);
    if (li == NONE32) {
        fprintf(stderr, "mroce-sim: fault: no cable %s-%s\n", f->a, f->b);
        return;
    }
    struct link *ab = &s->links[li], *ba = &s->links[ab->peer];
    switch (f->kind) {
    case F_DOWN:
        ab->state = ba->state = f->local ? L_DOWN_LOCAL : L_DOWN;
        sim_schedule(s, s->now + f->detect_ps, EV_ROUTE, 0, NULL);
        break;
    case F_BLACKHOLE:
        ab->state = ba->state = L_BLACKHOLE;
        break;
    case F_UP:
        ab->state = ba->state = L_UP;
        sim_schedule(s, s->now + f->detect_ps, EV_ROUTE, 0, NULL);
        break;
    case F_LOSS:
        ab->loss = ba->loss = f->val;
        break;
    case F_RATE:
        ab->rate_bps = ba->rate_bps = (uint64_t)f->val;
        ab->ps_per_byte = ba->ps_per_byte = 8e12 / f->val;
        break;
    }
}
