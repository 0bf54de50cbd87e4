/*
 * fuzz_ethframe.c - libFuzzer target for the kernel-bypass datapath's
 * frame parser (src/udp/ethframe.c), which sees every raw Ethernet frame
 * a DPDK port receives.
 *
 * Arbitrary bytes are parsed as IPv4 and as IPv6 frames for a fixed local
 * end; ASan/UBSan catch any read past the frame.  An accepted frame's
 * payload must lie inside it, and rebuilding the headers from what the
 * parser returned must give a frame that parses to the same payload (the
 * builder and parser agree on the format).  Input whose first bytes do not
 * name our MAC is also tried with it patched in, so the fuzzer reaches the
 * IP and UDP checks.  The same bytes go through the ARP and Neighbor
 * Discovery parsers, and what they accept must rebuild into a frame they
 * accept again.
 */
#include "../src/udp/ethframe.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct mroce_eth_end SELF = {{0x02, 0, 0, 0, 0, 0x0b},
                                          {10, 0, 0, 2},
                                          4791};

static void one(const uint8_t *f, size_t len, int v6)
{
    static uint8_t re[70000];
    struct mroce_eth_rx rx;
    struct mroce_eth_counters c = {0};
    if (mroce_eth_parse(f, len, v6, &SELF, &rx, &c) != 0)
        return;
    if (rx.payload_off > len || rx.payload_len > len - rx.payload_off)
        abort();
    size_t hdrs = v6 ? MROCE_ETH_V6_HDRS : MROCE_ETH_V4_HDRS;
    memcpy(re + hdrs, f + rx.payload_off, rx.payload_len);
    size_t h = mroce_eth_build(re, sizeof re, v6, &rx.src, &SELF, rx.tos,
                               rx.payload_len);
    struct mroce_eth_rx rx2;
    /* The rebuilt frame goes from the sender to us: parse it as us. */
    memcpy(re, SELF.mac, 6);
    if (h != hdrs ||
        mroce_eth_parse(re, h + rx.payload_len, v6, &SELF, &rx2, &c) != 0 ||
        rx2.payload_len != rx.payload_len ||
        memcmp(re + rx2.payload_off, f + rx.payload_off, rx.payload_len) != 0)
        abort();
}

static void neigh(const uint8_t *f, size_t len)
{
    uint8_t re[128];
    struct mroce_eth_counters c = {0};
    struct mroce_arp a, a2;
    if (mroce_eth_arp_parse(f, len, &a, &c) == 0 &&
        (mroce_eth_arp_build(re, sizeof re, SELF.mac, &a) !=
             MROCE_ARP_FRAME_LEN ||
         mroce_eth_arp_parse(re, MROCE_ARP_FRAME_LEN, &a2, &c) != 0 ||
         memcmp(&a, &a2, sizeof a) != 0))
        abort();
    struct mroce_nd n, n2;
    if (mroce_eth_nd_parse(f, len, &n, &c) == 0 && n.has_mac &&
        (mroce_eth_nd_build(re, sizeof re, n.mac, SELF.mac, &n) !=
             MROCE_ND_FRAME_LEN ||
         mroce_eth_nd_parse(re, MROCE_ND_FRAME_LEN, &n2, &c) != 0 ||
         n2.type != n.type || memcmp(n2.target, n.target, 16) != 0))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t buf[70000];
    if (size > sizeof buf)
        return 0;
    neigh(data, size);
    for (int v6 = 0; v6 < 2; v6++) {
        one(data, size, v6);
        if (size >= 6 && memcmp(data, SELF.mac, 6) != 0) {
            memcpy(buf, data, size);
            memcpy(buf, SELF.mac, 6);
            one(buf, size, v6);
        }
    }
    return 0;
}
