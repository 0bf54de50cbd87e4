/*
 * cases_ops.c - every operation and size class with the IUT as
 * responder (semantics.md): READ of 0, 1, MTU-1, MTU, MTU+1 and several
 * MTUs (response PSNs, offsets, lengths, flags, bytes, re-read on
 * retransmission), FETCH_ADD and CMP_SWAP (results, wrap-around,
 * alignment, permission), exactly-once atomics under duplicated requests,
 * zero-length SEND/WRITE/WRITE_IMM, WRITE with immediate, the order of the
 * responder's checks and the receive checks of SEM-18..20, and the
 * ordering rules of SEM-24/26 (a receive, a READ or an atomic waits for
 * the earlier PSNs; atomics run in PSN order).  The IUT as requester is in
 * cases_ops_req.c.
 *
 * The responder's byte order for atomics is its own (SEM-12), and the
 * agent reports it (HELLO atomic_order, AGENT-18): the original value
 * returned must be the bytes written, read in that order.  With an agent
 * that does not report it, cases learn it from the first original value
 * (it must be one of the two readings of the bytes written), or use
 * byte-symmetric values.
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

/* ---- the IUT as responder: READ ---- */

/* READ_REQ of len bytes at off from a region holding a pattern, QP MTU
 * mtu, tester MTU tmtu: the READ_RESPs must be ceil(len/MTU) packets (1 for
 * 0) at consecutive PSNs from the IUT's Start PSN, each with Req MSN, Msg
 * Len, Offset i*MTU, min(MTU, rest) bytes from Remote Address + Offset,
 * FIRST on the first, LAST on the last. */
static void read_check(struct ct *t, uint32_t mtu, uint32_t tmtu, uint32_t off,
                       uint32_t len)
{
    static uint8_t d[16384];
    struct ct_mr mr = ct_mr_reg(t, 16384, "lw,rr", 0);
    struct ct_conn *c;
    struct mrw_pkt p;
    char opts[64];
    uint32_t m, npk, got = 0;

    ct_pattern(d, sizeof(d), 21);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    snprintf(opts, sizeof(opts), "mtu=%u", mtu);
    c = ct_conn_new(t, opts);
    c->par.mtu = (uint16_t)tmtu;
    ct_conn_connect(c);
    m = c->mtu;
    CT_EQ(t, "negotiated MTU (CONN-12)", mtu < tmtu ? mtu : tmtu, m);
    npk = len ? (len + m - 1) / m : 1;
    ct_pkt_read(c, &p, &mr, off, len);
    ct_send(c, &p);
    ct_consume(c, &p);
    while (got < npk) {
        const struct ct_rx *rx =
            ct_expect_op(c, MROCE_OP_READ_RESP, 1, CT_WAIT);
        const struct mrw_pkt *r = &rx->p;
        uint32_t o = got * m, n = len - o < m ? len - o : m;
        uint16_t want = (got == 0 ? MROCE_F_FIRST : 0) |
                        (got == npk - 1 ? MROCE_F_LAST : 0);

        if (r->base.flags & MROCE_F_RETX)
            continue;
        CT_EQ(t, "READ_RESP PSN (consecutive from the IUT's Start PSN)",
              c->astart + got, r->base.psn);
        CT_EQ(t, "READ_RESP Req MSN", p.u.rq.req.msn, r->u.resp.req_msn);
        CT_EQ(t, "READ_RESP Msg Len", len, r->u.resp.msg_len);
        CT_EQ(t, "READ_RESP Offset", o, r->u.resp.offset);
        CT_EQ(t, "READ_RESP payload length", n, r->payload_len);
        CT_EQ(t, "READ_RESP FIRST/LAST flags", want,
              r->base.flags & (MROCE_F_FIRST | MROCE_F_LAST));
        CT_REQUIRE(t, n == 0 || memcmp(r->payload, d + off + o, n) == 0,
                   "READ_RESP %u: payload differs from the region's bytes "
                   "at %u",
                   got, off + o);
        got++;
    }
}

CT_CASE(ops_read_zero_length, "SEM-4 SEM-8",
        "READ_REQ with Msg Len 0: one READ_RESP, FIRST|LAST, Offset 0, Msg "
        "Len 0, no payload, Req MSN of the READ")
{
    read_check(t, 1024, 4096, 64, 0);
}

CT_CASE(ops_read_one_byte, "SEM-3 SEM-8",
        "READ of 1 byte at offset 77: one READ_RESP with that byte")
{
    read_check(t, 1024, 4096, 77, 1);
}

CT_CASE(ops_read_mtu_minus_one, "SEM-3 SEM-8",
        "READ of MTU-1 (1023) bytes: one READ_RESP FIRST|LAST of 1023 bytes")
{
    read_check(t, 1024, 4096, 3, 1023);
}

CT_CASE(ops_read_exact_mtu, "SEM-3 SEM-8",
        "READ of exactly MTU (1024) bytes: one READ_RESP FIRST|LAST")
{
    read_check(t, 1024, 4096, 0, 1024);
}

CT_CASE(ops_read_mtu_plus_one, "SEM-3 SEM-8 REL-1",
        "READ of MTU+1 (1025) bytes: two READ_RESPs (1024 then 1 byte at "
        "Offset 1024), consecutive PSNs")
{
    read_check(t, 1024, 4096, 5, 1025);
}

CT_CASE(ops_read_multi_packet, "SEM-3 SEM-8 SEM-10 REL-1",
        "READ of 10000 bytes at MTU 4096: three READ_RESPs 4096+4096+1808 "
        "at consecutive PSNs with the region's bytes")
{
    read_check(t, 4096, 4096, 100, 10000);
}

CT_CASE(ops_read_peer_mtu_smaller, "CONN-12 SEM-3",
        "tester advertises MTU 512 to a QP of MTU 4096: a READ of 2000 bytes "
        "comes as four READ_RESPs of at most 512 bytes")
{
    read_check(t, 4096, 512, 0, 2000);
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

/* ---- atomics ---- */

/* Sends atomic p, consumes it, waits for its ATOMIC_RESP (first
 * transmission) and checks its fields; returns the original value. */
static uint64_t atomic_do(struct ct_conn *c, struct mrw_pkt *p,
                          uint32_t want_psn)
{
    struct ct *t = c->t;
    const struct ct_rx *rx;

    ct_send(c, p);
    ct_consume(c, p);
    for (;;) {
        rx = ct_expect_op(c, MROCE_OP_ATOMIC_RESP, 1, CT_WAIT);
        if (!(rx->p.base.flags & MROCE_F_RETX))
            break;
    }
    CT_EQ(t, "ATOMIC_RESP PSN (the IUT's next PSN)", want_psn, rx->p.base.psn);
    CT_EQ(t, "ATOMIC_RESP Req MSN", p->u.rq.req.msn, rx->p.u.resp.req_msn);
    CT_EQ(t, "ATOMIC_RESP Msg Len", 8, rx->p.u.resp.msg_len);
    CT_EQ(t, "ATOMIC_RESP Offset", 0, rx->p.u.resp.offset);
    CT_EQ(t, "ATOMIC_RESP FIRST|LAST", MROCE_F_FIRST | MROCE_F_LAST,
          rx->p.base.flags & (MROCE_F_FIRST | MROCE_F_LAST));
    CT_EQ(t, "ATOMIC_RESP payload length", 8, rx->p.payload_len);
    return ct_get64(rx->p.payload, 1);
}

/* The responder's byte order: orig must be the reading of bytes in the
 * order the agent reported (AGENT-18), or, if it reported none, one of the
 * two readings. */
static int byte_order(struct ct *t, const uint8_t *bytes, uint64_t orig)
{
    int be = ct_atomic_be(t);
    if (be >= 0) {
        CT_REQUIRE(t, orig == ct_get64(bytes, be),
                   "atomic original value 0x%016llx is not the target's "
                   "bytes read %s-endian (0x%016llx), the order HELLO "
                   "reported (atomic_order, SEM-12)",
                   (unsigned long long)orig, be ? "big" : "little",
                   (unsigned long long)ct_get64(bytes, be));
        return be;
    }
    if (orig == ct_get64(bytes, 0))
        return 0;
    if (orig == ct_get64(bytes, 1))
        return 1;
    ct_fail(t,
            "atomic original value 0x%016llx is neither reading of the "
            "target's bytes (LE 0x%016llx, BE 0x%016llx)",
            (unsigned long long)orig, (unsigned long long)ct_get64(bytes, 0),
            (unsigned long long)ct_get64(bytes, 1));
    return 0;
}

/* The 64-bit word of mr at off, in byte order be. */
static uint64_t mem64(struct ct *t, const struct ct_mr *mr, uint32_t off,
                      int be)
{
    uint8_t b[8];
    ct_mr_read(t, mr, off, b, 8);
    return ct_get64(b, be);
}

static const uint8_t init_bytes[8] = {0x88, 0x77, 0x66, 0x55,
                                      0x44, 0x33, 0x22, 0x11};

CT_CASE(ops_fetch_add, "SEM-12 SEM-26 REL-1",
        "FETCH_ADD then a FETCH_ADD that wraps past 2^64: each ATOMIC_RESP "
        "returns the value before it (big-endian), memory holds the sums "
        "modulo 2^64")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,ra", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint64_t o1, o2, v1, add2;
    int be;

    ct_mr_write(t, &mr, 16, init_bytes, 8);
    ct_pkt_atomic(c, &p, MROCE_OP_FETCH_ADD, &mr, 16, 0x0101010101010101ull, 0);
    o1 = atomic_do(c, &p, c->astart);
    be = byte_order(t, init_bytes, o1);
    v1 = o1 + 0x0101010101010101ull;
    CT_EQ(t, "target after FETCH_ADD", v1, mem64(t, &mr, 16, be));
    add2 = ~v1 + 1 + 5; /* wraps to 5 */
    ct_pkt_atomic(c, &p, MROCE_OP_FETCH_ADD, &mr, 16, add2, 0);
    o2 = atomic_do(c, &p, c->astart + 1);
    CT_EQ(t, "second FETCH_ADD original value", v1, o2);
    CT_EQ(t, "target after the wrapping FETCH_ADD", 5, mem64(t, &mr, 16, be));
    ct_expect_mem_fill(t, &mr, 0, 16, 0);
    ct_expect_mem_fill(t, &mr, 24, 40, 0);
}

CT_CASE(ops_cmp_swap_equal, "SEM-12",
        "CMP_SWAP whose Compare equals the target: original returned, Swap "
        "stored")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,ra", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint64_t o;
    int be;

    ct_mr_write(t, &mr, 8, init_bytes, 8);
    /* Compare: the target in the byte order we do not know yet; learn it
     * with a FETCH_ADD of 0 first. */
    ct_pkt_atomic(c, &p, MROCE_OP_FETCH_ADD, &mr, 8, 0, 0);
    o = atomic_do(c, &p, c->astart);
    be = byte_order(t, init_bytes, o);
    ct_pkt_atomic(c, &p, MROCE_OP_CMP_SWAP, &mr, 8, 0xfeedfacecafebeefull, o);
    CT_EQ(t, "CMP_SWAP original value", o, atomic_do(c, &p, c->astart + 1));
    CT_EQ(t, "target after CMP_SWAP", 0xfeedfacecafebeefull,
          mem64(t, &mr, 8, be));
}

CT_CASE(ops_atomic_in_reported_order, "SEM-12",
        "target written in the byte order HELLO reports (atomic_order, "
        "AGENT-18): CMP_SWAP with that value as Compare swaps, FETCH_ADD "
        "then adds; each returns the value before it")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,ra", 0);
    struct ct_conn *c;
    struct mrw_pkt p;
    const uint64_t v = 0x0123456789abcdefull, w = 0xfedcba9876543210ull;
    uint8_t b[8];
    int be = ct_atomic_be(t);

    if (be < 0)
        ct_skip(t, "the agent does not report atomic_order (AGENT-18)");
    c = ct_connect(t, "");
    ct_put64(b, v, be);
    ct_mr_write(t, &mr, 24, b, 8);
    ct_pkt_atomic(c, &p, MROCE_OP_CMP_SWAP, &mr, 24, w, v);
    CT_EQ(t, "CMP_SWAP original value", v, atomic_do(c, &p, c->astart));
    CT_EQ(t, "target after CMP_SWAP", w, mem64(t, &mr, 24, be));
    ct_pkt_atomic(c, &p, MROCE_OP_FETCH_ADD, &mr, 24, 0x10, 0);
    CT_EQ(t, "FETCH_ADD original value", w, atomic_do(c, &p, c->astart + 1));
    CT_EQ(t, "target after FETCH_ADD", w + 0x10, mem64(t, &mr, 24, be));
    ct_expect_mem_fill(t, &mr, 0, 24, 0);
    ct_expect_mem_fill(t, &mr, 32, 32, 0);
}

CT_CASE(ops_cmp_swap_differs, "SEM-12",
        "CMP_SWAP whose Compare differs from the target: original returned, "
        "memory unchanged")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,ra", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint64_t o;

    ct_mr_write(t, &mr, 8, init_bytes, 8);
    ct_pkt_atomic(c, &p, MROCE_OP_CMP_SWAP, &mr, 8, 0xfeedfacecafebeefull,
                  0x1234);
    o = atomic_do(c, &p, c->astart);
    byte_order(t, init_bytes, o);
    ct_expect_mem(t, &mr, 8, init_bytes, 8);
}

CT_CASE(ops_atomic_unaligned, "SEM-12 SEM-17 REL-27",
        "FETCH_ADD at an address 4 bytes off an 8-byte boundary: NAK "
        "INVALID_REQUEST, memory unchanged, no ATOMIC_RESP")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,ra", 0x5c);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;

    ct_pkt_atomic(c, &p, MROCE_OP_FETCH_ADD, &mr, 12, 1, 0);
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_INVALID_REQUEST, CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 64, 0x5c);
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

/* The target word (initially 0) must read as `want` in one byte order. */
static void expect_word(struct ct *t, const struct ct_mr *mr, uint32_t off,
                        uint64_t want)
{
    uint8_t b[8];
    ct_mr_read(t, mr, off, b, 8);
    CT_REQUIRE(t, ct_get64(b, 0) == want || ct_get64(b, 1) == want,
               "target word: expected %llu, got bytes "
               "%02x%02x%02x%02x%02x%02x%02x%02x",
               (unsigned long long)want, b[0], b[1], b[2], b[3], b[4], b[5],
               b[6], b[7]);
}

CT_CASE(ops_atomic_duplicate_executed_once, "SEM-13 REL-8 REL-16",
        "FETCH_ADD +1 on 0, then the same request twice more (RETX): each "
        "duplicate gets a DUP ACK, no new ATOMIC_RESP; the target is 1")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,ra", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    uint64_t o;

    ct_pkt_atomic(c, &p, MROCE_OP_FETCH_ADD, &mr, 0, 1, 0);
    o = atomic_do(c, &p, c->astart);
    CT_EQ(t, "original value", 0, o);
    p.base.flags |= MROCE_F_RETX;
    for (int i = 0; i < 2; i++) {
        const struct ct_rx *rx;
        p.base.tsval += 1000;
        ct_send(c, &p);
        for (;;) {
            /* Our ACK of the ATOMIC_RESP may be late on a loaded host:
             * the same response retransmitted is fine, anything else
             * but ACKs is not. */
            rx = ct_next(c, ct_ms(t, CT_WAIT));
            CT_REQUIRE(t, rx != NULL, "no DUP ACK for a duplicate atomic");
            if (rx->p.base.opcode == MROCE_OP_ACK &&
                (rx->p.u.ack.echo_flags & MROCE_ECHO_DUP))
                break;
            if (rx->p.base.opcode == MROCE_OP_ACK)
                continue;
            CT_REQUIRE(t,
                       rx->p.base.opcode == MROCE_OP_ATOMIC_RESP &&
                           rx->p.base.psn == c->astart &&
                           ct_get64(rx->p.payload, 1) == 0,
                       "after a duplicate atomic: expected a DUP ACK, got %s",
                       ct_describe(t, rx));
        }
        CT_EQ(t, "DUP ACK Echo PSN", p.base.psn, rx->p.u.ack.echo_psn);
    }
    for (;;) {
        /* ACKs, and retransmissions of the one ATOMIC_RESP (its ACK may
         * be late on a loaded host), may come; a new response may not. */
        const struct ct_rx *rx = ct_next(c, ct_ms(t, CT_QUIET));
        if (!rx)
            break;
        if (rx->p.base.opcode == MROCE_OP_ACK)
            continue;
        CT_REQUIRE(t,
                   rx->p.base.opcode == MROCE_OP_ATOMIC_RESP &&
                       rx->p.base.psn == c->astart &&
                       ct_get64(rx->p.payload, 1) == 0,
                   "after duplicate atomics: expected nothing but ACKs and "
                   "the first ATOMIC_RESP again, got %s",
                   ct_describe(t, rx));
    }
    expect_word(t, &mr, 0, 1);
}

CT_CASE(ops_atomic_response_replayed, "SEM-13 LOSS-15 REL-8",
        "FETCH_ADD +5 on 0 whose ATOMIC_RESP is never ACKed, its request "
        "duplicated twice: every (re)transmitted ATOMIC_RESP has the same "
        "PSN and original value 0; the target is 5")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw,ra", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint64_t end;
    int resps = 0, dups = 0;

    c->auto_ack = 0;
    ct_pkt_atomic(c, &p, MROCE_OP_FETCH_ADD, &mr, 8, 5, 0);
    ct_send(c, &p);
    ct_consume(c, &p);
    end = ct_now_ns() + (uint64_t)ct_ms(t, 300) * 1000000u;
    while (ct_now_ns() < end && resps < 3) {
        rx = ct_next(c, 20);
        if (!rx)
            continue;
        if (rx->p.base.opcode != MROCE_OP_ATOMIC_RESP)
            continue;
        resps++;
        CT_EQ(t, "ATOMIC_RESP PSN (never a new one)", c->astart,
              rx->p.base.psn);
        CT_EQ(t, "ATOMIC_RESP original value", 0, ct_get64(rx->p.payload, 1));
        if (dups < 2) { /* a duplicate request after each response */
            p.base.flags |= MROCE_F_RETX;
            p.base.tsval += 1000;
            ct_send(c, &p);
            dups++;
        }
    }
    CT_REQUIRE(t, resps >= 2,
               "the unacknowledged ATOMIC_RESP was transmitted %d time(s) "
               "in 300 ms, expected a retransmission (LOSS-15)",
               resps);
    ct_send_ack(c, NULL);
    expect_word(t, &mr, 8, 5);
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
    expect_word(t, &mr, 24, 0x1111111111111112ull);
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

/* ---- SEND, WRITE with immediate, zero length, receive checks ---- */

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

CT_CASE(ops_send_duplicate_not_delivered_again, "REL-8 SEM-2 SEM-5",
        "SEND into receive 0, then the same packet again (RETX) with two "
        "receives posted: DUP ACK, receive 1 neither completes nor gets "
        "bytes; the next real SEND completes receive 1")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[100], e[40];

    ct_pattern(d, sizeof(d), 26);
    ct_pattern(e, sizeof(e), 27);
    ct_post_recv(t, c->aqp, 1, &mr, 0, 4096);
    ct_post_recv(t, c->aqp, 2, &mr, 4096, 4096);
    ct_pkt_req(c, &p, MROCE_OP_SEND);
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send(c, &p);
    ct_consume(c, &p);
    ct_expect_ack(c, p.base.psn + 1, CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 1, "SUCCESS", CT_WAIT);
    p.base.flags |= MROCE_F_RETX;
    p.base.tsval += 1000;
    ct_send(c, &p);
    for (;;) {
        rx = ct_expect_ack(c, p.base.psn + 1, CT_WAIT);
        if (rx->p.u.ack.echo_flags & MROCE_ECHO_DUP)
            break;
    }
    ct_expect_no_wc(t, c->aqp, "recv", CT_QUIET);
    ct_expect_mem_fill(t, &mr, 4096, 4096, 0);
    ct_send_send(c, e, sizeof(e), 0);
    ct_expect_wc(t, c->aqp, "recv", 2, "SUCCESS", CT_WAIT);
    ct_expect_mem(t, &mr, 4096, e, sizeof(e));
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
        const struct ct_rx *rx =
            ct_expect_op(c, MROCE_OP_ATOMIC_RESP, 1, CT_WAIT);
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
    expect_word(t, &mr, 32, 101);
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
