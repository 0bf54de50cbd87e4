/*
 * across.c - scale-across and storage incast: the scenario keys of the
 * "across" topology, the options of the flows and read workloads, and the
 * lines they report after a run.
 *
 * Topology "across" (built in topo.c): `dcs` data centres (2..4), each a
 * leaf-spine of hosts / dcs hosts with the scenario's hosts_per_tor,
 * spines and rates, joined by `lh_links` WAN nodes; every WAN node has one
 * long-haul cable into each data centre (a leg), at `lh_rate`.  One
 * `lh_delay` is the one-way delay of DC0's legs, the other legs taking
 * the intra-DC `delay`: with two DCs each long-haul path is one long link
 * and a WAN router at DC1's edge, so PFC's pause crosses the whole delay
 * as it would on one cable.  A list sets the legs, one per DC
 * (`0.5ms,0.5ms,4.5ms`: DC0-DC1 1 ms one way, DC0-DC2 and DC1-DC2 5 ms),
 * so flows of two long-haul lengths meet on one DC's legs.
 *
 * Workload options: `src=A-B` / `dst=C-D` (flows: senders and their
 * destinations; read: `client=H` and `servers=N`, or dst=C-D for the
 * servers).
 *
 * Reports (one line each, key=value):
 *   fair  - per flows workload, the mean rate of its flows while every
 *           flow of every flows workload is active (from the last first
 *           arrival to the first last arrival), and Jain's index over all
 *           those flows and within each workload;
 *   read  - the READ fan-out's completion times (request post to answer
 *           arrival) and the client's downlink queue peak;
 *   rxq   - the queue peak and drops at the port towards an incast's
 *           receiver (host 0) or a READ fan-out's client;
 *   pfc   - with PFC on the across topology, the largest ingress
 *           occupancy any switch held per link tier (the buffer PFC
 *           needed) and, on the long-haul legs, the headroom rule
 *           2 x BDP per priority it compares with.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static int parse_ps(const char *v, uint64_t *out)
{
    char *end;
    double d = strtod(v, &end);
    double mul;
    if (end == v || d < 0)
        return -1;
    while (*end == ' ')
        end++;
    if (!strncmp(end, "ns", 2))
        mul = 1e3;
    else if (!strncmp(end, "us", 2))
        mul = 1e6;
    else if (!strncmp(end, "ms", 2))
        mul = 1e9;
    else if (!strncmp(end, "s", 1))
        mul = 1e12;
    else
        return -1;
    *out = (uint64_t)(d * mul + 0.5);
    return 0;
}

int across_scenario_set(struct scenario *sc, const char *key, const char *val,
                        const char *where)
{
    if (!strcmp(key, "dcs")) {
        char *end;
        unsigned long n = strtoul(val, &end, 0);
        if (end == val || *end || n < 2 || n > SIM_MAX_DCS) {
            fprintf(stderr, "%s: dcs: 2..%d\n", where, SIM_MAX_DCS);
            return -1;
        }
        sc->dcs = (uint32_t)n;
        return 0;
    }
    if (!strcmp(key, "lh_links")) {
        char *end;
        unsigned long n = strtoul(val, &end, 0);
        if (end == val || *end || n < 1 || n > 256) {
            fprintf(stderr, "%s: lh_links: 1..256\n", where);
            return -1;
        }
        sc->lh_links = (uint32_t)n;
        return 0;
    }
    if (!strcmp(key, "lh_rate")) {
        char *end;
        double d = strtod(val, &end);
        double mul = *end == 'G' ? 1e9 : *end == 'M' ? 1e6 : *end ? 0 : 1;
        if (end == val || !(d > 0) || !mul) {
            fprintf(stderr, "%s: lh_rate: a rate (e.g. 100G)\n", where);
            return -1;
        }
        sc->lh_rate = (uint64_t)(d * mul);
        return 0;
    }
    if (!strcmp(key, "lh_delay")) {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", val);
        uint64_t v[SIM_MAX_DCS];
        uint32_t n = 0;
        char *save, *tok = strtok_r(buf, ",", &save);
        for (; tok; tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ')
                tok++;
            if (n == SIM_MAX_DCS || parse_ps(tok, &v[n]) < 0) {
                fprintf(stderr,
                        "%s: lh_delay: a time, or up to %d (one per DC)\n",
                        where, SIM_MAX_DCS);
                return -1;
            }
            n++;
        }
        if (!n) {
            fprintf(stderr, "%s: lh_delay: a time\n", where);
            return -1;
        }
        for (uint32_t d = 0; d < SIM_MAX_DCS; d++)
            sc->lh_delay_ps[d] = n == 1  ? (d ? 0 : v[0])
                                 : d < n ? v[d]
                                         : v[n - 1];
        return 0;
    }
    return 1;
}

/* "A-B" or "A": lo and count; -1 if it is neither. */
static int parse_range(const char *v, uint32_t *lo, uint32_t *n)
{
    char *end;
    unsigned long a = strtoul(v, &end, 0), b = a;
    if (end == v)
        return -1;
    if (*end == '-') {
        const char *p = end + 1;
        b = strtoul(p, &end, 0);
        if (end == p)
            return -1;
    }
    if (*end || b < a || b >= NONE32)
        return -1;
    *lo = (uint32_t)a;
    *n = (uint32_t)(b - a + 1);
    return 0;
}

int across_wl_option(struct wl_cfg *w, const char *k, const char *val)
{
    uint32_t n;
    if (!strcmp(k, "src"))
        return parse_range(val, &w->src_lo, &w->src_n);
    if (!strcmp(k, "dst"))
        return parse_range(val, &w->dst_lo, &w->dst_n);
    if (!strcmp(k, "client"))
        return parse_range(val, &w->src_lo, &n) < 0 || n != 1 ? -1 : 0;
    if (!strcmp(k, "servers")) {
        char *end;
        unsigned long v = strtoul(val, &end, 0);
        if (end == val || *end || !v || v >= NONE32)
            return -1;
        w->dst_n = (uint32_t)v;
        return 0;
    }
    return 1;
}

/* Jain's fairness index of x[0..n) */
static double jain(const double *x, uint32_t n)
{
    double s = 0, q = 0;
    for (uint32_t i = 0; i < n; i++) {
        s += x[i];
        q += x[i] * x[i];
    }
    return q > 0 ? s * s / (n * q) : 0;
}

struct flow_acc {
    uint64_t first, last; /* ps: first / last arrival */
    uint64_t bytes;       /* bytes arrived in the common window */
};

/* The flows' index: workload, then sender; NONE32 if m is not a flow's. */
static uint32_t flow_of(const struct sim *s, const struct msg *m,
                        const uint32_t *base)
{
    const struct wl_cfg *c = &s->sc->wl[m->wl];
    if (c->kind != WL_FLOWS || m->src < c->src_lo ||
        m->src >= c->src_lo + c->src_n)
        return NONE32;
    return base[m->wl] + (m->src - c->src_lo);
}

static void report_fair(struct sim *s)
{
    const struct scenario *sc = s->sc;
    uint32_t base[MAX_WL], nf = 0;
    for (uint32_t i = 0; i < sc->nwl; i++) {
        base[i] = nf;
        if (sc->wl[i].kind == WL_FLOWS)
            nf += sc->wl[i].src_n;
    }
    if (!nf)
        return;
    struct flow_acc *f = calloc(nf, sizeof(*f));
    double *x = calloc(nf, sizeof(*x));
    if (!f || !x)
        goto out;
    for (uint32_t i = 0; i < nf; i++)
        f[i].first = T_INF;
    for (uint32_t i = 0; i < s->nmsgs; i++) {
        const struct msg *m = &s->msgs[i];
        uint32_t k = flow_of(s, m, base);
        if (k == NONE32 || !(m->done & 1))
            continue;
        if (m->t_recv < f[k].first)
            f[k].first = m->t_recv;
        if (m->t_recv > f[k].last)
            f[k].last = m->t_recv;
    }
    uint64_t w0 = 0, w1 = T_INF;
    for (uint32_t i = 0; i < nf; i++) {
        if (f[i].first > w0)
            w0 = f[i].first;
        if (f[i].last < w1)
            w1 = f[i].last;
    }
    if (w1 <= w0 || w0 == T_INF) {
        printf("fair scen=%s tp=%s flows=%u window_us=0 (no common "
               "window)\n",
               sc->name, s->tp->name, nf);
        goto out;
    }
    for (uint32_t i = 0; i < s->nmsgs; i++) {
        const struct msg *m = &s->msgs[i];
        uint32_t k = flow_of(s, m, base);
        if (k != NONE32 && (m->done & 1) && m->t_recv > w0 && m->t_recv <= w1)
            f[k].bytes += m->bytes;
    }
    double span_s = (double)(w1 - w0) / 1e12;
    for (uint32_t i = 0; i < nf; i++)
        x[i] = (double)f[i].bytes * 8 / span_s / 1e9;
    printf("fair scen=%s tp=%s flows=%u window_us=%.1f jain=%.4f", sc->name,
           s->tp->name, nf, span_s * 1e6, jain(x, nf));
    for (uint32_t i = 0; i < sc->nwl; i++) {
        const struct wl_cfg *c = &sc->wl[i];
        if (c->kind != WL_FLOWS)
            continue;
        double sum = 0, mn = 1e30, mx = 0;
        for (uint32_t j = 0; j < c->src_n; j++) {
            double v = x[base[i] + j];
            sum += v;
            mn = v < mn ? v : mn;
            mx = v > mx ? v : mx;
        }
        printf(" wl%u_gbps=%.3f wl%u_min=%.3f wl%u_max=%.3f wl%u_jain=%.4f", i,
               sum / c->src_n, i, mn, i, mx, i, jain(x + base[i], c->src_n));
    }
    printf("\n");
out:
    free(f);
    free(x);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report_read(struct sim *s)
{
    for (uint32_t wi = 0; wi < s->sc->nwl; wi++) {
        const struct wl_cfg *c = &s->sc->wl[wi];
        if (c->kind != WL_READ)
            continue;
        uint64_t *v = malloc(((size_t)s->nmsgs + 1) * sizeof(uint64_t));
        uint64_t n = 0, want = 0;
        if (!v)
            return;
        for (uint32_t i = 0; i < s->nmsgs; i++) {
            const struct msg *m = &s->msgs[i];
            if (m->wl != wi || m->bg)
                continue;
            want++;
            if (m->done & 1)
                v[n++] = m->t_recv - m->t_post;
        }
        qsort(v, n, sizeof(*v), cmp_u64);
        /* the client's downlink: the ToR's port towards it */
        uint32_t cl = c->src_lo, up = s->hosts[cl].uplink;
        const struct link *dn = &s->links[s->links[up].peer];
        double us = (double)PS_PER_US;
        printf("read scen=%s tp=%s client=h%u reads=%llu done=%llu "
               "mct_p50_us=%.1f mct_p99_us=%.1f mct_max_us=%.1f "
               "client_q_max_bytes=%llu client_drops=%llu\n",
               s->sc->name, s->tp->name, cl, (unsigned long long)want,
               (unsigned long long)n, n ? (double)v[(n - 1) / 2] / us : 0,
               n ? (double)v[(uint64_t)(0.99 * (double)(n - 1) + 0.5)] / us : 0,
               n ? (double)v[n - 1] / us : 0, (unsigned long long)dn->q_max,
               (unsigned long long)dn->drops_q);
        free(v);
    }
}

/* rxq: the queue peak and drops at the ToR port towards the host that
 * receives an incast (host 0) or a READ fan-out's answers (its client). */
static void report_rxq(struct sim *s)
{
    for (uint32_t wi = 0; wi < s->sc->nwl; wi++) {
        const struct wl_cfg *c = &s->sc->wl[wi];
        uint32_t h;
        if (c->kind == WL_INCAST)
            h = 0;
        else if (c->kind == WL_READ)
            h = c->src_lo;
        else
            continue;
        const struct link *dn = &s->links[s->links[s->hosts[h].uplink].peer];
        printf("rxq scen=%s tp=%s host=h%u q_max_bytes=%llu drops=%llu\n",
               s->sc->name, s->tp->name, h, (unsigned long long)dn->q_max,
               (unsigned long long)dn->drops_q);
    }
}

static void report_pfc(struct sim *s)
{
    if (!s->tp->pfc || strcmp(s->sc->topo, "across"))
        return;
    uint64_t by_tier[64] = {0};
    uint64_t lh_prop = 0, lh_rate = 0;
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const struct link *l = &s->links[i];
        if (l->tier < 64 && l->ing_max > by_tier[l->tier])
            by_tier[l->tier] = l->ing_max;
        if (!strcmp(s->tier_names[l->tier], "spine-wan") &&
            l->prop_ps > lh_prop) {
            lh_prop = l->prop_ps;
            lh_rate = l->rate_bps;
        }
    }
    printf("pfc scen=%s tp=%s", s->sc->name, s->tp->name);
    for (uint32_t t = 0; t < s->ntiers && t < 64; t++)
        printf(" %s_ing_max_bytes=%llu", s->tier_names[t],
               (unsigned long long)by_tier[t]);
    if (lh_prop)
        /* XOFF takes one leg's delay to reach the sender, which keeps
         * sending meanwhile, and what it had sent is still arriving: two
         * one-way delays of the leg at its rate, plus xoff itself */
        printf(" lh_leg_us=%.1f lh_headroom_2bdp_bytes=%.0f",
               (double)lh_prop / PS_PER_US,
               2.0 * (double)lh_prop / 1e12 * (double)lh_rate / 8 +
                   s->sc->pfc_xoff);
    printf("\n");
}

uint64_t across_handshake_rounds(const struct sim *s)
{
    uint64_t leg = 0;
    if (strcmp(s->sc->topo, "across"))
        return 0;
    for (uint32_t d = 0; d < SIM_MAX_DCS; d++)
        if (s->sc->lh_delay_ps[d] > leg)
            leg = s->sc->lh_delay_ps[d];
    return 8 * 2 * leg / (50 * PS_PER_US);
}

void across_report(struct sim *s, const struct run_result *res)
{
    (void)res;
    report_fair(s);
    report_read(s);
    report_rxq(s);
    report_pfc(s);
}
