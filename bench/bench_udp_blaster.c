/*
 * bench_udp_blaster.c - the raw UDP ceiling of libmroce's loopback datapath,
 * for the C API comparison (bench/compare_loopback.sh, issue 3).  It moves
 * bytes exactly the way src/udp does, with no protocol at all: what it
 * reaches is the most any transport on this datapath can reach.
 *
 *   bench_udp_blaster bw  [-D secs] [-g segs] [-s seg_bytes] [-P sockets]
 *                         [-b rx_batch] [-p port] [-W window_bytes]
 *   bench_udp_blaster lat [-n iters] [-D secs] [-s bytes] [-p port] [-a]
 *   bench_udp_blaster stalls [-D secs]
 *   roles, to run (or profile) one side alone:
 *   bench_udp_blaster bw-recv | bw-send | lat-server | lat-client [options]
 *
 * bw: two processes (fork), like mroce-perf's client and server.  The sender
 * sends UDP GSO bursts of -g segments (8, the library's path_burst) of -s
 * bytes (4160: a 4096 B MTU payload plus MetaRoCE's 60 B of WRITE headers
 * and 4 B CRC), one sendmsg per burst, round robin over -P source sockets
 * (64, the default path count: one socket per path entropy), to one
 * receive socket with UDP GRO that the receiver drains by busy-polling
 * recvmmsg (MSG_DONTWAIT) in batches of -b (64) 64 KiB buffers, as
 * libmroce's APP progress mode does.  By default nothing paces the sender:
 * the figure is what the receiver got (UDP payload bytes between its first
 * and last datagram), with the sender's offered rate beside it.  -W BYTES
 * adds the least feedback a transport needs: the receiver returns its
 * cumulative byte count every 256 KiB it drains (one small datagram, like an
 * ACK stream) and the sender keeps at most BYTES unacknowledged - an
 * ACK-clocked sender with no headers, CRC or reliability, which shows what
 * the round trip through two busy-polling processes costs on a loaded
 * machine.
 *
 * lat: a 64 B UDP ping-pong between two processes, both busy-polling
 * recv(MSG_DONTWAIT) on connected sockets; prints half the round trip
 * (median, average, p99) after a warm-up.  -a adds what a transport that
 * acknowledges every message separately pays (libmroce does, as RoCE): each
 * side sends a 64 B ACK datagram for the message it got before its own next
 * message, and skips the peer's ACKs.
 *
 * stalls: two processes spin on the clock and count gaps (>100 us, >1 ms,
 * >5 ms): how often busy-polling peers lose their CPU on this host, the
 * context for closed-loop figures and spurious timeouts.
 *
 * Every loop is bounded in time (-D plus a few seconds at most).  Traffic
 * goes to 127.0.0.1 only.  The last line of each run is machine-readable:
 * "RESULT key=value ...".  A measurement, never a test.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

#define MAX_SOCKS 256
#define MAX_BATCH 256
#define RX_BUF 65536
#define END_MAGIC 0xE7            /* a 1-byte datagram: the sender is done */
#define START_MAGIC 0x5A          /* a 1-byte datagram from the credit socket */
#define CREDIT_EVERY (256u << 10) /* the receiver's credit cadence, bytes */
#define ACK_MAGIC 0xAC            /* lat -a: first byte of an ACK datagram */
#define ACK_LEN 64 /* a MetaRoCE ACK: 28 + 32 B headers + 4 B CRC */

struct cfg {
    double secs;
    unsigned segs, seg, socks, batch, port, bytes;
    unsigned long window; /* -W: bytes in flight before a credit; 0 = none */
    int ack;              /* -a: lat sends an explicit ACK per message */
    unsigned long iters;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static struct sockaddr_in lo_addr(unsigned port)
{
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

static int udp_socket(unsigned port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    if (rcvbuf) {
        /* the library's receive buffer: 8 MiB (FORCE, as root) */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf,
                       sizeof(rcvbuf)) < 0)
            (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
                             sizeof(rcvbuf));
    }
    struct sockaddr_in a = lo_addr(port);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        die("bind");
    return fd;
}

/* --- bandwidth --- */

static int bw_recv(const struct cfg *c)
{
    int fd = udp_socket(c->port, 8 << 20);
    int one = 1;
    if (setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)) < 0)
        fprintf(stderr, "blaster: no UDP_GRO (%s)\n", strerror(errno));
    uint8_t *bufs = malloc((size_t)c->batch * RX_BUF);
    static struct mmsghdr mm[MAX_BATCH];
    static struct iovec iov[MAX_BATCH];
    static uint8_t ctrl[MAX_BATCH][64];
    if (!bufs)
        die("malloc");
    memset(bufs, 0, (size_t)c->batch * RX_BUF);
    double first = 0, last = 0, deadline = now_s() + c->secs + 10.0;
    double idle_since = 0;
    unsigned long long bytes = 0, dgrams = 0, pkts = 0, calls = 0;
    unsigned long long credited = 0, credits = 0;
    static struct sockaddr_in from[MAX_BATCH];
    struct sockaddr_in credit_to;
    int have_credit_to = 0, ended = 0;
    while (!ended) {
        for (unsigned i = 0; i < c->batch; i++) {
            iov[i].iov_base = bufs + (size_t)i * RX_BUF;
            iov[i].iov_len = RX_BUF;
            memset(&mm[i].msg_hdr, 0, sizeof(mm[i].msg_hdr));
            mm[i].msg_hdr.msg_iov = &iov[i];
            mm[i].msg_hdr.msg_iovlen = 1;
            mm[i].msg_hdr.msg_name = &from[i];
            mm[i].msg_hdr.msg_namelen = sizeof(from[i]);
            mm[i].msg_hdr.msg_control = ctrl[i];
            mm[i].msg_hdr.msg_controllen = sizeof(ctrl[i]);
        }
        int n = recvmmsg(fd, mm, c->batch, MSG_DONTWAIT, NULL);
        calls++;
        double t = now_s();
        if (n <= 0) {
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                die("recvmmsg");
            if (!idle_since)
                idle_since = t;
            /* started and then silent for 0.5 s: the sender is gone */
            if ((first && t - idle_since > 0.5) || t > deadline)
                break;
            continue;
        }
        idle_since = 0;
        for (int i = 0; i < n; i++) {
            unsigned len = mm[i].msg_len;
            if (len == 1 && ((uint8_t *)iov[i].iov_base)[0] == END_MAGIC) {
                ended = 1;
                break;
            }
            if (len == 1 && ((uint8_t *)iov[i].iov_base)[0] == START_MAGIC) {
                credit_to = from[i];
                have_credit_to = 1;
                continue;
            }
            unsigned gso = 0;
            for (struct cmsghdr *h = CMSG_FIRSTHDR(&mm[i].msg_hdr); h;
                 h = CMSG_NXTHDR(&mm[i].msg_hdr, h))
                if (h->cmsg_level == SOL_UDP && h->cmsg_type == UDP_GRO) {
                    int v;
                    memcpy(&v, CMSG_DATA(h), sizeof(v));
                    gso = (unsigned)v;
                }
            if (!first)
                first = t;
            last = t;
            bytes += len;
            dgrams++;
            pkts += gso ? (len + gso - 1) / gso : 1;
        }
        /* credits: the cumulative byte count, every CREDIT_EVERY bytes
         * (a transport's ACK stream would be about this often) */
        if (have_credit_to && bytes - credited >= CREDIT_EVERY) {
            uint64_t v = bytes;
            (void)sendto(fd, &v, sizeof(v), MSG_DONTWAIT,
                         (struct sockaddr *)&credit_to, sizeof(credit_to));
            credited = bytes;
            credits++;
        }
        if (t > deadline)
            break;
    }
    double el = last - first;
    double gbps = el > 0 ? (double)bytes * 8 / el / 1e9 : 0;
    printf("blaster recv: %.3f s, %llu bytes, %llu packets in %llu datagrams "
           "(%.1f per GRO datagram), %.3f recvmmsg calls/packet\n",
           el, bytes, pkts, dgrams, dgrams ? (double)pkts / dgrams : 0,
           pkts ? (double)calls / pkts : 0);
    if (credits)
        printf("blaster recv: %llu credits sent\n", credits);
    printf("RESULT role=recv gbps=%.3f bytes=%llu pkts=%llu secs=%.3f "
           "pkts_per_dgram=%.2f calls_per_pkt=%.4f\n",
           gbps, bytes, pkts, el, dgrams ? (double)pkts / dgrams : 0,
           pkts ? (double)calls / pkts : 0);
    fflush(stdout);
    free(bufs);
    close(fd);
    return 0;
}

static int bw_send(const struct cfg *c)
{
    int fds[MAX_SOCKS];
    for (unsigned i = 0; i < c->socks; i++)
        fds[i] = udp_socket(0, 0);
    struct sockaddr_in to = lo_addr(c->port);
    size_t burst = (size_t)c->segs * c->seg;
    uint8_t *buf = malloc(burst);
    if (!buf)
        die("malloc");
    for (size_t i = 0; i < burst; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    struct iovec iov = {buf, burst};
    union {
        char b[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } cm;
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_name = &to;
    m.msg_namelen = sizeof(to);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (c->segs > 1) {
        memset(&cm, 0, sizeof(cm));
        m.msg_control = cm.b;
        m.msg_controllen = sizeof(cm.b);
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_UDP;
        h->cmsg_type = UDP_SEGMENT;
        h->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t gs = (uint16_t)c->seg;
        memcpy(CMSG_DATA(h), &gs, sizeof(gs));
    }
    /* let the receiver start polling; then name the credit socket */
    usleep(200000);
    uint8_t startb = START_MAGIC;
    if (c->window &&
        sendto(fds[0], &startb, 1, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
        die("sendto");
    unsigned long long bursts = 0, fails = 0, stalls = 0;
    uint64_t sent = 0, acked = 0;
    double t0 = now_s(), end = t0 + c->secs, t = t0, wait_since = 0;
    unsigned s = 0;
    while (t < end) {
        if (c->window) {
            uint64_t v;
            while (recv(fds[0], &v, sizeof(v), MSG_DONTWAIT) == sizeof(v))
                if (v > acked)
                    acked = v;
            if (sent - acked > c->window) {
                /* window full: wait for credit; a lost burst would stall
                 * us forever, so give up waiting after 20 ms */
                t = now_s();
                if (!wait_since)
                    wait_since = t;
                if (t - wait_since > 0.02) {
                    acked = sent;
                    stalls++;
                } else {
                    continue;
                }
            }
            wait_since = 0;
        }
        for (int k = 0; k < 8; k++) {
            ssize_t r = sendmsg(fds[s], &m, MSG_DONTWAIT);
            if (r < 0) {
                if (errno != EAGAIN && errno != ENOBUFS &&
                    errno != ECONNREFUSED && errno != EINTR)
                    die("sendmsg");
                fails++;
            } else {
                bursts++;
                sent += burst;
            }
            if (++s == c->socks)
                s = 0;
        }
        t = now_s();
    }
    double el = t - t0;
    uint8_t endb = END_MAGIC;
    for (int i = 0; i < 20; i++) {
        (void)sendto(fds[0], &endb, 1, MSG_DONTWAIT, (struct sockaddr *)&to,
                     sizeof(to));
        usleep(2000);
    }
    double gbps = (double)bursts * burst * 8 / el / 1e9;
    printf("blaster send: %.3f s, %llu bursts of %u x %u B over %u sockets, "
           "%.1f Gbit/s offered, %llu sends failed, window %lu B "
           "(%llu credit stalls)\n",
           el, bursts, c->segs, c->seg, c->socks, gbps, fails, c->window,
           stalls);
    printf("RESULT role=send gbps=%.3f pkts=%llu secs=%.3f "
           "calls_per_pkt=%.4f\n",
           gbps, bursts * c->segs, el, bursts ? 1.0 / c->segs : 0);
    fflush(stdout);
    free(buf);
    return 0;
}

/* --- latency --- */

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Busy-polls for one datagram until the deadline; its length or -1. */
static ssize_t spin_recv(int fd, void *buf, size_t len, double deadline)
{
    unsigned spins = 0;
    for (;;) {
        ssize_t r = recv(fd, buf, len, MSG_DONTWAIT);
        if (r >= 0)
            return r;
        if (errno != EAGAIN && errno != EINTR && errno != ECONNREFUSED)
            die("recv");
        if (++spins == 4096) {
            spins = 0;
            if (now_s() > deadline)
                return -1;
        }
    }
}

/* spin_recv, skipping -a's ACK datagrams (the receiver still pays for
 * receiving them, as a transport would). */
static ssize_t spin_recv_data(int fd, uint8_t *buf, size_t len, double deadline)
{
    for (;;) {
        ssize_t r = spin_recv(fd, buf, len, deadline);
        if (r != ACK_LEN || buf[0] != ACK_MAGIC)
            return r;
    }
}

static void send_ack(int fd)
{
    uint8_t a[ACK_LEN];
    memset(a, 0, sizeof(a));
    a[0] = ACK_MAGIC;
    if (send(fd, a, sizeof(a), 0) < 0 && errno != ECONNREFUSED)
        die("send");
}

static int lat_server(const struct cfg *c)
{
    int fd = udp_socket(c->port, 0);
    uint8_t buf[65536];
    struct sockaddr_in peer;
    socklen_t pl = sizeof(peer);
    double deadline = now_s() + c->secs + 10.0;
    /* the first ping tells us who the client is */
    ssize_t r;
    for (;;) {
        r = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT,
                     (struct sockaddr *)&peer, &pl);
        if (r >= 0)
            break;
        if (now_s() > deadline)
            return 1;
    }
    if (connect(fd, (struct sockaddr *)&peer, pl) < 0)
        die("connect");
    while (r > 1) {
        if (c->ack)
            send_ack(fd); /* ACK the ping first, as libmroce does */
        if (send(fd, buf, (size_t)r, 0) < 0 && errno != ECONNREFUSED)
            die("send");
        r = spin_recv_data(fd, buf, sizeof(buf), deadline);
    }
    close(fd);
    return 0;
}

static int lat_client(const struct cfg *c)
{
    int fd = udp_socket(0, 0);
    struct sockaddr_in to = lo_addr(c->port);
    if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0)
        die("connect");
    uint8_t buf[65536];
    memset(buf, 0x5a, sizeof(buf));
    unsigned long cap = c->iters ? c->iters : 1000000;
    double *s = malloc(cap * sizeof(double));
    if (!s)
        die("malloc");
    usleep(200000);
    /* first ping: retried until the server answers (it may start late) */
    double deadline = now_s() + 5.0;
    for (;;) {
        (void)send(fd, buf, c->bytes, 0);
        if (spin_recv(fd, buf, sizeof(buf), now_s() + 0.1) >= 0)
            break;
        if (now_s() > deadline) {
            fprintf(stderr, "blaster: no answer from the ping server\n");
            return 1;
        }
    }
    /* warm-up, then measure */
    unsigned long warm = 1000, n = 0;
    double tend = now_s() + 5.0 + c->secs;
    deadline = tend + 5.0;
    for (unsigned long i = 0; i < warm + cap; i++) {
        double t = now_s();
        if (i == warm)
            tend = t + c->secs; /* -D counts from the end of the warm-up */
        if (t > tend)
            break;
        if (c->ack && i > 0)
            send_ack(fd); /* ACK the last pong before the next ping */
        buf[0] = 0x5a;
        if (send(fd, buf, c->bytes, 0) < 0)
            die("send");
        if (spin_recv_data(fd, buf, sizeof(buf), deadline) < 0) {
            fprintf(stderr, "blaster: ping lost\n");
            return 1;
        }
        if (i >= warm)
            s[n++] = (now_s() - t) * 1e6 / 2;
    }
    uint8_t endb = END_MAGIC;
    (void)send(fd, &endb, 1, 0);
    double sum = 0;
    for (unsigned long i = 0; i < n; i++)
        sum += s[i];
    qsort(s, n, sizeof(double), cmp_d);
    double med = n ? s[n / 2] : 0, avg = n ? sum / n : 0;
    double p99 = n ? s[(size_t)(n * 0.99)] : 0;
    printf("blaster ping-pong%s: %u B, %lu iterations, half RTT: min %.2f "
           "median %.2f avg %.2f p99 %.2f usec\n",
           c->ack ? " with an ACK per message" : "", c->bytes, n, n ? s[0] : 0,
           med, avg, p99);
    printf("RESULT role=lat bytes=%u iters=%lu median_us=%.3f avg_us=%.3f "
           "p99_us=%.3f min_us=%.3f\n",
           c->bytes, n, med, avg, p99, n ? s[0] : 0);
    fflush(stdout);
    free(s);
    close(fd);
    return 0;
}

/* --- host stalls --- */

/* Spins reading the clock for c->secs and counts the gaps: how often a
 * busy-polling process loses its CPU (other jobs, the hypervisor).  Two
 * such processes run at once, as the peers of every test here do.  A
 * closed-loop transport whose timers are shorter than these gaps times out
 * spuriously. */
static int stall_probe(const struct cfg *c)
{
    double t0 = now_s(), p = t0, t, mx = 0;
    unsigned long g100 = 0, g1 = 0, g5 = 0;
    while ((t = now_s()) - t0 < c->secs) {
        double d = t - p;
        g100 += d > 100e-6;
        g1 += d > 1e-3;
        g5 += d > 5e-3;
        if (d > mx)
            mx = d;
        p = t;
    }
    printf("stalls of a spinning process: %.1f/s > 100 us, %.1f/s > 1 ms, "
           "%.1f/s > 5 ms, longest %.2f ms\n",
           g100 / c->secs, g1 / c->secs, g5 / c->secs, mx * 1e3);
    printf("RESULT role=stalls per_s_100us=%.1f per_s_1ms=%.1f per_s_5ms=%.1f "
           "max_ms=%.2f\n",
           g100 / c->secs, g1 / c->secs, g5 / c->secs, mx * 1e3);
    fflush(stdout);
    return 0;
}

static int stall_quiet(const struct cfg *c)
{
    /* the child spins too, but only the parent reports */
    if (!freopen("/dev/null", "w", stdout))
        return 1;
    return stall_probe(c);
}

/* Runs `a` in a child and `b` here; the child is killed if still there. */
static int two_procs(int (*child)(const struct cfg *),
                     int (*parent)(const struct cfg *), const struct cfg *c)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        die("fork");
    if (pid == 0)
        _exit(child(c));
    int rc = parent(c);
    /* the child finishes by itself within a second or so; bound it */
    for (int i = 0; i < 300; i++) {
        int st;
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return rc ? rc : (WIFEXITED(st) ? WEXITSTATUS(st) : 1);
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return rc;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_udp_blaster bw|lat|stalls|bw-recv|bw-send|"
            "lat-server|lat-client [-D secs] [-n iters] [-g segs] [-s bytes] "
            "[-P sockets] [-b rx_batch] [-p port] [-W window_bytes] [-a]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    const char *mode = argv[1];
    int lat = !strncmp(mode, "lat", 3);
    struct cfg c = {.secs = lat ? 3 : 4,
                    .segs = 8,
                    .seg = 4160,
                    .socks = 64,
                    .batch = 64,
                    .port = 19750,
                    .bytes = 64,
                    .iters = 0,
                    .window = 0};
    int opt;
    optind = 2;
    while ((opt = getopt(argc, argv, "D:n:g:s:P:b:p:W:ah")) != -1) {
        switch (opt) {
        case 'D':
            c.secs = atof(optarg);
            break;
        case 'n':
            c.iters = strtoul(optarg, NULL, 0);
            break;
        case 'g':
            c.segs = (unsigned)atoi(optarg);
            break;
        case 's':
            c.seg = c.bytes = (unsigned)atoi(optarg);
            break;
        case 'P':
            c.socks = (unsigned)atoi(optarg);
            break;
        case 'b':
            c.batch = (unsigned)atoi(optarg);
            break;
        case 'p':
            c.port = (unsigned)atoi(optarg);
            break;
        case 'W':
            c.window = strtoul(optarg, NULL, 0);
            break;
        case 'a':
            c.ack = 1;
            break;
        default:
            usage();
        }
    }
    if (!lat)
        c.bytes = 64;
    if (c.secs <= 0 || c.secs > 120 || c.segs < 1 || c.segs > 64 || c.seg < 1 ||
        (size_t)c.segs * c.seg > 65000 || c.socks < 1 || c.socks > MAX_SOCKS ||
        c.batch < 1 || c.batch > MAX_BATCH || c.bytes < 2 || c.bytes > 65000 ||
        c.port < 1 || c.port > 65535)
        usage();
    if (!strcmp(mode, "bw"))
        return two_procs(bw_send, bw_recv, &c);
    if (!strcmp(mode, "lat"))
        return two_procs(lat_server, lat_client, &c);
    if (!strcmp(mode, "stalls"))
        return two_procs(stall_quiet, stall_probe, &c);
    if (!strcmp(mode, "bw-recv"))
        return bw_recv(&c);
    if (!strcmp(mode, "bw-send"))
        return bw_send(&c);
    if (!strcmp(mode, "lat-server"))
        return lat_server(&c);
    if (!strcmp(mode, "lat-client"))
        return lat_client(&c);
    usage();
    return 2;
}
