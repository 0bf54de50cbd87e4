/*
 * bench_dpdk_tx.c - what the DPDK link's transmit costs per packet, copied
 * into the mbuf against zero-copy (the payload attached as an external
 * mbuf), with nothing else in the way.
 *
 * One process opens the DPDK link (src/dpdk) on a port that drops what it
 * is given (net_null by default; MROCE_DPDK_VDEV overrides it) and sends
 * the UDP datapath's zero-copy gather list (MetaRoCE headers, a payload
 * from a 1 MiB region walked in order, the CRC) the way the UDP datapath
 * does, flushing every 16 packets, in four modes alternating ROUNDS
 * times: copied (MROCE_DPDK_ZC=0) and zero-copy, each with no UDP
 * checksum (the link's IPv4 default, WIRE-13) and with it summed in
 * software (MROCE_DPDK_UDP_CSUM=1).  The figure is this thread's CPU time
 * per packet: headers, the checksum where summed, the copy or the chain,
 * the burst and the PMD's free.  A port that copies the frame out (memif,
 * af_packet) adds its own copy to all four.
 *
 * Usage: bench_dpdk_tx [-n PACKETS] [-s PAYLOAD] [-r ROUNDS]
 * Prints "RESULT mode=copy|zc|copysum|zcsum ns_per_pkt=..." per round and
 * the medians.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

#include "dpdk_link.h"

#define REGION (1u << 20)
#define HDR 44u /* base header and RETH: a WRITE's first packet */

static double thread_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One round: opens the link with MROCE_DPDK_ZC=zc and
 * MROCE_DPDK_UDP_CSUM=sum, sends n packets, closes it.  Returns ns per
 * packet, or -1. */
static double round_ns(int zc, int sum, unsigned n, unsigned plen,
                       uint8_t *region)
{
    setenv("MROCE_DPDK_ZC", zc ? "1" : "0", 1);
    setenv("MROCE_DPDK_UDP_CSUM", sum ? "1" : "0", 1);
    struct sockaddr_storage local;
    memset(&local, 0, sizeof local);
    struct sockaddr_in *l4 = (struct sockaddr_in *)&local;
    l4->sin_family = AF_INET;
    l4->sin_port = htons(4791);
    inet_pton(AF_INET, "10.0.0.1", &l4->sin_addr);
    struct sockaddr_in to = *l4;
    inet_pton(AF_INET, "10.0.0.2", &to.sin_addr);
    struct mroce_link link;
    char err[256];
    if (mroce_dpdk_link_open(&link, &local, err, sizeof err) < 0) {
        fprintf(stderr, "bench_dpdk_tx: %s\n", err);
        return -1;
    }
    uint8_t slot[HDR + 4];
    memset(slot, 0x5a, sizeof slot);
    size_t off = 0;
    unsigned dropped = 0;
    double t0 = thread_secs();
    for (unsigned i = 0; i < n; i++) {
        if (off + plen > REGION)
            off = 0;
        struct iovec v[3] = {{slot, HDR},
                             {region + off, plen},
                             {slot + HDR, 4}};
        off += plen;
        if (link.ops->send(link.ctx, (uint16_t)(49152 + (i & 63)),
                           (const struct sockaddr *)&to, v, 3, 2) < 0)
            dropped++;
        if ((i & 15) == 15)
            link.ops->flush(link.ctx);
    }
    link.ops->flush(link.ctx);
    double t = thread_secs() - t0;
    link.ops->close(link.ctx);
    if (dropped)
        fprintf(stderr, "bench_dpdk_tx: %u sends dropped\n", dropped);
    return t * 1e9 / n;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    unsigned n = 200000, plen = 4096, rounds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n"))
            n = (unsigned)strtoul(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "-s"))
            plen = (unsigned)strtoul(argv[i + 1], NULL, 0) & ~1u;
        else if (!strcmp(argv[i], "-r"))
            rounds = (unsigned)strtoul(argv[i + 1], NULL, 0);
    }
    if (!n || plen < 2 || plen > 8192 || !rounds || rounds > 64) {
        fprintf(stderr, "usage: bench_dpdk_tx [-n PACKETS] [-s PAYLOAD "
                        "(2..8192)] [-r ROUNDS (1..64)]\n");
        return 2;
    }
    setenv("MROCE_DPDK_VDEV",
           getenv("MROCE_DPDK_VDEV") ? getenv("MROCE_DPDK_VDEV") : "net_null",
           0);
    setenv("MROCE_DPDK_NEIGH", "10.0.0.2=02:00:00:00:00:02", 0);
    uint8_t *region = malloc(REGION);
    if (!region)
        return 1;
    for (unsigned i = 0; i < REGION; i++)
        region[i] = (uint8_t)(i * 131u);
    static const char *const name[4] = {"copy", "zc", "copysum", "zcsum"};
    double t[4][64], m[4];
    for (unsigned r = 0; r < rounds; r++)
        for (int k = 0; k < 4; k++) {
            t[k][r] = round_ns(k & 1, k >> 1, n, plen, region);
            if (t[k][r] < 0)
                return 1;
            printf("RESULT mode=%s round=%u payload=%u ns_per_pkt=%.1f\n",
                   name[k], r, plen, t[k][r]);
        }
    for (int k = 0; k < 4; k++) {
        qsort(t[k], rounds, sizeof t[k][0], cmp_d);
        m[k] = t[k][rounds / 2];
    }
    printf("RESULT mode=median payload=%u copy_ns=%.1f zc_ns=%.1f "
           "copysum_ns=%.1f zcsum_ns=%.1f zc_over_copy=%.2f "
           "zc_over_zcsum=%.2f\n",
           plen, m[0], m[1], m[2], m[3], m[1] / m[0], m[1] / m[3]);
    free(region);
    return 0;
}
