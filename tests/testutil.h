/*
 * testutil.h - the tiny assertion kit shared by the tests/test_*.c programs.
 *
 * Each test is a plain executable that CTest runs; it counts checks instead
 * of stopping at the first failure, so one run shows everything that broke,
 * and ends with TESTUTIL_SUMMARY(), which prints the one-line verdict
 * ("NAME: N passed, M failed") and yields the exit status.  Header-only and
 * static, so every test program gets its own counters without a library.
 *
 *   #include "testutil.h"
 *   int main(void)
 *   {
 *       CHECK(1 + 1 == 2);
 *       CHECK_EQ(x, 42);                    // prints both values on failure
 *       CHECK_MSG(ok, "vector %s", name);   // adds printf-style context
 *       return TESTUTIL_SUMMARY("test_example");
 *   }
 */
#ifndef MROCE_TESTUTIL_H
#define MROCE_TESTUTIL_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define TESTUTIL_UNUSED __attribute__((unused))
#define TESTUTIL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TESTUTIL_UNUSED
#define TESTUTIL_PRINTF(f, a)
#endif

/* Failures beyond this many are counted but not printed, so a test that
 * fails inside a loop of thousands of iterations stays readable. */
#ifndef TESTUTIL_MAX_REPORTS
#define TESTUTIL_MAX_REPORTS 50
#endif

static TESTUTIL_UNUSED long testutil_passed;
static TESTUTIL_UNUSED long testutil_failed;

static inline void testutil_report(const char *file, int line, const char *what)
{
    if (testutil_failed <= TESTUTIL_MAX_REPORTS)
        fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
    else if (testutil_failed == TESTUTIL_MAX_REPORTS + 1)
        fprintf(stderr, "(further failures counted but not printed)\n");
}

/* Records one check; on failure prints "file:line: check failed: what".
 * Returns cond so callers can skip dependent checks:
 *     if (!CHECK(p != NULL)) return; */
static inline int testutil_check(int cond, const char *file, int line,
                                 const char *what)
{
    if (cond) {
        testutil_passed++;
        return 1;
    }
    testutil_failed++;
    testutil_report(file, line, what);
    return 0;
}

/* As testutil_check, and on failure also prints the formatted context. */
static inline TESTUTIL_PRINTF(5,
                              6) int testutil_checkf(int cond, const char *file,
                                                     int line, const char *what,
                                                     const char *fmt, ...)
{
    va_list ap;
    if (testutil_check(cond, file, line, what))
        return 1;
    if (testutil_failed <= TESTUTIL_MAX_REPORTS) {
        fputs("    ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    return 0;
}

#define CHECK(cond) testutil_check(!!(cond), __FILE__, __LINE__, #cond)

/* CHECK with printf-style context, e.g. the vector or iteration at fault. */
#define CHECK_MSG(cond, ...) \
    testutil_checkf(!!(cond), __FILE__, __LINE__, #cond, __VA_ARGS__)

/* Integer equality that shows both sides on failure.  CHECK_EQ compares as
 * unsigned 64-bit (any unsigned field, sizes, lengths); CHECK_EQ_INT as
 * signed (error codes, differences). */
#define CHECK_EQ(a, b)                                                       \
    do {                                                                     \
        unsigned long long testutil_a_ = (unsigned long long)(a);            \
        unsigned long long testutil_b_ = (unsigned long long)(b);            \
        testutil_checkf(testutil_a_ == testutil_b_, __FILE__, __LINE__,      \
                        #a " == " #b, "%llu (0x%llx) != %llu (0x%llx)",      \
                        testutil_a_, testutil_a_, testutil_b_, testutil_b_); \
    } while (0)

#define CHECK_EQ_INT(a, b)                                              \
    do {                                                                \
        long long testutil_a_ = (long long)(a);                         \
        long long testutil_b_ = (long long)(b);                         \
        testutil_checkf(testutil_a_ == testutil_b_, __FILE__, __LINE__, \
                        #a " == " #b, "%lld != %lld", testutil_a_,      \
                        testutil_b_);                                   \
    } while (0)

/* Prints "NAME: N passed, M failed" on stdout and evaluates to the exit
 * status: 0 if nothing failed (and something was checked), else 1. */
static inline int testutil_summary(const char *name)
{
    printf("%s: %ld passed, %ld failed\n", name, testutil_passed,
           testutil_failed);
    fflush(stdout);
    return (testutil_failed == 0 && testutil_passed > 0) ? 0 : 1;
}

#define TESTUTIL_SUMMARY(name) testutil_summary(name)

/* Seeded PRNG (splitmix64) for randomized tests: reproducible runs, no libc
 * rand() state shared with the code under test. */
static inline uint64_t testutil_rand64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform-ish value in [0, n); n > 0.  Modulo bias is irrelevant here. */
static inline uint64_t testutil_rand_below(uint64_t *state, uint64_t n)
{
    return testutil_rand64(state) % n;
}

/* The engine's allocator and random-byte hooks (struct mre_ep_config's
 * mem.calloc, mem.free and rand) for tests that build endpoints by hand:
 * plain calloc/free, and bytes from the splitmix64 state passed as u. */
static inline void *testutil_calloc(size_t n, size_t sz, void *u)
{
    (void)u;
    return calloc(n, sz);
}

static inline void testutil_free(void *p, void *u)
{
    (void)u;
    free(p);
}

static inline void testutil_rand_bytes(uint8_t *b, size_t n, void *u)
{
    uint64_t *s = u;
    while (n) {
        uint64_t v = testutil_rand64(s);
        size_t k = n < 8 ? n : 8;
        memcpy(b, &v, k);
        b += k;
        n -= k;
    }
}

#endif /* MROCE_TESTUTIL_H */
