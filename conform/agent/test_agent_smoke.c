/*
 * test_agent_smoke.c - conform_agent_smoke: the conformance agent tested as
 * the tester uses it, but with libmroce as the peer.
 *
 * Starts mroce-conform-agent on free ports (it reports them on its READY
 * line), connects a libmroce QP in this process to an agent QP that
 * listens (QP_LISTEN), and drives SEND/RECV both ways, WRITE, READ and both
 * atomics through the control protocol, checking MR_READ contents, this
 * process's memory and POLL results.  Then malformed and refused commands:
 * each must get exactly one `ERR <code>` line and leave the agent serving.
 * Finally QUIT, and the agent (run with --once) must exit 0, which under
 * ASan also means it freed everything.  The same over IPv6 when ::1 works.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce.h>

#include "testutil.h"

#ifndef MROCE_AGENT_BIN
#define MROCE_AGENT_BIN "mroce-conform-agent"
#endif

struct agent_proc {
    pid_t pid;
    int ctl; /* control connection */
    unsigned ctl_port, udp_port;
    char rbuf[70000];    /* reply being read */
    char pending[70000]; /* bytes read past the last reply */
    size_t npending;
};

static struct agent_proc ag;

/* Starts the agent on HOST with ports 0 and reads its READY line. */
static int agent_start(const char *host, int v6)
{
    int pfd[2];
    char ctl[80], udp[80];
    snprintf(ctl, sizeof(ctl), v6 ? "[%s]:0" : "%s:0", host);
    snprintf(udp, sizeof(udp), v6 ? "[%s]:0" : "%s:0", host);
    if (pipe(pfd) < 0)
        return -1;
    ag.pid = fork();
    if (ag.pid < 0)
        return -1;
    if (ag.pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        execl(MROCE_AGENT_BIN, MROCE_AGENT_BIN, "--control", ctl, "--udp", udp,
              "--once", (char *)NULL);
        perror("exec " MROCE_AGENT_BIN);
        _exit(127);
    }
    close(pfd[1]);
    char line[256];
    size_t n = 0;
    while (n < sizeof(line) - 1) {
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        if (poll(&p, 1, 10000) <= 0)
            break;
        ssize_t k = read(pfd[0], line + n, 1);
        if (k <= 0 || line[n] == '\n')
            break;
        n++;
    }
    line[n] = '\0';
    close(pfd[0]);
    const char *c = strstr(line, "control="), *u = strstr(line, " udp=");
    if (strncmp(line, "READY ", 6) || !c || !u)
        return -1;
    ag.ctl_port = (unsigned)atoi(strrchr(u, ':') + 1);
    char *colon = strchr(c, ' ');
    *colon = '\0';
    ag.ctl_port = (unsigned)atoi(strrchr(c, ':') + 1);
    ag.udp_port = (unsigned)atoi(strrchr(u + 1, ':') + 1);

    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t sl;
    if (v6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)ag.ctl_port);
        inet_pton(AF_INET6, host, &a6->sin6_addr);
        sl = sizeof(*a6);
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)ag.ctl_port);
        inet_pton(AF_INET, host, &a4->sin_addr);
        sl = sizeof(*a4);
    }
    ag.ctl = socket(ss.ss_family, SOCK_STREAM, 0);
    ag.npending = 0;
    return connect(ag.ctl, (struct sockaddr *)&ss, sl);
}

static int agent_wait_exit(void)
{
    int st = -1;
    for (int i = 0; i < 1000; i++) {
        pid_t p = waitpid(ag.pid, &st, WNOHANG);
        if (p == ag.pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        usleep(10000);
    }
    kill(ag.pid, SIGKILL);
    waitpid(ag.pid, &st, 0);
    return -1;
}

/* Sends raw bytes and reads one reply line (without LF). */
static const char *raw(const char *bytes, size_t len)
{
    if (send(ag.ctl, bytes, len, MSG_NOSIGNAL) != (ssize_t)len)
        return "SEND FAILED";
    size_t n = 0;
    while (1) {
        char *lf = memchr(ag.pending, '\n', ag.npending);
        if (lf) {
            size_t k = (size_t)(lf - ag.pending);
            if (k >= sizeof(ag.rbuf))
                k = sizeof(ag.rbuf) - 1;
            memcpy(ag.rbuf, ag.pending, k);
            ag.rbuf[k] = '\0';
            size_t used = (size_t)(lf - ag.pending) + 1;
            memmove(ag.pending, ag.pending + used, ag.npending - used);
            ag.npending -= used;
            return ag.rbuf;
        }
        struct pollfd p = {.fd = ag.ctl, .events = POLLIN};
        if (poll(&p, 1, 15000) <= 0)
            return "TIMEOUT";
        ssize_t k = recv(ag.ctl, ag.pending + ag.npending,
                         sizeof(ag.pending) - ag.npending, 0);
        if (k <= 0)
            return "EOF";
        ag.npending += (size_t)k;
        (void)n;
    }
}

static TESTUTIL_PRINTF(1, 2) const char *cmd(const char *fmt, ...)
{
    static char line[70000];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    line[n] = '\n';
    return raw(line, (size_t)n + 1);
}

/* Value of key in the last reply (copied), or "" */
static const char *kv(const char *reply, const char *key)
{
    static char val[4][70000];
    static int slot;
    char *out = val[slot++ & 3];
    size_t kl = strlen(key);
    out[0] = '\0';
    for (const char *p = reply; (p = strstr(p, key)); p += kl) {
        if ((p == reply || p[-1] == ' ') && p[kl] == '=') {
            size_t n = strcspn(p + kl + 1, " ");
            memcpy(out, p + kl + 1, n);
            out[n] = '\0';
            break;
        }
    }
    return out;
}

static int is_ok(const char *r)
{
    return strncmp(r, "OK", 2) == 0 && (!r[2] || r[2] == ' ');
}
static int is_err(const char *r, const char *code)
{
    char pre[32];
    snprintf(pre, sizeof(pre), "ERR %s", code);
    return strncmp(r, pre, strlen(pre)) == 0;
}

/* Each evaluates its command once. */
#define OK(expr)                                   \
    do {                                           \
        const char *r_ = (expr);                   \
        CHECK_MSG(is_ok(r_), "reply: %.200s", r_); \
    } while (0)
#define ERR(expr, code)                                                   \
    do {                                                                  \
        const char *r_ = (expr);                                          \
        CHECK_MSG(is_err(r_, code), "reply: %.200s (want %s)", r_, code); \
    } while (0)

static uint64_t num(const char *s)
{
    return strtoull(s, NULL, 0);
}

/* --- the test process's own libmroce side --- */

struct local {
    mroce_device *dev;
    mroce_pd *pd;
    mroce_cq *scq, *rcq;
    mroce_qp *qp;
    uint8_t *buf;
    mroce_mr *mr;
};

/* A free UDP port on host (bind port 0; the caller retries on a race). */
static uint16_t probe_port(const char *host, int v6)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    socklen_t sl = v6 ? sizeof(struct sockaddr_in6)
                      : sizeof(struct sockaddr_in);
    if (v6) {
        ((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
        inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&ss)->sin6_addr);
    } else {
        ((struct sockaddr_in *)&ss)->sin_family = AF_INET;
        inet_pton(AF_INET, host, &((struct sockaddr_in *)&ss)->sin_addr);
    }
    int fd = socket(ss.ss_family, SOCK_DGRAM, 0);
    uint16_t port = 0;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&ss, sl) == 0 &&
        getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        port = ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                        : ((struct sockaddr_in *)&ss)->sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static int local_open(struct local *l, const char *host, int v6)
{
    int rc = -1;
    for (int tries = 0; tries < 20 && rc < 0; tries++) {
        struct mroce_device_attr da;
        mroce_device_attr_default(&da);
        da.local_addr = host;
        da.port = probe_port(host, v6);
        da.progress = MROCE_PROGRESS_THREAD;
        rc = mroce_device_open(&da, &l->dev);
    }
    if (rc < 0)
        return rc;
    l->buf = aligned_alloc(4096, 65536);
    memset(l->buf, 0, 65536);
    struct mroce_qp_init_attr ia;
    mroce_qp_init_attr_default(&ia);
    if ((rc = mroce_pd_alloc(l->dev, &l->pd)) < 0 ||
        (rc = mroce_create_cq(l->dev, 256, &l->scq)) < 0 ||
        (rc = mroce_create_cq(l->dev, 256, &l->rcq)) < 0 ||
        (rc = mroce_reg_mr(l->pd, l->buf, 65536,
                           MROCE_ACCESS_LOCAL_WRITE |
                               MROCE_ACCESS_REMOTE_WRITE |
                               MROCE_ACCESS_REMOTE_READ |
                               MROCE_ACCESS_REMOTE_ATOMIC,
                           &l->mr)) < 0)
        return rc;
    ia.send_cq = l->scq;
    ia.recv_cq = l->rcq;
    return mroce_create_qp(l->pd, &ia, &l->qp);
}

static void local_close(struct local *l)
{
    if (l->dev)
        mroce_device_close(l->dev);
    free(l->buf);
}

static int local_wait(mroce_cq *cq, struct mroce_wc *wc)
{
    for (int i = 0; i < 500; i++) {
        int n = mroce_poll_cq(cq, 1, wc);
        if (n)
            return n;
        mroce_cq_wait(cq, 10);
    }
    return 0;
}

static void hexstr(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

/* The data path: an agent QP listening, our QP connecting, every op. */
static void test_datapath(const char *host, int v6, int full)
{
    struct local l;
    memset(&l, 0, sizeof(l));
    if (!CHECK(local_open(&l, host, v6) == 0)) {
        local_close(&l);
        return;
    }
    const char *r = cmd("HELLO");
    OK(r);
    CHECK_MSG(strcmp(kv(r, "version"), "1") == 0, "%s", r);
    CHECK_EQ(num(kv(r, "udp_port")), ag.udp_port);
    CHECK(kv(r, "impl")[0] != '\0');
    {
        /* AGENT-18: the agent runs on this host, so its atomic targets are
         * in this host's byte order. */
        const uint64_t one = 1;
        uint8_t lo;
        memcpy(&lo, &one, 1);
        CHECK_MSG(strcmp(kv(r, "atomic_order"), lo ? "le" : "be") == 0, "%s",
                  r);
    }

    r = cmd("MR_REG len=8192 access=lw,rw,rr,ra fill=0x11");
    OK(r);
    int mr = (int)num(kv(r, "mr"));
    uint64_t maddr = num(kv(r, "addr"));
    uint32_t mrkey = (uint32_t)num(kv(r, "rkey"));
    CHECK(mr > 0 && maddr != 0 && (maddr & 7) == 0);
    CHECK(kv(r, "lkey")[0] != '\0');
    r = cmd("MR_READ mr=%d off=8190 len=2", mr);
    CHECK_MSG(strcmp(r, "OK hex=1111") == 0, "%s", r);

    r = cmd("QP_CREATE mtu=1024 retry=3 window=256 cc=fixed");
    OK(r);
    int qp = (int)num(kv(r, "qp"));
    uint32_t qpn = (uint32_t)num(kv(r, "qpn"));
    CHECK(qp > 0 && qpn != 0);
    r = cmd("QP_STATE qp=%d", qp);
    CHECK_MSG(strcmp(r, "OK state=RESET") == 0, "%s", r);
    OK(cmd("QP_LISTEN qp=%d", qp));
    r = cmd("QP_STATE qp=%d", qp);
    CHECK_MSG(strcmp(r, "OK state=LISTEN") == 0, "%s", r);
    int rc = mroce_connect(l.qp, host, (uint16_t)ag.udp_port, qpn, 3000);
    CHECK_EQ_INT(rc, 0);
    r = cmd("QP_STATE qp=%d", qp);
    CHECK_MSG(strcmp(r, "OK state=RTS") == 0, "%s", r);
    if (rc != 0) {
        local_close(&l);
        return;
    }

    /* SEND from us into an agent receive. */
    OK(cmd("POST_RECV qp=%d wrid=7 mr=%d off=0 len=4096", qp, mr));
    for (int i = 0; i < 100; i++)
        l.buf[i] = (uint8_t)(i * 3 + 1);
    struct mroce_sge sge = {(uint64_t)(uintptr_t)l.buf, 100,
                            mroce_mr_lkey(l.mr)};
    struct mroce_send_wr swr, *bad;
    memset(&swr, 0, sizeof(swr));
    swr.wr_id = 1;
    swr.sg_list = &sge;
    swr.num_sge = 1;
    swr.opcode = MROCE_WR_SEND;
    swr.send_flags = MROCE_SEND_SIGNALED;
    CHECK_EQ_INT(mroce_post_send(l.qp, &swr, &bad), 0);
    r = cmd("POLL qp=%d cq=recv wait_ms=3000", qp);
    CHECK_MSG(strcmp(r, "OK n=1 wrid=7 status=SUCCESS op=RECV len=100") == 0,
              "%s", r);
    char hex[300];
    hexstr(l.buf, 100, hex);
    r = cmd("MR_READ mr=%d off=0 len=100", mr);
    CHECK_MSG(strcmp(kv(r, "hex"), hex) == 0, "%s", r);
    struct mroce_wc wc;
    CHECK(local_wait(l.scq, &wc) == 1 && wc.status == MROCE_WC_SUCCESS);
    r = cmd("POLL qp=%d cq=recv", qp);
    CHECK_MSG(strcmp(r, "OK n=0") == 0, "%s", r);
    if (!full) {
        OK(cmd("QP_DESTROY qp=%d", qp));
        OK(cmd("MR_DEREG mr=%d", mr));
        local_close(&l);
        return;
    }

    /* SEND_IMM from the agent into our receive. */
    struct mroce_sge rsge = {(uint64_t)(uintptr_t)(l.buf + 32768), 4096,
                             mroce_mr_lkey(l.mr)};
    struct mroce_recv_wr rwr = {.wr_id = 55, .sg_list = &rsge, .num_sge = 1};
    struct mroce_recv_wr *rbad;
    CHECK_EQ_INT(mroce_post_recv(l.qp, &rwr, &rbad), 0);
    OK(cmd("MR_WRITE mr=%d off=256 hex=deadbeef0102", mr));
    OK(cmd("POST_SEND qp=%d wrid=9 op=SEND_IMM mr=%d off=256 len=6 imm=0x1234",
           qp, mr));
    r = cmd("POLL qp=%d cq=send wait_ms=3000", qp);
    CHECK_MSG(strcmp(r, "OK n=1 wrid=9 status=SUCCESS op=SEND_IMM len=0") ==
                      0 ||
                  strncmp(r, "OK n=1 wrid=9 status=SUCCESS op=SEND_IMM", 40) ==
                      0,
              "%s", r);
    CHECK(local_wait(l.rcq, &wc) == 1);
    CHECK_EQ(wc.wr_id, 55);
    CHECK_EQ(wc.byte_len, 6);
    CHECK_EQ(wc.imm_data, 0x1234);
    CHECK(memcmp(l.buf + 32768, "\xde\xad\xbe\xef\x01\x02", 6) == 0);

    /* WRITE from the agent into our memory. */
    uint64_t laddr = (uint64_t)(uintptr_t)l.buf;
    uint32_t lrkey = mroce_mr_rkey(l.mr);
    OK(cmd("MR_WRITE mr=%d off=1000 hex=a1a2a3a4a5a6a7a8a9", mr));
    OK(cmd("POST_SEND qp=%d wrid=10 op=WRITE mr=%d off=1000 len=9 raddr=%llu "
           "rkey=0x%x",
           qp, mr, (unsigned long long)(laddr + 2000), lrkey));
    r = cmd("POLL qp=%d cq=send wait_ms=3000", qp);
    CHECK_MSG(strncmp(r, "OK n=1 wrid=10 status=SUCCESS op=WRITE", 38) == 0,
              "%s", r);
    CHECK(memcmp(l.buf + 2000, "\xa1\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9", 9) == 0);

    /* READ from our memory into the agent's. */
    for (int i = 0; i < 3000; i++)
        l.buf[8192 + i] = (uint8_t)(i ^ (i >> 8));
    OK(cmd(
        "POST_SEND qp=%d wrid=11 op=READ mr=%d off=4096 len=3000 raddr=0x%llx "
        "rkey=%u",
        qp, mr, (unsigned long long)(laddr + 8192), lrkey));
    r = cmd("POLL qp=%d cq=send wait_ms=3000", qp);
    CHECK_MSG(strcmp(r, "OK n=1 wrid=11 status=SUCCESS op=READ len=3000") == 0,
              "%s", r);
    static char rhex[6100];
    hexstr(l.buf + 8192, 3000, rhex);
    r = cmd("MR_READ mr=%d off=4096 len=3000", mr);
    CHECK_MSG(strcmp(kv(r, "hex"), rhex) == 0, "%.80s", r);

    /* Atomics on our memory; the original value lands in the agent's. */
    uint64_t v = 1000;
    memcpy(l.buf + 4096, &v, 8);
    OK(cmd("POST_SEND qp=%d wrid=12 op=FETCH_ADD mr=%d off=16 len=8 raddr=%llu "
           "rkey=%u add=5",
           qp, mr, (unsigned long long)(laddr + 4096), lrkey));
    r = cmd("POLL qp=%d cq=send wait_ms=3000", qp);
    CHECK_MSG(strncmp(r, "OK n=1 wrid=12 status=SUCCESS op=FETCH_ADD", 42) == 0,
              "%s", r);
    memcpy(&v, l.buf + 4096, 8);
    CHECK_EQ(v, 1005);
    uint64_t orig = 1000;
    hexstr((const uint8_t *)&orig, 8, hex);
    r = cmd("MR_READ mr=%d off=16 len=8", mr);
    CHECK_MSG(strcmp(kv(r, "hex"), hex) == 0, "%s (want %s)", r, hex);
    OK(cmd("POST_SEND qp=%d wrid=13 op=CMP_SWAP mr=%d off=24 len=8 raddr=%llu "
           "rkey=%u cmp=1005 swap=0x77",
           qp, mr, (unsigned long long)(laddr + 4096), lrkey));
    r = cmd("POLL qp=%d cq=send wait_ms=3000", qp);
    CHECK_MSG(strncmp(r, "OK n=1 wrid=13 status=SUCCESS op=CMP_SWAP", 41) == 0,
              "%s", r);
    memcpy(&v, l.buf + 4096, 8);
    CHECK_EQ(v, 0x77);

    /* WRITE from us into the agent's region, read back with MR_READ. */
    memcpy(l.buf + 100, "conformance", 11);
    sge.addr = laddr + 100;
    sge.length = 11;
    swr.wr_id = 2;
    swr.opcode = MROCE_WR_WRITE;
    swr.remote_addr = maddr + 5000;
    swr.rkey = mrkey;
    CHECK_EQ_INT(mroce_post_send(l.qp, &swr, &bad), 0);
    CHECK(local_wait(l.scq, &wc) == 1 && wc.status == MROCE_WC_SUCCESS);
    hexstr((const uint8_t *)"conformance", 11, hex);
    r = cmd("MR_READ mr=%d off=5000 len=11", mr);
    CHECK_MSG(strcmp(kv(r, "hex"), hex) == 0, "%s", r);

    /* A remote write outside the region: the agent NAKs, we see the error. */
    swr.wr_id = 3;
    swr.remote_addr = maddr + 8190;
    CHECK_EQ_INT(mroce_post_send(l.qp, &swr, &bad), 0);
    CHECK(local_wait(l.scq, &wc) == 1 && wc.status == MROCE_WC_REM_ACCESS_ERR);

    r = cmd("COUNTERS qp=%d", qp);
    OK(r);
    CHECK(num(kv(r, "rx_data_pkts")) >= 3);
    CHECK(kv(r, "drop_crc")[0] != '\0' && kv(r, "drop_token")[0] != '\0');
    CHECK(kv(r, "ep_rx_pkts")[0] != '\0' && kv(r, "rx_dup_pkts")[0] != '\0');

    /* Refusals from the library come back as their codes. */
    ERR(cmd("POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=8000 len=1000 raddr=1 "
            "rkey=1",
            qp, mr),
        "EACCESS");
    ERR(cmd("MR_DEREG mr=%d", 999), "ENOENT");
    ERR(cmd("QP_LISTEN qp=%d", qp), "ESTATE");
    OK(cmd("QP_ERROR qp=%d", qp));
    r = cmd("QP_STATE qp=%d", qp);
    CHECK_MSG(strcmp(r, "OK state=ERROR") == 0, "%s", r);
    ERR(cmd("POST_SEND qp=%d wrid=1 op=SEND", qp), "ESTATE");
    /* Signaled=0 and inline parse; the QP is in error so they are refused
     * by state, after parsing. */
    ERR(cmd("POST_SEND qp=%d wrid=1 op=SEND mr=%d off=0 len=8 inline=1 "
            "signaled=0 fence=1",
            qp, mr),
        "ESTATE");

    /* A second QP that connects out to ours (QP_CONNECT), then closes. */
    mroce_qp *lq2;
    struct mroce_qp_init_attr ia;
    mroce_qp_init_attr_default(&ia);
    ia.send_cq = l.scq;
    ia.recv_cq = l.rcq;
    CHECK_EQ_INT(mroce_create_qp(l.pd, &ia, &lq2), 0);
    CHECK_EQ_INT(mroce_listen(lq2), 0);
    r = cmd("QP_CREATE");
    OK(r);
    int qp2 = (int)num(kv(r, "qp"));
    struct mroce_device_attr da;
    mroce_device_query(l.dev, &da);
    OK(cmd("QP_CONNECT qp=%d host=%s port=%u rqpn=%u", qp2, host, da.port,
           mroce_qp_num(lq2)));
    CHECK_EQ_INT(mroce_accept(lq2, 3000), 0);
    for (int i = 0; i < 300; i++) {
        r = cmd("QP_STATE qp=%d", qp2);
        if (strcmp(r, "OK state=RTS") == 0)
            break;
        usleep(10000);
    }
    CHECK_MSG(strcmp(r, "OK state=RTS") == 0, "%s", r);
    OK(cmd("QP_CLOSE qp=%d", qp2));
    CHECK_EQ_INT(mroce_disconnect(lq2, 3000), 0);
    for (int i = 0; i < 300; i++) {
        r = cmd("QP_STATE qp=%d", qp2);
        if (strcmp(r, "OK state=CLOSED") == 0)
            break;
        usleep(10000);
    }
    CHECK_MSG(strcmp(r, "OK state=CLOSED") == 0, "%s", r);

    OK(cmd("QP_DESTROY qp=%d", qp));
    ERR(cmd("QP_STATE qp=%d", qp), "ENOENT");
    OK(cmd("MR_DEREG mr=%d", mr));
    ERR(cmd("MR_READ mr=%d off=0 len=1", mr), "ENOENT");
    /* RESET with objects alive (QP 2, a fresh region). */
    OK(cmd("MR_REG len=100 access=none"));
    OK(cmd("RESET"));
    ERR(cmd("QP_STATE qp=%d", qp2), "ENOENT");
    local_close(&l);
}

/* Malformed input: one ERR line each, and the agent keeps serving. */
static void test_malformed(void)
{
    static const struct {
        const char *line;
        const char *code;
    } cases[] = {
        {"", "EINVAL"},
        {"NOPE", "EINVAL"},
        {"hello", "EINVAL"},
        {"HELLO extra=1", "EINVAL"},
        {"HELLO  ", "EINVAL"},
        {" HELLO", "EINVAL"},
        {"MR_REG", "EINVAL"},
        {"MR_REG len=10", "EINVAL"},
        {"MR_REG len=10 access=xx", "EINVAL"},
        {"MR_REG len=10 access=lw,", "EINVAL"},
        {"MR_REG len=10 access=lw fill=256", "EINVAL"},
        {"MR_REG len=-1 access=lw", "EINVAL"},
        {"MR_REG len=0x access=lw", "EINVAL"},
        {"MR_REG len=99999999999999999999999 access=lw", "EINVAL"},
        {"MR_REG len=10 len=10 access=lw", "EINVAL"},
        {"MR_REG len=10  access=lw", "EINVAL"},
        {"MR_REG len= access=lw", "EINVAL"},
        {"MR_REG =10 access=lw", "EINVAL"},
        {"MR_REG len access=lw", "EINVAL"},
        {"MR_REG len=0x100000000000 access=lw", "ENOMEM"},
        {"MR_READ mr=1 off=0 len=1", "ENOENT"},
        {"MR_READ mr=x off=0 len=1", "EINVAL"},
        {"QP_STATE", "EINVAL"},
        {"QP_STATE qp=5", "ENOENT"},
        {"QP_CREATE mtu=100", "ENOTSUP"},
        {"QP_CREATE window=100", "ENOTSUP"},
        {"QP_CREATE npaths=0", "ENOTSUP"},
        {"QP_CREATE cc=cubic", "EINVAL"},
        {"QP_CREATE retry=256", "ENOTSUP"},
        {"QP_CREATE max_recv_wr=0", "ENOTSUP"},
        {"QP_CREATE max_recv_wr=3", "ENOTSUP"},
        {"QP_CREATE max_recv_wr=131072", "ENOTSUP"},
        {"QP_CREATE max_recv_wr=x", "EINVAL"},
        {"POLL qp=1 cq=send", "ENOENT"},
        {"QUIT now=1", "EINVAL"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *r = cmd("%s", cases[i].line);
        CHECK_MSG(is_err(r, cases[i].code), "'%s' -> '%s' (want %s)",
                  cases[i].line, r, cases[i].code);
    }
    /* Raw bytes: NUL and non-ASCII inside a line, CRLF endings. */
    ERR(raw("HEL\0LO\n", 7), "EINVAL");
    ERR(raw("HELLO \xff\n", 8), "EINVAL");
    OK(raw("HELLO\r\n", 7));
    /* Two commands in one write: two replies, in order. */
    OK(raw("HELLO\nQP_STATE qp=77\n", 21));
    ERR(raw("", 0), "ENOENT");

    /* Region commands against a real region. */
    const char *r = cmd("MR_REG len=64 access=lw");
    OK(r);
    int mr = (int)num(kv(r, "mr"));
    ERR(cmd("MR_WRITE mr=%d off=60 hex=0011223344", mr), "EINVAL");
    ERR(cmd("MR_WRITE mr=%d off=0 hex=0g", mr), "EINVAL");
    ERR(cmd("MR_WRITE mr=%d off=0 hex=001", mr), "EINVAL");
    ERR(cmd("MR_WRITE mr=%d off=65 hex=00", mr), "EINVAL");
    OK(cmd("MR_WRITE mr=%d off=62 hex=ABcd", mr));
    r = cmd("MR_READ mr=%d off=62 len=2", mr);
    CHECK_MSG(strcmp(r, "OK hex=abcd") == 0, "%s", r);
    ERR(cmd("MR_READ mr=%d off=60 len=5", mr), "EINVAL");
    ERR(cmd("MR_READ mr=%d off=0 len=16385", mr), "EINVAL");
    ERR(cmd("MR_READ mr=%d off=18446744073709551615 len=1", mr), "EINVAL");
    r = cmd("MR_READ mr=%d off=64 len=0", mr);
    CHECK_MSG(strcmp(r, "OK hex=") == 0, "%s", r);
    r = cmd("QP_CREATE");
    OK(r);
    int qp = (int)num(kv(r, "qp"));
    ERR(cmd("POST_SEND qp=%d wrid=1", qp), "EINVAL");
    ERR(cmd("POST_SEND qp=%d wrid=1 op=JUMP", qp), "EINVAL");
    ERR(cmd("POST_SEND qp=%d wrid=1 op=WRITE mr=%d", qp, mr), "EINVAL");
    ERR(cmd("POST_SEND qp=%d wrid=1 op=CMP_SWAP raddr=8 rkey=1 cmp=1", qp),
        "EINVAL");
    ERR(cmd("POST_SEND qp=%d wrid=1 op=FETCH_ADD raddr=8 rkey=1", qp),
        "EINVAL");
    ERR(cmd("POST_SEND qp=%d wrid=1 op=SEND inline=2", qp), "EINVAL");
    ERR(cmd("POST_SEND qp=%d wrid=1 op=SEND off=4", qp), "EINVAL");
    ERR(cmd("POST_SEND qp=%d wrid=1 op=SEND", qp), "ESTATE");
    ERR(cmd("POST_RECV qp=%d", qp), "EINVAL");
    OK(cmd("POST_RECV qp=%d wrid=1", qp));
    ERR(cmd("POST_RECV qp=%d wrid=2 mr=%d off=0 len=65", qp, mr), "EACCESS");
    ERR(cmd("QP_CONNECT qp=%d host=localhost port=1", qp), "EINVAL");
    ERR(cmd("QP_CONNECT qp=%d host=127.0.0.1 port=0", qp), "EINVAL");
    ERR(cmd("QP_CONNECT qp=%d host=127.0.0.1 port=65536", qp), "EINVAL");
    ERR(cmd("POLL qp=%d cq=both", qp), "EINVAL");
    r = cmd("POLL qp=%d cq=recv wait_ms=50", qp);
    CHECK_MSG(strcmp(r, "OK n=0") == 0, "%s", r);

    /* An over-long line: one ERR, then the agent serves on. */
    size_t big = 70000;
    char *line = malloc(big + 1);
    memset(line, 'A', big);
    line[big] = '\n';
    ERR(raw(line, big + 1), "EINVAL");
    /* Exactly the limit is still a line: parsed, refused on its merits. */
    memcpy(line, "MR_WRITE mr=1 off=0 hex=", 24);
    line[65536] = '\n';
    ERR(raw(line, 65537), "EINVAL");
    free(line);
    OK(cmd("HELLO"));
    OK(cmd("RESET"));
    ERR(cmd("MR_READ mr=%d off=0 len=1", mr), "ENOENT");
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A second local QP on l's device (with its own CQs), for a fresh
 * connection after the first went to ERROR. */
static int local_qp(struct local *l, mroce_qp **qp, mroce_cq **scq)
{
    struct mroce_qp_init_attr ia;
    mroce_cq *rcq;
    int rc;
    mroce_qp_init_attr_default(&ia);
    if ((rc = mroce_create_cq(l->dev, 64, scq)) < 0 ||
        (rc = mroce_create_cq(l->dev, 64, &rcq)) < 0)
        return rc;
    ia.send_cq = *scq;
    ia.recv_cq = rcq;
    return mroce_create_qp(l->pd, &ia, qp);
}

/* One WRITE of 8 bytes from our QP into the agent's region; returns the
 * completion status (-1 if none). */
static int local_write(struct local *l, mroce_qp *qp, mroce_cq *scq,
                       uint64_t raddr, uint32_t rkey)
{
    struct mroce_sge sge = {(uint64_t)(uintptr_t)l->buf, 8,
                            mroce_mr_lkey(l->mr)};
    struct mroce_send_wr w, *bad;
    struct mroce_wc wc;
    memset(&w, 0, sizeof(w));
    w.wr_id = 77;
    w.sg_list = &sge;
    w.num_sge = 1;
    w.opcode = MROCE_WR_WRITE;
    w.send_flags = MROCE_SEND_SIGNALED;
    w.remote_addr = raddr;
    w.rkey = rkey;
    memcpy(l->buf, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    if (mroce_post_send(qp, &w, &bad) != 0 || local_wait(scq, &wc) != 1)
        return -1;
    return (int)wc.status;
}

/* The later additions: DEVICE, PD_ALLOC/PD_FREE and pd=, solicited=1,
 * handshake_timeout_ms and max_ack_delay_us. */
static void test_additions(const char *host, int v6)
{
    struct local l;
    memset(&l, 0, sizeof(l));
    OK(cmd("RESET"));
    /* DEVICE: reopened in place, refused once objects exist, undone by
     * RESET. */
    const char *r = cmd("DEVICE rx_credit_bytes=100000");
    CHECK_MSG(strcmp(r, "OK rx_credit_bytes=100000") == 0, "%s", r);
    r = cmd("HELLO");
    CHECK_EQ(num(kv(r, "udp_port")), ag.udp_port);
    r = cmd("DEVICE");
    CHECK_MSG(strcmp(r, "OK rx_credit_bytes=100000") == 0, "%s", r);
    ERR(cmd("DEVICE rx_credit_bytes=0x100000000"), "ENOTSUP");
    ERR(cmd("DEVICE rx_credit_bytes=x"), "EINVAL");
    ERR(cmd("DEVICE rx_credit=1"), "EINVAL");
    r = cmd("PD_ALLOC");
    OK(r);
    int pd = (int)num(kv(r, "pd"));
    CHECK(pd > 0);
    ERR(cmd("DEVICE rx_credit_bytes=5"), "ESTATE");
    ERR(cmd("PD_ALLOC pd=1"), "EINVAL");
    ERR(cmd("PD_FREE"), "EINVAL");
    ERR(cmd("PD_FREE pd=0"), "ESTATE");
    ERR(cmd("PD_FREE pd=99"), "ENOENT");
    ERR(cmd("MR_REG len=64 access=lw pd=99"), "ENOENT");
    ERR(cmd("QP_CREATE pd=99"), "ENOENT");
    ERR(cmd("QP_CREATE pd=x"), "EINVAL");
    ERR(cmd("QP_CREATE handshake_timeout_ms=0"), "ENOTSUP");
    ERR(cmd("QP_CREATE max_ack_delay_us=1000001"), "ENOTSUP");
    ERR(cmd("QP_CREATE max_ack_delay_us=-1"), "EINVAL");
    OK(cmd("PD_FREE pd=%d", pd));
    ERR(cmd("PD_FREE pd=%d", pd), "ENOENT");
    OK(cmd("RESET"));
    r = cmd("DEVICE");
    CHECK_MSG(strcmp(r, "OK rx_credit_bytes=0") == 0, "%s", r);
    r = cmd("DEVICE rx_credit_bytes=4096");
    CHECK_MSG(strcmp(r, "OK rx_credit_bytes=4096") == 0, "%s", r);

    /* A region of PD 1 through an agent QP of the implicit PD 0: our WRITE
     * is refused (REM_ACCESS_ERR), nothing placed; through a QP of PD 1 it
     * lands.  The agent's device now runs with rx_credit_bytes 4096. */
    if (!CHECK(local_open(&l, host, v6) == 0)) {
        local_close(&l);
        return;
    }
    r = cmd("PD_ALLOC");
    pd = (int)num(kv(r, "pd"));
    r = cmd("MR_REG len=64 access=lw,rw fill=0x33 pd=%d", pd);
    OK(r);
    int mr = (int)num(kv(r, "mr"));
    uint64_t maddr = num(kv(r, "addr"));
    uint32_t mrkey = (uint32_t)num(kv(r, "rkey"));
    r = cmd("QP_CREATE max_ack_delay_us=2000 pd=0");
    OK(r);
    int qp0 = (int)num(kv(r, "qp"));
    uint32_t qpn0 = (uint32_t)num(kv(r, "qpn"));
    OK(cmd("QP_LISTEN qp=%d", qp0));
    int rc = mroce_connect(l.qp, host, (uint16_t)ag.udp_port, qpn0, 3000);
    CHECK_EQ_INT(rc, 0);
    CHECK_EQ_INT(local_write(&l, l.qp, l.scq, maddr, mrkey),
                 MROCE_WC_REM_ACCESS_ERR);
    r = cmd("MR_READ mr=%d off=0 len=8", mr);
    CHECK_MSG(strcmp(r, "OK hex=3333333333333333") == 0, "%s", r);
    OK(cmd("QP_DESTROY qp=%d", qp0));
    r = cmd("QP_CREATE pd=%d max_ack_delay_us=2000", pd);
    OK(r);
    int qp1 = (int)num(kv(r, "qp"));
    uint32_t qpn1 = (uint32_t)num(kv(r, "qpn"));
    OK(cmd("QP_LISTEN qp=%d", qp1));
    mroce_qp *q2 = NULL;
    mroce_cq *s2 = NULL;
    CHECK_EQ_INT(local_qp(&l, &q2, &s2), 0);
    CHECK_EQ_INT(mroce_connect(q2, host, (uint16_t)ag.udp_port, qpn1, 3000), 0);
    CHECK_EQ_INT(local_write(&l, q2, s2, maddr, mrkey), MROCE_WC_SUCCESS);
    r = cmd("MR_READ mr=%d off=0 len=8", mr);
    CHECK_MSG(strcmp(r, "OK hex=0102030405060708") == 0, "%s", r);
    ERR(cmd("PD_FREE pd=%d", pd), "ESTATE");

    /* solicited=1: accepted for SEND, SEND_IMM, WRITE_IMM; delivered. */
    struct mroce_sge rsge = {(uint64_t)(uintptr_t)(l.buf + 4096), 64,
                             mroce_mr_lkey(l.mr)};
    struct mroce_recv_wr rwr = {.wr_id = 66, .sg_list = &rsge, .num_sge = 1};
    struct mroce_recv_wr *rbad;
    CHECK_EQ_INT(mroce_post_recv(q2, &rwr, &rbad), 0);
    OK(cmd("POST_SEND qp=%d wrid=5 op=SEND mr=%d off=0 len=8 solicited=1", qp1,
           mr));
    r = cmd("POLL qp=%d cq=send wait_ms=3000", qp1);
    CHECK_MSG(strncmp(r, "OK n=1 wrid=5 status=SUCCESS op=SEND", 36) == 0, "%s",
              r);
    ERR(cmd("POST_SEND qp=%d wrid=6 op=WRITE mr=%d off=0 len=8 raddr=%llu "
            "rkey=1 solicited=1",
            qp1, mr, (unsigned long long)maddr),
        "EINVAL");
    ERR(cmd("POST_SEND qp=%d wrid=6 op=SEND solicited=2", qp1), "EINVAL");
    CHECK(memcmp(l.buf + 4096, "\x01\x02\x03\x04\x05\x06\x07\x08", 8) == 0);

    /* handshake_timeout_ms: a CONNECT_REQ to a QPN nobody has is dropped
     * (CONN-7); the QP gives up after about 150 ms, not the 1 s default. */
    r = cmd("QP_CREATE handshake_timeout_ms=150");
    OK(r);
    int qph = (int)num(kv(r, "qp"));
    uint64_t t0 = now_ns();
    OK(cmd("QP_CONNECT qp=%d host=%s port=%u rqpn=12345", qph, host,
           (unsigned)mroce_device_port(l.dev)));
    for (;;) {
        r = cmd("QP_STATE qp=%d", qph);
        if (strcmp(r, "OK state=CONNECTING") != 0 ||
            now_ns() - t0 > 900000000ull)
            break;
        usleep(5000);
    }
    CHECK_MSG(strcmp(r, "OK state=ERROR") == 0, "%s", r);
    CHECK_MSG(now_ns() - t0 >= 140000000ull && now_ns() - t0 < 900000000ull,
              "handshake gave up after %llu ns",
              (unsigned long long)(now_ns() - t0));
    OK(cmd("RESET"));
    r = cmd("DEVICE");
    CHECK_MSG(strcmp(r, "OK rx_credit_bytes=0") == 0, "%s", r);
    local_close(&l);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (CHECK(agent_start("127.0.0.1", 0) == 0)) {
        test_datapath("127.0.0.1", 0, 1);
        test_malformed();
        test_additions("127.0.0.1", 0);
        const char *r = cmd("QUIT");
        OK(r);
        CHECK_EQ_INT(agent_wait_exit(), 0);
        close(ag.ctl);
    }
    /* IPv6, when the host has ::1. */
    int fd = socket(AF_INET6, SOCK_DGRAM, 0);
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
    inet_pton(AF_INET6, "::1", &a6.sin6_addr);
    int have6 = fd >= 0 && bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0;
    if (fd >= 0)
        close(fd);
    if (have6 && CHECK(agent_start("::1", 1) == 0)) {
        test_datapath("::1", 1, 0);
        test_additions("::1", 1);
        OK(cmd("QUIT"));
        CHECK_EQ_INT(agent_wait_exit(), 0);
        close(ag.ctl);
    } else if (!have6) {
        printf("conform_agent_smoke: no ::1, IPv6 part skipped\n");
    }
    return TESTUTIL_SUMMARY("conform_agent_smoke");
}
