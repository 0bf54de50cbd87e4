/*
 * cc.h - congestion control interface and the built-in algorithms.
 *
 * A window per connection and, if the algorithm keeps them, one per path
 * (CC-1, CC-20..23).  The
 * completer feeds events (acks with RTT samples and ECN counts, losses) and
 * the loss detector (losses, timeouts, spurious-timeout undo); the
 * requester reads cwnd before sending.  Algorithms are ops
 * tables so others plug in: the engine ships delay+ECN (default) and a
 * fixed window; the simulator adds a DCQCN-style baseline through the same
 * interface.  No OS calls, no floating point on the per-ack path.
 */
#ifndef MROCE_CC_H
#define MROCE_CC_H

#include <mroce/engine.h>

struct mre_cc;

/* An acknowledgement event. */
struct mre_cc_ack {
    uint32_t acked_bytes; /* bytes newly acknowledged */
    uint32_t acked_pkts;  /* packets newly acknowledged */
    uint32_t ce_pkts;     /* of the packets the receiver counted since the
                             previous ACK, how many were CE-marked */
    uint32_t rx_pkts;     /* ... and how many in all */
    mroce_tstamp rtt;     /* RTT sample, 0 if none in this ACK */
    uint32_t inflight;    /* bytes in flight after this ACK */
    uint32_t starved;     /* 1 if, since the previous ACK, cwnd held back a
                             packet while the sender's link had nothing
                             else to send (CC-19), else 0 */
    mroce_tstamp now;
    mroce_tstamp held; /* how long the receiver held this ACK (its
                          ack_delay), 0 if unknown (CC-39) */
};

struct mre_cc_ops {
    const char *name;
    void (*init)(struct mre_cc *cc);
    void (*on_ack)(struct mre_cc *cc, const struct mre_cc_ack *ev);
    void (*on_loss)(struct mre_cc *cc, uint32_t lost_bytes, mroce_tstamp now);
    void (*on_timeout)(struct mre_cc *cc, mroce_tstamp now);
    /* Optional: a timeout turned out spurious (LOSS-19, CC-13); `before` is
     * the whole state as it was just before that timeout's on_timeout.
     * NULL: the engine restores cwnd, last_decrease, ai_acc and scratch
     * (everything the built-in algorithms change on a timeout). */
    void (*undo)(struct mre_cc *cc, const struct mre_cc *before);
    /* Optional (CC-20): per-path windows.  Returns a path's new window
     * from its current one `pcwnd` on feedback for that path: congested
     * (its echo was CE or its RTT sample above the target, CC-21) or
     * clean with `acked` wire bytes acknowledged on it (CC-22).  The
     * engine clamps the result (mre_cc_path_feedback).  NULL: no per-path
     * windows; every path may carry the whole cwnd (the fixed window). */
    uint32_t (*path_update)(const struct mre_cc *cc, uint32_t pcwnd,
                            int congested, uint32_t acked);
};

/* State shared by all algorithms, plus scratch for the algorithm. */
struct mre_cc {
    const struct mre_cc_ops *ops;
    uint32_t cwnd;     /* bytes the connection may have in flight */
    uint32_t mtu;      /* bytes per full packet */
    uint32_t min_cwnd; /* floor: one MTU */
    uint32_t max_cwnd; /* ceiling: window * MTU */
    uint32_t init_cwnd;
    mroce_tstamp base_rtt; /* lowest RTT seen, 0 = none yet */
    mroce_tstamp srtt;     /* connection smoothed RTT (kept by the engine) */
    mroce_tstamp target_qdelay; /* queuing allowed per direction (CC-7) */
    mroce_tstamp last_decrease; /* to decrease at most once per RTT */
    uint32_t alpha;             /* ECN estimate, 16.16 fixed point */
    uint32_t ai_acc;            /* additive-increase byte accumulator */
    uint32_t ce_acc, rx_acc;    /* ECN counts over the current RTT */
    mroce_tstamp round_start;   /* start of the current ECN observation round */
    uint64_t scratch[4];        /* for plug-in algorithms */
    uint8_t round_used;         /* delay+ECN, long RTT (CC-51): an ACK of the
                           current round found the window in use */
    uint8_t jumped;             /* CC-39: the last on_ack raised cwnd to a
                                   measured rate's window; the engine then
                                   raises the path windows (CC-40) */
    uint32_t hint_mbps;         /* the receiver's latest rate hint (CC-27),
                                   0 = none; kept by the engine */
    uint32_t line_mbps;         /* the endpoint's own rate (rx_rate_mbps,
                                   CC-25), 0 = unknown; set by the engine */
    uint32_t jump_mbps;         /* CC-40: pace at most at this rate ... */
    mroce_tstamp jump_until;    /* ... until then (0 = no such bound) */
    mroce_tstamp dr_first;      /* CC-39: first ACK of the current train of
                                   ACKs, 0 = none */
    mroce_tstamp dr_second;     /* ... its second ACK, 0 = none yet */
    mroce_tstamp dr_last;       /* ... its latest ACK */
    uint64_t dr_bytes;          /* ... bytes acknowledged after the second */
    uint32_t dr_pkts;           /* ... packets acknowledged after the second */
    uint8_t dr_queued;          /* ... an RTT sample of it was above the
                                   delay target (CC-39) */
};

/* CC-51: a connection whose base_rtt is at least this (ns), 1 ms, is on
 * a long-haul path (a data centre's RTTs, and a busy host's lowest
 * samples, are well below it), where delay+ECN grows its windows by the
 * round rather than by the ACK (see cc.c). */
#define MROCE_CC_LONG_RTT 1000000u

/* Built-in algorithms. */
extern const struct mre_cc_ops mre_cc_delay_ecn;
extern const struct mre_cc_ops mre_cc_fixed;

/* mre_cc_init fills the common fields and calls ops->init. */
void mre_cc_init(struct mre_cc *cc, const struct mre_cc_ops *ops, uint32_t mtu,
                 uint32_t init_cwnd, uint32_t max_cwnd,
                 mroce_tstamp target_qdelay);
struct mre_pathset;
/* Per-path windows (CC-20..23).  mre_cc_path_init gives every slot of ps
 * its starting window (cwnd / npaths, at least one packet) if `on` and
 * the algorithm keeps per-path windows, else none (unlimited).
 * mre_cc_path_feedback applies ops->path_update to slot i and clamps it:
 * at least one burst of full packets (path_burst * (MTU + 80)), at most
 * cwnd, and growth only
 * while the slots' windows sum to less than MROCE_CC_PATH_SUM_MUL * cwnd. */
#define MROCE_CC_PATH_SUM_MUL 2u
void mre_cc_path_init(const struct mre_cc *cc, struct mre_pathset *ps, int on);
void mre_cc_path_feedback(const struct mre_cc *cc, struct mre_pathset *ps,
                          uint16_t i, int congested, uint32_t acked);
/* CC-40: after a long-haul start-up jump (cc->jumped), raise every slot's
 * window to at least its even share of cwnd (never lower one), and clear
 * cc->jumped.  Nothing if the connection keeps no per-path windows. */
void mre_cc_path_raise(struct mre_cc *cc, struct mre_pathset *ps);
/* An echo on slot i, CE-marked or not, with this ACK's RTT sample (0:
 * none): congested feedback for the slot if it was marked or the sample
 * is above the delay target (CC-21). */
void mre_cc_path_on_echo(const struct mre_cc *cc, struct mre_pathset *ps,
                         uint16_t i, int ce, mroce_tstamp rtt);

/* The ops table for an enum mroce_cc_algo value, or NULL. */
const struct mre_cc_ops *mre_cc_ops_get(unsigned algo);

#endif /* MROCE_CC_H */
