/*
 * dpdk_rx.c - the DPDK link's receive side: one burst from the port's
 * receive queue, each frame parsed strictly (ethframe.c: foreign
 * EtherTypes, wrong MACs, fragments, bad IP/UDP headers are dropped and
 * counted), and the UDP payload handed to the library inside its mbuf,
 * where the engine's placement into registered memory is the one copy.
 * The mbufs stay held until the next receive call.  ARP and IPv6
 * Neighbor Discovery frames are answered here and teach the neighbour
 * table (dpdk_neigh.c).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <mroce/wire.h>

#include <rte_ethdev.h>

#include "dpdk_int.h"

/* An ARP frame: a request for our address is answered, and a request or
 * reply aimed at our address teaches the sender's MAC. */
static void arp_in(struct dlink *d, const uint8_t *f, size_t len)
{
    struct mroce_arp a;
    if (memcmp(f, d->self.mac, 6) != 0 && memcmp(f, dpdk_bcast_mac, 6) != 0) {
        d->ec.drop_mac++;
        return;
    }
    if (mroce_eth_arp_parse(f, len, &a, &d->ec) < 0 ||
        memcmp(a.tpa, d->self.ip, 4) != 0)
        return;
    static const uint8_t zero4[4];
    if (memcmp(a.spa, zero4, 4) != 0) /* not an address probe */
        dpdk_neigh_set(d, a.spa, a.sha);
    if (a.op != MROCE_ARP_REQUEST)
        return;
    struct mroce_arp r;
    r.op = MROCE_ARP_REPLY;
    memcpy(r.sha, d->self.mac, 6);
    memcpy(r.spa, d->self.ip, 4);
    memcpy(r.tha, a.sha, 6);
    memcpy(r.tpa, a.spa, 4);
    dpdk_tx_resolve(d, a.sha, &r, NULL);
}

/* An ICMPv6 frame: a solicitation for our address is answered and teaches
 * the solicitor's MAC; an advertisement teaches the target's.  Other
 * ICMPv6 is dropped and counted. */
static void nd_in(struct dlink *d, const uint8_t *f, size_t len)
{
    struct mroce_nd n;
    if (memcmp(f, d->self.mac, 6) != 0 && memcmp(f, dpdk_bcast_mac, 6) != 0 &&
        !(f[0] == 0x33 && f[1] == 0x33 && f[2] == 0xff &&
          memcmp(f + 3, d->self.ip + 13, 3) == 0)) {
        d->ec.drop_mac++;
        return;
    }
    if (mroce_eth_nd_parse(f, len, &n, &d->ec) < 0)
        return;
    if (n.type == MROCE_ND_ADVERT) {
        /* only for a neighbour we know or asked about */
        if (n.has_mac && dpdk_neigh_find(d, n.target))
            dpdk_neigh_set(d, n.target, n.mac);
        return;
    }
    if (memcmp(n.target, d->self.ip, 16) != 0)
        return;
    static const uint8_t zero16[16];
    int dad = memcmp(n.src, zero16, 16) == 0; /* a duplicate-address probe */
    if (dad)
        return;
    if (n.has_mac)
        dpdk_neigh_set(d, n.src, n.mac);
    struct mroce_nd r;
    memset(&r, 0, sizeof r);
    r.type = MROCE_ND_ADVERT;
    memcpy(r.src, d->self.ip, 16);
    memcpy(r.dst, n.src, 16);
    memcpy(r.target, d->self.ip, 16);
    dpdk_tx_resolve(d, n.has_mac ? n.mac : f + 6, NULL, &r);
}

void dpdk_rx_release(struct dlink *d)
{
    for (unsigned i = 0; i < d->nheld; i++)
        rte_pktmbuf_free(d->held[i]);
    d->nheld = 0;
}

/* The sender's address and port as a sockaddr. */
static void set_from(struct dlink *d, const struct mroce_eth_rx *er,
                     struct sockaddr_storage *from)
{
    memset(from, 0, sizeof *from);
    if (d->family6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)from;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(er->src.port);
        memcpy(&s6->sin6_addr, er->src.ip, 16);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)from;
        s4->sin_family = AF_INET;
        s4->sin_port = htons(er->src.port);
        memcpy(&s4->sin_addr, er->src.ip, 4);
    }
}

/* Whether frame f (at least its Ethernet header long) has EtherType et. */
static int ethertype_is(const uint8_t *f, unsigned et)
{
    return f[12] == et >> 8 && f[13] == (et & 0xff);
}

int dpdk_rx_recv(void *ctx, struct mroce_link_rx *rx, unsigned max)
{
    struct dlink *d = ctx;
    struct rte_mbuf *m[DPDK_BURST];
    dpdk_rx_release(d);
    if (max > DPDK_BURST)
        max = DPDK_BURST;
    unsigned n = rte_eth_rx_burst(d->port_id, 0, m, (uint16_t)max);
    unsigned out = 0, lin_used = 0, arps = 0;
    for (unsigned i = 0; i < n; i++) {
        uint8_t *f = rte_pktmbuf_mtod(m[i], uint8_t *);
        size_t len = rte_pktmbuf_pkt_len(m[i]);
        size_t seg = rte_pktmbuf_data_len(m[i]);
        if (!d->family6 && seg >= MROCE_ETH_HDR_LEN &&
            ethertype_is(f, MROCE_ETHERTYPE_ARP)) {
            arp_in(d, f, seg);
            rte_pktmbuf_free(m[i]);
            arps++;
            continue;
        }
        if (d->family6 && seg >= MROCE_ETH_V6_HDRS &&
            ethertype_is(f, MROCE_ETHERTYPE_IPV6) && f[14 + 6] == 58) {
            nd_in(d, f, seg);
            rte_pktmbuf_free(m[i]);
            arps++;
            continue;
        }
        if (m[i]->nb_segs > 1) {
            /* One linear buffer per burst: later chained frames wait for
             * the next call's buffer, so they are dropped and counted. */
            if (lin_used || len > MROCE_MAX_PKT_LEN + 128) {
                d->rx_multiseg++;
                rte_pktmbuf_free(m[i]);
                continue;
            }
            f = (uint8_t *)rte_pktmbuf_read(m[i], 0, (uint32_t)len, d->linear);
            lin_used = 1;
        }
        struct mroce_eth_rx er;
        int verdict = 0;
        if (d->rx_csum) {
            uint64_t l4 = m[i]->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_MASK;
            verdict = l4 == RTE_MBUF_F_RX_L4_CKSUM_GOOD  ? 1
                      : l4 == RTE_MBUF_F_RX_L4_CKSUM_BAD ? -1
                                                         : 0;
        }
        if (!f || mroce_eth_parse_ex(f, len, d->family6, &d->self, &er, &d->ec,
                                     verdict) < 0) {
            rte_pktmbuf_free(m[i]);
            continue;
        }
        d->rx_csum_good += verdict > 0;
        d->rx_csum_zero += !f[er.payload_off - 2] && !f[er.payload_off - 1];
        dpdk_neigh_set(d, er.src.ip, er.src.mac);
        struct mroce_link_rx *r = &rx[out++];
        set_from(d, &er, &r->from);
        r->buf = f + er.payload_off;
        r->len = er.payload_len;
        r->ecn = er.tos & 3;
        d->held[d->nheld++] = m[i];
    }
    if (arps)
        dpdk_tx_flush(d); /* replies leave now, not with the next data */
    return (int)out;
}
