/*
 * cases_wire_ext.c - wire-format.md's STREAM word and CONN extensions as
 * the codec judges them (WIRE-32..WIRE-35, WIRE-26 rules 4, 9 and 10) and
 * connection.md's skipping of unknown extensions (CONN-25): a STREAM word
 * with Stream ID 0, the STREAM flag on a control packet or a response, and
 * a CONNECT_REQ with malformed extensions are dropped and counted in
 * drop_field, with no answer and no effect; a CONNECT_REQ with extensions
 * of unknown type connects.  Only what the codec decides is checked here:
 * what a stream means to a QP is semantics.md's (cases of their own).
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

/* The IUT's endpoint counts malformed packets in drop_field (WIRE-25 step
 * 11), which COUNTERS reports with every QP's (AGENT-10). */
#define DROP_FIELD "drop_field"

static void put16(uint8_t *b, uint16_t v)
{
    b[0] = (uint8_t)(v >> 8);
    b[1] = (uint8_t)v;
}

/* Sets Pkt Len to len and recomputes the CRC of the len-byte packet. */
static void set_len_reseal(uint8_t *buf, size_t len)
{
    put16(buf + 26, (uint16_t)len);
    ct_reseal(buf, len);
}

/* A keepalive for c: an ACK of our receive state with ACK_REQ and the DUP
 * echo (WIRE-28), which the IUT answers at once (REL-35). */
static void keepalive_pkt(struct ct_conn *c, struct mrw_pkt *p)
{
    ct_pkt_ctl(c, p, MROCE_OP_ACK);
    p->base.flags = MROCE_F_ACK_REQ;
    p->u.ack.cum_psn = c->rcv_cum;
    p->u.ack.echo_psn = c->rcv_cum;
    p->u.ack.echo_flags = MROCE_ECHO_DUP;
    p->u.ack.credit = MROCE_CREDIT_UNLIMITED;
}

CT_CASE(wire_stream_id_zero_dropped, "WIRE-32 WIRE-26 WIRE-27",
        "a one-packet WRITE of 32 bytes with the STREAM flag and a STREAM "
        "word of Stream ID 0 (stream 0 has no word): silence, nothing "
        "placed, drop_field +1; the same WRITE without flag and word is "
        "ACKed and placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x5a);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint8_t d[32], buf[256];
    const struct ct_rx *rx;
    int64_t before;
    size_t len;

    ct_pattern(d, sizeof(d), 32);
    ch_req_pkt(c, &p, MROCE_OP_WRITE, mr.addr + 64, mr.rkey, d, sizeof(d));
    p.base.flags |= MROCE_F_STREAM;
    p.u.rq.req.stream = 1; /* the encoder writes the word; 0 put below */
    len = ct_encode(t, &p, buf, sizeof(buf));
    CT_EQ(t, "Pkt Len with the STREAM word", 28 + 32 + 4 + sizeof(d) + 4, len);
    put16(buf + 60, 0); /* Stream ID */
    ct_reseal(buf, len);
    before = ct_rl_counter(t, c->aqp, DROP_FIELD);
    ct_send_raw(t, 0, buf, len, CT_ECN_ECT0);
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, c->aqp, DROP_FIELD, before, 1);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x5a);

    p.base.flags &= (uint16_t)~MROCE_F_STREAM;
    p.u.rq.req.stream = 0;
    ct_send(c, &p);
    ct_consume(c, &p);
    rx = ct_expect_ack(c, p.base.psn + 1, CT_WAIT);
    CT_EQ(t, "RX Count after the intact WRITE", 1, rx->p.u.ack.rx_count);
    ct_expect_mem(t, &mr, 64, d, sizeof(d));
}

CT_CASE(wire_stream_on_control_dropped, "WIRE-6 WIRE-26 WIRE-27",
        "a keepalive (ACK with ACK_REQ) with the STREAM flag, then a "
        "DISCONNECT with the STREAM flag: silence, drop_field +2, the QP "
        "stays in RTS; the keepalive without STREAM is answered at once")
{
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    int64_t before;

    c->auto_ack = 0;
    before = ct_rl_counter(t, c->aqp, DROP_FIELD);
    keepalive_pkt(c, &p);
    p.base.flags |= MROCE_F_STREAM;
    ct_send(c, &p);
    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
    p.base.flags = MROCE_F_STREAM;
    ct_send(c, &p);
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, c->aqp, DROP_FIELD, before, 2);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);

    keepalive_pkt(c, &p);
    ct_send(c, &p);
    rx = ct_rl_next(c, CT_WAIT);
    if (!rx)
        ct_fail(t,
                "the keepalive without STREAM was not answered within "
                "%d ms",
                CT_WAIT);
    CT_REQUIRE(t, rx->p.base.opcode == MROCE_OP_ACK,
               "expected an ACK answering the keepalive, got %s",
               ct_describe(t, rx));
}

CT_CASE(wire_stream_on_read_resp_dropped, "WIRE-6 WIRE-26 WIRE-36",
        "IUT READ of 100 bytes: our READ_RESP with the STREAM flag (a "
        "response names its stream in the RESP header) is dropped, "
        "drop_field +1, no completion, nothing placed; the same READ_RESP "
        "without the flag completes the READ")
{
    struct ct_conn *c = ct_accept(t, "");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x33);
    struct ct_rl_pkt req;
    uint8_t d[100];
    uint32_t s = c->snd_nxt;
    int64_t before;

    ct_pattern(d, sizeof(d), 36);
    c->auto_ack = 0;
    ch_post_read(t, c, &mr, 9, sizeof(d), &req);
    CT_REQUIRE(t, !(req.p.base.flags & MROCE_F_STREAM),
               "a READ of stream 0 carries the STREAM flag");
    before = ct_rl_counter(t, c->aqp, DROP_FIELD);
    ch_send_read_resp(c, &req, s, d, sizeof(d), 0, MROCE_F_STREAM);
    ct_expect_no_wc(t, c->aqp, "send", CT_QUIET);
    ct_rl_expect_counter(t, c->aqp, DROP_FIELD, before, 1);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x33);
    ch_send_read_resp(c, &req, s, d, sizeof(d), 0, 0);
    ct_expect_wc(t, c->aqp, "send", 9, "SUCCESS", RL_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

/* Appends ext (n bytes) to our CONNECT_REQ for c; returns the length of
 * the sealed packet in buf. */
static size_t connect_req_with(struct ct_conn *c, uint8_t *buf, size_t cap,
                               const uint8_t *ext, size_t n)
{
    struct mrw_pkt p;
    size_t len;

    ct_pkt_connect_req(c, &p);
    len = ct_encode(c->t, &p, buf, cap);
    CT_REQUIRE(c->t, len == 68 && len + n <= cap,
               "tester: CONNECT_REQ of %zu bytes", len);
    memcpy(buf + len - 4, ext, n);
    len += n;
    set_len_reseal(buf, len);
    return len;
}

/* A PLANES value of cnt entries (IPv4-mapped 10.0.i.1, port 4794), with
 * Length len_value; returns the extension's length. */
static size_t planes_ext(uint8_t *e, unsigned cnt, unsigned len_value)
{
    size_t n = 2 + 4;
    e[0] = MROCE_EXT_PLANES;
    e[1] = (uint8_t)len_value;
    e[2] = (uint8_t)cnt;
    memset(e + 3, 0, 3);
    for (unsigned i = 0; i < cnt && n + MROCE_EXT_PLANE_LEN <= 2 + len_value;
         i++) {
        uint8_t *a = e + n;
        memset(a, 0, MROCE_EXT_PLANE_LEN);
        a[10] = a[11] = 0xff;
        a[12] = 10;
        a[14] = (uint8_t)i;
        a[15] = 1;
        put16(a + 16, 4794);
        n += MROCE_EXT_PLANE_LEN;
    }
    return n;
}

CT_CASE(conn_ext_malformed_dropped, "WIRE-33 WIRE-34 WIRE-35 WIRE-26 SEC-2",
        "nine CONNECT_REQs to a listening QP, each with one malformed "
        "extension (length past the packet, one stray byte, STREAMS twice, "
        "STREAMS of length 6, Max Streams 0, PLANES count 0 and 9, PLANES "
        "length not matching its count, PLANES twice): no CONNECT_RESP, "
        "drop_field +9, the QP stays in LISTEN; then a plain CONNECT_REQ "
        "connects")
{
    static const uint8_t overrun[] = {MROCE_EXT_STREAMS, 4, 0, 64};
    static const uint8_t stray[] = {MROCE_EXT_STREAMS};
    static const uint8_t dup[] = {MROCE_EXT_STREAMS, 4, 0, 64, 0, 0,
                                  MROCE_EXT_STREAMS, 4, 0, 8,  0, 0};
    static const uint8_t len6[] = {MROCE_EXT_STREAMS, 6, 0, 64, 0, 0, 0, 0};
    static const uint8_t zero[] = {MROCE_EXT_STREAMS, 4, 0, 0, 0, 0};
    struct ct_conn *c = ct_conn_new(t, "");
    uint8_t buf[512], e[256];
    int64_t before;
    int sent = 0;
    size_t n;

    ct_conn_listen(c);
    before = ct_rl_counter(t, c->aqp, DROP_FIELD);
#define SEND_EXT(ext, len)                                               \
    do {                                                                 \
        size_t l_ = connect_req_with(c, buf, sizeof(buf), (ext), (len)); \
        ct_send_raw(t, -1, buf, l_, CT_ECN_ECT0);                        \
        sent++;                                                          \
    } while (0)
    SEND_EXT(overrun, sizeof(overrun));
    SEND_EXT(stray, sizeof(stray));
    SEND_EXT(dup, sizeof(dup));
    SEND_EXT(len6, sizeof(len6));
    SEND_EXT(zero, sizeof(zero));
    n = planes_ext(e, 0, 4);
    SEND_EXT(e, n);
    n = planes_ext(e, 9, 4 + 9 * MROCE_EXT_PLANE_LEN);
    SEND_EXT(e, n);
    n = planes_ext(e, 2, 4 + MROCE_EXT_PLANE_LEN);
    SEND_EXT(e, n);
    n = planes_ext(e, 1, 4 + MROCE_EXT_PLANE_LEN);
    n += planes_ext(e + n, 1, 4 + MROCE_EXT_PLANE_LEN);
    SEND_EXT(e, n);
#undef SEND_EXT
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, c->aqp, DROP_FIELD, before, sent);
    ct_expect_qp_state(t, c->aqp, "LISTEN", 0);
    ct_conn_connect(c);
}

CT_CASE(conn_ext_unknown_skipped, "WIRE-33 CONN-25 CONN-26",
        "CONNECT_REQ carrying extensions of unknown types 200 (5 bytes) and "
        "0 (empty) around STREAMS with Max Streams 64, to a QP not "
        "configured for streams: it connects; its CONNECT_RESP is 68 bytes "
        "(no STREAMS, no PLANES); a WRITE of stream 0 is then ACKed and "
        "placed")
{
    static const uint8_t ext[] = {200, 5, 1,  2, 3, 4, 5, MROCE_EXT_STREAMS,
                                  4,   0, 64, 0, 0, 0, 0};
    struct ct_conn *c = ct_conn_new(t, "");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    const struct ct_rx *rx;
    const struct mrw_conn_hdr *h;
    uint8_t buf[512], d[48];
    size_t len;
    uint32_t psn;

    ct_conn_listen(c);
    len = connect_req_with(c, buf, sizeof(buf), ext, sizeof(ext));
    ct_send_raw(t, -1, buf, len, CT_ECN_ECT0);
    rx = ct_expect_op(c, MROCE_OP_CONNECT_RESP, 0, CT_WAIT);
    h = &rx->p.u.conn;
    CT_EQ(t, "CONNECT_RESP Pkt Len (no extensions)", 68, rx->p.base.pkt_len);
    CT_EQ(t, "CONNECT_RESP STREAMS Max Streams (absent)", 0, h->max_streams);
    CT_EQ(t, "CONNECT_RESP PLANES Count (absent)", 0, h->nplanes);
    CT_EQ(t, "CONNECT_RESP Src QPN", c->aqpn, h->src_qpn);
    CT_REQUIRE(t, h->token != 0, "CONNECT_RESP CONN Token is 0 (SEC-4)");
    ct_conn_take_params(c, &rx->p); /* as ct_conn_connect does */
    c->hs_sport = rx->sport;
    c->hs_sock = rx->sock;
    ct_send_ack(c, &c->hs);
    c->connected = 1;
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);

    ct_pattern(d, sizeof(d), 25);
    psn = ct_send_write(c, &mr, 8, d, sizeof(d), 0);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 8, d, sizeof(d));
}
