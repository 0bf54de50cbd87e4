/*
 * test_planes.c - tests of mroce-sim's multiplane fabrics (planes.c), on
 * small scenarios built in code.
 *
 *   one plane     `planes = 1` is today's leaf-spine, event for event
 *   spread        on 4 planes a ring all-reduce and an all-to-all complete
 *                 and every plane carries a share of the bytes
 *   plane down    a whole plane fails mid-collective (and comes back in a
 *                 second run): the collective completes, no QP errors, and
 *                 the failed plane lost packets
 *   engine        plane_select engine on 4 planes: the handshakes negotiate
 *                 4 planes, every plane carries traffic, no packet leaves
 *                 by a port of another plane than its address; after a
 *                 plane_down the collective completes and the engines
 *                 report that plane (and only it) down, after a plane_up
 *                 none
 *   NIC room      the NIC's rule counts only the ports that are up: a
 *                 down port, with nothing waiting, does not let the NIC
 *                 take packets for busy live ports
 *   parsing       bad plane counts, bad plane_select, bad plane faults
 */
#include <stdlib.h>
#include <string.h>

#include "simtest.h"

/* planes.c's NIC_PORT_CAP: packets a port may hold waiting */
#define NIC_CAP_TEST 16

static void base(struct scenario *sc, const char *name)
{
    simtest_base(sc, name, "/tmp/mroce-sim-test-planes");
    sc->qp_npaths = 64;
}

static int set(struct scenario *sc, const char *key, const char *val)
{
    return scenario_set(sc, key, val, "test");
}

static void run(struct scenario *sc, int tp, struct run_result *r)
{
    int rc = sim_run(sc, &sc->tp[tp], r);
    CHECK(rc == 0, "sim_run %s/%s", sc->name, sc->tp[tp].name);
}

static void test_one_plane(void)
{
    struct scenario sc;
    base(&sc, "planes1");
    set(&sc, "workload", "allreduce bytes=2M slice=64K order=random");
    set(&sc, "transports", "mroce,roce");
    for (int tp = 0; tp < 2; tp++) {
        struct run_result a, b;
        sc.planes = 0;
        run(&sc, tp, &a);
        CHECK(set(&sc, "planes", "1") == 0, "planes = 1");
        run(&sc, tp, &b);
        CHECK(a.complete && b.complete, "tp %d", tp);
        CHECK(a.time_ps == b.time_ps && a.events == b.events &&
                  a.retx_pkts == b.retx_pkts && a.pkts_sent == b.pkts_sent,
              "tp %d: %llu vs %llu ps", tp, (unsigned long long)a.time_ps,
              (unsigned long long)b.time_ps);
        CHECK(b.nplanes == 1 && b.plane_tx_bytes[0] > 0, "tp %d", tp);
    }
}

static void test_spread(void)
{
    const char *wls[] = {"allreduce bytes=4M slice=64K",
                         "alltoall bytes=256K msg=64K active=8"};
    for (int w = 0; w < 2; w++) {
        struct scenario sc;
        base(&sc, w ? "planes4_a2a" : "planes4_ring");
        CHECK(set(&sc, "planes", "4") == 0, "planes = 4");
        set(&sc, "workload", wls[w]);
        set(&sc, "transports", "mroce,roce");
        for (int tp = 0; tp < 2; tp++) {
            struct run_result r;
            run(&sc, tp, &r);
            CHECK(r.complete && !r.qp_errors, "%s tp %d", wls[w], tp);
            CHECK(r.nplanes == 4, "%u planes", r.nplanes);
            uint64_t sum = 0, mn = UINT64_MAX;
            for (int p = 0; p < 4; p++) {
                sum += r.plane_tx_bytes[p];
                if (r.plane_tx_bytes[p] < mn)
                    mn = r.plane_tx_bytes[p];
            }
            /* MetaRoCE sprays over 64 entropies, so over every plane;
             * a baseline QP has one entropy, hence one plane */
            if (tp == 0)
                CHECK(mn * 8 > sum, "%s: a plane carried %llu of %llu bytes",
                      wls[w], (unsigned long long)mn, (unsigned long long)sum);
        }
    }
}

static void test_plane_down(void)
{
    for (int recover = 0; recover < 2; recover++) {
        struct scenario sc;
        base(&sc, recover ? "planes4_flap" : "planes4_down");
        set(&sc, "planes", "4");
        set(&sc, "workload", "allreduce bytes=8M slice=64K");
        set(&sc, "transports", "mroce");
        CHECK(set(&sc, "fault", "40us plane_down 2") == 0, "plane_down");
        if (recover)
            CHECK(set(&sc, "fault", "80us plane_up 2") == 0, "plane_up");
        struct run_result r;
        run(&sc, 0, &r);
        CHECK(r.complete && !r.qp_errors, "recover %d: complete %d qperr %llu",
              recover, r.complete, (unsigned long long)r.qp_errors);
        CHECK(r.pkts_dropped > 0, "the failed plane lost nothing");
        CHECK(r.time_ps > 40 * PS_PER_US, "finished before the fault");
        CHECK(r.pkts_sent ==
                  r.pkts_delivered + r.pkts_dropped + r.pkts_inflight,
              "conservation");
    }
}

static void test_engine(void)
{
    /* 0: no fault, 1: plane 2 fails for good, 2: it fails for long enough
     * that every connection marks it down, then comes back */
    for (int k = 0; k < 3; k++) {
        struct scenario sc;
        base(&sc, k == 0 ? "eng4" : k == 1 ? "eng4_down" : "eng4_flap");
        set(&sc, "planes", "4");
        CHECK(set(&sc, "plane_select", "engine") == 0, "plane_select engine");
        set(&sc, "workload", "allreduce bytes=8M slice=64K");
        set(&sc, "transports", "mroce");
        if (k)
            set(&sc, "fault", "40us plane_down 2");
        if (k == 2)
            set(&sc, "fault", "250us plane_up 2");
        struct run_result r;
        run(&sc, 0, &r);
        CHECK(r.complete && !r.qp_errors, "run %d: complete %d qperr %llu", k,
              r.complete, (unsigned long long)r.qp_errors);
        CHECK(r.eng_planes_min == 4 && r.eng_planes_max == 4,
              "run %d: negotiated %u..%u planes", k, r.eng_planes_min,
              r.eng_planes_max);
        CHECK(r.plane_misaddr == 0, "run %d: %llu packets to another plane", k,
              (unsigned long long)r.plane_misaddr);
        uint64_t sum = 0;
        for (int p = 0; p < 4; p++)
            sum += r.plane_tx_bytes[p];
        for (int p = 0; p < 4; p++) {
            CHECK(r.eng_tx_pkts[p] > 0, "run %d: engine sent nothing on %d", k,
                  p);
            /* plane 2 is down for most of run 1 */
            if (k != 1 || p != 2)
                CHECK(r.plane_tx_bytes[p] * 8 > sum,
                      "run %d: plane %d carried %llu of %llu bytes", k, p,
                      (unsigned long long)r.plane_tx_bytes[p],
                      (unsigned long long)sum);
        }
        for (int p = 0; p < 4; p++) {
            if (k == 1 && p == 2)
                CHECK(r.eng_down_qps[2] > 0 && r.eng_downs[2] > 0,
                      "plane 2 not reported down: %u QPs, %llu downs",
                      r.eng_down_qps[2], (unsigned long long)r.eng_downs[2]);
            else
                CHECK(r.eng_down_qps[p] == 0,
                      "run %d: %u QPs report plane %d down at the end", k,
                      r.eng_down_qps[p], p);
            if (p != 2 || k == 0)
                CHECK(r.eng_downs[p] == 0, "run %d: plane %d marked down", k,
                      p);
        }
        if (k == 2)
            CHECK(r.eng_downs[2] > 0, "the flap marked no QP's plane 2 down");
    }
}

static void test_parsing(void)
{
    struct scenario sc;
    base(&sc, "parse");
    CHECK(set(&sc, "planes", "0") < 0, "planes 0");
    CHECK(set(&sc, "planes", "9") < 0, "planes 9");
    CHECK(set(&sc, "planes", "2x") < 0, "planes 2x");
    CHECK(set(&sc, "planes", "8") == 0 && sc.planes == 8, "planes 8");
    CHECK(set(&sc, "plane_select", "entropy") == 0, "entropy");
    CHECK(set(&sc, "plane_select", "engine") == 0 &&
              sc.plane_select == PLANE_SEL_ENGINE,
          "engine");
    CHECK(set(&sc, "plane_select", "nic") < 0, "plane_select nic");
    CHECK(set(&sc, "bin", "5us") == 0 && sc.bin_ps == 5 * PS_PER_US, "bin");
    CHECK(set(&sc, "bin", "5parsecs") < 0, "bin unit");
    CHECK(set(&sc, "bin", "nan") < 0 && set(&sc, "bin", "0us") < 0, "bin");
    CHECK(set(&sc, "fault", "1ms plane_down 8") < 0, "plane 8");
    CHECK(set(&sc, "fault", "1ms plane_down") < 0, "no plane");
    CHECK(set(&sc, "fault", "1ms plane_down 1 2") < 0, "extra token");
    CHECK(set(&sc, "fault", "1ms host_loss 1.5") < 0, "loss 1.5");
    CHECK(sc.nfaults == 0, "%u faults kept", sc.nfaults);
    CHECK(set(&sc, "fault", "1ms host_loss 0.01") == 0 && sc.nfaults == 1 &&
              sc.faults[0].kind == F_HOST_LOSS && sc.faults[0].val == 0.01,
          "host_loss");
    /* fat-trees have no planes */
    set(&sc, "topology", "fattree");
    set(&sc, "workload", "permutation bytes=64K");
    struct run_result r;
    set(&sc, "transports", "mroce");
    CHECK(sim_run(&sc, &sc.tp[0], &r) < 0, "a fat-tree with planes ran");
}

/* planes_nic_room on a hand-built host of two ports (host_port: port of
 * plane k at uplink + 2 * nhosts * k). */
static void test_nic_room(void)
{
    struct link links[4];
    struct host h;
    struct sim *s = calloc(1, sizeof(*s));
    CHECK(s != NULL, "calloc");
    if (!s)
        return;
    memset(links, 0, sizeof(links));
    memset(&h, 0, sizeof(h));
    s->links = links;
    s->nhosts = 1;
    s->nplanes = 2;
    h.uplink = 0;
    links[0].q_pkts = 1; /* plane 0: one packet waiting */
    links[2].q_pkts = 0; /* plane 1: idle */
    CHECK(planes_nic_room(s, &h) == 1, "an idle live port: room");
    links[2].state = L_DOWN;
    CHECK(
        planes_nic_room(s, &h) == 0,
        "a down port counted as idle while the live one has a packet waiting");
    links[0].q_pkts = 0;
    CHECK(planes_nic_room(s, &h) == 1, "the live port idle: room");
    links[0].q_pkts = NIC_CAP_TEST;
    links[2].q_pkts = 0;
    CHECK(planes_nic_room(s, &h) == 0, "a live port full: no room");
    links[0].state = L_DOWN;
    links[0].q_pkts = 0;
    CHECK(planes_nic_room(s, &h) == 1,
          "every port down: the rule runs over all of them");
    free(s);
}

int main(void)
{
    test_one_plane();
    test_spread();
    test_plane_down();
    test_engine();
    test_nic_room();
    test_parsing();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("test_planes: all passed\n");
    return 0;
}
