/*
 * topo.c - topology builders and routing tables.
 *
 * Builds the node and link arrays for a two-tier leaf-spine or a three-tier
 * fat-tree.  Hosts are numbered so that every switch covers a contiguous
 * range of them; routing is then "down if the destination is in my range
 * (port = (dst - lo) / span), else ECMP over my up ports".  That one rule
 * serves both topologies, and both are up-down (valley-free), so PFC cannot
 * deadlock.
 *
 * Failures: a cable that is DOWN stays in the ECMP groups until routing
 * reconverges (the scenario's detection delay); topo_reroute() then builds,
 * for every switch and destination ToR, the list of up ports that still
 * lead there.  A blackholed cable is never removed: it is silent.  A cable
 * that is L_DOWN_LOCAL is removed only by its own two ends: every other
 * switch still believes in paths through it (no routing protocol).
 *
 * Planes (scenario key `planes`, planes.c): the leaf-spine builder repeats
 * the fabric once per plane; routing needs nothing more, since no switch
 * has a link into another plane and every rule above is per switch.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

/* Links on cache-line boundaries (struct link is aligned to 64 bytes and
 * its first line holds what every hop reads). */
static struct link *links_alloc(size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(struct link);
    struct link *l = aligned_alloc(64, bytes);
    if (l)
        memset(l, 0, bytes);
    return l;
}

static uint32_t add_node(struct sim *s, uint8_t level, const char *pfx,
                         uint32_t i)
{
    struct node *n = &s->nodes[s->nnodes];
    memset(n, 0, sizeof(*n));
    n->kind = level ? N_SWITCH : N_HOST;
    n->level = level;
    snprintf(n->name, sizeof(n->name), "%s%u", pfx, i);
    return s->nnodes++;
}

static uint32_t tier_of(struct sim *s, const char *name)
{
    for (uint32_t i = 0; i < s->ntiers; i++)
        if (!strcmp(s->tier_names[i], name))
            return i;
    s->tier_names[s->ntiers] = name;
    return s->ntiers++;
}

static void set_rate(struct link *l, uint64_t bps)
{
    l->rate_bps = bps;
    l->tx.rate = slink_rate_nearest((double)bps);
}

/* One cable = two directed links; returns the a->b one. */
static uint32_t add_cable(struct sim *s, uint32_t a, uint32_t b, uint64_t bps,
                          const char *tier_ab, const char *tier_ba)
{
    uint32_t i = s->nlinks;
    struct link *ab = &s->links[i], *ba = &s->links[i + 1];
    memset(ab, 0, sizeof(*ab) * 2);
    ab->src = a;
    ab->dst = b;
    ab->peer = i + 1;
    ba->src = b;
    ba->dst = a;
    ba->peer = i;
    set_rate(ab, bps);
    set_rate(ba, bps);
    ab->prop_ps = ba->prop_ps = s->sc->prop_ps;
    ab->tier = (uint8_t)tier_of(s, tier_ab);
    ba->tier = (uint8_t)tier_of(s, tier_ba);
    s->nlinks += 2;
    return i;
}

static int alloc_ports(struct node *n, uint32_t ndown, uint32_t nup)
{
    n->down = calloc(ndown ? ndown : 1, sizeof(uint32_t));
    n->up = calloc(nup ? nup : 1, sizeof(uint32_t));
    return n->down && n->up ? 0 : -1;
}

/* A switch of plane pl: with more than one plane, its name says which
 * ("p1.leaf0"; plane < 8 and at most 65,536 switches a kind: 13 chars). */
static void plane_name(struct node *n, uint32_t np, uint32_t pl,
                       const char *kind, uint32_t i)
{
    n->plane = (uint8_t)pl;
    if (np > 1)
        snprintf(n->name, sizeof(n->name), "p%u.%s%u", pl & 7u, kind,
                 i & 0xffffu);
}

/* The leaf-spine cables of one block whose L leaves, then S spines, are
 * the nodes from `base` on: leaf l's uplink sp to spine sp, whose downlink
 * l comes back.  A plane of build_leafspine and a data centre of
 * build_across are such blocks. */
static void mesh_leaf_spine(struct sim *s, uint32_t base, uint32_t L,
                            uint32_t S)
{
    for (uint32_t l = 0; l < L; l++)
        for (uint32_t sp = 0; sp < S; sp++) {
            uint32_t leaf = base + l, spine = base + L + sp;
            uint32_t li = add_cable(s, leaf, spine, s->sc->fabric_rate,
                                    "tor-spine", "spine-tor");
            s->nodes[leaf].up[sp] = li;
            s->nodes[spine].down[l] = li + 1;
        }
}

/* `planes` (nplanes) parallel leaf-spine planes of the same shape.  Nodes:
 * the hosts, then each plane's leaves and spines; links: every host's cable
 * of plane 0, of plane 1, ... (host_port), then each plane's leaf-spine
 * cables.  One plane is the classic leaf-spine, node and link for node and
 * link; with more, each switch's name starts with its plane ("p1.leaf0"). */
static int build_leafspine(struct sim *s)
{
    const struct scenario *sc = s->sc;
    uint32_t H = sc->hosts, P = sc->hosts_per_tor, S = sc->spines;
    uint32_t NP = s->nplanes;
    if (!P || H % P || !S) {
        fprintf(stderr,
                "leafspine: hosts must be a multiple of hosts_per_tor\n");
        return -1;
    }
    uint32_t L = H / P;
    s->nhosts = H;
    s->ntors = L;
    s->hosts_per_tor = P;
    s->nodes = calloc(H + (size_t)NP * (L + S), sizeof(*s->nodes));
    s->links = links_alloc(2 * (size_t)NP * ((size_t)H + (size_t)L * S));
    if (!s->nodes || !s->links)
        return -1;
    for (uint32_t h = 0; h < H; h++)
        add_node(s, 0, "h", h);
    for (uint32_t pl = 0; pl < NP; pl++) {
        for (uint32_t l = 0; l < L; l++) {
            struct node *n = &s->nodes[add_node(s, 1, "leaf", l)];
            plane_name(n, NP, pl, "leaf", l);
            n->lo = l * P;
            n->hi = n->lo + P;
            n->span = 1;
            n->ndown = P;
            n->nup = S;
            if (alloc_ports(n, P, S) < 0)
                return -1;
        }
        for (uint32_t sp = 0; sp < S; sp++) {
            struct node *n = &s->nodes[add_node(s, 2, "spine", sp)];
            plane_name(n, NP, pl, "spine", sp);
            n->lo = 0;
            n->hi = H;
            n->span = P;
            n->ndown = L;
            n->nup = 0;
            if (alloc_ports(n, L, 0) < 0)
                return -1;
        }
    }
    for (uint32_t pl = 0; pl < NP; pl++)
        for (uint32_t h = 0; h < H; h++) {
            uint32_t leaf = H + pl * (L + S) + h / P;
            uint32_t li = add_cable(s, h, leaf, sc->host_rate, "host-tor",
                                    "tor-host");
            s->nodes[leaf].down[h % P] = li + 1;
        }
    for (uint32_t pl = 0; pl < NP; pl++)
        mesh_leaf_spine(s, H + pl * (L + S), L, S);
    return 0;
}

/* k-ary fat-tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2
 * cores; hosts_per_edge (default k/2) sets the edge oversubscription. */
static int build_fattree(struct sim *s)
{
    const struct scenario *sc = s->sc;
    uint32_t k = sc->k, half = k / 2;
    if (k < 2 || k % 2) {
        fprintf(stderr, "fattree: k must be even and >= 2\n");
        return -1;
    }
    uint32_t hpe = sc->ft_hosts_per_edge ? sc->ft_hosts_per_edge : half;
    uint32_t H = k * half * hpe, E = k * half, A = k * half, C = half * half;
    uint32_t hpp = half * hpe; /* hosts per pod */
    s->nhosts = H;
    s->ntors = E;
    s->hosts_per_tor = hpe;
    s->nodes = calloc(H + E + A + C, sizeof(*s->nodes));
    s->links = links_alloc(2 *
                           ((size_t)H + (size_t)E * half + (size_t)A * half));
    if (!s->nodes || !s->links)
        return -1;
    for (uint32_t h = 0; h < H; h++)
        add_node(s, 0, "h", h);
    for (uint32_t e = 0; e < E; e++) {
        struct node *n = &s->nodes[add_node(s, 1, "edge", e)];
        n->lo = e * hpe;
        n->hi = n->lo + hpe;
        n->span = 1;
        n->ndown = hpe;
        n->nup = half;
        if (alloc_ports(n, hpe, half) < 0)
            return -1;
    }
    for (uint32_t a = 0; a < A; a++) {
        struct node *n = &s->nodes[add_node(s, 2, "agg", a)];
        uint32_t pod = a / half;
        n->lo = pod * hpp;
        n->hi = n->lo + hpp;
        n->span = hpe;
        n->ndown = half;
        n->nup = half;
        if (alloc_ports(n, half, half) < 0)
            return -1;
    }
    for (uint32_t c = 0; c < C; c++) {
        struct node *n = &s->nodes[add_node(s, 3, "core", c)];
        n->lo = 0;
        n->hi = H;
        n->span = hpp;
        n->ndown = k;
        n->nup = 0;
        if (alloc_ports(n, k, 0) < 0)
            return -1;
    }
    uint32_t E0 = H, A0 = H + E, C0 = H + E + A;
    for (uint32_t h = 0; h < H; h++) {
        uint32_t edge = E0 + h / hpe;
        uint32_t li = add_cable(s, h, edge, sc->host_rate, "host-tor",
                                "tor-host");
        s->nodes[edge].down[h % hpe] = li + 1;
    }
    for (uint32_t e = 0; e < E; e++) {
        uint32_t pod = e / half;
        for (uint32_t j = 0; j < half; j++) {
            uint32_t agg = A0 + pod * half + j;
            uint32_t li = add_cable(s, E0 + e, agg, sc->fabric_rate, "tor-agg",
                                    "agg-tor");
            s->nodes[E0 + e].up[j] = li;
            s->nodes[agg].down[e % half] = li + 1;
        }
    }
    for (uint32_t a = 0; a < A; a++) {
        uint32_t pod = a / half, j = a % half;
        for (uint32_t m = 0; m < half; m++) {
            uint32_t core = C0 + j * half + m;
            uint32_t li = add_cable(s, A0 + a, core, sc->fabric_rate,
                                    "agg-core", "core-agg");
            s->nodes[A0 + a].up[m] = li;
            s->nodes[core].down[pod] = li + 1;
        }
    }
    return 0;
}

/* Scale-across (across.c's keys): dcs leaf-spines of hosts / dcs hosts
 * each, joined by lh_links WAN nodes.  WAN node j has one long-haul cable
 * into every data centre, to spine j % spines there, at lh_rate with DC
 * d's leg delay; routing stays up-down (a WAN node covers all hosts, one
 * down port per DC), so a spine without a WAN cable is left out of its
 * leaves' tables for the other DCs (topo_reroute() at build).  Nodes: the
 * hosts, then per DC its leaves and spines ("dc1.leaf0"), then "wan0"... */
static int build_across(struct sim *s)
{
    const struct scenario *sc = s->sc;
    uint32_t D = sc->dcs ? sc->dcs : 2, W = sc->lh_links ? sc->lh_links : 1;
    uint32_t H = sc->hosts, P = sc->hosts_per_tor, S = sc->spines;
    if (D < 2 || D > SIM_MAX_DCS || !P || !S || H % (D * P)) {
        fprintf(stderr,
                "across: 2..%d dcs; hosts a multiple of dcs x "
                "hosts_per_tor\n",
                SIM_MAX_DCS);
        return -1;
    }
    uint32_t Hd = H / D, L = Hd / P;
    s->nhosts = H;
    s->ntors = D * L;
    s->hosts_per_tor = P;
    s->nodes = calloc(H + (size_t)D * (L + S) + W, sizeof(*s->nodes));
    s->links = links_alloc(2 * ((size_t)H + (size_t)D * L * S + (size_t)D * W));
    if (!s->nodes || !s->links)
        return -1;
    for (uint32_t h = 0; h < H; h++)
        add_node(s, 0, "h", h);
    for (uint32_t d = 0; d < D; d++) {
        for (uint32_t l = 0; l < L; l++) {
            struct node *n = &s->nodes[add_node(s, 1, "leaf", l)];
            snprintf(n->name, sizeof(n->name), "dc%u.leaf%u", d, l & 0xffffu);
            n->lo = d * Hd + l * P;
            n->hi = n->lo + P;
            n->span = 1;
            n->ndown = P;
            n->nup = S;
            if (alloc_ports(n, P, S) < 0)
                return -1;
        }
        for (uint32_t sp = 0; sp < S; sp++) {
            struct node *n = &s->nodes[add_node(s, 2, "spine", sp)];
            snprintf(n->name, sizeof(n->name), "dc%u.spine%u", d, sp & 0xffffu);
            n->lo = d * Hd;
            n->hi = n->lo + Hd;
            n->span = P;
            n->ndown = L;
            n->nup = sp < W ? (W - sp + S - 1) / S : 0;
            if (alloc_ports(n, L, n->nup) < 0)
                return -1;
        }
    }
    uint32_t W0 = H + D * (L + S);
    for (uint32_t j = 0; j < W; j++) {
        struct node *n = &s->nodes[add_node(s, 3, "wan", j)];
        n->lo = 0;
        n->hi = H;
        n->span = Hd;
        n->ndown = D;
        n->nup = 0;
        if (alloc_ports(n, D, 0) < 0)
            return -1;
    }
    for (uint32_t h = 0; h < H; h++) {
        uint32_t leaf = H + (h / Hd) * (L + S) + (h % Hd) / P;
        uint32_t li = add_cable(s, h, leaf, sc->host_rate, "host-tor",
                                "tor-host");
        s->nodes[leaf].down[h % P] = li + 1;
    }
    for (uint32_t d = 0; d < D; d++)
        mesh_leaf_spine(s, H + d * (L + S), L, S);
    uint64_t lh = sc->lh_rate ? sc->lh_rate : sc->fabric_rate;
    for (uint32_t d = 0; d < D; d++)
        for (uint32_t j = 0; j < W; j++) {
            uint32_t spine = H + d * (L + S) + L + j % S;
            uint32_t li = add_cable(s, spine, W0 + j, lh, "spine-wan",
                                    "wan-spine");
            s->links[li].prop_ps = s->links[li + 1].prop_ps =
                sc->lh_delay_ps[d] ? sc->lh_delay_ps[d] : sc->prop_ps;
            s->nodes[spine].up[j / S] = li;
            s->nodes[W0 + j].down[d] = li + 1;
        }
    return W < S ? topo_reroute(s) : 0;
}

int topo_build(struct sim *s)
{
    int rc;
    s->nplanes = s->sc->planes ? s->sc->planes : 1;
    if (s->nplanes > 1 && strcmp(s->sc->topo, "leafspine")) {
        fprintf(stderr, "planes: only the leafspine topology has planes\n");
        return -1;
    }
    if (!strcmp(s->sc->topo, "leafspine"))
        rc = build_leafspine(s);
    else if (!strcmp(s->sc->topo, "fattree"))
        rc = build_fattree(s);
    else if (!strcmp(s->sc->topo, "across"))
        rc = build_across(s);
    else {
        fprintf(stderr, "unknown topology '%s'\n", s->sc->topo);
        return -1;
    }
    if (rc < 0)
        return rc;
    uint64_t salt = s->sc->seed ^ 0x5eedULL;
    for (uint32_t i = 0; i < s->nnodes; i++)
        s->nodes[i].salt = rng_next(&salt);
    return vendors_apply(s);
}

void topo_free(struct sim *s)
{
    for (uint32_t i = 0; i < s->nnodes; i++) {
        free(s->nodes[i].down);
        free(s->nodes[i].up);
        free(s->nodes[i].rt);
        free(s->nodes[i].rt_n);
    }
    free(s->nodes);
    free(s->links);
    s->nodes = NULL;
    s->links = NULL;
}

static int in_range(const struct node *n, uint32_t tor, uint32_t hpt)
{
    uint32_t h = tor * hpt;
    return h >= n->lo && h < n->hi;
}

int topo_reroute(struct sim *s)
{
    uint32_t N = s->nnodes, T = s->ntors, hpt = s->hosts_per_tor;
    uint8_t *dr = calloc((size_t)N * T, 1), *ur = calloc((size_t)N * T, 1);
    if (!dr || !ur) {
        free(dr);
        free(ur);
        return -1;
    }
    uint8_t maxlvl = 0;
    for (uint32_t i = s->nhosts; i < N; i++)
        if (s->nodes[i].level > maxlvl)
            maxlvl = s->nodes[i].level;
    /* down-reachability, bottom up */
    for (uint8_t lv = 1; lv <= maxlvl; lv++)
        for (uint32_t i = s->nhosts; i < N; i++) {
            struct node *n = &s->nodes[i];
            if (n->level != lv)
                continue;
            for (uint32_t t = 0; t < T; t++) {
                if (!in_range(n, t, hpt))
                    continue;
                if (lv == 1) {
                    dr[(size_t)i * T + t] = 1;
                    continue;
                }
                const struct link *l =
                    &s->links[n->down[(t * hpt - n->lo) / n->span]];
                /* what this node announces: a local-only failure below it
                 * is not told upwards */
                dr[(size_t)i * T + t] = l->state != L_DOWN &&
                                        dr[(size_t)l->dst * T + t];
            }
        }
    /* up-reachability and tables, top down */
    for (int lv = maxlvl; lv >= 1; lv--)
        for (uint32_t i = s->nhosts; i < N; i++) {
            struct node *n = &s->nodes[i];
            if (n->level != lv || !n->nup)
                continue;
            if (!n->rt) {
                n->rt = calloc((size_t)T * n->nup, sizeof(uint32_t));
                n->rt_n = calloc(T, sizeof(uint16_t));
                if (!n->rt || !n->rt_n) {
                    free(dr);
                    free(ur);
                    return -1;
                }
            }
            for (uint32_t t = 0; t < T; t++) {
                uint16_t cnt = 0, ann = 0; /* usable here / as announced */
                if (!in_range(n, t, hpt))
                    for (uint32_t p = 0; p < n->nup; p++) {
                        const struct link *l = &s->links[n->up[p]];
                        const struct node *m = &s->nodes[l->dst];
                        int beyond = in_range(m, t, hpt)
                                         ? dr[(size_t)l->dst * T + t]
                                         : ur[(size_t)l->dst * T + t];
                        if (l->state != L_DOWN && beyond)
                            ann++;
                        if (l->state != L_DOWN && l->state != L_DOWN_LOCAL &&
                            beyond)
                            n->rt[(size_t)t * n->nup + cnt++] = n->up[p];
                    }
                n->rt_n[t] = cnt;
                ur[(size_t)i * T + t] = ann > 0;
            }
        }
    free(dr);
    free(ur);
    return 0;
}

uint32_t topo_find_link(const struct sim *s, const char *a, const char *b)
{
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const struct link *l = &s->links[i];
        if (!strcmp(s->nodes[l->src].name, a) &&
            !strcmp(s->nodes[l->dst].name, b))
            return i;
    }
    return NONE32;
}
