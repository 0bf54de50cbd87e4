/*
 * device.c - libmroce devices: open (datapath sockets + engine endpoint +
 * progress machinery), close (everything created on the device goes with
 * it), defaults, error names, counters, and the graveyard that lets calls
 * on destroyed objects fail cleanly (see lib_int.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <mroce/wire.h>

#include "fault.h"
#include "dpdk_link.h"
#include "lib_int.h"
#include "secure_evp.h"

/* --- graveyard --- */

static pthread_mutex_t grave_lock = PTHREAD_MUTEX_INITIALIZER;
static void *grave[MROCE_GRAVE_MAX];
static unsigned grave_head, grave_n;

void lib_bury(void *o)
{
    struct lib_obj *h = o;
    h->magic = MAGIC_DEAD;
    h->prev = h->next = NULL;
    pthread_mutex_lock(&grave_lock);
    if (grave_n == MROCE_GRAVE_MAX) {
        free(grave[grave_head]);
        grave[grave_head] = o;
        grave_head = (grave_head + 1) % MROCE_GRAVE_MAX;
    } else {
        grave[(grave_head + grave_n) % MROCE_GRAVE_MAX] = o;
        grave_n++;
    }
    pthread_mutex_unlock(&grave_lock);
}

void lib_list_add(struct lib_list *l, struct lib_obj *o)
{
    o->prev = NULL;
    o->next = l->head;
    if (l->head)
        l->head->prev = o;
    l->head = o;
}

void lib_list_del(struct lib_list *l, struct lib_obj *o)
{
    if (o->prev)
        o->prev->next = o->next;
    else
        l->head = o->next;
    if (o->next)
        o->next->prev = o->prev;
    o->prev = o->next = NULL;
}

/* --- errors --- */

const char *mroce_strerror(int err)
{
    switch (err) {
    case MROCE_ETIMEDOUT:
        return "timed out";
    case MROCE_EUNREACH:
        return "peer unreachable (nobody listens there)";
    case MROCE_EADDR:
        return "bad or unusable address";
    case MROCE_ESOCKET:
        return "socket call failed";
    case MROCE_EDESTROYED:
        return "object already destroyed";
    case MROCE_EDATAPATH:
        return "the datapath cannot start (its cause is on stderr)";
    default:
        return mre_strerror(err);
    }
}

/* --- engine callbacks --- */

static void *eng_calloc(size_t n, size_t sz, void *user)
{
    (void)user;
    return calloc(n, sz);
}

static void eng_free(void *p, void *user)
{
    (void)user;
    free(p);
}

static void eng_rand(uint8_t *buf, size_t len, void *user)
{
    (void)user;
    while (len) {
        ssize_t r = getrandom(buf, len, 0);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            /* No entropy source at all: still never return unfilled bytes
             * (tokens would be zero), fall back to the clock. */
            uint64_t t = lib_now() * 0x9e3779b97f4a7c15ull;
            size_t k = len < sizeof(t) ? len : sizeof(t);
            memcpy(buf, &t, k);
            buf += k;
            len -= k;
            continue;
        }
        buf += r;
        len -= (size_t)r;
    }
}

/* --- device --- */

void mroce_device_attr_default(struct mroce_device_attr *attr)
{
    if (!attr)
        return;
    memset(attr, 0, sizeof(*attr));
    attr->local_addr = NULL;
    attr->port = 0;
    attr->src_port_count = 256;
    attr->progress = MROCE_PROGRESS_APP;
    attr->use_gso = 1;
    attr->use_gro = 1;
    attr->max_qps = 1024;
    attr->tx_fault.reorder_us = 50;
    attr->rx_fault.reorder_us = 50;
}

static void device_free(mroce_device *dev)
{
    if (dev->ep)
        mre_ep_del(dev->ep);
    lib_sec_free(dev->sec);
    dev->sec = NULL;
    lib_planes_close(dev);
    if (dev->udp)
        mroce_udp_close(dev->udp);
    if (dev->epfd >= 0)
        close(dev->epfd);
    if (dev->tfd >= 0)
        close(dev->tfd);
    if (dev->wakefd >= 0)
        close(dev->wakefd);
}

/* Secure mode (SEC-12): the master key from attr.key_file, else
 * MROCE_KEY_FILE, else MROCE_KEY; none: clear.  A key that is named but
 * unusable fails the open, so a typo never leaves traffic in clear. */
static int secure_open(mroce_device *dev, const struct mroce_device_attr *attr,
                       struct mre_ep_config *ec)
{
    uint8_t key[LIB_SEC_KEY_MAX];
    const char *file = attr->key_file, *hex = NULL;
    int n;
    if (!file) {
        file = getenv("MROCE_KEY_FILE");
        if (!file || !*file) {
            file = NULL;
            hex = getenv("MROCE_KEY");
        }
    }
    if ((!file || !*file) && (!hex || !*hex))
        return 0;
    if (file && *file) {
        n = lib_sec_read_key_file(file, key);
    } else {
        n = lib_sec_parse_hex(hex, key);
        if (n < 0)
            fprintf(stderr, "libmroce: MROCE_KEY: want 32 to 128 hex digits\n");
    }
    if (n < 0)
        return MROCE_EINVAL;
    uint8_t suite = attr->secure_suite;
    if (!suite) {
        const char *e = getenv("MROCE_SECURE_SUITE");
        suite = lib_sec_suite_parse(e && *e ? e : NULL);
        if (!suite) {
            fprintf(stderr, "libmroce: MROCE_SECURE_SUITE=\"%s\" unknown\n", e);
            memset(key, 0, sizeof key);
            return MROCE_EINVAL;
        }
    }
    uint8_t gen = attr->key_gen;
    const char *g = getenv("MROCE_KEY_GEN");
    if (!gen && g && *g) {
        char *end;
        unsigned long v = strtoul(g, &end, 10);
        if (*end || v > 255) {
            fprintf(stderr, "libmroce: MROCE_KEY_GEN=\"%s\": want 0-255\n", g);
            memset(key, 0, sizeof key);
            return MROCE_EINVAL;
        }
        gen = (uint8_t)v;
    }
    int rc = lib_sec_new(suite, gen, key, (size_t)n, &dev->sec);
    memset(key, 0, sizeof key);
    if (rc < 0)
        return rc;
    lib_sec_fill(dev->sec, ec);
    return 0;
}

static int epoll_add(int epfd, int fd, uint32_t events)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* The datapath under plane 0: kernel sockets (uc unchanged) or a DPDK
 * link (uc->link).  Returns 0, MROCE_EINVAL or MROCE_EDATAPATH (its cause
 * printed). */
static int open_datapath(mroce_device *dev, struct mroce_device_attr *attr,
                         struct mroce_udp_config *uc)
{
    if (attr->datapath == MROCE_DATAPATH_DEFAULT) {
        const char *dp = getenv("MROCE_DATAPATH");
        attr->datapath = MROCE_DATAPATH_SOCKET;
        if (dp && strcmp(dp, "dpdk") == 0) {
            attr->datapath = MROCE_DATAPATH_DPDK;
        } else if (dp && *dp && strcmp(dp, "socket") != 0) {
            fprintf(stderr,
                    "libmroce: unknown MROCE_DATAPATH=\"%s\" "
                    "(socket or dpdk)\n",
                    dp);
            return MROCE_EINVAL;
        }
    }
    if (attr->datapath == MROCE_DATAPATH_SOCKET)
        return 0;
    if (attr->datapath != MROCE_DATAPATH_DPDK)
        return MROCE_EINVAL;
    if (dev->nplanes > 1) {
        fprintf(stderr, "libmroce: the DPDK datapath serves one plane\n");
        return MROCE_EINVAL;
    }
    char err[256] = "";
    int rc = mroce_dpdk_link_open(&uc->link, &uc->local, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "libmroce: the DPDK datapath cannot start: %s\n", err);
    return rc;
}

int mroce_device_open(const struct mroce_device_attr *in, mroce_device **pdev)
{
    if (!pdev)
        return MROCE_EINVAL;
    *pdev = NULL;
    struct mroce_device_attr attr;
    if (in)
        attr = *in;
    else
        mroce_device_attr_default(&attr);
    if (attr.progress > MROCE_PROGRESS_THREAD || attr.dscp > 63 ||
        attr.max_qps > 65535 || attr.src_port_count > 4096)
        return MROCE_EINVAL;
    if (!attr.src_port_count)
        attr.src_port_count = 256;
    if (!attr.max_qps)
        attr.max_qps = 1024;
    if (!attr.port)
        attr.port = MROCE_UDP_PORT;
    const char *env = getenv("MROCE_FAULT");
    if (env && *env &&
        mroce_fault_parse(env, &attr.tx_fault, &attr.rx_fault,
                          &attr.fault_seed) < 0) {
        fprintf(stderr, "libmroce: cannot parse MROCE_FAULT=\"%s\"\n", env);
        return MROCE_EINVAL;
    }

    mroce_device *dev = calloc(1, sizeof(*dev));
    if (!dev)
        return MROCE_ENOMEM;
    if (lib_planes_parse(dev, &attr) < 0) {
        free(dev);
        return MROCE_EINVAL;
    }
    struct mroce_udp_config uc;
    mroce_udp_config_default(&uc);
    const char *la = attr.local_addr ? attr.local_addr : "127.0.0.1";
    if (lib_planes_first(dev))
        la = lib_planes_first(dev);
    if (dev->nplanes > 1 && attr.src_port_count < 64u * dev->nplanes)
        attr.src_port_count = (uint16_t)(64u * dev->nplanes); /* PATH-19 */
    if (strlen(la) >= 64 ||
        mroce_udp_resolve(la, attr.port, AF_UNSPEC, &uc.local) < 0) {
        free(dev);
        return MROCE_EADDR;
    }
    uc.src_port_base = attr.src_port_base;
    uc.src_port_count = attr.src_port_count;
    uc.dscp = attr.dscp;
    uc.use_gso = attr.use_gso;
    uc.use_gro = attr.use_gro;
    uc.tx_fault = attr.tx_fault;
    uc.rx_fault = attr.rx_fault;
    uc.fault_seed = attr.fault_seed;

    dev->epfd = dev->tfd = dev->wakefd = -1;
    dev->timer_at = MROCE_TSTAMP_INF;
    dev->next_pd = 1;
    snprintf(dev->local_addr, sizeof(dev->local_addr), "%s", la);
    int rc = open_datapath(dev, &attr, &uc);
    if (rc < 0)
        goto fail;
    rc = mroce_udp_open(&dev->udp, &uc);
    if (rc < 0)
        goto fail;
    attr.local_addr = dev->local_addr;
    attr.port = mroce_udp_port(dev->udp);
    attr.src_port_base = mroce_udp_src_base(dev->udp);
    attr.planes = NULL; /* the caller's string; dev->plane_addrs keeps it */
    dev->attr = attr;

    struct mre_ep_config ec;
    mre_ep_config_default(&ec);
    ec.mem.calloc = eng_calloc;
    ec.mem.free = eng_free;
    ec.rand = eng_rand;
    ec.max_qps = attr.max_qps;
    ec.rx_credit_bytes = attr.rx_credit_bytes;
    rc = lib_planes_open(dev, &uc, &ec);
    if (rc < 0)
        goto fail;
    /* Rate hints (CC-25): kernel UDP's RTTs reach a millisecond, so a
     * sender counts as active for 4 ms after its last packet. */
    ec.rate_active = 4000000;
    if (attr.rx_rate_mbps) {
        ec.rx_rate_mbps = attr.rx_rate_mbps;
    } else {
        const char *rr = getenv("MROCE_RX_RATE");
        if (rr && *rr)
            ec.rx_rate_mbps = (uint32_t)strtoul(rr, NULL, 10); /* "off": 0 */
    }
    rc = secure_open(dev, &attr, &ec);
    if (rc < 0)
        goto fail;
    const char *rot = getenv("MROCE_KEY_ROTATE_PKTS");
    if (rot && *rot)
        ec.sec_rotate_pkts = strtoull(rot, NULL, 10); /* tests: SEC-22 */
    rc = mre_ep_new(&dev->ep, &ec);
    if (rc < 0)
        goto fail;
    /* A first key of another generation than 0 (attr.key_gen): the
     * engine sends under it from the first connection on. */
    if (dev->sec && lib_sec_tx_gen(dev->sec) &&
        (rc = mre_ep_sec_use_gen(dev->ep, lib_sec_tx_gen(dev->sec))) < 0)
        goto fail;

    rc = MROCE_ESOCKET;
    dev->epfd = epoll_create1(EPOLL_CLOEXEC);
    dev->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    dev->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (dev->epfd < 0 || dev->tfd < 0 || dev->wakefd < 0 ||
        epoll_add(dev->epfd, mroce_udp_fd(dev->udp), EPOLLIN | EPOLLERR) < 0 ||
        epoll_add(dev->epfd, dev->tfd, EPOLLIN) < 0 ||
        epoll_add(dev->epfd, dev->wakefd, EPOLLIN) < 0 ||
        lib_planes_epoll(dev, dev->epfd) < 0)
        goto fail;
    if (pthread_mutex_init(&dev->lock, NULL) != 0)
        goto fail;
    const char *txc = getenv("MROCE_TX_COPY");
    dev->tx_copy = txc && atoi(txc) == 1;
    const char *dump = getenv("MROCE_DUMP_COUNTERS");
    dev->dump_counters = dump && atoi(dump) == 1;
    const char *bp = getenv("MROCE_BUSY_POLL_US");
    dev->busy_poll_ns = bp ? strtoull(bp, NULL, 10) * 1000 : LIB_BUSY_POLL_NS;
    const char *iy = getenv("MROCE_IDLE_YIELD_US");
    dev->idle_yield_ns = iy ? strtoull(iy, NULL, 10) * 1000 : LIB_IDLE_YIELD_NS;
    lib_defer_init(dev);
    dev->h.magic = MAGIC_DEV;
    if (attr.progress == MROCE_PROGRESS_THREAD) {
        rc = lib_thread_start(dev);
        if (rc < 0) {
            lib_defer_fini(dev);
            pthread_mutex_destroy(&dev->lock);
            goto fail;
        }
    }
    *pdev = dev;
    return 0;
fail:;
    int e = errno;
    device_free(dev);
    free(dev);
    errno = e;
    return rc;
}

void mroce_device_close(mroce_device *dev)
{
    if (lib_check(dev, MAGIC_DEV) < 0)
        return;
    lib_thread_stop(dev);
    lib_defer_fini(dev); /* the watchdog takes the lock: stop it first */
    if (dev->dump_counters) {
        /* The datapath's counters (syscalls, empty polls, GSO/GRO) next to
         * the QPs' below: which side of a transfer waits for the other. */
        struct mroce_udp_counters c;
        mroce_device_get_udp_counters(dev, &c);
        fprintf(stderr, "mroce device %u:", (unsigned)dev->attr.port);
        int col = 0;
#define MROCE_X_PRINT(name)                                           \
    if (c.name)                                                       \
        fprintf(stderr, "%s%s %llu", col++ % 6 ? " " : "\n  ", #name, \
                (unsigned long long)c.name);
        MROCE_UDP_COUNTERS(MROCE_X_PRINT)
#undef MROCE_X_PRINT
        fputc('\n', stderr);
    }
    lib_lock(dev);
    /* QPs first: they hold references on CQs, MRs and PDs.  The engine
     * objects all go with the endpoint below. */
    while (dev->qps.head) {
        mroce_qp *qp = (mroce_qp *)dev->qps.head;
        lib_list_del(&dev->qps, &qp->h);
        lib_qp_release(qp);
    }
    while (dev->mrs.head) {
        struct lib_obj *o = dev->mrs.head;
        lib_list_del(&dev->mrs, o);
        lib_bury(o);
    }
    while (dev->cqs.head) {
        mroce_cq *cq = (mroce_cq *)dev->cqs.head;
        lib_list_del(&dev->cqs, &cq->h);
        lib_cq_release(cq);
    }
    while (dev->pds.head) {
        struct lib_obj *o = dev->pds.head;
        lib_list_del(&dev->pds, o);
        lib_bury(o);
    }
    /* Send what is still staged (e.g. a last ACK) before the sockets go. */
    mroce_udp_flush(dev->udp, lib_now());
    device_free(dev);
    dev->ep = NULL;
    dev->udp = NULL;
    lib_unlock(dev);
    pthread_mutex_destroy(&dev->lock);
    lib_bury(dev);
}

uint16_t mroce_device_port(const mroce_device *dev)
{
    return lib_check(dev, MAGIC_DEV) < 0 ? 0 : dev->attr.port;
}

int mroce_device_query(const mroce_device *dev, struct mroce_device_attr *attr)
{
    int rc = lib_check(dev, MAGIC_DEV);
    if (rc < 0)
        return rc;
    if (!attr)
        return MROCE_EINVAL;
    *attr = dev->attr;
    return 0;
}

void mroce_device_get_counters(const mroce_device *cdev,
                               struct mroce_ep_counters *c)
{
    if (!c)
        return;
    memset(c, 0, sizeof(*c));
    if (lib_check(cdev, MAGIC_DEV) < 0)
        return;
    mroce_device *dev = (mroce_device *)cdev; /* the lock is not state */
    lib_lock(dev);
    mre_ep_get_counters(dev->ep, c);
    lib_unlock(dev);
}

void mroce_device_get_udp_counters(const mroce_device *cdev,
                                   struct mroce_udp_counters *c)
{
    if (!c)
        return;
    memset(c, 0, sizeof(*c));
    if (lib_check(cdev, MAGIC_DEV) < 0)
        return;
    mroce_device *dev = (mroce_device *)cdev;
    lib_lock(dev);
    mroce_udp_get_counters(dev->udp, c);
    c->progress_rounds = dev->progress_rounds;
    c->thread_sleeps = dev->thread_sleeps;
    c->idle_yields = dev->idle_yields;
    c->acks_deferred = dev->acks_deferred;
    c->acks_deferred_replied = dev->acks_deferred_replied;
    c->acks_deferred_late = dev->acks_deferred_late;
    c->acks_watchdog = dev->acks_watchdog;
    c->watchdog_ticks = atomic_load_explicit(&dev->wd_ticks,
                                             memory_order_relaxed);
    c->defer_pauses = dev->defer_pauses;
    lib_unlock(dev);
}

int mroce_device_progress(mroce_device *dev)
{
    int rc = lib_check(dev, MAGIC_DEV);
    if (rc < 0)
        return rc;
    lib_lock(dev);
    rc = lib_progress_locked(dev);
    if (dev->fd_requested && dev->attr.progress == MROCE_PROGRESS_APP) {
        /* Event-loop users sleep on mroce_device_fd(): clear a fired timer
         * and aim it at the next deadline. */
        uint64_t exp;
        if (read(dev->tfd, &exp, sizeof(exp)) == sizeof(exp))
            dev->timer_at = MROCE_TSTAMP_INF;
        lib_arm_timer_locked(dev, lib_next_deadline_locked(dev));
    }
    int yield = rc == 0 && lib_idle_take_locked(dev);
    lib_unlock(dev);
    lib_idle_yield(yield);
    return rc;
}

int mroce_device_fd(mroce_device *dev)
{
    int rc = lib_check(dev, MAGIC_DEV);
    if (rc < 0)
        return rc;
    if (dev->attr.progress != MROCE_PROGRESS_APP)
        return MROCE_ESTATE; /* the progress thread owns it */
    lib_lock(dev);
    dev->fd_requested = 1;
    lib_arm_timer_locked(dev, lib_next_deadline_locked(dev));
    lib_unlock(dev);
    return dev->epfd;
}
