/*
 * evq.c - the simulator's event queue: a 4-ary min-heap on (time, seq).
 *
 * Every packet hop, link completion and timer of the simulation passes
 * through here, so it is kept small and branch-light: 32-byte entries in
 * one growable array, sift with a moving hole instead of swaps, four
 * children per node so a pop touches half the levels of a binary heap
 * (the four children share two cache lines; profiling showed the binary
 * heap's pop at a quarter of the run time).  The
 * insertion sequence number breaks ties, so events at the same picosecond
 * run in the order they were scheduled - the source of determinism.
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

int evq_push(struct evq *q, uint64_t t, uint32_t type, uint32_t idx, void *p)
{
    if (q->n == q->cap) {
        size_t nc = q->cap * 2;
        struct ev *nh = realloc(q->h, nc * sizeof(*nh));
        if (!nh)
            return -1;
        q->h = nh;
        q->cap = nc;
    }
    struct ev e = {t, q->seq++, p, type, idx};
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

int evq_pop(struct evq *q, struct ev *out)
{
    if (!q->n)
        return 0;
    *out = q->h[0];
    struct ev last = q->h[--q->n];
    size_t n = q->n, i = 0;
    for (;;) {
        size_t c = 4 * i + 1;
        if (c >= n)
            break;
        size_t end = c + 4 < n ? c + 4 : n;
        for (size_t k = c + 1; k < end; k++)
            if (ev_less(&q->h[k], &q->h[c]))
                c = k;
        if (!ev_less(&q->h[c], &last))
            break;
        q->h[i] = q->h[c];
        i = c;
    }
    if (n)
        q->h[i] = last;
    return 1;
}
