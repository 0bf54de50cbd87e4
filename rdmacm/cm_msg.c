/* Encoding and parsing of the CM messages (cm_msg.h).  Every field is
 * big-endian; a body is fixed-size but for the private data, whose length
 * it names and which must fit both the body length and the type's limit.
 * Bytes from the network reach only cm_msg_parse, which checks each of
 * these before it copies anything. */
#include "cm_msg.h"

#include <string.h>

unsigned cm_msg_pdata_max(uint8_t type)
{
    switch (type) {
    case CM_REQ:
        return CM_REQ_PDATA;
    case CM_REP:
        return CM_REP_PDATA;
    case CM_REJ:
        return CM_REJ_PDATA;
    default:
        return 0;
    }
}

static int has_body(uint8_t type)
{
    return type == CM_REQ || type == CM_REP || type == CM_REJ;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

size_t cm_msg_encode(const struct cm_msg *msg, uint8_t *out)
{
    if (msg->type < CM_REQ || msg->type > CM_MSG_TYPE_MAX ||
        msg->pdata_len > cm_msg_pdata_max(msg->type))
        return 0;
    size_t body = has_body(msg->type) ? CM_MSG_FIXED + msg->pdata_len : 0;
    put32(out, CM_MSG_MAGIC);
    out[4] = CM_MSG_VERSION;
    out[5] = msg->type;
    out[6] = (uint8_t)(body >> 8);
    out[7] = (uint8_t)body;
    if (!body)
        return CM_MSG_HDR;
    uint8_t *b = out + CM_MSG_HDR;
    memcpy(b, msg->gid, 16);
    put32(b + 16, msg->qpn);
    b[20] = msg->resp_res;
    b[21] = msg->init_depth;
    b[22] = msg->retry;
    b[23] = msg->rnr_retry;
    b[24] = msg->flow_control;
    b[25] = msg->srq;
    b[26] = msg->reason;
    b[27] = msg->pdata_len;
    memcpy(b + CM_MSG_FIXED, msg->pdata, msg->pdata_len);
    return CM_MSG_HDR + body;
}

int cm_msg_parse(const uint8_t *buf, size_t len, struct cm_msg *msg)
{
    if (len < CM_MSG_HDR)
        return 0;
    if (get32(buf) != CM_MSG_MAGIC || buf[4] != CM_MSG_VERSION)
        return -1;
    uint8_t type = buf[5];
    size_t body = (size_t)buf[6] << 8 | buf[7];
    if (type < CM_REQ || type > CM_MSG_TYPE_MAX)
        return -1;
    if (!has_body(type)) {
        if (body)
            return -1;
        memset(msg, 0, sizeof(*msg));
        msg->type = type;
        return CM_MSG_HDR;
    }
    if (body < CM_MSG_FIXED || body > CM_MSG_FIXED + cm_msg_pdata_max(type))
        return -1;
    if (len < CM_MSG_HDR + body)
        return 0;
    const uint8_t *b = buf + CM_MSG_HDR;
    if (b[27] != body - CM_MSG_FIXED)
        return -1;
    memset(msg, 0, sizeof(*msg));
    msg->type = type;
    memcpy(msg->gid, b, 16);
    msg->qpn = get32(b + 16);
    msg->resp_res = b[20];
    msg->init_depth = b[21];
    msg->retry = b[22];
    msg->rnr_retry = b[23];
    msg->flow_control = b[24];
    msg->srq = b[25];
    msg->reason = b[26];
    msg->pdata_len = b[27];
    memcpy(msg->pdata, b + CM_MSG_FIXED, msg->pdata_len);
    return (int)(CM_MSG_HDR + body);
}
