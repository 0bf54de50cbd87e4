/*
 * cases_sec.c - untrusted input against an established or listening QP
 * (security.md, CONN-14): packets with a wrong token, to a QP that has no
 * token yet, and the randomness of tokens and start PSNs.  Every drop must
 * be silent and leave no trace: the same PSN sent correctly afterwards is
 * the first thing the IUT marks.
 */
#include <string.h>

#include "conform.h"

CT_CASE(sec_wrong_token_dropped, "CONN-14 SEC-2 SEC-3",
        "WRITE with a token differing in one bit: silence, nothing placed; "
        "the same PSN with the right token is then ACKed with RX Count 1")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x11);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[64];

    ct_pattern(d, sizeof(d), 3);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.base.token ^= 1;
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_send(c, &p);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, sizeof(d), 0x11);
    p.base.token ^= 1;
    ct_send(c, &p);
    rx = ct_expect_ack(c, c->snd_nxt + 1, CT_WAIT);
    CT_EQ(t, "ACK RX Count", 1, rx->p.u.ack.rx_count);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

CT_CASE(sec_listen_qp_drops_data, "CONN-14 CONN-2 SEC-2 SEC-7",
        "WRITE, ACK and DISCONNECT to a QP in LISTEN (token 0 and a guess): "
        "silence, nothing placed, QP stays LISTEN and still accepts a "
        "CONNECT_REQ")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_conn_new(t, "");
    struct mrw_pkt p;
    uint8_t d[32];

    ct_conn_listen(c);
    ct_pattern(d, sizeof(d), 9);
    for (int i = 0; i < 2; i++) {
        ct_pkt_req(c, &p, MROCE_OP_WRITE);
        p.base.token = i ? 0x0123456789abcdefull : 0;
        p.u.rq.req.raddr = mr.addr;
        p.u.rq.req.rkey = mr.rkey;
        p.u.rq.req.msg_len = sizeof(d);
        p.payload = d;
        p.payload_len = sizeof(d);
        ct_send(c, &p);
        ct_pkt_ctl(c, &p, MROCE_OP_ACK);
        p.base.token = i ? 0x0123456789abcdefull : 0;
        ct_send(c, &p);
        ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
        p.base.token = i ? 0x0123456789abcdefull : 0;
        ct_send(c, &p);
    }
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, sizeof(d), 0);
    ct_expect_qp_state(t, c->aqp, "LISTEN", 0);
    ct_conn_connect(c);
}

CT_CASE(sec_tokens_and_psns_fresh, "SEC-4 SEC-5 CONN-8",
        "four handshakes: the IUT's tokens are non-zero and pairwise "
        "different, and so are its Start PSNs")
{
    struct ct_conn *c[4];

    for (int i = 0; i < 4; i++)
        c[i] = ct_connect(t, "");
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++) {
            CT_REQUIRE(t, c[i]->atoken != c[j]->atoken,
                       "two connections got the same token 0x%llx",
                       (unsigned long long)c[i]->atoken);
            CT_REQUIRE(t, c[i]->astart != c[j]->astart,
                       "two connections got the same Start PSN %u",
                       c[i]->astart);
        }
}
