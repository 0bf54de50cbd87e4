/*
 * arena.c - the simulation's bulk memory on transparent huge pages.
 *
 * A large run keeps hundreds of MB of engine state (every QP's windows,
 * paths and work queues) and thousands of 4 KiB packet buffers, and each
 * packet event touches one QP's state and one buffer picked by the
 * traffic, i.e. at random: with 4 KiB pages nearly every such access is a
 * TLB miss whose page walk misses the cache too.  Memory here comes from
 * large anonymous mappings marked MADV_HUGEPAGE (the kernel's THP
 * "madvise" mode), so 2 MiB pages cover it and the TLB reaches all of it.
 *
 * Two ways out: arena_bump() for pools that live as long as the run
 * (packet headers and buffers, never freed one by one) and
 * arena_calloc()/arena_free() for the engine's allocator, with one free
 * list per 64-byte size class (the engine frees QPs and endpoints only at
 * the end of a run, so fragmentation is no concern).  Requests above the
 * largest class go to calloc.  Everything is released by arena_destroy().
 * If madvise is refused the memory works the same on small pages.
 *
 * The scratch buffer (scratch_map) is the one buffer every MR of the run
 * maps: payloads are gathered from it and placed into it, at offsets up
 * to the message size (1 MiB in the headline all-to-all).  Its content is
 * zero from start to end (all that is ever written into it is payload
 * read out of it), so its virtual range is backed by the same 16 KiB of
 * memory again and again (a memfd mapped at every 16 KiB): the copies
 * and CRCs then run in the L1 cache instead of keeping 1 MiB of L2 busy
 * and evicting the fabric's and the engine's state.
 */
#define _GNU_SOURCE /* memfd_create */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sim.h"

#define MAP_BYTES ((size_t)64 << 20)
#define CLASS_BYTES 64

/* Ahead of every arena_calloc block: its size (16 bytes keep the block
 * aligned like malloc's). */
struct blkhdr {
    size_t size;
    size_t pad;
};

static void *new_map(struct arena *a, size_t bytes)
{
    if (a->nmaps == a->capmaps) {
        size_t nc = a->capmaps ? 2 * a->capmaps : 16;
        struct arena_map *n = realloc(a->maps, nc * sizeof(*n));
        if (!n)
            return NULL;
        a->maps = n;
        a->capmaps = nc;
    }
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(m, bytes, MADV_HUGEPAGE);
#endif
    a->maps[a->nmaps++] = (struct arena_map){m, bytes};
    return m;
}

void *arena_bump(struct arena *a, size_t bytes)
{
    bytes = (bytes + CLASS_BYTES - 1) & ~(size_t)(CLASS_BYTES - 1);
    if (bytes > MAP_BYTES / 4)
        return new_map(a, bytes); /* its own mapping, zeroed */
    if ((size_t)(a->end - a->cur) < bytes) {
        uint8_t *m = new_map(a, MAP_BYTES);
        if (!m)
            return NULL;
        a->cur = m;
        a->end = m + MAP_BYTES;
    }
    void *p = a->cur;
    a->cur += bytes;
    return p; /* fresh anonymous memory is zero */
}

void *arena_calloc(struct arena *a, size_t bytes)
{
    size_t total = sizeof(struct blkhdr) + bytes;
    size_t c = (total + CLASS_BYTES - 1) / CLASS_BYTES;
    struct blkhdr *h;
    if (c >= ARENA_CLASSES) {
        h = calloc(1, total);
    } else if (a->free_[c]) {
        h = a->free_[c];
        a->free_[c] = *(void **)h;
        memset(h, 0, c * CLASS_BYTES);
    } else {
        h = arena_bump(a, c * CLASS_BYTES);
    }
    if (!h)
        return NULL;
    h->size = bytes;
    return h + 1;
}

void arena_free(struct arena *a, void *p)
{
    if (!p)
        return;
    struct blkhdr *h = (struct blkhdr *)p - 1;
    size_t c = (sizeof(*h) + h->size + CLASS_BYTES - 1) / CLASS_BYTES;
    if (c >= ARENA_CLASSES) {
        free(h);
        return;
    }
    *(void **)h = a->free_[c];
    a->free_[c] = h;
}

size_t arena_size(const void *p)
{
    return ((const struct blkhdr *)p - 1)->size;
}

void arena_destroy(struct arena *a)
{
    for (size_t i = 0; i < a->nmaps; i++)
        munmap(a->maps[i].p, a->maps[i].len);
    free(a->maps);
    memset(a, 0, sizeof(*a));
}

#define ALIAS_BYTES ((size_t)16 << 10)

void *scratch_map(size_t len, int *aliased)
{
    *aliased = 0;
    size_t n = (len + ALIAS_BYTES - 1) / ALIAS_BYTES;
    int fd = memfd_create("mroce-sim-scratch", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, (off_t)ALIAS_BYTES) == 0) {
        uint8_t *base = mmap(NULL, n * ALIAS_BYTES, PROT_NONE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
                             0);
        size_t i = 0;
        if (base != MAP_FAILED) {
            for (; i < n; i++)
                if (mmap(base + i * ALIAS_BYTES, ALIAS_BYTES,
                         PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
                         0) == MAP_FAILED)
                    break;
            if (i < n)
                munmap(base, n * ALIAS_BYTES);
        }
        close(fd);
        if (base != MAP_FAILED && i == n) {
            *aliased = 1;
            return base;
        }
    } else if (fd >= 0) {
        close(fd);
    }
    return calloc(1, len); /* plain memory: the same, less cache-friendly */
}

void scratch_unmap(void *p, size_t len, int aliased)
{
    if (!aliased) {
        free(p);
        return;
    }
    size_t n = (len + ALIAS_BYTES - 1) / ALIAS_BYTES;
    munmap(p, n * ALIAS_BYTES);
}
