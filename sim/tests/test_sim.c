/*
 * test_sim.c - tests of mroce-sim, on small scenarios built in code.
 *
 *   determinism   same seed -> identical results, different seed differs
 *   conservation  packets sent = delivered + dropped + still in flight
 *   ideal         one flow on an idle fabric finishes close to bytes/rate
 *                 plus the path latency (MetaRoCE and the baseline)
 *   ecmp          spraying spreads a flow over every spine; a baseline QP
 *                 uses exactly one
 *   failure       a spine cable blackholed mid-transfer: MetaRoCE completes
 *                 (path retirement); with `down`, routing reconverges and
 *                 the baseline completes too
 *   collectives   tiny ring all-reduce and all-to-all complete for every
 *                 transport, PFC runs lossless
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static int failures;
#define CHECK(c, ...)                                                   \
    do {                                                                \
        if (!(c)) {                                                     \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                               \
            fprintf(stderr, "\n");                                      \
            failures++;                                                 \
        }                                                               \
    } while (0)

static void base(struct scenario *sc, const char *name)
{
    scenario_defaults(sc);
    snprintf(sc->name, sizeof(sc->name), "%s", name);
    snprintf(sc->outdir, sizeof(sc->outdir), "/tmp/mroce-sim-test");
    sc->progress = 0;
    sc->hosts = 16;
    sc->hosts_per_tor = 4;
    sc->spines = 4;
    sc->limit_ps = 200 * PS_PER_MS;
}

static void set_tp(struct scenario *sc, const char *names)
{
    char tmp[128];
    snprintf(tmp, sizeof(tmp), "%s", names);
    scenario_set(sc, "transports", tmp, "test");
}

static void add_wl(struct scenario *sc, const char *spec)
{
    scenario_set(sc, "workload", spec, "test");
}

static void run(struct scenario *sc, int tp, struct run_result *r)
{
    int rc = sim_run(sc, &sc->tp[tp], r);
    CHECK(rc == 0, "sim_run %s/%s", sc->name, sc->tp[tp].name);
}

static void test_determinism(void)
{
    struct scenario sc;
    base(&sc, "det");
    add_wl(&sc, "permutation bytes=2M msg=256K");
    sc.seed = 7;
    set_tp(&sc, "mroce,roce");
    for (int tp = 0; tp < 2; tp++) {
        struct run_result a, b, c;
        run(&sc, tp, &a);
        run(&sc, tp, &b);
        CHECK(a.time_ps == b.time_ps && a.events == b.events &&
                  a.retx_pkts == b.retx_pkts && a.ecn_marks == b.ecn_marks,
              "tp %d: %llu vs %llu ps", tp, (unsigned long long)a.time_ps,
              (unsigned long long)b.time_ps);
        sc.seed = 8;
        run(&sc, tp, &c);
        sc.seed = 7;
        CHECK(c.events != a.events || c.time_ps != a.time_ps,
              "tp %d: seed changes nothing", tp);
    }
}

static void test_conservation(void)
{
    struct scenario sc;
    base(&sc, "cons");
    add_wl(&sc, "incast bytes=1M senders=12");
    sc.buffer = 64 * 1024; /* force drops */
    set_tp(&sc, "mroce,roce,roce_pfc");
    for (int tp = 0; tp < 3; tp++) {
        struct run_result r;
        run(&sc, tp, &r);
        CHECK(r.complete, "%s incomplete", sc.tp[tp].name);
        CHECK(r.pkts_sent == r.pkts_delivered + r.pkts_dropped + r.pkts_inflight,
              "%s: sent %llu != delivered %llu + dropped %llu + inflight %llu",
              sc.tp[tp].name, (unsigned long long)r.pkts_sent,
              (unsigned long long)r.pkts_delivered,
              (unsigned long long)r.pkts_dropped,
              (unsigned long long)r.pkts_inflight);
        if (tp == 2)
            CHECK(r.pkts_dropped == 0, "PFC dropped %llu",
                  (unsigned long long)r.pkts_dropped);
        else
            CHECK(r.pkts_dropped > 0, "%s: expected drops with a 64K buffer",
                  sc.tp[tp].name);
    }
}

static void test_ideal(void)
{
    struct scenario sc;
    base(&sc, "ideal");
    sc.hosts = 2;
    sc.hosts_per_tor = 1;
    sc.spines = 2;
    add_wl(&sc, "incast bytes=8M msg=8M senders=1 window=1");
    set_tp(&sc, "mroce,roce");
    for (int tp = 0; tp < 2; tp++) {
        struct run_result r;
        run(&sc, tp, &r);
        /* 8 MiB at 100 Gb/s = 671.1 us of payload; headers cost ~1.5-2.7%,
         * the path ~4 us, MetaRoCE's window starts at 64 KiB and grows by
         * one MTU per RTT (no slow start).  Expect 85..99.9%. */
        CHECK(r.complete && r.eff > 85 && r.eff < 99.9,
              "%s: efficiency %.2f%% (time %.1f us, ideal %.1f us)",
              sc.tp[tp].name, r.eff, (double)r.time_ps / PS_PER_US,
              (double)r.ideal_ps / PS_PER_US);
        CHECK(fabs((double)r.ideal_ps / PS_PER_US - 671.089) < 0.01,
              "ideal %.3f us", (double)r.ideal_ps / PS_PER_US);
    }
}

static void test_ecmp(void)
{
    struct scenario sc;
    base(&sc, "ecmp");
    sc.hosts = 2;
    sc.hosts_per_tor = 1;
    sc.spines = 8;
    add_wl(&sc, "incast bytes=4M senders=1");
    set_tp(&sc, "mroce,roce");
    struct run_result r;
    run(&sc, 0, &r);
    /* ~1024 data packets sprayed over 32 entropies: every spine carries a
     * share (ACKs in the other direction are < 5% of the data bytes) */
    CHECK(r.links_busy == 8, "mroce: data on %u of 8 spines", r.links_busy);
    run(&sc, 1, &r);
    CHECK(r.links_busy == 1 && r.link_pkts_max > 1000,
          "roce: data on %u spines, max %llu pkts (want one path)",
          r.links_busy, (unsigned long long)r.link_pkts_max);
}

static void test_failure(void)
{
    struct scenario sc;
    base(&sc, "fail");
    add_wl(&sc, "alltoall bytes=512K window=4");
    scenario_set(&sc, "fault", "100us blackhole leaf0 spine1", "test");
    set_tp(&sc, "mroce");
    struct run_result r;
    run(&sc, 0, &r);
    CHECK(r.complete && r.qp_errors == 0, "mroce blackhole: complete %d",
          r.complete);
    CHECK(r.pkts_dropped > 0, "blackhole dropped nothing");
    base(&sc, "fail2");
    add_wl(&sc, "alltoall bytes=512K window=4");
    scenario_set(&sc, "fault", "100us down leaf0 spine1 detect=500us", "test");
    set_tp(&sc, "mroce,roce");
    for (int tp = 0; tp < 2; tp++) {
        run(&sc, tp, &r);
        CHECK(r.complete && r.pkts_dropped > 0, "%s down: complete %d drops %llu",
              sc.tp[tp].name, r.complete, (unsigned long long)r.pkts_dropped);
    }
}

static void test_collectives(void)
{
    struct scenario sc;
    base(&sc, "coll");
    add_wl(&sc, "allreduce bytes=4M slice=64K order=random");
    set_tp(&sc, "mroce,mroce_fixed,roce,roce_pfc");
    for (int tp = 0; tp < 4; tp++) {
        struct run_result r;
        run(&sc, tp, &r);
        CHECK(r.complete && r.eff > (tp == 0 ? 50 : 10),
              "allreduce %s: eff %.1f complete %d",
              sc.tp[tp].name, r.eff, r.complete);
    }
    base(&sc, "coll2");
    snprintf(sc.topo, sizeof(sc.topo), "fattree");
    sc.k = 4;
    add_wl(&sc, "alltoall bytes=256K window=4");
    set_tp(&sc, "mroce,roce_pfc");
    for (int tp = 0; tp < 2; tp++) {
        struct run_result r;
        run(&sc, tp, &r);
        CHECK(r.complete && r.eff > 30, "fattree alltoall %s: eff %.1f",
              sc.tp[tp].name, r.eff);
    }
}

/* The JSON form of a scenario means the same as its plain-text form. */
static void test_json(void)
{
    struct scenario a, b;
    scenario_defaults(&a);
    scenario_defaults(&b);
    CHECK(scenario_load(&a, "scenarios/ls128_alltoall.txt") == 0, "txt");
    CHECK(scenario_load(&b, "scenarios/ls128_alltoall.json") == 0, "json");
    memcpy(b.name, a.name, sizeof(b.name));
    CHECK(memcmp(&a, &b, sizeof(a)) == 0, "the two forms differ");
}

int main(void)
{
    test_json();
    test_determinism();
    test_conservation();
    test_ideal();
    test_ecmp();
    test_failure();
    test_collectives();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("test_sim: all passed\n");
    return 0;
}
