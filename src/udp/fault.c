/*
 * fault.c - seeded fault injection for the UDP datapath (see fault.h): the
 * per-direction decision stream, the MROCE_FAULT parser and the hold-back
 * queue that turns "reorder" into real reordering.
 */
#include "fault.h"

#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) from the top 53 bits. */
static double unit(uint64_t *s)
{
    return (double)(splitmix64(s) >> 11) * (1.0 / 9007199254740992.0);
}

static int prob_ok(double p)
{
    return p >= 0.0 && p <= 1.0; /* also rejects NaN */
}

int mroce_faultgen_init(struct mroce_faultgen *g, const struct mroce_fault *f,
                        uint64_t seed)
{
    memset(g, 0, sizeof(*g));
    if (!f)
        return 0;
    if (!prob_ok(f->drop) || !prob_ok(f->dup) || !prob_ok(f->reorder) ||
        !prob_ok(f->corrupt))
        return MROCE_EINVAL;
    g->f = *f;
    if (!g->f.reorder_us)
        g->f.reorder_us = 50;
    g->rng = seed;
    g->active = f->drop > 0 || f->dup > 0 || f->reorder > 0 || f->corrupt > 0;
    return 0;
}

unsigned mroce_faultgen_decide(struct mroce_faultgen *g)
{
    if (!g->active)
        return 0;
    /* One draw per kind, every packet, so the stream of decisions for one
     * kind does not shift when another kind's probability changes. */
    double d = unit(&g->rng), u = unit(&g->rng), r = unit(&g->rng),
           c = unit(&g->rng);
    if (d < g->f.drop)
        return MROCE_FAULT_DROP;
    unsigned a = 0;
    if (u < g->f.dup)
        a |= MROCE_FAULT_DUP;
    if (r < g->f.reorder)
        a |= MROCE_FAULT_REORDER;
    if (c < g->f.corrupt)
        a |= MROCE_FAULT_CORRUPT;
    return a;
}

void mroce_faultgen_corrupt(struct mroce_faultgen *g, uint8_t *buf, size_t len)
{
    if (!len)
        return;
    uint64_t v = splitmix64(&g->rng);
    buf[(v >> 3) % len] ^= (uint8_t)(1u << (v & 7));
}

uint8_t mroce_faultgen_countdown(struct mroce_faultgen *g)
{
    return (uint8_t)(1 + splitmix64(&g->rng) % 4);
}

/* --- MROCE_FAULT parser --- */

static int parse_kv(const char *k, size_t klen, const char *v,
                    struct mroce_fault *f)
{
    char *end;
    double d = strtod(v, &end);
    if (end == v || (*end && *end != ',' && *end != ';'))
        return MROCE_EINVAL;
    if (klen == 10 && !memcmp(k, "reorder_us", 10)) {
        if (!(d >= 0 && d <= 10e6))
            return MROCE_EINVAL;
        f->reorder_us = (uint32_t)d;
        return 0;
    }
    if (!prob_ok(d))
        return MROCE_EINVAL;
    if (klen == 4 && !memcmp(k, "drop", 4))
        f->drop = d;
    else if (klen == 3 && !memcmp(k, "dup", 3))
        f->dup = d;
    else if (klen == 7 && !memcmp(k, "reorder", 7))
        f->reorder = d;
    else if (klen == 7 && !memcmp(k, "corrupt", 7))
        f->corrupt = d;
    else
        return MROCE_EINVAL;
    return 0;
}

int mroce_fault_parse(const char *spec, struct mroce_fault *tx,
                      struct mroce_fault *rx, uint64_t *seed)
{
    if (!spec || !tx || !rx || !seed)
        return MROCE_EINVAL;
    const char *p = spec;
    while (*p) {
        /* One section: [dir:]k=v,k=v ... up to ';' or the end. */
        const char *sec_end = strchr(p, ';');
        if (!sec_end)
            sec_end = p + strlen(p);
        struct mroce_fault *t1 = NULL, *t2 = NULL;
        if (!strncmp(p, "tx:", 3)) {
            t1 = tx;
            p += 3;
        } else if (!strncmp(p, "rx:", 3)) {
            t1 = rx;
            p += 3;
        } else if (!strncmp(p, "both:", 5)) {
            t1 = tx;
            t2 = rx;
            p += 5;
        } else if (!strncmp(p, "seed=", 5)) {
            char *end;
            unsigned long long s = strtoull(p + 5, &end, 0);
            if (end == p + 5 || end != sec_end)
                return MROCE_EINVAL;
            *seed = s;
            p = *sec_end ? sec_end + 1 : sec_end;
            continue;
        } else if (p == sec_end) {
            p = *sec_end ? sec_end + 1 : sec_end; /* empty section */
            continue;
        } else {
            return MROCE_EINVAL;
        }
        while (p < sec_end) {
            const char *eq = memchr(p, '=', (size_t)(sec_end - p));
            if (!eq)
                return MROCE_EINVAL;
            if (parse_kv(p, (size_t)(eq - p), eq + 1, t1) < 0)
                return MROCE_EINVAL;
            if (t2 && parse_kv(p, (size_t)(eq - p), eq + 1, t2) < 0)
                return MROCE_EINVAL;
            const char *comma = memchr(eq, ',', (size_t)(sec_end - eq));
            p = comma ? comma + 1 : sec_end;
        }
        p = *sec_end ? sec_end + 1 : sec_end;
    }
    return 0;
}

/* --- hold-back queue --- */

int mroce_holdq_push(struct mroce_holdq *q, const uint8_t *buf, uint32_t len,
                     const struct mroce_held *meta)
{
    if (q->n == MROCE_HOLD_MAX)
        return MROCE_EFULL;
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return MROCE_ENOMEM;
    memcpy(copy, buf, len);
    struct mroce_held *h = &q->e[q->n++];
    *h = *meta;
    h->buf = copy;
    h->len = len;
    return 0;
}

mroce_tstamp mroce_holdq_expiry(const struct mroce_holdq *q)
{
    mroce_tstamp t = MROCE_TSTAMP_INF;
    for (unsigned i = 0; i < q->n; i++)
        if (q->e[i].deadline < t)
            t = q->e[i].deadline;
    return t;
}

int mroce_holdq_ready(const struct mroce_holdq *q, mroce_tstamp now)
{
    for (unsigned i = 0; i < q->n; i++)
        if (q->e[i].countdown == 0 || q->e[i].deadline <= now)
            return (int)i;
    return -1;
}

void mroce_holdq_take(struct mroce_holdq *q, int i, struct mroce_held *out)
{
    *out = q->e[i];
    /* Keep the order of the rest: packets held together leave in order. */
    memmove(&q->e[i], &q->e[i + 1], (q->n - (unsigned)i - 1) * sizeof(q->e[0]));
    q->n--;
}

void mroce_holdq_tick(struct mroce_holdq *q)
{
    for (unsigned i = 0; i < q->n; i++)
        if (q->e[i].countdown)
            q->e[i].countdown--;
}

void mroce_holdq_clear(struct mroce_holdq *q)
{
    for (unsigned i = 0; i < q->n; i++)
        free(q->e[i].buf);
    q->n = 0;
}
