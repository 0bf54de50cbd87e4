/*
 * test_path.c - unit tests for the path set (src/engine/path.c): entropy
 * allocation, deficit round robin shares, `avoid`, RTT estimation, weights,
 * ECN EWMA, retirement and stats.
 *
 * Randomness comes from a seeded splitmix64 so every run is identical; a
 * constant "broken" generator checks that allocation still terminates with
 * distinct entropies.
 */
#include <stdio.h>
#include <string.h>

#include "case_table.h"
#include "path.h"
#include "testutil.h"

/* ---- deterministic randomness --------------------------------------- */

struct prng {
    uint64_t s;
};

/* The endpoint-style rand callback: user is a struct prng. */
static void prng_rand(uint8_t *buf, size_t len, void *user)
{
    struct prng *r = user;
    size_t k;
    for (k = 0; k < len; k++)
        buf[k] = (uint8_t)testutil_rand64(&r->s);
}

/* A broken generator: always the same bytes. */
static void const_rand(uint8_t *buf, size_t len, void *user)
{
    (void)user;
    memset(buf, 0x5a, len);
}

/* ---- helpers --------------------------------------------------------- */

static struct mre_path slots[256];

static int all_distinct_in_range(const struct mre_pathset *ps)
{
    unsigned i, j;
    for (i = 0; i < ps->npaths; i++) {
        uint32_t e = ps->paths[i].entropy;
        if (e < ps->entropy_base ||
            e >= (uint32_t)ps->entropy_base + ps->entropy_span)
            return 0;
        for (j = 0; j < i; j++)
            if (ps->paths[j].entropy == e)
                return 0;
    }
    return 1;
}

static void setup(struct mre_pathset *ps, struct prng *r, uint16_t n)
{
    int rc = mre_pathset_init(ps, slots, n, 49152, 16384, 5000, prng_rand, r);
    CHECK(rc == 0);
}

/* ---- tests ----------------------------------------------------------- */

static void test_init_args(void)
{
    struct mre_pathset ps;
    struct prng r = {1};

    CHECK(mre_pathset_init(&ps, slots, 0, 49152, 16384, 0, prng_rand, &r) ==
          MROCE_EINVAL);
    CHECK(mre_pathset_init(&ps, slots, 257, 1000, 16384, 0, prng_rand, &r) ==
          MROCE_EINVAL);
    CHECK(mre_pathset_init(&ps, slots, 8, 49152, 7, 0, prng_rand, &r) ==
          MROCE_EINVAL);
    CHECK(mre_pathset_init(&ps, slots, 8, 65530, 16, 0, prng_rand, &r) ==
          MROCE_EINVAL); /* range would pass 65535 */
    CHECK(mre_pathset_init(&ps, slots, 8, 49152, 16, 0, NULL, &r) ==
          MROCE_EINVAL);
    CHECK(mre_pathset_init(&ps, NULL, 8, 49152, 16, 0, prng_rand, &r) ==
          MROCE_EINVAL);
    CHECK(mre_pathset_init(&ps, slots, 8, 65520, 16, 0, prng_rand, &r) ==
          0); /* ends exactly at 65535 */
    CHECK(all_distinct_in_range(&ps));
}

static void test_entropies(void)
{
    struct mre_pathset ps;
    uint64_t seed;
    unsigned i, ok = 1, fresh = 1;

    for (seed = 1; seed <= 20; seed++) {
        struct prng r = {seed};
        setup(&ps, &r, 256);
        ok &= (unsigned)all_distinct_in_range(&ps);
        for (i = 0; i < 256; i++)
            fresh &= ps.paths[i].weight == MROCE_PATH_WMAX &&
                     ps.paths[i].list_head == MROCE_PATH_NONE &&
                     ps.paths[i].list_tail == MROCE_PATH_NONE &&
                     ps.paths[i].srtt == 0 && ps.paths[i].next_seq == 0;
    }
    CHECK(ok);
    CHECK(fresh);

    /* span == npaths: the set must be a permutation of the whole range. */
    {
        struct prng r = {99};
        CHECK(mre_pathset_init(&ps, slots, 256, 1000, 256, 0, prng_rand, &r) ==
              0);
        CHECK(all_distinct_in_range(&ps));
    }
    /* Odd span (modulo bias path) and a tiny set. */
    {
        struct prng r = {7};
        CHECK(mre_pathset_init(&ps, slots, 5, 3000, 7, 0, prng_rand, &r) == 0);
        CHECK(all_distinct_in_range(&ps));
    }
    /* A constant generator must still give distinct entropies and return. */
    CHECK(mre_pathset_init(&ps, slots, 64, 49152, 16384, 0, const_rand, NULL) ==
          0);
    CHECK(all_distinct_in_range(&ps));
}

static void test_round_robin(void)
{
    struct mre_pathset ps;
    struct prng r = {2};
    unsigned k, ok = 1;

    setup(&ps, &r, 16);
    for (k = 0; k < 64; k++)
        ok &= mre_path_pick(&ps, MROCE_PATH_NONE) == k % 16;
    CHECK(ok);
    CHECK(ps.cursor == 0);

    /* One slot: always slot 0, whatever `avoid` says. */
    setup(&ps, &r, 1);
    CHECK(mre_path_pick(&ps, MROCE_PATH_NONE) == 0);
    CHECK(mre_path_pick(&ps, 0) == 0);
}

/* Weights w get shares proportional to w: 10k picks, each within 5%. */
static void check_shares(uint16_t n, const uint8_t *w, unsigned picks)
{
    struct mre_pathset ps;
    struct prng r = {3};
    unsigned cnt[256] = {0}, k, wsum = 0, ok = 1;

    setup(&ps, &r, n);
    for (k = 0; k < n; k++) {
        ps.paths[k].weight = w[k];
        wsum += w[k];
    }
    mre_pathset_resync(&ps); /* weights written behind path.c's back */
    for (k = 0; k < picks; k++) {
        uint16_t i = mre_path_pick(&ps, MROCE_PATH_NONE);
        if (i >= n) {
            ok = 0;
            break;
        }
        cnt[i]++;
    }
    CHECK(ok);
    for (k = 0; k < n; k++) {
        double expect = (double)picks * w[k] / wsum;
        double err = (cnt[k] - expect) / expect;
        if (err > 0.05 || err < -0.05) {
            fprintf(stderr, "slot %u weight %u: %u picks, expected %.1f\n", k,
                    w[k], cnt[k], expect);
            ok = 0;
        }
    }
    CHECK(ok);
}

static void test_shares(void)
{
    static const uint8_t w3[3] = {8, 4, 1};
    uint8_t w64[64];
    unsigned k;

    check_shares(3, w3, 10000);
    for (k = 0; k < 64; k++)
        w64[k] = (uint8_t)(1 + k % 8);
    check_shares(64, w64, 10000);
    for (k = 0; k < 64; k++)
        w64[k] = 1;
    w64[5] = 8;
    check_shares(64, w64, 10000);
}

/* Low-weight slots are spread out: weight 4 among weight 8s sends every
 * other sweep, never twice in a row. */
static void test_smooth(void)
{
    struct mre_pathset ps;
    struct prng r = {4};
    unsigned k, ok = 1;
    uint16_t prev = MROCE_PATH_NONE;

    setup(&ps, &r, 2);
    ps.paths[1].weight = 1;
    mre_pathset_resync(&ps);
    for (k = 0; k < 100; k++) {
        uint16_t i = mre_path_pick(&ps, MROCE_PATH_NONE);
        if (i == 1 && prev == 1)
            ok = 0;
        prev = i;
    }
    CHECK(ok);
}

/* PATH-3's quantum is the highest weight: equal weights at any level are a
 * plain round robin, whatever the deficits' history.  With a fixed quantum
 * of 8, slots at weight 1 sent in the sweeps their deficits dictated, and
 * two groups of slots whose deficits were 4 apart sent group by group. */
static void test_quantum(void)
{
    struct mre_pathset ps;
    struct prng r = {5};
    unsigned k, ok = 1;

    setup(&ps, &r, 16);
    for (k = 0; k < 16; k++) {
        ps.paths[k].weight = 1;
        ps.paths[k].deficit = k < 8 ? 0 : 4;
    }
    mre_pathset_resync(&ps);
    (void)mre_path_pick(&ps, MROCE_PATH_NONE); /* pays a stale deficit */
    for (k = 0; k < 64; k++)
        ok &= mre_path_pick(&ps, MROCE_PATH_NONE) == (k + 1) % 16;
    CHECK(ok);
    CHECK(ps.quantum == 1);
    /* Weights 2 and 1: shares 2:1, the weight-1 slots every other sweep. */
    {
        unsigned c[2] = {0, 0};
        for (k = 0; k < 16; k++)
            ps.paths[k].weight = (uint8_t)(k % 2 ? 1 : 2);
        mre_pathset_resync(&ps);
        for (k = 0; k < 32; k++) /* the quantum changes at a sweep's start */
            (void)mre_path_pick(&ps, MROCE_PATH_NONE);
        for (k = 0; k < 3 * 16 * 10; k++)
            c[mre_path_pick(&ps, MROCE_PATH_NONE) % 2]++;
        CHECK(ps.quantum == 2);
        CHECK_MSG(c[0] + 16 >= 2 * c[1] && c[0] <= 2 * c[1] + 16,
                  "weight 2: %u picks, weight 1: %u", c[0], c[1]);
    }
    /* Back to one full-weight slot: the quantum follows at the next sweep. */
    ps.paths[3].weight = MROCE_PATH_WMAX;
    mre_pathset_resync(&ps);
    for (k = 0; k < 32; k++)
        (void)mre_path_pick(&ps, MROCE_PATH_NONE);
    CHECK(ps.quantum == MROCE_PATH_WMAX);
}

static void test_avoid(void)
{
    struct mre_pathset ps;
    struct prng r = {5};
    unsigned k, ok = 1, cnt[8] = {0};

    setup(&ps, &r, 8);
    for (k = 0; k < 1000; k++) {
        uint16_t avoid = (uint16_t)(k % 8);
        uint16_t i = mre_path_pick(&ps, avoid);
        ok &= i != avoid && i < 8;
        cnt[i]++;
    }
    CHECK(ok);
    for (k = 0; k < 8; k++)
        CHECK(cnt[k] > 0);

    /* Avoiding the slot the cursor points at gives the next one. */
    setup(&ps, &r, 4);
    CHECK(mre_path_pick(&ps, 0) == 1);
    CHECK(mre_path_pick(&ps, 2) == 3);
    /* Two slots, one avoided: always the other, even at low weight. */
    setup(&ps, &r, 2);
    ps.paths[1].weight = 1;
    mre_pathset_resync(&ps);
    ok = 1;
    for (k = 0; k < 20; k++)
        ok &= mre_path_pick(&ps, 0) == 1;
    CHECK(ok);
    /* Out-of-range avoid is ignored. */
    CHECK(mre_path_pick(&ps, 7) < 2);
}

/* PATH-3: the burst is bounded by the window (mre_path_set_window), so a
 * window spans at least MROCE_PATH_WINDOW_PICKS picks; the attribute stays
 * the upper bound. */
static unsigned burst_run(struct mre_pathset *ps)
{
    uint16_t first = mre_path_pick(ps, MROCE_PATH_NONE);
    unsigned n = 1;
    while (n < 300 && mre_path_pick(ps, MROCE_PATH_NONE) == first)
        n++;
    return n; /* one past the burst: the next burst has started */
}

static void test_window_burst(void)
{
    struct mre_pathset ps;
    struct prng r = {21};
    const uint32_t pkt = 4200;
    const uint32_t span = pkt * MROCE_PATH_WINDOW_PICKS; /* one packet each */

    setup(&ps, &r, 16);
    CHECK(mre_path_burst_cap(&ps) ==
          255); /* no window known: the attribute rules */
    ps.burst = 8;
    CHECK(burst_run(&ps) == 8);
    /* A window of fewer than 2 packets per pick: per-packet spraying. */
    mre_path_set_window(&ps, 64 * 1024, pkt);
    CHECK(mre_path_burst_cap(&ps) == 1);
    ps.burst_left = 0;
    CHECK(burst_run(&ps) == 1);
    CHECK(burst_run(&ps) == 1);
    /* Bursts grow with the window: 3 packets per pick for 3 * span. */
    mre_path_set_window(&ps, 3 * span, pkt);
    CHECK(mre_path_burst_cap(&ps) == 3);
    ps.burst_left = 0;
    CHECK(burst_run(&ps) == 3);
    mre_path_set_window(&ps, 3 * span - 1, pkt); /* rounds down */
    CHECK(mre_path_burst_cap(&ps) == 2);
    /* ... up to the attribute. */
    mre_path_set_window(&ps, 100 * span, pkt);
    CHECK(mre_path_burst_cap(&ps) == 100);
    ps.burst_left = 0;
    CHECK(burst_run(&ps) == 8);
    mre_path_set_window(&ps, UINT32_MAX, 1); /* capped, not wrapped */
    CHECK(mre_path_burst_cap(&ps) == 255);
    /* Window 0 or a nonsense packet size: cap 1, or left alone. */
    mre_path_set_window(&ps, 0, pkt);
    CHECK(mre_path_burst_cap(&ps) == 1);
    mre_path_set_window(&ps, 5 * span, 0);
    CHECK(mre_path_burst_cap(&ps) == 1);
    mre_path_set_window(&ps, UINT32_MAX, UINT32_MAX / 2);
    CHECK(mre_path_burst_cap(&ps) == 1);
    /* The cap applies from the next burst; the current one runs out. */
    mre_path_set_window(&ps, 100 * span, pkt);
    ps.burst_left = 0;
    (void)mre_path_pick(&ps, MROCE_PATH_NONE); /* starts a burst of 8 */
    mre_path_set_window(&ps, 0, pkt);
    CHECK(ps.burst_left == 7);
}

static void test_on_sent(void)
{
    struct mre_pathset ps;
    struct prng r = {6};

    setup(&ps, &r, 4);
    CHECK(mre_path_on_sent(&ps, 2, 1000) == 0);
    CHECK(mre_path_on_sent(&ps, 2, 500) == 1);
    CHECK(mre_path_on_sent(&ps, 3, 10) == 0);
    CHECK(mre_path_on_sent(&ps, 2, 1) == 2);
    CHECK(ps.paths[2].next_seq == 3 && ps.paths[2].tx_bytes == 1501);
    CHECK(ps.paths[3].next_seq == 1 && ps.paths[0].next_seq == 0);
}

static void test_retire(void)
{
    struct mre_pathset ps;
    struct prng r = {8};
    uint16_t old;
    unsigned k;

    setup(&ps, &r, 64);
    for (k = 0; k < 10; k++)
        (void)mre_path_on_sent(&ps, 7, 100);
    mre_path_on_ack(&ps, 7, 10000, 10000);
    ps.paths[7].list_head = 42; /* engine-owned: must survive retirement */
    ps.paths[7].list_tail = 43;
    old = ps.paths[7].entropy;

    /* An ack between losses resets the count. */
    CHECK(mre_path_on_loss(&ps, 7) == 0);
    CHECK(mre_path_on_loss(&ps, 7) == 0);
    mre_path_on_ack(&ps, 7, 0, 10000);
    CHECK(ps.paths[7].consec_losses == 0);
    CHECK(mre_path_on_loss(&ps, 7) == 0);
    CHECK(mre_path_on_loss(&ps, 7) == 0);
    CHECK(ps.paths[7].entropy == old && ps.paths[7].retirements == 0);
    /* Third consecutive loss retires. */
    ps.paths[7].weight = 3;
    mre_pathset_resync(&ps);
    CHECK(mre_path_on_loss(&ps, 7) == 1);
    CHECK(ps.paths[7].entropy != old);
    CHECK(all_distinct_in_range(&ps));
    CHECK(ps.paths[7].retirements == 1);
    CHECK(ps.paths[7].weight == MROCE_PATH_WMAX);
    CHECK(ps.paths[7].consec_losses == 0);
    CHECK(ps.paths[7].srtt == 0 && ps.paths[7].min_rtt == 0 &&
          ps.paths[7].rttvar == 0 && ps.paths[7].ecn_ewma == 0);
    CHECK(ps.paths[7].list_head == 42 && ps.paths[7].list_tail == 43);
    CHECK(ps.paths[7].lost_pkts == 5 && ps.paths[7].acked_pkts == 2);
    CHECK(ps.paths[7].next_seq == 10);
    CHECK(mre_path_on_sent(&ps, 7, 1) == 10); /* path_seq continues */

    /* Many retirements: entropy always fresh and distinct. */
    {
        unsigned ok = 1;
        for (k = 0; k < 500; k++) {
            uint16_t i = (uint16_t)(k % 64), before = ps.paths[i].entropy;
            mre_path_retire(&ps, i);
            ok &= ps.paths[i].entropy != before;
            ok &= (unsigned)all_distinct_in_range(&ps);
        }
        CHECK(ok);
    }

    /* span == npaths + 1: exactly one free value, which must be chosen. */
    {
        struct prng r2 = {9};
        unsigned ok = 1;
        CHECK(mre_pathset_init(&ps, slots, 16, 2000, 17, 0, prng_rand, &r2) ==
              0);
        for (k = 0; k < 50; k++) {
            uint16_t i = (uint16_t)((k * 5) % 16), before = ps.paths[i].entropy;
            mre_path_retire(&ps, i);
            ok &= ps.paths[i].entropy != before;
            ok &= (unsigned)all_distinct_in_range(&ps);
        }
        CHECK(ok);
    }
    /* span == npaths: nothing free, slot keeps its entropy, state resets. */
    {
        struct prng r3 = {10};
        CHECK(mre_pathset_init(&ps, slots, 16, 2000, 16, 0, prng_rand, &r3) ==
              0);
        old = ps.paths[3].entropy;
        ps.paths[3].weight = 1;
        mre_pathset_resync(&ps);
        mre_path_retire(&ps, 3);
        CHECK(ps.paths[3].entropy == old);
        CHECK(ps.paths[3].weight == MROCE_PATH_WMAX);
        CHECK(ps.paths[3].retirements == 1);
        CHECK(all_distinct_in_range(&ps));
    }
    /* With a constant generator retirement still finds a fresh value. */
    CHECK(mre_pathset_init(&ps, slots, 32, 49152, 16384, 0, const_rand, NULL) ==
          0);
    old = ps.paths[0].entropy;
    for (k = 0; k < MROCE_PATH_RETIRE_LOSSES; k++)
        (void)mre_path_on_loss(&ps, 0);
    CHECK(ps.paths[0].entropy != old);
    CHECK(all_distinct_in_range(&ps));
}

static void test_rtt(void)
{
    struct mre_pathset ps;
    struct prng r = {11};
    struct mre_path *p = &slots[0];
    unsigned k;

    setup(&ps, &r, 4);
    mre_path_on_ack(&ps, 0, 0, 0); /* no sample: no estimate */
    CHECK(p->srtt == 0 && p->min_rtt == 0);
    mre_path_on_ack(&ps, 0, 10000, 0);
    CHECK(p->srtt == 10000 && p->rttvar == 5000 && p->min_rtt == 10000);
    mre_path_on_ack(&ps, 0, 20000, 0);
    CHECK(p->srtt == 11250);  /* 7/8 * 10000 + 1/8 * 20000 */
    CHECK(p->rttvar == 6250); /* 3/4 * 5000 + 1/4 * 10000 */
    CHECK(p->min_rtt == 10000);
    for (k = 0; k < 100; k++)
        mre_path_on_ack(&ps, 0, 20000, 0);
    CHECK(p->srtt >= 19990 && p->srtt <= 20000);
    CHECK(p->rttvar < 100);
    for (k = 0; k < 100; k++)
        mre_path_on_ack(&ps, 0, 8000, 0);
    CHECK(p->srtt >= 8000 && p->srtt <= 8010);
    CHECK(p->min_rtt == 8000);

    /* Set-wide minimum and maximum over slots with samples. */
    mre_path_on_ack(&ps, 2, 30000, 0);
    CHECK(mre_pathset_min_rtt(&ps) == 8000);
    CHECK(mre_pathset_max_srtt(&ps) == 30000);
    setup(&ps, &r, 4);
    CHECK(mre_pathset_min_rtt(&ps) == 0 && mre_pathset_max_srtt(&ps) == 0);
}

/* The cached maximum (struct mre_pathset max_srtt) against a scan of
 * every slot, through random samples that raise and lower each slot's
 * srtt (the slot holding the maximum included) and retirements that zero
 * it; queried after every step and, in a second run, only every 7th, so
 * updates also land while the cache is stale. */
static mroce_tstamp scan_max_srtt(const struct mre_pathset *ps)
{
    mroce_tstamp m = 0;
    uint16_t k;
    for (k = 0; k < ps->npaths; k++)
        if (ps->paths[k].srtt > m)
            m = ps->paths[k].srtt;
    return m;
}

static void test_max_srtt_cache(void)
{
    unsigned every, step, bad = 0, stale = 0;

    for (every = 1; every <= 7; every += 6) {
        struct mre_pathset ps;
        struct prng r = {14};
        uint64_t x = 1234567;
        setup(&ps, &r, 8);
        for (step = 0; step < 20000; step++) {
            uint64_t v = testutil_rand64(&x);
            uint16_t i = (uint16_t)(v % 8);
            if ((v >> 8) % 50 == 0)
                mre_path_retire(&ps, i);
            else
                mre_path_on_ack(&ps, i, 1000 + (v >> 16) % 64000, 0);
            stale += ps.max_stale;
            if (step % every == 0 &&
                mre_pathset_max_srtt(&ps) != scan_max_srtt(&ps))
                bad++;
        }
        CHECK(mre_pathset_max_srtt(&ps) == scan_max_srtt(&ps));
    }
    CHECK_MSG(bad == 0, "cached max_srtt differed from the scan %u times", bad);
    CHECK(stale > 0); /* the falling-maximum case was exercised */
}

/* The weight sum and per-weight counts (struct mre_pathset wsum,
 * wcount) against a scan of every slot, through random hot and clean RTT
 * samples, CE and clean echoes, losses (which retire a slot at the third
 * in a row) and retirements, in phases that push the weights down and up
 * so every weight and several quanta occur.  Every 5th step the cursor is
 * put at 0, so the next pick starts a sweep: quantum and mean_weight must
 * then be the scan's highest weight and rounded-down mean. */
static void scan_weights(const struct mre_pathset *ps, unsigned *cnt,
                         unsigned *sum, unsigned *max)
{
    uint16_t k;
    *sum = *max = 0;
    memset(cnt, 0, MROCE_PATH_WMAX * sizeof(*cnt));
    for (k = 0; k < ps->npaths; k++) {
        unsigned w = ps->paths[k].weight;
        if (w >= 1 && w <= MROCE_PATH_WMAX)
            cnt[w - 1]++;
        *sum += w;
        if (w > *max)
            *max = w;
    }
}

static void test_weight_cache(void)
{
    struct mre_pathset ps;
    struct prng r = {15};
    uint64_t x = 7654321;
    unsigned step, bad = 0, badq = 0, seen_q = 0, seen_w = 0;

    setup(&ps, &r, 16);
    /* Never drained, so no slot moves (PATH-32) and weights stay low. */
    for (step = 0; step < 16; step++)
        mre_path_inflight_add(&ps, (uint16_t)step, 100);
    for (step = 0; step < 40000; step++) {
        uint64_t v = testutil_rand64(&x);
        uint16_t i = (uint16_t)(v % 16);
        unsigned op = (unsigned)((v >> 8) % 100);
        int down = (step / 2000) % 2 == 0; /* phase: mostly down or up */
        unsigned cnt[MROCE_PATH_WMAX], sum, max, k;

        if (op < (down ? 40u : 10u))
            mre_path_on_ack(&ps, i, 50000, 10000); /* hot: -1 */
        else if (op < 60)
            mre_path_on_ack(&ps, i, 12000, 10000); /* clean: +1 */
        else if (op < (down ? 75u : 65u))
            mre_path_on_ecn_echo(&ps, i, 1); /* CE: -1, blocks +1 */
        else if (op < 85)
            mre_path_on_ecn_echo(&ps, i, 0);
        else if (op < 99)
            (void)mre_path_on_loss(&ps, i); /* -1, retires at 3 */
        else
            mre_path_retire(&ps, i);

        scan_weights(&ps, cnt, &sum, &max);
        if (ps.wsum != sum)
            bad++;
        for (k = 0; k < MROCE_PATH_WMAX; k++) {
            if (ps.wcount[k] != cnt[k])
                bad++;
            if (cnt[k])
                seen_w |= 1u << k;
        }
        if (step % 5 == 0) {
            ps.cursor = 0; /* the pick starts a sweep (no reuse, burst 1) */
            (void)mre_path_pick(&ps, MROCE_PATH_NONE);
            if (ps.quantum != max || ps.mean_weight != sum / 16)
                badq++;
            seen_q |= 1u << ps.quantum;
        }
    }
    CHECK_MSG(bad == 0, "cached weight sum/counts differed %u times", bad);
    CHECK_MSG(badq == 0, "quantum or mean_weight differed %u times", badq);
    CHECK_MSG(seen_w == (1u << MROCE_PATH_WMAX) - 1, "weights seen %#x",
              seen_w);
    {
        unsigned q, nq = 0;
        for (q = 1; q <= MROCE_PATH_WMAX; q++)
            nq += (seen_q >> q) & 1;
        CHECK_MSG(nq >= 3, "quanta seen %#x", seen_q);
    }

    /* resync after direct writes; an out-of-range weight is clamped. */
    ps.paths[2].weight = 0;
    ps.paths[3].weight = 200;
    mre_pathset_resync(&ps);
    CHECK(ps.paths[2].weight == 1 && ps.paths[3].weight == MROCE_PATH_WMAX);
    {
        unsigned cnt[MROCE_PATH_WMAX], sum, max, k, same;
        scan_weights(&ps, cnt, &sum, &max);
        same = ps.wsum == sum;
        for (k = 0; k < MROCE_PATH_WMAX; k++)
            same &= ps.wcount[k] == cnt[k];
        CHECK(same);
    }
}

static void test_weight(void)
{
    struct mre_pathset ps;
    struct prng r = {12};
    struct mre_path *p = &slots[1];
    unsigned k;

    setup(&ps, &r, 4); /* target_qdelay 5000: hot above base + 5000 */
    mre_path_inflight_add(&ps, 1, 100);    /* never drains: no move (PATH-32) */
    mre_path_on_ack(&ps, 1, 15000, 10000); /* == threshold: clean */
    CHECK(p->weight == MROCE_PATH_WMAX);
    mre_path_on_ack(&ps, 1, 15001, 10000);
    CHECK(p->weight == MROCE_PATH_WMAX - 1);
    for (k = 0; k < 20; k++)
        mre_path_on_ack(&ps, 1, 50000, 10000);
    CHECK(p->weight == 1);
    mre_path_on_ack(&ps, 1, 0, 10000); /* no sample: unchanged */
    CHECK(p->weight == 1);
    mre_path_on_ack(&ps, 1, 50000, 0); /* unknown base: not hot */
    CHECK(p->weight == 2);
    for (k = 0; k < 20; k++)
        mre_path_on_ack(&ps, 1, 11000, 10000);
    CHECK(p->weight == MROCE_PATH_WMAX);

    /* CE echo: -1, and clean acks earn nothing until a clean echo. */
    mre_path_on_ecn_echo(&ps, 1, 1);
    CHECK(p->weight == MROCE_PATH_WMAX - 1 && p->ecn_marks == 1);
    mre_path_on_ack(&ps, 1, 11000, 10000);
    CHECK(p->weight == MROCE_PATH_WMAX - 1);
    for (k = 0; k < 3; k++) {
        mre_path_on_ecn_echo(&ps, 1, 1);
        mre_path_on_ack(&ps, 1, 11000, 10000);
    }
    CHECK(p->weight == MROCE_PATH_WMAX - 4 && p->ecn_marks == 4);
    for (k = 0; k < 20; k++)
        mre_path_on_ecn_echo(&ps, 1, 1);
    CHECK(p->weight == 1);
    mre_path_on_ecn_echo(&ps, 1, 0);
    CHECK(p->weight == 1);
    mre_path_on_ack(&ps, 1, 11000, 10000);
    CHECK(p->weight == 2);

    /* Reduced weight reduces the share in pick (slot 1, held for its
     * move since its weight fell, PATH-32, is let go: it never drains). */
    p->moving = 0;
    {
        unsigned c1 = 0;
        for (k = 0; k < 8000; k++)
            c1 += mre_path_pick(&ps, MROCE_PATH_NONE) == 1;
        /* weights 8,2,8,8: slot 1 gets 2/26 */
        CHECK(c1 > 8000 * 2 / 26 - 20 && c1 < 8000 * 2 / 26 + 20);
    }
}

static void test_ecn_ewma(void)
{
    struct mre_pathset ps;
    struct prng r = {13};
    struct mre_path *p = &slots[2];
    unsigned k, ok = 1;

    setup(&ps, &r, 4);
    mre_path_on_ecn_echo(&ps, 2, 1);
    CHECK(p->ecn_ewma == 4096); /* g = 1/16 of 1.0 */
    mre_path_on_ecn_echo(&ps, 2, 0);
    CHECK(p->ecn_ewma == 3840); /* 15/16 */
    for (k = 0; k < 500; k++) {
        mre_path_on_ecn_echo(&ps, 2, 1);
        ok &= p->ecn_ewma <= 65536;
    }
    CHECK(ok);
    CHECK(p->ecn_ewma > 65000);
    for (k = 0; k < 500; k++)
        mre_path_on_ecn_echo(&ps, 2, 0);
    CHECK(p->ecn_ewma == 0);
    /* Half marked: settles around 0.5. */
    for (k = 0; k < 1000; k++)
        mre_path_on_ecn_echo(&ps, 2, (int)(k & 1));
    CHECK(p->ecn_ewma > 30000 && p->ecn_ewma < 36000);
}

/* Losses lower a path's weight (a degraded link gets less traffic even
 * when it never loses three in a row); clean sampled acks restore it. */
static void test_loss_weight(void)
{
    struct mre_pathset ps;
    struct prng r = {21};

    setup(&ps, &r, 4);
    struct mre_path *p = &ps.paths[1];
    (void)mre_path_on_loss(&ps, 1);
    mre_path_on_ack(&ps, 1, 10000, 10000);
    (void)mre_path_on_loss(&ps, 1);
    CHECK(p->weight == MROCE_PATH_WMAX - 1); /* -1 +1 -1 */
    CHECK(p->consec_losses == 1);            /* not retired */
    for (int k = 0; k < 3; k++)
        mre_path_on_ack(&ps, 1, 10000, 10000);
    CHECK(p->weight == MROCE_PATH_WMAX);
}

/* PATH-15: recovery transmissions go on the slot with the freshest echo
 * that lost nothing since its last ack, never on `avoid`; without one, the
 * round robin decides; a proven choice leaves the round robin alone. */
static void test_pick_proven(void)
{
    struct mre_pathset ps;
    struct prng r = {33};

    setup(&ps, &r, 8);
    /* No echo yet: the round robin's choice, avoiding slot 0. */
    CHECK(mre_path_pick_proven(&ps, 0) == 1);
    mre_path_on_echo(&ps, 2, 1000);
    mre_path_on_echo(&ps, 5, 3000);
    mre_path_on_echo(&ps, 6, 2000);
    uint16_t cursor = ps.cursor;
    CHECK(mre_path_pick_proven(&ps, MROCE_PATH_NONE) == 5);
    CHECK(mre_path_pick_proven(&ps, 5) == 6); /* avoid: next freshest */
    CHECK(ps.cursor == cursor);               /* round robin untouched */
    (void)mre_path_on_loss(&ps, 5);           /* suspect now */
    CHECK(mre_path_pick_proven(&ps, MROCE_PATH_NONE) == 6);
    mre_path_on_ack(&ps, 5, 0, 0); /* acked again */
    CHECK(mre_path_pick_proven(&ps, MROCE_PATH_NONE) == 5);
    mre_path_retire(&ps, 5);           /* a fresh entropy: */
    CHECK(ps.paths[5].last_echo == 0); /* no proof */
    CHECK(mre_path_pick_proven(&ps, MROCE_PATH_NONE) == 6);
    mre_path_on_echo(&ps, 3, 0); /* time 0 still counts */
    CHECK(ps.paths[3].last_echo != 0);
    /* Every proven slot suspect or avoided: the round robin again. */
    (void)mre_path_on_loss(&ps, 2);
    (void)mre_path_on_loss(&ps, 3);
    uint16_t k = mre_path_pick_proven(&ps, 6);
    CHECK(k != 6 && k < 8);
    CHECK(ps.cursor != cursor);
}

/* PATH-16: a clean echo queues its slot, and a new burst reuses the oldest
 * healthy queued slot before the round robin chooses, at most
 * MROCE_PATH_REUSE_RUN times in a row; a CE echo queues nothing. */
static void echo(struct mre_pathset *ps, uint16_t i, int ce)
{
    mre_path_on_ecn_echo(ps, i, ce);
    mre_path_on_echo(ps, i, 1000);
}

static void test_reuse(void)
{
    struct mre_pathset ps;
    struct prng r = {44};
    const uint16_t none = MROCE_PATH_NONE;

    setup(&ps, &r, 8); /* off, the engine's default: round robin only */
    echo(&ps, 5, 0);
    CHECK(mre_path_pick(&ps, none) == 0);
    CHECK(ps.reuses == 0);

    setup(&ps, &r, 8);
    ps.reuse = 1;
    for (uint16_t k = 0; k < 4; k++)
        CHECK(mre_path_pick(&ps, none) == k); /* nothing queued yet */
    echo(&ps, 2, 0);
    echo(&ps, 1, 1); /* CE: not reused */
    echo(&ps, 3, 0);
    CHECK(mre_path_pick(&ps, none) == 2);
    CHECK(mre_path_pick(&ps, none) == 3);
    CHECK(mre_path_pick(&ps, none) == 4); /* queue empty: round robin */
    CHECK(ps.reuses == 2);

    echo(&ps, 5, 0);
    echo(&ps, 6, 0);
    echo(&ps, 7, 0);
    echo(&ps, 0, 0);
    echo(&ps, 5, 0); /* queued once only */
    CHECK(mre_path_pick(&ps, none) == 5);
    CHECK(mre_path_pick(&ps, none) == 6);
    CHECK(mre_path_pick(&ps, none) == 7);
    CHECK(ps.reuses == 5);
    CHECK(mre_path_pick(&ps, none) == 5); /* the round robin's turn */
    CHECK(ps.reuses == 5);
    CHECK(mre_path_pick(&ps, none) == 0); /* then the queue again */
    CHECK(ps.reuses == 6);

    /* Unhealthy entries are dropped: a loss since the ack, a retirement
     * (no echo since), the slot to avoid; a CE after the clean echo. */
    echo(&ps, 2, 0);
    echo(&ps, 3, 0);
    echo(&ps, 4, 0);
    echo(&ps, 1, 0);
    echo(&ps, 6, 0);
    (void)mre_path_on_loss(&ps, 2);
    mre_path_retire(&ps, 3);
    echo(&ps, 1, 1);
    CHECK(mre_path_pick(&ps, 4) == 6);
    CHECK(ps.ready_head == none && ps.reuses == 7);

    /* A weight below the set's mean (PATH-6 lowered it) is not reused. */
    echo(&ps, 7, 0);
    mre_path_inflight_add(&ps, 7, 100); /* not drained: no move (PATH-32) */
    for (int k = 0; k < 4; k++)
        mre_path_on_ack(&ps, 7, 100000, 1000); /* above the target */
    CHECK(ps.paths[7].weight < ps.mean_weight);
    (void)mre_path_pick(&ps, none);
    CHECK(ps.reuses == 7);

    setup(&ps, &r, 1); /* one slot: nothing to choose */
    ps.reuse = 1;
    echo(&ps, 0, 0);
    CHECK(mre_path_pick(&ps, none) == 0);
    CHECK(ps.reuses == 0);
}

/* PATH-32: a slot whose sample takes its weight below 3/4 of the set's mean
 * moves to a fresh entropy of its plane once nothing of it is in flight,
 * and meanwhile no pick chooses it; the move is no retirement.  A set
 * whose mean weight is below half the highest, that lost a packet in its
 * last MROCE_PATH_MOVE_QUIET acks per slot, or that has fewer than
 * MROCE_PATH_MOVE_MIN slots moves nothing, nor does a slot whose srtt is
 * within 5/4 of the set's mean srtt. */
static void test_move(void)
{
    struct mre_pathset ps;
    struct prng r = {21};
    struct mre_path *p = &slots[2];
    uint16_t e0, k;

    setup(&ps, &r, MROCE_PATH_MOVE_MIN);
    /* Quiet (no loss), every slot sampled clean at 10 us. */
    for (k = 0; k < MROCE_PATH_MOVE_MIN * MROCE_PATH_MOVE_QUIET; k++)
        mre_path_on_ack(&ps, (uint16_t)(k % MROCE_PATH_MOVE_MIN), 10000, 10000);
    e0 = p->entropy;
    mre_path_inflight_add(&ps, 2, 4000);
    mre_path_on_ack(&ps, 2, 11000, 10000); /* clean: stays */
    CHECK(!p->moving && p->weight == MROCE_PATH_WMAX);
    mre_path_on_ack(&ps, 2, 50000, 10000); /* hot: weight 7 of mean 8 */
    mre_path_on_ack(&ps, 2, 50000, 10000); /* 6: still >= 3/4 of 8 */
    CHECK(!p->moving && p->weight == MROCE_PATH_WMAX - 2);
    mre_path_on_ack(&ps, 2, 50000, 10000); /* 5: below 3/4 of 8 */
    CHECK(p->moving && p->entropy == e0 && p->weight == MROCE_PATH_WMAX - 3);
    for (k = 0; k < 40; k++)
        CHECK(mre_path_pick(&ps, MROCE_PATH_NONE) != 2);
    mre_path_inflight_sub(&ps, 2, 1000);
    CHECK(p->moving && p->entropy == e0);
    mre_path_inflight_sub(&ps, 2, 3000); /* drained: the move */
    CHECK(!p->moving && p->entropy != e0);
    CHECK(p->weight == MROCE_PATH_WMAX && p->srtt == 0);
    CHECK(ps.moves == 1 && p->retirements == 0);
    CHECK(all_distinct_in_range(&ps));
    for (k = 0; k < 8; k++)
        if (mre_path_pick(&ps, MROCE_PATH_NONE) == 2)
            break;
    CHECK(k < 8); /* chosen again */

    /* Nothing in flight: the move is at once, by the fourth hot sample
     * at the latest (weight 4 of a mean of 6 to 8). */
    e0 = slots[3].entropy;
    for (k = 0; k < 5 && slots[3].entropy == e0; k++)
        mre_path_on_ack(&ps, 3, 50000, 10000);
    CHECK(slots[3].entropy != e0 && ps.moves == 2 && !slots[3].moving);

    /* A loss holds moves back for MROCE_PATH_MOVE_QUIET acks a slot. */
    (void)mre_path_on_loss(&ps, 0);
    e0 = slots[1].entropy;
    for (k = 0; k < 5; k++)
        mre_path_on_ack(&ps, 1, 50000, 10000);
    CHECK(slots[1].entropy == e0 && !slots[1].moving && ps.moves == 2);

    /* Every slot queues (CE echoes take each to weight 2, mean 2): a hot
     * sample moves nothing. */
    setup(&ps, &r, MROCE_PATH_MOVE_MIN);
    for (k = 0; k < MROCE_PATH_MOVE_MIN * MROCE_PATH_MOVE_QUIET; k++)
        mre_path_on_ack(&ps, (uint16_t)(k % MROCE_PATH_MOVE_MIN), 0, 0);
    for (k = 0; k < MROCE_PATH_MOVE_MIN; k++)
        for (int j = 0; j < 6; j++)
            mre_path_on_ecn_echo(&ps, k, 1);
    ps.cursor = 0;
    (void)mre_path_pick(&ps, MROCE_PATH_NONE); /* a sweep: mean 2 */
    CHECK(ps.mean_weight < MROCE_PATH_WMAX / 2);
    e0 = slots[0].entropy;
    for (int j = 0; j < 4; j++)
        mre_path_on_ack(&ps, 0, 50000, 10000);
    CHECK(slots[0].entropy == e0 && !slots[0].moving);

    /* Every slot as slow as the hot one (a queue they all share): the
     * slot's weight falls below 3/4 of the mean, but its srtt is not 5/4
     * of the set's, so it stays. */
    setup(&ps, &r, MROCE_PATH_MOVE_MIN);
    for (k = 0; k < MROCE_PATH_MOVE_MIN * MROCE_PATH_MOVE_QUIET; k++)
        mre_path_on_ack(&ps, (uint16_t)(k % MROCE_PATH_MOVE_MIN), 45000, 0);
    e0 = slots[2].entropy;
    for (k = 0; k < 4; k++)
        mre_path_on_ack(&ps, 2, 50000, 10000);
    CHECK(slots[2].weight * 4 < ps.mean_weight * 3);
    CHECK(slots[2].entropy == e0 && !slots[2].moving && ps.moves == 0);

    /* A set of fewer than MROCE_PATH_MOVE_MIN slots moves nothing. */
    setup(&ps, &r, MROCE_PATH_MOVE_MIN - 1);
    for (k = 0; k < 64; k++)
        mre_path_on_ack(&ps, (uint16_t)(k % 4), 0, 0);
    e0 = slots[2].entropy;
    for (k = 0; k < 6; k++)
        mre_path_on_ack(&ps, 2, 50000, 10000);
    CHECK(slots[2].weight < MROCE_PATH_WMAX / 2);
    CHECK(slots[2].entropy == e0 && !slots[2].moving && ps.moves == 0);
}

static void test_stats(void)
{
    struct mre_pathset ps;
    struct mroce_path_stats st;
    struct prng r = {14};

    setup(&ps, &r, 4);
    (void)mre_path_on_sent(&ps, 3, 4096);
    (void)mre_path_on_sent(&ps, 3, 4096);
    mre_path_on_ack(&ps, 3, 12000, 10000);
    mre_path_on_ecn_echo(&ps, 3, 1);
    (void)mre_path_on_loss(&ps, 3);
    mre_path_get_stats(&ps, 3, &st);
    CHECK(st.entropy == ps.paths[3].entropy && st.active == 1);
    CHECK(st.weight == MROCE_PATH_WMAX - 2); /* one for CE, one for loss */
    CHECK(st.tx_pkts == 2 && st.tx_bytes == 8192 && st.acked_pkts == 1);
    CHECK(st.lost_pkts == 1 && st.ecn_marks == 1);
    CHECK(st.srtt == 12000 && st.min_rtt == 12000 && st.retirements == 0);
    mre_path_get_stats(&ps, 4, &st);
    CHECK(st.active == 0 && st.tx_pkts == 0 && st.entropy == 0);
}

/* CC-20, CC-21: a full path (inflight >= cwnd) is skipped by the picker,
 * bursts included, and comes back once its packets leave flight; with
 * every path full the set has no room; stats report the window. */
static void test_path_cwnd(void)
{
    struct mre_pathset ps;
    struct mroce_path_stats st;
    struct prng r = {15};
    unsigned k, seen[4];

    setup(&ps, &r, 4);
    CHECK(ps.paths[0].cwnd == MROCE_PATH_CWND_UNLIMITED);
    for (k = 0; k < 4; k++)
        mre_path_set_cwnd(&ps, (uint16_t)k, 8352); /* two packets */
    mre_path_inflight_add(&ps, 2, 4176);
    CHECK(!ps.paths[2].full && ps.nfull == 0);
    mre_path_inflight_add(&ps, 2, 4176);
    CHECK(ps.paths[2].full && ps.nfull == 1);
    memset(seen, 0, sizeof seen);
    for (k = 0; k < 400; k++)
        seen[mre_path_pick(&ps, MROCE_PATH_NONE)]++;
    CHECK_EQ(seen[2], 0);
    CHECK(seen[0] > 100 && seen[1] > 100 && seen[3] > 100);
    /* A burst stops at a path that fills. */
    ps.burst = 8;
    uint16_t b = mre_path_pick(&ps, MROCE_PATH_NONE);
    mre_path_inflight_add(&ps, b, 8352);
    CHECK(mre_path_pick(&ps, MROCE_PATH_NONE) != b);
    mre_path_inflight_sub(&ps, b, 8352);
    ps.burst = 1;
    /* It leaves flight: the path is picked again. */
    mre_path_inflight_sub(&ps, 2, 4176);
    CHECK(!ps.paths[2].full && ps.nfull == 0);
    memset(seen, 0, sizeof seen);
    for (k = 0; k < 400; k++)
        seen[mre_path_pick(&ps, MROCE_PATH_NONE)]++;
    CHECK(seen[2] > 50);
    /* Only one path with room: every pick takes it, even past `avoid`. */
    for (k = 0; k < 4; k++)
        if (k != 1)
            mre_path_inflight_add(&ps, (uint16_t)k, 8352);
    CHECK(mre_path_has_room(&ps) && ps.nfull == 3);
    for (k = 0; k < 20; k++)
        CHECK_EQ(mre_path_pick(&ps, MROCE_PATH_NONE), 1);
    CHECK_EQ(mre_path_pick(&ps, 0), 1);
    mre_path_inflight_add(&ps, 1, 8352);
    CHECK(!mre_path_has_room(&ps));
    /* A smaller window fills a path; stats report window and flight. */
    mre_path_inflight_reset(&ps);
    CHECK(ps.nfull == 0 && ps.paths[3].inflight == 0);
    mre_path_inflight_add(&ps, 3, 4176);
    mre_path_set_cwnd(&ps, 3, 4000);
    CHECK(ps.paths[3].full);
    mre_path_get_stats(&ps, 3, &st);
    CHECK(st.cwnd == 4000 && st.inflight == 4176);
    /* Retirement gives the slot the window of a fresh path. */
    ps.cwnd_fresh = 12345;
    mre_path_retire(&ps, 3);
    CHECK(ps.paths[3].cwnd == 12345 && !ps.paths[3].full);
    /* Two planes (slots 0, 2 on plane 0; 1, 3 on plane 1), plane 1 held
     * back (down, PATH-21): when its slot 1 is the only one with room, a
     * pick still stays off plane 1. */
    mre_path_inflight_reset(&ps);
    CHECK_EQ(mre_pathset_set_planes(&ps, 2), 0);
    for (k = 0; k < 4; k++)
        mre_path_set_cwnd(&ps, (uint16_t)k, 8352);
    mre_path_inflight_add(&ps, 0, 8352);
    mre_path_inflight_add(&ps, 2, 8352);
    mre_path_inflight_add(&ps, 3, 8352);
    CHECK(ps.nfull == 3 && !ps.paths[1].full);
    ps.planes_block = 1u << 1;
    for (k = 0; k < 20; k++)
        CHECK_EQ(ps.paths[mre_path_pick(&ps, MROCE_PATH_NONE)].plane, 0);
    CHECK_EQ(ps.paths[mre_path_pick(&ps, 0)].plane, 0);
}

/* PATH-21: a plane held back (down) takes nothing the picker can put
 * elsewhere, even when the only other slot is the one to avoid (a loss
 * probe's, LOSS-12) or is held itself (PATH-26). */
static void test_plane_block_last(void)
{
    struct mre_pathset ps;
    struct prng r = {9};
    unsigned k, ok = 1;

    setup(&ps, &r, 2);
    CHECK_EQ(mre_pathset_set_planes(&ps, 2), 0);
    CHECK(ps.paths[0].plane == 0 && ps.paths[1].plane == 1);
    ps.planes_block = 1u << 1;
    for (k = 0; k < 20; k++)
        ok &= mre_path_pick(&ps, 0) == 0 && mre_path_pick_proven(&ps, 0) == 0;
    CHECK(ok);
    /* Plane 0 held back and slot 1 held: slot 1, not plane 0's. */
    ps.planes_block = 1u << 0;
    ps.held[0] |= 1u << 1;
    ps.nheld = 1;
    ok = 1;
    for (k = 0; k < 20; k++)
        ok &= mre_path_pick(&ps, MROCE_PATH_NONE) == 1;
    CHECK(ok);
    /* With every slot on a plane held back there is nothing better. */
    ps.planes_block = 3;
    CHECK(mre_path_pick(&ps, 0) == 1);
}

static const struct test_case cases[] = {
    {"path_cwnd", test_path_cwnd},
    {"init_args", test_init_args},
    {"entropies", test_entropies},
    {"round_robin", test_round_robin},
    {"shares", test_shares},
    {"smooth", test_smooth},
    {"quantum", test_quantum},
    {"avoid", test_avoid},
    {"window_burst", test_window_burst},
    {"on_sent", test_on_sent},
    {"retire", test_retire},
    {"rtt", test_rtt},
    {"max_srtt_cache", test_max_srtt_cache},
    {"weight", test_weight},
    {"weight_cache", test_weight_cache},
    {"ecn_ewma", test_ecn_ewma},
    {"loss_weight", test_loss_weight},
    {"pick_proven", test_pick_proven},
    {"reuse", test_reuse},
    {"move", test_move},
    {"stats", test_stats},
    {"plane_block_last", test_plane_block_last},
};

int main(int argc, char **argv)
{
    return TEST_CASES_MAIN("test_path", cases, argc, argv);
}
