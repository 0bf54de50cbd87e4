/*
 * test_engine_ops.c - every operation end to end through the engine on the
 * network model: SEND (with and without immediate), WRITE (with and without
 * immediate), READ, FETCH_ADD, CMP_SWAP, at sizes around the MTU, with and
 * without loss, reordering and duplication.  Checks data, completion order
 * and statuses (SEM-*, REL-*).
 */
#include <stdlib.h>
#include <string.h>

#include "case_table.h"
#include "testbed.h"
#include "testutil.h"

#define MTU 1024
#define BUFSZ (2u << 20)

struct side {
    uint8_t *buf;
    mre_mr *mr;
};

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

static int reg(mre_ep *ep, struct side *s)
{
    s->buf = calloc(1, BUFSZ);
    return mre_mr_reg(ep, s->buf, BUFSZ,
                      MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                          MROCE_ACCESS_REMOTE_READ | MROCE_ACCESS_REMOTE_ATOMIC,
                      &s->mr);
}

static int poll1(mre_cq *cq, struct mroce_wc *wc)
{
    return mre_cq_poll(cq, 1, wc);
}

static void run_suite(double loss, double reorder, double dup, uint64_t seed)
{
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    cfg.net.seed = seed;
    cfg.net.loss = loss;
    cfg.net.reorder = reorder;
    cfg.net.dup = dup;
    struct mroce_testbed *tb;
    if (!CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0))
        return;
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.mtu = MTU;
    at.npaths = 16;
    mre_qp *qa, *qb;
    CHECK(mroce_tb_connect(tb, 0, 1, &at, &qa, &qb, 100000000) == 0);
    struct side A, B;
    CHECK(reg(tb->h[0].ep, &A) == 0);
    CHECK(reg(tb->h[1].ep, &B) == 0);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    struct mroce_wc wc;

    /* SEND at sizes 1, MTU-1, MTU, MTU+1, 1 MiB, with immediate on odd. */
    static const uint32_t sizes[] = {1, MTU - 1, MTU, MTU + 1, 1u << 20, 0};
    const int nsz = (int)(sizeof(sizes) / sizeof(sizes[0]));
    uint32_t off = 0;
    for (int i = 0; i < nsz; i++) {
        struct mroce_sge rs = {(uint64_t)(uintptr_t)(B.buf + off),
                               sizes[i] + 16, mre_mr_lkey(B.mr)};
        struct mroce_recv_wr rw = {.wr_id = 100 + (uint64_t)i,
                                   .sg_list = &rs,
                                   .num_sge = 1};
        CHECK(mre_qp_post_recv(qb, &rw, NULL) == 0);
        off += sizes[i] + 16;
    }
    off = 0;
    fill(A.buf, BUFSZ, (uint32_t)seed);
    for (int i = 0; i < nsz; i++) {
        struct mroce_sge ss = {(uint64_t)(uintptr_t)(A.buf + off), sizes[i],
                               mre_mr_lkey(A.mr)};
        struct mroce_send_wr sw = {.wr_id = (uint64_t)i,
                                   .sg_list = &ss,
                                   .num_sge = 1,
                                   .opcode = (i & 1) ? MROCE_WR_SEND_WITH_IMM
                                                     : MROCE_WR_SEND,
                                   .send_flags = MROCE_SEND_SIGNALED,
                                   .imm_data = 0xabc0u + (uint32_t)i};
        CHECK(mre_qp_post_send(qa, &sw, NULL, now) == 0);
        off += sizes[i] + 16;
    }
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, nsz, 2000000000));
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, nsz, 2000000000));
    off = 0;
    for (int i = 0; i < nsz; i++) {
        if (!CHECK(poll1(tb->h[1].rcq, &wc) == 1))
            break;
        CHECK_EQ(wc.wr_id, 100 + (uint64_t)i);
        CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        CHECK_EQ(wc.byte_len, sizes[i]);
        CHECK_EQ((wc.wc_flags & MROCE_WC_WITH_IMM) != 0, (i & 1) != 0);
        if (i & 1)
            CHECK_EQ(wc.imm_data, 0xabc0u + (uint32_t)i);
        CHECK(memcmp(A.buf + off, B.buf + off, sizes[i]) == 0);
        off += sizes[i] + 16;
        if (!CHECK(poll1(tb->h[0].scq, &wc) == 1))
            break;
        CHECK_EQ(wc.wr_id, (uint64_t)i);
        CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
    }

    /* WRITE 1 MiB + WRITE_WITH_IMM 3000 B; READ 700 KiB back; atomics. */
    now = mroce_netdrive_now(tb->d);
    memset(B.buf, 0, BUFSZ);
    fill(A.buf, BUFSZ, (uint32_t)seed * 7u);
    struct mroce_recv_wr rw0 = {.wr_id = 77};
    CHECK(mre_qp_post_recv(qb, &rw0, NULL) == 0);
    struct mroce_sge s1 = {(uint64_t)(uintptr_t)A.buf, 1u << 20,
                           mre_mr_lkey(A.mr)};
    struct mroce_sge s2 = {(uint64_t)(uintptr_t)(A.buf + (1u << 20) + 1024),
                           3000, mre_mr_lkey(A.mr)};
    struct mroce_sge s3 = {(uint64_t)(uintptr_t)(A.buf + 1300000), 700000,
                           mre_mr_lkey(A.mr)};
    struct mroce_sge s4 = {(uint64_t)(uintptr_t)(A.buf + BUFSZ - 64), 8,
                           mre_mr_lkey(A.mr)};
    struct mroce_sge s5 = {(uint64_t)(uintptr_t)(A.buf + BUFSZ - 56), 8,
                           mre_mr_lkey(A.mr)};
    uint64_t counter = 1000;
    memcpy(B.buf + 64, &counter, 8);
    uint8_t *rd_src = B.buf + (1u << 20) + 4096;
    fill(rd_src, 700000, 99);
    struct mroce_send_wr w5 = {.wr_id = 5,
                               .sg_list = &s5,
                               .num_sge = 1,
                               .opcode = MROCE_WR_CMP_SWAP,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .remote_addr = (uint64_t)(uintptr_t)(B.buf + 64),
                               .rkey = mre_mr_rkey(B.mr),
                               .compare_add = 1042,
                               .swap = 7};
    struct mroce_send_wr w4 = {.wr_id = 4,
                               .next = &w5,
                               .sg_list = &s4,
                               .num_sge = 1,
                               .opcode = MROCE_WR_FETCH_ADD,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .remote_addr = (uint64_t)(uintptr_t)(B.buf + 64),
                               .rkey = mre_mr_rkey(B.mr),
                               .compare_add = 42};
    struct mroce_send_wr w3 = {.wr_id = 3,
                               .next = &w4,
                               .sg_list = &s3,
                               .num_sge = 1,
                               .opcode = MROCE_WR_READ,
                               .send_flags = MROCE_SEND_SIGNALED,
                               .remote_addr = (uint64_t)(uintptr_t)rd_src,
                               .rkey = mre_mr_rkey(B.mr)};
    struct mroce_send_wr w2 = {
        .wr_id = 2,
        .next = &w3,
        .sg_list = &s2,
        .num_sge = 1,
        .opcode = MROCE_WR_WRITE_WITH_IMM,
        .send_flags = MROCE_SEND_SIGNALED,
        .imm_data = 55,
        .remote_addr = (uint64_t)(uintptr_t)(B.buf + (1u << 20) + 1024),
        .rkey = mre_mr_rkey(B.mr)};
    struct mroce_send_wr w1 = {.wr_id = 1,
                               .next = &w2,
                               .sg_list = &s1,
                               .num_sge = 1,
                               .opcode = MROCE_WR_WRITE,
                               .send_flags = 0,
                               .remote_addr = (uint64_t)(uintptr_t)B.buf + 128,
                               .rkey = mre_mr_rkey(B.mr)};
    /* Targets in B do not overlap: atomic word at 64, WRITE at 128 (1 MiB),
     * WRITE_WITH_IMM at 1 MiB + 1024, READ source at 1 MiB + 4096. */
    CHECK(mre_qp_post_send(qa, &w1, NULL, now) == 0);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 4, 2000000000));
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, 1, 2000000000));
    uint64_t expect_ids[] = {2, 3, 4, 5};
    for (int i = 0; i < 4; i++) {
        if (!CHECK(poll1(tb->h[0].scq, &wc) == 1))
            break;
        CHECK_EQ(wc.wr_id, expect_ids[i]);
        CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
    }
    CHECK(memcmp(A.buf, B.buf + 128, 1u << 20) == 0);
    CHECK(memcmp(A.buf + (1u << 20) + 1024, B.buf + (1u << 20) + 1024, 3000) ==
          0);
    CHECK(memcmp(A.buf + 1300000, rd_src, 700000) == 0);
    uint64_t v;
    memcpy(&v, A.buf + BUFSZ - 64, 8);
    CHECK_EQ(v, 1000u); /* FETCH_ADD returned the old value */
    memcpy(&v, A.buf + BUFSZ - 56, 8);
    CHECK_EQ(v, 1042u); /* CMP_SWAP saw the added value */
    memcpy(&v, B.buf + 64, 8);
    CHECK_EQ(v, 7u); /* and swapped: each executed once */
    if (CHECK(poll1(tb->h[1].rcq, &wc) == 1)) {
        CHECK_EQ(wc.wr_id, 77u);
        CHECK_EQ(wc.opcode, MROCE_WC_RECV_WITH_IMM);
        CHECK_EQ(wc.imm_data, 55u);
        CHECK_EQ(wc.byte_len, 3000u);
    }
    struct mroce_qp_counters ca, cb;
    mre_qp_get_counters(qa, &ca);
    mre_qp_get_counters(qb, &cb);
    printf("loss %.2f reorder %.2f dup %.2f: A tx %llu retx %llu (path %llu "
           "ooo %llu rto %llu probe %llu) B dups %llu, srtt %llu ns\n",
           loss, reorder, dup, (unsigned long long)ca.tx_data_pkts,
           (unsigned long long)ca.retx_pkts, (unsigned long long)ca.retx_path,
           (unsigned long long)ca.retx_ooo, (unsigned long long)ca.retx_rto,
           (unsigned long long)ca.retx_probe, (unsigned long long)cb.rx_dups,
           (unsigned long long)ca.srtt);
    if (loss == 0 && reorder == 0 && dup == 0)
        CHECK_EQ(ca.retx_pkts, 0u); /* a clean network needs no repair */
    free(A.buf);
    free(B.buf);
    mroce_tb_del(tb);
}

static void case_clean(void)
{
    run_suite(0, 0, 0, 1);
}

static void case_lossy(void)
{
    run_suite(0.05, 0.05, 0.02, 2);
}

static void case_very_lossy(void)
{
    run_suite(0.2, 0.1, 0.05, 3);
}

static const struct test_case cases[] = {
    {"clean", case_clean},
    {"lossy", case_lossy},
    {"very_lossy", case_very_lossy},
};

int main(int argc, char **argv)
{
    return TEST_CASES_MAIN("test_engine_ops", cases, argc, argv);
}
