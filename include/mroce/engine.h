/*
 * mroce/engine.h - the MetaRoCE protocol engine: a software NIC with no I/O.
 *
 * Its names carry the prefix `mre_` (MetaRoCE engine); the work requests,
 * completions and counters it shares with libmroce are the `mroce_` types of
 * mroce/types.h.  Applications normally use libmroce (mroce/mroce.h, the
 * verbs-style `mroce_` API), which runs this engine over UDP sockets; the
 * engine is for those who bring their own I/O: the network model, the
 * simulator, a NIC's firmware.
 *
 * The engine is sans-IO in the manner of ngtcp2: it never reads a clock,
 * opens a socket, starts a thread or calls malloc.  Every entry point takes
 * the current time (`now`, nanoseconds on any monotonic clock the caller
 * chooses); memory comes from a caller-supplied allocator; randomness (tokens,
 * fresh path entropies) from a caller-supplied callback.  The caller:
 *
 *   - feeds each received datagram to mre_ep_recv() with its ECN bits;
 *   - drains packets to send with mre_ep_write_pkt(), each tagged with the
 *     peer address and the path entropy (the UDP source port to use);
 *   - sleeps until mre_ep_expiry() and then calls mre_ep_handle_expiry();
 *   - posts work with mre_qp_post_send()/mre_qp_post_recv() and reaps
 *     completions with mre_cq_poll().
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
#include <mroce/types.h>

#ifdef __cplusplus
extern "C" {
#endif

const char *mre_strerror(int err);

/* Caller-supplied allocator; the engine's only source of memory. */
struct mre_mem {
    void *(*calloc)(size_t nmemb, size_t size, void *user);
    void (*free)(void *ptr, void *user);
    void *user;
};

/* A peer address as opaque bytes: the engine compares and copies it but never
 * interprets it.  The UDP layer stores a sockaddr in it; the network model a
 * host index. */
struct mre_addr {
    uint8_t len; /* bytes used in data[] */
    uint8_t data[31];
};

typedef struct mre_ep mre_ep;
typedef struct mre_qp mre_qp;
typedef struct mre_cq mre_cq;
typedef struct mre_mr mre_mr;

/* Planes (docs/spec/multipath.md, Planes): parallel networks a host
 * attaches to, one local address per plane.  Plane i of one host talks to
 * plane i of its peer only. */
#define MROCE_EP_MAX_PLANES 8
/* Where a plane receives, as the PLANES CONN extension carries it. */
struct mre_plane_addr {
    uint8_t addr[16]; /* IPv6, or IPv4-mapped (::ffff:a.b.c.d) */
    uint16_t port;    /* UDP port, host order */
};

/* Secure mode (docs/spec/security.md section 6): the caller's crypto.
 * The engine holds no key and links no crypto library; it builds the
 * derivation contexts, nonces and additional data the spec defines and
 * asks these callbacks to do the cryptography (libmroce: OpenSSL EVP,
 * src/lib/secure_evp.c).  Each returns 0 on success, negative on failure. */
struct mre_crypto {
    /* The packet key of SEC-15, HKDF-Expand(PRK, info, L) for suite's L,
     * ready for seal/open: *key is the caller's handle, freed with
     * key_free. */
    int (*key_new)(void *user, uint8_t suite, const uint8_t *info,
                   size_t info_len, void **key);
    void (*key_free)(void *user, void *key);
    /* AES-GCM with the 12-byte nonce: encrypt in[0..len) to out (out may
     * be in; len 0 for GMAC), authenticating aad[0..aad_len) too, and
     * write the 16-byte tag. */
    int (*seal)(void *user, void *key, const uint8_t *nonce, const uint8_t *aad,
                size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                uint8_t *tag);
    /* The inverse: 0 only if the tag verifies (then out holds the
     * plaintext). */
    int (*open)(void *user, void *key, const uint8_t *nonce, const uint8_t *aad,
                size_t aad_len, const uint8_t *in, size_t len, uint8_t *out,
                const uint8_t *tag);
    /* The SECURE extension's MAC (SEC-14, WIRE-43): the first 16 bytes of
     * HMAC-SHA256 under the handshake key over msg[0..len). */
    int (*hs_mac)(void *user, const uint8_t *msg, size_t len, uint8_t *mac);
    /* Optional, for master key rotation (SEC-31..SEC-33); both NULL: one
     * master key, generation 0.  key_new_gen is key_new under the master
     * key of generation gen (negative if the caller holds none); hs_check
     * is 0 if mac is the SECURE extension's MAC of msg under the handshake
     * key of any master key the caller holds. */
    int (*key_new_gen)(void *user, uint8_t gen, uint8_t suite,
                       const uint8_t *info, size_t info_len, void **key);
    int (*hs_check)(void *user, const uint8_t *msg, size_t len,
                    const uint8_t *mac);
    void *user;
};

/* A QP's secure mode (docs/spec/security.md SEC-34, SEC-35). */
enum mre_qp_secure {
    MRE_QP_SEC_DEFAULT = 0, /* the endpoint's: secure iff it has a suite */
    MRE_QP_SEC_ON = 1,      /* secure (the endpoint needs a suite) */
    MRE_QP_SEC_OFF = 2,     /* clear, even on a secure endpoint */
    MRE_QP_SEC_ANY = 3,     /* a listener: as the CONNECT_REQ asks; a
                               requester: as MRE_QP_SEC_DEFAULT */
};

/* Endpoint configuration; mre_ep_config_default() fills defaults. */
struct mre_ep_config {
    struct mre_mem mem;
    /* Fill buf with len random bytes (tokens, entropies, start PSNs). */
    void (*rand)(uint8_t *buf, size_t len, void *user);
    void *rand_user;
    uint32_t max_qps;         /* default 1024 */
    uint32_t rx_credit_bytes; /* receiver-driven mode: bytes per RTT this
                                 endpoint lets all senders have in flight to
                                 it together; 0 = credits off */
    /* Planes: 0 or 1 = one plane, as an endpoint without planes (no
     * PLANES extension is sent).  With more, planes[i] is where local
     * plane i receives, sent to peers in the handshake (CONN-28), and
     * plane_addr turns a peer's entry into the address format of
     * mre_tx_info.to (nonzero: unusable, the plane is not used). */
    uint8_t nplanes; /* 0..MROCE_EP_MAX_PLANES */
    struct mre_plane_addr planes[MROCE_EP_MAX_PLANES];
    int (*plane_addr)(struct mre_addr *out, const struct mre_plane_addr *in,
                      void *user);
    void *plane_user;
    uint32_t rx_rate_mbps;    /* receive rate, Mbit/s, that rate hints
                                 divide among the active senders (CC-25);
                                 default 100000 (100 Gbit/s); 0 = give no
                                 hints (ACK Credit stays 0xFFFFFFFF) */
    mroce_tstamp rate_active; /* ns a sender counts as active after its
                                 last data packet ("a few RTTs", CC-25);
                                 default (and 0) 50 us */
    /* Secure mode: 0 (default) off; otherwise the suite (enum
     * mrw_sec_suite) of every QP of the endpoint, with crypto's callbacks
     * all set (SEC-11). */
    uint8_t sec_suite;
    struct mre_crypto crypto;
    uint64_t sec_rotate_pkts; /* packets per key epoch before the sender
                                 moves to the next (SEC-22); 0: 2^30 */
};
void mre_ep_config_default(struct mre_ep_config *cfg);

/* The engine's limit on max_streams (the wire allows MROCE_MAX_STREAMS):
 * a QP's stream table costs 32 bytes a stream, allocated with the QP. */
#define MRE_MAX_STREAMS 1024

/* The largest QP window (REL-46): 2^18 PSNs, a GiB in flight at MTU 4096,
 * the bandwidth-delay product of 400 Gbit/s over 20 ms; PSN comparisons
 * stay within 2^31 (REL-3).  Each PSN of the window costs the QP about
 * 50 bytes of engine memory. */
#define MRE_MAX_WINDOW 262144u

/* rnr_retry value that retries RNR NAKs forever (verbs' 7, REL-37). */
#define MROCE_RNR_RETRY_FOREVER 7

/* Queue pair attributes; mre_qp_attr_default() fills defaults.  Times in ns. */
struct mre_qp_attr {
    mre_cq *send_cq;
    mre_cq *recv_cq;
    uint32_t max_send_wr;   /* rounded up to a power of two; default 256 */
    uint32_t max_recv_wr;   /* rounded up to a power of two; default 256 */
    uint16_t mtu;           /* payload bytes per packet; default 4096 */
    uint16_t npaths;        /* entropies to spray over, 1..256; default 64 */
    uint32_t window;        /* PSNs in flight / tracked, power of 2,
                               64..MRE_MAX_WINDOW; 1024 */
    uint32_t max_rd_atomic; /* outstanding READ/atomics; default 16 */
    uint8_t retry_cnt;      /* timeouts in a row a QP survives at least;
                               it fails only once the peer has also been
                               silent for peer_timeout (LOSS-14); 7 */
    uint8_t rnr_retry;      /* RNR rounds per message before RNR_RETRY_EXC;
                               MROCE_RNR_RETRY_FOREVER (7, the default)
                               retries forever, as in verbs (REL-37) */
    uint8_t cc_algo;        /* enum mroce_cc_algo */
    uint8_t credit_mode;    /* 1: ask the receiver for credits */
    uint8_t rate_hint;      /* 2 (default): set RATE in CONNECT and, if
                               the peer does too, follow its rate hints,
                               send it ours (CC-24) and ask for a share
                               before data after an idle spell, the first
                               packet going with the request (CC-30..38);
                               3: ask, no data before the answer; 1:
                               hints without asking; 0: off */
    uint8_t path_cwnd;      /* 1 (default): a window per path as well, if
                               the algorithm keeps them (CC-20); 0: one
                               window per connection only */
    mroce_tstamp min_rto;   /* default 200 us */
    mroce_tstamp max_rto;   /* default 100 ms */
    mroce_tstamp max_ack_delay;     /* receiver's ACK coalescing bound; 10 us */
    mroce_tstamp handshake_timeout; /* give up connecting; default 1 s */
    uint32_t ooo_thresh;        /* out-of-order loss threshold in PSNs; 64 */
    uint32_t init_cwnd;         /* bytes; default 64 KiB */
    mroce_tstamp target_qdelay; /* CC: queuing allowed per path direction
                                   (targets base_rtt + 2x with CE, + 8x
                                   without, CC-7); 5 us */
    uint16_t entropy_base;      /* entropies are drawn from [base, base+span) */
    uint16_t entropy_span;     /* default 49152 + 16384 (the ephemeral range) */
    uint8_t path_burst;        /* consecutive packets per path pick, 1..64;
                               1 (per-packet spraying); a batching datapath
                               (UDP GSO) uses more */
    uint8_t path_reuse;        /* 1: a new burst reuses a slot whose ACK came
                               back clean (PATH-16, recycled entropies);
                               0 (default): round robin only.  libmroce
                               sets 1 */
    mroce_tstamp peer_timeout; /* a peer silent this long fails the QP, and
                                  no shorter silence does (REL-32); the
                                  keepalive starts after a quarter of it
                                  (REL-34); default 5 s.  0: retry_cnt
                                  timeouts alone fail it (verbs' rule) and
                                  no keepalive is sent */
    uint32_t pd;               /* protection domain: remote accesses through
                               this QP may only use regions of the same PD
                               (mre_mr_reg_pd); 0 by default */
    uint8_t deny_remote;       /* MROCE_ACCESS_REMOTE_* rights refused to
                               the peer through this QP, whatever the
                               region grants (verbs' qp_access_flags,
                               inverted): NAK REMOTE_ACCESS_PERM; 0 */
    uint8_t secure;            /* enum mre_qp_secure (SEC-34): secure mode
                               of this QP's connections; 0: the endpoint's */
    uint16_t max_streams;      /* ordered streams the QP carries, 1..
                               MRE_MAX_STREAMS (0 counts as 1); default 1.
                               The connection carries the smaller of both
                               sides' (SEM-31); work requests name one in
                               mroce_send_wr.stream / mroce_recv_wr.stream */
    uint8_t sack_words;        /* SACK words this QP accepts in an ACK,
                               stated in its CONNECT (WIRE-52, REL-42):
                               0 (default): window / 32, at most 255;
                               1..8: no extension, the 256-PSN span */
};
void mre_qp_attr_default(struct mre_qp_attr *attr);

/* Per-packet metadata in and out of the engine. */
enum mre_ecn {
    MROCE_ECN_NOT_ECT = 0,
    MROCE_ECN_ECT1 = 1,
    MROCE_ECN_ECT0 = 2,
    MROCE_ECN_CE = 3,
};
struct mre_rx_info {
    struct mre_addr from; /* who sent it (needed for CONNECT_REQ) */
    uint8_t ecn;          /* enum mre_ecn of the received IP header */
    uint8_t plane;        /* local plane (socket) it arrived on; 0 with
                             one plane.  Zero the struct: plane 0 is the
                             single-plane behaviour (PATH-17). */
};
struct mre_tx_info {
    struct mre_addr to; /* destination */
    uint16_t entropy;   /* path: the UDP source port to send from */
    uint8_t ecn;        /* ECN codepoint to set (ECT(0) for all) */
    uint8_t plane;      /* local plane (socket) to send from; `to` is the
                           peer's address on that plane.  Always 0 with
                           one plane (PATH-17) */
    uint32_t qp_num;    /* local QP that produced it (0: endpoint) */
};

/* --- endpoint --- */
int mre_ep_new(mre_ep **pep, const struct mre_ep_config *cfg);
/* Frees the endpoint and every object created from it. */
void mre_ep_del(mre_ep *ep);
/* Feed one received datagram (UDP payload).  Never fails: bad input is
 * dropped and counted.  Returns 0. */
int mre_ep_recv(mre_ep *ep, const uint8_t *pkt, size_t len,
                const struct mre_rx_info *info, mroce_tstamp now);
/* Write the next packet to send into buf.  Returns its length, 0 if nothing
 * is to be sent now, or MROCE_ENOBUF if cap is smaller than the MTU needs. */
int mre_ep_write_pkt(mre_ep *ep, uint8_t *buf, size_t cap,
                     struct mre_tx_info *info, mroce_tstamp now);
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
struct mre_tx_zc {
    const uint8_t *payload;
    size_t payload_len;
};
int mre_ep_write_pkt_zc(mre_ep *ep, uint8_t *buf, size_t cap,
                        struct mre_tx_info *info, struct mre_tx_zc *zc,
                        mroce_tstamp now);
/* Earliest time at which mre_ep_handle_expiry() has work to do. */
mroce_tstamp mre_ep_expiry(const mre_ep *ep);
void mre_ep_handle_expiry(mre_ep *ep, mroce_tstamp now);
/* 1 if mre_ep_write_pkt() may have a packet now (cheap hint). */
int mre_ep_want_write(const mre_ep *ep);
void mre_ep_get_counters(const mre_ep *ep, struct mroce_ep_counters *c);
/* Master key rotation (SEC-32): from now on every connection's sender
 * moves to its next epoch under the master key of generation gen, at its
 * next packet, and new connections start under it.  The caller installs
 * that key for receiving (crypto.key_new_gen) on every endpoint of the
 * domain first.  MROCE_EINVAL: not secure, or no key_new_gen/hs_check. */
int mre_ep_sec_use_gen(mre_ep *ep, uint8_t gen);

/* --- memory regions --- */
/* Registers [addr, addr + len) with the rights in access (enum
 * mroce_access).  MROCE_EINVAL: NULL addr, len 0, an unknown right, or
 * REMOTE_WRITE / REMOTE_ATOMIC without LOCAL_WRITE; MROCE_EFAULT: the range
 * runs past the end of the address space (SEM-28).  The engine makes no OS
 * call, so it cannot tell whether the memory is mapped: layers that can
 * (libmroce) check that before registering, and memory must stay mapped
 * with those rights until deregistration (SEM-29). */
int mre_mr_reg(mre_ep *ep, void *addr, size_t len, unsigned access,
               mre_mr **pmr);
/* The same in protection domain pd (mre_mr_reg uses domain 0): only QPs
 * created with attr.pd == pd may use it, locally or remotely. */
int mre_mr_reg_pd(mre_ep *ep, uint32_t pd, void *addr, size_t len,
                  unsigned access, mre_mr **pmr);
/* The argument checks of mre_mr_reg_pd() alone, registering nothing: 0,
 * MROCE_EINVAL or MROCE_EFAULT, as it would return.  For layers that check
 * more before they register. */
int mre_mr_reg_check(const void *addr, size_t len, unsigned access);
int mre_mr_dereg(mre_mr *mr);
uint32_t mre_mr_lkey(const mre_mr *mr);
uint32_t mre_mr_rkey(const mre_mr *mr);

/* --- completion queues --- */
int mre_cq_new(mre_ep *ep, uint32_t depth, mre_cq **pcq);
int mre_cq_del(mre_cq *cq); /* MROCE_EBUSY while a QP uses it */
/* Returns the number of completions written to wc (0..n). */
int mre_cq_poll(mre_cq *cq, int n, struct mroce_wc *wc);
/* Completions waiting (0 for NULL); lets a datapath signal "CQ became
 * non-empty" without taking entries out. */
uint32_t mre_cq_count(const mre_cq *cq);
/* Solicited (MROCE_WC_SOLICITED) or unsuccessful completions pushed since
 * the CQ was created, wrapping (0 for NULL): a change since a mark is
 * verbs' solicited event. */
uint32_t mre_cq_solicited(const mre_cq *cq);

/* --- queue pairs --- */
int mre_qp_new(mre_ep *ep, const struct mre_qp_attr *attr, mre_qp **pqp);
/* Destroys the QP; outstanding work is dropped without completions. */
void mre_qp_del(mre_qp *qp);
uint32_t mre_qp_num(const mre_qp *qp);
enum mroce_qp_state mre_qp_state(const mre_qp *qp);
/* Active side: start the handshake towards `to`.  remote_qpn 0 means any
 * listening QP there. */
int mre_qp_connect(mre_qp *qp, const struct mre_addr *to, uint32_t remote_qpn,
                   mroce_tstamp now);
/* Passive side: this QP accepts the next CONNECT_REQ sent to QPN 0 or to it. */
int mre_qp_listen(mre_qp *qp, mroce_tstamp now);
/* Orderly close once outstanding work has completed. */
int mre_qp_disconnect(mre_qp *qp, mroce_tstamp now);
/* Move to ERROR and flush outstanding work with WR_FLUSH_ERR. */
int mre_qp_set_error(mre_qp *qp);
uint32_t mre_qp_remote_qpn(const mre_qp *qp);
/* The first WR with MROCE_SEND_INLINE allocates the QP's inline copies
 * (MROCE_MAX_INLINE bytes per send WR): it alone can fail MROCE_ENOMEM.
 * A WR whose stream is not below the connection's stream count (before the
 * handshake: attr.max_streams) is refused with MROCE_EINVAL, by both
 * calls; a WR posted while connecting on a stream the peer then does not
 * accept fails the QP with LOC_QP_OP_ERR on that WR (SEM-30, SEM-31). */
int mre_qp_post_send(mre_qp *qp, struct mroce_send_wr *wr,
                     struct mroce_send_wr **bad_wr, mroce_tstamp now);
int mre_qp_post_recv(mre_qp *qp, struct mroce_recv_wr *wr,
                     struct mroce_recv_wr **bad_wr);
void mre_qp_get_counters(const mre_qp *qp, struct mroce_qp_counters *c);
/* Fills up to n path slots; returns the number of slots (npaths). */
int mre_qp_path_stats(const mre_qp *qp, struct mroce_path_stats *ps, int n);
/* Per-plane state of a connection (plane.c). */
struct mre_plane_stats {
    uint8_t up;       /* 0 while the plane is down (PATH-21) */
    uint16_t paths;   /* path slots on the plane */
    uint64_t tx_pkts; /* packets sent on it */
    uint64_t rx_acks; /* ACKs and NAKs that arrived over it */
    uint32_t downs;   /* times it was marked down */
    uint32_t probes;  /* packets sent on it while down (PATH-22) */
    uint32_t dead;    /* slots retired since the last ACK over it */
    uint32_t lossy;   /* slots with a loss since then (PATH-25) */
    uint32_t adopted; /* times marked down from the endpoint's table,
                         another connection's finding (PATH-27) */
    uint32_t moved;   /* slots moved off it to other planes (PATH-29, 31) */
};
/* Fills up to n planes; returns the connection's plane count (1 before the
 * handshake or without planes: plane 0 then holds the whole QP). */
int mre_qp_plane_stats(const mre_qp *qp, struct mre_plane_stats *st, int n);
const struct mre_qp_attr *mre_qp_get_attr(const mre_qp *qp);

/* Attributes mre_qp_modify() may change, by mask bit. */
enum mre_qp_mod {
    MROCE_QP_MOD_RETRY = 1,   /* retry_cnt, rnr_retry: any state */
    MROCE_QP_MOD_TIMEOUT = 2, /* min_rto, max_rto, handshake_timeout,
                                 peer_timeout: any
                                 state; used from the next timer on */
    MROCE_QP_MOD_CC = 4,      /* cc_algo, init_cwnd, target_qdelay: RESET */
    MROCE_QP_MOD_PATHS = 8,   /* npaths, path_burst, path_reuse: RESET */
    MROCE_QP_MOD_MTU = 16,    /* mtu: RESET */
    MROCE_QP_MOD_ACCESS = 32, /* deny_remote: any state; from the next
                                 packet on */
};
/* Changes the attributes named by mask (enum mre_qp_mod) to attr's
 * values, checked as mre_qp_new() checks them.  MROCE_EINVAL (bad value
 * or mask), MROCE_ESTATE (a RESET-only attribute after connect/listen),
 * MROCE_ENOMEM.  Nothing changes on error. */
int mre_qp_modify(mre_qp *qp, const struct mre_qp_attr *attr, unsigned mask);

#ifdef __cplusplus
}
#endif
#endif /* MROCE_ENGINE_H */
