/*
 * mroce_tag_match.c - FIFO matching queues for posted receives and
 * unexpected messages (see mroce_tag_match.h for the matching rule).
 *
 * Linear search: the queues of an MPI rank are short in the common case
 * (a receive is usually posted shortly before or after its message), and
 * order must be kept across wildcard and exact receives alike, which a
 * per-tag hash would have to reconstruct.  The header keeps the interface
 * small enough to swap in bucketed queues later.
 */
#include "mroce_tag_match.h"

void mtm_queue_init(struct mtm_queue *q)
{
    q->head.prev = q->head.next = &q->head;
    q->count = 0;
}

void mtm_append(struct mtm_queue *q, struct mtm_entry *e)
{
    e->next = &q->head;
    e->prev = q->head.prev;
    q->head.prev->next = e;
    q->head.prev = e;
    q->count++;
}

void mtm_remove(struct mtm_queue *q, struct mtm_entry *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = NULL;
    q->count--;
}

struct mtm_entry *mtm_find_posted(const struct mtm_queue *q, uint64_t tag,
                                  uint64_t src)
{
    for (struct mtm_entry *e = q->head.next; e != &q->head; e = e->next)
        if (mtm_match(e->tag, e->ignore, e->src, tag, src))
            return e;
    return NULL;
}

struct mtm_entry *mtm_find_unexp(const struct mtm_queue *q, uint64_t tag,
                                 uint64_t ignore, uint64_t src)
{
    for (struct mtm_entry *e = q->head.next; e != &q->head; e = e->next)
        if (mtm_match(tag, ignore, src, e->tag, e->src))
            return e;
    return NULL;
}

struct mtm_entry *mtm_find_if(const struct mtm_queue *q,
                              int (*pred)(const struct mtm_entry *e, void *arg),
                              void *arg)
{
    for (struct mtm_entry *e = q->head.next; e != &q->head; e = e->next)
        if (pred(e, arg))
            return e;
    return NULL;
}
