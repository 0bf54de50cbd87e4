/*
 * mroce_proto.h - the provider's wire format: what one libfabric endpoint
 * sends another inside MetaRoCE SENDs.  Only the wire format lives here
 * (the objects are in mroce_fi.h).
 *
 * Every SEND starts with struct mfi_hdr (32 bytes).  Fields are little
 * endian.  The packet kinds (X-macro, so names and values cannot drift):
 *
 *   HELLO       first SEND on a QP the sender opened: payload is the
 *               sender's endpoint name (a sockaddr, what fi_getname gives),
 *               so the acceptor learns which peer the QP belongs to.
 *   MSG/TAGGED  eager message: the payload follows the header (length
 *               hdr.len, at most the eager size, so it fits a bounce
 *               buffer).
 *   RTS_MSG/RTS_TAGGED  rendezvous for a larger message: struct mfi_rts
 *               follows; the receiver, once the message matches a receive,
 *               READs hdr.len bytes from (addr, rkey) straight into the
 *               application's buffer, then sends FIN.
 *   FIN         rendezvous done: struct mfi_fin; the sender completes its
 *               send and releases the registration.
 *   ATOMIC      an atomic operation for the target's provider to execute
 *               (mroce_atomic.c): struct mfi_amo, then count operands, then
 *               (compare ops) count compare values; hdr.len = bytes after
 *               the header.
 *   ATOMIC_RESP its outcome: struct mfi_amo_resp, then (fetching ops, on
 *               success) the count values the target held before.
 *   RMA_EVENT   FI_RMA_EVENT: a READ or WRITE of the sender's completed
 *               (struct mfi_rma_event), so the target counts it and
 *               reports it (mroce_rma_event.c); hdr.len = the body's size.
 *               With MFI_HDR_CQ_DATA, hdr.data is the CQ data of a WRITE
 *               that went to the target's domain device without an
 *               immediate, for the target to report.
 *
 * Why a READ-based rendezvous (receiver pulls) rather than the receiver
 * advertising its buffer for a WRITE: the pull needs one control message
 * less before the data moves (RTS -> READ, versus RTS -> CTS -> WRITE), the
 * data lands directly in the matched receive buffer with no copy, and the
 * engine's READ responses are retransmitted selectively like WRITEs.
 */
#ifndef MROCE_PROTO_H
#define MROCE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Version 2: hdr.rsvd is the sending endpoint's index in its domain
 * (shared connections: one QP per pair of devices, mroce_shared.c);
 * version 1 (FI_MROCE_SHARED_CONN=0) sends 0 there.  Both are read. */
#define MFI_PROTO_VERSION 2
#define MFI_PROTO_VERSION_MIN 1

/* Fields are stored in host order; the provider builds only on
 * little-endian hosts, so that is little endian on the wire. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mroce provider: little-endian hosts only"
#endif

/* clang-format off */
#define MFI_PKT_KINDS(X) \
    X(HELLO, 1)          \
    X(MSG, 2)            \
    X(TAGGED, 3)         \
    X(RTS_MSG, 4)        \
    X(RTS_TAGGED, 5)     \
    X(FIN, 6)            \
    X(ATOMIC, 7)         \
    X(ATOMIC_RESP, 8)    \
    X(RMA_EVENT, 9)
/* clang-format on */

enum mfi_pkt_kind {
#define MFI_X_ENUM(name, val) MFI_PKT_##name = (val),
    MFI_PKT_KINDS(MFI_X_ENUM)
#undef MFI_X_ENUM
};

enum mfi_hdr_flags {
    MFI_HDR_CQ_DATA = 1, /* hdr.data carries remote CQ data */
};

struct mfi_hdr {
    uint8_t version; /* MFI_PROTO_VERSION (or _MIN) */
    uint8_t kind;    /* enum mfi_pkt_kind */
    uint16_t flags;  /* enum mfi_hdr_flags */
    uint32_t rsvd;   /* version 2: the source endpoint's index */
    uint64_t tag;    /* TAGGED, RTS_TAGGED */
    uint64_t data;   /* remote CQ data when MFI_HDR_CQ_DATA */
    uint64_t len;    /* message length (eager: the payload's; RTS: the
                        whole message's) */
};

struct mfi_rts {
    uint64_t addr;   /* sender's buffer (virtual address, READ target) */
    uint64_t cookie; /* names the send request in FIN */
    uint32_t rkey;   /* sender's registration of that buffer */
    uint32_t rsvd;
};

struct mfi_fin {
    uint64_t cookie; /* from the RTS */
    uint32_t status; /* 0: read; otherwise the receiver's error (the
                        sender completes its send with an error entry) */
    uint32_t rsvd;
};

/* Atomic operations.  op and datatype carry libfabric's enum fi_op and
 * enum fi_datatype values (mroce_atomic.c checks that they agree): the
 * wire names them by number so this file needs no libfabric header. */
#define MFI_AMO_OP_CNT 19   /* FI_MIN .. FI_MSWAP */
#define MFI_AMO_OP_READ 10  /* FI_ATOMIC_READ: no operand */
#define MFI_AMO_OP_CSWAP 12 /* FI_CSWAP .. FI_MSWAP: operand + compare */
#define MFI_AMO_DT_CNT 16   /* FI_INT8 .. FI_UINT128 */

enum mfi_amo_flags {
    MFI_AMO_FETCH = 1, /* the response carries the old values */
};

struct mfi_amo {
    uint64_t addr;    /* target virtual address of the first element */
    uint64_t key;     /* target registration (its fi_mr_key) */
    uint64_t cookie;  /* names the request in the response */
    uint32_t count;   /* elements (>= 1) */
    uint8_t op;       /* enum fi_op */
    uint8_t datatype; /* enum fi_datatype */
    uint8_t flags;    /* enum mfi_amo_flags */
    uint8_t rsvd;
};

struct mfi_amo_resp {
    uint64_t cookie; /* from the request */
    uint32_t status; /* 0, or a positive FI_E* error (FI_EACCES, FI_EINVAL,
                        FI_EOPNOTSUPP) */
    uint32_t rsvd;
};

/* FI_RMA_EVENT notices. */
enum mfi_rma_event_op { MFI_RMAEV_WRITE = 1, MFI_RMAEV_READ = 2 };
enum mfi_rma_event_flags {
    MFI_RMAEV_IMM = 1, /* the WRITE carried immediate data: the target
                          has reported it already, and only counts it */
};
struct mfi_rma_event {
    uint64_t addr; /* target virtual address the operation began at */
    uint64_t len;  /* bytes */
    uint32_t key;  /* target registration */
    uint8_t op;    /* enum mfi_rma_event_op */
    uint8_t flags; /* enum mfi_rma_event_flags */
    uint16_t rsvd;
};

/* Bytes of one element of wire datatype dt (0: unknown), and how many
 * arrays of count elements an ATOMIC of op carries (0, 1 or 2). */
size_t mfi_amo_dt_size(unsigned dt);
unsigned mfi_amo_operands(unsigned op);

/* --- decoding (mroce_proto.c) ---
 *
 * Everything the provider reads from a received SEND goes through these
 * two functions: they see untrusted bytes, so they check every length
 * before reading and return a fully validated view.  They use no
 * libfabric or libmroce type, so fuzz/fuzz_prov_proto.c compiles
 * mroce_proto.c on its own (the provider's shared library is not built
 * in the libFuzzer build). */

/* Largest message an RTS may announce (the provider's max_msg_size). */
#define MFI_PROTO_MAX_MSG (1ull << 30)

enum mfi_parse_err {
    MFI_PARSE_OK = 0,
    MFI_PARSE_SHORT = -1,   /* shorter than its header or kind's body */
    MFI_PARSE_VERSION = -2, /* not MFI_PROTO_VERSION_MIN..VERSION */
    MFI_PARSE_KIND = -3,    /* unknown kind */
    MFI_PARSE_LEN = -4,     /* hdr.len disagrees with the packet */
    MFI_PARSE_FLAGS = -5,   /* unknown flag bits */
};

/* A decoded SEND: fields copied out of the (possibly unaligned) buffer. */
struct mfi_pkt {
    uint8_t version;        /* hdr.version */
    uint8_t kind;           /* enum mfi_pkt_kind */
    uint32_t src_idx;       /* hdr.rsvd: the source endpoint's index
                               (version 2; unchecked, the caller bounds
                               it) */
    uint16_t flags;         /* enum mfi_hdr_flags */
    uint64_t tag;           /* TAGGED kinds; 0 otherwise */
    uint64_t data;          /* CQ data (meaningful with MFI_HDR_CQ_DATA) */
    uint64_t len;           /* eager: == plen; RTS: whole message */
    const uint8_t *payload; /* after the header, inside the buffer */
    size_t plen;            /* bytes after the header */
    struct mfi_rts rts;     /* RTS kinds */
    struct mfi_fin fin;     /* FIN */
    struct mfi_amo amo;     /* ATOMIC (payload/plen: past it, the values) */
    struct mfi_amo_resp amo_resp; /* ATOMIC_RESP (payload/plen: past it) */
    struct mfi_rma_event rmaev;   /* RMA_EVENT */
};

/* Decodes buf[0..len): 0, or a negative enum mfi_parse_err (out is then
 * unspecified).  Accepts: HELLO with any payload (see mfi_proto_hello),
 * MSG/TAGGED whose hdr.len equals the payload, RTS_* with a whole mfi_rts
 * and hdr.len <= MFI_PROTO_MAX_MSG, FIN with a whole mfi_fin, ATOMIC with
 * a whole mfi_amo of a known op and datatype, count >= 1 and exactly the
 * operand bytes that op and count need after it, ATOMIC_RESP with a whole
 * mfi_amo_resp; for both hdr.len equals the bytes after the header; and
 * RMA_EVENT with exactly a whole mfi_rma_event (hdr.len its size) of a
 * known op and flags.  For the atomic kinds payload/plen then describe
 * the values after the body. */
int mfi_proto_parse(const void *buf, size_t len, struct mfi_pkt *out);

/* A HELLO's payload: the sender's name, an AF_INET or AF_INET6 sockaddr
 * of exactly its family's size.  Copies it into *ss (zero-filled first)
 * and returns its length, or 0 if it is not one. */
size_t mfi_proto_hello(const void *payload, size_t len,
                       struct sockaddr_storage *ss);

/* Writes the header (version p->version, MFI_PROTO_VERSION if 0; from
 * version 2 rsvd = p->src_idx), and for RTS/FIN kinds the body from p, into buf,
 * which has room for sizeof(struct mfi_hdr) + the body; returns the bytes
 * written.  The payload of MSG/TAGGED/HELLO is the caller's to append. */
size_t mfi_proto_build(void *buf, const struct mfi_pkt *p);

/* Printable kind name ("?" for an unknown one). */
const char *mfi_pkt_kind_str(unsigned kind);

#endif /* MROCE_PROTO_H */
