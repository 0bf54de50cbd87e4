/*
 * path.c - the path set of one queue pair: entropy allocation, deficit round
 * robin spraying, per-path RTT/ECN health, weights and retirement (PATH-*).
 *
 * A "path" is just a UDP source port (entropy) that ECMP hashes onto some
 * link; this module never learns which link.  It only watches what comes
 * back per entropy: RTT samples, ECN echoes, acknowledgements and losses.
 * Hot paths (CE echoes, RTT above base_rtt + target_qdelay) lose weight
 * and so get a smaller share of the spray; a path that loses
 * MROCE_PATH_RETIRE_LOSSES packets in a row with no ack in between is
 * retired: the slot keeps its index and counters but gets a fresh entropy,
 * which ECMP hashes (very likely) onto a different link.
 *
 * A slot whose echo comes back clean is queued and sent on again before the
 * round robin's next choice (PATH-16, recycled entropies), so the spray
 * follows the ACK clock away from links that mark.
 *
 * Per-packet functions (pick, on_sent, on_ack, on_ecn_echo) are O(1) apart
 * from pick's amortised deficit and reuse loops; only init, retire and a
 * slot's move (PATH-32) scan the set.
 * No OS calls, no allocation, no floating point: randomness comes from the
 * endpoint's callback.
 *
 * Ownership: list_head/list_tail belong to the engine's tx ring.  This file
 * initialises them to MROCE_PATH_NONE and never touches them again; in
 * particular retirement leaves them alone, because the engine must walk the
 * retired slot's list to declare its in-flight packets lost and then empties
 * it itself.
 */
#include <string.h>

#include "path.h"
#include "../wire/seeded_fault.h"

/* Random draws per fresh entropy before falling back to a linear probe.  The
 * fallback only matters when the span is nearly full or the random callback
 * is broken (e.g. returns constants); it keeps init/retire from spinning
 * forever in a sans-IO engine that must always return. */
#define PATH_MAX_DRAWS 64

/* A 16-bit random number from the endpoint's callback. */
static uint32_t path_rand16(const struct mre_pathset *ps)
{
    uint8_t b[2] = {0, 0};
    ps->rand(b, sizeof b, ps->rand_user);
    return ((uint32_t)b[0] << 8) | b[1];
}

/* 1 if entropy e is held by one of the first n slots. */
static int path_entropy_used(const struct mre_pathset *ps, uint32_t n,
                             uint32_t e)
{
    uint32_t k;
    for (k = 0; k < n; k++)
        if (ps->paths[k].entropy == e)
            return 1;
    return 0;
}

/*
 * A uniformly random entropy in [base, base+span) not held by the first n
 * slots, or -1 if every value is taken.  Rejection sampling twice over: draws
 * at or above the largest multiple of span below 2^16 are redrawn so the
 * modulo is unbiased, and draws that hit an entropy in use are redrawn so
 * entropies stay distinct (two slots on one entropy would be one path
 * counted twice).
 */
static int32_t path_fresh_entropy(const struct mre_pathset *ps, uint32_t n,
                                  uint32_t plane)
{
    uint32_t span = ps->entropy_span, base = ps->entropy_base;
    uint32_t limit = 65536u - 65536u % span;
    uint32_t np = ps->nplanes > 1 ? ps->nplanes : 1;
    uint32_t start = 0, k;
    int draws;

    for (draws = 0; draws < PATH_MAX_DRAWS; draws++) {
        uint32_t r = path_rand16(ps);
        if (r >= limit)
            continue;
        start = r % span;
        if (np > 1) {
            /* PATH-19: the entropy names its plane (e % np == plane); the
             * nearest such value, inside the span (span >= 2 * np). */
            uint32_t e = base + start - (base + start) % np + plane;
            if (e < base)
                e += np;
            if (e >= base + span)
                e -= np;
            start = e - base;
        }
        if (!path_entropy_used(ps, n, base + start))
            return (int32_t)(base + start);
    }
    /* Fallback: probe upwards from the last draw; terminates in span steps. */
    for (k = 0; k < span; k++) {
        uint32_t e = base + (start + k) % span;
        if (e % np == plane && !path_entropy_used(ps, n, e))
            return (int32_t)e;
    }
    return -1;
}

/* Slot i's srtt has just been written: keep the cached maximum (see
 * struct mre_pathset).  While it is not stale it equals the largest srtt
 * and max_slot holds it, so a new value at or above it is the new maximum,
 * one below it changes nothing unless slot i held it. */
static void path_srtt_noted(struct mre_pathset *ps, uint16_t i)
{
    mroce_tstamp v = ps->paths[i].srtt;

    if (ps->max_stale)
        return;
    if (v >= ps->max_srtt) {
        ps->max_srtt = v;
        ps->max_slot = i;
    } else if (i == ps->max_slot) {
        ps->max_stale = 1;
    }
}

/* Every change of a slot's weight goes through here, keeping the set's sum
 * and per-weight counts (struct mre_pathset wsum, wcount) in step. */
static void path_weight_set(struct mre_pathset *ps, struct mre_path *p,
                            uint8_t w)
{
    ps->wcount[p->weight - 1]--;
    ps->wcount[w - 1]++;
    ps->wsum = (uint16_t)(ps->wsum - p->weight + w);
    p->weight = w;
}

/* Fresh health state for a slot (init and retirement).  Counters, next_seq
 * and the engine-owned list links are deliberately not touched here. */
static void path_reset_state(struct mre_path *p)
{
    p->weight = MROCE_PATH_WMAX;
    p->deficit = 0;
    p->consec_losses = 0;
    p->rto_losses = 0;
    p->ce_last = 0;
    p->ecn_ewma = 0;
    p->srtt = 0;
    p->rttvar = 0;
    p->min_rtt = 0;
    p->last_echo = 0; /* a fresh entropy has proven nothing yet */
}

int mre_pathset_init(struct mre_pathset *ps, struct mre_path *paths,
                     uint16_t npaths, uint16_t base, uint16_t span,
                     mroce_tstamp target_qdelay,
                     void (*rand)(uint8_t *, size_t, void *), void *rand_user)
{
    uint32_t i;

    if (ps == NULL || paths == NULL || rand == NULL || npaths == 0 ||
        npaths > 256 || span < npaths || (uint32_t)base + span > 65536u)
        return MROCE_EINVAL;

    ps->paths = paths;
    ps->npaths = npaths;
    ps->cursor = 0;
    ps->last = 0;
    ps->burst = 1;
    ps->win_bytes = 0;
    ps->win_pkt = 0;
    ps->quantum = MROCE_PATH_WMAX;
    ps->burst_left = 0;
    ps->ready_head = ps->ready_tail = MROCE_PATH_NONE;
    ps->reuses = 0;
    ps->moves = 0;
    ps->nmoving = 0;
    ps->quiet_acks = 0;
    ps->reuse = 0; /* the QP sets it from its attributes */
    ps->reuse_run = 0;
    ps->mean_weight = MROCE_PATH_WMAX;
    ps->entropy_base = base;
    ps->entropy_span = span;
    ps->target_qdelay = target_qdelay;
    ps->rand = rand;
    ps->rand_user = rand_user;
    ps->max_srtt = 0; /* every slot starts without a sample */
    ps->max_slot = 0;
    ps->max_stale = 0;
    ps->nplanes = 1; /* until the handshake negotiates more (plane.c) */
    ps->planes_block = 0;
    ps->nheld = 0;
    memset(ps->held, 0, sizeof(ps->held));
    ps->nfull = 0;
    ps->cwnd_fresh = MROCE_PATH_CWND_UNLIMITED; /* cc.c sets the windows */
    ps->cwnd_sum = (uint64_t)npaths * MROCE_PATH_CWND_UNLIMITED;
    /* every slot starts at full weight (path_reset_state below) */
    for (i = 0; i < MROCE_PATH_WMAX; i++)
        ps->wcount[i] = 0;
    ps->wcount[MROCE_PATH_WMAX - 1] = npaths;
    ps->wsum = (uint16_t)(npaths * MROCE_PATH_WMAX);

    for (i = 0; i < npaths; i++) {
        struct mre_path *p = &paths[i];
        /* span >= npaths, so a free value always exists for slot i. */
        p->plane = 0;
        p->entropy = (uint16_t)path_fresh_entropy(ps, i, 0);
        path_reset_state(p);
        p->ready = 0;
        p->ready_next = MROCE_PATH_NONE;
        p->full = 0;
        p->moving = 0;
        p->cwnd = MROCE_PATH_CWND_UNLIMITED;
        p->inflight = 0;
        p->next_seq = 0;
        p->list_head = MROCE_PATH_NONE;
        p->list_tail = MROCE_PATH_NONE;
        p->retirements = 0;
        p->tx_bytes = 0;
        p->acked_pkts = 0;
        p->lost_pkts = 0;
        p->ecn_marks = 0;
    }
    return 0;
}

/* Planes (PATH-18, PATH-19): slots interleave over the planes, so every
 * plane gets npaths / nplanes of them, and each slot draws a fresh entropy
 * of its plane's residue.  Slots are zeroed first so that the draws only
 * avoid the new values. */
int mre_pathset_set_planes(struct mre_pathset *ps, uint8_t nplanes)
{
    uint32_t i;

    if (nplanes < 1 || nplanes > 8 || ps->entropy_span < 2u * nplanes ||
        (uint32_t)ps->npaths > ps->entropy_span / nplanes)
        return MROCE_EINVAL;
    ps->nplanes = nplanes;
    ps->planes_block = 0;
    ps->nheld = 0;
    memset(ps->held, 0, sizeof(ps->held));
    for (i = 0; i < ps->npaths; i++)
        ps->paths[i].entropy = 0;
    for (i = 0; i < ps->npaths; i++) {
        struct mre_path *p = &ps->paths[i];
        int32_t e;
        p->plane = (uint8_t)(i % nplanes);
        if (MROCE_SEEDED_FAULT(PLANE_HOME_BLOCK))
            p->plane = (uint8_t)(i * nplanes / ps->npaths); /* in blocks */
        e = path_fresh_entropy(ps, i, p->plane);
        if (e < 0)
            return MROCE_EINVAL;
        p->entropy = (uint16_t)e;
    }
    return 0;
}

/* A slot whose plane is held back (PATH-21, PATH-26), plane.c. */
static inline int path_plane_blocked(const struct mre_pathset *ps,
                                     const struct mre_path *p)
{
    return (ps->planes_block >> p->plane) & 1;
}

/* A slot the plane logic holds back: its plane (PATH-21) or the slot
 * itself (PATH-26), plane.c. */
static inline int path_blocked(const struct mre_pathset *ps,
                               const struct mre_path *p)
{
    uint32_t i;

    if (path_plane_blocked(ps, p))
        return 1;
    if (!ps->nheld)
        return 0;
    i = (uint32_t)(p - ps->paths);
    return (int)((ps->held[i >> 6] >> (i & 63)) & 1);
}

/* A slot the round robin and reuse skip: held back (path_blocked) or
 * draining before its move (PATH-32).  Recovery transmissions (PATH-15)
 * may still take a draining slot. */
static inline int path_unpickable(const struct mre_pathset *ps,
                                  const struct mre_path *p)
{
    return p->moving || path_blocked(ps, p);
}

/*
 * Smooth deficit round robin: the cursor visits slots in order, each visit
 * adds the slot's weight to its deficit, and a slot whose deficit reaches
 * the quantum Q (the highest weight, path_new_sweep) sends one packet and
 * pays Q.  Every slot is visited equally often, so a slot's share is
 * weight/Q of a full-weight slot's, and packets of a low-weight slot are
 * spread out rather than bunched.  With every weight equal each visit
 * sends: one step per pick.  A slot sends at most one packet per visit
 * (once a lowered Q has been paid down); with weights >= 1 some slot sends
 * within Q <= WMAX sweeps, so the loop is amortised O(WMAX) per pick in the
 * worst case.  The cursor moves past the chosen slot so consecutive
 * packets go to different paths.
 */
static uint16_t path_pick_one(struct mre_pathset *ps, uint16_t avoid);

/* Bursts: a datapath that batches (UDP GSO sends one burst of segments with
 * one source port) asks for `burst` consecutive packets per path.  A burst
 * counts as one deficit-round-robin pick, so weights keep their meaning.
 * The window bounds it (mre_path_burst_cap, PATH-3): with 8-packet bursts a window of
 * one or two bursts would be one or two ECMP choices per RTT, so one spine
 * queue would overflow and mark while the other idles (fabric/README.md,
 * scenario 2); large windows, where batching saves the most, keep full
 * bursts. */
void mre_path_set_window(struct mre_pathset *ps, uint32_t window,
                         uint32_t pkt_bytes)
{
    uint32_t per = pkt_bytes * MROCE_PATH_WINDOW_PICKS;

    if (pkt_bytes == 0 || per / MROCE_PATH_WINDOW_PICKS != pkt_bytes)
        return; /* nonsense or overflow: keep what was recorded */
    ps->win_bytes = window;
    ps->win_pkt = pkt_bytes;
}

uint8_t mre_path_burst_cap(const struct mre_pathset *ps)
{
    if (ps->win_pkt == 0)
        return 255; /* no window known: the attribute rules */
    uint32_t cap = ps->win_bytes / (ps->win_pkt * MROCE_PATH_WINDOW_PICKS);
    return (uint8_t)(cap < 1 ? 1 : cap > 255 ? 255 : cap);
}

/*
 * PATH-16, recycled entropies (after Ultra Ethernet's REPS): a slot whose
 * echo comes back clean is queued, and a new burst reuses the oldest
 * queued slot that is still healthy; only when none is queued, or after
 * MROCE_PATH_REUSE_RUN reuses in a row, does the deficit round robin
 * choose.  A CE echo queues nothing, so the packet that would have followed
 * it onto the marking link goes to the round robin's next slot instead,
 * which ECMP puts on any link.  The spray thus follows the ACK clock: load
 * moves off a link within a round trip of its marks, towards links whose
 * ACKs return clean.  (On the namespace fabric, scenario 2 of
 * fabric/README.md, one spine marks while the other idles, and the round
 * robin over 256 slots comes back to a slot only tens of round trips
 * later.)  The round robin's regular turn keeps every slot visited, so a
 * dead slot is still found and retired and an unmarked spray stays even.
 * Healthy means: the latest echo was clean, nothing lost since the last
 * ack, an echo since the last retirement, not the slot to avoid, and a
 * weight no lower than the set's mean, so a slot that PATH-6 lowered (a
 * slow or queueing path) is not fed through reuse (without that bound it
 * would take a share of the simulator's all-to-all).  Entries that fail are
 * dropped; each echo queues a slot at most once, so the loop is amortised
 * O(1).
 */
static void path_ready_push(struct mre_pathset *ps, uint16_t i)
{
    struct mre_path *p = &ps->paths[i];

    if (p->ready)
        return;
    p->ready = 1;
    p->ready_next = MROCE_PATH_NONE;
    if (ps->ready_tail != MROCE_PATH_NONE)
        ps->paths[ps->ready_tail].ready_next = i;
    else
        ps->ready_head = i;
    ps->ready_tail = i;
}

static uint16_t path_ready_pop(struct mre_pathset *ps, uint16_t avoid)
{
    while (ps->ready_head != MROCE_PATH_NONE) {
        uint16_t i = ps->ready_head;
        struct mre_path *p = &ps->paths[i];
        ps->ready_head = p->ready_next;
        if (ps->ready_head == MROCE_PATH_NONE)
            ps->ready_tail = MROCE_PATH_NONE;
        p->ready = 0;
        p->ready_next = MROCE_PATH_NONE;
        if (i != avoid && !path_unpickable(ps, p) && !p->ce_last && !p->full &&
            p->consec_losses == 0 && p->last_echo != 0 &&
            p->weight >= ps->mean_weight) {
            ps->reuses++;
            return i;
        }
    }
    return MROCE_PATH_NONE;
}

uint16_t mre_path_pick(struct mre_pathset *ps, uint16_t avoid)
{
    if (ps->burst_left && ps->last != avoid && ps->last < ps->npaths &&
        !path_unpickable(ps, &ps->paths[ps->last]) &&
        !ps->paths[ps->last].full) {
        ps->burst_left--;
        return ps->last;
    }
    uint16_t i = MROCE_PATH_NONE;
    if (ps->reuse && ps->npaths > 1 && ps->reuse_run < MROCE_PATH_REUSE_RUN)
        i = path_ready_pop(ps, avoid);
    if (i == MROCE_PATH_NONE) {
        i = path_pick_one(ps, avoid);
        ps->reuse_run = 0;
    } else {
        ps->reuse_run++;
    }
    uint8_t b = ps->burst;
    if (b > 1) {
        uint8_t cap = mre_path_burst_cap(ps);
        if (cap < b)
            b = cap;
    }
    ps->last = i;
    ps->burst_left = b > 1 ? (uint8_t)(b - 1) : 0;
    return i;
}

/* PATH-3: the quantum a slot pays per packet is the highest weight in the
 * set, taken once per sweep of the cursor from the set's per-weight counts
 * (a scan of the slots here would cost a cache miss or two per slot at
 * scale).  Shares stay proportional to the weights; what changes is the
 * spacing.  With a fixed quantum of 8 and every weight at 1 (on the
 * namespace fabric every path's RTT sample can be above min_rtt +
 * target_qdelay, PATH-6), a slot would send on one visit in 8, and which
 * visit would be set by its deficit's history: slots whose weights fell
 * together, such as all those of one marking spine, would send in the same
 * sweeps, so one flow's packets would go to one spine for tens of packets
 * at a time (fabric/README.md, scenario 2).  With the quantum at the highest weight, equal weights are a plain
 * round robin at any level. */
static void path_new_sweep(struct mre_pathset *ps)
{
    uint8_t q = MROCE_PATH_WMAX;

    while (q > 1 && ps->wcount[q - 1] == 0)
        q--;
    ps->quantum = q;
    ps->mean_weight = (uint8_t)(ps->wsum / ps->npaths);
}

/* Nothing pickable but `avoid`, if that: `avoid`, or a slot held (PATH-26)
 * or draining, before a slot of a plane held back, since a down plane
 * takes nothing but its probes (PATH-21), which come through its block's
 * gaps; a blocked slot only when there is no other.  Without planes
 * (planes_block 0) the first slot but `avoid`. */
static uint16_t path_pick_last(const struct mre_pathset *ps, uint16_t avoid)
{
    uint32_t n = ps->npaths, k;

    if (ps->planes_block) {
        if (avoid < n && !path_plane_blocked(ps, &ps->paths[avoid]))
            return avoid;
        for (k = 0; k < n; k++)
            if (k != avoid && !path_plane_blocked(ps, &ps->paths[k]))
                return (uint16_t)k;
    }
    for (k = 0; k < n; k++)
        if (k != avoid)
            return (uint16_t)k;
    return 0;
}

/* With every slot but at most one full (CC-21), the round robin would
 * sweep many times for nothing: take the slot with room (not `avoid` if
 * another has room) on a plane that is not held back, else, as pick_one
 * does, a slot of such a plane, else `avoid` or slot 0 (a plane held back
 * only if nothing else is, path_pick_last). */
static uint16_t path_pick_room(struct mre_pathset *ps, uint16_t avoid)
{
    uint32_t k, alt = MROCE_PATH_NONE;

    for (k = 0; k < ps->npaths; k++) {
        if (ps->paths[k].full || path_unpickable(ps, &ps->paths[k]))
            continue;
        if (k != avoid)
            return (uint16_t)k;
        alt = k;
    }
    if (alt != MROCE_PATH_NONE)
        return (uint16_t)alt;
    if (ps->planes_block) {
        for (k = 0; k < ps->npaths; k++)
            if (k != avoid && !path_unpickable(ps, &ps->paths[k]))
                return (uint16_t)k;
        return path_pick_last(ps, avoid);
    }
    return avoid < ps->npaths ? avoid : 0;
}

static uint16_t path_pick_one(struct mre_pathset *ps, uint16_t avoid)
{
    uint32_t n = ps->npaths, c = ps->cursor, guard, k;

    if (n <= 1)
        return 0; /* nothing else to choose, even if it is `avoid` */
    if (ps->nfull + 1u >= n)
        return path_pick_room(ps, avoid); /* at most one slot has room */
    if (c >= n)
        c = 0;
    /* Visits needed: at most WMAX sweeps for the slowest weight, plus the
     * skipped `avoid` slot.  The guard only trips if a weight is 0, which
     * this module never produces. */
    for (guard = (MROCE_PATH_WMAX + 1) * n; guard != 0; guard--) {
        struct mre_path *p = &ps->paths[c];
        uint32_t i = c, d;
        if (c == 0)
            path_new_sweep(ps);
        c = (c + 1 == n) ? 0 : c + 1;
        if (i == avoid || path_unpickable(ps, p) || p->full)
            continue; /* no credit either: it is simply not visited */
        d = (uint32_t)p->deficit + p->weight;
        if (MROCE_SEEDED_FAULT(PLANE_IGNORE_WEIGHT) && ps->nplanes > 1)
            d = ps->quantum; /* every plane's slots in turn, whatever
                                their weights */
        if (d >= ps->quantum) {
            p->deficit = (uint8_t)(d - ps->quantum);
            ps->cursor = (uint16_t)c;
            return (uint16_t)i;
        }
        p->deficit = (uint8_t)d;
    }
    ps->cursor = (uint16_t)c;
    for (k = 0; k < n; k++)
        if (k != avoid && !path_unpickable(ps, &ps->paths[k]))
            return (uint16_t)k;
    return path_pick_last(ps, avoid);
}

uint32_t mre_path_on_sent(struct mre_pathset *ps, uint16_t i, uint32_t bytes)
{
    struct mre_path *p;

    if (i >= ps->npaths)
        return 0;
    p = &ps->paths[i];
    p->tx_bytes += bytes;
    return p->next_seq++;
}

static void path_weight_down(struct mre_pathset *ps, struct mre_path *p)
{
    if (p->weight > 1)
        path_weight_set(ps, p, (uint8_t)(p->weight - 1));
}

static void path_weight_up(struct mre_pathset *ps, struct mre_path *p)
{
    if (p->weight < MROCE_PATH_WMAX)
        path_weight_set(ps, p, (uint8_t)(p->weight + 1));
}

/*
 * PATH-32: a slot whose sample pushes its weight below three quarters of
 * the set's mean (mean_weight, taken at the sweep), while that mean is at least half the
 * highest, hashes onto a link that queues more than its siblings'.  With
 * a few entropies per link ECMP puts unequal numbers of a ToR's slots on
 * its uplinks, and weights alone move only part of that load: a slot at
 * weight 1 still sends an eighth of a full one's share.  Such a slot sends
 * nothing more and, once nothing of it is in flight (so the move loses and
 * reorders no packet), takes a fresh entropy of its plane and starts
 * afresh, as a retired slot does but without counting as a retirement;
 * ECMP then puts it on a random link, most likely a less loaded one.  A
 * set whose mean is low (every path queues: the receiver's link, an
 * incast) keeps its entropies, and so does one that lost a packet within
 * its last MROCE_PATH_MOVE_QUIET acknowledgements per slot: a fresh entropy
 * may land on a failed link, and while one is failing the moves would
 * feed it (a black-holed spine takes its share of them).  A set of fewer
 * than MROCE_PATH_MOVE_MIN slots keeps its entropies too: one slot is a
 * large part of its spray and of its mean, so a move there is a new
 * connection more than a correction.  Figures: sim/LOG.md.
 */
static void path_moving_clear(struct mre_pathset *ps, struct mre_path *p)
{
    if (p->moving) {
        p->moving = 0;
        ps->nmoving--;
    }
}

/* A slot under a new entropy is a new path, whatever moved it there
 * (retirement, PATH-32's move, PATH-29's rehoming): fresh weight, RTT
 * and ECN state, and the fresh window (CC-22). */
static void path_start_afresh(struct mre_pathset *ps, uint16_t i)
{
    struct mre_path *p = &ps->paths[i];

    path_weight_set(ps, p, MROCE_PATH_WMAX); /* as path_reset_state does */
    path_reset_state(p);
    mre_path_set_cwnd(ps, i, ps->cwnd_fresh);
    path_srtt_noted(ps, i);
}

static void path_move(struct mre_pathset *ps, uint16_t i)
{
    struct mre_path *p = &ps->paths[i];
    int32_t e = path_fresh_entropy(ps, ps->npaths, p->plane);

    path_moving_clear(ps, p);
    if (e < 0)
        return;
    p->entropy = (uint16_t)e;
    path_start_afresh(ps, i);
    ps->moves++;
}

/* 1 if slot p's srtt is more than 5/4 of the mean srtt of the slots with
 * a sample: its own queue stands out.  When every slot shares one queue
 * (the receiver's link in an all-to-all) a move finds no better link.  A
 * scan of the set, made only for a slot that the weight test already
 * chose. */
static int path_slower_than_set(const struct mre_pathset *ps,
                                const struct mre_path *p)
{
    uint64_t sum = 0;
    uint32_t n = 0, k;

    for (k = 0; k < ps->npaths; k++)
        if (ps->paths[k].srtt) {
            sum += ps->paths[k].srtt;
            n++;
        }
    return n != 0 && (uint64_t)p->srtt * 4 * n > sum * 5;
}

static void path_move_if_stuck(struct mre_pathset *ps, uint16_t i)
{
    struct mre_path *p = &ps->paths[i];

    /* Below three quarters of the mean: a slot a little below it is as
     * likely on an ordinary link as on a busy one. */
    if (p->moving || (uint32_t)p->weight * 4 >= (uint32_t)ps->mean_weight * 3 ||
        ps->mean_weight < MROCE_PATH_WMAX / 2 || path_blocked(ps, p) ||
        ps->npaths < MROCE_PATH_MOVE_MIN ||
        ps->quiet_acks < MROCE_PATH_MOVE_QUIET * (uint32_t)ps->npaths)
        return;
    if (!path_slower_than_set(ps, p))
        return;
    if (p->inflight == 0) {
        path_move(ps, i);
    } else if (ps->nmoving < (ps->npaths + 7u) / 8u) {
        /* No new packets; it moves once they are out.  At most an eighth
         * of the slots drain at a time, so the spray keeps most of them
         * even when many samples run high at once (a failure's queues). */
        p->moving = 1;
        ps->nmoving++;
    }
}

/*
 * RTT: RFC 6298 with alpha = 1/8, beta = 1/4, in integer nanoseconds (the
 * first sample sets srtt = R, rttvar = R/2).  srtt stays >= 1 once set, so 0
 * keeps meaning "no sample".
 *
 * Weight: a sample above base_rtt + target_qdelay means this path's queue
 * is past the connection's target: weight - 1.  (The same bound as the
 * congestion window's: with twice the target a slow path would keep full
 * weight while its samples throttle the whole connection's window.)
 * Otherwise the ack is clean and earns weight + 1, unless the path's latest ECN echo was CE; that
 * gate is what lets a CE-marked path actually lose weight, since the ack
 * that carries the CE echo would otherwise give back the point at once.
 * Acks without a sample (rtt == 0, ambiguous) say nothing about delay and
 * leave the weight alone; an unknown base_rtt (0) cannot make a path hot.
 */
void mre_path_on_ack(struct mre_pathset *ps, uint16_t i, mroce_tstamp rtt,
                     mroce_tstamp base_rtt)
{
    struct mre_path *p;

    if (i >= ps->npaths)
        return;
    p = &ps->paths[i];
    p->acked_pkts++;
    if (ps->quiet_acks < UINT32_MAX)
        ps->quiet_acks++;
    p->consec_losses = 0;
    p->rto_losses = 0;
    if (rtt == 0)
        return;

    if (p->srtt == 0) {
        p->srtt = rtt;
        p->rttvar = rtt / 2;
        p->min_rtt = rtt;
    } else {
        mroce_tstamp delta = p->srtt > rtt ? p->srtt - rtt : rtt - p->srtt;
        p->rttvar = (3 * p->rttvar + delta) / 4;
        p->srtt = (7 * p->srtt + rtt) / 8;
        if (rtt < p->min_rtt)
            p->min_rtt = rtt;
    }
    path_srtt_noted(ps, i);

    if (base_rtt != 0 && rtt > base_rtt + ps->target_qdelay) {
        path_weight_down(ps, p);
        path_move_if_stuck(ps, i);
    } else if (!p->ce_last) {
        path_weight_up(ps, p);
    }
}

/*
 * ECN echo: the EWMA (g = 1/16, 16.16 fixed point) is kept for reporting;
 * the decay rounds up so a quiet path's estimate really reaches 0, and the
 * estimate never exceeds 1.0 (65536).  A CE echo costs one weight point
 * and blocks the clean-ack increase until a clean echo arrives.
 */
void mre_path_on_ecn_echo(struct mre_pathset *ps, uint16_t i, int ce)
{
    struct mre_path *p;
    uint32_t is_ce = ce != 0;

    if (i >= ps->npaths)
        return;
    p = &ps->paths[i];
    p->ecn_ewma = p->ecn_ewma - ((p->ecn_ewma + 15) >> 4) + (is_ce << 12);
    p->ce_last = (uint8_t)is_ce;
    p->ecn_marks += is_ce;
    if (is_ce)
        path_weight_down(ps, p);
    else
        path_ready_push(ps, i); /* reuse it (PATH-16) */
}

void mre_path_on_echo(struct mre_pathset *ps, uint16_t i, mroce_tstamp now)
{
    if (i < ps->npaths)
        ps->paths[i].last_echo = now ? now : 1; /* 0 means "never" */
}

/*
 * Recovery transmissions (PATH-15) carry the connection's only chance of an
 * ACK: a probe is sent because nothing came back for a probe timeout, and
 * after a timeout cwnd allows one packet per expiry.  The round robin would
 * put that packet on whatever slot comes next, and after a link failure
 * many slots are dead (a blackholed spine link kills a slot if either its
 * data or its ACKs hash onto it: 7 in 16 slots with 4 spines); each miss
 * costs a doubled timeout, and the misses add up to the silence that
 * fails the QP (retry_cnt of them and peer_timeout, liveness.c).  The
 * slot with the freshest echo is the one most likely to still work, both
 * ways.  A slot that lost a packet since its last ack (including a
 * recovery transmission that drew no ACK, charged by the next timeout) is
 * not eligible, so successive timeouts try successively older proven slots.
 */
uint16_t mre_path_pick_proven(struct mre_pathset *ps, uint16_t avoid)
{
    uint32_t k, best = MROCE_PATH_NONE;
    mroce_tstamp t = 0;

    for (k = 0; k < ps->npaths; k++) {
        const struct mre_path *p = &ps->paths[k];
        if (k != avoid && !path_blocked(ps, p) && p->consec_losses == 0 &&
            p->last_echo > t) {
            t = p->last_echo;
            best = k;
        }
    }
    if (best == MROCE_PATH_NONE)
        return mre_path_pick(ps, avoid);
    return (uint16_t)best;
}

int mre_path_on_loss(struct mre_pathset *ps, uint16_t i)
{
    struct mre_path *p;

    if (i >= ps->npaths)
        return 0;
    p = &ps->paths[i];
    p->lost_pkts++;
    ps->quiet_acks = 0; /* no moves for a while (PATH-32) */
    /* A lossy path gets less of the spray too (PATH-6): a degraded link
     * that loses a fraction of its packets rarely loses three in a row, so
     * retirement alone would keep feeding it. */
    path_weight_down(ps, p);
    if (p->consec_losses < 255)
        p->consec_losses++;
    if (p->consec_losses >= MROCE_PATH_RETIRE_LOSSES) {
        mre_path_retire(ps, i);
        return 1;
    }
    return 0;
}

/*
 * The new entropy must differ from every other slot's and from the slot's
 * own old one (re-drawing the same port would steer straight back onto the
 * dead link), so all npaths slots, this one included, count as "in use".
 * If the span has no value left (span == npaths) the slot keeps its entropy
 * and only its state is reset.  next_seq continues rather than restarting:
 * path_seq stays monotonic per slot, so packets sent under the old entropy
 * always compare as older than those sent under the new one.  list_head and
 * list_tail are left to the engine (see the top of this file).
 */
void mre_path_retire(struct mre_pathset *ps, uint16_t i)
{
    struct mre_path *p;
    int32_t e;

    if (i >= ps->npaths)
        return;
    p = &ps->paths[i];
    path_moving_clear(ps, p);
    e = path_fresh_entropy(ps, ps->npaths, p->plane);
    if (e >= 0)
        p->entropy = (uint16_t)e;
    path_start_afresh(ps, i);
    p->retirements++;
}

/* PATH-29, PATH-30: a move to another plane is a new path, as a
 * retirement is (fresh entropy, now of the new plane's residue, fresh
 * weight, RTT and window), without counting as one. */
int mre_path_rehome(struct mre_pathset *ps, uint16_t i, uint8_t plane)
{
    struct mre_path *p;
    int32_t e;

    if (i >= ps->npaths || plane >= ps->nplanes)
        return MROCE_EINVAL;
    p = &ps->paths[i];
    e = path_fresh_entropy(ps, ps->npaths, plane);
    if (e < 0)
        return MROCE_EINVAL;
    path_moving_clear(ps, p);
    p->entropy = (uint16_t)e;
    p->plane = plane;
    if (MROCE_SEEDED_FAULT(SLOT_MOVE_KEEPS_WEIGHT)) {
        uint8_t w = p->weight;
        path_start_afresh(ps, i);
        path_weight_set(ps, p, w); /* the old plane's evidence */
        return 0;
    }
    path_start_afresh(ps, i);
    return 0;
}

mroce_tstamp mre_pathset_min_rtt(const struct mre_pathset *ps)
{
    mroce_tstamp best = 0;
    uint32_t k;

    for (k = 0; k < ps->npaths; k++) {
        mroce_tstamp m = ps->paths[k].min_rtt;
        if (m != 0 && (best == 0 || m < best))
            best = m;
    }
    return best;
}

mroce_tstamp mre_pathset_max_srtt(struct mre_pathset *ps)
{
    mroce_tstamp worst = 0;
    uint16_t k, at = 0;

    if (!ps->max_stale)
        return ps->max_srtt;
    for (k = 0; k < ps->npaths; k++)
        if (ps->paths[k].srtt > worst) {
            worst = ps->paths[k].srtt;
            at = k;
        }
    ps->max_srtt = worst;
    ps->max_slot = at;
    ps->max_stale = 0;
    return worst;
}

/* The scans the cached fields replace, for direct writes to the slots.
 * A weight outside 1..WMAX, which this file never produces, is moved to the
 * nearest bound, so that the counts stay indexable by every slot's weight
 * (path_weight_set). */
void mre_pathset_resync(struct mre_pathset *ps)
{
    uint32_t k, sum = 0;

    for (k = 0; k < MROCE_PATH_WMAX; k++)
        ps->wcount[k] = 0;
    for (k = 0; k < ps->npaths; k++) {
        uint8_t w = ps->paths[k].weight;
        w = w < 1 ? 1 : w > MROCE_PATH_WMAX ? MROCE_PATH_WMAX : w;
        ps->paths[k].weight = w;
        ps->wcount[w - 1]++;
        sum += w;
    }
    ps->wsum = (uint16_t)sum;
    ps->max_stale = 1;
    (void)mre_pathset_max_srtt(ps);
}

/* Slots are never empty (a retired slot holds its new entropy at once), so
 * every slot reports active = 1; out-of-range slots report all zeros. */
void mre_path_get_stats(const struct mre_pathset *ps, uint16_t i,
                        struct mroce_path_stats *st)
{
    const struct mre_path *p;

    st->entropy = 0;
    st->active = 0;
    st->weight = 0;
    st->tx_pkts = st->tx_bytes = st->acked_pkts = 0;
    st->lost_pkts = st->ecn_marks = 0;
    st->srtt = st->min_rtt = 0;
    st->retirements = 0;
    st->cwnd = 0;
    st->inflight = 0;
    if (i >= ps->npaths)
        return;
    p = &ps->paths[i];
    st->entropy = p->entropy;
    st->active = 1;
    st->weight = p->weight;
    st->tx_pkts = p->next_seq; /* one per packet sent, from 0 (path.h) */
    st->tx_bytes = p->tx_bytes;
    st->acked_pkts = p->acked_pkts;
    st->lost_pkts = p->lost_pkts;
    st->ecn_marks = p->ecn_marks;
    st->srtt = p->srtt;
    st->min_rtt = p->min_rtt;
    st->retirements = p->retirements;
    st->cwnd = p->cwnd;
    st->inflight = p->inflight;
}

/*
 * Per-path windows (CC-20..23): this file keeps the bytes in flight per
 * slot and whether the slot is full; the algorithm (cc.c) decides the
 * windows.  `full` and the set's count `nfull` change only here, so the
 * picker reads one byte per slot and the requester one counter.
 */
static void path_full_update(struct mre_pathset *ps, struct mre_path *p)
{
    uint8_t f = p->inflight >= p->cwnd && !MROCE_SEEDED_FAULT(PATH_CWND_IGNORE);

    if (f == p->full)
        return;
    p->full = f;
    if (f)
        ps->nfull++;
    else
        ps->nfull--;
}

void mre_path_inflight_add(struct mre_pathset *ps, uint16_t i, uint32_t bytes)
{
    struct mre_path *p;

    if (i >= ps->npaths)
        return;
    p = &ps->paths[i];
    p->inflight = p->inflight + bytes < p->inflight ? UINT32_MAX
                                                    : p->inflight + bytes;
    path_full_update(ps, p);
}

void mre_path_inflight_sub(struct mre_pathset *ps, uint16_t i, uint32_t bytes)
{
    struct mre_path *p;

    if (i >= ps->npaths)
        return;
    p = &ps->paths[i];
    p->inflight = p->inflight > bytes ? p->inflight - bytes : 0;
    path_full_update(ps, p);
    if (p->moving && p->inflight == 0)
        path_move(ps, i); /* PATH-32: drained */
}

void mre_path_inflight_reset(struct mre_pathset *ps)
{
    uint32_t k;

    for (k = 0; k < ps->npaths; k++) {
        ps->paths[k].inflight = 0;
        path_full_update(ps, &ps->paths[k]);
    }
}

void mre_path_set_cwnd(struct mre_pathset *ps, uint16_t i, uint32_t cwnd)
{
    struct mre_path *p;

    if (i >= ps->npaths)
        return;
    p = &ps->paths[i];
    if (cwnd == 0)
        cwnd = 1; /* a window of 0 would never let the slot send */
    ps->cwnd_sum = ps->cwnd_sum - p->cwnd + cwnd;
    p->cwnd = cwnd;
    path_full_update(ps, p);
}
