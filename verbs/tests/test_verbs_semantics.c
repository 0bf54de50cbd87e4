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
 *     the region grants it, and the rights it did grant work;
 *   - rnr_retry: with 7 a SEND to a QP without a posted receive is
 *     retried forever (no completion for 300 ms of RNR NAKs) and completes
 *     once the receive is posted; with 1 it fails with
 *     IBV_WC_RNR_RETRY_EXC_ERR.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>

#include "verbs_test.h"

static int readable(int fd, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN);
}

static void channel(struct vt_dev *a, struct vt_dev *b, struct ibv_qp *qa,
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
    vt_post_recv(b, qb, 11);
    struct ibv_sge ss = {(uintptr_t)a->buf, 100, a->mr->lkey};
    struct ibv_send_wr sw = {.wr_id = 12,
                             .sg_list = &ss,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND};
    vt_post(qa, &sw);
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
    CHECK(vt_wait_wc(a, &wc) == 1 && wc.wr_id == 12 &&
          wc.status == IBV_WC_SUCCESS);
    /* Drained and re-armed: quiet again. */
    CHECK(ibv_req_notify_cq(b->cq, 0) == 0);
    CHECK(!readable(fd, 20));
}

static void immediates(struct vt_dev *a, struct vt_dev *b, struct ibv_qp *qa,
                       struct ibv_qp *qb)
{
    struct ibv_wc wc;
    /* WRITE with immediate: the data at the address, the immediate in a
     * receive completion of its own kind. */
    vt_post_recv(b, qb, 21);
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
    vt_post(qa, &ww);
    CHECK(vt_wait_wc(a, &wc) == 1 && wc.wr_id == 22 &&
          wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_WRITE);
    CHECK(vt_wait_wc(b, &wc) == 1 && wc.wr_id == 21 &&
          wc.status == IBV_WC_SUCCESS);
    CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
    CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == htobe32(0xfeed));
    CHECK(wc.byte_len == 3000);
    CHECK(wc.qp_num == qb->qp_num && wc.src_qp == qa->qp_num && wc.slid == 0);
    CHECK(memcmp(b->buf + 8192, a->buf, 3000) == 0);
    /* SEND with immediate stays IBV_WC_RECV. */
    vt_post_recv(b, qb, 23);
    struct ibv_send_wr sw = {.wr_id = 24,
                             .sg_list = &ws,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND_WITH_IMM,
                             .imm_data = htobe32(7)};
    ws.length = 64;
    vt_post(qa, &sw);
    CHECK(vt_wait_wc(a, &wc) == 1 && wc.wr_id == 24);
    CHECK(vt_wait_wc(b, &wc) == 1 && wc.wr_id == 23 &&
          wc.opcode == IBV_WC_RECV && (wc.wc_flags & IBV_WC_WITH_IMM) &&
          wc.imm_data == htobe32(7) && wc.byte_len == 64 &&
          wc.src_qp == qa->qp_num);
}

/* One operation of kind op (a WRITE, READ or fetch-and-add) from qa into
 * b's region; returns its completion status at a. */
static int remote_op(struct vt_dev *a, struct vt_dev *b, struct ibv_qp *qa,
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
    vt_post(qa, &w);
    struct ibv_wc wc;
    if (vt_wait_wc(a, &wc) != 1 || wc.wr_id != w.wr_id)
        return -1;
    return wc.status;
}

static void access_flags(struct vt_dev *a, struct vt_dev *b)
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
        vt_pair(a, b, ALL_REMOTE & ~rights[i], &qa, &qb);
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
    struct ibv_qp *q = vt_new_qp(a, 8, NULL);
    struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT,
                             .port_num = 1,
                             .qp_access_flags = IBV_ACCESS_MW_BIND};
    CHECK(ibv_modify_qp(q, &at,
                        IBV_QP_STATE | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) ==
          EINVAL);
    CHECK(ibv_destroy_qp(q) == 0);
}

static void rnr(struct vt_dev *a, struct vt_dev *b)
{
    for (int forever = 1; forever >= 0; forever--) {
        struct ibv_qp *qa = vt_new_qp(a, 8, NULL), *qb = vt_new_qp(b, 8, NULL);
        CHECK(vt_connect_rnr(qa, ALL_REMOTE, &b->gid, qb->qp_num,
                             forever ? 7 : 1) == 0);
        CHECK(vt_connect(qb, ALL_REMOTE, &a->gid, qa->qp_num) == 0);
        struct ibv_sge ss = {(uintptr_t)a->buf, 64, a->mr->lkey};
        struct ibv_send_wr sw = {.wr_id = 41,
                                 .sg_list = &ss,
                                 .num_sge = 1,
                                 .opcode = IBV_WR_SEND};
        vt_post(qa, &sw);
        struct ibv_wc wc;
        if (forever) {
            double t0 = vt_now();
            int n = 0;
            while (!n && vt_now() - t0 < 0.3)
                n = ibv_poll_cq(a->cq, 1, &wc);
            CHECK(n == 0); /* still retrying */
            vt_post_recv(b, qb, 42);
            CHECK(vt_wait_wc(a, &wc) == 1 && wc.wr_id == 41 &&
                  wc.status == IBV_WC_SUCCESS);
            CHECK(vt_wait_wc(b, &wc) == 1 && wc.wr_id == 42 &&
                  wc.status == IBV_WC_SUCCESS && wc.byte_len == 64);
        } else {
            CHECK(vt_wait_wc(a, &wc) == 1 && wc.wr_id == 41 &&
                  wc.status == IBV_WC_RNR_RETRY_EXC_ERR);
        }
        CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0);
    }
}

int main(void)
{
    struct ibv_device **l = vt_devices(5290);
    struct vt_dev a, b;
    vt_open(l[0], &a, 1);
    vt_open(l[1], &b, 1);
    struct ibv_qp *qa, *qb;
    vt_pair(&a, &b, ALL_REMOTE, &qa, &qb);
    channel(&a, &b, qa, qb);
    immediates(&a, &b, qa, qb);
    CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0);
    access_flags(&a, &b);
    rnr(&a, &b);
    vt_close(&a);
    vt_close(&b);
    ibv_free_device_list(l);
    if (failures) {
        fprintf(stderr, "test_verbs_semantics: %d failures\n", failures);
        return 1;
    }
    printf("test_verbs_semantics: PASS\n");
    return 0;
}
