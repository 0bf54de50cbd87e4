/*
 * test_tag_match.c - unit tests of the provider's matching queues
 * (prov/src/mroce_tag_match.c): the matching rule (tags, ignore bits,
 * wildcard and directed sources), FIFO order between exact and wildcard
 * entries, removal from the middle, and search by predicate (cancel).
 */
#include <stdio.h>
#include <stdlib.h>

#include "mroce_tag_match.h"

static int failures;
#define CHECK(c)                                                             \
    do {                                                                     \
        if (!(c)) {                                                          \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, \
                    #c);                                                     \
            failures++;                                                      \
        }                                                                    \
    } while (0)

static struct mtm_entry ent(uint64_t tag, uint64_t ignore, uint64_t src)
{
    struct mtm_entry e = {0};
    e.tag = tag;
    e.ignore = ignore;
    e.src = src;
    return e;
}

static void test_rule(void)
{
    CHECK(mtm_match(5, 0, MTM_ANY_SRC, 5, 3));
    CHECK(!mtm_match(5, 0, MTM_ANY_SRC, 4, 3));
    CHECK(mtm_match(0x100, 0xff, MTM_ANY_SRC, 0x1ab, 3)); /* ignore bits */
    CHECK(!mtm_match(0x100, 0xff, MTM_ANY_SRC, 0x2ab, 3));
    CHECK(mtm_match(0, ~0ull, MTM_ANY_SRC, 0xdeadbeef, 9)); /* everything */
    CHECK(mtm_match(7, 0, 3, 7, 3));                        /* directed */
    CHECK(!mtm_match(7, 0, 3, 7, 4));
    /* An unknown sender (FI_ADDR_NOTAVAIL == MTM_ANY_SRC) matches only
     * wildcard receives. */
    CHECK(!mtm_match(7, 0, 3, 7, MTM_ANY_SRC));
    CHECK(mtm_match(7, 0, MTM_ANY_SRC, 7, MTM_ANY_SRC));
}

static void test_posted_order(void)
{
    struct mtm_queue q;
    mtm_queue_init(&q);
    struct mtm_entry a = ent(1, 0, 2), b = ent(0, ~0ull, MTM_ANY_SRC),
                     c = ent(1, 0, MTM_ANY_SRC);
    mtm_append(&q, &a);
    mtm_append(&q, &b);
    mtm_append(&q, &c);
    CHECK(q.count == 3);
    /* Oldest accepting receive wins: a for (1, src 2), b for anything else. */
    CHECK(mtm_find_posted(&q, 1, 2) == &a);
    CHECK(mtm_find_posted(&q, 1, 5) == &b);
    CHECK(mtm_find_posted(&q, 99, 5) == &b);
    mtm_remove(&q, &b);
    CHECK(!mtm_queued(&b));
    CHECK(mtm_find_posted(&q, 1, 5) == &c);
    CHECK(mtm_find_posted(&q, 99, 5) == NULL);
    mtm_remove(&q, &a);
    mtm_remove(&q, &c);
    CHECK(q.count == 0 && mtm_first(&q) == NULL);
}

static void test_unexp_order(void)
{
    struct mtm_queue q;
    mtm_queue_init(&q);
    struct mtm_entry m[4] = {ent(0x10, 0, 1), ent(0x11, 0, 2), ent(0x10, 0, 2),
                             ent(0x20, 0, 1)};
    for (int i = 0; i < 4; i++)
        mtm_append(&q, &m[i]);
    CHECK(mtm_find_unexp(&q, 0x10, 0, MTM_ANY_SRC) == &m[0]);
    CHECK(mtm_find_unexp(&q, 0x10, 0, 2) == &m[2]);
    CHECK(mtm_find_unexp(&q, 0x10, 0x1, 2) == &m[1]);
    CHECK(mtm_find_unexp(&q, 0x00, 0xff, MTM_ANY_SRC) == &m[0]);
    CHECK(mtm_find_unexp(&q, 0x20, 0, 2) == NULL);
    CHECK(mtm_find_unexp(&q, 0x30, 0, MTM_ANY_SRC) == NULL);
    mtm_remove(&q, &m[0]);
    CHECK(mtm_find_unexp(&q, 0x00, 0xff, MTM_ANY_SRC) == &m[1]);
    CHECK(mtm_first(&q) == &m[1]);
}

static int is_tag(const struct mtm_entry *e, void *arg)
{
    return e->tag == *(uint64_t *)arg;
}

static void test_find_if(void)
{
    struct mtm_queue q;
    mtm_queue_init(&q);
    struct mtm_entry e[8];
    for (int i = 0; i < 8; i++) {
        e[i] = ent((uint64_t)i, 0, 0);
        mtm_append(&q, &e[i]);
    }
    uint64_t want = 5;
    CHECK(mtm_find_if(&q, is_tag, &want) == &e[5]);
    mtm_remove(&q, &e[5]);
    CHECK(mtm_find_if(&q, is_tag, &want) == NULL);
    /* The queue stays intact around the hole. */
    int n = 0;
    for (struct mtm_entry *x = q.head.next; x != &q.head; x = x->next)
        n++;
    CHECK(n == 7 && q.count == 7);
}

/* Random operations against a simple array model. */
static void test_random(void)
{
    enum { N = 64 };
    struct mtm_queue q;
    struct mtm_entry e[N];
    int in[N] = {0};
    int order[N], norder = 0;
    mtm_queue_init(&q);
    srand(7);
    for (int step = 0; step < 20000; step++) {
        int i = rand() % N;
        if (!in[i]) {
            e[i] = ent((uint64_t)(rand() % 8), (uint64_t)(rand() % 4),
                       rand() % 3 ? (uint64_t)(rand() % 3) : MTM_ANY_SRC);
            mtm_append(&q, &e[i]);
            in[i] = 1;
            order[norder++] = i;
        } else {
            mtm_remove(&q, &e[i]);
            in[i] = 0;
            int k = 0;
            while (order[k] != i)
                k++;
            for (; k + 1 < norder; k++)
                order[k] = order[k + 1];
            norder--;
        }
        uint64_t tag = (uint64_t)(rand() % 8), src = (uint64_t)(rand() % 3);
        struct mtm_entry *want = NULL;
        for (int k = 0; k < norder && !want; k++) {
            struct mtm_entry *x = &e[order[k]];
            if (mtm_match(x->tag, x->ignore, x->src, tag, src))
                want = x;
        }
        if (mtm_find_posted(&q, tag, src) != want) {
            CHECK(0);
            return;
        }
    }
    CHECK((int)q.count == norder);
}

int main(void)
{
    test_rule();
    test_posted_order();
    test_unexp_order();
    test_find_if();
    test_random();
    if (failures) {
        fprintf(stderr, "test_tag_match: %d failures\n", failures);
        return 1;
    }
    printf("test_tag_match: ok\n");
    return 0;
}
