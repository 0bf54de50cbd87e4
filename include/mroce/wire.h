/*
 * mroce/wire.h - the MetaRoCE wire format: header layouts, opcodes, flags,
 * NAK codes, and the codec that turns bytes into a parsed packet and back.
 *
 * This is the first stage of a packet's path: everything that arrives from
 * the network goes through mrw_pkt_decode() before any other code looks at
 * it, and everything the engine sends is produced by mrw_pkt_encode().  The
 * layouts here are normative: docs/spec/wire-format.md describes the same
 * bytes, and tests/vectors/wire_vectors.txt pins them down with hex vectors
 * shared by the codec tests, the Wireshark dissector and the conformance
 * suite.  All multi-byte fields are big-endian (network order).
 *
 * The codec has no OS dependencies and never allocates.  Decoding never reads
 * outside the buffer it is given; any inconsistency is reported as a negative
 * MROCE_WIRE_E* code so the caller can count the drop by reason.
 */
#ifndef MROCE_WIRE_H
#define MROCE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Default UDP destination port (WIRE-1).  Not IANA-assigned; configurable.
 * Deliberately not 4791 (RoCEv2) nor 4793 (Ultra Ethernet). */
#define MROCE_UDP_PORT 4794

/* Protocol version carried in the first byte of every packet (WIRE-3). */
#define MROCE_VERSION 1

/* Section sizes, in bytes. */
#define MROCE_BASE_HDR_LEN 28   /* every packet */
#define MROCE_REQ_HDR_LEN 32    /* SEND, WRITE, READ_REQ, FETCH_ADD, CMP_SWAP */
#define MROCE_ATOMIC_HDR_LEN 16 /* FETCH_ADD, CMP_SWAP, after the REQ header */
#define MROCE_RESP_HDR_LEN 16   /* READ_RESP, ATOMIC_RESP */
#define MROCE_ACK_HDR_LEN 32    /* ACK, before its SACK words */
#define MROCE_NAK_HDR_LEN 16    /* NAK */
#define MROCE_CONN_HDR_LEN 36   /* CONNECT_REQ, CONNECT_RESP */
#define MROCE_STREAM_HDR_LEN 4  /* request of stream > 0, after the REQ hdr */
#define MROCE_CRC_LEN 4         /* CRC32C trailer on every packet */
#define MROCE_MAX_SACK_WORDS 8  /* 256 PSNs after the cumulative point */
#define MROCE_ATOMIC_LEN 8      /* atomics operate on 64-bit words */
/* MROCE_MAX_SACK_WORDS is the span without the SACK extension; with it an
 * ACK carries up to what its receiver accepts, at most the SACK Words
 * byte's 255 words (8,160 PSNs, WIRE-52, WIRE-53). */
#define MROCE_SACK_WORDS_LIMIT 255

/* Largest header a data packet of stream 0 carries: base + REQ + ATOMIC.
 * Windows and credits count every data packet as its payload plus this
 * much (and the CRC), whatever its stream. */
#define MROCE_MAX_DATA_HDR_LEN \
    (MROCE_BASE_HDR_LEN + MROCE_REQ_HDR_LEN + MROCE_ATOMIC_HDR_LEN)
/* Largest header any data packet carries: the above plus the STREAM word.
 * Output buffers are sized with this. */
#define MROCE_MAX_STREAM_DATA_HDR_LEN \
    (MROCE_MAX_DATA_HDR_LEN + MROCE_STREAM_HDR_LEN)
/* Largest packet the codec accepts (fits a 9000-byte jumbo frame payload
 * and loopback's 64 KiB with room); the payload MTU is negotiated below it. */
#define MROCE_MAX_PKT_LEN 65000

/*
 * Opcodes (WIRE-5).  X-macro so the enum and the printable names cannot
 * drift.  Columns: name, value, consumes a PSN (reliable data), has REQ hdr.
 */
/* clang-format off */
#define MROCE_OPCODES(X)                   \
    X(SEND, 0x10, 1, 1)                    \
    X(WRITE, 0x11, 1, 1)                   \
    X(READ_REQ, 0x12, 1, 1)                \
    X(READ_RESP, 0x13, 1, 0)               \
    X(FETCH_ADD, 0x14, 1, 1)               \
    X(CMP_SWAP, 0x15, 1, 1)                \
    X(ATOMIC_RESP, 0x16, 1, 0)             \
    X(ACK, 0x20, 0, 0)                     \
    X(NAK, 0x21, 0, 0)                     \
    X(CONNECT_REQ, 0x30, 0, 0)             \
    X(CONNECT_RESP, 0x31, 0, 0)            \
    X(DISCONNECT, 0x32, 0, 0)              \
    X(DISCONNECT_ACK, 0x33, 0, 0)
/* clang-format on */

enum mrw_opcode {
#define MROCE_X_ENUM(name, val, psn, req) MROCE_OP_##name = (val),
    MROCE_OPCODES(MROCE_X_ENUM)
#undef MROCE_X_ENUM
};

/* Base-header flags (WIRE-6). */
enum mrw_pkt_flag {
    MROCE_F_FIRST = 0x0001,   /* first packet of a message */
    MROCE_F_LAST = 0x0002,    /* last packet of a message */
    MROCE_F_IMM = 0x0004,     /* imm field valid (SEND/WRITE with immediate) */
    MROCE_F_ACK_REQ = 0x0008, /* receiver should acknowledge without delay */
    MROCE_F_SOLICITED = 0x0010, /* solicited event requested */
    MROCE_F_RETX = 0x0020,      /* this transmission is a retransmission */
    MROCE_F_PROBE = 0x0040,     /* tail-loss probe */
    MROCE_F_CREDIT = 0x0080,    /* sender asks for receiver-driven credits */
    MROCE_F_STREAM = 0x0100,    /* request of a stream > 0: STREAM word */
    /* Sealed packet of secure mode (WIRE-38): outside MROCE_F_KNOWN, so the
     * clear decoder drops it as a reserved bit; mrw_sec_decode() reads it. */
    MROCE_F_SECURE = 0x8000,
};
#define MROCE_F_KNOWN 0x01ff /* any other bit set: packet is malformed */

/* NAK codes (WIRE-9).  X-macro: name, value. */
/* clang-format off */
#define MROCE_NAK_CODES(X)        \
    X(RNR, 0x01)                  \
    X(INVALID_REQUEST, 0x02)      \
    X(REMOTE_ACCESS_KEY, 0x03)    \
    X(REMOTE_ACCESS_BOUNDS, 0x04) \
    X(REMOTE_ACCESS_PERM, 0x05)   \
    X(REMOTE_OP_ERROR, 0x06)      \
    X(INVALID_OPCODE, 0x07)
/* clang-format on */

enum mrw_nak_code {
#define MROCE_X_ENUM(name, val) MROCE_NAK_##name = (val),
    MROCE_NAK_CODES(MROCE_X_ENUM)
#undef MROCE_X_ENUM
};

/* ACK echo flags. */
enum mrw_ack_echo_flag {
    MROCE_ECHO_CE = 0x01,  /* the echoed packet arrived marked CE */
    MROCE_ECHO_DUP = 0x02, /* the echoed packet was a duplicate */
};

/* CONNECT flags. */
enum mrw_conn_flag {
    MROCE_CONN_CREDIT = 0x00000001, /* sender supports receiver credits */
    MROCE_CONN_RATE = 0x00000002,   /* ACK Credit is a rate hint (Mbit/s) */
};

/* CONN extensions (WIRE-33): type-length-value entries after the CONN
 * header, each type at most once, unknown types skipped. */
enum mrw_conn_ext_type {
    MROCE_EXT_STREAMS = 1, /* Max Streams (16), reserved (16) */
    MROCE_EXT_PLANES = 2,  /* Count (8), reserved (24), Count plane entries */
    MROCE_EXT_SECURE = 3,  /* Suite (8), reserved (24), SPI (32), MAC (128) */
    MROCE_EXT_SACK = 4,    /* SACK Words (8), reserved (24) (WIRE-52) */
};
#define MROCE_EXT_SECURE_LEN 24
#define MROCE_SEC_MAC_LEN 16 /* SECURE extension MAC (WIRE-43) */

/* Secure mode (WIRE-39..WIRE-42): SEC header after the base header, tag
 * instead of the CRC, so a sealed packet is MROCE_SEC_OVERHEAD longer. */
#define MROCE_SEC_HDR_LEN 16
#define MROCE_SEC_TAG_LEN 16
#define MROCE_SEC_NONCE_LEN 12
#define MROCE_SEC_OVERHEAD \
    (MROCE_SEC_HDR_LEN + MROCE_SEC_TAG_LEN - MROCE_CRC_LEN)
/* Suites (SEC-16). */
enum mrw_sec_suite {
    MROCE_SUITE_AES128_GCM = 1,
    MROCE_SUITE_AES256_GCM = 2,
    MROCE_SUITE_AES128_GMAC = 3, /* integrity only */
};
#define MROCE_EXT_STREAMS_LEN 4
#define MROCE_EXT_SACK_LEN 4
#define MROCE_EXT_PLANE_LEN 20 /* Address (16), UDP Port (16), reserved (16) */
#define MROCE_MAX_PLANES 8
#define MROCE_MAX_STREAMS 65535

/* Credit value meaning "receiver-driven mode off, no limit". */
#define MROCE_CREDIT_UNLIMITED 0xffffffffu

/* Decoded base header. */
struct mrw_base_hdr {
    uint8_t version;  /* MROCE_VERSION */
    uint8_t opcode;   /* enum mrw_opcode */
    uint16_t flags;   /* enum mrw_pkt_flag */
    uint32_t dst_qpn; /* destination queue pair; 0 = endpoint listener */
    uint64_t token;   /* destination's connection token (0 in CONNECT_REQ) */
    uint32_t psn;     /* packet sequence number (data opcodes) */
    uint32_t tsval;   /* sender's clock, low 32 bits of nanoseconds */
    uint16_t entropy; /* path entropy the sender used (== UDP source port) */
    uint16_t pkt_len; /* bytes from base header start to end of CRC */
};

/* Request header: SEND, WRITE, READ_REQ and the two atomics. */
struct mrw_req_hdr {
    uint32_t msn;     /* requester's message sequence number */
    uint32_t rsn;     /* receive sequence number (SEND, WRITE+IMM) */
    uint64_t raddr;   /* remote address of the message start */
    uint32_t rkey;    /* remote key (WRITE, READ, atomics) */
    uint32_t msg_len; /* total message length (READ: bytes asked) */
    uint32_t offset;  /* this packet's payload offset in the message */
    uint32_t imm;     /* immediate data when MROCE_F_IMM */
    /* STREAM word, present iff MROCE_F_STREAM (decoded as 0 without it). */
    uint16_t stream;       /* stream ID, 1..65535 when present */
    uint16_t stream_resvd; /* reserved, 0, ignored */
};

/* Atomic operands: FETCH_ADD uses swap_add as the addend. */
struct mrw_atomic_hdr {
    uint64_t swap_add; /* value to swap in, or to add */
    uint64_t compare;  /* CMP_SWAP compare value; 0 for FETCH_ADD */
};

/* Response header: READ_RESP and ATOMIC_RESP. */
struct mrw_resp_hdr {
    uint32_t req_msn; /* msn of the request this answers */
    uint32_t msg_len; /* total response length */
    uint32_t offset;  /* this packet's payload offset in the response */
    uint16_t stream;  /* stream of the request this answers (0: default) */
    uint16_t reserved;
};

/* ACK header, followed by sack_words 32-bit words of SACK bitmap. */
struct mrw_ack_hdr {
    uint32_t cum_psn;      /* every PSN before this one was received */
    uint32_t echo_psn;     /* PSN of the packet that triggered this ACK */
    uint32_t echo_ts;      /* that packet's tsval */
    uint16_t echo_entropy; /* that packet's entropy */
    uint8_t echo_flags;    /* enum mrw_ack_echo_flag */
    uint8_t sack_words;    /* 0..MROCE_SACK_WORDS_LIMIT; above
                              MROCE_MAX_SACK_WORDS only where negotiated
                              (WIRE-52), which the QP checks */
    uint32_t ce_count;     /* cumulative CE-marked data packets received */
    uint32_t rx_count;     /* cumulative data packets received */
    uint32_t credit;       /* bytes the sender may have in flight, or with
                              MROCE_CONN_RATE the rate hint in Mbit/s */
    uint32_t ack_delay;    /* ns the receiver held the echoed packet */
    /* bit i of word j: cum+1+32j+i; words from sack_words up to
     * MROCE_MAX_SACK_WORDS decode as 0, later ones are left unset */
    uint32_t sack[MROCE_SACK_WORDS_LIMIT];
};

/* NAK header. */
struct mrw_nak_hdr {
    uint32_t nak_psn;  /* PSN of the offending request packet */
    uint32_t msn;      /* its message sequence number */
    uint8_t code;      /* enum mrw_nak_code */
    uint8_t rnr_delay; /* RNR: suggested wait, units of 10 us (1..255) */
    uint16_t stream;   /* stream of the offending request (0: default) */
    uint32_t cum_psn;  /* receiver's cumulative PSN at the time */
};

/* One plane of a PLANES extension: where the sender receives on it. */
struct mrw_plane_addr {
    uint8_t addr[16]; /* IPv6, or IPv4-mapped (::ffff:a.b.c.d) */
    uint16_t port;    /* UDP port */
    uint16_t reserved;
};

/* CONNECT_REQ / CONNECT_RESP body. */
struct mrw_conn_hdr {
    uint32_t src_qpn;       /* sender's queue pair number */
    uint32_t start_psn;     /* first PSN the sender will use */
    uint64_t token;         /* token the peer must put in packets to sender */
    uint16_t mtu;           /* largest payload the sender accepts */
    uint16_t npaths;        /* entropies the sender sprays over (advisory) */
    uint32_t rx_window;     /* PSNs the sender tracks beyond cum_psn */
    uint32_t max_rd_atomic; /* READ/atomics the sender serves at once */
    uint32_t flags;         /* enum mrw_conn_flag */
    uint32_t max_ack_delay; /* ns the sender may delay an ACK (REL-19) */
    /* Extensions: encoded when non-zero, decoded as 0 when absent. */
    uint16_t max_streams; /* STREAMS: streams the sender accepts, 1..65535 */
    uint8_t nplanes;      /* PLANES: entries in planes[], 1..MAX_PLANES */
    struct mrw_plane_addr planes[MROCE_MAX_PLANES];
    uint8_t sack_words; /* SACK: words the sender accepts in the ACKs it
                           receives, 9..255 (WIRE-52); 0: absent */
    /* SECURE (WIRE-43), encoded last when sec_present; the encoder writes
     * sec_mac as given (the engine fills it in after encoding). */
    uint8_t sec_present;
    uint8_t sec_suite; /* enum mrw_sec_suite */
    uint32_t sec_spi;  /* SPI the sender receives under, not 0 */
    uint8_t sec_mac[MROCE_SEC_MAC_LEN];
};

/* SEC header of a sealed packet (WIRE-40). */
struct mrw_sec_hdr {
    uint32_t spi;    /* the receiving QP's SPI */
    uint16_t epoch;  /* key epoch of the sender's direction */
    uint8_t suite;   /* enum mrw_sec_suite */
    uint8_t key_gen; /* master key generation of the key (SEC-31) */
    uint64_t seq;    /* sender's per-connection transmit counter, from 1 */
};

/* A decoded packet.  payload points into the caller's buffer. */
struct mrw_pkt {
    struct mrw_base_hdr base;
    union {
        struct {
            struct mrw_req_hdr req;
            struct mrw_atomic_hdr atomic; /* atomics only */
        } rq;
        struct mrw_resp_hdr resp;
        struct mrw_ack_hdr ack;
        struct mrw_nak_hdr nak;
        struct mrw_conn_hdr conn;
    } u;
    const uint8_t *payload; /* data, or NULL */
    uint32_t payload_len;
};

/* Decode errors (negative).  X-macro: name, value, description. */
/* clang-format off */
#define MROCE_WIRE_ERRORS(X)                                  \
    X(TRUNCATED, -1, "shorter than its headers or pkt_len")   \
    X(VERSION, -2, "unknown version")                         \
    X(OPCODE, -3, "unknown opcode")                           \
    X(FLAGS, -4, "reserved flag bits set")                    \
    X(LENGTH, -5, "pkt_len disagrees with datagram length")   \
    X(CRC, -6, "CRC32C mismatch")                             \
    X(FIELD, -7, "field out of range for this opcode")
/* clang-format on */

enum mrw_wire_error {
#define MROCE_X_ENUM(name, val, desc) MROCE_WIRE_E##name = (val),
    MROCE_WIRE_ERRORS(MROCE_X_ENUM)
#undef MROCE_X_ENUM
};

/*
 * mrw_pkt_decode parses and checks buf[0..len).  Checks, in order: length
 * covers the base header, version, opcode, flags, pkt_len == len, the CRC,
 * then the opcode's headers fit and their fields are self-consistent
 * (payload fits: offset + payload_len <= msg_len for data; atomics carry no
 * payload and msg_len == 8; ATOMIC_RESP payload is exactly 8; ACK: exactly
 * sack_words words, any count the byte holds (WIRE-53); FIRST iff
 * offset == 0; LAST iff offset + payload_len == msg_len; STREAM only on requests, with a non-zero stream
 * ID; CONN extensions well formed).  Returns 0 or a negative enum mrw_wire_error.
 * Never reads outside buf[0..len).
 */
int mrw_pkt_decode(struct mrw_pkt *pkt, const uint8_t *buf, size_t len);

/*
 * mrw_pkt_decode_opened is mrw_pkt_decode without the CRC check, for the
 * clear packet that opening a sealed one rebuilt (WIRE-44 step 14: the tag
 * has authenticated it, so its last four bytes are not a CRC).  Only for
 * buffers the caller built itself.
 */
int mrw_pkt_decode_opened(struct mrw_pkt *pkt, const uint8_t *buf, size_t len);

/*
 * mrw_sec_decode checks a sealed packet's base header and SEC header
 * (WIRE-44 steps 1-9: WIRE-25 steps 1-8 with SECURE required, Pkt Len at
 * least base + SEC header + tag, not a CONNECT) and decodes both.  Returns
 * 0 or a negative enum mrw_wire_error; reads only buf[0..len).
 */
int mrw_sec_decode(struct mrw_base_hdr *b, struct mrw_sec_hdr *s,
                   const uint8_t *buf, size_t len);

/* mrw_sec_encode writes the SEC header at p (MROCE_SEC_HDR_LEN bytes). */
void mrw_sec_encode(uint8_t *p, const struct mrw_sec_hdr *s);

/*
 * mrw_pkt_hdr_len returns the header length (base + opcode headers, without
 * payload and CRC) that an encoded packet of this opcode occupies, or 0 for an
 * unknown opcode.  For ACK it includes pkt->u.ack.sack_words words.
 */
size_t mrw_pkt_hdr_len(const struct mrw_pkt *pkt);

/*
 * mrw_pkt_encode_hdr writes the headers of pkt (base.pkt_len is computed
 * from the header length, pkt->payload_len and the CRC) into buf and returns
 * the header length, or 0 if cap is too small for headers + payload + CRC.
 * The caller then places payload_len bytes at buf + hdr_len (this lets the
 * engine read straight from registered memory into the output buffer) and
 * calls mrw_pkt_seal().  pkt->payload is ignored.
 */
size_t mrw_pkt_encode_hdr(const struct mrw_pkt *pkt, uint8_t *buf, size_t cap);

/* mrw_pkt_seal appends the CRC32C over buf[0..len) at buf+len and returns
 * len + MROCE_CRC_LEN. */
size_t mrw_pkt_seal(uint8_t *buf, size_t len);

/* mrw_pkt_seal_split seals a packet whose payload is not behind its
 * headers in buf (zero-copy transmit): the CRC32C over buf[0..hdr_len)
 * followed by payload[0..payload_len) goes to buf+hdr_len, the same four
 * bytes mrw_pkt_seal would put after the contiguous packet.  Returns the
 * packet's length on the wire, hdr_len + payload_len + MROCE_CRC_LEN. */
size_t mrw_pkt_seal_split(uint8_t *buf, size_t hdr_len, const uint8_t *payload,
                          size_t payload_len);

/* A packet whose payload is copied in piece by piece, the CRC following
 * the copy so each payload byte is read once (mrw_crc32c_copy):
 * mrw_pkt_crc_hdr starts the CRC over buf[0..hdr_len); mrw_pkt_crc_copy
 * copies len bytes from src to dst (not overlapping), continuing crc over
 * them, and returns it; mrw_pkt_seal_crc appends the final crc at buf+len
 * and returns len + MROCE_CRC_LEN.  Copying the whole payload to
 * buf+hdr_len this way gives the packet mrw_pkt_seal() would. */
uint32_t mrw_pkt_crc_hdr(const uint8_t *buf, size_t hdr_len);
uint32_t mrw_pkt_crc_copy(uint32_t crc, uint8_t *dst, const uint8_t *src,
                          size_t len);
size_t mrw_pkt_seal_crc(uint8_t *buf, size_t len, uint32_t crc);

/* mrw_pkt_encode: headers, copy of pkt->payload, and CRC in one call.
 * Returns the packet length or 0 if cap is too small. */
size_t mrw_pkt_encode(const struct mrw_pkt *pkt, uint8_t *buf, size_t cap);

/* CRC32C (Castagnoli, reflected, init and final xor 0xffffffff). */
uint32_t mrw_crc32c(uint32_t crc, const void *data, size_t len);

/* mrw_crc32c_copy copies len bytes from src to dst (which must not overlap)
 * and returns mrw_crc32c(crc, src, len), reading src once where the CPU
 * allows: the sender's gather of a payload into its packet. */
uint32_t mrw_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len);

/* Printable names; "?" for unknown values. */
const char *mrw_opcode_name(unsigned opcode);
const char *mrw_nak_code_name(unsigned code);
const char *mrw_wire_error_name(int err);

/* 1 if the opcode consumes a PSN (reliable data class), else 0. */
int mrw_opcode_has_psn(unsigned opcode);

/* Serial-number arithmetic on 32-bit PSNs (RFC 1982 style). */
static inline int32_t mrw_psn_diff(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b);
}

#ifdef __cplusplus
}
#endif
#endif /* MROCE_WIRE_H */
