/*
 * verbs_int.h - libibverbs over libmroce: the objects behind the verbs
 * handles.  Each verbs object embeds the rdma-core struct first (so the
 * handle a program holds is a pointer to it) and keeps the libmroce object
 * it stands for.  One opened context is one libmroce device (one UDP
 * receive port on the device's address); its PDs, MRs, CQs and QPs are that
 * device's.
 */
#ifndef MROCE_VERBS_INT_H
#define MROCE_VERBS_INT_H

#include <infiniband/verbs.h>
#include <mroce/mroce.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define MV_MAX_DEVICES 8
#define MV_MAX_SGE MROCE_MAX_SGE
#define MV_MAX_INLINE MROCE_MAX_INLINE
#define MV_MAX_WR 32768
#define MV_MAX_CQE 65536
#define MV_MAX_RD_ATOMIC 16
#define MV_DEFAULT_PORT 4794 /* MROCE_UDP_PORT */
#define MV_QP_SLOTS 1024     /* the device's max_qps (device.c) */

/* A QP's peer, for the src_qp of its completions: indexed by the QPN's
 * low bits (libmroce's QPNs differ there while they live); a QPN that
 * does not match finds no peer (src_qp 0). */
struct mv_peer {
    _Atomic uint32_t qpn;  /* the local QP, 0 = none */
    _Atomic uint32_t dest; /* its dest_qp_num */
};

/* A configured device: its name, address and UDP port. */
struct mv_device {
    struct ibv_device ibdev;     /* first: the handle programs hold */
    char addr[INET6_ADDRSTRLEN]; /* the local address literal */
    uint16_t port;               /* UDP receive port */
    uint16_t peer_port;          /* UDP port peers receive on */
    union ibv_gid gid;           /* IPv4-mapped or the IPv6 address */
    uint64_t guid;               /* network order */
};

#define MV_ASYNC_MAX 256 /* asynchronous events queued at most */

struct mv_qp;

/* A context's asynchronous events and the QPs they are about (async.c). */
struct mv_async {
    pthread_mutex_t lock; /* the fields below */
    int rfd, wfd;         /* pipe: one byte per queued event; rfd = async_fd */
    struct ibv_async_event q[MV_ASYNC_MAX]; /* ring */
    unsigned head, n;
    uint64_t dropped;         /* events lost to a full queue */
    struct mv_qp *qps;        /* the context's QPs (mv_qp.anext) */
    _Atomic uint64_t scan_ns; /* the last periodic scan (mv_async_tick) */
};

/* An opened device. */
struct mv_context {
    struct verbs_context vctx; /* first; vctx.context is the handle */
    struct mv_device *dev;     /* the configured device (static table) */
    mroce_device *mdev;        /* owned */
    atomic_int stop;           /* tells the helper to exit */
    _Atomic uint64_t app_ns;   /* the application's last datapath call */
    struct mv_peer peers[MV_QP_SLOTS]; /* QPs at RTR or later (qp.c) */
    pthread_t helper;                  /* progress.c, when has_helper */
    int has_helper;
    atomic_int app_tid;    /* the thread of the last datapath call */
    int lib_thread;        /* MROCE_IBV_PROGRESS=thread */
    struct mv_async async; /* async.c */
};

struct mv_pd {
    struct ibv_pd pd;
    mroce_pd *mpd; /* owned */
};

struct mv_mr {
    struct ibv_mr mr;
    mroce_mr *mmr; /* owned */
};

struct mv_cq {
    struct ibv_cq cq;
    mroce_cq *mcq; /* owned */
};

/* Completion channel (objects.c). */
struct mv_channel {
    struct ibv_comp_channel ch;
    int epfd; /* ch.fd: an epoll set of its CQs' eventfds (objects.c) */
};

/* The verbs QP state machine on top of libmroce's: RESET and INIT are
 * ours alone; RTR starts the MetaRoCE handshake (qp.c). */
struct mv_qp {
    struct ibv_qp qp;
    mroce_qp *mqp;           /* owned */
    struct mv_context *ctx;  /* not owned */
    int sq_sig_all;          /* every send WR signalled */
    int active;              /* this side sends CONNECT_REQ */
    struct ibv_qp_attr attr; /* what modify_qp set, for query_qp */
    struct ibv_qp_cap cap;   /* as granted */
    /* Asynchronous events (async.c; the two flags under async.lock). */
    struct mv_qp *anext; /* next QP of the context */
    int established;     /* COMM_EST queued */
    int fatal;           /* QP_FATAL queued */
    atomic_int user_err; /* the application moved it to ERR */
};

static inline struct mv_context *mv_ctx(struct ibv_context *c)
{
    return (struct mv_context *)((char *)c -
                                 offsetof(struct verbs_context, context));
}

/* Records a datapath call of the application (which drives progress
 * itself): the helper stays away meanwhile (progress.c). */
uint64_t mv_now_ns(void); /* CLOCK_MONOTONIC */
int mv_tid(void);         /* the calling thread's id, cached */
static inline void mv_app_call(struct mv_context *ctx)
{
    atomic_store_explicit(&ctx->app_ns, mv_now_ns(), memory_order_relaxed);
    int t = mv_tid();
    if (atomic_load_explicit(&ctx->app_tid, memory_order_relaxed) != t)
        atomic_store_explicit(&ctx->app_tid, t, memory_order_relaxed);
}

/* The dest_qp_num of the context's QP qpn, or 0 (qp.c). */
static inline uint32_t mv_peer_qpn(struct mv_context *ctx, uint32_t qpn)
{
    struct mv_peer *p = &ctx->peers[qpn & (MV_QP_SLOTS - 1)];
    uint32_t d = atomic_load_explicit(&p->dest, memory_order_relaxed);
    return atomic_load_explicit(&p->qpn, memory_order_acquire) == qpn ? d : 0;
}

/* libmroce code -> errno value (positive). */
int mv_errno(int mroce_rc);
/* Builds the ops table of an opened context (objects.c, qp.c, datapath.c). */
void mv_ops_init(struct mv_context *ctx);

/* The progress helper (progress.c): 0 or -1 (errno). */
int mv_progress_start(struct mv_context *ctx);
void mv_progress_stop(struct mv_context *ctx);

/* Asynchronous events (async.c): 0 or -1 (errno); the QP list; a scan of
 * the QPs' states (queues what changed); the rate-limited scan of
 * ibv_poll_cq (helper 0) and of the helper (1: only while the program does
 * not call). */
int mv_async_init(struct mv_context *ctx);
void mv_async_fini(struct mv_context *ctx);
void mv_async_add_qp(struct mv_context *ctx, struct mv_qp *q);
void mv_async_del_qp(struct mv_context *ctx, struct mv_qp *q);
void mv_async_scan(struct mv_context *ctx);
void mv_async_tick(struct mv_context *ctx, uint64_t now, int helper);

/* Devices (device.c): the configured table, loaded once. */
int mv_devices_load(struct mv_device **list);

/* Ops (objects.c, qp.c, datapath.c). */
struct ibv_qp *mv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
int mv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                struct ibv_qp_init_attr *init_attr);
int mv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
int mv_destroy_qp(struct ibv_qp *qp);
int mv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
                 struct ibv_send_wr **bad_wr);
int mv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
                 struct ibv_recv_wr **bad_wr);
int mv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int mv_req_notify_cq(struct ibv_cq *cq, int solicited_only);

#endif /* MROCE_VERBS_INT_H */
