/*
 * test_engine_streams.c - several ordered streams over one QP (SEM-30..39)
 * through the engine on the network model: each stream's completions in
 * its own posting order under loss and reordering; a stream whose packets
 * are all dropped, or whose receiver is not ready, holds back no other
 * stream's completions; stream IDs at or above the QP's max_streams are
 * refused; max_streams is negotiated (the smaller of both sides, 1 without
 * the extension); and a QP that only uses stream 0 sends today's packets.
 */
#include <stdlib.h>
#include <string.h>

#include "case_table.h"
#include "engine_int.h"
#include "testbed.h"
#include "testutil.h"

#define MTU 1024
#define BUFSZ (1u << 20)
#define LIMIT 2000000000ull

struct side {
    uint8_t *buf;
    mre_mr *mr;
};

static void reg(mre_ep *ep, struct side *s)
{
    s->buf = calloc(1, BUFSZ);
    CHECK(mre_mr_reg(ep, s->buf, BUFSZ,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                         MROCE_ACCESS_REMOTE_READ | MROCE_ACCESS_REMOTE_ATOMIC,
                     &s->mr) == 0);
}

static struct mroce_testbed *bed(double loss, double reorder, double dup,
                                 uint64_t seed)
{
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    cfg.net.seed = seed;
    cfg.net.loss = loss;
    cfg.net.reorder = reorder;
    cfg.net.dup = dup;
    struct mroce_testbed *tb = NULL;
    CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0);
    return tb;
}

static void attr(struct mre_qp_attr *at, uint16_t streams)
{
    mre_qp_attr_default(at);
    at->mtu = MTU;
    at->npaths = 8;
    at->max_streams = streams;
}

/* A fresh testbed and a connected QP pair of `streams` streams, each side
 * with its registered buffer; pair_close frees them. */
static struct mroce_testbed *pair_open(double loss, double reorder, double dup,
                                       uint64_t seed, uint16_t streams,
                                       mre_qp **qa, mre_qp **qb, struct side *A,
                                       struct side *B)
{
    struct mroce_testbed *tb = bed(loss, reorder, dup, seed);
    if (!tb)
        return NULL;
    struct mre_qp_attr at;
    attr(&at, streams);
    CHECK(mroce_tb_connect(tb, 0, 1, &at, qa, qb, 100000000) == 0);
    reg(tb->h[0].ep, A);
    reg(tb->h[1].ep, B);
    return tb;
}

static void pair_close(struct mroce_testbed *tb, struct side *A, struct side *B)
{
    free(A->buf);
    free(B->buf);
    mroce_tb_del(tb);
}

static int post_recv(mre_qp *qp, struct side *s, uint32_t off, uint32_t len,
                     uint64_t id, uint16_t stream)
{
    struct mroce_sge sg = {(uint64_t)(uintptr_t)(s->buf + off), len,
                           mre_mr_lkey(s->mr)};
    struct mroce_recv_wr rw = {.wr_id = id,
                               .sg_list = &sg,
                               .num_sge = 1,
                               .stream = stream};
    return mre_qp_post_recv(qp, &rw, NULL);
}

static int post_send(mre_qp *qp, struct side *s, enum mroce_wr_opcode op,
                     uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
                     uint64_t id, uint16_t stream, mroce_tstamp now)
{
    struct mroce_sge sg = {(uint64_t)(uintptr_t)(s->buf + off), len,
                           mre_mr_lkey(s->mr)};
    struct mroce_send_wr w = {.wr_id = id,
                              .sg_list = &sg,
                              .num_sge = 1,
                              .opcode = op,
                              .send_flags = MROCE_SEND_SIGNALED,
                              .remote_addr = raddr,
                              .rkey = rkey,
                              .compare_add = 1,
                              .stream = stream};
    return mre_qp_post_send(qp, &w, NULL, now);
}

/* --- each stream completes in its own posting order --- */

#define NS 8
#define PER 12

static void order_run(double loss, double reorder, double dup, uint64_t seed)
{
    mre_qp *qa, *qb;
    struct side A, B;
    struct mroce_testbed *tb = pair_open(loss, reorder, dup, seed, NS, &qa, &qb,
                                         &A, &B);
    if (!tb)
        return;
    CHECK_EQ(qa->nstreams, NS);
    for (uint32_t i = 0; i < BUFSZ; i++)
        A.buf[i] = (uint8_t)(i * 7 + 3);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    /* Message k of stream s: a SEND of 1..3 packets, or a WRITE, a READ or
     * a FETCH_ADD every fourth, interleaved across streams. */
    int nrecv = 0;
    for (int k = 0; k < PER; k++)
        for (int s = 0; s < NS; s++) {
            uint32_t slot = (uint32_t)(s * PER + k) * 4096;
            uint64_t id = (uint64_t)s << 32 | (uint32_t)k;
            uint32_t len = 1 + (uint32_t)((k * 1031 + s * 97) % 3000);
            int kind = (k + s) % 4;
            if (kind == 3) {
                CHECK(post_recv(qb, &B, slot, 4096, id, (uint16_t)s) == 0);
                nrecv++;
            }
            CHECK(
                post_send(qa, &A,
                          kind == 0   ? MROCE_WR_WRITE
                          : kind == 1 ? MROCE_WR_READ
                          : kind == 2 ? MROCE_WR_FETCH_ADD
                                      : MROCE_WR_SEND,
                          kind == 2 ? 0x80000 + slot / 8 : slot,
                          kind == 2 ? 8 : len,
                          (uint64_t)(uintptr_t)(B.buf +
                                                (kind == 2
                                                     ? 0xc0000 + (uint32_t)s * 8
                                                     : slot)),
                          mre_mr_rkey(B.mr), id, (uint16_t)s, now) == 0);
        }
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, NS * PER, LIMIT));
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, nrecv, LIMIT));
    int next[NS] = {0}, nextr[NS] = {0}, got = 0;
    struct mroce_wc wc;
    while (mre_cq_poll(tb->h[0].scq, 1, &wc) == 1) {
        int s = (int)(wc.wr_id >> 32), k = (int)(uint32_t)wc.wr_id;
        CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        CHECK_EQ(wc.stream, (uint64_t)s);
        if (s < NS) {
            CHECK_EQ(k, next[s]); /* SEM-33: posting order in the stream */
            next[s] = k + 1;
        }
        got++;
    }
    CHECK_EQ(got, NS * PER);
    got = 0;
    while (mre_cq_poll(tb->h[1].rcq, 1, &wc) == 1) {
        int s = (int)(wc.wr_id >> 32), k = (int)(uint32_t)wc.wr_id;
        CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        CHECK_EQ(wc.stream, (uint64_t)s);
        if (s < NS) {
            CHECK(k >= nextr[s]);
            nextr[s] = k + 1;
            uint32_t slot = (uint32_t)(s * PER + k) * 4096;
            uint32_t len = 1 + (uint32_t)((k * 1031 + s * 97) % 3000);
            CHECK_EQ(wc.byte_len, len);
            CHECK(memcmp(A.buf + slot, B.buf + slot, len) == 0);
        }
        got++;
    }
    CHECK_EQ(got, nrecv);
    /* FETCH_ADD of 1 per atomic WR of each stream. */
    for (int s = 0; s < NS; s++) {
        uint64_t v;
        memcpy(&v, B.buf + 0xc0000 + (uint32_t)s * 8, 8);
        uint64_t want = 0;
        for (int k = 0; k < PER; k++)
            want += (k + s) % 4 == 2;
        CHECK_EQ(v, want);
    }
    pair_close(tb, &A, &B);
}

static void case_order_clean(void)
{
    order_run(0, 0, 0, 11);
}

static void case_order_lossy(void)
{
    order_run(0.05, 0.05, 0.02, 12);
    order_run(0.15, 0.1, 0.05, 13);
}

/* --- no head-of-line blocking across streams --- */

struct blocker {
    int on;            /* drop stream 1's requests while set */
    uint16_t stream;   /* stream whose requests are dropped */
    uint64_t dropped;  /* packets dropped */
    uint64_t naks[4];  /* NAKs seen, by stream */
    uint64_t streamed; /* data packets carrying STREAM */
};

static int block_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct blocker *b = user;
    struct mrw_pkt pkt;
    if (mrw_pkt_decode(&pkt, p->buf, p->len) != 0)
        return MROCE_NETDRIVE_PASS;
    if (pkt.base.opcode == MROCE_OP_NAK && pkt.u.nak.stream < 4)
        b->naks[pkt.u.nak.stream]++;
    if (pkt.base.flags & MROCE_F_STREAM)
        b->streamed++;
    int req = pkt.base.opcode >= MROCE_OP_SEND &&
              pkt.base.opcode <= MROCE_OP_CMP_SWAP &&
              pkt.base.opcode != MROCE_OP_READ_RESP;
    if (req && b->on && pkt.u.rq.req.stream == b->stream) {
        b->dropped++;
        return MROCE_NETDRIVE_DROP;
    }
    return MROCE_NETDRIVE_PASS;
}

static int count_stream(mre_cq *cq, uint16_t stream, struct mroce_wc *keep,
                        int *nkeep)
{
    struct mroce_wc wc;
    int n = 0;
    while (mre_cq_poll(cq, 1, &wc) == 1) {
        keep[(*nkeep)++] = wc;
        n += wc.stream == stream;
    }
    return n;
}

static void case_no_hol(void)
{
    mre_qp *qa, *qb;
    struct side A, B;
    struct mroce_testbed *tb = pair_open(0, 0, 0, 21, 4, &qa, &qb, &A, &B);
    if (!tb)
        return;
    struct blocker blk = {.on = 1, .stream = 1};
    mroce_netdrive_set_tx_hook(tb->d, block_hook, &blk);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    /* Stream 1 first: a 3-packet SEND, then 6 SENDs and a READ on 2. */
    for (int k = 0; k < 2; k++)
        CHECK(post_recv(qb, &B, 65536 * (uint32_t)k, 4096, 100 + (uint64_t)k,
                        1) == 0);
    for (int k = 0; k < 6; k++)
        CHECK(post_recv(qb, &B, 200000 + 4096 * (uint32_t)k, 4096,
                        200 + (uint64_t)k, 2) == 0);
    CHECK(post_send(qa, &A, MROCE_WR_SEND, 0, 3000, 0, 0, 1, 1, now) == 0);
    CHECK(post_send(qa, &A, MROCE_WR_SEND, 0, 100, 0, 0, 2, 1, now) == 0);
    for (int k = 0; k < 6; k++)
        CHECK(post_send(qa, &A, MROCE_WR_SEND, 4096, 2000, 0, 0,
                        10 + (uint64_t)k, 2, now) == 0);
    CHECK(post_send(qa, &A, MROCE_WR_READ, 8192, 1500,
                    (uint64_t)(uintptr_t)B.buf + 300000, mre_mr_rkey(B.mr), 20,
                    2, now) == 0);
    /* Stream 2 completes on both sides while every packet of stream 1 is
     * lost (its requester retransmits them again and again). */
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 7, 50000000));
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, 6, 50000000));
    struct mroce_wc keep[32];
    int nk = 0;
    CHECK_EQ(count_stream(tb->h[0].scq, 2, keep, &nk), 7);
    CHECK_EQ(nk, 7); /* nothing of stream 1 */
    nk = 0;
    CHECK_EQ(count_stream(tb->h[1].rcq, 2, keep, &nk), 6);
    CHECK_EQ(nk, 6);
    CHECK(blk.dropped > 3); /* retransmissions were dropped too */
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
    /* Stream 1 then completes, in its order. */
    blk.on = 0;
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 2, LIMIT));
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, 2, LIMIT));
    nk = 0;
    CHECK_EQ(count_stream(tb->h[0].scq, 1, keep, &nk), 2);
    CHECK_EQ(keep[0].wr_id, 1);
    CHECK_EQ(keep[1].wr_id, 2);
    nk = 0;
    CHECK_EQ(count_stream(tb->h[1].rcq, 1, keep, &nk), 2);
    CHECK_EQ(keep[0].wr_id, 100);
    CHECK_EQ(keep[0].byte_len, 3000);
    CHECK_EQ(keep[1].wr_id, 101);
    CHECK(memcmp(A.buf, B.buf, 3000) == 0);
    pair_close(tb, &A, &B);
}

/* The same loss on a QP of one stream does hold the later messages: the
 * case above shows what streams change. */
static void case_one_stream_blocks(void)
{
    mre_qp *qa, *qb;
    struct side A, B;
    struct mroce_testbed *tb = pair_open(0, 0, 0, 22, 1, &qa, &qb, &A, &B);
    if (!tb)
        return;
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    for (int k = 0; k < 4; k++)
        CHECK(post_recv(qb, &B, 4096 * (uint32_t)k, 4096, (uint64_t)k, 0) == 0);
    struct blocker blk = {.on = 1, .stream = 0};
    mroce_netdrive_set_tx_hook(tb->d, block_hook, &blk);
    CHECK(post_send(qa, &A, MROCE_WR_SEND, 0, 100, 0, 0, 1, 0, now) == 0);
    mroce_netdrive_run_until(tb->d, now + 200000);
    blk.on = 0;
    for (int k = 0; k < 3; k++)
        CHECK(post_send(qa, &A, MROCE_WR_SEND, 0, 100, 0, 0, 2 + (uint64_t)k, 0,
                        now) == 0);
    /* Released only once the first message's retransmission arrives. */
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, 4, LIMIT));
    struct mroce_wc wc;
    for (int k = 0; k < 4; k++) {
        CHECK(mre_cq_poll(tb->h[1].rcq, 1, &wc) == 1);
        CHECK_EQ(wc.wr_id, (uint64_t)k);
    }
    CHECK_EQ(blk.streamed, 0);
    pair_close(tb, &A, &B);
}

/* --- RNR on one stream stalls no other --- */

static void case_rnr_per_stream(void)
{
    mre_qp *qa, *qb;
    struct side A, B;
    struct mroce_testbed *tb = pair_open(0, 0, 0, 31, 4, &qa, &qb, &A, &B);
    if (!tb)
        return;
    struct blocker blk = {.on = 0};
    mroce_netdrive_set_tx_hook(tb->d, block_hook, &blk);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    for (int k = 0; k < 5; k++)
        CHECK(post_recv(qb, &B, 4096 * (uint32_t)k, 4096, 300 + (uint64_t)k,
                        3) == 0);
    /* Stream 1 has no receive posted. */
    CHECK(post_send(qa, &A, MROCE_WR_SEND, 0, 2500, 0, 0, 1, 1, now) == 0);
    for (int k = 0; k < 5; k++)
        CHECK(post_send(qa, &A, MROCE_WR_SEND, 0, 500, 0, 0, 30 + (uint64_t)k,
                        3, now) == 0);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 5, 50000000));
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, 5, 50000000));
    struct mroce_wc keep[16];
    int nk = 0;
    CHECK_EQ(count_stream(tb->h[0].scq, 3, keep, &nk), 5);
    CHECK_EQ(nk, 5);
    nk = 0;
    CHECK_EQ(count_stream(tb->h[1].rcq, 3, keep, &nk), 5);
    CHECK(blk.naks[1] > 0); /* the RNR NAK names stream 1 (SEM-37) */
    CHECK_EQ(blk.naks[3], 0);
    struct mroce_qp_counters c;
    mre_qp_get_counters(qb, &c);
    CHECK(c.rnr_naks_tx > 0);
    /* A receive on stream 1 lets its message through. */
    CHECK(post_recv(qb, &B, 65536, 4096, 101, 1) == 0);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, 1, LIMIT));
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 1, LIMIT));
    struct mroce_wc wc;
    CHECK(mre_cq_poll(tb->h[1].rcq, 1, &wc) == 1);
    CHECK_EQ(wc.wr_id, 101);
    CHECK_EQ(wc.stream, 1);
    CHECK_EQ(wc.byte_len, 2500);
    CHECK(mre_cq_poll(tb->h[0].scq, 1, &wc) == 1);
    CHECK_EQ(wc.wr_id, 1);
    CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
    pair_close(tb, &A, &B);
}

/* --- stream IDs out of range --- */

static void case_bad_stream(void)
{
    struct mroce_testbed *tb = bed(0, 0, 0, 41);
    if (!tb)
        return;
    struct mre_qp_attr at;
    attr(&at, MRE_MAX_STREAMS + 1);
    at.send_cq = tb->h[0].scq;
    at.recv_cq = tb->h[0].rcq;
    mre_qp *q;
    CHECK_EQ_INT(mre_qp_new(tb->h[0].ep, &at, &q), MROCE_EINVAL);
    attr(&at, 4);
    at.send_cq = tb->h[0].scq;
    at.recv_cq = tb->h[0].rcq;
    CHECK_EQ_INT(mre_qp_new(tb->h[0].ep, &at, &q), 0);
    struct side A;
    reg(tb->h[0].ep, &A);
    /* Before connection: against the local maximum. */
    CHECK_EQ_INT(post_recv(q, &A, 0, 64, 1, 3), 0);
    CHECK_EQ_INT(post_recv(q, &A, 0, 64, 2, 4), MROCE_EINVAL);
    CHECK_EQ_INT(post_recv(q, &A, 0, 64, 2, 0xffff), MROCE_EINVAL);
    mre_qp_del(q);
    /* Connected at 4: stream 4 and beyond refused, bad_wr names it. */
    mre_qp *qa, *qb;
    CHECK(mroce_tb_connect(tb, 0, 1, &at, &qa, &qb, 100000000) == 0);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    struct mroce_sge sg = {(uint64_t)(uintptr_t)A.buf, 8, mre_mr_lkey(A.mr)};
    struct mroce_send_wr w2 = {.wr_id = 2,
                               .sg_list = &sg,
                               .num_sge = 1,
                               .opcode = MROCE_WR_SEND,
                               .stream = 4};
    struct mroce_send_wr w1 = {.wr_id = 1,
                               .sg_list = &sg,
                               .num_sge = 1,
                               .opcode = MROCE_WR_SEND,
                               .stream = 3,
                               .next = &w2};
    struct mroce_send_wr *bad = NULL;
    CHECK_EQ_INT(mre_qp_post_send(qa, &w1, &bad, now), MROCE_EINVAL);
    CHECK(bad == &w2);
    CHECK_EQ(qa->sq_tail, 1); /* w1 was queued */
    mroce_tb_del(tb);
    free(A.buf);
    /* One stream (the default): any stream but 0 refused. */
    tb = bed(0, 0, 0, 42);
    attr(&at, 1);
    CHECK(mroce_tb_connect(tb, 0, 1, &at, &qa, &qb, 100000000) == 0);
    reg(tb->h[0].ep, &A);
    CHECK_EQ_INT(post_recv(qa, &A, 0, 64, 1, 1), MROCE_EINVAL);
    CHECK_EQ_INT(post_send(qa, &A, MROCE_WR_SEND, 0, 8, 0, 0, 1, 1, now),
                 MROCE_EINVAL);
    mroce_tb_del(tb);
    free(A.buf);
}

/* --- negotiation --- */

struct conn_seen {
    int n;
    uint16_t max_streams[4]; /* per CONNECT packet, in order */
    uint8_t opcode[4];
};

static int conn_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct conn_seen *c = user;
    struct mrw_pkt pkt;
    if (mrw_pkt_decode(&pkt, p->buf, p->len) == 0 &&
        (pkt.base.opcode == MROCE_OP_CONNECT_REQ ||
         pkt.base.opcode == MROCE_OP_CONNECT_RESP) &&
        c->n < 4) {
        c->opcode[c->n] = pkt.base.opcode;
        c->max_streams[c->n++] = pkt.u.conn.max_streams;
    }
    return MROCE_NETDRIVE_PASS;
}

static void negotiate(uint16_t sa, uint16_t sb, uint16_t want)
{
    struct mroce_testbed *tb = bed(0, 0, 0, 50 + sa + sb);
    if (!tb)
        return;
    struct conn_seen seen = {0};
    mroce_netdrive_set_tx_hook(tb->d, conn_hook, &seen);
    struct mre_qp_attr a, b;
    attr(&a, sa);
    attr(&b, sb);
    a.send_cq = tb->h[0].scq;
    a.recv_cq = tb->h[0].rcq;
    b.send_cq = tb->h[1].scq;
    b.recv_cq = tb->h[1].rcq;
    mre_qp *qa, *qb;
    CHECK(mre_qp_new(tb->h[0].ep, &a, &qa) == 0);
    CHECK(mre_qp_new(tb->h[1].ep, &b, &qb) == 0);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    struct mre_addr to;
    mroce_netdrive_addr(1, &to);
    CHECK(mre_qp_listen(qb, now) == 0);
    CHECK(mre_qp_connect(qa, &to, mre_qp_num(qb), now) == 0);
    mroce_netdrive_kick_all(tb->d);
    mroce_netdrive_run_until(tb->d, now + 1000000);
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_RTS);
    CHECK_EQ(mre_qp_state(qb), MROCE_QPS_RTS);
    CHECK_EQ(qa->nstreams, want);
    CHECK_EQ(qb->nstreams, want);
    CHECK(seen.n >= 2);
    /* The extension only from a side of more than one stream. */
    CHECK_EQ(seen.opcode[0], MROCE_OP_CONNECT_REQ);
    CHECK_EQ(seen.max_streams[0], sa > 1 ? sa : 0);
    CHECK_EQ(seen.opcode[1], MROCE_OP_CONNECT_RESP);
    CHECK_EQ(seen.max_streams[1], sb > 1 ? sb : 0);
    struct side A;
    reg(tb->h[0].ep, &A);
    CHECK_EQ_INT(post_send(qa, &A, MROCE_WR_WRITE, 0, 8, 0, 0, 1, want, now),
                 MROCE_EINVAL);
    free(A.buf);
    mroce_tb_del(tb);
}

static void case_negotiate(void)
{
    negotiate(8, 4, 4);
    negotiate(4, 8, 4);
    negotiate(8, 1, 1);
    negotiate(1, 8, 1);
    negotiate(1, 1, 1);
    negotiate(16, 16, 16);
}

/* A WR posted while connecting, on a stream the peer then does not
 * accept, fails the QP with LOC_QP_OP_ERR on that WR. */
static void case_posted_before_connect(void)
{
    struct mroce_testbed *tb = bed(0, 0, 0, 61);
    if (!tb)
        return;
    struct mre_qp_attr a, b;
    attr(&a, 8);
    attr(&b, 2);
    a.send_cq = tb->h[0].scq;
    a.recv_cq = tb->h[0].rcq;
    b.send_cq = tb->h[1].scq;
    b.recv_cq = tb->h[1].rcq;
    mre_qp *qa, *qb;
    CHECK(mre_qp_new(tb->h[0].ep, &a, &qa) == 0);
    CHECK(mre_qp_new(tb->h[1].ep, &b, &qb) == 0);
    struct side A, B;
    reg(tb->h[0].ep, &A);
    reg(tb->h[1].ep, &B);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    struct mre_addr to;
    mroce_netdrive_addr(1, &to);
    CHECK(mre_qp_listen(qb, now) == 0);
    CHECK(post_recv(qb, &B, 0, 64, 9, 1) == 0);
    CHECK(mre_qp_connect(qa, &to, mre_qp_num(qb), now) == 0);
    CHECK(post_send(qa, &A, MROCE_WR_SEND, 0, 8, 0, 0, 1, 1, now) == 0);
    CHECK(post_send(qa, &A, MROCE_WR_SEND, 0, 8, 0, 0, 2, 5, now) == 0);
    mroce_netdrive_kick_all(tb->d);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 2, LIMIT));
    CHECK_EQ(mre_qp_state(qa), MROCE_QPS_ERROR);
    struct mroce_wc wc[2];
    CHECK_EQ(mre_cq_poll(tb->h[0].scq, 2, wc), 2);
    int bad = wc[0].wr_id == 2 ? 0 : 1;
    CHECK_EQ(wc[bad].wr_id, 2);
    CHECK_EQ(wc[bad].status, MROCE_WC_LOC_QP_OP_ERR);
    CHECK_EQ(wc[bad].stream, 5);
    free(A.buf);
    free(B.buf);
    mroce_tb_del(tb);
}

/* --- stream 0 sends today's packets --- */

struct pkt_log {
    uint64_t hash; /* FNV-1a over every data packet, in order */
    uint64_t n;
    uint64_t streamed;
};

static void mix(struct pkt_log *l, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        l->hash = (l->hash ^ b[i]) * 1099511628211ull;
}

/* Hashes every data packet's bytes but its timestamp and CRC: the CONNECTs
 * differ in length by the extension, which shifts every later send time by
 * a few nanoseconds of serialisation. */
static int log_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct pkt_log *l = user;
    struct mrw_pkt pkt;
    if (mrw_pkt_decode(&pkt, p->buf, p->len) != 0 ||
        pkt.base.opcode > MROCE_OP_ATOMIC_RESP)
        return MROCE_NETDRIVE_PASS;
    if (pkt.base.flags & MROCE_F_STREAM)
        l->streamed++;
    /* Base header: bytes 0..7 (version, opcode, flags, QPN) and the PSN;
     * then everything after the base header. */
    mix(l, p->buf, 8);
    mix(l, &pkt.base.psn, sizeof(pkt.base.psn));
    mix(l, &pkt.base.entropy, sizeof(pkt.base.entropy));
    mix(l, p->buf + MROCE_BASE_HDR_LEN,
        p->len - MROCE_BASE_HDR_LEN - MROCE_CRC_LEN);
    l->n++;
    return MROCE_NETDRIVE_PASS;
}

static void stream0_run(uint16_t streams, struct pkt_log *log)
{
    struct mroce_testbed *tb = bed(0, 0, 0, 71);
    if (!tb)
        return;
    log->hash = 1469598103934665603ull;
    mroce_netdrive_set_tx_hook(tb->d, log_hook, log);
    struct mre_qp_attr at;
    attr(&at, streams);
    mre_qp *qa, *qb;
    CHECK(mroce_tb_connect(tb, 0, 1, &at, &qa, &qb, 100000000) == 0);
    /* The same buffers in both runs: packets carry their addresses. */
    static uint8_t bufa[BUFSZ], bufb[BUFSZ];
    struct side A = {bufa, NULL}, B = {bufb, NULL};
    memset(bufa, 0, BUFSZ);
    memset(bufb, 0, BUFSZ);
    const unsigned acc = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
                         MROCE_ACCESS_REMOTE_READ;
    CHECK(mre_mr_reg(tb->h[0].ep, bufa, BUFSZ, acc, &A.mr) == 0);
    CHECK(mre_mr_reg(tb->h[1].ep, bufb, BUFSZ, acc, &B.mr) == 0);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    for (int k = 0; k < 6; k++)
        CHECK(post_recv(qb, &B, 8192 * (uint32_t)k, 8192, (uint64_t)k, 0) == 0);
    for (int k = 0; k < 6; k++) {
        CHECK(post_send(qa, &A, MROCE_WR_SEND, 0, 700 * (uint32_t)k + 1, 0, 0,
                        (uint64_t)k, 0, now) == 0);
        CHECK(post_send(qa, &A, MROCE_WR_WRITE, 0, 5000,
                        (uint64_t)(uintptr_t)B.buf + 100000, mre_mr_rkey(B.mr),
                        100 + (uint64_t)k, 0, now) == 0);
    }
    CHECK(post_send(qa, &A, MROCE_WR_READ, 0, 3000,
                    (uint64_t)(uintptr_t)B.buf + 100000, mre_mr_rkey(B.mr), 200,
                    0, now) == 0);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 13, LIMIT));
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, 6, LIMIT));
    mroce_netdrive_run_idle(tb->d, mroce_netdrive_now(tb->d) + 100000000);
    mroce_tb_del(tb);
}

static void case_stream0_identical(void)
{
    struct pkt_log one = {0}, many = {0};
    stream0_run(1, &one);
    stream0_run(8, &many);
    CHECK(one.n > 20);
    CHECK_EQ(one.n, many.n);
    CHECK_EQ(one.hash, many.hash);
    CHECK_EQ(one.streamed, 0);
    CHECK_EQ(many.streamed, 0);
}

static const struct test_case cases[] = {
    {"order_clean", case_order_clean},
    {"order_lossy", case_order_lossy},
    {"no_hol", case_no_hol},
    {"one_stream_blocks", case_one_stream_blocks},
    {"rnr_per_stream", case_rnr_per_stream},
    {"bad_stream", case_bad_stream},
    {"negotiate", case_negotiate},
    {"posted_before_connect", case_posted_before_connect},
    {"stream0_identical", case_stream0_identical},
};

int main(int argc, char **argv)
{
    return TEST_CASES_MAIN("test_engine_streams", cases, argc, argv);
}
