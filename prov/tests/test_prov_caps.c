/*
 * test_prov_caps.c - the mroce provider's counters (fi_cntr_*), poll sets
 * (fi_poll_*) and FI_MULTI_RECV buffers, through the libfabric API,
 * between two endpoints in one process (two domains): A sends, B
 * receives.  Every case checks the data and the counts: what each counter
 * reached, which CQ entries exist under FI_SELECTIVE_COMPLETION, where
 * each part of a multi-receive buffer landed and which entry carries
 * FI_MULTI_RECV.  "auto" runs the same with FI_PROGRESS_AUTO.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>

#include "prov_fi_test.h"

enum { A, B, NEP };

struct node {
    struct fid_domain *dom;
    struct fid_av *av;
    struct fid_cq *txcq, *rxcq;
    struct fid_ep *ep;
    struct fid_cntr *tx, *rx, *rma; /* FI_SEND, FI_RECV, FI_READ|FI_WRITE */
    fi_addr_t peer;
    char name[64];
    size_t namelen;
};

static struct node n[NEP];
static struct fi_info *info;
static struct fid_fabric *fabric;

/* Opens node i: the transmit CQ is bound with FI_SELECTIVE_COMPLETION,
 * and three counters count sends, receives and RMA. */
static void open_node(int i)
{
    struct node *x = &n[i];
    DIE_IF(fi_domain(fabric, info, &x->dom, NULL), "fi_domain");
    struct fi_av_attr av = {.type = FI_AV_TABLE};
    DIE_IF(fi_av_open(x->dom, &av, &x->av, NULL), "fi_av_open");
    struct fi_cq_attr cq = {.format = FI_CQ_FORMAT_DATA,
                            .wait_obj = FI_WAIT_NONE};
    DIE_IF(fi_cq_open(x->dom, &cq, &x->txcq, &x->txcq), "fi_cq_open");
    DIE_IF(fi_cq_open(x->dom, &cq, &x->rxcq, &x->rxcq), "fi_cq_open");
    struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP,
                              .wait_obj = FI_WAIT_UNSPEC};
    DIE_IF(fi_cntr_open(x->dom, &ca, &x->tx, &x->tx), "fi_cntr_open");
    DIE_IF(fi_cntr_open(x->dom, &ca, &x->rx, &x->rx), "fi_cntr_open");
    DIE_IF(fi_cntr_open(x->dom, &ca, &x->rma, &x->rma), "fi_cntr_open");
    DIE_IF(fi_endpoint(x->dom, info, &x->ep, NULL), "fi_endpoint");
    DIE_IF(fi_ep_bind(x->ep, &x->av->fid, 0), "bind av");
    DIE_IF(fi_ep_bind(x->ep, &x->txcq->fid,
                      FI_TRANSMIT | FI_SELECTIVE_COMPLETION),
           "bind txcq");
    DIE_IF(fi_ep_bind(x->ep, &x->rxcq->fid, FI_RECV), "bind rxcq");
    DIE_IF(fi_ep_bind(x->ep, &x->tx->fid, FI_SEND), "bind tx cntr");
    DIE_IF(fi_ep_bind(x->ep, &x->rx->fid, FI_RECV), "bind rx cntr");
    DIE_IF(fi_ep_bind(x->ep, &x->rma->fid, FI_READ | FI_WRITE), "bind rma");
    /* Remote-access counting needs FI_RMA_EVENT, not asked for here. */
    CHECK(fi_ep_bind(x->ep, &x->rma->fid, FI_REMOTE_WRITE) == -FI_ENOSYS);
    DIE_IF(fi_enable(x->ep), "fi_enable");
    x->namelen = sizeof(x->name);
    DIE_IF(fi_getname(&x->ep->fid, x->name, &x->namelen), "fi_getname");
}

static void close_node(int i)
{
    struct node *x = &n[i];
    /* A bound counter cannot close before its endpoint. */
    CHECK(fi_close(&x->tx->fid) == -FI_EBUSY);
    CHECK(fi_close(&x->ep->fid) == 0);
    CHECK(fi_close(&x->tx->fid) == 0);
    CHECK(fi_close(&x->rx->fid) == 0);
    CHECK(fi_close(&x->rma->fid) == 0);
    CHECK(fi_close(&x->txcq->fid) == 0);
    CHECK(fi_close(&x->rxcq->fid) == 0);
    CHECK(fi_close(&x->av->fid) == 0);
    CHECK(fi_close(&x->dom->fid) == 0);
}

/* Progress on both sides (fi_cntr_read drives its domain). */
static void drive(void)
{
    for (int i = 0; i < NEP; i++)
        (void)fi_cntr_read(n[i].tx);
}

/* Drives until c reaches v or 10 s pass; returns whether it did. */
static int drive_until(struct fid_cntr *c, uint64_t v)
{
    double t0 = now_s();
    while (fi_cntr_read(c) < v && now_s() - t0 < 10)
        drive();
    return fi_cntr_read(c) >= v;
}

static void fill(uint8_t *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)(seed * 31u + i * 7u);
}

static int check_fill(const uint8_t *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != (uint8_t)(seed * 31u + i * 7u))
            return 0;
    return 1;
}

/* Reads one entry of cq within 10 s (driving both sides): 1, or 0 if
 * none came, or -1 with *err filled for an error entry. */
static int read_cq(struct fid_cq *cq, struct fi_cq_data_entry *e,
                   struct fi_cq_err_entry *err)
{
    double t0 = now_s();
    while (now_s() - t0 < 10) {
        ssize_t rc = fi_cq_read(cq, e, 1);
        if (rc == 1)
            return 1;
        if (rc == -FI_EAVAIL) {
            memset(err, 0, sizeof(*err));
            CHECK(fi_cq_readerr(cq, err, 0) == 1);
            return -1;
        }
        drive();
    }
    return 0;
}

static int cq_empty(struct fid_cq *cq)
{
    struct fi_cq_data_entry e;
    drive();
    return fi_cq_read(cq, &e, 1) == -FI_EAGAIN;
}

/* Counters count every request, CQ entries only those selective
 * completion asks for; eager, rendezvous and inject sends, RMA. */
static void test_counters(void)
{
    enum { S0 = 100, S1 = 20000, S2 = 64, R = 5000 };
    static uint8_t s0[S0], s1[S1], s2[S2], r0[S0], r1[S1], r2[S2];
    fill(s0, S0, 1);
    fill(s1, S1, 2);
    fill(s2, S2, 3);
    struct fi_context rc[3], sc1;
    uint64_t tx0 = fi_cntr_read(n[A].tx), rx0 = fi_cntr_read(n[B].rx);
    CHECK(fi_recv(n[B].ep, r0, S0, NULL, FI_ADDR_UNSPEC, &rc[0]) == 0);
    CHECK(fi_recv(n[B].ep, r1, S1, NULL, FI_ADDR_UNSPEC, &rc[1]) == 0);
    CHECK(fi_recv(n[B].ep, r2, S2, NULL, FI_ADDR_UNSPEC, &rc[2]) == 0);
    CHECK(fi_send(n[A].ep, s0, S0, NULL, n[A].peer, NULL) == 0);
    struct iovec iov = {s1, S1};
    struct fi_msg m = {.msg_iov = &iov,
                       .iov_count = 1,
                       .addr = n[A].peer,
                       .context = &sc1};
    CHECK(fi_sendmsg(n[A].ep, &m, FI_COMPLETION) == 0);
    CHECK(fi_inject(n[A].ep, s2, S2, n[A].peer) == 0);
    CHECK(drive_until(n[A].tx, tx0 + 3));
    CHECK(fi_cntr_wait(n[B].rx, rx0 + 3, 10000) == 0);
    CHECK(fi_cntr_read(n[B].rx) == rx0 + 3);
    CHECK(fi_cntr_readerr(n[A].tx) == 0 && fi_cntr_readerr(n[B].rx) == 0);
    CHECK(check_fill(r0, S0, 1) && check_fill(r1, S1, 2) &&
          check_fill(r2, S2, 3));
    /* Selective completion: only the FI_COMPLETION send has an entry. */
    struct fi_cq_data_entry e;
    struct fi_cq_err_entry err;
    CHECK(read_cq(n[A].txcq, &e, &err) == 1 && e.op_context == &sc1);
    CHECK(cq_empty(n[A].txcq));
    /* One entry per receive (the rendezvous one may come last). */
    int seen[3] = {0};
    for (int i = 0; i < 3; i++) {
        CHECK(read_cq(n[B].rxcq, &e, &err) == 1);
        for (int j = 0; j < 3; j++)
            seen[j] += e.op_context == &rc[j];
    }
    CHECK(seen[0] == 1 && seen[1] == 1 && seen[2] == 1);
    CHECK(cq_empty(n[B].rxcq));

    /* RMA: a write, then a read of it back. */
    static uint8_t target[R], src[R], back[R];
    struct fid_mr *mr;
    DIE_IF(fi_mr_reg(n[B].dom, target, R, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                     0, 0, &mr, NULL),
           "fi_mr_reg");
    fill(src, R, 4);
    uint64_t rma0 = fi_cntr_read(n[A].rma);
    CHECK(fi_write(n[A].ep, src, R, NULL, n[A].peer, (uintptr_t)target,
                   fi_mr_key(mr), NULL) == 0);
    CHECK(drive_until(n[A].rma, rma0 + 1));
    CHECK(fi_read(n[A].ep, back, R, NULL, n[A].peer, (uintptr_t)target,
                  fi_mr_key(mr), NULL) == 0);
    CHECK(drive_until(n[A].rma, rma0 + 2));
    CHECK(check_fill(target, R, 4) && check_fill(back, R, 4));
    CHECK(fi_cntr_read(n[A].tx) == tx0 + 3); /* RMA is not a send */
    CHECK(cq_empty(n[A].txcq));
    /* The target's READ responder holds the region until the reader has
     * acknowledged its responses (-FI_EBUSY until then). */
    int mrc;
    double t0 = now_s();
    while ((mrc = fi_close(&mr->fid)) == -FI_EBUSY && now_s() - t0 < 10)
        drive();
    CHECK(mrc == 0);

    /* The application's own changes. */
    struct fid_cntr *c;
    struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP};
    CHECK(fi_cntr_open(n[A].dom, &ca, &c, NULL) == 0);
    CHECK(fi_cntr_read(c) == 0 && fi_cntr_readerr(c) == 0);
    CHECK(fi_cntr_set(c, 10) == 0 && fi_cntr_read(c) == 10);
    CHECK(fi_cntr_add(c, 5) == 0 && fi_cntr_read(c) == 15);
    CHECK(fi_cntr_seterr(c, 2) == 0 && fi_cntr_readerr(c) == 2);
    CHECK(fi_cntr_adderr(c, 1) == 0 && fi_cntr_readerr(c) == 3);
    CHECK(fi_cntr_read(c) == 15);
    CHECK(fi_cntr_wait(c, 15, 0) == 0);
    CHECK(fi_cntr_wait(c, 16, 20) == -FI_ETIMEDOUT);
    CHECK(fi_close(&c->fid) == 0);
    struct fi_cntr_attr bad = {.events = FI_CNTR_EVENTS_COMP,
                               .wait_obj = FI_WAIT_FD};
    CHECK(fi_cntr_open(n[A].dom, &bad, &c, NULL) == -FI_ENOSYS);

    /* A failed request counts as an error: a cancelled receive. */
    struct fi_context cx;
    uint64_t e0 = fi_cntr_readerr(n[B].rx);
    CHECK(fi_recv(n[B].ep, r0, S0, NULL, FI_ADDR_UNSPEC, &cx) == 0);
    CHECK(fi_cancel(&n[B].ep->fid, &cx) == 0);
    CHECK(fi_cntr_readerr(n[B].rx) == e0 + 1);
    CHECK(read_cq(n[B].rxcq, &e, &err) == -1 && err.err == FI_ECANCELED &&
          err.op_context == &cx);
}

/* A waiter sleeping in fi_cntr_wait is woken by a completion that comes
 * later, well before its timeout. */
struct waiter {
    uint64_t want;
    int rc;
    double took;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    double t0 = now_s();
    w->rc = fi_cntr_wait(n[B].rx, w->want, 20000);
    w->took = now_s() - t0;
    return NULL;
}

static void test_wait_wakes(void)
{
    static uint8_t s[256], r[256];
    fill(s, sizeof(s), 9);
    struct fi_context rc;
    struct waiter w = {.want = fi_cntr_read(n[B].rx) + 1, .rc = 1};
    CHECK(fi_recv(n[B].ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, &rc) == 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0);
    usleep(50000); /* the waiter is asleep by now */
    uint64_t tx0 = fi_cntr_read(n[A].tx);
    CHECK(fi_send(n[A].ep, s, sizeof(s), NULL, n[A].peer, NULL) == 0);
    double t0 = now_s();
    while (fi_cntr_read(n[A].tx) < tx0 + 1 && now_s() - t0 < 10)
        ; /* A's side only: B is the waiter's to progress */
    pthread_join(t, NULL);
    CHECK(w.rc == 0);
    CHECK(w.took < 15); /* woken, not timed out */
    CHECK(check_fill(r, sizeof(r), 9));
    struct fi_cq_data_entry e;
    struct fi_cq_err_entry err;
    CHECK(read_cq(n[B].rxcq, &e, &err) == 1 && e.op_context == &rc);
}

/* Poll sets: CQs with entries and counters that moved, nothing else. */
static void test_poll(void)
{
    struct fid_poll *ps;
    struct fi_poll_attr pa = {0};
    CHECK(fi_poll_open(n[B].dom, &pa, &ps) == 0);
    CHECK(fi_poll_add(ps, &n[B].rxcq->fid, 0) == 0);
    CHECK(fi_poll_add(ps, &n[B].rx->fid, 0) == 0);
    CHECK(fi_poll_add(ps, &n[B].rx->fid, 0) == -FI_EALREADY);
    CHECK(fi_poll_add(ps, &n[A].rx->fid, 0) == -FI_EINVAL); /* A's domain */
    void *ctx[8];
    CHECK(fi_poll(ps, ctx, 8) == 0);

    static uint8_t s[512], r[512];
    fill(s, sizeof(s), 5);
    struct fi_context rc;
    CHECK(fi_recv(n[B].ep, r, sizeof(r), NULL, FI_ADDR_UNSPEC, &rc) == 0);
    CHECK(fi_send(n[A].ep, s, sizeof(s), NULL, n[A].peer, NULL) == 0);
    int got_cq = 0, got_cntr = 0, other = 0;
    double t0 = now_s();
    while ((!got_cq || !got_cntr) && now_s() - t0 < 10) {
        int k = fi_poll(ps, ctx, 8);
        CHECK(k >= 0);
        for (int i = 0; i < k; i++) {
            if (ctx[i] == &n[B].rxcq)
                got_cq++;
            else if (ctx[i] == &n[B].rx)
                got_cntr++;
            else
                other++;
        }
        drive();
    }
    CHECK(got_cq >= 1 && got_cntr == 1 && other == 0);
    struct fi_cq_data_entry e;
    struct fi_cq_err_entry err;
    CHECK(read_cq(n[B].rxcq, &e, &err) == 1 && e.op_context == &rc);
    CHECK(check_fill(r, sizeof(r), 5));
    /* Read and unchanged: nothing to report. */
    CHECK(fi_poll(ps, ctx, 8) == 0);
    /* A listed counter cannot close; once removed it can. */
    struct fid_cntr *c;
    struct fi_cntr_attr ca = {.events = FI_CNTR_EVENTS_COMP};
    CHECK(fi_cntr_open(n[B].dom, &ca, &c, &c) == 0);
    CHECK(fi_poll_add(ps, &c->fid, 0) == 0);
    CHECK(fi_cntr_add(c, 1) == 0);
    CHECK(fi_poll(ps, ctx, 8) == 1 && ctx[0] == &c);
    CHECK(fi_close(&c->fid) == -FI_EBUSY);
    CHECK(fi_poll_del(ps, &c->fid, 0) == 0);
    CHECK(fi_poll_del(ps, &c->fid, 0) == -FI_ENOENT);
    CHECK(fi_close(&c->fid) == 0);
    CHECK(fi_close(&ps->fid) == 0);
}

/* Sends message seed of len bytes from A (inject-free, counted). */
static void send_seed(uint8_t *buf, size_t len, unsigned seed)
{
    fill(buf, len, seed);
    uint64_t tx0 = fi_cntr_read(n[A].tx);
    CHECK(fi_send(n[A].ep, buf, len, NULL, n[A].peer, NULL) == 0);
    CHECK(drive_until(n[A].tx, tx0 + 1));
}

static ssize_t post_multi(void *buf, size_t len, void *ctx)
{
    struct iovec iov = {buf, len};
    struct fi_msg m = {.msg_iov = &iov,
                       .iov_count = 1,
                       .addr = FI_ADDR_UNSPEC,
                       .context = ctx};
    return fi_recvmsg(n[B].ep, &m, FI_MULTI_RECV);
}

/* FI_MULTI_RECV: messages fill a buffer one after the other (some of them
 * unexpected before it is posted, some rendezvous); the last one to fit
 * carries FI_MULTI_RECV; a cancelled buffer says so too. */
static void test_multi_recv(void)
{
    size_t min = 1024, got = 0, len = sizeof(got);
    CHECK(fi_setopt(&n[B].ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
                    sizeof(min)) == 0);
    CHECK(fi_getopt(&n[B].ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &got,
                    &len) == 0 &&
          got == 1024);
    static uint8_t sbuf[12][25000];
    static uint8_t m1[8192], m2[50000], m3[4096];
    struct fi_context c1, c2, c3;
    /* Three arrive before the buffer is posted. */
    for (unsigned i = 0; i < 3; i++)
        send_seed(sbuf[i], 1000, 100 + i);
    CHECK(post_multi(m1, sizeof(m1), &c1) == 0);
    for (unsigned i = 3; i < 10; i++)
        send_seed(sbuf[i], 1000, 100 + i);
    /* 8 of 1000 bytes fit before less than 1024 is left. */
    struct fi_cq_data_entry e;
    struct fi_cq_err_entry err;
    for (unsigned i = 0; i < 8; i++) {
        int r = read_cq(n[B].rxcq, &e, &err);
        CHECK(r == 1);
        if (r != 1)
            break;
        CHECK(e.op_context == &c1 && e.len == 1000);
        CHECK(e.buf == m1 + i * 1000);
        CHECK(check_fill(m1 + i * 1000, 1000, 100 + i));
        CHECK(!!(e.flags & FI_MULTI_RECV) == (i == 7));
        CHECK(e.flags & FI_RECV);
    }
    CHECK(cq_empty(n[B].rxcq));
    /* The next buffer takes the two left over, two rendezvous messages
     * and a last eager one that leaves it less than 1024 bytes. */
    CHECK(post_multi(m2, sizeof(m2), &c2) == 0);
    static const size_t sz[3] = {20000, 25000, 2500};
    for (unsigned i = 0; i < 3; i++)
        send_seed(sbuf[10 + (i & 1)], sz[i], 200 + i);
    const size_t off[5] = {0, 1000, 2000, 22000, 47000};
    const size_t lens[5] = {1000, 1000, 20000, 25000, 2500};
    const unsigned seeds[5] = {108, 109, 200, 201, 202};
    int seen[5] = {0}, flagged = 0;
    for (unsigned k = 0; k < 5; k++) {
        int r = read_cq(n[B].rxcq, &e, &err);
        CHECK(r == 1);
        if (r != 1)
            break;
        CHECK(e.op_context == &c2);
        int which = -1;
        for (int j = 0; j < 5; j++)
            if (e.buf == m2 + off[j])
                which = j;
        CHECK(which >= 0);
        if (which < 0)
            continue;
        seen[which]++;
        CHECK(e.len == lens[which]);
        CHECK(check_fill(m2 + off[which], lens[which], seeds[which]));
        if (e.flags & FI_MULTI_RECV) {
            flagged++;
            CHECK(k == 4); /* released only after every part */
        }
    }
    CHECK(flagged == 1);
    for (int j = 0; j < 5; j++)
        CHECK(seen[j] == 1);
    CHECK(cq_empty(n[B].rxcq));
    /* A buffer cancelled before anything arrived. */
    CHECK(post_multi(m3, sizeof(m3), &c3) == 0);
    CHECK(fi_cancel(&n[B].ep->fid, &c3) == 0);
    CHECK(read_cq(n[B].rxcq, &e, &err) == -1 && err.err == FI_ECANCELED &&
          err.op_context == &c3 && (err.flags & FI_MULTI_RECV));
    /* Multi-receive takes one iov. */
    struct iovec two[2] = {{m3, 100}, {m3 + 100, 100}};
    struct fi_msg m = {.msg_iov = two,
                       .iov_count = 2,
                       .addr = FI_ADDR_UNSPEC,
                       .context = &c3};
    CHECK(fi_recvmsg(n[B].ep, &m, FI_MULTI_RECV) == -FI_EINVAL);
}

int main(int argc, char **argv)
{
    int autoprog = argc > 1 && !strcmp(argv[1], "auto");
    prov_keep_mapped();
    info = prov_getinfo(FI_MSG | FI_RMA | FI_MULTI_RECV, autoprog, &fabric);
    CHECK(info->caps & FI_MULTI_RECV);
    CHECK(info->rx_attr->caps & FI_MULTI_RECV);
    CHECK(!(info->tx_attr->caps & FI_MULTI_RECV));
    CHECK(info->domain_attr->cntr_cnt > 0);
    for (int i = 0; i < NEP; i++)
        open_node(i);
    CHECK(fi_av_insert(n[A].av, n[B].name, 1, &n[A].peer, 0, NULL) == 1);
    CHECK(fi_av_insert(n[B].av, n[A].name, 1, &n[B].peer, 0, NULL) == 1);

    test_counters();
    test_wait_wakes();
    test_poll();
    test_multi_recv();

    for (int i = 0; i < NEP; i++)
        close_node(i);
    CHECK(fi_close(&fabric->fid) == 0);
    fi_freeinfo(info);
    printf("test_prov_caps%s: %s\n", autoprog ? " auto" : "",
           failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
