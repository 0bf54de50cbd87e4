/*
 * mroce_introspect.c - the provider's own fi_open_ops extension on a
 * domain (mroce_fi_ext.h): counts of its endpoints, devices and libmroce
 * QPs, and of the QPs towards one peer domain, so tests and benchmarks
 * can check how many connections a pair of domains holds.  Read under
 * the domain lock; nothing here changes state.
 */
#include <netinet/in.h>
#include <string.h>

#include "mroce_fi.h"
#include "mroce_fi_ext.h"

/* The address of the domain device of the endpoint named sa: its own
 * address with the port replaced by the domain port its name carries
 * (mfi_name_set_dom), if any. */
static void dom_addr(const struct sockaddr *sa, struct sockaddr_storage *out)
{
    uint16_t dom = mfi_name_dom(sa);
    memset(out, 0, sizeof(*out));
    memcpy(out, sa, mfi_sa_len(sa));
    if (!dom)
        return;
    if (out->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)out)->sin6_port = htons(dom);
    else
        ((struct sockaddr_in *)out)->sin_port = htons(dom);
}

static int conn_stats(struct fid_domain *domain, const void *peer,
                      size_t peer_len, struct mroce_fi_conn_stats *st)
{
    struct mfi_domain *d = (struct mfi_domain *)domain;
    struct sockaddr_storage want;
    if (!st)
        return -FI_EINVAL;
    if (peer) {
        const struct sockaddr *sa = peer;
        if (peer_len < sizeof(sa->sa_family) ||
            (sa->sa_family != AF_INET && sa->sa_family != AF_INET6) ||
            peer_len < mfi_sa_len(sa))
            return -FI_EINVAL;
        dom_addr(sa, &want);
    }
    memset(st, 0, sizeof(*st));
    mfi_lock(d);
    if (d->shared) { /* the domain's QPs (mroce_shared.c) */
        for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next)
            st->endpoints++;
        for (struct mfi_dqp *dq = d->dqps; dq; dq = dq->next) {
            enum mroce_qp_state qs = mroce_qp_get_state(dq->qp);
            /* Closing or closed: the peer retired it (CONN-37). */
            if (dq->dead || qs == MROCE_QPS_ERROR || qs == MROCE_QPS_CLOSING ||
                qs == MROCE_QPS_CLOSED)
                continue;
            if (dq->listening && qs == MROCE_QPS_LISTEN) {
                st->listening++;
                continue;
            }
            st->qps++;
            if (peer && dq->rlen &&
                mfi_dev_equal((const struct sockaddr *)&dq->raddr,
                              (const struct sockaddr *)&want))
                st->peer_qps++;
        }
        st->devices = 1;
        mfi_unlock(d);
        return 0;
    }
    for (struct mfi_ep *ep = d->eps; ep; ep = ep->dom_next) {
        st->endpoints++;
        if (ep->own_dev)
            st->devices++;
        for (struct mfi_conn *c = ep->conns; c; c = c->next) {
            enum mroce_qp_state qs = mroce_qp_get_state(c->qp);
            if (c->dead || qs == MROCE_QPS_ERROR)
                continue;
            if (c->listening && qs == MROCE_QPS_LISTEN) {
                st->listening++;
                continue;
            }
            st->qps++;
            if (!peer || !c->peer)
                continue;
            struct sockaddr_storage pd;
            dom_addr((const struct sockaddr *)&c->peer->addr, &pd);
            if (mfi_sa_equal((const struct sockaddr *)&pd,
                             (const struct sockaddr *)&want))
                st->peer_qps++;
        }
    }
    st->devices++; /* the domain's own */
    mfi_unlock(d);
    return 0;
}

static struct mroce_fi_conn_ops conn_ops = {
    .size = sizeof(struct mroce_fi_conn_ops),
    .stats = conn_stats,
};

int mfi_domain_ops_open(struct fid *fid, const char *name, uint64_t flags,
                        void **ops, void *context)
{
    (void)fid;
    (void)context;
    if (!name || !ops || flags)
        return -FI_EINVAL;
    if (!strcmp(name, MROCE_FI_SEC_OPS)) {
        *ops = mfi_sec_ops();
        return 0;
    }
    if (strcmp(name, MROCE_FI_CONN_OPS))
        return -FI_ENOSYS;
    *ops = &conn_ops;
    return 0;
}
