/*
 * bench_crc32c.c - CRC32C throughput per path and buffer size.
 *
 * Every packet is CRC32C-checked over its whole length twice (seal and
 * check), so the CRC sets a floor under the engine's per-byte cost.  This
 * times each path the CPU supports (table, sse4.2 three-way crc32, pclmul
 * 4x128-bit folding, vpclmul 4x512-bit folding) and mrw_crc32c() itself,
 * which dispatches by CPU and length, on one in-cache buffer at the sizes
 * that matter (64 B acks, 128 B small packets, 512 B, 4 KiB and 8 KiB
 * payloads), with memcpy over the same sizes as a yardstick for what the
 * machine moves per second.  A second table shows packet lengths (never a
 * multiple of 64) on misaligned buffers, where the folding paths' tail and
 * alignment handling shows; a third the latency of one call, which is what
 * a single small packet waits for and what set mrw_crc32c()'s length
 * thresholds.  The last table times the sender's gather, a copy with the
 * CRC of what it copies: each mrw_crc32c_copy() path against memcpy alone,
 * from an aligned source to a destination at a packet's payload offsets.
 *
 * Calls are independent (each starts from 0; the results are xored into a
 * sink), as successive packets are; the figure is bytes hashed per second
 * in the fastest of many short trials (see crc_gbps()).
 *
 * Usage: bench_crc32c [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../src/wire/wire_internal.h"
#include <mroce/wire.h>

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static const struct path {
    const char *name;
    crc_fn fn;
    unsigned needs; /* mrw_crc32c_features() bits; 0 = runs anywhere */
} paths[] = {
    {"table", mrw_crc32c_sw, 0},
    {"sse4.2", mrw_crc32c_sse42, MROCE_CRC32C_SSE42},
    {"pclmul", mrw_crc32c_pclmul, MROCE_CRC32C_PCLMUL},
    {"vpclmul", mrw_crc32c_vpclmul, MROCE_CRC32C_VPCLMUL},
    {"dispatch", mrw_crc32c, 0},
};
#define NPATHS (sizeof paths / sizeof paths[0])

typedef uint32_t (*copy_fn)(uint32_t, void *, const void *, size_t);

static const struct copy_path {
    const char *name;
    copy_fn fn;
    unsigned needs;
} copy_paths[] = {
    {"twopass", mrw_crc32c_copy_twopass, 0},
    {"pclmul", mrw_crc32c_copy_pclmul, MROCE_CRC32C_PCLMUL},
    {"vpclmul", mrw_crc32c_copy_vpclmul, MROCE_CRC32C_VPCLMUL},
    {"dispatch", mrw_crc32c_copy, 0},
};
#define NCOPY (sizeof copy_paths / sizeof copy_paths[0])

static double wall(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile uint32_t sink;
static double min_secs = 0.2;

/* Trials are short (about 50 us) and only the fastest counts: the machine
 * may be shared, and interference can only make a trial slower, so the
 * best of many short trials is the figure least disturbed by it. */
#define TRIAL_BYTES (1u << 20)

/* GB/s of fn over len bytes at buf: best trial within min_secs. */
static double crc_gbps(crc_fn fn, const uint8_t *buf, size_t len)
{
    size_t calls = TRIAL_BYTES / len + 1;
    double best = 0, end = wall() + min_secs;
    uint32_t acc = 0;
    do {
        double t0 = wall();
        for (size_t i = 0; i < calls; i++)
            acc ^= fn(0, buf, len);
        double g = (double)calls * (double)len / (wall() - t0) / 1e9;
        if (g > best)
            best = g;
    } while (wall() < end);
    sink ^= acc;
    return best;
}

/* ns per call when each call continues the CRC the previous one returned,
 * so calls cannot overlap: the latency of one packet's CRC. */
static double crc_ns_chained(crc_fn fn, const uint8_t *buf, size_t len)
{
    size_t calls = TRIAL_BYTES / len + 1;
    double best = 1e30, end = wall() + min_secs;
    uint32_t crc = 0;
    do {
        double t0 = wall();
        for (size_t i = 0; i < calls; i++)
            crc = fn(crc, buf, len);
        double ns = (wall() - t0) * 1e9 / (double)calls;
        if (ns < best)
            best = ns;
    } while (wall() < end);
    sink ^= crc;
    return best;
}

static double memcpy_gbps(uint8_t *dst, const uint8_t *src, size_t len)
{
    size_t calls = TRIAL_BYTES / len + 1;
    double best = 0, end = wall() + min_secs;
    do {
        double t0 = wall();
        for (size_t i = 0; i < calls; i++) {
            memcpy(dst, src, len);
            __asm__ volatile("" ::"r"(dst) : "memory"); /* keep the copy */
        }
        double g = (double)calls * (double)len / (wall() - t0) / 1e9;
        if (g > best)
            best = g;
    } while (wall() < end);
    return best;
}

/* GB/s of a fused copy path, timed like crc_gbps(). */
static double copy_gbps(copy_fn fn, uint8_t *dst, const uint8_t *src,
                        size_t len)
{
    size_t calls = TRIAL_BYTES / len + 1;
    double best = 0, end = wall() + min_secs;
    uint32_t acc = 0;
    do {
        double t0 = wall();
        for (size_t i = 0; i < calls; i++) {
            acc ^= fn(0, dst, src, len);
            __asm__ volatile("" ::"r"(dst) : "memory");
        }
        double g = (double)calls * (double)len / (wall() - t0) / 1e9;
        if (g > best)
            best = g;
    } while (wall() < end);
    sink ^= acc;
    return best;
}

static void copy_row(unsigned feat, const char *label, uint8_t *dst,
                     const uint8_t *src, size_t len)
{
    printf("%-14s", label);
    for (size_t i = 0; i < NCOPY; i++)
        if ((copy_paths[i].needs & feat) == copy_paths[i].needs)
            printf(" %9.2f", copy_gbps(copy_paths[i].fn, dst, src, len));
    printf(" %9.2f\n", memcpy_gbps(dst, src, len));
    fflush(stdout);
}

static void header(unsigned feat, const char *first, int with_memcpy)
{
    printf("%-14s", first);
    for (size_t i = 0; i < NPATHS; i++)
        if ((paths[i].needs & feat) == paths[i].needs)
            printf(" %9s", paths[i].name);
    if (with_memcpy)
        printf(" %9s", "memcpy");
    printf("\n");
}

static void row(unsigned feat, const char *label, const uint8_t *buf,
                uint8_t *dst, size_t len)
{
    printf("%-14s", label);
    for (size_t i = 0; i < NPATHS; i++)
        if ((paths[i].needs & feat) == paths[i].needs)
            printf(" %9.2f", crc_gbps(paths[i].fn, buf, len));
    printf(" %9.2f\n", memcpy_gbps(dst, buf, len));
    fflush(stdout);
}

static void row_chained(unsigned feat, const uint8_t *buf, size_t len)
{
    printf("%-14zu", len);
    for (size_t i = 0; i < NPATHS; i++)
        if ((paths[i].needs & feat) == paths[i].needs)
            printf(" %9.1f", crc_ns_chained(paths[i].fn, buf, len));
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {64, 128, 512, 4096, 8192};
    /* 124: a 64-byte WRITE (headers + payload, without the trailer it
     * seals); 4156: a 4 KiB WRITE; 8252: an 8 KiB one (jumbo MTU). */
    static const size_t pkts[] = {124, 4156, 8252};
    static const size_t offs[] = {0, 1, 16, 33};
    static const size_t lat[] = {16, 48, 64, 124, 128, 256, 512, 4156};
    /* Payload sizes the sender gathers, at destination offsets 0 and those
     * of a payload after the headers of a WRITE (60) and a READ response
     * (44). */
    static const size_t gather[] = {512, 4096, 8192};
    static const size_t goffs[] = {0, 44, 60};
    unsigned feat = mrw_crc32c_features();
    uint8_t *buf = aligned_alloc(64, 8192 + 128);
    uint8_t *dst = aligned_alloc(64, 8192 + 128);
    char label[32];

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            min_secs = 0.05;
        } else {
            fprintf(stderr, "usage: bench_crc32c [--quick]\n");
            return 2;
        }
    }
    if (!buf || !dst)
        return 1;
    for (size_t i = 0; i < 8192 + 128; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
    memset(dst, 0, 8192 + 128);

    printf("CRC32C GB/s, in cache, 64-byte aligned buffer "
           "(dispatch = mrw_crc32c)\n");
    header(feat, "bytes", 1);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        snprintf(label, sizeof label, "%zu", sizes[i]);
        row(feat, label, buf, dst, sizes[i]);
    }
    printf("\npacket lengths at byte offsets from a 64-byte boundary, GB/s\n");
    header(feat, "bytes+offset", 1);
    for (size_t i = 0; i < sizeof pkts / sizeof pkts[0]; i++)
        for (size_t j = 0; j < sizeof offs / sizeof offs[0]; j++) {
            snprintf(label, sizeof label, "%zu+%zu", pkts[i], offs[j]);
            row(feat, label, buf + offs[j], dst + offs[j], pkts[i]);
        }
    printf("\nlatency, ns per call, each call continuing the previous CRC\n");
    header(feat, "bytes", 0);
    for (size_t i = 0; i < sizeof lat / sizeof lat[0]; i++)
        row_chained(feat, buf, lat[i]);
    printf("\ncopy + CRC32C (mrw_crc32c_copy paths), GB/s, aligned source, "
           "destination at +offset\n");
    printf("%-14s", "bytes+offset");
    for (size_t i = 0; i < NCOPY; i++)
        if ((copy_paths[i].needs & feat) == copy_paths[i].needs)
            printf(" %9s", copy_paths[i].name);
    printf(" %9s\n", "memcpy");
    for (size_t i = 0; i < sizeof gather / sizeof gather[0]; i++)
        for (size_t j = 0; j < sizeof goffs / sizeof goffs[0]; j++) {
            snprintf(label, sizeof label, "%zu+%zu", gather[i], goffs[j]);
            copy_row(feat, label, dst + goffs[j], buf, gather[i]);
        }
    free(buf);
    free(dst);
    return (int)(sink & 0);
}
