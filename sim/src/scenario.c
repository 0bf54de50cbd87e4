/*
 * scenario.c - the scenario file parser.
 *
 * A scenario is plain text, one `key = value` per line, `#` comments, or
 * the same keys as one JSON object (scenario_json.c).
 * Sizes take K/M/G suffixes (binary: 1K = 1024 bytes), rates G/M (decimal
 * bit/s: 100G), times ns/us/ms/s.  Three keys take structured values and
 * may repeat: `workload = KIND opt=val ...`, `fault = TIME KIND NODE NODE
 * [VALUE] [detect=TIME] [local]` and `transports = NAME, NAME, ...`.  Every key is
 * listed with its default in sim/README.md.  Command-line `-s key=value`
 * goes through the same scenario_set().
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void scenario_defaults(struct scenario *sc)
{
    memset(sc, 0, sizeof(*sc));
    snprintf(sc->name, sizeof(sc->name), "scenario");
    sc->seed = 1;
    snprintf(sc->topo, sizeof(sc->topo), "leafspine");
    sc->hosts = 16;
    sc->hosts_per_tor = 4;
    sc->spines = 4;
    sc->k = 4;
    sc->host_rate = 100000000000ULL;
    sc->fabric_rate = 100000000000ULL;
    sc->prop_ps = 1 * PS_PER_US;
    sc->buffer = 1u << 20;
    sc->ecn_kmin = 100 * 1024;
    sc->ecn_kmax = 400 * 1024;
    sc->ecn_pmax = 0.2;
    sc->pfc_xoff = 256 * 1024;
    sc->pfc_xon = 128 * 1024;
    sc->mtu = 4096;
    sc->qp_window = 256;
    sc->qp_npaths = 32;
    sc->qp_sq = 16;
    sc->qp_rq = 16;
    sc->roce_rto_ps = 1 * PS_PER_MS;
    sc->roce_retry = 7;
    sc->roce_ack_every = 4;
    sc->limit_ps = 1000 * PS_PER_MS;
    sc->progress = 1;
}

static int parse_num(const char *v, double *out, const char **rest)
{
    char *end;
    *out = strtod(v, &end);
    if (end == v)
        return -1;
    *rest = end;
    return 0;
}

static int parse_size(const char *v, uint64_t *out)
{
    double d;
    const char *r;
    if (parse_num(v, &d, &r) < 0)
        return -1;
    double mul = 1;
    switch (toupper((unsigned char)*r)) {
    case 'K':
        mul = 1024;
        break;
    case 'M':
        mul = 1024.0 * 1024;
        break;
    case 'G':
        mul = 1024.0 * 1024 * 1024;
        break;
    case 0:
    case 'B':
        break;
    default:
        return -1;
    }
    *out = (uint64_t)(d * mul + 0.5);
    return 0;
}

static int parse_rate(const char *v, uint64_t *out)
{
    double d;
    const char *r;
    if (parse_num(v, &d, &r) < 0)
        return -1;
    double mul = 1;
    switch (toupper((unsigned char)*r)) {
    case 'K':
        mul = 1e3;
        break;
    case 'M':
        mul = 1e6;
        break;
    case 'G':
        mul = 1e9;
        break;
    case 'T':
        mul = 1e12;
        break;
    case 0:
        break;
    default:
        return -1;
    }
    *out = (uint64_t)(d * mul + 0.5);
    return *out >= 1000 ? 0 : -1;
}

static int parse_time(const char *v, uint64_t *out)
{
    double d;
    const char *r;
    if (parse_num(v, &d, &r) < 0)
        return -1;
    double mul;
    if (!strncmp(r, "ps", 2))
        mul = 1;
    else if (!strncmp(r, "ns", 2) || !*r)
        mul = 1e3;
    else if (!strncmp(r, "us", 2))
        mul = 1e6;
    else if (!strncmp(r, "ms", 2))
        mul = 1e9;
    else if (!strncmp(r, "s", 1))
        mul = 1e12;
    else
        return -1;
    *out = (uint64_t)(d * mul + 0.5);
    return 0;
}

static int parse_workload(struct scenario *sc, char *v, const char *where)
{
    if (sc->nwl == MAX_WL) {
        fprintf(stderr, "%s: too many workloads\n", where);
        return -1;
    }
    struct wl_cfg *w = &sc->wl[sc->nwl];
    memset(w, 0, sizeof(*w));
    w->bytes = 1 << 20;
    w->msg = 1 << 20;
    w->window = 8;
    w->fraction = 0.5;
    char *save, *tok = strtok_r(v, " \t", &save);
    if (!tok)
        return -1;
    if (!strcmp(tok, "allreduce")) {
        w->kind = WL_ALLREDUCE;
        w->msg = 256 << 10;
    } else if (!strcmp(tok, "alltoall")) {
        w->kind = WL_ALLTOALL;
    } else if (!strcmp(tok, "permutation")) {
        w->kind = WL_PERM;
        w->window = 2;
    } else if (!strcmp(tok, "incast")) {
        w->kind = WL_INCAST;
        w->window = 2;
    } else if (!strcmp(tok, "flows")) { /* across.c */
        w->kind = WL_FLOWS;
        w->window = 2;
    } else if (!strcmp(tok, "read")) { /* across.c */
        w->kind = WL_READ;
        w->window = 1u << 30; /* every request at once */
        w->dst_lo = NONE32;
    } else {
        fprintf(stderr, "%s: unknown workload '%s'\n", where, tok);
        return -1;
    }
    while ((tok = strtok_r(NULL, " \t", &save))) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            fprintf(stderr, "%s: expected opt=value, got '%s'\n", where, tok);
            return -1;
        }
        *eq = 0;
        const char *k = tok, *val = eq + 1;
        uint64_t u = 0;
        int bad = 0;
        if (!strcmp(k, "bytes"))
            bad = parse_size(val, &w->bytes);
        else if (!strcmp(k, "msg") || !strcmp(k, "slice")) {
            bad = parse_size(val, &u) || !u || u > (1u << 30);
            w->msg = (uint32_t)u;
        } else if (!strcmp(k, "window") || !strcmp(k, "slots") ||
                   !strcmp(k, "active"))
            w->window = (uint32_t)atoi(val), bad = !w->window;
        else if (!strcmp(k, "ranks"))
            w->ranks = (uint32_t)atoi(val);
        else if (!strcmp(k, "senders"))
            w->senders = (uint32_t)atoi(val);
        else if (!strcmp(k, "order"))
            w->random_order = !strcmp(val, "random");
        else if (!strcmp(k, "background"))
            w->background = (uint8_t)atoi(val);
        else if (!strcmp(k, "fraction"))
            w->fraction = atof(val);
        else if ((bad = across_wl_option(w, k, val)) <= 0)
            bad = -bad;
        else {
            fprintf(stderr, "%s: unknown workload option '%s'\n", where, k);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "%s: bad value for %s\n", where, k);
            return -1;
        }
    }
    sc->nwl++;
    return 0;
}

static int parse_fault(struct scenario *sc, char *v, const char *where)
{
    if (sc->nfaults == MAX_FAULTS)
        return -1;
    struct fault *f = &sc->faults[sc->nfaults];
    memset(f, 0, sizeof(*f));
    char *save;
    char *t = strtok_r(v, " \t", &save), *kind = strtok_r(NULL, " \t", &save);
    char *a = strtok_r(NULL, " \t", &save), *b = strtok_r(NULL, " \t", &save);
    if (t && kind && parse_time(t, &f->t) == 0) { /* planes.c's kinds */
        int rc = planes_parse_fault(f, kind, a, b, where);
        if (rc <= 0) {
            sc->nfaults += rc == 0;
            return rc;
        }
    }
    if (!t || !kind || !a || !b || parse_time(t, &f->t) < 0) {
        fprintf(stderr, "%s: fault = TIME KIND NODE NODE [VALUE]\n", where);
        return -1;
    }
    snprintf(f->a, sizeof(f->a), "%s", a);
    snprintf(f->b, sizeof(f->b), "%s", b);
    f->detect_ps = 1 * PS_PER_MS;
    if (!strcmp(kind, "down"))
        f->kind = F_DOWN;
    else if (!strcmp(kind, "blackhole"))
        f->kind = F_BLACKHOLE;
    else if (!strcmp(kind, "up"))
        f->kind = F_UP;
    else if (!strcmp(kind, "loss"))
        f->kind = F_LOSS;
    else if (!strcmp(kind, "rate"))
        f->kind = F_RATE;
    else {
        fprintf(stderr, "%s: unknown fault '%s'\n", where, kind);
        return -1;
    }
    char *tok;
    while ((tok = strtok_r(NULL, " \t", &save))) {
        uint64_t u = 0;
        if (!strncmp(tok, "detect=", 7)) {
            if (parse_time(tok + 7, &f->detect_ps) < 0)
                return -1;
        } else if (f->kind == F_DOWN && !strcmp(tok, "local")) {
            f->local = 1;
        } else if (f->kind == F_LOSS) {
            f->val = atof(tok);
        } else if (f->kind == F_RATE) {
            if (parse_rate(tok, &u) < 0)
                return -1;
            f->val = (double)u;
        }
    }
    sc->nfaults++;
    return 0;
}

static int parse_transports(struct scenario *sc, char *v, const char *where)
{
    char *save, *tok;
    sc->ntp = 0;
    for (tok = strtok_r(v, ", \t", &save); tok;
         tok = strtok_r(NULL, ", \t", &save)) {
        if (sc->ntp == MAX_TP)
            return -1;
        struct tp_cfg *t = &sc->tp[sc->ntp];
        memset(t, 0, sizeof(*t));
        snprintf(t->name, sizeof(t->name), "%s", tok);
        if (!strcmp(tok, "mroce")) {
            t->kind = T_MROCE;
            t->cc = MROCE_CC_DELAY_ECN;
        } else if (!strcmp(tok, "mroce_fixed")) {
            t->kind = T_MROCE;
            t->cc = MROCE_CC_NONE;
        } else if (!strcmp(tok, "mroce_ask")) {
            t->kind = T_MROCE; /* hints, and a share request before data
                                  after an idle spell (CC-30..35) */
            t->cc = MROCE_CC_DELAY_ECN;
            t->ask = 1;
        } else if (!strcmp(tok, "mroce_hint1")) {
            t->kind = T_MROCE; /* hints without share requests: rate_hint
                                  1, the default before CC-36 */
            t->cc = MROCE_CC_DELAY_ECN;
            t->hint1 = 1;
        } else if (!strcmp(tok, "mroce_nohint")) {
            t->kind = T_MROCE; /* delay+ECN with per-path windows only */
            t->cc = MROCE_CC_DELAY_ECN;
            t->nohint = 1;
        } else if (!strcmp(tok, "mroce_classic")) {
            t->kind = T_MROCE; /* one window, no hints (before CC-20..29) */
            t->cc = MROCE_CC_DELAY_ECN;
            t->nohint = 1;
            t->nopcwnd = 1;
        } else if (!strcmp(tok, "mroce_sack256")) {
            t->kind = T_MROCE; /* the default without the SACK extension:
                                  ACKs report 256 PSNs (WIRE-19, WIRE-52) */
            t->cc = MROCE_CC_DELAY_ECN;
            t->sack256 = 1;
        } else if (!strcmp(tok, "mroce_credit")) {
            t->kind = T_MROCE;
            t->cc = MROCE_CC_DELAY_ECN;
            t->credit = 1;
        } else if (!strcmp(tok, "roce")) {
            t->kind = T_ROCE;
            t->dcqcn = 1;
        } else if (!strcmp(tok, "roce_pfc")) {
            t->kind = T_ROCE;
            t->dcqcn = 1;
            t->pfc = 1;
        } else if (!strcmp(tok, "roce_nocc")) {
            t->kind = T_ROCE;
        } else {
            fprintf(stderr, "%s: unknown transport '%s'\n", where, tok);
            return -1;
        }
        sc->ntp++;
    }
    return sc->ntp ? 0 : -1;
}

int scenario_set(struct scenario *sc, const char *key, const char *val,
                 const char *where)
{
    uint64_t u = 0;
    int bad = 0;
    char tmp[512];
    snprintf(tmp, sizeof(tmp), "%s", val);
#define SIZE32(name, field)        \
    else if (!strcmp(key, name))   \
    {                              \
        bad = parse_size(val, &u); \
        sc->field = (uint32_t)u;   \
    }
#define INT32(name, field)                           \
    else if (!strcmp(key, name))                     \
    {                                                \
        sc->field = (uint32_t)strtoul(val, NULL, 0); \
    }
#define TIME(name, field)                  \
    else if (!strcmp(key, name))           \
    {                                      \
        bad = parse_time(val, &sc->field); \
    }
#define RATE(name, field)                  \
    else if (!strcmp(key, name))           \
    {                                      \
        bad = parse_rate(val, &sc->field); \
    }
    if (!strcmp(key, "name"))
        snprintf(sc->name, sizeof(sc->name), "%s", val);
    else if (!strcmp(key, "seed"))
        sc->seed = strtoull(val, NULL, 0);
    else if (!strcmp(key, "topology"))
        snprintf(sc->topo, sizeof(sc->topo), "%s", val);
    else if (!strcmp(key, "out"))
        snprintf(sc->outdir, sizeof(sc->outdir), "%s", val);
    else if (!strcmp(key, "progress"))
        sc->progress = atoi(val);
    else if (!strcmp(key, "ecn_pmax"))
        sc->ecn_pmax = atof(val);
    else if (!strcmp(key, "timer_tick")) /* gone: timers are exact now */
        fprintf(stderr,
                "%s: timer_tick is ignored (engine timers fire "
                "exactly on time)\n",
                where);
    else if (!strcmp(key, "workload"))
        return parse_workload(sc, tmp, where);
    else if (!strcmp(key, "fault"))
        return parse_fault(sc, tmp, where);
    else if (!strcmp(key, "transports"))
        return parse_transports(sc, tmp, where);
    /* clang-format off */
    INT32("hosts", hosts) INT32("hosts_per_tor", hosts_per_tor)
    INT32("spines", spines) INT32("k", k)
    INT32("hosts_per_edge", ft_hosts_per_edge)
    INT32("qp_window", qp_window) INT32("qp_npaths", qp_npaths)
    INT32("qp_sq", qp_sq) INT32("qp_rq", qp_rq) INT32("mtu", mtu)
    INT32("roce_retry", roce_retry) INT32("roce_ack_every", roce_ack_every)
    SIZE32("buffer", buffer) SIZE32("ecn_kmin", ecn_kmin)
    SIZE32("ecn_kmax", ecn_kmax) SIZE32("pfc_xoff", pfc_xoff)
    SIZE32("pfc_xon", pfc_xon) SIZE32("qp_init_cwnd", qp_init_cwnd)
    TIME("qp_target_qdelay", qp_target_qdelay_ps)
    TIME("delay", prop_ps)
    TIME("roce_rto", roce_rto_ps) TIME("limit", limit_ps)
    TIME("report", report_ps) TIME("qp_min_rto", qp_min_rto_ps)
    INT32("qp_path_burst", qp_path_burst)
    INT32("qp_path_reuse", qp_path_reuse)
    RATE("host_rate", host_rate) RATE("fabric_rate", fabric_rate)
    else {
        int rc = planes_scenario_set(sc, key, val, where);
        if (rc > 0)
            rc = across_scenario_set(sc, key, val, where);
        if (rc > 0)
            rc = vendors_scenario_set(sc, key, val, where);
        if (rc <= 0)
            return rc;
        fprintf(stderr, "%s: unknown key '%s'\n", where, key);
        return -1;
    }
    /* clang-format on */
#undef SIZE32
#undef INT32
#undef TIME
#undef RATE
    if (bad) {
        fprintf(stderr, "%s: bad value '%s' for %s\n", where, val, key);
        return -1;
    }
    return 0;
}

static char *trim(char *p)
{
    while (isspace((unsigned char)*p))
        p++;
    char *e = p + strlen(p);
    while (e > p && isspace((unsigned char)e[-1]))
        *--e = 0;
    return p;
}

int scenario_load(struct scenario *sc, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char line[1024], where[300];
    int ln = 0, rc = 0, c;
    while ((c = fgetc(f)) != EOF && isspace(c))
        ;
    if (c == '{') { /* JSON (scenario_json.c) */
        size_t cap = 1 << 16, n = 0;
        char *text = malloc(cap);
        if (!text) {
            fclose(f);
            return -1;
        }
        text[n++] = '{';
        while ((c = fgetc(f)) != EOF) {
            if (n + 1 == cap) {
                char *t = realloc(text, cap *= 2);
                if (!t) {
                    free(text);
                    fclose(f);
                    return -1;
                }
                text = t;
            }
            text[n++] = (char)c;
        }
        fclose(f);
        rc = scenario_load_json(sc, path, text, n);
        free(text);
        goto done;
    }
    rewind(f);
    while (fgets(line, sizeof(line), f)) {
        ln++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *p = trim(line);
        if (!*p)
            continue;
        char *eq = strchr(p, '=');
        snprintf(where, sizeof(where), "%s:%d", path, ln);
        if (!eq) {
            fprintf(stderr, "%s: expected key = value\n", where);
            rc = -1;
            break;
        }
        *eq = 0;
        if (scenario_set(sc, trim(p), trim(eq + 1), where) < 0) {
            rc = -1;
            break;
        }
    }
    fclose(f);
done:
    if (!rc && !sc->nwl) {
        fprintf(stderr, "%s: no workload\n", path);
        rc = -1;
    }
    if (!rc && !sc->ntp) {
        char d[] = "mroce";
        rc = parse_transports(sc, d, path);
    }
    return rc;
}
