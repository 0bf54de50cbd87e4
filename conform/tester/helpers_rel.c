/*
 * helpers_rel.c - framework helpers for the reliability, loss-recovery and
 * multipath cases (cases_rel_*.c, cases_loss.c, cases_path.c): reading one
 * counter of the IUT, single-packet WRITEs at a chosen PSN, keeping a
 * packet of the IUT beyond the next receive, and ACKs and NAKs whose every
 * field the case chooses (the tester's automatic ACK always reports its
 * true receive state; a case that plays a lossy network or a faulty peer
 * needs to say something else).  Additive only: nothing here changes what
 * the other framework files do.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_int.h"

int64_t ct_rl_counter(struct ct *t, int qp, const char *name)
{
    const char *r = ct_agent(t, "COUNTERS qp=%d", qp);
    char v[32];

    if (ct_kv_str(r, name, v, sizeof(v)) < 0)
        return -1;
    return (int64_t)strtoull(v, NULL, 0);
}

void ct_rl_expect_counter(struct ct *t, int qp, const char *name,
                          int64_t before, int64_t delta)
{
    int64_t now = ct_rl_counter(t, qp, name);

    if (now < 0 || before < 0) {
        ct_log(t, "counter %s not kept by the IUT: not checked", name);
        return;
    }
    if (now - before != delta)
        ct_fail(t, "counter %s: expected +%lld, got +%lld (%lld -> %lld)", name,
                (long long)delta, (long long)(now - before), (long long)before,
                (long long)now);
}

void ct_rl_write_pkt(struct ct_conn *c, struct mrw_pkt *p,
                     const struct ct_mr *mr, uint32_t off, const uint8_t *data,
                     uint32_t len, uint32_t psn, uint16_t flags)
{
    ct_pkt_req(c, p, MROCE_OP_WRITE);
    p->base.psn = psn;
    p->base.flags = (uint16_t)(MROCE_F_FIRST | MROCE_F_LAST | flags);
    p->u.rq.req.raddr = mr->addr + off;
    p->u.rq.req.rkey = mr->rkey;
    p->u.rq.req.msg_len = len;
    p->payload = len ? data : NULL;
    p->payload_len = len;
}

const struct ct_rx *ct_rl_next(struct ct_conn *c, int wait_ms)
{
    return ct_next_until(c, ct_now_ns() +
                                (uint64_t)ct_ms(c->t, wait_ms) * 1000000u);
}

void ct_rl_save(const struct ct_rx *rx, struct ct_rl_pkt *out)
{
    uint32_t n = rx->p.payload_len;

    out->p = rx->p;
    if (n > sizeof(out->pay))
        n = sizeof(out->pay);
    if (n && rx->p.payload)
        memcpy(out->pay, rx->p.payload, n);
    out->p.payload = n ? out->pay : NULL;
    out->p.payload_len = n;
    out->sport = rx->sport;
    out->ecn = rx->ecn;
    out->at_ns = ct_now_ns();
}

const struct ct_rx *ct_rl_expect_data(struct ct_conn *c, int skip_acks,
                                      int wait_ms, struct ct_rl_pkt *out)
{
    struct ct *t = c->t;
    int ms = ct_ms(t, wait_ms);
    uint64_t end = ct_now_ns() + (uint64_t)ms * 1000000u;

    for (;;) {
        const struct ct_rx *rx = ct_next_until(c, end);

        if (!rx)
            ct_fail(t,
                    "expected a data packet of the IUT within %d ms, got "
                    "nothing",
                    ms);
        if (mrw_opcode_has_psn(rx->p.base.opcode)) {
            if (out)
                ct_rl_save(rx, out);
            return rx;
        }
        if (skip_acks && rx->p.base.opcode == MROCE_OP_ACK)
            continue;
        ct_fail(t, "expected a data packet of the IUT, got %s",
                ct_describe(t, rx));
    }
}

void ct_rl_send_ack(struct ct_conn *c, uint32_t cum, const uint32_t *sack,
                    unsigned words, const struct mrw_pkt *echo,
                    uint8_t echo_flags)
{
    ct_rl_send_ack_delay(c, cum, sack, words, echo, echo_flags, 0);
}

void ct_rl_send_ack_delay(struct ct_conn *c, uint32_t cum, const uint32_t *sack,
                          unsigned words, const struct mrw_pkt *echo,
                          uint8_t echo_flags, uint32_t ack_delay)
{
    struct mrw_pkt p;

    ct_pkt_ctl(c, &p, MROCE_OP_ACK);
    p.u.ack.cum_psn = cum;
    if (words > MROCE_SACK_WORDS_LIMIT)
        words = MROCE_SACK_WORDS_LIMIT;
    for (unsigned j = 0; j < words; j++)
        p.u.ack.sack[j] = sack[j];
    p.u.ack.sack_words = (uint8_t)words;
    p.u.ack.echo_psn = echo ? echo->base.psn : cum;
    if (echo) {
        p.u.ack.echo_ts = echo->base.tsval;
        p.u.ack.echo_entropy = echo->base.entropy;
        p.base.entropy = echo->base.entropy;
    }
    p.u.ack.echo_flags = echo_flags;
    p.u.ack.ce_count = c->ce_count;
    p.u.ack.rx_count = c->rx_count;
    p.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    p.u.ack.ack_delay = ack_delay;
    ct_send(c, &p);
}

void ct_rl_send_nak(struct ct_conn *c, uint32_t nak_psn, uint32_t msn,
                    uint8_t code, uint8_t rnr_delay, uint32_t cum)
{
    struct mrw_pkt p;

    ct_pkt_ctl(c, &p, MROCE_OP_NAK);
    p.u.nak.nak_psn = nak_psn;
    p.u.nak.msn = msn;
    p.u.nak.code = code;
    p.u.nak.rnr_delay = rnr_delay;
    p.u.nak.cum_psn = cum;
    ct_send(c, &p);
}

uint32_t ct_rl_ts_diff(uint32_t a, uint32_t b)
{
    return b - a;
}

void ct_rl_take_new(struct ct_conn *c, uint32_t first, struct ct_rl_pkt *pk,
                    int n, int wait_ms)
{
    struct ct *t = c->t;
    int got = 0;

    while (got < n) {
        ct_rl_expect_data(c, 0, wait_ms, &pk[got]);
        if (pk[got].p.base.flags & MROCE_F_RETX) {
            ct_log(t, "skipped a retransmission of PSN %u", pk[got].p.base.psn);
            continue;
        }
        if (pk[got].p.base.psn != first + (uint32_t)got)
            ct_fail(t,
                    "IUT's first transmissions: expected PSN %u next "
                    "(consecutive from %u, REL-1), got PSN %u",
                    first + (uint32_t)got, first, pk[got].p.base.psn);
        got++;
    }
}

void ct_rl_resp_pkt(struct ct_conn *c, struct mrw_pkt *p, uint8_t op,
                    uint32_t psn, uint32_t req_msn, uint32_t msg_len,
                    uint32_t offset, const uint8_t *data, uint32_t len,
                    uint16_t flags)
{
    ct_pkt_ctl(c, p, op);
    p->base.psn = psn;
    p->base.flags = flags;
    p->u.resp.req_msn = req_msn;
    p->u.resp.msg_len = msg_len;
    p->u.resp.offset = offset;
    p->payload = len ? data : NULL;
    p->payload_len = len;
}
