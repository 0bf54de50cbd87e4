/*
 * perf_session.c - a client or a server session, from connection to
 * teardown.  The client connects QP 0, SENDs HELLO with the run's
 * configuration and its buffer, learns the server's QPs and buffer from
 * WELCOME, connects the rest and runs each message size as GO / READY / run /
 * DONE / RESULT, then FIN.  The server accepts QP 0, polls for HELLO in a
 * small buffer of its own (HELLO decides how big its data memory is), creates
 * and listens on the other QPs and answers each GO until FIN.  Each message
 * size (client_size, server_size) makes one row of the table.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* ------------------------------------------------------- one message size --- */

static double gbps(uint64_t bytes, uint64_t ns)
{
    return ns ? (double)bytes * 8.0 / (double)ns : 0.0;
}

static void row_counters(struct row *r, const struct ctrl *peer)
{
    struct mroce_qp_counters s;
    sum_counters(&s, NULL, NULL);
    r->retx_local = s.retx_pkts - P.base_c.retx_pkts;
    r->dups = s.rx_dups - P.base_c.rx_dups;
    r->retx_remote = peer ? peer->retx : 0;
}

static void fill_result_counters(struct ctrl *c)
{
    struct mroce_qp_counters s;
    uint64_t used, total;
    sum_counters(&s, &used, &total);
    c->retx = s.retx_pkts - P.base_c.retx_pkts;
    c->dups = s.rx_dups - P.base_c.rx_dups;
    c->paths_used = used;
    c->paths_total = total;
    c->retired = s.paths_retired;
}

/* Client: one message size, start to RESULT. */
static void client_size(uint32_t size)
{
    struct row r = {.size = size};
    uint64_t mism0 = P.mismatches;
    P.cur_iters = P.iters;
    if (P.iters_auto) { /* -a: about 1 GiB per size, 16..5000 iterations */
        uint64_t cap = (1ull << 30) / size;
        P.cur_iters = cap < 16 ? 16 : cap < 5000 ? cap : 5000;
    }
    prepare_size(size);
    /* GO carries this size's iteration count: a bidirectional server runs
     * as many as we do. */
    struct ctrl c = {.type = C_GO, .size = size, .iters = P.cur_iters};
    send_ctrl(&c);
    wait_ctrl(C_READY);

    struct ctrl done = {.type = C_DONE, .size = size};
    if (tests[P.test].lat) {
        struct lat l = {0};
        r.iters = lat_client(size, &l);
        done.count[0] = r.iters;
        lat_stats(&l, &r, P.test == T_WRITE_LAT || P.test == T_SEND_LAT);
        free(l.ns);
    } else {
        struct bw_run br;
        bw_requester(size, &br);
        done.run_ns = br.t1 - br.t0;
        done.tx_msgs = br.msgs;
        done.peak_bps = P.peak_bps;
        for (uint32_t i = 0; i < P.nqps; i++)
            done.count[i] = P.q[i].done;
        r.iters = br.msgs / P.nqps;
        double avg = gbps(br.msgs * size, done.run_ns);
        r.bw_avg = avg;
        r.bw_peak = (double)P.peak_bps / 1e9;
        if (r.bw_peak < avg)
            r.bw_peak = avg; /* short runs: no full sampling interval */
        r.mpps = done.run_ns ? (double)br.msgs * 1e3 / (double)done.run_ns : 0;
    }
    send_ctrl(&done);
    struct ctrl res = wait_ctrl(C_RESULT);
    if (P.bidir && !tests[P.test].lat) {
        /* perftest -b reports both directions together. */
        for (uint32_t i = 0; i < P.nqps; i++)
            if (P.duration_ms ? res.count[i] == 0 : res.count[i] != P.cur_iters)
                die("bidirectional: the server sent %" PRIu64 " messages on "
                    "QP %u, expected %" PRIu64,
                    res.count[i], i, P.duration_ms ? 1 : P.cur_iters);
        verify_targets(&res);
        double pavg = gbps(res.tx_msgs * size, res.run_ns);
        r.bw_avg += pavg;
        r.bw_peak += (double)res.peak_bps / 1e9 > pavg
                         ? (double)res.peak_bps / 1e9
                         : pavg;
        r.mpps += res.run_ns ? (double)res.tx_msgs * 1e3 / (double)res.run_ns
                             : 0;
    } else if (P.test == T_WRITE_LAT || P.test == T_SEND_LAT) {
        verify_targets(&res);
    }
    P.peer_mismatches += res.mismatches;
    row_counters(&r, &res);
    r.mismatches = (P.mismatches - mism0) + res.mismatches;
    if (P.nrows < (int)(sizeof(P.rows) / sizeof(P.rows[0])))
        P.rows[P.nrows++] = r;
    print_row(&r);
}

/* Server: one message size, GO to RESULT. */
static void server_size(const struct ctrl *go)
{
    uint32_t size = (uint32_t)go->size;
    struct row r = {.size = size};
    uint64_t mism0 = P.mismatches;
    P.cur_iters = go->iters;
    prepare_size(size);
    struct ctrl c = {.type = C_READY, .size = size};
    send_ctrl(&c);

    struct ctrl res = {.type = C_RESULT, .size = size};
    struct ctrl done;
    if (tests[P.test].lat) {
        uint64_t n = 0;
        if (P.test == T_WRITE_LAT || P.test == T_SEND_LAT)
            n = lat_server(size);
        done = wait_ctrl(C_DONE);
        res.count[0] = n;
        r.iters = done.count[0];
    } else {
        if (P.bidir) {
            struct bw_run br;
            bw_requester(size, &br);
            res.run_ns = br.t1 - br.t0;
            res.tx_msgs = br.msgs;
            res.peak_bps = P.peak_bps;
            for (uint32_t i = 0; i < P.nqps; i++)
                res.count[i] = P.q[i].done;
        }
        done = wait_ctrl(C_DONE);
        r.iters = done.tx_msgs / P.nqps;
        r.bw_avg = gbps(done.tx_msgs * size, done.run_ns);
        r.bw_peak = (double)done.peak_bps / 1e9;
        if (r.bw_peak < r.bw_avg)
            r.bw_peak = r.bw_avg;
        r.mpps = done.run_ns ? (double)done.tx_msgs * 1e3 / (double)done.run_ns
                             : 0;
        if (P.bidir) {
            double a = gbps(res.tx_msgs * size, res.run_ns);
            r.bw_avg += a;
            r.bw_peak += (double)res.peak_bps / 1e9 > a
                             ? (double)res.peak_bps / 1e9
                             : a;
            r.mpps += res.run_ns
                          ? (double)res.tx_msgs * 1e3 / (double)res.run_ns
                          : 0;
        }
    }
    /* Receive completions that raced with DONE are in the CQs by now (the
     * peer saw them acknowledged, and acknowledged means placed). */
    for (int k = 0; k < 4; k++)
        pump_all();
    verify_targets(&done);
    res.mismatches = P.mismatches - mism0;
    res.checked = P.checked;
    fill_result_counters(&res);
    send_ctrl(&res);
    row_counters(&r, NULL);
    r.mismatches = res.mismatches;
    if (P.nrows < (int)(sizeof(P.rows) / sizeof(P.rows[0])))
        P.rows[P.nrows++] = r;
    if (!tests[P.test].lat)
        print_row(&r);
    else
        printf(" %-7u %-10" PRIu64 " (latency is measured by the client)\n",
               size, r.iters);
    fflush(stdout);
}

/* ------------------------------------------------------------ sessions --- */

static void hello_fill(struct ctrl *c)
{
    memset(c, 0, sizeof(*c));
    c->type = C_HELLO;
    c->test = (uint64_t)P.test;
    c->iters = P.iters;
    c->duration_ms = P.duration_ms;
    c->nqps = P.nqps;
    c->tx_depth = P.tx_depth;
    c->rx_depth = P.rx_depth;
    c->bidir = (uint64_t)P.bidir;
    c->verify = (uint64_t)P.verify;
    c->cs = (uint64_t)P.cs;
    c->seed = P.seed;
    c->size_min = P.size_min;
    c->size_max = P.size_max;
}

static void wait_rts(struct pqp *q)
{
    uint64_t t0 = now_ns();
    while (mroce_qp_get_state(q->qp) != MROCE_QPS_RTS) {
        if (mroce_qp_get_state(q->qp) == MROCE_QPS_ERROR)
            die("QP %u failed to connect", (unsigned)(q - P.q));
        if (now_ns() - t0 > timeout_ns())
            die("QP %u: no connection within %.0f s", (unsigned)(q - P.q),
                P.o.timeout);
        pump_all();
    }
}

static void teardown(void)
{
    /* The session is over: orderly disconnects, whose flushes are expected. */
    P.closing = 1;
    for (uint32_t i = 0; i < P.nqps; i++)
        if (P.q[i].qp && mroce_qp_get_state(P.q[i].qp) == MROCE_QPS_RTS)
            (void)mroce_disconnect(P.q[i].qp, 500);
    if (P.o.rekey) {
        struct mroce_ep_counters c;
        mroce_device_get_counters(P.dev, &c);
        printf("rekey      : %s generation 1, %llu receive sides moved to a "
               "new key, %llu drop_auth, %llu drop_key\n",
               P.rekeyed ? "sending under" : "never moved to",
               (unsigned long long)c.sec_rekeys,
               (unsigned long long)c.drop_auth, (unsigned long long)c.drop_key);
    }
    mroce_device_close(P.dev); /* destroys QPs, CQs, MRs, the PD */
    P.dev = NULL;
    free(P.mem);
    P.mem = NULL;
    free(P.hello_rx);
    P.hello_rx = NULL;
    free(P.ev);
    P.ev = NULL;
}

void run_client(void)
{
    const struct opts *o = &P.o;
    open_device();
    plan_memory();
    alloc_memory();
    for (uint32_t i = 0; i < P.nqps; i++) {
        create_qp(&P.q[i]);
        /* Receives first: the server may send as soon as we connect. */
        for (uint32_t k = 0; k < (i == 0 || P.test == T_SEND_BW ? P.nrx : 0);
             k++)
            post_recv_buf(&P.q[i], k);
    }
    int rc = mroce_connect(P.q[0].qp, o->server, o->port, 0,
                           (int)(o->timeout * 1000));
    if (rc < 0)
        die("cannot connect to %s port %u: %s", o->server, o->port,
            mroce_strerror(rc));

    struct ctrl c;
    hello_fill(&c);
    c.buf_addr = (uintptr_t)P.mem;
    c.rkey = mroce_mr_rkey(P.mr);
    c.region = P.region;
    c.stride = P.stride;
    c.mtu = own_mtu();
    for (uint32_t i = 0; i < P.nqps; i++)
        c.qpn[i] = P.q[i].qpn;
    send_ctrl(&c);
    struct ctrl w = wait_ctrl(C_WELCOME);
    if (w.region != P.region)
        die("protocol: server region %" PRIu64 " != %" PRIu64, w.region,
            P.region);
    P.rrkey = (uint32_t)w.rkey;
    P.mtu = (uint32_t)(w.mtu < c.mtu ? w.mtu : c.mtu);
    for (uint32_t i = 0; i < P.nqps; i++) {
        P.q[i].rqpn = (uint32_t)w.qpn[i];
        P.q[i].rtgt = w.buf_addr + w.stride * i;
        if (i > 0) {
            rc = mroce_connect(P.q[i].qp, o->server, o->port, P.q[i].rqpn,
                               (int)(o->timeout * 1000));
            if (rc < 0)
                die("cannot connect QP %u: %s", i, mroce_strerror(rc));
        }
    }
    print_banner();
    for (uint32_t s = P.size_min; s <= P.size_max && s; s *= 2)
        client_size(s);
    struct ctrl fin = {.type = C_FIN,
                       .mismatches = P.mismatches,
                       .checked = P.checked};
    send_ctrl(&fin);
    print_footer(NULL);
    write_json();
    teardown();
}

void run_server(void)
{
    const struct opts *o = &P.o;
    open_device();
    /* Until HELLO says how big things are, QP 0 is created with room for
     * the largest depths we accept and one small receive for HELLO. */
    P.tx_depth = 1024;
    P.nrx = 4096;
    P.nqps = 1;
    create_qp(&P.q[0]);
    P.hello_rx = aligned_alloc(64, CTRL_BYTES);
    if (!P.hello_rx)
        die("out of memory");
    int rc = mroce_reg_mr(P.pd, P.hello_rx, CTRL_BYTES,
                          MROCE_ACCESS_LOCAL_WRITE, &P.hello_mr);
    if (rc < 0)
        die("reg_mr: %s", mroce_strerror(rc));
    struct mroce_sge sge = {.addr = (uintptr_t)P.hello_rx,
                            .length = CTRL_BYTES,
                            .lkey = mroce_mr_lkey(P.hello_mr)};
    struct mroce_recv_wr rwr = {.wr_id = UINT64_MAX,
                                .sg_list = &sge,
                                .num_sge = 1};
    struct mroce_recv_wr *rbad;
    rc = mroce_post_recv(P.q[0].qp, &rwr, &rbad);
    if (rc < 0)
        die("post_recv: %s", mroce_strerror(rc));
    printf("\n************************************\n"
           "* Waiting for client to connect... *\n"
           "************************************\n");
    fflush(stdout);
    rc = mroce_accept(P.q[0].qp,
                      o->timeout_set ? (int)(o->timeout * 1000) : -1);
    if (rc < 0)
        die("accept: %s", mroce_strerror(rc));

    /* HELLO lands in the small buffer: poll for it by hand. */
    struct mroce_wc wc;
    uint64_t t0 = now_ns();
    for (;;) {
        rc = mroce_poll_cq(P.q[0].cq, 1, &wc);
        if (rc < 0)
            die("poll_cq: %s", mroce_strerror(rc));
        if (rc == 1)
            break;
        if (now_ns() - t0 > timeout_ns())
            die("no HELLO from the client within %.0f s", o->timeout);
    }
    struct ctrl h;
    if (wc.status != MROCE_WC_SUCCESS || wc.wr_id != UINT64_MAX ||
        ctrl_get(&h, P.hello_rx, wc.byte_len) < 0 || h.type != C_HELLO)
        die("protocol: bad HELLO (%s)", mroce_wc_status_str(wc.status));
    if (h.test != (uint64_t)P.test)
        die("the client runs %s, this server %s",
            h.test < T_COUNT ? tests[h.test].name : "?", tests[P.test].name);
    if (h.nqps < 1 || h.nqps > MAX_QPS || h.tx_depth < 1 || h.tx_depth > 1024 ||
        h.size_min < 1 || h.size_min > h.size_max || h.size_max > (1u << 30) ||
        h.rx_depth > 4096)
        die("protocol: HELLO out of range");
    P.iters = h.iters;
    P.duration_ms = h.duration_ms;
    P.nqps = (uint32_t)h.nqps;
    P.tx_depth = (uint32_t)h.tx_depth;
    P.rx_depth = (uint32_t)h.rx_depth;
    P.bidir = (int)h.bidir;
    P.verify = (int)h.verify;
    P.cs = (int)h.cs;
    P.seed = h.seed;
    P.size_min = (uint32_t)h.size_min;
    P.size_max = (uint32_t)h.size_max;
    plan_memory();
    alloc_memory();
    for (uint32_t k = 0; k < P.nrx; k++)
        post_recv_buf(&P.q[0], k);
    for (uint32_t i = 1; i < P.nqps; i++) {
        create_qp(&P.q[i]);
        if (P.test == T_SEND_BW)
            for (uint32_t k = 0; k < P.nrx; k++)
                post_recv_buf(&P.q[i], k);
        rc = mroce_listen(P.q[i].qp);
        if (rc < 0)
            die("listen: %s", mroce_strerror(rc));
    }
    P.rrkey = (uint32_t)h.rkey;
    P.mtu = own_mtu();
    if (h.mtu < P.mtu)
        P.mtu = (uint32_t)h.mtu;
    for (uint32_t i = 0; i < P.nqps; i++) {
        P.q[i].rqpn = (uint32_t)h.qpn[i];
        P.q[i].rtgt = h.buf_addr + h.stride * i;
    }
    struct ctrl w = {.type = C_WELCOME,
                     .buf_addr = (uintptr_t)P.mem,
                     .rkey = mroce_mr_rkey(P.mr),
                     .region = P.region,
                     .stride = P.stride,
                     .mtu = own_mtu()};
    for (uint32_t i = 0; i < P.nqps; i++)
        w.qpn[i] = P.q[i].qpn;
    send_ctrl(&w);
    for (uint32_t i = 1; i < P.nqps; i++)
        wait_rts(&P.q[i]);
    print_banner();
    for (;;) {
        while (!have_ctrl()) {
            if (P.peer_closed)
                die("the client disconnected");
            pump_all();
        }
        struct ctrl c = P.inbox[P.in_head++ % 8];
        if (c.type == C_FIN) {
            P.peer_mismatches += c.mismatches;
            break;
        }
        if (c.type != C_GO)
            die("protocol: unexpected control message %" PRIu64, c.type);
        server_size(&c);
    }
    print_footer(NULL);
    write_json();
    /* Let the client disconnect first (it is waiting for nothing more). */
    uint64_t t1 = now_ns();
    while (mroce_qp_get_state(P.q[0].qp) == MROCE_QPS_RTS &&
           now_ns() - t1 < 1000000000ull) {
        P.closing = 1;
        pump_all();
    }
    teardown();
}
