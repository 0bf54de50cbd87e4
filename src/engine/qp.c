/*
 * qp.c - queue pair lifecycle: creation, the in-band handshake, orderly
 * close, the error state and its flush, and the QP's timer deadline.
 *
 * State machine (CONN-*): RESET -> LISTEN (passive) or CONNECTING (active)
 * -> RTS -> CLOSING -> CLOSED, and ERROR from anywhere.  Handshake packets
 * are retransmitted on a backoff timer until answered or handshake_timeout.
 * A QP in ERROR completes everything outstanding with WR_FLUSH_ERR, in
 * posting order, and drops what arrives.
 */
#include "engine_int.h"

static uint32_t pow2_at_least(uint32_t v, uint32_t lo)
{
    uint32_t p = lo;
    while (p < v && p < (1u << 30))
        p <<= 1;
    return p;
}

void mre_qp_attr_default(struct mre_qp_attr *a)
{
    memset(a, 0, sizeof(*a));
    a->max_send_wr = 256;
    a->max_recv_wr = 256;
    a->mtu = 4096;
    a->npaths = 64;
    a->window = 1024;
    a->max_rd_atomic = 16;
    a->retry_cnt = 7;
    a->rnr_retry = 7;
    a->cc_algo = MROCE_CC_DELAY_ECN;
    a->min_rto = 200000;
    a->max_rto = 100000000;
    a->max_ack_delay = 10000;
    a->handshake_timeout = 1000000000;
    a->ooo_thresh = 64;
    a->init_cwnd = 64 * 1024;
    a->target_qdelay = 5000;
    a->entropy_base = 49152;
    a->entropy_span = 16384;
    a->path_burst = 1;
    a->path_reuse = 0;
    a->peer_timeout = 5000000000ull;
    a->max_streams = 1;
    a->rate_hint = 2; /* CC-24, CC-36 */
    a->path_cwnd = 1; /* CC-20 */
}

/* Free a QP's arrays and the QP itself (each may be NULL). */
static void qp_free_storage(const struct mre_mem *m, mre_qp *qp)
{
    mre_mem_free(m, qp->sq);
    mre_mem_free(m, qp->inline_buf);
    mre_mem_free(m, qp->rq);
    mre_mem_free(m, qp->rjobs);
    mre_mem_free(m, qp->tx);
    mre_mem_free(m, qp->tx_sacked);
    mre_mem_free(m, qp->retxq);
    mre_mem_free(m, qp->path_slots);
    mre_mem_free(m, qp->rxwin.bits);
    mre_sec_qp_free(qp);
    mre_stream_free(m, qp);
    mre_mem_free(m, qp->planes);
    mre_mem_free(m, qp);
}

int mre_qp_new(mre_ep *ep, const struct mre_qp_attr *in, mre_qp **pqp)
{
    if (!ep || !in || !pqp || !in->send_cq || !in->recv_cq)
        return MROCE_EINVAL;
    struct mre_qp_attr a = *in;
    if (a.max_send_wr == 0 || a.max_send_wr > 65536 || a.max_recv_wr == 0 ||
        a.max_recv_wr > 65536 || a.mtu < 256 ||
        a.mtu > MROCE_MAX_PKT_LEN - MROCE_MAX_DATA_HDR_LEN - MROCE_CRC_LEN ||
        a.npaths == 0 || a.npaths > 256 || a.window < 64 ||
        a.window > MRE_MAX_WINDOW || a.max_rd_atomic == 0 ||
        a.max_rd_atomic > 256 || a.entropy_span < a.npaths ||
        (uint32_t)a.entropy_base + a.entropy_span > 65536 || a.min_rto == 0 ||
        a.max_rto < a.min_rto || a.init_cwnd == 0 ||
        a.cc_algo > MROCE_CC_NONE || a.ooo_thresh == 0 || a.path_burst == 0 ||
        a.path_burst > 64 || a.path_reuse > 1 || a.rate_hint > 3 ||
        (a.deny_remote &
         ~(MROCE_ACCESS_REMOTE_WRITE | MROCE_ACCESS_REMOTE_READ |
           MROCE_ACCESS_REMOTE_ATOMIC)) ||
        in->send_cq->ep != ep || in->recv_cq->ep != ep)
        return MROCE_EINVAL;
    if (a.max_streams == 0)
        a.max_streams = 1;
    /* Streams: the STREAM word must fit beside a full MTU (SEM-32). */
    if (a.max_streams > MRE_MAX_STREAMS ||
        (a.max_streams > 1 && a.mtu > MROCE_MAX_PKT_LEN -
                                          MROCE_MAX_STREAM_DATA_HDR_LEN -
                                          MROCE_CRC_LEN))
        return MROCE_EINVAL;
    /* SEC-34: a secure QP needs a secure endpoint. */
    if (a.secure > MRE_QP_SEC_ANY ||
        (a.secure == MRE_QP_SEC_ON && !ep->cfg.sec_suite))
        return MROCE_EINVAL;
    /* CONN-36: a sealed packet is MROCE_SEC_OVERHEAD longer. */
    if (ep->cfg.sec_suite && a.mtu > MROCE_MAX_PKT_LEN -
                                         MROCE_MAX_STREAM_DATA_HDR_LEN -
                                         MROCE_CRC_LEN - MROCE_SEC_OVERHEAD)
        return MROCE_EINVAL;
    if (ep->nqps == ep->nqps_slots)
        return MROCE_EFULL;
    a.max_send_wr = pow2_at_least(a.max_send_wr, 1);
    a.max_recv_wr = pow2_at_least(a.max_recv_wr, 1);
    a.window = pow2_at_least(a.window, 64);

    const struct mre_mem *m = &ep->mem;
    mre_qp *qp = mre_mem_calloc(m, 1, sizeof(*qp));
    if (!qp)
        return MROCE_ENOMEM;
    qp->ep = ep;
    qp->attr = a;
    qp->sec_on = ep->cfg.sec_suite && a.secure != MRE_QP_SEC_OFF;
    qp->ack_sack_words = MROCE_MAX_SACK_WORDS; /* until the handshake */
    qp->sack_span = 32u * MROCE_MAX_SACK_WORDS;
    qp->sq = mre_mem_calloc(m, a.max_send_wr, sizeof(*qp->sq));
    qp->rq = mre_mem_calloc(m, a.max_recv_wr, sizeof(*qp->rq));
    qp->nrjobs = 2 * a.max_rd_atomic;
    qp->rjobs = mre_mem_calloc(m, qp->nrjobs, sizeof(*qp->rjobs));
    qp->tx = mre_mem_calloc(m, a.window, sizeof(*qp->tx));
    qp->tx_sacked = mre_mem_calloc(m, a.window / 64, sizeof(uint64_t));
    qp->retxq = mre_mem_calloc(m, a.window, sizeof(*qp->retxq));
    qp->path_slots = mre_mem_calloc(m, a.npaths, sizeof(*qp->path_slots));
    uint64_t *bits = mre_mem_calloc(m, a.window / 64, sizeof(uint64_t));
    if (!qp->sq || !qp->rq || !qp->rjobs || !qp->tx || !qp->tx_sacked ||
        !qp->retxq || !qp->path_slots || !bits || mre_stream_alloc(qp) < 0 ||
        mre_sec_qp_init(qp) < 0) {
        mre_mem_free(m, bits);
        qp->rxwin.bits = NULL;
        goto fail;
    }
    qp->rxwin.bits = bits;
    qp->rxwin.size = a.window;
    if (mre_pathset_init(&qp->paths, qp->path_slots, a.npaths, a.entropy_base,
                         a.entropy_span, a.target_qdelay, ep->cfg.rand,
                         ep->cfg.rand_user) < 0)
        goto fail;
    qp->paths.burst = a.path_burst;
    qp->paths.reuse = a.path_reuse;
    qp->sq_mask = a.max_send_wr - 1;
    qp->rq_mask = a.max_recv_wr - 1;
    qp->tx_mask = a.window - 1;
    qp->mtu = a.mtu;
    /* Until the peer advertises its own (LOSS-25). */
    qp->peer_ack_delay = a.max_ack_delay < 0xffffffffu
                             ? (uint32_t)a.max_ack_delay
                             : 0xffffffffu;
    /* Receiver-driven mode starts from a small unsolicited allowance and
     * waits for the receiver's grant, so N senders starting at once do not
     * fill the receiver's queue before the first ACK (CC). */
    qp->peer_credit = a.credit_mode
                          ? 4 * ((uint32_t)a.mtu + MROCE_MAX_DATA_HDR_LEN +
                                 MROCE_CRC_LEN)
                          : MROCE_CREDIT_UNLIMITED;
    qp->ack_deadline = qp->loss_deadline = qp->reo_deadline = qp->rnr_deadline =
        qp->ctrl_deadline = qp->live_deadline = MROCE_TSTAMP_INF;
    const struct mre_cc_ops *ops = mre_cc_ops_get(a.cc_algo);
    uint64_t maxc = (uint64_t)a.window * (a.mtu + MROCE_MAX_DATA_HDR_LEN);
    mre_cc_init(&qp->cc, ops, a.mtu, a.init_cwnd,
                maxc > 0x7fffffff ? 0x7fffffff : (uint32_t)maxc,
                a.target_qdelay);
    qp->cc.line_mbps = ep->cfg.rx_rate_mbps;            /* CC-39 */
    mre_cc_path_init(&qp->cc, &qp->paths, a.path_cwnd); /* CC-22 */
    qp->rh.hint = MROCE_CREDIT_UNLIMITED;

    /* Slot and QPN: low 16 bits index the slot, high bits are random so a
     * recycled slot gets a different number. */
    uint32_t slot = ep->free_hint; /* still the lowest free slot */
    while (ep->qps[slot])
        slot++;
    ep->free_hint = slot + 1;
    uint32_t gen = (uint32_t)mre_ep_rand64(ep) & 0xff;
    qp->slot = slot;
    qp->qpn = (gen << 16) | slot;
    if (qp->qpn == 0)
        qp->qpn = 1u << 16;
    ep->qps[slot] = qp;
    qp->live_idx = ep->nqps;
    ep->live[ep->nqps++] = qp;
    a.send_cq->users++;
    a.recv_cq->users++;
    qp->state = MROCE_QPS_RESET;
    ep->theap_pos[slot] = MROCE_NONE32;
    *pqp = qp;
    return 0;
fail:
    qp_free_storage(m, qp);
    return MROCE_ENOMEM;
}

void mre_qp_release_swqe(mre_qp *qp, struct mre_swqe *w)
{
    (void)qp;
    for (int i = 0; i < w->num_sge; i++)
        if (w->mrs[i]) {
            w->mrs[i]->refs--;
            w->mrs[i] = NULL;
        }
}

void mre_qp_release_rwqe(mre_qp *qp, struct mre_rwqe *r)
{
    (void)qp;
    for (int i = 0; i < r->num_sge; i++)
        if (r->mrs[i]) {
            r->mrs[i]->refs--;
            r->mrs[i] = NULL;
        }
}

void mre_qp_del(mre_qp *qp)
{
    if (!qp)
        return;
    mre_ep *ep = qp->ep;
    const struct mre_mem *m = &ep->mem;
    for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++)
        mre_qp_release_swqe(qp, &qp->sq[i & qp->sq_mask]);
    struct mre_rwqe *r;
    for (uint32_t k = 0; (r = mre_resp_rq_next(qp, &k));)
        mre_qp_release_rwqe(qp, r);
    for (uint32_t i = 0; i < qp->nrjobs; i++)
        mre_resp_free_rjob(qp, &qp->rjobs[i]);
    mre_ep_unready(ep, qp);
    if (qp->state == MROCE_QPS_LISTEN)
        mre_conntab_listen_remove(ep, qp);
    mre_conntab_remove(ep, qp);
    mre_timer_remove(ep, qp);
    mre_rh_forget(ep, qp);
    ep->qps[qp->slot] = NULL;
    if (qp->slot < ep->free_hint)
        ep->free_hint = qp->slot;
    mre_qp *last = ep->live[--ep->nqps];
    ep->live[qp->live_idx] = last;
    last->live_idx = qp->live_idx;
    qp->attr.send_cq->users--;
    qp->attr.recv_cq->users--;
    qp_free_storage(m, qp);
}

uint32_t mre_qp_num(const mre_qp *qp)
{
    return qp ? qp->qpn : 0;
}
uint32_t mre_qp_remote_qpn(const mre_qp *qp)
{
    return qp ? qp->peer_qpn : 0;
}
enum mroce_qp_state mre_qp_state(const mre_qp *qp)
{
    return qp ? (enum mroce_qp_state)qp->state : MROCE_QPS_ERROR;
}
const struct mre_qp_attr *mre_qp_get_attr(const mre_qp *qp)
{
    return qp ? &qp->attr : NULL;
}

void mre_qp_get_counters(const mre_qp *qp, struct mroce_qp_counters *c)
{
    if (!qp || !c)
        return;
    *c = qp->cnt;
    c->srtt = qp->srtt;
    c->min_rtt = qp->min_rtt;
    c->cwnd = qp->cc.cwnd;
    c->path_reuses = qp->paths.reuses; /* PATH-16 */
    c->rate_hint = qp->rh.on ? qp->rh.hint : MROCE_CREDIT_UNLIMITED;
}

int mre_qp_path_stats(const mre_qp *qp, struct mroce_path_stats *ps, int n)
{
    if (!qp || n < 0 || (n && !ps))
        return MROCE_EINVAL;
    for (int i = 0; i < n && i < qp->paths.npaths; i++)
        mre_path_get_stats(&qp->paths, (uint16_t)i, &ps[i]);
    return qp->paths.npaths;
}

/* Start PSN and token for our direction (CONN: random, never 0 token). */
static void choose_local_identity(mre_qp *qp)
{
    do
        qp->local_token = mre_ep_rand64(qp->ep);
    while (qp->local_token == 0);
    qp->local_start_psn = (uint32_t)mre_ep_rand64(qp->ep);
    qp->snd_una = qp->snd_nxt = qp->snd_high_acked = qp->local_start_psn;
    qp->ooo_cursor = qp->ooo_edge = qp->local_start_psn;
    mre_sec_new_identity(qp); /* CONN-34 */
}

static void cap_handshake_deadline(mre_qp *qp);

static mroce_tstamp initial_ctrl_rto(const mre_qp *qp)
{
    return qp->attr.min_rto * 5;
}

int mre_qp_connect(mre_qp *qp, const struct mre_addr *to, uint32_t remote_qpn,
                   mroce_tstamp now)
{
    if (!qp || !to || to->len > sizeof(to->data))
        return MROCE_EINVAL;
    if (qp->state != MROCE_QPS_RESET)
        return MROCE_ESTATE;
    qp->peer = *to;
    qp->peer_qpn = remote_qpn;
    choose_local_identity(qp);
    qp->state = MROCE_QPS_CONNECTING;
    qp->conn_start = now;
    qp->ctrl_rto = initial_ctrl_rto(qp);
    qp->ctrl_deadline = now + qp->ctrl_rto;
    cap_handshake_deadline(qp);
    qp->ctrl |= CTRL_CONN_REQ;
    mre_ep_mark_ready(qp->ep, qp);
    mre_timer_update(qp->ep, qp);
    return 0;
}

int mre_qp_listen(mre_qp *qp, mroce_tstamp now)
{
    (void)now;
    if (!qp)
        return MROCE_EINVAL;
    if (qp->state != MROCE_QPS_RESET)
        return MROCE_ESTATE;
    qp->state = MROCE_QPS_LISTEN;
    mre_conntab_listen_append(qp->ep, qp);
    return 0;
}

/* Adopt the peer's half of the handshake. */
static void adopt_peer(mre_qp *qp, const struct mrw_conn_hdr *c)
{
    qp->peer_token = c->token;
    qp->peer_start_psn = c->start_psn;
    qp->mtu = c->mtu < qp->attr.mtu ? c->mtu : qp->attr.mtu;
    qp->cc.mtu = qp->mtu;
    qp->peer_window = c->rx_window < qp->attr.window ? c->rx_window
                                                     : qp->attr.window;
    if (qp->peer_window < 64)
        qp->peer_window = 64;
    qp->peer_rd_atomic = c->max_rd_atomic ? c->max_rd_atomic : 1;
    qp->peer_ack_delay = c->max_ack_delay < qp->attr.max_rto
                             ? c->max_ack_delay
                             : (uint32_t)qp->attr.max_rto; /* LOSS-25 */
    mre_rxwin_init(&qp->rxwin, qp->rxwin.bits, qp->attr.window, c->start_psn);
    mre_stream_conn_adopt(qp, c); /* SEM-31 */
    mre_sack_conn_adopt(qp, c);   /* REL-42 */
    mre_plane_negotiate(qp, c);   /* CONN-28 */
}

/* Secure mode: the connection's keys, once its handshake is done; a QP
 * that cannot have them fails rather than send in clear (SEC-17). */
static void key_connection(mre_qp *qp, const struct mrw_conn_hdr *c)
{
    if (mre_sec_on_handshake(qp, c) < 0)
        mre_qp_enter_error(qp);
}

void mre_qp_on_connect_req(mre_ep *ep, const struct mrw_pkt *pkt,
                           const struct mre_rx_info *info, mroce_tstamp now)
{
    const struct mrw_conn_hdr *c = &pkt->u.conn;
    /* A retransmitted request for a connection we already accepted gets the
     * same answer again (conntab.c: every QP past the handshake, by key). */
    mre_qp *q = mre_conntab_find(ep, &info->from, c->src_qpn, c->token);
    if (q) {
        if (q->state == MROCE_QPS_RTS) {
            q->ctrl |= CTRL_CONN_RESP;
            mre_ep_mark_ready(ep, q);
        } else {
            q->cnt.drop_state++; /* closing or failed: no answer */
        }
        return;
    }
    mre_qp *qp = mre_conntab_listen_find(ep, pkt->base.dst_qpn);
    if (!qp || c->src_qpn == 0 || c->token == 0) {
        ep->cnt.drop_no_listener++;
        return;
    }
    mre_conntab_listen_remove(ep, qp);
    if (qp->attr.secure == MRE_QP_SEC_ANY)
        qp->sec_on = c->sec_present; /* SEC-35: as the requester asks */
    qp->peer = info->from;
    qp->peer_qpn = c->src_qpn;
    choose_local_identity(qp);
    adopt_peer(qp, c);
    qp->peer_credit_mode = (c->flags & MROCE_CONN_CREDIT) != 0;
    mre_rh_on_conn(qp, c->flags);
    qp->state = MROCE_QPS_RTS;
    mre_live_start(qp, now);
    mre_conntab_insert(ep, qp);
    qp->ctrl |= CTRL_CONN_RESP;
    /* LOSS-29, LOSS-30: the CONNECT_RESP leaves now; the loss timer waits
     * for a packet from the peer that proves it arrived. */
    qp->conn_start = now;
    qp->hs_wait = 1;
    qp->hs_probes = 0;
    qp->cnt.rx_pkts++;
    key_connection(qp, c);
    mre_ep_mark_ready(ep, qp);
}

void mre_qp_on_ctrl_pkt(mre_qp *qp, const struct mrw_pkt *pkt,
                        const struct mre_rx_info *info, mroce_tstamp now)
{
    (void)info;
    switch (pkt->base.opcode) {
    case MROCE_OP_CONNECT_RESP:
        if (qp->state == MROCE_QPS_CONNECTING) {
            const struct mrw_conn_hdr *c = &pkt->u.conn;
            if (qp->peer_qpn != 0 && qp->peer_qpn != c->src_qpn) {
                qp->cnt.drop_invalid++;
                return;
            }
            qp->peer_qpn = c->src_qpn;
            /* LOSS-26: exact if the request was sent once, else an upper
             * bound (counted from the first request) */
            qp->hs_rtt = now > qp->conn_start ? now - qp->conn_start : 1;
            adopt_peer(qp, c);
            qp->peer_credit_mode = (c->flags & MROCE_CONN_CREDIT) != 0;
            mre_rh_on_conn(qp, c->flags);
            qp->state = MROCE_QPS_RTS;
            mre_live_start(qp, now);
            mre_conntab_insert(qp->ep, qp);
            qp->ctrl &= (uint8_t)~CTRL_CONN_REQ;
            qp->ctrl_deadline = MROCE_TSTAMP_INF;
            key_connection(qp, c);
            if (qp->state == MROCE_QPS_ERROR)
                return;
        } else if (qp->state != MROCE_QPS_RTS ||
                   pkt->u.conn.token != qp->peer_token) {
            qp->cnt.drop_state++;
            return;
        }
        /* Confirm (or re-confirm, if our confirmation was lost). */
        qp->echo_psn = qp->rxwin.cum;
        qp->echo_ts = pkt->base.tsval;
        qp->echo_entropy = pkt->base.entropy;
        qp->echo_flags = 0;
        qp->echo_arrival = now;
        qp->ack_now = 1;
        break;
    case MROCE_OP_DISCONNECT:
        if (qp->state == MROCE_QPS_RTS || qp->state == MROCE_QPS_CLOSING ||
            qp->state == MROCE_QPS_CLOSED) {
            qp->ctrl |= CTRL_DISC_ACK;
            if (qp->state != MROCE_QPS_CLOSED) {
                qp->state = MROCE_QPS_CLOSED;
                qp->ctrl_deadline = MROCE_TSTAMP_INF;
                /* CLOSED sends nothing but DISCONNECT_ACK (CONN-19). */
                qp->ctrl = CTRL_DISC_ACK;
                qp->ack_now = 0;
                qp->ack_pending = 0;
                qp->ack_deadline = MROCE_TSTAMP_INF;
                mre_qp_flush(qp);
            }
        } else {
            qp->cnt.drop_state++;
        }
        break;
    case MROCE_OP_DISCONNECT_ACK:
        if (qp->state == MROCE_QPS_CLOSING && (qp->ctrl_tries > 0)) {
            qp->state = MROCE_QPS_CLOSED;
            qp->ctrl_deadline = MROCE_TSTAMP_INF;
            mre_qp_flush(qp);
        } else {
            qp->cnt.drop_state++;
        }
        break;
    default:
        break;
    }
}

void mre_qp_base_hdr(const mre_qp *qp, struct mrw_pkt *p, uint8_t op,
                     uint32_t psn, mroce_tstamp now)
{
    p->base.version = MROCE_VERSION;
    p->base.opcode = op;
    p->base.flags = 0;
    p->base.dst_qpn = qp->peer_qpn;
    p->base.token = qp->peer_token;
    p->base.psn = psn;
    p->base.tsval = (uint32_t)now;
    p->base.entropy = qp->path_slots[0].entropy;
    p->payload = NULL;
    p->payload_len = 0;
}

int mre_qp_write_ctrl(mre_qp *qp, uint8_t *buf, size_t cap,
                      struct mre_tx_info *info, mroce_tstamp now)
{
    struct mrw_pkt p;
    uint8_t bit;
    if (qp->ctrl & CTRL_CONN_REQ) {
        bit = CTRL_CONN_REQ;
        mre_qp_base_hdr(qp, &p, MROCE_OP_CONNECT_REQ, qp->snd_nxt, now);
        p.base.token = 0;
    } else if (qp->ctrl & CTRL_CONN_RESP) {
        bit = CTRL_CONN_RESP;
        mre_qp_base_hdr(qp, &p, MROCE_OP_CONNECT_RESP, qp->snd_nxt, now);
    } else if (qp->ctrl & CTRL_DISC) {
        bit = CTRL_DISC;
        mre_qp_base_hdr(qp, &p, MROCE_OP_DISCONNECT, qp->snd_nxt, now);
    } else {
        bit = CTRL_DISC_ACK;
        mre_qp_base_hdr(qp, &p, MROCE_OP_DISCONNECT_ACK, qp->snd_nxt, now);
    }
    if (bit == CTRL_CONN_REQ || bit == CTRL_CONN_RESP) {
        struct mrw_conn_hdr *c = &p.u.conn;
        memset(c, 0, sizeof(*c));
        c->src_qpn = qp->qpn;
        c->start_psn = qp->local_start_psn;
        c->token = qp->local_token;
        c->mtu = qp->attr.mtu;
        c->npaths = qp->attr.npaths;
        c->rx_window = qp->attr.window;
        c->max_rd_atomic = qp->nrjobs;
        c->flags = (qp->attr.credit_mode ? MROCE_CONN_CREDIT : 0) |
                   mre_rh_conn_flags(qp);
        c->max_ack_delay = qp->attr.max_ack_delay < 0xffffffffu
                               ? (uint32_t)qp->attr.max_ack_delay
                               : 0xffffffffu; /* WIRE-21, LOSS-25 */
        mre_stream_conn_build(qp, c);         /* SEM-31 */
        mre_sack_conn_build(qp, c, bit == CTRL_CONN_RESP); /* WIRE-52 */
        mre_plane_conn_ext(qp, c, bit == CTRL_CONN_RESP);
        mre_sec_conn_build(qp, c); /* CONN-31 */
    }
    size_t n = mrw_pkt_encode(&p, buf, cap);
    if (n == 0)
        return MROCE_ENOBUF;
    if ((bit == CTRL_CONN_REQ || bit == CTRL_CONN_RESP) &&
        mre_sec_conn_mac(qp, buf, n) < 0)
        return 0; /* retried at the next handshake timer */
    qp->ctrl &= (uint8_t)~bit;
    info->to = qp->peer;
    info->entropy = p.base.entropy;
    return (int)n;
}

/* CONN-6: the handshake fails handshake_timeout after connect, not at the
 * next (doubled, up to max_rto) retransmission time after that. */
static void cap_handshake_deadline(mre_qp *qp)
{
    if (qp->state == MROCE_QPS_CONNECTING &&
        qp->conn_start + qp->attr.handshake_timeout < qp->ctrl_deadline)
        qp->ctrl_deadline = qp->conn_start + qp->attr.handshake_timeout;
}

void mre_qp_ctrl_timer(mre_qp *qp, mroce_tstamp now)
{
    if (qp->ctrl_deadline > now)
        return;
    if (qp->state == MROCE_QPS_CONNECTING) {
        if (now - qp->conn_start >= qp->attr.handshake_timeout) {
            qp->ctrl_deadline = MROCE_TSTAMP_INF;
            qp->cnt.timeouts++;
            mre_qp_enter_error(qp);
            return;
        }
        qp->ctrl |= CTRL_CONN_REQ;
    } else if (qp->state == MROCE_QPS_CLOSING && qp->ctrl_tries > 0) {
        if (qp->ctrl_tries > qp->attr.retry_cnt) {
            /* Peer gone: close anyway; nothing of ours is outstanding. */
            qp->state = MROCE_QPS_CLOSED;
            qp->ctrl_deadline = MROCE_TSTAMP_INF;
            mre_qp_flush(qp);
            return;
        }
        qp->ctrl |= CTRL_DISC;
        qp->ctrl_tries++;
    } else {
        qp->ctrl_deadline = MROCE_TSTAMP_INF;
        return;
    }
    qp->ctrl_rto = qp->ctrl_rto * 2 > qp->attr.max_rto ? qp->attr.max_rto
                                                       : qp->ctrl_rto * 2;
    qp->ctrl_deadline = now + qp->ctrl_rto;
    cap_handshake_deadline(qp);
}

int mre_qp_disconnect(mre_qp *qp, mroce_tstamp now)
{
    if (!qp)
        return MROCE_EINVAL;
    if (qp->state != MROCE_QPS_RTS)
        return MROCE_ESTATE;
    qp->state = MROCE_QPS_CLOSING;
    mre_qp_try_close(qp, now);
    mre_timer_update(qp->ep, qp);
    return 0;
}

void mre_qp_try_close(mre_qp *qp, mroce_tstamp now)
{
    if (qp->state != MROCE_QPS_CLOSING || qp->ctrl_tries > 0)
        return;
    if (qp->sq_head != qp->sq_tail || qp->snd_una != qp->snd_nxt)
        return;
    qp->ctrl |= CTRL_DISC;
    qp->ctrl_tries = 1;
    qp->ctrl_rto = qp->srtt ? 2 * qp->srtt + qp->attr.min_rto
                            : initial_ctrl_rto(qp);
    qp->ctrl_deadline = now + qp->ctrl_rto;
    mre_ep_mark_ready(qp->ep, qp);
}

int mre_qp_set_error(mre_qp *qp)
{
    if (!qp)
        return MROCE_EINVAL;
    mre_qp_enter_error(qp);
    mre_timer_update(qp->ep, qp);
    return 0;
}

void mre_qp_flush(mre_qp *qp)
{
    mre_comp_reset(qp);
    mre_req_reset(qp);
    mre_resp_reset(qp);
    mre_txr_reset(qp);
    mre_loss_reset(qp);
}

void mre_qp_enter_error(mre_qp *qp)
{
    if (qp->state == MROCE_QPS_ERROR)
        return;
    if (qp->state == MROCE_QPS_LISTEN)
        mre_conntab_listen_remove(qp->ep, qp);
    qp->state = MROCE_QPS_ERROR;
    /* Past the handshake now, whatever the state was: a CONNECT_REQ with
     * this QP's peer key is answered "failed" (conntab.c). */
    mre_conntab_insert(qp->ep, qp);
    qp->ctrl = 0;
    qp->ack_now = 0;
    qp->ack_pending = 0;
    qp->ka = 0;
    qp->ack_deadline = qp->loss_deadline = qp->reo_deadline = qp->rnr_deadline =
        qp->ctrl_deadline = qp->live_deadline = MROCE_TSTAMP_INF;
    mre_qp_flush(qp);
}

int mre_qp_modify(mre_qp *qp, const struct mre_qp_attr *in, unsigned mask)
{
    if (!qp || !in || (mask & ~63u))
        return MROCE_EINVAL;
    const unsigned reset_only = MROCE_QP_MOD_CC | MROCE_QP_MOD_PATHS |
                                MROCE_QP_MOD_MTU;
    if ((mask & reset_only) && qp->state != MROCE_QPS_RESET)
        return MROCE_ESTATE;
    /* Validate everything first, so an error changes nothing. */
    if ((mask & MROCE_QP_MOD_TIMEOUT) &&
        (in->min_rto == 0 || in->max_rto < in->min_rto ||
         in->handshake_timeout == 0))
        return MROCE_EINVAL;
    if ((mask & MROCE_QP_MOD_CC) &&
        (in->cc_algo > MROCE_CC_NONE || in->init_cwnd == 0))
        return MROCE_EINVAL;
    if ((mask & MROCE_QP_MOD_PATHS) &&
        (in->npaths == 0 || in->npaths > 256 ||
         qp->attr.entropy_span < in->npaths || in->path_burst == 0 ||
         in->path_burst > 64 || in->path_reuse > 1))
        return MROCE_EINVAL;
    if ((mask & MROCE_QP_MOD_MTU) &&
        (in->mtu < 256 ||
         in->mtu > MROCE_MAX_PKT_LEN - MROCE_MAX_DATA_HDR_LEN - MROCE_CRC_LEN -
                       (qp->streams_on ? MROCE_STREAM_HDR_LEN : 0) -
                       (qp->ep->cfg.sec_suite
                            ? MROCE_SEC_OVERHEAD + MROCE_STREAM_HDR_LEN
                            : 0)))
        return MROCE_EINVAL; /* CONN-36 */
    if (mask & MROCE_QP_MOD_PATHS) {
        /* In RESET nothing is in flight, so the slots can be rebuilt. */
        struct mre_path *slots = qp->path_slots;
        if (in->npaths > qp->attr.npaths) {
            slots = mre_mem_calloc(&qp->ep->mem, in->npaths, sizeof(*slots));
            if (!slots)
                return MROCE_ENOMEM;
        }
        if (mre_pathset_init(&qp->paths, slots, in->npaths,
                             qp->attr.entropy_base, qp->attr.entropy_span,
                             qp->attr.target_qdelay, qp->ep->cfg.rand,
                             qp->ep->cfg.rand_user) < 0) {
            if (slots != qp->path_slots)
                mre_mem_free(&qp->ep->mem, slots);
            return MROCE_EINVAL;
        }
        if (slots != qp->path_slots) {
            mre_mem_free(&qp->ep->mem, qp->path_slots);
            qp->path_slots = slots;
        }
        qp->paths.burst = in->path_burst;
        qp->paths.reuse = in->path_reuse;
        qp->attr.npaths = in->npaths;
        qp->attr.path_burst = in->path_burst;
        qp->attr.path_reuse = in->path_reuse;
    }
    if ((mask & MROCE_QP_MOD_ACCESS) &&
        (in->deny_remote &
         ~(MROCE_ACCESS_REMOTE_WRITE | MROCE_ACCESS_REMOTE_READ |
           MROCE_ACCESS_REMOTE_ATOMIC)))
        return MROCE_EINVAL;
    if (mask & MROCE_QP_MOD_ACCESS)
        qp->attr.deny_remote = in->deny_remote;
    if (mask & MROCE_QP_MOD_RETRY) {
        qp->attr.retry_cnt = in->retry_cnt;
        qp->attr.rnr_retry = in->rnr_retry;
    }
    if (mask & MROCE_QP_MOD_TIMEOUT) {
        qp->attr.min_rto = in->min_rto;
        qp->attr.max_rto = in->max_rto;
        qp->attr.handshake_timeout = in->handshake_timeout;
        qp->attr.peer_timeout = in->peer_timeout;
        /* A new peer_timeout takes effect now, not at the old deadline. */
        if (qp->state == MROCE_QPS_RTS || qp->state == MROCE_QPS_CLOSING) {
            qp->live_deadline = in->peer_timeout ? qp->heard : MROCE_TSTAMP_INF;
            mre_timer_update(qp->ep, qp);
        }
    }
    if (mask & MROCE_QP_MOD_MTU) {
        qp->attr.mtu = in->mtu;
        qp->mtu = in->mtu;
        if (qp->attr.credit_mode) /* the unsolicited allowance is in MTUs */
            qp->peer_credit = 4 * ((uint32_t)in->mtu + MROCE_MAX_DATA_HDR_LEN +
                                   MROCE_CRC_LEN);
    }
    if (mask & MROCE_QP_MOD_CC) {
        qp->attr.cc_algo = in->cc_algo;
        qp->attr.init_cwnd = in->init_cwnd;
        qp->attr.target_qdelay = in->target_qdelay;
        qp->paths.target_qdelay = in->target_qdelay;
    }
    if (mask & (MROCE_QP_MOD_CC | MROCE_QP_MOD_MTU)) {
        uint64_t maxc = (uint64_t)qp->attr.window *
                        (qp->attr.mtu + MROCE_MAX_DATA_HDR_LEN);
        mre_cc_init(&qp->cc, mre_cc_ops_get(qp->attr.cc_algo), qp->attr.mtu,
                    qp->attr.init_cwnd,
                    maxc > 0x7fffffff ? 0x7fffffff : (uint32_t)maxc,
                    qp->attr.target_qdelay);
        qp->cc.line_mbps = qp->ep->cfg.rx_rate_mbps; /* CC-39 */
        qp->rto_undo = 0; /* a saved state of the old algorithm is void */
    }
    if (mask & (MROCE_QP_MOD_PATHS | MROCE_QP_MOD_CC | MROCE_QP_MOD_MTU))
        mre_cc_path_init(&qp->cc, &qp->paths, qp->attr.path_cwnd); /* CC-22 */
    return 0;
}

mroce_tstamp mre_qp_expiry(const mre_qp *qp)
{
    mroce_tstamp t = qp->ack_deadline;
    if (qp->loss_deadline < t)
        t = qp->loss_deadline;
    if (qp->reo_deadline < t)
        t = qp->reo_deadline;
    if (qp->rnr_deadline < t)
        t = qp->rnr_deadline;
    if (qp->ctrl_deadline < t)
        t = qp->ctrl_deadline;
    /* Only a connection has a peer to watch (a closed QP keeps its stale
     * keepalive deadline until the next one would have fired). */
    if (qp->live_deadline < t &&
        (qp->state == MROCE_QPS_RTS || qp->state == MROCE_QPS_CLOSING))
        t = qp->live_deadline;
    if (mre_rh_deadline(qp) < t)
        t = mre_rh_deadline(qp); /* pacing (CC-28) */
    return t;
}
