/*
 * test_e2e_loopback.c - libmroce end to end: two processes on 127.0.0.1
 * talking MetaRoCE over real UDP sockets.
 *
 * Each scenario forks a server child and plays the client in the parent.
 * The server is generic: it registers a set of regions (one with every
 * right, a small one, a read-only one, a write-only one), each surrounded by
 * guard bytes no MR covers, fills them with known patterns, tells the parent
 * their addresses and rkeys through a pipe (a test shortcut: mroce-perf
 * exchanges them in band), and then serves connections one after another,
 * always keeping a QP listening.  It checks every SEND it receives against
 * the pattern its length implies, and answers commands (SEND with an
 * immediate in the CMD_ range): check a range of a region, check the guards
 * and the protected regions, report the last immediate received, report its
 * failure count, exit.  So the parent can check server-side facts (what was
 * written, what was not) at the moment they matter.
 *
 * Scenarios: every operation at sizes 1, MTU-1, MTU, MTU+1 and 1 MiB, a
 * 64 MiB WRITE, immediates, completion order; remote access errors (bad
 * rkey, out of bounds, no permission: REM_ACCESS_ERR, the QP in ERROR, later
 * work flushed, nothing of the failing WR written, guards intact; whether a
 * valid WR queued behind it was placed anyway is reported, not checked,
 * since placement is out of order); a connect to a port where nobody listens;
 * the server SIGKILLed mid-transfer (RETRY_EXC_ERR, ERROR, WR_FLUSH_ERR, in
 * bounded time); and 5% loss with reordering and duplication injected on
 * both devices, with the data still identical.
 *
 * Children never outlive the test: each sets PR_SET_PDEATHSIG and an
 * alarm(); the parent kills its child on every failure path and has an
 * alarm() of its own whose handler kills the child before exiting.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce.h>

#include "case_table.h"
#include "testutil.h"

#define MTU 4096u
#define MIB (1u << 20)
#define BIG (64u * MIB)

/* Server R_ALL layout. */
#define ALL_LEN (80u * MIB)
#define ZONE_W (64u * MIB) /* small WRITEs: one 1 MiB + 8 KiB cell each */
#define CELL (MIB + 8192u)
#define ZONE_R (72u * MIB)     /* READ source: pattern READ_SEED */
#define ATOMIC_OFF (79u * MIB) /* the atomic counter */
#define SCRATCH (78u * MIB)    /* access test: WRs behind a failing one */
#define SMALL_LEN 4096u
#define PROT_LEN 65536u
#define GUARD 4096u
#define GUARD_BYTE 0xa5

#define READ_SEED 0x5eadu
#define SMALL_SEED 0x5a11u
#define RO_SEED 0x0e0du
#define WO_SEED 0x3e0du

/* Commands: SEND_WITH_IMM whose immediate is CMD_MAGIC | command. */
#define CMD_MAGIC 0xc0de0000u
enum { CMD_CHECK = 1, CMD_GUARDS, CMD_LASTIMM, CMD_STATUS, CMD_EXIT };
struct cmd {
    uint64_t a, b, c; /* CHECK: offset in R_ALL, length, seed */
};
struct reply {
    uint64_t imm, byte_len, opcode, flags; /* LASTIMM: the last data recv */
};

#define SRV_NRX 4 /* receives per server QP */
#define SRV_RX_SLOT (MIB + 64)
#define SRV_MAX_QPS 24

struct srv_info {
    uint64_t all, small, ro, wo;
    uint32_t rk_all, rk_small, rk_ro, rk_wo;
    uint16_t port;
    int ok;
};

static pid_t g_child = -1;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void kill_child(void)
{
    if (g_child > 0) {
        kill(g_child, SIGKILL);
        waitpid(g_child, NULL, 0);
        g_child = -1;
    }
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_e2e_loopback: timed out\n";
    if (g_child > 0)
        kill(g_child, SIGKILL);
    ssize_t r = write(2, msg, sizeof(msg) - 1);
    (void)r;
    _exit(1);
}

/* ------------------------------------------------------------ patterns --- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Positional pattern: byte at absolute position p of stream `seed`, so any
 * sub-range can be checked on its own. */
static void pat_fill(uint8_t *b, size_t len, uint64_t seed, uint64_t start)
{
    size_t i = 0;
    while (i < len) {
        uint64_t p = start + i;
        uint64_t w = mix64(seed * 0x100000001b3ull + p / 8);
        for (unsigned k = (unsigned)(p % 8); k < 8 && i < len; k++, i++)
            b[i] = (uint8_t)(w >> (8 * k));
    }
}

static uint64_t pat_bad(const uint8_t *b, size_t len, uint64_t seed,
                        uint64_t start)
{
    uint64_t bad = 0;
    uint8_t tmp[4096];
    for (size_t o = 0; o < len; o += sizeof(tmp)) {
        size_t n = len - o < sizeof(tmp) ? len - o : sizeof(tmp);
        pat_fill(tmp, n, seed, start + o);
        if (memcmp(tmp, b + o, n) != 0)
            for (size_t k = 0; k < n; k++)
                bad += tmp[k] != b[o + k];
    }
    return bad;
}

static uint64_t byte_bad(const uint8_t *b, size_t len, uint8_t v)
{
    uint64_t bad = 0;
    for (size_t i = 0; i < len; i++)
        bad += b[i] != v;
    return bad;
}

/* =============================================================== server === */

struct srv {
    mroce_device *dev;
    mroce_pd *pd;
    mroce_cq *cq;
    uint8_t *mem; /* guard|ALL|guard|SMALL|guard|RO|guard|WO|guard */
    uint8_t *all, *small, *ro, *wo;
    uint8_t *rx; /* SRV_MAX_QPS * SRV_NRX slots */
    uint8_t *tx; /* reply buffers, one per QP */
    mroce_mr *mr_all, *mr_small, *mr_ro, *mr_wo, *mr_rx;
    mroce_qp *qps[SRV_MAX_QPS];
    int nqps, listening; /* index of the listening QP */
    long failures;
    struct reply last;
    int exit_req;
};

static size_t srv_mem_len(void)
{
    return 5 * (size_t)GUARD + ALL_LEN + SMALL_LEN + 2 * (size_t)PROT_LEN;
}

static int srv_new_listener(struct srv *s)
{
    if (s->nqps == SRV_MAX_QPS)
        return -1;
    struct mroce_qp_init_attr ia;
    mroce_qp_init_attr_default(&ia);
    ia.send_cq = ia.recv_cq = s->cq;
    mroce_qp *qp;
    if (mroce_create_qp(s->pd, &ia, &qp) < 0)
        return -1;
    int i = s->nqps++;
    s->qps[i] = qp;
    for (int k = 0; k < SRV_NRX; k++) {
        struct mroce_sge sge = {.addr = (uintptr_t)(s->rx +
                                                    ((size_t)i * SRV_NRX + k) *
                                                        SRV_RX_SLOT),
                                .length = SRV_RX_SLOT,
                                .lkey = mroce_mr_lkey(s->mr_rx)};
        struct mroce_recv_wr wr = {.wr_id = (uint64_t)i * SRV_NRX + k,
                                   .sg_list = &sge,
                                   .num_sge = 1};
        struct mroce_recv_wr *bad;
        if (mroce_post_recv(qp, &wr, &bad) < 0)
            return -1;
    }
    if (mroce_listen(qp) < 0)
        return -1;
    s->listening = i;
    return 0;
}

static int srv_qp_index(struct srv *s, uint32_t qpn)
{
    for (int i = 0; i < s->nqps; i++)
        if (mroce_qp_num(s->qps[i]) == qpn)
            return i;
    return -1;
}

static void srv_reply(struct srv *s, int qi, uint32_t result,
                      const struct reply *payload)
{
    uint8_t *buf = s->tx + (size_t)qi * 64;
    struct mroce_sge sge = {.addr = (uintptr_t)buf,
                            .length = 0,
                            .lkey = mroce_mr_lkey(s->mr_rx)};
    if (payload) {
        memcpy(buf, payload, sizeof(*payload));
        sge.length = sizeof(*payload);
    }
    struct mroce_send_wr wr = {.wr_id = 0,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = MROCE_WR_SEND_WITH_IMM,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .imm_data = result};
    struct mroce_send_wr *bad;
    if (mroce_post_send(s->qps[qi], &wr, &bad) < 0) {
        fprintf(stderr, "server: reply post failed\n");
        s->failures++;
    }
}

static uint64_t srv_guards(struct srv *s)
{
    uint64_t bad = 0;
    uint8_t *g = s->mem;
    bad += byte_bad(g, GUARD, GUARD_BYTE);
    g += GUARD + ALL_LEN;
    bad += byte_bad(g, GUARD, GUARD_BYTE);
    g += GUARD + SMALL_LEN;
    bad += byte_bad(g, GUARD, GUARD_BYTE);
    g += GUARD + PROT_LEN;
    bad += byte_bad(g, GUARD, GUARD_BYTE);
    g += GUARD + PROT_LEN;
    bad += byte_bad(g, GUARD, GUARD_BYTE);
    bad += pat_bad(s->small, SMALL_LEN, SMALL_SEED, 0);
    bad += pat_bad(s->ro, PROT_LEN, RO_SEED, 0);
    bad += pat_bad(s->wo, PROT_LEN, WO_SEED, 0);
    return bad;
}

static void srv_on_recv(struct srv *s, const struct mroce_wc *wc)
{
    int qi = (int)(wc->wr_id / SRV_NRX);
    uint8_t *buf = s->rx + wc->wr_id * SRV_RX_SLOT;
    int imm = (wc->wc_flags & MROCE_WC_WITH_IMM) != 0;
    if (imm && (wc->imm_data & 0xffff0000u) == CMD_MAGIC) {
        struct cmd c = {0};
        memcpy(&c, buf, wc->byte_len < sizeof(c) ? wc->byte_len : sizeof(c));
        uint64_t r = 0;
        switch (wc->imm_data & 0xffff) {
        case CMD_CHECK:
            /* The range holds the pattern; 64 bytes either side are still
             * zero (nothing written beyond the message). */
            if (c.a < 64 || c.a + c.b + 64 > ALL_LEN) {
                r = 1u << 30;
                break;
            }
            r = pat_bad(s->all + c.a, c.b, c.c, 0);
            if (c.a >= ZONE_W && c.a < ZONE_R)
                r += byte_bad(s->all + c.a - 64, 64, 0) +
                     byte_bad(s->all + c.a + c.b, 64, 0);
            break;
        case CMD_GUARDS:
            r = srv_guards(s);
            break;
        case CMD_LASTIMM:
            srv_reply(s, qi, 0, &s->last);
            goto repost;
        case CMD_STATUS:
            r = (uint64_t)s->failures;
            break;
        case CMD_EXIT:
            s->exit_req = 1;
            break;
        default:
            r = 1u << 31;
        }
        srv_reply(s, qi, r > 0x7fffffff ? 0x7fffffffu : (uint32_t)r, NULL);
    } else {
        s->last.imm = imm ? wc->imm_data : 0;
        s->last.byte_len = wc->byte_len;
        s->last.opcode = wc->opcode;
        s->last.flags = wc->wc_flags;
        /* A SEND (with or without immediate) carries pattern(len); a WRITE
         * with immediate (immediate with bit 31 set here) places elsewhere. */
        if (!(imm && (wc->imm_data & 0x80000000u))) {
            uint64_t bad = pat_bad(buf, wc->byte_len, wc->byte_len, 0);
            if (bad) {
                fprintf(stderr,
                        "server: SEND of %u bytes: %" PRIu64 " bytes differ\n",
                        wc->byte_len, bad);
                s->failures++;
            }
        }
    }
repost:;
    struct mroce_sge sge = {.addr = (uintptr_t)buf,
                            .length = SRV_RX_SLOT,
                            .lkey = mroce_mr_lkey(s->mr_rx)};
    struct mroce_recv_wr wr = {.wr_id = wc->wr_id,
                               .sg_list = &sge,
                               .num_sge = 1};
    struct mroce_recv_wr *bad;
    if (mroce_post_recv(s->qps[qi], &wr, &bad) < 0 &&
        mroce_qp_get_state(s->qps[qi]) == MROCE_QPS_RTS) {
        fprintf(stderr, "server: repost failed\n");
        s->failures++;
    }
}

/* The server child: never returns. */
static void srv_main(int pipe_wr, uint16_t port, const struct mroce_fault *f)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    alarm(150);
    struct srv S = {0}, *s = &S;
    struct srv_info info = {0};
    struct mroce_device_attr da;
    mroce_device_attr_default(&da);
    da.local_addr = "127.0.0.1";
    if (f) {
        da.tx_fault = *f;
        da.rx_fault = *f;
        da.fault_seed = 0x5e12;
    }
    int rc = -1;
    for (int tries = 0; tries < 8 && rc < 0; tries++) {
        da.port = (uint16_t)(port + tries * 97);
        rc = mroce_device_open(&da, &s->dev);
    }
    if (rc < 0) {
        ssize_t w = write(pipe_wr, &info, sizeof(info));
        (void)w;
        _exit(3);
    }
    info.port = mroce_device_port(s->dev);
    size_t len = srv_mem_len();
    s->mem = malloc(len);
    s->rx = calloc((size_t)SRV_MAX_QPS * SRV_NRX + 1, SRV_RX_SLOT);
    if (!s->mem || !s->rx)
        _exit(4);
    s->tx = s->rx + (size_t)SRV_MAX_QPS * SRV_NRX * SRV_RX_SLOT;
    memset(s->mem, GUARD_BYTE, len);
    s->all = s->mem + GUARD;
    s->small = s->all + ALL_LEN + GUARD;
    s->ro = s->small + SMALL_LEN + GUARD;
    s->wo = s->ro + PROT_LEN + GUARD;
    memset(s->all, 0, ALL_LEN);
    pat_fill(s->all + ZONE_R, 4 * MIB, READ_SEED, 0);
    uint64_t v0 = 1000;
    memcpy(s->all + ATOMIC_OFF, &v0, 8);
    pat_fill(s->small, SMALL_LEN, SMALL_SEED, 0);
    pat_fill(s->ro, PROT_LEN, RO_SEED, 0);
    pat_fill(s->wo, PROT_LEN, WO_SEED, 0);
    unsigned all = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                   MROCE_ACCESS_REMOTE_READ | MROCE_ACCESS_REMOTE_ATOMIC;
    if (mroce_pd_alloc(s->dev, &s->pd) < 0 ||
        mroce_reg_mr(s->pd, s->all, ALL_LEN, all, &s->mr_all) < 0 ||
        mroce_reg_mr(s->pd, s->small, SMALL_LEN, all, &s->mr_small) < 0 ||
        mroce_reg_mr(s->pd, s->ro, PROT_LEN,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_READ,
                     &s->mr_ro) < 0 ||
        mroce_reg_mr(s->pd, s->wo, PROT_LEN,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                     &s->mr_wo) < 0 ||
        mroce_reg_mr(s->pd, s->rx,
                     ((size_t)SRV_MAX_QPS * SRV_NRX + 1) * SRV_RX_SLOT,
                     MROCE_ACCESS_LOCAL_WRITE, &s->mr_rx) < 0 ||
        mroce_create_cq(s->dev, 4096, &s->cq) < 0 || srv_new_listener(s) < 0)
        _exit(5);
    info.all = (uintptr_t)s->all;
    info.small = (uintptr_t)s->small;
    info.ro = (uintptr_t)s->ro;
    info.wo = (uintptr_t)s->wo;
    info.rk_all = mroce_mr_rkey(s->mr_all);
    info.rk_small = mroce_mr_rkey(s->mr_small);
    info.rk_ro = mroce_mr_rkey(s->mr_ro);
    info.rk_wo = mroce_mr_rkey(s->mr_wo);
    info.ok = 1;
    if (write(pipe_wr, &info, sizeof(info)) != (ssize_t)sizeof(info))
        _exit(6);
    close(pipe_wr);

    uint64_t exit_at = 0;
    for (;;) {
        struct mroce_wc wc[16];
        int n = mroce_poll_cq(s->cq, 16, wc);
        if (n < 0)
            _exit(7);
        for (int i = 0; i < n; i++) {
            int qi = srv_qp_index(s, wc[i].qp_num);
            if (qi < 0)
                continue;
            if (wc[i].opcode == MROCE_WC_RECV ||
                wc[i].opcode == MROCE_WC_RECV_WITH_IMM) {
                if (wc[i].status == MROCE_WC_SUCCESS)
                    srv_on_recv(s, &wc[i]);
                /* Flushes: a client's QP went away (error tests). */
            }
            /* Reply completions: nothing to do; errors are the client's
             * business (its QP may be in ERROR on purpose). */
        }
        enum mroce_qp_state st = mroce_qp_get_state(s->qps[s->listening]);
        if (st != MROCE_QPS_LISTEN && srv_new_listener(s) < 0) {
            fprintf(stderr, "server: out of QPs\n");
            _exit(8);
        }
        if (s->exit_req && !exit_at)
            exit_at = now_ms() + 200; /* let the reply be acknowledged */
        if (exit_at && now_ms() > exit_at)
            break;
    }
    mroce_device_close(s->dev);
    free(s->mem);
    free(s->rx);
    _exit(s->failures ? 1 : 0);
}

/* Forks a server; fills *info.  Returns 0 or -1. */
static int srv_start(uint16_t port, const struct mroce_fault *f,
                     struct srv_info *info)
{
    int p[2];
    if (pipe(p) < 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(p[0]);
        srv_main(p[1], port, f);
    }
    close(p[1]);
    g_child = pid;
    struct pollfd pf = {.fd = p[0], .events = POLLIN};
    int ok = poll(&pf, 1, 10000) == 1 &&
             read(p[0], info, sizeof(*info)) == (ssize_t)sizeof(*info) &&
             info->ok;
    close(p[0]);
    if (!ok) {
        kill_child();
        return -1;
    }
    return 0;
}

/* Waits up to 5 s for the server to exit; returns its exit status (or -1,
 * after killing it). */
static int srv_wait(void)
{
    uint64_t t0 = now_ms();
    int st;
    while (now_ms() - t0 < 5000) {
        pid_t r = waitpid(g_child, &st, WNOHANG);
        if (r == g_child) {
            g_child = -1;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        usleep(10000);
    }
    kill_child();
    return -1;
}

/* =============================================================== client === */

struct cli {
    mroce_device *dev;
    mroce_pd *pd;
    uint8_t *mem; /* BIG + 8 MiB: sources, READ destinations, replies */
    size_t len;
    mroce_mr *mr;
    uint32_t lkey;
    struct srv_info si;
};

#define CLI_LEN (BIG + 8u * MIB)
#define CLI_SMALL (BIG)            /* 4 MiB: small sources/destinations */
#define CLI_CMD (BIG + 6u * MIB)   /* command payloads */
#define CLI_REPLY (BIG + 7u * MIB) /* reply receive buffers, 64 B each */

struct conn {
    mroce_cq *cq;
    mroce_qp *qp;
    int nreply; /* reply receives posted so far */
};

static int cli_open(struct cli *c, uint16_t port, const struct mroce_fault *f,
                    int progress)
{
    memset(c, 0, sizeof(*c));
    struct mroce_device_attr da;
    mroce_device_attr_default(&da);
    da.local_addr = "127.0.0.1";
    da.progress = (uint8_t)progress;
    if (f) {
        da.tx_fault = *f;
        da.rx_fault = *f;
        da.fault_seed = 0xc11e;
    }
    int rc = -1;
    for (int tries = 0; tries < 8 && rc < 0; tries++) {
        da.port = (uint16_t)(port + tries * 89);
        rc = mroce_device_open(&da, &c->dev);
    }
    if (!CHECK(rc == 0))
        return -1;
    c->len = CLI_LEN;
    c->mem = calloc(1, c->len);
    if (!CHECK(c->mem != NULL))
        return -1;
    rc = mroce_pd_alloc(c->dev, &c->pd);
    CHECK_EQ_INT(rc, 0);
    rc = mroce_reg_mr(c->pd, c->mem, c->len, MROCE_ACCESS_LOCAL_WRITE, &c->mr);
    if (!CHECK(rc == 0))
        return -1;
    c->lkey = mroce_mr_lkey(c->mr);
    return 0;
}

static void cli_close(struct cli *c)
{
    if (c->dev)
        mroce_device_close(c->dev);
    free(c->mem);
    memset(c, 0, sizeof(*c));
}

static void post_reply_recv(struct cli *c, struct conn *k)
{
    int slot = k->nreply++ % 64;
    struct mroce_sge sge = {.addr = (uintptr_t)(c->mem + CLI_REPLY + slot * 64),
                            .length = 64,
                            .lkey = c->lkey};
    struct mroce_recv_wr wr = {.wr_id = 0x7e000000u + (unsigned)slot,
                               .sg_list = &sge,
                               .num_sge = 1};
    struct mroce_recv_wr *bad;
    CHECK_EQ_INT(mroce_post_recv(k->qp, &wr, &bad), 0);
}

static int conn_open(struct cli *c, struct conn *k, int connect)
{
    memset(k, 0, sizeof(*k));
    if (!CHECK(mroce_create_cq(c->dev, 1024, &k->cq) == 0))
        return -1;
    struct mroce_qp_init_attr ia;
    mroce_qp_init_attr_default(&ia);
    ia.send_cq = ia.recv_cq = k->cq;
    if (!CHECK(mroce_create_qp(c->pd, &ia, &k->qp) == 0))
        return -1;
    for (int i = 0; i < 4; i++)
        post_reply_recv(c, k);
    if (!connect)
        return 0;
    int rc = mroce_connect(k->qp, "127.0.0.1", c->si.port, 0, 5000);
    if (!CHECK_MSG(rc == 0, "connect: %s", mroce_strerror(rc)))
        return -1;
    return 0;
}

static void conn_close(struct conn *k)
{
    if (k->qp)
        CHECK_EQ_INT(mroce_destroy_qp(k->qp), 0);
    if (k->cq)
        CHECK_EQ_INT(mroce_destroy_cq(k->cq), 0);
    memset(k, 0, sizeof(*k));
}

/* Next completion within timeout_ms; 1, or 0 on timeout. */
static int next_wc(struct conn *k, struct mroce_wc *wc, int timeout_ms)
{
    uint64_t t0 = now_ms();
    for (;;) {
        int n = mroce_poll_cq(k->cq, 1, wc);
        if (n == 1)
            return 1;
        if (n < 0 || now_ms() - t0 > (uint64_t)timeout_ms)
            return 0;
    }
}

/* Posts one WR (signaled) and waits for its completion; returns the
 * status, or -1 on a post error or timeout.  Replies that arrive meanwhile
 * are not expected here. */
static int do_wr(struct cli *c, struct conn *k, enum mroce_wr_opcode op,
                 uint64_t laddr, uint32_t len, uint64_t raddr, uint32_t rkey,
                 uint32_t imm, uint64_t cmp_add, uint64_t swap)
{
    struct mroce_sge sge = {.addr = laddr, .length = len, .lkey = c->lkey};
    struct mroce_send_wr wr = {.wr_id = 0x1000 + (uint64_t)op,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = op,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .imm_data = imm,
                               .remote_addr = raddr,
                               .rkey = rkey,
                               .compare_add = cmp_add,
                               .swap = swap};
    struct mroce_send_wr *bad;
    int rc = mroce_post_send(k->qp, &wr, &bad);
    if (!CHECK_MSG(rc == 0, "post op %d len %u: %s", op, len,
                   mroce_strerror(rc)))
        return -1;
    struct mroce_wc wc;
    /* Generous: a loaded CI machine can slow a 64 MiB WRITE a lot. */
    if (!CHECK_MSG(next_wc(k, &wc, 60000), "op %d len %u: no completion", op,
                   len)) {
        mroce_qp_dump_counters(k->qp, stderr); /* slow or stuck? */
        return -1;
    }
    CHECK_EQ(wc.wr_id, wr.wr_id);
    return (int)wc.status;
}

/* Sends a command and waits for both its completion and the reply;
 * returns the reply's immediate (or 0xffffffff). */
static uint32_t command(struct cli *c, struct conn *k, int cmd, uint64_t a,
                        uint64_t b, uint64_t s, struct reply *out)
{
    struct cmd m = {a, b, s};
    memcpy(c->mem + CLI_CMD, &m, sizeof(m));
    struct mroce_sge sge = {.addr = (uintptr_t)(c->mem + CLI_CMD),
                            .length = sizeof(m),
                            .lkey = c->lkey};
    struct mroce_send_wr wr = {.wr_id = 0xc0,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = MROCE_WR_SEND_WITH_IMM,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .imm_data = CMD_MAGIC | (uint32_t)cmd};
    struct mroce_send_wr *bad;
    if (!CHECK(mroce_post_send(k->qp, &wr, &bad) == 0))
        return 0xffffffffu;
    int got_send = 0, got_reply = 0;
    uint32_t r = 0xffffffffu;
    while (!got_send || !got_reply) {
        struct mroce_wc wc;
        if (!CHECK_MSG(next_wc(k, &wc, 20000), "command %d: no answer", cmd))
            return 0xffffffffu;
        if (!CHECK_MSG(wc.status == MROCE_WC_SUCCESS, "command %d: %s", cmd,
                       mroce_wc_status_str(wc.status)))
            return 0xffffffffu;
        if (wc.opcode == MROCE_WC_RECV_WITH_IMM) {
            got_reply = 1;
            r = wc.imm_data;
            if (out) {
                unsigned slot = (unsigned)(wc.wr_id - 0x7e000000u);
                memcpy(out, c->mem + CLI_REPLY + slot * 64, sizeof(*out));
                CHECK_EQ(wc.byte_len, sizeof(*out));
            }
            post_reply_recv(c, k);
        } else {
            CHECK_EQ(wc.wr_id, 0xc0);
            got_send = 1;
        }
    }
    return r;
}

static uint16_t g_port_base;

/* ------------------------------------------------------------ scenarios --- */

/* Every operation at the interesting sizes, immediates, 64 MiB, order. */
static void scenario_ops(void)
{
    struct cli C;
    struct conn K;
    if (srv_start(g_port_base, NULL, &C.si) < 0) {
        CHECK_MSG(0, "server did not start");
        return;
    }
    struct srv_info si = C.si;
    if (cli_open(&C, (uint16_t)(g_port_base + 1), NULL, MROCE_PROGRESS_APP) < 0)
        goto out;
    C.si = si;
    if (conn_open(&C, &K, 1) < 0)
        goto out;
    struct mre_qp_attr qa;
    CHECK_EQ_INT(mroce_query_qp(K.qp, &qa), 0);
    CHECK_EQ(qa.mtu, MTU);
    CHECK_EQ_INT(mroce_qp_get_state(K.qp), MROCE_QPS_RTS);

    const uint32_t sizes[] = {1, MTU - 1, MTU, MTU + 1, MIB};
    uint8_t *src = C.mem + CLI_SMALL, *dst = C.mem + CLI_SMALL + 2 * MIB;
    uint64_t s_src = (uintptr_t)src, s_dst = (uintptr_t)dst;

    /* SEND: the server checks pattern(len) on arrival. */
    for (unsigned i = 0; i < 5; i++) {
        pat_fill(src, sizes[i], sizes[i], 0);
        CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_SEND, s_src, sizes[i], 0, 0, 0, 0,
                           0),
                     MROCE_WC_SUCCESS);
    }
    struct reply rp;
    CHECK_EQ(command(&C, &K, CMD_LASTIMM, 0, 0, 0, &rp), 0);
    CHECK_EQ(rp.byte_len, MIB);
    CHECK_EQ(rp.opcode, MROCE_WC_RECV);
    CHECK_EQ(rp.flags & MROCE_WC_WITH_IMM, 0);

    /* SEND with immediate, also zero-length. */
    pat_fill(src, 1000, 1000, 0);
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_SEND_WITH_IMM, s_src, 1000, 0, 0,
                       0x01234567, 0, 0),
                 MROCE_WC_SUCCESS);
    CHECK_EQ(command(&C, &K, CMD_LASTIMM, 0, 0, 0, &rp), 0);
    CHECK_EQ(rp.imm, 0x01234567);
    CHECK_EQ(rp.byte_len, 1000);
    CHECK_EQ(rp.opcode, MROCE_WC_RECV_WITH_IMM);
    CHECK(rp.flags & MROCE_WC_WITH_IMM);
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_SEND_WITH_IMM, s_src, 0, 0, 0,
                       0x00beef00, 0, 0),
                 MROCE_WC_SUCCESS);
    CHECK_EQ(command(&C, &K, CMD_LASTIMM, 0, 0, 0, &rp), 0);
    CHECK_EQ(rp.imm, 0x00beef00);
    CHECK_EQ(rp.byte_len, 0);

    /* WRITE each size into its own cell; the server checks the range and
     * that nothing beside it changed; then READ it back. */
    for (unsigned i = 0; i < 5; i++) {
        uint64_t off = ZONE_W + 4096 + (uint64_t)i * CELL;
        uint64_t seed = 0x77000 + i;
        pat_fill(src, sizes[i], seed, 0);
        CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_WRITE, s_src, sizes[i],
                           si.all + off, si.rk_all, 0, 0, 0),
                     MROCE_WC_SUCCESS);
        CHECK_EQ(command(&C, &K, CMD_CHECK, off, sizes[i], seed, NULL), 0);
        memset(dst, 0, sizes[i]);
        CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_READ, s_dst, sizes[i], si.all + off,
                           si.rk_all, 0, 0, 0),
                     MROCE_WC_SUCCESS);
        CHECK_EQ(pat_bad(dst, sizes[i], seed, 0), 0);
    }

    /* WRITE with immediate: placed as a WRITE, consumes a receive. */
    {
        uint64_t off = ZONE_W + 4096 + 5ull * CELL;
        pat_fill(src, MTU + 1, 0x88, 0);
        CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_WRITE_WITH_IMM, s_src, MTU + 1,
                           si.all + off, si.rk_all, 0x80000042u, 0, 0),
                     MROCE_WC_SUCCESS);
        CHECK_EQ(command(&C, &K, CMD_LASTIMM, 0, 0, 0, &rp), 0);
        CHECK_EQ(rp.imm, 0x80000042u);
        CHECK_EQ(rp.byte_len, MTU + 1);
        CHECK_EQ(rp.opcode, MROCE_WC_RECV_WITH_IMM);
        CHECK_EQ(command(&C, &K, CMD_CHECK, off, MTU + 1, 0x88, NULL), 0);
    }

    /* READ each size from the server's pattern zone, at odd offsets. */
    for (unsigned i = 0; i < 5; i++) {
        uint64_t off = 13 + (uint64_t)i * 4099;
        memset(dst, 0, sizes[i]);
        CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_READ, s_dst, sizes[i],
                           si.all + ZONE_R + off, si.rk_all, 0, 0, 0),
                     MROCE_WC_SUCCESS);
        CHECK_MSG(pat_bad(dst, sizes[i], READ_SEED, off) == 0, "READ %u",
                  sizes[i]);
    }

    /* Atomics on the counter (starts at 1000). */
    uint64_t v;
    uint64_t aaddr = si.all + ATOMIC_OFF;
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_FETCH_ADD, s_dst, 8, aaddr, si.rk_all,
                       0, 5, 0),
                 MROCE_WC_SUCCESS);
    memcpy(&v, dst, 8);
    CHECK_EQ(v, 1000);
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_FETCH_ADD, s_dst, 8, aaddr, si.rk_all,
                       0, 7, 0),
                 MROCE_WC_SUCCESS);
    memcpy(&v, dst, 8);
    CHECK_EQ(v, 1005);
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_CMP_SWAP, s_dst, 8, aaddr, si.rk_all, 0,
                       1, 99),
                 MROCE_WC_SUCCESS); /* compare fails */
    memcpy(&v, dst, 8);
    CHECK_EQ(v, 1012);
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_CMP_SWAP, s_dst, 8, aaddr, si.rk_all, 0,
                       1012, 77),
                 MROCE_WC_SUCCESS); /* compare matches */
    memcpy(&v, dst, 8);
    CHECK_EQ(v, 1012);
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_READ, s_dst, 8, aaddr, si.rk_all, 0, 0,
                       0),
                 MROCE_WC_SUCCESS);
    memcpy(&v, dst, 8);
    CHECK_EQ(v, 77);

    /* 64 MiB in one WRITE, checked by the server. */
    {
        pat_fill(C.mem, BIG, 0xb16, 0);
        uint64_t t0 = now_ms();
        CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_WRITE, (uintptr_t)C.mem, BIG,
                           si.all + 64, si.rk_all, 0, 0, 0),
                     MROCE_WC_SUCCESS);
        uint64_t dt = now_ms() - t0;
        CHECK_EQ(command(&C, &K, CMD_CHECK, 64, BIG - 128, 0xb16, NULL), 0);
        printf("  64 MiB WRITE: %" PRIu64 " ms (%.2f Gb/s)\n", dt,
               dt ? (double)BIG * 8 / 1e6 / (double)dt : 0.0);
    }

    /* Completion order: 40 mixed WRs in one list, all signaled, complete in
     * posting order; then every other one unsignaled: only the signaled
     * complete, still in order. */
    for (int round = 0; round < 2; round++) {
        struct mroce_send_wr wrs[40];
        struct mroce_sge sges[40];
        enum mroce_wc_opcode expect[40];
        for (int i = 0; i < 40; i++) {
            uint32_t len = 1u << (i % 17);
            sges[i] = (struct mroce_sge){.addr = s_src +
                                                 (uint64_t)(i % 4) * 65536,
                                         .length = len,
                                         .lkey = C.lkey};
            wrs[i] = (struct mroce_send_wr){
                .wr_id = (uint64_t)(round * 100 + i),
                .sg_list = &sges[i],
                .num_sge = 1,
                .next = i < 39 ? &wrs[i + 1] : NULL,
                .send_flags = (round == 0 || i % 2 == 0 || i == 39)
                                  ? MROCE_SEND_SIGNALED
                                  : 0};
            switch (i % 4) {
            case 0:
                wrs[i].opcode = MROCE_WR_WRITE;
                wrs[i].remote_addr = si.all + ZONE_W + 4096 + 6ull * CELL +
                                     (uint64_t)i * 65536 % MIB;
                wrs[i].rkey = si.rk_all;
                expect[i] = MROCE_WC_WRITE;
                break;
            case 1:
                sges[i].addr = s_dst + (uint64_t)i * 65536 % MIB;
                wrs[i].opcode = MROCE_WR_READ;
                wrs[i].remote_addr = si.all + ZONE_R;
                wrs[i].rkey = si.rk_all;
                expect[i] = MROCE_WC_READ;
                break;
            case 2:
                sges[i].addr = s_dst + 2 * MIB - 64 + (uint64_t)(i % 8) * 8;
                sges[i].length = 8;
                wrs[i].opcode = MROCE_WR_FETCH_ADD;
                wrs[i].remote_addr = aaddr;
                wrs[i].rkey = si.rk_all;
                wrs[i].compare_add = 1;
                expect[i] = MROCE_WC_FETCH_ADD;
                break;
            default:
                /* A few SENDs only: the server keeps 4 receives posted. */
                if (i % 16 == 3) {
                    pat_fill(src + 3 * 65536, 1024, 1024, 0);
                    sges[i].addr = s_src + 3 * 65536;
                    sges[i].length = 1024;
                    wrs[i].opcode = MROCE_WR_SEND;
                    expect[i] = MROCE_WC_SEND;
                } else {
                    wrs[i].opcode = MROCE_WR_WRITE;
                    wrs[i].remote_addr = si.all + ZONE_W + 4096 + 7ull * CELL;
                    wrs[i].rkey = si.rk_all;
                    expect[i] = MROCE_WC_WRITE;
                }
            }
        }
        struct mroce_send_wr *bad = NULL;
        CHECK_EQ_INT(mroce_post_send(K.qp, &wrs[0], &bad), 0);
        int want = 0, seen = 0;
        while (want < 40) {
            if (round == 1 && want % 2 == 1 && want != 39) {
                want++;
                continue;
            }
            struct mroce_wc wc;
            if (!CHECK_MSG(next_wc(&K, &wc, 20000), "order: WR %d missing",
                           want))
                break;
            CHECK_EQ_INT(wc.status, MROCE_WC_SUCCESS);
            CHECK_MSG(wc.wr_id == (uint64_t)(round * 100 + want),
                      "round %d: got wr_id %" PRIu64 ", want %d", round,
                      wc.wr_id, round * 100 + want);
            CHECK_EQ_INT(wc.opcode, expect[want]);
            want++;
            seen++;
        }
        CHECK_EQ_INT(seen, round == 0 ? 40 : 21);
    }

    CHECK_EQ(command(&C, &K, CMD_STATUS, 0, 0, 0, NULL), 0);
    CHECK_EQ(command(&C, &K, CMD_GUARDS, 0, 0, 0, NULL), 0);
    struct mroce_qp_counters qc;
    CHECK_EQ_INT(mroce_qp_get_counters(K.qp, &qc), 0);
    printf("  ops: %" PRIu64 " packets sent, %" PRIu64 " retransmitted\n",
           qc.tx_pkts, qc.retx_pkts);
    CHECK_EQ(command(&C, &K, CMD_EXIT, 0, 0, 0, NULL), 0);
    CHECK_EQ_INT(srv_wait(), 0);
out:
    cli_close(&C);
    kill_child();
}

/* Remote access errors: REM_ACCESS_ERR, QP in ERROR, rest flushed, nothing
 * written (the server checks its guards and protected regions). */
static void scenario_access(void)
{
    struct cli C;
    struct srv_info si;
    if (srv_start((uint16_t)(g_port_base + 2), NULL, &si) < 0) {
        CHECK_MSG(0, "server did not start");
        return;
    }
    if (cli_open(&C, (uint16_t)(g_port_base + 3), NULL, MROCE_PROGRESS_APP) < 0)
        goto out;
    C.si = si;
    uint8_t *src = C.mem + CLI_SMALL;
    pat_fill(src, 8192, 0xbad, 0);
    uint32_t bad_rkey = si.rk_all ^ si.rk_small ^ si.rk_ro ^ si.rk_wo ^
                        0x5a5a0000u;
    if (bad_rkey == si.rk_all || bad_rkey == si.rk_small ||
        bad_rkey == si.rk_ro || bad_rkey == si.rk_wo)
        bad_rkey ^= 0x80000001u;
    struct {
        const char *name;
        enum mroce_wr_opcode op;
        uint64_t raddr;
        uint32_t rkey, len;
    } cases[] = {
        {"WRITE bad rkey", MROCE_WR_WRITE, si.small, bad_rkey, 100},
        {"WRITE out of bounds", MROCE_WR_WRITE, si.small + SMALL_LEN - 10,
         si.rk_small, 20},
        {"WRITE whole message too long", MROCE_WR_WRITE, si.small, si.rk_small,
         SMALL_LEN + MTU},
        {"WRITE to read-only", MROCE_WR_WRITE, si.ro, si.rk_ro, 64},
        {"READ bad rkey", MROCE_WR_READ, si.small, bad_rkey, 64},
        {"READ out of bounds", MROCE_WR_READ, si.small + 8, si.rk_small,
         SMALL_LEN},
        {"READ from write-only", MROCE_WR_READ, si.wo, si.rk_wo, 64},
        {"FETCH_ADD on read-only", MROCE_WR_FETCH_ADD, si.ro, si.rk_ro, 8},
        {"CMP_SWAP out of bounds", MROCE_WR_CMP_SWAP, si.small + SMALL_LEN,
         si.rk_small, 8},
    };
    for (unsigned ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        struct conn K;
        if (conn_open(&C, &K, 1) < 0)
            break;
        struct mroce_sge sge[2] = {
            {.addr = (uintptr_t)src, .length = cases[ci].len, .lkey = C.lkey},
            {.addr = (uintptr_t)src, .length = 64, .lkey = C.lkey}};
        struct mroce_send_wr wr[2] = {
            {.wr_id = 1,
             .sg_list = &sge[0],
             .num_sge = 1,
             .next = &wr[1],
             .opcode = cases[ci].op,
             .send_flags = MROCE_SEND_SIGNALED,
             .remote_addr = cases[ci].raddr,
             .rkey = cases[ci].rkey,
             .compare_add = 1,
             .swap = 2},
            /* A valid WRITE behind it, into a scratch cell of its own: it
             * must complete WR_FLUSH_ERR.  Whether the responder placed it
             * anyway is counted below, not checked: packets are placed out
             * of order, so it may land before the NAK of the first WR
             * reaches us (InfiniBand RC would discard it as out of
             * sequence). */
            {.wr_id = 2,
             .sg_list = &sge[1],
             .num_sge = 1,
             .opcode = MROCE_WR_WRITE,
             .send_flags = MROCE_SEND_SIGNALED,
             .remote_addr = si.all + SCRATCH + ci * 4096ull,
             .rkey = si.rk_all}};
        pat_fill(src + 8192 + ci * 64, 64, 0xf1u + ci, 0);
        sge[1].addr = (uintptr_t)(src + 8192 + ci * 64);
        struct mroce_send_wr *bad;
        CHECK_EQ_INT(mroce_post_send(K.qp, &wr[0], &bad), 0);
        int got[3] = {-1, -1, -1}, nrecv_flushed = 0;
        for (int n = 0; n < 2 + 4; n++) {
            struct mroce_wc wc;
            if (!next_wc(&K, &wc, 10000))
                break;
            if (wc.opcode == MROCE_WC_RECV ||
                wc.opcode == MROCE_WC_RECV_WITH_IMM) {
                nrecv_flushed += wc.status == MROCE_WC_WR_FLUSH_ERR;
                continue;
            }
            if (wc.wr_id <= 2)
                got[wc.wr_id] = (int)wc.status;
        }
        CHECK_MSG(got[1] == MROCE_WC_REM_ACCESS_ERR, "%s: status %s",
                  cases[ci].name,
                  got[1] < 0
                      ? "none"
                      : mroce_wc_status_str((enum mroce_wc_status)got[1]));
        CHECK_MSG(got[2] == MROCE_WC_WR_FLUSH_ERR, "%s: second WR %d",
                  cases[ci].name, got[2]);
        CHECK_MSG(nrecv_flushed == 4, "%s: %d receives flushed", cases[ci].name,
                  nrecv_flushed);
        CHECK_MSG(mroce_qp_get_state(K.qp) == MROCE_QPS_ERROR, "%s: state %s",
                  cases[ci].name, mroce_qp_state_str(mroce_qp_get_state(K.qp)));
        /* Posting to a QP in ERROR fails or flushes; never executes. */
        conn_close(&K);
    }
    struct conn K;
    if (conn_open(&C, &K, 1) == 0) {
        unsigned placed = 0, n = sizeof(cases) / sizeof(cases[0]);
        for (unsigned ci = 0; ci < n; ci++)
            placed += command(&C, &K, CMD_CHECK, SCRATCH + ci * 4096ull, 64,
                              0xf1u + ci, NULL) == 0;
        printf("  access: %u of %u valid WRITEs posted behind a failing WR were"
               " placed though flushed\n",
               placed, n);
        CHECK_EQ(command(&C, &K, CMD_GUARDS, 0, 0, 0, NULL), 0);
        CHECK_EQ(command(&C, &K, CMD_STATUS, 0, 0, 0, NULL), 0);
        CHECK_EQ(command(&C, &K, CMD_EXIT, 0, 0, 0, NULL), 0);
        CHECK_EQ_INT(srv_wait(), 0);
    }
out:
    cli_close(&C);
    kill_child();
}

/* Connecting where nobody listens fails clearly and quickly. */
static void scenario_no_listener(void)
{
    struct cli C;
    if (cli_open(&C, (uint16_t)(g_port_base + 5), NULL, MROCE_PROGRESS_APP) <
        0) {
        cli_close(&C);
        return;
    }
    C.si.port = (uint16_t)(g_port_base + 4); /* nobody there */
    struct conn K;
    if (conn_open(&C, &K, 0) == 0) {
        uint64_t t0 = now_ms();
        int rc = mroce_connect(K.qp, "127.0.0.1", C.si.port, 0, 3000);
        uint64_t dt = now_ms() - t0;
        CHECK_MSG(rc == MROCE_EUNREACH || rc == MROCE_ETIMEDOUT,
                  "connect to a dead port: %d (%s)", rc, mroce_strerror(rc));
        CHECK_MSG(dt < 4000, "connect took %" PRIu64 " ms", dt);
        CHECK(mroce_qp_get_state(K.qp) != MROCE_QPS_RTS);
        const char *msg = mroce_strerror(rc);
        CHECK(msg && *msg);
        printf("  connect to a closed port: \"%s\" after %" PRIu64 " ms\n", msg,
               dt);
        conn_close(&K);
    }
    cli_close(&C);
}

/* The server dies mid-transfer: RETRY_EXC_ERR, ERROR, the rest flushed. */
static void scenario_peer_killed(void)
{
    struct cli C;
    struct srv_info si;
    if (srv_start((uint16_t)(g_port_base + 6), NULL, &si) < 0) {
        CHECK_MSG(0, "server did not start");
        return;
    }
    if (cli_open(&C, (uint16_t)(g_port_base + 7), NULL, MROCE_PROGRESS_APP) < 0)
        goto out;
    C.si = si;
    struct conn K;
    if (conn_open(&C, &K, 1) < 0)
        goto out;
    enum { NWR = 4 };
    struct mroce_sge sge[NWR];
    struct mroce_send_wr wr[NWR];
    for (int i = 0; i < NWR; i++) {
        sge[i] = (struct mroce_sge){.addr = (uintptr_t)C.mem +
                                            (uint64_t)i * 16 * MIB,
                                    .length = 16 * MIB,
                                    .lkey = C.lkey};
        wr[i] = (struct mroce_send_wr){.wr_id = (uint64_t)i,
                                       .sg_list = &sge[i],
                                       .num_sge = 1,
                                       .next = i + 1 < NWR ? &wr[i + 1] : NULL,
                                       .opcode = MROCE_WR_WRITE,
                                       .send_flags = MROCE_SEND_SIGNALED,
                                       .remote_addr = si.all + 64,
                                       .rkey = si.rk_all};
    }
    struct mroce_send_wr *bad;
    CHECK_EQ_INT(mroce_post_send(K.qp, &wr[0], &bad), 0);
    /* Kill once about 2 MiB have gone out. */
    uint64_t t0 = now_ms();
    struct mroce_wc wcs[NWR + 8];
    int nwc = 0;
    for (;;) {
        struct mroce_qp_counters qc;
        mroce_qp_get_counters(K.qp, &qc);
        if (qc.tx_bytes > 2 * MIB || now_ms() - t0 > 5000)
            break;
        int n = mroce_poll_cq(K.cq, 1, &wcs[nwc]);
        if (n == 1)
            nwc++;
    }
    uint64_t tk = now_ms();
    kill_child();
    int retry_exc = 0, flushed = 0, ok = 0, recv_flushed = 0, other = 0;
    int order_ok = 1;
    uint64_t next_id = 0;
    for (int i = 0; i < nwc; i++) { /* completions before the kill */
        ok += wcs[i].status == MROCE_WC_SUCCESS;
        next_id = wcs[i].wr_id + 1;
    }
    CHECK_MSG(nwc < NWR, "the transfer finished before the kill");
    while (now_ms() - tk < 15000 && next_id < NWR) {
        struct mroce_wc wc;
        if (!next_wc(&K, &wc, 100))
            continue;
        if (wc.opcode == MROCE_WC_RECV || wc.opcode == MROCE_WC_RECV_WITH_IMM) {
            recv_flushed += wc.status == MROCE_WC_WR_FLUSH_ERR;
            continue;
        }
        if (wc.wr_id != next_id)
            order_ok = 0;
        next_id = wc.wr_id + 1;
        if (wc.status == MROCE_WC_SUCCESS)
            ok++;
        else if (wc.status == MROCE_WC_RETRY_EXC_ERR)
            retry_exc++;
        else if (wc.status == MROCE_WC_WR_FLUSH_ERR)
            flushed++;
        else
            other++;
    }
    /* The receives flush too (drain what is left). */
    struct mroce_wc wc;
    while (recv_flushed < 4 && next_wc(&K, &wc, 200))
        recv_flushed += wc.status == MROCE_WC_WR_FLUSH_ERR;
    uint64_t dt = now_ms() - tk;
    CHECK_EQ_INT(retry_exc, 1);
    CHECK_EQ_INT(ok + retry_exc + flushed, NWR);
    CHECK_EQ_INT(other, 0);
    CHECK(order_ok);
    CHECK_EQ_INT(recv_flushed, 4);
    CHECK_EQ_INT(mroce_qp_get_state(K.qp), MROCE_QPS_ERROR);
    CHECK_MSG(dt < 15000, "error took %" PRIu64 " ms", dt);
    printf("  peer killed: RETRY_EXC_ERR after %" PRIu64
           " ms (%d ok, %d flushed)\n",
           dt, ok, flushed);
    conn_close(&K);
out:
    cli_close(&C);
    kill_child();
}

/* 5% loss, 5% reordering, 2% duplication on both devices, both ways. */
static void scenario_lossy(void)
{
    struct mroce_fault f = {.drop = 0.05,
                            .dup = 0.02,
                            .reorder = 0.05,
                            .reorder_us = 100};
    struct cli C;
    struct srv_info si;
    if (srv_start((uint16_t)(g_port_base + 8), &f, &si) < 0) {
        CHECK_MSG(0, "server did not start");
        return;
    }
    if (cli_open(&C, (uint16_t)(g_port_base + 9), &f, MROCE_PROGRESS_THREAD) <
        0)
        goto out;
    C.si = si;
    struct conn K;
    if (conn_open(&C, &K, 1) < 0)
        goto out;
    uint8_t *src = C.mem, *dst = C.mem + 8 * MIB;
    const uint32_t len = 4 * MIB;
    pat_fill(src, len, 0x1055, 0);
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_WRITE, (uintptr_t)src, len, si.all + 64,
                       si.rk_all, 0, 0, 0),
                 MROCE_WC_SUCCESS);
    CHECK_EQ(command(&C, &K, CMD_CHECK, 64, len, 0x1055, NULL), 0);
    memset(dst, 0, len);
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_READ, (uintptr_t)dst, len, si.all + 64,
                       si.rk_all, 0, 0, 0),
                 MROCE_WC_SUCCESS);
    CHECK_EQ(memcmp(src, dst, len), 0);
    const uint32_t sizes[] = {1, MTU + 1, MIB};
    for (unsigned i = 0; i < 3; i++) {
        pat_fill(src, sizes[i], sizes[i], 0);
        CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_SEND, (uintptr_t)src, sizes[i], 0,
                           0, 0, 0, 0),
                     MROCE_WC_SUCCESS);
    }
    /* Atomics execute exactly once despite duplicates and retransmission. */
    for (int i = 0; i < 50; i++)
        CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_FETCH_ADD, (uintptr_t)dst, 8,
                           si.all + ATOMIC_OFF, si.rk_all, 0, 1, 0),
                     MROCE_WC_SUCCESS);
    uint64_t v;
    CHECK_EQ_INT(do_wr(&C, &K, MROCE_WR_READ, (uintptr_t)dst, 8,
                       si.all + ATOMIC_OFF, si.rk_all, 0, 0, 0),
                 MROCE_WC_SUCCESS);
    memcpy(&v, dst, 8);
    CHECK_EQ(v, 1050);
    CHECK_EQ(command(&C, &K, CMD_STATUS, 0, 0, 0, NULL), 0);
    CHECK_EQ(command(&C, &K, CMD_GUARDS, 0, 0, 0, NULL), 0);
    struct mroce_qp_counters qc;
    CHECK_EQ_INT(mroce_qp_get_counters(K.qp, &qc), 0);
    CHECK(qc.retx_pkts > 0);
    CHECK(qc.rx_dups > 0);
    printf("  lossy: %" PRIu64 " packets sent, %" PRIu64
           " retransmitted, %" PRIu64 " duplicates received\n",
           qc.tx_pkts, qc.retx_pkts, qc.rx_dups);
    CHECK_EQ(command(&C, &K, CMD_EXIT, 0, 0, 0, NULL), 0);
    CHECK_EQ_INT(srv_wait(), 0);
out:
    cli_close(&C);
    kill_child();
}

static const struct test_case cases[] = {
    {"ops", scenario_ops},
    {"access", scenario_access},
    {"no_listener", scenario_no_listener},
    {"peer_killed", scenario_peer_killed},
    {"lossy", scenario_lossy},
};

/* Each scenario between two lines: its name, then its verdict and time. */
static void run_scenario(const struct test_case *c)
{
    long f0 = testutil_failed;
    uint64_t t0 = now_ms();
    printf("scenario %s\n", c->name);
    c->fn();
    printf("scenario %s: %s (%" PRIu64 " ms)\n", c->name,
           testutil_failed == f0 ? "ok" : "FAILED", now_ms() - t0);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    /* Far above the normal ~10 s: shared CI machines can be very slow; the
     * CTest timeout (300 s) is the outer bound. */
    alarm(240);
    atexit(kill_child);
    /* Ports from the pid so parallel runs (ctest -j) rarely collide; each
     * side also retries other ports if its first choice is taken.  All stay
     * below 49152, where libmroce picks its source (entropy) ports. */
    g_port_base = (uint16_t)(20000 + (getpid() % 1400) * 20);
    return test_cases_main("test_e2e_loopback", cases,
                           sizeof(cases) / sizeof(cases[0]), argc, argv,
                           run_scenario);
}
