/*
 * mroce_proto.c - decoding (and, for tests and the fuzzer, encoding) of
 * the provider's wire format (mroce_proto.h).  This is the one place where
 * bytes received from a peer become header fields: mroce_msg.c and
 * mroce_conn.c only ever see a validated struct mfi_pkt or sockaddr.
 *
 * Kept free of libfabric and libmroce types so that the libFuzzer target
 * (fuzz/fuzz_prov_proto.c) compiles this file directly: the provider's
 * shared library is not built with clang's fuzzing runtimes.
 *
 * For the atomic kinds the payload view starts past their fixed body, at
 * the values, whose length parsing has checked against op and count.
 *
 * Fields are little endian on the wire and the provider builds only on
 * little-endian hosts (mroce_proto.h), so decoding is memcpy out of a
 * possibly unaligned buffer.
 */
#include "mroce_proto.h"

#include <netinet/in.h>
#include <string.h>

static const char *const kind_names[] = {
#define MFI_X_NAME(name, val) [val] = #name,
    MFI_PKT_KINDS(MFI_X_NAME)
#undef MFI_X_NAME
};

const char *mfi_pkt_kind_str(unsigned kind)
{
    if (kind < sizeof(kind_names) / sizeof(kind_names[0]) && kind_names[kind])
        return kind_names[kind];
    return "?";
}

size_t mfi_amo_dt_size(unsigned dt)
{
    /* FI_INT8 .. FI_UINT128 in enum order; long double is stored in 16
     * bytes on the (x86-64, aarch64) hosts the provider builds on. */
    static const uint8_t sz[MFI_AMO_DT_CNT] = {1, 1, 2, 2,  4,  4,  8,  8,
                                               4, 8, 8, 16, 16, 32, 16, 16};
    return dt < MFI_AMO_DT_CNT ? sz[dt] : 0;
}

unsigned mfi_amo_operands(unsigned op)
{
    return op == MFI_AMO_OP_READ ? 0 : op >= MFI_AMO_OP_CSWAP ? 2 : 1;
}

static int parse_amo(const struct mfi_hdr *h, struct mfi_pkt *out)
{
    if (h->len != out->plen)
        return MFI_PARSE_LEN;
    if (out->plen < sizeof(out->amo))
        return MFI_PARSE_SHORT;
    memcpy(&out->amo, out->payload, sizeof(out->amo));
    out->payload += sizeof(out->amo);
    out->plen -= sizeof(out->amo);
    const struct mfi_amo *a = &out->amo;
    if (a->op >= MFI_AMO_OP_CNT || !mfi_amo_dt_size(a->datatype) ||
        a->count == 0 || (a->flags & ~(uint8_t)MFI_AMO_FETCH))
        return MFI_PARSE_KIND;
    uint64_t want = (uint64_t)a->count * mfi_amo_dt_size(a->datatype) *
                    mfi_amo_operands(a->op);
    return want == out->plen ? MFI_PARSE_OK : MFI_PARSE_LEN;
}

int mfi_proto_parse(const void *buf, size_t len, struct mfi_pkt *out)
{
    struct mfi_hdr h;
    if (len < sizeof(h))
        return MFI_PARSE_SHORT;
    memcpy(&h, buf, sizeof(h));
    if (h.version < MFI_PROTO_VERSION_MIN || h.version > MFI_PROTO_VERSION)
        return MFI_PARSE_VERSION;
    if (h.flags & ~(uint16_t)MFI_HDR_CQ_DATA)
        return MFI_PARSE_FLAGS;
    memset(out, 0, sizeof(*out));
    out->version = h.version;
    out->src_idx = h.version >= 2 ? h.rsvd : 0;
    out->kind = h.kind;
    out->flags = h.flags;
    out->data = h.data;
    out->len = h.len;
    out->payload = (const uint8_t *)buf + sizeof(h);
    out->plen = len - sizeof(h);
    switch (h.kind) {
    case MFI_PKT_HELLO:
        return MFI_PARSE_OK;
    case MFI_PKT_TAGGED:
        out->tag = h.tag;
        /* fall through */
    case MFI_PKT_MSG:
        return h.len == out->plen ? MFI_PARSE_OK : MFI_PARSE_LEN;
    case MFI_PKT_RTS_TAGGED:
        out->tag = h.tag;
        /* fall through */
    case MFI_PKT_RTS_MSG:
        if (out->plen < sizeof(out->rts))
            return MFI_PARSE_SHORT;
        if (h.len > MFI_PROTO_MAX_MSG)
            return MFI_PARSE_LEN;
        memcpy(&out->rts, out->payload, sizeof(out->rts));
        return MFI_PARSE_OK;
    case MFI_PKT_FIN:
        if (out->plen < sizeof(out->fin))
            return MFI_PARSE_SHORT;
        memcpy(&out->fin, out->payload, sizeof(out->fin));
        return MFI_PARSE_OK;
    case MFI_PKT_ATOMIC:
        return parse_amo(&h, out);
    case MFI_PKT_ATOMIC_RESP:
        if (h.len != out->plen)
            return MFI_PARSE_LEN;
        if (out->plen < sizeof(out->amo_resp))
            return MFI_PARSE_SHORT;
        memcpy(&out->amo_resp, out->payload, sizeof(out->amo_resp));
        out->payload += sizeof(out->amo_resp);
        out->plen -= sizeof(out->amo_resp);
        return MFI_PARSE_OK;
    case MFI_PKT_RMA_EVENT:
        if (out->plen < sizeof(out->rmaev))
            return MFI_PARSE_SHORT;
        if (h.len != out->plen || out->plen != sizeof(out->rmaev))
            return MFI_PARSE_LEN;
        memcpy(&out->rmaev, out->payload, sizeof(out->rmaev));
        if ((out->rmaev.op != MFI_RMAEV_WRITE &&
             out->rmaev.op != MFI_RMAEV_READ) ||
            (out->rmaev.flags & ~(uint8_t)MFI_RMAEV_IMM))
            return MFI_PARSE_KIND;
        return MFI_PARSE_OK;
    default:
        return MFI_PARSE_KIND;
    }
}

size_t mfi_proto_hello(const void *payload, size_t len,
                       struct sockaddr_storage *ss)
{
    sa_family_t fam;
    memset(ss, 0, sizeof(*ss));
    if (len < sizeof(fam) + offsetof(struct sockaddr, sa_family))
        return 0;
    memcpy(&fam, (const char *)payload + offsetof(struct sockaddr, sa_family),
           sizeof(fam));
    size_t want = fam == AF_INET    ? sizeof(struct sockaddr_in)
                  : fam == AF_INET6 ? sizeof(struct sockaddr_in6)
                                    : 0;
    if (!want || len != want)
        return 0;
    memcpy(ss, payload, len);
    return len;
}

size_t mfi_proto_build(void *buf, const struct mfi_pkt *p)
{
    struct mfi_hdr h = {0};
    h.version = p->version ? p->version : MFI_PROTO_VERSION;
    h.rsvd = h.version >= 2 ? p->src_idx : 0;
    h.kind = p->kind;
    h.flags = p->flags;
    h.tag = p->tag;
    h.data = p->data;
    h.len = p->len;
    memcpy(buf, &h, sizeof(h));
    char *body = (char *)buf + sizeof(h);
    switch (p->kind) {
    case MFI_PKT_RTS_MSG:
    case MFI_PKT_RTS_TAGGED:
        memcpy(body, &p->rts, sizeof(p->rts));
        return sizeof(h) + sizeof(p->rts);
    case MFI_PKT_FIN:
        memcpy(body, &p->fin, sizeof(p->fin));
        return sizeof(h) + sizeof(p->fin);
    case MFI_PKT_ATOMIC:
        memcpy(body, &p->amo, sizeof(p->amo));
        return sizeof(h) + sizeof(p->amo);
    case MFI_PKT_ATOMIC_RESP:
        memcpy(body, &p->amo_resp, sizeof(p->amo_resp));
        return sizeof(h) + sizeof(p->amo_resp);
    case MFI_PKT_RMA_EVENT:
        memcpy(body, &p->rmaev, sizeof(p->rmaev));
        return sizeof(h) + sizeof(p->rmaev);
    default:
        return sizeof(h);
    }
}
