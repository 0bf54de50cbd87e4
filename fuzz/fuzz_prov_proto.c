/*
 * fuzz_prov_proto.c - libFuzzer target for the libfabric provider's own
 * wire format (prov/src/mroce_proto.c): the headers of the SENDs one
 * provider endpoint sends another (eager MSG/TAGGED, rendezvous RTS and
 * FIN, HELLO with the sender's name).
 *
 * mfi_proto_parse() and mfi_proto_hello() are all the provider decodes
 * from a peer's bytes, so this target feeds them arbitrary input (ASan and
 * UBSan catch any read outside it) and checks what they accept:
 *   - the view stays inside the input (payload and plen), and each kind's
 *     rule holds (eager: hdr.len == payload length; RTS: a whole body and a
 *     length within MFI_PROTO_MAX_MSG; FIN: a whole body; ATOMIC: a known
 *     op and datatype and exactly the operand bytes they need; ATOMIC_RESP:
 *     a whole body; RMA_EVENT: exactly a body of a known op and flags);
 *   - re-encoding with mfi_proto_build() reproduces the input's header and
 *     body, except the bytes the format ignores (hdr.rsvd; the tag of
 *     untagged kinds), and parses again to the same fields;
 *   - a HELLO name is exactly a sockaddr_in or sockaddr_in6, and is
 *     copied unchanged.
 * Any disagreement aborts.
 *
 * The provider's shared library is not built with libFuzzer (clang's
 * runtimes cannot satisfy -z defs), so mroce_proto.c, which uses no
 * libfabric or libmroce type, is compiled into this target directly.
 * Without MROCE_FUZZ it is linked with replay_main.c and replays
 * fuzz/corpus/fuzz_prov_proto/ as a test.  That seed corpus is written by
 * this file compiled with -DGEN_CORPUS (its own main()):
 *   cc -DGEN_CORPUS -I prov/src fuzz/fuzz_prov_proto.c \
 *      prov/src/mroce_proto.c -o gen && ./gen fuzz/corpus/fuzz_prov_proto
 */
#include "mroce_proto.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)     \
    do {             \
        if (!(c))    \
            abort(); \
    } while (0)

static void check_hello(const uint8_t *p, size_t len)
{
    struct sockaddr_storage ss;
    size_t n = mfi_proto_hello(p, len, &ss);
    if (!n) {
        static const struct sockaddr_storage zero;
        CHECK(memcmp(&ss, &zero, sizeof(ss)) == 0);
        return;
    }
    CHECK(n == len);
    CHECK((ss.ss_family == AF_INET && n == sizeof(struct sockaddr_in)) ||
          (ss.ss_family == AF_INET6 && n == sizeof(struct sockaddr_in6)));
    CHECK(memcmp(&ss, p, n) == 0);
}

static int is_tagged(unsigned kind)
{
    return kind == MFI_PKT_TAGGED || kind == MFI_PKT_RTS_TAGGED;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mfi_pkt p;
    (void)mfi_pkt_kind_str(size > 1 ? data[1] : 0);
    check_hello(data, size); /* any bytes as a HELLO payload */
    if (mfi_proto_parse(data, size, &p) != MFI_PARSE_OK)
        return 0;

    size_t hl = sizeof(struct mfi_hdr);
    /* The atomic kinds' view starts past their fixed body. */
    size_t skip = p.kind == MFI_PKT_ATOMIC        ? sizeof(struct mfi_amo)
                  : p.kind == MFI_PKT_ATOMIC_RESP ? sizeof(struct mfi_amo_resp)
                                                  : 0;
    CHECK(size >= hl + skip && p.payload == data + hl + skip &&
          p.plen == size - hl - skip);
    CHECK(p.flags == (data[2] | data[3] << 8));
    CHECK(!(p.flags & ~MFI_HDR_CQ_DATA));
    /* Version 2 carries the source endpoint's index in rsvd. */
    CHECK(p.version == data[0] && p.version >= MFI_PROTO_VERSION_MIN &&
          p.version <= MFI_PROTO_VERSION);
    uint32_t rsvd;
    memcpy(&rsvd, data + 4, sizeof(rsvd));
    CHECK(p.src_idx == (p.version >= 2 ? rsvd : 0));
    CHECK(is_tagged(p.kind) || p.tag == 0);
    size_t body = 0;
    switch (p.kind) {
    case MFI_PKT_HELLO:
        check_hello(p.payload, p.plen);
        break;
    case MFI_PKT_MSG:
    case MFI_PKT_TAGGED:
        CHECK(p.len == p.plen);
        break;
    case MFI_PKT_RTS_MSG:
    case MFI_PKT_RTS_TAGGED:
        body = sizeof(struct mfi_rts);
        CHECK(p.plen >= body && p.len <= MFI_PROTO_MAX_MSG);
        break;
    case MFI_PKT_FIN:
        body = sizeof(struct mfi_fin);
        CHECK(p.plen >= body);
        break;
    case MFI_PKT_ATOMIC:
        body = skip;
        CHECK(p.len == p.plen + skip && p.amo.count >= 1 &&
              p.amo.op < MFI_AMO_OP_CNT && mfi_amo_dt_size(p.amo.datatype) &&
              !(p.amo.flags & ~MFI_AMO_FETCH));
        CHECK(p.plen == (size_t)p.amo.count * mfi_amo_dt_size(p.amo.datatype) *
                            mfi_amo_operands(p.amo.op));
        break;
    case MFI_PKT_ATOMIC_RESP:
        body = skip;
        CHECK(p.len == p.plen + skip);
        break;
    case MFI_PKT_RMA_EVENT:
        body = sizeof(struct mfi_rma_event);
        CHECK(p.plen == body && p.len == body &&
              (p.rmaev.op == MFI_RMAEV_WRITE || p.rmaev.op == MFI_RMAEV_READ) &&
              !(p.rmaev.flags & ~MFI_RMAEV_IMM));
        break;
    default:
        abort(); /* an unknown kind was accepted */
    }
    CHECK(strcmp(mfi_pkt_kind_str(p.kind), "?") != 0);

    /* Re-encode: the same bytes, but for what the format ignores. */
    uint8_t re[sizeof(struct mfi_hdr) + 64], in[sizeof(re)];
    size_t n = mfi_proto_build(re, &p);
    CHECK(n == hl + body && n <= size);
    memcpy(in, data, n);
    if (p.version < 2)
        memset(in + 4, 0, 4); /* hdr.rsvd, unused in version 1 */
    if (!is_tagged(p.kind))
        memset(in + 8, 0, 8); /* hdr.tag */
    CHECK(memcmp(re, in, n) == 0);

    /* ... which decodes to the same fields (the payload following it). */
    uint8_t *again = malloc(size);
    CHECK(again != NULL);
    memcpy(again, re, n);
    memcpy(again + n, data + n, size - n);
    struct mfi_pkt q;
    CHECK(mfi_proto_parse(again, size, &q) == MFI_PARSE_OK);
    CHECK(q.version == p.version && q.src_idx == p.src_idx);
    CHECK(q.kind == p.kind && q.flags == p.flags && q.tag == p.tag &&
          q.data == p.data && q.len == p.len && q.plen == p.plen &&
          memcmp(&q.rts, &p.rts, sizeof(p.rts)) == 0 &&
          memcmp(&q.fin, &p.fin, sizeof(p.fin)) == 0 &&
          memcmp(&q.amo, &p.amo, sizeof(p.amo)) == 0 &&
          memcmp(&q.amo_resp, &p.amo_resp, sizeof(p.amo_resp)) == 0 &&
          memcmp(&q.rmaev, &p.rmaev, sizeof(p.rmaev)) == 0);
    free(again);
    return 0;
}

#ifdef GEN_CORPUS
/* --- seed corpus generator: one file per interesting packet --- */

#include "corpus_emit.h"

/* Header (and body) of p, then plen payload bytes of 0x5a. */
static void emit_pkt(const char *name, const struct mfi_pkt *p, size_t plen)
{
    uint8_t b[256];
    size_t n = mfi_proto_build(b, p);
    memset(b + n, 0x5a, plen);
    corpus_emit(name, b, n + plen);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    corpus_dir = argv[1];
    struct mfi_pkt p = {0};
    uint8_t b[256];
    size_t n;

    p.kind = MFI_PKT_MSG;
    p.len = 64;
    emit_pkt("msg_64", &p, 64);
    p.len = 0;
    emit_pkt("msg_empty", &p, 0);
    p.len = 65;
    emit_pkt("msg_len_mismatch", &p, 64);
    p.kind = MFI_PKT_TAGGED;
    p.flags = MFI_HDR_CQ_DATA;
    p.tag = 0x0123456789abcdefull;
    p.data = 0xdeadbeef;
    p.len = 16;
    emit_pkt("tagged_cq_data", &p, 16);
    p.flags = 0x8001;
    emit_pkt("tagged_bad_flags", &p, 16);

    p.flags = 0;
    p.kind = MFI_PKT_RTS_TAGGED;
    p.len = 1 << 20;
    p.rts.addr = 0x7f0012345000ull;
    p.rts.cookie = 42;
    p.rts.rkey = 0x1234;
    emit_pkt("rts_tagged_1m", &p, 0);
    p.kind = MFI_PKT_RTS_MSG;
    p.tag = 0;
    p.len = MFI_PROTO_MAX_MSG + 1;
    emit_pkt("rts_too_long", &p, 0);
    p.len = 8193;
    n = mfi_proto_build(b, &p);
    corpus_emit("rts_short_body", b, n - 1);

    memset(&p, 0, sizeof(p));
    p.kind = MFI_PKT_FIN;
    p.fin.cookie = 42;
    emit_pkt("fin_ok", &p, 0);
    p.fin.status = 1;
    emit_pkt("fin_error", &p, 0);

    /* Atomics: a fetch-add of one uint64, a compare-swap of two int32s,
     * a read (no operand), and malformed ones. */
    memset(&p, 0, sizeof(p));
    p.kind = MFI_PKT_ATOMIC;
    p.amo.addr = 0x7f0012345000ull;
    p.amo.key = 0x1234;
    p.amo.cookie = 7;
    p.amo.count = 1;
    p.amo.op = 2;       /* FI_SUM */
    p.amo.datatype = 7; /* FI_UINT64 */
    p.amo.flags = MFI_AMO_FETCH;
    p.len = sizeof(p.amo) + 8;
    emit_pkt("atomic_fadd_u64", &p, 8);
    p.amo.count = 2;
    p.amo.op = 12;      /* FI_CSWAP */
    p.amo.datatype = 4; /* FI_INT32 */
    p.len = sizeof(p.amo) + 16;
    emit_pkt("atomic_cswap_i32x2", &p, 16);
    p.amo.count = 1;
    p.amo.op = MFI_AMO_OP_READ;
    p.len = sizeof(p.amo);
    emit_pkt("atomic_read", &p, 0);
    p.len = sizeof(p.amo) + 4;
    emit_pkt("atomic_read_extra", &p, 4);
    p.amo.op = 2;
    p.amo.datatype = 16; /* unknown */
    emit_pkt("atomic_bad_type", &p, 4);
    p.amo.datatype = 4;
    p.amo.count = 0;
    p.len = sizeof(p.amo);
    emit_pkt("atomic_zero_count", &p, 0);
    p.amo.count = 0x40000001; /* count * size overflows 32 bits */
    p.len = sizeof(p.amo) + 4;
    emit_pkt("atomic_count_wrap", &p, 4);

    memset(&p, 0, sizeof(p));
    p.kind = MFI_PKT_ATOMIC_RESP;
    p.amo_resp.cookie = 7;
    p.len = sizeof(p.amo_resp) + 8;
    emit_pkt("atomic_resp_fetch", &p, 8);
    p.amo_resp.status = 13;
    p.len = sizeof(p.amo_resp);
    emit_pkt("atomic_resp_error", &p, 0);
    n = mfi_proto_build(b, &p);
    corpus_emit("atomic_resp_short", b, n - 1);

    memset(&p, 0, sizeof(p));
    p.kind = MFI_PKT_RMA_EVENT;
    p.len = sizeof(p.rmaev);
    p.rmaev.addr = 0x7f0012345000ull;
    p.rmaev.len = 4096;
    p.rmaev.key = 0x1234;
    p.rmaev.op = MFI_RMAEV_WRITE;
    p.rmaev.flags = MFI_RMAEV_IMM;
    emit_pkt("rma_event_write", &p, 0);
    p.rmaev.op = 3;
    emit_pkt("rma_event_bad_op", &p, 0);

    memset(&p, 0, sizeof(p));
    p.kind = MFI_PKT_HELLO;
    struct sockaddr_in a4 = {.sin_family = AF_INET,
                             .sin_port = htons(20000),
                             .sin_addr.s_addr = htonl(0x7f000001)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6,
                              .sin6_port = htons(20001)};
    a6.sin6_addr.s6_addr[15] = 1;
    p.len = sizeof(a4);
    n = mfi_proto_build(b, &p);
    memcpy(b + n, &a4, sizeof(a4));
    corpus_emit("hello_in4", b, n + sizeof(a4));
    corpus_emit("hello_in4_short", b, n + sizeof(a4) - 1);
    p.len = sizeof(a6);
    n = mfi_proto_build(b, &p);
    memcpy(b + n, &a6, sizeof(a6));
    corpus_emit("hello_in6", b, n + sizeof(a6));

    p.kind = 0x7f;
    emit_pkt("unknown_kind", &p, 8);
    p.kind = MFI_PKT_MSG;
    p.len = 4;
    n = mfi_proto_build(b, &p);
    memset(b + n, 1, 4);
    corpus_emit("msg_v2", b, n + 4);
    memcpy(b + 4, &(uint32_t){63}, 4); /* from endpoint 63 */
    corpus_emit("msg_v2_src63", b, n + 4);
    memset(b + 4, 0, 4);
    b[0] = MFI_PROTO_VERSION_MIN;
    corpus_emit("msg_v1", b, n + 4);
    b[0] = MFI_PROTO_VERSION + 1;
    corpus_emit("bad_version", b, n + 4);
    corpus_emit("short_header", b, 31);
    return 0;
}
#endif
