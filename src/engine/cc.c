/*
 * cc.c - the congestion control front end and the two built-in algorithms:
 * delay+ECN (the default, Swift-like delay target with a DCTCP-like ECN
 * estimator) and a fixed window for tests and baselines (CC-*).
 *
 * One window per connection, shared by all its paths.  The completer calls
 * ops->on_ack for every ACK, so that path is integer-only and takes the
 * divisions only on the rare branches (once per window of acked bytes, once
 * per RTT).  Fixed point is 16.16 throughout (65536 = 1.0).  Every change to
 * cwnd ends with a clamp to [min_cwnd, max_cwnd].
 *
 * Delay+ECN keeps its slow-restart threshold in scratch[0] (the scratch words
 * are the algorithm's private state, see cc.h).
 */
#include "cc.h"

#define CC_ONE 65536u        /* 1.0 in 16.16 */
#define CC_BETA 52429u       /* 0.8 in 16.16: delay decrease gain */
#define CC_MIN_MD 32768u     /* 1 - max_mdf = 0.5: deepest delay cut */
#define CC_LOSS_NUM 7u       /* loss: cwnd *= 7/10 */
#define CC_LOSS_DEN 10u

/* last_decrease == CC_NEVER: no decrease yet, the first one is always
 * allowed (0 would be ambiguous with a decrease at time 0). */
#define CC_NEVER MROCE_TSTAMP_INF

/* Slow start: while cwnd < ssthresh, clean acks grow cwnd by the acked
 * bytes (doubling per RTT).  max_cwnd at the start of a connection,
 * init_cwnd after a timeout, 0 once any decrease has happened. */
#define CC_SSTHRESH(cc) ((cc)->scratch[0])

static uint32_t cc_clamp(const struct mroce_cc *cc, uint64_t w)
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
static mroce_tstamp cc_interval(const struct mroce_cc *cc, mroce_tstamp rtt)
{
    return cc->srtt ? cc->srtt : rtt ? rtt : cc->base_rtt;
}

static int cc_may_decrease(const struct mroce_cc *cc, mroce_tstamp now,
                           mroce_tstamp interval)
{
    return cc->last_decrease == CC_NEVER ||
           now - cc->last_decrease >= interval;
}

/* Bookkeeping shared by every multiplicative decrease: restart the once-
 * per-RTT clock, drop partial additive-increase credit (it was earned at
 * the old window) and end any slow restart. */
static void cc_decreased(struct mroce_cc *cc, mroce_tstamp now)
{
    cc->last_decrease = now;
    cc->ai_acc = 0;
    CC_SSTHRESH(cc) = 0;
}

void mroce_cc_init(struct mroce_cc *cc, const struct mroce_cc_ops *ops,
                   uint32_t mtu, uint32_t init_cwnd, uint32_t max_cwnd,
                   mroce_tstamp target_qdelay)
{
    unsigned k;

    if (ops == NULL)
        ops = &mroce_cc_delay_ecn;
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
    for (k = 0; k < sizeof cc->scratch / sizeof cc->scratch[0]; k++)
        cc->scratch[k] = 0;
    if (ops->init)
        ops->init(cc);
}

const struct mroce_cc_ops *mroce_cc_ops_get(unsigned algo)
{
    switch (algo) {
    case MROCE_CC_DELAY_ECN:
        return &mroce_cc_delay_ecn;
    case MROCE_CC_NONE:
        return &mroce_cc_fixed;
    default:
        return NULL;
    }
}

/* ---- fixed window ---------------------------------------------------- */

/* cwnd = init_cwnd (already clamped by mroce_cc_init) forever.  base_rtt is
 * still tracked because the engine reads it for path health. */
static void fixed_init(struct mroce_cc *cc)
{
    cc->cwnd = cc->init_cwnd;
}

static void fixed_on_ack(struct mroce_cc *cc, const struct mroce_cc_ack *ev)
{
    if (ev->rtt != 0 && (cc->base_rtt == 0 || ev->rtt < cc->base_rtt))
        cc->base_rtt = ev->rtt;
}

static void fixed_on_loss(struct mroce_cc *cc, uint32_t lost_bytes,
                          mroce_tstamp now)
{
    (void)cc;
    (void)lost_bytes;
    (void)now;
}

static void fixed_on_timeout(struct mroce_cc *cc, mroce_tstamp now)
{
    (void)cc;
    (void)now;
}

const struct mroce_cc_ops mroce_cc_fixed = {
    "fixed", fixed_init, fixed_on_ack, fixed_on_loss, fixed_on_timeout, NULL,
};

/* ---- delay + ECN ----------------------------------------------------- */

static void de_init(struct mroce_cc *cc)
{
    /* Slow start from init_cwnd: clean ACKs double cwnd per RTT until the
     * first congestion signal (delay above target, ECN, loss) ends it; a
     * delay target catches the queue long before it overflows. */
    CC_SSTHRESH(cc) = cc->max_cwnd;
}

/*
 * ECN round: CE and receive counts accumulate until one interval has passed
 * since round_start; then alpha = (15*alpha + F)/16 with F = ce/rx, and if
 * the round saw any CE, cwnd *= 1 - alpha/2 (DCTCP).  A round with no
 * received packets carries no information and leaves alpha alone.  The cut
 * is once per round by construction; it also restarts the decrease clock so
 * the delay rule does not cut again for the same congestion within an RTT.
 */
static void de_ecn_round(struct mroce_cc *cc, mroce_tstamp now)
{
    uint32_t rx = cc->rx_acc, ce = cc->ce_acc;

    if (rx != 0) {
        uint64_t f;
        if (ce > rx)
            ce = rx; /* defensive: counts from a confused peer */
        f = ((uint64_t)ce << 16) / rx;
        cc->alpha = (uint32_t)((15u * (uint64_t)cc->alpha + f) >> 4);
        if (ce != 0) {
            uint64_t w = cc->cwnd;
            cc->cwnd = cc_clamp(cc, w - ((w * cc->alpha) >> 17));
            cc_decreased(cc, now);
        }
    }
    cc->round_start = now;
    cc->ce_acc = 0;
    cc->rx_acc = 0;
}

/*
 * Per ACK:
 *  1. base_rtt = lowest sample; target = base_rtt + target_qdelay.
 *  2. ECN counts; close the round if it is due (round_start 0 means no
 *     round yet: the first ack opens one rather than closing a round that
 *     started at time 0).
 *  3. Delay, judged on the fresh sample or, for acks without one (all of
 *     their packets were retransmitted), on srtt:
 *     - below target (or nothing to judge by): grow.  In slow restart by
 *       the acked bytes, else additive increase of one MTU per cwnd of
 *       acked bytes, counted in ai_acc so the division runs once per window.
 *     - at or above target, and only on a fresh sample: multiplicative
 *       decrease at most once per interval by
 *       max(1 - 0.8*(rtt-target)/rtt, 0.5).
 */
static void de_on_ack(struct mroce_cc *cc, const struct mroce_cc_ack *ev)
{
    mroce_tstamp rtt = ev->rtt, delay, target, interval;
    uint64_t w = cc->cwnd;

    if (rtt != 0 && (cc->base_rtt == 0 || rtt < cc->base_rtt))
        cc->base_rtt = rtt;
    target = cc->base_rtt + cc->target_qdelay;
    interval = cc_interval(cc, rtt);

    cc->ce_acc += ev->ce_pkts;
    cc->rx_acc += ev->rx_pkts;
    if (cc->round_start == 0)
        cc->round_start = ev->now; /* first ack opens the first round */
    if (ev->now - cc->round_start >= interval) {
        de_ecn_round(cc, ev->now);
        w = cc->cwnd;
    }

    delay = rtt ? rtt : cc->srtt;
    if (delay == 0 || cc->base_rtt == 0 || delay < target) {
        uint64_t ss = CC_SSTHRESH(cc);
        if (w < ss) {
            w += ev->acked_bytes;
            if (w >= ss) { /* reached init_cwnd: back to additive increase */
                w = ss;
                CC_SSTHRESH(cc) = 0;
            }
        } else {
            /* 64-bit so a huge ack cannot wrap; after paying whole
             * windows the remainder is < w, which fits ai_acc again. */
            uint64_t acc = (uint64_t)cc->ai_acc + ev->acked_bytes;
            if (acc >= w) {
                uint64_t n = acc / w;
                acc -= n * w;
                w += n * cc->mtu;
            }
            cc->ai_acc = (uint32_t)acc;
        }
        cc->cwnd = cc_clamp(cc, w);
    } else if (rtt != 0 && cc_may_decrease(cc, ev->now, interval)) {
        uint64_t f = CC_ONE - (CC_BETA * (rtt - target)) / rtt;
        if (f < CC_MIN_MD)
            f = CC_MIN_MD;
        cc->cwnd = cc_clamp(cc, (w * f) >> 16);
        cc_decreased(cc, ev->now);
    }
}

/* Loss: cwnd *= 0.7, at most once per interval (losses found together in
 * one RTT are one congestion event). */
static void de_on_loss(struct mroce_cc *cc, uint32_t lost_bytes,
                       mroce_tstamp now)
{
    (void)lost_bytes;
    if (!cc_may_decrease(cc, now, cc_interval(cc, 0)))
        return;
    cc->cwnd = cc_clamp(cc, (uint64_t)cc->cwnd * CC_LOSS_NUM / CC_LOSS_DEN);
    cc_decreased(cc, now);
}

/*
 * Timeout: nothing is getting through, so fall to one MTU.  Recovery is a
 * slow restart: clean acks double cwnd per RTT back up to init_cwnd, then
 * additive increase resumes.  Any congestion signal on the way ends the
 * slow restart (cc_decreased), so it only ramps while the path is quiet.
 */
static void de_on_timeout(struct mroce_cc *cc, mroce_tstamp now)
{
    cc->cwnd = cc->min_cwnd;
    cc->last_decrease = now;
    cc->ai_acc = 0;
    CC_SSTHRESH(cc) = cc->init_cwnd > cc->min_cwnd ? cc->init_cwnd : 0;
}

const struct mroce_cc_ops mroce_cc_delay_ecn = {
    "delay_ecn", de_init, de_on_ack, de_on_loss, de_on_timeout,
    NULL, /* undo: the engine restores the generic fields (CC-13) */
};
