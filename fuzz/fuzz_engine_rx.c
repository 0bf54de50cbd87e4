/*
 * fuzz_engine_rx.c - libFuzzer target for the engine's receive path.
 *
 * fuzz_wire.c shows the decoder survives any bytes; this target goes past it
 * into the engine.  Each input starts from the same deterministic state: two
 * endpoints (hosts A and B) connected over the network model by the real
 * handshake, memory regions at fixed addresses surrounded by guard bytes,
 * receives posted, and SENDs, WRITEs, READs and atomics partly delivered in
 * both directions, so both QPs are requester and responder at once with
 * packets, ACKs and responses outstanding.  Both endpoints have two planes
 * (fz_plane_addr).  Each host also has a second QP
 * mid-handshake (A's CONNECTING towards a QPN that does not exist, B's
 * LISTENing).  The input is a sequence of records fed to the engines with
 * mre_ep_recv() at increasing times, interleaved with timers and draining
 * of mre_ep_write_pkt() (genuine traffic delivered to the peer or dropped).
 * After every record, and at the end, the target checks: guard bytes and a
 * read-only region untouched (the engine wrote nowhere but registered,
 * writable memory; under ASan the guards are also poisoned, so any access is
 * caught at once), every packet the engine writes decodes, completions are
 * well formed, and the QPs' internal accounting is consistent.
 *
 * Record:  mode (1 byte) | len (2 bytes, big-endian) | len bytes
 *   mode bit 0     target host: 0 = A, 1 = B (sender is the other host)
 *   mode bits 1-2  0 raw: the bytes as they are
 *                  1 fix-up: dst_qpn and token set to the target QP's,
 *                    pkt_len to len, CRC recomputed (mrw_pkt_seal)
 *                  2 fix-up + relative: as 1, then PSN-like fields are
 *                    offsets from the target QP's live state (see rel())
 *                  3 action: an API call, bytes select it (see action())
 *   mode bit 3     target the host's second (handshake) QP instead
 *   mode bit 4     deliver with ECN CE
 *   mode bit 5     genuine packets drained after it reach the peer
 *   mode bits 6-7  time advance first: +100 ns, +20 us, +2 ms, or to the
 *                  next timer
 * Region addresses, QPNs, tokens, PSNs and keys are the same on every run,
 * so packets captured from a normal run are valid raw inputs.
 *
 * The seed corpus fuzz/corpus/fuzz_engine_rx/ is produced by this file
 * compiled with -DGEN_CORPUS (its own main(); writes into the directory
 * given), which runs the same state machine, captures the genuine packets
 * and writes them back as records, e.g. from a build tree:
 *   cc -DGEN_CORPUS -I include -I src/engine -I sim/netmodel -I sim/core \
 *      fuzz/fuzz_engine_rx.c build/libmroce_netmodel.a \
 *      build/libmroce_simcore.a build/libmroce_engine.a \
 *      build/libmroce_wire.a -o gen && \
 *   ./gen fuzz/corpus/fuzz_engine_rx
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "engine_int.h"
#include "testbed.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(FZ_ASAN)
#define FZ_ASAN 1
#endif
#ifdef FZ_ASAN
#include <sanitizer/asan_interface.h>
#define FZ_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define FZ_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define FZ_POISON(p, n) ((void)(p), (void)(n))
#define FZ_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(c)                                                          \
    do {                                                                     \
        if (!(c)) {                                                          \
            fprintf(stderr, "fuzz_engine_rx: %s:%d: invariant failed: %s\n", \
                    __FILE__, __LINE__, #c);                                 \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* --- the arena: per host, three regions between guards --- */
#define ARENA_ADDR 0x3f0000000000ull /* fixed so raddr on the wire is stable */
#define HOST_STRIDE 0x10000u
#define GUARD 256u
#define RW_OFF GUARD
#define RW_LEN 16384u /* local write + remote write/read/atomic */
#define RO_OFF (RW_OFF + RW_LEN + GUARD)
#define RO_LEN 4096u /* remote read only: must never change */
#define LOC_OFF (RO_OFF + RO_LEN + GUARD)
#define LOC_LEN 16384u /* local write only: receives, READ/atomic results */
#define ARENA_END (LOC_OFF + LOC_LEN + GUARD)

#define FZ_MTU 1024
#define FZ_BUF 4096 /* transmit buffer: any packet at FZ_MTU fits */
#define FZ_MAX_RECORDS 512
#define FZ_MAX_PKT 9216
#define FZ_QUEUE 128 /* genuine packets in flight inside one pump */
#define TAG_RECV 0x5200000000000000ull
#define TAG_SEND 0x5300000000000000ull

enum { R_RW, R_RO, R_LOC, NREG };
static const uint32_t reg_off[NREG] = {RW_OFF, RO_OFF, LOC_OFF};
static const uint32_t reg_len[NREG] = {RW_LEN, RO_LEN, LOC_LEN};
static const unsigned reg_acc[NREG] = {MROCE_ACCESS_LOCAL_WRITE |
                                           MROCE_ACCESS_REMOTE_WRITE |
                                           MROCE_ACCESS_REMOTE_READ |
                                           MROCE_ACCESS_REMOTE_ATOMIC,
                                       MROCE_ACCESS_REMOTE_READ,
                                       MROCE_ACCESS_LOCAL_WRITE};

struct fz_host {
    mre_ep *ep;
    mre_cq *scq, *rcq;
    mre_qp *qp, *aux; /* the connected QP, the handshake QP */
    uint8_t *arena;
    mre_mr *mr[NREG];
};

struct qpkt {
    int src, dst;
    uint32_t qp_num;
    size_t len;
    uint8_t buf[FZ_BUF];
};

struct fz {
    struct mroce_testbed *tb;
    struct fz_host h[2];
    mroce_tstamp now;
    uint8_t *arena;
    size_t arena_len;
    struct qpkt q[FZ_QUEUE]; /* pump: packets awaiting delivery */
    int nq;
#ifdef GEN_CORPUS
    int capture; /* put every drained packet in cap[] */
    struct qpkt cap[FZ_QUEUE];
    int ncap;
#endif
};

static struct fz F;

/* The arena's initial contents; guards and RO are compared against it. */
static uint8_t ref[2 * HOST_STRIDE];

static void arena_map(void)
{
    if (F.arena)
        return;
    F.arena_len = 2 * (size_t)HOST_STRIDE;
    void *p = mmap((void *)(uintptr_t)ARENA_ADDR, F.arena_len,
                   PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED && p != (void *)(uintptr_t)ARENA_ADDR) {
        munmap(p, F.arena_len); /* old kernel ignored the hint */
        p = MAP_FAILED;
    }
    if (p == MAP_FAILED) /* addresses then differ from the seeds': still ok */
        p = mmap(NULL, F.arena_len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FZ_CHECK(p != MAP_FAILED);
    F.arena = p;
    for (uint32_t i = 0; i < sizeof(ref); i++)
        ref[i] = (uint8_t)(i * 131u + (i / HOST_STRIDE) * 77u + 0x5au);
}

/* Fill with the pattern; poison everything outside the regions. */
static void arena_reset(void)
{
    FZ_UNPOISON(F.arena, F.arena_len);
    memcpy(F.arena, ref, sizeof(ref));
    for (int h = 0; h < 2; h++) {
        uint8_t *a = F.arena + (size_t)h * HOST_STRIDE;
        FZ_POISON(a, RW_OFF);
        for (int r = 0; r < NREG; r++) {
            uint32_t end = reg_off[r] + reg_len[r];
            uint32_t next = r + 1 < NREG ? reg_off[r + 1] : HOST_STRIDE;
            FZ_POISON(a + end, next - end);
        }
    }
}

static int same(uint32_t off, uint32_t len)
{
    return memcmp(F.arena + off, ref + off, len) == 0;
}

/* The read-only regions, and (when not poisoned) the guards, intact. */
static void arena_check(int guards)
{
    for (uint32_t h = 0; h < 2; h++) {
        uint32_t a = h * HOST_STRIDE;
        FZ_CHECK(same(a + RO_OFF, RO_LEN));
        if (!guards)
            continue;
        FZ_CHECK(same(a, RW_OFF));
        for (int r = 0; r < NREG; r++) {
            uint32_t end = reg_off[r] + reg_len[r];
            uint32_t next = r + 1 < NREG ? reg_off[r + 1] : HOST_STRIDE;
            FZ_CHECK(same(a + end, next - end));
        }
    }
}

static uint64_t reg_addr(int host, int r, uint32_t off)
{
    return (uint64_t)(uintptr_t)(F.arena + (size_t)host * HOST_STRIDE +
                                 reg_off[r] + off);
}

/* --- invariants on engine state --- */

static void check_qp(const mre_qp *qp)
{
    uint32_t win = qp->tx_mask + 1;
    FZ_CHECK(qp->state <= MROCE_QPS_ERROR);
    FZ_CHECK(qp->sq_tail - qp->sq_head <= qp->sq_mask + 1);
    FZ_CHECK(qp->sq_tx - qp->sq_head <= qp->sq_tail - qp->sq_head);
    FZ_CHECK(qp->rq_tail - qp->rq_head <= qp->rq_mask + 1);
    FZ_CHECK(qp->snd_nxt - qp->snd_una <= win);
    FZ_CHECK(qp->retxq_tail - qp->retxq_head <= win);
    FZ_CHECK(qp->rd_outstanding <= qp->sq_tx - qp->sq_head);
    int32_t span = mrw_psn_diff(qp->rxwin.high, qp->rxwin.cum);
    FZ_CHECK(span >= 0 && (uint32_t)span <= qp->rxwin.size);
    uint32_t pkts = 0, bytes = 0;
    for (uint32_t p = qp->snd_una; p != qp->snd_nxt; p++) {
        const struct mre_txent *e = &qp->tx[p & qp->tx_mask];
        FZ_CHECK(e->state <= TX_RNR);
        if (e->state == TX_INFLIGHT) {
            FZ_CHECK(e->path < qp->paths.npaths);
            pkts++;
            bytes += (uint32_t)e->len + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN;
        }
    }
    FZ_CHECK(pkts == qp->inflight_pkts);
    FZ_CHECK(bytes == qp->inflight_bytes);
    /* Each path's list holds exactly its in-flight entries. */
    uint32_t listed = 0;
    for (uint16_t i = 0; i < qp->paths.npaths; i++) {
        uint32_t n = 0;
        for (uint32_t x = qp->path_slots[i].list_head; x != MROCE_PATH_NONE;
             x = qp->tx[x].path_next) {
            FZ_CHECK(x <= qp->tx_mask && ++n <= win);
            FZ_CHECK(qp->tx[x].state == TX_INFLIGHT && qp->tx[x].path == i);
        }
        listed += n;
    }
    FZ_CHECK(listed == pkts);
    /* Work requests in the send queue: live, and once sending, split into
     * packets at the MTU the QP sends with (a SEND/WRITE posted while
     * connecting must not keep the count of an MTU the handshake lowered:
     * the message would end early and still complete successfully). */
    for (uint32_t m = qp->sq_head; m != qp->sq_tail; m++) {
        const struct mre_swqe *w = &qp->sq[m & qp->sq_mask];
        FZ_CHECK(w->state == SWQE_POSTED && w->msn == m);
        FZ_CHECK(w->acked_pkts <= w->sent_pkts && w->sent_pkts <= w->npkts);
        if (w->opcode < MROCE_WR_READ && w->sent_pkts)
            FZ_CHECK(w->npkts ==
                     (w->length ? (w->length + qp->mtu - 1) / qp->mtu : 1u));
    }
    for (uint32_t i = 0; i < qp->nrjobs; i++)
        if (qp->rjobs[i].active)
            FZ_CHECK(qp->rjobs[i].sent_pkts <= qp->rjobs[i].npkts);
}

static void check_cq(mre_cq *cq, int host)
{
    struct mroce_wc wc[32];
    int n;
    while ((n = mre_cq_poll(cq, 32, wc)) > 0) {
        for (int i = 0; i < n; i++) {
            FZ_CHECK(wc[i].status <= MROCE_WC_WR_FLUSH_ERR);
            FZ_CHECK(wc[i].opcode <= MROCE_WC_RECV_WITH_IMM);
            FZ_CHECK(wc[i].qp_num == F.h[host].qp->qpn ||
                     wc[i].qp_num == F.h[host].aux->qpn);
            uint64_t tag = wc[i].wr_id & 0xff00000000000000ull;
            FZ_CHECK(tag == TAG_RECV || tag == TAG_SEND);
            /* A plain receive reports the bytes placed in its buffers:
             * never more than they hold (wr_id carries the capacity). */
            if (tag == TAG_RECV && wc[i].status == MROCE_WC_SUCCESS &&
                wc[i].opcode == MROCE_WC_RECV)
                FZ_CHECK(wc[i].byte_len <= (uint32_t)wc[i].wr_id);
        }
    }
    FZ_CHECK(n == 0);
}

static void check_all(void)
{
    for (int h = 0; h < 2; h++) {
        check_qp(F.h[h].qp);
        check_qp(F.h[h].aux);
        check_cq(F.h[h].scq, h);
        check_cq(F.h[h].rcq, h);
    }
#ifdef FZ_ASAN
    arena_check(0);
#else
    arena_check(1);
#endif
}

/* --- moving genuine traffic --- */

static void rx(int host, const uint8_t *buf, size_t len, int from, int ce)
{
    struct mre_rx_info ri;
    memset(&ri, 0, sizeof(ri));
    mroce_netdrive_addr((uint32_t)from, &ri.from);
    ri.ecn = ce ? MROCE_ECN_CE : MROCE_ECN_ECT0;
    mre_ep_recv(F.h[host].ep, buf, len, &ri, F.now);
}

/* Drain both endpoints; deliver what they wrote to the peer if `deliver`,
 * for up to `rounds` rounds of ping-pong (1 us apart). */
static void pump(int deliver, int rounds)
{
    for (int r = 0; r < rounds; r++) {
        F.nq = 0;
        for (int h = 0; h < 2; h++) {
            for (int k = 0; k < 48 && F.nq < FZ_QUEUE; k++) {
                struct qpkt *q = &F.q[F.nq];
                struct mre_tx_info ti;
                struct mrw_pkt pk;
                memset(&ti, 0, sizeof(ti));
                int n = mre_ep_write_pkt(F.h[h].ep, q->buf, sizeof(q->buf), &ti,
                                         F.now);
                FZ_CHECK(n >= 0 && n <= (int)sizeof(q->buf));
                if (n == 0)
                    break;
                /* Whatever the engine sends must be a well-formed packet. */
                FZ_CHECK(mrw_pkt_decode(&pk, q->buf, (size_t)n) == 0);
                q->src = h;
                q->dst = mroce_netdrive_host_of(&ti.to);
                q->qp_num = ti.qp_num;
                q->len = (size_t)n;
#ifdef GEN_CORPUS
                if (F.capture && F.ncap < FZ_QUEUE && q->dst >= 0 &&
                    q->dst < 2 && q->dst != h)
                    F.cap[F.ncap++] = *q;
#endif
                if (deliver && q->dst >= 0 && q->dst < 2 && q->dst != h)
                    F.nq++;
            }
        }
        if (F.nq == 0)
            break;
        for (int i = 0; i < F.nq; i++)
            rx(F.q[i].dst, F.q[i].buf, F.q[i].len, F.q[i].src, 0);
        F.now += 1000;
    }
}

static void timers(void)
{
    for (int h = 0; h < 2; h++)
        mre_ep_handle_expiry(F.h[h].ep, F.now);
}

static mroce_tstamp next_expiry(void)
{
    mroce_tstamp a = mre_ep_expiry(F.h[0].ep), b = mre_ep_expiry(F.h[1].ep);
    return a < b ? a : b;
}

/* --- setup: the same state for every input --- */

static void post_recv(mre_qp *qp, int host, uint32_t off1, uint32_t len1,
                      uint32_t off2, uint32_t len2, int nsge)
{
    struct mroce_sge s[2] = {{reg_addr(host, R_LOC, off1), len1,
                              mre_mr_lkey(F.h[host].mr[R_LOC])},
                             {reg_addr(host, R_LOC, off2), len2,
                              mre_mr_lkey(F.h[host].mr[R_LOC])}};
    uint32_t cap = (nsge > 0 ? len1 : 0) + (nsge > 1 ? len2 : 0);
    struct mroce_recv_wr wr = {.wr_id = TAG_RECV | cap,
                               .sg_list = s,
                               .num_sge = nsge};
    mre_qp_post_recv(qp, &wr, NULL);
}

static void post_send(mre_qp *qp, int host, enum mroce_wr_opcode op, int lreg,
                      uint32_t loff, uint32_t len, int rreg, uint32_t roff,
                      unsigned flags, uint64_t id)
{
    int peer = 1 - host;
    struct mroce_sge s = {reg_addr(host, lreg, loff), len,
                          mre_mr_lkey(F.h[host].mr[lreg])};
    struct mroce_send_wr wr = {.wr_id = TAG_SEND | id,
                               .sg_list = &s,
                               .num_sge = 1,
                               .opcode = op,
                               .send_flags = flags,
                               .imm_data = 0x1d000000u | (uint32_t)id,
                               .remote_addr = reg_addr(peer, rreg, roff),
                               .rkey = mre_mr_rkey(F.h[peer].mr[rreg]),
                               .compare_add = op == MROCE_WR_CMP_SWAP ? 0 : 3,
                               .swap = 0x77};
    if (op == MROCE_WR_CMP_SWAP && roff + 8 <= reg_len[rreg])
        memcpy(&wr.compare_add, (void *)(uintptr_t)wr.remote_addr, 8);
    /* (the pattern there, so the swap happens) */
    mre_qp_post_send(qp, &wr, NULL, F.now);
}

static void setup_work(int h)
{
    mre_qp *qp = F.h[h].qp;
    const unsigned sig = MROCE_SEND_SIGNALED;
    /* Receives, consumed in order by the peer's SEND, SEND_WITH_IMM,
     * WRITE_WITH_IMM and inline SEND; two more left for fuzzed SENDs. */
    post_recv(qp, h, 0, 2048, 0, 0, 1);
    post_recv(qp, h, 2048, 100, 2200, 1900, 2);
    post_recv(qp, h, 0, 0, 0, 0, 0);
    post_recv(qp, h, 4096, 512, 0, 0, 1);
    post_recv(qp, h, 4608, 1024, 5632, 1024, 2);
    post_recv(qp, h, 6656, 64, 0, 0, 1);
    post_send(qp, h, MROCE_WR_SEND, R_RW, 0, 1500, R_RW, 0, sig, 0);
    post_send(qp, h, MROCE_WR_SEND_WITH_IMM, R_RO, 0, 100, R_RW, 0, sig, 1);
    post_send(qp, h, MROCE_WR_WRITE, R_RW, 0, 3000, R_RW, 4096, 0, 2);
    post_send(qp, h, MROCE_WR_READ, R_LOC, 8192, 2500, R_RO, 512, sig, 3);
    post_send(qp, h, MROCE_WR_FETCH_ADD, R_LOC, 12288, 8, R_RW, 8, sig, 4);
    post_send(qp, h, MROCE_WR_CMP_SWAP, R_LOC, 12296, 8, R_RW, 16, sig, 5);
    post_send(qp, h, MROCE_WR_WRITE_WITH_IMM, R_RW, 100, 10, R_RW, 12000, sig,
              6);
    post_send(qp, h, MROCE_WR_SEND, R_RW, 200, 20, R_RW, 0,
              sig | MROCE_SEND_INLINE, 7);
    post_send(qp, h, MROCE_WR_READ, R_LOC, 12400, 0, R_RW, 0, sig, 8);
    post_send(qp, h, MROCE_WR_WRITE, R_RW, 4096, 8192, R_RW, 8192, sig, 9);
}

/* Both endpoints have two planes, so that a PLANES extension in any
 * CONNECT reaches the engine's plane negotiation (CONN-28..30).  The
 * entries the endpoints list name no host (last byte 0xff): plane_addr
 * refuses them, the genuine connection's plane 1 is unusable and every
 * packet stays on plane 0, the one network.  An entry from the input
 * whose last byte is 0 or 1 names host A or B: the engine then sends on
 * plane 1 there. */
static int fz_plane_addr(struct mre_addr *out, const struct mre_plane_addr *in,
                         void *user)
{
    (void)user;
    if (in->addr[15] > 1)
        return -1;
    mroce_netdrive_addr(in->addr[15], out);
    return 0;
}

static void setup(void)
{
    struct mroce_netdrive_config cfg;
    struct mre_ep_config ec;
    struct mre_qp_attr at;
    mre_qp *qa, *qb;

    arena_map();
    arena_reset();
    mroce_netdrive_config_default(&cfg);
    cfg.net.seed = 7;
    mre_ep_config_default(&ec);
    ec.nplanes = 2;
    for (int i = 0; i < 2; i++) {
        memset(ec.planes[i].addr, 0, 16);
        ec.planes[i].addr[0] = 0xfd;
        ec.planes[i].addr[14] = (uint8_t)i;
        ec.planes[i].addr[15] = 0xff;
        ec.planes[i].port = 4794;
    }
    ec.plane_addr = fz_plane_addr;
    FZ_CHECK(mroce_tb_new(&F.tb, &cfg, &ec) == 0);
    mre_qp_attr_default(&at);
    at.mtu = FZ_MTU;
    at.npaths = 8;
    at.window = 256;
    at.max_send_wr = 32;
    at.max_recv_wr = 32;
    at.max_rd_atomic = 4;
    at.ooo_thresh = 8; /* reachable with the packets in flight here */
    FZ_CHECK(mroce_tb_connect(F.tb, 0, 1, &at, &qa, &qb, 10000000) == 0);
    F.h[0].qp = qa;
    F.h[1].qp = qb;
    struct mre_plane_stats ps[2];
    FZ_CHECK(mre_qp_plane_stats(qa, ps, 2) == 2 &&
             mre_qp_plane_stats(qb, ps, 2) == 2);
    F.now = mroce_netdrive_now(F.tb->d) + 1000;
    for (int h = 0; h < 2; h++) {
        struct fz_host *H = &F.h[h];
        H->ep = F.tb->h[h].ep;
        H->scq = F.tb->h[h].scq;
        H->rcq = F.tb->h[h].rcq;
        H->arena = F.arena + (size_t)h * HOST_STRIDE;
        for (int r = 0; r < NREG; r++)
            FZ_CHECK(mre_mr_reg(H->ep, H->arena + reg_off[r], reg_len[r],
                                reg_acc[r], &H->mr[r]) == 0);
        at.send_cq = H->scq;
        at.recv_cq = H->rcq;
        FZ_CHECK(mre_qp_new(H->ep, &at, &H->aux) == 0);
    }
    struct mre_addr to;
    mroce_netdrive_addr(1, &to);
    FZ_CHECK(mre_qp_connect(F.h[0].aux, &to, 0x00ab0007u, F.now) == 0);
    FZ_CHECK(mre_qp_listen(F.h[1].aux, F.now) == 0);
    /* Work both ways; deliver part of it so everything is half done:
     * packets lost, ACKs and responses outstanding, gaps at receivers. */
    setup_work(0);
    setup_work(1);
    static const uint8_t keep[2][2] = {{0x6d, 0x55}, {0x5b, 0x33}};
    for (int r = 0; r < 2; r++) {
        F.nq = 0;
        for (int h = 0; h < 2; h++) {
            for (int k = 0; F.nq < FZ_QUEUE; k++) {
                struct qpkt *q = &F.q[F.nq];
                struct mre_tx_info ti;
                int n = mre_ep_write_pkt(F.h[h].ep, q->buf, sizeof(q->buf), &ti,
                                         F.now);
                FZ_CHECK(n >= 0);
                if (n == 0)
                    break;
                q->src = h;
                q->dst = mroce_netdrive_host_of(&ti.to);
                q->len = (size_t)n;
                if (q->dst == 1 - h && ((keep[r][h] >> (k & 7)) & 1))
                    F.nq++;
            }
        }
        for (int i = 0; i < F.nq; i++)
            rx(F.q[i].dst, F.q[i].buf, F.q[i].len, F.q[i].src, 0);
        F.now += 2000;
    }
    check_all();
}

static void teardown(void)
{
    check_all();
    mroce_tb_del(F.tb);
    F.tb = NULL;
    memset(F.h, 0, sizeof(F.h));
    FZ_UNPOISON(F.arena, F.arena_len);
    arena_check(1);
}

/* --- records --- */

static uint16_t ld16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}
static void st32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Relative fields (mode 2): each is an offset from the target QP's live
 * state, so small numbers land on window edges.  dir +1 turns offsets into
 * absolute values (the target does this), -1 the reverse (the corpus
 * generator).  Data PSNs count from the receive window's cumulative point;
 * ACK/NAK PSNs from our oldest unacknowledged; rsn from the oldest posted
 * receive, response msn from the oldest send; raddr from the target's
 * arena; rkey 0..2 name its regions; CONNECT qpn/token XOR the peer's. */
static void rel(struct mrw_pkt *p, const mre_qp *qp, int host, int dir)
{
    uint32_t d = dir > 0 ? 1u : (uint32_t)-1;
    uint64_t arena = (uint64_t)(uintptr_t)(F.arena +
                                           (size_t)host * HOST_STRIDE);
    switch (p->base.opcode) {
    case MROCE_OP_SEND:
    case MROCE_OP_WRITE:
    case MROCE_OP_READ_REQ:
    case MROCE_OP_FETCH_ADD:
    case MROCE_OP_CMP_SWAP: {
        struct mrw_req_hdr *r = &p->u.rq.req;
        p->base.psn += d * qp->rxwin.cum;
        r->rsn += d * qp->rq_head;
        r->raddr += (dir > 0 ? arena : (uint64_t)0 - arena);
        for (int i = 0; i < NREG; i++) { /* swap i <-> key: an involution */
            uint32_t key = mre_mr_rkey(F.h[host].mr[i]);
            if (r->rkey == (uint32_t)i) {
                r->rkey = key;
                break;
            }
            if (r->rkey == key) {
                r->rkey = (uint32_t)i;
                break;
            }
        }
        break;
    }
    case MROCE_OP_READ_RESP:
    case MROCE_OP_ATOMIC_RESP:
        p->base.psn += d * qp->rxwin.cum;
        p->u.resp.req_msn += d * qp->sq_head;
        break;
    case MROCE_OP_ACK:
        p->u.ack.cum_psn += d * qp->snd_una;
        p->u.ack.echo_psn += d * qp->snd_una;
        p->u.ack.echo_ts += d * (uint32_t)F.now;
        break;
    case MROCE_OP_NAK:
        p->u.nak.nak_psn += d * qp->snd_una;
        p->u.nak.cum_psn += d * qp->snd_una;
        p->u.nak.msn += d * qp->sq_head;
        break;
    case MROCE_OP_CONNECT_REQ:
    case MROCE_OP_CONNECT_RESP:
        p->u.conn.src_qpn ^= qp->peer_qpn;
        p->u.conn.token ^= qp->peer_token;
        break;
    default:
        break;
    }
}

/* Modes 1 and 2: address the bytes to the target QP and make them pass the
 * CRC (and, for mode 2, turn relative fields into live values). */
static size_t fixup(uint8_t *buf, size_t len, const mre_qp *qp, int host,
                    int relative)
{
    static uint8_t out[FZ_MAX_PKT];
    struct mrw_pkt pk;
    if (len < MROCE_BASE_HDR_LEN + MROCE_CRC_LEN)
        return len;
    st32(buf + 4, qp->qpn);
    if (buf[1] != MROCE_OP_CONNECT_REQ) {
        st32(buf + 8, (uint32_t)(qp->local_token >> 32));
        st32(buf + 12, (uint32_t)qp->local_token);
    }
    buf[26] = (uint8_t)(len >> 8);
    buf[27] = (uint8_t)len;
    mrw_pkt_seal(buf, len - MROCE_CRC_LEN);
    if (!relative || mrw_pkt_decode(&pk, buf, len) != 0)
        return len;
    rel(&pk, qp, host, +1);
    size_t n = mrw_pkt_encode(&pk, out, sizeof(out));
    if (n == 0 || n > FZ_MAX_PKT)
        return len;
    memcpy(buf, out, n);
    return n;
}

/* Mode 3: an API call on the target host (posting work, closing), so that
 * packets also meet QPs in CLOSING, CLOSED and ERROR and fresh work. */
static void action(int host, mre_qp *qp, const uint8_t *d, size_t n)
{
    uint8_t b[16];
    memset(b, 0, sizeof(b));
    memcpy(b, d, n < sizeof(b) ? n : sizeof(b));
    switch (b[0] % 6) {
    case 0: { /* post a receive */
        uint32_t off = ld16(b + 1) % LOC_LEN;
        uint32_t len = ld16(b + 3) % (LOC_LEN - off + 1);
        post_recv(qp, host, off, len, b[5] * 64u, b[6], b[7] % 3);
        break;
    }
    case 1: { /* post a send of any opcode, maybe bad remote bounds/key */
        enum mroce_wr_opcode op = (enum mroce_wr_opcode)(b[1] % 7);
        int lreg = op >= MROCE_WR_READ ? R_LOC : b[2] % NREG;
        int rreg = b[3] % NREG;
        uint32_t loff = ld16(b + 4) % reg_len[lreg];
        uint32_t len = ld16(b + 6) % (reg_len[lreg] - loff + 1);
        uint32_t roff = ld16(b + 8);
        if (op == MROCE_WR_FETCH_ADD || op == MROCE_WR_CMP_SWAP) {
            loff &= ~7u;
            len = 8;
            roff &= ~7u;
        }
        if (loff + len > reg_len[lreg])
            break;
        post_send(qp, host, op, lreg, loff, len, rreg, roff, b[10] & 15u,
                  0x100u + b[11]);
        break;
    }
    case 2:
        mre_qp_disconnect(qp, F.now);
        break;
    case 3:
        mre_qp_set_error(qp);
        break;
    case 4: /* let the genuine traffic settle */
        pump(1, 16);
        break;
    default: /* a run of timers with nothing delivered */
        for (int i = 0; i < 8; i++) {
            mroce_tstamp t = next_expiry();
            if (t == MROCE_TSTAMP_INF)
                break;
            if (t > F.now)
                F.now = t;
            timers();
            pump(0, 1);
        }
        break;
    }
}

static void advance(unsigned mode)
{
    switch (mode >> 6) {
    case 0:
        F.now += 100;
        break;
    case 1:
        F.now += 20000;
        break;
    case 2:
        F.now += 2000000;
        break;
    default: {
        mroce_tstamp t = next_expiry();
        F.now = t != MROCE_TSTAMP_INF && t > F.now ? t : F.now + 1000000;
        break;
    }
    }
    timers();
}

static void deliver(unsigned mode, const uint8_t *data, size_t len)
{
    static uint8_t buf[FZ_MAX_PKT];
    int host = mode & 1;
    unsigned pm = (mode >> 1) & 3;
    mre_qp *qp = (mode & 8) ? F.h[host].aux : F.h[host].qp;
    if (pm == 3) {
        action(host, qp, data, len);
    } else {
        if (len > sizeof(buf))
            len = sizeof(buf);
        memcpy(buf, data, len);
        if (pm)
            len = fixup(buf, len, qp, host, pm == 2);
        rx(host, buf, len, 1 - host, (mode >> 4) & 1);
    }
    pump((mode >> 5) & 1, 4);
    check_all();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    for (int nrec = 0; size >= 3 && nrec < FZ_MAX_RECORDS; nrec++) {
        unsigned mode = data[0];
        size_t len = ld16(data + 1);
        data += 3;
        size -= 3;
        if (len > size)
            len = size;
        advance(mode);
        deliver(mode, data, len);
        data += len;
        size -= len;
    }
    teardown();
    return 0;
}

#ifdef GEN_CORPUS
/* --- seed corpus generator: genuine traffic written back as records --- */

static uint8_t G[1 << 20];
static size_t glen;

static void emit(unsigned mode, const uint8_t *p, size_t len)
{
    FZ_CHECK(glen + 3 + len <= sizeof(G));
    G[glen++] = (uint8_t)mode;
    G[glen++] = (uint8_t)(len >> 8);
    G[glen++] = (uint8_t)len;
    memcpy(G + glen, p, len);
    glen += len;
}

/* One record, written and fed to the live state; relative encoding (mode 2)
 * is computed after the time advance, from the state the target sees. */
static void gen_record(unsigned mode, const uint8_t *p, size_t len)
{
    uint8_t buf[FZ_MAX_PKT];
    struct mrw_pkt pk;
    if (len)
        memcpy(buf, p, len);
    advance(mode);
    int host = mode & 1;
    mre_qp *qp = (mode & 8) ? F.h[host].aux : F.h[host].qp;
    if (((mode >> 1) & 3) == 2 && mrw_pkt_decode(&pk, p, len) == 0) {
        rel(&pk, qp, host, -1);
        len = mrw_pkt_encode(&pk, buf, sizeof(buf));
    }
    emit(mode, buf, len);
    F.ncap = 0;
    deliver(mode, buf, len);
}

static void gen_report(void)
{
    for (int h = 0; h < 2; h++)
        for (int a = 0; a < 2; a++) {
            const mre_qp *qp = a ? F.h[h].aux : F.h[h].qp;
            printf("  %c%s %-10s sq %u/%u rq %u/%u una %u nxt %u cpl %llu "
                   "retx %llu (path %llu ooo %llu rto %llu probe %llu rnr "
                   "%llu) dups %llu\n",
                   "AB"[h], a ? "-aux" : "    ",
                   mroce_qp_state_str((enum mroce_qp_state)qp->state),
                   qp->sq_tail - qp->sq_head, qp->sq_tail,
                   qp->rq_tail - qp->rq_head, qp->rq_tail,
                   qp->snd_una - qp->local_start_psn,
                   qp->snd_nxt - qp->local_start_psn,
                   (unsigned long long)qp->cnt.completions,
                   (unsigned long long)qp->cnt.retx_pkts,
                   (unsigned long long)qp->cnt.retx_path,
                   (unsigned long long)qp->cnt.retx_ooo,
                   (unsigned long long)qp->cnt.retx_rto,
                   (unsigned long long)qp->cnt.retx_probe,
                   (unsigned long long)qp->cnt.retx_rnr,
                   (unsigned long long)qp->cnt.rx_dups);
        }
}

static void gen_write(const char *dir, const char *name)
{
    gen_report();
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    FZ_CHECK(f != NULL);
    FZ_CHECK(fwrite(G, 1, glen, f) == glen);
    fclose(f);
    printf("%s: %zu bytes\n", path, glen);
}

/* Genuine run: every drained packet becomes the next record (pkt mode pm,
 * drop every drop_nth, CE every ce_nth); timers when nothing is pending. */
static void gen_genuine(unsigned pm, int drop_nth, int ce_nth, int maxrec,
                        int handshake)
{
    struct qpkt pend[FZ_QUEUE * 4];
    int np = 0, seq = 0;
    F.capture = 1;
    if (handshake) { /* +2 ms: A's handshake QP resends its CONNECT_REQ */
        gen_record(2u << 6, NULL, 0);
        for (int i = 0; i < F.ncap; i++)
            pend[np++] = F.cap[i];
        F.ncap = 0;
    }
    for (int r = 0; r < maxrec; r++) {
        if (np == 0) {
            if (next_expiry() == MROCE_TSTAMP_INF)
                break;
            gen_record(3u << 6, NULL, 0); /* to the next timer */
        } else {
            struct qpkt q = pend[0];
            memmove(pend, pend + 1, (size_t)(np - 1) * sizeof(pend[0]));
            np--;
            seq++;
            if (drop_nth && seq % drop_nth == 0)
                continue;
            unsigned mode = (unsigned)q.dst | pm << 1;
            if (ce_nth && seq % ce_nth == 0)
                mode |= 16;
            if (handshake && q.qp_num == F.h[0].aux->qpn &&
                q.buf[1] == MROCE_OP_CONNECT_REQ)
                mode = 1u | 1u << 1 | 8u; /* to B's listener */
            if (handshake && q.qp_num == F.h[1].aux->qpn &&
                q.buf[1] == MROCE_OP_CONNECT_RESP) {
                /* answer A's handshake QP as the QPN it asked for */
                st32(q.buf + MROCE_BASE_HDR_LEN, F.h[0].aux->peer_qpn);
                mode = 0u | 1u << 1 | 8u;
            }
            gen_record(mode, q.buf, q.len);
        }
        for (int i = 0;
             i < F.ncap && np < (int)(sizeof(pend) / sizeof(pend[0])); i++)
            pend[np++] = F.cap[i];
        F.ncap = 0;
    }
    F.capture = 0;
}

static void gen_action(int host, const uint8_t *b, size_t n)
{
    gen_record((unsigned)host | 3u << 1, b, n);
}

/* A crafted packet from the target's point of view (relative fields). */
static void gen_crafted(int host, struct mrw_pkt *p)
{
    uint8_t buf[FZ_MAX_PKT];
    p->base.version = MROCE_VERSION;
    size_t n = mrw_pkt_encode(p, buf, sizeof(buf));
    FZ_CHECK(n > 0);
    advance(0);
    emit((unsigned)host | 2u << 1, buf, n);
    deliver((unsigned)host | 2u << 1, buf, n);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : ".";
    static const struct {
        const char *name;
        unsigned pm;
        int drop, ce, handshake;
    } runs[] = {
        {"genuine_raw", 0, 0, 0, 0},      {"genuine_fixup", 1, 0, 0, 0},
        {"genuine_relative", 2, 0, 0, 0}, {"lossy_ce", 0, 4, 5, 0},
        {"handshake", 0, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
        glen = 0;
        setup();
        gen_genuine(runs[i].pm, runs[i].drop, runs[i].ce, 60,
                    runs[i].handshake);
        gen_write(dir, runs[i].name);
        teardown();
    }

    /* Close and error paths: disconnect A, settle, error B. */
    glen = 0;
    setup();
    gen_action(0, (const uint8_t[]){2}, 1);
    gen_genuine(0, 0, 0, 40, 0);
    gen_action(1, (const uint8_t[]){3}, 1);
    gen_genuine(0, 0, 0, 10, 0);
    gen_write(dir, "close_error");
    teardown();

    /* Fresh work of every opcode from B, then genuine traffic. */
    glen = 0;
    setup();
    for (uint8_t op = 0; op < 7; op++)
        gen_action(1,
                   (const uint8_t[]){1, op, 0, 0, 0, 64, 0x06, 0, 0, 64, 1, op},
                   12);
    gen_action(0, (const uint8_t[]){0, 0x20, 0, 0x08, 0, 1, 1, 1}, 8);
    gen_genuine(0, 0, 0, 60, 0);
    gen_write(dir, "actions");
    teardown();

    /* Hostile packets at window edges, in relative form. */
    glen = 0;
    setup();
    {
        struct mrw_pkt p;
        static const uint8_t codes[] = {1, 2, 3, 4, 5, 6, 7};
        for (size_t i = 0; i < sizeof(codes); i++) { /* NAK each code */
            memset(&p, 0, sizeof(p));
            p.base.opcode = MROCE_OP_NAK;
            p.u.nak.nak_psn = (uint32_t)i;
            p.u.nak.code = codes[i];
            p.u.nak.rnr_delay = 1;
            gen_crafted(i & 1, &p);
        }
        memset(&p, 0, sizeof(p)); /* ACK everything, absurd SACK */
        p.base.opcode = MROCE_OP_ACK;
        p.u.ack.cum_psn = 3;
        p.u.ack.sack_words = MROCE_MAX_SACK_WORDS;
        memset(p.u.ack.sack, 0xff, sizeof(p.u.ack.sack));
        p.u.ack.credit = 1;
        gen_crafted(0, &p);
        memset(&p, 0, sizeof(p)); /* READ past the end of a region */
        p.base.opcode = MROCE_OP_READ_REQ;
        p.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
        p.base.psn = 255;
        p.u.rq.req.raddr = RO_OFF + RO_LEN - 8;
        p.u.rq.req.rkey = R_RO;
        p.u.rq.req.msg_len = 16;
        gen_crafted(1, &p);
        memset(&p, 0, sizeof(p)); /* WRITE at the window's far edge */
        p.base.opcode = MROCE_OP_WRITE;
        p.base.flags = MROCE_F_LAST;
        p.base.psn = 255;
        p.u.rq.req.raddr = RW_OFF;
        p.u.rq.req.rkey = R_RW;
        p.u.rq.req.msg_len = RW_LEN;
        p.u.rq.req.offset = RW_LEN - 4;
        static const uint8_t four[4] = {1, 2, 3, 4};
        p.payload = four;
        p.payload_len = 4;
        gen_crafted(1, &p);
        static const uint8_t pay[40] = {9, 8, 7, 6, 5, 4, 3, 2, 1};
        memset(&p, 0, sizeof(p)); /* SEND: two packets, one offset twice */
        p.base.opcode = MROCE_OP_SEND;
        p.base.flags = MROCE_F_FIRST;
        p.u.rq.req.msg_len = 64;
        p.payload = pay;
        p.payload_len = 40;
        gen_crafted(0, &p);
        p.base.flags = MROCE_F_LAST;
        p.u.rq.req.offset = 24;
        gen_crafted(0, &p);
        memset(&p, 0, sizeof(p)); /* atomics, one misaligned */
        p.base.opcode = MROCE_OP_FETCH_ADD;
        p.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
        p.u.rq.req.raddr = RW_OFF + 64;
        p.u.rq.req.rkey = R_RW;
        p.u.rq.req.msg_len = 8;
        p.u.rq.atomic.swap_add = 5;
        gen_crafted(0, &p);
        p.base.opcode = MROCE_OP_CMP_SWAP;
        p.u.rq.req.raddr = RW_OFF + 68;
        gen_crafted(0, &p);
        memset(&p, 0, sizeof(p)); /* READ_RESP for the oldest send */
        p.base.opcode = MROCE_OP_READ_RESP;
        p.base.flags = MROCE_F_FIRST;
        p.u.resp.msg_len = 2500;
        p.payload = pay;
        p.payload_len = 40;
        gen_crafted(1, &p);
        memset(&p, 0, sizeof(p));
        p.base.opcode = MROCE_OP_ATOMIC_RESP;
        p.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
        p.u.resp.msg_len = 8;
        p.payload = pay;
        p.payload_len = 8;
        gen_crafted(1, &p);
        memset(&p, 0, sizeof(p)); /* CONNECT_RESP in RTS */
        p.base.opcode = MROCE_OP_CONNECT_RESP;
        p.u.conn.mtu = 256;
        p.u.conn.rx_window = 64;
        gen_crafted(0, &p);
        memset(&p, 0, sizeof(p)); /* DISCONNECT */
        p.base.opcode = MROCE_OP_DISCONNECT;
        gen_crafted(1, &p);
    }
    gen_genuine(0, 0, 0, 30, 0);
    gen_write(dir, "crafted");
    teardown();

    /* Keepalives (REL-34, REL-35): an ACK with ACK_REQ to each host, then
     * genuine traffic run on until the timers send their own. */
    glen = 0;
    setup();
    {
        struct mrw_pkt p;
        memset(&p, 0, sizeof(p));
        p.base.opcode = MROCE_OP_ACK;
        p.base.flags = MROCE_F_ACK_REQ;
        p.u.ack.echo_flags = MROCE_ECHO_DUP;
        p.u.ack.credit = MROCE_CREDIT_UNLIMITED;
        gen_crafted(0, &p);
        gen_crafted(1, &p);
    }
    gen_genuine(0, 0, 0, 300, 0);
    gen_write(dir, "keepalive");
    teardown();
    return 0;
}
#endif
