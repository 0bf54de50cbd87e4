/*
 * sack.h - the SACK span of a connection: how many SACK words the ACKs of
 * each direction carry (WIRE-52, REL-42).  Without the SACK extension an
 * ACK reports at most 256 PSNs beyond its cumulative point (WIRE-19); with
 * it, each side states in its CONNECT how many words it accepts, up to
 * 255 (8,160 PSNs), so a window of a long-haul bandwidth-delay product can
 * be acknowledged past a hole.
 */
#ifndef MRE_SACK_H
#define MRE_SACK_H

#include <mroce/wire.h>

struct mre_qp;

/* Words this QP states in its CONNECT's SACK extension: attr.sack_words
 * (0: window / 32), at most 255 and the window / 32; none when that is
 * MROCE_MAX_SACK_WORDS or fewer, nor in a CONNECT_RESP (resp 1) whose
 * CONNECT_REQ had none (CONN-25).  Sets c->sack_words. */
void mre_sack_conn_build(const struct mre_qp *qp, struct mrw_conn_hdr *c,
                         int resp);

/* Adopt the peer's half (REL-42): with the extension on both sides, ACKs
 * this QP sends carry up to the peer's words and ACKs it receives up to its
 * own; otherwise MROCE_MAX_SACK_WORDS both ways.  Sets qp->ack_sack_words
 * and qp->sack_span. */
void mre_sack_conn_adopt(struct mre_qp *qp, const struct mrw_conn_hdr *c);

#endif
