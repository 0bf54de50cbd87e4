/*
 * net.c - the tester's datagram layer.  A MetaRoCE peer receives on one
 * port and sends each path's packets from its own UDP source port (the
 * entropy, WIRE-10).  The tester mirrors that with one main socket, bound
 * to its MetaRoCE port, and a pool of entropy sockets on ephemeral ports.
 * Every datagram the IUT sends should reach the main socket (CONN-13); the
 * entropy sockets are polled too, so a reply sent to a packet's source port
 * is seen and can be reported.  ECN is read on receive (IP_RECVTOS /
 * IPV6_RECVTCLASS) and set per datagram on send (an IP_TOS / IPV6_TCLASS
 * control message), so cases can send CE and check ECT(0) (WIRE-11).
 * No MetaRoCE parsing happens here.
 */
#define _GNU_SOURCE
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fill_addr(int family, const char *ip, unsigned port,
                     struct sockaddr_storage *ss, socklen_t *len)
{
    memset(ss, 0, sizeof(*ss));
    if (family == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)ss;
        s->sin_family = AF_INET;
        s->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, ip, &s->sin_addr) != 1)
            return -1;
        *len = sizeof(*s);
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
        s->sin6_family = AF_INET6;
        s->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, ip, &s->sin6_addr) != 1)
            return -1;
        *len = sizeof(*s);
    }
    return 0;
}

uint16_t ct_net_port(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)a)->sin_port);
    return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
}

void ct_net_fmt(const struct sockaddr_storage *a, char *buf, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (a->ss_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, ip,
                  sizeof(ip));
        snprintf(buf, cap, "%s:%u", ip, ct_net_port(a));
    } else {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, ip,
                  sizeof(ip));
        snprintf(buf, cap, "[%s]:%u", ip, ct_net_port(a));
    }
}

/* A bound, non-blocking UDP socket that reports ECN; its port in *port. */
static int open_sock(struct ct_net *n, uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1, fd;

    fd = socket(n->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (n->family == AF_INET)
        setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
    else
        setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &one, sizeof(one));
    if (fill_addr(n->family, n->local, 0, &ss, &len) < 0 ||
        bind(fd, (struct sockaddr *)&ss, len) < 0) {
        close(fd);
        return -1;
    }
    len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
        close(fd);
        return -1;
    }
    *port = ct_net_port(&ss);
    return fd;
}

int ct_net_open(struct ct_net *n, const char *local, const char *iut_host,
                unsigned iut_port, int nent, char *err, size_t errcap)
{
    struct in6_addr a6;

    memset(n, 0, sizeof(*n));
    n->main_fd = -1;
    for (int i = 0; i < CT_MAX_ENTROPIES; i++)
        n->efd[i] = -1;
    n->family = inet_pton(AF_INET6, iut_host, &a6) == 1 ? AF_INET6 : AF_INET;
    snprintf(n->local, sizeof(n->local), "%s",
             local ? local : (n->family == AF_INET ? "127.0.0.1" : "::1"));
    if (fill_addr(n->family, iut_host, iut_port, &n->iut, &n->iut_len) < 0) {
        snprintf(err, errcap, "bad IUT address %s", iut_host);
        return -1;
    }
    n->main_fd = open_sock(n, &n->main_port);
    if (n->main_fd < 0) {
        snprintf(err, errcap, "cannot bind a UDP socket on %s: %s", n->local,
                 strerror(errno));
        return -1;
    }
    if (nent > CT_MAX_ENTROPIES)
        nent = CT_MAX_ENTROPIES;
    for (int i = 0; i < nent; i++) {
        n->efd[i] = open_sock(n, &n->eport[i]);
        if (n->efd[i] < 0) {
            snprintf(err, errcap, "cannot bind entropy socket: %s",
                     strerror(errno));
            ct_net_close(n);
            return -1;
        }
        n->nent++;
    }
    return 0;
}

void ct_net_close(struct ct_net *n)
{
    if (n->main_fd >= 0)
        close(n->main_fd);
    n->main_fd = -1;
    for (int i = 0; i < CT_MAX_ENTROPIES; i++) {
        if (n->efd[i] >= 0)
            close(n->efd[i]);
        n->efd[i] = -1;
    }
    n->nent = 0;
}

int ct_net_send(struct ct_net *n, int fd, const struct sockaddr_storage *to,
                socklen_t tolen, const void *buf, size_t len, int ecn)
{
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
    struct msghdr m;
    struct cmsghdr *cm;
    int tos = ecn & 3;

    memset(&m, 0, sizeof(m));
    memset(&ctl, 0, sizeof(ctl));
    m.msg_name = (void *)(to ? to : &n->iut);
    m.msg_namelen = to ? tolen : n->iut_len;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.b;
    m.msg_controllen = sizeof(ctl.b);
    cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = n->family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
    cm->cmsg_type = n->family == AF_INET ? IP_TOS : IPV6_TCLASS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &tos, sizeof(int));
    for (;;) {
        ssize_t r = sendmsg(fd, &m, 0);
        if (r >= 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            poll(&p, 1, 100);
            continue;
        }
        /* An earlier datagram's ICMP error can surface here: retry once. */
        if (errno == ECONNREFUSED)
            continue;
        return -1;
    }
}

/* Reads one datagram from fd; 1, 0 (nothing) or -1. */
static int read_one(int fd, uint8_t *buf, size_t cap, size_t *len, int *ecn,
                    struct sockaddr_storage *from, socklen_t *fromlen)
{
    union {
        char b[256];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {.iov_base = buf, .iov_len = cap};
    struct msghdr m;
    ssize_t r;

    memset(&m, 0, sizeof(m));
    m.msg_name = from;
    m.msg_namelen = sizeof(*from);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.b;
    m.msg_controllen = sizeof(ctl.b);
    r = recvmsg(fd, &m, MSG_TRUNC);
    if (r < 0) {
        /* ICMP errors for earlier sends (the IUT was gone) are not data. */
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
            errno == ECONNREFUSED)
            return 0;
        return -1;
    }
    *len = (size_t)r > cap ? cap : (size_t)r;
    *fromlen = m.msg_namelen;
    *ecn = -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level == IPPROTO_IP &&
            (c->cmsg_type == IP_TOS || c->cmsg_type == IP_RECVTOS)) {
            uint8_t tos;
            memcpy(&tos, CMSG_DATA(c), 1);
            *ecn = tos & 3;
        } else if (c->cmsg_level == IPPROTO_IPV6 &&
                   c->cmsg_type == IPV6_TCLASS) {
            int tc;
            memcpy(&tc, CMSG_DATA(c), sizeof(tc));
            *ecn = tc & 3;
        }
    }
    return 1;
}

int ct_net_recv(struct ct_net *n, int wait_ms, uint8_t *buf, size_t cap,
                size_t *len, int *ecn, struct sockaddr_storage *from,
                socklen_t *fromlen, int *sock)
{
    struct pollfd pfd[CT_MAX_ENTROPIES + 1];
    int np = 0;

    struct timespec ts;
    int64_t deadline;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    deadline = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + wait_ms;
    pfd[np++] = (struct pollfd){.fd = n->main_fd, .events = POLLIN};
    for (int i = 0; i < n->nent; i++)
        pfd[np++] = (struct pollfd){.fd = n->efd[i], .events = POLLIN};
    for (;;) {
        int64_t left;
        int r;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        left = deadline - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        r = poll(pfd, (nfds_t)np, left > 0 ? (int)left : 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -1 : 0;
        /* Round robin over the sockets, from the one after the last read:
         * a busy MetaRoCE port must not starve the entropy sockets (the
         * planes cases receive one plane on one of them). */
        for (int k = 0; k < np; k++) {
            int i = (n->rr_next + k) % np;
            if (!(pfd[i].revents & (POLLIN | POLLERR)))
                continue;
            r = read_one(pfd[i].fd, buf, cap, len, ecn, from, fromlen);
            if (r != 0) {
                *sock = i - 1;
                n->rr_next = i + 1;
                return r;
            }
        }
        /* Only ICMP errors were pending: wait for the rest of the time. */
    }
}

void ct_net_drain(struct ct_net *n)
{
    static uint8_t buf[65536];
    struct sockaddr_storage from;
    socklen_t fl;
    size_t len;
    int ecn, s;

    while (ct_net_recv(n, 0, buf, sizeof(buf), &len, &ecn, &from, &fl, &s) == 1)
        ;
}
