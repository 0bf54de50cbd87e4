/*
 * test_prov_flow.c - the mroce provider when a resource runs out under a
 * well-behaved application: nothing it posted may fail or hang
 * (mroce_flow.c).  Two endpoints in one process over 127.0.0.1, manual
 * progress (the test polls both while it waits).
 *
 * "rndv": 300 rendezvous receives of 64 KiB posted, then 300 sends; with
 * 16 KiB READ slices (FI_MROCE_RNDV_SEG) the receiver wants four READs
 * per message in flight, far more than a QP's send queue holds (512), so
 * READs and FINs must wait for room.  Every receive and send must
 * complete without error, with the right bytes.
 *
 * "unexp": 3,000 messages (eager of several sizes, a few rendezvous)
 * sent before any receive is posted, well past the 1,024 unexpected
 * messages kept in receive buffers.  Every send must complete; then the
 * receives are posted in reverse order of the tags, each waited for
 * before the next is posted (as fabtests' fi_unexpected_msg does), and
 * each must get its message.
 *
 * Needs FI_PROVIDER_PATH to name the directory of libmroce-fi.so (CTest
 * sets it).  Runs also under MROCE_FAULT (ctest sets loss for one case).
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
#include <rdma/fi_tagged.h>

#include "prov_fi_test.h"

enum { A, B, NEP };
static struct prov_ep n[NEP];
static fi_addr_t to_b;
static int tx_done, tx_err;
static double limit_s = 20; /* no progress for this long fails the test */

static void drive(void)
{
    struct fi_cq_tagged_entry e[16];
    for (int i = 0; i < NEP; i++) {
        ssize_t r = fi_cq_read(n[i].txcq, e, 16);
        if (r > 0) {
            tx_done += (int)r;
        } else if (r == -FI_EAVAIL) {
            struct fi_cq_err_entry err = {0};
            fi_cq_readerr(n[i].txcq, &err, 0);
            fprintf(stderr, "tx error: %s (provider: %d)\n",
                    fi_strerror(err.err), err.prov_errno);
            tx_err++;
        }
    }
}

static void tsend(const void *buf, size_t len, uint64_t tag)
{
    double t0 = now_s();
    for (;;) {
        ssize_t rc = fi_tsend(n[A].ep, buf, len, NULL, to_b, tag, NULL);
        if (rc == 0)
            return;
        if (rc != -FI_EAGAIN) {
            fprintf(stderr, "fi_tsend: %s\n", fi_strerror((int)-rc));
            exit(1);
        }
        drive();
        if (now_s() - t0 > limit_s) {
            fprintf(stderr, "fi_tsend: -FI_EAGAIN for %.0f s\n", limit_s);
            exit(1);
        }
    }
}

static void trecv(void *buf, size_t len, uint64_t tag, void *ctx)
{
    ssize_t rc;
    while ((rc = fi_trecv(n[B].ep, buf, len, NULL, FI_ADDR_UNSPEC, tag, 0,
                          ctx)) == -FI_EAGAIN)
        drive();
    DIE_IF((int)rc, "fi_trecv");
}

/* One receive completion at B: 1 with *e, or -err for an error entry. */
static int wait_rx(struct fi_cq_tagged_entry *e)
{
    double t0 = now_s();
    for (;;) {
        ssize_t r = fi_cq_read(n[B].rxcq, e, 1);
        if (r == 1)
            return 1;
        if (r == -FI_EAVAIL) {
            struct fi_cq_err_entry ee = {0};
            fi_cq_readerr(n[B].rxcq, &ee, 0);
            fprintf(stderr, "rx error: %s\n", fi_strerror(ee.err));
            return -ee.err;
        }
        drive();
        if (now_s() - t0 > limit_s) {
            fprintf(stderr, "no receive completion in %.0f s\n", limit_s);
            exit(1);
        }
    }
}

static void wait_tx(int count)
{
    double t0 = now_s();
    while (tx_done + tx_err < count) {
        drive();
        if (now_s() - t0 > limit_s) {
            fprintf(stderr, "%d of %d sends completed in %.0f s\n", tx_done,
                    count, limit_s);
            exit(1);
        }
    }
}

static uint8_t pat(int msg, size_t i)
{
    return (uint8_t)(msg * 131 + i * 7);
}

static void fill(uint8_t *p, int msg, size_t len)
{
    for (size_t i = 0; i < len; i++)
        p[i] = pat(msg, i);
}

static int check(const uint8_t *p, int msg, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != pat(msg, i))
            return 0;
    return 1;
}

static void test_rndv(void)
{
    enum { M = 300 };
    const size_t len = 65536;
    uint8_t *src = malloc(M * len), *dst = calloc(M, len);
    if (!src || !dst)
        exit(1);
    for (int i = 0; i < M; i++) {
        fill(src + i * len, i, len);
        trecv(dst + i * len, len, 0x100 + i, dst + i * len);
    }
    for (int i = 0; i < M; i++)
        tsend(src + i * len, len, 0x100 + i);
    int got = 0, bad = 0;
    for (int i = 0; i < M; i++) {
        struct fi_cq_tagged_entry e;
        if (wait_rx(&e) != 1) {
            bad++;
            continue;
        }
        int k = (int)(e.tag - 0x100);
        got += k >= 0 && k < M && e.len == len &&
               e.op_context == dst + k * len && check(dst + k * len, k, len);
    }
    CHECK(bad == 0);
    CHECK(got == M);
    wait_tx(M);
    CHECK(tx_err == 0 && tx_done == M);
    free(src);
    free(dst);
}

/* Message i's length: mostly eager of three sizes, every 500th one a
 * rendezvous. */
static size_t unexp_len(int i)
{
    static const size_t sz[] = {16, 1000, 8192};
    return i % 500 == 7 ? 20000 : sz[i % 3];
}

static void test_unexp(void)
{
    enum { M = 3000 };
    const size_t max = 20000;
    uint8_t *src = malloc(M * max), *dst = calloc(M, max);
    if (!src || !dst)
        exit(1);
    for (int i = 0; i < M; i++) {
        fill(src + i * max, i, unexp_len(i));
        tsend(src + i * max, unexp_len(i), 0x5000 + i);
    }
    /* Every send completes before a single receive is posted (the
     * rendezvous ones only once read: they are waited for below). */
    int eager = 0;
    for (int i = 0; i < M; i++)
        eager += unexp_len(i) <= 8192;
    wait_tx(eager);
    CHECK(tx_err == 0);
    int got = 0;
    for (int j = M - 1; j >= 0; j--) {
        trecv(dst + j * max, max, 0x5000 + j, dst + j * max);
        struct fi_cq_tagged_entry e;
        if (wait_rx(&e) != 1)
            continue;
        got += e.tag == 0x5000u + j && e.len == unexp_len(j) &&
               e.op_context == dst + j * max &&
               check(dst + j * max, j, unexp_len(j));
    }
    CHECK(got == M);
    wait_tx(M);
    CHECK(tx_err == 0 && tx_done == M);
    free(src);
    free(dst);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rndv = !strcmp(mode, "rndv"), unexp = !strcmp(mode, "unexp");
    if (!rndv && !unexp) {
        fprintf(stderr, "usage: %s rndv|unexp\n", argv[0]);
        return 2;
    }
    if (rndv)
        setenv("FI_MROCE_RNDV_SEG", "16384", 0);
    prov_keep_mapped();
    struct fid_fabric *fabric;
    struct fi_info *info = prov_getinfo(FI_TAGGED, 0, &fabric);
    for (int i = 0; i < NEP; i++)
        prov_ep_open(&n[i], fabric, info, FI_AV_TABLE);
    DIE_IF(fi_av_insert(n[A].av, n[B].name, 1, &to_b, 0, NULL) != 1,
           "fi_av_insert");
    if (rndv)
        test_rndv();
    else
        test_unexp();
    for (int i = 0; i < NEP; i++)
        CHECK(prov_ep_close(&n[i]) == 0);
    fi_close(&fabric->fid);
    fi_freeinfo(info);
    printf("test_prov_flow %s: %s\n", mode, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
