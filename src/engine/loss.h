/*
 * loss.h - loss detection and the loss timers (loss.c).
 *
 * Called by the completer (each acknowledgement, each NAK) and the
 * requester (a transmission arms the timer); timers.c runs its timers.  It
 * declares losses through txring.h and calls no stage.  lost_bytes
 * arguments accumulate the payload bytes that count as a congestion signal
 * (CC-12); the caller hands their sum to the congestion controller.  None of
 * these functions can fail.
 */
#ifndef MROCE_ENGINE_LOSS_H
#define MROCE_ENGINE_LOSS_H

#include <stdint.h>

/* Arm the tail-loss probe or retransmission timer (loss_deadline) from the
 * last progress: a probe timeout (LOSS-9) until a probe has been sent,
 * then the backed-off RTO; INF when nothing is in flight. */
void mre_loss_arm_timer(mre_qp *qp, mroce_tstamp now);

/* LOSS-29: the listener's first packet from the peer since its
 * CONNECT_RESP (it carries the token that CONNECT_RESP gave): the handshake
 * time from the first CONNECT_RESP to now bounds the initial RTO (hs_rtt),
 * the loss timer runs as LOSS-8 says from here on (hs_wait = 0), re-armed.
 * Called before the packet is processed. */
void mre_loss_hs_confirmed(mre_qp *qp, mroce_tstamp now);

/* Path-order inference (LOSS-*, "path"): in-flight entry idx was just
 * acknowledged, so every packet sent before it on the same path and still
 * in flight was lost.  Skipped when idx was retransmitted, since which of
 * its transmissions arrived is unknown.  A loss that retires the path
 * loses its remaining packets too. */
void mre_loss_on_path_ack(mre_qp *qp, uint32_t idx, uint32_t *lost_bytes);

/* LOSS-20: the ACK a (newly acknowledging psn, whose entry e is in flight
 * and was last sent as a tail-loss probe replacing a transmission on slot
 * e->probe_from) echoes that very probe; then the replaced transmission
 * was lost and its slot is charged the loss (PATH-9).  Does nothing when
 * the echo names another transmission or the slot was retired since. */
void mre_loss_probe_proves(mre_qp *qp, struct mre_txent *e, uint32_t psn,
                           const struct mrw_ack_hdr *a, uint32_t *lost_bytes);

/* Out-of-order loss (LOSS-7): declare lost each in-flight packet below the
 * highest acknowledged PSN that has been out longer than its guard, and
 * set reo_deadline to when the next one's guard ends.  full = 0 (after an
 * ACK) starts where the previous scan left off; full = 1 (reo_deadline
 * fired) rescans from snd_una. */
void mre_loss_ooo_scan(mre_qp *qp, mroce_tstamp now, uint32_t *lost_bytes,
                       int full);

/* Spurious-RTO verdict (LOSS-19, CC-13), for the first ACK a that
 * acknowledges data after an RTO episode (raw: now minus the echoed
 * timestamp).  If the ACK echoes a transmission made before the episode's
 * first RTO, the congestion state and the path losses the RTOs charged
 * are restored and the packets they declared lost and not yet resent are
 * put back in flight.  Either way the episode ends (rto_undo = 0). */
void mre_loss_rto_verdict(mre_qp *qp, const struct mrw_ack_hdr *a,
                          uint32_t raw);

/* Run the QP's due loss timers, in this order: the RNR hold (rnr_deadline:
 * RNR-NAKed packets become lost, cause RNR), the out-of-order re-check
 * (reo_deadline: a full mre_loss_ooo_scan()) and loss_deadline (on a
 * listener whose CONNECT_RESP is not confirmed yet, that CONNECT_RESP
 * again, LOSS-30; else a tail-loss probe, or an RTO: losses, backoff, the
 * congestion controller's on_timeout; and, after retry_cnt timeouts or
 * resent CONNECT_RESPs with the peer silent for peer_timeout,
 * mre_live_fail()).  Only in RTS and CLOSING. */
void mre_loss_timers(mre_qp *qp, mroce_tstamp now);

/* Disarm the loss timers of a flushed QP (loss, reo and rnr deadlines). */
void mre_loss_reset(mre_qp *qp);

#endif /* MROCE_ENGINE_LOSS_H */
