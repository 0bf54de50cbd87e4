/*
 * cases_loss.c - loss recovery (loss-recovery.md) with the IUT as sender:
 * the tester plays a lossy network by withholding acknowledgements.  The
 * IUT must resend exactly what was never acknowledged, as a faithful copy
 * (LOSS-15); take RTT samples from the echo (LOSS-2, LOSS-3); probe and
 * time out on schedule (LOSS-8..LOSS-13, measured on the IUT's own TSval
 * clock, allowing for the peer's Max ACK Delay: LOSS-25); ride out a
 * silence shorter than peer_timeout (LOSS-21); give up after retry_cnt
 * timeouts (LOSS-14); and resend a READ_REQ nobody answered.
 *
 * The IUT is the connecting side in these cases (ct_accept): it has no RTT
 * sample until our first ACK, so its first probe timeout is 5 x min_rto
 * (LOSS-8, LOSS-9), which min_rto_us= sets.  The last case has it listen,
 * to see what a listener's loss timer does before the requester has shown
 * it has the CONNECT_RESP (LOSS-30).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

CT_CASE(edge_pto_allows_peer_max_ack_delay, "LOSS-25 LOSS-9 LOSS-8",
        "the tester advertises Max ACK Delay 30 ms to an IUT requester "
        "(own max_ack_delay 10 us, min_rto 1 ms): after one acknowledged "
        "WRITE, an unacknowledged WRITE is not resent until 30 ms after it "
        "was sent (IUT TSvals), and is resent within 2 s")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "min_rto_us=1000 max_ack_delay_us=10");
    struct ct_rl_pkt first, again;
    uint32_t gap;

    c->par.max_ack_delay = 30000000;
    ct_conn_accept(c);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_expect_data(c, CT_WAIT); /* acknowledged at once: an RTT sample */
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_rl_expect_data(c, 1, CT_WAIT, &first);
    ct_rl_expect_data(c, 1, 2000, &again);
    CT_EQ(t, "resent PSN", first.p.base.psn, again.p.base.psn);
    gap = ct_rl_ts_diff(first.p.base.tsval, again.p.base.tsval);
    CT_REQUIRE(t, gap >= 30000000u,
               "WRITE resent %u us after it was sent: its probe timeout "
               "must allow for the peer's Max ACK Delay of 30 ms (LOSS-25), "
               "not the IUT's own 10 us",
               gap / 1000);
    c->auto_ack = 1;
    ct_send_ack(c, &again.p);
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", CT_WAIT);
}

CT_CASE(live_silence_survives_rtos, "LOSS-21 LOSS-14 REL-32 LOSS-13",
        "retry=1, min_rto 1 ms, peer_timeout_ms=3000: the tester answers "
        "nothing for 700 ms while the IUT's WRITE times out again and again "
        "(more than retry_cnt + 1 timeout retransmissions); the QP stays in "
        "RTS, and once ACKed the WRITE completes SUCCESS")
{
    struct ct_conn *c = ct_accept(t, "retry=1 min_rto_us=1000 "
                                     "peer_timeout_ms=3000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    const struct ct_rx *rx;
    struct ct_rl_pkt last;
    uint64_t t0;
    int retx = 0, have = 0;

    if (!c)
        return;
    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=32 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    t0 = ct_now_ns();
    while (ct_now_ns() - t0 < 700000000ull) {
        rx = ct_rl_next(c, 20);
        if (!rx || !mrw_opcode_has_psn(rx->p.base.opcode))
            continue;
        if (have && !(rx->p.base.flags & MROCE_F_PROBE))
            retx++;
        ct_rl_save(rx, &last);
        have = 1;
    }
    CT_REQUIRE(t, have, "the IUT sent no WRITE");
    CT_REQUIRE(t, retx > 2,
               "only %d timeout retransmissions in 700 ms "
               "(min_rto 1 ms, max_rto 100 ms)",
               retx);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    ct_expect_no_wc(t, c->aqp, "send", 0);
    ct_rl_send_ack(c, last.p.base.psn + 1, NULL, 0, &last.p, 0);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
}

/* Scheduling allowance for timer expiries of a software IUT, as in
 * cases_rel2.c: LOSS-19 states that a loaded host deschedules a process
 * for 1-20 ms. */
#define SCHED_ALLOWANCE_NS 40000000u

/* Posts a WRITE of len bytes from mr+off. */
static void post_write(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                       uint64_t wrid, uint32_t off, uint32_t len)
{
    ct_agent(t,
             "POST_SEND qp=%d wrid=%llu op=WRITE mr=%d off=%u len=%u "
             "raddr=0x20000 rkey=0x78",
             c->aqp, (unsigned long long)wrid, mr->id, off, len);
}

/* SACK words (at most 8) for the PSNs of mask relative to cum: bit k of
 * `rel` (k >= 1) = PSN cum + k received. */
static unsigned sack_of(uint64_t rel, uint32_t *w)
{
    unsigned n = 0;

    memset(w, 0, 8 * sizeof(*w));
    for (unsigned k = 1; k < 64; k++)
        if (rel >> k & 1) {
            w[(k - 1) / 32] |= 1u << ((k - 1) % 32);
            n = (k - 1) / 32 + 1;
        }
    return n;
}

/* Sends an 8-packet WRITE (MTU 1024) from the IUT over 4 paths, withholds
 * the PSNs in `lost` (bit k = first PSN + k), SACKs the rest echoing the
 * last packet, and requires exactly the withheld PSNs to be resent, each
 * once, as copies on another entropy; then ACKs all: SUCCESS. */
static void resend_exactly(struct ct *t, unsigned lost)
{
    struct ct_conn *c = ct_accept(t, "mtu=1024 npaths=4 min_rto_us=20000");
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw", 0);
    struct ct_rl_pkt pk[8], r;
    uint8_t d[8192];
    uint32_t w[8], cum, first;
    unsigned k0 = 0, nw, want = lost, got = 0;
    uint64_t rel = 0;
    int64_t rp;

    ct_pattern(d, sizeof(d), 41);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    c->auto_ack = 0;
    post_write(t, c, &mr, 1, 0, 8192);
    first = c->astart;
    ct_rl_take_new(c, first, pk, 8, RL_WAIT);
    rp = ct_rl_counter(t, c->aqp, "retx_pkts");
    while (!(lost >> k0 & 1))
        k0++;
    cum = first + k0;
    for (unsigned k = k0 + 1; k < 8; k++)
        if (!(lost >> k & 1))
            rel |= 1ull << (k - k0);
    nw = sack_of(rel, w);
    ct_rl_send_ack(c, cum, w, nw, &pk[7].p, 0);
    while (want) {
        unsigned k;
        ct_rl_expect_data(c, 0, RL_WAIT, &r);
        k = r.p.base.psn - first;
        CT_REQUIRE(t, k < 8 && (lost >> k & 1),
                   "the IUT resent PSN %u (first + %u), which our ACK had "
                   "acknowledged (LOSS-2, REL-25)",
                   r.p.base.psn, k);
        got++;
        if (!(want >> k & 1) && (r.p.base.flags & MROCE_F_PROBE)) {
            /* the IUT has an RTT sample now: its probe timeout can be
             * shorter than our turn-around */
            ct_log(t, "probe of PSN %u", r.p.base.psn);
            continue;
        }
        CT_REQUIRE(t, want >> k & 1,
                   "the IUT resent PSN %u twice before any further ACK",
                   r.p.base.psn);
        ch_expect_copy(t, &pk[k].p, &r.p);
        CT_REQUIRE(t, r.p.base.entropy != pk[k].p.base.entropy,
                   "PSN %u resent on its first entropy %u; with npaths 4 "
                   "it must take another path (LOSS-16)",
                   r.p.base.psn, r.p.base.entropy);
        want &= ~(1u << k);
    }
    ct_rl_send_ack(c, first + 8, NULL, 0, &r.p, 0);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    /* Probes sent before our last ACK arrived may still come; nothing
     * else may. */
    for (;;) {
        const struct ct_rx *rx = ct_rl_next(c, CT_QUIET);
        unsigned k;
        if (!rx)
            break;
        k = rx->p.base.psn - first;
        CT_REQUIRE(t,
                   mrw_opcode_has_psn(rx->p.base.opcode) && k < 8 &&
                       (lost >> k & 1) && (rx->p.base.flags & MROCE_F_PROBE),
                   "after the last ACK (only probes sent before it may "
                   "follow) the IUT sent %s",
                   ct_describe(t, rx));
        got++;
    }
    ct_rl_expect_counter(t, c->aqp, "retx_pkts", rp, got);
}

CT_CASE(loss_resend_only_withheld_psn, "LOSS-2 LOSS-6 LOSS-15 LOSS-16 REL-4",
        "IUT WRITE of 8 packets over 4 paths; we SACK all but the 4th: "
        "only the 4th is resent, once, RETX, an exact copy, on another "
        "entropy; retx_pkts +1")
{
    resend_exactly(t, 1u << 3);
}

CT_CASE(loss_resend_two_holes, "LOSS-2 LOSS-6 LOSS-15 LOSS-16 LOSS-17",
        "IUT WRITE of 8 packets; we withhold the 2nd and the 6th and SACK the "
        "others: exactly those two are resent, each once, as copies")
{
    resend_exactly(t, (1u << 1) | (1u << 5));
}

CT_CASE(loss_retx_copy_send_imm, "LOSS-15 REL-4 SEM-3 WIRE-10",
        "IUT SEND with immediate of 2500 bytes (3 packets); the middle one "
        "withheld: resent with the same MSN, RSN, IMM, Offset and bytes, a "
        "new TSval, RETX, UDP source port = its Entropy")
{
    struct ct_conn *c = ct_accept(t, "mtu=1024 npaths=4 min_rto_us=20000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt pk[3], r;
    uint8_t d[2500];
    uint32_t sack = 1;

    ct_pattern(d, sizeof(d), 42);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=3 op=SEND_IMM mr=%d off=0 len=2500 "
             "imm=0x1234abcd",
             c->aqp, mr.id);
    ct_rl_take_new(c, c->astart, pk, 3, RL_WAIT);
    ct_rl_send_ack(c, c->astart + 1, &sack, 1, &pk[2].p, 0);
    ct_rl_expect_data(c, 0, RL_WAIT, &r);
    ch_expect_copy(t, &pk[1].p, &r.p);
    CT_EQ(t, "resent Immediate", 0x1234abcd, r.p.u.rq.req.imm);
    CT_REQUIRE(t, r.p.base.tsval != pk[1].p.base.tsval,
               "retransmission carries the first transmission's TSval %u "
               "(LOSS-15: a new TSval)",
               r.p.base.tsval);
    CT_EQ(t, "retransmission UDP source port = its Entropy (WIRE-10)",
          r.p.base.entropy, r.sport);
    ct_rl_send_ack(c, c->astart + 3, NULL, 0, &r.p, 0);
    ct_expect_wc(t, c->aqp, "send", 3, "SUCCESS", RL_WAIT);
}

/* min_rto 2 ms, npaths 4, no RTT sample: the IUT sends a 2-packet WRITE
 * that we never acknowledge.  Checks the probe (LOSS-12) and then `rtos`
 * timeouts: each resends the oldest PSN first (LOSS-13), RTO_eff after the
 * previous expiry, doubling (LOSS-8); no second probe in between (LOSS-10:
 * a probe only once per ACK that newly acknowledges).  Times are the IUT's
 * own TSval differences.  Too early always fails the case; too late
 * (which a stalled host can cause) returns 1 with the reason in why. */
static int probe_and_rtos(struct ct *t, int rtos_wanted, char *why, size_t cap)
{
    struct ct_conn *c = ct_accept(t, "mtu=1024 npaths=4 min_rto_us=2000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt pk[2], pr, r;
    uint8_t d[2048];
    const uint32_t rto = 10000000u; /* 5 x min_rto before any sample */
    const uint32_t slack = 50000u;  /* TSval taken as the packet is built */
    uint32_t prev, dt;
    int rtos = 0, late = 0;

    ct_pattern(d, sizeof(d), 43);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    c->auto_ack = 0;
    post_write(t, c, &mr, 9, 0, 2048);
    ct_rl_take_new(c, c->astart, pk, 2, RL_WAIT);
    /* The probe: PTO = RTO_eff = 10 ms after the in-flight set became
     * non-empty (the first packet's transmission). */
    ct_rl_expect_data(c, 0, RL_WAIT, &pr);
    CT_EQ(t, "probe PSN (the highest in flight, LOSS-12)", c->astart + 1,
          pr.p.base.psn);
    CT_EQ(t, "probe flags RETX|PROBE|ACK_REQ",
          MROCE_F_RETX | MROCE_F_PROBE | MROCE_F_ACK_REQ,
          pr.p.base.flags & (MROCE_F_RETX | MROCE_F_PROBE | MROCE_F_ACK_REQ));
    CT_REQUIRE(t, pr.p.base.entropy != pk[1].p.base.entropy,
               "probe on the entropy of its latest transmission (%u), "
               "LOSS-12 wants another slot",
               pr.p.base.entropy);
    ch_expect_copy(t, &pk[1].p, &pr.p);
    dt = ct_rl_ts_diff(pk[0].p.base.tsval, pr.p.base.tsval);
    ct_log(t, "probe %u ns after the first transmission", dt);
    CT_REQUIRE(t, dt + slack >= rto,
               "probe %u ns after the first transmission; the probe timeout "
               "before any RTT sample is RTO_eff = 5 x min_rto = %u ns "
               "(LOSS-9, LOSS-10)",
               dt, rto);
    if (dt > rto + SCHED_ALLOWANCE_NS && !late++)
        snprintf(why, cap,
                 "probe %u ns after the first transmission, expected %u ns "
                 "(LOSS-9, LOSS-10) + %u ns allowance",
                 dt, rto, SCHED_ALLOWANCE_NS);
    /* Timeouts: the first RTO_eff after the probe (no probe allowed until
     * the next ACK or timeout), then doubled.  Each resends the oldest
     * packet first (LOSS-13); more may follow as the congestion window
     * allows.  After each timeout one probe is allowed again (LOSS-10):
     * PTO (= RTO_eff without an RTT sample) after the timeout, and the
     * next timeout RTO_eff after that probe. */
    prev = pr.p.base.tsval;
    int probed = 1;
    while (rtos < rtos_wanted) {
        ct_rl_expect_data(c, 0, RL_WAIT, &r);
        if (r.p.base.flags & MROCE_F_PROBE) {
            CT_REQUIRE(t, !probed,
                       "a second probe (PSN %u, %u ns after the previous "
                       "expiry) without an ACK or a timeout in between: "
                       "LOSS-10 allows one probe after each; the expiry "
                       "must be a timeout",
                       r.p.base.psn, ct_rl_ts_diff(prev, r.p.base.tsval));
            dt = ct_rl_ts_diff(prev, r.p.base.tsval);
            ct_log(t, "probe after RTO %d: %u ns after it", rtos, dt);
            CT_REQUIRE(t, dt + slack >= rto << rtos,
                       "probe %u ns after timeout %d; PTO without an RTT "
                       "sample is RTO_eff = %u ns (LOSS-9, LOSS-10)",
                       dt, rtos, rto << rtos);
            if (dt > (rto << rtos) + SCHED_ALLOWANCE_NS && !late++)
                snprintf(why, cap,
                         "probe %u ns after timeout %d, expected %u ns "
                         "(LOSS-10) + %u ns allowance",
                         dt, rtos, rto << rtos, SCHED_ALLOWANCE_NS);
            prev = r.p.base.tsval;
            probed = 1;
            continue;
        }
        CT_REQUIRE(t, probed,
                   "timeout %d (PSN %u) without the probe LOSS-10 allows "
                   "after timeout %d",
                   rtos + 1, r.p.base.psn, rtos);
        if (r.p.base.psn != c->astart) {
            ct_log(t, "also resent: PSN %u", r.p.base.psn);
            continue;
        }
        ch_expect_copy(t, &pk[0].p, &r.p);
        dt = ct_rl_ts_diff(prev, r.p.base.tsval);
        ct_log(t, "RTO %d: %u ns after the previous expiry", rtos + 1, dt);
        CT_REQUIRE(t, dt + slack >= rto << rtos,
                   "timeout %d resent the oldest PSN %u ns after the "
                   "previous expiry; expected RTO_eff = %u ns (LOSS-8, "
                   "LOSS-10, LOSS-13)",
                   rtos + 1, dt, rto << rtos);
        if (dt > (rto << rtos) + SCHED_ALLOWANCE_NS && !late++)
            snprintf(why, cap,
                     "timeout %d resent the oldest PSN %u ns after the "
                     "previous expiry, expected RTO_eff = %u ns (LOSS-8, "
                     "LOSS-13) + %u ns allowance",
                     rtos + 1, dt, rto << rtos, SCHED_ALLOWANCE_NS);
        prev = r.p.base.tsval;
        probed = 0;
        rtos++;
    }
    ct_rl_send_ack(c, c->astart + 2, NULL, 0, &r.p, 0);
    ct_expect_wc(t, c->aqp, "send", 9, "SUCCESS", RL_WAIT);
    ct_agent(t, "QP_DESTROY qp=%d", c->aqp);
    return late != 0;
}

/* Runs probe_and_rtos up to 3 times while it comes out late. */
static void probe_schedule(struct ct *t, int rtos)
{
    char why[256];

    for (int attempt = 1;; attempt++) {
        if (!probe_and_rtos(t, rtos, why, sizeof(why)))
            return;
        ct_log(t, "attempt %d late: %s", attempt, why);
        if (attempt == 3)
            ct_fail(t, "3 attempts late, the last: %s", why);
    }
}

CT_CASE(loss_probe_then_rto, "LOSS-9 LOSS-10 LOSS-12 LOSS-13 LOSS-16 LOSS-8",
        "min_rto 2 ms, no RTT sample, a 2-packet WRITE never ACKed: probe of "
        "the highest PSN (RETX|PROBE|ACK_REQ, other entropy) 10 ms after it "
        "was sent, then a timeout resends the oldest PSN 10 ms later (TSval "
        "clock; too early fails, 3 attempts more than 40 ms late fail)")
{
    probe_schedule(t, 1);
}

CT_CASE(loss_rto_backoff_probe_again, "LOSS-8 LOSS-10 LOSS-13",
        "as loss_probe_then_rto, two more expiries: after the timeout one "
        "probe is allowed again, a doubled RTO_eff (20 ms) later; then a "
        "timeout resends the oldest PSN 20 ms after that probe")
{
    probe_schedule(t, 2);
}

CT_CASE(loss_retry_exceeded, "LOSS-14 LOSS-13 SEM-25 SEM-23 CONN-20 CONN-21",
        "retry=1, min_rto 1 ms, two WRITE WRs never ACKed: after the probe "
        "and 1 retried timeout, the 2nd timeout fails WR 1 RETRY_EXC_ERR, "
        "WR 2 WR_FLUSH_ERR, QP ERROR; timeouts = 2; then silence")
{
    struct ct_conn *c = ct_accept(t, "retry=1 min_rto_us=1000 "
                                     "peer_timeout_ms=0");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt pk[2];
    const struct ct_rx *rx;
    int64_t to = ct_rl_counter(t, c->aqp, "timeouts");
    int rto_retx = 0;

    c->auto_ack = 0;
    post_write(t, c, &mr, 1, 0, 64);
    post_write(t, c, &mr, 2, 64, 64);
    ct_rl_take_new(c, c->astart, pk, 2, RL_WAIT);
    ct_expect_wc(t, c->aqp, "send", 1, "RETRY_EXC_ERR", RL_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "WR_FLUSH_ERR", RL_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", RL_WAIT);
    /* What was sent meanwhile waits in our socket. */
    while ((rx = ct_rl_next(c, 5)) != NULL) {
        CT_REQUIRE(t, mrw_opcode_has_psn(rx->p.base.opcode),
                   "expected only retransmissions, got %s", ct_describe(t, rx));
        if (rx->p.base.psn == c->astart && !(rx->p.base.flags & MROCE_F_PROBE))
            rto_retx++;
    }
    CT_EQ(t, "timeout retransmissions of the oldest PSN (retry_cnt 1)", 1,
          rto_retx);
    ct_rl_expect_counter(t, c->aqp, "timeouts", to, 2);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(loss_retry_exceeded_responses_only, "LOSS-14 LOSS-13 CONN-20",
        "retry=1, min_rto 1 ms: the IUT serves our READ but its READ_RESP is "
        "never ACKed; with no send WR of its own it still enters ERROR once "
        "the retries are spent, with no completion, then sends nothing")
{
    struct ct_conn *c = ct_accept(t, "retry=1 min_rto_us=1000 "
                                     "peer_timeout_ms=0");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0x21);
    struct mrw_pkt q;
    const struct ct_rx *rx;

    c->auto_ack = 0;
    ct_pkt_req(c, &q, MROCE_OP_READ_REQ);
    q.u.rq.req.raddr = mr.addr;
    q.u.rq.req.rkey = mr.rkey;
    q.u.rq.req.msg_len = 64;
    ct_send(c, &q);
    c->snd_nxt++;
    c->msn++;
    for (;;) {
        rx = ct_rl_next(c, RL_WAIT);
        if (!rx)
            ct_fail(t, "expected a READ_RESP, got nothing");
        if (rx->p.base.opcode == MROCE_OP_READ_RESP)
            break;
        CT_REQUIRE(t, rx->p.base.opcode == MROCE_OP_ACK,
                   "expected READ_RESP, got %s", ct_describe(t, rx));
    }
    ct_expect_qp_state(t, c->aqp, "ERROR", RL_WAIT);
    ct_expect_no_wc(t, c->aqp, "send", 0);
    while ((rx = ct_rl_next(c, 5)) != NULL)
        CT_REQUIRE(t,
                   rx->p.base.opcode == MROCE_OP_READ_RESP ||
                       rx->p.base.opcode == MROCE_OP_ACK,
                   "expected only READ_RESP retransmissions, got %s",
                   ct_describe(t, rx));
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(loss_read_req_resent_unanswered, "LOSS-12 LOSS-13 LOSS-15 SEM-8",
        "IUT READ of 100 bytes; we neither ACK nor answer the READ_REQ: it "
        "is resent (same PSN, MSN, address, key, length, RETX); then our "
        "READ_RESP completes the READ")
{
    struct ct_conn *c = ct_accept(t, "min_rto_us=2000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt req, r;
    uint8_t d[100];
    uint32_t s = c->snd_nxt;

    ct_pattern(d, sizeof(d), 46);
    c->auto_ack = 0;
    ch_post_read(t, c, &mr, 6, sizeof(d), &req);
    ct_rl_expect_data(c, 0, RL_WAIT, &r);
    ch_expect_copy(t, &req.p, &r.p);
    ch_send_read_resp(c, &req, s, d, sizeof(d), 0, 0);
    ct_expect_wc(t, c->aqp, "send", 6, "SUCCESS", RL_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

CT_CASE(loss_rtt_sample_from_echo, "LOSS-3 LOSS-4",
        "we hold the ACK of an IUT WRITE 200 ms: with ACK Delay = the hold the "
        "IUT's RTT sample (rtt_last) excludes it, and srtt = min_rtt = it; "
        "with ACK Delay above the raw RTT the sample is the raw RTT and "
        "srtt = 7/8 srtt + 1/8 R")
{
    struct ct_conn *c = ct_accept(t, "min_rto_us=400000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt a, b;
    uint64_t hold;
    int64_t r1, s1, m1, r2, s2, m2, want;

    c->auto_ack = 0;
    post_write(t, c, &mr, 1, 0, 64);
    ct_rl_take_new(c, c->astart, &a, 1, RL_WAIT);
    /* Hold 200 ms: longer than a loaded host's scheduling stalls (which
     * add to the IUT's raw RTT), shorter than its first probe (without an
     * RTT sample: 5 min_rto capped at max_rto, which the agent raises to
     * min_rto: 400 ms).  Not scaled by --slow: 3 x 200 ms would pass
     * that probe. */
    {
        const struct ct_rx *rx = ct_recv(t, 200);
        if (rx)
            ct_fail(t, "expected silence for 200 ms, got %s",
                    ct_describe(t, rx));
    }
    hold = ct_now_ns() - a.at_ns;
    ct_rl_send_ack_delay(c, c->astart + 1, NULL, 0, &a.p, 0, (uint32_t)hold);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    r1 = ct_rl_counter(t, c->aqp, "rtt_last");
    s1 = ct_rl_counter(t, c->aqp, "srtt");
    m1 = ct_rl_counter(t, c->aqp, "min_rtt");
    if (r1 < 0 || s1 < 0 || m1 < 0)
        ct_skip(t, "the IUT does not report rtt_last, srtt and min_rtt");
    ct_log(t, "held %llu ns; rtt_last %lld srtt %lld min_rtt %lld",
           (unsigned long long)hold, (long long)r1, (long long)s1,
           (long long)m1);
    CT_REQUIRE(t, r1 >= 1 && r1 < (int64_t)hold,
               "RTT sample %lld ns after an ACK held %llu ns with ACK Delay "
               "= the hold: the sample must exclude ACK Delay (LOSS-3)",
               (long long)r1, (unsigned long long)hold);
    CT_EQ(t, "srtt after the first sample (= R, LOSS-4)", r1, s1);
    CT_EQ(t, "min_rtt after the first sample (LOSS-4)", r1, m1);

    post_write(t, c, &mr, 2, 64, 64);
    ct_rl_take_new(c, c->astart + 1, &b, 1, RL_WAIT);
    /* the IUT has a sample now: its probe may come; it is not judged */
    while (ct_rl_next(c, 30) != NULL)
        ;
    hold = ct_now_ns() - b.at_ns;
    ct_rl_send_ack_delay(c, c->astart + 2, NULL, 0, &b.p, 0, 0xfffffff0u);
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", RL_WAIT);
    r2 = ct_rl_counter(t, c->aqp, "rtt_last");
    s2 = ct_rl_counter(t, c->aqp, "srtt");
    m2 = ct_rl_counter(t, c->aqp, "min_rtt");
    ct_log(t, "held %llu ns; rtt_last %lld srtt %lld min_rtt %lld",
           (unsigned long long)hold, (long long)r2, (long long)s2,
           (long long)m2);
    CT_REQUIRE(t, r2 >= (int64_t)hold,
               "RTT sample %lld ns, below the %llu ns we held the ACK: with "
               "ACK Delay >= the raw RTT the sample is the raw RTT (LOSS-3)",
               (long long)r2, (unsigned long long)hold);
    CT_EQ(t, "min_rtt (the lower, first sample)", m1, m2);
    want = (7 * s1 + r2) / 8;
    CT_REQUIRE(t,
               s2 >= want - want / 100 - 1000 && s2 <= want + want / 100 + 1000,
               "srtt %lld after samples %lld and %lld: expected 7/8 x %lld + "
               "1/8 x %lld = %lld (LOSS-4)",
               (long long)s2, (long long)r1, (long long)r2, (long long)s1,
               (long long)r2, (long long)want);
}

/* The next packet for c within wait_ms, keepalives and other ACKs skipped
 * (none is expected here, but none would say anything of LOSS-30). */
static const struct ct_rx *next_not_ack(struct ct_conn *c, int wait_ms)
{
    const struct ct_rx *rx;

    while ((rx = ct_rl_next(c, wait_ms)) != NULL &&
           rx->p.base.opcode == MROCE_OP_ACK)
        ;
    return rx;
}

CT_CASE(loss_listener_resends_connect_resp, "LOSS-30 LOSS-29 CONN-9",
        "the IUT listens (min_rto 1 ms), we connect and confirm nothing: "
        "after its WRITE the IUT sends its CONNECT_RESP again (same CONN "
        "Token and Start PSN), not the WRITE, at least 5 ms after the "
        "WRITE and again at least 10 ms after that (IUT TSvals); once an "
        "ACK that acknowledges nothing echoes it, the WRITE is resent, "
        "and completes SUCCESS when acknowledged")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "min_rto_us=1000");
    struct ct_rl_pkt data, r1, r2, again;
    const struct ct_rx *rx;
    uint32_t gap;

    c->auto_ack = 0;
    ct_conn_connect_unconfirmed(c);
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_rl_expect_data(c, 1, CT_WAIT, &data);
    rx = next_not_ack(c, 2000);
    CT_REQUIRE(t, rx != NULL, "nothing within 2 s of the unconfirmed WRITE");
    CT_EQ(t, "opcode after the unconfirmed WRITE (LOSS-30)",
          MROCE_OP_CONNECT_RESP, rx->p.base.opcode);
    ct_rl_save(rx, &r1);
    /* By the IUT's clock: 5 x min_rto, less 10% and 1 ms as for CONN-5 */
    gap = ct_rl_ts_diff(data.p.base.tsval, r1.p.base.tsval);
    CT_REQUIRE(t, gap + 1000000u >= 4500000u,
               "CONNECT_RESP resent %.1f ms after the WRITE, expected 5 ms "
               "(the initial RTO, LOSS-30)",
               gap / 1e6);
    CT_EQ(t, "resent CONNECT_RESP CONN Token (CONN-9)", c->atoken,
          r1.p.u.conn.token);
    CT_EQ(t, "resent CONNECT_RESP CONN Start PSN (CONN-9)", c->astart,
          r1.p.u.conn.start_psn);
    rx = next_not_ack(c, 2000);
    CT_REQUIRE(t, rx != NULL, "no second CONNECT_RESP within 2 s");
    CT_EQ(t, "opcode after the resent CONNECT_RESP (LOSS-30)",
          MROCE_OP_CONNECT_RESP, rx->p.base.opcode);
    ct_rl_save(rx, &r2);
    gap = ct_rl_ts_diff(r1.p.base.tsval, r2.p.base.tsval);
    CT_REQUIRE(t, gap + 1000000u >= 9000000u,
               "second CONNECT_RESP %.1f ms after the first resend, "
               "expected 10 ms (backed off, LOSS-30)",
               gap / 1e6);
    /* The confirming ACK as it would have come before the WRITE. */
    ct_rl_send_ack(c, c->astart, NULL, 0, &r2.p, 0);
    ct_rl_expect_data(c, 1, 2000, &again);
    CT_EQ(t, "resent PSN", data.p.base.psn, again.p.base.psn);
    CT_REQUIRE(t, (again.p.base.flags & MROCE_F_RETX) != 0,
               "the WRITE's second transmission has no RETX flag");
    c->auto_ack = 1;
    ct_rl_send_ack(c, c->astart + 1, NULL, 0, &again.p, 0);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
}
