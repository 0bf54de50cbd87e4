/*
 * mroce_tag_match.h - the provider's message matching queues, a pure data
 * structure (no libfabric or libmroce calls), unit-tested on its own
 * (prov/tests/test_tag_match.c).
 *
 * An endpoint keeps four queues: posted receives and unexpected messages,
 * once for FI_MSG and once for FI_TAGGED.  Entries are intrusive links
 * embedded in the provider's own objects (a posted receive's request, an
 * unexpected message's bounce buffer), so matching never allocates.
 * Queues are FIFO: libfabric requires that a message matches the oldest
 * posted receive that accepts it, and a receive the oldest unexpected
 * message it accepts (that is what keeps MPI's non-overtaking rule).
 *
 * A posted receive accepts a message when (posted.tag ^ msg.tag) & ~ignore
 * is 0 and the receive's source is MTM_ANY_SRC (FI_ADDR_UNSPEC) or equals
 * the message's source.  FI_MSG receives use tag 0, ignore 0, so only the
 * source matters.
 */
#ifndef MROCE_TAG_MATCH_H
#define MROCE_TAG_MATCH_H

#include <stddef.h>
#include <stdint.h>

/* Same value as FI_ADDR_UNSPEC, without depending on libfabric headers. */
#define MTM_ANY_SRC UINT64_MAX

struct mtm_entry {
    struct mtm_entry *prev, *next; /* queue links (NULL when not queued) */
    uint64_t tag;    /* posted: tag wanted; unexpected: tag carried */
    uint64_t ignore; /* posted: bits of tag that do not matter; unused in
                        unexpected entries */
    uint64_t src;    /* posted: source wanted or MTM_ANY_SRC; unexpected:
                        the sender (MTM_ANY_SRC-free) */
};

struct mtm_queue {
    struct mtm_entry head; /* sentinel: head.next is the oldest entry */
    size_t count;
};

void mtm_queue_init(struct mtm_queue *q);
/* Appends e (not in any queue) as the newest entry. */
void mtm_append(struct mtm_queue *q, struct mtm_entry *e);
/* Removes e from q (it must be queued there). */
void mtm_remove(struct mtm_queue *q, struct mtm_entry *e);
/* 1 if e is in some queue. */
static inline int mtm_queued(const struct mtm_entry *e)
{
    return e->next != NULL;
}
/* 1 if a receive for (tag, ignore, src) accepts a message (mtag, msrc). */
static inline int mtm_match(uint64_t tag, uint64_t ignore, uint64_t src,
                            uint64_t mtag, uint64_t msrc)
{
    return ((tag ^ mtag) & ~ignore) == 0 && (src == MTM_ANY_SRC || src == msrc);
}
/* A message (tag, src) arrived: the oldest posted receive in q that
 * accepts it, or NULL.  Not removed. */
struct mtm_entry *mtm_find_posted(const struct mtm_queue *q, uint64_t tag,
                                  uint64_t src);
/* A receive (tag, ignore, src) is posted: the oldest unexpected message in
 * q it accepts, or NULL.  Not removed. */
struct mtm_entry *mtm_find_unexp(const struct mtm_queue *q, uint64_t tag,
                                 uint64_t ignore, uint64_t src);
/* The oldest entry for which pred(e, arg) is non-zero, or NULL (cancel
 * searches by context this way). */
struct mtm_entry *mtm_find_if(const struct mtm_queue *q,
                              int (*pred)(const struct mtm_entry *e, void *arg),
                              void *arg);
/* Oldest entry, NULL if empty. */
static inline struct mtm_entry *mtm_first(const struct mtm_queue *q)
{
    return q->count ? q->head.next : NULL;
}

#endif /* MROCE_TAG_MATCH_H */
