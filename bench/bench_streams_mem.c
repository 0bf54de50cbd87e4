/*
 * bench_streams_mem.c - engine state for S ordered streams: one QP of S
 * streams against S QPs of one stream each (issue 18's memory goal: 64
 * streams cost at most 1.25x one stream).
 *
 * The endpoint allocates through a counting allocator (as the simulator's
 * host.c does), so the figure is every byte the engine holds for the QPs:
 * the QP itself, its send and receive rings, transmit ring, path slots,
 * receive window, responder jobs and, with streams, the stream table and
 * its placement records.  Nothing is timed and nothing is connected: the
 * engine allocates a QP's state when it is created, and the handshake adds
 * none.  Two attribute sets: the engine's defaults, and the compact one a
 * simulated all-to-all uses (16-entry queues, 256-PSN window, 16 paths).
 *
 *   bench_streams_mem          the table, one row per (attributes, S)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/engine.h>

#include "counting_mem.h"

/* Bytes the engine holds for nqps QPs of `streams` streams each. */
static size_t qp_bytes(const struct mre_qp_attr *base, uint32_t nqps,
                       uint16_t streams)
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
    size_t before = cm.live;
    struct mre_qp_attr at = *base;
    at.send_cq = at.recv_cq = cq;
    at.max_streams = streams;
    for (uint32_t i = 0; i < nqps; i++) {
        mre_qp *qp;
        if (mre_qp_new(ep, &at, &qp) < 0) {
            fprintf(stderr, "mre_qp_new failed (S=%u)\n", streams);
            exit(1);
        }
    }
    size_t bytes = cm.live - before;
    mre_ep_del(ep);
    return bytes;
}

static void table(const char *name, const struct mre_qp_attr *at)
{
    static const uint16_t ss[] = {1, 8, 64};
    size_t one = qp_bytes(at, 1, 1);
    printf("\nattributes: %s (max_send_wr %u, max_recv_wr %u, window %u, "
           "npaths %u)\n",
           name, at->max_send_wr, at->max_recv_wr, at->window, at->npaths);
    printf("%4s  %16s  %8s  %16s  %8s\n", "S", "1 QP, S streams", "vs S=1",
           "S QPs, 1 stream", "vs S=1");
    for (size_t i = 0; i < sizeof(ss) / sizeof(ss[0]); i++) {
        size_t a = qp_bytes(at, 1, ss[i]);
        size_t b = qp_bytes(at, ss[i], 1);
        printf("%4u  %16zu  %7.3fx  %16zu  %7.2fx\n", ss[i], a,
               (double)a / (double)one, b, (double)b / (double)one);
    }
}

int main(void)
{
    struct mre_qp_attr def, small;
    mre_qp_attr_default(&def);
    mre_qp_attr_default(&small);
    small.max_send_wr = 16;
    small.max_recv_wr = 16;
    small.window = 256;
    small.npaths = 16;
    printf("engine state bytes per connection (counting allocator)\n");
    table("engine defaults", &def);
    table("compact", &small);
    return 0;
}
