/*
 * mroce_domain.c - the domain: one libmroce device (a UDP port on the
 * local address the fi_info names), its protection domain and the one
 * libmroce completion queue that all of the device's QPs report to.
 *
 * Port choice: libmroce devices listen on a fixed port (no port 0), so a
 * domain without a port in its source address tries ports from
 * FI_MROCE_PORT_BASE (or a random point in 20000-59999) until one is free;
 * that port is the name of the domain and of the endpoint it lends the
 * device to.  The domain's further endpoints open devices of their own
 * the same way (mfi_dev_open; mroce_ep.c).
 *
 * Progress: FI_PROGRESS_MANUAL runs the protocol inside the application's
 * calls (CQ reads above all; the device itself is in libmroce's APP mode).
 * FI_PROGRESS_AUTO adds one thread per domain that sleeps in
 * mroce_cq_wait() (which drives the device while waiting) and handles
 * completions under the domain lock, so rendezvous reads, FINs and
 * unexpected messages move while the application computes.  It waits on
 * the domain's device only (the others may close under it), at most 1 ms
 * at a time, and then progresses every endpoint, their own devices too.
 *
 * MTU: unless FI_MROCE_MTU says otherwise, the QPs' MetaRoCE MTU comes
 * from the interface that holds the domain's address: the largest power of
 * two whose packet (IP, UDP and MetaRoCE headers, CRC) fits the
 * interface's MTU, at most 16384 (4096 when the interface is not found).
 * Loopback (MTU 65536) gets 16384: fewer packets to build, checksum, send
 * and take apart than with 4096, while a 64 KiB GSO send still holds three
 * of them (it would hold only one of 32 KiB; figures in docs/LOG.md); a
 * 1500-byte Ethernet interface gets 1024
 * (4096 could not leave it: the sockets forbid fragmentation).  The peers
 * use the smaller of their two MTUs (the handshake negotiates it).
 *
 * Even with FI_PROGRESS_MANUAL the transport must stay alive while the
 * application is away (fi_pingpong, between sizes, sits in a TCP read
 * for a long while; an MPI rank computes): the peer's retransmissions
 * need ACKs (after retry_cnt unanswered timeouts and FI_MROCE_PEER_TIMEOUT
 * of silence its QP fails), and its SENDs need receive buffers (after
 * rnr_retry RNR rounds of 20 us, ~5 ms, they fail).  So a light keeper
 * thread, when no progress call has come for two of its periods
 * (FI_MROCE_KEEPER_US, 500 us; 0 turns it off),
 * runs one progress pass itself: under the domain
 * lock if it is free (trylock: it never waits for the application), else
 * libmroce alone, and again every period while the application stays
 * away.  While the application polls it costs a wake-up every other
 * period, and the application a counter increment per progress call.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mroce/wire.h>

#include "mroce_fi.h"

/* The keeper wakes every FI_MROCE_KEEPER_US and acts after twice that
 * without a progress call from the application. */

/* Largest MTU taken from an interface (see the top of the file). */
#define MFI_AUTO_MTU_MAX 16384
/* When the interface's MTU cannot be found. */
#define MFI_AUTO_MTU_DEFAULT 4096

/* The MTU of the interface holding address sa, or 0. */
static int iface_mtu(const struct sockaddr *sa)
{
    struct ifaddrs *ifs;
    if (getifaddrs(&ifs) < 0)
        return 0;
    int mtu = 0;
    for (struct ifaddrs *i = ifs; i && !mtu; i = i->ifa_next) {
        const struct sockaddr *a = i->ifa_addr;
        if (!a || a->sa_family != sa->sa_family || !i->ifa_name)
            continue;
        int same =
            sa->sa_family == AF_INET6
                ? !memcmp(&((const struct sockaddr_in6 *)(const void *)a)
                               ->sin6_addr,
                          &((const struct sockaddr_in6 *)(const void *)sa)
                               ->sin6_addr,
                          sizeof(struct in6_addr))
                : ((const struct sockaddr_in *)(const void *)a)
                          ->sin_addr.s_addr ==
                      ((const struct sockaddr_in *)(const void *)sa)
                          ->sin_addr.s_addr;
        if (!same)
            continue;
        int fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            break;
        struct ifreq r;
        memset(&r, 0, sizeof(r));
        snprintf(r.ifr_name, sizeof(r.ifr_name), "%s", i->ifa_name);
        if (ioctl(fd, SIOCGIFMTU, &r) == 0 && r.ifr_mtu > 0)
            mtu = r.ifr_mtu;
        close(fd);
    }
    freeifaddrs(ifs);
    return mtu;
}

int mfi_domain_mtu(const struct sockaddr *sa)
{
    if (mfi_param.mtu)
        return mfi_param.mtu;
    int ifmtu = iface_mtu(sa);
    if (ifmtu <= 0)
        return MFI_AUTO_MTU_DEFAULT;
    int room = ifmtu - (sa->sa_family == AF_INET6 ? 40 : 20) - 8 -
               (int)MROCE_MAX_DATA_HDR_LEN - (int)MROCE_CRC_LEN;
    int mtu = 256;
    while (mtu * 2 <= room && mtu * 2 <= MFI_AUTO_MTU_MAX)
        mtu *= 2;
    return mtu;
}

uint64_t mfi_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps ns (in slices of at most 100 ms, so a close is not kept
 * waiting long); returns 0 when the domain is stopping. */
static int keeper_nap(struct mfi_domain *d, uint64_t ns)
{
    while (ns && !atomic_load(&d->stop)) {
        uint64_t n = ns < 100000000ull ? ns : 100000000ull;
        struct timespec ts = {(time_t)(n / 1000000000ull),
                              (long)(n % 1000000000ull)};
        nanosleep(&ts, NULL);
        ns -= n;
    }
    return !atomic_load(&d->stop);
}

static void *keeper_thread(void *arg)
{
    struct mfi_domain *d = arg;
    uint64_t period = (uint64_t)mfi_param.keeper_us * 1000ull;
    /* The last progress count seen, and when it was last seen to move:
     * the application's progress calls only bump a counter (no clock read
     * on the polling path); the keeper keeps the time. */
    pthread_setname_np(pthread_self(), "mroce-keeper"); /* for tests */
    uint64_t seen = atomic_load(&d->progress_seq), moved_at = mfi_now_ns();
    int naps = 1;
    while (!atomic_load(&d->stop)) {
        /* While the application polls, wake every other period: it could
         * not need us before two periods anyway, and every wake-up takes
         * a core from a polling process (this host may have only two).
         * One sleep of that length, not two of a period: a wake-up is what
         * costs, and two naps woke us every period all the same. */
        if (!keeper_nap(d, naps * period))
            break;
        uint64_t seq = atomic_load_explicit(&d->progress_seq,
                                            memory_order_relaxed);
        uint64_t now = mfi_now_ns();
        if (seq != seen) {
            seen = seq;
            moved_at = now;
            naps = 2;
            continue;
        }
        naps = 1;
        if (now - moved_at <= 2 * period)
            continue;
        /* The application is away: run the protocol (repost receive
         * buffers, take unexpected messages, answer rendezvous) if the
         * domain is free, else at least the transport. */
        if (pthread_mutex_trylock(&d->lock) == 0) {
            mfi_domain_progress(d);
            /* Our own call is not the application's: act again next
             * period if it stays away. */
            seen = atomic_load_explicit(&d->progress_seq, memory_order_relaxed);
            /* The endpoints' own devices (only under the lock: their
             * endpoints may close once it is released). */
            for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
                if (ep->own_dev)
                    mroce_device_progress(ep->dev);
            mfi_unlock(d);
            /* libmroce holds back the ACKs of a round until the next call
             * (the application usually answers at once); nobody will
             * answer now, so make that next call. */
            mroce_device_progress(d->dev);
        } else {
            while (mroce_device_progress(d->dev) > 0 &&
                   !atomic_load(&d->stop)) {
            }
        }
    }
    return NULL;
}

void mfi_domain_progress(struct mfi_domain *d)
{
    /* Under the domain lock: a plain increment (no locked instruction). */
    atomic_store_explicit(&d->progress_seq,
                          atomic_load_explicit(&d->progress_seq,
                                               memory_order_relaxed) +
                              1,
                          memory_order_relaxed);
    if (d->shared) { /* one CQ for all: poll it once */
        mfi_shared_poll(d);
        for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
            if (ep->enabled)
                mfi_ep_after_poll(ep);
        return;
    }
    for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
        if (ep->enabled)
            mfi_ep_progress(ep);
}

static void *progress_thread(void *arg)
{
    struct mfi_domain *d = arg;
    while (!atomic_load(&d->stop)) {
        /* Wait outside the lock: libmroce drives the device meanwhile. */
        int rc = mroce_cq_wait(d->cq, 1);
        mfi_lock(d);
        mfi_domain_progress(d);
        mfi_unlock(d);
        if (rc < 0)
            usleep(1000);
    }
    return NULL;
}

static int domain_close(struct fid *fid)
{
    struct mfi_domain *d = (struct mfi_domain *)fid;
    if (d->refs)
        return -FI_EBUSY;
    if (d->thread_on) {
        atomic_store(&d->stop, 1);
        pthread_join(d->thread, NULL);
    }
    if (d->shared)
        mfi_shared_domain_close(d);
    mroce_device_close(d->dev); /* and everything on it */
    d->fab->refs--;
    pthread_mutex_destroy(&d->lock);
    free(d);
    return 0;
}

static struct fi_ops domain_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = domain_close,
    .bind = mfi_no_bind,
    .control = mfi_no_control,
    .ops_open = mfi_domain_ops_open,
    .tostr = mfi_no_tostr,
    .ops_set = mfi_no_ops_set,
};

static int no_sep(struct fid_domain *domain, struct fi_info *info,
                  struct fid_ep **sep, void *context)
{
    return -FI_ENOSYS;
}

static int no_stx(struct fid_domain *domain, struct fi_tx_attr *attr,
                  struct fid_stx **stx, void *context)
{
    return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *domain, struct fi_rx_attr *attr,
                  struct fid_ep **rx_ep, void *context)
{
    return -FI_ENOSYS;
}

static int no_collective(struct fid_domain *domain, enum fi_collective_op coll,
                         struct fi_collective_attr *attr, uint64_t flags)
{
    return -FI_ENOSYS;
}

/* fi_endpoint2 (endpoint flags such as FI_PEER): no flags are known. */
static int domain_endpoint2(struct fid_domain *domain, struct fi_info *info,
                            struct fid_ep **ep, uint64_t flags, void *context)
{
    if (flags)
        return -FI_EBADFLAGS;
    return mfi_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = mfi_av_open,
    .cq_open = mfi_cq_open,
    .endpoint = mfi_ep_open,
    .scalable_ep = no_sep,
    .cntr_open = mfi_cntr_open,
    .poll_open = mfi_poll_open,
    .stx_ctx = no_stx,
    .srx_ctx = no_srx,
    .query_atomic = mfi_query_atomic,
    .query_collective = no_collective,
    .endpoint2 = domain_endpoint2,
};

static struct fi_ops_mr domain_mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = mfi_mr_reg,
    .regv = mfi_mr_regv,
    .regattr = mfi_mr_regattr,
};

int mfi_dev_open(const struct sockaddr *sa, mroce_device **dev,
                 struct sockaddr_storage *addr, size_t *addrlen, int *mtu)
{
    char ip[INET6_ADDRSTRLEN];
    uint16_t port;
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const void *)sa;
        inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
        port = ntohs(s->sin6_port);
    } else {
        const struct sockaddr_in *s = (const void *)sa;
        inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
        port = ntohs(s->sin_port);
    }
    struct mroce_device_attr a;
    mroce_device_attr_default(&a);
    a.local_addr = ip;
    a.src_port_count = (uint16_t)mfi_param.paths;
    a.progress = MROCE_PROGRESS_APP;
    int rc = mfi_sec_attr(&a);
    if (rc)
        return rc;
    rc = MROCE_EADDR;
    if (port) {
        a.port = port;
        rc = mroce_device_open(&a, dev);
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        unsigned seed = (unsigned)ts.tv_nsec ^ (unsigned)getpid() * 2654435761u;
        unsigned base = mfi_param.port_base ? (unsigned)mfi_param.port_base
                                            : 20000 + seed % 40000;
        for (unsigned i = 0; i < 200 && rc == MROCE_EADDR; i++) {
            a.port = (uint16_t)(base + i * 7);
            if (a.port < 1024)
                continue;
            rc = mroce_device_open(&a, dev);
        }
    }
    if (rc < 0) {
        MFI_WARN(FI_LOG_DOMAIN, "cannot open a MetaRoCE device on %s: %s\n", ip,
                 mroce_strerror(rc));
        return rc == MROCE_EADDR ? -FI_EADDRNOTAVAIL : -FI_EIO;
    }
    memcpy(addr, sa, mfi_sa_len(sa));
    *addrlen = mfi_sa_len(sa);
    *mtu = mfi_domain_mtu(sa);
    port = mroce_device_port(*dev);
    if (sa->sa_family == AF_INET6)
        ((struct sockaddr_in6 *)addr)->sin6_port = htons(port);
    else
        ((struct sockaddr_in *)addr)->sin_port = htons(port);
    return 0;
}

int mfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
                    struct fid_domain **dom, void *context)
{
    if (!info || !info->src_addr)
        return -FI_EINVAL;
    if (info->domain_attr && info->domain_attr->name &&
        strcmp(info->domain_attr->name, MFI_NAME))
        return -FI_EINVAL;
    struct mfi_domain *d = calloc(1, sizeof(*d));
    if (!d)
        return -FI_ENOMEM;
    pthread_mutex_init(&d->lock, NULL);
    d->fab = (struct mfi_fabric *)fabric;
    d->addr_format = info->addr_format;
    d->threading = info->domain_attr ? info->domain_attr->threading
                                     : FI_THREAD_SAFE;
    d->data_progress = info->domain_attr ? info->domain_attr->data_progress
                                         : FI_PROGRESS_MANUAL;
    d->mr_mode = info->domain_attr ? info->domain_attr->mr_mode : 0;
    d->shared = mfi_param.shared_conn;
    int rc = mfi_dev_open(info->src_addr, &d->dev, &d->addr, &d->addrlen,
                          &d->mtu);
    if (rc)
        goto fail;
    if ((rc = mroce_pd_alloc(d->dev, &d->pd)) < 0 ||
        (rc = mroce_create_cq(d->dev, MFI_CQ_DEPTH, &d->cq)) < 0) {
        mroce_device_close(d->dev);
        rc = -FI_ENOMEM;
        goto fail;
    }
    {
        void *(*fn)(void *) = d->data_progress == FI_PROGRESS_AUTO
                                  ? progress_thread
                              : mfi_param.keeper_us ? keeper_thread
                                                    : NULL;
        if (fn && pthread_create(&d->thread, NULL, fn, d)) {
            mroce_device_close(d->dev);
            rc = -FI_ENOMEM;
            goto fail;
        }
        d->thread_on = fn != NULL;
    }
    d->dom.fid.fclass = FI_CLASS_DOMAIN;
    d->dom.fid.context = context;
    d->dom.fid.ops = &domain_fi_ops;
    d->dom.ops = &domain_ops;
    d->dom.mr = &domain_mr_ops;
    d->fab->refs++;
    *dom = &d->dom;
    return 0;
fail:
    pthread_mutex_destroy(&d->lock);
    free(d);
    return rc;
}
