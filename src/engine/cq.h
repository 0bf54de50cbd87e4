/*
 * cq.h - completion queues inside the engine (cq.c).
 */
#ifndef MROCE_ENGINE_CQ_H
#define MROCE_ENGINE_CQ_H

/* Append wc to cq, growing the ring when it is full so that no completion
 * is dropped.  Returns 0, or MROCE_ENOMEM when the ring could not grow
 * (wc is then not queued). */
int mre_cq_push(mre_cq *cq, const struct mroce_wc *wc);

/* Free every CQ of the endpoint (mre_ep_del()). */
void mre_cq_free_all(mre_ep *ep);

#endif /* MROCE_ENGINE_CQ_H */
