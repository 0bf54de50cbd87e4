/*
 * timers.h - the endpoint's timer heap of QPs (timers.c), keyed by each
 * QP's earliest deadline (mre_qp_expiry()).  None of these can fail: the
 * heap has a place for every QP slot.
 */
#ifndef MROCE_ENGINE_TIMERS_H
#define MROCE_ENGINE_TIMERS_H

/* Re-key qp after its deadlines may have changed: insert, move or remove
 * it so that the heap holds it exactly when it has a finite deadline. */
void mre_timer_update(mre_ep *ep, mre_qp *qp);

/* Remove qp from the heap, if it is there. */
void mre_timer_remove(mre_ep *ep, mre_qp *qp);

#endif /* MROCE_ENGINE_TIMERS_H */
