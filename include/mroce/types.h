/*
 * mroce/types.h - the vocabulary both MetaRoCE APIs share.
 *
 * Work requests, scatter-gather entries, completions, access rights, error
 * codes, QP states and the counters a QP, a path and an endpoint report.
 * They follow ibv_* closely and carry the `mroce_` prefix of the user-facing
 * library, libmroce (mroce/mroce.h), which passes them through unchanged to
 * the protocol engine (mroce/engine.h, prefix `mre_`).  The two name
 * functions (mroce_wc_status_str, mroce_qp_state_str) live in the engine
 * library, which every MetaRoCE program links.
 */
#ifndef MROCE_TYPES_H
#define MROCE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t mroce_tstamp; /* nanoseconds */
#define MROCE_TSTAMP_INF UINT64_MAX

/* Error codes (negative). X-macro: name, value, description. */
/* clang-format off */
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
/* clang-format on */

enum mroce_err {
#define MROCE_X_ENUM(name, val, desc) MROCE_E##name = (val),
    MROCE_ERRORS(MROCE_X_ENUM)
#undef MROCE_X_ENUM
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
    MROCE_SEND_SIGNALED = 1, /* produce a completion on success */
    MROCE_SEND_SOLICITED = 2,
    MROCE_SEND_INLINE = 4, /* copy the data at post time; no lkey needed */
    MROCE_SEND_FENCE = 8,  /* wait for prior READ/atomics to complete */
};

#define MROCE_MAX_SGE 4
#define MROCE_MAX_INLINE 256

struct mroce_sge {
    uint64_t addr; /* local virtual address */
    uint32_t length;
    uint32_t lkey;
};

struct mroce_send_wr {
    uint64_t wr_id;
    struct mroce_send_wr *next; /* linked list, like ibv_post_send */
    struct mroce_sge *sg_list;
    int num_sge;
    enum mroce_wr_opcode opcode;
    unsigned send_flags; /* enum mroce_send_flags */
    uint32_t imm_data;
    uint64_t remote_addr; /* WRITE, READ, atomics */
    uint32_t rkey;
    uint64_t compare_add; /* FETCH_ADD addend, CMP_SWAP compare */
    uint64_t swap;        /* CMP_SWAP swap value */
    uint16_t stream;      /* stream of the QP it is ordered in; 0 is the
                             default (SEM-30): below the QP's max_streams */
};

struct mroce_recv_wr {
    uint64_t wr_id;
    struct mroce_recv_wr *next;
    struct mroce_sge *sg_list;
    int num_sge;
    uint16_t stream; /* stream whose messages it receives; 0 default */
};

/* Completion statuses (ibv_wc_status style). X-macro: name, description. */
/* clang-format off */
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
/* clang-format on */

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
    MROCE_WC_RDMA_WRITE = 2, /* RECV_WITH_IMM: the immediate came with an
                                RDMA WRITE (verbs' RECV_RDMA_WITH_IMM) */
    MROCE_WC_SOLICITED = 4,  /* receives: the sender set MROCE_SEND_SOLICITED
                                (the solicited event bit) */
};

struct mroce_wc {
    uint64_t wr_id;
    enum mroce_wc_status status;
    enum mroce_wc_opcode opcode;
    uint32_t byte_len; /* receives: bytes placed */
    uint32_t imm_data;
    unsigned wc_flags; /* enum mroce_wc_flags */
    uint32_t qp_num;
    uint16_t stream; /* stream of the work request */
};

/* Queue pair states (rxe-style explicit state machine). */
/* clang-format off */
#define MROCE_QP_STATES(X) \
    X(RESET)               \
    X(LISTEN)              \
    X(CONNECTING)          \
    X(RTS)                 \
    X(CLOSING)             \
    X(CLOSED)              \
    X(ERROR)
/* clang-format on */

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

/* Per-path counters and state, as reported by mre_qp_path_stats(). */
struct mroce_path_stats {
    uint16_t entropy;
    uint8_t active; /* 0 once retired (slot reused for a new entropy) */
    uint8_t weight; /* current spraying weight, 0..8 */
    uint64_t tx_pkts, tx_bytes, acked_pkts;
    uint64_t lost_pkts, ecn_marks;
    mroce_tstamp srtt, min_rtt;
    uint32_t retirements; /* how many entropies this slot has retired */
    /* per-path window in bytes (CC-20); 0xffffffff when the algorithm
     * keeps none (the fixed window) */
    uint32_t cwnd;
    uint32_t inflight; /* bytes in flight on this path, as cwnd counts */
};

/* Per-QP counters (ENG-9). */
/* clang-format off */
#define MROCE_QP_COUNTERS(X)                                          \
    X(tx_pkts) X(tx_bytes) X(tx_data_pkts) X(tx_acks) X(tx_naks)      \
    X(rx_pkts) X(rx_bytes) X(rx_data_pkts) X(rx_acks) X(rx_naks)      \
    X(retx_pkts) X(retx_path) X(retx_ooo) X(retx_rto) X(retx_probe)   \
    X(retx_rnr) X(rx_dups) X(rx_ecn_ce) X(tx_ecn_echo)                \
    X(drop_token) X(drop_window) X(drop_state) X(drop_invalid)        \
    X(drop_stale) X(timeouts) X(probes) X(paths_retired)              \
    X(rnr_naks_rx) X(rnr_naks_tx) X(rtt_last) X(srtt) X(min_rtt)      \
    X(cwnd) X(completions) X(spurious_rto) X(path_reuses)            \
    X(tx_keepalives) X(peer_timeouts) X(rate_asks) X(rate_hint)
/* clang-format on */

struct mroce_qp_counters {
#define MROCE_X_FIELD(name) uint64_t name;
    MROCE_QP_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};

/* Endpoint counters: drops before a QP is known, by reason (ENG-8); and
 * sec_rekeys, the times a connection's receive side made a new master key
 * generation current (SEC-32, SEC-33). */
/* clang-format off */
#define MROCE_EP_COUNTERS(X)                                             \
    X(rx_pkts) X(tx_pkts) X(drop_truncated) X(drop_version)              \
    X(drop_opcode) X(drop_flags) X(drop_length) X(drop_crc) X(drop_field) \
    X(drop_no_qp) X(drop_no_listener)                                    \
    X(drop_auth) X(drop_key) X(drop_replay) X(drop_mode) X(sec_rekeys)
/* clang-format on */

struct mroce_ep_counters {
#define MROCE_X_FIELD(name) uint64_t name;
    MROCE_EP_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};

#ifdef __cplusplus
}
#endif

#endif /* MROCE_TYPES_H */
