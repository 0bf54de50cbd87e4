/*
 * helpers_sem.c - framework helpers for the SEM, CONN, SEC and CC cases
 * (cases_sem_*.c, cases_conn_*.c, cases_sec.c, cases_cc.c): receiving the
 * next packet of a connection without judging it, NAKs and ACKs with
 * chosen fields, the two halves of the listener's handshake (so a case can
 * answer a CONNECT_REQ wrongly, late or twice), atomic and READ requests,
 * byte order, counters, and a throw-away UDP socket for the spoofing
 * cases.  Additive only: nothing here changes what the other framework
 * files do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_int.h"

const struct ct_rx *ct_next(struct ct_conn *c, int wait_ms)
{
    uint64_t end = ct_now_ns() +
                   (uint64_t)(wait_ms < 0 ? 0 : wait_ms) * 1000000u;
    return ct_next_until(c, end);
}

const struct ct_rx *ct_expect_data(struct ct_conn *c, int wait_ms)
{
    struct ct *t = c->t;
    int ms = ct_ms(t, wait_ms);
    uint64_t end = ct_now_ns() + (uint64_t)ms * 1000000u;

    for (;;) {
        const struct ct_rx *rx = ct_next_until(c, end);
        if (!rx)
            ct_fail(t, "expected a data packet within %d ms, got nothing", ms);
        if (mrw_opcode_has_psn(rx->p.base.opcode))
            return rx;
        if (rx->p.base.opcode == MROCE_OP_ACK ||
            rx->p.base.opcode == MROCE_OP_NAK)
            continue;
        ct_fail(t, "expected a data packet, got %s", ct_describe(t, rx));
    }
}

const struct ct_rx *ct_expect_ctl(struct ct_conn *c, uint8_t op, int wait_ms)
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
        if (rx->p.base.opcode == MROCE_OP_ACK ||
            mrw_opcode_has_psn(rx->p.base.opcode))
            continue;
        ct_fail(t, "expected %s, got %s", mrw_opcode_name(op),
                ct_describe(t, rx));
    }
}

void ct_expect_no_op(struct ct_conn *c, uint8_t op, int wait_ms)
{
    struct ct *t = c->t;
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, wait_ms) * 1000000u;
    const struct ct_rx *rx;

    while ((rx = ct_next_until(c, end)) != NULL)
        if (rx->p.base.opcode == op)
            ct_fail(t, "expected no %s for %d ms, got %s", mrw_opcode_name(op),
                    ct_ms(t, wait_ms), ct_describe(t, rx));
}

void ct_send_nak(struct ct_conn *c, uint32_t psn, uint32_t msn, uint8_t code,
                 uint8_t rnr_delay, uint32_t cum)
{
    struct mrw_pkt p;

    ct_pkt_ctl(c, &p, MROCE_OP_NAK);
    p.u.nak.nak_psn = psn;
    p.u.nak.msn = msn;
    p.u.nak.code = code;
    p.u.nak.rnr_delay = code == MROCE_NAK_RNR ? rnr_delay : 0;
    p.u.nak.cum_psn = cum;
    ct_send(c, &p);
}

void ct_send_ack_credit(struct ct_conn *c, const struct mrw_pkt *echo,
                        uint32_t credit)
{
    struct mrw_pkt p;
    unsigned words = 0;

    ct_pkt_ctl(c, &p, MROCE_OP_ACK);
    p.u.ack.cum_psn = c->rcv_cum;
    for (unsigned k = 1; k < CT_RCV_BITS; k++) {
        if (c->rcv_bits[k / 8] & (1u << (k % 8))) {
            unsigned b = k - 1;
            p.u.ack.sack[b / 32] |= 1u << (b % 32);
            words = b / 32 + 1;
        }
    }
    p.u.ack.sack_words = (uint8_t)words;
    p.u.ack.echo_psn = echo ? echo->base.psn : c->rcv_cum;
    if (echo) {
        p.u.ack.echo_ts = echo->base.tsval;
        p.u.ack.echo_entropy = echo->base.entropy;
        p.base.entropy = echo->base.entropy;
    }
    p.u.ack.ce_count = c->ce_count;
    p.u.ack.rx_count = c->rx_count;
    p.u.ack.credit = credit;
    ct_send(c, &p);
}

void ct_accept_begin(struct ct_conn *c, uint32_t rqpn)
{
    struct ct *t = c->t;
    const struct ct_rx *rx;
    const struct mrw_conn_hdr *h;

    uint64_t end;

    ct_agent(t, "QP_CONNECT qp=%d host=%s port=%u rqpn=%u", c->aqp,
             t->run->net.local, t->run->net.main_port, rqpn);
    end = ct_now_ns() + (uint64_t)ct_ms(t, CT_WAIT) * 1000000u;
    for (;;) {
        rx = ct_recv(t, ct_left_ms(end));
        if (!rx)
            ct_fail(t,
                    "expected the IUT's CONNECT_REQ within %d ms, got "
                    "nothing",
                    ct_ms(t, CT_WAIT));
        if (rx->rc < 0)
            ct_fail(t, "IUT sent %s", ct_describe(t, rx));
        if (rx->p.base.opcode == MROCE_OP_CONNECT_REQ &&
            rx->p.base.dst_qpn == rqpn)
            break;
        ct_log(t, "skipped %s", ct_describe(t, rx));
    }
    h = &rx->p.u.conn;
    if (rx->p.base.token != 0)
        ct_fail(t, "CONNECT_REQ base Token: expected 0, got 0x%llx (CONN-4)",
                (unsigned long long)rx->p.base.token);
    if (h->token == 0 || h->src_qpn == 0)
        ct_fail(t, "CONNECT_REQ with CONN Token or Src QPN 0");
    c->apar = *h;
    c->atoken = h->token;
    c->astart = h->start_psn;
    c->aqpn = h->src_qpn;
    c->mtu = h->mtu < c->par.mtu ? h->mtu : c->par.mtu;
    c->rcv_cum = h->start_psn;
    memset(c->rcv_bits, 0, sizeof(c->rcv_bits));
    c->rx_count = c->ce_count = 0;
    c->hs = rx->p;
    c->hs.payload = NULL;
    c->hs_sport = rx->sport;
    c->hs_sock = rx->sock;
    memcpy(&c->peer, &rx->from_sa, sizeof(c->peer));
    c->peer_len = rx->from_len;
}

void ct_pkt_connect_resp(struct ct_conn *c, struct mrw_pkt *p)
{
    memset(p, 0, sizeof(*p));
    p->base.version = MROCE_VERSION;
    p->base.opcode = MROCE_OP_CONNECT_RESP;
    p->base.dst_qpn = c->aqpn;
    p->base.token = c->atoken;
    p->base.psn = c->start_psn;
    p->base.tsval = (uint32_t)ct_now_ns();
    p->base.entropy = ct_entropy(c->t, c->entropy);
    c->par.src_qpn = c->qpn;
    c->par.start_psn = c->start_psn;
    c->par.token = c->token;
    p->u.conn = c->par;
}

void ct_pkt_atomic(struct ct_conn *c, struct mrw_pkt *p, uint8_t op,
                   const struct ct_mr *mr, uint32_t off, uint64_t swap_add,
                   uint64_t compare)
{
    ct_pkt_req(c, p, op);
    p->u.rq.req.raddr = mr->addr + off;
    p->u.rq.req.rkey = mr->rkey;
    p->u.rq.req.msg_len = MROCE_ATOMIC_LEN;
    p->u.rq.atomic.swap_add = swap_add;
    p->u.rq.atomic.compare = op == MROCE_OP_CMP_SWAP ? compare : 0;
}

void ct_pkt_read(struct ct_conn *c, struct mrw_pkt *p, const struct ct_mr *mr,
                 uint32_t off, uint32_t len)
{
    ct_pkt_req(c, p, MROCE_OP_READ_REQ);
    p->u.rq.req.raddr = mr->addr + off;
    p->u.rq.req.rkey = mr->rkey;
    p->u.rq.req.msg_len = len;
}

void ct_consume(struct ct_conn *c, const struct mrw_pkt *p)
{
    c->snd_nxt = p->base.psn + 1;
    if (p->base.flags & MROCE_F_LAST) {
        c->msn = p->u.rq.req.msn + 1;
        if (p->base.opcode == MROCE_OP_SEND || (p->base.flags & MROCE_F_IMM))
            c->rsn = p->u.rq.req.rsn + 1;
    }
}

uint64_t ct_get64(const uint8_t *b, int be)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)b[be ? 7 - i : i] << (8 * i);
    return v;
}

void ct_put64(uint8_t *b, uint64_t v, int be)
{
    for (int i = 0; i < 8; i++)
        b[be ? 7 - i : i] = (uint8_t)(v >> (8 * i));
}

int64_t ct_counter(struct ct *t, int qp, const char *name)
{
    const char *r = ct_agent(t, "COUNTERS qp=%d", qp);
    char v[32];

    if (ct_kv_str(r, name, v, sizeof(v)) < 0)
        return -1;
    return (int64_t)strtoull(v, NULL, 0);
}

int ct_send_from_new_socket(struct ct_conn *c, const struct mrw_pkt *p)
{
    struct ct *t = c->t;
    struct ct_net *n = &t->run->net;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    static uint8_t buf[65536];
    size_t len = ct_encode(t, p, buf, sizeof(buf));
    int fd;

    if (getsockname(n->main_fd, (struct sockaddr *)&ss, &sl) < 0)
        ct_fail(t, "tester: getsockname: %s", strerror(errno));
    if (ss.ss_family == AF_INET)
        ((struct sockaddr_in *)&ss)->sin_port = 0;
    else
        ((struct sockaddr_in6 *)&ss)->sin6_port = 0;
    fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&ss, sl) < 0) {
        if (fd >= 0)
            close(fd);
        ct_fail(t, "tester: cannot open a spare socket: %s", strerror(errno));
    }
    if (sendto(fd, buf, len, 0, (struct sockaddr *)&c->peer, c->peer_len) !=
        (ssize_t)len) {
        close(fd);
        ct_fail(t, "tester: send from a spare socket failed");
    }
    return fd;
}

int ct_sock_recv(struct ct *t, int fd, int wait_ms)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    static uint8_t b[65536];
    int r = poll(&pfd, 1, ct_ms(t, wait_ms));
    ssize_t n;

    if (r <= 0)
        return 0;
    n = recv(fd, b, sizeof(b), 0);
    return n > 0 ? (int)n : 0;
}

void ct_sock_close(int fd)
{
    if (fd >= 0)
        close(fd);
}
