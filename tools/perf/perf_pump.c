/*
 * perf_pump.c - the completion pump and the control channel.  In --progress
 * app nothing moves unless we call into the library, so every wait in
 * mroce-perf loops on pump_all(): it polls every QP's CQ (which drives the
 * device), dispatches receives (control messages into the inbox, data SENDs
 * checked) and send completions (WRs retired, bandwidth events recorded,
 * READs and atomics checked), and gives up if the peer stays silent for
 * --timeout.  Control messages are SENDs with immediate CTRL_IMM on QP 0 in
 * big-endian words; send_ctrl() waits for each, wait_ctrl() takes them in
 * order from the inbox.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* ----------------------------------------------------- control messages --- */

static void ctrl_put(uint8_t *buf, const struct ctrl *c)
{
    const uint64_t *w = (const uint64_t *)(const void *)c;
    for (size_t i = 0; i < sizeof(*c) / 8; i++) {
        uint64_t be = htobe64(w[i]);
        memcpy(buf + i * 8, &be, 8);
    }
}

int ctrl_get(struct ctrl *c, const uint8_t *buf, uint32_t len)
{
    if (len != sizeof(*c))
        return -1;
    uint64_t *w = (uint64_t *)(void *)c;
    for (size_t i = 0; i < sizeof(*c) / 8; i++) {
        uint64_t be;
        memcpy(&be, buf + i * 8, 8);
        w[i] = be64toh(be);
    }
    return c->version == CTRL_VERSION ? 0 : -1;
}

/* ----------------------------------------------------- completion pump --- */

static void on_recv(struct pqp *q, const struct mroce_wc *wc)
{
    uint32_t i = (uint32_t)(wc->wr_id & WRID_IDX_MASK);
    const uint8_t *buf = q->rx + (size_t)i * P.rx_slot;
    if ((wc->wc_flags & MROCE_WC_WITH_IMM) && wc->imm_data == CTRL_IMM) {
        struct ctrl *c = &P.inbox[P.in_tail % 8];
        if (P.in_tail - P.in_head >= 8)
            die("control inbox overflow");
        if (ctrl_get(c, buf, wc->byte_len) < 0)
            die("malformed control message (%u bytes)", wc->byte_len);
        P.in_tail++;
    } else {
        /* A data SEND: check it against the message index it must be. */
        uint64_t k = q->rx_data++;
        uint32_t qi = (uint32_t)(q - P.q);
        if (wc->byte_len != P.cur_size) {
            fprintf(stderr,
                    "mroce-perf: QP %u message %" PRIu64
                    ": %u bytes, expected %u\n",
                    qi, k, wc->byte_len, P.cur_size);
            P.mismatches++;
        } else if (P.verify && P.test == T_SEND_BW) {
            note_check(wc->byte_len, pat_check(buf, wc->byte_len, qi, k),
                       "SEND", qi, k);
        } else if (P.verify && P.test == T_SEND_LAT) {
            /* send_lat: the first 8 bytes carry the message index. */
            uint64_t bad = 0;
            if (wc->byte_len >= 8) {
                uint64_t got;
                memcpy(&got, buf, 8);
                bad = got != k ? 8 : 0;
                bad += pat_check(buf + 8, wc->byte_len - 8, qi, 0);
            } else {
                bad = pat_check(buf, wc->byte_len, qi, 0);
            }
            note_check(wc->byte_len, bad, "SEND", qi, k);
        }
    }
    post_recv_buf(q, i);
}

/* Verify READ (or atomic) results of WRs [q->rd_checked, upto). */
static void check_reads(struct pqp *q, uint64_t upto)
{
    uint32_t qi = (uint32_t)(q - P.q);
    uint32_t size = P.cur_size;
    for (; q->rd_checked < upto; q->rd_checked++) {
        uint64_t idx = q->rd_checked;
        if (P.test == T_READ_BW || P.test == T_READ_LAT) {
            uint32_t s = (uint32_t)(idx % nslots(size));
            if (P.test == T_READ_LAT)
                s = 0;
            note_check(size, pat_check(q->src + (size_t)s * size, size, qi, s),
                       "READ", qi, idx);
        } else if (P.test == T_ATOMIC_LAT) {
            uint64_t got;
            memcpy(&got, q->src, 8);
            note_check(8, got != idx ? 8 : 0, "atomic", qi, idx);
        }
    }
}

static void on_send(struct pqp *q, const struct mroce_wc *wc)
{
    if (wc->wr_id & WRID_CTRL) {
        P.ctrl_done = wc->wr_id & WRID_IDX_MASK;
        return;
    }
    uint64_t idx = wc->wr_id & WRID_IDX_MASK;
    uint64_t n = idx + 1 - q->done; /* this completion retires n WRs */
    q->done = idx + 1;
    if (P.verify) /* READ and atomic tests signal every WR when verifying */
        check_reads(q, q->done);
    P.bytes_done += n * P.cur_size;
    if (P.nev == P.cap_ev) {
        size_t cap = P.cap_ev ? 2 * P.cap_ev : 1024;
        void *e = realloc(P.ev, cap * sizeof(*P.ev));
        if (!e)
            die("out of memory");
        P.ev = e;
        P.cap_ev = cap;
    }
    P.ev[P.nev][0] = now_ns();
    P.ev[P.nev][1] = P.bytes_done;
    P.nev++;
}

/* Poll one queue pair's CQ (in APP mode an empty poll drives the device).
 * Returns the completions handled. */
static int pump(struct pqp *q)
{
    struct mroce_wc wc[32];
    int n = mroce_poll_cq(q->cq, 32, wc);
    if (n < 0)
        die("poll_cq: %s", mroce_strerror(n));
    for (int i = 0; i < n; i++) {
        if (wc[i].status != MROCE_WC_SUCCESS) {
            if (P.closing && wc[i].status == MROCE_WC_WR_FLUSH_ERR)
                continue;
            /* Receives flushed by the peer's orderly disconnect: fine once
             * it has said FIN (a progress thread can process its DISCONNECT
             * before we have even read FIN); wait_ctrl() fails otherwise.
             * The same for our last control message: the peer disconnects
             * only after it has everything it waits for, so a control SEND
             * it received but whose ACK was lost is flushed by its
             * DISCONNECT (CONN-17) although it arrived. */
            if (wc[i].status == MROCE_WC_WR_FLUSH_ERR &&
                (wc[i].wr_id & (WRID_RECV | WRID_CTRL)) &&
                mroce_qp_get_state(q->qp) == MROCE_QPS_CLOSED) {
                P.peer_closed = 1;
                /* send_ctrl() waits for this one: it is done. */
                if (wc[i].wr_id & WRID_CTRL)
                    P.ctrl_done = wc[i].wr_id & WRID_IDX_MASK;
                continue;
            }
            die("error completion on QP %u: %s (%s %" PRIu64 ")",
                (unsigned)(q - P.q), mroce_wc_status_str(wc[i].status),
                (wc[i].wr_id & WRID_RECV)   ? "receive"
                : (wc[i].wr_id & WRID_CTRL) ? "control message"
                                            : "data work request",
                (uint64_t)(wc[i].wr_id & WRID_IDX_MASK));
        }
        if (wc[i].wr_id & WRID_RECV)
            on_recv(q, &wc[i]);
        else
            on_send(q, &wc[i]);
    }
    return n;
}

/* Packets received over all QPs. */
static uint64_t rx_pkts_all(void)
{
    uint64_t pkts = 0;
    for (uint32_t i = 0; i < P.nqps; i++) {
        struct mroce_qp_counters c;
        if (P.q[i].qp && mroce_qp_get_counters(P.q[i].qp, &c) == 0)
            pkts += c.rx_pkts;
    }
    return pkts;
}

/* --rekey: SEC-32's second step, under traffic, once 256 packets came
 * in.  Checked on every call until then, not on liveness()'s 100 ms
 * clock: a run may end within 100 ms of its 256th packet. */
static void rekey_check(void)
{
    if (!P.o.rekey || P.rekeyed || rx_pkts_all() < 256)
        return;
    int rc = mroce_device_use_key(P.dev, 1);
    if (rc < 0)
        die("--rekey: %s", mroce_strerror(rc));
    P.rekeyed = 1;
}

/* Dies if the peer has sent nothing for --timeout (checked every 100 ms). */
static void liveness(uint64_t t)
{
    rekey_check();
    if (P.live_t == 0) {
        P.live_t = P.live_chk = t;
        return;
    }
    if (t - P.live_chk < 100000000ull)
        return;
    P.live_chk = t;
    uint64_t pkts = rx_pkts_all();
    if (pkts != P.live_pkts) {
        P.live_pkts = pkts;
        P.live_t = t;
    } else if (t - P.live_t > timeout_ns()) {
        die("peer silent for %.0f s; giving up", P.o.timeout);
    }
}

void pump_all(void)
{
    for (uint32_t i = 0; i < P.nqps; i++)
        pump(&P.q[i]);
    /* The clock only every 64th pump: a read costs ~40 ns in a VM, and in
     * a latency test the pump that finds the answer pays it on the timed
     * path; 64 pumps take microseconds, the check's period is 100 ms. */
    if ((++P.live_pumps & 63) == 0 || P.live_t == 0)
        liveness(now_ns());
}

void send_ctrl(struct ctrl *c)
{
    c->version = CTRL_VERSION;
    /* The previous control SEND has completed (we waited), so the buffer is
     * free again. */
    ctrl_put(P.ctrl_tx, c);
    struct mroce_sge sge = {.addr = (uintptr_t)P.ctrl_tx,
                            .length = sizeof(*c),
                            .lkey = P.lkey};
    uint64_t seq = ++P.ctrl_seq;
    struct mroce_send_wr wr = {
        .wr_id = WRID_CTRL | seq,
        .sg_list = &sge,
        .num_sge = 1,
        .opcode = MROCE_WR_SEND_WITH_IMM,
        .send_flags = MROCE_SEND_SIGNALED,
        .imm_data = CTRL_IMM,
    };
    struct mroce_send_wr *bad;
    int rc = mroce_post_send(P.q[0].qp, &wr, &bad);
    if (rc < 0)
        die("post_send (control): %s", mroce_strerror(rc));
    /* Wait for it: a completion means placed at the peer, and (completions
     * being in order) every earlier WR on QP 0 done. */
    while (P.ctrl_done != seq)
        pump_all();
}

struct ctrl wait_ctrl(enum ctrl_type want)
{
    while (P.in_head == P.in_tail) {
        if (P.peer_closed)
            die("the peer disconnected");
        pump_all();
    }
    struct ctrl c = P.inbox[P.in_head++ % 8];
    if (c.type != want)
        die("protocol: expected control message %d, got %" PRIu64, (int)want,
            c.type);
    return c;
}

int have_ctrl(void)
{
    return P.in_head != P.in_tail;
}
