/*
 * mroce/mroce.h - libmroce: MetaRoCE as a verbs-style C API over UDP.
 *
 * The shape of libibverbs, so RDMA programmers feel at home: open a device on
 * a local IP address and UDP port, allocate a protection domain, register
 * memory, create completion queues and queue pairs, connect, post work
 * requests, poll completions.  Work requests, scatter-gather entries and
 * completions (struct mroce_send_wr, mroce_sge, mroce_recv_wr, mroce_wc) are
 * the types of mroce/types.h, which libmroce shares with the engine and which
 * follow ibv_* closely.  Every name here is `mroce_`; the engine's are `mre_`,
 * and a program needs them only to tune a QP (struct mre_qp_attr).
 *
 * Underneath, each device runs one sans-IO engine endpoint (mroce/engine.h)
 * over UDP sockets: it receives on its well-known port and sends each path's
 * packets from its own UDP source port (the path entropy), in batches.
 *
 * Progress: MROCE_PROGRESS_APP (default) moves packets only when the
 * application calls into the library (mroce_poll_cq() above all): no extra
 * thread, the fastest on few cores.  Keep calling while a transfer is in
 * flight, as verbs users poll: between calls nothing moves.  MROCE_PROGRESS_THREAD starts one
 * progress thread per device, which sleeps in epoll when idle.
 *
 * Thread safety: every call is safe from any thread; calls on one device
 * serialise on the device's lock (a pthread mutex), which the progress
 * thread also takes, one progress round at a time.  Destroying an object
 * while another thread uses it is the caller's error (as in verbs).
 * Blocking calls (connect, accept, disconnect, cq_wait) do not hold the lock
 * while they sleep.  Stated per call below where it matters more.
 *
 * Bad calls: NULL or foreign pointers return MROCE_EINVAL; a destroyed
 * object (or one of a closed device) returns MROCE_EDESTROYED - the library
 * keeps the shells of the last 4096 destroyed objects for that check, older
 * ones are freed and then using them is undefined, as in verbs.  Calls that
 * return no code (getters) return 0 / an empty result for such objects
 * (mroce_qp_get_state: MROCE_QPS_ERROR).
 *
 * Connection set-up: the active side sends CONNECT_REQ from its device's
 * receive port and the listener answers that address, so devices on
 * different ports (e.g. several processes on one host) can connect.
 *
 * Errors: functions return 0 (or a count) or a negative code: the engine's
 * enum mroce_err, plus the library's codes below.  mroce_strerror()
 * names both.  Outcomes of work requests are completions.
 *
 * Environment:
 *   MROCE_FAULT="tx:drop=0.01,dup=0.001,reorder=0.01,corrupt=0,reorder_us=50;rx:drop=0.01"
 *     adds fault injection to every device opened (overriding the attr's
 *     fields it names); sections are "tx:", "rx:", "both:" and "seed=N".
 *     A malformed value makes mroce_device_open() fail with MROCE_EINVAL.
 *   MROCE_DUMP_COUNTERS=1 prints every QP's and path's counters to stderr
 *     when the QP is destroyed (or its device closed), and the device's
 *     datapath counters (struct mroce_udp_counters, those not zero) when
 *     the device is closed.
 *   MROCE_BUSY_POLL_US=N: how long the progress thread polls before it
 *     sleeps (default 50).
 *   MROCE_PLANES=10.0.0.1,10.1.0.1: the device's planes (parallel
 *     networks, one local address each, plane 0 first), for devices whose
 *     attr.planes is NULL; see mroce_device_attr.planes.  Unset: one
 *     plane, as without planes.
 *   MROCE_IDLE_YIELD_US=N: in APP mode, once a device that has been
 *     moving bulk data (4+ packets per busy progress round on average) has
 *     had nothing to do for N us (default 50; 0 = never), each
 *     mroce_poll_cq() or mroce_device_progress() that finds nothing yields
 *     the CPU (sched_yield): a busy poller waiting for a peer process on
 *     the same cores gives it the CPU instead of spinning against it.
 *     Ping-pongs (one packet a round) always spin.  See src/lib/progress.c.
 *   MROCE_TX_COPY=1: copy each data packet's payload into the datapath's
 *     buffer, as before zero-copy transmit (default: the kernel reads it
 *     from the registered memory, which the rules of post_send already keep
 *     unchanged until the work request completes).  For comparisons.
 *   MROCE_DEFER_ACKS (default 1; 0 turns it off): in APP mode the ACKs a
 *     progress round owes for a SEND or WRITE with ACK_REQ are left for the
 *     application's next call, so a reply it posts at once goes out before
 *     them; a per-device watchdog thread sends ACKs the application leaves
 *     waiting longer than 10 us; deferral pauses while the application
 *     does not answer (a bulk receiver).  =2 defers in every such round.
 *     So what the application sends next may leave before the ACK of what
 *     it just received: do not rely on the order of a peer's completions
 *     across that boundary.
 *     The device counters (acks_deferred...) and, with
 *     MROCE_DUMP_COUNTERS=1, device close show what it did.  See
 *     src/lib/ackdefer.c.
 */
#ifndef MROCE_MROCE_H
#define MROCE_MROCE_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/engine.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Codes beyond the engine's (negative, not overlapping enum mroce_err). */
enum mroce_lib_err {
    MROCE_ETIMEDOUT = -20,  /* connect/accept/disconnect did not finish in
                                time (connect: nobody answered) */
    MROCE_EUNREACH = -21,   /* connect: the peer's host or port is
                                unreachable (ICMP: nobody listens there) */
    MROCE_EADDR = -22,      /* bad or unusable local/remote address */
    MROCE_ESOCKET = -23,    /* a socket call failed (errno kept) */
    MROCE_EDESTROYED = -24, /* object already destroyed */
    MROCE_EDATAPATH = -25,  /* device open: the datapath asked for (DPDK)
                               cannot start; stderr names the cause */
};
/* Names engine and library codes alike. */
const char *mroce_strerror(int err);

enum mroce_progress_mode {
    MROCE_PROGRESS_APP = 0,    /* polling drives the engine */
    MROCE_PROGRESS_THREAD = 1, /* a progress thread per device */
};

/* Fault injection for tests and demos (this kernel has no netem).
 * Probabilities per packet, each direction separately: drop; dup (sent or
 * delivered twice); reorder (held back until 1..4 later packets have passed,
 * or reorder_us); corrupt (one bit flipped).  Decisions come from a PRNG
 * seeded by fault_seed, so runs reproduce. */
struct mroce_fault {
    double drop, dup, reorder, corrupt;
    uint32_t reorder_us; /* a reordered packet is held back up to this; 50 */
};

struct mroce_device_attr {
    const char *local_addr; /* IPv4 or IPv6 literal; NULL = "127.0.0.1" */
    uint16_t port;          /* UDP port to receive on; 0 = MROCE_UDP_PORT */
    /* Each source port is one socket: a device uses src_port_count + 1
     * descriptors (the library raises RLIMIT_NOFILE to its hard limit if it
     * runs out).  QPs spray over these ports: npaths <= src_port_count. */
    uint16_t src_port_base;   /* first UDP source port (path entropies);
                                0 = choose a free range automatically */
    uint16_t src_port_count;  /* source ports, one per entropy; 256 */
    uint8_t dscp;             /* DSCP for every packet sent; 0 */
    uint8_t progress;         /* enum mroce_progress_mode */
    uint8_t use_gso;          /* UDP GSO for bursts on one path; 1 */
    uint8_t use_gro;          /* UDP GRO on receive; 1 */
    uint32_t max_qps;         /* 1024 */
    uint32_t rx_credit_bytes; /* receiver-driven credit budget; 0 = off */
    uint32_t rx_rate_mbps;    /* receive rate, Mbit/s, the device's rate
                                 hints divide among its active senders
                                 (CC-25); 0 = the environment's
                                 MROCE_RX_RATE (Mbit/s; "off" or 0: no
                                 hints), else 100000 (100 Gbit/s) */
    struct mroce_fault tx_fault, rx_fault;
    uint64_t fault_seed; /* 0 = from the clock */
    /* Planes (docs/spec/multipath.md, Planes): comma-separated IPv4 or
     * IPv6 literals, one local address per plane, at most 8, plane 0
     * first (it replaces local_addr).  Each plane gets its own sockets on
     * `port` and the same source ports.  NULL: the MROCE_PLANES
     * environment variable, else one plane at local_addr. */
    const char *planes;
    /* enum mroce_datapath; MROCE_DATAPATH_DEFAULT = the environment's
     * MROCE_DATAPATH ("dpdk" or "socket"), else kernel sockets. */
    uint8_t datapath;
    /* Secure mode (docs/spec/security.md section 6; README, Secure mode):
     * every QP of the device encrypts and authenticates its packets, and
     * connects only to secure peers holding the same master key.  The key
     * is a file of 32 to 128 hex digits that only its owner may read.
     * NULL: the environment's MROCE_KEY_FILE, else MROCE_KEY (the hex
     * digits themselves); no key there, or "" here: clear.  The library
     * holds no key of its own. */
    const char *key_file;
    /* enum mrw_sec_suite (1 AES-128-GCM, 2 AES-256-GCM, 3 AES-128-GMAC,
     * integrity only); 0: the environment's MROCE_SECURE_SUITE
     * ("aes128gcm", "aes256gcm", "gmac"), else AES-128-GCM. */
    uint8_t secure_suite;
    /* The generation (SEC-31) of that master key, the one the device
     * sends under: a device that joins a domain after rotations opens
     * with the domain's current key and its generation.  0: the
     * environment's MROCE_KEY_GEN (0-255), else 0. */
    uint8_t key_gen;
};
enum mroce_datapath {
    MROCE_DATAPATH_DEFAULT = 0,
    MROCE_DATAPATH_SOCKET = 1, /* kernel UDP sockets */
    MROCE_DATAPATH_DPDK = 2,   /* a DPDK port (MROCE_DPDK_* variables,
                                  README: The DPDK datapath) */
};
void mroce_device_attr_default(struct mroce_device_attr *attr);

typedef struct mroce_device mroce_device;
typedef struct mroce_pd mroce_pd;
typedef struct mroce_mr mroce_mr; /* a registered region */
typedef struct mroce_cq mroce_cq; /* a completion queue */
typedef struct mroce_qp mroce_qp; /* a queue pair */

/* Public view of a registered region (like struct ibv_mr). */
struct mroce_mr_info {
    void *addr;
    size_t length;
    uint32_t lkey, rkey;
    unsigned access;
};

/* --- device --- */
/* attr NULL = defaults.  0, MROCE_EINVAL (bad attr or MROCE_FAULT),
 * MROCE_EADDR (local address unusable, port or fixed source ports taken;
 * errno kept), MROCE_ESOCKET (errno kept), MROCE_ENOMEM. */
int mroce_device_open(const struct mroce_device_attr *attr,
                      mroce_device **pdev);
/* Closes the device and destroys everything created on it (QPs are dropped
 * without completions).  Stops the progress thread first.  No other thread
 * may be using the device or its objects. */
void mroce_device_close(mroce_device *dev);
/* The UDP port the device receives on (useful with port 0 = default). */
uint16_t mroce_device_port(const mroce_device *dev);
/* The attributes in effect: defaults filled in, port and src_port_base as
 * bound (the automatic source port range).  local_addr points into the
 * device and lives as long as it. */
int mroce_device_query(const mroce_device *dev, struct mroce_device_attr *attr);
/* Secure mode's master key rotation under traffic (docs/spec/security.md
 * SEC-31..SEC-33), in two steps across the secure domain: first every
 * device adds the new key as generation gen (the key the device opened
 * with is generation 0; use the next one each time) for receiving; then
 * each device uses it for sending, and every connection moves to it at its
 * next packet without loss.  A device holds two keys: adding a third
 * drops the older one not in use.  key_file: a key file as
 * attr.key_file; NULL: the environment's MROCE_KEY_FILE, else MROCE_KEY,
 * read again now.  MROCE_EINVAL: the device is not secure, the key is
 * unusable, gen is the one in use (add) or was not added (use). */
int mroce_device_add_key(mroce_device *dev, uint8_t gen, const char *key_file);
int mroce_device_use_key(mroce_device *dev, uint8_t gen);
/* Drive the engine once: receive what is waiting, fire timers, send.
 * APP progress mode calls it from mroce_poll_cq(); exposed for event loops.
 * Returns the number of packets moved.  Safe in THREAD mode too (it then
 * competes with the thread for the lock). */
int mroce_device_progress(mroce_device *dev);
/* APP mode event loops: a file descriptor (an epoll set of the receive
 * socket and a timer for the engine's next deadline) that becomes readable
 * when mroce_device_progress() has work; call it then, and after posting.
 * MROCE_ESTATE in THREAD mode, where the progress thread owns it. */
int mroce_device_fd(mroce_device *dev);
void mroce_device_get_counters(const mroce_device *dev,
                               struct mroce_ep_counters *c);

/* Datapath counters of a device: what the sockets did.  Syscalls per packet
 * = (rx_syscalls + tx_syscalls) / (rx_pkts + tx_pkts); without the polls
 * that found nothing: (rx_syscalls - rx_empty + tx_syscalls) / packets. */
/* clang-format off */
#define MROCE_UDP_COUNTERS(X)                                               \
    X(rx_syscalls)      /* recvmmsg/recvmsg calls, including empty ones */  \
    X(rx_empty)         /* of those, calls that found nothing (polling) */  \
    X(rx_datagrams)     /* datagrams the kernel returned */                 \
    X(rx_pkts)          /* packets handed to the engine (after GRO split, \
                           rx faults) */                                    \
    X(rx_bytes)                                                             \
    X(rx_gro_datagrams) /* datagrams that carried several packets (GRO) */  \
    X(rx_gro_segs)      /* packets that arrived inside those */             \
    X(rx_ecn_ce)        /* packets that arrived marked CE */                \
    X(rx_truncated)     /* datagrams larger than the buffer: dropped */     \
    X(rx_errors)        /* failed receive calls */                          \
    X(rx_icmp_errors)   /* ICMP errors read from the error queue */         \
    X(tx_syscalls)      /* sendmsg/sendmmsg calls */                        \
    X(tx_pkts)          /* packets the kernel accepted */                   \
    X(tx_bytes)                                                             \
    X(tx_gso_sends)     /* sends that carried several packets (GSO) */      \
    X(tx_gso_segs)      /* packets sent inside those */                     \
    X(tx_errors)        /* packets dropped because a send failed */         \
    X(tx_eagain)        /* sends that found the socket buffer full */       \
    X(fault_tx_drop) X(fault_tx_dup) X(fault_tx_reorder) X(fault_tx_corrupt) \
    X(fault_rx_drop) X(fault_rx_dup) X(fault_rx_reorder) X(fault_rx_corrupt) \
    X(progress_rounds)  /* library progress rounds (receive, timers, send) */ \
    X(thread_sleeps)    /* progress thread waits in epoll */              \
    X(idle_yields)      /* APP mode: polls that yielded the CPU (idle) */ \
    X(acks_deferred)    /* APP mode: rounds whose ACKs were left for the  \
                           application's next call (MROCE_DEFER_ACKS) */  \
    X(acks_deferred_replied) /* of those, ACKs that left behind data the  \
                           application sent (its answer went first) */    \
    X(acks_deferred_late) /* sent later than max_ack_delay (10 us) */     \
    X(acks_watchdog)    /* sent by the watchdog thread (the application   \
                           stayed away) */                                \
    X(watchdog_ticks)   /* the watchdog thread's wake-ups to look */      \
    X(defer_pauses)     /* deferral paused: the application did not answer \
                           (a bulk receiver) */                           \
    X(rx_sockbuf)       /* not a count: the receive socket's buffer in    \
                           bytes as granted (SO_RCVBUF read back; the     \
                           library asks 8 MiB, see src/udp/udp.c) */
/* clang-format on */

struct mroce_udp_counters {
#define MROCE_X_FIELD(name) uint64_t name;
    MROCE_UDP_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};
void mroce_device_get_udp_counters(const mroce_device *dev,
                                   struct mroce_udp_counters *c);

/* --- protection domains --- */
int mroce_pd_alloc(mroce_device *dev, mroce_pd **ppd);
int mroce_pd_free(mroce_pd *pd); /* MROCE_EBUSY while MRs or QPs use it */

/* --- memory regions --- */
/* Registers [addr, addr + length) with access (enum mroce_access).  Besides
 * the engine's checks (mre_mr_reg: MROCE_EINVAL for length 0, unknown
 * rights or a remote write/atomic right without LOCAL_WRITE; MROCE_EFAULT
 * for a range past the end of the address space), every byte must be
 * mapped readable (else MROCE_EFAULT) and, when access has LOCAL_WRITE,
 * REMOTE_WRITE or REMOTE_ATOMIC, writable (else MROCE_EACCESS): read-only
 * memory registers with REMOTE_READ (or no right) only (SEM-28).  Nothing
 * is pinned: the memory must stay mapped with those rights until
 * mroce_dereg_mr() succeeds, or a peer's packet or a retransmission that
 * touches it kills the process with SIGSEGV/SIGBUS (SEM-29). */
int mroce_reg_mr(mroce_pd *pd, void *addr, size_t length, unsigned access,
                 mroce_mr **pmr);
int mroce_dereg_mr(mroce_mr *mr); /* MROCE_EBUSY while work uses it */
void mroce_mr_query(const mroce_mr *mr, struct mroce_mr_info *info);
uint32_t mroce_mr_lkey(const mroce_mr *mr);
uint32_t mroce_mr_rkey(const mroce_mr *mr);

/* --- completion queues --- */
int mroce_create_cq(mroce_device *dev, uint32_t depth, mroce_cq **pcq);
int mroce_destroy_cq(mroce_cq *cq); /* MROCE_EBUSY while a QP uses it */
/* Returns completions written to wc (0..n) or a negative error.  In APP
 * progress mode, drives the device when the queue is empty (one progress
 * round per call: call it in a loop).  Any thread. */
int mroce_poll_cq(mroce_cq *cq, int n, struct mroce_wc *wc);
/* A file descriptor that becomes readable when completions are waiting
 * (an eventfd, written when the CQ turns non-empty); for epoll users.
 * After it fires: mroce_cq_ack_event(), then poll the CQ until empty (the
 * next event comes only after the CQ has been seen empty).  In THREAD mode
 * the progress thread writes it; in APP mode only progress calls do, so
 * also watch mroce_device_fd().  The fd belongs to the CQ (closed with it). */
int mroce_cq_fd(mroce_cq *cq);
void mroce_cq_ack_event(mroce_cq *cq);
/* ibv_req_notify_cq's arming for mroce_cq_fd() users: returns the
 * completions waiting (>= 0) or an error.  With some waiting the fd is
 * made readable now; with none, a stale signal is cleared and the next
 * completion signals, whether or not the CQ was polled empty. */
int mroce_cq_arm(mroce_cq *cq);
/* ibv_req_notify_cq(cq, 1): the fd becomes readable at the next completion
 * pushed after this call that is solicited (MROCE_WC_SOLICITED: the sender
 * set MROCE_SEND_SOLICITED) or unsuccessful; others, and those already
 * waiting, do not signal.  Returns the completions waiting or an error.
 * mroce_cq_arm() goes back to signalling on every completion. */
int mroce_cq_arm_solicited(mroce_cq *cq);
/* Block up to timeout_ms (-1: forever) until a completion is waiting;
 * drives progress meanwhile in APP mode (ppoll on the receive socket until
 * the next engine deadline).  Returns 1, 0 on timeout, or an error.  Do not
 * mix with an epoll user of mroce_cq_fd() on the same CQ (it consumes
 * stale events). */
int mroce_cq_wait(mroce_cq *cq, int timeout_ms);

/* --- queue pairs --- */
struct mroce_qp_init_attr {
    mroce_cq *send_cq, *recv_cq;
    struct mre_qp_attr eng; /* engine attributes; mroce_qp_init_attr_default
                                 fills them: the engine's defaults except
                                 path_burst 8 (GSO), min_rto 1 ms and
                                 target_qdelay 50 us (kernel UDP timing,
                                 see src/lib/qp.c); send_cq,
                                 recv_cq, pd, entropy_base/span are set by
                                 the library (entropies = the device's
                                 source ports); eng.max_streams > 1
                                 gives the QP that many ordered streams
                                 (SEM-30..39) */
};
void mroce_qp_init_attr_default(struct mroce_qp_init_attr *attr);
int mroce_create_qp(mroce_pd *pd, const struct mroce_qp_init_attr *attr,
                    mroce_qp **pqp);
/* Destroys the QP; outstanding work is dropped without completions
 * (flush it first with mroce_modify_qp_error() if completions are wanted). */
int mroce_destroy_qp(mroce_qp *qp);
uint32_t mroce_qp_num(const mroce_qp *qp);
enum mroce_qp_state mroce_qp_get_state(const mroce_qp *qp);

/* Active side: handshake with the QP listening at host:port (port 0 =
 * MROCE_UDP_PORT; remote_qpn 0 = any listener there); blocks up to
 * timeout_ms, driving progress (timeout_ms also becomes the engine's
 * handshake_timeout; -1 keeps the QP's handshake_timeout, default 1 s).
 * 0; MROCE_EUNREACH (ICMP: nothing listens on that port/host, returned as
 * soon as it arrives); MROCE_ETIMEDOUT (no answer; the QP is then in
 * ERROR); MROCE_EADDR (host not parsable for the device's family);
 * MROCE_ESTATE (QP not in RESET).  Work posted meanwhile is flushed on
 * failure. */
int mroce_connect(mroce_qp *qp, const char *host, uint16_t port,
                  uint32_t remote_qpn, int timeout_ms);
/* Passive side: listen (if in RESET) and wait for the next CONNECT_REQ for
 * this device (or this QP's number); blocks up to timeout_ms (-1 forever).
 * 0 (connected), MROCE_ETIMEDOUT (still listening: call again to go on
 * waiting), MROCE_ESTATE. */
int mroce_accept(mroce_qp *qp, int timeout_ms);
/* Non-blocking halves, for event loops: start, then watch the state. */
int mroce_connect_start(mroce_qp *qp, const char *host, uint16_t port,
                        uint32_t remote_qpn);
int mroce_listen(mroce_qp *qp);
/* Orderly close after outstanding work; blocks up to timeout_ms.  0 once
 * CLOSED (also if the peer closed first), MROCE_ETIMEDOUT, MROCE_ESTATE
 * (not connected, or the QP went to ERROR). */
int mroce_disconnect(mroce_qp *qp, int timeout_ms);
/* Linger before destroying a connected QP (REL-41), as TCP's TIME_WAIT
 * keeps answering after close: the QP goes on receiving and answering (in
 * APP mode this call drives progress) until nothing has arrived for it for
 * a quiet period of its max_rto plus 8 smoothed RTTs (10 ms at least: the
 * peer's retransmissions come at most max_rto apart), or the QP leaves
 * RTS, or max_ms has passed.  So a peer whose last message's ACK was lost has
 * its retransmission ACKed instead of retrying until RETRY_EXC_ERR.  It
 * keeps nothing beyond the QP itself; max_ms 0 returns at once.  0, or
 * MROCE_EINVAL (max_ms < 0).
 * Call it where the program would close (verbs' ibv_destroy_qp does). */
int mroce_qp_linger(mroce_qp *qp, int max_ms);
/* Move to ERROR, flushing outstanding work with WR_FLUSH_ERR. */
int mroce_modify_qp_error(mroce_qp *qp);

/* Attributes that may change after creation (ibv_modify_qp style); the
 * values equal the engine's enum mre_qp_mod.  "Before connect" ones
 * return MROCE_ESTATE later. */
enum mroce_qp_attr_mask {
    MROCE_QP_ATTR_RETRY = 1,   /* retry_cnt, rnr_retry */
    MROCE_QP_ATTR_TIMEOUT = 2, /* min_rto, max_rto, handshake_timeout,
                                    peer_timeout */
    MROCE_QP_ATTR_CC = 4,      /* cc_algo, init_cwnd, target_qdelay
                                    (before connect only) */
    MROCE_QP_ATTR_PATHS = 8,   /* npaths, path_burst (before connect only) */
    MROCE_QP_ATTR_MTU = 16,    /* mtu (before connect only) */
    MROCE_QP_ATTR_ACCESS = 32, /* deny_remote (any state) */
};
/* query_qp returns the engine attributes with send_cq/recv_cq NULL. */
int mroce_query_qp(const mroce_qp *qp, struct mre_qp_attr *attr);
int mroce_modify_qp(mroce_qp *qp, const struct mre_qp_attr *attr,
                    unsigned mask);

/* Post work (ibv_post_send semantics: a linked list; on error *bad_wr names
 * the first WR not posted and the return value says why: MROCE_ESTATE for a
 * QP not connected/connecting (e.g. in ERROR), MROCE_EACCESS for an lkey or
 * range outside a region, MROCE_EFULL, MROCE_EINVAL (also: a `stream` the
 * connection does not carry), MROCE_ERANGE).  A WR's `stream` (0 default)
 * orders it only with the WRs of that stream: completions, on both sides,
 * come in each stream's posting order and report it in mroce_wc.stream;
 * a lost packet or a missing receive of one stream holds no other.
 * post_send transmits what the window allows at once, in the calling
 * thread. */
int mroce_post_send(mroce_qp *qp, struct mroce_send_wr *wr,
                    struct mroce_send_wr **bad_wr);
int mroce_post_recv(mroce_qp *qp, struct mroce_recv_wr *wr,
                    struct mroce_recv_wr **bad_wr);

/* --- counters --- */
int mroce_qp_get_counters(const mroce_qp *qp, struct mroce_qp_counters *c);
/* Up to n path slots; returns the number of slots. */
int mroce_qp_path_stats(const mroce_qp *qp, struct mroce_path_stats *ps, int n);
/* Human-readable dump of the QP's and its paths' counters. */
void mroce_qp_dump_counters(const mroce_qp *qp, void *file /* FILE* */);

#ifdef __cplusplus
}
#endif
#endif /* MROCE_MROCE_H */
