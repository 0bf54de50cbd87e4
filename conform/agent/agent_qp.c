/*
 * agent_qp.c - the QP commands of the control protocol: QP_CREATE (with the
 * attributes of AGENT-9, ENOTSUP for values libmroce cannot honour
 * exactly), connection set-up that never blocks (QP_LISTEN, QP_CONNECT,
 * QP_CLOSE start the work; the progress thread finishes it), POST_RECV,
 * POST_SEND, POLL (the only command that waits, AGENT-4) and COUNTERS.
 * QP_CREATE pd= and MR_REG pd= name a domain of PD_ALLOC (agent_cmds.c);
 * absent or 0, the implicit one.
 *
 * Each QP has its own send and receive CQ (AGENT-5).  The agent remembers
 * the opcodes of recent send posts so a completion can be reported with
 * the WR's own op name (SEND_IMM and WRITE_IMM complete as SEND and WRITE
 * in the library's terms).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mroce/wire.h>

#include "agent.h"

#define U32MAX 0xffffffffull

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int agent_cmd_qp_create(struct agent *a, struct agent_cmd *c,
                        struct agent_reply *r)
{
    struct mroce_qp_init_attr ia;
    mroce_qp_init_attr_default(&ia);
    struct mre_qp_attr *e = &ia.eng;
    uint64_t mtu, npaths, window, rd, rto, retry, rnr, hs_ms, mad_us, pt_ms,
        nst;
    uint64_t rate, burst, reuse, tq_us, rwr;
    if (agent_arg_u64(c, "mtu", U32MAX, e->mtu, &mtu) < 0 ||
        agent_arg_u64(c, "npaths", U32MAX, e->npaths, &npaths) < 0 ||
        agent_arg_u64(c, "window", U32MAX, e->window, &window) < 0 ||
        agent_arg_u64(c, "max_rd_atomic", U32MAX, e->max_rd_atomic, &rd) < 0 ||
        agent_arg_u64(c, "min_rto_us", U32MAX, e->min_rto / 1000, &rto) < 0 ||
        agent_arg_u64(c, "retry", U32MAX, e->retry_cnt, &retry) < 0 ||
        agent_arg_u64(c, "rnr_retry", U32MAX, e->rnr_retry, &rnr) < 0 ||
        agent_arg_u64(c, "handshake_timeout_ms", U32MAX,
                      e->handshake_timeout / 1000000, &hs_ms) < 0 ||
        agent_arg_u64(c, "max_ack_delay_us", U32MAX, e->max_ack_delay / 1000,
                      &mad_us) < 0 ||
        agent_arg_u64(c, "peer_timeout_ms", U32MAX, e->peer_timeout / 1000000,
                      &pt_ms) < 0 ||
        agent_arg_u64(c, "max_streams", U32MAX, 1, &nst) < 0 ||
        agent_arg_u64(c, "rate_hint", 3, e->rate_hint, &rate) < 0 ||
        agent_arg_u64(c, "path_burst", U32MAX, e->path_burst, &burst) < 0 ||
        agent_arg_u64(c, "path_reuse", 1, e->path_reuse, &reuse) < 0 ||
        agent_arg_u64(c, "target_qdelay_us", U32MAX, e->target_qdelay / 1000,
                      &tq_us) < 0 ||
        agent_arg_u64(c, "max_recv_wr", U32MAX, e->max_recv_wr, &rwr) < 0) {
        agent_reply_err(r, "EINVAL", "attributes are numbers");
        return -1;
    }
    const char *cc = agent_arg(c, "cc");
    if (cc && strcmp(cc, "delay") && strcmp(cc, "fixed") &&
        strcmp(cc, "credit")) {
        agent_reply_err(r, "EINVAL", "cc=delay|fixed|credit");
        return -1;
    }
    /* AGENT-9: what libmroce cannot do exactly is ENOTSUP, so the suite
     * skips rather than tests something else.  Windows are powers of two
     * (64..32768), paths at most the device's source ports. */
    struct mroce_device_attr da;
    mroce_device_query(a->dev, &da);
    const char *bad = NULL;
    if (mtu < 256 ||
        mtu > MROCE_MAX_PKT_LEN - MROCE_MAX_DATA_HDR_LEN - MROCE_CRC_LEN)
        bad = "mtu";
    else if (npaths == 0 || npaths > 256 || npaths > da.src_port_count)
        bad = "npaths";
    else if (window < 64 || window > 32768 || (window & (window - 1)))
        bad = "window";
    else if (rd == 0 || rd > 256)
        bad = "max_rd_atomic";
    else if (rto == 0 || rto > 10000000)
        bad = "min_rto_us";
    else if (retry > 255)
        bad = "retry";
    else if (rnr > 255)
        bad = "rnr_retry";
    else if (hs_ms == 0 || hs_ms > 3600000)
        bad = "handshake_timeout_ms";
    else if (mad_us > 1000000)
        bad = "max_ack_delay_us";
    else if (pt_ms > 3600000)
        bad = "peer_timeout_ms";
    else if (nst == 0 || nst > MRE_MAX_STREAMS) /* AGENT-20 */
        bad = "max_streams";
    else if (nst > 1 && mtu > MROCE_MAX_PKT_LEN -
                                  MROCE_MAX_STREAM_DATA_HDR_LEN - MROCE_CRC_LEN)
        bad = "mtu";
    else if (burst == 0 || burst > 64)
        bad = "path_burst";
    else if (agent_arg(c, "target_qdelay_us") &&
             (tq_us == 0 || tq_us > 1000000))
        bad = "target_qdelay_us";
    else if (rwr == 0 || rwr > 65536 || (rwr & (rwr - 1))) /* AGENT-27 */
        bad = "max_recv_wr"; /* the engine rounds up to a power of two */
    if (bad) {
        agent_reply_err(r, "ENOTSUP", "%s out of the range libmroce supports",
                        bad);
        return -1;
    }
    e->mtu = (uint16_t)mtu;
    e->npaths = (uint16_t)npaths;
    e->window = (uint32_t)window;
    e->max_rd_atomic = (uint32_t)rd;
    e->min_rto = rto * 1000;
    if (e->max_rto < e->min_rto)
        e->max_rto = e->min_rto;
    e->retry_cnt = (uint8_t)retry;
    e->rnr_retry = (uint8_t)rnr;
    /* Only when given: the defaults stay exact (the engine's are in ns). */
    if (agent_arg(c, "handshake_timeout_ms"))
        e->handshake_timeout = hs_ms * 1000000;
    if (agent_arg(c, "max_ack_delay_us"))
        e->max_ack_delay = mad_us * 1000;
    if (agent_arg(c, "peer_timeout_ms")) /* AGENT-15 */
        e->peer_timeout = pt_ms * 1000000;
    e->max_streams = (uint16_t)nst;
    e->rate_hint = (uint8_t)rate;   /* AGENT-23 */
    e->path_burst = (uint8_t)burst; /* AGENT-24 */
    e->path_reuse = (uint8_t)reuse;
    if (agent_arg(c, "target_qdelay_us")) /* AGENT-24 */
        e->target_qdelay = tq_us * 1000;
    e->max_recv_wr = (uint32_t)rwr; /* AGENT-27 */
    mroce_pd *pd = agent_find_pd(a, c, r);
    if (!pd)
        return -1;
    if (cc && strcmp(cc, "fixed") == 0)
        e->cc_algo = MROCE_CC_NONE;
    else if (cc)
        e->cc_algo = MROCE_CC_DELAY_ECN;
    if (cc && strcmp(cc, "credit") == 0)
        e->credit_mode = 1;

    int slot = -1;
    for (int i = 0; i < AGENT_MAX_QP && slot < 0; i++)
        if (!a->qps[i])
            slot = i;
    if (slot < 0) {
        agent_reply_err(r, "ENOMEM", "too many QPs");
        return -1;
    }
    struct agent_qp *q = calloc(1, sizeof(*q));
    if (!q) {
        agent_reply_err(r, "ENOMEM", "allocation failed");
        return -1;
    }
    a->qps[slot] = q;
    int rc = mroce_create_cq(a->dev, 1024, &q->scq);
    if (rc == 0)
        rc = mroce_create_cq(a->dev, 1024, &q->rcq);
    if (rc == 0) {
        ia.send_cq = q->scq;
        ia.recv_cq = q->rcq;
        rc = mroce_create_qp(pd, &ia, &q->qp);
    }
    if (rc < 0) {
        agent_qp_free(a, slot);
        return agent_lib_err(r, "create_qp", rc);
    }
    q->id = a->next_qp_id++;
    agent_reply_add(r, "qp=%d qpn=%u", q->id, mroce_qp_num(q->qp));
    return 0;
}

int agent_cmd_qp_listen(struct agent *a, struct agent_cmd *c,
                        struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    int rc = mroce_listen(q->qp);
    return rc < 0 ? agent_lib_err(r, "listen", rc) : 0;
}

int agent_cmd_qp_connect(struct agent *a, struct agent_cmd *c,
                         struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    const char *host = agent_arg(c, "host");
    uint64_t port, rqpn;
    uint8_t tmp[16];
    /* Literal addresses only: the agent never resolves names. */
    if (!host ||
        (inet_pton(AF_INET, host, tmp) != 1 &&
         inet_pton(AF_INET6, host, tmp) != 1) ||
        agent_arg_u64(c, "port", 65535, 0, &port) != 0 || port == 0 ||
        agent_arg_u64(c, "rqpn", U32MAX, 0, &rqpn) < 0) {
        agent_reply_err(r, "EINVAL",
                        "host=<ip literal> port=1..65535 "
                        "[rqpn=N]");
        return -1;
    }
    int rc = mroce_connect_start(q->qp, host, (uint16_t)port, (uint32_t)rqpn);
    return rc < 0 ? agent_lib_err(r, "connect", rc) : 0;
}

int agent_cmd_qp_state(struct agent *a, struct agent_cmd *c,
                       struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    agent_reply_add(r, "state=%s",
                    mroce_qp_state_str(mroce_qp_get_state(q->qp)));
    return 0;
}

int agent_cmd_qp_error(struct agent *a, struct agent_cmd *c,
                       struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    int rc = mroce_modify_qp_error(q->qp);
    return rc < 0 ? agent_lib_err(r, "modify_qp_error", rc) : 0;
}

int agent_cmd_qp_close(struct agent *a, struct agent_cmd *c,
                       struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    /* Timeout 0: start the orderly close and return; the progress thread
     * completes it (QP_STATE shows CLOSING, then CLOSED). */
    int rc = mroce_disconnect(q->qp, 0);
    if (rc == MROCE_ETIMEDOUT)
        rc = 0;
    return rc < 0 ? agent_lib_err(r, "disconnect", rc) : 0;
}

int agent_cmd_qp_destroy(struct agent *a, struct agent_cmd *c,
                         struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    for (int i = 0; i < AGENT_MAX_QP; i++)
        if (a->qps[i] == q)
            agent_qp_free(a, i);
    return 0;
}

/* The optional local range [mr off len] as one scatter-gather entry.
 * Returns 1 with *sge filled, 0 if no mr= was given, -1 after an ERR.  The
 * address is computed, never dereferenced here: the library's own local
 * checks judge it (EACCESS), which is part of what is tested. */
static int local_sge(struct agent *a, struct agent_cmd *c,
                     struct mroce_sge *sge, struct agent_reply *r)
{
    if (!agent_arg(c, "mr")) {
        if (agent_arg(c, "off") || agent_arg(c, "len")) {
            agent_reply_err(r, "EINVAL", "off/len need mr=<id>");
            return -1;
        }
        return 0;
    }
    struct agent_mr *m = agent_find_mr(a, c, r);
    if (!m)
        return -1;
    uint64_t off, len;
    if (agent_arg_u64(c, "off", U32MAX, 0, &off) < 0 ||
        agent_arg_u64(c, "len", U32MAX, m->len > off ? m->len - off : 0, &len) <
            0 ||
        len > U32MAX) {
        agent_reply_err(r, "EINVAL", "off=N len=N (32-bit)");
        return -1;
    }
    sge->addr = (uint64_t)(uintptr_t)m->buf + off;
    sge->length = (uint32_t)len;
    sge->lkey = mroce_mr_lkey(m->mr);
    return 1;
}

int agent_cmd_post_recv(struct agent *a, struct agent_cmd *c,
                        struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    struct mroce_sge sge;
    struct mroce_recv_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    uint64_t st;
    if (agent_arg_u64(c, "wrid", UINT64_MAX, 0, &wr.wr_id) != 0 ||
        agent_arg_u64(c, "stream", 0xffff, 0, &st) < 0) {
        agent_reply_err(r, "EINVAL", "wrid=N required, stream=0..65535");
        return -1;
    }
    wr.stream = (uint16_t)st; /* AGENT-21 */
    int n = local_sge(a, c, &sge, r);
    if (n < 0)
        return -1;
    wr.sg_list = n ? &sge : NULL;
    wr.num_sge = n;
    int rc = mroce_post_recv(q->qp, &wr, &bad);
    return rc < 0 ? agent_lib_err(r, "post_recv", rc) : 0;
}

static int flag_arg(const struct agent_cmd *c, const char *key, int dflt,
                    int *v)
{
    uint64_t x;
    if (agent_arg_u64(c, key, 1, (uint64_t)dflt, &x) < 0)
        return -1;
    *v = (int)x;
    return 0;
}

int agent_cmd_post_send(struct agent *a, struct agent_cmd *c,
                        struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    struct mroce_sge sge;
    struct mroce_send_wr wr, *bad = NULL;
    memset(&wr, 0, sizeof(wr));
    const char *ops = agent_arg(c, "op");
    int op = ops ? agent_parse_op(ops) : -1;
    if (agent_arg_u64(c, "wrid", UINT64_MAX, 0, &wr.wr_id) != 0 || op < 0) {
        agent_reply_err(r, "EINVAL",
                        "wrid=N op=SEND|SEND_IMM|WRITE|"
                        "WRITE_IMM|READ|FETCH_ADD|CMP_SWAP required");
        return -1;
    }
    wr.opcode = (enum mroce_wr_opcode)op;
    int remote = op != MROCE_WR_SEND && op != MROCE_WR_SEND_WITH_IMM;
    uint64_t imm, rkey, cmp, st;
    int inl, fence, sig, sol;
    if (agent_arg_u64(c, "raddr", UINT64_MAX, 0, &wr.remote_addr) < 0 ||
        agent_arg_u64(c, "rkey", U32MAX, 0, &rkey) < 0 ||
        agent_arg_u64(c, "imm", U32MAX, 0, &imm) < 0 ||
        agent_arg_u64(c, "add", UINT64_MAX, 0, &wr.compare_add) < 0 ||
        agent_arg_u64(c, "swap", UINT64_MAX, 0, &wr.swap) < 0 ||
        agent_arg_u64(c, "cmp", UINT64_MAX, 0, &cmp) < 0 ||
        flag_arg(c, "inline", 0, &inl) < 0 ||
        flag_arg(c, "fence", 0, &fence) < 0 ||
        flag_arg(c, "signaled", 1, &sig) < 0 ||
        flag_arg(c, "solicited", 0, &sol) < 0 ||
        agent_arg_u64(c, "stream", 0xffff, 0, &st) < 0) {
        agent_reply_err(r, "EINVAL", "bad number or flag (flags are 0 or 1)");
        return -1;
    }
    if (remote && (!agent_arg(c, "raddr") || !agent_arg(c, "rkey"))) {
        agent_reply_err(r, "EINVAL", "%s needs raddr=N rkey=N", ops);
        return -1;
    }
    if (sol && op != MROCE_WR_SEND && op != MROCE_WR_SEND_WITH_IMM &&
        op != MROCE_WR_WRITE_WITH_IMM) {
        agent_reply_err(r, "EINVAL",
                        "solicited=1 is for SEND, SEND_IMM and "
                        "WRITE_IMM");
        return -1;
    }
    if (op == MROCE_WR_FETCH_ADD && !agent_arg(c, "add")) {
        agent_reply_err(r, "EINVAL", "FETCH_ADD needs add=N");
        return -1;
    }
    if (op == MROCE_WR_CMP_SWAP) {
        if (!agent_arg(c, "cmp") || !agent_arg(c, "swap") ||
            agent_arg(c, "add")) {
            agent_reply_err(r, "EINVAL", "CMP_SWAP needs cmp=N swap=N");
            return -1;
        }
        wr.compare_add = cmp;
    }
    wr.rkey = (uint32_t)rkey;
    wr.imm_data = (uint32_t)imm;
    wr.stream = (uint16_t)st; /* AGENT-21 */
    wr.send_flags = (sig ? MROCE_SEND_SIGNALED : 0u) |
                    (inl ? MROCE_SEND_INLINE : 0u) |
                    (fence ? MROCE_SEND_FENCE : 0u) |
                    (sol ? MROCE_SEND_SOLICITED : 0u);
    int n = local_sge(a, c, &sge, r);
    if (n < 0)
        return -1;
    wr.sg_list = n ? &sge : NULL;
    wr.num_sge = n;
    int rc = mroce_post_send(q->qp, &wr, &bad);
    if (rc < 0)
        return agent_lib_err(r, "post_send", rc);
    struct agent_op *o = &q->ops[q->op_next++ % AGENT_OPRING];
    o->wrid = wr.wr_id;
    o->op = (uint8_t)op;
    o->used = 1;
    return 0;
}

/* The op name of a send completion: the posted WR's own (newest post with
 * that wrid whose completion opcode matches), else the library's. */
static const char *send_op_name(const struct agent_qp *q,
                                const struct mroce_wc *wc)
{
    static const int wc_of[] = {
        [MROCE_WR_SEND] = MROCE_WC_SEND,
        [MROCE_WR_SEND_WITH_IMM] = MROCE_WC_SEND,
        [MROCE_WR_WRITE] = MROCE_WC_WRITE,
        [MROCE_WR_WRITE_WITH_IMM] = MROCE_WC_WRITE,
        [MROCE_WR_READ] = MROCE_WC_READ,
        [MROCE_WR_FETCH_ADD] = MROCE_WC_FETCH_ADD,
        [MROCE_WR_CMP_SWAP] = MROCE_WC_CMP_SWAP,
    };
    for (uint32_t k = 1; k <= AGENT_OPRING; k++) {
        const struct agent_op *o = &q->ops[(q->op_next - k) % AGENT_OPRING];
        if (!o->used)
            break;
        if (o->wrid == wc->wr_id && o->op < sizeof(wc_of) / sizeof(wc_of[0]) &&
            (int)wc_of[o->op] == (int)wc->opcode)
            return agent_op_name(o->op);
    }
    return agent_wc_op_name((int)wc->opcode);
}

int agent_cmd_poll(struct agent *a, struct agent_cmd *c, struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    const char *which = agent_arg(c, "cq");
    uint64_t wait;
    if (!which || (strcmp(which, "send") && strcmp(which, "recv")) ||
        agent_arg_u64(c, "wait_ms", UINT64_MAX, 0, &wait) < 0) {
        agent_reply_err(r, "EINVAL", "cq=send|recv [wait_ms=N]");
        return -1;
    }
    if (wait > AGENT_MAX_WAIT_MS)
        wait = AGENT_MAX_WAIT_MS;
    int is_send = strcmp(which, "send") == 0;
    mroce_cq *cq = is_send ? q->scq : q->rcq;
    struct mroce_wc wc;
    uint64_t deadline = now_ms() + wait;
    int n;
    /* The progress thread fills the CQ; wait on its event in short slices
     * (robust against an event consumed by an earlier wait). */
    while ((n = mroce_poll_cq(cq, 1, &wc)) == 0) {
        uint64_t t = now_ms();
        if (t >= deadline)
            break;
        uint64_t slice = deadline - t < 20 ? deadline - t : 20;
        int w = mroce_cq_wait(cq, (int)slice);
        if (w < 0)
            return agent_lib_err(r, "cq_wait", w);
    }
    if (n < 0)
        return agent_lib_err(r, "poll_cq", n);
    if (n == 0) {
        agent_reply_add(r, "n=0");
        return 0;
    }
    agent_reply_add(r, "n=1 wrid=%llu status=%s op=%s len=%u",
                    (unsigned long long)wc.wr_id, agent_status_name(wc.status),
                    is_send ? send_op_name(q, &wc)
                            : agent_wc_op_name((int)wc.opcode),
                    wc.byte_len);
    if (wc.wc_flags & MROCE_WC_WITH_IMM)
        agent_reply_add(r, "imm=%u", wc.imm_data);
    if (wc.stream) /* AGENT-22: absent for stream 0, as before streams */
        agent_reply_add(r, "stream=%u", wc.stream);
    return 0;
}

int agent_cmd_counters(struct agent *a, struct agent_cmd *c,
                       struct agent_reply *r)
{
    struct agent_qp *q = agent_find_qp(a, c, r);
    if (!q)
        return -1;
    struct mroce_qp_counters qc;
    struct mroce_ep_counters ec;
    int rc = mroce_qp_get_counters(q->qp, &qc);
    if (rc < 0)
        return agent_lib_err(r, "counters", rc);
    mroce_device_get_counters(a->dev, &ec);
#define AGENT_X_QP(name) \
    agent_reply_add(r, #name "=%llu", (unsigned long long)qc.name);
    MROCE_QP_COUNTERS(AGENT_X_QP)
#undef AGENT_X_QP
    /* AGENT-10: the specification's names.  rx_dup_pkts is AGENT-10's
     * spelling of rx_dups. */
    agent_reply_add(r, "rx_dup_pkts=%llu", (unsigned long long)qc.rx_dups);
    /* The endpoint's drops (CRC, version, ...) happen before a QP is
     * known: reported here too under their own names; the endpoint's
     * packet totals, which share the QP's names, as ep_rx_pkts and
     * ep_tx_pkts. */
#define AGENT_X_EP(name)                                                 \
    agent_reply_add(r, "%s%s=%llu",                                      \
                    strcmp(#name, "rx_pkts") && strcmp(#name, "tx_pkts") \
                        ? ""                                             \
                        : "ep_",                                         \
                    #name, (unsigned long long)ec.name);
    MROCE_EP_COUNTERS(AGENT_X_EP)
#undef AGENT_X_EP
    return 0;
}
