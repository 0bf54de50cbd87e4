/*
 * test_verbs_api.c - libibverbs over MetaRoCE through its public API, in
 * one process: two devices (mroce0 on 127.0.0.1, mroce1 on 127.0.0.2, one
 * UDP port) connected through the verbs state machine with the attributes
 * a program exchanges out of band, then SEND with immediate, WRITE, READ,
 * fetch-and-add and compare-and-swap with their completions (opcodes,
 * lengths, immediates) and the bytes they moved; and every unsupported
 * verb failing cleanly: UD QPs, SRQs, memory windows, on-demand paging,
 * extended CQs, XRC domains, address handles, LID-only address vectors,
 * opcodes MetaRoCE lacks, transitions it refuses.
 */
#include <errno.h>

#include "verbs_test.h"

/* Polls s's CQ (driving progress) until one completion or ~5 s. */
static int wait_wc(struct vt_dev *s, struct vt_dev *other, struct ibv_wc *wc)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 5)
            break;
        int n = ibv_poll_cq(s->cq, 1, wc);
        if (n)
            return n;
        struct ibv_wc dummy;
        if (other && ibv_poll_cq(other->cq, 1, &dummy) > 0) {
            fprintf(stderr, "unexpected completion on the other side\n");
            failures++;
        }
    }
    return 0;
}

static void data_path(struct vt_dev *a, struct vt_dev *b)
{
    struct ibv_wc wc;
    /* SEND with immediate into b's posted receive. */
    struct ibv_sge rs = {(uintptr_t)b->buf, 4096, b->mr->lkey};
    struct ibv_recv_wr rwr = {.wr_id = 7, .sg_list = &rs, .num_sge = 1};
    struct ibv_recv_wr *rbad;
    int prc = ibv_post_recv(b->qp, &rwr, &rbad);
    if (prc)
        fprintf(stderr, "post_recv: %s\n", strerror(prc));
    CHECK(prc == 0);
    memset(a->buf, 0xab, 1000);
    struct ibv_sge ss = {(uintptr_t)a->buf, 1000, a->mr->lkey};
    struct ibv_send_wr sw = {.wr_id = 1,
                             .sg_list = &ss,
                             .num_sge = 1,
                             .opcode = IBV_WR_SEND_WITH_IMM,
                             .imm_data = htobe32(0x1234)};
    vt_post(a->qp, &sw);
    CHECK(wait_wc(a, NULL, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.opcode == IBV_WC_SEND && wc.wr_id == 1);
    CHECK(wait_wc(b, NULL, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.opcode == IBV_WC_RECV && wc.wr_id == 7 && wc.byte_len == 1000 &&
          (wc.wc_flags & IBV_WC_WITH_IMM) && wc.imm_data == htobe32(0x1234) &&
          wc.qp_num == b->qp->qp_num);
    CHECK(b->buf[0] == 0xab && b->buf[999] == 0xab);

    /* WRITE 10000 bytes into b at offset 8192. */
    for (int i = 0; i < 10000; i++)
        a->buf[i] = (uint8_t)(i * 7);
    struct ibv_sge ws = {(uintptr_t)a->buf, 10000, a->mr->lkey};
    struct ibv_send_wr ww = {.wr_id = 2,
                             .sg_list = &ws,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE};
    ww.wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
    ww.wr.rdma.rkey = b->mr->rkey;
    vt_post(a->qp, &ww);
    CHECK(wait_wc(a, b, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.opcode == IBV_WC_RDMA_WRITE && wc.wr_id == 2);
    CHECK(memcmp(b->buf + 8192, a->buf, 10000) == 0);

    /* READ it back into a at offset 32768. */
    struct ibv_sge rds = {(uintptr_t)a->buf + 32768, 10000, a->mr->lkey};
    struct ibv_send_wr rd = {.wr_id = 3,
                             .sg_list = &rds,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_READ};
    rd.wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
    rd.wr.rdma.rkey = b->mr->rkey;
    vt_post(a->qp, &rd);
    CHECK(wait_wc(a, b, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 10000);
    CHECK(memcmp(a->buf + 32768, a->buf, 10000) == 0);

    /* Fetch-and-add, then compare-and-swap, on b's word at 40000. */
    uint64_t *word = (uint64_t *)(b->buf + 40000);
    *word = 100;
    struct ibv_sge as = {(uintptr_t)a->buf + 48000, 8, a->mr->lkey};
    struct ibv_send_wr fa = {.wr_id = 4,
                             .sg_list = &as,
                             .num_sge = 1,
                             .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD};
    fa.wr.atomic.remote_addr = (uintptr_t)word;
    fa.wr.atomic.rkey = b->mr->rkey;
    fa.wr.atomic.compare_add = 5;
    vt_post(a->qp, &fa);
    CHECK(wait_wc(a, b, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.opcode == IBV_WC_FETCH_ADD);
    CHECK(*(uint64_t *)(a->buf + 48000) == 100 && *word == 105);
    struct ibv_send_wr cs = fa;
    cs.wr_id = 5;
    cs.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
    cs.wr.atomic.compare_add = 105;
    cs.wr.atomic.swap = 9;
    vt_post(a->qp, &cs);
    CHECK(wait_wc(a, b, &wc) == 1 && wc.status == IBV_WC_SUCCESS &&
          wc.opcode == IBV_WC_COMP_SWAP);
    CHECK(*(uint64_t *)(a->buf + 48000) == 105 && *word == 9);
}

static void unsupported(struct vt_dev *s)
{
    errno = 0;
    struct ibv_qp_init_attr ud = {.send_cq = s->cq,
                                  .recv_cq = s->cq,
                                  .qp_type = IBV_QPT_UD,
                                  .cap = {.max_send_wr = 1, .max_recv_wr = 1}};
    CHECK(!ibv_create_qp(s->pd, &ud) && errno == EOPNOTSUPP);
    struct ibv_srq_init_attr sa = {.attr = {.max_wr = 4, .max_sge = 1}};
    errno = 0;
    CHECK(!ibv_create_srq(s->pd, &sa) && errno == EOPNOTSUPP);
    errno = 0;
    CHECK(!ibv_alloc_mw(s->pd, IBV_MW_TYPE_1) && errno == EOPNOTSUPP);
    errno = 0;
    CHECK(!ibv_reg_mr(s->pd, s->buf, 4096,
                      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) &&
          errno == EOPNOTSUPP);
    struct ibv_cq_init_attr_ex ce = {.cqe = 4};
    errno = 0;
    CHECK(!ibv_create_cq_ex(s->ctx, &ce) && errno == EOPNOTSUPP);
    struct ibv_xrcd_init_attr xa = {0};
    errno = 0;
    CHECK(!ibv_open_xrcd(s->ctx, &xa) && errno == EOPNOTSUPP);
    struct ibv_ah_attr aa = {.port_num = 1};
    errno = 0;
    CHECK(!ibv_create_ah(s->pd, &aa) && errno == EOPNOTSUPP);
    errno = 0;
    CHECK(!ibv_qp_to_qp_ex(s->qp) && errno == EOPNOTSUPP);
    /* The queries are truthful. */
    struct ibv_device_attr da;
    CHECK(ibv_query_device(s->ctx, &da) == 0 && da.max_srq == 0 &&
          da.max_mw == 0 && da.max_ah == 0 && da.phys_port_cnt == 1 &&
          da.max_sge == 4);
    struct ibv_port_attr pa;
    CHECK(ibv_query_port(s->ctx, 1, &pa) == 0 &&
          pa.link_layer == IBV_LINK_LAYER_ETHERNET &&
          pa.state == IBV_PORT_ACTIVE && pa.gid_tbl_len == 1);
    CHECK(ibv_query_port(s->ctx, 2, &pa) != 0);
    union ibv_gid g;
    CHECK(ibv_query_gid(s->ctx, 1, 1, &g) != 0);
}

static void bad_transitions(struct vt_dev *s, const struct vt_dev *peer)
{
    struct ibv_qp_init_attr ia = {.send_cq = s->cq,
                                  .recv_cq = s->cq,
                                  .qp_type = IBV_QPT_RC,
                                  .cap = {.max_send_wr = 1, .max_recv_wr = 1}};
    struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);
    CHECK(qp);
    struct ibv_qp_attr a = {.qp_state = IBV_QPS_RTS};
    CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN) == EINVAL);
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT) == 0);
    /* INIT -> INIT changes the access flags (rping -q), with the checks of
     * RESET -> INIT. */
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    a.pkey_index = 0;
    CHECK(ibv_modify_qp(qp, &a,
                        IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX |
                            IBV_QP_ACCESS_FLAGS) == 0);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    CHECK(ibv_query_qp(qp, &qa, IBV_QP_STATE, &qi) == 0 &&
          qa.qp_state == IBV_QPS_INIT &&
          qa.qp_access_flags == a.qp_access_flags);
    a.port_num = 2;
    CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT) == EINVAL);
    a.port_num = 1;
    /* A LID address vector (no GRH) cannot be honoured on Ethernet. */
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = peer->qp->qp_num;
    a.ah_attr.dlid = 3;
    a.ah_attr.port_num = 1;
    int m = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
            IBV_QP_RQ_PSN;
    CHECK(ibv_modify_qp(qp, &a, m) == EINVAL);
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = peer->gid;
    a.max_dest_rd_atomic = 64; /* above max_qp_rd_atom */
    CHECK(ibv_modify_qp(qp, &a, m | IBV_QP_MAX_DEST_RD_ATOMIC) == EINVAL);
    a.qp_state = IBV_QPS_SQD;
    CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == EOPNOTSUPP);
    /* Sending before RTS is refused, nothing is posted. */
    struct ibv_sge sg = {(uintptr_t)s->buf, 8, s->mr->lkey};
    struct ibv_send_wr w = {.sg_list = &sg,
                            .num_sge = 1,
                            .opcode = IBV_WR_SEND};
    struct ibv_send_wr *bad = NULL;
    CHECK(ibv_post_send(qp, &w, &bad) == EINVAL && bad == &w);
    a.qp_state = IBV_QPS_ERR;
    CHECK(ibv_modify_qp(qp, &a, IBV_QP_STATE) == 0);
    CHECK(ibv_destroy_qp(qp) == 0);
}

/* A WRITE to an rkey b never gave: a remote access error, which (as in
 * verbs) moves the requester's QP to ERROR. */
static void remote_error(struct vt_dev *a, struct vt_dev *b)
{
    struct ibv_wc wc;
    struct ibv_sge ws = {(uintptr_t)a->buf, 100, a->mr->lkey};
    struct ibv_send_wr bw = {.wr_id = 6,
                             .sg_list = &ws,
                             .num_sge = 1,
                             .opcode = IBV_WR_RDMA_WRITE};
    bw.wr.rdma.remote_addr = (uintptr_t)b->buf;
    bw.wr.rdma.rkey = b->mr->rkey ^ 0x5a5a00;
    vt_post(a->qp, &bw);
    CHECK(wait_wc(a, b, &wc) == 1 && wc.status == IBV_WC_REM_ACCESS_ERR &&
          wc.wr_id == 6);
    CHECK(strcmp(ibv_wc_status_str(wc.status), "remote access error") == 0);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    CHECK(ibv_query_qp(a->qp, &qa, IBV_QP_STATE, &qi) == 0 &&
          qa.qp_state == IBV_QPS_ERR);
}

int main(void)
{
    struct ibv_device **l = vt_devices(5280);
    struct vt_dev a, b;
    struct vt_dev *sides[2] = {&a, &b};
    for (int i = 0; i < 2; i++) {
        vt_open(l[i], sides[i], 0);
        struct ibv_qp_cap cap;
        sides[i]->qp = vt_new_qp(sides[i], 16, &cap);
        CHECK(cap.max_send_wr >= 16 && cap.max_inline_data > 0);
    }
    CHECK(vt_connect(a.qp, ALL_REMOTE, &b.gid, b.qp->qp_num) == 0);
    CHECK(vt_connect(b.qp, ALL_REMOTE, &a.gid, a.qp->qp_num) == 0);
    struct ibv_qp_attr qa;
    struct ibv_qp_init_attr qi;
    CHECK(ibv_query_qp(a.qp, &qa, IBV_QP_STATE, &qi) == 0 &&
          qa.qp_state == IBV_QPS_RTS && qa.dest_qp_num == b.qp->qp_num &&
          qa.path_mtu == IBV_MTU_1024);
    data_path(&a, &b);
    /* The other direction over the same connection. */
    data_path(&b, &a);
    /* An opcode MetaRoCE lacks: refused at post time, named in bad_wr. */
    struct ibv_sge sg = {(uintptr_t)a.buf, 8, a.mr->lkey};
    struct ibv_send_wr li = {.sg_list = &sg,
                             .num_sge = 1,
                             .opcode = IBV_WR_LOCAL_INV};
    struct ibv_send_wr *bad = NULL;
    CHECK(ibv_post_send(a.qp, &li, &bad) == EOPNOTSUPP && bad == &li);
    unsupported(&a);
    bad_transitions(&a, &b);
    remote_error(&a, &b);
    for (int i = 0; i < 2; i++) {
        CHECK(ibv_destroy_qp(sides[i]->qp) == 0);
        vt_close(sides[i]);
    }
    ibv_free_device_list(l);
    if (failures) {
        fprintf(stderr, "test_verbs_api: %d failures\n", failures);
        return 1;
    }
    printf("test_verbs_api: PASS\n");
    return 0;
}
