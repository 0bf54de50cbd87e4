/*
 * mpi_comm.c - the collectives of a run over several processes
 * (struct dist_comm, dist.c) over MPI: mroce-sim-mpi is main.c built
 * with MROCE_SIM_MPI and this file, one MPI rank per partition.
 *
 * The exchange at the end of each window is one message from every rank
 * to every other (MPI_Isend, then MPI_Probe for its size and MPI_Recv),
 * empty ones included, so a window costs one round trip and the
 * per-rank buffers need not be copied into one; the reductions of a
 * window travel at the head of the messages (dist.c).  The reductions at
 * the end of a run are MPI_Allreduce on 64-bit unsigned integers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpi_comm.h"
#include "sim.h"

struct mpi_ctx {
    int n;
    MPI_Request *req; /* owned */
};

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
    for (int r = 0; r < c->n; r++) {
        in[r].n = 0;
        if (r == me) {
            uint8_t *dst = dist_buf_room(&in[r], out[r].n + 1);
            if (out[r].n)
                memcpy(dst, out[r].p, out[r].n);
            in[r].n = out[r].n;
            continue;
        }
        MPI_Status st;
        int cnt;
        if (MPI_Probe(r, 0, MPI_COMM_WORLD, &st) != MPI_SUCCESS ||
            MPI_Get_count(&st, MPI_BYTE, &cnt) != MPI_SUCCESS)
            return -1;
        uint8_t *dst = dist_buf_room(&in[r], (size_t)cnt + 1);
        if (MPI_Recv(dst, cnt, MPI_BYTE, r, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        in[r].n = (size_t)cnt;
    }
    return MPI_Waitall(nreq, c->req, MPI_STATUSES_IGNORE) == MPI_SUCCESS ? 0
                                                                         : -1;
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
    if (!g_ctx.req)
        return -1;
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
    sim_dist_comm = NULL;
    MPI_Finalize();
}
