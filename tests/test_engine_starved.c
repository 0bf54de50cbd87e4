/*
 * test_engine_starved.c - the `starved` input of congestion control
 * (CC-5, CC-19): set on a QP when cwnd held back its packet in a
 * mre_ep_write_pkt() call that sent nothing (the endpoint had nothing
 * else to send, so its link idles because of that window), not when
 * another QP of the endpoint sent instead, and cleared by the next ACK.
 *
 * 2 hosts of the network model, two connections h0 -> h1: A with a 16 KiB
 * initial window, B with 1 MiB.  Packets are pulled from h0's endpoint by
 * hand (and dropped) until it has nothing to send, so the windows, not the
 * network, decide; then the transfer runs in the model to check that the
 * ACKs clear the flag.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"
#include "testbed.h"
#include "testutil.h"

#define SIZE (1u << 20)

/* Pull packets from ep until it has nothing to send; returns how many. */
static unsigned drain(mre_ep *ep, mroce_tstamp now)
{
    static uint8_t buf[9000];
    struct mre_tx_info ti;
    unsigned n = 0;
    while (mre_ep_write_pkt(ep, buf, sizeof buf, &ti, now) > 0)
        n++;
    return n;
}

static void post_write(mre_qp *qp, mre_mr *src, mre_mr *dst, uint8_t *sbuf,
                       uint8_t *dbuf, mroce_tstamp now)
{
    struct mroce_sge sg = {(uint64_t)(uintptr_t)sbuf, SIZE, mre_mr_lkey(src)};
    struct mroce_send_wr wr;
    memset(&wr, 0, sizeof wr);
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.opcode = MROCE_WR_WRITE;
    wr.send_flags = MROCE_SEND_SIGNALED;
    wr.remote_addr = (uint64_t)(uintptr_t)dbuf;
    wr.rkey = mre_mr_rkey(dst);
    CHECK(mre_qp_post_send(qp, &wr, NULL, now) == 0);
}

int main(void)
{
    struct mroce_netdrive_config cfg;
    struct mroce_testbed *tb;
    struct mre_qp_attr at;
    mre_qp *qa, *qb, *ra, *rb;
    mre_mr *msa, *msb, *mda, *mdb;
    uint8_t *sa = calloc(1, SIZE), *sb = calloc(1, SIZE);
    uint8_t *da = calloc(1, SIZE), *db = calloc(1, SIZE);
    mroce_tstamp now;
    unsigned n;

    mroce_netdrive_config_default(&cfg);
    cfg.net.hosts = 2;
    cfg.net.spines = 2;
    cfg.net.seed = 5;
    if (!CHECK(sa && sb && da && db) ||
        !CHECK(mroce_tb_new(&tb, &cfg, NULL) == 0))
        return TESTUTIL_SUMMARY("test_engine_starved");
    mre_qp_attr_default(&at);
    /* Without share requests (CC-30): a sender waiting for its share is
     * held by the request, not by cwnd, and here the windows decide. */
    at.rate_hint = 1;
    at.init_cwnd = 16 * 1024;
    CHECK(mroce_tb_connect(tb, 0, 1, &at, &qa, &ra, 100000000) == 0);
    at.init_cwnd = 1u << 20;
    CHECK(mroce_tb_connect(tb, 0, 1, &at, &qb, &rb, 100000000) == 0);
    mre_ep *ep = tb->h[0].ep;
    mre_mr_reg(ep, sa, SIZE, MROCE_ACCESS_LOCAL_WRITE, &msa);
    mre_mr_reg(ep, sb, SIZE, MROCE_ACCESS_LOCAL_WRITE, &msb);
    mre_mr_reg(tb->h[1].ep, da, SIZE,
               MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE, &mda);
    mre_mr_reg(tb->h[1].ep, db, SIZE,
               MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE, &mdb);
    now = mroce_netdrive_now(tb->d);
    CHECK(!qa->starved && !qb->starved);

    /* A alone: its 16 KiB window runs out and nothing else can go. */
    post_write(qa, msa, mda, sa, da, now);
    n = drain(ep, now);
    CHECK(n >= 2 && n <= 4);
    CHECK(qa->starved);
    CHECK(!qb->starved);

    /* A refused while B sends: not starved.  A is put back first on the
     * ready list (as an ACK would), so that it is asked before B. */
    qa->starved = 0;
    post_write(qb, msb, mdb, sb, db, now);
    mre_ep_mark_ready(ep, qa);
    {
        static uint8_t buf[9000];
        struct mre_tx_info ti;
        CHECK(mre_ep_write_pkt(ep, buf, sizeof buf, &ti, now) > 0);
        CHECK(ti.qp_num == qb->qpn);
    }
    CHECK(!qa->starved); /* refused by cwnd, but the link was busy */
    CHECK(!qb->starved);

    /* B runs until its window holds it too: then B is starved (A, off the
     * ready list until an ACK, was not asked again). */
    n = drain(ep, now);
    CHECK(n > 100);
    CHECK(qb->starved);
    CHECK(!qa->starved);

    /* The packets pulled above were dropped: let the model run the
     * transfers (retransmissions included); ACKs clear the flags and the
     * data arrive.  Both are starved again only if a later pull idles the
     * link, which the transfers' last ACKs then clear. */
    CHECK(mroce_tb_run_until_cq(tb, tb->h[0].scq, 2, 2000000000ull) == 1);
    CHECK(!qa->starved && !qb->starved);
    CHECK(qa->cnt.rx_acks > 0 && qb->cnt.rx_acks > 0);

    mroce_tb_del(tb);
    free(sa);
    free(sb);
    free(da);
    free(db);
    return TESTUTIL_SUMMARY("test_engine_starved");
}
