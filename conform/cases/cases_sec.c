/*
 * cases_sec.c - security.md: fresh Tokens and start PSNs per connection
 * (SEC-2), no NAK without a valid Token, replies only to the peer's
 * address and no amplification (SEC-4), and a replayed old connection
 * dropped (SEC-6).
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

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

CT_CASE(sec_no_nak_without_token, "SEC-2 CONN-14 SEC-6",
        "a bad-RKey WRITE, a READ without permission and a SEND without a "
        "receive, each with a wrong token: no NAK, nothing at all; the "
        "bad-RKey WRITE with the right token is NAKed")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0x3e);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt w, r, s;
    uint8_t d[32];

    ct_pattern(d, sizeof(d), 60);
    ct_pkt_req(c, &w, MROCE_OP_WRITE);
    w.u.rq.req.raddr = mr.addr;
    w.u.rq.req.rkey = mr.rkey ^ 0x00ff0000;
    w.u.rq.req.msg_len = sizeof(d);
    w.payload = d;
    w.payload_len = sizeof(d);
    ct_pkt_read(c, &r, &mr, 0, 64);
    r.base.psn++;
    r.u.rq.req.msn++;
    ct_pkt_req(c, &s, MROCE_OP_SEND);
    s.base.psn += 2;
    s.u.rq.req.msn += 2;
    s.u.rq.req.msg_len = sizeof(d);
    s.payload = d;
    s.payload_len = sizeof(d);
    w.base.token ^= 0x8000000000000000ull;
    r.base.token = ~r.base.token;
    s.base.token = 0;
    ct_send(c, &w);
    ct_send(c, &r);
    ct_send(c, &s);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x3e);
    w.base.token = c->atoken;
    ct_send(c, &w);
    ct_expect_nak(c, w.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
}

CT_CASE(sec_old_connection_replay_dropped, "SEC-2 SEC-4 CONN-7 CONN-14",
        "a WRITE of a connection whose QP was destroyed, replayed with its "
        "old token and QPN, and again to a new connection's QP: silence, "
        "nothing placed; the new connection's token differs from the old")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c1 = ct_connect(t, "");
    struct ct_conn *c2;
    struct mrw_pkt p;
    uint8_t d[32], e[32];
    uint32_t psn;

    ct_pattern(d, sizeof(d), 61);
    ct_pattern(e, sizeof(e), 62);
    psn = ct_send_write(c1, &mr, 0, d, sizeof(d), 0);
    ct_expect_ack(c1, psn + 1, CT_WAIT);
    ct_agent(t, "QP_DESTROY qp=%d", c1->aqp);
    c2 = ct_connect(t, "");
    CT_REQUIRE(t, c2->atoken != c1->atoken,
               "a new connection reuses the old token 0x%llx (SEC-4)",
               (unsigned long long)c1->atoken);
    ct_pkt_req(c1, &p, MROCE_OP_WRITE);
    p.u.rq.req.raddr = mr.addr + 100;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = sizeof(e);
    p.payload = e;
    p.payload_len = sizeof(e);
    ct_send(c1, &p);
    p.base.dst_qpn = c2->aqpn;
    ct_send(c2, &p);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, 32, 4096 - 32, 0);
    psn = ct_send_write(c2, &mr, 200, e, sizeof(e), 0);
    ct_expect_ack(c2, psn + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 200, e, sizeof(e));
}

CT_CASE(sec_replies_only_to_peer_address, "SEC-6 CONN-13 REL-22 WIRE-10",
        "a valid WRITE and a bad-RKey WRITE sent from a UDP port the "
        "connection never used: accepted / refused, but the ACK and the NAK "
        "go to the recorded peer address, nothing to the new port")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint8_t d[24];
    int fd, n;

    ct_pattern(d, sizeof(d), 63);
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey;
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    fd = ct_send_from_new_socket(c, &p);
    c->snd_nxt++;
    c->msn++;
    rx = ct_expect_ack(c, p.base.psn + 1, CT_WAIT);
    CT_REQUIRE(t, rx->sock < 0,
               "ACK went to one of our entropy ports, not to the peer "
               "address (our MetaRoCE port)");
    ct_pkt_req(c, &p, MROCE_OP_WRITE);
    p.u.rq.req.raddr = mr.addr;
    p.u.rq.req.rkey = mr.rkey ^ 0x00ff0000;
    p.u.rq.req.msg_len = sizeof(d);
    p.payload = d;
    p.payload_len = sizeof(d);
    ct_sock_close(ct_send_from_new_socket(c, &p));
    rx = ct_expect_nak(c, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    CT_REQUIRE(t, rx->sock < 0, "NAK did not go to the peer address");
    n = ct_sock_recv(t, fd, CT_QUIET);
    ct_sock_close(fd);
    CT_REQUIRE(t, n == 0,
               "the IUT sent %d bytes to the source port of a data packet "
               "(CONN-13: only to the peer address)",
               n);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

CT_CASE(sec_connect_req_no_amplification, "SEC-6 CONN-13 CONN-8",
        "a CONNECT_REQ from a fresh UDP port to a LISTEN QP: exactly one "
        "reply, a CONNECT_RESP of 68 bytes (the CONNECT_REQ's size) to that "
        "port, nothing to our other ports")
{
    struct ct_conn *c = ct_conn_new(t, "");
    struct mrw_pkt req;
    int fd, n;

    ct_conn_listen(c);
    ct_pkt_connect_req(c, &req);
    fd = ct_send_from_new_socket(c, &req);
    n = ct_sock_recv(t, fd, CT_WAIT);
    CT_EQ(t, "reply size (SEC-6: same as the 68-byte CONNECT_REQ)", 68, n);
    n = ct_sock_recv(t, fd, CT_QUIET);
    ct_sock_close(fd);
    CT_EQ(t, "further replies", 0, n);
    ct_expect_silence(t, 0);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
}
