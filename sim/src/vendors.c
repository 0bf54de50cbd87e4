/*
 * vendors.c - per-switch differences in one fabric (a mixed-vendor fabric).
 *
 * The scenario's `buffer`, `ecn_kmin`, `ecn_kmax` and `ecn_pmax` apply to
 * every switch queue; each `switch = SELECTOR key=value ...` line changes
 * them for the switches it selects, as switches of another vendor or
 * model would differ in one fabric:
 *
 *   switch = spine buffer=256K ecn=step ecn_kmin=24K
 *   switch = leaf3 hash=l3
 *
 * SELECTOR is a tier (`leaf` or `tor`, `spine` or `agg`, `core`), one
 * switch's name (`leaf3`, `p1.spine0`; a tier selects every plane's), or
 * the links of one tier by its name in tiers.csv (`tor-host`, the leaves'
 * host ports; `tor-spine`, their uplinks): a switch with ports of two
 * speeds has a profile per speed.  `hash` applies to switches only.
 * Keys: `buffer` (the egress queue's drop-tail limit), `ecn` (`red`: a
 * ramp from ecn_kmin to ecn_kmax up to ecn_pmax; `step`: every packet
 * above ecn_kmin, the one threshold of switches without a ramp; `off`),
 * `ecn_kmin`, `ecn_kmax`, `ecn_pmax`, and `hash`: the ECMP hash the
 * switch uses to pick an up port (`5tuple`, the default, with the UDP
 * source port that MetaRoCE uses as path entropy; `l3`, addresses only,
 * as a switch whose hash policy leaves out the L4 ports, so that every
 * entropy of a host pair takes one port; `xor`, the 5-tuple folded by
 * XOR and one multiply: another ASIC's function, with its own spread).
 * Later lines win over earlier ones for a switch both select.  Without
 * `switch` lines every queue gets the scenario's values, as before.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

enum {
    SWP_BUFFER = 1,
    SWP_KMIN = 2,
    SWP_KMAX = 4,
    SWP_PMAX = 8,
    SWP_HASH = 16,
    SWP_ECN = 32,
    SWP_STEP = 64
};

static int parse_bytes(const char *v, uint32_t *out)
{
    char *e;
    double x = strtod(v, &e);
    if (e == v || x < 0)
        return -1;
    if (*e == 'K' || *e == 'k')
        x *= 1024, e++;
    else if (*e == 'M' || *e == 'm')
        x *= 1024 * 1024, e++;
    if (*e == 'i')
        e++;
    if (*e == 'B')
        e++;
    if (*e || x > 4e9)
        return -1;
    *out = (uint32_t)x;
    return 0;
}

static int set_one(struct swprof *p, const char *k, const char *v)
{
    if (!strcmp(k, "buffer")) {
        p->set |= SWP_BUFFER;
        return parse_bytes(v, &p->buffer);
    }
    if (!strcmp(k, "ecn_kmin")) {
        p->set |= SWP_KMIN;
        return parse_bytes(v, &p->kmin);
    }
    if (!strcmp(k, "ecn_kmax")) {
        p->set |= SWP_KMAX;
        return parse_bytes(v, &p->kmax);
    }
    if (!strcmp(k, "ecn_pmax")) {
        char *e;
        p->pmax = strtod(v, &e);
        p->set |= SWP_PMAX;
        return *e || e == v || p->pmax < 0 || p->pmax > 1 ? -1 : 0;
    }
    if (!strcmp(k, "ecn")) {
        p->set = (p->set | SWP_ECN) & ~(uint32_t)SWP_STEP;
        p->ecn_off = !strcmp(v, "off");
        if (!strcmp(v, "step"))
            p->set |= SWP_STEP;
        return !strcmp(v, "red") || !strcmp(v, "step") || p->ecn_off ? 0 : -1;
    }
    if (!strcmp(k, "hash")) {
        p->set |= SWP_HASH;
        if (!strcmp(v, "5tuple"))
            p->hash = HASH_5TUPLE;
        else if (!strcmp(v, "l3"))
            p->hash = HASH_L3;
        else if (!strcmp(v, "xor"))
            p->hash = HASH_XOR;
        else
            return -1;
        return 0;
    }
    return 1;
}

int vendors_scenario_set(struct scenario *sc, const char *key, const char *val,
                         const char *where)
{
    if (strcmp(key, "switch"))
        return 1;
    if (sc->nswp >= MAX_SWPROF) {
        fprintf(stderr, "%s: at most %d switch lines\n", where, MAX_SWPROF);
        return -1;
    }
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", val);
    struct swprof *p = &sc->swp[sc->nswp];
    memset(p, 0, sizeof(*p));
    char *save = NULL;
    char *tok = strtok_r(buf, " \t", &save);
    if (!tok || strchr(tok, '=') || strlen(tok) >= sizeof(p->sel)) {
        fprintf(stderr, "%s: switch: want 'SELECTOR key=value ...'\n", where);
        return -1;
    }
    snprintf(p->sel, sizeof(p->sel), "%s", tok);
    while ((tok = strtok_r(NULL, " \t", &save))) {
        char *eq = strchr(tok, '=');
        int rc = -1;
        if (eq) {
            *eq = 0;
            rc = set_one(p, tok, eq + 1);
        }
        if (rc) {
            fprintf(stderr, "%s: switch %s: bad setting '%s'%s\n", where,
                    p->sel, tok, rc > 0 ? " (unknown key)" : "");
            return -1;
        }
    }
    if (!p->set) {
        fprintf(stderr, "%s: switch %s: nothing set\n", where, p->sel);
        return -1;
    }
    sc->nswp++;
    return 0;
}

/* Whether profile p selects switch n: by tier, or by name (with or without
 * the plane prefix "pN."). */
static int selects(const struct swprof *p, const struct node *n)
{
    static const char *const tiers[][2] = {{"leaf", "tor"},
                                           {"spine", "agg"},
                                           {"core", "core"}};
    if (n->kind != N_SWITCH)
        return 0;
    if (n->level >= 1 && n->level <= 3 &&
        (!strcmp(p->sel, tiers[n->level - 1][0]) ||
         !strcmp(p->sel, tiers[n->level - 1][1])))
        return 1;
    if (!strcmp(p->sel, n->name))
        return 1;
    const char *dot = strchr(n->name, '.');
    return dot && !strchr(p->sel, '.') && !strcmp(p->sel, dot + 1);
}

int vendors_apply(struct sim *s)
{
    const struct scenario *sc = s->sc;
    for (uint32_t i = 0; i < s->nlinks; i++) {
        struct link *l = &s->links[i];
        l->q_limit = sc->buffer;
        l->q_kmin = sc->ecn_kmin;
        l->q_kmax = sc->ecn_kmax;
        l->q_pmax = sc->ecn_pmax;
    }
    for (uint32_t j = 0; j < sc->nswp; j++) {
        const struct swprof *p = &sc->swp[j];
        int hit = 0;
        for (uint32_t i = 0; i < s->nnodes; i++)
            if (selects(p, &s->nodes[i])) {
                hit = 1;
                if (p->set & SWP_HASH)
                    s->nodes[i].hash = p->hash;
            }
        for (uint32_t i = 0; i < s->nlinks; i++) {
            struct link *l = &s->links[i];
            if (!selects(p, &s->nodes[l->src]) &&
                strcmp(p->sel, s->tier_names[l->tier]))
                continue;
            hit = 1;
            if (p->set & SWP_BUFFER)
                l->q_limit = p->buffer;
            if (p->set & SWP_KMIN)
                l->q_kmin = p->kmin;
            if (p->set & SWP_KMAX)
                l->q_kmax = p->kmax;
            if (p->set & SWP_PMAX)
                l->q_pmax = p->pmax;
            if (p->set & SWP_STEP)
                l->q_kmax = l->q_kmin; /* every packet above the step */
            if (p->ecn_off)
                l->q_kmin = l->q_kmax = UINT32_MAX; /* never marks */
        }
        if (!hit) {
            fprintf(stderr, "switch %s: selects no switch or link tier\n",
                    p->sel);
            return -1;
        }
    }
    return 0;
}

uint32_t vendors_hash(const struct node *n, uint32_t src, uint32_t dst,
                      uint16_t entropy)
{
    uint64_t k;
    if (n->hash == HASH_L3) {
        k = ((uint64_t)src << 32 | dst) ^ n->salt;
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdULL;
        k ^= k >> 33;
        return (uint32_t)(k >> 32);
    }
    /* HASH_XOR: the fields folded together, then one multiply */
    uint32_t x = src ^ dst ^ entropy ^ 4794u ^ 17u ^ (uint32_t)n->salt;
    return (uint32_t)(x * 0x9e3779b1u);
}
