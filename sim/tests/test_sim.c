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

#include "simtest.h"

static void base(struct scenario *sc, const char *name)
{
    simtest_base(sc, name, "/tmp/mroce-sim-test");
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
    /* Without hints: with them (the default, CC-30..38) 12 senders ask
     * first and this incast drops nothing, which the conservation check
     * below needs. */
    set_tp(&sc, "mroce_nohint,roce,roce_pfc");
    for (int tp = 0; tp < 3; tp++) {
        struct run_result r;
        run(&sc, tp, &r);
        CHECK(r.complete, "%s incomplete", sc.tp[tp].name);
        CHECK(r.pkts_sent ==
                  r.pkts_delivered + r.pkts_dropped + r.pkts_inflight,
              "%s: sent %llu != delivered %llu + dropped %llu + inflight %llu",
              sc.tp[tp].name, (unsigned long long)r.pkts_sent,
              (unsigned long long)r.pkts_delivered,
              (unsigned long long)r.pkts_dropped,
              (unsigned long long)r.pkts_inflight);
        /* zero-copy packets are put together again on delivery (host.c):
         * any slip would fail the receiver's CRC check */
        CHECK(r.crc_drops == 0, "%s: %llu CRC drops", sc.tp[tp].name,
              (unsigned long long)r.crc_drops);
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
        CHECK(r.complete && r.pkts_dropped > 0,
              "%s down: complete %d drops %llu", sc.tp[tp].name, r.complete,
              (unsigned long long)r.pkts_dropped);
    }
}

static const struct node *node_named(const struct sim *s, const char *name)
{
    for (uint32_t i = 0; i < s->nnodes; i++)
        if (!strcmp(s->nodes[i].name, name))
            return &s->nodes[i];
    return NULL;
}

/* `down ... local` (the testbed's `fail`): only the cable's ends reroute.
 * Routing tables: leaf1-spine0 down; leaf1 stops using spine0 either way,
 * leaf0 keeps it towards leaf1 only when the failure is local.  Then end to
 * end: the source leaf keeps hashing onto the dead spine, so packets die and
 * paths are retired, unlike a reconverged `down` at the same instant. */
static void test_down_local(void)
{
    struct scenario sc;
    base(&sc, "local");
    sc.hosts = 4;
    sc.hosts_per_tor = 2;
    for (int local = 0; local < 2; local++) {
        struct sim s;
        memset(&s, 0, sizeof(s));
        s.sc = &sc;
        CHECK(topo_build(&s) == 0, "topo_build");
        uint32_t li = topo_find_link(&s, "leaf1", "spine0");
        CHECK(li != NONE32, "no leaf1-spine0");
        if (li == NONE32)
            return;
        s.links[li].state = s.links[s.links[li].peer].state = local
                                                                  ? L_DOWN_LOCAL
                                                                  : L_DOWN;
        CHECK(topo_reroute(&s) == 0, "topo_reroute");
        const struct node *l0 = node_named(&s, "leaf0"),
                          *l1 = node_named(&s, "leaf1");
        CHECK(l0 && l1 && l0->rt && l1->rt, "routing tables");
        if (l0 && l1 && l0->rt && l1->rt) {
            CHECK(l1->rt_n[0] == 3,
                  "local %d: leaf1 has %u routes to leaf0, want 3", local,
                  l1->rt_n[0]);
            for (uint32_t i = 0; i < l1->rt_n[0]; i++)
                CHECK(l1->rt[i] != li, "leaf1 still routes over the dead link");
            CHECK(l0->rt_n[1] == (local ? 4 : 3),
                  "local %d: leaf0 has %u routes to leaf1", local, l0->rt_n[1]);
        }
        topo_free(&s);
    }
    struct run_result r[2];
    for (int local = 0; local < 2; local++) {
        base(&sc, local ? "local_e2e" : "global_e2e");
        sc.hosts = 2;
        sc.hosts_per_tor = 1;
        sc.qp_npaths = 64;
        add_wl(&sc, "incast senders=1 bytes=8M msg=64K window=16");
        scenario_set(&sc, "fault",
                     local ? "200us down leaf0 spine0 detect=0 local"
                           : "200us down leaf0 spine0 detect=0",
                     "test");
        CHECK(sc.nfaults == 1 && sc.faults[0].local == local, "parse `local`");
        struct scenario js;
        scenario_defaults(&js);
        char text[] =
            "{\"workload\": \"incast senders=1\", \"fault\": {\"time\": "
            "\"200us\", \"kind\": \"down\", \"a\": \"leaf0\", \"b\": "
            "\"spine0\", \"detect\": \"0\", \"local\": true}}";
        CHECK(scenario_load_json(&js, "test", text, strlen(text)) == 0 &&
                  js.nfaults == 1 && js.faults[0].local == 1 &&
                  js.faults[0].detect_ps == 0,
              "JSON fault with \"local\": true");
        set_tp(&sc, "mroce");
        run(&sc, 0, &r[local]);
        CHECK(r[local].complete && r[local].qp_errors == 0,
              "local %d: incomplete", local);
    }
    CHECK(r[1].pkts_dropped > 10 * (r[0].pkts_dropped + 1) &&
              r[1].retx_pkts > 0,
          "local failure: drops %llu (reconverged: %llu), retx %llu",
          (unsigned long long)r[1].pkts_dropped,
          (unsigned long long)r[0].pkts_dropped,
          (unsigned long long)r[1].retx_pkts);
    /* the failure report (`report`, report.c) only reads counters between
     * steps: the run is event for event the same */
    struct run_result rr;
    sc.report_ps = 50 * PS_PER_US;
    run(&sc, 0, &rr);
    CHECK(rr.time_ps == r[1].time_ps && rr.events == r[1].events &&
              rr.retx_pkts == r[1].retx_pkts,
          "report changed the run: time %llu/%llu events %llu/%llu",
          (unsigned long long)rr.time_ps, (unsigned long long)r[1].time_ps,
          (unsigned long long)rr.events, (unsigned long long)r[1].events);
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
              "allreduce %s: eff %.1f complete %d", sc.tp[tp].name, r.eff,
              r.complete);
    }
    /* One slice in flight per rank: every message is acknowledged before
     * the next is posted on the same RoCE QP, from inside on_ack's loop,
     * so its message queue compacts while the send cursor is behind the
     * head (a wrapped cursor read past the queue before roce.c's fix). */
    base(&sc, "coll1");
    add_wl(&sc, "allreduce bytes=4M slice=64K slots=1 order=random");
    set_tp(&sc, "roce,roce_pfc");
    for (int tp = 0; tp < 2; tp++) {
        struct run_result r;
        run(&sc, tp, &r);
        CHECK(r.complete && r.eff > 10,
              "allreduce slots=1 %s: eff %.1f complete %d", sc.tp[tp].name,
              r.eff, r.complete);
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
    test_down_local();
    test_collectives();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("test_sim: all passed\n");
    return 0;
}
