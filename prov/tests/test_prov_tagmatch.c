/*
 * test_prov_tagmatch.c - the mroce provider's matching, through the
 * libfabric API, between endpoints in one process (three domains, one
 * endpoint each, talking over 127.0.0.1; manual progress, so the test
 * polls every endpoint while it waits).
 *
 * Cases: posted then unexpected; unexpected then posted (in arrival
 * order); tags with ignore bits and full wildcards; directed receives
 * (FI_DIRECTED_RECV) beside wildcard ones; FI_PEEK, FI_PEEK|FI_CLAIM then
 * FI_CLAIM, FI_PEEK of nothing (FI_ENOMSG); fi_cancel (FI_ECANCELED, and
 * the message then goes to the next receive); rendezvous-sized messages
 * both ways; truncation (FI_ETRUNC); FI_MSG with remote CQ data; an
 * endpoint sending to itself; RMA write, read and writedata; 300 sends
 * to a receiver that makes no calls meanwhile (its keeper thread keeps
 * the transport going); a send to an address nobody listens on;
 * fi_mr_reg of unmapped, wrapping and read-only memory, and rendezvous
 * sends from read-only memory.
 *
 * With the argument "auto" the endpoints use FI_PROGRESS_AUTO and
 * FI_THREAD_SAFE, and two threads send on one endpoint at once; with
 * "bound" only the unexpected-message bound is tested (see test_bound).
 *
 * Needs FI_PROVIDER_PATH to name the directory of libmroce-fi.so (CTest
 * sets it).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "prov_fi_test.h"
#include "threads.h"

enum { NEP = 3 };
struct node {
    struct prov_ep f;    /* domain, AV, CQs, endpoint, name */
    fi_addr_t peer[NEP]; /* fi_addr of every node in this node's AV */
    int tx_done, tx_err;
    void *seen[64]; /* contexts of recent transmit completions */
    unsigned nseen;
};
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct node n[NEP];

/* Drains every transmit CQ (which also drives that endpoint). */
static void drive(void)
{
    for (int i = 0; i < NEP; i++) {
        struct fi_cq_tagged_entry e[8];
        ssize_t r = fi_cq_read(n[i].f.txcq, e, 8);
        if (r > 0) {
            n[i].tx_done += (int)r;
            for (ssize_t k = 0; k < r; k++)
                n[i].seen[n[i].nseen++ % 64] = e[k].op_context;
        } else if (r == -FI_EAVAIL) {
            struct fi_cq_err_entry err = {0};
            fi_cq_readerr(n[i].f.txcq, &err, 0);
            fprintf(stderr, "node %d: tx error %s\n", i, fi_strerror(err.err));
            n[i].tx_err++;
        }
        /* Receive CQs are read by the test; an empty read still drives. */
    }
}

/* Waits for one receive completion at node i: 1 with *e (and *src), or
 * -err for an error entry (err in *ee). */
static int wait_rx(int i, struct fi_cq_tagged_entry *e, fi_addr_t *src,
                   struct fi_cq_err_entry *ee)
{
    double t0 = now_s();
    for (;;) {
        ssize_t r = fi_cq_readfrom(n[i].f.rxcq, e, 1, src);
        if (r == 1)
            return 1;
        if (r == -FI_EAVAIL) {
            memset(ee, 0, sizeof(*ee));
            fi_cq_readerr(n[i].f.rxcq, ee, 0);
            return -ee->err;
        }
        drive();
        if (now_s() - t0 > 10) {
            fprintf(stderr, "node %d: no receive completion in 10 s\n", i);
            exit(1);
        }
    }
}

/* No receive completion at node i for a while (nothing matched). */
static int rx_quiet(int i, double secs)
{
    double t0 = now_s();
    while (now_s() - t0 < secs) {
        struct fi_cq_tagged_entry e;
        ssize_t r = fi_cq_read(n[i].f.rxcq, &e, 1);
        if (r != -FI_EAGAIN)
            return 0;
        drive();
    }
    return 1;
}

static void wait_tx(int i, int count)
{
    double t0 = now_s();
    while (n[i].tx_done < count) {
        drive();
        if (now_s() - t0 > 10) {
            fprintf(stderr, "node %d: %d of %d sends completed\n", i,
                    n[i].tx_done, count);
            exit(1);
        }
    }
}

/* Waits for the transmit completion of the operation with context ctx. */
static void wait_ctx(int i, void *ctx)
{
    double t0 = now_s();
    for (;;) {
        for (unsigned k = 0; k < 64; k++)
            if (n[i].seen[k] == ctx) {
                n[i].seen[k] = NULL;
                return;
            }
        drive();
        if (now_s() - t0 > 10) {
            fprintf(stderr, "node %d: operation never completed\n", i);
            exit(1);
        }
    }
}

static void open_node(int i)
{
    prov_ep_open(&n[i].f, fabric, info, i == 1 ? FI_AV_MAP : FI_AV_TABLE);
}

static void close_node(int i)
{
    CHECK(prov_ep_close(&n[i].f) == 0);
}

#define A 0
#define B 1
#define C 2

static void tsend(int from, int to, const void *buf, size_t len, uint64_t tag)
{
    ssize_t r;
    while ((r = fi_tsend(n[from].f.ep, buf, len, NULL, n[from].peer[to], tag,
                         NULL)) == -FI_EAGAIN)
        drive();
    DIE_IF((int)r, "fi_tsend");
}

static void trecv(int at, void *buf, size_t len, fi_addr_t src, uint64_t tag,
                  uint64_t ignore, void *ctx)
{
    DIE_IF((int)fi_trecv(n[at].f.ep, buf, len, NULL, src, tag, ignore, ctx),
           "fi_trecv");
}

/* Peeks at node `at` until a message with (tag, ignore) is there. */
static void wait_unexp(int at, uint64_t tag, uint64_t ignore)
{
    double t0 = now_s();
    for (;;) {
        struct fi_context ctx;
        struct fi_msg_tagged m = {.addr = FI_ADDR_UNSPEC,
                                  .tag = tag,
                                  .ignore = ignore,
                                  .context = &ctx};
        DIE_IF((int)fi_trecvmsg(n[at].f.ep, &m, FI_PEEK), "peek");
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry ee;
        fi_addr_t src;
        int r = wait_rx(at, &e, &src, &ee);
        if (r == 1)
            return;
        CHECK(r == -FI_ENOMSG);
        if (now_s() - t0 > 10) {
            fprintf(stderr, "message never arrived\n");
            exit(1);
        }
    }
}

static void test_posted_then_unexpected(void)
{
    char buf[64] = {0};
    int ctx;
    trecv(B, buf, sizeof(buf), FI_ADDR_UNSPEC, 0x1234, 0, &ctx);
    tsend(A, B, "hello", 6, 0x1234);
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    fi_addr_t src = 0;
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.op_context == &ctx);
    CHECK(e.tag == 0x1234 && e.len == 6 && !strcmp(buf, "hello"));
    CHECK((e.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED));
    CHECK(src == n[B].peer[A]);
}

static void test_unexpected_then_posted(void)
{
    tsend(A, B, "one", 4, 0x55);
    tsend(A, B, "two", 4, 0x56);
    tsend(A, B, "three", 6, 0x55);
    wait_tx(A, n[A].tx_done + 0); /* drive */
    wait_unexp(B, 0x56, 0);       /* all three are at B by now (in order) */
    const char *want[3] = {"one", "three", "two"};
    uint64_t tags[3] = {0x55, 0x55, 0x56};
    for (int i = 0; i < 3; i++) {
        char buf[16] = {0};
        trecv(B, buf, sizeof(buf), FI_ADDR_UNSPEC, tags[i], 0, NULL);
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry ee;
        fi_addr_t src;
        CHECK(wait_rx(B, &e, &src, &ee) == 1);
        CHECK(!strcmp(buf, want[i]) && e.tag == tags[i]);
        CHECK(src == n[B].peer[A]);
    }
}

static void test_wildcards(void)
{
    char b1[16] = {0}, b2[16] = {0}, b3[16] = {0};
    int c1, c2, c3;
    trecv(B, b1, sizeof(b1), FI_ADDR_UNSPEC, 0x100, 0xff, &c1);
    trecv(B, b2, sizeof(b2), FI_ADDR_UNSPEC, 0x200, 0xff, &c2);
    trecv(B, b3, sizeof(b3), FI_ADDR_UNSPEC, 0, ~0ull, &c3);
    tsend(A, B, "x2ab", 5, 0x2ab); /* -> c2 (0x200/0xff) */
    tsend(A, B, "x1cd", 5, 0x1cd); /* -> c1 */
    tsend(A, B, "xfff", 5, 0xfff); /* -> c3 (anything) */
    int seen = 0;
    for (int i = 0; i < 3; i++) {
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry ee;
        fi_addr_t src;
        CHECK(wait_rx(B, &e, &src, &ee) == 1);
        if (e.op_context == &c1) {
            CHECK(e.tag == 0x1cd && !strcmp(b1, "x1cd"));
            seen |= 1;
        } else if (e.op_context == &c2) {
            CHECK(e.tag == 0x2ab && !strcmp(b2, "x2ab"));
            seen |= 2;
        } else if (e.op_context == &c3) {
            CHECK(e.tag == 0xfff && !strcmp(b3, "xfff"));
            seen |= 4;
        }
    }
    CHECK(seen == 7);
}

static void test_directed(void)
{
    char bc[16] = {0}, bany[16] = {0};
    int cc, cany;
    trecv(B, bc, sizeof(bc), n[B].peer[C], 7, 0, &cc);
    trecv(B, bany, sizeof(bany), FI_ADDR_UNSPEC, 7, 0, &cany);
    tsend(A, B, "fromA", 6, 7); /* skips the receive directed at C */
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    fi_addr_t src;
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.op_context == &cany && !strcmp(bany, "fromA"));
    CHECK(src == n[B].peer[A]);
    tsend(C, B, "fromC", 6, 7);
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.op_context == &cc && !strcmp(bc, "fromC"));
    CHECK(src == n[B].peer[C]);
    /* Unexpected side: a receive directed at C must not take A's message. */
    tsend(A, B, "A2", 3, 8);
    wait_unexp(B, 8, 0);
    char b[8] = {0};
    trecv(B, b, sizeof(b), n[B].peer[C], 8, 0, &cc);
    CHECK(rx_quiet(B, 0.2));
    tsend(C, B, "C2", 3, 8);
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.op_context == &cc && !strcmp(b, "C2") && src == n[B].peer[C]);
    trecv(B, b, sizeof(b), n[B].peer[A], 8, 0, &cany);
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.op_context == &cany && !strcmp(b, "A2"));
}

static void test_peek_claim(void)
{
    struct fi_context ctx;
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    fi_addr_t src;
    /* Peek of nothing. */
    struct fi_msg_tagged m = {.addr = FI_ADDR_UNSPEC,
                              .tag = 0x4242,
                              .context = &ctx};
    DIE_IF((int)fi_trecvmsg(n[B].f.ep, &m, FI_PEEK), "peek");
    CHECK(wait_rx(B, &e, &src, &ee) == -FI_ENOMSG);
    CHECK(ee.op_context == &ctx);

    tsend(A, B, "peekme", 7, 0x77);
    wait_unexp(B, 0x77, 0);
    /* Peek again: still there (peek does not consume); reports the size. */
    m.tag = 0x77;
    DIE_IF((int)fi_trecvmsg(n[B].f.ep, &m, FI_PEEK), "peek");
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.len == 7 && e.tag == 0x77 && src == n[B].peer[A]);
    /* Peek and claim, then an ordinary receive cannot take it... */
    DIE_IF((int)fi_trecvmsg(n[B].f.ep, &m, FI_PEEK | FI_CLAIM), "peek+claim");
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    char other[16];
    int oc;
    trecv(B, other, sizeof(other), FI_ADDR_UNSPEC, 0x77, 0, &oc);
    CHECK(rx_quiet(B, 0.2));
    DIE_IF((int)fi_cancel(&n[B].f.ep->fid, &oc), "cancel");
    CHECK(wait_rx(B, &e, &src, &ee) == -FI_ECANCELED);
    /* ...but the claim delivers it. */
    char buf[16] = {0};
    struct iovec iov = {buf, sizeof(buf)};
    struct fi_msg_tagged cm = {.msg_iov = &iov,
                               .iov_count = 1,
                               .addr = FI_ADDR_UNSPEC,
                               .tag = 0x77,
                               .context = &ctx};
    DIE_IF((int)fi_trecvmsg(n[B].f.ep, &cm, FI_CLAIM), "claim");
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.op_context == &ctx && !strcmp(buf, "peekme") && e.len == 7);
    /* Peek + claim + discard. */
    tsend(A, B, "drop", 5, 0x78);
    wait_unexp(B, 0x78, 0);
    m.tag = 0x78;
    DIE_IF((int)fi_trecvmsg(n[B].f.ep, &m, FI_PEEK | FI_CLAIM), "peek+claim");
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    struct fi_msg_tagged dm = {.addr = FI_ADDR_UNSPEC,
                               .tag = 0x78,
                               .context = &ctx};
    DIE_IF((int)fi_trecvmsg(n[B].f.ep, &dm, FI_CLAIM | FI_DISCARD), "discard");
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    DIE_IF((int)fi_trecvmsg(n[B].f.ep, &m, FI_PEEK), "peek");
    CHECK(wait_rx(B, &e, &src, &ee) == -FI_ENOMSG);
}

static void test_cancel(void)
{
    char b1[16], b2[16] = {0};
    int c1, c2;
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    fi_addr_t src;
    trecv(B, b1, sizeof(b1), FI_ADDR_UNSPEC, 0x999, 0, &c1);
    DIE_IF((int)fi_cancel(&n[B].f.ep->fid, &c1), "fi_cancel");
    CHECK(wait_rx(B, &e, &src, &ee) == -FI_ECANCELED);
    CHECK(ee.op_context == &c1 && (ee.flags & FI_TAGGED));
    CHECK(fi_cancel(&n[B].f.ep->fid, &c1) == -FI_ENOENT);
    tsend(A, B, "late", 5, 0x999); /* must not land in the cancelled one */
    wait_unexp(B, 0x999, 0);
    trecv(B, b2, sizeof(b2), FI_ADDR_UNSPEC, 0x999, 0, &c2);
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.op_context == &c2 && !strcmp(b2, "late"));
}

static void fill(unsigned char *p, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(seed + i * 31 + (i >> 9) + (i >> 17) * 13);
}

static void test_large(void)
{
    size_t len = 1 << 20;
    unsigned char *s = malloc(len), *r = malloc(len);
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    fi_addr_t src;
    /* Expected: receive posted first. */
    fill(s, len, 1);
    memset(r, 0, len);
    int before = n[A].tx_done;
    trecv(B, r, len, FI_ADDR_UNSPEC, 0xb16, 0, NULL);
    tsend(A, B, s, len, 0xb16);
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.len == len && !memcmp(s, r, len));
    wait_tx(A, before + 1);
    /* Unexpected: the RTS waits until the receive is posted. */
    fill(s, len, 2);
    memset(r, 0, len);
    tsend(A, B, s, len, 0xb17);
    wait_unexp(B, 0xb17, 0);
    trecv(B, r, len, FI_ADDR_UNSPEC, 0xb17, 0, NULL);
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(e.len == len && !memcmp(s, r, len) && src == n[B].peer[A]);
    wait_tx(A, before + 2);
    /* Truncation, eager and rendezvous. */
    char small[10];
    tsend(A, B, s, 100, 0x7a);
    trecv(B, small, sizeof(small), FI_ADDR_UNSPEC, 0x7a, 0, NULL);
    CHECK(wait_rx(B, &e, &src, &ee) == -FI_ETRUNC);
    CHECK(ee.olen == 90 && !memcmp(small, s, 10));
    tsend(A, B, s, len, 0x7b);
    trecv(B, r, 1000, FI_ADDR_UNSPEC, 0x7b, 0, NULL);
    CHECK(wait_rx(B, &e, &src, &ee) == -FI_ETRUNC);
    CHECK(ee.olen == len - 1000 && !memcmp(r, s, 1000));
    wait_tx(A, before + 4);
    /* A rendezvous read in several READs (FI_MROCE_RNDV_SEG) whose
     * slices cross the receive's iov boundaries: a message longer than
     * 1 MiB into three uneven iovs, whole, then truncated. */
    size_t big = len + 12345, cut[3] = {100001, 600000, 300000};
    unsigned char *s2 = malloc(big), *r2 = malloc(big);
    for (int trunc = 0; trunc < 2; trunc++) {
        size_t room = trunc ? cut[0] + cut[1] + cut[2] : big;
        struct iovec iov[3] = {{r2, cut[0]},
                               {r2 + cut[0], cut[1]},
                               {r2 + cut[0] + cut[1], room - cut[0] - cut[1]}};
        fill(s2, big, 3 + trunc);
        memset(r2, 0, big);
        struct fi_msg_tagged m = {.msg_iov = iov,
                                  .iov_count = 3,
                                  .addr = FI_ADDR_UNSPEC,
                                  .tag = 0x5e6};
        DIE_IF((int)fi_trecvmsg(n[B].f.ep, &m, 0), "fi_trecvmsg");
        tsend(A, B, s2, big, 0x5e6);
        int r3 = wait_rx(B, &e, &src, &ee);
        if (trunc)
            CHECK(r3 == -FI_ETRUNC && ee.olen == big - room);
        else
            CHECK(r3 == 1 && e.len == big);
        CHECK(!memcmp(s2, r2, room));
        wait_tx(A, before + 5 + trunc);
    }
    free(s2);
    free(r2);
    free(s);
    free(r);
}

static void test_msg_data(void)
{
    char buf[32] = {0};
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    fi_addr_t src;
    DIE_IF((int)fi_recv(n[B].f.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
                        NULL),
           "fi_recv");
    ssize_t r;
    while ((r = fi_senddata(n[A].f.ep, "msg", 4, NULL, 0xcafe, n[A].peer[B],
                            NULL)) == -FI_EAGAIN)
        drive();
    DIE_IF((int)r, "fi_senddata");
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(!strcmp(buf, "msg") && (e.flags & FI_MSG) &&
          (e.flags & FI_REMOTE_CQ_DATA) && e.data == 0xcafe);
    /* A tagged receive must not take an untagged message and vice versa. */
    char tb[8];
    trecv(B, tb, sizeof(tb), FI_ADDR_UNSPEC, 0, ~0ull, NULL);
    DIE_IF((int)fi_inject(n[A].f.ep, "m2", 3, n[A].peer[B]), "fi_inject");
    CHECK(rx_quiet(B, 0.2));
    DIE_IF((int)fi_recv(n[B].f.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC,
                        NULL),
           "fi_recv");
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(!strcmp(buf, "m2") && (e.flags & FI_MSG));
    tsend(A, B, "t", 2, 1);
    CHECK(wait_rx(B, &e, &src, &ee) == 1);
    CHECK(!strcmp(tb, "t") && (e.flags & FI_TAGGED));
    /* FI_LOCAL_COMM: an endpoint sending to itself. */
    char self[8] = {0};
    trecv(A, self, sizeof(self), n[A].peer[A], 0x5e1f, 0, NULL);
    tsend(A, A, "self", 5, 0x5e1f);
    CHECK(wait_rx(A, &e, &src, &ee) == 1);
    CHECK(!strcmp(self, "self") && src == n[A].peer[A]);
}

static void test_rma(void)
{
    size_t len = 256 * 1024;
    unsigned char *tgt = calloc(1, len), *src = malloc(len),
                  *back = malloc(len);
    struct fid_mr *mr;
    DIE_IF(fi_mr_reg(n[B].f.dom, tgt, len, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                     0, 0, &mr, NULL),
           "fi_mr_reg");
    uint64_t key = fi_mr_key(mr);
    fill(src, len, 9);
    int cw, cr, cd;
    DIE_IF((int)fi_write(n[A].f.ep, src, len, NULL, n[A].peer[B],
                         (uintptr_t)tgt, key, &cw),
           "fi_write");
    wait_ctx(A, &cw);
    CHECK(!memcmp(tgt, src, len));
    memset(back, 0, len);
    DIE_IF((int)fi_read(n[A].f.ep, back, len, NULL, n[A].peer[B],
                        (uintptr_t)tgt, key, &cr),
           "fi_read");
    wait_ctx(A, &cr);
    CHECK(!memcmp(back, src, len));
    DIE_IF((int)fi_writedata(n[A].f.ep, src, 64, NULL, 0x5eed, n[A].peer[B],
                             (uintptr_t)tgt + 64, key, &cd),
           "fi_writedata");
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    fi_addr_t from;
    CHECK(wait_rx(B, &e, &from, &ee) == 1);
    CHECK((e.flags & FI_REMOTE_CQ_DATA) && e.data == 0x5eed &&
          from == n[B].peer[A]);
    wait_ctx(A, &cd);
    CHECK(fi_close(&mr->fid) == 0);
    free(tgt);
    free(src);
    free(back);
}

/* The receiver makes no call for a while (an MPI rank computing) while
 * 300 messages arrive: its keeper thread must ACK them and keep receive
 * buffers posted, so every send completes; then all are received, in
 * order. */
/* fi_mr_reg refuses memory that is not there with the rights asked
 * (SEM-28): -FI_EFAULT unmapped or wrapping, -FI_EACCES for a right that
 * writes into read-only memory; read-only memory registers for sending
 * and remote reads, and a rendezvous send from it (registered by the
 * provider per operation, and through its own MR) arrives intact. */
static void test_mr_checks(void)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = 64 * 1024;
    unsigned char *p = mmap(NULL, len + pg, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    DIE_IF(p == MAP_FAILED, "mmap");
    unsigned char *ro = p, *gone = p + len;
    fill(ro, len, 5);
    CHECK(mprotect(ro, len, PROT_READ) == 0);
    CHECK(munmap(gone, pg) == 0);
    struct fid_mr *mr = NULL;
    struct fid_domain *d = n[B].f.dom;
    CHECK(fi_mr_reg(d, gone, pg, FI_REMOTE_READ, 0, 0, 0, &mr, NULL) ==
          -FI_EFAULT);
    CHECK(fi_mr_reg(d, ro, len + pg, FI_SEND, 0, 0, 0, &mr, NULL) ==
          -FI_EFAULT);
    CHECK(fi_mr_reg(d, ro, SIZE_MAX, FI_REMOTE_READ, 0, 0, 0, &mr, NULL) ==
          -FI_EFAULT);
    CHECK(fi_mr_reg(d, ro, len, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL) ==
          -FI_EACCES);
    CHECK(fi_mr_reg(d, ro, len, FI_RECV, 0, 0, 0, &mr, NULL) == -FI_EACCES);
    CHECK(fi_mr_reg(d, ro, len, FI_READ, 0, 0, 0, &mr, NULL) == -FI_EACCES);
    mr = NULL;
    CHECK(fi_mr_reg(n[A].f.dom, ro, len, FI_SEND | FI_REMOTE_READ, 0, 0, 0, &mr,
                    NULL) == 0);
    unsigned char *r = calloc(1, len);
    struct fi_cq_tagged_entry e;
    struct fi_cq_err_entry ee;
    fi_addr_t src;
    for (int round = 0; round < 2 && r; round++) {
        int before = n[A].tx_done;
        memset(r, 0, len);
        trecv(B, r, len, FI_ADDR_UNSPEC, 0x40 + (uint64_t)round, 0, NULL);
        ssize_t rc;
        void *desc = round && mr ? fi_mr_desc(mr) : NULL;
        while ((rc = fi_tsend(n[A].f.ep, ro, len, desc, n[A].peer[B],
                              0x40 + (uint64_t)round, NULL)) == -FI_EAGAIN)
            drive();
        CHECK(rc == 0);
        if (rc == 0) {
            CHECK(wait_rx(B, &e, &src, &ee) == 1);
            CHECK(e.len == len && !memcmp(ro, r, len));
            wait_tx(A, before + 1);
        }
    }
    if (mr)
        CHECK(fi_close(&mr->fid) == 0);
    free(r);
    CHECK(munmap(p, len) == 0);
}

static void test_receiver_away(void)
{
    enum { M = 300 };
    static char bufs[M][16];
    char msg[16];
    int ctx[M];
    int done = 0;
    for (int i = 0; i < M; i++) {
        snprintf(msg, sizeof(msg), "w%d", i);
        ssize_t r;
        while ((r = fi_tsend(n[A].f.ep, msg, strlen(msg) + 1, NULL,
                             n[A].peer[B], 0x700, &ctx[i])) == -FI_EAGAIN) {
            struct fi_cq_tagged_entry e[8];
            ssize_t k = fi_cq_read(n[A].f.txcq, e, 8); /* only A: B is away */
            if (k > 0)
                done += (int)k;
        }
        DIE_IF((int)r, "fi_tsend");
    }
    double t0 = now_s();
    while (done < M && now_s() - t0 < 10) {
        struct fi_cq_tagged_entry e[8];
        ssize_t r = fi_cq_read(n[A].f.txcq, e, 8);
        if (r > 0)
            done += (int)r;
        else if (r == -FI_EAVAIL) {
            struct fi_cq_err_entry ee = {0};
            fi_cq_readerr(n[A].f.txcq, &ee, 0);
            fprintf(stderr, "send failed while the receiver was away: %s\n",
                    fi_strerror(ee.err));
            CHECK(0);
            return;
        }
    }
    if (done != M)
        fprintf(stderr, "receiver away: %d of %d sends completed\n", done, M);
    CHECK(done == M);
    for (int i = 0; i < M; i++)
        trecv(B, bufs[i], sizeof(bufs[i]), FI_ADDR_UNSPEC, 0x700, 0, bufs[i]);
    for (int i = 0; i < M; i++) {
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry ee;
        fi_addr_t src;
        CHECK(wait_rx(B, &e, &src, &ee) == 1);
        snprintf(msg, sizeof(msg), "w%d", i);
        CHECK(e.op_context == bufs[i] && !strcmp(bufs[i], msg));
    }
}

/* Voluntary context switches of every thread of this process named
 * `name` (each nanosleep of a sleeping thread is one), summed, and how
 * many such threads there are (in *count). */
static long thread_wakes(const char *name, int *count)
{
    pid_t tids[16];
    int found = threads_named(name, tids, 16);
    *count = found < 0 ? 0 : found < 16 ? found : 16;
    if (found < 0)
        return -1;
    long sum = 0;
    for (int i = 0; i < *count; i++) {
        char path[64], line[128];
        snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tids[i]);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof(line), f))
            if (!strncmp(line, "voluntary_ctxt_switches:", 24))
                sum += atol(line + 24);
        fclose(f);
    }
    return sum;
}

/* While the application polls, the keeper thread wakes once every two of
 * its periods (FI_MROCE_KEEPER_US, 500 us by default), not every period:
 * each wake-up takes a core from a busy-polling process on a small host.
 * It used to sleep two naps of one period each (wake-ups every 500 us).
 * Here all three endpoints poll for 300 ms: ~300 wake-ups a keeper, 600
 * before.  (A loaded host only stretches the naps: fewer wake-ups.) */
static void test_keeper_wakes(void)
{
    const char *e = getenv("FI_MROCE_KEEPER_US");
    double period = (e && *e ? atof(e) : 500) * 1e-6, secs = 0.3;
    if (period <= 0)
        return; /* no keeper */
    int k0 = 0, k1 = 0;
    long w0 = thread_wakes("mroce-keeper", &k0);
    double t0 = now_s();
    while (now_s() - t0 < secs)
        for (int i = 0; i < NEP; i++) {
            struct fi_cq_tagged_entry x;
            (void)fi_cq_read(n[i].f.rxcq, &x, 1);
        }
    double el = now_s() - t0;
    long w1 = thread_wakes("mroce-keeper", &k1);
    CHECK(k0 == NEP && k1 == NEP);
    double per = k1 ? (double)(w1 - w0) / k1 : 0, old = el / period;
    printf("keeper: %.0f wake-ups each in %.0f ms of polling (%.0f at one "
           "a period)\n",
           per, el * 1e3, old);
    CHECK(per < 0.75 * old);
}

/* A send to an address where nobody listens fails with an error entry
 * (ICMP port unreachable, or the handshake timing out), and the endpoint
 * goes on working. */
static void test_unreachable(void)
{
    struct sockaddr_storage ss;
    memcpy(&ss, n[C].f.name, n[C].f.namelen);
    struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
    if (sin->sin_family != AF_INET)
        return;
    /* A port just free (bound and released), so no other process's
     * device answers there. */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in tmp = {.sin_family = AF_INET};
    tmp.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t tl = sizeof(tmp);
    if (fd < 0 || bind(fd, (struct sockaddr *)&tmp, sizeof(tmp)) ||
        getsockname(fd, (struct sockaddr *)&tmp, &tl)) {
        CHECK(0);
        return;
    }
    close(fd);
    sin->sin_port = tmp.sin_port;
    fi_addr_t dead;
    CHECK(fi_av_insert(n[A].f.av, &ss, 1, &dead, 0, NULL) == 1);
    int ctx;
    ssize_t rc = fi_tsend(n[A].f.ep, "void", 5, NULL, dead, 1, &ctx);
    double t0 = now_s();
    struct fi_cq_err_entry ee = {0};
    if (rc == -FI_EHOSTUNREACH) {
        /* Failed at once (the progress thread saw the ICMP error). */
        ee.op_context = &ctx;
        ee.err = FI_EIO;
    } else {
        DIE_IF((int)rc, "fi_tsend");
    }
    while (rc == 0) {
        struct fi_cq_tagged_entry e;
        ssize_t r = fi_cq_read(n[A].f.txcq, &e, 1);
        if (r == -FI_EAVAIL) {
            fi_cq_readerr(n[A].f.txcq, &ee, 0);
            break;
        }
        CHECK(r != 1 || e.op_context != &ctx);
        if (now_s() - t0 > 10) {
            CHECK(0);
            return;
        }
    }
    CHECK(ee.op_context == &ctx && ee.err == FI_EIO);
    char buf[8] = {0};
    trecv(B, buf, sizeof(buf), FI_ADDR_UNSPEC, 2, 0, NULL);
    tsend(A, B, "alive", 6, 2);
    struct fi_cq_tagged_entry e;
    fi_addr_t src;
    CHECK(wait_rx(B, &e, &src, &ee) == 1 && !strcmp(buf, "alive"));
}

/* FI_THREAD_SAFE: two threads send on one endpoint while the main thread
 * receives on another; per-thread order and every byte must survive. */
enum { TM = 200 };
static void *sender(void *arg)
{
    int t = (int)(intptr_t)arg;
    char msg[16];
    for (int i = 0; i < TM; i++) {
        snprintf(msg, sizeof(msg), "%d:%d", t, i);
        ssize_t r;
        while ((r = fi_tinject(n[A].f.ep, msg, strlen(msg) + 1, n[A].peer[B],
                               0x800 + (uint64_t)t)) == -FI_EAGAIN) {
            struct fi_cq_tagged_entry e[8];
            (void)fi_cq_read(n[A].f.txcq, e, 8);
        }
        if (r) {
            fprintf(stderr, "thread %d: fi_tinject: %s\n", t,
                    fi_strerror((int)-r));
            failures++;
            break;
        }
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        pthread_create(&th[t], NULL, sender, (void *)(intptr_t)t);
    int next[2] = {0, 0};
    for (int i = 0; i < 2 * TM; i++) {
        char buf[16] = {0};
        trecv(B, buf, sizeof(buf), FI_ADDR_UNSPEC, 0x800, 1, NULL);
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry ee;
        fi_addr_t src;
        CHECK(wait_rx(B, &e, &src, &ee) == 1);
        int t = (int)(e.tag - 0x800), k = -1;
        CHECK(t == 0 || t == 1);
        if (t != 0 && t != 1)
            break;
        CHECK(sscanf(buf, "%*d:%d", &k) == 1 && k == next[t]);
        next[t]++;
    }
    for (int t = 0; t < 2; t++)
        pthread_join(th[t], NULL);
}

/* Run with FI_MROCE_UNEXP_MAX=4 FI_MROCE_RX_DEPTH=4: a burst of 40
 * messages nobody expects fills the bound, the receiver stops reposting
 * and the sender is held back by RNR; once receives are posted everything
 * arrives, in order, and no send fails. */
static void test_bound(void)
{
    enum { M = 40 };
    char bufs[M][16];
    char msg[16];
    for (int i = 0; i < M; i++) {
        snprintf(msg, sizeof(msg), "m%d", i);
        tsend(A, B, msg, strlen(msg) + 1, 0x600);
    }
    double t0 = now_s();
    while (now_s() - t0 < 0.002)
        drive(); /* let the burst hit the bound */
    for (int i = 0; i < M; i++)
        trecv(B, bufs[i], sizeof(bufs[i]), FI_ADDR_UNSPEC, 0x600, 0, bufs[i]);
    for (int i = 0; i < M; i++) {
        struct fi_cq_tagged_entry e;
        struct fi_cq_err_entry ee;
        fi_addr_t src;
        CHECK(wait_rx(B, &e, &src, &ee) == 1);
        snprintf(msg, sizeof(msg), "m%d", i);
        CHECK(e.op_context == bufs[i] && !strcmp(bufs[i], msg));
    }
}

int main(int argc, char **argv)
{
    int bound = argc > 1 && !strcmp(argv[1], "bound");
    /* "noclose": traffic, then exit with every fabric object open, as a
     * crashing or careless application does.  libfabric unloads the
     * provider at exit while its threads (progress, ACK watchdog) still
     * run; the provider must keep itself mapped (-z nodelete), so this
     * mode must not pin it the way the next lines do. */
    int noclose = argc > 1 && !strcmp(argv[1], "noclose");
    int autoprog = noclose || (argc > 1 && !strcmp(argv[1], "auto"));
    /* Keep the provider mapped after libfabric unloads it at exit, so
     * that leak reports (sanitized builds) can name its functions. */
    if (!noclose)
        prov_keep_mapped();
    /* With autoprog, the same cases with the provider's progress thread
     * running beside the test's own polling (and FI_THREAD_SAFE locking). */
    info = prov_getinfo(FI_MSG | FI_TAGGED | FI_RMA | FI_DIRECTED_RECV,
                        autoprog, &fabric);
    for (int i = 0; i < NEP; i++)
        open_node(i);
    for (int i = 0; i < NEP; i++)
        for (int j = 0; j < NEP; j++)
            CHECK(fi_av_insert(n[i].f.av, n[j].f.name, 1, &n[i].peer[j], 0,
                               NULL) == 1);

    if (noclose) {
        test_posted_then_unexpected();
        test_large();
        printf("test_prov_tagmatch noclose: exiting with everything open\n");
        return failures ? 1 : 0;
    }
    if (bound) {
        test_bound();
    } else {
        test_posted_then_unexpected();
        test_unexpected_then_posted();
        test_wildcards();
        test_directed();
        test_peek_claim();
        test_cancel();
        test_large();
        test_msg_data();
        test_rma();
        test_mr_checks();
        test_receiver_away();
        test_unreachable();
        if (!autoprog)
            test_keeper_wakes();
        if (autoprog)
            test_threads();
    }
    double t0 = now_s();
    while (now_s() - t0 < 0.05)
        drive(); /* remaining send completions */
    for (int i = 0; i < NEP; i++)
        CHECK(n[i].tx_err == 0);

    for (int i = 0; i < NEP; i++)
        close_node(i);
    CHECK(fi_close(&fabric->fid) == 0);
    fi_freeinfo(info);
    if (failures) {
        fprintf(stderr, "test_prov_tagmatch: %d failures\n", failures);
        return 1;
    }
    printf("test_prov_tagmatch: ok\n");
    return 0;
}
