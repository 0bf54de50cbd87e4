/*
 * responder.h - data packets in: placement, receive completions, READ and
 * atomic execution, ACKs and NAKs out (responder.c).
 *
 * Called by ep.c (receive demux, transmit scheduling), timers.c, qp.c and
 * seeded_dup.c, and by the completer through one seam,
 * mre_resp_on_acked().  It calls no other stage.  Malformed, stale or
 * unauthorised packets are dropped and counted or NAKed; none of these
 * functions returns an error except the packet writers.
 */
#ifndef MROCE_ENGINE_RESPONDER_H
#define MROCE_ENGINE_RESPONDER_H

#include <stddef.h>

/* Handle a data packet (request or READ/atomic response) of a QP in RTS or
 * CLOSING: window check, duplicate detection, placement or job creation,
 * receive completions and ACK scheduling.  Returns 1 when it placed a READ
 * or atomic response at the requester, after which the caller runs
 * mre_comp_complete_sends() (a response may finish a work request); 0
 * otherwise, including for dropped and NAKed packets. */
int mre_resp_on_data(mre_qp *qp, const struct mrw_pkt *pkt,
                     const struct mre_rx_info *info, mroce_tstamp now);

/* Write the QP's ACK (cumulative PSN, SACK, echo, ECN counts, credit,
 * keepalive flags) into buf and clear what it answers.  Returns its length
 * or MROCE_ENOBUF. */
int mre_resp_write_ack(mre_qp *qp, uint8_t *buf, size_t cap,
                       struct mre_tx_info *info, mroce_tstamp now);

/* Write the pending NAK (qp->nak) into buf.  Returns its length or
 * MROCE_ENOBUF. */
int mre_resp_write_nak(mre_qp *qp, uint8_t *buf, size_t cap,
                       struct mre_tx_info *info, mroce_tstamp now);

/* Complete finished receives in posting order.  A successful receive is
 * reported only once every PSN up to its message's last has arrived, so its
 * completion implies that every message posted before it (a WRITE carrying
 * the data it announces, say) is in memory too, as on an RDMA reliable
 * connection (SEM-24).  On a QP of several streams the same holds per
 * stream (stream.c, SEM-33).  On a QP no longer in RTS or CLOSING such a
 * receive does not wait: it completes with WR_FLUSH_ERR. */
void mre_resp_complete_recvs(mre_qp *qp);

/* The receives posted and not yet completed, one per call from *k = 0
 * on, NULL after the last: in posting order on a QP of one stream, in
 * slot order with streams (their slots are reused out of ring order). */
struct mre_rwqe *mre_resp_rq_next(mre_qp *qp, uint32_t *k);

/* Report receive r (finished, or failed) on the receive CQ and release its
 * regions; the caller retires it from its queue. */
void mre_resp_push_recv_wc(mre_qp *qp, struct mre_rwqe *r);

/* Release responder job j, if active: its region reference, and its place
 * in the waiting or unsent counts. */
void mre_resp_free_rjob(mre_qp *qp, struct mre_rjob *j);

/* Seam from the completer: a response packet of job slot was acknowledged;
 * once all of the job's packets are sent and acknowledged it is released
 * (the atomic result may be forgotten).  An unknown or inactive slot is
 * ignored. */
void mre_resp_on_acked(mre_qp *qp, uint32_t slot);

/* The coalesced-ACK timer: when ack_deadline has passed, an ACK is due if
 * data packets are unacknowledged. */
void mre_resp_ack_timer(mre_qp *qp, mroce_tstamp now);

/* The responder's part of a flush (mre_qp_flush()): unfinished receives
 * get WR_FLUSH_ERR, all receives complete in posting order, every job is
 * released. */
void mre_resp_reset(mre_qp *qp);

#endif /* MROCE_ENGINE_RESPONDER_H */
