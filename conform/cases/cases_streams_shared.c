/*
 * cases_streams_shared.c - semantics.md section 8, what the streams of a
 * connection share: READ and atomic responses matched by (stream, MSN) and
 * executed after their own stream's earlier messages only (SEM-35),
 * streams opened by first use (SEM-38), duplicate detection per connection
 * by PSN (SEM-39), receive slots free at once (SEM-40) and placement
 * records that no refused message and no single stream holds (SEM-41).
 * Each case needs an agent with QP_CREATE max_streams= and the stream=
 * options (AGENT-20..22), the receive slot case also max_recv_wr=
 * (AGENT-27); without them it is skipped.
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

/* Tester as requester towards an IUT QP of 4 streams (QP_CREATE opts
 * added), stating 4 itself. */
static struct ct_conn *sh_connect(struct ct *t, const char *more)
{
    char opts[96];
    snprintf(opts, sizeof(opts), "max_streams=4%s%s", more[0] ? " " : "", more);
    struct ct_conn *c = ct_conn_new(t, opts);
    c->par.max_streams = 4;
    ct_conn_connect(c);
    return c;
}

/* Puts request p on stream st (STREAM set for st > 0) with MSN msn and
 * PSN psn. */
static void sh_on(struct mrw_pkt *p, uint16_t st, uint32_t msn, uint32_t psn)
{
    p->base.psn = psn;
    p->base.flags &= (uint16_t)~MROCE_F_STREAM;
    if (st)
        p->base.flags |= MROCE_F_STREAM;
    p->u.rq.req.stream = st;
    p->u.rq.req.msn = msn;
}

/* A one-packet SEND of len bytes on stream st: MSN msn, RSN rsn, PSN
 * psn, ACK_REQ. */
static void sh_send(struct ct_conn *c, struct mrw_pkt *p, uint16_t st,
                    uint32_t msn, uint32_t rsn, uint32_t psn,
                    const uint8_t *data, uint32_t len)
{
    ct_pkt_req(c, p, MROCE_OP_SEND);
    sh_on(p, st, msn, psn);
    p->u.rq.req.rsn = rsn;
    p->u.rq.req.msg_len = len;
    p->payload = data;
    p->payload_len = len;
}

/* A one-packet WRITE of len bytes into mr at off on stream st: MSN msn,
 * PSN psn, flags added to FIRST|LAST. */
static void sh_write(struct ct_conn *c, struct mrw_pkt *p,
                     const struct ct_mr *mr, uint32_t off, uint16_t st,
                     uint32_t msn, uint32_t psn, const uint8_t *data,
                     uint32_t len, uint16_t flags)
{
    ct_rl_write_pkt(c, p, mr, off, data, len, psn, flags);
    sh_on(p, st, msn, psn);
}

/* The IUT's response (READ_RESP or ATOMIC_RESP) to (stream, msn), within
 * wait_ms: ACKs, NAKs and the IUT's other data packets are skipped, among
 * them retransmissions of responses already seen (the IUT's RTO may fire
 * before our ACK arrives).  Saved into *out. */
static void sh_expect_resp(struct ct_conn *c, uint16_t st, uint32_t msn,
                           int wait_ms, struct ct_rl_pkt *out)
{
    struct ct *t = c->t;
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, wait_ms) * 1000000u;

    for (;;) {
        uint64_t now = ct_now_ns();
        const struct ct_rx *rx =
            now < end ? ct_rl_next(c, (int)((end - now) / 1000000u) + 1) : NULL;
        if (!rx)
            ct_fail(t,
                    "no response to the request of stream %u MSN %u within "
                    "%d ms",
                    st, msn, ct_ms(t, wait_ms));
        uint8_t op = rx->p.base.opcode;
        if ((op == MROCE_OP_READ_RESP || op == MROCE_OP_ATOMIC_RESP) &&
            rx->p.u.resp.stream == st && rx->p.u.resp.req_msn == msn) {
            ct_rl_save(rx, out);
            return;
        }
        ct_log(t, "skipped %s", ct_describe(t, rx));
    }
}

/* For wait_ms no response to (stream, msn) may come; everything else is
 * accepted. */
static void sh_no_resp(struct ct_conn *c, uint16_t st, uint32_t msn,
                       int wait_ms, const char *why)
{
    struct ct *t = c->t;
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, wait_ms) * 1000000u;

    for (uint64_t now; (now = ct_now_ns()) < end;) {
        const struct ct_rx *rx = ct_rl_next(c,
                                            (int)((end - now) / 1000000u) + 1);
        if (!rx)
            return;
        uint8_t op = rx->p.base.opcode;
        if ((op == MROCE_OP_READ_RESP || op == MROCE_OP_ATOMIC_RESP) &&
            rx->p.u.resp.stream == st && rx->p.u.resp.req_msn == msn)
            ct_fail(t, "%s: %s", why, ct_describe(t, rx));
    }
}

/* An ACK of the IUT that reports psn received, within wait_ms; NAKs, ACKs
 * that do not and the IUT's data packets (retransmissions of responses
 * among them) are skipped, any other packet fails. */
static void sh_expect_covered(struct ct_conn *c, uint32_t psn, int wait_ms,
                              const char *why)
{
    struct ct *t = c->t;
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, wait_ms) * 1000000u;

    for (;;) {
        uint64_t now = ct_now_ns();
        const struct ct_rx *rx =
            now < end ? ct_rl_next(c, (int)((end - now) / 1000000u) + 1) : NULL;
        if (!rx)
            ct_fail(t, "no ACK reports PSN %u within %d ms: %s", psn,
                    ct_ms(t, wait_ms), why);
        if (rx->p.base.opcode == MROCE_OP_ACK && ct_ack_covers(&rx->p, psn))
            return;
        CT_REQUIRE(t,
                   rx->p.base.opcode == MROCE_OP_ACK ||
                       rx->p.base.opcode == MROCE_OP_NAK ||
                       mrw_opcode_has_psn(rx->p.base.opcode),
                   "waiting for the ACK of PSN %u, got %s", psn,
                   ct_describe(t, rx));
    }
}

CT_CASE(streams_resp_by_stream_msn, "SEM-35",
        "IUT READs of 64 bytes on streams 1 and 2 (both MSN 0): a READ_RESP "
        "naming stream 3 MSN 0 is dropped; stream 2's completes the stream-2 "
        "READ with its data and not the other; then stream 1's")
{
    struct ct_conn *c = sh_connect(t, "");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x5a);
    struct ct_rl_pkt pk[2];
    struct mrw_pkt r;
    uint8_t d1[64], d2[64], d3[64];
    uint32_t psn = c->snd_nxt;

    ct_pattern(d1, sizeof(d1), 101);
    ct_pattern(d2, sizeof(d2), 102);
    ct_pattern(d3, sizeof(d3), 103);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=READ mr=%d off=0 len=64 raddr=0x1000 "
             "rkey=1 stream=1",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=READ mr=%d off=1024 len=64 "
             "raddr=0x2000 rkey=1 stream=2",
             c->aqp, mr.id);
    ct_rl_take_new(c, c->astart, pk, 2, RL_WAIT);
    for (int i = 0; i < 2; i++) {
        CT_EQ(t, "READ_REQ opcode", MROCE_OP_READ_REQ, pk[i].p.base.opcode);
        CT_EQ(t, "READ_REQ Stream ID", i + 1, pk[i].p.u.rq.req.stream);
        CT_EQ(t, "READ_REQ MSN (per stream)", 0, pk[i].p.u.rq.req.msn);
    }
    /* Stream 3 has no READ: the MSN alone names the stream-1 READ. */
    ct_rl_resp_pkt(c, &r, MROCE_OP_READ_RESP, psn, 0, 64, 0, d3, 64,
                   MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_ACK_REQ);
    r.u.resp.stream = 3;
    ct_send(c, &r);
    ct_expect_no_wc(t, c->aqp, "send", CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 64, 0x5a);
    ct_expect_mem_fill(t, &mr, 1024, 64, 0x5a);
    /* The same PSN again, now for the stream-2 READ. */
    ct_rl_resp_pkt(c, &r, MROCE_OP_READ_RESP, psn, 0, 64, 0, d2, 64,
                   MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_ACK_REQ);
    r.u.resp.stream = 2;
    ct_send(c, &r);
    struct ct_wc wc = ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", RL_WAIT);
    CT_EQ(t, "POLL stream=", 2, wc.stream);
    ct_expect_mem(t, &mr, 1024, d2, sizeof(d2));
    ct_expect_mem_fill(t, &mr, 0, 64, 0x5a);
    ct_expect_no_wc(t, c->aqp, "send", CT_QUIET);
    ct_rl_resp_pkt(c, &r, MROCE_OP_READ_RESP, psn + 1, 0, 64, 0, d1, 64,
                   MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_ACK_REQ);
    r.u.resp.stream = 1;
    ct_send(c, &r);
    c->snd_nxt = psn + 2;
    wc = ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    CT_EQ(t, "POLL stream=", 1, wc.stream);
    ct_expect_mem(t, &mr, 0, d1, sizeof(d1));
}

CT_CASE(streams_read_atomic_own_stream, "SEM-35 SEM-34 SEM-26",
        "stream 1's WRITE at PSN p held back: a READ of stream 2 (p+1) and "
        "a FETCH_ADD of stream 3 (p+2) are answered at once, naming their "
        "streams; a READ of stream 2 behind its own missing WRITE waits for "
        "it and returns its data")
{
    struct ct_conn *c = sh_connect(t, "");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw,rr,ra", 0);
    struct mrw_pkt w1, rd, fa, w2, rd2;
    struct ct_rl_pkt resp;
    uint8_t src[64], dw1[64], dw2[64];
    uint32_t p = c->snd_nxt;

    ct_pattern(src, sizeof(src), 111);
    ct_pattern(dw1, sizeof(dw1), 112);
    ct_pattern(dw2, sizeof(dw2), 113);
    ct_mr_write(t, &mr, 0, src, sizeof(src));
    sh_write(c, &w1, &mr, 3072, 1, 0, p, dw1, sizeof(dw1), MROCE_F_ACK_REQ);
    ct_pkt_read(c, &rd, &mr, 0, 64);
    sh_on(&rd, 2, 0, p + 1);
    ct_pkt_atomic(c, &fa, MROCE_OP_FETCH_ADD, &mr, 2048, 5, 0);
    sh_on(&fa, 3, 0, p + 2);
    ct_send(c, &rd);
    ct_send(c, &fa);
    sh_expect_resp(c, 2, 0, RL_WAIT, &resp);
    CT_EQ(t, "READ_RESP Msg Len", 64, resp.p.u.resp.msg_len);
    CT_EQ(t, "READ_RESP payload length", 64, resp.p.payload_len);
    CT_REQUIRE(t, memcmp(resp.p.payload, src, 64) == 0,
               "the READ_RESP of stream 2 does not carry the region's bytes");
    sh_expect_resp(c, 3, 0, RL_WAIT, &resp);
    CT_EQ(t, "ATOMIC_RESP opcode", MROCE_OP_ATOMIC_RESP, resp.p.base.opcode);
    CT_EQ(t, "ATOMIC_RESP original value", 0, ct_get64(resp.p.payload, 1));
    ch_expect_word(t, &mr, 2048, 5);
    /* Stream 2 now: its WRITE (MSN 1, p+3) held back, a READ of its
     * target (MSN 2, p+4) must wait for it. */
    sh_write(c, &w2, &mr, 512, 2, 1, p + 3, dw2, sizeof(dw2), MROCE_F_ACK_REQ);
    ct_pkt_read(c, &rd2, &mr, 512, 64);
    sh_on(&rd2, 2, 2, p + 4);
    ct_send(c, &rd2);
    sh_no_resp(c, 2, 2, CT_QUIET,
               "a READ answered before the WRITE of its stream posted "
               "before it arrived");
    ct_send(c, &w2);
    sh_expect_resp(c, 2, 2, RL_WAIT, &resp);
    CT_EQ(t, "READ_RESP payload length", 64, resp.p.payload_len);
    CT_REQUIRE(t, memcmp(resp.p.payload, dw2, 64) == 0,
               "the READ of stream 2 does not see the earlier WRITE of its "
               "stream (SEM-26 per stream)");
    ct_send(c, &w1);
    c->snd_nxt = p + 5;
    sh_expect_covered(c, p, RL_WAIT, "stream 1's WRITE");
    ct_expect_mem(t, &mr, 3072, dw1, sizeof(dw1));
}

CT_CASE(streams_open_on_first_use, "SEM-38 SEM-33",
        "right after the handshake, an IUT QP of 8 streams sends WRITEs on "
        "streams 7..0 as its first packets, each with MSN 0 (no control "
        "packet opens a stream), and places our first SEND of stream 6")
{
    struct ct_conn *c = ct_conn_new(t, "max_streams=8");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt pk[8];
    struct mrw_pkt s;
    uint8_t d[48];

    c->par.max_streams = 8;
    ct_conn_connect(c);
    ct_pattern(d, sizeof(d), 121);
    for (int i = 0; i < 8; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=32 "
                 "raddr=4096 rkey=1 stream=%d",
                 c->aqp, 10 + i, mr.id, 7 - i);
    ct_rl_take_new(c, c->astart, pk, 8, RL_WAIT);
    for (int i = 0; i < 8; i++) {
        char what[64];
        snprintf(what, sizeof(what), "packet %d opcode", i);
        CT_EQ(t, what, MROCE_OP_WRITE, pk[i].p.base.opcode);
        snprintf(what, sizeof(what), "packet %d Stream ID", i);
        CT_EQ(t, what, 7 - i, pk[i].p.u.rq.req.stream);
        snprintf(what, sizeof(what), "packet %d MSN", i);
        CT_EQ(t, what, 0, pk[i].p.u.rq.req.msn);
    }
    for (int i = 0; i < 8; i++)
        ct_expect_wc(t, c->aqp, "send", 10 + (uint64_t)i, "SUCCESS", RL_WAIT);
    ct_agent(t, "POST_RECV qp=%d wrid=1 mr=%d off=1024 len=64 stream=6", c->aqp,
             mr.id);
    sh_send(c, &s, 6, 0, 0, c->snd_nxt, d, sizeof(d));
    ct_send(c, &s);
    c->snd_nxt++;
    struct ct_wc wc = ct_expect_wc(t, c->aqp, "recv", 1, "SUCCESS", RL_WAIT);
    CT_EQ(t, "POLL stream=", 6, wc.stream);
    CT_EQ(t, "receive length", sizeof(d), wc.len);
    ct_expect_mem(t, &mr, 1024, d, sizeof(d));
}

CT_CASE(streams_dup_psn_other_stream, "SEM-39 REL-8",
        "a SEND of stream 1 at PSN p is placed; PSN p again as a SEND of "
        "stream 2 and as a WRITE of stream 3 (both their MSN 0) is a "
        "duplicate: nothing placed, stream 2's receive still free; then "
        "stream 2's SEND at p+1 fills it")
{
    struct ct_conn *c = sh_connect(t, "");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct mrw_pkt a, b, w, b2;
    uint8_t da[64], db[64], dw[64], dc[64];
    uint32_t p = c->snd_nxt;

    ct_pattern(da, sizeof(da), 131);
    ct_pattern(db, sizeof(db), 132);
    ct_pattern(dw, sizeof(dw), 133);
    ct_pattern(dc, sizeof(dc), 134);
    ct_agent(t, "POST_RECV qp=%d wrid=1 mr=%d off=0 len=64 stream=1", c->aqp,
             mr.id);
    ct_agent(t, "POST_RECV qp=%d wrid=2 mr=%d off=1024 len=64 stream=2", c->aqp,
             mr.id);
    sh_send(c, &a, 1, 0, 0, p, da, sizeof(da));
    ct_send(c, &a);
    ct_expect_wc(t, c->aqp, "recv", 1, "SUCCESS", RL_WAIT);
    sh_send(c, &b, 2, 0, 0, p, db, sizeof(db));
    ct_send(c, &b);
    sh_write(c, &w, &mr, 2048, 3, 0, p, dw, sizeof(dw), MROCE_F_ACK_REQ);
    ct_send(c, &w);
    ct_expect_no_wc(t, c->aqp, "recv", CT_QUIET);
    ct_expect_mem_fill(t, &mr, 1024, 64, 0);
    ct_expect_mem_fill(t, &mr, 2048, 64, 0);
    ct_expect_mem(t, &mr, 0, da, sizeof(da));
    sh_send(c, &b2, 2, 0, 0, p + 1, dc, sizeof(dc));
    ct_send(c, &b2);
    c->snd_nxt = p + 2;
    struct ct_wc wc = ct_expect_wc(t, c->aqp, "recv", 2, "SUCCESS", RL_WAIT);
    CT_EQ(t, "POLL stream=", 2, wc.stream);
    ct_expect_mem(t, &mr, 1024, dc, sizeof(dc));
}

CT_CASE(streams_recv_slot_reused, "SEM-40 SEM-36",
        "receive queue of depth 4: 3 receives left on stream 1, 1 on stream "
        "2; once stream 2's completes, a new receive on stream 2 is "
        "accepted (4 posted) and filled; stream 1's still work")
{
    struct ct_conn *c = sh_connect(t, "max_recv_wr=4");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct mrw_pkt s;
    uint8_t d[3][64];
    const char *r;

    for (int i = 0; i < 3; i++)
        ct_pattern(d[i], sizeof(d[i]), 141 + (unsigned)i);
    for (int i = 0; i < 3; i++)
        ct_agent(t, "POST_RECV qp=%d wrid=%d mr=%d off=%d len=64 stream=1",
                 c->aqp, 11 + i, mr.id, 64 * i);
    ct_agent(t, "POST_RECV qp=%d wrid=21 mr=%d off=1024 len=64 stream=2",
             c->aqp, mr.id);
    sh_send(c, &s, 2, 0, 0, c->snd_nxt, d[0], 64);
    ct_send(c, &s);
    c->snd_nxt++;
    ct_expect_wc(t, c->aqp, "recv", 21, "SUCCESS", RL_WAIT);
    r = ct_agent_try(t,
                     "POST_RECV qp=%d wrid=22 mr=%d off=2048 len=64 stream=2",
                     c->aqp, mr.id);
    CT_REQUIRE(t, strncmp(r, "OK", 2) == 0,
               "a receive on stream 2 with 3 of 4 slots posted (stream 1's) "
               "was refused: \"%.80s\" (a completed slot must be reusable "
               "at once)",
               r);
    sh_send(c, &s, 2, 1, 1, c->snd_nxt, d[1], 64);
    ct_send(c, &s);
    c->snd_nxt++;
    struct ct_wc wc = ct_expect_wc(t, c->aqp, "recv", 22, "SUCCESS", RL_WAIT);
    CT_EQ(t, "POLL stream=", 2, wc.stream);
    ct_expect_mem(t, &mr, 2048, d[1], 64);
    sh_send(c, &s, 1, 0, 0, c->snd_nxt, d[2], 64);
    ct_send(c, &s);
    c->snd_nxt++;
    wc = ct_expect_wc(t, c->aqp, "recv", 11, "SUCCESS", RL_WAIT);
    CT_EQ(t, "POLL stream=", 1, wc.stream);
    ct_expect_mem(t, &mr, 0, d[2], 64);
}

/* Messages a case sends ahead of a missing one: more than the whole
 * placement pool of a small implementation, fewer than a receive window
 * (the smallest, 64, AGENT-9) of PSNs. */
#define SH_AHEAD 48

CT_CASE(streams_rnr_holds_nothing, "SEM-41",
        "stream 1's WRITE at p held back, then 48 SENDs of stream 1 with no "
        "receive posted (each refused, RNR): a WRITE of stream 1 after them "
        "is still placed and acknowledged")
{
    struct ct_conn *c = sh_connect(t, "");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct mrw_pkt w, s;
    uint8_t d0[64], ds[32], dw[64];
    uint32_t p = c->snd_nxt, last = p + SH_AHEAD + 1;

    ct_pattern(d0, sizeof(d0), 151);
    ct_pattern(ds, sizeof(ds), 152);
    ct_pattern(dw, sizeof(dw), 153);
    for (uint32_t i = 1; i <= SH_AHEAD; i++) {
        sh_send(c, &s, 1, i, i - 1, p + i, ds, sizeof(ds));
        ct_send(c, &s);
    }
    sh_write(c, &w, &mr, 1024, 1, SH_AHEAD + 1, last, dw, sizeof(dw),
             MROCE_F_ACK_REQ);
    ct_send(c, &w);
    sh_expect_covered(c, last, RL_WAIT,
                      "the WRITE after the refused SENDs was not placed (a "
                      "refused message holds no placement state)");
    ct_expect_mem(t, &mr, 1024, dw, sizeof(dw));
    sh_write(c, &w, &mr, 0, 1, 0, p, d0, sizeof(d0), MROCE_F_ACK_REQ);
    ct_send(c, &w);
    sh_expect_covered(c, p, RL_WAIT, "stream 1's first WRITE");
    c->snd_nxt = last + 1;
}

CT_CASE(streams_pool_not_one_stream, "SEM-41 SEM-34",
        "stream 1's WRITE at p held back, then 48 more WRITEs of stream 1; "
        "stream 2's WRITE at p+49 held back, then one more of stream 2 at "
        "p+50: that one is placed and acknowledged")
{
    struct ct_conn *c = sh_connect(t, "");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct mrw_pkt w;
    uint8_t d1[64], dw[64];
    uint32_t p = c->snd_nxt, last = p + SH_AHEAD + 2;

    ct_pattern(d1, sizeof(d1), 161);
    ct_pattern(dw, sizeof(dw), 162);
    for (uint32_t i = 1; i <= SH_AHEAD; i++) {
        sh_write(c, &w, &mr, 0, 1, i, p + i, d1, sizeof(d1), 0);
        ct_send(c, &w);
    }
    sh_write(c, &w, &mr, 2048, 2, 1, last, dw, sizeof(dw), MROCE_F_ACK_REQ);
    ct_send(c, &w);
    sh_expect_covered(c, last, RL_WAIT,
                      "stream 2's WRITE was not placed after stream 1's "
                      "messages ahead of its hole (no stream may hold the "
                      "whole pool)");
    ct_expect_mem(t, &mr, 2048, dw, sizeof(dw));
    c->snd_nxt = last + 1;
}
