/*
 * cases_sem_messages.c - semantics.md section 1, messages and packets:
 * READ of 0, 1, MTU-1, MTU, MTU+1 and several MTUs with the IUT as
 * responder (response PSNs, offsets, lengths, flags, bytes), zero-length
 * SEND, WRITE and WRITE_IMM, multi-packet messages, and the MSNs, RSNs and
 * immediates the IUT sends as requester (SEM-1..SEM-4).
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

CT_CASE(ops_read_zero_length, "SEM-4 SEM-8",
        "READ_REQ with Msg Len 0: one READ_RESP, FIRST|LAST, Offset 0, Msg "
        "Len 0, no payload, Req MSN of the READ")
{
    ch_read_check(t, 1024, 4096, 64, 0);
}

CT_CASE(ops_read_one_byte, "SEM-3 SEM-8",
        "READ of 1 byte at offset 77: one READ_RESP with that byte")
{
    ch_read_check(t, 1024, 4096, 77, 1);
}

CT_CASE(ops_read_mtu_minus_one, "SEM-3 SEM-8",
        "READ of MTU-1 (1023) bytes: one READ_RESP FIRST|LAST of 1023 bytes")
{
    ch_read_check(t, 1024, 4096, 3, 1023);
}

CT_CASE(ops_read_exact_mtu, "SEM-3 SEM-8",
        "READ of exactly MTU (1024) bytes: one READ_RESP FIRST|LAST")
{
    ch_read_check(t, 1024, 4096, 0, 1024);
}

CT_CASE(ops_read_mtu_plus_one, "SEM-3 SEM-8 REL-1",
        "READ of MTU+1 (1025) bytes: two READ_RESPs (1024 then 1 byte at "
        "Offset 1024), consecutive PSNs")
{
    ch_read_check(t, 1024, 4096, 5, 1025);
}

CT_CASE(ops_read_multi_packet, "SEM-3 SEM-8 SEM-10 REL-1",
        "READ of 10000 bytes at MTU 4096: three READ_RESPs 4096+4096+1808 "
        "at consecutive PSNs with the region's bytes")
{
    ch_read_check(t, 4096, 4096, 100, 10000);
}

CT_CASE(ops_write_zero_length, "SEM-4 SEM-17",
        "WRITE with Msg Len 0 and no payload inside the region: ACKed, "
        "nothing placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x3c);
    struct ct_conn *c = ct_connect(t, "");
    uint32_t psn = ct_send_write(c, &mr, 100, NULL, 0, 0);

    ct_expect_ack(c, psn + 1, CT_WAIT);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x3c);
}

CT_CASE(ops_write_zero_length_bad_key, "SEM-4 SEM-17",
        "zero-length WRITE with an RKey naming no region: checked like any "
        "range, NAK REMOTE_ACCESS_KEY")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_mr bad = mr;
    uint32_t psn;

    bad.rkey ^= 0x00ff0000;
    psn = ct_send_write(c, &bad, 0, NULL, 0, 0);
    ct_expect_nak(c, psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
}

CT_CASE(ops_send_zero_length, "SEM-4 SEM-24",
        "SEND with Msg Len 0: the receive completes SUCCESS RECV with len 0, "
        "its buffer untouched")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x4d);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_wc wc;
    uint32_t psn;

    ct_post_recv(t, c->aqp, 8, &mr, 0, 256);
    psn = ct_send_send(c, NULL, 0, 0);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 8, "SUCCESS", CT_WAIT);
    CT_EQ(t, "receive byte_len", 0, wc.len);
    CT_REQUIRE(t, strcmp(wc.op, "RECV") == 0,
               "receive op: expected RECV, "
               "got %s",
               wc.op);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x4d);
}

CT_CASE(ops_write_imm_zero_length, "SEM-4 SEM-7",
        "WRITE with IMM and Msg Len 0: consumes a receive, which completes "
        "RECV_IMM with the immediate and len 0; nothing placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x4e);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_wc wc;
    uint32_t psn;

    c->imm = 0x0badf00d;
    ct_post_recv(t, c->aqp, 4, &mr, 0, 128);
    psn = ct_send_write(c, &mr, 512, NULL, 0, MROCE_F_IMM);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 4, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "RECV_IMM") == 0,
               "receive op: expected RECV_IMM, got %s", wc.op);
    CT_REQUIRE(t, wc.has_imm, "receive completion carries no imm=");
    CT_EQ(t, "receive imm", 0x0badf00d, wc.imm);
    CT_EQ(t, "receive byte_len", 0, wc.len);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x4e);
}

CT_CASE(ops_sends_bound_by_rsn_not_arrival, "SEM-2 SEM-5 SEM-24",
        "two SENDs, RSN 1 arriving before RSN 0: each lands in its own "
        "receive's buffer (receives consumed in posting order), "
        "completions in order 0 then 1")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt s0, s1;
    struct ct_wc wc;
    uint8_t a[40], b[70];

    ct_pattern(a, sizeof(a), 90);
    ct_pattern(b, sizeof(b), 91);
    ct_post_recv(t, c->aqp, 100, &mr, 0, 1024);
    ct_post_recv(t, c->aqp, 101, &mr, 4096, 1024);
    ct_pkt_req(c, &s0, MROCE_OP_SEND);
    s0.u.rq.req.msg_len = sizeof(a);
    s0.payload = a;
    s0.payload_len = sizeof(a);
    ct_consume(c, &s0);
    ct_pkt_req(c, &s1, MROCE_OP_SEND);
    s1.u.rq.req.msg_len = sizeof(b);
    s1.payload = b;
    s1.payload_len = sizeof(b);
    ct_consume(c, &s1);
    CT_EQ(t, "tester RSNs", 1, s1.u.rq.req.rsn);
    ct_send(c, &s1);
    ct_expect_no_wc(t, c->aqp, "recv", 30);
    ct_send(c, &s0);
    wc = ct_expect_wc(t, c->aqp, "recv", 100, "SUCCESS", CT_WAIT);
    CT_EQ(t, "receive 0 len", sizeof(a), wc.len);
    wc = ct_expect_wc(t, c->aqp, "recv", 101, "SUCCESS", CT_WAIT);
    CT_EQ(t, "receive 1 len", sizeof(b), wc.len);
    ct_expect_mem(t, &mr, 0, a, sizeof(a));
    ct_expect_mem(t, &mr, 4096, b, sizeof(b));
}

CT_CASE(ops_iut_msn_rsn_and_imm, "SEM-1 SEM-2 SEM-7 SEM-22 SEM-23",
        "IUT posts SEND, WRITE, SEND_IMM, READ, WRITE_IMM, FETCH_ADD: MSNs "
        "0..5, RSNs 0, 1, 2 on the three that consume a receive, IMM and "
        "Immediate on the two with immediate; answered, all six complete "
        "SUCCESS in posting order with their ops")
{
    static const char *ops[6] = {"SEND", "WRITE",     "SEND_IMM",
                                 "READ", "WRITE_IMM", "FETCH_ADD"};
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "");
    struct mrw_pkt q[6];
    uint32_t hi = 0;
    int any = 0, rsn = 0;
    uint8_t r8[8] = {0};
    uint8_t rd[32];

    ct_pattern(rd, sizeof(rd), 42);
    ct_agent(t, "POST_SEND qp=%d wrid=0 op=SEND mr=%d off=0 len=10", c->aqp,
             mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=10 "
             "raddr=0x100 rkey=5",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=SEND_IMM mr=%d off=0 len=10 "
             "imm=0xaabbccdd",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=3 op=READ mr=%d off=100 len=32 "
             "raddr=0x200 rkey=5",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=4 op=WRITE_IMM mr=%d off=0 len=10 "
             "raddr=0x300 rkey=5 imm=7",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=5 op=FETCH_ADD mr=%d off=200 len=8 "
             "raddr=0x400 rkey=5 add=1",
             c->aqp, mr.id);
    for (int i = 0; i < 6; i++)
        q[i] = ch_next_new_data(c, &hi, &any)->p;
    for (int i = 0; i < 6; i++) {
        char what[64];
        int consumes = i == 0 || i == 2 || i == 4;
        snprintf(what, sizeof(what), "%s MSN", ops[i]);
        CT_EQ(t, what, i, q[i].u.rq.req.msn);
        snprintf(what, sizeof(what), "%s PSN", ops[i]);
        CT_EQ(t, what, c->astart + (uint32_t)i, q[i].base.psn);
        if (consumes) {
            snprintf(what, sizeof(what), "%s RSN", ops[i]);
            CT_EQ(t, what, rsn, q[i].u.rq.req.rsn);
            rsn++;
        }
    }
    CT_REQUIRE(t,
               (q[2].base.flags & MROCE_F_IMM) &&
                   q[2].u.rq.req.imm == 0xaabbccdd,
               "SEND_IMM: IMM flag or Immediate 0xaabbccdd missing");
    CT_REQUIRE(t, (q[4].base.flags & MROCE_F_IMM) && q[4].u.rq.req.imm == 7,
               "WRITE_IMM: IMM flag or Immediate 7 missing");
    CT_REQUIRE(t,
               !(q[0].base.flags & MROCE_F_IMM) &&
                   !(q[1].base.flags & MROCE_F_IMM),
               "IMM set on a SEND or WRITE without immediate");
    CT_EQ(t, "SEND opcode", MROCE_OP_SEND, q[2].base.opcode);
    CT_EQ(t, "WRITE_IMM opcode", MROCE_OP_WRITE, q[4].base.opcode);
    ch_send_resp(c, MROCE_OP_READ_RESP, 3, 32, 0, rd, 32, c->snd_nxt);
    ch_send_resp(c, MROCE_OP_ATOMIC_RESP, 5, 8, 0, r8, 8, c->snd_nxt + 1);
    c->snd_nxt += 2;
    for (int i = 0; i < 6; i++) {
        struct ct_wc wc = ct_expect_wc(t, c->aqp, "send", (uint64_t)i,
                                       "SUCCESS", CT_WAIT);
        CT_REQUIRE(t, strcmp(wc.op, ops[i]) == 0,
                   "completion %d: op expected %s, got %s", i, ops[i], wc.op);
    }
    ct_expect_mem(t, &mr, 100, rd, sizeof(rd));
}

CT_CASE(ops_iut_multi_packet_fields, "SEM-3 SEM-7 REL-23 WIRE-26",
        "IUT posts a WRITE_IMM of 2500 bytes at MTU 1024: three packets, "
        "Offsets 0/1024/2048, lengths 1024/1024/452, identical REQ fields, "
        "IMM and Immediate on all, FIRST on the first, LAST and ACK_REQ on "
        "the last")
{
    static uint8_t d[2500];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "mtu=1024");
    struct mrw_pkt q[3];
    uint32_t hi = 0;
    int any = 0;

    ct_pattern(d, sizeof(d), 43);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    ct_agent(t,
             "POST_SEND qp=%d wrid=9 op=WRITE_IMM mr=%d off=0 len=2500 "
             "raddr=0x8000 rkey=0x42 imm=0x5151",
             c->aqp, mr.id);
    for (int i = 0; i < 3; i++) {
        const struct ct_rx *rx = ch_next_new_data(c, &hi, &any);
        uint32_t n = i == 2 ? 452 : 1024;
        uint16_t fl = (i == 0 ? MROCE_F_FIRST : 0) |
                      (i == 2 ? MROCE_F_LAST : 0);
        q[i] = rx->p;
        CT_EQ(t, "PSN", c->astart + (uint32_t)i, q[i].base.psn);
        CT_EQ(t, "Offset", (uint32_t)i * 1024, q[i].u.rq.req.offset);
        CT_EQ(t, "payload length", n, q[i].payload_len);
        CT_REQUIRE(t, memcmp(q[i].payload, d + i * 1024, n) == 0,
                   "packet %d: payload differs from the source", i);
        CT_EQ(t, "FIRST/LAST", fl,
              q[i].base.flags & (MROCE_F_FIRST | MROCE_F_LAST));
        CT_REQUIRE(t, q[i].base.flags & MROCE_F_IMM, "packet %d lacks IMM", i);
        CT_EQ(t, "Immediate", 0x5151, q[i].u.rq.req.imm);
        CT_EQ(t, "MSN", 0, q[i].u.rq.req.msn);
        CT_EQ(t, "RSN", 0, q[i].u.rq.req.rsn);
        CT_EQ(t, "Msg Len", 2500, q[i].u.rq.req.msg_len);
        CT_EQ(t, "Remote Address", 0x8000, q[i].u.rq.req.raddr);
        CT_EQ(t, "RKey", 0x42, q[i].u.rq.req.rkey);
    }
    CT_REQUIRE(t, q[2].base.flags & MROCE_F_ACK_REQ,
               "LAST packet of the only queued WR lacks ACK_REQ (REL-23)");
    CT_EQ(t, "WRITE_IMM completion byte_len (SEM-22)", 2500,
          ct_expect_wc(t, c->aqp, "send", 9, "SUCCESS", CT_WAIT).len);
}

CT_CASE(ops_iut_zero_length_send, "SEM-4 SEM-22",
        "IUT posts a SEND with no scatter list: one packet, FIRST|LAST, "
        "Offset 0, Msg Len 0, no payload; ACKed, it completes SUCCESS len 0")
{
    struct ct_conn *c = ct_accept(t, "");
    const struct ct_rx *rx;
    struct ct_wc wc;

    ct_agent(t, "POST_SEND qp=%d wrid=3 op=SEND", c->aqp);
    rx = ct_expect_data(c, CT_WAIT);
    CT_EQ(t, "opcode", MROCE_OP_SEND, rx->p.base.opcode);
    CT_EQ(t, "FIRST|LAST", MROCE_F_FIRST | MROCE_F_LAST,
          rx->p.base.flags & (MROCE_F_FIRST | MROCE_F_LAST));
    CT_EQ(t, "Msg Len", 0, rx->p.u.rq.req.msg_len);
    CT_EQ(t, "Offset", 0, rx->p.u.rq.req.offset);
    CT_EQ(t, "payload", 0, rx->p.payload_len);
    wc = ct_expect_wc(t, c->aqp, "send", 3, "SUCCESS", CT_WAIT);
    CT_EQ(t, "byte_len", 0, wc.len);
}

CT_CASE(ops_iut_zero_length_read, "SEM-4 SEM-8 SEM-22",
        "IUT posts a READ with no scatter list: READ_REQ Msg Len 0; our "
        "READ_RESP without payload completes it SUCCESS len 0")
{
    struct ct_conn *c = ct_accept(t, "");
    const struct ct_rx *rx;
    struct ct_wc wc;

    ct_agent(t, "POST_SEND qp=%d wrid=6 op=READ raddr=0x100 rkey=1", c->aqp);
    rx = ct_expect_data(c, CT_WAIT);
    CT_EQ(t, "opcode", MROCE_OP_READ_REQ, rx->p.base.opcode);
    CT_EQ(t, "READ_REQ Msg Len", 0, rx->p.u.rq.req.msg_len);
    ch_send_resp(c, MROCE_OP_READ_RESP, rx->p.u.rq.req.msn, 0, 0, NULL, 0,
                 c->snd_nxt);
    c->snd_nxt++;
    wc = ct_expect_wc(t, c->aqp, "send", 6, "SUCCESS", CT_WAIT);
    CT_EQ(t, "READ byte_len", 0, wc.len);
}

CT_CASE(sem_write_multi_packet, "SEM-3 SEM-6 REL-11",
        "WRITE of 3000 bytes at MTU 1024 (3 packets): ACK cum = first PSN + "
        "3, all bytes placed")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    uint8_t d[3000];
    uint32_t psn;

    CT_EQ(t, "negotiated MTU", 1024, c->mtu);
    ct_pattern(d, sizeof(d), 2);
    psn = ct_send_write(c, &mr, 100, d, sizeof(d), 0);
    ct_expect_ack(c, psn + 3, CT_WAIT);
    ct_expect_mem(t, &mr, 100, d, sizeof(d));
}
