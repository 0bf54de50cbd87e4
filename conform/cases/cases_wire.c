/*
 * cases_wire.c - wire-format.md: receive validation (WIRE-3..WIRE-6,
 * WIRE-24..WIRE-26) on malformed datagrams, each of which the IUT must drop
 * without an answer or a side effect; the MTU bound on a data packet's
 * payload, the IUT's own and its peer's (WIRE-31); and the Max ACK Delay the
 * handshake advertises (WIRE-21).
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

/* On c (negotiated MTU c->mtu): a WRITE of c->mtu + 1 bytes in one packet
 * is dropped and counted, the same PSN with c->mtu bytes is placed. */
static void mtu_check(struct ct *t, struct ct_conn *c)
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0x21);
    static uint8_t d[8192];
    struct mrw_pkt p;
    int64_t before;

    ct_pattern(d, sizeof(d), 71);
    before = ct_rl_counter(t, c->aqp, "drop_invalid");
    ch_req_pkt(c, &p, MROCE_OP_WRITE, mr.addr, mr.rkey, d,
               (uint32_t)c->mtu + 1);
    ct_send(c, &p);
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, c->aqp, "drop_invalid", before, 1);
    ct_expect_mem_fill(t, &mr, 0, 8192, 0x21);
    p.u.rq.req.msg_len = c->mtu;
    p.payload_len = c->mtu;
    ct_send(c, &p);
    ct_consume(c, &p);
    ct_expect_ack(c, p.base.psn + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, c->mtu);
    ct_expect_mem_fill(t, &mr, c->mtu, 8192 - c->mtu, 0x21);
}

CT_CASE(edge_payload_above_own_mtu_dropped, "WIRE-31 CONN-12 WIRE-4",
        "IUT mtu=1024, tester 4096: a one-packet WRITE of 1025 bytes gets "
        "no ACK or NAK, drop_invalid +1, nothing placed; the same PSN with "
        "1024 bytes is ACKed and placed")
{
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    CT_EQ(t, "negotiated MTU", 1024, c->mtu);
    mtu_check(t, c);
}

CT_CASE(edge_payload_above_peer_mtu_dropped, "WIRE-31 CONN-12 WIRE-4",
        "IUT mtu 4096, tester advertises 512: a one-packet WRITE of 513 "
        "bytes gets no ACK or NAK, drop_invalid +1, nothing placed; 512 "
        "bytes at the same PSN are ACKed and placed")
{
    struct ct_conn *c = ct_conn_new(t, "mtu=4096");
    c->par.mtu = 512;
    ct_conn_connect(c);
    CT_EQ(t, "negotiated MTU", 512, c->mtu);
    mtu_check(t, c);
}

CT_CASE(edge_max_ack_delay_advertised, "WIRE-21 CONN-4 CONN-8 REL-19",
        "QPs created with max_ack_delay_us=2000 and 3000: the CONNECT_RESP "
        "and the CONNECT_REQ carry Max ACK Delay 2,000,000 and 3,000,000 ns")
{
    struct ct_conn *a = ct_connect(t, "max_ack_delay_us=2000");
    struct ct_conn *b = ct_accept(t, "max_ack_delay_us=3000");

    CT_EQ(t, "CONNECT_RESP Max ACK Delay (ns)", 2000000, a->apar.max_ack_delay);
    CT_EQ(t, "CONNECT_REQ Max ACK Delay (ns)", 3000000, b->apar.max_ack_delay);
}

/* One connection, a region, and a valid WRITE of 32 bytes in buf. */
struct mal {
    struct ct_conn *c;
    struct ct_mr mr;
    struct mrw_pkt p;
    uint8_t d[32];
    uint8_t buf[512];
    size_t len;
};

static void mal_setup(struct ct *t, struct mal *m)
{
    m->mr = ct_mr_reg(t, 4096, "lw,rw", 0x5a);
    m->c = ct_connect(t, "");
    ct_pattern(m->d, sizeof(m->d), 7);
    ct_pkt_req(m->c, &m->p, MROCE_OP_WRITE);
    m->p.u.rq.req.raddr = m->mr.addr + 128;
    m->p.u.rq.req.rkey = m->mr.rkey;
    m->p.u.rq.req.msg_len = sizeof(m->d);
    m->p.payload = m->d;
    m->p.payload_len = sizeof(m->d);
    m->len = ct_encode(t, &m->p, m->buf, sizeof(m->buf));
}

/* Sends buf[0..len) as it is now; the IUT must stay silent and place
 * nothing; then the intact WRITE must be ACKed with RX Count 1. */
static void mal_check(struct ct *t, struct mal *m)
{
    const struct ct_rx *rx;

    ct_send_raw(t, 0, m->buf, m->len, CT_ECN_ECT0);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &m->mr, 0, 4096, 0x5a);
    ct_send(m->c, &m->p);
    rx = ct_expect_ack(m->c, m->p.base.psn + 1, CT_WAIT);
    CT_EQ(t, "RX Count after the intact packet", 1, rx->p.u.ack.rx_count);
    ct_expect_mem(t, &m->mr, 128, m->d, sizeof(m->d));
}

static void put16(uint8_t *b, uint16_t v)
{
    b[0] = (uint8_t)(v >> 8);
    b[1] = (uint8_t)v;
}

static void put32(uint8_t *b, uint32_t v)
{
    b[0] = (uint8_t)(v >> 24);
    b[1] = (uint8_t)(v >> 16);
    b[2] = (uint8_t)(v >> 8);
    b[3] = (uint8_t)v;
}

CT_CASE(wire_bad_crc_dropped, "WIRE-24 WIRE-25 WIRE-27",
        "WRITE with its CRC trailer off by one bit: silence, nothing placed")
{
    struct mal m;

    mal_setup(t, &m);
    m.buf[m.len - 1] ^= 0x01;
    mal_check(t, &m);
}

CT_CASE(wire_payload_bit_flip_dropped, "WIRE-24 WIRE-27 SEC-1",
        "WRITE with one payload bit flipped (CRC not updated): silence, "
        "nothing placed")
{
    struct mal m;

    mal_setup(t, &m);
    m.buf[m.len - 10] ^= 0x40;
    mal_check(t, &m);
}

CT_CASE(wire_truncated_base_dropped, "WIRE-25 SEC-1",
        "datagrams of 0, 1, 20 and 27 bytes (shorter than the base header): "
        "silence")
{
    static const size_t lens[] = {0, 1, 20, 27};
    struct mal m;

    mal_setup(t, &m);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        ct_send_raw(t, 0, m.buf, lens[i], CT_ECN_ECT0);
    m.len = 0; /* mal_check sends an empty datagram once more */
    mal_check(t, &m);
}

CT_CASE(wire_truncated_datagram_dropped, "WIRE-25 WIRE-4 SEC-1",
        "WRITE cut 8 bytes short of its Pkt Len (CRC over what is left): "
        "silence, nothing placed")
{
    struct mal m;

    mal_setup(t, &m);
    m.len -= 8;
    ct_reseal(m.buf, m.len);
    mal_check(t, &m);
}

CT_CASE(wire_datagram_longer_than_pktlen_dropped, "WIRE-25 WIRE-4",
        "WRITE with 4 extra bytes after its CRC (Pkt Len unchanged): silence, "
        "nothing placed")
{
    struct mal m;

    mal_setup(t, &m);
    memset(m.buf + m.len, 0, 4);
    m.len += 4;
    mal_check(t, &m);
}

CT_CASE(wire_pktlen_field_mismatch_dropped, "WIRE-4 WIRE-25",
        "WRITE whose Pkt Len says 4 bytes more than the datagram (CRC "
        "resealed): silence, nothing placed")
{
    struct mal m;

    mal_setup(t, &m);
    put16(m.buf + 26, (uint16_t)(m.len + 4));
    ct_reseal(m.buf, m.len);
    mal_check(t, &m);
}

CT_CASE(wire_pktlen_below_32_dropped, "WIRE-25 SEC-1",
        "a 28-byte datagram with Pkt Len 28 (no room for the CRC): silence")
{
    struct mal m;

    mal_setup(t, &m);
    put16(m.buf + 26, 28);
    m.len = 28;
    mal_check(t, &m);
}

CT_CASE(wire_bad_version_dropped, "WIRE-3 WIRE-25 WIRE-27",
        "WRITE with version 2, and with version 0 (CRC resealed): silence, "
        "nothing placed")
{
    struct mal m;

    mal_setup(t, &m);
    m.buf[0] = 0;
    ct_reseal(m.buf, m.len);
    ct_send_raw(t, 0, m.buf, m.len, CT_ECN_ECT0);
    m.buf[0] = 2;
    ct_reseal(m.buf, m.len);
    mal_check(t, &m);
}

CT_CASE(wire_unknown_opcode_dropped, "WIRE-5 WIRE-25 WIRE-27",
        "the WRITE with opcode 0x17, 0x00 and 0xFF (CRC resealed): silence, "
        "nothing placed")
{
    static const uint8_t ops[] = {0x17, 0x00, 0xff};
    struct mal m;

    mal_setup(t, &m);
    for (size_t i = 0; i < sizeof(ops); i++) {
        m.buf[1] = ops[i];
        ct_reseal(m.buf, m.len);
        if (i + 1 < sizeof(ops))
            ct_send_raw(t, 0, m.buf, m.len, CT_ECN_ECT0);
    }
    mal_check(t, &m);
}

CT_CASE(wire_reserved_flag_dropped, "WIRE-6 WIRE-25",
        "WRITE with flag bit 0x0200 (and 0x8000) set: silence, nothing placed")
{
    struct mal m;
    uint16_t f;

    mal_setup(t, &m);
    f = (uint16_t)(m.buf[2] << 8 | m.buf[3]);
    put16(m.buf + 2, f | 0x8000);
    ct_reseal(m.buf, m.len);
    ct_send_raw(t, 0, m.buf, m.len, CT_ECN_ECT0);
    put16(m.buf + 2, f | 0x0200);
    ct_reseal(m.buf, m.len);
    mal_check(t, &m);
}

CT_CASE(wire_offset_beyond_msglen_dropped, "WIRE-26 SEC-1 SEC-3",
        "WRITE whose Offset + payload exceeds Msg Len (Offset 16, Msg Len "
        "32, 32 bytes): silence, nothing placed")
{
    struct mal m;

    mal_setup(t, &m);
    /* REQ header at 28: msn 28, rsn 32, raddr 36, rkey 44, msg_len 48,
     * offset 52. */
    put32(m.buf + 52, 16);
    put16(m.buf + 2, MROCE_F_LAST | MROCE_F_ACK_REQ);
    ct_reseal(m.buf, m.len);
    mal_check(t, &m);
}

CT_CASE(wire_first_last_mismatch_dropped, "WIRE-26 WIRE-6",
        "single-packet WRITE without FIRST, then without LAST: silence, "
        "nothing placed")
{
    struct mal m;

    mal_setup(t, &m);
    put16(m.buf + 2, MROCE_F_LAST | MROCE_F_ACK_REQ);
    ct_reseal(m.buf, m.len);
    ct_send_raw(t, 0, m.buf, m.len, CT_ECN_ECT0);
    put16(m.buf + 2, MROCE_F_FIRST | MROCE_F_ACK_REQ);
    ct_reseal(m.buf, m.len);
    mal_check(t, &m);
}

CT_CASE(wire_imm_on_read_req_dropped, "WIRE-26 WIRE-6 SEM-8",
        "READ_REQ of 16 bytes with IMM set: silence (no ACK, no READ_RESP); "
        "the same READ_REQ without IMM is then answered with the bytes")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[16];

    ct_pattern(d, sizeof(d), 5);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    ct_pkt_req(c, &p, MROCE_OP_READ_REQ);
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = sizeof(d);
    p.base.flags |= MROCE_F_IMM;
    ct_send(c, &p);
    ct_expect_silence(t, CT_QUIET);
    p.base.flags &= (uint16_t)~MROCE_F_IMM;
    ct_send(c, &p);
    rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1, CT_WAIT);
    CT_EQ(t, "READ_RESP payload length", sizeof(d), rx->p.payload_len);
    CT_REQUIRE(t, memcmp(rx->p.payload, d, sizeof(d)) == 0,
               "READ_RESP payload differs from the region's bytes");
}
