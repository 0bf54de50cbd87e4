/*
 * verbs_test.h - what the one-process verbs tests (test_verbs_api.c,
 * test_verbs_semantics.c, test_verbs_events.c) share: CHECK, two devices
 * on one UDP port (mroce0 on 127.0.0.1, mroce1 on 127.0.0.2), a device
 * opened with a PD, a CQ (on a completion channel or not) and a 64 KiB
 * region granting every right, RC QPs, and the RESET -> INIT -> RTR -> RTS
 * transitions with the attributes a program exchanges out of band.  Static
 * definitions: each test is one translation unit that includes it once.
 */
#ifndef MROCE_VERBS_TEST_H
#define MROCE_VERBS_TEST_H

#include <infiniband/verbs.h>
#include <stdint.h>
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

struct vt_dev {
    struct ibv_context *ctx;
    struct ibv_pd *pd;
    struct ibv_comp_channel *ch; /* NULL unless opened with one */
    struct ibv_cq *cq;           /* on ch when there is one */
    struct ibv_mr *mr;           /* buf, every right */
    uint8_t *buf;                /* BUF bytes */
    union ibv_gid gid;
    struct ibv_qp *qp; /* the test's own use */
};

/* The two devices on UDP port `port`; exits unless both are listed. */
static inline struct ibv_device **vt_devices(int port)
{
    char spec[96];
    snprintf(spec, sizeof(spec), "mroce0=127.0.0.1:%d,mroce1=127.0.0.2:%d",
             port, port);
    setenv("MROCE_IBV_DEVICES", spec, 1);
    int n = 0;
    struct ibv_device **l = ibv_get_device_list(&n);
    CHECK(l && n == 2 && strcmp(ibv_get_device_name(l[0]), "mroce0") == 0);
    if (!l || n != 2)
        exit(1);
    return l;
}

/* Opens d into s: PD, a 64-entry CQ (on a new channel when channel), the
 * region; exits when any is missing. */
static inline void vt_open(struct ibv_device *d, struct vt_dev *s, int channel)
{
    memset(s, 0, sizeof(*s));
    s->ctx = ibv_open_device(d);
    CHECK(s->ctx);
    if (!s->ctx)
        exit(1);
    s->pd = ibv_alloc_pd(s->ctx);
    if (channel)
        s->ch = ibv_create_comp_channel(s->ctx);
    s->cq = ibv_create_cq(s->ctx, 64, s, s->ch, 0);
    s->buf = calloc(1, BUF);
    s->mr = ibv_reg_mr(s->pd, s->buf, BUF, IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
    CHECK(s->pd && (s->ch || !channel) && s->cq && s->mr);
    if (!s->pd || !s->cq || !s->mr)
        exit(1);
    CHECK(ibv_query_gid(s->ctx, 1, 0, &s->gid) == 0);
}

/* Frees what vt_open made (not s->qp). */
static inline void vt_close(struct vt_dev *s)
{
    CHECK(ibv_dereg_mr(s->mr) == 0);
    CHECK(ibv_destroy_cq(s->cq) == 0);
    if (s->ch)
        CHECK(ibv_destroy_comp_channel(s->ch) == 0);
    CHECK(ibv_dealloc_pd(s->pd) == 0);
    CHECK(ibv_close_device(s->ctx) == 0);
    free(s->buf);
}

/* An RC QP on s's CQ, depth WRs each way; cap, if not NULL, gets what was
 * granted.  Exits when creation fails. */
static inline struct ibv_qp *vt_new_qp(struct vt_dev *s, uint32_t depth,
                                       struct ibv_qp_cap *cap)
{
    struct ibv_qp_init_attr ia = {
        .send_cq = s->cq,
        .recv_cq = s->cq,
        .qp_type = IBV_QPT_RC,
        .cap = {.max_send_wr = depth,
                .max_recv_wr = depth,
                .max_send_sge = 1,
                .max_recv_sge = 1},
    };
    struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);
    CHECK(qp);
    if (!qp)
        exit(1);
    if (cap)
        *cap = ia.cap;
    return qp;
}

/* RESET -> INIT (granting access) -> RTR -> RTS towards the peer QP pqpn
 * at pgid, as ibv_rc_pingpong does, with rnr_retry rnr; 0 or the failing
 * modify's error. */
static inline int vt_connect_rnr(struct ibv_qp *qp, unsigned access,
                                 const union ibv_gid *pgid, uint32_t pqpn,
                                 uint8_t rnr)
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
    a.rq_psn = 1;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = *pgid;
    a.ah_attr.grh.hop_limit = 1;
    a.ah_attr.port_num = 1;
    rc = ibv_modify_qp(qp, &a,
                       IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                           IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc)
        return rc;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = rnr;
    a.sq_psn = 1;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a,
                         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                             IBV_QP_MAX_QP_RD_ATOMIC);
}

/* vt_connect_rnr with rnr_retry 7 (retry forever). */
static inline int vt_connect(struct ibv_qp *qp, unsigned access,
                             const union ibv_gid *pgid, uint32_t pqpn)
{
    return vt_connect_rnr(qp, access, pgid, pqpn, 7);
}

/* A connected pair of 8-deep QPs: qa on a (every right), qb on b granting
 * b_access. */
static inline void vt_pair(struct vt_dev *a, struct vt_dev *b,
                           unsigned b_access, struct ibv_qp **qa,
                           struct ibv_qp **qb)
{
    *qa = vt_new_qp(a, 8, NULL);
    *qb = vt_new_qp(b, 8, NULL);
    CHECK(vt_connect(*qa, ALL_REMOTE, &b->gid, (*qb)->qp_num) == 0);
    CHECK(vt_connect(*qb, b_access, &a->gid, (*qa)->qp_num) == 0);
}

/* Seconds since an arbitrary start (CLOCK_MONOTONIC). */
static inline double vt_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Polls s's CQ (driving progress) until one completion or ~5 s; the
 * number found (0 or 1). */
static inline int vt_wait_wc(struct vt_dev *s, struct ibv_wc *wc)
{
    double t0 = vt_now();
    while (vt_now() - t0 < 5) {
        int n = ibv_poll_cq(s->cq, 1, wc);
        if (n)
            return n;
    }
    return 0;
}

/* Posts one signalled send WR on qp. */
static inline void vt_post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
    struct ibv_send_wr *bad = NULL;
    wr->send_flags |= IBV_SEND_SIGNALED;
    CHECK(ibv_post_send(qp, wr, &bad) == 0);
}

/* Posts one 4 KiB receive of s's region on qp. */
static inline void vt_post_recv(struct vt_dev *s, struct ibv_qp *qp,
                                uint64_t id)
{
    struct ibv_sge rs = {(uintptr_t)s->buf, 4096, s->mr->lkey};
    struct ibv_recv_wr rwr = {.wr_id = id, .sg_list = &rs, .num_sge = 1};
    struct ibv_recv_wr *bad;
    CHECK(ibv_post_recv(qp, &rwr, &bad) == 0);
}

#endif /* MROCE_VERBS_TEST_H */
