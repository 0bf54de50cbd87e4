/*
 * path.h - per-connection path set: the entropies one queue pair sprays over,
 * their health, and the choice of path for each packet.
 *
 * Sits between the requester (which asks "which path for this packet?"),
 * the completer (which reports acknowledgements, RTT samples and ECN echoes
 * per path) and the loss detector (which reports losses per path).  A path that keeps losing packets is retired: its slot
 * gets a fresh entropy, so traffic is steered off a dead link without any
 * switch configuration (PATH-*).  No OS calls; randomness comes from the
 * endpoint's callback.
 */
#ifndef MROCE_PATH_H
#define MROCE_PATH_H

#include <mroce/engine.h>

#define MROCE_PATH_WMAX 8          /* weight of a healthy path */
#define MROCE_PATH_RETIRE_LOSSES 3 /* consecutive losses that retire a path */
#define MROCE_PATH_MOVE_QUIET 4    /* acks per slot after a loss before moves */
#define MROCE_PATH_MOVE_MIN 8      /* slots a set needs for moves (PATH-32) */
#define MROCE_PATH_NONE 0xffffu    /* "no path" in path-list links */
#define MROCE_PATH_WINDOW_PICKS \
    8 /* path picks a congestion window must
                                      span at least (PATH-3) */
#define MROCE_PATH_REUSE_RUN \
    3 /* reuses in a row before the round robin
                                      picks again (PATH-16) */

/* One path slot.  96 bytes, so most slots straddle two cache lines, and at
 * scale every slot touched is a cache miss: fields are ordered so that a
 * send (pick, mre_path_on_sent, the tx ring's path list, the entropy for
 * the header) reads only the first 24 bytes, which usually share one line,
 * and an ACK (the path list, on_ack, on_ecn_echo, on_echo, the loss guard)
 * bytes 15..80, two lines, with the rarely used fields in the gaps and at
 * the end.  The order carries no meaning beyond that. */
struct mre_path {
    /* send side */
    uint64_t tx_bytes; /* counter for mre_qp_path_stats() */
    uint32_t next_seq; /* path_seq to give the next packet sent here;
                               it starts at 0 and never restarts, so it is
                               also the count of packets sent (tx_pkts in
                               the stats), kept once to keep sends short */
    uint16_t entropy;  /* UDP source port used for this path */
    uint8_t deficit;   /* deficit round robin accumulator */
    /* both sides */
    uint8_t weight;     /* 1..MROCE_PATH_WMAX: share of the spray */
    uint32_t list_head; /* oldest in-flight tx entry on this path (owned
                               by the engine's tx ring), MROCE_PATH_NONE... */
    uint32_t list_tail; /* newest in-flight tx entry on this path */
    /* ACK side */
    uint8_t consec_losses; /* losses since the last ack on this path */
    uint8_t ce_last;       /* latest ECN echo was CE: acks earn no weight */
    uint8_t rto_losses;    /* of consec_losses, those charged by the RTOs
                               of the current episode (undone if spurious,
                               LOSS-19); kept by the engine, zeroed here on
                               ack and retirement */
    uint8_t ready;         /* queued for reuse (PATH-16) */
    uint8_t moving;        /* drains to move to a fresh entropy (PATH-32) */
    uint32_t acked_pkts;   /* counters for mre_qp_path_stats(), as are
                               ecn_marks, lost_pkts and retirements */
    uint32_t ecn_ewma;     /* CE fraction of echoes, 16.16 fixed point */
    uint32_t ecn_marks;
    uint32_t lost_pkts;
    uint32_t retirements;   /* entropies this slot has retired (here it
                               fills what srtt's alignment leaves) */
    mroce_tstamp srtt;      /* smoothed RTT of this path, 0 = no sample */
    mroce_tstamp rttvar;    /* RTT variation */
    mroce_tstamp min_rtt;   /* lowest sample on this path */
    mroce_tstamp last_echo; /* when an ACK last echoed a transmission on
                               this slot (PATH-5): its entropy then worked
                               both ways, data out and ACK back; 0 = not
                               since init or the last retirement */
    /* rarely */
    uint16_t ready_next; /* next slot queued for reuse (PATH-16) */
    uint8_t plane;       /* plane of the connection it belongs to (PATH-18);
                            0 with one plane */
    uint8_t full;        /* inflight >= cwnd: no new packet here (CC-20) */
    /* per-path window (CC-20..23), both in wire bytes as CC-2 counts */
    uint32_t cwnd;     /* MROCE_PATH_CWND_UNLIMITED: no per-path window */
    uint32_t inflight; /* bytes in flight on this slot (the tx ring's) */
};

/* cwnd of a slot whose algorithm keeps no per-path windows. */
#define MROCE_PATH_CWND_UNLIMITED 0xffffffffu

/* The set of paths of one queue pair.  Fields are ordered to leave few
 * holes (one QP per connection, a million of them at scale). */
struct mre_pathset {
    struct mre_path *paths; /* npaths slots, owned by the QP */
    uint16_t npaths;
    uint16_t cursor;       /* deficit round robin position */
    uint16_t last;         /* slot of the current burst */
    uint16_t ready_head;   /* slots whose latest echo came back clean, */
    uint16_t ready_tail;   /* oldest first, for reuse (PATH-16) */
    uint8_t quantum;       /* deficit a pick costs: the highest weight at
                                 the start of the cursor's sweep (PATH-3) */
    uint8_t burst;         /* packets per pick (1 = per-packet spraying) */
    uint8_t burst_left;    /* packets left in the current burst */
    uint8_t reuse;         /* PATH-16 on (QP attribute path_reuse) */
    uint8_t reuse_run;     /* reuses since the last round robin pick */
    uint8_t mean_weight;   /* mean weight (rounded down) at the start of
                                 the cursor's sweep: reuse needs at least
                                 this much (PATH-16) */
    uint32_t reuses;       /* picks that reused a clean slot */
    uint32_t moves;        /* slots moved off a queueing path (PATH-32) */
    uint16_t nmoving;      /* slots draining before their move */
    uint32_t quiet_acks;   /* acknowledgements since the last loss */
    uint32_t win_bytes;    /* the window that bounds bursts (PATH-3), */
    uint32_t win_pkt;      /* in packets of up to this many bytes; 0:
                                 no window known (mre_path_set_window) */
    uint16_t entropy_base; /* entropies are in [base, base + span) */
    uint16_t entropy_span;
    /* The sum of the slots' weights and how many slots hold each weight
     * (wcount[w - 1] for weight w), kept wherever a weight changes so that
     * a new sweep (quantum, mean_weight) reads these instead of every slot
     * (a cache line or two each).  Weights stay in 1..MROCE_PATH_WMAX; code
     * that writes a slot's weight behind path.c's back (tests) calls
     * mre_pathset_resync afterwards. */
    uint16_t wsum;
    uint16_t wcount[MROCE_PATH_WMAX];
    /* The largest srtt over the slots, kept as samples arrive so that
     * mre_pathset_max_srtt reads one field instead of every slot (a
     * cache line each; loss detection asks on most ACKs).  A rise is
     * taken at once; a fall of the slot holding it (max_slot) marks it
     * stale and the next query rescans. */
    uint16_t max_slot;
    uint8_t max_stale;
    mroce_tstamp max_srtt;
    mroce_tstamp target_qdelay; /* a path above base_rtt + 2*target is hot */
    /* Planes (plane.c): slot i is on plane i % nplanes and its entropy is
     * congruent to its plane modulo nplanes (PATH-19); picks skip slots of
     * the planes in planes_block (PATH-21) and the slots set in held (a
     * slot retired on a plane under suspicion, PATH-26; nheld of them).
     * 1 and 0 with one plane. */
    uint8_t nplanes;
    uint8_t planes_block;
    uint16_t nheld;
    uint64_t held[4];
    /* Per-path windows (CC-20): slots with inflight >= cwnd, the sum of
     * the slots' windows, and the window a fresh (new or retired) slot
     * starts with (MROCE_PATH_CWND_UNLIMITED while the algorithm keeps
     * none, cc.c mre_cc_path_init). */
    uint16_t nfull;
    uint64_t cwnd_sum;
    uint32_t cwnd_fresh;
    void (*rand)(uint8_t *buf, size_t len, void *user);
    void *rand_user;
};

/*
 * mre_pathset_init sets up npaths slots (1..256) with distinct random
 * entropies in [base, base+span) (span >= npaths), weight MROCE_PATH_WMAX.
 * Returns 0 or MROCE_EINVAL.
 */
int mre_pathset_init(struct mre_pathset *ps, struct mre_path *paths,
                     uint16_t npaths, uint16_t base, uint16_t span,
                     mroce_tstamp target_qdelay,
                     void (*rand)(uint8_t *, size_t, void *), void *rand_user);

/* mre_pathset_set_planes puts slot i on plane i % nplanes (1..8) and
 * gives every slot a fresh entropy congruent to its plane modulo nplanes,
 * distinct from the others (PATH-19); call it with nothing in flight (at
 * the handshake).  Returns 0 or MROCE_EINVAL (span below 2 * nplanes, or
 * more slots than the span holds per plane). */
int mre_pathset_set_planes(struct mre_pathset *ps, uint8_t nplanes);

/* mre_path_set_window bounds the burst (PATH-3) so that a window of
 * `window` bytes in packets of up to `pkt_bytes` spans at least
 * MROCE_PATH_WINDOW_PICKS picks.  It only records the two (the requester
 * calls it before every pick); the bound is worked out when a burst starts,
 * so the division runs once per burst, not per packet.  A zero or
 * overflowing packet size is ignored.  Takes effect at the next burst. */
void mre_path_set_window(struct mre_pathset *ps, uint32_t window,
                         uint32_t pkt_bytes);
/* The burst the recorded window allows: max(1, window / (pkt_bytes *
 * MROCE_PATH_WINDOW_PICKS)), at most 255; 255 if no window is known. */
uint8_t mre_path_burst_cap(const struct mre_pathset *ps);

/* mre_path_pick returns the slot index for the next packet: a burst's
 * next packet, else a slot whose latest echo came back clean (PATH-16),
 * else the deficit round robin over weights (PATH-3); amortised O(1).  `avoid` is a slot to skip if any
 * other exists (retransmissions avoid their original path); pass
 * MROCE_PATH_NONE for none. */
uint16_t mre_path_pick(struct mre_pathset *ps, uint16_t avoid);

/* mre_path_on_sent records a transmission on slot i; returns the path_seq
 * given to the packet. */
uint32_t mre_path_on_sent(struct mre_pathset *ps, uint16_t i, uint32_t bytes);

/* mre_path_on_ack records an acknowledged packet on slot i: resets the
 * consecutive-loss count; rtt is an RTT sample for this path or 0 when the
 * ack is ambiguous (retransmitted packet); base_rtt is the connection's
 * lowest RTT seen (0 = unknown). */
void mre_path_on_ack(struct mre_pathset *ps, uint16_t i, mroce_tstamp rtt,
                     mroce_tstamp base_rtt);

/* mre_path_on_ecn_echo records whether an echoed packet sent on slot i was
 * CE-marked (ce = 1) or not; updates the EWMA and the weight.  Call it
 * before mre_path_on_ack() for the packets the same ACK acknowledges: a CE
 * echo costs one weight point and suppresses the clean-ack increase until a
 * clean echo arrives; a clean echo queues the slot for reuse (PATH-16). */
void mre_path_on_ecn_echo(struct mre_pathset *ps, uint16_t i, int ce);

/* mre_path_on_echo records that an ACK's echo was attributed to slot i
 * (PATH-5) at time now: the slot's entropy is proven to work in both
 * directions (the data got there and the ACK, sent on the same entropy,
 * came back). */
void mre_path_on_echo(struct mre_pathset *ps, uint16_t i, mroce_tstamp now);

/* mre_path_pick_proven chooses the slot for a recovery transmission
 * (PATH-15: a tail-loss probe, or a retransmission while the connection has
 * made no progress since a timeout): among slots other than `avoid` that
 * have lost nothing since their last acknowledgement and have an echo
 * (mre_path_on_echo), the one with the latest echo; without such a slot,
 * mre_path_pick(ps, avoid).  O(npaths); a proven choice leaves the round
 * robin's state (cursor, deficits, burst) alone. */
uint16_t mre_path_pick_proven(struct mre_pathset *ps, uint16_t avoid);

/* mre_path_on_loss records a loss on slot i.  Returns 1 if the slot was
 * retired (it now has a fresh entropy; the caller must declare the slot's
 * in-flight packets lost), else 0. */
int mre_path_on_loss(struct mre_pathset *ps, uint16_t i);

/* mre_path_retire replaces slot i's entropy with a fresh one not in use
 * by any other slot and resets its state (counters kept, retirements+1).
 * It does not touch list_head/list_tail: the engine walks and empties the
 * slot's in-flight list itself. */
void mre_path_retire(struct mre_pathset *ps, uint16_t i);

/* mre_path_rehome moves slot i to plane `plane` (plane.c, PATH-29..31):
 * a fresh entropy congruent to that plane modulo nplanes and distinct from
 * every slot's, and fresh state as on retirement (weight, RTT, window;
 * counters kept, retirements not counted).  Like mre_path_retire it leaves
 * the in-flight list to the caller, which empties it first.  Returns 0, or
 * MROCE_EINVAL (bad slot or plane, or no free entropy of that residue:
 * nothing changes). */
int mre_path_rehome(struct mre_pathset *ps, uint16_t i, uint8_t plane);

/* Lowest min_rtt and highest srtt over slots with samples (0 if none).
 * The maximum is cached (max_srtt above), hence the non-const set. */
mroce_tstamp mre_pathset_min_rtt(const struct mre_pathset *ps);
mroce_tstamp mre_pathset_max_srtt(struct mre_pathset *ps);

/* mre_pathset_resync recomputes what the set caches from its slots
 * (the weight sum and counts, the largest srtt), for code that wrote slot
 * fields directly; path.c keeps them itself. */
void mre_pathset_resync(struct mre_pathset *ps);

/* Per-path windows (CC-20..23).  The tx ring reports every packet that
 * enters or leaves flight on slot i (wire bytes, CC-2); the algorithm
 * (cc.c) sets the windows.  A slot is full while inflight >= cwnd: the
 * picker skips it (mre_path_pick) and the requester sends nothing while
 * every slot is full (mre_path_has_room). */
void mre_path_inflight_add(struct mre_pathset *ps, uint16_t i, uint32_t bytes);
void mre_path_inflight_sub(struct mre_pathset *ps, uint16_t i, uint32_t bytes);
void mre_path_inflight_reset(struct mre_pathset *ps);
void mre_path_set_cwnd(struct mre_pathset *ps, uint16_t i, uint32_t cwnd);
static inline int mre_path_has_room(const struct mre_pathset *ps)
{
    return ps->nfull < ps->npaths;
}

/* Fill a public stats record for slot i. */
void mre_path_get_stats(const struct mre_pathset *ps, uint16_t i,
                        struct mroce_path_stats *st);

#endif /* MROCE_PATH_H */
