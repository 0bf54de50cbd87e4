/*
 * test_cc.c - unit tests for congestion control (src/engine/cc.c): the ops
 * lookup, init clamping, the fixed window, and the delay+ECN algorithm's
 * additive increase, delay decrease (at most once per RTT), ECN estimator and
 * cut, loss and timeout responses with slow restart, and a seeded random
 * event storm checking cwnd never leaves [min_cwnd, max_cwnd].
 */
#include <stdio.h>

#include "cc.h"
#include "testutil.h"

#define MTU 4096u
#define INIT (64u * 1024)
#define MAXW (1024u * MTU)
#define QDELAY 5000u /* ns */
#define BASE 10000u  /* ns: base RTT used by most tests */
#define T0 1000000u  /* ns: tests start here, not at 0 */

static struct mroce_cc_ack ack(uint32_t bytes, mroce_tstamp rtt,
                               mroce_tstamp now)
{
    struct mroce_cc_ack ev;
    ev.acked_bytes = bytes;
    ev.acked_pkts = bytes / MTU;
    ev.ce_pkts = 0;
    ev.rx_pkts = 0;
    ev.rtt = rtt;
    ev.inflight = 0;
    ev.now = now;
    return ev;
}

static void on_ack(struct mroce_cc *cc, uint32_t bytes, mroce_tstamp rtt,
                   mroce_tstamp now)
{
    struct mroce_cc_ack ev = ack(bytes, rtt, now);
    cc->ops->on_ack(cc, &ev);
}

static void setup(struct mroce_cc *cc)
{
    mroce_cc_init(cc, &mroce_cc_delay_ecn, MTU, INIT, MAXW, QDELAY);
}

static void test_ops_and_init(void)
{
    struct mroce_cc cc;

    CHECK(mroce_cc_ops_get(MROCE_CC_DELAY_ECN) == &mroce_cc_delay_ecn);
    CHECK(mroce_cc_ops_get(MROCE_CC_NONE) == &mroce_cc_fixed);
    CHECK(mroce_cc_ops_get(2) == NULL);
    CHECK(mroce_cc_ops_get(12345) == NULL);

    setup(&cc);
    CHECK(cc.ops == &mroce_cc_delay_ecn);
    CHECK(cc.cwnd == INIT && cc.init_cwnd == INIT);
    CHECK(cc.min_cwnd == MTU && cc.max_cwnd == MAXW && cc.mtu == MTU);
    CHECK(cc.base_rtt == 0 && cc.alpha == 0 && cc.ai_acc == 0);
    CHECK(cc.target_qdelay == QDELAY);

    mroce_cc_init(&cc, &mroce_cc_delay_ecn, MTU, 10 * MAXW, MAXW, QDELAY);
    CHECK(cc.cwnd == MAXW && cc.init_cwnd == MAXW);
    mroce_cc_init(&cc, &mroce_cc_delay_ecn, MTU, 100, MAXW, QDELAY);
    CHECK(cc.cwnd == MTU);
    mroce_cc_init(&cc, &mroce_cc_fixed, MTU, INIT, 1000, QDELAY);
    CHECK(cc.max_cwnd == MTU && cc.cwnd == MTU);
    mroce_cc_init(&cc, NULL, MTU, INIT, MAXW, QDELAY);
    CHECK(cc.ops == &mroce_cc_delay_ecn);
    CHECK(mroce_cc_delay_ecn.name != NULL && mroce_cc_fixed.name != NULL);
}

static void test_fixed(void)
{
    struct mroce_cc cc;
    mroce_tstamp now = T0;
    unsigned k, ok = 1;
    struct mroce_cc_ack ev;

    mroce_cc_init(&cc, &mroce_cc_fixed, MTU, INIT, MAXW, QDELAY);
    for (k = 0; k < 1000; k++) {
        now += 1000;
        ev = ack(MTU, (k & 1) ? BASE : 100 * BASE, now);
        ev.ce_pkts = 4;
        ev.rx_pkts = 4;
        cc.ops->on_ack(&cc, &ev);
        if (k % 7 == 0)
            cc.ops->on_loss(&cc, MTU, now);
        if (k % 101 == 0)
            cc.ops->on_timeout(&cc, now);
        ok &= cc.cwnd == INIT;
    }
    CHECK(ok);
    CHECK(cc.base_rtt == BASE); /* still tracked for the engine */
}

/* A new connection slow-starts: clean acks add the acked bytes (cwnd
 * doubles per window) until the first delay above target, after which
 * growth is additive. */
static void test_slow_start(void)
{
    struct mroce_cc cc;
    mroce_tstamp now = T0;
    unsigned k;

    setup(&cc);
    cc.srtt = BASE;
    for (k = 0; k < INIT / MTU; k++)
        on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == 2 * INIT); /* one window of acks doubled it */
    on_ack(&cc, MTU, 3 * BASE + QDELAY, now += 10 * BASE);
    uint32_t w = cc.cwnd;
    CHECK(w < 2 * INIT); /* the first queueing delay cut it */
    for (k = 0; k < (w + MTU - 1) / MTU - 1; k++)
        on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == w); /* and slow start is over: additive from here */
    on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == w + MTU);
}

/* Below target: +1 MTU per cwnd of acked bytes, nothing more. */
static void test_additive_increase(void)
{
    struct mroce_cc cc;
    mroce_tstamp now = T0;
    unsigned k;

    setup(&cc);
    cc.srtt = BASE;
    cc.scratch[0] = 0; /* past slow start, as after a first decrease */
    for (k = 0; k < INIT / MTU - 1; k++)
        on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == INIT); /* one MTU short of a window */
    CHECK(cc.base_rtt == BASE);
    on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == INIT + MTU);
    CHECK(cc.ai_acc == 0);

    /* Next window is one MTU larger: takes 17 acks. */
    for (k = 0; k < 16; k++)
        on_ack(&cc, MTU, BASE + QDELAY - 1, now += 1000);
    CHECK(cc.cwnd == INIT + MTU);
    on_ack(&cc, MTU, BASE + QDELAY - 1, now += 1000);
    CHECK(cc.cwnd == INIT + 2 * MTU);

    /* A huge ack (many windows at once) gives several MTUs, not one. */
    on_ack(&cc, 4 * (INIT + 2 * MTU), BASE, now += 1000);
    CHECK(cc.cwnd == INIT + 6 * MTU);

    /* An ack without a sample grows when srtt is below target... */
    {
        uint32_t w = cc.cwnd;
        for (k = 0; k < w / MTU; k++)
            on_ack(&cc, MTU, 0, now += 1000);
        CHECK(cc.cwnd == w + MTU);
    }
    /* ...and neither grows nor shrinks when srtt is above it. */
    {
        uint32_t w = cc.cwnd;
        cc.srtt = 3 * BASE;
        for (k = 0; k < 100; k++)
            on_ack(&cc, MTU, 0, now += 1000);
        CHECK(cc.cwnd == w);
    }

    /* Growth stops at max_cwnd. */
    mroce_cc_init(&cc, &mroce_cc_delay_ecn, MTU, INIT, INIT + MTU, QDELAY);
    for (k = 0; k < 1000; k++)
        on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == INIT + MTU);
}

/* Above target: cwnd *= max(1 - 0.8*(rtt-target)/rtt, 0.5), once per RTT. */
static void test_delay_decrease(void)
{
    struct mroce_cc cc;
    mroce_tstamp now = T0, rtt, target = BASE + QDELAY;
    uint32_t w;
    unsigned k;

    setup(&cc);
    on_ack(&cc, MTU, BASE, now); /* establishes base_rtt */
    cc.srtt = 2 * BASE;
    w = cc.cwnd;
    rtt = 2 * target; /* factor 1 - 0.8 * 1/2 = 0.6 */
    on_ack(&cc, MTU, rtt, now += 100);
    CHECK(cc.cwnd >= (uint32_t)(w * 0.6) - 1 &&
          cc.cwnd <= (uint32_t)(w * 0.6) + 1);
    w = cc.cwnd;
    /* Within srtt of the last decrease: no further cut (and no growth). */
    for (k = 0; k < 19; k++)
        on_ack(&cc, MTU, rtt, now += 1000);
    CHECK(cc.cwnd == w);
    /* One srtt later: cut again. */
    on_ack(&cc, MTU, rtt, now += 1000);
    CHECK(cc.cwnd < w);

    /* Very high RTT: the cut is bounded at one half. */
    setup(&cc);
    on_ack(&cc, MTU, BASE, now += 1000);
    w = cc.cwnd;
    on_ack(&cc, MTU, 100 * BASE, now += 1000);
    CHECK(cc.cwnd == w / 2);

    /* rtt exactly at target is a (zero) decrease, not an increase. */
    setup(&cc);
    on_ack(&cc, MTU, BASE, now += 1000);
    w = cc.cwnd;
    for (k = 0; k < 100; k++)
        on_ack(&cc, MTU, target, now += 1000);
    CHECK(cc.cwnd == w);

    /* With srtt 0 the interval is the sample itself. */
    setup(&cc);
    on_ack(&cc, MTU, BASE, now += 1000);
    w = cc.cwnd;
    rtt = 4 * BASE;
    on_ack(&cc, MTU, rtt, now += 1000);
    CHECK(cc.cwnd < w);
    w = cc.cwnd;
    on_ack(&cc, MTU, rtt, now += rtt - 1);
    CHECK(cc.cwnd == w);
    on_ack(&cc, MTU, rtt, now += 1);
    CHECK(cc.cwnd < w);

    /* Sustained high delay drives cwnd down to min_cwnd and no further. */
    setup(&cc);
    on_ack(&cc, MTU, BASE, now += 1000);
    for (k = 0; k < 100; k++)
        on_ack(&cc, MTU, 100 * BASE, now += 100 * BASE);
    CHECK(cc.cwnd == MTU);
}

/* Run `rounds` ECN rounds at marking fraction ce/rx with delay below target;
 * acks carry no bytes so additive increase stays out of the picture. */
static void ecn_rounds(struct mroce_cc *cc, mroce_tstamp *now, unsigned rounds,
                       uint32_t ce, uint32_t rx)
{
    unsigned k, j;
    for (k = 0; k < rounds; k++) {
        for (j = 0; j < 10; j++) {
            struct mroce_cc_ack ev = ack(0, BASE, *now += BASE / 10);
            ev.ce_pkts = j < ce ? 1 : 0;
            ev.rx_pkts = j < rx ? 1 : 0;
            cc->ops->on_ack(cc, &ev);
        }
    }
}

/* A delay+ECN window with srtt = BASE whose first ECN round opens at *now,
 * so each ecn_rounds() group of 10 acks BASE/10 apart closes one round. */
static void ecn_setup(struct mroce_cc *cc, mroce_tstamp *now)
{
    setup(cc);
    cc->srtt = BASE;
    on_ack(cc, 0, BASE, *now);
    CHECK(cc->round_start == *now);
}

static void test_ecn(void)
{
    struct mroce_cc lo, hi, none;
    mroce_tstamp t1 = T0, t2 = T0, t3 = T0;
    uint32_t w;

    ecn_setup(&lo, &t1);
    ecn_setup(&hi, &t2);
    ecn_setup(&none, &t3);
    ecn_rounds(&lo, &t1, 1, 0, 10); /* a first, quiet round */
    ecn_rounds(&hi, &t2, 1, 0, 10);
    ecn_rounds(&none, &t3, 1, 0, 10);
    CHECK(lo.alpha == 0 && lo.cwnd == INIT);

    /* One round: alpha = F/16, cwnd *= 1 - alpha/2. */
    ecn_rounds(&lo, &t1, 1, 1, 10); /* 10% marked */
    ecn_rounds(&hi, &t2, 1, 5, 10); /* 50% marked */
    ecn_rounds(&none, &t3, 1, 0, 10);
    CHECK(lo.alpha >= 6553 / 16 - 1 && lo.alpha <= 6554 / 16 + 1);
    CHECK(hi.alpha == 32768 / 16);
    CHECK(none.alpha == 0 && none.cwnd == INIT);
    CHECK(hi.cwnd == INIT - (uint32_t)(((uint64_t)INIT * hi.alpha) >> 17));
    CHECK(lo.cwnd < INIT && hi.cwnd < lo.cwnd);

    /* Many rounds: alpha converges to F and the per-round cut to F/2. */
    ecn_rounds(&lo, &t1, 200, 1, 10);
    ecn_rounds(&hi, &t2, 200, 5, 10);
    CHECK(lo.alpha > 6000 && lo.alpha < 7000);
    CHECK(hi.alpha > 32000 && hi.alpha <= 32768);
    CHECK(lo.cwnd >= MTU && hi.cwnd == MTU);
    /* Per-round cut proportional to marking, measured from one window. */
    lo.cwnd = hi.cwnd = INIT;
    ecn_rounds(&lo, &t1, 1, 1, 10);
    ecn_rounds(&hi, &t2, 1, 5, 10);
    {
        uint32_t cut_lo = INIT - lo.cwnd, cut_hi = INIT - hi.cwnd;
        CHECK(cut_lo > INIT / 20 * 9 / 10 && cut_lo < INIT / 20 * 11 / 10);
        CHECK(cut_hi > INIT / 4 * 9 / 10 && cut_hi < INIT / 4 * 11 / 10);
    }

    /* Marking stops: alpha decays, no more cuts. */
    w = hi.cwnd;
    ecn_rounds(&hi, &t2, 100, 0, 10);
    CHECK(hi.cwnd == w && hi.alpha < 1000);

    /* Only one cut per round however many CE-carrying acks arrive. */
    t2 = T0;
    ecn_setup(&hi, &t2);
    ecn_rounds(&hi, &t2, 1, 0, 10);
    {
        unsigned j;
        struct mroce_cc_ack ev;
        for (j = 0; j < 9; j++) {
            ev = ack(0, BASE, t2 += BASE / 10);
            ev.ce_pkts = ev.rx_pkts = 1;
            hi.ops->on_ack(&hi, &ev);
        }
        CHECK(hi.cwnd == INIT && hi.ce_acc == 9 && hi.rx_acc == 9);
        ev = ack(0, BASE, t2 += BASE / 10);
        ev.ce_pkts = ev.rx_pkts = 1;
        hi.ops->on_ack(&hi, &ev);
        CHECK(hi.alpha == 65536 / 16 && hi.cwnd < INIT);
        CHECK(hi.ce_acc == 0 && hi.rx_acc == 0 && hi.round_start == t2);
    }
}

static void test_loss_timeout(void)
{
    struct mroce_cc cc;
    mroce_tstamp now = T0;
    uint32_t w;
    unsigned k, rtts;

    setup(&cc);
    on_ack(&cc, MTU, BASE, now);
    cc.srtt = BASE;
    w = cc.cwnd;
    cc.ops->on_loss(&cc, MTU, now += 100);
    CHECK(cc.cwnd == (uint32_t)((uint64_t)w * 7 / 10));
    w = cc.cwnd;
    cc.ops->on_loss(&cc, MTU, now += 100); /* same RTT: ignored */
    cc.ops->on_loss(&cc, MTU, now += BASE - 200); /* 9900 after the cut */
    CHECK(cc.cwnd == w);
    cc.ops->on_loss(&cc, MTU, now += 100); /* a full srtt after it */
    CHECK(cc.cwnd == (uint32_t)((uint64_t)w * 7 / 10));
    /* A delay cut right after a loss cut waits an RTT too. */
    w = cc.cwnd;
    on_ack(&cc, MTU, 10 * BASE, now += 100);
    CHECK(cc.cwnd == w);

    /* Repeated loss never goes below min_cwnd. */
    for (k = 0; k < 50; k++)
        cc.ops->on_loss(&cc, MTU, now += 2 * BASE);
    CHECK(cc.cwnd == MTU);

    /* Timeout: one MTU, then slow restart doubles per RTT to init_cwnd,
     * then additive increase. */
    setup(&cc);
    cc.srtt = BASE;
    on_ack(&cc, MTU, BASE, now += 1000);
    cc.ops->on_timeout(&cc, now += 1000);
    CHECK(cc.cwnd == MTU);
    rtts = 0;
    while (cc.cwnd < INIT && rtts < 100) {
        w = cc.cwnd;
        for (k = 0; k < w / MTU; k++) /* one window of acks per RTT */
            on_ack(&cc, MTU, BASE, now += BASE / (w / MTU));
        CHECK(cc.cwnd == 2 * w || cc.cwnd == INIT);
        rtts++;
    }
    CHECK(cc.cwnd == INIT && rtts == 4); /* 1 -> 2 -> 4 -> 8 -> 16 MTU */
    for (k = 0; k < INIT / MTU; k++)
        on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == INIT + MTU);

    /* A congestion signal during slow restart ends it. */
    cc.ops->on_timeout(&cc, now += 1000);
    on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == 2 * MTU);
    cc.ops->on_loss(&cc, MTU, now += 2 * BASE);
    CHECK(cc.cwnd == 2 * MTU * 7 / 10);
    w = cc.cwnd;
    on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == w); /* slow restart would have added an MTU */
    on_ack(&cc, MTU, BASE, now += 1000);
    CHECK(cc.cwnd == w + MTU); /* AI: a window's worth acked */
}

/* A seeded storm of arbitrary events: cwnd always within [min, max]. */
static void test_bounds(void)
{
    struct mroce_cc cc;
    uint64_t seed = 42;
    mroce_tstamp now = T0;
    unsigned k, ok = 1, algo;

    for (algo = 0; algo < 2; algo++) {
        mroce_cc_init(&cc, mroce_cc_ops_get(algo), 1500, 30000, 150000,
                      QDELAY);
        for (k = 0; k < 200000; k++) {
            uint64_t r = testutil_rand64(&seed);
            struct mroce_cc_ack ev;
            now += r % 20000;
            switch ((r >> 16) % 16) {
            case 0:
                cc.ops->on_loss(&cc, (uint32_t)(r >> 32), now);
                break;
            case 1:
                if ((r >> 24) % 64 == 0)
                    cc.ops->on_timeout(&cc, now);
                break;
            case 2:
                cc.srtt = (r >> 24) % 100000;
                break;
            default:
                ev.acked_bytes = (r >> 20) % 8 == 0 ? UINT32_MAX
                                                    : (uint32_t)(r >> 40);
                ev.acked_pkts = 1;
                ev.rx_pkts = (uint32_t)((r >> 28) % 8);
                ev.ce_pkts = (uint32_t)((r >> 32) % 10);
                ev.rtt = (r >> 36) % 4 == 0 ? 0 : 5000 + (r >> 44) % 80000;
                ev.inflight = 0;
                ev.now = now;
                cc.ops->on_ack(&cc, &ev);
                break;
            }
            ok &= cc.cwnd >= cc.min_cwnd && cc.cwnd <= cc.max_cwnd;
            ok &= cc.alpha <= 65536;
        }
        CHECK(ok);
        if (algo == 1)
            CHECK(cc.cwnd == 30000);
    }
}

int main(void)
{
    test_ops_and_init();
    test_fixed();
    test_slow_start();
    test_additive_increase();
    test_delay_decrease();
    test_ecn();
    test_loss_timeout();
    test_bounds();
    return TESTUTIL_SUMMARY("test_cc");
}
