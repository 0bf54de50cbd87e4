/*
 * test_lib_regmem.c - mroce_reg_mr() refuses memory that is not there with
 * the rights it would grant (SEM-28, SEC-9): unmapped pages, PROT_NONE,
 * write rights (local or remote) on read-only pages, a length of SIZE_MAX,
 * a range that wraps past the end of the address space, and a range half
 * mapped; it accepts read-only memory with REMOTE_READ alone, and a range
 * that adjacent mappings of different protections cover together.
 *
 * Each case is checked twice: through mroce_reg_mr() (PROCMAP_QUERY where
 * the kernel has it) and by the walk of /proc/self/maps's text.
 *
 * End to end, over two devices on 127.0.0.1: a registration whose range
 * would wrap is refused, so a peer cannot WRITE past the real buffer (as
 * it could when such a registration was accepted: the region then
 * covered every address above the buffer).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mroce/mroce.h>

#include "case_table.h"
#include "libpair.h"
#include "testutil.h"

#define LW MROCE_ACCESS_LOCAL_WRITE
#define RW MROCE_ACCESS_REMOTE_WRITE
#define RR MROCE_ACCESS_REMOTE_READ
#define RA MROCE_ACCESS_REMOTE_ATOMIC

static size_t pg;

/* src/lib/lib_int.h: the check from the text of /proc/self/maps, which
 * kernels without PROCMAP_QUERY get. */
int lib_mem_check_text(const void *addr, size_t len, int want_write);

/* Registers and, on success, deregisters at once: the code.  Where the
 * arithmetic passes, the text walk must come to the same answer. */
static int reg(mroce_pd *pd, void *addr, size_t len, unsigned access)
{
    mroce_mr *mr = NULL;
    int rc = mroce_reg_mr(pd, addr, len, access, &mr);
    if (rc == 0)
        CHECK_EQ_INT(mroce_dereg_mr(mr), 0);
    if (mre_mr_reg_check(addr, len, access) == 0) {
        int t = lib_mem_check_text(addr, len, (access & (LW | RW | RA)) != 0);
        CHECK_MSG(t == rc, "%p+%zu access %u: text walk %d, reg_mr %d", addr,
                  len, access, t, rc);
    }
    return rc;
}

static void test_checks(mroce_pd *pd)
{
    /* Four pages: 0 read-write, 1 read-only, 2 PROT_NONE, 3 unmapped. */
    uint8_t *p = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!CHECK(p != MAP_FAILED))
        return;
    CHECK(mprotect(p + pg, pg, PROT_READ) == 0);
    CHECK(mprotect(p + 2 * pg, pg, PROT_NONE) == 0);
    CHECK(munmap(p + 3 * pg, pg) == 0);
    uint8_t *rw = p, *ro = p + pg, *none = p + 2 * pg, *gone = p + 3 * pg;

    /* Read-write memory: every right. */
    CHECK_EQ_INT(reg(pd, rw, pg, LW | RW | RR | RA), 0);
    CHECK_EQ_INT(reg(pd, rw + 100, 1, LW), 0);

    /* Unmapped. */
    CHECK_EQ_INT(reg(pd, gone, pg, 0), MROCE_EFAULT);
    CHECK_EQ_INT(reg(pd, gone, pg, RR), MROCE_EFAULT);
    CHECK_EQ_INT(reg(pd, gone + 10, 1, LW | RW), MROCE_EFAULT);

    /* PROT_NONE. */
    CHECK_EQ_INT(reg(pd, none, pg, 0), MROCE_EFAULT);
    CHECK_EQ_INT(reg(pd, none, pg, RR), MROCE_EFAULT);
    CHECK_EQ_INT(reg(pd, none, 8, LW | RW | RR | RA), MROCE_EFAULT);

    /* Read-only: no write right of any kind, but remote read (or none). */
    CHECK_EQ_INT(reg(pd, ro, pg, LW), MROCE_EACCESS);
    CHECK_EQ_INT(reg(pd, ro, pg, LW | RW), MROCE_EACCESS);
    CHECK_EQ_INT(reg(pd, ro, pg, LW | RA), MROCE_EACCESS);
    CHECK_EQ_INT(reg(pd, ro, pg, LW | RW | RR | RA), MROCE_EACCESS);
    CHECK_EQ_INT(reg(pd, ro, pg, RR), 0);
    CHECK_EQ_INT(reg(pd, ro, pg, 0), 0);
    /* Remote write without local write stays EINVAL (SEM-28 (b)), checked
     * before the memory is looked at. */
    CHECK_EQ_INT(reg(pd, ro, pg, RW), MROCE_EINVAL);
    CHECK_EQ_INT(reg(pd, rw, pg, RA | RR), MROCE_EINVAL);

    /* Adjacent mappings that together cover the range: read-write then
     * read-only is fine for reading, not for writing. */
    CHECK_EQ_INT(reg(pd, rw, 2 * pg, RR), 0);
    CHECK_EQ_INT(reg(pd, rw + pg - 1, 2, 0), 0);
    CHECK_EQ_INT(reg(pd, rw, 2 * pg, LW | RR), MROCE_EACCESS);
    /* Spanning into PROT_NONE or into a hole: refused however it starts. */
    CHECK_EQ_INT(reg(pd, ro, 2 * pg, RR), MROCE_EFAULT);
    CHECK_EQ_INT(reg(pd, rw, 3 * pg, RR), MROCE_EFAULT);
    CHECK_EQ_INT(reg(pd, rw, 4 * pg, 0), MROCE_EFAULT);
    /* A hole takes precedence over a missing write right. */
    CHECK_EQ_INT(reg(pd, rw, 4 * pg, LW), MROCE_EFAULT);

    /* Lengths: 0, SIZE_MAX, and wrapping past the end of the address
     * space by one byte; ending exactly at the end passes the arithmetic
     * but nothing is mapped there. */
    CHECK_EQ_INT(reg(pd, rw, 0, LW), MROCE_EINVAL);
    CHECK_EQ_INT(reg(pd, rw, SIZE_MAX, 0), MROCE_EFAULT);
    CHECK_EQ_INT(reg(pd, rw, SIZE_MAX, LW | RW | RR | RA), MROCE_EFAULT);
    size_t to_end = (size_t)(UINTPTR_MAX - (uintptr_t)rw) + 1;
    CHECK_EQ_INT(reg(pd, rw, to_end + 1, RR), MROCE_EFAULT);
    CHECK_EQ_INT(reg(pd, rw, to_end, RR), MROCE_EFAULT);
    CHECK_EQ_INT(reg(pd, (void *)(UINTPTR_MAX - 7), 8, RR), MROCE_EFAULT);

    CHECK(munmap(p, 3 * pg) == 0);

    /* A large region: one mapping, whatever its size (nothing touched).
     * The page after it is made PROT_NONE here, so a range running past
     * the end meets an unreadable page whatever else the process maps. */
    size_t big = (size_t)1 << 30;
    uint8_t *b = mmap(NULL, big + pg, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (CHECK(b != MAP_FAILED)) {
        CHECK(mprotect(b + big, pg, PROT_NONE) == 0);
        CHECK_EQ_INT(reg(pd, b, big, LW | RW | RR | RA), 0);
        CHECK_EQ_INT(reg(pd, b + big - pg, 2 * pg, LW), MROCE_EFAULT);
        CHECK(munmap(b, big + pg) == 0);
    }

    /* Many mappings (alternating protections, so none merge): the text
     * of /proc/self/maps then spans many reads, lines cut between them. */
    for (int i = 0; i < 400; i++) {
        uint8_t *m = mmap(NULL, pg, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        CHECK(m != MAP_FAILED);
    }

    /* Heap and stack memory, as applications register it. */
    uint8_t stack[256];
    CHECK_EQ_INT(reg(pd, stack, sizeof(stack), LW | RW), 0);
    uint8_t *heap = malloc(100000);
    if (CHECK(heap != NULL)) {
        CHECK_EQ_INT(reg(pd, heap, 100000, LW | RW | RR | RA), 0);
        free(heap);
    }
    /* Program text is read-only: remote read only. */
    CHECK_EQ_INT(reg(pd, (void *)(uintptr_t)&test_checks, 16, RR), 0);
    CHECK_EQ_INT(reg(pd, (void *)(uintptr_t)&test_checks, 16, LW),
                 MROCE_EACCESS);
    CHECK(strlen(mroce_strerror(MROCE_EFAULT)) > 0);
    CHECK(strcmp(mroce_strerror(MROCE_EFAULT), "unknown error") != 0);
}

/* Drives both devices until s has a completion. */
static int wait_wc(struct side *s, struct side *other, struct mroce_wc *wc)
{
    uint64_t end = now_ms() + 3000;
    while (now_ms() < end) {
        int n = mroce_poll_cq(s->cq, 1, wc);
        if (n != 0)
            return n;
        mroce_device_progress(other->dev);
    }
    return 0;
}

/* b's buffer is 2 pages; its first page is the one b means to expose, the
 * second holds a byte the peer must not reach. */
static void test_wrap_e2e(void)
{
    struct side a, b;
    int ra = side_open(&a, pg, LW, 0);
    int rb = side_open(&b, 2 * pg, LW, 0);
    if (!CHECK_MSG(ra == 0 && rb == 0, "side_open %d %d", ra, rb)) {
        side_fini(&a);
        side_fini(&b);
        return;
    }
    if (!connect_pair(&a, &b))
        goto out;
    uint8_t *victim = b.buf + pg + 64;
    *victim = 0x5a;
    memset(a.buf, 0xee, 64);

    /* The registration that once covered everything above b.buf. */
    size_t wrap = (size_t)(UINTPTR_MAX - (uintptr_t)b.buf) + 2;
    mroce_mr *wmr = NULL;
    int rc = mroce_reg_mr(b.pd, b.buf, wrap, LW | RW, &wmr);
    CHECK_EQ_INT(rc, MROCE_EFAULT);

    /* What b registers instead, or, where the wrap was accepted, that
     * region: either way a WRITE to the victim byte must fail. */
    mroce_mr *mr = wmr;
    if (!mr) {
        rc = mroce_reg_mr(b.pd, b.buf, pg, LW | RW, &mr);
        if (!CHECK_MSG(rc == 0, "reg_mr %d", rc))
            goto out;
    }
    struct mroce_sge sg = {(uintptr_t)a.buf, 64, mroce_mr_lkey(a.mr)};
    struct mroce_send_wr w, *bad;
    memset(&w, 0, sizeof(w));
    w.wr_id = 7;
    w.sg_list = &sg;
    w.num_sge = 1;
    w.opcode = MROCE_WR_WRITE;
    w.send_flags = MROCE_SEND_SIGNALED;
    w.remote_addr = (uintptr_t)victim;
    w.rkey = mroce_mr_rkey(mr);
    CHECK_EQ_INT(mroce_post_send(a.qp, &w, &bad), 0);
    struct mroce_wc wc;
    if (CHECK(wait_wc(&a, &b, &wc) == 1))
        CHECK_MSG(wc.status == MROCE_WC_REM_ACCESS_ERR,
                  "WRITE past the exposed page completed with %s",
                  mroce_wc_status_str(wc.status));
    CHECK_MSG(*victim == 0x5a, "the byte past the buffer became 0x%02x",
              *victim);
out:
    side_fini(&a);
    side_fini(&b);
}

static void case_checks(void)
{
    mroce_device *dev;
    mroce_pd *pd;
    if (CHECK(libpair_open_dev(&dev, MROCE_PROGRESS_APP) == 0)) {
        if (CHECK(mroce_pd_alloc(dev, &pd) == 0))
            test_checks(pd);
        mroce_device_close(dev);
    }
}

static const struct test_case cases[] = {
    {"checks", case_checks},
    {"wrap_e2e", test_wrap_e2e},
};

int main(int argc, char **argv)
{
    pg = (size_t)sysconf(_SC_PAGESIZE);
    return TEST_CASES_MAIN("test_lib_regmem", cases, argc, argv);
}
