/*
 * qp.h - the queue pair's lifecycle inside the engine (qp.c): the
 * handshake and close packets, the error state, and the flush that calls
 * each stage's own reset.  None of these functions can fail except the
 * packet writer.
 */
#ifndef MROCE_ENGINE_QP_H
#define MROCE_ENGINE_QP_H

#include <stddef.h>

/* A CONNECT_REQ arrived at ep: a retransmission for an accepted connection
 * gets its CONNECT_RESP again; a new one is accepted by the LISTEN QP it
 * names (or the oldest), which enters RTS.  Without a listener, or with a
 * zero QPN or token, it is dropped (drop_no_listener). */
void mre_qp_on_connect_req(mre_ep *ep, const struct mrw_pkt *pkt,
                           const struct mre_rx_info *info, mroce_tstamp now);

/* A CONNECT_RESP, DISCONNECT or DISCONNECT_ACK for qp: completes the
 * handshake, answers or completes the close (CONN-*).  One that does not
 * fit the QP's state is dropped (drop_state, drop_invalid). */
void mre_qp_on_ctrl_pkt(mre_qp *qp, const struct mrw_pkt *pkt,
                        const struct mre_rx_info *info, mroce_tstamp now);

/* Write the QP's most urgent pending control packet (CONNECT_REQ,
 * CONNECT_RESP, DISCONNECT, DISCONNECT_ACK) into buf and clear its bit.
 * Returns its length or MROCE_ENOBUF. */
int mre_qp_write_ctrl(mre_qp *qp, uint8_t *buf, size_t cap,
                      struct mre_tx_info *info, mroce_tstamp now);

/* The control retransmission timer (ctrl_deadline): resend CONNECT_REQ or
 * DISCONNECT with backoff; a handshake past handshake_timeout fails the QP
 * (ERROR), a close past retry_cnt tries ends in CLOSED. */
void mre_qp_ctrl_timer(mre_qp *qp, mroce_tstamp now);

/* In CLOSING, send DISCONNECT once no send work and no packet of ours is
 * outstanding (and arm its retransmission). */
void mre_qp_try_close(mre_qp *qp, mroce_tstamp now);

/* Move the QP to ERROR (from any state but ERROR): it leaves the listen
 * FIFO, joins the connection table, drops pending packets and timers, and
 * is flushed. */
void mre_qp_enter_error(mre_qp *qp);

/* Complete everything outstanding and empty the QP's transmit state, by
 * each module's own reset in turn: the completer (send completions), the
 * requester, the responder (receive completions, jobs), the transmit ring
 * and the loss timers.  Completions keep posting order. */
void mre_qp_flush(mre_qp *qp);

/* Drop the region references of send WQE w / receive WQE r. */
void mre_qp_release_swqe(mre_qp *qp, struct mre_swqe *w);
void mre_qp_release_rwqe(mre_qp *qp, struct mre_rwqe *r);

/* The QP's earliest deadline (ACK, loss, reorder, RNR, control and, for a
 * connection in RTS or CLOSING, keepalive), MROCE_TSTAMP_INF if none. */
mroce_tstamp mre_qp_expiry(const mre_qp *qp);

/* Fill the base header fields common to every packet qp sends: version,
 * op, the peer's QPN and token, psn, the timestamp of now and the entropy
 * of path slot 0; no flags, no payload. */
void mre_qp_base_hdr(const mre_qp *qp, struct mrw_pkt *p, uint8_t op,
                     uint32_t psn, mroce_tstamp now);

#endif /* MROCE_ENGINE_QP_H */
