/*
 * flow_server.c - mroce-fabric-flow's server: one device (one UDP port)
 * with --conns QPs listening on it, so that the senders of an incast
 * meet one receiver endpoint whose rate hints divide its receive rate
 * among them (CC-24..29 count the active senders per endpoint; one
 * process per sender would give each the whole rate).  Each connection
 * runs the exchange of mroce_fabric_flow.c independently: HELLO, the
 * region, the WRITEs, DONE, the verdict, one "result" line.
 *
 * With --interval MS it also prints, every MS while a connection's
 * WRITEs arrive, one "rx" line: the bytes that QP has received since it
 * sent the region, with a CLOCK_MONOTONIC time stamp.  One process, one
 * clock: each sender's arrival rate at the bottleneck without clock skew
 * (the incast scenario's convergence, fabric/scenarios/incast_conv.py).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"

/* One connection's progress through the exchange. */
enum { S_HELLO, S_DATA, S_VERDICT, S_DONE };

struct sconn {
    struct conn c;
    int state;
    struct ctrl hello;
    uint8_t *region;
    double t0, t1; /* region sent, DONE received */
    uint64_t base; /* rx_bytes when the region was sent */
    uint64_t bad;  /* mismatched words */
    char label[80];
};

static void rx_sample(struct sconn *s, double t)
{
    struct mroce_qp_counters k;
    mroce_qp_get_counters(s->c.qp, &k);
    printf("rx label=%s t=%.6f bytes=%" PRIu64 "\n", s->label, t,
           k.rx_bytes - s->base);
}

/* A control message arrived on s: HELLO (answer with the region) or
 * DONE (verify, answer with the verdict).  Returns 0, or 1 on a bad
 * request. */
static int on_ctl(struct sconn *s)
{
    struct ctrl in = s->c.ctl[0];
    if (s->state == S_HELLO && in.type == MSG_HELLO) {
        if (in.bytes == 0 || in.bytes > (1ull << 30)) {
            fprintf(stderr, "mroce-fabric-flow: %s: bad size\n", s->label);
            return 1;
        }
        s->hello = in;
        s->region = aligned_alloc(4096, (in.bytes + 4095) & ~4095ull);
        if (!s->region)
            die("alloc", 0);
        memset(s->region, 0, in.bytes);
        mroce_mr *mr;
        int rc = mroce_reg_mr(s->c.pd, s->region, in.bytes,
                              MROCE_ACCESS_LOCAL_WRITE |
                                  MROCE_ACCESS_REMOTE_WRITE,
                              &mr);
        if (rc < 0)
            die("reg_mr", rc);
        post_ctl_recv(&s->c);
        struct ctrl m = {.type = MSG_REGION,
                         .addr = (uintptr_t)s->region,
                         .rkey = mroce_mr_rkey(mr),
                         .bytes = in.bytes};
        struct mroce_qp_counters k;
        mroce_qp_get_counters(s->c.qp, &k);
        s->base = k.rx_bytes;
        s->t0 = now_s();
        if (O.interval_ms > 0)
            rx_sample(s, s->t0);
        send_ctl(&s->c, &m);
        s->state = S_DATA;
        return 0;
    }
    if (s->state == S_DATA && in.type == MSG_DONE) {
        s->t1 = now_s();
        if (O.interval_ms > 0)
            rx_sample(s, s->t1);
        s->bad = s->hello.verify
                     ? check(s->region, s->hello.bytes, s->hello.seed)
                     : 0;
        struct ctrl v = {.type = MSG_VERDICT,
                         .verify = s->hello.verify,
                         .mismatches = s->bad};
        send_ctl(&s->c, &v);
        s->state = S_VERDICT;
        return 0;
    }
    fprintf(stderr, "mroce-fabric-flow: %s: unexpected message\n", s->label);
    return 1;
}

static void print_result(struct sconn *s)
{
    printf("result role=server label=%s bytes=%" PRIu64
           " secs=%.3f region_t=%.6f done_t=%.6f verify=%s",
           s->label, s->hello.bytes, s->t1 - s->t0, s->t0, s->t1,
           !s->hello.verify ? "off"
           : s->bad         ? "FAIL"
                            : "ok");
    print_qp("server", &s->c);
    printf(" mismatched_words=%" PRIu64 "\n", s->bad);
    fflush(stdout);
}

int run_server(void)
{
    int n = O.conns, left = O.conns, bad = 0;
    struct sconn *sc = calloc((size_t)n, sizeof *sc);
    if (!sc)
        die("alloc", 0);
    setup(&sc[0].c, O.port);
    for (int i = 0; i < n; i++) {
        if (i) {
            sc[i].c.dev = sc[0].c.dev;
            sc[i].c.pd = sc[0].c.pd;
            sc[i].c.cq = sc[0].c.cq;
            add_qp(&sc[i].c);
        }
        if (n == 1)
            snprintf(sc[i].label, sizeof sc[i].label, "%s", O.label);
        else
            snprintf(sc[i].label, sizeof sc[i].label, "%s%d", O.label, i);
        post_ctl_recv(&sc[i].c);
        int rc = mroce_listen(sc[i].c.qp);
        if (rc < 0)
            die("listen", rc);
    }
    /* Connecting, the exchange and the verdicts, all within one bound:
     * the accept's timeout, then the transfer's. */
    double deadline = now_s() + 2 * O.timeout + 60, next = now_s();
    struct mroce_wc wc[64];
    while (left > 0) {
        double t = now_s();
        if (O.interval_ms > 0 && t >= next) {
            for (int i = 0; i < n; i++)
                if (sc[i].state == S_DATA)
                    rx_sample(&sc[i], t);
            next += O.interval_ms / 1e3;
            if (next < t) /* a starved process skips missed samples */
                next = t + O.interval_ms / 1e3;
        }
        int got = mroce_poll_cq(sc[0].c.cq, 64, wc);
        if (got < 0)
            die("poll_cq", got);
        for (int j = 0; j < got; j++) {
            struct sconn *s = NULL;
            for (int i = 0; i < n && !s; i++)
                if (mroce_qp_num(sc[i].c.qp) == wc[j].qp_num)
                    s = &sc[i];
            if (!s)
                continue;
            if (s->state == S_DONE)
                continue;
            /* The client disconnects once it has the verdict, which
             * flushes the receive posted for a next message: done. */
            int fin = s->state == S_VERDICT &&
                      (wc[j].wr_id == 2 || wc[j].status != MROCE_WC_SUCCESS);
            if (!fin && wc[j].status != MROCE_WC_SUCCESS) {
                fprintf(stderr,
                        "mroce-fabric-flow: %s: control completion: %s\n",
                        s->label, mroce_wc_status_str(wc[j].status));
                printf("result role=server label=%s error=%s\n", s->label,
                       mroce_wc_status_str(wc[j].status));
                s->state = S_DONE;
                bad = 1;
                left--;
                continue;
            }
            if (fin) {
                s->state = S_DONE;
                print_result(s);
                bad |= s->bad != 0;
                left--;
            } else if (wc[j].wr_id == 1 && on_ctl(s)) {
                return 1;
            }
        }
        if (got == 0) {
            if (t > deadline || stop_sig) {
                fprintf(stderr,
                        "mroce-fabric-flow: %s waiting (%d of %d "
                        "connections open)\n",
                        stop_sig ? "stopped" : "timed out", left, n);
                for (int i = 0; i < n; i++)
                    if (sc[i].state != S_DONE)
                        dump_state(&sc[i].c, stop_sig ? "stopped" : "timeout");
                return 1;
            }
            mroce_cq_wait(sc[0].c.cq, O.interval_ms > 0 ? 1 : 10);
        }
    }
    for (int i = 0; i < n; i++)
        mroce_disconnect(sc[i].c.qp, 1000);
    mroce_device_close(sc[0].c.dev);
    return bad;
}
