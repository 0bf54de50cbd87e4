/*
 * cases_sec2.c - the rest of security.md: no NAK (or any reply) to a
 * packet that failed the token check, forged ACKs, NAKs and DISCONNECTs
 * without the token have no effect, packets of an old connection (old
 * token, old QPN) are dropped, replies go only to the recorded peer
 * address whatever a packet's source, a CONNECT_REQ is answered by one
 * packet of its own size, the responder's per-connection state for
 * READ and atomics stays within the slots it advertised, and a region
 * cannot grant a remote write or atomic right without local write.
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

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

CT_CASE(sec_forged_ack_nak_disconnect_ignored, "CONN-14 SEC-2 SEC-7",
        "while the IUT's WRITE waits for its ACK: an ACK covering it, a "
        "fatal NAK for it and a DISCONNECT, all with a wrong token, change "
        "nothing (no completion, no DISCONNECT_ACK, RTS); the real ACK then "
        "completes it")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_accept(t, "min_rto_us=100000");
    struct mrw_pkt p;
    const struct ct_rx *rx;
    uint32_t psn;

    c->auto_ack = 0;
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=64 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    rx = ct_expect_data(c, CT_WAIT);
    psn = rx->p.base.psn;
    ct_pkt_ctl(c, &p, MROCE_OP_ACK);
    p.base.token ^= 1;
    p.u.ack.cum_psn = psn + 1;
    p.u.ack.echo_psn = psn;
    p.u.ack.rx_count = 1;
    p.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    ct_send(c, &p);
    ct_pkt_ctl(c, &p, MROCE_OP_NAK);
    p.base.token ^= 2;
    p.u.nak.nak_psn = psn;
    p.u.nak.code = MROCE_NAK_REMOTE_ACCESS_KEY;
    p.u.nak.cum_psn = psn;
    ct_send(c, &p);
    ct_pkt_ctl(c, &p, MROCE_OP_DISCONNECT);
    p.base.token ^= 4;
    ct_send(c, &p);
    ct_expect_no_op(c, MROCE_OP_DISCONNECT_ACK, CT_QUIET);
    ct_expect_no_wc(t, c->aqp, "send", 0);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    ct_send_ack(c, NULL);
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
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

CT_CASE(sec_response_slots_bounded, "SEM-11 SEC-7 SEM-26",
        "QP with max_rd_atomic 1 advertises Max RD Atomic 2; three READ_REQs "
        "whose responses we do not ACK: two answered, the third dropped "
        "unmarked and un-NAKed; after we ACK the responses its resend is "
        "answered")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0);
    struct ct_conn *c = ct_connect(t, "max_rd_atomic=1 min_rto_us=100000");
    struct mrw_pkt r[3];
    const struct ct_rx *rx;
    uint64_t end;
    int resp[3] = {0, 0, 0};
    uint8_t d[3 * 64];

    CT_EQ(t, "CONNECT_RESP Max RD Atomic (2 * max_rd_atomic)", 2,
          c->apar.max_rd_atomic);
    ct_pattern(d, sizeof(d), 64);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    c->auto_ack = 0;
    for (int i = 0; i < 3; i++) {
        ct_pkt_read(c, &r[i], &mr, (uint32_t)i * 64, 64);
        ct_consume(c, &r[i]);
        ct_send(c, &r[i]);
    }
    end = ct_now_ns() + (uint64_t)ct_ms(t, CT_QUIET + 50) * 1000000u;
    while ((rx = ct_next(c, 10)) != NULL || ct_now_ns() < end) {
        if (!rx)
            continue;
        CT_REQUIRE(t, rx->p.base.opcode != MROCE_OP_NAK,
                   "a READ_REQ beyond the slots was NAKed: %s",
                   ct_describe(t, rx));
        if (rx->p.base.opcode == MROCE_OP_ACK)
            CT_REQUIRE(t, !ct_ack_covers(&rx->p, r[2].base.psn),
                       "the READ_REQ without a free slot was marked: %s",
                       ct_describe(t, rx));
        if (rx->p.base.opcode == MROCE_OP_READ_RESP) {
            uint32_t m = rx->p.u.resp.req_msn - r[0].u.rq.req.msn;
            CT_REQUIRE(t, m < 2, "READ_REQ %u answered with only 2 slots", m);
            resp[m]++;
        }
        if (ct_now_ns() >= end)
            break;
    }
    CT_REQUIRE(t, resp[0] && resp[1],
               "the first two READs were not both "
               "answered (%d, %d)",
               resp[0], resp[1]);
    c->auto_ack = 1;
    ct_send_ack(c, NULL);
    ct_recv(t, 5);
    r[2].base.flags |= MROCE_F_RETX;
    ct_send(c, &r[2]);
    for (;;) {
        rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1, CT_WAIT);
        if (rx->p.u.resp.req_msn == r[2].u.rq.req.msn)
            break;
    }
    CT_REQUIRE(t, memcmp(rx->p.payload, d + 128, 64) == 0,
               "the third READ's response carries the wrong bytes");
}

CT_CASE(sec_connect_req_to_connected_qp, "CONN-7 SEC-7 CONN-9",
        "a CONNECT_REQ naming a connected QP with another Src QPN and token "
        "(not its binding): no CONNECT_RESP, nothing changes; the "
        "connection still works")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct mrw_pkt req;
    uint8_t buf[128], d[8] = {4, 4, 4, 4, 4, 4, 4, 4};
    size_t n;
    uint32_t psn;

    ct_pkt_connect_req(c, &req);
    req.u.conn.src_qpn ^= 0x5555;
    req.u.conn.token ^= 0x77;
    n = ct_encode(t, &req, buf, sizeof(buf));
    ct_send_raw(t, -1, buf, n, CT_ECN_ECT0);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_qp_state(t, c->aqp, "RTS", 0);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
}

CT_CASE(sec_deregistered_key_refused, "SEM-17 SEC-3",
        "after MR_DEREG, a WRITE and a READ (on a second connection: the "
        "first holds its fatal NAK, REL-40) with the old RKey: NAK "
        "REMOTE_ACCESS_KEY each, no READ_RESP")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw,rr", 0);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_conn *c2 = ct_connect(t, "");
    struct mrw_pkt p;
    uint8_t d[16] = {0};
    uint32_t psn;

    ct_agent(t, "MR_DEREG mr=%d", mr.id);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_expect_nak(c, psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_pkt_read(c2, &p, &mr, 0, 16);
    ct_send(c2, &p);
    ct_expect_nak(c2, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
}

CT_CASE(sec_mr_remote_write_needs_local_write, "SEM-28 SEC-9",
        "MR_REG with rw or ra but not lw is refused with ERR EINVAL; with "
        "lw, and rr alone, it is accepted")
{
    static const char *const bad[] = {"rw", "ra", "rw,rr", "rr,ra",
                                      "rw,rr,ra"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *r =
            ct_agent_try(t, "MR_REG len=4096 access=%s", bad[i]);
        CT_REQUIRE(t, strncmp(r, "ERR EINVAL", 10) == 0,
                   "MR_REG access=%s: expected ERR EINVAL, got \"%s\"",
                   bad[i], r);
    }
    struct ct_mr ok1 = ct_mr_reg(t, 4096, "lw,rw,ra", 0);
    struct ct_mr ok2 = ct_mr_reg(t, 4096, "rr", 0);
    CT_REQUIRE(t, ok1.rkey != ok2.rkey, "two regions, one rkey 0x%x",
               ok1.rkey);
}
