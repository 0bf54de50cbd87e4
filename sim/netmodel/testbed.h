/*
 * testbed.h - N engines on the network model, ready to connect.
 *
 * The scaffolding that tests, the demo and the engine benchmark share: a
 * network-model driver (netdrive.h) with one endpoint per host, each with a
 * send and a receive completion queue, the standard allocator and the
 * driver's seeded randomness; and a call that connects a QP pair between two
 * hosts by running the real handshake over the model.
 */
#ifndef MROCE_TESTBED_H
#define MROCE_TESTBED_H

#include <mroce/engine.h>

#include "netdrive.h"

struct mroce_tb_host {
    mre_ep *ep;
    mre_cq *scq; /* send completions of every QP on this host */
    mre_cq *rcq; /* receive completions */
};

struct mroce_testbed {
    mroce_netdrive *d;
    uint32_t nhosts;
    struct mroce_tb_host *h; /* nhosts entries */
};

/* The standard allocator for struct mre_mem. */
extern const struct mre_mem mroce_tb_stdmem;

/* Create the driver from cfg (cfg->net.hosts hosts) and one endpoint per
 * host; epcfg may be NULL for defaults (its mem and rand are replaced, and
 * on a fabric of several planes its planes: each endpoint attaches to
 * every plane, mroce_netdrive_ep_planes()). */
int mroce_tb_new(struct mroce_testbed **ptb,
                 const struct mroce_netdrive_config *cfg,
                 const struct mre_ep_config *epcfg);
void mroce_tb_del(struct mroce_testbed *tb);

/* Create a QP on host a and one on host b (attr NULL: defaults), make b
 * listen and a connect, and run the model until both are RTS or `limit` ns of
 * model time pass.  Returns 0, or MROCE_ESTATE if the handshake did not
 * finish (QPs are still returned for inspection). */
int mroce_tb_connect(struct mroce_testbed *tb, uint32_t a, uint32_t b,
                     const struct mre_qp_attr *attr, mre_qp **qa, mre_qp **qb,
                     mroce_tstamp limit);

/* Run until cq has at least n completions queued (does not poll them) or
 * limit ns of model time pass from now; returns 1 if reached. */
int mroce_tb_run_until_cq(struct mroce_testbed *tb, mre_cq *cq, int n,
                          mroce_tstamp limit);

/* Completions waiting in cq (without consuming them). */
int mroce_tb_cq_count(const mre_cq *cq);

#endif /* MROCE_TESTBED_H */
