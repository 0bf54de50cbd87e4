/*
 * conntab.h - the handshake lookups, each O(1) expected (conntab.c).
 *
 * The connection table holds every QP that has left RESET, LISTEN and
 * CONNECTING (so RTS, CLOSING, CLOSED or ERROR), keyed by what a
 * retransmitted CONNECT_REQ carries: the peer's address, QPN and token.
 * The listen FIFO holds the QPs in LISTEN, oldest first.
 */
#ifndef MROCE_ENGINE_CONNTAB_H
#define MROCE_ENGINE_CONNTAB_H

#include <stdint.h>

/* Allocate the table's buckets (one per QP slot, rounded up to a power of
 * two) and its hash key.  Returns 0 or MROCE_ENOMEM. */
int mre_conntab_init(mre_ep *ep);

/* Free the buckets. */
void mre_conntab_free(mre_ep *ep);

/* Add qp under its peer key; a member already is left alone. */
void mre_conntab_insert(mre_ep *ep, mre_qp *qp);

/* Remove qp, if it is a member. */
void mre_conntab_remove(mre_ep *ep, mre_qp *qp);

/* The member with this peer key (the one with the lowest live index if
 * several have it), or NULL. */
mre_qp *mre_conntab_find(mre_ep *ep, const struct mre_addr *from,
                         uint32_t peer_qpn, uint64_t peer_token);

/* Append qp (entering LISTEN) to the listen FIFO. */
void mre_conntab_listen_append(mre_ep *ep, mre_qp *qp);

/* Take qp, which must be on it (state LISTEN), off the listen FIFO. */
void mre_conntab_listen_remove(mre_ep *ep, mre_qp *qp);

/* The LISTEN QP a CONNECT_REQ for dst_qpn goes to: the oldest one for 0,
 * else that QP if it is in LISTEN; NULL if none. */
mre_qp *mre_conntab_listen_find(mre_ep *ep, uint32_t dst_qpn);

#endif /* MROCE_ENGINE_CONNTAB_H */
