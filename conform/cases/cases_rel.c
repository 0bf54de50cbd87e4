/*
 * cases_rel.c - the receiver side of reliability.md as the IUT implements
 * it: what it marks, when it acknowledges, and what its ACKs say (Cum PSN,
 * SACK words, echo fields, RX and CE counts), for new, duplicate and
 * CE-marked data packets.
 */
#include <string.h>

#include "conform.h"

CT_CASE(rel_ce_echoed_at_once, "REL-20 REL-16 REL-17 WIRE-11",
        "WRITE without ACK_REQ arriving with CE: an ACK at once with the CE "
        "echo flag, CE Count 1, RX Count 1, itself sent with ECT(0)")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[32];

    ct_pattern(d, sizeof(d), 13);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.base.flags = MROCE_F_FIRST | MROCE_F_LAST; /* no ACK_REQ */
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send_ecn(c, &p, CT_ECN_CE);
    rx = ct_expect_ack(c, p.base.psn + 1, CT_WAIT);
    CT_EQ(t, "ACK Echo Flags", MROCE_ECHO_CE, rx->p.u.ack.echo_flags);
    CT_EQ(t, "ACK CE Count", 1, rx->p.u.ack.ce_count);
    CT_EQ(t, "ACK RX Count", 1, rx->p.u.ack.rx_count);
    if (rx->ecn >= 0)
        CT_EQ(t, "ECN field of the ACK's IP header (ECT(0))", CT_ECN_ECT0,
              rx->ecn);
}

CT_CASE(rel_duplicate_not_placed_again, "REL-8 REL-7 REL-16",
        "a WRITE's PSN again with other bytes: ACK at once echoing it with "
        "DUP, RX Count unchanged, memory keeps the first bytes")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[32], e[32];

    ct_pattern(d, sizeof(d), 14);
    ct_pattern(e, sizeof(e), 15);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send(c, &p);
    ct_expect_ack(c, p.base.psn + 1, CT_WAIT);
    p.payload = e;
    p.base.flags |= MROCE_F_RETX;
    p.base.tsval += 1000;
    p.base.flags &= (uint16_t)~MROCE_F_ACK_REQ; /* the DUP alone must ACK */
    ct_send(c, &p);
    rx = ct_expect_ack(c, p.base.psn + 1, CT_WAIT);
    CT_EQ(t, "DUP ACK Echo Flags", MROCE_ECHO_DUP, rx->p.u.ack.echo_flags);
    CT_EQ(t, "DUP ACK Echo PSN", p.base.psn, rx->p.u.ack.echo_psn);
    CT_EQ(t, "DUP ACK Echo TS", p.base.tsval, rx->p.u.ack.echo_ts);
    CT_EQ(t, "DUP ACK RX Count", 1, rx->p.u.ack.rx_count);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}
