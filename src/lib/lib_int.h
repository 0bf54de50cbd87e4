/*
 * lib_int.h - libmroce's objects and the functions its files share.
 *
 * libmroce puts a verbs-style API (mroce/mroce.h) over one sans-IO engine
 * endpoint per device and the UDP datapath (src/udp).  Files:
 *   device.c     devices, defaults, error names, counters, the graveyard
 *   progress.c   progress rounds (receive -> engine -> transmit), the
 *                progress thread, timers, blocking waits
 *   resources.c  protection domains, memory regions, completion queues
 *   qp.c         queue pairs: create, connect/accept/close, post, counters
 *   ackdefer.c   APP mode: ACKs left for the application's next call, and
 *                the watchdog that bounds how long they wait
 *   planes.c     a device's planes: one datapath per plane address
 *
 * Every object starts with a magic number.  A destroyed object keeps its
 * shell, marked dead, in a process-wide graveyard (the most recent
 * MROCE_GRAVE_MAX of them), so a call on a destroyed object reads a valid
 * header and returns MROCE_EDESTROYED instead of touching freed memory.
 *
 * Locking: each device has one mutex; every call that touches the engine or
 * the datapath holds it.  The progress thread takes it for one round at a
 * time.  Nothing is called with the lock held that could call back into the
 * API.
 */
#ifndef MROCE_LIB_INT_H
#define MROCE_LIB_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <mroce/engine.h>
#include <mroce/mroce.h>

#include "udp.h"

/* Internal to libmroce: not exported from libmroce.so (static linking,
 * as the tests do, still sees them). */
#pragma GCC visibility push(hidden)

enum lib_magic {
    MAGIC_DEV = 0x6d524456, /* "mRDV" */
    MAGIC_PD = 0x6d525044,
    MAGIC_MR = 0x6d524d52,
    MAGIC_CQ = 0x6d524351,
    MAGIC_QP = 0x6d525150,
    MAGIC_DEAD = 0x64656164, /* destroyed: the shell is in the graveyard */
};

#define MROCE_GRAVE_MAX 4096
/* Packets the engine is asked for in one progress round, so that a huge
 * window cannot starve receive processing. */
#define LIB_TX_BUDGET 512
/* recvmmsg batches read in one progress round. */
#define LIB_RX_ROUNDS 4
/* APP mode ACK deferral (ackdefer.c explains).  A deferred ACK that the
 * application's next call did not send within LIB_ACK_DEFER_NS (the default
 * max_ack_delay, REL-19) is late.  While deferrals happen the watchdog
 * looks LIB_ACK_WATCH_NS after it starts or last had to send, twice as long
 * after each look that found nothing late, up to LIB_ACK_WATCH_MAX_NS
 * (half of libmroce's 1 ms min_rto); it sends late ones, and sleeps after
 * LIB_ACK_WATCH_IDLE_NS without a deferral.  Each ACK it has to send adds
 * LIB_ACK_RESCUE_SCORE to a score that each ACK the application sends in
 * time lowers by one; at LIB_ACK_PAUSE_SCORE deferral pauses for
 * LIB_ACK_DEFER_PAUSE_NS (4 rescues in a row, or more than about one in 16
 * deferrals).  Adaptive mode (the default) also pauses for
 * LIB_ACK_IDLE_PAUSE_NS after LIB_ACK_NO_REPLY_MAX deferrals in a row that
 * no data overtook (the application did not answer: a bulk receiver); the
 * pause is longer than LIB_ACK_WATCH_IDLE_NS, so the watchdog sleeps
 * through it. */
#define LIB_ACK_RESCUE_SCORE 16u
#define LIB_ACK_PAUSE_SCORE 64u
#define LIB_ACK_DEFER_NS 10000ull
#define LIB_ACK_DEFER_PAUSE_NS 20000000ull
#ifndef LIB_ACK_WATCH_NS
#define LIB_ACK_WATCH_NS 100000ull
#endif
#ifndef LIB_ACK_WATCH_MAX_NS
#define LIB_ACK_WATCH_MAX_NS 500000ull
#endif
#define LIB_ACK_WATCH_IDLE_NS 2000000ull
#define LIB_ACK_NO_REPLY_MAX 4u
/* Polls (progress rounds) hold deferred ACKs this long, half of
 * LIB_ACK_DEFER_NS; a call that sends data sends them at once. */
#define LIB_ACK_HOLD_NS 5000ull
#define LIB_ACK_IDLE_PAUSE_NS 50000000ull
/* Inside a receive batch, the packets received after the engine first
 * had something to send (an ACK fell due) before it is sent: REL-18a
 * allows 16 further packets; 15 keeps an ACK within the 4 - 1 + 16 = 19
 * newly marked PSNs it states (see rx_one in progress.c). */
#define LIB_RX_ACK_LAG 15
/* A progress round that received at most this many packets takes the
 * time of their arrival as its "now" instead of reading the clock again
 * (progress.c). */
#define LIB_RX_STALE_OK_PKTS 2
/* Path burst the library asks of the engine: packets in a row on one
 * entropy, which the datapath sends as one GSO send. */
#define LIB_PATH_BURST 8
/* QP timing defaults for kernel UDP (see mroce_qp_init_attr_default). */
#define LIB_MIN_RTO 1000000ull     /* 1 ms */
#define LIB_TARGET_QDELAY 50000ull /* 50 us */
/* The progress thread keeps polling this long after the last packet before
 * it sleeps in epoll (MROCE_BUSY_POLL_US overrides). */
#define LIB_BUSY_POLL_NS 50000
/* APP mode: how long polls find nothing to do before each further poll
 * yields the CPU (progress.c explains; MROCE_IDLE_YIELD_US overrides, 0 =
 * never).  Well above a loopback round trip (~5 us), so ping-pongs spin. */
#define LIB_IDLE_YIELD_NS 50000
/* ... and only while the rounds that move packets move at least this many
 * on average (bulk transfer; a ping-pong moves one at a time and spins). */
#define LIB_IDLE_YIELD_MIN_PKTS 4

/* Common head of every object; prev/next link it into its device's list
 * of objects of its kind. */
struct lib_obj {
    uint32_t magic;
    struct lib_obj *prev, *next;
};

struct mroce_pd {
    struct lib_obj h;
    mroce_device *dev;
    uint32_t num;   /* engine protection domain */
    uint32_t users; /* MRs and QPs created in it */
};

struct mroce_mr {
    struct lib_obj h;
    mroce_device *dev;
    mroce_pd *pd;
    mre_mr *eng;
    struct mroce_mr_info info;
};

struct mroce_cq {
    struct lib_obj h;
    mroce_device *dev;
    mre_cq *eng;
    int efd;           /* eventfd, -1 until mroce_cq_fd()/mroce_cq_wait() */
    int signaled;      /* efd written since the CQ was last seen empty */
    int sol_only;      /* armed for the next solicited or failed completion */
    uint32_t sol_mark; /* mre_cq_solicited() when so armed */
    uint32_t users;    /* QPs bound to it */
};

struct mroce_qp {
    struct lib_obj h;
    mroce_device *dev;
    mroce_pd *pd;
    mroce_cq *scq, *rcq;
    mre_qp *eng;
    uint32_t qpn;
    struct mre_addr peer; /* connect target (for ICMP errors) */
    int conn_err;         /* why the handshake failed, 0 = no verdict */
};

struct lib_list {
    struct lib_obj *head;
};

struct mroce_device {
    struct lib_obj h;
    pthread_mutex_t lock;
    struct mroce_device_attr attr; /* as opened (defaults filled in) */
    char local_addr[64];           /* attr.local_addr points here */
    mre_ep *ep;
    struct mroce_udp *udp; /* plane 0 */
    /* planes (planes.c): plane_udp[0] == udp; rx_udp is the datapath
     * whose packets are being delivered */
    struct mroce_udp *plane_udp[MROCE_EP_MAX_PLANES];
    struct mroce_udp *rx_udp;
    uint8_t nplanes;
    char plane_addrs[MROCE_EP_MAX_PLANES][64];
    struct lib_list pds, mrs, cqs, qps;
    uint32_t next_pd;
    uint32_t ncq_armed;  /* CQs with an eventfd */
    mroce_tstamp rx_now; /* time of the current receive batch */
    uint32_t rx_due_in;  /* packets to receive before a drain
                                      (0: nothing due since the last) */
    int tx_copy;         /* MROCE_TX_COPY=1: no zero-copy tx */
    struct lib_sec *sec; /* secure mode's keys (secure_evp.c), or NULL */

    /* APP mode ACK deferral (ackdefer.c) */
    int defer_acks;                 /* enum lib_defer_mode (MROCE_DEFER_ACKS) */
    uint8_t tx_deferred;            /* ACKs staged in the datapath, unsent */
    uint8_t tx_data_staged;         /* packets other than ACKs staged since
                                      the last flush */
    uint8_t rx_ack_req;             /* this round received a SEND, WRITE
                                      or last READ/atomic response with
                                      ACK_REQ (1), a retransmitted one (2) */
    uint32_t defer_no_reply;        /* deferrals in a row no data overtook */
    uint64_t acks_deferred_replied; /* deferrals whose ACKs data overtook */
    uint64_t defer_pauses;          /* adaptive pauses (no replies) */
    mroce_tstamp defer_at;          /* when they were staged */
    mroce_tstamp defer_pause_until; /* no deferral before (after a late one) */
    uint32_t defer_score;           /* watchdog rescues, decaying */
    uint64_t acks_deferred, acks_deferred_late, acks_watchdog;
    _Atomic uint64_t wd_ticks;      /* the watchdog's looks (wake-ups) */
    _Atomic uint64_t wd_defer_at;   /* defer_at for the watchdog, 0 = none */
    _Atomic uint64_t wd_last_defer; /* time of the last deferral */
    atomic_int wd_awake;            /* the watchdog is ticking */
    pthread_mutex_t wd_lock;        /* wd_kick, wd_stop, wd_cond */
    pthread_cond_t wd_cond;
    int wd_kick, wd_stop, wd_started, wd_init;
    pthread_t wd_thread;

    /* progress */
    int epfd;              /* rx socket, timerfd, wakefd */
    int tfd;               /* timerfd: the engine's next expiry */
    int wakefd;            /* eventfd: stop the progress thread */
    mroce_tstamp timer_at; /* what tfd is armed for (INF = off) */
    int fd_requested;      /* mroce_device_fd() was called */
    pthread_t thread;
    int thread_started;
    atomic_int stop;
    uint64_t busy_poll_ns;
    uint64_t progress_rounds, thread_sleeps;
    mroce_tstamp idle_since;  /* APP mode: end of the last progress
                                      round that moved something */
    uint8_t idle_due;         /* the last round found the device idle
                                      for idle_yield_ns or longer */
    uint32_t round_pkts_avg8; /* packets per round that moved some,
                                      moving average x8 (1/8 weight) */
    uint64_t idle_yield_ns;   /* polls yield the CPU after this long
                                      idle (0 = never; MROCE_IDLE_YIELD_US) */
    uint64_t idle_yields;     /* sched_yield() calls made */
    int dump_counters;        /* MROCE_DUMP_COUNTERS=1 */
};

/* --- device.c --- */
/* 0 if o is a live object with this magic; MROCE_EINVAL for NULL or a
 * foreign pointer; MROCE_EDESTROYED for a destroyed one. */
static inline int lib_check(const void *o, uint32_t magic)
{
    if (!o)
        return MROCE_EINVAL;
    uint32_t m = ((const struct lib_obj *)o)->magic;
    if (m == magic)
        return 0;
    return m == MAGIC_DEAD ? MROCE_EDESTROYED : MROCE_EINVAL;
}
void lib_list_add(struct lib_list *l, struct lib_obj *o);
void lib_list_del(struct lib_list *l, struct lib_obj *o);
/* Marks o dead and keeps its shell in the graveyard (frees the oldest). */
void lib_bury(void *o);
static inline void lib_lock(mroce_device *d)
{
    pthread_mutex_lock(&d->lock);
}
static inline void lib_unlock(mroce_device *d)
{
    pthread_mutex_unlock(&d->lock);
}

/* --- progress.c --- */
mroce_tstamp lib_now(void);
/* One round: receive, timers, transmit, CQ events.  Lock held.  Returns
 * packets moved. */
int lib_progress_locked(mroce_device *dev);
/* APP mode: 1 if the last progress round found the device idle for the
 * idle yield time or longer (then counts the yield), else 0.  Lock held.
 * The caller passes the result to lib_idle_yield() after it has unlocked
 * (progress.c explains why polls yield). */
int lib_idle_take_locked(mroce_device *dev);
/* sched_yield() if due.  Lock not held. */
void lib_idle_yield(int due);
/* After an API call changed the engine: transmit what it queued, signal
 * CQs, and re-arm the progress thread's timer if the deadline moved
 * earlier.  now: the clock as the call read it for the engine.  Lock held. */
void lib_after_call_locked(mroce_device *dev, mroce_tstamp now);
/* CQ eventfds for CQs that became non-empty.  Lock held. */
void lib_signal_cqs_locked(mroce_device *dev);
/* Sends everything staged, deferred ACKs included.  Lock held. */
void lib_flush_locked(mroce_device *dev, mroce_tstamp now);
/* Earliest engine or datapath deadline.  Lock held. */
mroce_tstamp lib_next_deadline_locked(mroce_device *dev);
void lib_arm_timer_locked(mroce_device *dev, mroce_tstamp at);
/* Blocks until done(arg) (called with the lock held) returns non-zero, or
 * deadline (MROCE_TSTAMP_INF: none).  In APP mode it drives progress while
 * waiting.  Returns 1 if done, 0 on timeout. */
/* mroce_qp_linger's shortest quiet period (REL-41). */
#define LIB_LINGER_MIN_NS 10000000ull
int lib_wait(mroce_device *dev, int (*done)(void *arg), void *arg,
             mroce_tstamp deadline);
/* Deadline timeout_ms from now (negative: none). */
mroce_tstamp lib_deadline(int timeout_ms);
int lib_thread_start(mroce_device *dev);
void lib_thread_stop(mroce_device *dev);

/* --- ackdefer.c --- */
/* MROCE_DEFER_ACKS: 0 off; unset or 1 adaptive, only while the
 * application answers (the default); 2 every round that may (tests). */
enum lib_defer_mode {
    LIB_DEFER_OFF = 0,
    LIB_DEFER_ADAPTIVE = 1,
    LIB_DEFER_ALWAYS = 2,
};
/* Reads MROCE_DEFER_ACKS, sets up the watchdog's lock (not its thread). */
void lib_defer_init(mroce_device *dev);
/* Stops and joins the watchdog.  Lock not held. */
void lib_defer_fini(mroce_device *dev);
/* 1 if the ACKs of the round that just received something may be left for
 * the application's next call.  Lock held. */
int lib_defer_allowed_locked(mroce_device *dev, mroce_tstamp now);
/* The datapath now holds deferred ACKs staged at now (kept > 0) or none
 * (kept == 0).  Lock held. */
void lib_defer_note_locked(mroce_device *dev, unsigned kept, mroce_tstamp now);
/* Deferred ACKs were just sent (or there are none): account for their
 * delay; replied: other packets (the application's answer) went out ahead
 * of them in the same flush.  Lock held. */
void lib_defer_sent_locked(mroce_device *dev, mroce_tstamp now, int replied);

/* --- memcheck.c --- */
/* 0 if every byte of [addr, addr + len) is mapped readable (and writable,
 * with want_write); MROCE_EFAULT if one is unmapped or unreadable, else
 * MROCE_EACCESS if one is not writable though want_write.  The range must
 * have passed mre_mr_reg_check() (len > 0, no wrap).  Makes system calls:
 * call it without the device lock. */
int lib_mem_check(const void *addr, size_t len, int want_write);
/* The same from the text of /proc/self/maps alone, as on kernels without
 * PROCMAP_QUERY (for tests). */
int lib_mem_check_text(const void *addr, size_t len, int want_write);

/* --- resources.c / qp.c: teardown used by mroce_device_close --- */
/* --- planes (planes.c) --- */
/* Reads attr->planes or MROCE_PLANES into dev (nplanes, plane_addrs):
 * 0 or MROCE_EINVAL. */
int lib_planes_parse(mroce_device *dev, const struct mroce_device_attr *attr);
/* Plane 0's address when there are planes, else NULL (use local_addr). */
const char *lib_planes_first(const mroce_device *dev);
/* After dev->udp (plane 0) is open: opens planes 1.. like uc0 and fills
 * the engine's plane configuration.  0 or a negative error. */
int lib_planes_open(mroce_device *dev, const struct mroce_udp_config *uc0,
                    struct mre_ep_config *ec);
int lib_planes_epoll(mroce_device *dev, int epfd); /* planes 1.. */
void lib_planes_close(mroce_device *dev);          /* planes 1.. */
/* The datapath of a plane (dev->udp for plane 0 or an unknown one). */
struct mroce_udp *lib_plane_udp(mroce_device *dev, uint8_t plane);
void lib_planes_flush_locked(mroce_device *dev, mroce_tstamp now);
mroce_tstamp lib_planes_expiry(const mroce_device *dev);
struct mroce_udp *lib_planes_by_fd(mroce_device *dev, int fd);
/* Test hooks: blackhole a plane's sockets; read its datapath counters. */
void lib_plane_blackhole(mroce_device *dev, uint8_t plane, int on);
void lib_plane_counters(mroce_device *dev, uint8_t plane,
                        struct mroce_udp_counters *c);

void lib_cq_release(mroce_cq *cq); /* closes efd, buries */
void lib_qp_release(mroce_qp *qp); /* dumps counters if asked, buries */

#pragma GCC visibility pop

#endif /* MROCE_LIB_INT_H */
