/*
 * mroce/engine.h - the MetaRoCE protocol engine: a software NIC with no I/O.
 *
 * The engine is sans-IO in the manner of ngtcp2: it never reads a clock,
 * opens a socket, starts a thread or calls malloc.  Every entry point takes
 * the current time (`now`, nanoseconds on any monotonic clock the caller
 * chooses); memory comes from a caller-supplied allocator; randomness (tokens,
 * fresh path entropies) from a caller-supplied callback.  The caller:
 *
 *   - feeds each received datagram to mroce_ep_recv() with its ECN bits;
 *   - drains packets to send with mroce_ep_write_pkt(), each tagged with the
 *     peer address and the path entropy (the UDP source port to use);
 *   - sleeps until mroce_ep_expiry() and then calls mroce_ep_handle_expiry();
 *   - posts work with mroce_post_send()/mroce_post_recv() and reaps completions
 *     with mroce_cq_poll().
 *
 * The same engine runs over UDP sockets (libmroce), in the deterministic
 * network model used by tests, and in the simulator.
 *
 * Thread safety: none.  One endpoint and everything created from it must be
 * used by one thread at a time; layers above add locking.
 *
 * Errors: functions return 0 (or a count) on success and a negative enum
 * mroce_err on failure.  Outcomes of work requests are never return codes:
 * they arrive as completions with an enum mroce_wc_status.
 */
#ifndef MROCE_ENGINE_H
#define MROCE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t mroce_tstamp; /* nanoseconds */
#define MROCE_TSTAMP_INF UINT64_MAX

/* Error codes (negative). X-macro: name, value, description. */
#define MROCE_ERRORS(X)                                         \
    X(INVAL, -1, "invalid argument")                            \
    X(NOMEM, -2, "out of memory")                               \
    X(STATE, -3, "object is in the wrong state for this call")  \
    X(FULL, -4, "queue full")                                   \
    X(NOENT, -5, "no such object")                              \
    X(BUSY, -6, "object still in use")                          \
    X(ACCESS, -7, "local protection error: lkey, bounds or rights") \
    X(RANGE, -8, "length out of range")                         \
    X(NOBUF, -9, "output buffer too small")                     \
    X(FAULT, -10, "memory range not addressable (not mapped, or wraps)")

enum mroce_err {
#define MROCE_X_ENUM(name, val, desc) MROCE_E##name = (val),
    MROCE_ERRORS(MROCE_X_ENUM)
#undef MROCE_X_ENUM
};
const char *mroce_strerror(int err);

/* Caller-supplied allocator; the engine's only source of memory. */
struct mroce_mem {
    void *(*calloc)(size_t nmemb, size_t size, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
};

/* A peer address as opaque bytes: the engine compares and copies it but never
 * interprets it.  The UDP layer stores a sockaddr in it; the network model a
 * host index. */
struct mroce_addr {
    uint8_t len;        /* bytes used in data[] */
    uint8_t data[31];
};

/* Memory access rights (ibv_access_flags style). */
enum mroce_access {
    MROCE_ACCESS_LOCAL_WRITE = 1,
    MROCE_ACCESS_REMOTE_WRITE = 2,
    MROCE_ACCESS_REMOTE_READ = 4,
    MROCE_ACCESS_REMOTE_ATOMIC = 8,
};

/* Work request opcodes. */
enum mroce_wr_opcode {
    MROCE_WR_SEND,
    MROCE_WR_SEND_WITH_IMM,
    MROCE_WR_WRITE,
    MROCE_WR_WRITE_WITH_IMM,
    MROCE_WR_READ,
    MROCE_WR_FETCH_ADD,
    MROCE_WR_CMP_SWAP,
};

/* Work request flags. */
enum mroce_send_flags {
    MROCE_SEND_SIGNALED = 1,  /* produce a completion on success */
    MROCE_SEND_SOLICITED = 2,
    MROCE_SEND_INLINE = 4,    /* copy the data at post time; no lkey needed */
    MROCE_SEND_FENCE = 8,     /* wait for prior READ/atomics to complete */
};

#define MROCE_MAX_SGE 4
#define MROCE_MAX_INLINE 256

struct mroce_sge {
    uint64_t addr;   /* local virtual address */
    uint32_t length;
    uint32_t lkey;
};

struct mroce_send_wr {
    uint64_t wr_id;
    struct mroce_send_wr *next; /* linked list, like ibv_post_send */
    struct mroce_sge *sg_list;
    int num_sge;
    enum mroce_wr_opcode opcode;
    unsigned send_flags;        /* enum mroce_send_flags */
    uint32_t imm_data;
    uint64_t remote_addr;       /* WRITE, READ, atomics */
    uint32_t rkey;
    uint64_t compare_add;       /* FETCH_ADD addend, CMP_SWAP compare */
    uint64_t swap;              /* CMP_SWAP swap value */
};

struct mroce_recv_wr {
    uint64_t wr_id;
    struct mroce_recv_wr *next;
    struct mroce_sge *sg_list;
    int num_sge;
};

/* Completion statuses (ibv_wc_status style). X-macro: name, description. */
#define MROCE_WC_STATUSES(X)                              \
    X(SUCCESS, "success")                                 \
    X(LOC_LEN_ERR, "local length error")                  \
    X(LOC_PROT_ERR, "local protection error")             \
    X(LOC_QP_OP_ERR, "local QP operation error")          \
    X(REM_ACCESS_ERR, "remote access error")              \
    X(REM_INV_REQ_ERR, "remote invalid request error")    \
    X(REM_OP_ERR, "remote operation error")               \
    X(RNR_RETRY_EXC_ERR, "receiver-not-ready retry exceeded") \
    X(RETRY_EXC_ERR, "transport retry counter exceeded")  \
    X(WR_FLUSH_ERR, "work request flushed")

enum mroce_wc_status {
#define MROCE_X_ENUM(name, desc) MROCE_WC_##name,
    MROCE_WC_STATUSES(MROCE_X_ENUM)
#undef MROCE_X_ENUM
};
const char *mroce_wc_status_str(enum mroce_wc_status st);

enum mroce_wc_opcode {
    MROCE_WC_SEND,
    MROCE_WC_WRITE,
    MROCE_WC_READ,
    MROCE_WC_FETCH_ADD,
    MROCE_WC_CMP_SWAP,
    MROCE_WC_RECV,
    MROCE_WC_RECV_WITH_IMM, /* SEND with immediate or WRITE with immediate */
};

enum mroce_wc_flags {
    MROCE_WC_WITH_IMM = 1,
};

struct mroce_wc {
    uint64_t wr_id;
    enum mroce_wc_status status;
    enum mroce_wc_opcode opcode;
    uint32_t byte_len; /* receives: bytes placed */
    uint32_t imm_data;
    unsigned wc_flags; /* enum mroce_wc_flags */
    uint32_t qp_num;
};

/* Queue pair states (rxe-style explicit state machine). */
#define MROCE_QP_STATES(X) \
    X(RESET)               \
    X(LISTEN)              \
    X(CONNECTING)          \
    X(RTS)                 \
    X(CLOSING)             \
    X(CLOSED)              \
    X(ERROR)

enum mroce_qp_state {
#define MROCE_X_ENUM(name) MROCE_QPS_##name,
    MROCE_QP_STATES(MROCE_X_ENUM)
#undef MROCE_X_ENUM
};
const char *mroce_qp_state_str(enum mroce_qp_state st);

/* Congestion control algorithms (the CC interface is in src/engine/cc.h). */
enum mroce_cc_algo {
    MROCE_CC_DELAY_ECN = 0, /* delay target + ECN, default */
    MROCE_CC_NONE = 1,      /* fixed window (tests, baselines) */
};

typedef struct mroce_ep mroce_ep;
typedef struct mroce_qp mroce_qp;
typedef struct mroce_cq mroce_cq;
typedef struct mroce_mr mroce_mr;

/* Endpoint configuration; mroce_ep_config_default() fills defaults. */
struct mroce_ep_config {
    struct mroce_mem mem;
    /* Fill buf with len random bytes (tokens, entropies, start PSNs). */
    void (*rand)(uint8_t *buf, size_t len, void *user);
    void *rand_user;
    uint32_t max_qps;        /* default 1024 */
    uint32_t rx_credit_bytes; /* receiver-driven mode: bytes per RTT this
                                 endpoint lets all senders have in flight to
                                 it together; 0 = credits off */
};
void mroce_ep_config_default(struct mroce_ep_config *cfg);

/* rnr_retry value that retries RNR NAKs forever (verbs' 7, REL-37). */
#define MROCE_RNR_RETRY_FOREVER 7

/* Queue pair attributes; mroce_qp_attr_default() fills defaults.  Times in ns. */
struct mroce_qp_attr {
    mroce_cq *send_cq;
    mroce_cq *recv_cq;
    uint32_t max_send_wr;   /* rounded up to a power of two; default 256 */
    uint32_t max_recv_wr;   /* rounded up to a power of two; default 256 */
    uint16_t mtu;           /* payload bytes per packet; default 4096 */
    uint16_t npaths;        /* entropies to spray over, 1..256; default 64 */
    uint32_t window;        /* PSNs in flight / tracked, power of 2; 1024 */
    uint32_t max_rd_atomic; /* outstanding READ/atomics; default 16 */
    uint8_t retry_cnt;      /* timeouts in a row a QP survives at least;
                               it fails only once the peer has also been
                               silent for peer_timeout (LOSS-14); 7 */
    uint8_t rnr_retry;      /* RNR rounds per message before RNR_RETRY_EXC;
                               MROCE_RNR_RETRY_FOREVER (7, the default)
                               retries forever, as in verbs (REL-37) */
    uint8_t cc_algo;        /* enum mroce_cc_algo */
    uint8_t credit_mode;    /* 1: ask the receiver for credits */
    mroce_tstamp min_rto;   /* default 200 us */
    mroce_tstamp max_rto;   /* default 100 ms */
    mroce_tstamp max_ack_delay; /* receiver's ACK coalescing bound; 10 us */
    mroce_tstamp handshake_timeout; /* give up connecting; default 1 s */
    uint32_t ooo_thresh;    /* out-of-order loss threshold in PSNs; 64 */
    uint32_t init_cwnd;     /* bytes; default 64 KiB */
    mroce_tstamp target_qdelay; /* CC: queuing allowed per path direction
                                   (targets base_rtt + 2x with CE, + 8x
                                   without, CC-7); 5 us */
    uint16_t entropy_base;  /* entropies are drawn from [base, base+span) */
    uint16_t entropy_span;  /* default 49152 + 16384 (the ephemeral range) */
    uint8_t path_burst;     /* consecutive packets per path pick, 1..64;
                               1 (per-packet spraying); a batching datapath
                               (UDP GSO) uses more */
    uint8_t path_reuse;     /* 1: a new burst reuses a slot whose ACK came
                               back clean (PATH-16, recycled entropies);
                               0 (default): round robin only.  libmroce
                               sets 1 */
    mroce_tstamp peer_timeout; /* a peer silent this long fails the QP, and
                                  no shorter silence does (REL-32); the
                                  keepalive starts after a quarter of it
                                  (REL-34); default 5 s.  0: retry_cnt
                                  timeouts alone fail it (verbs' rule) and
                                  no keepalive is sent */
    uint32_t pd;            /* protection domain: remote accesses through
                               this QP may only use regions of the same PD
                               (mroce_mr_reg_pd); 0 by default */
};
void mroce_qp_attr_default(struct mroce_qp_attr *attr);

/* Per-path counters and state, as reported by mroce_qp_path_stats(). */
struct mroce_path_stats {
    uint16_t entropy;
    uint8_t active;        /* 0 once retired (slot reused for a new entropy) */
    uint8_t weight;        /* current spraying weight, 0..8 */
    uint64_t tx_pkts, tx_bytes, acked_pkts;
    uint64_t lost_pkts, ecn_marks;
    mroce_tstamp srtt, min_rtt;
    uint32_t retirements;  /* how many entropies this slot has retired */
};

/* Per-QP counters (ENG-9). */
#define MROCE_QP_COUNTERS(X)                                          \
    X(tx_pkts) X(tx_bytes) X(tx_data_pkts) X(tx_acks) X(tx_naks)      \
    X(rx_pkts) X(rx_bytes) X(rx_data_pkts) X(rx_acks) X(rx_naks)      \
    X(retx_pkts) X(retx_path) X(retx_ooo) X(retx_rto) X(retx_probe)   \
    X(retx_rnr) X(rx_dups) X(rx_ecn_ce) X(tx_ecn_echo)                \
    X(drop_token) X(drop_window) X(drop_state) X(drop_invalid)        \
    X(drop_stale) X(timeouts) X(probes) X(paths_retired)              \
    X(rnr_naks_rx) X(rnr_naks_tx) X(rtt_last) X(srtt) X(min_rtt)      \
    X(cwnd) X(completions) X(spurious_rto) X(path_reuses)            \
    X(tx_keepalives) X(peer_timeouts)

struct mroce_qp_counters {
#define MROCE_X_FIELD(name) uint64_t name;
    MROCE_QP_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};

/* Endpoint counters: drops before a QP is known, by reason (ENG-8). */
#define MROCE_EP_COUNTERS(X)                                             \
    X(rx_pkts) X(tx_pkts) X(drop_truncated) X(drop_version)              \
    X(drop_opcode) X(drop_flags) X(drop_length) X(drop_crc) X(drop_field) \
    X(drop_no_qp) X(drop_no_listener)

struct mroce_ep_counters {
#define MROCE_X_FIELD(name) uint64_t name;
    MROCE_EP_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};

/* Per-packet metadata in and out of the engine. */
enum mroce_ecn {
    MROCE_ECN_NOT_ECT = 0,
    MROCE_ECN_ECT1 = 1,
    MROCE_ECN_ECT0 = 2,
    MROCE_ECN_CE = 3,
};
struct mroce_rx_info {
    struct mroce_addr from; /* who sent it (needed for CONNECT_REQ) */
    uint8_t ecn;            /* enum mroce_ecn of the received IP header */
};
struct mroce_tx_info {
    struct mroce_addr to;   /* destination */
    uint16_t entropy;       /* path: the UDP source port to send from */
    uint8_t ecn;            /* ECN codepoint to set (ECT(0) for all) */
    uint32_t qp_num;        /* local QP that produced it (0: endpoint) */
};

/* --- endpoint --- */
int mroce_ep_new(mroce_ep **pep, const struct mroce_ep_config *cfg);
/* Frees the endpoint and every object created from it. */
void mroce_ep_del(mroce_ep *ep);
/* Feed one received datagram (UDP payload).  Never fails: bad input is
 * dropped and counted.  Returns 0. */
int mroce_ep_recv(mroce_ep *ep, const uint8_t *pkt, size_t len,
                  const struct mroce_rx_info *info, mroce_tstamp now);
/* Write the next packet to send into buf.  Returns its length, 0 if nothing
 * is to be sent now, or MROCE_ENOBUF if cap is smaller than the MTU needs. */
int mroce_ep_write_pkt(mroce_ep *ep, uint8_t *buf, size_t cap,
                       struct mroce_tx_info *info, mroce_tstamp now);
/* Zero-copy variant.  A data packet (WRITE, SEND, READ response) whose
 * payload is one contiguous piece of registered memory is not copied: buf
 * gets its headers followed by its CRC (4 bytes), and zc->payload /
 * zc->payload_len name the bytes that go between the two on the wire, i.e.
 * the packet is buf[0..h) + payload + buf[h..h+4) with
 * h = returned length - payload_len - MROCE_CRC_LEN.  Any other packet is
 * written whole into buf, with zc->payload NULL and zc->payload_len 0.
 * The payload is the application's memory: the caller must have sent (or
 * copied) it before it next calls into the endpoint or the application
 * can reuse that memory, which its completion allows. */
struct mroce_tx_zc {
    const uint8_t *payload;
    size_t payload_len;
};
int mroce_ep_write_pkt_zc(mroce_ep *ep, uint8_t *buf, size_t cap,
                          struct mroce_tx_info *info, struct mroce_tx_zc *zc,
                          mroce_tstamp now);
/* Earliest time at which mroce_ep_handle_expiry() has work to do. */
mroce_tstamp mroce_ep_expiry(const mroce_ep *ep);
void mroce_ep_handle_expiry(mroce_ep *ep, mroce_tstamp now);
/* 1 if mroce_ep_write_pkt() may have a packet now (cheap hint). */
int mroce_ep_want_write(const mroce_ep *ep);
void mroce_ep_get_counters(const mroce_ep *ep, struct mroce_ep_counters *c);

/* --- memory regions --- */
/* Registers [addr, addr + len) with the rights in access (enum
 * mroce_access).  MROCE_EINVAL: NULL addr, len 0, an unknown right, or
 * REMOTE_WRITE / REMOTE_ATOMIC without LOCAL_WRITE; MROCE_EFAULT: the range
 * runs past the end of the address space (SEM-28).  The engine makes no OS
 * call, so it cannot tell whether the memory is mapped: layers that can
 * (libmroce) check that before registering, and memory must stay mapped
 * with those rights until deregistration (SEM-29). */
int mroce_mr_reg(mroce_ep *ep, void *addr, size_t len, unsigned access,
                 mroce_mr **pmr);
/* The same in protection domain pd (mroce_mr_reg uses domain 0): only QPs
 * created with attr.pd == pd may use it, locally or remotely. */
int mroce_mr_reg_pd(mroce_ep *ep, uint32_t pd, void *addr, size_t len,
                    unsigned access, mroce_mr **pmr);
/* The argument checks of mroce_mr_reg_pd() alone, registering nothing: 0,
 * MROCE_EINVAL or MROCE_EFAULT, as it would return.  For layers that check
 * more before they register. */
int mroce_mr_reg_check(const void *addr, size_t len, unsigned access);
int mroce_mr_dereg(mroce_mr *mr);
uint32_t mroce_mr_lkey(const mroce_mr *mr);
uint32_t mroce_mr_rkey(const mroce_mr *mr);

/* --- completion queues --- */
int mroce_cq_new(mroce_ep *ep, uint32_t depth, mroce_cq **pcq);
int mroce_cq_del(mroce_cq *cq); /* MROCE_EBUSY while a QP uses it */
/* Returns the number of completions written to wc (0..n). */
int mroce_cq_poll(mroce_cq *cq, int n, struct mroce_wc *wc);
/* Completions waiting (0 for NULL); lets a datapath signal "CQ became
 * non-empty" without taking entries out. */
uint32_t mroce_cq_count(const mroce_cq *cq);

/* --- queue pairs --- */
int mroce_qp_new(mroce_ep *ep, const struct mroce_qp_attr *attr,
                 mroce_qp **pqp);
/* Destroys the QP; outstanding work is dropped without completions. */
void mroce_qp_del(mroce_qp *qp);
uint32_t mroce_qp_num(const mroce_qp *qp);
enum mroce_qp_state mroce_qp_state(const mroce_qp *qp);
/* Active side: start the handshake towards `to`.  remote_qpn 0 means any
 * listening QP there. */
int mroce_qp_connect(mroce_qp *qp, const struct mroce_addr *to,
                     uint32_t remote_qpn, mroce_tstamp now);
/* Passive side: this QP accepts the next CONNECT_REQ sent to QPN 0 or to it. */
int mroce_qp_listen(mroce_qp *qp, mroce_tstamp now);
/* Orderly close once outstanding work has completed. */
int mroce_qp_disconnect(mroce_qp *qp, mroce_tstamp now);
/* Move to ERROR and flush outstanding work with WR_FLUSH_ERR. */
int mroce_qp_set_error(mroce_qp *qp);
uint32_t mroce_qp_remote_qpn(const mroce_qp *qp);
/* The first WR with MROCE_SEND_INLINE allocates the QP's inline copies
 * (MROCE_MAX_INLINE bytes per send WR): it alone can fail MROCE_ENOMEM. */
int mroce_qp_post_send(mroce_qp *qp, struct mroce_send_wr *wr,
                       struct mroce_send_wr **bad_wr, mroce_tstamp now);
int mroce_qp_post_recv(mroce_qp *qp, struct mroce_recv_wr *wr,
                       struct mroce_recv_wr **bad_wr);
void mroce_qp_get_counters(const mroce_qp *qp, struct mroce_qp_counters *c);
/* Fills up to n path slots; returns the number of slots (npaths). */
int mroce_qp_path_stats(const mroce_qp *qp, struct mroce_path_stats *ps,
                        int n);
const struct mroce_qp_attr *mroce_qp_get_attr(const mroce_qp *qp);

/* Attributes mroce_qp_modify() may change, by mask bit. */
enum mroce_qp_mod {
    MROCE_QP_MOD_RETRY = 1,   /* retry_cnt, rnr_retry: any state */
    MROCE_QP_MOD_TIMEOUT = 2, /* min_rto, max_rto, handshake_timeout,
                                 peer_timeout: any
                                 state; used from the next timer on */
    MROCE_QP_MOD_CC = 4,      /* cc_algo, init_cwnd, target_qdelay: RESET */
    MROCE_QP_MOD_PATHS = 8,   /* npaths, path_burst, path_reuse: RESET */
    MROCE_QP_MOD_MTU = 16,    /* mtu: RESET */
};
/* Changes the attributes named by mask (enum mroce_qp_mod) to attr's
 * values, checked as mroce_qp_new() checks them.  MROCE_EINVAL (bad value
 * or mask), MROCE_ESTATE (a RESET-only attribute after connect/listen),
 * MROCE_ENOMEM.  Nothing changes on error. */
int mroce_qp_modify(mroce_qp *qp, const struct mroce_qp_attr *attr,
                    unsigned mask);

#ifdef __cplusplus
}
#endif
#endif /* MROCE_ENGINE_H */
