/*
 * workload.c - traffic: permutation, N-to-1 incast, and the AI collectives
 * as NCCL runs them.
 *
 * Every workload is a set of ranks (hosts), each issuing a sequence of
 * messages in order with at most `window` of them outstanding (posted but
 * not yet completed at the sender - NCCL's bounded slots / active peers):
 *   - ring all-reduce: ranks in a ring (host order or shuffled, as a job
 *     scheduler might place them); the buffer of `bytes` is cut into N
 *     chunks and each chunk into slices of `msg` bytes; 2(N-1) steps
 *     (reduce-scatter then all-gather); rank r may send slice j of step k
 *     only after it has received slice j of step k-1 from its predecessor,
 *     so steps pipeline slice by slice as in NCCL's ring kernels;
 *   - all-to-all: every rank sends `bytes` to every other rank, peers in the
 *     shifted order r+1, r+2, ... (NCCL's order, which avoids incast), at
 *     most `window` peers active at once;
 *   - permutation: rank r sends `bytes` to perm(r), a random derangement;
 *   - incast: `senders` hosts spread over the fabric send `bytes` each to
 *     host 0;
 *   - flows: hosts src=A-B each send `bytes` to dst C + i % (D - C + 1)
 *     of dst=C-D (scale-across: flows of chosen RTTs on chosen links);
 *   - read: a READ fan-out: client `client` asks `servers` servers for
 *     `bytes` each, in pieces of `msg`, all at once (at most `window`
 *     requests outstanding); each request is a 64-byte message and a
 *     server answers it with its piece as soon as it arrives, so the
 *     answers incast on the client.  The request is not measured; the
 *     answer's completion time runs from the request's post (a READ's).
 * A workload marked background repeats itself until the run ends (with the
 * window in which the measured ones end, run.c).
 * The collective's ideal time is computed from its messages: the most
 * loaded host NIC or switch uplink group, bytes over bandwidth.
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

struct wl_state {
    struct wl_cfg c;
    uint32_t idx;
    uint32_t n;         /* ranks */
    uint32_t *host;     /* rank -> host; owned */
    uint32_t *rank_of;  /* host -> rank or NONE; owned */
    uint32_t *perm;     /* permutation: rank -> destination rank; owned */
    uint64_t *next;     /* per rank: next job; owned */
    uint32_t *out;      /* per rank: outstanding messages; owned */
    uint64_t njobs;     /* jobs per rank */
    uint32_t recv_host; /* incast */
    uint32_t nslices;   /* all-reduce */
    uint64_t chunk;
    uint16_t *rsteps; /* all-reduce: [rank * nslices + j] steps received */
    uint64_t total, received;
    uint64_t t_last; /* ps: the latest receive of a measured message */
    int done;
};

/* READ fan-out: a request's size, and the tag bit that marks an answer. */
#define READ_REQ_BYTES 64u
#define READ_ANSWER (1ULL << 63)

uint32_t msg_new(struct sim *s, uint32_t src, uint32_t dst, uint32_t bytes,
                 uint16_t wl, uint64_t tag)
{
    if (s->nmsgs == s->capmsgs) {
        uint32_t nc = s->capmsgs ? 2 * s->capmsgs : 1024;
        struct msg *n = realloc(s->msgs, (size_t)nc * sizeof(*n));
        if (!n) {
            fprintf(stderr, "mroce-sim: out of memory (messages)\n");
            exit(2);
        }
        s->msgs = n;
        s->capmsgs = nc;
    }
    struct msg *m = &s->msgs[s->nmsgs];
    memset(m, 0, sizeof(*m));
    m->src = src;
    m->dst = dst;
    m->bytes = bytes;
    m->wl = wl;
    m->tag = tag;
    m->t_post = s->now;
    return s->nmsgs++;
}

void tp_post(struct sim *s, uint32_t m)
{
    if (s->dist)
        dist_on_post(s, m);
    if (s->tp->kind == T_ROCE)
        roce_post(s, m);
    else
        host_post(s, m);
}

static uint64_t pieces(uint64_t bytes, uint32_t msg)
{
    return bytes ? (bytes + msg - 1) / msg : 1;
}

/* Job `j` of rank r: destination host, size, tag; 0 if not ready yet. */
static int job(struct wl_state *w, uint32_t r, uint64_t j, uint32_t *dst,
               uint32_t *bytes, uint64_t *tag)
{
    const struct wl_cfg *c = &w->c;
    *tag = j;
    switch (c->kind) {
    case WL_PERM:
    case WL_INCAST: {
        uint64_t np = pieces(c->bytes, c->msg), p = j % np;
        *dst = c->kind == WL_PERM ? w->host[w->perm[r]] : w->recv_host;
        uint64_t left = c->bytes - p * c->msg;
        *bytes = (uint32_t)(left < c->msg ? left : c->msg);
        return 1;
    }
    case WL_ALLTOALL: {
        uint64_t np = pieces(c->bytes, c->msg);
        uint64_t o = j / np + 1, p = j % np;
        *dst = w->host[(r + o) % w->n];
        uint64_t left = c->bytes - p * c->msg;
        *bytes = (uint32_t)(left < c->msg ? left : c->msg);
        return 1;
    }
    case WL_FLOWS: {
        uint64_t np = pieces(c->bytes, c->msg), p = j % np;
        *dst = c->dst_lo + r % c->dst_n;
        uint64_t left = c->bytes - p * c->msg;
        *bytes = (uint32_t)(left < c->msg ? left : c->msg);
        return 1;
    }
    case WL_READ:
        if (r) /* servers answer requests (read_answer) */
            return 0;
        *dst = w->host[1 + j % (w->n - 1)];
        *bytes = READ_REQ_BYTES;
        return 1;
    case WL_ALLREDUCE: {
        uint64_t k = j / w->nslices, sl = j % w->nslices;
        if (k > 0 && w->rsteps[(size_t)r * w->nslices + sl] < k)
            return 0;
        *dst = w->host[(r + 1) % w->n];
        uint64_t left = w->chunk - sl * c->msg;
        *bytes = (uint32_t)(left < c->msg ? left : c->msg);
        return 1;
    }
    }
    return 0;
}

static void pump(struct sim *s, struct wl_state *w, uint32_t r)
{
    while (w->out[r] < w->c.window &&
           (w->c.background || w->next[r] < w->njobs)) {
        uint32_t dst, bytes;
        uint64_t tag;
        if (!job(w, r, w->next[r], &dst, &bytes, &tag))
            break;
        uint32_t m = msg_new(s, w->host[r], dst, bytes, (uint16_t)w->idx, tag);
        s->msgs[m].bg = w->c.background || w->c.kind == WL_READ;
        w->next[r]++;
        w->out[r]++;
        tp_post(s, m);
    }
}

static void shuffle(uint32_t *a, uint32_t n, uint64_t *rng)
{
    for (uint32_t i = n; i > 1; i--) {
        uint32_t j = (uint32_t)(rng_next(rng) % i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* READ fan-out: request m reached its server, which answers with its piece
 * at once; the answer's completion time counts from the request's post. */
static void read_answer(struct sim *s, struct wl_state *w, uint32_t m)
{
    const struct wl_cfg *c = &w->c;
    uint64_t j = s->msgs[m].tag;
    uint64_t p = j / (w->n - 1), left = c->bytes - p * c->msg;
    uint32_t r = w->rank_of[s->msgs[m].dst];
    uint64_t posted = s->msgs[m].t_post;
    uint32_t a = msg_new(s, s->msgs[m].dst, s->msgs[m].src,
                         (uint32_t)(left < c->msg ? left : c->msg),
                         (uint16_t)w->idx, j | READ_ANSWER);
    s->msgs[a].t_post = posted;
    w->out[r]++;
    tp_post(s, a);
}

/* flows / read: their hosts; -1 with a message if they are not there. */
static int setup_across(struct sim *s, struct wl_state *w)
{
    const struct wl_cfg *c = &w->c;
    uint32_t H = s->nhosts;
    if (c->kind == WL_FLOWS) {
        if (!c->src_n || !c->dst_n || c->src_lo + c->src_n > H ||
            c->dst_lo + c->dst_n > H) {
            fprintf(stderr, "flows: src= and dst= need hosts in 0..%u\n",
                    H - 1);
            return -1;
        }
        for (uint32_t i = 0; i < w->n; i++)
            w->host[i] = c->src_lo + i;
        w->njobs = pieces(c->bytes, c->msg);
        return 0;
    }
    uint32_t N = w->n - 1, cl = c->src_lo;
    if (cl >= H || !N || N > H - 1 ||
        (c->dst_lo != NONE32 && c->dst_lo + N > H)) {
        fprintf(stderr, "read: client and servers must be hosts 0..%u\n",
                H - 1);
        return -1;
    }
    w->host[0] = cl;
    for (uint32_t i = 0; i < N; i++) /* spread over the fabric */
        w->host[1 + i] = c->dst_lo != NONE32
                             ? c->dst_lo + i
                             : (cl + 1 +
                                (uint32_t)((uint64_t)i * (H - 1) / N)) %
                                   H;
    for (uint32_t i = 1; i <= N; i++)
        if (w->host[i] == cl) {
            fprintf(stderr, "read: the client is one of its servers\n");
            return -1;
        }
    w->njobs = (uint64_t)N * pieces(c->bytes, c->msg);
    return 0;
}

static int setup_one(struct sim *s, uint32_t idx, uint64_t *rng)
{
    struct wl_state *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    s->wl_state[idx] = w;
    w->c = s->sc->wl[idx];
    w->idx = idx;
    const struct wl_cfg *c = &w->c;
    uint32_t H = s->nhosts;
    uint32_t n = c->ranks && c->ranks <= H ? c->ranks : H;
    if (c->background)
        n = (uint32_t)(c->fraction * H + 0.5);
    if (c->kind == WL_INCAST)
        n = c->senders && c->senders < H ? c->senders : H - 1;
    if (c->kind == WL_FLOWS)
        n = c->src_n;
    if (c->kind == WL_READ)
        n = (c->dst_n && c->dst_n < H ? c->dst_n : H - 1) + 1;
    if (n < 2 && c->kind != WL_INCAST && c->kind != WL_FLOWS) {
        fprintf(stderr, "workload %u: needs at least 2 ranks\n", idx);
        return -1;
    }
    w->n = n;
    w->host = calloc(n, sizeof(uint32_t));
    w->rank_of = malloc(H * sizeof(uint32_t));
    w->next = calloc(n, sizeof(uint64_t));
    w->out = calloc(n, sizeof(uint32_t));
    if (!w->host || !w->rank_of || !w->next || !w->out)
        return -1;
    memset(w->rank_of, 0xff, H * sizeof(uint32_t));
    if (c->kind == WL_FLOWS || c->kind == WL_READ) {
        if (setup_across(s, w) < 0)
            return -1;
    } else if (c->kind == WL_INCAST) {
        w->recv_host = 0;
        for (uint32_t i = 0; i < n; i++) /* spread over ToRs */
            w->host[i] = 1 + (uint32_t)((uint64_t)i * (H - 1) / n);
    } else if (c->background) {
        uint32_t *all = malloc(H * sizeof(uint32_t));
        if (!all)
            return -1;
        for (uint32_t i = 0; i < H; i++)
            all[i] = i;
        shuffle(all, H, rng);
        memcpy(w->host, all, n * sizeof(uint32_t));
        free(all);
    } else {
        for (uint32_t i = 0; i < n; i++)
            w->host[i] = i;
        if (c->random_order)
            shuffle(w->host, n, rng);
    }
    for (uint32_t i = 0; i < n; i++)
        w->rank_of[w->host[i]] = i;
    switch (c->kind) {
    case WL_PERM:
        /* random derangement: a shuffled cycle has no fixed point */
        w->perm = malloc(n * sizeof(uint32_t));
        if (!w->perm)
            return -1;
        {
            uint32_t *cyc = malloc(n * sizeof(uint32_t));
            if (!cyc)
                return -1;
            for (uint32_t i = 0; i < n; i++)
                cyc[i] = i;
            shuffle(cyc, n, rng);
            for (uint32_t i = 0; i < n; i++)
                w->perm[cyc[i]] = cyc[(i + 1) % n];
            free(cyc);
        }
        w->njobs = pieces(c->bytes, c->msg);
        break;
    case WL_INCAST:
        w->njobs = pieces(c->bytes, c->msg);
        break;
    case WL_ALLTOALL:
        w->njobs = (uint64_t)(n - 1) * pieces(c->bytes, c->msg);
        break;
    case WL_ALLREDUCE:
        w->chunk = c->bytes / n;
        if (!w->chunk)
            w->chunk = 1;
        w->nslices = (uint32_t)pieces(w->chunk, c->msg);
        w->njobs = 2ULL * (n - 1) * w->nslices;
        w->rsteps = calloc((size_t)n * w->nslices, sizeof(uint16_t));
        if (!w->rsteps)
            return -1;
        break;
    case WL_FLOWS: /* setup_across */
    case WL_READ:
        break;
    }
    w->total = w->njobs * n;
    if (c->kind == WL_READ) /* the requests and their answers */
        w->total = 2 * w->njobs;
    if (!c->background)
        s->wl_pending++;
    return 0;
}

int wl_setup(struct sim *s)
{
    uint64_t rng = s->sc->seed ^ 0xc011ec7ULL;
    for (uint32_t i = 0; i < s->sc->nwl; i++)
        if (setup_one(s, i, &rng) < 0)
            return -1;
    return 0;
}

void wl_start(struct sim *s)
{
    s->t_start = s->now;
    for (uint32_t i = 0; i < s->sc->nwl; i++) {
        struct wl_state *w = s->wl_state[i];
        for (uint32_t r = 0; r < w->n; r++)
            if (sim_host_here(s, w->host[r]))
                pump(s, w, r);
    }
}

void wl_free(struct sim *s)
{
    for (uint32_t i = 0; i < MAX_WL; i++) {
        struct wl_state *w = s->wl_state[i];
        if (!w)
            continue;
        free(w->host);
        free(w->rank_of);
        free(w->perm);
        free(w->next);
        free(w->out);
        free(w->rsteps);
        free(w);
        s->wl_state[i] = NULL;
    }
    free(s->msgs);
    s->msgs = NULL;
    s->nmsgs = s->capmsgs = 0;
}

int wl_pairs(struct sim *s, int (*fn)(struct sim *, uint32_t, uint32_t))
{
    for (uint32_t i = 0; i < s->sc->nwl; i++) {
        struct wl_state *w = s->wl_state[i];
        for (uint32_t r = 0; r < w->n; r++) {
            int rc = 0;
            switch (w->c.kind) {
            case WL_PERM:
                rc = fn(s, w->host[r], w->host[w->perm[r]]);
                break;
            case WL_INCAST:
                rc = fn(s, w->host[r], w->recv_host);
                break;
            case WL_ALLREDUCE:
                rc = fn(s, w->host[r], w->host[(r + 1) % w->n]);
                break;
            case WL_ALLTOALL:
                for (uint32_t q = r + 1; q < w->n && !rc; q++)
                    rc = fn(s, w->host[r], w->host[q]);
                break;
            case WL_FLOWS:
                rc = fn(s, w->host[r], w->c.dst_lo + r % w->c.dst_n);
                break;
            case WL_READ:
                if (r)
                    rc = fn(s, w->host[0], w->host[r]);
                break;
            }
            if (rc)
                return rc;
        }
    }
    return 0;
}

void wl_on_sent(struct sim *s, uint32_t m)
{
    struct msg *mm = &s->msgs[m];
    mm->done |= 2;
    mm->t_sent = s->now;
    struct wl_state *w = s->wl_state[mm->wl];
    uint32_t r = w->rank_of[mm->src];
    w->out[r]--;
    pump(s, w, r);
}

/* A measured workload has received all its messages. */
static void wl_done(struct sim *s, struct wl_state *w)
{
    w->done = 1;
    if (w->t_last > s->t_end)
        s->t_end = w->t_last;
    /* the run ends with the window in which the last workload ends
     * (run.c), so that where it stops does not depend on the order in
     * which partitions ran their events */
    if (--s->wl_pending == 0)
        s->stop_at = s->win_ps ? (s->t_end / s->win_ps + 1) * s->win_ps
                               : s->t_end + 1;
}

void wl_on_recv(struct sim *s, uint32_t m)
{
    if (s->dist)
        m = dist_msg_local(s, m);
    struct msg *mm = &s->msgs[m];
    if (mm->done & 1)
        return;
    mm->done |= 1;
    mm->t_recv = s->now;
    struct wl_state *w = s->wl_state[mm->wl];
    w->received++;
    if (!mm->bg && s->now > w->t_last)
        w->t_last = s->now;
    if (w->c.kind == WL_ALLREDUCE) {
        uint32_t r = w->rank_of[mm->dst];
        w->rsteps[(size_t)r * w->nslices + mm->tag % w->nslices]++;
        pump(s, w, r);
    }
    if (w->c.kind == WL_READ && !(mm->tag & READ_ANSWER))
        read_answer(s, w, m);
    /* over several processes the totals are agreed on between windows
     * (wl_global) */
    if (!s->dist && !w->c.background && !w->done && w->received == w->total)
        wl_done(s, w);
}

uint32_t wl_count(const struct sim *s)
{
    return s->sc->nwl;
}

void wl_local(const struct sim *s, uint32_t i, uint64_t *received,
              uint64_t *t_last)
{
    const struct wl_state *w = s->wl_state[i];
    *received = w->received;
    *t_last = w->t_last;
}

void wl_global(struct sim *s, uint32_t i, uint64_t received, uint64_t t_last)
{
    struct wl_state *w = s->wl_state[i];
    if (w->c.background || w->done || received != w->total)
        return;
    w->t_last = t_last;
    wl_done(s, w);
}

uint64_t wl_ideal_ps(const struct sim *s)
{
    uint32_t H = s->nhosts;
    uint64_t *tx = calloc(H, sizeof(uint64_t)),
             *rx = calloc(H, sizeof(uint64_t));
    uint64_t *up = calloc(s->nnodes, sizeof(uint64_t)),
             *dn = calloc(s->nnodes, sizeof(uint64_t));
    double worst = 0;
    if (!tx || !rx || !up || !dn)
        goto out;
    for (uint32_t i = 0; i < s->nmsgs; i++) {
        const struct msg *m = &s->msgs[i];
        if (m->bg)
            continue;
        tx[m->src] += m->bytes;
        rx[m->dst] += m->bytes;
    }
    for (uint32_t h = 0; h < H; h++) {
        double r = planes_host_bps(s, h);
        double t = (double)(tx[h] > rx[h] ? tx[h] : rx[h]) * 8 / r;
        if (t > worst)
            worst = t;
    }
    /* Switch uplink groups: switches covering the same host range share the
     * traffic leaving / entering it; the first of them accumulates. */
    for (uint32_t i = 0; i < s->nmsgs; i++) {
        const struct msg *m = &s->msgs[i];
        if (m->bg)
            continue;
        for (uint32_t n = H; n < s->nnodes; n++) {
            const struct node *nd = &s->nodes[n];
            if (!nd->nup)
                continue;
            int sin = m->src >= nd->lo && m->src < nd->hi;
            int din = m->dst >= nd->lo && m->dst < nd->hi;
            if (sin && !din)
                up[n] += m->bytes;
            if (din && !sin)
                dn[n] += m->bytes;
        }
    }
    for (uint32_t n = H; n < s->nnodes; n++) {
        const struct node *nd = &s->nodes[n];
        if (!nd->nup)
            continue;
        double cap = 0;
        for (uint32_t m = H; m < s->nnodes; m++) {
            const struct node *o = &s->nodes[m];
            if (o->lo == nd->lo && o->hi == nd->hi && o->level == nd->level)
                for (uint32_t p = 0; p < o->nup; p++)
                    cap += (double)s->links[o->up[p]].rate_bps;
        }
        /* every switch of the group counted the same bytes */
        double b = (double)(up[n] > dn[n] ? up[n] : dn[n]);
        double t = b * 8 / cap;
        if (t > worst)
            worst = t;
    }
out:
    free(tx);
    free(rx);
    free(up);
    free(dn);
    return (uint64_t)(worst * 1e12);
}

/* Diagnostics: messages the host's rank has posted and not completed, in
 * the first workload (host.c's trace). */
uint32_t wl_outstanding(const struct sim *s, uint32_t host)
{
    const struct wl_state *w = s->wl_state[0];
    if (!w)
        return 0;
    for (uint32_t r = 0; r < w->n; r++)
        if (w->host[r] == host)
            return w->out[r];
    return 0;
}
