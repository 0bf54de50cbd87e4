/* Internal state of librdmacm over MetaRoCE: devices, event channels and
 * events, communication identifiers and the TCP connections of the CM
 * exchange.  One mutex (cm_lock) guards all of it; the CM thread
 * (cm_thread.c) takes it for each batch of socket events, and verbs calls
 * are made without it. */
#ifndef MROCE_RDMACM_INT_H
#define MROCE_RDMACM_INT_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cm_msg.h"

#define CM_MAX_DEVICES 8
#define CM_MRA_MULT 16 /* an MRA extends the REQ's timeout this many times */

/* A MetaRoCE device of our libibverbs, opened once for the process. */
struct cm_dev {
    struct ibv_context *ctx;
    struct ibv_pd *pd; /* the default PD (rdma_create_ep without one) */
    union ibv_gid gid;
    struct sockaddr_storage addr; /* the address the GID names, port 0 */
    enum ibv_mtu mtu;             /* the port's active MTU */
};

struct cm_event {
    struct rdma_cm_event ev;
    struct cm_event *next;
    struct cm_id *owner; /* the id whose acknowledgement count it holds */
    int rep;             /* a REP not yet turned into ESTABLISHED */
    uint8_t pdata[CM_REP_PDATA];
};

struct cm_channel {
    struct rdma_event_channel ch; /* fd: an eventfd, non-zero iff queued */
    struct cm_event *head, *tail;
    int signalled; /* the eventfd holds a count */
};

enum cm_state {
    CM_IDLE,
    CM_BOUND,
    CM_ADDR_RESOLVED,
    CM_ROUTE_RESOLVED,
    CM_LISTEN,
    CM_CONNECTING, /* active: TCP connecting or REQ sent */
    CM_REP_RCVD,   /* active: REP received, RTU not yet sent */
    CM_REQ_RCVD,   /* passive: REQ delivered, neither accepted nor rejected */
    CM_ACCEPTED,   /* passive: REP sent, waiting for RTU */
    CM_CONNECTED,
    CM_DISCONNECTING, /* DREQ sent */
    CM_DISCONNECTED,
    CM_CLOSED, /* rejected, refused or failed: nothing more to come */
};

/* One TCP connection (or listening socket) of the CM exchange. */
struct cm_conn {
    int fd;
    int listening;
    int connecting; /* non-blocking connect() in progress */
    int dead;       /* closed; freed by the CM thread after its batch */
    struct cm_id *id;
    struct cm_id *listener; /* accepted, its REQ not yet read */
    struct cm_conn *next_dead, *all_next;
    size_t rlen;
    uint8_t rbuf[2 * CM_MSG_MAX];
    size_t req_len; /* the REQ to send once connected */
    uint8_t req[CM_MSG_MAX];
};

struct cm_id {
    struct rdma_cm_id id;
    int sync; /* created by rdma_create_ep: own channel */
    enum cm_state state;
    int sock; /* bound, not yet listening/connecting; -1 */
    struct cm_conn *conn;
    struct cm_dev *dev;
    int outstanding; /* events delivered and not yet acked */
    int destroying;
    int disc_delivered; /* a DISCONNECTED reached the application */
    int peer_gone;      /* the connection closed before it was used */
    struct ibv_qp_init_attr *qp_init_attr; /* rdma_create_ep, passive */
    int own_cqs;
    /* Ours (what we sent or will send) and the peer's (what it sent). */
    uint8_t resp_res, init_depth, retry, rnr_retry;
    uint8_t peer_gid[16];
    uint32_t peer_qpn;
    uint8_t peer_resp_res, peer_init_depth;
    int peer_known;
    uint8_t ack_timeout; /* RDMA_OPTION_ID_ACK_TIMEOUT: the QP's timeout */
    /* The CM timer (cm_timer.c): armed in timer_state, fires at
     * deadline_ms unless the id has left that state. */
    int timer_on;
    enum cm_state timer_state;
    uint64_t deadline_ms;
    struct cm_id *timer_next;
};

extern pthread_mutex_t cm_lock;
extern pthread_cond_t cm_acked;

/* cm_dev.c */
int cm_init(void); /* 0 or an errno */
int cm_ndevs(void);
struct cm_dev *cm_dev_at(int i);
struct cm_dev *cm_dev_by_addr(const struct sockaddr *a);
struct cm_dev *cm_dev_by_family(int family);
struct cm_dev *cm_dev_by_ctx(struct ibv_context *ctx);
socklen_t cm_addrlen(const struct sockaddr *a);
int cm_addr_any(const struct sockaddr *a);

/* cm_event.c (callers hold cm_lock unless said otherwise) */
struct cm_event *cm_event_new(struct cm_id *id, enum rdma_cm_event_type type,
                              int status);
void cm_event_conn(struct cm_event *e, const struct cm_msg *m);
void cm_event_queue(struct cm_event *e);
void cm_event_post(struct cm_id *id, enum rdma_cm_event_type type, int status);
void cm_channel_drop(struct cm_channel *c, struct cm_id *id);
void cm_channel_move(struct cm_id *id, struct cm_channel *to);
struct cm_channel *cm_channel_new(void); /* without cm_lock */
void cm_channel_free(struct cm_channel *c);

/* cm_thread.c (callers hold cm_lock) */
int cm_thread_start(void);
struct cm_conn *cm_conn_add(struct cm_id *id, int fd, int listening,
                            int connecting); /* NULL with errno */
void cm_conn_drop_listener(struct cm_id *lis);
void cm_conn_close(struct cm_conn *c);
int cm_send(struct cm_id *id, const struct cm_msg *m);
extern unsigned long cm_bad_msgs;
/* The id's timer fired in the state it guards: the peer's CM did not
 * answer (REQ: UNREACHABLE -ETIMEDOUT; REP: UNREACHABLE -ETIMEDOUT; DREQ:
 * DISCONNECTED); closes the id's connection. */
void cm_on_timeout(struct cm_id *id);

/* cm_timer.c (callers hold cm_lock, but for cm_timer_init) */
/* Reads MROCE_CM_TIMEOUT_MS; returns an eventfd that becomes readable
 * when a timer is armed (for the CM thread's epoll), or -1 with errno. */
int cm_timer_init(void);
void cm_timer_wake_ack(void); /* empties that eventfd */
/* Arms ID's timer for MULT times the base timeout, guarding its state. */
void cm_timer_arm(struct cm_id *id, unsigned mult);
void cm_timer_stop(struct cm_id *id);
/* Milliseconds to the next deadline (0: one has passed), -1 for none. */
int cm_timer_next_ms(void);
/* Fires every timer whose deadline has passed (cm_on_timeout). */
void cm_timer_expire(void);

/* cm_id.c */
void cm_id_release(struct cm_id *id); /* with cm_lock: conn, events */
struct cm_id *cm_id_alloc(struct cm_channel *ch, void *context,
                          enum rdma_port_space ps);
int cm_complete(struct cm_id *id);   /* sync ids: wait for the next event */
int cm_connect_qp(struct cm_id *id); /* QP to RTR and RTS (no cm_lock) */

static inline struct cm_id *cm_id_of(struct rdma_cm_id *id)
{
    return (struct cm_id *)id;
}

static inline struct cm_channel *cm_channel_of(struct rdma_event_channel *c)
{
    return (struct cm_channel *)c;
}

/* Sets errno to E and returns -1, as librdmacm's calls do. */
static inline int cm_err(int e)
{
    errno = e;
    return -1;
}

#endif
