/*
 * ctl.c - the tester's control client for the test agent.  The agent runs
 * next to the implementation under test and makes it act: register memory,
 * post work, report completions (docs/spec/conformance-agent.md).  The
 * channel is line-based text over TCP: the tester writes one command line,
 * the agent answers with exactly one line, "OK k=v ..." or "ERR CODE text".
 * This file only moves lines; agent.c gives the commands types and turns
 * an ERR into a failed or skipped case.  The channel carries no MetaRoCE
 * traffic; a reply that does not arrive within the timeout is a failure of
 * the agent, reported as such.
 */
#define _GNU_SOURCE
#include "ctl.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int ct_split_hostport(const char *s, char *host, size_t cap, unsigned *port)
{
    const char *colon;
    size_t hl;
    char *end;
    unsigned long p;

    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':')
            return -1;
        hl = (size_t)(rb - s - 1);
        s++;
        colon = rb + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return -1;
        hl = (size_t)(colon - s);
    }
    if (hl == 0 || hl >= cap)
        return -1;
    memcpy(host, s, hl);
    host[hl] = 0;
    errno = 0;
    p = strtoul(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || p > 65535)
        return -1;
    *port = (unsigned)p;
    return 0;
}

int ct_ctl_open(struct ct_ctl *c, const char *hostport, int timeout_ms)
{
    char host[256], port[8];
    unsigned p;
    struct addrinfo hints, *res, *ai;
    int fd = -1, one = 1;

    c->fd = -1;
    c->rlen = 0;
    c->line[0] = 0;
    c->timeout_ms = timeout_ms;
    if (ct_split_hostport(hostport, host, sizeof(host), &p) < 0) {
        errno = EINVAL;
        return -1;
    }
    snprintf(port, sizeof(port), "%u", p);
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        errno = EINVAL;
        return -1;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    return 0;
}

void ct_ctl_close(struct ct_ctl *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Moves one line out of rbuf into line; 1 if there was one. */
static int take_line(struct ct_ctl *c)
{
    char *nl = memchr(c->rbuf, '\n', c->rlen);
    size_t n;

    if (!nl)
        return 0;
    n = (size_t)(nl - c->rbuf);
    memcpy(c->line, c->rbuf, n);
    if (n && c->line[n - 1] == '\r')
        n--;
    c->line[n] = 0;
    memmove(c->rbuf, nl + 1, c->rlen - (size_t)(nl + 1 - c->rbuf));
    c->rlen -= (size_t)(nl + 1 - c->rbuf);
    return 1;
}

int ct_ctl_cmd(struct ct_ctl *c, const char *cmd)
{
    size_t n = strlen(cmd);

    if (c->fd < 0) {
        snprintf(c->line, sizeof(c->line), "control channel closed");
        return -1;
    }
    if (c->verbose)
        fprintf(stderr, "  ctl> %.200s%s\n", cmd, n > 200 ? "..." : "");
    if (write_all(c->fd, cmd, n) < 0 || write_all(c->fd, "\n", 1) < 0) {
        snprintf(c->line, sizeof(c->line), "control channel: send: %s",
                 strerror(errno));
        return -1;
    }
    while (!take_line(c)) {
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        ssize_t r;
        int pr = poll(&pfd, 1, c->timeout_ms);

        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0) {
            snprintf(c->line, sizeof(c->line),
                     "control channel: no reply within %d ms to \"%.60s\"",
                     c->timeout_ms, cmd);
            return -1;
        }
        if (c->rlen == sizeof(c->rbuf)) {
            snprintf(c->line, sizeof(c->line),
                     "control channel: reply line too long");
            return -1;
        }
        r = recv(c->fd, c->rbuf + c->rlen, sizeof(c->rbuf) - c->rlen, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(c->line, sizeof(c->line),
                     "control channel: closed by the agent");
            ct_ctl_close(c);
            return -1;
        }
        c->rlen += (size_t)r;
    }
    if (c->verbose)
        fprintf(stderr, "  ctl< %.200s%s\n", c->line,
                strlen(c->line) > 200 ? "..." : "");
    return 0;
}
