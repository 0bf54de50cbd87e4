/*
 * test_link.c - tests of the simulation core's link primitive (link.h):
 * each rate representation keeps its own rounding (fixed point rounded up
 * for the test network, a double rounded to nearest for mroce-sim), the
 * FIFO clock queues behind the packet in service, the backlog and ready
 * time agree, and drop-tail, step and RED marking decide at their edges.
 */
#include <stdio.h>

#include "link.h"

static int failures;
#define CHECK(c)                                                         \
    do {                                                                 \
        if (!(c)) {                                                      \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                  \
        }                                                                \
    } while (0)

static void test_rates(void)
{
    struct slink_rate f = slink_rate_fixed(100000000000ull);
    struct slink_rate n = slink_rate_nearest(100e9);
    struct slink_rate f3 = slink_rate_fixed(3000000000ull);
    struct slink_rate n3 = slink_rate_nearest(3e9);
    struct slink_rate inf = slink_rate_fixed(0);

    /* 100 Gb/s is exact in both: 80 ps per byte */
    CHECK(f.ppb == 80u << 16);
    CHECK(slink_ser_ps(&f, 4176) == 334080);
    CHECK(slink_ser_ps(&n, 4176) == 334080);
    /* 3 Gb/s: 2666.67 ps per byte; one byte rounds up in fixed point,
     * to nearest in the double */
    CHECK(slink_ser_ps(&f3, 1) == 2667);
    CHECK(slink_ser_ps(&n3, 1) == 2667);
    CHECK(slink_ser_ps(&f3, 3) == 8001); /* 8000.0004 ps in 48.16 */
    CHECK(slink_ser_ps(&n3, 3) == 8000);
    CHECK(slink_ser_ps(&inf, 1000) == 0);
    CHECK(!slink_rate_finite(&inf) && slink_rate_finite(&f) &&
          slink_rate_finite(&n));
}

static void test_clock(void)
{
    struct slink l = {0};
    l.rate = slink_rate_fixed(100000000000ull);
    CHECK(slink_tx(&l, 1000, 100) == 9000);  /* idle: starts at once */
    CHECK(slink_start(&l, 5000) == 9000);    /* busy: waits */
    CHECK(slink_tx(&l, 5000, 100) == 17000); /* behind the first */
    CHECK(slink_tx(&l, 20000, 10) == 20800); /* idle again */
    /* backlog at 17000 - 8000 ps: 100 bytes; including the partly sent
     * rest, rounded up */
    l.busy_ps = 17000;
    CHECK(slink_backlog(&l, 9000) == 100);
    CHECK(slink_backlog(&l, 9001) == 100);
    CHECK(slink_backlog(&l, 9080) == 99);
    CHECK(slink_backlog(&l, 17000) == 0);
    /* ready: the first time the backlog is below q */
    CHECK(slink_ready_ps(&l, 100) == 9080);
    CHECK(slink_backlog(&l, 9079) == 100 && slink_backlog(&l, 9080) == 99);
    CHECK(slink_ready_ps(&l, 0) == 17000);
    l.rate = slink_rate_fixed(0);
    CHECK(slink_ready_ps(&l, 0) == 0 && slink_backlog(&l, 0) == 0);
}

static void test_rules(void)
{
    uint64_t rng = 7, before;
    int marks = 0;
    CHECK(!slink_droptail(900, 100, 1000));
    CHECK(slink_droptail(901, 100, 1000));
    CHECK(!slink_droptail(UINT32_MAX, 9000, SLINK_UNLIMITED));
    CHECK(!slink_ecn_step(1000, 1000) && slink_ecn_step(1001, 1000));
    CHECK(!slink_ecn_step(UINT32_MAX, SLINK_UNLIMITED));
    /* RED: no draw at or below kmin nor at or above kmax */
    before = rng;
    CHECK(!slink_ecn_red(100, 100, 400, 1.0, &rng));
    CHECK(slink_ecn_red(400, 100, 400, 0.0, &rng));
    CHECK(rng == before);
    /* in between: a draw each time, marking about pmax * fraction */
    for (int i = 0; i < 10000; i++)
        marks += slink_ecn_red(250, 100, 400, 0.2, &rng);
    CHECK(rng != before);
    CHECK(marks > 800 && marks < 1200); /* expected 1000 */
}

int main(void)
{
    test_rates();
    test_clock();
    test_rules();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("link: ok\n");
    return 0;
}
