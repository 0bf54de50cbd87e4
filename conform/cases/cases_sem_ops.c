/*
 * cases_sem_ops.c - semantics.md section 2, the operations other than
 * atomics (those are in cases_sem_atomics.c): SEND and WRITE placement,
 * immediates, READ requests and responses, re-reading memory for a
 * retransmitted response (SEM-10), response slots and the peer's Max RD
 * Atomic (SEM-11), responses the requester must drop (SEM-9), FENCE
 * (SEM-14) and SOLICITED (SEM-15, through POST_SEND solicited=1).
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

CT_CASE(loss_read_responder_resends_response,
        "SEM-10 REL-8 LOSS-6 LOSS-15 SEM-26",
        "IUT serves our READ of 2000 bytes (2 READ_RESP); our READ_REQ again: "
        "DUP ACK, no new response; memory changed, we SACK only the 2nd "
        "response packet: the 1st is resent, same PSN, with the new bytes")
{
    struct ct_conn *c = ct_accept(t, "mtu=1024 min_rto_us=20000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0);
    struct ct_rl_pkt rs[2], r;
    struct mrw_pkt q;
    const struct ct_rx *rx;
    uint8_t d[2000], e[2000];
    uint32_t sack = 1;
    int got = 0;

    ct_pattern(d, sizeof(d), 47);
    ct_pattern(e, sizeof(e), 48);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    c->auto_ack = 0;
    ct_pkt_req(c, &q, MROCE_OP_READ_REQ);
    q.u.rq.req.raddr = mr.addr;
    q.u.rq.req.rkey = mr.rkey;
    q.u.rq.req.msg_len = sizeof(d);
    ct_send(c, &q);
    c->snd_nxt++;
    c->msn++;
    /* The ACK of the READ_REQ and two READ_RESP packets, in any order. */
    while (got < 2) {
        rx = ct_rl_next(c, RL_WAIT);
        if (!rx)
            ct_fail(t, "expected READ_RESP packets, got nothing");
        if (rx->p.base.opcode == MROCE_OP_ACK)
            continue;
        CT_REQUIRE(t, rx->p.base.opcode == MROCE_OP_READ_RESP,
                   "expected READ_RESP, got %s", ct_describe(t, rx));
        CT_EQ(t, "READ_RESP PSN", c->astart + (uint32_t)got, rx->p.base.psn);
        ct_rl_save(rx, &rs[got]);
        got++;
    }
    CT_REQUIRE(t, memcmp(rs[0].pay, d, 1024) == 0,
               "READ_RESP 0 carries other bytes than the region's");
    /* The READ_REQ again: a duplicate, executed nothing. */
    q.base.flags |= MROCE_F_RETX;
    q.base.tsval += 1000;
    ct_send(c, &q);
    rx = ch_ack_of(c, q.base.psn, q.base.tsval);
    CT_EQ(t, "ACK of the repeated READ_REQ: Echo Flags (DUP)", MROCE_ECHO_DUP,
          rx->p.u.ack.echo_flags);
    ct_expect_silence(t, 20);
    /* SEM-10: a resent READ_RESP reads memory again. */
    ct_mr_write(t, &mr, 0, e, sizeof(e));
    ct_rl_send_ack(c, c->astart, &sack, 1, &rs[1].p, 0);
    ct_rl_expect_data(c, 0, RL_WAIT, &r);
    CT_EQ(t, "resent PSN", c->astart, r.p.base.psn);
    CT_EQ(t, "resent opcode", MROCE_OP_READ_RESP, r.p.base.opcode);
    CT_REQUIRE(t, r.p.base.flags & MROCE_F_RETX, "resent READ_RESP lacks RETX");
    CT_EQ(t, "resent Offset", 0, r.p.u.resp.offset);
    CT_EQ(t, "resent payload length", 1024, r.p.payload_len);
    CT_REQUIRE(t, memcmp(r.pay, e, 1024) == 0,
               "the resent READ_RESP carries the old bytes: it must read "
               "memory again when it retransmits (SEM-10)");
    ct_rl_send_ack(c, c->astart + 2, NULL, 0, &r.p, 0);
    ct_expect_silence(t, CT_QUIET);
}

/* Collects the IUT's data packets of one message (up to its LAST flag)
 * and requires SOLICITED on every one (want 1) or on none (want 0).
 * Returns the number of packets. */
static int solicited_msg(struct ct_conn *c, int want, const char *what)
{
    struct ct *t = c->t;
    int n = 0;

    for (;;) {
        const struct ct_rx *rx = ct_expect_data(c, CT_WAIT);
        uint16_t fl = rx->p.base.flags;
        if (fl & MROCE_F_RETX)
            continue;
        n++;
        if (want)
            CT_REQUIRE(t, fl & MROCE_F_SOLICITED,
                       "%s posted solicited=1: packet %d without the "
                       "SOLICITED flag (SEM-15): %s",
                       what, n, ct_describe(t, rx));
        else
            CT_REQUIRE(t, !(fl & MROCE_F_SOLICITED),
                       "%s posted without solicited: packet %d carries the "
                       "SOLICITED flag (no solicited event was asked for): "
                       "%s",
                       what, n, ct_describe(t, rx));
        if (fl & MROCE_F_LAST)
            return n;
    }
}

CT_CASE(more_solicited_flag_on_wire, "SEM-15",
        "IUT as requester (MTU 1024): SEND_IMM and WRITE_IMM of 2500 bytes "
        "posted with solicited=1 carry SOLICITED on each of their 3 "
        "packets; a SEND of 2500 bytes posted without it carries it on "
        "none; all three complete SUCCESS")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x21);
    struct ct_conn *c = ct_conn_new(t, "mtu=1024");

    c->par.mtu = 1024;
    ct_conn_accept(c);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=SEND_IMM mr=%d off=0 len=2500 "
             "imm=0x1234 solicited=1",
             c->aqp, mr.id);
    CT_EQ(t, "packets of the SEND_IMM", 3, solicited_msg(c, 1, "SEND_IMM"));
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE_IMM mr=%d off=0 len=2500 "
             "raddr=0x10000 rkey=0x77 imm=5 solicited=1",
             c->aqp, mr.id);
    CT_EQ(t, "packets of the WRITE_IMM", 3, solicited_msg(c, 1, "WRITE_IMM"));
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", CT_WAIT);
    ct_agent(t, "POST_SEND qp=%d wrid=3 op=SEND mr=%d off=0 len=2500", c->aqp,
             mr.id);
    CT_EQ(t, "packets of the SEND", 3, solicited_msg(c, 0, "SEND"));
    ct_expect_wc(t, c->aqp, "send", 3, "SUCCESS", CT_WAIT);
}

CT_CASE(more_solicited_recv_no_other_effect, "SEM-15 SEM-6 SEM-24",
        "IUT as responder: a 3-packet SEND with IMM and a WRITE with IMM, "
        "every packet flagged SOLICITED, are acknowledged, placed and "
        "completed exactly as without the flag (RECV_IMM with len and imm, "
        "WRITE bytes in the region)")
{
    static uint8_t d[2500], w[300];
    struct ct_mr rb = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_mr wr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_conn_new(t, "mtu=1024");
    struct ct_wc wc;
    uint32_t psn;

    c->par.mtu = 1024;
    ct_conn_connect(c);
    ct_post_recv(t, c->aqp, 11, &rb, 0, 4096);
    ct_post_recv(t, c->aqp, 12, &rb, 0, 4096);
    ct_pattern(d, sizeof(d), 151);
    c->imm = 0xabcd0001;
    psn = ct_send_send(c, d, sizeof(d), MROCE_F_SOLICITED | MROCE_F_IMM);
    ct_expect_ack(c, psn + 3, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 11, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "RECV_IMM") == 0,
               "solicited SEND with IMM completed as %s, expected RECV_IMM",
               wc.op);
    CT_EQ(t, "completion len", sizeof(d), wc.len);
    CT_REQUIRE(t, wc.has_imm, "RECV_IMM completion without imm");
    CT_EQ(t, "completion imm", 0xabcd0001u, wc.imm);
    ct_expect_mem(t, &rb, 0, d, sizeof(d));

    ct_pattern(w, sizeof(w), 152);
    c->imm = 0xabcd0002;
    psn = ct_send_write(c, &wr, 100, w, sizeof(w),
                        MROCE_F_SOLICITED | MROCE_F_IMM);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 12, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "RECV_IMM") == 0,
               "solicited WRITE with IMM completed as %s, expected RECV_IMM",
               wc.op);
    CT_EQ(t, "completion imm", 0xabcd0002u, wc.imm);
    ct_expect_mem(t, &wr, 100, w, sizeof(w));
    ct_expect_mem_fill(t, &wr, 0, 100, 0);
    ct_expect_no_wc(t, c->aqp, "recv", CT_QUIET);
}

CT_CASE(ops_send_multi_packet_reordered, "SEM-5 SEM-24 SEM-3",
        "SEND of 2500 bytes at MTU 1024 sent last packet first, then first, "
        "then middle: no completion before the last arrives, then RECV len "
        "2500 with every byte in place")
{
    static uint8_t d[2500];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    struct mrw_pkt p[3];
    struct ct_wc wc;
    static const int order[3] = {2, 0, 1};

    ct_pattern(d, sizeof(d), 25);
    ct_post_recv(t, c->aqp, 3, &mr, 0, 4096);
    for (int i = 0; i < 3; i++) {
        uint32_t o = (uint32_t)i * 1024;
        ct_pkt_req(c, &p[i], MROCE_OP_SEND);
        p[i].base.psn = c->snd_nxt + (uint32_t)i;
        p[i].base.flags = (i == 0 ? MROCE_F_FIRST : 0) |
                          (i == 2 ? MROCE_F_LAST | MROCE_F_ACK_REQ : 0);
        p[i].u.rq.req.msg_len = sizeof(d);
        p[i].u.rq.req.offset = o;
        p[i].payload = d + o;
        p[i].payload_len = i == 2 ? sizeof(d) - 2048 : 1024;
    }
    ct_consume(c, &p[2]);
    for (int k = 0; k < 3; k++) {
        if (k == 2)
            ct_expect_no_wc(t, c->aqp, "recv", 30);
        ct_send(c, &p[order[k]]);
    }
    ct_expect_ack(c, p[2].base.psn + 1, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 3, "SUCCESS", CT_WAIT);
    CT_EQ(t, "receive byte_len", sizeof(d), wc.len);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, sizeof(d), 4096 - sizeof(d), 0);
}

CT_CASE(ops_write_imm_consumes_receive, "SEM-7 SEM-2 SEM-6 SEM-24",
        "WRITE with IMM of 1500 bytes at MTU 1024 (2 packets): data at the "
        "Remote Address, the receive completes RECV_IMM len 1500 with the "
        "immediate, its own buffer untouched")
{
    static uint8_t d[1500];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_mr rb = ct_mr_reg(t, 4096, "lw", 0x77);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    struct ct_wc wc;
    uint32_t psn;

    ct_pattern(d, sizeof(d), 28);
    c->imm = 0x13572468;
    ct_post_recv(t, c->aqp, 6, &rb, 0, 4096);
    psn = ct_send_write(c, &mr, 300, d, sizeof(d), MROCE_F_IMM);
    ct_expect_ack(c, psn + 2, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 6, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "RECV_IMM") == 0,
               "receive op: expected RECV_IMM, got %s", wc.op);
    CT_EQ(t, "receive imm", 0x13572468, wc.imm);
    CT_EQ(t, "receive byte_len (Msg Len)", sizeof(d), wc.len);
    ct_expect_mem(t, &mr, 300, d, sizeof(d));
    ct_expect_mem_fill(t, &rb, 0, 4096, 0x77);
}

CT_CASE(ops_read_resp_reread_on_retransmission, "SEM-10 LOSS-15",
        "a READ_RESP we do not ACK, the region rewritten meanwhile: its "
        "retransmission carries the new bytes (read again, no copy kept)")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0x01);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[64];
    uint64_t end;

    c->auto_ack = 0;
    ct_pkt_read(c, &p, &mr, 0, 64);
    ct_send(c, &p);
    ct_consume(c, &p);
    rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1, CT_WAIT);
    CT_REQUIRE(t, rx->p.payload[0] == 0x01, "first READ_RESP: wrong bytes");
    ct_pattern(d, sizeof(d), 80);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    /* A retransmission generated before the rewrite may still carry the
     * old bytes (or, racing with it, a mix: SEM-10 allows that); one with
     * the new bytes must follow while the response stays unacknowledged. */
    end = ct_now_ns() + (uint64_t)ct_ms(t, 500) * 1000000u;
    for (;;) {
        rx = ct_next(c, 20);
        if (rx && rx->p.base.opcode == MROCE_OP_READ_RESP) {
            CT_EQ(t, "retransmitted READ_RESP PSN", c->astart, rx->p.base.psn);
            if (memcmp(rx->p.payload, d, sizeof(d)) == 0)
                break;
        }
        CT_REQUIRE(t, ct_now_ns() < end,
                   "no retransmission of the unacknowledged READ_RESP "
                   "carried the region's new bytes within 500 ms (SEM-10: "
                   "read again from memory)");
    }
    ct_send_ack(c, NULL);
}

CT_CASE(ops_iut_read_request_and_placement, "SEM-8 SEM-22 SEM-3",
        "IUT posts a READ of 2500 bytes: one READ_REQ (FIRST|LAST, Msg Len "
        "2500, Remote Address, RKey, no payload); three READ_RESPs sent "
        "last-first are placed at their offsets; READ completes SUCCESS len "
        "2500")
{
    static uint8_t d[2500];
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw", 0x5e);
    struct ct_conn *c;
    const struct ct_rx *rx;
    struct mrw_pkt q;
    struct ct_wc wc;
    uint32_t first;

    c = ct_conn_new(t, "");
    c->par.mtu = 1024;
    ct_conn_accept(c);
    ct_pattern(d, sizeof(d), 40);
    ct_agent(t,
             "POST_SEND qp=%d wrid=5 op=READ mr=%d off=100 len=2500 "
             "raddr=0x10000 rkey=0x1234",
             c->aqp, mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    q = rx->p;
    CT_EQ(t, "opcode", MROCE_OP_READ_REQ, q.base.opcode);
    CT_EQ(t, "READ_REQ PSN", c->astart, q.base.psn);
    CT_EQ(t, "READ_REQ FIRST|LAST", MROCE_F_FIRST | MROCE_F_LAST,
          q.base.flags & (MROCE_F_FIRST | MROCE_F_LAST));
    CT_EQ(t, "READ_REQ Msg Len", 2500, q.u.rq.req.msg_len);
    CT_EQ(t, "READ_REQ Remote Address", 0x10000, q.u.rq.req.raddr);
    CT_EQ(t, "READ_REQ RKey", 0x1234, q.u.rq.req.rkey);
    CT_EQ(t, "READ_REQ Offset", 0, q.u.rq.req.offset);
    CT_EQ(t, "READ_REQ payload", 0, q.payload_len);
    CT_EQ(t, "READ_REQ MSN", 0, q.u.rq.req.msn);
    first = c->snd_nxt;
    ch_send_resp(c, MROCE_OP_READ_RESP, 0, 2500, 2048, d + 2048, 452,
                 first + 2);
    ch_send_resp(c, MROCE_OP_READ_RESP, 0, 2500, 0, d, 1024, first);
    ct_expect_no_wc(t, c->aqp, "send", 20);
    ch_send_resp(c, MROCE_OP_READ_RESP, 0, 2500, 1024, d + 1024, 1024,
                 first + 1);
    c->snd_nxt = first + 3;
    wc = ct_expect_wc(t, c->aqp, "send", 5, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "READ") == 0, "op: expected READ, got %s",
               wc.op);
    CT_EQ(t, "READ byte_len", 2500, wc.len);
    ct_expect_mem(t, &mr, 100, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, 0, 100, 0x5e);
    ct_expect_mem_fill(t, &mr, 2600, 8192 - 2600, 0x5e);
    ct_expect_ack(c, first + 3, CT_WAIT);
}

CT_CASE(ops_iut_bad_responses_dropped, "SEM-9 SEC-3 SEC-2",
        "IUT's READ of 64 bytes answered first by a READ_RESP with a Req MSN "
        "it never sent, then one with Msg Len 65, then an ATOMIC_RESP: each "
        "dropped (no ACK covers it, no NAK, nothing placed, no completion); "
        "then the right READ_RESP at the same PSN completes it")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x71);
    struct ct_conn *c = ct_accept(t, "");
    uint8_t d[65], e[8];
    uint32_t psn;
    int64_t inv0, inv1;

    ct_pattern(d, sizeof(d), 41);
    memset(e, 0xab, sizeof(e));
    ct_agent(t,
             "POST_SEND qp=%d wrid=7 op=READ mr=%d off=0 len=64 "
             "raddr=0x2000 rkey=0x99",
             c->aqp, mr.id);
    ct_expect_data(c, CT_WAIT);
    inv0 = ct_counter(t, c->aqp, "drop_invalid");
    psn = c->snd_nxt;
    ch_send_resp(c, MROCE_OP_READ_RESP, 7, 64, 0, d, 64, psn);
    ch_send_resp(c, MROCE_OP_READ_RESP, 0, 65, 0, d, 65, psn);
    ch_send_resp(c, MROCE_OP_ATOMIC_RESP, 0, 8, 0, e, 8, psn);
    for (;;) {
        const struct ct_rx *rx = ct_next(c, ct_ms(t, CT_QUIET));
        if (!rx)
            break;
        CT_REQUIRE(t, rx->p.base.opcode != MROCE_OP_NAK,
                   "a response was NAKed: %s", ct_describe(t, rx));
        if (rx->p.base.opcode == MROCE_OP_ACK)
            CT_REQUIRE(t, !ct_ack_covers(&rx->p, psn),
                       "an invalid response was marked: %s",
                       ct_describe(t, rx));
    }
    ct_expect_no_wc(t, c->aqp, "send", 0);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x71);
    inv1 = ct_counter(t, c->aqp, "drop_invalid");
    if (inv0 >= 0)
        CT_EQ(t, "drop_invalid increments", inv0 + 3, inv1);
    ch_send_resp(c, MROCE_OP_READ_RESP, 0, 64, 0, d, 64, psn);
    c->snd_nxt = psn + 1;
    ct_expect_wc(t, c->aqp, "send", 7, "SUCCESS", CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, 64);
}

CT_CASE(ops_iut_fence_waits_for_read, "SEM-14",
        "IUT posts a READ, then a WRITE with FENCE: the WRITE is not "
        "transmitted while the READ is unanswered (its request ACKed); "
        "after the READ_RESP it is, and both complete")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "");
    const struct ct_rx *rx;
    uint8_t d[16];
    uint32_t rmsn;

    ct_pattern(d, sizeof(d), 45);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=READ mr=%d off=0 len=16 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=64 len=16 "
             "raddr=0x200 rkey=1 fence=1",
             c->aqp, mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    CT_EQ(t, "first packet", MROCE_OP_READ_REQ, rx->p.base.opcode);
    rmsn = rx->p.u.rq.req.msn;
    ct_expect_no_op(c, MROCE_OP_WRITE, CT_QUIET);
    ch_send_resp(c, MROCE_OP_READ_RESP, rmsn, 16, 0, d, 16, c->snd_nxt);
    c->snd_nxt++;
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    for (;;) {
        rx = ct_expect_data(c, CT_WAIT);
        if (rx->p.base.opcode == MROCE_OP_WRITE)
            break;
    }
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", CT_WAIT);
}

CT_CASE(ops_iut_rd_atomic_limit, "SEM-11 CONN-12",
        "the tester advertises Max RD Atomic 2: of three READs the IUT has "
        "at most one outstanding (floor(2 / 2)); each next READ_REQ comes "
        "only after the previous READ is answered")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "");
    uint8_t d[8] = {0};

    c->par.max_rd_atomic = 2;
    ct_conn_accept(c);
    for (int i = 0; i < 3; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=READ mr=%d off=%d len=8 "
                 "raddr=0x100 rkey=1",
                 c->aqp, i, mr.id, i * 8);
    for (int i = 0; i < 3; i++) {
        const struct ct_rx *rx = ct_expect_data(c, CT_WAIT);
        uint32_t msn;
        while (rx->p.base.flags & MROCE_F_RETX)
            rx = ct_expect_data(c, CT_WAIT);
        CT_EQ(t, "opcode", MROCE_OP_READ_REQ, rx->p.base.opcode);
        msn = rx->p.u.rq.req.msn;
        CT_EQ(t, "READ_REQ MSN", i, msn);
        {
            /* Retransmissions (probes) of this READ_REQ may come; the
             * next READ's may not. */
            uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, 50) * 1000000u;
            while (ct_now_ns() < end) {
                rx = ct_next(c, 5);
                if (rx && rx->p.base.opcode == MROCE_OP_READ_REQ)
                    CT_REQUIRE(t, rx->p.u.rq.req.msn == msn,
                               "READ %u sent while READ %u is outstanding "
                               "(peer Max RD Atomic 2 allows one)",
                               rx->p.u.rq.req.msn, msn);
            }
        }
        ch_send_resp(c, MROCE_OP_READ_RESP, msn, 8, 0, d, 8, c->snd_nxt);
        c->snd_nxt++;
        ct_expect_wc(t, c->aqp, "send", (uint64_t)i, "SUCCESS", CT_WAIT);
    }
}

CT_CASE(sec_response_slots_bounded, "SEM-11 SEC-7 SEM-26",
        "QP with max_rd_atomic 1 advertises Max RD Atomic 2; three READ_REQs "
        "whose responses we do not ACK: two answered, the third dropped "
        "unmarked and un-NAKed; after we ACK the responses its resend is "
        "answered")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0);
    struct ct_conn *c = ct_connect(t, "max_rd_atomic=1 min_rto_us=100000");
    struct mrw_pkt r[3];
    const struct ct_rx *rx;
    uint64_t end;
    int resp[3] = {0, 0, 0};
    uint8_t d[3 * 64];

    CT_EQ(t, "CONNECT_RESP Max RD Atomic (2 * max_rd_atomic)", 2,
          c->apar.max_rd_atomic);
    ct_pattern(d, sizeof(d), 64);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    c->auto_ack = 0;
    for (int i = 0; i < 3; i++) {
        ct_pkt_read(c, &r[i], &mr, (uint32_t)i * 64, 64);
        ct_consume(c, &r[i]);
        ct_send(c, &r[i]);
    }
    end = ct_now_ns() + (uint64_t)ct_ms(t, CT_QUIET + 50) * 1000000u;
    while ((rx = ct_next(c, 10)) != NULL || ct_now_ns() < end) {
        if (!rx)
            continue;
        CT_REQUIRE(t, rx->p.base.opcode != MROCE_OP_NAK,
                   "a READ_REQ beyond the slots was NAKed: %s",
                   ct_describe(t, rx));
        if (rx->p.base.opcode == MROCE_OP_ACK)
            CT_REQUIRE(t, !ct_ack_covers(&rx->p, r[2].base.psn),
                       "the READ_REQ without a free slot was marked: %s",
                       ct_describe(t, rx));
        if (rx->p.base.opcode == MROCE_OP_READ_RESP) {
            uint32_t m = rx->p.u.resp.req_msn - r[0].u.rq.req.msn;
            CT_REQUIRE(t, m < 2, "READ_REQ %u answered with only 2 slots", m);
            resp[m]++;
        }
        if (ct_now_ns() >= end)
            break;
    }
    CT_REQUIRE(t, resp[0] && resp[1],
               "the first two READs were not both "
               "answered (%d, %d)",
               resp[0], resp[1]);
    c->auto_ack = 1;
    ct_send_ack(c, NULL);
    ct_recv(t, 5);
    r[2].base.flags |= MROCE_F_RETX;
    ct_send(c, &r[2]);
    for (;;) {
        rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1, CT_WAIT);
        if (rx->p.u.resp.req_msn == r[2].u.rq.req.msn)
            break;
    }
    CT_REQUIRE(t, memcmp(rx->p.payload, d + 128, 64) == 0,
               "the third READ's response carries the wrong bytes");
}

CT_CASE(sem_write_placed_and_acked, "SEM-6 REL-10 REL-20",
        "one-packet WRITE of 100 bytes at offset 64 with ACK_REQ: ACK cum = "
        "PSN+1 at once, bytes placed, neighbours untouched")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0xee);
    struct ct_conn *c = ct_connect(t, "");
    const struct ct_rx *rx;
    uint8_t d[100];
    uint32_t psn;

    ct_pattern(d, sizeof(d), 1);
    psn = ct_send_write(c, &mr, 64, d, sizeof(d), 0);
    rx = ct_expect_ack(c, psn + 1, CT_WAIT);
    CT_EQ(t, "ACK Echo PSN", psn, rx->p.u.ack.echo_psn);
    CT_EQ(t, "ACK RX Count", 1, rx->p.u.ack.rx_count);
    ct_expect_mem(t, &mr, 64, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, 0, 64, 0xee);
    ct_expect_mem_fill(t, &mr, 164, 4096 - 164, 0xee);
}

CT_CASE(sem_send_placed_and_completed, "SEM-5 SEM-2 SEM-24",
        "SEND of 200 bytes into a posted 1024-byte receive: ACK, receive "
        "completes SUCCESS op RECV len 200, bytes at the receive's offset")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_wc wc;
    uint8_t d[200];
    uint32_t psn;

    ct_post_recv(t, c->aqp, 42, &mr, 512, 1024);
    ct_pattern(d, sizeof(d), 4);
    psn = ct_send_send(c, d, sizeof(d), 0);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 42, "SUCCESS", CT_WAIT);
    CT_EQ(t, "receive byte_len", sizeof(d), wc.len);
    CT_REQUIRE(t, strcmp(wc.op, "RECV") == 0,
               "receive op: expected RECV, "
               "got %s",
               wc.op);
    ct_expect_mem(t, &mr, 512, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, 512 + sizeof(d), 100, 0);
}

CT_CASE(sem_send_with_imm, "SEM-7 SEM-24",
        "SEND with IMM 0x600dcafe of 10 bytes: receive completes RECV_IMM "
        "with imm 0x600dcafe and len 10")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_wc wc;
    uint8_t d[10];
    uint32_t psn;

    ct_post_recv(t, c->aqp, 7, &mr, 0, 4096);
    ct_pattern(d, sizeof(d), 8);
    psn = ct_send_send(c, d, sizeof(d), MROCE_F_IMM);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 7, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "RECV_IMM") == 0,
               "receive op: expected RECV_IMM, got %s", wc.op);
    CT_REQUIRE(t, wc.has_imm, "receive completion carries no imm=");
    CT_EQ(t, "receive imm", 0x600dcafe, wc.imm);
    CT_EQ(t, "receive len", sizeof(d), wc.len);
}
