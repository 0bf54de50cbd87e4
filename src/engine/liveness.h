/*
 * liveness.h - the peer-silence rule and the keepalive, REL-32..REL-36
 * (liveness.c).  None of these functions can fail.
 */
#ifndef MROCE_ENGINE_LIVENESS_H
#define MROCE_ENGINE_LIVENESS_H

/* The connection is up: the peer was heard now, and the first keepalive
 * is due after an idle quarter of peer_timeout (never without one). */
void mre_live_start(mre_qp *qp, mroce_tstamp now);

/* 1 once the peer has been silent for peer_timeout (REL-32), else 0. */
int mre_live_expired(const mre_qp *qp, mroce_tstamp now);

/* Fail the QP for a silent peer: the oldest incomplete send WR (or, with
 * none, the oldest unfinished receive) gets RETRY_EXC_ERR, the QP enters
 * ERROR and the rest is flushed (REL-33). */
void mre_live_fail(mre_qp *qp);

/* The keepalive timer (live_deadline): ask a silent peer with a keepalive
 * (an ACK with ACK_REQ), or fail the QP once the peer has been silent for
 * peer_timeout and a keepalive went unanswered. */
void mre_live_timer(mre_qp *qp, mroce_tstamp now);

/* A keepalive arrived (an ACK with ACK_REQ): answer it (REL-35). */
void mre_live_on_probe(mre_qp *qp);

#endif /* MROCE_ENGINE_LIVENESS_H */
