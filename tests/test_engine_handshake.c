/*
 * test_engine_handshake.c - what each side of a connection takes from the
 * other's CONN header, and two receive rules that follow from it:
 *   - Max ACK Delay: each side advertises its own max_ack_delay (saturated
 *     at 0xFFFFFFFF ns) and its loss timers use the peer's, bounded by its
 *     own max_rto (WIRE-21, LOSS-25);
 *   - a data packet whose payload exceeds the negotiated MTU is dropped and
 *     counted (drop_invalid), one of exactly the MTU is placed (WIRE-31);
 *   - once a responder holds a fatal NAK, a later refusal (an RNR one or a
 *     fatal one of another PSN) is answered with the held NAK (REL-40).
 *
 * Two endpoints exchange packets directly (no network model); the test
 * crafts the data packets itself with the peer's token and PSNs, read from
 * the engine's state, so each rule is checked on one packet.
 */
#include <stdlib.h>
#include <string.h>

#include <mroce/wire.h>

#include "engine_end.h"

static mre_qp *qp_new(struct end *e, uint16_t mtu, mroce_tstamp ack_delay,
                      mroce_tstamp max_rto)
{
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.send_cq = a.recv_cq = e->cq;
    a.max_send_wr = a.max_recv_wr = 4;
    a.window = 64;
    a.npaths = 4;
    a.mtu = mtu;
    a.max_ack_delay = ack_delay;
    a.max_rto = max_rto;
    mre_qp *qp = NULL;
    if (mre_qp_new(e->ep, &a, &qp) < 0)
        return NULL;
    return qp;
}

/* Moves every packet from `from` to `to`; records the Max ACK Delay of the
 * last CONNECT_REQ / CONNECT_RESP seen.  Returns packets moved. */
static uint32_t seen_mad;
static int pump(struct end *from, struct end *to)
{
    uint8_t buf[MROCE_MAX_PKT_LEN];
    struct mre_tx_info ti;
    int moved = 0, n;
    while ((n = mre_ep_write_pkt(from->ep, buf, sizeof(buf), &ti, 0)) > 0) {
        struct mrw_pkt p;
        if (mrw_pkt_decode(&p, buf, (size_t)n) == 0 &&
            (p.base.opcode == MROCE_OP_CONNECT_REQ ||
             p.base.opcode == MROCE_OP_CONNECT_RESP)) {
            CHECK_EQ(n,
                     MROCE_BASE_HDR_LEN + MROCE_CONN_HDR_LEN + MROCE_CRC_LEN);
            seen_mad = p.u.conn.max_ack_delay;
        }
        struct mre_rx_info ri = {from->addr, MROCE_ECN_ECT0, 0};
        mre_ep_recv(to->ep, buf, (size_t)n, &ri, 0);
        moved++;
    }
    return moved;
}

static void handshake(struct end *cli, mre_qp *c, struct end *srv, mre_qp *s,
                      uint32_t *req_mad, uint32_t *resp_mad)
{
    CHECK_EQ(mre_qp_listen(s, 0), 0);
    CHECK_EQ(mre_qp_connect(c, &srv->addr, mre_qp_num(s), 0), 0);
    pump(cli, srv);
    *req_mad = seen_mad;
    pump(srv, cli);
    *resp_mad = seen_mad;
    pump(cli, srv); /* the confirming ACK */
    CHECK_EQ(mre_qp_state(c), MROCE_QPS_RTS);
    CHECK_EQ(mre_qp_state(s), MROCE_QPS_RTS);
}

/* Delivers a one-packet request to responder qp r on end e, as its peer
 * would send it at the peer's next PSN; returns the opcode of the first
 * packet e answers with (0: none) and its NAK header in *nak. */
static uint8_t deliver(struct end *e, const struct end *from, mre_qp *r,
                       uint8_t op, uint32_t psn, uint32_t msn, uint32_t rkey,
                       uint64_t raddr, const uint8_t *data, uint32_t len,
                       struct mrw_nak_hdr *nak)
{
    struct mrw_pkt p;
    memset(&p, 0, sizeof(p));
    p.base.version = MROCE_VERSION;
    p.base.opcode = op;
    p.base.flags = MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_ACK_REQ;
    p.base.dst_qpn = mre_qp_num(r);
    p.base.token = r->local_token;
    p.base.psn = psn;
    p.base.entropy = 0xc000;
    p.u.rq.req.msn = msn;
    p.u.rq.req.rkey = rkey;
    p.u.rq.req.raddr = raddr;
    p.u.rq.req.msg_len = len;
    p.payload = data;
    p.payload_len = len;
    static uint8_t buf[MROCE_MAX_PKT_LEN];
    size_t n = mrw_pkt_encode(&p, buf, sizeof(buf));
    if (!CHECK(n > 0))
        return 0;
    struct mre_rx_info ri = {from->addr, MROCE_ECN_ECT0, 0};
    mre_ep_recv(e->ep, buf, n, &ri, 0);
    struct mre_tx_info ti;
    uint8_t out = 0;
    int k = mre_ep_write_pkt(e->ep, buf, sizeof(buf), &ti, 0);
    if (k > 0) {
        struct mrw_pkt q;
        if (CHECK(mrw_pkt_decode(&q, buf, (size_t)k) == 0)) {
            out = q.base.opcode;
            if (out == MROCE_OP_NAK && nak)
                *nak = q.u.nak;
        }
    }
    while (mre_ep_write_pkt(e->ep, buf, sizeof(buf), &ti, 0) > 0)
        ;
    return out;
}

static uint64_t drop_invalid(const mre_qp *qp)
{
    struct mroce_qp_counters c;
    mre_qp_get_counters(qp, &c);
    return c.drop_invalid;
}

int main(void)
{
    struct end a, b;
    if (!CHECK(end_new(&a, 1, 2001, 8, 64) == 0) ||
        !CHECK(end_new(&b, 2, 2002, 8, 64) == 0))
        return TESTUTIL_SUMMARY("test_engine_handshake");
    uint32_t req_mad, resp_mad;

    /* Max ACK Delay both ways; b's max_rto (1.5 ms) is above a's 10 us. */
    mre_qp *qa = qp_new(&a, 4096, 10000, 100000000);
    mre_qp *qb = qp_new(&b, 1024, 2000000, 1500000);
    if (!CHECK(qa && qb))
        return TESTUTIL_SUMMARY("test_engine_handshake");
    handshake(&a, qa, &b, qb, &req_mad, &resp_mad);
    CHECK_EQ(req_mad, 10000);
    CHECK_EQ(resp_mad, 2000000);
    CHECK_EQ(qa->peer_ack_delay, 2000000); /* the receiver's, not its own */
    CHECK_EQ(qb->peer_ack_delay, 10000);
    CHECK_EQ(qa->mtu, 1024);
    CHECK_EQ(qb->mtu, 1024);

    /* A value beyond 32 bits of ns saturates on the wire; the peer bounds
     * it by its max_rto. */
    mre_qp *qc = qp_new(&a, 4096, 5000000000ull, 100000000);
    mre_qp *qd = qp_new(&b, 4096, 10000, 3000000);
    if (!CHECK(qc && qd))
        return TESTUTIL_SUMMARY("test_engine_handshake");
    handshake(&a, qc, &b, qd, &req_mad, &resp_mad);
    CHECK_EQ(req_mad, 0xffffffffu);
    CHECK_EQ(qd->peer_ack_delay, 3000000);
    CHECK_EQ(qc->peer_ack_delay, 10000);

    /* WIRE-31 on qb (negotiated MTU 1024). */
    static uint8_t mem[4096], data[2048];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (uint8_t)(i * 7 + 1);
    mre_mr *mr;
    if (!CHECK(mre_mr_reg(b.ep, mem, sizeof(mem),
                          MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                          &mr) == 0))
        return TESTUTIL_SUMMARY("test_engine_handshake");
    uint32_t rkey = mre_mr_rkey(mr);
    uint64_t base = (uint64_t)(uintptr_t)mem;
    uint32_t psn = qb->rxwin.cum, msn = 0;
    uint64_t d0 = drop_invalid(qb);
    CHECK_EQ(deliver(&b, &a, qb, MROCE_OP_WRITE, psn, msn, rkey, base, data,
                     1025, NULL),
             0);
    CHECK_EQ(drop_invalid(qb), d0 + 1);
    CHECK_EQ(qb->rxwin.cum, psn);
    CHECK_EQ(mem[0], 0);
    CHECK_EQ(deliver(&b, &a, qb, MROCE_OP_WRITE, psn, msn, rkey, base, data,
                     1024, NULL),
             MROCE_OP_ACK);
    CHECK(memcmp(mem, data, 1024) == 0);
    CHECK_EQ(mem[1024], 0);
    psn++;
    msn++;

    /* REL-40: a bad key at psn is the held NAK; a SEND without a receive
     * and an out-of-bounds WRITE after it are answered with it. */
    struct mrw_nak_hdr nak;
    memset(&nak, 0, sizeof(nak));
    CHECK_EQ(deliver(&b, &a, qb, MROCE_OP_WRITE, psn, msn, rkey ^ 0x00ff0000,
                     base, data, 16, &nak),
             MROCE_OP_NAK);
    CHECK_EQ(nak.nak_psn, psn);
    CHECK_EQ(nak.code, MROCE_NAK_REMOTE_ACCESS_KEY);
    memset(&nak, 0, sizeof(nak));
    CHECK_EQ(deliver(&b, &a, qb, MROCE_OP_SEND, psn + 1, msn + 1, 0, 0, data,
                     16, &nak),
             MROCE_OP_NAK);
    CHECK_EQ(nak.nak_psn, psn);
    CHECK_EQ(nak.msn, msn);
    CHECK_EQ(nak.code, MROCE_NAK_REMOTE_ACCESS_KEY);
    memset(&nak, 0, sizeof(nak));
    CHECK_EQ(deliver(&b, &a, qb, MROCE_OP_WRITE, psn + 2, msn + 2, rkey,
                     base + sizeof(mem) - 8, data, 16, &nak),
             MROCE_OP_NAK);
    CHECK_EQ(nak.nak_psn, psn);
    CHECK_EQ(nak.code, MROCE_NAK_REMOTE_ACCESS_KEY);
    struct mroce_qp_counters cnt;
    mre_qp_get_counters(qb, &cnt);
    CHECK_EQ(cnt.rnr_naks_tx, 0);
    CHECK_EQ(mem[sizeof(mem) - 8], 0);

    mre_ep_del(b.ep);
    mre_ep_del(a.ep);
    return TESTUTIL_SUMMARY("test_engine_handshake");
}
