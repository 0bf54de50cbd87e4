/* The devices librdmacm binds identifiers to: every device our libibverbs
 * lists (MROCE_IBV_DEVICES), opened once with a default PD, and found by
 * the IP address its GID (index 0) names.  Also starts the CM thread: the
 * first call of the library runs cm_init. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm_int.h"

static struct cm_dev devs[CM_MAX_DEVICES];
static int ndevs;
static int init_rc;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void gid_to_addr(const union ibv_gid *g, struct sockaddr_storage *ss)
{
    static const uint8_t v4pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(ss, 0, sizeof(*ss));
    if (memcmp(g->raw, v4pre, 12) == 0) {
        struct sockaddr_in *s = (struct sockaddr_in *)ss;
        s->sin_family = AF_INET;
        memcpy(&s->sin_addr, &g->raw[12], 4);
    } else {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
        s->sin6_family = AF_INET6;
        memcpy(&s->sin6_addr, g->raw, 16);
    }
}

static void init_once(void)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list) {
        init_rc = errno ? errno : ENODEV;
        return;
    }
    for (int i = 0; i < n && ndevs < CM_MAX_DEVICES; i++) {
        struct cm_dev *d = &devs[ndevs];
        d->ctx = ibv_open_device(list[i]);
        if (!d->ctx)
            continue;
        struct ibv_port_attr pa;
        d->pd = ibv_alloc_pd(d->ctx);
        if (!d->pd || ibv_query_gid(d->ctx, 1, 0, &d->gid) ||
            ibv_query_port(d->ctx, 1, &pa)) {
            if (d->pd)
                ibv_dealloc_pd(d->pd);
            ibv_close_device(d->ctx);
            continue;
        }
        d->mtu = pa.active_mtu;
        gid_to_addr(&d->gid, &d->addr);
        ndevs++;
    }
    ibv_free_device_list(list);
    init_rc = cm_thread_start();
}

int cm_init(void)
{
    pthread_once(&once, init_once);
    return init_rc;
}

int cm_ndevs(void)
{
    return ndevs;
}

struct cm_dev *cm_dev_at(int i)
{
    return i >= 0 && i < ndevs ? &devs[i] : NULL;
}

socklen_t cm_addrlen(const struct sockaddr *a)
{
    return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                    : sizeof(struct sockaddr_in);
}

int cm_addr_any(const struct sockaddr *a)
{
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               htonl(INADDR_ANY);
    if (a->sa_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(
            &((const struct sockaddr_in6 *)a)->sin6_addr);
    return 0;
}

/* An IPv4-mapped IPv6 address matches the IPv4 device too. */
struct cm_dev *cm_dev_by_addr(const struct sockaddr *a)
{
    uint8_t want[16];
    static const uint8_t v4pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (a->sa_family == AF_INET) {
        memcpy(want, v4pre, 12);
        memcpy(&want[12], &((const struct sockaddr_in *)a)->sin_addr, 4);
    } else if (a->sa_family == AF_INET6) {
        memcpy(want, &((const struct sockaddr_in6 *)a)->sin6_addr, 16);
    } else {
        return NULL;
    }
    for (int i = 0; i < ndevs; i++)
        if (memcmp(devs[i].gid.raw, want, 16) == 0)
            return &devs[i];
    return NULL;
}

struct cm_dev *cm_dev_by_family(int family)
{
    for (int i = 0; i < ndevs; i++)
        if (devs[i].addr.ss_family == family)
            return &devs[i];
    return NULL;
}

struct cm_dev *cm_dev_by_ctx(struct ibv_context *ctx)
{
    for (int i = 0; i < ndevs; i++)
        if (devs[i].ctx == ctx)
            return &devs[i];
    return NULL;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
    if (cm_init()) {
        errno = init_rc;
        return NULL;
    }
    struct ibv_context **l = calloc((size_t)ndevs + 1, sizeof(*l));
    if (!l)
        return NULL;
    for (int i = 0; i < ndevs; i++)
        l[i] = devs[i].ctx;
    if (num_devices)
        *num_devices = ndevs;
    return l;
}

void rdma_free_devices(struct ibv_context **list)
{
    free(list);
}
