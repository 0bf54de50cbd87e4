/*
 * perf_bw.c - the bandwidth engine (write_bw, send_bw, read_bw): the
 * requester keeps up to depth WRs in flight on every QP, one in cq_mod
 * signaled as in perftest, until -n messages per QP or -D seconds, and
 * computes the peak bandwidth from the completion events perf_pump.c
 * records.  The responder side needs no engine: it pumps completions until
 * DONE (perf_session.c), and with -b runs this requester too.
 */
#define _GNU_SOURCE
#include <string.h>

#include "perf.h"

/* ---------------------------------------------------- bandwidth engine --- */

static void post_data(struct pqp *q, uint32_t size, uint64_t idx, int signaled,
                      enum mroce_wr_opcode op, uint32_t slot)
{
    uint32_t qi = (uint32_t)(q - P.q);
    uint8_t *src = q->src + (size_t)slot * size;
    if (P.verify && (op == MROCE_WR_WRITE || op == MROCE_WR_SEND)) {
        pat_fill(src, size, qi, idx);
        /* Testing the tester: the last message goes out with one byte
         * wrong, which the peer's verification must report. */
        if (P.o.x_corrupt && idx + 1 == P.cur_iters)
            src[size / 2] ^= 0x40;
    }
    if (P.verify && op == MROCE_WR_READ)
        memset(src, 0, size); /* so stale data cannot pass the check */
    struct mroce_sge sge = {.addr = (uintptr_t)src,
                            .length = size,
                            .lkey = P.lkey};
    struct mroce_send_wr wr = {
        .wr_id = idx,
        .sg_list = &sge,
        .num_sge = 1,
        .opcode = op,
        .send_flags = signaled ? MROCE_SEND_SIGNALED : 0,
        .remote_addr = q->rtgt + (uint64_t)slot * size,
        .rkey = P.rrkey,
    };
    struct mroce_send_wr *bad;
    int rc = mroce_post_send(q->qp, &wr, &bad);
    if (rc < 0)
        die("post_send on QP %u: %s", qi, mroce_strerror(rc));
    q->posted++;
    q->last_signaled = signaled;
}

/* Peak bandwidth: the best window of at least a tenth of the run (and
 * 1 ms) between two completion events.  Completions retire cq_mod WRs at a
 * time, so shorter windows would measure the moderation, not the link. */
static void peak_compute(uint64_t t0, uint64_t t1)
{
    uint64_t w = (t1 - t0) / 10;
    if (w < 1000000ull)
        w = 1000000ull;
    P.peak_bps = 0;
    size_t j = 0;
    uint64_t tj = t0, bj = 0; /* window start: the run's start, then events */
    for (size_t i = 0; i < P.nev; i++) {
        uint64_t ti = P.ev[i][0], bi = P.ev[i][1];
        while (j < i && ti - P.ev[j][0] >= w) {
            tj = P.ev[j][0];
            bj = P.ev[j][1];
            j++;
        }
        if (ti - tj >= w) {
            uint64_t bps = (uint64_t)((double)(bi - bj) * 8e9 /
                                      (double)(ti - tj));
            if (bps > P.peak_bps)
                P.peak_bps = bps;
        }
    }
}

/* The requester side of a bandwidth test: keep depth WRs in flight on every
 * QP until -n per QP (or -D seconds), then wait for the last completions.
 * Receive completions (bidir send_bw, control) are handled on the way. */
void bw_requester(uint32_t size, struct bw_run *r)
{
    enum mroce_wr_opcode op = P.test == T_WRITE_BW  ? MROCE_WR_WRITE
                              : P.test == T_SEND_BW ? MROCE_WR_SEND
                                                    : MROCE_WR_READ;
    uint32_t depth = depth_for(size), mod = cq_mod(depth);
    uint32_t ns = nslots(size);
    int all_signaled = P.verify && op == MROCE_WR_READ;
    uint64_t t_end = P.duration_ms ? now_ns() + P.duration_ms * 1000000ull : 0;
    int time_up = 0;
    r->t0 = now_ns();
    P.nev = 0;
    for (;;) {
        int busy = 0;
        uint64_t t = now_ns();
        if (t_end && t >= t_end)
            time_up = 1;
        for (uint32_t i = 0; i < P.nqps; i++) {
            struct pqp *q = &P.q[i];
            for (;;) {
                int more;
                if (t_end)
                    more = !time_up || !q->last_signaled;
                else
                    more = q->posted < P.cur_iters;
                if (!more || q->posted - q->done >= depth)
                    break;
                uint64_t idx = q->posted;
                int sig = all_signaled || idx % mod == mod - 1 ||
                          (!t_end && idx + 1 == P.cur_iters) || time_up;
                post_data(q, size, idx, sig, op, (uint32_t)(idx % ns));
            }
            if (q->posted != q->done ||
                (t_end ? !time_up : q->posted < P.cur_iters))
                busy = 1;
        }
        if (!busy)
            break;
        pump_all();
    }
    r->t1 = now_ns();
    peak_compute(r->t0, r->t1);
    r->msgs = 0;
    for (uint32_t i = 0; i < P.nqps; i++)
        r->msgs += P.q[i].done;
}
