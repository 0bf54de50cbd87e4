/*
 * qp.c - verbs RC queue pairs over libmroce QPs: creation, the
 * RESET -> INIT -> RTR -> RTS state machine, query and destroy.
 *
 * Mapping of the verbs handshake onto MetaRoCE's: programs exchange QPN,
 * PSN and GID out of band and move both QPs to RTR with the peer's.  At
 * RTR each side knows both ends, (GID, UDP port, QPN), and compares them
 * bytewise: the smaller end listens (mroce_listen), the larger connects
 * (mroce_connect_start to the peer GID's address and MROCE_IBV_PEER_PORT,
 * naming the peer's QPN, which is libmroce's own).  Both sides derive the
 * same roles from the same facts, so exactly one side connects whatever
 * order they reach RTR in.  If the connecting side's CONNECT_REQ arrives
 * before the peer listens, the peer drops it and the request is
 * retransmitted (MetaRoCE's handshake backs off up to max_rto) until the
 * handshake timeout (MROCE_IBV_CONNECT_TIMEOUT_MS, 60000): no race decides
 * the outcome, only the delay.  Sending on a listening QP waits (driving
 * progress) until the peer has connected; receives may be posted from INIT.
 *
 * Attributes: path_mtu becomes the QP's MTU (256..4096, before the
 * handshake; MetaRoCE takes the smaller of both sides'); timeout becomes
 * max_rto (4.096 us * 2^timeout: a loss is retransmitted no later than
 * that; 0 = the default); retry_cnt and rnr_retry are the engine's (7 =
 * retry RNR forever); max_rd_atomic and max_dest_rd_atomic up to 16;
 * qp_access_flags become the engine's deny_remote (set_access).  At RTR
 * the QP's peer is recorded in the context (ctx->peers) for the src_qp of
 * its completions.  PSNs (rq_psn, sq_psn) are accepted and not used: MetaRoCE draws its own
 * start PSNs in its handshake (an anti-injection measure) and no completion
 * shows a PSN.  Address vectors must be global (is_global, GID index 0):
 * there are no LIDs.  INIT -> INIT changes the access flags; SQD, SQE,
 * and going back to RESET are refused (EOPNOTSUPP).
 *
 * ibv_destroy_qp of a QP in RTS lingers first (mroce_qp_linger, REL-41):
 * it keeps answering the peer until it has heard nothing for a quiet
 * period (max_rto plus 8 smoothed RTTs, 10 ms at least), at most MROCE_IBV_LINGER_MS
 * (default 1000; 0: no linger), so a program that exits right after its
 * last receive (ibv_rc_pingpong's client) still ACKs a retransmission of
 * that message, whose first ACK may have been lost.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verbs_int.h"

#define MV_LINGER_MS 1000 /* ibv_destroy_qp's linger bound, default */
#define MV_REMOTE_RIGHTS                                \
    (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
     IBV_ACCESS_REMOTE_ATOMIC)

/* qp_access_flags: the remote rights the QP grants its peer, enforced by
 * the engine (deny_remote: a refused WRITE, READ or atomic is NAKed and
 * fails at the requester with IBV_WC_REM_ACCESS_ERR). */
static int set_access(struct mv_qp *q, struct ibv_qp_attr *attr, int mask)
{
    if (!(mask & IBV_QP_ACCESS_FLAGS))
        return 0;
    unsigned f = attr->qp_access_flags;
    if (f & ~(unsigned)(MV_REMOTE_RIGHTS | IBV_ACCESS_LOCAL_WRITE))
        return EINVAL;
    struct mre_qp_attr ea;
    mroce_query_qp(q->mqp, &ea);
    ea.deny_remote = (uint8_t)(MV_REMOTE_RIGHTS & ~f);
    int rc = mroce_modify_qp(q->mqp, &ea, MROCE_QP_ATTR_ACCESS);
    if (rc < 0)
        return mv_errno(rc);
    q->attr.qp_access_flags = f;
    return 0;
}

static uint32_t pow2(uint32_t v)
{
    uint32_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

struct ibv_qp *mv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *ia)
{
    if (!pd || !ia || !ia->send_cq || !ia->recv_cq) {
        errno = EINVAL;
        return NULL;
    }
    if (ia->qp_type != IBV_QPT_RC || ia->srq) {
        errno = EOPNOTSUPP; /* UC, UD, XRC, raw and SRQs */
        return NULL;
    }
    struct ibv_qp_cap *cap = &ia->cap;
    if (cap->max_send_wr > MV_MAX_WR || cap->max_recv_wr > MV_MAX_WR ||
        cap->max_send_sge > MV_MAX_SGE || cap->max_recv_sge > MV_MAX_SGE ||
        cap->max_inline_data > MV_MAX_INLINE ||
        ia->send_cq->context != pd->context ||
        ia->recv_cq->context != pd->context) {
        errno = EINVAL;
        return NULL;
    }
    struct mv_qp *q = calloc(1, sizeof(*q));
    if (!q) {
        errno = ENOMEM;
        return NULL;
    }
    struct mroce_qp_init_attr a;
    mroce_qp_init_attr_default(&a);
    a.send_cq = ((struct mv_cq *)ia->send_cq)->mcq;
    a.recv_cq = ((struct mv_cq *)ia->recv_cq)->mcq;
    a.eng.max_send_wr = pow2(cap->max_send_wr ? cap->max_send_wr : 1);
    a.eng.max_recv_wr = pow2(cap->max_recv_wr ? cap->max_recv_wr : 1);
    a.eng.max_rd_atomic = MV_MAX_RD_ATOMIC;
    a.eng.deny_remote = MV_REMOTE_RIGHTS; /* qp_access_flags start at 0 */
    const char *to = getenv("MROCE_IBV_CONNECT_TIMEOUT_MS");
    long ms = to && *to ? strtol(to, NULL, 10) : 60000;
    a.eng.handshake_timeout = (mroce_tstamp)(ms > 0 ? ms : 60000) * 1000000;
    int rc = mroce_create_qp(((struct mv_pd *)pd)->mpd, &a, &q->mqp);
    if (rc < 0) {
        free(q);
        errno = mv_errno(rc);
        return NULL;
    }
    q->ctx = mv_ctx(pd->context);
    q->sq_sig_all = ia->sq_sig_all;
    cap->max_send_wr = a.eng.max_send_wr;
    cap->max_recv_wr = a.eng.max_recv_wr;
    cap->max_send_sge = MV_MAX_SGE;
    cap->max_recv_sge = MV_MAX_SGE;
    cap->max_inline_data = MV_MAX_INLINE;
    q->cap = *cap;
    struct ibv_qp *qp = &q->qp;
    qp->context = pd->context;
    qp->qp_context = ia->qp_context;
    qp->pd = pd;
    qp->send_cq = ia->send_cq;
    qp->recv_cq = ia->recv_cq;
    qp->qp_num = mroce_qp_num(q->mqp);
    qp->state = IBV_QPS_RESET;
    qp->qp_type = IBV_QPT_RC;
    pthread_mutex_init(&qp->mutex, NULL);
    pthread_cond_init(&qp->cond, NULL);
    q->attr.qp_state = IBV_QPS_RESET;
    mv_async_add_qp(q->ctx, q);
    return qp;
}

/* MROCE_IBV_LINGER_MS: how long ibv_destroy_qp may linger (REL-41). */
static int linger_ms(void)
{
    const char *e = getenv("MROCE_IBV_LINGER_MS");
    long v = e && *e ? strtol(e, NULL, 10) : MV_LINGER_MS;
    return v < 0 ? 0 : v > 60000 ? 60000 : (int)v;
}

int mv_destroy_qp(struct ibv_qp *qp)
{
    if (!qp)
        return EINVAL;
    struct mv_qp *q = (struct mv_qp *)qp;
    if (q->attr.qp_state == IBV_QPS_RTS)
        (void)mroce_qp_linger(q->mqp, linger_ms());
    mv_async_del_qp(q->ctx, q);
    int rc = mroce_destroy_qp(q->mqp);
    if (rc < 0) {
        mv_async_add_qp(q->ctx, q);
        return mv_errno(rc);
    }
    struct mv_peer *p = &q->ctx->peers[qp->qp_num & (MV_QP_SLOTS - 1)];
    uint32_t mine = qp->qp_num;
    atomic_compare_exchange_strong(&p->qpn, &mine, 0);
    pthread_mutex_destroy(&qp->mutex);
    pthread_cond_destroy(&qp->cond);
    free(q);
    return 0;
}

/* The peer's address literal from its GID; 0 or EINVAL. */
static int gid_host(const union ibv_gid *g, char *out, size_t n)
{
    static const uint8_t v4pre[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (memcmp(g->raw, v4pre, 12) == 0)
        return inet_ntop(AF_INET, &g->raw[12], out, (socklen_t)n) ? 0 : EINVAL;
    return inet_ntop(AF_INET6, g->raw, out, (socklen_t)n) ? 0 : EINVAL;
}

/* Which end connects: compares (GID, port, QPN) of both; 1 local larger,
 * 0 local smaller, -1 the same end. */
static int is_active(const struct mv_device *d, uint32_t lqpn,
                     const union ibv_gid *rgid, uint32_t rqpn)
{
    int c = memcmp(d->gid.raw, rgid->raw, 16);
    if (!c)
        c = (d->port > d->peer_port) - (d->port < d->peer_port);
    if (!c)
        c = (lqpn > rqpn) - (lqpn < rqpn);
    return c ? c > 0 : -1;
}

/* RESET -> INIT, and INIT -> INIT, which verbs allows for changing the
 * port, P_Key index and access flags (rdma_cm programs that move their
 * own QP, rping -q, go through it twice). */
static int to_init(struct mv_qp *q, struct ibv_qp_attr *attr, int mask)
{
    if (q->attr.qp_state != IBV_QPS_RESET && q->attr.qp_state != IBV_QPS_INIT)
        return EINVAL;
    if (((mask & IBV_QP_PORT) && attr->port_num != 1) ||
        ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0))
        return EINVAL;
    int rc = set_access(q, attr, mask);
    if (rc)
        return rc;
    q->attr.port_num = 1;
    return 0;
}

static int to_rtr(struct mv_qp *q, struct ibv_qp_attr *attr, int mask)
{
    int need = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
    if (q->attr.qp_state != IBV_QPS_INIT || (mask & need) != need)
        return EINVAL;
    struct ibv_ah_attr *ah = &attr->ah_attr;
    if (!ah->is_global || ah->grh.sgid_index != 0 || ah->port_num > 1)
        return EINVAL; /* no LIDs: RoCE address vectors only */
    if (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096)
        return EINVAL;
    if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
        attr->max_dest_rd_atomic > MV_MAX_RD_ATOMIC)
        return EINVAL;
    char host[INET6_ADDRSTRLEN];
    if (gid_host(&ah->grh.dgid, host, sizeof(host)))
        return EINVAL;
    int act = is_active(q->ctx->dev, q->qp.qp_num, &ah->grh.dgid,
                        attr->dest_qp_num);
    if (act < 0)
        return EINVAL; /* a QP connected to itself */
    struct mre_qp_attr ea;
    mroce_query_qp(q->mqp, &ea);
    ea.mtu = (uint16_t)(128u << attr->path_mtu);
    int rc = mroce_modify_qp(q->mqp, &ea, MROCE_QP_ATTR_MTU);
    if (rc == 0)
        rc = act ? mroce_connect_start(q->mqp, host, q->ctx->dev->peer_port,
                                       attr->dest_qp_num)
                 : mroce_listen(q->mqp);
    if (rc < 0)
        return mv_errno(rc);
    rc = set_access(q, attr, mask);
    if (rc)
        return rc;
    struct mv_peer *p = &q->ctx->peers[q->qp.qp_num & (MV_QP_SLOTS - 1)];
    atomic_store_explicit(&p->dest, attr->dest_qp_num, memory_order_relaxed);
    atomic_store_explicit(&p->qpn, q->qp.qp_num, memory_order_release);
    q->active = act;
    q->attr.path_mtu = attr->path_mtu;
    q->attr.dest_qp_num = attr->dest_qp_num;
    q->attr.rq_psn = attr->rq_psn;
    q->attr.ah_attr = *ah;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        q->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER)
        q->attr.min_rnr_timer = attr->min_rnr_timer;
    return 0;
}

static int to_rts(struct mv_qp *q, struct ibv_qp_attr *attr, int mask)
{
    if (q->attr.qp_state != IBV_QPS_RTR || !(mask & IBV_QP_SQ_PSN))
        return EINVAL;
    if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
        attr->max_rd_atomic > MV_MAX_RD_ATOMIC)
        return EINVAL;
    if ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7)
        return EINVAL;
    if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7)
        return EINVAL;
    struct mre_qp_attr ea;
    mroce_query_qp(q->mqp, &ea);
    unsigned m = 0;
    if (mask & (IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY)) {
        if (mask & IBV_QP_RETRY_CNT)
            ea.retry_cnt = attr->retry_cnt;
        if (mask & IBV_QP_RNR_RETRY)
            ea.rnr_retry = attr->rnr_retry;
        m |= MROCE_QP_ATTR_RETRY;
    }
    if ((mask & IBV_QP_TIMEOUT) && attr->timeout) {
        if (attr->timeout > 31)
            return EINVAL;
        mroce_tstamp t = (mroce_tstamp)4096 << attr->timeout;
        ea.max_rto = t < ea.min_rto ? ea.min_rto : t;
        m |= MROCE_QP_ATTR_TIMEOUT;
    }
    int rc = m ? mroce_modify_qp(q->mqp, &ea, m) : 0;
    if (rc < 0)
        return mv_errno(rc);
    rc = set_access(q, attr, mask);
    if (rc)
        return rc;
    q->attr.sq_psn = attr->sq_psn;
    if (mask & IBV_QP_TIMEOUT)
        q->attr.timeout = attr->timeout;
    if (mask & IBV_QP_RETRY_CNT)
        q->attr.retry_cnt = attr->retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)
        q->attr.rnr_retry = attr->rnr_retry;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        q->attr.max_rd_atomic = attr->max_rd_atomic;
    return 0;
}

int mv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    if (!qp || !attr)
        return EINVAL;
    struct mv_qp *q = (struct mv_qp *)qp;
    if (!(attr_mask & IBV_QP_STATE))
        return EOPNOTSUPP; /* attribute changes without a transition */
    int rc;
    switch (attr->qp_state) {
    case IBV_QPS_INIT:
        rc = to_init(q, attr, attr_mask);
        break;
    case IBV_QPS_RTR:
        rc = to_rtr(q, attr, attr_mask);
        break;
    case IBV_QPS_RTS:
        rc = to_rts(q, attr, attr_mask);
        break;
    case IBV_QPS_ERR:
        /* Asked for: no QP_FATAL event (async.c). */
        atomic_store_explicit(&q->user_err, 1, memory_order_release);
        rc = mv_errno(mroce_modify_qp_error(q->mqp));
        break;
    default:
        rc = EOPNOTSUPP; /* RESET again, SQD, SQE */
        break;
    }
    if (rc)
        return rc;
    q->attr.qp_state = attr->qp_state;
    qp->state = attr->qp_state;
    return 0;
}

int mv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                struct ibv_qp_init_attr *init_attr)
{
    (void)attr_mask;
    if (!qp || !attr || !init_attr)
        return EINVAL;
    struct mv_qp *q = (struct mv_qp *)qp;
    *attr = q->attr;
    if (mroce_qp_get_state(q->mqp) == MROCE_QPS_ERROR)
        attr->qp_state = IBV_QPS_ERR;
    attr->cur_qp_state = attr->qp_state;
    attr->cap = q->cap;
    memset(init_attr, 0, sizeof(*init_attr));
    init_attr->qp_context = qp->qp_context;
    init_attr->send_cq = qp->send_cq;
    init_attr->recv_cq = qp->recv_cq;
    init_attr->cap = q->cap;
    init_attr->qp_type = IBV_QPT_RC;
    init_attr->sq_sig_all = q->sq_sig_all;
    return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
                             struct ibv_qp_init_attr *qp_init_attr)
{
    return mv_create_qp(pd, qp_init_attr);
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)
{
    return mv_modify_qp(qp, attr, attr_mask);
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                 struct ibv_qp_init_attr *init_attr)
{
    return mv_query_qp(qp, attr, attr_mask, init_attr);
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
    return mv_destroy_qp(qp);
}

/* Extended QPs (ibv_wr_* posting) are not provided. */
struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
    (void)qp;
    errno = EOPNOTSUPP;
    return NULL;
}
