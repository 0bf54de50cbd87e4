/*
 * perf_report.c - what mroce-perf prints and writes: perftest's banner and
 * column headings, one row per message size (bandwidth or latency columns),
 * a footer with retransmissions, duplicates, paths and verification totals,
 * and with --json the same results as a file.  Scripts read both (bench/,
 * tests/test_perf_smoke.c), so their formats change only with them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "perf.h"

/* ------------------------------------------------------------ printing --- */

static const char *dashes = "--------------------------------------------------"
                            "-------------------------------------";

void print_banner(void)
{
    const struct opts *o = &P.o;
    printf("%s\n", dashes);
    printf("                    %s\n", P.test == T_ATOMIC_LAT && P.cs
                                           ? "Atomic CMP_AND_SWAP Latency Test"
                                           : tests[P.test].title);
    printf(" Transport       : MetaRoCE over UDP (libmroce)\n");
    printf(" Role            : %s\n", P.server ? "server" : "client");
    printf(" Number of qps   : %-8u Connection type : RC\n", P.nqps);
    printf(
        " TX depth        : %-8u Data ex. method : MetaRoCE SEND (in band)\n",
        P.tx_depth);
    printf(" Mtu             : %-8u Paths           : %u per QP\n", P.mtu,
           o->paths ? o->paths : 64);
    printf(" CC              : %-8s Progress        : %s\n",
           o->cc == MROCE_CC_NONE ? "none" : "delay",
           o->progress ? "thread" : "app");
    printf(" Bidirectional   : %-8s Verify          : %s\n",
           P.bidir ? "ON" : "OFF", P.verify ? "ON" : "OFF");
    if (o->have_fault)
        printf(" Fault (local)   : tx drop %g dup %g reorder %g corrupt %g;"
               " rx drop %g dup %g reorder %g corrupt %g\n",
               o->txf.drop, o->txf.dup, o->txf.reorder, o->txf.corrupt,
               o->rxf.drop, o->rxf.dup, o->rxf.reorder, o->rxf.corrupt);
    for (uint32_t i = 0; i < P.nqps; i++)
        printf(" local QPN 0x%06x remote QPN 0x%06x\n", P.q[i].qpn,
               P.q[i].rqpn);
    printf("%s\n", dashes);
    if (tests[P.test].lat)
        printf(
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]"
            "    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%%"
            " percentile[usec] \n");
    else
        printf(
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]"
            "   MsgRate[Mpps]\n");
    fflush(stdout);
}

void print_row(const struct row *r)
{
    if (tests[P.test].lat)
        printf(" %-7u %-10" PRIu64 " %-7.2f        %-7.2f      %-7.2f          "
               "%-7.2f        %-7.2f          %-7.2f                %-7.2f\n",
               r->size, r->iters, r->t_min, r->t_max, r->t_typ, r->t_avg,
               r->t_std, r->p99, r->p999);
    else
        printf(" %-10u %-10" PRIu64
               "     %-9.2f          %-9.2f            %-.6f\n",
               r->size, r->iters, r->bw_peak, r->bw_avg, r->mpps);
    fflush(stdout);
}

void print_footer(const struct ctrl *peer)
{
    struct mroce_qp_counters s;
    uint64_t used, total;
    sum_counters(&s, &used, &total);
    printf("%s\n", dashes);
    printf(" retransmissions : %" PRIu64 " (path %" PRIu64 ", ooo %" PRIu64
           ", rto %" PRIu64 ", probe %" PRIu64 ", rnr %" PRIu64 ")",
           s.retx_pkts, s.retx_path, s.retx_ooo, s.retx_rto, s.retx_probe,
           s.retx_rnr);
    if (peer)
        printf("; peer %" PRIu64, peer->retx);
    printf("\n duplicates rx   : %" PRIu64 "   timeouts: %" PRIu64
           "   paths used: %" PRIu64 " of %" PRIu64 "   paths retired: %" PRIu64
           "\n",
           s.rx_dups, s.timeouts, used, total, s.paths_retired);
    if (P.verify)
        printf(" verify          : %" PRIu64 " bytes checked here, %" PRIu64
               " mismatches here, %" PRIu64 " at the peer\n",
               P.checked, P.mismatches, P.peer_mismatches);
    printf("%s\n", dashes);
    fflush(stdout);
}

void write_json(void)
{
    if (!P.o.json)
        return;
    FILE *f = fopen(P.o.json, "w");
    if (!f)
        die("cannot write %s: %s", P.o.json, strerror(errno));
    struct mroce_qp_counters s;
    uint64_t used, total;
    sum_counters(&s, &used, &total);
    /* Report what the QPs really use: the library's defaults where no
     * option overrode them (path_burst is 8 there, not the engine's 1). */
    struct mroce_qp_init_attr defs;
    mroce_qp_init_attr_default(&defs);
    fprintf(f,
            "{\n  \"tool\": \"mroce-perf\",\n  \"test\": \"%s\",\n"
            "  \"role\": \"%s\",\n  \"transport\": \"metaroce-udp\",\n",
            tests[P.test].name, P.server ? "server" : "client");
    fprintf(f,
            "  \"config\": {\"qps\": %u, \"tx_depth\": %u, \"mtu\": %u, "
            "\"paths\": %u, \"cc\": \"%s\", \"progress\": \"%s\", "
            "\"bidirectional\": %s, \"verify\": %s, \"iterations\": %" PRIu64
            ", \"duration_s\": %.3f, \"burst\": %u,\n"
            "             \"fault\": {\"tx\": {\"drop\": %g, \"dup\": %g, "
            "\"reorder\": %g, \"corrupt\": %g}, \"rx\": {\"drop\": %g, "
            "\"dup\": %g, \"reorder\": %g, \"corrupt\": %g}}},\n",
            P.nqps, P.tx_depth, P.mtu,
            P.o.paths ? P.o.paths : (unsigned)defs.eng.npaths,
            P.o.cc == MROCE_CC_NONE ? "none" : "delay",
            P.o.progress ? "thread" : "app", P.bidir ? "true" : "false",
            P.verify ? "true" : "false", P.iters,
            (double)P.duration_ms / 1000.0,
            P.o.burst ? P.o.burst : (unsigned)defs.eng.path_burst, P.o.txf.drop,
            P.o.txf.dup, P.o.txf.reorder, P.o.txf.corrupt, P.o.rxf.drop,
            P.o.rxf.dup, P.o.rxf.reorder, P.o.rxf.corrupt);
    fprintf(f, "  \"results\": [");
    for (int i = 0; i < P.nrows; i++) {
        const struct row *r = &P.rows[i];
        fprintf(f, "%s\n    {\"bytes\": %u, \"iterations\": %" PRIu64,
                i ? "," : "", r->size, r->iters);
        if (tests[P.test].lat)
            fprintf(f,
                    ", \"t_min_us\": %.3f, \"t_max_us\": %.3f, "
                    "\"t_typical_us\": %.3f, \"t_avg_us\": %.3f, "
                    "\"t_stdev_us\": %.3f, \"p99_us\": %.3f, \"p999_us\": %.3f",
                    r->t_min, r->t_max, r->t_typ, r->t_avg, r->t_std, r->p99,
                    r->p999);
        else
            fprintf(f,
                    ", \"bw_peak_gbps\": %.4f, \"bw_avg_gbps\": %.4f, "
                    "\"msg_rate_mpps\": %.6f",
                    r->bw_peak, r->bw_avg, r->mpps);
        fprintf(f,
                ", \"retx_local\": %" PRIu64 ", \"retx_remote\": %" PRIu64
                ", \"dups\": %" PRIu64 ", \"verify_mismatches\": %" PRIu64 "}",
                r->retx_local, r->retx_remote, r->dups, r->mismatches);
    }
    fprintf(f, "\n  ],\n  \"counters\": {");
    int first = 1;
#define JSON_C(name)                                                    \
    fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", #name, s.name); \
    first = 0;
    MROCE_QP_COUNTERS(JSON_C)
#undef JSON_C
    fprintf(f,
            "},\n  \"paths_used\": %" PRIu64 ", \"paths_total\": %" PRIu64
            ",\n  \"verify\": {\"bytes_checked\": %" PRIu64
            ", \"mismatches\": %" PRIu64 ", \"peer_mismatches\": %" PRIu64
            "},\n"
            "  \"status\": \"%s\"\n}\n",
            used, total, P.checked, P.mismatches, P.peer_mismatches,
            P.mismatches || P.peer_mismatches ? "mismatch" : "ok");
    if (fclose(f) != 0)
        die("cannot write %s", P.o.json);
}
