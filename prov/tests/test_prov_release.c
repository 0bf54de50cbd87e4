/*
 * test_prov_release.c - a buffer is never touched after its completion:
 * every send, RMA and receive buffer is made inaccessible (mprotect
 * PROT_NONE) the moment its completion is read, while the transport runs
 * under packet loss and reordering, so a retransmission (or a late packet)
 * that still reads or writes one crashes the test.
 *
 * Two endpoints in one process, one sender and one receiver over
 * 127.0.0.1 (manual progress unless "auto": the test drives both).  The
 * sender's operations rotate through the ways a buffer reaches the
 * provider: fi_tsend and fi_send of rendezvous sizes (the receiver READs
 * the buffer in place, in one READ or in slices), fi_tsendv of two iovs
 * (the provider's contiguous copy), fi_tsend with the desc of an fi_mr the
 * application registered (closed right after the completion: it must not
 * be busy), eager sends, fi_write and fi_read; fi_tsend and fi_write from
 * read-only memory (the provider asks for no rights it does not use).  Up
 * to WINDOW operations are in flight; each buffer of a ring of NBUF stays
 * PROT_NONE until the ring comes back to it, so a late access has a long
 * time to land on one.  The receiver checks every message's bytes and
 * protects each receive buffer the same way.
 *
 * Faults: MROCE_FAULT (default "tx:drop=0.01;rx:reorder=0.02" when the
 * environment sets none) acts on both endpoints.  Arguments: the number of
 * operations (default 4000), then "auto" for FI_PROGRESS_AUTO (the
 * provider's progress thread runs beside the test's polling).
 *
 * Needs FI_PROVIDER_PATH to name the directory of libmroce-fi.so (CTest
 * sets it).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/mman.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "prov_fi_test.h"

enum { S, R, NNODE };
enum { NBUF = 25, WINDOW = 6, BUF_MAX = 1 << 20, RMA_LEN = 256 << 10 };

/* The ways an operation's buffer reaches the provider, in rotation. */
enum kind {
    K_TSEND,
    K_SEND,
    K_TSENDV,
    K_DESC,
    K_EAGER,
    K_WRITE,
    K_READ,
    K_BIG,
    NKIND
};
static const char *const kind_name[NKIND] = {"tsend",  "send",
                                             "tsendv", "tsend+desc",
                                             "eager",  "write",
                                             "read",   "tsend 1 MiB"};

struct node {
    struct prov_ep f; /* domain, AV, CQs, endpoint, name */
    fi_addr_t peer;
};
static struct fi_info *info;
static struct fid_fabric *fabric;
static struct node n[NNODE];

/* One ring slot: a page-aligned mapping of BUF_MAX bytes. */
struct slot {
    unsigned char *p;
    int busy; /* an operation on it has not completed */
    enum kind kind;
    size_t len;
    uint64_t seq;
    struct fid_mr *mr; /* K_DESC: the application's registration */
};
static struct slot sbuf[NBUF], rbuf[NBUF];
static int tx_out, rx_out;
static uint64_t tx_done, rx_done, rx_bytes;
static unsigned char *target; /* the receiver's RMA region */
static struct fid_mr *target_mr;
static uint64_t target_key;

/* Says which buffer a stray access hit, then lets the handler that was
 * there before (the default, or the sanitizer's report) take the fault. */
static struct sigaction old_segv;
static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    static const char msg[] =
        "test_prov_release: SIGSEGV: the provider or libmroce touched a "
        "buffer after its completion\n";
    unsigned char *a = si->si_addr;
    for (int i = 0; i < NBUF; i++)
        if ((a >= sbuf[i].p && a < sbuf[i].p + BUF_MAX) ||
            (a >= rbuf[i].p && a < rbuf[i].p + BUF_MAX)) {
            ssize_t w = write(2, msg, sizeof(msg) - 1);
            (void)w;
            break;
        }
    sigaction(sig, &old_segv, NULL);
}

static void protect(struct slot *s, int on)
{
    if (mprotect(s->p, BUF_MAX, on ? PROT_NONE : PROT_READ | PROT_WRITE)) {
        perror("mprotect");
        exit(1);
    }
}

static unsigned char pattern(uint64_t seq, size_t i)
{
    return (unsigned char)(seq * 131 + i * 7 + (i >> 12));
}

/* The sender's completions: the buffer becomes inaccessible at once. */
static void tx_complete(struct slot *s)
{
    if (s->kind == K_READ)
        for (size_t i = 0; i < s->len; i++)
            if (s->p[i] != (unsigned char)(i * 13 + 5)) {
                fprintf(stderr,
                        "read %llu: byte %zu is 0x%02x, not 0x%02x "
                        "(target now 0x%02x)\n",
                        (unsigned long long)s->seq, i, s->p[i],
                        (unsigned char)(i * 13 + 5), target[i]);
                failures++;
                break;
            }
    if (s->mr) {
        /* Nothing of the provider's may still hold the application's
         * registration once the send that used it has completed. */
        CHECK(fi_close(&s->mr->fid) == 0);
        s->mr = NULL;
    }
    protect(s, 1);
    s->busy = 0;
    tx_out--;
    tx_done++;
}

static void rx_complete(struct slot *s, const struct fi_cq_tagged_entry *e)
{
    uint64_t seq;
    memcpy(&seq, s->p, sizeof(seq));
    CHECK(e->len >= sizeof(seq));
    for (size_t i = sizeof(seq); i < e->len; i++)
        if (s->p[i] != pattern(seq, i)) {
            fprintf(stderr, "message %llu (%zu bytes): byte %zu differs\n",
                    (unsigned long long)seq, (size_t)e->len, i);
            failures++;
            break;
        }
    rx_bytes += e->len;
    protect(s, 1);
    s->busy = 0;
    rx_out--;
    rx_done++;
}

static void drain_err(struct fid_cq *cq, const char *who)
{
    struct fi_cq_err_entry err = {0};
    if (fi_cq_readerr(cq, &err, 0) == 1) {
        fprintf(stderr, "%s: error completion: %s (prov %d)\n", who,
                fi_strerror(err.err), err.prov_errno);
        exit(1);
    }
}

/* Reads every CQ once (which also drives both endpoints). */
static void drive(void)
{
    struct fi_cq_tagged_entry e[8];
    ssize_t r = fi_cq_read(n[S].f.txcq, e, 8);
    for (ssize_t k = 0; k < r; k++)
        tx_complete(e[k].op_context);
    if (r == -FI_EAVAIL)
        drain_err(n[S].f.txcq, "sender");
    r = fi_cq_read(n[R].f.rxcq, e, 8);
    for (ssize_t k = 0; k < r; k++)
        rx_complete(e[k].op_context, &e[k]);
    if (r == -FI_EAVAIL)
        drain_err(n[R].f.rxcq, "receiver");
    (void)fi_cq_read(n[S].f.rxcq, e, 8);
    (void)fi_cq_read(n[R].f.txcq, e, 8);
}

static void wait_until(int (*done)(void), const char *what)
{
    double t0 = now_s();
    while (!done()) {
        drive();
        if (now_s() - t0 > 60) {
            fprintf(stderr,
                    "test_prov_release: %s: nothing for 60 s "
                    "(tx %llu done, %d out; rx %llu done, %d out)\n",
                    what, (unsigned long long)tx_done, tx_out,
                    (unsigned long long)rx_done, rx_out);
            exit(1);
        }
    }
}

static int tx_room(void)
{
    return tx_out < WINDOW;
}
static int rx_room(void)
{
    return rx_out < WINDOW;
}
static int all_done(void)
{
    return tx_out == 0 && rx_out == 0;
}

/* A message length for seq: rendezvous sizes from 9 KiB to 600 KiB (so
 * one READ or, past FI_MROCE_RNDV_SEG, several slices), 1 MiB for K_BIG,
 * at most the eager size for K_EAGER. */
static size_t msg_len(enum kind k, uint64_t seq)
{
    if (k == K_EAGER)
        return 16 + (size_t)(seq * 977) % 8000;
    if (k == K_BIG)
        return BUF_MAX;
    return 9216 + (size_t)(seq * 104729) % (600u << 10);
}

static void post_recv(uint64_t seq, int tagged)
{
    struct slot *s = &rbuf[seq % NBUF];
    if (s->busy) {
        fprintf(stderr, "receive slot %llu still busy\n",
                (unsigned long long)(seq % NBUF));
        exit(1);
    }
    protect(s, 0);
    memset(s->p, 0, 64);
    s->busy = 1;
    s->seq = seq;
    rx_out++;
    ssize_t r;
    if (tagged)
        r = fi_trecv(n[R].f.ep, s->p, BUF_MAX, NULL, FI_ADDR_UNSPEC, seq, 0, s);
    else
        r = fi_recv(n[R].f.ep, s->p, BUF_MAX, NULL, FI_ADDR_UNSPEC, s);
    DIE_IF((int)r, "receive");
}

/* Retries a post while the provider says FI_EAGAIN. */
#define POST(call, what)                    \
    do {                                    \
        ssize_t r_;                         \
        while ((r_ = (call)) == -FI_EAGAIN) \
            drive();                        \
        DIE_IF((int)r_, what);              \
    } while (0)

static void post_op(uint64_t seq)
{
    enum kind k = (enum kind)(seq % NKIND);
    struct slot *s = &sbuf[seq % NBUF];
    if (s->busy) {
        fprintf(stderr, "send slot %llu still busy\n",
                (unsigned long long)(seq % NBUF));
        exit(1);
    }
    size_t len = k == K_WRITE || k == K_READ ? RMA_LEN : msg_len(k, seq);
    protect(s, 0);
    s->kind = k;
    s->len = len;
    s->seq = seq;
    s->busy = 1;
    if (k == K_READ) {
        memset(s->p, 0, len);
    } else {
        memcpy(s->p, &seq, sizeof(seq));
        for (size_t i = sizeof(seq); i < len; i++)
            s->p[i] = pattern(seq, i);
    }
    /* A source the provider only reads may be read-only memory. */
    if (k == K_TSEND || k == K_WRITE)
        if (mprotect(s->p, BUF_MAX, PROT_READ)) {
            perror("mprotect");
            exit(1);
        }
    int tagged = k != K_SEND && k != K_WRITE && k != K_READ;
    if (k != K_WRITE && k != K_READ) {
        wait_until(rx_room, "receive window");
        post_recv(seq, tagged);
    }
    tx_out++;
    fi_addr_t to = n[S].peer;
    uint64_t raddr = (uint64_t)(uintptr_t)target;
    switch (k) {
    case K_TSEND:
    case K_EAGER:
    case K_BIG:
        POST(fi_tsend(n[S].f.ep, s->p, len, NULL, to, seq, s), "fi_tsend");
        break;
    case K_SEND:
        POST(fi_send(n[S].f.ep, s->p, len, NULL, to, s), "fi_send");
        break;
    case K_TSENDV: {
        size_t cut = len / 3;
        struct iovec iov[2] = {{s->p, cut}, {s->p + cut, len - cut}};
        POST(fi_tsendv(n[S].f.ep, iov, NULL, 2, to, seq, s), "fi_tsendv");
        break;
    }
    case K_DESC:
        DIE_IF(fi_mr_reg(n[S].f.dom, s->p, len, FI_SEND | FI_REMOTE_READ, 0, 0,
                         0, &s->mr, NULL),
               "fi_mr_reg");
        POST(fi_tsend(n[S].f.ep, s->p, len, fi_mr_desc(s->mr), to, seq, s),
             "fi_tsend");
        break;
    case K_WRITE:
        POST(fi_write(n[S].f.ep, s->p, len, NULL, to, raddr, target_key, s),
             "fi_write");
        break;
    case K_READ:
        POST(fi_read(n[S].f.ep, s->p, len, NULL, to, raddr, target_key, s),
             "fi_read");
        break;
    default:
        break;
    }
}

int main(int argc, char **argv)
{
    uint64_t ops = argc > 1 ? strtoull(argv[1], NULL, 0) : 4000;
    int autoprog = argc > 2 && !strcmp(argv[2], "auto");
    setenv("MROCE_FAULT", "tx:drop=0.01;rx:reorder=0.02", 0);
    prov_keep_mapped();
    for (int i = 0; i < NBUF; i++) {
        sbuf[i].p = mmap(NULL, BUF_MAX, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        rbuf[i].p = mmap(NULL, BUF_MAX, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (sbuf[i].p == MAP_FAILED || rbuf[i].p == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, &old_segv);

    info = prov_getinfo(FI_MSG | FI_TAGGED | FI_RMA, autoprog, &fabric);
    for (int i = 0; i < NNODE; i++)
        prov_ep_open(&n[i].f, fabric, info, FI_AV_TABLE);
    CHECK(fi_av_insert(n[S].f.av, n[R].f.name, 1, &n[S].peer, 0, NULL) == 1);
    CHECK(fi_av_insert(n[R].f.av, n[S].f.name, 1, &n[R].peer, 0, NULL) == 1);

    target = aligned_alloc(4096, RMA_LEN);
    for (size_t i = 0; i < RMA_LEN; i++)
        target[i] = (unsigned char)(i * 13 + 5);
    DIE_IF(fi_mr_reg(n[R].f.dom, target, RMA_LEN,
                     FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &target_mr,
                     NULL),
           "fi_mr_reg target");
    target_key = fi_mr_key(target_mr);

    double t0 = now_s();
    for (uint64_t seq = 0; seq < ops; seq++) {
        /* fi_write changes the target that fi_read checks: they take
         * turns, the read after every write has completed and the write
         * after every read (FI_ORDER_SAS orders neither: on a QP of
         * several streams a READ that waits for an earlier message of its
         * stream can see a later WRITE's data). */
        enum kind k = (enum kind)(seq % NKIND);
        if (k == K_READ || k == K_WRITE)
            wait_until(all_done, "writes before a read, reads before a write");
        wait_until(tx_room, "send window");
        post_op(seq);
        if (k == K_WRITE) {
            /* The write is in the target once it has completed; then the
             * pattern the reads check goes back. */
            wait_until(all_done, "write");
            uint64_t got;
            memcpy(&got, target, sizeof(got));
            CHECK(got == seq);
            for (size_t i = sizeof(got); i < RMA_LEN; i++)
                if (target[i] != pattern(seq, i)) {
                    fprintf(stderr, "write %llu: byte %zu differs\n",
                            (unsigned long long)seq, i);
                    failures++;
                    break;
                }
            for (size_t i = 0; i < RMA_LEN; i++)
                target[i] = (unsigned char)(i * 13 + 5);
        }
    }
    wait_until(all_done, "the last operations");
    double dt = now_s() - t0;
    printf("test_prov_release: %llu operations (", (unsigned long long)tx_done);
    for (int k = 0; k < NKIND; k++)
        printf("%s%s", k ? ", " : "", kind_name[k]);
    printf("), %.1f MB received in %.1f s under MROCE_FAULT=\"%s\"\n",
           rx_bytes / 1e6, dt, getenv("MROCE_FAULT"));
    printf("test_prov_release: %s progress, FI_MROCE_RNDV_SEG=%s\n",
           autoprog ? "auto" : "manual",
           getenv("FI_MROCE_RNDV_SEG") ? getenv("FI_MROCE_RNDV_SEG")
                                       : "(default)");
    CHECK(tx_done == ops);
    uint64_t msgs = 0;
    for (uint64_t seq = 0; seq < ops; seq++)
        msgs += seq % NKIND != K_WRITE && seq % NKIND != K_READ;
    CHECK(rx_done == msgs);

    CHECK(fi_close(&target_mr->fid) == 0);
    for (int i = 0; i < NNODE; i++)
        CHECK(prov_ep_close(&n[i].f) == 0);
    CHECK(fi_close(&fabric->fid) == 0);
    fi_freeinfo(info);
    free(target);
    for (int i = 0; i < NBUF; i++) {
        munmap(sbuf[i].p, BUF_MAX);
        munmap(rbuf[i].p, BUF_MAX);
    }
    if (failures) {
        fprintf(stderr, "test_prov_release: %d failures\n", failures);
        return 1;
    }
    printf("test_prov_release: ok\n");
    return 0;
}
