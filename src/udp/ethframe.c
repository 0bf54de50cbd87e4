/*
 * ethframe.c - builds and strictly parses Ethernet / IPv4 / IPv6 / UDP
 * frames around MetaRoCE packets (see ethframe.h), for a datapath that owns
 * the whole frame.  Pure byte manipulation: no OS calls, no allocation.
 */
#include "ethframe.h"

#include <string.h>

#define IPPROTO_UDP_NUM 17u
#define IPV6_FRAG_HDR 44u
#define IPV4_TTL 64u

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

/* The sum is taken in the host's byte order, 8 bytes at a time, and
 * turned into network order at the end: one's-complement addition does not
 * care which byte of a 16-bit word is which, as long as all words agree
 * (RFC 1071, 2.(B)).  Carries out of each 32-bit half collect in the upper
 * bits of the 64-bit accumulators and are folded back at the end. */
uint32_t mroce_eth_csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    uint64_t a = 0, b = 0;
    size_t i = 0;
    for (; i + 16 <= len; i += 16) {
        uint64_t w0, w1;
        memcpy(&w0, p + i, 8);
        memcpy(&w1, p + i + 8, 8);
        a += (w0 & 0xffffffffu) + (w0 >> 32);
        b += (w1 & 0xffffffffu) + (w1 >> 32);
    }
    for (; i + 2 <= len; i += 2) {
        uint16_t h;
        memcpy(&h, p + i, 2);
        a += h;
    }
    if (i < len) { /* the odd last byte, as if followed by a zero */
        uint8_t last[2] = {p[i], 0};
        uint16_t h;
        memcpy(&h, last, 2);
        a += h;
    }
    uint64_t s = (a & 0xffffffffu) + (a >> 32) + (b & 0xffffffffu) + (b >> 32);
    while (s >> 16)
        s = (s & 0xffffu) + (s >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    s = ((s & 0xffu) << 8) | (s >> 8);
#endif
    s += sum;
    while (s >> 16)
        s = (s & 0xffffu) + (s >> 16);
    return (uint32_t)s;
}

static uint16_t csum_final(uint32_t sum)
{
    return (uint16_t)~sum;
}

/* The UDP checksum over the pseudo header, UDP header and payload, with
 * the UDP header's checksum field counted as it stands in `udp`. */
static uint32_t pseudo_sum(int family6, const uint8_t *srcip,
                           const uint8_t *dstip, size_t udp_len)
{
    uint8_t ph[8];
    size_t alen = family6 ? 16u : 4u;
    uint32_t s = mroce_eth_csum_add(0, srcip, alen);
    s = mroce_eth_csum_add(s, dstip, alen);
    put16(ph, 0);
    put16(ph + 2, IPPROTO_UDP_NUM);
    put16(ph + 4, (uint16_t)(udp_len >> 16));
    put16(ph + 6, (uint16_t)udp_len);
    return mroce_eth_csum_add(s, ph, 8);
}

static uint32_t udp_sum(int family6, const uint8_t *srcip, const uint8_t *dstip,
                        const uint8_t *udp, size_t udp_len)
{
    return mroce_eth_csum_add(pseudo_sum(family6, srcip, dstip, udp_len), udp,
                              udp_len);
}

size_t mroce_eth_build(uint8_t *buf, size_t cap, int family6,
                       const struct mroce_eth_end *src,
                       const struct mroce_eth_end *dst, uint8_t tos, size_t len)
{
    return mroce_eth_build_ex(buf, cap, family6, src, dst, tos, len, 0);
}

size_t mroce_eth_build_ex(uint8_t *buf, size_t cap, int family6,
                          const struct mroce_eth_end *src,
                          const struct mroce_eth_end *dst, uint8_t tos,
                          size_t len, int csum)
{
    int offload = csum == MROCE_ETH_CSUM_OFFLOAD;
    int none = csum == MROCE_ETH_CSUM_NONE && !family6; /* IPv6: WIRE-13 */
    size_t hdrs = family6 ? MROCE_ETH_V6_HDRS : MROCE_ETH_V4_HDRS;
    size_t udp_len = len + 8u;
    if (cap < hdrs || len > cap - hdrs || udp_len > 0xffffu - 40u)
        return 0;
    memcpy(buf, dst->mac, 6);
    memcpy(buf + 6, src->mac, 6);
    put16(buf + 12, family6 ? MROCE_ETHERTYPE_IPV6 : MROCE_ETHERTYPE_IPV4);
    uint8_t *ip = buf + MROCE_ETH_HDR_LEN;
    uint8_t *udp;
    if (family6) {
        ip[0] = (uint8_t)(0x60u | tos >> 4);
        ip[1] = (uint8_t)(tos << 4);
        ip[2] = ip[3] = 0;
        put16(ip + 4, (uint16_t)udp_len);
        ip[6] = IPPROTO_UDP_NUM;
        ip[7] = IPV4_TTL;
        memcpy(ip + 8, src->ip, 16);
        memcpy(ip + 24, dst->ip, 16);
        udp = ip + 40;
    } else {
        ip[0] = 0x45;
        ip[1] = tos;
        put16(ip + 2, (uint16_t)(20u + udp_len));
        put16(ip + 4, 0);      /* identification: unused with DF */
        put16(ip + 6, 0x4000); /* DF, never fragmented (WIRE-13) */
        ip[8] = IPV4_TTL;
        ip[9] = IPPROTO_UDP_NUM;
        put16(ip + 10, 0);
        memcpy(ip + 12, src->ip, 4);
        memcpy(ip + 16, dst->ip, 4);
        if (!offload)
            put16(ip + 10, csum_final(mroce_eth_csum_add(0, ip, 20)));
        udp = ip + 20;
    }
    put16(udp, src->port);
    put16(udp + 2, dst->port);
    put16(udp + 4, (uint16_t)udp_len);
    put16(udp + 6, 0);
    if (none)
        return hdrs;
    if (offload) { /* the pseudo header's sum, not complemented */
        put16(udp + 6,
              (uint16_t)pseudo_sum(family6, family6 ? ip + 8 : ip + 12,
                                   family6 ? ip + 24 : ip + 16, udp_len));
        return hdrs;
    }
    uint16_t cs = csum_final(udp_sum(family6, family6 ? ip + 8 : ip + 12,
                                     family6 ? ip + 24 : ip + 16, udp,
                                     udp_len));
    put16(udp + 6, cs ? cs : 0xffffu); /* 0 means "none" on the wire */
    return hdrs;
}

static int drop(uint64_t *ctr)
{
    (*ctr)++;
    return -1;
}

static int addr_any(const uint8_t *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i])
            return 0;
    return 1;
}

int mroce_eth_parse(const uint8_t *frame, size_t len, int family6,
                    const struct mroce_eth_end *self, struct mroce_eth_rx *rx,
                    struct mroce_eth_counters *c)
{
    return mroce_eth_parse_ex(frame, len, family6, self, rx, c, 0);
}

int mroce_eth_parse_ex(const uint8_t *frame, size_t len, int family6,
                       const struct mroce_eth_end *self,
                       struct mroce_eth_rx *rx, struct mroce_eth_counters *c,
                       int udp_csum)
{
    static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    if (len < MROCE_ETH_HDR_LEN)
        return drop(&c->drop_short);
    if (memcmp(frame, self->mac, 6) != 0 && memcmp(frame, bcast, 6) != 0)
        return drop(&c->drop_mac);
    uint16_t et = get16(frame + 12);
    if (et != (family6 ? MROCE_ETHERTYPE_IPV6 : MROCE_ETHERTYPE_IPV4))
        return drop(&c->drop_ethertype);
    const uint8_t *ip = frame + MROCE_ETH_HDR_LEN;
    size_t room = len - MROCE_ETH_HDR_LEN;
    const uint8_t *udp, *sip, *dip;
    size_t udp_room, alen;
    if (family6) {
        if (room < 40u + 8u)
            return drop(&c->drop_short);
        if ((ip[0] >> 4) != 6)
            return drop(&c->drop_ip_hdr);
        size_t plen = get16(ip + 4);
        if (plen > room - 40u)
            return drop(&c->drop_ip_hdr);
        if (ip[6] == IPV6_FRAG_HDR)
            return drop(&c->drop_fragment);
        if (ip[6] != IPPROTO_UDP_NUM)
            return drop(&c->drop_proto);
        rx->tos = (uint8_t)((ip[0] & 0x0fu) << 4 | ip[1] >> 4);
        sip = ip + 8;
        dip = ip + 24;
        alen = 16;
        udp = ip + 40;
        udp_room = plen;
    } else {
        if (room < 20u + 8u)
            return drop(&c->drop_short);
        size_t ihl = (size_t)(ip[0] & 0x0fu) * 4u;
        size_t tot = get16(ip + 2);
        if ((ip[0] >> 4) != 4 || ihl < 20u || tot < ihl || tot > room ||
            room - ihl < 8u || csum_final(mroce_eth_csum_add(0, ip, ihl)) != 0)
            return drop(&c->drop_ip_hdr);
        if ((get16(ip + 6) & 0x3fffu) != 0) /* MF or a fragment offset */
            return drop(&c->drop_fragment);
        if (ip[9] != IPPROTO_UDP_NUM)
            return drop(&c->drop_proto);
        rx->tos = ip[1];
        sip = ip + 12;
        dip = ip + 16;
        alen = 4;
        udp = ip + ihl;
        udp_room = tot - ihl;
    }
    if (!addr_any(self->ip, alen) && memcmp(dip, self->ip, alen) != 0)
        return drop(&c->drop_ip_dst);
    if (udp_room < 8u)
        return drop(&c->drop_udp_len);
    size_t ulen = get16(udp + 4);
    if (ulen < 8u || ulen != udp_room)
        return drop(&c->drop_udp_len);
    if (get16(udp + 2) != self->port)
        return drop(&c->drop_port);
    uint16_t cs = get16(udp + 6);
    if (udp_csum < 0 ||
        (udp_csum == 0 &&
         (cs == 0 ? family6
                  : csum_final(udp_sum(family6, sip, dip, udp, ulen)) != 0)))
        return drop(&c->drop_udp_csum);
    memset(&rx->src, 0, sizeof rx->src);
    memcpy(rx->src.mac, frame + 6, 6);
    memcpy(rx->src.ip, sip, alen);
    rx->src.port = get16(udp);
    rx->family6 = (uint8_t)(family6 != 0);
    rx->payload_off = (size_t)(udp + 8 - frame);
    rx->payload_len = ulen - 8u;
    c->rx_ok++;
    return 0;
}

int mroce_eth_arp_parse(const uint8_t *frame, size_t len, struct mroce_arp *a,
                        struct mroce_eth_counters *c)
{
    /* htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4 */
    static const uint8_t ether_ipv4[6] = {0, 1, 8, 0, 6, 4};
    const uint8_t *p = frame + MROCE_ETH_HDR_LEN;
    if (len < MROCE_ETH_HDR_LEN + 28u ||
        get16(frame + 12) != MROCE_ETHERTYPE_ARP ||
        memcmp(p, ether_ipv4, 6) != 0)
        return drop(&c->drop_arp);
    a->op = get16(p + 6);
    if ((a->op != MROCE_ARP_REQUEST && a->op != MROCE_ARP_REPLY) ||
        (p[8] & 1u) != 0) /* a group sender MAC: never a neighbour */
        return drop(&c->drop_arp);
    memcpy(a->sha, p + 8, 6);
    memcpy(a->spa, p + 14, 4);
    memcpy(a->tha, p + 18, 6);
    memcpy(a->tpa, p + 24, 4);
    c->arp_ok++;
    return 0;
}

size_t mroce_eth_arp_build(uint8_t *buf, size_t cap, const uint8_t eth_dst[6],
                           const struct mroce_arp *a)
{
    static const uint8_t ether_ipv4[6] = {0, 1, 8, 0, 6, 4};
    if (cap < MROCE_ARP_FRAME_LEN)
        return 0;
    memset(buf, 0, MROCE_ARP_FRAME_LEN);
    memcpy(buf, eth_dst, 6);
    memcpy(buf + 6, a->sha, 6);
    put16(buf + 12, MROCE_ETHERTYPE_ARP);
    uint8_t *p = buf + MROCE_ETH_HDR_LEN;
    memcpy(p, ether_ipv4, 6);
    put16(p + 6, a->op);
    memcpy(p + 8, a->sha, 6);
    memcpy(p + 14, a->spa, 4);
    memcpy(p + 18, a->tha, 6);
    memcpy(p + 24, a->tpa, 4);
    return MROCE_ARP_FRAME_LEN;
}

#define ICMPV6 58u

int mroce_eth_nd_parse(const uint8_t *frame, size_t len, struct mroce_nd *n,
                       struct mroce_eth_counters *c)
{
    const uint8_t *ip = frame + MROCE_ETH_HDR_LEN;
    if (len < MROCE_ETH_HDR_LEN + 40u + 24u ||
        get16(frame + 12) != MROCE_ETHERTYPE_IPV6 || (ip[0] >> 4) != 6 ||
        ip[6] != ICMPV6 || ip[7] != 255u)
        return drop(&c->drop_nd);
    size_t plen = get16(ip + 4);
    const uint8_t *m = ip + 40;
    if (plen < 24u || plen > len - MROCE_ETH_HDR_LEN - 40u ||
        (m[0] != MROCE_ND_SOLICIT && m[0] != MROCE_ND_ADVERT) || m[1] != 0)
        return drop(&c->drop_nd);
    uint8_t ph[8] = {0, 0,     (uint8_t)(plen >> 8), (uint8_t)plen, 0, 0,
                     0, ICMPV6};
    uint32_t sum = mroce_eth_csum_add(0, ip + 8, 32);
    sum = mroce_eth_csum_add(sum, ph, 8);
    if (csum_final(mroce_eth_csum_add(sum, m, plen)) != 0 ||
        m[8] == 0xff) /* the target is never a multicast address */
        return drop(&c->drop_nd);
    n->type = m[0];
    memcpy(n->src, ip + 8, 16);
    memcpy(n->dst, ip + 24, 16);
    memcpy(n->target, m + 8, 16);
    n->has_mac = 0;
    /* Options: type, length in 8-byte units (never 0), value. */
    uint8_t want = m[0] == MROCE_ND_SOLICIT ? 1u : 2u;
    for (size_t o = 24; o < plen;) {
        if (plen - o < 2u)
            return drop(&c->drop_nd);
        size_t ol = (size_t)m[o + 1] * 8u;
        if (ol == 0 || ol > plen - o)
            return drop(&c->drop_nd);
        if (m[o] == want && ol == 8u && (m[o + 2] & 1u) == 0) {
            memcpy(n->mac, m + o + 2, 6);
            n->has_mac = 1;
        }
        o += ol;
    }
    c->nd_ok++;
    return 0;
}

size_t mroce_eth_nd_build(uint8_t *buf, size_t cap, const uint8_t mac[6],
                          const uint8_t eth_dst[6], const struct mroce_nd *n)
{
    if (cap < MROCE_ND_FRAME_LEN)
        return 0;
    memset(buf, 0, MROCE_ND_FRAME_LEN);
    uint8_t *ip = buf + MROCE_ETH_HDR_LEN;
    uint8_t *m = ip + 40;
    if (n->type == MROCE_ND_SOLICIT) {
        /* ff02::1:ffXX:XXXX and 33:33:ff:XX:XX:XX from the target */
        static const uint8_t snm[13] = {0xff, 2, 0, 0, 0, 0,   0,
                                        0,    0, 0, 0, 1, 0xff};
        memcpy(ip + 24, snm, 13);
        memcpy(ip + 37, n->target + 13, 3);
        buf[0] = buf[1] = 0x33;
        buf[2] = 0xff;
        memcpy(buf + 3, n->target + 13, 3);
    } else {
        memcpy(ip + 24, n->dst, 16);
        memcpy(buf, eth_dst, 6);
        m[4] = 0x60; /* Solicited, Override */
    }
    memcpy(buf + 6, mac, 6);
    put16(buf + 12, MROCE_ETHERTYPE_IPV6);
    ip[0] = 0x60;
    put16(ip + 4, 32);
    ip[6] = ICMPV6;
    ip[7] = 255;
    memcpy(ip + 8, n->src, 16);
    m[0] = n->type;
    memcpy(m + 8, n->target, 16);
    m[24] = n->type == MROCE_ND_SOLICIT ? 1u : 2u;
    m[25] = 1;
    memcpy(m + 26, mac, 6);
    uint8_t ph[8] = {0, 0, 0, 32, 0, 0, 0, ICMPV6};
    uint32_t sum = mroce_eth_csum_add(0, ip + 8, 32);
    sum = mroce_eth_csum_add(sum, ph, 8);
    put16(m + 2, csum_final(mroce_eth_csum_add(sum, m, 32)));
    return MROCE_ND_FRAME_LEN;
}
