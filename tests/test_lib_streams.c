/*
 * test_lib_streams.c - streams through libmroce over loopback UDP: QPs
 * created with max_streams 4 (in mroce_qp_init_attr.eng), receives and
 * sends naming streams, completions reporting them, a stream beyond the
 * connection refused at post time (SEM-30..37).
 */
#include <stdlib.h>
#include <string.h>

#include "libpair.h"
#include "testutil.h"

#define BUF (1u << 16)

/* A side like libpair's side_open, with max_streams and progress thread. */
static int open_side(struct side *s, uint16_t streams)
{
    memset(s, 0, sizeof(*s));
    int rc = libpair_open_dev(&s->dev, MROCE_PROGRESS_THREAD);
    if (rc < 0)
        return rc;
    struct mroce_qp_init_attr qa;
    if ((rc = mroce_pd_alloc(s->dev, &s->pd)) < 0 ||
        (rc = mroce_create_cq(s->dev, 256, &s->cq)) < 0)
        return rc;
    mroce_qp_init_attr_default(&qa);
    qa.eng.max_streams = streams;
    qa.send_cq = s->cq;
    qa.recv_cq = s->cq;
    if ((rc = mroce_create_qp(s->pd, &qa, &s->qp)) < 0)
        return rc;
    s->buf = aligned_alloc(4096, BUF);
    if (!s->buf)
        return MROCE_ENOMEM;
    memset(s->buf, 0, BUF);
    s->buf_len = BUF;
    return mroce_reg_mr(s->pd, s->buf, BUF,
                        MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                        &s->mr);
}

static int wait_wc(struct side *s, struct mroce_wc *wc)
{
    uint64_t end = now_ms() + 3000;
    while (now_ms() < end) {
        int n = mroce_poll_cq(s->cq, 1, wc);
        if (n != 0)
            return n;
        mroce_cq_wait(s->cq, 20);
    }
    return 0;
}

static int post(struct side *s, enum mroce_wr_opcode op, uint64_t id,
                uint32_t off, uint32_t len, uint16_t stream)
{
    struct mroce_sge sg = {(uintptr_t)s->buf + off, len, mroce_mr_lkey(s->mr)};
    struct mroce_send_wr w = {.wr_id = id,
                              .sg_list = &sg,
                              .num_sge = 1,
                              .opcode = op,
                              .send_flags = MROCE_SEND_SIGNALED,
                              .stream = stream};
    struct mroce_send_wr *bad;
    return mroce_post_send(s->qp, &w, &bad);
}

static int post_recv(struct side *s, uint64_t id, uint32_t off, uint32_t len,
                     uint16_t stream)
{
    struct mroce_sge sg = {(uintptr_t)s->buf + off, len, mroce_mr_lkey(s->mr)};
    struct mroce_recv_wr w = {.wr_id = id,
                              .sg_list = &sg,
                              .num_sge = 1,
                              .stream = stream};
    struct mroce_recv_wr *bad;
    return mroce_post_recv(s->qp, &w, &bad);
}

int main(void)
{
    struct side a, b;
    if (!CHECK(open_side(&a, 4) == 0) || !CHECK(open_side(&b, 4) == 0) ||
        !connect_pair(&a, &b))
        return TESTUTIL_SUMMARY("test_lib_streams");
    for (uint32_t i = 0; i < 4096; i++)
        a.buf[i] = (uint8_t)(i * 13 + 1);
    /* Receives: stream 2 then stream 1 then stream 0. */
    CHECK_EQ_INT(post_recv(&b, 20, 8192, 4096, 2), 0);
    CHECK_EQ_INT(post_recv(&b, 10, 0, 4096, 1), 0);
    CHECK_EQ_INT(post_recv(&b, 30, 16384, 4096, 0), 0);
    CHECK_EQ_INT(post_recv(&b, 40, 0, 64, 4), MROCE_EINVAL);
    /* Sends: stream 1 (to receive 10), 0 (30), 2 (20). */
    CHECK_EQ_INT(post(&a, MROCE_WR_SEND, 1, 0, 3000, 1), 0);
    CHECK_EQ_INT(post(&a, MROCE_WR_SEND, 2, 100, 200, 0), 0);
    CHECK_EQ_INT(post(&a, MROCE_WR_SEND, 3, 1000, 1500, 2), 0);
    CHECK_EQ_INT(post(&a, MROCE_WR_SEND, 4, 0, 8, 4), MROCE_EINVAL);
    uint32_t want_len[3] = {3000, 200, 1500}, want_off[3] = {0, 100, 1000};
    uint32_t dst[3] = {0, 16384, 8192};
    uint16_t want_stream[3] = {1, 0, 2};
    int seen_send = 0, seen_recv = 0;
    struct mroce_wc wc;
    while (seen_send + seen_recv < 6 && wait_wc(&a, &wc) == 1) {
        CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        CHECK(wc.wr_id >= 1 && wc.wr_id <= 3);
        if (wc.wr_id >= 1 && wc.wr_id <= 3)
            CHECK_EQ(wc.stream, want_stream[wc.wr_id - 1]);
        seen_send++;
        if (seen_send == 3)
            break;
    }
    while (seen_recv < 3 && wait_wc(&b, &wc) == 1) {
        CHECK_EQ(wc.status, MROCE_WC_SUCCESS);
        int k = wc.wr_id == 10   ? 0
                : wc.wr_id == 30 ? 1
                : wc.wr_id == 20 ? 2
                                 : -1;
        if (!CHECK(k >= 0))
            break;
        CHECK_EQ(wc.stream, want_stream[k]);
        CHECK_EQ(wc.byte_len, want_len[k]);
        CHECK(memcmp(b.buf + dst[k], a.buf + want_off[k], want_len[k]) == 0);
        seen_recv++;
    }
    CHECK_EQ(seen_send, 3);
    CHECK_EQ(seen_recv, 3);
    side_fini(&a);
    side_fini(&b);
    return TESTUTIL_SUMMARY("test_lib_streams");
}
