/*
 * main.c - mroce-sim: run a scenario for each of its transports.
 *
 *   mroce-sim [-o OUTDIR] [-q] [-s key=value]... SCENARIO-FILE
 *
 * The scenario format is in scenario.c and sim/README.md; -s overrides one
 * key after the file is read (e.g. -s hosts=256 -s transports=mroce).
 * Built with MROCE_SIM_MPI it is mroce-sim-mpi: `mpirun -n R
 * mroce-sim-mpi ...` runs each transport as R partitions, one per rank
 * (dist.c); rank 0 prints and writes the results.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#ifdef MROCE_SIM_MPI
#include "mpi_comm.h"
#endif

static void usage(void)
{
    fprintf(stderr, "usage: mroce-sim [-o OUTDIR] [-q] [-s key=value]... "
                    "SCENARIO-FILE\n");
}

static int sim_main(int argc, char **argv);

int main(int argc, char **argv)
{
#ifdef MROCE_SIM_MPI
    int rank = mpi_comm_init(&argc, &argv);
    if (rank < 0) {
        fprintf(stderr, "mroce-sim-mpi: MPI_Init failed\n");
        return 2;
    }
    if (rank > 0 && !freopen("/dev/null", "w", stdout))
        return 2;
    int rc = sim_main(argc, argv);
    mpi_comm_fini();
    return rc;
#else
    return sim_main(argc, argv);
#endif
}

static int sim_main(int argc, char **argv)
{
    static struct scenario sc;
    const char *outdir = NULL;
    char *sets[32];
    int nsets = 0, quiet = 0, opt;
    while ((opt = getopt(argc, argv, "o:qs:h")) != -1) {
        switch (opt) {
        case 'o':
            outdir = optarg;
            break;
        case 'q':
            quiet = 1;
            break;
        case 's':
            if (nsets < 32)
                sets[nsets++] = optarg;
            break;
        default:
            usage();
            return 2;
        }
    }
    if (optind != argc - 1) {
        usage();
        return 2;
    }
    scenario_defaults(&sc);
    if (scenario_load(&sc, argv[optind]) < 0)
        return 2;
    /* -s workload=... and -s fault=... replace the file's lists */
    for (int i = 0; i < nsets; i++) {
        if (!strncmp(sets[i], "workload=", 9))
            sc.nwl = 0;
        if (!strncmp(sets[i], "fault=", 6))
            sc.nfaults = 0;
    }
    for (int i = 0; i < nsets; i++) {
        char *eq = strchr(sets[i], '=');
        if (!eq) {
            usage();
            return 2;
        }
        *eq = 0;
        if (scenario_set(&sc, sets[i], eq + 1, "-s") < 0)
            return 2;
    }
    if (outdir)
        snprintf(sc.outdir, sizeof(sc.outdir), "%s", outdir);
    if (quiet)
        sc.progress = 0;
    int rc = 0;
    for (uint32_t i = 0; i < sc.ntp; i++) {
        struct run_result r;
        if (sim_run(&sc, &sc.tp[i], &r) < 0)
            rc = 1;
    }
    return rc;
}
