/*
 * mroce_av.c - address vectors.  An address is an endpoint's name: a
 * sockaddr_in or sockaddr_in6 (IP and the domain's UDP port), exactly what
 * fi_getname returns.  Both FI_AV_TABLE and FI_AV_MAP hand out the slot
 * index as the fi_addr_t (a map may choose any value; the index keeps the
 * lookup O(1) for both).  Removed slots are not reused, so a stale fi_addr
 * never names a different peer.
 *
 * The AV only translates; connections are the endpoint's business
 * (mroce_conn.c), which caches fi_addr -> peer and re-checks its cache
 * when the AV's generation changes.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mroce_fi.h"

int mfi_sa_equal(const struct sockaddr *a, const struct sockaddr *b)
{
    /* Shared connections: endpoints of one domain share its device's
     * address and differ by the index their names carry. */
    return mfi_dev_equal(a, b) && mfi_name_idx(a) == mfi_name_idx(b);
}

int mfi_dev_equal(const struct sockaddr *a, const struct sockaddr *b)
{
    if (a->sa_family != b->sa_family)
        return 0;
    if (a->sa_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port &&
               !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
    }
    const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
    return x->sin_port == y->sin_port &&
           x->sin_addr.s_addr == y->sin_addr.s_addr;
}

const struct mfi_av_ent *mfi_av_get(struct mfi_av *av, fi_addr_t a)
{
    if (!av || a >= av->n || !av->tab[a].len)
        return NULL;
    return &av->tab[a];
}

fi_addr_t mfi_av_find(struct mfi_av *av, const struct sockaddr *sa,
                      socklen_t len)
{
    if (!av)
        return FI_ADDR_NOTAVAIL;
    for (size_t i = 0; i < av->n; i++)
        if (av->tab[i].len &&
            mfi_sa_equal((const struct sockaddr *)&av->tab[i].addr, sa))
            return i;
    (void)len;
    return FI_ADDR_NOTAVAIL;
}

static int av_add(struct mfi_av *av, const struct sockaddr *sa, fi_addr_t *out)
{
    if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
        return -FI_EINVAL;
    if (av->n == av->cap) {
        size_t cap = av->cap ? av->cap * 2 : 64;
        struct mfi_av_ent *t = realloc(av->tab, cap * sizeof(*t));
        if (!t)
            return -FI_ENOMEM;
        av->tab = t;
        av->cap = cap;
    }
    struct mfi_av_ent *e = &av->tab[av->n];
    memset(e, 0, sizeof(*e));
    e->len = mfi_sa_len(sa);
    memcpy(&e->addr, sa, e->len);
    *out = av->n++;
    av->gen++;
    return 0;
}

static int av_insert(struct fid_av *fav, const void *addr, size_t count,
                     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
    struct mfi_av *av = (struct mfi_av *)fav;
    size_t stride = av->dom->addr_format == FI_SOCKADDR_IN6
                        ? sizeof(struct sockaddr_in6)
                        : sizeof(struct sockaddr_in);
    /* FI_SYNC_ERR: context is an int per address, set to 0 or the
     * (positive) fi_errno of its failure. */
    int *sync_err = (flags & FI_SYNC_ERR) ? context : NULL;
    if ((flags & FI_SYNC_ERR) && !context)
        return -FI_EINVAL;
    if (flags & ~(uint64_t)(FI_MORE | FI_SYNC_ERR))
        return -FI_EBADFLAGS;
    int ok = 0;
    mfi_lock(av->dom);
    for (size_t i = 0; i < count; i++) {
        const struct sockaddr *sa =
            (const struct sockaddr *)((const char *)addr + i * stride);
        fi_addr_t a = FI_ADDR_NOTAVAIL;
        int rc = av_add(av, sa, &a);
        if (rc == 0)
            ok++;
        if (sync_err)
            sync_err[i] = -rc;
        if (fi_addr)
            fi_addr[i] = a;
    }
    mfi_unlock(av->dom);
    return ok;
}

static int av_insertsvc(struct fid_av *fav, const char *node,
                        const char *service, fi_addr_t *fi_addr, uint64_t flags,
                        void *context)
{
    struct mfi_av *av = (struct mfi_av *)fav;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = av->dom->addr_format == FI_SOCKADDR_IN6 ? AF_INET6
                                                              : AF_INET;
    hints.ai_socktype = SOCK_DGRAM;
    if (getaddrinfo(node, service, &hints, &res) || !res)
        return 0;
    int rc = av_insert(fav, res->ai_addr, 1, fi_addr, flags, context);
    freeaddrinfo(res);
    return rc;
}

static int av_insertsym(struct fid_av *fav, const char *node, size_t nodecnt,
                        const char *service, size_t svccnt, fi_addr_t *fi_addr,
                        uint64_t flags, void *context)
{
    return -FI_ENOSYS;
}

static int av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count,
                     uint64_t flags)
{
    struct mfi_av *av = (struct mfi_av *)fav;
    mfi_lock(av->dom);
    for (size_t i = 0; i < count; i++)
        if (fi_addr[i] < av->n)
            av->tab[fi_addr[i]].len = 0;
    av->gen++;
    mfi_unlock(av->dom);
    return 0;
}

static int av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr,
                     size_t *addrlen)
{
    struct mfi_av *av = (struct mfi_av *)fav;
    mfi_lock(av->dom);
    const struct mfi_av_ent *e = mfi_av_get(av, fi_addr);
    if (!e) {
        mfi_unlock(av->dom);
        return -FI_EINVAL;
    }
    memcpy(addr, &e->addr, *addrlen < e->len ? *addrlen : e->len);
    *addrlen = e->len;
    mfi_unlock(av->dom);
    return 0;
}

static const char *av_straddr(struct fid_av *fav, const void *addr, char *buf,
                              size_t *len)
{
    const struct sockaddr *sa = addr;
    char ip[INET6_ADDRSTRLEN] = "?", tmp[96];
    unsigned port = 0;
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s = addr;
        inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
        port = ntohs(s->sin6_port);
        snprintf(tmp, sizeof(tmp), "fi_sockaddr_in6://[%s]:%u", ip, port);
    } else {
        const struct sockaddr_in *s = addr;
        inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
        port = ntohs(s->sin_port);
        snprintf(tmp, sizeof(tmp), "fi_sockaddr_in://%s:%u", ip, port);
    }
    size_t n = strlen(tmp) + 1;
    if (*len > 0) {
        size_t c = n < *len ? n : *len;
        memcpy(buf, tmp, c);
        buf[c - 1] = 0;
    }
    *len = n;
    return buf;
}

static int av_close(struct fid *fid)
{
    struct mfi_av *av = (struct mfi_av *)fid;
    struct mfi_domain *d = av->dom;
    mfi_lock(d);
    for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
        if (ep->av == av) {
            mfi_unlock(d);
            return -FI_EBUSY;
        }
    d->refs--;
    mfi_unlock(d);
    free(av->tab);
    free(av);
    return 0;
}

static struct fi_ops av_fi_ops = {
    .size = sizeof(struct fi_ops),
    .close = av_close,
    .bind = mfi_no_bind,
    .control = mfi_no_control,
    .ops_open = mfi_no_ops_open,
    .tostr = mfi_no_tostr,
    .ops_set = mfi_no_ops_set,
};

static int av_no_set(struct fid_av *av, struct fi_av_set_attr *attr,
                     struct fid_av_set **av_set, void *context)
{
    return -FI_ENOSYS; /* no collectives */
}

static struct fi_ops_av av_ops = {
    .size = sizeof(struct fi_ops_av),
    .insert = av_insert,
    .insertsvc = av_insertsvc,
    .insertsym = av_insertsym,
    .remove = av_remove,
    .lookup = av_lookup,
    .straddr = av_straddr,
    .av_set = av_no_set,
};

int mfi_av_open(struct fid_domain *fd, struct fi_av_attr *attr,
                struct fid_av **fav, void *context)
{
    struct mfi_domain *d = (struct mfi_domain *)fd;
    if (attr && attr->type != FI_AV_UNSPEC && attr->type != FI_AV_TABLE &&
        attr->type != FI_AV_MAP)
        return -FI_EINVAL;
    if (attr && (attr->flags & FI_EVENT))
        return -FI_ENOSYS; /* inserts complete at once: no EQ */
    struct mfi_av *av = calloc(1, sizeof(*av));
    if (!av)
        return -FI_ENOMEM;
    av->dom = d;
    av->type = attr && attr->type == FI_AV_MAP ? FI_AV_MAP : FI_AV_TABLE;
    av->av.fid.fclass = FI_CLASS_AV;
    av->av.fid.context = context;
    av->av.fid.ops = &av_fi_ops;
    av->av.ops = &av_ops;
    mfi_lock(d);
    d->refs++;
    mfi_unlock(d);
    *fav = &av->av;
    return 0;
}
