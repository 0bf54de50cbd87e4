/*
 * fuzz_wire.c - libFuzzer target for the packet decoder.
 *
 * mrw_pkt_decode() is the one function that sees raw bytes from the
 * network, so it must survive anything: this target feeds it arbitrary
 * input (ASan/UBSan catch any out-of-bounds read or undefined arithmetic).
 * Whatever it accepts must be exactly representable: re-encoding the decoded
 * packet has to reproduce the input byte for byte and decode to the same
 * fields, otherwise decoder and encoder disagree about the format and the
 * target aborts.  A CONNECT is the exception: the codec skips extensions of
 * unknown type and does not keep the reserved bytes of STREAMS and PLANES,
 * so its re-encoding is at most as long and must decode to the same fields.  Random bytes almost never carry a valid CRC32C, so inputs
 * whose trailer is wrong are also decoded once more with the CRC repaired;
 * that lets the fuzzer reach the per-opcode field checks.
 *
 * Built with -fsanitize=fuzzer when MROCE_FUZZ=ON; otherwise linked with
 * replay_main.c to replay fuzz/corpus/fuzz_wire/ as a plain test.  The
 * corpus holds the bytes of the wire vectors (tests/vectors/wire_vectors.txt)
 * of the same names: every valid one, and the invalid stream and CONNECT
 * extension ones, whose mutations sit next to what the decoder accepts.
 */
#include "mroce/wire.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A CONNECT may carry extensions the codec skips (unknown types, WIRE-33)
 * and reserved bytes it does not keep: its re-encoding holds the same
 * fields, not always the same bytes. */
static int is_conn(unsigned op)
{
    return op == MROCE_OP_CONNECT_REQ || op == MROCE_OP_CONNECT_RESP;
}

static void same_or_abort(const struct mrw_pkt *a, const struct mrw_pkt *b)
{
    const struct mrw_base_hdr *x = &a->base, *y = &b->base;
    if (x->version != y->version || x->opcode != y->opcode ||
        x->flags != y->flags || x->dst_qpn != y->dst_qpn ||
        x->token != y->token || x->psn != y->psn || x->tsval != y->tsval ||
        x->entropy != y->entropy ||
        (x->pkt_len != y->pkt_len && !is_conn(x->opcode)) ||
        a->payload_len != b->payload_len ||
        (a->payload == NULL) != (b->payload == NULL) ||
        (a->payload_len && memcmp(a->payload, b->payload, a->payload_len) != 0))
        abort();

    switch (x->opcode) {
    case MROCE_OP_SEND:
    case MROCE_OP_WRITE:
    case MROCE_OP_READ_REQ:
    case MROCE_OP_FETCH_ADD:
    case MROCE_OP_CMP_SWAP: {
        const struct mrw_req_hdr *r = &a->u.rq.req, *s = &b->u.rq.req;
        if (r->msn != s->msn || r->rsn != s->rsn || r->raddr != s->raddr ||
            r->rkey != s->rkey || r->msg_len != s->msg_len ||
            r->offset != s->offset || r->imm != s->imm ||
            r->stream != s->stream || r->stream_resvd != s->stream_resvd ||
            a->u.rq.atomic.swap_add != b->u.rq.atomic.swap_add ||
            a->u.rq.atomic.compare != b->u.rq.atomic.compare)
            abort();
        break;
    }
    case MROCE_OP_READ_RESP:
    case MROCE_OP_ATOMIC_RESP:
        if (memcmp(&a->u.resp, &b->u.resp, sizeof a->u.resp) != 0)
            abort(); /* four uint32_t: no padding */
        break;
    case MROCE_OP_ACK: {
        const struct mrw_ack_hdr *p = &a->u.ack, *q = &b->u.ack;
        unsigned i;
        if (p->cum_psn != q->cum_psn || p->echo_psn != q->echo_psn ||
            p->echo_ts != q->echo_ts || p->echo_entropy != q->echo_entropy ||
            p->echo_flags != q->echo_flags || p->sack_words != q->sack_words ||
            p->ce_count != q->ce_count || p->rx_count != q->rx_count ||
            p->credit != q->credit || p->ack_delay != q->ack_delay)
            abort();
        for (i = 0; i < p->sack_words; i++)
            if (p->sack[i] != q->sack[i])
                abort();
        break;
    }
    case MROCE_OP_NAK: {
        const struct mrw_nak_hdr *p = &a->u.nak, *q = &b->u.nak;
        if (p->nak_psn != q->nak_psn || p->msn != q->msn ||
            p->code != q->code || p->rnr_delay != q->rnr_delay ||
            p->stream != q->stream || p->cum_psn != q->cum_psn)
            abort();
        break;
    }
    case MROCE_OP_CONNECT_REQ:
    case MROCE_OP_CONNECT_RESP: {
        const struct mrw_conn_hdr *p = &a->u.conn, *q = &b->u.conn;
        if (p->src_qpn != q->src_qpn || p->start_psn != q->start_psn ||
            p->token != q->token || p->mtu != q->mtu ||
            p->npaths != q->npaths || p->rx_window != q->rx_window ||
            p->max_rd_atomic != q->max_rd_atomic || p->flags != q->flags ||
            p->max_ack_delay != q->max_ack_delay ||
            p->max_streams != q->max_streams || p->nplanes != q->nplanes ||
            p->nplanes > MROCE_MAX_PLANES ||
            memcmp(p->planes, q->planes, sizeof p->planes) != 0)
            abort();
        break;
    }
    default:
        break;
    }
}

/* Decode buf; if accepted, check the invariants and the round trip. */
static void check_one(const uint8_t *buf, size_t len)
{
    static uint8_t out[MROCE_MAX_PKT_LEN];
    struct mrw_pkt pkt, again;
    size_t n;
    int rc = mrw_pkt_decode(&pkt, buf, len);

    if (rc != 0) {
        if (rc < MROCE_WIRE_EFIELD || rc > MROCE_WIRE_ETRUNCATED)
            abort(); /* not a documented error code */
        return;
    }
    /* Accepted packets obey the contract the engine relies on. */
    if (pkt.base.pkt_len != len || !mrw_opcode_name(pkt.base.opcode) ||
        mrw_opcode_name(pkt.base.opcode)[0] == '?' ||
        (pkt.payload_len &&
         (pkt.payload < buf ||
          pkt.payload + pkt.payload_len > buf + len - MROCE_CRC_LEN)) ||
        (pkt.payload_len == 0 && pkt.payload != NULL) ||
        (mrw_pkt_hdr_len(&pkt) + pkt.payload_len + MROCE_CRC_LEN != len &&
         !is_conn(pkt.base.opcode)) ||
        mrw_pkt_hdr_len(&pkt) + pkt.payload_len + MROCE_CRC_LEN > len)
        abort();

    n = mrw_pkt_encode(&pkt, out, sizeof out);
    if (!is_conn(pkt.base.opcode) && (n != len || memcmp(out, buf, len) != 0))
        abort();
    if (mrw_pkt_decode(&again, out, n) != 0)
        abort();
    same_or_abort(&pkt, &again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t fixed[MROCE_MAX_PKT_LEN];

    check_one(data, size);

    /* Same bytes with pkt_len and CRC made consistent, so mutations of the
     * headers are judged by the field checks rather than the CRC. */
    if (size >= MROCE_BASE_HDR_LEN + MROCE_CRC_LEN &&
        size <= MROCE_MAX_PKT_LEN) {
        memcpy(fixed, data, size);
        fixed[26] = (uint8_t)(size >> 8);
        fixed[27] = (uint8_t)size;
        mrw_pkt_seal(fixed, size - MROCE_CRC_LEN);
        check_one(fixed, size);
    }
    return 0;
}
