/*
 * cases_cc.c - receiver-driven credits (congestion.md section 5), the part
 * of congestion control that is on the wire: the CREDIT flag in CONNECT
 * packets and on data packets (CC-16), the Credit field of the IUT's ACKs
 * and its share of the endpoint's rx_credit_bytes (CC-17, through DEVICE),
 * and how a sender in credit mode bounds its bytes in flight before the
 * first ACK and by the Credit of each ACK (CC-18, CC-2).
 *
 * The tester never acknowledges within these windows unless a case says
 * so, and the IUT's QPs get min_rto 200 ms: probes (PROBE flag, exempt
 * from CC-2) and retransmissions carry PSNs already counted, so the number
 * of distinct new PSNs is what the limits bound.
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

CT_CASE(cc_credit_flag_in_credit_mode, "CC-16 WIRE-8 WIRE-6",
        "QP with cc=credit: CREDIT in its CONNECT_RESP Flags and on every "
        "READ_RESP it sends; as requester, CREDIT in its CONNECT_REQ and on "
        "every WRITE packet")
{
    static uint8_t d[3000];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0);
    struct ct_conn *c = ct_conn_new(t, "cc=credit mtu=1024");
    struct ct_conn *a;
    struct mrw_pkt p;
    int got = 0;

    ct_conn_connect(c);
    CT_REQUIRE(t, c->hs.u.conn.flags & MROCE_CONN_CREDIT,
               "CONNECT_RESP Flags 0x%x lack CREDIT", c->hs.u.conn.flags);
    ct_pkt_read(c, &p, &mr, 0, 3000);
    ct_send(c, &p);
    ct_consume(c, &p);
    while (got < 3) {
        const struct ct_rx *rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1,
                                              CT_WAIT);
        CT_REQUIRE(t, rx->p.base.flags & MROCE_F_CREDIT,
                   "READ_RESP without the CREDIT flag: %s", ct_describe(t, rx));
        got++;
    }
    a = ct_conn_new(t, "cc=credit mtu=1024");
    ct_conn_accept(a);
    CT_REQUIRE(t, a->hs.u.conn.flags & MROCE_CONN_CREDIT,
               "CONNECT_REQ Flags 0x%x lack CREDIT", a->hs.u.conn.flags);
    ct_pattern(d, sizeof(d), 70);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=0 len=3000 "
             "raddr=0x100 rkey=1",
             a->aqp, mr.id);
    for (got = 0; got < 3; got++) {
        const struct ct_rx *rx = ct_expect_data(a, CT_WAIT);
        CT_REQUIRE(t, rx->p.base.flags & MROCE_F_CREDIT,
                   "WRITE packet without the CREDIT flag: %s",
                   ct_describe(t, rx));
    }
    ct_expect_wc(t, a->aqp, "send", 1, "SUCCESS", CT_WAIT);
}

CT_CASE(cc_no_credit_flag_by_default, "CC-16 WIRE-8",
        "QP with cc=delay: no CREDIT in its CONNECT_RESP or CONNECT_REQ "
        "Flags, nor on its data packets")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr", 0);
    struct ct_conn *c = ct_conn_new(t, "cc=delay");
    struct ct_conn *a;
    struct mrw_pkt p;
    const struct ct_rx *rx;

    ct_conn_connect(c);
    CT_EQ(t, "CONNECT_RESP CREDIT flag", 0,
          c->hs.u.conn.flags & MROCE_CONN_CREDIT);
    ct_pkt_read(c, &p, &mr, 0, 100);
    ct_send(c, &p);
    ct_consume(c, &p);
    rx = ct_expect_op(c, MROCE_OP_READ_RESP, 1, CT_WAIT);
    CT_EQ(t, "READ_RESP CREDIT flag", 0, rx->p.base.flags & MROCE_F_CREDIT);
    a = ct_conn_new(t, "cc=delay");
    ct_conn_accept(a);
    CT_EQ(t, "CONNECT_REQ CREDIT flag", 0,
          a->hs.u.conn.flags & MROCE_CONN_CREDIT);
    ct_agent(t, "POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=10", a->aqp,
             mr.id);
    rx = ct_expect_data(a, CT_WAIT);
    CT_EQ(t, "SEND CREDIT flag", 0, rx->p.base.flags & MROCE_F_CREDIT);
}

/* A one-packet WRITE with ACK_REQ (and CREDIT if credit) to c; returns
 * the ACK's Credit. */
static uint32_t ack_credit(struct ct_conn *c, const struct ct_mr *mr,
                           int credit)
{
    uint8_t d[16] = {0};
    uint32_t psn = ct_send_write(c, mr, 0, d, sizeof(d),
                                 credit ? MROCE_F_CREDIT : 0);
    return ct_expect_ack(c, psn + 1, CT_WAIT)->p.u.ack.credit;
}

CT_CASE(cc_ack_credit_field, "CC-17 REL-14",
        "ACKs to a peer that did not advertise CREDIT carry Credit "
        "0xFFFFFFFF; to a peer that did (data with CREDIT), 0xFFFFFFFF or "
        "at least MTU + 80")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "cc=credit mtu=1024");
    struct ct_conn *k = ct_conn_new(t, "cc=credit mtu=1024");
    uint32_t cr;

    CT_EQ(t, "Credit to a peer without CREDIT", MROCE_CREDIT_UNLIMITED,
          ack_credit(c, &mr, 0));
    k->par.flags = MROCE_CONN_CREDIT;
    ct_conn_connect(k);
    cr = ack_credit(k, &mr, 1);
    CT_REQUIRE(t, cr == MROCE_CREDIT_UNLIMITED || cr >= 1024 + 80,
               "Credit %u to a CREDIT peer is neither unlimited nor at "
               "least MTU + 80",
               cr);
}

/* The newest data packet new_psns / first_new saw (ACKs echo it). */
static struct mrw_pkt last;

/* Distinct new PSNs the IUT sends to c within ms (after hi). */
static uint32_t new_psns(struct ct_conn *c, int ms, uint32_t *hi, int *any)
{
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(c->t, ms) * 1000000u;
    uint32_t n = 0;

    while (ct_now_ns() < end) {
        const struct ct_rx *rx = ct_next(c, 5);
        if (!rx || !mrw_opcode_has_psn(rx->p.base.opcode))
            continue;
        if (!*any || mrw_psn_diff(rx->p.base.psn, *hi) > 0) {
            n += *any ? (uint32_t)mrw_psn_diff(rx->p.base.psn, *hi) : 1;
            *hi = rx->p.base.psn;
            *any = 1;
            last = rx->p;
            last.payload = NULL;
        }
    }
    return n;
}

/* Waits (CT_WAIT) for the next new PSN, which must come. */
static void first_new(struct ct_conn *c, uint32_t *hi, int *any)
{
    for (;;) {
        const struct ct_rx *rx = ct_expect_data(c, CT_WAIT);
        if (*any && mrw_psn_diff(rx->p.base.psn, *hi) <= 0)
            continue;
        *hi = rx->p.base.psn;
        *any = 1;
        last = rx->p;
        last.payload = NULL;
        return;
    }
}

CT_CASE(cc_credit_limits_inflight, "CC-18 CC-2 CC-17",
        "credit-mode requester (MTU 1024) with 8 WRITEs of 1024 bytes to a "
        "CREDIT peer: before any ACK at most 4 packets (4 * (MTU + 80)); "
        "after an ACK of them with Credit 1, one packet at a time; after "
        "Credit 0xFFFFFFFF, the rest at once")
{
    struct ct_mr mr = ct_mr_reg(t, 8192, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "cc=credit mtu=1024 min_rto_us=200000");
    uint32_t hi = 0, n;
    int any = 0;

    c->par.flags = MROCE_CONN_CREDIT;
    c->par.mtu = 1024;
    ct_conn_accept(c);
    c->auto_ack = 0;
    for (int i = 0; i < 8; i++)
        ct_agent(t,
                 "POST_SEND qp=%d wrid=%d op=WRITE mr=%d off=0 len=1024 "
                 "raddr=0x100 rkey=1",
                 c->aqp, i, mr.id);
    first_new(c, &hi, &any);
    n = 1 + new_psns(c, 100, &hi, &any);
    CT_REQUIRE(t, n <= 4,
               "before the first ACK a credit-mode sender sent %u packets of "
               "1024 bytes (CC-18: at most 4 * (MTU + 80) in flight)",
               n);
    ct_send_ack_credit(c, &last, 1);
    first_new(c, &hi, &any);
    n = new_psns(c, 100, &hi, &any);
    CT_REQUIRE(t, n == 0,
               "after an ACK of everything with Credit 1 the sender sent %u "
               "new packets after the first (CC-18: credit MTU + 80, one "
               "packet in flight)",
               n + 1);
    ct_send_ack_credit(c, NULL, MROCE_CREDIT_UNLIMITED);
    c->auto_ack = 1;
    for (int i = 0; i < 8; i++) {
        struct ct_wc wc = ct_poll(t, c->aqp, "send", 0);
        uint64_t end = ct_now_ns() + 1000000000ull;
        while (!wc.n && ct_now_ns() < end) {
            while (ct_recv(t, 0))
                ;
            wc = ct_poll(t, c->aqp, "send", 5);
        }
        CT_REQUIRE(t, wc.n, "only %d of 8 WRITEs completed", i);
        CT_EQ(t, "completion wrid", i, wc.wrid);
        CT_REQUIRE(t, strcmp(wc.status, "SUCCESS") == 0,
                   "WRITE %d completed %s", i, wc.status);
    }
}

/* Encodes a one-packet WRITE of 16 bytes with CREDIT (and ACK_REQ if
 * ackreq) at c's next PSN, consuming it. */
static size_t credit_write(struct ct_conn *c, const struct ct_mr *mr,
                           int ackreq, uint8_t *buf, size_t cap)
{
    static uint8_t d[16];
    struct mrw_pkt p;

    ct_rl_write_pkt(c, &p, mr, 0, d, sizeof(d), c->snd_nxt,
                    MROCE_F_CREDIT | (ackreq ? MROCE_F_ACK_REQ : 0));
    c->snd_nxt++;
    c->msn++;
    return ct_encode(c->t, &p, buf, cap);
}

/* The Credit of the ACK for c's PSN psn (the first ACK that covers it;
 * ACKs of c before it are skipped, other connections' packets too). */
static uint32_t credit_of_ack(struct ct_conn *c, uint32_t psn)
{
    return ct_expect_ack(c, psn + 1, CT_WAIT)->p.u.ack.credit;
}

/* A CREDIT peer connection to a new IUT QP (MTU 1024 both ways). */
static struct ct_conn *credit_peer(struct ct *t, int credit)
{
    struct ct_conn *c = ct_conn_new(t, "cc=credit mtu=1024");

    if (credit)
        c->par.flags = MROCE_CONN_CREDIT;
    c->par.mtu = 1024;
    ct_conn_connect(c);
    return c;
}

/* Sends CREDIT WRITEs without ACK_REQ on others[0..n) and then one with
 * ACK_REQ on c, back to back; returns the Credit of c's ACK.  The others'
 * ACKs (due within max_ack_delay) are left in the tester's queue. */
static uint32_t credit_burst(struct ct_conn *c, struct ct_conn **others, int n,
                             const struct ct_mr *mr)
{
    static uint8_t bufs[8][256];
    size_t lens[8];
    uint32_t psn = c->snd_nxt;

    for (int i = 0; i < n; i++)
        lens[i] = credit_write(others[i], mr, 0, bufs[i], sizeof(bufs[i]));
    lens[n] = credit_write(c, mr, 1, bufs[n], sizeof(bufs[n]));
    for (int i = 0; i <= n; i++)
        ct_send_raw(c->t, c->entropy, bufs[i], lens[i], CT_ECN_ECT0);
    return credit_of_ack(c, psn);
}

/* Idle long enough that no QP counts as active (CC-17: 1 ms), draining
 * whatever the IUT sends meanwhile. */
static void credit_idle(struct ct *t)
{
    uint64_t end = ct_now_ns() + 20000000u;
    while (ct_now_ns() < end)
        ct_recv(t, 2);
}

/* One measurement of a share that depends on the IUT seeing the burst's
 * packets within 1 ms of each other: `want`, or a share for fewer active
 * QPs (the IUT's own scheduling spread the burst), which is retried; any
 * other value fails. */
static void credit_share_check(struct ct *t, struct ct_conn *c,
                               struct ct_conn **others, int n,
                               const struct ct_mr *mr, uint32_t budget,
                               uint32_t floor_)
{
    for (int attempt = 1;; attempt++) {
        uint32_t got, want = budget / (uint32_t)(n + 1);
        int fewer = 0;
        if (want < floor_)
            want = floor_;
        credit_idle(t);
        got = credit_burst(c, others, n, mr);
        if (got == want)
            return;
        for (int k = 1; k <= n; k++) {
            uint32_t s = budget / (uint32_t)k;
            if (got == (s < floor_ ? floor_ : s))
                fewer = 1;
        }
        CT_REQUIRE(t, fewer,
                   "Credit %u in the ACK of a CREDIT WRITE sent right after "
                   "CREDIT WRITEs on %d other QPs; CC-17 gives "
                   "max(floor(%u / %d), MTU + 80) = %u",
                   got, n, budget, n + 1, want);
        ct_log(t,
               "attempt %d: Credit %u, a share for fewer active QPs "
               "(the burst spread over more than 1 ms?)",
               attempt, got);
        CT_REQUIRE(t, attempt < 3,
                   "3 attempts: Credit %u each time where CC-17 gives %u for "
                   "%d QPs that received CREDIT data within 1 ms",
                   got, want, n + 1);
    }
}

CT_CASE(more_cc17_credit_share, "CC-17 REL-14 CC-16",
        "DEVICE rx_credit_bytes=120000, three QPs with CREDIT peers and one "
        "without (MTU 1024): a lone CREDIT WRITE is ACKed with Credit "
        "120000; right after CREDIT WRITEs on the two other QPs, with "
        "40000 (N = 3); 20 ms later alone again, 120000 (the 1 ms "
        "activity window); right after a WRITE without the CREDIT flag on "
        "another QP, still 120000; the non-CREDIT peer gets 0xFFFFFFFF")
{
    const uint32_t B = 120000;
    struct ct_conn *a, *b, *c, *d, *others[2];
    struct ct_mr mr;
    uint32_t psn;
    uint8_t z[16] = {0};

    ct_agent(t, "DEVICE rx_credit_bytes=%u", B);
    mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    a = credit_peer(t, 1);
    b = credit_peer(t, 1);
    c = credit_peer(t, 1);
    d = credit_peer(t, 0);
    others[0] = b;
    others[1] = c;

    credit_idle(t);
    psn = ct_send_write(a, &mr, 0, z, sizeof(z), MROCE_F_CREDIT);
    CT_EQ(t, "Credit, one active QP (floor(120000 / 1))", B,
          credit_of_ack(a, psn));
    credit_share_check(t, a, others, 2, &mr, B, 1024 + 80);
    credit_idle(t);
    psn = ct_send_write(a, &mr, 0, z, sizeof(z), MROCE_F_CREDIT);
    CT_EQ(t, "Credit 20 ms after the others' data (one active QP)", B,
          credit_of_ack(a, psn));
    /* Data without the CREDIT flag does not make a QP active. */
    credit_idle(t);
    {
        static uint8_t bufs[2][256];
        size_t len0;
        struct mrw_pkt p;
        ct_rl_write_pkt(b, &p, &mr, 0, z, sizeof(z), b->snd_nxt, 0);
        b->snd_nxt++;
        b->msn++;
        len0 = ct_encode(t, &p, bufs[0], sizeof(bufs[0]));
        psn = a->snd_nxt;
        ct_send_raw(t, a->entropy, bufs[0], len0, CT_ECN_ECT0);
        ct_send_raw(t, a->entropy, bufs[1],
                    credit_write(a, &mr, 1, bufs[1], sizeof(bufs[1])),
                    CT_ECN_ECT0);
        CT_EQ(t,
              "Credit right after a WRITE without the CREDIT flag on "
              "another QP (it is not active: N = 1)",
              B, credit_of_ack(a, psn));
    }
    psn = ct_send_write(d, &mr, 0, z, sizeof(z), 0);
    CT_EQ(t, "Credit to the peer that did not advertise CREDIT",
          MROCE_CREDIT_UNLIMITED, credit_of_ack(d, psn));
}

CT_CASE(more_cc17_credit_floor, "CC-17 REL-14",
        "DEVICE rx_credit_bytes=1500, two QPs with CREDIT peers (MTU "
        "1024): alone, Credit 1500; right after a CREDIT WRITE on the "
        "other QP, max(750, MTU + 80) = 1104; with rx_credit_bytes=0 "
        "(after RESET), 0xFFFFFFFF")
{
    struct ct_conn *a, *b;
    struct ct_mr mr;
    uint32_t psn;
    uint8_t z[16] = {0};

    ct_agent(t, "DEVICE rx_credit_bytes=1500");
    mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    a = credit_peer(t, 1);
    b = credit_peer(t, 1);
    credit_idle(t);
    psn = ct_send_write(a, &mr, 0, z, sizeof(z), MROCE_F_CREDIT);
    CT_EQ(t, "Credit, one active QP (max(1500, 1104))", 1500,
          credit_of_ack(a, psn));
    credit_share_check(t, a, &b, 1, &mr, 1500, 1024 + 80);

    ct_agent(t, "RESET");
    ct_agent(t, "DEVICE rx_credit_bytes=0");
    mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    a = credit_peer(t, 1);
    psn = ct_send_write(a, &mr, 0, z, sizeof(z), MROCE_F_CREDIT);
    CT_EQ(t, "Credit with rx_credit_bytes 0", MROCE_CREDIT_UNLIMITED,
          credit_of_ack(a, psn));
}
