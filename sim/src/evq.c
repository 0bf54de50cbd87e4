/*
 * evq.c - the simulator's event queue: a 4-ary min-heap on (time, seq).
 *
 * Every link arrival, link completion and timer of the simulation passes
 * through here, so it is kept small and branch-light: 24-byte entries in
 * one growable array, sift with a moving hole instead of swaps, four
 * children per node so a pop touches half the levels of a binary heap.
 * The insertion sequence number breaks ties, so events at the same
 * picosecond run in the order they were scheduled - the source of
 * determinism.
 *
 * Packet arrivals do not each have an entry: a link delivers its packets
 * in order, so fabric.c keeps them in a per-link FIFO (struct hop) and
 * only the head of each link is in the heap, keyed by the (time, seq) the
 * packet was given when it was scheduled (evq_take_seq + evq_push_seq).
 * The heap then holds about one entry per busy link instead of one per
 * packet in flight, and pops in exactly the order a heap of every packet
 * would: it always holds the least (time, seq) of every FIFO, and each
 * FIFO is sorted.  When the head of a link is taken and the link has a
 * next packet, evq_replace_top puts it in the root's place (one sift
 * instead of a pop and a push).
 */
#include <stdlib.h>

#include "sim.h"

static inline int ev_less(const struct ev *a, const struct ev *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int evq_init(struct evq *q, size_t cap)
{
    q->n = 0;
    q->seq = 0;
    q->cap = cap ? cap : 1024;
    q->h = malloc(q->cap * sizeof(*q->h));
    return q->h ? 0 : -1;
}

void evq_free(struct evq *q)
{
    free(q->h);
    q->h = NULL;
    q->n = q->cap = 0;
}

int evq_push_seq(struct evq *q, uint64_t t, uint64_t seq, uint32_t type,
                 uint32_t idx)
{
    if (q->n == q->cap) {
        size_t nc = q->cap * 2;
        struct ev *nh = realloc(q->h, nc * sizeof(*nh));
        if (!nh)
            return -1;
        q->h = nh;
        q->cap = nc;
    }
    struct ev e = {t, seq, type, idx};
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
    struct ev e = {t, seq, type, idx};
    sift_down(q->h, q->n, e);
}
