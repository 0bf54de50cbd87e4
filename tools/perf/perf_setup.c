/*
 * perf_setup.c - what the rest of mroce-perf stands on: fatal errors (die,
 * which also leaves a JSON error report), the clock, the device and its
 * protection domain, the one registered allocation carved into per-QP
 * regions, queue pairs with their completion queues, receive buffers, and
 * the sum of every QP's counters.  Region sizes depend only on the agreed
 * configuration, so both sides compute the same layout (plan_memory).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

/* -------------------------------------------------------- errors, time --- */

/* Prints the error and exits 1; with --json, the file says why, so a
 * script reading it never sees a stale or missing result. */
void die(const char *fmt, ...)
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
            fprintf(f,
                    *c == '"' || *c == '\\'    ? "\\%c"
                    : (unsigned char)*c < 0x20 ? "?"
                                               : "%c",
                    *c);
        fprintf(f, "\"\n}\n");
        fclose(f);
    }
    exit(1);
}

uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t timeout_ns(void)
{
    return (uint64_t)(P.o.timeout * 1e9);
}

/* ----------------------------------------------------- receive buffers --- */

void post_recv_buf(struct pqp *q, uint32_t i)
{
    struct mroce_sge sge = {
        .addr = (uintptr_t)(q->rx + (size_t)i * P.rx_slot),
        .length = P.rx_slot,
        .lkey = P.lkey,
    };
    struct mroce_recv_wr wr = {.wr_id = WRID_RECV | i,
                               .sg_list = &sge,
                               .num_sge = 1};
    struct mroce_recv_wr *bad;
    int rc = mroce_post_recv(q->qp, &wr, &bad);
    /* The peer may have disconnected already (with a progress thread, at
     * any moment): the session is over then, not broken. */
    if (rc < 0 && !P.closing && mroce_qp_get_state(q->qp) == MROCE_QPS_RTS)
        die("post_recv: %s", mroce_strerror(rc));
}

/* ---------------------------------------------------------- the device --- */

void open_device(void)
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
    a.key_file = P.o.encrypt ? NULL : ""; /* NULL: MROCE_KEY_FILE/MROCE_KEY */
    a.secure_suite = P.o.encrypt;
    int rc = mroce_device_open(&a, &P.dev);
    if (rc < 0)
        die("cannot open device on %s port %u: %s", a.local_addr, a.port,
            mroce_strerror(rc));
    /* --rekey: the next master key, installed for receiving before any
     * peer sends under it (SEC-32's first step). */
    if (P.o.rekey && (rc = mroce_device_add_key(P.dev, 1, P.o.rekey)) < 0)
        die("--rekey %s: %s", P.o.rekey, mroce_strerror(rc));
    rc = mroce_pd_alloc(P.dev, &P.pd);
    if (rc < 0)
        die("pd_alloc: %s", mroce_strerror(rc));
}

/* Sizes of the regions, from the agreed configuration (both sides compute
 * the same). */
void plan_memory(void)
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
void alloc_memory(void)
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
        die("reg_mr (%zu bytes): %s", P.mem_len, mroce_strerror(rc));
    P.lkey = mroce_mr_lkey(P.mr);
}

void create_qp(struct pqp *q)
{
    int rc = mroce_create_cq(P.dev, 4 * (P.tx_depth + P.nrx) + 64, &q->cq);
    if (rc < 0)
        die("create_cq: %s", mroce_strerror(rc));
    struct mroce_qp_init_attr ia;
    mroce_qp_init_attr_default(&ia);
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
    ia.eng.rnr_retry = MROCE_RNR_RETRY_FOREVER;
    if (P.o.peer_timeout_set)
        ia.eng.peer_timeout = (mroce_tstamp)(P.o.peer_timeout * 1e9);
    if (P.o.min_rto_us) {
        ia.eng.min_rto = (mroce_tstamp)P.o.min_rto_us * 1000;
        if (ia.eng.max_rto < ia.eng.min_rto)
            ia.eng.max_rto = ia.eng.min_rto;
    }
    rc = mroce_create_qp(P.pd, &ia, &q->qp);
    if (rc < 0)
        die("create_qp: %s", mroce_strerror(rc));
    q->qpn = mroce_qp_num(q->qp);
}

uint32_t own_mtu(void)
{
    struct mre_qp_attr a;
    if (mroce_query_qp(P.q[0].qp, &a) < 0)
        die("query_qp failed");
    return a.mtu;
}

/* ------------------------------------------------------------ counters --- */

void sum_counters(struct mroce_qp_counters *s, uint64_t *used, uint64_t *total)
{
    memset(s, 0, sizeof(*s));
    if (used)
        *used = *total = 0;
    for (uint32_t i = 0; i < P.nqps; i++) {
        struct mroce_qp_counters c;
        if (!P.q[i].qp || mroce_qp_get_counters(P.q[i].qp, &c) < 0)
            continue;
#define ADD(name) s->name += c.name;
        MROCE_QP_COUNTERS(ADD)
#undef ADD
        if (used) {
            struct mroce_path_stats ps[256];
            int n = mroce_qp_path_stats(P.q[i].qp, ps, 256);
            for (int k = 0; k < n && k < 256; k++) {
                *total += 1;
                *used += ps[k].tx_pkts > 0;
            }
        }
    }
}
