/*
 * mroce_perf.c - mroce-perf, the perftest of MetaRoCE: bandwidth and latency
 * of libmroce between two processes, with perftest's command line and tables.
 *
 *   server:  mroce-perf write_bw               [options]
 *   client:  mroce-perf write_bw 127.0.0.1     [options]
 *
 * Tests: write_bw send_bw read_bw (bandwidth: many work requests in flight on
 * -q queue pairs) and write_lat send_lat read_lat atomic_lat (latency: one
 * operation at a time).  write_lat and send_lat are ping-pongs and report half
 * the round trip; read_lat and atomic_lat report the round trip of one READ
 * or atomic, as perftest does.
 *
 * Parameter exchange: over the MetaRoCE connection itself, not a TCP side
 * channel.  The server posts one receive and listens; the client connects
 * queue pair 0 and SENDs a HELLO carrying its whole configuration (test,
 * sizes, iterations, depths, seed) and the address and rkey of its buffer; the
 * server adopts that configuration, creates the other queue pairs, listens on
 * them and answers WELCOME with their numbers and its own buffer; the client
 * connects the rest.  Each message size is then a GO / READY / run / DONE /
 * RESULT exchange, and FIN ends the session.  Control messages are SEND with
 * immediate CTRL_IMM on queue pair 0 (data SENDs carry no immediate), each
 * signaled and waited for, so it also proves every earlier WR complete.  So
 * the server needs only the test name; options that shape the run come from
 * the client, options that shape a device (--fault, --progress, -p, -4/-6)
 * are per side.
 *
 * --verify checks data end to end: requesters fill each source slot with a
 * pattern of (seed, QP, message index) before posting, responders check what
 * landed (SENDs as each arrives; WRITE slots against the last message written
 * to them once DONE says how many there were), READs and atomics are checked
 * by the requester.  To make "last message per slot" exact, --verify limits
 * the WRs in flight to the slots a region holds.  A mismatch on either side
 * makes both sides exit 1 (RESULT and FIN carry the counts); an error
 * completion exits 1 at once, and the peer follows through its own error
 * completion (RETRY_EXC_ERR) or --timeout seconds of silence.
 *
 * write_lat polls memory like perftest, but for the last byte of every
 * MTU-sized packet, not only of the message: MetaRoCE places packets in any
 * order, so the message's last byte can land before the rest.
 *
 * Progress: in --progress app (default) nothing moves unless we call into the
 * library, so every wait here polls the completion queues, which drives the
 * device; write_lat's memory polling does the same.
 *
 * Addresses: the server's device listens on -p (default 4794); the client's
 * own device needs a port too (--local-port, default -p + 1); libmroce sends
 * the handshake from it, so the server learns where to answer and both can
 * share one loopback address.
 *
 * Memory: one allocation per side, registered once: per QP a target region
 * (what the peer WRITEs, READs, atomically updates), a source region (what we
 * send, or where READs land), receive buffers, and one control buffer.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce.h>
#include <mroce/wire.h>

#define MAX_QPS 32
#define CTRL_IMM 0x4d524346u        /* "MRCF": marks a control message */
#define CTRL_BYTES 1024             /* room for one struct ctrl */
#define CTRL_VERSION 1
#define DATA_BUDGET (64ull << 20)   /* target + source bytes per side (soft) */
#define RX_BUDGET (128ull << 20)    /* receive buffer bytes per side (soft) */
#define SWEEP_MAX_SIZE (1u << 23)   /* -a: 2 .. 2^23 */
#define PAGE 4096u

/* wr_id layout: the top bits say what a completion belongs to (an error
 * completion's opcode is undefined, as in verbs, so we never rely on it
 * there); the low bits are a message index or a receive buffer index. */
#define WRID_CTRL (1ull << 62)
#define WRID_RECV (1ull << 61)
#define WRID_IDX_MASK ((1ull << 61) - 1)

enum test_id {
    T_WRITE_BW, T_SEND_BW, T_READ_BW,
    T_WRITE_LAT, T_SEND_LAT, T_READ_LAT, T_ATOMIC_LAT, T_COUNT
};

static const struct test_desc {
    const char *name;
    const char *title; /* perftest's banner */
    int lat;           /* latency test */
} tests[T_COUNT] = {
    [T_WRITE_BW] = {"write_bw", "RDMA_Write BW Test", 0},
    [T_SEND_BW] = {"send_bw", "Send BW Test", 0},
    [T_READ_BW] = {"read_bw", "RDMA_Read BW Test", 0},
    [T_WRITE_LAT] = {"write_lat", "RDMA_Write Latency Test", 1},
    [T_SEND_LAT] = {"send_lat", "Send Latency Test", 1},
    [T_READ_LAT] = {"read_lat", "RDMA_Read Latency Test", 1},
    [T_ATOMIC_LAT] = {"atomic_lat", "Atomic FETCH_AND_ADD Latency Test", 1},
};

/* Command line.  Fields marked (client) travel to the server in HELLO. */
struct opts {
    int test;               /* enum test_id (both; must match) */
    const char *server;     /* NULL: we are the server */
    uint32_t size;          /* -s (client) */
    int all;                /* -a (client) */
    uint64_t iters;         /* -n (client); 0 = default */
    double duration;        /* -D seconds (client); 0 = iterations */
    uint32_t nqps;          /* -q (client) */
    uint16_t port;          /* -p: the server's port */
    uint16_t local_port;    /* --local-port: the client's own port */
    const char *bind;       /* -B: local address */
    uint32_t paths;         /* --paths (per side; negotiated by the engine) */
    uint32_t mtu;           /* -m (per side; the engine takes the minimum) */
    uint32_t tx_depth;      /* -t (client) */
    uint32_t rx_depth;      /* -r (client) */
    int bidir;              /* -b (client) */
    int verify;             /* --verify (client) */
    int cs;                 /* -A CMP_AND_SWAP (client) */
    int family;             /* 4 or 6 */
    int progress;           /* enum mroce_progress_mode */
    int cc;                 /* enum mroce_cc_algo */
    uint32_t burst;         /* --burst: engine path_burst */
    struct mroce_fault txf, rxf;
    int have_fault;
    uint64_t seed;          /* --seed (client: verify pattern; fault seed) */
    const char *json;       /* --json FILE */
    double timeout;         /* --timeout seconds: connect, peer silence */
    int timeout_set;        /* --timeout given: also bounds accept */
    int x_corrupt;          /* --x-corrupt (testing): spoil one message */
    uint32_t min_rto_us;    /* --min-rto: QP min_rto (0 = engine default) */
};

/* Control message.  Every field is a uint64_t so it has no padding and goes
 * on the wire as big-endian words (ctrl_put / ctrl_get). */
enum ctrl_type {
    C_HELLO = 1, C_WELCOME, C_GO, C_READY, C_DONE, C_RESULT, C_FIN
};
struct ctrl {
    uint64_t type, version;
    /* HELLO: the run's configuration */
    uint64_t test, iters, duration_ms, nqps, tx_depth, rx_depth, bidir, verify;
    uint64_t cs, seed, size_min, size_max;
    /* HELLO, WELCOME: the sender's buffer */
    uint64_t buf_addr, rkey, region, stride, mtu;
    /* GO .. RESULT: the message size being run */
    uint64_t size;
    /* DONE, RESULT: the sender's requester run (bidir: both send one) */
    uint64_t run_ns, tx_msgs, peak_bps;
    /* RESULT, FIN: the sender's verification and counters */
    uint64_t checked, mismatches, errors;
    uint64_t retx, dups, paths_used, paths_total, retired;
    uint64_t qpn[MAX_QPS];   /* HELLO, WELCOME: queue pair numbers */
    uint64_t count[MAX_QPS]; /* DONE, RESULT: messages sent per QP */
};
_Static_assert(sizeof(struct ctrl) <= CTRL_BYTES, "control message too big");

struct pqp {
    mroce_vqp *qp;
    mroce_vcq *cq;
    uint32_t qpn, rqpn;
    uint8_t *tgt;      /* region the peer accesses (inside the big buffer) */
    uint8_t *src;      /* region we send from / READ into */
    uint8_t *rx;       /* nrx receive buffers of rx_slot bytes */
    uint64_t rtgt;     /* the peer's target region for this QP */
    /* per message size */
    uint64_t posted, done;  /* send WRs posted; completed (in order) */
    int last_signaled;      /* the last WR posted was signaled */
    uint64_t rx_data;       /* data messages received (SEND) */
    uint64_t rd_checked;    /* READ/atomic WRs verified */
    uint64_t last_rx_pkts;  /* peer liveness */
};

/* Latency samples and the row a message size produces. */
struct row {
    uint32_t size;
    uint64_t iters;
    double bw_peak, bw_avg, mpps;       /* Gb/s, Gb/s, Mpps */
    double t_min, t_max, t_typ, t_avg, t_std, p99, p999; /* us */
    uint64_t retx_local, retx_remote, dups;
    uint64_t mismatches;
};

/* Everything one side knows. */
struct perf {
    struct opts o;
    int server;
    mroce_device *dev;
    mroce_pd *pd;
    mroce_vmr *mr;        /* the data allocation */
    mroce_vmr *hello_mr;  /* server: the HELLO receive before the data MR */
    uint8_t *mem, *ctrl_tx, *hello_rx;
    size_t mem_len;
    uint32_t lkey, rrkey;
    struct pqp q[MAX_QPS];
    uint32_t nqps;
    /* the agreed configuration (client: from options; server: HELLO) */
    int test, bidir, verify, cs;
    uint64_t iters, duration_ms, seed;
    int iters_auto;       /* client, -a without -n: iterations per size */
    uint64_t cur_iters;   /* client: iterations for the current size */
    uint32_t tx_depth, rx_depth, size_min, size_max, mtu;
    uint64_t region;      /* bytes per target or source region */
    uint64_t stride;      /* bytes from one QP's regions to the next's */
    uint32_t rx_slot, nrx;
    /* control inbox (control messages arrive in order on QP 0) */
    struct ctrl inbox[8];
    unsigned in_head, in_tail;
    uint64_t ctrl_seq, ctrl_done;
    /* verification totals */
    uint64_t checked, mismatches, peer_mismatches;
    int closing;          /* teardown: flushes are expected */
    int peer_closed;      /* the peer disconnected (receives flushed) */
    /* bandwidth: bytes completed, and (time, bytes) at each completion
     * event, from which the peak is the best window of the run */
    uint64_t bytes_done, peak_bps;
    uint64_t (*ev)[2];
    size_t nev, cap_ev;
    uint32_t cur_size;
    /* liveness */
    uint64_t live_t, live_chk; /* last change of rx_pkts; last look */
    uint64_t live_pkts;
    struct row rows[32];
    int nrows;
    struct mroce_qp_counters base_c; /* counters at the start of a size */
};

static struct perf P; /* global so LeakSanitizer sees everything reachable */

/* ------------------------------------------------------------------------ */

/* Prints the error and exits 1; with --json, the file says why, so a
 * script reading it never sees a stale or missing result. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fflush(stdout);
    fprintf(stderr, "mroce-perf: %s\n", msg);
    FILE *f = P.o.json ? fopen(P.o.json, "w") : NULL;
    if (f) {
        fprintf(f, "{\n  \"tool\": \"mroce-perf\",\n  \"status\": \"error\",\n"
                "  \"error\": \"");
        for (const char *c = msg; *c; c++)
            fprintf(f, *c == '"' || *c == '\\' ? "\\%c"
                       : (unsigned char)*c < 0x20 ? "?" : "%c", *c);
        fprintf(f, "\"\n}\n");
        fclose(f);
    }
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t timeout_ns(void)
{
    return (uint64_t)(P.o.timeout * 1e9);
}

/* ------------------------------------------------------------ patterns --- */

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The pattern of message idx on QP q: word j = mix64(base + j), so any
 * misplaced, stale or mixed-up block shows. */
static uint64_t pat_base(uint32_t q, uint64_t idx)
{
    return mix64(P.seed ^ ((uint64_t)(q + 1) * 0x9e3779b97f4a7c15ull) ^
                 mix64(idx + 0x632be59bd9b4e019ull));
}

static void pat_fill(uint8_t *buf, size_t len, uint32_t q, uint64_t idx)
{
    uint64_t b = pat_base(q, idx);
    size_t j = 0;
    for (; j + 8 <= len; j += 8) {
        uint64_t w = mix64(b + j / 8);
        memcpy(buf + j, &w, 8);
    }
    if (j < len) {
        uint64_t w = mix64(b + j / 8);
        memcpy(buf + j, &w, len - j);
    }
}

/* Returns the number of mismatched bytes (0 = identical). */
static uint64_t pat_check(const uint8_t *buf, size_t len, uint32_t q,
                          uint64_t idx)
{
    uint64_t b = pat_base(q, idx), bad = 0;
    for (size_t j = 0; j < len; j += 8) {
        uint64_t w = mix64(b + j / 8);
        size_t n = len - j < 8 ? len - j : 8;
        if (memcmp(buf + j, &w, n) != 0) {
            const uint8_t *e = (const uint8_t *)&w;
            for (size_t k = 0; k < n; k++)
                bad += buf[j + k] != e[k];
        }
    }
    return bad;
}

static void note_check(uint64_t len, uint64_t bad, const char *what,
                       uint32_t q, uint64_t idx)
{
    P.checked += len;
    if (bad) {
        if (P.mismatches == 0)
            fprintf(stderr,
                    "mroce-perf: verify: %s on QP %u, message %" PRIu64
                    ": %" PRIu64 " of %" PRIu64 " bytes differ\n",
                    what, q, idx, bad, len);
        P.mismatches += bad;
    }
}

/* ----------------------------------------------------- control messages --- */

static void ctrl_put(uint8_t *buf, const struct ctrl *c)
{
    const uint64_t *w = (const uint64_t *)(const void *)c;
    for (size_t i = 0; i < sizeof(*c) / 8; i++) {
        uint64_t be = htobe64(w[i]);
        memcpy(buf + i * 8, &be, 8);
    }
}

static int ctrl_get(struct ctrl *c, const uint8_t *buf, uint32_t len)
{
    if (len != sizeof(*c))
        return -1;
    uint64_t *w = (uint64_t *)(void *)c;
    for (size_t i = 0; i < sizeof(*c) / 8; i++) {
        uint64_t be;
        memcpy(&be, buf + i * 8, 8);
        w[i] = be64toh(be);
    }
    return c->version == CTRL_VERSION ? 0 : -1;
}

/* ------------------------------------------------------------- helpers --- */

static void post_recv_buf(struct pqp *q, uint32_t i)
{
    struct mroce_sge sge = {
        .addr = (uintptr_t)(q->rx + (size_t)i * P.rx_slot),
        .length = P.rx_slot,
        .lkey = P.lkey,
    };
    struct mroce_recv_wr wr = {.wr_id = WRID_RECV | i, .sg_list = &sge,
                               .num_sge = 1};
    struct mroce_recv_wr *bad;
    int rc = mroce_post_recv(q->qp, &wr, &bad);
    /* The peer may have disconnected already (with a progress thread, at
     * any moment): the session is over then, not broken. */
    if (rc < 0 && !P.closing && mroce_vqp_state(q->qp) == MROCE_QPS_RTS)
        die("post_recv: %s", mroce_lib_strerror(rc));
}

static uint32_t stamp_of(uint64_t i)
{
    return (uint32_t)(i % 255) + 1;
}

/* Messages in flight a requester may have: --verify needs every slot free
 * before it is refilled, and SENDs must not outrun the peer's receives. */
static uint32_t nslots(uint32_t size)
{
    uint64_t s = size ? P.region / size : P.tx_depth;
    if (s > P.tx_depth)
        s = P.tx_depth;
    return s ? (uint32_t)s : 1;
}

static uint32_t depth_for(uint32_t size)
{
    uint32_t d = P.tx_depth;
    if (P.verify && d > nslots(size))
        d = nslots(size);
    if ((P.test == T_SEND_BW || P.test == T_SEND_LAT) && d > P.nrx / 2)
        d = P.nrx / 2 ? P.nrx / 2 : 1;
    return d;
}

/* Completion moderation: a signaled WR every cq_mod, as perftest does. */
static uint32_t cq_mod(uint32_t depth)
{
    uint32_t m = depth / 2;
    if (m > 100)
        m = 100;
    return m ? m : 1;
}

/* Stamp positions for write_lat: the last byte of every MTU-sized packet.
 * MetaRoCE places packets in any order, so the last byte of the message
 * alone would not prove that the message has landed. */
static size_t stamp_pos(uint32_t size, uint32_t k)
{
    uint64_t end = (uint64_t)(k + 1) * P.mtu;
    return (size_t)(end < size ? end : size) - 1;
}

static uint32_t nstamps(uint32_t size)
{
    return size ? (size + P.mtu - 1) / P.mtu : 0;
}

/* ----------------------------------------------------- completion pump --- */

static void on_recv(struct pqp *q, const struct mroce_wc *wc)
{
    uint32_t i = (uint32_t)(wc->wr_id & WRID_IDX_MASK);
    const uint8_t *buf = q->rx + (size_t)i * P.rx_slot;
    if ((wc->wc_flags & MROCE_WC_WITH_IMM) && wc->imm_data == CTRL_IMM) {
        struct ctrl *c = &P.inbox[P.in_tail % 8];
        if (P.in_tail - P.in_head >= 8)
            die("control inbox overflow");
        if (ctrl_get(c, buf, wc->byte_len) < 0)
            die("malformed control message (%u bytes)", wc->byte_len);
        P.in_tail++;
    } else {
        /* A data SEND: check it against the message index it must be. */
        uint64_t k = q->rx_data++;
        uint32_t qi = (uint32_t)(q - P.q);
        if (wc->byte_len != P.cur_size) {
            fprintf(stderr, "mroce-perf: QP %u message %" PRIu64
                    ": %u bytes, expected %u\n", qi, k, wc->byte_len,
                    P.cur_size);
            P.mismatches++;
        } else if (P.verify && P.test == T_SEND_BW) {
            note_check(wc->byte_len, pat_check(buf, wc->byte_len, qi, k),
                       "SEND", qi, k);
        } else if (P.verify && P.test == T_SEND_LAT) {
            /* send_lat: the first 8 bytes carry the message index. */
            uint64_t bad = 0;
            if (wc->byte_len >= 8) {
                uint64_t got;
                memcpy(&got, buf, 8);
                bad = got != k ? 8 : 0;
                bad += pat_check(buf + 8, wc->byte_len - 8, qi, 0);
            } else {
                bad = pat_check(buf, wc->byte_len, qi, 0);
            }
            note_check(wc->byte_len, bad, "SEND", qi, k);
        }
    }
    post_recv_buf(q, i);
}

/* Verify READ (or atomic) results of WRs [q->rd_checked, upto). */
static void check_reads(struct pqp *q, uint64_t upto)
{
    uint32_t qi = (uint32_t)(q - P.q);
    uint32_t size = P.cur_size;
    for (; q->rd_checked < upto; q->rd_checked++) {
        uint64_t idx = q->rd_checked;
        if (P.test == T_READ_BW || P.test == T_READ_LAT) {
            uint32_t s = (uint32_t)(idx % nslots(size));
            if (P.test == T_READ_LAT)
                s = 0;
            note_check(size, pat_check(q->src + (size_t)s * size, size, qi, s),
                       "READ", qi, idx);
        } else if (P.test == T_ATOMIC_LAT) {
            uint64_t got;
            memcpy(&got, q->src, 8);
            note_check(8, got != idx ? 8 : 0, "atomic", qi, idx);
        }
    }
}

static void on_send(struct pqp *q, const struct mroce_wc *wc)
{
    if (wc->wr_id & WRID_CTRL) {
        P.ctrl_done = wc->wr_id & WRID_IDX_MASK;
        return;
    }
    uint64_t idx = wc->wr_id & WRID_IDX_MASK;
    uint64_t n = idx + 1 - q->done; /* this completion retires n WRs */
    q->done = idx + 1;
    if (P.verify) /* READ and atomic tests signal every WR when verifying */
        check_reads(q, q->done);
    P.bytes_done += n * P.cur_size;
    if (P.nev == P.cap_ev) {
        size_t cap = P.cap_ev ? 2 * P.cap_ev : 1024;
        void *e = realloc(P.ev, cap * sizeof(*P.ev));
        if (!e)
            die("out of memory");
        P.ev = e;
        P.cap_ev = cap;
    }
    P.ev[P.nev][0] = now_ns();
    P.ev[P.nev][1] = P.bytes_done;
    P.nev++;
}

/* Poll one queue pair's CQ (in APP mode an empty poll drives the device).
 * Returns the completions handled. */
static int pump(struct pqp *q)
{
    struct mroce_wc wc[32];
    int n = mroce_poll_cq(q->cq, 32, wc);
    if (n < 0)
        die("poll_cq: %s", mroce_lib_strerror(n));
    for (int i = 0; i < n; i++) {
        if (wc[i].status != MROCE_WC_SUCCESS) {
            if (P.closing && wc[i].status == MROCE_WC_WR_FLUSH_ERR)
                continue;
            /* Receives flushed by the peer's orderly disconnect: fine once
             * it has said FIN (a progress thread can process its DISCONNECT
             * before we have even read FIN); wait_ctrl() fails otherwise. */
            if (wc[i].status == MROCE_WC_WR_FLUSH_ERR &&
                (wc[i].wr_id & WRID_RECV) &&
                mroce_vqp_state(q->qp) == MROCE_QPS_CLOSED) {
                P.peer_closed = 1;
                continue;
            }
            die("error completion on QP %u: %s (%s %" PRIu64 ")",
                (unsigned)(q - P.q), mroce_wc_status_str(wc[i].status),
                (wc[i].wr_id & WRID_RECV)   ? "receive"
                : (wc[i].wr_id & WRID_CTRL) ? "control message"
                                            : "data work request",
                (uint64_t)(wc[i].wr_id & WRID_IDX_MASK));
        }
        if (wc[i].wr_id & WRID_RECV)
            on_recv(q, &wc[i]);
        else
            on_send(q, &wc[i]);
    }
    return n;
}

/* Dies if the peer has sent nothing for --timeout (checked every 100 ms). */
static void liveness(uint64_t t)
{
    if (P.live_t == 0) {
        P.live_t = P.live_chk = t;
        return;
    }
    if (t - P.live_chk < 100000000ull)
        return;
    P.live_chk = t;
    uint64_t pkts = 0;
    for (uint32_t i = 0; i < P.nqps; i++) {
        struct mroce_qp_counters c;
        if (P.q[i].qp && mroce_vqp_counters(P.q[i].qp, &c) == 0)
            pkts += c.rx_pkts;
    }
    if (pkts != P.live_pkts) {
        P.live_pkts = pkts;
        P.live_t = t;
    } else if (t - P.live_t > timeout_ns()) {
        die("peer silent for %.0f s; giving up", P.o.timeout);
    }
}

static void pump_all(void)
{
    for (uint32_t i = 0; i < P.nqps; i++)
        pump(&P.q[i]);
    liveness(now_ns());
}

static void send_ctrl(struct ctrl *c)
{
    c->version = CTRL_VERSION;
    /* The previous control SEND has completed (we waited), so the buffer is
     * free again. */
    ctrl_put(P.ctrl_tx, c);
    struct mroce_sge sge = {.addr = (uintptr_t)P.ctrl_tx,
                            .length = sizeof(*c), .lkey = P.lkey};
    uint64_t seq = ++P.ctrl_seq;
    struct mroce_send_wr wr = {
        .wr_id = WRID_CTRL | seq, .sg_list = &sge, .num_sge = 1,
        .opcode = MROCE_WR_SEND_WITH_IMM, .send_flags = MROCE_SEND_SIGNALED,
        .imm_data = CTRL_IMM,
    };
    struct mroce_send_wr *bad;
    int rc = mroce_post_send(P.q[0].qp, &wr, &bad);
    if (rc < 0)
        die("post_send (control): %s", mroce_lib_strerror(rc));
    /* Wait for it: a completion means placed at the peer, and (completions
     * being in order) every earlier WR on QP 0 done. */
    while (P.ctrl_done != seq)
        pump_all();
}

static struct ctrl wait_ctrl(enum ctrl_type want)
{
    while (P.in_head == P.in_tail) {
        if (P.peer_closed)
            die("the peer disconnected");
        pump_all();
    }
    struct ctrl c = P.inbox[P.in_head++ % 8];
    if (c.type != want)
        die("protocol: expected control message %d, got %" PRIu64, (int)want,
            c.type);
    return c;
}

static int have_ctrl(void)
{
    return P.in_head != P.in_tail;
}

/* ---------------------------------------------------------- the device --- */

static void open_device(void)
{
    struct mroce_device_attr a;
    mroce_device_attr_default(&a);
    if (P.o.bind)
        a.local_addr = P.o.bind;
    else
        a.local_addr = P.o.family == 6 ? "::1" : "127.0.0.1";
    a.port = P.server ? P.o.port : P.o.local_port;
    a.progress = (uint8_t)P.o.progress;
    if (P.o.have_fault) {
        a.tx_fault = P.o.txf;
        a.rx_fault = P.o.rxf;
    }
    a.fault_seed = P.o.seed;
    int rc = mroce_device_open(&a, &P.dev);
    if (rc < 0)
        die("cannot open device on %s port %u: %s", a.local_addr, a.port,
            mroce_lib_strerror(rc));
    rc = mroce_pd_alloc(P.dev, &P.pd);
    if (rc < 0)
        die("pd_alloc: %s", mroce_lib_strerror(rc));
}

/* Sizes of the regions, from the agreed configuration (both sides compute
 * the same). */
static void plan_memory(void)
{
    uint64_t want = (uint64_t)P.tx_depth * P.size_max;
    uint64_t budget = DATA_BUDGET / 2 / P.nqps;
    P.region = want < budget ? want : budget;
    if (P.region < P.size_max)
        P.region = P.size_max;
    if (P.region < 64)
        P.region = 64; /* atomics and small tests */
    P.region = (P.region + PAGE - 1) / PAGE * PAGE;

    int sends = P.test == T_SEND_BW || P.test == T_SEND_LAT;
    P.rx_slot = CTRL_BYTES;
    if (sends && P.size_max > P.rx_slot)
        P.rx_slot = P.size_max;
    P.rx_slot = (P.rx_slot + 63) / 64 * 64;
    if (sends) {
        uint64_t n = P.rx_depth;
        if (n < 2ull * P.tx_depth)
            n = 2ull * P.tx_depth;
        uint64_t cap = RX_BUDGET / P.nqps / P.rx_slot;
        if (n > cap)
            n = cap;
        if (n < 4)
            n = 4;
        P.nrx = (uint32_t)n;
    } else {
        P.nrx = 4; /* control messages only (QP 0) */
    }
}

/* Allocates and registers the side's memory and carves it into regions. */
static void alloc_memory(void)
{
    size_t rx_bytes = (size_t)P.nrx * P.rx_slot;
    size_t per_qp = 2 * P.region + ((rx_bytes + PAGE - 1) / PAGE * PAGE);
    P.stride = per_qp;
    P.mem_len = per_qp * P.nqps + CTRL_BYTES;
    if (posix_memalign((void **)&P.mem, PAGE, P.mem_len) != 0)
        die("out of memory (%zu bytes)", P.mem_len);
    memset(P.mem, 0, P.mem_len);
    for (uint32_t i = 0; i < P.nqps; i++) {
        uint8_t *b = P.mem + per_qp * i;
        P.q[i].tgt = b;
        P.q[i].src = b + P.region;
        P.q[i].rx = b + 2 * P.region;
    }
    P.ctrl_tx = P.mem + per_qp * P.nqps;
    unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ | MROCE_ACCESS_REMOTE_ATOMIC;
    int rc = mroce_reg_mr(P.pd, P.mem, P.mem_len, acc, &P.mr);
    if (rc < 0)
        die("reg_mr (%zu bytes): %s", P.mem_len, mroce_lib_strerror(rc));
    P.lkey = mroce_vmr_lkey(P.mr);
}

static void create_qp(struct pqp *q)
{
    int rc = mroce_create_cq(P.dev, 4 * (P.tx_depth + P.nrx) + 64, &q->cq);
    if (rc < 0)
        die("create_cq: %s", mroce_lib_strerror(rc));
    struct mroce_vqp_init_attr ia;
    mroce_vqp_init_attr_default(&ia);
    ia.send_cq = ia.recv_cq = q->cq;
    ia.eng.max_send_wr = P.tx_depth + 16;
    ia.eng.max_recv_wr = P.nrx + 4;
    if (P.o.mtu)
        ia.eng.mtu = (uint16_t)P.o.mtu;
    if (P.o.paths)
        ia.eng.npaths = (uint16_t)P.o.paths;
    ia.eng.cc_algo = (uint8_t)P.o.cc;
    if (P.o.burst)
        ia.eng.path_burst = (uint8_t)P.o.burst;
    ia.eng.handshake_timeout = timeout_ns();
    /* RNR NAKs are a pacing signal here, not a failure. */
    ia.eng.rnr_retry = 255;
    if (P.o.min_rto_us) {
        ia.eng.min_rto = (mroce_tstamp)P.o.min_rto_us * 1000;
        if (ia.eng.max_rto < ia.eng.min_rto)
            ia.eng.max_rto = ia.eng.min_rto;
    }
    rc = mroce_create_qp(P.pd, &ia, &q->qp);
    if (rc < 0)
        die("create_qp: %s", mroce_lib_strerror(rc));
    q->qpn = mroce_vqp_num(q->qp);
}

static uint32_t own_mtu(void)
{
    struct mroce_qp_attr a;
    if (mroce_query_qp(P.q[0].qp, &a) < 0)
        die("query_qp failed");
    return a.mtu;
}

/* ------------------------------------------------------------ counters --- */

static void sum_counters(struct mroce_qp_counters *s, uint64_t *used,
                         uint64_t *total)
{
    memset(s, 0, sizeof(*s));
    if (used)
        *used = *total = 0;
    for (uint32_t i = 0; i < P.nqps; i++) {
        struct mroce_qp_counters c;
        if (!P.q[i].qp || mroce_vqp_counters(P.q[i].qp, &c) < 0)
            continue;
#define ADD(name) s->name += c.name;
        MROCE_QP_COUNTERS(ADD)
#undef ADD
        if (used) {
            struct mroce_path_stats ps[256];
            int n = mroce_vqp_path_stats(P.q[i].qp, ps, 256);
            for (int k = 0; k < n && k < 256; k++) {
                *total += 1;
                *used += ps[k].tx_pkts > 0;
            }
        }
    }
}

/* ------------------------------------------------------ per-size setup --- */

/* Prepares this side's memory for a message size before the peer starts. */
static void prepare_size(uint32_t size)
{
    P.cur_size = size;
    P.bytes_done = 0;
    P.peak_bps = 0;
    for (uint32_t i = 0; i < P.nqps; i++) {
        struct pqp *q = &P.q[i];
        q->posted = q->done = q->rx_data = q->rd_checked = 0;
        q->last_signaled = 1;
        switch (P.test) {
        case T_READ_BW:
            /* What the peer READs: slot s holds pattern (i, s). */
            if (P.server || P.bidir)
                for (uint32_t s = 0; s < nslots(size); s++)
                    pat_fill(q->tgt + (size_t)s * size, size, i, s);
            break;
        case T_READ_LAT:
            pat_fill(q->tgt, size, i, 0);
            break;
        case T_ATOMIC_LAT:
            memset(q->tgt, 0, 8);
            break;
        case T_WRITE_LAT:
            /* Stamp bytes start at 0, which no stamp value equals. */
            if (P.verify) {
                pat_fill(q->src, size, i, 0);
                pat_fill(q->tgt, size, i, 0);
            }
            for (uint32_t k = 0; k < nstamps(size); k++)
                q->tgt[stamp_pos(size, k)] = 0;
            break;
        case T_SEND_LAT:
            if (P.verify) {
                if (size >= 8)
                    pat_fill(q->src + 8, size - 8, i, 0);
                else
                    pat_fill(q->src, size, i, 0);
            }
            break;
        default:
            break;
        }
    }
    sum_counters(&P.base_c, NULL, NULL);
}

/* Verifies what the peer wrote into our target regions, once its DONE (or
 * RESULT) says how many messages it sent on each QP. */
static void verify_targets(const struct ctrl *c)
{
    uint32_t size = P.cur_size;
    /* Message counts are always checked; contents only with --verify. */
    for (uint32_t i = 0; i < P.nqps; i++) {
        struct pqp *q = &P.q[i];
        uint64_t n = c->count[i];
        switch (P.test) {
        case T_WRITE_BW: {
            uint32_t ns = nslots(size);
            if (!P.verify)
                break;
            for (uint32_t s = 0; s < ns && s < n; s++) {
                uint64_t last = s + (n - 1 - s) / ns * ns;
                note_check(size, pat_check(q->tgt + (size_t)s * size, size, i,
                                           last), "WRITE", i, last);
            }
            break;
        }
        case T_SEND_BW:
        case T_SEND_LAT:
            if (q->rx_data != n) {
                fprintf(stderr, "mroce-perf: QP %u: %" PRIu64
                        " messages received, peer sent %" PRIu64 "\n",
                        i, q->rx_data, n);
                P.mismatches++;
            }
            break;
        case T_WRITE_LAT:
            if (n && size && P.verify) {
                uint8_t st = (uint8_t)stamp_of(n - 1);
                uint64_t bad = 0;
                for (uint32_t k = 0; k < nstamps(size); k++) {
                    size_t p = stamp_pos(size, k);
                    bad += q->tgt[p] != st;
                    q->tgt[p] = 0; /* so the pattern check sees the rest */
                }
                uint8_t *tmp = malloc(size);
                if (!tmp)
                    die("out of memory");
                pat_fill(tmp, size, i, 0);
                for (uint32_t k = 0; k < nstamps(size); k++)
                    tmp[stamp_pos(size, k)] = 0;
                for (uint32_t b = 0; b < size; b++)
                    bad += tmp[b] != q->tgt[b];
                free(tmp);
                note_check(size, bad, "WRITE", i, n - 1);
            }
            break;
        case T_ATOMIC_LAT: {
            uint64_t v;
            if (!P.verify)
                break;
            memcpy(&v, q->tgt, 8);
            note_check(8, v != n ? 8 : 0, "atomic target", i, n);
            break;
        }
        default:
            break;
        }
    }
}

/* ---------------------------------------------------- bandwidth engine --- */

struct bw_run {
    uint64_t t0, t1;
    uint64_t msgs;
};

static void post_data(struct pqp *q, uint32_t size, uint64_t idx, int signaled,
                      enum mroce_wr_opcode op, uint32_t slot)
{
    uint32_t qi = (uint32_t)(q - P.q);
    uint8_t *src = q->src + (size_t)slot * size;
    if (P.verify && (op == MROCE_WR_WRITE || op == MROCE_WR_SEND)) {
        pat_fill(src, size, qi, idx);
        /* Testing the tester: the last message goes out with one byte
         * wrong, which the peer's verification must report. */
        if (P.o.x_corrupt && idx + 1 == P.cur_iters)
            src[size / 2] ^= 0x40;
    }
    if (P.verify && op == MROCE_WR_READ)
        memset(src, 0, size); /* so stale data cannot pass the check */
    struct mroce_sge sge = {.addr = (uintptr_t)src, .length = size,
                            .lkey = P.lkey};
    struct mroce_send_wr wr = {
        .wr_id = idx, .sg_list = &sge, .num_sge = 1, .opcode = op,
        .send_flags = signaled ? MROCE_SEND_SIGNALED : 0,
        .remote_addr = q->rtgt + (uint64_t)slot * size, .rkey = P.rrkey,
    };
    struct mroce_send_wr *bad;
    int rc = mroce_post_send(q->qp, &wr, &bad);
    if (rc < 0)
        die("post_send on QP %u: %s", qi, mroce_lib_strerror(rc));
    q->posted++;
    q->last_signaled = signaled;
}

/* Peak bandwidth: the best window of at least a tenth of the run (and
 * 1 ms) between two completion events.  Completions retire cq_mod WRs at a
 * time, so shorter windows would measure the moderation, not the link. */
static void peak_compute(uint64_t t0, uint64_t t1)
{
    uint64_t w = (t1 - t0) / 10;
    if (w < 1000000ull)
        w = 1000000ull;
    P.peak_bps = 0;
    size_t j = 0;
    uint64_t tj = t0, bj = 0; /* window start: the run's start, then events */
    for (size_t i = 0; i < P.nev; i++) {
        uint64_t ti = P.ev[i][0], bi = P.ev[i][1];
        while (j < i && ti - P.ev[j][0] >= w) {
            tj = P.ev[j][0];
            bj = P.ev[j][1];
            j++;
        }
        if (ti - tj >= w) {
            uint64_t bps = (uint64_t)((double)(bi - bj) * 8e9 / (double)(ti - tj));
            if (bps > P.peak_bps)
                P.peak_bps = bps;
        }
    }
}

/* The requester side of a bandwidth test: keep depth WRs in flight on every
 * QP until -n per QP (or -D seconds), then wait for the last completions.
 * Receive completions (bidir send_bw, control) are handled on the way. */
static void bw_requester(uint32_t size, struct bw_run *r)
{
    enum mroce_wr_opcode op = P.test == T_WRITE_BW  ? MROCE_WR_WRITE
                              : P.test == T_SEND_BW ? MROCE_WR_SEND
                                                    : MROCE_WR_READ;
    uint32_t depth = depth_for(size), mod = cq_mod(depth);
    uint32_t ns = nslots(size);
    int all_signaled = P.verify && op == MROCE_WR_READ;
    uint64_t t_end = P.duration_ms ? now_ns() + P.duration_ms * 1000000ull : 0;
    int time_up = 0;
    r->t0 = now_ns();
    P.nev = 0;
    for (;;) {
        int busy = 0;
        uint64_t t = now_ns();
        if (t_end && t >= t_end)
            time_up = 1;
        for (uint32_t i = 0; i < P.nqps; i++) {
            struct pqp *q = &P.q[i];
            for (;;) {
                int more;
                if (t_end)
                    more = !time_up || !q->last_signaled;
                else
                    more = q->posted < P.cur_iters;
                if (!more || q->posted - q->done >= depth)
                    break;
                uint64_t idx = q->posted;
                int sig = all_signaled || idx % mod == mod - 1 ||
                          (!t_end && idx + 1 == P.cur_iters) || time_up;
                post_data(q, size, idx, sig, op, (uint32_t)(idx % ns));
            }
            if (q->posted != q->done ||
                (t_end ? !time_up : q->posted < P.cur_iters))
                busy = 1;
        }
        if (!busy)
            break;
        pump_all();
    }
    r->t1 = now_ns();
    peak_compute(r->t0, r->t1);
    r->msgs = 0;
    for (uint32_t i = 0; i < P.nqps; i++)
        r->msgs += P.q[i].done;
}

static void fill_result_counters(struct ctrl *c)
{
    struct mroce_qp_counters s;
    uint64_t used, total;
    sum_counters(&s, &used, &total);
    c->retx = s.retx_pkts - P.base_c.retx_pkts;
    c->dups = s.rx_dups - P.base_c.rx_dups;
    c->paths_used = used;
    c->paths_total = total;
    c->retired = s.paths_retired;
}

/* ------------------------------------------------------ latency engine --- */

struct lat {
    uint64_t *ns;  /* one sample per iteration */
    uint64_t n, cap;
};

static void lat_add(struct lat *l, uint64_t v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4096;
        uint64_t *p = realloc(l->ns, l->cap * sizeof(*p));
        if (!p)
            die("out of memory");
        l->ns = p;
    }
    l->ns[l->n++] = v;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Waits until a send slot is free (signaled completions retire WRs). */
static void wait_sq(struct pqp *q, uint32_t depth)
{
    while (q->posted - q->done >= depth)
        pump_all();
}

static void post_lat(struct pqp *q, uint32_t size, uint64_t idx, int sig)
{
    uint8_t *src = q->src;
    struct mroce_sge sge = {.addr = (uintptr_t)src, .length = size,
                            .lkey = P.lkey};
    struct mroce_send_wr wr = {
        .wr_id = idx, .sg_list = &sge, .num_sge = 1,
        .send_flags = sig ? MROCE_SEND_SIGNALED : 0,
        .remote_addr = q->rtgt, .rkey = P.rrkey,
    };
    switch (P.test) {
    case T_WRITE_LAT:
        wr.opcode = MROCE_WR_WRITE;
        break;
    case T_SEND_LAT:
        wr.opcode = MROCE_WR_SEND;
        if (P.verify && size >= 8)
            memcpy(src, &idx, 8);
        break;
    case T_READ_LAT:
        wr.opcode = MROCE_WR_READ;
        if (P.verify)
            memset(src, 0, size);
        break;
    default:
        sge.length = 8;
        wr.opcode = P.cs ? MROCE_WR_CMP_SWAP : MROCE_WR_FETCH_ADD;
        wr.compare_add = P.cs ? idx : 1;
        wr.swap = idx + 1;
        memset(src, 0xff, 8);
        break;
    }
    /* Small WRITEs and SENDs go inline, as perftest does: the data is copied
     * at post time and needs no lkey lookup. */
    if ((wr.opcode == MROCE_WR_WRITE || wr.opcode == MROCE_WR_SEND) &&
        size <= MROCE_MAX_INLINE)
        wr.send_flags |= MROCE_SEND_INLINE;
    struct mroce_send_wr *bad;
    int rc = mroce_post_send(q->qp, &wr, &bad);
    if (rc < 0)
        die("post_send: %s", mroce_lib_strerror(rc));
    q->posted++;
    q->last_signaled = sig;
}

/* write_lat: have all the stamps of iteration i arrived in our target? */
static int stamps_arrived(struct pqp *q, uint32_t size, uint32_t *next,
                          uint8_t st)
{
    uint32_t n = nstamps(size);
    const volatile uint8_t *t = q->tgt;
    while (*next < n && t[stamp_pos(size, *next)] == st)
        (*next)++;
    return *next == n;
}

static void set_stamps(struct pqp *q, uint32_t size, uint8_t st)
{
    for (uint32_t k = 0; k < nstamps(size); k++)
        q->src[stamp_pos(size, k)] = st;
}

/* Client side of a latency test: returns the iterations run.  Samples are
 * the full round trip of each iteration. */
static uint64_t lat_client(uint32_t size, struct lat *l)
{
    struct pqp *q = &P.q[0];
    uint32_t depth = depth_for(size), mod = cq_mod(depth);
    uint64_t t_end = P.duration_ms ? now_ns() + P.duration_ms * 1000000ull : 0;
    uint64_t i = 0;
    for (;; i++) {
        uint64_t t0 = now_ns();
        if (t_end ? t0 >= t_end : i >= P.cur_iters)
            break;
        wait_sq(q, depth);
        int sig = i % mod == mod - 1 || P.test == T_READ_LAT ||
                  P.test == T_ATOMIC_LAT;
        if (P.test == T_WRITE_LAT)
            set_stamps(q, size, (uint8_t)stamp_of(i));
        t0 = now_ns();
        post_lat(q, size, i, sig);
        switch (P.test) {
        case T_WRITE_LAT: {
            uint32_t next = 0;
            while (!stamps_arrived(q, size, &next, (uint8_t)stamp_of(i)))
                pump_all();
            break;
        }
        case T_SEND_LAT:
            while (q->rx_data <= i)
                pump_all();
            break;
        default: /* READ, atomic: the completion is the answer */
            while (q->done <= i)
                pump_all();
            break;
        }
        lat_add(l, now_ns() - t0);
    }
    /* No final signaled WR is needed: DONE, the control SEND that follows,
     * is waited for, and its completion (completions being in order) means
     * every WR before it is done, so the peer verifies final memory. */
    return i;
}

/* Server side of write_lat and send_lat: answer every ping until DONE. */
static uint64_t lat_server(uint32_t size)
{
    struct pqp *q = &P.q[0];
    uint32_t depth = depth_for(size), mod = cq_mod(depth);
    uint64_t i = 0;
    for (;; i++) {
        if (P.test == T_WRITE_LAT) {
            uint32_t next = 0;
            uint8_t st = (uint8_t)stamp_of(i);
            while (!stamps_arrived(q, size, &next, st) && !have_ctrl())
                pump_all();
            if (next < nstamps(size) || size == 0)
                break; /* DONE arrived instead of a ping */
            set_stamps(q, size, st);
        } else {
            while (q->rx_data <= i && !have_ctrl())
                pump_all();
            if (q->rx_data <= i)
                break;
        }
        wait_sq(q, depth);
        post_lat(q, size, i, i % mod == mod - 1);
    }
    return i;
}

static void lat_stats(struct lat *l, struct row *r, int half)
{
    if (l->n == 0)
        return;
    qsort(l->ns, l->n, sizeof(uint64_t), cmp_u64);
    double div = half ? 2000.0 : 1000.0; /* ns -> us, half round trip */
    double sum = 0, sq = 0;
    for (uint64_t i = 0; i < l->n; i++)
        sum += (double)l->ns[i] / div;
    double avg = sum / (double)l->n;
    for (uint64_t i = 0; i < l->n; i++) {
        double d = (double)l->ns[i] / div - avg;
        sq += d * d;
    }
    r->t_min = (double)l->ns[0] / div;
    r->t_max = (double)l->ns[l->n - 1] / div;
    r->t_typ = (double)l->ns[l->n / 2] / div;
    r->t_avg = avg;
    r->t_std = sqrt(sq / (double)l->n);
    uint64_t i99 = (uint64_t)ceil(0.99 * (double)l->n) - 1;
    uint64_t i999 = (uint64_t)ceil(0.999 * (double)l->n) - 1;
    r->p99 = (double)l->ns[i99] / div;
    r->p999 = (double)l->ns[i999] / div;
}

/* ------------------------------------------------------------ printing --- */

static const char *dashes =
    "---------------------------------------------------------------------------------------";

static void print_banner(void)
{
    const struct opts *o = &P.o;
    printf("%s\n", dashes);
    printf("                    %s\n", P.test == T_ATOMIC_LAT && P.cs
                                           ? "Atomic CMP_AND_SWAP Latency Test"
                                           : tests[P.test].title);
    printf(" Transport       : MetaRoCE over UDP (libmroce)\n");
    printf(" Role            : %s\n", P.server ? "server" : "client");
    printf(" Number of qps   : %-8u Connection type : RC\n", P.nqps);
    printf(" TX depth        : %-8u Data ex. method : MetaRoCE SEND (in band)\n",
           P.tx_depth);
    printf(" Mtu             : %-8u Paths           : %u per QP\n", P.mtu,
           o->paths ? o->paths : 64);
    printf(" CC              : %-8s Progress        : %s\n",
           o->cc == MROCE_CC_NONE ? "none" : "delay", o->progress ? "thread" : "app");
    printf(" Bidirectional   : %-8s Verify          : %s\n",
           P.bidir ? "ON" : "OFF", P.verify ? "ON" : "OFF");
    if (o->have_fault)
        printf(" Fault (local)   : tx drop %g dup %g reorder %g corrupt %g;"
               " rx drop %g dup %g reorder %g corrupt %g\n",
               o->txf.drop, o->txf.dup, o->txf.reorder, o->txf.corrupt,
               o->rxf.drop, o->rxf.dup, o->rxf.reorder, o->rxf.corrupt);
    for (uint32_t i = 0; i < P.nqps; i++)
        printf(" local QPN 0x%06x remote QPN 0x%06x\n", P.q[i].qpn,
               P.q[i].rqpn);
    printf("%s\n", dashes);
    if (tests[P.test].lat)
        printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]"
               "    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%%"
               " percentile[usec] \n");
    else
        printf(" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]"
               "   MsgRate[Mpps]\n");
    fflush(stdout);
}

static void print_row(const struct row *r)
{
    if (tests[P.test].lat)
        printf(" %-7u %-10" PRIu64 " %-7.2f        %-7.2f      %-7.2f          "
               "%-7.2f        %-7.2f          %-7.2f                %-7.2f\n",
               r->size, r->iters, r->t_min, r->t_max, r->t_typ, r->t_avg,
               r->t_std, r->p99, r->p999);
    else
        printf(" %-10u %-10" PRIu64 "     %-9.2f          %-9.2f            %-.6f\n",
               r->size, r->iters, r->bw_peak, r->bw_avg, r->mpps);
    fflush(stdout);
}

static void print_footer(const struct ctrl *peer)
{
    struct mroce_qp_counters s;
    uint64_t used, total;
    sum_counters(&s, &used, &total);
    printf("%s\n", dashes);
    printf(" retransmissions : %" PRIu64 " (path %" PRIu64 ", ooo %" PRIu64
           ", rto %" PRIu64 ", probe %" PRIu64 ", rnr %" PRIu64 ")",
           s.retx_pkts, s.retx_path, s.retx_ooo, s.retx_rto, s.retx_probe,
           s.retx_rnr);
    if (peer)
        printf("; peer %" PRIu64, peer->retx);
    printf("\n duplicates rx   : %" PRIu64 "   timeouts: %" PRIu64
           "   paths used: %" PRIu64 " of %" PRIu64 "   paths retired: %" PRIu64
           "\n", s.rx_dups, s.timeouts, used, total, s.paths_retired);
    if (P.verify)
        printf(" verify          : %" PRIu64 " bytes checked here, %" PRIu64
               " mismatches here, %" PRIu64 " at the peer\n",
               P.checked, P.mismatches, P.peer_mismatches);
    printf("%s\n", dashes);
    fflush(stdout);
}

static void write_json(void)
{
    if (!P.o.json)
        return;
    FILE *f = fopen(P.o.json, "w");
    if (!f)
        die("cannot write %s: %s", P.o.json, strerror(errno));
    struct mroce_qp_counters s;
    uint64_t used, total;
    sum_counters(&s, &used, &total);
    /* Report what the QPs really use: the library's defaults where no
     * option overrode them (path_burst is 8 there, not the engine's 1). */
    struct mroce_vqp_init_attr defs;
    mroce_vqp_init_attr_default(&defs);
    fprintf(f, "{\n  \"tool\": \"mroce-perf\",\n  \"test\": \"%s\",\n"
            "  \"role\": \"%s\",\n  \"transport\": \"metaroce-udp\",\n",
            tests[P.test].name, P.server ? "server" : "client");
    fprintf(f, "  \"config\": {\"qps\": %u, \"tx_depth\": %u, \"mtu\": %u, "
            "\"paths\": %u, \"cc\": \"%s\", \"progress\": \"%s\", "
            "\"bidirectional\": %s, \"verify\": %s, \"iterations\": %" PRIu64
            ", \"duration_s\": %.3f, \"burst\": %u,\n"
            "             \"fault\": {\"tx\": {\"drop\": %g, \"dup\": %g, "
            "\"reorder\": %g, \"corrupt\": %g}, \"rx\": {\"drop\": %g, "
            "\"dup\": %g, \"reorder\": %g, \"corrupt\": %g}}},\n",
            P.nqps, P.tx_depth, P.mtu,
            P.o.paths ? P.o.paths : (unsigned)defs.eng.npaths,
            P.o.cc == MROCE_CC_NONE ? "none" : "delay",
            P.o.progress ? "thread" : "app", P.bidir ? "true" : "false",
            P.verify ? "true" : "false", P.iters,
            (double)P.duration_ms / 1000.0,
            P.o.burst ? P.o.burst : (unsigned)defs.eng.path_burst,
            P.o.txf.drop, P.o.txf.dup, P.o.txf.reorder, P.o.txf.corrupt,
            P.o.rxf.drop, P.o.rxf.dup, P.o.rxf.reorder, P.o.rxf.corrupt);
    fprintf(f, "  \"results\": [");
    for (int i = 0; i < P.nrows; i++) {
        const struct row *r = &P.rows[i];
        fprintf(f, "%s\n    {\"bytes\": %u, \"iterations\": %" PRIu64,
                i ? "," : "", r->size, r->iters);
        if (tests[P.test].lat)
            fprintf(f, ", \"t_min_us\": %.3f, \"t_max_us\": %.3f, "
                    "\"t_typical_us\": %.3f, \"t_avg_us\": %.3f, "
                    "\"t_stdev_us\": %.3f, \"p99_us\": %.3f, \"p999_us\": %.3f",
                    r->t_min, r->t_max, r->t_typ, r->t_avg, r->t_std, r->p99,
                    r->p999);
        else
            fprintf(f, ", \"bw_peak_gbps\": %.4f, \"bw_avg_gbps\": %.4f, "
                    "\"msg_rate_mpps\": %.6f", r->bw_peak, r->bw_avg, r->mpps);
        fprintf(f, ", \"retx_local\": %" PRIu64 ", \"retx_remote\": %" PRIu64
                ", \"dups\": %" PRIu64 ", \"verify_mismatches\": %" PRIu64 "}",
                r->retx_local, r->retx_remote, r->dups, r->mismatches);
    }
    fprintf(f, "\n  ],\n  \"counters\": {");
    int first = 1;
#define JSON_C(name)                                                        \
    fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", #name, s.name);     \
    first = 0;
    MROCE_QP_COUNTERS(JSON_C)
#undef JSON_C
    fprintf(f, "},\n  \"paths_used\": %" PRIu64 ", \"paths_total\": %" PRIu64
            ",\n  \"verify\": {\"bytes_checked\": %" PRIu64
            ", \"mismatches\": %" PRIu64 ", \"peer_mismatches\": %" PRIu64 "},\n"
            "  \"status\": \"%s\"\n}\n", used, total, P.checked, P.mismatches,
            P.peer_mismatches,
            P.mismatches || P.peer_mismatches ? "mismatch" : "ok");
    if (fclose(f) != 0)
        die("cannot write %s", P.o.json);
}

/* ------------------------------------------------------- one message size --- */

static double gbps(uint64_t bytes, uint64_t ns)
{
    return ns ? (double)bytes * 8.0 / (double)ns : 0.0;
}

static void row_counters(struct row *r, const struct ctrl *peer)
{
    struct mroce_qp_counters s;
    sum_counters(&s, NULL, NULL);
    r->retx_local = s.retx_pkts - P.base_c.retx_pkts;
    r->dups = s.rx_dups - P.base_c.rx_dups;
    r->retx_remote = peer ? peer->retx : 0;
}

/* Client: one message size, start to RESULT. */
static void client_size(uint32_t size)
{
    struct row r = {.size = size};
    uint64_t mism0 = P.mismatches;
    P.cur_iters = P.iters;
    if (P.iters_auto) { /* -a: about 1 GiB per size, 16..5000 iterations */
        uint64_t cap = (1ull << 30) / size;
        P.cur_iters = cap < 16 ? 16 : cap < 5000 ? cap : 5000;
    }
    prepare_size(size);
    /* GO carries this size's iteration count: a bidirectional server runs
     * as many as we do. */
    struct ctrl c = {.type = C_GO, .size = size, .iters = P.cur_iters};
    send_ctrl(&c);
    wait_ctrl(C_READY);

    struct ctrl done = {.type = C_DONE, .size = size};
    if (tests[P.test].lat) {
        struct lat l = {0};
        r.iters = lat_client(size, &l);
        done.count[0] = r.iters;
        lat_stats(&l, &r, P.test == T_WRITE_LAT || P.test == T_SEND_LAT);
        free(l.ns);
    } else {
        struct bw_run br;
        bw_requester(size, &br);
        done.run_ns = br.t1 - br.t0;
        done.tx_msgs = br.msgs;
        done.peak_bps = P.peak_bps;
        for (uint32_t i = 0; i < P.nqps; i++)
            done.count[i] = P.q[i].done;
        r.iters = br.msgs / P.nqps;
        double avg = gbps(br.msgs * size, done.run_ns);
        r.bw_avg = avg;
        r.bw_peak = (double)P.peak_bps / 1e9;
        if (r.bw_peak < avg)
            r.bw_peak = avg; /* short runs: no full sampling interval */
        r.mpps = done.run_ns ? (double)br.msgs * 1e3 / (double)done.run_ns : 0;
    }
    send_ctrl(&done);
    struct ctrl res = wait_ctrl(C_RESULT);
    if (P.bidir && !tests[P.test].lat) {
        /* perftest -b reports both directions together. */
        for (uint32_t i = 0; i < P.nqps; i++)
            if (P.duration_ms ? res.count[i] == 0 : res.count[i] != P.cur_iters)
                die("bidirectional: the server sent %" PRIu64 " messages on "
                    "QP %u, expected %" PRIu64, res.count[i], i,
                    P.duration_ms ? 1 : P.cur_iters);
        verify_targets(&res);
        double pavg = gbps(res.tx_msgs * size, res.run_ns);
        r.bw_avg += pavg;
        r.bw_peak += (double)res.peak_bps / 1e9 > pavg
                         ? (double)res.peak_bps / 1e9 : pavg;
        r.mpps += res.run_ns ? (double)res.tx_msgs * 1e3 / (double)res.run_ns
                             : 0;
    } else if (P.test == T_WRITE_LAT || P.test == T_SEND_LAT) {
        verify_targets(&res);
    }
    P.peer_mismatches += res.mismatches;
    row_counters(&r, &res);
    r.mismatches = (P.mismatches - mism0) + res.mismatches;
    if (P.nrows < (int)(sizeof(P.rows) / sizeof(P.rows[0])))
        P.rows[P.nrows++] = r;
    print_row(&r);
}

/* Server: one message size, GO to RESULT. */
static void server_size(const struct ctrl *go)
{
    uint32_t size = (uint32_t)go->size;
    struct row r = {.size = size};
    uint64_t mism0 = P.mismatches;
    P.cur_iters = go->iters;
    prepare_size(size);
    struct ctrl c = {.type = C_READY, .size = size};
    send_ctrl(&c);

    struct ctrl res = {.type = C_RESULT, .size = size};
    struct ctrl done;
    if (tests[P.test].lat) {
        uint64_t n = 0;
        if (P.test == T_WRITE_LAT || P.test == T_SEND_LAT)
            n = lat_server(size);
        done = wait_ctrl(C_DONE);
        res.count[0] = n;
        r.iters = done.count[0];
    } else {
        if (P.bidir) {
            struct bw_run br;
            bw_requester(size, &br);
            res.run_ns = br.t1 - br.t0;
            res.tx_msgs = br.msgs;
            res.peak_bps = P.peak_bps;
            for (uint32_t i = 0; i < P.nqps; i++)
                res.count[i] = P.q[i].done;
        }
        done = wait_ctrl(C_DONE);
        r.iters = done.tx_msgs / P.nqps;
        r.bw_avg = gbps(done.tx_msgs * size, done.run_ns);
        r.bw_peak = (double)done.peak_bps / 1e9;
        if (r.bw_peak < r.bw_avg)
            r.bw_peak = r.bw_avg;
        r.mpps = done.run_ns ? (double)done.tx_msgs * 1e3 / (double)done.run_ns
                             : 0;
        if (P.bidir) {
            double a = gbps(res.tx_msgs * size, res.run_ns);
            r.bw_avg += a;
            r.bw_peak += (double)res.peak_bps / 1e9 > a
                             ? (double)res.peak_bps / 1e9 : a;
            r.mpps += res.run_ns ? (double)res.tx_msgs * 1e3 / (double)res.run_ns
                                 : 0;
        }
    }
    /* Receive completions that raced with DONE are in the CQs by now (the
     * peer saw them acknowledged, and acknowledged means placed). */
    for (int k = 0; k < 4; k++)
        pump_all();
    verify_targets(&done);
    res.mismatches = P.mismatches - mism0;
    res.checked = P.checked;
    fill_result_counters(&res);
    send_ctrl(&res);
    row_counters(&r, NULL);
    r.mismatches = res.mismatches;
    if (P.nrows < (int)(sizeof(P.rows) / sizeof(P.rows[0])))
        P.rows[P.nrows++] = r;
    if (!tests[P.test].lat)
        print_row(&r);
    else
        printf(" %-7u %-10" PRIu64 " (latency is measured by the client)\n",
               size, r.iters);
    fflush(stdout);
}

/* ------------------------------------------------------------ sessions --- */

static void hello_fill(struct ctrl *c)
{
    memset(c, 0, sizeof(*c));
    c->type = C_HELLO;
    c->test = (uint64_t)P.test;
    c->iters = P.iters;
    c->duration_ms = P.duration_ms;
    c->nqps = P.nqps;
    c->tx_depth = P.tx_depth;
    c->rx_depth = P.rx_depth;
    c->bidir = (uint64_t)P.bidir;
    c->verify = (uint64_t)P.verify;
    c->cs = (uint64_t)P.cs;
    c->seed = P.seed;
    c->size_min = P.size_min;
    c->size_max = P.size_max;
}

static void wait_rts(struct pqp *q)
{
    uint64_t t0 = now_ns();
    while (mroce_vqp_state(q->qp) != MROCE_QPS_RTS) {
        if (mroce_vqp_state(q->qp) == MROCE_QPS_ERROR)
            die("QP %u failed to connect", (unsigned)(q - P.q));
        if (now_ns() - t0 > timeout_ns())
            die("QP %u: no connection within %.0f s", (unsigned)(q - P.q),
                P.o.timeout);
        pump_all();
    }
}

static void teardown(void)
{
    /* The session is over: orderly disconnects, whose flushes are expected. */
    P.closing = 1;
    for (uint32_t i = 0; i < P.nqps; i++)
        if (P.q[i].qp && mroce_vqp_state(P.q[i].qp) == MROCE_QPS_RTS)
            (void)mroce_disconnect(P.q[i].qp, 500);
    mroce_device_close(P.dev); /* destroys QPs, CQs, MRs, the PD */
    P.dev = NULL;
    free(P.mem);
    P.mem = NULL;
    free(P.hello_rx);
    P.hello_rx = NULL;
    free(P.ev);
    P.ev = NULL;
}

static void run_client(void)
{
    const struct opts *o = &P.o;
    open_device();
    plan_memory();
    alloc_memory();
    for (uint32_t i = 0; i < P.nqps; i++) {
        create_qp(&P.q[i]);
        /* Receives first: the server may send as soon as we connect. */
        for (uint32_t k = 0; k < (i == 0 || P.test == T_SEND_BW ? P.nrx : 0); k++)
            post_recv_buf(&P.q[i], k);
    }
    int rc = mroce_connect(P.q[0].qp, o->server, o->port, 0,
                           (int)(o->timeout * 1000));
    if (rc < 0)
        die("cannot connect to %s port %u: %s", o->server, o->port,
            mroce_lib_strerror(rc));

    struct ctrl c;
    hello_fill(&c);
    c.buf_addr = (uintptr_t)P.mem;
    c.rkey = mroce_vmr_rkey(P.mr);
    c.region = P.region;
    c.stride = P.stride;
    c.mtu = own_mtu();
    for (uint32_t i = 0; i < P.nqps; i++)
        c.qpn[i] = P.q[i].qpn;
    send_ctrl(&c);
    struct ctrl w = wait_ctrl(C_WELCOME);
    if (w.region != P.region)
        die("protocol: server region %" PRIu64 " != %" PRIu64, w.region,
            P.region);
    P.rrkey = (uint32_t)w.rkey;
    P.mtu = (uint32_t)(w.mtu < c.mtu ? w.mtu : c.mtu);
    for (uint32_t i = 0; i < P.nqps; i++) {
        P.q[i].rqpn = (uint32_t)w.qpn[i];
        P.q[i].rtgt = w.buf_addr + w.stride * i;
        if (i > 0) {
            rc = mroce_connect(P.q[i].qp, o->server, o->port, P.q[i].rqpn,
                               (int)(o->timeout * 1000));
            if (rc < 0)
                die("cannot connect QP %u: %s", i, mroce_lib_strerror(rc));
        }
    }
    print_banner();
    for (uint32_t s = P.size_min; s <= P.size_max && s; s *= 2)
        client_size(s);
    struct ctrl fin = {.type = C_FIN, .mismatches = P.mismatches,
                       .checked = P.checked};
    send_ctrl(&fin);
    print_footer(NULL);
    write_json();
    teardown();
}

static void run_server(void)
{
    const struct opts *o = &P.o;
    open_device();
    /* Until HELLO says how big things are, QP 0 is created with room for
     * the largest depths we accept and one small receive for HELLO. */
    P.tx_depth = 1024;
    P.nrx = 4096;
    P.nqps = 1;
    create_qp(&P.q[0]);
    P.hello_rx = aligned_alloc(64, CTRL_BYTES);
    if (!P.hello_rx)
        die("out of memory");
    int rc = mroce_reg_mr(P.pd, P.hello_rx, CTRL_BYTES,
                          MROCE_ACCESS_LOCAL_WRITE, &P.hello_mr);
    if (rc < 0)
        die("reg_mr: %s", mroce_lib_strerror(rc));
    struct mroce_sge sge = {.addr = (uintptr_t)P.hello_rx,
                            .length = CTRL_BYTES,
                            .lkey = mroce_vmr_lkey(P.hello_mr)};
    struct mroce_recv_wr rwr = {.wr_id = UINT64_MAX, .sg_list = &sge,
                                .num_sge = 1};
    struct mroce_recv_wr *rbad;
    rc = mroce_post_recv(P.q[0].qp, &rwr, &rbad);
    if (rc < 0)
        die("post_recv: %s", mroce_lib_strerror(rc));
    printf("\n************************************\n"
           "* Waiting for client to connect... *\n"
           "************************************\n");
    fflush(stdout);
    rc = mroce_accept(P.q[0].qp, o->timeout_set ? (int)(o->timeout * 1000) : -1);
    if (rc < 0)
        die("accept: %s", mroce_lib_strerror(rc));

    /* HELLO lands in the small buffer: poll for it by hand. */
    struct mroce_wc wc;
    uint64_t t0 = now_ns();
    for (;;) {
        rc = mroce_poll_cq(P.q[0].cq, 1, &wc);
        if (rc < 0)
            die("poll_cq: %s", mroce_lib_strerror(rc));
        if (rc == 1)
            break;
        if (now_ns() - t0 > timeout_ns())
            die("no HELLO from the client within %.0f s", o->timeout);
    }
    struct ctrl h;
    if (wc.status != MROCE_WC_SUCCESS || wc.wr_id != UINT64_MAX ||
        ctrl_get(&h, P.hello_rx, wc.byte_len) < 0 || h.type != C_HELLO)
        die("protocol: bad HELLO (%s)", mroce_wc_status_str(wc.status));
    if (h.test != (uint64_t)P.test)
        die("the client runs %s, this server %s",
            h.test < T_COUNT ? tests[h.test].name : "?", tests[P.test].name);
    if (h.nqps < 1 || h.nqps > MAX_QPS || h.tx_depth < 1 ||
        h.tx_depth > 1024 || h.size_min < 1 || h.size_min > h.size_max ||
        h.size_max > (1u << 30) || h.rx_depth > 4096)
        die("protocol: HELLO out of range");
    P.iters = h.iters;
    P.duration_ms = h.duration_ms;
    P.nqps = (uint32_t)h.nqps;
    P.tx_depth = (uint32_t)h.tx_depth;
    P.rx_depth = (uint32_t)h.rx_depth;
    P.bidir = (int)h.bidir;
    P.verify = (int)h.verify;
    P.cs = (int)h.cs;
    P.seed = h.seed;
    P.size_min = (uint32_t)h.size_min;
    P.size_max = (uint32_t)h.size_max;
    plan_memory();
    alloc_memory();
    for (uint32_t k = 0; k < P.nrx; k++)
        post_recv_buf(&P.q[0], k);
    for (uint32_t i = 1; i < P.nqps; i++) {
        create_qp(&P.q[i]);
        if (P.test == T_SEND_BW)
            for (uint32_t k = 0; k < P.nrx; k++)
                post_recv_buf(&P.q[i], k);
        rc = mroce_listen(P.q[i].qp);
        if (rc < 0)
            die("listen: %s", mroce_lib_strerror(rc));
    }
    P.rrkey = (uint32_t)h.rkey;
    P.mtu = own_mtu();
    if (h.mtu < P.mtu)
        P.mtu = (uint32_t)h.mtu;
    for (uint32_t i = 0; i < P.nqps; i++) {
        P.q[i].rqpn = (uint32_t)h.qpn[i];
        P.q[i].rtgt = h.buf_addr + h.stride * i;
    }
    struct ctrl w = {.type = C_WELCOME, .buf_addr = (uintptr_t)P.mem,
                     .rkey = mroce_vmr_rkey(P.mr), .region = P.region,
                     .stride = P.stride, .mtu = own_mtu()};
    for (uint32_t i = 0; i < P.nqps; i++)
        w.qpn[i] = P.q[i].qpn;
    send_ctrl(&w);
    for (uint32_t i = 1; i < P.nqps; i++)
        wait_rts(&P.q[i]);
    print_banner();
    for (;;) {
        while (!have_ctrl()) {
            if (P.peer_closed)
                die("the client disconnected");
            pump_all();
        }
        struct ctrl c = P.inbox[P.in_head++ % 8];
        if (c.type == C_FIN) {
            P.peer_mismatches += c.mismatches;
            break;
        }
        if (c.type != C_GO)
            die("protocol: unexpected control message %" PRIu64, c.type);
        server_size(&c);
    }
    print_footer(NULL);
    write_json();
    /* Let the client disconnect first (it is waiting for nothing more). */
    uint64_t t1 = now_ns();
    while (mroce_vqp_state(P.q[0].qp) == MROCE_QPS_RTS &&
           now_ns() - t1 < 1000000000ull) {
        P.closing = 1;
        pump_all();
    }
    teardown();
}

/* ------------------------------------------------------- command line --- */

static void usage(FILE *f)
{
    fprintf(f,
"usage: mroce-perf TEST [SERVER] [options]\n"
"  TEST: write_bw send_bw read_bw write_lat send_lat read_lat atomic_lat\n"
"  Without SERVER: wait for a client.  With SERVER (an IPv4/IPv6 literal on\n"
"  loopback, e.g. 127.0.0.1): connect and run.  The server takes the run's\n"
"  shape (-s -a -n -D -q -t -r -b --verify -A --seed) from the client.\n"
"options:\n"
"  -s, --size=BYTES       message size (K/M suffix; default 65536, lat 2)\n"
"  -a, --all              sweep sizes 2 .. 2^23\n"
"  -n, --iters=N          iterations per QP (default 5000 bw, 1000 lat;\n"
"                         with -a at most 1 GiB per size unless -n is given)\n"
"  -D, --duration=SEC     run for SEC seconds instead of -n iterations\n"
"  -q, --qp=N             queue pairs (bw tests; 1..%d)\n"
"  -p, --port=PORT        the server's MetaRoCE UDP port (default %u)\n"
"      --local-port=PORT  the client's own UDP port (default: PORT + 1)\n"
"  -B, --bind=ADDR        local address (default 127.0.0.1, or ::1 with -6)\n"
"      --paths=N          path entropies per QP (1..256; default 64)\n"
"  -m, --mtu=BYTES        MTU (payload bytes per packet; default 4096)\n"
"  -t, --tx-depth=N       WRs in flight per QP (default 128 bw, 16 lat)\n"
"  -r, --rx-depth=N       receives posted per QP (send tests; default 512)\n"
"  -b, --bidirectional    both sides send (bw tests)\n"
"  -A, --atomic-type=T    FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
"      --fault=SPEC       local fault injection, e.g.\n"
"                         \"tx:drop=0.01,dup=0.001,reorder=0.01;rx:drop=0.01\"\n"
"                         (keys drop dup reorder corrupt reorder_us seed;\n"
"                         no tx:/rx: prefix means tx)\n"
"      --json=FILE        write the results as JSON\n"
"      --verify           check all data end to end (exit 1 on mismatch);\n"
"                         the checking delays ACKs in app progress mode, so\n"
"                         measure performance without it\n"
"      --progress=MODE    app (default: polling drives progress) or thread\n"
"  -4 / -6                IPv4 (default) / IPv6 loopback\n"
"      --cc=ALGO          delay (default: delay+ECN) or none (fixed window)\n"
"      --burst=N          consecutive packets per path pick (1..64)\n"
"      --seed=N           verify pattern and fault injection seed\n"
"      --min-rto=USEC     the QPs' minimum retransmission timeout (engine\n"
"                         default 200); per side\n"
"      --timeout=SEC      connect / handshake / peer-silence limit (default\n"
"                         10); also bounds the server's wait for a client\n"
"      --x-corrupt        testing: with --verify, send the last WRITE/SEND\n"
"                         of each size with one byte wrong (must fail)\n"
"  -h, --help\n"
"Exit status: 0 on success; 1 on an error completion, a verify mismatch or\n"
"a failure; 2 on a usage error.\n",
            MAX_QPS, MROCE_UDP_PORT);
}

static void bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void bad_usage(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "mroce-perf: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(mroce-perf --help for usage)\n");
    exit(2);
}

static uint64_t parse_u64(const char *s, const char *what, uint64_t lo,
                          uint64_t hi)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    uint64_t mult = 1;
    if (end != s && *end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mult = 1ull << 10; end++; break;
        case 'M': mult = 1ull << 20; end++; break;
        case 'G': mult = 1ull << 30; end++; break;
        default: break;
        }
    }
    if (errno || end == s || *end || *s == '-' || v > hi / mult ||
        v * mult < lo || v * mult > hi)
        bad_usage("bad %s '%s' (%" PRIu64 "..%" PRIu64 ")", what, s, lo, hi);
    return v * mult;
}

static double parse_double(const char *s, const char *what, double lo,
                           double hi)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi))
        bad_usage("bad %s '%s' (%g..%g)", what, s, lo, hi);
    return v;
}

/* "tx:drop=0.01,dup=0.001;rx:drop=0.01" (the MROCE_FAULT syntax). */
static void parse_fault(struct opts *o, const char *spec)
{
    char *copy = strdup(spec), *save1 = NULL;
    if (!copy)
        die("out of memory");
    for (char *part = strtok_r(copy, ";", &save1); part;
         part = strtok_r(NULL, ";", &save1)) {
        struct mroce_fault *f = &o->txf;
        if (!strncmp(part, "tx:", 3)) {
            part += 3;
        } else if (!strncmp(part, "rx:", 3)) {
            f = &o->rxf;
            part += 3;
        }
        char *save2 = NULL;
        for (char *kv = strtok_r(part, ",", &save2); kv;
             kv = strtok_r(NULL, ",", &save2)) {
            char *eq = strchr(kv, '=');
            if (!eq)
                bad_usage("bad --fault item '%s'", kv);
            *eq = 0;
            const char *v = eq + 1;
            if (!strcmp(kv, "drop"))
                f->drop = parse_double(v, "drop", 0, 1);
            else if (!strcmp(kv, "dup"))
                f->dup = parse_double(v, "dup", 0, 1);
            else if (!strcmp(kv, "reorder"))
                f->reorder = parse_double(v, "reorder", 0, 1);
            else if (!strcmp(kv, "corrupt"))
                f->corrupt = parse_double(v, "corrupt", 0, 1);
            else if (!strcmp(kv, "reorder_us"))
                f->reorder_us = (uint32_t)parse_u64(v, "reorder_us", 0, 1000000);
            else if (!strcmp(kv, "seed"))
                o->seed = parse_u64(v, "seed", 0, UINT64_MAX);
            else
                bad_usage("unknown --fault key '%s'", kv);
        }
    }
    free(copy);
    o->have_fault = 1;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    enum { O_PATHS = 256, O_FAULT, O_JSON, O_VERIFY, O_PROGRESS, O_CC, O_BURST,
           O_SEED, O_TIMEOUT, O_LPORT, O_XCORRUPT, O_MINRTO };
    static const struct option lo[] = {
        {"size", required_argument, 0, 's'},
        {"all", no_argument, 0, 'a'},
        {"iters", required_argument, 0, 'n'},
        {"duration", required_argument, 0, 'D'},
        {"qp", required_argument, 0, 'q'},
        {"port", required_argument, 0, 'p'},
        {"local-port", required_argument, 0, O_LPORT},
        {"bind", required_argument, 0, 'B'},
        {"paths", required_argument, 0, O_PATHS},
        {"mtu", required_argument, 0, 'm'},
        {"tx-depth", required_argument, 0, 't'},
        {"rx-depth", required_argument, 0, 'r'},
        {"bidirectional", no_argument, 0, 'b'},
        {"atomic-type", required_argument, 0, 'A'},
        {"fault", required_argument, 0, O_FAULT},
        {"json", required_argument, 0, O_JSON},
        {"verify", no_argument, 0, O_VERIFY},
        {"progress", required_argument, 0, O_PROGRESS},
        {"cc", required_argument, 0, O_CC},
        {"burst", required_argument, 0, O_BURST},
        {"seed", required_argument, 0, O_SEED},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"x-corrupt", no_argument, 0, O_XCORRUPT},
        {"min-rto", required_argument, 0, O_MINRTO},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int seed_set = 0, size_set = 0, depth_set = 0;
    memset(o, 0, sizeof(*o));
    o->port = MROCE_UDP_PORT;
    o->family = 4;
    o->timeout = 10;
    o->rx_depth = 512;
    o->nqps = 1;
    o->cc = MROCE_CC_DELAY_ECN;
    int c;
    while ((c = getopt_long(argc, argv, "s:an:D:q:p:B:m:t:r:bA:46h", lo, NULL)) != -1) {
        switch (c) {
        case 's': o->size = (uint32_t)parse_u64(optarg, "size", 1, 1u << 30); size_set = 1; break;
        case 'a': o->all = 1; break;
        case 'n': o->iters = parse_u64(optarg, "iterations", 1, 1ull << 40); break;
        case 'D': o->duration = parse_double(optarg, "duration", 0.001, 86400); break;
        case 'q': o->nqps = (uint32_t)parse_u64(optarg, "QP count", 1, MAX_QPS); break;
        case 'p': o->port = (uint16_t)parse_u64(optarg, "port", 1, 65535); break;
        case O_LPORT: o->local_port = (uint16_t)parse_u64(optarg, "port", 1, 65535); break;
        case 'B': o->bind = optarg; break;
        case O_PATHS: o->paths = (uint32_t)parse_u64(optarg, "paths", 1, 256); break;
        case 'm': o->mtu = (uint32_t)parse_u64(optarg, "MTU", 256, 64000); break;
        case 't': o->tx_depth = (uint32_t)parse_u64(optarg, "tx depth", 1, 1024); depth_set = 1; break;
        case 'r': o->rx_depth = (uint32_t)parse_u64(optarg, "rx depth", 1, 4096); break;
        case 'b': o->bidir = 1; break;
        case 'A':
            if (!strcasecmp(optarg, "FETCH_AND_ADD"))
                o->cs = 0;
            else if (!strcasecmp(optarg, "CMP_AND_SWAP"))
                o->cs = 1;
            else
                bad_usage("-A takes FETCH_AND_ADD or CMP_AND_SWAP");
            break;
        case O_FAULT: parse_fault(o, optarg); break;
        case O_JSON: o->json = optarg; break;
        case O_VERIFY: o->verify = 1; break;
        case O_PROGRESS:
            if (!strcmp(optarg, "app"))
                o->progress = MROCE_PROGRESS_APP;
            else if (!strcmp(optarg, "thread"))
                o->progress = MROCE_PROGRESS_THREAD;
            else
                bad_usage("--progress takes app or thread");
            break;
        case '4': o->family = 4; break;
        case '6': o->family = 6; break;
        case O_CC:
            if (!strcmp(optarg, "delay"))
                o->cc = MROCE_CC_DELAY_ECN;
            else if (!strcmp(optarg, "none"))
                o->cc = MROCE_CC_NONE;
            else
                bad_usage("--cc takes delay or none");
            break;
        case O_BURST: o->burst = (uint32_t)parse_u64(optarg, "burst", 1, 64); break;
        case O_SEED: o->seed = parse_u64(optarg, "seed", 0, UINT64_MAX); seed_set = 1; break;
        case O_TIMEOUT: o->timeout = parse_double(optarg, "timeout", 0.1, 86400); o->timeout_set = 1; break;
        case O_XCORRUPT: o->x_corrupt = 1; break;
        case O_MINRTO: o->min_rto_us = (uint32_t)parse_u64(optarg, "min RTO", 1, 10000000); break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); exit(2);
        }
    }
    if (optind >= argc)
        bad_usage("which test? (write_bw, send_bw, read_bw, write_lat, "
                  "send_lat, read_lat, atomic_lat)");
    o->test = -1;
    for (int t = 0; t < T_COUNT; t++)
        if (!strcmp(argv[optind], tests[t].name))
            o->test = t;
    if (o->test < 0)
        bad_usage("unknown test '%s'", argv[optind]);
    if (optind + 1 < argc)
        o->server = argv[optind + 1];
    if (optind + 2 < argc)
        bad_usage("unexpected argument '%s'", argv[optind + 2]);
    int lat = tests[o->test].lat;
    if (lat && o->nqps > 1)
        bad_usage("latency tests use one QP (-q 1)");
    if (lat && o->bidir)
        bad_usage("-b applies to bandwidth tests");
    if (o->test == T_ATOMIC_LAT && size_set && o->size != 8)
        bad_usage("atomics are 8 bytes (-s 8)");
    if (o->test == T_WRITE_LAT && o->size == 0 && size_set)
        bad_usage("write_lat needs -s 1 or more");
    if (!size_set)
        o->size = o->test == T_ATOMIC_LAT ? 8 : lat ? 2 : 65536;
    if (!depth_set)
        o->tx_depth = lat ? 16 : 128;
    if (!seed_set && !o->seed)
        o->seed = 0x5eed0000ull ^ (uint64_t)getpid() ^ now_ns();
    if (!o->local_port)
        o->local_port = (uint16_t)(o->port == 65535 ? 65534 : o->port + 1);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    parse_args(argc, argv, &P.o);
    const struct opts *o = &P.o;
    P.server = o->server == NULL;
    P.test = o->test;
    if (!P.server) {
        /* The client decides the run's shape. */
        P.bidir = o->bidir;
        P.verify = o->verify;
        P.cs = o->cs;
        P.seed = o->seed;
        P.nqps = o->nqps;
        P.tx_depth = o->tx_depth;
        P.rx_depth = o->rx_depth;
        P.duration_ms = o->duration > 0 ? (uint64_t)(o->duration * 1000.0) : 0;
        if (P.duration_ms == 0 && o->duration > 0)
            P.duration_ms = 1;
        if (o->all && o->test != T_ATOMIC_LAT) {
            P.size_min = 2;
            P.size_max = SWEEP_MAX_SIZE;
        } else {
            P.size_min = P.size_max = o->size;
        }
        if (o->iters)
            P.iters = o->iters;
        else if (tests[o->test].lat)
            P.iters = 1000;
        else {
            P.iters = 5000;
            P.iters_auto = o->all;
        }
        run_client();
    } else {
        run_server();
    }
    return P.mismatches || P.peer_mismatches ? 1 : 0;
}
