/*
 * dpdk_tx.c - the DPDK link's transmit side: each datagram becomes one
 * frame, its Ethernet, IP and UDP headers written by ethframe.c, queued in
 * a burst that leaves at flush.  The UDP checksum is the port's where it
 * offers the offload, 0 over IPv4 otherwise (WIRE-13; MROCE_DPDK_UDP_CSUM=1
 * sums it), and summed in software over IPv6 (dpdk_port.c decides).
 *
 * A datagram is copied once into an mbuf after its headers, except a
 * zero-copy gather list from the UDP datapath (headers in its slot, the
 * payload where it lies in registered memory, the CRC in its slot) on a
 * port where zero-copy is on (dpdk_port.c decides): the frame is then a
 * chain of three mbufs, the payload attached as an external buffer
 * (rte_pktmbuf_attach_extbuf) whose release the link counts.  The UDP
 * datapath flushes every packet it stages before the engine can complete
 * the work request behind it, and a retransmission attaches the payload
 * again, so the rule that keeps a payload from being read after its
 * completion is the flush's: it returns only once every external buffer
 * it sent is released.  The PMDs zero-copy is used on release a frame
 * inside rte_eth_tx_burst (they copy it out or drop it), so that wait is
 * empty there; a PMD that held one past its cleanup would turn zero-copy
 * off for the rest of the link's life (zc_waits counts the flushes that
 * had to wait).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <mroce/wire.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dpdk_int.h"

void dpdk_tx_resolve(struct dlink *d, const uint8_t eth_dst[6],
                     const struct mroce_arp *a, const struct mroce_nd *n)
{
    if (d->ntx == DPDK_BURST)
        dpdk_tx_flush(d);
    struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
    uint16_t len = a ? MROCE_ARP_FRAME_LEN : MROCE_ND_FRAME_LEN;
    uint8_t *p = m ? (uint8_t *)rte_pktmbuf_append(m, len) : NULL;
    if (!p) {
        d->tx_nombuf++;
        if (m)
            rte_pktmbuf_free(m);
        return;
    }
    if (a)
        (void)mroce_eth_arp_build(p, len, eth_dst, a);
    else
        (void)mroce_eth_nd_build(p, len, d->self.mac, eth_dst, n);
    d->tx[d->ntx++] = m;
    if (a ? a->op == MROCE_ARP_REQUEST : n->type == MROCE_ND_SOLICIT)
        d->arp_req_tx++;
    else
        d->arp_reply_tx++;
}

/* Waits until every external buffer sent is released: the PMD's cleanup
 * of its completed transmissions is asked for, for up to 100 ms.  A
 * payload still held then keeps its zcs[] entry for good and turns
 * zero-copy off, so no entry is ever reused while referenced. */
static void zc_wait_released(struct dlink *d)
{
    if (!__atomic_load_n(&d->zc_out, __ATOMIC_ACQUIRE))
        return;
    d->zc_waits++;
    uint64_t until = rte_get_tsc_cycles() + rte_get_tsc_hz() / 10;
    while (__atomic_load_n(&d->zc_out, __ATOMIC_ACQUIRE)) {
        (void)rte_eth_tx_done_cleanup(d->port_id, 0, 0);
        if (rte_get_tsc_cycles() > until) {
            d->zc = 0;
            return;
        }
    }
}

void dpdk_tx_flush(void *ctx)
{
    struct dlink *d = ctx;
    unsigned sent = 0;
    for (int spins = 0; sent < d->ntx && spins < 64; spins++)
        sent += rte_eth_tx_burst(d->port_id, 0, d->tx + sent,
                                 (uint16_t)(d->ntx - sent));
    for (unsigned i = sent; i < d->ntx; i++) {
        d->tx_ring_full++;
        rte_pktmbuf_free(d->tx[i]);
    }
    d->ntx = 0;
    zc_wait_released(d);
}

/* The free callback of an external payload: runs when the PMD (or a ring
 * refusal) frees the mbuf that points at it. */
static void zc_released(void *addr, void *opaque)
{
    (void)addr;
    struct dpdk_zc *z = opaque;
    __atomic_fetch_sub(&z->d->zc_out, 1, __ATOMIC_RELEASE);
}

/* The frame's UDP checksum (and IPv4 header checksum) over a chain whose
 * segments all start at even offsets of the UDP datagram: the UDP field
 * holds the pseudo header's sum (mroce_eth_build_ex with offload). */
static void csum_chain(struct dlink *d, struct rte_mbuf *head)
{
    uint8_t *f = rte_pktmbuf_mtod(head, uint8_t *);
    uint8_t *ip = f + MROCE_ETH_HDR_LEN;
    uint8_t *udp = ip + (d->family6 ? 40 : 20);
    if (!d->family6) {
        uint16_t c = (uint16_t)~mroce_eth_csum_add(0, ip, 20);
        ip[10] = (uint8_t)(c >> 8);
        ip[11] = (uint8_t)c;
    }
    size_t skip = (size_t)(udp - f);
    uint32_t s = 0;
    for (struct rte_mbuf *m = head; m; m = m->next) {
        const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
        s = mroce_eth_csum_add(s, p + skip, m->data_len - skip);
        skip = 0;
    }
    uint16_t c = (uint16_t)~s;
    if (!c)
        c = 0xffffu; /* 0 means "none" on the wire */
    udp[6] = (uint8_t)(c >> 8);
    udp[7] = (uint8_t)c;
}

/* The datagram iov[0..3) as a chain at tx[] place `at`: headers and
 * iov[0] copied into one mbuf, iov[1] attached where it lies, iov[2] (the
 * CRC) in a third.  Returns the head, or NULL (nothing is held then). */
static struct rte_mbuf *zc_chain(struct dlink *d, const struct iovec *iov,
                                 size_t hdrs, unsigned at)
{
    struct rte_mbuf *h = rte_pktmbuf_alloc(d->pool);
    struct rte_mbuf *x = rte_pktmbuf_alloc(d->ext_pool);
    struct rte_mbuf *t = rte_pktmbuf_alloc(d->pool);
    uint8_t *hp =
        h ? (uint8_t *)rte_pktmbuf_append(h, (uint16_t)(hdrs + iov[0].iov_len))
          : NULL;
    uint8_t *tp = t ? (uint8_t *)rte_pktmbuf_append(t, (uint16_t)iov[2].iov_len)
                    : NULL;
    if (!hp || !x || !tp) {
        rte_pktmbuf_free(h);
        rte_pktmbuf_free(x);
        rte_pktmbuf_free(t);
        return NULL;
    }
    memcpy(hp + hdrs, iov[0].iov_base, iov[0].iov_len);
    memcpy(tp, iov[2].iov_base, iov[2].iov_len);
    struct dpdk_zc *z = &d->zcs[at];
    z->d = d;
    z->shinfo.free_cb = zc_released;
    z->shinfo.fcb_opaque = z;
    rte_mbuf_ext_refcnt_set(&z->shinfo, 1);
    void *pay = iov[1].iov_base;
    rte_iova_t iova = rte_eal_iova_mode() == RTE_IOVA_VA
                          ? (rte_iova_t)(uintptr_t)pay
                          : RTE_BAD_IOVA;
    rte_pktmbuf_attach_extbuf(x, pay, iova, (uint16_t)iov[1].iov_len,
                              &z->shinfo);
    x->data_len = (uint16_t)iov[1].iov_len;
    x->pkt_len = x->data_len;
    __atomic_fetch_add(&d->zc_out, 1, __ATOMIC_RELAXED);
    h->next = x;
    x->next = t;
    h->nb_segs = 3;
    h->pkt_len = (uint32_t)h->data_len + x->data_len + t->data_len;
    return h;
}

/* The datagram copied into one mbuf after room for the headers, or NULL
 * when no mbuf is left. */
static struct rte_mbuf *copy_frame(struct dlink *d, const struct iovec *iov,
                                   int iovcnt, size_t hdrs, size_t len)
{
    struct rte_mbuf *m = rte_pktmbuf_alloc(d->pool);
    if (!m)
        return NULL;
    uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, (uint16_t)(hdrs + len));
    if (!p) {
        rte_pktmbuf_free(m);
        return NULL;
    }
    size_t off = hdrs;
    for (int i = 0; i < iovcnt; i++) {
        memcpy(p + off, iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    return m;
}

int dpdk_tx_send(void *ctx, uint16_t src_port, const struct sockaddr *to,
                 const struct iovec *iov, int iovcnt, uint8_t tos)
{
    struct dlink *d = ctx;
    struct mroce_eth_end dst;
    memset(&dst, 0, sizeof dst);
    if (d->family6 && to->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)to;
        memcpy(dst.ip, &s6->sin6_addr, 16);
        dst.port = ntohs(s6->sin6_port);
    } else if (!d->family6 && to->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)to;
        memcpy(dst.ip, &s4->sin_addr, 4);
        dst.port = ntohs(s4->sin_port);
    } else {
        return -1;
    }
    dpdk_neigh_lookup(d, dst.ip, dst.mac);
    size_t len = 0;
    for (int i = 0; i < iovcnt; i++)
        len += iov[i].iov_len;
    size_t hdrs = d->family6 ? MROCE_ETH_V6_HDRS : MROCE_ETH_V4_HDRS;
    if (hdrs + len > UINT16_MAX)
        return -1;
    if (d->ntx == DPDK_BURST) /* an ARP request took the last place */
        dpdk_tx_flush(d);
    /* Zero-copy: the UDP datapath's gather list, a payload worth it, and
     * where the UDP checksum is summed in software, even lengths before
     * the CRC so that each segment is summed on its own. */
    int sw = d->csum == MROCE_ETH_CSUM_SW;
    int zc = d->zc && iovcnt == 3 && iov[1].iov_len >= DPDK_ZC_MIN &&
             (!sw || (!(iov[0].iov_len & 1) && !(iov[1].iov_len & 1)));
    struct rte_mbuf *m = zc ? zc_chain(d, iov, hdrs, d->ntx)
                            : copy_frame(d, iov, iovcnt, hdrs, len);
    if (!m) {
        d->tx_nombuf++;
        return -1;
    }
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    struct mroce_eth_end src = d->self;
    src.port = src_port;
    /* With a chain only the headers are written here (cap covers the
     * frame; the offload and no-checksum forms read no payload), and a
     * software checksum is summed below. */
    int mode = zc && sw ? MROCE_ETH_CSUM_OFFLOAD : d->csum;
    if (mroce_eth_build_ex(p, hdrs + len, d->family6, &src, &dst, tos, len,
                           mode) != hdrs) {
        rte_pktmbuf_free(m);
        return -1;
    }
    if (zc && sw)
        csum_chain(d, m);
    if (d->csum == MROCE_ETH_CSUM_OFFLOAD) {
        m->l2_len = MROCE_ETH_HDR_LEN;
        m->l3_len = d->family6 ? 40 : 20;
        m->ol_flags |= RTE_MBUF_F_TX_UDP_CKSUM |
                       (d->family6
                            ? RTE_MBUF_F_TX_IPV6
                            : RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM);
    }
    if (zc)
        d->zc_tx++;
    else if (iovcnt == 3)
        d->zc_copy++;
    d->tx[d->ntx++] = m;
    if (d->ntx == DPDK_BURST)
        dpdk_tx_flush(d);
    return 0;
}
