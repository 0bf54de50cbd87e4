/*
 * test_engine_stream_share.c - what the streams of one QP share at the
 * responder, its receive ring and its placement records, is never held by
 * one stream against the others (SEM-37, SEM-40, SEM-41): receives left
 * posted on an idle stream do not stop a busy stream from reposting; a
 * stream in RNR holds no placement record; and a stream whose oldest
 * message is missing holds at most its share of the records, so a second
 * stream with a hole of its own still places ahead of it.
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

/* Drops the packets of the first message (MSN 0) of each stream in
 * `streams` (a bit mask) while on. */
struct holer {
    int on;
    uint32_t streams;
    uint64_t dropped;
};

static int hole_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct holer *h = user;
    struct mrw_pkt pkt;
    if (!h->on || mrw_pkt_decode(&pkt, p->buf, p->len) != 0)
        return MROCE_NETDRIVE_PASS;
    if (pkt.base.opcode == MROCE_OP_SEND && pkt.u.rq.req.stream < 32 &&
        (h->streams >> pkt.u.rq.req.stream & 1) && pkt.u.rq.req.msn == 0) {
        h->dropped++;
        return MROCE_NETDRIVE_DROP;
    }
    return MROCE_NETDRIVE_PASS;
}

static struct mroce_testbed *pair_open(uint16_t streams, uint32_t rq_depth,
                                       mre_qp **qa, mre_qp **qb, struct side *A,
                                       struct side *B)
{
    struct mroce_netdrive_config cfg;
    mroce_netdrive_config_default(&cfg);
    cfg.net.seed = 5;
    struct mroce_testbed *tb = NULL;
    CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0);
    if (!tb)
        return NULL;
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.mtu = MTU;
    at.npaths = 8;
    at.max_streams = streams;
    at.max_recv_wr = rq_depth;
    CHECK(mroce_tb_connect(tb, 0, 1, &at, qa, qb, 100000000) == 0);
    struct side *s[2] = {A, B};
    for (int i = 0; i < 2; i++) {
        s[i]->buf = calloc(1, BUFSZ);
        CHECK(mre_mr_reg(tb->h[i].ep, s[i]->buf, BUFSZ,
                         MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                         &s[i]->mr) == 0);
    }
    return tb;
}

static void pair_close(struct mroce_testbed *tb, struct side *A, struct side *B)
{
    free(A->buf);
    free(B->buf);
    mroce_tb_del(tb);
}

static int post_recv(mre_qp *qp, struct side *s, uint32_t off, uint64_t id,
                     uint16_t stream)
{
    struct mroce_sge sg = {(uint64_t)(uintptr_t)(s->buf + off), 4096,
                           mre_mr_lkey(s->mr)};
    struct mroce_recv_wr rw = {.wr_id = id,
                               .sg_list = &sg,
                               .num_sge = 1,
                               .stream = stream};
    return mre_qp_post_recv(qp, &rw, NULL);
}

static int post_send(mre_qp *qp, struct side *s, uint32_t len, uint64_t id,
                     uint16_t stream, mroce_tstamp now)
{
    struct mroce_sge sg = {(uint64_t)(uintptr_t)s->buf, len,
                           mre_mr_lkey(s->mr)};
    struct mroce_send_wr w = {.wr_id = id,
                              .sg_list = &sg,
                              .num_sge = 1,
                              .opcode = MROCE_WR_SEND,
                              .send_flags = MROCE_SEND_SIGNALED,
                              .stream = stream};
    return mre_qp_post_send(qp, &w, NULL, now);
}

/* Placement records the responder's stream holds now. */
static int records(const mre_qp *qp, uint16_t stream)
{
    int n = 0;
    for (int i = 0; i < MRE_STREAM_MSGS; i++)
        n += qp->smsgs[i].used && qp->smsgs[i].stream == stream;
    return n;
}

/* Polls every completion of cq, checking that those of `stream` come in
 * wr_id order from *next on and succeed; returns how many it polled. */
static int poll_in_order(mre_cq *cq, uint16_t stream, uint64_t *next)
{
    struct mroce_wc wc;
    int n = 0;
    while (mre_cq_poll(cq, 1, &wc) == 1) {
        CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        if (wc.stream == stream) {
            CHECK_EQ(wc.wr_id, *next);
            ++*next;
        }
        n++;
    }
    return n;
}

/* --- an idle stream's receives do not pin the ring (SEM-40) --- */

#define DEPTH 8

static void case_idle_stream_ring(void)
{
    mre_qp *qa, *qb;
    struct side A, B;
    struct mroce_testbed *tb = pair_open(2, DEPTH, &qa, &qb, &A, &B);
    if (!tb)
        return;
    /* Half the ring waits on stream 1, which receives nothing for now. */
    for (int k = 0; k < DEPTH / 2; k++)
        CHECK_EQ_INT(post_recv(qb, &B, 4096 * (uint32_t)k, 100 + (uint64_t)k,
                               1),
                     0);
    /* Stream 0 receives one message at a time, reposting each time: many
     * more receives than the ring holds pass through the other half. */
    uint64_t rnext = 0, snext = 0;
    for (int k = 0; k < 4 * DEPTH; k++) {
        mroce_tstamp now = mroce_netdrive_now(tb->d);
        CHECK_EQ_INT(post_recv(qb, &B, 65536, (uint64_t)k, 0), 0);
        CHECK_EQ_INT(post_send(qa, &A, 300, (uint64_t)k, 0, now), 0);
        CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, 1, LIMIT));
        CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 1, LIMIT));
        CHECK_EQ(poll_in_order(tb->h[1].rcq, 0, &rnext), 1);
        CHECK_EQ(poll_in_order(tb->h[0].scq, 0, &snext), 1);
    }
    CHECK_EQ(rnext, 4 * DEPTH);
    /* The ring is full again with stream 1's receives and a filler. */
    for (int k = DEPTH / 2; k < DEPTH; k++)
        CHECK_EQ_INT(post_recv(qb, &B, 4096 * (uint32_t)k, 100 + (uint64_t)k,
                               1),
                     0);
    CHECK_EQ_INT(post_recv(qb, &B, 0, 999, 0), MROCE_EFULL);
    /* Stream 1's receives, posted first, are still there and in order. */
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    for (int k = 0; k < DEPTH; k++)
        CHECK_EQ_INT(post_send(qa, &A, 200 + (uint32_t)k, 100 + (uint64_t)k, 1,
                               now),
                     0);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, DEPTH, LIMIT));
    rnext = 100;
    CHECK_EQ(poll_in_order(tb->h[1].rcq, 1, &rnext), DEPTH);
    CHECK_EQ(rnext, 100 + DEPTH);
    CHECK_EQ(qb->rq_tail - qb->rq_head, 0);
    CHECK_EQ(qb->state, MROCE_QPS_RTS);
    pair_close(tb, &A, &B);
}

/* --- a stream in RNR holds no placement record (SEM-41) --- */

#define FAN 40

static void case_rnr_holds_no_record(void)
{
    mre_qp *qa, *qb;
    struct side A, B;
    struct mroce_testbed *tb = pair_open(4, 256, &qa, &qb, &A, &B);
    if (!tb)
        return;
    /* More messages on stream 1 than it has receives (none). */
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    for (int k = 0; k < FAN; k++)
        CHECK_EQ_INT(post_send(qa, &A, 100, 1000 + (uint64_t)k, 1, now), 0);
    mroce_netdrive_run_until(tb->d, now + 2000000);
    struct mroce_qp_counters c;
    mre_qp_get_counters(qb, &c);
    CHECK(c.rnr_naks_tx > 0);
    CHECK_EQ(records(qb, 1), 0);
    /* Stream 2 loses its first message for a while: its later ones need
     * records, and find them. */
    struct holer h = {.on = 1, .streams = 1u << 2};
    mroce_netdrive_set_tx_hook(tb->d, hole_hook, &h);
    uint64_t drop0 = c.drop_state;
    now = mroce_netdrive_now(tb->d);
    for (int k = 0; k < 8; k++) {
        CHECK_EQ_INT(post_recv(qb, &B, 4096 * (uint32_t)k, (uint64_t)k, 2), 0);
        CHECK_EQ_INT(post_send(qa, &A, 500, (uint64_t)k, 2, now), 0);
    }
    mroce_netdrive_run_until(tb->d, now + 200000);
    CHECK(h.dropped > 0);
    CHECK_EQ(records(qb, 2), 7);
    h.on = 0;
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, 8, LIMIT));
    uint64_t rnext = 0;
    CHECK_EQ(poll_in_order(tb->h[1].rcq, 2, &rnext), 8);
    mre_qp_get_counters(qb, &c);
    CHECK_EQ(c.drop_state, drop0); /* no packet of stream 2 refused */
    /* Stream 1's receives come: all its messages land, in order. */
    for (int k = 0; k < FAN; k++)
        CHECK_EQ_INT(post_recv(qb, &B, 65536 + 4096 * (uint32_t)k,
                               1000 + (uint64_t)k, 1),
                     0);
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, FAN, LIMIT));
    rnext = 1000;
    CHECK_EQ(poll_in_order(tb->h[1].rcq, 1, &rnext), FAN);
    CHECK_EQ(records(qb, 1), 0);
    CHECK_EQ(qb->state, MROCE_QPS_RTS);
    pair_close(tb, &A, &B);
}

/* --- one stream holds at most its share of the records (SEM-41) --- */

#define AHEAD 30

static void case_record_share(void)
{
    mre_qp *qa, *qb;
    struct side A, B;
    struct mroce_testbed *tb = pair_open(4, 256, &qa, &qb, &A, &B);
    if (!tb)
        return;
    struct holer h = {.on = 1, .streams = 1u << 1};
    mroce_netdrive_set_tx_hook(tb->d, hole_hook, &h);
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    for (int k = 0; k < AHEAD; k++) {
        CHECK_EQ_INT(post_recv(qb, &B, 4096 * (uint32_t)k, (uint64_t)k, 1), 0);
        CHECK_EQ_INT(post_send(qa, &A, 300, (uint64_t)k, 1, now), 0);
    }
    mroce_netdrive_run_until(tb->d, now + 200000);
    CHECK(h.dropped > 0);
    CHECK(records(qb, 1) > 0);
    CHECK(records(qb, 1) <= MRE_STREAM_MSGS_PER_STREAM);
    /* Stream 3 with a hole of its own still places ahead of it. */
    h.streams |= 1u << 3; /* stream 1's hole stays */
    now = mroce_netdrive_now(tb->d);
    for (int k = 0; k < 6; k++) {
        CHECK_EQ_INT(post_recv(qb, &B, 0x80000 + 4096 * (uint32_t)k,
                               500 + (uint64_t)k, 3),
                     0);
        CHECK_EQ_INT(post_send(qa, &A, 300, 500 + (uint64_t)k, 3, now), 0);
    }
    mroce_netdrive_run_until(tb->d, now + 200000);
    CHECK_EQ(records(qb, 3), 5);
    h.on = 0;
    CHECK(mroce_tb_run_until_cq(tb, tb->h[1].rcq, AHEAD + 6, LIMIT));
    uint64_t n1 = 0, n3 = 500;
    struct mroce_wc wc;
    int got = 0;
    while (mre_cq_poll(tb->h[1].rcq, 1, &wc) == 1) {
        CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        uint64_t *next = wc.stream == 1 ? &n1 : &n3;
        CHECK_EQ(wc.wr_id, *next);
        ++*next;
        got++;
    }
    CHECK_EQ(got, AHEAD + 6);
    CHECK_EQ(records(qb, 1) + records(qb, 3), 0);
    pair_close(tb, &A, &B);
}

static const struct test_case cases[] = {
    {"idle_stream_ring", case_idle_stream_ring},
    {"rnr_holds_no_record", case_rnr_holds_no_record},
    {"record_share", case_record_share},
};

int main(int argc, char **argv)
{
    return TEST_CASES_MAIN("test_engine_stream_share", cases, argc, argv);
}
