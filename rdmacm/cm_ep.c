/* The synchronous endpoint API rdma_server and rdma_client use:
 * rdma_getaddrinfo (getaddrinfo(3) for the address, RC over RDMA_PS_TCP
 * unless the hints ask otherwise; no IB path records), rdma_create_ep and
 * rdma_destroy_ep, and rdma_get_request, which gives each request's id a
 * private channel of its own, as librdmacm does. */
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm_int.h"

static struct sockaddr *dup_addr(const struct sockaddr *a, socklen_t *len)
{
    *len = cm_addrlen(a);
    struct sockaddr *c = malloc(sizeof(struct sockaddr_storage));
    if (c)
        memcpy(c, a, *len);
    return c;
}

int rdma_getaddrinfo(const char *node, const char *service,
                     const struct rdma_addrinfo *hints,
                     struct rdma_addrinfo **res)
{
    if (!res || (!node && !service))
        return EAI_NONAME;
    int flags = hints ? hints->ai_flags : 0;
    struct addrinfo h = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
    h.ai_family = hints ? hints->ai_family : 0;
    if (flags & RAI_PASSIVE)
        h.ai_flags |= AI_PASSIVE;
    if (flags & RAI_NUMERICHOST)
        h.ai_flags |= AI_NUMERICHOST;
    int rc = getaddrinfo(node, service, &h, &ai);
    if (rc)
        return rc;
    struct rdma_addrinfo *r = calloc(1, sizeof(*r));
    if (!r) {
        freeaddrinfo(ai);
        return EAI_MEMORY;
    }
    r->ai_flags = flags;
    r->ai_family = ai->ai_family;
    r->ai_port_space = hints && hints->ai_port_space ? hints->ai_port_space
                                                     : RDMA_PS_TCP;
    r->ai_qp_type = hints && hints->ai_qp_type        ? hints->ai_qp_type
                    : r->ai_port_space == RDMA_PS_UDP ? IBV_QPT_UD
                                                      : IBV_QPT_RC;
    struct sockaddr **which = (flags & RAI_PASSIVE) ? &r->ai_src_addr
                                                    : &r->ai_dst_addr;
    socklen_t *wlen = (flags & RAI_PASSIVE) ? &r->ai_src_len : &r->ai_dst_len;
    *which = dup_addr(ai->ai_addr, wlen);
    if (!(flags & RAI_PASSIVE) && hints && hints->ai_src_addr &&
        (hints->ai_src_addr->sa_family == AF_INET ||
         hints->ai_src_addr->sa_family == AF_INET6))
        r->ai_src_addr = dup_addr(hints->ai_src_addr, &r->ai_src_len);
    freeaddrinfo(ai);
    if (!*which) {
        rdma_freeaddrinfo(r);
        return EAI_MEMORY;
    }
    *res = r;
    return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
    while (res) {
        struct rdma_addrinfo *n = res->ai_next;
        free(res->ai_src_addr);
        free(res->ai_dst_addr);
        free(res->ai_src_canonname);
        free(res->ai_dst_canonname);
        free(res->ai_route);
        free(res->ai_connect);
        free(res);
        res = n;
    }
}

int rdma_create_ep(struct rdma_cm_id **idp, struct rdma_addrinfo *res,
                   struct ibv_pd *pd, struct ibv_qp_init_attr *qp_init_attr)
{
    if (!idp || !res)
        return cm_err(EINVAL);
    struct rdma_cm_id *rid;
    if (rdma_create_id(NULL, &rid, NULL,
                       (enum rdma_port_space)res->ai_port_space))
        return -1;
    struct cm_id *id = cm_id_of(rid);
    if (res->ai_flags & RAI_PASSIVE) {
        if (!res->ai_src_addr || rdma_bind_addr(rid, res->ai_src_addr))
            goto err;
        if (qp_init_attr) {
            id->qp_init_attr = malloc(sizeof(*qp_init_attr));
            if (!id->qp_init_attr)
                goto err;
            *id->qp_init_attr = *qp_init_attr;
            id->qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
        }
        if (pd)
            rid->pd = pd;
        *idp = rid;
        return 0;
    }
    if (!res->ai_dst_addr ||
        rdma_resolve_addr(rid, res->ai_src_addr, res->ai_dst_addr, 2000) ||
        rdma_resolve_route(rid, 2000))
        goto err;
    if (qp_init_attr) {
        qp_init_attr->qp_type = (enum ibv_qp_type)res->ai_qp_type;
        if (rdma_create_qp(rid, pd, qp_init_attr))
            goto err;
    }
    *idp = rid;
    return 0;
err:;
    int e = errno;
    rdma_destroy_ep(rid);
    return cm_err(e);
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
    if (!id)
        return;
    if (id->qp)
        rdma_destroy_qp(id);
    rdma_destroy_id(id);
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **idp)
{
    if (!listen || !idp || !cm_id_of(listen)->sync)
        return cm_err(EINVAL);
    struct cm_id *lis = cm_id_of(listen);
    if (listen->event) {
        rdma_ack_cm_event(listen->event);
        listen->event = NULL;
    }
    struct rdma_cm_event *ev;
    if (rdma_get_cm_event(listen->channel, &ev))
        return -1;
    if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
        listen->event = ev;
        return cm_err(ev->event == RDMA_CM_EVENT_REJECTED ? ECONNREFUSED
                                                          : EINVAL);
    }
    struct rdma_cm_id *rid = ev->id;
    if (rdma_migrate_id(rid, NULL)) {
        int e = errno;
        rdma_ack_cm_event(ev);
        rdma_destroy_id(rid);
        return cm_err(e);
    }
    rid->event = ev;
    if (lis->qp_init_attr) {
        struct ibv_qp_init_attr a = *lis->qp_init_attr;
        if (rdma_create_qp(rid, listen->pd, &a)) {
            int e = errno;
            rdma_reject(rid, NULL, 0);
            rdma_destroy_id(rid);
            return cm_err(e);
        }
    }
    *idp = rid;
    return 0;
}
