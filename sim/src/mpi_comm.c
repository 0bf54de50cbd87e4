/*
 * mpi_comm.c - the collectives of a run over several processes
 * (struct dist_comm, dist.c) over MPI: mroce-sim-mpi is main.c built
 * with MROCE_SIM_MPI and this file, one MPI rank per partition.
 *
 * The exchange at the end of each window sends every rank's buffer for
 * every other rank: the byte counts with MPI_Alltoall, then the bytes
 * point to point (MPI_Irecv / MPI_Isend, one pair per peer with data),
 * so the per-rank buffers need not be copied into one.  The reductions
 * are MPI_Allreduce on 64-bit unsigned integers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "mpi_comm.h"
#include "sim.h"

struct mpi_ctx {
    int n;
    int *scnt, *rcnt; /* owned */
    MPI_Request *req; /* owned */
};

static struct mpi_ctx g_ctx;
static struct dist_comm g_comm;

static int mpi_exchange(void *ctx, struct dist_buf *out, struct dist_buf *in)
{
    struct mpi_ctx *c = ctx;
    int me = (int)g_comm.rank;
    for (int r = 0; r < c->n; r++) {
        if (out[r].n > (size_t)0x7fffffff)
            return -1;
        c->scnt[r] = (int)out[r].n;
    }
    if (MPI_Alltoall(c->scnt, 1, MPI_INT, c->rcnt, 1, MPI_INT,
                     MPI_COMM_WORLD) != MPI_SUCCESS)
        return -1;
    int nreq = 0;
    for (int r = 0; r < c->n; r++) {
        in[r].n = 0;
        if (!c->rcnt[r])
            continue;
        uint8_t *dst = dist_buf_room(&in[r], (size_t)c->rcnt[r]);
        if (r == me) {
            memcpy(dst, out[r].p, (size_t)c->rcnt[r]);
        } else if (MPI_Irecv(dst, c->rcnt[r], MPI_BYTE, r, 0, MPI_COMM_WORLD,
                             &c->req[nreq++]) != MPI_SUCCESS) {
            return -1;
        }
        in[r].n = (size_t)c->rcnt[r];
    }
    for (int r = 0; r < c->n; r++)
        if (r != me && c->scnt[r] &&
            MPI_Isend(out[r].p, c->scnt[r], MPI_BYTE, r, 0, MPI_COMM_WORLD,
                      &c->req[nreq++]) != MPI_SUCCESS)
            return -1;
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
    g_ctx.scnt = calloc((size_t)n, sizeof(int));
    g_ctx.rcnt = calloc((size_t)n, sizeof(int));
    g_ctx.req = calloc(2 * (size_t)n, sizeof(MPI_Request));
    if (!g_ctx.scnt || !g_ctx.rcnt || !g_ctx.req)
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
    free(g_ctx.scnt);
    free(g_ctx.rcnt);
    free(g_ctx.req);
    sim_dist_comm = NULL;
    MPI_Finalize();
}
