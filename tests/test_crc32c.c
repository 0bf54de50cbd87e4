/*
 * test_crc32c.c - every CRC32C path against the table path and a bitwise
 * reference.
 *
 * mrw_crc32c() dispatches by CPU and length to one of four paths (table,
 * three-way crc32, 128-bit and 512-bit carry-less folding), and the folding
 * paths split each buffer into pieces by its length modulo 64 and 256 and
 * (the 512-bit one) by its alignment modulo 64.  So each path the CPU
 * has is run on its own over random data at every length 0..4096, every
 * alignment 0..63 and a random initial CRC, plus large buffers and chained
 * calls (a CRC continued over a buffer cut into random pieces, also
 * switching paths between pieces), and compared with the table path, which
 * is itself checked against a bit-at-a-time reference at every length.
 *
 * Each buffer ends exactly at the end of its allocation, so under
 * AddressSanitizer a path that reads past the end is caught even when the
 * extra bytes would not change the result.
 */
#include "../src/wire/wire_internal.h"
#include "case_table.h"
#include "mroce/wire.h"
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#define MAX_LEN 4096
#define MAX_ALIGN 64
#define CHAIN_ITERS 1000

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static const struct path {
    const char *name;
    crc_fn fn;
    unsigned needs; /* mrw_crc32c_features() bits */
} all_paths[] = {
    {"sse4.2", mrw_crc32c_sse42, MROCE_CRC32C_SSE42},
    {"pclmul", mrw_crc32c_pclmul, MROCE_CRC32C_PCLMUL},
    {"vpclmul", mrw_crc32c_vpclmul, MROCE_CRC32C_VPCLMUL},
    {"dispatch", mrw_crc32c, 0},
};
#define N_ALL (sizeof all_paths / sizeof all_paths[0])

/* The paths this CPU can run, table first. */
static struct path paths[N_ALL + 1];
static size_t npaths;

static uint64_t rng = 0xc32c0ddba11ull;

static uint32_t crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
    crc = ~crc;
    while (len--) {
        int k;
        crc ^= *p++;
        for (k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
    }
    return ~crc;
}

static void fill(uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        p[i] = (uint8_t)testutil_rand64(&rng);
}

/* len bytes at an address that is align mod 64 and ends its allocation;
 * *blk is what to free. */
static uint8_t *place(void **blk, size_t align, const uint8_t *src, size_t len)
{
    if (posix_memalign(blk, 64, align + len + (align + len == 0)))
        abort();
    memcpy((uint8_t *)*blk + align, src, len);
    return (uint8_t *)*blk + align;
}

static void select_paths(void)
{
    unsigned f = mrw_crc32c_features();

    /* Each path implies the ones before it; hw_active is the first. */
    CHECK(!(f & MROCE_CRC32C_VPCLMUL) || (f & MROCE_CRC32C_PCLMUL));
    CHECK(!(f & MROCE_CRC32C_PCLMUL) || (f & MROCE_CRC32C_SSE42));
    CHECK_EQ(mrw_crc32c_hw_active(), (f & MROCE_CRC32C_SSE42) != 0);

    paths[npaths++] = (struct path){"table", mrw_crc32c_sw, 0};
    printf("crc32c paths:");
    for (size_t i = 0; i < N_ALL; i++) {
        if ((all_paths[i].needs & f) != all_paths[i].needs)
            continue;
        paths[npaths++] = all_paths[i];
        printf(" %s", all_paths[i].name);
    }
    printf(" (and table)\n");
}

static void test_known_answers(void)
{
    static const char check[] = "123456789";
    uint8_t v[32];

    for (size_t i = 0; i < npaths; i++) {
        CHECK_MSG(paths[i].fn(0, check, 9) == 0xe3069283u, "%s: check value",
                  paths[i].name);
        CHECK_MSG(paths[i].fn(0, NULL, 0) == 0, "%s: empty", paths[i].name);
        CHECK_MSG(paths[i].fn(0x12345678u, NULL, 0) == 0x12345678u,
                  "%s: empty keeps the crc", paths[i].name);
        /* RFC 3720 (iSCSI) B.4: 32 zero bytes. */
        memset(v, 0, sizeof v);
        CHECK_MSG(paths[i].fn(0, v, 32) == 0x8a9136aau, "%s: RFC 3720 zeros",
                  paths[i].name);
    }
}

/* The table path against the bitwise reference, every length. */
static void test_table_vs_bitwise(const uint8_t *data)
{
    int ok = 1;
    for (size_t len = 0; len <= MAX_LEN; len++) {
        uint32_t seed = (uint32_t)testutil_rand64(&rng);
        if (mrw_crc32c_sw(seed, data, len) != crc32c_bitwise(seed, data, len)) {
            ok = 0;
            CHECK_MSG(0, "table != bitwise at length %zu", len);
        }
    }
    CHECK(ok);
}

/* Every path against the table, every length and alignment, a random
 * initial crc per length.  The same bytes are placed at each alignment, so
 * the table runs once per length (it is slow in unoptimised sanitizer
 * builds). */
static void test_lengths_alignments(const uint8_t *data)
{
    int ok[N_ALL + 1] = {0};

    for (size_t i = 1; i < npaths; i++)
        ok[i] = 1;
    for (size_t len = 0; len <= MAX_LEN; len++) {
        uint32_t seed = (uint32_t)testutil_rand64(&rng);
        uint32_t want = mrw_crc32c_sw(seed, data, len);
        for (size_t align = 0; align < MAX_ALIGN; align++) {
            void *blk;
            const uint8_t *p = place(&blk, align, data, len);
            for (size_t i = 1; i < npaths; i++) {
                uint32_t got = paths[i].fn(seed, p, len);
                if (got != want) {
                    ok[i] = 0;
                    CHECK_MSG(0, "%s: length %zu align %zu: 0x%08x != 0x%08x",
                              paths[i].name, len, align, got, want);
                }
            }
            free(blk);
        }
    }
    for (size_t i = 1; i < npaths; i++)
        CHECK_MSG(ok[i], "%s: lengths 0..%d at alignments 0..%d", paths[i].name,
                  MAX_LEN, MAX_ALIGN - 1);
}

/* Buffers well past every block size, a few alignments each. */
static void test_large(void)
{
    static const size_t lens[] = {
        4097,  6143,      6144,       6145 + 64,   8192 + 60, 9000 + 7,
        65536, 65536 + 1, 65536 + 63, 65536 + 255, 100000,    (1u << 20) + 13,
    };
    static const size_t aligns[] = {0, 1, 15, 16, 33, 63};
    size_t maxlen = (1u << 20) + 13;
    uint8_t *data = malloc(maxlen);
    int ok[N_ALL + 1] = {0};

    if (!CHECK(data != NULL))
        return;
    fill(data, maxlen);
    for (size_t i = 1; i < npaths; i++)
        ok[i] = 1;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        uint32_t seed = (uint32_t)testutil_rand64(&rng);
        uint32_t want = mrw_crc32c_sw(seed, data, lens[l]);
        for (size_t a = 0; a < sizeof aligns / sizeof aligns[0]; a++) {
            void *blk;
            const uint8_t *p = place(&blk, aligns[a], data, lens[l]);
            for (size_t i = 1; i < npaths; i++) {
                if (paths[i].fn(seed, p, lens[l]) != want) {
                    ok[i] = 0;
                    CHECK_MSG(0, "%s: length %zu align %zu", paths[i].name,
                              lens[l], aligns[a]);
                }
            }
            free(blk);
        }
    }
    for (size_t i = 1; i < npaths; i++)
        CHECK_MSG(ok[i], "%s: large buffers", paths[i].name);
    free(data);
}

/* A CRC continued over random pieces (empty ones included) equals the CRC
 * of the whole: once with one path throughout, once picking a path per
 * piece. */
static void test_chained(const uint8_t *data)
{
    for (size_t i = 0; i <= npaths; i++) {
        int ok = 1;
        for (int it = 0; it < CHAIN_ITERS; it++) {
            size_t off = (size_t)testutil_rand_below(&rng, MAX_ALIGN);
            size_t len = (size_t)testutil_rand_below(&rng, 3 * MAX_LEN);
            uint32_t seed = (uint32_t)testutil_rand64(&rng);
            uint32_t want = mrw_crc32c_sw(seed, data + off, len);
            uint32_t crc = seed;
            size_t pos = 0;
            while (pos < len) {
                /* Mostly short pieces, so many pieces straddle the paths'
                 * thresholds; sometimes empty, sometimes the rest. */
                size_t left = len - pos;
                size_t n = (size_t)testutil_rand_below(&rng, 8);
                n = n == 0   ? 0
                    : n == 7 ? left
                             : (size_t)testutil_rand_below(&rng, 600);
                if (n > left)
                    n = left;
                const struct path *pp =
                    i < npaths ? &paths[i]
                               : &paths[testutil_rand_below(&rng, npaths)];
                crc = pp->fn(crc, data + off + pos, n);
                pos += n;
            }
            if (crc != want) {
                ok = 0;
                CHECK_MSG(0, "%s: chained, length %zu",
                          i < npaths ? paths[i].name : "mixed", len);
            }
        }
        CHECK_MSG(ok, "%s: chained calls",
                  i < npaths ? paths[i].name : "mixed");
    }
}

/* Filled once by main before any case runs. */
static uint8_t g_data[3 * MAX_LEN + 2 * MAX_ALIGN];

static void case_table_vs_bitwise(void)
{
    test_table_vs_bitwise(g_data);
}

static void case_lengths_alignments(void)
{
    test_lengths_alignments(g_data);
}

static void case_chained(void)
{
    test_chained(g_data);
}

static const struct test_case cases[] = {
    {"known_answers", test_known_answers},
    {"table_vs_bitwise", case_table_vs_bitwise},
    {"lengths_alignments", case_lengths_alignments},
    {"large", test_large},
    {"chained", case_chained},
};

/* The data and the CRC paths are set up before the first case only, so
 * -l prints nothing else. */
static void run_case(const struct test_case *c)
{
    static int ready;
    if (!ready) {
        fill(g_data, sizeof g_data);
        select_paths();
        ready = 1;
    }
    c->fn();
}

int main(int argc, char **argv)
{
    return test_cases_main("test_crc32c", cases,
                           sizeof(cases) / sizeof(cases[0]), argc, argv,
                           run_case);
}
