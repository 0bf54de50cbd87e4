/*
 * test_crc32c_copy.c - the fused CRC32C-and-copy against a separate memcpy
 * and CRC.
 *
 * mrw_crc32c_copy() is how the sender gathers a payload into its packet and
 * computes the trailer's CRC in one pass.  Each of its paths this CPU can
 * run (two-pass, 128-bit and 512-bit folding with stores, and the
 * dispatcher) is run at every length 0..4200 for several source and
 * destination alignments, and at random lengths up to 64 KiB with random
 * alignments and initial CRCs.  The "exhaustive" case runs every length
 * 0..4200 at every source alignment 0..63, and every pair of source and
 * destination alignments at the lengths where a path changes course.
 * Each result must equal the table path's CRC over the source, the
 * destination must hold the source's bytes, and the guard bytes on both
 * sides of the destination must be untouched.  Source buffers end exactly
 * at the end of their allocation, so under AddressSanitizer a path that
 * reads past the end is caught even when the result would not show it.
 */
#include "../src/wire/wire_internal.h"
#include "case_table.h"
#include "mroce/wire.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define SWEEP_LEN 4200
#define RANDOM_MAX (64 * 1024 + 200)
#define RANDOM_ITERS 400
#define GUARD 64

typedef uint32_t (*copy_fn)(uint32_t, void *, const void *, size_t);

static const struct path {
    const char *name;
    copy_fn fn;
    unsigned needs; /* mrw_crc32c_features() bits */
} all_paths[] = {
    {"twopass", mrw_crc32c_copy_twopass, 0},
    {"pclmul", mrw_crc32c_copy_pclmul, MROCE_CRC32C_PCLMUL},
    {"vpclmul", mrw_crc32c_copy_vpclmul, MROCE_CRC32C_VPCLMUL},
    {"dispatch", mrw_crc32c_copy, 0},
};
#define N_ALL (sizeof all_paths / sizeof all_paths[0])

static struct path paths[N_ALL];
static size_t npaths;
static uint64_t rng = 0xc0b1c32cull;

static void select_paths(void)
{
    unsigned f = mrw_crc32c_features();
    printf("crc32c_copy paths:");
    for (size_t i = 0; i < N_ALL; i++) {
        if ((all_paths[i].needs & f) != all_paths[i].needs)
            continue;
        paths[npaths++] = all_paths[i];
        printf(" %s", all_paths[i].name);
    }
    printf("\n");
}

/*
 * One call of path p: len random bytes at source alignment sa (ending their
 * allocation) copied to destination alignment da inside a guarded block.
 * Returns 1 if the CRC, the copy and the guards are right.
 */
static int one(const struct path *p, size_t len, size_t sa, size_t da,
               uint32_t crc0)
{
    void *sblk, *dblk;
    int ok = 1;

    if (posix_memalign(&sblk, 64, sa + len + (sa + len == 0)) ||
        posix_memalign(&dblk, 64, GUARD + da + len + GUARD))
        abort();
    uint8_t *src = (uint8_t *)sblk + sa;
    uint8_t *d0 = dblk, *dst = d0 + GUARD + da;
    testutil_rand_bytes(src, len, &rng);
    memset(d0, 0xa5, GUARD + da + len + GUARD);

    uint32_t want = mrw_crc32c_sw(crc0, src, len);
    uint32_t got = p->fn(crc0, dst, src, len);
    if (got != want) {
        CHECK_MSG(0, "%s len %zu sa %zu da %zu: crc %08x, want %08x", p->name,
                  len, sa, da, got, want);
        ok = 0;
    }
    if (len && memcmp(dst, src, len) != 0) {
        CHECK_MSG(0, "%s len %zu sa %zu da %zu: copy differs", p->name, len, sa,
                  da);
        ok = 0;
    }
    for (size_t i = 0; i < GUARD + da; i++)
        if (d0[i] != 0xa5) {
            CHECK_MSG(0, "%s len %zu sa %zu da %zu: wrote before dst", p->name,
                      len, sa, da);
            ok = 0;
            break;
        }
    for (size_t i = 0; i < GUARD; i++)
        if (dst[len + i] != 0xa5) {
            CHECK_MSG(0, "%s len %zu sa %zu da %zu: wrote past dst", p->name,
                      len, sa, da);
            ok = 0;
            break;
        }
    free(sblk);
    free(dblk);
    return ok;
}

/* Every length to a little past 4 KiB (one MTU-sized packet), with the
 * source and destination alignments that select different heads. */
static void test_sweep(void)
{
    static const size_t al[][2] = {{0, 0}, {0, 44}, {13, 0}, {44, 60}, {63, 1}};
    for (size_t i = 0; i < npaths; i++) {
        size_t bad = 0;
        for (size_t a = 0; a < sizeof al / sizeof al[0]; a++)
            for (size_t len = 0; len <= SWEEP_LEN && bad < 5; len++)
                bad += !one(&paths[i], len, al[a][0], al[a][1],
                            (uint32_t)testutil_rand64(&rng));
        CHECK_MSG(bad == 0, "%s: %zu sweep failures", paths[i].name, bad);
    }
}

/* Random lengths up to 64 KiB, random alignments and initial CRCs. */
static void test_random(void)
{
    for (size_t i = 0; i < npaths; i++) {
        size_t bad = 0;
        for (int k = 0; k < RANDOM_ITERS && bad < 5; k++) {
            size_t len = (size_t)testutil_rand_below(&rng, RANDOM_MAX);
            size_t sa = (size_t)testutil_rand_below(&rng, 64);
            size_t da = (size_t)testutil_rand_below(&rng, 64);
            bad += !one(&paths[i], len, sa, da,
                        (uint32_t)testutil_rand64(&rng));
        }
        CHECK_MSG(bad == 0, "%s: %zu random failures", paths[i].name, bad);
    }
}

/*
 * The exhaustive sweep, without an allocation per call: one random pattern
 * is placed at each source alignment of a static buffer, and the table
 * path's CRC of every prefix of it is computed once (the chained form of
 * mrw_crc32c_sw, one byte at a time).  The 64 bytes on either side of the
 * source are poisoned under AddressSanitizer, so a read past either end is
 * caught; the destination's guards are checked byte by byte.
 */
#define EX_LEN 4200
static uint8_t ex_pat[EX_LEN], ex_src[GUARD + 64 + EX_LEN + GUARD];
static uint8_t ex_dst[GUARD + 64 + EX_LEN + GUARD];
static uint32_t ex_ref[EX_LEN + 1];

static int ex_one(const struct path *p, size_t len, size_t sa, size_t da)
{
    uint8_t *src = ex_src + GUARD + sa, *dst = ex_dst + GUARD + da;
    int ok = 1;

    POISON(src - GUARD, GUARD);
    POISON(src + len, GUARD);
    uint32_t got = p->fn(0x5eed1e55u, dst, src, len);
    UNPOISON(src - GUARD, GUARD);
    UNPOISON(src + len, GUARD);
    if (got != ex_ref[len] || memcmp(dst, ex_pat, len) != 0) {
        CHECK_MSG(0, "%s len %zu sa %zu da %zu: crc %08x want %08x%s", p->name,
                  len, sa, da, got, ex_ref[len],
                  memcmp(dst, ex_pat, len) ? ", copy differs" : "");
        ok = 0;
    }
    for (size_t i = 0; i < GUARD; i++)
        if (dst[-1 - (ptrdiff_t)i] != 0xa5 || dst[len + i] != 0xa5) {
            CHECK_MSG(0, "%s len %zu sa %zu da %zu: wrote outside dst", p->name,
                      len, sa, da);
            ok = 0;
            break;
        }
    /* Only the bytes this call may have written go back to the guard. */
    memset(dst, 0xa5, len);
    return ok;
}

static void test_exhaustive(void)
{
    /* Where the folding paths change course: 64 (folding starts), 256
     * (512-bit rounds), 512 (the source is aligned first), and around one
     * and two whole rounds after an aligning head. */
    static const size_t edge[] = {0,    1,    15,   16,   31,   63,   64,
                                  65,   127,  128,  191,  255,  256,  257,
                                  319,  320,  447,  448,  511,  512,  513,
                                  575,  576,  577,  639,  767,  768,  769,
                                  831,  1023, 1024, 1087, 1088, 1151, 4095,
                                  4096, 4097, 4159};

    testutil_rand_bytes(ex_pat, sizeof ex_pat, &rng);
    ex_ref[0] = 0x5eed1e55u;
    for (size_t n = 0; n < EX_LEN; n++)
        ex_ref[n + 1] = mrw_crc32c_sw(ex_ref[n], ex_pat + n, 1);
    CHECK_EQ(ex_ref[EX_LEN], mrw_crc32c_sw(0x5eed1e55u, ex_pat, EX_LEN));
    memset(ex_dst, 0xa5, sizeof ex_dst);

    for (size_t i = 0; i < npaths; i++) {
        const struct path *p = &paths[i];
        size_t bad = 0;
        if (p->fn == mrw_crc32c_copy_twopass)
            continue;
        for (size_t sa = 0; sa < 64 && bad < 5; sa++) {
            memcpy(ex_src + GUARD + sa, ex_pat, EX_LEN);
            /* Every length; the destination alignment walks 0..63. */
            for (size_t len = 0; len <= EX_LEN && bad < 5; len++)
                bad += !ex_one(p, len, sa, (len * 5 + sa * 11) & 63);
            /* Every destination alignment at the edges. */
            for (size_t e = 0; e < sizeof edge / sizeof edge[0]; e++)
                for (size_t da = 0; da < 64 && bad < 5; da++)
                    bad += !ex_one(p, edge[e], sa, da);
        }
        CHECK_MSG(bad == 0, "%s: %zu exhaustive failures", p->name, bad);
    }
}

/* A packet sealed the way the sender does it (CRC of the headers, then the
 * fused copy of each payload piece) equals what mrw_pkt_seal() makes. */
static void test_chained_seal(void)
{
    static uint8_t payload[9000], a[9100], b[9100];
    for (int k = 0; k < 200; k++) {
        size_t h = 28 + (size_t)testutil_rand_below(&rng, 60);
        size_t n = (size_t)testutil_rand_below(&rng, sizeof payload);
        testutil_rand_bytes(a, h, &rng);
        testutil_rand_bytes(payload, n, &rng);
        memcpy(b, a, h);
        memcpy(b + h, payload, n);
        /* Two pieces, as a two-SGE gather copies them. */
        size_t cut = n ? (size_t)testutil_rand_below(&rng, n + 1) : 0;
        uint32_t crc = mrw_pkt_crc_hdr(a, h);
        crc = mrw_pkt_crc_copy(crc, a + h, payload, cut);
        crc = mrw_pkt_crc_copy(crc, a + h + cut, payload + cut, n - cut);
        size_t la = mrw_pkt_seal_crc(a, h + n, crc);
        size_t lb = mrw_pkt_seal(b, h + n);
        CHECK_EQ(la, lb);
        if (memcmp(a, b, lb) != 0) {
            CHECK_MSG(0, "crc_copy h %zu n %zu differs from seal", h, n);
            break;
        }
    }
}

static const struct test_case cases[] = {
    {"sweep", test_sweep},
    {"random", test_random},
    {"exhaustive", test_exhaustive},
    {"chained_seal", test_chained_seal},
};

static void run_case(const struct test_case *c)
{
    static int ready;
    if (!ready) {
        select_paths();
        ready = 1;
    }
    c->fn();
}

int main(int argc, char **argv)
{
    return test_cases_main("test_crc32c_copy", cases,
                           sizeof(cases) / sizeof(cases[0]), argc, argv,
                           run_case);
}
