/*
 * cases_rel_receiver.c - reliability.md sections 1 and 2, the IUT's
 * receiver state: PSN spaces and the 2^32 wrap (REL-2, REL-3), what it
 * marks, duplicates it must not place or deliver again (REL-7, REL-8),
 * holes that fill, and its window edges (the far edge accepted, one past
 * dropped and counted, everything below cum_psn a duplicate: REL-9,
 * REL-11).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

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

CT_CASE(rel2_hole_fill_cum_jumps, "REL-11 REL-20 REL-15 REL-21",
        "cum+1, cum+2, cum+4 arrive first; then cum itself, without ACK_REQ: "
        "an ACK echoing it with Cum PSN cum+3 and SACK word 0x00000001")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    uint32_t P = c->snd_nxt, want = 1;
    const struct ct_rx *rx;

    ch_wr64(c, &mr, P, P + 1, 0, NULL);
    ch_wr64(c, &mr, P, P + 2, 0, NULL);
    ch_wr64(c, &mr, P, P + 4, MROCE_F_ACK_REQ, NULL);
    ch_ack_echoing(c, P + 4, RL_WAIT);
    ch_wr64(c, &mr, P, P, 0, NULL); /* fills the hole at cum_psn */
    rx = ch_ack_echoing(c, P, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", P + 3, rx->p.u.ack.cum_psn);
    ch_expect_sack(t, &rx->p, &want, 1);
    CT_EQ(t, "ACK RX Count", 4, rx->p.u.ack.rx_count);
    CT_EQ(t, "ACK Echo Flags", 0, rx->p.u.ack.echo_flags);
}

CT_CASE(rel2_window_far_edge_accepted, "REL-7 REL-6 CONN-12 WIRE-19",
        "IUT window 64: PSN cum+63 (the far edge, d = W_rx - 1) is new: "
        "placed and SACKed (word 1 bit 30)")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "window=64");
    uint32_t P = c->snd_nxt, W = c->apar.rx_window;
    uint32_t want[2] = {0, 0x40000000u};
    uint8_t d[64];
    const struct ct_rx *rx;

    CT_EQ(t, "IUT's advertised RX Window", 64, W);
    ch_wr64(c, &mr, P, P + W - 1, MROCE_F_ACK_REQ, NULL);
    rx = ch_ack_echoing(c, P + W - 1, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", P, rx->p.u.ack.cum_psn);
    CT_EQ(t, "ACK Echo Flags", 0, rx->p.u.ack.echo_flags);
    ch_expect_sack(t, &rx->p, want, 2);
    ct_pattern(d, sizeof(d), P + W - 1);
    ct_expect_mem(t, &mr, 64 * (W - 1), d, sizeof(d));
}

CT_CASE(rel2_window_one_past_dropped, "REL-9 REL-7 REL-6",
        "IUT window 64: PSN cum+64 (d = W_rx) is out of window: dropped "
        "without reply, drop_window +1, nothing placed, not marked later")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0x5c);
    struct ct_conn *c = ct_connect(t, "window=64");
    uint32_t P = c->snd_nxt, W = c->apar.rx_window;
    int64_t dw = ct_rl_counter(t, c->aqp, "drop_window");
    const struct ct_rx *rx;

    CT_EQ(t, "IUT's advertised RX Window", 64, W);
    ch_wr64(c, &mr, P, P + W, MROCE_F_ACK_REQ, NULL);
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, c->aqp, "drop_window", dw, 1);
    ct_expect_mem_fill(t, &mr, 64 * W, 64, 0x5c);
    /* cum itself: the ACK must not report cum+64 (REL-10) */
    ch_wr64(c, &mr, P, P, MROCE_F_ACK_REQ, NULL);
    rx = ch_ack_echoing(c, P, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", P + 1, rx->p.u.ack.cum_psn);
    CT_EQ(t, "ACK SACK Words (cum+64 was dropped, not marked)", 0,
          rx->p.u.ack.sack_words);
    CT_EQ(t, "ACK RX Count", 1, rx->p.u.ack.rx_count);
}

CT_CASE(rel2_far_ahead_dropped, "REL-9 REL-7 REL-3",
        "PSNs cum+100000 and cum+2^31-1 (far ahead, serial order): both "
        "dropped without reply, drop_window +2, nothing placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x5d);
    struct ct_conn *c = ct_connect(t, "");
    uint32_t P = c->snd_nxt;
    int64_t dw = ct_rl_counter(t, c->aqp, "drop_window");
    struct mrw_pkt p;
    uint8_t d[64];

    ct_pattern(d, sizeof(d), 77);
    ct_rl_write_pkt(c, &p, &mr, 0, d, sizeof(d), P + 100000u, MROCE_F_ACK_REQ);
    ct_send(c, &p);
    ct_rl_write_pkt(c, &p, &mr, 64, d, sizeof(d), P + 0x7fffffffu,
                    MROCE_F_ACK_REQ);
    ct_send(c, &p);
    ct_expect_silence(t, CT_QUIET);
    ct_rl_expect_counter(t, c->aqp, "drop_window", dw, 2);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x5d);
}

CT_CASE(rel2_far_behind_is_duplicate, "REL-7 REL-8 REL-3 REL-16",
        "PSNs cum-1000 and cum-2^31 (before cum, serial order): each is a "
        "duplicate: ACK at once with DUP echo, RX Count 0, rx_dups +2, "
        "nothing placed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x5e);
    struct ct_conn *c = ct_connect(t, "");
    uint32_t P = c->snd_nxt;
    uint32_t psns[2] = {P - 1000u, P - 0x80000000u};
    int64_t dups = ct_rl_counter(t, c->aqp, "rx_dups");

    for (int i = 0; i < 2; i++) {
        struct mrw_pkt p;
        const struct ct_rx *rx;
        uint8_t d[64];

        ct_pattern(d, sizeof(d), 78);
        ct_rl_write_pkt(c, &p, &mr, 0, d, sizeof(d), psns[i], 0);
        ct_send(c, &p);
        rx = ch_ack_echoing(c, psns[i], RL_WAIT);
        CT_EQ(t, "ACK Echo Flags (DUP)", MROCE_ECHO_DUP,
              rx->p.u.ack.echo_flags);
        CT_EQ(t, "ACK Cum PSN", P, rx->p.u.ack.cum_psn);
        CT_EQ(t, "ACK RX Count", 0, rx->p.u.ack.rx_count);
        CT_EQ(t, "ACK Echo Entropy", p.base.entropy, rx->p.u.ack.echo_entropy);
    }
    ct_rl_expect_counter(t, c->aqp, "rx_dups", dups, 2);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x5e);
}

CT_CASE(rel2_dup_of_sacked_not_placed, "REL-8 REL-7 REL-15 REL-17",
        "cum+2 received (SACKed), then cum+2 again with other bytes: ACK at "
        "once with DUP, SACK unchanged, RX Count 1, first bytes kept")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    uint32_t P = c->snd_nxt, want = 2;
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[64], e[64];

    ct_pattern(d, sizeof(d), 21);
    ct_pattern(e, sizeof(e), 22);
    ct_rl_write_pkt(c, &p, &mr, 128, d, sizeof(d), P + 2, MROCE_F_ACK_REQ);
    ct_send(c, &p);
    rx = ch_ack_echoing(c, P + 2, RL_WAIT);
    ch_expect_sack(t, &rx->p, &want, 1);
    p.payload = e;
    p.base.flags = MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_RETX;
    p.base.tsval += 777;
    ct_send(c, &p);
    rx = ch_ack_echoing(c, P + 2, RL_WAIT);
    CT_EQ(t, "DUP ACK Echo Flags", MROCE_ECHO_DUP, rx->p.u.ack.echo_flags);
    CT_EQ(t, "DUP ACK Echo TS", p.base.tsval, rx->p.u.ack.echo_ts);
    CT_EQ(t, "DUP ACK Cum PSN", P, rx->p.u.ack.cum_psn);
    ch_expect_sack(t, &rx->p, &want, 1);
    CT_EQ(t, "DUP ACK RX Count", 1, rx->p.u.ack.rx_count);
    ct_expect_mem(t, &mr, 128, d, sizeof(d));
}

/* Connects with our Start PSN set to start. */
static struct ct_conn *connect_at(struct ct *t, const char *opts,
                                  uint32_t start)
{
    struct ct_conn *c = ct_conn_new(t, opts);

    c->start_psn = start;
    c->snd_nxt = start;
    ct_conn_connect(c);
    return c;
}

CT_CASE(rel2_psn_wrap_in_order, "REL-3 REL-11 REL-1 SEM-6",
        "our Start PSN 0xfffffffe: a 4-packet WRITE at PSNs 0xfffffffe, "
        "0xffffffff, 0, 1: ACK Cum PSN 2, all bytes placed")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0);
    struct ct_conn *c = connect_at(t, "mtu=1024", 0xfffffffeu);
    uint8_t d[4096];
    uint32_t psn;
    const struct ct_rx *rx;

    CT_EQ(t, "negotiated MTU", 1024, c->mtu);
    ct_pattern(d, sizeof(d), 31);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    CT_EQ(t, "first PSN", 0xfffffffeu, psn);
    rx = ct_expect_ack(c, 2, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", 2, rx->p.u.ack.cum_psn);
    CT_EQ(t, "ACK SACK Words", 0, rx->p.u.ack.sack_words);
    CT_EQ(t, "ACK RX Count", 4, rx->p.u.ack.rx_count);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

CT_CASE(rel2_psn_wrap_sack, "REL-3 REL-15 WIRE-19 REL-11",
        "our Start PSN 0xfffffffd: PSNs 0xfffffffe, 0, 1 arrive (holes at "
        "0xfffffffd and 0xffffffff): SACK word 0x0000000d across the wrap; "
        "then the holes: Cum PSN 2")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = connect_at(t, "", 0xfffffffdu);
    uint32_t P = 0xfffffffdu, want = 0xd;
    const struct ct_rx *rx;

    ch_wr64(c, &mr, P, 0xfffffffeu, 0, NULL);
    ch_wr64(c, &mr, P, 0, 0, NULL);
    ch_wr64(c, &mr, P, 1, MROCE_F_ACK_REQ, NULL);
    rx = ch_ack_echoing(c, 1, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", P, rx->p.u.ack.cum_psn);
    ch_expect_sack(t, &rx->p, &want, 1);
    ch_wr64(c, &mr, P, 0xffffffffu, 0, NULL);
    ch_wr64(c, &mr, P, P, 0, NULL);
    rx = ct_expect_ack(c, 2, RL_WAIT);
    CT_EQ(t, "ACK Cum PSN", 2, rx->p.u.ack.cum_psn);
    CT_EQ(t, "ACK SACK Words", 0, rx->p.u.ack.sack_words);
    CT_EQ(t, "ACK RX Count", 5, rx->p.u.ack.rx_count);
    for (uint32_t k = 0; k < 5; k++) {
        uint8_t d[64];
        ct_pattern(d, sizeof(d), P + k);
        ct_expect_mem(t, &mr, 64 * k, d, sizeof(d));
    }
}

CT_CASE(rel2_ack_base_fields, "REL-2 REL-14 REL-1",
        "ACK base fields: PSN = the IUT's snd_nxt (its Start PSN before it "
        "sent data; +3 after a 3-packet WRITE of its own), Flags 0, our "
        "QPN and token")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    uint32_t P = c->snd_nxt;
    const struct ct_rx *rx;

    ch_wr64(c, &mr, P, P, MROCE_F_ACK_REQ, NULL);
    c->snd_nxt++;
    rx = ch_ack_echoing(c, P, RL_WAIT);
    CT_EQ(t, "ACK base PSN (snd_nxt = Start PSN, REL-2)", c->astart,
          rx->p.base.psn);
    CT_EQ(t, "ACK base Flags", 0, rx->p.base.flags);
    CT_EQ(t, "ACK Dst QPN", c->qpn, rx->p.base.dst_qpn);
    /* the IUT sends 3 data packets (ACKed by ct_recv), then ACKs ours */
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=3000 "
             "raddr=0x10000 rkey=0x77",
             c->aqp, mr.id);
    {
        struct ct_rl_pkt pk[3];
        ct_rl_take_new(c, c->astart, pk, 3, RL_WAIT); /* ct_recv ACKs them */
    }
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    while (ct_rl_next(c, 20) != NULL)
        ;
    ch_wr64(c, &mr, P, P + 1, MROCE_F_ACK_REQ, NULL);
    rx = ch_ack_echoing(c, P + 1, RL_WAIT);
    CT_EQ(t, "ACK base PSN after 3 data packets (snd_nxt, REL-2)",
          c->astart + 3, rx->p.base.psn);
    CT_EQ(t, "ACK base Flags", 0, rx->p.base.flags);
}
