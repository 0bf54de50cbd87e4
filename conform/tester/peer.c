/*
 * peer.c - the tester's own, minimal MetaRoCE peer: just enough protocol to
 * hold a connection with the IUT while every packet stays under the case's
 * control.  It does the handshake in both roles (requester: CONNECT_REQ to
 * an agent QP in LISTEN, CONNECT_RESP checked, confirming ACK; listener:
 * the agent's QP_CONNECT, CONNECT_REQ checked, CONNECT_RESP, confirming ACK
 * checked), keeps the tokens, PSNs, MSNs and RSNs of both directions, and
 * builds requests and ACKs with the wire codec.  It has no retransmission,
 * loss detection or congestion control: a case that wants a packet resent
 * sends it again.  Receive-side bookkeeping (the IUT's PSN space) and the
 * automatic ACKs live in expect.c, where packets arrive.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_int.h"

uint16_t ct_iut_port(const struct ct *t)
{
    return ct_net_port(&t->run->net.iut);
}

uint16_t ct_entropy(const struct ct *t, int e)
{
    const struct ct_net *n = &t->run->net;
    return n->eport[(unsigned)e % (unsigned)n->nent];
}

int ct_num_entropies(const struct ct *t)
{
    return t->run->net.nent;
}

struct ct_conn *ct_conn_new(struct ct *t, const char *qp_opts)
{
    struct ct_conn *c;
    const char *r;
    uint64_t tok;

    if (t->nconns == CT_MAX_CONNS)
        ct_fail(t, "tester: more than %d connections in one case",
                CT_MAX_CONNS);
    r = ct_agent(t, "QP_CREATE%s%s", qp_opts && *qp_opts ? " " : "",
                 qp_opts ? qp_opts : "");
    c = calloc(1, sizeof(*c));
    if (!c)
        ct_fail(t, "out of memory");
    t->conns[t->nconns++] = c;
    c->t = t;
    c->aqp = (int)ct_kv_u64(t, r, "qp");
    c->aqpn = (uint32_t)ct_kv_u64(t, r, "qpn");
    c->qpn = t->run->next_qpn++;
    do
        tok = ct_rand(t);
    while (tok == 0);
    c->token = tok;
    c->start_psn = (uint32_t)ct_rand(t);
    c->snd_nxt = c->start_psn;
    c->par.src_qpn = c->qpn;
    c->par.start_psn = c->start_psn;
    c->par.token = c->token;
    c->par.mtu = 4096;
    c->par.npaths = (uint16_t)ct_num_entropies(t);
    c->par.rx_window = 1024;
    c->par.max_rd_atomic = 16;
    c->par.flags = 0;
    /* The spec's default (REL-19): the IUT's loss timers allow for the
     * tester's ACK delay as it advertises it (LOSS-25), and the timing
     * cases reckon with this value; the tester itself acknowledges at once
     * (auto_ack) or not at all. */
    c->par.max_ack_delay = 10000;
    c->auto_ack = 1;
    c->imm = 0x600dcafe;
    memcpy(&c->peer, &t->run->net.iut, sizeof(c->peer));
    c->peer_len = t->run->net.iut_len;
    return c;
}

void ct_pkt_connect_req(struct ct_conn *c, struct mrw_pkt *p)
{
    memset(p, 0, sizeof(*p));
    p->base.version = MROCE_VERSION;
    p->base.opcode = MROCE_OP_CONNECT_REQ;
    p->base.dst_qpn = c->aqpn;
    p->base.token = 0;
    p->base.psn = c->start_psn;
    p->base.tsval = (uint32_t)ct_now_ns();
    p->base.entropy = ct_entropy(c->t, 0);
    c->par.src_qpn = c->qpn;
    c->par.start_psn = c->start_psn;
    c->par.token = c->token;
    p->u.conn = c->par;
}

/* Records the IUT's CONN header; shared by both handshake roles and by
 * cases with a handshake of their own (conform.h). */
void ct_conn_take_params(struct ct_conn *c, const struct mrw_pkt *p)
{
    struct ct *t = c->t;
    const struct mrw_conn_hdr *h = &p->u.conn;

    if (h->token == 0)
        ct_fail(t, "handshake: IUT's CONN Token is 0 (SEC-4 forbids it)");
    if (h->src_qpn == 0)
        ct_fail(t, "handshake: IUT's CONN Src QPN is 0 (CONN-3)");
    c->apar = *h;
    c->atoken = h->token;
    c->astart = h->start_psn;
    c->mtu = h->mtu < c->par.mtu ? h->mtu : c->par.mtu;
    c->rcv_cum = h->start_psn;
    memset(c->rcv_bits, 0, sizeof(c->rcv_bits));
    c->rx_count = c->ce_count = 0;
    c->hs = *p;
    c->hs.payload = NULL;
}

/* Sends p from our MetaRoCE port (CONNECT_REQ only, WIRE-10). */
static void send_from_main(struct ct_conn *c, const struct mrw_pkt *p)
{
    static uint8_t buf[256];
    size_t n = ct_encode(c->t, p, buf, sizeof(buf));
    struct ct_net *net = &c->t->run->net;
    char d[256];

    if (c->t->run->verbose) {
        ct_pkt_fmt(p, d, sizeof(d));
        ct_log(c->t, "tx %s (from our MetaRoCE port)", d);
    }
    if (ct_net_send(net, net->main_fd, &c->peer, c->peer_len, buf, n,
                    CT_ECN_ECT0) < 0)
        ct_fail(c->t, "tester: send failed");
}

void ct_conn_listen(struct ct_conn *c)
{
    ct_agent(c->t, "QP_LISTEN qp=%d", c->aqp);
    c->listening = 1;
}

const struct ct_rx *ct_conn_connect_unconfirmed(struct ct_conn *c)
{
    struct ct *t = c->t;
    struct mrw_pkt req;
    const struct ct_rx *rx;
    const struct mrw_pkt *p;

    if (!c->listening)
        ct_conn_listen(c);
    ct_pkt_connect_req(c, &req);
    send_from_main(c, &req);
    rx = ct_expect_op(c, MROCE_OP_CONNECT_RESP, 0, CT_WAIT);
    p = &rx->p;
    if (p->u.conn.src_qpn != c->aqpn)
        ct_fail(t,
                "handshake: CONNECT_RESP Src QPN: expected %u (the QP "
                "named), got %u",
                c->aqpn, p->u.conn.src_qpn);
    ct_conn_take_params(c, p);
    c->hs_sport = rx->sport;
    c->hs_sock = rx->sock;
    c->connected = 1;
    return rx;
}

void ct_conn_connect(struct ct_conn *c)
{
    const struct ct_rx *rx = ct_conn_connect_unconfirmed(c);

    ct_send_ack(c, &rx->p);
    ct_expect_qp_state(c->t, c->aqp, "RTS", CT_WAIT);
}

void ct_conn_accept(struct ct_conn *c)
{
    struct ct *t = c->t;
    const struct ct_rx *rx;
    struct mrw_pkt resp;
    uint32_t tsval;
    uint16_t ent;

    ct_agent(t, "QP_CONNECT qp=%d host=%s port=%u rqpn=%u", c->aqp,
             t->run->net.local, t->run->net.main_port, c->qpn);
    rx = ct_expect_op(c, MROCE_OP_CONNECT_REQ, 0, CT_WAIT);
    if (rx->p.base.token != 0)
        ct_fail(t,
                "handshake: CONNECT_REQ base Token: expected 0, got "
                "0x%llx (CONN-4)",
                (unsigned long long)rx->p.base.token);
    ct_conn_take_params(c, &rx->p);
    c->hs_sport = rx->sport;
    c->hs_sock = rx->sock;
    c->aqpn = rx->p.u.conn.src_qpn;
    memcpy(&c->peer, &rx->from_sa, sizeof(c->peer));
    c->peer_len = rx->from_len;

    memset(&resp, 0, sizeof(resp));
    resp.base.version = MROCE_VERSION;
    resp.base.opcode = MROCE_OP_CONNECT_RESP;
    resp.base.dst_qpn = c->aqpn;
    resp.base.token = c->atoken;
    resp.base.psn = c->start_psn;
    resp.base.tsval = tsval = (uint32_t)ct_now_ns();
    resp.base.entropy = ent = ct_entropy(t, c->entropy);
    c->par.src_qpn = c->qpn;
    c->par.start_psn = c->start_psn;
    c->par.token = c->token;
    resp.u.conn = c->par;
    ct_send(c, &resp);
    c->connected = 1;

    /* A loaded IUT may retransmit its CONNECT_REQ (5 * min_rto after the
     * first, CONN-5) before our CONNECT_RESP reaches it: skip those. */
    for (;;) {
        rx = ct_next(c, ct_ms(t, CT_WAIT));
        if (!rx)
            ct_fail(t, "handshake: no confirming ACK within %d ms",
                    ct_ms(t, CT_WAIT));
        if (rx->p.base.opcode == MROCE_OP_ACK)
            break;
        if (rx->p.base.opcode != MROCE_OP_CONNECT_REQ)
            ct_fail(t, "handshake: expected the confirming ACK, got %s",
                    ct_describe(t, rx));
    }
    {
        const struct mrw_ack_hdr *a = &rx->p.u.ack;
        if (a->cum_psn != c->start_psn || a->echo_psn != c->start_psn ||
            a->echo_ts != tsval || a->echo_entropy != ent ||
            a->sack_words != 0 || a->rx_count != 0)
            ct_fail(t,
                    "handshake: confirming ACK (CONN-11): expected cum=echo "
                    "psn=%u echo_ts=%u echo_entropy=%u sack=0 rx=0, got "
                    "cum=%u echo_psn=%u echo_ts=%u echo_entropy=%u sack=%u "
                    "rx=%u",
                    c->start_psn, tsval, ent, a->cum_psn, a->echo_psn,
                    a->echo_ts, a->echo_entropy, a->sack_words, a->rx_count);
    }
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
}

struct ct_conn *ct_connect(struct ct *t, const char *qp_opts)
{
    struct ct_conn *c = ct_conn_new(t, qp_opts);
    ct_conn_connect(c);
    return c;
}

struct ct_conn *ct_accept(struct ct *t, const char *qp_opts)
{
    struct ct_conn *c = ct_conn_new(t, qp_opts);
    ct_conn_accept(c);
    return c;
}

static void base_init(struct ct_conn *c, struct mrw_pkt *p, uint8_t op)
{
    memset(p, 0, sizeof(*p));
    p->base.version = MROCE_VERSION;
    p->base.opcode = op;
    p->base.dst_qpn = c->aqpn;
    p->base.token = c->atoken;
    p->base.psn = c->snd_nxt;
    p->base.tsval = (uint32_t)ct_now_ns();
    p->base.entropy = ct_entropy(c->t, c->entropy);
}

void ct_pkt_req(struct ct_conn *c, struct mrw_pkt *p, uint8_t op)
{
    base_init(c, p, op);
    p->base.flags = MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_ACK_REQ;
    p->u.rq.req.msn = c->msn;
    if (op == MROCE_OP_SEND)
        p->u.rq.req.rsn = c->rsn;
    if (op == MROCE_OP_FETCH_ADD || op == MROCE_OP_CMP_SWAP)
        p->u.rq.req.msg_len = MROCE_ATOMIC_LEN;
}

void ct_pkt_ctl(struct ct_conn *c, struct mrw_pkt *p, uint8_t op)
{
    base_init(c, p, op);
}

size_t ct_encode(struct ct *t, const struct mrw_pkt *p, uint8_t *buf,
                 size_t cap)
{
    size_t n = mrw_pkt_encode(p, buf, cap);

    if (n == 0)
        ct_fail(t, "tester: cannot encode a %s packet of %u payload bytes",
                mrw_opcode_name(p->base.opcode), p->payload_len);
    return n;
}

void ct_reseal(uint8_t *buf, size_t len)
{
    mrw_pkt_seal(buf, len - MROCE_CRC_LEN);
}

static int entropy_index(const struct ct *t, uint16_t entropy)
{
    const struct ct_net *n = &t->run->net;

    for (int i = 0; i < n->nent; i++)
        if (n->eport[i] == entropy)
            return i;
    return 0;
}

void ct_send_ecn(struct ct_conn *c, const struct mrw_pkt *p, int ecn)
{
    static uint8_t buf[65536];
    struct ct *t = c->t;
    struct ct_net *n = &t->run->net;
    size_t len = ct_encode(t, p, buf, sizeof(buf));
    char d[256];

    if (t->run->verbose) {
        ct_pkt_fmt(p, d, sizeof(d));
        ct_log(t, "tx %s", d);
    }
    if (ct_net_send(n, n->efd[entropy_index(t, p->base.entropy)], &c->peer,
                    c->peer_len, buf, len, ecn) < 0)
        ct_fail(t, "tester: send failed");
}

void ct_send(struct ct_conn *c, const struct mrw_pkt *p)
{
    ct_send_ecn(c, p, CT_ECN_ECT0);
}

void ct_send_raw(struct ct *t, int e, const uint8_t *buf, size_t len, int ecn)
{
    struct ct_net *n = &t->run->net;
    int fd = e < 0 ? n->main_fd : n->efd[(unsigned)e % (unsigned)n->nent];

    if (t->run->verbose) {
        struct mrw_pkt p;
        char d[256];
        int rc = mrw_pkt_decode(&p, buf, len);
        if (rc == 0)
            ct_pkt_fmt(&p, d, sizeof(d));
        else
            snprintf(d, sizeof(d), "malformed (%s)", mrw_wire_error_name(rc));
        ct_log(t, "tx raw %zu bytes: %s", len, d);
    }
    if (ct_net_send(n, fd, NULL, 0, buf, len, ecn) < 0)
        ct_fail(t, "tester: send failed");
}

/* One message of len bytes as packets of at most c->mtu. */
static uint32_t send_msg(struct ct_conn *c, uint8_t op, const struct ct_mr *mr,
                         uint64_t off, const uint8_t *data, uint32_t len,
                         uint16_t flags)
{
    uint32_t first = c->snd_nxt, mtu = c->mtu ? c->mtu : 1024;
    uint32_t npk = len ? (len + mtu - 1) / mtu : 1;
    int uses_rsn = op == MROCE_OP_SEND || (flags & MROCE_F_IMM);

    for (uint32_t i = 0; i < npk; i++) {
        struct mrw_pkt p;
        uint32_t o = i * mtu, n = len - o < mtu ? len - o : mtu;

        ct_pkt_req(c, &p, op);
        p.base.flags = flags &
                       ~(MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_ACK_REQ);
        if (i == 0)
            p.base.flags |= MROCE_F_FIRST;
        if (i == npk - 1)
            p.base.flags |= MROCE_F_LAST | MROCE_F_ACK_REQ;
        if (uses_rsn)
            p.u.rq.req.rsn = c->rsn;
        if (mr) {
            p.u.rq.req.raddr = mr->addr + off;
            p.u.rq.req.rkey = mr->rkey;
        }
        if (flags & MROCE_F_IMM)
            p.u.rq.req.imm = c->imm;
        p.u.rq.req.msg_len = len;
        p.u.rq.req.offset = o;
        p.payload = n ? data + o : NULL;
        p.payload_len = n;
        ct_send(c, &p);
        c->snd_nxt++;
    }
    c->msn++;
    if (uses_rsn)
        c->rsn++;
    return first;
}

uint32_t ct_send_write(struct ct_conn *c, const struct ct_mr *mr, uint64_t off,
                       const void *data, uint32_t len, uint16_t flags)
{
    return send_msg(c, MROCE_OP_WRITE, mr, off, data, len, flags);
}

uint32_t ct_send_send(struct ct_conn *c, const void *data, uint32_t len,
                      uint16_t flags)
{
    return send_msg(c, MROCE_OP_SEND, NULL, 0, data, len, flags);
}

void ct_send_ack(struct ct_conn *c, const struct mrw_pkt *echo)
{
    struct mrw_pkt p;
    unsigned words = 0;

    ct_pkt_ctl(c, &p, MROCE_OP_ACK);
    p.u.ack.cum_psn = c->rcv_cum;
    /* SACK words: bit i of word j = rcv_cum + 1 + 32 j + i (WIRE-19); our
     * bitmap's bit k is rcv_cum + k. */
    for (unsigned k = 1; k < CT_RCV_BITS && k <= 256; k++) {
        if (c->rcv_bits[k / 8] & (1u << (k % 8))) {
            unsigned b = k - 1;
            p.u.ack.sack[b / 32] |= 1u << (b % 32);
            words = b / 32 + 1;
        }
    }
    p.u.ack.sack_words = (uint8_t)words;
    if (echo && mrw_opcode_has_psn(echo->base.opcode))
        p.u.ack.echo_psn = echo->base.psn;
    else
        p.u.ack.echo_psn = c->rcv_cum; /* confirming ACK (CONN-11) */
    if (echo) {
        p.u.ack.echo_ts = echo->base.tsval;
        p.u.ack.echo_entropy = echo->base.entropy;
    }
    p.u.ack.ce_count = c->ce_count;
    p.u.ack.rx_count = c->rx_count;
    p.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    /* REL-22: Entropy = Echo Entropy.  We cannot send from the IUT's port
     * numbers, so the UDP source port differs (WIRE-10 allows it). */
    if (echo)
        p.base.entropy = echo->base.entropy;
    ct_send(c, &p);
}
