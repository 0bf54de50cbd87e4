/*
 * cases_conn_session.c - connection.md sections 3 to 5, a connection after
 * its handshake: Tokens (CONN-14, the packets a wrong one must not move),
 * posting rules per state, orderly close by either side with outstanding
 * work, DISCONNECT retransmission and its give-up, and the silence of a QP
 * in CLOSED or ERROR (CONN-15..CONN-22).
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

CT_CASE(conn_post_rules_by_state, "CONN-22 CONN-21",
        "a QP in RESET and in LISTEN refuses POST_SEND with ESTATE and "
        "accepts POST_RECV; after QP_ERROR both are refused with ESTATE")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "");
    const char *r;

    for (int st = 0; st < 3; st++) {
        static const char *names[3] = {"RESET", "LISTEN", "ERROR"};
        if (st == 1)
            ct_conn_listen(c);
        if (st == 2)
            ct_agent(t, "QP_ERROR qp=%d", c->aqp);
        ct_expect_qp_state(t, c->aqp, names[st], 0);
        r = ct_agent_try(t,
                         "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 "
                         "len=8",
                         c->aqp, mr.id);
        CT_REQUIRE(t, strncmp(r, "ERR ESTATE", 10) == 0,
                   "POST_SEND in %s: expected ERR ESTATE, got \"%s\"",
                   names[st], r);
        r = ct_agent_try(t, "POST_RECV qp=%d wrid=2 mr=%d off=0 len=8", c->aqp,
                         mr.id);
        if (st < 2)
            CT_REQUIRE(t, strncmp(r, "OK", 2) == 0,
                       "POST_RECV in %s: expected OK, got \"%s\"", names[st],
                       r);
        else
            CT_REQUIRE(t, strncmp(r, "ERR ESTATE", 10) == 0,
                       "POST_RECV in ERROR: expected ERR ESTATE, got \"%s\"",
                       r);
    }
    ct_expect_no_wc(t, c->aqp, "send", 0);
}

CT_CASE(conn_send_posted_while_connecting, "CONN-22 SEM-1 REL-1",
        "a WRITE posted while CONNECTING is held (nothing but CONNECT_REQ "
        "leaves), then sent after the handshake with MSN 0 at the Start "
        "PSN, and completes")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "min_rto_us=100000");
    struct mrw_pkt resp;
    const struct ct_rx *rx;

    ct_accept_begin(c, c->qpn);
    ct_agent(t,
             "POST_SEND qp=%d wrid=4 op=WRITE mr=%d off=0 len=100 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    for (;;) {
        rx = ct_next(c, ct_ms(t, 50));
        if (!rx)
            break;
        CT_EQ(t, "opcode while CONNECTING", MROCE_OP_CONNECT_REQ,
              rx->p.base.opcode);
    }
    ct_pkt_connect_resp(c, &resp);
    ct_send(c, &resp);
    c->connected = 1;
    rx = ct_expect_data(c, CT_WAIT);
    CT_EQ(t, "opcode", MROCE_OP_WRITE, rx->p.base.opcode);
    CT_EQ(t, "PSN", c->astart, rx->p.base.psn);
    CT_EQ(t, "MSN", 0, rx->p.u.rq.req.msn);
    ct_expect_wc(t, c->aqp, "send", 4, "SUCCESS", CT_WAIT);
}

CT_CASE(conn_close_waits_for_outstanding, "CONN-15 CONN-16 CONN-18 CONN-21",
        "QP_CLOSE with an unacknowledged WRITE: CLOSING, sends refused, "
        "receives still accepted, no DISCONNECT until the WRITE is ACKed; "
        "then DISCONNECT (our QPN and token, PSN = snd_nxt, Flags 0); our "
        "DISCONNECT_ACK: CLOSED, receives flushed in order")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    const char *r;
    uint32_t wpsn;

    c->auto_ack = 0;
    ct_post_recv(t, c->aqp, 10, &mr, 0, 64);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    wpsn = rx->p.base.psn;
    ct_agent(t, "QP_CLOSE qp=%d", c->aqp);
    ct_expect_qp_state(t, c->aqp, "CLOSING", 0);
    r = ct_agent_try(t,
                     "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=8 "
                     "raddr=0x100 rkey=1",
                     c->aqp, mr.id);
    CT_REQUIRE(t, strncmp(r, "ERR ESTATE", 10) == 0,
               "POST_SEND in CLOSING: expected ERR ESTATE, got \"%s\"", r);
    ct_post_recv(t, c->aqp, 11, &mr, 64, 64);
    ct_expect_no_op(c, MROCE_OP_DISCONNECT, CT_QUIET);
    ct_send_ack(c, NULL);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    for (;;) {
        rx = ct_expect_ctl(c, MROCE_OP_DISCONNECT, CT_WAIT);
        if (!(rx->p.base.flags & MROCE_F_RETX))
            break;
    }
    CT_EQ(t, "DISCONNECT PSN (snd_nxt)", wpsn + 1, rx->p.base.psn);
    CT_EQ(t, "DISCONNECT Flags", 0, rx->p.base.flags);
    CT_EQ(t, "DISCONNECT Pkt Len (base header + CRC)", 32, rx->p.base.pkt_len);
    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT_ACK);
    ct_send(c, &p);
    ct_expect_qp_state(t, c->aqp, "CLOSED", CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 10, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 11, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(conn_peer_disconnect_flushes, "CONN-17 CONN-19 CONN-2 CONN-21",
        "DISCONNECT from the tester to a QP with an unacknowledged WRITE "
        "and two receives: DISCONNECT_ACK, CLOSED, all flushed in order; "
        "then a WRITE is dropped silently, a repeated DISCONNECT answered "
        "with DISCONNECT_ACK, posts refused")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x12);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    const char *r;
    uint8_t d[16];

    c->auto_ack = 0;
    ct_post_recv(t, c->aqp, 1, &mr, 0, 64);
    ct_post_recv(t, c->aqp, 2, &mr, 64, 64);
    ct_agent(t,
             "POST_SEND qp=%d wrid=7 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_expect_data(c, CT_WAIT);
    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
    ct_send(c, &p);
    ct_expect_ctl(c, MROCE_OP_DISCONNECT_ACK, CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "CLOSED", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 7, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 1, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 2, "WR_FLUSH_ERR", CT_WAIT);
    while (ct_recv(t, 0))
        ;
    ct_pattern(d, sizeof(d), 51);
    ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 64, 0x12);
    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
    ct_send(c, &p);
    rx = ct_expect_ctl(c, MROCE_OP_DISCONNECT_ACK, CT_WAIT);
    CT_EQ(t, "DISCONNECT_ACK Flags", 0, rx->p.base.flags);
    ct_expect_silence(t, CT_QUIET);
    r = ct_agent_try(t, "POST_RECV qp=%d wrid=3 mr=%d off=0 len=8", c->aqp,
                     mr.id);
    CT_REQUIRE(t, strncmp(r, "ERR ESTATE", 10) == 0,
               "POST_RECV in CLOSED: expected ERR ESTATE, got \"%s\"", r);
    r = ct_agent_try(t, "POST_SEND qp=%d wrid=4 op=SEND mr=%d off=0 len=8",
                     c->aqp, mr.id);
    CT_REQUIRE(t, strncmp(r, "ERR ESTATE", 10) == 0,
               "POST_SEND in CLOSED: expected ERR ESTATE, got \"%s\"", r);
}

CT_CASE(conn_disconnect_retransmitted_then_closed, "CONN-16 CONN-1",
        "QP_CLOSE (min_rto 2 ms, retry 2) with nothing outstanding and a "
        "silent peer: DISCONNECT, resent twice with a growing interval (the "
        "first at least min_rto later), then CLOSED with the receive "
        "flushed and nothing more sent")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_connect(t, "min_rto_us=2000 retry=2");
    const struct ct_rx *rx;
    struct mrw_pkt first;

    ct_post_recv(t, c->aqp, 1, &mr, 0, 64);
    ct_agent(t, "QP_CLOSE qp=%d", c->aqp);
    for (int i = 0; i < 3; i++) {
        rx = ct_expect_ctl(c, MROCE_OP_DISCONNECT, 400);
        if (i == 0)
            first = rx->p;
        CT_EQ(t, "DISCONNECT PSN unchanged", first.base.psn, rx->p.base.psn);
        /* The IUT's clock (TSval): the first resend at least min_rto
         * (2 ms) after the first transmission, the second at least 2 + 4
         * ms after it (less 0.5 ms). */
        if (i > 0) {
            uint32_t since = rx->p.base.tsval - first.base.tsval;
            uint64_t cum = 2000000ull * ((1ull << i) - 1);
            CT_REQUIRE(t, (uint64_t)since + 500000 >= cum,
                       "DISCONNECT retransmission %d sent %.2f ms after the "
                       "first (min_rto 2 ms, doubling: at least %.0f ms)",
                       i, since / 1e6, cum / 1e6);
        }
    }
    ct_expect_qp_state(t, c->aqp, "CLOSED", 1000);
    ct_expect_wc(t, c->aqp, "recv", 1, "WR_FLUSH_ERR", CT_WAIT);
    for (;;) {
        rx = ct_next(c, ct_ms(t, CT_QUIET));
        if (!rx)
            break;
        ct_fail(t, "after %d DISCONNECTs and retry=2 the QP sent %s", 3,
                ct_describe(t, rx));
    }
}

CT_CASE(conn_error_qp_silent, "CONN-20 CONN-21 SEM-24",
        "QP_ERROR on a connected QP with two receives: both flushed in "
        "order; then a WRITE, a SEND and a DISCONNECT with the right token "
        "get no answer and place nothing")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x2b);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint8_t d[16];

    ct_post_recv(t, c->aqp, 1, &mr, 1024, 64);
    ct_post_recv(t, c->aqp, 2, &mr, 2048, 64);
    ct_agent(t, "QP_ERROR qp=%d", c->aqp);
    ct_expect_wc(t, c->aqp, "recv", 1, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 2, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", 0);
    ct_pattern(d, sizeof(d), 52);
    ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_send_send(c, d, sizeof(d), 0);
    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
    ct_send(c, &p);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x2b);
}

CT_CASE(conn_resp_wrong_token_dropped, "CONN-14 CONN-10 SEC-2",
        "QP in CONNECTING: a CONNECT_RESP whose base Token is not the "
        "requester's token is dropped (no confirming ACK, still "
        "CONNECTING); the right one completes the handshake")
{
    struct ct_conn *c = ct_conn_new(t, "min_rto_us=100000");
    struct mrw_pkt resp;

    ct_accept_begin(c, c->qpn);
    ct_pkt_connect_resp(c, &resp);
    resp.base.token ^= 0x0100000000000000ull;
    ct_send(c, &resp);
    c->connected = 1;
    ct_expect_silence(t, CT_QUIET);
    ch_still_connecting(c);
    ct_pkt_connect_resp(c, &resp);
    ct_send(c, &resp);
    ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
}

CT_CASE(conn_stray_disconnect_ack_dropped, "CONN-18 CONN-2",
        "DISCONNECT_ACK to a QP in RTS that sent no DISCONNECT: no answer, "
        "still RTS, and a WRITE afterwards is ACKed and placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint8_t d[8] = {9, 8, 7, 6, 5, 4, 3, 2};
    uint32_t psn;

    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT_ACK);
    ct_send(c, &p);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

CT_CASE(conn_disconnect_while_closing, "CONN-17 CONN-15 SEM-23",
        "QP_CLOSE with an unacknowledged WRITE (CLOSING), then a DISCONNECT "
        "from the tester: DISCONNECT_ACK, CLOSED, the WRITE completes "
        "WR_FLUSH_ERR")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt p;

    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_expect_data(c, CT_WAIT);
    ct_agent(t, "QP_CLOSE qp=%d", c->aqp);
    ct_expect_qp_state(t, c->aqp, "CLOSING", 0);
    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
    ct_send(c, &p);
    ct_expect_ctl(c, MROCE_OP_DISCONNECT_ACK, CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "CLOSED", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 1, "WR_FLUSH_ERR", CT_WAIT);
}

CT_CASE(conn_closing_serves_peer, "CONN-15 SEM-8",
        "in CLOSING (its WRITE unacknowledged) the QP still places our WRITE "
        "and answers our READ; DISCONNECT waits until its WRITE and its "
        "READ_RESP are both acknowledged")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw,rr", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt p, ack;
    const struct ct_rx *rx;
    uint8_t d[32];
    uint32_t wpsn, rpsn;

    c->auto_ack = 0;
    ct_pattern(d, sizeof(d), 94);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=16 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    wpsn = rx->p.base.psn;
    ct_agent(t, "QP_CLOSE qp=%d", c->aqp);
    ct_expect_qp_state(t, c->aqp, "CLOSING", 0);
    ct_expect_ack(c, ct_send_write(c, &mr, 1024, d, sizeof(d), 0) + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 1024, d, sizeof(d));
    ct_pkt_read(c, &p, &mr, 1024, sizeof(d));
    ct_send(c, &p);
    ct_consume(c, &p);
    for (;;) {
        rx = ct_expect_data(c, CT_WAIT);
        if (rx->p.base.opcode == MROCE_OP_READ_RESP)
            break;
    }
    rpsn = rx->p.base.psn;
    CT_REQUIRE(t, memcmp(rx->p.payload, d, sizeof(d)) == 0,
               "READ_RESP in CLOSING carries the wrong bytes");
    /* ACK the WRITE only. */
    ct_pkt_ctl(c, &ack, MROCE_OP_ACK);
    ack.u.ack.cum_psn = wpsn + 1;
    ack.u.ack.echo_psn = wpsn;
    ack.u.ack.rx_count = 1;
    ack.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    ct_send(c, &ack);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    ct_expect_no_op(c, MROCE_OP_DISCONNECT, CT_QUIET);
    ack.u.ack.cum_psn = rpsn + 1;
    ack.u.ack.echo_psn = rpsn;
    ack.u.ack.rx_count = 2;
    ct_send(c, &ack);
    for (;;) {
        rx = ct_next(c, ct_ms(t, CT_WAIT));
        CT_REQUIRE(t, rx != NULL,
                   "no DISCONNECT after everything was "
                   "acknowledged");
        if (rx->p.base.opcode == MROCE_OP_DISCONNECT)
            break;
    }
    CT_EQ(t, "DISCONNECT PSN (snd_nxt)", rpsn + 1, rx->p.base.psn);
}

CT_CASE(conn_closed_sends_nothing_after_ack, "CONN-19 CONN-17",
        "three WRITEs without ACK_REQ and a DISCONNECT in one burst: a "
        "DISCONNECT_ACK, and after it nothing (a pending ACK is discarded "
        "on entering CLOSED)")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint8_t d[16] = {0};

    for (int i = 0; i < 3; i++) {
        ct_pkt_req(c, &p, MROCE_OP_WRITE);
        p.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
        p.u.rq.req.raddr = mr.addr + 16u * (uint32_t)i;
        p.u.rq.req.rkey = mr.rkey;
        p.u.rq.req.msg_len = sizeof(d);
        p.payload = d;
        p.payload_len = sizeof(d);
        ct_consume(c, &p);
        ct_send(c, &p);
    }
    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
    ct_send(c, &p);
    ct_expect_ctl(c, MROCE_OP_DISCONNECT_ACK, CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_qp_state(t, c->aqp, "CLOSED", 0);
}

CT_CASE(conn_disconnect_retx_without_rtt_sample, "CONN-16",
        "requester QP (min_rto 2 ms) that has no RTT sample yet (nothing "
        "but the handshake): QP_CLOSE, silent peer: the first DISCONNECT "
        "retransmission comes at least 5 * min_rto (10 ms) after the first "
        "transmission, by the IUT's own TSval")
{
    struct ct_conn *c = ct_accept(t, "min_rto_us=2000 retry=1");
    const struct ct_rx *rx;
    uint32_t ts0;

    ct_agent(t, "QP_CLOSE qp=%d", c->aqp);
    rx = ct_expect_ctl(c, MROCE_OP_DISCONNECT, CT_WAIT);
    ts0 = rx->p.base.tsval;
    rx = ct_expect_ctl(c, MROCE_OP_DISCONNECT, 400);
    CT_REQUIRE(t, rx->p.base.tsval - ts0 + 500000u >= 10000000u,
               "DISCONNECT resent %.2f ms after the first transmission; "
               "before any RTT sample the interval is 5 * min_rto = 10 ms",
               (rx->p.base.tsval - ts0) / 1e6);
}

CT_CASE(sec_wrong_token_dropped, "CONN-14 SEC-2 SEC-3",
        "WRITE with a token differing in one bit: silence, nothing placed; "
        "the same PSN with the right token is then ACKed with RX Count 1")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x11);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[64];

    ct_pattern(d, sizeof(d), 3);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.base.token ^= 1;
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send(c, &p);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, sizeof(d), 0x11);
    p.base.token ^= 1;
    ct_send(c, &p);
    rx = ct_expect_ack(c, c->snd_nxt + 1, CT_WAIT);
    CT_EQ(t, "ACK RX Count", 1, rx->p.u.ack.rx_count);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

CT_CASE(sec_listen_qp_drops_data, "CONN-14 CONN-2 SEC-2 SEC-7",
        "WRITE, ACK and DISCONNECT to a QP in LISTEN (token 0 and a guess): "
        "silence, nothing placed, QP stays LISTEN and still accepts a "
        "CONNECT_REQ")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_conn_new(t, "");
    struct mrw_pkt p;
    uint8_t d[32];

    ct_conn_listen(c);
    ct_pattern(d, sizeof(d), 9);
    for (int i = 0; i < 2; i++) {
        ct_pkt_req(c, &p, MROCE_OP_WRITE);
        p.base.token = i ? 0x0123456789abcdefull : 0;
        p.u.rq.req.raddr = mr.addr;
        p.u.rq.req.rkey = mr.rkey;
        p.u.rq.req.msg_len = sizeof(d);
        p.payload = d;
        p.payload_len = sizeof(d);
        ct_send(c, &p);
        ct_pkt_ctl(c, &p, MROCE_OP_ACK);
        p.base.token = i ? 0x0123456789abcdefull : 0;
        ct_send(c, &p);
        ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
        p.base.token = i ? 0x0123456789abcdefull : 0;
        ct_send(c, &p);
    }
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, sizeof(d), 0);
    ct_expect_qp_state(t, c->aqp, "LISTEN", 0);
    ct_conn_connect(c);
}

CT_CASE(sec_forged_ack_nak_disconnect_ignored, "CONN-14 SEC-2 SEC-7",
        "while the IUT's WRITE waits for its ACK: an ACK covering it, a "
        "fatal NAK for it and a DISCONNECT, all with a wrong token, change "
        "nothing (no completion, no DISCONNECT_ACK, RTS); the real ACK then "
        "completes it")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint32_t psn;

    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    psn = rx->p.base.psn;
    ct_pkt_ctl(c, &p, MROCE_OP_ACK);
    p.base.token ^= 1;
    p.u.ack.cum_psn = psn + 1;
    p.u.ack.echo_psn = psn;
    p.u.ack.rx_count = 1;
    p.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    ct_send(c, &p);
    ct_pkt_ctl(c, &p, MROCE_OP_NAK);
    p.base.token ^= 2;
    p.u.nak.nak_psn = psn;
    p.u.nak.code = MROCE_NAK_REMOTE_ACCESS_KEY;
    p.u.nak.cum_psn = psn;
    ct_send(c, &p);
    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
    p.base.token ^= 4;
    ct_send(c, &p);
    ct_expect_no_op(c, MROCE_OP_DISCONNECT_ACK, CT_QUIET);
    ct_expect_no_wc(t, c->aqp, "send", 0);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    ct_send_ack(c, NULL);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
}
