/*
 * engine_int.h - the engine's shared internal structures: endpoint, queue
 * pair, work queue entries, responder jobs, transmit ring entries, memory
 * regions and completion queues.  Every engine source includes this file;
 * it holds no function of its own beyond the two allocation helpers, and
 * includes each module's private header, which documents that module's
 * internal functions.
 *
 * The engine is split by pipeline stage, as the Linux rxe driver splits a
 * software NIC, with the transmit ring and loss recovery below the stages
 * as ngtcp2 keeps its rtb under its recovery code:
 *
 *            ep.c (receive demux, transmit scheduling), timers.c
 *         data |             ACK/NAK |                 send |
 *              v                     v                      v
 *        responder.c <--(2)--- completer.c            requester.c
 *              |                  ^   |   \            /    |
 *              +--(1), via ep.c---+   |    v          v     |
 *                                     |      loss.c         |
 *                                     |         |           |
 *                                     v         v           v
 *                                     +-----> txring.c <----+
 *
 * qp.c owns the flush: mre_qp_flush() calls mre_comp_reset(),
 * mre_req_reset(), mre_resp_reset(), mre_txr_reset() and mre_loss_reset().
 *
 *   ep.c          endpoint: receive demux, transmit scheduling across QPs
 *   timers.c      the timer heap of QPs, and running the due timers
 *   qp.c          queue pair lifecycle: handshake, close, error; owns the
 *                 flush (mre_qp_flush() calls each stage's own reset)
 *   requester.c   work requests -> packets (new data, retransmissions,
 *                 probes, responses owed)
 *   completer.c   ACKs/NAKs -> acknowledged packets, RTT, congestion
 *                 feedback, send completions
 *   responder.c   data packets -> placement, receive completions, READ and
 *                 atomic execution, ACK/NAK generation
 *   loss.c        loss detection and the RTO/PTO/reorder/RNR timers
 *   txring.c      the transmit ring and in-flight accounting
 *   liveness.c    peer silence and the keepalive
 *   conntab.c     the handshake lookups
 *   mr.c, cq.c    memory regions (keys, rights, bounds, SGE copies) and
 *                 completion queues
 *   rxwin.c       the receive window of PSNs (duplicate detection, SACK)
 *   sack.c        the SACK span negotiated in the handshake
 *   path.c, cc.c  multipath spraying and congestion control
 *   stream.c      streams: per-stream numbering, receive lists and
 *                 completion order on QPs of more than one stream
 *   plane.c       planes: handshake extension, plane of each packet,
 *                 plane failure and return
 *   secure.c      secure mode: sealing, opening, keys, replay window
 *
 * Calls run one way: the requester and the completer call loss.c and
 * txring.c, loss.c calls txring.c, and neither calls up.  The stages call
 * each other only at two named seams:
 *   (1) the responder placed a READ or atomic response: mre_resp_on_data()
 *       returns 1 and ep.c hands over to mre_comp_complete_sends();
 *   (2) the completer saw a response packet acknowledged:
 *       mre_resp_on_acked().
 * tests/check_engine_seams.sh (ctest engine_seams) enforces both rules and
 * that every internal function carries its file's prefix.
 *
 * Nothing here calls the OS: memory comes from ep->mem, time from callers.
 */
#ifndef MROCE_ENGINE_INT_H
#define MROCE_ENGINE_INT_H

#include <mroce/engine.h>
#include <mroce/wire.h>
#include <stddef.h>
#include <string.h>

#include "cc.h"
#include "path.h"
#include "plane.h"
#include "ratehint.h"
#include "rxwin.h"
#include "sack.h"
#include "secure.h"

#define MROCE_NONE32 0xffffffffu
#define MROCE_ACK_FREQ 4 /* ACK at least every this many data packets */

/* --- allocation through the caller's allocator (mre_ep_config.mem) --- */
static inline void *mre_mem_calloc(const struct mre_mem *m, size_t n, size_t sz)
{
    return m->calloc(n, sz, m->user);
}
static inline void mre_mem_free(const struct mre_mem *m, void *p)
{
    if (p)
        m->free(p, m->user);
}

/* --- memory regions --- */
struct mre_mr {
    mre_ep *ep;    /* owner */
    uint8_t *addr; /* start of the registered range (caller's memory) */
    uint64_t len;
    unsigned access; /* enum mroce_access */
    uint32_t key;    /* lkey == rkey: slot index << 8 | generation */
    uint32_t refs;   /* outstanding work requests referencing it */
    uint32_t pd;     /* protection domain */
};

/* --- completion queues --- */
struct mre_cq {
    mre_ep *ep;
    struct mroce_wc *ring; /* grows (never drops a completion) */
    uint32_t cap, head, count;
    uint32_t users; /* QPs bound to it */
    uint32_t nsol;  /* solicited or failed completions pushed, ever */
    mre_cq *next;   /* ep's list of CQs */
};

/* --- send queue entry (one work request) --- */
enum { SWQE_POSTED = 1, SWQE_DONE = 2 };
struct mre_swqe {
    uint64_t wr_id;
    uint64_t remote_addr;
    uint64_t compare_add, swap;
    uint64_t atomic_result; /* native-order original value (atomics) */
    uint32_t rkey, imm;
    uint32_t length; /* total bytes of the message */
    uint32_t msn;
    uint32_t rsn;        /* SEND / WRITE_WITH_IMM */
    uint32_t npkts;      /* request packets */
    uint32_t sent_pkts;  /* request packets transmitted at least once */
    uint32_t acked_pkts; /* request packets acknowledged */
    uint32_t resp_bytes; /* READ / atomic response bytes placed */
    uint8_t opcode;      /* enum mroce_wr_opcode */
    uint8_t flags;       /* enum mroce_send_flags */
    uint8_t num_sge;
    uint8_t state;         /* SWQE_* */
    uint8_t status;        /* enum mroce_wc_status once known */
    uint8_t rnr_tries;     /* RNR NAK rounds received for this WR */
    uint8_t resp_done;     /* READ/atomic: whole response placed */
    uint32_t first_psn;    /* PSN of its first request packet */
    mroce_tstamp rnr_last; /* when the last RNR round was counted */
    uint32_t smsn;         /* MSN within its stream (stream.c); == msn on
                              a QP of one stream */
    uint16_t stream;       /* stream it was posted on */
    struct mroce_sge sge[MROCE_MAX_SGE];
    mre_mr *mrs[MROCE_MAX_SGE]; /* referenced regions (refcounted) */
};

/* --- receive queue entry --- */
struct mre_rwqe {
    uint64_t wr_id;
    uint32_t capacity; /* sum of sge lengths */
    uint32_t msg_len;  /* set by the first packet that arrives */
    uint32_t placed;   /* bytes placed so far */
    uint32_t imm;
    uint8_t num_sge;
    uint8_t has_imm;
    uint8_t is_write;  /* consumed by WRITE_WITH_IMM */
    uint8_t done;      /* message complete (or failed) */
    uint8_t status;    /* enum mroce_wc_status */
    uint8_t started;   /* a packet has been seen */
    uint8_t solicited; /* a packet of its message asked for an event */
    uint32_t last_psn; /* highest PSN of its packets seen so far */
    uint32_t msn;      /* MSN of the message bound to it (streams) */
    uint16_t stream;   /* stream it was posted on */
    uint16_t snext;    /* ring slot of the next receive of its stream */
    uint8_t posted;    /* holds a receive not yet completed */
    struct mroce_sge sge[MROCE_MAX_SGE];
    mre_mr *mrs[MROCE_MAX_SGE];
};

/* --- responder jobs: READ and atomic responses we owe the peer --- */
struct mre_rjob {
    uint8_t active;
    uint8_t is_atomic;
    uint8_t waiting;            /* accepted, not yet executed: earlier PSNs
                                are still missing (SEM ordering) */
    uint8_t op;                 /* atomics: MROCE_OP_FETCH_ADD / CMP_SWAP */
    uint32_t psn;               /* PSN of the request */
    uint8_t *target;            /* atomics: the checked 8-byte word */
    mre_mr *mr;                 /* region read or updated (referenced) */
    uint64_t swap_add, compare; /* atomics: operands */
    uint32_t req_msn;
    uint16_t stream;   /* stream of the request (RESP Stream field) */
    uint32_t len;      /* response bytes */
    uint32_t sent_off; /* bytes handed to the packetiser */
    uint32_t npkts, sent_pkts, acked_pkts;
    uint64_t seq;           /* arrival order, for FIFO transmission */
    const uint8_t *src;     /* READ: source in a registered region */
    uint64_t atomic_result; /* atomics: original value, kept until acked */
};

/* --- one transmitted packet awaiting acknowledgement (indexed by PSN) --- */
enum { TX_FREE = 0, TX_INFLIGHT, TX_LOST, TX_ACKED, TX_RNR };
enum { TXK_REQ = 0, TXK_RESP = 1 };
struct mre_txent {
    mroce_tstamp sent_time;
    uint32_t path_seq;
    uint32_t path_prev, path_next; /* in-flight list of its path (PSN idx) */
    uint32_t ref;                  /* REQ: msn of the WR; RESP: rjob slot */
    uint32_t offset;               /* payload offset in the message */
    uint16_t len;                  /* payload length */
    uint16_t path;                 /* path slot */
    uint8_t kind;                  /* TXK_* */
    uint8_t state;                 /* TX_* */
    uint8_t retx;                  /* times retransmitted */
    uint8_t probe;                 /* next transmission is a tail-loss probe */
    uint8_t cause;                 /* enum mre_loss_cause when state == LOST */
    uint16_t probe_from; /* latest transmission is a tail-loss probe that
                                replaced one on this slot (sent at least
                                min_rtt before it), else MROCE_PATH_NONE */
    uint16_t probe_from_entropy; /* that slot's entropy then (LOSS-20) */
};

/* Reasons a packet is declared lost (counters retx_*). */
enum mre_loss_cause { LOSS_PATH, LOSS_OOO, LOSS_RTO, LOSS_PROBE, LOSS_RNR };

/* Pending control packets (bit set in qp->ctrl). */
enum {
    CTRL_CONN_REQ = 1,
    CTRL_CONN_RESP = 2,
    CTRL_DISC = 4,
    CTRL_DISC_ACK = 8,
    CTRL_NAK = 16,
};

/* Keepalive flags for the next ACK (qp->ka). */
enum {
    KA_PROBE = 1,  /* it is a keepalive: ACK_REQ set (REL-34) */
    KA_ANSWER = 2, /* it answers one (REL-35) */
};

/* Fields are grouped by when they are touched, not by topic: first what
 * every packet reads (sent or received), then the sending side (data out,
 * ACKs in), then the receiving side (data in, ACKs out), then what only
 * the handshake, timeouts and setup use.  A simulator run with thousands
 * of QPs per core misses the cache on most QP lines it touches, so each
 * line fewer per packet is a miss fewer (sim/LOG.md, Performance). */
struct mre_qp {
    /* every packet */
    mre_ep *ep;
    uint32_t qpn;
    uint32_t slot;            /* index in ep->qps */
    uint8_t state;            /* enum mroce_qp_state */
    uint8_t ctrl;             /* CTRL_* packets to send */
    uint8_t on_ready;         /* in ep's ready list */
    uint8_t ack_now;          /* send an ACK as soon as possible */
    uint8_t cwnd_refused;     /* cwnd held back a packet (set by the
                                 requester, read by mre_ep_write_pkt) */
    uint8_t starved;          /* ... while the endpoint had nothing else
                                 to send, since the last ACK (CC-19) */
    uint8_t peer_credit_mode; /* peer asked for credits */
    uint8_t fatal_nak;        /* nak holds a fatal NAK for nak.nak_psn */
    uint32_t peer_qpn;
    uint8_t probes_sent;
    uint8_t backoff;
    uint8_t consec_timeouts;
    uint8_t rto_undo;                /* an RTO episode awaits its verdict */
    uint64_t local_token;            /* packets to us must carry this */
    uint64_t peer_token;             /* we put this in packets to the peer */
    mre_qp *ready_prev, *ready_next; /* ep ready list */
    /* timers (every deadline is read when the QP is re-keyed) */
    mroce_tstamp ack_deadline;
    mroce_tstamp loss_deadline; /* TLP / RTO */
    mroce_tstamp reo_deadline;  /* out-of-order threshold re-check */
    mroce_tstamp rnr_deadline;  /* retransmit RNR-NAKed packets */
    mroce_tstamp ctrl_deadline; /* CONNECT_REQ / DISCONNECT retransmit */
    mroce_tstamp live_deadline; /* keepalive / peer silence (liveness.c) */
    struct mre_addr peer;
    uint16_t mtu; /* negotiated payload MTU */
    uint16_t echo_entropy;
    uint32_t peer_window; /* PSNs the peer tracks */

    /* transmit side: PSN space of packets we send */
    struct mre_txent *tx;
    /* a bit per ring slot: its PSN was acknowledged by an ACK since it was
     * pushed (txring.c); lets a wide SACK skip what it already told */
    uint64_t *tx_sacked;
    uint32_t tx_mask;
    uint32_t snd_una, snd_nxt;
    uint32_t snd_high_acked; /* highest PSN acknowledged + 1 (serial) */
    uint32_t inflight_bytes;
    uint32_t inflight_pkts;
    uint32_t *retxq; /* FIFO of PSNs declared lost */
    uint32_t retxq_head, retxq_tail;

    /* send queue */
    struct mre_swqe *sq;
    uint32_t sq_mask;
    uint32_t sq_head;        /* oldest not completed */
    uint32_t sq_tx;          /* next WQE with packets never sent */
    uint32_t sq_tail;        /* next free (== next msn) */
    uint32_t tx_off;         /* offset of the next new packet in sq_tx */
    uint32_t rd_outstanding; /* READ/atomic WQEs sent, not completed */
    uint32_t peer_rd_atomic; /* READ/atomics the peer serves at once */
    uint32_t rjobs_unsent;   /* executed jobs with packets never sent */
    uint32_t peer_credit;    /* bytes the peer allows in flight */
    uint32_t ooo_cursor;     /* where the next ACK-driven loss scan starts */

    /* paths and congestion control */
    struct mre_path *path_slots;
    mroce_tstamp last_progress; /* last ACK that acknowledged something */
    struct mre_pathset paths;
    struct mre_cc cc;
    struct mre_planes *planes; /* NULL: one plane (plane.c) */
    struct mre_rh_qp rh;       /* rate hint, both roles (ratehint.c) */

    /* ACKs in */
    uint32_t ooo_edge;         /* highest acked - ooo_thresh at the last scan */
    uint32_t last_ce, last_rx; /* peer's cumulative ECN counters seen */
    uint32_t peer_ack_delay;   /* ns: the peer's advertised max_ack_delay
                               * (REL-19) bounded by max_rto, in the RTO,
                               * PTO and loss guards (LOSS-25) */
    mroce_tstamp rack_time;    /* latest send time of an unambiguously
                                 acknowledged packet (RACK) */
    mroce_tstamp srtt, rttvar, min_rtt;
    /* cold; here they put attr's RTO, ACK-delay and ooo_thresh fields
     * on one line where the simulator places a QP (16 B past a line) */
    mroce_tstamp conn_start; /* handshake start: the requester's connect
                                (CONN-6, LOSS-26), the listener's first
                                CONNECT_RESP (LOSS-29) */
    mroce_tstamp ctrl_rto;   /* current control retransmit interval */
    mroce_tstamp rto_time;   /* first RTO of an episode (LOSS-13) */
    mroce_tstamp ka_time;    /* last keepalive asked for (liveness.c) */
    struct mre_qp_attr attr;

    /* receive side: PSN space of packets the peer sends */
    struct mre_rxwin rxwin;
    uint32_t ack_pending; /* data packets not yet acknowledged */
    uint32_t echo_psn, echo_ts;
    uint32_t ce_count, rx_count; /* cumulative, echoed in ACKs */
    uint8_t echo_flags;
    uint8_t ka; /* KA_* for the next ACK (liveness.c) */
    /* listener: no packet from the peer since its CONNECT_RESP, and the
     * CONNECT_RESPs its loss timer resent meanwhile (LOSS-30, loss.c);
     * here, where the receive side's fields leave two bytes free */
    uint8_t hs_wait, hs_probes;
    mroce_tstamp echo_arrival;
    mroce_tstamp credit_seen; /* last F_CREDIT data packet */
    mroce_tstamp heard;       /* the peer last showed it is there and
                                    gets our packets (liveness.c) */

    /* receive queue */
    struct mre_rwqe *rq;
    uint32_t rq_mask;
    uint32_t rq_head; /* oldest not completed (== its rsn); with streams
                         the count of receives completed */
    uint32_t rq_tail; /* posted so far */
    /* streams: free ring slots (receives complete out of ring order) */
    uint16_t *rq_free;
    uint32_t rq_nfree;

    /* responder jobs */
    uint32_t rjobs_waiting; /* jobs accepted but not yet executed */
    struct mre_rjob *rjobs;

    struct mroce_qp_counters cnt;

    /* setup, handshake, RTO episodes and errors */
    uint32_t live_idx; /* index in ep->live */
    uint8_t in_conn;   /* in ep->conn_tab (see conntab.c) */
    uint8_t ctrl_tries;
    uint16_t nak_entropy;
    mre_qp *listen_prev, *listen_next; /* ep listen FIFO */
    mre_qp *conn_next;                 /* chain in ep->conn_tab */
    uint32_t local_start_psn, peer_start_psn;
    uint8_t *inline_buf; /* MROCE_MAX_INLINE bytes per SQ slot, from
                                 the first inline WR on (NULL before) */
    uint32_t nrjobs;
    uint64_t rjob_seq;
    /* ns from CONNECT_REQ to CONNECT_RESP on the active side (LOSS-26),
     * from the first CONNECT_RESP to the peer's first packet on the
     * listener (LOSS-29), 0 if none: bounds the RTO before the first RTT
     * sample (loss.c) */
    mroce_tstamp hs_rtt;
    struct mre_cc rto_cc; /* cc state just before rto_time's RTO */
    /* pending NAK (CTRL_NAK) and the sticky fatal NAK */
    struct mrw_nak_hdr nak;
    /* streams (stream.c): the table of attr.max_streams entries, the
     * placement records (NULL with one stream), the streams the
     * connection carries (the local maximum until the handshake), and
     * whether per-stream ordering is used (attr.max_streams > 1) */
    struct mre_stream *streams;
    struct mre_stream_msg *smsgs;
    uint16_t nstreams;
    uint8_t streams_on;
    struct mre_sec_qp sec; /* secure mode (secure.c) */
    uint8_t sec_on;        /* this connection is secure (SEC-34) */
    /* SACK span (sack.c, REL-42): words the ACKs this QP sends may carry,
     * and the PSNs after snd_una the peer's ACKs can report */
    uint8_t ack_sack_words;
    uint32_t sack_span;
};

/* A timer heap entry carries its QP's deadline and slot, so sifting
 * compares and moves entries of this array and writes positions by slot
 * without reading the QPs it moves (timers.c). */
struct mre_theap_ent {
    mroce_tstamp key;
    uint32_t slot; /* the QP: ep->qps[slot] */
    uint32_t pad_;
};

struct mre_ep {
    struct mre_ep_config cfg;
    struct mre_mem mem;
    mre_qp **qps; /* slot -> QP (NULL = free) */
    uint32_t nqps_slots;
    uint32_t nqps;
    mre_qp **live;               /* dense list of QPs */
    struct mre_theap_ent *theap; /* timer heap of QPs with a deadline */
    uint32_t *theap_pos;         /* slot -> index in theap, NONE32 absent */
    uint32_t theap_n;
    mre_mr **mrs; /* slot -> MR */
    uint32_t nmr_slots;
    mre_qp *ready_head, *ready_tail;   /* QPs that may have packets */
    mre_qp *listen_head, *listen_tail; /* LISTEN QPs, FIFO */
    mre_qp **conn_tab;       /* connected QPs by peer key (conntab.c) */
    uint32_t conn_mask;      /* buckets - 1 (a power of two) */
    uint64_t conn_seed;      /* keys the bucket hash */
    uint32_t free_hint;      /* every qps[] slot below it is in use */
    mre_cq *cqs;             /* every CQ, freed with the endpoint */
    struct mre_tx_zc *tx_zc; /* set during mre_ep_write_pkt_zc() */
    struct mroce_ep_counters cnt;
    struct mre_rh_ep rh;         /* rate hints given (ratehint.c) */
    struct mre_ep_planes planes; /* planes down, for every QP (plane.c) */
    uint8_t *sec_buf;            /* secure mode: a datagram opened (secure.c) */
    uint8_t sec_tx_gen;          /* master key generation to send under */
};

/* The modules' internal functions, one private header each. */
#include "completer.h"
#include "conntab.h"
#include "cq.h"
#include "ep.h"
#include "liveness.h"
#include "loss.h"
#include "mr.h"
#include "qp.h"
#include "requester.h"
#include "responder.h"
#include "stream.h"
#include "timers.h"
#include "txring.h"

#endif /* MROCE_ENGINE_INT_H */
