/*
 * dpdk_int.h - what the DPDK link's files share: the link's state (one
 * ethdev port, one receive and one transmit queue, its mbuf pools, the
 * neighbour table and the counters) and the internal functions each file
 * offers the others.
 *
 * dpdk_port.c opens EAL and the port and closes it; dpdk_tx.c builds and
 * sends frames (zero-copy from registered memory where the port allows);
 * dpdk_rx.c parses received frames and answers ARP and Neighbor
 * Discovery; dpdk_neigh.c holds the neighbour table.
 */
#ifndef MROCE_DPDK_INT_H
#define MROCE_DPDK_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <rte_mbuf.h>

#include "ethframe.h"
#include "link.h"

#pragma GCC visibility push(hidden)

#define DPDK_BURST 64
#define DPDK_NB_MBUF 4095
#define DPDK_RING_SIZE 1024
/* Room for a jumbo frame in one segment: the DPDK datapath carries
 * packets of up to 9 KiB (MTU <= 9000). */
#define DPDK_DATA_ROOM (RTE_PKTMBUF_HEADROOM + 9216)
#define DPDK_MAX_NEIGH 64
/* Payloads shorter than this are copied even where zero-copy is on: two
 * more mbufs per frame cost more than copying a few hundred bytes. */
#define DPDK_ZC_MIN 1024u

struct dpdk_neigh {
    uint8_t ip[16];
    uint8_t mac[6];
    uint8_t resolved; /* 0: asked by ARP, sent to broadcast meanwhile */
    uint64_t asked;   /* TSC of the last ARP request */
};

/* One zero-copy payload in flight: the shared info its external mbuf
 * points at, and the link whose count its release lowers. */
struct dpdk_zc {
    struct rte_mbuf_ext_shared_info shinfo;
    struct dlink *d;
};

struct dlink {
    uint16_t port_id;
    int family6;
    int evfd;
    struct rte_mempool *pool;
    struct rte_mempool *ext_pool; /* data-less mbufs for external buffers */
    struct mroce_eth_end self;
    struct rte_mbuf *tx[DPDK_BURST];
    unsigned ntx;
    struct rte_mbuf *held[DPDK_BURST]; /* the last receive's mbufs */
    unsigned nheld;
    uint8_t *linear; /* a multi-segment frame, made contiguous */
    struct dpdk_neigh neigh[DPDK_MAX_NEIGH];
    unsigned nneigh, neigh_next;
    struct mroce_eth_counters ec;
    uint64_t tx_nombuf, tx_ring_full, rx_multiseg;
    uint64_t arp_req_tx, arp_reply_tx;
    int memif;            /* a memif port: parked at close (dpdk_port.c) */
    int tx_csum, rx_csum; /* the port computes / checks the checksums */
    /* How data frames carry their checksums (MROCE_ETH_CSUM_*): the
     * port's offload, else over IPv4 no UDP checksum (WIRE-13) unless
     * MROCE_DPDK_UDP_CSUM=1, else software. */
    int csum;
    uint64_t rx_csum_good; /* UDP checksums the port vouched for */
    uint64_t rx_csum_zero; /* IPv4 frames accepted with no UDP checksum */
    /* Zero-copy transmit (dpdk_tx.c): on where the PMD copies or sends a
     * frame before rte_eth_tx_burst returns. */
    int zc;
    struct dpdk_zc zcs[DPDK_BURST]; /* by place in tx[] */
    uint32_t zc_out;                /* external buffers not yet released */
    uint64_t zc_tx, zc_copy;        /* payloads sent in place / copied */
    uint64_t zc_waits;              /* flushes that waited for a release */
};

/* dpdk_tx.c */

/* Sends the frames queued in d->tx (one burst, retried while the ring
 * takes some), drops and counts those the ring refuses, and returns once
 * every zero-copy payload among them is released, so that no payload is
 * read after its work request completes. */
void dpdk_tx_flush(void *ctx);
/* The link's send op (link.h): one datagram, copied into one mbuf or, for
 * a zero-copy gather list, chained with its payload where it lies. */
int dpdk_tx_send(void *ctx, uint16_t src_port, const struct sockaddr *to,
                 const struct iovec *iov, int iovcnt, uint8_t tos);
/* Queues an ARP frame (a) or an ND one (n) to eth_dst in the burst;
 * counts tx_nombuf when no mbuf is left. */
void dpdk_tx_resolve(struct dlink *d, const uint8_t eth_dst[6],
                     const struct mroce_arp *a, const struct mroce_nd *n);

/* dpdk_rx.c */

/* The link's recv op (link.h): one burst, parsed strictly; ARP and ND
 * frames are answered here and not returned. */
int dpdk_rx_recv(void *ctx, struct mroce_link_rx *rx, unsigned max);
/* Frees the mbufs the last receive handed out. */
void dpdk_rx_release(struct dlink *d);

/* dpdk_neigh.c */

/* The entry for ip, or NULL. */
struct dpdk_neigh *dpdk_neigh_find(struct dlink *d, const uint8_t *ip);
/* Records ip at mac, resolved (replacing the oldest entry when full). */
void dpdk_neigh_set(struct dlink *d, const uint8_t *ip, const uint8_t *mac);
/* Parses "IP=MAC,IP=MAC" into the table; returns 0, or -1 on a malformed
 * entry. */
int dpdk_neigh_parse(struct dlink *d, const char *spec);
/* Writes the MAC to send to ip: the resolved one, or broadcast while an
 * ARP request or Neighbor Solicitation (repeated every 100 ms) asks. */
void dpdk_neigh_lookup(struct dlink *d, const uint8_t *ip, uint8_t mac[6]);
/* Parses "aa:bb:cc:dd:ee:ff"; returns 0, or -1. */
int dpdk_neigh_parse_mac(const char *s, uint8_t mac[6]);

extern const uint8_t dpdk_bcast_mac[6];

#pragma GCC visibility pop

#endif /* MROCE_DPDK_INT_H */
