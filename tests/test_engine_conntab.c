/*
 * test_engine_conntab.c - the endpoint's handshake lookups (conntab.c) with
 * hundreds of QPs: CONNECT_REQs reach the listener they name (or the oldest
 * one), a retransmitted CONNECT_REQ is answered by the QP that accepted it,
 * destroyed QPs leave the table, and a recycled slot serves its new QP.
 *
 * Two endpoints exchange packets directly (no network model): every packet
 * one writes is handed to the other at once, so the order is known.  Every
 * CONNECT_REQ the client sends is kept and replayed later, as a peer whose
 * answer was lost would.  Besides the observable behaviour, the table's
 * answer is compared with the linear scan it replaced (the old predicate
 * over ep->live, first match wins) for every key the test knows, including
 * keys shared by several QPs.
 */
#include <stdlib.h>
#include <string.h>

#include <mroce/wire.h>

#include "engine_end.h"

#define NQP 500 /* client QPs; named listeners get NAMED of them */
#define NAMED 400
#define MAXQ 600 /* not a power of two: the table rounds up */

static mre_qp *qp_new(struct end *e)
{
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.send_cq = a.recv_cq = e->cq;
    a.max_send_wr = a.max_recv_wr = 4;
    a.window = 64;
    a.npaths = 4;
    mre_qp *qp = NULL;
    if (mre_qp_new(e->ep, &a, &qp) < 0)
        return NULL;
    return qp;
}

/* The saved CONNECT_REQ of each client QP. */
static uint8_t req[NQP][128];
static size_t req_len[NQP];
static uint32_t req_src[NQP]; /* its sender's QPN */

static int client_index(mre_qp **cq, uint32_t qpn)
{
    for (int i = 0; i < NQP; i++)
        if (mre_qp_num(cq[i]) == qpn)
            return i;
    return -1;
}

/* Move every packet from `from` to `to`; save CONNECT_REQs of the client.
 * Returns packets moved. */
static int pump(struct end *from, struct end *to, mre_qp **client)
{
    uint8_t buf[MROCE_MAX_PKT_LEN];
    struct mre_tx_info ti;
    int moved = 0;
    int n;
    while ((n = mre_ep_write_pkt(from->ep, buf, sizeof(buf), &ti, 0)) > 0) {
        struct mrw_pkt p;
        if (client && mrw_pkt_decode(&p, buf, (size_t)n) == 0 &&
            p.base.opcode == MROCE_OP_CONNECT_REQ) {
            int i = client_index(client, ti.qp_num);
            if (CHECK(i >= 0) && CHECK((size_t)n <= sizeof(req[0]))) {
                memcpy(req[i], buf, (size_t)n);
                req_len[i] = (size_t)n;
                req_src[i] = ti.qp_num;
            }
        }
        struct mre_rx_info ri = {from->addr, MROCE_ECN_ECT0, 0};
        mre_ep_recv(to->ep, buf, (size_t)n, &ri, 0);
        moved++;
    }
    return moved;
}

/* Deliver one packet to ep as if from `from`; report who answers and with
 * what (0 if nobody). */
static uint8_t deliver(mre_ep *ep, const uint8_t *b, size_t n,
                       const struct mre_addr *from, uint32_t *answer_qpn)
{
    struct mre_rx_info ri = {*from, MROCE_ECN_ECT0, 0};
    mre_ep_recv(ep, b, n, &ri, 0);
    uint8_t buf[MROCE_MAX_PKT_LEN];
    struct mre_tx_info ti;
    uint8_t op = 0;
    *answer_qpn = 0;
    int k = mre_ep_write_pkt(ep, buf, sizeof(buf), &ti, 0);
    if (k > 0) {
        struct mrw_pkt p;
        if (mrw_pkt_decode(&p, buf, (size_t)k) == 0)
            op = p.base.opcode;
        *answer_qpn = ti.qp_num;
    }
    while (mre_ep_write_pkt(ep, buf, sizeof(buf), &ti, 0) > 0)
        ; /* nothing else should be pending; drain anyway */
    return op;
}

/* Rewrite a saved request's destination QPN (re-encoded, CRC included). */
static size_t retarget(uint8_t *out, const uint8_t *in, size_t n, uint32_t dst)
{
    struct mrw_pkt p;
    if (mrw_pkt_decode(&p, in, n) != 0)
        return 0;
    p.base.dst_qpn = dst;
    return mrw_pkt_encode(&p, out, MROCE_MAX_PKT_LEN);
}

/* The scan conntab.c replaced, verbatim in its predicate. */
static mre_qp *old_scan(mre_ep *ep, const struct mre_addr *from,
                        uint32_t src_qpn, uint64_t token)
{
    for (uint32_t i = 0; i < ep->nqps; i++) {
        mre_qp *q = ep->live[i];
        if (q->state != MROCE_QPS_LISTEN && q->state != MROCE_QPS_RESET &&
            q->state != MROCE_QPS_CONNECTING && q->peer_qpn == src_qpn &&
            q->peer_token == token && q->peer.len == from->len &&
            !memcmp(q->peer.data, from->data, q->peer.len))
            return q;
    }
    return NULL;
}

static int agree(mre_ep *ep, const struct mre_addr *from, uint32_t qpn,
                 uint64_t token)
{
    return mre_conntab_find(ep, from, qpn, token) ==
           old_scan(ep, from, qpn, token);
}

/* Compare table and scan for every key this test can name. */
static void check_all_keys(struct end *srv, struct end *cli, mre_qp **client)
{
    struct mre_addr zero;
    memset(&zero, 0, sizeof(zero));
    struct mre_addr other = cli->addr;
    other.data[5] ^= 1;
    long bad = 0;
    for (int i = 0; i < NQP; i++) {
        uint64_t tok = client[i]->local_token;
        uint32_t q = mre_qp_num(client[i]);
        bad += !agree(srv->ep, &cli->addr, q, tok);
        bad += !agree(srv->ep, &cli->addr, q, tok ^ 1);
        bad += !agree(srv->ep, &cli->addr, q ^ 0x10000, tok);
        bad += !agree(srv->ep, &other, q, tok);
        bad += !agree(srv->ep, &cli->addr, q, 0);
        /* the client's side: its QPs are keyed by the server's half */
        bad += !agree(cli->ep, &srv->addr, client[i]->peer_qpn,
                      client[i]->peer_token);
    }
    bad += !agree(srv->ep, &zero, 0, 0);
    bad += !agree(srv->ep, &cli->addr, 0, 0);
    CHECK_EQ(bad, 0);
}

int main(void)
{
    struct end cli, srv;
    if (!CHECK(end_new(&cli, 1, 1001, MAXQ, 4096) == 0) ||
        !CHECK(end_new(&srv, 2, 1002, MAXQ, 4096) == 0))
        return TESTUTIL_SUMMARY("test_engine_conntab");
    static mre_qp *client[NQP], *server[NQP];
    int ok = 1;
    for (int i = 0; i < NQP && ok; i++) {
        client[i] = qp_new(&cli);
        server[i] = qp_new(&srv);
        ok = CHECK(client[i] && server[i]);
    }
    if (!ok)
        return TESTUTIL_SUMMARY("test_engine_conntab");
    /* Slots are handed out lowest first. */
    CHECK_EQ(mre_qp_num(server[0]) & 0xffff, 0);
    CHECK_EQ(mre_qp_num(server[NQP - 1]) & 0xffff, NQP - 1);

    /* Listen in reverse so that FIFO order differs from slot order. */
    for (int i = NQP - 1; i >= 0; i--)
        CHECK_EQ(mre_qp_listen(server[i], 0), 0);
    /* The first NAMED connect to server[i] by QPN, the rest to QPN 0: those
     * must take the oldest remaining listeners, server[NQP-1] downwards. */
    for (int i = 0; i < NQP; i++)
        CHECK_EQ(mre_qp_connect(client[i], &srv.addr,
                                i < NAMED ? mre_qp_num(server[i]) : 0, 0),
                 0);
    for (int round = 0; round < 10; round++)
        if (pump(&cli, &srv, client) + pump(&srv, &cli, NULL) == 0)
            break;
    int wrong = 0;
    for (int i = 0; i < NQP; i++) {
        mre_qp *want = i < NAMED ? server[i] : server[NQP - 1 - (i - NAMED)];
        wrong += mre_qp_state(client[i]) != MROCE_QPS_RTS ||
                 mre_qp_state(server[i]) != MROCE_QPS_RTS ||
                 mre_qp_remote_qpn(client[i]) != mre_qp_num(want) ||
                 mre_qp_remote_qpn(want) != mre_qp_num(client[i]) ||
                 req_len[i] == 0 || req_src[i] != mre_qp_num(client[i]);
    }
    CHECK_EQ(wrong, 0);
    CHECK(srv.ep->listen_head == NULL && srv.ep->listen_tail == NULL);
    check_all_keys(&srv, &cli, client);

    /* Retransmitted requests: the accepting QP answers, nobody else. */
    struct mroce_ep_counters c0, c1;
    mre_ep_get_counters(srv.ep, &c0);
    wrong = 0;
    for (int i = 0; i < NQP; i++) {
        uint32_t who;
        uint8_t op = deliver(srv.ep, req[i], req_len[i], &cli.addr, &who);
        wrong += op != MROCE_OP_CONNECT_RESP ||
                 who != mre_qp_remote_qpn(client[i]);
    }
    CHECK_EQ(wrong, 0);
    mre_ep_get_counters(srv.ep, &c1);
    CHECK_EQ(c1.drop_no_listener, c0.drop_no_listener);

    /* The same request from another address is a new connection attempt:
     * no listener is left. */
    struct mre_addr other = cli.addr;
    other.data[5] ^= 1;
    uint32_t who;
    CHECK_EQ(deliver(srv.ep, req[7], req_len[7], &other, &who), 0);
    mre_ep_get_counters(srv.ep, &c1);
    CHECK_EQ(c1.drop_no_listener, c0.drop_no_listener + 1);

    /* A failed QP stays in the table: its peer's retry is dropped there. */
    mre_qp *acc = server[3]; /* accepted client[3] (a named one) */
    struct mroce_qp_counters qc0, qc1;
    mre_qp_get_counters(acc, &qc0);
    CHECK_EQ(mre_qp_set_error(acc), 0);
    CHECK_EQ(deliver(srv.ep, req[3], req_len[3], &cli.addr, &who), 0);
    mre_qp_get_counters(acc, &qc1);
    CHECK_EQ(qc1.drop_state, qc0.drop_state + 1);

    /* Destroy every third server QP; their requests find nobody now. */
    uint32_t freed_slot[NQP];
    int nfreed = 0;
    for (int i = 0; i < NQP; i += 3) {
        freed_slot[nfreed++] = mre_qp_num(server[i]) & 0xffff;
        mre_qp_del(server[i]);
        server[i] = NULL;
    }
    mre_ep_get_counters(srv.ep, &c0);
    wrong = 0;
    for (int i = 0; i < NAMED; i += 3)
        wrong += deliver(srv.ep, req[i], req_len[i], &cli.addr, &who) != 0;
    CHECK_EQ(wrong, 0);
    mre_ep_get_counters(srv.ep, &c1);
    CHECK_EQ(c1.drop_no_listener - c0.drop_no_listener,
             (uint64_t)((NAMED + 2) / 3));
    check_all_keys(&srv, &cli, client);

    /* New QPs take the freed slots, lowest first, and listen; the old
     * requests (aimed at the new QPNs) connect them, and a replay is then
     * answered by the new QP. */
    wrong = 0;
    int reused = 0;
    for (int k = 0; k < nfreed; k++) {
        int i = 3 * k;
        server[i] = qp_new(&srv);
        if (!CHECK(server[i] != NULL))
            break;
        reused += (mre_qp_num(server[i]) & 0xffff) == freed_slot[k];
        CHECK_EQ(mre_qp_listen(server[i], 0), 0);
    }
    CHECK_EQ(reused, nfreed);
    for (int i = 0; i < NAMED; i += 3) {
        uint8_t out[MROCE_MAX_PKT_LEN];
        size_t n = retarget(out, req[i], req_len[i], mre_qp_num(server[i]));
        if (!CHECK(n > 0))
            break;
        wrong += deliver(srv.ep, out, n, &cli.addr, &who) !=
                     MROCE_OP_CONNECT_RESP ||
                 who != mre_qp_num(server[i]) ||
                 mre_qp_state(server[i]) != MROCE_QPS_RTS ||
                 mre_qp_remote_qpn(server[i]) != mre_qp_num(client[i]);
        wrong += deliver(srv.ep, out, n, &cli.addr, &who) !=
                     MROCE_OP_CONNECT_RESP ||
                 who != mre_qp_num(server[i]);
    }
    CHECK_EQ(wrong, 0);

    /* Several QPs with one key (never connected, then failed): the table
     * must pick the one the scan picked. */
    for (int k = 0; k < 5; k++) {
        mre_qp *q = qp_new(&srv);
        if (CHECK(q != NULL))
            CHECK_EQ(mre_qp_set_error(q), 0);
    }
    /* Delete one from the middle of the live array to reorder it. */
    mre_qp_del(server[NQP - 2]);
    server[NQP - 2] = NULL;
    check_all_keys(&srv, &cli, client);

    mre_ep_del(srv.ep);
    mre_ep_del(cli.ep);
    return TESTUTIL_SUMMARY("test_engine_conntab");
}
