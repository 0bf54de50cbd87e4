/*
 * test_wire.c - tests of the wire codec (src/wire/) against the shared test
 * vectors and against itself.
 *
 * The vectors in tests/vectors/wire_vectors.txt pin the byte layout: each
 * valid one must decode to exactly the listed fields and re-encode to the
 * same bytes, each invalid one must fail with the listed error, and the file
 * itself must keep covering every opcode, NAK code and decode error.  On top
 * of that: CRC32C known answers and both CRC paths against a bitwise
 * reference; seeded random encode/decode round trips for every opcode;
 * every truncation and every single-bit flip of every valid vector; encoder
 * limits; and a small built-in mutation fuzzer, so that the plain CTest run
 * already exercises what fuzz/fuzz_wire.c explores at length.  Stream
 * packets (STREAM word) and CONNECT extensions (STREAMS, PLANES, unknown
 * types) take part in all of these.
 *
 * Run from the project root (CTest does), or pass --vectors PATH.
 */
#include "../src/wire/wire_internal.h"
#include "case_table.h"
#include "mroce/wire.h"
#include "testutil.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define VECTOR_PATH "tests/vectors/wire_vectors.txt"
#define MAX_VEC_BYTES 4096
#define MAX_VEC_FIELDS 320
#define ROUNDTRIP_ITERS 2000 /* per opcode */
#define MUTATE_ITERS 20000

static const struct {
    unsigned val;
    int has_psn;
} all_opcodes[] = {
#define X(name, val, psn, req) {(val), (psn)},
    MROCE_OPCODES(X)
#undef X
};
#define N_OPCODES (sizeof all_opcodes / sizeof all_opcodes[0])

static const unsigned all_nak_codes[] = {
#define X(name, val) (val),
    MROCE_NAK_CODES(X)
#undef X
};
#define N_NAK_CODES (sizeof all_nak_codes / sizeof all_nak_codes[0])

static const int all_errors[] = {
#define X(name, val, desc) (val),
    MROCE_WIRE_ERRORS(X)
#undef X
};
#define N_ERRORS (sizeof all_errors / sizeof all_errors[0])

/* Base flag names in bit order, as the vector file writes them. */
static const char *const flag_names[] = {
    "FIRST", "LAST",  "IMM",    "ACK_REQ", "SOLICITED",
    "RETX",  "PROBE", "CREDIT", "STREAM",
};
#define N_FLAG_NAMES (sizeof flag_names / sizeof flag_names[0])

/* Exact-size heap copy: ASan then flags any read past the datagram. */
static int decode_exact(struct mrw_pkt *pkt, const uint8_t *buf, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    int rc;
    if (!copy)
        abort();
    if (len)
        memcpy(copy, buf, len);
    rc = mrw_pkt_decode(pkt, copy, len);
    /* payload must not outlive the copy: point it back into buf */
    if (rc == 0 && pkt->payload)
        pkt->payload = buf + (pkt->payload - copy);
    free(copy);
    return rc;
}

/*
 * The bytes the encoder gives back for a packet that decoded cleanly.  A
 * CONNECT's extensions are rewritten the way the codec keeps them: STREAMS
 * then PLANES, their reserved bytes (not decoded) as 0, entries of unknown
 * type (skipped, WIRE-33) gone, pkt_len and CRC to match.  Other packets
 * come back as they are.  Returns the length written to out.
 */
static size_t canonical_bytes(const uint8_t *in, size_t len, uint8_t *out)
{
    const size_t ext0 = MROCE_BASE_HDR_LEN + MROCE_CONN_HDR_LEN;
    const uint8_t *streams = NULL, *planes = NULL, *sack = NULL;
    size_t at, n;
    memcpy(out, in, len);
    if (len < ext0 + MROCE_CRC_LEN ||
        (in[1] != MROCE_OP_CONNECT_REQ && in[1] != MROCE_OP_CONNECT_RESP))
        return len;
    for (at = ext0; at + 2 <= len - MROCE_CRC_LEN; at += 2u + in[at + 1]) {
        if (in[at] == MROCE_EXT_STREAMS)
            streams = in + at;
        else if (in[at] == MROCE_EXT_PLANES)
            planes = in + at;
        else if (in[at] == MROCE_EXT_SACK)
            sack = in + at;
    }
    n = ext0;
    if (streams) {
        memcpy(out + n, streams, 4); /* type, length, Max Streams */
        memset(out + n + 4, 0, 2);
        n += 2 + MROCE_EXT_STREAMS_LEN;
    }
    if (planes) {
        memcpy(out + n, planes, 2u + planes[1]);
        memset(out + n + 3, 0, 3); /* after type, length, count */
        n += 2u + planes[1];
    }
    if (sack) {
        memcpy(out + n, sack, 3); /* type, length, SACK Words */
        memset(out + n + 3, 0, 3);
        n += 2 + MROCE_EXT_SACK_LEN;
    }
    out[26] = (uint8_t)((n + MROCE_CRC_LEN) >> 8);
    out[27] = (uint8_t)(n + MROCE_CRC_LEN);
    return mrw_pkt_seal(out, n);
}

/* ---- field access by vector path ----------------------------------------- */

/* G_STREAM, G_STREAMS, G_PLANES and G_PLANE are present only when the
 * packet carries them: the STREAM word, the STREAMS and PLANES extensions,
 * plane entries below nplanes. */
enum group {
    G_BASE,
    G_REQ,
    G_STREAM,
    G_ATOMIC,
    G_RESP,
    G_ACK,
    G_NAK,
    G_CONN,
    G_STREAMS,
    G_PLANES,
    G_PLANE,
    G_SACK,
    G_SACKX
};

#define FLD(path, grp, member)                       \
    {                                                \
        path, grp, offsetof(struct mrw_pkt, member), \
            sizeof(((struct mrw_pkt *)0)->member)    \
    }

static const struct field {
    const char *path;
    enum group group;
    size_t off, size;
} fields[] = {
    FLD("base.version", G_BASE, base.version),
    FLD("base.opcode", G_BASE, base.opcode),
    FLD("base.flags", G_BASE, base.flags),
    FLD("base.dst_qpn", G_BASE, base.dst_qpn),
    FLD("base.token", G_BASE, base.token),
    FLD("base.psn", G_BASE, base.psn),
    FLD("base.tsval", G_BASE, base.tsval),
    FLD("base.entropy", G_BASE, base.entropy),
    FLD("base.pkt_len", G_BASE, base.pkt_len),
    FLD("req.msn", G_REQ, u.rq.req.msn),
    FLD("req.rsn", G_REQ, u.rq.req.rsn),
    FLD("req.raddr", G_REQ, u.rq.req.raddr),
    FLD("req.rkey", G_REQ, u.rq.req.rkey),
    FLD("req.msg_len", G_REQ, u.rq.req.msg_len),
    FLD("req.offset", G_REQ, u.rq.req.offset),
    FLD("req.imm", G_REQ, u.rq.req.imm),
    FLD("req.stream", G_STREAM, u.rq.req.stream),
    FLD("req.stream_resvd", G_STREAM, u.rq.req.stream_resvd),
    FLD("atomic.swap_add", G_ATOMIC, u.rq.atomic.swap_add),
    FLD("atomic.compare", G_ATOMIC, u.rq.atomic.compare),
    FLD("resp.req_msn", G_RESP, u.resp.req_msn),
    FLD("resp.msg_len", G_RESP, u.resp.msg_len),
    FLD("resp.offset", G_RESP, u.resp.offset),
    FLD("resp.stream", G_RESP, u.resp.stream),
    FLD("resp.reserved", G_RESP, u.resp.reserved),
    FLD("ack.cum_psn", G_ACK, u.ack.cum_psn),
    FLD("ack.echo_psn", G_ACK, u.ack.echo_psn),
    FLD("ack.echo_ts", G_ACK, u.ack.echo_ts),
    FLD("ack.echo_entropy", G_ACK, u.ack.echo_entropy),
    FLD("ack.echo_flags", G_ACK, u.ack.echo_flags),
    FLD("ack.sack_words", G_ACK, u.ack.sack_words),
    FLD("ack.ce_count", G_ACK, u.ack.ce_count),
    FLD("ack.rx_count", G_ACK, u.ack.rx_count),
    FLD("ack.credit", G_ACK, u.ack.credit),
    FLD("ack.ack_delay", G_ACK, u.ack.ack_delay),
    FLD("ack.sack[0]", G_SACK, u.ack.sack[0]),
    FLD("ack.sack[1]", G_SACK, u.ack.sack[1]),
    FLD("ack.sack[2]", G_SACK, u.ack.sack[2]),
    FLD("ack.sack[3]", G_SACK, u.ack.sack[3]),
    FLD("ack.sack[4]", G_SACK, u.ack.sack[4]),
    FLD("ack.sack[5]", G_SACK, u.ack.sack[5]),
    FLD("ack.sack[6]", G_SACK, u.ack.sack[6]),
    FLD("ack.sack[7]", G_SACK, u.ack.sack[7]),
    /* beyond the default span (WIRE-53); later words by their index */
    FLD("ack.sack[8]", G_SACK, u.ack.sack[8]),
    FLD("ack.sack[9]", G_SACK, u.ack.sack[9]),
    FLD("ack.sack[10]", G_SACK, u.ack.sack[10]),
    FLD("ack.sack[11]", G_SACK, u.ack.sack[11]),
    FLD("ack.sack[12]", G_SACK, u.ack.sack[12]),
    FLD("ack.sack[13]", G_SACK, u.ack.sack[13]),
    FLD("ack.sack[14]", G_SACK, u.ack.sack[14]),
    FLD("ack.sack[15]", G_SACK, u.ack.sack[15]),
    FLD("nak.nak_psn", G_NAK, u.nak.nak_psn),
    FLD("nak.msn", G_NAK, u.nak.msn),
    FLD("nak.code", G_NAK, u.nak.code),
    FLD("nak.rnr_delay", G_NAK, u.nak.rnr_delay),
    FLD("nak.stream", G_NAK, u.nak.stream),
    FLD("nak.cum_psn", G_NAK, u.nak.cum_psn),
    FLD("conn.src_qpn", G_CONN, u.conn.src_qpn),
    FLD("conn.start_psn", G_CONN, u.conn.start_psn),
    FLD("conn.token", G_CONN, u.conn.token),
    FLD("conn.mtu", G_CONN, u.conn.mtu),
    FLD("conn.npaths", G_CONN, u.conn.npaths),
    FLD("conn.rx_window", G_CONN, u.conn.rx_window),
    FLD("conn.max_rd_atomic", G_CONN, u.conn.max_rd_atomic),
    FLD("conn.flags", G_CONN, u.conn.flags),
    FLD("conn.max_ack_delay", G_CONN, u.conn.max_ack_delay),
    FLD("conn.max_streams", G_STREAMS, u.conn.max_streams),
    FLD("conn.nplanes", G_PLANES, u.conn.nplanes),
    FLD("conn.sack_words", G_SACKX, u.conn.sack_words),
#define PLANE_FLDS(i)                                                    \
    FLD("conn.planes[" #i "].addr", G_PLANE, u.conn.planes[i].addr),     \
        FLD("conn.planes[" #i "].port", G_PLANE, u.conn.planes[i].port), \
        FLD("conn.planes[" #i "].reserved", G_PLANE,                     \
            u.conn.planes[i].reserved)
    PLANE_FLDS(0),
    PLANE_FLDS(1),
    PLANE_FLDS(2),
    PLANE_FLDS(3),
    PLANE_FLDS(4),
    PLANE_FLDS(5),
    PLANE_FLDS(6),
    PLANE_FLDS(7),
#undef PLANE_FLDS
};
#define N_FIELDS (sizeof fields / sizeof fields[0])
/* Fields wider than 8 bytes (plane addresses) are byte strings. */
#define FIELD_IS_BYTES(f) ((f)->size > 8)

static uint64_t field_get(const struct mrw_pkt *p, const struct field *f)
{
    const unsigned char *src = (const unsigned char *)p + f->off;
    switch (f->size) {
    case 1:
        return *src;
    case 2: {
        uint16_t v;
        memcpy(&v, src, 2);
        return v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, src, 4);
        return v;
    }
    default: {
        uint64_t v;
        memcpy(&v, src, 8);
        return v;
    }
    }
}

/* Does this opcode's decoded packet have the field? */
static int field_applies(const struct field *f, const struct mrw_pkt *p)
{
    unsigned op = p->base.opcode;
    switch (f->group) {
    case G_BASE:
        return 1;
    case G_REQ:
        return op == MROCE_OP_SEND || op == MROCE_OP_WRITE ||
               op == MROCE_OP_READ_REQ || op == MROCE_OP_FETCH_ADD ||
               op == MROCE_OP_CMP_SWAP;
    case G_STREAM:
        return (op == MROCE_OP_SEND || op == MROCE_OP_WRITE ||
                op == MROCE_OP_READ_REQ || op == MROCE_OP_FETCH_ADD ||
                op == MROCE_OP_CMP_SWAP) &&
               (p->base.flags & MROCE_F_STREAM);
    case G_ATOMIC:
        return op == MROCE_OP_FETCH_ADD || op == MROCE_OP_CMP_SWAP;
    case G_RESP:
        return op == MROCE_OP_READ_RESP || op == MROCE_OP_ATOMIC_RESP;
    case G_ACK:
        return op == MROCE_OP_ACK;
    case G_SACK:
        return op == MROCE_OP_ACK &&
               (f->off - offsetof(struct mrw_pkt, u.ack.sack)) / 4 <
                   p->u.ack.sack_words;
    case G_NAK:
        return op == MROCE_OP_NAK;
    case G_CONN:
        return op == MROCE_OP_CONNECT_REQ || op == MROCE_OP_CONNECT_RESP;
    case G_STREAMS:
        return (op == MROCE_OP_CONNECT_REQ || op == MROCE_OP_CONNECT_RESP) &&
               p->u.conn.max_streams != 0;
    case G_PLANES:
        return (op == MROCE_OP_CONNECT_REQ || op == MROCE_OP_CONNECT_RESP) &&
               p->u.conn.nplanes != 0;
    case G_SACKX:
        return (op == MROCE_OP_CONNECT_REQ || op == MROCE_OP_CONNECT_RESP) &&
               p->u.conn.sack_words != 0;
    case G_PLANE:
        return (op == MROCE_OP_CONNECT_REQ || op == MROCE_OP_CONNECT_RESP) &&
               (f->off - offsetof(struct mrw_pkt, u.conn.planes)) /
                       sizeof(struct mrw_plane_addr) <
                   p->u.conn.nplanes;
    }
    return 0;
}

/* ---- vector file -----------------------------------------------------------
 */

struct vector {
    char name[80];
    int line;
    uint8_t bytes[MAX_VEC_BYTES];
    size_t len;
    int have_expect, expect; /* 0 = ok, else MROCE_WIRE_E* */
    int nfields;
    char *key[MAX_VEC_FIELDS];
    char *val[MAX_VEC_FIELDS];
};

/* What the whole file covers (checked at the end). */
static struct {
    int nvec, nvalid;
    int valid_op[256];
    int op_imm, op_noimm; /* SEND/WRITE valid vectors with / without IMM */
    int ack_nosack, ack_multisack;
    int nak_code[256];
    int err[16];
    int stream_req, stream_atomic; /* valid requests with a STREAM word */
    int resp_stream, nak_stream;   /* valid RESP/NAK naming a stream > 0 */
    int conn_streams, conn_planes, conn_skipped; /* CONN extensions */
    int bad_stream; /* invalid vectors with flag STREAM */
} cov;

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s &&
           (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
        *--e = '\0';
    return s;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Parse space-separated hex bytes; returns count or -1 on a syntax error. */
static long parse_hex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    while (*s) {
        int hi, lo;
        if (*s == ' ' || *s == '\t') {
            s++;
            continue;
        }
        hi = hexval(s[0]);
        lo = hi < 0 ? -1 : hexval(s[1]);
        if (hi < 0 || lo < 0 || n >= cap)
            return -1;
        out[n++] = (uint8_t)(hi << 4 | lo);
        s += 2;
    }
    return (long)n;
}

static int parse_uint(const char *s, uint64_t *out)
{
    char *end;
    if (!*s || *s == '-')
        return 0;
    *out = strtoull(s, &end, 0);
    return *end == '\0';
}

/* Field value, with the symbolic forms the format allows. */
static int parse_value(const char *key, const char *s, uint64_t *out)
{
    if (strcmp(key, "base.opcode") == 0) {
        unsigned v;
        for (v = 0; v < 256; v++)
            if (strcmp(mrw_opcode_name(v), s) == 0) {
                *out = v;
                return 1;
            }
        return 0;
    }
    if (strcmp(key, "nak.code") == 0) {
        unsigned v;
        for (v = 0; v < 256; v++)
            if (strcmp(mrw_nak_code_name(v), s) == 0) {
                *out = v;
                return 1;
            }
        return 0;
    }
    if (strcmp(key, "base.flags") == 0 && strcmp(s, "0") != 0) {
        uint64_t v = 0;
        while (*s) {
            char tok[32];
            const char *bar = strchr(s, '|');
            size_t len = bar ? (size_t)(bar - s) : strlen(s);
            unsigned i;
            uint64_t num;
            if (len == 0 || len >= sizeof tok)
                return 0;
            memcpy(tok, s, len);
            tok[len] = '\0';
            for (i = 0; i < N_FLAG_NAMES; i++)
                if (strcmp(tok, flag_names[i]) == 0)
                    break;
            if (i < N_FLAG_NAMES)
                v |= 1u << i;
            else if (parse_uint(tok, &num))
                v |= num;
            else
                return 0;
            s += len + (bar != NULL);
        }
        *out = v;
        return 1;
    }
    return parse_uint(s, out);
}

static int parse_expect(const char *s, int *out)
{
    size_t i;
    if (strcmp(s, "ok") == 0) {
        *out = 0;
        return 1;
    }
    for (i = 0; i < N_ERRORS; i++)
        if (strcmp(s, mrw_wire_error_name(all_errors[i])) == 0) {
            *out = all_errors[i];
            return 1;
        }
    return 0;
}

/* Does field f hold the same value in a and b? */
static int field_same(const struct field *f, const struct mrw_pkt *a,
                      const struct mrw_pkt *b)
{
    if (FIELD_IS_BYTES(f))
        return memcmp((const char *)a + f->off, (const char *)b + f->off,
                      f->size) == 0;
    return field_get(a, f) == field_get(b, f);
}

/* Compare everything a decoded packet carries for its opcode (a field that
 * only one of them carries differs). */
static int pkt_same(const struct mrw_pkt *a, const struct mrw_pkt *b)
{
    size_t i;
    if (a->base.opcode != b->base.opcode)
        return 0;
    for (i = 0; i < N_FIELDS; i++)
        if ((field_applies(&fields[i], a) || field_applies(&fields[i], b)) &&
            !field_same(&fields[i], a, b))
            return 0;
    if (a->payload_len != b->payload_len)
        return 0;
    if (a->payload_len && (!a->payload || !b->payload ||
                           memcmp(a->payload, b->payload, a->payload_len) != 0))
        return 0;
    return 1;
}

static void check_valid_vector(const struct vector *v, const struct mrw_pkt *p)
{
    int i;
    size_t f;
    int listed[N_FIELDS];
    uint8_t re[MAX_VEC_BYTES], canon[MAX_VEC_BYTES];
    size_t n, canon_len;
    memset(listed, 0, sizeof listed);

    for (i = 0; i < v->nfields; i++) {
        const char *k = v->key[i], *s = v->val[i];
        uint64_t want = 0;
        for (f = 0; f < N_FIELDS; f++)
            if (strcmp(k, fields[f].path) == 0)
                break;
        if (f < N_FIELDS && FIELD_IS_BYTES(&fields[f])) {
            uint8_t b[16];
            long nb = parse_hex(s, b, sizeof b);
            CHECK_MSG(field_applies(&fields[f], p),
                      "%s: field %s does not belong to this packet", v->name,
                      k);
            CHECK_MSG(nb == (long)fields[f].size &&
                          memcmp(b, (const char *)p + fields[f].off, nb) == 0,
                      "%s: %s bytes differ", v->name, k);
            listed[f] = 1;
            continue;
        }
        if (strcmp(k, "payload") == 0) {
            uint8_t pl[MAX_VEC_BYTES];
            long np = parse_hex(s, pl, sizeof pl);
            CHECK_MSG(np >= 0, "%s: bad payload hex", v->name);
            CHECK_MSG(np >= 0 && (uint32_t)np == p->payload_len &&
                          (np == 0 ||
                           (p->payload && memcmp(pl, p->payload, np) == 0)),
                      "%s: payload bytes differ", v->name);
            continue;
        }
        if (!CHECK_MSG(parse_value(k, s, &want),
                       "%s line: bad value '%s' for %s", v->name, s, k))
            continue;
        if (strcmp(k, "payload_len") == 0) {
            CHECK_MSG(want == p->payload_len, "%s: payload_len %u != %llu",
                      v->name, p->payload_len, (unsigned long long)want);
            continue;
        }
        if (strcmp(k, "crc") == 0) {
            uint32_t crc = (uint32_t)v->bytes[v->len - 4] << 24 |
                           (uint32_t)v->bytes[v->len - 3] << 16 |
                           (uint32_t)v->bytes[v->len - 2] << 8 |
                           v->bytes[v->len - 1];
            CHECK_MSG(want == crc, "%s: crc trailer 0x%08x != listed 0x%llx",
                      v->name, crc, (unsigned long long)want);
            CHECK_MSG(mrw_crc32c(0, v->bytes, v->len - 4) == crc,
                      "%s: listed crc is not the CRC32C", v->name);
            continue;
        }
        /* SACK words past the table's (WIRE-53): by their index. */
        unsigned wj;
        char close;
        if (f == N_FIELDS && sscanf(k, "ack.sack[%u%c", &wj, &close) == 2 &&
            close == ']' && wj < MROCE_SACK_WORDS_LIMIT) {
            CHECK_MSG(p->base.opcode == MROCE_OP_ACK &&
                          wj < p->u.ack.sack_words && p->u.ack.sack[wj] == want,
                      "%s: %s not as listed", v->name, k);
            continue;
        }
        if (!CHECK_MSG(f < N_FIELDS, "%s: unknown field '%s'", v->name, k))
            continue;
        CHECK_MSG(field_applies(&fields[f], p),
                  "%s: field %s does not belong to this %s", v->name, k,
                  mrw_opcode_name(p->base.opcode));
        CHECK_MSG(field_get(p, &fields[f]) == want,
                  "%s: %s decoded 0x%llx, vector says 0x%llx", v->name, k,
                  (unsigned long long)field_get(p, &fields[f]),
                  (unsigned long long)want);
        listed[f] = 1;
    }
    /* Complete listing: the dissector and conformance suite rely on it. */
    for (f = 0; f < N_FIELDS; f++)
        if (field_applies(&fields[f], p))
            CHECK_MSG(listed[f], "%s: field %s not listed", v->name,
                      fields[f].path);

    /* Re-encoding the decoded packet gives back the exact bytes (a
     * CONNECT's extensions as the codec keeps them). */
    n = mrw_pkt_encode(p, re, sizeof re);
    canon_len = canonical_bytes(v->bytes, v->len, canon);
    CHECK_MSG(n == canon_len && memcmp(re, canon, n) == 0,
              "%s: re-encode differs (%zu vs %zu bytes)", v->name, n,
              canon_len);
    if (canon_len != v->len)
        cov.conn_skipped++;
}

/* Every proper prefix is TRUNCATED; every single-bit flip is rejected. */
static void check_mangled(const struct vector *v)
{
    struct mrw_pkt p;
    uint8_t buf[MAX_VEC_BYTES];
    size_t cut, bit;
    int trunc_ok = 1, flip_ok = 1;

    for (cut = 0; cut < v->len; cut++) {
        int rc = decode_exact(&p, v->bytes, cut);
        if (rc != MROCE_WIRE_ETRUNCATED) {
            trunc_ok = 0;
            CHECK_MSG(0, "%s cut to %zu bytes: %s, want TRUNCATED", v->name,
                      cut, mrw_wire_error_name(rc));
        }
    }
    CHECK_MSG(trunc_ok, "%s: truncations", v->name);

    memcpy(buf, v->bytes, v->len);
    for (bit = 0; bit < v->len * 8; bit++) {
        int rc;
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        rc = decode_exact(&p, buf, v->len);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        if (rc >= 0) {
            flip_ok = 0;
            CHECK_MSG(0, "%s bit %zu flipped: accepted", v->name, bit);
        }
    }
    CHECK_MSG(flip_ok, "%s: bit flips", v->name);
}

static void run_vector(struct vector *v)
{
    struct mrw_pkt p;
    int rc, i;

    cov.nvec++;
    if (!CHECK_MSG(v->have_expect, "%s (line %d): no expect line", v->name,
                   v->line))
        goto out;
    rc = decode_exact(&p, v->bytes, v->len);
    CHECK_MSG(rc == v->expect, "%s (line %d): decode gives %s, want %s",
              v->name, v->line, mrw_wire_error_name(rc),
              mrw_wire_error_name(v->expect));
    if (v->expect != 0) {
        CHECK_MSG(v->nfields == 0, "%s: fields listed on an invalid vector",
                  v->name);
        if (-v->expect > 0 && -v->expect < 16)
            cov.err[-v->expect]++;
        if (v->len >= 4 && (v->bytes[2] << 8 | v->bytes[3]) & MROCE_F_STREAM)
            cov.bad_stream++;
        goto out;
    }
    if (rc != 0)
        goto out;

    cov.nvalid++;
    cov.valid_op[p.base.opcode]++;
    if (p.base.opcode == MROCE_OP_SEND || p.base.opcode == MROCE_OP_WRITE) {
        if (p.base.flags & MROCE_F_IMM)
            cov.op_imm |= 1 << (p.base.opcode & 1);
        else
            cov.op_noimm |= 1 << (p.base.opcode & 1);
    }
    if (p.base.opcode == MROCE_OP_ACK) {
        if (p.u.ack.sack_words == 0)
            cov.ack_nosack++;
        else if (p.u.ack.sack_words > 1)
            cov.ack_multisack++;
    }
    if (p.base.opcode == MROCE_OP_NAK)
        cov.nak_code[p.u.nak.code]++;
    if (p.base.flags & MROCE_F_STREAM) {
        cov.stream_req++;
        if (p.base.opcode == MROCE_OP_FETCH_ADD ||
            p.base.opcode == MROCE_OP_CMP_SWAP)
            cov.stream_atomic++;
    }
    if ((p.base.opcode == MROCE_OP_READ_RESP ||
         p.base.opcode == MROCE_OP_ATOMIC_RESP) &&
        p.u.resp.stream != 0)
        cov.resp_stream++;
    if (p.base.opcode == MROCE_OP_NAK && p.u.nak.stream != 0)
        cov.nak_stream++;
    if (p.base.opcode == MROCE_OP_CONNECT_REQ ||
        p.base.opcode == MROCE_OP_CONNECT_RESP) {
        cov.conn_streams += p.u.conn.max_streams != 0;
        cov.conn_planes += p.u.conn.nplanes != 0;
    }

    check_valid_vector(v, &p);
    check_mangled(v);
out:
    for (i = 0; i < v->nfields; i++) {
        free(v->key[i]);
        free(v->val[i]);
    }
    v->nfields = 0;
}

static char *xstrdup(const char *s)
{
    char *d = malloc(strlen(s) + 1);
    if (!d)
        abort();
    return strcpy(d, s);
}

static void run_vector_file(const char *path)
{
    static struct vector v; /* large; one at a time */
    char line[8192];
    int lineno = 0, in_vec = 0;
    FILE *f = fopen(path, "r");

    if (!CHECK_MSG(f != NULL, "cannot open %s (run from the project root)",
                   path))
        return;
    while (fgets(line, sizeof line, f)) {
        char *s = trim(line), *eq;
        lineno++;
        if (*s == '\0' || *s == '#')
            continue;
        if (strncmp(s, "name:", 5) == 0) {
            if (in_vec)
                run_vector(&v);
            memset(&v, 0, sizeof v);
            snprintf(v.name, sizeof v.name, "%s", trim(s + 5));
            v.line = lineno;
            in_vec = 1;
            continue;
        }
        if (!CHECK_MSG(in_vec, "%s:%d: line outside a vector", path, lineno))
            continue;
        if (strncmp(s, "note:", 5) == 0)
            continue;
        if (strncmp(s, "hex:", 4) == 0) {
            long n = parse_hex(s + 4, v.bytes + v.len, sizeof v.bytes - v.len);
            if (CHECK_MSG(n >= 0, "%s:%d: bad hex", path, lineno))
                v.len += (size_t)n;
            continue;
        }
        if (strncmp(s, "expect:", 7) == 0) {
            v.have_expect = CHECK_MSG(parse_expect(trim(s + 7), &v.expect),
                                      "%s:%d: bad expect", path, lineno);
            continue;
        }
        eq = strchr(s, '=');
        if (!CHECK_MSG(eq && v.nfields < MAX_VEC_FIELDS,
                       "%s:%d: unparseable line", path, lineno))
            continue;
        *eq = '\0';
        v.key[v.nfields] = xstrdup(trim(s));
        v.val[v.nfields] = xstrdup(trim(eq + 1));
        v.nfields++;
    }
    if (in_vec)
        run_vector(&v);
    fclose(f);
}

static void check_coverage(void)
{
    size_t i;
    CHECK(cov.nvec >= 60);
    for (i = 0; i < N_OPCODES; i++)
        CHECK_MSG(cov.valid_op[all_opcodes[i].val] > 0,
                  "no valid vector for %s",
                  mrw_opcode_name(all_opcodes[i].val));
    CHECK_MSG(cov.op_imm == 3 && cov.op_noimm == 3,
              "SEND and WRITE each need vectors with and without IMM");
    CHECK(cov.ack_nosack > 0);
    CHECK(cov.ack_multisack > 0);
    for (i = 0; i < N_NAK_CODES; i++)
        CHECK_MSG(cov.nak_code[all_nak_codes[i]] > 0, "no vector for NAK %s",
                  mrw_nak_code_name(all_nak_codes[i]));
    for (i = 0; i < N_ERRORS; i++)
        CHECK_MSG(cov.err[-all_errors[i]] > 0, "no vector expecting %s",
                  mrw_wire_error_name(all_errors[i]));
    CHECK_MSG(cov.stream_req > 0 && cov.stream_atomic > 0,
              "need valid stream requests, one of them an atomic");
    CHECK_MSG(cov.resp_stream > 0 && cov.nak_stream > 0,
              "need a response and a NAK naming a stream");
    CHECK_MSG(cov.conn_streams > 0 && cov.conn_planes > 0 &&
                  cov.conn_skipped > 0,
              "need CONNECTs with STREAMS, with PLANES and with an unknown "
              "extension");
    CHECK_MSG(cov.bad_stream >= 3, "need invalid vectors with STREAM set");
}

/* ---- CRC32C ----------------------------------------------------------------
 */

static uint32_t crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        int k;
        crc ^= *p++;
        for (k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static void test_crc32c(void)
{
    static uint8_t buf[3 * 2048 * 2 + 3 * 256 + 64];
    uint8_t v[32];
    uint64_t rng = 1;
    size_t i;

    CHECK_EQ(mrw_crc32c(0, "123456789", 9), 0xE3069283u);
    CHECK_EQ(mrw_crc32c_sw(0, "123456789", 9), 0xE3069283u);
    CHECK_EQ(mrw_crc32c(0, NULL, 0), 0);
    /* RFC 3720 (iSCSI) B.4 examples. */
    memset(v, 0, sizeof v);
    CHECK_EQ(mrw_crc32c(0, v, 32), 0x8A9136AAu);
    memset(v, 0xff, sizeof v);
    CHECK_EQ(mrw_crc32c(0, v, 32), 0x62A8AB43u);
    for (i = 0; i < 32; i++)
        v[i] = (uint8_t)i;
    CHECK_EQ(mrw_crc32c(0, v, 32), 0x46DD794Eu);
    for (i = 0; i < 32; i++)
        v[i] = (uint8_t)(31 - i);
    CHECK_EQ(mrw_crc32c(0, v, 32), 0x113FDB5Cu);

    printf("crc32c: %s path\n",
           mrw_crc32c_hw_active() ? "SSE4.2 hardware" : "table");

    for (i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)testutil_rand64(&rng);
    /* Every length up to past two 3-way LONG blocks, at odd alignments,
     * against the bitwise reference; both paths, and chaining. */
    {
        int ok = 1;
        size_t len;
        for (len = 0; len + 8 <= sizeof buf; len += (len < 1100 ? 1 : 37)) {
            size_t off = len % 8;
            uint32_t ref = crc32c_bitwise(0, buf + off, len);
            uint32_t split = (uint32_t)(len / 3);
            uint32_t chained = mrw_crc32c(mrw_crc32c(0, buf + off, split),
                                          buf + off + split, len - split);
            if (mrw_crc32c(0, buf + off, len) != ref ||
                mrw_crc32c_sw(0, buf + off, len) != ref || chained != ref) {
                ok = 0;
                CHECK_MSG(0, "crc32c mismatch at length %zu", len);
            }
        }
        CHECK(ok);
    }
}

/* ---- round trips -----------------------------------------------------------
 */

static uint64_t rng_state = 0x5eed0fc0dec0ffeeull;

static uint64_t rnd(void)
{
    return testutil_rand64(&rng_state);
}

static uint32_t rnd_below(uint32_t n)
{
    return (uint32_t)testutil_rand_below(&rng_state, n);
}

/* A message length: mostly small, sometimes anywhere in 32 bits. */
static uint32_t rnd_msg_len(void)
{
    switch (rnd_below(4)) {
    case 0:
        return rnd_below(16);
    case 1:
        return rnd_below(5000);
    case 2:
        return rnd_below(1u << 20);
    default:
        return (uint32_t)rnd();
    }
}

/* Random offset/payload inside msg_len with the matching FIRST/LAST. */
static void rnd_segment(uint32_t *msg_len, uint32_t *offset, uint32_t *plen,
                        uint16_t *flags, uint32_t max_payload)
{
    uint32_t m = rnd_msg_len(), p, o;
    p = rnd_below((m < max_payload ? m : max_payload) + 1);
    switch (rnd_below(3)) {
    case 0:
        o = 0;
        break;
    case 1:
        o = m - p;
        break;
    default:
        o = rnd_below(m - p + 1);
        break;
    }
    *msg_len = m;
    *offset = o;
    *plen = p;
    if (o == 0)
        *flags |= MROCE_F_FIRST;
    if ((uint64_t)o + p == m)
        *flags |= MROCE_F_LAST;
}

static void rnd_pkt(struct mrw_pkt *p, unsigned op, const uint8_t *pool)
{
    /* Flags any opcode may carry. */
    const uint16_t free_flags = MROCE_F_ACK_REQ | MROCE_F_SOLICITED |
                                MROCE_F_RETX | MROCE_F_PROBE | MROCE_F_CREDIT;
    unsigned i;
    uint64_t r = rnd();

    memset(p, 0, sizeof *p);
    p->base.version = MROCE_VERSION;
    p->base.opcode = (uint8_t)op;
    p->base.flags = (uint16_t)(r & free_flags);
    p->base.dst_qpn = (uint32_t)rnd();
    p->base.token = rnd();
    p->base.psn = (uint32_t)rnd();
    p->base.tsval = (uint32_t)rnd();
    p->base.entropy = (uint16_t)rnd();
    p->payload = pool + rnd_below(256);

    switch (op) {
    case MROCE_OP_SEND:
    case MROCE_OP_WRITE:
    case MROCE_OP_READ_REQ:
    case MROCE_OP_FETCH_ADD:
    case MROCE_OP_CMP_SWAP: {
        struct mrw_req_hdr *q = &p->u.rq.req;
        q->msn = (uint32_t)rnd();
        q->rsn = (uint32_t)rnd();
        q->raddr = rnd();
        q->rkey = (uint32_t)rnd();
        q->imm = (uint32_t)rnd();
        /* Half of the requests belong to a stream other than 0. */
        if (r & (1ull << 41)) {
            p->base.flags |= MROCE_F_STREAM;
            q->stream = (uint16_t)(1 + rnd_below(MROCE_MAX_STREAMS));
            q->stream_resvd = (uint16_t)rnd();
        }
        if (op == MROCE_OP_SEND || op == MROCE_OP_WRITE) {
            if (r & (1ull << 40))
                p->base.flags |= MROCE_F_IMM;
            rnd_segment(&q->msg_len, &q->offset, &p->payload_len,
                        &p->base.flags, 9000);
        } else {
            p->base.flags |= MROCE_F_FIRST | MROCE_F_LAST;
            q->msg_len = op == MROCE_OP_READ_REQ ? rnd_msg_len()
                                                 : MROCE_ATOMIC_LEN;
            if (op != MROCE_OP_READ_REQ) {
                p->u.rq.atomic.swap_add = rnd();
                p->u.rq.atomic.compare = rnd();
            }
        }
        break;
    }
    case MROCE_OP_READ_RESP:
        p->u.resp.req_msn = (uint32_t)rnd();
        p->u.resp.stream = (uint16_t)rnd();
        p->u.resp.reserved = (uint16_t)rnd();
        rnd_segment(&p->u.resp.msg_len, &p->u.resp.offset, &p->payload_len,
                    &p->base.flags, 9000);
        break;
    case MROCE_OP_ATOMIC_RESP:
        p->u.resp.req_msn = (uint32_t)rnd();
        p->u.resp.stream = (uint16_t)rnd();
        p->u.resp.reserved = (uint16_t)rnd();
        p->u.resp.msg_len = MROCE_ATOMIC_LEN;
        p->payload_len = MROCE_ATOMIC_LEN;
        p->base.flags |= MROCE_F_FIRST | MROCE_F_LAST;
        break;
    case MROCE_OP_ACK: {
        struct mrw_ack_hdr *a = &p->u.ack;
        a->cum_psn = (uint32_t)rnd();
        a->echo_psn = (uint32_t)rnd();
        a->echo_ts = (uint32_t)rnd();
        a->echo_entropy = (uint16_t)rnd();
        a->echo_flags = (uint8_t)rnd_below(4);
        /* the default span mostly, the negotiated one (WIRE-53) too */
        a->sack_words = (uint8_t)(rnd_below(4)
                                      ? rnd_below(MROCE_MAX_SACK_WORDS + 1)
                                      : rnd_below(MROCE_SACK_WORDS_LIMIT + 1));
        a->ce_count = (uint32_t)rnd();
        a->rx_count = (uint32_t)rnd();
        a->credit = (uint32_t)rnd();
        a->ack_delay = (uint32_t)rnd();
        for (i = 0; i < a->sack_words; i++)
            a->sack[i] = (uint32_t)rnd();
        break;
    }
    case MROCE_OP_NAK:
        p->u.nak.nak_psn = (uint32_t)rnd();
        p->u.nak.msn = (uint32_t)rnd();
        p->u.nak.code = (uint8_t)all_nak_codes[rnd_below(N_NAK_CODES)];
        p->u.nak.rnr_delay = (uint8_t)rnd();
        p->u.nak.stream = (uint16_t)rnd();
        p->u.nak.cum_psn = (uint32_t)rnd();
        break;
    case MROCE_OP_CONNECT_REQ:
    case MROCE_OP_CONNECT_RESP:
        p->u.conn.src_qpn = (uint32_t)rnd();
        p->u.conn.start_psn = (uint32_t)rnd();
        p->u.conn.token = rnd();
        p->u.conn.mtu = (uint16_t)(256 + rnd_below(65536 - 256));
        p->u.conn.npaths = (uint16_t)rnd();
        p->u.conn.rx_window = (uint32_t)rnd();
        p->u.conn.max_rd_atomic = (uint32_t)rnd();
        p->u.conn.flags = (uint32_t)rnd();
        p->u.conn.max_ack_delay = (uint32_t)rnd();
        /* Each extension in about half of them. */
        if (r & (1ull << 41))
            p->u.conn.max_streams = (uint16_t)(1 +
                                               rnd_below(MROCE_MAX_STREAMS));
        if (r & (1ull << 42)) {
            p->u.conn.nplanes = (uint8_t)(1 + rnd_below(MROCE_MAX_PLANES));
            for (i = 0; i < p->u.conn.nplanes; i++) {
                struct mrw_plane_addr *a = &p->u.conn.planes[i];
                uint64_t hi = rnd(), lo = rnd();
                memcpy(a->addr, &hi, 8);
                memcpy(a->addr + 8, &lo, 8);
                a->port = (uint16_t)rnd();
                a->reserved = (uint16_t)rnd();
            }
        }
        break;
    default: /* DISCONNECT, DISCONNECT_ACK */
        break;
    }
}

static void test_roundtrip(void)
{
    static uint8_t pool[256 + 9000];
    static uint8_t buf[MROCE_MAX_PKT_LEN], buf2[MROCE_MAX_PKT_LEN];
    size_t i, k;

    for (i = 0; i < sizeof pool; i++)
        pool[i] = (uint8_t)rnd();
    for (k = 0; k < N_OPCODES; k++) {
        unsigned op = all_opcodes[k].val;
        int ok = 1;
        for (i = 0; i < ROUNDTRIP_ITERS && ok; i++) {
            struct mrw_pkt p, d;
            size_t n, hdr, n2;
            int rc;
            rnd_pkt(&p, op, pool);
            n = mrw_pkt_encode(&p, buf, sizeof buf);
            hdr = mrw_pkt_hdr_len(&p);
            ok &= CHECK_MSG(n == hdr + p.payload_len + MROCE_CRC_LEN,
                            "%s iter %zu: encode length %zu",
                            mrw_opcode_name(op), i, n);
            if (!ok)
                break;
            rc = decode_exact(&d, buf, n);
            ok &= CHECK_MSG(rc == 0, "%s iter %zu: decode %s",
                            mrw_opcode_name(op), i, mrw_wire_error_name(rc));
            if (!ok)
                break;
            p.base.pkt_len = (uint16_t)n; /* computed by the encoder */
            ok &= CHECK_MSG(pkt_same(&p, &d), "%s iter %zu: fields differ",
                            mrw_opcode_name(op), i);
            ok &= CHECK_MSG(d.payload_len == 0 ? d.payload == NULL
                                               : d.payload == buf + hdr,
                            "%s iter %zu: payload pointer", mrw_opcode_name(op),
                            i);
            /* Split encode (headers, caller-placed payload, seal) gives the
             * same bytes. */
            n2 = mrw_pkt_encode_hdr(&p, buf2, n);
            if (n2 == hdr) {
                if (p.payload_len)
                    memcpy(buf2 + hdr, p.payload, p.payload_len);
                n2 = mrw_pkt_seal(buf2, hdr + p.payload_len);
            }
            ok &= CHECK_MSG(n2 == n && memcmp(buf, buf2, n) == 0,
                            "%s iter %zu: encode_hdr+seal differs",
                            mrw_opcode_name(op), i);
            /* One byte less room than needed: refused, not overrun. */
            ok &= CHECK_MSG(mrw_pkt_encode(&p, buf2, n - 1) == 0 &&
                                mrw_pkt_encode_hdr(&p, buf2, n - 1) == 0,
                            "%s iter %zu: short cap accepted",
                            mrw_opcode_name(op), i);
        }
        CHECK_MSG(ok, "round trips of %s", mrw_opcode_name(op));
    }
}

/* ---- encoder limits, names -------------------------------------------------
 */

static void test_encoder_limits(void)
{
    static uint8_t big[MROCE_MAX_PKT_LEN + 16];
    uint8_t buf[256];
    struct mrw_pkt p, d;
    size_t cap, n;

    memset(&p, 0, sizeof p);
    p.base.opcode = MROCE_OP_DISCONNECT;
    /* A zero-initialised struct still produces a valid version byte. */
    n = mrw_pkt_encode(&p, buf, sizeof buf);
    CHECK_EQ(n, MROCE_BASE_HDR_LEN + MROCE_CRC_LEN);
    CHECK_EQ(buf[0], MROCE_VERSION);
    CHECK_EQ_INT(mrw_pkt_decode(&d, buf, n), 0);
    for (cap = 0; cap < n; cap++)
        CHECK_EQ(mrw_pkt_encode(&p, buf, cap), 0);

    p.base.opcode = 0x99;
    CHECK_EQ(mrw_pkt_hdr_len(&p), 0);
    CHECK_EQ(mrw_pkt_encode(&p, buf, sizeof buf), 0);

    p.base.opcode = MROCE_OP_ACK;
    p.u.ack.sack_words = MROCE_MAX_SACK_WORDS;
    CHECK_EQ(mrw_pkt_hdr_len(&p),
             MROCE_BASE_HDR_LEN + MROCE_ACK_HDR_LEN + 4 * MROCE_MAX_SACK_WORDS);
    /* WIRE-53: every count the byte holds is encodable. */
    p.u.ack.sack_words = MROCE_SACK_WORDS_LIMIT;
    CHECK_EQ(mrw_pkt_hdr_len(&p), MROCE_BASE_HDR_LEN + MROCE_ACK_HDR_LEN +
                                      4 * MROCE_SACK_WORDS_LIMIT);

    /* The largest data header is a stream atomic; a stream-0 atomic is
     * MROCE_MAX_DATA_HDR_LEN, the window accounting unit. */
    memset(&p, 0, sizeof p);
    p.base.opcode = MROCE_OP_CMP_SWAP;
    CHECK_EQ(mrw_pkt_hdr_len(&p), MROCE_MAX_DATA_HDR_LEN);
    p.base.flags = MROCE_F_STREAM;
    CHECK_EQ(mrw_pkt_hdr_len(&p), MROCE_MAX_STREAM_DATA_HDR_LEN);
    p.base.opcode = MROCE_OP_SEND;
    CHECK_EQ(mrw_pkt_hdr_len(&p),
             MROCE_BASE_HDR_LEN + MROCE_REQ_HDR_LEN + MROCE_STREAM_HDR_LEN);
    /* STREAM on a response adds no word (the decoder rejects it). */
    p.base.opcode = MROCE_OP_READ_RESP;
    CHECK_EQ(mrw_pkt_hdr_len(&p), MROCE_BASE_HDR_LEN + MROCE_RESP_HDR_LEN);

    /* CONNECT extensions: all eight planes fit, a ninth is refused. */
    memset(&p, 0, sizeof p);
    p.base.opcode = MROCE_OP_CONNECT_REQ;
    p.u.conn.mtu = 4096;
    p.u.conn.max_streams = MROCE_MAX_STREAMS;
    p.u.conn.nplanes = MROCE_MAX_PLANES;
    CHECK_EQ(mrw_pkt_hdr_len(&p), MROCE_BASE_HDR_LEN + MROCE_CONN_HDR_LEN + 2 +
                                      MROCE_EXT_STREAMS_LEN + 2 + 4 +
                                      MROCE_MAX_PLANES * MROCE_EXT_PLANE_LEN);
    n = mrw_pkt_encode(&p, buf, sizeof buf);
    CHECK_EQ(n, mrw_pkt_hdr_len(&p) + MROCE_CRC_LEN);
    CHECK_EQ_INT(mrw_pkt_decode(&d, buf, n), 0);
    CHECK_EQ(d.u.conn.max_streams, MROCE_MAX_STREAMS);
    CHECK_EQ(d.u.conn.nplanes, MROCE_MAX_PLANES);
    p.u.conn.nplanes = MROCE_MAX_PLANES + 1;
    CHECK_EQ(mrw_pkt_hdr_len(&p), 0);
    CHECK_EQ(mrw_pkt_encode(&p, buf, sizeof buf), 0);

    /* Largest acceptable packet, and one byte more. */
    memset(&p, 0, sizeof p);
    p.base.opcode = MROCE_OP_WRITE;
    p.base.flags = MROCE_F_FIRST | MROCE_F_LAST;
    p.payload_len = MROCE_MAX_PKT_LEN - MROCE_BASE_HDR_LEN - MROCE_REQ_HDR_LEN -
                    MROCE_CRC_LEN;
    p.u.rq.req.msg_len = p.payload_len;
    p.payload = big + MROCE_BASE_HDR_LEN + MROCE_REQ_HDR_LEN; /* in place */
    n = mrw_pkt_encode(&p, big, sizeof big);
    CHECK_EQ(n, MROCE_MAX_PKT_LEN);
    CHECK_EQ_INT(mrw_pkt_decode(&d, big, n), 0);
    p.payload_len++;
    p.u.rq.req.msg_len++;
    CHECK_EQ(mrw_pkt_encode(&p, big, sizeof big), 0);
    p.payload_len = 0xffffffffu;
    CHECK_EQ(mrw_pkt_encode(&p, big, sizeof big), 0);
    /* A datagram longer than MROCE_MAX_PKT_LEN can never match pkt_len. */
    CHECK_EQ_INT(mrw_pkt_decode(&d, big, sizeof big), MROCE_WIRE_ELENGTH);
}

static void test_names(void)
{
    size_t i;
    unsigned v, known = 0;
    for (i = 0; i < N_OPCODES; i++) {
        CHECK(strcmp(mrw_opcode_name(all_opcodes[i].val), "?") != 0);
        CHECK_EQ(mrw_opcode_has_psn(all_opcodes[i].val),
                 all_opcodes[i].has_psn);
    }
    for (v = 0; v < 256; v++)
        known += strcmp(mrw_opcode_name(v), "?") != 0;
    CHECK_EQ(known, N_OPCODES);
    CHECK(strcmp(mrw_opcode_name(MROCE_OP_CMP_SWAP), "CMP_SWAP") == 0);
    CHECK(strcmp(mrw_opcode_name(1000), "?") == 0);
    CHECK_EQ(mrw_opcode_has_psn(MROCE_OP_ACK), 0);
    CHECK_EQ(mrw_opcode_has_psn(0), 0);
    CHECK(strcmp(mrw_nak_code_name(MROCE_NAK_RNR), "RNR") == 0);
    CHECK(strcmp(mrw_nak_code_name(0), "?") == 0);
    CHECK(strcmp(mrw_wire_error_name(MROCE_WIRE_ECRC), "CRC") == 0);
    CHECK(strcmp(mrw_wire_error_name(0), "OK") == 0);
    CHECK(strcmp(mrw_wire_error_name(-100), "?") == 0);
}

/* ---- mutation fuzzing of the valid vectors ---------------------------------
 */

/*
 * Corrupt headers of valid packets and re-seal them so the CRC does not hide
 * the field checks; whatever decodes must re-encode to the same bytes.
 */
static void test_mutations(const char *path)
{
    static uint8_t seeds[64][MAX_VEC_BYTES];
    static size_t seed_len[64];
    size_t nseeds = 0, i;
    char line[8192];
    int accepted = 0, rejected = 0, ok = 1;
    FILE *f = fopen(path, "r");

    if (!f)
        return; /* already reported by run_vector_file */
    /* Collect the valid vectors' bytes (the hex lines before "expect: ok"). */
    {
        uint8_t cur[MAX_VEC_BYTES];
        size_t len = 0;
        while (fgets(line, sizeof line, f)) {
            char *s = trim(line);
            if (strncmp(s, "name:", 5) == 0)
                len = 0;
            else if (strncmp(s, "hex:", 4) == 0) {
                long n = parse_hex(s + 4, cur + len, sizeof cur - len);
                if (n > 0)
                    len += (size_t)n;
            } else if (strcmp(s, "expect: ok") == 0 && nseeds < 64) {
                memcpy(seeds[nseeds], cur, len);
                seed_len[nseeds++] = len;
            }
        }
        fclose(f);
    }
    if (!CHECK(nseeds > 0))
        return;

    for (i = 0; i < MUTATE_ITERS; i++) {
        uint8_t buf[MAX_VEC_BYTES], re[MAX_VEC_BYTES], want[MAX_VEC_BYTES];
        size_t s = rnd_below((uint32_t)nseeds), len = seed_len[s], body, n;
        unsigned m, nmut = 1 + rnd_below(4);
        struct mrw_pkt p, p2;
        int rc;

        memcpy(buf, seeds[s], len);
        body = len - MROCE_CRC_LEN;
        for (m = 0; m < nmut; m++) {
            /* Bias towards the headers, where the checks are. */
            size_t at = rnd_below((uint32_t)(body < 96 ? body : 96));
            if (rnd_below(2))
                buf[at] ^= (uint8_t)(1u << rnd_below(8));
            else
                buf[at] = (uint8_t)rnd();
        }
        if (rnd_below(4) == 0) /* shrink or grow the body a little */
            body = body - rnd_below((uint32_t)(body < 16 ? body : 16) + 1) +
                   rnd_below(8);
        if (body < MROCE_BASE_HDR_LEN)
            body = MROCE_BASE_HDR_LEN;
        buf[26] = (uint8_t)((body + 4) >> 8);
        buf[27] = (uint8_t)(body + 4);
        len = mrw_pkt_seal(buf, body);

        rc = decode_exact(&p, buf, len);
        if (rc != 0) {
            rejected++;
            if (rc < MROCE_WIRE_EFIELD || rc > -1) {
                ok = 0;
                CHECK_MSG(0, "mutation %zu: bad return %d", i, rc);
            }
            continue;
        }
        accepted++;
        n = mrw_pkt_encode(&p, re, sizeof re);
        /* A CONNECT re-encodes without what the codec skips, and shorter. */
        len = canonical_bytes(buf, len, want);
        p.base.pkt_len = (uint16_t)len;
        if (n != len || memcmp(re, want, len) != 0 ||
            decode_exact(&p2, re, n) != 0 || !pkt_same(&p, &p2)) {
            ok = 0;
            CHECK_MSG(0, "mutation %zu: accepted packet does not round-trip",
                      i);
        }
    }
    CHECK(ok);
    CHECK(accepted > 0 && rejected > 0);
    printf("mutations: %d accepted and round-tripped, %d rejected\n", accepted,
           rejected);
}

/* The vector file, tests/vectors/wire_vectors.txt unless --vectors names
 * another. */
static const char *g_vectors = VECTOR_PATH;

static void case_vectors(void)
{
    run_vector_file(g_vectors);
    check_coverage();
    printf("vectors: %d (%d valid)\n", cov.nvec, cov.nvalid);
}

static void case_mutations(void)
{
    test_mutations(g_vectors);
}

static const struct test_case cases[] = {
    {"crc32c", test_crc32c},
    {"names", test_names},
    {"vectors", case_vectors},
    {"roundtrip", test_roundtrip},
    {"encoder_limits", test_encoder_limits},
    {"mutations", case_mutations},
};

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--vectors")) {
        g_vectors = argv[2];
        argv[2] = argv[0];
        argc -= 2;
        argv += 2;
    }
    return TEST_CASES_MAIN("test_wire", cases, argc, argv);
}
