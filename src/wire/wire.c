/*
 * wire.c - the MetaRoCE packet codec: bytes to struct mrw_pkt and back.
 *
 * Decoding is the first thing that happens to every received datagram, so it
 * is written for the fast path: one pass of checks in the order wire.h
 * documents (length, version, opcode, flags, pkt_len, CRC, then per-opcode
 * headers and field consistency), big-endian loads through memcpy that the
 * compiler turns into a load and a byte swap, and no calls other than the
 * CRC.  A packet that decodes cleanly is self-consistent, so the engine can
 * trust msg_len/offset/payload_len/FIRST/LAST without re-checking them.
 *
 * Where wire.h leaves room, the decoder decides as follows.  A datagram
 * shorter than pkt_len is TRUNCATED (bytes went missing), one longer than
 * pkt_len, or a pkt_len above MROCE_MAX_PKT_LEN, is LENGTH; so is nothing
 * else, and any cut-short packet reports TRUNCATED (a STREAM word or an
 * ATOMIC header cut by the CRC included).  Beyond the rules in wire.h these
 * are FIELD errors: IMM on anything but SEND/WRITE; FIRST, LAST or IMM on a
 * control opcode (ACK, NAK, CONNECT_*, DISCONNECT*); STREAM on anything but
 * a request, and a STREAM word with Stream ID 0; bytes after the headers of
 * a control opcode other than CONNECT_*, and CONN extensions that do not
 * exactly fill a CONNECT (decode_conn_ext); an unknown NAK code; unknown
 * ACK echo flag bits; a CONNECT mtu below 256.  Reserved fields and
 * conn.flags are not checked (conn.flags are capabilities a peer ignores
 * when unknown); they are decoded and re-encoded as they are, except the
 * reserved bytes of the STREAMS and PLANES extensions and extensions of
 * unknown type, which are not kept: a CONNECT re-encodes without them.
 *
 * Encoding writes exactly what the struct says (plus the version and the
 * computed pkt_len), without judging whether the values make sense; that
 * lets tests build deliberately bad packets, and the engine is the one that
 * knows what it meant to send.  On a decode error the contents of *pkt are
 * unspecified (the base header is filled in once it has been read, which
 * helps drop logging, but nothing more is promised).
 */
#include "mroce/wire.h"

#include <string.h>

#include "seeded_fault.h"

/* ---- big-endian loads and stores ---------------------------------------- */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define BE16(x) (x)
#define BE32(x) (x)
#define BE64(x) (x)
#else
#define BE16(x) __builtin_bswap16(x)
#define BE32(x) __builtin_bswap32(x)
#define BE64(x) __builtin_bswap64(x)
#endif

static inline uint16_t ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return BE16(v);
}

static inline uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return BE32(v);
}

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return BE64(v);
}

static inline void st16(uint8_t *p, uint16_t v)
{
    v = BE16(v);
    memcpy(p, &v, sizeof v);
}

static inline void st32(uint8_t *p, uint32_t v)
{
    v = BE32(v);
    memcpy(p, &v, sizeof v);
}

static inline void st64(uint8_t *p, uint64_t v)
{
    v = BE64(v);
    memcpy(p, &v, sizeof v);
}

/* The CRC32C that seals and checks every packet (WIRE-23/24).  The one
 * place -DMROCE_MEASURE_NO_CRC acts: measurement builds only
 * (bench/limits_fi.sh, what the CRC costs) take it as 0 on both sides. */
static inline uint32_t pkt_crc(uint32_t crc, const uint8_t *p, size_t n)
{
#ifdef MROCE_MEASURE_NO_CRC
    (void)p;
    (void)n;
    return crc;
#else
    return mrw_crc32c(crc, p, n);
#endif
}

/* ---- byte offsets within each header (wire.h struct order) -------------- */

enum {
    B_VERSION = 0,
    B_OPCODE = 1,
    B_FLAGS = 2,
    B_DST_QPN = 4,
    B_TOKEN = 8,
    B_PSN = 16,
    B_TSVAL = 20,
    B_ENTROPY = 24,
    B_PKT_LEN = 26,

    R_MSN = 0,
    R_RSN = 4,
    R_RADDR = 8,
    R_RKEY = 16,
    R_MSG_LEN = 20,
    R_OFFSET = 24,
    R_IMM = 28,

    AT_SWAP_ADD = 0,
    AT_COMPARE = 8,

    RS_REQ_MSN = 0,
    RS_MSG_LEN = 4,
    RS_OFFSET = 8,
    RS_STREAM = 12,
    RS_RESERVED = 14,

    ST_STREAM = 0,
    ST_RESERVED = 2,

    A_CUM_PSN = 0,
    A_ECHO_PSN = 4,
    A_ECHO_TS = 8,
    A_ECHO_ENTROPY = 12,
    A_ECHO_FLAGS = 14,
    A_SACK_WORDS = 15,
    A_CE_COUNT = 16,
    A_RX_COUNT = 20,
    A_CREDIT = 24,
    A_ACK_DELAY = 28,
    A_SACK = 32,

    N_NAK_PSN = 0,
    N_MSN = 4,
    N_CODE = 8,
    N_RNR_DELAY = 9,
    N_STREAM = 10,
    N_CUM_PSN = 12,

    C_SRC_QPN = 0,
    C_START_PSN = 4,
    C_TOKEN = 8,
    C_MTU = 16,
    C_NPATHS = 18,
    C_RX_WINDOW = 20,
    C_MAX_RD_ATOMIC = 24,
    C_FLAGS = 28,
    C_MAX_ACK_DELAY = 32,

    X_TYPE = 0, /* CONN extension entry: type, length, value */
    X_LEN = 1,
    X_VALUE = 2,
    XS_MAX_STREAMS = 0, /* STREAMS value */
    XP_COUNT = 0,       /* PLANES value: count, 3 reserved, entries */
    XP_ENTRIES = 4,
    XE_ADDR = 0, /* one plane entry */
    XE_PORT = 16,
    XE_RESERVED = 18,
    XC_SUITE = 0, /* SECURE value: suite, 3 reserved, SPI, MAC */
    XC_SPI = 4,
    XC_MAC = 8,
    S_SPI = 0, /* SEC header, from its first byte */
    S_EPOCH = 4,
    S_SUITE = 6,
    S_KEY_GEN = 7,
    S_SEQ = 8,
};

/* Smallest MTU a CONNECT may advertise: below this the data headers would
 * dominate and tiny MTUs are more likely a bug than a link property. */
#define MROCE_MIN_MTU 256

/* Flags that only data packets may carry: FIRST/LAST delimit messages and
 * IMM says the REQ header's imm is valid, none of which a control packet
 * has.  Rejecting them keeps "decoded cleanly" meaning "self-consistent". */
#define F_DATA_ONLY (MROCE_F_FIRST | MROCE_F_LAST | MROCE_F_IMM)
/* Flags a control packet must not carry: those and STREAM (a control
 * packet belongs to the connection, not to a stream). */
#define F_CTL_BAD (F_DATA_ONLY | MROCE_F_STREAM)
/* What the decoder rejects on a control packet and on a response; the
 * seeded fault stream_ctl_ok lets STREAM through there. */
#define CTL_BAD (MROCE_SEEDED_FAULT(STREAM_CTL_OK) ? F_DATA_ONLY : F_CTL_BAD)
#define RESP_BAD                                     \
    (MROCE_SEEDED_FAULT(STREAM_CTL_OK) ? MROCE_F_IMM \
                                       : (MROCE_F_IMM | MROCE_F_STREAM))
/* A malformed CONN extension: FIELD, or with the seeded fault conn_ext_lax
 * the end of the extensions (what was read so far is kept). */
#define EXT_BAD (MROCE_SEEDED_FAULT(CONN_EXT_LAX) ? 0 : MROCE_WIRE_EFIELD)
#define F_FIRST_LAST (MROCE_F_FIRST | MROCE_F_LAST)
#define ECHO_KNOWN (MROCE_ECHO_CE | MROCE_ECHO_DUP)

/* ---- decoding ------------------------------------------------------------ */

/* Inline membership tests generated from the X-macros, so a new opcode or
 * NAK code in wire.h is accepted without touching the decoder's checks. */
static inline int opcode_known(unsigned op)
{
    switch (op) {
#define X(name, val, psn, req) case (val):
        MROCE_OPCODES(X)
#undef X
        return 1;
    default:
        return 0;
    }
}

static inline int nak_code_known(unsigned code)
{
    switch (code) {
#define X(name, val) case (val):
        MROCE_NAK_CODES(X)
#undef X
        return 1;
    default:
        return 0;
    }
}

/*
 * The FIRST/LAST rule shared by every multi-packet data opcode: the flags must
 * say exactly whether this payload starts and ends the message, and the
 * payload must lie inside it.  64-bit sum: offset + payload_len may exceed
 * 32 bits in a hostile packet.
 */
static inline int check_segment(uint16_t flags, uint32_t msg_len,
                                uint32_t offset, uint32_t payload_len)
{
    uint64_t end = (uint64_t)offset + payload_len;
    uint16_t want = 0;
    if (end > msg_len)
        return MROCE_WIRE_EFIELD;
    if (offset == 0)
        want |= MROCE_F_FIRST;
    if (end == msg_len)
        want |= MROCE_F_LAST;
    if ((flags & F_FIRST_LAST) != want)
        return MROCE_WIRE_EFIELD;
    return 0;
}

static inline void decode_req(struct mrw_req_hdr *r, const uint8_t *p)
{
    r->msn = ld32(p + R_MSN);
    r->rsn = ld32(p + R_RSN);
    r->raddr = ld64(p + R_RADDR);
    r->rkey = ld32(p + R_RKEY);
    r->msg_len = ld32(p + R_MSG_LEN);
    r->offset = ld32(p + R_OFFSET);
    r->imm = ld32(p + R_IMM);
}

/* buf[hdr .. body_end) is the payload; set it (NULL when empty). */
static inline void set_payload(struct mrw_pkt *pkt, const uint8_t *buf,
                               size_t hdr, size_t body_end)
{
    pkt->payload_len = (uint32_t)(body_end - hdr);
    pkt->payload = pkt->payload_len ? buf + hdr : NULL;
}

/*
 * The CONN extensions in p[0..n) (WIRE-33): entries of type, length and
 * value that must exactly fill the rest of the packet.  STREAMS, PLANES and
 * SACK may each appear once, with their fixed lengths and valid counts;
 * other types are skipped, so a newer peer's extensions do not stop a
 * connection.
 */
static int decode_conn_ext(struct mrw_conn_hdr *c, const uint8_t *p, size_t n)
{
    int seen_streams = 0, seen_planes = 0, seen_sack = 0;
    c->max_streams = 0;
    c->sack_words = 0;
    c->nplanes = 0;
    memset(c->planes, 0, sizeof c->planes);
    c->sec_present = 0;
    c->sec_suite = 0;
    c->sec_spi = 0;
    memset(c->sec_mac, 0, sizeof c->sec_mac);
    while (n > 0) {
        if (n < X_VALUE)
            return EXT_BAD;
        unsigned type = p[X_TYPE], vlen = p[X_LEN];
        const uint8_t *v = p + X_VALUE;
        if ((size_t)vlen > n - X_VALUE)
            return EXT_BAD;
        if (type == MROCE_EXT_STREAMS) {
            if (seen_streams++ || vlen != MROCE_EXT_STREAMS_LEN)
                return EXT_BAD;
            c->max_streams = ld16(v + XS_MAX_STREAMS);
            if (c->max_streams == 0)
                return EXT_BAD;
        } else if (type == MROCE_EXT_PLANES) {
            unsigned cnt = vlen >= XP_ENTRIES ? v[XP_COUNT] : 0;
            if (seen_planes++ || cnt == 0 || cnt > MROCE_MAX_PLANES ||
                vlen != XP_ENTRIES + cnt * MROCE_EXT_PLANE_LEN)
                return EXT_BAD;
            c->nplanes = (uint8_t)cnt;
            for (unsigned i = 0; i < cnt; i++) {
                const uint8_t *e = v + XP_ENTRIES + i * MROCE_EXT_PLANE_LEN;
                memcpy(c->planes[i].addr, e + XE_ADDR, 16);
                c->planes[i].port = ld16(e + XE_PORT);
                c->planes[i].reserved = ld16(e + XE_RESERVED);
            }
        } else if (type == MROCE_EXT_SACK) {
            /* Once, fixed length, more words than the default span
             * (WIRE-52). */
            if (seen_sack++ || vlen != MROCE_EXT_SACK_LEN ||
                v[0] <= MROCE_MAX_SACK_WORDS)
                return EXT_BAD;
            c->sack_words = v[0];
        } else if (type == MROCE_EXT_SECURE) {
            /* Last, once, fixed length, SPI not 0 (WIRE-43): the MAC
             * covers everything before it. */
            if (c->sec_present++ || vlen != MROCE_EXT_SECURE_LEN ||
                n != X_VALUE + vlen)
                return EXT_BAD;
            c->sec_suite = v[XC_SUITE];
            c->sec_spi = ld32(v + XC_SPI);
            memcpy(c->sec_mac, v + XC_MAC, MROCE_SEC_MAC_LEN);
            if (c->sec_spi == 0)
                return EXT_BAD;
        } else if (MROCE_SEEDED_FAULT(CONN_EXT_STRICT)) {
            return MROCE_WIRE_EFIELD; /* unknown types must be skipped */
        }
        p += X_VALUE + vlen;
        n -= X_VALUE + vlen;
    }
    return 0;
}

static int pkt_decode(struct mrw_pkt *pkt, const uint8_t *buf, size_t len,
                      int check_crc);

int mrw_pkt_decode(struct mrw_pkt *pkt, const uint8_t *buf, size_t len)
{
    return pkt_decode(pkt, buf, len, 1);
}

int mrw_pkt_decode_opened(struct mrw_pkt *pkt, const uint8_t *buf, size_t len)
{
    return pkt_decode(pkt, buf, len, 0);
}

static void decode_base(struct mrw_base_hdr *b, const uint8_t *buf)
{
    b->version = buf[B_VERSION];
    b->opcode = buf[B_OPCODE];
    b->flags = ld16(buf + B_FLAGS);
    b->dst_qpn = ld32(buf + B_DST_QPN);
    b->token = ld64(buf + B_TOKEN);
    b->psn = ld32(buf + B_PSN);
    b->tsval = ld32(buf + B_TSVAL);
    b->entropy = ld16(buf + B_ENTROPY);
    b->pkt_len = ld16(buf + B_PKT_LEN);
}

int mrw_sec_decode(struct mrw_base_hdr *b, struct mrw_sec_hdr *s,
                   const uint8_t *buf, size_t len)
{
    if (len < MROCE_BASE_HDR_LEN)
        return MROCE_WIRE_ETRUNCATED;
    decode_base(b, buf);
    if (b->version != MROCE_VERSION)
        return MROCE_WIRE_EVERSION;
    if (!opcode_known(b->opcode))
        return MROCE_WIRE_EOPCODE;
    if (b->flags & ~(MROCE_F_KNOWN | MROCE_F_SECURE) ||
        !(b->flags & MROCE_F_SECURE))
        return MROCE_WIRE_EFLAGS;
    if (b->pkt_len > MROCE_MAX_PKT_LEN)
        return MROCE_WIRE_ELENGTH;
    if (len < b->pkt_len)
        return MROCE_WIRE_ETRUNCATED;
    if (len > b->pkt_len)
        return MROCE_WIRE_ELENGTH;
    if (len < MROCE_BASE_HDR_LEN + MROCE_SEC_HDR_LEN + MROCE_SEC_TAG_LEN)
        return MROCE_WIRE_ETRUNCATED;
    if (b->opcode == MROCE_OP_CONNECT_REQ || b->opcode == MROCE_OP_CONNECT_RESP)
        return MROCE_WIRE_EFIELD; /* never sealed (WIRE-38) */
    const uint8_t *p = buf + MROCE_BASE_HDR_LEN;
    s->spi = ld32(p + S_SPI);
    s->epoch = ld16(p + S_EPOCH);
    s->suite = p[S_SUITE];
    s->key_gen = p[S_KEY_GEN];
    s->seq = ld64(p + S_SEQ);
    return 0;
}

void mrw_sec_encode(uint8_t *p, const struct mrw_sec_hdr *s)
{
    st32(p + S_SPI, s->spi);
    st16(p + S_EPOCH, s->epoch);
    p[S_SUITE] = s->suite;
    p[S_KEY_GEN] = s->key_gen;
    st64(p + S_SEQ, s->seq);
}

static int pkt_decode(struct mrw_pkt *pkt, const uint8_t *buf, size_t len,
                      int check_crc)
{
    struct mrw_base_hdr *b = &pkt->base;
    const uint8_t *h;
    size_t body_end, hdr;
    uint32_t crc;

    if (len < MROCE_BASE_HDR_LEN)
        return MROCE_WIRE_ETRUNCATED;

    decode_base(b, buf);

    if (b->version != MROCE_VERSION && !MROCE_SEEDED_FAULT(VERSION_ANY))
        return MROCE_WIRE_EVERSION;
    if (!opcode_known(b->opcode))
        return MROCE_WIRE_EOPCODE;
    if (b->flags & ~MROCE_F_KNOWN)
        return MROCE_WIRE_EFLAGS;

    /* A datagram shorter than its pkt_len lost bytes (TRUNCATED); a longer
     * one, or a pkt_len the codec never produces, disagrees (LENGTH). */
    if (b->pkt_len > MROCE_MAX_PKT_LEN)
        return MROCE_WIRE_ELENGTH;
    if (len < b->pkt_len)
        return MROCE_WIRE_ETRUNCATED;
    if (len > b->pkt_len)
        return MROCE_WIRE_ELENGTH;
    if (len < MROCE_BASE_HDR_LEN + MROCE_CRC_LEN)
        return MROCE_WIRE_ETRUNCATED;

    body_end = len - MROCE_CRC_LEN;
    if (check_crc) {
        crc = pkt_crc(0, buf, body_end);
        if (crc != ld32(buf + body_end) && !MROCE_SEEDED_FAULT(CRC_SKIP))
            return MROCE_WIRE_ECRC;
    }

    h = buf + MROCE_BASE_HDR_LEN;
    switch (b->opcode) {
    case MROCE_OP_SEND:
    case MROCE_OP_WRITE:
    case MROCE_OP_READ_REQ:
    case MROCE_OP_FETCH_ADD:
    case MROCE_OP_CMP_SWAP: {
        struct mrw_req_hdr *r = &pkt->u.rq.req;
        int atomic = b->opcode == MROCE_OP_FETCH_ADD ||
                     b->opcode == MROCE_OP_CMP_SWAP;
        size_t sw = (b->flags & MROCE_F_STREAM) ? MROCE_STREAM_HDR_LEN : 0;
        hdr = MROCE_BASE_HDR_LEN + MROCE_REQ_HDR_LEN + sw +
              (atomic ? MROCE_ATOMIC_HDR_LEN : 0);
        if (body_end < hdr)
            return MROCE_WIRE_ETRUNCATED;
        decode_req(r, h);
        if (sw) {
            r->stream = ld16(h + MROCE_REQ_HDR_LEN + ST_STREAM);
            r->stream_resvd = ld16(h + MROCE_REQ_HDR_LEN + ST_RESERVED);
            /* Stream 0 has exactly one encoding: no STREAM word. */
            if (r->stream == 0 && !MROCE_SEEDED_FAULT(STREAM_ZERO_OK))
                return MROCE_WIRE_EFIELD;
        } else {
            r->stream = 0;
            r->stream_resvd = 0;
        }
        if (atomic) {
            const uint8_t *at = h + MROCE_REQ_HDR_LEN + sw;
            pkt->u.rq.atomic.swap_add = ld64(at + AT_SWAP_ADD);
            pkt->u.rq.atomic.compare = ld64(at + AT_COMPARE);
        } else {
            /* Defined contents, so a whole-struct compare or log is stable. */
            pkt->u.rq.atomic.swap_add = 0;
            pkt->u.rq.atomic.compare = 0;
        }
        set_payload(pkt, buf, hdr, body_end);

        if (b->opcode == MROCE_OP_SEND || b->opcode == MROCE_OP_WRITE)
            return check_segment(b->flags, r->msg_len, r->offset,
                                 pkt->payload_len);
        /* READ_REQ and the atomics are single-packet requests without
         * payload: msg_len is the length asked for, not this packet's. */
        if ((b->flags & MROCE_F_IMM) || pkt->payload_len != 0 ||
            r->offset != 0 || (b->flags & F_FIRST_LAST) != F_FIRST_LAST)
            return MROCE_WIRE_EFIELD;
        if (atomic && r->msg_len != MROCE_ATOMIC_LEN)
            return MROCE_WIRE_EFIELD;
        return 0;
    }

    case MROCE_OP_READ_RESP:
    case MROCE_OP_ATOMIC_RESP: {
        struct mrw_resp_hdr *s = &pkt->u.resp;
        hdr = MROCE_BASE_HDR_LEN + MROCE_RESP_HDR_LEN;
        if (body_end < hdr)
            return MROCE_WIRE_ETRUNCATED;
        s->req_msn = ld32(h + RS_REQ_MSN);
        s->msg_len = ld32(h + RS_MSG_LEN);
        s->offset = ld32(h + RS_OFFSET);
        s->stream = ld16(h + RS_STREAM);
        s->reserved = ld16(h + RS_RESERVED);
        set_payload(pkt, buf, hdr, body_end);
        if (b->flags & RESP_BAD)
            return MROCE_WIRE_EFIELD;
        /* The atomic's original value travels as one 8-byte packet. */
        if (b->opcode == MROCE_OP_ATOMIC_RESP &&
            (pkt->payload_len != MROCE_ATOMIC_LEN ||
             s->msg_len != MROCE_ATOMIC_LEN || s->offset != 0))
            return MROCE_WIRE_EFIELD;
        return check_segment(b->flags, s->msg_len, s->offset, pkt->payload_len);
    }

    case MROCE_OP_ACK: {
        struct mrw_ack_hdr *a = &pkt->u.ack;
        unsigned i;
        hdr = MROCE_BASE_HDR_LEN + MROCE_ACK_HDR_LEN;
        if (body_end < hdr)
            return MROCE_WIRE_ETRUNCATED;
        a->cum_psn = ld32(h + A_CUM_PSN);
        a->echo_psn = ld32(h + A_ECHO_PSN);
        a->echo_ts = ld32(h + A_ECHO_TS);
        a->echo_entropy = ld16(h + A_ECHO_ENTROPY);
        a->echo_flags = h[A_ECHO_FLAGS];
        a->sack_words = h[A_SACK_WORDS];
        a->ce_count = ld32(h + A_CE_COUNT);
        a->rx_count = ld32(h + A_RX_COUNT);
        a->credit = ld32(h + A_CREDIT);
        a->ack_delay = ld32(h + A_ACK_DELAY);
        pkt->payload = NULL;
        pkt->payload_len = 0;
        /* Any SACK Words count is well formed here (WIRE-53): the QP
         * knows how many its connection negotiated. */
        if ((b->flags & CTL_BAD) || (a->echo_flags & ~ECHO_KNOWN))
            return MROCE_WIRE_EFIELD;
        hdr += (size_t)a->sack_words * 4;
        if (body_end < hdr)
            return MROCE_WIRE_ETRUNCATED;
        if (body_end > hdr)
            return MROCE_WIRE_EFIELD;
        /* Words not sent carry no bits; those of the default span are
         * zeroed so a reader may scan all of it. */
        for (i = 0; i < a->sack_words; i++)
            a->sack[i] = ld32(h + A_SACK + 4 * i);
        for (; i < MROCE_MAX_SACK_WORDS; i++)
            a->sack[i] = 0;
        return 0;
    }

    case MROCE_OP_NAK: {
        struct mrw_nak_hdr *n = &pkt->u.nak;
        hdr = MROCE_BASE_HDR_LEN + MROCE_NAK_HDR_LEN;
        if (body_end < hdr)
            return MROCE_WIRE_ETRUNCATED;
        n->nak_psn = ld32(h + N_NAK_PSN);
        n->msn = ld32(h + N_MSN);
        n->code = h[N_CODE];
        n->rnr_delay = h[N_RNR_DELAY];
        n->stream = ld16(h + N_STREAM);
        n->cum_psn = ld32(h + N_CUM_PSN);
        pkt->payload = NULL;
        pkt->payload_len = 0;
        if (body_end != hdr || (b->flags & CTL_BAD) || !nak_code_known(n->code))
            return MROCE_WIRE_EFIELD;
        return 0;
    }

    case MROCE_OP_CONNECT_REQ:
    case MROCE_OP_CONNECT_RESP: {
        struct mrw_conn_hdr *c = &pkt->u.conn;
        hdr = MROCE_BASE_HDR_LEN + MROCE_CONN_HDR_LEN;
        if (body_end < hdr)
            return MROCE_WIRE_ETRUNCATED;
        c->src_qpn = ld32(h + C_SRC_QPN);
        c->start_psn = ld32(h + C_START_PSN);
        c->token = ld64(h + C_TOKEN);
        c->mtu = ld16(h + C_MTU);
        c->npaths = ld16(h + C_NPATHS);
        c->rx_window = ld32(h + C_RX_WINDOW);
        c->max_rd_atomic = ld32(h + C_MAX_RD_ATOMIC);
        c->flags = ld32(h + C_FLAGS);
        c->max_ack_delay = ld32(h + C_MAX_ACK_DELAY);
        pkt->payload = NULL;
        pkt->payload_len = 0;
        /* conn.flags are capabilities: unknown bits are ignored, not
         * rejected, so a newer peer can still connect. */
        if ((b->flags & CTL_BAD) || c->mtu < MROCE_MIN_MTU)
            return MROCE_WIRE_EFIELD;
        return decode_conn_ext(c, buf + hdr, body_end - hdr);
    }

    case MROCE_OP_DISCONNECT:
    case MROCE_OP_DISCONNECT_ACK:
        pkt->payload = NULL;
        pkt->payload_len = 0;
        if (body_end != MROCE_BASE_HDR_LEN || (b->flags & CTL_BAD))
            return MROCE_WIRE_EFIELD;
        return 0;

    default:
        return MROCE_WIRE_EOPCODE; /* unreachable: opcode checked above */
    }
}

/* ---- encoding ------------------------------------------------------------ */

/* The STREAM word follows the REQ header when the flag says so. */
static inline size_t stream_len(const struct mrw_pkt *pkt)
{
    return (pkt->base.flags & MROCE_F_STREAM) ? MROCE_STREAM_HDR_LEN : 0;
}

/* Bytes of CONN extensions the encoder writes: STREAMS when max_streams is
 * set, PLANES when nplanes is, SACK when sack_words is, SECURE last. */
static inline size_t conn_ext_len(const struct mrw_conn_hdr *c)
{
    size_t n = 0;
    if (c->max_streams)
        n += X_VALUE + MROCE_EXT_STREAMS_LEN;
    if (c->sack_words)
        n += X_VALUE + MROCE_EXT_SACK_LEN;
    if (c->nplanes)
        n += X_VALUE + XP_ENTRIES + (size_t)c->nplanes * MROCE_EXT_PLANE_LEN;
    if (c->sec_present)
        n += X_VALUE + MROCE_EXT_SECURE_LEN;
    return n;
}

size_t mrw_pkt_hdr_len(const struct mrw_pkt *pkt)
{
    switch (pkt->base.opcode) {
    case MROCE_OP_SEND:
    case MROCE_OP_WRITE:
    case MROCE_OP_READ_REQ:
        return MROCE_BASE_HDR_LEN + MROCE_REQ_HDR_LEN + stream_len(pkt);
    case MROCE_OP_FETCH_ADD:
    case MROCE_OP_CMP_SWAP:
        return MROCE_BASE_HDR_LEN + MROCE_REQ_HDR_LEN + stream_len(pkt) +
               MROCE_ATOMIC_HDR_LEN;
    case MROCE_OP_READ_RESP:
    case MROCE_OP_ATOMIC_RESP:
        return MROCE_BASE_HDR_LEN + MROCE_RESP_HDR_LEN;
    case MROCE_OP_ACK:
        return MROCE_BASE_HDR_LEN + MROCE_ACK_HDR_LEN +
               (size_t)pkt->u.ack.sack_words * 4;
    case MROCE_OP_NAK:
        return MROCE_BASE_HDR_LEN + MROCE_NAK_HDR_LEN;
    case MROCE_OP_CONNECT_REQ:
    case MROCE_OP_CONNECT_RESP:
        if (pkt->u.conn.nplanes > MROCE_MAX_PLANES)
            return 0;
        return MROCE_BASE_HDR_LEN + MROCE_CONN_HDR_LEN +
               conn_ext_len(&pkt->u.conn);
    case MROCE_OP_DISCONNECT:
    case MROCE_OP_DISCONNECT_ACK:
        return MROCE_BASE_HDR_LEN;
    default:
        return 0;
    }
}

/* The REQ header and, with MROCE_F_STREAM, the STREAM word; returns the
 * STREAM word's length (0 or 4). */
static inline size_t encode_req(uint8_t *p, const struct mrw_req_hdr *r,
                                uint16_t flags)
{
    st32(p + R_MSN, r->msn);
    st32(p + R_RSN, r->rsn);
    st64(p + R_RADDR, r->raddr);
    st32(p + R_RKEY, r->rkey);
    st32(p + R_MSG_LEN, r->msg_len);
    st32(p + R_OFFSET, r->offset);
    st32(p + R_IMM, r->imm);
    if (!(flags & MROCE_F_STREAM))
        return 0;
    st16(p + MROCE_REQ_HDR_LEN + ST_STREAM, r->stream);
    st16(p + MROCE_REQ_HDR_LEN + ST_RESERVED, r->stream_resvd);
    return MROCE_STREAM_HDR_LEN;
}

static void encode_conn_ext(uint8_t *p, const struct mrw_conn_hdr *c)
{
    if (c->max_streams) {
        p[X_TYPE] = MROCE_EXT_STREAMS;
        p[X_LEN] = MROCE_EXT_STREAMS_LEN;
        st16(p + X_VALUE + XS_MAX_STREAMS, c->max_streams);
        st16(p + X_VALUE + 2, 0);
        p += X_VALUE + MROCE_EXT_STREAMS_LEN;
    }
    if (c->nplanes) {
        unsigned vlen = XP_ENTRIES + c->nplanes * MROCE_EXT_PLANE_LEN;
        p[X_TYPE] = MROCE_EXT_PLANES;
        p[X_LEN] = (uint8_t)vlen;
        p[X_VALUE + XP_COUNT] = c->nplanes;
        memset(p + X_VALUE + 1, 0, 3);
        for (unsigned i = 0; i < c->nplanes; i++) {
            uint8_t *e = p + X_VALUE + XP_ENTRIES + i * MROCE_EXT_PLANE_LEN;
            memcpy(e + XE_ADDR, c->planes[i].addr, 16);
            st16(e + XE_PORT, c->planes[i].port);
            st16(e + XE_RESERVED, c->planes[i].reserved);
        }
        p += X_VALUE + vlen;
    }
    if (c->sack_words) {
        p[X_TYPE] = MROCE_EXT_SACK;
        p[X_LEN] = MROCE_EXT_SACK_LEN;
        p[X_VALUE] = c->sack_words;
        memset(p + X_VALUE + 1, 0, 3);
        p += X_VALUE + MROCE_EXT_SACK_LEN;
    }
    if (c->sec_present) { /* last: its MAC covers what precedes it */
        p[X_TYPE] = MROCE_EXT_SECURE;
        p[X_LEN] = MROCE_EXT_SECURE_LEN;
        p[X_VALUE + XC_SUITE] = c->sec_suite;
        memset(p + X_VALUE + 1, 0, 3);
        st32(p + X_VALUE + XC_SPI, c->sec_spi);
        memcpy(p + X_VALUE + XC_MAC, c->sec_mac, MROCE_SEC_MAC_LEN);
    }
}

/*
 * Besides a too-small cap, encoding also fails (returns 0) for what cannot be
 * represented: an unknown opcode or a total length over MROCE_MAX_PKT_LEN
 * (pkt_len is 16 bits and the decoder would reject it).  The version byte is always MROCE_VERSION: this
 * codec speaks only that version, and a zero-initialised struct must not
 * produce packets every receiver drops.
 */
size_t mrw_pkt_encode_hdr(const struct mrw_pkt *pkt, uint8_t *buf, size_t cap)
{
    const struct mrw_base_hdr *b = &pkt->base;
    size_t hdr = mrw_pkt_hdr_len(pkt);
    size_t total = hdr + (size_t)pkt->payload_len + MROCE_CRC_LEN;
    uint8_t *h = buf + MROCE_BASE_HDR_LEN;

    if (hdr == 0 || pkt->payload_len > MROCE_MAX_PKT_LEN ||
        total > MROCE_MAX_PKT_LEN || total > cap)
        return 0;

    buf[B_VERSION] = MROCE_VERSION;
    buf[B_OPCODE] = b->opcode;
    st16(buf + B_FLAGS, b->flags);
    st32(buf + B_DST_QPN, b->dst_qpn);
    st64(buf + B_TOKEN, b->token);
    st32(buf + B_PSN, b->psn);
    st32(buf + B_TSVAL, b->tsval);
    st16(buf + B_ENTROPY, b->entropy);
    st16(buf + B_PKT_LEN, (uint16_t)total);

    switch (b->opcode) {
    case MROCE_OP_FETCH_ADD:
    case MROCE_OP_CMP_SWAP: {
        size_t sw = encode_req(h, &pkt->u.rq.req, b->flags);
        st64(h + MROCE_REQ_HDR_LEN + sw + AT_SWAP_ADD,
             pkt->u.rq.atomic.swap_add);
        st64(h + MROCE_REQ_HDR_LEN + sw + AT_COMPARE, pkt->u.rq.atomic.compare);
        break;
    }
    case MROCE_OP_SEND:
    case MROCE_OP_WRITE:
    case MROCE_OP_READ_REQ:
        encode_req(h, &pkt->u.rq.req, b->flags);
        break;
    case MROCE_OP_READ_RESP:
    case MROCE_OP_ATOMIC_RESP: {
        const struct mrw_resp_hdr *s = &pkt->u.resp;
        st32(h + RS_REQ_MSN, s->req_msn);
        st32(h + RS_MSG_LEN, s->msg_len);
        st32(h + RS_OFFSET, s->offset);
        st16(h + RS_STREAM, s->stream);
        st16(h + RS_RESERVED, s->reserved);
        break;
    }
    case MROCE_OP_ACK: {
        const struct mrw_ack_hdr *a = &pkt->u.ack;
        unsigned i;
        st32(h + A_CUM_PSN, a->cum_psn);
        st32(h + A_ECHO_PSN, a->echo_psn);
        st32(h + A_ECHO_TS, a->echo_ts);
        st16(h + A_ECHO_ENTROPY, a->echo_entropy);
        h[A_ECHO_FLAGS] = a->echo_flags;
        h[A_SACK_WORDS] = a->sack_words;
        st32(h + A_CE_COUNT, a->ce_count);
        st32(h + A_RX_COUNT, a->rx_count);
        st32(h + A_CREDIT, a->credit);
        st32(h + A_ACK_DELAY, a->ack_delay);
        for (i = 0; i < a->sack_words; i++)
            st32(h + A_SACK + 4 * i, a->sack[i]);
        break;
    }
    case MROCE_OP_NAK: {
        const struct mrw_nak_hdr *n = &pkt->u.nak;
        st32(h + N_NAK_PSN, n->nak_psn);
        st32(h + N_MSN, n->msn);
        h[N_CODE] = n->code;
        h[N_RNR_DELAY] = n->rnr_delay;
        st16(h + N_STREAM, n->stream);
        st32(h + N_CUM_PSN, n->cum_psn);
        break;
    }
    case MROCE_OP_CONNECT_REQ:
    case MROCE_OP_CONNECT_RESP: {
        const struct mrw_conn_hdr *c = &pkt->u.conn;
        st32(h + C_SRC_QPN, c->src_qpn);
        st32(h + C_START_PSN, c->start_psn);
        st64(h + C_TOKEN, c->token);
        st16(h + C_MTU, c->mtu);
        st16(h + C_NPATHS, c->npaths);
        st32(h + C_RX_WINDOW, c->rx_window);
        st32(h + C_MAX_RD_ATOMIC, c->max_rd_atomic);
        st32(h + C_FLAGS, c->flags);
        st32(h + C_MAX_ACK_DELAY, c->max_ack_delay);
        encode_conn_ext(h + MROCE_CONN_HDR_LEN, c);
        break;
    }
    default: /* DISCONNECT, DISCONNECT_ACK: base header only */
        break;
    }
    return hdr;
}

size_t mrw_pkt_seal(uint8_t *buf, size_t len)
{
    st32(buf + len, pkt_crc(0, buf, len));
    return len + MROCE_CRC_LEN;
}

size_t mrw_pkt_seal_split(uint8_t *buf, size_t hdr_len, const uint8_t *payload,
                          size_t payload_len)
{
    uint32_t crc = pkt_crc(0, buf, hdr_len);
    st32(buf + hdr_len, pkt_crc(crc, payload, payload_len));
    return hdr_len + payload_len + MROCE_CRC_LEN;
}

uint32_t mrw_pkt_crc_hdr(const uint8_t *buf, size_t hdr_len)
{
    return pkt_crc(0, buf, hdr_len);
}

uint32_t mrw_pkt_crc_copy(uint32_t crc, uint8_t *dst, const uint8_t *src,
                          size_t len)
{
#ifdef MROCE_MEASURE_NO_CRC
    if (len)
        memcpy(dst, src, len);
    return crc;
#else
    return mrw_crc32c_copy(crc, dst, src, len);
#endif
}

size_t mrw_pkt_seal_crc(uint8_t *buf, size_t len, uint32_t crc)
{
    st32(buf + len, crc);
    return len + MROCE_CRC_LEN;
}

size_t mrw_pkt_encode(const struct mrw_pkt *pkt, uint8_t *buf, size_t cap)
{
    size_t hdr = mrw_pkt_encode_hdr(pkt, buf, cap);
    if (hdr == 0)
        return 0;
    /* memmove: the payload may already sit at buf + hdr (a caller that
     * builds packets in place), and memcpy onto itself is undefined. */
    if (pkt->payload_len)
        memmove(buf + hdr, pkt->payload, pkt->payload_len);
    return mrw_pkt_seal(buf, hdr + pkt->payload_len);
}

/* ---- names and opcode properties --------------------------------------- */

const char *mrw_opcode_name(unsigned opcode)
{
    switch (opcode) {
#define X(name, val, psn, req) \
    case (val):                \
        return #name;
        MROCE_OPCODES(X)
#undef X
    default:
        return "?";
    }
}

const char *mrw_nak_code_name(unsigned code)
{
    switch (code) {
#define X(name, val) \
    case (val):      \
        return #name;
        MROCE_NAK_CODES(X)
#undef X
    default:
        return "?";
    }
}

/* 0 is not an error but is what decode returns most; naming it "OK" keeps
 * drop/trace logs free of special cases. */
const char *mrw_wire_error_name(int err)
{
    switch (err) {
    case 0:
        return "OK";
#define X(name, val, desc) \
    case (val):            \
        return #name;
        MROCE_WIRE_ERRORS(X)
#undef X
    default:
        return "?";
    }
}

int mrw_opcode_has_psn(unsigned opcode)
{
    switch (opcode) {
#define X(name, val, psn, req) \
    case (val):                \
        return (psn);
        MROCE_OPCODES(X)
#undef X
    default:
        return 0;
    }
}
