/*
 * cases_path.c - multipath (multipath.md) as seen on the wire.  As a
 * receiver the IUT keeps no per-path state but must answer each packet on
 * its own entropy: every ACK and NAK carries the answered packet's Entropy
 * (REL-22, PATH-12), with the CE echo of that very packet.  As a sender it
 * must spray over exactly its npaths entropies (PATH-1, PATH-3), put each
 * data packet's entropy in its UDP source port (WIRE-10), and send its
 * handshake and disconnect packets on slot 0's entropy (PATH-12).  The
 * UDP source port of ACKs and NAKs is only reported: REL-22 lets a
 * software endpoint send them from its own pool of ports.
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

/* Wait for what must come: longer than CT_WAIT, since the machine running
 * the suite may be shared and stall a process for a good part of a second;
 * a passing case never waits this long. */
#define RL_WAIT 2000

/* A one-packet WRITE of 64 bytes at PSN c->snd_nxt from entropy socket e,
 * with ACK_REQ unless no_req; consumes the PSN and MSN. */
static void write_on(struct ct_conn *c, const struct ct_mr *mr, int e,
                     int no_req, int ecn, struct mrw_pkt *out)
{
    static uint8_t d[64];
    struct mrw_pkt p;
    uint32_t k = c->snd_nxt - c->start_psn;

    ct_pattern(d, sizeof(d), c->snd_nxt);
    ct_rl_write_pkt(c, &p, mr, (64u * k) % 4032u, d, sizeof(d), c->snd_nxt,
                    no_req ? 0 : MROCE_F_ACK_REQ);
    p.base.entropy = ct_entropy(c->t, e);
    ct_send_ecn(c, &p, ecn);
    c->snd_nxt++;
    c->msn++;
    if (out) {
        *out = p;
        out->payload = NULL;
    }
}

/* The ACK echoing psn (earlier ACKs skipped). */
static const struct ct_rx *ack_for(struct ct_conn *c, uint32_t psn)
{
    for (;;) {
        const struct ct_rx *rx = ct_expect_ack(c, psn + 1, RL_WAIT);
        if (rx->p.u.ack.echo_psn == psn)
            return rx;
        ct_log(c->t, "skipped %s", ct_describe(c->t, rx));
    }
}

CT_CASE(path_ack_echoes_entropy, "REL-22 PATH-12 REL-16 WIRE-10",
        "4 WRITEs with ACK_REQ, each from another of our entropy ports: each "
        "ACK's Entropy and Echo Entropy = that packet's Entropy (UDP source "
        "port reported only)")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    int n = ct_num_entropies(t) < 4 ? ct_num_entropies(t) : 4;

    for (int e = 0; e < n; e++) {
        struct mrw_pkt p;
        const struct ct_rx *rx;

        write_on(c, &mr, e, 0, CT_ECN_ECT0, &p);
        rx = ack_for(c, p.base.psn);
        CT_EQ(t, "ACK Echo Entropy", p.base.entropy, rx->p.u.ack.echo_entropy);
        CT_EQ(t, "ACK base Entropy (= Echo Entropy, REL-22)", p.base.entropy,
              rx->p.base.entropy);
        ct_log(t, "entropy %u: ACK from UDP port %u (%s)", p.base.entropy,
               rx->sport,
               rx->sport == p.base.entropy ? "= Entropy"
                                           : "IUT's own pool, REL-22 MAY");
    }
}

CT_CASE(path_nak_echoes_entropy, "REL-22 PATH-12 REL-27",
        "a WRITE with a bad RKey from our 3rd entropy port: its NAK carries "
        "that packet's Entropy")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[32];
    int e = ct_num_entropies(t) > 2 ? 2 : 0;

    ct_pattern(d, sizeof(d), 51);
    ct_rl_write_pkt(c, &p, &mr, 0, d, sizeof(d), c->snd_nxt, MROCE_F_ACK_REQ);
    p.u.rq.req.rkey ^= 0x00770000;
    p.base.entropy = ct_entropy(t, e);
    ct_send(c, &p);
    rx = ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, RL_WAIT);
    CT_EQ(t, "NAK Entropy (the refused packet's, REL-22)", p.base.entropy,
          rx->p.base.entropy);
    ct_log(t, "NAK from UDP port %u", rx->sport);
}

CT_CASE(path_dup_ack_on_new_entropy, "REL-16 REL-22 REL-8 PATH-12",
        "a WRITE on entropy A, then its duplicate on entropy B: the DUP ACK "
        "echoes B (the most recent arrival), in Echo Entropy and Entropy")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[32];

    if (ct_num_entropies(t) < 2)
        ct_skip(t, "the tester has only one entropy socket");
    ct_pattern(d, sizeof(d), 52);
    ct_rl_write_pkt(c, &p, &mr, 0, d, sizeof(d), c->snd_nxt, MROCE_F_ACK_REQ);
    p.base.entropy = ct_entropy(t, 0);
    ct_send(c, &p);
    ack_for(c, p.base.psn);
    p.base.entropy = ct_entropy(t, 1);
    p.base.flags |= MROCE_F_RETX;
    p.base.tsval += 5000;
    ct_send(c, &p);
    for (;;) {
        rx = ct_expect_ack(c, p.base.psn + 1, RL_WAIT);
        if (rx->p.u.ack.echo_ts == p.base.tsval)
            break;
    }
    CT_EQ(t, "DUP ACK Echo Flags", MROCE_ECHO_DUP, rx->p.u.ack.echo_flags);
    CT_EQ(t, "DUP ACK Echo Entropy", ct_entropy(t, 1),
          rx->p.u.ack.echo_entropy);
    CT_EQ(t, "DUP ACK Entropy", ct_entropy(t, 1), rx->p.base.entropy);
}

CT_CASE(path_ecn_echo_per_path, "REL-16 REL-17 REL-20 WIRE-11 PATH-12",
        "WRITE on entropy A with CE, then on entropy B without: A's ACK has "
        "the CE echo and Entropy A, B's has no CE echo and Entropy B; CE "
        "Count 1 in both, RX Count 1 then 2")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt a, b;
    const struct ct_rx *rx;

    if (ct_num_entropies(t) < 2)
        ct_skip(t, "the tester has only one entropy socket");
    write_on(c, &mr, 0, 1, CT_ECN_CE, &a); /* CE alone must ACK at once */
    rx = ack_for(c, a.base.psn);
    CT_EQ(t, "A's ACK Echo Flags (CE)", MROCE_ECHO_CE, rx->p.u.ack.echo_flags);
    CT_EQ(t, "A's ACK Entropy", a.base.entropy, rx->p.base.entropy);
    CT_EQ(t, "A's ACK CE Count", 1, rx->p.u.ack.ce_count);
    CT_EQ(t, "A's ACK RX Count", 1, rx->p.u.ack.rx_count);
    write_on(c, &mr, 1, 0, CT_ECN_ECT0, &b);
    rx = ack_for(c, b.base.psn);
    CT_EQ(t, "B's ACK Echo Flags (no CE)", 0, rx->p.u.ack.echo_flags);
    CT_EQ(t, "B's ACK Entropy", b.base.entropy, rx->p.base.entropy);
    CT_EQ(t, "B's ACK CE Count", 1, rx->p.u.ack.ce_count);
    CT_EQ(t, "B's ACK RX Count", 2, rx->p.u.ack.rx_count);
}

CT_CASE(path_ack_of_response_echoes_entropy, "REL-22 PATH-12 REL-16",
        "IUT READ of 64 bytes; our READ_RESP comes from our 6th entropy "
        "port: the IUT's ACK of it carries that Entropy (Entropy and Echo "
        "Entropy)")
{
    struct ct_conn *c = ct_accept(t, "min_rto_us=20000");
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_rl_pkt req;
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[64];
    int e = ct_num_entropies(t) > 5 ? 5 : ct_num_entropies(t) - 1;

    ct_pattern(d, sizeof(d), 54);
    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=8 op=READ mr=%d off=0 len=64 "
             "raddr=0x50000 rkey=0x7b",
             c->aqp, mr.id);
    ct_rl_take_new(c, c->astart, &req, 1, RL_WAIT);
    ct_rl_resp_pkt(c, &p, MROCE_OP_READ_RESP, c->snd_nxt, req.p.u.rq.req.msn,
                   64, 0, d, 64,
                   MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_ACK_REQ);
    p.base.entropy = ct_entropy(t, e);
    ct_send(c, &p);
    rx = ack_for(c, p.base.psn);
    CT_EQ(t, "ACK Echo Entropy", p.base.entropy, rx->p.u.ack.echo_entropy);
    CT_EQ(t, "ACK Entropy", p.base.entropy, rx->p.base.entropy);
    ct_expect_wc(t, c->aqp, "send", 8, "SUCCESS", RL_WAIT);
}

CT_CASE(path_any_entropy_accepted, "PATH-13 WIRE-10 REL-11 SEM-6",
        "a 4-packet WRITE, each packet from another entropy port, sent last "
        "packet first: all placed, ACK Cum PSN past the message")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "mtu=1024");
    uint8_t d[4096];
    uint32_t first = c->snd_nxt;

    CT_EQ(t, "negotiated MTU", 1024, c->mtu);
    ct_pattern(d, sizeof(d), 53);
    for (int i = 3; i >= 0; i--) {
        struct mrw_pkt p;
        ct_pkt_req(c, &p, MROCE_OP_WRITE);
        p.base.psn = first + (uint32_t)i;
        p.base.flags = (uint16_t)((i == 0 ? MROCE_F_FIRST : 0) |
                                  (i == 3 ? MROCE_F_LAST : 0) |
                                  (i == 0 ? MROCE_F_ACK_REQ : 0));
        p.base.entropy = ct_entropy(t, i);
        p.u.rq.req.raddr = mr.addr;
        p.u.rq.req.rkey = mr.rkey;
        p.u.rq.req.msg_len = sizeof(d);
        p.u.rq.req.offset = 1024u * (uint32_t)i;
        p.payload = d + 1024 * i;
        p.payload_len = 1024;
        ct_send(c, &p);
    }
    c->snd_nxt = first + 4;
    c->msn++;
    ct_expect_ack(c, first + 4, RL_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

/* The IUT (connecting side) sends a WRITE of npk packets (MTU 1024) with
 * QP options opts; every packet is ACKed at once.  Counts the distinct
 * entropies of the first transmissions into ent/cnt (capacity cap) and
 * checks that each data packet's UDP source port is its Entropy.  Returns
 * the number of distinct entropies; *first_ent = the first packet's. */
static int spray(struct ct *t, struct ct_conn *c, int npk, uint16_t *ent,
                 int *cnt, int cap, uint16_t *first_ent)
{
    struct ct_mr mr = ct_mr_reg(t, 65536, "lw", 0);
    struct ct_rl_pkt pk;
    int nent = 0, got = 0;

    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=%u "
             "raddr=0x40000 rkey=0x7a",
             c->aqp, mr.id, 1024u * (unsigned)npk);
    while (got < npk) {
        int k;
        ct_rl_expect_data(c, 0, RL_WAIT, &pk);
        if (pk.p.base.flags & MROCE_F_RETX)
            continue;
        CT_EQ(t, "data packet's UDP source port = its Entropy (WIRE-10)",
              pk.p.base.entropy, pk.sport);
        if (got == 0)
            *first_ent = pk.p.base.entropy;
        for (k = 0; k < nent && ent[k] != pk.p.base.entropy; k++)
            ;
        if (k == nent) {
            CT_REQUIRE(t, nent < cap,
                       "more than %d distinct entropies in one transfer", cap);
            ent[nent] = pk.p.base.entropy;
            cnt[nent++] = 0;
        }
        cnt[k]++;
        got++;
    }
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", RL_WAIT);
    return nent;
}

CT_CASE(path_sprays_over_npaths, "PATH-1 PATH-3 WIRE-10",
        "npaths=4: a 64-packet WRITE of the IUT uses exactly 4 distinct "
        "entropies (each its UDP source port), in equal shares (16 each, "
        "+-1 burst of 8)")
{
    struct ct_conn *c = ct_accept(t, "npaths=4 mtu=1024");
    uint16_t ent[64], fe;
    int cnt[64];
    int n = spray(t, c, 64, ent, cnt, 64, &fe);

    CT_EQ(t, "distinct entropies with npaths=4", 4, n);
    for (int k = 0; k < n; k++) {
        ct_log(t, "entropy %u: %d packets", ent[k], cnt[k]);
        CT_REQUIRE(t, cnt[k] >= 8 && cnt[k] <= 24,
                   "entropy %u carried %d of 64 packets; equal weights give "
                   "16 each (PATH-3)",
                   ent[k], cnt[k]);
    }
}

CT_CASE(path_npaths_one, "PATH-1 PATH-3 PATH-12",
        "npaths=1: a 16-packet WRITE of the IUT uses a single entropy, the "
        "one its CONNECT_REQ named (slot 0)")
{
    struct ct_conn *c = ct_accept(t, "npaths=1 mtu=1024");
    uint16_t ent[16], fe;
    int cnt[16];
    int n = spray(t, c, 16, ent, cnt, 16, &fe);

    CT_EQ(t, "distinct entropies with npaths=1", 1, n);
    CT_EQ(t, "data Entropy = CONNECT_REQ Entropy (slot 0)", c->hs.base.entropy,
          fe);
}

CT_CASE(path_connect_req_on_slot0, "PATH-12 PATH-3 WIRE-10 CONN-13",
        "npaths=4: the CONNECT_REQ's Entropy field is slot 0's entropy (the "
        "first data packet's, PATH-3 starts at slot 0) while its UDP source "
        "port is the IUT's MetaRoCE port")
{
    struct ct_conn *c = ct_accept(t, "npaths=4 mtu=1024");
    uint16_t ent[8], fe;
    int cnt[8];

    CT_EQ(t, "CONNECT_REQ UDP source port (MetaRoCE port)", ct_iut_port(t),
          c->hs_sport);
    spray(t, c, 8, ent, cnt, 8, &fe);
    CT_EQ(t, "CONNECT_REQ Entropy = slot 0's (the first data packet's)", fe,
          c->hs.base.entropy);
}

CT_CASE(path_connect_resp_on_slot0, "PATH-12 PATH-3 WIRE-10",
        "npaths=4, the IUT listening: its CONNECT_RESP carries slot 0's "
        "entropy (its first data packet's), from that UDP source port")
{
    struct ct_conn *c = ct_connect(t, "npaths=4 mtu=1024");
    uint16_t ent[8], fe;
    int cnt[8];

    spray(t, c, 8, ent, cnt, 8, &fe);
    CT_EQ(t, "CONNECT_RESP Entropy = slot 0's (the first data packet's)", fe,
          c->hs.base.entropy);
    CT_EQ(t, "CONNECT_RESP UDP source port = its Entropy (WIRE-10)",
          c->hs.base.entropy, c->hs_sport);
}

CT_CASE(path_disconnect_on_slot0, "PATH-12 CONN-15",
        "npaths=4 after a WRITE over several paths: QP_CLOSE's DISCONNECT "
        "carries slot 0's entropy, the CONNECT_REQ's")
{
    struct ct_conn *c = ct_accept(t, "npaths=4 mtu=1024");
    uint16_t ent[16], fe;
    int cnt[16];
    const struct ct_rx *rx;

    spray(t, c, 16, ent, cnt, 16, &fe);
    ct_agent(t, "QP_CLOSE qp=%d", c->aqp);
    /* Retransmissions still under way (a probe that crossed our ACK) are
     * ACKed by ct_recv; the DISCONNECT follows once all is acknowledged
     * (CONN-15). */
    for (;;) {
        rx = ct_rl_next(c, RL_WAIT);
        if (!rx)
            ct_fail(t, "expected DISCONNECT within %d ms, got nothing",
                    ct_ms(t, RL_WAIT));
        if (rx->p.base.opcode == MROCE_OP_DISCONNECT)
            break;
        CT_REQUIRE(t,
                   rx->p.base.opcode == MROCE_OP_ACK ||
                       (mrw_opcode_has_psn(rx->p.base.opcode) &&
                        (rx->p.base.flags & MROCE_F_RETX)),
                   "expected DISCONNECT, got %s", ct_describe(t, rx));
        ct_log(t, "before DISCONNECT: %s", ct_describe(t, rx));
    }
    CT_EQ(t, "DISCONNECT Entropy = slot 0's (the CONNECT_REQ's)",
          c->hs.base.entropy, rx->p.base.entropy);
}
