/*
 * net.h - the tester's UDP sockets: one "MetaRoCE port" socket (where the
 * IUT sends everything, and where CONNECT_REQ leaves from) and a pool of
 * entropy sockets (each one source port, i.e. one path entropy).
 */
#ifndef MROCE_CONFORM_NET_H
#define MROCE_CONFORM_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define CT_MAX_ENTROPIES 16

struct ct_net {
    int family;  /* AF_INET or AF_INET6 */
    int main_fd; /* the tester's MetaRoCE port */
    uint16_t main_port;
    int efd[CT_MAX_ENTROPIES]; /* entropy sockets */
    uint16_t eport[CT_MAX_ENTROPIES];
    int nent;
    struct sockaddr_storage iut; /* the IUT's MetaRoCE address */
    socklen_t iut_len;
    char local[64]; /* local IP literal */
    int rr_next;    /* ct_net_recv: socket to look at first (round robin) */
};

/* Opens the sockets on local (NULL: loopback of the IUT's family) and
 * records the IUT address.  0 or -1 with a message in err. */
int ct_net_open(struct ct_net *n, const char *local, const char *iut_host,
                unsigned iut_port, int nent, char *err, size_t errcap);
void ct_net_close(struct ct_net *n);
/* Sends buf from socket fd to `to` (NULL: the IUT) with the given ECN
 * code point in the IP header.  0 or -1. */
int ct_net_send(struct ct_net *n, int fd, const struct sockaddr_storage *to,
                socklen_t tolen, const void *buf, size_t len, int ecn);
/* Waits up to wait_ms for a datagram on any socket.  1 with the datagram,
 * its ECN bits (-1 unknown), source and socket (-1 = main, else entropy
 * index); 0 on timeout; -1 on error. */
int ct_net_recv(struct ct_net *n, int wait_ms, uint8_t *buf, size_t cap,
                size_t *len, int *ecn, struct sockaddr_storage *from,
                socklen_t *fromlen, int *sock);
/* Discards everything waiting. */
void ct_net_drain(struct ct_net *n);
/* "ip:port" of a socket address. */
void ct_net_fmt(const struct sockaddr_storage *a, char *buf, size_t cap);
uint16_t ct_net_port(const struct sockaddr_storage *a);

#endif
