/*
 * test_verbs_events.c - asynchronous events and solicited-only
 * notification, in one process over two devices (verbs_test.h):
 *   - async_fd: quiet (EAGAIN when O_NONBLOCK) until an event is queued,
 *     then readable under poll(); IBV_EVENT_COMM_EST once per QP when the
 *     handshake has connected it, naming the QP; IBV_EVENT_QP_FATAL when a
 *     QP goes to ERROR by itself (a WRITE the peer QP refuses), none when
 *     the application moves a QP to ERR; ibv_ack_async_event counts;
 *   - ibv_req_notify_cq(cq, 1): an unsolicited SEND does not make the
 *     channel readable, a SEND with IBV_SEND_SOLICITED does (and both
 *     completions are then in the CQ, in order), and so does an error
 *     completion (a receive flushed by moving the QP to ERR);
 *   - with --linger (MROCE_IBV_PROGRESS=app: only the program's calls move
 *     packets), the linger of ibv_destroy_qp (REL-41): a WRITE that reaches
 *     a QP while ibv_destroy_qp runs is acknowledged (its sender completes
 *     with success), and the call returns once the peer has been quiet for
 *     10 ms or more, well within the 1 s bound.
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

/* The next asynchronous event of s within ms (0), else -1. */
static int next_event(struct vt_dev *s, int ms, struct ibv_async_event *e)
{
    double t0 = vt_now();
    do {
        if (ibv_get_async_event(s->ctx, e) == 0)
            return 0;
        if (errno != EAGAIN) {
            CHECK(errno == EAGAIN);
            return -1;
        }
        (void)readable(s->ctx->async_fd, 10);
    } while (vt_now() - t0 < ms / 1000.0);
    return -1;
}

static void nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    CHECK(fl >= 0 && fcntl(fd, F_SETFL, fl | O_NONBLOCK) == 0);
}

static void async_events(struct vt_dev *a, struct vt_dev *b)
{
    nonblocking(a->ctx->async_fd);
    nonblocking(b->ctx->async_fd);
    struct ibv_async_event e;
    CHECK(ibv_get_async_event(a->ctx, &e) == -1 && errno == EAGAIN);
    CHECK(!readable(a->ctx->async_fd, 0));
    /* b grants READ only: a's WRITE is refused and a's QP fails. */
    struct ibv_qp *qa, *qb;
    vt_pair(a, b, IBV_ACCESS_REMOTE_READ, &qa, &qb);
    struct ibv_sge sg = {(uintptr_t)a->buf, 64, a->mr->lkey};
    struct ibv_send_wr rd = {.wr_id = 1,
                             .sg_list = &sg,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_READ,
                             .wr.rdma = {(uintptr_t)b->buf, b->mr->rkey}};
    vt_post(qa, &rd);
    struct ibv_wc wc;
    CHECK(vt_wait_wc(a, &wc) == 1 && wc.status == IBV_WC_SUCCESS);
    /* Connected: each side's QP has its COMM_EST, once. */
    CHECK(readable(a->ctx->async_fd, 2000));
    CHECK(next_event(a, 2000, &e) == 0 && e.event_type == IBV_EVENT_COMM_EST &&
          e.element.qp == qa);
    ibv_ack_async_event(&e);
    CHECK(qa->events_completed == 1);
    CHECK(next_event(b, 2000, &e) == 0 && e.event_type == IBV_EVENT_COMM_EST &&
          e.element.qp == qb);
    ibv_ack_async_event(&e);
    CHECK(next_event(a, 200, &e) == -1);
    struct ibv_send_wr wr = rd;
    wr.wr_id = 2;
    wr.opcode = IBV_WR_RDMA_WRITE;
    vt_post(qa, &wr);
    CHECK(vt_wait_wc(a, &wc) == 1 && wc.status == IBV_WC_REM_ACCESS_ERR);
    CHECK(next_event(a, 2000, &e) == 0 && e.event_type == IBV_EVENT_QP_FATAL &&
          e.element.qp == qa);
    if (e.event_type != IBV_EVENT_QP_FATAL)
        fprintf(stderr, "event %s\n", ibv_event_type_str(e.event_type));
    ibv_ack_async_event(&e);
    CHECK(next_event(a, 200, &e) == -1);
    /* Moved to ERR by the application: no event. */
    struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
    CHECK(ibv_modify_qp(qb, &at, IBV_QP_STATE) == 0);
    CHECK(next_event(b, 300, &e) == -1);
    CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0);
    while (ibv_poll_cq(a->cq, 1, &wc) > 0 || ibv_poll_cq(b->cq, 1, &wc) > 0)
        ;
}

/* A SEND from qa to qb, solicited or not. */
static void send_one(struct ibv_qp *qa, struct vt_dev *a, uint64_t id,
                     int solicited)
{
    struct ibv_sge sg = {(uintptr_t)a->buf, 32, a->mr->lkey};
    struct ibv_send_wr w = {.wr_id = id,
                            .sg_list = &sg,
                            .num_sge = 1,
                            .opcode = IBV_WR_SEND,
                            .send_flags = solicited ? IBV_SEND_SOLICITED : 0};
    vt_post(qa, &w);
    struct ibv_wc wc;
    CHECK(vt_wait_wc(a, &wc) == 1 && wc.wr_id == id &&
          wc.status == IBV_WC_SUCCESS);
}

static void solicited(struct vt_dev *a, struct vt_dev *b)
{
    struct ibv_qp *qa, *qb;
    vt_pair(a, b, ALL_REMOTE, &qa, &qb);
    for (uint64_t i = 0; i < 3; i++)
        vt_post_recv(b, qb, 100 + i);
    CHECK(ibv_req_notify_cq(b->cq, 1) == 0);
    /* Delivered (a's SEND completed: b has ACKed it), yet no event. */
    send_one(qa, a, 1, 0);
    CHECK(!readable(b->ch->fd, 300));
    send_one(qa, a, 2, 1);
    CHECK(readable(b->ch->fd, 2000));
    struct ibv_cq *ev_cq = NULL;
    void *ev_ctx = NULL;
    CHECK(ibv_get_cq_event(b->ch, &ev_cq, &ev_ctx) == 0 && ev_cq == b->cq);
    ibv_ack_cq_events(b->cq, 1);
    struct ibv_wc wc[4];
    int n = ibv_poll_cq(b->cq, 4, wc);
    CHECK(n == 2 && wc[0].wr_id == 100 && wc[1].wr_id == 101 &&
          wc[0].status == IBV_WC_SUCCESS && wc[1].status == IBV_WC_SUCCESS);
    /* Armed solicited-only again: an error completion wakes it too. */
    CHECK(ibv_req_notify_cq(b->cq, 1) == 0);
    CHECK(!readable(b->ch->fd, 100));
    struct ibv_qp_attr at = {.qp_state = IBV_QPS_ERR};
    CHECK(ibv_modify_qp(qb, &at, IBV_QP_STATE) == 0);
    CHECK(readable(b->ch->fd, 2000));
    CHECK(ibv_get_cq_event(b->ch, &ev_cq, &ev_ctx) == 0 && ev_cq == b->cq);
    ibv_ack_cq_events(b->cq, 1);
    CHECK(vt_wait_wc(b, wc) == 1 && wc[0].wr_id == 102 &&
          wc[0].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(ibv_destroy_qp(qa) == 0 && ibv_destroy_qp(qb) == 0);
    while (ibv_poll_cq(a->cq, 1, wc) > 0 || ibv_poll_cq(b->cq, 1, wc) > 0)
        ;
}

/* Polls both CQs (each poll drives its device: MROCE_IBV_PROGRESS=app)
 * until a has a completion and, when want_b, b too, or ~5 s; 1 when the
 * wanted ones came. */
static int poll_both(struct vt_dev *a, struct vt_dev *b, struct ibv_wc *wa,
                     int want_b, struct ibv_wc *wb)
{
    int got_a = 0, got_b = !want_b;
    double t0 = vt_now();
    while (!(got_a && got_b) && vt_now() - t0 < 5) {
        got_a += !got_a && ibv_poll_cq(a->cq, 1, wa) == 1;
        got_b += !got_b && ibv_poll_cq(b->cq, 1, wb) == 1;
    }
    return got_a && got_b;
}

/* --linger: with only the application's calls driving progress, a WRITE
 * that reaches qb while ibv_destroy_qp(qb) runs is acknowledged only if
 * the call lingers (REL-41); without, its sender never completes it
 * successfully. */
static void linger(struct vt_dev *a, struct vt_dev *b)
{
    struct ibv_qp *qa = vt_new_qp(a, 8, NULL), *qb = vt_new_qp(b, 8, NULL);
    CHECK(vt_connect(qa, ALL_REMOTE, &b->gid, qb->qp_num) == 0);
    CHECK(vt_connect(qb, ALL_REMOTE, &a->gid, qa->qp_num) == 0);
    vt_post_recv(b, qb, 200);
    struct ibv_sge sg = {(uintptr_t)a->buf, 32, a->mr->lkey};
    struct ibv_send_wr w = {.wr_id = 8,
                            .sg_list = &sg,
                            .num_sge = 1,
                            .opcode = IBV_WR_SEND};
    vt_post(qa, &w);
    struct ibv_wc wa, wb;
    CHECK(poll_both(a, b, &wa, 1, &wb) && wa.wr_id == 8 &&
          wa.status == IBV_WC_SUCCESS && wb.wr_id == 200);
    /* On the wire (post_send transmits at once), not yet received. */
    struct ibv_send_wr wr = {.wr_id = 9,
                             .sg_list = &sg,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE,
                             .wr.rdma = {(uintptr_t)b->buf, b->mr->rkey}};
    vt_post(qa, &wr);
    double t0 = vt_now();
    CHECK(ibv_destroy_qp(qb) == 0);
    double took = vt_now() - t0;
    int done = poll_both(a, b, &wa, 0, &wb);
    if (!done || wa.status != IBV_WC_SUCCESS)
        fprintf(stderr, "WRITE to the lingering QP: %s, destroy took %.3f s\n",
                done ? ibv_wc_status_str(wa.status) : "no completion", took);
    CHECK(done && wa.wr_id == 9 && wa.status == IBV_WC_SUCCESS);
    /* Quiet for 10 ms or more ends it, well before the 1 s bound. */
    CHECK(took >= 0.01 && took < 1.5);
    CHECK(ibv_destroy_qp(qa) == 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--linger") == 0) {
        setenv("MROCE_IBV_PROGRESS", "app", 1);
        struct ibv_device **l = vt_devices(5296);
        struct vt_dev a, b;
        vt_open(l[0], &a, 0);
        vt_open(l[1], &b, 0);
        linger(&a, &b);
        vt_close(&a);
        vt_close(&b);
        ibv_free_device_list(l);
        if (failures) {
            fprintf(stderr, "test_verbs_events --linger: %d failures\n",
                    failures);
            return 1;
        }
        printf("test_verbs_events --linger: PASS\n");
        return 0;
    }
    struct ibv_device **l = vt_devices(5295);
    struct vt_dev a, b;
    vt_open(l[0], &a, 0);
    vt_open(l[1], &b, 1);
    async_events(&a, &b);
    solicited(&a, &b);
    vt_close(&a);
    vt_close(&b);
    ibv_free_device_list(l);
    if (failures) {
        fprintf(stderr, "test_verbs_events: %d failures\n", failures);
        return 1;
    }
    printf("test_verbs_events: PASS\n");
    return 0;
}
