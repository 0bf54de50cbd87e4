/*
 * test_engine_zerocopy.c - zero-copy transmit (mre_ep_write_pkt_zc): a
 * data packet whose payload is one piece of registered memory leaves it
 * there and names it, and the packet put together from headers + payload +
 * CRC is byte for byte what the copying mre_ep_write_pkt would write.
 *
 * Two endpoints exchange packets directly.  The requester's side is
 * written with the zero-copy call, reassembled into one buffer, checked
 * (CRC valid, payload pointer inside the source buffer and equal to the
 * bytes at it) and delivered.  Cases: a WRITE from one SGE (every data
 * packet zero-copy), a WRITE from three SGEs whose boundaries fall inside
 * packets (those packets copied, the others not), a SEND, a READ (the
 * responder's READ responses are zero-copy too, from its region) and a
 * FETCH_ADD (its 8-byte result is on the stack: never zero-copy).  The
 * data must arrive intact and every WR complete successfully.  Also
 * mrw_pkt_seal_split against mrw_pkt_seal at several lengths.
 */
#include <stdlib.h>
#include <string.h>

#include <mroce/wire.h>

#include "case_table.h"
#include "engine_int.h"
#include "testutil.h"

#define MTU 1024
#define BUFSZ (64u << 10)

struct end {
    mre_ep *ep;
    mre_cq *cq;
    mre_qp *qp;
    mre_mr *mr;
    uint8_t *buf;
    struct mre_addr addr;
    uint64_t seed;
    /* what its zero-copy writes produced */
    unsigned zc_pkts, copied_data_pkts;
};

static void end_new(struct end *e, uint8_t id)
{
    memset(e, 0, sizeof(*e));
    struct mre_ep_config c;
    mre_ep_config_default(&c);
    c.mem.calloc = testutil_calloc;
    c.mem.free = testutil_free;
    c.rand = testutil_rand_bytes;
    e->seed = 77 + id;
    c.rand_user = &e->seed;
    e->addr.len = 6;
    e->addr.data[0] = 10;
    e->addr.data[3] = id;
    CHECK(mre_ep_new(&e->ep, &c) == 0);
    CHECK(mre_cq_new(e->ep, 256, &e->cq) == 0);
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.send_cq = a.recv_cq = e->cq;
    a.mtu = MTU;
    a.npaths = 4;
    CHECK(mre_qp_new(e->ep, &a, &e->qp) == 0);
    e->buf = calloc(1, BUFSZ);
    CHECK(mre_mr_reg(e->ep, e->buf, BUFSZ,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                         MROCE_ACCESS_REMOTE_READ | MROCE_ACCESS_REMOTE_ATOMIC,
                     &e->mr) == 0);
}

static void end_del(struct end *e)
{
    mre_ep_del(e->ep);
    free(e->buf);
}

static int is_data(uint8_t op)
{
    return op == MROCE_OP_WRITE || op == MROCE_OP_SEND ||
           op == MROCE_OP_READ_RESP;
}

/* Everything `from` has to send, written zero-copy, checked, reassembled
 * and delivered to `to`.  Returns packets moved. */
static int pump(struct end *from, struct end *to, mroce_tstamp now)
{
    uint8_t buf[MROCE_MAX_PKT_LEN], whole[MROCE_MAX_PKT_LEN];
    struct mre_tx_info ti;
    struct mre_tx_zc zc;
    int moved = 0, n;
    while ((n = mre_ep_write_pkt_zc(from->ep, buf, sizeof(buf), &ti, &zc,
                                    now)) > 0) {
        const uint8_t *pkt = buf;
        if (zc.payload) {
            size_t h = (size_t)n - zc.payload_len - MROCE_CRC_LEN;
            /* The payload is named where it lies: in the sender's region. */
            CHECK(zc.payload >= from->buf &&
                  zc.payload + zc.payload_len <= from->buf + BUFSZ);
            CHECK(zc.payload_len > 0 && zc.payload_len <= MTU);
            memcpy(whole, buf, h);
            memcpy(whole + h, zc.payload, zc.payload_len);
            memcpy(whole + h + zc.payload_len, buf + h, MROCE_CRC_LEN);
            pkt = whole;
        } else {
            CHECK(zc.payload_len == 0);
        }
        struct mrw_pkt p;
        if (!CHECK(mrw_pkt_decode(&p, pkt, (size_t)n) == 0))
            continue;
        if (zc.payload) {
            CHECK(is_data(p.base.opcode));
            CHECK(p.payload_len == zc.payload_len);
            from->zc_pkts++;
        } else if (is_data(p.base.opcode)) {
            from->copied_data_pkts++;
        }
        struct mre_rx_info ri = {from->addr, MROCE_ECN_ECT0, 0};
        mre_ep_recv(to->ep, pkt, (size_t)n, &ri, now);
        moved++;
    }
    return moved;
}

/* Pumps both ways, firing timers (ACK coalescing), until both CQs hold
 * `want` completions in total or nothing moves for a while. */
static void run(struct end *a, struct end *b, mroce_tstamp *now, int want,
                struct mroce_wc *wc, int *got)
{
    *got = 0;
    for (int idle = 0, guard = 0; idle < 50 && guard < 100000; guard++) {
        *now += 1000;
        mre_ep_handle_expiry(a->ep, *now);
        mre_ep_handle_expiry(b->ep, *now);
        int m = pump(a, b, *now) + pump(b, a, *now);
        int k = mre_cq_poll(a->cq, 16, wc + *got);
        *got += k;
        k = mre_cq_poll(b->cq, 16, wc + *got);
        *got += k;
        if (*got >= want)
            return;
        idle = m ? 0 : idle + 1;
    }
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = (uint8_t)(seed >> 16);
    }
}

static void test_seal_split(void)
{
    uint8_t a[MROCE_MAX_PKT_LEN + 8], b[MROCE_MAX_PKT_LEN + 8];
    size_t lens[] = {0, 1, 63, 64, 255, 256, 1000, 4096, 8192};
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        size_t h = 44, pl = lens[i];
        fill(a, h + pl, (uint32_t)(i + 1));
        memcpy(b, a, h);
        size_t n1 = mrw_pkt_seal(a, h + pl);
        size_t n2 = mrw_pkt_seal_split(b, h, a + h, pl);
        CHECK_EQ_INT((int)n1, (int)n2);
        /* the split CRC sits right after the headers */
        CHECK(memcmp(a + h + pl, b + h, MROCE_CRC_LEN) == 0);
    }
}

/* WRITEs, SENDs and READs between two ends: which packets go zero-copy. */
static void test_transfers(void)
{
    struct end a, b;
    end_new(&a, 1);
    end_new(&b, 2);
    mroce_tstamp now = 1000000;
    CHECK(mre_qp_listen(b.qp, now) == 0);
    CHECK(mre_qp_connect(a.qp, &b.addr, 0, now) == 0);
    struct mroce_wc wc[64];
    int got;
    run(&a, &b, &now, 1000, wc, &got); /* handshake: no completions */
    CHECK(mre_qp_state(a.qp) == MROCE_QPS_RTS);
    CHECK(mre_qp_state(b.qp) == MROCE_QPS_RTS);

    fill(a.buf, BUFSZ, 5);
    fill(b.buf, BUFSZ, 6);

    /* 1. WRITE of 3 MTUs + 100 bytes from one SGE: all zero-copy. */
    uint32_t len1 = 3 * MTU + 100;
    struct mroce_sge s1 = {(uintptr_t)a.buf, len1, mre_mr_lkey(a.mr)};
    struct mroce_send_wr w1;
    memset(&w1, 0, sizeof(w1));
    w1.wr_id = 1;
    w1.sg_list = &s1;
    w1.num_sge = 1;
    w1.opcode = MROCE_WR_WRITE;
    w1.send_flags = MROCE_SEND_SIGNALED;
    w1.remote_addr = (uintptr_t)b.buf + 8192;
    w1.rkey = mre_mr_rkey(b.mr);
    struct mroce_send_wr *bad;
    CHECK(mre_qp_post_send(a.qp, &w1, &bad, now) == 0);
    run(&a, &b, &now, 1, wc, &got);
    CHECK_EQ_INT(got, 1);
    CHECK(wc[0].wr_id == 1 && wc[0].status == MROCE_WC_SUCCESS);
    CHECK(memcmp(b.buf + 8192, a.buf, len1) == 0);
    CHECK_EQ_INT((int)a.zc_pkts, 4);
    CHECK_EQ_INT((int)a.copied_data_pkts, 0);

    /* 2. WRITE gathered from three SGEs of 700, 1500 and 900 bytes (SGE
     * boundaries at 700 and 2200): packets [0,1024) and [2048,3072)
     * straddle one (copied), [1024,2048) and [3072,3100) lie inside one
     * SGE (zero-copy). */
    a.zc_pkts = a.copied_data_pkts = 0;
    struct mroce_sge s2[3] = {
        {(uintptr_t)a.buf + 20000, 700, mre_mr_lkey(a.mr)},
        {(uintptr_t)a.buf + 30000, 1500, mre_mr_lkey(a.mr)},
        {(uintptr_t)a.buf + 40000, 900, mre_mr_lkey(a.mr)},
    };
    w1.wr_id = 2;
    w1.sg_list = s2;
    w1.num_sge = 3;
    w1.remote_addr = (uintptr_t)b.buf + 16384;
    CHECK(mre_qp_post_send(a.qp, &w1, &bad, now) == 0);
    run(&a, &b, &now, 1, wc, &got);
    CHECK_EQ_INT(got, 1);
    CHECK(wc[0].wr_id == 2 && wc[0].status == MROCE_WC_SUCCESS);
    CHECK(memcmp(b.buf + 16384, a.buf + 20000, 700) == 0);
    CHECK(memcmp(b.buf + 16384 + 700, a.buf + 30000, 1500) == 0);
    CHECK(memcmp(b.buf + 16384 + 2200, a.buf + 40000, 900) == 0);
    CHECK_EQ_INT((int)a.copied_data_pkts, 2);
    CHECK_EQ_INT((int)a.zc_pkts, 2);

    /* 3. SEND of 2 MTUs + 1 into a posted receive. */
    a.zc_pkts = a.copied_data_pkts = 0;
    struct mroce_sge rs = {(uintptr_t)b.buf + 32768, 4096, mre_mr_lkey(b.mr)};
    struct mroce_recv_wr rw = {.wr_id = 7, .sg_list = &rs, .num_sge = 1};
    struct mroce_recv_wr *rbad;
    CHECK(mre_qp_post_recv(b.qp, &rw, &rbad) == 0);
    struct mroce_sge s3 = {(uintptr_t)a.buf + 50000, 2 * MTU + 1,
                           mre_mr_lkey(a.mr)};
    w1.wr_id = 3;
    w1.sg_list = &s3;
    w1.num_sge = 1;
    w1.opcode = MROCE_WR_SEND;
    CHECK(mre_qp_post_send(a.qp, &w1, &bad, now) == 0);
    run(&a, &b, &now, 2, wc, &got);
    CHECK_EQ_INT(got, 2);
    for (int i = 0; i < got; i++)
        CHECK(wc[i].status == MROCE_WC_SUCCESS);
    CHECK(memcmp(b.buf + 32768, a.buf + 50000, 2 * MTU + 1) == 0);
    CHECK_EQ_INT((int)a.zc_pkts, 3);

    /* 4. READ of 2 MTUs + 300 from b: b's READ responses are zero-copy
     * out of b's region. */
    b.zc_pkts = b.copied_data_pkts = 0;
    struct mroce_sge s4 = {(uintptr_t)a.buf + 60000 - 3000, 2 * MTU + 300,
                           mre_mr_lkey(a.mr)};
    w1.wr_id = 4;
    w1.sg_list = &s4;
    w1.num_sge = 1;
    w1.opcode = MROCE_WR_READ;
    w1.remote_addr = (uintptr_t)b.buf + 1000;
    CHECK(mre_qp_post_send(a.qp, &w1, &bad, now) == 0);
    run(&a, &b, &now, 1, wc, &got);
    CHECK_EQ_INT(got, 1);
    CHECK(wc[0].wr_id == 4 && wc[0].status == MROCE_WC_SUCCESS);
    CHECK(memcmp(a.buf + 60000 - 3000, b.buf + 1000, 2 * MTU + 300) == 0);
    CHECK_EQ_INT((int)b.zc_pkts, 3);
    CHECK_EQ_INT((int)b.copied_data_pkts, 0);

    /* 5. FETCH_ADD: the response's payload is built on the stack and must
     * be copied into the packet. */
    b.zc_pkts = b.copied_data_pkts = 0;
    uint64_t before;
    memcpy(&before, b.buf + 2048, 8);
    struct mroce_sge s5 = {(uintptr_t)a.buf + 63000, 8, mre_mr_lkey(a.mr)};
    w1.wr_id = 5;
    w1.sg_list = &s5;
    w1.opcode = MROCE_WR_FETCH_ADD;
    w1.remote_addr = (uintptr_t)b.buf + 2048;
    w1.compare_add = 5;
    CHECK(mre_qp_post_send(a.qp, &w1, &bad, now) == 0);
    run(&a, &b, &now, 1, wc, &got);
    CHECK_EQ_INT(got, 1);
    CHECK(wc[0].wr_id == 5 && wc[0].status == MROCE_WC_SUCCESS);
    CHECK_EQ_INT((int)b.zc_pkts, 0);

    /* A NULL zc is refused. */
    uint8_t buf[MROCE_MAX_PKT_LEN];
    struct mre_tx_info ti;
    CHECK_EQ_INT(mre_ep_write_pkt_zc(a.ep, buf, sizeof(buf), &ti, NULL, now),
                 MROCE_EINVAL);

    end_del(&a);
    end_del(&b);
}

static const struct test_case cases[] = {
    {"seal_split", test_seal_split},
    {"transfers", test_transfers},
};

int main(int argc, char **argv)
{
    return TEST_CASES_MAIN("test_engine_zerocopy", cases, argc, argv);
}
