/*
 * link.h - the link and queue primitive of the simulation core: a FIFO
 * transmitter's serialization clock at a per-link rate, and the rules of
 * its output queue (drop-tail, ECN marking).  Both models build every
 * queue they have on it: mroce-sim's links (sim/src/fabric.c) and the test
 * network's uplinks, spine queues and downlinks (sim/netmodel/netmodel.c).
 * What sits on top stays with each model: topology and routing, PFC (the
 * simulator's baseline), faults (link state and loss in the simulator;
 * loss, duplication, corruption, reordering and blackholes in the test
 * network) and how a queue's length is measured (see below).
 *
 * Rate: a link serializes at one of two representations, picked when its
 * rate is set, because each model's results (the scenario CSVs, the
 * demo's output, the engine tests' timings) depend on its own:
 *   - fixed (slink_rate_fixed): picoseconds per byte in 48.16 fixed
 *     point, serialization time rounded up to a picosecond; exact for the
 *     usual rates (100 Gb/s = 80 ps/B).  The test network uses it, and
 *     derives queue occupancy from the clock with the same rounding
 *     (slink_backlog, slink_ready_ps).
 *   - nearest (slink_rate_nearest): a per-byte double, serialization time
 *     rounded to the nearest picosecond.  mroce-sim uses it, and counts
 *     the bytes waiting in its queues itself (a packet in service is not
 *     queued there).
 *
 * Queue rules, on the bytes queued ahead of an arriving packet as the
 * model measures them: drop-tail when queued + len exceeds the limit;
 * ECN marking by RED between kmin and kmax (always at or above kmax, with
 * probability pmax * (q - kmin) / (kmax - kmin) in between, drawn from
 * the model's stream), of which the step threshold "mark above k" is the
 * case kmin = kmax = k, which draws nothing.  SLINK_UNLIMITED as a limit
 * or threshold means never drop / never mark.  Times are picoseconds.
 */
#ifndef MROCE_SIM_LINK_H
#define MROCE_SIM_LINK_H

#include <stdint.h>

#include "simcore.h"

#define SLINK_UNLIMITED UINT64_MAX

enum slink_rate_kind {
    SLINK_RATE_FIXED = 0,   /* 48.16 ps per byte, rounded up */
    SLINK_RATE_NEAREST = 1, /* double ps per byte, rounded to nearest */
};

struct slink_rate {
    union {
        uint64_t ppb;       /* fixed: 0 = infinitely fast */
        double ps_per_byte; /* nearest */
    };
    uint32_t kind; /* enum slink_rate_kind */
};

/* A FIFO transmitter: when its last queued bit leaves, and its rate. */
struct slink {
    uint64_t busy_ps;
    struct slink_rate rate;
};

/* A fixed-point rate of rate_bps bits/s (0: infinitely fast). */
static inline struct slink_rate slink_rate_fixed(uint64_t rate_bps)
{
    struct slink_rate r;
    r.kind = SLINK_RATE_FIXED;
    r.ppb = rate_bps ? (uint64_t)(8e12 * 65536.0 / (double)rate_bps + 0.5) : 0;
    return r;
}

/* A rate of rate_bps bits/s (> 0) rounded to the nearest picosecond. */
static inline struct slink_rate slink_rate_nearest(double rate_bps)
{
    struct slink_rate r;
    r.kind = SLINK_RATE_NEAREST;
    r.ps_per_byte = 8e12 / rate_bps;
    return r;
}

/* Whether the link serializes at all (a fixed rate of 0 does not). */
static inline int slink_rate_finite(const struct slink_rate *r)
{
    return r->kind == SLINK_RATE_NEAREST || r->ppb != 0;
}

/* Time to serialize len bytes, in the rate's rounding (saturating at
 * UINT64_MAX for a fixed rate). */
static inline uint64_t slink_ser_ps(const struct slink_rate *r, uint64_t len)
{
    if (r->kind == SLINK_RATE_NEAREST)
        return (uint64_t)((double)len * r->ps_per_byte + 0.5);
    if (r->ppb == 0)
        return 0;
    if (len > (UINT64_MAX - 0xffff) / r->ppb)
        return UINT64_MAX;
    return (len * r->ppb + 0xffff) >> 16;
}

/* When a packet handed to the link at t starts: at once if it is idle,
 * else when the bytes ahead of it have left. */
static inline uint64_t slink_start(const struct slink *l, uint64_t t)
{
    return l->busy_ps > t ? l->busy_ps : t;
}

/* Queues len bytes at time t; returns when their last bit has left. */
static inline uint64_t slink_tx(struct slink *l, uint64_t t, uint64_t len)
{
    uint64_t start = slink_start(l, t);
    uint64_t s = slink_ser_ps(&l->rate, len);
    l->busy_ps = start > UINT64_MAX - s ? UINT64_MAX : start + s;
    return l->busy_ps;
}

/* Fixed rates: the bytes (rounded up) not yet sent at time t, including
 * the unsent rest of the packet in service: the queue's occupancy. */
static inline uint32_t slink_backlog(const struct slink *l, uint64_t t)
{
    uint64_t ppb = l->rate.ppb, ps, b;
    if (ppb == 0 || l->busy_ps <= t)
        return 0;
    ps = l->busy_ps - t;
    if (ps > (UINT64_MAX >> 16))
        b = (ps / ppb) << 16;
    else
        b = ((ps << 16) + ppb - 1) / ppb;
    return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

/* Fixed rates: the earliest time at which slink_backlog() is below
 * queue_bytes (0: the link is idle); 0 if that is already so at time 0 or
 * the rate is infinite. */
static inline uint64_t slink_ready_ps(const struct slink *l,
                                      uint32_t queue_bytes)
{
    uint64_t ppb = l->rate.ppb, slack;
    if (ppb == 0)
        return 0;
    /* backlog < q  <=>  ceil(rest * 65536 / ppb) <= q - 1
     *              <=>  rest <= floor((q - 1) * ppb / 65536),
     * the same rounding as slink_backlog(). */
    if (queue_bytes == 0)
        queue_bytes = 1;
    /* Asked for every packet: avoid the division that the overflow check
     * needs unless the link is slower than ~120 kb/s. */
    if (ppb > UINT32_MAX && (uint64_t)(queue_bytes - 1) > UINT64_MAX / ppb)
        return 0;
    slack = ((uint64_t)(queue_bytes - 1) * ppb) >> 16;
    return l->busy_ps > slack ? l->busy_ps - slack : 0;
}

/* Drop-tail: whether len bytes arriving behind `queued` overflow limit. */
static inline int slink_droptail(uint64_t queued, uint64_t len, uint64_t limit)
{
    return limit != SLINK_UNLIMITED && queued + len > limit;
}

/* RED/ECN: whether a markable packet arriving behind `queued` bytes is
 * marked; draws from *rng only strictly between kmin and kmax. */
static inline int slink_ecn_red(uint64_t queued, uint64_t kmin, uint64_t kmax,
                                double pmax, uint64_t *rng)
{
    if (queued <= kmin)
        return 0;
    if (queued >= kmax)
        return 1;
    return rng_unif(rng) <
           pmax * (double)(queued - kmin) / (double)(kmax - kmin);
}

/* Step marking: above k (RED with kmin = kmax = k). */
static inline int slink_ecn_step(uint64_t queued, uint64_t k)
{
    return slink_ecn_red(queued, k, k, 0.0, NULL);
}

#endif /* MROCE_SIM_LINK_H */
