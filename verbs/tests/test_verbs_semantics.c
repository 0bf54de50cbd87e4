/*
 * test_verbs_semantics.c - verbs semantics beyond moving bytes, in one
 * process over two devices (mroce0 on 127.0.0.1, mroce1 on 127.0.0.2):
 *   - completion channels: the channel fd stays quiet until a CQ is armed
 *     (ibv_req_notify_cq) and has a completion, then poll() finds it
 *     readable and ibv_get_cq_event names the CQ; one event per arming;
 *     arming a CQ that already holds completions signals at once; an
 *     O_NONBLOCK channel with no event gives EAGAIN;
 *   - RDMA WRITE with immediate completes at the receiver as
 *     IBV_WC_RECV_RDMA_WITH_IMM with the immediate and IBV_WC_WITH_IMM,
 *     SEND with immediate as IBV_WC_RECV; src_qp is the peer QP, slid 0;
 *   - qp_access_flags: a WRITE, READ or atomic to a QP that did not grant
 *     that right fails at the requester with IBV_WC_REM_ACCESS_ERR, though
 *     the region grants it, and the rights it did grant work.
 */
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            failures++;                                                      \
        }                                                                    \
    } while (0)

#define ALL_REMOTE                                      \
    (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
     IBV_ACCESS_REMOTE_ATOMIC)
#define BUF 65536

struct dev {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch;
    struct ibv_cq *cq; /* on ch */
    struct ibv_mr *mr; /* every right */
    uint8_t *buf;
    union ibv_gid gid;
};

static void open_dev(struct ibv_device *d, struct dev *s)
{
    s->ctx = ibv_open_device(d);
    if (!s->ctx)
        exit(1);
    s->pd = ibv_alloc_pd(s->ctx);
    s->ch = ibv_create_comp_channel(s->ctx);
    s->cq = ibv_create_cq(s->ctx, 64, s, s->ch, 0);
    s->buf = calloc(1, BUF);
    s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
    CHECK(s->pd && s->ch && s->cq && s->mr);
    if (!s->cq || !s->mr)
        exit(1);
    CHECK(ibv_query_gid(s->ctx, 1, 0, &s->gid) == 0);
}

static struct ibv_qp *new_qp(struct dev *s)
{
    struct ibv_qp_init_attr ia = {
        .send_cq = s->cq,
        .recv_cq = s->cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = 8,
                .max_recv_wr = 8,
                .max_send_sge = 1,
                .max_recv_sge = 1},
    };
    struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);
    CHECK(qp);
    if (!qp)
        exit(1);
    return qp;
}

/* RESET -> INIT (granting access) -> RTR -> RTS towards peer. */
static int connect_qp(struct ibv_qp *qp, unsigned access,
                      const union ibv_gid *pgid, uint32_t pqpn)
{
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT,
                            .port_num = 1,
                            .qp_access_flags = access};
    int rc = ibv_modify_qp(qp, &a,
                           IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                               IBV_QP_ACCESS_FLAGS);
    if (rc)
        return rc;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = pqpn;
    a.max_dest_rd_atomic = 1;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = *pgid;
    a.ah_attr.port_num = 1;
    rc = ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                           IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC);
    if (rc)
        return rc;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                             IBV_QP_MAX_QP_RD_ATOMIC);
}

/* A connected pair: qa on a (every right), qb on b granting b_access. */
static void pair(struct dev *a, struct dev *b, unsigned b_access,
                 struct ibv_qp **qa, struct ibv_qp **qb)
{
    *qa = new_qp(a);
    *qb = new_qp(b);
    CHECK(connect_qp(*qa, ALL_REMOTE, &b->gid, (*qb)->qp_num) == 0);
    CHECK(connect_qp(*qb, b_access, &a->gid, (*qa)->qp_num) == 0);
}

/* Polls s's CQ until one completion or ~5 s. */
static int wait_wc(struct dev *s, struct ibv_wc *wc)
{
    time_t t0 = time(NULL);
    while (time(NULL) - t0 < 5) {
        int n = ibv_poll_cq(s->cq, 1, wc);
        if (n)
            return n;
    }
    return 0;
}

static void post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad = NULL;
    wr->send_flags |= IBV_SEND_SIGNALED;
    CHECK(ibv_post_send(qp, wr, &bad) == 0);
}

static void post_recv(struct dev *s, struct ibv_qp *qp, uint64_t id)
{
    struct ibv_sge rs = {(uintptr_t)s->buf, 4096, s->mr->lkey};
    struct ibv_recv_wr rwr = {.wr_id = id, .sg_list = &rs, .num_sge = 1};
    struct ibv_recv_wr *bad;
    CHECK(ibv_post_recv(qp, &rwr, &bad) == 0);
}

static int readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void channel(struct dev *a, struct dev *b, struct ibv_qp *qa,
                    struct ibv_qp *qb)
{
    int fd = b->ch->fd;
    struct ibv_cq *ecq = NULL;
    void *ectx = NULL;
    /* Nothing armed, nothing waiting: quiet, and EAGAIN when O_NONBLOCK. */
    CHECK(!readable(fd, 0));
    int fl = fcntl(fd, F_GETFL);
    CHECK(fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
    errno = 0;
    CHECK(ibv_get_cq_event(b->ch, &ecq, &ectx) == -1 && errno == EAGAIN);
    CHECK(fcntl(fd, F_SETFL, fl) == 0);
    /* Armed, empty: quiet until the SEND lands, then readable. */
    CHECK(ibv_req_notify_cq(b->cq, 0) == 0);
    CHECK(!readable(fd, 20));
    post_recv(b, qb, 11);
    struct ibv_sge ss = {(uintptr_t)a->buf, 100, a->mr->lkey};
    struct ibv_send_wr sw = {.wr_id = 12,
                             .sg_list = &ss,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND};
    post(qa, &sw);
    CHECK(readable(fd, 3000));
    CHECK(ibv_get_cq_event(b->ch, &ecq, &ectx) == 0 && ecq == b->cq &&
          ectx == b);
    ibv_ack_cq_events(b->cq, 1);
    /* One event per arming: not readable again until re-armed... */
    CHECK(!readable(fd, 20));
    /* ...and arming while the completion still waits signals at once. */
    CHECK(ibv_req_notify_cq(b->cq, 0) == 0);
    CHECK(readable(fd, 0));
    CHECK(ibv_get_cq_event(b->ch, &ecq, &ectx) == 0 && ecq == b->cq);
    ibv_ack_cq_events(b->cq, 1);
    struct ibv_wc wc;
    CHECK(ibv_poll_cq(b->cq, 1, &wc) == 1 && wc.wr_id == 11 &&
          wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV);
    CHECK(wait_wc(a, &wc) == 1 && wc.wr_id == 12 &&
          wc.status == IBV_WC_SUCCESS);
    /* Drained and re-armed: quiet again. */
    CHECK(ibv_req_notify_cq(b->cq, 0) == 0);
    CHECK(!readable(fd, 20));
}

static void immediates(struct dev *a, struct dev *b, struct ibv_qp *qa,
                       struct ibv_qp *qb)
{
    struct ibv_wc wc;
    /* WRITE with immediate: the data at the address, the immediate in a
     * receive completion of its own kind. */
    post_recv(b, qb, 21);
    for (int i = 0; i < 3000; i++)
        a->buf[i] = (uint8_t)(i * 3);
    struct ibv_sge ws = {(uintptr_t)a->buf, 3000, a->mr->lkey};
    struct ibv_send_wr ww = {.wr_id = 22,
                             .sg_list = &ws,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                             .imm_data = htobe32(0xfeed)};
    ww.wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
    ww.wr.rdma.rkey = b->mr->rkey;
    post(qa, &ww);
    CHECK(wait_wc(a, &wc) == 1 && wc.wr_id == 22 &&
          wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE);
    CHECK(wait_wc(b, &wc) == 1 && wc.wr_id == 21 &&
          wc.status == IBV_WC_SUCCESS);
    CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == htobe32(0xfeed));
    CHECK(wc.byte_len == 3000);
    CHECK(wc.qp_num == qb->qp_num && wc.src_qp == qa->qp_num && wc.slid == 0);
    CHECK(memcmp(b->buf + 8192, a->buf, 3000) == 0);
    /* SEND with immediate stays IBV_WC_RECV. */
    post_recv(b, qb, 23);
    struct ibv_send_wr sw = {.wr_id = 24,
                             .sg_list = &ws,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND_WITH_IMM,
                             .imm_data = htobe32(7)};
    ws.length = 64;
    post(qa, &sw);
    CHECK(wait_wc(a, &wc) == 1 && wc.wr_id == 24);
    CHECK(wait_wc(b, &wc) == 1 && wc.wr_id == 23 && wc.opcode == IBV_WC_RECV &&
          (wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == htobe32(7) &&
          wc.byte_len == 64 && wc.src_qp == qa->qp_num);
}

/* One operation of kind op (a WRITE, READ or fetch-and-add) from qa into
 * b's region; returns its completion status at a. */
static int remote_op(struct dev *a, struct dev *b, struct ibv_qp *qa,
                     enum ibv_wr_opcode op)
{
    struct ibv_sge s = {(uintptr_t)a->buf + 16384, 8, a->mr->lkey};
    struct ibv_send_wr w = {.wr_id = 30 + op,
                            .sg_list = &s,
                            .num_sge = 1,
                            .opcode = op};
    if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
        w.wr.atomic.remote_addr = (uintptr_t)b->buf + 40000;
        w.wr.atomic.rkey = b->mr->rkey;
        w.wr.atomic.compare_add = 1;
    } else {
        w.wr.rdma.remote_addr = (uintptr_t)b->buf + 40000;
        w.wr.rdma.rkey = b->mr->rkey;
    }
    post(qa, &w);
    struct ibv_wc wc;
    if (wait_wc(a, &wc) != 1 || wc.wr_id != w.wr_id)
        return -1;
    return wc.status;
}

static void access_flags(struct dev *a, struct dev *b)
{
    static const enum ibv_wr_opcode ops[3] = {IBV_WR_RDMA_WRITE,
                                              IBV_WR_RDMA_READ,
                                              IBV_WR_ATOMIC_FETCH_AND_ADD};
    static const unsigned rights[3] = {IBV_ACCESS_REMOTE_WRITE,
                                       IBV_ACCESS_REMOTE_READ,
                                       IBV_ACCESS_REMOTE_ATOMIC};
    for (int i = 0; i < 3; i++) {
        /* b grants every right but rights[i]: the others work, then
         * ops[i] fails with a remote access error (the requester's QP
         * goes to ERROR, as in verbs). */
        struct ibv_qp *qa, *qb;
        pair(a, b, ALL_REMOTE & ~rights[i], &qa, &qb);
        for (int k = 0; k < 3; k++)
            if (k != i) {
                int st = remote_op(a, b, qa, ops[k]);
                if (st != IBV_WC_SUCCESS)
                    fprintf(stderr, "granted opcode %d: status %d\n",
                            (int)ops[k], st);
                CHECK(st == IBV_WC_SUCCESS);
            }
        int st = remote_op(a, b, qa, ops[i]);
        if (st != IBV_WC_REM_ACCESS_ERR)
            fprintf(stderr, "refused opcode %d: status %d\n", (int)ops[i], st);
        CHECK(st == IBV_WC_REM_ACCESS_ERR);
        CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0);
        struct ibv_wc wc;
        while (ibv_poll_cq(b->cq, 1, &wc) > 0 || ibv_poll_cq(a->cq, 1, &wc) > 0)
            ;
    }
    /* Rights outside the remote ones (and local write) are refused. */
    struct ibv_qp *q = new_qp(a);
    struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT,
                             .port_num = 1,
                             .qp_access_flags = IBV_ACCESS_MW_BIND};
    CHECK(ibv_modify_qp(q, &at,
                        IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ==
          EINVAL);
    CHECK(ibv_destroy_qp(q) == 0);
}

int main(void)
{
    setenv("MROCE_IBV_DEVICES", "mroce0=127.0.0.1:5290,mroce1=127.0.0.2:5290",
           1);
    int n = 0;
    struct ibv_device **l = ibv_get_device_list(&n);
    CHECK(l && n == 2);
    if (!l || n != 2)
        return 1;
    struct dev a, b;
    open_dev(l[0], &a);
    open_dev(l[1], &b);
    struct ibv_qp *qa, *qb;
    pair(&a, &b, ALL_REMOTE, &qa, &qb);
    channel(&a, &b, qa, qb);
    immediates(&a, &b, qa, qb);
    CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0);
    access_flags(&a, &b);
    struct dev *d[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        CHECK(ibv_dereg_mr(d[i]->mr) == 0);
        CHECK(ibv_destroy_cq(d[i]->cq) == 0);
        CHECK(ibv_destroy_comp_channel(d[i]->ch) == 0);
        CHECK(ibv_dealloc_pd(d[i]->pd) == 0);
        CHECK(ibv_close_device(d[i]->ctx) == 0);
        free(d[i]->buf);
    }
    ibv_free_device_list(l);
    if (failures) {
        fprintf(stderr, "test_verbs_semantics: %d failures\n", failures);
        return 1;
    }
    printf("test_verbs_semantics: PASS\n");
    return 0;
}
