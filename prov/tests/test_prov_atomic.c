/*
 * test_prov_atomic.c - FI_ATOMIC through the mroce provider: every op
 * family (fi_atomic, fi_fetch_atomic, fi_compare_atomic, their vector, msg
 * and inject forms) on each datatype class (8..128-bit integers, float,
 * double, long double, complex), checked against values worked out by
 * hand; the valid and query functions (-FI_EOPNOTSUPP for combinations
 * fi_atomic(3) does not define); error completions for a bad key or a
 * range outside the registration; and a stress of interleaved fetch-adds
 * and compare-swap increments on one counter, WINDOW in flight, whose
 * fetched values must all differ and whose total must be exact (lost,
 * repeated or non-atomic updates show).
 *
 * Two endpoints in one process over 127.0.0.1, manual progress (the test
 * polls both CQs).  Run it under MROCE_FAULT (CTest does, for one of its
 * two runs) to have the requests and responses lost and retransmitted.
 * Argument: the number of stress operations (default 2000).
 *
 * Needs FI_PROVIDER_PATH to name the directory of libmroce-fi.so.
 */
#define _GNU_SOURCE
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "prov_fi_test.h"

enum { WINDOW = 16, TBUF = 4096 };

static struct prov_ep ini, tgt; /* initiator, target */
static fi_addr_t t_addr;
static uint8_t *tbuf; /* the target's registered memory */
static uint64_t tkey;

static void progress(void)
{
    struct fi_cq_tagged_entry e;
    (void)fi_cq_read(tgt.txcq, &e, 1);
    (void)fi_cq_read(tgt.rxcq, &e, 1);
}

/* Waits for one initiator completion; returns 0, or the error entry's
 * positive err.  *ctx gets its context. */
static int wait_comp(void **ctx)
{
    struct fi_cq_tagged_entry e;
    double t0 = now_s();
    for (;;) {
        ssize_t n = fi_cq_read(ini.txcq, &e, 1);
        if (n == 1) {
            if (ctx)
                *ctx = e.op_context;
            CHECK(e.flags & FI_ATOMIC);
            return 0;
        }
        if (n == -FI_EAVAIL) {
            struct fi_cq_err_entry err = {0};
            CHECK(fi_cq_readerr(ini.txcq, &err, 0) == 1);
            if (ctx)
                *ctx = err.op_context;
            return err.err;
        }
        progress();
        if (now_s() - t0 > 30) {
            fprintf(stderr, "no completion in 30 s\n");
            exit(1);
        }
    }
}

/* Posts (retrying -FI_EAGAIN) and returns the post's result. */
#define POST(call)                          \
    ({                                      \
        ssize_t r_;                         \
        while ((r_ = (call)) == -FI_EAGAIN) \
            progress();                     \
        r_;                                 \
    })

static uint64_t raddr(size_t off)
{
    return (uint64_t)(uintptr_t)(tbuf + off);
}

/* One element op at offset off: old value to res (fetching families). */
static int do_write(const void *v, size_t off, enum fi_datatype dt,
                    enum fi_op op)
{
    CHECK(POST(fi_atomic(ini.ep, v, 1, NULL, t_addr, raddr(off), tkey, dt, op,
                         NULL)) == 0);
    return wait_comp(NULL);
}

static int do_fetch(const void *v, void *res, size_t off, enum fi_datatype dt,
                    enum fi_op op)
{
    CHECK(POST(fi_fetch_atomic(ini.ep, v, 1, NULL, res, NULL, t_addr,
                               raddr(off), tkey, dt, op, NULL)) == 0);
    return wait_comp(NULL);
}

static int do_cmp(const void *v, const void *cmp, void *res, size_t off,
                  enum fi_datatype dt, enum fi_op op)
{
    CHECK(POST(fi_compare_atomic(ini.ep, v, 1, NULL, cmp, NULL, res, NULL,
                                 t_addr, raddr(off), tkey, dt, op, NULL)) == 0);
    return wait_comp(NULL);
}

static void test_integers(void)
{
    uint64_t u64 = 5, v64 = 7, r64 = 0;
    memcpy(tbuf, &u64, 8);
    CHECK(do_write(&v64, 0, FI_UINT64, FI_SUM) == 0);
    memcpy(&u64, tbuf, 8);
    CHECK(u64 == 12);
    CHECK(do_fetch(&v64, &r64, 0, FI_UINT64, FI_SUM) == 0);
    memcpy(&u64, tbuf, 8);
    CHECK(r64 == 12 && u64 == 19);

    /* Signed overflow wraps (and is no undefined behaviour at the target). */
    int32_t i32 = INT32_MAX, one = 1, r32 = 0;
    memcpy(tbuf + 8, &i32, 4);
    CHECK(do_fetch(&one, &r32, 8, FI_INT32, FI_SUM) == 0);
    memcpy(&i32, tbuf + 8, 4);
    CHECK(r32 == INT32_MAX && i32 == INT32_MIN);
    int16_t i16 = -3, m16 = -9;
    memcpy(tbuf + 16, &i16, 2);
    CHECK(do_write(&m16, 16, FI_INT16, FI_MIN) == 0);
    memcpy(&i16, tbuf + 16, 2);
    CHECK(i16 == -9);
    m16 = 4;
    CHECK(do_write(&m16, 16, FI_INT16, FI_MAX) == 0);
    memcpy(&i16, tbuf + 16, 2);
    CHECK(i16 == 4);
    uint16_t p16 = 300, q16 = 300;
    memcpy(tbuf + 18, &p16, 2);
    CHECK(do_write(&q16, 18, FI_UINT16, FI_PROD) == 0);
    memcpy(&p16, tbuf + 18, 2);
    CHECK(p16 == (uint16_t)(300 * 300));

    uint8_t u8 = 0xf0, b8 = 0x3c, r8 = 0;
    tbuf[20] = u8;
    CHECK(do_write(&b8, 20, FI_UINT8, FI_BOR) == 0);
    CHECK(tbuf[20] == 0xfc);
    CHECK(do_write(&b8, 20, FI_UINT8, FI_BAND) == 0);
    CHECK(tbuf[20] == 0x3c);
    b8 = 0xff;
    CHECK(do_fetch(&b8, &r8, 20, FI_UINT8, FI_BXOR) == 0);
    CHECK(r8 == 0x3c && tbuf[20] == 0xc3);

    int64_t l = 0, t1 = 5, r = 9;
    memcpy(tbuf + 24, &l, 8);
    CHECK(do_write(&t1, 24, FI_INT64, FI_LOR) == 0);
    memcpy(&l, tbuf + 24, 8);
    CHECK(l == 1);
    CHECK(do_write(&t1, 24, FI_INT64, FI_LXOR) == 0);
    memcpy(&l, tbuf + 24, 8);
    CHECK(l == 0);
    CHECK(do_fetch(&t1, &r, 24, FI_INT64, FI_LAND) == 0);
    memcpy(&l, tbuf + 24, 8);
    CHECK(r == 0 && l == 0);

    /* ATOMIC_WRITE, then ATOMIC_READ (no operand). */
    uint32_t w = 0xdeadbeef, rd = 0;
    CHECK(do_write(&w, 32, FI_UINT32, FI_ATOMIC_WRITE) == 0);
    CHECK(do_fetch(NULL, &rd, 32, FI_UINT32, FI_ATOMIC_READ) == 0);
    CHECK(rd == 0xdeadbeef);

    /* 128-bit: a carry across the 64-bit halves. */
    unsigned __int128 a = UINT64_MAX, b = 1, ra = 0;
    memcpy(tbuf + 48, &a, 16);
    CHECK(do_fetch(&b, &ra, 48, FI_UINT128, FI_SUM) == 0);
    memcpy(&a, tbuf + 48, 16);
    CHECK(ra == UINT64_MAX && a == (unsigned __int128)1 << 64);

    /* Unaligned (no CPU compare-and-swap at the target). */
    u64 = 1000;
    memcpy(tbuf + 65, &u64, 8);
    v64 = 24;
    CHECK(do_fetch(&v64, &r64, 65, FI_UINT64, FI_SUM) == 0);
    memcpy(&u64, tbuf + 65, 8);
    CHECK(r64 == 1000 && u64 == 1024);
}

static void test_compare(void)
{
    uint64_t t = 10, v = 20, c = 11, r = 0;
    memcpy(tbuf + 128, &t, 8);
    CHECK(do_cmp(&v, &c, &r, 128, FI_UINT64, FI_CSWAP) == 0);
    memcpy(&t, tbuf + 128, 8);
    CHECK(r == 10 && t == 10); /* no match: unchanged */
    c = 10;
    CHECK(do_cmp(&v, &c, &r, 128, FI_UINT64, FI_CSWAP) == 0);
    memcpy(&t, tbuf + 128, 8);
    CHECK(r == 10 && t == 20);

    /* The ordered swaps: swap when compare OP target. */
    struct {
        enum fi_op op;
        int32_t tgt, cmp;
        int swaps;
    } k[] = {
        {FI_CSWAP_NE, 5, 5, 0}, {FI_CSWAP_NE, 5, 6, 1}, {FI_CSWAP_LE, 5, 5, 1},
        {FI_CSWAP_LE, 5, 6, 0}, {FI_CSWAP_LT, 5, 5, 0}, {FI_CSWAP_LT, 5, 4, 1},
        {FI_CSWAP_GE, 5, 5, 1}, {FI_CSWAP_GE, 5, 4, 0}, {FI_CSWAP_GT, 5, 5, 0},
        {FI_CSWAP_GT, 5, 6, 1},
    };
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
        int32_t x = k[i].tgt, nv = 77, res = 0;
        memcpy(tbuf + 136, &x, 4);
        CHECK(do_cmp(&nv, &k[i].cmp, &res, 136, FI_INT32, k[i].op) == 0);
        memcpy(&x, tbuf + 136, 4);
        CHECK(res == k[i].tgt);
        if (x != (k[i].swaps ? 77 : k[i].tgt)) {
            fprintf(stderr, "case %zu: target %d\n", i, x);
            failures++;
        }
    }

    /* MSWAP: target = (value & mask) | (target & ~mask). */
    uint16_t m = 0xff00, val = 0x1234, tg = 0xabcd, rr = 0;
    memcpy(tbuf + 140, &tg, 2);
    CHECK(do_cmp(&val, &m, &rr, 140, FI_UINT16, FI_MSWAP) == 0);
    memcpy(&tg, tbuf + 140, 2);
    CHECK(rr == 0xabcd && tg == 0x12cd);

    double d = 2.5, dc = 2.5, dv = -1.0, dr = 0;
    memcpy(tbuf + 144, &d, 8);
    CHECK(do_cmp(&dv, &dc, &dr, 144, FI_DOUBLE, FI_CSWAP) == 0);
    memcpy(&d, tbuf + 144, 8);
    CHECK(dr == 2.5 && d == -1.0);
}

static void test_floats(void)
{
    double d = 1.5, a = 2.25, r = 0;
    memcpy(tbuf + 256, &d, 8);
    CHECK(do_fetch(&a, &r, 256, FI_DOUBLE, FI_SUM) == 0);
    memcpy(&d, tbuf + 256, 8);
    CHECK(r == 1.5 && d == 3.75);
    a = -7.0;
    CHECK(do_write(&a, 256, FI_DOUBLE, FI_MIN) == 0);
    memcpy(&d, tbuf + 256, 8);
    CHECK(d == -7.0);
    float f = 3.0f, g = 0.5f;
    memcpy(tbuf + 264, &f, 4);
    CHECK(do_write(&g, 264, FI_FLOAT, FI_PROD) == 0);
    memcpy(&f, tbuf + 264, 4);
    CHECK(f == 1.5f);
    g = 2.0f;
    CHECK(do_write(&g, 264, FI_FLOAT, FI_MAX) == 0);
    memcpy(&f, tbuf + 264, 4);
    CHECK(f == 2.0f);
    long double ld = 1.25L, la = 0.5L, lr = 0;
    memcpy(tbuf + 272, &ld, sizeof(ld));
    CHECK(do_fetch(&la, &lr, 272, FI_LONG_DOUBLE, FI_SUM) == 0);
    memcpy(&ld, tbuf + 272, sizeof(ld));
    CHECK(lr == 1.25L && ld == 1.75L);

    /* (1+2i)(3+4i) = -5+10i; then + (5-10i) = 0. */
    double complex z = 1 + 2 * I, w = 3 + 4 * I, zr = 0;
    memcpy(tbuf + 288, &z, sizeof(z));
    CHECK(do_fetch(&w, &zr, 288, FI_DOUBLE_COMPLEX, FI_PROD) == 0);
    memcpy(&z, tbuf + 288, sizeof(z));
    CHECK(zr == 1 + 2 * I && z == -5 + 10 * I);
    w = 5 - 10 * I;
    CHECK(do_write(&w, 288, FI_DOUBLE_COMPLEX, FI_SUM) == 0);
    memcpy(&z, tbuf + 288, sizeof(z));
    CHECK(z == 0);
    float complex fz = 1, fw = 2 * I, fc = 1, fr = 0;
    memcpy(tbuf + 320, &fz, sizeof(fz));
    CHECK(do_cmp(&fw, &fc, &fr, 320, FI_FLOAT_COMPLEX, FI_CSWAP) == 0);
    memcpy(&fz, tbuf + 320, sizeof(fz));
    CHECK(fr == 1 && fz == 2 * I);
}

/* The vector, msg and inject forms, count > 1. */
static void test_forms(void)
{
    int32_t init[6] = {1, 2, 3, 4, 5, 6}, a[2] = {10, 20},
            b[4] = {30, 40, 50, 60};
    int32_t ra[3], rb[3], out[6];
    memcpy(tbuf + 512, init, sizeof(init));
    struct fi_ioc iov[2] = {{a, 2}, {b, 4}};
    struct fi_ioc res[2] = {{ra, 3}, {rb, 3}};
    CHECK(POST(fi_fetch_atomicv(ini.ep, iov, NULL, 2, res, NULL, 2, t_addr,
                                raddr(512), tkey, FI_INT32, FI_SUM, &iov)) ==
          0);
    void *ctx = NULL;
    CHECK(wait_comp(&ctx) == 0 && ctx == &iov);
    memcpy(out, tbuf + 512, sizeof(out));
    CHECK(ra[0] == 1 && ra[2] == 3 && rb[0] == 4 && rb[2] == 6);
    CHECK(out[0] == 11 && out[1] == 22 && out[2] == 33 && out[5] == 66);

    /* fi_atomicmsg, count 3 (a completion is asked for). */
    uint64_t v[3] = {1, 2, 4}, tv[3] = {8, 8, 8};
    memcpy(tbuf + 576, tv, sizeof(tv));
    struct fi_ioc mi = {v, 3};
    struct fi_rma_ioc ri = {raddr(576), 3, tkey};
    struct fi_msg_atomic msg = {.msg_iov = &mi,
                                .iov_count = 1,
                                .addr = t_addr,
                                .rma_iov = &ri,
                                .rma_iov_count = 1,
                                .datatype = FI_UINT64,
                                .op = FI_BOR,
                                .context = &msg};
    CHECK(POST(fi_atomicmsg(ini.ep, &msg, FI_COMPLETION)) == 0);
    CHECK(wait_comp(&ctx) == 0 && ctx == &msg);
    memcpy(tv, tbuf + 576, sizeof(tv));
    CHECK(tv[0] == 9 && tv[1] == 10 && tv[2] == 12);

    /* Compare-swap vector: elements independently. */
    uint64_t cv[2] = {9, 0}, nv[2] = {100, 200}, rv[2] = {0, 0};
    struct fi_ioc ni = {nv, 2}, ci = {cv, 2}, rr = {rv, 2};
    CHECK(POST(fi_compare_atomicv(ini.ep, &ni, NULL, 1, &ci, NULL, 1, &rr, NULL,
                                  1, t_addr, raddr(576), tkey, FI_UINT64,
                                  FI_CSWAP, NULL)) == 0);
    CHECK(wait_comp(NULL) == 0);
    memcpy(tv, tbuf + 576, sizeof(tv));
    CHECK(rv[0] == 9 && rv[1] == 10 && tv[0] == 100 && tv[1] == 10);

    /* Inject: the buffer may change at once; no completion. */
    uint64_t inj = 5, got = 0;
    memcpy(tbuf + 600, &got, 8);
    CHECK(POST(fi_inject_atomic(ini.ep, &inj, 1, t_addr, raddr(600), tkey,
                                FI_UINT64, FI_SUM)) == 0);
    inj = 1000;
    CHECK(do_fetch(NULL, &got, 600, FI_UINT64, FI_ATOMIC_READ) == 0);
    CHECK(got == 5);

    /* Count above the limit fi_atomicvalid gives. */
    size_t max = 0;
    CHECK(fi_atomicvalid(ini.ep, FI_UINT8, FI_SUM, &max) == 0 && max >= 1);
    uint8_t *big = calloc(max + 1, 1);
    CHECK(fi_atomic(ini.ep, big, max + 1, NULL, t_addr, raddr(0), tkey,
                    FI_UINT8, FI_SUM, NULL) == -FI_EINVAL);
    free(big);
}

static void test_valid(void)
{
    size_t n = 0;
    CHECK(fi_atomicvalid(ini.ep, FI_UINT64, FI_SUM, &n) == 0 && n > 0);
    CHECK(fi_atomicvalid(ini.ep, FI_UINT64, FI_CSWAP, &n) == -FI_EOPNOTSUPP);
    CHECK(fi_atomicvalid(ini.ep, FI_UINT64, FI_ATOMIC_READ, &n) ==
          -FI_EOPNOTSUPP);
    CHECK(fi_atomicvalid(ini.ep, FI_DOUBLE, FI_BOR, &n) == -FI_EOPNOTSUPP);
    CHECK(fi_atomicvalid(ini.ep, FI_DOUBLE_COMPLEX, FI_MIN, &n) ==
          -FI_EOPNOTSUPP);
    CHECK(fi_fetch_atomicvalid(ini.ep, FI_INT8, FI_ATOMIC_READ, &n) == 0 &&
          n > 0);
    CHECK(fi_fetch_atomicvalid(ini.ep, FI_INT8, FI_MSWAP, &n) ==
          -FI_EOPNOTSUPP);
    CHECK(fi_compare_atomicvalid(ini.ep, FI_INT8, FI_MSWAP, &n) == 0);
    CHECK(fi_compare_atomicvalid(ini.ep, FI_FLOAT, FI_MSWAP, &n) ==
          -FI_EOPNOTSUPP);
    CHECK(fi_compare_atomicvalid(ini.ep, FI_FLOAT_COMPLEX, FI_CSWAP_LT, &n) ==
          -FI_EOPNOTSUPP);
    CHECK(fi_compare_atomicvalid(ini.ep, FI_UINT64, FI_SUM, &n) ==
          -FI_EOPNOTSUPP);
    CHECK(fi_compare_atomicvalid(ini.ep, (enum fi_datatype)99, FI_CSWAP, &n) ==
          -FI_EOPNOTSUPP);
    struct fi_atomic_attr attr = {0};
    CHECK(fi_query_atomic(ini.dom, FI_DOUBLE, FI_CSWAP, &attr,
                          FI_COMPARE_ATOMIC) == 0);
    CHECK(attr.size == 8 && attr.count > 0);
    CHECK(fi_query_atomic(ini.dom, FI_DOUBLE, FI_CSWAP, &attr, 0) ==
          -FI_EOPNOTSUPP);
    /* An unsupported op is refused at post time too. */
    uint64_t v = 1;
    CHECK(fi_atomic(ini.ep, &v, 1, NULL, t_addr, raddr(0), tkey, FI_DOUBLE,
                    FI_BXOR, NULL) == -FI_EOPNOTSUPP);
}

static void test_errors(void)
{
    uint64_t v = 1, r = 0;
    CHECK(POST(fi_fetch_atomic(ini.ep, &v, 1, NULL, &r, NULL, t_addr, raddr(0),
                               tkey + 12345, FI_UINT64, FI_SUM, NULL)) == 0);
    CHECK(wait_comp(NULL) == FI_EACCES);
    /* The range runs past the registration's end. */
    CHECK(POST(fi_atomic(ini.ep, &v, 1, NULL, t_addr, raddr(TBUF - 4), tkey,
                         FI_UINT64, FI_SUM, NULL)) == 0);
    CHECK(wait_comp(NULL) == FI_EACCES);
}

/* Interleaved fetch-adds of 1 and compare-swap increments on one word.
 * Every fetch-add sees a distinct old value; a CSWAP whose compare value
 * is stale fails and changes nothing; the end value counts the successes
 * exactly. */
static void test_stress(int nops)
{
    uint64_t zero = 0;
    memcpy(tbuf + 1024, &zero, 8);
    uint8_t *seen = calloc((size_t)nops + 1, 1);
    struct slot {
        uint64_t one, cmp, nv, res;
        int cas;
    } s[WINDOW];
    int posted = 0, done = 0, inflight = 0, free_slot[WINDOW], nfree = WINDOW;
    uint64_t guess = 0, cas_ok = 0, fadd = 0;
    for (int i = 0; i < WINDOW; i++)
        free_slot[i] = i;
    while (done < nops) {
        while (posted < nops && nfree) {
            struct slot *x = &s[free_slot[--nfree]];
            x->one = 1;
            x->cas = posted % 3 == 2;
            ssize_t rc;
            if (x->cas) {
                x->cmp = guess;
                x->nv = guess + 1;
                rc = fi_compare_atomic(ini.ep, &x->nv, 1, NULL, &x->cmp, NULL,
                                       &x->res, NULL, t_addr, raddr(1024), tkey,
                                       FI_UINT64, FI_CSWAP, x);
            } else
                rc = fi_fetch_atomic(ini.ep, &x->one, 1, NULL, &x->res, NULL,
                                     t_addr, raddr(1024), tkey, FI_UINT64,
                                     FI_SUM, x);
            if (rc == -FI_EAGAIN) {
                nfree++;
                break;
            }
            CHECK(rc == 0);
            posted++;
            inflight++;
        }
        void *ctx = NULL;
        CHECK(wait_comp(&ctx) == 0);
        struct slot *x = ctx;
        if (x->cas) {
            if (x->res == x->cmp)
                cas_ok++;
        } else {
            fadd++;
            if (x->res <= (uint64_t)nops) {
                CHECK(!seen[x->res]); /* two fetch-adds saw the same value */
                seen[x->res] = 1;
            } else
                CHECK(0);
        }
        if (x->res + 1 > guess)
            guess = x->res + 1;
        free_slot[nfree++] = (int)(x - s);
        inflight--;
        done++;
    }
    uint64_t end;
    memcpy(&end, tbuf + 1024, 8);
    if (end != fadd + cas_ok) {
        fprintf(stderr, "stress: counter %llu, expected %llu + %llu\n",
                (unsigned long long)end, (unsigned long long)fadd,
                (unsigned long long)cas_ok);
        failures++;
    }
    printf("stress: %d ops (%llu fetch-add, %llu of %llu compare-swap "
           "matched)\n",
           nops, (unsigned long long)fadd, (unsigned long long)cas_ok,
           (unsigned long long)(nops - (int)fadd));
    free(seen);
}

int main(int argc, char **argv)
{
    int nops = argc > 1 ? atoi(argv[1]) : 2000;
    prov_keep_mapped();
    struct fid_fabric *fabric;
    struct fi_info *info = prov_getinfo(FI_ATOMIC | FI_RMA, 0, &fabric);
    CHECK(info->caps & FI_ATOMIC);
    prov_ep_open(&ini, fabric, info, FI_AV_TABLE);
    prov_ep_open(&tgt, fabric, info, FI_AV_TABLE);
    CHECK(fi_av_insert(ini.av, tgt.name, 1, &t_addr, 0, NULL) == 1);
    fi_addr_t i_addr;
    CHECK(fi_av_insert(tgt.av, ini.name, 1, &i_addr, 0, NULL) == 1);
    tbuf = aligned_alloc(64, TBUF);
    memset(tbuf, 0, TBUF);
    struct fid_mr *mr;
    DIE_IF(fi_mr_reg(tgt.dom, tbuf, TBUF, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                     0, 0, &mr, NULL),
           "fi_mr_reg");
    tkey = fi_mr_key(mr);

    test_valid();
    test_integers();
    test_compare();
    test_floats();
    test_forms();
    test_errors();
    test_stress(nops);

    CHECK(fi_close(&mr->fid) == 0);
    CHECK(prov_ep_close(&ini) == 0);
    CHECK(prov_ep_close(&tgt) == 0);
    CHECK(fi_close(&fabric->fid) == 0);
    fi_freeinfo(info);
    free(tbuf);
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
