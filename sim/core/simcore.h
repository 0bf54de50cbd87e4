/*
 * simcore.h - the discrete-event core that every simulation in the tree
 * runs on: mroce-sim (sim/src) and the in-process network model of the
 * engine tests, the demo and the engine benchmark (sim/netmodel).
 *
 * Two pieces, both deterministic:
 *   - randomness: splitmix64 streams (rng_*).  A model seeds as many
 *     streams as it has kinds of decisions and draws from them in its own
 *     order; the same seed gives the same draws on every platform.
 *   - the event queue (evq.c): a 4-ary min-heap of (time, key) entries.
 *     key = seq << 28 | type << 24 | idx, where seq is the insertion
 *     sequence number, unique per queue, so events pop in (time, insertion
 *     order): ties are FIFO, which is what makes a run repeatable.
 *     mroce-sim gives every event seq 0 instead (evq_push_seq), so its
 *     ties pop in (type, idx) order, whatever queue they share.  The
 *     type (4 bits) and index (24 bits) are the model's: mroce-sim names a
 *     link, host or timer with them, the network model a packet's stage
 *     and its slot in the packet table.
 * Times are the model's unit (both models use picoseconds).
 */
#ifndef MROCE_SIMCORE_H
#define MROCE_SIMCORE_H

#include <stddef.h>
#include <stdint.h>

/* ---- deterministic randomness: splitmix64 ---- */

/* The splitmix64 finalizer: a well-mixed 64-bit function of z (also used
 * to derive seeds and hash keys). */
static inline uint64_t rng_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* The next 64 random bits of stream *s. */
static inline uint64_t rng_next(uint64_t *s)
{
    *s += 0x9e3779b97f4a7c15ULL;
    return rng_mix64(*s);
}
/* Uniform in [0, 1) on 53 bits. */
static inline double rng_unif(uint64_t *s)
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}
/* Uniform in [0, n) without a division for n < 2^32 (Lemire's
 * multiply-shift; the bias is below 2^-32, irrelevant for a model). */
static inline uint64_t rng_range(uint64_t *s, uint64_t n)
{
    uint64_t r = rng_next(s) >> 32;
    if (n <= UINT32_MAX)
        return (r * n) >> 32;
    return rng_next(s) % n;
}
/* 1 with probability th / 2^53 (th from a probability times 2^53). */
static inline int rng_hit(uint64_t *s, uint64_t th)
{
    return (rng_next(s) >> 11) < th;
}

/* ---- the event queue (evq.c) ---- */

/* An event: its time and one word that orders ties and names it,
 * key = seq << 28 | type << 24 | idx.  The sequence number is unique, so
 * comparing keys compares sequence numbers; 16 bytes let four siblings of
 * the 4-ary heap share one cache line. */
#define EV_IDX_BITS 24
#define EV_TAG_BITS 28 /* type and idx */
#define EV_IDX_MAX ((1u << EV_IDX_BITS) - 1)
#define EV_SEQ_MAX (((uint64_t)1 << (64 - EV_TAG_BITS)) - 1)
struct ev {
    uint64_t t;   /* the model's time unit */
    uint64_t key; /* seq, type, idx: ties are FIFO, hence determinism */
};
static inline uint32_t ev_type(const struct ev *e)
{
    return (uint32_t)(e->key >> EV_IDX_BITS) & 15;
}
static inline uint32_t ev_idx(const struct ev *e)
{
    return (uint32_t)e->key & EV_IDX_MAX;
}

struct evq {
    struct ev *h; /* 4-ary min-heap on (t, key), root h[0] */
    void *mem;    /* owned: h sits 48 bytes into it (evq.c) */
    size_t n, cap;
    uint64_t seq; /* next sequence number */
};
/* Room for cap entries (0: 1024).  Returns 0 or -1 (out of memory). */
int evq_init(struct evq *q, size_t cap);
void evq_free(struct evq *q);
/* Grows the heap to hold at least cap entries, so that pushes up to that
 * many cannot fail for want of memory.  Returns 0 or -1. */
int evq_reserve(struct evq *q, size_t cap);
/* Returns 0, or -1 on allocation failure or a sequence number, type or
 * index beyond the key's fields (with a message on stderr). */
int evq_push(struct evq *q, uint64_t t, uint32_t type, uint32_t idx);
/* The same with a sequence number of the caller's (mroce-sim: 0 for
 * every event, so ties are ordered by type and index). */
int evq_push_seq(struct evq *q, uint64_t t, uint64_t seq, uint32_t type,
                 uint32_t idx);
/* Pops the earliest event into *e (may be NULL); 0 if empty. */
int evq_pop(struct evq *q, struct ev *e);
/* Replaces the earliest event (the queue must not be empty); exits the
 * process if the entry does not fit a key. */
void evq_replace_top(struct evq *q, uint64_t t, uint64_t seq, uint32_t type,
                     uint32_t idx);

#endif /* MROCE_SIMCORE_H */
