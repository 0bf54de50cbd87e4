/*
 * mroce_fabric_flow.c - mroce-fabric-flow, the scenario driver of the
 * mroce-fabric end-to-end tests: one MetaRoCE connection that WRITEs a
 * given number of bytes, with control over the path entropies (the UDP
 * source ports, so a test can make single-path flows collide on purpose),
 * end-to-end verification, and the measurements the scenarios report:
 * goodput, retransmissions by cause, per-path counters, the longest stall
 * between completions, and when paths were retired relative to an action
 * (a link failure) the client triggers itself at a given time.
 *
 *   server:  mroce-fabric-flow server -B ADDR [-p PORT] [--conns N]
 *              [--interval MS] [--timeout S]
 *   client:  mroce-fabric-flow client SERVER -B ADDR [-p PORT] [-b BYTES]
 *              [-s MSG] [--paths N] [--sport BASE] [--sports COUNT]
 *              [--verify] [--at MS --run CMD] [--label NAME]
 *
 * Exchange (over the connection itself): the client SENDs a HELLO (bytes,
 * seed); the server registers a region of that size and SENDs its address
 * and rkey; the client WRITEs the whole stream (byte o of the stream to
 * offset o), keeping --depth WRs in flight; after the last WRITE completed
 * it SENDs DONE; the server checks the region against the pattern when
 * --verify was asked and SENDs the verdict.  Both print one "result" line of
 * key=value pairs (and the client one "path" line per path slot), which
 * the fabric/scenarios scripts parse.
 *
 * The server (flow_server.c) can take several connections on one device
 * (--conns), as one receiver endpoint of an incast, and sample what each
 * has received (--interval).
 *
 * Waiting uses mroce_cq_wait (the process sleeps until the engine's next
 * deadline), so several flows can share the two cores of a test machine.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mroce/wire.h> /* MROCE_CREDIT_UNLIMITED: no rate hint */

#include "flow.h"

extern char **environ;

struct flow_opts O = {
    .port = 4794,
    .sports = 256,
    .paths = 64,
    .bytes = 32u << 20,
    .msg = 65536,
    .depth = 32,
    .seed = 1,
    .timeout = 20,
    .at_ms = -1,
    .label = "flow",
    .conns = 1,
};

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wall clock (CLOCK_REALTIME, shared by every namespace's processes):
 * --start-at and the start=/end= of the result line, so a scenario can
 * start several flows together and measure their common span. */
static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void fill(uint8_t *buf, uint64_t len, uint64_t seed)
{
    uint64_t w = 0;
    for (; w + 8 <= len; w += 8) {
        uint64_t v = splitmix(seed * 0x100000001b3ull + w / 8);
        memcpy(buf + w, &v, 8);
    }
    for (; w < len; w++)
        buf[w] = (uint8_t)w;
}

uint64_t check(const uint8_t *buf, uint64_t len, uint64_t seed)
{
    uint64_t bad = 0, w = 0;
    for (; w + 8 <= len; w += 8) {
        uint64_t v = splitmix(seed * 0x100000001b3ull + w / 8);
        if (memcmp(buf + w, &v, 8))
            bad++;
    }
    for (; w < len; w++)
        bad += buf[w] != (uint8_t)w;
    return bad;
}

volatile sig_atomic_t stop_sig; /* SIGTERM/SIGINT: dump, then exit */

static void on_stop(int sig)
{
    stop_sig = sig;
}

void die(const char *what, int rc)
{
    fprintf(stderr, "mroce-fabric-flow: %s: %s\n", what,
            rc < 0 ? mroce_strerror(rc) : strerror(errno));
    exit(1);
}

void setup(struct conn *c, uint16_t port)
{
    struct mroce_device_attr a;
    mroce_device_attr_default(&a);
    a.local_addr = O.bind;
    a.port = port;
    a.src_port_base = O.sport;
    a.src_port_count = O.sports;
    int rc = mroce_device_open(&a, &c->dev);
    if (rc < 0)
        die("device_open", rc);
    if ((rc = mroce_pd_alloc(c->dev, &c->pd)) < 0)
        die("pd_alloc", rc);
    if ((rc = mroce_create_cq(c->dev, 4096, &c->cq)) < 0)
        die("create_cq", rc);
    add_qp(c);
}

void add_qp(struct conn *c)
{
    int rc;
    struct mroce_qp_init_attr qa;
    mroce_qp_init_attr_default(&qa);
    qa.send_cq = qa.recv_cq = c->cq;
    qa.eng.npaths = O.paths;
    qa.eng.max_send_wr = 1024;
    if (O.cc_none)
        qa.eng.cc_algo = MROCE_CC_NONE;
    if (O.ooo_thresh)
        qa.eng.ooo_thresh = O.ooo_thresh;
    if (O.init_cwnd)
        qa.eng.init_cwnd = O.init_cwnd;
    if (O.path_burst)
        qa.eng.path_burst = (uint8_t)O.path_burst;
    if (O.max_ack_delay_us > 0)
        qa.eng.max_ack_delay = (mroce_tstamp)(O.max_ack_delay_us * 1e3);
    if (O.target_qdelay_us > 0)
        qa.eng.target_qdelay = (mroce_tstamp)(O.target_qdelay_us * 1e3);
    if ((rc = mroce_create_qp(c->pd, &qa, &c->qp)) < 0)
        die("create_qp", rc);
    c->ctl = aligned_alloc(64, 2 * sizeof(struct ctrl));
    memset(c->ctl, 0, 2 * sizeof(struct ctrl));
    if ((rc = mroce_reg_mr(c->pd, c->ctl, 2 * sizeof(struct ctrl),
                           MROCE_ACCESS_LOCAL_WRITE, &c->ctl_mr)) < 0)
        die("reg_mr", rc);
}

/* Everything known about a stuck connection, to stderr: the QP's state,
 * counters and path slots, the device's endpoint and UDP counters. */
void dump_state(struct conn *c, const char *why)
{
    struct mroce_ep_counters e;
    struct mroce_udp_counters u;
    fprintf(stderr, "mroce-fabric-flow: %s %s: state dump\n", O.label, why);
    mroce_qp_dump_counters(c->qp, stderr);
    mroce_device_get_counters(c->dev, &e);
    fprintf(stderr, "  ep:");
#define X_EP(name) fprintf(stderr, " %s=%" PRIu64, #name, e.name);
    MROCE_EP_COUNTERS(X_EP)
#undef X_EP
    mroce_device_get_udp_counters(c->dev, &u);
    fprintf(stderr, "\n  udp:");
#define X_UDP(name) fprintf(stderr, " %s=%" PRIu64, #name, u.name);
    MROCE_UDP_COUNTERS(X_UDP)
#undef X_UDP
    fprintf(stderr, "\n");
    fflush(stderr);
}

void post_ctl_recv(struct conn *c)
{
    struct mroce_sge sge = {(uintptr_t)&c->ctl[0], sizeof(struct ctrl),
                            mroce_mr_lkey(c->ctl_mr)};
    struct mroce_recv_wr wr = {.wr_id = 1, .sg_list = &sge, .num_sge = 1}, *bad;
    int rc = mroce_post_recv(c->qp, &wr, &bad);
    if (rc < 0)
        die("post_recv", rc);
}

void send_ctl(struct conn *c, const struct ctrl *m)
{
    c->ctl[1] = *m;
    struct mroce_sge sge = {(uintptr_t)&c->ctl[1], sizeof(struct ctrl),
                            mroce_mr_lkey(c->ctl_mr)};
    struct mroce_send_wr wr = {.wr_id = 2,
                               .sg_list = &sge,
                               .num_sge = 1,
                               .opcode = MROCE_WR_SEND,
                               .send_flags = MROCE_SEND_SIGNALED},
                         *bad;
    int rc = mroce_post_send(c->qp, &wr, &bad);
    if (rc < 0)
        die("post_send", rc);
}

/* Waits for the control receive (and any control send completions). */
static void wait_ctl(struct conn *c, uint32_t type, double deadline)
{
    struct mroce_wc wc[16];
    for (;;) {
        int n = mroce_poll_cq(c->cq, 16, wc);
        if (n < 0)
            die("poll_cq", n);
        for (int i = 0; i < n; i++) {
            if (wc[i].status != MROCE_WC_SUCCESS) {
                fprintf(stderr, "mroce-fabric-flow: control completion: %s\n",
                        mroce_wc_status_str(wc[i].status));
                exit(1);
            }
            if (wc[i].wr_id == 1) {
                if (c->ctl[0].type != type) {
                    fprintf(stderr, "mroce-fabric-flow: unexpected message\n");
                    exit(1);
                }
                return;
            }
        }
        if (n == 0) {
            if (now_s() > deadline || stop_sig) {
                fprintf(stderr, "mroce-fabric-flow: %s waiting\n",
                        stop_sig ? "stopped" : "timed out");
                dump_state(c, stop_sig ? "stopped" : "timeout");
                exit(1);
            }
            mroce_cq_wait(c->cq, 10);
        }
    }
}

void print_qp(const char *role, struct conn *c)
{
    struct mroce_qp_counters k;
    struct mroce_udp_counters u;
    mroce_qp_get_counters(c->qp, &k);
    mroce_device_get_udp_counters(c->dev, &u);
    printf(" retx=%" PRIu64 " retx_rto=%" PRIu64 " retx_ooo=%" PRIu64
           " retx_path=%" PRIu64 " retx_probe=%" PRIu64 " timeouts=%" PRIu64
           " paths_retired=%" PRIu64 " rx_ce=%" PRIu64 " rx_dups=%" PRIu64
           " srtt_us=%.1f min_rtt_us=%.1f tx_pkts=%" PRIu64
           " tx_errors=%" PRIu64 " icmp_errors=%" PRIu64 " path_reuses=%" PRIu64
           " data_pkts=%" PRIu64,
           k.retx_pkts, k.retx_rto, k.retx_ooo, k.retx_path, k.retx_probe,
           k.timeouts, k.paths_retired, k.rx_ecn_ce, k.rx_dups, k.srtt / 1e3,
           k.min_rtt / 1e3, k.tx_pkts, u.tx_errors, u.rx_icmp_errors,
           k.path_reuses, k.tx_data_pkts);
    (void)role;
}

static int run_client(void)
{
    struct conn c;
    setup(&c, O.local_port ? O.local_port : (uint16_t)(O.port + 1));
    uint8_t *src = aligned_alloc(4096, (O.bytes + 4095) & ~4095ull);
    if (!src)
        die("alloc", 0);
    fill(src, O.bytes, O.seed);
    mroce_mr *mr;
    int rc = mroce_reg_mr(c.pd, src, O.bytes, MROCE_ACCESS_LOCAL_WRITE, &mr);
    if (rc < 0)
        die("reg_mr", rc);
    post_ctl_recv(&c);
    if ((rc = mroce_connect(c.qp, O.peer, O.port, 0, (int)(O.timeout * 1000))) <
        0)
        die("connect", rc);
    struct ctrl hello = {.type = MSG_HELLO,
                         .verify = (uint32_t)O.verify,
                         .bytes = O.bytes,
                         .seed = O.seed};
    send_ctl(&c, &hello);
    wait_ctl(&c, MSG_REGION, now_s() + O.timeout);
    uint64_t raddr = c.ctl[0].addr;
    uint32_t rkey = c.ctl[0].rkey;
    post_ctl_recv(&c);
    /* Connected and the region known: wait for the common start, so that
     * flows set up at different speeds still run side by side. */
    if (O.start_at > 0) {
        struct timespec ts = {(time_t)O.start_at,
                              (long)((O.start_at - (time_t)O.start_at) * 1e9)};
        while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) ==
                   EINTR &&
               !stop_sig)
            ;
    }

    uint64_t nmsg = (O.bytes + O.msg - 1) / O.msg, posted = 0, done = 0;
    double w0 = wall_s();
    double t0 = now_s(), last_c = t0, max_gap = 0, max_gap_at = 0;
    double max_gap_after = 0, max_gap_after_at = 0;
    double deadline = t0 + O.timeout;
    double t_act = -1, t_act_done = -1, first_ret = -1, last_ret = -1;
    double rtt_act = 0; /* the QP's srtt when the action was started */
    double next_sample = t0, next_iv = t0 + O.interval_ms / 1e3;
    uint64_t ret_seen = 0, ret_after = 0, iv_done = 0;
    pid_t act_pid = -1;
    struct mroce_wc wc[64];
    while (done < nmsg) {
        while (posted < nmsg && posted - done < O.depth) {
            uint64_t off = posted * O.msg;
            uint32_t len = (uint32_t)(O.bytes - off < O.msg ? O.bytes - off
                                                            : O.msg);
            struct mroce_sge sge = {(uintptr_t)src + off, len,
                                    mroce_mr_lkey(mr)};
            struct mroce_send_wr wr = {.wr_id = 100 + posted,
                                       .sg_list = &sge,
                                       .num_sge = 1,
                                       .opcode = MROCE_WR_WRITE,
                                       .send_flags = MROCE_SEND_SIGNALED,
                                       .remote_addr = raddr + off,
                                       .rkey = rkey},
                                 *bad;
            rc = mroce_post_send(c.qp, &wr, &bad);
            if (rc == MROCE_EFULL)
                break;
            if (rc < 0)
                die("post_send", rc);
            posted++;
        }
        int n = mroce_poll_cq(c.cq, 64, wc);
        if (n < 0)
            die("poll_cq", n);
        double t = now_s();
        for (int i = 0; i < n; i++) {
            if (wc[i].status != MROCE_WC_SUCCESS) {
                fprintf(stderr, "mroce-fabric-flow: WRITE failed: %s\n",
                        mroce_wc_status_str(wc[i].status));
                dump_state(&c, "WRITE failed");
                printf("result role=client label=%s error=%s\n", O.label,
                       mroce_wc_status_str(wc[i].status));
                return 1;
            }
            if (wc[i].wr_id >= 100) {
                done++;
                if (t - last_c > max_gap) {
                    max_gap = t - last_c;
                    max_gap_at = last_c - t0;
                }
                if (t_act >= 0 && last_c >= t_act - 0.002 &&
                    t - last_c > max_gap_after) {
                    max_gap_after = t - last_c;
                    max_gap_after_at = last_c - t0;
                }
                last_c = t;
            }
        }
        /* trigger the action (e.g. mroce-fabric fail l1-s0) */
        if (O.run && t_act < 0 && t - t0 >= O.at_ms / 1e3) {
            char *argv[] = {"/bin/sh", "-c", (char *)O.run, NULL};
            struct mroce_qp_counters k;
            mroce_qp_get_counters(c.qp, &k);
            rtt_act = k.srtt / 1e9;
            t_act = t;
            if (posix_spawn(&act_pid, "/bin/sh", NULL, NULL, argv, environ) !=
                0)
                die("spawn", 0);
        }
        if (act_pid > 0 && waitpid(act_pid, NULL, WNOHANG) == act_pid) {
            t_act_done = t;
            act_pid = -1;
        }
        /* sample retirements every 0.5 ms */
        if (t >= next_sample) {
            struct mroce_qp_counters k;
            mroce_qp_get_counters(c.qp, &k);
            if (k.paths_retired != ret_seen) {
                if (t_act >= 0) {
                    if (first_ret < 0)
                        first_ret = t;
                    last_ret = t;
                    ret_after += k.paths_retired - ret_seen;
                }
                ret_seen = k.paths_retired;
            }
            next_sample = t + 0.0005;
        }
        if (O.interval_ms > 0 && t >= next_iv) {
            struct mroce_qp_counters k;
            mroce_qp_get_counters(c.qp, &k);
            /* The rate it may send at, as mroce-sim's trace has it: the
             * smaller of the receiver's hint and cwnd / srtt. */
            uint64_t hint = k.rate_hint == MROCE_CREDIT_UNLIMITED ? 0
                                                                  : k.rate_hint;
            uint64_t rate = k.srtt ? k.cwnd * 8000u / k.srtt : 0;
            if (hint && (!rate || hint < rate))
                rate = hint;
            printf("interval label=%s t=%.3f tm=%.6f mbps=%.1f cwnd_kib=%.1f "
                   "srtt_us=%.0f hint_mbps=%" PRIu64 " rate_mbps=%" PRIu64 "\n",
                   O.label, t - t0, t,
                   (done - iv_done) * (double)O.msg * 8 /
                       (O.interval_ms / 1e3) / 1e6,
                   k.cwnd / 1024.0, k.srtt / 1e3, hint, rate);
            iv_done = done;
            next_iv += O.interval_ms / 1e3;
        }
        if (t > deadline || stop_sig) {
            fprintf(stderr,
                    "mroce-fabric-flow: %s (%" PRIu64 "/%" PRIu64
                    " messages, %" PRIu64 " posted)\n",
                    stop_sig ? "stopped" : "timed out", done, nmsg, posted);
            dump_state(&c, stop_sig ? "stopped" : "timeout");
            printf("result role=client label=%s error=timeout\n", O.label);
            return 1;
        }
        /* Sleep while nothing can be posted: the window is full, or
         * everything is posted (the tail of the transfer, which would
         * otherwise spin and take the CPU from the other flows and the
         * fabric's forwarding on a small host). */
        if (n == 0 && (posted - done >= O.depth || posted == nmsg))
            mroce_cq_wait(c.cq, 1);
    }
    double t1 = now_s();
    double w1 = w0 + (t1 - t0);
    for (double dl = now_s() + 5; act_pid > 0;) { /* bounded wait */
        if (waitpid(act_pid, NULL, WNOHANG) == act_pid) {
            t_act_done = now_s();
            act_pid = -1;
        } else if (now_s() > dl) {
            fprintf(stderr,
                    "mroce-fabric-flow: action still running, killed\n");
            kill(act_pid, SIGKILL);
            waitpid(act_pid, NULL, 0);
            act_pid = -1;
        } else {
            usleep(1000);
        }
    }
    struct ctrl dm = {.type = MSG_DONE};
    send_ctl(&c, &dm);
    wait_ctl(&c, MSG_VERDICT, now_s() + O.timeout);
    struct ctrl v = c.ctl[0];
    struct mroce_qp_counters k;
    mroce_qp_get_counters(&*c.qp, &k);
    double secs = t1 - t0;
    printf("result role=client label=%s bytes=%" PRIu64 " secs=%.3f"
           " goodput_mbps=%.1f verify=%s max_stall_ms=%.2f stall_at_ms=%.1f"
           " start=%.6f end=%.6f start_t=%.6f",
           O.label, O.bytes, secs, O.bytes * 8 / secs / 1e6,
           !v.verify      ? "off"
           : v.mismatches ? "FAIL"
                          : "ok",
           max_gap * 1e3, max_gap_at * 1e3, w0, w1, t0);
    if (t_act >= 0) {
        double base = t_act; /* conservative: from the spawn of the action */
        /* RTTs of the connection as it was before the failure: the srtt at
         * the end reflects the recovery (and host scheduling) instead. */
        double rtt = rtt_act;
        printf(" srtt_at_action_us=%.1f", rtt_act * 1e6);
        printf(" action_ms=%.1f action_took_ms=%.1f stall_after_ms=%.2f"
               " stall_after_at_ms=%.1f retired_after=%" PRIu64,
               (t_act - t0) * 1e3,
               t_act_done >= 0 ? (t_act_done - t_act) * 1e3 : -1.0,
               max_gap_after * 1e3, max_gap_after_at * 1e3, ret_after);
        if (first_ret >= 0)
            printf(" first_retire_ms=%.2f last_retire_ms=%.2f"
                   " first_retire_rtts=%.1f last_retire_rtts=%.1f",
                   (first_ret - base) * 1e3, (last_ret - base) * 1e3,
                   rtt > 0 ? (first_ret - base) / rtt : -1,
                   rtt > 0 ? (last_ret - base) / rtt : -1);
        /* The link dies while the action runs (it takes tens of ms to run
         * `ip` in two namespaces): from its end is the other bound. */
        if (first_ret >= 0 && t_act_done >= 0)
            printf(" first_retire_after_cmd_ms=%.2f"
                   " first_retire_after_cmd_rtts=%.1f",
                   (first_ret - t_act_done) * 1e3,
                   rtt > 0 ? (first_ret - t_act_done) / rtt : -1);
    }
    print_qp("client", &c);
    printf("\n");
    struct mroce_path_stats ps[256];
    int np = mroce_qp_path_stats(c.qp, ps, 256);
    for (int i = 0; i < np; i++)
        printf("path label=%s slot=%d entropy=%u active=%u weight=%u "
               "tx_pkts=%" PRIu64 " tx_bytes=%" PRIu64 " lost=%" PRIu64
               " ecn=%" PRIu64 " retirements=%u srtt_us=%.1f\n",
               O.label, i, ps[i].entropy, ps[i].active, ps[i].weight,
               ps[i].tx_pkts, ps[i].tx_bytes, ps[i].lost_pkts, ps[i].ecn_marks,
               ps[i].retirements, ps[i].srtt / 1e3);
    fflush(stdout);
    mroce_disconnect(c.qp, 1000);
    mroce_device_close(c.dev);
    return v.mismatches ? 1 : 0;
}

static uint64_t parse_size(const char *s)
{
    char *e;
    double v = strtod(s, &e);
    switch (*e) {
    case 'k':
    case 'K':
        v *= 1024;
        break;
    case 'm':
    case 'M':
        v *= 1024 * 1024;
        break;
    case 'g':
    case 'G':
        v *= 1024.0 * 1024 * 1024;
        break;
    }
    return (uint64_t)v;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: mroce-fabric-flow server -B ADDR [-p PORT] [--conns N] "
        "[--timeout S]\n"
        "       mroce-fabric-flow client SERVER -B ADDR [options]\n"
        "  -B, --bind=ADDR       local address (required)\n"
        "  -p, --port=PORT       server's UDP port (default 4794)\n"
        "      --local-port=P    client's own port (default PORT+1)\n"
        "  -b, --bytes=N         bytes to WRITE (K/M/G; default 32M; <= 1G)\n"
        "  -s, --size=N          message size (default 64K)\n"
        "  -d, --depth=N         WRITEs in flight (default 32)\n"
        "      --paths=N         path entropies (default 64; 1 = RoCE-like "
        "single path)\n"
        "      --sport=P         first UDP source port (default: automatic)\n"
        "      --sports=N        number of source ports (default 256; >= "
        "--paths)\n"
        "      --verify          server checks every byte\n"
        "      --seed=N          data pattern seed\n"
        "      --at=MS --run=CMD run CMD (sh -c) MS after the transfer "
        "started\n"
        "      --interval=MS     client: print goodput, cwnd, srtt, hint and\n"
        "                        allowed rate every MS; server: the bytes\n"
        "                        received so far every MS\n"
        "      --cc-none         fixed window instead of delay+ECN CC\n"
        "      --init-cwnd=N     initial window in bytes (K/M; with --cc-none "
        "the\n"
        "                        fixed window; default 64K)\n"
        "      --ooo-thresh=N    out-of-order loss threshold in PSNs (default "
        "64)\n"
        "      --path-burst=N    packets per path pick, 1..64 (default 8)\n"
        "      --target-qdelay=US  CC and path delay target in us (library "
        "default)\n"
        "      --max-ack-delay=US  ACK delay bound in us (library default)\n"
        "      --start-at=T      after connecting, wait until T "
        "(CLOCK_REALTIME\n"
        "                        seconds, e.g. date +%%s.%%N) before the "
        "transfer\n"
        "      --conns=N         server: N connections on one device, "
        "labels\n"
        "                        NAME0..NAME<N-1> (default 1: NAME)\n"
        "      --label=NAME      name in the result lines\n"
        "      --timeout=S       give up after S seconds (default 20)\n");
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"bind", 1, 0, 'B'},          {"port", 1, 0, 'p'},
        {"local-port", 1, 0, 'L'},    {"bytes", 1, 0, 'b'},
        {"size", 1, 0, 's'},          {"depth", 1, 0, 'd'},
        {"paths", 1, 0, 'P'},         {"sport", 1, 0, 'S'},
        {"sports", 1, 0, 'N'},        {"verify", 0, 0, 'V'},
        {"seed", 1, 0, 'e'},          {"at", 1, 0, 'a'},
        {"run", 1, 0, 'r'},           {"label", 1, 0, 'l'},
        {"conns", 1, 0, 'C'},         {"timeout", 1, 0, 't'},
        {"interval", 1, 0, 'i'},      {"cc-none", 0, 0, 'c'},
        {"init-cwnd", 1, 0, 'W'},     {"ooo-thresh", 1, 0, 'O'},
        {"path-burst", 1, 0, 'U'},    {"start-at", 1, 0, 'T'},
        {"target-qdelay", 1, 0, 'Q'}, {"max-ack-delay", 1, 0, 'M'},
        {"help", 0, 0, 'h'},          {0, 0, 0, 0}};
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "server"))
        O.server = 1;
    else if (strcmp(argv[1], "client")) {
        usage(stderr);
        return 2;
    }
    optind = 2;
    int ch;
    while ((ch = getopt_long(argc, argv, "B:p:b:s:d:h", lo, NULL)) != -1) {
        switch (ch) {
        case 'B':
            O.bind = optarg;
            break;
        case 'p':
            O.port = (uint16_t)atoi(optarg);
            break;
        case 'L':
            O.local_port = (uint16_t)atoi(optarg);
            break;
        case 'b':
            O.bytes = parse_size(optarg);
            break;
        case 's':
            O.msg = (uint32_t)parse_size(optarg);
            break;
        case 'd':
            O.depth = (uint32_t)atoi(optarg);
            break;
        case 'P':
            O.paths = (uint16_t)atoi(optarg);
            break;
        case 'S':
            O.sport = (uint16_t)atoi(optarg);
            break;
        case 'N':
            O.sports = (uint16_t)atoi(optarg);
            break;
        case 'V':
            O.verify = 1;
            break;
        case 'e':
            O.seed = strtoull(optarg, NULL, 0);
            break;
        case 'a':
            O.at_ms = atol(optarg);
            break;
        case 'r':
            O.run = optarg;
            break;
        case 'C':
            O.conns = atoi(optarg);
            break;
        case 'l':
            O.label = optarg;
            break;
        case 't':
            O.timeout = atof(optarg);
            break;
        case 'i':
            O.interval_ms = atoi(optarg);
            break;
        case 'c':
            O.cc_none = 1;
            break;
        case 'W':
            O.init_cwnd = (uint32_t)parse_size(optarg);
            break;
        case 'O':
            O.ooo_thresh = (uint32_t)atoi(optarg);
            break;
        case 'U':
            O.path_burst = atoi(optarg);
            break;
        case 'T':
            O.start_at = atof(optarg);
            break;
        case 'Q':
            O.target_qdelay_us = atof(optarg);
            break;
        case 'M':
            O.max_ack_delay_us = atof(optarg);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!O.server) {
        if (optind >= argc) {
            usage(stderr);
            return 2;
        }
        O.peer = argv[optind];
    }
    if (!O.bind || O.bytes == 0 || O.bytes > (1ull << 30) || O.msg == 0 ||
        O.paths == 0 || O.sports < O.paths || O.depth == 0 || O.conns < 1 ||
        O.conns > 256 || O.path_burst < 0 || O.path_burst > 64) {
        usage(stderr);
        return 2;
    }
    if (O.run && O.at_ms < 0)
        O.at_ms = 0;
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, on_stop); /* e.g. timeout(1): dump the state first */
    signal(SIGINT, on_stop);
    alarm((unsigned)O.timeout + 90); /* everything bounded in time */
    return O.server ? run_server() : run_client();
}
