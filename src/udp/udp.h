/*
 * udp.h - the UDP datapath under libmroce: sockets, batching, GSO/GRO, ECN
 * and fault injection, with no protocol knowledge.
 *
 * It sits between the sans-IO engine and the kernel.  It knows the engine's
 * per-packet metadata (struct mre_addr, mre_tx_info, mre_rx_info from
 * mroce/engine.h) and nothing else of the protocol: the library above feeds
 * what it receives to mre_ep_recv() and writes mre_ep_write_pkt() output
 * straight into the datapath's transmit slots.
 *
 * Sockets: one non-blocking receive socket bound to the device's address and
 * port (recvmmsg batches, IP_RECVTOS / IPV6_RECVTCLASS for ECN, UDP_GRO), and
 * a pool of send sockets bound to source ports [src_base, src_base + count),
 * one per path entropy.  Every socket sends with TOS = DSCP << 2 | ECT(0) and
 * the DF bit (no IP fragments, WIRE-13).
 *
 * Transmit: mroce_udp_tx_slot() hands out a buffer in the current batch,
 * mroce_udp_tx_commit() stages the packet written there, mroce_udp_flush()
 * sends the batch: runs of consecutive packets with one entropy, one
 * destination and one size (the last may be shorter) go out as one UDP_SEGMENT
 * (GSO) send; consecutive sends on one socket share a sendmmsg.  The batch
 * flushes itself when full.  A zero-copy packet (mroce_udp_tx_commit_zc)
 * keeps only its headers and CRC in the slot; its payload, the
 * application's memory, is an iovec of its own, read by the kernel's copy
 * at the flush, so each byte is copied once on the way out.
 *
 * Addresses: a struct mre_addr holds a normalised sockaddr_in or
 * sockaddr_in6 (16 or 28 bytes, unused bytes zero) so that equal peers have
 * equal bytes, which the engine compares.
 *
 * Thread safety: none; the library serialises calls under its device lock.
 */
#ifndef MROCE_UDP_H
#define MROCE_UDP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <mroce/engine.h>
#include <mroce/mroce.h>

#include "link.h"

/* Internal to libmroce: not exported from libmroce.so (static linking,
 * as the tests do, still sees them). */
#pragma GCC visibility push(hidden)

struct mroce_udp;

struct mroce_udp_config {
    struct sockaddr_storage local; /* address and port to receive on */
    uint16_t src_port_base;  /* first source port; 0 = pick a free range */
    uint16_t src_port_count; /* send sockets (entropies), 1..4096 */
    uint8_t dscp;            /* 0..63 */
    uint8_t use_gso;         /* UDP_SEGMENT for runs of equal packets */
    uint8_t use_gro;         /* UDP_GRO on the receive socket */
    uint16_t rx_batch;       /* datagrams per recvmmsg, 1..256; 8 */
    uint16_t tx_batch;       /* packets per flush, 1..256; 64 */
    uint32_t slot_size;      /* bytes per transmit slot; MROCE_MAX_PKT_LEN */
    struct mroce_fault tx_fault, rx_fault;
    uint64_t fault_seed; /* 0 = from the clock */
    uint8_t plane;       /* stamped into every mre_rx_info.plane: the
                            device's plane this datapath serves (0) */
    /* A link (link.h) to send and receive through instead of sockets:
     * mroce_udp_open() takes it over (closes it on failure and at
     * mroce_udp_close()); ops NULL = kernel sockets. */
    struct mroce_link link;
};
/* Fills defaults: 127.0.0.1:MROCE_UDP_PORT, automatic source ports (256),
 * GSO and GRO on, batches of 64, no faults. */
void mroce_udp_config_default(struct mroce_udp_config *cfg);

/* Opens the sockets.  Returns 0, MROCE_EINVAL (bad config), MROCE_EADDR
 * (address or a fixed source port range unusable; errno kept), MROCE_ESOCKET
 * (another socket call failed; errno kept) or MROCE_ENOMEM. */
int mroce_udp_open(struct mroce_udp **pu, const struct mroce_udp_config *cfg);
void mroce_udp_close(struct mroce_udp *u);

/* The receive socket, for poll/epoll (readable: datagrams; POLLERR: ICMP
 * errors queued, which mroce_udp_recv() drains). */
int mroce_udp_fd(const struct mroce_udp *u);
uint16_t mroce_udp_port(const struct mroce_udp *u);
uint16_t mroce_udp_src_base(const struct mroce_udp *u);
uint16_t mroce_udp_src_count(const struct mroce_udp *u);
int mroce_udp_family(const struct mroce_udp *u);

/* --- receive --- */
/* Called once per received packet (after GRO splitting and rx faults). */
typedef void (*mroce_udp_rx_fn)(void *user, const uint8_t *pkt, size_t len,
                                const struct mre_rx_info *info);
/* Called for each ICMP error read from the receive socket's error queue:
 * `to` is the destination of the packet that failed, err an errno value
 * (ECONNREFUSED: port unreachable; EHOSTUNREACH...). */
typedef void (*mroce_udp_err_fn)(void *user, const struct mre_addr *to,
                                 int err);
/*
 * mroce_udp_recv delivers held-back (reordered) packets that are due, then
 * reads one recvmmsg batch and delivers it.  Returns the number of packets
 * delivered (0 when nothing was waiting) or MROCE_ESOCKET.  ICMP errors are
 * drained from the error queue and reported through err_fn (may be NULL).
 */
int mroce_udp_recv(struct mroce_udp *u, mroce_udp_rx_fn fn,
                   mroce_udp_err_fn err_fn, void *user, mroce_tstamp now);

/* 1 if the last mroce_udp_recv() found fewer datagrams than its batch
 * holds (the socket was most likely empty after it): another call now
 * would probably be an empty system call. */
int mroce_udp_rx_drained(const struct mroce_udp *u);
/* During a receive callback: 1 if this packet is a GRO segment after the
 * first of its datagram (it arrived with the previous one), else 0. */
int mroce_udp_rx_same_datagram(const struct mroce_udp *u);
/* Reads the receive socket's error queue (call on POLLERR / EPOLLERR);
 * returns the number of errors reported through err_fn. */
int mroce_udp_drain_errors(struct mroce_udp *u, mroce_udp_err_fn err_fn,
                           void *user);

/* Test hook: with on, every packet committed for sending and every one
 * received is dropped (counted as fault_tx_drop / fault_rx_drop), as if
 * the network behind this socket failed. */
void mroce_udp_set_blackhole(struct mroce_udp *u, int on);

/* --- transmit --- */
enum mroce_udp_tx_flags {
    /* Send from the receive socket (its port) instead of the entropy's send
     * socket: the library's CONNECT_REQ, so a listener learns the port to
     * answer (see src/lib/qp.c). */
    MROCE_UDP_TX_FROM_RX = 1,
    /* Send after the packets of this flush that lack the flag: the
     * library's ACKs, so that a reply the application just posted is not
     * queued behind the ACK of the request it answers (loopback sendmsg
     * runs the receiver's network stack inline, ~1 us per packet). */
    MROCE_UDP_TX_LATE = 2,
};
/* A buffer for the next packet (flushes first if the batch is full);
 * *cap receives its size. */
uint8_t *mroce_udp_tx_slot(struct mroce_udp *u, size_t *cap);
/* Stages the len bytes written into the last slot, to info->to from the
 * socket of info->entropy.  Applies tx faults. */
void mroce_udp_tx_commit(struct mroce_udp *u, size_t len,
                         const struct mre_tx_info *info, unsigned flags,
                         mroce_tstamp now);
/* Zero-copy commit (mre_ep_write_pkt_zc): the slot holds hdr_len bytes
 * of headers and then the CRC; the len - hdr_len - 4 bytes at payload go
 * between them on the wire, read by the kernel at the next flush, so the
 * caller keeps them unchanged until then.  payload NULL: a whole packet, as
 * mroce_udp_tx_commit().  With tx faults configured the payload is copied
 * into the slot (faults act on whole packets). */
void mroce_udp_tx_commit_zc(struct mroce_udp *u, size_t len, size_t hdr_len,
                            const uint8_t *payload,
                            const struct mre_tx_info *info, unsigned flags,
                            mroce_tstamp now);
/* Releases held-back packets that are due and sends everything staged.
 * Returns packets handed to the kernel; send errors are counted, and the
 * packet dropped (the engine recovers lost packets). */
int mroce_udp_flush(struct mroce_udp *u, mroce_tstamp now);
/* Packets staged and not yet flushed. */
unsigned mroce_udp_tx_pending(const struct mroce_udp *u);
/* Like mroce_udp_flush(), but the MROCE_UDP_TX_LATE packets stay staged
 * (for the next flush, where they go last).  Returns how many stay. */
unsigned mroce_udp_flush_early(struct mroce_udp *u, mroce_tstamp now);

/* Earliest time a held-back packet is due (MROCE_TSTAMP_INF if none). */
mroce_tstamp mroce_udp_expiry(const struct mroce_udp *u);

void mroce_udp_get_counters(const struct mroce_udp *u,
                            struct mroce_udp_counters *c);

/* --- addresses --- */
/* sockaddr -> normalised mre_addr; 0 or MROCE_EADDR (unknown family). */
int mroce_udp_addr_from_sa(struct mre_addr *a, const struct sockaddr *sa,
                           socklen_t len);
/* mre_addr -> sockaddr; returns its length, 0 if a is not an address. */
socklen_t mroce_udp_addr_to_sa(const struct mre_addr *a,
                               struct sockaddr_storage *ss);
/* Parse a numeric IPv4/IPv6 literal (or a host name from /etc/hosts and
 * the resolver) into a sockaddr of the given family (AF_UNSPEC: any); an
 * IPv4 address for an AF_INET6 device becomes v4-mapped.  0 or MROCE_EADDR. */
int mroce_udp_resolve(const char *host, uint16_t port, int family,
                      struct sockaddr_storage *ss);

#pragma GCC visibility pop

#endif /* MROCE_UDP_H */
