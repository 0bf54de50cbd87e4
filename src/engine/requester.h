/*
 * requester.h - work requests in, data packets out (requester.c).
 *
 * Called by ep.c (transmit scheduling), timers.c and qp.c (the flush).  It
 * calls txring.h and loss.h below it and no other stage.
 */
#ifndef MROCE_ENGINE_REQUESTER_H
#define MROCE_ENGINE_REQUESTER_H

#include <stddef.h>

/* Write the QP's next data packet into buf (cap bytes), in priority order:
 * a packet declared lost or a tail-loss probe, a response owed to the peer,
 * a new request packet; records it in the transmit ring and fills info.
 * Returns its length, 0 when the windows, the credit or the ordering rules
 * allow nothing now, or MROCE_ENOBUF when cap is smaller than one MTU-sized
 * packet or the codec found it too small. */
int mre_req_write_data(mre_qp *qp, uint8_t *buf, size_t cap,
                       struct mre_tx_info *info, mroce_tstamp now);

/* 1 if the QP (in RTS or CLOSING) has a retransmission, a response or a
 * new request packet to send, windows permitting; else 0. */
int mre_req_has_data(const mre_qp *qp);

/* The requester's part of a flush (mre_qp_flush()): no WR is left to
 * send (sq_tx = sq_tail) and none is outstanding as a READ or atomic. */
void mre_req_reset(mre_qp *qp);

#endif /* MROCE_ENGINE_REQUESTER_H */
