/*
 * cc.c - the congestion control front end and the two built-in algorithms:
 * delay+ECN (the default, Swift-like delay target with a DCTCP-like ECN
 * estimator) and a fixed window for tests and baselines (CC-*).
 *
 * One window per connection, shared by all its paths, and under it one
 * window per path (CC-20..23, delay+ECN only).  The completer calls
 * ops->on_ack for every ACK, so that path is integer-only and takes the
 * divisions only on the rare branches (once per window of acked bytes, once
 * per RTT).  Fixed point is 16.16 throughout (65536 = 1.0).  Every change to
 * cwnd ends with a clamp to [min_cwnd, max_cwnd].
 *
 * On a long-haul path a slow start sizes its window once from the rate a
 * train of ACKs shows (CC-39, CC-40) instead of doubling for
 * log2(BDP / init_cwnd) round trips; the train's state is in struct
 * mre_cc (dr_*).
 *
 * Delay+ECN keeps its slow-restart threshold in scratch[0], the smallest
 * RTT sample of the current round in scratch[1], the rounds left in which
 * the path counts as ECN-marking in scratch[2] and the packets lost in the
 * current round in scratch[3] (the scratch words are the algorithm's
 * private state, see cc.h).
 */
#include "cc.h"
#include "path.h"
#include "../wire/seeded_fault.h"

#define CC_ONE 65536u          /* 1.0 in 16.16 */
#define CC_BETA 52429u         /* 0.8 in 16.16: delay decrease gain */
#define CC_MIN_MD 32768u       /* 1 - max_mdf = 0.5: deepest delay cut */
#define CC_G_SHIFT 2u          /* ECN gain g = 1/4 */
#define CC_AI_MTUS 3u          /* additive increase: 3 MTU per RTT ... */
#define CC_AI_MAX_SCALE 8u     /* ... times (srtt/base_rtt)^2, at most 8, */
#define CC_AI_ALPHA_MAX 16384u /* while alpha < 1/4 and the link starves */
#define CC_TGT_MUL 2u          /* target: base_rtt + 2 * target_qdelay */
#define CC_HIGH_MUL 8u         /* high target: base_rtt + 8 * target_qdelay */
#define CC_ECN_MEMORY 16u      /* rounds a CE mark keeps the delay rule off */
/* Bytes a data packet counts in flight beyond its payload (CC-2). */
#define CC_PKT_OVERHEAD 80u

/* last_decrease == CC_NEVER: no decrease yet, the first one is always
 * allowed (0 would be ambiguous with a decrease at time 0). */
#define CC_NEVER MROCE_TSTAMP_INF

/* Slow start: while cwnd < ssthresh, clean acks grow cwnd by the acked
 * bytes (doubling per RTT).  max_cwnd at the start of a connection,
 * max(init_cwnd, cwnd / 2) after a timeout, 0 once any decrease, CE echo
 * or loss has happened. */
#define CC_SSTHRESH(cc) ((cc)->scratch[0])
/* Smallest RTT sample of the current round, 0 = none yet (CC-9). */
#define CC_RMIN(cc) ((cc)->scratch[1])
/* Rounds left during which the path counts as ECN-marking: set to
 * CC_ECN_MEMORY by a round with CE, one less per round without (CC-9). */
#define CC_ECN_LEFT(cc) ((cc)->scratch[2])
/* Packets reported lost (on_loss) since the current round began (CC-12). */
#define CC_LOST(cc) ((cc)->scratch[3])

static uint32_t cc_clamp(const struct mre_cc *cc, uint64_t w)
{
    if (w < cc->min_cwnd)
        return cc->min_cwnd;
    if (w > cc->max_cwnd)
        return cc->max_cwnd;
    return (uint32_t)w;
}

/* The length of "one RTT" for rate limiting decreases and ECN rounds: the
 * engine's srtt, else the fresh sample, else base_rtt.  May be 0 before any
 * sample, in which case every event qualifies. */
static mroce_tstamp cc_interval(const struct mre_cc *cc, mroce_tstamp rtt)
{
    return cc->srtt ? cc->srtt : rtt ? rtt : cc->base_rtt;
}

static int cc_may_decrease(const struct mre_cc *cc, mroce_tstamp now,
                           mroce_tstamp interval)
{
    return cc->last_decrease == CC_NEVER || now - cc->last_decrease >= interval;
}

/* The additive-increase scale of CC-19 in 16.16 for one ACK:
 * (srtt / base_rtt)^2, between 1 and CC_AI_MAX_SCALE (8: an RTT of 2.8
 * base_rtt), if cwnd idled the
 * sender's link since the previous ACK (`starved`) and the ECN estimate is
 * below 1/4; else 1.  A window of w bytes over an RTT R sends at w / R, so
 * 3 MTU more per RTT raise the rate by 3 MTU / R^2 per unit of time: a flow
 * whose RTT holds queues (its paths or its ACKs' paths cross busier links
 * than its neighbours') gains rate more slowly, loses the same fraction at
 * every cut, and settles lower; in a ring all-reduce that flow paces the
 * whole collective (sim/LOG.md, Results).  The gates keep the faster growth to
 * where it adds rate: a link kept busy by other QPs (all-to-all) is not
 * idled by this window, and a path that marks a quarter of its packets
 * (incast) holds this flow's own queue, where faster growth only deepens
 * it. */
static uint64_t cc_ai_scale(const struct mre_cc *cc, uint32_t starved)
{
    uint64_t r;

    if (!starved || cc->alpha >= CC_AI_ALPHA_MAX || cc->base_rtt == 0 ||
        cc->srtt <= cc->base_rtt)
        return CC_ONE;
    if (cc->srtt >= 3 * cc->base_rtt) /* 3^2 > CC_AI_MAX_SCALE */
        return (uint64_t)CC_AI_MAX_SCALE * CC_ONE;
    r = ((uint64_t)cc->srtt << 16) / cc->base_rtt; /* < 3.0 in 16.16 */
    r = (r * r) >> 16;
    return r < (uint64_t)CC_AI_MAX_SCALE * CC_ONE
               ? r
               : (uint64_t)CC_AI_MAX_SCALE * CC_ONE;
}

/* CC-51: the additive-increase scale of a long-haul path (base_rtt >=
 * MROCE_CC_LONG_RTT): (base_rtt / LONG_RTT)^2, so that its rate grows per
 * unit of time as fast as a flow's whose RTT is MROCE_CC_LONG_RTT (3 MTU
 * per RTT raise a rate by 3 MTU / RTT^2 per second), and flows of
 * different RTTs that share a bottleneck converge towards the same rate
 * rather than to rates in proportion to 1 / RTT^2.  It stops at
 * CC_LONG_AI_MAX (an RTT of 16 LONG_RTT, 16 ms): beyond, a round adds a
 * fixed 768 MTU, still additive (a bound in proportion to the window
 * would make growth multiplicative, which keeps unequal rates unequal).
 * 1 below the threshold (every data-centre RTT). */
#define CC_LONG_AI_MAX 256u
static uint64_t cc_ai_scale_long(const struct mre_cc *cc)
{
    if (cc->base_rtt < MROCE_CC_LONG_RTT)
        return 1;
    uint64_t r = (cc->base_rtt << 8) / MROCE_CC_LONG_RTT; /* 24.8 */
    uint64_t s = (r * r) >> 16;
    return s < 1 ? 1 : s > CC_LONG_AI_MAX ? CC_LONG_AI_MAX : s;
}

/* The additive increase for n windows of acknowledged bytes: CC-8's
 * 3 MTU each, times the long-haul scale (CC-51). */
static uint64_t cc_ai_bytes(const struct mre_cc *cc, uint64_t n)
{
    return n * CC_AI_MTUS * (uint64_t)cc->mtu * cc_ai_scale_long(cc);
}

/* CC-51: whether the window counts as in use for growth.  An ACK finds it
 * full if no further packet fits; on a long-haul path it also counts as
 * in use for the rest of a round once one ACK of the round found it full.
 * There the ACKs of a window return spaced at the sender's line rate, so
 * the packets a grown window allows queue at the sender's NIC, not in
 * flight, and the next ACKs find room: growth by the ACK would stop after
 * the first ACK of each round, and a slow start would grow by a few
 * packets per RTT instead of doubling. */
static int cc_window_used(struct mre_cc *cc, uint64_t before, uint64_t w)
{
    int full = before + cc->mtu + CC_PKT_OVERHEAD > w;
    if (cc->base_rtt < MROCE_CC_LONG_RTT)
        return full;
    if (full)
        cc->round_used = 1;
    return cc->round_used;
}

/* CC-39: a train of ACKs ends where two ACKs are more than srtt /
 * CC_TRAIN_GAP_DIV apart (a long-haul slow start sends its window in one
 * burst per round, so its ACKs return as one train per RTT); its rate is
 * measured from its second ACK (the first is often a lone packet's: the
 * one behind a share request, a probe) once CC_TRAIN_MIN_PKTS packets
 * were acknowledged after that.  A train whose rate stays below
 * CC_TRAIN_BELOW_HINT of the hint shows a bottleneck other than the
 * receiver's share. */
#define CC_TRAIN_GAP_DIV 8u
#define CC_TRAIN_MIN_PKTS 6u
#define CC_TRAIN_BELOW_HINT 56u /* in 64ths: 7/8 */

/* CC-39: a train whose ACKs carry an RTT sample above the delay target
 * (base_rtt + 2 * target_qdelay, CC-9, CC-21) crossed a queue: other
 * flows share the bottleneck, and its rate shows this flow's part of a
 * queue that is already there, not what the path has left.  A slow start
 * then goes on doubling (and ends at the first mark, CC-9); only a train
 * over an idle path sizes the window. */

/* CC-39: the train's delivery rate D so far (the bytes its ACKs after
 * the second acknowledged, over the time from the second to the latest),
 * in Mbit/s and at most the hint; 0 while the train is too short. */
static uint64_t cc_train_rate(const struct mre_cc *cc)
{
    uint64_t d, span = cc->dr_last - cc->dr_second;

    if (cc->dr_second == 0 || cc->dr_pkts < CC_TRAIN_MIN_PKTS || span == 0)
        return 0;
    d = cc->dr_bytes * 8000u / span;
    return cc->hint_mbps && d > cc->hint_mbps ? cc->hint_mbps : d;
}

/* CC-39: 1 if a train of rate D was paced at a hint below the sender's
 * own rate and the path kept up with it: it proved no more than the hint,
 * which is the receiver's share, not the path's (flows towards other
 * receivers may share its bottleneck), so it sizes no window. */
static int cc_train_hint_paced(const struct mre_cc *cc, uint64_t d)
{
    uint64_t h = cc->hint_mbps;

    return h && cc->line_mbps &&
           h * 64u < (uint64_t)cc->line_mbps * CC_TRAIN_BELOW_HINT &&
           d * 64u >= h * CC_TRAIN_BELOW_HINT;
}

/* CC-39: the window the train's rate D keeps in flight, min(D, hint) *
 * srtt: what the path delivered of a window sent at line rate or at the
 * hint, the bottleneck's rate or this flow's share of it where other
 * flows queue there too.  cwnd jumps there at once rather than doubling
 * towards it for log2(BDP / cwnd) rounds (never above a slow restart's
 * threshold); the jump's packets are paced at D for one srtt (CC-40):
 * sent at the hint they would reach the bottleneck as one burst per RTT.
 * Returns 1 if cwnd was raised. */
static int cc_train_jump(struct mre_cc *cc, mroce_tstamp now)
{
    uint64_t d = cc_train_rate(cc), w = d * cc->srtt / 8000u;

    if (cc->dr_queued || cc_train_hint_paced(cc, d))
        return 0;
    if (w > CC_SSTHRESH(cc))
        w = CC_SSTHRESH(cc);
    if (d == 0 || w <= cc->cwnd)
        return 0;
    cc->cwnd = cc_clamp(cc, w);
    cc->jumped = 1;
    cc->jump_mbps = d > UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)d;
    cc->jump_until = now + cc->srtt;
    return 1;
}

/* CC-39: the end of a train that measured a rate.  Without a hint, or
 * below 7/8 of it, the train has shown the bottleneck (on the path, or
 * the sender's own link), so slow start ends: the window holds the rate
 * the path showed and grows additively (CC-51) from there, as after a CE
 * echo; doubling from it would overflow the bottleneck by a window.  At
 * the hint the receiver's share is what bounds the flow, and slow start
 * goes on under the hint's cap (CC-27). */
static void cc_train_end(struct mre_cc *cc)
{
    uint64_t d = cc_train_rate(cc);

    if (d && !cc->dr_queued &&
        (!cc->hint_mbps ||
         d * 64u < (uint64_t)cc->hint_mbps * CC_TRAIN_BELOW_HINT))
        CC_SSTHRESH(cc) = 0;
    cc->dr_first = 0;
}

/* CC-39: a new train of ACKs, its first at t (0: no train). */
static void cc_train_start(struct mre_cc *cc, mroce_tstamp t)
{
    cc->dr_first = t;
    cc->dr_second = 0;
    cc->dr_queued = 0;
    cc->dr_last = t;
    cc->dr_bytes = 0;
    cc->dr_pkts = 0;
}

/* CC-39: follows the trains of ACKs of a long-haul slow start; returns 1
 * if this ACK raised cwnd.  An ACK's time is its arrival less the
 * receiver's hold (ack_delay): a coalescing timer's ACK at a train's end
 * would otherwise stretch the train. */
static int cc_long_start(struct mre_cc *cc, const struct mre_cc_ack *ev)
{
    mroce_tstamp t = ev->held < ev->now ? ev->now - ev->held : ev->now;

    if (cc->base_rtt < MROCE_CC_LONG_RTT || cc->cwnd >= CC_SSTHRESH(cc) ||
        ev->acked_bytes == 0 || cc->srtt == 0) {
        cc->dr_first = 0;
        return 0;
    }
    if (cc->dr_first != 0 && t > cc->dr_last &&
        t - cc->dr_last > cc->srtt / CC_TRAIN_GAP_DIV) {
        cc_train_end(cc);
        if (cc->cwnd >= CC_SSTHRESH(cc))
            return 0; /* slow start ended */
    }
    if (cc->dr_first == 0) {
        cc_train_start(cc, t);
        return 0;
    }
    if (ev->rtt && ev->rtt > cc->base_rtt + CC_TGT_MUL * cc->target_qdelay)
        cc->dr_queued = 1; /* not an idle path: no jump (see above) */
    if (t > cc->dr_last)
        cc->dr_last = t;
    if (cc->dr_second == 0) {
        cc->dr_second = cc->dr_last;
        return 0;
    }
    cc->dr_bytes += ev->acked_bytes;
    cc->dr_pkts += ev->acked_pkts;
    return cc_train_jump(cc, ev->now);
}

/* Bookkeeping shared by every multiplicative decrease: restart the once-
 * per-RTT clock, drop partial additive-increase credit (it was earned at
 * the old window) and end any slow restart. */
static void cc_decreased(struct mre_cc *cc, mroce_tstamp now)
{
    cc->last_decrease = now;
    cc->ai_acc = 0;
    CC_SSTHRESH(cc) = 0;
}

void mre_cc_init(struct mre_cc *cc, const struct mre_cc_ops *ops, uint32_t mtu,
                 uint32_t init_cwnd, uint32_t max_cwnd,
                 mroce_tstamp target_qdelay)
{
    unsigned k;

    if (ops == NULL)
        ops = &mre_cc_delay_ecn;
    if (mtu == 0)
        mtu = 1; /* keeps min_cwnd > 0: a zero window would never send */
    cc->ops = ops;
    cc->mtu = mtu;
    cc->min_cwnd = mtu;
    cc->max_cwnd = max_cwnd < mtu ? mtu : max_cwnd;
    cc->init_cwnd = cc_clamp(cc, init_cwnd);
    cc->cwnd = cc->init_cwnd;
    cc->base_rtt = 0;
    cc->srtt = 0;
    cc->target_qdelay = target_qdelay;
    cc->last_decrease = CC_NEVER;
    cc->alpha = 0;
    cc->ai_acc = 0;
    cc->ce_acc = 0;
    cc->rx_acc = 0;
    cc->round_start = 0;
    cc->round_used = 0;
    cc->jumped = 0;
    cc->hint_mbps = 0;
    cc->jump_mbps = 0;
    cc->jump_until = 0;
    cc->line_mbps = 0;
    cc_train_start(cc, 0);
    for (k = 0; k < sizeof cc->scratch / sizeof cc->scratch[0]; k++)
        cc->scratch[k] = 0;
    if (ops->init)
        ops->init(cc);
}

const struct mre_cc_ops *mre_cc_ops_get(unsigned algo)
{
    switch (algo) {
    case MROCE_CC_DELAY_ECN:
        return &mre_cc_delay_ecn;
    case MROCE_CC_NONE:
        return &mre_cc_fixed;
    default:
        return NULL;
    }
}

/* ---- fixed window ---------------------------------------------------- */

/* cwnd = init_cwnd (already clamped by mre_cc_init) forever.  base_rtt is
 * still tracked because the engine reads it for path health. */
static void fixed_init(struct mre_cc *cc)
{
    cc->cwnd = cc->init_cwnd;
}

static void fixed_on_ack(struct mre_cc *cc, const struct mre_cc_ack *ev)
{
    if (ev->rtt != 0 && (cc->base_rtt == 0 || ev->rtt < cc->base_rtt))
        cc->base_rtt = ev->rtt;
}

static void fixed_on_loss(struct mre_cc *cc, uint32_t lost_bytes,
                          mroce_tstamp now)
{
    (void)cc;
    (void)lost_bytes;
    (void)now;
}

static void fixed_on_timeout(struct mre_cc *cc, mroce_tstamp now)
{
    (void)cc;
    (void)now;
}

const struct mre_cc_ops mre_cc_fixed = {
    .name = "fixed",
    .init = fixed_init,
    .on_ack = fixed_on_ack,
    .on_loss = fixed_on_loss,
    .on_timeout = fixed_on_timeout,
    .undo = NULL,        /* the engine restores the generic fields */
    .path_update = NULL, /* no per-path windows (CC-20) */
};

/* ---- delay + ECN ----------------------------------------------------- */

/*
 * Why the algorithm is shaped this way (as mroce-sim shows on a 128-host
 * leaf-spine, sim/LOG.md, Results):
 *  - An RTT sample holds the queues of both directions.  Under all-to-all
 *    every host's downlink is a bottleneck, and a sender's ACKs queue
 *    behind the data other hosts send to it: cutting on delay alone
 *    starves flows towards idle receivers.  CE marks are
 *    set on the data packets only, so ECN says whether the forward path is
 *    congested; alpha and the delay then say by how much.  Without
 *    marks only a much larger delay (the high target) is taken as
 *    congestion, and only on a path that has not marked for
 *    CC_ECN_MEMORY rounds: there the delay stands in for ECN.  Where the
 *    fabric marks, ECN sees the forward queue itself, while the delay also
 *    holds the reverse path and the hosts; and on a slow or busy fabric
 *    (the namespace fabric: slow links, host scheduling delays of up to a
 *    millisecond) the marking threshold is milliseconds of queue, so the
 *    high target would cut nearly every unmarked round.
 *  - Loss is counted like a mark (CC-12): random loss costs little,
 *    sustained overflow raises alpha.
 *  - The delay judged is the smallest sample of a round (the standing
 *    queue), not single samples that sprayed packets take through
 *    different transient queues.
 *  - A window that is not in use is not grown (the sender was limited by
 *    its NIC or its data), so it cannot be dumped on the fabric later.
 *  - One decrease per round, whichever signal asks for it.
 */
static void de_init(struct mre_cc *cc)
{
    /* Slow start from init_cwnd: clean ACKs double cwnd per RTT until the
     * first CE echo, loss or decrease (delay above the target). */
    CC_SSTHRESH(cc) = cc->max_cwnd;
    /* DCTCP's conservative start: the first marked round halves cwnd,
     * later rounds cut in proportion to the marked fraction. */
    cc->alpha = CC_ONE;
}

/*
 * End of a round (one interval after round_start; CC-9, CC-11, CC-12):
 *  - Marked fraction: F = (ce + lost) / (rx + lost), a packet reported lost
 *    counting as a marked one; if the round counted any packet,
 *    alpha = (1 - g) * alpha + g * F, and a round with CE or a loss asks
 *    for cwnd *= 1 - alpha/2 (DCTCP).  So a random loss costs what one mark
 *    costs, while a queue that overflows (many losses) drives alpha up.
 *  - Delay, on R, the round's smallest RTT sample: in a round with CE
 *    against T = base_rtt + 2 * target_qdelay (the delay deepens the ECN
 *    cut); in a round without CE against T = base_rtt + 8 * target_qdelay,
 *    and only if no round of the last CC_ECN_MEMORY had CE (a path that
 *    marks is judged by its marks, see de_init's comment).  R >= T asks
 *    for cwnd *= max(1 - beta * (R - T) / R, 0.5).
 *  - The deeper of the cuts is applied, if a decrease is allowed (at most
 *    once per interval, shared with the timeout response).
 */
static void de_round(struct mre_cc *cc, mroce_tstamp now, mroce_tstamp interval)
{
    uint64_t rx = cc->rx_acc, ce = cc->ce_acc, lost = CC_LOST(cc);
    uint64_t f = CC_ONE;
    mroce_tstamp rmin = CC_RMIN(cc);

    if (ce > rx)
        ce = rx; /* defensive: counts from a confused peer */
    if (ce != 0)
        CC_ECN_LEFT(cc) = CC_ECN_MEMORY;
    else if (CC_ECN_LEFT(cc) != 0)
        CC_ECN_LEFT(cc)--;
    rx += lost;
    if (rx != 0) {
        uint64_t fr = ((ce + lost) << 16) / rx;
        cc->alpha = (uint32_t)((((uint64_t)cc->alpha << CC_G_SHIFT) -
                                cc->alpha + fr) >>
                               CC_G_SHIFT);
        if (ce + lost != 0)
            f = CC_ONE - (cc->alpha >> 1);
    }
    if (rmin != 0 && cc->base_rtt != 0 && (ce != 0 || CC_ECN_LEFT(cc) == 0)) {
        mroce_tstamp t = cc->base_rtt +
                         cc->target_qdelay * (ce ? CC_TGT_MUL : CC_HIGH_MUL);
        if (rmin >= t) {
            uint64_t fd = CC_ONE - (CC_BETA * (rmin - t)) / rmin;
            if (fd < CC_MIN_MD)
                fd = CC_MIN_MD;
            if (fd < f)
                f = fd;
        }
    }
    if (f < CC_ONE && cc_may_decrease(cc, now, interval)) {
        cc->cwnd = cc_clamp(cc, ((uint64_t)cc->cwnd * f) >> 16);
        cc_decreased(cc, now);
    }
    cc->round_start = now;
    cc->round_used = 0;
    cc->ce_acc = 0;
    cc->rx_acc = 0;
    CC_RMIN(cc) = 0;
    CC_LOST(cc) = 0;
}

/*
 * Per ACK:
 *  1. base_rtt = lowest sample; the round's smallest sample.
 *  2. ECN counts (a CE echo ends slow start or slow restart at once,
 *     without waiting for the round's cut); close the round if it is due
 *     (round_start 0 means no round yet: the first ack opens one rather
 *     than closing a round that started at time 0).
 *  3. Growth, only if the window was in use: the bytes in flight before
 *     this ACK (ev->inflight plus what it acknowledged, headers included)
 *     left no room for another full packet.  In slow start by the acked
 *     bytes, else CC_AI_MTUS MTUs per cwnd of acked bytes (each ACK's
 *     bytes scaled by cc_ai_scale, CC-19), counted in ai_acc so the
 *     division runs once per window.  The delay does not
 *     stop growth (its sample may hold the reverse path's queue); the
 *     round's decrease is what answers a standing queue.
 */
static void de_on_ack(struct mre_cc *cc, const struct mre_cc_ack *ev)
{
    mroce_tstamp rtt = ev->rtt, interval;
    uint64_t w, before, ss;

    if (rtt != 0 && (cc->base_rtt == 0 || rtt < cc->base_rtt))
        cc->base_rtt = rtt;
    if (rtt != 0 && (CC_RMIN(cc) == 0 || rtt < CC_RMIN(cc)))
        CC_RMIN(cc) = rtt;
    interval = cc_interval(cc, rtt);

    cc->ce_acc += ev->ce_pkts;
    cc->rx_acc += ev->rx_pkts;
    if (ev->ce_pkts != 0)
        CC_SSTHRESH(cc) = 0; /* a CE echo ends slow start at once */
    if (cc->round_start == 0)
        cc->round_start = ev->now; /* first ack opens the first round */
    if (ev->now - cc->round_start >= interval)
        de_round(cc, ev->now, interval);
    if (cc_long_start(cc, ev))
        return; /* CC-39: cwnd jumped to the measured rate's window */

    w = cc->cwnd;
    before = (uint64_t)ev->inflight + ev->acked_bytes +
             (uint64_t)CC_PKT_OVERHEAD * ev->acked_pkts;
    if (!cc_window_used(cc, before, w))
        return; /* not limited by the window: keep it */
    ss = CC_SSTHRESH(cc);
    if (w < ss) {
        w += ev->acked_bytes;
        if (w >= ss) { /* reached the threshold: additive from here */
            w = ss;
            CC_SSTHRESH(cc) = 0;
        }
    } else {
        /* 64-bit so a huge (or scaled, CC-19) ack cannot wrap; after
         * paying whole windows the remainder is < w, which fits ai_acc
         * again. */
        uint64_t acc = (uint64_t)cc->ai_acc + (((uint64_t)ev->acked_bytes *
                                                cc_ai_scale(cc, ev->starved)) >>
                                               16);
        if (acc >= w) {
            uint64_t n = acc / w;
            acc -= n * w;
            w += cc_ai_bytes(cc, n); /* CC-51 */
        }
        cc->ai_acc = (uint32_t)acc;
    }
    cc->cwnd = cc_clamp(cc, w);
}

/*
 * Loss (CC-12): counted into the round as marked packets (one per MTU of
 * lost payload, at least one), and it ends a slow start or slow restart
 * at once, as a CE echo does.  The cut waits for the round's end, where
 * it is sized by alpha like an ECN cut: MetaRoCE learns of congestion from
 * ECN and delay, and a packet lost without either (corruption, a flaky
 * link) says little about the queues.  A fabric that drops instead of
 * marking loses many packets per overflowing round, which raises alpha
 * within a few rounds.
 */
static void de_on_loss(struct mre_cc *cc, uint32_t lost_bytes, mroce_tstamp now)
{
    uint64_t n = ((uint64_t)lost_bytes + cc->mtu - 1) / cc->mtu;

    (void)now;
    if (lost_bytes == 0)
        return;
    if (CC_LOST(cc) + n < UINT32_MAX)
        CC_LOST(cc) += n;
    CC_SSTHRESH(cc) = 0;
}

/*
 * Timeout: nothing is getting through, so fall to one MTU.  Recovery is a
 * slow restart: clean acks double cwnd per RTT back up to the larger of
 * init_cwnd and half the window the timeout found, then additive increase
 * resumes.  (Up to init_cwnd only, a large window would take tens of RTTs
 * to come back after each timeout, and under loss on a busy host timeouts
 * are frequent.)  Any congestion signal on the way
 * ends the slow restart (CE echo, loss, decrease), so it only ramps while
 * the path is quiet.
 */
static void de_on_timeout(struct mre_cc *cc, mroce_tstamp now)
{
    uint32_t ss = cc->cwnd / 2 > cc->init_cwnd ? cc->cwnd / 2 : cc->init_cwnd;

    cc->cwnd = cc->min_cwnd;
    cc->last_decrease = now;
    cc->ai_acc = 0;
    CC_SSTHRESH(cc) = ss > cc->min_cwnd ? ss : 0;
}

/*
 * Per-path windows (CC-21, CC-22): a congested path (its echo came back
 * CE or its RTT sample is above base_rtt + 2 * target_qdelay) halves its
 * window; a clean acknowledgement grows it additively, one full packet
 * per window of bytes acknowledged on the path (as TCP's congestion
 * avoidance).  The connection's window answers the same marks once per
 * round with the smaller DCTCP cut (CC-11), so a mark trims the path that
 * saw it more than the connection, and the picker sends the next packets
 * on paths that still have room (CC-20).
 */
static uint32_t de_path_update(const struct mre_cc *cc, uint32_t pcwnd,
                               int congested, uint32_t acked)
{
    uint64_t pkt = (uint64_t)cc->mtu + CC_PKT_OVERHEAD, w = pcwnd;

    if (congested)
        return pcwnd / 2;
    if (w == 0)
        w = pkt;
    /* CC-51: on a long-haul path the path grows as the connection does:
     * in slow start by the bytes acknowledged on it (doubling per round),
     * else by the connection's RTT-scaled step (cc_ai_scale_long) of
     * packets per window; in a data centre by a packet per window */
    if ((cc->base_rtt >= MROCE_CC_LONG_RTT && cc->cwnd < CC_SSTHRESH(cc)) ||
        MROCE_SEEDED_FAULT(PATH_GROW_FAST))
        w += acked;
    else
        w += (pkt * acked * cc_ai_scale_long(cc) + w - 1) / w;
    return w > UINT32_MAX ? UINT32_MAX : (uint32_t)w;
}

const struct mre_cc_ops mre_cc_delay_ecn = {
    .name = "delay_ecn",
    .init = de_init,
    .on_ack = de_on_ack,
    .on_loss = de_on_loss,
    .on_timeout = de_on_timeout,
    .undo = NULL, /* the engine restores the generic fields (CC-13) */
    .path_update = de_path_update,
};

/* ---- per-path windows (CC-20..23) ------------------------------------ */

/* The smallest per-path window: one burst of full packets (PATH-3), so a
 * batching datapath keeps its bursts whole. */
static uint32_t cc_path_floor(const struct mre_cc *cc,
                              const struct mre_pathset *ps)
{
    if (MROCE_SEEDED_FAULT(PATH_NO_FLOOR))
        return cc->mtu + CC_PKT_OVERHEAD; /* one packet, whatever the burst */
    return (cc->mtu + CC_PKT_OVERHEAD) * (ps->burst > 1 ? ps->burst : 1u);
}

/* A new slot's window: the connection's shared evenly (CC-22). */
static uint32_t cc_path_fresh(const struct mre_cc *cc,
                              const struct mre_pathset *ps)
{
    uint32_t w = ps->npaths ? cc->cwnd / ps->npaths : cc->cwnd;
    if (MROCE_SEEDED_FAULT(PATH_FRESH_FULL))
        w = cc->cwnd; /* the connection's whole window */
    return w < cc_path_floor(cc, ps) ? cc_path_floor(cc, ps) : w;
}

void mre_cc_path_init(const struct mre_cc *cc, struct mre_pathset *ps, int on)
{
    uint16_t k;
    uint32_t w = on && cc->ops->path_update ? cc_path_fresh(cc, ps)
                                            : MROCE_PATH_CWND_UNLIMITED;

    ps->cwnd_fresh = w;
    for (k = 0; k < ps->npaths; k++)
        mre_path_set_cwnd(ps, k, w);
}

void mre_cc_path_on_echo(const struct mre_cc *cc, struct mre_pathset *ps,
                         uint16_t i, int ce, mroce_tstamp rtt)
{
    if (ce || (rtt && cc->base_rtt &&
               rtt > cc->base_rtt + CC_TGT_MUL * cc->target_qdelay))
        mre_cc_path_feedback(cc, ps, i, 1, 0);
}

void mre_cc_path_raise(struct mre_cc *cc, struct mre_pathset *ps)
{
    uint16_t k;
    uint32_t w;

    cc->jumped = 0;
    if (!cc->ops->path_update || ps->cwnd_fresh == MROCE_PATH_CWND_UNLIMITED)
        return;
    w = cc_path_fresh(cc, ps);
    ps->cwnd_fresh = w;
    for (k = 0; k < ps->npaths; k++)
        if (ps->paths[k].cwnd < w)
            mre_path_set_cwnd(ps, k, w);
}

void mre_cc_path_feedback(const struct mre_cc *cc, struct mre_pathset *ps,
                          uint16_t i, int congested, uint32_t acked)
{
    uint32_t old, w, lo = cc_path_floor(cc, ps), hi = cc->cwnd;

    if (!cc->ops->path_update || i >= ps->npaths ||
        ps->cwnd_fresh == MROCE_PATH_CWND_UNLIMITED)
        return; /* no per-path windows on this connection */
    ps->cwnd_fresh = cc_path_fresh(cc, ps);
    old = ps->paths[i].cwnd;
    w = cc->ops->path_update(cc, old, congested, acked);
    if (w > old && ps->cwnd_sum >= (uint64_t)MROCE_CC_PATH_SUM_MUL * cc->cwnd)
        w = old; /* the paths together may not outgrow the connection */
    if (hi < lo)
        hi = lo;
    if (w > hi)
        w = hi;
    if (w < lo)
        w = lo;
    mre_path_set_cwnd(ps, i, w);
}
