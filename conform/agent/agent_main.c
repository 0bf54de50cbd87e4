/*
 * agent_main.c - mroce-conform-agent's process: the command line, the
 * libmroce device on the UDP address under test (with a progress thread, so
 * the engine answers packets and fires timers while the agent waits for
 * its next command, AGENT-4), and the TCP control listener serving one
 * controller at a time (AGENT-1).
 *
 *   mroce-conform-agent --control HOST:PORT --udp HOST:PORT [--once]
 *                       [--fault NAME] [--list-faults]
 *
 * HOST is an IPv4 or IPv6 literal ([::1]:4794); PORT 0 picks a free port.
 * Once both are bound the agent prints one line on stdout,
 *   READY control=HOST:PORT udp=HOST:PORT
 * so scripts and tests can start it on free ports without races.  When a
 * controller disconnects everything it created is destroyed (as RESET);
 * --once exits after the first controller.  --fault exists in the seeded-
 * fault build (mroce-conform-agent-faults) only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent.h"
#ifdef MROCE_SEEDED_FAULTS
#include "seeded_fault.h"
#endif

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

struct hostport {
    char host[INET6_ADDRSTRLEN];
    uint16_t port;
    int family;
};

/* "1.2.3.4:P" or "[v6]:P", literals only. */
static int parse_hostport(const char *s, struct hostport *hp)
{
    const char *colon;
    size_t hl;
    uint8_t tmp[16];
    uint64_t port;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':')
            return -1;
        hl = (size_t)(rb - s - 1);
        if (hl == 0 || hl >= sizeof(hp->host))
            return -1;
        memcpy(hp->host, s + 1, hl);
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -1;
        hl = (size_t)(colon - s);
        if (hl == 0 || hl >= sizeof(hp->host))
            return -1;
        memcpy(hp->host, s, hl);
    }
    hp->host[hl] = '\0';
    if (inet_pton(AF_INET, hp->host, tmp) == 1)
        hp->family = AF_INET;
    else if (inet_pton(AF_INET6, hp->host, tmp) == 1)
        hp->family = AF_INET6;
    else
        return -1;
    if (agent_parse_u64(colon + 1, 65535, &port) < 0)
        return -1;
    hp->port = (uint16_t)port;
    return 0;
}

static socklen_t make_sa(const struct hostport *hp, uint16_t port,
                         struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (hp->family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        inet_pton(AF_INET, hp->host, &in->sin_addr);
        return sizeof(*in);
    }
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    inet_pton(AF_INET6, hp->host, &in6->sin6_addr);
    return sizeof(*in6);
}

/* A free port of the given type, by binding port 0 (bind races are
 * handled by the caller retrying). */
static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
        return -1;
    return ntohs(ss.ss_family == AF_INET
                     ? ((struct sockaddr_in *)&ss)->sin_port
                     : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

static int probe_udp_port(const struct hostport *hp)
{
    struct sockaddr_storage ss;
    socklen_t sl = make_sa(hp, 0, &ss);
    int fd = socket(hp->family, SOCK_DGRAM, 0);
    if (fd < 0)
        return -1;
    int port = bind(fd, (struct sockaddr *)&ss, sl) < 0 ? -1 : bound_port(fd);
    close(fd);
    return port;
}

int agent_open_device(struct agent *a, uint32_t rx_credit_bytes)
{
    struct hostport udp;
    int rc = MROCE_EADDR;
    memset(&udp, 0, sizeof(udp));
    snprintf(udp.host, sizeof(udp.host), "%s", a->udp_host);
    udp.family = strchr(udp.host, ':') ? AF_INET6 : AF_INET;
    a->dev = NULL;
    a->pd = NULL;
    for (int tries = 0; tries < 20 && rc == MROCE_EADDR; tries++) {
        struct mroce_device_attr da;
        mroce_device_attr_default(&da);
        int port = a->udp_port ? a->udp_port : probe_udp_port(&udp);
        if (port <= 0)
            return MROCE_EADDR;
        da.local_addr = udp.host;
        da.port = (uint16_t)port;
        da.progress = MROCE_PROGRESS_THREAD;
        da.rx_credit_bytes = rx_credit_bytes;
        /* AGENT-25: plane 0 at --udp, plane i at 127.(200+i).0.1 (IPv4
         * loopback only, cmd_device checks); "" keeps MROCE_PLANES out. */
        a->planes_list[0] = 0;
        if (a->planes > 1) {
            size_t o = (size_t)snprintf(a->planes_list, sizeof(a->planes_list),
                                        "%s", udp.host);
            for (unsigned k = 1; k < a->planes && o < sizeof(a->planes_list);
                 k++)
                o += (size_t)snprintf(a->planes_list + o,
                                      sizeof(a->planes_list) - o, ",127.%u.0.1",
                                      200 + k);
        }
        da.planes = a->planes_list;
        /* Secure mode: the key reaches libmroce as a file only the agent
         * can read, removed once the device has read it; "" keeps
         * MROCE_KEY_FILE and MROCE_KEY out. */
        char kpath[] = "/tmp/mroce-agent-key.XXXXXX";
        int kfd = -1;
        da.key_file = "";
        if (a->sec_suite) {
            kfd = mkstemp(kpath);
            if (kfd < 0 || fchmod(kfd, 0600) < 0 ||
                write(kfd, a->sec_key, strlen(a->sec_key)) < 0) {
                if (kfd >= 0) {
                    close(kfd);
                    unlink(kpath);
                }
                return MROCE_EINVAL;
            }
            da.key_file = kpath;
            da.secure_suite = a->sec_suite;
        }
        rc = mroce_device_open(&da, &a->dev);
        if (kfd >= 0) {
            close(kfd);
            unlink(kpath);
        }
        if (rc == 0)
            a->udp_port = (uint16_t)port;
        else if (a->udp_port && !a->reopening)
            break; /* a fixed port given on the command line: no retrying */
        else if (a->udp_port)
            usleep(10000); /* DEVICE: wait for our own old socket to go */
    }
    if (rc < 0) {
        a->dev = NULL;
        return rc;
    }
    rc = mroce_pd_alloc(a->dev, &a->pd);
    if (rc < 0) {
        mroce_device_close(a->dev);
        a->dev = NULL;
        return rc;
    }
    a->rx_credit_bytes = rx_credit_bytes;
    return 0;
}

static int listen_control(struct hostport *ctl)
{
    struct sockaddr_storage ss;
    socklen_t sl = make_sa(ctl, ctl->port, &ss);
    int fd = socket(ctl->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 4) < 0) {
        close(fd);
        return -1;
    }
    ctl->port = (uint16_t)bound_port(fd);
    return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int reply(int fd, struct agent_reply *r)
{
    r->buf[r->len] = '\n';
    return send_all(fd, r->buf, r->len + 1);
}

/* Serve one controller until it leaves, sends QUIT, or we are stopped.
 * Lines are at most AGENT_MAX_LINE bytes plus an optional CR; a longer
 * one is answered once with ERR EINVAL and skipped up to its LF. */
static void serve(struct agent *a, int fd)
{
    static char in[AGENT_MAX_LINE + 2];
    static struct agent_reply r;
    size_t have = 0;
    int discarding = 0;
    a->quit = 0;
    while (!stop_flag && !a->quit) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, 200);
        if (pr < 0 && errno != EINTR)
            return;
        if (pr <= 0)
            continue;
        ssize_t n = recv(fd, in + have, sizeof(in) - have, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        size_t start = 0, end = have + (size_t)n;
        for (size_t i = have; i < end && !a->quit; i++) {
            if (in[i] != '\n')
                continue;
            size_t len = i - start;
            char *line = in + start;
            start = i + 1;
            if (discarding) {
                discarding = 0;
                continue;
            }
            if (len && line[len - 1] == '\r')
                len--;
            line[len] = '\0';
            if (len > AGENT_MAX_LINE)
                agent_reply_err(&r, "EINVAL", "line too long");
            else
                agent_execute(a, line, &r);
            if (reply(fd, &r) < 0)
                return;
        }
        if (a->quit)
            return;
        memmove(in, in + start, end - start);
        have = end - start;
        if (have == sizeof(in)) {
            /* No LF within the limit: answer the over-long command once
             * now, and drop the rest of it when its LF comes. */
            if (!discarding) {
                agent_reply_err(&r, "EINVAL", "line too long");
                if (reply(fd, &r) < 0)
                    return;
            }
            discarding = 1;
            have = 0;
        }
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mroce-conform-agent --control HOST:PORT --udp HOST:PORT"
            " [--once]%s\n"
            "  Test agent of the MetaRoCE conformance suite "
            "(docs/spec/conformance-agent.md).\n"
            "  PORT 0 picks a free port; the agent prints "
            "\"READY control=... udp=...\" when it listens.\n",
#ifdef MROCE_SEEDED_FAULTS
            " [--fault NAME] [--list-faults]"
#else
            ""
#endif
    );
}

int main(int argc, char **argv)
{
    struct hostport ctl = {0}, udp = {0};
    int have_ctl = 0, have_udp = 0, once = 0;
    const char *fault = NULL;
    static char impl[96] = "libmroce-0.1";
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(o, "--control") == 0 && v) {
            if (parse_hostport(v, &ctl) < 0)
                goto bad;
            have_ctl = 1;
            i++;
        } else if (strcmp(o, "--udp") == 0 && v) {
            if (parse_hostport(v, &udp) < 0)
                goto bad;
            have_udp = 1;
            i++;
        } else if (strcmp(o, "--fault") == 0 && v) {
            fault = v;
            i++;
        } else if (strcmp(o, "--once") == 0) {
            once = 1;
        } else if (strcmp(o, "--list-faults") == 0) {
#ifdef MROCE_SEEDED_FAULTS
            for (int k = 1; mrw_seeded_fault_name(k); k++)
                printf("%s\n", mrw_seeded_fault_name(k));
#endif
            return 0;
        } else if (strcmp(o, "--help") == 0 || strcmp(o, "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            goto bad;
        }
    }
    if (!have_ctl || !have_udp)
        goto bad;
    if (fault) {
#ifdef MROCE_SEEDED_FAULTS
        if (mrw_seeded_fault_select(fault) < 0) {
            fprintf(stderr,
                    "mroce-conform-agent: unknown fault '%s' "
                    "(--list-faults)\n",
                    fault);
            return 2;
        }
        if (*fault && strcmp(fault, "none"))
            snprintf(impl, sizeof(impl), "libmroce-0.1+fault-%s", fault);
#else
        fprintf(stderr, "mroce-conform-agent: built without seeded faults "
                        "(use mroce-conform-agent-faults)\n");
        return 2;
#endif
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    static struct agent a;
    a.impl = impl;
    a.next_mr_id = a.next_qp_id = a.next_pd_id = 1;
    snprintf(a.udp_host, sizeof(a.udp_host), "%s", udp.host);
    a.udp_port = udp.port;
    int rc = agent_open_device(&a, 0);
    if (rc < 0) {
        fprintf(stderr, "mroce-conform-agent: UDP %s:%u: %s\n", udp.host,
                udp.port, mroce_strerror(rc));
        return 1;
    }
    udp.port = a.udp_port;
    int lfd = listen_control(&ctl);
    if (lfd < 0) {
        fprintf(stderr, "mroce-conform-agent: control %s:%u: %s\n", ctl.host,
                ctl.port, strerror(errno));
        mroce_device_close(a.dev);
        return 1;
    }
    int v6c = ctl.family == AF_INET6, v6u = udp.family == AF_INET6;
    printf("READY control=%s%s%s:%u udp=%s%s%s:%u\n", v6c ? "[" : "", ctl.host,
           v6c ? "]" : "", ctl.port, v6u ? "[" : "", udp.host, v6u ? "]" : "",
           udp.port);
    fflush(stdout);

    while (!stop_flag) {
        struct pollfd pfd = {.fd = lfd, .events = POLLIN};
        if (poll(&pfd, 1, 200) <= 0)
            continue;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        serve(&a, fd);
        close(fd);
        if (agent_reset(&a) < 0)
            break;
        if (once)
            break;
    }
    close(lfd);
    if (!a.dev)
        return 1; /* DEVICE or RESET could not reopen the UDP endpoint */
    agent_reset(&a);
    mroce_pd_free(a.pd);
    mroce_device_close(a.dev);
    return 0;

bad:
    usage(stderr);
    return 2;
}
