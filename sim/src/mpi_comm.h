/*
 * mpi_comm.h - mroce-sim-mpi's MPI glue (mpi_comm.c): it sets
 * sim_dist_comm (sim.h, dist.c) to collectives over MPI_COMM_WORLD.
 */
#ifndef MROCE_SIM_MPI_COMM_H
#define MROCE_SIM_MPI_COMM_H

/* MPI_Init and sim_dist_comm; returns this process's rank or -1. */
int mpi_comm_init(int *argc, char ***argv);
/* Releases the glue and calls MPI_Finalize. */
void mpi_comm_fini(void);

#endif /* MROCE_SIM_MPI_COMM_H */
