/*
 * test_engine_ratehint.c - the receiver's rate hint (CC-24..29,
 * src/engine/ratehint.c).
 *
 * On the network model: N senders WRITE to one receiver; while all of them
 * send, each sender's hint is the receiver's rate (95% of rx_rate_mbps
 * for more than one sender, all of it for one) divided by N.  With the attribute off on either side nothing is
 * negotiated: no RATE flag, ACK Credit unlimited, the old window rules.
 * Then, driving ratehint.c's sender and receiver sides directly on a
 * model clock, two senders whose RTTs differ fourfold get the same hint
 * and the same rate (shares are rates, not windows), where two fixed
 * windows of the same size would not.  With rate_hint 3 each sender
 * asks for its share before data and hears the share of all the senders
 * that start with it (CC-30..33); with rate_hint 2, the default, a lone
 * sender's first packet goes with its request, its answer comes at once
 * and opens its window (CC-36..38), and the first packets of senders that
 * start together leave spread over a round trip (CC-43).
 */
#include <stdlib.h>
#include <string.h>

#include "case_table.h"
#include "engine_int.h"
#include "testbed.h"
#include "testutil.h"

#define RX_MBPS 20000u /* the receiver's configured rate */
#define MSG (64u * 1024)
#define TOTAL (2u << 20) /* per sender */

struct incast {
    struct mroce_testbed *tb;
    mre_qp *qs[8], *qr[8];
    uint8_t *src[8], *dst[8];
    mre_mr *ms[8], *md[8];
    unsigned n;
};

/* The model's one-way delay for the next incast_new, ns (0: its
 * default). */
static mroce_tstamp net_delay;

/* n senders (hosts 0..n-1) to host n, each with TOTAL bytes posted;
 * rate: both sides' rate_hint. */
static int incast_new(struct incast *x, unsigned n, int rate)
{
    struct mroce_netdrive_config cfg;
    struct mre_ep_config ec;
    struct mre_qp_attr at;

    memset(x, 0, sizeof(*x));
    x->n = n;
    mroce_netdrive_config_default(&cfg);
    cfg.net.hosts = n + 1;
    cfg.net.rate_bps = 25000000000ull;
    cfg.net.seed = 3;
    if (net_delay)
        cfg.net.delay = net_delay;
    mre_ep_config_default(&ec);
    ec.rx_rate_mbps = RX_MBPS;
    if (!CHECK(mroce_tb_new(&x->tb, &cfg, &ec) == 0))
        return -1;
    mre_qp_attr_default(&at);
    at.max_send_wr = 64;
    at.rate_hint = (uint8_t)rate;
    for (unsigned i = 0; i < n; i++) {
        if (!CHECK(mroce_tb_connect(x->tb, i, n, &at, &x->qs[i], &x->qr[i],
                                    100000000) == 0))
            return -1;
        x->src[i] = malloc(TOTAL);
        x->dst[i] = calloc(1, TOTAL);
        memset(x->src[i], (int)i + 1, TOTAL);
        mre_mr_reg(x->tb->h[i].ep, x->src[i], TOTAL, MROCE_ACCESS_LOCAL_WRITE,
                   &x->ms[i]);
        mre_mr_reg(x->tb->h[n].ep, x->dst[i], TOTAL,
                   MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                   &x->md[i]);
    }
    mroce_tstamp t0 = mroce_netdrive_now(x->tb->d);
    for (unsigned i = 0; i < n; i++)
        for (uint32_t off = 0; off < TOTAL; off += MSG) {
            struct mroce_sge sg = {(uint64_t)(uintptr_t)(x->src[i] + off), MSG,
                                   mre_mr_lkey(x->ms[i])};
            struct mroce_send_wr wr = {
                .wr_id = off,
                .sg_list = &sg,
                .num_sge = 1,
                .opcode = MROCE_WR_WRITE,
                .send_flags = off + MSG == TOTAL ? MROCE_SEND_SIGNALED : 0,
                .remote_addr = (uint64_t)(uintptr_t)(x->dst[i] + off),
                .rkey = mre_mr_rkey(x->md[i])};
            CHECK(mre_qp_post_send(x->qs[i], &wr, NULL, t0) == 0);
        }
    mroce_netdrive_kick_all(x->tb->d);
    return 0;
}

static void incast_run(struct incast *x, mroce_tstamp for_ns)
{
    mroce_tstamp end = mroce_netdrive_now(x->tb->d) + for_ns;
    while (mroce_netdrive_now(x->tb->d) < end)
        if (!mroce_netdrive_step(x->tb->d))
            break;
}

static void incast_del(struct incast *x)
{
    mroce_tb_del(x->tb);
    for (unsigned i = 0; i < x->n; i++) {
        free(x->src[i]);
        free(x->dst[i]);
    }
}

/* CC-25, CC-26: N active senders, each hinted 95% of the rate / N (one
 * sender: the whole rate). */
static void test_equal_share(void)
{
    static const unsigned ns[] = {1, 2, 4, 7};
    for (unsigned k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        struct incast x;
        unsigned n = ns[k];
        if (incast_new(&x, n, 1) < 0)
            return;
        incast_run(&x, 300000); /* 300 us: every sender is sending */
        uint32_t want = n > 1 ? RX_MBPS * 95 / 100 / n : RX_MBPS;
        for (unsigned i = 0; i < n; i++) {
            CHECK_EQ_INT(x.qs[i]->rh.on, 1);
            CHECK_EQ_INT(x.qr[i]->rh.on, 1);
            CHECK_MSG(x.qs[i]->rh.hint >= want - want / 100 &&
                          x.qs[i]->rh.hint <= want + want / 100,
                      "N=%u sender %u hint %u Mbit/s, want %u", n, i,
                      x.qs[i]->rh.hint, want);
        }
        incast_run(&x, 20000000);
        for (unsigned i = 0; i < n; i++)
            CHECK(memcmp(x.src[i], x.dst[i], TOTAL) == 0);
        incast_del(&x);
    }
}

/* CC-24: with rate_hint 0 nothing is negotiated and the ACK's Credit
 * keeps its old meaning (unlimited without credits); a side that sets
 * RATE follows hints only if the peer set RATE too. */
static void test_off(void)
{
    struct incast x;
    if (incast_new(&x, 2, 0) < 0)
        return;
    incast_run(&x, 300000);
    for (unsigned i = 0; i < 2; i++) {
        CHECK_EQ_INT(x.qs[i]->rh.on, 0);
        CHECK_EQ_INT(x.qr[i]->rh.on, 0);
        CHECK_EQ(x.qs[i]->rh.hint, MROCE_CREDIT_UNLIMITED);
        CHECK_EQ(x.qs[i]->peer_credit, MROCE_CREDIT_UNLIMITED);
        CHECK_EQ_INT(x.qs[i]->rh.pace_wait, 0);
        CHECK_EQ(mre_rh_conn_flags(x.qs[i]), 0);
    }
    incast_run(&x, 20000000);
    for (unsigned i = 0; i < 2; i++)
        CHECK(memcmp(x.src[i], x.dst[i], TOTAL) == 0);
    /* One side alone: no hints either way. */
    mre_qp *q = x.qs[0];
    q->attr.rate_hint = 1;
    CHECK_EQ(mre_rh_conn_flags(q), MROCE_CONN_RATE);
    mre_rh_on_conn(q, 0);
    CHECK_EQ_INT(q->rh.on, 0);
    mre_rh_on_conn(q, MROCE_CONN_RATE | MROCE_CONN_CREDIT);
    CHECK_EQ_INT(q->rh.on, 1);
    q->attr.rate_hint = 0;
    mre_rh_on_conn(q, MROCE_CONN_RATE);
    CHECK_EQ_INT(q->rh.on, 0);
    incast_del(&x);
}

/*
 * CC-26..28 on a model clock: two senders, RTT 10 us and 40 us, send
 * full packets to one receiver as their window cap and pacing allow; a
 * packet arrives RTT/2 after it leaves and its ACK, with the receiver's
 * share, RTT after.  The receiver's link is not modelled (the shares are
 * what is tested).  With hints the two get the same hint and rates within
 * 5%; with a fixed window of 8 packets and no hints their rates differ
 * as their RTTs do.
 */
#define PKT (4096u + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN)
#define NEV 4096

struct ev {
    mroce_tstamp at;
    unsigned who, kind; /* kind 0: arrival at the receiver, 1: ACK */
};

static void two_rtts(int hints, uint64_t sent[2], uint32_t hint[2])
{
    struct incast x;
    static struct ev evs[NEV];
    unsigned nev = 0;
    const mroce_tstamp rtt[2] = {10000, 40000}, t0 = 1000000000ull;
    uint32_t inflight[2] = {0, 0}, cap[2];

    if (incast_new(&x, 2, 1) < 0)
        return;
    for (unsigned i = 0; i < 2; i++) {
        mre_qp *q = x.qs[i];
        q->rh.on = (uint8_t)hints;
        q->srtt = rtt[i];
        q->cc.base_rtt = rtt[i];
        q->rh.hint = MROCE_CREDIT_UNLIMITED;
        q->rh.pace_next = 0;
        q->rh.grant = RH_G_OPEN; /* asked and answered (CC-30) */
        q->rh.tx_last = t0;
        cap[i] = 8 * PKT;
        sent[i] = 0;
    }
    for (mroce_tstamp now = t0; now < t0 + 20000000; now += 100) {
        /* Deliver what is due, in any order (all at this tick). */
        for (unsigned k = 0; k < nev;) {
            struct ev e = evs[k];
            if (e.at > now) {
                k++;
                continue;
            }
            evs[k] = evs[--nev];
            if (e.kind == 0) {
                mre_rh_on_data(x.tb->h[2].ep, x.qr[e.who], PKT, now);
                if (nev < NEV)
                    evs[nev++] = (struct ev){now + rtt[e.who] / 2, e.who, 1};
            } else {
                inflight[e.who] -= PKT;
                if (hints) {
                    uint32_t h = mre_rh_share(x.tb->h[2].ep, x.qr[e.who], now);
                    cap[e.who] = mre_rh_on_hint(x.qs[e.who], h, now);
                }
            }
        }
        for (unsigned i = 0; i < 2; i++) {
            if (nev + 1 >= NEV || (inflight[i] && inflight[i] + PKT > cap[i]))
                continue;
            if (hints && !mre_rh_may_send(x.qs[i], now))
                continue;
            if (hints)
                mre_rh_on_sent(x.qs[i], PKT, now);
            inflight[i] += PKT;
            if (now >= t0 + 10000000)
                sent[i]++; /* the second half: steady state */
            evs[nev++] = (struct ev){now + rtt[i] / 2, i, 0};
        }
    }
    hint[0] = x.qs[0]->rh.hint;
    hint[1] = x.qs[1]->rh.hint;
    incast_del(&x);
}

static void test_two_rtts(void)
{
    uint64_t s[2];
    uint32_t h[2];

    two_rtts(1, s, h);
    printf("hints: RTT 10 us %llu packets (hint %u Mbit/s), RTT 40 us %llu "
           "(hint %u)\n",
           (unsigned long long)s[0], h[0], (unsigned long long)s[1], h[1]);
    CHECK_EQ(h[0], h[1]);
    CHECK_EQ(h[0], RX_MBPS * 95 / 100 / 2);
    CHECK_MSG(s[0] > 0 && s[1] > 0 && s[0] * 100 < s[1] * 105 &&
                  s[1] * 100 < s[0] * 105,
              "rates %llu vs %llu packets", (unsigned long long)s[0],
              (unsigned long long)s[1]);
    /* The rate the hint allows: 9.5 Gbit/s over 10 ms, within 5%. */
    CHECK(s[0] * PKT * 8 > 95u * 1000000u * 95u / 100u);
    two_rtts(0, s, h);
    printf("windows: RTT 10 us %llu packets, RTT 40 us %llu\n",
           (unsigned long long)s[0], (unsigned long long)s[1]);
    CHECK(s[0] > 3 * s[1]);
}

/*
 * CC-30..33 over the network model: 4 senders with rate_hint 3 start at
 * once.  Each sender's first packet is a share request and no data leaves
 * before its answer; the receiver answers the requests that arrive
 * together with the share of all of them, so no sender is first told the
 * whole rate.  Sender 0's first request is lost: it
 * sends its data after the wait (CC-31) instead of asking again and
 * again, and every byte arrives.
 */
/* 1 if pkt is a share request (CC-30): an ACK with ACK_REQ and CREDIT. */
static int is_share_request(const struct mrw_pkt *pkt)
{
    return pkt->base.opcode == MROCE_OP_ACK &&
           (pkt->base.flags & MROCE_F_ACK_REQ) &&
           (pkt->base.flags & MROCE_F_CREDIT);
}

struct ask_watch {
    unsigned n;
    unsigned reqs[8], data_first[8], dropped;
    uint32_t first_hint[8];
};

static int ask_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct ask_watch *w = user;
    struct mrw_pkt pkt;

    if (mrw_pkt_decode(&pkt, p->buf, p->len) != 0)
        return MROCE_NETDRIVE_PASS;
    if (p->src < w->n && p->dst == w->n) { /* sender -> receiver */
        if (is_share_request(&pkt)) {
            if (w->reqs[p->src]++ == 0 && p->src == 0) {
                w->dropped++;
                return MROCE_NETDRIVE_DROP; /* CC-31 must end the wait */
            }
        } else if (mrw_opcode_has_psn(pkt.base.opcode) && !w->reqs[p->src]) {
            w->data_first[p->src]++;
        }
    } else if (p->src == w->n && p->dst < w->n &&
               pkt.base.opcode == MROCE_OP_ACK && !w->first_hint[p->dst]) {
        w->first_hint[p->dst] = pkt.u.ack.credit;
    }
    return MROCE_NETDRIVE_PASS;
}

static void test_ask_first(void)
{
    struct incast x;
    struct ask_watch w;
    /* The three whose requests arrived: 0.95 x rate / 3 each. */
    uint32_t want = RX_MBPS * 95 / 100 / 3;
    unsigned whole = 0;

    memset(&w, 0, sizeof w);
    w.n = 4;
    if (incast_new(&x, 4, 3) < 0)
        return;
    mroce_netdrive_set_tx_hook(x.tb->d, ask_hook, &w);
    incast_run(&x, 20000000);
    CHECK_EQ_INT(w.dropped, 1);
    for (unsigned i = 0; i < x.n; i++) {
        CHECK_EQ_INT(x.qs[i]->rh.ask, 1);
        CHECK_MSG(w.data_first[i] == 0,
                  "sender %u: %u data packets before its share request", i,
                  w.data_first[i]);
        /* Sender 0 asked once, then sent without an answer (CC-31); of
         * the others, the first heard was alone and is answered at once
         * with the whole rate (CC-37), and the rest were answered
         * together, with the share of the three whose requests arrived
         * (CC-32, CC-33), not the whole rate. */
        CHECK_MSG(w.reqs[i] == 1, "sender %u: %u share requests", i, w.reqs[i]);
        if (i > 0 && w.first_hint[i] > want + want / 100)
            whole++;
        CHECK(memcmp(x.src[i], x.dst[i], TOTAL) == 0);
    }
    CHECK_MSG(whole == 1,
              "%u senders first hinted more than the share of three (%u "
              "Mbit/s): only the first heard, alone then, may be",
              whole, want);
    incast_del(&x);
}

/*
 * CC-36..38 over the network model: one sender with rate_hint 2 (the
 * default) and nobody else sending to its receiver.  Its share request
 * goes first and its first data packet right behind it, but no second one
 * before the answer (CC-36); the receiver, with no other sender active,
 * answers at once rather than after the gather (rate_active / 8 =
 * 6.25 us; the one-way delay is 20 us here), with the whole rate
 * (CC-37); the answer opens the window to the share over the request's
 * round trip, above init_cwnd (CC-38).
 */
struct lone_watch {
    mroce_tstamp req_at, answer_at;
    unsigned data_before, answers;
    uint32_t hint;
};

static int lone_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct lone_watch *w = user;
    struct mrw_pkt pkt;

    if (mrw_pkt_decode(&pkt, p->buf, p->len) != 0)
        return MROCE_NETDRIVE_PASS;
    if (p->src == 0 && p->dst == 1) {
        if (is_share_request(&pkt) && !w->req_at)
            w->req_at = p->now;
        else if (mrw_opcode_has_psn(pkt.base.opcode) && !w->answers)
            w->data_before++;
    } else if (p->src == 1 && p->dst == 0 && pkt.base.opcode == MROCE_OP_ACK &&
               w->answers++ == 0) {
        w->answer_at = p->now;
        w->hint = pkt.u.ack.credit;
    }
    return MROCE_NETDRIVE_PASS;
}

static void test_lone_first(void)
{
    struct incast x;
    struct lone_watch w;
    uint32_t cwnd0;

    memset(&w, 0, sizeof w);
    /* 20 us each way: the share over the round trip (20 Gbit/s x 40 us,
     * 100 KB) is above init_cwnd (64 KiB). */
    net_delay = 20000;
    if (incast_new(&x, 1, 2) < 0)
        return;
    net_delay = 0;
    cwnd0 = x.qs[0]->cc.cwnd;
    mroce_netdrive_set_tx_hook(x.tb->d, lone_hook, &w);
    while (!w.answers && mroce_netdrive_step(x.tb->d))
        ;
    /* Delivered and handled: the answer reaches the sender 20 us on. */
    incast_run(&x, 21000);
    CHECK_EQ_INT(x.qs[0]->rh.ask, 1);
    CHECK(w.req_at != 0);
    /* The first packet leaves within two round trips of the request
     * (CC-43), so it may come after the answer. */
    CHECK_MSG(w.data_before <= 1,
              "%u data packets before the answer left the receiver "
              "(CC-36: at most the first one goes with the request)",
              w.data_before);
    CHECK_MSG(w.answer_at - w.req_at < 20000 + 4000,
              "answered %llu ns after the request left, 20 us one way "
              "(CC-37: at once, not after the 6.25 us gather)",
              (unsigned long long)(w.answer_at - w.req_at));
    CHECK_EQ_INT(w.hint, RX_MBPS);
    /* 20 Gbit/s over the request's 40 us round trip: 100,000 bytes;
     * slow start from the first packet's ACK alone gives init_cwnd plus
     * one packet. */
    CHECK_MSG(x.qs[0]->cc.cwnd >= 95000,
              "window %u after the answer, %u before (CC-38: the share "
              "over the request's round trip, 100,000 bytes)",
              x.qs[0]->cc.cwnd, cwnd0);
    incast_run(&x, 20000000);
    CHECK(memcmp(x.src[0], x.dst[0], TOTAL) == 0);
    incast_del(&x);
}

/*
 * CC-43 over the network model: 8 senders with rate_hint 2 start at once.
 * Each sends at most its first data packet before its answer (CC-36), and
 * that packet leaves at a random point within two round trips of its
 * request (the handshake's, before any RTT sample), not right behind it:
 * at least two of the eight leave more than a quarter of a round trip
 * after their requests, where senders that send it at once are all within
 * a packet's time.
 */
struct spread_watch {
    mroce_tstamp req_at[8], data_at[8];
    unsigned n;
};

static int spread_hook(void *user, struct mroce_netdrive_pkt *p)
{
    struct spread_watch *w = user;
    struct mrw_pkt pkt;

    if (p->src >= w->n || p->dst != w->n ||
        mrw_pkt_decode(&pkt, p->buf, p->len) != 0)
        return MROCE_NETDRIVE_PASS;
    if (is_share_request(&pkt) && !w->req_at[p->src])
        w->req_at[p->src] = p->now;
    else if (mrw_opcode_has_psn(pkt.base.opcode) && !w->data_at[p->src])
        w->data_at[p->src] = p->now;
    return MROCE_NETDRIVE_PASS;
}

static void test_first_spread(void)
{
    struct incast x;
    struct spread_watch w;
    unsigned late = 0;

    memset(&w, 0, sizeof w);
    w.n = 8;
    if (incast_new(&x, 8, 2) < 0)
        return;
    mroce_netdrive_set_tx_hook(x.tb->d, spread_hook, &w);
    incast_run(&x, 20000000);
    for (unsigned i = 0; i < x.n; i++) {
        mroce_tstamp h = x.qs[i]->hs_rtt, d;

        CHECK_MSG(w.req_at[i] && w.data_at[i] >= w.req_at[i],
                  "sender %u: share request at %llu ns, first data at %llu", i,
                  (unsigned long long)w.req_at[i],
                  (unsigned long long)w.data_at[i]);
        CHECK(h > 0);
        d = w.data_at[i] - w.req_at[i];
        late += d > h / 4;
        CHECK(memcmp(x.src[i], x.dst[i], TOTAL) == 0);
    }
    CHECK_MSG(late >= 2,
              "%u of 8 first packets left more than a quarter of the "
              "handshake's round trip after their share requests (CC-43: "
              "at a random point within two round trips)",
              late);
    incast_del(&x);
}

static const struct test_case cases[] = {
    {"ask_first", test_ask_first},
    {"equal_share", test_equal_share},
    {"first_spread", test_first_spread},
    {"lone_first", test_lone_first},
    {"off", test_off},
    {"two_rtts", test_two_rtts},
};

int main(int argc, char **argv)
{
    return TEST_CASES_MAIN("test_engine_ratehint", cases, argc, argv);
}
