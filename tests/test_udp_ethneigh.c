/*
 * test_udp_ethneigh.c - the neighbour frames of the kernel-bypass datapath
 * (src/udp/ethframe.c): ARP requests and replies and IPv6 Neighbor
 * Solicitations and Advertisements it builds parse back to what was
 * built, with valid checksums and the solicited-node multicast address;
 * and malformed ones (short, not IPv4 over Ethernet, unknown operation,
 * multicast sender, wrong hop limit or checksum, other ICMPv6, bad option
 * lengths) are dropped and counted, never read past their end.
 */
#include "../src/udp/ethframe.h"
#include "testutil.h"

static const uint8_t MAC_A[6] = {0x02, 0, 0, 0, 0, 0x0a};
static const uint8_t BCAST[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static void arp(void)
{
    uint8_t f[128];
    struct mroce_arp a = {MROCE_ARP_REQUEST,
                          {0x02, 0, 0, 0, 0, 0x0a},
                          {10, 0, 0, 1},
                          {0},
                          {10, 0, 0, 2}},
                     b;
    struct mroce_eth_counters c = {0};
    CHECK_EQ(mroce_eth_arp_build(f, 59, BCAST, &a), 0u); /* too small */
    CHECK_EQ(mroce_eth_arp_build(f, sizeof f, BCAST, &a),
             (size_t)MROCE_ARP_FRAME_LEN);
    CHECK(memcmp(f, BCAST, 6) == 0 && memcmp(f + 6, MAC_A, 6) == 0);
    CHECK(f[12] == 0x08 && f[13] == 0x06);
    CHECK_EQ(mroce_eth_arp_parse(f, MROCE_ARP_FRAME_LEN, &b, &c), 0);
    CHECK_EQ(c.arp_ok, 1u);
    CHECK_EQ(b.op, MROCE_ARP_REQUEST);
    CHECK(memcmp(b.sha, a.sha, 6) == 0 && memcmp(b.spa, a.spa, 4) == 0 &&
          memcmp(b.tpa, a.tpa, 4) == 0);
    /* 42 bytes (unpadded) are enough; 41 are not. */
    CHECK_EQ(mroce_eth_arp_parse(f, 42, &b, &c), 0);
    CHECK_EQ(mroce_eth_arp_parse(f, 41, &b, &c), -1);
    CHECK_EQ(c.drop_arp, 1u);
    uint8_t m[128];
    /* Each one-byte fault in hardware type, protocol, lengths, operation
     * or a multicast sender MAC is a drop. */
    static const struct {
        size_t at;
        uint8_t val;
    } bad[] = {{15, 6}, {16, 0x86}, {18, 8}, {19, 16}, {21, 3}, {22, 0x01}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(m, f, MROCE_ARP_FRAME_LEN);
        m[bad[i].at] = bad[i].val;
        CHECK_EQ(mroce_eth_arp_parse(m, MROCE_ARP_FRAME_LEN, &b, &c), -1);
    }
    CHECK_EQ(c.drop_arp, 7u);
    a.op = MROCE_ARP_REPLY;
    CHECK_EQ(mroce_eth_arp_build(f, sizeof f, MAC_A, &a),
             (size_t)MROCE_ARP_FRAME_LEN);
    CHECK_EQ(mroce_eth_arp_parse(f, MROCE_ARP_FRAME_LEN, &b, &c), 0);
    CHECK_EQ(b.op, MROCE_ARP_REPLY);
}

static void nd(void)
{
    uint8_t f[128], m[128];
    struct mroce_nd n, r;
    struct mroce_eth_counters c = {0};
    memset(&n, 0, sizeof n);
    n.type = MROCE_ND_SOLICIT;
    n.src[0] = 0xfd;
    n.src[15] = 1;
    n.target[0] = 0xfd;
    n.target[13] = 0xab;
    n.target[14] = 0xcd;
    n.target[15] = 2;
    CHECK_EQ(mroce_eth_nd_build(f, 85, MAC_A, BCAST, &n), 0u);
    CHECK_EQ(mroce_eth_nd_build(f, sizeof f, MAC_A, BCAST, &n),
             (size_t)MROCE_ND_FRAME_LEN);
    /* To the target's solicited-node multicast MAC and address. */
    static const uint8_t snm_mac[6] = {0x33, 0x33, 0xff, 0xab, 0xcd, 2};
    CHECK(memcmp(f, snm_mac, 6) == 0);
    CHECK(f[14 + 24] == 0xff && f[14 + 25] == 2 && f[14 + 36] == 0xff &&
          f[14 + 39] == 2);
    CHECK_EQ(mroce_eth_nd_parse(f, MROCE_ND_FRAME_LEN, &r, &c), 0);
    CHECK_EQ(c.nd_ok, 1u);
    CHECK_EQ(r.type, MROCE_ND_SOLICIT);
    CHECK(r.has_mac && memcmp(r.mac, MAC_A, 6) == 0);
    CHECK(memcmp(r.target, n.target, 16) == 0 && memcmp(r.src, n.src, 16) == 0);
    /* Hop limit, checksum, type, code, option length 0, a truncated
     * frame: each a drop. */
    static const struct {
        size_t at;
        uint8_t val;
    } bad[] = {{21, 64}, {56, 0x12}, {54, 128}, {55, 1}, {79, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(m, f, MROCE_ND_FRAME_LEN);
        m[bad[i].at] = bad[i].val;
        CHECK_EQ(mroce_eth_nd_parse(m, MROCE_ND_FRAME_LEN, &r, &c), -1);
    }
    CHECK_EQ(mroce_eth_nd_parse(f, MROCE_ND_FRAME_LEN - 10, &r, &c), -1);
    CHECK_EQ(c.drop_nd, 6u);
    /* An advertisement back, unicast, with S and O. */
    n.type = MROCE_ND_ADVERT;
    memcpy(n.dst, n.src, 16);
    CHECK_EQ(mroce_eth_nd_build(f, sizeof f, MAC_A, MAC_A, &n),
             (size_t)MROCE_ND_FRAME_LEN);
    CHECK(memcmp(f, MAC_A, 6) == 0 && f[14 + 44] == 0x60);
    CHECK_EQ(mroce_eth_nd_parse(f, MROCE_ND_FRAME_LEN, &r, &c), 0);
    CHECK_EQ(r.type, MROCE_ND_ADVERT);
    CHECK(r.has_mac && memcmp(r.mac, MAC_A, 6) == 0);
}

int main(void)
{
    arp();
    nd();
    return TESTUTIL_SUMMARY("test_udp_ethneigh");
}
