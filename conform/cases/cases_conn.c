/*
 * cases_conn.c - connection set-up and tokens (connection.md, and the
 * token and randomness rules of security.md): the handshake in both roles,
 * duplicate CONNECT_REQs, listener selection, and what a QP that is not
 * (yet) connected does with packets: nothing.
 */
#include <string.h>

#include "conform.h"

CT_CASE(conn_handshake_as_requester, "CONN-8 CONN-13 CONN-14 WIRE-21 SEC-6",
        "CONNECT_REQ to a LISTEN QP: one 68-byte CONNECT_RESP to our port "
        "with our token, its QPN, non-zero token; QP in RTS")
{
    struct ct_conn *c = ct_conn_new(t, "");
    const struct mrw_pkt *r;

    ct_conn_connect(c); /* checks token, Src QPN, sends the confirming ACK */
    r = &c->hs;
    CT_EQ(t, "CONNECT_RESP Pkt Len (SEC-6: same as CONNECT_REQ)", 68,
          r->base.pkt_len);
    CT_REQUIRE(t, c->hs_sock < 0,
               "CONNECT_RESP went to our entropy port, expected our "
               "MetaRoCE port, the CONNECT_REQ's source (CONN-13)");
    CT_EQ(t, "CONNECT_RESP base PSN = its Start PSN", r->u.conn.start_psn,
          r->base.psn);
    CT_REQUIRE(t, r->u.conn.mtu >= 256, "CONNECT_RESP MTU %u < 256",
               r->u.conn.mtu);
    CT_REQUIRE(t,
               r->u.conn.rx_window >= 64 && r->u.conn.rx_window <= 32768 &&
                   !(r->u.conn.rx_window & (r->u.conn.rx_window - 1)),
               "CONNECT_RESP RX Window %u is not a power of two in 64..32768",
               r->u.conn.rx_window);
    CT_REQUIRE(t, r->u.conn.max_rd_atomic >= 1,
               "CONNECT_RESP Max RD Atomic is 0");
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(conn_handshake_as_listener, "CONN-4 CONN-11 CONN-13 WIRE-10",
        "QP_CONNECT to the tester: CONNECT_REQ from the IUT's MetaRoCE port, "
        "Token 0, PSN = Start PSN; confirming ACK echoes our CONNECT_RESP")
{
    struct ct_conn *c = ct_conn_new(t, "");
    const struct mrw_pkt *q;

    ct_conn_accept(c); /* checks Token 0 and the confirming ACK */
    q = &c->hs;
    CT_EQ(t, "CONNECT_REQ UDP source port (the IUT's MetaRoCE port)",
          ct_iut_port(t), c->hs_sport);
    CT_EQ(t, "CONNECT_REQ Dst QPN (the QPN given to connect)", c->qpn,
          q->base.dst_qpn);
    CT_EQ(t, "CONNECT_REQ base PSN = Start PSN", q->u.conn.start_psn,
          q->base.psn);
    CT_EQ(t, "CONNECT_REQ Pkt Len", 68, q->base.pkt_len);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(conn_dup_connect_req_same_resp, "CONN-9",
        "the same CONNECT_REQ again after the handshake: the same "
        "CONNECT_RESP again (token, Start PSN, QPN), QP still in RTS")
{
    struct ct_conn *c = ct_conn_new(t, "");
    struct mrw_pkt req, first;
    const struct ct_rx *rx;
    uint8_t buf[128];
    size_t n;

    ct_conn_connect(c);
    first = c->hs;
    ct_pkt_connect_req(c, &req);
    n = ct_encode(t, &req, buf, sizeof(buf));
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    rx = ct_expect_op(c, MROCE_OP_CONNECT_RESP, 0, CT_WAIT);
    CT_EQ(t, "repeated CONNECT_RESP CONN Token", first.u.conn.token,
          rx->p.u.conn.token);
    CT_EQ(t, "repeated CONNECT_RESP Start PSN", first.u.conn.start_psn,
          rx->p.u.conn.start_psn);
    CT_EQ(t, "repeated CONNECT_RESP Src QPN", first.u.conn.src_qpn,
          rx->p.u.conn.src_qpn);
    CT_EQ(t, "repeated CONNECT_RESP base Token", c->token, rx->p.base.token);
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
}

CT_CASE(conn_req_any_listener, "CONN-7 CONN-3",
        "CONNECT_REQ with Dst QPN 0: the LISTEN QP answers with its own QPN")
{
    struct ct_conn *c = ct_conn_new(t, "");
    struct mrw_pkt req;
    const struct ct_rx *rx;
    uint8_t buf[128];
    size_t n;

    ct_conn_listen(c);
    ct_pkt_connect_req(c, &req);
    req.base.dst_qpn = 0;
    n = ct_encode(t, &req, buf, sizeof(buf));
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    rx = ct_expect_op(c, MROCE_OP_CONNECT_RESP, 0, CT_WAIT);
    CT_EQ(t, "CONNECT_RESP Src QPN", c->aqpn, rx->p.u.conn.src_qpn);
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
}

/* Sends our CONNECT_REQ to c's LISTEN QP after mutate(); expects silence
 * and the QP still in LISTEN. */
static void connect_req_dropped(struct ct *t,
                                void (*mutate)(struct mrw_pkt *))
{
    struct ct_conn *c = ct_conn_new(t, "");
    struct mrw_pkt req;
    uint8_t buf[128];
    size_t n;

    ct_conn_listen(c);
    ct_pkt_connect_req(c, &req);
    mutate(&req);
    n = ct_encode(t, &req, buf, sizeof(buf));
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_qp_state(t, c->aqp, "LISTEN", 0);
}

static void mut_token0(struct mrw_pkt *p)
{
    p->u.conn.token = 0;
}
static void mut_srcqpn0(struct mrw_pkt *p)
{
    p->u.conn.src_qpn = 0;
}
static void mut_other_qpn(struct mrw_pkt *p)
{
    p->base.dst_qpn ^= 0x00800000u;
}

CT_CASE(conn_req_token_zero_dropped, "CONN-7 SEC-2",
        "CONNECT_REQ whose CONN Token is 0: no CONNECT_RESP, QP stays LISTEN")
{
    connect_req_dropped(t, mut_token0);
}

CT_CASE(conn_req_src_qpn_zero_dropped, "CONN-7 SEC-2",
        "CONNECT_REQ whose Src QPN is 0: no CONNECT_RESP, QP stays LISTEN")
{
    connect_req_dropped(t, mut_srcqpn0);
}

CT_CASE(conn_req_unknown_qpn_dropped, "CONN-7 SEC-7",
        "CONNECT_REQ naming a QPN that does not exist: no CONNECT_RESP, the "
        "LISTEN QP is not bound")
{
    connect_req_dropped(t, mut_other_qpn);
}
