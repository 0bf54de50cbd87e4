/*
 * test_prov_inject.c - RMA injects of every size up to the advertised
 * tx_attr->inject_size: fi_inject_write, fi_inject_writedata and
 * fi_writemsg with FI_INJECT must accept them, leave the source buffer to
 * the caller at return (the test overwrites it at once), and place the
 * bytes at the target; one byte more is -FI_EMSGSIZE.  An inject makes no
 * transmit completion; fi_writemsg with FI_INJECT | FI_COMPLETION makes
 * one.
 *
 * Two endpoints in one process over 127.0.0.1, manual progress (the test
 * polls both).  MROCE_FAULT, if the environment sets it, acts on both: the
 * copies must survive retransmission.
 *
 * Needs FI_PROVIDER_PATH to name the directory of libmroce-fi.so (CTest
 * sets it).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include "prov_fi_test.h"

enum { S, R, NNODE };

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct prov_ep n[NNODE];
static fi_addr_t peer; /* R in S's AV */
static unsigned char *target;
static uint64_t key;
static size_t tx_comps, rx_data_comps;
static uint64_t last_data;

static unsigned char pattern(size_t len, size_t i)
{
    return (unsigned char)(len * 7 + i * 31 + 1);
}

/* Reads both CQs once (manual progress); counts transmit completions and
 * remote-CQ-data completions at the target. */
static void poll_both(void)
{
    struct fi_cq_tagged_entry e[8];
    ssize_t k = fi_cq_read(n[S].txcq, e, 8);
    if (k > 0)
        tx_comps += (size_t)k;
    else if (k == -FI_EAVAIL) {
        struct fi_cq_err_entry err = {0};
        fi_cq_readerr(n[S].txcq, &err, 0);
        fprintf(stderr, "tx error: %s\n", fi_strerror(err.err));
        failures++;
    }
    fi_cq_read(n[S].rxcq, e, 8);
    k = fi_cq_read(n[R].rxcq, e, 8);
    for (ssize_t i = 0; i < k; i++)
        if (e[i].flags & FI_REMOTE_CQ_DATA) {
            rx_data_comps++;
            last_data = e[i].data;
        }
    fi_cq_read(n[R].txcq, e, 8);
}

static int target_has(size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (target[i] != pattern(len, i))
            return 0;
    return 1;
}

/* Polls until cond() holds or 20 s pass; 0 on timeout. */
static int wait_for(int (*cond)(size_t), size_t arg)
{
    double t0 = now_s();
    while (!cond(arg)) {
        if (now_s() - t0 > 20)
            return 0;
        poll_both();
    }
    return 1;
}

static size_t want_comps;
static int comps_reached(size_t unused)
{
    (void)unused;
    return tx_comps >= want_comps;
}
static size_t want_data;
static int data_reached(size_t unused)
{
    (void)unused;
    return rx_data_comps >= want_data;
}

enum how { INJECT_WRITE, INJECT_WRITEDATA, WRITEMSG_INJECT, NHOW };
static const char *const how_name[NHOW] = {"fi_inject_write",
                                           "fi_inject_writedata",
                                           "fi_writemsg(FI_INJECT)"};

static ssize_t post(enum how how, size_t len, unsigned char *src)
{
    if (how == INJECT_WRITE)
        return fi_inject_write(n[S].ep, src, len, peer, (uintptr_t)target, key);
    if (how == INJECT_WRITEDATA)
        return fi_inject_writedata(n[S].ep, src, len, len, peer,
                                   (uintptr_t)target, key);
    struct iovec iov = {src, len};
    struct fi_rma_iov riov = {(uintptr_t)target, len, key};
    struct fi_msg_rma msg = {.msg_iov = &iov,
                             .iov_count = 1,
                             .addr = peer,
                             .rma_iov = &riov,
                             .rma_iov_count = 1,
                             .context = src};
    return fi_writemsg(n[S].ep, &msg, FI_INJECT | FI_COMPLETION);
}

static void one(enum how how, size_t len, unsigned char *src)
{
    for (size_t i = 0; i < len; i++)
        src[i] = pattern(len, i);
    memset(target, 0, len);
    size_t comps0 = tx_comps, data0 = rx_data_comps;
    ssize_t rc;
    double t0 = now_s();
    while ((rc = post(how, len, src)) == -FI_EAGAIN && now_s() - t0 < 20)
        poll_both(); /* transmit queue full: retry */
    if (rc) {
        fprintf(stderr, "%s of %zu bytes: %s\n", how_name[how], len,
                fi_strerror((int)-rc));
        failures++;
        return;
    }
    /* The caller has its buffer back. */
    memset(src, 0xEE, len);
    if (how == INJECT_WRITEDATA) {
        want_data = data0 + 1;
        if (!wait_for(data_reached, 0)) {
            fprintf(stderr, "%s of %zu bytes: no remote completion\n",
                    how_name[how], len);
            failures++;
            return;
        }
        CHECK(last_data == len);
    }
    if (how == WRITEMSG_INJECT) {
        want_comps = comps0 + 1;
        CHECK(wait_for(comps_reached, 0));
    }
    if (!wait_for(target_has, len)) {
        fprintf(stderr, "%s of %zu bytes: target differs\n", how_name[how],
                len);
        failures++;
    }
    /* An inject completes nothing; the writemsg exactly once. */
    for (int i = 0; i < 20; i++)
        poll_both();
    CHECK(tx_comps == comps0 + (how == WRITEMSG_INJECT));
}

int main(void)
{
    prov_keep_mapped();
    info = prov_getinfo(FI_MSG | FI_RMA, 0, &fabric);
    size_t inj = info->tx_attr->inject_size;
    printf("test_prov_inject: inject_size %zu, MROCE_FAULT=\"%s\"\n", inj,
           getenv("MROCE_FAULT") ? getenv("MROCE_FAULT") : "");
    CHECK(inj >= 257); /* beyond the engine's inline limit */
    for (int i = 0; i < NNODE; i++)
        prov_ep_open(&n[i], fabric, info, FI_AV_TABLE);
    CHECK(fi_av_insert(n[S].av, n[R].name, 1, &peer, 0, NULL) == 1);
    fi_addr_t back;
    CHECK(fi_av_insert(n[R].av, n[S].name, 1, &back, 0, NULL) == 1);

    target = aligned_alloc(4096, inj + 4096);
    unsigned char *src = malloc(inj + 1);
    struct fid_mr *mr;
    DIE_IF(fi_mr_reg(n[R].dom, target, inj + 4096, FI_REMOTE_WRITE, 0, 0, 0,
                     &mr, NULL),
           "fi_mr_reg");
    key = fi_mr_key(mr);

    const size_t sizes[] = {1,    64,   255,  256,  257,     1000,
                            1024, 4096, 4097, 8191, inj - 1, inj};
    for (int how = 0; how < NHOW; how++)
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
            if (sizes[i] && sizes[i] <= inj)
                one((enum how)how, sizes[i], src);

    /* One byte more than inject_size. */
    CHECK(fi_inject_write(n[S].ep, src, inj + 1, peer, (uintptr_t)target,
                          key) == -FI_EMSGSIZE);
    CHECK(fi_inject_writedata(n[S].ep, src, inj + 1, 1, peer, (uintptr_t)target,
                              key) == -FI_EMSGSIZE);

    CHECK(fi_close(&mr->fid) == 0);
    for (int i = 0; i < NNODE; i++)
        CHECK(prov_ep_close(&n[i]) == 0);
    CHECK(fi_close(&fabric->fid) == 0);
    fi_freeinfo(info);
    free(target);
    free(src);
    if (failures) {
        fprintf(stderr, "test_prov_inject: %d failures\n", failures);
        return 1;
    }
    printf("test_prov_inject: ok\n");
    return 0;
}
