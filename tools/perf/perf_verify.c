/*
 * perf_verify.c - data patterns and the checks of --verify, and each
 * message size's preparation.  A requester fills each source slot with the
 * pattern of (seed, QP, message index) before posting; prepare_size() lays
 * out what the peer will READ, atomically update or stamp, and resets the
 * per-size state; verify_targets() checks what the peer WROTE or SENT once
 * its DONE (or RESULT) gives the message counts.  SENDs, READs and atomics
 * are checked as they complete (perf_pump.c), with the same patterns.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"

/* ------------------------------------------------------------ patterns --- */

static inline uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The pattern of message idx on QP q: word j = mix64(base + j), so any
 * misplaced, stale or mixed-up block shows. */
static uint64_t pat_base(uint32_t q, uint64_t idx)
{
    return mix64(P.seed ^ ((uint64_t)(q + 1) * 0x9e3779b97f4a7c15ull) ^
                 mix64(idx + 0x632be59bd9b4e019ull));
}

void pat_fill(uint8_t *buf, size_t len, uint32_t q, uint64_t idx)
{
    uint64_t b = pat_base(q, idx);
    size_t j = 0;
    for (; j + 8 <= len; j += 8) {
        uint64_t w = mix64(b + j / 8);
        memcpy(buf + j, &w, 8);
    }
    if (j < len) {
        uint64_t w = mix64(b + j / 8);
        memcpy(buf + j, &w, len - j);
    }
}

/* Returns the number of mismatched bytes (0 = identical). */
uint64_t pat_check(const uint8_t *buf, size_t len, uint32_t q, uint64_t idx)
{
    uint64_t b = pat_base(q, idx), bad = 0;
    for (size_t j = 0; j < len; j += 8) {
        uint64_t w = mix64(b + j / 8);
        size_t n = len - j < 8 ? len - j : 8;
        if (memcmp(buf + j, &w, n) != 0) {
            const uint8_t *e = (const uint8_t *)&w;
            for (size_t k = 0; k < n; k++)
                bad += buf[j + k] != e[k];
        }
    }
    return bad;
}

void note_check(uint64_t len, uint64_t bad, const char *what, uint32_t q,
                uint64_t idx)
{
    P.checked += len;
    if (bad) {
        if (P.mismatches == 0)
            fprintf(stderr,
                    "mroce-perf: verify: %s on QP %u, message %" PRIu64
                    ": %" PRIu64 " of %" PRIu64 " bytes differ\n",
                    what, q, idx, bad, len);
        P.mismatches += bad;
    }
}

/* ------------------------------------------------------ per-size setup --- */

/* Prepares this side's memory for a message size before the peer starts. */
void prepare_size(uint32_t size)
{
    P.cur_size = size;
    P.bytes_done = 0;
    P.peak_bps = 0;
    for (uint32_t i = 0; i < P.nqps; i++) {
        struct pqp *q = &P.q[i];
        q->posted = q->done = q->rx_data = q->rd_checked = 0;
        q->last_signaled = 1;
        switch (P.test) {
        case T_READ_BW:
            /* What the peer READs: slot s holds pattern (i, s). */
            if (P.server || P.bidir)
                for (uint32_t s = 0; s < nslots(size); s++)
                    pat_fill(q->tgt + (size_t)s * size, size, i, s);
            break;
        case T_READ_LAT:
            pat_fill(q->tgt, size, i, 0);
            break;
        case T_ATOMIC_LAT:
            memset(q->tgt, 0, 8);
            break;
        case T_WRITE_LAT:
            /* Stamp bytes start at 0, which no stamp value equals. */
            if (P.verify) {
                pat_fill(q->src, size, i, 0);
                pat_fill(q->tgt, size, i, 0);
            }
            for (uint32_t k = 0; k < nstamps(size); k++)
                q->tgt[stamp_pos(size, k)] = 0;
            break;
        case T_SEND_LAT:
            if (P.verify) {
                if (size >= 8)
                    pat_fill(q->src + 8, size - 8, i, 0);
                else
                    pat_fill(q->src, size, i, 0);
            }
            break;
        default:
            break;
        }
    }
    sum_counters(&P.base_c, NULL, NULL);
}

/* Verifies what the peer wrote into our target regions, once its DONE (or
 * RESULT) says how many messages it sent on each QP. */
void verify_targets(const struct ctrl *c)
{
    uint32_t size = P.cur_size;
    /* Message counts are always checked; contents only with --verify. */
    for (uint32_t i = 0; i < P.nqps; i++) {
        struct pqp *q = &P.q[i];
        uint64_t n = c->count[i];
        switch (P.test) {
        case T_WRITE_BW: {
            uint32_t ns = nslots(size);
            if (!P.verify)
                break;
            for (uint32_t s = 0; s < ns && s < n; s++) {
                uint64_t last = s + (n - 1 - s) / ns * ns;
                note_check(size,
                           pat_check(q->tgt + (size_t)s * size, size, i, last),
                           "WRITE", i, last);
            }
            break;
        }
        case T_SEND_BW:
        case T_SEND_LAT:
            if (q->rx_data != n) {
                fprintf(stderr,
                        "mroce-perf: QP %u: %" PRIu64
                        " messages received, peer sent %" PRIu64 "\n",
                        i, q->rx_data, n);
                P.mismatches++;
            }
            break;
        case T_WRITE_LAT:
            if (n && size && P.verify) {
                uint8_t st = (uint8_t)stamp_of(n - 1);
                uint64_t bad = 0;
                for (uint32_t k = 0; k < nstamps(size); k++) {
                    size_t p = stamp_pos(size, k);
                    bad += q->tgt[p] != st;
                    q->tgt[p] = 0; /* so the pattern check sees the rest */
                }
                uint8_t *tmp = malloc(size);
                if (!tmp)
                    die("out of memory");
                pat_fill(tmp, size, i, 0);
                for (uint32_t k = 0; k < nstamps(size); k++)
                    tmp[stamp_pos(size, k)] = 0;
                for (uint32_t b = 0; b < size; b++)
                    bad += tmp[b] != q->tgt[b];
                free(tmp);
                note_check(size, bad, "WRITE", i, n - 1);
            }
            break;
        case T_ATOMIC_LAT: {
            uint64_t v;
            if (!P.verify)
                break;
            memcpy(&v, q->tgt, 8);
            note_check(8, v != n ? 8 : 0, "atomic target", i, n);
            break;
        }
        default:
            break;
        }
    }
}
