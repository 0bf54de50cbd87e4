/* The CM exchange of librdmacm over MetaRoCE: the messages one side's
 * connection manager sends the other's over a TCP connection to the
 * rdma_cm port (README.md, "The CM exchange").  Encoding and parsing only,
 * no OS calls, so that the parser can be fuzzed (fuzz/fuzz_rdmacm_msg.c). */
#ifndef MROCE_RDMACM_MSG_H
#define MROCE_RDMACM_MSG_H

#include <stddef.h>
#include <stdint.h>

#define CM_MSG_MAGIC 0x4d52434du /* "MRCM" */
#define CM_MSG_VERSION 1
#define CM_MSG_HDR 8    /* magic, version, type, body length */
#define CM_MSG_FIXED 28 /* the body of REQ/REP before private data */
#define CM_MSG_MAX (CM_MSG_HDR + CM_MSG_FIXED + CM_REP_PDATA)

/* Private data a message carries at most: what IB's CM leaves the user of
 * rdma_cm (REQ 92 - 36 bytes of rdma_cm header, REP 196, REJ 148). */
#define CM_REQ_PDATA 56
#define CM_REP_PDATA 196
#define CM_REJ_PDATA 148

enum cm_msg_type {
    CM_REQ = 1,  /* active -> passive: connect request */
    CM_REP = 2,  /* passive -> active: accept */
    CM_RTU = 3,  /* active -> passive: ready to use */
    CM_REJ = 4,  /* either way: reject */
    CM_DREQ = 5, /* either way: disconnect request */
    CM_DREP = 6, /* reply to DREQ */
    CM_MRA = 7,  /* passive -> active: REQ delivered, the answer may take
                  * a while (IB's message receipt acknowledgement) */
};
#define CM_MSG_TYPE_MAX CM_MRA

struct cm_msg {
    uint8_t type;
    uint8_t gid[16];  /* REQ/REP: the sender's GID (index 0) */
    uint32_t qpn;     /* REQ/REP: the sender's QP */
    uint8_t resp_res; /* REQ/REP: responder_resources */
    uint8_t init_depth;
    uint8_t retry;
    uint8_t rnr_retry;
    uint8_t flow_control;
    uint8_t srq;
    uint8_t reason;    /* REJ: the IB CM reject reason */
    uint8_t pdata_len; /* REQ/REP/REJ */
    uint8_t pdata[CM_REP_PDATA];
};

/* Writes MSG to OUT (at least CM_MSG_MAX bytes); returns the length, or 0
 * when MSG is invalid (unknown type, private data too long for it). */
size_t cm_msg_encode(const struct cm_msg *msg, uint8_t *out);

/* Parses one message from the LEN bytes at BUF: returns its length with
 * *MSG filled, 0 when BUF holds only part of one, -1 when it is malformed
 * (wrong magic or version, unknown type, a length that does not fit the
 * type, private data longer than the type allows). */
int cm_msg_parse(const uint8_t *buf, size_t len, struct cm_msg *msg);

/* The largest private data TYPE carries (0 for RTU/DREQ/DREP/MRA). */
unsigned cm_msg_pdata_max(uint8_t type);

#endif
