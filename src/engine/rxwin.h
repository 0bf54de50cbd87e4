/*
 * rxwin.h - the receive window: which PSNs of the peer's PSN space have been
 * received (placed or executed).
 *
 * Every data packet passes through here on the responder side before it is
 * placed: the window tells a new PSN from a duplicate and from one that is too
 * far ahead, and produces the cumulative PSN and SACK bitmap that ACKs carry
 * (REL-*).  A bitmap of `size` bits (a power of two) indexed by PSN modulo
 * size; bits are cleared as the cumulative point passes them.
 */
#ifndef MROCE_RXWIN_H
#define MROCE_RXWIN_H

#include <stdint.h>

struct mre_rxwin {
    uint64_t *bits; /* size/64 words, owned by the QP */
    uint32_t size;  /* PSNs tracked from cum on; power of two >= 64 */
    uint32_t cum;   /* next PSN expected: all before it received */
    uint32_t high;  /* one past the highest PSN received (serial) */
};

enum mre_rxwin_class {
    RXWIN_NEW = 0,   /* in window, not yet received */
    RXWIN_DUP = 1,   /* already received */
    RXWIN_AHEAD = 2, /* beyond the window: drop */
};

/* Set up w over bits (size/64 words, zeroed here) for size PSNs (a power
 * of two >= 64) from start_psn on. */
void mre_rxwin_init(struct mre_rxwin *w, uint64_t *bits, uint32_t size,
                    uint32_t start_psn);
/* Classify psn without changing state. */
int mre_rxwin_classify(const struct mre_rxwin *w, uint32_t psn);
/* Mark psn (which must classify as RXWIN_NEW) received; advances cum.
 * Returns 1 if it arrived out of order (opened or left a gap), else 0. */
int mre_rxwin_mark(struct mre_rxwin *w, uint32_t psn);
/* Fill up to max words of SACK bitmap for PSNs cum+1...; returns the number
 * of words needed to cover every received PSN (trailing zero words cut). */
int mre_rxwin_sack(const struct mre_rxwin *w, uint32_t *words, int max);

#endif /* MROCE_RXWIN_H */
