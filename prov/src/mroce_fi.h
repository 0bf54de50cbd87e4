/*
 * mroce_fi.h - the mroce libfabric provider's objects and the functions
 * its files share.  The wire format is in mroce_proto.h, the matching
 * queues in mroce_tag_match.h.
 *
 * Shape.  A domain is one libmroce device (one UDP address: IP + port,
 * the fi_info's source address), with one protection domain and one
 * libmroce completion queue.  With shared connections (the default,
 * mfi_param.shared_conn, mroce_shared.c) every endpoint lives on that
 * device: its name is the domain's address plus its index, the domain
 * keeps one QP per peer device (struct mfi_dqp) and each endpoint a
 * receive side and views of it (struct mfi_conn), stream 1 + j carrying
 * what is addressed to endpoint j.  With FI_MROCE_SHARED_CONN=0 the
 * domain lends its device to its first endpoint and every further
 * endpoint (domain_attr.ep_cnt MFI_EP_CNT) opens a device of its own,
 * with a QP per peer endpoint (one or two: the one it opened to send, and
 * the one the peer opened, which it accepted); memory registrations
 * belong to the domain's device, so the name of an endpoint on a device
 * of its own carries its domain device's port (mfi_name_set_dom), and an
 * initiator sends READs and WRITEs addressed to such an endpoint over a
 * QP to that device instead (mfi_conn_rma_peer), their RMA_EVENT notices
 * and CQ data to the endpoint itself.  In both, an endpoint owns its
 * peers, its conns, its bounce buffers and its matching queues, and the
 * provider executes atomics itself against the domain's registrations,
 * on any endpoint.
 *
 * Files, one per fabric object as in prov/rxd:
 *   mroce_init.c       fi_prov_ini, parameters, fi_getinfo
 *   mroce_fabric.c     fabric
 *   mroce_eq.c         event queues (application-written events only)
 *   mroce_domain.c     domain (device, PD, CQ), progress thread
 *   mroce_av.c         address vectors (table and map)
 *   mroce_cq.c         completion queues, error entries
 *   mroce_mr.c         memory registration
 *   mroce_ep.c         endpoints: bind, enable, close, getname, cancel,
 *                      buffers, progress (libmroce completions -> protocol)
 *   mroce_conn.c       peers and QPs: connect on first use, accept, HELLO
 *   mroce_shared.c     shared connections: the domain's QPs, streams,
 *                      completion routing
 *   mroce_msg.c        FI_MSG and the send/receive engine under FI_TAGGED
 *   mroce_flow.c       a full send queue (work waits and is retried) and
 *                      unexpected messages past the held-buffer bound
 *   mroce_tagged.c     FI_TAGGED entry points, peek/claim
 *   mroce_rma.c        FI_RMA: read, write, writedata
 *   mroce_atomic.c     FI_ATOMIC: executed by the target's provider
 *   mroce_coll.c       FI_COLLECTIVE entry points (all -FI_ENOSYS)
 *   mroce_tag_match.c  matching queues (pure data structure)
 *   mroce_introspect.c fi_open_ops on a domain: connection counts
 *   mroce_cntr.c       counters and poll sets
 *   mroce_mrecv.c      FI_MULTI_RECV buffers
 *   mroce_rma_event.c  FI_RMA_EVENT: the target counts and reports
 *
 * Locking: one mutex per domain, taken by every entry point (so
 * FI_THREAD_SAFE holds) and by the auto-progress thread.  libmroce calls
 * are made with it held; libmroce never calls back.
 */
#ifndef MROCE_FI_H
#define MROCE_FI_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <mroce/mroce.h>

#include "mroce_proto.h"
#include "mroce_tag_match.h"

#pragma GCC visibility push(hidden)

#define MFI_NAME "mroce"
#define MFI_VERSION FI_VERSION(1, 0)
#define MFI_FI_VERSION FI_VERSION(1, 17)
#define MFI_IOV_LIMIT 4  /* iovs per message (engine MROCE_MAX_SGE) */
#define MFI_TX_SIZE 256  /* operations in flight per endpoint */
#define MFI_RX_SIZE 1024 /* posted receives per endpoint */
#define MFI_MAX_MSG MFI_PROTO_MAX_MSG
#define MFI_EP_CNT 64      /* endpoints per domain */
#define MFI_LISTENERS 4    /* QPs kept listening for new peers */
#define MFI_CQ_DEPTH 65536 /* libmroce CQ shared by all QPs */
#define MFI_BUF_SLAB \
    64 /* bounce buffers allocated (and registered)
                                  at a time */

extern struct fi_provider mfi_prov;

#define MFI_WARN(sub, ...) FI_WARN(&mfi_prov, sub, __VA_ARGS__)
#define MFI_INFO(sub, ...) FI_INFO(&mfi_prov, sub, __VA_ARGS__)

/* Parameters (fi_info -e; environment FI_MROCE_<NAME>), read once. */
struct mfi_params {
    char *iface;        /* local IP address to bind; "127.0.0.1" */
    int paths;          /* paths (UDP source ports) per QP; 16 */
    int mtu;            /* MetaRoCE MTU, payload bytes per packet; 0: from
                          the interface (mfi_domain_mtu) */
    char *cc;           /* congestion control: "delay_ecn" or "none" */
    int eager_size;     /* largest message sent eagerly; 8192 */
    int rx_depth;       /* bounce buffers posted per QP; 32 */
    int unexp_max;      /* bounce buffers that may hold unexpected messages
                          before they are copied out; 1024 */
    int unexp_copy_max; /* bytes of unexpected messages copied out of
                          bounce buffers before back-pressure; 64 MiB */
    int conn_timeout;   /* ms to connect before failing sends; 2000 */
    int rnr_retry;      /* RNR NAK rounds before a send fails; 255 */
    int retry_cnt;      /* consecutive timeouts a QP survives at least; 12 */
    int peer_timeout;   /* ms of peer silence before a QP fails; 5000 */
    int keeper_us;      /* keeper thread period (manual progress); 500,
                          0 = no keeper */
    int port_base;      /* first UDP port tried for a domain; 0 = random */
    int rndv_seg;       /* rendezvous READ slice (bytes; 4 READs of a
                          message in flight); 256 KiB, 0 = one READ */
    int shared_conn;    /* 1: every endpoint on the domain's device, one
                          QP per peer device (mroce_shared.c); 0: a
                          device per endpoint, a QP per endpoint pair */
};
extern struct mfi_params mfi_param;

struct mfi_ep;
struct mfi_cq;
struct mfi_dqp;

struct mfi_fabric {
    struct fid_fabric fab;
    int refs; /* domains open */
};

struct mfi_domain {
    struct fid_domain dom;
    struct mfi_fabric *fab;
    pthread_mutex_t lock;
    mroce_device *dev;
    mroce_pd *pd;
    mroce_cq *cq;                 /* libmroce CQ for every QP of the device */
    struct sockaddr_storage addr; /* our name (IP + the device's port) */
    int mtu;                      /* MetaRoCE MTU of our QPs (mfi_domain_mtu) */
    size_t addrlen;
    uint32_t addr_format;
    enum fi_threading threading;
    enum fi_progress data_progress;
    uint64_t mr_mode;
    struct mfi_ep *eps;    /* the endpoints (ep->dom_next) */
    struct mfi_ep *dev_ep; /* the endpoint on the domain's device */
    int nep;
    /* Shared connections (mfi_param.shared_conn, mroce_shared.c): the
     * domain's QPs (one per peer device, plus listeners), its endpoints
     * by index (the stream 1 + i that carries what is addressed to
     * endpoint i), and the buffer memory of closed endpoints, whose
     * receives stay posted on the QPs until they are destroyed. */
    int shared;
    struct mfi_dqp *dqps;
    struct mfi_ep *ep_by_idx[MFI_EP_CNT];
    struct mfi_slab *orphans;
    size_t norphans;
    uint32_t ep_gen;
    int polling;            /* mfi_shared_poll is handling completions */
    uint32_t superseded;    /* QPs lost CONN-37's tie-break, not closed */
    uint32_t retired;       /* QPs closed for CONN-37, ever */
    struct mfi_ep *zombies; /* closed endpoints with work in flight */
    uint64_t rx_orphaned;   /* messages dropped: for a closed endpoint, or
                             from a peer that never named its device */
    struct mfi_mr *mrs;     /* open registrations (atomic targets are checked
                          against them) */
    int refs;               /* AVs, CQs, MRs, endpoints open */
    pthread_t thread;       /* auto progress, or the keeper (manual progress) */
    int thread_on;
    atomic_int stop;
    _Atomic uint64_t progress_seq; /* progress calls so far (the keeper
                                      compares; a counter, not a clock read,
                                      on every CQ poll) */
};

static inline void mfi_lock(struct mfi_domain *d)
{
    pthread_mutex_lock(&d->lock);
}
static inline void mfi_unlock(struct mfi_domain *d)
{
    pthread_mutex_unlock(&d->lock);
}

/* --- address vectors --- */
struct mfi_av_ent {
    struct sockaddr_storage addr;
    socklen_t len; /* 0: slot removed */
};
struct mfi_av {
    struct fid_av av;
    struct mfi_domain *dom;
    enum fi_av_type type;
    struct mfi_av_ent *tab;
    size_t n, cap;
    uint32_t gen; /* bumped on every insert/remove (peer caches) */
};
/* The slot's address or NULL (bad or removed fi_addr).  Lock held. */
const struct mfi_av_ent *mfi_av_get(struct mfi_av *av, fi_addr_t a);
/* fi_addr of addr in av, FI_ADDR_NOTAVAIL if absent.  Lock held. */
fi_addr_t mfi_av_find(struct mfi_av *av, const struct sockaddr *sa,
                      socklen_t len);
int mfi_av_open(struct fid_domain *d, struct fi_av_attr *attr,
                struct fid_av **av, void *context);
/* Addresses compare by family, port and IP, and with shared connections
 * by the endpoint index their names carry. */
int mfi_sa_equal(const struct sockaddr *a, const struct sockaddr *b);
socklen_t mfi_sa_len(const struct sockaddr *sa);

/* --- completion queues --- */
struct mfi_cqe {
    struct fi_cq_tagged_entry e;
    fi_addr_t src;
};
struct mfi_cqerr {
    struct mfi_cqerr *next;
    struct fi_cq_err_entry e;
    fi_addr_t src;
};
struct mfi_cq {
    struct fid_cq cq;
    struct mfi_domain *dom;
    enum fi_cq_format format;
    struct mfi_cqe *ring; /* grows: completions are never dropped */
    size_t head, count, cap;
    struct mfi_cqerr *err_head, *err_tail;
    struct mfi_cqerr *err_last; /* last entry handed out by readerr (freed
                                   on the next read, as err_data lives
                                   until then) */
    int users;                  /* endpoints bound */
    atomic_int signaled;        /* fi_cq_signal: the next (or current) blocking
                             read returns -FI_EAGAIN at once */
};
int mfi_cq_open(struct fid_domain *d, struct fi_cq_attr *attr,
                struct fid_cq **cq, void *context);
/* Adds a completion.  Lock held.  0 or -FI_ENOMEM. */
int mfi_cq_write(struct mfi_cq *cq, void *context, uint64_t flags, size_t len,
                 void *buf, uint64_t data, uint64_t tag, fi_addr_t src);
/* Adds an error entry (err positive, as in fi_cq_err_entry).  Lock held. */
int mfi_cq_write_err(struct mfi_cq *cq, void *context, uint64_t flags,
                     size_t len, void *buf, uint64_t data, uint64_t tag,
                     size_t olen, int err, int prov_errno, fi_addr_t src);

/* --- counters and poll sets (mroce_cntr.c) --- */
struct mfi_cntr {
    struct fid_cntr cntr;
    struct mfi_domain *dom;
    uint64_t val, err;   /* changed under the domain lock only */
    pthread_cond_t cond; /* broadcast on every change (domain lock) */
    int users;           /* endpoints bound, poll sets listing it */
};
/* What an endpoint's counters count (fi_ep_bind flags). */
enum mfi_cntr_slot {
    MFI_CNTR_SEND,
    MFI_CNTR_RECV,
    MFI_CNTR_READ,
    MFI_CNTR_WRITE,
    MFI_CNTR_RREAD,
    MFI_CNTR_RWRITE, /* FI_REMOTE_READ/WRITE (FI_RMA_EVENT) */
    MFI_CNTR_N
};
int mfi_cntr_open(struct fid_domain *d, struct fi_cntr_attr *attr,
                  struct fid_cntr **cntr, void *context);
int mfi_poll_open(struct fid_domain *d, struct fi_poll_attr *attr,
                  struct fid_poll **pollset);
/* A request the counter (NULL: none bound) counts has finished, in error
 * if err.  Lock held. */
void mfi_cntr_report(struct mfi_cntr *c, int err);

/* --- memory registration --- */
struct mfi_mr {
    struct fid_mr mr;
    struct mfi_domain *dom;
    mroce_mr *vmr;
    uint32_t lkey;
    struct mfi_mr *next; /* dom->mrs */
    uintptr_t base;      /* registered range */
    size_t len;
    int writable; /* registered with remote write rights */
};
/* The open registration with key key covering [addr, addr+len), or NULL.
 * Lock held. */
struct mfi_mr *mfi_mr_find(struct mfi_domain *d, uint64_t key, uint64_t addr,
                           size_t len);
int mfi_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
               uint64_t offset, uint64_t requested_key, uint64_t flags,
               struct fid_mr **mr, void *context);
int mfi_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
                uint64_t access, uint64_t offset, uint64_t requested_key,
                uint64_t flags, struct fid_mr **mr, void *context);
int mfi_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
                   uint64_t flags, struct fid_mr **mr);

/* --- connections (mroce_conn.c) --- */
struct mfi_peer;
struct mfi_conn {
    struct mfi_conn *next; /* ep->conns */
    mroce_qp *qp;
    uint32_t qpn;
    struct mfi_peer *peer; /* NULL until the HELLO (accepted QPs) */
    uint8_t listening;     /* still a listener (not yet accepted) */
    uint8_t dead;          /* QP failed: kept until the endpoint closes */
    uint32_t rx_posted;    /* bounce buffers posted on it */
    uint32_t rx_owed;      /* buffers not reposted: back-pressure */
    uint32_t ctrl_waiting; /* control messages for it waiting for
                                send-queue room (mroce_flow.c) */
    /* Shared connections: the domain's QP it is a view of (qp is
     * dq->qp), the stream its sends go on (1 + the peer endpoint's
     * index; 0 without shared connections) and the endpoint's receive
     * side on that QP (rxc: the conn its buffers are posted on, itself
     * for that one, NULL without shared connections). */
    struct mfi_dqp *dq;
    uint16_t stream;
    struct mfi_conn *rxc;
};
/* The conn whose bounce buffers serve c (its receive side). */
static inline struct mfi_conn *mfi_rxc(struct mfi_conn *c)
{
    return c->rxc ? c->rxc : c;
}
/* A QP of the domain's, shared by all its endpoints (mroce_shared.c). */
struct mfi_dqp {
    struct mfi_dqp *next; /* dom->dqps */
    mroce_qp *qp;
    uint32_t qpn;
    struct sockaddr_storage raddr; /* the peer device's name (index 0) */
    socklen_t rlen;                /* 0: not known yet (accepted, no
                                      HELLO yet) */
    uint8_t listening, dead;
    uint8_t active;      /* this side connected it */
    uint64_t hello_sent; /* active: bit j, the HELLO went on stream 1 + j */
    uint32_t rq_cap;     /* receive queue slots */
    uint32_t rx_posted;  /* buffers posted on it, all endpoints */
    uint8_t superseded;  /* active, lost CONN-37's tie-break: no new
                            pair takes it; closed once the domain is
                            quiet (mroce_shared.c) */
};
struct mfi_peer {
    struct mfi_peer *next; /* ep->peers */
    struct sockaddr_storage addr;
    socklen_t len;
    struct mfi_conn *tx; /* the QP this side sends on (NULL: connect
                            on next use) */
    fi_addr_t fi_addr;   /* in the endpoint's AV, cached */
    uint32_t av_gen;     /* AV generation fi_addr was resolved at */
    /* The peer's domain device, where its registrations are: READs and
     * WRITEs go there (itself if on it; NULL: not yet looked up). */
    struct mfi_peer *rma;
};

/* --- bounce buffers (eager receive and send, control messages) --- */
enum mfi_wr_kind { MFI_WR_RXBUF = 1, MFI_WR_TXBUF, MFI_WR_OP };

struct mfi_buf {
    uint8_t kind;           /* MFI_WR_RXBUF or MFI_WR_TXBUF: first, so a
                                libmroce wr_id can be told apart */
    uint8_t held;           /* rx: holds an unexpected message
                                (MFI_HELD_BUF, or MFI_HELD_COPY: a copy
                                made by mroce_flow.c, not a pool buffer) */
    uint8_t counted;        /* tx: an inject counted in tx_inflight */
    struct mfi_buf *next;   /* free list, send-queue wait list, or
                                the endpoint's list of copies */
    struct mfi_buf **pprev; /* copies: the link pointing at it */
    struct mtm_entry ue;    /* unexpected queue link */
    struct mfi_conn *conn;  /* rx: the QP it was posted on */
    struct mfi_ep *ep;      /* shared connections: the endpoint whose
                                pool it is in (epgen its generation, as a
                                closed endpoint's buffers stay posted) and
                                rx: the index whose stream it serves */
    uint32_t epgen;
    uint16_t sidx;
    struct mfi_op *op; /* tx: the send it carries (NULL: internal) */
    uint32_t len;      /* rx: bytes received */
    uint32_t lkey;
    uint8_t *data; /* header + payload, registered */
};

enum { MFI_HELD_BUF = 1, MFI_HELD_COPY = 2 };

/* A block of MFI_BUF_SLAB bounce buffers, registered once. */
struct mfi_slab {
    uint8_t *data;
    struct mfi_buf *meta;
    mroce_mr *mr;
};

/* --- requests --- */
enum mfi_op_type {
    MFI_OP_SEND,      /* eager (buf set) or rendezvous (waiting for FIN) */
    MFI_OP_RECV,      /* posted receive */
    MFI_OP_RNDV_READ, /* receive matched an RTS: READing the data */
    MFI_OP_READ,      /* fi_read */
    MFI_OP_WRITE,     /* fi_write / writedata */
    MFI_OP_ATOMIC,    /* fi_atomic family: waiting for ATOMIC_RESP */
};

/* What a finished request's completion will say. */
struct mfi_done {
    size_t len, olen;
    uint64_t data, tag;
    fi_addr_t src;
    int err, prov; /* err 0: success */
};

struct mfi_op {
    uint8_t kind;            /* MFI_WR_OP (first, see struct mfi_buf) */
    uint8_t type;            /* enum mfi_op_type */
    uint8_t tagged;          /* FI_TAGGED (else FI_MSG) */
    uint8_t nocomp;          /* no CQ entry on success (inject,
                                selective completion) */
    struct mfi_op *next;     /* free list / rendezvous list / releasing
                                list / send-queue wait list */
    struct mfi_op *all_next; /* every request allocated (freed at close) */
    struct mfi_ep *ep;
    void *context;
    uint64_t cq_flags; /* flags of the completion (FI_SEND|FI_MSG..) */
    uint64_t op_flags; /* FI_COMPLETION, FI_INJECT, ... */
    struct iovec iov[MFI_IOV_LIMIT];
    size_t iov_count;
    size_t len; /* sum of iov lengths */
    uint64_t tag, ignore, data;
    fi_addr_t addr;         /* recv: source wanted; send: destination */
    struct mtm_entry me;    /* posted-receive queue link */
    uint64_t cookie;        /* rendezvous send: names it in RTS/FIN */
    struct mfi_conn *conn;  /* rendezvous read: QP to FIN on; READ and
                                WRITE: the QP it went on */
    uint64_t rcookie;       /* rendezvous read: the sender's cookie */
    size_t rlen;            /* rendezvous read: sender's length */
    uint32_t rd_pending;    /* rendezvous read: READs in flight */
    int rd_status;          /* rendezvous read: first failed WC status
                                (-1: a READ could not be posted) */
    size_t rd_off, rd_want; /* rendezvous read: bytes posted so far, and
                                in all (the message, or the receive if
                                shorter) */
    uint64_t rd_raddr;      /* rendezvous read: the sender's buffer */
    uint32_t rd_rkey;       /*   and its key */
    uint32_t rd_lkey[MFI_IOV_LIMIT]; /* rendezvous read: iov i's lkey */
    fi_addr_t src;                   /* rendezvous read: source for the CQ */
    mroce_mr *mr[MFI_IOV_LIMIT];     /* registrations made for this request */
    int nmr;
    void *copy;           /* rendezvous send of several iovs: a
                             contiguous copy (malloc) */
    struct mfi_done done; /* its completion, kept while libmroce
                             still uses its buffers */
    uint8_t rma_ev;       /* READ/WRITE: send an RMA_EVENT notice once
                             it completes (FI_RMA_EVENT) */
    uint8_t rma_cqdata;   /* WRITE with CQ data sent to a target's domain
                             device: the notice carries the data */
    /* READ/WRITE sent to a target's domain device: the endpoint addressed,
     * which gets the notice (NULL: sent to it directly). */
    struct mfi_peer *rma_target;
    uint64_t rma_addr; /*   its target address and key */
    uint32_t rma_key;
    /* FI_MULTI_RECV (mroce_mrecv.c): a buffer's receive (mr_parent) and
     * the receives carved from it (mrecv: their buffer's). */
    struct mfi_op *mrecv;
    uint8_t mr_parent;    /* a multi-receive buffer */
    uint8_t mr_retired;   /* no longer matched: too little room left,
                                or cancelled */
    uint32_t mr_children; /* carved receives not yet reported */
    size_t mr_off;        /* bytes of the buffer handed out */
};

/* --- endpoint --- */
struct mfi_ep {
    struct fid_ep ep;
    struct mfi_domain *dom;
    struct mfi_ep *dom_next; /* dom->eps */
    int idx;                 /* shared connections: its index in the domain
                                (its name carries it, mfi_name_idx) */
    uint32_t gen;            /*   and its generation (dom->ep_gen) */
    int closed;              /* closed with sends still in flight: kept
                                (dom->zombies) until the domain closes */
    mroce_device *dev;       /* its device: the domain's, or */
    int own_dev;             /*   one of its own (1) */
    mroce_pd *pd;            /* the device's PD and CQ */
    mroce_cq *cq;
    struct sockaddr_storage addr; /* its name (IP + device port) */
    size_t addrlen;
    int mtu; /* MetaRoCE MTU of its QPs */
    struct mfi_av *av;
    struct mfi_cq *tx_cq, *rx_cq;
    uint64_t tx_op_flags, rx_op_flags; /* fi_info op_flags */
    int tx_selective, rx_selective;    /* FI_SELECTIVE_COMPLETION */
    int enabled;
    uint64_t caps;
    int rma_event;                        /* FI_RMA_EVENT asked for */
    struct mtm_queue posted[2], unexp[2]; /* [0] FI_MSG, [1] FI_TAGGED */
    struct mfi_peer *peers;
    struct mfi_conn *conns;
    struct mfi_conn *qpn_cache;  /* last conn looked up by QPN */
    struct mfi_peer **by_fiaddr; /* peer cache indexed by fi_addr */
    size_t by_fiaddr_n;
    struct mfi_buf *rx_free; /* free bounce buffers (receive
                                          and send alike) */
    size_t buf_size;         /* header + eager size */
    struct mfi_slab *slabs;  /* buffer memory (freed at close) */
    size_t nslabs, slab_cap;
    uint32_t wr_outstanding; /* send-side WRs not completed
                                          (close waits for them) */
    uint32_t unexp_gen;      /* AV generation unexpected
                                          sources were resolved at */
    uint32_t unexp_held;     /* buffers held by unexpected msgs */
    struct mfi_buf *copies;  /* unexpected messages copied out
                                          of their buffers (mroce_flow.c) */
    size_t copy_bytes;       /*   and their bytes */
    struct mfi_buf *ctrl_wait, **ctrl_wait_tail; /* control messages
                                          waiting for send-queue room */
    struct mfi_op *rd_wait, **rd_wait_tail;      /* rendezvous reads waiting
                                          for send-queue room */
    int unexp_warned;
    struct mfi_op *op_free;   /* recycled requests */
    struct mfi_op *all_ops;   /* every request allocated */
    struct mfi_op *rndv;      /* sends waiting for FIN */
    struct mfi_op *releasing; /* finished requests whose buffers
                                          libmroce still uses: completed
                                          once it releases them */
    uint64_t next_cookie;
    uint32_t tx_inflight;   /* sends/reads/writes posted */
    uint32_t rx_posted_ops; /* posted receives */
    uint32_t progress_calls;
    struct mfi_cntr *cntr[MFI_CNTR_N]; /* bound counters (fi_ep_bind) */
    size_t min_multi_recv;             /* FI_OPT_MIN_MULTI_RECV */
    struct mfi_op *amo_wait;           /* atomics waiting for their
                                          response */
    struct mfi_amo_out *amo_resend;    /* responses the send queue had no
                                          room for: sent by progress */
};

int mfi_ep_open(struct fid_domain *d, struct fi_info *info, struct fid_ep **ep,
                void *context);
/* Drives libmroce and handles its completions.  Lock held. */
void mfi_ep_progress(struct mfi_ep *ep);
/* What progress does for ep once completions are handled: retries of
 * what waited for room, listeners. */
void mfi_ep_after_poll(struct mfi_ep *ep);
struct mfi_op *mfi_op_get(struct mfi_ep *ep);
void mfi_op_put(struct mfi_ep *ep, struct mfi_op *op);
/* Buffers: NULL if the pool cannot grow.  Lock held. */
struct mfi_buf *mfi_buf_get(struct mfi_ep *ep, int rx);
void mfi_buf_put(struct mfi_ep *ep, struct mfi_buf *b);
/* Posts b as a receive on c.  0 or a libmroce error. */
int mfi_buf_post_rx(struct mfi_ep *ep, struct mfi_conn *c, struct mfi_buf *b);
/* The same on a stream of c's QP named by the caller. */
int mfi_buf_post_rx_on(struct mfi_ep *ep, struct mfi_conn *c, struct mfi_buf *b,
                       uint16_t stream);
/* An unexpected message's buffer is no longer needed: repost it where a
 * QP is owed one, else free it. */
void mfi_unexp_release(struct mfi_ep *ep, struct mfi_buf *b);
/* Copies len bytes of src into the iovs; returns bytes copied. */
size_t mfi_copy_to_iov(const struct iovec *iov, size_t n, const void *src,
                       size_t len);
size_t mfi_copy_from_iov(void *dst, const struct iovec *iov, size_t n,
                         size_t len);
/* The request is finished: its completion (unless suppressed) goes to
 * its CQ and the request is freed, at once if libmroce no longer uses its
 * buffers, else once it releases them (ep->releasing, retried by
 * progress). */
void mfi_op_complete(struct mfi_ep *ep, struct mfi_op *op, size_t len,
                     uint64_t data, uint64_t tag, fi_addr_t src);
void mfi_op_fail(struct mfi_ep *ep, struct mfi_op *op, int err, int prov,
                 size_t len, size_t olen, fi_addr_t src);
/* Maps a libmroce error to -FI_*. */
int mfi_errno(int mroce_err);
/* Registers [addr, addr+len) on the device for op (kept in op->mr), with
 * the rights that op's use needs and no more (MROCE_ACCESS_*: a READ's
 * destination LOCAL_WRITE, a rendezvous source REMOTE_READ, a WRITE's
 * source none, so read-only memory can be sent and receive buffers are
 * not readable by peers).  -FI_EFAULT if it is not mapped, -FI_EACCES if
 * access writes into read-only memory. */
int mfi_op_reg(struct mfi_ep *ep, struct mfi_op *op, void *addr, size_t len,
               unsigned access, uint32_t *lkey, uint32_t *rkey);
/* Deregisters op's registrations that libmroce no longer uses; returns 1
 * when none is left, 0 while some are still busy (kept in op->mr). */
int mfi_op_dereg(struct mfi_op *op);

/* --- mroce_conn.c --- */
/* The peer for fi_addr, connecting a QP on first use.  NULL + *err. */
struct mfi_peer *mfi_conn_peer(struct mfi_ep *ep, fi_addr_t a, int *err);
/* The QP to send to peer on (connecting it if needed), NULL + *err. */
struct mfi_conn *mfi_conn_tx(struct mfi_ep *ep, struct mfi_peer *p, int *err);
/* The peer to send READs and WRITEs for p over: the peer on p's domain
 * device (where its registrations are), p itself if p is on it.  Lock
 * held.  NULL (*err set) on failure. */
struct mfi_peer *mfi_conn_rma_peer(struct mfi_ep *ep, struct mfi_peer *p,
                                   int *err);
/* Writes the domain device's port dom into the name of an endpoint on a
 * device of its own (the padding of a sockaddr_in, the flow label field
 * of a sockaddr_in6, which the provider never sends from), and reads it
 * back: 0 when the name carries none (the endpoint is on its domain's
 * device). */
void mfi_name_set_dom(struct sockaddr_storage *name, uint16_t dom);
uint16_t mfi_name_dom(const struct sockaddr *name);
struct mfi_conn *mfi_conn_by_qpn(struct mfi_ep *ep, uint32_t qpn);
/* Keeps MFI_LISTENERS listening QPs; notices accepted ones. */
int mfi_conn_listen(struct mfi_ep *ep);
/* A HELLO arrived on c. */
void mfi_conn_hello(struct mfi_ep *ep, struct mfi_conn *c, const void *name,
                    size_t len);
/* The sender of messages arriving on c, as an fi_addr of the AV. */
fi_addr_t mfi_conn_src(struct mfi_ep *ep, struct mfi_conn *c);
/* CONN-38: a message of protocol version `version` arrived on c; 1 if its
 * sender uses the other connection layout (FI_MROCE_SHARED_CONN set the
 * other way): both sides are told and c's QP fails, the caller drops the
 * message.  0: the same layout. */
int mfi_conn_layout_check(struct mfi_ep *ep, struct mfi_conn *c,
                          uint8_t version);
/* A QP went to ERROR (a completion failed): forget it as a send path. */
void mfi_conn_failed(struct mfi_ep *ep, struct mfi_conn *c);
/* c no longer carries anything (its QP is in ERROR): the work waiting on
 * it fails. */
void mfi_conn_fail_view(struct mfi_ep *ep, struct mfi_conn *c);
/* The peer named sa (created if new).  NULL: no memory. */
struct mfi_peer *mfi_peer_get(struct mfi_ep *ep, const struct sockaddr *sa);
/* The provider's QP attributes: send and receive queue sizes, streams. */
void mfi_qp_attr(struct mroce_qp_init_attr *a, mroce_cq *cq, int mtu,
                 uint32_t sq, uint32_t rq, uint16_t streams);
/* Creates a QP of attributes a (both layouts): 0, or a negative fi_errno
 * with a warning logged. */
int mfi_qp_create(mroce_pd *pd, const struct mroce_qp_init_attr *a,
                  mroce_qp **qp);
/* Posts FI_MROCE_RX_DEPTH bounce buffers of ep on c (its stream, if c is
 * a shared QP's receive side); those it has no buffer or room for are
 * owed (c->rx_owed) and posted later. */
void mfi_conn_post_rx(struct mfi_ep *ep, struct mfi_conn *c);
/* Starts qp's handshake to the device named by to (IP and UDP port; the
 * index or domain port in its padding is ignored): 0, or a negative
 * fi_errno with a warning logged. */
int mfi_qp_connect(mroce_qp *qp, const struct sockaddr_storage *to);
void mfi_conn_close_all(struct mfi_ep *ep);

/* --- mroce_shared.c: one QP per peer device (shared connections) --- */
/* Gives ep its index and name on the domain's device.  Lock held. */
int mfi_shared_ep_open(struct mfi_domain *d, struct mfi_ep *ep);
/* Keeps MFI_LISTENERS listening QPs on the domain's device. */
int mfi_shared_listen(struct mfi_domain *d);
/* ep enabled: listeners, and its receive buffers on every QP. */
int mfi_shared_ep_enable(struct mfi_ep *ep);
/* The view of ep towards peer p (connecting a QP to p's device on first
 * use, sending the HELLO on p's stream).  NULL + *err. */
struct mfi_conn *mfi_shared_tx(struct mfi_ep *ep, struct mfi_peer *p, int *err);
/* A message arrived on rx conn c from the peer's endpoint src_idx: the
 * view to handle it with, NULL if it must be dropped (counted). */
struct mfi_conn *mfi_shared_rx_view(struct mfi_ep *ep, struct mfi_conn *c,
                                    uint32_t src_idx);
/* A HELLO on rx conn c: the peer device's name. */
void mfi_shared_hello(struct mfi_ep *ep, struct mfi_conn *c, const void *name,
                      size_t len);
/* Polls the domain's CQ and hands each completion to its endpoint. */
void mfi_shared_poll(struct mfi_domain *d);
/* A completion of the domain's CQ, for ep (NULL: a closed endpoint's). */
void mfi_ep_handle_wc(struct mfi_ep *ep, const struct mroce_wc *wc);
/* Domain close: the QPs, the closed endpoints' memory. */
void mfi_shared_domain_close(struct mfi_domain *d);
/* Frees a closed endpoint's requests, buffers and itself. */
void mfi_ep_free(struct mfi_ep *ep);
/* A QP of the domain failed: every endpoint's views of it fail. */
void mfi_shared_failed(struct mfi_domain *d, uint32_t qpn);
/* CONN-38: the peer on rx conn c uses the per-endpoint layout: answers
 * with a HELLO of version 2 on stream 0 (the one stream that peer has),
 * then closes the QP in order and fails every endpoint's views of it. */
void mfi_shared_refuse(struct mfi_ep *ep, struct mfi_conn *c);
/* ep closes: its views go, its buffers stay posted (the domain keeps
 * their memory); the last endpoint's close destroys the QPs. */
void mfi_shared_ep_close(struct mfi_ep *ep);
/* The endpoint index a name carries (0 without shared connections). */
uint16_t mfi_name_idx(const struct sockaddr *name);
void mfi_name_set_idx(struct sockaddr_storage *name, uint16_t idx);
/* Device equality: family, IP and port (not the endpoint index). */
int mfi_dev_equal(const struct sockaddr *a, const struct sockaddr *b);
/* Stamps the header of b (version, source index) before it is posted. */
void mfi_hdr_stamp(struct mfi_ep *ep, struct mfi_buf *b);

/* --- mroce_msg.c: the send/receive engine --- */
extern struct fi_ops_msg mfi_msg_ops;
/* Send of iov to dest: eager or rendezvous.  Lock held.  0 or -FI_*. */
ssize_t mfi_send_common(struct mfi_ep *ep, const struct iovec *iov, void **desc,
                        size_t count, fi_addr_t dest, uint64_t tag,
                        uint64_t data, uint64_t flags, void *context,
                        int tagged, int inject);
/* Posts a receive (matching it against unexpected messages first). */
ssize_t mfi_recv_common(struct mfi_ep *ep, const struct iovec *iov, void **desc,
                        size_t count, fi_addr_t src, uint64_t tag,
                        uint64_t ignore, uint64_t flags, void *context,
                        int tagged);
/* A bounce buffer completed on its QP with a provider message. */
void mfi_msg_rx(struct mfi_ep *ep, struct mfi_buf *b);
/* Delivers the message in b (unexpected or just arrived, b->ue.src its
 * source) to receive op, and releases or reposts b. */
void mfi_msg_deliver(struct mfi_ep *ep, struct mfi_op *op, struct mfi_buf *b);
/* An unexpected message's header fields (for peek). */
void mfi_msg_peek_info(const struct mfi_buf *b, uint64_t *len, uint64_t *data,
                       uint64_t *tag, int *cq_data);
/* Fails rendezvous sends waiting for a FIN over c (its QP failed). */
void mfi_msg_conn_failed(struct mfi_ep *ep, struct mfi_conn *c);
/* libmroce completion of a request posted by the msg/rma paths. */
void mfi_op_wc(struct mfi_ep *ep, struct mfi_op *op, const struct mroce_wc *wc);
/* Posts a control message (HELLO, FIN) on c from an internal buffer. */
/* mfi_send_ctrl with remote CQ data in the header (MFI_HDR_CQ_DATA). */
int mfi_send_ctrl_data(struct mfi_ep *ep, struct mfi_conn *c, uint8_t kind,
                       uint64_t data, const void *payload, size_t len);
int mfi_send_ctrl(struct mfi_ep *ep, struct mfi_conn *c, uint8_t kind,
                  const void *payload, size_t len);
/* Looks up again the sources of unexpected messages that arrived before
 * their sender was in the AV (after the AV changed). */
void mfi_msg_refresh_unexp(struct mfi_ep *ep);
/* Drops the message in b (FI_DISCARD): a rendezvous sender is told it is
 * done.  Releases b. */
void mfi_msg_discard(struct mfi_ep *ep, struct mfi_buf *b);
/* fi_cancel of a posted receive. */
ssize_t mfi_msg_cancel(struct mfi_ep *ep, void *context);

/* Posts the next READs of rendezvous read op (one that waited for
 * send-queue room): 1 if the send queue is still full (nothing posted),
 * 0 once posted or finished (failed: its completion is written). */
int mfi_rndv_resume(struct mfi_ep *ep, struct mfi_op *op);

/* --- mroce_flow.c: send-queue room and unexpected-message copies --- */
/* Posts control buffer b (wire bytes in b->len) on c, or queues it if the
 * send queue is full or others for c wait before it.  0 or -FI_*. */
int mfi_flow_ctrl(struct mfi_ep *ep, struct mfi_conn *c, struct mfi_buf *b);
/* Queues rendezvous read op until its QP's send queue has room. */
void mfi_flow_rd_wait(struct mfi_ep *ep, struct mfi_op *op);
/* Progress: posts what waits for send-queue room, oldest first. */
void mfi_flow_retry(struct mfi_ep *ep);
/* A copy of unexpected message b (a pool buffer just received) that
 * stands for it in the unexpected queue, so b can be reposted; NULL when
 * the copies' byte bound is reached (or no memory). */
struct mfi_buf *mfi_flow_copy(struct mfi_ep *ep, const struct mfi_buf *b);
/* Frees a copy made by mfi_flow_copy. */
void mfi_flow_copy_free(struct mfi_ep *ep, struct mfi_buf *b);
/* Endpoint close: frees every copy left. */
void mfi_flow_close(struct mfi_ep *ep);

/* --- mroce_mrecv.c: FI_MULTI_RECV --- */
/* Posts a multi-receive buffer (fi_recv/fi_recvmsg with FI_MULTI_RECV):
 * it takes unexpected messages at once, then waits in the posted queue. */
ssize_t mfi_mrecv_post(struct mfi_ep *ep, const struct iovec *iov, size_t count,
                       fi_addr_t src, uint64_t flags, void *context);
/* The message in b (from the wire, matched in the posted queue by the
 * buffer's receive parent) goes to the next part of the buffer. */
void mfi_mrecv_deliver(struct mfi_ep *ep, struct mfi_op *parent,
                       struct mfi_buf *b);
/* op_report hooks: a carved receive is reported (flags and buffer of its
 * CQ entry); after it, mfi_mrecv_reported frees what it may. */
void mfi_mrecv_child_flags(struct mfi_op *op);
void mfi_mrecv_reported(struct mfi_ep *ep, struct mfi_op *parent);
/* A buffer's own receive finished (cancelled): 1 if op_report must
 * write its entry now, 0 if it waits for carved receives. */
int mfi_mrecv_parent_done(struct mfi_op *op);

/* --- mroce_tagged.c, mroce_rma.c --- */
extern struct fi_ops_tagged mfi_tagged_ops;
extern struct fi_ops_rma mfi_rma_ops;
/* mroce_coll.c: every entry -FI_ENOSYS (no FI_COLLECTIVE). */
extern struct fi_ops_collective mfi_coll_ops;
/* A remote write with immediate data consumed bounce buffer b. */
void mfi_rma_rx_imm(struct mfi_ep *ep, struct mfi_buf *b,
                    const struct mroce_wc *wc);

/* --- mroce_rma_event.c --- */
/* The endpoint was the target of a READ (write 0) or WRITE / atomic
 * (write 1) of len bytes at addr, kind FI_RMA or FI_ATOMIC: with
 * FI_RMA_EVENT, counts it, and if cq writes its receive-CQ entry.  Lock
 * held. */
void mfi_rmaev_report(struct mfi_ep *ep, int write, uint64_t kind,
                      uint64_t addr, size_t len, int cq);
/* READ or WRITE op completed successfully: sends its notice if asked. */
void mfi_rmaev_send(struct mfi_ep *ep, const struct mfi_op *op);
/* An RMA_EVENT notice arrived in b (parsed as p).  Releases b. */
void mfi_rmaev_rx(struct mfi_ep *ep, struct mfi_buf *b,
                  const struct mfi_pkt *p);

/* --- mroce_atomic.c --- */
extern struct fi_ops_atomic mfi_atomic_ops;
int mfi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
                     enum fi_op op, struct fi_atomic_attr *attr,
                     uint64_t flags);
/* An ATOMIC or ATOMIC_RESP arrived in b (parsed as p).  Releases b. */
void mfi_atomic_rx(struct mfi_ep *ep, struct mfi_buf *b,
                   const struct mfi_pkt *p);
/* Progress: resends responses that could not be posted. */
void mfi_atomic_progress(struct mfi_ep *ep);
/* c failed: atomics waiting for a response over it fail. */
void mfi_atomic_conn_failed(struct mfi_ep *ep, struct mfi_conn *c);
/* Frees what the endpoint's atomics still hold (close). */
void mfi_atomic_close(struct mfi_ep *ep);

/* --- mroce_fabric.c, mroce_domain.c --- */
int mfi_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
                    void *context);
/* mroce_eq.c: an event queue (nothing raises events; fi_eq_write works). */
int mfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
                struct fid_eq **eq, void *context);
int mfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
                    struct fid_domain **dom, void *context);
uint64_t mfi_now_ns(void);
/* The MetaRoCE MTU for QPs on local address sa: FI_MROCE_MTU if set, else
 * from the MTU of the interface holding sa (mroce_domain.c explains). */
int mfi_domain_mtu(const struct sockaddr *sa);
/* Progress of the domain's endpoints.  Lock held. */
void mfi_domain_progress(struct mfi_domain *d);
/* Opens a libmroce device on sa's IP and port (a free one if its port is
 * 0); its name (sa with the port bound) in *addr, *addrlen, its MTU in
 * *mtu.  0 or -FI_*. */
int mfi_dev_open(const struct sockaddr *sa, mroce_device **dev,
                 struct sockaddr_storage *addr, size_t *addrlen, int *mtu);

/* mroce_secure.c: mfi_sec_attr fills a's secure mode from FI_MROCE_KEY_FILE,
 * FI_MROCE_SECURE_SUITE and FI_MROCE_KEY_GEN (0, or -FI_EINVAL for a
 * suite or generation it does not know, with a warning); mfi_sec_ops is
 * the table of MROCE_FI_SEC_OPS. */
int mfi_sec_attr(struct mroce_device_attr *a);
void *mfi_sec_ops(void);

/* mroce_introspect.c: fi_open_ops on a domain (mroce_fi_ext.h). */
int mfi_domain_ops_open(struct fid *fid, const char *name, uint64_t flags,
                        void **ops, void *context);

/* --- helpers for unsupported entry points --- */
int mfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int mfi_no_control(struct fid *fid, int command, void *arg);
int mfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
                    void **ops, void *context);
int mfi_no_tostr(const struct fid *fid, char *buf, size_t len);
int mfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops,
                   void *context);

#pragma GCC visibility pop

#endif /* MROCE_FI_H */
