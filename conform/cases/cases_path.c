/*
 * cases_path.c - multipath (multipath.md) as seen on the wire, the IUT as
 * sender: it must accept any entropy (PATH-13), spray over exactly its
 * npaths entropies (PATH-1), and send its handshake and disconnect packets
 * on slot 0's entropy (PATH-12).  The receiver's part, each ACK and NAK on
 * the answered packet's entropy, is in cases_rel_acks.c (REL-22).
 */
#include <stdio.h>
#include <string.h>

#include "case_helpers.h"
#include "conform.h"

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
