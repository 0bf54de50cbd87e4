/*
 * crc32c.c - CRC32C (Castagnoli) for the packet trailer.
 *
 * Every packet the engine sends is sealed with this CRC and every packet it
 * receives is checked with it before anything else looks at the bytes, so it
 * sits on the per-packet fast path for both directions.  Four paths give the
 * same result, the reflected CRC with initial value and final xor 0xffffffff
 * in the zlib calling convention (pass 0 to start, pass the previous result
 * to continue over a further buffer):
 *
 *   table   - slicing-by-8, for any CPU;
 *   sse4.2  - the crc32 instruction on three interleaved streams (latency 3,
 *             throughput 1, so one stream would leave two thirds of it idle),
 *             the partial CRCs joined with "append N zero bytes" tables,
 *             after Mark Adler's crc32c.c;
 *   pclmul  - carry-less multiplication folding (Intel, "Fast CRC
 *             Computation for Generic Polynomials Using PCLMULQDQ
 *             Instruction"): four 128-bit lanes are multiplied forward over
 *             the buffer by constants x^k mod P, so the work per 64 bytes is
 *             eight independent multiplies instead of a serial chain;
 *   vpclmul - the same with AVX-512 VPCLMULQDQ on four 512-bit registers
 *             (sixteen 128-bit lanes, 256 bytes per round).
 *
 * The folding paths end on the crc32 instruction instead of a Barrett
 * reduction: the folded 128 bits are congruent to the whole message modulo
 * P, and two crc32 steps over them are exactly "reduce and finish".  The
 * bytes after the last whole 64-byte block go through crc32 in parallel
 * with the folding and are joined by linearity, so no length or alignment
 * needs a byte-shuffling tail.
 *
 * mrw_crc32c() asks CPUID once (no __builtin_cpu_supports, so the library
 * needs no __cpu_model from libgcc) and picks per call by length: sse4.2
 * below 64 bytes, pclmul from 64, vpclmul from 256 (see CRC32C_PCLMUL_MIN).
 * Only the functions that use the newer instructions are compiled for them
 * (target attributes), so the library still runs on baseline x86-64; on
 * other architectures only the table path is built.
 *
 * mrw_crc32c_copy() is the CRC of a buffer the caller also copies (the
 * sender's payload gather): on the pclmul and vpclmul paths each lane is
 * stored to the destination as it is loaded for folding, so the source is
 * read once.
 */
#include "mroce/wire.h"
#include "wire_internal.h"

#include <string.h>

#include "crc32c_table.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MROCE_CRC32C_X86 1
#include <cpuid.h>
#include <immintrin.h>
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

/* Out of line: on x86 it is the rare fallback, and inlined into
 * mrw_crc32c() (clang does) it would make every call there set up a
 * frame for registers only it uses. */
__attribute__((noinline)) uint32_t mrw_crc32c_sw(uint32_t crc, const void *data,
                                                 size_t len)
{
    return ~crc32c_sw_raw(~crc, (const uint8_t *)data, len);
}

/* The copy, then the CRC over the copy (dispatched, so on any path). */
uint32_t mrw_crc32c_copy_twopass(uint32_t crc, void *dst, const void *src,
                                 size_t len)
{
    if (len)
        memcpy(dst, src, len);
    return mrw_crc32c(crc, dst, len);
}

#ifdef MROCE_CRC32C_X86

/* ---- sse4.2: three interleaved crc32 streams ---------------------------- */

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

static inline uint32_t ld32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline uint16_t ld16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* One interleaved round: three streams of blk bytes, joined into c0. */
#define CRC32C_3WAY(blk, zeros)                                \
    while (len >= 3 * (size_t)(blk)) {                         \
        uint64_t c1 = 0, c2 = 0;                               \
        const uint8_t *end = p + (blk);                        \
        do {                                                   \
            c0 = _mm_crc32_u64(c0, ld64(p));                   \
            c1 = _mm_crc32_u64(c1, ld64(p + (blk)));           \
            c2 = _mm_crc32_u64(c2, ld64(p + 2 * (blk)));       \
            p += 8;                                            \
        } while (p < end);                                     \
        c0 = crc32c_shift(zeros, (uint32_t)c0) ^ (uint32_t)c1; \
        c0 = crc32c_shift(zeros, (uint32_t)c0) ^ (uint32_t)c2; \
        p += 2 * (blk);                                        \
        len -= 3 * (size_t)(blk);                              \
    }

/* Fewer than 64 bytes from register c (upper half zero), one step per set
 * bit of len (32, 16, 8, 4, 2, 1 bytes): straight-line code whose branches each
 * go the same way for a given length, instead of a loop with an exit to predict
 * and up to seven single byte steps (each costs the full 3-cycle latency of
 * crc32). */
__attribute__((target("sse4.2"))) static inline uint32_t
crc32c_hw_small(uint64_t c, const uint8_t *p, size_t len)
{
    uint32_t crc;
    if (len & 32) {
        c = _mm_crc32_u64(c, ld64(p));
        c = _mm_crc32_u64(c, ld64(p + 8));
        c = _mm_crc32_u64(c, ld64(p + 16));
        c = _mm_crc32_u64(c, ld64(p + 24));
        p += 32;
    }
    if (len & 16) {
        c = _mm_crc32_u64(c, ld64(p));
        c = _mm_crc32_u64(c, ld64(p + 8));
        p += 16;
    }
    if (len & 8) {
        c = _mm_crc32_u64(c, ld64(p));
        p += 8;
    }
    crc = (uint32_t)c;
    if (len & 4) {
        crc = _mm_crc32_u32(crc, ld32(p));
        p += 4;
    }
    if (len & 2) {
        crc = _mm_crc32_u16(crc, ld16(p));
        p += 2;
    }
    if (len & 1)
        crc = _mm_crc32_u8(crc, *p);
    return crc;
}

__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    uint64_t c0 = crc;

    CRC32C_3WAY(CRC_LONG, crc32c_zeros_long)
    CRC32C_3WAY(CRC_SHORT, crc32c_zeros_short)
    /* The rest as one stream; unrolled to 64 bytes a turn, which cannot
     * shorten the chain but saves a loop branch per 8 bytes. */
    while (len >= 64) {
        for (int i = 0; i < 64; i += 8)
            c0 = _mm_crc32_u64(c0, ld64(p + i));
        p += 64;
        len -= 64;
    }
    return crc32c_hw_small(c0, p, len);
}

__attribute__((target("sse4.2"))) uint32_t
mrw_crc32c_sse42(uint32_t crc, const void *data, size_t len)
{
    return ~crc32c_hw_raw(~crc, (const uint8_t *)data, len);
}

/* mrw_crc32c() below 64 bytes: the same result as crc32c_hw_raw() without
 * its block-size checks.  Takes and returns the caller's (not inverted) CRC,
 * as all the per-path entry points do, so that mrw_crc32c() reaches them
 * by a jump rather than a call it must return through to invert. */
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw_short(uint32_t crc, const uint8_t *p, size_t len)
{
    /* The 32-bit not clears the upper half; converting the argument to
     * 64 bits afterwards lets the compiler skip a separate zero-extending
     * mov (a cycle of latency on every short CRC). */
    return ~crc32c_hw_small((uint64_t)(uint32_t)~crc, p, len);
}

/* ---- folding constants ---------------------------------------------------
 *
 * Take the message as a polynomial over GF(2) whose first bit is the highest
 * power (CRC32C is "reflected": bit 0 of byte 0 comes first), so the raw CRC
 * of M, zero initial register, is M(x) * x^32 mod P.  Only M mod P matters,
 * so any stretch of the message may be replaced by something congruent.
 *
 * A 128-bit lane A followed by D more bits of message contributes
 * A(x) * x^D.  Split A into its first qword H (64 higher powers) and its
 * second L: A * x^D = H * x^(D+64) + L * x^D.  PCLMULQDQ on bit-reflected
 * operands returns the reflected product one bit short of 128 (bit k of the
 * result holds x^(94-k) for a 64-bit by 32-bit multiply), i.e. it
 * multiplies by an extra x^-33 relative to the lane the result is xored
 * into.  So the constants are x^(D+64-33) = x^(D+31) for H (low qword) and
 * x^(D-33) for L (high qword), each reduced mod P and stored reflected in
 * 32 bits; the two 96-bit products, xored, are congruent to A moved D bits
 * forward and land as a 128-bit lane at that position.
 *
 * The values were generated by a throwaway program that starts from x^0
 * (0x80000000 in reflected form) and multiplies by x n times with the
 * reflected shift-register step v = (v >> 1) ^ (v & 1 ? 0x82f63b78 : 0)
 * (for negative n it undoes that step instead).  The tests compare every
 * path against the table path at every length up to 4 KiB, so a wrong
 * constant cannot go unnoticed.
 *
 *    D (bits)   x^(D+31) mod P   x^(D-33) mod P
 */
#define CRC32C_K128 0xf20c0dfeu, 0x493c7d27u  /* 128  x^159,  x^95   */
#define CRC32C_K256 0x3da6d0cbu, 0xba4fc28eu  /* 256  x^287,  x^223  */
#define CRC32C_K384 0x1c291d04u, 0xddc0152bu  /* 384  x^415,  x^351  */
#define CRC32C_K512 0x740eef02u, 0x9e4addf8u  /* 512  x^543,  x^479  */
#define CRC32C_K1024 0x6992cea2u, 0x0d3b6092u /* 1024 x^1055, x^991  */
#define CRC32C_K1536 0xa87ab8a8u, 0xab7aff2au /* 1536 x^1567, x^1503 */
#define CRC32C_K2048 0xdcb17aa4u, 0xb9e02b86u /* 2048 x^2079, x^2015 */

/* For the tail: crc32c_xpow8[n + 8] = x^(8n+31) mod P for n = -8..63, so
 * the pair for moving a lane forward over t < 64 bytes (D = 8t) is
 * crc32c_xpow8[t + 8] and crc32c_xpow8[t] (x^(8t-33) = x^(8(t-8)+31)). */
static const uint32_t crc32c_xpow8[72] = {
    0xa9cdda0du, 0xbf818109u, 0x780d5a4du, 0xfe2b5c35u, 0x05ec76f1u,
    0x01000000u, 0x00010000u, 0x00000100u, 0x00000001u, 0xf26b8303u,
    0x13a29877u, 0xa541927eu, 0xdd45aab8u, 0x38116facu, 0xef306b19u,
    0x68032cc8u, 0x493c7d27u, 0xf43ed648u, 0xcb567ba5u, 0x9771f7c1u,
    0x3171d430u, 0x30d23865u, 0x54075546u, 0x678efd01u, 0xf20c0dfeu,
    0x5fe4dc5fu, 0x0f69022bu, 0xb93b4ce7u, 0x3743f7bdu, 0x0d0a7dedu,
    0x5c15eeb4u, 0x75d3f038u, 0xba4fc28eu, 0x2e34cb9du, 0x2dae840fu,
    0x5e3e92a0u, 0xa2158b34u, 0xf7dbcb25u, 0x15bb4109u, 0x78a7608du,
    0x3da6d0cbu, 0x5a392b2fu, 0x7ef48bd1u, 0x21c69623u, 0x33ccbbbcu,
    0xff6571a2u, 0x438fa020u, 0x20fe017eu, 0xddc0152bu, 0xb9e9e5f0u,
    0xf3d78690u, 0x925b2b91u, 0x6051243fu, 0x6e9024b1u, 0x401061eeu,
    0x4f08075cu, 0x1c291d04u, 0xc786be02u, 0xe1fcf649u, 0x39283a86u,
    0xa46ef4aau, 0xc90df36au, 0x0aedb6a9u, 0xdaf383dcu, 0x9e4addf8u,
    0x79297d67u, 0xb575def4u, 0x34418db4u, 0x75bba45bu, 0xc8d9ca4cu,
    0x0cf00ba6u, 0x84e6a245u,
};

/* ---- pclmul: four 128-bit lanes ----------------------------------------- */

#define CRC32C_PCLMUL_TARGET __attribute__((target("sse4.2,pclmul")))

/* The constant pair for one fold distance: H's multiplier in the low qword,
 * L's in the high one (selectors 0x00 and 0x11 below). */
CRC32C_PCLMUL_TARGET static inline __m128i k128(uint32_t kh, uint32_t kl)
{
    return _mm_set_epi64x((long long)kl, (long long)kh);
}

/* x moved forward by the distance k was made for, xored onto data there. */
CRC32C_PCLMUL_TARGET static inline __m128i fold128(__m128i x, __m128i k,
                                                   __m128i data)
{
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
                                       _mm_clmulepi64_si128(x, k, 0x11)),
                         data);
}

CRC32C_PCLMUL_TARGET static inline __m128i ld128(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/*
 * The end of both folding paths.  v is congruent to the message up to tail
 * (with the caller's initial register already xored into its first bytes),
 * and t < 64 bytes at tail remain.  CRC32C from a zero register is linear
 * and blind to leading zeros, so
 *     crc(V || T) = crc(V followed by t zero bytes) ^ crc(T):
 * the tail's CRC runs on the crc32 unit while the folding finishes, and v is
 * moved forward over t bytes by one more fold.  The final reduction is two
 * crc32 steps on v: the instruction computes (crc * x^64 + data * x^32) mod
 * P, which from a zero register is exactly what the folded lane still owes.
 */
CRC32C_PCLMUL_TARGET static inline uint32_t
crc32c_fold_finish(__m128i v, const uint8_t *tail, size_t t)
{
    uint32_t ct = 0;
    uint64_t c;

    if (t) {
        ct = crc32c_hw_small(0, tail, t);
        v = fold128(v, k128(crc32c_xpow8[t + 8], crc32c_xpow8[t]),
                    _mm_setzero_si128());
    }
    c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(v));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(v, 1));
    return (uint32_t)c ^ ct;
}

/*
 * Any alignment, length >= 64.  The caller's register enters the first lane
 * by xor (a CRC started from register r equals one started from zero over
 * the message with r xored into its first four bytes); whole 64-byte blocks
 * are folded, then the len % 64 tail is done by crc32c_fold_finish().
 */
CRC32C_PCLMUL_TARGET static uint32_t
crc32c_pclmul_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    __m128i x0, x1, x2, x3, k;
    size_t t = len & 63;

    if (len < 64)
        return crc32c_hw_raw(crc, p, len);
    len -= t;
    x0 = _mm_xor_si128(ld128(p), _mm_cvtsi32_si128((int)crc));
    x1 = ld128(p + 16);
    x2 = ld128(p + 32);
    x3 = ld128(p + 48);
    p += 64;
    len -= 64;
    k = k128(CRC32C_K512);
    while (len) {
        x0 = fold128(x0, k, ld128(p));
        x1 = fold128(x1, k, ld128(p + 16));
        x2 = fold128(x2, k, ld128(p + 32));
        x3 = fold128(x3, k, ld128(p + 48));
        p += 64;
        len -= 64;
    }
    /* Four lanes into one: the multiplies are independent, only the xors
     * chain. */
    x0 = fold128(x0, k128(CRC32C_K384),
                 fold128(x1, k128(CRC32C_K256),
                         fold128(x2, k128(CRC32C_K128), x3)));
    return crc32c_fold_finish(x0, p, t);
}

CRC32C_PCLMUL_TARGET uint32_t mrw_crc32c_pclmul(uint32_t crc, const void *data,
                                                size_t len)
{
    return ~crc32c_pclmul_raw(~crc, (const uint8_t *)data, len);
}

/* ---- pclmul with a copy: the gather read once ----------------------------
 *
 * crc32c_pclmul_raw() with every 16-byte lane it loads also stored to dst,
 * and the tail it hands to crc32 copied beside it: one pass over src
 * instead of a memcpy and a CRC.  The stores ride in the shadow of the
 * carry-less multiplies, which bound the loop.
 */
CRC32C_PCLMUL_TARGET static inline __m128i ldst128(uint8_t *d, const uint8_t *p)
{
    __m128i v = ld128(p);
    _mm_storeu_si128((__m128i *)(void *)d, v);
    return v;
}

CRC32C_PCLMUL_TARGET static uint32_t
crc32c_copy_pclmul_raw(uint32_t crc, uint8_t *d, const uint8_t *p, size_t len)
{
    __m128i x0, x1, x2, x3, k;
    size_t t = len & 63;

    if (len < 64) {
        memcpy(d, p, len);
        return crc32c_hw_raw(crc, p, len);
    }
    len -= t;
    x0 = _mm_xor_si128(ldst128(d, p), _mm_cvtsi32_si128((int)crc));
    x1 = ldst128(d + 16, p + 16);
    x2 = ldst128(d + 32, p + 32);
    x3 = ldst128(d + 48, p + 48);
    p += 64;
    d += 64;
    len -= 64;
    k = k128(CRC32C_K512);
    while (len) {
        x0 = fold128(x0, k, ldst128(d, p));
        x1 = fold128(x1, k, ldst128(d + 16, p + 16));
        x2 = fold128(x2, k, ldst128(d + 32, p + 32));
        x3 = fold128(x3, k, ldst128(d + 48, p + 48));
        p += 64;
        d += 64;
        len -= 64;
    }
    x0 = fold128(x0, k128(CRC32C_K384),
                 fold128(x1, k128(CRC32C_K256),
                         fold128(x2, k128(CRC32C_K128), x3)));
    memcpy(d, p, t);
    return crc32c_fold_finish(x0, p, t);
}

CRC32C_PCLMUL_TARGET uint32_t mrw_crc32c_copy_pclmul(uint32_t crc, void *dst,
                                                     const void *src,
                                                     size_t len)
{
    return ~crc32c_copy_pclmul_raw(~crc, (uint8_t *)dst, (const uint8_t *)src,
                                   len);
}

/* ---- vpclmul: four 512-bit registers ------------------------------------ */

#define CRC32C_VPCLMUL_TARGET \
    __attribute__((target("sse4.2,pclmul,avx2,avx512f,avx512vl,vpclmulqdq")))

/* One constant pair in all four 128-bit lanes. */
CRC32C_VPCLMUL_TARGET static inline __m512i k512(uint32_t kh, uint32_t kl)
{
    return _mm512_broadcast_i32x4(k128(kh, kl));
}

/* fold128 on four lanes at once; one ternary-logic xor of three. */
CRC32C_VPCLMUL_TARGET static inline __m512i fold512(__m512i x, __m512i k,
                                                    __m512i data)
{
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                     _mm512_clmulepi64_epi128(x, k, 0x11), data,
                                     0x96);
}

CRC32C_VPCLMUL_TARGET static inline __m512i ld512(const uint8_t *p)
{
    return _mm512_loadu_si512((const void *)p);
}

/* Expands the constant pairs before _mm512_setr_epi64 (a macro in gcc)
 * counts its arguments. */
#define CRC32C_SETR512(...) _mm512_setr_epi64(__VA_ARGS__)

/* The four lanes of x into one 128-bit lane at the position of the last:
 * lanes 0-2 are moved forward 384, 256 and 128 bits by one pair of
 * multiplies with a different constant per lane (lane 3's constant is zero
 * and lane 3 itself is xored in), then the lanes are xored together. */
CRC32C_VPCLMUL_TARGET static inline __m128i crc32c_z_to_x(__m512i x)
{
    const __m512i k = CRC32C_SETR512(CRC32C_K384, CRC32C_K256, CRC32C_K128, 0,
                                     0);
    __m512i t = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
                                          _mm512_clmulepi64_epi128(x, k, 0x11),
                                          _mm512_maskz_mov_epi64(0xc0, x),
                                          0x96);
    __m256i h = _mm256_xor_si256(_mm512_castsi512_si256(t),
                                 _mm512_extracti64x4_epi64(t, 1));
    return _mm_xor_si128(_mm256_castsi256_si128(h),
                         _mm256_extracti128_si256(h, 1));
}

/* One 64-byte lane of src at p, also stored to dst at d when copying
 * (d not NULL: crc32c_vpclmul_body's copying instance). */
CRC32C_VPCLMUL_TARGET static inline __m512i lane512(uint8_t *d,
                                                    const uint8_t *p)
{
    __m512i v = ld512(p);
    if (d)
        _mm512_storeu_si512((void *)d, v);
    return v;
}

/* Shortest buffer worth aligning (bench_crc32c, misaligned rows). */
#define CRC32C_VPCLMUL_ALIGN_MIN 512

/*
 * Same structure as crc32c_pclmul_raw(), with 256-byte rounds and single
 * 64-byte folds for the blocks left over from them.  With d not NULL every
 * lane is also stored to d as it is loaded, and the head and tail that go
 * through crc32 are copied beside them: the sender's gather reads its
 * payload once.  The head that brings the source to a cache-line boundary
 * is the same either way, so the loads are whole lines; the stores then
 * are as aligned as dst is relative to src (a packet's payload offset, the
 * same for every packet).  Always inlined into its two callers, each with
 * d either NULL or not, so neither tests d at run time.
 */
CRC32C_VPCLMUL_TARGET static inline __attribute__((always_inline)) uint32_t
crc32c_vpclmul_body(uint32_t crc, uint8_t *d, const uint8_t *p, size_t len)
{
    __m512i x0, k;
    size_t t = len & 63;

    if (len < 64) {
        if (d)
            memcpy(d, p, len);
        return crc32c_hw_raw(crc, p, len);
    }
    /* A misaligned 64-byte load straddles two cache lines and costs about
     * two loads; on a buffer long enough to keep the lanes below busy, the
     * bytes up to the next line boundary are cheaper through crc32 (its
     * chain overlaps with the folding of lanes 1-3, which do not need it). */
    if (len >= CRC32C_VPCLMUL_ALIGN_MIN && ((uintptr_t)p & 63)) {
        size_t h = (size_t)(-(uintptr_t)p & 63);
        if (d) {
            memcpy(d, p, h);
            d += h;
        }
        crc = crc32c_hw_small(crc, p, h);
        p += h;
        len -= h;
        t = len & 63;
    }
    len -= t;
    x0 = _mm512_xor_si512(lane512(d, p),
                          _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
    if (len >= 256) {
        __m512i x1 = lane512(d ? d + 64 : NULL, p + 64),
                x2 = lane512(d ? d + 128 : NULL, p + 128),
                x3 = lane512(d ? d + 192 : NULL, p + 192);
        p += 256;
        d = d ? d + 256 : NULL;
        len -= 256;
        k = k512(CRC32C_K2048);
        while (len >= 256) {
            x0 = fold512(x0, k, lane512(d, p));
            x1 = fold512(x1, k, lane512(d ? d + 64 : NULL, p + 64));
            x2 = fold512(x2, k, lane512(d ? d + 128 : NULL, p + 128));
            x3 = fold512(x3, k, lane512(d ? d + 192 : NULL, p + 192));
            p += 256;
            d = d ? d + 256 : NULL;
            len -= 256;
        }
        x0 = fold512(x0, k512(CRC32C_K1536),
                     fold512(x1, k512(CRC32C_K1024),
                             fold512(x2, k512(CRC32C_K512), x3)));
    } else {
        p += 64;
        d = d ? d + 64 : NULL;
        len -= 64;
    }
    k = k512(CRC32C_K512);
    while (len) {
        x0 = fold512(x0, k, lane512(d, p));
        p += 64;
        d = d ? d + 64 : NULL;
        len -= 64;
    }
    if (d)
        memcpy(d, p, t);
    return crc32c_fold_finish(crc32c_z_to_x(x0), p, t);
}

CRC32C_VPCLMUL_TARGET static uint32_t
crc32c_vpclmul_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    return crc32c_vpclmul_body(crc, NULL, p, len);
}

CRC32C_VPCLMUL_TARGET uint32_t mrw_crc32c_vpclmul(uint32_t crc,
                                                  const void *data, size_t len)
{
    return ~crc32c_vpclmul_raw(~crc, (const uint8_t *)data, len);
}

/* ---- vpclmul with a copy: crc32c_vpclmul_body() storing as it loads ----- */

CRC32C_VPCLMUL_TARGET static uint32_t
crc32c_copy_vpclmul_raw(uint32_t crc, uint8_t *d, const uint8_t *p, size_t len)
{
    return crc32c_vpclmul_body(crc, d, p, len);
}

CRC32C_VPCLMUL_TARGET uint32_t mrw_crc32c_copy_vpclmul(uint32_t crc, void *dst,
                                                       const void *src,
                                                       size_t len)
{
    return ~crc32c_copy_vpclmul_raw(~crc, (uint8_t *)dst, (const uint8_t *)src,
                                    len);
}

/* ---- dispatch ------------------------------------------------------------ */

/* CPUID bits, spelled out rather than taken from <cpuid.h>, whose names
 * differ between gcc and clang versions. */
#define CPUID1_ECX_PCLMUL (1u << 1)
#define CPUID1_ECX_SSE42 (1u << 20)
#define CPUID1_ECX_OSXSAVE (1u << 27)
#define CPUID7_EBX_AVX2 (1u << 5)
#define CPUID7_EBX_AVX512F (1u << 16)
#define CPUID7_EBX_AVX512VL (1u << 31)
#define CPUID7_ECX_VPCLMULQDQ (1u << 10)
/* XCR0: the OS saves SSE, AVX, opmask, ZMM0-15 upper and ZMM16-31 state;
 * without all of them AVX-512 instructions fault however CPUID looks. */
#define XCR0_AVX512_STATE 0xe6u

static unsigned crc32c_detect(void)
{
    unsigned eax, ebx, ecx, edx, f = 0;

    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return 0;
    if (!(ecx & CPUID1_ECX_SSE42))
        return 0;
    f |= MROCE_CRC32C_SSE42;
    if (!(ecx & CPUID1_ECX_PCLMUL))
        return f;
    f |= MROCE_CRC32C_PCLMUL;
    if ((ecx & CPUID1_ECX_OSXSAVE) && __get_cpuid_max(0, NULL) >= 7) {
        unsigned xlo, xhi;
        __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
        (void)xhi;
        __cpuid_count(7, 0, eax, ebx, ecx, edx);
        if ((xlo & XCR0_AVX512_STATE) == XCR0_AVX512_STATE &&
            (ebx & CPUID7_EBX_AVX2) && (ebx & CPUID7_EBX_AVX512F) &&
            (ebx & CPUID7_EBX_AVX512VL) && (ecx & CPUID7_ECX_VPCLMULQDQ))
            f |= MROCE_CRC32C_VPCLMUL;
    }
    return f;
}

/* 0 until the first call has asked CPUID, then the feature bits with
 * CRC32C_KNOWN set.  Relaxed atomics: every thread computes the same
 * answer, so a race only repeats the (cheap) question, and the atomic keeps
 * that benign race defined behaviour. */
#define CRC32C_KNOWN 0x80000000u
static atomic_uint crc32c_features_state;

/* Out of line and cold: inlined into mrw_crc32c(), the cpuid (which
 * clobbers rbx) and the call would make every call save registers. */
__attribute__((noinline, cold)) static unsigned crc32c_features_init(void)
{
    unsigned f = crc32c_detect() | CRC32C_KNOWN;
    atomic_store_explicit(&crc32c_features_state, f, memory_order_relaxed);
    return f;
}

static inline unsigned crc32c_features(void)
{
    unsigned f = atomic_load_explicit(&crc32c_features_state,
                                      memory_order_relaxed);
    return f ? f : crc32c_features_init();
}

unsigned mrw_crc32c_features(void)
{
    return crc32c_features() & ~CRC32C_KNOWN;
}

int mrw_crc32c_hw_active(void)
{
    return (crc32c_features() & MROCE_CRC32C_SSE42) != 0;
}

/* Where the paths cross over (bench_crc32c's latency table, on a Sapphire
 * Rapids class Xeon): below 64 bytes the folding set-up (lane reduction,
 * final crc32 pair) costs about what the short crc32 chain it would replace
 * does; from 64 bytes pclmul is ahead, and at 124 bytes (a 64-byte WRITE)
 * takes half the time; the 512-bit path's wider reduction only pays from
 * 256 bytes, where its 256-byte rounds start. */
#define CRC32C_PCLMUL_MIN 64
#define CRC32C_VPCLMUL_MIN 256

/* The first call of the process: detect, then start over (a tail call, so
 * the hot path below keeps no frame for it). */
__attribute__((noinline, cold)) static uint32_t
crc32c_first_call(uint32_t crc, const void *data, size_t len)
{
    crc32c_features_init();
    return mrw_crc32c(crc, data, len);
}

uint32_t mrw_crc32c(uint32_t crc, const void *data, size_t len)
{
    unsigned f = atomic_load_explicit(&crc32c_features_state,
                                      memory_order_relaxed);

    if (__builtin_expect(!f, 0))
        return crc32c_first_call(crc, data, len);

    if (len < CRC32C_PCLMUL_MIN) {
        if (f & MROCE_CRC32C_SSE42)
            return crc32c_hw_short(crc, (const uint8_t *)data, len);
        return mrw_crc32c_sw(crc, data, len);
    }
    if (f & MROCE_CRC32C_PCLMUL) {
        if (len >= CRC32C_VPCLMUL_MIN && (f & MROCE_CRC32C_VPCLMUL))
            return mrw_crc32c_vpclmul(crc, data, len);
        return mrw_crc32c_pclmul(crc, data, len);
    }
    if (f & MROCE_CRC32C_SSE42)
        return mrw_crc32c_sse42(crc, data, len);
    return mrw_crc32c_sw(crc, data, len);
}

/* Fused on the folding path mrw_crc32c() would take for the same length
 * (the same crossovers); below 64 bytes, or without PCLMUL, the CRC runs
 * over dst right after the copy, while it is in L1. */
uint32_t mrw_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    unsigned f = crc32c_features();
    if (len >= CRC32C_PCLMUL_MIN && (f & MROCE_CRC32C_PCLMUL)) {
        if (len >= CRC32C_VPCLMUL_MIN && (f & MROCE_CRC32C_VPCLMUL))
            return mrw_crc32c_copy_vpclmul(crc, dst, src, len);
        return mrw_crc32c_copy_pclmul(crc, dst, src, len);
    }
    return mrw_crc32c_copy_twopass(crc, dst, src, len);
}

#else /* !MROCE_CRC32C_X86 */

/* No accelerated path here: the per-path entry points exist so tests and
 * benchmarks build everywhere, and all of them are the table. */
unsigned mrw_crc32c_features(void)
{
    return 0;
}

int mrw_crc32c_hw_active(void)
{
    return 0;
}

uint32_t mrw_crc32c(uint32_t crc, const void *data, size_t len)
{
    return ~crc32c_sw_raw(~crc, (const uint8_t *)data, len);
}

uint32_t mrw_crc32c_sse42(uint32_t crc, const void *data, size_t len)
{
    return mrw_crc32c_sw(crc, data, len);
}

uint32_t mrw_crc32c_pclmul(uint32_t crc, const void *data, size_t len)
{
    return mrw_crc32c_sw(crc, data, len);
}

uint32_t mrw_crc32c_vpclmul(uint32_t crc, const void *data, size_t len)
{
    return mrw_crc32c_sw(crc, data, len);
}

uint32_t mrw_crc32c_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
    return mrw_crc32c_copy_twopass(crc, dst, src, len);
}

uint32_t mrw_crc32c_copy_pclmul(uint32_t crc, void *dst, const void *src,
                                size_t len)
{
    return mrw_crc32c_copy_twopass(crc, dst, src, len);
}

uint32_t mrw_crc32c_copy_vpclmul(uint32_t crc, void *dst, const void *src,
                                 size_t len)
{
    return mrw_crc32c_copy_twopass(crc, dst, src, len);
}

#endif
