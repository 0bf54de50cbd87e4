/*
 * link.h - the raw datagram seam under the UDP datapath: where its batches
 * meet the network.
 *
 * By default the UDP datapath (udp.c) sends and receives through kernel
 * sockets.  Given a link (mroce_udp_config.link), it sends and receives
 * each UDP datagram through the link's ops instead, keeping everything
 * above (transmit slots, zero-copy gather lists, fault injection, counters)
 * the same: a kernel-bypass datapath (src/dpdk) implements these ops and
 * builds the Ethernet/IP/UDP frames itself (ethframe.h).  With a link the
 * datapath opens no sockets, uses no GSO/GRO, and its source ports are
 * numbers written into frames, not bound sockets.
 */
#ifndef MROCE_LINK_H
#define MROCE_LINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#pragma GCC visibility push(hidden)

/* One received datagram; buf stays valid until the next recv call. */
struct mroce_link_rx {
    uint8_t *buf; /* the UDP payload (a MetaRoCE packet), writable */
    size_t len;
    struct sockaddr_storage from; /* sender's address and source port */
    uint8_t ecn;                  /* low two bits of TOS / traffic class */
};

struct mroce_link_ops {
    /* Receives up to max datagrams into rx[]; returns how many (0: none
     * waiting).  Buffers of the previous call are released first. */
    int (*recv)(void *ctx, struct mroce_link_rx *rx, unsigned max);
    /* Sends one datagram from src_port to `to` whose payload is the
     * concatenation of iov[0..iovcnt), with the given TOS.  Returns 0, or
     * -1 when it was dropped (no buffer, ring full, no neighbour). */
    int (*send)(void *ctx, uint16_t src_port, const struct sockaddr *to,
                const struct iovec *iov, int iovcnt, uint8_t tos);
    /* Makes the datagrams sent so far leave (one burst). */
    void (*flush)(void *ctx);
    /* A descriptor for epoll that is readable whenever the link should be
     * polled (a polling link keeps it always readable). */
    int (*fd)(void *ctx);
    void (*close)(void *ctx);
};

/* A link as the UDP datapath holds it; it owns ctx (closes it). */
struct mroce_link {
    const struct mroce_link_ops *ops;
    void *ctx;
};

#pragma GCC visibility pop

#endif /* MROCE_LINK_H */
