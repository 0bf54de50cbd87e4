/*
 * bench_memlat.c - the latency of one dependent load from working sets of
 * 1 MiB to 4 GiB: this host's cache and memory hierarchy, as the simulator
 * meets it.
 *
 * mroce-sim's cost per packet event at scale is loads of protocol state
 * (queue pairs, links, packets in flight) that the events in between have
 * evicted.  bench/limits_sim.sh sets its measured costs against these
 * latencies, taken in the same run: a pointer chase through one 64-byte
 * line per step in a random cyclic order over the working set (no two
 * loads overlap, no prefetcher can guess the next line), on huge pages
 * where the kernel gives them, as the simulator's arena does.
 *
 * Output: one line per size, "memlat SIZE_MIB NS" (ns per load).
 *   usage: bench_memlat [MAX_MIB]   (default 4096)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ns per dependent load over `bytes` of memory, or -1 if it cannot map. */
static double chase(size_t bytes)
{
    size_t n = bytes / 64, i;
    char *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    (void)madvise(m, bytes, MADV_HUGEPAGE);
    uint32_t *order = malloc(n * sizeof(*order));
    if (!order) {
        munmap(m, bytes);
        return -1;
    }
    /* A random cycle through every line: Fisher-Yates over the lines. */
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    for (i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    for (i = n - 1; i > 0; i--) {
        size_t j = (size_t)(xorshift(&s) % (i + 1));
        uint32_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (i = 0; i < n; i++)
        *(void **)(m + (size_t)order[i] * 64) = m +
                                                (size_t)order[(i + 1) % n] * 64;
    free(order);
    /* Warm the page tables and caches with one lap (up to 4 M loads), then
     * time 20 M loads. */
    void *p = m;
    size_t warm = n < 4000000 ? n : 4000000, iters = 20000000;
    for (i = 0; i < warm; i++)
        p = *(void **)p;
    double t0 = now_s();
    for (i = 0; i < iters; i++)
        p = *(void **)p;
    double t = now_s() - t0;
    /* keep the chain's end live so the loop is not optimised away */
    if (p == NULL)
        fprintf(stderr, "memlat: broken chain\n");
    munmap(m, bytes);
    return t / (double)iters * 1e9;
}

int main(int argc, char **argv)
{
    size_t max_mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 4096;
    for (size_t mib = 1; mib <= max_mib; mib *= 4) {
        double ns = chase(mib << 20);
        if (ns < 0) {
            fprintf(stderr, "memlat: cannot map %zu MiB\n", mib);
            return 1;
        }
        printf("memlat %zu %.1f\n", mib, ns);
        fflush(stdout);
    }
    return 0;
}
