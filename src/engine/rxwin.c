/*
 * rxwin.c - receive window of PSNs: duplicate detection, cumulative point and
 * SACK words.  See rxwin.h.  Per-packet cost is a few bit operations; the
 * cumulative point advances a word at a time when runs are complete.
 */
#include "rxwin.h"

#include <mroce/wire.h>

#include "../wire/seeded_fault.h"

void mre_rxwin_init(struct mre_rxwin *w, uint64_t *bits, uint32_t size,
                    uint32_t start_psn)
{
    w->bits = bits;
    w->size = size;
    w->cum = start_psn;
    w->high = start_psn;
    for (uint32_t i = 0; i < size / 64; i++)
        bits[i] = 0;
}

static inline int bit_get(const struct mre_rxwin *w, uint32_t psn)
{
    uint32_t i = psn & (w->size - 1);
    return (int)((w->bits[i >> 6] >> (i & 63)) & 1);
}

int mre_rxwin_classify(const struct mre_rxwin *w, uint32_t psn)
{
    int32_t d = mrw_psn_diff(psn, w->cum);
    if (d < 0)
        return RXWIN_DUP;
    if ((uint32_t)d >= w->size)
        return RXWIN_AHEAD;
    return bit_get(w, psn) ? RXWIN_DUP : RXWIN_NEW;
}

int mre_rxwin_mark(struct mre_rxwin *w, uint32_t psn)
{
    int ooo = psn != w->cum || mrw_psn_diff(w->high, w->cum) > 0;
    if (mrw_psn_diff(psn + 1, w->high) > 0)
        w->high = psn + 1;
    if (psn != w->cum) {
        uint32_t i = psn & (w->size - 1);
        w->bits[i >> 6] |= 1ull << (i & 63);
        return 1;
    }
    /* In order: advance cum past this PSN and any run already received,
     * clearing bits behind us so the slots can be reused. */
    w->cum++;
    while (w->cum != w->high) {
        uint32_t i = w->cum & (w->size - 1);
        uint64_t word = w->bits[i >> 6] >> (i & 63);
        if (!(word & 1))
            break;
        /* Count the run of ones starting at bit i within this word. */
        uint32_t run = word == ~0ull ? 64 : (uint32_t)__builtin_ctzll(~word);
        uint32_t lim = 64 - (i & 63);
        if (run > lim)
            run = lim;
        uint32_t left = (uint32_t)mrw_psn_diff(w->high, w->cum);
        if (run > left)
            run = left;
        uint64_t mask = run == 64 ? ~0ull : ((1ull << run) - 1) << (i & 63);
        w->bits[i >> 6] &= ~mask;
        w->cum += run;
    }
    return ooo;
}

int mre_rxwin_sack(const struct mre_rxwin *w, uint32_t *words, int max)
{
    int32_t span = mrw_psn_diff(w->high, w->cum + 1);
    if (span <= 0)
        return 0;
    int need = (int)((span + 31) / 32);
    if (need > max)
        need = max;
    uint32_t base = w->cum + 1;
    for (int j = 0; j < need; j++) {
        uint32_t word = 0;
        uint32_t p = base + (uint32_t)j * 32;
        /* Gather 32 bits starting at ring index p, which may straddle two
         * 64-bit words and the ring's end. */
        uint32_t i = p & (w->size - 1);
        uint32_t sh = i & 63;
        uint64_t lo = w->bits[i >> 6] >> sh;
        if (sh > 32) {
            uint32_t i2 = (i + 64 - sh) & (w->size - 1);
            lo |= w->bits[i2 >> 6] << (64 - sh);
        }
        word = (uint32_t)(lo >> MROCE_SEEDED_FAULT(SACK_OFF_BY_ONE));
        /* Bits at or beyond the window's far edge wrap onto old slots that
         * are always clear, and bits beyond high are clear too. */
        int32_t rem = mrw_psn_diff(w->high, p);
        if (rem < 32)
            word &= rem <= 0 ? 0 : (uint32_t)((1ull << rem) - 1);
        words[j] = word;
    }
    while (need > 0 && words[need - 1] == 0)
        need--;
    return need;
}
