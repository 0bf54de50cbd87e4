/*
 * mpi_osc.c - MPI one-sided communication, every value checked.
 *
 * Run by tests/mpi/run_mpi.sh with MPI_OSC=1 (4 ranks): Open MPI's osc
 * rdma component over btl ofi and the provider named there, so every Put,
 * Get and atomic below is an fi_write, fi_read or fi_atomic of the
 * provider (osc rdma's locks and counters are atomics too).  The tests:
 *   fence        MPI_Put to the right neighbour, MPI_Get from the left,
 *                MPI_Accumulate (SUM) from every rank into every rank,
 *                inside MPI_Win_fence epochs
 *   lock         MPI_Win_lock exclusive: every rank adds to one counter
 *                on rank 0 by Get + Put (only mutual exclusion makes the
 *                total right), then shared locks with MPI_Fetch_and_op
 *                (SUM) on int64, MPI_Accumulate (MAX, BOR) on int32 and
 *                MPI_Get_accumulate on double.  MPI_Compare_and_swap is
 *                left out: Open MPI 4.1's osc rdma hands btl ofi a NULL
 *                local registration for it, which btl ofi dereferences
 *                (open-mpi/ompi#9146), whatever the provider.
 *   pscw         MPI_Win_post/start/complete/wait: even ranks expose,
 *                odd ranks Put and Accumulate into them
 * Rank 0 prints one line per test; every rank exits 1 if any check failed
 * anywhere.  MPI_CHECK_TIMEOUT (seconds, default 120) bounds the run.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define N 64      /* elements per rank in the window */
#define ROUNDS 20 /* exclusive-lock increments per rank */

static int rank, nranks;
static long n_fail;

#define CHECK_EQ(what, got, want)                                             \
    do {                                                                      \
        long long g_ = (long long)(got), w_ = (long long)(want);              \
        if (g_ != w_ && n_fail++ < 8)                                         \
            fprintf(stderr, "rank %d: %s: %lld, expected %lld\n", rank, what, \
                    g_, w_);                                                  \
    } while (0)

static void report(const char *name)
{
    long all = 0;
    MPI_Allreduce(&n_fail, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("mpi_osc: %-6s %s\n", name, all ? "FAILED" : "ok");
    n_fail = all;
}

static void t_fence(void)
{
    int32_t *base;
    MPI_Win win;
    MPI_Win_allocate(3 * N * sizeof(int32_t), sizeof(int32_t), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &base, &win);
    for (int i = 0; i < 3 * N; i++)
        base[i] = i < N ? rank * 1000 + i : 0;
    int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
    int32_t put[N], got[N], one[N];
    for (int i = 0; i < N; i++) {
        put[i] = rank * 7 + i;
        one[i] = rank + 1;
    }
    MPI_Win_fence(0, win);
    MPI_Put(put, N, MPI_INT32_T, right, N, N, MPI_INT32_T, win);
    MPI_Get(got, N, MPI_INT32_T, left, 0, N, MPI_INT32_T, win);
    for (int r = 0; r < nranks; r++)
        MPI_Accumulate(one, N, MPI_INT32_T, r, 2 * N, N, MPI_INT32_T, MPI_SUM,
                       win);
    MPI_Win_fence(0, win);
    int sum = nranks * (nranks + 1) / 2;
    for (int i = 0; i < N; i++) {
        CHECK_EQ("fence put", base[N + i], left * 7 + i);
        CHECK_EQ("fence get", got[i], left * 1000 + i);
        CHECK_EQ("fence accumulate", base[2 * N + i], sum);
    }
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    report("fence");
}

static void t_lock(void)
{
    int64_t *base;
    MPI_Win win;
    MPI_Win_allocate(8 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &base, &win);
    for (int i = 0; i < 8; i++)
        base[i] = 0;
    int32_t *mx32 = (int32_t *)&base[4], *bor32 = (int32_t *)&base[5];
    *mx32 = -100;
    double *dbl = (double *)&base[6];
    *dbl = 0.5;
    MPI_Barrier(MPI_COMM_WORLD);

    /* Read-modify-write under an exclusive lock. */
    for (int k = 0; k < ROUNDS; k++) {
        int64_t v = 0;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&v, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
        MPI_Win_flush(0, win);
        v += 1;
        MPI_Put(&v, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
        MPI_Win_unlock(0, win);
    }

    /* Atomics under shared locks. */
    int64_t add = rank + 1, old = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Fetch_and_op(&add, &old, MPI_INT64_T, 0, 1, MPI_SUM, win);
    MPI_Win_unlock(0, win);
    CHECK_EQ("fetch_and_op old value",
             old >= 0 && old <= (int64_t)nranks * (nranks + 1) / 2, 1);
    int32_t mx = rank * 10, bits = 1 << rank;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Accumulate(&mx, 1, MPI_INT32_T, 0, 4, 1, MPI_INT32_T, MPI_MAX, win);
    MPI_Accumulate(&bits, 1, MPI_INT32_T, 0, 5, 1, MPI_INT32_T, MPI_BOR, win);
    double dadd = 0.25, dold = 0;
    MPI_Get_accumulate(&dadd, 1, MPI_DOUBLE, &dold, 1, MPI_DOUBLE, 0, 6, 1,
                       MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_unlock(0, win);
    CHECK_EQ("get_accumulate old value",
             dold >= 0.5 && dold < 0.5 + 0.25 * nranks, 1);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win); /* local view synced */
        CHECK_EQ("exclusive-lock counter", base[0], (int64_t)ROUNDS * nranks);
        CHECK_EQ("fetch_and_op total", base[1], nranks * (nranks + 1) / 2);
        CHECK_EQ("accumulate max", *mx32, (nranks - 1) * 10);
        CHECK_EQ("accumulate bor", *bor32, (1 << nranks) - 1);
        CHECK_EQ("get_accumulate total x4", (long long)(*dbl * 4),
                 (long long)((0.5 + 0.25 * nranks) * 4));
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    report("lock");
}

static void t_pscw(void)
{
    int32_t *base;
    MPI_Win win;
    MPI_Win_allocate(2 * N * sizeof(int32_t), sizeof(int32_t), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &base, &win);
    for (int i = 0; i < 2 * N; i++)
        base[i] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Group world, peers;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int odd = rank & 1, ranks[64], n = 0;
    for (int r = 0; r < nranks; r++)
        if ((r & 1) != odd)
            ranks[n++] = r;
    MPI_Group_incl(world, n, ranks, &peers);
    if (!odd) { /* exposes its window to the odd ranks */
        MPI_Win_post(peers, 0, win);
        MPI_Win_wait(win);
        int nodd = n, sum = 0;
        for (int k = 0; k < n; k++)
            sum += ranks[k];
        for (int i = 0; i < N; i++)
            CHECK_EQ("pscw accumulate", base[N + i], sum + nodd * i);
        if (n) /* the first odd rank also Puts */
            for (int i = 0; i < N; i++)
                CHECK_EQ("pscw put", base[i], ranks[0] * 100 + i);
    } else { /* accesses the even ranks */
        int32_t put[N], acc[N];
        for (int i = 0; i < N; i++) {
            put[i] = rank * 100 + i;
            acc[i] = rank + i;
        }
        MPI_Win_start(peers, 0, win);
        for (int k = 0; k < n; k++) {
            if (rank == 1)
                MPI_Put(put, N, MPI_INT32_T, ranks[k], 0, N, MPI_INT32_T, win);
            MPI_Accumulate(acc, N, MPI_INT32_T, ranks[k], N, N, MPI_INT32_T,
                           MPI_SUM, win);
        }
        MPI_Win_complete(win);
    }
    MPI_Group_free(&peers);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
    report("pscw");
}

int main(int argc, char **argv)
{
    const char *t = getenv("MPI_CHECK_TIMEOUT");
    alarm(t ? (unsigned)atoi(t) : 120);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    long failed = 0;
    t_fence();
    failed += n_fail;
    n_fail = 0;
    t_lock();
    failed += n_fail;
    n_fail = 0;
    t_pscw();
    failed += n_fail;
    if (rank == 0)
        printf("mpi_osc: %s\n", failed ? "FAILED" : "all passed");
    MPI_Finalize();
    return failed ? 1 : 0;
}
