/*
 * cases_sem_atomics.c - semantics.md section 2, the atomics: FETCH_ADD and
 * CMP_SWAP results, wrap-around and alignment (SEM-12), and exactly-once
 * execution under duplicated requests with the kept result replayed
 * (SEM-13), with the IUT as responder and as requester.
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

#include "case_helpers.h"
#include "conform.h"

CT_CASE(loss_atomic_resp_replayed, "SEM-13 REL-8 LOSS-15 SEM-12",
        "our FETCH_ADD +5 on 1000; ATOMIC_RESP not ACKed; the FETCH_ADD "
        "again: DUP ACK, no new response; the ATOMIC_RESP is resent (same "
        "PSN, orig 1000); memory 1005: executed once")
{
    struct ct_conn *c = ct_accept(t, "min_rto_us=10000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,ra", 0);
    struct ct_rl_pkt a, r;
    struct mrw_pkt q;
    const struct ct_rx *rx;
    uint64_t v = 1000, m;
    uint8_t be[8];

    for (int i = 0; i < 8; i++)
        be[i] = (uint8_t)(v >> (56 - 8 * i));
    ct_mr_write(t, &mr, 0, &v, 8);
    c->auto_ack = 0;
    ct_pkt_req(c, &q, MROCE_OP_FETCH_ADD);
    q.u.rq.req.raddr = mr.addr;
    q.u.rq.req.rkey = mr.rkey;
    q.u.rq.atomic.swap_add = 5;
    ct_send(c, &q);
    c->snd_nxt++;
    c->msn++;
    for (;;) {
        rx = ct_rl_next(c, RL_WAIT);
        if (!rx)
            ct_fail(t, "expected an ATOMIC_RESP, got nothing");
        if (rx->p.base.opcode == MROCE_OP_ACK)
            continue;
        CT_REQUIRE(t, rx->p.base.opcode == MROCE_OP_ATOMIC_RESP,
                   "expected ATOMIC_RESP, got %s", ct_describe(t, rx));
        ct_rl_save(rx, &a);
        break;
    }
    CT_REQUIRE(t, a.p.payload_len == 8 && memcmp(a.pay, be, 8) == 0,
               "ATOMIC_RESP payload is not the original value 1000");
    q.base.flags |= MROCE_F_RETX;
    q.base.tsval += 1000;
    ct_send(c, &q);
    rx = ch_ack_of(c, q.base.psn, q.base.tsval);
    CT_EQ(t, "ACK of the repeated FETCH_ADD: Echo Flags (DUP)", MROCE_ECHO_DUP,
          rx->p.u.ack.echo_flags);
    /* Whatever comes next must be the same response, resent. */
    ct_rl_expect_data(c, 1, RL_WAIT, &r);
    ch_expect_copy(t, &a.p, &r.p);
    ct_rl_send_ack(c, r.p.base.psn + 1, NULL, 0, &r.p, 0);
    ct_mr_read(t, &mr, 0, &m, 8);
    CT_EQ(t, "target after one FETCH_ADD +5 (executed once)", 1005, m);
    ct_expect_silence(t, CT_QUIET);
}

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
    ch_expect_word(t, &mr, 0, 1);
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
    ch_expect_word(t, &mr, 8, 5);
}

CT_CASE(ops_iut_atomics_requests_and_results, "SEM-12 SEM-22",
        "IUT posts FETCH_ADD and CMP_SWAP: single packets with Msg Len 8, "
        "the operands, aligned address; the big-endian originals we return "
        "are stored in the local buffers (native order), both complete "
        "SUCCESS in order")
{
    struct ct_mr mr = ct_mr_reg(t, 64, "lw", 0);
    struct ct_conn *c = ct_accept(t, "");
    const struct ct_rx *rx;
    struct mrw_pkt a, b;
    uint8_t o1[8], o2[8], got[8];
    uint32_t hi = 0, psn;
    int any = 0;
    struct ct_wc wc;

    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=FETCH_ADD mr=%d off=8 len=8 "
             "raddr=0x4008 rkey=0x77 add=0x0102030405060708",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=CMP_SWAP mr=%d off=16 len=8 "
             "raddr=0x4010 rkey=0x77 cmp=0x1111 swap=0x2222",
             c->aqp, mr.id);
    rx = ch_next_new_data(c, &hi, &any);
    a = rx->p;
    rx = ch_next_new_data(c, &hi, &any);
    b = rx->p;
    CT_EQ(t, "FETCH_ADD opcode", MROCE_OP_FETCH_ADD, a.base.opcode);
    CT_EQ(t, "FETCH_ADD Msg Len", 8, a.u.rq.req.msg_len);
    CT_EQ(t, "FETCH_ADD payload", 0, a.payload_len);
    CT_EQ(t, "FETCH_ADD Remote Address", 0x4008, a.u.rq.req.raddr);
    CT_EQ(t, "FETCH_ADD Add", 0x0102030405060708ull, a.u.rq.atomic.swap_add);
    CT_EQ(t, "FETCH_ADD FIRST|LAST", MROCE_F_FIRST | MROCE_F_LAST,
          a.base.flags & (MROCE_F_FIRST | MROCE_F_LAST));
    CT_EQ(t, "CMP_SWAP opcode", MROCE_OP_CMP_SWAP, b.base.opcode);
    CT_EQ(t, "CMP_SWAP Compare", 0x1111, b.u.rq.atomic.compare);
    CT_EQ(t, "CMP_SWAP Swap", 0x2222, b.u.rq.atomic.swap_add);
    CT_EQ(t, "CMP_SWAP MSN", a.u.rq.req.msn + 1, b.u.rq.req.msn);
    ct_put64(o1, 0xa1a2a3a4a5a6a7a8ull, 1);
    ct_put64(o2, 0x1111, 1);
    psn = c->snd_nxt;
    ch_send_resp(c, MROCE_OP_ATOMIC_RESP, b.u.rq.req.msn, 8, 0, o2, 8, psn);
    ct_expect_no_wc(t, c->aqp, "send", 20);
    ch_send_resp(c, MROCE_OP_ATOMIC_RESP, a.u.rq.req.msn, 8, 0, o1, 8, psn + 1);
    c->snd_nxt = psn + 2;
    wc = ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "FETCH_ADD") == 0,
               "op: expected FETCH_ADD, "
               "got %s",
               wc.op);
    CT_EQ(t, "FETCH_ADD byte_len", 8, wc.len);
    wc = ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "CMP_SWAP") == 0,
               "op: expected CMP_SWAP, "
               "got %s",
               wc.op);
    CT_EQ(t, "CMP_SWAP byte_len", 8, wc.len);
    ct_mr_read(t, &mr, 8, got, 8);
    CT_REQUIRE(t,
               ct_get64(got, 0) == 0xa1a2a3a4a5a6a7a8ull ||
                   ct_get64(got, 1) == 0xa1a2a3a4a5a6a7a8ull,
               "FETCH_ADD result in the local buffer: expected "
               "0xa1a2a3a4a5a6a7a8 in either byte order, got LE 0x%016llx",
               (unsigned long long)ct_get64(got, 0));
    ct_mr_read(t, &mr, 16, got, 8);
    CT_REQUIRE(t, ct_get64(got, 0) == 0x1111 || ct_get64(got, 1) == 0x1111,
               "CMP_SWAP result in the local buffer: expected 0x1111");
}
