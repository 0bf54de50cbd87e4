/*
 * bench_prov_conn_mem.c - engine state per pair of provider processes
 * whose E endpoints all talk to each other: the provider's layout of one
 * QP per endpoint pair against one shared QP carrying streams (issue 18,
 * "one connection per peer pair").
 *
 * Two processes, one domain of E fi endpoints each; every endpoint of one
 * sends to every endpoint of the other.  Three layouts, each counted by
 * the engine's allocator (as bench_streams_mem does), per process:
 *
 *   per-ep     what prov/ builds: E*E QPs (one per endpoint pair when one
 *              side connects first), each with the provider's attributes
 *              (mroce_conn.c conn_new: send queue 2 * MFI_TX_SIZE, receive
 *              queue FI_MROCE_RX_DEPTH, 16 paths, 16 KiB MTU), and
 *              MFI_LISTENERS listening QPs per endpoint;
 *   dst-stream one QP of E + 1 streams (stream 1 + j lands at endpoint j
 *              of the receiving side, stream 0 is the connection's own),
 *              with queues sized so every endpoint keeps the room it has
 *              today (send queue E * 2 * MFI_TX_SIZE, receive queue
 *              E * RX_DEPTH, both capped at the engine's 65536), and
 *              MFI_LISTENERS listeners per domain;
 *   dst-64     the same QP sized at creation for the domain's most
 *              endpoints (MFI_EP_CNT 64), since the engine's queues do not
 *              grow once created and endpoints can open later;
 *   pair-stream one QP of E * E + 1 streams (a stream per endpoint pair),
 *              receive queue E * E * RX_DEPTH: refused where that passes
 *              MRE_MAX_STREAMS or the engine's queue limit;
 *   built      what prov/ builds with FI_MROCE_SHARED_CONN=1
 *              (mroce_shared.c dq_new): one QP of MFI_EP_CNT + 1 streams,
 *              queues for the E endpoints open when it is created, plus
 *              its MFI_LISTENERS listeners of the same attributes.
 *
 * The bounce buffers posted (RX_DEPTH per receiving stream or QP, each the
 * eager size plus the 32-byte header) are provider memory, not engine
 * state; they are printed as computed from those parameters, not counted.
 *
 *   bench_prov_conn_mem [RX_DEPTH]    the table for E = 1 .. 64
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/engine.h>

#include "counting_mem.h"

#define TX_SIZE 256    /* prov/src/mroce_fi.h MFI_TX_SIZE */
#define EP_CNT 64      /* MFI_EP_CNT */
#define LISTENERS 4    /* MFI_LISTENERS */
#define EAGER 8192     /* FI_MROCE_EAGER_SIZE default */
#define HDR 32         /* provider message header */
#define Q_LIMIT 65536u /* engine limit on a queue's entries */

/* The provider's QP attributes with the given queue sizes and streams. */
static void prov_attr(struct mre_qp_attr *a, uint32_t sq, uint32_t rq,
                      uint32_t streams)
{
    mre_qp_attr_default(a);
    a->max_send_wr = sq;
    a->max_recv_wr = rq;
    a->mtu = 16384;
    a->npaths = 16;
    a->max_streams = (uint16_t)streams;
}

/* Engine bytes for nqps QPs of attributes at; 0 if the engine refuses. */
static size_t qp_bytes(const struct mre_qp_attr *base, uint32_t nqps)
{
    struct counting_mem cm = {0};
    struct mre_ep_config cfg;
    mre_ep_config_default(&cfg);
    cfg.mem.calloc = cm_calloc;
    cfg.mem.free = cm_free;
    cfg.mem.user = &cm;
    cfg.rand = fixed_rand;
    cfg.max_qps = nqps + 1;
    mre_ep *ep;
    mre_cq *cq;
    if (mre_ep_new(&ep, &cfg) < 0 || mre_cq_new(ep, 64, &cq) < 0) {
        fprintf(stderr, "endpoint setup failed\n");
        exit(1);
    }
    size_t before = cm.live, bytes = 0;
    struct mre_qp_attr at = *base;
    at.send_cq = at.recv_cq = cq;
    uint32_t i;
    for (i = 0; i < nqps; i++) {
        mre_qp *qp;
        if (mre_qp_new(ep, &at, &qp) < 0)
            break;
    }
    if (i == nqps)
        bytes = cm.live - before;
    mre_ep_del(ep);
    return bytes;
}

static uint32_t cap(uint64_t n)
{
    return n > Q_LIMIT ? 0 : (uint32_t)n;
}

int main(int argc, char **argv)
{
    uint32_t rxd = argc > 1 ? (uint32_t)atoi(argv[1]) : 32;
    static const uint32_t es[] = {1, 8, 16, 32, 48, 64};
    struct mre_qp_attr a;
    printf("engine state per process for one peer process, E endpoints a "
           "side, all pairs talking (counting allocator; RX_DEPTH %u)\n",
           rxd);
    printf("%3s  %7s  %12s  %10s  %12s  %8s  %10s  %12s  %8s  %12s  %12s  "
           "%12s  %8s\n",
           "E", "per-ep", "per-ep", "listeners", "dst-stream", "vs", "dst-64",
           "pair-stream", "vs", "bufs per-ep", "bufs dst", "built+lst", "vs");
    printf("%3s  %7s  %12s  %10s  %12s  %8s  %10s  %12s  %8s  %12s  %12s  "
           "%12s  %8s\n",
           "", "QPs", "bytes", "bytes", "bytes", "per-ep", "bytes", "bytes",
           "per-ep", "bytes", "bytes", "bytes", "per-ep+l");
    for (size_t k = 0; k < sizeof(es) / sizeof(es[0]); k++) {
        uint32_t e = es[k];
        prov_attr(&a, 2 * TX_SIZE, rxd, 1);
        size_t one = qp_bytes(&a, 1);
        /* E * E identical QPs: counted up to 64 of them, beyond that one
         * QP's bytes times E * E (marked *). */
        size_t perep = e * e <= 64 ? qp_bytes(&a, e * e) : one * e * e;
        size_t lst = qp_bytes(&a, LISTENERS * e);
        uint32_t sq = cap((uint64_t)e * 2 * TX_SIZE);
        size_t dst = 0, pair = 0;
        if (sq && cap((uint64_t)e * rxd)) {
            prov_attr(&a, sq, e * rxd, e + 1);
            dst = qp_bytes(&a, 1);
        }
        prov_attr(&a, EP_CNT * 2 * TX_SIZE, EP_CNT * rxd, EP_CNT + 1);
        size_t d64 = qp_bytes(&a, 1);
        uint64_t ps = (uint64_t)e * e + 1;
        if (sq && ps <= MRE_MAX_STREAMS && cap((uint64_t)e * e * rxd)) {
            prov_attr(&a, sq, e * e * rxd, (uint32_t)ps);
            pair = qp_bytes(&a, 1);
        }
        char pv[32] = "refused", pr[32] = "-";
        if (pair) {
            snprintf(pv, sizeof(pv), "%zu", pair);
            snprintf(pr, sizeof(pr), "%.4fx", (double)pair / (double)perep);
        }
        /* The provider's shared QP and its listeners, as built. */
        uint32_t bsq = sq ? sq : Q_LIMIT, brq = cap((uint64_t)e * rxd);
        prov_attr(&a, bsq, brq ? brq : Q_LIMIT, EP_CNT + 1);
        size_t built = qp_bytes(&a, 1 + LISTENERS);
        size_t buf = (size_t)rxd * (EAGER + HDR);
        printf("%3u  %7u  %11zu%c  %10zu  %12zu  %7.4fx  %10zu  %12s  %8s  "
               "%12zu  %12zu  %12zu  %7.4fx\n",
               e, e * e, perep, e * e <= 64 ? ' ' : '*', lst, dst,
               (double)dst / (double)perep, d64, pv, pr, buf * e * e, buf * e,
               built, (double)built / (double)(perep + lst));
    }
    prov_attr(&a, 2 * TX_SIZE, rxd, 1);
    printf("listeners per domain in the shared layout: %zu bytes (%u QPs)\n",
           qp_bytes(&a, LISTENERS), LISTENERS);
    return 0;
}
