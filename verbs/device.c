/*
 * device.c - the verbs devices: configuration, listing, open/close and the
 * queries (device, port, GID, P_Key).
 *
 * MROCE_IBV_DEVICES="mroce0=127.0.0.1[:port],mroce1=::1[:port]..." names
 * one device per local address (IPv6 in brackets when a port follows:
 * "[::1]:4800"); unset, one device mroce0 on 127.0.0.1.  The port is the
 * UDP port the device receives on (MROCE_IBV_PORT, else 4794).  Peers are
 * found at the address of their GID and MROCE_IBV_PEER_PORT (else the
 * device's own port): every MetaRoCE verbs device of a fabric receives on
 * one well-known port, as RoCEv2 does on 4791, so two processes on one host
 * use two addresses (127.0.0.1 and 127.0.0.2 are both loopback), or two
 * ports with MROCE_IBV_PEER_PORT naming the other's.
 *
 * The port's GID table has one entry, index 0: the IPv4-mapped IPv6 form
 * of an IPv4 address (::ffff:a.b.c.d), an IPv6 address as itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "verbs_int.h"

static struct mv_device devs[MV_MAX_DEVICES];
static int ndevs = -1;
static pthread_once_t devs_once = PTHREAD_ONCE_INIT;

static uint16_t env_port(const char *name, uint16_t dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    long v = strtol(s, NULL, 10);
    return v > 0 && v < 65536 ? (uint16_t)v : dflt;
}

/* Parses "name=addr[:port]" into d; 0 or -1. */
static int parse_one(char *item, struct mv_device *d, uint16_t dport,
                     uint16_t peer_port)
{
    char *eq = strchr(item, '=');
    if (!eq || eq == item || eq - item >= IBV_SYSFS_NAME_MAX)
        return -1;
    *eq = 0;
    char *addr = eq + 1, *port = NULL;
    if (*addr == '[') {
        char *rb = strchr(addr, ']');
        if (!rb)
            return -1;
        *rb = 0;
        addr++;
        if (rb[1] == ':')
            port = rb + 2;
    } else if (strchr(addr, ':') == strrchr(addr, ':') && strchr(addr, ':')) {
        port = strchr(addr, ':');
        *port++ = 0;
    }
    memset(d, 0, sizeof(*d));
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, addr, &a4) == 1) {
        d->gid.raw[10] = d->gid.raw[11] = 0xff;
        memcpy(&d->gid.raw[12], &a4, 4);
    } else if (inet_pton(AF_INET6, addr, &a6) == 1) {
        memcpy(d->gid.raw, &a6, 16);
    } else {
        return -1;
    }
    d->port = dport;
    if (port) {
        long v = strtol(port, NULL, 10);
        if (v <= 0 || v > 65535)
            return -1;
        d->port = (uint16_t)v;
    }
    d->peer_port = peer_port ? peer_port : d->port;
    snprintf(d->addr, sizeof(d->addr), "%s", addr);
    snprintf(d->ibdev.name, sizeof(d->ibdev.name), "%s", item);
    snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs-%s", item);
    d->ibdev.node_type = IBV_NODE_CA;
    d->ibdev.transport_type = IBV_TRANSPORT_IB;
    /* GUID: 0x02 (locally administered), then the address' last 5 bytes
     * and the port, so devices differ by address or port. */
    uint8_t *g = (uint8_t *)&d->guid;
    g[0] = 0x02;
    memcpy(&g[1], &d->gid.raw[11], 5);
    g[6] = (uint8_t)(d->port >> 8);
    g[7] = (uint8_t)d->port;
    return 0;
}

static void load(void)
{
    const char *env = getenv("MROCE_IBV_DEVICES");
    char buf[1024];
    snprintf(buf, sizeof(buf), "%s", env && *env ? env : "mroce0=127.0.0.1");
    uint16_t dport = env_port("MROCE_IBV_PORT", MV_DEFAULT_PORT);
    uint16_t pport = env_port("MROCE_IBV_PEER_PORT", 0);
    int n = 0;
    char *save = NULL;
    for (char *it = strtok_r(buf, ",", &save); it && n < MV_MAX_DEVICES;
         it = strtok_r(NULL, ",", &save)) {
        if (parse_one(it, &devs[n], dport, pport) == 0)
            n++;
        else
            fprintf(stderr,
                    "libibverbs-mroce: MROCE_IBV_DEVICES: bad entry "
                    "\"%s\" (name=addr[:port]) ignored\n",
                    it);
    }
    ndevs = n;
}

int mv_devices_load(struct mv_device **list)
{
    pthread_once(&devs_once, load);
    *list = devs;
    return ndevs;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct mv_device *d;
    int n = mv_devices_load(&d);
    struct ibv_device **l = calloc((size_t)n + 1, sizeof(*l));
    if (!l) {
        errno = ENOMEM;
        return NULL;
    }
    for (int i = 0; i < n; i++)
        l[i] = &d[i].ibdev;
    if (num_devices)
        *num_devices = n;
    return l;
}

void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
    return device ? device->name : NULL;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
    return device ? ((struct mv_device *)device)->guid : 0;
}

int ibv_get_device_index(struct ibv_device *device)
{
    struct mv_device *d;
    int n = mv_devices_load(&d);
    for (int i = 0; i < n; i++)
        if (device == &d[i].ibdev)
            return i;
    return -1;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    if (ibv_get_device_index(device) < 0) {
        errno = ENODEV;
        return NULL;
    }
    struct mv_device *d = (struct mv_device *)device;
    struct mv_context *ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        errno = ENOMEM;
        return NULL;
    }
    struct mroce_device_attr a;
    mroce_device_attr_default(&a);
    a.local_addr = d->addr;
    a.port = d->port;
    const char *prog = getenv("MROCE_IBV_PROGRESS");
    int thread = prog && strcmp(prog, "thread") == 0;
    a.progress = thread ? MROCE_PROGRESS_THREAD : MROCE_PROGRESS_APP;
    int rc = mroce_device_open(&a, &ctx->mdev);
    if (rc < 0) {
        fprintf(stderr, "libibverbs-mroce: %s: cannot open %s port %u: %s\n",
                device->name, d->addr, d->port, mroce_strerror(rc));
        free(ctx);
        errno = mv_errno(rc);
        return NULL;
    }
    if (mv_async_init(ctx) < 0) {
        int e = errno;
        mroce_device_close(ctx->mdev);
        free(ctx);
        errno = e;
        return NULL;
    }
    ctx->dev = d;
    ctx->lib_thread = thread;
    struct ibv_context *c = &ctx->vctx.context;
    c->device = device;
    c->cmd_fd = -1;
    c->async_fd = ctx->async.rfd;
    c->num_comp_vectors = 1;
    c->abi_compat = __VERBS_ABI_IS_EXTENDED;
    pthread_mutex_init(&c->mutex, NULL);
    ctx->vctx.sz = sizeof(ctx->vctx);
    mv_ops_init(ctx);
    if (!thread && !(prog && strcmp(prog, "app") == 0) &&
        mv_progress_start(ctx) < 0) {
        mv_async_fini(ctx);
        mroce_device_close(ctx->mdev);
        free(ctx);
        errno = EAGAIN;
        return NULL;
    }
    return c;
}

int ibv_close_device(struct ibv_context *context)
{
    if (!context)
        return EINVAL;
    struct mv_context *ctx = mv_ctx(context);
    mv_progress_stop(ctx);
    mroce_device_close(ctx->mdev);
    mv_async_fini(ctx);
    pthread_mutex_destroy(&context->mutex);
    free(ctx);
    return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)
{
    if (!context || !attr)
        return EINVAL;
    struct mv_context *ctx = mv_ctx(context);
    struct mroce_device_attr a;
    mroce_device_query(ctx->mdev, &a);
    memset(attr, 0, sizeof(*attr));
    snprintf(attr->fw_ver, sizeof(attr->fw_ver), "MetaRoCE/UDP");
    attr->node_guid = ctx->dev->guid;
    attr->sys_image_guid = ctx->dev->guid;
    attr->max_mr_size = UINT32_MAX; /* a work request's length is 32-bit */
    attr->page_size_cap = 4096;
    attr->hw_ver = 1;
    attr->max_qp = (int)a.max_qps;
    attr->max_qp_wr = MV_MAX_WR;
    attr->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN;
    attr->max_sge = MV_MAX_SGE;
    attr->max_sge_rd = MV_MAX_SGE;
    attr->max_cq = (int)a.max_qps * 2;
    attr->max_cqe = MV_MAX_CQE;
    attr->max_mr = 1 << 16;
    attr->max_pd = 1 << 16;
    attr->max_qp_rd_atom = MV_MAX_RD_ATOMIC;
    attr->max_qp_init_rd_atom = MV_MAX_RD_ATOMIC;
    attr->max_res_rd_atom = MV_MAX_RD_ATOMIC * (int)a.max_qps;
    attr->atomic_cap = IBV_ATOMIC_HCA; /* atomic among this device's QPs */
    attr->max_pkeys = 1;
    attr->phys_port_cnt = 1;
    return 0;
}

static int fill_port(struct mv_context *ctx, uint8_t port,
                     struct ibv_port_attr *pa)
{
    (void)ctx;
    if (port != 1)
        return EINVAL;
    memset(pa, 0, sizeof(*pa));
    pa->state = IBV_PORT_ACTIVE;
    pa->max_mtu = IBV_MTU_4096;
    pa->active_mtu = IBV_MTU_4096;
    pa->gid_tbl_len = 1;
    pa->max_msg_sz = UINT32_MAX;
    pa->pkey_tbl_len = 1;
    pa->max_vl_num = 1;
    pa->active_width = 1; /* 1X: UDP has no lanes to report */
    pa->active_speed = 1;
    pa->phys_state = 5; /* LinkUp */
    pa->link_layer = IBV_LINK_LAYER_ETHERNET;
    return 0;
}

static int query_port_ex(struct ibv_context *context, uint8_t port_num,
                         struct ibv_port_attr *port_attr, size_t port_attr_len)
{
    struct ibv_port_attr pa;
    int rc = fill_port(mv_ctx(context), port_num, &pa);
    if (rc)
        return rc;
    memcpy(port_attr, &pa,
           port_attr_len < sizeof(pa) ? port_attr_len : sizeof(pa));
    return 0;
}

#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                   struct _compat_ibv_port_attr *port_attr)
{
    if (!context || !port_attr)
        return EINVAL;
    /* The compat layout ends before `flags` (callers of old headers). */
    return query_port_ex(context, port_num, (struct ibv_port_attr *)port_attr,
                         offsetof(struct ibv_port_attr, flags));
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                  union ibv_gid *gid)
{
    if (!context || !gid || port_num != 1 || index != 0)
        return -1;
    *gid = mv_ctx(context)->dev->gid;
    return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
                      uint32_t gid_index, struct ibv_gid_entry *entry,
                      uint32_t flags, size_t entry_size)
{
    if (!context || !entry || flags || entry_size < sizeof(*entry))
        return EINVAL;
    if (port_num != 1 || gid_index != 0)
        return ENODATA;
    memset(entry, 0, sizeof(*entry));
    entry->gid = mv_ctx(context)->dev->gid;
    entry->gid_index = 0;
    entry->port_num = 1;
    entry->gid_type = IBV_GID_TYPE_ROCE_V2;
    return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
                             struct ibv_gid_entry *entries, size_t max_entries,
                             uint32_t flags, size_t entry_size)
{
    if (max_entries < 1)
        return -EINVAL;
    int rc = _ibv_query_gid_ex(context, 1, 0, entries, flags, entry_size);
    return rc ? -rc : 1;
}

/* The sysfs GID type rdma-core's tools ask (IBVERBS_PRIVATE): RoCE v2. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
                       unsigned int index, int *type);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
                       unsigned int index, int *type)
{
    if (!context || !type || port_num != 1 || index != 0)
        return -1;
    *type = 1; /* IBV_GID_TYPE_SYSFS_ROCE_V2 */
    return 0;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
                   __be16 *pkey)
{
    if (!context || !pkey || port_num != 1 || index != 0)
        return -1;
    *pkey = htons(0xffff);
    return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
                       __be16 pkey)
{
    if (!context || port_num != 1 || pkey != htons(0xffff))
        return -1;
    return 0;
}

/* No sysfs: every file reads as absent. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
                        size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
                        size_t size)
{
    (void)dir;
    (void)file;
    (void)buf;
    (void)size;
    errno = ENOENT;
    return -1;
}

const char *ibv_get_sysfs_path(void)
{
    return "/sys";
}

/* ibv_query_port's extended form (verbs_context.query_port). */
void mv_device_ops_init(struct mv_context *ctx);
void mv_device_ops_init(struct mv_context *ctx)
{
    ctx->vctx.query_port = query_port_ex;
}
