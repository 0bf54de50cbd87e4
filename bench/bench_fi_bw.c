/*
 * bench_fi_bw.c - libfabric's reference numbers on loopback, for the C API
 * comparison (bench/compare_loopback.sh, issue 3): streaming bandwidth and
 * ping-pong latency of an FI_EP_RDM endpoint of a named provider (e.g.
 * "tcp;ofi_rxm" or "udp;ofi_rxd"), the way fabtests measures them.
 *
 *   server:  bench_fi_bw -p PROV [-P port]
 *   client:  bench_fi_bw -p PROV [-P port] [-m bw|lat] [-o send|write]
 *                        [-s size] [-w window] [-D secs] [-n iters] 127.0.0.1
 *
 * bw: the client keeps -w (64) messages of -s bytes in flight, fi_send
 * (against receives the server keeps posted) or fi_write (into the server's
 * registered region, like mroce-perf write_bw), for -D seconds or -n
 * messages, and reports Gbit/s from its first post to its last completion.
 * lat: a fi_send/fi_recv ping-pong of -s bytes (64) after 1000 warm-up
 * rounds; half the round trip, median and average (like fi_pingpong's
 * usec/xfer, which is the average).
 *
 * Why not fi_pingpong: Debian's fi_pingpong has no streaming test, and its
 * endpoints use the first interface's address (not 127.0.0.1) whatever -d
 * says.  Here both endpoints are bound to 127.0.0.1 explicitly (FI_SOURCE on
 * the server, src_addr on the client), so traffic stays on loopback.
 *
 * Set-up is in band: the client sends HELLO (its endpoint name and the run's
 * shape) to the server's well-known address, the server answers WELCOME
 * (its region's address and key), FIN ends the run and the server answers
 * with what it received.  Every wait is bounded in time.  The last line is
 * machine-readable: "RESULT key=value ...".  A measurement, never a test.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define MAGIC 0x46494257u /* "FIBW" */
#define CTRL_BYTES 4096
#define MAX_WINDOW 1024

enum { C_HELLO = 1, C_WELCOME, C_FIN, C_RESULT };
enum { M_BW, M_LAT };
enum { O_SEND, O_WRITE };

struct ctrl {
    uint32_t magic, type;
    uint32_t mode, op, size, window;
    uint64_t raddr, rkey; /* WELCOME: the server's data region */
    uint64_t bytes, msgs; /* RESULT: what the server received */
    double secs;          /* RESULT: first to last data completion */
    uint32_t namelen;
    uint8_t name[256]; /* HELLO: the client's endpoint name */
};

struct opts {
    const char *prov, *server;
    unsigned port, size, window, mode, op;
    double secs, timeout;
    unsigned long iters;
};

static struct {
    struct fi_info *info;
    struct fid_fabric *fab;
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_cq *cq;
    struct fid_ep *ep;
    struct fid_mr *cmr, *dmr;
    uint8_t *cbuf, *dbuf; /* control: tx half, rx half; data */
    size_t dlen;
    void *cdesc, *ddesc;
    fi_addr_t peer;
    /* one context per operation that can be outstanding */
    struct fi_context ctx_ctx[2]; /* 0 ctrl tx, 1 ctrl rx */
    struct fi_context dtx[MAX_WINDOW], drx[MAX_WINDOW];
} F;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define CHECK(call)                                         \
    do {                                                    \
        int rc_ = (int)(call);                              \
        if (rc_) {                                          \
            fprintf(stderr, "bench_fi_bw: %s: %s\n", #call, \
                    fi_strerror(-rc_));                     \
            exit(1);                                        \
        }                                                   \
    } while (0)

static void fatal(const char *what)
{
    fprintf(stderr, "bench_fi_bw: %s\n", what);
    exit(1);
}

/* --- completions --- */

struct comp {
    void *ctx;
    size_t len;
};

/* Reads what completed (up to max); exits on an error completion. */
static int poll_cq(struct comp *out, int max)
{
    struct fi_cq_msg_entry e[32];
    if (max > 32)
        max = 32;
    ssize_t n = fi_cq_read(F.cq, e, (size_t)max);
    if (n == -FI_EAGAIN)
        return 0;
    if (n == -FI_EAVAIL) {
        struct fi_cq_err_entry err;
        memset(&err, 0, sizeof(err));
        fi_cq_readerr(F.cq, &err, 0);
        fprintf(stderr, "bench_fi_bw: error completion: %s (%s)\n",
                fi_strerror(err.err),
                fi_cq_strerror(F.cq, err.prov_errno, err.err_data, NULL, 0));
        exit(1);
    }
    if (n < 0) {
        fprintf(stderr, "bench_fi_bw: fi_cq_read: %s\n", fi_strerror((int)-n));
        exit(1);
    }
    for (ssize_t i = 0; i < n; i++) {
        out[i].ctx = e[i].op_context;
        out[i].len = e[i].len;
    }
    return (int)n;
}

/* Waits for the completion of ctx (others are dropped: call only when no
 * data operation is outstanding). */
static size_t wait_ctx(void *ctx, double deadline, const char *what)
{
    for (;;) {
        struct comp c[32];
        int n = poll_cq(c, 32);
        for (int i = 0; i < n; i++)
            if (c[i].ctx == ctx)
                return c[i].len;
        if (now_s() > deadline) {
            fprintf(stderr, "bench_fi_bw: timed out waiting for %s\n", what);
            exit(1);
        }
    }
}

/* fi_send / fi_recv / fi_write, retried while the provider says EAGAIN
 * (progressing the CQ meanwhile would lose completions; the providers here
 * progress inside the post call itself). */
#define POST(call, deadline)                                \
    do {                                                    \
        ssize_t r_;                                         \
        while ((r_ = (call)) == -FI_EAGAIN) {               \
            if (now_s() > (deadline))                       \
                fatal("post: timed out on EAGAIN");         \
            (void)fi_cq_read(F.cq, NULL, 0);                \
        }                                                   \
        if (r_) {                                           \
            fprintf(stderr, "bench_fi_bw: %s: %s\n", #call, \
                    fi_strerror((int)-r_));                 \
            exit(1);                                        \
        }                                                   \
    } while (0)

/* --- set-up --- */

static void open_fabric(const struct opts *o)
{
    struct fi_info *hints = fi_allocinfo();
    if (!hints)
        fatal("fi_allocinfo");
    hints->ep_attr->type = FI_EP_RDM;
    hints->caps = FI_MSG | FI_RMA;
    hints->mode = FI_CONTEXT;
    hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR |
                                  FI_MR_ALLOCATED | FI_MR_PROV_KEY |
                                  FI_MR_ENDPOINT;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->addr_format = FI_SOCKADDR_IN;
    hints->fabric_attr->prov_name = strdup(o->prov);
    char port[16];
    snprintf(port, sizeof(port), "%u", o->port);
    int rc;
    if (!o->server) {
        rc = fi_getinfo(FI_VERSION(1, 9), "127.0.0.1", port, FI_SOURCE, hints,
                        &F.info);
    } else {
        /* our own address: 127.0.0.1, any port */
        struct sockaddr_in *src = calloc(1, sizeof(*src));
        src->sin_family = AF_INET;
        src->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        hints->src_addr = src;
        hints->src_addrlen = sizeof(*src);
        rc = fi_getinfo(FI_VERSION(1, 9), o->server, port, 0, hints, &F.info);
    }
    if (rc) {
        fprintf(stderr, "bench_fi_bw: fi_getinfo(%s): %s\n", o->prov,
                fi_strerror(-rc));
        exit(1);
    }
    fi_freeinfo(hints);
    CHECK(fi_fabric(F.info->fabric_attr, &F.fab, NULL));
    CHECK(fi_domain(F.fab, F.info, &F.dom, NULL));
    struct fi_cq_attr cqa;
    memset(&cqa, 0, sizeof(cqa));
    cqa.format = FI_CQ_FORMAT_MSG;
    cqa.wait_obj = FI_WAIT_NONE;
    cqa.size = 2 * MAX_WINDOW + 16;
    CHECK(fi_cq_open(F.dom, &cqa, &F.cq, NULL));
    struct fi_av_attr ava;
    memset(&ava, 0, sizeof(ava));
    ava.type = FI_AV_TABLE;
    ava.count = 4;
    CHECK(fi_av_open(F.dom, &ava, &F.av, NULL));
    CHECK(fi_endpoint(F.dom, F.info, &F.ep, NULL));
    CHECK(fi_ep_bind(F.ep, &F.av->fid, 0));
    CHECK(fi_ep_bind(F.ep, &F.cq->fid, FI_TRANSMIT | FI_RECV));
    CHECK(fi_enable(F.ep));
}

static struct fid_mr *reg(void *buf, size_t len, uint64_t key)
{
    struct fid_mr *mr;
    CHECK(fi_mr_reg(F.dom, buf, len,
                    FI_SEND | FI_RECV | FI_WRITE | FI_REMOTE_WRITE, 0, key, 0,
                    &mr, NULL));
    if (F.info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
        CHECK(fi_mr_bind(mr, &F.ep->fid, 0));
        CHECK(fi_mr_enable(mr));
    }
    return mr;
}

static uint8_t *alloc_buf(size_t len)
{
    uint8_t *b = NULL;
    if (posix_memalign((void **)&b, 4096, len))
        fatal("posix_memalign");
    for (size_t i = 0; i < len; i++)
        b[i] = (uint8_t)(i * 131 + 7);
    return b;
}

static void setup_data(size_t len)
{
    F.dlen = len;
    F.dbuf = alloc_buf(len);
    F.dmr = reg(F.dbuf, len, 2);
    F.ddesc = fi_mr_desc(F.dmr);
}

static struct ctrl *ctx_tx(void)
{
    return (struct ctrl *)F.cbuf;
}
static struct ctrl *ctx_rx(void)
{
    return (struct ctrl *)(F.cbuf + CTRL_BYTES);
}

static void post_ctrl_recv(double deadline)
{
    POST(fi_recv(F.ep, ctx_rx(), CTRL_BYTES, F.cdesc, FI_ADDR_UNSPEC,
                 &F.ctx_ctx[1]),
         deadline);
}

static void send_ctrl(double deadline)
{
    POST(fi_send(F.ep, ctx_tx(), sizeof(struct ctrl), F.cdesc, F.peer,
                 &F.ctx_ctx[0]),
         deadline);
}

static int is_ctrl(const void *p, size_t len, uint32_t type)
{
    const struct ctrl *c = p;
    return len == sizeof(struct ctrl) && c->magic == MAGIC && c->type == type;
}

/* --- server --- */

static int run_server(struct opts *o)
{
    double deadline = now_s() + o->timeout;
    post_ctrl_recv(deadline);
    size_t len = wait_ctx(&F.ctx_ctx[1], deadline, "a client");
    struct ctrl h = *ctx_rx();
    if (!is_ctrl(&h, len, C_HELLO) || h.window < 1 || h.window > MAX_WINDOW ||
        h.size < 1 || h.namelen > sizeof(h.name))
        fatal("bad HELLO");
    if (fi_av_insert(F.av, h.name, 1, &F.peer, 0, NULL) != 1)
        fatal("fi_av_insert(client)");
    /* receives have room for a FIN too; in lat mode, slot 1 is the pong */
    size_t stride = h.size > sizeof(struct ctrl) ? h.size : sizeof(struct ctrl);
    unsigned slots = h.mode == M_LAT ? 1 : h.window;
    setup_data((size_t)(h.mode == M_LAT ? 2 : slots) * stride);
    /* the run may take as long as the client says, plus slack */
    deadline = now_s() + 3600;
    if (h.mode == M_LAT || h.op == O_SEND)
        for (unsigned i = 0; i < slots; i++)
            POST(fi_recv(F.ep, F.dbuf + (size_t)i * stride, stride, F.ddesc,
                         FI_ADDR_UNSPEC, &F.drx[i]),
                 deadline);
    else
        post_ctrl_recv(deadline);
    struct ctrl *w = ctx_tx();
    memset(w, 0, sizeof(*w));
    w->magic = MAGIC;
    w->type = C_WELCOME;
    w->raddr = (F.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
                   ? (uint64_t)(uintptr_t)F.dbuf
                   : 0;
    w->rkey = fi_mr_key(F.dmr);
    send_ctrl(deadline);
    /* serve until FIN; silence for o->timeout seconds ends us too */
    unsigned long long bytes = 0, msgs = 0;
    double first = 0, last = 0, heard = now_s();
    int fin = 0, tx_out = 1; /* WELCOME */
    unsigned long pongs = 0;
    while (!fin) {
        struct comp c[32];
        int n = poll_cq(c, 32);
        double t = now_s();
        if (!n && t - heard > o->timeout)
            fatal("client went silent");
        if (n)
            heard = t;
        for (int i = 0; i < n; i++) {
            if (c[i].ctx == &F.ctx_ctx[0] ||
                (c[i].ctx >= (void *)F.dtx &&
                 c[i].ctx < (void *)(F.dtx + MAX_WINDOW))) {
                tx_out--;
                continue;
            }
            const uint8_t *p;
            unsigned slot = 0;
            if (c[i].ctx == &F.ctx_ctx[1]) {
                p = (const uint8_t *)ctx_rx();
            } else {
                slot = (unsigned)((struct fi_context *)c[i].ctx - F.drx);
                p = F.dbuf + (size_t)slot * stride;
            }
            if (is_ctrl(p, c[i].len, C_FIN)) {
                /* Not break: send completions later in this batch (the
                 * last pong's, whose ACK the client may send behind its
                 * FIN) must still be counted, or tx_out never drains. */
                fin = 1;
                continue;
            }
            if (!first)
                first = t;
            last = t;
            bytes += c[i].len;
            msgs++;
            if (h.mode == M_LAT) {
                /* pong: re-arm the receive first, then answer */
                POST(fi_recv(F.ep, F.dbuf, stride, F.ddesc, FI_ADDR_UNSPEC,
                             &F.drx[0]),
                     deadline);
                if (tx_out >= MAX_WINDOW)
                    fatal("pong sends do not complete");
                POST(fi_send(F.ep, F.dbuf + stride, h.size, F.ddesc, F.peer,
                             &F.dtx[pongs++ % MAX_WINDOW]),
                     deadline);
                tx_out++;
            } else {
                POST(fi_recv(F.ep, F.dbuf + (size_t)slot * stride, stride,
                             F.ddesc, FI_ADDR_UNSPEC, &F.drx[slot]),
                     deadline);
            }
        }
    }
    struct ctrl *r = ctx_tx();
    while (tx_out > 0) {
        struct comp d[32];
        tx_out -= poll_cq(d, 32);
        if (now_s() - heard > o->timeout)
            break;
    }
    memset(r, 0, sizeof(*r));
    r->magic = MAGIC;
    r->type = C_RESULT;
    r->bytes = bytes;
    r->msgs = msgs;
    r->secs = last - first;
    send_ctrl(now_s() + o->timeout);
    wait_ctx(&F.ctx_ctx[0], now_s() + o->timeout, "RESULT sent");
    return 0;
}

/* --- client --- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void hello(const struct opts *o, double deadline)
{
    if (fi_av_insert(F.av, F.info->dest_addr, 1, &F.peer, 0, NULL) != 1)
        fatal("fi_av_insert(server)");
    post_ctrl_recv(deadline);
    struct ctrl *h = ctx_tx();
    memset(h, 0, sizeof(*h));
    h->magic = MAGIC;
    h->type = C_HELLO;
    h->mode = o->mode;
    h->op = o->op;
    h->size = o->size;
    h->window = o->window;
    size_t nl = sizeof(h->name);
    CHECK(fi_getname(&F.ep->fid, h->name, &nl));
    h->namelen = (uint32_t)nl;
    send_ctrl(deadline);
    /* the send may complete after the answer arrives */
    int got_tx = 0, got_rx = 0;
    while (!got_tx || !got_rx) {
        struct comp c[32];
        int n = poll_cq(c, 32);
        for (int i = 0; i < n; i++) {
            if (c[i].ctx == &F.ctx_ctx[0])
                got_tx = 1;
            else if (c[i].ctx == &F.ctx_ctx[1]) {
                if (!is_ctrl(ctx_rx(), c[i].len, C_WELCOME))
                    fatal("bad WELCOME");
                got_rx = 1;
            }
        }
        if (now_s() > deadline)
            fatal("no WELCOME from the server");
    }
}

static void fin(const struct opts *o, struct ctrl *res)
{
    double deadline = now_s() + o->timeout;
    post_ctrl_recv(deadline);
    struct ctrl *f = ctx_tx();
    memset(f, 0, sizeof(*f));
    f->magic = MAGIC;
    f->type = C_FIN;
    send_ctrl(deadline);
    int got_tx = 0, got_rx = 0;
    while (!got_tx || !got_rx) {
        struct comp c[32];
        int n = poll_cq(c, 32);
        for (int i = 0; i < n; i++) {
            if (c[i].ctx == &F.ctx_ctx[0])
                got_tx = 1;
            else if (c[i].ctx == &F.ctx_ctx[1] &&
                     is_ctrl(ctx_rx(), c[i].len, C_RESULT)) {
                *res = *ctx_rx();
                got_rx = 1;
            }
        }
        if (now_s() > deadline)
            fatal("no RESULT from the server");
    }
}

static int run_bw(const struct opts *o)
{
    double deadline = now_s() + o->timeout;
    setup_data((size_t)o->window * o->size);
    hello(o, deadline);
    uint64_t raddr = ctx_rx()->raddr, rkey = ctx_rx()->rkey;
    unsigned long long posted = 0, done = 0;
    unsigned outstanding = 0;
    unsigned free_slots[MAX_WINDOW];
    for (unsigned i = 0; i < o->window; i++)
        free_slots[i] = o->window - 1 - i;
    unsigned nfree = o->window;
    double t0 = now_s(), tend = t0 + o->secs, tlast = t0;
    deadline = tend + o->timeout;
    int stop = 0;
    while (!stop || outstanding) {
        while (!stop && nfree) {
            unsigned s = free_slots[nfree - 1];
            uint8_t *src = F.dbuf + (size_t)s * o->size;
            ssize_t r;
            if (o->op == O_WRITE)
                r = fi_write(F.ep, src, o->size, F.ddesc, F.peer,
                             raddr + (uint64_t)s * o->size, rkey, &F.dtx[s]);
            else
                r = fi_send(F.ep, src, o->size, F.ddesc, F.peer, &F.dtx[s]);
            if (r == -FI_EAGAIN)
                break;
            if (r) {
                fprintf(stderr, "bench_fi_bw: post: %s\n",
                        fi_strerror((int)-r));
                exit(1);
            }
            nfree--;
            outstanding++;
            posted++;
            if (o->iters && posted >= o->iters)
                stop = 1;
        }
        struct comp c[32];
        int n = poll_cq(c, 32);
        double t = now_s();
        for (int i = 0; i < n; i++) {
            unsigned s = (unsigned)((struct fi_context *)c[i].ctx - F.dtx);
            if (s >= o->window)
                fatal("unexpected completion");
            free_slots[nfree++] = s;
            outstanding--;
            done++;
            tlast = t;
        }
        if (!o->iters && t > tend)
            stop = 1;
        if (t > deadline)
            fatal("bandwidth run did not drain in time");
    }
    double el = tlast - t0;
    double gbps = el > 0 ? (double)done * o->size * 8 / el / 1e9 : 0;
    struct ctrl res;
    fin(o, &res);
    double sgbps = res.secs > 0 ? (double)res.bytes * 8 / res.secs / 1e9 : 0;
    printf("fi %s %s: %u B x %llu in %.3f s, window %u: %.3f Gbit/s "
           "(%.3f Mmsg/s)",
           o->prov, o->op == O_WRITE ? "write" : "send", o->size, done, el,
           o->window, gbps, el > 0 ? done / el / 1e6 : 0);
    if (o->op == O_SEND)
        printf(", server got %llu B: %.3f Gbit/s",
               (unsigned long long)res.bytes, sgbps);
    printf("\nRESULT mode=bw prov=%s op=%s bytes=%u msgs=%llu secs=%.3f "
           "gbps=%.3f\n",
           o->prov, o->op == O_WRITE ? "write" : "send", o->size, done, el,
           gbps);
    return 0;
}

static int run_lat(const struct opts *o)
{
    double deadline = now_s() + o->timeout;
    setup_data(2 * (size_t)o->size);
    hello(o, deadline);
    unsigned long warm = 1000, cap = o->iters ? o->iters : 2000000;
    double *s = malloc(cap * sizeof(double));
    if (!s)
        fatal("malloc");
    unsigned long n = 0;
    double tend = now_s() + o->secs + 60;
    deadline = tend + o->timeout;
    for (unsigned long i = 0; i < warm + cap; i++) {
        double t = now_s();
        if (i == warm)
            tend = t + o->secs;
        if (!o->iters && t > tend)
            break;
        if (t > deadline)
            fatal("latency run took too long");
        POST(fi_recv(F.ep, F.dbuf + o->size, o->size, F.ddesc, FI_ADDR_UNSPEC,
                     &F.drx[0]),
             deadline);
        POST(fi_send(F.ep, F.dbuf, o->size, F.ddesc, F.peer, &F.dtx[0]),
             deadline);
        int got_tx = 0, got_rx = 0;
        while (!got_tx || !got_rx) {
            struct comp c[32];
            int m = poll_cq(c, 32);
            for (int k = 0; k < m; k++) {
                if (c[k].ctx == &F.dtx[0])
                    got_tx = 1;
                else if (c[k].ctx == &F.drx[0])
                    got_rx = 1;
            }
            if (!m && now_s() > deadline)
                fatal("pong lost");
        }
        if (i >= warm)
            s[n++] = (now_s() - t) * 1e6 / 2;
    }
    struct ctrl res;
    fin(o, &res);
    double sum = 0;
    for (unsigned long i = 0; i < n; i++)
        sum += s[i];
    qsort(s, n, sizeof(double), cmp_d);
    double med = n ? s[n / 2] : 0, avg = n ? sum / n : 0;
    double p99 = n ? s[(size_t)(n * 0.99)] : 0;
    printf("fi %s ping-pong: %u B, %lu iterations, half RTT: min %.2f "
           "median %.2f avg %.2f p99 %.2f usec\n",
           o->prov, o->size, n, n ? s[0] : 0, med, avg, p99);
    /* The tail: rounds slower than 3x the median, and how much of the
     * average they make (fi_pingpong reports the average). */
    unsigned long slow = 0, over100 = 0;
    double slow_extra = 0;
    for (unsigned long i = 0; i < n; i++)
        if (s[i] > 3 * med) {
            slow++;
            slow_extra += s[i] - med;
            over100 += s[i] > 100;
        }
    printf("RESULT mode=lat prov=%s bytes=%u iters=%lu median_us=%.3f "
           "avg_us=%.3f p99_us=%.3f min_us=%.3f p90_us=%.3f "
           "slow_pct=%.2f slow_avg_us=%.3f max_us=%.1f over100us=%lu\n",
           o->prov, o->size, n, med, avg, p99, n ? s[0] : 0,
           n ? s[(size_t)(n * 0.9)] : 0, n ? 100.0 * slow / n : 0,
           n ? slow_extra / n : 0, n ? s[n - 1] : 0, over100);
    free(s);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_fi_bw -p PROVIDER [-P port] [-m bw|lat] "
            "[-o send|write] [-s size] [-w window] [-D secs] [-n iters] "
            "[-T timeout] [127.0.0.1]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct opts o = {.prov = NULL,
                     .port = 19760,
                     .size = 0,
                     .window = 64,
                     .mode = M_BW,
                     .op = O_SEND,
                     .secs = 3,
                     .timeout = 30};
    int opt;
    while ((opt = getopt(argc, argv, "p:P:m:o:s:w:D:n:T:h")) != -1) {
        switch (opt) {
        case 'p':
            o.prov = optarg;
            break;
        case 'P':
            o.port = (unsigned)atoi(optarg);
            break;
        case 'm':
            if (!strcmp(optarg, "bw"))
                o.mode = M_BW;
            else if (!strcmp(optarg, "lat"))
                o.mode = M_LAT;
            else
                usage();
            break;
        case 'o':
            if (!strcmp(optarg, "send"))
                o.op = O_SEND;
            else if (!strcmp(optarg, "write"))
                o.op = O_WRITE;
            else
                usage();
            break;
        case 's':
            o.size = (unsigned)strtoul(optarg, NULL, 0);
            break;
        case 'w':
            o.window = (unsigned)atoi(optarg);
            break;
        case 'D':
            o.secs = atof(optarg);
            break;
        case 'n':
            o.iters = strtoul(optarg, NULL, 0);
            break;
        case 'T':
            o.timeout = atof(optarg);
            break;
        default:
            usage();
        }
    }
    if (optind < argc)
        o.server = argv[optind];
    if (!o.size)
        o.size = o.mode == M_LAT ? 64 : 65536;
    if (!o.prov || o.window < 1 || o.window > MAX_WINDOW || o.secs <= 0 ||
        o.secs > 120 || o.timeout <= 0 || o.timeout > 600 || o.size < 1 ||
        o.size > (64u << 20) || o.port < 1 || o.port > 65535)
        usage();
    if (o.server && strcmp(o.server, "127.0.0.1"))
        fatal("loopback only: the server must be 127.0.0.1");
    setvbuf(stdout, NULL, _IOLBF, 0);
    open_fabric(&o);
    F.cbuf = alloc_buf(2 * CTRL_BYTES);
    F.cmr = reg(F.cbuf, 2 * CTRL_BYTES, 1);
    F.cdesc = fi_mr_desc(F.cmr);
    int rc = !o.server ? run_server(&o)
                       : (o.mode == M_LAT ? run_lat(&o) : run_bw(&o));
    fi_close(&F.ep->fid);
    fi_close(&F.cmr->fid);
    if (F.dmr)
        fi_close(&F.dmr->fid);
    fi_close(&F.av->fid);
    fi_close(&F.cq->fid);
    fi_close(&F.dom->fid);
    fi_close(&F.fab->fid);
    fi_freeinfo(F.info);
    return rc;
}
