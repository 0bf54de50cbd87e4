/*
 * simtest.h - what the simulator's unit tests share: a CHECK that counts
 * failures and says why, and the small leaf-spine scenario they start from.
 * Included by one test file each (static definitions).
 */
#ifndef SIMTEST_H
#define SIMTEST_H

#include <stdio.h>

#include "sim.h"

static int failures;
#define CHECK(c, ...)                                                    \
    do {                                                                 \
        if (!(c)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                                \
            fprintf(stderr, "\n");                                       \
            failures++;                                                  \
        }                                                                \
    } while (0)

/* 16 hosts, 4 per ToR, 4 spines, a 200 ms limit, quiet, output in outdir. */
static inline void simtest_base(struct scenario *sc, const char *name,
                                const char *outdir)
{
    scenario_defaults(sc);
    snprintf(sc->name, sizeof(sc->name), "%s", name);
    snprintf(sc->outdir, sizeof(sc->outdir), "%s", outdir);
    sc->progress = 0;
    sc->hosts = 16;
    sc->hosts_per_tor = 4;
    sc->spines = 4;
    sc->limit_ps = 200 * PS_PER_MS;
}

#endif /* SIMTEST_H */
