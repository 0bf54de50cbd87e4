/*
 * ep.h - the endpoint's internal services to its QPs (ep.c): the ready
 * list the transmit scheduler serves, QP lookup, randomness and the
 * receiver's credit.  None of these functions can fail.
 */
#ifndef MROCE_ENGINE_EP_H
#define MROCE_ENGINE_EP_H

#include <stdint.h>

/* Append qp to the ready list (QPs that may have a packet to send) unless
 * it is on it already. */
void mre_ep_mark_ready(mre_ep *ep, mre_qp *qp);

/* Take qp off the ready list, if it is on it. */
void mre_ep_unready(mre_ep *ep, mre_qp *qp);

/* The QP numbered qpn, or NULL if no live QP has that number. */
mre_qp *mre_ep_find_qp(mre_ep *ep, uint32_t qpn);

/* 64 bits from the caller's random source (cfg.rand). */
uint64_t mre_ep_rand64(mre_ep *ep);

/* The credit qp grants its peer (receiver-driven mode): the endpoint's
 * rx_credit_bytes split evenly over the QPs that received credit-mode data
 * in the last millisecond; MROCE_CREDIT_UNLIMITED when the endpoint has no
 * budget or the peer did not ask for credits. */
uint32_t mre_ep_credit_share(mre_ep *ep, mre_qp *qp, mroce_tstamp now);

#endif /* MROCE_ENGINE_EP_H */
