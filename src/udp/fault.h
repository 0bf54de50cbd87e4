/*
 * fault.h - seeded fault injection for the UDP datapath: drop, duplicate,
 * reorder (hold back) and corrupt packets, per direction.
 *
 * This kernel has no netem, so tests and demos that want a lossy network get
 * one here, at the socket boundary, where the engine cannot tell it from a
 * real one.  Decisions come from a seeded PRNG, so a failing run reproduces
 * with the same seed and the same packet sequence.  A reordered packet waits
 * in a hold-back queue until a few later packets have passed it (1..4, at
 * random) or reorder_us has elapsed, whichever comes first.
 */
#ifndef MROCE_UDP_FAULT_H
#define MROCE_UDP_FAULT_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/engine.h>
#include <mroce/mroce.h>

/* Internal to libmroce: not exported from libmroce.so (static linking,
 * as the tests do, still sees them). */
#pragma GCC visibility push(hidden)

enum mroce_fault_action {
    MROCE_FAULT_DROP = 1,
    MROCE_FAULT_DUP = 2,
    MROCE_FAULT_REORDER = 4,
    MROCE_FAULT_CORRUPT = 8,
};

/* One direction's fault generator. */
struct mroce_faultgen {
    struct mroce_fault f; /* probabilities, reorder_us */
    uint64_t rng;         /* splitmix64 state */
    int active;           /* any probability > 0 */
};

/* A held-back packet and what is needed to send or deliver it later. */
struct mroce_held {
    uint8_t *buf; /* malloc'ed copy, owned by the queue */
    uint32_t len;
    int32_t sock;          /* tx: socket index (-1: the receive socket) */
    uint8_t ecn;           /* rx: ECN of the original */
    uint8_t countdown;     /* later packets still to pass it */
    struct mre_addr addr;  /* tx: destination; rx: source */
    mroce_tstamp deadline; /* released at this time at the latest */
};

#define MROCE_HOLD_MAX 64 /* beyond this, packets are not held back */

struct mroce_holdq {
    struct mroce_held e[MROCE_HOLD_MAX];
    unsigned n;
};

/* Checks and copies f; seed picks the stream.  0 or MROCE_EINVAL
 * (probability outside 0..1). */
int mroce_faultgen_init(struct mroce_faultgen *g, const struct mroce_fault *f,
                        uint64_t seed);
/* The actions for the next packet (a mask of enum mroce_fault_action);
 * 0 when inactive.  DROP excludes the others. */
unsigned mroce_faultgen_decide(struct mroce_faultgen *g);
/* Flips one random bit of buf[0..len). */
void mroce_faultgen_corrupt(struct mroce_faultgen *g, uint8_t *buf, size_t len);
/* 1..4 at random: how many later packets pass a held one. */
uint8_t mroce_faultgen_countdown(struct mroce_faultgen *g);

/*
 * Parses a MROCE_FAULT specification into tx, rx (fields not named keep
 * their values) and seed (unchanged unless given):
 *   "tx:drop=0.01,dup=0.001,reorder=0.01,corrupt=0,reorder_us=50;rx:drop=0.01"
 *   "seed=42;tx:drop=0.1"   ("both:" applies to both directions)
 * Returns 0 or MROCE_EINVAL.
 */
int mroce_fault_parse(const char *spec, struct mroce_fault *tx,
                      struct mroce_fault *rx, uint64_t *seed);

/* Hold-back queue.  push copies buf; returns 0 or MROCE_EFULL / ENOMEM (the
 * caller then passes the packet on unheld). */
int mroce_holdq_push(struct mroce_holdq *q, const uint8_t *buf, uint32_t len,
                     const struct mroce_held *meta);
/* Earliest deadline, MROCE_TSTAMP_INF if empty. */
mroce_tstamp mroce_holdq_expiry(const struct mroce_holdq *q);
/* Index of a packet to release now (countdown reached 0 or deadline <= now),
 * or -1.  Take it with mroce_holdq_take(). */
int mroce_holdq_ready(const struct mroce_holdq *q, mroce_tstamp now);
/* Removes entry i, moving it into *out (the caller frees out->buf). */
void mroce_holdq_take(struct mroce_holdq *q, int i, struct mroce_held *out);
/* One later packet passed: decrement every countdown. */
void mroce_holdq_tick(struct mroce_holdq *q);
void mroce_holdq_clear(struct mroce_holdq *q);

#pragma GCC visibility pop

#endif /* MROCE_UDP_FAULT_H */
