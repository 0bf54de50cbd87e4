/*
 * test_udp_ethframe.c - the Ethernet/IP/UDP framing of the kernel-bypass
 * datapath (src/udp/ethframe.c): frames it builds parse back to the same
 * packet and ends, over IPv4 and IPv6, with valid checksums; and every
 * malformed frame (foreign EtherType, wrong MAC, fragments, bad IP header,
 * bad lengths, bad checksums, wrong address or port) is dropped and counted
 * under its own cause, never read past its end.  The Internet checksum,
 * summed 8 bytes at a time in host order, agrees with RFC 1071's 16-bit
 * big-endian sum at every length and alignment.  Over IPv4 the UDP
 * checksum may be left 0 (WIRE-13) and is then accepted; a non-zero one
 * is always checked.
 */
#include "../src/udp/ethframe.h"
#include "testutil.h"

static const struct mroce_eth_end A = {{0x02, 0, 0, 0, 0, 0x0a},
                                       {10, 0, 0, 1},
                                       4791};
static const struct mroce_eth_end B = {{0x02, 0, 0, 0, 0, 0x0b},
                                       {10, 0, 0, 2},
                                       4791};

static size_t make(uint8_t *buf, size_t cap, int v6, size_t plen)
{
    size_t hdrs = v6 ? MROCE_ETH_V6_HDRS : MROCE_ETH_V4_HDRS;
    for (size_t i = 0; i < plen; i++)
        buf[hdrs + i] = (uint8_t)(i * 7u + 3u);
    size_t h = mroce_eth_build(buf, cap, v6, &A, &B, 0x02, plen);
    CHECK_EQ(h, hdrs);
    return h + plen;
}

/* Parses a copy of frame with one byte changed; returns the parse result. */
static int mutate(const uint8_t *frame, size_t len, int v6, size_t at,
                  uint8_t val, struct mroce_eth_counters *c)
{
    uint8_t m[2048];
    struct mroce_eth_rx rx;
    memcpy(m, frame, len);
    m[at] = val;
    return mroce_eth_parse(m, len, v6, &B, &rx, c);
}

static void roundtrip(int v6)
{
    uint8_t f[2048];
    size_t len = make(f, sizeof f, v6, 1001);
    struct mroce_eth_rx rx;
    struct mroce_eth_counters c = {0};
    CHECK_EQ(mroce_eth_parse(f, len, v6, &B, &rx, &c), 0);
    CHECK_EQ(c.rx_ok, 1u);
    CHECK_EQ(rx.payload_len, 1001u);
    CHECK_EQ(rx.src.port, 4791u);
    CHECK_EQ(rx.tos, 0x02u);
    CHECK(memcmp(rx.src.mac, A.mac, 6) == 0);
    CHECK(memcmp(rx.src.ip, A.ip, v6 ? 16 : 4) == 0);
    for (size_t i = 0; i < rx.payload_len; i++)
        if (f[rx.payload_off + i] != (uint8_t)(i * 7u + 3u)) {
            CHECK_MSG(0, "payload byte %zu", i);
            break;
        }
    /* Ethernet padding after the datagram is ignored. */
    CHECK_EQ(mroce_eth_parse(f, len + 17, v6, &B, &rx, &c), 0);
    /* Every truncation is short or a length mismatch, never accepted. */
    for (size_t l = 0; l < len; l++)
        CHECK_MSG(mroce_eth_parse(f, l, v6, &B, &rx, &c) == -1, "len %zu", l);
    CHECK_EQ(c.rx_ok, 2u);
}

static void drops_v4(void)
{
    uint8_t f[2048];
    size_t len = make(f, sizeof f, 0, 200);
    struct mroce_eth_counters c = {0};
    CHECK_EQ(mutate(f, len, 0, 5, 0x0c, &c), -1); /* another MAC */
    CHECK_EQ(c.drop_mac, 1u);
    CHECK_EQ(mutate(f, len, 0, 12, 0x08, &c), 0);  /* same byte: ok */
    CHECK_EQ(mutate(f, len, 0, 13, 0x06, &c), -1); /* ARP */
    CHECK_EQ(mutate(f, len, 0, 12, 0x81, &c), -1); /* VLAN tag */
    CHECK_EQ(c.drop_ethertype, 2u);
    CHECK_EQ(mutate(f, len, 0, 14, 0x65, &c), -1); /* version 6 */
    CHECK_EQ(mutate(f, len, 0, 14, 0x44, &c), -1); /* IHL 16 */
    CHECK_EQ(mutate(f, len, 0, 16, 0xff, &c), -1); /* total length */
    CHECK_EQ(mutate(f, len, 0, 22, 0x01, &c), -1); /* TTL: header csum */
    CHECK_EQ(c.drop_ip_hdr, 4u);
    /* A fragment with a valid header checksum: MF, then an offset. */
    for (int k = 0; k < 2; k++) {
        uint8_t m[2048];
        struct mroce_eth_rx rx;
        memcpy(m, f, len);
        m[14 + 6] = k ? 0x40 : 0x60; /* DF|MF */
        m[14 + 7] = k ? 0x10 : 0x00; /* offset 16 */
        m[14 + 10] = m[14 + 11] = 0;
        uint16_t cs = (uint16_t)~mroce_eth_csum_add(0, m + 14, 20);
        m[14 + 10] = (uint8_t)(cs >> 8);
        m[14 + 11] = (uint8_t)cs;
        CHECK_EQ(mroce_eth_parse(m, len, 0, &B, &rx, &c), -1);
    }
    CHECK_EQ(c.drop_fragment, 2u);
    CHECK_EQ(mutate(f, len, 0, 14 + 20 + 3, 0x00, &c), -1); /* port */
    CHECK_EQ(c.drop_port, 1u);
    CHECK_EQ(mutate(f, len, 0, 14 + 20 + 5, 0x10, &c), -1); /* UDP len */
    CHECK_EQ(c.drop_udp_len, 1u);
    CHECK_EQ(mutate(f, len, 0, len - 1, 0x5a, &c), -1); /* payload bit */
    CHECK_EQ(c.drop_udp_csum, 1u);
    CHECK_EQ(c.rx_ok, 1u); /* only the unchanged EtherType byte */
}

static void drops_v6(void)
{
    uint8_t f[2048];
    size_t len = make(f, sizeof f, 1, 100);
    struct mroce_eth_counters c = {0};
    CHECK_EQ(mutate(f, len, 1, 14 + 6, 44, &c), -1); /* fragment header */
    CHECK_EQ(c.drop_fragment, 1u);
    CHECK_EQ(mutate(f, len, 1, 14 + 6, 0, &c), -1); /* hop-by-hop */
    CHECK_EQ(c.drop_proto, 1u);
    CHECK_EQ(mutate(f, len, 1, 14 + 4, 0x7f, &c), -1); /* payload length */
    CHECK_EQ(c.drop_ip_hdr, 1u);
    uint8_t m[2048];
    struct mroce_eth_rx rx;
    memcpy(m, f, len);
    m[14 + 40 + 6] = m[14 + 40 + 7] = 0; /* no checksum: refused on v6 */
    CHECK_EQ(mroce_eth_parse(m, len, 1, &B, &rx, &c), -1);
    CHECK_EQ(c.drop_udp_csum, 1u);
    /* An IPv4 frame on an IPv6 device is a foreign EtherType. */
    size_t l4 = make(m, sizeof m, 0, 100);
    CHECK_EQ(mroce_eth_parse(m, l4, 1, &B, &rx, &c), -1);
    CHECK_EQ(c.drop_ethertype, 1u);
}

static void ip_dst(void)
{
    uint8_t f[2048];
    size_t len = make(f, sizeof f, 0, 64);
    struct mroce_eth_counters c = {0};
    struct mroce_eth_end other = B;
    struct mroce_eth_rx rx;
    other.ip[3] = 9;
    CHECK_EQ(mroce_eth_parse(f, len, 0, &other, &rx, &c), -1);
    CHECK_EQ(c.drop_ip_dst, 1u);
    memset(other.ip, 0, sizeof other.ip); /* any address */
    CHECK_EQ(mroce_eth_parse(f, len, 0, &other, &rx, &c), 0);
    CHECK_EQ(mroce_eth_build(f, 50, 0, &A, &B, 0, 64), 0u); /* too small */
}

/* RFC 1071's sum, one big-endian 16-bit word at a time. */
static uint32_t csum_ref(uint32_t sum, const uint8_t *p, size_t len)
{
    uint64_t s = sum;
    size_t i = 0;
    for (; i + 1 < len; i += 2)
        s += (uint32_t)p[i] << 8 | p[i + 1];
    if (i < len)
        s += (uint32_t)p[i] << 8;
    while (s >> 16)
        s = (s & 0xffffu) + (s >> 16);
    return (uint32_t)s;
}

static void csum(void)
{
    static uint8_t buf[9100];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof buf; i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    unsigned bad = 0;
    for (size_t off = 0; off < 8; off++)
        for (size_t len = 0; len < 300; len++)
            bad += mroce_eth_csum_add(0x1234, buf + off, len) !=
                   csum_ref(0x1234, buf + off, len);
    bad += mroce_eth_csum_add(0, buf, 9000) != csum_ref(0, buf, 9000);
    memset(buf, 0xff, sizeof buf); /* every carry */
    bad += mroce_eth_csum_add(0xffff, buf, 9001) != csum_ref(0xffff, buf, 9001);
    CHECK_EQ(bad, 0u);
}

/* Offload: the builder leaves the IPv4 header checksum 0 and the pseudo
 * header's sum in the UDP field; completing the UDP sum over the datagram
 * as a port does gives a frame that parses.  The port's verdict on
 * receive overrides the software check either way. */
static void offload(int v6)
{
    uint8_t f[2048];
    size_t hdrs = v6 ? MROCE_ETH_V6_HDRS : MROCE_ETH_V4_HDRS;
    for (size_t i = 0; i < 300; i++)
        f[hdrs + i] = (uint8_t)(i * 5u + 1u);
    CHECK_EQ(mroce_eth_build_ex(f, sizeof f, v6, &A, &B, 0, 300, 1), hdrs);
    struct mroce_eth_rx rx;
    struct mroce_eth_counters c = {0};
    uint8_t *ip = f + 14, *udp = f + hdrs - 8;
    if (!v6) {
        CHECK(ip[10] == 0 && ip[11] == 0);
        uint16_t h = (uint16_t)~mroce_eth_csum_add(0, ip, 20);
        ip[10] = (uint8_t)(h >> 8);
        ip[11] = (uint8_t)h;
    }
    /* As the software path sees it, the UDP checksum is wrong ... */
    CHECK_EQ(mroce_eth_parse(f, hdrs + 300, v6, &B, &rx, &c), -1);
    CHECK_EQ(c.drop_udp_csum, 1u);
    /* ... unless the port vouches for it, or completes it. */
    CHECK_EQ(mroce_eth_parse_ex(f, hdrs + 300, v6, &B, &rx, &c, 1), 0);
    uint16_t u = (uint16_t)~mroce_eth_csum_add(0, udp, 308);
    udp[6] = (uint8_t)(u >> 8);
    udp[7] = (uint8_t)u;
    CHECK_EQ(mroce_eth_parse(f, hdrs + 300, v6, &B, &rx, &c), 0);
    CHECK_EQ(rx.payload_len, 300u);
    /* The port's "bad" drops even a frame the software would take. */
    CHECK_EQ(mroce_eth_parse_ex(f, hdrs + 300, v6, &B, &rx, &c, -1), -1);
    CHECK_EQ(c.drop_udp_csum, 2u);
}

/* No UDP checksum (WIRE-13): over IPv4 the field is 0 with a valid IPv4
 * header checksum and the frame parses, payload unread by either side;
 * a non-zero checksum is still checked, so a wrong one drops.  Over IPv6
 * the mode sums it as software does. */
static void csum_none(int v6)
{
    uint8_t f[2048], g[2048];
    size_t hdrs = v6 ? MROCE_ETH_V6_HDRS : MROCE_ETH_V4_HDRS;
    size_t len = make(g, sizeof g, v6, 400); /* software checksums */
    for (size_t i = 0; i < 400; i++)
        f[hdrs + i] = (uint8_t)(i * 7u + 3u);
    CHECK_EQ(mroce_eth_build_ex(f, sizeof f, v6, &A, &B, 0x02, 400,
                                MROCE_ETH_CSUM_NONE),
             hdrs);
    uint8_t *udp = f + hdrs - 8;
    struct mroce_eth_rx rx;
    struct mroce_eth_counters c = {0};
    if (v6) {
        CHECK(memcmp(f, g, len) == 0); /* IPv6: the same frame */
    } else {
        CHECK(udp[6] == 0 && udp[7] == 0);
        CHECK(memcmp(f, g, hdrs - 2) == 0); /* all but the UDP checksum */
        CHECK_EQ((uint16_t)~mroce_eth_csum_add(0, f + 14, 20), 0u);
    }
    CHECK_EQ(mroce_eth_parse(f, len, v6, &B, &rx, &c), 0);
    CHECK_EQ(rx.payload_len, 400u);
    /* IPv4: a changed payload byte is not the UDP layer's to see. */
    f[len - 1] ^= 0x5a;
    CHECK_EQ(mroce_eth_parse(f, len, v6, &B, &rx, &c), v6 ? -1 : 0);
    f[len - 1] ^= 0x5a;
    /* A non-zero checksum is checked: wrong, it drops. */
    udp[6] ^= 0x10;
    udp[7] |= 1;
    CHECK_EQ(mroce_eth_parse(f, len, v6, &B, &rx, &c), -1);
    CHECK_EQ(c.drop_udp_csum, v6 ? 2u : 1u);
    CHECK_EQ(c.rx_ok, v6 ? 1u : 2u);
}

int main(void)
{
    csum();
    csum_none(0);
    csum_none(1);
    offload(0);
    offload(1);
    roundtrip(0);
    roundtrip(1);
    drops_v4();
    drops_v6();
    ip_dst();
    return TESTUTIL_SUMMARY("test_udp_ethframe");
}
