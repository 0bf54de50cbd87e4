/*
 * run.c - one simulation run: the event loop and the run's life cycle.
 *
 * A run builds the fabric, the hosts and the workloads, connects the QPs
 * the workloads need (MetaRoCE: the real handshake over the simulated
 * fabric, before the clock of the measurement starts), resets the counters,
 * starts the workloads and the scheduled faults (fault times are relative
 * to that start) and processes events until the measured workloads finish
 * or `limit` is reached.  A progress line goes to stderr about once a
 * second of wall time and one summary line per run to stdout; CSV files to
 * the output directory (metrics.c).
 *
 * run.c owns the event loop: nothing else runs it.  It pops the core's
 * events and dispatches each to its module (fabric, host, baseline,
 * topology); phases that need the loop in steps (handshakes, failure
 * report, trace) are loops here that call their module between steps.
 * It also wires the fabric to the hosts (struct host_if).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time of this process: the speed measure that a shared, loaded
 * machine does not distort. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* MROCE_SIM_PERF_CTL=FIFO: tell a `perf record -D -1 --control fifo:FIFO`
 * when the measured phase starts and ends ("enable" / "disable"), so its
 * samples are the event loop's and not the setup's (bench/limits_sim.sh).
 * A diagnostic: a FIFO that cannot be written is reported, never fatal. */
static void perf_ctl(const char *cmd)
{
    const char *fifo = getenv("MROCE_SIM_PERF_CTL");
    if (!fifo || !*fifo)
        return;
    FILE *fp = fopen(fifo, "w");
    int bad = !fp;
    if (fp) {
        bad = fputs(cmd, fp) == EOF;
        bad |= fclose(fp) == EOF;
    }
    if (bad)
        fprintf(stderr, "mroce-sim: MROCE_SIM_PERF_CTL %s: cannot write\n",
                fifo);
}

static double g_wall_last;

static void progress(struct sim *s)
{
    double w = wall_now();
    if (w - g_wall_last < 1.0)
        return;
    g_wall_last = w;
    uint64_t done = 0, total = 0;
    for (uint32_t i = 0; i < s->nmsgs; i++)
        if (!s->msgs[i].bg) {
            total++;
            done += s->msgs[i].done & 1;
        }
    fprintf(stderr,
            "[%s/%s] t=%.3f ms  events=%llu  msgs %llu/%llu posted  "
            "pkts live=%llu\n",
            s->sc->name, s->tp->name, (double)s->now / PS_PER_MS,
            (unsigned long long)s->events, (unsigned long long)done,
            (unsigned long long)total, (unsigned long long)s->pkts_live);
}

/* Every event but a packet arrival. */
static void dispatch(struct sim *s, const struct ev *e)
{
    uint32_t idx = ev_idx(e);
    switch (ev_type(e)) {
    case EV_LINK_FREE:
        fabric_on_link_free(s, idx);
        break;
    case EV_PAUSE:
        fabric_on_pause(s, idx, 1);
        break;
    case EV_RESUME:
        fabric_on_pause(s, idx, 0);
        break;
    case EV_TIMER:
        host_on_timer(s, &s->hosts[idx], e->t);
        break;
    case EV_WAKE: {
        struct host *h = &s->hosts[idx];
        if (h->wake_pending && h->wake_at == e->t)
            h->wake_pending = 0;
        host_pull(s, h);
        break;
    }
    case EV_RTO:
        roce_on_rto(s, idx, e->t);
        break;
    case EV_FAULT:
        fabric_apply_fault(s, idx);
        break;
    case EV_ROUTE:
        if (topo_reroute(s) < 0) {
            fprintf(stderr, "mroce-sim: out of memory (routes)\n");
            exit(2);
        }
        break;
    }
}

/* Runs the earliest event of s->q. */
static inline void run_top(struct sim *s)
{
    struct ev e;
    s->now = s->q.h[0].t;
    if (s->part)
        part_count(s, &s->q.h[0]);
    if (ev_type(&s->q.h[0]) == EV_ARRIVE) {
        /* fabric.c takes the link's packet off its ring and the heap */
        s->ev_by_type[EV_ARRIVE]++;
        fabric_on_arrive(s, ev_idx(&s->q.h[0]));
    } else {
        evq_pop(&s->q, &e);
        sim_prefetch_next(s);
        s->ev_by_type[ev_type(&e)]++;
        dispatch(s, &e);
    }
}

static inline int ev_before(const struct ev *a, const struct ev *b)
{
    return a->t < b->t || (a->t == b->t && a->key < b->key);
}

/* One queue: the events up to `until` and before the stop. */
static uint64_t loop_single(struct sim *s, uint64_t until)
{
    uint64_t n = 0;
    while (s->q.n && s->q.h[0].t <= until && s->q.h[0].t < s->stop_at) {
        run_top(s);
        n++;
        if (s->sc->progress && !(n & 0xfffff)) {
            s->events += n;
            n = 0;
            progress(s);
        }
    }
    if (s->stop_at != T_INF && (!s->q.n || s->q.h[0].t >= s->stop_at))
        s->stop = 1;
    return n;
}

/* The end of the window that starts at `a`: the window's edge, cut short
 * before the next global event (returns 1: it runs after the window), at
 * `until` and at the stop.  Both windowed loops use it, so a run in
 * processes and a run in one process cut the same windows. */
static int window_limit(const struct sim *s, uint64_t a, uint64_t until,
                        struct ev *lim)
{
    lim->t = a + s->win_ps;
    lim->key = 0;
    int global = s->gq.n && ev_before(&s->gq.h[0], lim);
    if (global)
        *lim = s->gq.h[0];
    if (lim->t > until) {
        lim->t = until + 1;
        lim->key = 0;
        global = 0;
    }
    if (lim->t >= s->stop_at) {
        lim->t = s->stop_at;
        lim->key = 0;
        global = 0;
    }
    return global;
}

/* Partitions (partition.c): a window [a, a + win_ps) at a time, each
 * partition's events of the window one partition after the other.  An
 * event reaches another partition through a link, no sooner than the
 * smallest link delay win_ps, so nothing a partition does in a window
 * can touch what another one runs in it: the events of each partition
 * run in the same order as in one queue.  A window is cut short before
 * an event every partition applies (a fault, a reroute: gq), which runs
 * between two windows, and at `until` and the stop. */
static uint64_t loop_parts(struct sim *s, uint64_t until)
{
    uint64_t n = 0, tmax = s->now;
    struct ev e;
    while (!s->stop) {
        uint64_t tmin = s->gq.n ? s->gq.h[0].t : T_INF;
        for (uint32_t r = 0; r < s->nparts; r++)
            if (s->pq[r].n && s->pq[r].h[0].t < tmin)
                tmin = s->pq[r].h[0].t;
        if (tmin >= s->stop_at) {
            s->stop = 1;
            break;
        }
        if (tmin == T_INF || tmin > until)
            break;
        uint64_t a = tmin - tmin % s->win_ps;
        struct ev lim;
        int global = window_limit(s, a, until, &lim);
        part_window(s, a + s->win_ps);
        for (uint32_t r = 0; r < s->nparts; r++) {
            s->cur_rank = r;
            s->q = s->pq[r];
            while (s->q.n && ev_before(&s->q.h[0], &lim)) {
                run_top(s);
                n++;
            }
            if (s->now > tmax)
                tmax = s->now;
            s->pq[r] = s->q;
            memset(&s->q, 0, sizeof(s->q));
        }
        s->cur_rank = NONE32;
        if (global) {
            evq_pop(&s->gq, &e);
            s->now = tmax = e.t;
            n++;
            if (s->part)
                part_count(s, &e);
            s->ev_by_type[ev_type(&e)]++;
            dispatch(s, &e);
        }
        s->now = tmax;
        if (s->sc->progress) {
            s->events += n;
            n = 0;
            progress(s);
        }
    }
    return n;
}

/* Over several processes (dist.c): the loop_parts windows, each process
 * running only its partition's queue, with dist_sync between windows
 * (the exchange across the cut and the agreed earliest next event). */
static uint64_t loop_dist(struct sim *s, uint64_t until)
{
    uint64_t n = 0;
    struct ev e;
    uint64_t tmin = dist_sync(s);
    while (!s->stop) {
        if (tmin >= s->stop_at) {
            s->stop = 1;
            break;
        }
        if (tmin == T_INF || tmin > until)
            break;
        uint64_t a = tmin - tmin % s->win_ps;
        struct ev lim;
        int global = window_limit(s, a, until, &lim);
        part_window(s, a + s->win_ps);
        while (s->q.n && ev_before(&s->q.h[0], &lim)) {
            run_top(s);
            n++;
        }
        if (global) {
            evq_pop(&s->gq, &e);
            s->now = e.t;
            n += s->dist_me == 0; /* every rank runs it; it counts once */
            part_count(s, &e);
            s->ev_by_type[ev_type(&e)]++;
            dispatch(s, &e);
        }
        if (s->sc->progress && s->dist_me == 0) {
            s->events += n;
            n = 0;
            progress(s);
        }
        tmin = dist_sync(s);
    }
    return n;
}

/* Processes events up to `until` ps (or until the run stops); returns the
 * number of events processed.  The one event loop of the simulator: the
 * phases of a run that go in steps (handshakes, report, trace) call it
 * from here and do their part between steps. */
static uint64_t sim_loop(struct sim *s, uint64_t until)
{
    uint64_t n = 0;
    if (!s->stop)
        n = s->dist ? loop_dist(s, until)
            : s->pq ? loop_parts(s, until)
                    : loop_single(s, until);
    s->events += n;
    if (!s->stop && until != T_INF && s->now < until)
        s->now = until;
    return n;
}

/* Runs the handshakes (CONNECT_REQ / RESP / ACK) until every QP is RTS. */
static int connect_pairs(struct sim *s)
{
    if (host_connect_start(s) < 0)
        return -1;
    uint64_t rounds = 200 + across_handshake_rounds(s);
    for (uint64_t round = 0; round < rounds; round++) {
        sim_loop(s, s->now + 50 * PS_PER_US);
        if (host_pairs_connected(s))
            return 0;
    }
    fprintf(stderr, "mroce-sim: handshakes did not finish\n");
    return -1;
}

/* The measured part with the failure report (report.c) read between
 * steps. */
static void report_loop(struct sim *s, uint64_t limit)
{
    report_start(s);
    while (!s->stop && s->now < limit) {
        sim_loop(s, report_until(s, limit));
        report_sample(s);
    }
}

/* The measured part in steps with a trace row per sending QP after each
 * (host_trace_open); the events are the same as in one go. */
static void trace_loop(struct sim *s, uint64_t limit, const char *arg)
{
    uint64_t step;
    FILE *f = host_trace_open(arg, &step);
    if (!f) {
        sim_loop(s, limit);
        return;
    }
    uint64_t t0 = s->now;
    while (!s->stop && s->now < limit) {
        sim_loop(s, s->now + step);
        if (s->tp->kind == T_ROCE)
            roce_trace_rows(s, f, t0);
        else
            host_trace_rows(s, f, t0);
    }
    fclose(f);
}

/* The measured part in steps of `bin`, the goodput bins (planes.c)
 * sampled after each; the events are the same as in one go. */
static void bin_loop(struct sim *s, uint64_t limit)
{
    planes_bins_start(s);
    while (!s->stop && s->now < limit) {
        sim_loop(s, s->now + s->sc->bin_ps);
        planes_bins_sample(s);
    }
}

static void reset_counters(struct sim *s)
{
    for (uint32_t i = 0; i < s->nlinks; i++) {
        struct link *l = &s->links[i];
        l->tx_bytes = l->tx_pkts = l->drops_q = l->drops_fail = 0;
        l->drops_loss = l->ecn_marks = l->pfc_xoff = l->paused_ps = 0;
        l->q_max = l->q_sum = l->q_samples = 0;
    }
    s->drops_q = s->drops_fail = s->drops_loss = s->drops_noroute = 0;
    s->ecn_marks = s->pfc_pauses = s->events = s->pkt_events = 0;
    /* packets still travelling from the connection phase count as sent */
    s->pkts_sent = fabric_inflight(s);
    s->pkts_delivered = 0;
}

static void fill_test_counters(struct sim *s, struct run_result *r)
{
    uint64_t inflight = fabric_inflight(s);
    r->pkts_sent = s->pkts_sent;
    r->pkts_delivered = s->pkts_delivered;
    r->pkts_dropped = s->drops_q + s->drops_fail + s->drops_loss +
                      s->drops_noroute;
    r->pkts_inflight = inflight;
    r->events = s->events;
    r->retx_pkts = s->retx_pkts;
    r->ecn_marks = s->ecn_marks;
    r->qp_errors = s->qp_errors;
    r->crc_drops = s->crc_drops;
    r->link_pkts_min = UINT64_MAX;
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const struct link *l = &s->links[i];
        if (l->tier < 8)
            r->tier_bytes[l->tier] += l->tx_bytes;
        if (s->nodes[l->src].level == 1 && s->nodes[l->dst].level == 2) {
            if (l->tx_pkts > r->link_pkts_max)
                r->link_pkts_max = l->tx_pkts;
            if (l->tx_pkts < r->link_pkts_min)
                r->link_pkts_min = l->tx_pkts;
        }
    }
    uint64_t bmax = 0;
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const struct link *l = &s->links[i];
        if (s->nodes[l->src].level == 1 && s->nodes[l->dst].level == 2 &&
            l->tx_bytes > bmax)
            bmax = l->tx_bytes;
    }
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const struct link *l = &s->links[i];
        if (s->nodes[l->src].level == 1 && s->nodes[l->dst].level == 2 &&
            l->tx_bytes * 20 >= bmax && bmax)
            r->links_busy++;
    }
}

static void sim_destroy(struct sim *s)
{
    host_teardown(s);
    roce_free(s);
    wl_free(s);
    fabric_free_pools(s);
    topo_free(s);
    evq_free(&s->q);
    if (s->scratch)
        scratch_unmap(s->scratch, s->scratch_len, s->scratch_aliased);
    free(s->report);
    dist_free(s);
    part_free(s);
    planes_free(s);
    arena_destroy(&s->arena); /* last: the engine's memory was in it */
}

int sim_run(const struct scenario *sc, const struct tp_cfg *tp,
            struct run_result *res)
{
    struct sim *s = calloc(1, sizeof(*s));
    if (!s)
        return -1;
    memset(res, 0, sizeof(*res));
    s->sc = sc;
    s->tp = tp;
    s->mem.ar = &s->arena;
    s->host_if = host_if; /* the fabric's way to the hosts */
    s->stop_at = T_INF;
    s->cur_rank = NONE32;
    int rc = -1;
    double w0 = wall_now();
    g_wall_last = w0;
    if (evq_init(&s->q, 1 << 16) < 0 || topo_build(s) < 0)
        goto out;
    for (uint32_t i = 0; i < s->nlinks; i++) {
        struct link *l = &s->links[i];
        l->lazy = !tp->pfc && l->src >= s->nhosts;
        l->rng = rng_mix64(sc->seed * 0x9e3779b97f4a7c15ULL + 3 + 2 * i);
        l->rng_rx = rng_mix64(sc->seed * 0x9e3779b97f4a7c15ULL + 4 + 2 * i);
        if (i == 0 || l->prop_ps < s->win_ps)
            s->win_ps = l->prop_ps;
    }
    s->scratch_len = 4096;
    for (uint32_t i = 0; i < sc->nwl; i++)
        if (sc->wl[i].msg > s->scratch_len)
            s->scratch_len = sc->wl[i].msg;
    s->scratch = scratch_map(s->scratch_len, &s->scratch_aliased);
    const struct dist_comm *dc = sim_dist_comm;
    if (dc && (part_plan(s, dc->nranks) < 0 || dist_start(s, dc) < 0))
        goto out;
    if (!s->scratch || host_setup(s) < 0 || wl_setup(s) < 0)
        goto out;
    if (tp->kind == T_MROCE && connect_pairs(s) < 0)
        goto out;
    double w1 = wall_now(), c1 = cpu_now();
    reset_counters(s);
    for (uint32_t i = 0; i < sc->nfaults; i++)
        sim_schedule(s, s->now + sc->faults[i].t, EV_FAULT, i);
    uint64_t limit = s->now + sc->limit_ps;
    const char *pr = getenv("MROCE_SIM_PARTITION");
    if (!dc && pr && *pr && part_plan(s, (uint32_t)strtoul(pr, NULL, 10)) < 0)
        goto out;
    perf_ctl("enable\n");
    wl_start(s);
    if (sc->report_ps)
        report_loop(s, limit);
    else if (sc->bin_ps)
        bin_loop(s, limit);
    else if (getenv("MROCE_SIM_TRACE"))
        trace_loop(s, limit, getenv("MROCE_SIM_TRACE"));
    else
        sim_loop(s, limit);
    res->wall_s = wall_now() - w1;
    res->cpu_s = cpu_now() - c1;
    perf_ctl("disable\n");
    host_collect_counters(s);
    if (s->dist) {
        /* rank 0 reports the whole run */
        if (dist_finish(s) < 0) {
            fprintf(stderr, "mroce-sim-mpi: gathering the results failed\n");
            goto out;
        }
        if (s->dist_me) {
            rc = 0;
            goto out;
        }
    }
    report_print(s);
    if (!s->dist)
        part_report(s);
    if (getenv("MROCE_SIM_DEBUG"))
        for (int i = 0; i < 10; i++)
            fprintf(stderr, "event type %d: %llu\n", i,
                    (unsigned long long)s->ev_by_type[i]);
    metrics_report(s, res);
    fill_test_counters(s, res);
    if (metrics_write(s, res) < 0)
        goto out;
    printf("%-14s %-13s eff %6.2f%%  time %10.1f us (ideal %10.1f)  "
           "mct p50/p99/p99.9 %8.1f/%8.1f/%8.1f us  drops %llu  ecn %llu  "
           "pfc %llu  retx %llu  qperr %llu  %s  [%.2fs setup %.2fs, "
           "%.2f Mev/s wall, %.2f Mev/s cpu, %.2f M pkt-ev/s cpu, %.0f B/QP]\n",
           sc->name, tp->name, res->eff, (double)res->time_ps / PS_PER_US,
           (double)res->ideal_ps / PS_PER_US, res->mct_p50, res->mct_p99,
           res->mct_p999,
           (unsigned long long)(s->drops_q + s->drops_fail + s->drops_loss +
                                s->drops_noroute),
           (unsigned long long)s->ecn_marks, (unsigned long long)s->pfc_pauses,
           (unsigned long long)s->retx_pkts, (unsigned long long)s->qp_errors,
           res->complete ? "complete" : "INCOMPLETE", res->wall_s, w1 - w0,
           res->wall_s > 0 ? (double)s->events / res->wall_s / 1e6 : 0,
           res->cpu_s > 0 ? (double)s->events / res->cpu_s / 1e6 : 0,
           res->cpu_s > 0 ? (double)s->pkt_events / res->cpu_s / 1e6 : 0,
           s->nqps && tp->kind == T_MROCE
               ? (double)s->qp_mem_bytes / (double)s->nqps
               : 0);
    fflush(stdout);
    planes_report(s, res);
    across_report(s, res);
    rc = 0;
out:
    sim_destroy(s);
    free(s);
    return rc;
}
