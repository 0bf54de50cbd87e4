/*
 * mpi_comm.c - the collectives of a run over several processes
 * (struct dist_comm, dist.c) over MPI: mroce-sim-mpi is main.c built
 * with MROCE_SIM_MPI and this file, one MPI rank per partition.
 *
 * The exchange at the end of each window is one message from every rank
 * to every other (MPI_Isend, then MPI_Iprobe for its size and MPI_Recv),
 * empty ones included, so a window costs one round trip and the
 * per-rank buffers need not be copied into one; the reductions of a
 * window travel at the head of the messages (dist.c).  The reductions at
 * the end of a run are MPI_Allreduce on 64-bit unsigned integers.
 *
 * Waiting for the other ranks' messages is where a rank spends most of a
 * window when the ranks share cores with each other or with other
 * programs: MPI_Probe and MPI_Waitall poll, and a polling rank takes the
 * core the rank it waits for needs.  So the exchange polls with
 * MPI_Iprobe / MPI_Testall and, after a short spin, sleeps between polls
 * (1 us, doubling up to MROCE_SIM_MPI_SLEEP_US, default 50, with a timer
 * slack of 1 us), which gives the core away.  MROCE_SIM_MPI_WAIT=spin keeps polling without sleeping
 * (as many idle cores as ranks: the lowest latency per window).  Waiting
 * changes only when a rank looks, never what it receives, so the results
 * are the same either way.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <mpi.h>

#include "mpi_comm.h"
#include "sim.h"

struct mpi_ctx {
    int n;
    MPI_Request *req; /* owned */
    uint8_t *got;     /* per rank: its message of this window is in; owned */
    int spin;         /* MROCE_SIM_MPI_WAIT=spin: never sleep */
    long sleep_max_ns;
};

/* Polls before the first sleep of a wait. */
enum { WAIT_SPINS = 64 };

/* One step of a wait that has polled `polls` times without progress: a
 * spin at first, then a sleep that doubles up to the cap. */
static void wait_step(const struct mpi_ctx *c, unsigned polls)
{
    if (c->spin || polls < WAIT_SPINS)
        return;
    unsigned k = polls - WAIT_SPINS;
    long ns = 1000L << (k < 16 ? k : 16);
    if (ns > c->sleep_max_ns)
        ns = c->sleep_max_ns;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

static struct mpi_ctx g_ctx;
static struct dist_comm g_comm;

static int mpi_exchange(void *ctx, struct dist_buf *out, struct dist_buf *in)
{
    struct mpi_ctx *c = ctx;
    int me = (int)g_comm.rank, nreq = 0;
    for (int r = 0; r < c->n; r++) {
        if (out[r].n > (size_t)0x7fffffff)
            return -1;
        if (r != me &&
            MPI_Isend(out[r].p, (int)out[r].n, MPI_BYTE, r, 0, MPI_COMM_WORLD,
                      &c->req[nreq++]) != MPI_SUCCESS)
            return -1;
    }
    int left = 0;
    for (int r = 0; r < c->n; r++) {
        in[r].n = 0;
        c->got[r] = r == me;
        left += r != me;
    }
    uint8_t *dst = dist_buf_room(&in[me], out[me].n + 1);
    if (out[me].n)
        memcpy(dst, out[me].p, out[me].n);
    in[me].n = out[me].n;
    /* the messages in the order they come, sleeping while none has; a
     * rank's next message (its next window's) waits behind this one */
    for (unsigned polls = 0; left > 0;) {
        int r, flag = 0, cnt;
        MPI_Status st;
        for (r = 0; r < c->n && !flag; r++) {
            if (!c->got[r] &&
                MPI_Iprobe(r, 0, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
                return -1;
        }
        if (!flag) {
            wait_step(c, polls++);
            continue;
        }
        r--;
        if (MPI_Get_count(&st, MPI_BYTE, &cnt) != MPI_SUCCESS)
            return -1;
        dst = dist_buf_room(&in[r], (size_t)cnt + 1);
        if (MPI_Recv(dst, cnt, MPI_BYTE, r, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        in[r].n = (size_t)cnt;
        c->got[r] = 1;
        left--;
        polls = 0;
    }
    for (unsigned polls = 0;;) {
        int done;
        if (MPI_Testall(nreq, c->req, &done, MPI_STATUSES_IGNORE) !=
            MPI_SUCCESS)
            return -1;
        if (done)
            return 0;
        wait_step(c, polls++);
    }
}

static int mpi_allreduce(void *ctx, uint64_t *v, uint32_t n, int max)
{
    (void)ctx;
    if (!n)
        return 0;
    return MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_UINT64_T,
                         max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS
               ? 0
               : -1;
}

int mpi_comm_init(int *argc, char ***argv)
{
    int rank, n;
    if (MPI_Init(argc, argv) != MPI_SUCCESS)
        return -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    g_ctx.n = n;
    g_ctx.req = calloc((size_t)n, sizeof(MPI_Request));
    g_ctx.got = calloc((size_t)n, 1);
    if (!g_ctx.req || !g_ctx.got)
        return -1;
    const char *w = getenv("MROCE_SIM_MPI_WAIT");
    g_ctx.spin = w && !strcmp(w, "spin");
    const char *us = getenv("MROCE_SIM_MPI_SLEEP_US");
    long max_us = us ? strtol(us, NULL, 10) : 50;
    g_ctx.sleep_max_ns = (max_us > 0 && max_us < 100000 ? max_us : 50) * 1000;
#ifdef __linux__
    /* the kernel's default slack (50 us) would make every short sleep a
     * long one */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
#endif
    g_comm.rank = (uint32_t)rank;
    g_comm.nranks = (uint32_t)n;
    g_comm.ctx = &g_ctx;
    g_comm.exchange = mpi_exchange;
    g_comm.allreduce = mpi_allreduce;
    sim_dist_comm = &g_comm;
    return rank;
}

void mpi_comm_fini(void)
{
    free(g_ctx.req);
    free(g_ctx.got);
    sim_dist_comm = NULL;
    MPI_Finalize();
}
