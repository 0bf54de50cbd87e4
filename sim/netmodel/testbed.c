/*
 * testbed.c - N engines on the network model.  See testbed.h.
 */
#include "testbed.h"

#include <stdlib.h>
#include <string.h>

/* Peek at the CQ's fill level: the engine's internal layout is visible to
 * this test scaffolding on purpose (it is built from the same tree). */
#include "../../src/engine/engine_int.h"

static void *std_calloc(size_t n, size_t sz, void *user)
{
    (void)user;
    return calloc(n, sz);
}
static void std_free(void *p, void *user)
{
    (void)user;
    free(p);
}
const struct mre_mem mroce_tb_stdmem = {std_calloc, std_free, NULL};

int mroce_tb_new(struct mroce_testbed **ptb,
                 const struct mroce_netdrive_config *cfg,
                 const struct mre_ep_config *epcfg)
{
    struct mroce_testbed *tb = calloc(1, sizeof(*tb));
    if (!tb)
        return MROCE_ENOMEM;
    int rc = mroce_netdrive_new(&tb->d, cfg);
    if (rc < 0) {
        free(tb);
        return rc;
    }
    tb->nhosts = cfg->net.hosts;
    tb->h = calloc(tb->nhosts, sizeof(*tb->h));
    if (!tb->h) {
        mroce_tb_del(tb);
        return MROCE_ENOMEM;
    }
    for (uint32_t i = 0; i < tb->nhosts; i++) {
        struct mre_ep_config ec;
        if (epcfg)
            ec = *epcfg;
        else
            mre_ep_config_default(&ec);
        ec.mem = mroce_tb_stdmem;
        ec.rand = mroce_netdrive_rand;
        ec.rand_user = tb->d;
        if (mroce_net_planes(mroce_netdrive_net(tb->d)) > 1)
            mroce_netdrive_ep_planes(&ec, i,
                                     mroce_net_planes(
                                         mroce_netdrive_net(tb->d)));
        if ((rc = mre_ep_new(&tb->h[i].ep, &ec)) < 0 ||
            (rc = mre_cq_new(tb->h[i].ep, 1024, &tb->h[i].scq)) < 0 ||
            (rc = mre_cq_new(tb->h[i].ep, 1024, &tb->h[i].rcq)) < 0 ||
            (rc = mroce_netdrive_attach(tb->d, i, tb->h[i].ep)) < 0) {
            mroce_tb_del(tb);
            return rc;
        }
    }
    *ptb = tb;
    return 0;
}

void mroce_tb_del(struct mroce_testbed *tb)
{
    if (!tb)
        return;
    if (tb->h)
        for (uint32_t i = 0; i < tb->nhosts; i++)
            mre_ep_del(tb->h[i].ep);
    free(tb->h);
    mroce_netdrive_del(tb->d);
    free(tb);
}

struct pair_wait {
    mre_qp *a, *b;
};

static int not_connected(void *user)
{
    struct pair_wait *w = user;
    return !(mre_qp_state(w->a) == MROCE_QPS_RTS &&
             mre_qp_state(w->b) == MROCE_QPS_RTS &&
             mre_qp_remote_qpn(w->a) != 0) &&
           mre_qp_state(w->a) != MROCE_QPS_ERROR;
}

int mroce_tb_connect(struct mroce_testbed *tb, uint32_t a, uint32_t b,
                     const struct mre_qp_attr *attr, mre_qp **qa, mre_qp **qb,
                     mroce_tstamp limit)
{
    struct mre_qp_attr at;
    if (attr)
        at = *attr;
    else
        mre_qp_attr_default(&at);
    int rc;
    at.send_cq = tb->h[a].scq;
    at.recv_cq = tb->h[a].rcq;
    if ((rc = mre_qp_new(tb->h[a].ep, &at, qa)) < 0)
        return rc;
    at.send_cq = tb->h[b].scq;
    at.recv_cq = tb->h[b].rcq;
    if ((rc = mre_qp_new(tb->h[b].ep, &at, qb)) < 0)
        return rc;
    mroce_tstamp now = mroce_netdrive_now(tb->d);
    struct mre_addr to;
    mroce_netdrive_addr(b, &to);
    if ((rc = mre_qp_listen(*qb, now)) < 0 ||
        (rc = mre_qp_connect(*qa, &to, mre_qp_num(*qb), now)) < 0)
        return rc;
    struct pair_wait w = {*qa, *qb};
    mroce_netdrive_kick_all(tb->d);
    mroce_netdrive_run_while(tb->d, not_connected, &w, now + limit);
    return not_connected(&w) || mre_qp_state(*qa) != MROCE_QPS_RTS
               ? MROCE_ESTATE
               : 0;
}

int mroce_tb_cq_count(const mre_cq *cq)
{
    return (int)cq->count;
}

struct cq_wait {
    const mre_cq *cq;
    int n;
};

static int cq_short(void *user)
{
    struct cq_wait *w = user;
    return (int)w->cq->count < w->n;
}

int mroce_tb_run_until_cq(struct mroce_testbed *tb, mre_cq *cq, int n,
                          mroce_tstamp limit)
{
    struct cq_wait w = {cq, n};
    mroce_netdrive_kick_all(tb->d);
    return mroce_netdrive_run_while(tb->d, cq_short, &w,
                                    mroce_netdrive_now(tb->d) + limit);
}
