/* The QP on an identifier: rdma_create_qp creates it on our libibverbs
 * (with CQs and completion channels of its own when the caller gives
 * none, as librdmacm does) and moves it to INIT; the CM exchange moves it
 * to RTR and RTS with the peer's GID and QPN (cm_connect_qp), which is
 * where our libibverbs starts MetaRoCE's own handshake between the two
 * QPs.  rdma_init_qp_attr gives the same attributes to applications that
 * move their QP themselves (rping -q). */
#include <stdio.h>
#include <string.h>

#include "rdmacm_int.h"

static int fill_attr(struct cm_id *id, struct ibv_qp_attr *a, int *mask)
{
    enum ibv_qp_state s = a->qp_state;
    memset(a, 0, sizeof(*a));
    a->qp_state = s;
    switch (s) {
    case IBV_QPS_INIT:
        a->pkey_index = 0;
        a->port_num = 1;
        a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
        *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                IBV_QP_ACCESS_FLAGS;
        return 0;
    case IBV_QPS_RTR:
        if (!id->peer_known || !id->dev)
            return EINVAL;
        a->path_mtu = id->dev->mtu;
        a->dest_qp_num = id->peer_qpn;
        a->rq_psn = 0;
        a->max_dest_rd_atomic = id->resp_res;
        a->min_rnr_timer = 12;
        a->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
        if (id->resp_res)
            a->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC;
        a->ah_attr.is_global = 1;
        memcpy(a->ah_attr.grh.dgid.raw, id->peer_gid, 16);
        a->ah_attr.grh.sgid_index = 0;
        a->ah_attr.grh.hop_limit = 64;
        a->ah_attr.port_num = 1;
        *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS;
        return 0;
    case IBV_QPS_RTS:
        if (!id->peer_known)
            return EINVAL;
        a->sq_psn = 0;
        a->timeout = id->ack_timeout; /* 0: MetaRoCE's own RTO bound */
        a->retry_cnt = id->retry;
        a->rnr_retry = id->rnr_retry;
        a->max_rd_atomic = id->init_depth;
        *mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
                IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
        return 0;
    default:
        return EINVAL;
    }
}

int rdma_init_qp_attr(struct rdma_cm_id *rid, struct ibv_qp_attr *qp_attr,
                      int *qp_attr_mask)
{
    if (!rid || !qp_attr || !qp_attr_mask)
        return cm_err(EINVAL);
    int rc = fill_attr(cm_id_of(rid), qp_attr, qp_attr_mask);
    return rc ? cm_err(rc) : 0;
}

int cm_connect_qp(struct cm_id *id)
{
    struct ibv_qp_attr a;
    int mask;
    a.qp_state = IBV_QPS_RTR;
    int rc = fill_attr(id, &a, &mask);
    if (!rc)
        rc = ibv_modify_qp(id->id.qp, &a, mask);
    if (rc)
        return rc;
    a.qp_state = IBV_QPS_RTS;
    rc = fill_attr(id, &a, &mask);
    return rc ? rc : ibv_modify_qp(id->id.qp, &a, mask);
}

static void destroy_cqs(struct rdma_cm_id *id)
{
    if (id->send_cq && id->send_cq != id->recv_cq)
        ibv_destroy_cq(id->send_cq);
    if (id->recv_cq)
        ibv_destroy_cq(id->recv_cq);
    if (id->send_cq_channel && id->send_cq_channel != id->recv_cq_channel)
        ibv_destroy_comp_channel(id->send_cq_channel);
    if (id->recv_cq_channel)
        ibv_destroy_comp_channel(id->recv_cq_channel);
    id->send_cq = id->recv_cq = NULL;
    id->send_cq_channel = id->recv_cq_channel = NULL;
}

static struct ibv_cq *own_cq(struct rdma_cm_id *id,
                             struct ibv_comp_channel **ch, uint32_t n)
{
    *ch = ibv_create_comp_channel(id->verbs);
    if (!*ch)
        return NULL;
    return ibv_create_cq(id->verbs, n ? (int)n : 1, id, *ch, 0);
}

int rdma_create_qp(struct rdma_cm_id *rid, struct ibv_pd *pd,
                   struct ibv_qp_init_attr *attr)
{
    if (!rid || !attr)
        return cm_err(EINVAL);
    struct cm_id *id = cm_id_of(rid);
    if (rid->qp || !rid->verbs)
        return cm_err(EINVAL);
    if (!pd)
        pd = rid->pd;
    if (!pd || pd->context != rid->verbs)
        return cm_err(EINVAL);
    if (attr->qp_type != IBV_QPT_RC || attr->srq) {
        fprintf(stderr, "librdmacm (MetaRoCE): only RC QPs without SRQ\n");
        return cm_err(EOPNOTSUPP);
    }
    if (!attr->recv_cq) {
        rid->recv_cq = own_cq(rid, &rid->recv_cq_channel,
                              attr->cap.max_recv_wr);
        if (!rid->recv_cq)
            goto err;
        attr->recv_cq = rid->recv_cq;
    }
    if (!attr->send_cq) {
        rid->send_cq = own_cq(rid, &rid->send_cq_channel,
                              attr->cap.max_send_wr);
        if (!rid->send_cq)
            goto err;
        attr->send_cq = rid->send_cq;
    }
    struct ibv_qp *qp = ibv_create_qp(pd, attr);
    if (!qp)
        goto err;
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT};
    int mask, rc = fill_attr(id, &a, &mask);
    if (!rc)
        rc = ibv_modify_qp(qp, &a, mask);
    if (rc) {
        ibv_destroy_qp(qp);
        errno = rc;
        goto err;
    }
    rid->qp = qp;
    rid->pd = pd;
    return 0;
err:;
    int e = errno ? errno : ENOMEM;
    destroy_cqs(rid);
    return cm_err(e);
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *ax)
{
    if (!id || !ax)
        return cm_err(EINVAL);
    if (ax->comp_mask & ~(uint32_t)IBV_QP_INIT_ATTR_PD)
        return cm_err(EOPNOTSUPP); /* extended QPs: not in our libibverbs */
    struct ibv_qp_init_attr a = {
        .qp_context = ax->qp_context,
        .send_cq = ax->send_cq,
        .recv_cq = ax->recv_cq,
        .srq = ax->srq,
        .cap = ax->cap,
        .qp_type = ax->qp_type,
        .sq_sig_all = ax->sq_sig_all,
    };
    int rc = rdma_create_qp(id,
                            (ax->comp_mask & IBV_QP_INIT_ATTR_PD) ? ax->pd
                                                                  : NULL,
                            &a);
    if (!rc) {
        ax->send_cq = a.send_cq;
        ax->recv_cq = a.recv_cq;
        ax->cap = a.cap;
    }
    return rc;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
    if (!id)
        return;
    if (id->qp)
        ibv_destroy_qp(id->qp);
    id->qp = NULL;
    destroy_cqs(id);
}
