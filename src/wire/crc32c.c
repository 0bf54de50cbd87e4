/*
 * crc32c.c - CRC32C (Castagnoli) for the packet trailer.
 *
 * Every packet the engine sends is sealed with this CRC and every packet it
 * receives is checked with it before anything else looks at the bytes, so it
 * sits on the per-packet fast path for both directions.  On x86-64 CPUs with
 * SSE4.2 it uses the crc32 instruction on three interleaved streams (the
 * instruction has a latency of 3 cycles but a throughput of 1, so one stream
 * would leave two thirds of it idle) and joins the three partial CRCs with
 * precomputed "append N zero bytes" tables, after Mark Adler's crc32c.c.
 * Elsewhere it falls back to slicing-by-8 tables.  Both paths give the same
 * result: the reflected CRC with initial value and final xor 0xffffffff, in
 * the zlib calling convention (pass 0 to start, pass the previous result to
 * continue over a further buffer).
 */
#include "mroce/wire.h"
#include "wire_internal.h"

#include <string.h>

#include "crc32c_table.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MROCE_CRC32C_X86 1
#include <cpuid.h>
#include <nmmintrin.h>
#include <stdatomic.h>
#endif

/* Little-endian 32-bit load: slicing-by-8 consumes the stream low byte first
 * whatever the host byte order. */
static inline uint32_t ld32le(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

/* Table path on the raw (already inverted) register. */
static uint32_t crc32c_sw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint32_t lo = crc ^ ld32le(p);
        uint32_t hi = ld32le(p + 4);
        crc = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^
              crc32c_table[5][(lo >> 16) & 0xff] ^ crc32c_table[4][lo >> 24] ^
              crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
              crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

uint32_t mroce_crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    return ~crc32c_sw_raw(~crc, (const uint8_t *)data, len);
}

#ifdef MROCE_CRC32C_X86

/* Block sizes of the three-way interleave; they must match the lengths the
 * zeros tables were generated for.  LONG serves jumbo frames, SHORT the
 * common 1-4 KiB packets; anything under 3*SHORT runs as one stream. */
#define CRC_LONG 2048
#define CRC_SHORT 256

/* Append the tables' worth of zero bytes to the raw register. */
static inline uint32_t crc32c_shift(const uint32_t zeros[4][256], uint32_t crc)
{
    return zeros[0][crc & 0xff] ^ zeros[1][(crc >> 8) & 0xff] ^
           zeros[2][(crc >> 16) & 0xff] ^ zeros[3][crc >> 24];
}

static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* One interleaved round: three streams of blk bytes, joined into c0. */
#define CRC32C_3WAY(blk, zeros)                                                \
    while (len >= 3 * (size_t)(blk)) {                                         \
        uint64_t c1 = 0, c2 = 0;                                               \
        const uint8_t *end = p + (blk);                                        \
        do {                                                                   \
            c0 = _mm_crc32_u64(c0, ld64(p));                                   \
            c1 = _mm_crc32_u64(c1, ld64(p + (blk)));                           \
            c2 = _mm_crc32_u64(c2, ld64(p + 2 * (blk)));                       \
            p += 8;                                                            \
        } while (p < end);                                                     \
        c0 = crc32c_shift(zeros, (uint32_t)c0) ^ (uint32_t)c1;                 \
        c0 = crc32c_shift(zeros, (uint32_t)c0) ^ (uint32_t)c2;                 \
        p += 2 * (blk);                                                        \
        len -= 3 * (size_t)(blk);                                              \
    }

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c0 = crc;

    CRC32C_3WAY(CRC_LONG, crc32c_zeros_long)
    CRC32C_3WAY(CRC_SHORT, crc32c_zeros_short)
    while (len >= 8) {
        c0 = _mm_crc32_u64(c0, ld64(p));
        p += 8;
        len -= 8;
    }
    while (len--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}

/* -1 until the first call has asked CPUID.  Relaxed atomics: every thread
 * computes the same answer, so a race only repeats the (cheap) question, and
 * the atomic keeps that benign race defined behaviour. */
static atomic_int crc32c_hw_state = -1;

static int crc32c_detect(void)
{
#ifdef __SSE4_2__
    return 1; /* compiled for SSE4.2: every CPU that runs this binary has it */
#else
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    return (ecx & bit_SSE4_2) != 0;
#endif
}

int mroce_crc32c_hw_active(void)
{
    int hw = atomic_load_explicit(&crc32c_hw_state, memory_order_relaxed);
    if (hw < 0) {
        hw = crc32c_detect();
        atomic_store_explicit(&crc32c_hw_state, hw, memory_order_relaxed);
    }
    return hw;
}

uint32_t mroce_crc32c(uint32_t crc, const void *data, size_t len)
{
    const uint8_t *p = (const uint8_t *)data;
    if (mroce_crc32c_hw_active())
        return ~crc32c_hw_raw(~crc, p, len);
    return ~crc32c_sw_raw(~crc, p, len);
}

#else /* !MROCE_CRC32C_X86 */

int mroce_crc32c_hw_active(void)
{
    return 0;
}

uint32_t mroce_crc32c(uint32_t crc, const void *data, size_t len)
{
    return ~crc32c_sw_raw(~crc, (const uint8_t *)data, len);
}

#endif
