/*
 * metrics.c - the results of a run: network efficiency, message completion
 * times, per-tier link utilisation and queues, drops, marks, pauses and
 * retransmissions; written as CSV.
 *
 * Efficiency = ideal time / measured time, where the ideal is the measured
 * workloads' bytes over their bottleneck bandwidth (wl_ideal_ps).  Message
 * completion time = receive completion at the destination - post at the
 * source.  Link utilisation is over the measured interval (counters are
 * reset when the workloads start); queue means are sampled at every
 * enqueue that had to wait.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sim.h"

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t *sorted_mct(const struct sim *s, uint64_t *n)
{
    uint64_t *v = malloc(((size_t)s->nmsgs + 1) * sizeof(uint64_t));
    uint64_t k = 0;
    *n = 0;
    if (!v)
        return NULL;
    for (uint32_t i = 0; i < s->nmsgs; i++) {
        const struct msg *m = &s->msgs[i];
        if (!m->bg && (m->done & 1))
            v[k++] = m->t_recv - m->t_post;
    }
    qsort(v, k, sizeof(*v), cmp_u64);
    *n = k;
    return v;
}

static double pct(const uint64_t *v, uint64_t n, double q)
{
    if (!n)
        return 0;
    uint64_t i = (uint64_t)(q * (double)(n - 1) + 0.5);
    return (double)v[i] / PS_PER_US;
}

void metrics_report(struct sim *s, struct run_result *r)
{
    uint64_t n = 0;
    uint64_t *v = sorted_mct(s, &n);
    r->msgs = 0;
    for (uint32_t i = 0; i < s->nmsgs; i++)
        r->msgs += !s->msgs[i].bg;
    r->msgs_done = n;
    r->mct_p50 = pct(v, n, 0.5);
    r->mct_p99 = pct(v, n, 0.99);
    r->mct_p999 = pct(v, n, 0.999);
    r->mct_max = n ? (double)v[n - 1] / PS_PER_US : 0;
    free(v);
    r->complete = s->wl_pending == 0;
    r->time_ps = (r->complete ? s->t_end : s->now) - s->t_start;
    r->ideal_ps = wl_ideal_ps(s);
    r->eff = r->complete && r->time_ps
                 ? 100.0 * (double)r->ideal_ps / (double)r->time_ps
                 : 0;
}

static FILE *open_out(const struct sim *s, const char *file, int *fresh)
{
    char path[600];
    const char *dir = s->sc->outdir[0] ? s->sc->outdir : "sim-out";
    if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
        perror(dir);
        return NULL;
    }
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    struct stat st;
    *fresh = stat(path, &st) < 0 || st.st_size == 0;
    FILE *f = fopen(path, fresh && *fresh ? "w" : "a");
    if (!f)
        perror(path);
    return f;
}

static const char *wl_name(uint8_t k)
{
    static const char *names[] = {"permutation", "allreduce", "alltoall",
                                  "incast"};
    return k < 4 ? names[k] : "?";
}

int metrics_write(struct sim *s, const struct run_result *r)
{
    const struct scenario *sc = s->sc;
    int fresh;
    FILE *f = open_out(s, "summary.csv", &fresh);
    if (!f)
        return -1;
    if (fresh)
        fprintf(f,
                "scenario,transport,hosts,workload,bytes,ideal_us,time_us,"
                "efficiency_pct,mct_p50_us,mct_p99_us,mct_p999_us,mct_max_us,"
                "msgs,msgs_done,complete,drops_queue,drops_fail,drops_loss,"
                "drops_noroute,ecn_marks,pfc_pauses,retx_pkts,tx_data_pkts,"
                "timeouts,paths_retired,qp_errors,events,pkt_events,wall_s,"
                "events_per_s,cpu_s,events_per_cpu_s,qps,engine_bytes_per_qp,"
                "expiry_stuck\n");
    double bpq = s->nqps && s->tp->kind == T_MROCE
                     ? (double)s->qp_mem_bytes / (double)s->nqps
                     : 0;
    fprintf(
        f,
        "%s,%s,%u,%s,%llu,%.3f,%.3f,%.2f,%.3f,%.3f,%.3f,%.3f,%llu,%llu,%d,"
        "%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,"
        "%.3f,%.0f,%.3f,%.0f,%llu,%.0f,%llu\n",
        sc->name, s->tp->name, s->nhosts, wl_name(sc->wl[0].kind),
        (unsigned long long)sc->wl[0].bytes, (double)r->ideal_ps / PS_PER_US,
        (double)r->time_ps / PS_PER_US, r->eff, r->mct_p50, r->mct_p99,
        r->mct_p999, r->mct_max, (unsigned long long)r->msgs,
        (unsigned long long)r->msgs_done, r->complete,
        (unsigned long long)s->drops_q, (unsigned long long)s->drops_fail,
        (unsigned long long)s->drops_loss, (unsigned long long)s->drops_noroute,
        (unsigned long long)s->ecn_marks, (unsigned long long)s->pfc_pauses,
        (unsigned long long)s->retx_pkts, (unsigned long long)s->tx_data_pkts,
        (unsigned long long)s->mroce_timeouts,
        (unsigned long long)s->mroce_paths_retired,
        (unsigned long long)s->qp_errors, (unsigned long long)s->events,
        (unsigned long long)s->pkt_events, r->wall_s,
        r->wall_s > 0 ? (double)s->events / r->wall_s : 0, r->cpu_s,
        r->cpu_s > 0 ? (double)s->events / r->cpu_s : 0,
        (unsigned long long)s->nqps, bpq, (unsigned long long)s->expiry_stuck);
    fclose(f);

    /* completion-time distribution: at most ~1000 points of the CDF */
    char name[200];
    snprintf(name, sizeof(name), "mct_%s_%s.csv", sc->name, s->tp->name);
    f = open_out(s, name, &fresh);
    if (!f)
        return -1;
    fclose(f);
    {
        char path[600];
        snprintf(path, sizeof(path), "%s/%s",
                 sc->outdir[0] ? sc->outdir : "sim-out", name);
        f = fopen(path, "w");
        if (!f)
            return -1;
    }
    uint64_t n = 0;
    uint64_t *v = sorted_mct(s, &n);
    fprintf(f, "cdf,mct_us\n");
    uint64_t step = n > 1000 ? n / 1000 : 1;
    for (uint64_t i = 0; v && i < n; i += step)
        fprintf(f, "%.5f,%.3f\n", (double)(i + 1) / (double)n,
                (double)v[i] / PS_PER_US);
    if (v && n)
        fprintf(f, "1.00000,%.3f\n", (double)v[n - 1] / PS_PER_US);
    free(v);
    fclose(f);

    /* per-tier links */
    snprintf(name, sizeof(name), "tiers_%s_%s.csv", sc->name, s->tp->name);
    char path[600];
    snprintf(path, sizeof(path), "%s/%s",
             sc->outdir[0] ? sc->outdir : "sim-out", name);
    f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "tier,links,util_mean_pct,util_max_pct,q_max_bytes,"
               "q_mean_bytes,drops_queue,drops_fail_loss,ecn_marks,pfc_xoff,"
               "paused_us\n");
    double dur = (double)r->time_ps;
    for (uint32_t t = 0; t < s->ntiers; t++) {
        uint64_t nl = 0, qmax = 0, dq = 0, dfl = 0, ecn = 0, xoff = 0;
        double usum = 0, umax = 0, qsum = 0, paused = 0;
        uint64_t qn = 0;
        for (uint32_t i = 0; i < s->nlinks; i++) {
            const struct link *l = &s->links[i];
            if (l->tier != t)
                continue;
            nl++;
            double u = dur > 0 ? 100.0 * (double)l->tx_bytes * 8e12 /
                                     ((double)l->rate_bps * dur)
                               : 0;
            usum += u;
            if (u > umax)
                umax = u;
            if (l->q_max > qmax)
                qmax = l->q_max;
            qsum += (double)l->q_sum;
            qn += l->q_samples;
            dq += l->drops_q;
            dfl += l->drops_fail + l->drops_loss;
            ecn += l->ecn_marks;
            xoff += l->pfc_xoff;
            paused += (double)l->paused_ps / PS_PER_US;
        }
        fprintf(f, "%s,%llu,%.2f,%.2f,%llu,%.0f,%llu,%llu,%llu,%llu,%.1f\n",
                s->tier_names[t], (unsigned long long)nl,
                nl ? usum / (double)nl : 0, umax, (unsigned long long)qmax,
                qn ? qsum / (double)qn : 0, (unsigned long long)dq,
                (unsigned long long)dfl, (unsigned long long)ecn,
                (unsigned long long)xoff, paused);
    }
    fclose(f);

    /* every switch-to-switch link: ECMP spread and hot spots */
    snprintf(name, sizeof(name), "links_%s_%s.csv", sc->name, s->tp->name);
    snprintf(path, sizeof(path), "%s/%s",
             sc->outdir[0] ? sc->outdir : "sim-out", name);
    f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "link,tier,tx_pkts,util_pct,q_max_bytes,drops_queue,"
               "drops_fail_loss,ecn_marks,pfc_xoff\n");
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const struct link *l = &s->links[i];
        if (l->src < s->nhosts || l->dst < s->nhosts)
            continue;
        fprintf(f, "%s-%s,%s,%llu,%.2f,%llu,%llu,%llu,%llu,%llu\n",
                s->nodes[l->src].name, s->nodes[l->dst].name,
                s->tier_names[l->tier], (unsigned long long)l->tx_pkts,
                dur > 0 ? 100.0 * (double)l->tx_bytes * 8e12 /
                              ((double)l->rate_bps * dur)
                        : 0,
                (unsigned long long)l->q_max, (unsigned long long)l->drops_q,
                (unsigned long long)(l->drops_fail + l->drops_loss),
                (unsigned long long)l->ecn_marks,
                (unsigned long long)l->pfc_xoff);
    }
    fclose(f);
    return 0;
}
