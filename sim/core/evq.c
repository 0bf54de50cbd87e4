/*
 * evq.c - the event queue of the simulation core (simcore.h): a 4-ary
 * min-heap on (time, seq).
 *
 * Every link arrival, link completion and timer of a simulation passes
 * through here, so it is kept small and branch-light: 16-byte entries in
 * one growable array, sift with a moving hole instead of swaps, four
 * children per node so a pop touches half the levels of a binary heap.
 * The sequence number breaks ties: with evq_push (the test network) the
 * insertion order, so events at the same picosecond run in the order
 * they were scheduled - the source of determinism.  It is the high 36
 * bits of an entry's key, the event's type and index the low 28
 * (simcore.h), so comparing keys compares sequence numbers, then types
 * and indices: mroce-sim passes 0 for all, which orders its events by
 * (time, type, index) whatever the order of insertion.  A push beyond
 * either range fails with a message.
 *
 * In mroce-sim, packet arrivals do not each have an entry: a link delivers
 * its packets in order, so sim/src/fabric.c keeps them in a per-link FIFO
 * (struct hop) and only the head of each link is in the heap, keyed by the
 * packet's arrival time (evq_push_seq).
 * The heap then holds about one entry per busy link instead of one per
 * packet in flight, and pops in exactly the order a heap of every packet
 * would: it always holds the least (time, seq) of every FIFO, and each
 * FIFO is sorted.  When the head of a link is taken and the link has a
 * next packet, evq_replace_top puts it in the root's place (one sift
 * instead of a pop and a push).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcore.h"

#define LINE 64
#define SKEW 3 /* entries ahead of h[0] in the block: h[1] is line-aligned */

static inline int ev_less(const struct ev *a, const struct ev *b)
{
    return a->t < b->t || (a->t == b->t && a->key < b->key);
}

/* A block for cap entries with h[1] on a cache-line boundary. */
static int evq_alloc(struct evq *q, size_t cap)
{
    size_t bytes = (cap + SKEW) * sizeof(struct ev);
    bytes = (bytes + LINE - 1) & ~(size_t)(LINE - 1);
    void *m = aligned_alloc(LINE, bytes);
    if (!m)
        return -1;
    struct ev *h = (struct ev *)m + SKEW;
    if (q->n)
        memcpy(h, q->h, q->n * sizeof(*h));
    free(q->mem);
    q->mem = m;
    q->h = h;
    q->cap = cap;
    return 0;
}

int evq_init(struct evq *q, size_t cap)
{
    q->n = 0;
    q->seq = 0;
    q->mem = NULL;
    q->h = NULL;
    return evq_alloc(q, cap ? cap : 1024);
}

int evq_reserve(struct evq *q, size_t cap)
{
    return cap <= q->cap ? 0 : evq_alloc(q, cap);
}

void evq_free(struct evq *q)
{
    free(q->mem);
    q->mem = NULL;
    q->h = NULL;
    q->n = q->cap = 0;
}

/* The entry for (t, seq, type, idx), or -1 if they do not fit its key. */
static inline int ev_make(struct ev *e, uint64_t t, uint64_t seq, uint32_t type,
                          uint32_t idx)
{
    if (seq > EV_SEQ_MAX || type > 15 || idx >> EV_IDX_BITS) {
        fprintf(stderr,
                "event queue: event %llu, type %u, "
                "index %u out of range\n",
                (unsigned long long)seq, type, idx);
        return -1;
    }
    e->t = t;
    e->key = seq << EV_TAG_BITS | (uint64_t)type << EV_IDX_BITS | idx;
    return 0;
}

int evq_push_seq(struct evq *q, uint64_t t, uint64_t seq, uint32_t type,
                 uint32_t idx)
{
    struct ev e;
    if (ev_make(&e, t, seq, type, idx) < 0)
        return -1;
    if (q->n == q->cap && evq_alloc(q, q->cap * 2) < 0)
        return -1;
    size_t i = q->n++;
    while (i > 0) {
        size_t parent = (i - 1) >> 2;
        if (!ev_less(&e, &q->h[parent]))
            break;
        q->h[i] = q->h[parent];
        i = parent;
    }
    q->h[i] = e;
    return 0;
}

int evq_push(struct evq *q, uint64_t t, uint32_t type, uint32_t idx)
{
    return evq_push_seq(q, t, q->seq++, type, idx);
}

/* Put e at the hole i (the root) and sift it down among the first n. */
static inline void sift_down(struct ev *h, size_t n, struct ev e)
{
    size_t i = 0;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n)
            break;
        size_t end = c + 4 < n ? c + 4 : n;
        for (size_t k = c + 1; k < end; k++)
            if (ev_less(&h[k], &h[c]))
                c = k;
        if (!ev_less(&h[c], &e))
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

int evq_pop(struct evq *q, struct ev *out)
{
    if (!q->n)
        return 0;
    if (out)
        *out = q->h[0];
    size_t n = --q->n;
    if (n)
        sift_down(q->h, n, q->h[n]);
    return 1;
}

void evq_replace_top(struct evq *q, uint64_t t, uint64_t seq, uint32_t type,
                     uint32_t idx)
{
    struct ev e;
    if (ev_make(&e, t, seq, type, idx) < 0)
        exit(2);
    sift_down(q->h, q->n, e);
}
