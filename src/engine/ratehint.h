/*
 * ratehint.h - the receiver's rate hint (CC-24..29): the share of its
 * receive rate that a receiving endpoint grants each sender in every ACK,
 * and the sender's side, which caps its window and paces at that share.
 *
 * Negotiated per connection with the CONN flag MROCE_CONN_RATE (both sides
 * set it unless the QP attribute rate_hint is 0); then the ACK's Credit
 * field carries the hint in Mbit/s instead of bytes.  The receiver's state
 * is per QP (bytes received, last arrival, share) and per endpoint (the
 * next recomputation); the sender's is the latest hint and its pacing
 * clock.  Before data after an idle spell the sender asks for its share
 * (CC-30..35): a share request (an ACK with ACK_REQ) that the receiver
 * counts as a new active sender and answers, held for a short gather so
 * that senders that start together hear the same share.  Hooks: ep.c
 * (data and requests in, the ACK's Credit), completer.c (the hint in),
 * requester.c (pacing, the request), responder.c (the request's flags),
 * qp.c (negotiation, the deadlines), timers.c (the timers).  No OS calls.
 */
#ifndef MROCE_RATEHINT_H
#define MROCE_RATEHINT_H

#include <mroce/engine.h>

/* Per QP. */
struct mre_rh_qp {
    uint8_t on;        /* both sides set RATE: ACK Credit is a rate hint */
    uint8_t ask;       /* sender: asks for a share before data (rate_hint
                          2, CC-30) */
    uint8_t active;    /* receiver: counted among the active senders */
    uint8_t frozen;    /* receiver: scratch of the water-filling pass */
    uint8_t intervals; /* receiver: measured intervals since it became
                          active (its rate is a demand from the second) */
    uint8_t pace_wait; /* sender: pacing held a packet back */
    uint8_t grant;     /* sender: RH_G_* (CC-30) */
    uint8_t ask_now;   /* sender: the ACK being written is its share
                          request (ACK_REQ, CC-30) */
    uint8_t answer;    /* receiver: a share request's answer is held for
                          the gather (CC-33) */
    uint8_t first;     /* sender: data packets it may still send while
                          its share request waits (CC-36) */
    uint8_t fwait;     /* sender: the first packet waits for first_at
                          (CC-43) */
    uint32_t share;    /* receiver: this sender's share, Mbit/s */
    uint32_t rate;     /* receiver: its arrival rate over the last
                          interval, Mbit/s */
    uint32_t hint;     /* sender: latest hint, Mbit/s; UNLIMITED = none */
    uint32_t pace;     /* sender: pacing rate from the hint, Mbit/s (CC-28) */
    uint64_t bytes;    /* receiver: bytes received this interval */
    mroce_tstamp last; /* receiver: last data packet */
    mroce_tstamp pace_next; /* sender: earliest time of the next packet */
    mroce_tstamp last_send; /* sender: last paced packet */
    mroce_tstamp tx_last;   /* sender: last data packet (CC-35) */
    mroce_tstamp ask_until; /* sender: end of the wait for the grant
                               (CC-31) */
    mroce_tstamp mstart;    /* receiver, long-haul sender (CC-52): start
                               of its rate measurement */
    mroce_tstamp ask_at;    /* sender: when its share request left
                               (CC-38) */
    mroce_tstamp first_at;  /* sender: earliest time of the first packet
                               behind the request (CC-43) */
};

/* The sender's grant (CC-30, CC-31, CC-35). */
enum mre_rh_grant {
    RH_G_NONE = 0,  /* no fresh share: ask before data */
    RH_G_ASKED = 1, /* share request sent: hold data until its answer */
    RH_G_OPEN = 2,  /* answered (or given up waiting): send */
};

/* Per endpoint. */
struct mre_rh_ep {
    /* The QPs whose rh.active is set, in no order (the water-filling
     * does not depend on it), so a recomputation reads the active
     * senders only, not every QP of the endpoint; act_pos: slot -> index
     * in act.  Both max_qps long (ep.c). */
    mre_qp **act;
    uint32_t *act_pos;
    uint32_t nact;
    uint32_t nactive;        /* senders counted active */
    uint8_t dirty;           /* a sender became active: recompute now */
    mroce_tstamp start;      /* start of the measurement interval */
    mroce_tstamp next;       /* next periodic recomputation */
    mroce_tstamp gather_end; /* held share answers go out then (CC-33) */
};

#define MROCE_RH_RATE_DEFAULT 100000u  /* Mbit/s: 100 Gbit/s */
#define MROCE_RH_ACTIVE_DEFAULT 50000u /* ns a sender stays active */

struct mrw_conn_hdr;
/* Negotiation (CC-24): the CONN flags to add, and the peer's CONNECT. */
uint32_t mre_rh_conn_flags(const mre_qp *qp);
void mre_rh_on_conn(mre_qp *qp, uint32_t peer_flags);
/* A QP being deleted leaves the active senders' list. */
void mre_rh_forget(mre_ep *ep, mre_qp *qp);
/* Receiver: a data packet of len bytes from qp's peer (CC-25). */
void mre_rh_on_data(mre_ep *ep, mre_qp *qp, size_t len, mroce_tstamp now);
/* Receiver: the Credit for qp's next ACK, Mbit/s (CC-26). */
uint32_t mre_rh_share(mre_ep *ep, mre_qp *qp, mroce_tstamp now);
/* Receiver: an ACK with ACK_REQ and CREDIT from qp's peer, a share request when the
 * connection uses hints (CC-32); returns 1 if this holds its answer for
 * the gather (CC-33), 0 if the caller answers at once (REL-35). */
int mre_rh_on_request(mre_ep *ep, mre_qp *qp, mroce_tstamp now);
/* Sender: an ACK's Credit (CC-27), the answer to a share request (CC-30,
 * CC-34); returns the byte cap for peer_credit. */
uint32_t mre_rh_on_hint(mre_qp *qp, uint32_t credit, mroce_tstamp now);
/* Sender: 1 if the ACK being written is its share request (ACK_REQ);
 * on_ack_sent: that ACK is written. */
int mre_rh_asking(const mre_qp *qp);
void mre_rh_on_ack_sent(mre_qp *qp);
/* Sender: 1 if the packet to write now is its share request (CC-30), an
 * ACK with ACK_REQ and CREDIT that the caller writes; sets the wait for
 * the answer (CC-31).  Also retires a share no longer fresh (CC-35). */
int mre_rh_ask(mre_qp *qp, mroce_tstamp now);
/* Sender: pacing (CC-28) and the wait for the share (CC-30).  may_send 0
 * holds the packet back and arms the deadline; on_sent moves the clock by
 * a packet of len bytes. */
int mre_rh_may_send(mre_qp *qp, mroce_tstamp now);
void mre_rh_on_sent(mre_qp *qp, size_t len, mroce_tstamp now);
mroce_tstamp mre_rh_deadline(const mre_qp *qp);
void mre_rh_timer(mre_qp *qp, mroce_tstamp now);

#endif /* MROCE_RATEHINT_H */
