/*
 * test_engine_prop.c - property tests of the engine over seeded random
 * scenarios on the deterministic network model.
 *
 * Role: where test_engine_ops checks each operation in a few hand-written
 * setups, this test throws thousands of generated ones at the whole engine
 * (requester, responder, completer, paths, CC, credits) and checks the
 * properties every run must have, whatever the network does.  A scenario is
 * a pure function of its seed: 2-4 hosts, 1-4 QP pairs with random
 * attributes (npaths 1..256, MTU 256/1024/4096/8000, window 64..4096, CC,
 * credits), a faulty fabric (loss 0..30%, duplication, reordering, single
 * bit corruption, per-spine delays, ECN thresholds, drop-tail queues, now
 * and then a blackholed spine) and a random mix of every work request type
 * (sizes 0 B..16 MiB log-uniform, multi-SGE, inline, signaled or not,
 * fences) in both directions of every pair; also start PSNs just below
 * 2^32, a flapping blackhole, a lossy ("gray") spine, a slow receiver,
 * receive queues a few entries deep, receives posted late (RNR), work posted
 * after an idle pause, path bursts, infinitely fast links.  Half the
 * scenarios run on P = 2, 4 or (rarely) 8 planes (docs/spec/multipath.md,
 * Planes), each plane with its own spines and host links, every endpoint
 * on all of them (one in ten on fewer, so that its connections use
 * min(local, peer) planes or none, CONN-28), and now and then plane
 * events: a whole plane failing at a random time (coming back later, or
 * not), a second one failing, a gray plane losing 5-50% on every spine;
 * one plane every QP uses and has a home slot on is never touched, so
 * every run must complete.  P and the
 * events come from a generator of their own, so a scenario of one plane
 * is the one it was before planes existed (--one-plane runs every seed on
 * one plane).
 * Properties checked:
 *   - every message is delivered exactly once and byte-identical; send and
 *     receive completions arrive in posting order, all SUCCESS, with the
 *     right opcode, length and immediate;
 *   - atomics execute exactly once: the returned old values and the final
 *     word form one serial history (an Euler trail, see check_words());
 *   - no byte outside the intended targets changes: every buffer sits in a
 *     registered region between guard bytes, and a shadow copy of every
 *     host's memory predicts the final contents byte for byte;
 *   - nothing is acknowledged before it is placed (check_ack_psn());
 *   - every packet the engine sends carries exactly the bytes and header
 *     fields of the work request it belongs to, retransmissions included;
 *   - on a pair of several streams (a third of the pairs, drawn from a
 *     generator of their own so other scenarios are unchanged), each
 *     stream completes in its own posting order, exactly once (SEM-33);
 *   - with planes: every connection uses min(local, peer) planes
 *     (CONN-28); every packet
 *     leaves on plane entropy % P (PATH-20) and towards the peer's address
 *     on that plane (the driver counts any other, PATH-17); a data packet
 *     on a plane its sender has marked down is a probe, with ACK_REQ, at
 *     least min_rto after the plane's previous one (PATH-21, PATH-22); the
 *     engine's per-plane counts of packets sent and ACKs received match
 *     what the fabric carried and sum to the QP's totals, and its planes'
 *     slots sum to npaths (PATH-24, PATH-29);
 *   - the run completes within a model-time bound, then goes idle; QPs end
 *     in RTS with nothing outstanding and no error.
 * A failing scenario prints how to replay it; its first failure is usually
 * the one that matters (later ones tend to follow from it).
 *
 * Usage (the binary is built as build/tests/test_engine_prop):
 *   test_engine_prop                  CI subset: seeds 1..CI_SEEDS (ctest)
 *   test_engine_prop --seeds 10000    THE FULL SWEEP (run time: README.md, Tests)
 *   test_engine_prop --start S --seeds N     seeds S..S+N-1
 *   test_engine_prop --seed N [-v]    one scenario; -v traces every packet
 *                                     sent and delivered, and each posting
 *                                     and completion
 *   test_engine_prop --one-plane ...  the same seeds, all on one plane
 * Scenarios do not depend on each other: seed N is the same scenario in any
 * of these runs.  The summary counts what the network and the engine did
 * (retransmissions by cause, duplicates, drops by reason), so a run that
 * passes can also be seen to have exercised something.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The internals are visible on purpose: the ACK-before-placement check and
 * the end-of-run quiescence check read QP state (start PSNs, responder
 * jobs, queue indices) that the API does not expose. */
#include "engine_int.h"
#include "testbed.h"
#include "testutil.h"

#define CI_SEEDS 1000 /* default run: ~10 s (~40 s under ASan) on one core */
#define MAXH 4
#define MAXPAIRS 4
#define MAXQS (2 * MAXPAIRS)
#define MAXREG 3
#define MAX_FAIL_MSGS 12 /* per scenario; the first failure matters most */
#define MAXST 8          /* streams per QP pair in stream scenarios */
#define MAXPL 8          /* planes (MROCE_NET_MAX_PLANES) */
#define MAXPLEV 3        /* plane events per scenario */

static const unsigned FULL_ACCESS = MROCE_ACCESS_LOCAL_WRITE |
                                    MROCE_ACCESS_REMOTE_WRITE |
                                    MROCE_ACCESS_REMOTE_READ |
                                    MROCE_ACCESS_REMOTE_ATOMIC;

/* ---- seeded randomness ---- */

static uint64_t rnd(uint64_t *st)
{
    return testutil_rand64(st);
}
static uint32_t below(uint64_t *st, uint32_t n)
{
    return (uint32_t)(rnd(st) % n);
}
static int chance(uint64_t *st, unsigned pct)
{
    return below(st, 100) < pct;
}
static double unif(uint64_t *st)
{
    return (double)(rnd(st) >> 11) * (1.0 / 9007199254740992.0);
}
/* Log-uniform in [0, max]: a uniform bit length, then uniform within it, so
 * 1-byte and 1-MiB messages are about as likely as 1-KiB ones. */
static uint32_t log_uniform(uint64_t *st, uint32_t max)
{
    int bits = 0;
    while (bits < 32 && (1ull << bits) <= max)
        bits++;
    int e = (int)below(st, (uint32_t)bits + 1);
    if (e == 0)
        return 0;
    uint64_t lo = 1ull << (e - 1), hi = (1ull << e) - 1;
    if (hi > max)
        hi = max;
    return (uint32_t)(lo + rnd(st) % (hi - lo + 1));
}

/* ---- scenario model ---- */

enum brole { B_SRC, B_RDST, B_RESULT, B_WTGT, B_RSRC, B_RECV, B_WORD };
static const char *const role_name[] = {"send/write source", "READ destination",
                                        "atomic result",     "WRITE target",
                                        "READ source",       "receive buffer",
                                        "atomic word"};

/* A buffer: a range of one host's arena inside one registered region. */
struct bufd {
    int host, region;
    uint32_t len, align;
    size_t off;   /* in the host arena, set by layout() */
    uint8_t role; /* enum brole, for diagnostics */
    int qs, idx;  /* owning QP side and WR / receive index */
};

/* One work request as generated, and what was observed about it. */
struct wrs {
    uint8_t op; /* enum mroce_wr_opcode */
    unsigned flags;
    uint32_t len;
    int nsge;
    int lbuf[MROCE_MAX_SGE]; /* local SGE buffers */
    int rbuf;                /* WRITE target / READ source (peer's arena) */
    int word;                /* atomics: index in S->word */
    int recv;                /* consumes the peer's receive #recv, else -1 */
    uint32_t imm;
    uint64_t cmp_add, swap;
    uint8_t resp_seen; /* the peer sent a READ/ATOMIC response for it */
    uint64_t resp_val; /* ATOMIC_RESP value */
    uint16_t stream;   /* stream it is posted on (0 without streams) */
    uint32_t smsn;     /* its MSN in that stream */
    uint32_t srsn;     /* the RSN in that stream of the receive it consumes */
};

struct rcv {
    int nsge;
    int buf[MROCE_MAX_SGE];
    uint32_t cap;
    int wr;          /* the peer's WR that consumes it */
    uint16_t stream; /* that WR's stream */
};

/* What one PSN of a QP side's PSN space carried (from the tx hook). */
struct pktrec {
    uint8_t op, seen, verified;
    uint32_t msn, off, len;
    uint64_t aval; /* ATOMIC_RESP value */
};

struct qs {
    int host, peer, pair;
    mre_qp *qp;
    struct mre_qp_attr attr;
    struct wrs *wr;
    int nwr, capwr;
    struct rcv *rv;
    int nrv, caprv;
    int posted, next_cpl;   /* send queue: posted, next to complete */
    int rposted, next_rcpl; /* receive queue */
    int rinitial;           /* receives posted before the run */
    int phase2;             /* WRs from this index wait for t_phase */
    struct pktrec *rec;     /* by PSN - start_psn */
    uint32_t nrec, caprec;
    uint32_t start_psn;
    uint32_t cum_checked; /* peer ACK cum verified up to here */
    uint32_t qpn;
    /* streams: nst streams (1 without); WR index by (stream, MSN); next
     * WR / receive expected to complete per stream; last WR per stream */
    int nst;
    int *sidx[MAXST];
    int nsidx[MAXST], capsidx[MAXST];
    int nrsn[MAXST];
    int next_cpl_s[MAXST], next_rcpl_s[MAXST], last_wr_s[MAXST];
    /* planes: np negotiated (1: none); per plane, packets the fabric saw
     * it send and ACKs/NAKs delivered to it, the engine's plane counters
     * when the run began, the probe count last seen, the last probe */
    int np;
    uint64_t pl_tx[MAXPL], pl_rx[MAXPL];
    struct mre_plane_stats pl_base[MAXPL];
    uint64_t base_tx_pkts, base_rx_acks;
    uint32_t pl_probes[MAXPL], pl_nprobe[MAXPL];
    mroce_tstamp pl_last_probe[MAXPL];
};

struct region {
    size_t off, len;
    mre_mr *mr;
};

struct hostmem {
    uint8_t *mem;    /* the arena the engine reads and writes */
    uint8_t *shadow; /* the expected contents */
    size_t size;
    struct region reg[MAXREG];
    int nreg;
};

struct word {
    int host, buf;
    uint64_t init; /* initial value */
    uint64_t sim;  /* value if executed in generation order */
};

struct stats {
    uint64_t scenarios, msgs, bytes, pkts, retx, retx_path, retx_ooo, retx_rto,
        retx_probe, retx_rnr, dups, rx_dups, drop_loss, drop_corrupt,
        drop_blackhole, drop_queue, drop_other, ecn_marks, timeouts,
        paths_retired, acks_checked, psns_checked;
    uint64_t pl_scen[4], pl_fails, pl_grays, pl_downs, pl_probes, pl_adopted,
        pl_moved, pl_pkts, pl_fewer; /* pl_scen: P = 1, 2, 4, 8; pl_fewer:
                                        QP sides on fewer planes than P */
    mroce_tstamp max_model_time;
};

/* A plane event: the whole plane fails (every spine blackholed) or turns
 * gray (every spine loses `loss`) from `on` to `off` (model time after t0;
 * MROCE_TSTAMP_INF: to the end). */
enum { PL_FAIL, PL_GRAY };
struct plev {
    int plane, kind, state; /* state: 0 before, 1 on, 2 over */
    mroce_tstamp on, off;
    double loss;
};

struct scen {
    uint64_t seed;
    int verbose;
    uint64_t rng, rng_run;
    char desc[768];
    struct mroce_netdrive_config ncfg;
    struct mre_ep_config ecfg;
    int blackhole;              /* spine index or -1 */
    mroce_tstamp bh_on, bh_off; /* blackhole period, relative to t0 */
    int bh_state;               /* 0 before, 1 on, 2 over */
    int gray_spine;             /* spine with random loss, or -1 */
    double gray_loss;
    int slow_host; /* host with a slow downlink, or -1 */
    uint64_t slow_bps;
    int psn_wrap; /* start PSNs just below 2^32 */
    int late_recv, big, lossy;
    int tight_rq;          /* small receive queues, refilled on completion */
    int streams;           /* some pair uses several streams */
    int phased;            /* part of the work waits until t_phase */
    int nplanes;           /* P: planes of the fabric */
    int survivor;          /* a plane no plane event touches */
    int host_planes[MAXH]; /* planes each host's endpoint attaches to */
    struct plev plev[MAXPLEV];
    int nplev, plane_fail;
    uint64_t rng_pl; /* the planes' own generator */
    mroce_tstamp t_phase;
    mroce_tstamp spine_delay[8];
    uint64_t budget, used;
    int nhosts, npairs, nqs;
    struct qs q[MAXQS];
    struct hostmem h[MAXH];
    struct bufd *buf;
    int nbuf, capbuf;
    struct word *word;
    int nword;
    int host_words[MAXH][4], nhost_words[MAXH];
    struct mroce_testbed *tb;
    mroce_tstamp t0, t_late, limit;
    int late_done, phase_done;
    int fails;
    int aborted, dumped;
    struct stats st;
    uint8_t tmp[MROCE_NET_MAX_PKT];
};

static TESTUTIL_PRINTF(2, 3) void fail(struct scen *S, const char *fmt, ...)
{
    va_list ap;
    if (S->fails++ < MAX_FAIL_MSGS) {
        printf("seed %" PRIu64 ": FAIL: ", S->seed);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
    } else if (S->fails == MAX_FAIL_MSGS + 1) {
        printf("seed %" PRIu64 ": (further failures not printed)\n", S->seed);
    }
}

static TESTUTIL_PRINTF(2, 3) void trace(struct scen *S, const char *fmt, ...)
{
    va_list ap;
    if (!S->verbose)
        return;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

static void *grow(void *p, int *cap, int need, size_t sz)
{
    if (need <= *cap)
        return p;
    int n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    p = realloc(p, (size_t)n * sz);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memset((char *)p + (size_t)*cap * sz, 0, (size_t)(n - *cap) * sz);
    *cap = n;
    return p;
}

static int new_buf(struct scen *S, int host, uint32_t len, uint32_t align,
                   uint8_t role, int qs, int idx)
{
    S->buf = grow(S->buf, &S->capbuf, S->nbuf + 1, sizeof(*S->buf));
    struct bufd *b = &S->buf[S->nbuf];
    b->host = host;
    b->region = (int)below(&S->rng, (uint32_t)S->h[host].nreg);
    b->len = len;
    b->align = align;
    b->role = role;
    b->qs = qs;
    b->idx = idx;
    return S->nbuf++;
}

static uint8_t *bmem(struct scen *S, int b)
{
    return S->h[S->buf[b].host].mem + S->buf[b].off;
}
static uint8_t *bshadow(struct scen *S, int b)
{
    return S->h[S->buf[b].host].shadow + S->buf[b].off;
}
static uint32_t bkey(struct scen *S, int b)
{
    const struct bufd *d = &S->buf[b];
    return mre_mr_lkey(S->h[d->host].reg[d->region].mr);
}

/* Split len into n parts (some may be empty), each its own buffer. */
static void split_bufs(struct scen *S, int host, uint32_t len, int n,
                       uint8_t role, int qs, int idx, int *out)
{
    uint32_t cut[MROCE_MAX_SGE + 1];
    cut[0] = 0;
    cut[n] = len;
    for (int i = 1; i < n; i++)
        cut[i] = len ? below(&S->rng, len + 1) : 0;
    /* insertion sort of the inner cuts */
    for (int i = 2; i < n; i++)
        for (int j = i; j > 1 && cut[j] < cut[j - 1]; j--) {
            uint32_t t = cut[j];
            cut[j] = cut[j - 1];
            cut[j - 1] = t;
        }
    for (int i = 0; i < n; i++)
        out[i] = new_buf(S, host, cut[i + 1] - cut[i], 1, role, qs, idx);
}

static int pick_nsge(struct scen *S, uint32_t len)
{
    if (len == 0)
        return (int)below(&S->rng, 2);
    if (chance(&S->rng, 50))
        return 1;
    return 1 + (int)below(&S->rng, MROCE_MAX_SGE);
}

static uint32_t pick_size(struct scen *S, uint32_t mtu, uint32_t maxsz)
{
    uint32_t len;
    if (chance(&S->rng, 25)) {
        /* Packetisation edges: around multiples of the negotiated MTU. */
        len = mtu * (1 + below(&S->rng, 4));
        len = len - 1 + below(&S->rng, 3);
    } else {
        len = log_uniform(&S->rng, maxsz);
    }
    uint64_t left = S->budget > S->used ? S->budget - S->used : 0;
    if (len > left)
        len = left ? (uint32_t)below(&S->rng,
                                     (uint32_t)(left < 4096 ? left : 4096))
                   : 0;
    S->used += len;
    return len;
}

static int consumes_recv(int op)
{
    return op == MROCE_WR_SEND || op == MROCE_WR_SEND_WITH_IMM ||
           op == MROCE_WR_WRITE_WITH_IMM;
}
static int is_atomic_op(int op)
{
    return op == MROCE_WR_FETCH_ADD || op == MROCE_WR_CMP_SWAP;
}

/* Work for QP side x towards its peer y. */
static void gen_work(struct scen *S, int xi)
{
    struct qs *x = &S->q[xi], *y = &S->q[x->peer];
    uint64_t *r = &S->rng;
    uint32_t mtu = x->attr.mtu < y->attr.mtu ? x->attr.mtu : y->attr.mtu;
    uint32_t maxsz = S->big          ? (16u << 20)
                     : chance(r, 10) ? (1u << 20)
                                     : (256u << 10);
    int nwr = 1 + (int)below(r, S->big ? 10 : 40);
    static const uint8_t mix[] = {
        MROCE_WR_SEND,    MROCE_WR_SEND,  MROCE_WR_SEND_WITH_IMM,
        MROCE_WR_WRITE,   MROCE_WR_WRITE, MROCE_WR_WRITE_WITH_IMM,
        MROCE_WR_READ,    MROCE_WR_READ,  MROCE_WR_FETCH_ADD,
        MROCE_WR_CMP_SWAP};
    for (int i = 0; i < nwr; i++) {
        x->wr = grow(x->wr, &x->capwr, x->nwr + 1, sizeof(*x->wr));
        int wi = x->nwr++;
        struct wrs *w = &x->wr[wi];
        w->op = mix[below(r, sizeof(mix))];
        /* Streams draw from their own generator, so scenarios without
         * streams are the ones they were before streams existed. */
        if (x->nst > 1) {
            uint64_t sr = S->seed * 0x2545f4914f6cdd1dull ^
                          (uint64_t)(xi * 64 + i);
            w->stream = (uint16_t)(testutil_rand64(&sr) % (uint64_t)x->nst);
        }
        x->sidx[w->stream] = grow(x->sidx[w->stream], &x->capsidx[w->stream],
                                  x->nsidx[w->stream] + 1, sizeof(int));
        w->smsn = (uint32_t)x->nsidx[w->stream];
        x->sidx[w->stream][x->nsidx[w->stream]++] = wi;
        x->last_wr_s[w->stream] = wi;
        w->recv = -1;
        w->word = -1;
        w->rbuf = -1;
        w->imm = (uint32_t)rnd(r);
        if (chance(r, 70) || i == nwr - 1)
            w->flags |=
                MROCE_SEND_SIGNALED; /* the last one tells us all are done */
        if (x->nst > 1)
            w->flags |= MROCE_SEND_SIGNALED; /* order checked on every WR */
        if (chance(r, 5))
            w->flags |= MROCE_SEND_FENCE;
        if (chance(r, 5))
            w->flags |= MROCE_SEND_SOLICITED;
        if (is_atomic_op(w->op)) {
            struct word *wd;
            w->len = 8;
            w->nsge = 1;
            w->lbuf[0] = new_buf(S, x->host, 8, 1, B_RESULT, xi, wi);
            w->word = S->host_words[y->host][below(
                r, (uint32_t)S->nhost_words[y->host])];
            wd = &S->word[w->word];
            if (w->op == MROCE_WR_FETCH_ADD) {
                w->cmp_add = chance(r, 50) ? 1 + below(r, 1000) : rnd(r);
                wd->sim += w->cmp_add;
            } else {
                /* Compare with the value the word would have if the atomics
                 * ran in generation order, usually: some swaps succeed. */
                w->cmp_add = chance(r, 60) ? wd->sim : rnd(r);
                w->swap = rnd(r);
                if (wd->sim == w->cmp_add)
                    wd->sim = w->swap;
            }
            continue;
        }
        w->len = pick_size(S, mtu, maxsz);
        w->nsge = pick_nsge(S, w->len);
        if (w->nsge == 0 && w->len)
            w->nsge = 1;
        if (w->op == MROCE_WR_READ) {
            split_bufs(S, x->host, w->len, w->nsge, B_RDST, xi, wi, w->lbuf);
            w->rbuf = new_buf(S, y->host, w->len, 1, B_RSRC, xi, wi);
            continue;
        }
        split_bufs(S, x->host, w->len, w->nsge, B_SRC, xi, wi, w->lbuf);
        if (w->len <= MROCE_MAX_INLINE && chance(r, 40))
            w->flags |= MROCE_SEND_INLINE;
        if (w->op == MROCE_WR_WRITE || w->op == MROCE_WR_WRITE_WITH_IMM)
            w->rbuf = new_buf(S, y->host, w->len, 1, B_WTGT, xi, wi);
        if (consumes_recv(w->op)) {
            y->rv = grow(y->rv, &y->caprv, y->nrv + 1, sizeof(*y->rv));
            int ri = y->nrv++;
            struct rcv *rv = &y->rv[ri];
            w->recv = ri;
            rv->wr = wi;
            rv->stream = w->stream;
            w->srsn = (uint32_t)x->nrsn[w->stream]++;
            if (w->op == MROCE_WR_WRITE_WITH_IMM) {
                /* Data goes to raddr; the receive's buffer must stay
                 * untouched. */
                rv->nsge = (int)below(r, 3);
                rv->cap = rv->nsge ? below(r, 65) : 0;
            } else {
                rv->cap = w->len + (chance(r, 50) ? 0 : below(r, 65));
                rv->nsge = pick_nsge(S, rv->cap);
                if (rv->nsge == 0 && rv->cap)
                    rv->nsge = 1;
            }
            split_bufs(S, y->host, rv->cap, rv->nsge, B_RECV, x->peer, ri,
                       rv->buf);
        }
    }
}

static uint32_t pow2_ceil(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

static void gen_attr(struct scen *S, struct mre_qp_attr *a)
{
    uint64_t *r = &S->rng;
    static const uint16_t mtus[] = {256, 1024, 4096, 8000};
    static const uint32_t swr[] = {4, 16, 64, 256};
    mre_qp_attr_default(a);
    a->mtu = mtus[below(r, 4)];
    a->npaths = (uint16_t)(1 + log_uniform(r, 255));
    a->window = 64u << below(r, 7);
    a->max_rd_atomic = 1 + below(r, 16);
    a->max_send_wr = swr[below(r, 4)];
    a->cc_algo = chance(r, 80) ? MROCE_CC_DELAY_ECN : MROCE_CC_NONE;
    a->credit_mode = S->ecfg.rx_credit_bytes != 0;
    if (chance(r, 30))
        a->min_rto = 50000 + below(r, 950000);
    if (chance(r, 30))
        a->max_ack_delay = 1000 + below(r, 40000);
    if (chance(r, 30))
        a->ooo_thresh = 4 + log_uniform(r, 252);
    if (chance(r, 40))
        a->init_cwnd = 4096 + log_uniform(r, 1u << 20);
    if (chance(r, 20))
        a->path_burst = (uint8_t)(2 + below(r, 63));
    if (chance(r, 50))
        a->path_reuse = 1; /* PATH-16, as libmroce sets it */
    /* 30% uniform loss makes eight timeouts in a row on one packet merely
     * unlikely, not impossible: give lossy scenarios retries enough that
     * running out of them would mean a stuck engine, not bad luck.  A dead
     * spine out of two leaves only ~1/4 of entropies with a live round trip
     * (the ACK takes the reverse of the data's entropy), and the engine
     * tries about one new entropy per backed-off RTO (a slot retires after
     * 3 losses, cwnd is one packet after a timeout): it gets there, but may
     * need well over 30 RTOs. */
    a->retry_cnt = S->blackhole >= 0 || S->plane_fail ? 200 : S->lossy ? 30 : 7;
    /* The runs end by checking that the engines fall idle, which a
     * keepalive never lets a connected QP do: retry_cnt alone decides
     * (liveness has its own test, test_engine_liveness). */
    a->peer_timeout = 0;
    a->handshake_timeout = 20000000000ull;
}

/* Planes, from a generator of their own so that scenarios of one plane are
 * the ones they were before planes existed: P = 1 for half the seeds, else
 * 2, 4 or (rarely) 8 planes, each with the fabric's spine count and its own
 * host links; and plane events, timed from t0: a plane failing (flapping
 * back after a while, or not) and a gray plane, lossy on every spine.  The
 * planes they hit are chosen once the QPs exist (plane_pick()). */
static int one_plane; /* --one-plane: every seed as it was before planes */

static void plane_draw(struct scen *S)
{
    uint64_t *r = &S->rng_pl;
    *r = S->seed * 0xd1b54a32d192ed03ull ^ 0x706c616e6573ull;
    unsigned c = below(r, 100);
    S->nplanes = c < 50 || one_plane ? 1 : c < 72 ? 2 : c < 94 ? 4 : 8;
    S->survivor = 0;
    for (int h = 0; h < MAXH; h++)
        S->host_planes[h] = S->nplanes;
    if (S->nplanes == 1)
        return;
    int nfail = chance(r, 70) + (S->nplanes >= 4 && chance(r, 30));
    int gray = chance(r, 35);
    for (int i = 0; i < nfail + gray; i++) {
        struct plev *e = &S->plev[S->nplev++];
        e->kind = i < nfail ? PL_FAIL : PL_GRAY;
        e->on = chance(r, 25) ? 0 : below(r, 300000);
        e->off = chance(r, 50) ? MROCE_TSTAMP_INF
                               : e->on + 1 + below(r, 3000000);
        e->loss = 0.05 + 0.45 * unif(r);
        e->plane = -1;
    }
    S->plane_fail = nfail > 0;
    /* Now and then a host on fewer planes (1 .. P/2: the first ones), so
     * that its connections use min(local, peer) planes (CONN-28), or one
     * without the PLANES extension. */
    for (int h = 0; h < MAXH; h++)
        S->host_planes[h] = chance(r, 90)
                                ? S->nplanes
                                : 1 << below(r, S->nplanes == 2   ? 1
                                                : S->nplanes == 4 ? 2
                                                                  : 3);
}

/* The planes a QP side's connection uses. */
static int qs_planes(const struct scen *S, const struct qs *x)
{
    int a = S->host_planes[x->host], b = S->host_planes[S->q[x->peer].host];
    return a < b ? a : b;
}

/* The planes the events hit: never the survivor, a plane every QP uses
 * and has a home slot on (slot i's home is plane i % P), so that one plane
 * every connection sprays over stays alive throughout. */
static void plane_pick(struct scen *S)
{
    uint64_t *r = &S->rng_pl;
    uint32_t m = (uint32_t)S->nplanes;
    if (S->nplanes == 1)
        return;
    for (int i = 0; i < S->nqs; i++) {
        if (S->q[i].attr.npaths < m)
            m = S->q[i].attr.npaths;
        if ((uint32_t)qs_planes(S, &S->q[i]) < m)
            m = (uint32_t)qs_planes(S, &S->q[i]);
    }
    S->survivor = (int)below(r, m);
    for (int i = 0; i < S->nplev; i++)
        S->plev[i].plane = (S->survivor + 1 +
                            (int)below(r, (uint32_t)S->nplanes - 1)) %
                           S->nplanes;
}

static void gen(struct scen *S)
{
    uint64_t *r = &S->rng;
    struct mroce_net_config *c = &S->ncfg.net;
    mroce_netdrive_config_default(&S->ncfg);
    mre_ep_config_default(&S->ecfg);
    plane_draw(S);
    c->seed = S->seed;
    S->nhosts = 2 + (int)below(r, 3);
    c->hosts = (uint32_t)S->nhosts;
    c->spines = 1 + below(r, 8);
    c->delay = 500 + below(r, 10000);
    static const uint64_t rates[] = {10000000000ull, 25000000000ull,
                                     100000000000ull, 400000000000ull};
    c->rate_bps = chance(r, 5) ? 0
                               : rates[below(r, 4)]; /* 0: infinitely fast */
    static const uint32_t upq[] = {2048, 8192, 8192, 65536};
    S->ncfg.uplink_queue_bytes = upq[below(r, 4)];
    unsigned lc = below(r, 100);
    c->loss = lc < 40   ? 0
              : lc < 70 ? 0.02 * unif(r)
              : lc < 90 ? 0.02 + 0.08 * unif(r)
                        : 0.1 + 0.2 * unif(r);
    c->dup = chance(r, 50) ? 0 : 0.1 * unif(r);
    c->corrupt = chance(r, 60) ? 0 : 0.05 * unif(r);
    c->reorder = chance(r, 50) ? 0 : 0.3 * unif(r);
    c->reorder_max = 1000 + below(r, 50000);
    static const uint32_t qlim[] = {MROCE_NET_UNLIMITED, 1u << 20, 256u << 10,
                                    64u << 10};
    static const uint32_t ecn[] = {MROCE_NET_UNLIMITED, 8u << 10, 32u << 10,
                                   64u << 10, 256u << 10};
    c->queue_limit = qlim[below(r, 4)];
    c->ecn_thresh = ecn[below(r, 5)];
    if (chance(r, 50))
        for (uint32_t i = 0; i < c->spines; i++)
            S->spine_delay[i] = below(r, 20000);
    S->blackhole = c->spines >= 2 && chance(r, 10) ? (int)below(r, c->spines)
                                                   : -1;
    /* Half the blackholes flap: the link dies mid-run (taking packets in
     * flight with it) and may come back. */
    S->bh_on = chance(r, 50) ? 0 : below(r, 200000);
    S->bh_off = chance(r, 50) ? MROCE_TSTAMP_INF
                              : S->bh_on + 1 + below(r, 3000000);
    S->gray_spine = chance(r, 10) ? (int)below(r, c->spines) : -1;
    S->gray_loss = 0.05 + 0.45 * unif(r);
    if (S->gray_spine >= 0 && c->spines == 1)
        S->gray_loss *= 0.5;
    /* A slow receiver makes incast queues: drops, CE marks, RTT swings. */
    S->slow_host = chance(r, 15) ? (int)below(r, (uint32_t)S->nhosts) : -1;
    S->slow_bps = (c->rate_bps ? c->rate_bps : 100000000000ull) /
                  (2 + below(r, 20));
    if (S->slow_bps < 1000000000ull)
        S->slow_bps = 1000000000ull;
    /* Serial arithmetic: PSNs that cross 2^32 during the run. */
    S->psn_wrap = chance(r, 30);
    if (chance(r, 20))
        S->ecfg.rx_credit_bytes = 8192 + log_uniform(r, 1u << 20);
    S->lossy = c->loss > 0.05 || c->corrupt > 0.02 || S->blackhole >= 0 ||
               S->gray_spine >= 0 || S->nplev > 0;
    c->planes = (uint32_t)S->nplanes;
    S->big = chance(r, 4);
    S->budget = S->big ? (24u << 20) : 64 * 1024 + log_uniform(r, 2u << 20);
    /* RNR recovery (receives posted late) only on a network that loses
     * nothing: with losses, the message ahead of an RNR'd one may take a
     * backed-off RTO to repair and the RNR retries would run out, which is
     * the protocol working as specified, not a bug. */
    S->late_recv = c->loss == 0 && c->corrupt == 0 && S->blackhole < 0 &&
                   S->gray_spine < 0 && chance(r, 15);
    /* Receive queues a few entries deep, refilled as receives complete:
     * the sender runs ahead, meets RNR NAKs with data in flight, and the
     * RQ ring wraps.  Lossless for the reason above, and no slow host: a
     * long message ahead may hold the RQ for a while, so RNR retries are
     * set to their maximum. */
    S->tight_rq = c->loss == 0 && c->corrupt == 0 && S->blackhole < 0 &&
                  S->gray_spine < 0 && S->slow_host < 0 &&
                  c->rate_bps >= 25000000000ull && !S->big && chance(r, 60);
    if (S->nplev) /* plane events lose packets: as for loss, above */
        S->late_recv = S->tight_rq = 0;
    if (S->late_recv || S->tight_rq)
        c->queue_limit = MROCE_NET_UNLIMITED;

    for (int hi = 0; hi < S->nhosts; hi++) {
        S->h[hi].nreg = 1 + (int)below(r, MAXREG);
        S->nhost_words[hi] = 1 + (int)below(r, 3);
        for (int k = 0; k < S->nhost_words[hi]; k++) {
            S->word = realloc(S->word,
                              (size_t)(S->nword + 1) * sizeof(*S->word));
            S->word[S->nword].host = hi;
            S->word[S->nword].buf = new_buf(S, hi, 8, 8, B_WORD, -1, S->nword);
            S->host_words[hi][k] = S->nword++;
        }
    }
    S->npairs = 1 + (int)below(r, MAXPAIRS);
    S->nqs = 2 * S->npairs;
    for (int p = 0; p < S->npairs; p++) {
        struct qs *a = &S->q[2 * p], *b = &S->q[2 * p + 1];
        a->host = (int)below(r, (uint32_t)S->nhosts);
        b->host = (a->host + 1 + (int)below(r, (uint32_t)S->nhosts - 1)) %
                  S->nhosts;
        a->peer = 2 * p + 1;
        b->peer = 2 * p;
        a->pair = b->pair = p;
        gen_attr(S, &a->attr);
        gen_attr(S, &b->attr);
        /* A third of the scenarios put each pair on several streams, the
         * two sides stating different maxima now and then (SEM-31). */
        uint64_t sr = S->seed * 0x9e3779b97f4a7c15ull ^ 0x73747265616dull ^
                      (uint64_t)p;
        a->nst = b->nst = 1;
        if (testutil_rand64(&sr) % 3 == 0) {
            a->attr.max_streams = (uint16_t)(2 + testutil_rand64(&sr) % 7);
            b->attr.max_streams = testutil_rand64(&sr) % 4
                                      ? a->attr.max_streams
                                      : (uint16_t)(2 +
                                                   testutil_rand64(&sr) % 7);
            a->nst = b->nst = a->attr.max_streams < b->attr.max_streams
                                  ? a->attr.max_streams
                                  : b->attr.max_streams;
            S->streams = 1;
        }
    }
    /* Each word starts at a seed-derived value (layout() writes it into
     * memory); gen_work() advances sim in generation order. */
    for (int k = 0; k < S->nword; k++)
        S->word[k].init = S->word[k].sim = rnd(r);
    for (int i = 0; i < S->nqs; i++)
        gen_work(S, i);
    for (int i = 0; i < S->nqs; i++) {
        struct qs *x = &S->q[i];
        uint32_t need = (uint32_t)x->nrv ? (uint32_t)x->nrv : 1;
        x->attr.max_recv_wr = pow2_ceil(need);
        if (S->tight_rq) {
            x->attr.max_recv_wr = 1u << (1 + below(r, 4)); /* 2..16 */
            x->attr.rnr_retry = 255;
        }
        int cap = x->nrv < (int)x->attr.max_recv_wr ? x->nrv
                                                    : (int)x->attr.max_recv_wr;
        x->rinitial = S->late_recv ? (int)below(r, (uint32_t)cap + 1) : cap;
    }
    S->t_late = 20000 + below(r, 40000);
    /* Phased work: the rest of each queue's WRs is posted only after a
     * pause, usually long enough for everything to have gone idle (timers
     * and path state then restart from quiet). */
    S->phased = chance(r, 25);
    S->t_phase = 50000 + log_uniform(r, 5000000);
    for (int i = 0; i < S->nqs; i++)
        S->q[i].phase2 = S->phased ? (int)below(r, (uint32_t)S->q[i].nwr + 1)
                                   : S->q[i].nwr;
    plane_pick(S);

    snprintf(S->desc, sizeof(S->desc),
             "hosts %d spines %u delay %" PRIu64 " rate %" PRIu64
             "G loss %.3f dup %.3f corrupt %.3f reorder %.3f/%" PRIu64
             " qlim %d ecn %d blackhole %d/%" PRIu64 "..%" PRId64
             " gray %d/%.2f slow %d/%" PRIu64
             "M wrap %d credit %u late_recv %d "
             "tight_rq %d phased %d/%" PRIu64 " big %d budget %" PRIu64
             " pairs %d streams %d",
             S->nhosts, c->spines, (uint64_t)c->delay,
             (uint64_t)(c->rate_bps / 1000000000ull), c->loss, c->dup,
             c->corrupt, c->reorder, (uint64_t)c->reorder_max,
             c->queue_limit == MROCE_NET_UNLIMITED ? -1 : (int)c->queue_limit,
             c->ecn_thresh == MROCE_NET_UNLIMITED ? -1 : (int)c->ecn_thresh,
             S->blackhole, (uint64_t)S->bh_on,
             S->bh_off == MROCE_TSTAMP_INF ? (int64_t)-1 : (int64_t)S->bh_off,
             S->gray_spine, S->gray_loss, S->slow_host, S->slow_bps / 1000000,
             S->psn_wrap, S->ecfg.rx_credit_bytes, S->late_recv, S->tight_rq,
             S->phased, (uint64_t)S->t_phase, S->big, S->budget, S->npairs,
             S->streams);
    /* Only scenarios with planes say so: others print as before. */
    for (int i = -1; S->nplanes > 1 && i < S->nplev; i++) {
        size_t n = strlen(S->desc);
        if (i < 0) {
            snprintf(S->desc + n, sizeof(S->desc) - n, " planes %d survivor %d",
                     S->nplanes, S->survivor);
            for (int h = 0; h < S->nhosts; h++)
                if (S->host_planes[h] != S->nplanes) {
                    n = strlen(S->desc);
                    snprintf(S->desc + n, sizeof(S->desc) - n, " h%d:%d", h,
                             S->host_planes[h]);
                }
            continue;
        }
        const struct plev *e = &S->plev[i];
        snprintf(S->desc + n, sizeof(S->desc) - n,
                 " %s %d/%" PRIu64 "..%" PRId64, e->kind ? "gray" : "fail",
                 e->plane, (uint64_t)e->on,
                 e->off == MROCE_TSTAMP_INF ? (int64_t)-1 : (int64_t)e->off);
        if (e->kind) {
            n = strlen(S->desc);
            snprintf(S->desc + n, sizeof(S->desc) - n, "/%.2f", e->loss);
        }
    }
}

/* Place every buffer in its host's arena: regions separated by unregistered
 * gaps, buffers inside a region separated by 1..64 guard bytes. */
static void layout(struct scen *S)
{
    for (int hi = 0; hi < S->nhosts; hi++) {
        struct hostmem *H = &S->h[hi];
        size_t cur = 64 + below(&S->rng, 256);
        for (int g = 0; g < H->nreg; g++) {
            H->reg[g].off = cur;
            for (int b = 0; b < S->nbuf; b++) {
                struct bufd *d = &S->buf[b];
                if (d->host != hi || d->region != g)
                    continue;
                cur += 1 + below(&S->rng, 64);
                cur = (cur + d->align - 1) / d->align * d->align;
                d->off = cur;
                cur += d->len;
            }
            cur += 1 + below(&S->rng, 64);
            H->reg[g].len = cur - H->reg[g].off;
            cur += 64 + below(&S->rng, 256); /* unregistered gap */
        }
        H->size = cur;
        H->mem = malloc(cur);
        H->shadow = malloc(cur);
        if (!H->mem || !H->shadow) {
            fprintf(stderr, "out of memory\n");
            exit(2);
        }
        uint64_t pst = S->seed * 0x100000001b3ull + (uint64_t)hi;
        for (size_t i = 0; i < cur; i += 8) {
            uint64_t v = rnd(&pst);
            memcpy(H->mem + i, &v, cur - i < 8 ? cur - i : 8);
        }
    }
    for (int k = 0; k < S->nword; k++)
        memcpy(bmem(S, S->word[k].buf), &S->word[k].init, 8);
    for (int hi = 0; hi < S->nhosts; hi++)
        memcpy(S->h[hi].shadow, S->h[hi].mem, S->h[hi].size);
}

/* ---- message contents and placement checks ---- */

/* Bytes [off, off+len) of WR w of side x as posted (sources never change
 * before finalize(), so the shadow holds them). */
static void wr_content(struct scen *S, const struct wrs *w, uint32_t off,
                       uint8_t *out, uint32_t len)
{
    for (int i = 0; i < w->nsge && len; i++) {
        uint32_t bl = S->buf[w->lbuf[i]].len;
        if (off >= bl) {
            off -= bl;
            continue;
        }
        uint32_t k = bl - off < len ? bl - off : len;
        memcpy(out, bshadow(S, w->lbuf[i]) + off, k);
        out += k;
        len -= k;
        off = 0;
    }
}

/* Compare the live memory of an SGE list (buffers bufs[0..n)) at message
 * offset off with want[0..len).  Returns the first bad message offset or -1. */
static int64_t sgl_cmp(struct scen *S, const int *bufs, int n, uint32_t off,
                       const uint8_t *want, uint32_t len)
{
    uint32_t moff = off;
    for (int i = 0; i < n && len; i++) {
        uint32_t bl = S->buf[bufs[i]].len;
        if (off >= bl) {
            off -= bl;
            continue;
        }
        uint32_t k = bl - off < len ? bl - off : len;
        const uint8_t *m = bmem(S, bufs[i]) + off;
        for (uint32_t j = 0; j < k; j++)
            if (m[j] != want[j])
                return (int64_t)moff + j;
        want += k;
        moff += k;
        len -= k;
        off = 0;
    }
    return len ? (int64_t)moff : -1;
}

static const char *op_name(int op)
{
    static const char *const n[] = {"SEND", "SEND_IMM",  "WRITE",   "WRITE_IMM",
                                    "READ", "FETCH_ADD", "CMP_SWAP"};
    return op >= 0 && op <= 6 ? n[op] : "?";
}

/* Data of message x.wr[wi] fully in place at the peer (or, for READ, at x). */
static void check_wr_data(struct scen *S, int xi, int wi, const char *when)
{
    struct qs *x = &S->q[xi], *y = &S->q[x->peer];
    struct wrs *w = &x->wr[wi];
    int64_t bad = -1;
    uint8_t *want;
    if (is_atomic_op(w->op)) {
        if (!w->resp_seen) {
            fail(S, "q%d wr %d %s %s but no ATOMIC_RESP was ever sent", xi, wi,
                 op_name(w->op), when);
            return;
        }
        if (memcmp(bmem(S, w->lbuf[0]), &w->resp_val, 8))
            fail(S,
                 "q%d wr %d %s %s: result buffer differs from the "
                 "ATOMIC_RESP value",
                 xi, wi, op_name(w->op), when);
        return;
    }
    want = malloc(w->len ? w->len : 1);
    if (w->op == MROCE_WR_READ) {
        memcpy(want, bshadow(S, w->rbuf), w->len);
        bad = sgl_cmp(S, w->lbuf, w->nsge, 0, want, w->len);
    } else {
        wr_content(S, w, 0, want, w->len);
        if (w->op == MROCE_WR_WRITE || w->op == MROCE_WR_WRITE_WITH_IMM)
            bad = sgl_cmp(S, &w->rbuf, 1, 0, want, w->len);
        else
            bad = sgl_cmp(S, y->rv[w->recv].buf, y->rv[w->recv].nsge, 0, want,
                          w->len);
    }
    if (bad >= 0)
        fail(S,
             "q%d wr %d %s len %u %s: data differs at message offset %" PRId64,
             xi, wi, op_name(w->op), w->len, when, bad);
    free(want);
}

/* ---- the tx hook: record each data packet, check each ACK ---- */

static struct qs *find_qs(struct scen *S, uint32_t host, uint32_t qpn)
{
    for (int i = 0; i < S->nqs; i++)
        if (S->q[i].qp && (uint32_t)S->q[i].host == host && S->q[i].qpn == qpn)
            return &S->q[i];
    return NULL;
}

static uint8_t wr_wire_op(int op)
{
    switch (op) {
    case MROCE_WR_SEND:
    case MROCE_WR_SEND_WITH_IMM:
        return MROCE_OP_SEND;
    case MROCE_WR_WRITE:
    case MROCE_WR_WRITE_WITH_IMM:
        return MROCE_OP_WRITE;
    case MROCE_WR_READ:
        return MROCE_OP_READ_REQ;
    case MROCE_WR_FETCH_ADD:
        return MROCE_OP_FETCH_ADD;
    default:
        return MROCE_OP_CMP_SWAP;
    }
}

/* A data packet sent by side x: it must carry exactly what its work request
 * (or, for responses, the peer's request) says, and a PSN must carry the
 * same thing on every transmission. */
static void record_tx(struct scen *S, struct qs *x, const struct mrw_pkt *pk)
{
    int xi = (int)(x - S->q);
    struct qs *y = &S->q[x->peer];
    uint32_t idx = pk->base.psn - x->start_psn;
    int is_resp = pk->base.opcode == MROCE_OP_READ_RESP ||
                  pk->base.opcode == MROCE_OP_ATOMIC_RESP;
    uint32_t wmsn = is_resp ? pk->u.resp.req_msn : pk->u.rq.req.msn;
    uint16_t wst = is_resp ? pk->u.resp.stream : pk->u.rq.req.stream;
    uint32_t off = is_resp ? pk->u.resp.offset : pk->u.rq.req.offset;
    /* The WR index of (stream, MSN) in the requester's queue. */
    const struct qs *own = is_resp ? y : x;
    uint32_t msn = wst < MAXST && (int)wst < own->nst &&
                           wmsn < (uint32_t)own->nsidx[wst]
                       ? (uint32_t)own->sidx[wst][wmsn]
                       : 0xffffffffu;
    if (msn == 0xffffffffu) {
        fail(S, "q%d sent stream %u msn %u that was never generated", xi, wst,
             wmsn);
        return;
    }
    uint64_t aval = 0;
    if (idx >= (1u << 26)) {
        fail(S, "q%d sent PSN %u far from its start %u", xi, pk->base.psn,
             x->start_psn);
        return;
    }
    if (pk->base.opcode == MROCE_OP_ATOMIC_RESP)
        for (int i = 0; i < 8; i++)
            aval = aval << 8 | pk->payload[i];
    if (idx >= x->caprec) {
        uint32_t n = x->caprec ? x->caprec : 1024;
        while (n <= idx)
            n *= 2;
        x->rec = realloc(x->rec, (size_t)n * sizeof(*x->rec));
        memset(x->rec + x->caprec, 0,
               (size_t)(n - x->caprec) * sizeof(*x->rec));
        x->caprec = n;
    }
    if (idx >= x->nrec)
        x->nrec = idx + 1;
    struct pktrec *rc = &x->rec[idx];
    if (rc->seen) {
        if (rc->op != pk->base.opcode || rc->msn != msn || rc->off != off ||
            rc->len != pk->payload_len || rc->aval != aval)
            fail(S,
                 "q%d PSN %u retransmitted with different contents "
                 "(op %s/%s msn %u/%u off %u/%u len %u/%u val %" PRIx64
                 "/%" PRIx64 ")",
                 xi, pk->base.psn, mrw_opcode_name(rc->op),
                 mrw_opcode_name(pk->base.opcode), rc->msn, msn, rc->off, off,
                 rc->len, pk->payload_len, rc->aval, aval);
    } else {
        rc->seen = 1;
        rc->op = pk->base.opcode;
        rc->msn = msn;
        rc->off = off;
        rc->len = pk->payload_len;
        rc->aval = aval;
    }
    /* Now check the packet against the work request. */
    if (is_resp) {
        if ((int)msn >= y->posted || msn >= (uint32_t)y->nwr) {
            fail(S, "q%d sent a response for msn %u that q%d never posted", xi,
                 msn, x->peer);
            return;
        }
        struct wrs *w = &y->wr[msn];
        if (pk->base.opcode == MROCE_OP_ATOMIC_RESP) {
            if (!is_atomic_op(w->op)) {
                fail(S, "q%d ATOMIC_RESP for non-atomic msn %u", xi, msn);
                return;
            }
            if (w->resp_seen && w->resp_val != aval)
                fail(S,
                     "q%d atomic msn %u answered with two values %" PRIx64
                     " and %" PRIx64 ": executed twice?",
                     xi, msn, w->resp_val, aval);
            w->resp_seen = 1;
            w->resp_val = aval;
            return;
        }
        if (w->op != MROCE_WR_READ || pk->u.resp.msg_len != w->len ||
            (uint64_t)off + pk->payload_len > w->len) {
            fail(S, "q%d READ_RESP msn %u does not match the READ", xi, msn);
            return;
        }
        w->resp_seen = 1;
        if (pk->payload_len &&
            memcmp(pk->payload, bshadow(S, w->rbuf) + off, pk->payload_len))
            fail(S, "q%d READ_RESP msn %u off %u carries wrong bytes", xi, msn,
                 off);
        return;
    }
    if ((int)msn >= x->posted) {
        fail(S, "q%d sent msn %u which was never posted", xi, msn);
        return;
    }
    struct wrs *w = &x->wr[msn];
    const struct mrw_req_hdr *h = &pk->u.rq.req;
    int imm = (pk->base.flags & MROCE_F_IMM) != 0;
    int want_imm = w->op == MROCE_WR_SEND_WITH_IMM ||
                   w->op == MROCE_WR_WRITE_WITH_IMM;
    if (pk->base.opcode != wr_wire_op(w->op) || h->msg_len != w->len ||
        (uint64_t)off + pk->payload_len > w->len || imm != want_imm ||
        (imm && h->imm != w->imm) || (w->recv >= 0 && h->rsn != w->srsn)) {
        fail(S,
             "q%d %s msn %u: header does not match the WR (op %s len %u "
             "off %u rsn %u imm %d)",
             xi, op_name(w->op), msn, mrw_opcode_name(pk->base.opcode),
             h->msg_len, off, h->rsn, imm);
        return;
    }
    if (w->rbuf >= 0 && (h->raddr != (uint64_t)(uintptr_t)bmem(S, w->rbuf) ||
                         h->rkey != bkey(S, w->rbuf)))
        fail(S, "q%d %s msn %u: wrong raddr/rkey", xi, op_name(w->op), msn);
    if (is_atomic_op(w->op)) {
        uint64_t sa = w->op == MROCE_WR_FETCH_ADD ? w->cmp_add : w->swap;
        uint64_t cmp = w->op == MROCE_WR_CMP_SWAP ? w->cmp_add : 0;
        if (h->raddr != (uint64_t)(uintptr_t)bmem(S, S->word[w->word].buf) ||
            pk->u.rq.atomic.swap_add != sa || pk->u.rq.atomic.compare != cmp)
            fail(S, "q%d %s msn %u: wrong operands", xi, op_name(w->op), msn);
        return;
    }
    if (pk->payload_len) {
        wr_content(S, w, off, S->tmp, pk->payload_len);
        if (memcmp(S->tmp, pk->payload, pk->payload_len))
            fail(S, "q%d %s msn %u off %u: payload differs from the message",
                 xi, op_name(w->op), msn, off);
    }
}

/*
 * Nothing acknowledged before placement (REL).  x sent an ACK, so it covers
 * PSNs of its peer y's space: all below cum_psn and the SACKed ones.  For
 * each such PSN, the tx hook has recorded what it carried when y sent it,
 * and the test knows where those bytes belong, so the check is direct: the
 * bytes must already be in x's memory, now, as the ACK leaves.  This is
 * sound because every target range is written by exactly one packet (targets
 * never overlap and sources never change), so the memory holds the right
 * bytes at a PSN's target iff that PSN was placed.  Per kind:
 *   SEND / WRITE       the payload is at its place in the receive / target;
 *   READ_RESP          the payload is in x's READ destination SGEs;
 *   ATOMIC_RESP        x's result buffer holds the value the packet carried;
 *   READ_REQ / atomic  executed: x holds a responder job for that msn, or
 *                      has already sent the response (a job is only freed
 *                      after its response was sent and acknowledged).
 * Each PSN is checked once, by the first ACK that covers it; later ACKs
 * cannot un-place it.
 */
static void check_ack_psn(struct scen *S, struct qs *x, struct qs *y,
                          uint32_t psn)
{
    int xi = (int)(x - S->q), yi = x->peer;
    uint32_t idx = psn - y->start_psn;
    if (idx >= y->nrec || !y->rec[idx].seen) {
        fail(S, "q%d ACKed PSN %u that q%d never sent", xi, psn, yi);
        return;
    }
    struct pktrec *rc = &y->rec[idx];
    if (rc->verified)
        return;
    rc->verified = 1;
    S->st.psns_checked++;
    int64_t bad = -1;
    if (rc->op == MROCE_OP_SEND || rc->op == MROCE_OP_WRITE) {
        struct wrs *w = &y->wr[rc->msn];
        wr_content(S, w, rc->off, S->tmp, rc->len);
        if (rc->op == MROCE_OP_WRITE)
            bad = sgl_cmp(S, &w->rbuf, 1, rc->off, S->tmp, rc->len);
        else
            bad = sgl_cmp(S, x->rv[w->recv].buf, x->rv[w->recv].nsge, rc->off,
                          S->tmp, rc->len);
    } else if (rc->op == MROCE_OP_READ_RESP) {
        struct wrs *w = &x->wr[rc->msn];
        bad = sgl_cmp(S, w->lbuf, w->nsge, rc->off,
                      bshadow(S, w->rbuf) + rc->off, rc->len);
    } else if (rc->op == MROCE_OP_ATOMIC_RESP) {
        struct wrs *w = &x->wr[rc->msn];
        if (memcmp(bmem(S, w->lbuf[0]), &rc->aval, 8))
            bad = 0;
    } else {
        struct wrs *w = &y->wr[rc->msn];
        int found = w->resp_seen;
        for (uint32_t j = 0; !found && j < x->qp->nrjobs; j++)
            found = x->qp->rjobs[j].active &&
                    x->qp->rjobs[j].req_msn == w->smsn &&
                    x->qp->rjobs[j].stream == w->stream;
        if (!found)
            bad = 0;
    }
    if (bad >= 0)
        fail(S,
             "q%d ACKed PSN %u (%s msn %u off %u len %u of q%d) before it "
             "was placed/executed (first bad offset %" PRId64 ")",
             xi, psn, mrw_opcode_name(rc->op), rc->msn, rc->off, rc->len, yi,
             bad);
}

/* An ACK (or a NAK, whose cum_psn acknowledges too) from x. */
static void check_ack(struct scen *S, struct qs *x, uint32_t cum,
                      const struct mrw_ack_hdr *a)
{
    struct qs *y = &S->q[x->peer];
    S->st.acks_checked++;
    if (mrw_psn_diff(cum, y->cum_checked) < 0) {
        fail(S, "q%d ACK cum %u went backwards (was %u)", (int)(x - S->q), cum,
             y->cum_checked);
        return;
    }
    for (uint32_t p = y->cum_checked; p != cum; p++)
        check_ack_psn(S, x, y, p);
    y->cum_checked = cum;
    for (int j = 0; a && j < a->sack_words; j++)
        for (int i = 0; i < 32; i++)
            if (a->sack[j] >> i & 1)
                check_ack_psn(S, x, y, a->cum_psn + 1 + (uint32_t)(32 * j + i));
}

/* A packet x sent on plane p->plane.  PATH-20: every packet on plane
 * entropy % P (data: its slot's; ACK/NAK: the echoed one's), so with one
 * plane on plane 0.  PATH-21, PATH-22: a data packet on a plane x has
 * marked down is a probe (the plane's probe count moved by one for it),
 * asks for an immediate ACK, and comes at least an RTO (min_rto, its
 * floor) after the plane's previous probe; on a plane up no probe is
 * counted. */
static void plane_tx(struct scen *S, struct qs *x,
                     const struct mroce_netdrive_pkt *p,
                     const struct mrw_pkt *pk)
{
    int xi = (int)(x - S->q);
    uint8_t k = p->plane;
    if (x->np <= 1) {
        if (k != 0)
            fail(S, "q%d (one plane) sent %s on plane %u", xi,
                 mrw_opcode_name(pk->base.opcode), k);
        return;
    }
    if (k >= x->np || pk->base.entropy % x->np != k) {
        fail(S, "q%d sent %s psn %u entropy %u on plane %u of %d (PATH-20)", xi,
             mrw_opcode_name(pk->base.opcode), pk->base.psn, pk->base.entropy,
             k, x->np);
        return;
    }
    x->pl_tx[k]++;
    S->st.pl_pkts++;
    if (!mrw_opcode_has_psn(pk->base.opcode))
        return;
    const struct mre_plane *pl = &x->qp->planes->p[k];
    if (!pl->down) {
        if (pl->probes != x->pl_probes[k])
            fail(S, "q%d counted a probe on plane %u, which is up", xi, k);
    } else if (pl->probes != x->pl_probes[k] + 1) {
        fail(S,
             "q%d sent %s psn %u on plane %u, marked down, not as a probe "
             "(PATH-21)",
             xi, mrw_opcode_name(pk->base.opcode), pk->base.psn, k);
    } else {
        if (!(pk->base.flags & MROCE_F_ACK_REQ))
            fail(S, "q%d probe psn %u on plane %u without ACK_REQ (PATH-22)",
                 xi, pk->base.psn, k);
        if (x->pl_nprobe[k] &&
            p->now - x->pl_last_probe[k] < x->qp->attr.min_rto)
            fail(S,
                 "q%d probes on plane %u %" PRIu64
                 " ns apart, under min_rto (PATH-22)",
                 xi, k, (uint64_t)(p->now - x->pl_last_probe[k]));
        x->pl_last_probe[k] = p->now;
        x->pl_nprobe[k]++;
    }
    x->pl_probes[k] = pl->probes;
}

static int tx_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct scen *S = user;
    struct mrw_pkt pk;
    int rc = mrw_pkt_decode(&pk, p->buf, p->len);
    if (rc < 0) {
        fail(S, "host %u sent an undecodable packet (%s)", p->src,
             mrw_wire_error_name(rc));
        return MROCE_NETDRIVE_PASS;
    }
    struct qs *x = find_qs(S, p->src, p->qp_num);
    if (S->verbose) {
        printf("%10" PRIu64 " h%u->h%u q%d %-12s psn %u fl %03x e %u", p->now,
               p->src, p->dst, x ? (int)(x - S->q) : -1,
               mrw_opcode_name(pk.base.opcode), pk.base.psn, pk.base.flags,
               pk.base.entropy);
        if (S->nplanes > 1)
            printf(" pl %u", p->plane);
        if (pk.base.opcode == MROCE_OP_ACK)
            printf(" cum %u sack %u:%08x echo %u%s", pk.u.ack.cum_psn,
                   pk.u.ack.sack_words,
                   pk.u.ack.sack_words ? pk.u.ack.sack[0] : 0,
                   pk.u.ack.echo_psn,
                   pk.u.ack.echo_flags & MROCE_ECHO_DUP ? " DUP" : "");
        else if (pk.base.opcode == MROCE_OP_NAK)
            printf(" %s nak_psn %u", mrw_nak_code_name(pk.u.nak.code),
                   pk.u.nak.nak_psn);
        else if (pk.base.opcode == MROCE_OP_READ_RESP ||
                 pk.base.opcode == MROCE_OP_ATOMIC_RESP)
            printf(" req_msn %u off %u len %u", pk.u.resp.req_msn,
                   pk.u.resp.offset, pk.payload_len);
        else if (mrw_opcode_has_psn(pk.base.opcode))
            printf(" msn %u off %u len %u/%u", pk.u.rq.req.msn,
                   pk.u.rq.req.offset, pk.payload_len, pk.u.rq.req.msg_len);
        putchar('\n');
    }
    if (!x)
        return MROCE_NETDRIVE_PASS; /* handshake: QPs not known yet */
    plane_tx(S, x, p, &pk);
    if (mrw_opcode_has_psn(pk.base.opcode)) {
        S->st.pkts++;
        record_tx(S, x, &pk);
    } else if (pk.base.opcode == MROCE_OP_ACK) {
        check_ack(S, x, pk.u.ack.cum_psn, &pk.u.ack);
    } else if (pk.base.opcode == MROCE_OP_NAK) {
        check_ack(S, x, pk.u.nak.cum_psn, NULL);
        if (pk.u.nak.code != MROCE_NAK_RNR || !(S->late_recv || S->tight_rq))
            fail(S, "q%d sent NAK %s for PSN %u", (int)(x - S->q),
                 mrw_nak_code_name(pk.u.nak.code), pk.u.nak.nak_psn);
    }
    return MROCE_NETDRIVE_PASS;
}

/* What the fabric delivers (after loss, corruption, CE marks): with -v,
 * traced; with planes, each intact ACK and NAK counted for the QP and
 * plane it arrives at, which the engine's per-plane rx_acks must match. */
static int rx_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct scen *S = user;
    struct mrw_pkt pk;
    /* Without -v only ACKs and NAKs are decoded (Opcode is the base
     * header's second byte): no CRC pass over every data payload. */
    if (!S->verbose && (p->len < 2 || (p->buf[1] != MROCE_OP_ACK &&
                                       p->buf[1] != MROCE_OP_NAK)))
        return MROCE_NETDRIVE_PASS;
    int rc = mrw_pkt_decode(&pk, p->buf, p->len);
    if (rc == 0 && S->nplanes > 1 &&
        (pk.base.opcode == MROCE_OP_ACK || pk.base.opcode == MROCE_OP_NAK)) {
        struct qs *x = find_qs(S, p->dst, pk.base.dst_qpn);
        if (x && x->np > 1 && p->plane < x->np)
            x->pl_rx[p->plane]++;
    }
    if (!S->verbose)
        return MROCE_NETDRIVE_PASS;
    printf("%10" PRIu64 "   rx h%u->h%u spine %u %s", p->now, p->src, p->dst,
           p->spine,
           rc < 0 ? mrw_wire_error_name(rc) : mrw_opcode_name(pk.base.opcode));
    if (rc == 0)
        printf(" psn %u e %u%s", pk.base.psn, pk.base.entropy,
               p->ecn == MROCE_ECN_CE ? " CE" : "");
    putchar('\n');
    return MROCE_NETDRIVE_PASS;
}

/* ---- the application: post work, reap and check completions ---- */

static void post_recvs(struct scen *S, struct qs *x, int upto)
{
    int xi = (int)(x - S->q);
    while (x->rposted < upto) {
        struct mroce_recv_wr rw[8];
        struct mroce_sge sg[8][MROCE_MAX_SGE];
        int n = 1 + (int)below(&S->rng_run, 8);
        if (n > upto - x->rposted)
            n = upto - x->rposted;
        for (int k = 0; k < n; k++) {
            struct rcv *rv = &x->rv[x->rposted + k];
            memset(&rw[k], 0, sizeof(rw[k]));
            rw[k].wr_id = (uint64_t)xi << 32 | (uint32_t)(x->rposted + k);
            rw[k].stream = rv->stream;
            rw[k].num_sge = rv->nsge;
            rw[k].sg_list = rv->nsge ? sg[k] : NULL;
            for (int i = 0; i < rv->nsge; i++) {
                sg[k][i].addr = (uint64_t)(uintptr_t)bmem(S, rv->buf[i]);
                sg[k][i].length = S->buf[rv->buf[i]].len;
                sg[k][i].lkey = bkey(S, rv->buf[i]);
            }
            rw[k].next = k + 1 < n ? &rw[k + 1] : NULL;
        }
        struct mroce_recv_wr *bad = NULL;
        int rc = mre_qp_post_recv(x->qp, rw, &bad);
        if (rc < 0) {
            fail(S, "q%d post_recv failed: %s", xi, mre_strerror(rc));
            S->aborted = 1;
            return;
        }
        x->rposted += n;
    }
}

/* Post as many WRs as the send queue has room for, in random batches. */
static int post_sends(struct scen *S, struct qs *x, mroce_tstamp now)
{
    int xi = (int)(x - S->q), posted = 0;
    mre_qp *qp = x->qp;
    int lim = S->phase_done ? x->nwr : x->phase2;
    while (x->posted < lim) {
        uint32_t room = qp->sq_mask + 1 - (qp->sq_tail - qp->sq_head);
        if (room == 0)
            break;
        struct mroce_send_wr sw[8];
        struct mroce_sge sg[8][MROCE_MAX_SGE];
        int n = 1 + (int)below(&S->rng_run, 8);
        if ((uint32_t)n > room)
            n = (int)room;
        if (n > lim - x->posted)
            n = lim - x->posted;
        for (int k = 0; k < n; k++) {
            struct wrs *w = &x->wr[x->posted + k];
            memset(&sw[k], 0, sizeof(sw[k]));
            sw[k].wr_id = (uint64_t)xi << 32 | (uint32_t)(x->posted + k);
            sw[k].stream = w->stream;
            sw[k].opcode = (enum mroce_wr_opcode)w->op;
            sw[k].send_flags = w->flags;
            sw[k].imm_data = w->imm;
            sw[k].num_sge = w->nsge;
            sw[k].sg_list = w->nsge ? sg[k] : NULL;
            for (int i = 0; i < w->nsge; i++) {
                sg[k][i].addr = (uint64_t)(uintptr_t)bmem(S, w->lbuf[i]);
                sg[k][i].length = S->buf[w->lbuf[i]].len;
                /* inline data needs no key: give a wrong one to prove it */
                sg[k][i].lkey = w->flags & MROCE_SEND_INLINE
                                    ? 0xdeadbeef
                                    : bkey(S, w->lbuf[i]);
            }
            if (w->rbuf >= 0) {
                sw[k].remote_addr = (uint64_t)(uintptr_t)bmem(S, w->rbuf);
                sw[k].rkey = bkey(S, w->rbuf);
            }
            if (w->word >= 0) {
                int b = S->word[w->word].buf;
                sw[k].remote_addr = (uint64_t)(uintptr_t)bmem(S, b);
                sw[k].rkey = bkey(S, b);
                sw[k].compare_add = w->cmp_add;
                sw[k].swap = w->swap;
            }
            sw[k].next = k + 1 < n ? &sw[k + 1] : NULL;
            trace(S, "post q%d wr %d %s len %u nsge %d flags %x\n", xi,
                  x->posted + k, op_name(w->op), w->len, w->nsge, w->flags);
        }
        struct mroce_send_wr *bad = NULL;
        int rc = mre_qp_post_send(qp, sw, &bad, now);
        if (rc < 0) {
            fail(S, "q%d post_send failed: %s", xi, mre_strerror(rc));
            S->aborted = 1;
            return posted;
        }
        /* Inline data was copied at post time: scribble over the source now
         * (finalize() expects the scribble) to prove nothing reads it later. */
        for (int k = 0; k < n; k++) {
            struct wrs *w = &x->wr[x->posted + k];
            if (w->flags & MROCE_SEND_INLINE)
                for (int i = 0; i < w->nsge; i++) {
                    uint8_t *m = bmem(S, w->lbuf[i]);
                    for (uint32_t j = 0; j < S->buf[w->lbuf[i]].len; j++)
                        m[j] = (uint8_t)~m[j];
                }
        }
        x->posted += n;
        posted += n;
    }
    return posted;
}

static int expect_wc_opcode(int op)
{
    switch (op) {
    case MROCE_WR_WRITE:
    case MROCE_WR_WRITE_WITH_IMM:
        return MROCE_WC_WRITE;
    case MROCE_WR_READ:
        return MROCE_WC_READ;
    case MROCE_WR_FETCH_ADD:
        return MROCE_WC_FETCH_ADD;
    case MROCE_WR_CMP_SWAP:
        return MROCE_WC_CMP_SWAP;
    default:
        return MROCE_WC_SEND;
    }
}

/* Several streams: completions in posting order within each stream only
 * (SEM-33), each exactly once; every WR is signaled. */
static void on_send_wc_streams(struct scen *S, struct qs *x,
                               const struct mroce_wc *wc)
{
    int xi = (int)(x - S->q);
    uint32_t gi = (uint32_t)wc->wr_id;
    if ((wc->wr_id >> 32) != (uint64_t)xi || gi >= (uint32_t)x->posted) {
        fail(S, "q%d send completion for unknown wr_id %" PRIx64, xi,
             wc->wr_id);
        S->aborted = 1;
        return;
    }
    struct wrs *w = &x->wr[gi];
    int st = w->stream, e = x->next_cpl_s[st];
    while (e < x->posted && x->wr[e].stream != st)
        e++;
    trace(S, "send wc q%d wr %u stream %d status %s\n", xi, gi, st,
          mroce_wc_status_str(wc->status));
    if ((int)gi != e || wc->stream != st) {
        fail(S,
             "q%d stream %d send completion out of order: got wr %u (stream "
             "%u), expected wr %d",
             xi, st, gi, wc->stream, e);
        S->aborted = 1;
        return;
    }
    if (wc->status != MROCE_WC_SUCCESS) {
        fail(S, "q%d wr %u %s completed with %s", xi, gi, op_name(w->op),
             mroce_wc_status_str(wc->status));
        S->aborted = 1;
        return;
    }
    if ((int)wc->opcode != expect_wc_opcode(w->op) || wc->byte_len != w->len)
        fail(S, "q%d wr %u %s: completion opcode %d byte_len %u", xi, gi,
             op_name(w->op), wc->opcode, wc->byte_len);
    check_wr_data(S, xi, e, "completed");
    x->next_cpl_s[st] = e + 1;
    /* All done once every stream's last WR has completed. */
    int all = 1;
    for (int k = 0; k < x->nst; k++)
        if (x->nsidx[k] && x->next_cpl_s[k] <= x->last_wr_s[k])
            all = 0;
    if (all)
        x->next_cpl = x->nwr;
}

static void on_recv_wc_streams(struct scen *S, struct qs *x,
                               const struct mroce_wc *wc)
{
    int xi = (int)(x - S->q);
    uint32_t gi = (uint32_t)wc->wr_id;
    if ((wc->wr_id >> 32) != (uint64_t)xi || gi >= (uint32_t)x->rposted) {
        fail(S, "q%d receive completion for unknown wr_id %" PRIx64, xi,
             wc->wr_id);
        S->aborted = 1;
        return;
    }
    int st = x->rv[gi].stream, e = x->next_rcpl_s[st];
    while (e < x->rposted && x->rv[e].stream != st)
        e++;
    trace(S, "recv wc q%d rcv %u stream %d status %s len %u\n", xi, gi, st,
          mroce_wc_status_str(wc->status), wc->byte_len);
    if ((int)gi != e || wc->stream != st) {
        fail(S,
             "q%d stream %d receive completion out of order: got receive %u "
             "(stream %u), expected %d",
             xi, st, gi, wc->stream, e);
        S->aborted = 1;
        return;
    }
    if (wc->status != MROCE_WC_SUCCESS) {
        fail(S, "q%d receive %u completed with %s", xi, gi,
             mroce_wc_status_str(wc->status));
        S->aborted = 1;
        return;
    }
    struct qs *y = &S->q[x->peer];
    int wi = x->rv[gi].wr;
    struct wrs *w = &y->wr[wi];
    int imm = w->op == MROCE_WR_SEND_WITH_IMM ||
              w->op == MROCE_WR_WRITE_WITH_IMM;
    if (wc->byte_len != w->len ||
        (int)wc->opcode != (imm ? MROCE_WC_RECV_WITH_IMM : MROCE_WC_RECV) ||
        (imm && wc->imm_data != w->imm))
        fail(S,
             "q%d receive %u (q%d wr %d %s len %u): completion says "
             "opcode %d len %u imm %x",
             xi, gi, x->peer, wi, op_name(w->op), w->len, wc->opcode,
             wc->byte_len, wc->imm_data);
    check_wr_data(S, x->peer, wi, "received");
    x->next_rcpl_s[st] = e + 1;
    x->next_rcpl++; /* a count here: receives complete out of ring order */
}

static void on_send_wc(struct scen *S, int host, const struct mroce_wc *wc)
{
    struct qs *x = find_qs(S, (uint32_t)host, wc->qp_num);
    if (!x) {
        fail(S, "host %d: send completion for unknown QP %u", host, wc->qp_num);
        return;
    }
    if (x->nst > 1) {
        on_send_wc_streams(S, x, wc);
        return;
    }
    int xi = (int)(x - S->q);
    int e = x->next_cpl;
    while (e < x->posted && !(x->wr[e].flags & MROCE_SEND_SIGNALED))
        e++;
    trace(S, "send wc q%d wr %u status %s\n", xi, (uint32_t)wc->wr_id,
          mroce_wc_status_str(wc->status));
    uint32_t gi = (uint32_t)wc->wr_id;
    if ((wc->wr_id >> 32) == (uint64_t)xi && gi < (uint32_t)x->posted &&
        (int)gi >= x->next_cpl && wc->status != MROCE_WC_SUCCESS) {
        /* Errors complete unsignaled WRs too (as in verbs). */
        fail(S, "q%d wr %u %s completed with %s", xi, gi, op_name(x->wr[gi].op),
             mroce_wc_status_str(wc->status));
        S->aborted = 1;
        return;
    }
    if ((wc->wr_id >> 32) != (uint64_t)xi || e >= x->posted ||
        gi != (uint32_t)e) {
        fail(S,
             "q%d send completion out of order: got wr_id %" PRIx64
             ", expected wr %d",
             xi, wc->wr_id, e);
        S->aborted = 1;
        return;
    }
    struct wrs *w = &x->wr[e];
    if (wc->status != MROCE_WC_SUCCESS) {
        fail(S, "q%d wr %d %s completed with %s", xi, e, op_name(w->op),
             mroce_wc_status_str(wc->status));
        S->aborted = 1;
        return;
    }
    if ((int)wc->opcode != expect_wc_opcode(w->op) || wc->byte_len != w->len)
        fail(S, "q%d wr %d %s: completion opcode %d byte_len %u", xi, e,
             op_name(w->op), wc->opcode, wc->byte_len);
    /* Completions are in order, so everything before it is done too: its
     * data must already be in place. */
    for (int k = x->next_cpl; k <= e; k++)
        check_wr_data(S, xi, k, "completed");
    x->next_cpl = e + 1;
}

static void on_recv_wc(struct scen *S, int host, const struct mroce_wc *wc)
{
    struct qs *x = find_qs(S, (uint32_t)host, wc->qp_num);
    if (!x) {
        fail(S, "host %d: receive completion for unknown QP %u", host,
             wc->qp_num);
        return;
    }
    if (x->nst > 1) {
        on_recv_wc_streams(S, x, wc);
        return;
    }
    int xi = (int)(x - S->q);
    int e = x->next_rcpl;
    trace(S, "recv wc q%d rcv %u status %s len %u\n", xi, (uint32_t)wc->wr_id,
          mroce_wc_status_str(wc->status), wc->byte_len);
    if ((wc->wr_id >> 32) != (uint64_t)xi || e >= x->rposted ||
        (uint32_t)wc->wr_id != (uint32_t)e) {
        fail(S,
             "q%d receive completion out of order: got wr_id %" PRIx64
             ", expected receive %d",
             xi, wc->wr_id, e);
        S->aborted = 1;
        return;
    }
    if (wc->status != MROCE_WC_SUCCESS) {
        fail(S, "q%d receive %d completed with %s", xi, e,
             mroce_wc_status_str(wc->status));
        S->aborted = 1;
        return;
    }
    struct qs *y = &S->q[x->peer];
    int wi = x->rv[e].wr;
    struct wrs *w = &y->wr[wi];
    int imm = w->op == MROCE_WR_SEND_WITH_IMM ||
              w->op == MROCE_WR_WRITE_WITH_IMM;
    if (wc->byte_len != w->len ||
        (int)wc->opcode != (imm ? MROCE_WC_RECV_WITH_IMM : MROCE_WC_RECV) ||
        ((wc->wc_flags & MROCE_WC_WITH_IMM) != 0) != imm ||
        (imm && wc->imm_data != w->imm))
        fail(S,
             "q%d receive %d (q%d wr %d %s len %u): completion says opcode "
             "%d len %u flags %u imm %x",
             xi, e, x->peer, wi, op_name(w->op), w->len, wc->opcode,
             wc->byte_len, wc->wc_flags, wc->imm_data);
    check_wr_data(S, x->peer, wi, "received");
    x->next_rcpl = e + 1;
}

/* Each spine's blackhole and loss from the spine and plane events in force
 * (plane k's spine i is global spine k * spines + i; the spine events hit
 * plane 0's). */
static void apply_spines(struct scen *S)
{
    mroce_net *net = mroce_netdrive_net(S->tb->d);
    uint32_t ns = S->ncfg.net.spines;
    for (uint32_t g = 0; g < ns * (uint32_t)S->nplanes; g++) {
        int dead = (int)g == S->blackhole && S->bh_state == 1;
        double loss = (int)g == S->gray_spine ? S->gray_loss : 0;
        for (int i = 0; i < S->nplev; i++) {
            const struct plev *e = &S->plev[i];
            if (e->state != 1 || (uint32_t)e->plane != g / ns)
                continue;
            if (e->kind == PL_FAIL)
                dead = 1;
            else if (e->loss > loss)
                loss = e->loss;
        }
        mroce_net_set_spine_blackhole(net, g, dead);
        mroce_net_set_spine_loss(net, g, loss);
    }
}

/* One round of the application between model steps; returns 1 when all
 * work has completed. */
static int app_poll(struct scen *S)
{
    struct mroce_wc wc[32];
    mroce_tstamp now = mroce_netdrive_now(S->tb->d);
    for (int hi = 0; hi < S->nhosts; hi++) {
        int n;
        /* After the first bad completion the rest say nothing new. */
        while (!S->aborted && (n = mre_cq_poll(S->tb->h[hi].scq, 32, wc)) > 0)
            for (int k = 0; k < n && !S->aborted; k++)
                on_send_wc(S, hi, &wc[k]);
        while (!S->aborted && (n = mre_cq_poll(S->tb->h[hi].rcq, 32, wc)) > 0)
            for (int k = 0; k < n && !S->aborted; k++)
                on_recv_wc(S, hi, &wc[k]);
    }
    if (S->aborted)
        return 1;
    int spines_changed = 0;
    if (S->blackhole >= 0 && S->bh_state < 2 &&
        now >= S->t0 + (S->bh_state ? S->bh_off : S->bh_on)) {
        trace(S, "%" PRIu64 " spine %d blackhole %s\n", now, S->blackhole,
              S->bh_state ? "off" : "on");
        S->bh_state++;
        spines_changed = 1;
    }
    for (int i = 0; i < S->nplev; i++) {
        struct plev *e = &S->plev[i];
        if (e->state < 2 && now >= S->t0 + (e->state ? e->off : e->on)) {
            trace(S, "%" PRIu64 " plane %d %s %s\n", now, e->plane,
                  e->kind ? "gray" : "failure", e->state ? "over" : "begins");
            e->state++;
            spines_changed = 1;
        }
    }
    if (spines_changed)
        apply_spines(S);
    if (S->late_recv && !S->late_done && now >= S->t_late)
        S->late_done = 1;
    if (!S->phase_done && now >= S->t_phase)
        S->phase_done = 1;
    /* Keep each receive queue as full as its size allows. */
    if (!S->late_recv || S->late_done)
        for (int i = 0; i < S->nqs; i++) {
            struct qs *x = &S->q[i];
            int upto = x->next_rcpl + (int)(x->qp->rq_mask + 1);
            if (x->nst > 1) /* the ring frees out of order: ask it */
                upto = x->rposted + (int)(x->qp->rq_mask + 1 -
                                          (x->qp->rq_tail - x->qp->rq_head));
            if (upto > x->nrv)
                upto = x->nrv;
            if (upto > x->rposted) {
                post_recvs(S, x, upto);
                mroce_netdrive_kick(S->tb->d, (uint32_t)x->host);
            }
        }
    int done = 1;
    for (int i = 0; i < S->nqs; i++) {
        struct qs *x = &S->q[i];
        if (mre_qp_state(x->qp) != MROCE_QPS_RTS) {
            fail(S, "q%d left RTS: %s", i,
                 mroce_qp_state_str(mre_qp_state(x->qp)));
            S->aborted = 1;
            return 1;
        }
        if (x->posted < x->nwr && post_sends(S, x, now) > 0)
            mroce_netdrive_kick(S->tb->d, (uint32_t)x->host);
        if (x->next_cpl < x->nwr || x->next_rcpl < x->nrv)
            done = 0;
    }
    return done || S->aborted;
}

/* ---- end of run: atomics, shadow memory, quiescence ---- */

struct aop {
    uint64_t from, to;
};

static int vindex(uint64_t *vals, int *n, uint64_t v)
{
    for (int i = 0; i < *n; i++)
        if (vals[i] == v)
            return i;
    vals[*n] = v;
    return (*n)++;
}
static int uf_find(int *p, int i)
{
    while (p[i] != i)
        i = p[i] = p[p[i]];
    return i;
}

/*
 * Atomics exactly once, in some serial order.  Each executed atomic is an
 * edge old -> new (new = old + add, or old == cmp ? swap : old), with old
 * the value it returned.  The atomics on a word ran in some order, each
 * seeing the previous one's result, iff these edges form one trail from the
 * word's initial value to its final value that uses every edge once: an
 * Euler trail, which exists iff out-degree minus in-degree is +1 at the
 * start, -1 at the end (0 everywhere if they coincide) and 0 elsewhere, and
 * all edges are connected.  An atomic executed twice, lost, or answered with
 * a value it never saw breaks the trail.
 */
static void check_words(struct scen *S)
{
    for (int k = 0; k < S->nword; k++) {
        int nops = 0;
        for (int i = 0; i < S->nqs; i++)
            for (int j = 0; j < S->q[i].nwr; j++)
                nops += S->q[i].wr[j].word == k;
        struct aop *ops = calloc((size_t)nops + 1, sizeof(*ops));
        uint64_t *vals = calloc(2 * (size_t)nops + 2, sizeof(*vals));
        int *deg = calloc(2 * (size_t)nops + 2, sizeof(*deg));
        int *par = calloc(2 * (size_t)nops + 2, sizeof(*par));
        int n = 0, nv = 0;
        for (int i = 0; i < S->nqs; i++)
            for (int j = 0; j < S->q[i].nwr; j++) {
                struct wrs *w = &S->q[i].wr[j];
                uint64_t old;
                if (w->word != k)
                    continue;
                memcpy(&old, bmem(S, w->lbuf[0]), 8);
                ops[n].from = old;
                ops[n].to = w->op == MROCE_WR_FETCH_ADD ? old + w->cmp_add
                            : old == w->cmp_add         ? w->swap
                                                        : old;
                n++;
            }
        uint64_t v0, vf;
        memcpy(&v0, bshadow(S, S->word[k].buf), 8);
        memcpy(&vf, bmem(S, S->word[k].buf), 8);
        int i0 = vindex(vals, &nv, v0), i1 = vindex(vals, &nv, vf);
        for (int i = 0; i < n; i++) {
            int a = vindex(vals, &nv, ops[i].from),
                b = vindex(vals, &nv, ops[i].to);
            deg[a]++;
            deg[b]--;
        }
        for (int i = 0; i < nv; i++)
            par[i] = i;
        for (int i = 0; i < n; i++) {
            int a = uf_find(par, vindex(vals, &nv, ops[i].from));
            int b = uf_find(par, vindex(vals, &nv, ops[i].to));
            par[a] = b;
        }
        int ok = 1;
        for (int i = 0; i < nv; i++) {
            int want = i0 == i1 ? 0 : i == i0 ? 1 : i == i1 ? -1 : 0;
            if (deg[i] != want)
                ok = 0;
        }
        for (int i = 0; i < n; i++)
            if (uf_find(par, vindex(vals, &nv, ops[i].from)) !=
                uf_find(par, i0))
                ok = 0;
        if (n == 0 && v0 != vf)
            ok = 0;
        if (!ok)
            fail(S,
                 "atomic word %d (host %d, %d ops): returned values and final "
                 "value %" PRIx64 " (initial %" PRIx64 ") fit no serial order",
                 k, S->word[k].host, n, vf, v0);
        /* Validated (or reported): the shadow takes the final value. */
        memcpy(bshadow(S, S->word[k].buf), &vf, 8);
        free(ops);
        free(vals);
        free(deg);
        free(par);
    }
}

/* Apply every message to the shadow memory, then compare whole arenas. */
static void finalize(struct scen *S)
{
    check_words(S);
    for (int xi = 0; xi < S->nqs; xi++) {
        struct qs *x = &S->q[xi], *y = &S->q[x->peer];
        for (int wi = 0; wi < x->nwr; wi++) {
            struct wrs *w = &x->wr[wi];
            uint8_t *c;
            if (is_atomic_op(w->op)) {
                memcpy(bshadow(S, w->lbuf[0]), bmem(S, w->lbuf[0]), 8);
                continue;
            }
            c = malloc(w->len ? w->len : 1);
            if (w->op == MROCE_WR_READ) {
                memcpy(c, bshadow(S, w->rbuf), w->len);
                uint32_t off = 0;
                for (int i = 0; i < w->nsge; i++) {
                    memcpy(bshadow(S, w->lbuf[i]), c + off,
                           S->buf[w->lbuf[i]].len);
                    off += S->buf[w->lbuf[i]].len;
                }
            } else {
                wr_content(S, w, 0, c, w->len);
                if (w->rbuf >= 0) {
                    memcpy(bshadow(S, w->rbuf), c, w->len);
                } else {
                    struct rcv *rv = &y->rv[w->recv];
                    uint32_t off = 0;
                    for (int i = 0; i < rv->nsge && off < w->len; i++) {
                        uint32_t k = S->buf[rv->buf[i]].len;
                        if (k > w->len - off)
                            k = w->len - off;
                        memcpy(bshadow(S, rv->buf[i]), c + off, k);
                        off += k;
                    }
                }
            }
            free(c);
        }
    }
    /* Inline sources were scribbled after posting; sources are never
     * targets, so this can come last. */
    for (int xi = 0; xi < S->nqs; xi++)
        for (int wi = 0; wi < S->q[xi].nwr; wi++) {
            struct wrs *w = &S->q[xi].wr[wi];
            if (w->flags & MROCE_SEND_INLINE)
                for (int i = 0; i < w->nsge; i++) {
                    uint8_t *m = bshadow(S, w->lbuf[i]);
                    for (uint32_t j = 0; j < S->buf[w->lbuf[i]].len; j++)
                        m[j] = (uint8_t)~m[j];
                }
        }
    for (int hi = 0; hi < S->nhosts; hi++) {
        struct hostmem *H = &S->h[hi];
        size_t first = SIZE_MAX, nbad = 0;
        for (size_t i = 0; i < H->size; i++)
            if (H->mem[i] != H->shadow[i]) {
                if (first == SIZE_MAX)
                    first = i;
                nbad++;
            }
        if (!nbad)
            continue;
        const char *what = "a guard or unregistered gap";
        char wbuf[160];
        for (int b = 0; b < S->nbuf; b++) {
            struct bufd *d = &S->buf[b];
            if (d->host == hi && first >= d->off && first < d->off + d->len) {
                snprintf(wbuf, sizeof(wbuf), "%s of q%d #%d at +%zu",
                         role_name[d->role], d->qs, d->idx, first - d->off);
                what = wbuf;
            }
        }
        fail(S,
             "host %d memory: %zu bytes differ from the expected contents, "
             "first at arena offset %zu (%s)",
             hi, nbad, first, what);
    }
}

static void check_quiescent(struct scen *S)
{
    for (int i = 0; i < S->nqs; i++) {
        mre_qp *qp = S->q[i].qp;
        int busy = 0;
        for (uint32_t j = 0; j < qp->nrjobs; j++)
            busy += qp->rjobs[j].active;
        if (qp->state != MROCE_QPS_RTS || qp->sq_head != qp->sq_tail ||
            qp->rq_head != qp->rq_tail || qp->snd_una != qp->snd_nxt ||
            qp->inflight_pkts || qp->inflight_bytes || busy)
            fail(S,
                 "q%d not quiescent at the end: state %s sq %u/%u rq %u/%u "
                 "una %u nxt %u inflight %u/%u jobs %d",
                 i, mroce_qp_state_str(mre_qp_state(qp)), qp->sq_head,
                 qp->sq_tail, qp->rq_head, qp->rq_tail, qp->snd_una,
                 qp->snd_nxt, qp->inflight_pkts, qp->inflight_bytes, busy);
    }
    for (int hi = 0; hi < S->nhosts; hi++)
        if (mroce_tb_cq_count(S->tb->h[hi].scq) ||
            mroce_tb_cq_count(S->tb->h[hi].rcq))
            fail(S, "host %d: extra completions after all work completed", hi);
}

/* The engine's plane counters against what the fabric saw (PATH-24):
 * per plane, the packets sent on it and the ACKs and NAKs that arrived
 * over it, which sum to the QP's totals; the slots on the planes sum to
 * npaths (PATH-29 moves slots, never loses one); and no packet went to
 * another plane's address (the driver's tx_cross_plane, PATH-17). */
static void check_planes(struct scen *S)
{
    struct mroce_netdrive_counters dc;
    mroce_netdrive_get_counters(S->tb->d, &dc);
    if (dc.tx_cross_plane || dc.tx_bad_addr)
        fail(S,
             "%" PRIu64 " packets to another plane's address, %" PRIu64
             " to no host",
             dc.tx_cross_plane, dc.tx_bad_addr);
    for (int i = 0; i < S->nqs; i++) {
        struct qs *x = &S->q[i];
        struct mre_plane_stats st[MAXPL];
        struct mroce_qp_counters qc;
        if (x->np <= 1)
            continue;
        int n = mre_qp_plane_stats(x->qp, st, MAXPL);
        uint64_t tx = 0, rx = 0;
        uint32_t paths = 0;
        mre_qp_get_counters(x->qp, &qc);
        for (int k = 0; k < n && k < MAXPL; k++) {
            uint64_t dtx = st[k].tx_pkts - x->pl_base[k].tx_pkts;
            uint64_t drx = st[k].rx_acks - x->pl_base[k].rx_acks;
            if (dtx != x->pl_tx[k] || drx != x->pl_rx[k])
                fail(S,
                     "q%d plane %d: engine counts %" PRIu64 " sent / %" PRIu64
                     " ACKs in, the fabric carried %" PRIu64 " / %" PRIu64,
                     i, k, dtx, drx, x->pl_tx[k], x->pl_rx[k]);
            tx += dtx;
            rx += drx;
            paths += st[k].paths;
            S->st.pl_downs += st[k].downs - x->pl_base[k].downs;
            S->st.pl_probes += st[k].probes - x->pl_base[k].probes;
            S->st.pl_adopted += st[k].adopted - x->pl_base[k].adopted;
            S->st.pl_moved += st[k].moved - x->pl_base[k].moved;
        }
        if (tx != qc.tx_pkts - x->base_tx_pkts ||
            rx != qc.rx_acks + qc.rx_naks - x->base_rx_acks)
            fail(S,
                 "q%d planes sum to %" PRIu64 " sent / %" PRIu64
                 " ACKs in, the QP counts %" PRIu64 " / %" PRIu64,
                 i, tx, rx, qc.tx_pkts - x->base_tx_pkts,
                 qc.rx_acks + qc.rx_naks - x->base_rx_acks);
        if (paths != x->attr.npaths)
            fail(S, "q%d: %u slots on its planes, npaths %u", i, paths,
                 x->attr.npaths);
    }
}

static void collect_stats(struct scen *S)
{
    struct stats *t = &S->st;
    struct mroce_net_counters nc;
    mroce_net_get_counters(mroce_netdrive_net(S->tb->d), &nc);
    t->dups += nc.dups;
    t->drop_loss += nc.drop_loss + nc.drop_spine_loss;
    t->drop_blackhole += nc.drop_blackhole;
    t->drop_queue += nc.drop_queue;
    t->ecn_marks += nc.ce_marked;
    for (int hi = 0; hi < S->nhosts; hi++) {
        struct mroce_ep_counters ec;
        mre_ep_get_counters(S->tb->h[hi].ep, &ec);
        t->drop_corrupt += ec.drop_crc;
        t->drop_other += ec.drop_truncated + ec.drop_version + ec.drop_opcode +
                         ec.drop_flags + ec.drop_length + ec.drop_field +
                         ec.drop_no_qp + ec.drop_no_listener;
    }
    for (int i = 0; i < S->nqs; i++) {
        struct mroce_qp_counters c;
        mre_qp_get_counters(S->q[i].qp, &c);
        t->retx += c.retx_pkts;
        t->retx_path += c.retx_path;
        t->retx_ooo += c.retx_ooo;
        t->retx_rto += c.retx_rto;
        t->retx_probe += c.retx_probe;
        t->retx_rnr += c.retx_rnr;
        t->rx_dups += c.rx_dups;
        t->timeouts += c.timeouts;
        t->paths_retired += c.paths_retired;
        t->drop_other += c.drop_token + c.drop_window + c.drop_state +
                         c.drop_invalid + c.drop_stale;
    }
    for (int i = 0; i < S->nqs; i++)
        for (int j = 0; j < S->q[i].nwr; j++) {
            t->msgs++;
            t->bytes += S->q[i].wr[j].len;
        }
    t->pl_scen[S->nplanes == 1   ? 0
               : S->nplanes == 2 ? 1
               : S->nplanes == 4 ? 2
                                 : 3]++;
    for (int i = 0; i < S->nplev; i++) {
        t->pl_fails += S->plev[i].kind == PL_FAIL;
        t->pl_grays += S->plev[i].kind == PL_GRAY;
    }
}

/* The endpoints' random source: the driver's, except that in psn_wrap
 * scenarios every 64-bit draw (tokens, start PSNs, QPN generations) has its
 * low 32 bits a little below 2^32, so start PSNs sit just before the wrap
 * and the run's PSNs cross it. */
static void wrap_rand(uint8_t *buf, size_t len, void *user)
{
    struct scen *S = user;
    mroce_netdrive_rand(buf, len, S->tb->d);
    if (len == 8) {
        uint64_t v;
        memcpy(&v, buf, 8);
        v = (v & 0xffffffff00000000ull) |
            (0xffffffffu - (uint32_t)(v >> 40) % 200u);
        memcpy(buf, &v, 8);
    }
}

/* Create and connect every pair; returns 0 when all are RTS. */
static int connect_all(struct scen *S)
{
    mroce_netdrive *d = S->tb->d;
    for (int p = 0; p < S->npairs; p++) {
        struct qs *a = &S->q[2 * p], *b = &S->q[2 * p + 1];
        for (int s = 0; s < 2; s++) {
            struct qs *x = s ? b : a;
            x->attr.send_cq = S->tb->h[x->host].scq;
            x->attr.recv_cq = S->tb->h[x->host].rcq;
            int rc = mre_qp_new(S->tb->h[x->host].ep, &x->attr, &x->qp);
            if (rc < 0) {
                fail(S, "qp_new: %s", mre_strerror(rc));
                return -1;
            }
            x->qpn = mre_qp_num(x->qp);
        }
        struct mre_addr to;
        mroce_netdrive_addr((uint32_t)b->host, &to);
        mroce_tstamp now = mroce_netdrive_now(d);
        if (mre_qp_listen(b->qp, now) < 0 ||
            mre_qp_connect(a->qp, &to, b->qpn, now) < 0) {
            fail(S, "listen/connect refused");
            return -1;
        }
    }
    mroce_netdrive_kick_all(d);
    mroce_tstamp limit = mroce_netdrive_now(d) + 30000000000ull;
    for (;;) {
        int all = 1;
        for (int i = 0; i < S->nqs; i++)
            if (mre_qp_state(S->q[i].qp) != MROCE_QPS_RTS)
                all = 0;
        if (all)
            break;
        mroce_tstamp nt = mroce_netdrive_next_time(d);
        if (nt == MROCE_TSTAMP_INF || nt > limit) {
            fail(S, "handshake did not complete");
            return -1;
        }
        mroce_netdrive_step(d);
    }
    for (int i = 0; i < S->nqs; i++) {
        struct qs *x = &S->q[i];
        x->start_psn = x->qp->local_start_psn;
        x->cum_checked = x->start_psn;
        if (x->qp->peer_start_psn != S->q[x->peer].qp->local_start_psn)
            fail(S, "q%d learned a wrong peer start PSN", i);
        /* Every npaths fits the planes (PATH-19), so each connection uses
         * min(local, peer) of them (CONN-28). */
        struct mroce_qp_counters qc;
        x->np = mre_qp_plane_stats(x->qp, x->pl_base, MAXPL);
        mre_qp_get_counters(x->qp, &qc);
        x->base_tx_pkts = qc.tx_pkts;
        x->base_rx_acks = qc.rx_acks + qc.rx_naks;
        for (int k = 0; k < x->np && k < MAXPL; k++)
            x->pl_probes[k] = x->pl_base[k].probes;
        S->st.pl_fewer += x->np < S->nplanes;
        if (x->np != qs_planes(S, x))
            fail(S, "q%d uses %d planes, not %d (CONN-28)", i, x->np,
                 qs_planes(S, x));
    }
    return 0;
}

/* Engine state of every QP, printed when a run stalls or overruns (and,
 * with -v, after any abort). */
static void dump_qps(struct scen *S)
{
    if (S->dumped++)
        return;
    for (int i = 0; i < S->nqs; i++) {
        const mre_qp *qp = S->q[i].qp;
        uint32_t st[5] = {0, 0, 0, 0, 0};
        for (uint32_t p = qp->snd_una; p != qp->snd_nxt; p++)
            st[qp->tx[p & qp->tx_mask].state]++;
        printf("  q%d %s sq %u/%u/%u tx_off %u rd_out %u una %u nxt %u "
               "(free %u inflight %u lost %u acked %u rnr %u) inflight %u pkts "
               "%u B cwnd %u credit %u retxq %u rq %u/%u rx cum %u high %u "
               "deadlines loss %" PRIu64 " reo %" PRIu64 " rnr %" PRIu64
               " ack %" PRIu64 " ack_now %u ctrl %x ready %u\n",
               i, mroce_qp_state_str(mre_qp_state(qp)), qp->sq_head, qp->sq_tx,
               qp->sq_tail, qp->tx_off, qp->rd_outstanding, qp->snd_una,
               qp->snd_nxt, st[0], st[1], st[2], st[3], st[4],
               qp->inflight_pkts, qp->inflight_bytes, qp->cc.cwnd,
               qp->peer_credit, qp->retxq_tail - qp->retxq_head, qp->rq_head,
               qp->rq_tail, qp->rxwin.cum, qp->rxwin.high, qp->loss_deadline,
               qp->reo_deadline, qp->rnr_deadline, qp->ack_deadline,
               qp->ack_now, qp->ctrl, qp->on_ready);
    }
}

static void run_scenario(struct scen *S)
{
    gen(S);
    layout(S);
    if (S->verbose) {
        printf("scenario %" PRIu64 ": %s\n", S->seed, S->desc);
        for (int i = 0; i < S->nqs; i++) {
            struct qs *x = &S->q[i];
            printf(
                "  q%d host %d peer q%d: mtu %u npaths %u burst %u window %u "
                "rd_atomic %u sq %u rq %u cc %u min_rto %" PRIu64
                " ack_delay %" PRIu64
                " ooo %u cwnd %u: %d WRs, %d receives (%d at start)\n",
                i, x->host, x->peer, x->attr.mtu, x->attr.npaths,
                x->attr.path_burst, x->attr.window, x->attr.max_rd_atomic,
                x->attr.max_send_wr, x->attr.max_recv_wr, x->attr.cc_algo,
                x->attr.min_rto, x->attr.max_ack_delay, x->attr.ooo_thresh,
                x->attr.init_cwnd, x->nwr, x->nrv, x->rinitial);
        }
    }
    if (mroce_tb_new(&S->tb, &S->ncfg, &S->ecfg) < 0) {
        fail(S, "testbed setup failed");
        return;
    }
    mroce_net *net = mroce_netdrive_net(S->tb->d);
    for (uint32_t i = 0; i < S->ncfg.net.spines * (uint32_t)S->nplanes; i++)
        mroce_net_set_spine_delay(net, i,
                                  S->spine_delay[i % S->ncfg.net.spines]);
    if (S->gray_spine >= 0)
        mroce_net_set_spine_loss(net, (uint32_t)S->gray_spine, S->gray_loss);
    if (S->slow_host >= 0)
        mroce_net_set_host_rate(net, (uint32_t)S->slow_host,
                                S->ncfg.net.rate_bps, S->slow_bps);
    /* Hosts on fewer planes: before any QP exists, the endpoint reads its
     * plane count at each handshake. */
    for (int hi = 0; hi < S->nhosts && S->nplanes > 1; hi++)
        if (S->host_planes[hi] < S->nplanes)
            S->tb->h[hi].ep->cfg.nplanes = (uint8_t)(S->host_planes[hi] > 1
                                                         ? S->host_planes[hi]
                                                         : 0);
    if (S->psn_wrap)
        for (int hi = 0; hi < S->nhosts; hi++) {
            S->tb->h[hi].ep->cfg.rand = wrap_rand;
            S->tb->h[hi].ep->cfg.rand_user = S;
        }
    for (int hi = 0; hi < S->nhosts; hi++) {
        struct hostmem *H = &S->h[hi];
        for (int g = 0; g < H->nreg; g++)
            if (mre_mr_reg(S->tb->h[hi].ep, H->mem + H->reg[g].off,
                           H->reg[g].len, FULL_ACCESS, &H->reg[g].mr) < 0) {
                fail(S, "mr_reg failed");
                return;
            }
    }
    if (connect_all(S) < 0)
        return;
    mroce_netdrive_set_tx_hook(S->tb->d, tx_hook, S);
    if (S->verbose || S->nplanes > 1)
        mroce_netdrive_set_rx_hook(S->tb->d, rx_hook, S);
    mroce_netdrive *d = S->tb->d;
    S->t0 = mroce_netdrive_now(d);
    S->t_late += S->t0;
    S->t_phase += S->t0;
    if (!S->phased)
        S->phase_done = 1;
    /* Model-time bound: generous for retry backoff under heavy loss, but
     * finite: a run that needs longer is stuck. */
    S->limit = S->t0 + (S->lossy ? 60000000000ull : 10000000000ull) +
               S->used * 8; /* + the bytes at 1 Gb/s */
    for (int i = 0; i < S->nqs; i++)
        post_recvs(S, &S->q[i], S->q[i].rinitial);
    uint64_t steps = 0, max_steps = 40000000ull + S->used / 16;
    for (;;) {
        if (app_poll(S))
            break;
        mroce_tstamp nt = mroce_netdrive_next_time(d);
        /* Idle, but the application has something timed to do. */
        if (nt == MROCE_TSTAMP_INF && S->late_recv && !S->late_done) {
            mroce_netdrive_run_until(d, S->t_late);
            continue;
        }
        if (nt == MROCE_TSTAMP_INF && !S->phase_done) {
            mroce_netdrive_run_until(d, S->t_phase);
            continue;
        }
        if (nt == MROCE_TSTAMP_INF) {
            fail(
                S,
                "stalled: work outstanding but nothing scheduled at t=%" PRIu64,
                mroce_netdrive_now(d) - S->t0);
            dump_qps(S);
            S->aborted = 1;
            break;
        }
        if (nt > S->limit || ++steps > max_steps) {
            fail(S,
                 "did not finish within the bound (%" PRIu64 " ns model time, "
                 "%" PRIu64 " steps)",
                 S->limit - S->t0, steps);
            dump_qps(S);
            S->aborted = 1;
            break;
        }
        mroce_netdrive_step(d);
    }
    mroce_tstamp t_done = mroce_netdrive_now(d) - S->t0;
    if (S->aborted && S->verbose)
        dump_qps(S);
    if (!S->aborted) {
        /* Everything completed: the engines must now fall idle (final ACKs,
         * no timers left) within the bound, with nothing left over. */
        if (!mroce_netdrive_run_idle(d, S->limit))
            fail(S, "did not go idle after completing (t=%" PRIu64 ")",
                 mroce_netdrive_now(d) - S->t0);
        app_poll(S);
        check_quiescent(S);
        finalize(S);
        check_planes(S);
    }
    if (t_done > S->st.max_model_time)
        S->st.max_model_time = t_done;
    collect_stats(S);
    trace(S, "done at model time %" PRIu64 " ns\n", t_done);
}

static void free_scenario(struct scen *S)
{
    mroce_tb_del(S->tb);
    for (int hi = 0; hi < S->nhosts; hi++) {
        free(S->h[hi].mem);
        free(S->h[hi].shadow);
    }
    for (int i = 0; i < S->nqs; i++) {
        free(S->q[i].wr);
        free(S->q[i].rv);
        free(S->q[i].rec);
        for (int k = 0; k < MAXST; k++)
            free(S->q[i].sidx[k]);
    }
    free(S->buf);
    free(S->word);
}

static void add_stats(struct stats *a, const struct stats *b)
{
    a->scenarios++;
    a->msgs += b->msgs;
    a->bytes += b->bytes;
    a->pkts += b->pkts;
    a->retx += b->retx;
    a->retx_path += b->retx_path;
    a->retx_ooo += b->retx_ooo;
    a->retx_rto += b->retx_rto;
    a->retx_probe += b->retx_probe;
    a->retx_rnr += b->retx_rnr;
    a->dups += b->dups;
    a->rx_dups += b->rx_dups;
    a->drop_loss += b->drop_loss;
    a->drop_corrupt += b->drop_corrupt;
    a->drop_blackhole += b->drop_blackhole;
    a->drop_queue += b->drop_queue;
    a->drop_other += b->drop_other;
    a->ecn_marks += b->ecn_marks;
    a->timeouts += b->timeouts;
    a->paths_retired += b->paths_retired;
    a->acks_checked += b->acks_checked;
    a->psns_checked += b->psns_checked;
    for (int k = 0; k < 4; k++)
        a->pl_scen[k] += b->pl_scen[k];
    a->pl_fails += b->pl_fails;
    a->pl_grays += b->pl_grays;
    a->pl_downs += b->pl_downs;
    a->pl_probes += b->pl_probes;
    a->pl_adopted += b->pl_adopted;
    a->pl_moved += b->pl_moved;
    a->pl_pkts += b->pl_pkts;
    a->pl_fewer += b->pl_fewer;
    if (b->max_model_time > a->max_model_time)
        a->max_model_time = b->max_model_time;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(void)
{
    fprintf(
        stderr,
        "usage: test_engine_prop [--seeds N] [--start S] [--seed N] [-v] "
        "[--one-plane]\n"
        "  default: seeds 1..%d (the CI subset); full sweep: --seeds 10000\n",
        CI_SEEDS);
}

int main(int argc, char **argv)
{
    const char *self = argv[0];
    uint64_t start = 1, count = CI_SEEDS;
    int verbose = 0, one = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seeds") && i + 1 < argc) {
            count = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--start") && i + 1 < argc) {
            start = strtoull(argv[++i], NULL, 0);
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            start = strtoull(argv[++i], NULL, 0);
            count = 1;
            one = 1;
        } else if (!strcmp(argv[i], "-v")) {
            verbose = 1;
        } else if (!strcmp(argv[i], "--one-plane")) {
            one_plane = 1;
        } else {
            usage();
            return 2;
        }
    }
    struct stats tot;
    memset(&tot, 0, sizeof(tot));
    uint64_t passed = 0, failed = 0;
    double t0 = wall_now();
    for (uint64_t s = start; s < start + count; s++) {
        struct scen *S = calloc(1, sizeof(*S));
        S->seed = s;
        S->verbose = verbose;
        S->rng = s * 0x9e3779b97f4a7c15ull ^ 0x70726f70ull;
        S->rng_run = s ^ 0x72756e;
        run_scenario(S);
        add_stats(&tot, &S->st);
        if (S->fails) {
            failed++;
            printf("seed %" PRIu64 ": FAILED (%s)\n  replay: %s --seed %" PRIu64
                   "   (add -v for a trace)\n",
                   s, S->desc, self, s);
        } else {
            passed++;
            if (one)
                printf("seed %" PRIu64 ": ok (%s)\n", s, S->desc);
        }
        fflush(stdout);
        free_scenario(S);
        free(S);
    }
    double wall = wall_now() - t0;
    printf("summary: %" PRIu64 " scenarios, %" PRIu64 " messages, %" PRIu64
           " bytes, %" PRIu64 " data packets (%.1f s wall, longest run %.3f ms "
           "model time)\n",
           tot.scenarios, tot.msgs, tot.bytes, tot.pkts, wall,
           (double)tot.max_model_time / 1e6);
    printf("  retransmissions %" PRIu64 ": path %" PRIu64 " ooo %" PRIu64
           " rto %" PRIu64 " probe %" PRIu64 " rnr %" PRIu64
           "; timeouts %" PRIu64 ", paths retired %" PRIu64 "\n",
           tot.retx, tot.retx_path, tot.retx_ooo, tot.retx_rto, tot.retx_probe,
           tot.retx_rnr, tot.timeouts, tot.paths_retired);
    printf("  duplicates: %" PRIu64 " made by the fabric, %" PRIu64
           " detected by receivers; ECN marks %" PRIu64 "\n",
           tot.dups, tot.rx_dups, tot.ecn_marks);
    printf("  drops: loss %" PRIu64 " corrupt(crc) %" PRIu64
           " blackhole %" PRIu64 " queue %" PRIu64 " engine-other %" PRIu64
           "\n",
           tot.drop_loss, tot.drop_corrupt, tot.drop_blackhole, tot.drop_queue,
           tot.drop_other);
    printf("  ACKs checked %" PRIu64
           ", PSNs verified placed before their ACK %" PRIu64 "\n",
           tot.acks_checked, tot.psns_checked);
    printf("  planes: P = 1/2/4/8 in %" PRIu64 "/%" PRIu64 "/%" PRIu64
           "/%" PRIu64 " scenarios (%" PRIu64
           " QP sides on fewer planes); %" PRIu64 " plane failures, %" PRIu64
           " gray planes; marked down %" PRIu64 " times (%" PRIu64
           " adopted), %" PRIu64 " probes, %" PRIu64 " slots moved, %" PRIu64
           " packets checked for their plane\n",
           tot.pl_scen[0], tot.pl_scen[1], tot.pl_scen[2], tot.pl_scen[3],
           tot.pl_fewer, tot.pl_fails, tot.pl_grays, tot.pl_downs,
           tot.pl_adopted, tot.pl_probes, tot.pl_moved, tot.pl_pkts);
    printf("test_engine_prop: %" PRIu64 " passed, %" PRIu64 " failed\n", passed,
           failed);
    return failed || !passed;
}
