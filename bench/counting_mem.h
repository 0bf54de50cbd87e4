/* counting_mem.h - an engine allocator that counts live bytes, and a fixed
 * random source, for the benchmarks that measure engine state by what the
 * engine itself allocates (bench_streams_mem, bench_prov_conn_mem). */
#ifndef MROCE_BENCH_COUNTING_MEM_H
#define MROCE_BENCH_COUNTING_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct counting_mem {
    size_t live; /* bytes allocated and not freed */
};

/* Each block carries its size in front, so free() can subtract it. */
static inline void *cm_calloc(size_t n, size_t sz, void *user)
{
    struct counting_mem *m = user;
    size_t bytes = n * sz;
    size_t *p = calloc(1, bytes + sizeof(size_t) * 2);
    if (!p)
        return NULL;
    p[0] = bytes;
    m->live += bytes;
    return p + 2;
}

static inline void cm_free(void *ptr, void *user)
{
    struct counting_mem *m = user;
    size_t *p = (size_t *)ptr - 2;
    m->live -= p[0];
    free(p);
}

static inline void fixed_rand(uint8_t *buf, size_t len, void *user)
{
    (void)user;
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)(i * 131 + 7);
}

#endif /* MROCE_BENCH_COUNTING_MEM_H */
