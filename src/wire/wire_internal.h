/*
 * wire_internal.h - codec internals that are not part of the public API but
 * that tests and benchmarks reach for: each CRC32C path on its own, and
 * which of them this CPU can run.
 *
 * mrw_crc32c() picks the fastest path the CPU has (and, per call, by
 * length), so on a typical build machine the slower paths would otherwise
 * never run under test.  Exposing them here lets tests/test_wire.c check
 * every path against the table and against a bit-at-a-time reference, and
 * bench/bench_crc32c.c time them side by side.
 */
#ifndef MROCE_WIRE_INTERNAL_H
#define MROCE_WIRE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Bits of mrw_crc32c_features(): which accelerated paths may be called. */
#define MROCE_CRC32C_SSE42 0x1u   /* crc32 instruction (SSE4.2) */
#define MROCE_CRC32C_PCLMUL 0x2u  /* + PCLMULQDQ 128-bit folding */
#define MROCE_CRC32C_VPCLMUL 0x4u /* + AVX-512 VPCLMULQDQ 512-bit folding */

/* The accelerated paths this CPU (and OS) supports; 0 off x86-64. */
unsigned mrw_crc32c_features(void);

/* 1 if mrw_crc32c() uses the CPU's CRC32C instruction, else 0. */
int mrw_crc32c_hw_active(void);

/*
 * The paths, each with the same contract as mrw_crc32c() for any length
 * and alignment.  _sw runs anywhere.  On x86-64 the others execute their
 * instructions unconditionally: call one only if its bit is set in
 * mrw_crc32c_features() (each implies the ones before it), or the process
 * dies of SIGILL.  The folding paths hand buffers shorter than 64 bytes to
 * the sse4.2 path.  Off x86-64 they all are the table path.
 */
uint32_t mrw_crc32c_sw(uint32_t crc, const void *data, size_t len);
uint32_t mrw_crc32c_sse42(uint32_t crc, const void *data, size_t len);
uint32_t mrw_crc32c_pclmul(uint32_t crc, const void *data, size_t len);
uint32_t mrw_crc32c_vpclmul(uint32_t crc, const void *data, size_t len);

/*
 * The ways mrw_crc32c_copy() may go, same contract as it: _twopass copies,
 * then runs mrw_crc32c() over the copy (any CPU); _pclmul loads each
 * 16-byte lane once, stores it to dst and folds it (PCLMUL bit required, as
 * for mrw_crc32c_pclmul()); _vpclmul does the same with 64-byte lanes
 * (VPCLMUL bit required).  Off x86-64 they are _twopass.
 */
uint32_t mrw_crc32c_copy_twopass(uint32_t crc, void *dst, const void *src,
                                 size_t len);
uint32_t mrw_crc32c_copy_pclmul(uint32_t crc, void *dst, const void *src,
                                size_t len);
uint32_t mrw_crc32c_copy_vpclmul(uint32_t crc, void *dst, const void *src,
                                 size_t len);

#endif /* MROCE_WIRE_INTERNAL_H */
