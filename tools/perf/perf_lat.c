/*
 * perf_lat.c - the latency engine (write_lat, send_lat, read_lat,
 * atomic_lat): one operation at a time on QP 0.  The client times each
 * iteration's round trip; in write_lat and send_lat the server answers every
 * ping in kind until DONE arrives.  write_lat polls memory for a stamp in the
 * last byte of every MTU-sized packet, not only of the message, because
 * MetaRoCE places packets in any order.  lat_stats() turns the samples into
 * perftest's columns.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* ------------------------------------------------------ latency engine --- */

static void lat_add(struct lat *l, uint64_t v)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 4096;
        uint64_t *p = realloc(l->ns, l->cap * sizeof(*p));
        if (!p)
            die("out of memory");
        l->ns = p;
    }
    l->ns[l->n++] = v;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Waits until a send slot is free (signaled completions retire WRs). */
static void wait_sq(struct pqp *q, uint32_t depth)
{
    while (q->posted - q->done >= depth)
        pump_all();
}

static void post_lat(struct pqp *q, uint32_t size, uint64_t idx, int sig)
{
    uint8_t *src = q->src;
    struct mroce_sge sge = {.addr = (uintptr_t)src,
                            .length = size,
                            .lkey = P.lkey};
    struct mroce_send_wr wr = {
        .wr_id = idx,
        .sg_list = &sge,
        .num_sge = 1,
        .send_flags = sig ? MROCE_SEND_SIGNALED : 0,
        .remote_addr = q->rtgt,
        .rkey = P.rrkey,
    };
    switch (P.test) {
    case T_WRITE_LAT:
        wr.opcode = MROCE_WR_WRITE;
        break;
    case T_SEND_LAT:
        wr.opcode = MROCE_WR_SEND;
        if (P.verify && size >= 8)
            memcpy(src, &idx, 8);
        break;
    case T_READ_LAT:
        wr.opcode = MROCE_WR_READ;
        if (P.verify)
            memset(src, 0, size);
        break;
    default:
        sge.length = 8;
        wr.opcode = P.cs ? MROCE_WR_CMP_SWAP : MROCE_WR_FETCH_ADD;
        wr.compare_add = P.cs ? idx : 1;
        wr.swap = idx + 1;
        memset(src, 0xff, 8);
        break;
    }
    /* Small WRITEs and SENDs go inline, as perftest does: the data is copied
     * at post time and needs no lkey lookup. */
    if ((wr.opcode == MROCE_WR_WRITE || wr.opcode == MROCE_WR_SEND) &&
        size <= MROCE_MAX_INLINE)
        wr.send_flags |= MROCE_SEND_INLINE;
    struct mroce_send_wr *bad;
    int rc = mroce_post_send(q->qp, &wr, &bad);
    if (rc < 0)
        die("post_send: %s", mroce_strerror(rc));
    q->posted++;
    q->last_signaled = sig;
}

/* write_lat: have all the stamps of iteration i arrived in our target? */
static int stamps_arrived(struct pqp *q, uint32_t size, uint32_t *next,
                          uint8_t st)
{
    uint32_t n = nstamps(size);
    const volatile uint8_t *t = q->tgt;
    while (*next < n && t[stamp_pos(size, *next)] == st)
        (*next)++;
    return *next == n;
}

static void set_stamps(struct pqp *q, uint32_t size, uint8_t st)
{
    for (uint32_t k = 0; k < nstamps(size); k++)
        q->src[stamp_pos(size, k)] = st;
}

/* Client side of a latency test: returns the iterations run.  Samples are
 * the full round trip of each iteration. */
uint64_t lat_client(uint32_t size, struct lat *l)
{
    struct pqp *q = &P.q[0];
    uint32_t depth = depth_for(size), mod = cq_mod(depth);
    uint64_t t_end = P.duration_ms ? now_ns() + P.duration_ms * 1000000ull : 0;
    uint64_t i = 0;
    for (;; i++) {
        uint64_t t0 = now_ns();
        if (t_end ? t0 >= t_end : i >= P.cur_iters)
            break;
        wait_sq(q, depth);
        int sig = i % mod == mod - 1 || P.test == T_READ_LAT ||
                  P.test == T_ATOMIC_LAT;
        if (P.test == T_WRITE_LAT)
            set_stamps(q, size, (uint8_t)stamp_of(i));
        t0 = now_ns();
        post_lat(q, size, i, sig);
        switch (P.test) {
        case T_WRITE_LAT: {
            uint32_t next = 0;
            while (!stamps_arrived(q, size, &next, (uint8_t)stamp_of(i)))
                pump_all();
            break;
        }
        case T_SEND_LAT:
            while (q->rx_data <= i)
                pump_all();
            break;
        default: /* READ, atomic: the completion is the answer */
            while (q->done <= i)
                pump_all();
            break;
        }
        lat_add(l, now_ns() - t0);
    }
    /* No final signaled WR is needed: DONE, the control SEND that follows,
     * is waited for, and its completion (completions being in order) means
     * every WR before it is done, so the peer verifies final memory. */
    return i;
}

/* Server side of write_lat and send_lat: answer every ping until DONE. */
uint64_t lat_server(uint32_t size)
{
    struct pqp *q = &P.q[0];
    uint32_t depth = depth_for(size), mod = cq_mod(depth);
    uint64_t i = 0;
    for (;; i++) {
        if (P.test == T_WRITE_LAT) {
            uint32_t next = 0;
            uint8_t st = (uint8_t)stamp_of(i);
            while (!stamps_arrived(q, size, &next, st) && !have_ctrl())
                pump_all();
            if (next < nstamps(size) || size == 0)
                break; /* DONE arrived instead of a ping */
            set_stamps(q, size, st);
        } else {
            while (q->rx_data <= i && !have_ctrl())
                pump_all();
            if (q->rx_data <= i)
                break;
        }
        wait_sq(q, depth);
        post_lat(q, size, i, i % mod == mod - 1);
    }
    return i;
}

void lat_stats(struct lat *l, struct row *r, int half)
{
    if (l->n == 0)
        return;
    qsort(l->ns, l->n, sizeof(uint64_t), cmp_u64);
    double div = half ? 2000.0 : 1000.0; /* ns -> us, half round trip */
    double sum = 0, sq = 0;
    for (uint64_t i = 0; i < l->n; i++)
        sum += (double)l->ns[i] / div;
    double avg = sum / (double)l->n;
    for (uint64_t i = 0; i < l->n; i++) {
        double d = (double)l->ns[i] / div - avg;
        sq += d * d;
    }
    r->t_min = (double)l->ns[0] / div;
    r->t_max = (double)l->ns[l->n - 1] / div;
    r->t_typ = (double)l->ns[l->n / 2] / div;
    r->t_avg = avg;
    r->t_std = sqrt(sq / (double)l->n);
    uint64_t i99 = (uint64_t)ceil(0.99 * (double)l->n) - 1;
    uint64_t i999 = (uint64_t)ceil(0.999 * (double)l->n) - 1;
    r->p99 = (double)l->ns[i99] / div;
    r->p999 = (double)l->ns[i999] / div;
}
