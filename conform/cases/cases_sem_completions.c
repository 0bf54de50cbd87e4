/*
 * cases_sem_completions.c - semantics.md sections 4 and 5, completions and
 * ordering: each NAK code mapped to its completion status with the QP in
 * ERROR and later work flushed (SEM-25, SEM-23), completion order,
 * signaled and unsignaled completions (SEM-22, SEM-24), and the ordering
 * rules of SEM-24/26 (a receive, a READ or an atomic waits for the earlier
 * PSNs; atomics run in PSN order).
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

CT_CASE(loss_read_resp_hole_then_complete, "SEM-22 SEM-8 REL-15 REL-20 SEM-9",
        "IUT READ of 3000 bytes; we ACK the READ_REQ and send READ_RESP "
        "packets 0 and 2: ACK Cum at packet 1, SACK 0x1, no completion; "
        "packet 1 resent: Cum past all, READ completes, bytes placed")
{
    struct ct_conn *c = ct_accept(t, "mtu=1024 min_rto_us=20000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt req;
    const struct ct_rx *rx;
    uint8_t d[3000];
    uint32_t s = c->snd_nxt, want = 1;
    struct ct_wc wc;

    CT_EQ(t, "negotiated MTU", 1024, c->mtu);
    ct_pattern(d, sizeof(d), 44);
    c->auto_ack = 0;
    ch_post_read(t, c, &mr, 4, sizeof(d), &req);
    ct_rl_send_ack(c, req.p.base.psn + 1, NULL, 0, &req.p, 0);
    ch_send_read_resp(c, &req, s, d, sizeof(d), 0, 0);
    ch_send_read_resp(c, &req, s, d, sizeof(d), 2, 0);
    rx = ct_expect_ack(c, s + 1, RL_WAIT);
    for (;;) {
        if (rx->p.u.ack.echo_psn == s + 2)
            break;
        rx = ct_expect_ack(c, s + 1, RL_WAIT);
    }
    CT_EQ(t, "ACK Cum PSN (packet 1 missing)", s + 1, rx->p.u.ack.cum_psn);
    CT_EQ(t, "ACK SACK Words", 1, rx->p.u.ack.sack_words);
    CT_EQ(t, "ACK SACK word 0", want, rx->p.u.ack.sack[0]);
    ct_expect_no_wc(t, c->aqp, "send", 20);
    ch_send_read_resp(c, &req, s, d, sizeof(d), 1, MROCE_F_RETX);
    rx = ct_expect_ack(c, s + 3, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", s + 3, rx->p.u.ack.cum_psn);
    wc = ct_expect_wc(t, c->aqp, "send", 4, "SUCCESS", RL_WAIT);
    CT_EQ(t, "READ completion len", sizeof(d), wc.len);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

CT_CASE(loss_read_resp_acks_request, "SEM-22 REL-10",
        "IUT READ of 64 bytes; we never ACK its READ_REQ but send the "
        "READ_RESP: READ completes, and the READ_REQ is never resent "
        "(the response proved it arrived)")
{
    struct ct_conn *c = ct_accept(t, "min_rto_us=5000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt req;
    const struct ct_rx *rx;
    uint8_t d[64];
    uint32_t s = c->snd_nxt;
    uint64_t end;

    ct_pattern(d, sizeof(d), 45);
    c->auto_ack = 0;
    ch_post_read(t, c, &mr, 5, sizeof(d), &req);
    ch_send_read_resp(c, &req, s, d, sizeof(d), 0, 0);
    ct_expect_ack(c, s + 1, RL_WAIT);
    ct_expect_wc(t, c->aqp, "send", 5, "SUCCESS", RL_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
    /* The first probe would have come 25 ms after the READ_REQ. */
    end = ct_now_ns() + (uint64_t)ct_ms(t, 120) * 1000000u;
    while (ct_now_ns() < end) {
        rx = ct_rl_next(c, 10);
        if (rx && rx->p.base.opcode != MROCE_OP_ACK)
            ct_fail(t, "after the READ completed the IUT sent %s",
                    ct_describe(t, rx));
    }
}

CT_CASE(ops_atomic_waits_for_earlier_write, "SEM-26 SEM-12 REL-20",
        "FETCH_ADD at PSN p+1 sent before the WRITE at p that sets its "
        "target: SACKed but not executed (no ATOMIC_RESP) until p arrives; "
        "then the original value is the WRITE's")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,rw,ra", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt w, a;
    const struct ct_rx *rx;
    uint8_t v[8];
    uint64_t o;

    memset(v, 0x11, sizeof(v)); /* same value in either byte order */
    ct_pkt_req(c, &w, MROCE_OP_WRITE);
    w.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
    w.u.rq.req.raddr = mr.addr + 24;
    w.u.rq.req.rkey = mr.rkey;
    w.u.rq.req.msg_len = 8;
    w.payload = v;
    w.payload_len = 8;
    ct_consume(c, &w);
    ct_pkt_atomic(c, &a, MROCE_OP_FETCH_ADD, &mr, 24, 1, 0);
    ct_consume(c, &a);
    ct_send(c, &a);
    rx = ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
    CT_EQ(t, "ACK Cum PSN (the WRITE's PSN is missing)", w.base.psn,
          rx->p.u.ack.cum_psn);
    CT_REQUIRE(t, ct_ack_covers(&rx->p, a.base.psn),
               "the ACK does not SACK the accepted FETCH_ADD (SEM-26: "
               "accepted on arrival)");
    ct_expect_no_op(c, MROCE_OP_ATOMIC_RESP, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 24, 8, 0);
    ct_send(c, &w);
    rx = ct_expect_op(c, MROCE_OP_ATOMIC_RESP, 1, CT_WAIT);
    o = ct_get64(rx->p.payload, 1);
    CT_EQ(t, "original value (the WRITE's)", 0x1111111111111111ull, o);
    ch_expect_word(t, &mr, 24, 0x1111111111111112ull);
}

CT_CASE(ops_read_waits_for_earlier_write, "SEM-26 SEM-10 SEM-8",
        "READ_REQ at PSN p+1 sent before the WRITE at p of the bytes it "
        "reads: no READ_RESP until p arrives, then the WRITE's bytes")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw,rr", 0x66);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt w, r;
    const struct ct_rx *rx;
    uint8_t d[200];

    ct_pattern(d, sizeof(d), 22);
    ct_pkt_req(c, &w, MROCE_OP_WRITE);
    w.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
    w.u.rq.req.raddr = mr.addr + 1000;
    w.u.rq.req.rkey = mr.rkey;
    w.u.rq.req.msg_len = sizeof(d);
    w.payload = d;
    w.payload_len = sizeof(d);
    ct_consume(c, &w);
    ct_pkt_read(c, &r, &mr, 1000, sizeof(d));
    ct_consume(c, &r);
    ct_send(c, &r);
    ct_expect_no_op(c, MROCE_OP_READ_RESP, CT_QUIET);
    ct_send(c, &w);
    rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1, CT_WAIT);
    CT_EQ(t, "READ_RESP payload length", sizeof(d), rx->p.payload_len);
    CT_REQUIRE(t, memcmp(rx->p.payload, d, sizeof(d)) == 0,
               "READ_RESP does not carry the earlier WRITE's bytes");
}

CT_CASE(ops_recv_waits_for_earlier_write, "SEM-24 SEM-5",
        "SEND at PSN p+1 arrives before the WRITE at p: the receive does "
        "not complete until p arrives, then it does, with the WRITE placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt w, s;
    uint8_t d[64], e[32];

    ct_pattern(d, sizeof(d), 23);
    ct_pattern(e, sizeof(e), 24);
    ct_post_recv(t, c->aqp, 5, &mr, 2048, 1024);
    ct_pkt_req(c, &w, MROCE_OP_WRITE);
    w.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
    w.u.rq.req.raddr = mr.addr;
    w.u.rq.req.rkey = mr.rkey;
    w.u.rq.req.msg_len = sizeof(d);
    w.payload = d;
    w.payload_len = sizeof(d);
    ct_consume(c, &w);
    ct_pkt_req(c, &s, MROCE_OP_SEND);
    s.u.rq.req.msg_len = sizeof(e);
    s.payload = e;
    s.payload_len = sizeof(e);
    ct_consume(c, &s);
    ct_send(c, &s);
    ct_expect_no_wc(t, c->aqp, "recv", CT_QUIET);
    ct_send(c, &w);
    ct_expect_ack(c, s.base.psn + 1, CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 5, "SUCCESS", CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
    ct_expect_mem(t, &mr, 2048, e, sizeof(e));
}

CT_CASE(ops_failed_receive_completes_in_order, "SEM-24 SEM-20 SEM-23",
        "receive 0 gets half of a 2-packet SEND, receive 1 a SEND too long "
        "for it (NAK INVALID_REQUEST): no completion until receive 0's "
        "second packet arrives; then receive 0 SUCCESS, receive 1 "
        "LOC_LEN_ERR, in that order")
{
    static uint8_t d[2048];
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw", 0);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    struct mrw_pkt a0, a1, b;
    struct ct_wc wc;

    ct_pattern(d, sizeof(d), 93);
    ct_post_recv(t, c->aqp, 10, &mr, 0, 4096);
    ct_post_recv(t, c->aqp, 11, &mr, 4096, 100);
    ct_pkt_req(c, &a0, MROCE_OP_SEND);
    a0.base.flags = MROCE_F_FIRST;
    a0.u.rq.req.msg_len = 2048;
    a0.payload = d;
    a0.payload_len = 1024;
    a1 = a0;
    a1.base.psn++;
    a1.base.flags = MROCE_F_LAST | MROCE_F_ACK_REQ;
    a1.u.rq.req.offset = 1024;
    a1.payload = d + 1024;
    ct_consume(c, &a1);
    ct_pkt_req(c, &b, MROCE_OP_SEND);
    b.u.rq.req.msg_len = 200;
    b.payload = d;
    b.payload_len = 200;
    ct_consume(c, &b);
    ct_send(c, &a0);
    ct_send(c, &b);
    ct_expect_nak(c, b.base.psn, MROCE_NAK_INVALID_REQUEST, CT_WAIT);
    ct_expect_no_wc(t, c->aqp, "recv", CT_QUIET);
    ct_send(c, &a1);
    wc = ct_expect_wc(t, c->aqp, "recv", 10, "SUCCESS", CT_WAIT);
    CT_EQ(t, "receive 0 len", 2048, wc.len);
    wc = ct_expect_wc(t, c->aqp, "recv", 11, "LOC_LEN_ERR", CT_WAIT);
    CT_EQ(t, "failed receive len", 0, wc.len);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, 4096, 100, 0);
}

CT_CASE(ops_atomics_executed_in_psn_order, "SEM-26 SEM-12",
        "WRITE (word := 0) at p, CMP_SWAP (0 -> 100) at p+1, FETCH_ADD +1 at "
        "p+2, sent p+2, p+1, p: executed in PSN order, so CMP_SWAP returns "
        "0, FETCH_ADD returns 100, the word is 101")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,rw,ra", 0x33);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt w, cs, fa;
    uint8_t z[8] = {0};
    int got = 0;

    ct_pkt_req(c, &w, MROCE_OP_WRITE);
    w.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
    w.u.rq.req.raddr = mr.addr + 32;
    w.u.rq.req.rkey = mr.rkey;
    w.u.rq.req.msg_len = 8;
    w.payload = z;
    w.payload_len = 8;
    ct_consume(c, &w);
    ct_pkt_atomic(c, &cs, MROCE_OP_CMP_SWAP, &mr, 32, 100, 0);
    ct_consume(c, &cs);
    ct_pkt_atomic(c, &fa, MROCE_OP_FETCH_ADD, &mr, 32, 1, 0);
    ct_consume(c, &fa);
    ct_send(c, &fa);
    ct_send(c, &cs);
    ct_expect_no_op(c, MROCE_OP_ATOMIC_RESP, 30);
    ct_send(c, &w);
    while (got != 3) {
        const struct ct_rx *rx = ct_expect_op(c, MROCE_OP_ATOMIC_RESP, 1,
                                              CT_WAIT);
        uint32_t m = rx->p.u.resp.req_msn;
        uint64_t o = ct_get64(rx->p.payload, 1);
        if (m == cs.u.rq.req.msn) {
            CT_EQ(t,
                  "CMP_SWAP original (after the WRITE, before the "
                  "FETCH_ADD)",
                  0, o);
            got |= 1;
        } else if (m == fa.u.rq.req.msn) {
            CT_EQ(t, "FETCH_ADD original (after the CMP_SWAP)", 100, o);
            got |= 2;
        } else {
            ct_fail(t, "ATOMIC_RESP for MSN %u", m);
        }
    }
    ch_expect_word(t, &mr, 32, 101);
}

CT_CASE(ops_region_held_by_pending_read, "SEM-26 SEM-17",
        "a READ_REQ accepted but waiting for an earlier PSN holds its "
        "region: MR_DEREG of it is refused; after the gap fills the READ is "
        "answered with the region's bytes")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw,rr", 0x5a);
    struct ct_mr other = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt w, r;
    const struct ct_rx *rx;
    const char *rep;
    uint8_t d[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    uint8_t want[64];

    ct_pkt_req(c, &w, MROCE_OP_WRITE);
    w.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
    w.u.rq.req.raddr = other.addr;
    w.u.rq.req.rkey = other.rkey;
    w.u.rq.req.msg_len = 8;
    w.payload = d;
    w.payload_len = 8;
    ct_consume(c, &w);
    ct_pkt_read(c, &r, &mr, 0, 64);
    ct_consume(c, &r);
    ct_send(c, &r);
    rx = ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
    CT_REQUIRE(t, ct_ack_covers(&rx->p, r.base.psn),
               "the READ_REQ behind a gap was not accepted (SACKed)");
    rep = ct_agent_try(t, "MR_DEREG mr=%d", mr.id);
    CT_REQUIRE(t, strncmp(rep, "ERR", 3) == 0,
               "MR_DEREG of a region an accepted READ still needs "
               "succeeded (SEM-26: it stays referenced)");
    ct_send(c, &w);
    rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1, CT_WAIT);
    memset(want, 0x5a, sizeof(want));
    CT_REQUIRE(t,
               rx->p.payload_len == 64 && memcmp(rx->p.payload, want, 64) == 0,
               "READ_RESP does not carry the region's bytes");
}

CT_CASE(ops_placed_receive_flushed_on_error, "SEM-24 CONN-20",
        "a SEND placed into receive 0 but waiting for the earlier PSN (a "
        "WRITE never sent), then QP_ERROR: the receive completes "
        "WR_FLUSH_ERR, not SUCCESS")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt s;
    uint8_t d[32];

    ct_pattern(d, sizeof(d), 95);
    ct_post_recv(t, c->aqp, 1, &mr, 0, 1024);
    c->snd_nxt++; /* the missing PSN */
    c->msn++;
    ct_pkt_req(c, &s, MROCE_OP_SEND);
    s.u.rq.req.msg_len = sizeof(d);
    s.payload = d;
    s.payload_len = sizeof(d);
    ct_consume(c, &s);
    ct_send(c, &s);
    ct_expect_ack(c, s.base.psn - 1, CT_WAIT);
    ct_expect_no_wc(t, c->aqp, "recv", 20);
    ct_agent(t, "QP_ERROR qp=%d", c->aqp);
    ct_expect_wc(t, c->aqp, "recv", 1, "WR_FLUSH_ERR", CT_WAIT);
}

/* IUT posts three 64-byte WRITEs; the tester ACKs the first, NAKs the
 * second with code: completions SUCCESS, status, WR_FLUSH_ERR; the QP in
 * ERROR, silent, refusing posts. */
static void iut_nak(struct ct *t, uint8_t code, const char *status)
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_mr rm = ct_mr_reg(t, 4096, "lw,rw", 0x6b);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt q[3], ack;
    const char *r;
    uint32_t hi = 0;
    int any = 0;
    uint8_t d[16];

    c->auto_ack = 0;
    for (int i = 1; i <= 3; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=64 "
                 "raddr=0x1000 rkey=0x99",
                 c->aqp, i, mr.id);
    for (int i = 0; i < 3; i++)
        q[i] = ch_next_new_data(c, &hi, &any)->p;
    ct_pkt_ctl(c, &ack, MROCE_OP_ACK);
    ack.u.ack.cum_psn = q[0].base.psn + 1;
    ack.u.ack.echo_psn = q[0].base.psn;
    ack.u.ack.echo_ts = q[0].base.tsval;
    ack.u.ack.echo_entropy = q[0].base.entropy;
    ack.base.entropy = q[0].base.entropy;
    ack.u.ack.rx_count = 1;
    ack.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    ct_send(c, &ack);
    ct_send_nak(c, q[1].base.psn, q[1].u.rq.req.msn, code, 0,
                q[0].base.psn + 1);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, status, CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 3, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", CT_WAIT);
    /* CONN-21: silent from now on, whatever it receives. */
    while (ct_recv(t, 0))
        ;
    ct_pattern(d, sizeof(d), 44);
    ct_send_write(c, &rm, 0, d, sizeof(d), 0);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &rm, 0, 64, 0x6b);
    r = ct_agent_try(t,
                     "POST_SEND qp=%d wrid=4 op=WRITE mr=%d off=0 len=8 "
                     "raddr=0x1000 rkey=0x99",
                     c->aqp, mr.id);
    CT_REQUIRE(t, strncmp(r, "ERR ESTATE", 10) == 0,
               "POST_SEND on a QP in ERROR: expected ERR ESTATE, got \"%s\"",
               r);
}

CT_CASE(ops_iut_nak_invalid_request, "SEM-25 REL-31 SEM-23 CONN-20 CONN-21",
        "IUT's second of three WRITEs NAKed INVALID_REQUEST (first ACKed): "
        "SUCCESS, REM_INV_REQ_ERR, WR_FLUSH_ERR; QP in ERROR and silent")
{
    iut_nak(t, MROCE_NAK_INVALID_REQUEST, "REM_INV_REQ_ERR");
}

CT_CASE(ops_iut_nak_access_key, "SEM-25 REL-31 SEM-23 CONN-20",
        "second WRITE NAKed REMOTE_ACCESS_KEY: SUCCESS, REM_ACCESS_ERR, "
        "WR_FLUSH_ERR; QP in ERROR")
{
    iut_nak(t, MROCE_NAK_REMOTE_ACCESS_KEY, "REM_ACCESS_ERR");
}

CT_CASE(ops_iut_nak_access_bounds, "SEM-25 REL-31 SEM-23 CONN-20",
        "second WRITE NAKed REMOTE_ACCESS_BOUNDS: SUCCESS, REM_ACCESS_ERR, "
        "WR_FLUSH_ERR; QP in ERROR")
{
    iut_nak(t, MROCE_NAK_REMOTE_ACCESS_BOUNDS, "REM_ACCESS_ERR");
}

CT_CASE(ops_iut_nak_access_perm, "SEM-25 REL-31 SEM-23 CONN-20",
        "second WRITE NAKed REMOTE_ACCESS_PERM: SUCCESS, REM_ACCESS_ERR, "
        "WR_FLUSH_ERR; QP in ERROR")
{
    iut_nak(t, MROCE_NAK_REMOTE_ACCESS_PERM, "REM_ACCESS_ERR");
}

CT_CASE(ops_iut_nak_remote_op_error, "SEM-25 REL-31 SEM-21 CONN-20",
        "second WRITE NAKed REMOTE_OP_ERROR: SUCCESS, REM_OP_ERR, "
        "WR_FLUSH_ERR; QP in ERROR")
{
    iut_nak(t, MROCE_NAK_REMOTE_OP_ERROR, "REM_OP_ERR");
}

CT_CASE(ops_iut_nak_invalid_opcode, "SEM-25 REL-31 SEM-23 CONN-20",
        "second WRITE NAKed INVALID_OPCODE: SUCCESS, REM_INV_REQ_ERR, "
        "WR_FLUSH_ERR; QP in ERROR")
{
    iut_nak(t, MROCE_NAK_INVALID_OPCODE, "REM_INV_REQ_ERR");
}

CT_CASE(ops_iut_completion_order, "SEM-23 SEM-22 REL-25",
        "IUT posts two WRITEs; the tester SACKs only the second: no "
        "completion; then it ACKs both: completions in posting order")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt q[2], ack;
    uint32_t hi = 0;
    int any = 0;

    c->auto_ack = 0;
    for (int i = 1; i <= 2; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=32 "
                 "raddr=0x100 rkey=1",
                 c->aqp, i, mr.id);
    q[0] = ch_next_new_data(c, &hi, &any)->p;
    q[1] = ch_next_new_data(c, &hi, &any)->p;
    ct_pkt_ctl(c, &ack, MROCE_OP_ACK);
    ack.u.ack.cum_psn = q[0].base.psn;
    ack.u.ack.sack_words = 1;
    ack.u.ack.sack[0] = 1; /* q[0].psn + 1 */
    ack.u.ack.echo_psn = q[1].base.psn;
    ack.u.ack.echo_ts = q[1].base.tsval;
    ack.u.ack.echo_entropy = q[1].base.entropy;
    ack.base.entropy = q[1].base.entropy;
    ack.u.ack.rx_count = 1;
    ack.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    ct_send(c, &ack);
    ct_expect_no_wc(t, c->aqp, "send", CT_QUIET);
    ct_send_ack(c, NULL);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", CT_WAIT);
}

CT_CASE(ops_iut_unsignaled_success_silent, "SEM-22",
        "IUT posts an unsignaled WRITE then a signaled one, both ACKed: only "
        "the signaled one completes")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "");

    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=16 "
             "raddr=0x100 rkey=1 signaled=0",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=16 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_expect_data(c, CT_WAIT);
    ct_expect_data(c, CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", CT_WAIT);
    ct_expect_no_wc(t, c->aqp, "send", 20);
}

CT_CASE(ops_iut_unsignaled_error_reported, "SEM-22 SEM-23 SEM-25",
        "IUT's unsignaled WRITE NAKed REMOTE_ACCESS_PERM: its error "
        "completion is reported anyway, the signaled WRITE behind it is "
        "flushed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    const struct ct_rx *rx;

    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=16 "
             "raddr=0x100 rkey=1 signaled=0",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=16 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    ct_send_nak(c, rx->p.base.psn, rx->p.u.rq.req.msn,
                MROCE_NAK_REMOTE_ACCESS_PERM, 0, rx->p.base.psn);
    ct_expect_wc(t, c->aqp, "send", 1, "REM_ACCESS_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "WR_FLUSH_ERR", CT_WAIT);
}

CT_CASE(ops_iut_unfinished_earlier_flushed, "SEM-23 REL-28 CONN-20",
        "IUT's three WRITEs, none ACKed; the second NAKed REMOTE_ACCESS_KEY "
        "with Cum PSN at the first: completions WR_FLUSH_ERR (the "
        "unfinished first), REM_ACCESS_ERR, WR_FLUSH_ERR in that order")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt q[3];
    uint32_t hi = 0;
    int any = 0;

    c->auto_ack = 0;
    for (int i = 1; i <= 3; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=64 "
                 "raddr=0x1000 rkey=0x99",
                 c->aqp, i, mr.id);
    for (int i = 0; i < 3; i++)
        q[i] = ch_next_new_data(c, &hi, &any)->p;
    ct_send_nak(c, q[1].base.psn, q[1].u.rq.req.msn,
                MROCE_NAK_REMOTE_ACCESS_KEY, 0, q[0].base.psn);
    ct_expect_wc(t, c->aqp, "send", 1, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "REM_ACCESS_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 3, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", 0);
}

CT_CASE(ops_iut_retry_exceeded, "SEM-25 LOSS-14 CONN-20 SEM-23",
        "retry=2, min_rto 1 ms, the tester never answers: the IUT's WRITE "
        "completes RETRY_EXC_ERR, the SEND behind it WR_FLUSH_ERR, QP in "
        "ERROR and silent")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "retry=2 min_rto_us=1000 "
                                     "peer_timeout_ms=0");

    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=32 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_agent(t, "POST_SEND qp=%d wrid=2 op=SEND mr=%d off=0 len=32", c->aqp,
             mr.id);
    ct_expect_wc(t, c->aqp, "send", 1, "RETRY_EXC_ERR", 1000);
    ct_expect_wc(t, c->aqp, "send", 2, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", 0);
    while (ct_recv(t, 0))
        ;
    ct_expect_silence(t, CT_QUIET);
}
