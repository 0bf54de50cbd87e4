/*
 * cases_conn2.c - the rest of the connection life cycle (connection.md):
 * the IUT's CONNECT_REQ retransmission schedule and handshake timeout,
 * CONNECT_RESPs it must drop or answer again, what the handshake
 * negotiates (MTU, window), posting rules per state, and the end of a
 * connection: orderly close by either side with outstanding work,
 * DISCONNECT retransmission and its give-up, and the silence of a QP in
 * CLOSED or ERROR.
 *
 * Timing checks use lower bounds with 10% + 1 ms slack and loose upper
 * bounds: a shared, loaded machine delays timers, it does not advance them.
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

static int same_connect(const struct mrw_pkt *a, const struct mrw_pkt *b)
{
    return a->base.version == b->base.version &&
           a->base.opcode == b->base.opcode && a->base.flags == b->base.flags &&
           a->base.dst_qpn == b->base.dst_qpn &&
           a->base.token == b->base.token && a->base.psn == b->base.psn &&
           a->base.entropy == b->base.entropy &&
           a->base.pkt_len == b->base.pkt_len &&
           memcmp(&a->u.conn, &b->u.conn, sizeof(a->u.conn)) == 0;
}

CT_CASE(conn_connect_req_retransmitted, "CONN-5 CONN-13",
        "QP_CONNECT (min_rto 2 ms) to a silent tester: CONNECT_REQ resent "
        "10, 20, 40, 80 ms apart (5 * min_rto, doubling), from the same "
        "port, every field but TSval unchanged; answering one completes "
        "the handshake")
{
    struct ct_conn *c = ct_conn_new(t, "min_rto_us=2000");
    struct mrw_pkt first, resp;
    const struct ct_rx *rx;
    int n = 1; /* transmissions seen */
    uint32_t last_ts;

    ct_accept_begin(c, c->qpn);
    first = c->hs;
    last_ts = first.base.tsval;
    while (n < 5) {
        rx = ct_expect_op(c, MROCE_OP_CONNECT_REQ, 0, 400);
        CT_REQUIRE(t, same_connect(&first, &rx->p),
                   "retransmitted CONNECT_REQ differs in a field other than "
                   "TSval: %s",
                   ct_describe(t, rx));
        CT_EQ(t, "retransmission's UDP source port", c->hs_sport, rx->sport);
        CT_REQUIRE(t, rx->p.base.tsval != last_ts,
                   "retransmitted CONNECT_REQ has the same TSval");
        last_ts = rx->p.base.tsval;
        {
            /* By the IUT's own clock (TSval, ns): the time since the first
             * transmission is at least the nominal sum 10, 30, 70, 150 ms
             * (less 10% and 1 ms), whatever delays the IUT's timers or our
             * receipt; and, loosely, at most twice it plus 400 ms. */
            uint32_t since = rx->p.base.tsval - first.base.tsval;
            uint64_t cum = 10000000ull * ((1ull << n) - 1);
            CT_REQUIRE(t, (uint64_t)since + 1000000 >= cum - cum / 10,
                       "CONNECT_REQ retransmission %d sent %.1f ms after the "
                       "first transmission, expected %.0f ms (5 * min_rto, "
                       "doubling: CONN-5)",
                       n, since / 1e6, cum / 1e6);
            CT_REQUIRE(t,
                       (uint64_t)since <=
                           2 * cum + (uint64_t)ct_ms(t, 400) * 1000000u,
                       "CONNECT_REQ retransmission %d sent %.1f ms after the "
                       "first transmission, expected %.0f ms (CONN-5)",
                       n, since / 1e6, cum / 1e6);
        }
        n++;
    }
    ct_pkt_connect_resp(c, &resp);
    ct_send(c, &resp);
    c->connected = 1;
    for (;;) { /* a CONNECT_REQ resent meanwhile may come first */
        rx = ct_next(c, ct_ms(t, CT_WAIT));
        CT_REQUIRE(t, rx != NULL, "no confirming ACK for our CONNECT_RESP");
        if (rx->p.base.opcode == MROCE_OP_ACK)
            break;
        CT_EQ(t, "opcode before the confirming ACK", MROCE_OP_CONNECT_REQ,
              rx->p.base.opcode);
    }
    CT_EQ(t, "confirming ACK Echo TS", resp.base.tsval, rx->p.u.ack.echo_ts);
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
}

CT_CASE(conn_handshake_timeout, "CONN-6 CONN-20 CONN-22 SEM-23",
        "QP_CONNECT to a silent tester, a receive and a send posted: "
        "CONNECTING until 0.9 s, ERROR by 1.5 s (handshake_timeout 1 s), "
        "both flushed WR_FLUSH_ERR, no CONNECT_REQ afterwards")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "");
    uint64_t t0;
    int64_t to;

    ct_post_recv(t, c->aqp, 1, &mr, 0, 64);
    t0 = ct_now_ns();
    ct_accept_begin(c, c->qpn);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=8 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    /* Poll the state while draining the CONNECT_REQs.  ERROR seen at a
     * time less than 0.9 s after t0 (taken before QP_CONNECT) is early
     * for sure; CONNECTING seen later than 1.5 s is late for sure. */
    for (;;) {
        uint64_t el;
        const char *st;
        ct_recv(t, 10);
        st = ct_qp_state(t, c->aqp);
        el = ct_now_ns() - t0;
        if (strcmp(st, "ERROR") == 0) {
            CT_REQUIRE(t, el >= 900000000ull,
                       "QP in ERROR %.0f ms after QP_CONNECT, before "
                       "handshake_timeout (1 s)",
                       el / 1e6);
            break;
        }
        CT_REQUIRE(t, strcmp(st, "CONNECTING") == 0,
                   "QP in %s while its handshake is unanswered", st);
        CT_REQUIRE(t, el < (uint64_t)ct_ms(t, 1500) * 1000000u,
                   "QP still CONNECTING %.0f ms after QP_CONNECT "
                   "(handshake_timeout 1 s)",
                   el / 1e6);
    }
    ct_expect_wc(t, c->aqp, "send", 2, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 1, "WR_FLUSH_ERR", CT_WAIT);
    while (ct_recv(t, 0))
        ;
    ct_expect_silence(t, 150);
    to = ct_counter(t, c->aqp, "timeouts");
    if (to >= 0)
        CT_REQUIRE(t, to >= 1,
                   "counter timeouts is %lld after a handshake "
                   "timeout",
                   (long long)to);
}

/* The QP must still be CONNECTING; if not, say whether it timed out
 * (counter timeouts) or failed otherwise. */
static void still_connecting(struct ct_conn *c)
{
    struct ct *t = c->t;
    const char *st = ct_qp_state(t, c->aqp);
    char s[32];

    if (strcmp(st, "CONNECTING") == 0)
        return;
    snprintf(s, sizeof(s), "%s", st);
    ct_fail(t,
            "QP in %s, expected CONNECTING (a dropped CONNECT_RESP changes "
            "nothing); counter timeouts=%lld",
            s, (long long)ct_counter(t, c->aqp, "timeouts"));
}

CT_CASE(conn_resp_wrong_src_qpn_dropped, "CONN-10 SEC-2",
        "QP_CONNECT naming our QPN; a CONNECT_RESP whose Src QPN is another "
        "QPN: no confirming ACK, still CONNECTING; the right one: "
        "confirming ACK, RTS")
{
    struct ct_conn *c = ct_conn_new(t, "min_rto_us=100000");
    struct mrw_pkt resp;
    const struct ct_rx *rx;

    ct_accept_begin(c, c->qpn);
    ct_pkt_connect_resp(c, &resp);
    resp.u.conn.src_qpn = c->qpn + 1000;
    ct_send(c, &resp);
    c->connected = 1;
    ct_expect_silence(t, CT_QUIET);
    still_connecting(c);
    ct_pkt_connect_resp(c, &resp);
    ct_send(c, &resp);
    rx = ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
    CT_EQ(t, "confirming ACK Echo TS", resp.base.tsval, rx->p.u.ack.echo_ts);
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
}

CT_CASE(conn_resp_any_listener_src_taken, "CONN-10 CONN-4",
        "QP_CONNECT with rqpn 0 (any listener): CONNECT_REQ Dst QPN 0; our "
        "CONNECT_RESP's Src QPN is taken as the peer's QPN: data then "
        "comes addressed to it")
{
    struct ct_conn *c = ct_conn_new(t, "min_rto_us=100000");
    struct ct_mr mr = ct_mr_reg(t, 64, "lw", 0);
    struct mrw_pkt resp;
    const struct ct_rx *rx;

    ct_accept_begin(c, 0);
    CT_EQ(t, "CONNECT_REQ Dst QPN", 0, c->hs.base.dst_qpn);
    ct_pkt_connect_resp(c, &resp);
    ct_send(c, &resp);
    c->connected = 1;
    ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
    ct_agent(t, "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=8", c->aqp,
             mr.id);
    rx = ct_expect_data(c, CT_WAIT); /* fails if not addressed to c->qpn */
    CT_EQ(t, "SEND PSN", c->astart, rx->p.base.psn);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
}

CT_CASE(conn_resp_duplicate_reconfirmed, "CONN-11 REL-14",
        "after the handshake and one WRITE from us, our CONNECT_RESP again: "
        "a new confirming ACK echoing its TSval and Entropy with the "
        "current Cum PSN and RX Count; a CONNECT_RESP with another CONN "
        "Token: dropped")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_conn_new(t, "");
    struct mrw_pkt resp;
    const struct ct_rx *rx;
    uint8_t d[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint32_t psn;

    ct_conn_accept(c);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    ct_pkt_connect_resp(c, &resp);
    resp.base.entropy = ct_entropy(t, 3);
    ct_send(c, &resp);
    rx = ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
    CT_EQ(t, "confirming ACK Cum PSN", psn + 1, rx->p.u.ack.cum_psn);
    CT_EQ(t, "confirming ACK Echo PSN = Cum PSN", psn + 1,
          rx->p.u.ack.echo_psn);
    CT_EQ(t, "confirming ACK Echo TS", resp.base.tsval, rx->p.u.ack.echo_ts);
    CT_EQ(t, "confirming ACK Echo Entropy", resp.base.entropy,
          rx->p.u.ack.echo_entropy);
    CT_EQ(t, "confirming ACK Echo Flags", 0, rx->p.u.ack.echo_flags);
    CT_EQ(t, "confirming ACK RX Count", 1, rx->p.u.ack.rx_count);
    CT_EQ(t, "confirming ACK SACK Words", 0, rx->p.u.ack.sack_words);
    ct_pkt_connect_resp(c, &resp);
    resp.u.conn.token ^= 0x10;
    ct_send(c, &resp);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
}

CT_CASE(conn_peer_mtu_bounds_payload, "CONN-12 SEM-3 WIRE-4",
        "the tester advertises MTU 512 to a QP of MTU 4096: the IUT's WRITE "
        "of 2000 bytes comes as four packets of at most 512 bytes at "
        "Offsets 0, 512, 1024, 1536")
{
    static uint8_t d[2000];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "mtu=4096");
    uint32_t want = 0;

    c->par.mtu = 512;
    ct_conn_accept(c);
    ct_pattern(d, sizeof(d), 50);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=2000 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    while (want < 4) {
        const struct ct_rx *rx = ct_expect_data(c, CT_WAIT);
        uint32_t n = want == 3 ? 2000 - 1536 : 512;
        if (rx->p.base.flags & MROCE_F_RETX)
            continue;
        CT_EQ(t, "PSN", c->astart + want, rx->p.base.psn);
        CT_EQ(t, "Offset", want * 512, rx->p.u.rq.req.offset);
        CT_EQ(t, "payload length", n, rx->p.payload_len);
        want++;
    }
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
}

CT_CASE(conn_peer_window_bounds_psns, "CONN-12 REL-5",
        "the tester advertises RX Window 64 to a QP of window 1024 and ACKs "
        "nothing: of 80 posted WRITEs at most 64 PSNs are sent; once ACKed, "
        "the rest follow and all 80 complete")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "window=1024 min_rto_us=200000");
    uint32_t hi = 0, n = 0;
    int any = 0;
    uint64_t end;

    c->par.rx_window = 64;
    ct_conn_accept(c);
    c->auto_ack = 0;
    for (int i = 0; i < 80; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=16 "
                 "raddr=0x100 rkey=1",
                 c->aqp, i, mr.id);
    end = ct_now_ns() + 150000000ull;
    while (ct_now_ns() < end) {
        const struct ct_rx *rx = ct_next(c, 10);
        if (!rx || !mrw_opcode_has_psn(rx->p.base.opcode))
            continue;
        if (!any || mrw_psn_diff(rx->p.base.psn, hi) > 0) {
            hi = rx->p.base.psn;
            any = 1;
        }
    }
    n = any ? hi - c->astart + 1 : 0;
    CT_REQUIRE(t, n <= 64,
               "with RX Window 64 and nothing acknowledged the IUT sent %u "
               "PSNs (REL-5: at most 64)",
               n);
    CT_REQUIRE(t, n >= 1, "the IUT sent nothing");
    c->auto_ack = 1;
    ct_send_ack(c, NULL);
    for (int i = 0; i < 80; i++) {
        struct ct_wc wc = ct_poll(t, c->aqp, "send", 0);
        while (!wc.n) {
            while (ct_recv(t, 0))
                ;
            wc = ct_poll(t, c->aqp, "send", 5);
            if (!wc.n && ct_now_ns() > end + 2000000000ull)
                ct_fail(t, "only %d of 80 WRITEs completed", i);
        }
        CT_EQ(t, "completion wrid", i, wc.wrid);
        CT_REQUIRE(t, strcmp(wc.status, "SUCCESS") == 0,
                   "WRITE %d completed %s", i, wc.status);
    }
}

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

CT_CASE(conn_advertised_parameters, "CONN-4 CONN-8 SEM-11 CC-16",
        "QPs created with mtu 1500, window 128, npaths 4, max_rd_atomic 3: "
        "as requester its CONNECT_REQ and as listener its CONNECT_RESP "
        "advertise MTU 1500, RX Window 128, NPaths 4, Max RD Atomic 6, "
        "Flags 0, base PSN = Start PSN")
{
    static const char *opts = "mtu=1500 window=128 npaths=4 max_rd_atomic=3 "
                              "cc=delay";
    struct ct_conn *a = ct_conn_new(t, opts);
    struct ct_conn *l = ct_conn_new(t, opts);
    const struct mrw_pkt *h[2];

    ct_conn_accept(a);
    ct_conn_connect(l);
    h[0] = &a->hs;
    h[1] = &l->hs;
    for (int i = 0; i < 2; i++) {
        const char *w = i ? "CONNECT_RESP" : "CONNECT_REQ";
        char what[64];
        snprintf(what, sizeof(what), "%s MTU", w);
        CT_EQ(t, what, 1500, h[i]->u.conn.mtu);
        snprintf(what, sizeof(what), "%s RX Window", w);
        CT_EQ(t, what, 128, h[i]->u.conn.rx_window);
        snprintf(what, sizeof(what), "%s NPaths", w);
        CT_EQ(t, what, 4, h[i]->u.conn.npaths);
        snprintf(what, sizeof(what), "%s Max RD Atomic (2 * max_rd_atomic)", w);
        CT_EQ(t, what, 6, h[i]->u.conn.max_rd_atomic);
        snprintf(what, sizeof(what), "%s Flags", w);
        CT_EQ(t, what, 0, h[i]->u.conn.flags);
        snprintf(what, sizeof(what), "%s base PSN", w);
        CT_EQ(t, what, h[i]->u.conn.start_psn, h[i]->base.psn);
    }
    CT_EQ(t, "CONNECT_REQ base Token", 0, h[0]->base.token);
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
    still_connecting(c);
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

CT_CASE(conn_connect_req_after_error_dropped, "CONN-9 CONN-21",
        "our CONNECT_REQ again after the QP was moved to ERROR: no "
        "CONNECT_RESP, nothing at all")
{
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt req;
    uint8_t buf[128];
    size_t n;

    ct_agent(t, "QP_ERROR qp=%d", c->aqp);
    ct_expect_qp_state(t, c->aqp, "ERROR", 0);
    ct_pkt_connect_req(c, &req);
    n = ct_encode(t, &req, buf, sizeof(buf));
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    ct_expect_silence(t, CT_QUIET);
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

CT_CASE(conn_resp_source_not_checked, "CONN-10 CONN-13 SEC-6",
        "our CONNECT_RESP sent from a UDP port the IUT never connected to: "
        "accepted (its source is not checked), and the confirming ACK and "
        "later data go to the address given to QP_CONNECT, never to that "
        "port")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "min_rto_us=100000");
    struct mrw_pkt resp;
    const struct ct_rx *rx;
    int fd, n;

    ct_accept_begin(c, c->qpn);
    ct_pkt_connect_resp(c, &resp);
    fd = ct_send_from_new_socket(c, &resp);
    c->connected = 1;
    rx = ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
    CT_REQUIRE(t, rx->sock < 0, "confirming ACK went to an entropy port");
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
    ct_agent(t, "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=8", c->aqp,
             mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    CT_REQUIRE(t, rx->sock < 0, "data went to an entropy port");
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    n = ct_sock_recv(t, fd, 0);
    ct_sock_close(fd);
    CT_EQ(t, "bytes sent to the CONNECT_RESP's source port", 0, n);
}

CT_CASE(conn_any_listener_longest, "CONN-7",
        "two QPs in LISTEN (B listening before A): a CONNECT_REQ with Dst "
        "QPN 0 is answered by B, the one in LISTEN the longest; A stays in "
        "LISTEN")
{
    struct ct_conn *a = ct_conn_new(t, "");
    struct ct_conn *b = ct_conn_new(t, "");
    struct mrw_pkt req;
    const struct ct_rx *rx;
    uint8_t buf[128];
    size_t n;

    ct_conn_listen(b);
    ct_conn_listen(a);
    ct_pkt_connect_req(b, &req);
    req.base.dst_qpn = 0;
    n = ct_encode(t, &req, buf, sizeof(buf));
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    rx = ct_expect_op(b, MROCE_OP_CONNECT_RESP, 0, CT_WAIT);
    CT_EQ(t, "CONNECT_RESP Src QPN (the older listener)", b->aqpn,
          rx->p.u.conn.src_qpn);
    ct_expect_qp_state(t, b->aqp, "RTS", CT_WAIT);
    ct_expect_qp_state(t, a->aqp, "LISTEN", 0);
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
