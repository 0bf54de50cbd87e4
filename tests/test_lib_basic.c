/*
 * test_lib_basic.c - libmroce end to end in one process: two devices on
 * 127.0.0.1 (different ports) connected over real UDP sockets, in APP and in
 * THREAD progress mode.  Covers connect/accept, SEND/RECV, WRITE, READ,
 * both atomics, a 1 MiB WRITE, the CQ eventfd, error returns for bad calls
 * (NULL, destroyed objects, QP in ERROR, out-of-region lengths, busy
 * objects), connecting to a dead port or to a device nobody listens on
 * (error within the timeout), disconnect, teardown in any order, and the
 * APP-mode idle yield (an idle device that moved bulk data yields the CPU
 * in its polls, a ping-pong never does, a progress thread's polls never do),
 * and a peer whose application stops calling right after it received a
 * message (APP mode: its deferred ACK must still leave, or the sender's
 * retries run out).
 *
 * In APP mode nothing moves unless someone calls in, and the two devices
 * live in one thread, so the helpers drive both devices while they wait.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce.h>

#include "case_table.h"
#include "libpair.h"
#include "testutil.h"

#define BUF_SIZE (2u << 20)
#define MIB (1u << 20)

#define ACCESS_ALL                                          \
    (MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE | \
     MROCE_ACCESS_REMOTE_READ | MROCE_ACCESS_REMOTE_ATOMIC)

/* Polls s's CQ for one completion, driving `other` too (APP mode). */
static int wait_wc(struct side *s, struct side *other, struct mroce_wc *wc,
                   int timeout_ms)
{
    uint64_t end = now_ms() + (uint64_t)timeout_ms;
    while (now_ms() < end) {
        int n = mroce_poll_cq(s->cq, 1, wc);
        if (n != 0)
            return n;
        if (other)
            mroce_device_progress(other->dev);
    }
    return 0;
}

/* Connects b (active) to a (listener, accepting in a thread: the blocking
 * calls are what is tested, each driving its own device). */
static void connect_sides(struct side *a, struct side *b)
{
    connect_pair(b, a);
    CHECK_EQ_INT(mroce_qp_get_state(a->qp), MROCE_QPS_RTS);
    CHECK_EQ_INT(mroce_qp_get_state(b->qp), MROCE_QPS_RTS);
}

static void test_ops(struct side *a, struct side *b)
{
    struct mroce_wc wc;
    struct mroce_sge sge;
    struct mroce_send_wr wr, *bad;
    struct mroce_recv_wr rwr, *rbad;

    /* SEND / RECV (b -> a), with immediate. */
    memset(a->buf, 0, 4096);
    sge.addr = (uintptr_t)a->buf;
    sge.length = 4096;
    sge.lkey = mroce_mr_lkey(a->mr);
    memset(&rwr, 0, sizeof(rwr));
    rwr.wr_id = 11;
    rwr.sg_list = &sge;
    rwr.num_sge = 1;
    CHECK_EQ_INT(mroce_post_recv(a->qp, &rwr, &rbad), 0);
    strcpy((char *)b->buf, "hello over udp");
    struct mroce_sge ssge = {(uintptr_t)b->buf, 15, mroce_mr_lkey(b->mr)};
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = 21;
    wr.sg_list = &ssge;
    wr.num_sge = 1;
    wr.opcode = MROCE_WR_SEND_WITH_IMM;
    wr.imm_data = 0xabcd;
    wr.send_flags = MROCE_SEND_SIGNALED;
    CHECK_EQ_INT(mroce_post_send(b->qp, &wr, &bad), 0);
    CHECK_EQ_INT(wait_wc(b, a, &wc, 3000), 1);
    CHECK_EQ(wc.wr_id, 21);
    CHECK_EQ_INT(wc.status, MROCE_WC_SUCCESS);
    CHECK_EQ_INT(wait_wc(a, b, &wc, 3000), 1);
    CHECK_EQ(wc.wr_id, 11);
    CHECK_EQ_INT(wc.status, MROCE_WC_SUCCESS);
    CHECK_EQ(wc.byte_len, 15);
    CHECK_EQ(wc.imm_data, 0xabcd);
    CHECK(!strcmp((char *)a->buf, "hello over udp"));

    /* WRITE 64 KiB (b -> a). */
    for (unsigned i = 0; i < 65536; i++)
        b->buf[i] = (uint8_t)(i * 7 + 3);
    ssge.addr = (uintptr_t)b->buf;
    ssge.length = 65536;
    wr.wr_id = 22;
    wr.opcode = MROCE_WR_WRITE;
    wr.remote_addr = (uintptr_t)a->buf + 8192;
    wr.rkey = mroce_mr_rkey(a->mr);
    CHECK_EQ_INT(mroce_post_send(b->qp, &wr, &bad), 0);
    CHECK_EQ_INT(wait_wc(b, a, &wc, 3000), 1);
    CHECK_EQ(wc.wr_id, 22);
    CHECK_EQ_INT(wc.status, MROCE_WC_SUCCESS);
    CHECK(!memcmp(a->buf + 8192, b->buf, 65536));

    /* READ 100000 bytes (b reads a). */
    for (unsigned i = 0; i < 100000; i++)
        a->buf[MIB + i] = (uint8_t)(i * 13 + 1);
    ssge.addr = (uintptr_t)b->buf + MIB;
    ssge.length = 100000;
    wr.wr_id = 23;
    wr.opcode = MROCE_WR_READ;
    wr.remote_addr = (uintptr_t)a->buf + MIB;
    CHECK_EQ_INT(mroce_post_send(b->qp, &wr, &bad), 0);
    CHECK_EQ_INT(wait_wc(b, a, &wc, 3000), 1);
    CHECK_EQ(wc.wr_id, 23);
    CHECK_EQ_INT(wc.status, MROCE_WC_SUCCESS);
    CHECK(!memcmp(b->buf + MIB, a->buf + MIB, 100000));

    /* FETCH_ADD then CMP_SWAP on a 64-bit word of a. */
    uint64_t *word = (uint64_t *)(a->buf + 4096);
    *word = 40;
    uint64_t *res = (uint64_t *)(b->buf + 4096);
    ssge.addr = (uintptr_t)res;
    ssge.length = 8;
    wr.wr_id = 24;
    wr.opcode = MROCE_WR_FETCH_ADD;
    wr.remote_addr = (uintptr_t)word;
    wr.compare_add = 2;
    CHECK_EQ_INT(mroce_post_send(b->qp, &wr, &bad), 0);
    CHECK_EQ_INT(wait_wc(b, a, &wc, 3000), 1);
    CHECK_EQ_INT(wc.status, MROCE_WC_SUCCESS);
    CHECK_EQ(*res, 40);
    CHECK_EQ(*word, 42);
    wr.wr_id = 25;
    wr.opcode = MROCE_WR_CMP_SWAP;
    wr.compare_add = 42;
    wr.swap = 7;
    CHECK_EQ_INT(mroce_post_send(b->qp, &wr, &bad), 0);
    CHECK_EQ_INT(wait_wc(b, a, &wc, 3000), 1);
    CHECK_EQ_INT(wc.status, MROCE_WC_SUCCESS);
    CHECK_EQ(*res, 42);
    CHECK_EQ(*word, 7);

    /* 1 MiB WRITE (a -> b this time). */
    for (unsigned i = 0; i < MIB; i++)
        a->buf[i] = (uint8_t)(i ^ (i >> 8) ^ 0x5a);
    struct mroce_sge big = {(uintptr_t)a->buf, MIB, mroce_mr_lkey(a->mr)};
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = 26;
    wr.sg_list = &big;
    wr.num_sge = 1;
    wr.opcode = MROCE_WR_WRITE;
    wr.send_flags = MROCE_SEND_SIGNALED;
    wr.remote_addr = (uintptr_t)b->buf + MIB;
    wr.rkey = mroce_mr_rkey(b->mr);
    uint64_t t0 = now_ms();
    CHECK_EQ_INT(mroce_post_send(a->qp, &wr, &bad), 0);
    CHECK_EQ_INT(wait_wc(a, b, &wc, 5000), 1);
    CHECK_EQ(wc.wr_id, 26);
    CHECK_EQ_INT(wc.status, MROCE_WC_SUCCESS);
    CHECK(!memcmp(b->buf + MIB, a->buf, MIB));
    printf("  1 MiB WRITE took %llu ms\n", (unsigned long long)(now_ms() - t0));
}

/* The CQ eventfd turns readable when a completion arrives. */
static void test_cq_fd(struct side *a, struct side *b, int mode)
{
    struct mroce_wc wc;
    int fd = mroce_cq_fd(a->cq);
    CHECK(fd >= 0);
    struct pollfd p = {fd, POLLIN, 0};
    CHECK_EQ_INT(poll(&p, 1, 0), 0); /* nothing waiting yet */
    struct mroce_sge sge = {(uintptr_t)a->buf, 64, mroce_mr_lkey(a->mr)};
    struct mroce_recv_wr rwr = {.wr_id = 31, .sg_list = &sge, .num_sge = 1},
                         *rbad;
    CHECK_EQ_INT(mroce_post_recv(a->qp, &rwr, &rbad), 0);
    struct mroce_sge ssge = {(uintptr_t)b->buf, 64, mroce_mr_lkey(b->mr)};
    struct mroce_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.wr_id = 32;
    wr.sg_list = &ssge;
    wr.num_sge = 1;
    wr.opcode = MROCE_WR_SEND; /* unsignaled: only a's CQ gets an entry */
    CHECK_EQ_INT(mroce_post_send(b->qp, &wr, &bad), 0);
    int ready = 0;
    for (uint64_t end = now_ms() + 3000; now_ms() < end && !ready;) {
        if (mode == MROCE_PROGRESS_APP) {
            mroce_device_progress(a->dev);
            mroce_device_progress(b->dev);
        }
        ready = poll(&p, 1, mode == MROCE_PROGRESS_APP ? 0 : 100) == 1;
    }
    CHECK(ready);
    mroce_cq_ack_event(a->cq);
    CHECK_EQ_INT(mroce_poll_cq(a->cq, 1, &wc), 1);
    CHECK_EQ(wc.wr_id, 31);
    CHECK_EQ_INT(mroce_poll_cq(a->cq, 1, &wc), 0);
    CHECK_EQ_INT(poll(&p, 1, 0), 0); /* acknowledged */
    /* cq_wait: a completion is already there -> 1 at once; then the
     * timeout path. */
    CHECK_EQ_INT(mroce_cq_wait(a->cq, 50), 0);
    if (mode == MROCE_PROGRESS_APP)
        mroce_device_progress(b->dev); /* b acknowledges in the background */
}

static void test_bad_calls(struct side *a, struct side *b)
{
    struct mroce_wc wc;
    mroce_pd *pd;
    mroce_cq *cq;
    mroce_mr *mr;
    struct mroce_send_wr wr, *bad;
    struct mroce_qp_init_attr qa;

    /* NULL everything. */
    CHECK_EQ_INT(mroce_device_open(NULL, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_pd_alloc(NULL, &pd), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_pd_alloc(a->dev, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_pd_free(NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_reg_mr(NULL, a->buf, 64, 0, &mr), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_reg_mr(a->pd, NULL, 64, 0, &mr), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_reg_mr(a->pd, a->buf, 64, 0x100, &mr), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_dereg_mr(NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_create_cq(NULL, 16, &cq), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_create_cq(a->dev, 0, &cq), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_destroy_cq(NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_poll_cq(NULL, 1, &wc), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_poll_cq(a->cq, 1, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_poll_cq(a->cq, -1, &wc), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_cq_fd(NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_cq_wait(NULL, 0), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_create_qp(NULL, &qa, NULL), MROCE_EINVAL);
    mroce_qp_init_attr_default(&qa);
    mroce_qp *qp;
    CHECK_EQ_INT(mroce_create_qp(a->pd, &qa, &qp), MROCE_EINVAL); /* no CQs */
    CHECK_EQ_INT(mroce_create_qp(a->pd, NULL, &qp), MROCE_EINVAL);
    qa.send_cq = qa.recv_cq = b->cq; /* another device's CQ */
    CHECK_EQ_INT(mroce_create_qp(a->pd, &qa, &qp), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_destroy_qp(NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_post_send(NULL, &wr, &bad), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_post_send(a->qp, NULL, &bad), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_post_recv(NULL, NULL, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_connect(NULL, "127.0.0.1", 1, 0, 10), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_accept(NULL, 10), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_disconnect(NULL, 10), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_modify_qp_error(NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_qp_get_counters(NULL, NULL), MROCE_EINVAL);
    CHECK_EQ_INT(mroce_device_progress(NULL), MROCE_EINVAL);
    CHECK_EQ(mroce_qp_num(NULL), 0);
    CHECK_EQ(mroce_mr_lkey(NULL), 0);
    CHECK_EQ(mroce_device_port(NULL), 0);
    mroce_device_close(NULL); /* no crash */
    CHECK(strlen(mroce_strerror(MROCE_EDESTROYED)) > 0);
    CHECK(strlen(mroce_strerror(MROCE_EINVAL)) > 0);

    /* Bad device attributes and addresses. */
    struct mroce_device_attr da;
    mroce_device *dev;
    mroce_device_attr_default(&da);
    da.local_addr = "not-an-address.invalid";
    CHECK_EQ_INT(mroce_device_open(&da, &dev), MROCE_EADDR);
    mroce_device_attr_default(&da);
    da.dscp = 64;
    CHECK_EQ_INT(mroce_device_open(&da, &dev), MROCE_EINVAL);
    mroce_device_attr_default(&da);
    da.port = mroce_device_port(a->dev); /* taken */
    CHECK_EQ_INT(mroce_device_open(&da, &dev), MROCE_EADDR);

    /* Destroyed objects. */
    CHECK_EQ_INT(mroce_pd_alloc(a->dev, &pd), 0);
    CHECK_EQ_INT(mroce_reg_mr(pd, a->buf, 4096, MROCE_ACCESS_LOCAL_WRITE, &mr),
                 0);
    CHECK_EQ_INT(mroce_pd_free(pd), MROCE_EBUSY); /* MR in it */
    CHECK_EQ_INT(mroce_dereg_mr(mr), 0);
    CHECK_EQ_INT(mroce_dereg_mr(mr), MROCE_EDESTROYED);
    CHECK_EQ(mroce_mr_lkey(mr), 0);
    CHECK_EQ_INT(mroce_pd_free(pd), 0);
    CHECK_EQ_INT(mroce_pd_free(pd), MROCE_EDESTROYED);
    CHECK_EQ_INT(mroce_reg_mr(pd, a->buf, 64, 0, &mr), MROCE_EDESTROYED);
    CHECK_EQ_INT(mroce_create_cq(a->dev, 16, &cq), 0);
    CHECK_EQ_INT(mroce_destroy_cq(cq), 0);
    CHECK_EQ_INT(mroce_poll_cq(cq, 1, &wc), MROCE_EDESTROYED);
    CHECK_EQ_INT(mroce_destroy_cq(cq), MROCE_EDESTROYED);
    CHECK_EQ_INT(mroce_destroy_cq(a->cq), MROCE_EBUSY); /* QP uses it */
    CHECK_EQ_INT(mroce_pd_free(a->pd), MROCE_EBUSY);
    qa.send_cq = qa.recv_cq = a->cq;
    CHECK_EQ_INT(mroce_create_qp(a->pd, &qa, &qp), 0);
    CHECK_EQ_INT(mroce_destroy_qp(qp), 0);
    CHECK_EQ_INT(mroce_destroy_qp(qp), MROCE_EDESTROYED);
    memset(&wr, 0, sizeof(wr));
    CHECK_EQ_INT(mroce_post_send(qp, &wr, &bad), MROCE_EDESTROYED);
    CHECK_EQ_INT(mroce_connect(qp, "127.0.0.1", 1, 0, 10), MROCE_EDESTROYED);
    CHECK_EQ_INT(mroce_qp_get_state(qp), MROCE_QPS_ERROR);

    /* Posting outside a region: lkey range and remote-less local checks. */
    struct mroce_sge sge = {(uintptr_t)a->buf + BUF_SIZE - 10, 100,
                            mroce_mr_lkey(a->mr)};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = MROCE_WR_WRITE;
    wr.remote_addr = (uintptr_t)b->buf;
    wr.rkey = mroce_mr_rkey(b->mr);
    CHECK_EQ_INT(mroce_post_send(a->qp, &wr, &bad), MROCE_EACCESS);
    CHECK(bad == &wr);
    sge.addr = (uintptr_t)a->buf;
    sge.lkey = 0xdead00;
    CHECK_EQ_INT(mroce_post_send(a->qp, &wr, &bad), MROCE_EACCESS);
    /* A remote range outside b's region: the WR completes with a remote
     * access error and the QP goes to ERROR. */
    sge.lkey = mroce_mr_lkey(a->mr);
    wr.remote_addr = (uintptr_t)b->buf + BUF_SIZE - 10;
    wr.wr_id = 41;
    wr.send_flags = MROCE_SEND_SIGNALED;
    CHECK_EQ_INT(mroce_post_send(a->qp, &wr, &bad), 0);
    CHECK_EQ_INT(wait_wc(a, b, &wc, 3000), 1);
    CHECK_EQ(wc.wr_id, 41);
    CHECK_EQ_INT(wc.status, MROCE_WC_REM_ACCESS_ERR);
    CHECK_EQ_INT(mroce_qp_get_state(a->qp), MROCE_QPS_ERROR);
    /* Posting on a QP in ERROR. */
    wr.remote_addr = (uintptr_t)b->buf;
    CHECK_EQ_INT(mroce_post_send(a->qp, &wr, &bad), MROCE_ESTATE);
    CHECK_EQ_INT(mroce_connect(a->qp, "127.0.0.1", 1, 0, 10), MROCE_ESTATE);
    CHECK_EQ_INT(mroce_modify_qp_error(b->qp), 0);
    CHECK_EQ_INT(mroce_qp_get_state(b->qp), MROCE_QPS_ERROR);
}

/* Connecting to a port where nothing listens fails within the timeout:
 * at once through ICMP (EUNREACH); and to a live device with no listening
 * QP after the timeout (ETIMEDOUT). */
static void test_dead_peer(struct side *b, uint16_t live_port, int mode)
{
    struct mroce_qp_init_attr qa;
    mroce_qp_init_attr_default(&qa);
    qa.send_cq = qa.recv_cq = b->cq;
    mroce_qp *qp;
    CHECK_EQ_INT(mroce_create_qp(b->pd, &qa, &qp), 0);
    /* A port nobody has: open and close a device to find one. */
    mroce_device *tmp;
    uint16_t dead = 0;
    if (CHECK(libpair_open_dev(&tmp, MROCE_PROGRESS_APP) == 0)) {
        dead = mroce_device_port(tmp);
        mroce_device_close(tmp);
    }
    uint64_t t0 = now_ms();
    int rc = mroce_connect(qp, "127.0.0.1", dead, 0, 500);
    uint64_t dt = now_ms() - t0;
    CHECK_MSG(rc == MROCE_EUNREACH || rc == MROCE_ETIMEDOUT, "rc %d", rc);
    CHECK_MSG(dt <= 700, "dead port took %llu ms", (unsigned long long)dt);
    printf("  dead port (%s): %s after %llu ms\n", mode ? "thread" : "app",
           mroce_strerror(rc), (unsigned long long)dt);
    CHECK_EQ_INT(mroce_qp_get_state(qp), MROCE_QPS_ERROR);
    CHECK_EQ_INT(mroce_destroy_qp(qp), 0);

    /* The device exists but has no listening QP: nobody answers. */
    CHECK_EQ_INT(mroce_create_qp(b->pd, &qa, &qp), 0);
    t0 = now_ms();
    rc = mroce_connect(qp, "127.0.0.1", live_port, 0, 200);
    dt = now_ms() - t0;
    CHECK_EQ_INT(rc, MROCE_ETIMEDOUT);
    CHECK_MSG(dt >= 150 && dt <= 500, "no listener took %llu ms",
              (unsigned long long)dt);
    CHECK_EQ_INT(mroce_destroy_qp(qp), 0);
    /* Bad host strings. */
    CHECK_EQ_INT(mroce_create_qp(b->pd, &qa, &qp), 0);
    CHECK_EQ_INT(mroce_connect(qp, "::1", live_port, 0, 100), MROCE_EADDR);
    CHECK_EQ_INT(mroce_connect(qp, NULL, live_port, 0, 100), MROCE_EADDR);
    /* Accept times out and keeps listening. */
    t0 = now_ms();
    CHECK_EQ_INT(mroce_accept(qp, 50), MROCE_ETIMEDOUT);
    CHECK(now_ms() - t0 >= 45);
    CHECK_EQ_INT(mroce_qp_get_state(qp), MROCE_QPS_LISTEN);
    /* qp is left for device close to clean up. */
}

/* APP mode: b receives a SEND and then its application stays away for
 * 2 s, longer than a's whole retry budget (RETRY_EXC_ERR after ~0.5-1 s
 * with the library's 1 ms minimum RTO).  b's library may have left the
 * ACK for its application's next call (ackdefer.c); its watchdog must
 * send it anyway, so a's SEND completes successfully while b is away.
 * (The deferral without the watchdog failed exactly so: RETRY_EXC_ERR.) */
static void test_peer_away(struct side *a, struct side *b)
{
    struct mroce_wc wc;
    struct mroce_sge rs = {(uintptr_t)b->buf + 4096, 64, mroce_mr_lkey(b->mr)};
    struct mroce_recv_wr rw = {.wr_id = 77, .sg_list = &rs, .num_sge = 1}, *rb;
    CHECK_EQ_INT(mroce_post_recv(b->qp, &rw, &rb), 0);
    struct mroce_qp_counters c0, c1;
    CHECK_EQ_INT(mroce_qp_get_counters(a->qp, &c0), 0);
    struct mroce_udp_counters u0, u1;
    mroce_device_get_udp_counters(b->dev, &u0);
    struct mroce_sge ss = {(uintptr_t)a->buf, 64, mroce_mr_lkey(a->mr)};
    struct mroce_send_wr sw, *sb;
    memset(&sw, 0, sizeof(sw));
    sw.wr_id = 78;
    sw.sg_list = &ss;
    sw.num_sge = 1;
    sw.opcode = MROCE_WR_SEND;
    sw.send_flags = MROCE_SEND_SIGNALED;
    CHECK_EQ_INT(mroce_post_send(a->qp, &sw, &sb), 0);
    /* Drive b alone until its application has the message. */
    int got = 0;
    for (uint64_t end = now_ms() + 3000; now_ms() < end && !got;) {
        int n = mroce_poll_cq(b->cq, 1, &wc);
        CHECK(n >= 0);
        if (n == 1) {
            CHECK_EQ(wc.wr_id, 77);
            CHECK_EQ_INT(wc.status, MROCE_WC_SUCCESS);
            got = 1;
        }
    }
    if (!CHECK_MSG(got, "b never received the SEND"))
        return;
    /* b's application is away now: only a is polled. */
    uint64_t t0 = now_ms(), t_done = 0;
    int n = 0;
    while (now_ms() - t0 < 2000) {
        int k = mroce_poll_cq(a->cq, 1, &wc);
        if (k != 0 && !t_done) {
            n = k;
            t_done = now_ms();
        }
    }
    CHECK_MSG(n == 1, "no completion for the SEND while the peer was away");
    if (n == 1) {
        CHECK_EQ(wc.wr_id, 78);
        CHECK_MSG(wc.status == MROCE_WC_SUCCESS, "SEND: %s",
                  mroce_wc_status_str(wc.status));
    }
    CHECK_EQ_INT(mroce_qp_get_state(a->qp), MROCE_QPS_RTS);
    CHECK_EQ_INT(mroce_qp_get_counters(a->qp, &c1), 0);
    mroce_device_get_udp_counters(b->dev, &u1);
    printf("  peer away: SEND completed after %llu ms, %llu retransmissions; "
           "b deferred %llu, its watchdog sent %llu\n",
           (unsigned long long)(t_done ? t_done - t0 : 0),
           (unsigned long long)(c1.retx_pkts - c0.retx_pkts),
           (unsigned long long)(u1.acks_deferred - u0.acks_deferred),
           (unsigned long long)(u1.acks_watchdog - u0.acks_watchdog));
    /* The case is the watchdog's: b must have deferred the SEND's ACK and
     * the watchdog sent it (or the test proves nothing). */
    CHECK(u1.acks_deferred - u0.acks_deferred >= 1);
    CHECK(u1.acks_watchdog - u0.acks_watchdog >= 1);
    /* Retransmissions are printed, not checked: the watchdog's 100 us tick
     * is a scheduling bound, and a loaded host can stretch it past the
     * 1 ms RTO. */
}

static void run_mode(int mode)
{
    struct side a, b;
    printf("mode %s\n", mode ? "THREAD" : "APP");
    int rca = side_open_mode(&a, BUF_SIZE, ACCESS_ALL, 0, mode),
        rcb = side_open_mode(&b, BUF_SIZE, ACCESS_ALL, 0, mode);
    if (!CHECK_MSG(rca == 0 && rcb == 0, "side_open: %d %d", rca, rcb))
        return;
    uint16_t aport = mroce_device_port(a.dev), bport = mroce_device_port(b.dev);
    CHECK(aport != bport);
    struct mroce_device_attr qa;
    CHECK_EQ_INT(mroce_device_query(a.dev, &qa), 0);
    CHECK(qa.src_port_base != 0);
    CHECK_EQ(qa.port, aport);
    connect_sides(&a, &b);
    test_ops(&a, &b);
    if (mode == MROCE_PROGRESS_APP)
        test_peer_away(&a, &b);
    test_cq_fd(&a, &b, mode);

    /* Counters and the dump. */
    struct mroce_qp_counters c;
    CHECK_EQ_INT(mroce_qp_get_counters(b.qp, &c), 0);
    CHECK(c.tx_data_pkts > 0 && c.rx_acks > 0);
    struct mroce_path_stats ps[64];
    int np = mroce_qp_path_stats(a.qp, ps, 64);
    CHECK(np == 64);
    int used = 0;
    for (int i = 0; i < np; i++)
        used += ps[i].tx_pkts > 0;
    CHECK_MSG(used > 8, "paths used %d", used);
    FILE *devnull = fopen("/dev/null", "w");
    if (devnull) {
        mroce_qp_dump_counters(a.qp, devnull);
        fclose(devnull);
    }
    struct mroce_udp_counters u;
    mroce_device_get_udp_counters(a.dev, &u);
    CHECK(u.tx_pkts > 0 && u.rx_pkts > 0 && u.tx_syscalls > 0);
    CHECK(u.tx_gso_sends > 0); /* the 1 MiB WRITE goes out in GSO bursts */
    printf("  a: tx %llu pkts in %llu syscalls (%llu GSO sends), rx %llu pkts "
           "in %llu datagrams, %llu syscalls\n",
           (unsigned long long)u.tx_pkts, (unsigned long long)u.tx_syscalls,
           (unsigned long long)u.tx_gso_sends, (unsigned long long)u.rx_pkts,
           (unsigned long long)u.rx_datagrams,
           (unsigned long long)u.rx_syscalls);
    /* Idle yield: in APP mode, once the device has been idle for 50 us
     * (LIB_IDLE_YIELD_NS), polls that find nothing yield the CPU; never
     * with a progress thread (whose polls do not drive the device). */
    {
        struct mroce_wc wc;
        struct mroce_udp_counters u0, u1;
        mroce_device_get_udp_counters(a.dev, &u0);
        int got = 0, polls = 0;
        /* 20 ms and at least 200 polls: on a loaded host the process may
         * sleep through most of the 20 ms (bounded at 2 s). */
        for (uint64_t start = now_ms(), t = 0;
             t < 2000 && (t < 20 || polls < 200); polls++) {
            got += mroce_poll_cq(a.cq, 1, &wc) > 0;
            t = now_ms() - start;
        }
        mroce_device_get_udp_counters(a.dev, &u1);
        uint64_t y = u1.idle_yields - u0.idle_yields;
        printf("  idle yields: %llu in %d polls (%d completions)\n",
               (unsigned long long)y, polls, got);
        if (mode == MROCE_PROGRESS_APP)
            CHECK_MSG(y > 0 && y <= (uint64_t)polls, "idle yields %llu",
                      (unsigned long long)y);
        else
            CHECK_EQ(u1.idle_yields, 0);
    }
    /* ... but a ping-pong (one small packet per progress round) keeps
     * spinning however long it waits: 64 one-at-a-time 64 B WRITEs b -> a
     * age out the bulk history, then a 20 ms idle wait yields nothing. */
    if (mode == MROCE_PROGRESS_APP) {
        struct mroce_wc wc;
        struct mroce_sge sg = {(uintptr_t)b.buf, 64, mroce_mr_lkey(b.mr)};
        struct mroce_send_wr w, *bw;
        memset(&w, 0, sizeof(w));
        w.sg_list = &sg;
        w.num_sge = 1;
        w.opcode = MROCE_WR_WRITE;
        w.send_flags = MROCE_SEND_SIGNALED;
        w.remote_addr = (uintptr_t)a.buf;
        w.rkey = mroce_mr_rkey(a.mr);
        for (int i = 0; i < 64; i++) {
            w.wr_id = 900 + (uint64_t)i;
            CHECK_EQ_INT(mroce_post_send(b.qp, &w, &bw), 0);
            CHECK_EQ_INT(wait_wc(&b, &a, &wc, 3000), 1);
        }
        struct mroce_udp_counters u0, u1;
        mroce_device_get_udp_counters(a.dev, &u0);
        for (uint64_t end = now_ms() + 20; now_ms() < end;)
            (void)mroce_poll_cq(a.cq, 1, &wc);
        mroce_device_get_udp_counters(a.dev, &u1);
        CHECK_MSG(u1.idle_yields == u0.idle_yields,
                  "ping-pong side yielded %llu times",
                  (unsigned long long)(u1.idle_yields - u0.idle_yields));
    }
    struct mroce_ep_counters ec;
    mroce_device_get_counters(a.dev, &ec);
    if (!getenv("MROCE_FAULT")) /* injected corruption is dropped on CRC */
        CHECK_EQ(ec.drop_crc, 0);

    /* Orderly close, then a fresh connection on new QPs works. */
    CHECK_EQ_INT(mroce_disconnect(b.qp, 2000), 0);
    for (uint64_t end = now_ms() + 2000;
         now_ms() < end && mroce_qp_get_state(a.qp) != MROCE_QPS_CLOSED;)
        mroce_device_progress(a.dev);
    CHECK_EQ_INT(mroce_qp_get_state(a.qp), MROCE_QPS_CLOSED);
    CHECK_EQ_INT(mroce_disconnect(a.qp, 100), 0); /* already closed */
    CHECK_EQ_INT(mroce_destroy_qp(a.qp), 0);
    CHECK_EQ_INT(mroce_destroy_qp(b.qp), 0);
    struct mroce_qp_init_attr ia;
    mroce_qp_init_attr_default(&ia);
    ia.send_cq = ia.recv_cq = a.cq;
    CHECK_EQ_INT(mroce_create_qp(a.pd, &ia, &a.qp), 0);
    ia.send_cq = ia.recv_cq = b.cq;
    CHECK_EQ_INT(mroce_create_qp(b.pd, &ia, &b.qp), 0);
    connect_sides(&a, &b);

    test_bad_calls(&a, &b);
    test_dead_peer(&b, aport, mode);

    /* Teardown in mixed order: a piecewise (QP, MR, CQ, PD, device), b all
     * at once by closing the device with everything alive. */
    CHECK_EQ_INT(mroce_destroy_qp(a.qp), 0);
    CHECK_EQ_INT(mroce_dereg_mr(a.mr), 0);
    CHECK_EQ_INT(mroce_destroy_cq(a.cq), 0);
    CHECK_EQ_INT(mroce_pd_free(a.pd), 0);
    mroce_device_close(a.dev);
    CHECK_EQ_INT(mroce_pd_alloc(a.dev, &a.pd), MROCE_EDESTROYED);
    mroce_device_close(b.dev);
    CHECK_EQ_INT(mroce_post_send(b.qp, NULL, NULL), MROCE_EDESTROYED);
    CHECK_EQ_INT(mroce_poll_cq(b.cq, 0, NULL), MROCE_EDESTROYED);
    mroce_device_close(b.dev); /* twice: no crash */
    free(a.buf);
    free(b.buf);
}

static void case_app(void)
{
    run_mode(MROCE_PROGRESS_APP);
}

static void case_thread(void)
{
    run_mode(MROCE_PROGRESS_THREAD);
}

static const struct test_case cases[] = {
    {"app", case_app},
    {"thread", case_thread},
};

int main(int argc, char **argv)
{
    /* ACK deferral is adaptive by default (=1): it pauses where the
     * application does not answer, which test_ops' traffic could make it
     * do before test_peer_away, which needs a deferral: every round (=2). */
    setenv("MROCE_DEFER_ACKS", "2", 1);
    return TEST_CASES_MAIN("test_lib_basic", cases, argc, argv);
}
