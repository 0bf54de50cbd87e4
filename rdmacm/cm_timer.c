/* The CM exchange's timeouts, as rdma_cm's connection manager has them:
 * a message that needs an answer from the peer's CM arms a timer on its
 * id, and the CM thread fails the id when the answer has not come in
 * time (cm_thread.c, cm_on_timeout).  The base is MROCE_CM_TIMEOUT_MS
 * (default 4000, about IB's CM response timeout of 4.096 us x 2^20 that
 * rdma_cm asks for); the TCP connection's own retransmissions run inside
 * it.  Each timer records the state it guards: an id that has moved on
 * (the answer came) lets its timer lapse without effect, so only release
 * must stop one.  Callers hold cm_lock. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "rdmacm_int.h"

#define CM_TIMEOUT_MS 4000

static struct cm_id *timed; /* the ids with a timer armed */
static int wake_fd = -1;    /* tells the CM thread of a new deadline */
static long base_ms;

static uint64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

int cm_timer_init(void)
{
    const char *e = getenv("MROCE_CM_TIMEOUT_MS");
    base_ms = e && *e ? strtol(e, NULL, 10) : CM_TIMEOUT_MS;
    if (base_ms <= 0 || base_ms > 3600000)
        base_ms = CM_TIMEOUT_MS;
    wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return wake_fd < 0 ? -1 : wake_fd;
}

void cm_timer_wake_ack(void)
{
    uint64_t v;
    (void)!read(wake_fd, &v, sizeof(v));
}

void cm_timer_arm(struct cm_id *id, unsigned mult)
{
    id->timer_state = id->state;
    id->deadline_ms = now_ms() + (uint64_t)base_ms * mult;
    if (!id->timer_on) {
        id->timer_on = 1;
        id->timer_next = timed;
        timed = id;
    }
    uint64_t one = 1;
    (void)!write(wake_fd, &one, sizeof(one));
}

void cm_timer_stop(struct cm_id *id)
{
    if (!id->timer_on)
        return;
    for (struct cm_id **pp = &timed; *pp; pp = &(*pp)->timer_next)
        if (*pp == id) {
            *pp = id->timer_next;
            break;
        }
    id->timer_on = 0;
}

int cm_timer_next_ms(void)
{
    if (!timed)
        return -1;
    uint64_t now = now_ms(), first = UINT64_MAX;
    for (struct cm_id *id = timed; id; id = id->timer_next)
        if (id->deadline_ms < first)
            first = id->deadline_ms;
    return first <= now ? 0 : (int)(first - now > 60000 ? 60000 : first - now);
}

void cm_timer_expire(void)
{
    uint64_t now = now_ms();
    struct cm_id **pp = &timed;
    while (*pp) {
        struct cm_id *id = *pp;
        if (id->deadline_ms > now) {
            pp = &id->timer_next;
            continue;
        }
        *pp = id->timer_next;
        id->timer_on = 0;
        if (id->state == id->timer_state)
            cm_on_timeout(id);
        pp = &timed; /* cm_on_timeout may have armed or stopped others */
    }
}
