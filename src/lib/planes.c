/*
 * planes.c - a device's planes (docs/spec/multipath.md, Planes): one UDP
 * datapath per local plane address, the engine's plane configuration, and
 * the receive, flush and deadline work over all of them.
 *
 * Plane 0 is the device's own datapath (dev->udp, opened by device.c at
 * the first plane address); planes 1..P-1 are further datapaths on the
 * same port and source ports at their own addresses (IP addresses differ,
 * so the ports are free).  Each is a full src/udp datapath with its own
 * batching, GSO and GRO, and stamps its plane into every mre_rx_info; the
 * progress code sends each packet from the datapath of its
 * mre_tx_info.plane.  With one plane (no attribute, no MROCE_PLANES)
 * nothing here opens anything and the device is as without planes.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "lib_int.h"

int lib_planes_parse(mroce_device *dev, const struct mroce_device_attr *attr)
{
    const char *list = attr->planes ? attr->planes : getenv("MROCE_PLANES");
    dev->nplanes = 1;
    if (!list || !*list)
        return 0;
    unsigned n = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (n == MROCE_EP_MAX_PLANES || len == 0 ||
            len >= sizeof(dev->plane_addrs[0]))
            return MROCE_EINVAL;
        memcpy(dev->plane_addrs[n], p, len);
        dev->plane_addrs[n][len] = 0;
        n++;
        p += len;
        if (*p == ',')
            p++;
    }
    dev->nplanes = (uint8_t)(n ? n : 1);
    return 0;
}

const char *lib_planes_first(const mroce_device *dev)
{
    return dev->nplanes > 1 ? dev->plane_addrs[0] : NULL;
}

/* A peer's PLANES entry as an address of the device's family. */
static int plane_to_addr(struct mre_addr *out, const struct mre_plane_addr *in,
                         void *user)
{
    const mroce_device *dev = user;
    static const uint8_t v4pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    if (in->port == 0)
        return -1;
    if (mroce_udp_family(dev->udp) == AF_INET) {
        struct sockaddr_in *s = (struct sockaddr_in *)&ss;
        if (memcmp(in->addr, v4pfx, 12) != 0)
            return -1; /* an IPv6 plane for an IPv4 device */
        s->sin_family = AF_INET;
        s->sin_port = htons(in->port);
        memcpy(&s->sin_addr, in->addr + 12, 4);
        return mroce_udp_addr_from_sa(out, (struct sockaddr *)s, sizeof(*s));
    }
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(in->port);
    memcpy(&s6->sin6_addr, in->addr, 16);
    return mroce_udp_addr_from_sa(out, (struct sockaddr *)s6, sizeof(*s6));
}

/* The PLANES entry for a local address. */
static void plane_entry(struct mre_plane_addr *pa,
                        const struct sockaddr_storage *ss, uint16_t port)
{
    memset(pa, 0, sizeof(*pa));
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)ss;
        pa->addr[10] = pa->addr[11] = 0xff;
        memcpy(pa->addr + 12, &s->sin_addr, 4);
    } else {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
        memcpy(pa->addr, &s6->sin6_addr, 16);
    }
    pa->port = port;
}

int lib_planes_open(mroce_device *dev, const struct mroce_udp_config *uc0,
                    struct mre_ep_config *ec)
{
    dev->plane_udp[0] = dev->udp;
    if (dev->nplanes < 2)
        return 0;
    uint16_t port = mroce_udp_port(dev->udp);
    plane_entry(&ec->planes[0], &uc0->local, port);
    for (unsigned k = 1; k < dev->nplanes; k++) {
        struct mroce_udp_config uc = *uc0;
        if (mroce_udp_resolve(dev->plane_addrs[k], port,
                              mroce_udp_family(dev->udp), &uc.local) < 0)
            return MROCE_EADDR;
        uc.src_port_base = mroce_udp_src_base(dev->udp);
        uc.src_port_count = mroce_udp_src_count(dev->udp);
        uc.plane = (uint8_t)k;
        int rc = mroce_udp_open(&dev->plane_udp[k], &uc);
        if (rc < 0)
            return rc;
        plane_entry(&ec->planes[k], &uc.local, port);
    }
    ec->nplanes = dev->nplanes;
    ec->plane_addr = plane_to_addr;
    ec->plane_user = dev;
    return 0;
}

int lib_planes_epoll(mroce_device *dev, int epfd)
{
    for (unsigned k = 1; k < dev->nplanes; k++) {
        struct epoll_event ev;
        memset(&ev, 0, sizeof(ev));
        ev.events = EPOLLIN | EPOLLERR;
        ev.data.fd = mroce_udp_fd(dev->plane_udp[k]);
        if (epoll_ctl(epfd, EPOLL_CTL_ADD, ev.data.fd, &ev) < 0)
            return -1;
    }
    return 0;
}

void lib_planes_close(mroce_device *dev)
{
    for (unsigned k = 1; k < MROCE_EP_MAX_PLANES; k++)
        if (dev->plane_udp[k]) {
            mroce_udp_close(dev->plane_udp[k]);
            dev->plane_udp[k] = NULL;
        }
    dev->plane_udp[0] = NULL;
}

struct mroce_udp *lib_plane_udp(mroce_device *dev, uint8_t plane)
{
    if (plane < dev->nplanes && dev->plane_udp[plane])
        return dev->plane_udp[plane];
    return dev->udp;
}

void lib_planes_flush_locked(mroce_device *dev, mroce_tstamp now)
{
    for (unsigned k = 1; k < dev->nplanes; k++)
        mroce_udp_flush(dev->plane_udp[k], now);
}

mroce_tstamp lib_planes_expiry(const mroce_device *dev)
{
    mroce_tstamp t = MROCE_TSTAMP_INF;
    for (unsigned k = 1; k < dev->nplanes; k++) {
        mroce_tstamp e = mroce_udp_expiry(dev->plane_udp[k]);
        if (e < t)
            t = e;
    }
    return t;
}

struct mroce_udp *lib_planes_by_fd(mroce_device *dev, int fd)
{
    for (unsigned k = 0; k < dev->nplanes; k++)
        if (dev->plane_udp[k] && mroce_udp_fd(dev->plane_udp[k]) == fd)
            return dev->plane_udp[k];
    return NULL;
}

void lib_plane_blackhole(mroce_device *dev, uint8_t plane, int on)
{
    lib_lock(dev);
    if (plane < dev->nplanes && dev->plane_udp[plane])
        mroce_udp_set_blackhole(dev->plane_udp[plane], on);
    lib_unlock(dev);
}

void lib_plane_counters(mroce_device *dev, uint8_t plane,
                        struct mroce_udp_counters *c)
{
    memset(c, 0, sizeof(*c));
    lib_lock(dev);
    if (plane < dev->nplanes && dev->plane_udp[plane])
        mroce_udp_get_counters(dev->plane_udp[plane], c);
    lib_unlock(dev);
}
