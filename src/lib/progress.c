/*
 * progress.c - what makes packets move: the progress round (receive a
 * batch -> mre_ep_recv() each; fire due timers; drain mre_ep_write_pkt()
 * into the datapath's transmit slots; flush), CQ eventfd signalling, the
 * optional progress thread (busy-polls briefly, then sleeps in epoll on the
 * receive socket and a timerfd set to the engine's next expiry), and the
 * blocking waits used by connect/accept/disconnect/cq_wait.
 *
 * Transmission also happens in the caller's thread right after an API call
 * that gives the engine something to send (post_send, connect...), like a
 * NIC doorbell: no hand-off to the progress thread, no wake-up latency.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <mroce/wire.h>

#include "lib_int.h"

mroce_tstamp lib_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (mroce_tstamp)ts.tv_sec * 1000000000ull + (mroce_tstamp)ts.tv_nsec;
}

mroce_tstamp lib_deadline(int timeout_ms)
{
    if (timeout_ms < 0)
        return MROCE_TSTAMP_INF;
    return lib_now() + (mroce_tstamp)timeout_ms * 1000000ull;
}

static int drain_tx_locked(mroce_device *dev, mroce_tstamp now, int keep_acks);
_Static_assert(MROCE_F_ACK_REQ < 0x100 && MROCE_F_RETX < 0x100,
               "ACK_REQ and RETX are in the flags' low byte");

static void rx_one(void *user, const uint8_t *pkt, size_t len,
                   const struct mre_rx_info *info)
{
    mroce_device *dev = user;
    /* A fresh clock per datagram: a recvmmsg batch can take a while to
     * process, and RTT samples taken with a stale time would be too small.
     * The segments of one GRO datagram arrived together, so they share
     * their first segment's time (a clock read is ~20 ns in a VM, a
     * segment's processing ~300 ns; up to ~15 segments a datagram). */
    if (!mroce_udp_rx_same_datagram(dev->rx_udp ? dev->rx_udp : dev->udp))
        dev->rx_now = lib_now();
    mroce_tstamp now = dev->rx_now;
    /* A SEND or WRITE with ACK_REQ: its sender has nothing queued behind
     * it and waits; our application may be about to answer.  Likewise the
     * last response of a READ or atomic (its ACK_REQ marks the last
     * packet): the round completes our request, and the application often
     * answers that completion at once (the provider's rendezvous FIN;
     * without deferral the FIN waited behind the ACK's sendmsg, which on
     * loopback runs the peer's receive path inline: 1-5 us per 1 MiB
     * message).  Only rounds that received one, and no retransmission,
     * defer their ACKs (ackdefer.c): a sender that retransmits is
     * recovering a loss, and the ACK that ends it should not wait.  A peek
     * at two bytes of an unchecked packet: a forged one costs one
     * deferral.  Flags are big-endian (WIRE-14): byte 3 holds bits 0-7. */
    if (len >= MROCE_BASE_HDR_LEN &&
        (pkt[1] == MROCE_OP_SEND || pkt[1] == MROCE_OP_WRITE ||
         pkt[1] == MROCE_OP_READ_RESP || pkt[1] == MROCE_OP_ATOMIC_RESP) &&
        (pkt[3] & (MROCE_F_ACK_REQ | MROCE_F_RETX)))
        dev->rx_ack_req |= (pkt[3] & MROCE_F_RETX) ? 2 : 1;
    mre_ep_recv(dev->ep, pkt, len, info, now);
    /* One recvmmsg batch may hold ~120 packets (8 GRO datagrams of up to
     * ~15 each).  Sending only after the whole batch would delay ACKs by
     * its processing time (tens of us), which the peer would read as RTT
     * and queueing; so what is due leaves within the batch, as late as
     * REL-18a allows: LIB_RX_ACK_LAG packets after something fell due (an
     * ACK, on a stream at the 4th new packet since the last one), so an
     * ACK covers up to 4 - 1 + 16 = 19 PSNs.  Each ACK costs this side a
     * sendmsg (on loopback the peer's receive path runs inline in it) and
     * the peer a receive, so the lag is counted from what fell due, not
     * from the last drain, which would leave fewer PSNs per ACK. */
    if (dev->rx_due_in) {
        if (--dev->rx_due_in == 0)
            drain_tx_locked(dev, now, 0);
    } else if (mre_ep_want_write(dev->ep)) {
        dev->rx_due_in = LIB_RX_ACK_LAG;
    }
}

/* ICMP error for something we sent: a QP still handshaking with that
 * address learns that nobody listens there, and fails now rather than at
 * its handshake timeout. */
static void rx_icmp(void *user, const struct mre_addr *to, int err)
{
    mroce_device *dev = user;
    (void)err;
    for (struct lib_obj *o = dev->qps.head; o; o = o->next) {
        mroce_qp *qp = (mroce_qp *)o;
        if (mre_qp_state(qp->eng) == MROCE_QPS_CONNECTING &&
            qp->peer.len == to->len &&
            !memcmp(qp->peer.data, to->data, to->len)) {
            qp->conn_err = MROCE_EUNREACH;
            mre_qp_set_error(qp->eng);
        }
    }
}

/* Engine -> transmit slots -> kernel.  Returns packets produced.
 * keep_acks: send all but the ACKs, which stay staged for the application's
 * next call (ackdefer.c).
 * Zero-copy: a data packet's payload is not copied into the slot; the
 * kernel reads it from the application's registered memory during the
 * flush at the end of this function, before anything can complete the work
 * request that owns it (completions come from received ACKs and timers,
 * which are handled outside this function, and from no one else: the
 * device lock is held).  Saves one 4 KiB copy per packet. */
static int drain_tx_locked(mroce_device *dev, mroce_tstamp now, int keep_acks)
{
    int n = 0;
    dev->rx_due_in = 0; /* what is due goes now (or is deferred) */
    while (n < LIB_TX_BUDGET) {
        size_t cap;
        uint8_t *buf = mroce_udp_tx_slot(dev->udp, &cap);
        struct mre_tx_info ti;
        struct mre_tx_zc zc = {NULL, 0}; /* stays so with MROCE_TX_COPY */
        int len = dev->tx_copy
                      ? mre_ep_write_pkt(dev->ep, buf, cap, &ti, now)
                      : mre_ep_write_pkt_zc(dev->ep, buf, cap, &ti, &zc, now);
        if (len <= 0)
            break;
        struct mroce_udp *u = dev->udp;
        if (ti.plane != 0 && (u = lib_plane_udp(dev, ti.plane)) != dev->udp) {
            /* Another plane's datapath (planes.c): move what the slot holds
             * (the whole packet, or headers and CRC) into one of its slots;
             * the slot written here is left uncommitted, for the next. */
            size_t cap2, held = (size_t)len - zc.payload_len;
            uint8_t *b2 = mroce_udp_tx_slot(u, &cap2);
            if (held > cap2)
                break; /* cannot happen: every datapath has equal slots */
            memcpy(b2, buf, held);
            buf = b2;
        }
        /* The slot starts with the packet's headers, zero-copy or not.
         * CONNECT_REQ leaves from the receive port: the listener answers
         * the source address of the request (src/lib/qp.c explains).  ACKs
         * go after the data of the same flush (MROCE_UDP_TX_LATE); anything
         * else staged means a held ACK is overtaken (lib_flush_locked). */
        unsigned fl = 0;
        if (len > 1 && buf[1] == MROCE_OP_CONNECT_REQ)
            fl = MROCE_UDP_TX_FROM_RX;
        else if (len > 1 && buf[1] == MROCE_OP_ACK)
            fl = MROCE_UDP_TX_LATE;
        if (fl != MROCE_UDP_TX_LATE)
            dev->tx_data_staged = 1;
        /* Without a zero-copy payload this is mroce_udp_tx_commit(). */
        mroce_udp_tx_commit_zc(u, (size_t)len,
                               (size_t)len - zc.payload_len - MROCE_CRC_LEN,
                               zc.payload, &ti, fl, now);
        n++;
    }
    if (keep_acks) {
        lib_defer_note_locked(dev, mroce_udp_flush_early(dev->udp, now), now);
        lib_planes_flush_locked(dev, now); /* deferral is plane 0's */
        dev->tx_data_staged = 0;
    } else {
        lib_flush_locked(dev, now);
    }
    return n;
}

void lib_flush_locked(mroce_device *dev, mroce_tstamp now)
{
    /* Deferred ACKs that leave behind other packets (MROCE_UDP_TX_LATE)
     * did their job: the application's answer overtook them. */
    int replied = dev->tx_data_staged;
    mroce_udp_flush(dev->udp, now);
    lib_planes_flush_locked(dev, now);
    dev->tx_data_staged = 0;
    if (dev->tx_deferred)
        lib_defer_sent_locked(dev, now, replied);
}

void lib_signal_cqs_locked(mroce_device *dev)
{
    if (!dev->ncq_armed)
        return;
    for (struct lib_obj *o = dev->cqs.head; o; o = o->next) {
        mroce_cq *cq = (mroce_cq *)o;
        if (cq->efd >= 0 && !cq->signaled &&
            (cq->sol_only ? mre_cq_solicited(cq->eng) != cq->sol_mark
                          : mre_cq_count(cq->eng) != 0)) {
            uint64_t one = 1;
            cq->signaled = 1;
            cq->sol_only = 0;
            if (write(cq->efd, &one, sizeof(one)) < 0) {
                /* Only fails if the counter would overflow: still readable. */
            }
        }
    }
}

mroce_tstamp lib_next_deadline_locked(mroce_device *dev)
{
    mroce_tstamp a = mre_ep_expiry(dev->ep);
    mroce_tstamp b = mroce_udp_expiry(dev->udp);
    mroce_tstamp c = dev->nplanes > 1 ? lib_planes_expiry(dev)
                                      : MROCE_TSTAMP_INF;
    if (c < b)
        b = c;
    return a < b ? a : b;
}

void lib_arm_timer_locked(mroce_device *dev, mroce_tstamp at)
{
    if (at == dev->timer_at)
        return;
    struct itimerspec its;
    memset(&its, 0, sizeof(its));
    if (at != MROCE_TSTAMP_INF) {
        if (at == 0)
            at = 1; /* 0 would disarm */
        its.it_value.tv_sec = (time_t)(at / 1000000000ull);
        its.it_value.tv_nsec = (long)(at % 1000000000ull);
    }
    if (timerfd_settime(dev->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
        dev->timer_at = at;
}

/* One round: send the ACKs deferred more than LIB_ACK_HOLD_NS ago,
 * receive, fire timers, send (a round that received a request with ACK_REQ
 * may defer its ACKs, one that holds younger ones goes on holding them:
 * ackdefer.c). */
int lib_progress_locked(mroce_device *dev)
{
    int moved = 0, rx = 0;
    dev->progress_rounds++;
    /* Held ACKs wait through polls for up to LIB_ACK_HOLD_NS: an
     * application often polls once more (for the completion of its own
     * last send, whose ACK arrives behind the answer) before it answers. */
    mroce_tstamp t = lib_now();
    if (dev->tx_deferred && t - dev->defer_at >= LIB_ACK_HOLD_NS) {
        lib_flush_locked(dev, t);
        t = lib_now(); /* the flush made a system call */
    }
    int held = dev->tx_deferred;
    dev->rx_ack_req = 0;
    /* Timers due before this round's packets could arm any (below). */
    mroce_tstamp due0 = mre_ep_expiry(dev->ep);
    for (int i = 0; i < LIB_RX_ROUNDS; i++) {
        dev->rx_now = i ? lib_now() : t;
        int r = mroce_udp_recv(dev->udp, rx_one, rx_icmp, dev, dev->rx_now);
        if (r <= 0)
            break;
        rx += r;
        /* A batch that was not full emptied the socket: another call now
         * would be an empty system call on the way to the application. */
        if (mroce_udp_rx_drained(dev->udp))
            break;
    }
    /* The other planes' datapaths, the same way (planes.c). */
    for (unsigned k = 1; k < dev->nplanes; k++) {
        struct mroce_udp *u = dev->plane_udp[k];
        dev->rx_udp = u;
        for (int i = 0; i < LIB_RX_ROUNDS; i++) {
            dev->rx_now = lib_now();
            int r = mroce_udp_recv(u, rx_one, rx_icmp, dev, dev->rx_now);
            if (r <= 0)
                break;
            rx += r;
            if (mroce_udp_rx_drained(u))
                break;
        }
        dev->rx_udp = NULL;
    }
    moved += rx;
    /* Nothing received: the clock read before the receive is still now
     * (one read less per idle poll).  A packet or two: the time read when
     * the last datagram arrived is a few hundred ns old, which is all the
     * processing took (a ping-pong's round; a read costs ~40 ns in a VM,
     * and this one would be on the way to the application's answer).  A
     * stale time errs safely: timers fire a little later, and the ACK
     * Delay of an ACK written now comes out smaller, so the peer's RTT
     * sample larger. */
    mroce_tstamp now = rx > LIB_RX_STALE_OK_PKTS ? lib_now() : dev->rx_now;
    /* A round that fired a timer armed before it (recovery, a probe, the
     * keepalive, an ACK an earlier round left due) does not defer.  The
     * ACK delay timer of this round's own packets may fall due while the
     * round still processes them (max_ack_delay is 10 us; four 4 KiB READ
     * responses take longer than that under a sanitizer or on a slow
     * host): firing it only makes the ACK due, which is what deferral
     * decides about, so it does not count. */
    int fired = 0, fired_old = 0;
    if (mre_ep_expiry(dev->ep) <= now) {
        mre_ep_handle_expiry(dev->ep, now);
        fired = 1;
        fired_old = due0 <= now;
    }
    int keep = (dev->rx_ack_req == 1 || (held && !dev->rx_ack_req)) &&
               !fired_old && lib_defer_allowed_locked(dev, now);
    moved += drain_tx_locked(dev, now, keep);
    lib_signal_cqs_locked(dev);
    if (moved > 0)
        dev->round_pkts_avg8 += (uint32_t)moved -
                                ((dev->round_pkts_avg8 + 7) >> 3);
    if (moved || fired || dev->attr.progress != MROCE_PROGRESS_APP ||
        !dev->idle_since) {
        dev->idle_since = now;
        dev->idle_due = 0;
    } else {
        dev->idle_due = dev->idle_yield_ns &&
                        dev->round_pkts_avg8 >= 8 * LIB_IDLE_YIELD_MIN_PKTS &&
                        now - dev->idle_since >= dev->idle_yield_ns;
    }
    return moved;
}

/* Idle yield (APP mode).  A busy-polling application spins on poll_cq
 * while it waits for its peer, and on loopback the peer is another process
 * on the same few cores: whenever more threads are runnable than there are
 * cores (two busy pollers on a 2-core host plus anything else), the spinner
 * takes CPU time from the very process it is waiting for, whose
 * descheduling then stalls the transfer for whole scheduler slices (ms),
 * and the RTT samples and RTOs with it.  So once the device has been idle
 * for LIB_IDLE_YIELD_NS (50 us: nothing received, sent or due), every
 * further poll that finds nothing yields the CPU: on an idle core
 * sched_yield() returns at once (a cheap system call), on a contended one
 * the waiting process steps aside.  It takes both sides yielding to gain
 * anything.  Only bulk transfers yield: rounds that move packets must move
 * at least LIB_IDLE_YIELD_MIN_PKTS on average (GRO batches, GSO bursts).
 * A ping-pong moves one packet a round and keeps spinning: there a yield
 * gives away a whole slice when others are runnable, which costs far more
 * than the round itself (figures: docs/LOG.md).
 * The polls (mroce_poll_cq, mroce_device_progress) ask under the lock and
 * yield after unlocking, so other threads of the application are never
 * kept waiting for the lock by a yield. */
int lib_idle_take_locked(mroce_device *dev)
{
    if (!dev->idle_due)
        return 0;
    dev->idle_yields++;
    return 1;
}

void lib_idle_yield(int due)
{
    if (due)
        sched_yield();
}

void lib_after_call_locked(mroce_device *dev, mroce_tstamp now)
{
    drain_tx_locked(dev, now, 0);
    lib_signal_cqs_locked(dev);
    /* A sleeping progress thread must wake for a deadline earlier than the
     * one its timer is set for (a new loss timer, a handshake retry). */
    if (dev->attr.progress == MROCE_PROGRESS_THREAD || dev->fd_requested) {
        mroce_tstamp t = lib_next_deadline_locked(dev);
        if (t < dev->timer_at)
            lib_arm_timer_locked(dev, t);
    }
}

/* --- blocking waits --- */

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull),
                          (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

int lib_wait(mroce_device *dev, int (*done)(void *arg), void *arg,
             mroce_tstamp deadline)
{
    int app = dev->attr.progress == MROCE_PROGRESS_APP;
    for (;;) {
        lib_lock(dev);
        if (app)
            lib_progress_locked(dev);
        int d = done(arg);
        if (dev->tx_deferred) /* about to sleep or return: send the ACKs */
            lib_flush_locked(dev, lib_now());
        mroce_tstamp exp = lib_next_deadline_locked(dev);
        lib_unlock(dev);
        if (d)
            return 1;
        mroce_tstamp now = lib_now();
        if (now >= deadline)
            return 0;
        mroce_tstamp until = deadline;
        if (app) {
            /* Sleep until a packet arrives or a timer is due. */
            if (exp < until)
                until = exp;
            if (until <= now)
                continue;
            uint64_t ns = until - now;
            struct timespec ts = {(time_t)(ns / 1000000000ull),
                                  (long)(ns % 1000000000ull)};
            struct pollfd pf[MROCE_EP_MAX_PLANES];
            unsigned np = dev->nplanes, k, err = 0;
            for (k = 0; k < np; k++) {
                pf[k].fd = mroce_udp_fd(lib_plane_udp(dev, (uint8_t)k));
                pf[k].events = POLLIN;
                pf[k].revents = 0;
            }
            (void)ppoll(pf, np, &ts, NULL);
            for (k = 0; k < np; k++)
                err |= (pf[k].revents & POLLERR) != 0;
            if (err) {
                /* The error queue does not drain by itself: read it now,
                 * or poll would report it forever. */
                lib_lock(dev);
                lib_progress_locked(dev);
                lib_unlock(dev);
            }
        } else {
            /* The progress thread moves packets; state changes have no
             * event of their own, so look again soon. */
            uint64_t ns = until - now;
            sleep_ns(ns < 200000 ? ns : 200000);
        }
    }
}

/* --- progress thread --- */

static void drain_fd(int fd)
{
    uint64_t v;
    while (read(fd, &v, sizeof(v)) == sizeof(v)) {
    }
}

static void *progress_main(void *arg)
{
    mroce_device *dev = arg;
    int rxfd = mroce_udp_fd(dev->udp);
    mroce_tstamp idle_since = lib_now();
    while (!atomic_load(&dev->stop)) {
        lib_lock(dev);
        int moved = lib_progress_locked(dev);
        lib_unlock(dev);
        mroce_tstamp now = lib_now();
        if (moved > 0) {
            idle_since = now;
            continue;
        }
        if (now - idle_since < dev->busy_poll_ns)
            continue; /* busy-poll: the next packet is likely close */
        lib_lock(dev);
        mroce_tstamp exp = lib_next_deadline_locked(dev);
        if (exp <= lib_now()) {
            lib_unlock(dev);
            continue;
        }
        lib_arm_timer_locked(dev, exp);
        dev->thread_sleeps++;
        lib_unlock(dev);
        struct epoll_event ev[4];
        int n = epoll_wait(dev->epfd, ev, 4, -1);
        for (int i = 0; i < n; i++) {
            if (ev[i].data.fd == dev->tfd) {
                drain_fd(dev->tfd);
                lib_lock(dev);
                dev->timer_at = MROCE_TSTAMP_INF; /* fired */
                lib_unlock(dev);
            } else if (ev[i].data.fd == dev->wakefd) {
                drain_fd(dev->wakefd);
            } else if (ev[i].events & EPOLLERR) {
                lib_lock(dev);
                struct mroce_udp *u = ev[i].data.fd == rxfd
                                          ? dev->udp
                                          : lib_planes_by_fd(dev,
                                                             ev[i].data.fd);
                if (u)
                    mroce_udp_drain_errors(u, rx_icmp, dev);
                lib_unlock(dev);
            }
        }
        idle_since = lib_now();
    }
    return NULL;
}

int lib_thread_start(mroce_device *dev)
{
    atomic_store(&dev->stop, 0);
    if (pthread_create(&dev->thread, NULL, progress_main, dev) != 0)
        return MROCE_ENOMEM;
    dev->thread_started = 1;
    return 0;
}

void lib_thread_stop(mroce_device *dev)
{
    if (!dev->thread_started)
        return;
    atomic_store(&dev->stop, 1);
    uint64_t one = 1;
    if (write(dev->wakefd, &one, sizeof(one)) < 0) {
        /* counter overflow only: the thread is awake anyway */
    }
    pthread_join(dev->thread, NULL);
    dev->thread_started = 0;
}
