/*
 * test_prov_ops.c - every operation table of every object the provider
 * makes is complete: each entry is a function (libfabric's inline calls,
 * fi_shutdown among them, jump through them unchecked), an unsupported one
 * answering -FI_ENOSYS.  The objects: fabric, event queue, domain (its
 * fi_ops_domain and fi_ops_mr), AV, CQ, MR, endpoint (fi_ops, fi_ops_ep,
 * fi_ops_cm, fi_ops_msg, fi_ops_tagged, fi_ops_rma, fi_ops_collective, and
 * fi_ops_atomic when the endpoint has one), and a counter, poll set or wait set if the
 * provider opens them.  Each table's size must be that of the table in
 * these headers, so nothing past it is left out.
 *
 * Then the connection calls an RDM endpoint does not use (fi_shutdown,
 * fi_connect, fi_accept, fi_join, ...) return -FI_ENOSYS without
 * crashing, and fi_shutdown leaves the endpoint working (fabtests'
 * fi_cq_data calls it before closing).
 *
 * Needs FI_PROVIDER_PATH to name the directory of libmroce-fi.so (CTest
 * sets it).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_trigger.h>

#include "prov_fi_test.h"

typedef void (*fn_t)(void);

/* Checks that table (an ops struct: a size_t size, then function
 * pointers) has the size of the headers' struct and no NULL entry.
 * Returns 1 if it is complete. */
static int walk(const char *obj, const char *type, const void *table,
                size_t want)
{
    if (!table) {
        fprintf(stderr, "%s: no %s table\n", obj, type);
        failures++;
        return 0;
    }
    size_t size;
    memcpy(&size, table, sizeof(size));
    if (size != want) {
        fprintf(stderr, "%s: %s size %zu, headers say %zu\n", obj, type, size,
                want);
        failures++;
    }
    size_t lim = size < want ? size : want;
    int ok = 1;
    for (size_t off = sizeof(size_t); off + sizeof(fn_t) <= lim;
         off += sizeof(fn_t)) {
        fn_t f;
        memcpy(&f, (const char *)table + off, sizeof(f));
        if (!f) {
            fprintf(stderr, "%s: %s entry %zu is NULL\n", obj, type,
                    (off - sizeof(size_t)) / sizeof(fn_t));
            failures++;
            ok = 0;
        }
    }
    return ok && size == want;
}

#define WALK(obj, ptr, T) walk(obj, #T, (ptr), sizeof(struct T))

int main(void)
{
    prov_keep_mapped();
    struct fid_fabric *fabric;
    struct fi_info *info = prov_getinfo(FI_MSG | FI_TAGGED | FI_RMA, 0,
                                        &fabric);
    WALK("fabric", fabric->fid.ops, fi_ops);
    WALK("fabric", fabric->ops, fi_ops_fabric);

    struct fid_eq *eq;
    struct fi_eq_attr eqa = {.size = 16, .wait_obj = FI_WAIT_NONE};
    DIE_IF(fi_eq_open(fabric, &eqa, &eq, NULL), "fi_eq_open");
    WALK("eq", eq->fid.ops, fi_ops);
    WALK("eq", eq->ops, fi_ops_eq);

    struct prov_ep x;
    prov_ep_open(&x, fabric, info, FI_AV_TABLE);
    WALK("domain", x.dom->fid.ops, fi_ops);
    WALK("domain", x.dom->ops, fi_ops_domain);
    WALK("domain", x.dom->mr, fi_ops_mr);
    WALK("av", x.av->fid.ops, fi_ops);
    WALK("av", x.av->ops, fi_ops_av);
    WALK("cq", x.txcq->fid.ops, fi_ops);
    WALK("cq", x.txcq->ops, fi_ops_cq);
    WALK("ep", x.ep->fid.ops, fi_ops);
    WALK("ep", x.ep->ops, fi_ops_ep);
    int cm_ok = WALK("ep", x.ep->cm, fi_ops_cm);
    WALK("ep", x.ep->msg, fi_ops_msg);
    WALK("ep", x.ep->tagged, fi_ops_tagged);
    WALK("ep", x.ep->rma, fi_ops_rma);
    WALK("ep", x.ep->collective, fi_ops_collective);
    /* FI_ATOMIC is optional: a table only where the endpoint has one. */
    if (x.ep->atomic)
        WALK("ep", x.ep->atomic, fi_ops_atomic);

    static char buf[4096];
    struct fid_mr *mr;
    DIE_IF(fi_mr_reg(x.dom, buf, sizeof(buf), FI_REMOTE_WRITE, 0, 0, 0, &mr,
                     NULL),
           "fi_mr_reg");
    WALK("mr", mr->fid.ops, fi_ops);

    /* Optional objects: checked when the provider opens them. */
    struct fid_cntr *cntr;
    struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP,
                              .wait_obj = FI_WAIT_NONE};
    int rc = fi_cntr_open(x.dom, &ca, &cntr, NULL);
    CHECK(rc == 0 || rc == -FI_ENOSYS);
    if (rc == 0) {
        WALK("cntr", cntr->fid.ops, fi_ops);
        WALK("cntr", cntr->ops, fi_ops_cntr);
        CHECK(fi_close(&cntr->fid) == 0);
    }
    struct fid_poll *ps;
    struct fi_poll_attr pa = {0};
    rc = fi_poll_open(x.dom, &pa, &ps);
    CHECK(rc == 0 || rc == -FI_ENOSYS);
    if (rc == 0) {
        WALK("poll", ps->fid.ops, fi_ops);
        WALK("poll", ps->ops, fi_ops_poll);
        CHECK(fi_close(&ps->fid) == 0);
    }
    struct fid_wait *ws;
    struct fi_wait_attr wa = {.wait_obj = FI_WAIT_UNSPEC};
    rc = fi_wait_open(fabric, &wa, &ws);
    CHECK(rc == 0 || rc == -FI_ENOSYS);
    if (rc == 0) {
        WALK("wait", ws->fid.ops, fi_ops);
        WALK("wait", ws->ops, fi_ops_wait);
        CHECK(fi_close(&ws->fid) == 0);
    }

    /* Connection management of an RDM endpoint: nothing to do, no crash.
     * Only called when the table is complete (else it would jump to 0). */
    if (cm_ok) {
        CHECK(fi_shutdown(x.ep, 0) == -FI_ENOSYS);
        CHECK(fi_connect(x.ep, x.name, NULL, 0) == -FI_ENOSYS);
        CHECK(fi_accept(x.ep, NULL, 0) == -FI_ENOSYS);
        struct fid_mc *mc;
        CHECK(fi_join(x.ep, x.name, 0, &mc, NULL) == -FI_ENOSYS);
        char peer[64];
        size_t plen = sizeof(peer);
        CHECK(fi_getpeer(x.ep, peer, &plen) == -FI_ENOSYS);
    }
    struct fid_ep *ctx;
    if (x.ep->ops->tx_ctx)
        CHECK(fi_tx_context(x.ep, 0, NULL, &ctx, NULL) == -FI_ENOSYS);
    if (x.dom->ops->query_collective)
        CHECK(fi_query_collective(x.dom, FI_BARRIER, NULL, 0) == -FI_ENOSYS);
    if (x.dom->ops->endpoint2) {
        struct fid_ep *ep2;
        CHECK(fi_endpoint2(x.dom, info, &ep2, FI_PEER, NULL) == -FI_EBADFLAGS);
    }

    if (x.ep->collective && x.ep->collective->barrier)
        CHECK(fi_barrier(x.ep, 0, NULL) == -FI_ENOSYS);

    /* After fi_shutdown the endpoint still sends, to a second one. */
    struct prov_ep y;
    prov_ep_open(&y, fabric, info, FI_AV_TABLE);
    fi_addr_t to_y, to_x;
    CHECK(fi_av_insert(x.av, y.name, 1, &to_y, 0, NULL) == 1);
    CHECK(fi_av_insert(y.av, x.name, 1, &to_x, 0, NULL) == 1);
    char rx[8] = {0};
    CHECK(fi_recv(y.ep, rx, sizeof(rx), NULL, FI_ADDR_UNSPEC, rx) == 0);
    CHECK(fi_send(x.ep, "shutdn", 7, NULL, to_y, buf) == 0);
    int sent = 0, got = 0;
    double t0 = now_s();
    while ((!sent || !got) && now_s() - t0 < 20) {
        struct fi_cq_tagged_entry e;
        if (fi_cq_read(x.txcq, &e, 1) == 1)
            sent = 1;
        if (fi_cq_read(y.rxcq, &e, 1) == 1)
            got = 1;
        fi_cq_read(x.rxcq, &e, 1);
        fi_cq_read(y.txcq, &e, 1);
    }
    CHECK(sent && got);
    CHECK(!strcmp(rx, "shutdn"));
    CHECK(prov_ep_close(&y) == 0);

    CHECK(fi_close(&mr->fid) == 0);
    CHECK(prov_ep_close(&x) == 0);
    CHECK(fi_close(&eq->fid) == 0);
    CHECK(fi_close(&fabric->fid) == 0);
    fi_freeinfo(info);
    if (failures) {
        fprintf(stderr, "test_prov_ops: %d failures\n", failures);
        return 1;
    }
    printf("test_prov_ops: ok\n");
    return 0;
}
