/*
 * case_helpers.h - helpers shared by the case files of several spec
 * chapters (case_helpers.c).  Their names start with ch_; each is
 * documented here once.
 */
#ifndef MROCE_CONFORM_CASE_HELPERS_H
#define MROCE_CONFORM_CASE_HELPERS_H

#include "conform.h"

/* Wait for what must come: longer than CT_WAIT, since the machine running
 * the suite may be shared and stall a process for a good part of a second;
 * a passing case never waits this long. */
#define RL_WAIT 2000
/* The QP must still be CONNECTING; if not, say whether it timed out
 * (counter timeouts) or failed otherwise. */
void ch_still_connecting(struct ct_conn *c);

/* p: a one-packet request of opcode op at c's next PSN (ct_pkt_req) to
 * raddr/rkey carrying len bytes of data (SEND: raddr and rkey 0). */
void ch_req_pkt(struct ct_conn *c, struct mrw_pkt *p, uint8_t op,
                uint64_t raddr, uint32_t rkey, const uint8_t *data,
                uint32_t len);

/* A retransmission r of the packet o must be its copy (LOSS-15): same
 * opcode, QPN, token, PSN, length, headers and payload; RETX set; FIRST,
 * LAST, IMM, SOLICITED unchanged. */
void ch_expect_copy(struct ct *t, const struct mrw_pkt *o,
                    const struct mrw_pkt *r);

/* Posts a READ of len bytes into mr at 0 from a remote address we serve,
 * and returns its READ_REQ (first transmission). */
void ch_post_read(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                  uint64_t wrid, uint32_t len, struct ct_rl_pkt *req);

/* Sends READ_RESP packet i (MTU 1024) of a response to req with data. */
void ch_send_read_resp(struct ct_conn *c, const struct ct_rl_pkt *req,
                       uint32_t psn0, const uint8_t *data, uint32_t len,
                       uint32_t i, uint16_t extra);

/* The ACK echoing the transmission of PSN psn with TSval ts (earlier ACKs
 * are skipped, anything else fails). */
const struct ct_rx *ch_ack_of(struct ct_conn *c, uint32_t psn, uint32_t ts);

/* READ_REQ of len bytes at off from a region holding a pattern, QP MTU
 * mtu, tester MTU tmtu: the READ_RESPs must be ceil(len/MTU) packets (1 for
 * 0) at consecutive PSNs from the IUT's Start PSN, each with Req MSN, Msg
 * Len, Offset i*MTU, min(MTU, rest) bytes from Remote Address + Offset,
 * FIRST on the first, LAST on the last. */
void ch_read_check(struct ct *t, uint32_t mtu, uint32_t tmtu, uint32_t off,
                   uint32_t len);

/* The target word (initially 0) must read as `want` in one byte order. */
void ch_expect_word(struct ct *t, const struct ct_mr *mr, uint32_t off,
                    uint64_t want);

/* First transmissions only: skips retransmissions of PSNs already seen
 * (an unacknowledged packet may be resent while a case thinks). */
const struct ct_rx *ch_next_new_data(struct ct_conn *c, uint32_t *seen_hi,
                                     int *any);

/* A READ_RESP or ATOMIC_RESP from the tester at its next PSN. */
void ch_send_resp(struct ct_conn *c, uint8_t op, uint32_t req_msn,
                  uint32_t msg_len, uint32_t off, const uint8_t *pay,
                  uint32_t n, uint32_t psn);

/* A one-packet WRITE of 64 bytes at PSN psn into mr at offset
 * 64 * (psn - base) % len, pattern seed psn; flags added to FIRST|LAST. */
void ch_wr64(struct ct_conn *c, const struct ct_mr *mr, uint32_t base,
             uint32_t psn, uint16_t flags, struct mrw_pkt *out);

/* Waits for the ACK that echoes psn (as a new packet unless dup), skipping
 * earlier ACKs (the delayed ACKs of other packets); anything but an ACK
 * fails. */
const struct ct_rx *ch_ack_echoing(struct ct_conn *c, uint32_t psn,
                                   int wait_ms);

/* The SACK words of ack must be exactly want[0..nwant). */
void ch_expect_sack(struct ct *t, const struct mrw_pkt *ack,
                    const uint32_t *want, unsigned nwant);

/* Posts a WRITE of len bytes from mr+off (to an address the tester never
 * checks). */
void ch_post_write(struct ct *t, struct ct_conn *c, const struct ct_mr *mr,
                   uint64_t wrid, uint32_t off, uint32_t len);

/* A connection with the IUT as sender (and as connecting side, so it has
 * no RTT sample and its first probe timeout is 5 x min_rto = 100 ms: no
 * probe disturbs the exchange), ACKs withheld, and k one-packet WRITE WRs
 * (wrid 1..k) received; pk[i] holds WR i+1's packet. */
struct ct_conn *ch_iut_sends(struct ct *t, const char *opts, int k,
                             struct ct_rl_pkt *pk, struct ct_mr *mr);

/* ACK of the IUT's data packet p, cumulative up to p only (so that the
 * echoes of later packets are still attributed to their paths, PATH-5),
 * echoing p with CE if ce (REL-17), with SACK of what else c received
 * when p is beyond the cumulative point.  Counts p in c's RX Count (and
 * CE Count if ce): for cases that acknowledge with auto_ack off. */
void ch_ack_upto(struct ct_conn *c, const struct mrw_pkt *p, int ce);

/* The next data packet of the IUT on c (any transmission), or NULL once
 * the WRITE wrid has completed successfully (polled every 64 packets and
 * whenever 20 ms pass without one; *n counts the packets); fails the case
 * on another completion or once `end` (ct_now_ns) passes. */
const struct ct_rx *ch_next_data_until_done(struct ct *t, struct ct_conn *c,
                                            uint64_t wrid, uint64_t end,
                                            unsigned *n);

#endif /* MROCE_CONFORM_CASE_HELPERS_H */
