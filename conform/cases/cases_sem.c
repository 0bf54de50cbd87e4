/*
 * cases_sem.c - operations and the responder's checks (semantics.md):
 * WRITE and SEND placed and acknowledged, receives completed, and the NAKs
 * for a bad key, an out-of-bounds range, missing permission and a missing
 * receive, with nothing placed for a refused packet.
 */
#include <string.h>

#include "conform.h"

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

/* A one-packet WRITE of len bytes to raddr/rkey must be refused with NAK
 * code; nothing of the region may change. */
static void write_naked(struct ct *t, const char *access, int64_t addr_off,
                        uint32_t rkey_xor, uint32_t len, uint8_t code)
{
    struct ct_mr mr = ct_mr_reg(t, 4096, access, 0x33);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[256];

    ct_pattern(d, sizeof(d), 6);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.u.rq.req.raddr = mr.addr + (uint64_t)addr_off;
    p.u.rq.req.rkey = mr.rkey ^ rkey_xor;
    p.u.rq.req.msg_len = len;
    p.payload = d;
    p.payload_len = len;
    ct_send(c, &p);
    rx = ct_expect_nak(c, p.base.psn, code, CT_WAIT);
    CT_EQ(t, "NAK MSN", p.u.rq.req.msn, rx->p.u.nak.msn);
    CT_EQ(t, "NAK Cum PSN", p.base.psn, rx->p.u.nak.cum_psn);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x33);
}

CT_CASE(sem_nak_bad_rkey, "SEM-17 REL-27 WIRE-9 SEC-3",
        "WRITE with an RKey naming no region: NAK REMOTE_ACCESS_KEY for its "
        "PSN, nothing placed")
{
    write_naked(t, "lw,rw", 0, 0x5a5a0000, 64, MROCE_NAK_REMOTE_ACCESS_KEY);
}

CT_CASE(sem_nak_out_of_bounds, "SEM-17 REL-27 SEC-3",
        "WRITE of 64 bytes starting 32 bytes before the region's end: NAK "
        "REMOTE_ACCESS_BOUNDS, nothing placed (not even the first 32)")
{
    write_naked(t, "lw,rw", 4096 - 32, 0, 64, MROCE_NAK_REMOTE_ACCESS_BOUNDS);
}

CT_CASE(sem_nak_one_byte_past_end, "SEM-17 SEC-3",
        "WRITE of 64 bytes ending one byte past the region's end: NAK "
        "REMOTE_ACCESS_BOUNDS, nothing placed")
{
    write_naked(t, "lw,rw", 4096 - 63, 0, 64, MROCE_NAK_REMOTE_ACCESS_BOUNDS);
}

CT_CASE(sem_write_to_exact_end, "SEM-17 SEM-6",
        "WRITE of 64 bytes ending exactly at the region's last byte: ACKed "
        "and placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    uint8_t d[64];
    uint32_t psn;

    ct_pattern(d, sizeof(d), 10);
    psn = ct_send_write(c, &mr, 4096 - 64, d, sizeof(d), 0);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 4096 - 64, d, sizeof(d));
}

CT_CASE(sem_nak_message_past_end, "SEM-17 SEC-3",
        "first packet (1024 bytes, in bounds) of a WRITE whose Msg Len 4097 "
        "ends past the 4096-byte region: NAK REMOTE_ACCESS_BOUNDS, nothing "
        "placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x44);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    struct mrw_pkt p;
    uint8_t d[1024];

    ct_pattern(d, sizeof(d), 11);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.base.flags = MROCE_F_FIRST | MROCE_F_ACK_REQ;
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = 4097;
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_BOUNDS, CT_WAIT);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x44);
}

CT_CASE(sem_nak_below_region, "SEM-17 SEC-3",
        "WRITE of 16 bytes starting 8 bytes before the region: NAK "
        "REMOTE_ACCESS_BOUNDS, nothing placed")
{
    write_naked(t, "lw,rw", -8, 0, 16, MROCE_NAK_REMOTE_ACCESS_BOUNDS);
}

CT_CASE(sem_nak_write_without_permission, "SEM-17 REL-27 SEC-3",
        "WRITE into a region registered without remote write: NAK "
        "REMOTE_ACCESS_PERM, nothing placed")
{
    write_naked(t, "lw,rr", 0, 0, 64, MROCE_NAK_REMOTE_ACCESS_PERM);
}

CT_CASE(sem_nak_read_without_permission, "SEM-17 REL-27 SEC-3",
        "READ_REQ of 64 bytes from a region without remote read: NAK "
        "REMOTE_ACCESS_PERM, no READ_RESP")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;

    ct_pkt_req(c, &p, MROCE_OP_READ_REQ);
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = 64;
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_PERM, CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(sem_fatal_nak_sticky, "REL-27 REL-12",
        "the same bad-RKey WRITE sent twice (second with RETX): the same NAK "
        "both times, nothing placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint8_t d[16];

    ct_pattern(d, sizeof(d), 3);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey ^ 0x00ff0000;
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    p.base.flags |= MROCE_F_RETX;
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_mem_fill(t, &mr, 0, 64, 0);
}

CT_CASE(sem_rnr_nak_without_receive, "SEM-18 REL-27 WIRE-20",
        "SEND with no receive posted: NAK RNR with RNR Delay 2, nothing "
        "completed; after POST_RECV the resent SEND is ACKed and completes")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[48];

    ct_pattern(d, sizeof(d), 12);
    ct_pkt_req(c, &p, MROCE_OP_SEND);
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send(c, &p);
    rx = ct_expect_nak(c, p.base.psn, MROCE_NAK_RNR, CT_WAIT);
    CT_EQ(t, "RNR Delay", 2, rx->p.u.nak.rnr_delay);
    ct_expect_no_wc(t, c->aqp, "recv", 0);
    ct_post_recv(t, c->aqp, 9, &mr, 0, 4096);
    p.base.flags |= MROCE_F_RETX;
    ct_send(c, &p);
    ct_expect_ack(c, p.base.psn + 1, CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 9, "SUCCESS", CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}
