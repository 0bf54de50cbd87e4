/*
 * host.c - hosts: the NIC and the adapter that drives the real MetaRoCE
 * engine.
 *
 * Each host owns one sans-IO endpoint and calls it through exactly the entry
 * points the UDP datapath uses: mre_ep_recv() for every delivered
 * datagram, mre_ep_write_pkt() whenever the NIC's uplink can take a
 * packet (at most one packet waits behind the one being serialized, so the
 * engine is paced by its link and stamps packets just before they leave),
 * and mre_ep_expiry()/mre_ep_handle_expiry() for timers.  Time is the
 * simulated clock in nanoseconds.
 *
 * Timers: after every call into the engine the adapter reads the
 * endpoint's next deadline (mre_ep_expiry(), O(1) from the engine's timer
 * heap) and queues an EV_TIMER for it if it is earlier than the one already
 * queued, so engine timers fire exactly on time.
 *
 * Memory: the engine allocates through a counting allocator, so the bytes
 * per QP are measured, not estimated; it draws on the run's huge-page
 * arena (arena.c).  Every MR of every endpoint maps the
 * same scratch buffer: payload bytes are copied and CRC-checked by the
 * engine as usual, but their content is irrelevant to the simulation.
 *
 * Place in the simulator: the fabric reaches a host only through its
 * interface (host_if: a packet arrives, the uplink has room), and a host
 * reaches the fabric only through link_send on its uplink; the event loop
 * is run.c's, which also runs the handshakes and the trace in steps.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mroce/wire.h>

#include "sim.h"

static void *count_calloc(size_t n, size_t sz, void *user)
{
    struct counting_mem *m = user;
    if (sz && n > SIZE_MAX / sz)
        return NULL;
    size_t bytes = n * sz;
    void *p = arena_calloc(m->ar, bytes);
    if (!p)
        return NULL;
    m->live += bytes;
    m->allocs++;
    if (m->live > m->peak)
        m->peak = m->live;
    return p;
}

static void count_free(void *p, void *user)
{
    struct counting_mem *m = user;
    if (!p)
        return;
    m->live -= arena_size(p);
    arena_free(m->ar, p);
}

static void host_rand(uint8_t *buf, size_t len, void *user)
{
    struct host *h = user;
    while (len) {
        uint64_t v = rng_next(&h->rng);
        size_t k = len < 8 ? len : 8;
        memcpy(buf, &v, k);
        buf += k;
        len -= k;
    }
}

static void host_addr(uint32_t host, struct mre_addr *a)
{
    memset(a, 0, sizeof(*a));
    a->len = 4;
    a->data[0] = (uint8_t)(host >> 24);
    a->data[1] = (uint8_t)(host >> 16);
    a->data[2] = (uint8_t)(host >> 8);
    a->data[3] = (uint8_t)host;
}

static uint32_t addr_host(const struct mre_addr *a)
{
    return (uint32_t)a->data[0] << 24 | (uint32_t)a->data[1] << 16 |
           (uint32_t)a->data[2] << 8 | a->data[3];
}

/* plane_select engine: a host's address on plane k > 0 is its plane-0
 * address (the host index, what the handshake uses) and a fifth byte k;
 * what the PLANES extension carries for it is fd00::k:HOST (a private
 * IPv6 address with the plane in byte 11 and the host in bytes 12..15),
 * port 4791.  plane_addr maps such an entry back; anything else is
 * refused, and the engine then leaves that plane unused. */
static void host_plane_addr(uint32_t host, uint32_t plane, struct mre_addr *a)
{
    host_addr(host, a);
    if (plane) {
        a->len = 5;
        a->data[4] = (uint8_t)plane;
    }
}

static uint32_t addr_plane(const struct mre_addr *a)
{
    return a->len == 5 ? a->data[4] : 0;
}

static void host_plane_entry(uint32_t host, uint32_t plane,
                             struct mre_plane_addr *e)
{
    memset(e, 0, sizeof(*e));
    e->addr[0] = 0xfd;
    e->addr[11] = (uint8_t)plane;
    e->addr[12] = (uint8_t)(host >> 24);
    e->addr[13] = (uint8_t)(host >> 16);
    e->addr[14] = (uint8_t)(host >> 8);
    e->addr[15] = (uint8_t)host;
    e->port = 4791;
}

static int host_plane_map(struct mre_addr *out, const struct mre_plane_addr *in,
                          void *user)
{
    const struct sim *s = user;
    static const uint8_t zero[10];
    uint32_t host = (uint32_t)in->addr[12] << 24 |
                    (uint32_t)in->addr[13] << 16 | (uint32_t)in->addr[14] << 8 |
                    in->addr[15];
    uint32_t plane = in->addr[11];
    if (in->addr[0] != 0xfd || memcmp(in->addr + 1, zero, 10) ||
        in->port != 4791 || host >= s->nhosts || plane >= s->nplanes)
        return -1;
    host_plane_addr(host, plane, out);
    return 0;
}

static inline uint64_t now_ns(const struct sim *s)
{
    return s->now / PS_PER_NS;
}

int host_setup(struct sim *s)
{
    s->hosts = calloc(s->nhosts, sizeof(*s->hosts));
    if (!s->hosts)
        return -1;
    uint64_t seed = s->sc->seed * 0x100000001b3ULL + 17;
    for (uint32_t i = 0; i < s->nhosts; i++) {
        struct host *h = &s->hosts[i];
        h->id = i;
        h->uplink = 2 * i; /* builders add each host's cable first */
        h->timer_at = T_INF;
        h->rng = rng_next(&seed);
    }
    if (s->tp->kind != T_MROCE)
        return 0;
    /* A datagram must fit the stages (and a pool buffer) whole. */
    if ((size_t)s->sc->mtu + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN >
        SIM_BUF_CAP) {
        fprintf(stderr, "mroce-sim: mtu %u: at most %d\n", s->sc->mtu,
                SIM_BUF_CAP - MROCE_MAX_DATA_HDR_LEN - MROCE_CRC_LEN);
        return -1;
    }
    s->tx_stage = arena_bump(&s->arena, SIM_BUF_CAP);
    s->rx_stage = arena_bump(&s->arena, SIM_BUF_CAP);
    if (!s->tx_stage || !s->rx_stage)
        return -1;
    uint64_t before = s->mem.live;
    for (uint32_t i = 0; i < s->nhosts; i++) {
        struct host *h = &s->hosts[i];
        if (!sim_host_here(s, i)) /* another process's (dist.c) */
            continue;
        struct mre_ep_config ec;
        mre_ep_config_default(&ec);
        ec.mem.calloc = count_calloc;
        ec.mem.free = count_free;
        ec.mem.user = &s->mem;
        ec.rand = host_rand;
        ec.rand_user = h;
        ec.max_qps = s->nhosts < 65535 ? s->nhosts : 65535;
        if (s->tp->credit)
            ec.rx_credit_bytes = 256 * 1024;
        if (planes_engine(s)) {
            ec.nplanes = (uint8_t)s->nplanes;
            for (uint32_t p = 0; p < s->nplanes; p++)
                host_plane_entry(i, p, &ec.planes[p]);
            ec.plane_addr = host_plane_map;
            ec.plane_user = s;
        }
        /* Rate hints divide the host's links: one port per plane, each
         * at host_rate (CC-25). */
        ec.rx_rate_mbps = (uint32_t)(s->sc->host_rate * s->nplanes / 1000000u);
        mre_mr *mr;
        if (mre_ep_new(&h->ep, &ec) < 0 ||
            mre_cq_new(h->ep, 1024, &h->scq) < 0 ||
            mre_cq_new(h->ep, 1024, &h->rcq) < 0 ||
            mre_mr_reg(h->ep, s->scratch, s->scratch_len,
                       MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE,
                       &mr) < 0)
            return -1;
        h->lkey = mre_mr_lkey(mr);
        h->qp_by_peer = calloc(s->nhosts, sizeof(*h->qp_by_peer));
        h->qp_by_slot = calloc(ec.max_qps, sizeof(*h->qp_by_slot));
        if (!h->qp_by_peer || !h->qp_by_slot)
            return -1;
    }
    s->ep_mem_bytes = s->mem.live - before;
    return 0;
}

void host_teardown(struct sim *s)
{
    if (!s->hosts)
        return;
    for (uint32_t i = 0; i < s->nhosts; i++) {
        struct host *h = &s->hosts[i];
        mre_ep_del(h->ep);
        free(h->qp_by_peer);
        free(h->qp_by_slot);
        free(h->pend);
        free(h->rqp_by_peer);
        free(h->act);
        while (h->cq_h) {
            struct pkt *p = h->cq_h;
            h->cq_h = p->next;
            pkt_free(s, p);
        }
    }
    free(s->hosts);
    s->hosts = NULL;
}

static uint32_t lkey_of(const struct host *h)
{
    return h->lkey;
}

static int post_recvs(struct sim *s, struct host *h, mre_qp *qp, int n)
{
    struct mroce_sge sge = {(uint64_t)(uintptr_t)s->scratch,
                            (uint32_t)s->scratch_len, lkey_of(h)};
    for (int i = 0; i < n; i++) {
        struct mroce_recv_wr wr = {.sg_list = &sge, .num_sge = 1};
        struct mroce_recv_wr *bad;
        if (mre_qp_post_recv(qp, &wr, &bad) < 0)
            return -1;
    }
    return 0;
}

static int make_qp(struct sim *s, struct host *h, uint32_t peer, mre_qp **pqp)
{
    const struct scenario *sc = s->sc;
    struct mre_qp_attr at;
    mre_qp_attr_default(&at);
    at.send_cq = h->scq;
    at.recv_cq = h->rcq;
    at.max_send_wr = sc->qp_sq;
    at.max_recv_wr = sc->qp_rq;
    at.window = sc->qp_window;
    at.npaths = (uint16_t)sc->qp_npaths;
    at.mtu = (uint16_t)sc->mtu;
    at.cc_algo = s->tp->cc;
    at.credit_mode = s->tp->credit;
    if (s->tp->nohint || s->tp->hint1 || s->tp->ask) /* else the default */
        at.rate_hint = s->tp->nohint ? 0 : s->tp->hint1 ? 1 : 3;
    at.path_cwnd = !s->tp->nopcwnd;
    if (s->tp->sack256)
        at.sack_words = MROCE_MAX_SACK_WORDS;
    at.max_rd_atomic = 1;
    if (sc->qp_init_cwnd)
        at.init_cwnd = sc->qp_init_cwnd;
    if (sc->qp_target_qdelay_ps)
        at.target_qdelay = sc->qp_target_qdelay_ps / PS_PER_NS;
    if (sc->qp_min_rto_ps) /* libmroce's kernel-UDP value is 1 ms */
        at.min_rto = sc->qp_min_rto_ps / PS_PER_NS;
    if (sc->qp_path_burst)
        at.path_burst = (uint8_t)sc->qp_path_burst;
    at.path_reuse = sc->qp_path_reuse != 0;
    int rc = mre_qp_new(h->ep, &at, pqp);
    if (rc < 0) {
        fprintf(stderr, "mroce-sim: qp_new on h%u: %s\n", h->id,
                mre_strerror(rc));
        return rc;
    }
    h->qp_by_peer[peer] = *pqp;
    h->qp_by_slot[mre_qp_num(*pqp) & 0xffff] = *pqp;
    s->nqps++;
    return 0;
}

/* The pairs being connected (host_connect_start): each unordered pair
 * once, numbered in the order the workloads name them; per pair the QPN
 * of its second host's QP. */
struct host_conn {
    uint8_t *seen; /* bit a * hosts + b (a < b); owned */
    uint64_t *qpn; /* per pair; owned */
    uint64_t npairs, cap;
    int pass; /* 1: create the QPs, 2: connect them */
};

/* Pair (a, b)'s number, or -1 when the workloads named it before (pass
 * 1 numbers new pairs, pass 2 finds them again in the same order). */
static int64_t pair_index(struct sim *s, uint32_t a, uint32_t b)
{
    struct host_conn *c = s->conn;
    uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
    uint64_t bit = (uint64_t)lo * s->nhosts + hi;
    uint8_t mask = (uint8_t)(1u << (bit & 7));
    if (c->pass == 1 ? (c->seen[bit >> 3] & mask) : !(c->seen[bit >> 3] & mask))
        return -1;
    c->seen[bit >> 3] ^= mask; /* pass 2 clears what pass 1 set */
    if (c->pass == 1 && c->npairs == c->cap) {
        uint64_t nc = c->cap ? 2 * c->cap : 1024;
        uint64_t *n = realloc(c->qpn, nc * sizeof(*n));
        if (!n)
            return -2;
        c->qpn = n;
        c->cap = nc;
    }
    return (int64_t)c->npairs++;
}

/* Both passes over the workloads' pairs: first every QP is created (on
 * the hosts of this process: dist.c), then, once every process knows the
 * QPNs of the others' QPs, each pair is connected.  The engine calls on
 * each endpoint come in the same order however the hosts are spread. */
static int connect_pair(struct sim *s, uint32_t a, uint32_t b)
{
    struct host_conn *c = s->conn;
    if (a == b)
        return 0;
    int64_t k = pair_index(s, a, b);
    if (k == -1)
        return 0;
    if (k < 0)
        return -1;
    struct host *ha = &s->hosts[a], *hb = &s->hosts[b];
    int here_a = sim_host_here(s, a), here_b = sim_host_here(s, b);
    if (c->pass == 1) {
        mre_qp *q;
        uint64_t before = s->mem.live;
        c->qpn[k] = 0;
        if (here_a && make_qp(s, ha, b, &q) < 0)
            return -1;
        if (here_b) {
            if (make_qp(s, hb, a, &q) < 0)
                return -1;
            c->qpn[k] = mre_qp_num(q);
        }
        s->qp_mem_bytes += s->mem.live - before;
        return 0;
    }
    struct mre_addr to;
    host_addr(b, &to);
    if (here_b && mre_qp_listen(hb->qp_by_peer[a], now_ns(s)) < 0)
        return -1;
    if (here_a && mre_qp_connect(ha->qp_by_peer[b], &to, (uint32_t)c->qpn[k],
                                 now_ns(s)) < 0)
        return -1;
    if (here_a && post_recvs(s, ha, ha->qp_by_peer[b], (int)s->sc->qp_rq) < 0)
        return -1;
    if (here_b && post_recvs(s, hb, hb->qp_by_peer[a], (int)s->sc->qp_rq) < 0)
        return -1;
    return 0;
}

/* Make sure an EV_TIMER is queued no later than the endpoint's next
 * deadline (mre_ep_expiry() is O(1): the engine keeps a timer heap).
 * Called after every call into the engine.  A queued timer that the engine
 * has since moved later fires early and finds nothing due, which is cheaper
 * than removing it from the event heap; h->timer_at is the earliest one
 * queued.  after_handle: a deadline still due right after handle_expiry
 * would spin; it is retried 1 us later and counted (expiry_stuck). */
static void timer_arm(struct sim *s, struct host *h, int after_handle)
{
    mroce_tstamp e = mre_ep_expiry(h->ep);
    if (e == MROCE_TSTAMP_INF)
        return;
    uint64_t t = e * PS_PER_NS;
    if (t <= s->now) {
        if (after_handle) {
            s->expiry_stuck++;
            t = s->now + PS_PER_US;
        } else {
            t = s->now;
        }
    }
    if (t < h->timer_at) {
        h->timer_at = t;
        sim_schedule(s, t, EV_TIMER, h->id);
    }
}

void host_pull(struct sim *s, struct host *h)
{
    if (s->tp->kind == T_ROCE) {
        while (host_nic_room(s, h)) {
            uint64_t wake = T_INF;
            struct pkt *p = roce_next_pkt(s, h, &wake);
            if (!p) {
                if (wake != T_INF && (!h->wake_pending || wake < h->wake_at)) {
                    h->wake_pending = 1;
                    h->wake_at = wake;
                    sim_schedule(s, wake, EV_WAKE, h->id);
                }
                break;
            }
            link_send(s, host_port(s, h, plane_of_entropy(s, h, p->entropy)),
                      p);
        }
        return;
    }
    while (host_nic_room(s, h) && mre_ep_want_write(h->ep)) {
        struct mre_tx_info ti;
        struct mre_tx_zc zc;
        int n = mre_ep_write_pkt_zc(h->ep, s->tx_stage, SIM_BUF_CAP, &ti, &zc,
                                    now_ns(s));
        if (n <= 0)
            break;
        if ((size_t)n > SIM_BUF_CAP) { /* excluded by host_setup's check */
            fprintf(stderr, "mroce-sim: a %d-byte datagram\n", n);
            exit(2);
        }
        /* Only the headers and CRC are copied out of the stage: the
         * payload stays in the scratch buffer (see host_on_pkt). */
        size_t inbuf = (size_t)n - zc.payload_len;
        struct pkt *p = pkt_alloc(s);
        pkt_set_buf(s, p, inbuf);
        memcpy(p->buf, s->tx_stage, inbuf);
        p->payload = zc.payload;
        p->zc_len = (uint32_t)zc.payload_len;
        p->len = (uint32_t)n;
        p->wire = (uint32_t)n + FRAME_OVERHEAD;
        p->src = h->id;
        p->dst = addr_host(&ti.to);
        p->entropy = ti.entropy;
        p->ecn = ti.ecn;
        p->kind = PK_MROCE;
        uint32_t plane;
        if (planes_engine(s)) {
            /* the engine's plane; a packet addressed to another plane
             * than the port it leaves by would not reach its host */
            plane = ti.plane;
            if (plane >= s->nplanes || addr_plane(&ti.to) != plane) {
                s->plane_misaddr++;
                pkt_free(s, p);
                continue;
            }
        } else {
            plane = plane_of_entropy(s, h, ti.entropy);
        }
        link_send(s, host_port(s, h, plane), p);
    }
    /* Also when nothing was sent: a refusal (pacing, CC-28) arms a
     * deadline of its own. */
    timer_arm(s, h, 0);
}

static void retry_pending(struct sim *s, struct host *h);

/* Drain both CQs into the workloads, then let the NIC send. */
static void host_service(struct sim *s, struct host *h)
{
    struct mroce_wc wc[32];
    int n;
    while ((n = mre_cq_poll(h->scq, 32, wc)) > 0)
        for (int i = 0; i < n; i++) {
            if (wc[i].status != MROCE_WC_SUCCESS) {
                if (s->wc_errors++ < 5)
                    fprintf(stderr, "mroce-sim: h%u send wc %s\n", h->id,
                            mroce_wc_status_str(wc[i].status));
                continue;
            }
            wl_on_sent(s, (uint32_t)wc[i].wr_id);
        }
    if (h->npend)
        retry_pending(s, h);
    while ((n = mre_cq_poll(h->rcq, 32, wc)) > 0)
        for (int i = 0; i < n; i++) {
            if (wc[i].status != MROCE_WC_SUCCESS) {
                if (s->wc_errors++ < 5)
                    fprintf(stderr, "mroce-sim: h%u recv wc %s\n", h->id,
                            mroce_wc_status_str(wc[i].status));
                continue;
            }
            mre_qp *qp = h->qp_by_slot[wc[i].qp_num & 0xffff];
            if (qp)
                post_recvs(s, h, qp, 1);
            wl_on_recv(s, wc[i].imm_data);
        }
    host_pull(s, h);
    timer_arm(s, h, 0);
}

static void host_on_pkt(struct sim *s, struct host *h, struct pkt *p)
{
    if (p->kind != PK_MROCE) {
        roce_on_pkt(s, h, p);
        return;
    }
    struct mre_rx_info ri;
    memset(&ri, 0, sizeof ri);
    if (planes_engine(s)) { /* the port it came in by, and the sender's
                               address on that plane */
        ri.plane = p->rx_plane;
        host_plane_addr(p->src, p->rx_plane, &ri.from);
    } else {
        host_addr(p->src, &ri.from);
    }
    ri.ecn = p->ecn;
    if (p->zc_len) {
        /* The datagram as it was on the wire: headers, the payload, CRC.
         * Its payload is bytes of the scratch buffer, which are zero from
         * start to end (every MR maps it, it starts zeroed, and all that
         * is ever written into it is payload read out of it), and
         * rx_stage is kept zero between packets: only the headers and
         * the CRC are written around the payload's place and cleared
         * again afterwards, instead of copying 4 KiB per data packet
         * (a copy whose destination sits a few bytes past its source
         * modulo 4 KiB, which stalls on 4K aliasing).  Were the
         * payload not zero, the CRC the sender computed over the real
         * bytes would not match: host_collect_counters prints CRC drops
         * and sim_unit asserts there are none. */
        size_t hl = p->len - p->zc_len - MROCE_CRC_LEN;
        uint8_t *crc = s->rx_stage + hl + p->zc_len;
        memcpy(s->rx_stage, p->buf, hl);
        memcpy(crc, p->buf + hl, MROCE_CRC_LEN);
        mre_ep_recv(h->ep, s->rx_stage, p->len, &ri, now_ns(s));
        memset(s->rx_stage, 0, hl);
        memset(crc, 0, MROCE_CRC_LEN);
    } else {
        mre_ep_recv(h->ep, p->buf, p->len, &ri, now_ns(s));
    }
    pkt_free(s, p);
    host_service(s, h);
}

void host_on_timer(struct sim *s, struct host *h, uint64_t t)
{
    if (t != h->timer_at)
        return; /* superseded by an earlier timer */
    h->timer_at = T_INF;
    mre_ep_handle_expiry(h->ep, now_ns(s));
    host_service(s, h);
    timer_arm(s, h, 1);
}

static int try_post(struct sim *s, struct host *h, uint32_t m)
{
    const struct msg *mm = &s->msgs[m];
    mre_qp *qp = h->qp_by_peer[mm->dst];
    if (!qp) {
        fprintf(stderr, "mroce-sim: no QP h%u->h%u\n", mm->src, mm->dst);
        exit(2);
    }
    struct mroce_sge sge = {(uint64_t)(uintptr_t)s->scratch, mm->bytes,
                            lkey_of(h)};
    struct mroce_send_wr wr;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = m;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = MROCE_WR_SEND_WITH_IMM;
    wr.send_flags = MROCE_SEND_SIGNALED;
    wr.imm_data = s->dist ? dist_msg_gid(s, m) : m;
    struct mroce_send_wr *bad;
    int rc = mre_qp_post_send(qp, &wr, &bad, now_ns(s));
    if (rc == MROCE_EFULL)
        return 1;
    if (rc < 0) {
        fprintf(stderr, "mroce-sim: post_send: %s\n", mre_strerror(rc));
        exit(2);
    }
    return 0;
}

static void retry_pending(struct sim *s, struct host *h)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < h->npend; i++)
        if (try_post(s, h, h->pend[i]))
            h->pend[k++] = h->pend[i];
    h->npend = k;
}

int host_post(struct sim *s, uint32_t m)
{
    struct host *h = &s->hosts[s->msgs[m].src];
    if (h->npend || try_post(s, h, m)) {
        if (h->npend == h->cappend) {
            uint32_t nc = h->cappend ? 2 * h->cappend : 16;
            uint32_t *np = realloc(h->pend, nc * sizeof(*np));
            if (!np)
                return -1;
            h->pend = np;
            h->cappend = nc;
        }
        h->pend[h->npend++] = m;
        return 0;
    }
    host_pull(s, h);
    timer_arm(s, h, 0);
    return 0;
}

/* The host interface's two entries (struct host_if). */
static void host_if_recv(struct sim *s, uint32_t host, struct pkt *p)
{
    host_on_pkt(s, &s->hosts[host], p);
}

static void host_if_ready(struct sim *s, uint32_t host)
{
    host_pull(s, &s->hosts[host]);
}

const struct host_if host_if = {host_if_recv, host_if_ready};

int host_connect_start(struct sim *s)
{
    struct host_conn c;
    memset(&c, 0, sizeof(c));
    c.seen = calloc(((uint64_t)s->nhosts * s->nhosts + 7) / 8, 1);
    if (!c.seen)
        return -1;
    s->conn = &c;
    int rc = -1;
    c.pass = 1;
    if (wl_pairs(s, connect_pair) < 0 ||
        (c.npairs && dist_sum(s, c.qpn, c.npairs) < 0))
        goto out;
    c.pass = 2;
    c.npairs = 0;
    if (wl_pairs(s, connect_pair) < 0)
        goto out;
    for (uint32_t i = 0; i < s->nhosts; i++) {
        if (!sim_host_here(s, i))
            continue;
        host_pull(s, &s->hosts[i]);
        timer_arm(s, &s->hosts[i], 0);
    }
    rc = 0;
out:
    s->conn = NULL;
    free(c.seen);
    free(c.qpn);
    return rc;
}

int host_pairs_connected(struct sim *s)
{
    /* A QP that is RTS and knows its peer stays so while the handshakes
     * run, so each call goes on from the first QP the last one found
     * open instead of reading every QP again (a cache miss each). */
    uint64_t open = 0;
    uint32_t i = s->conn_host, j = s->conn_peer;
    for (; i < s->nhosts && !open; i++, j = 0) {
        if (!sim_host_here(s, i))
            continue;
        for (; j < s->nhosts; j++) {
            mre_qp *qp = s->hosts[i].qp_by_peer[j];
            if (qp &&
                (mre_qp_state(qp) != MROCE_QPS_RTS || !mre_qp_remote_qpn(qp))) {
                open = 1;
                s->conn_host = i;
                s->conn_peer = j;
                break;
            }
        }
    }
    if (dist_sum(s, &open, 1) < 0) {
        fprintf(stderr, "mroce-sim-mpi: reduction failed\n");
        exit(2);
    }
    return !open;
}

/* The duplicates host RX counted from host TX: retransmissions that were
 * not needed. */
static unsigned long long rx_dups_of(struct sim *s, uint32_t rx, uint32_t tx)
{
    mre_qp *qp = s->hosts[rx].qp_by_peer[tx];
    struct mroce_qp_counters c;
    if (!qp || !sim_host_here(s, rx))
        return 0;
    mre_qp_get_counters(qp, &c);
    return (unsigned long long)c.rx_dups;
}

/* Diagnostics (MROCE_SIM_FLOWS=PREFIX): PREFIX.flows.csv, one row per QP
 * that sent data (its messages' completion times, counters), and
 * PREFIX.paths.csv, one row per path slot with the up link ECMP maps its
 * current entropy to at the sender's ToR (ToRs and switches numbered from 0
 * in node order: ToRs first).  Reads only; the run is the same. */
static void host_dump_flows(struct sim *s, const char *prefix)
{
    char name[512];
    snprintf(name, sizeof name, "%s.flows.csv", prefix);
    FILE *ff = fopen(name, "w");
    snprintf(name, sizeof name, "%s.paths.csv", prefix);
    FILE *fp = fopen(name, "w");
    uint32_t H = s->nhosts;
    uint64_t *cnt = calloc((size_t)H * H, sizeof(uint64_t));
    uint64_t *sum = calloc((size_t)H * H, sizeof(uint64_t));
    uint64_t *mx = calloc((size_t)H * H, sizeof(uint64_t));
    if (!ff || !fp || !cnt || !sum || !mx)
        goto out;
    for (uint32_t i = 0; i < s->nmsgs; i++) {
        const struct msg *m = &s->msgs[i];
        if (m->bg || !(m->done & 1))
            continue;
        size_t k = (size_t)m->src * H + m->dst;
        uint64_t d = m->t_recv - m->t_post;
        cnt[k]++;
        sum[k] += d;
        if (d > mx[k])
            mx[k] = d;
    }
    fprintf(ff, "src,dst,src_tor,dst_tor,msgs,mct_mean_us,mct_max_us,tx_data,"
                "retx,ce_echo,srtt_ns,min_rtt_ns,cwnd,timeouts,retired,"
                "retx_path,retx_ooo,retx_probe,retx_rto,probes,rx_dups\n");
    fprintf(fp,
            "src,dst,slot,entropy,uplink,up_switch,weight,tx_pkts,ecn_marks,"
            "lost,srtt_ns,min_rtt_ns\n");
    for (uint32_t i = 0; i < H; i++)
        for (uint32_t j = 0; j < H; j++) {
            mre_qp *qp = s->hosts[i].qp_by_peer[j];
            if (!qp)
                continue;
            struct mroce_qp_counters c;
            mre_qp_get_counters(qp, &c);
            if (!c.tx_data_pkts)
                continue;
            size_t k = (size_t)i * H + j;
            uint32_t leaf = s->links[s->hosts[i].uplink].dst;
            uint32_t dleaf = s->links[s->hosts[j].uplink].dst;
            fprintf(ff,
                    "%u,%u,%u,%u,%llu,%.3f,%.3f,%llu,%llu,%llu,%llu,%llu,"
                    "%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu\n",
                    i, j, leaf - H, dleaf - H, (unsigned long long)cnt[k],
                    cnt[k] ? (double)sum[k] / (double)cnt[k] / PS_PER_US : 0,
                    (double)mx[k] / PS_PER_US,
                    (unsigned long long)c.tx_data_pkts,
                    (unsigned long long)c.retx_pkts,
                    (unsigned long long)c.rx_ecn_ce, (unsigned long long)c.srtt,
                    (unsigned long long)c.min_rtt, (unsigned long long)c.cwnd,
                    (unsigned long long)c.timeouts,
                    (unsigned long long)c.paths_retired,
                    (unsigned long long)c.retx_path,
                    (unsigned long long)c.retx_ooo,
                    (unsigned long long)c.retx_probe,
                    (unsigned long long)c.retx_rto,
                    (unsigned long long)c.probes,
                    (unsigned long long)rx_dups_of(s, j, i));
            struct mroce_path_stats ps[256];
            int np = mre_qp_path_stats(qp, ps, 256);
            for (int q = 0; q < np && q < 256; q++) {
                uint32_t ul = fabric_up_link(s, leaf, i, j, ps[q].entropy);
                fprintf(fp, "%u,%u,%d,%u,%u,%u,%u,%llu,%llu,%llu,%llu,%llu\n",
                        i, j, q, ps[q].entropy, ul, s->links[ul].dst - H,
                        ps[q].weight, (unsigned long long)ps[q].tx_pkts,
                        (unsigned long long)ps[q].ecn_marks,
                        (unsigned long long)ps[q].lost_pkts,
                        (unsigned long long)ps[q].srtt,
                        (unsigned long long)ps[q].min_rtt);
            }
        }
out:
    if (ff)
        fclose(ff);
    if (fp)
        fclose(fp);
    free(cnt);
    free(sum);
    free(mx);
}

void host_collect_counters(struct sim *s)
{
    if (s->tp->kind != T_MROCE)
        return;
    s->retx_pkts = s->tx_data_pkts = s->mroce_timeouts = 0;
    s->mroce_paths_retired = 0;
    /* Nothing in the simulator corrupts packets: a CRC drop would mean a
     * zero-copy payload changed between its send and its delivery. */
    s->crc_drops = 0;
    for (uint32_t i = 0; i < s->nhosts; i++) {
        if (!sim_host_here(s, i))
            continue;
        struct mroce_ep_counters ec;
        mre_ep_get_counters(s->hosts[i].ep, &ec);
        s->crc_drops += ec.drop_crc;
    }
    if (s->crc_drops)
        fprintf(stderr, "mroce-sim: %llu packets dropped for their CRC\n",
                (unsigned long long)s->crc_drops);
    for (uint32_t i = 0; i < s->nhosts; i++)
        for (uint32_t j = 0; j < s->nhosts && sim_host_here(s, i); j++) {
            mre_qp *qp = s->hosts[i].qp_by_peer[j];
            if (!qp)
                continue;
            struct mroce_qp_counters c;
            mre_qp_get_counters(qp, &c);
            s->retx_pkts += c.retx_pkts;
            s->tx_data_pkts += c.tx_data_pkts;
            s->mroce_timeouts += c.timeouts;
            s->mroce_paths_retired += c.paths_retired;
            if (getenv("MROCE_SIM_DEBUG") && i < 2 && c.tx_data_pkts)
                fprintf(stderr,
                        "QP h%u->h%u cwnd %llu srtt %llu min_rtt %llu "
                        "rtt_last %llu tx_data %llu acks_rx %llu ce %llu\n",
                        i, j, (unsigned long long)c.cwnd,
                        (unsigned long long)c.srtt,
                        (unsigned long long)c.min_rtt,
                        (unsigned long long)c.rtt_last,
                        (unsigned long long)c.tx_data_pkts,
                        (unsigned long long)c.rx_acks,
                        (unsigned long long)c.rx_ecn_ce);
            if (mre_qp_state(qp) == MROCE_QPS_ERROR) {
                s->qp_errors++;
                if (getenv("MROCE_SIM_DEBUG")) {
                    struct mroce_path_stats ps[64];
                    int np = mre_qp_path_stats(qp, ps, 64);
                    fprintf(
                        stderr,
                        "QP h%u->h%u ERROR: tx_data %llu retx %llu "
                        "rto %llu probe %llu path %llu ooo %llu timeouts %llu "
                        "retired %llu\n",
                        i, j, (unsigned long long)c.tx_data_pkts,
                        (unsigned long long)c.retx_pkts,
                        (unsigned long long)c.retx_rto,
                        (unsigned long long)c.retx_probe,
                        (unsigned long long)c.retx_path,
                        (unsigned long long)c.retx_ooo,
                        (unsigned long long)c.timeouts,
                        (unsigned long long)c.paths_retired);
                    for (int k = 0; k < np && k < 64; k++)
                        fprintf(stderr,
                                "  slot %d ent %u act %u w %u tx %llu "
                                "acked %llu lost %llu retire %u\n",
                                k, ps[k].entropy, ps[k].active, ps[k].weight,
                                (unsigned long long)ps[k].tx_pkts,
                                (unsigned long long)ps[k].acked_pkts,
                                (unsigned long long)ps[k].lost_pkts,
                                ps[k].retirements);
                }
            }
        }
    if (getenv("MROCE_SIM_FLOWS") && !s->dist)
        host_dump_flows(s, getenv("MROCE_SIM_FLOWS"));
}

/* Diagnostics (MROCE_SIM_TRACE=FILE[:STEP_US]): run.c runs the loop in
 * steps (the events are the same) and after each one this writes, per
 * sending QP (from its first data packet or share request, CC-30), its
 * data packets sent, CE marks its receiver saw, retransmissions, cwnd,
 * srtt, the sender rank's outstanding messages, the receiver's latest
 * rate hint (hint_mbps, 0 = none, CC-26) and the rate the sender may send
 * at (rate_mbps: the smaller of the hint and cwnd / srtt; for the RoCEv2
 * model, roce.c, its DCQCN rate). */
FILE *host_trace_open(const char *arg, uint64_t *step)
{
    char path[512];
    snprintf(path, sizeof path, "%s", arg);
    *step = 20 * PS_PER_US;
    char *c = strchr(path, ':');
    if (c) {
        *c = 0;
        *step = (uint64_t)(atof(c + 1) * PS_PER_US);
        if (*step == 0) /* unparsable or 0: the loop would never advance */
            *step = 20 * PS_PER_US;
    }
    FILE *f = fopen(path, "w");
    if (f)
        fprintf(f, "t_us,src,dst,tx_data,ce,retx,cwnd,srtt_ns,outstanding,"
                   "hint_mbps,rate_mbps\n");
    return f;
}

void host_trace_rows(struct sim *s, FILE *f, uint64_t t0)
{
    for (uint32_t i = 0; i < s->nhosts; i++)
        for (uint32_t j = 0; j < s->nhosts; j++) {
            mre_qp *qp = s->hosts[i].qp_by_peer[j];
            if (!qp)
                continue;
            struct mroce_qp_counters a, b;
            mre_qp_get_counters(qp, &a);
            if (!a.tx_data_pkts && !a.rate_asks)
                continue; /* not sending, and not asking (CC-30) */
            mre_qp *rq = s->hosts[j].qp_by_peer[i];
            memset(&b, 0, sizeof b);
            if (rq)
                mre_qp_get_counters(rq, &b);
            uint64_t hint = a.rate_hint == MROCE_CREDIT_UNLIMITED ? 0
                                                                  : a.rate_hint;
            uint64_t rate = a.srtt ? a.cwnd * 8000u / a.srtt : 0;
            if (hint && (!rate || hint < rate))
                rate = hint;
            fprintf(f, "%.1f,%u,%u,%llu,%llu,%llu,%llu,%llu,%u,%llu,%llu\n",
                    (double)(s->now - t0) / PS_PER_US, i, j,
                    (unsigned long long)a.tx_data_pkts,
                    (unsigned long long)b.rx_ecn_ce,
                    (unsigned long long)a.retx_pkts, (unsigned long long)a.cwnd,
                    (unsigned long long)a.srtt, wl_outstanding(s, i),
                    (unsigned long long)hint, (unsigned long long)rate);
        }
}
