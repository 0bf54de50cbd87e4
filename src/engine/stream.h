/*
 * stream.h - streams: many ordered streams over one queue pair (stream.c).
 *
 * A QP created with max_streams S > 1 keeps one small struct mre_stream
 * per stream, allocated with the QP, and a pool of MRE_STREAM_MSGS
 * placement records shared by all its streams.  Sequence numbers, paths,
 * windows and loss recovery stay per QP; a stream only has its own message
 * numbering (MSN), receive numbering (RSN), receive list and completion
 * order (SEM-30..41).  A QP with max_streams 1 uses none of this: its
 * stages keep today's PSN-ordered completion.
 */
#ifndef MROCE_ENGINE_STREAM_H
#define MROCE_ENGINE_STREAM_H

/* Placement records for messages that arrive ahead of their stream's
 * oldest incomplete message, shared by all streams of a QP. */
#define MRE_STREAM_MSGS 32
/* Of them, the most one stream holds, so one stream's messages never
 * take every record (SEM-41). */
#define MRE_STREAM_MSGS_PER_STREAM (MRE_STREAM_MSGS / 2)

struct mre_stream {
    /* requester */
    uint32_t next_msn; /* MSN of the next WR posted on the stream */
    uint32_t cmp_msn;  /* MSN of its oldest WR not completed */
    uint32_t next_rsn; /* RSN of its next receive-consuming WR */
    /* responder */
    uint32_t rx_msn;    /* every message of the stream below it is placed */
    uint32_t rx_placed; /* bytes placed of message rx_msn */
    uint32_t rq_posted; /* receives posted on the stream (RSN of the next) */
    uint32_t rq_done;   /* receives completed (RSN of the oldest left) */
    uint16_t rq_first;  /* ring slot of receive rq_done */
    uint16_t rq_last;   /* ring slot of the newest receive */
    uint16_t nmsgs;     /* placement records it holds */
};

/* A message of a stream placed (partly or wholly) ahead of rx_msn. */
struct mre_stream_msg {
    uint16_t stream;
    uint8_t used; /* record allocated */
    uint8_t seen; /* a packet of it has been placed: len is known */
    uint32_t msn;
    uint32_t placed; /* bytes placed */
    uint32_t len;    /* message length */
};

/* Allocates the stream table (and, for S > 1, the record pool) at QP
 * creation; MROCE_ENOMEM.  mre_stream_free() releases both. */
int mre_stream_alloc(mre_qp *qp);
void mre_stream_free(const struct mre_mem *m, mre_qp *qp);

/* Handshake hooks (qp.c): the STREAMS extension of our CONNECT_REQ or
 * CONNECT_RESP, and the negotiated count from the peer's (SEM-31). */
void mre_stream_conn_build(const mre_qp *qp, struct mrw_conn_hdr *c);
void mre_stream_conn_adopt(mre_qp *qp, const struct mrw_conn_hdr *c);

/* Post time: MROCE_EINVAL for a stream the QP cannot carry (SEM-30);
 * numbering of a send WR on its stream; a free receive slot (receives of
 * different streams complete out of ring order, so slots come from a
 * free list, SEM-40) and linking a receive into its stream's list. */
int mre_stream_check(const mre_qp *qp, uint16_t stream);
void mre_stream_number_send(mre_qp *qp, struct mre_swqe *w, int consumes_recv);
uint32_t mre_stream_rq_slot(mre_qp *qp);
void mre_stream_link_recv(mre_qp *qp, uint32_t slot);

/* Requester: the WR a READ or atomic response answers, by (stream, MSN)
 * (SEM-35).  Send completions in each stream's order are completer.c's. */
struct mre_swqe *mre_stream_find_swqe(mre_qp *qp, uint16_t stream,
                                      uint32_t msn);

/* Responder: admit a request packet of a stream QP (0, or -1: dropped,
 * counted), give back the record an admitted packet took when the packet
 * is then refused (RNR or any NAK or drop) before any of its message is
 * placed (SEM-41), find the receive a message consumes by its stream's RSN,
 * account placed bytes (advances the stream and completes its receives),
 * tell whether a READ or atomic job may execute, and complete receives of
 * every stream (flush paths). */
int mre_stream_rx_admit(mre_qp *qp, const struct mrw_pkt *pkt);
void mre_stream_rx_refused(mre_qp *qp, const struct mrw_pkt *pkt);
struct mre_rwqe *mre_stream_recv_for(mre_qp *qp, uint16_t stream, uint32_t rsn,
                                     int *stale);
void mre_stream_rx_placed(mre_qp *qp, const struct mrw_pkt *pkt);
int mre_stream_rjob_ready(const mre_qp *qp, const struct mre_rjob *j);
void mre_stream_complete_recvs(mre_qp *qp, uint16_t stream);
void mre_stream_complete_all_recvs(mre_qp *qp);

#endif /* MROCE_ENGINE_STREAM_H */
