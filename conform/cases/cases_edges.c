/*
 * cases_edges.c - the edges of rules that an implementer working from the
 * specification alone could get wrong: a zero-length access just past a
 * region's last byte (SEM-17), a CONNECT_REQ naming a QP that is not
 * listening (CONN-7), what a responder answers once it holds a fatal NAK
 * (REL-40), a data packet larger than the negotiated MTU (WIRE-31), and the
 * Max ACK Delay each side advertises and the other's loss timers use
 * (WIRE-21, LOSS-25).
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

/* p: a one-packet request of opcode op at c's next PSN (ct_pkt_req) to
 * raddr/rkey carrying len bytes of data (SEND: raddr and rkey 0). */
static void req_pkt(struct ct_conn *c, struct mrw_pkt *p, uint8_t op,
                    uint64_t raddr, uint32_t rkey, const uint8_t *data,
                    uint32_t len)
{
    ct_pkt_req(c, p, op);
    p->u.rq.req.raddr = raddr;
    p->u.rq.req.rkey = rkey;
    p->u.rq.req.msg_len = len;
    p->payload = len ? data : NULL;
    p->payload_len = len;
}

/* ---- SEM-17: zero-length ranges ---- */

CT_CASE(edge_zero_length_at_region_end, "SEM-17 SEM-4 SEM-8",
        "zero-length WRITE and READ_REQ at Remote Address = addr + len: "
        "ACKed / one empty READ_RESP; a zero-length WRITE at addr + len + "
        "1: NAK REMOTE_ACCESS_BOUNDS; the region unchanged")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw,rr", 0x5c);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;

    req_pkt(c, &p, MROCE_OP_WRITE, mr.addr + 4096, mr.rkey, NULL, 0);
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

    req_pkt(c, &p, MROCE_OP_WRITE, mr.addr + 4097, mr.rkey, NULL, 0);
    ct_send(c, &p);
    ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_BOUNDS, CT_WAIT);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x5c);
}

/* ---- CONN-7: a named QP that does not listen ---- */

/* Sends c's CONNECT_REQ naming dst_qpn from our MetaRoCE port. */
static void connect_req_to(struct ct_conn *c, uint32_t dst_qpn)
{
    struct mrw_pkt req;
    uint8_t buf[128];
    size_t n;

    ct_pkt_connect_req(c, &req);
    req.base.dst_qpn = dst_qpn;
    n = ct_encode(c->t, &req, buf, sizeof(buf));
    ct_send_raw(c->t, -1, buf, n, CT_ECN_ECT0);
}

CT_CASE(edge_connect_req_named_qp_not_listening, "CONN-7 CONN-2 SEC-7",
        "with a QP in LISTEN, CONNECT_REQs naming a QP in RESET and a "
        "connected QP (new Src QPN and token): no reply, drop_no_listener "
        "each, the listener stays in LISTEN; it then accepts a CONNECT_REQ "
        "naming it")
{
    struct ct_conn *l = ct_conn_new(t, "");
    struct ct_conn *x = ct_conn_new(t, "");
    struct ct_conn *y = ct_connect(t, "");
    struct ct_conn *z = ct_conn_new(t, "");
    int64_t before;

    ct_conn_listen(l);
    before = ct_rl_counter(t, l->aqp, "drop_no_listener");
    connect_req_to(x, x->aqpn);
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, l->aqp, "drop_no_listener", before, 1);
    ct_expect_qp_state(t, x->aqp, "RESET", 0);
    ct_expect_qp_state(t, l->aqp, "LISTEN", 0);

    /* z's Src QPN and token are not y's binding: not a retransmission. */
    before = ct_rl_counter(t, l->aqp, "drop_no_listener");
    connect_req_to(z, y->aqpn);
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, l->aqp, "drop_no_listener", before, 1);
    ct_expect_qp_state(t, y->aqp, "RTS", 0);
    ct_expect_qp_state(t, l->aqp, "LISTEN", 0);

    ct_conn_connect(l);
}

/* ---- REL-40: the held fatal NAK ---- */

CT_CASE(edge_held_fatal_nak_answers_later_refusals,
        "REL-40 REL-27 SEM-18 REL-22",
        "after a bad-RKey WRITE at PSN p is NAKed: a SEND with no receive "
        "(p+1) and an out-of-bounds WRITE (p+2) are each answered with "
        "p's NAK on the answered packet's entropy (not RNR, not BOUNDS, "
        "not silence); a valid WRITE (p+3) is placed and SACKed with Cum "
        "PSN p; p resent on another entropy gets its NAK again there")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt bad, p;
    const struct ct_rx *rx;
    uint8_t d[32];
    uint32_t psn0, msn0;
    int64_t rnr0;

    ct_pattern(d, sizeof(d), 70);
    rnr0 = ct_rl_counter(t, c->aqp, "rnr_naks_tx");
    req_pkt(c, &bad, MROCE_OP_WRITE, mr.addr, mr.rkey ^ 0x00ff0000, d,
            sizeof(d));
    ct_send(c, &bad);
    ct_consume(c, &bad);
    psn0 = bad.base.psn;
    msn0 = bad.u.rq.req.msn;
    ct_expect_nak(c, psn0, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);

    req_pkt(c, &p, MROCE_OP_SEND, 0, 0, d, sizeof(d));
    p.base.entropy = ct_entropy(t, 1 % ct_num_entropies(t));
    ct_send(c, &p);
    ct_consume(c, &p);
    rx = ct_expect_nak(c, psn0, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    CT_EQ(t, "held NAK's MSN (answering the SEND)", msn0, rx->p.u.nak.msn);
    CT_EQ(t, "held NAK's Cum PSN", psn0, rx->p.u.nak.cum_psn);
    CT_EQ(t, "held NAK's Entropy (the SEND's)", p.base.entropy,
          rx->p.base.entropy);

    req_pkt(c, &p, MROCE_OP_WRITE, mr.addr + 4096 - 8, mr.rkey, d, sizeof(d));
    ct_send(c, &p);
    ct_consume(c, &p);
    ct_expect_nak(c, psn0, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);

    req_pkt(c, &p, MROCE_OP_WRITE, mr.addr + 64, mr.rkey, d, sizeof(d));
    ct_send(c, &p);
    ct_consume(c, &p);
    for (;;) {
        rx = ct_expect_op(c, MROCE_OP_ACK, 0, CT_WAIT);
        if (ct_ack_covers(&rx->p, p.base.psn))
            break;
    }
    CT_EQ(t, "ACK Cum PSN (p is never marked)", psn0, rx->p.u.ack.cum_psn);
    ct_expect_mem(t, &mr, 64, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, 0, 64, 0);
    ct_expect_mem_fill(t, &mr, 4096 - 8, 8, 0);

    bad.base.flags |= MROCE_F_RETX;
    bad.base.entropy = ct_entropy(t, 2 % ct_num_entropies(t));
    ct_send(c, &bad);
    rx = ct_expect_nak(c, psn0, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    CT_EQ(t, "held NAK's Entropy (the retransmission's)", bad.base.entropy,
          rx->p.base.entropy);
    ct_rl_expect_counter(t, c->aqp, "rnr_naks_tx", rnr0, 0);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
}

/* ---- WIRE-31: payload above the negotiated MTU ---- */

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
    req_pkt(c, &p, MROCE_OP_WRITE, mr.addr, mr.rkey, d, (uint32_t)c->mtu + 1);
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

/* ---- WIRE-21, LOSS-25: Max ACK Delay ---- */

CT_CASE(edge_max_ack_delay_advertised, "WIRE-21 CONN-4 CONN-8 REL-19",
        "QPs created with max_ack_delay_us=2000 and 3000: the CONNECT_RESP "
        "and the CONNECT_REQ carry Max ACK Delay 2,000,000 and 3,000,000 ns")
{
    struct ct_conn *a = ct_connect(t, "max_ack_delay_us=2000");
    struct ct_conn *b = ct_accept(t, "max_ack_delay_us=3000");

    CT_EQ(t, "CONNECT_RESP Max ACK Delay (ns)", 2000000, a->apar.max_ack_delay);
    CT_EQ(t, "CONNECT_REQ Max ACK Delay (ns)", 3000000, b->apar.max_ack_delay);
}

CT_CASE(edge_pto_allows_peer_max_ack_delay, "LOSS-25 LOSS-9 LOSS-8",
        "the tester advertises Max ACK Delay 30 ms to an IUT requester "
        "(own max_ack_delay 10 us, min_rto 1 ms): after one acknowledged "
        "WRITE, an unacknowledged WRITE is not resent until 30 ms after it "
        "was sent (IUT TSvals), and is resent within 2 s")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "min_rto_us=1000 max_ack_delay_us=10");
    struct ct_rl_pkt first, again;
    uint32_t gap;

    c->par.max_ack_delay = 30000000;
    ct_conn_accept(c);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_expect_data(c, CT_WAIT); /* acknowledged at once: an RTT sample */
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    ct_rl_expect_data(c, 1, CT_WAIT, &first);
    ct_rl_expect_data(c, 1, 2000, &again);
    CT_EQ(t, "resent PSN", first.p.base.psn, again.p.base.psn);
    gap = ct_rl_ts_diff(first.p.base.tsval, again.p.base.tsval);
    CT_REQUIRE(t, gap >= 30000000u,
               "WRITE resent %u us after it was sent: its probe timeout "
               "must allow for the peer's Max ACK Delay of 30 ms (LOSS-25), "
               "not the IUT's own 10 us",
               gap / 1000);
    c->auto_ack = 1;
    ct_send_ack(c, &again.p);
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", CT_WAIT);
}
