/*
 * cases_streams.c - semantics.md section 8, streams: the STREAMS
 * extension and the negotiated count (SEM-31), refusal of streams the
 * connection does not carry (SEM-30, SEM-32), per-stream MSN on the wire
 * (SEM-33), no head-of-line blocking across streams on either side
 * (SEM-34, SEM-36) and per-stream RNR (SEM-37).  Each case needs an agent
 * with QP_CREATE max_streams= and the stream= options (AGENT-20..22);
 * without them it is skipped.
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

/* A tester-side SEND of len bytes (one packet) on stream st at PSN psn,
 * with that stream's MSN and RSN. */
static void st_send_pkt(struct ct_conn *c, struct mrw_pkt *p, uint16_t st,
                        uint32_t msn, uint32_t rsn, uint32_t psn,
                        const uint8_t *data, uint32_t len)
{
    ct_pkt_req(c, p, MROCE_OP_SEND);
    p->base.psn = psn;
    if (st)
        p->base.flags |= MROCE_F_STREAM;
    p->u.rq.req.stream = st;
    p->u.rq.req.msn = msn;
    p->u.rq.req.rsn = rsn;
    p->u.rq.req.msg_len = len;
    p->payload = data;
    p->payload_len = len;
}

/* Tester as requester towards an IUT QP of `iut` streams, stating `ours`
 * (0: no extension). */
static struct ct_conn *st_connect(struct ct *t, unsigned iut, unsigned ours)
{
    char opts[64];
    snprintf(opts, sizeof(opts), "max_streams=%u", iut);
    struct ct_conn *c = ct_conn_new(t, opts);
    c->par.max_streams = (uint16_t)ours;
    ct_conn_connect(c);
    return c;
}

CT_CASE(streams_ext_only_above_one, "SEM-31",
        "an IUT QP of max_streams 1 sends no STREAMS extension; one of 8 "
        "states 8 in its CONNECT_RESP")
{
    struct ct_conn *c = st_connect(t, 1, 4);
    CT_EQ(t, "STREAMS of a 1-stream QP (absent)", 0, c->apar.max_streams);
    struct ct_conn *d = st_connect(t, 8, 4);
    CT_EQ(t, "STREAMS Max Streams of an 8-stream QP", 8, d->apar.max_streams);
}

CT_CASE(streams_min_of_both, "SEM-31 SEM-30",
        "IUT QP of 8 streams, tester states 2: POST_SEND on stream 2 is "
        "refused (EINVAL), on stream 1 accepted and sent with STREAM 1")
{
    struct ct_conn *c = st_connect(t, 8, 2);
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    const char *r = ct_agent_try(t,
                                 "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 "
                                 "len=64 raddr=4096 rkey=1 stream=2",
                                 c->aqp, mr.id);
    CT_REQUIRE(t, strncmp(r, "ERR EINVAL", 10) == 0,
               "stream 2 on a connection of 2 streams: expected ERR EINVAL, "
               "got \"%.80s\"",
               r);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=64 raddr=4096 "
             "rkey=1 stream=1",
             c->aqp, mr.id);
    const struct ct_rx *rx = ct_rl_expect_data(c, 1, RL_WAIT, NULL);
    CT_EQ(t, "opcode", MROCE_OP_WRITE, rx->p.base.opcode);
    CT_REQUIRE(t, rx->p.base.flags & MROCE_F_STREAM,
               "a WRITE of stream 1 without STREAM (SEM-32)");
    CT_EQ(t, "Stream ID", 1, rx->p.u.rq.req.stream);
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", RL_WAIT);
}

CT_CASE(streams_unnegotiated_dropped, "SEM-32",
        "IUT QP of one stream, a receive posted: a SEND with STREAM (stream "
        "1) is dropped: no receive completes and no ACK covers it; the same "
        "SEND without STREAM is then placed")
{
    struct ct_conn *c = st_connect(t, 1, 0);
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct mrw_pkt p;
    uint8_t d[64];
    uint32_t psn = c->snd_nxt;

    ct_pattern(d, sizeof(d), 81);
    ct_post_recv(t, c->aqp, 7, &mr, 0, 64);
    st_send_pkt(c, &p, 1, 0, 0, psn, d, sizeof(d));
    ct_send(c, &p);
    ct_expect_no_wc(t, c->aqp, "recv", 200);
    const struct ct_rx *rx = ct_rl_next(c, CT_QUIET);
    if (rx && rx->p.base.opcode == MROCE_OP_ACK)
        CT_REQUIRE(t, !ct_ack_covers(&rx->p, psn),
                   "the IUT acknowledged a STREAM packet it did not "
                   "negotiate");
    st_send_pkt(c, &p, 0, 0, 0, psn, d, sizeof(d));
    ct_send(c, &p);
    c->snd_nxt = psn + 1;
    ct_expect_wc(t, c->aqp, "recv", 7, "SUCCESS", RL_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

CT_CASE(streams_msn_per_stream, "SEM-33 SEM-32",
        "IUT posts WRITEs on streams 2, 0, 2: their MSNs are 0, 0, 1 and "
        "only the stream-2 packets carry STREAM")
{
    struct ct_conn *c = st_connect(t, 4, 4);
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    static const unsigned st[3] = {2, 0, 2}, msn[3] = {0, 0, 1};
    struct ct_rl_pkt pk[3];

    for (int i = 0; i < 3; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=32 "
                 "raddr=4096 rkey=1 stream=%u",
                 c->aqp, 10 + i, mr.id, st[i]);
    ct_rl_take_new(c, c->astart, pk, 3, RL_WAIT);
    for (int i = 0; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof(what), "WR %d Stream ID", i);
        CT_EQ(t, what, st[i], pk[i].p.u.rq.req.stream);
        snprintf(what, sizeof(what), "WR %d STREAM flag", i);
        CT_EQ(t, what, st[i] ? 1 : 0,
              (pk[i].p.base.flags & MROCE_F_STREAM) != 0);
        snprintf(what, sizeof(what), "WR %d MSN (per stream)", i);
        CT_EQ(t, what, msn[i], pk[i].p.u.rq.req.msn);
    }
}

CT_CASE(streams_recv_no_hol, "SEM-34 SEM-33 SEM-36",
        "receives on streams 1 and 2; the SEND of stream 1 (PSN p) is held "
        "back and that of stream 2 (p+1) sent: stream 2's receive completes "
        "at once; then p: stream 1's completes")
{
    struct ct_conn *c = st_connect(t, 4, 4);
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct mrw_pkt a, b;
    uint8_t da[100], db[200];
    uint32_t p = c->snd_nxt;

    ct_pattern(da, sizeof(da), 91);
    ct_pattern(db, sizeof(db), 92);
    ct_agent(t, "POST_RECV qp=%d wrid=1 mr=%d off=0 len=512 stream=1", c->aqp,
             mr.id);
    ct_agent(t, "POST_RECV qp=%d wrid=2 mr=%d off=1024 len=512 stream=2",
             c->aqp, mr.id);
    st_send_pkt(c, &a, 1, 0, 0, p, da, sizeof(da));
    st_send_pkt(c, &b, 2, 0, 0, p + 1, db, sizeof(db));
    c->snd_nxt = p + 2;
    ct_send(c, &b);
    struct ct_wc wc = ct_expect_wc(t, c->aqp, "recv", 2, "SUCCESS", RL_WAIT);
    CT_EQ(t, "stream 2 receive length", sizeof(db), wc.len);
    CT_EQ(t, "POLL stream=", 2, wc.stream);
    ct_expect_mem(t, &mr, 1024, db, sizeof(db));
    ct_expect_no_wc(t, c->aqp, "recv", CT_QUIET);
    ct_send(c, &a);
    wc = ct_expect_wc(t, c->aqp, "recv", 1, "SUCCESS", RL_WAIT);
    CT_EQ(t, "stream 1 receive length", sizeof(da), wc.len);
    CT_EQ(t, "POLL stream=", 1, wc.stream);
    ct_expect_mem(t, &mr, 0, da, sizeof(da));
}

CT_CASE(streams_send_no_hol, "SEM-34 SEM-33",
        "IUT WRITEs on stream 1 (PSN s) then stream 2 (s+1); our ACK has "
        "Cum s and SACKs s+1: stream 2's WR completes, stream 1's not; "
        "then Cum s+2: it does")
{
    struct ct_conn *c = st_connect(t, 4, 4);
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt pk[2];
    uint32_t s = c->astart, sack = 1;

    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=32 raddr=4096 "
             "rkey=1 stream=1",
             c->aqp, mr.id);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=32 raddr=4096 "
             "rkey=1 stream=2",
             c->aqp, mr.id);
    ct_rl_take_new(c, s, pk, 2, RL_WAIT);
    CT_EQ(t, "second WRITE's stream", 2, pk[1].p.u.rq.req.stream);
    ct_rl_send_ack(c, s, &sack, 1, &pk[1].p, 0);
    struct ct_wc wc = ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", RL_WAIT);
    CT_EQ(t, "POLL stream=", 2, wc.stream);
    ct_expect_no_wc(t, c->aqp, "send", CT_QUIET);
    ct_rl_send_ack(c, s + 2, NULL, 0, &pk[0].p, MROCE_ECHO_DUP);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
}

CT_CASE(streams_rnr_per_stream, "SEM-37 SEM-34",
        "no receive on stream 1, one on stream 2: a SEND of stream 1 gets "
        "an RNR NAK naming stream 1; the next SEND, of stream 2, is placed "
        "and completes meanwhile")
{
    struct ct_conn *c = st_connect(t, 4, 4);
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct mrw_pkt a, b;
    uint8_t da[64], db[64];
    uint32_t p = c->snd_nxt;
    const struct ct_rx *rx;

    ct_pattern(da, sizeof(da), 93);
    ct_pattern(db, sizeof(db), 94);
    ct_agent(t, "POST_RECV qp=%d wrid=2 mr=%d off=0 len=64 stream=2", c->aqp,
             mr.id);
    st_send_pkt(c, &a, 1, 0, 0, p, da, sizeof(da));
    st_send_pkt(c, &b, 2, 0, 0, p + 1, db, sizeof(db));
    c->snd_nxt = p + 2;
    ct_send(c, &a);
    rx = ct_expect_op(c, MROCE_OP_NAK, 1, RL_WAIT);
    CT_EQ(t, "NAK code", MROCE_NAK_RNR, rx->p.u.nak.code);
    CT_EQ(t, "NAK PSN", p, rx->p.u.nak.nak_psn);
    CT_EQ(t, "NAK Stream", 1, rx->p.u.nak.stream);
    ct_send(c, &b);
    ct_expect_wc(t, c->aqp, "recv", 2, "SUCCESS", RL_WAIT);
    ct_expect_mem(t, &mr, 0, db, sizeof(db));
}
