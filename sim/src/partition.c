/*
 * partition.c - how a run splits across ranks: the partition of the
 * fabric for a parallel (conservative, window-synchronised) mroce-sim,
 * the ranks' event queues, and what that partition costs.
 *
 * part_plan() assigns every node to one of R ranks: the hosts in
 * contiguous blocks of whole ToR groups (a ToR with its hosts, so the
 * host-ToR cables, the busiest, never cross), each switch to the rank
 * that owns all the hosts below it, and the switches whose hosts span
 * ranks (spines, cores, the aggregation of a pod that is split) in
 * contiguous blocks of their level.  The lookahead is the smallest
 * propagation delay of a link whose ends are on different ranks: no event
 * of one rank can affect another sooner than that, so every rank may run
 * a window of that length without hearing from the others.
 *
 * With MROCE_SIM_PARTITION=R the measured part of the run executes that
 * way in one process: part_plan() gives each rank its own event queue
 * (s->pq) and one queue (s->gq) to the events every rank applies;
 * part_queue() routes each scheduled event to the rank that runs it
 * (part_owner) and refuses one that would reach another rank inside the
 * running window; run.c's loop runs the windows.
 *
 * part_count() sees every event of the run (run.c's loop, when
 * MROCE_SIM_PARTITION=R is set) and charges it to the rank that would run
 * it: an arrival to its link's receiving node, a link's departure or
 * pause to its transmitting node, a host's timer or wake to the host, a
 * baseline retransmission timeout to its sender, a fault or reroute to
 * every rank (each keeps the global routing state).  Per window of the
 * lookahead it keeps the busiest rank's count; the sum of those maxima is
 * the critical path of a window-barrier run in events, so total events
 * divided by it bounds the speed-up that R ranks can give (equal cost per
 * event, barriers free).  part_report() prints it with the number of
 * windows that hold events (the barriers a run needs) and the arrivals
 * that cross ranks (the messages it would send).
 */
#include <stdio.h>
#include <stdlib.h>

#include "sim.h"

struct part {
    uint32_t nranks;
    uint16_t *rank; /* of each node; owned */
    uint64_t lookahead_ps;
    uint32_t cut_links;
    uint64_t win;     /* current window index */
    uint64_t *cur;    /* events per rank in the current window; owned */
    uint64_t *per;    /* events per rank over the run; owned */
    uint64_t crit;    /* sum over closed windows of the busiest rank */
    uint64_t total;   /* events charged (a global one counts once) */
    uint64_t windows; /* windows that held at least one event */
    uint64_t cross;   /* arrivals on links between ranks */
    int open;         /* the current window holds events */
    uint64_t win_end; /* the running window's end (exclusive), ps */
};

void part_free(struct sim *s)
{
    struct part *p = s->part;
    if (!p)
        return;
    free(p->rank);
    free(p->cur);
    free(p->per);
    free(p);
    s->part = NULL;
    for (uint32_t r = 0; s->pq && r < s->nparts; r++)
        evq_free(&s->pq[r]);
    free(s->pq);
    s->pq = NULL;
    evq_free(&s->gq);
}

/* The partition that runs events of (type, idx), or NONE32 for the ones
 * every partition applies (faults, reroutes). */
static uint32_t part_owner(const struct sim *s, uint32_t type, uint32_t idx)
{
    const uint16_t *rank = s->part->rank;
    switch (type) {
    case EV_ARRIVE:
        return rank[s->links[idx].dst];
    case EV_LINK_FREE:
    case EV_PAUSE:
    case EV_RESUME:
        return rank[s->links[idx].src];
    case EV_TIMER:
    case EV_WAKE:
        return rank[idx];
    case EV_RTO:
        return rank[roce_qp_host(s, idx)];
    default:
        return NONE32;
    }
}

struct evq *part_queue(struct sim *s, uint64_t t, uint32_t type, uint32_t idx)
{
    uint32_t r = part_owner(s, type, idx);
    if (r == NONE32)
        return &s->gq;
    if (r == s->cur_rank)
        return &s->q;
    /* conservative synchronisation: another partition may already have
     * run its window, so nothing may reach it before the window's end */
    if (s->cur_rank != NONE32 && t < s->part->win_end) {
        fprintf(stderr,
                "mroce-sim: event type %u for partition %u at %llu ps "
                "inside the window ending %llu ps\n",
                type, r, (unsigned long long)t,
                (unsigned long long)s->part->win_end);
        exit(2);
    }
    return &s->pq[r];
}

void part_window(struct sim *s, uint64_t end)
{
    s->part->win_end = end;
}

/* The rank of host h: whole ToR groups in R contiguous blocks. */
static uint32_t host_rank(const struct sim *s, uint32_t nranks, uint32_t h)
{
    uint32_t per = s->hosts_per_tor ? s->hosts_per_tor : 1;
    uint64_t groups = (s->nhosts + per - 1) / per;
    return (uint32_t)((uint64_t)(h / per) * nranks / groups);
}

int part_plan(struct sim *s, uint32_t nranks)
{
    if (nranks < 1 || nranks > 4096 || nranks > s->nhosts) {
        fprintf(stderr,
                "mroce-sim: MROCE_SIM_PARTITION=%u: ranks must be "
                "1..min(4096, hosts)\n",
                nranks);
        return -1;
    }
    struct part *p = calloc(1, sizeof(*p));
    if (!p)
        return -1;
    s->part = p;
    p->nranks = nranks;
    p->rank = calloc(s->nnodes, sizeof(*p->rank));
    p->cur = calloc(nranks, sizeof(*p->cur));
    p->per = calloc(nranks, sizeof(*p->per));
    if (!p->rank || !p->cur || !p->per) {
        part_free(s);
        return -1;
    }
    /* the switches whose hosts span ranks, per level, in blocks */
    uint32_t nspan[8] = {0}, kspan[8] = {0};
    for (uint32_t i = 0; i < s->nnodes; i++) {
        const struct node *n = &s->nodes[i];
        if (i < s->nhosts) {
            p->rank[i] = (uint16_t)host_rank(s, nranks, i);
            continue;
        }
        uint32_t a = host_rank(s, nranks, n->lo);
        uint32_t b = n->hi > n->lo ? host_rank(s, nranks, n->hi - 1) : a;
        if (a == b)
            p->rank[i] = (uint16_t)a;
        else
            nspan[n->level & 7]++;
    }
    for (uint32_t i = s->nhosts; i < s->nnodes; i++) {
        const struct node *n = &s->nodes[i];
        uint32_t a = host_rank(s, nranks, n->lo);
        uint32_t b = n->hi > n->lo ? host_rank(s, nranks, n->hi - 1) : a;
        if (a == b)
            continue;
        uint32_t lv = n->level & 7;
        p->rank[i] = (uint16_t)((uint64_t)kspan[lv]++ * nranks / nspan[lv]);
    }
    p->lookahead_ps = T_INF;
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const struct link *l = &s->links[i];
        if (p->rank[l->src] == p->rank[l->dst])
            continue;
        p->cut_links++;
        if (l->prop_ps < p->lookahead_ps)
            p->lookahead_ps = l->prop_ps;
    }
    if (!s->win_ps) {
        fprintf(stderr, "mroce-sim: MROCE_SIM_PARTITION: a link without "
                        "delay leaves no lookahead\n");
        part_free(s);
        return -1;
    }
    /* the pending events move to their partitions' queues */
    s->pq = calloc(nranks, sizeof(*s->pq));
    if (!s->pq || evq_init(&s->gq, 0) < 0) {
        part_free(s);
        return -1;
    }
    s->nparts = nranks;
    for (uint32_t r = 0; r < nranks; r++)
        if (evq_init(&s->pq[r], 1 << 14) < 0) {
            part_free(s);
            return -1;
        }
    s->cur_rank = NONE32;
    struct ev e;
    while (evq_pop(&s->q, &e))
        sim_schedule(s, e.t, ev_type(&e), ev_idx(&e));
    evq_free(&s->q);
    return 0;
}

/* Closes the current window: the busiest rank is on the critical path. */
static void part_close(struct part *p)
{
    uint64_t m = 0;
    for (uint32_t r = 0; r < p->nranks; r++) {
        if (p->cur[r] > m)
            m = p->cur[r];
        p->cur[r] = 0;
    }
    p->crit += m;
    p->windows += p->open;
    p->open = 0;
}

void part_count(struct sim *s, const struct ev *e)
{
    struct part *p = s->part;
    uint64_t w = p->lookahead_ps == T_INF || !p->lookahead_ps
                     ? 0
                     : e->t / p->lookahead_ps;
    if (w != p->win) {
        part_close(p);
        p->win = w;
    }
    p->open = 1;
    p->total++;
    uint32_t idx = ev_idx(e), node;
    switch (ev_type(e)) {
    case EV_ARRIVE:
        node = s->links[idx].dst;
        p->cross += p->rank[node] != p->rank[s->links[idx].src];
        break;
    case EV_LINK_FREE:
    case EV_PAUSE:
    case EV_RESUME:
        node = s->links[idx].src;
        break;
    case EV_TIMER:
    case EV_WAKE:
        node = idx;
        break;
    case EV_RTO:
        node = roce_qp_host(s, idx);
        break;
    default: /* faults and reroutes: every rank applies them */
        for (uint32_t r = 0; r < p->nranks; r++) {
            p->cur[r]++;
            p->per[r]++;
        }
        return;
    }
    p->cur[p->rank[node]]++;
    p->per[p->rank[node]]++;
}

void part_report(struct sim *s)
{
    struct part *p = s->part;
    if (!p)
        return;
    part_close(p);
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t r = 0; r < p->nranks; r++) {
        lo = p->per[r] < lo ? p->per[r] : lo;
        hi = p->per[r] > hi ? p->per[r] : hi;
    }
    printf("partition ranks=%u lookahead_ns=%.3f cut_links=%u events=%llu "
           "windows=%llu events_per_window=%.1f cross_arrivals=%llu "
           "rank_events_min=%llu rank_events_max=%llu "
           "speedup_bound=%.3f\n",
           p->nranks,
           p->lookahead_ps == T_INF ? 0.0 : (double)p->lookahead_ps / 1e3,
           p->cut_links, (unsigned long long)p->total,
           (unsigned long long)p->windows,
           p->windows ? (double)p->total / (double)p->windows : 0.0,
           (unsigned long long)p->cross, (unsigned long long)lo,
           (unsigned long long)hi,
           p->crit ? (double)p->total / (double)p->crit : 0.0);
    fflush(stdout);
}

uint32_t part_rank_of(const struct sim *s, uint32_t node)
{
    return s->part ? s->part->rank[node] : 0;
}

uint64_t part_lookahead_ps(const struct sim *s)
{
    return s->part ? s->part->lookahead_ps : T_INF;
}
