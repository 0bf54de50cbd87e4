/*
 * ethframe.h - Ethernet / IPv4 / IPv6 / UDP framing for a datapath that
 * owns the whole frame (the DPDK datapath, src/dpdk), with no OS calls.
 *
 * The socket datapath leaves these headers to the kernel; a kernel-bypass
 * datapath builds and checks them itself, so that its frames are the same
 * MetaRoCE-over-UDP frames a socket peer sends and receives (one wire).
 * Building writes the Ethernet, IP and UDP headers in front of a MetaRoCE
 * packet, with the IPv4 header checksum and the UDP checksum computed in
 * software, left to a port that offloads them, or (over IPv4) the UDP
 * checksum left 0, as WIRE-13 allows.
 * Parsing is strict, since every byte is untrusted: a frame for another MAC,
 * of a foreign EtherType, with a bad IP header, an IP fragment, a protocol
 * other than UDP, a wrong destination address or port, or a UDP length or
 * checksum that does not hold is dropped and counted by cause.
 */
#ifndef MROCE_ETHFRAME_H
#define MROCE_ETHFRAME_H

#include <stddef.h>
#include <stdint.h>

#define MROCE_ETH_HDR_LEN 14u
#define MROCE_ETH_V4_HDRS (14u + 20u + 8u) /* Ethernet + IPv4 + UDP */
#define MROCE_ETH_V6_HDRS (14u + 40u + 8u) /* Ethernet + IPv6 + UDP */
#define MROCE_ETHERTYPE_IPV4 0x0800u
#define MROCE_ETHERTYPE_IPV6 0x86ddu
#define MROCE_ETHERTYPE_ARP 0x0806u
#define MROCE_ARP_FRAME_LEN 60u /* 42 bytes, padded to Ethernet's minimum */
#define MROCE_ARP_REQUEST 1u
#define MROCE_ARP_REPLY 2u
#define MROCE_ND_SOLICIT 135u /* ICMPv6 Neighbor Solicitation */
#define MROCE_ND_ADVERT 136u  /* ICMPv6 Neighbor Advertisement */
#define MROCE_ND_FRAME_LEN (14u + 40u + 24u + 8u)

/* One side of a frame: MAC, IP address (IPv4 in the first 4 bytes), port. */
struct mroce_eth_end {
    uint8_t mac[6];
    uint8_t ip[16]; /* network order; IPv4 uses ip[0..3] */
    uint16_t port;  /* host order */
};

/* What mroce_eth_parse() found in an accepted frame. */
struct mroce_eth_rx {
    struct mroce_eth_end src; /* the sender: MAC, address, port */
    uint8_t family6;          /* 1: IPv6, 0: IPv4 */
    uint8_t tos;              /* IPv4 TOS or IPv6 traffic class (ECN bits) */
    size_t payload_off;       /* MetaRoCE packet: frame + payload_off */
    size_t payload_len;
};

/* Frames dropped, by cause (each frame counts once, at its first fault). */
struct mroce_eth_counters {
    uint64_t rx_ok;
    uint64_t drop_short;     /* shorter than its headers */
    uint64_t drop_mac;       /* destination MAC neither ours nor broadcast */
    uint64_t drop_ethertype; /* neither IPv4 nor IPv6 (ARP, VLAN, ...) */
    uint64_t drop_ip_hdr;    /* version, IHL, length or header checksum */
    uint64_t drop_fragment;  /* IPv4 MF/offset, IPv6 fragment header */
    uint64_t drop_proto;     /* not UDP (or IPv6 extension headers) */
    uint64_t drop_ip_dst;    /* destination address not ours */
    uint64_t drop_port;      /* destination port not ours */
    uint64_t drop_udp_len;   /* UDP length disagrees with the IP length */
    uint64_t drop_udp_csum;  /* UDP checksum wrong (or zero over IPv6) */
    uint64_t arp_ok;         /* well-formed ARP (IPv4 over Ethernet) */
    uint64_t drop_arp;       /* ARP that is short, not IPv4 over Ethernet,
                                of an unknown operation, or from a
                                broadcast or multicast sender */
    uint64_t nd_ok;          /* well-formed Neighbor Solicit / Advert */
    uint64_t drop_nd;        /* other ICMPv6, or a solicitation or
                                advertisement that fails RFC 4861's checks
                                (hop limit 255, checksum, lengths) */
};

/* An ARP packet (RFC 826) for IPv4 over Ethernet. */
struct mroce_arp {
    uint16_t op;    /* MROCE_ARP_REQUEST or MROCE_ARP_REPLY */
    uint8_t sha[6]; /* sender's MAC */
    uint8_t spa[4]; /* sender's IPv4 address */
    uint8_t tha[6]; /* target's MAC (zero in a request) */
    uint8_t tpa[4]; /* target's IPv4 address */
};

/* Writes the headers of a frame from `src` to `dst` carrying the len bytes
 * at `payload` (which must follow the headers in buf: buf + the returned
 * length, already written there) with the given TOS / traffic class.
 * family6 selects IPv6.  Returns the header length (MROCE_ETH_V4_HDRS or
 * MROCE_ETH_V6_HDRS), or 0 when cap is too small or len too large for
 * one IP datagram. */
size_t mroce_eth_build(uint8_t *buf, size_t cap, int family6,
                       const struct mroce_eth_end *src,
                       const struct mroce_eth_end *dst, uint8_t tos,
                       size_t len);

/* How mroce_eth_build_ex fills the checksums. */
#define MROCE_ETH_CSUM_SW 0 /* both in software (mroce_eth_build) */
/* For a port that computes them: the IPv4 header checksum is left 0 and
 * the UDP checksum field holds the pseudo header's sum, not complemented,
 * as DPDK's checksum offload expects; no payload byte is read. */
#define MROCE_ETH_CSUM_OFFLOAD 1
/* No UDP checksum over IPv4 (field 0, WIRE-13: CRC32C covers the packet
 * end to end), the IPv4 header checksum in software; no payload byte is
 * read.  IPv6 requires the UDP checksum, so there it is MROCE_ETH_CSUM_SW. */
#define MROCE_ETH_CSUM_NONE 2

/* mroce_eth_build with the checksums filled as csum (MROCE_ETH_CSUM_*)
 * says. */
size_t mroce_eth_build_ex(uint8_t *buf, size_t cap, int family6,
                          const struct mroce_eth_end *src,
                          const struct mroce_eth_end *dst, uint8_t tos,
                          size_t len, int csum);

/* Checks a received frame against the local end `self` (MAC, address and
 * port; an all-zero address accepts any).  Returns 0 and fills *rx for a
 * MetaRoCE-over-UDP frame for us; otherwise -1, with the cause counted in
 * *c.  Bytes past the IP datagram (Ethernet padding) are ignored. */
int mroce_eth_parse(const uint8_t *frame, size_t len, int family6,
                    const struct mroce_eth_end *self, struct mroce_eth_rx *rx,
                    struct mroce_eth_counters *c);

/* mroce_eth_parse with the port's verdict on the UDP checksum: udp_csum
 * 1: the port checked it good (not checked again); -1: the port found
 * it bad (dropped, drop_udp_csum); 0: unknown (checked in software). */
int mroce_eth_parse_ex(const uint8_t *frame, size_t len, int family6,
                       const struct mroce_eth_end *self,
                       struct mroce_eth_rx *rx, struct mroce_eth_counters *c,
                       int udp_csum);

/* Parses an ARP frame (EtherType MROCE_ETHERTYPE_ARP; the caller checked
 * the destination MAC).  Returns 0 and fills *a, counting arp_ok; -1 for
 * a frame that is not a request or reply for IPv4 over Ethernet, or whose
 * sender MAC is broadcast or multicast (never learned), counting
 * drop_arp. */
int mroce_eth_arp_parse(const uint8_t *frame, size_t len, struct mroce_arp *a,
                        struct mroce_eth_counters *c);

/* Writes an ARP frame of operation a->op from a->sha to the Ethernet
 * destination eth_dst, padded to MROCE_ARP_FRAME_LEN.  Returns that length,
 * or 0 when cap is smaller. */
size_t mroce_eth_arp_build(uint8_t *buf, size_t cap, const uint8_t eth_dst[6],
                           const struct mroce_arp *a);

/* IPv6 Neighbor Discovery (RFC 4861): a solicitation or advertisement. */
struct mroce_nd {
    uint8_t type;    /* MROCE_ND_SOLICIT or MROCE_ND_ADVERT */
    uint8_t src[16]; /* IPv6 source */
    uint8_t dst[16]; /* IPv6 destination */
    uint8_t target[16];
    uint8_t mac[6];  /* source (solicit) or target (advert) link-layer
                          address option */
    uint8_t has_mac; /* the option was present */
};

/* Parses an ICMPv6 frame (IPv6, next header 58; the caller checked the
 * destination MAC).  Returns 0 for a solicitation or advertisement that
 * passes RFC 4861's checks, counting nd_ok; -1 for anything else,
 * counting drop_nd. */
int mroce_eth_nd_parse(const uint8_t *frame, size_t len, struct mroce_nd *n,
                       struct mroce_eth_counters *c);

/* Writes a solicitation (n->type MROCE_ND_SOLICIT: to n->target's
 * solicited-node multicast address and MAC, with our MAC as the source
 * link-layer option) or a solicited advertisement (to n->dst at eth_dst,
 * flags S and O, our MAC as the target link-layer option), from n->src
 * at `mac`.  Returns MROCE_ND_FRAME_LEN, or 0 when cap is smaller. */
size_t mroce_eth_nd_build(uint8_t *buf, size_t cap, const uint8_t mac[6],
                          const uint8_t eth_dst[6], const struct mroce_nd *n);

/* The Internet checksum's one's-complement sum of len bytes, folded into
 * 16 bits and added to `sum` (chain calls; the final value is ~result). */
uint32_t mroce_eth_csum_add(uint32_t sum, const uint8_t *p, size_t len);

#endif /* MROCE_ETHFRAME_H */
