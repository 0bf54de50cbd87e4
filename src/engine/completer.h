/*
 * completer.h - ACKs and NAKs in, send completions out (completer.c).
 *
 * Called by ep.c (the receive demux) and qp.c (the flush).  It calls
 * txring.h and loss.h below it, and one seam into the responder,
 * mre_resp_on_acked().  Malformed or stale ACKs and NAKs are dropped and
 * counted (drop_invalid, drop_stale); none of these functions returns an
 * error.
 */
#ifndef MROCE_ENGINE_COMPLETER_H
#define MROCE_ENGINE_COMPLETER_H

/* Apply an ACK (REL-*): RTT and RACK time from its echo, path and ECN
 * feedback, each newly acknowledged PSN (cumulative and SACK), the loss
 * rules, the congestion controller, the spurious-RTO verdict, the peer's
 * credit; then complete what finished, re-arm the loss timer and let a
 * CLOSING QP send its DISCONNECT.  An ACK beyond snd_nxt is dropped
 * (drop_invalid). */
void mre_comp_on_ack(mre_qp *qp, const struct mrw_pkt *pkt, mroce_tstamp now);

/* Apply a NAK for a request packet in flight: its Cum PSN acknowledges
 * what lies before it first (REL-28); an RNR NAK holds the message's
 * packets for the peer's delay (or fails the QP with RNR_RETRY_EXC_ERR
 * after rnr_retry rounds, REL-37); any other code fails the WR with the
 * matching status and moves the QP to ERROR.  A NAK for a PSN outside the
 * window, for a response or for a finished WR is dropped (drop_stale). */
void mre_comp_on_nak(mre_qp *qp, const struct mrw_pkt *pkt, mroce_tstamp now);

/* Complete finished send work requests in posting order (signaled ones
 * push a success completion to the send CQ), retiring the request packet
 * of each finished READ or atomic, then release the acknowledged PSNs at
 * the cumulative point. */
void mre_comp_complete_sends(mre_qp *qp);

/* The completer's part of a flush (mre_qp_flush()): finished sends
 * complete with their real status, every other posted WR with its error
 * status or WR_FLUSH_ERR, in posting order. */
void mre_comp_reset(mre_qp *qp);

#endif /* MROCE_ENGINE_COMPLETER_H */
