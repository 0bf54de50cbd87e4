/*
 * xfer.h - the bulk transfer that the path-failure tests run through the
 * network model: host 0 WRITEs `size` bytes in 1 MiB chunks to host 1, with
 * a 32 KiB SEND after every quarter, all signaled; then every completion is
 * checked (success, posting order) and the data compared byte for byte.
 * test_engine_blackhole and test_engine_slowpath share it; each brings its
 * own fabric fault and its own observations (hooks and a per-step callback).
 * Header-only and static, like testutil.h.
 */
#ifndef MROCE_TEST_XFER_H
#define MROCE_TEST_XFER_H

#include <stdlib.h>
#include <string.h>

#include "testbed.h"
#include "testutil.h"

#define XFER_CHUNK (1u << 20)
#define XFER_SEND_LEN (32u << 10)
#define XFER_NSENDS 4

struct xfer {
    uint64_t size, sbytes;    /* WRITE bytes, SEND bytes */
    uint32_t nwrites, nwr;    /* WRITE WRs, all WRs */
    uint8_t *src, *dst, *rcv; /* host 0 source; host 1 target, receives */
    mre_mr *msrc, *mdst, *mrcv;
    uint32_t nsend_done, nrecv_done, bad, order;
};

static TESTUTIL_UNUSED void xfer_fill(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        if ((i & 7) == 0)
            s = testutil_rand64(&s);
        p[i] = (uint8_t)(s >> (8 * (i & 7)));
    }
}

/* The spine (of `spines`) that most of qp's path entropies hash onto for
 * host 0 -> host 1; *npaths_on gets how many. */
static TESTUTIL_UNUSED int xfer_busiest_spine(mroce_net *net, mre_qp *qp,
                                              int spines, int *npaths_on)
{
    struct mroce_path_stats ps[256];
    int n = mre_qp_path_stats(qp, ps, 256);
    int cnt[256] = {0}, best = 0;
    for (int i = 0; i < n; i++)
        cnt[mroce_net_spine_of(net, 0, 1, ps[i].entropy) % (unsigned)spines]++;
    for (int s = 1; s < spines; s++)
        if (cnt[s] > cnt[best])
            best = s;
    *npaths_on = cnt[best];
    return best;
}

/* Buffers (filled from seed) and regions on both hosts. */
static TESTUTIL_UNUSED void xfer_setup(struct mroce_testbed *tb, struct xfer *x,
                                       uint64_t size, uint64_t seed)
{
    memset(x, 0, sizeof(*x));
    x->size = size;
    x->sbytes = (uint64_t)XFER_NSENDS * XFER_SEND_LEN;
    x->nwrites = (uint32_t)(size / XFER_CHUNK);
    x->nwr = x->nwrites + XFER_NSENDS;
    x->src = malloc(size + x->sbytes);
    x->dst = calloc(1, size);
    x->rcv = calloc(1, x->sbytes);
    xfer_fill(x->src, size + x->sbytes, seed);
    CHECK(mre_mr_reg(tb->h[0].ep, x->src, size + x->sbytes,
                     MROCE_ACCESS_LOCAL_WRITE, &x->msrc) == 0);
    CHECK(mre_mr_reg(tb->h[1].ep, x->dst, size,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                     &x->mdst) == 0);
    CHECK(mre_mr_reg(tb->h[1].ep, x->rcv, x->sbytes, MROCE_ACCESS_LOCAL_WRITE,
                     &x->mrcv) == 0);
}

/* Post the receives on qb and the WRITE/SEND mix on qa. */
static TESTUTIL_UNUSED void xfer_post(struct xfer *x, mre_qp *qa, mre_qp *qb,
                                      mroce_tstamp now)
{
    for (uint32_t i = 0; i < XFER_NSENDS; i++) {
        struct mroce_sge sg = {(uint64_t)(uintptr_t)(x->rcv +
                                                     i * XFER_SEND_LEN),
                               XFER_SEND_LEN, mre_mr_lkey(x->mrcv)};
        struct mroce_recv_wr rw = {.wr_id = i, .sg_list = &sg, .num_sge = 1};
        CHECK(mre_qp_post_recv(qb, &rw, NULL) == 0);
    }
    /* WRITEs with a SEND after every nwrites/NSENDS of them. */
    uint32_t per = x->nwrites / XFER_NSENDS, w = 0, s = 0;
    for (uint32_t i = 0; i < x->nwr; i++) {
        struct mroce_sge sg = {0, 0, mre_mr_lkey(x->msrc)};
        struct mroce_send_wr wr = {.wr_id = i,
                                   .sg_list = &sg,
                                   .num_sge = 1,
                                   .send_flags = MROCE_SEND_SIGNALED};
        if (w > 0 && w % per == 0 && s < w / per) {
            sg.addr = (uint64_t)(uintptr_t)(x->src + x->size +
                                            s * XFER_SEND_LEN);
            sg.length = XFER_SEND_LEN;
            wr.opcode = MROCE_WR_SEND;
            s++;
        } else {
            sg.addr = (uint64_t)(uintptr_t)(x->src + (uint64_t)w * XFER_CHUNK);
            sg.length = XFER_CHUNK;
            wr.opcode = MROCE_WR_WRITE;
            wr.remote_addr = (uint64_t)(uintptr_t)(x->dst +
                                                   (uint64_t)w * XFER_CHUNK);
            wr.rkey = mre_mr_rkey(x->mdst);
            w++;
        }
        CHECK(mre_qp_post_send(qa, &wr, NULL, now) == 0);
    }
    CHECK_EQ(w, x->nwrites);
    CHECK_EQ(s, XFER_NSENDS);
}

/* Step the model until every WR and receive completed, one failed, or
 * `limit` ns of model time passed; on_step(user) runs after every step (a
 * test's mid-transfer fault).  Returns 1 if everything completed well. */
static TESTUTIL_UNUSED int xfer_run(struct mroce_testbed *tb, struct xfer *x,
                                    void (*on_step)(void *), void *user,
                                    mroce_tstamp limit)
{
    mroce_tstamp t0 = mroce_netdrive_now(tb->d);
    mroce_netdrive_kick_all(tb->d);
    while (x->nsend_done < x->nwr || x->nrecv_done < XFER_NSENDS) {
        if (!mroce_netdrive_step(tb->d) ||
            mroce_netdrive_now(tb->d) - t0 > limit)
            break;
        if (on_step)
            on_step(user);
        struct mroce_wc wc[32];
        int n = mre_cq_poll(tb->h[0].scq, 32, wc);
        for (int i = 0; i < n; i++, x->nsend_done++) {
            x->bad += wc[i].status != MROCE_WC_SUCCESS;
            x->order += wc[i].wr_id != x->nsend_done;
        }
        n = mre_cq_poll(tb->h[1].rcq, 32, wc);
        for (int i = 0; i < n; i++, x->nrecv_done++) {
            x->bad += wc[i].status != MROCE_WC_SUCCESS ||
                      wc[i].byte_len != XFER_SEND_LEN;
            x->order += wc[i].wr_id != x->nrecv_done;
        }
        if (x->bad)
            break;
    }
    return x->nsend_done == x->nwr && x->nrecv_done == XFER_NSENDS && !x->bad;
}

/* Completion order and the data, byte for byte. */
static TESTUTIL_UNUSED void xfer_check_data(const struct xfer *x)
{
    CHECK_EQ(x->order, 0);
    CHECK(memcmp(x->src, x->dst, x->size) == 0);
    CHECK(memcmp(x->src + x->size, x->rcv, x->sbytes) == 0);
}

static TESTUTIL_UNUSED void xfer_free(struct xfer *x)
{
    free(x->src);
    free(x->dst);
    free(x->rcv);
}

#endif /* MROCE_TEST_XFER_H */
