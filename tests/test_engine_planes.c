/*
 * test_engine_planes.c - planes in the engine (docs/spec/multipath.md,
 * Planes, PATH-17..28; docs/spec/connection.md CONN-28..30):
 *   - the handshake: each side lists its planes in the PLANES extension,
 *     the connection uses min(local, peer) of them, and a side without the
 *     extension (one plane) gets today's CONNECT and one plane;
 *   - the entropies of a connection's paths are distinct across planes and
 *     each names its plane (entropy % P == plane);
 *   - every packet leaves on the plane its entropy names, towards the
 *     peer's address on that plane;
 *   - a bulk transfer spreads over all planes; when every packet of plane 2
 *     is dropped mid-transfer the transfer goes on, plane 2 is marked down
 *     within 4 srtts of the failure (a quorum of its slots lossy, PATH-25),
 *     its share goes to the other planes and it carries only probes (at
 *     most one per RTO, PATH-22, PATH-28); once the drop stops it comes
 *     back and carries data;
 *   - a second connection of the same endpoint, idle while the first one
 *     found plane 2 down, then sends nothing but probes on it (PATH-27) and
 *     has it back once the drop stops;
 *   - with fewer slots than planes, the last plane holding slots stays up
 *     through a failure of its own, the slotless planes being no place to
 *     send (PATH-21).
 *
 * Two endpoints, each attached to four made-up planes (10.k.0.id), pass
 * packets through a delay line of 5 us per direction that keeps each
 * packet's plane: a packet sent on plane k arrives on plane k.  The sender
 * writes at most four packets per microsecond.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/wire.h>

#include "engine_end.h"

#define NPL 4
#define DELAY 5000 /* ns per direction */
#define QLEN 65536
#define CHUNK (1u << 20)
/* A CONNECT without PLANES: the SACK extension of a default QP only. */
#define NOPLANES_CONN_LEN                                               \
    (MROCE_BASE_HDR_LEN + MROCE_CONN_HDR_LEN + 2 + MROCE_EXT_SACK_LEN + \
     MROCE_CRC_LEN)

/* Plane addresses: mre_addr {10, k, 0, id}, wire ::ffff:10.k.0.id:4791. */
static int to_addr(struct mre_addr *out, const struct mre_plane_addr *in,
                   void *user)
{
    (void)user;
    static const uint8_t pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(in->addr, pfx, 12) != 0 || in->port != 4791)
        return -1;
    memset(out, 0, sizeof(*out));
    out->len = 6;
    memcpy(out->data, in->addr + 12, 4);
    return 0;
}

static int end_planes(struct end *e, uint8_t id, uint64_t seed, int nplanes)
{
    struct mre_ep_config c;
    mre_ep_config_default(&c);
    c.mem.calloc = testutil_calloc;
    c.mem.free = testutil_free;
    c.rand = testutil_rand_bytes;
    e->seed = seed;
    c.rand_user = &e->seed;
    c.max_qps = 8;
    c.nplanes = (uint8_t)nplanes;
    c.plane_addr = to_addr;
    for (int k = 0; k < nplanes; k++) {
        memset(c.planes[k].addr, 0, 16);
        c.planes[k].addr[10] = c.planes[k].addr[11] = 0xff;
        c.planes[k].addr[12] = 10;
        c.planes[k].addr[13] = (uint8_t)k;
        c.planes[k].addr[15] = id;
        c.planes[k].port = 4791;
    }
    memset(&e->addr, 0, sizeof(e->addr));
    e->addr.len = 6;
    e->addr.data[0] = 10;
    e->addr.data[3] = id;
    int rc = mre_ep_new(&e->ep, &c);
    if (rc < 0)
        return rc;
    return mre_cq_new(e->ep, 4096, &e->cq);
}

static mre_qp *qp_new(struct end *e, uint16_t npaths)
{
    struct mre_qp_attr a;
    mre_qp_attr_default(&a);
    a.send_cq = a.recv_cq = e->cq;
    a.max_send_wr = a.max_recv_wr = 64;
    a.npaths = npaths;
    mre_qp *qp = NULL;
    if (mre_qp_new(e->ep, &a, &qp) < 0)
        return NULL;
    return qp;
}

/* --- the delay line --- */
struct pkt {
    mroce_tstamp at;
    uint8_t dst, plane;
    uint16_t len;
    uint8_t buf[MROCE_MAX_PKT_LEN];
};
static struct pkt *q;
static uint32_t qhead, qtail;
static struct end E[2];
static int drop_plane = -1;
static unsigned drop_also;   /* bit k: plane k drops everything too */
static int watch_plane = -1; /* data packets sent on it are counted */
static uint64_t watched, watched_no_ack_req;
static uint64_t dropped, bad_to, sent_on[2][NPL];
static int conn_len[2]; /* length of the last CONNECT each side sent */
static int conn_nplanes[2];

static void send_all(int s, mroce_tstamp now, int max)
{
    struct mre_tx_info ti;
    int n, moved = 0;
    while (moved < max && qtail - qhead < QLEN &&
           (n = mre_ep_write_pkt(E[s].ep, q[qtail % QLEN].buf,
                                 MROCE_MAX_PKT_LEN, &ti, now)) > 0) {
        struct pkt *p = &q[qtail % QLEN];
        struct mrw_pkt d;
        moved++;
        if (mrw_pkt_decode(&d, p->buf, (size_t)n) == 0 &&
            (d.base.opcode == MROCE_OP_CONNECT_REQ ||
             d.base.opcode == MROCE_OP_CONNECT_RESP)) {
            conn_len[s] = n;
            conn_nplanes[s] = d.u.conn.nplanes;
        }
        /* PATH-20: the plane's destination is the peer's address on it. */
        const struct mre_addr *peer = &E[!s].addr;
        if (ti.plane >= NPL || ti.to.len != 6 || ti.to.data[1] != ti.plane ||
            ti.to.data[3] != peer->data[3])
            bad_to++;
        if (ti.plane < NPL)
            sent_on[s][ti.plane]++;
        if (s == 0 && (int)ti.plane == watch_plane &&
            mrw_pkt_decode(&d, p->buf, (size_t)n) == 0 &&
            mrw_opcode_has_psn(d.base.opcode)) {
            watched++;
            watched_no_ack_req += !(d.base.flags & MROCE_F_ACK_REQ);
        }
        if ((int)ti.plane == drop_plane ||
            (ti.plane < NPL && (drop_also >> ti.plane) & 1)) {
            dropped++;
            continue;
        }
        p->at = now + DELAY;
        p->dst = (uint8_t)!s;
        p->plane = ti.plane;
        p->len = (uint16_t)n;
        qtail++;
    }
}

static void deliver(mroce_tstamp now)
{
    while (qhead != qtail && q[qhead % QLEN].at <= now) {
        struct pkt *p = &q[qhead % QLEN];
        struct mre_rx_info ri;
        memset(&ri, 0, sizeof(ri));
        ri.from = E[!p->dst].addr;
        ri.from.data[1] = p->plane;
        ri.ecn = MROCE_ECN_ECT0;
        ri.plane = p->plane;
        mre_ep_recv(E[p->dst].ep, p->buf, p->len, &ri, now);
        qhead++;
    }
}

static mroce_tstamp now;
static void step(void)
{
    now += 1000;
    for (int s = 0; s < 2; s++) {
        if (mre_ep_expiry(E[s].ep) <= now)
            mre_ep_handle_expiry(E[s].ep, now);
        send_all(s, now, s == 0 ? 4 : 64);
    }
    deliver(now);
}

static void connect_pair(mre_qp *c, mre_qp *s)
{
    CHECK_EQ(mre_qp_listen(s, now), 0);
    CHECK_EQ(mre_qp_connect(c, &E[1].addr, mre_qp_num(s), now), 0);
    for (int i = 0; i < 100 && !(mre_qp_state(c) == MROCE_QPS_RTS &&
                                 mre_qp_state(s) == MROCE_QPS_RTS);
         i++)
        step();
    for (int i = 0; i < 20; i++)
        step();
    CHECK_EQ(mre_qp_state(c), MROCE_QPS_RTS);
    CHECK_EQ(mre_qp_state(s), MROCE_QPS_RTS);
}

/* PATH-19: distinct entropies, each congruent to its slot's plane; every
 * slot on its home plane i % np but, while plane `down` (-1: none) is
 * down, slot `down` alone on it and the others of that home elsewhere
 * (PATH-29, PATH-31). */
static void check_homes(const mre_qp *qp, int np, int down)
{
    struct mroce_path_stats ps[256];
    int n = mre_qp_path_stats(qp, ps, 256), bad = 0, dup = 0;
    for (int i = 0; i < n; i++) {
        int pl = qp->path_slots[i].plane;
        int want = i % np == down && i != down ? -1 : i % np;
        if (ps[i].entropy % np != pl || (want >= 0 && pl != want) ||
            (want < 0 && pl == down))
            bad++;
        for (int j = 0; j < i; j++)
            dup += ps[j].entropy == ps[i].entropy;
    }
    CHECK_EQ(bad, 0);
    CHECK_EQ(dup, 0);
}

static void check_entropies(const mre_qp *qp, int np)
{
    check_homes(qp, np, -1);
}

static void plane_stats(const mre_qp *qp, struct mre_plane_stats *st)
{
    memset(st, 0, NPL * sizeof(*st));
    CHECK_EQ(mre_qp_plane_stats(qp, st, NPL), NPL);
}

/* Negotiation between a side with `a` planes and one with `b`, each QP
 * with `npaths` path slots (256 is the engine's most: more than a byte
 * counts). */
static void negotiate_paths(int a, int b, uint16_t npaths)
{
    mre_ep_del(E[0].ep);
    mre_ep_del(E[1].ep);
    qhead = qtail; /* what was in flight had old endpoints for owners */
    conn_len[0] = conn_len[1] = conn_nplanes[0] = conn_nplanes[1] = 0;
    CHECK_EQ(end_planes(&E[0], 1, 100 + (uint64_t)a, a), 0);
    CHECK_EQ(end_planes(&E[1], 2, 200 + (uint64_t)b, b), 0);
    mre_qp *c = qp_new(&E[0], npaths), *s = qp_new(&E[1], npaths);
    if (!CHECK(c && s))
        return;
    connect_pair(c, s);
    int want = a < b ? a : b;
    if (want < 1)
        want = 1;
    struct mre_plane_stats st[NPL];
    CHECK_EQ(mre_qp_plane_stats(c, st, NPL), want);
    CHECK_EQ(mre_qp_plane_stats(s, st, NPL), want);
    /* CONN-28: one plane sends no PLANES: today's CONNECT, with the SACK
     * extension the QPs' window of 1024 PSNs states (WIRE-52). */
    if (a <= 1)
        CHECK_EQ(conn_len[0], NOPLANES_CONN_LEN);
    else
        CHECK_EQ(conn_nplanes[0], a);
    /* CONN-29: a CONNECT_RESP carries PLANES only if P > 1 was agreed,
     * and then its first P planes: never longer than the CONNECT_REQ
     * (CONN-25, SEC-6). */
    if (want <= 1)
        CHECK_EQ(conn_len[1], NOPLANES_CONN_LEN);
    else
        CHECK_EQ(conn_nplanes[1], want);
    CHECK(conn_len[1] <= conn_len[0]);
    if (want > 1) {
        check_entropies(c, want);
        check_entropies(s, want);
    }
    CHECK_EQ(bad_to, 0);
}

static void negotiate(int a, int b)
{
    negotiate_paths(a, b, 16);
}

static uint64_t sum(const uint64_t *v, int n)
{
    uint64_t t = 0;
    for (int i = 0; i < n; i++)
        t += v[i];
    return t;
}

/* PATH-21 with fewer slots than planes: 4 planes, 2 slots (homes 0 and
 * 1), so planes 2 and 3 hold none.  Plane 1 fails and goes down; then
 * plane 0 drops everything for a while.  Plane 0 is the last plane with
 * a slot to send data on, so it stays up (the slotless planes are no place
 * to send), nothing but plane 1's probes goes on a down plane, and once
 * the drop stops the transfer finishes. */
static void few_slots(uint8_t *src, uint8_t *dst)
{
    mre_ep_del(E[0].ep);
    mre_ep_del(E[1].ep);
    qhead = qtail;
    CHECK_EQ(end_planes(&E[0], 1, 31, NPL), 0);
    CHECK_EQ(end_planes(&E[1], 2, 32, NPL), 0);
    mre_qp *c = qp_new(&E[0], 2), *s = qp_new(&E[1], 2);
    if (!CHECK(c && s))
        return;
    connect_pair(c, s);
    mre_mr *ms, *md;
    CHECK_EQ(mre_mr_reg(E[0].ep, src, CHUNK, MROCE_ACCESS_LOCAL_WRITE, &ms), 0);
    CHECK_EQ(mre_mr_reg(E[1].ep, dst, CHUNK,
                        MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                        &md),
             0);
    struct mre_plane_stats st[NPL];
    uint32_t posted = 0, done = 0, failed = 0;
    int phase = 0;
    mroce_tstamp t_mark = 0;
    drop_plane = 1;
    for (int it = 0; it < 200000 && phase < 3; it++) {
        while (phase < 2 && posted - done < 4) {
            struct mroce_sge sg = {(uint64_t)(uintptr_t)src, CHUNK / 4,
                                   mre_mr_lkey(ms)};
            struct mroce_send_wr wr = {.wr_id = posted,
                                       .opcode = MROCE_WR_WRITE,
                                       .sg_list = &sg,
                                       .num_sge = 1,
                                       .send_flags = MROCE_SEND_SIGNALED,
                                       .remote_addr = (uint64_t)(uintptr_t)dst,
                                       .rkey = mre_mr_rkey(md)};
            if (!CHECK(mre_qp_post_send(c, &wr, NULL, now) == 0))
                break;
            posted++;
        }
        step();
        struct mroce_wc wc[16];
        int n;
        while ((n = mre_cq_poll(E[0].cq, 16, wc)) > 0)
            for (int i = 0; i < n; i++) {
                done++;
                failed += wc[i].status != MROCE_WC_SUCCESS;
            }
        CHECK_EQ(mre_qp_plane_stats(c, st, NPL), NPL);
        if (phase == 0 && !st[1].up) {
            drop_also = 1u << 0; /* plane 0 too, for a while */
            t_mark = now;
            phase = 1;
        } else if (phase == 1 && now - t_mark >= 2000000) {
            drop_also = 0;
            phase = 2;
        } else if (phase == 2 && done == posted) {
            phase = 3;
        }
    }
    CHECK_EQ(phase, 3);
    CHECK_EQ(failed, 0);
    CHECK_EQ(st[0].downs, 0);
    CHECK_EQ(st[0].probes, 0);
    CHECK_EQ(st[1].downs, 1);
    CHECK(st[1].probes <= (now - t_mark) / 200000 + 2);
    CHECK(sent_on[0][2] == 0 && sent_on[0][3] == 0);
    drop_plane = -1;
    mre_mr_dereg(ms);
    mre_mr_dereg(md);
}

int main(void)
{
    q = calloc(QLEN, sizeof(*q));
    uint8_t *src = malloc(CHUNK), *dst = calloc(1, CHUNK);
    if (!CHECK(q && src && dst))
        return TESTUTIL_SUMMARY("test_engine_planes");
    for (uint32_t i = 0; i < CHUNK; i++)
        src[i] = (uint8_t)(i * 131 + 7);
    if (!CHECK(end_planes(&E[0], 1, 11, NPL) == 0) ||
        !CHECK(end_planes(&E[1], 2, 22, NPL) == 0))
        return TESTUTIL_SUMMARY("test_engine_planes");
    mre_qp *c = qp_new(&E[0], 64), *s = qp_new(&E[1], 64);
    mre_qp *c2 = qp_new(&E[0], 64), *s2 = qp_new(&E[1], 64);
    if (!CHECK(c && s && c2 && s2))
        return TESTUTIL_SUMMARY("test_engine_planes");
    connect_pair(c, s);
    connect_pair(c2, s2);
    CHECK_EQ(conn_nplanes[0], NPL);
    check_entropies(c, NPL);
    check_entropies(s, NPL);
    struct mre_plane_stats st[NPL];
    plane_stats(c, st);
    for (int k = 0; k < NPL; k++) {
        CHECK_EQ(st[k].up, 1);
        CHECK_EQ(st[k].paths, 16);
    }

    mre_mr *ms, *md;
    CHECK_EQ(mre_mr_reg(E[0].ep, src, CHUNK, MROCE_ACCESS_LOCAL_WRITE, &ms), 0);
    CHECK_EQ(mre_mr_reg(E[1].ep, dst, CHUNK,
                        MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                        &md),
             0);
    uint32_t posted = 0, done = 0, failed = 0, posted2 = 0, done2 = 0;
    int posting = 1;
    mroce_tstamp t0 = now, t_down = 0, t_up = 0, t_heal = 0, t_fail = 0;
    mroce_tstamp srtt_fail = 0;
    uint64_t at_fail2 = 0; /* packets on plane 2 when it failed */
    struct mre_plane_stats st2[NPL];
    uint64_t at_down[NPL] = {0}, at_heal[NPL] = {0}, at_mark[NPL] = {0};
    uint32_t probes_at_down = 0;
    int phase = 0;
    for (int it = 0; it < 60000; it++) {
        while (posting && posted - done < 8) {
            struct mroce_sge sg = {(uint64_t)(uintptr_t)src, CHUNK,
                                   mre_mr_lkey(ms)};
            struct mroce_send_wr wr = {.wr_id = posted,
                                       .opcode = MROCE_WR_WRITE,
                                       .sg_list = &sg,
                                       .num_sge = 1,
                                       .send_flags = MROCE_SEND_SIGNALED,
                                       .remote_addr = (uint64_t)(uintptr_t)dst,
                                       .rkey = mre_mr_rkey(md)};
            if (!CHECK(mre_qp_post_send(c, &wr, NULL, now) == 0))
                break;
            posted++;
        }
        /* The second connection: one WRITE at a time once plane 2 is
         * down, until the drop stops and plane 2 is back for it. */
        if (posting && phase >= 2 && phase < 5 && posted2 == done2) {
            struct mroce_sge sg = {(uint64_t)(uintptr_t)src, CHUNK / 4,
                                   mre_mr_lkey(ms)};
            struct mroce_send_wr wr = {.wr_id = (1ull << 32) | posted2,
                                       .opcode = MROCE_WR_WRITE,
                                       .sg_list = &sg,
                                       .num_sge = 1,
                                       .send_flags = MROCE_SEND_SIGNALED,
                                       .remote_addr = (uint64_t)(uintptr_t)dst,
                                       .rkey = mre_mr_rkey(md)};
            if (CHECK(mre_qp_post_send(c2, &wr, NULL, now) == 0))
                posted2++;
        }
        step();
        struct mroce_wc wc[16];
        int n;
        while ((n = mre_cq_poll(E[0].cq, 16, wc)) > 0)
            for (int i = 0; i < n; i++) {
                if (wc[i].wr_id >> 32)
                    done2++;
                else
                    done++;
                failed += wc[i].status != MROCE_WC_SUCCESS;
            }
        plane_stats(c, st);
        if (phase == 0 && now - t0 >= 2000000) {
            /* Spread over all planes: each gets at least 15%. */
            uint64_t tot = sum(sent_on[0], NPL);
            for (int k = 0; k < NPL; k++)
                CHECK(sent_on[0][k] * 100 >= tot * 15);
            drop_plane = 2;
            t_fail = now;
            srtt_fail = c->srtt;
            at_fail2 = sent_on[0][2];
            phase = 1;
        } else if (phase == 1 && !st[2].up) {
            t_down = now;
            /* PATH-25: down within a few RTTs of the failure, in the delay
             * line's time, before the slots have all been retired. */
            CHECK(srtt_fail > 0);
            CHECK(t_down - t_fail <= 4 * srtt_fail);
            CHECK(st[2].dead < st[2].paths);
            /* PATH-26: what went into plane 2 before it was down: about
             * two windows' worth, not every slot's three losses and their
             * replacement's. */
            CHECK(sent_on[0][2] - at_fail2 <= 64);
            printf("planes: down %llu ns (%.1f srtt) after the failure, %llu "
                   "packets into it, %u of %u slots lossy, %u retired\n",
                   (unsigned long long)(t_down - t_fail),
                   (double)(t_down - t_fail) / (double)srtt_fail,
                   (unsigned long long)(sent_on[0][2] - at_fail2), st[2].lossy,
                   st[2].paths, st[2].dead);
            memcpy(at_down, sent_on[0], sizeof(at_down));
            probes_at_down = st[2].probes;
            watch_plane = 2;
            CHECK_EQ(st[2].downs, 1);
            for (int k = 0; k < NPL; k++)
                if (k != 2)
                    CHECK_EQ(st[k].up, 1);
            /* PATH-29: plane 2 keeps one slot for its probes; the other
             * 15 moved to the planes up, 5 each, with nothing in flight
             * left on plane 2 but what was sent since (PATH-30). */
            check_homes(c, NPL, 2);
            CHECK_EQ(st[2].paths, 1);
            CHECK_EQ(st[2].moved, 15);
            for (int k = 0; k < NPL; k++)
                if (k != 2)
                    CHECK_EQ(st[k].paths, 16 + 5);
            phase = 2;
        } else if (phase == 2 && now - t_down >= 5000000) {
            /* Only probes on plane 2: about one per RTO (min_rto 200 us). */
            uint64_t on2 = sent_on[0][2] - at_down[2];
            uint64_t others = sum(sent_on[0], NPL) - sum(at_down, NPL) - on2;
            /* Both connections' probes (PATH-22, PATH-28): at most one
             * per RTO (min_rto 200 us) each. */
            CHECK_EQ(mre_qp_plane_stats(c2, st2, NPL), NPL);
            CHECK(on2 >= 5 && on2 <= 2 * (5000000 / 200000 + 2));
            CHECK_EQ(st[2].probes - probes_at_down + st2[2].probes, on2);
            CHECK(others > 3000);
            CHECK_EQ(st[2].up, 0);
            /* PATH-27: the second connection took plane 2's state from the
             * endpoint: nothing but its probes went there. */
            CHECK_EQ(st2[2].up, 0);
            CHECK_EQ(st2[2].adopted, 1);
            CHECK_EQ(st2[2].paths, 1); /* PATH-29 for an adopted finding */
            check_homes(c2, NPL, 2);
            check_homes(c, NPL, 2);
            CHECK_EQ(st2[2].tx_pkts, st2[2].probes);
            CHECK(st2[2].probes <= 5000000 / 200000 + 2);
            CHECK(done2 > 2);
            uint64_t tx2 = 0;
            for (int k = 0; k < NPL; k++)
                tx2 += st2[k].tx_pkts;
            CHECK(tx2 > 100);
            /* PATH-22: each probe asks for its ACK at once, LAST packet
             * of its message or not (most of a 1 MiB WRITE's are not). */
            CHECK_EQ(watched, on2);
            CHECK_EQ(watched_no_ack_req, 0);
            watch_plane = -1;
            drop_plane = -1;
            t_heal = now;
            memcpy(at_heal, sent_on[0], sizeof(at_heal));
            phase = 3;
        } else if (phase == 3 && st[2].up) {
            t_up = now;
            /* One RTO for the next probe, one RTT for its ACK. */
            CHECK(t_up - t_heal <= 1000000);
            memcpy(at_mark, sent_on[0], sizeof(at_mark));
            phase = 4;
        } else if (phase == 4 && now - t_up >= 2000000) {
            /* Back in the spray. */
            uint64_t tot = sum(sent_on[0], NPL) - sum(at_mark, NPL);
            CHECK(tot > 1000);
            CHECK((sent_on[0][2] - at_mark[2]) * 100 >= tot * 10);
            CHECK_EQ(mre_qp_plane_stats(c2, st2, NPL), NPL);
            CHECK_EQ(st2[2].up, 1); /* PATH-23, PATH-27: back for it too */
            /* PATH-31: every slot is home again, for both. */
            for (int k = 0; k < NPL; k++) {
                CHECK_EQ(st[k].paths, 16);
                CHECK_EQ(st[k].moved, k == 2 ? 15u : 5u);
            }
            check_entropies(c, NPL);
            check_entropies(c2, NPL);
            posting = 0;
            phase = 5;
        } else if (phase == 5 && done == posted && done2 == posted2) {
            break;
        }
    }
    CHECK_EQ(phase, 5);
    CHECK_EQ(done, posted);
    CHECK_EQ(failed, 0);
    CHECK(posted > 20);
    CHECK(memcmp(src, dst, CHUNK) == 0);
    CHECK(dropped > 0);
    CHECK_EQ(bad_to, 0);
    (void)at_heal;
    printf("planes: %u MiB written, %llu dropped on plane 2, down "
           "after %llu us, up %llu us after the drop stopped\n",
           posted, (unsigned long long)dropped,
           (unsigned long long)(t_down ? (t_down - t0) / 1000 : 0),
           (unsigned long long)(t_up ? (t_up - t_heal) / 1000 : 0));
    mre_mr_dereg(ms);
    mre_mr_dereg(md);

    /* CONN-28, CONN-29: min(local, peer); no extension: one plane. */
    negotiate(4, 2);
    negotiate(2, 4);
    negotiate(4, 1);
    negotiate(1, 4);
    negotiate(3, 3);
    negotiate_paths(4, 4, 256);
    memset(sent_on, 0, sizeof(sent_on));
    few_slots(src, dst);
    mre_ep_del(E[0].ep);
    mre_ep_del(E[1].ep);
    free(q);
    free(src);
    free(dst);
    return TESTUTIL_SUMMARY("test_engine_planes");
}
