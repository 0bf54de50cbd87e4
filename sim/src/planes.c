/*
 * planes.c - multiplane fabrics: P parallel leaf-spine planes, a NIC port
 * per plane on every host, whole-plane faults and the plane report.
 *
 * topo.c builds the planes (scenario key `planes`, 1..8; each plane has the
 * scenario's leaves, spines and rates) and host.c sends every packet on the
 * port of its plane, chosen by `plane_select`: `entropy` (the packet's
 * entropy modulo P, so the engine's spraying over its entropies spreads a
 * connection over the planes), `engine` (each endpoint is configured with
 * P planes, one address per plane, and the handshake negotiates them; the
 * packet leaves by the port of the tx info's plane, to that plane's
 * address of its peer, and the rx info names the port a packet came in
 * by, so the engine's own plane state decides) or `spray` (the NIC
 * alone puts each packet on its up port with the fewest waiting, whatever
 * the entropy: a reference for a balanced choice).  A host accepts packets
 * from any of its ports.  The NIC takes packets from its transport while
 * some port that is up has nothing waiting behind the packet on its wire,
 * and no port that is up has NIC_PORT_CAP waiting: a port that finishes a
 * packet finds the next one ready, while the engine's choice of entropies
 * decides the planes.
 *
 * Faults: `TIME plane_down N` takes every link of plane N down in both
 * directions (its host ports included: everything sent into it is lost),
 * `TIME plane_up N` brings them back (routing recomputed at once), `TIME
 * host_loss P` loses each packet with probability P on the host uplink it
 * leaves by (each packet crosses exactly one, so P is its end-to-end loss;
 * the handshakes run before the faults' clock starts, without it).
 *
 * Report (when the scenario names `planes` or `bin`): one `planes ...`
 * line with the goodput (bytes of the messages received over the measured
 * time), the bytes
 * each plane carried, Jain's fairness over the flows' throughputs and the
 * engine bytes per QP; with `bin`, the delivered throughput per plane in
 * bins of that width (bins_SCEN_TP.csv) and, after a plane_down, how long
 * the throughput took to come back to (P-1)/P of what it was before.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* Bins a recovered throughput must hold (bins_report). */
#define RECOVER_HOLD 25
/* Packets a NIC port may hold waiting behind the one on its wire. */
#define NIC_PORT_CAP 16

struct planes_state {
    /* bins: cumulative bytes into hosts per plane at each sample */
    uint64_t *cum; /* nbins * nplanes; owned */
    uint64_t *t;   /* sample times, ps; owned */
    uint32_t nbins, cap;
    /* the first plane_down */
    uint64_t t_fault;  /* ps, T_INF none */
    uint32_t plane;    /* its plane */
    double srtt_ns;    /* mean srtt of the sending QPs then (MetaRoCE) */
    double min_rtt_ns; /* smallest min_rtt of any QP then */
};

int planes_scenario_set(struct scenario *sc, const char *key, const char *val,
                        const char *where)
{
    if (!strcmp(key, "planes")) {
        char *end;
        unsigned long n = strtoul(val, &end, 0);
        if (end == val || *end || n < 1 || n > SIM_MAX_PLANES) {
            fprintf(stderr, "%s: planes: 1..%d\n", where, SIM_MAX_PLANES);
            return -1;
        }
        sc->planes = (uint32_t)n;
        return 0;
    }
    if (!strcmp(key, "plane_select")) {
        if (!strcmp(val, "entropy") || !strcmp(val, "spray") ||
            !strcmp(val, "engine")) {
            sc->plane_select = !strcmp(val, "entropy") ? PLANE_SEL_ENTROPY
                               : *val == 's'           ? PLANE_SEL_SPRAY
                                                       : PLANE_SEL_ENGINE;
            return 0;
        }
        fprintf(stderr, "%s: plane_select: entropy, engine or spray\n", where);
        return -1;
    }
    if (!strcmp(key, "bin")) {
        double d;
        char unit[8] = "";
        if (sscanf(val, "%lf%7s", &d, unit) < 1 || !(d > 0) || d > 1e9) {
            fprintf(stderr, "%s: bin: a time (e.g. 5us)\n", where);
            return -1;
        }
        double mul = !strcmp(unit, "us")             ? 1e6
                     : !strcmp(unit, "ms")           ? 1e9
                     : !strcmp(unit, "ns") || !*unit ? 1e3
                                                     : 0;
        if (!mul) {
            fprintf(stderr, "%s: bin: unit ns, us or ms\n", where);
            return -1;
        }
        sc->bin_ps = (uint64_t)(d * mul + 0.5);
        if (!sc->bin_ps)
            fprintf(stderr, "%s: bin: below 1 ps\n", where);
        return sc->bin_ps ? 0 : -1;
    }
    return 1;
}

int planes_parse_fault(struct fault *f, const char *kind, const char *arg,
                       const char *extra, const char *where)
{
    if (!strcmp(kind, "plane_down"))
        f->kind = F_PLANE_DOWN;
    else if (!strcmp(kind, "plane_up"))
        f->kind = F_PLANE_UP;
    else if (!strcmp(kind, "host_loss"))
        f->kind = F_HOST_LOSS;
    else
        return 1;
    char *end = NULL;
    double v = arg ? strtod(arg, &end) : 0;
    int ok = arg && end != arg && !*end && !extra;
    if (f->kind == F_HOST_LOSS)
        ok = ok && v >= 0 && v <= 1;
    else
        ok = ok && v >= 0 && v < SIM_MAX_PLANES && v == floor(v);
    if (!ok) {
        fprintf(stderr,
                "%s: fault = TIME plane_down|plane_up PLANE, or TIME "
                "host_loss P\n",
                where);
        return -1;
    }
    f->val = v;
    snprintf(f->a, sizeof f->a, "%s", arg);
    return 0;
}

/* The plane a link belongs to: its switch end's. */
static uint32_t link_plane(const struct sim *s, const struct link *l)
{
    uint32_t n = l->src < s->nhosts ? l->dst : l->src;
    return s->nodes[n].plane;
}

/* Mean srtt of the QPs that have sent data and the smallest min_rtt, ns. */
static void qp_rtts(const struct sim *s, double *srtt, double *min_rtt)
{
    double sum = 0, mn = 0;
    uint64_t n = 0;
    for (uint32_t i = 0; s->tp->kind == T_MROCE && i < s->nhosts; i++)
        for (uint32_t j = 0; j < s->nhosts; j++) {
            mre_qp *qp = s->hosts[i].qp_by_peer[j];
            if (!qp)
                continue;
            struct mroce_qp_counters c;
            mre_qp_get_counters(qp, &c);
            if (!c.tx_data_pkts || !c.srtt)
                continue;
            sum += (double)c.srtt;
            n++;
            if (c.min_rtt && (!mn || (double)c.min_rtt < mn))
                mn = (double)c.min_rtt;
        }
    *srtt = n ? sum / (double)n : 0;
    *min_rtt = mn;
}

void planes_apply_fault(struct sim *s, uint32_t i)
{
    const struct fault *f = &s->sc->faults[i];
    if (f->kind == F_HOST_LOSS) {
        for (uint32_t li = 0; li < s->nlinks; li++)
            if (s->links[li].src < s->nhosts)
                s->links[li].loss = f->val;
        return;
    }
    uint32_t plane = (uint32_t)f->val;
    if (plane >= s->nplanes) {
        fprintf(stderr, "mroce-sim: fault: no plane %u\n", plane);
        return;
    }
    uint8_t st = f->kind == F_PLANE_DOWN ? L_DOWN : L_UP;
    for (uint32_t li = 0; li < s->nlinks; li++)
        if (link_plane(s, &s->links[li]) == plane)
            s->links[li].state = st;
    if (f->kind == F_PLANE_UP) /* tables computed during the outage */
        sim_schedule(s, s->now, EV_ROUTE, 0);
    struct planes_state *ps = s->planes_st;
    if (f->kind == F_PLANE_DOWN && ps && ps->t_fault == T_INF) {
        ps->t_fault = s->now;
        ps->plane = plane;
        qp_rtts(s, &ps->srtt_ns, &ps->min_rtt_ns);
    }
}

double planes_host_bps(const struct sim *s, uint32_t host)
{
    double r = 0;
    for (uint32_t p = 0; p < s->nplanes; p++)
        r += (double)s->links[host_port(s, &s->hosts[host], p)].rate_bps;
    return r;
}

uint32_t planes_spray(const struct sim *s, const struct host *h)
{
    uint32_t best = 0, bq = UINT32_MAX;
    for (uint32_t p = 0; p < s->nplanes; p++) {
        const struct link *l = &s->links[host_port(s, h, p)];
        uint32_t q = l->q_pkts + (l->tx.busy_ps > s->now);
        if (l->state == L_UP && q < bq) {
            best = p;
            bq = q;
        }
    }
    return best;
}

/* The NIC's rule over the ports that are up: a port whose link is down
 * (plane_down) has nothing waiting, but a NIC knows its link state and
 * does not count it as a port ready for the next packet; were it counted,
 * the NIC would take packets until a live port holds NIC_PORT_CAP, a queue
 * of several microseconds in front of every live port.  With every port
 * down, the rule runs over all of them (what the host sends is lost). */
static int nic_room(const struct sim *s, const struct host *h, int up_only)
{
    int idle = 0;
    for (uint32_t p = 0; p < s->nplanes; p++) {
        const struct link *l = &s->links[host_port(s, h, p)];
        if (up_only && l->state != L_UP)
            continue;
        if (l->q_pkts >= NIC_PORT_CAP)
            return 0;
        idle |= l->q_pkts == 0;
    }
    return idle;
}

int planes_nic_room(const struct sim *s, const struct host *h)
{
    for (uint32_t p = 0; p < s->nplanes; p++)
        if (s->links[host_port(s, h, p)].state == L_UP)
            return nic_room(s, h, 1);
    return nic_room(s, h, 0);
}

static struct planes_state *state(struct sim *s)
{
    if (!s->planes_st) {
        s->planes_st = calloc(1, sizeof(*s->planes_st));
        if (!s->planes_st) {
            fprintf(stderr, "mroce-sim: out of memory (planes)\n");
            exit(2);
        }
        s->planes_st->t_fault = T_INF;
    }
    return s->planes_st;
}

void planes_bins_start(struct sim *s)
{
    state(s);
    planes_bins_sample(s);
}

/* Bytes delivered into hosts so far, per plane (links whose far end is a
 * host: everything a host received, data, ACKs and retransmissions). */
void planes_bins_sample(struct sim *s)
{
    struct planes_state *ps = state(s);
    if (ps->nbins == ps->cap) {
        uint32_t nc = ps->cap ? 2 * ps->cap : 1024;
        uint64_t *c = realloc(ps->cum, (size_t)nc * s->nplanes * sizeof(*c));
        if (c)
            ps->cum = c;
        uint64_t *t = c ? realloc(ps->t, (size_t)nc * sizeof(*t)) : NULL;
        if (!c || !t) {
            fprintf(stderr, "mroce-sim: out of memory (bins)\n");
            exit(2);
        }
        ps->t = t;
        ps->cap = nc;
    }
    uint64_t *row = ps->cum + (size_t)ps->nbins * s->nplanes;
    memset(row, 0, s->nplanes * sizeof(*row));
    for (uint32_t li = 0; li < s->nlinks; li++) {
        const struct link *l = &s->links[li];
        if (l->dst < s->nhosts)
            row[link_plane(s, l)] += l->tx_bytes;
    }
    ps->t[ps->nbins++] = s->now;
}

static FILE *open_csv(const struct sim *s, const char *what)
{
    if (!s->sc->outdir[0])
        return NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/%s_%s_%s.csv", s->sc->outdir, what,
             s->sc->name, s->tp->name);
    return fopen(path, "w");
}

/* Jain's index over the measured flows' throughputs: per (src, dst), its
 * bytes over the time from its first post to its last reception. */
static double flows_jain(const struct sim *s, uint32_t *nflows)
{
    uint32_t H = s->nhosts;
    uint64_t *b = calloc((size_t)H * H, sizeof(uint64_t));
    uint64_t *t0 = calloc((size_t)H * H, sizeof(uint64_t));
    uint64_t *t1 = calloc((size_t)H * H, sizeof(uint64_t));
    double sum = 0, sq = 0, jain = 0;
    uint32_t n = 0;
    if (b && t0 && t1) {
        for (uint32_t i = 0; i < s->nmsgs; i++) {
            const struct msg *m = &s->msgs[i];
            if (m->bg || !(m->done & 1))
                continue;
            size_t k = (size_t)m->src * H + m->dst;
            if (!b[k] || m->t_post < t0[k])
                t0[k] = m->t_post;
            if (m->t_recv > t1[k])
                t1[k] = m->t_recv;
            b[k] += m->bytes;
        }
        for (size_t k = 0; k < (size_t)H * H; k++) {
            if (!b[k] || t1[k] <= t0[k])
                continue;
            double x = (double)b[k] / (double)(t1[k] - t0[k]);
            sum += x;
            sq += x * x;
            n++;
        }
        jain = n && sq > 0 ? sum * sum / ((double)n * sq) : 0;
    }
    free(b);
    free(t0);
    free(t1);
    *nflows = n;
    return jain;
}

/* The bins' table, and after a plane_down the recovery: pre = mean
 * throughput over the (up to 20) bins before the fault, target = pre *
 * (P-1)/P; the recovery is the start of the first bin after the fault
 * from which the throughput (a 5-bin mean) holds 90% of target or more for
 * RECOVER_HOLD bins; dip is the lowest 5-bin mean seen on the way. */
static void bins_report(struct sim *s, double host_bps)
{
    struct planes_state *ps = s->planes_st;
    uint32_t P = s->nplanes;
    if (!ps || ps->nbins < 2)
        return;
    FILE *f = open_csv(s, "bins");
    if (f) {
        fprintf(f, "t_us");
        for (uint32_t p = 0; p < P; p++)
            fprintf(f, ",plane%u_gbps", p);
        fprintf(f, ",total_gbps,frac_of_hosts\n");
    }
    uint32_t nb = ps->nbins - 1;
    double *tot = calloc(nb, sizeof(double));
    if (!tot) {
        if (f)
            fclose(f);
        return;
    }
    for (uint32_t k = 0; k < nb; k++) {
        double dt = (double)(ps->t[k + 1] - ps->t[k]) / 1e12;
        const uint64_t *a = ps->cum + (size_t)k * P, *b = a + P;
        if (f)
            fprintf(f, "%.3f", (double)(ps->t[k + 1] - ps->t[0]) / PS_PER_US);
        for (uint32_t p = 0; p < P; p++) {
            double g = dt > 0 ? (double)(b[p] - a[p]) * 8 / dt / 1e9 : 0;
            tot[k] += g;
            if (f)
                fprintf(f, ",%.2f", g);
        }
        if (f)
            fprintf(f, ",%.2f,%.4f\n", tot[k],
                    tot[k] * 1e9 / (host_bps * s->nhosts));
    }
    if (f)
        fclose(f);
    if (ps->t_fault != T_INF && P > 1) {
        uint32_t kf = 0; /* first bin that ends after the fault */
        while (kf < nb && ps->t[kf + 1] <= ps->t_fault)
            kf++;
        double pre = 0;
        uint32_t np = 0;
        for (uint32_t k = kf > 20 ? kf - 20 : 0; k < kf; k++, np++)
            pre += tot[k];
        pre = np ? pre / np : 0;
        double target = pre * (double)(P - 1) / (double)P;
        /* recovered: from bin kr on, every 5-bin mean for the next
         * RECOVER_HOLD bins is at 90% of target or more */
        uint32_t kr = kf;
        double dip = -1;
        for (; kr + 5 <= nb; kr++) {
            uint32_t j = kr;
            for (; j < kr + RECOVER_HOLD && j + 5 <= nb; j++) {
                double m = (tot[j] + tot[j + 1] + tot[j + 2] + tot[j + 3] +
                            tot[j + 4]) /
                           5;
                if (dip < 0 || m < dip)
                    dip = m;
                if (m < 0.9 * target)
                    break;
            }
            if (j == kr + RECOVER_HOLD || j + 5 > nb)
                break;
        }
        if (kr + 5 > nb)
            kr = nb;
        double post = 0;
        uint32_t npost = 0;
        for (uint32_t k = kr; k < nb && k < kr + 20; k++, npost++)
            post += tot[k];
        post = npost ? post / npost : 0;
        /* the fault's own bin (kr == kf) counts from the fault */
        double rec_us = kr >= nb ? -1
                        : ps->t[kr] > ps->t_fault
                            ? (double)(ps->t[kr] - ps->t_fault) / PS_PER_US
                            : 0;
        printf("planes_fault plane=%u t_us=%.1f pre_gbps=%.1f "
               "pre_frac=%.3f dip_gbps=%.1f post_gbps=%.1f post_over_pre=%.3f "
               "target=%.3f recover_us=%.1f srtt_us=%.2f min_rtt_us=%.2f "
               "recover_srtts=%.1f recover_min_rtts=%.1f\n",
               ps->plane, (double)(ps->t_fault - ps->t[0]) / PS_PER_US, pre,
               pre * 1e9 / (host_bps * s->nhosts), dip, post,
               pre > 0 ? post / pre : 0, (double)(P - 1) / (double)P, rec_us,
               ps->srtt_ns / 1e3, ps->min_rtt_ns / 1e3,
               rec_us >= 0 && ps->srtt_ns > 0 ? rec_us * 1e3 / ps->srtt_ns : -1,
               rec_us >= 0 && ps->min_rtt_ns > 0 ? rec_us * 1e3 / ps->min_rtt_ns
                                                 : -1);
    }
    free(tot);
}

/* plane_select engine: what the engines say about their planes. */
static void engine_planes(struct sim *s, struct run_result *res)
{
    res->plane_misaddr = s->plane_misaddr;
    if (s->tp->kind != T_MROCE || !planes_engine(s))
        return;
    uint32_t mn = UINT32_MAX, mx = 0;
    for (uint32_t i = 0; i < s->nhosts; i++)
        for (uint32_t j = 0; j < s->nhosts; j++) {
            mre_qp *qp = s->hosts[i].qp_by_peer[j];
            if (!qp)
                continue;
            struct mre_plane_stats st[SIM_MAX_PLANES];
            int n = mre_qp_plane_stats(qp, st, SIM_MAX_PLANES);
            if (n < 1)
                continue;
            if ((uint32_t)n < mn)
                mn = (uint32_t)n;
            if ((uint32_t)n > mx)
                mx = (uint32_t)n;
            for (int p = 0; p < n && p < SIM_MAX_PLANES; p++) {
                res->eng_down_qps[p] += !st[p].up;
                res->eng_downs[p] += st[p].downs;
                res->eng_tx_pkts[p] += st[p].tx_pkts;
            }
        }
    res->eng_planes_min = mx ? mn : 0;
    res->eng_planes_max = mx;
}

void planes_report(struct sim *s, struct run_result *res)
{
    uint32_t P = s->nplanes;
    res->nplanes = P;
    engine_planes(s, res);
    for (uint32_t li = 0; li < s->nlinks; li++) {
        const struct link *l = &s->links[li];
        if (l->src < s->nhosts)
            res->plane_tx_bytes[link_plane(s, l)] += l->tx_bytes;
    }
    if (!s->sc->planes && !s->sc->bin_ps)
        return;
    uint64_t bytes = 0; /* received: an incomplete run counts what arrived */
    for (uint32_t i = 0; i < s->nmsgs; i++)
        if (!s->msgs[i].bg && (s->msgs[i].done & 1))
            bytes += s->msgs[i].bytes;
    double host_bps = s->nhosts ? planes_host_bps(s, 0) : 0;
    double secs = (double)res->time_ps / 1e12;
    double gbps = secs > 0 ? (double)bytes * 8 / secs / 1e9 : 0;
    uint32_t nflows;
    double jain = flows_jain(s, &nflows);
    printf("planes P=%u tp=%s goodput_gbps=%.1f per_host_gbps=%.2f "
           "host_bw_gbps=%.0f frac=%.4f flows=%u jain=%.4f qps=%llu "
           "bytes_per_qp=%.0f %s plane_bytes=",
           P, s->tp->name, gbps, s->nhosts ? gbps / s->nhosts : 0,
           host_bps / 1e9,
           host_bps > 0 ? gbps * 1e9 / (host_bps * s->nhosts) : 0, nflows, jain,
           (unsigned long long)s->nqps,
           s->nqps && s->tp->kind == T_MROCE
               ? (double)s->qp_mem_bytes / (double)s->nqps
               : 0,
           res->complete ? "complete" : "INCOMPLETE");
    for (uint32_t p = 0; p < P; p++)
        printf("%s%llu", p ? "," : "",
               (unsigned long long)res->plane_tx_bytes[p]);
    if (planes_engine(s) && s->tp->kind == T_MROCE) {
        printf(" eng_planes=%u..%u misaddr=%llu eng_down_qps=",
               res->eng_planes_min, res->eng_planes_max,
               (unsigned long long)res->plane_misaddr);
        for (uint32_t p = 0; p < P; p++)
            printf("%s%u", p ? "," : "", res->eng_down_qps[p]);
        printf(" eng_downs=");
        for (uint32_t p = 0; p < P; p++)
            printf("%s%llu", p ? "," : "",
                   (unsigned long long)res->eng_downs[p]);
    }
    printf("\n");
    FILE *f = open_csv(s, "planes");
    if (f) {
        fprintf(f, "planes,transport,goodput_gbps,frac,flows,jain,qps,"
                   "bytes_per_qp,complete\n");
        fprintf(f, "%u,%s,%.2f,%.4f,%u,%.4f,%llu,%.0f,%d\n", P, s->tp->name,
                gbps, host_bps > 0 ? gbps * 1e9 / (host_bps * s->nhosts) : 0,
                nflows, jain, (unsigned long long)s->nqps,
                s->nqps && s->tp->kind == T_MROCE
                    ? (double)s->qp_mem_bytes / (double)s->nqps
                    : 0,
                res->complete);
        fclose(f);
    }
    bins_report(s, host_bps);
    fflush(stdout);
}

void planes_free(struct sim *s)
{
    if (!s->planes_st)
        return;
    free(s->planes_st->cum);
    free(s->planes_st->t);
    free(s->planes_st);
    s->planes_st = NULL;
}
