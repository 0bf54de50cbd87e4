/*
 * sack.c - the SACK span negotiated in the handshake (WIRE-52, REL-42).
 * See sack.h.  The span bounds two things: how many words the responder
 * puts in an ACK (responder.c) and how far beyond snd_una the sender may
 * expect to hear of its packets before a hole at snd_una blocks every
 * later report (loss.c, LOSS-7 (d) and LOSS-12).
 */
#include "engine_int.h"

#include "../wire/seeded_fault.h"

static uint8_t offered_words(const mre_qp *qp)
{
    uint32_t w = qp->attr.window / 32;
    if (qp->attr.sack_words && qp->attr.sack_words < w)
        w = qp->attr.sack_words;
    if (w > MROCE_SACK_WORDS_LIMIT)
        w = MROCE_SACK_WORDS_LIMIT;
    return w > MROCE_MAX_SACK_WORDS ? (uint8_t)w : 0;
}

void mre_sack_conn_build(const mre_qp *qp, struct mrw_conn_hdr *c, int resp)
{
    /* A CONNECT_RESP carries no extension its CONNECT_REQ lacked (CONN-25):
     * the listener has adopted the request, so the span says whether it
     * had one. */
    if (!resp || qp->ack_sack_words > MROCE_MAX_SACK_WORDS)
        c->sack_words = offered_words(qp);
}

void mre_sack_conn_adopt(mre_qp *qp, const struct mrw_conn_hdr *c)
{
    uint8_t mine = offered_words(qp);
    int both = mine && c->sack_words;
    /* The peer's receiver must hear of the extension before it may send
     * more than 256 PSNs: a peer that does not know it drops such an ACK
     * as malformed (WIRE-26 of earlier versions). */
    qp->ack_sack_words = both ? c->sack_words : MROCE_MAX_SACK_WORDS;
    if (MROCE_SEEDED_FAULT(SACK_SPAN_UNNEGOTIATED) && mine)
        qp->ack_sack_words = mine;
    qp->sack_span = 32u * (both ? mine : MROCE_MAX_SACK_WORDS);
}
