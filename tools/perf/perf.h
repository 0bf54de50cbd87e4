/*
 * perf.h - internal interfaces of mroce-perf (tools/perf/), the perftest of
 * MetaRoCE: bandwidth and latency of libmroce between two processes, with
 * perftest's command line and tables.
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
 *
 * The modules, from the command line down: perf_main.c (options, main),
 * perf_session.c (client and server sessions, one message size),
 * perf_bw.c and perf_lat.c (the bandwidth and latency engines),
 * perf_report.c (tables, JSON), perf_pump.c (completion pump, control
 * messages), perf_verify.c (patterns, per-size preparation and checks) and
 * perf_setup.c (errors, clock, device, memory, QPs, counters).  All of them
 * share one state, the global P.
 */
#ifndef MROCE_PERF_H
#define MROCE_PERF_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>
#include <mroce/wire.h>

#define MAX_QPS 32
#define CTRL_IMM 0x4d524346u /* "MRCF": marks a control message */
#define CTRL_BYTES 1024      /* room for one struct ctrl */
#define CTRL_VERSION 1
#define DATA_BUDGET (64ull << 20) /* target + source bytes per side (soft) */
#define RX_BUDGET (128ull << 20)  /* receive buffer bytes per side (soft) */
#define SWEEP_MAX_SIZE (1u << 23) /* -a: 2 .. 2^23 */
#define PAGE 4096u

/* wr_id layout: the top bits say what a completion belongs to (an error
 * completion's opcode is undefined, as in verbs, so we never rely on it
 * there); the low bits are a message index or a receive buffer index. */
#define WRID_CTRL (1ull << 62)
#define WRID_RECV (1ull << 61)
#define WRID_IDX_MASK ((1ull << 61) - 1)

enum test_id {
    T_WRITE_BW,
    T_SEND_BW,
    T_READ_BW,
    T_WRITE_LAT,
    T_SEND_LAT,
    T_READ_LAT,
    T_ATOMIC_LAT,
    T_COUNT
};

/* The tests, indexed by enum test_id (perf_main.c). */
struct test_desc {
    const char *name;
    const char *title; /* perftest's banner */
    int lat;           /* latency test */
};
extern const struct test_desc tests[T_COUNT];

/* Command line.  Fields marked (client) travel to the server in HELLO. */
struct opts {
    int test;            /* enum test_id (both; must match) */
    const char *server;  /* NULL: we are the server */
    uint32_t size;       /* -s (client) */
    int all;             /* -a (client) */
    uint64_t iters;      /* -n (client); 0 = default */
    double duration;     /* -D seconds (client); 0 = iterations */
    uint32_t nqps;       /* -q (client) */
    uint16_t port;       /* -p: the server's port */
    uint16_t local_port; /* --local-port: the client's own port */
    const char *bind;    /* -B: local address */
    uint32_t paths;      /* --paths (per side; negotiated by the engine) */
    uint32_t mtu;        /* -m (per side; the engine takes the minimum) */
    uint32_t tx_depth;   /* -t (client) */
    uint32_t rx_depth;   /* -r (client) */
    int bidir;           /* -b (client) */
    int verify;          /* --verify (client) */
    int cs;              /* -A CMP_AND_SWAP (client) */
    int family;          /* 4 or 6 */
    int progress;        /* enum mroce_progress_mode */
    int cc;              /* enum mroce_cc_algo */
    uint32_t burst;      /* --burst: engine path_burst */
    struct mroce_fault txf, rxf;
    int have_fault;
    uint64_t seed;        /* --seed (client: verify pattern; fault seed) */
    const char *json;     /* --json FILE */
    double timeout;       /* --timeout seconds: connect, peer silence */
    int timeout_set;      /* --timeout given: also bounds accept */
    int x_corrupt;        /* --x-corrupt (testing): spoil one message */
    uint32_t min_rto_us;  /* --min-rto: QP min_rto (0 = engine default) */
    double peer_timeout;  /* --peer-timeout seconds */
    uint8_t encrypt;      /* --encrypt: the suite, 0 = clear */
    const char *rekey;    /* --rekey=FILE: the master key of generation 1 */
    int peer_timeout_set; /* --peer-timeout given (else engine default) */
};

/* Control message.  Every field is a uint64_t so it has no padding and goes
 * on the wire as big-endian words (ctrl_put / ctrl_get). */
enum ctrl_type {
    C_HELLO = 1,
    C_WELCOME,
    C_GO,
    C_READY,
    C_DONE,
    C_RESULT,
    C_FIN
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
    mroce_qp *qp;
    mroce_cq *cq;
    uint32_t qpn, rqpn;
    uint8_t *tgt;  /* region the peer accesses (inside the big buffer) */
    uint8_t *src;  /* region we send from / READ into */
    uint8_t *rx;   /* nrx receive buffers of rx_slot bytes */
    uint64_t rtgt; /* the peer's target region for this QP */
    /* per message size */
    uint64_t posted, done; /* send WRs posted; completed (in order) */
    int last_signaled;     /* the last WR posted was signaled */
    uint64_t rx_data;      /* data messages received (SEND) */
    uint64_t rd_checked;   /* READ/atomic WRs verified */
    uint64_t last_rx_pkts; /* peer liveness */
};

/* Latency samples and the row a message size produces. */
struct row {
    uint32_t size;
    uint64_t iters;
    double bw_peak, bw_avg, mpps;                        /* Gb/s, Gb/s, Mpps */
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
    mroce_mr *mr;       /* the data allocation */
    mroce_mr *hello_mr; /* server: the HELLO receive before the data MR */
    uint8_t *mem, *ctrl_tx, *hello_rx;
    size_t mem_len;
    uint32_t lkey, rrkey;
    struct pqp q[MAX_QPS];
    uint32_t nqps;
    /* the agreed configuration (client: from options; server: HELLO) */
    int test, bidir, verify, cs;
    uint64_t iters, duration_ms, seed;
    int iters_auto;     /* client, -a without -n: iterations per size */
    uint64_t cur_iters; /* client: iterations for the current size */
    uint32_t tx_depth, rx_depth, size_min, size_max, mtu;
    uint64_t region; /* bytes per target or source region */
    uint64_t stride; /* bytes from one QP's regions to the next's */
    uint32_t rx_slot, nrx;
    /* control inbox (control messages arrive in order on QP 0) */
    struct ctrl inbox[8];
    unsigned in_head, in_tail;
    uint64_t ctrl_seq, ctrl_done;
    /* verification totals */
    uint64_t checked, mismatches, peer_mismatches;
    int closing;     /* teardown: flushes are expected */
    int peer_closed; /* the peer disconnected (receives flushed) */
    /* bandwidth: bytes completed, and (time, bytes) at each completion
     * event, from which the peak is the best window of the run */
    uint64_t bytes_done, peak_bps;
    uint64_t (*ev)[2];
    size_t nev, cap_ev;
    uint32_t cur_size;
    /* liveness */
    uint64_t live_t, live_chk; /* last change of rx_pkts; last look */
    uint64_t live_pkts;
    uint32_t live_pumps; /* pump_all() calls, for the clock's period */
    int rekeyed;         /* --rekey: sending under generation 1 */
    struct row rows[32];
    int nrows;
    struct mroce_qp_counters base_c; /* counters at the start of a size */
};

/* Global so LeakSanitizer sees everything reachable (perf_main.c). */
extern struct perf P;

/* A bandwidth run of the requester side (perf_bw.c). */
struct bw_run {
    uint64_t t0, t1;
    uint64_t msgs;
};

/* Latency samples (perf_lat.c). */
struct lat {
    uint64_t *ns; /* one sample per iteration */
    uint64_t n, cap;
};

/* ---- sizing rules shared by the engines and the checks ----
 * (inline: the engines call them in their posting and polling loops) */

static inline uint32_t stamp_of(uint64_t i)
{
    return (uint32_t)(i % 255) + 1;
}

/* Messages in flight a requester may have: --verify needs every slot free
 * before it is refilled, and SENDs must not outrun the peer's receives. */
static inline uint32_t nslots(uint32_t size)
{
    uint64_t s = size ? P.region / size : P.tx_depth;
    if (s > P.tx_depth)
        s = P.tx_depth;
    return s ? (uint32_t)s : 1;
}

static inline uint32_t depth_for(uint32_t size)
{
    uint32_t d = P.tx_depth;
    if (P.verify && d > nslots(size))
        d = nslots(size);
    if ((P.test == T_SEND_BW || P.test == T_SEND_LAT) && d > P.nrx / 2)
        d = P.nrx / 2 ? P.nrx / 2 : 1;
    return d;
}

/* Completion moderation: a signaled WR every cq_mod, as perftest does. */
static inline uint32_t cq_mod(uint32_t depth)
{
    uint32_t m = depth / 2;
    if (m > 100)
        m = 100;
    return m ? m : 1;
}

/* Stamp positions for write_lat: the last byte of every MTU-sized packet.
 * MetaRoCE places packets in any order, so the last byte of the message
 * alone would not prove that the message has landed. */
static inline size_t stamp_pos(uint32_t size, uint32_t k)
{
    uint64_t end = (uint64_t)(k + 1) * P.mtu;
    return (size_t)(end < size ? end : size) - 1;
}

static inline uint32_t nstamps(uint32_t size)
{
    return size ? (size + P.mtu - 1) / P.mtu : 0;
}

/* ---- perf_setup.c: errors, clock, device, memory, QPs, counters ---- */

/* Prints the error and exits 1 (with --json, the file says why). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
uint64_t now_ns(void);     /* CLOCK_MONOTONIC in ns */
uint64_t timeout_ns(void); /* --timeout in ns */
/* Posts receive buffer i of q; dies on failure unless the session is over. */
void post_recv_buf(struct pqp *q, uint32_t i);
void open_device(void);        /* the device (-p or --local-port) and the PD */
void plan_memory(void);        /* region sizes from the agreed configuration */
void alloc_memory(void);       /* allocates, carves and registers P.mem */
void create_qp(struct pqp *q); /* q's CQ and QP, with the options' attributes */
uint32_t own_mtu(void);        /* QP 0's MTU */
/* Sums every QP's counters into s; with used, also counts the paths that
 * carried packets (*used) of all paths (*total). */
void sum_counters(struct mroce_qp_counters *s, uint64_t *used, uint64_t *total);

/* ---- perf_verify.c: patterns, per-size preparation and checks ---- */

/* Fills buf with the pattern of message idx on QP q. */
void pat_fill(uint8_t *buf, size_t len, uint32_t q, uint64_t idx);
/* Returns the number of bytes of buf that differ from the pattern. */
uint64_t pat_check(const uint8_t *buf, size_t len, uint32_t q, uint64_t idx);
/* Adds len checked bytes, bad of them wrong, to the totals (reports the
 * first mismatch). */
void note_check(uint64_t len, uint64_t bad, const char *what, uint32_t q,
                uint64_t idx);
void prepare_size(uint32_t size);          /* before the peer starts */
void verify_targets(const struct ctrl *c); /* after the peer's DONE/RESULT */

/* ---- perf_pump.c: control messages, the completion pump ---- */

/* Decodes a control message; -1 if its length or version is wrong. */
int ctrl_get(struct ctrl *c, const uint8_t *buf, uint32_t len);
void pump_all(void);            /* polls every CQ once; checks liveness */
void send_ctrl(struct ctrl *c); /* sends c and waits until it is placed */
/* Waits for the next control message, which must be of type want. */
struct ctrl wait_ctrl(enum ctrl_type want);
int have_ctrl(void); /* a control message is waiting */

/* ---- perf_bw.c, perf_lat.c: the engines ---- */

void bw_requester(uint32_t size, struct bw_run *r);
uint64_t lat_client(uint32_t size, struct lat *l); /* iterations run */
uint64_t lat_server(uint32_t size);                /* pings answered */
/* Fills r's latency columns from l's samples (half: half round trips). */
void lat_stats(struct lat *l, struct row *r, int half);

/* ---- perf_report.c: tables and JSON ---- */

void print_banner(void);
void print_row(const struct row *r);
void print_footer(const struct ctrl *peer);
void write_json(void); /* --json: the results, counters and status */

/* ---- perf_session.c: client and server sessions ---- */

void run_client(void);
void run_server(void);

#endif /* MROCE_PERF_H */
