/*
 * report.c - the failure report (`report = STEP`): the simulator's side of
 * the testbed validation (sim/validate_fabric.sh).
 *
 * The namespace testbed's driver (fabric/mroce_fabric_flow.c) measures, for
 * one connection and one failure, the longest gap between sender
 * completions after the failure, when the QP's paths_retired counter first
 * and last moved after it (sampled every 0.5 ms), and that time in RTTs of
 * the srtt just before the failure.  This module measures the same things
 * on a simulated run so the two can be compared number for number: the run
 * advances in steps of STEP simulated time and the QPs' counters are read
 * between steps.  It also prints the bytes every uplink of the sender's ToR
 * carried (the per-spine shares).  The step only decides when counters are
 * read: the events, and so the run itself, are the same as without it.
 */
#include <stdlib.h>

#include "sim.h"

struct report {
    uint64_t t_fault;          /* absolute ps of the first fault, T_INF none */
    uint64_t retired_at_fault; /* paths_retired summed over the QPs */
    uint64_t retired_last;
    uint64_t first_ret, last_ret; /* ps, T_INF none */
    uint64_t srtt_ns; /* busiest QP's srtt at the last step before the fault */
};

/* Sum of paths_retired over every QP; *srtt = srtt of the QP that sent the
 * most data (the measured connection). */
static uint64_t qp_sample(struct sim *s, uint64_t *srtt)
{
    uint64_t ret = 0, best = 0;
    for (uint32_t i = 0; i < s->nhosts; i++)
        for (uint32_t j = 0; j < s->nhosts; j++) {
            mre_qp *qp = s->hosts[i].qp_by_peer[j];
            if (!qp)
                continue;
            struct mroce_qp_counters c;
            mre_qp_get_counters(qp, &c);
            ret += c.paths_retired;
            if (srtt && c.tx_data_pkts >= best) {
                best = c.tx_data_pkts;
                *srtt = c.srtt;
            }
        }
    return ret;
}

/* Sets up the report before the measured part of the run. */
void report_start(struct sim *s)
{
    struct report *r = calloc(1, sizeof(*r));
    if (!r) {
        fprintf(stderr, "mroce-sim: out of memory (report)\n");
        exit(2);
    }
    s->report = r;
    r->t_fault = s->sc->nfaults ? s->now + s->sc->faults[0].t : T_INF;
    r->first_ret = r->last_ret = T_INF;
}

/* The end of the next step: STEP on, not past `limit`, and one sample
 * exactly at the fault. */
uint64_t report_until(const struct sim *s, uint64_t limit)
{
    const struct report *r = s->report;
    uint64_t step = s->sc->report_ps;
    uint64_t until = s->now + step < limit ? s->now + step : limit;
    if (s->now < r->t_fault && until > r->t_fault)
        until = r->t_fault;
    return until;
}

/* Reads the QPs' counters after a step. */
void report_sample(struct sim *s)
{
    struct report *r = s->report;
    if (s->tp->kind != T_MROCE)
        return;
    if (s->now <= r->t_fault) {
        r->retired_at_fault = r->retired_last = qp_sample(s, &r->srtt_ns);
        return;
    }
    uint64_t ret = qp_sample(s, NULL);
    if (ret != r->retired_last) {
        if (r->first_ret == T_INF)
            r->first_ret = s->now;
        r->last_ret = s->now;
        r->retired_last = ret;
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One `report key=value ...` line to stdout; frees the state. */
void report_print(struct sim *s)
{
    struct report *r = s->report;
    if (!r)
        return;
    s->report = NULL;
    uint64_t *t = malloc((s->nmsgs + 1) * sizeof(uint64_t)), bytes = 0;
    uint32_t n = 0, src = NONE32;
    for (uint32_t i = 0; t && i < s->nmsgs; i++)
        if (!s->msgs[i].bg && (s->msgs[i].done & 2)) {
            t[n++] = s->msgs[i].t_sent;
            bytes += s->msgs[i].bytes;
            if (src == NONE32)
                src = s->msgs[i].src;
        }
    if (t)
        qsort(t, n, sizeof(*t), cmp_u64);
    /* stall: as the testbed's driver, the longest gap between consecutive
     * sender completions whose first one is at most 2 ms before the fault */
    uint64_t stall = 0, last = n ? t[n - 1] : s->t_start;
    uint64_t max_gap = n ? t[0] - s->t_start : 0; /* the whole run, as well */
    for (uint32_t i = 1; i < n; i++) {
        if (t[i] - t[i - 1] > max_gap)
            max_gap = t[i] - t[i - 1];
        if (r->t_fault != T_INF && t[i - 1] + 2 * PS_PER_MS >= r->t_fault &&
            t[i] - t[i - 1] > stall)
            stall = t[i] - t[i - 1];
    }
    free(t);
    double secs = (double)(last - s->t_start) / 1e12;
    printf("report scenario=%s transport=%s bytes=%llu goodput_mbps=%.1f "
           "max_stall_ms=%.2f retx=%llu timeouts=%llu paths_retired=%llu "
           "drops=%llu",
           s->sc->name, s->tp->name, (unsigned long long)bytes,
           secs > 0 ? (double)bytes * 8 / secs / 1e6 : 0,
           (double)max_gap / PS_PER_MS, (unsigned long long)s->retx_pkts,
           (unsigned long long)s->mroce_timeouts,
           (unsigned long long)s->mroce_paths_retired,
           (unsigned long long)(s->drops_q + s->drops_fail + s->drops_loss +
                                s->drops_noroute));
    if (r->t_fault != T_INF) {
        double srtt = (double)r->srtt_ns / 1e9;
        printf(" srtt_at_fault_us=%.1f stall_after_ms=%.2f retired_after=%llu",
               srtt * 1e6, (double)stall / PS_PER_MS,
               (unsigned long long)(r->retired_last - r->retired_at_fault));
        if (r->first_ret != T_INF) {
            double f = (double)(r->first_ret - r->t_fault) / 1e12;
            double l = (double)(r->last_ret - r->t_fault) / 1e12;
            printf(" first_retire_ms=%.2f last_retire_ms=%.2f"
                   " first_retire_rtts=%.1f last_retire_rtts=%.1f",
                   f * 1e3, l * 1e3, srtt > 0 ? f / srtt : -1,
                   srtt > 0 ? l / srtt : -1);
        }
    }
    /* bytes on each uplink of the sender's ToR, in up-port order */
    printf(" uplink_bytes=");
    for (uint32_t i = 0; src != NONE32 && i < s->nlinks; i++) {
        if (s->links[i].src != src)
            continue;
        const struct node *tor = &s->nodes[s->links[i].dst];
        for (uint32_t p = 0; p < tor->nup; p++)
            printf("%s%llu", p ? "," : "",
                   (unsigned long long)s->links[tor->up[p]].tx_bytes);
        break;
    }
    printf("\n");
    fflush(stdout);
    free(r);
}
