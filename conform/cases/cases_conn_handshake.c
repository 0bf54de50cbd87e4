/*
 * cases_conn_handshake.c - connection.md section 2, the handshake, in both
 * roles: CONNECT_REQ and CONNECT_RESP fields, duplicate and stray requests,
 * listener selection (CONN-7), the IUT's CONNECT_REQ retransmission
 * schedule and handshake timeout (CONN-6, with handshake_timeout_ms=), the
 * CONNECT_RESPs it must drop or confirm again, and what the handshake
 * negotiates (MTU, window: CONN-10..CONN-12).
 *
 * Timing checks use lower bounds with 10% + 1 ms slack and loose upper
 * bounds: a shared, loaded machine delays timers, it does not advance them.
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
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
               r->u.conn.rx_window >= 64 && r->u.conn.rx_window <= 262144 &&
                   !(r->u.conn.rx_window & (r->u.conn.rx_window - 1)),
               "CONNECT_RESP RX Window %u is not a power of two in 64..262144",
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
    /* 68 bytes, and the SACK extension if the IUT states one (WIRE-52) */
    CT_EQ(t, "CONNECT_REQ Pkt Len",
          68 + (q->u.conn.sack_words ? 2 + MROCE_EXT_SACK_LEN : 0),
          q->base.pkt_len);
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
static void connect_req_dropped(struct ct *t, void (*mutate)(struct mrw_pkt *))
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

/* Another QPN of the same slot (a different generation bit), never 0:
 * Dst QPN 0 means "any listener" (CONN-7), which the LISTEN QP answers. */
static void mut_other_qpn(struct mrw_pkt *p)
{
    uint32_t q = p->base.dst_qpn ^ 0x00800000u;
    p->base.dst_qpn = q ? q : p->base.dst_qpn ^ 0x00400000u;
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
    ch_still_connecting(c);
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

CT_CASE(conn_advertised_parameters, "CONN-4 CONN-8 SEM-11 CC-16 CC-24",
        "QPs created with mtu 1500, window 128, npaths 4, max_rd_atomic 3: "
        "as requester its CONNECT_REQ and as listener its CONNECT_RESP "
        "advertise MTU 1500, RX Window 128, NPaths 4, Max RD Atomic 6, "
        "Flags RATE (the default, CC-24; no CREDIT), base PSN = Start PSN")
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
        CT_EQ(t, what, MROCE_CONN_RATE, h[i]->u.conn.flags);
        snprintf(what, sizeof(what), "%s base PSN", w);
        CT_EQ(t, what, h[i]->u.conn.start_psn, h[i]->base.psn);
    }
    CT_EQ(t, "CONNECT_REQ base Token", 0, h[0]->base.token);
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

/* Sends c's CONNECT_REQ naming dst_qpn from our MetaRoCE port. */
static void connect_req_to(struct ct_conn *c, uint32_t dst_qpn)
{
    struct mrw_pkt req;
    uint8_t buf[128];
    size_t n;

    ct_pkt_connect_req(c, &req);
    req.base.dst_qpn = dst_qpn;
    n = ct_encode(c->t, &req, buf, sizeof(buf));
    ct_send_raw(c->t, -1, buf, n, CT_ECN_ECT0);
}

CT_CASE(edge_connect_req_named_qp_not_listening, "CONN-7 CONN-2 SEC-7",
        "with a QP in LISTEN, CONNECT_REQs naming a QP in RESET and a "
        "connected QP (new Src QPN and token): no reply, drop_no_listener "
        "each, the listener stays in LISTEN; it then accepts a CONNECT_REQ "
        "naming it")
{
    struct ct_conn *l = ct_conn_new(t, "");
    struct ct_conn *x = ct_conn_new(t, "");
    struct ct_conn *y = ct_connect(t, "");
    struct ct_conn *z = ct_conn_new(t, "");
    int64_t before;

    ct_conn_listen(l);
    before = ct_rl_counter(t, l->aqp, "drop_no_listener");
    connect_req_to(x, x->aqpn);
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, l->aqp, "drop_no_listener", before, 1);
    ct_expect_qp_state(t, x->aqp, "RESET", 0);
    ct_expect_qp_state(t, l->aqp, "LISTEN", 0);

    /* z's Src QPN and token are not y's binding: not a retransmission. */
    before = ct_rl_counter(t, l->aqp, "drop_no_listener");
    connect_req_to(z, y->aqpn);
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, l->aqp, "drop_no_listener", before, 1);
    ct_expect_qp_state(t, y->aqp, "RTS", 0);
    ct_expect_qp_state(t, l->aqp, "LISTEN", 0);

    ct_conn_connect(l);
}

CT_CASE(more_conn6_short_handshake_timeout, "CONN-6 CONN-20 SEM-23",
        "QP with handshake_timeout_ms=200 connects to a silent tester, a "
        "send and a receive posted: not in ERROR before 180 ms, in ERROR "
        "by 200 ms + 150 ms allowance, both WRs flushed, no CONNECT_REQ "
        "afterwards, counter timeouts >= 1")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "handshake_timeout_ms=200");
    uint64_t t0, t1;
    int64_t to;

    ct_post_recv(t, c->aqp, 1, &mr, 0, 64);
    t0 = ct_now_ns();
    ct_accept_begin(c, c->qpn);
    t1 = ct_now_ns(); /* the CONNECT_REQ has come: connect was before */
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=8 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    /* ERROR seen less than 180 ms after t0 (before QP_CONNECT) is early
     * for sure (10% for clocks the IUT may read a little early, as
     * conn_handshake_timeout allows); CONNECTING seen when the query
     * left more than 350 ms after t1 is late for sure. */
    for (;;) {
        uint64_t q0, el;
        const char *st;
        ct_recv(t, 5);
        q0 = ct_now_ns();
        st = ct_qp_state(t, c->aqp);
        el = ct_now_ns() - t0;
        if (strcmp(st, "ERROR") == 0) {
            CT_REQUIRE(t, el >= 180000000ull,
                       "QP in ERROR %.1f ms after QP_CONNECT, before its "
                       "handshake_timeout (200 ms)",
                       el / 1e6);
            ct_log(t, "ERROR seen %.1f ms after QP_CONNECT", el / 1e6);
            break;
        }
        CT_REQUIRE(t, strcmp(st, "CONNECTING") == 0,
                   "QP in %s while its handshake is unanswered", st);
        CT_REQUIRE(t, q0 - t1 < (uint64_t)(200 + ct_ms(t, 150)) * 1000000u,
                   "QP still CONNECTING %.1f ms after its CONNECT_REQ "
                   "arrived (handshake_timeout 200 ms)",
                   (q0 - t1) / 1e6);
    }
    ct_expect_wc(t, c->aqp, "send", 2, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 1, "WR_FLUSH_ERR", CT_WAIT);
    while (ct_recv(t, 0))
        ;
    ct_expect_silence(t, 150);
    to = ct_counter(t, c->aqp, "timeouts");
    if (to >= 0)
        CT_REQUIRE(t, to >= 1,
                   "counter timeouts is %lld after a handshake timeout",
                   (long long)to);
}

CT_CASE(more_conn6_long_handshake_timeout, "CONN-6 CONN-10 CONN-11",
        "QP with handshake_timeout_ms=3000 connects to a tester that "
        "answers its CONNECT_REQ only after 1.3 s (beyond the 1 s "
        "default): still CONNECTING then, and the late CONNECT_RESP "
        "completes the handshake (confirming ACK, RTS)")
{
    struct ct_conn *c = ct_conn_new(t, "handshake_timeout_ms=3000");
    struct mrw_pkt resp;
    const struct ct_rx *rx;
    uint64_t end;

    ct_accept_begin(c, c->qpn);
    end = ct_now_ns() + 1300000000ull;
    while (ct_now_ns() < end) {
        rx = ct_next(c, 20);
        if (rx && rx->p.base.opcode != MROCE_OP_CONNECT_REQ)
            ct_fail(t,
                    "unanswered handshake: expected only CONNECT_REQ "
                    "retransmissions, got %s",
                    ct_describe(t, rx));
    }
    CT_REQUIRE(t, strcmp(ct_qp_state(t, c->aqp), "CONNECTING") == 0,
               "QP in %s 1.3 s into a handshake with handshake_timeout "
               "3 s, expected CONNECTING",
               ct_qp_state(t, c->aqp));
    ct_pkt_connect_resp(c, &resp);
    ct_send(c, &resp);
    c->connected = 1;
    for (;;) {
        rx = ct_next(c, ct_ms(t, CT_WAIT));
        if (!rx)
            ct_fail(t, "no confirming ACK within %d ms of our CONNECT_RESP",
                    ct_ms(t, CT_WAIT));
        if (rx->p.base.opcode == MROCE_OP_ACK)
            break;
        if (rx->p.base.opcode != MROCE_OP_CONNECT_REQ)
            ct_fail(t, "expected the confirming ACK, got %s",
                    ct_describe(t, rx));
    }
    CT_EQ(t, "confirming ACK Cum PSN", c->start_psn, rx->p.u.ack.cum_psn);
    CT_EQ(t, "confirming ACK Echo TS", resp.base.tsval, rx->p.u.ack.echo_ts);
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
}

CT_CASE(ops_read_peer_mtu_smaller, "CONN-12 SEM-3",
        "tester advertises MTU 512 to a QP of MTU 4096: a READ of 2000 bytes "
        "comes as four READ_RESPs of at most 512 bytes")
{
    ch_read_check(t, 4096, 512, 0, 2000);
}

CT_CASE(sec_connect_req_to_connected_qp, "CONN-7 SEC-7 CONN-9",
        "a CONNECT_REQ naming a connected QP with another Src QPN and token "
        "(not its binding): no CONNECT_RESP, nothing changes; the "
        "connection still works")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt req;
    uint8_t buf[128], d[8] = {4, 4, 4, 4, 4, 4, 4, 4};
    size_t n;
    uint32_t psn;

    ct_pkt_connect_req(c, &req);
    req.u.conn.src_qpn ^= 0x5555;
    req.u.conn.token ^= 0x77;
    n = ct_encode(t, &req, buf, sizeof(buf));
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}
