/*
 * conform.h - what a conformance case sees: the case registry, results, the
 * agent's control commands, the tester's side of a connection and the
 * expectations that judge what the implementation under test (IUT) sends.
 *
 * mroce-conform speaks MetaRoCE itself.  It crafts every packet with the
 * wire codec (include/mroce/wire.h), or as raw bytes for malformed input,
 * and never uses the engine to produce or to judge a packet.  A case:
 *
 *     CT_CASE(sem_write_placed, "SEM-6 REL-10",
 *             "WRITE of 100 bytes with ACK_REQ: ACK cum=PSN+1, bytes placed")
 *     {
 *         struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rw", 0);
 *         struct ct_conn *c = ct_connect(t, "");
 *         uint8_t d[100];
 *         ct_pattern(d, sizeof(d), 1);
 *         uint32_t psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
 *         ct_expect_ack(c, psn + 1, CT_WAIT);
 *         ct_expect_mem(t, &mr, 0, d, sizeof(d));
 *     }
 *
 * Every helper that can go wrong fails (or skips) the case itself, with the
 * observed difference, and does not return: the runner (runner.c) catches it
 * with longjmp, resets the agent and goes on with the next case.  So a case
 * reads as the sequence of packets and checks it describes.
 *
 * Pieces: ctl.c (agent control channel), net.c (UDP sockets, ECN),
 * peer.c (handshakes, the tester's connection state, building packets),
 * expect.c (receiving and judging), agent.c (typed agent commands),
 * runner.c (registry, runner, TAP/JUnit/summary), main.c (CLI).
 */
#ifndef MROCE_CONFORM_H
#define MROCE_CONFORM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <mroce/wire.h>

/* Default waits, in milliseconds: for a packet or completion that must
 * come, and for silence that must hold.  Scaled by --slow. */
#define CT_WAIT 500
#define CT_QUIET 100

/* IP ECN code points (WIRE-11). */
#define CT_ECN_NOT 0x0
#define CT_ECN_ECT1 0x1
#define CT_ECN_ECT0 0x2
#define CT_ECN_CE 0x3

struct ct; /* one case's context (runner.c) */

/* ---- registry ---- */

typedef void (*ct_case_fn)(struct ct *t);

struct ct_case {
    const char *id;   /* unique name, [a-z0-9_] */
    const char *reqs; /* cited requirement IDs, space separated */
    const char *desc; /* what it sends, what must (not) come back */
    ct_case_fn fn;
    const char *file; /* where it is defined */
    int line;
};

void ct_register(const struct ct_case *c);

/* Defines and registers a case; the body follows as a function body with
 * `struct ct *t` in scope. */
#define CT_CASE(name, reqs_, desc_)                                        \
    static void ct_case_##name(struct ct *t);                              \
    static const struct ct_case ct_def_##name = {#name,    reqs_,          \
                                                 desc_,    ct_case_##name, \
                                                 __FILE__, __LINE__};      \
    __attribute__((constructor)) static void ct_reg_##name(void)           \
    {                                                                      \
        ct_register(&ct_def_##name);                                       \
    }                                                                      \
    static void ct_case_##name(struct ct *t)

/* ---- results: these do not return ---- */

__attribute__((noreturn, format(printf, 2, 3))) void
ct_fail(struct ct *t, const char *fmt, ...);
__attribute__((noreturn, format(printf, 2, 3))) void
ct_skip(struct ct *t, const char *fmt, ...);
/* Diagnostic line, printed with -v and kept with a failure. */
__attribute__((format(printf, 2, 3))) void ct_log(struct ct *t, const char *fmt,
                                                  ...);

#define CT_REQUIRE(t, cond, ...)       \
    do {                               \
        if (!(cond))                   \
            ct_fail((t), __VA_ARGS__); \
    } while (0)
/* "what: expected E, got G" (values printed in decimal and hex). */
#define CT_EQ(t, what, expected, got) \
    ct_check_eq((t), (what), (uint64_t)(expected), (uint64_t)(got))
void ct_check_eq(struct ct *t, const char *what, uint64_t expected,
                 uint64_t got);

/* Waits scaled by --slow. */
int ct_ms(const struct ct *t, int ms);
/* The IUT's byte order for atomic targets as HELLO reported it
 * (atomic_order, AGENT-18): 1 big-endian, 0 little-endian, -1 the agent
 * did not say. */
int ct_atomic_be(const struct ct *t);
/* Monotonic nanoseconds. */
uint64_t ct_now_ns(void);
/* Case-local random numbers (--seed). */
uint64_t ct_rand(struct ct *t);
/* Fills buf with a recognisable pattern derived from seed. */
void ct_pattern(uint8_t *buf, size_t len, unsigned seed);

/* ---- the agent (docs/spec/conformance-agent.md) ---- */

/* Sends one command; an ERR reply fails the case (ERR ENOTSUP skips it).
 * Returns the reply line ("OK ..."), valid until the next command. */
__attribute__((format(printf, 2, 3))) const char *
ct_agent(struct ct *t, const char *fmt, ...);
/* As ct_agent, but returns the reply whatever it is ("OK ..."/"ERR ..."). */
__attribute__((format(printf, 2, 3))) const char *
ct_agent_try(struct ct *t, const char *fmt, ...);
/* Value of key in a reply; fails the case if absent. */
uint64_t ct_kv_u64(struct ct *t, const char *reply, const char *key);
/* Copies the value of key into buf (cap bytes); 0 if found, -1 if not. */
int ct_kv_str(const char *reply, const char *key, char *buf, size_t cap);

struct ct_mr {
    int id;        /* agent's name for it */
    uint64_t addr; /* Remote Address of byte 0 */
    uint32_t rkey;
    uint32_t lkey;
    uint32_t len;
};

/* access: "lw,rw,rr,ra" subset or "none"; fill: initial byte value. */
struct ct_mr ct_mr_reg(struct ct *t, uint32_t len, const char *access,
                       int fill);
void ct_mr_write(struct ct *t, const struct ct_mr *mr, uint32_t off,
                 const void *data, uint32_t len);
void ct_mr_read(struct ct *t, const struct ct_mr *mr, uint32_t off, void *buf,
                uint32_t len);
/* Region bytes [off, off+len) must equal data / be all `byte`; fails with
 * the first differing offset. */
void ct_expect_mem(struct ct *t, const struct ct_mr *mr, uint32_t off,
                   const void *data, uint32_t len);
void ct_expect_mem_fill(struct ct *t, const struct ct_mr *mr, uint32_t off,
                        uint32_t len, uint8_t byte);

/* One completion as POLL reports it. */
struct ct_wc {
    int n; /* 0: none */
    uint64_t wrid;
    char status[24];
    char op[16];
    uint32_t len;
    int has_imm;
    uint32_t imm;
    uint32_t stream; /* stream=, 0 when absent (AGENT-22) */
};
/* cq: "send" or "recv". */
struct ct_wc ct_poll(struct ct *t, int qp, const char *cq, int wait_ms);
/* Next completion must come within wait_ms with this wrid and status. */
struct ct_wc ct_expect_wc(struct ct *t, int qp, const char *cq, uint64_t wrid,
                          const char *status, int wait_ms);
/* No completion within wait_ms. */
void ct_expect_no_wc(struct ct *t, int qp, const char *cq, int wait_ms);
/* QP_STATE of an agent QP, e.g. "RTS". */
const char *ct_qp_state(struct ct *t, int qp);
/* Waits up to wait_ms for the QP to reach state. */
void ct_expect_qp_state(struct ct *t, int qp, const char *state, int wait_ms);
void ct_post_recv(struct ct *t, int qp, uint64_t wrid, const struct ct_mr *mr,
                  uint32_t off, uint32_t len);

/* ---- the tester's side of a connection (peer.c) ---- */

/* Receive state for the IUT's PSN space (the tester is its receiver). */
#define CT_RCV_BITS 256

struct ct_conn {
    struct ct *t;
    /* The IUT's QP, as the agent and the handshake name it. */
    int aqp;                  /* agent QP id */
    uint32_t aqpn;            /* its QPN */
    uint64_t atoken;          /* token the IUT chose: in every packet we send */
    uint32_t astart;          /* IUT's Start PSN */
    struct mrw_conn_hdr apar; /* IUT's CONN header as received */
    /* The tester's QP. */
    uint32_t qpn;
    uint64_t token;          /* our token: the IUT must send it */
    uint32_t start_psn;      /* our Start PSN */
    struct mrw_conn_hdr par; /* what we advertise (set before connecting) */
    uint16_t mtu;            /* negotiated: min of both */
    /* Our sending state (our PSN space). */
    uint32_t snd_nxt; /* next PSN to assign */
    uint32_t msn;     /* next MSN */
    uint32_t rsn;     /* next RSN */
    int entropy;      /* index of the entropy socket used by default */
    /* Our receiving state (the IUT's PSN space). */
    uint32_t rcv_cum;                  /* cumulative PSN */
    uint8_t rcv_bits[CT_RCV_BITS / 8]; /* PSNs rcv_cum + i received */
    uint32_t rx_count;
    uint32_t ce_count;
    int auto_ack; /* ACK every IUT data packet at once (default 1) */
    int connected;
    int listening;     /* QP_LISTEN done */
    uint32_t imm;      /* Immediate used by ct_send_* with MROCE_F_IMM */
    struct mrw_pkt hs; /* the IUT's CONNECT_REQ or CONNECT_RESP */
    uint16_t hs_sport; /* its UDP source port */
    int hs_sock;       /* the socket it reached (-1: our MetaRoCE port) */
    struct sockaddr_storage peer; /* where we send: the IUT's address, or
                                     the CONNECT_REQ's source (accept) */
    unsigned peer_len;
};

/* Creates an IUT QP (QP_CREATE with qp_opts, e.g. "mtu=1024") and the
 * tester's state, not yet connected; adjust c->par before connecting. */
struct ct_conn *ct_conn_new(struct ct *t, const char *qp_opts);
/* QP_LISTEN on c's QP (ct_conn_connect does it unless done already). */
void ct_conn_listen(struct ct_conn *c);
/* Tester as requester: QP_LISTEN, CONNECT_REQ, CONNECT_RESP checked,
 * confirming ACK, QP must be in RTS. */
void ct_conn_connect(struct ct_conn *c);
/* ct_conn_connect without the confirming ACK (the IUT listener waits for
 * one, LOSS-30); returns the CONNECT_RESP (buffer reused by the next
 * receive). */
const struct ct_rx *ct_conn_connect_unconfirmed(struct ct_conn *c);
/* Records the IUT's CONN header from its CONNECT_REQ or CONNECT_RESP p
 * (fails the case on a zero Token or Src QPN): the peer's parameters,
 * the MTU, a fresh receive state and p as the handshake packet.  For
 * cases that run a handshake of their own. */
void ct_conn_take_params(struct ct_conn *c, const struct mrw_pkt *p);
/* Tester as listener: QP_CONNECT to the tester, CONNECT_REQ checked,
 * CONNECT_RESP, confirming ACK checked, QP must be in RTS. */
void ct_conn_accept(struct ct_conn *c);
/* ct_conn_new + ct_conn_connect / ct_conn_accept. */
struct ct_conn *ct_connect(struct ct *t, const char *qp_opts);
struct ct_conn *ct_accept(struct ct *t, const char *qp_opts);

/* Builds our CONNECT_REQ for c (Dst QPN = c->aqpn). */
void ct_pkt_connect_req(struct ct_conn *c, struct mrw_pkt *p);
/* Fills p as a single-packet request of opcode op at PSN c->snd_nxt:
 * FIRST|LAST|ACK_REQ, MSN c->msn, RSN c->rsn, TSval now, Entropy of
 * socket c->entropy.  Consumes nothing: the case advances c->snd_nxt etc. */
void ct_pkt_req(struct ct_conn *c, struct mrw_pkt *p, uint8_t op);
/* Fills p as a control packet (ACK, NAK, DISCONNECT...) of c, PSN snd_nxt. */
void ct_pkt_ctl(struct ct_conn *c, struct mrw_pkt *p, uint8_t op);
/* Encodes p into buf (payload from p->payload); returns the length, fails
 * the case if it does not fit. */
size_t ct_encode(struct ct *t, const struct mrw_pkt *p, uint8_t *buf,
                 size_t cap);
/* Recomputes the CRC trailer of an encoded packet of len bytes. */
void ct_reseal(uint8_t *buf, size_t len);
/* Sends p from the entropy socket whose port is p->base.entropy (else
 * socket 0) with ECN ECT(0) / with the given ECN code point. */
void ct_send(struct ct_conn *c, const struct mrw_pkt *p);
void ct_send_ecn(struct ct_conn *c, const struct mrw_pkt *p, int ecn);
/* Sends raw bytes to the IUT from entropy socket e (index) with ecn. */
void ct_send_raw(struct ct *t, int e, const uint8_t *buf, size_t len, int ecn);
/* UDP port of the IUT's MetaRoCE address (--udp). */
uint16_t ct_iut_port(const struct ct *t);
/* UDP port (= Entropy) of the tester's entropy socket e. */
uint16_t ct_entropy(const struct ct *t, int e);
int ct_num_entropies(const struct ct *t);
/* The PLANES entry (CONN-28) naming where the tester receives on its
 * MetaRoCE port (e = -1) or on entropy socket e: its local address
 * (IPv4-mapped for IPv4) and that socket's port (planes.c). */
void ct_plane_entry(const struct ct *t, int e, struct mrw_plane_addr *out);

/* A WRITE / SEND of len bytes as one message, split at c->mtu, sent in
 * order; flags are added to each packet (e.g. MROCE_F_IMM with imm).
 * ACK_REQ goes on the last packet.  Consumes PSNs, an MSN (and RSN for
 * SEND); returns the first PSN. */
uint32_t ct_send_write(struct ct_conn *c, const struct ct_mr *mr, uint64_t off,
                       const void *data, uint32_t len, uint16_t flags);
uint32_t ct_send_send(struct ct_conn *c, const void *data, uint32_t len,
                      uint16_t flags);
/* Sends an ACK for our receive state echoing `echo` (NULL: cum PSN). */
void ct_send_ack(struct ct_conn *c, const struct mrw_pkt *echo);

/* ---- receiving and judging (expect.c) ---- */

/* A received datagram. */
struct ct_rx {
    uint8_t buf[65536];
    size_t len;
    int rc;           /* mrw_pkt_decode() result */
    struct mrw_pkt p; /* valid when rc == 0 */
    int ecn;          /* IP ECN bits, -1 if unknown */
    uint16_t sport;   /* UDP source port */
    char from[64];    /* source "ip:port" */
    struct sockaddr_storage from_sa;
    unsigned from_len;
    int sock; /* -1: arrived on our MetaRoCE port, else on
                 entropy socket `sock` */
};

/* Next datagram within wait_ms (NULL on timeout).  Data packets addressed to
 * one of the case's connections update its receive state and, with
 * auto_ack, are ACKed at once.  The buffer is reused by the next call. */
const struct ct_rx *ct_recv(struct ct *t, int wait_ms);
/* One-line description of a received packet, for messages. */
const char *ct_describe(struct ct *t, const struct ct_rx *rx);
/* Nothing at all may arrive for wait_ms. */
void ct_expect_silence(struct ct *t, int wait_ms);
/* The next packet for c must be opcode op within wait_ms; ACKs are skipped
 * when op is not ACK and skip_acks is set. */
const struct ct_rx *ct_expect_op(struct ct_conn *c, uint8_t op, int skip_acks,
                                 int wait_ms);
/* An ACK with Cum PSN at or after cum must come within wait_ms; earlier
 * ACKs are skipped, anything else fails.  Returns it. */
const struct ct_rx *ct_expect_ack(struct ct_conn *c, uint32_t cum, int wait_ms);
/* A NAK for psn with code must come within wait_ms; ACKs that do not
 * acknowledge psn are skipped.  Returns it. */
const struct ct_rx *ct_expect_nak(struct ct_conn *c, uint32_t psn, uint8_t code,
                                  int wait_ms);
/* 1 if the ACK in rx reports psn as received (Cum PSN after it, or its SACK
 * bit). */
int ct_ack_covers(const struct mrw_pkt *ack, uint32_t psn);

/* --- helpers for SEM/CONN/SEC/CC cases --- */
/* (helpers_sem.c) */

/* Next packet addressed to c (Dst QPN = c->qpn) within wait_ms (not
 * scaled by --slow: callers scale with ct_ms where it matters), or NULL.
 * Malformed datagrams and wrong tokens fail the case as in expect.c;
 * packets for other QPNs are skipped.  Data packets update c's receive
 * state (and are ACKed if c->auto_ack) as ct_recv does. */
const struct ct_rx *ct_next(struct ct_conn *c, int wait_ms);
/* Next data packet (an opcode with a PSN) for c within wait_ms; ACKs and
 * NAKs are skipped, anything else fails.  Fails on timeout. */
const struct ct_rx *ct_expect_data(struct ct_conn *c, int wait_ms);
/* The next packet of opcode op for c within wait_ms (scaled); ACKs and
 * data packets (e.g. retransmissions of unacknowledged work) are skipped,
 * anything else fails. */
const struct ct_rx *ct_expect_ctl(struct ct_conn *c, uint8_t op, int wait_ms);
/* For wait_ms (scaled), receives c's packets; fails if one of opcode op
 * arrives.  Everything else is accepted (and handled as ct_recv does). */
void ct_expect_no_op(struct ct_conn *c, uint8_t op, int wait_ms);
/* Sends a NAK for psn with code; Cum PSN = cum. */
void ct_send_nak(struct ct_conn *c, uint32_t psn, uint32_t msn, uint8_t code,
                 uint8_t rnr_delay, uint32_t cum);
/* Sends an ACK as ct_send_ack does but with the given Credit field. */
void ct_send_ack_credit(struct ct_conn *c, const struct mrw_pkt *echo,
                        uint32_t credit);
/* Tester as listener, first half: QP_CONNECT to the tester, the IUT's
 * CONNECT_REQ checked and recorded (its CONN header in c->hs), nothing
 * answered yet.  rqpn: the QPN given to QP_CONNECT (0: any listener). */
void ct_accept_begin(struct ct_conn *c, uint32_t rqpn);
/* Builds our CONNECT_RESP to the CONNECT_REQ ct_accept_begin recorded. */
void ct_pkt_connect_resp(struct ct_conn *c, struct mrw_pkt *p);
/* Single-packet atomic request at c->snd_nxt (FIRST|LAST|ACK_REQ) on
 * mr at off; consumes nothing. */
void ct_pkt_atomic(struct ct_conn *c, struct mrw_pkt *p, uint8_t op,
                   const struct ct_mr *mr, uint32_t off, uint64_t swap_add,
                   uint64_t compare);
/* Single-packet READ_REQ of len bytes from mr at off; consumes nothing. */
void ct_pkt_read(struct ct_conn *c, struct mrw_pkt *p, const struct ct_mr *mr,
                 uint32_t off, uint32_t len);
/* Advances c's sending state past a request p built by ct_pkt_*: PSN and
 * MSN (and RSN for SEND / IMM). */
void ct_consume(struct ct_conn *c, const struct mrw_pkt *p);
/* 8 bytes as a 64-bit integer, big-endian (be=1) or little-endian. */
uint64_t ct_get64(const uint8_t *b, int be);
void ct_put64(uint8_t *b, uint64_t v, int be);
/* Value of counter name in the agent's COUNTERS of qp; -1 if the IUT does
 * not report it (AGENT-10). */
int64_t ct_counter(struct ct *t, int qp, const char *name);
/* Sends a packet from a fresh UDP socket (not one of the tester's) and
 * returns that socket, which the case then reads with ct_sock_recv and
 * closes with ct_sock_close.  -1 fails the case. */
int ct_send_from_new_socket(struct ct_conn *c, const struct mrw_pkt *p);
/* Length of the datagram that arrived on fd within wait_ms, else 0. */
int ct_sock_recv(struct ct *t, int fd, int wait_ms);
void ct_sock_close(int fd);

/* --- helpers for REL/LOSS/PATH cases --- */
/* (helpers_rel.c) */

/* Value of counter `name` in the agent's COUNTERS reply for agent QP qp;
 * -1 if the IUT does not keep it (AGENT-10). */
int64_t ct_rl_counter(struct ct *t, int qp, const char *name);
/* Counter `name` must have grown by exactly delta since `before` (a value
 * of ct_rl_counter); nothing is checked if the IUT does not keep it. */
void ct_rl_expect_counter(struct ct *t, int qp, const char *name,
                          int64_t before, int64_t delta);

/* Fills p as a one-packet WRITE (FIRST|LAST plus flags) of len bytes to
 * mr+off at PSN psn with MSN c->msn.  Advances nothing. */
void ct_rl_write_pkt(struct ct_conn *c, struct mrw_pkt *p,
                     const struct ct_mr *mr, uint32_t off, const uint8_t *data,
                     uint32_t len, uint32_t psn, uint16_t flags);

/* A packet of the IUT, kept beyond the next ct_recv. */
struct ct_rl_pkt {
    struct mrw_pkt p; /* p.payload points into pay */
    uint8_t pay[9216];
    uint16_t sport; /* UDP source port */
    int ecn;        /* IP ECN bits, -1 unknown */
    uint64_t at_ns; /* when the tester read it (ct_now_ns) */
};
/* Next packet addressed to c within wait_ms (scaled by --slow), or NULL.
 * Packets for other QPNs are skipped; malformed ones and wrong tokens
 * fail the case. */
const struct ct_rx *ct_rl_next(struct ct_conn *c, int wait_ms);
/* The next packet for c must be a data packet (a PSN-consuming opcode)
 * within wait_ms; with skip_acks, ACKs before it are skipped.  Saved into
 * *out (if not NULL). */
const struct ct_rx *ct_rl_expect_data(struct ct_conn *c, int skip_acks,
                                      int wait_ms, struct ct_rl_pkt *out);
void ct_rl_save(const struct ct_rx *rx, struct ct_rl_pkt *out);

/* Sends an ACK with exactly these Cum PSN and SACK words (words 0..8),
 * echoing `echo` (NULL: Echo PSN = cum, no TS) with echo_flags; Entropy =
 * the echo's; CE/RX counts from c. */
void ct_rl_send_ack(struct ct_conn *c, uint32_t cum, const uint32_t *sack,
                    unsigned words, const struct mrw_pkt *echo,
                    uint8_t echo_flags);
/* As ct_rl_send_ack, with ACK Delay = ack_delay (ns). */
void ct_rl_send_ack_delay(struct ct_conn *c, uint32_t cum, const uint32_t *sack,
                          unsigned words, const struct mrw_pkt *echo,
                          uint8_t echo_flags, uint32_t ack_delay);
/* Sends a NAK for nak_psn (MSN msn) with code, RNR Delay and Cum PSN. */
void ct_rl_send_nak(struct ct_conn *c, uint32_t nak_psn, uint32_t msn,
                    uint8_t code, uint8_t rnr_delay, uint32_t cum);
/* Collects the first transmissions of the IUT's n PSNs first, first+1,
 * ... (they must come in that order, REL-1) into pk[0..n); its
 * retransmissions of them meanwhile are skipped (an IUT with an RTT sample
 * can probe within a fraction of a millisecond). */
void ct_rl_take_new(struct ct_conn *c, uint32_t first, struct ct_rl_pkt *pk,
                    int n, int wait_ms);
/* Fills p as a response packet (READ_RESP or ATOMIC_RESP) of ours at PSN
 * psn: Req MSN req_msn, Msg Len msg_len, Offset offset, flags as given. */
void ct_rl_resp_pkt(struct ct_conn *c, struct mrw_pkt *p, uint8_t op,
                    uint32_t psn, uint32_t req_msn, uint32_t msg_len,
                    uint32_t offset, const uint8_t *data, uint32_t len,
                    uint16_t flags);
/* IUT TSval difference b - a in ns (TSval is the low 32 bits of the
 * sender's ns clock, so differences below ~4.29 s are exact). */
uint32_t ct_rl_ts_diff(uint32_t a, uint32_t b);

/* ---- secure mode (secure.c) ---- */

/* The tester's half of one secure connection. */
struct ct_sec {
    uint8_t suite;      /* enum mrw_sec_suite */
    uint8_t master[32]; /* the master key given to the IUT */
    uint32_t spi;       /* ours: what the IUT seals to us with */
    uint32_t aspi;      /* the IUT's, from its CONNECT_RESP */
    uint16_t epoch;     /* epoch we seal in */
    uint64_t seq;       /* Seq of the last packet we sealed */
    uint8_t gen;        /* Key Gen we seal under (SEC-31) */
    uint8_t next_gen;   /* the generation of next[], if have_next */
    uint8_t have_next;
    uint8_t next[32];   /* a second master key, given with SEC_KEY */
    uint32_t gens_seen; /* bit g: the IUT sealed under generation g < 32 */
};
/* DEVICE key=<random master key> suite=suite, and s set up for it. */
void ct_sec_device(struct ct *t, struct ct_sec *s, uint8_t suite);
/* Tester as requester with an authenticated CONNECT_REQ; checks the
 * CONNECT_RESP's SECURE MAC and suite; QP in RTS.  auto_ack is off. */
struct ct_conn *ct_sec_connect(struct ct *t, struct ct_sec *s,
                               const char *qp_opts);
/* Encodes p and seals it (WIRE-39..42) under s's epoch and the IUT's SPI,
 * or under spi and epoch given; next Seq.  Returns the length in out. */
size_t ct_sec_seal(struct ct_conn *c, struct ct_sec *s, const struct mrw_pkt *p,
                   uint8_t *out, size_t cap);
size_t ct_sec_seal_as(struct ct_conn *c, struct ct_sec *s,
                      const struct mrw_pkt *p, uint32_t spi, uint16_t epoch,
                      uint8_t *out, size_t cap);
/* SEC_KEY gen=gen key=<a new random master key>: the IUT installs it for
 * receiving (SEC-32), and s can seal and open under it. */
void ct_sec_add_key(struct ct *t, struct ct_sec *s, uint8_t gen);
/* Sends sealed bytes from c's entropy socket. */
void ct_sec_send(struct ct_conn *c, const uint8_t *buf, size_t len);
/* Receives for ms: every packet of the IUT must be sealed and open with
 * the key of SEC-15.  Returns how many did. */
int ct_sec_drain(struct ct_conn *c, struct ct_sec *s, int ms);

#endif /* MROCE_CONFORM_H */
