/*
 * case_helpers.c - the helpers that cases of more than one chapter's file
 * share (declared in case_helpers.h): packets the tester builds and sends,
 * work requests posted through the agent, and the waits and checks that
 * go with them.  Helpers of one file stay static in that file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_helpers.h"

/* The QP must still be CONNECTING; if not, say whether it timed out
 * (counter timeouts) or failed otherwise. */
void ch_still_connecting(struct ct_conn *c)
{
    struct ct *t = c->t;
    const char *st = ct_qp_state(t, c->aqp);
    char s[32];

    if (strcmp(st, "CONNECTING") == 0)
        return;
    snprintf(s, sizeof(s), "%s", st);
    ct_fail(t,
            "QP in %s, expected CONNECTING (a dropped CONNECT_RESP changes "
            "nothing); counter timeouts=%lld",
            s, (long long)ct_counter(t, c->aqp, "timeouts"));
}

/* p: a one-packet request of opcode op at c's next PSN (ct_pkt_req) to
 * raddr/rkey carrying len bytes of data (SEND: raddr and rkey 0). */
void ch_req_pkt(struct ct_conn *c, struct mrw_pkt *p, uint8_t op,
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

/* A retransmission r of the packet o must be its copy (LOSS-15): same
 * opcode, QPN, token, PSN, length, headers and payload; RETX set; FIRST,
 * LAST, IMM, SOLICITED unchanged. */
void ch_expect_copy(struct ct *t, const struct mrw_pkt *o,
                    const struct mrw_pkt *r)
{
    const uint16_t keep = MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_IMM |
                          MROCE_F_SOLICITED;

    CT_EQ(t, "retransmission Opcode", o->base.opcode, r->base.opcode);
    CT_EQ(t, "retransmission Dst QPN", o->base.dst_qpn, r->base.dst_qpn);
    CT_EQ(t, "retransmission Token", o->base.token, r->base.token);
    CT_EQ(t, "retransmission PSN", o->base.psn, r->base.psn);
    CT_EQ(t, "retransmission Pkt Len", o->base.pkt_len, r->base.pkt_len);
    CT_EQ(t, "retransmission FIRST/LAST/IMM/SOLICITED flags",
          o->base.flags & keep, r->base.flags & keep);
    CT_REQUIRE(t, r->base.flags & MROCE_F_RETX,
               "retransmission of PSN %u without RETX (flags 0x%x)",
               r->base.psn, r->base.flags);
    if (o->base.opcode == MROCE_OP_READ_RESP ||
        o->base.opcode == MROCE_OP_ATOMIC_RESP) {
        CT_EQ(t, "retransmission Req MSN", o->u.resp.req_msn,
              r->u.resp.req_msn);
        CT_EQ(t, "retransmission Msg Len", o->u.resp.msg_len,
              r->u.resp.msg_len);
        CT_EQ(t, "retransmission Offset", o->u.resp.offset, r->u.resp.offset);
    } else {
        CT_EQ(t, "retransmission MSN", o->u.rq.req.msn, r->u.rq.req.msn);
        CT_EQ(t, "retransmission RSN", o->u.rq.req.rsn, r->u.rq.req.rsn);
        CT_EQ(t, "retransmission Remote Address", o->u.rq.req.raddr,
              r->u.rq.req.raddr);
        CT_EQ(t, "retransmission RKey", o->u.rq.req.rkey, r->u.rq.req.rkey);
        CT_EQ(t, "retransmission Msg Len", o->u.rq.req.msg_len,
              r->u.rq.req.msg_len);
        CT_EQ(t, "retransmission Offset", o->u.rq.req.offset,
              r->u.rq.req.offset);
        CT_EQ(t, "retransmission Immediate", o->u.rq.req.imm, r->u.rq.req.imm);
    }
    CT_EQ(t, "retransmission payload length", o->payload_len, r->payload_len);
    CT_REQUIRE(t,
               o->payload_len == 0 ||
                   memcmp(o->payload, r->payload, o->payload_len) == 0,
               "retransmission of PSN %u: payload differs from the first "
               "transmission's",
               r->base.psn);
}

/* Posts a READ of len bytes into mr at 0 from a remote address we serve,
 * and returns its READ_REQ (first transmission). */
void ch_post_read(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                  uint64_t wrid, uint32_t len, struct ct_rl_pkt *req)
{
    ct_agent(t,
             "POST_SEND qp=%d wrid=%llu op=READ mr=%d off=0 len=%u "
             "raddr=0x30000 rkey=0x79",
             c->aqp, (unsigned long long)wrid, mr->id, len);
    ct_rl_take_new(c, c->astart, req, 1, RL_WAIT);
    CT_EQ(t, "READ_REQ opcode", MROCE_OP_READ_REQ, req->p.base.opcode);
    CT_EQ(t, "READ_REQ Msg Len", len, req->p.u.rq.req.msg_len);
}

/* Sends READ_RESP packet i (MTU 1024) of a response to req with data. */
void ch_send_read_resp(struct ct_conn *c, const struct ct_rl_pkt *req,
                       uint32_t psn0, const uint8_t *data, uint32_t len,
                       uint32_t i, uint16_t extra)
{
    struct mrw_pkt p;
    uint32_t npk = (len + 1023) / 1024, off = i * 1024;
    uint32_t n = len - off < 1024 ? len - off : 1024;
    uint16_t fl = extra;

    if (i == 0)
        fl |= MROCE_F_FIRST;
    if (i == npk - 1)
        fl |= MROCE_F_LAST | MROCE_F_ACK_REQ;
    ct_rl_resp_pkt(c, &p, MROCE_OP_READ_RESP, psn0 + i, req->p.u.rq.req.msn,
                   len, off, data + off, n, fl);
    ct_send(c, &p);
}

/* The ACK echoing the transmission of PSN psn with TSval ts (earlier ACKs
 * are skipped, anything else fails). */
const struct ct_rx *ch_ack_of(struct ct_conn *c, uint32_t psn, uint32_t ts)
{
    for (;;) {
        const struct ct_rx *rx = ct_expect_ack(c, psn + 1, RL_WAIT);
        if (rx->p.u.ack.echo_psn == psn && rx->p.u.ack.echo_ts == ts)
            return rx;
        ct_log(c->t, "skipped %s", ct_describe(c->t, rx));
    }
}

/* READ_REQ of len bytes at off from a region holding a pattern, QP MTU
 * mtu, tester MTU tmtu: the READ_RESPs must be ceil(len/MTU) packets (1 for
 * 0) at consecutive PSNs from the IUT's Start PSN, each with Req MSN, Msg
 * Len, Offset i*MTU, min(MTU, rest) bytes from Remote Address + Offset,
 * FIRST on the first, LAST on the last. */
void ch_read_check(struct ct *t, uint32_t mtu, uint32_t tmtu, uint32_t off,
                   uint32_t len)
{
    static uint8_t d[16384];
    struct ct_mr mr = ct_mr_reg(t, 16384, "lw,rr", 0);
    struct ct_conn *c;
    struct mrw_pkt p;
    char opts[64];
    uint32_t m, npk, got = 0;

    ct_pattern(d, sizeof(d), 21);
    ct_mr_write(t, &mr, 0, d, sizeof(d));
    snprintf(opts, sizeof(opts), "mtu=%u", mtu);
    c = ct_conn_new(t, opts);
    c->par.mtu = (uint16_t)tmtu;
    ct_conn_connect(c);
    m = c->mtu;
    CT_EQ(t, "negotiated MTU (CONN-12)", mtu < tmtu ? mtu : tmtu, m);
    npk = len ? (len + m - 1) / m : 1;
    ct_pkt_read(c, &p, &mr, off, len);
    ct_send(c, &p);
    ct_consume(c, &p);
    while (got < npk) {
        const struct ct_rx *rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1,
                                              CT_WAIT);
        const struct mrw_pkt *r = &rx->p;
        uint32_t o = got * m, n = len - o < m ? len - o : m;
        uint16_t want = (got == 0 ? MROCE_F_FIRST : 0) |
                        (got == npk - 1 ? MROCE_F_LAST : 0);

        if (r->base.flags & MROCE_F_RETX)
            continue;
        CT_EQ(t, "READ_RESP PSN (consecutive from the IUT's Start PSN)",
              c->astart + got, r->base.psn);
        CT_EQ(t, "READ_RESP Req MSN", p.u.rq.req.msn, r->u.resp.req_msn);
        CT_EQ(t, "READ_RESP Msg Len", len, r->u.resp.msg_len);
        CT_EQ(t, "READ_RESP Offset", o, r->u.resp.offset);
        CT_EQ(t, "READ_RESP payload length", n, r->payload_len);
        CT_EQ(t, "READ_RESP FIRST/LAST flags", want,
              r->base.flags & (MROCE_F_FIRST | MROCE_F_LAST));
        CT_REQUIRE(t, n == 0 || memcmp(r->payload, d + off + o, n) == 0,
                   "READ_RESP %u: payload differs from the region's bytes "
                   "at %u",
                   got, off + o);
        got++;
    }
}

/* The target word (initially 0) must read as `want` in one byte order. */
void ch_expect_word(struct ct *t, const struct ct_mr *mr, uint32_t off,
                    uint64_t want)
{
    uint8_t b[8];
    ct_mr_read(t, mr, off, b, 8);
    CT_REQUIRE(t, ct_get64(b, 0) == want || ct_get64(b, 1) == want,
               "target word: expected %llu, got bytes "
               "%02x%02x%02x%02x%02x%02x%02x%02x",
               (unsigned long long)want, b[0], b[1], b[2], b[3], b[4], b[5],
               b[6], b[7]);
}

/* First transmissions only: skips retransmissions of PSNs already seen
 * (an unacknowledged packet may be resent while a case thinks). */
const struct ct_rx *ch_next_new_data(struct ct_conn *c, uint32_t *seen_hi,
                                     int *any)
{
    for (;;) {
        const struct ct_rx *rx = ct_expect_data(c, CT_WAIT);
        if (*any && mrw_psn_diff(rx->p.base.psn, *seen_hi) <= 0)
            continue;
        CT_REQUIRE(c->t, !(rx->p.base.flags & MROCE_F_RETX),
                   "first transmission of PSN %u carries RETX", rx->p.base.psn);
        *seen_hi = rx->p.base.psn;
        *any = 1;
        return rx;
    }
}

/* A READ_RESP or ATOMIC_RESP from the tester at its next PSN. */
void ch_send_resp(struct ct_conn *c, uint8_t op, uint32_t req_msn,
                  uint32_t msg_len, uint32_t off, const uint8_t *pay,
                  uint32_t n, uint32_t psn)
{
    struct mrw_pkt r;

    ct_pkt_ctl(c, &r, op);
    r.base.psn = psn;
    r.base.flags = (off == 0 ? MROCE_F_FIRST : 0) |
                   (off + n == msg_len ? MROCE_F_LAST | MROCE_F_ACK_REQ : 0);
    r.u.resp.req_msn = req_msn;
    r.u.resp.msg_len = msg_len;
    r.u.resp.offset = off;
    r.payload = n ? pay : NULL;
    r.payload_len = n;
    ct_send(c, &r);
}

/* A one-packet WRITE of 64 bytes at PSN psn into mr at offset
 * 64 * (psn - base) % len, pattern seed psn; flags added to FIRST|LAST. */
void ch_wr64(struct ct_conn *c, const struct ct_mr *mr, uint32_t base,
             uint32_t psn, uint16_t flags, struct mrw_pkt *out)
{
    static uint8_t d[64];
    struct mrw_pkt p;
    uint32_t off = (uint32_t)(64u * (psn - base)) % (mr->len - 64u + 1u);

    ct_pattern(d, sizeof(d), psn);
    ct_rl_write_pkt(c, &p, mr, off & ~63u, d, sizeof(d), psn, flags);
    ct_send(c, &p);
    if (out) {
        *out = p;
        out->payload = NULL;
    }
}

/* Waits for the ACK that echoes psn (as a new packet unless dup), skipping
 * earlier ACKs (the delayed ACKs of other packets); anything but an ACK
 * fails. */
const struct ct_rx *ch_ack_echoing(struct ct_conn *c, uint32_t psn, int wait_ms)
{
    struct ct *t = c->t;
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, wait_ms) * 1000000u;

    for (;;) {
        uint64_t now = ct_now_ns();
        const struct ct_rx *rx =
            now < end ? ct_rl_next(c, (int)((end - now) / 1000000u) + 1) : NULL;
        if (!rx)
            ct_fail(t,
                    "expected an ACK echoing PSN %u within %d ms, got "
                    "nothing",
                    psn, ct_ms(t, wait_ms));
        if (rx->p.base.opcode != MROCE_OP_ACK)
            ct_fail(t, "expected an ACK echoing PSN %u, got %s", psn,
                    ct_describe(t, rx));
        if (rx->p.u.ack.echo_psn == psn)
            return rx;
        ct_log(t, "skipped earlier %s", ct_describe(t, rx));
    }
}

/* The SACK words of ack must be exactly want[0..nwant). */
void ch_expect_sack(struct ct *t, const struct mrw_pkt *ack,
                    const uint32_t *want, unsigned nwant)
{
    char g[128] = "", w[128] = "";
    int bad = ack->u.ack.sack_words != nwant;

    for (unsigned j = 0; j < nwant && !bad; j++)
        bad = ack->u.ack.sack[j] != want[j];
    if (!bad)
        return;
    for (unsigned j = 0; j < ack->u.ack.sack_words && j < 8; j++)
        snprintf(g + strlen(g), sizeof(g) - strlen(g), " %08x",
                 ack->u.ack.sack[j]);
    for (unsigned j = 0; j < nwant; j++)
        snprintf(w + strlen(w), sizeof(w) - strlen(w), " %08x", want[j]);
    ct_fail(t, "SACK (cum %u): expected %u word(s)%s, got %u word(s)%s",
            ack->u.ack.cum_psn, nwant, w, ack->u.ack.sack_words, g);
}

/* Posts a WRITE of len bytes from mr+off (to an address the tester never
 * checks). */
void ch_post_write(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                   uint64_t wrid, uint32_t off, uint32_t len)
{
    ct_agent(t,
             "POST_SEND qp=%d wrid=%llu op=WRITE mr=%d off=%u len=%u "
             "raddr=0x10000 rkey=0x77",
             c->aqp, (unsigned long long)wrid, mr->id, off, len);
}

/* A connection with the IUT as sender (and as connecting side, so it has
 * no RTT sample and its first probe timeout is 5 x min_rto = 100 ms: no
 * probe disturbs the exchange), ACKs withheld, and k one-packet WRITE WRs
 * (wrid 1..k) received; pk[i] holds WR i+1's packet. */
struct ct_conn *ch_iut_sends(struct ct *t, const char *opts, int k,
                             struct ct_rl_pkt *pk, struct ct_mr *mr)
{
    char o[128];
    struct ct_conn *c;

    snprintf(o, sizeof(o), "min_rto_us=20000%s%s", *opts ? " " : "", opts);
    c = ct_accept(t, o);
    *mr = ct_mr_reg(t, 4096, "lw", 0x61);
    c->auto_ack = 0;
    for (int i = 0; i < k; i++)
        ch_post_write(t, c, mr, (uint64_t)i + 1, 64u * (uint32_t)i, 64);
    ct_rl_take_new(c, c->astart, pk, k, RL_WAIT);
    return c;
}

void ch_ack_upto(struct ct_conn *c, const struct mrw_pkt *p, int ce)
{
    struct mrw_pkt a;
    unsigned words = 0;

    c->rx_count++;
    c->ce_count += ce != 0;
    ct_pkt_ctl(c, &a, MROCE_OP_ACK);
    if (mrw_psn_diff(c->rcv_cum, p->base.psn + 1) > 0) {
        a.u.ack.cum_psn = p->base.psn + 1;
    } else {
        a.u.ack.cum_psn = c->rcv_cum;
        for (unsigned k = 1; k < CT_RCV_BITS; k++)
            if (c->rcv_bits[k / 8] & (1u << (k % 8))) {
                unsigned b = k - 1;
                a.u.ack.sack[b / 32] |= 1u << (b % 32);
                words = b / 32 + 1;
            }
    }
    a.u.ack.sack_words = (uint8_t)words;
    a.u.ack.echo_psn = p->base.psn;
    a.u.ack.echo_ts = p->base.tsval;
    a.u.ack.echo_entropy = p->base.entropy;
    a.u.ack.echo_flags = ce ? MROCE_ECHO_CE : 0;
    a.u.ack.ce_count = c->ce_count;
    a.u.ack.rx_count = c->rx_count;
    a.u.ack.credit = MROCE_CREDIT_UNLIMITED;
    a.base.entropy = p->base.entropy;
    ct_send(c, &a);
}

const struct ct_rx *ch_next_data_until_done(struct ct *t, struct ct_conn *c,
                                            uint64_t wrid, uint64_t end,
                                            unsigned *n)
{
    for (;;) {
        const struct ct_rx *rx = ct_next(c, 20);
        if (!rx || ++*n % 64 == 0) {
            struct ct_wc w = ct_poll(t, c->aqp, "send", 0);
            if (w.n) {
                CT_REQUIRE(t, w.wrid == wrid && !strcmp(w.status, "SUCCESS"),
                           "WRITE completed with %s", w.status);
                return NULL;
            }
            CT_REQUIRE(t, ct_now_ns() < end,
                       "the IUT's WRITE did not complete in 20 s");
        }
        if (rx && mrw_opcode_has_psn(rx->p.base.opcode) &&
            rx->p.base.opcode != MROCE_OP_ACK)
            return rx;
    }
}
