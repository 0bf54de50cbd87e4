/*
 * cases_ops_req.c - every operation with the IUT as requester
 * (semantics.md): the agent posts the work request, the tester answers.
 * What the IUT sends for each op (fields, MSNs, RSNs, immediates,
 * zero-length messages, multi-packet fields), READ responses and atomic
 * results placed, responses it must drop (SEM-9), each NAK code mapped to
 * its completion status with the QP in ERROR and later work flushed
 * (SEM-25, SEM-23), RNR and retry exhaustion, completion order, signaled
 * and unsignaled completions, FENCE, the peer's Max RD Atomic, and the
 * local checks at post time (SEM-27).
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

/* ---- the IUT as requester: what it sends, and the answers it gets ---- */

/* First transmissions only: skips retransmissions of PSNs already seen
 * (an unacknowledged packet may be resent while a case thinks). */
static const struct ct_rx *next_new_data(struct ct_conn *c, uint32_t *seen_hi,
                                         int *any)
{
    for (;;) {
        const struct ct_rx *rx = ct_expect_data(c, CT_WAIT);
        if (*any && mrw_psn_diff(rx->p.base.psn, *seen_hi) <= 0)
            continue;
        CT_REQUIRE(c->t, !(rx->p.base.flags & MROCE_F_RETX),
                   "first transmission of PSN %u carries RETX", rx->p.base.psn);
        *seen_hi = rx->p.base.psn;
        *any = 1;
        return rx;
    }
}

/* A READ_RESP or ATOMIC_RESP from the tester at its next PSN. */
static void send_resp(struct ct_conn *c, uint8_t op, uint32_t req_msn,
                      uint32_t msg_len, uint32_t off, const uint8_t *pay,
                      uint32_t n, uint32_t psn)
{
    struct mrw_pkt r;

    ct_pkt_ctl(c, &r, op);
    r.base.psn = psn;
    r.base.flags = (off == 0 ? MROCE_F_FIRST : 0) |
                   (off + n == msg_len ? MROCE_F_LAST | MROCE_F_ACK_REQ : 0);
    r.u.resp.req_msn = req_msn;
    r.u.resp.msg_len = msg_len;
    r.u.resp.offset = off;
    r.payload = n ? pay : NULL;
    r.payload_len = n;
    ct_send(c, &r);
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
    send_resp(c, MROCE_OP_READ_RESP, 0, 2500, 2048, d + 2048, 452, first + 2);
    send_resp(c, MROCE_OP_READ_RESP, 0, 2500, 0, d, 1024, first);
    ct_expect_no_wc(t, c->aqp, "send", 20);
    send_resp(c, MROCE_OP_READ_RESP, 0, 2500, 1024, d + 1024, 1024, first + 1);
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
    send_resp(c, MROCE_OP_READ_RESP, 7, 64, 0, d, 64, psn);
    send_resp(c, MROCE_OP_READ_RESP, 0, 65, 0, d, 65, psn);
    send_resp(c, MROCE_OP_ATOMIC_RESP, 0, 8, 0, e, 8, psn);
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
    send_resp(c, MROCE_OP_READ_RESP, 0, 64, 0, d, 64, psn);
    c->snd_nxt = psn + 1;
    ct_expect_wc(t, c->aqp, "send", 7, "SUCCESS", CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, 64);
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
    rx = next_new_data(c, &hi, &any);
    a = rx->p;
    rx = next_new_data(c, &hi, &any);
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
    send_resp(c, MROCE_OP_ATOMIC_RESP, b.u.rq.req.msn, 8, 0, o2, 8, psn);
    ct_expect_no_wc(t, c->aqp, "send", 20);
    send_resp(c, MROCE_OP_ATOMIC_RESP, a.u.rq.req.msn, 8, 0, o1, 8, psn + 1);
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
        q[i] = next_new_data(c, &hi, &any)->p;
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
    CT_REQUIRE(
        t, (q[2].base.flags & MROCE_F_IMM) && q[2].u.rq.req.imm == 0xaabbccdd,
        "SEND_IMM: IMM flag or Immediate 0xaabbccdd missing");
    CT_REQUIRE(t, (q[4].base.flags & MROCE_F_IMM) && q[4].u.rq.req.imm == 7,
               "WRITE_IMM: IMM flag or Immediate 7 missing");
    CT_REQUIRE(
        t, !(q[0].base.flags & MROCE_F_IMM) && !(q[1].base.flags & MROCE_F_IMM),
        "IMM set on a SEND or WRITE without immediate");
    CT_EQ(t, "SEND opcode", MROCE_OP_SEND, q[2].base.opcode);
    CT_EQ(t, "WRITE_IMM opcode", MROCE_OP_WRITE, q[4].base.opcode);
    send_resp(c, MROCE_OP_READ_RESP, 3, 32, 0, rd, 32, c->snd_nxt);
    send_resp(c, MROCE_OP_ATOMIC_RESP, 5, 8, 0, r8, 8, c->snd_nxt + 1);
    c->snd_nxt += 2;
    for (int i = 0; i < 6; i++) {
        struct ct_wc wc =
            ct_expect_wc(t, c->aqp, "send", (uint64_t)i, "SUCCESS", CT_WAIT);
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
        const struct ct_rx *rx = next_new_data(c, &hi, &any);
        uint32_t n = i == 2 ? 452 : 1024;
        uint16_t fl =
            (i == 0 ? MROCE_F_FIRST : 0) | (i == 2 ? MROCE_F_LAST : 0);
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
        q[i] = next_new_data(c, &hi, &any)->p;
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

CT_CASE(ops_iut_rnr_retry_exceeded, "REL-30 SEM-25 SEM-23 CONN-20",
        "IUT's SEND NAKed RNR (delay 50 = 500 us) on every transmission, "
        "rnr_retry=2: each retransmission at least 500 us after the NAK, "
        "the third round fails it RNR_RETRY_EXC_ERR, the WRITE behind it "
        "WR_FLUSH_ERR, QP in ERROR, no further SEND")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "rnr_retry=2 min_rto_us=100000");
    const struct ct_rx *rx;
    uint32_t spsn = 0;
    int rounds = 0;
    uint64_t naked = 0;

    c->auto_ack = 0;
    ct_agent(t, "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=64", c->aqp,
             mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    while (rounds < 3) {
        uint64_t now;
        rx = ct_expect_data(c, CT_WAIT);
        if (rx->p.base.opcode != MROCE_OP_SEND ||
            (rx->p.base.flags & MROCE_F_PROBE))
            continue;
        now = ct_now_ns();
        if (rounds == 0)
            spsn = rx->p.base.psn;
        CT_EQ(t, "SEND PSN (a retransmission keeps it)", spsn, rx->p.base.psn);
        if (rounds > 0)
            CT_REQUIRE(t, now - naked >= 450000,
                       "SEND retransmitted %llu us after an RNR NAK with "
                       "RNR Delay 50 (500 us)",
                       (unsigned long long)(now - naked) / 1000);
        naked = ct_now_ns();
        ct_send_nak(c, spsn, rx->p.u.rq.req.msn, MROCE_NAK_RNR, 50, spsn);
        rounds++;
    }
    ct_expect_wc(t, c->aqp, "send", 1, "RNR_RETRY_EXC_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", 0);
    while ((rx = ct_recv(t, 0)) != NULL)
        ;
    ct_expect_silence(t, 20);
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
    q[0] = next_new_data(c, &hi, &any)->p;
    q[1] = next_new_data(c, &hi, &any)->p;
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
    send_resp(c, MROCE_OP_READ_RESP, rmsn, 16, 0, d, 16, c->snd_nxt);
    c->snd_nxt++;
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    for (;;) {
        rx = ct_expect_data(c, CT_WAIT);
        if (rx->p.base.opcode == MROCE_OP_WRITE)
            break;
    }
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
        q[i] = next_new_data(c, &hi, &any)->p;
    ct_send_nak(c, q[1].base.psn, q[1].u.rq.req.msn,
                MROCE_NAK_REMOTE_ACCESS_KEY, 0, q[0].base.psn);
    ct_expect_wc(t, c->aqp, "send", 1, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "REM_ACCESS_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 3, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_qp_state(t, c->aqp, "ERROR", 0);
}

CT_CASE(ops_iut_nak_cum_completes_earlier, "REL-28 SEM-23 SEM-25",
        "IUT's two WRITEs, no ACK; a NAK INVALID_REQUEST for the second "
        "whose Cum PSN covers the first: the first completes SUCCESS (the "
        "NAK's Cum PSN acknowledges it), the second REM_INV_REQ_ERR")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt q[2];
    uint32_t hi = 0;
    int any = 0;

    c->auto_ack = 0;
    for (int i = 1; i <= 2; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=64 "
                 "raddr=0x1000 rkey=0x99",
                 c->aqp, i, mr.id);
    for (int i = 0; i < 2; i++)
        q[i] = next_new_data(c, &hi, &any)->p;
    ct_send_nak(c, q[1].base.psn, q[1].u.rq.req.msn, MROCE_NAK_INVALID_REQUEST,
                0, q[1].base.psn);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    ct_expect_wc(t, c->aqp, "send", 2, "REM_INV_REQ_ERR", CT_WAIT);
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
        send_resp(c, MROCE_OP_READ_RESP, msn, 8, 0, d, 8, c->snd_nxt);
        c->snd_nxt++;
        ct_expect_wc(t, c->aqp, "send", (uint64_t)i, "SUCCESS", CT_WAIT);
    }
}

CT_CASE(ops_local_checks_at_post, "SEM-27 SEC-3 SEM-25",
        "posts whose local buffers fail the checks are refused with EACCESS "
        "and send nothing: a WRITE reaching past its region, a READ into a "
        "region without local write, a receive into one")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_mr ro = ct_mr_reg(t, 4096, "rr", 0);
    struct ct_conn *c = ct_accept(t, "");
    const char *r;

    r = ct_agent_try(t,
                     "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=4000 "
                     "len=200 raddr=0x100 rkey=1",
                     c->aqp, mr.id);
    CT_REQUIRE(t, strncmp(r, "ERR EACCESS", 11) == 0,
               "WRITE from beyond its region: expected ERR EACCESS, got "
               "\"%s\"",
               r);
    r = ct_agent_try(t,
                     "POST_SEND qp=%d wrid=2 op=READ mr=%d off=0 len=64 "
                     "raddr=0x100 rkey=1",
                     c->aqp, ro.id);
    CT_REQUIRE(t, strncmp(r, "ERR EACCESS", 11) == 0,
               "READ into a region without local write: expected ERR "
               "EACCESS, got \"%s\"",
               r);
    r = ct_agent_try(t, "POST_RECV qp=%d wrid=3 mr=%d off=0 len=64", c->aqp,
                     ro.id);
    CT_REQUIRE(t, strncmp(r, "ERR EACCESS", 11) == 0,
               "receive into a region without local write: expected ERR "
               "EACCESS, got \"%s\"",
               r);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_no_wc(t, c->aqp, "send", 0);
    ct_expect_no_wc(t, c->aqp, "recv", 0);
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
    send_resp(c, MROCE_OP_READ_RESP, rx->p.u.rq.req.msn, 0, 0, NULL, 0,
              c->snd_nxt);
    c->snd_nxt++;
    wc = ct_expect_wc(t, c->aqp, "send", 6, "SUCCESS", CT_WAIT);
    CT_EQ(t, "READ byte_len", 0, wc.len);
}

CT_CASE(ops_iut_rnr_retry_zero, "REL-30 SEM-25",
        "rnr_retry=0: the first RNR NAK for the IUT's SEND fails it at once "
        "with RNR_RETRY_EXC_ERR and the QP enters ERROR")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "rnr_retry=0 min_rto_us=100000");
    const struct ct_rx *rx;

    c->auto_ack = 0;
    ct_agent(t, "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=32", c->aqp,
             mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    ct_send_nak(c, rx->p.base.psn, rx->p.u.rq.req.msn, MROCE_NAK_RNR, 1,
                rx->p.base.psn);
    ct_expect_wc(t, c->aqp, "send", 1, "RNR_RETRY_EXC_ERR", CT_WAIT);
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

CT_CASE(ops_iut_rnr_holds_whole_message, "REL-30 REL-29 SEM-3",
        "IUT's 3-packet SEND; its first packet NAKed RNR (delay 100 = 1 "
        "ms): all three packets are resent (RETX, same PSNs), none before "
        "the delay; ACKed, the SEND completes SUCCESS")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "mtu=1024 min_rto_us=100000");
    struct mrw_pkt q[3];
    uint32_t hi = 0;
    int any = 0, seen = 0;
    uint64_t naked, end;

    c->auto_ack = 0;
    ct_agent(t, "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=3000", c->aqp,
             mr.id);
    for (int i = 0; i < 3; i++)
        q[i] = next_new_data(c, &hi, &any)->p;
    naked = ct_now_ns();
    ct_send_nak(c, q[0].base.psn, q[0].u.rq.req.msn, MROCE_NAK_RNR, 100,
                q[0].base.psn);
    end = naked + (uint64_t)ct_ms(t, CT_WAIT) * 1000000u;
    while (seen != 7) {
        const struct ct_rx *rx = ct_next(c, 10);
        uint32_t k;
        if (!rx || !mrw_opcode_has_psn(rx->p.base.opcode)) {
            CT_REQUIRE(t, ct_now_ns() < end,
                       "after the RNR NAK only packets 0x%x of the SEND "
                       "were resent within %d ms (REL-30: every "
                       "unacknowledged packet of the message)",
                       seen, ct_ms(t, CT_WAIT));
            continue;
        }
        k = rx->p.base.psn - q[0].base.psn;
        CT_REQUIRE(t, k < 3, "unexpected PSN %u", rx->p.base.psn);
        CT_REQUIRE(t, rx->p.base.flags & MROCE_F_RETX,
                   "resent packet %u without RETX", k);
        CT_REQUIRE(t, ct_now_ns() - naked >= 900000,
                   "packet %u resent %.2f ms after an RNR NAK with RNR "
                   "Delay 100 (1 ms)",
                   k, (ct_now_ns() - naked) / 1e6);
        seen |= 1 << k;
    }
    ct_send_ack(c, NULL);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
}
