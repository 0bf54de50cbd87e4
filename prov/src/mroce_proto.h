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
 *
 * Why a READ-based rendezvous (receiver pulls) rather than the receiver
 * advertising its buffer for a WRITE: the pull needs one control message
 * less before the data moves (RTS -> READ, versus RTS -> CTS -> WRITE), the
 * data lands directly in the matched receive buffer with no copy, and the
 * engine's READ responses are retransmitted selectively like WRITEs.
 */
#ifndef MROCE_PROTO_H
#define MROCE_PROTO_H

#include <stdint.h>

#define MFI_PROTO_VERSION 1

/* Fields are stored in host order; the provider builds only on
 * little-endian hosts, so that is little endian on the wire. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "mroce provider: little-endian hosts only"
#endif

#define MFI_PKT_KINDS(X) \
    X(HELLO, 1)          \
    X(MSG, 2)            \
    X(TAGGED, 3)         \
    X(RTS_MSG, 4)        \
    X(RTS_TAGGED, 5)     \
    X(FIN, 6)

enum mfi_pkt_kind {
#define MFI_X_ENUM(name, val) MFI_PKT_##name = (val),
    MFI_PKT_KINDS(MFI_X_ENUM)
#undef MFI_X_ENUM
};

enum mfi_hdr_flags {
    MFI_HDR_CQ_DATA = 1, /* hdr.data carries remote CQ data */
};

struct mfi_hdr {
    uint8_t version; /* MFI_PROTO_VERSION */
    uint8_t kind;    /* enum mfi_pkt_kind */
    uint16_t flags;  /* enum mfi_hdr_flags */
    uint32_t rsvd;
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

#endif /* MROCE_PROTO_H */
