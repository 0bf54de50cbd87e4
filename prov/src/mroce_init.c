/*
 * mroce_init.c - the provider's entry point: fi_prov_ini (what libfabric's
 * loader looks for in libmroce-fi.so under FI_PROVIDER_PATH), the
 * parameters fi_info -e lists (environment FI_MROCE_<NAME>), and
 * fi_getinfo: what one mroce endpoint offers, trimmed to the hints.
 *
 * An external provider in libfabric 1.17 gets only the public headers and
 * the core's exported symbols (fi_param_define/fi_param_get, fi_log*,
 * fi_dupinfo/fi_freeinfo): no util/ofi helpers.  So the attribute checks
 * that util providers get from ofi_check_info are written out here, for
 * the attributes applications actually constrain.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "mroce_fi.h"

static int mfi_getinfo(uint32_t version, const char *node, const char *service,
                       uint64_t flags, const struct fi_info *hints,
                       struct fi_info **info);
static void mfi_cleanup(void);

struct fi_provider mfi_prov = {
    .version = MFI_VERSION,
    .fi_version = MFI_FI_VERSION,
    .name = MFI_NAME,
    .getinfo = mfi_getinfo,
    .fabric = mfi_fabric_open,
    .cleanup = mfi_cleanup,
};

struct mfi_params mfi_param = {
    .paths = 16,
    .mtu = 0, /* from the interface: mfi_domain_mtu() */
    .eager_size = 8192,
    .rx_depth = 32,
    .unexp_max = 1024,
    .unexp_copy_max = 64 << 20,
    .conn_timeout = 2000,
    .rnr_retry = 255,
    .retry_cnt = 12,
    .peer_timeout = 5000,
    .keeper_us = 500,
    .rndv_seg = 262144,
    .shared_conn = 1,
};

/* What the provider can do; getinfo returns the part the hints ask for. */
#define MFI_CAPS                                                             \
    (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_RECV | FI_READ | \
     FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV |        \
     FI_SOURCE | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_MULTI_RECV |            \
     FI_RMA_EVENT)
#define MFI_DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
/* Keys are the engine's rkeys and remote addresses virtual addresses. */
#define MFI_MR_MODE (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED)
/* The capabilities that put keys and addresses on the wire, and so need
 * FI_MR_PROV_KEY | FI_MR_VIRT_ADDR from the application. */
#define MFI_RMA_CAPS                                            \
    (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | \
     FI_REMOTE_WRITE | FI_RMA_EVENT)
/* Ordering: one QP carries an endpoint's traffic to a peer, and its
 * messages are matched in order (send after send); nothing else is
 * promised, and completions come in no particular order. */
#define MFI_MSG_ORDER FI_ORDER_SAS
#define MFI_COMP_ORDER FI_ORDER_NONE

static void define_params(void)
{
    fi_param_define(&mfi_prov, "iface", FI_PARAM_STRING,
                    "Local IP address a domain binds its UDP port to "
                    "(default: 127.0.0.1, or ::1 for FI_SOCKADDR_IN6)");
    fi_param_define(&mfi_prov, "key_file", FI_PARAM_STRING,
                    "Secure mode's master key file (libmroce attr.key_file; "
                    "default: MROCE_KEY_FILE, then MROCE_KEY, else clear)");
    fi_param_define(&mfi_prov, "key_gen", FI_PARAM_INT,
                    "Secure mode: the generation (key id, 0-255) of the "
                    "master key file's key, the one sent under (default: "
                    "MROCE_KEY_GEN, else 0)");
    fi_param_define(&mfi_prov, "secure_suite", FI_PARAM_STRING,
                    "Secure mode's cipher: aes128gcm, aes256gcm, or gmac "
                    "for integrity only (default: MROCE_SECURE_SUITE, else "
                    "aes128gcm)");
    fi_param_define(&mfi_prov, "port_base", FI_PARAM_INT,
                    "First UDP port tried for a domain (default: 0 = a "
                    "random port in 20000-59999)");
    fi_param_define(&mfi_prov, "paths", FI_PARAM_INT,
                    "Paths (UDP source ports) each QP sprays over "
                    "(default: 16)");
    fi_param_define(&mfi_prov, "mtu", FI_PARAM_INT,
                    "MetaRoCE MTU: payload bytes per packet, 256-32768 "
                    "(default: 0 = from the interface's MTU: 16384 on "
                    "loopback, the largest power of two that fits "
                    "otherwise, 4096 when it is unknown)");
    fi_param_define(&mfi_prov, "cc", FI_PARAM_STRING,
                    "Congestion control: delay_ecn or none "
                    "(default: delay_ecn)");
    fi_param_define(&mfi_prov, "eager_size", FI_PARAM_INT,
                    "Largest message sent eagerly; larger ones use a "
                    "READ rendezvous (default: 8192)");
    fi_param_define(&mfi_prov, "shared_conn", FI_PARAM_INT,
                    "1: every endpoint of a domain on the domain's device, "
                    "one QP per peer device, each destination endpoint on "
                    "a stream of its own; 0: a device per endpoint and a "
                    "QP per endpoint pair (default: 1; both sides must "
                    "agree)");
    fi_param_define(&mfi_prov, "rndv_seg", FI_PARAM_INT,
                    "Rendezvous: bytes per READ; a larger message is read "
                    "in slices of this size, 4 READs in flight, the next "
                    "posted as one completes (default: 262144; 0 = one "
                    "READ per message)");
    fi_param_define(&mfi_prov, "rx_depth", FI_PARAM_INT,
                    "Bounce buffers posted per QP (default: 32)");
    fi_param_define(&mfi_prov, "unexp_max", FI_PARAM_INT,
                    "Unexpected messages kept in their receive buffers "
                    "per endpoint; further ones are copied out "
                    "(default: 1024)");
    fi_param_define(&mfi_prov, "unexp_copy_max", FI_PARAM_INT,
                    "Bytes of unexpected messages copied out of receive "
                    "buffers per endpoint before receive buffers stop "
                    "being reposted (RNR back-pressure) (default: "
                    "67108864)");
    fi_param_define(&mfi_prov, "conn_timeout", FI_PARAM_INT,
                    "Milliseconds to set up a connection before sends to "
                    "the peer fail (default: 2000)");
    fi_param_define(&mfi_prov, "rnr_retry", FI_PARAM_INT,
                    "RNR NAK rounds (20 us each) a send survives while the "
                    "receiver applies back-pressure; 7: forever, as in "
                    "verbs (default: 255)");
    fi_param_define(&mfi_prov, "retry_cnt", FI_PARAM_INT,
                    "Consecutive retransmission timeouts (1 ms doubling "
                    "up to 100 ms) a connection survives at least; it "
                    "fails only after FI_MROCE_PEER_TIMEOUT of peer "
                    "silence too (default: 12)");
    fi_param_define(&mfi_prov, "peer_timeout", FI_PARAM_INT,
                    "Milliseconds a peer may stay silent (a stalled or "
                    "descheduled host) before its connection fails; an idle "
                    "connection sends a keepalive after a quarter of it; "
                    "0: retry_cnt alone decides (default: 5000)");
    fi_param_define(&mfi_prov, "keeper_us", FI_PARAM_INT,
                    "Manual progress: period of the thread that keeps "
                    "connections and receive buffers going while the "
                    "application makes no calls; it acts after two idle "
                    "periods (default: 500; 0 = no such thread)");
}

static void get_int(const char *name, int *v, int lo, int hi)
{
    int x;
    if (fi_param_get_int(&mfi_prov, name, &x) == FI_SUCCESS) {
        if (x >= lo && x <= hi)
            *v = x;
        else
            MFI_WARN(FI_LOG_CORE,
                     "FI_MROCE_%s=%d out of range [%d, %d]; "
                     "keeping %d\n",
                     name, x, lo, hi, *v);
    }
}

static void read_params(void)
{
    char *s = NULL;
    if (fi_param_get_str(&mfi_prov, "iface", &s) == FI_SUCCESS && s)
        mfi_param.iface = s;
    s = NULL;
    if (fi_param_get_str(&mfi_prov, "cc", &s) == FI_SUCCESS && s) {
        if (strcmp(s, "none") && strcmp(s, "delay_ecn"))
            MFI_WARN(FI_LOG_CORE, "FI_MROCE_CC=%s unknown; using delay_ecn\n",
                     s);
        else
            mfi_param.cc = s;
    }
    get_int("port_base", &mfi_param.port_base, 0, 65000);
    get_int("paths", &mfi_param.paths, 1, 256);
    get_int("mtu", &mfi_param.mtu, 0, 32768);
    if (mfi_param.mtu > 0 && mfi_param.mtu < 256) {
        MFI_WARN(FI_LOG_CORE, "FI_MROCE_MTU=%d below 256: using 256\n",
                 mfi_param.mtu);
        mfi_param.mtu = 256;
    }
    get_int("eager_size", &mfi_param.eager_size, 64, 1 << 20);
    get_int("rx_depth", &mfi_param.rx_depth, 4, 4096);
    get_int("rndv_seg", &mfi_param.rndv_seg, 0, 1 << 30);
    get_int("shared_conn", &mfi_param.shared_conn, 0, 1);
    get_int("unexp_max", &mfi_param.unexp_max, 0, 1 << 20);
    get_int("unexp_copy_max", &mfi_param.unexp_copy_max, 0, 1 << 30);
    get_int("conn_timeout", &mfi_param.conn_timeout, 10, 600000);
    get_int("rnr_retry", &mfi_param.rnr_retry, 0, 255);
    get_int("retry_cnt", &mfi_param.retry_cnt, 1, 255);
    get_int("peer_timeout", &mfi_param.peer_timeout, 0, 3600000);
    get_int("keeper_us", &mfi_param.keeper_us, 0, 1000000);
}

/* The one exported symbol (see mroce-fi.map). */
struct fi_provider *fi_prov_ini(void);

FI_EXT_INI
{
    define_params();
    read_params();
    return &mfi_prov;
}

static void mfi_cleanup(void)
{
}

socklen_t mfi_sa_len(const struct sockaddr *sa)
{
    return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
                                     : sizeof(struct sockaddr_in);
}

/* node:service into *ss (numeric or resolvable names; the first result of
 * the family asked for, or any family for AF_UNSPEC). */
static int resolve(const char *node, const char *service, int family,
                   struct sockaddr_storage *ss)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = family;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(node, service ? service : "0", &hints, &res) || !res)
        return -FI_ENODATA;
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

static int check_hints(const struct fi_info *h)
{
    if (!h)
        return 0;
    if (h->caps & ~MFI_CAPS)
        return -FI_ENODATA;
    /* Orderings asked for must all be given (fi_getinfo(3)). */
    if (h->tx_attr && ((h->tx_attr->msg_order & ~(uint64_t)MFI_MSG_ORDER) ||
                       (h->tx_attr->comp_order & ~(uint64_t)MFI_COMP_ORDER) ||
                       (h->tx_attr->caps & ~MFI_CAPS)))
        return -FI_ENODATA;
    if (h->rx_attr && ((h->rx_attr->msg_order & ~(uint64_t)MFI_MSG_ORDER) ||
                       (h->rx_attr->comp_order & ~(uint64_t)MFI_COMP_ORDER) ||
                       (h->rx_attr->caps & ~MFI_CAPS)))
        return -FI_ENODATA;
    if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC &&
        h->ep_attr->type != FI_EP_RDM)
        return -FI_ENODATA;
    if (h->ep_attr && h->ep_attr->max_msg_size > MFI_MAX_MSG)
        return -FI_ENODATA;
    if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_SOCKADDR &&
        h->addr_format != FI_SOCKADDR_IN && h->addr_format != FI_SOCKADDR_IN6)
        return -FI_ENODATA;
    if (h->fabric_attr && h->fabric_attr->name &&
        strcmp(h->fabric_attr->name, MFI_NAME))
        return -FI_ENODATA;
    if (h->domain_attr) {
        const struct fi_domain_attr *d = h->domain_attr;
        if (d->name && strcmp(d->name, MFI_NAME))
            return -FI_ENODATA;
        if (d->caps & ~(MFI_DOMAIN_CAPS | FI_LOCAL_COMM | FI_REMOTE_COMM))
            return -FI_ENODATA;
        if (d->threading != FI_THREAD_UNSPEC &&
            d->threading != FI_THREAD_SAFE &&
            d->threading != FI_THREAD_DOMAIN &&
            d->threading != FI_THREAD_COMPLETION &&
            d->threading != FI_THREAD_ENDPOINT && d->threading != FI_THREAD_FID)
            return -FI_ENODATA;
        if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_TABLE &&
            d->av_type != FI_AV_MAP)
            return -FI_ENODATA;
        if (d->cq_data_size > 4)
            return -FI_ENODATA;
    }
    return 0;
}

/* The memory registration mode: the bits the provider needs of those the
 * application accepts (hints), never one it did not set.
 *   API < 1.5: the old enum; FI_MR_UNSPEC means FI_MR_BASIC, which is what
 *     the provider does (provider keys, virtual addresses, allocated).
 *   API >= 1.5: a bitmask.  FI_MR_BASIC alone is still the old mode;
 *     FI_MR_SCALABLE (application keys, offsets) is refused.  The RMA
 *     capabilities need FI_MR_PROV_KEY | FI_MR_VIRT_ADDR: an application
 *     that accepts neither gets an fi_info without them, unless it asked
 *     for them (then there is none).  FI_MR_ALLOCATED is passed on if set
 *     (registrations of unmapped memory fail anyway).
 * -FI_ENODATA if no mode fits; *caps may lose the RMA capabilities. */
static int pick_mr_mode(uint32_t version, const struct fi_info *hints,
                        uint64_t *caps, int *mode)
{
    const struct fi_domain_attr *hd = hints ? hints->domain_attr : NULL;
    int want = hd ? hd->mr_mode : FI_MR_UNSPEC;
    if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
        if (want != FI_MR_UNSPEC && want != FI_MR_BASIC)
            return -FI_ENODATA;
        *mode = FI_MR_BASIC;
        return 0;
    }
    if (!hd) {
        *mode = MFI_MR_MODE;
        return 0;
    }
    if (want & FI_MR_SCALABLE)
        return -FI_ENODATA;
    if (want & FI_MR_BASIC) {
        if (want != FI_MR_BASIC)
            return -FI_ENODATA;
        *mode = FI_MR_BASIC;
        return 0;
    }
    const int need = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
    if ((*caps & MFI_RMA_CAPS) && (want & need) != need) {
        if (hints->caps & MFI_RMA_CAPS)
            return -FI_ENODATA;
        *caps &= ~(uint64_t)MFI_RMA_CAPS;
    }
    *mode = ((*caps & MFI_RMA_CAPS) ? need : 0) | (want & FI_MR_ALLOCATED);
    return 0;
}

static int mfi_getinfo(uint32_t version, const char *node, const char *service,
                       uint64_t flags, const struct fi_info *hints,
                       struct fi_info **info)
{
    int rc = check_hints(hints);
    if (rc)
        return rc;

    /* Address family: the hints' format or addresses, else a literal IPv6
     * node, else IPv4. */
    int family = AF_INET;
    if (hints && hints->addr_format == FI_SOCKADDR_IN6)
        family = AF_INET6;
    else if (hints && hints->src_addr &&
             ((struct sockaddr *)hints->src_addr)->sa_family == AF_INET6)
        family = AF_INET6;
    else if (hints && hints->dest_addr &&
             ((struct sockaddr *)hints->dest_addr)->sa_family == AF_INET6)
        family = AF_INET6;
    else if (node && strchr(node, ':'))
        family = AF_INET6;
    else if (mfi_param.iface && strchr(mfi_param.iface, ':'))
        family = AF_INET6;

    struct sockaddr_storage src = {0}, dst = {0};
    int have_dst = 0;
    if (hints && hints->src_addr && hints->src_addrlen <= sizeof(src)) {
        memcpy(&src, hints->src_addr, hints->src_addrlen);
    } else if (node && (flags & FI_SOURCE)) {
        if (resolve(node, service, family, &src))
            return -FI_ENODATA;
    } else {
        const char *iface = mfi_param.iface      ? mfi_param.iface
                            : family == AF_INET6 ? "::1"
                                                 : "127.0.0.1";
        if (resolve(iface, (flags & FI_SOURCE) ? service : "0", family, &src))
            return -FI_ENODATA;
    }
    if (node && !(flags & FI_SOURCE)) {
        if (resolve(node, service, family, &dst))
            return -FI_ENODATA;
        have_dst = 1;
    } else if (hints && hints->dest_addr &&
               hints->dest_addrlen <= sizeof(dst)) {
        memcpy(&dst, hints->dest_addr, hints->dest_addrlen);
        have_dst = 1;
    }
    family = src.ss_family;

    struct fi_info *fi = fi_allocinfo();
    if (!fi)
        return -FI_ENOMEM;
    /* FI_RMA_EVENT only when asked for: it costs a notice per READ and
     * WRITE (mroce_rma_event.c). */
    uint64_t caps = hints && hints->caps ? hints->caps
                                         : MFI_CAPS & ~(uint64_t)FI_RMA_EVENT;
    /* Asking for FI_MSG or FI_TAGGED implies both directions. */
    if (!(caps & (FI_SEND | FI_RECV)) && (caps & (FI_MSG | FI_TAGGED)))
        caps |= FI_SEND | FI_RECV;
    if ((caps & (FI_RMA | FI_ATOMIC)) &&
        !(caps & (FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)))
        caps |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    /* Secondary capabilities the provider always has. */
    caps |= FI_LOCAL_COMM | FI_REMOTE_COMM | FI_SOURCE;
    if (!hints || !hints->caps || (hints->caps & FI_DIRECTED_RECV))
        caps |= FI_DIRECTED_RECV;
    caps &= MFI_CAPS;
    int mr_mode = 0;
    if ((rc = pick_mr_mode(version, hints, &caps, &mr_mode))) {
        fi_freeinfo(fi);
        return rc;
    }

    fi->caps = caps;
    fi->mode = 0; /* FI_CONTEXT/FI_CONTEXT2 welcome, not required */
    fi->addr_format = family == AF_INET6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
    fi->src_addrlen = mfi_sa_len((struct sockaddr *)&src);
    fi->src_addr = malloc(fi->src_addrlen);
    if (fi->src_addr)
        memcpy(fi->src_addr, &src, fi->src_addrlen);
    if (have_dst) {
        fi->dest_addrlen = mfi_sa_len((struct sockaddr *)&dst);
        fi->dest_addr = malloc(fi->dest_addrlen);
        if (fi->dest_addr)
            memcpy(fi->dest_addr, &dst, fi->dest_addrlen);
    }

    struct fi_tx_attr *tx = fi->tx_attr;
    /* Domain capabilities (FI_LOCAL_COMM, FI_REMOTE_COMM) stay out of the
     * tx and rx attributes. */
    tx->caps = caps & ~(FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE |
                        FI_RMA_EVENT | FI_DIRECTED_RECV | FI_SOURCE |
                        FI_MULTI_RECV | MFI_DOMAIN_CAPS);
    tx->mode = 0;
    tx->op_flags = hints && hints->tx_attr ? hints->tx_attr->op_flags : 0;
    tx->msg_order = MFI_MSG_ORDER;
    tx->comp_order = MFI_COMP_ORDER;
    tx->inject_size = (size_t)mfi_param.eager_size;
    tx->size = MFI_TX_SIZE;
    tx->iov_limit = MFI_IOV_LIMIT;
    tx->rma_iov_limit = 1;

    struct fi_rx_attr *rx = fi->rx_attr;
    rx->caps = caps & ~(FI_SEND | FI_READ | FI_WRITE | MFI_DOMAIN_CAPS);
    rx->mode = 0;
    rx->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags : 0;
    rx->msg_order = MFI_MSG_ORDER;
    rx->comp_order = MFI_COMP_ORDER;
    rx->total_buffered_recv = (size_t)mfi_param.unexp_max *
                              (size_t)mfi_param.eager_size;
    rx->size = MFI_RX_SIZE;
    rx->iov_limit = MFI_IOV_LIMIT;

    struct fi_ep_attr *ep = fi->ep_attr;
    ep->type = FI_EP_RDM;
    ep->protocol = FI_PROTO_UNSPEC;
    ep->protocol_version = 1;
    ep->max_msg_size = MFI_MAX_MSG;
    ep->msg_prefix_size = 0;
    ep->max_order_raw_size = 0;
    ep->max_order_war_size = 0;
    ep->max_order_waw_size = 0;
    ep->mem_tag_format = hints && hints->ep_attr &&
                                 hints->ep_attr->mem_tag_format
                             ? hints->ep_attr->mem_tag_format
                             : 0xAAAAAAAAAAAAAAAAull; /* every bit usable */
    ep->tx_ctx_cnt = 1;
    ep->rx_ctx_cnt = 1;

    struct fi_domain_attr *d = fi->domain_attr;
    const struct fi_domain_attr *hd = hints ? hints->domain_attr : NULL;
    d->name = strdup(MFI_NAME);
    d->threading = hd && hd->threading != FI_THREAD_UNSPEC ? hd->threading
                                                           : FI_THREAD_SAFE;
    d->control_progress = FI_PROGRESS_MANUAL;
    d->data_progress = hd && hd->data_progress == FI_PROGRESS_AUTO
                           ? FI_PROGRESS_AUTO
                           : FI_PROGRESS_MANUAL;
    if (hd && hd->control_progress == FI_PROGRESS_AUTO)
        d->control_progress = FI_PROGRESS_AUTO; /* the same thread */
    d->resource_mgmt = FI_RM_ENABLED;
    d->av_type = hd && hd->av_type != FI_AV_UNSPEC ? hd->av_type : FI_AV_UNSPEC;
    d->mr_mode = mr_mode;
    d->mr_key_size = 4;
    d->cq_data_size = 4;
    d->cq_cnt = 64;
    d->cntr_cnt = 64;
    d->ep_cnt = MFI_EP_CNT;
    d->tx_ctx_cnt = 1;
    d->rx_ctx_cnt = 1;
    d->max_ep_tx_ctx = 1;
    d->max_ep_rx_ctx = 1;
    d->max_ep_stx_ctx = 0;
    d->max_ep_srx_ctx = 0;
    d->mr_iov_limit = 1;
    d->mr_cnt = 65536;
    d->caps = caps & MFI_DOMAIN_CAPS;
    d->max_err_data = 0;

    fi->fabric_attr->name = strdup(MFI_NAME);
    fi->fabric_attr->prov_version = MFI_VERSION;
    fi->fabric_attr->api_version = MFI_FI_VERSION;
    *info = fi;
    return 0;
}
