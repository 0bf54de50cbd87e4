/*
 * cases_more.c - requirements that need the agent's later additions
 * (docs/spec/conformance-agent.md): POST_SEND solicited=1 (SEM-15),
 * protection domains through PD_ALLOC and pd= (the remote side of SEM-27),
 * the endpoint's rx_credit_bytes through DEVICE (the sharing formula of
 * CC-17), and the QP attributes handshake_timeout_ms (CONN-6) and
 * max_ack_delay_us (REL-19).
 *
 * An agent that lacks one of these answers ERR ENOTSUP (AGENT-9) and the
 * case is skipped with that reason; the checks themselves are never
 * relaxed for it.
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

/* ---- SEM-15: the SOLICITED flag ---- */

/* Collects the IUT's data packets of one message (up to its LAST flag)
 * and requires SOLICITED on every one (want 1) or on none (want 0).
 * Returns the number of packets. */
static int solicited_msg(struct ct_conn *c, int want, const char *what)
{
    struct ct *t = c->t;
    int n = 0;

    for (;;) {
        const struct ct_rx *rx = ct_expect_data(c, CT_WAIT);
        uint16_t fl = rx->p.base.flags;
        if (fl & MROCE_F_RETX)
            continue;
        n++;
        if (want)
            CT_REQUIRE(t, fl & MROCE_F_SOLICITED,
                       "%s posted solicited=1: packet %d without the "
                       "SOLICITED flag (SEM-15): %s",
                       what, n, ct_describe(t, rx));
        else
            CT_REQUIRE(t, !(fl & MROCE_F_SOLICITED),
                       "%s posted without solicited: packet %d carries the "
                       "SOLICITED flag (no solicited event was asked for): "
                       "%s",
                       what, n, ct_describe(t, rx));
        if (fl & MROCE_F_LAST)
            return n;
    }
}

CT_CASE(more_solicited_flag_on_wire, "SEM-15",
        "IUT as requester (MTU 1024): SEND_IMM and WRITE_IMM of 2500 bytes "
        "posted with solicited=1 carry SOLICITED on each of their 3 "
        "packets; a SEND of 2500 bytes posted without it carries it on "
        "none; all three complete SUCCESS")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0x21);
    struct ct_conn *c = ct_conn_new(t, "mtu=1024");

    c->par.mtu = 1024;
    ct_conn_accept(c);
    ct_agent(t,
             "POST_SEND qp=%d wrid=1 op=SEND_IMM mr=%d off=0 len=2500 "
             "imm=0x1234 solicited=1",
             c->aqp, mr.id);
    CT_EQ(t, "packets of the SEND_IMM", 3, solicited_msg(c, 1, "SEND_IMM"));
    ct_expect_wc(t, c->aqp, "send", 1, "SUCCESS", CT_WAIT);
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE_IMM mr=%d off=0 len=2500 "
             "raddr=0x10000 rkey=0x77 imm=5 solicited=1",
             c->aqp, mr.id);
    CT_EQ(t, "packets of the WRITE_IMM", 3, solicited_msg(c, 1, "WRITE_IMM"));
    ct_expect_wc(t, c->aqp, "send", 2, "SUCCESS", CT_WAIT);
    ct_agent(t, "POST_SEND qp=%d wrid=3 op=SEND mr=%d off=0 len=2500",
             c->aqp, mr.id);
    CT_EQ(t, "packets of the SEND", 3, solicited_msg(c, 0, "SEND"));
    ct_expect_wc(t, c->aqp, "send", 3, "SUCCESS", CT_WAIT);
}

CT_CASE(more_solicited_recv_no_other_effect, "SEM-15 SEM-6 SEM-24",
        "IUT as responder: a 3-packet SEND with IMM and a WRITE with IMM, "
        "every packet flagged SOLICITED, are acknowledged, placed and "
        "completed exactly as without the flag (RECV_IMM with len and imm, "
        "WRITE bytes in the region)")
{
    static uint8_t d[2500], w[300];
    struct ct_mr rb = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_mr wr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_conn_new(t, "mtu=1024");
    struct ct_wc wc;
    uint32_t psn;

    c->par.mtu = 1024;
    ct_conn_connect(c);
    ct_post_recv(t, c->aqp, 11, &rb, 0, 4096);
    ct_post_recv(t, c->aqp, 12, &rb, 0, 4096);
    ct_pattern(d, sizeof(d), 151);
    c->imm = 0xabcd0001;
    psn = ct_send_send(c, d, sizeof(d), MROCE_F_SOLICITED | MROCE_F_IMM);
    ct_expect_ack(c, psn + 3, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 11, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "RECV_IMM") == 0,
               "solicited SEND with IMM completed as %s, expected RECV_IMM",
               wc.op);
    CT_EQ(t, "completion len", sizeof(d), wc.len);
    CT_REQUIRE(t, wc.has_imm, "RECV_IMM completion without imm");
    CT_EQ(t, "completion imm", 0xabcd0001u, wc.imm);
    ct_expect_mem(t, &rb, 0, d, sizeof(d));

    ct_pattern(w, sizeof(w), 152);
    c->imm = 0xabcd0002;
    psn = ct_send_write(c, &wr, 100, w, sizeof(w),
                        MROCE_F_SOLICITED | MROCE_F_IMM);
    ct_expect_ack(c, psn + 1, CT_WAIT);
    wc = ct_expect_wc(t, c->aqp, "recv", 12, "SUCCESS", CT_WAIT);
    CT_REQUIRE(t, strcmp(wc.op, "RECV_IMM") == 0,
               "solicited WRITE with IMM completed as %s, expected RECV_IMM",
               wc.op);
    CT_EQ(t, "completion imm", 0xabcd0002u, wc.imm);
    ct_expect_mem(t, &wr, 100, w, sizeof(w));
    ct_expect_mem_fill(t, &wr, 0, 100, 0);
    ct_expect_no_wc(t, c->aqp, "recv", CT_QUIET);
}

/* ---- SEM-27: remote accesses across protection domains ---- */

/* PD_ALLOC; the case is skipped if the agent has no PDs (ENOTSUP). */
static int pd_alloc(struct ct *t)
{
    return (int)ct_kv_u64(t, ct_agent(t, "PD_ALLOC"), "pd");
}

/* MR_REG in domain pd. */
static struct ct_mr mr_reg_pd(struct ct *t, uint32_t len, const char *access,
                              int fill, int pd)
{
    struct ct_mr m;
    const char *r = ct_agent(t, "MR_REG len=%u access=%s fill=%d pd=%d", len,
                             access, fill, pd);

    memset(&m, 0, sizeof(m));
    m.id = (int)ct_kv_u64(t, r, "mr");
    m.addr = ct_kv_u64(t, r, "addr");
    m.rkey = (uint32_t)ct_kv_u64(t, r, "rkey");
    m.lkey = (uint32_t)ct_kv_u64(t, r, "lkey");
    m.len = len;
    return m;
}

CT_CASE(more_pd_remote_write_other_domain, "SEM-27 SEM-17 REL-27 SEM-16",
        "region in PD 1 (lw,rw,rr,ra, filled 0x5e), QP in the implicit PD "
        "0: a WRITE with its RKey is NAKed REMOTE_ACCESS_KEY (as an "
        "unregistered key would be) and nothing is placed; a QP in PD 1 "
        "writes the same region with the same RKey: ACK, bytes placed")
{
    uint8_t d[64];
    int pd = pd_alloc(t);
    struct ct_mr mr = mr_reg_pd(t, 4096, "lw,rw,rr,ra", 0x5e, pd);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_conn *k = ct_connect(t, "");
    struct ct_conn *o;
    struct ct_mr none = mr;
    uint32_t psn;
    char opts[32];

    /* The same refusal for a key that names no region (SEM-17 (b)). */
    none.rkey ^= 0x00ff0000;
    psn = ct_send_write(k, &none, 0, d, sizeof(d), 0);
    ct_expect_nak(k, psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);

    ct_pattern(d, sizeof(d), 171);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_expect_nak(c, psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x5e);

    snprintf(opts, sizeof(opts), "pd=%d", pd);
    o = ct_connect(t, opts);
    psn = ct_send_write(o, &mr, 0, d, sizeof(d), 0);
    ct_expect_ack(o, psn + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, sizeof(d), 4096 - sizeof(d), 0x5e);
}

CT_CASE(more_pd_remote_read_atomic_other_domain, "SEM-27 SEM-17 REL-27",
        "region of the implicit PD 0 (lw,rr,ra, filled 0x6f), QPs in a "
        "PD_ALLOC'd domain: a READ_REQ and a FETCH_ADD with its RKey are "
        "each NAKed REMOTE_ACCESS_KEY, no READ_RESP or ATOMIC_RESP, the "
        "region unchanged")
{
    int pd = pd_alloc(t);
    char opts[32];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr,ra", 0x6f);
    struct ct_conn *r, *a;
    struct mrw_pkt p;

    snprintf(opts, sizeof(opts), "pd=%d", pd);
    r = ct_connect(t, opts);
    a = ct_connect(t, opts);
    ct_pkt_read(r, &p, &mr, 0, 64);
    ct_send(r, &p);
    ct_consume(r, &p);
    ct_expect_nak(r, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_no_op(r, MROCE_OP_READ_RESP, CT_QUIET);

    ct_pkt_atomic(a, &p, MROCE_OP_FETCH_ADD, &mr, 8, 1, 0);
    ct_send(a, &p);
    ct_consume(a, &p);
    ct_expect_nak(a, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_no_op(a, MROCE_OP_ATOMIC_RESP, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x6f);
}

/* ---- CC-17: the receiver's credit share ---- */

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
static uint32_t credit_burst(struct ct_conn *c, struct ct_conn **others,
                             int n, const struct ct_mr *mr)
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
        ct_log(t, "attempt %d: Credit %u, a share for fewer active QPs "
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
        CT_EQ(t, "Credit right after a WRITE without the CREDIT flag on "
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

/* ---- CONN-6 with a set handshake_timeout ---- */

CT_CASE(more_conn6_short_handshake_timeout, "CONN-6 CONN-20 SEM-23",
        "QP with handshake_timeout_ms=200 connects to a silent tester, a "
        "send and a receive posted: not in ERROR before 180 ms, in ERROR "
        "by 200 ms + 150 ms allowance, both WRs flushed, no CONNECT_REQ "
        "afterwards, counter timeouts >= 1")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_conn *c = ct_conn_new(t, "handshake_timeout_ms=200");
    uint64_t t0, t1;
    int64_t to;

    ct_post_recv(t, c->aqp, 1, &mr, 0, 64);
    t0 = ct_now_ns();
    ct_accept_begin(c, c->qpn);
    t1 = ct_now_ns(); /* the CONNECT_REQ has come: connect was before */
    ct_agent(t,
             "POST_SEND qp=%d wrid=2 op=WRITE mr=%d off=0 len=8 "
             "raddr=0x100 rkey=1",
             c->aqp, mr.id);
    /* ERROR seen less than 180 ms after t0 (before QP_CONNECT) is early
     * for sure (10% for clocks the IUT may read a little early, as
     * conn_handshake_timeout allows); CONNECTING seen when the query
     * left more than 350 ms after t1 is late for sure. */
    for (;;) {
        uint64_t q0, el;
        const char *st;
        ct_recv(t, 5);
        q0 = ct_now_ns();
        st = ct_qp_state(t, c->aqp);
        el = ct_now_ns() - t0;
        if (strcmp(st, "ERROR") == 0) {
            CT_REQUIRE(t, el >= 180000000ull,
                       "QP in ERROR %.1f ms after QP_CONNECT, before its "
                       "handshake_timeout (200 ms)",
                       el / 1e6);
            ct_log(t, "ERROR seen %.1f ms after QP_CONNECT", el / 1e6);
            break;
        }
        CT_REQUIRE(t, strcmp(st, "CONNECTING") == 0,
                   "QP in %s while its handshake is unanswered", st);
        CT_REQUIRE(t, q0 - t1 < (uint64_t)(200 + ct_ms(t, 150)) * 1000000u,
                   "QP still CONNECTING %.1f ms after its CONNECT_REQ "
                   "arrived (handshake_timeout 200 ms)",
                   (q0 - t1) / 1e6);
    }
    ct_expect_wc(t, c->aqp, "send", 2, "WR_FLUSH_ERR", CT_WAIT);
    ct_expect_wc(t, c->aqp, "recv", 1, "WR_FLUSH_ERR", CT_WAIT);
    while (ct_recv(t, 0))
        ;
    ct_expect_silence(t, 150);
    to = ct_counter(t, c->aqp, "timeouts");
    if (to >= 0)
        CT_REQUIRE(t, to >= 1,
                   "counter timeouts is %lld after a handshake timeout",
                   (long long)to);
}

CT_CASE(more_conn6_long_handshake_timeout, "CONN-6 CONN-10 CONN-11",
        "QP with handshake_timeout_ms=3000 connects to a tester that "
        "answers its CONNECT_REQ only after 1.3 s (beyond the 1 s "
        "default): still CONNECTING then, and the late CONNECT_RESP "
        "completes the handshake (confirming ACK, RTS)")
{
    struct ct_conn *c = ct_conn_new(t, "handshake_timeout_ms=3000");
    struct mrw_pkt resp;
    const struct ct_rx *rx;
    uint64_t end;

    ct_accept_begin(c, c->qpn);
    end = ct_now_ns() + 1300000000ull;
    while (ct_now_ns() < end) {
        rx = ct_next(c, 20);
        if (rx && rx->p.base.opcode != MROCE_OP_CONNECT_REQ)
            ct_fail(t, "unanswered handshake: expected only CONNECT_REQ "
                       "retransmissions, got %s",
                    ct_describe(t, rx));
    }
    CT_REQUIRE(t, strcmp(ct_qp_state(t, c->aqp), "CONNECTING") == 0,
               "QP in %s 1.3 s into a handshake with handshake_timeout "
               "3 s, expected CONNECTING",
               ct_qp_state(t, c->aqp));
    ct_pkt_connect_resp(c, &resp);
    ct_send(c, &resp);
    c->connected = 1;
    for (;;) {
        rx = ct_next(c, ct_ms(t, CT_WAIT));
        if (!rx)
            ct_fail(t, "no confirming ACK within %d ms of our CONNECT_RESP",
                    ct_ms(t, CT_WAIT));
        if (rx->p.base.opcode == MROCE_OP_ACK)
            break;
        if (rx->p.base.opcode != MROCE_OP_CONNECT_REQ)
            ct_fail(t, "expected the confirming ACK, got %s",
                    ct_describe(t, rx));
    }
    CT_EQ(t, "confirming ACK Cum PSN", c->start_psn, rx->p.u.ack.cum_psn);
    CT_EQ(t, "confirming ACK Echo TS", resp.base.tsval, rx->p.u.ack.echo_ts);
    ct_expect_qp_state(t, c->aqp, "RTS", CT_WAIT);
}

/* ---- REL-19 with a set max_ack_delay ---- */

/* A one-packet WRITE of 16 bytes without ACK_REQ at c's next PSN. */
static void plain_write(struct ct_conn *c, const struct ct_mr *mr,
                        struct mrw_pkt *p)
{
    static uint8_t d[16];

    ct_rl_write_pkt(c, p, mr, 0, d, sizeof(d), c->snd_nxt, 0);
    c->snd_nxt++;
    c->msn++;
    ct_send(c, p);
}

/* Scheduling allowance (ms, scaled) on top of max_ack_delay for when an
 * ACK reaches the tester, as rel2_max_ack_delay_bound allows. */
#define MORE_SCHED_MS 40

/* One attempt of 5 samples; 0 if on time, 1 (reason in why) if late. */
static int mad_attempt(struct ct_conn *c, const struct ct_mr *mr,
                       uint64_t mad_ns, char *why, size_t cap)
{
    struct ct *t = c->t;
    uint32_t delays[5];
    uint64_t bound = mad_ns + (uint64_t)ct_ms(t, MORE_SCHED_MS) * 1000000u;

    for (int i = 0; i < 5; i++) {
        struct mrw_pkt p;
        const struct ct_rx *rx;
        uint64_t t0 = ct_now_ns(), rtt;

        plain_write(c, mr, &p);
        rx = ct_rl_next(c, 2000);
        rtt = ct_now_ns() - t0;
        if (!rx)
            ct_fail(t,
                    "no ACK within %d ms of a WRITE without ACK_REQ "
                    "(max_ack_delay 2 ms, REL-19)",
                    ct_ms(t, 2000));
        if (rx->p.base.opcode != MROCE_OP_ACK)
            ct_fail(t, "expected an ACK, got %s", ct_describe(t, rx));
        CT_EQ(t, "ACK Cum PSN", p.base.psn + 1, rx->p.u.ack.cum_psn);
        CT_EQ(t, "ACK Echo PSN", p.base.psn, rx->p.u.ack.echo_psn);
        CT_REQUIRE(t, rx->p.u.ack.ack_delay <= rtt,
                   "ACK Delay %u ns exceeds the %llu ns between our sending "
                   "the packet and receiving its ACK (REL-16)",
                   rx->p.u.ack.ack_delay, (unsigned long long)rtt);
        delays[i] = rx->p.u.ack.ack_delay;
        ct_log(t, "sample %d: round trip %llu ns, ACK Delay %u ns", i,
               (unsigned long long)rtt, delays[i]);
        if (rtt > bound) {
            snprintf(why, cap,
                     "an ACK came %llu ns after its WRITE without ACK_REQ; "
                     "REL-19 bounds it by max_ack_delay (2 ms) and we "
                     "allow %d ms of scheduling",
                     (unsigned long long)rtt, ct_ms(t, MORE_SCHED_MS));
            return 1;
        }
        ct_expect_silence(t, 5);
    }
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (delays[j] < delays[i]) {
                uint32_t x = delays[i];
                delays[i] = delays[j];
                delays[j] = x;
            }
    /* The IUT's own measure of the hold (REL-16) must not exceed
     * max_ack_delay beyond its timer's scheduling (median of 5). */
    if (delays[2] > mad_ns + (uint64_t)ct_ms(t, 2) * 1000000u) {
        snprintf(why, cap,
                 "median ACK Delay %u ns > max_ack_delay 2 ms + %d ms",
                 delays[2], ct_ms(t, 2));
        return 1;
    }
    return 0;
}

CT_CASE(more_rel19_max_ack_delay_2ms, "REL-19 REL-16 REL-14",
        "QP with max_ack_delay_us=2000: 5 single WRITEs without ACK_REQ, "
        "one at a time, each ACKed within 2 ms + 40 ms scheduling "
        "allowance; ACK Delay <= the round trip we measured; median ACK "
        "Delay <= 2 ms + 2 ms (a late attempt is repeated, 3 fail)")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "max_ack_delay_us=2000");
    char why[256];

    for (int attempt = 1;; attempt++) {
        if (!mad_attempt(c, &mr, 2000000u, why, sizeof(why)))
            return;
        ct_log(t, "attempt %d late: %s", attempt, why);
        if (attempt == 3)
            ct_fail(t, "3 attempts late, the last: %s", why);
        while (ct_rl_next(c, 50) != NULL)
            ;
    }
}

CT_CASE(more_rel19_timer_from_first_packet, "REL-19 REL-16",
        "QP with max_ack_delay_us=60000: a WRITE without ACK_REQ, 35 ms "
        "later a second one; the ACK must come within 60 ms + 20 ms "
        "allowance of the FIRST (a timer restarted by the second would "
        "send it at 95 ms) and cover both, ACK Delay <= the second's "
        "round trip (a late attempt is repeated, 3 fail)")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
    struct ct_conn *c = ct_connect(t, "max_ack_delay_us=60000");
    uint64_t bound = (60 + (uint64_t)ct_ms(t, 20)) * 1000000u;

    for (int attempt = 1;; attempt++) {
        struct mrw_pkt p1, p2;
        const struct ct_rx *rx;
        uint64_t t1, t2, now;

        t1 = ct_now_ns();
        plain_write(c, &mr, &p1);
        rx = ct_next(c, 35); /* unscaled: the point is 35 < 60 */
        t2 = ct_now_ns();
        plain_write(c, &mr, &p2);
        if (!rx)
            rx = ct_rl_next(c, 2000);
        now = ct_now_ns();
        if (!rx)
            ct_fail(t, "no ACK within 2 s of two WRITEs (max_ack_delay "
                       "60 ms, REL-19)");
        if (rx->p.base.opcode != MROCE_OP_ACK)
            ct_fail(t, "expected an ACK, got %s", ct_describe(t, rx));
        if (now - t1 <= bound) {
            /* On time; it covers what had arrived when it left. */
            CT_REQUIRE(t, ct_ack_covers(&rx->p, p1.base.psn),
                       "ACK (Cum PSN %u) does not cover the first WRITE "
                       "(PSN %u)",
                       rx->p.u.ack.cum_psn, p1.base.psn);
            if (ct_ack_covers(&rx->p, p2.base.psn))
                CT_REQUIRE(t, rx->p.u.ack.ack_delay <= now - t2,
                           "ACK Delay %u ns exceeds the second WRITE's "
                           "round trip %llu ns (REL-16: it echoes the "
                           "most recent packet)",
                           rx->p.u.ack.ack_delay,
                           (unsigned long long)(now - t2));
            ct_log(t, "ACK %.1f ms after the first WRITE, %.1f ms after "
                      "the second",
                   (now - t1) / 1e6, (now - t2) / 1e6);
            return;
        }
        ct_log(t, "attempt %d: ACK %.1f ms after the first WRITE", attempt,
               (now - t1) / 1e6);
        CT_REQUIRE(t, attempt < 3,
                   "3 attempts: the ACK came %.1f ms after the first "
                   "unacknowledged WRITE; REL-19 bounds it by "
                   "max_ack_delay (60 ms) + %d ms allowance",
                   (now - t1) / 1e6, ct_ms(t, 20));
        /* Drain the rest of this attempt before the next. */
        while (ct_rl_next(c, 100) != NULL)
            ;
    }
}
