/*
 * cases_sem_checks.c - semantics.md section 3, the responder's checks and
 * their order (SEM-16..SEM-20): keys, bounds (a zero-length access just
 * past a region's last byte included), permissions, alignment, receives
 * too small or missing (RNR), and stale or mismatched SENDs; each refused
 * with the NAK the spec names and nothing placed.
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

CT_CASE(edge_zero_length_at_region_end, "SEM-17 SEM-4 SEM-8",
        "zero-length WRITE and READ_REQ at Remote Address = addr + len: "
        "ACKed / one empty READ_RESP; a zero-length WRITE at addr + len + "
        "1: NAK REMOTE_ACCESS_BOUNDS; the region unchanged")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw,rr", 0x5c);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;

    ch_req_pkt(c, &p, MROCE_OP_WRITE, mr.addr + 4096, mr.rkey, NULL, 0);
    ct_send(c, &p);
    ct_consume(c, &p);
    ct_expect_ack(c, p.base.psn + 1, CT_WAIT);

    ct_pkt_read(c, &p, &mr, 4096, 0);
    ct_send(c, &p);
    ct_consume(c, &p);
    rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1, CT_WAIT);
    CT_EQ(t, "READ_RESP Req MSN", p.u.rq.req.msn, rx->p.u.resp.req_msn);
    CT_EQ(t, "READ_RESP Msg Len", 0, rx->p.u.resp.msg_len);
    CT_EQ(t, "READ_RESP payload", 0, rx->p.payload_len);

    ch_req_pkt(c, &p, MROCE_OP_WRITE, mr.addr + 4097, mr.rkey, NULL, 0);
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_BOUNDS, CT_WAIT);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x5c);
}

CT_CASE(ops_read_out_of_bounds, "SEM-17 SEC-3 REL-27 REL-22",
        "READ_REQ of 64 bytes starting 32 bytes before the region's end: NAK "
        "REMOTE_ACCESS_BOUNDS, no READ_RESP")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;

    const struct ct_rx *rx;

    ct_pkt_read(c, &p, &mr, 4096 - 32, 64);
    p.base.entropy = ct_entropy(t, 5);
    ct_send(c, &p);
    rx = ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_BOUNDS, CT_WAIT);
    CT_EQ(t, "NAK base PSN (the IUT's snd_nxt, REL-14)", c->astart,
          rx->p.base.psn);
    CT_EQ(t, "NAK base Flags", 0, rx->p.base.flags);
    CT_EQ(t, "NAK Entropy (the refused packet's, REL-22)", p.base.entropy,
          rx->p.base.entropy);
    CT_EQ(t, "NAK MSN", p.u.rq.req.msn, rx->p.u.nak.msn);
    CT_EQ(t, "NAK Cum PSN", p.base.psn, rx->p.u.nak.cum_psn);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(ops_atomic_unaligned_before_key, "SEM-17",
        "CMP_SWAP that is both unaligned and names no region: alignment is "
        "checked first, NAK INVALID_REQUEST")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,ra", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;

    ct_pkt_atomic(c, &p, MROCE_OP_CMP_SWAP, &mr, 2, 1, 0);
    p.u.rq.req.rkey ^= 0x00ff0000;
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_INVALID_REQUEST, CT_WAIT);
}

CT_CASE(ops_atomic_without_permission, "SEM-17 SEC-3 REL-27",
        "FETCH_ADD on a region with remote read and write but no remote "
        "atomic: NAK REMOTE_ACCESS_PERM, memory unchanged")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,rw,rr", 0x21);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;

    ct_pkt_atomic(c, &p, MROCE_OP_FETCH_ADD, &mr, 8, 1, 0);
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_PERM, CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 64, 0x21);
}

CT_CASE(ops_write_imm_without_receive_rnr, "SEM-18 SEM-16 REL-27",
        "WRITE with IMM and no receive posted: NAK RNR (RNR Delay 2), "
        "nothing placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x19);
    struct ct_conn *c = ct_connect(t, "");
    const struct ct_rx *rx;
    uint8_t d[64];
    uint32_t psn;

    ct_pattern(d, sizeof(d), 29);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), MROCE_F_IMM);
    rx = ct_expect_nak(c, psn, MROCE_NAK_RNR, CT_WAIT);
    CT_EQ(t, "RNR Delay", 2, rx->p.u.nak.rnr_delay);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x19);
}

CT_CASE(ops_send_longer_than_receive, "SEM-20 SEM-16 SEM-25 REL-27",
        "2-packet SEND of Msg Len 1500 into a 1000-byte receive: packet 0 "
        "NAKed INVALID_REQUEST (again when resent), packet 1 dropped "
        "silently, receive completes LOC_LEN_ERR len 0, nothing placed, QP "
        "in RTS")
{
    static uint8_t d[1500];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x2a);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    struct mrw_pkt p0, p1;
    struct ct_wc wc;

    ct_pattern(d, sizeof(d), 30);
    ct_post_recv(t, c->aqp, 11, &mr, 0, 1000);
    ct_pkt_req(c, &p0, MROCE_OP_SEND);
    p0.base.flags = MROCE_F_FIRST;
    p0.u.rq.req.msg_len = sizeof(d);
    p0.payload = d;
    p0.payload_len = 1024;
    p1 = p0;
    p1.base.psn++;
    p1.base.flags = MROCE_F_LAST | MROCE_F_ACK_REQ;
    p1.u.rq.req.offset = 1024;
    p1.payload = d + 1024;
    p1.payload_len = sizeof(d) - 1024;
    ct_consume(c, &p1);
    ct_send(c, &p0);
    ct_expect_nak(c, p0.base.psn, MROCE_NAK_INVALID_REQUEST, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 11, "LOC_LEN_ERR", CT_WAIT);
    CT_EQ(t, "failed receive byte_len", 0, wc.len);
    ct_send(c, &p1);
    ct_expect_silence(t, CT_QUIET);
    p0.base.flags |= MROCE_F_RETX;
    ct_send(c, &p0);
    ct_expect_nak(c, p0.base.psn, MROCE_NAK_INVALID_REQUEST, CT_WAIT);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x2a);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
}

/* Sends packet 0 (1024 of 2048 bytes) of a SEND for receive 0 and checks
 * it is accepted; returns it for the case to follow up. */
static void send_half(struct ct_conn *c, struct mrw_pkt *p0, const uint8_t *d)
{
    ct_pkt_req(c, p0, MROCE_OP_SEND);
    p0->base.flags = MROCE_F_FIRST | MROCE_F_ACK_REQ;
    p0->u.rq.req.msg_len = 2048;
    p0->payload = d;
    p0->payload_len = 1024;
    ct_send(c, p0);
    c->snd_nxt++;
    ct_expect_ack(c, p0->base.psn + 1, CT_WAIT);
}

CT_CASE(ops_send_msg_len_mismatch, "SEM-19 SEM-16 REL-27",
        "packet 0 of a 2048-byte SEND accepted, then packet 1 for the same "
        "RSN claiming Msg Len 3000: NAK INVALID_REQUEST, its bytes not "
        "placed, no completion")
{
    static uint8_t d[2048];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    struct mrw_pkt p0, p1;

    ct_pattern(d, sizeof(d), 31);
    ct_post_recv(t, c->aqp, 12, &mr, 0, 4096);
    send_half(c, &p0, d);
    p1 = p0;
    p1.base.psn = c->snd_nxt;
    p1.base.flags = MROCE_F_ACK_REQ;
    p1.u.rq.req.msg_len = 3000;
    p1.u.rq.req.offset = 1024;
    p1.payload = d + 1024;
    ct_send(c, &p1);
    ct_expect_nak(c, p1.base.psn, MROCE_NAK_INVALID_REQUEST, CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, 1024);
    ct_expect_mem_fill(t, &mr, 1024, 3072, 0);
    ct_expect_no_wc(t, c->aqp, "recv", 0);
}

CT_CASE(ops_write_imm_opcode_mismatch, "SEM-19 SEM-16 REL-27",
        "packet 0 of a 2048-byte SEND accepted for receive 0, then a WRITE "
        "with IMM (same RSN, same Msg Len) bound to it: NAK "
        "INVALID_REQUEST, nothing of the WRITE placed")
{
    static uint8_t d[2048];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_mr wm = ct_mr_reg(t, 4096, "lw,rw", 0x90);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    struct mrw_pkt p0, w;

    ct_pattern(d, sizeof(d), 32);
    ct_post_recv(t, c->aqp, 13, &mr, 0, 4096);
    send_half(c, &p0, d);
    ct_pkt_req(c, &w, MROCE_OP_WRITE);
    /* Packet 0 of a 2048-byte WRITE with IMM: same RSN and Msg Len as the
     * SEND, only the opcode differs. */
    w.base.flags = MROCE_F_FIRST | MROCE_F_ACK_REQ | MROCE_F_IMM;
    w.u.rq.req.rsn = p0.u.rq.req.rsn;
    w.u.rq.req.msn = p0.u.rq.req.msn + 1;
    w.u.rq.req.raddr = wm.addr;
    w.u.rq.req.rkey = wm.rkey;
    w.u.rq.req.msg_len = 2048;
    w.u.rq.req.imm = 77;
    w.payload = d;
    w.payload_len = 1024;
    ct_send(c, &w);
    ct_expect_nak(c, w.base.psn, MROCE_NAK_INVALID_REQUEST, CT_WAIT);
    ct_expect_mem_fill(t, &wm, 0, 4096, 0x90);
    ct_expect_no_wc(t, c->aqp, "recv", 0);
}

CT_CASE(ops_send_stale_rsn_dropped, "SEM-18 SEC-2 REL-10",
        "after receive 0 completed, a SEND at a new PSN naming RSN 0 again: "
        "dropped silently (no NAK, not marked: a later WRITE's ACK keeps "
        "Cum PSN at it), nothing delivered to receive 1")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt s;
    const struct ct_rx *rx;
    uint8_t d[50], w[16];
    uint32_t stale, wpsn;

    ct_pattern(d, sizeof(d), 33);
    ct_pattern(w, sizeof(w), 34);
    ct_post_recv(t, c->aqp, 1, &mr, 0, 1024);
    ct_post_recv(t, c->aqp, 2, &mr, 1024, 1024);
    ct_expect_ack(c, ct_send_send(c, d, sizeof(d), 0) + 1, CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 1, "SUCCESS", CT_WAIT);
    ct_pkt_req(c, &s, MROCE_OP_SEND);
    s.u.rq.req.rsn = 0;
    s.u.rq.req.msg_len = sizeof(d);
    s.payload = d;
    s.payload_len = sizeof(d);
    stale = s.base.psn;
    c->snd_nxt++;
    c->msn++;
    ct_send(c, &s);
    ct_expect_silence(t, CT_QUIET);
    wpsn = ct_send_write(c, &mr, 4096, w, sizeof(w), 0);
    rx = ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
    CT_EQ(t, "ACK Cum PSN (the stale SEND was not marked)", stale,
          rx->p.u.ack.cum_psn);
    CT_REQUIRE(t, ct_ack_covers(&rx->p, wpsn),
               "the ACK does not SACK the "
               "WRITE after the stale SEND");
    ct_expect_no_wc(t, c->aqp, "recv", 0);
    ct_expect_mem_fill(t, &mr, 1024, 1024, 0);
}

CT_CASE(ops_range_overflow_refused, "SEM-17 SEC-1 SEC-3",
        "WRITE at Remote Address 2^64 - 16 with 32 bytes, and a READ of Msg "
        "Len 0xFFFFFFFF from the region's start (on a second connection: "
        "the first holds its fatal NAK, REL-40): both NAK "
        "REMOTE_ACCESS_BOUNDS (overflow is out of bounds), nothing placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw,rr", 0x45);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_conn *c2 = ct_connect(t, "");
    struct mrw_pkt p;
    uint8_t d[32];

    ct_pattern(d, sizeof(d), 81);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.u.rq.req.raddr = 0xfffffffffffffff0ull;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_BOUNDS, CT_WAIT);
    ct_pkt_read(c2, &p, &mr, 0, 0xffffffffu);
    ct_send(c2, &p);
    ct_expect_nak(c2, p.base.psn, MROCE_NAK_REMOTE_ACCESS_BOUNDS, CT_WAIT);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x45);
}

CT_CASE(ops_read_zero_length_outside_region, "SEM-17 SEM-4",
        "READ_REQ of Msg Len 0 at an address 64 bytes past the region's "
        "end: NAK REMOTE_ACCESS_BOUNDS, no READ_RESP")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;

    ct_pkt_read(c, &p, &mr, 4096 + 64, 0);
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_BOUNDS, CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(ops_send_rsn_beyond_posted_rnr, "SEM-18 REL-27",
        "one receive posted, a SEND naming RSN 1 (receive 0 still free): "
        "NAK RNR, nothing placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x0f);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt s;
    uint8_t d[20];

    ct_pattern(d, sizeof(d), 92);
    ct_post_recv(t, c->aqp, 1, &mr, 0, 4096);
    ct_pkt_req(c, &s, MROCE_OP_SEND);
    s.u.rq.req.rsn = 1;
    s.u.rq.req.msg_len = sizeof(d);
    s.payload = d;
    s.payload_len = sizeof(d);
    ct_send(c, &s);
    ct_expect_nak(c, s.base.psn, MROCE_NAK_RNR, CT_WAIT);
    ct_expect_no_wc(t, c->aqp, "recv", 0);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x0f);
}

CT_CASE(ops_write_imm_rnr_before_key, "SEM-16 SEM-18 SEM-17",
        "WRITE with IMM, no receive posted and a bad RKey: SEM-18 comes "
        "first, NAK RNR; after POST_RECV the resend is NAKed "
        "REMOTE_ACCESS_KEY and the receive stays pending")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_mr bad = mr;
    uint8_t d[16] = {0};
    uint32_t psn;

    bad.rkey ^= 0x00ff0000;
    psn = ct_send_write(c, &bad, 0, d, sizeof(d), MROCE_F_IMM);
    ct_expect_nak(c, psn, MROCE_NAK_RNR, CT_WAIT);
    ct_post_recv(t, c->aqp, 1, &mr, 0, 64);
    c->snd_nxt = psn;
    c->msn--;
    c->rsn--;
    ct_send_write(c, &bad, 0, d, sizeof(d), MROCE_F_IMM | MROCE_F_RETX);
    ct_expect_nak(c, psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_no_wc(t, c->aqp, "recv", 0);
}

CT_CASE(ops_write_bounds_before_permission, "SEM-17",
        "WRITE past the end of a region that also lacks remote write: "
        "bounds are checked before permission, NAK REMOTE_ACCESS_BOUNDS; "
        "in bounds (on a second connection: the first holds its fatal NAK, "
        "REL-40), NAK REMOTE_ACCESS_PERM")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_conn *c2 = ct_connect(t, "");
    uint8_t d[64] = {0};
    uint32_t psn;

    psn = ct_send_write(c, &mr, 4096 - 32, d, sizeof(d), 0);
    ct_expect_nak(c, psn, MROCE_NAK_REMOTE_ACCESS_BOUNDS, CT_WAIT);
    psn = ct_send_write(c2, &mr, 0, d, sizeof(d), 0);
    ct_expect_nak(c2, psn, MROCE_NAK_REMOTE_ACCESS_PERM, CT_WAIT);
}

CT_CASE(sec_deregistered_key_refused, "SEM-17 SEC-3",
        "after MR_DEREG, a WRITE and a READ (on a second connection: the "
        "first holds its fatal NAK, REL-40) with the old RKey: NAK "
        "REMOTE_ACCESS_KEY each, no READ_RESP")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw,rr", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_conn *c2 = ct_connect(t, "");
    struct mrw_pkt p;
    uint8_t d[16] = {0};
    uint32_t psn;

    ct_agent(t, "MR_DEREG mr=%d", mr.id);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_expect_nak(c, psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_pkt_read(c2, &p, &mr, 0, 16);
    ct_send(c2, &p);
    ct_expect_nak(c2, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
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
