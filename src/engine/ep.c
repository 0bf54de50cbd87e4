/*
 * ep.c - the endpoint: one local address, the objects created on it, and the
 * three entry points a datapath drives: receive, transmit and timers.
 *
 * Receive: every datagram is decoded and checked by the codec (drops are
 * counted by reason), demultiplexed by destination QPN, checked against the
 * QP's token, and handed to the responder (data), the completer (ACK/NAK) or
 * the connection logic (handshake, close).
 * Transmit: QPs that may have something to send sit on a ready list; each
 * call serves the head QP one packet and moves it to the tail, so QPs share
 * the link round-robin at O(1) per packet.
 * Timers: the endpoint's expiry is the earliest of its QPs' deadlines.
 */
#include "engine_int.h"
#include "../wire/seeded_fault.h"

static void *default_calloc(size_t n, size_t sz, void *user)
{
    (void)n;
    (void)sz;
    (void)user;
    return NULL; /* the engine has no allocator of its own */
}
static void default_free(void *p, void *user)
{
    (void)p;
    (void)user;
}

void mre_ep_config_default(struct mre_ep_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->mem.calloc = default_calloc;
    cfg->mem.free = default_free;
    cfg->max_qps = 1024;
    cfg->rx_rate_mbps = MROCE_RH_RATE_DEFAULT; /* CC-25 */
    cfg->rate_active = MROCE_RH_ACTIVE_DEFAULT;
}

int mre_ep_new(mre_ep **pep, const struct mre_ep_config *cfg)
{
    if (!pep || !cfg || !cfg->mem.calloc || !cfg->mem.free || !cfg->rand ||
        cfg->max_qps == 0 || cfg->max_qps > 65535 ||
        cfg->nplanes > MROCE_EP_MAX_PLANES ||
        (cfg->nplanes > 1 && !cfg->plane_addr) || mre_sec_config_check(cfg) < 0)
        return MROCE_EINVAL;
    mre_ep *ep = cfg->mem.calloc(1, sizeof(*ep), cfg->mem.user);
    if (!ep)
        return MROCE_ENOMEM;
    ep->cfg = *cfg;
    ep->mem = cfg->mem;
    ep->qps = mre_mem_calloc(&ep->mem, cfg->max_qps, sizeof(*ep->qps));
    if (!ep->qps) {
        mre_mem_free(&ep->mem, ep);
        return MROCE_ENOMEM;
    }
    ep->live = mre_mem_calloc(&ep->mem, cfg->max_qps, sizeof(*ep->live));
    ep->theap = mre_mem_calloc(&ep->mem, cfg->max_qps, sizeof(*ep->theap));
    ep->theap_pos = mre_mem_calloc(&ep->mem, cfg->max_qps,
                                   sizeof(*ep->theap_pos));
    ep->rh.act = mre_mem_calloc(&ep->mem, cfg->max_qps, sizeof(*ep->rh.act));
    ep->rh.act_pos = mre_mem_calloc(&ep->mem, cfg->max_qps,
                                    sizeof(*ep->rh.act_pos));
    if (!ep->live || !ep->theap || !ep->theap_pos || !ep->rh.act ||
        !ep->rh.act_pos) {
        mre_mem_free(&ep->mem, ep->rh.act_pos);
        mre_mem_free(&ep->mem, ep->rh.act);
        mre_mem_free(&ep->mem, ep->theap_pos);
        mre_mem_free(&ep->mem, ep->live);
        mre_mem_free(&ep->mem, ep->theap);
        mre_mem_free(&ep->mem, ep->qps);
        mre_mem_free(&ep->mem, ep);
        return MROCE_ENOMEM;
    }
    ep->nqps_slots = cfg->max_qps;
    if (mre_conntab_init(ep) < 0 || mre_sec_ep_init(ep) < 0) {
        mre_sec_ep_free(ep);
        mre_conntab_free(ep);
        mre_mem_free(&ep->mem, ep->rh.act_pos);
        mre_mem_free(&ep->mem, ep->rh.act);
        mre_mem_free(&ep->mem, ep->theap_pos);
        mre_mem_free(&ep->mem, ep->live);
        mre_mem_free(&ep->mem, ep->theap);
        mre_mem_free(&ep->mem, ep->qps);
        mre_mem_free(&ep->mem, ep);
        return MROCE_ENOMEM;
    }
    *pep = ep;
    return 0;
}

void mre_ep_del(mre_ep *ep)
{
    if (!ep)
        return;
    while (ep->nqps)
        mre_qp_del(ep->live[ep->nqps - 1]);
    mre_mr_free_all(ep);
    mre_cq_free_all(ep);
    mre_mem_free(&ep->mem, ep->qps);
    mre_mem_free(&ep->mem, ep->live);
    mre_mem_free(&ep->mem, ep->theap);
    mre_mem_free(&ep->mem, ep->theap_pos);
    mre_mem_free(&ep->mem, ep->rh.act);
    mre_mem_free(&ep->mem, ep->rh.act_pos);
    mre_conntab_free(ep);
    mre_sec_ep_free(ep);
    struct mre_mem mem = ep->mem;
    mre_mem_free(&mem, ep);
}

uint64_t mre_ep_rand64(mre_ep *ep)
{
    uint64_t v = 0;
    ep->cfg.rand((uint8_t *)&v, sizeof(v), ep->cfg.rand_user);
    return v;
}

mre_qp *mre_ep_find_qp(mre_ep *ep, uint32_t qpn)
{
    uint32_t slot = qpn & 0xffff;
    if (slot >= ep->nqps_slots)
        return NULL;
    mre_qp *qp = ep->qps[slot];
    return qp && qp->qpn == qpn ? qp : NULL;
}

void mre_ep_mark_ready(mre_ep *ep, mre_qp *qp)
{
    if (qp->on_ready)
        return;
    qp->on_ready = 1;
    qp->ready_next = NULL;
    qp->ready_prev = ep->ready_tail;
    if (ep->ready_tail)
        ep->ready_tail->ready_next = qp;
    else
        ep->ready_head = qp;
    ep->ready_tail = qp;
}

static void ready_remove(mre_ep *ep, mre_qp *qp)
{
    if (!qp->on_ready)
        return;
    if (qp->ready_prev)
        qp->ready_prev->ready_next = qp->ready_next;
    else
        ep->ready_head = qp->ready_next;
    if (qp->ready_next)
        qp->ready_next->ready_prev = qp->ready_prev;
    else
        ep->ready_tail = qp->ready_prev;
    qp->on_ready = 0;
    qp->ready_next = qp->ready_prev = NULL;
}

void mre_ep_unready(mre_ep *ep, mre_qp *qp)
{
    ready_remove(ep, qp);
}

uint32_t mre_ep_credit_share(mre_ep *ep, mre_qp *qp, mroce_tstamp now)
{
    if (qp->rh.on)
        return mre_rh_share(ep, qp, now); /* a rate hint (CC-26) */
    if (!ep->cfg.rx_credit_bytes || !qp->peer_credit_mode)
        return MROCE_CREDIT_UNLIMITED;
    uint32_t active = 0;
    for (uint32_t i = 0; i < ep->nqps; i++) {
        mre_qp *q = ep->live[i];
        if (q->peer_credit_mode && q->credit_seen + 1000000 >= now)
            active++;
    }
    if (!active)
        active = 1;
    uint32_t share = ep->cfg.rx_credit_bytes / active;
    uint32_t floor = (uint32_t)qp->mtu + MROCE_MAX_DATA_HDR_LEN + MROCE_CRC_LEN;
    return share < floor ? floor : share;
}

static void count_decode_error(mre_ep *ep, int err)
{
    switch (err) {
    case MROCE_WIRE_ETRUNCATED:
        ep->cnt.drop_truncated++;
        break;
    case MROCE_WIRE_EVERSION:
        ep->cnt.drop_version++;
        break;
    case MROCE_WIRE_EOPCODE:
        ep->cnt.drop_opcode++;
        break;
    case MROCE_WIRE_EFLAGS:
        ep->cnt.drop_flags++;
        break;
    case MROCE_WIRE_ELENGTH:
        ep->cnt.drop_length++;
        break;
    case MROCE_WIRE_ECRC:
        ep->cnt.drop_crc++;
        break;
    default:
        ep->cnt.drop_field++;
        break;
    }
}

int mre_ep_recv(mre_ep *ep, const uint8_t *buf, size_t len,
                const struct mre_rx_info *info, mroce_tstamp now)
{
    struct mrw_pkt pkt;
    ep->cnt.rx_pkts++;
    if (!buf || !info) {
        ep->cnt.drop_truncated++;
        return 0;
    }
    int rc, sealed = 0;
    if (ep->cfg.sec_suite && len >= MROCE_BASE_HDR_LEN &&
        (buf[2] & (MROCE_F_SECURE >> 8))) {
        /* WIRE-44: open first; what follows sees the clear packet. */
        const uint8_t *clear = NULL;
        rc = mre_sec_open(ep, buf, len, &clear);
        if (rc <= 0) {
            if (rc < 0)
                count_decode_error(ep, rc);
            return 0;
        }
        buf = clear;
        len = (size_t)rc;
        sealed = 1;
        rc = mrw_pkt_decode_opened(&pkt, buf, len);
    } else {
        rc = mrw_pkt_decode(&pkt, buf, len);
    }
    if (rc < 0) {
        count_decode_error(ep, rc);
        return 0;
    }
    if (!sealed) {
        /* SEC-25, CONN-32: in clear only CONNECTs, authenticated on a
         * secure endpoint; SECURE ones refused on a clear endpoint. */
        if (pkt.base.opcode == MROCE_OP_CONNECT_REQ ||
            pkt.base.opcode == MROCE_OP_CONNECT_RESP) {
            if (mre_sec_conn_check(ep, &pkt, buf, len) < 0)
                return 0;
        }
    }
    if (pkt.base.opcode == MROCE_OP_CONNECT_REQ) {
        mre_qp_on_connect_req(ep, &pkt, info, now);
        return 0;
    }
    mre_qp *qp = mre_ep_find_qp(ep, pkt.base.dst_qpn);
    /* SEC-25: in clear only CONNECTs reach a secure connection (or, with
     * no QP to ask, an endpoint whose QPs are secure by default). */
    if (!sealed && pkt.base.opcode != MROCE_OP_CONNECT_RESP &&
        (qp ? qp->sec_on : ep->cfg.sec_suite != 0) &&
        !MROCE_SEEDED_FAULT(SEC_CLEAR_OK)) {
        ep->cnt.drop_mode++;
        return 0;
    }
    if (!qp) {
        ep->cnt.drop_no_qp++;
        return 0;
    }
    qp->cnt.rx_pkts++;
    qp->cnt.rx_bytes += len;
    /* Anti-injection (CONN/SEC): the token must be the one we handed out. */
    if (qp->state == MROCE_QPS_RESET || qp->state == MROCE_QPS_LISTEN ||
        (pkt.base.token != qp->local_token && !MROCE_SEEDED_FAULT(TOKEN_ANY))) {
        qp->cnt.drop_token++;
        return 0;
    }
    /* LOSS-29: the peer has the CONNECT_RESP that gave it our token. */
    if (qp->hs_wait)
        mre_loss_hs_confirmed(qp, now);
    /* REL-32: with nothing of ours outstanding, any packet shows the peer
     * is there; otherwise only an ACK that acknowledges something, an RNR
     * NAK (completer.c) or a response (responder.c) does. */
    if (qp->snd_una == qp->snd_nxt)
        qp->heard = now;
    switch (pkt.base.opcode) {
    case MROCE_OP_ACK:
        if (qp->state == MROCE_QPS_RTS || qp->state == MROCE_QPS_CLOSING) {
            qp->cnt.rx_acks++;
            mre_plane_on_ack_rx(qp, info->plane); /* PATH-23 */
            mre_comp_on_ack(qp, &pkt, now);
            /* A keepalive (REL-35), or a share request (CC-32) whose
             * answer ratehint.c may hold for its gather (CC-33). */
            if ((pkt.base.flags & MROCE_F_ACK_REQ) &&
                !((pkt.base.flags & MROCE_F_CREDIT) &&
                  mre_rh_on_request(ep, qp, now)))
                mre_live_on_probe(qp);
        } else {
            qp->cnt.drop_state++;
        }
        break;
    case MROCE_OP_NAK:
        if (qp->state == MROCE_QPS_RTS || qp->state == MROCE_QPS_CLOSING) {
            qp->cnt.rx_naks++;
            mre_plane_on_ack_rx(qp, info->plane);
            mre_comp_on_nak(qp, &pkt, now);
        } else {
            qp->cnt.drop_state++;
        }
        break;
    case MROCE_OP_CONNECT_RESP:
    case MROCE_OP_DISCONNECT:
    case MROCE_OP_DISCONNECT_ACK:
        mre_qp_on_ctrl_pkt(qp, &pkt, info, now);
        break;
    default:
        if (qp->state == MROCE_QPS_RTS || qp->state == MROCE_QPS_CLOSING) {
            qp->cnt.rx_data_pkts++;
            mre_rh_on_data(ep, qp, len, now); /* rate hint (CC-25) */
            /* A READ or atomic response placed at the requester may
             * finish work requests: the completer completes them. */
            if (mre_resp_on_data(qp, &pkt, info, now))
                mre_comp_complete_sends(qp);
        } else {
            qp->cnt.drop_state++;
        }
        break;
    }
    if (qp->ctrl || qp->ack_now || mre_req_has_data(qp))
        mre_ep_mark_ready(ep, qp);
    mre_timer_update(ep, qp);
    return 0;
}

/* One packet from one QP, in priority order: control, NAK, urgent ACK,
 * data (retransmissions, responses, new requests), then a coalesced ACK that
 * is due.  Returns length, 0 if the QP has nothing now, or an error. */
static int qp_write_pkt(mre_qp *qp, uint8_t *buf, size_t cap,
                        struct mre_tx_info *info, mroce_tstamp now)
{
    int n;
    if (qp->ctrl & (CTRL_CONN_REQ | CTRL_CONN_RESP | CTRL_DISC | CTRL_DISC_ACK))
        return mre_qp_write_ctrl(qp, buf, cap, info, now);
    if (qp->ctrl & CTRL_NAK)
        return mre_resp_write_nak(qp, buf, cap, info, now);
    if (qp->ack_now)
        return mre_resp_write_ack(qp, buf, cap, info, now);
    if (qp->state == MROCE_QPS_RTS || qp->state == MROCE_QPS_CLOSING) {
        if (mre_rh_ask(qp, now)) /* the share request before data (CC-30) */
            return mre_resp_write_ack(qp, buf, cap, info, now);
        n = mre_req_write_data(qp, buf, cap, info, now);
        if (n != 0)
            return n;
    }
    return 0;
}

/* How many window-limited QPs one idle write_pkt call can mark starved;
 * more are rare (every QP with data refused at once) and merely unmarked. */
#define EP_STARVE_TRACK 16

int mre_ep_write_pkt(mre_ep *ep, uint8_t *buf, size_t cap,
                     struct mre_tx_info *info, mroce_tstamp now)
{
    /* QPs that had nothing to send in this call, as long as they fit:
     * if no QP sends, those that cwnd held back idle the link (CC-19). */
    mre_qp *idle[EP_STARVE_TRACK];
    unsigned nidle = 0, k;
    if (!ep || !buf || !info)
        return MROCE_EINVAL;
    while (ep->ready_head) {
        mre_qp *qp = ep->ready_head;
        qp->cwnd_refused = 0;
        info->plane = 0; /* the writers set another plane (plane.c) */
        int n;
        if (qp->sec_on) {
            /* Written behind room for the SEC header, then sealed in
             * place (secure.c), so no byte is copied twice. */
            if (cap < 2 * MROCE_SEC_OVERHEAD)
                return MROCE_ENOBUF;
            n = qp_write_pkt(qp, buf + MROCE_SEC_HDR_LEN,
                             cap - MROCE_SEC_OVERHEAD, info, now);
            if (n > 0)
                n = mre_sec_tx(qp, buf, (size_t)n);
        } else {
            n = qp_write_pkt(qp, buf, cap, info, now);
        }
        if (n < 0)
            return n;
        if (n == 0 && qp->cwnd_refused && nidle < EP_STARVE_TRACK)
            idle[nidle++] = qp;
        ready_remove(ep, qp);
        if (n > 0) {
            /* Round robin: back of the line if it may have more. */
            if (qp->ctrl || qp->ack_now || mre_req_has_data(qp))
                mre_ep_mark_ready(ep, qp);
            info->qp_num = qp->qpn;
            info->ecn = MROCE_ECN_ECT0;
            mre_plane_tx(qp, info); /* PATH-20 */
            qp->cnt.tx_pkts++;
            qp->cnt.tx_bytes += (uint64_t)n;
            ep->cnt.tx_pkts++;
            mre_timer_update(ep, qp); /* a send may arm the loss timer */
            return n;
        }
    }
    for (k = 0; k < nidle; k++)
        idle[k]->starved = 1;
    return 0;
}

int mre_ep_write_pkt_zc(mre_ep *ep, uint8_t *buf, size_t cap,
                        struct mre_tx_info *info, struct mre_tx_zc *zc,
                        mroce_tstamp now)
{
    if (!ep || !zc)
        return MROCE_EINVAL;
    zc->payload = NULL;
    zc->payload_len = 0;
    ep->tx_zc = zc; /* not for a secure QP: sealing copies (requester.c) */
    int n = mre_ep_write_pkt(ep, buf, cap, info, now);
    ep->tx_zc = NULL;
    return n;
}

int mre_ep_want_write(const mre_ep *ep)
{
    return ep && ep->ready_head != NULL;
}

void mre_ep_get_counters(const mre_ep *ep, struct mroce_ep_counters *c)
{
    if (ep && c)
        *c = ep->cnt;
}
