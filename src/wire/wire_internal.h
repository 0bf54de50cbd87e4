/*
 * wire_internal.h - codec internals that are not part of the public API but
 * that tests reach for: the portable CRC32C path and which path is in use.
 *
 * mroce_crc32c() picks the SSE4.2 instruction when the CPU has it, so on a
 * typical build machine the table-driven fallback would otherwise never run
 * under test.  Exposing it here lets tests/test_wire.c check both paths
 * against a bit-at-a-time reference.
 */
#ifndef MROCE_WIRE_INTERNAL_H
#define MROCE_WIRE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Same contract as mroce_crc32c(), always the slicing-by-8 table path. */
uint32_t mroce_crc32c_sw(uint32_t crc, const void *data, size_t len);

/* 1 if mroce_crc32c() uses the CPU's CRC32C instruction, else 0. */
int mroce_crc32c_hw_active(void);

#endif /* MROCE_WIRE_INTERNAL_H */
