/*
 * dist.c - one run over several processes (mroce-sim-mpi), each running
 * one partition of the fabric (partition.c), synchronised conservatively
 * with window barriers.
 *
 * Every process builds the fabric and the workloads; dist_start() then
 * gives it its partition: its hosts (only they get endpoints and QPs, so
 * the engine's memory is spread over the processes, and the workloads
 * post only from them), its nodes' events and, on a link whose far end
 * is another process's (l->remote), the transmitting end.  The QPs are
 * created first and their QPNs summed over the processes (dist_sum), so
 * each host can connect to a QP on another process; from there on a
 * process touches only its own nodes, and the run, handshakes included,
 * goes window by window (run.c,
 * loop_dist): each process runs its events of the window, then
 * dist_sync() exchanges what crossed the cut during it
 *   - a packet put on a remote link (dist_send_hop: its hop and its bytes;
 *     it enters the receiver's ring, whose arrivals are in order),
 *   - an event for another process's node (a PFC pause; none of
 *     MetaRoCE's),
 *   - the record of a message posted here for a host there (its
 *     receiver needs the workload, tag and post time),
 * through the program's exchange, one message from each rank to each
 * other per window, headed by what the ranks agree on: the earliest
 * next event (the least of what each holds or sends) and each
 * workload's receives (which set the stop as a single process would).  Messages are
 * numbered per process (gid = local index * ranks + rank) on the wire.
 * dist_finish() sums the counters and gathers every message on rank 0,
 * which writes the results.
 *
 * The order of each node's events is that of a single process (sim.h,
 * Determinism), so the results are the same for any number of processes.
 * Not supported over several processes (refused by dist_start): the
 * baseline (its QP is one struct for both ends), planes, the failure
 * report, goodput bins and the trace.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

enum { REC_HOP = 1, REC_EV = 2, REC_MSG = 3 };

/* A packet that crossed the cut, followed by its len - zc_len bytes. */
struct rec_hop {
    uint64_t t, psn;
    uint32_t li, src, dst, wire, len, zc_len, qp, msg;
    uint16_t entropy;
    uint8_t ecn, kind, last, pad_[3];
};

struct rec_ev {
    uint64_t t;
    uint32_t type, idx;
};

struct rec_msg {
    uint64_t tag, t_post;
    uint32_t gid, src, dst, bytes;
    uint16_t wl;
    uint8_t bg, pad_[5];
};

/* A message as rank 0 gathers it: the sender's record or a receipt. */
struct rec_fin {
    struct msg m;
    uint32_t gid;
    uint32_t is_recv;
};

/* What every rank tells every other at the end of a window, at the head
 * of its buffer: the earliest event it holds or sends (so the earliest
 * next event of the run is the least of them), and per workload its
 * receives and latest receive. */
struct rec_head {
    uint64_t tmin;
    uint64_t received[MAX_WL], t_last[MAX_WL];
};

struct dist {
    const struct dist_comm *c;
    uint32_t me, n;
    uint64_t out_tmin;         /* the earliest event sent this window */
    struct dist_buf *out, *in; /* per rank; owned */
    uint32_t *gid;             /* per local message: its gid; owned */
    uint32_t ngid;
    /* per source rank: its message k -> local index; owned */
    uint32_t **map;
    uint32_t *map_cap;
};

const struct dist_comm *sim_dist_comm;

static void oom(void)
{
    fprintf(stderr, "mroce-sim: out of memory (dist)\n");
    exit(2);
}

uint8_t *dist_buf_room(struct dist_buf *b, size_t n)
{
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? 2 * b->cap : 65536;
        while (nc < b->n + n)
            nc *= 2;
        uint8_t *p = realloc(b->p, nc);
        if (!p)
            oom();
        b->p = p;
        b->cap = nc;
    }
    return b->p + b->n;
}

static void put(struct dist_buf *b, const void *v, size_t n)
{
    memcpy(dist_buf_room(b, n), v, n);
    b->n += n;
}

void dist_free(struct sim *s)
{
    struct dist *d = s->dist;
    if (!d)
        return;
    for (uint32_t r = 0; r < d->n; r++) {
        free(d->out[r].p);
        free(d->in[r].p);
        if (d->map)
            free(d->map[r]);
    }
    free(d->out);
    free(d->in);
    free(d->map);
    free(d->map_cap);
    free(d->gid);
    free(d);
    s->dist = NULL;
}

int dist_start(struct sim *s, const struct dist_comm *c)
{
    const struct scenario *sc = s->sc;
    if (s->tp->kind != T_MROCE || s->nplanes > 1 || sc->report_ps ||
        sc->bin_ps || getenv("MROCE_SIM_TRACE")) {
        fprintf(stderr, "mroce-sim-mpi: over several processes only "
                        "MetaRoCE on one plane, without report, bin or "
                        "MROCE_SIM_TRACE\n");
        return -1;
    }
    for (uint32_t i = 0; i < sc->nwl; i++)
        if (sc->wl[i].background) {
            fprintf(stderr, "mroce-sim-mpi: no background workloads\n");
            return -1;
        }
    struct dist *d = calloc(1, sizeof(*d));
    if (!d)
        return -1;
    s->dist = d;
    d->c = c;
    d->me = c->rank;
    d->n = c->nranks;
    s->dist_me = d->me;
    d->out = calloc(d->n, sizeof(*d->out));
    d->in = calloc(d->n, sizeof(*d->in));
    d->map = calloc(d->n, sizeof(*d->map));
    d->map_cap = calloc(d->n, sizeof(*d->map_cap));
    if (!d->out || !d->in || !d->map || !d->map_cap)
        return -1;
    /* the others' events are theirs to run; this one's become s->q */
    for (uint32_t r = 0; r < d->n; r++)
        if (r != d->me)
            s->pq[r].n = 0;
    s->q = s->pq[d->me];
    memset(&s->pq[d->me], 0, sizeof(s->pq[d->me]));
    s->cur_rank = d->me;
    for (uint32_t r = 0; r < d->n; r++) {
        dist_buf_room(&d->out[r], sizeof(struct rec_head));
        d->out[r].n = sizeof(struct rec_head);
    }
    d->out_tmin = T_INF;
    for (uint32_t i = 0; i < s->nlinks; i++) {
        struct link *l = &s->links[i];
        l->remote = part_rank_of(s, l->dst) != d->me;
    }
    return 0;
}

void dist_send_hop(struct sim *s, uint32_t li, const struct hop *h)
{
    struct dist *d = s->dist;
    const struct pkt *p = h->p;
    struct dist_buf *b = &d->out[part_rank_of(s, s->links[li].dst)];
    struct rec_hop r;
    memset(&r, 0, sizeof(r));
    r.t = h->t;
    r.psn = p->psn;
    r.li = li;
    r.src = h->src;
    r.dst = h->dst;
    r.wire = h->wire;
    r.len = p->len;
    r.zc_len = p->zc_len;
    r.qp = p->qp;
    r.msg = p->msg;
    r.entropy = h->entropy;
    r.ecn = h->ecn;
    r.kind = p->kind;
    r.last = p->last;
    uint8_t tag = REC_HOP;
    if (h->t < d->out_tmin)
        d->out_tmin = h->t;
    put(b, &tag, 1);
    put(b, &r, sizeof(r));
    put(b, p->buf, p->len - p->zc_len);
    pkt_free(s, h->p);
}

static void gid_set(struct dist *d, uint32_t m, uint32_t gid)
{
    if (m >= d->ngid) {
        uint32_t nc = d->ngid ? 2 * d->ngid : 1024;
        while (nc <= m)
            nc *= 2;
        uint32_t *g = realloc(d->gid, nc * sizeof(*g));
        if (!g)
            oom();
        d->gid = g;
        d->ngid = nc;
    }
    d->gid[m] = gid;
}

void dist_on_post(struct sim *s, uint32_t m)
{
    struct dist *d = s->dist;
    const struct msg *mm = &s->msgs[m];
    uint64_t gid = (uint64_t)m * d->n + d->me;
    if (gid > UINT32_MAX) {
        fprintf(stderr, "mroce-sim-mpi: too many messages\n");
        exit(2);
    }
    gid_set(d, m, (uint32_t)gid);
    uint32_t r = part_rank_of(s, mm->dst);
    if (r == d->me)
        return;
    struct rec_msg rec;
    memset(&rec, 0, sizeof(rec));
    rec.tag = mm->tag;
    rec.t_post = mm->t_post;
    rec.gid = (uint32_t)gid;
    rec.src = mm->src;
    rec.dst = mm->dst;
    rec.bytes = mm->bytes;
    rec.wl = mm->wl;
    rec.bg = mm->bg;
    uint8_t tag = REC_MSG;
    put(&d->out[r], &tag, 1);
    put(&d->out[r], &rec, sizeof(rec));
}

uint32_t dist_msg_gid(const struct sim *s, uint32_t m)
{
    return s->dist->gid[m];
}

uint32_t dist_msg_local(const struct sim *s, uint32_t gid)
{
    const struct dist *d = s->dist;
    uint32_t r = gid % d->n, k = gid / d->n;
    if (r == d->me)
        return k;
    if (k >= d->map_cap[r] || d->map[r][k] == NONE32) {
        fprintf(stderr, "mroce-sim-mpi: message %u has no record\n", gid);
        exit(2);
    }
    return d->map[r][k];
}

static void map_set(struct dist *d, uint32_t r, uint32_t k, uint32_t local)
{
    if (k >= d->map_cap[r]) {
        uint32_t nc = d->map_cap[r] ? 2 * d->map_cap[r] : 1024;
        while (nc <= k)
            nc *= 2;
        uint32_t *m = realloc(d->map[r], nc * sizeof(*m));
        if (!m)
            oom();
        memset(m + d->map_cap[r], 0xff,
               (size_t)(nc - d->map_cap[r]) * sizeof(*m));
        d->map[r] = m;
        d->map_cap[r] = nc;
    }
    d->map[r][k] = local;
}

/* What rank `from` sent this window. */
static void apply(struct sim *s, uint32_t from, const struct dist_buf *b)
{
    struct dist *d = s->dist;
    size_t o = sizeof(struct rec_head);
    while (o < b->n) {
        uint8_t tag = b->p[o++];
        if (tag == REC_HOP) {
            struct rec_hop r;
            memcpy(&r, b->p + o, sizeof(r));
            o += sizeof(r);
            struct pkt *p = pkt_alloc(s);
            size_t inbuf = r.len - r.zc_len;
            pkt_set_buf(s, p, inbuf);
            memcpy(p->buf, b->p + o, inbuf);
            o += inbuf;
            p->payload = r.zc_len ? s->scratch : NULL;
            p->len = r.len;
            p->zc_len = r.zc_len;
            p->wire = r.wire;
            p->src = r.src;
            p->dst = r.dst;
            p->qp = r.qp;
            p->entropy = r.entropy;
            p->ecn = r.ecn;
            p->kind = r.kind;
            p->last = r.last;
            p->psn = r.psn;
            p->msg = r.msg;
            struct hop h;
            memset(&h, 0, sizeof(h));
            h.t = r.t;
            h.p = p;
            h.src = r.src;
            h.dst = r.dst;
            h.wire = r.wire;
            h.entropy = r.entropy;
            h.ecn = r.ecn;
            fabric_inject(s, r.li, &h);
        } else if (tag == REC_EV) {
            struct rec_ev r;
            memcpy(&r, b->p + o, sizeof(r));
            o += sizeof(r);
            sim_schedule(s, r.t, r.type, r.idx);
        } else {
            struct rec_msg r;
            memcpy(&r, b->p + o, sizeof(r));
            o += sizeof(r);
            uint32_t m = msg_new(s, r.src, r.dst, r.bytes, r.wl, r.tag);
            s->msgs[m].t_post = r.t_post;
            s->msgs[m].bg = r.bg;
            gid_set(d, m, r.gid);
            map_set(d, from, r.gid / d->n, m);
        }
    }
}

uint64_t dist_sync(struct sim *s)
{
    struct dist *d = s->dist;
    struct ev e;
    for (uint32_t r = 0; r < d->n; r++) {
        if (r == d->me)
            continue;
        while (evq_pop(&s->pq[r], &e)) {
            struct rec_ev rec = {e.t, ev_type(&e), ev_idx(&e)};
            uint8_t tag = REC_EV;
            if (e.t < d->out_tmin)
                d->out_tmin = e.t;
            put(&d->out[r], &tag, 1);
            put(&d->out[r], &rec, sizeof(rec));
        }
    }
    uint32_t nw = wl_count(s);
    struct rec_head h;
    memset(&h, 0, sizeof(h));
    h.tmin = d->out_tmin;
    if (s->q.n && s->q.h[0].t < h.tmin)
        h.tmin = s->q.h[0].t;
    if (s->gq.n && s->gq.h[0].t < h.tmin)
        h.tmin = s->gq.h[0].t;
    for (uint32_t i = 0; i < nw; i++)
        wl_local(s, i, &h.received[i], &h.t_last[i]);
    for (uint32_t r = 0; r < d->n; r++)
        memcpy(d->out[r].p, &h, sizeof(h));
    if (d->c->exchange(d->c->ctx, d->out, d->in) < 0) {
        fprintf(stderr, "mroce-sim-mpi: exchange failed\n");
        exit(2);
    }
    /* the reduction, from every rank's head (this one's included) */
    struct rec_head g = h;
    memset(g.received, 0, sizeof(g.received));
    for (uint32_t r = 0; r < d->n; r++) {
        struct rec_head x;
        if (d->in[r].n < sizeof(x)) {
            fprintf(stderr, "mroce-sim-mpi: short exchange\n");
            exit(2);
        }
        memcpy(&x, d->in[r].p, sizeof(x));
        if (x.tmin < g.tmin)
            g.tmin = x.tmin;
        for (uint32_t i = 0; i < nw; i++) {
            g.received[i] += x.received[i];
            if (x.t_last[i] > g.t_last[i])
                g.t_last[i] = x.t_last[i];
        }
    }
    for (uint32_t r = 0; r < d->n; r++) {
        d->out[r].n = sizeof(struct rec_head);
        apply(s, r, &d->in[r]);
        d->in[r].n = 0;
    }
    d->out_tmin = T_INF;
    for (uint32_t i = 0; i < nw; i++)
        wl_global(s, i, g.received[i], g.t_last[i]);
    return g.tmin;
}

int dist_sum(struct sim *s, uint64_t *v, uint64_t n)
{
    if (!s->dist)
        return 0;
    const struct dist_comm *c = s->dist->c;
    for (uint64_t o = 0; o < n; o += 1u << 24) {
        uint64_t k = n - o < (1u << 24) ? n - o : 1u << 24;
        if (c->allreduce(c->ctx, v + o, (uint32_t)k, 0) < 0)
            return -1;
    }
    return 0;
}

/* The run's counters summed over the processes (q_max maxed). */
static int reduce_counters(struct sim *s)
{
    const struct dist_comm *c = s->dist->c;
    uint64_t *g[] = {
        &s->events,         &s->pkt_events,
        &s->pkts_sent,      &s->pkts_delivered,
        &s->drops_q,        &s->drops_fail,
        &s->drops_loss,     &s->drops_noroute,
        &s->ecn_marks,      &s->pfc_pauses,
        &s->retx_pkts,      &s->tx_data_pkts,
        &s->qp_errors,      &s->wc_errors,
        &s->mroce_timeouts, &s->mroce_paths_retired,
        &s->expiry_stuck,   &s->crc_drops,
        &s->qp_mem_bytes,   &s->nqps,
        &s->ep_mem_bytes,
    };
    enum { NG = sizeof(g) / sizeof(g[0]), NL = 10 };
    size_t n = NG + (size_t)s->nlinks * NL;
    uint64_t *v = malloc(n * sizeof(*v));
    uint64_t *q = malloc(((size_t)s->nlinks + 1) * sizeof(*q));
    if (!v || !q) {
        free(v);
        free(q);
        return -1;
    }
    for (size_t i = 0; i < NG; i++)
        v[i] = *g[i];
    for (uint32_t i = 0; i < s->nlinks; i++) {
        const struct link *l = &s->links[i];
        uint64_t *o = v + NG + (size_t)i * NL;
        o[0] = l->tx_bytes;
        o[1] = l->tx_pkts;
        o[2] = l->drops_q;
        o[3] = l->drops_fail;
        o[4] = l->drops_loss;
        o[5] = l->ecn_marks;
        o[6] = l->pfc_xoff;
        o[7] = l->paused_ps;
        o[8] = l->q_sum;
        o[9] = l->q_samples;
        q[i] = l->q_max;
    }
    q[s->nlinks] = s->now;
    int rc = -1;
    if (c->allreduce(c->ctx, v, (uint32_t)n, 0) < 0 ||
        c->allreduce(c->ctx, q, s->nlinks + 1, 1) < 0)
        goto out;
    for (size_t i = 0; i < NG; i++)
        *g[i] = v[i];
    for (uint32_t i = 0; i < s->nlinks; i++) {
        struct link *l = &s->links[i];
        const uint64_t *o = v + NG + (size_t)i * NL;
        l->tx_bytes = o[0];
        l->tx_pkts = o[1];
        l->drops_q = o[2];
        l->drops_fail = o[3];
        l->drops_loss = o[4];
        l->ecn_marks = o[5];
        l->pfc_xoff = o[6];
        l->paused_ps = o[7];
        l->q_sum = o[8];
        l->q_samples = o[9];
        l->q_max = q[i];
    }
    s->now = q[s->nlinks];
    rc = 0;
out:
    free(v);
    free(q);
    return rc;
}

static int cmp_fin(const void *a, const void *b)
{
    const struct rec_fin *x = a, *y = b;
    if (x->gid != y->gid)
        return x->gid < y->gid ? -1 : 1;
    return (int)x->is_recv - (int)y->is_recv;
}

/* Rank 0 gets every message: each process sends those it posted (with
 * the sender's times) and those received by its hosts (with the receive
 * time); rank 0 merges them by gid into s->msgs. */
static int gather_msgs(struct sim *s)
{
    struct dist *d = s->dist;
    for (uint32_t r = 0; r < d->n; r++)
        d->out[r].n = 0;
    for (uint32_t m = 0; m < s->nmsgs; m++) {
        const struct msg *mm = &s->msgs[m];
        uint32_t gid = d->gid[m];
        int mine = gid % d->n == d->me;
        struct rec_fin f;
        memset(&f, 0, sizeof(f));
        f.m = *mm;
        f.gid = gid;
        if (mine) {
            f.m.done &= 2;
            f.m.t_recv = 0;
            put(&d->out[0], &f, sizeof(f));
        }
        if (mm->done & 1) {
            f.m = *mm;
            f.is_recv = 1;
            put(&d->out[0], &f, sizeof(f));
        }
    }
    if (d->c->exchange(d->c->ctx, d->out, d->in) < 0)
        return -1;
    d->out[0].n = 0;
    if (d->me)
        return 0;
    size_t total = 0;
    for (uint32_t r = 0; r < d->n; r++)
        total += d->in[r].n / sizeof(struct rec_fin);
    struct rec_fin *all = malloc((total + 1) * sizeof(*all));
    if (!all)
        return -1;
    size_t k = 0;
    for (uint32_t r = 0; r < d->n; r++) {
        memcpy(all + k, d->in[r].p, d->in[r].n);
        k += d->in[r].n / sizeof(struct rec_fin);
        d->in[r].n = 0;
    }
    qsort(all, total, sizeof(*all), cmp_fin);
    uint32_t nm = 0;
    for (size_t i = 0; i < total; i++) {
        if (!all[i].is_recv) {
            if (nm == s->capmsgs) {
                free(all);
                return -1; /* fewer slots than posted messages */
            }
            s->msgs[nm++] = all[i].m;
        } else if (nm && all[i].gid == all[i - 1].gid) {
            struct msg *m = &s->msgs[nm - 1];
            m->done |= 1;
            m->t_recv = all[i].m.t_recv;
        }
    }
    s->nmsgs = nm;
    free(all);
    return 0;
}

int dist_finish(struct sim *s)
{
    struct dist *d = s->dist;
    /* rank 0 needs room for every message */
    uint64_t cnt[1] = {0};
    for (uint32_t m = 0; m < s->nmsgs; m++)
        cnt[0] += d->gid[m] % d->n == d->me;
    if (reduce_counters(s) < 0 || d->c->allreduce(d->c->ctx, cnt, 1, 0) < 0)
        return -1;
    if (d->me == 0 && cnt[0] > s->capmsgs) {
        struct msg *n = realloc(s->msgs, cnt[0] * sizeof(*n));
        if (!n)
            return -1;
        s->msgs = n;
        s->capmsgs = (uint32_t)cnt[0];
    }
    return gather_msgs(s);
}
