/*
 * test_prov_av_cq.c - two AV and CQ calls that must do what they accept:
 *   - fi_av_insert with FI_SYNC_ERR writes one error code per address into
 *     the int array given as context (0 for the good one, non-zero for a
 *     bad one), and refuses a NULL array;
 *   - fi_cq_signal wakes a thread blocked in fi_cq_sread with no timeout
 *     (it returns -FI_EAGAIN), and a signal given before the read is not
 *     lost: the next fi_cq_sread returns at once.
 * A blocked reader that never wakes fails the test after 20 s (it would
 * otherwise wait forever).
 *
 * Single process, no traffic.  Needs FI_PROVIDER_PATH to name the
 * directory of libmroce-fi.so (CTest sets it).
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "prov_fi_test.h"

static void test_sync_err(struct fid_domain *dom)
{
    struct fid_av *av;
    struct fi_av_attr attr = {.type = FI_AV_TABLE, .count = 8};
    DIE_IF(fi_av_open(dom, &attr, &av, NULL), "fi_av_open");
    struct sockaddr_in a[2];
    memset(a, 0, sizeof(a));
    a[0].sin_family = AF_INET;
    a[0].sin_port = htons(47999);
    a[0].sin_addr.s_addr = htonl(0x7f000001);
    a[1].sin_family = 0xff; /* no such family: refused */
    int err[2] = {-12345, -12345};
    fi_addr_t fa[2];
    CHECK(fi_av_insert(av, a, 2, fa, FI_SYNC_ERR, err) == 1);
    CHECK(err[0] == 0);
    CHECK(err[1] != 0 && err[1] != -12345);
    CHECK(fa[0] != FI_ADDR_NOTAVAIL);
    CHECK(fa[1] == FI_ADDR_NOTAVAIL);
    /* FI_SYNC_ERR without the array to write. */
    CHECK(fi_av_insert(av, a, 1, fa, FI_SYNC_ERR, NULL) == -FI_EINVAL);
    CHECK(fi_close(&av->fid) == 0);
}

struct reader {
    struct fid_cq *cq;
    ssize_t rc;
    int done;
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

static void *read_blocking(void *arg)
{
    struct reader *r = arg;
    struct fi_cq_tagged_entry e;
    ssize_t rc = fi_cq_sread(r->cq, &e, 1, NULL, -1);
    pthread_mutex_lock(&r->lock);
    r->rc = rc;
    r->done = 1;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

/* Runs fi_cq_sread(timeout -1) in a thread; signals the CQ first (before)
 * or once the reader runs.  Returns the read's result; a reader still
 * blocked after 20 s fails the test and ends it (it cannot be joined). */
static ssize_t sread_with_signal(struct fid_cq *cq, int before)
{
    struct reader r = {.cq = cq};
    pthread_mutex_init(&r.lock, NULL);
    pthread_cond_init(&r.cond, NULL);
    if (before)
        CHECK(fi_cq_signal(cq) == 0);
    pthread_t t;
    if (pthread_create(&t, NULL, read_blocking, &r)) {
        fprintf(stderr, "pthread_create failed\n");
        exit(1);
    }
    if (!before) {
        /* Give the reader time to block; the signal must reach it either
         * way (a signal before it blocks is kept). */
        struct timespec nap = {0, 50 * 1000 * 1000};
        nanosleep(&nap, NULL);
        CHECK(fi_cq_signal(cq) == 0);
    }
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 20;
    pthread_mutex_lock(&r.lock);
    while (!r.done)
        if (pthread_cond_timedwait(&r.cond, &r.lock, &dl))
            break;
    int done = r.done;
    pthread_mutex_unlock(&r.lock);
    if (!done) {
        fprintf(stderr, "fi_cq_sread not woken by fi_cq_signal (%s)\n",
                before ? "signal before the read" : "signal during the read");
        fflush(stderr);
        _exit(1);
    }
    pthread_join(t, NULL);
    return r.rc;
}

static void test_cq_signal(struct fid_domain *dom)
{
    struct fid_cq *cq;
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED,
                              .wait_obj = FI_WAIT_UNSPEC};
    DIE_IF(fi_cq_open(dom, &attr, &cq, NULL), "fi_cq_open");
    CHECK(sread_with_signal(cq, 0) == -FI_EAGAIN);
    CHECK(sread_with_signal(cq, 1) == -FI_EAGAIN);
    /* The signal is used up: a timed read waits out its timeout again. */
    struct fi_cq_tagged_entry e;
    CHECK(fi_cq_sread(cq, &e, 1, NULL, 10) == -FI_EAGAIN);
    CHECK(fi_close(&cq->fid) == 0);
}

int main(void)
{
    prov_keep_mapped();
    struct fid_fabric *fabric;
    struct fi_info *info = prov_getinfo(FI_MSG | FI_TAGGED, 0, &fabric);
    struct fid_domain *dom;
    DIE_IF(fi_domain(fabric, info, &dom, NULL), "fi_domain");
    test_sync_err(dom);
    test_cq_signal(dom);
    CHECK(fi_close(&dom->fid) == 0);
    CHECK(fi_close(&fabric->fid) == 0);
    fi_freeinfo(info);
    if (failures) {
        fprintf(stderr, "test_prov_av_cq: %d failures\n", failures);
        return 1;
    }
    printf("test_prov_av_cq: ok\n");
    return 0;
}
