/*
 * seeded_dup.h - the engine's seeded faults on the responder's duplicate
 * path (the fault list and selection: src/wire/seeded_fault.h).
 *
 * atomic_twice executes a duplicated atomic again, dup_send_twice delivers
 * a duplicated SEND into the next receive, stream_dup_new takes a
 * duplicate PSN of a stream QP as its stream's next message.  In normal builds the hook is
 * the empty statement and nothing here defines a symbol.
 */
#ifndef MROCE_SEEDED_DUP_H
#define MROCE_SEEDED_DUP_H

#include "../wire/seeded_fault.h"

#ifdef MROCE_SEEDED_FAULTS
struct mre_qp;
struct mrw_pkt;
/* Applies the selected duplicate-path fault, if any, to pkt, a duplicate
 * of an executed request arriving at qp.  No return value, no errors. */
void mre_seeded_dup(struct mre_qp *qp, const struct mrw_pkt *pkt);
#define MROCE_SEEDED_FAULT_DUP(qp, pkt) mre_seeded_dup(qp, pkt)
#else
#define MROCE_SEEDED_FAULT_DUP(qp, pkt) ((void)0)
#endif

#endif /* MROCE_SEEDED_DUP_H */
