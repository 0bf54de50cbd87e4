/*
 * ackdefer.c - APP progress mode: the ACKs of a progress round that
 * received a SEND or WRITE with ACK_REQ (its sender has nothing queued
 * behind it: it waits for an answer or a completion), or the last response
 * of a READ or atomic (which completes ours), are left staged in the
 * datapath for the application's next call, and a watchdog thread bounds
 * how long they can wait there.
 *
 * Why defer: the application has just been handed what arrived and often
 * answers it at once (a ping-pong's reply, an RPC's response).  Its
 * post_send then sends the reply first and the ACK right after it
 * (MROCE_UDP_TX_LATE), instead of the reply waiting behind the ACK's
 * sendmsg, which on loopback runs the peer's receive path inline.  A poll
 * that comes first sends the ACKs at the start of its round.
 *
 * Why a watchdog: "the next call" has no bound.  An application that
 * receives a request and then computes for a second before it calls again
 * (test_e2e_loopback: the server checks 64 MiB after a command) would hold
 * the command's ACK that long, and the peer's retransmission timer would
 * run out its retries (RETRY_EXC_ERR).  So while deferrals happen, a thread
 * looks every LIB_ACK_WATCH_NS and sends deferred ACKs older than
 * LIB_ACK_DEFER_NS (it only takes the device lock when there are some: a
 * ping-pong's ACKs leave within a microsecond and it never contends); after
 * LIB_ACK_WATCH_IDLE_NS without a deferral it sleeps on a condition
 * variable, and the next deferral wakes it.
 *
 * Bounds (REL-19, max_ack_delay 10 us by default): an application that
 * calls back promptly sends each deferred ACK within a microsecond or two.
 * One that does not makes a deferred ACK late (sent by its next call or the
 * watchdog after more than LIB_ACK_DEFER_NS); then deferral pauses for
 * LIB_ACK_DEFER_PAUSE_NS, so a compute-after-receive pattern costs at most
 * one late ACK per pause, and that one is at most a watchdog period (up
 * to LIB_ACK_WATCH_MAX_NS, 500 us) late where a core is free, below the
 * 1 ms minimum RTO (on a host with none, see below).  A late
 * ACK's ACK Delay field, written when the ACK was staged, understates its
 * hold time: the peer then sees a longer RTT, the safe direction.
 *
 * The watchdog must not cost the pollers it protects.  While a ping-pong
 * runs, deferrals never stop and the watchdog never sleeps; on a host with
 * no idle core (two busy pollers on two cores) a wake-up at normal
 * priority preempts a poller for a whole context switch.  So:
 *   - the thread runs under SCHED_IDLE: its wake-ups never preempt a
 *     running thread of normal policy; it runs on an idle core at once,
 *     and on a fully busy host when the scheduler next balances (at the
 *     latest a tick or two, 4-8 ms at HZ 250).  When it has ACKs to send
 *     it holds the device lock; preempted there, it delays a caller that
 *     needs the lock only until it runs again, and the caller, blocked,
 *     frees its core for it (unless other normal-policy work takes it);
 *   - its period doubles after each look that found nothing late, from
 *     LIB_ACK_WATCH_NS (100 us) to LIB_ACK_WATCH_MAX_NS (500 us, half of
 *     libmroce's 1 ms min_rto), and falls back to 100 us after each ACK it
 *     had to send (the watchdog_ticks counter counts its looks).
 * The cost: on a host with no idle core, an application that stops
 * calling with a deferred ACK has it sent up to a few ms late instead of
 * ~100 us, and its peer may retransmit once on its RTO (1 ms) in the
 * meantime: a spurious retransmission, not a failure (a QP survives
 * retry_cnt RTOs and peer_timeout of silence at least).
 * Not deferred: progress-thread mode, rounds that fired a timer armed
 * before they began (the ACK delay timer of the round's own packets does
 * not count: src/lib/progress.c).  Devices whose fd is polled
 * (mroce_device_fd) defer too: the fd does not wake its sleeper for a
 * held ACK, the watchdog bounds it as for any caller that stays away
 * (verbs/progress.c, the fd's one user, calls back within microseconds
 * while it serves).
 *
 * On by default, adaptive (MROCE_DEFER_ACKS unset or 1; 0 turns it off, 2
 * defers in every round that may, for tests).  An application must not
 * assume that the ACK of what it received leaves before what it sends
 * next: a peer that stops counting completions at a control message (a
 * FIN) may see the last send completion of a batch after it.
 *
 * Adaptive: deferring pays only when the application answers: then the
 * held ACKs leave behind its answer in the flush of its next call
 * (lib_flush_locked sees other packets staged ahead of them:
 * acks_deferred_replied).  A receiver that does not answer (a bulk
 * stream's receiver, write_bw's server) gains nothing: its next call is a
 * poll that sends the ACKs first anyway, a little later; and each deferral
 * keeps the watchdog ticking, which takes CPU time from spinning pollers
 * on a small host.  So LIB_ACK_NO_REPLY_MAX deferrals in a row that no
 * answer overtook pause deferral for LIB_ACK_IDLE_PAUSE_NS, long enough for
 * the watchdog to go to sleep (LIB_ACK_WATCH_IDLE_NS); then it is tried
 * again.  A bulk receiver thus defers a handful of ACKs every 50 ms, and
 * its ACK clock is the one without deferral.  Rounds without an ACK_REQ
 * packet never defer: the ACKs a stream's ack_freq (REL-18) asks for, and
 * those of a READ's earlier responses, leave at once.  The round with a
 * READ's (or atomic's) last response, which carries ACK_REQ, defers: the
 * reader's application answers a whole READ, if at all, and the provider's
 * rendezvous does at once (its FIN).  fi_pingpong at 1 MiB thus defers
 * about twice per message (the RTS, the last READ response), nearly
 * always behind an answer.
 *
 * Polls hold deferred ACKs for up to LIB_ACK_HOLD_NS (5 us, half of
 * max_ack_delay): an application that polls once more before it answers
 * (fi_send ping-pongs through the provider wait for their own send's
 * completion, whose ACK arrives behind the answer) would otherwise send
 * the ACK first in that poll and count as not answering.
 *
 * The held ACKs leave in their own system call, not in the answer's: the
 * answer then mostly arrives alone, and the peer processes the ACK while
 * its application works on the reply instead of before the application
 * sees the answer.
 *
 * The measurements behind these choices are in docs/LOG.md.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "lib_int.h"

void lib_defer_init(mroce_device *dev)
{
    const char *e = getenv("MROCE_DEFER_ACKS");
    int m = e && *e ? atoi(e) : LIB_DEFER_ADAPTIVE;
    dev->defer_acks = m == LIB_DEFER_OFF || m == LIB_DEFER_ALWAYS
                          ? m
                          : LIB_DEFER_ADAPTIVE;
    if (pthread_mutex_init(&dev->wd_lock, NULL) != 0)
        dev->defer_acks = 0;
    else if (pthread_cond_init(&dev->wd_cond, NULL) != 0) {
        pthread_mutex_destroy(&dev->wd_lock);
        dev->defer_acks = 0;
    } else {
        dev->wd_init = 1;
    }
}

int lib_defer_allowed_locked(mroce_device *dev, mroce_tstamp now)
{
    return dev->defer_acks && dev->attr.progress == MROCE_PROGRESS_APP &&
           now >= dev->defer_pause_until;
}

void lib_defer_sent_locked(mroce_device *dev, mroce_tstamp now, int replied)
{
    if (!dev->tx_deferred)
        return;
    if (now - dev->defer_at > LIB_ACK_DEFER_NS)
        dev->acks_deferred_late++;
    else if (dev->defer_score)
        dev->defer_score--; /* sent in time by the application */
    if (replied) {
        dev->acks_deferred_replied++;
        dev->defer_no_reply = 0;
    } else if (++dev->defer_no_reply >= LIB_ACK_NO_REPLY_MAX &&
               dev->defer_acks == LIB_DEFER_ADAPTIVE) {
        /* The application does not answer what it receives (a bulk
         * receiver, or one that polls again before it answers): deferring
         * gains it nothing and keeps the watchdog ticking.  Look again
         * after a pause long enough for the watchdog to sleep. */
        dev->defer_no_reply = 0;
        dev->defer_pauses++;
        if (dev->defer_pause_until < now + LIB_ACK_IDLE_PAUSE_NS)
            dev->defer_pause_until = now + LIB_ACK_IDLE_PAUSE_NS;
    }
    dev->tx_deferred = 0;
    atomic_store(&dev->wd_defer_at, 0);
}

static void *watch_main(void *arg);

/* Wakes the watchdog (starting it the first time).  Lock held. */
static void watch_kick_locked(mroce_device *dev)
{
    pthread_mutex_lock(&dev->wd_lock);
    if (!dev->wd_started) {
        if (pthread_create(&dev->wd_thread, NULL, watch_main, dev) != 0) {
            /* No watchdog, no unbounded deferral. */
            pthread_mutex_unlock(&dev->wd_lock);
            dev->defer_acks = 0;
            mroce_udp_flush(dev->udp, lib_now());
            dev->tx_deferred = 0;
            atomic_store(&dev->wd_defer_at, 0);
            return;
        }
        dev->wd_started = 1;
    }
    dev->wd_kick = 1;
    pthread_cond_signal(&dev->wd_cond);
    pthread_mutex_unlock(&dev->wd_lock);
}

void lib_defer_note_locked(mroce_device *dev, unsigned kept, mroce_tstamp now)
{
    if (!kept) {
        lib_defer_sent_locked(dev, now, 1);
        return;
    }
    if (dev->tx_deferred)
        return; /* older ones still staged: keep their time */
    dev->tx_deferred = 1;
    dev->defer_at = now;
    dev->acks_deferred++;
    /* Both stores before the load of wd_awake (seq_cst): either the
     * watchdog, going to sleep, sees them, or we see it asleep. */
    atomic_store(&dev->wd_defer_at, now ? now : 1);
    atomic_store(&dev->wd_last_defer, now);
    if (!atomic_load(&dev->wd_awake))
        watch_kick_locked(dev);
}

static void nap(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull),
                          (long)(ns % 1000000000ull)};
    nanosleep(&ts, NULL);
}

/* Ticks while deferrals happen; returns when they stopped or on stop.
 * Backs off while every look finds the ACKs already sent (ackdefer.c's
 * top says why). */
static void watch_ticks(mroce_device *dev)
{
    uint64_t period = LIB_ACK_WATCH_NS;
    for (;;) {
        nap(period);
        atomic_fetch_add_explicit(&dev->wd_ticks, 1, memory_order_relaxed);
        pthread_mutex_lock(&dev->wd_lock);
        int stop = dev->wd_stop;
        pthread_mutex_unlock(&dev->wd_lock);
        if (stop)
            return;
        mroce_tstamp now = lib_now();
        uint64_t at = atomic_load(&dev->wd_defer_at);
        int late = at && now - at >= LIB_ACK_DEFER_NS;
        period = late                                ? LIB_ACK_WATCH_NS
                 : period * 2 < LIB_ACK_WATCH_MAX_NS ? period * 2
                                                     : LIB_ACK_WATCH_MAX_NS;
        if (late) {
            lib_lock(dev);
            if (dev->tx_deferred) {
                /* The application stayed away (computing, or preempted on
                 * a busy host).  Several times in a short while: it does
                 * not answer what it receives at once, so stop deferring
                 * for a while. */
                mroce_tstamp t = lib_now();
                dev->acks_watchdog++;
                dev->defer_score += LIB_ACK_RESCUE_SCORE;
                if (dev->defer_score >= LIB_ACK_PAUSE_SCORE) {
                    dev->defer_score = 0;
                    dev->defer_pause_until = t + LIB_ACK_DEFER_PAUSE_NS;
                }
                lib_flush_locked(dev, t);
            }
            lib_unlock(dev);
        }
        if (now - atomic_load(&dev->wd_last_defer) > LIB_ACK_WATCH_IDLE_NS)
            return;
    }
}

static void *watch_main(void *arg)
{
    mroce_device *dev = arg;
    /* Named, to be told apart in top -H and /proc/PID/task. */
    pthread_setname_np(pthread_self(), "mroce-ackwd");
    /* Never preempt the application's pollers (top of the file).  Lowering
     * one's own priority needs no privilege; if it fails all the same, the
     * watchdog still works, only at a cost to busy pollers. */
    struct sched_param sp = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    pthread_mutex_lock(&dev->wd_lock);
    for (;;) {
        while (!dev->wd_stop && !dev->wd_kick)
            pthread_cond_wait(&dev->wd_cond, &dev->wd_lock);
        if (dev->wd_stop)
            break;
        dev->wd_kick = 0;
        atomic_store(&dev->wd_awake, 1);
        pthread_mutex_unlock(&dev->wd_lock);
        watch_ticks(dev);
        pthread_mutex_lock(&dev->wd_lock);
        atomic_store(&dev->wd_awake, 0);
        /* A deferral that saw us awake did not kick: look once more. */
        if (atomic_load(&dev->wd_defer_at))
            dev->wd_kick = 1;
    }
    pthread_mutex_unlock(&dev->wd_lock);
    return NULL;
}

void lib_defer_fini(mroce_device *dev)
{
    if (!dev->wd_init)
        return;
    pthread_mutex_lock(&dev->wd_lock);
    int started = dev->wd_started;
    dev->wd_stop = 1;
    pthread_cond_signal(&dev->wd_cond);
    pthread_mutex_unlock(&dev->wd_lock);
    if (started)
        pthread_join(dev->wd_thread, NULL);
    pthread_cond_destroy(&dev->wd_cond);
    pthread_mutex_destroy(&dev->wd_lock);
    dev->wd_init = 0;
    dev->wd_started = 0;
}
