/*
 * test_engine_errors.c - the engine's error paths, end to end on the network
 * model: everything that should fail, fails the way the spec says, and
 * leaves memory and queues in a known state.
 *
 * Where test_engine_ops and test_engine_prop show that good work succeeds,
 * this test feeds the engine bad work and bad peers: remote access errors
 * (bad rkey, out of bounds, missing rights, misaligned atomics), receivers
 * not ready, receives too small, a peer that dies mid-transfer, a connect
 * nobody answers, a handshake through a lossy fabric, API misuse, packets
 * with a forged token, and an orderly disconnect.  For each it checks the
 * completion statuses and their order (SEM-24, SEM-26, CONN-20), the QP
 * states (CONN-*), the counters that explain the drop, and that not one byte
 * of the target memory changed: targets are registered regions with
 * unregistered guard bytes on both sides, compared with a shadow copy.
 */
#include <stdlib.h>
#include <string.h>

#include <mroce/wire.h>

#include "case_table.h"
#include "testbed.h"
#include "testutil.h"

#define GUARD 4096u
#define MS 1000000ull
#define US 1000ull

/* ---- guarded buffers ---- */

/* A region of len bytes registered with `access`, between GUARD bytes of
 * unregistered memory on each side; everything starts random and a shadow
 * copy remembers it. */
struct gbuf {
    uint8_t *base, *shadow, *p;
    size_t len, total;
    mre_mr *mr;
};

static uint64_t g_rand = 12345;

static void fill_rand(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)testutil_rand64(&g_rand);
}

static int gbuf_new(struct gbuf *g, mre_ep *ep, size_t len, unsigned access)
{
    memset(g, 0, sizeof(*g));
    g->len = len;
    g->total = len + 2 * GUARD;
    g->base = malloc(g->total);
    g->shadow = malloc(g->total);
    if (!g->base || !g->shadow)
        return -1;
    fill_rand(g->base, g->total);
    memcpy(g->shadow, g->base, g->total);
    g->p = g->base + GUARD;
    return mre_mr_reg(ep, g->p, len, access, &g->mr);
}

/* 1 if no byte of the region or its guards changed since the last sync. */
static int gbuf_intact(const struct gbuf *g)
{
    return memcmp(g->base, g->shadow, g->total) == 0;
}

/* 1 if the guards are intact (the region itself may have changed). */
static int gbuf_guards_intact(const struct gbuf *g)
{
    return memcmp(g->base, g->shadow, GUARD) == 0 &&
           memcmp(g->p + g->len, g->shadow + GUARD + g->len, GUARD) == 0;
}

static void gbuf_free(struct gbuf *g)
{
    if (g->mr)
        CHECK_EQ_INT(mre_mr_dereg(g->mr), 0);
    free(g->base);
    free(g->shadow);
    memset(g, 0, sizeof(*g));
}

static uint64_t addr_of(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* ---- a connected pair on a fresh fabric ---- */

struct env {
    struct mroce_testbed *tb;
    mre_qp *qa, *qb; /* qa on host 0 (requester), qb on host 1 */
    struct mre_qp_attr at;
};

static void env_cfg(struct mroce_netdrive_config *cfg, uint64_t seed)
{
    mroce_netdrive_config_default(cfg);
    cfg->net.seed = seed;
    cfg->net.spines = 4;
}

static int env_new_cfg(struct env *e, const struct mroce_netdrive_config *cfg,
                       const struct mre_qp_attr *at)
{
    memset(e, 0, sizeof(*e));
    if (at)
        e->at = *at;
    else
        mre_qp_attr_default(&e->at);
    if (!CHECK(mroce_tb_new(&e->tb, cfg, NULL) == 0))
        return -1;
    if (!CHECK(mroce_tb_connect(e->tb, 0, 1, &e->at, &e->qa, &e->qb,
                                100 * MS) == 0))
        return -1;
    e->at.send_cq = e->tb->h[0].scq; /* as host 0's QP has them */
    e->at.recv_cq = e->tb->h[0].rcq;
    return 0;
}

static int env_new(struct env *e, uint64_t seed, const struct mre_qp_attr *at)
{
    struct mroce_netdrive_config cfg;
    env_cfg(&cfg, seed);
    return env_new_cfg(e, &cfg, at);
}

static void env_del(struct env *e)
{
    if (e->tb)
        mroce_tb_del(e->tb); /* frees QPs, MRs and CQs with the endpoints */
    memset(e, 0, sizeof(*e));
}

static mroce_tstamp env_now(const struct env *e)
{
    return mroce_netdrive_now(e->tb->d);
}

/* Run until cq holds n completions or `limit` ns pass; then take them. */
static int collect(struct env *e, mre_cq *cq, int n, struct mroce_wc *wc,
                   mroce_tstamp limit)
{
    mroce_tb_run_until_cq(e->tb, cq, n, limit);
    return mre_cq_poll(cq, n, wc);
}

/* Let the fabric and timers settle (bounded). */
static void settle(struct env *e, mroce_tstamp t)
{
    mroce_netdrive_run_until(e->tb->d, env_now(e) + t);
}

static struct mroce_send_wr swr(uint64_t id, enum mroce_wr_opcode op,
                                struct mroce_sge *sg, uint64_t raddr,
                                uint32_t rkey)
{
    struct mroce_send_wr w;
    memset(&w, 0, sizeof(w));
    w.wr_id = id;
    w.opcode = op;
    w.sg_list = sg;
    w.num_sge = sg ? 1 : 0;
    w.send_flags = MROCE_SEND_SIGNALED;
    w.remote_addr = raddr;
    w.rkey = rkey;
    return w;
}

/* ---- 1. remote access errors ---- */

enum acc_case {
    ACC_BAD_RKEY,
    ACC_BOUNDS_1PKT,  /* one packet straddling the region's end */
    ACC_BOUNDS_MULTI, /* a multi-packet WRITE running past the end */
    ACC_NO_RWRITE,
    ACC_NO_RREAD,
    ACC_NO_RATOMIC,
};

static const char *const acc_name[] = {
    "WRITE bad rkey",
    "WRITE straddling the end",
    "WRITE running past the end",
    "WRITE without REMOTE_WRITE",
    "READ without REMOTE_READ",
    "FETCH_ADD without REMOTE_ATOMIC",
};

/*
 * WR 0: a good one-packet WRITE into B's `ok` region (completes SUCCESS:
 * the NAK that follows carries a Cum PSN covering it, REL-28).  WR 1: the
 * bad request against B's `tgt` region.  WR 2..4: a WRITE, an unsignaled
 * SEND and a READ behind it, which must be flushed in posting order.
 */
static void test_remote_access(enum acc_case c)
{
    struct env e;
    if (env_new(&e, 100 + (uint64_t)c, NULL) < 0) {
        env_del(&e);
        return;
    }
    mre_ep *ea = e.tb->h[0].ep, *eb = e.tb->h[1].ep;
    const unsigned all = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                         MROCE_ACCESS_REMOTE_READ | MROCE_ACCESS_REMOTE_ATOMIC;
    unsigned tgt_access = all;
    if (c == ACC_NO_RWRITE)
        tgt_access = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_READ |
                     MROCE_ACCESS_REMOTE_ATOMIC;
    else if (c == ACC_NO_RREAD)
        tgt_access = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                     MROCE_ACCESS_REMOTE_ATOMIC;
    else if (c == ACC_NO_RATOMIC)
        tgt_access = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                     MROCE_ACCESS_REMOTE_READ;
    struct gbuf src, sink, tgt, ok;
    CHECK_EQ_INT(gbuf_new(&src, ea, 64 << 10, MROCE_ACCESS_LOCAL_WRITE), 0);
    CHECK_EQ_INT(gbuf_new(&sink, ea, 64 << 10, MROCE_ACCESS_LOCAL_WRITE), 0);
    CHECK_EQ_INT(gbuf_new(&tgt, eb, 64 << 10, tgt_access), 0);
    CHECK_EQ_INT(gbuf_new(&ok, eb, 64 << 10, all), 0);
    uint32_t lk = mre_mr_lkey(src.mr), rk = mre_mr_rkey(tgt.mr);

    struct mroce_sge s0 = {addr_of(src.p), 1000, lk};
    struct mroce_sge s1 = {addr_of(src.p + 4096), 4096, lk};
    struct mroce_sge s2 = {addr_of(src.p + 8192), 3000, lk};
    struct mroce_sge s3 = {addr_of(src.p + 12288), 500, lk};
    struct mroce_sge s4 = {addr_of(sink.p), 2000, mre_mr_lkey(sink.mr)};
    struct mroce_send_wr w[5];
    w[0] = swr(0, MROCE_WR_WRITE, &s0, addr_of(ok.p), mre_mr_rkey(ok.mr));
    switch (c) {
    case ACC_BAD_RKEY:
        /* Same slot, other generation: names no registered region. */
        w[1] = swr(1, MROCE_WR_WRITE, &s1, addr_of(tgt.p), rk ^ 0x80);
        break;
    case ACC_BOUNDS_1PKT:
        s1.length = 200;
        w[1] = swr(1, MROCE_WR_WRITE, &s1, addr_of(tgt.p + tgt.len - 100), rk);
        break;
    case ACC_BOUNDS_MULTI:
        s1.length = 16384; /* 4 packets, starting 2 KiB before the end */
        w[1] = swr(1, MROCE_WR_WRITE, &s1, addr_of(tgt.p + tgt.len - 2048), rk);
        break;
    case ACC_NO_RWRITE:
        w[1] = swr(1, MROCE_WR_WRITE, &s1, addr_of(tgt.p), rk);
        break;
    case ACC_NO_RREAD:
        s4.length = 4096;
        w[1] = swr(1, MROCE_WR_READ, &s4, addr_of(tgt.p), rk);
        break;
    case ACC_NO_RATOMIC:
        s4.length = 8;
        w[1] = swr(1, MROCE_WR_FETCH_ADD, &s4, addr_of(tgt.p + 64), rk);
        w[1].compare_add = 5;
        break;
    }
    struct mroce_sge s4b = {addr_of(sink.p + 8192), 2000, mre_mr_lkey(sink.mr)};
    w[2] = swr(2, MROCE_WR_WRITE, &s2, addr_of(ok.p + 8192),
               mre_mr_rkey(ok.mr));
    w[3] = swr(3, MROCE_WR_SEND, &s3, 0, 0);
    w[3].send_flags = 0; /* unsignaled: its flush is still reported */
    w[4] = swr(4, MROCE_WR_READ, &s4b, addr_of(ok.p), mre_mr_rkey(ok.mr));
    for (int i = 0; i < 4; i++)
        w[i].next = &w[i + 1];
    struct mroce_recv_wr rr = {.wr_id = 77};
    struct mroce_sge rs = {addr_of(ok.p + 32768), 1000, mre_mr_lkey(ok.mr)};
    rr.sg_list = &rs;
    rr.num_sge = 1;
    CHECK_EQ_INT(mre_qp_post_recv(e.qb, &rr, NULL), 0);
    /* A receive on the requester, flushed when it enters ERROR. */
    struct mroce_sge ras = {addr_of(sink.p + 16384), 100, mre_mr_lkey(sink.mr)};
    struct mroce_recv_wr ra = {.wr_id = 55, .sg_list = &ras, .num_sge = 1};
    CHECK_EQ_INT(mre_qp_post_recv(e.qa, &ra, NULL), 0);
    struct mroce_send_wr *bad = NULL;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &w[0], &bad, env_now(&e)), 0);
    CHECK(bad == NULL);

    struct mroce_wc wc[8];
    mroce_tstamp t0 = env_now(&e);
    int n = collect(&e, e.tb->h[0].scq, 5, wc, 50 * MS);
    mroce_tstamp took = env_now(&e) - t0;
    CHECK_MSG(n == 5, "%s: %d completions", acc_name[c], n);
    static const uint64_t ids[] = {0, 1, 2, 3, 4};
    for (int i = 0; i < n; i++) {
        CHECK_EQ(wc[i].wr_id, ids[i]);
        CHECK_EQ(wc[i].qp_num, mre_qp_num(e.qa));
        enum mroce_wc_status want = i == 0   ? MROCE_WC_SUCCESS
                                    : i == 1 ? MROCE_WC_REM_ACCESS_ERR
                                             : MROCE_WC_WR_FLUSH_ERR;
        CHECK_MSG(wc[i].status == want, "%s: wr %d status %s, want %s",
                  acc_name[c], i, mroce_wc_status_str(wc[i].status),
                  mroce_wc_status_str(want));
    }
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_ERROR);
    /* The requester's posted receive is flushed too (CONN-20). */
    CHECK_EQ_INT(collect(&e, e.tb->h[0].rcq, 1, wc, MS), 1);
    CHECK_EQ(wc[0].wr_id, 55u);
    CHECK_EQ(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    /* The responder refused the request and stays in RTS (SEM-16). */
    settle(&e, MS);
    CHECK_EQ(mre_qp_state(e.qb), MROCE_QPS_RTS);
    struct mroce_qp_counters ca, cb;
    mre_qp_get_counters(e.qa, &ca);
    mre_qp_get_counters(e.qb, &cb);
    CHECK(ca.rx_naks >= 1);
    CHECK(cb.tx_naks >= 1);

    /* Memory: the good WRITE landed.  The WRs behind the bad one were
     * already on the wire when the NAK came back, and the responder, which
     * places packets in any order, may have executed them: WR_FLUSH_ERR
     * means "outcome unknown", as in verbs, so only the guards around `ok`
     * are checked. */
    CHECK(memcmp(ok.p, src.p, 1000) == 0);
    CHECK(gbuf_guards_intact(&ok));
    if (c == ACC_BOUNDS_MULTI)
        /* SEM-17 checks each packet: packets inside the region may be
         * placed; the guard past the end must not be touched. */
        CHECK_MSG(gbuf_guards_intact(&tgt), "%s: guard overwritten",
                  acc_name[c]);
    else
        CHECK_MSG(gbuf_intact(&tgt), "%s: target changed", acc_name[c]);
    CHECK_MSG(gbuf_intact(&sink), "%s: local sink changed", acc_name[c]);
    CHECK(gbuf_intact(&src));

    /* Work posted after the error is never sent: either refused with
     * ESTATE or completed at once with WR_FLUSH_ERR (CONN-21). */
    struct mroce_send_wr late = swr(9, MROCE_WR_WRITE, &s0, addr_of(ok.p),
                                    mre_mr_rkey(ok.mr));
    uint64_t tx_before = ca.tx_pkts;
    int rc = mre_qp_post_send(e.qa, &late, NULL, env_now(&e));
    if (rc == 0) {
        CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 1, wc, MS), 1);
        CHECK_EQ(wc[0].wr_id, 9u);
        CHECK_EQ(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    } else {
        CHECK_EQ_INT(rc, MROCE_ESTATE);
    }
    settle(&e, MS);
    mre_qp_get_counters(e.qa, &ca);
    CHECK_EQ(ca.tx_pkts, tx_before);
    printf("remote access: %-32s -> %s, %d WRs flushed, %.1f us\n", acc_name[c],
           n > 1 ? mroce_wc_status_str(wc[1].status) : "?", n - 2,
           (double)took / 1e3);
    /* B's receive may still be posted (the SEND behind the bad WR may or
     * may not have been executed); flush it so `ok` can be deregistered. */
    CHECK_EQ_INT(mre_qp_set_error(e.qb), 0);
    CHECK_EQ_INT(mre_mr_dereg(ok.mr), 0);
    ok.mr = NULL;
    /* The responder may still owe READ data for WRs that reached it before
     * the requester failed (it holds a reference on the region until the
     * response is acknowledged or its own retries run out): destroy the QPs
     * before deregistering, as verbs users do. */
    mre_qp_del(e.qb);
    e.qb = NULL;
    gbuf_free(&src);
    gbuf_free(&sink);
    gbuf_free(&tgt);
    gbuf_free(&ok);
    env_del(&e);
}

/* A misaligned atomic never leaves the host: post_send says EINVAL, the WR
 * is not queued, the QP stays usable. */
static void test_misaligned_atomic(void)
{
    struct env e;
    if (env_new(&e, 200, NULL) < 0) {
        env_del(&e);
        return;
    }
    struct gbuf loc, tgt;
    CHECK_EQ_INT(gbuf_new(&loc, e.tb->h[0].ep, 4096, MROCE_ACCESS_LOCAL_WRITE),
                 0);
    CHECK_EQ_INT(gbuf_new(&tgt, e.tb->h[1].ep, 4096,
                          MROCE_ACCESS_LOCAL_WRITE |
                              MROCE_ACCESS_REMOTE_ATOMIC),
                 0);
    struct mroce_sge s = {addr_of(loc.p), 8, mre_mr_lkey(loc.mr)};
    struct mroce_send_wr ok = swr(1, MROCE_WR_FETCH_ADD, &s, addr_of(tgt.p + 8),
                                  mre_mr_rkey(tgt.mr));
    ok.compare_add = 3;
    struct mroce_send_wr mis = ok;
    mis.wr_id = 2;
    mis.remote_addr = addr_of(tgt.p + 12);
    mis.opcode = MROCE_WR_CMP_SWAP;
    ok.next = &mis;
    struct mroce_send_wr *bad = NULL;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &ok, &bad, env_now(&e)), MROCE_EINVAL);
    CHECK(bad == &mis); /* WRs before the bad one are posted */
    uint64_t before;
    memcpy(&before, tgt.p + 8, 8);
    struct mroce_wc wc[2];
    CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 1, wc, 10 * MS), 1);
    CHECK_EQ(wc[0].wr_id, 1u);
    CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
    settle(&e, MS);
    CHECK_EQ(mroce_tb_cq_count(e.tb->h[0].scq), 0); /* wr 2 never queued */
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_RTS);
    uint64_t v, orig;
    memcpy(&v, tgt.p + 8, 8);
    memcpy(&orig, loc.p, 8);
    CHECK_EQ(orig, before); /* the aligned FETCH_ADD ran, once */
    CHECK_EQ(v, before + 3);
    /* Only the aligned word's 8 bytes may differ from the shadow. */
    memcpy(tgt.shadow + GUARD + 8, tgt.p + 8, 8);
    CHECK(gbuf_intact(&tgt));
    printf("misaligned CMP_SWAP rejected locally with %s\n",
           mre_strerror(MROCE_EINVAL));
    gbuf_free(&loc);
    gbuf_free(&tgt);
    env_del(&e);
}

/* ---- 2. receiver not ready ---- */

static void test_rnr(int post_late)
{
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.rnr_retry = 3;
    struct env e;
    if (env_new(&e, 300 + (uint64_t)post_late, &at) < 0) {
        env_del(&e);
        return;
    }
    struct gbuf src, dst;
    CHECK_EQ_INT(gbuf_new(&src, e.tb->h[0].ep, 16384, MROCE_ACCESS_LOCAL_WRITE),
                 0);
    CHECK_EQ_INT(gbuf_new(&dst, e.tb->h[1].ep, 16384,
                          MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE),
                 0);
    /* One single-packet SEND, so RNR NAKs and retries count one to one,
     * and a WRITE behind it (consumes no receive, is never RNR-NAKed). */
    struct mroce_sge s = {addr_of(src.p), 3000, mre_mr_lkey(src.mr)};
    struct mroce_send_wr w0 = swr(1, MROCE_WR_SEND, &s, 0, 0);
    struct mroce_sge s2 = {addr_of(src.p + 4096), 100, mre_mr_lkey(src.mr)};
    struct mroce_send_wr w1 = swr(2, MROCE_WR_WRITE, &s2,
                                  addr_of(dst.p + 12288), mre_mr_rkey(dst.mr));
    w0.next = &w1;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &w0, NULL, env_now(&e)), 0);
    mroce_tstamp t0 = env_now(&e);
    struct mroce_wc wc[4];
    if (post_late) {
        /* 40 us: a couple of RNR rounds, well inside rnr_retry. */
        settle(&e, 40 * US);
        CHECK_EQ(mroce_tb_cq_count(e.tb->h[0].scq), 0);
        struct mroce_sge r0 = {addr_of(dst.p), 4096, mre_mr_lkey(dst.mr)};
        struct mroce_recv_wr rw0 = {.wr_id = 10, .sg_list = &r0, .num_sge = 1};
        CHECK_EQ_INT(mre_qp_post_recv(e.qb, &rw0, NULL), 0);
        CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 2, wc, 10 * MS), 2);
        CHECK_EQ(wc[0].wr_id, 1u);
        CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
        CHECK_EQ(wc[1].wr_id, 2u);
        CHECK_EQ(wc[1].status, MROCE_WC_SUCCESS);
        CHECK_EQ_INT(collect(&e, e.tb->h[1].rcq, 1, wc, MS), 1);
        CHECK_EQ(wc[0].wr_id, 10u);
        CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
        CHECK_EQ(wc[0].byte_len, 3000u);
        CHECK(memcmp(dst.p, src.p, 3000) == 0);
        CHECK(memcmp(dst.p + 12288, src.p + 4096, 100) == 0);
        CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_RTS);
    } else {
        CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 2, wc, 100 * MS), 2);
        CHECK_EQ(wc[0].wr_id, 1u);
        CHECK_MSG(wc[0].status == MROCE_WC_RNR_RETRY_EXC_ERR, "status %s",
                  mroce_wc_status_str(wc[0].status));
        CHECK_EQ(wc[1].wr_id, 2u);
        CHECK_EQ(wc[1].status, MROCE_WC_WR_FLUSH_ERR);
        CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_ERROR);
        /* The WRITE behind it may have been placed; the receive area not. */
        CHECK(memcmp(dst.base, dst.shadow, GUARD + 12288) == 0);
        CHECK(gbuf_guards_intact(&dst));
    }
    struct mroce_qp_counters ca, cb;
    mre_qp_get_counters(e.qa, &ca);
    mre_qp_get_counters(e.qb, &cb);
    if (!post_late) {
        /* REL-30: the (rnr_retry + 1)-th RNR NAK is fatal; rnr_retry = 3
         * means 3 retries, not "forever" and not 7. */
        CHECK_EQ(ca.rnr_naks_rx, (uint64_t)at.rnr_retry + 1);
        CHECK_EQ(ca.retx_rnr, (uint64_t)at.rnr_retry);
    } else {
        CHECK(ca.rnr_naks_rx >= 1);
        CHECK(ca.retx_rnr >= 1);
    }
    CHECK(cb.rnr_naks_tx >= ca.rnr_naks_rx);
    printf("RNR %s: %llu RNR NAKs, %llu RNR retransmissions, %.1f us\n",
           post_late ? "with a late receive" : "with no receive ever",
           (unsigned long long)ca.rnr_naks_rx, (unsigned long long)ca.retx_rnr,
           (double)(env_now(&e) - t0) / 1e3);
    gbuf_free(&src);
    gbuf_free(&dst);
    env_del(&e);
}

/* ---- 3. receive too small ---- */

static void test_recv_too_small(uint32_t send_len)
{
    struct env e;
    if (env_new(&e, 400 + send_len, NULL) < 0) {
        env_del(&e);
        return;
    }
    struct gbuf src, dst;
    CHECK_EQ_INT(gbuf_new(&src, e.tb->h[0].ep, 16384, MROCE_ACCESS_LOCAL_WRITE),
                 0);
    CHECK_EQ_INT(gbuf_new(&dst, e.tb->h[1].ep, 16384, MROCE_ACCESS_LOCAL_WRITE),
                 0);
    struct mroce_sge r = {addr_of(dst.p), 100, mre_mr_lkey(dst.mr)};
    struct mroce_recv_wr rw = {.wr_id = 20, .sg_list = &r, .num_sge = 1};
    CHECK_EQ_INT(mre_qp_post_recv(e.qb, &rw, NULL), 0);
    struct mroce_sge s = {addr_of(src.p), send_len, mre_mr_lkey(src.mr)};
    struct mroce_send_wr w0 = swr(1, MROCE_WR_SEND, &s, 0, 0);
    struct mroce_send_wr w1 = swr(2, MROCE_WR_SEND, &s, 0, 0);
    w1.sg_list = NULL;
    w1.num_sge = 0; /* zero-length, queued behind: flushed */
    w0.next = &w1;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &w0, NULL, env_now(&e)), 0);
    struct mroce_wc wc[2];
    CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 2, wc, 10 * MS), 2);
    CHECK_EQ(wc[0].wr_id, 1u);
    CHECK_MSG(wc[0].status == MROCE_WC_REM_INV_REQ_ERR, "requester %s",
              mroce_wc_status_str(wc[0].status));
    CHECK_EQ(wc[1].status, MROCE_WC_WR_FLUSH_ERR);
    CHECK_EQ_INT(collect(&e, e.tb->h[1].rcq, 1, wc, MS), 1);
    CHECK_EQ(wc[0].wr_id, 20u);
    CHECK_MSG(wc[0].status == MROCE_WC_LOC_LEN_ERR, "responder %s",
              mroce_wc_status_str(wc[0].status));
    CHECK_EQ(wc[0].byte_len, 0u); /* SEM-21: nothing placed */
    CHECK(gbuf_intact(&dst));
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_ERROR);
    settle(&e, MS);
    CHECK_EQ(mre_qp_state(e.qb), MROCE_QPS_RTS); /* SEM-21 */
    CHECK_EQ(mroce_tb_cq_count(e.tb->h[1].rcq), 0);
    printf("receive too small (%u into 100 B): responder LOC_LEN_ERR, "
           "requester REM_INV_REQ_ERR\n",
           send_len);
    gbuf_free(&src);
    gbuf_free(&dst);
    env_del(&e);
}

/* ---- 4. the peer dies mid-transfer ---- */

static void test_peer_dead(int how)
{
    struct env e;
    /* retry_cnt alone decides here (peer_timeout 0, verbs' rule); the
     * peer-silence rule is test_engine_liveness's. */
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.peer_timeout = 0;
    if (env_new(&e, 500 + (uint64_t)how, &at) < 0) {
        env_del(&e);
        return;
    }
    struct gbuf src, dst;
    const size_t big = 8u << 20;
    CHECK_EQ_INT(gbuf_new(&src, e.tb->h[0].ep, big, MROCE_ACCESS_LOCAL_WRITE),
                 0);
    CHECK_EQ_INT(gbuf_new(&dst, e.tb->h[1].ep, big,
                          MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE),
                 0);
    struct mroce_sge s[4];
    struct mroce_send_wr w[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (struct mroce_sge){addr_of(src.p + (size_t)i * (2u << 20)),
                                  2u << 20, mre_mr_lkey(src.mr)};
        w[i] = swr((uint64_t)i, MROCE_WR_WRITE, &s[i],
                   addr_of(dst.p + (size_t)i * (2u << 20)),
                   mre_mr_rkey(dst.mr));
        if (i)
            w[i - 1].next = &w[i];
    }
    struct mroce_sge rs = {addr_of(src.p), 64, mre_mr_lkey(src.mr)};
    struct mroce_recv_wr rw1 = {.wr_id = 31, .sg_list = &rs, .num_sge = 1};
    struct mroce_recv_wr rw0 = {.wr_id = 30,
                                .next = &rw1,
                                .sg_list = &rs,
                                .num_sge = 1};
    CHECK_EQ_INT(mre_qp_post_recv(e.qa, &rw0, NULL), 0);
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &w[0], NULL, env_now(&e)), 0);
    /* Let about a quarter of the data through, then kill the peer. */
    settle(&e, 200 * US);
    mroce_net *net = mroce_netdrive_net(e.tb->d);
    if (how == 0) {
        CHECK_EQ_INT(mroce_netdrive_attach(e.tb->d, 1, NULL), 0);
    } else {
        for (uint32_t sp = 0; sp < 4; sp++)
            CHECK_EQ_INT(mroce_net_set_spine_blackhole(net, sp, 1), 0);
    }
    mroce_tstamp t0 = env_now(&e);
    struct mroce_qp_counters ca;
    mre_qp_get_counters(e.qa, &ca);
    /* Worst case: retry_cnt + 1 timeouts, each RTO_eff = min(max_rto,
     * RTO * 2^n) with RTO about min_rto here (srtt is a few us), plus a
     * probe timeout before the first (LOSS-8..14).  Twice that, as bound. */
    mroce_tstamp bound = 0, r = e.at.min_rto;
    for (int i = 0; i <= e.at.retry_cnt; i++, r *= 2)
        bound += r < e.at.max_rto ? r : e.at.max_rto;
    bound *= 2;
    struct mroce_wc wc[8];
    int n = collect(&e, e.tb->h[0].scq, 4, wc, bound);
    mroce_tstamp took = env_now(&e) - t0;
    CHECK_EQ_INT(n, 4);
    int first = 0;
    while (first < n && wc[first].status == MROCE_WC_SUCCESS)
        first++; /* WRITEs that had finished before the failure */
    for (int i = 0; i < n; i++) {
        CHECK_EQ(wc[i].wr_id, (uint64_t)i);
        if (i == first)
            CHECK_MSG(wc[i].status == MROCE_WC_RETRY_EXC_ERR, "wr %d: %s", i,
                      mroce_wc_status_str(wc[i].status));
        else if (i > first)
            CHECK_EQ(wc[i].status, MROCE_WC_WR_FLUSH_ERR);
    }
    CHECK(first < 4);
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_ERROR);
    CHECK_EQ_INT(collect(&e, e.tb->h[0].rcq, 2, wc, MS), 2);
    CHECK_EQ(wc[0].wr_id, 30u);
    CHECK_EQ(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    CHECK_EQ(wc[1].wr_id, 31u);
    CHECK_EQ(wc[1].status, MROCE_WC_WR_FLUSH_ERR);
    uint64_t timeouts0 = ca.timeouts;
    mre_qp_get_counters(e.qa, &ca);
    CHECK_EQ(ca.timeouts - timeouts0, (uint64_t)e.at.retry_cnt + 1);
    CHECK(took <= bound);
    /* ERROR sends nothing (CONN-21): the fabric goes quiet. */
    uint64_t tx = ca.tx_pkts;
    CHECK(mroce_netdrive_run_idle(e.tb->d, env_now(&e) + 10 * MS));
    mre_qp_get_counters(e.qa, &ca);
    CHECK_EQ(ca.tx_pkts, tx);
    CHECK(gbuf_guards_intact(&dst));
    printf("peer dead (%s): RETRY_EXC_ERR on wr %d after %llu timeouts, "
           "%.2f ms after the failure (bound %.2f ms)\n",
           how == 0 ? "endpoint detached" : "every spine blackholed", first,
           (unsigned long long)(ca.timeouts - timeouts0), (double)took / 1e6,
           (double)bound / 1e6);
    if (how == 0) /* reattach so the testbed frees the endpoint normally */
        CHECK_EQ_INT(mroce_netdrive_attach(e.tb->d, 1, e.tb->h[1].ep), 0);
    gbuf_free(&src);
    gbuf_free(&dst);
    env_del(&e);
}

/* ---- 5. handshakes: nobody listening, and a lossy fabric ---- */

static void test_no_listener(void)
{
    struct mroce_netdrive_config cfg;
    env_cfg(&cfg, 600);
    struct mroce_testbed *tb;
    if (!CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0))
        return;
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.handshake_timeout = 20 * MS;
    at.send_cq = tb->h[0].scq;
    at.recv_cq = tb->h[0].rcq;
    mre_qp *qa;
    CHECK_EQ_INT(mre_qp_new(tb->h[0].ep, &at, &qa), 0);
    /* Host 1 has an endpoint and even a QP, but nobody listens. */
    struct mre_qp_attr bt = at;
    bt.send_cq = tb->h[1].scq;
    bt.recv_cq = tb->h[1].rcq;
    mre_qp *qb;
    CHECK_EQ_INT(mre_qp_new(tb->h[1].ep, &bt, &qb), 0);
    uint8_t buf[256];
    memset(buf, 7, sizeof(buf));
    struct mroce_sge s = {addr_of(buf), 16, 0};
    struct mroce_send_wr w1 = swr(1, MROCE_WR_SEND, &s, 0, 0);
    w1.send_flags |= MROCE_SEND_INLINE;
    struct mroce_send_wr w0 = w1;
    w0.wr_id = 0;
    w0.next = &w1;
    struct mroce_recv_wr rw = {.wr_id = 40};
    struct mre_addr to;
    mroce_netdrive_addr(1, &to);
    mroce_tstamp t0 = mroce_netdrive_now(tb->d);
    CHECK_EQ_INT(mre_qp_connect(qa, &to, 0, t0), 0);
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_CONNECTING);
    /* CONN-22: work may be posted while connecting. */
    CHECK_EQ_INT(mre_qp_post_send(qa, &w0, NULL, t0), 0);
    CHECK_EQ_INT(mre_qp_post_recv(qa, &rw, NULL), 0);
    CHECK_EQ_INT(mre_qp_connect(qa, &to, 0, t0), MROCE_ESTATE);
    mroce_tb_run_until_cq(tb, tb->h[0].scq, 2, 200 * MS);
    mroce_tstamp took = mroce_netdrive_now(tb->d) - t0;
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_ERROR);
    struct mroce_wc wc[2];
    CHECK_EQ_INT(mre_cq_poll(tb->h[0].scq, 2, wc), 2);
    CHECK_EQ(wc[0].wr_id, 0u);
    CHECK_EQ(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    CHECK_EQ(wc[1].wr_id, 1u);
    CHECK_EQ(wc[1].status, MROCE_WC_WR_FLUSH_ERR);
    CHECK_EQ_INT(mre_cq_poll(tb->h[0].rcq, 2, wc), 1);
    CHECK_EQ(wc[0].wr_id, 40u);
    CHECK_EQ(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    /* CONN-6: ERROR handshake_timeout after connect, not much later. */
    CHECK_MSG(took >= at.handshake_timeout &&
                  took <= at.handshake_timeout + 2 * MS,
              "handshake gave up after %.2f ms (timeout %.2f ms)",
              (double)took / 1e6, (double)at.handshake_timeout / 1e6);
    struct mroce_ep_counters ec;
    mre_ep_get_counters(tb->h[1].ep, &ec);
    CHECK(ec.drop_no_listener >= 2); /* the request was retransmitted */
    CHECK_EQ(mre_qp_state(qb), MROCE_QPS_RESET);
    printf("connect without listener: ERROR after %.2f ms, %llu CONNECT_REQs "
           "dropped, posted work flushed\n",
           (double)took / 1e6, (unsigned long long)ec.drop_no_listener);
    mroce_tb_del(tb);
}

static void test_lossy_handshake(uint64_t seed)
{
    struct mroce_netdrive_config cfg;
    env_cfg(&cfg, seed);
    cfg.net.loss = 0.3;
    struct env e;
    memset(&e, 0, sizeof(e));
    mre_qp_attr_default(&e.at);
    if (!CHECK(mroce_tb_new(&e.tb, &cfg, NULL) == 0))
        return;
    int rc = mroce_tb_connect(e.tb, 0, 1, &e.at, &e.qa, &e.qb, 500 * MS);
    CHECK_MSG(rc == 0, "seed %llu: handshake under 30%% loss failed",
              (unsigned long long)seed);
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_RTS);
    CHECK_EQ(mre_qp_state(e.qb), MROCE_QPS_RTS);
    CHECK_EQ(mre_qp_remote_qpn(e.qa), mre_qp_num(e.qb));
    CHECK_EQ(mre_qp_remote_qpn(e.qb), mre_qp_num(e.qa));
    mroce_tstamp hs = env_now(&e);
    /* The connection works both ways under the same loss. */
    struct gbuf a, b;
    const unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    CHECK_EQ_INT(gbuf_new(&a, e.tb->h[0].ep, 65536, acc), 0);
    CHECK_EQ_INT(gbuf_new(&b, e.tb->h[1].ep, 65536, acc), 0);
    struct mroce_sge sa = {addr_of(a.p), 20000, mre_mr_lkey(a.mr)};
    struct mroce_sge sb = {addr_of(b.p + 32768), 3000, mre_mr_lkey(b.mr)};
    struct mroce_sge ra = {addr_of(a.p + 40000), 3000, mre_mr_lkey(a.mr)};
    struct mroce_recv_wr rwa = {.wr_id = 1, .sg_list = &ra, .num_sge = 1};
    CHECK_EQ_INT(mre_qp_post_recv(e.qa, &rwa, NULL), 0);
    struct mroce_send_wr wa = swr(1, MROCE_WR_WRITE, &sa, addr_of(b.p),
                                  mre_mr_rkey(b.mr));
    struct mroce_send_wr wb = swr(2, MROCE_WR_SEND, &sb, 0, 0);
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &wa, NULL, env_now(&e)), 0);
    CHECK_EQ_INT(mre_qp_post_send(e.qb, &wb, NULL, env_now(&e)), 0);
    struct mroce_wc wc[2];
    CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 1, wc, 500 * MS), 1);
    CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
    CHECK_EQ_INT(collect(&e, e.tb->h[1].scq, 1, wc, 500 * MS), 1);
    CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
    CHECK_EQ_INT(collect(&e, e.tb->h[0].rcq, 1, wc, 500 * MS), 1);
    CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
    CHECK(memcmp(a.p, b.p, 20000) == 0);
    CHECK(memcmp(a.p + 40000, b.p + 32768, 3000) == 0);
    printf("handshake under 30%% loss (seed %llu): RTS after %.1f us, then "
           "WRITE, SEND and receive completed\n",
           (unsigned long long)seed, (double)hs / 1e3);
    gbuf_free(&a);
    gbuf_free(&b);
    env_del(&e);
}

/* Work posted while CONNECTING is sent once the handshake is done, cut to
 * the negotiated MTU (the peer's is smaller than ours here, CONN-12/22). */
static void test_post_while_connecting(void)
{
    struct mroce_netdrive_config cfg;
    env_cfg(&cfg, 650);
    struct mroce_testbed *tb;
    if (!CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0))
        return;
    struct mre_qp_attr at, bt;
    mre_qp_attr_default(&at);
    at.send_cq = tb->h[0].scq;
    at.recv_cq = tb->h[0].rcq;
    bt = at;
    bt.mtu = 1024;
    bt.send_cq = tb->h[1].scq;
    bt.recv_cq = tb->h[1].rcq;
    mre_qp *qa, *qb;
    CHECK_EQ_INT(mre_qp_new(tb->h[0].ep, &at, &qa), 0);
    CHECK_EQ_INT(mre_qp_new(tb->h[1].ep, &bt, &qb), 0);
    struct gbuf a, b;
    const unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    CHECK_EQ_INT(gbuf_new(&a, tb->h[0].ep, 65536, acc), 0);
    CHECK_EQ_INT(gbuf_new(&b, tb->h[1].ep, 65536, acc), 0);
    struct mroce_sge rs = {addr_of(b.p + 32768), 20000, mre_mr_lkey(b.mr)};
    struct mroce_recv_wr rw = {.wr_id = 5, .sg_list = &rs, .num_sge = 1};
    CHECK_EQ_INT(mre_qp_post_recv(qb, &rw, NULL), 0); /* in RESET */
    CHECK_EQ_INT(mre_qp_listen(qb, 0), 0);
    struct mre_addr to;
    mroce_netdrive_addr(1, &to);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    CHECK_EQ_INT(mre_qp_connect(qa, &to, 0, now), 0);
    struct mroce_sge s1 = {addr_of(a.p), 10000, mre_mr_lkey(a.mr)};
    struct mroce_sge s2 = {addr_of(a.p + 10000), 9000, mre_mr_lkey(a.mr)};
    struct mroce_send_wr w1 = swr(1, MROCE_WR_WRITE, &s1, addr_of(b.p),
                                  mre_mr_rkey(b.mr));
    struct mroce_send_wr w2 = swr(2, MROCE_WR_SEND, &s2, 0, 0);
    w1.next = &w2;
    CHECK_EQ_INT(mre_qp_post_send(qa, &w1, NULL, now), 0);
    mroce_tb_run_until_cq(tb, tb->h[0].scq, 2, 100 * MS);
    struct mroce_wc wc[2];
    int n = mre_cq_poll(tb->h[0].scq, 2, wc);
    CHECK_EQ_INT(n, 2);
    for (int i = 0; i < n; i++)
        CHECK_EQ(wc[i].status, MROCE_WC_SUCCESS);
    mroce_tb_run_until_cq(tb, tb->h[1].rcq, 1, 10 * MS);
    n = mre_cq_poll(tb->h[1].rcq, 1, wc);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
        CHECK_EQ(wc[0].byte_len, 9000u);
    }
    CHECK(memcmp(a.p, b.p, 10000) == 0);
    CHECK(memcmp(a.p + 10000, b.p + 32768, 9000) == 0);
    printf("work posted while connecting: sent after the handshake with the "
           "peer's smaller MTU\n");
    gbuf_free(&a);
    gbuf_free(&b);
    mroce_tb_del(tb);
}

/* ---- 6. API misuse ---- */

static void test_bad_api(void)
{
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.max_send_wr = 4;
    at.max_recv_wr = 2;
    struct env e;
    if (env_new(&e, 700, &at) < 0) {
        env_del(&e);
        return;
    }
    mre_ep *ea = e.tb->h[0].ep;
    mroce_tstamp now = env_now(&e);
    struct gbuf a, b, ro;
    CHECK_EQ_INT(gbuf_new(&a, ea, 65536, MROCE_ACCESS_LOCAL_WRITE), 0);
    CHECK_EQ_INT(gbuf_new(&b, e.tb->h[1].ep, 65536,
                          MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE),
                 0);
    CHECK_EQ_INT(gbuf_new(&ro, ea, 4096, 0), 0); /* no LOCAL_WRITE */
    uint32_t lk = mre_mr_lkey(a.mr);
    struct mroce_send_wr *bad;
    struct mroce_recv_wr *rbad;
    struct mroce_sge sg = {addr_of(a.p), 100, lk};
    struct mroce_send_wr w = swr(1, MROCE_WR_WRITE, &sg, addr_of(b.p),
                                 mre_mr_rkey(b.mr));

    /* NULL and nonsense arguments. */
    CHECK_EQ_INT(mre_qp_post_send(NULL, &w, &bad, now), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_post_send(e.qa, NULL, &bad, now), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_post_recv(NULL, NULL, &rbad), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_post_recv(e.qa, NULL, &rbad), MROCE_EINVAL);
    CHECK_EQ_INT(mre_cq_poll(NULL, 1, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mre_cq_poll(e.tb->h[0].scq, 1, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mre_cq_poll(e.tb->h[0].scq, -1, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mre_cq_new(NULL, 16, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mre_cq_del(NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mre_mr_dereg(NULL), MROCE_EINVAL);
    mre_mr *mr;
    CHECK_EQ_INT(mre_mr_reg(NULL, a.p, 10, 0, &mr), MROCE_EINVAL);
    CHECK_EQ_INT(mre_mr_reg(ea, NULL, 10, 0, &mr), MROCE_EINVAL);
    CHECK_EQ_INT(mre_mr_reg(ea, a.p, 10, 0, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mre_mr_reg(ea, a.p, 10, 0x100, &mr), MROCE_EINVAL);
    /* Remote write without local write (verbs rule). */
    CHECK_EQ_INT(mre_mr_reg(ea, a.p, 10, MROCE_ACCESS_REMOTE_WRITE, &mr),
                 MROCE_EINVAL);
    CHECK_EQ_INT(mre_mr_reg(ea, a.p, 10,
                            MROCE_ACCESS_REMOTE_ATOMIC |
                                MROCE_ACCESS_REMOTE_READ,
                            &mr),
                 MROCE_EINVAL);
    /* The arithmetic of SEM-28: no empty range, none past the end of the
     * address space (it would cover every address above its start). */
    CHECK_EQ_INT(mre_mr_reg(ea, a.p, 0, 0, &mr), MROCE_EINVAL);
    CHECK_EQ_INT(mre_mr_reg(ea, NULL, 0, 0, &mr), MROCE_EINVAL);
    CHECK_EQ_INT(mre_mr_reg(ea, a.p, SIZE_MAX, 0, &mr), MROCE_EFAULT);
    CHECK_EQ_INT(mre_mr_reg(ea, a.p, SIZE_MAX,
                            MROCE_ACCESS_LOCAL_WRITE |
                                MROCE_ACCESS_REMOTE_WRITE,
                            &mr),
                 MROCE_EFAULT);
    {
        size_t to_end = (size_t)(UINTPTR_MAX - (uintptr_t)a.p) + 1;
        CHECK_EQ_INT(mre_mr_reg(ea, a.p, to_end + 1, 0, &mr), MROCE_EFAULT);
        CHECK_EQ_INT(mre_mr_reg_check(a.p, to_end + 1, 0), MROCE_EFAULT);
        /* Ending exactly at the end is arithmetic the engine accepts (it
         * cannot see mappings); nothing here touches the range. */
        CHECK_EQ_INT(mre_mr_reg_check(a.p, to_end, 0), 0);
        void *top = (void *)(UINTPTR_MAX - 7);
        CHECK_EQ_INT(mre_mr_reg_check(top, 8, 0), 0);
        CHECK_EQ_INT(mre_mr_reg_check(top, 9, 0), MROCE_EFAULT);
        CHECK_EQ_INT(mre_mr_reg(ea, top, 9, 0, &mr), MROCE_EFAULT);
        CHECK_EQ_INT(mre_mr_reg_check(a.p, 10, MROCE_ACCESS_REMOTE_WRITE),
                     MROCE_EINVAL);
        CHECK_EQ_INT(mre_mr_reg_check(a.p, 10, 0x10), MROCE_EINVAL);
        CHECK_EQ_INT(mre_mr_reg_check(a.p, 10, MROCE_ACCESS_REMOTE_READ), 0);
        CHECK(strcmp(mre_strerror(MROCE_EFAULT), "unknown error") != 0);
    }
    mre_qp *q;
    CHECK_EQ_INT(mre_qp_new(ea, NULL, &q), MROCE_EINVAL);
    struct mre_qp_attr bat = e.at;
    bat.npaths = 0;
    CHECK_EQ_INT(mre_qp_new(ea, &bat, &q), MROCE_EINVAL);
    bat = e.at;
    bat.mtu = 100;
    CHECK_EQ_INT(mre_qp_new(ea, &bat, &q), MROCE_EINVAL);
    bat = e.at;
    bat.send_cq = NULL;
    CHECK_EQ_INT(mre_qp_new(ea, &bat, &q), MROCE_EINVAL);
    bat = e.at;
    bat.send_cq = e.tb->h[1].scq; /* a CQ of another endpoint */
    CHECK_EQ_INT(mre_qp_new(ea, &bat, &q), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_connect(e.qa, NULL, 0, now), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_connect(NULL, NULL, 0, now), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_listen(NULL, now), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_disconnect(NULL, now), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_set_error(NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_path_stats(NULL, NULL, 0), MROCE_EINVAL);
    CHECK_EQ_INT(mre_qp_path_stats(e.qa, NULL, 4), MROCE_EINVAL);
    struct mre_tx_info ti;
    uint8_t pkt[64];
    CHECK_EQ_INT(mre_ep_write_pkt(NULL, pkt, sizeof(pkt), &ti, now),
                 MROCE_EINVAL);
    CHECK_EQ_INT(mre_ep_write_pkt(ea, NULL, 0, &ti, now), MROCE_EINVAL);
    struct mroce_ep_counters ec0, ec1;
    mre_ep_get_counters(ea, &ec0);
    CHECK_EQ_INT(mre_ep_recv(ea, NULL, 10, NULL, now), 0); /* never fails */
    mre_ep_get_counters(ea, &ec1);
    CHECK_EQ(ec1.drop_truncated, ec0.drop_truncated + 1);
    /* Wrong state: connecting / listening an RTS QP, disconnect in RESET. */
    struct mre_addr to;
    mroce_netdrive_addr(1, &to);
    CHECK_EQ_INT(mre_qp_connect(e.qa, &to, 0, now), MROCE_ESTATE);
    CHECK_EQ_INT(mre_qp_listen(e.qa, now), MROCE_ESTATE);
    struct mre_qp_attr fresh = e.at;
    fresh.max_send_wr = fresh.max_recv_wr = 4;
    mre_qp *qr;
    CHECK_EQ_INT(mre_qp_new(ea, &fresh, &qr), 0);
    CHECK_EQ_INT(mre_qp_disconnect(qr, now), MROCE_ESTATE);

    /* Malformed work requests: bad_wr names the culprit; WRs before it in
     * the chain are posted, nothing after it. */
    struct mroce_send_wr x = w;
    x.opcode = (enum mroce_wr_opcode)42;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_EINVAL);
    CHECK(bad == &x);
    x = w;
    x.sg_list = NULL; /* num_sge 1 */
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_EINVAL);
    x = w;
    x.num_sge = MROCE_MAX_SGE + 1;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_EINVAL);
    x = w;
    x.send_flags = 0x100;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_EINVAL);
    /* Unregistered lkey (a deregistered region's key), and an SGE running
     * past its region: local protection errors, no packet (SEM-26). */
    mre_mr *tmp;
    CHECK_EQ_INT(mre_mr_reg(ea, a.p, 1000, MROCE_ACCESS_LOCAL_WRITE, &tmp), 0);
    uint32_t stale_key = mre_mr_lkey(tmp);
    CHECK_EQ_INT(mre_mr_dereg(tmp), 0);
    struct mroce_sge bsg = {addr_of(a.p), 100, stale_key};
    x = w;
    x.sg_list = &bsg;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_EACCESS);
    bsg.lkey = 0xdeadbe00u;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_EACCESS);
    bsg = (struct mroce_sge){addr_of(a.p + a.len - 50), 100, lk};
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_EACCESS);
    bsg = (struct mroce_sge){addr_of(a.p - 1), 10, lk};
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_EACCESS);
    /* READ into memory without LOCAL_WRITE. */
    bsg = (struct mroce_sge){addr_of(ro.p), 100, mre_mr_lkey(ro.mr)};
    x = swr(1, MROCE_WR_READ, &bsg, addr_of(b.p), mre_mr_rkey(b.mr));
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_EACCESS);
    /* Receive into memory without LOCAL_WRITE, and past a region. */
    struct mroce_recv_wr rx = {.wr_id = 1, .sg_list = &bsg, .num_sge = 1};
    CHECK_EQ_INT(mre_qp_post_recv(e.qa, &rx, &rbad), MROCE_EACCESS);
    CHECK(rbad == &rx);
    bsg = (struct mroce_sge){addr_of(a.p + a.len - 50), 100, lk};
    CHECK_EQ_INT(mre_qp_post_recv(e.qa, &rx, &rbad), MROCE_EACCESS);
    rx.num_sge = -1;
    CHECK_EQ_INT(mre_qp_post_recv(e.qa, &rx, &rbad), MROCE_EINVAL);
    /* Inline data too long. */
    uint8_t inl[MROCE_MAX_INLINE + 1];
    memset(inl, 1, sizeof(inl));
    bsg = (struct mroce_sge){addr_of(inl), sizeof(inl), 0};
    x = swr(1, MROCE_WR_SEND, &bsg, 0, 0);
    x.send_flags |= MROCE_SEND_INLINE;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &x, &bad, now), MROCE_ERANGE);
    settle(&e, MS);
    CHECK_EQ(mroce_tb_cq_count(e.tb->h[0].scq), 0); /* nothing was queued */
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_RTS);

    /* SQ overflow: 4 slots; a chain of 5 posts 4 and stops at the 5th. */
    struct mroce_send_wr c[5];
    for (int i = 0; i < 5; i++) {
        c[i] = w;
        c[i].wr_id = 100 + (uint64_t)i;
        c[i].next = i < 4 ? &c[i + 1] : NULL;
    }
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &c[0], &bad, now), MROCE_EFULL);
    CHECK(bad == &c[4]);
    /* The region is referenced by queued work: dereg is refused. */
    CHECK_EQ_INT(mre_mr_dereg(a.mr), MROCE_EBUSY);
    /* RQ overflow, and an MR held by a posted receive. */
    struct gbuf rq;
    CHECK_EQ_INT(gbuf_new(&rq, ea, 4096, MROCE_ACCESS_LOCAL_WRITE), 0);
    struct mroce_sge rsg = {addr_of(rq.p), 64, mre_mr_lkey(rq.mr)};
    struct mroce_recv_wr r[3];
    for (int i = 0; i < 3; i++)
        r[i] = (struct mroce_recv_wr){.wr_id = 200 + (uint64_t)i,
                                      .next = i < 2 ? &r[i + 1] : NULL,
                                      .sg_list = &rsg,
                                      .num_sge = 1};
    CHECK_EQ_INT(mre_qp_post_recv(e.qa, &r[0], &rbad), MROCE_EFULL);
    CHECK(rbad == &r[2]);
    CHECK_EQ_INT(mre_mr_dereg(rq.mr), MROCE_EBUSY);
    /* The 4 WRITEs complete; then the region is free again. */
    struct mroce_wc wc[8];
    int n = collect(&e, e.tb->h[0].scq, 4, wc, 10 * MS);
    CHECK_EQ_INT(n, 4);
    for (int i = 0; i < n; i++) {
        CHECK_EQ(wc[i].wr_id, 100 + (uint64_t)i);
        CHECK_EQ(wc[i].status, MROCE_WC_SUCCESS);
    }
    CHECK_EQ_INT(mre_mr_dereg(a.mr), 0);
    a.mr = NULL;
    /* A CQ is busy while a QP uses it, free once the QP is gone. */
    CHECK_EQ_INT(mre_cq_del(e.tb->h[0].scq), MROCE_EBUSY);
    mre_cq *cq;
    CHECK_EQ_INT(mre_cq_new(ea, 8, &cq), 0);
    struct mre_qp_attr cat = e.at;
    cat.send_cq = cat.recv_cq = cq;
    mre_qp *qc;
    CHECK_EQ_INT(mre_qp_new(ea, &cat, &qc), 0);
    CHECK_EQ_INT(mre_cq_del(cq), MROCE_EBUSY);
    mre_qp_del(qc);
    CHECK_EQ_INT(mre_cq_del(cq), 0);

    /* ERROR by the user: the posted receives flush, in order; later posts
     * are refused (ESTATE) or flushed at once (CONN-21); nothing is sent. */
    CHECK_EQ_INT(mre_qp_set_error(e.qa), 0);
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_ERROR);
    CHECK_EQ_INT(mre_cq_poll(e.tb->h[0].rcq, 4, wc), 2);
    CHECK_EQ(wc[0].wr_id, 200u);
    CHECK_EQ(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    CHECK_EQ(wc[1].wr_id, 201u);
    CHECK_EQ(wc[1].status, MROCE_WC_WR_FLUSH_ERR);
    CHECK_EQ_INT(mre_mr_dereg(rq.mr), 0); /* flushing released it */
    rq.mr = NULL;
    CHECK_EQ_INT(mre_qp_set_error(e.qa), 0); /* idempotent */
    struct mroce_sge isg = {addr_of(inl), 8, 0};
    x = swr(300, MROCE_WR_SEND, &isg, 0, 0);
    x.send_flags |= MROCE_SEND_INLINE;
    int rc = mre_qp_post_send(e.qa, &x, &bad, now);
    if (rc == 0) {
        CHECK_EQ_INT(mre_cq_poll(e.tb->h[0].scq, 1, wc), 1);
        CHECK_EQ(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    } else {
        CHECK_EQ_INT(rc, MROCE_ESTATE);
    }
    struct mroce_recv_wr rl = {.wr_id = 301};
    rc = mre_qp_post_recv(e.qa, &rl, &rbad);
    if (rc == 0) {
        CHECK_EQ_INT(mre_cq_poll(e.tb->h[0].rcq, 1, wc), 1);
        CHECK_EQ(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    } else {
        CHECK_EQ_INT(rc, MROCE_ESTATE);
    }
    CHECK_EQ_INT(mre_qp_disconnect(e.qa, now), MROCE_ESTATE);
    gbuf_free(&a);
    gbuf_free(&b);
    gbuf_free(&ro);
    gbuf_free(&rq);
    env_del(&e);
    printf("bad API calls: rejected with the documented codes\n");
}

/* ---- 7. forged token ---- */

struct forge {
    int on;
    uint32_t src;     /* only packets from this host */
    int data_only;    /* 1: data packets, 0: ACKs */
    uint64_t forged;  /* rewritten on transmission */
    uint64_t arrived; /* forged packets delivered to the receiver */
    uint8_t token[8]; /* the forged token (the real one is constant) */
};

/* Rewrite the 8 token bytes (base header offset 8) and reseal the CRC so the
 * packet is well-formed in every respect but its token. */
static int forge_hook(void *user, struct mroce_netdrive_pkt *pkt)
{
    struct forge *f = user;
    if (!f->on || pkt->src != f->src || pkt->len < MROCE_BASE_HDR_LEN + 4)
        return MROCE_NETDRIVE_PASS;
    int data = mrw_opcode_has_psn(pkt->buf[1]);
    if (f->data_only ? !data : pkt->buf[1] != MROCE_OP_ACK)
        return MROCE_NETDRIVE_PASS;
    for (int i = 8; i < 16; i++)
        pkt->buf[i] ^= (uint8_t)(0x5a + i);
    mrw_pkt_seal(pkt->buf, pkt->len - MROCE_CRC_LEN);
    memcpy(f->token, pkt->buf + 8, 8);
    f->forged++;
    return MROCE_NETDRIVE_PASS;
}

/* Count forged packets as they are delivered (some may still be in the
 * fabric when the test looks). */
static int forge_rx_hook(void *user, struct mroce_netdrive_pkt *pkt)
{
    struct forge *f = user;
    if (f->forged && pkt->src == f->src && pkt->len >= MROCE_BASE_HDR_LEN &&
        memcmp(pkt->buf + 8, f->token, 8) == 0)
        f->arrived++;
    return MROCE_NETDRIVE_PASS;
}

static void test_wrong_token(void)
{
    struct env e;
    if (env_new(&e, 800, NULL) < 0) {
        env_del(&e);
        return;
    }
    struct gbuf src, dst;
    const unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    CHECK_EQ_INT(gbuf_new(&src, e.tb->h[0].ep, 65536, acc), 0);
    CHECK_EQ_INT(gbuf_new(&dst, e.tb->h[1].ep, 65536, acc), 0);
    struct forge f = {1, 0, 1, 0, 0, {0}};
    mroce_netdrive_set_tx_hook(e.tb->d, forge_hook, &f);
    mroce_netdrive_set_rx_hook(e.tb->d, forge_rx_hook, &f);
    struct mroce_sge s = {addr_of(src.p), 40000, mre_mr_lkey(src.mr)};
    struct mroce_send_wr w = swr(1, MROCE_WR_WRITE, &s, addr_of(dst.p),
                                 mre_mr_rkey(dst.mr));
    struct mroce_sge s2 = {addr_of(src.p + 40960), 1000, mre_mr_lkey(src.mr)};
    struct mroce_send_wr w2 = swr(2, MROCE_WR_SEND, &s2, 0, 0);
    w.next = &w2;
    struct mroce_sge rs = {addr_of(dst.p + 40960), 1000, mre_mr_lkey(dst.mr)};
    struct mroce_recv_wr rw = {.wr_id = 3, .sg_list = &rs, .num_sge = 1};
    CHECK_EQ_INT(mre_qp_post_recv(e.qb, &rw, NULL), 0);
    struct mroce_qp_counters cb0, cb;
    mre_qp_get_counters(e.qb, &cb0);
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &w, NULL, env_now(&e)), 0);
    /* 2 ms: the first transmissions, a probe and a few timeouts, all
     * forged. */
    settle(&e, 2 * MS);
    mre_qp_get_counters(e.qb, &cb);
    struct mroce_ep_counters eb;
    mre_ep_get_counters(e.tb->h[1].ep, &eb);
    CHECK(f.forged > 10);
    CHECK(f.arrived + 2 >= f.forged); /* at most a couple in the fabric */
    CHECK_EQ(cb.drop_token - cb0.drop_token, f.arrived);
    CHECK_EQ(eb.drop_crc, 0u); /* resealed: the token is the only fault */
    CHECK_EQ(cb.rx_data_pkts, cb0.rx_data_pkts);
    /* Nothing to acknowledge: the one ACK is the answer to the sender's
     * share request (CC-30, rate_hint 2 by default), whose token is not
     * forged. */
    struct mroce_qp_counters cq;
    mre_qp_get_counters(e.qa, &cq);
    CHECK_EQ(cb.tx_acks - cb0.tx_acks, cq.rate_asks);
    CHECK(gbuf_intact(&dst));
    CHECK_EQ(mroce_tb_cq_count(e.tb->h[0].scq), 0);
    CHECK_EQ(mroce_tb_cq_count(e.tb->h[1].rcq), 0);
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_RTS);
    CHECK_EQ(mre_qp_state(e.qb), MROCE_QPS_RTS);
    printf("forged token: %llu data packets dropped (drop_token), nothing "
           "placed\n",
           (unsigned long long)f.forged);

    /* Stop forging: retransmissions carry the right token and complete. */
    f.on = 0;
    struct mroce_wc wc[2];
    CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 2, wc, 500 * MS), 2);
    CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
    CHECK_EQ(wc[1].status, MROCE_WC_SUCCESS);
    CHECK_EQ_INT(collect(&e, e.tb->h[1].rcq, 1, wc, MS), 1);
    CHECK(memcmp(src.p, dst.p, 40000) == 0);
    CHECK(memcmp(src.p + 40960, dst.p + 40960, 1000) == 0);

    /* Forged ACKs: the requester drops them and its work stays pending
     * until real ones arrive. */
    struct mroce_qp_counters ca0, ca;
    mre_qp_get_counters(e.qa, &ca0);
    f = (struct forge){1, 1, 0, 0, 0, {0}};
    s.length = 8000;
    w.next = NULL;
    w.wr_id = 4;
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &w, NULL, env_now(&e)), 0);
    settle(&e, 100 * US);
    mre_qp_get_counters(e.qa, &ca);
    CHECK(f.forged > 0);
    CHECK_EQ(ca.drop_token - ca0.drop_token, f.arrived);
    CHECK_EQ(ca.rx_acks, ca0.rx_acks);
    CHECK_EQ(mroce_tb_cq_count(e.tb->h[0].scq), 0);
    f.on = 0;
    CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 1, wc, 500 * MS), 1);
    CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
    printf("forged token: %llu ACKs dropped at the requester\n",
           (unsigned long long)f.forged);
    mroce_netdrive_set_tx_hook(e.tb->d, NULL, NULL);
    mroce_netdrive_set_rx_hook(e.tb->d, NULL, NULL);
    gbuf_free(&src);
    gbuf_free(&dst);
    env_del(&e);
}

/* ---- 8. orderly disconnect ---- */

static void test_disconnect(int peer_alive)
{
    struct env e;
    if (env_new(&e, 900 + (uint64_t)peer_alive, NULL) < 0) {
        env_del(&e);
        return;
    }
    struct gbuf src, dst;
    const unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    CHECK_EQ_INT(gbuf_new(&src, e.tb->h[0].ep, 1u << 20, acc), 0);
    CHECK_EQ_INT(gbuf_new(&dst, e.tb->h[1].ep, 1u << 20, acc), 0);
    /* Receives on both sides that no message will ever consume. */
    struct mroce_sge rsb = {addr_of(dst.p), 64, mre_mr_lkey(dst.mr)};
    struct mroce_sge rsa = {addr_of(src.p), 64, mre_mr_lkey(src.mr)};
    struct mroce_recv_wr rb[3], ra[2];
    for (int i = 0; i < 3; i++)
        rb[i] = (struct mroce_recv_wr){.wr_id = 10 + (uint64_t)i,
                                       .next = i < 2 ? &rb[i + 1] : NULL,
                                       .sg_list = &rsb,
                                       .num_sge = 1};
    for (int i = 0; i < 2; i++)
        ra[i] = (struct mroce_recv_wr){.wr_id = 20 + (uint64_t)i,
                                       .next = i < 1 ? &ra[i + 1] : NULL,
                                       .sg_list = &rsa,
                                       .num_sge = 1};
    CHECK_EQ_INT(mre_qp_post_recv(e.qb, &rb[0], NULL), 0);
    CHECK_EQ_INT(mre_qp_post_recv(e.qa, &ra[0], NULL), 0);
    /* Outstanding work when disconnect is called: it must finish first
     * (CONN-15), and new sends are refused meanwhile. */
    struct mroce_sge s = {addr_of(src.p + 4096), 512u << 10,
                          mre_mr_lkey(src.mr)};
    struct mroce_send_wr w = swr(1, MROCE_WR_WRITE, &s, addr_of(dst.p + 4096),
                                 mre_mr_rkey(dst.mr));
    CHECK_EQ_INT(mre_qp_post_send(e.qa, &w, NULL, env_now(&e)), 0);
    if (!peer_alive) {
        /* Let the WRITE finish, then cut the peer off: DISCONNECT goes
         * unanswered and the initiator closes after its retries (CONN-16). */
        struct mroce_wc wc0;
        CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 1, &wc0, 10 * MS), 1);
        CHECK_EQ(wc0.status, MROCE_WC_SUCCESS);
        for (uint32_t sp = 0; sp < 4; sp++)
            mroce_net_set_spine_blackhole(mroce_netdrive_net(e.tb->d), sp, 1);
    }
    mroce_tstamp t0 = env_now(&e);
    CHECK_EQ_INT(mre_qp_disconnect(e.qa, t0), 0);
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_CLOSING);
    CHECK_EQ_INT(mre_qp_disconnect(e.qa, t0), MROCE_ESTATE);
    struct mroce_send_wr w2 = w;
    w2.wr_id = 2;
    CHECK(mre_qp_post_send(e.qa, &w2, NULL, t0) < 0); /* CLOSING: refused */
    struct mroce_wc wc[4];
    if (peer_alive) {
        CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 1, wc, 10 * MS), 1);
        CHECK_EQ(wc[0].wr_id, 1u);
        CHECK_EQ(wc[0].status, MROCE_WC_SUCCESS);
        CHECK(memcmp(src.p + 4096, dst.p + 4096, 512u << 10) == 0);
        /* The responder closes on DISCONNECT and flushes its receives in
         * posting order (CONN-17). */
        CHECK_EQ_INT(collect(&e, e.tb->h[1].rcq, 3, wc, 10 * MS), 3);
        for (int i = 0; i < 3; i++) {
            CHECK_EQ(wc[i].wr_id, 10 + (uint64_t)i);
            CHECK_EQ(wc[i].status, MROCE_WC_WR_FLUSH_ERR);
        }
        CHECK_EQ(mre_qp_state(e.qb), MROCE_QPS_CLOSED);
    }
    /* The initiator closes on DISCONNECT_ACK (CONN-18), or after retry_cnt
     * unanswered DISCONNECTs (CONN-16), and flushes its receives. */
    CHECK_EQ_INT(collect(&e, e.tb->h[0].rcq, 2, wc, 200 * MS), 2);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(wc[i].wr_id, 20 + (uint64_t)i);
        CHECK_EQ(wc[i].status, MROCE_WC_WR_FLUSH_ERR);
    }
    CHECK_EQ(mre_qp_state(e.qa), MROCE_QPS_CLOSED);
    mroce_tstamp took = env_now(&e) - t0;
    /* CLOSED: no new work goes out, and both ends fall silent. */
    CHECK_EQ_INT(mre_qp_disconnect(e.qa, env_now(&e)), MROCE_ESTATE);
    int rc = mre_qp_post_send(e.qa, &w2, NULL, env_now(&e));
    if (rc == 0) {
        CHECK_EQ_INT(collect(&e, e.tb->h[0].scq, 1, wc, MS), 1);
        CHECK_EQ(wc[0].status, MROCE_WC_WR_FLUSH_ERR);
    } else {
        CHECK_EQ_INT(rc, MROCE_ESTATE);
    }
    if (peer_alive) {
        CHECK(mroce_netdrive_run_idle(e.tb->d, env_now(&e) + 500 * MS));
        CHECK_EQ(mroce_tb_cq_count(e.tb->h[0].scq), 0);
        CHECK_EQ(mroce_tb_cq_count(e.tb->h[1].scq), 0);
        CHECK_EQ(mre_qp_state(e.qb), MROCE_QPS_CLOSED);
    } else {
        /* The responder never heard DISCONNECT: its keepalives go
         * unanswered and it fails peer_timeout after the last packet it
         * got (REL-36), its oldest receive RETRY_EXC_ERR, the others
         * flushed; then everything falls silent. */
        CHECK_EQ(mre_qp_state(e.qb), MROCE_QPS_RTS);
        CHECK_EQ_INT(mre_mr_dereg(dst.mr), MROCE_EBUSY); /* receives */
        CHECK(
            mroce_netdrive_run_idle(e.tb->d, env_now(&e) + e.at.peer_timeout));
        CHECK_EQ(mroce_tb_cq_count(e.tb->h[0].scq), 0);
        CHECK_EQ(mre_qp_state(e.qb), MROCE_QPS_ERROR);
        CHECK_EQ_INT(mre_cq_poll(e.tb->h[1].rcq, 4, wc), 3);
        for (int i = 0; i < 3; i++) {
            CHECK_EQ(wc[i].wr_id, 10 + (uint64_t)i);
            CHECK_EQ(wc[i].status,
                     i == 0 ? MROCE_WC_RETRY_EXC_ERR : MROCE_WC_WR_FLUSH_ERR);
        }
    }
    CHECK(gbuf_guards_intact(&dst));
    printf("disconnect (%s): both CLOSED as expected, receives flushed, "
           "%.2f ms\n",
           peer_alive ? "peer alive" : "peer unreachable", (double)took / 1e6);
    gbuf_free(&src);
    gbuf_free(&dst);
    env_del(&e);
}

/* ---- the inline copies are allocated by the first inline WR ---- */

static int g_fail_alloc; /* the allocator below refuses while set */
static size_t g_alloc_n; /* successful allocations */

static void *failing_calloc(size_t n, size_t sz, void *u)
{
    (void)u;
    if (g_fail_alloc)
        return NULL;
    g_alloc_n++;
    return calloc(n, sz);
}

/* A QP that never posts inline allocates nothing for it; the first inline
 * WR allocates the copies, and if that fails it is refused with
 * MROCE_ENOMEM and nothing is queued (a retry then succeeds). */
static void test_inline_lazy(void)
{
    struct mre_ep_config c;
    mre_ep_config_default(&c);
    c.mem.calloc = failing_calloc;
    c.mem.free = testutil_free;
    uint64_t seed = 77;
    c.rand = testutil_rand_bytes;
    c.rand_user = &seed;
    c.max_qps = 4;
    mre_ep *ep = NULL;
    mre_cq *cq = NULL;
    mre_qp *qp = NULL;
    CHECK_EQ_INT(mre_ep_new(&ep, &c), 0);
    CHECK_EQ_INT(mre_cq_new(ep, 64, &cq), 0);
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.send_cq = a.recv_cq = cq;
    a.max_send_wr = a.max_recv_wr = 4;
    CHECK_EQ_INT(mre_qp_new(ep, &a, &qp), 0);
    struct mre_addr to;
    mroce_netdrive_addr(1, &to);
    CHECK_EQ_INT(mre_qp_connect(qp, &to, 0, 0), 0);
    uint8_t data[64];
    memset(data, 3, sizeof(data));
    struct mroce_sge sg = {addr_of(data), sizeof(data), 0};
    struct mroce_send_wr w = swr(5, MROCE_WR_SEND, &sg, 0, 0);
    w.send_flags |= MROCE_SEND_INLINE;
    struct mroce_send_wr *bad = NULL;
    g_fail_alloc = 1;
    CHECK_EQ_INT(mre_qp_post_send(qp, &w, &bad, 0), MROCE_ENOMEM);
    CHECK(bad == &w);
    g_fail_alloc = 0;
    size_t before = g_alloc_n;
    CHECK_EQ_INT(mre_qp_post_send(qp, &w, &bad, 0), 0);
    CHECK(bad == NULL);
    CHECK_EQ(g_alloc_n, before + 1); /* the copies, once */
    memset(data, 9, sizeof(data));   /* the copy was taken at post time */
    CHECK_EQ_INT(mre_qp_post_send(qp, &w, &bad, 0), 0);
    CHECK_EQ(g_alloc_n, before + 1);
    /* SQ of 4: the refused WR took no slot, so two more fit, then full. */
    CHECK_EQ_INT(mre_qp_post_send(qp, &w, &bad, 0), 0);
    CHECK_EQ_INT(mre_qp_post_send(qp, &w, &bad, 0), 0);
    CHECK_EQ_INT(mre_qp_post_send(qp, &w, &bad, 0), MROCE_EFULL);
    mre_ep_del(ep);
}

static void case_remote_access(void)
{
    for (int c = ACC_BAD_RKEY; c <= ACC_NO_RATOMIC; c++)
        test_remote_access((enum acc_case)c);
}

static void case_rnr(void)
{
    test_rnr(1);
    test_rnr(0);
}

static void case_recv_too_small(void)
{
    test_recv_too_small(1000);
    test_recv_too_small(10000);
}

static void case_peer_dead(void)
{
    test_peer_dead(0);
    test_peer_dead(1);
}

static void case_lossy_handshake(void)
{
    for (uint64_t seed = 1; seed <= 12; seed++)
        test_lossy_handshake(1000 + seed);
}

static void case_disconnect(void)
{
    test_disconnect(1);
    test_disconnect(0);
}

static const struct test_case cases[] = {
    {"inline_lazy", test_inline_lazy},
    {"remote_access", case_remote_access},
    {"misaligned_atomic", test_misaligned_atomic},
    {"rnr", case_rnr},
    {"recv_too_small", case_recv_too_small},
    {"peer_dead", case_peer_dead},
    {"no_listener", test_no_listener},
    {"post_while_connecting", test_post_while_connecting},
    {"lossy_handshake", case_lossy_handshake},
    {"bad_api", test_bad_api},
    {"wrong_token", test_wrong_token},
    {"disconnect", case_disconnect},
};

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* keep reports next to failures */
    return TEST_CASES_MAIN("test_engine_errors", cases, argc, argv);
}
