/*
 * txring.h - the transmit ring and in-flight accounting (txring.c).
 *
 * Called by the requester (new packets, transmissions), the completer
 * (acknowledgements) and the loss detector (losses); it calls no other
 * module.  Ring entries are addressed by PSN, or by index (psn & tx_mask)
 * where the caller already holds one.  None of these functions can fail:
 * the ring has a slot for every PSN the peer's window admits, and callers
 * pass entries of that window.
 */
#ifndef MROCE_ENGINE_TXRING_H
#define MROCE_ENGINE_TXRING_H

#include <stdint.h>

/* Take the next PSN (snd_nxt++) for a new packet of kind (TXK_REQ or
 * TXK_RESP), ref (REQ: the WR's msn; RESP: the responder job slot), payload
 * offset off and length len, and clear its entry (state TX_FREE, no path
 * list, no probe).  Returns the PSN. */
uint32_t mre_txr_push(mre_qp *qp, uint8_t kind, uint32_t ref, uint32_t off,
                      uint32_t len);

/* The tx_sacked bits of PSNs psn..psn+31 (bit i: psn + i), each set once
 * an ACK acknowledged that PSN since its push (completer.c sets them) and
 * meaningless for PSNs outside snd_una..snd_nxt. */
uint32_t mre_txr_sacked_word(const mre_qp *qp, uint32_t psn);

/* Undo the mre_txr_push() of psn, the newest PSN, when its packet could
 * not be built: snd_nxt steps back and the entry is TX_FREE again. */
void mre_txr_unpush(mre_qp *qp, uint32_t psn);

/* Count entry idx in flight: append it to its path's in-flight list (its
 * path field names the slot) and add it to inflight_bytes/inflight_pkts.
 * The caller sets its state. */
void mre_txr_enflight(mre_qp *qp, uint32_t idx);

/* Take in-flight entry idx out of flight (acknowledged, lost, NAKed or
 * replaced by a probe): off its path list, out of the counts.  The caller
 * sets its new state. */
void mre_txr_unflight(mre_qp *qp, uint32_t idx);

/* Put entry idx, declared lost, back in flight as sent originally (LOSS-19:
 * a spurious RTO's packets that were not resent yet): state TX_INFLIGHT,
 * counted, and placed in its path list by send order (path_seq), before
 * any later-sent packet of the path. */
void mre_txr_reflight(mre_qp *qp, uint32_t idx);

/* Declare the packet of psn lost with cause (enum mre_loss_cause): if it is
 * in flight or held by an RNR NAK it becomes TX_LOST (in flight: taken out
 * of flight first) and is queued for retransmission; any other state is
 * left alone. */
void mre_txr_mark_lost(mre_qp *qp, uint32_t psn, int cause);

/* Release the acknowledged entries at the cumulative point: snd_una moves
 * past every TX_ACKED entry, each becoming TX_FREE. */
void mre_txr_advance_una(mre_qp *qp);

/* Empty the ring for a flushed QP: every entry from snd_una to snd_nxt is
 * TX_FREE, every path list empty, nothing in flight (snd_una = snd_nxt),
 * the retransmission queue empty. */
void mre_txr_reset(mre_qp *qp);

#endif /* MROCE_ENGINE_TXRING_H */
