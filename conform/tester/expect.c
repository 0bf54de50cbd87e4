/*
 * expect.c - where the IUT's packets arrive and are judged.  ct_recv()
 * reads one datagram from any tester socket, decodes it with the wire
 * codec, and, for data packets sent to one of the case's connections,
 * does the tester's receiver bookkeeping (cumulative PSN, bitmap, RX/CE
 * counts, REL-6..REL-11) and, unless the case turned it off, ACKs it at
 * once so that the IUT, as a sender, completes its work.  The expect_*
 * helpers wait for a specific answer (an ACK up to a cumulative PSN, a NAK
 * with a code, a given opcode) or for silence, and fail the case with what
 * arrived instead: "expected X, got Y".  A packet the IUT sends that our
 * codec rejects is always a failure (WIRE-2..WIRE-26 apply to senders too).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "ct_int.h"

void ct_pkt_fmt(const struct mrw_pkt *p, char *buf, size_t cap)
{
    const struct mrw_base_hdr *b = &p->base;
    int n = snprintf(buf, cap, "%s dst=%u psn=%u flags=0x%x ent=%u",
                     mrw_opcode_name(b->opcode), b->dst_qpn, b->psn, b->flags,
                     b->entropy);
    size_t o = n < 0 ? 0 : (size_t)n;

    if (o >= cap)
        return;
    switch (b->opcode) {
    case MROCE_OP_SEND:
    case MROCE_OP_WRITE:
    case MROCE_OP_READ_REQ:
    case MROCE_OP_FETCH_ADD:
    case MROCE_OP_CMP_SWAP:
        snprintf(buf + o, cap - o, " msn=%u rsn=%u len=%u off=%u pay=%u",
                 p->u.rq.req.msn, p->u.rq.req.rsn, p->u.rq.req.msg_len,
                 p->u.rq.req.offset, p->payload_len);
        break;
    case MROCE_OP_READ_RESP:
    case MROCE_OP_ATOMIC_RESP:
        snprintf(buf + o, cap - o, " req_msn=%u len=%u off=%u pay=%u",
                 p->u.resp.req_msn, p->u.resp.msg_len, p->u.resp.offset,
                 p->payload_len);
        break;
    case MROCE_OP_ACK:
        snprintf(buf + o, cap - o,
                 " cum=%u echo=%u eflags=0x%x sack=%u[%08x] rx=%u ce=%u",
                 p->u.ack.cum_psn, p->u.ack.echo_psn, p->u.ack.echo_flags,
                 p->u.ack.sack_words,
                 p->u.ack.sack_words ? p->u.ack.sack[0] : 0, p->u.ack.rx_count,
                 p->u.ack.ce_count);
        break;
    case MROCE_OP_NAK:
        snprintf(buf + o, cap - o, " nak_psn=%u code=%s cum=%u",
                 p->u.nak.nak_psn, mrw_nak_code_name(p->u.nak.code),
                 p->u.nak.cum_psn);
        break;
    case MROCE_OP_CONNECT_REQ:
    case MROCE_OP_CONNECT_RESP:
        snprintf(buf + o, cap - o, " src_qpn=%u start=%u mtu=%u win=%u",
                 p->u.conn.src_qpn, p->u.conn.start_psn, p->u.conn.mtu,
                 p->u.conn.rx_window);
        break;
    default:
        break;
    }
}

const char *ct_describe(struct ct *t, const struct ct_rx *rx)
{
    char d[320];

    if (rx->rc < 0)
        snprintf(d, sizeof(d), "a malformed datagram (%s) of %zu bytes",
                 mrw_wire_error_name(rx->rc), rx->len);
    else
        ct_pkt_fmt(&rx->p, d, sizeof(d));
    snprintf(t->desc, sizeof(t->desc), "%s from %s%s", d, rx->from,
             rx->sock >= 0 ? " (to an entropy socket)" : "");
    return t->desc;
}

static struct ct_conn *conn_of(struct ct *t, uint32_t qpn)
{
    for (int i = 0; i < t->nconns; i++)
        if (t->conns[i]->qpn == qpn)
            return t->conns[i];
    return NULL;
}

static int bit_get(const struct ct_conn *c, uint32_t k)
{
    return (c->rcv_bits[k / 8] >> (k % 8)) & 1;
}

/* Receiver bookkeeping for a data packet of the IUT; returns 1 if it was
 * new. */
static int rcv_data(struct ct_conn *c, const struct ct_rx *rx)
{
    int32_t d = mrw_psn_diff(rx->p.base.psn, c->rcv_cum);

    if (d < 0 || d >= CT_RCV_BITS || bit_get(c, (uint32_t)d))
        return 0;
    c->rcv_bits[d / 8] |= (uint8_t)(1u << (d % 8));
    c->rx_count++;
    if (rx->ecn == CT_ECN_CE)
        c->ce_count++;
    while (bit_get(c, 0)) {
        /* shift the bitmap down by one */
        for (unsigned i = 0; i < sizeof(c->rcv_bits); i++)
            c->rcv_bits[i] = (uint8_t)((c->rcv_bits[i] >> 1) |
                                       (i + 1 < sizeof(c->rcv_bits)
                                            ? c->rcv_bits[i + 1] << 7
                                            : 0));
        c->rcv_cum++;
    }
    return 1;
}

const struct ct_rx *ct_recv(struct ct *t, int wait_ms)
{
    struct ct_rx *rx = &t->rx;
    struct ct_conn *c;
    socklen_t fl = sizeof(rx->from_sa);
    int r = ct_net_recv(&t->run->net, wait_ms < 0 ? 0 : wait_ms, rx->buf,
                        sizeof(rx->buf), &rx->len, &rx->ecn, &rx->from_sa, &fl,
                        &rx->sock);

    if (r < 0)
        ct_fail(t, "tester: receive failed");
    if (r == 0)
        return NULL;
    rx->from_len = fl;
    rx->sport = ct_net_port(&rx->from_sa);
    ct_net_fmt(&rx->from_sa, rx->from, sizeof(rx->from));
    memset(&rx->p, 0, sizeof(rx->p));
    rx->rc = mrw_pkt_decode(&rx->p, rx->buf, rx->len);
    if (t->run->verbose)
        ct_log(t, "rx %s ecn=%d", ct_describe(t, rx), rx->ecn);
    if (rx->rc == 0 && mrw_opcode_has_psn(rx->p.base.opcode) &&
        (c = conn_of(t, rx->p.base.dst_qpn)) != NULL && c->connected &&
        rx->p.base.token == c->token) {
        rcv_data(c, rx);
        if (c->auto_ack)
            ct_send_ack(c, &rx->p);
    }
    /* A peer answers keepalives (REL-35), so that a case that takes
     * longer than the IUT's peer_timeout does not see its QP fail. */
    if (rx->rc == 0 && rx->p.base.opcode == MROCE_OP_ACK &&
        (rx->p.base.flags & MROCE_F_ACK_REQ) &&
        (c = conn_of(t, rx->p.base.dst_qpn)) != NULL && c->connected &&
        rx->p.base.token == c->token && c->auto_ack)
        ct_rl_send_ack(c, c->rcv_cum, NULL, 0, NULL, MROCE_ECHO_DUP);
    return rx;
}

/* Milliseconds left until deadline (ns), at least 0. */
int ct_left_ms(uint64_t deadline)
{
    uint64_t now = ct_now_ns();
    return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

void ct_expect_silence(struct ct *t, int wait_ms)
{
    int ms = ct_ms(t, wait_ms);
    const struct ct_rx *rx = ct_recv(t, ms);

    if (rx)
        ct_fail(t, "expected silence for %d ms, got %s", ms,
                ct_describe(t, rx));
}

/* The one loop every wait for a connection's next packet goes through. */
const struct ct_rx *ct_next_until(struct ct_conn *c, uint64_t end)
{
    struct ct *t = c->t;

    for (;;) {
        const struct ct_rx *rx = ct_recv(t, ct_left_ms(end));
        if (!rx)
            return NULL;
        if (rx->rc < 0)
            ct_fail(t, "IUT sent %s", ct_describe(t, rx));
        if (rx->p.base.dst_qpn != c->qpn) {
            ct_log(t, "skipped %s", ct_describe(t, rx));
            continue;
        }
        if (rx->p.base.opcode != MROCE_OP_CONNECT_REQ &&
            rx->p.base.token != c->token)
            ct_fail(t,
                    "IUT sent %s with Token 0x%llx, expected our token "
                    "0x%llx (CONN-14)",
                    ct_describe(t, rx), (unsigned long long)rx->p.base.token,
                    (unsigned long long)c->token);
        return rx;
    }
}

const struct ct_rx *ct_expect_op(struct ct_conn *c, uint8_t op, int skip_acks,
                                 int wait_ms)
{
    struct ct *t = c->t;
    int ms = ct_ms(t, wait_ms);
    uint64_t end = ct_now_ns() + (uint64_t)ms * 1000000u;

    for (;;) {
        const struct ct_rx *rx = ct_next_until(c, end);
        if (!rx)
            ct_fail(t, "expected %s within %d ms, got nothing",
                    mrw_opcode_name(op), ms);
        if (rx->p.base.opcode == op)
            return rx;
        if (skip_acks && rx->p.base.opcode == MROCE_OP_ACK)
            continue;
        ct_fail(t, "expected %s, got %s", mrw_opcode_name(op),
                ct_describe(t, rx));
    }
}

int ct_ack_covers(const struct mrw_pkt *ack, uint32_t psn)
{
    int32_t d = mrw_psn_diff(psn, ack->u.ack.cum_psn);
    uint32_t b;

    if (d < 0)
        return 1;
    if (d == 0 || d > 32 * MROCE_MAX_SACK_WORDS)
        return 0;
    b = (uint32_t)d - 1;
    return b / 32 < ack->u.ack.sack_words &&
           ((ack->u.ack.sack[b / 32] >> (b % 32)) & 1);
}

const struct ct_rx *ct_expect_ack(struct ct_conn *c, uint32_t cum, int wait_ms)
{
    struct ct *t = c->t;
    int ms = ct_ms(t, wait_ms);
    uint64_t end = ct_now_ns() + (uint64_t)ms * 1000000u;
    uint32_t last = c->start_psn;
    int seen = 0;

    for (;;) {
        const struct ct_rx *rx = ct_next_until(c, end);
        if (!rx) {
            if (seen)
                ct_fail(t,
                        "expected ACK with cum PSN >= %u within %d ms, "
                        "got ACKs up to cum %u only",
                        cum, ms, last);
            ct_fail(t,
                    "expected ACK with cum PSN >= %u within %d ms, got "
                    "nothing",
                    cum, ms);
        }
        if (rx->p.base.opcode != MROCE_OP_ACK)
            ct_fail(t, "expected ACK with cum PSN >= %u, got %s", cum,
                    ct_describe(t, rx));
        if (mrw_psn_diff(rx->p.u.ack.cum_psn, cum) >= 0)
            return rx;
        seen = 1;
        last = rx->p.u.ack.cum_psn;
    }
}

const struct ct_rx *ct_expect_nak(struct ct_conn *c, uint32_t psn, uint8_t code,
                                  int wait_ms)
{
    struct ct *t = c->t;
    int ms = ct_ms(t, wait_ms);
    uint64_t end = ct_now_ns() + (uint64_t)ms * 1000000u;

    for (;;) {
        const struct ct_rx *rx = ct_next_until(c, end);
        const struct mrw_pkt *p;

        if (!rx)
            ct_fail(t, "expected NAK %s for PSN %u within %d ms, got nothing",
                    mrw_nak_code_name(code), psn, ms);
        p = &rx->p;
        if (p->base.opcode == MROCE_OP_ACK && !ct_ack_covers(p, psn))
            continue;
        if (p->base.opcode != MROCE_OP_NAK)
            ct_fail(t, "expected NAK %s for PSN %u, got %s",
                    mrw_nak_code_name(code), psn, ct_describe(t, rx));
        if (p->u.nak.nak_psn != psn || p->u.nak.code != code)
            ct_fail(t, "expected NAK %s for PSN %u, got NAK %s for PSN %u",
                    mrw_nak_code_name(code), psn,
                    mrw_nak_code_name(p->u.nak.code), p->u.nak.nak_psn);
        return rx;
    }
}
