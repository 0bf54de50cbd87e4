/*
 * bench_dpdk_memif.c - what a net_memif pair costs per frame on each side,
 * memif's copy mode against its zero-copy mode at the receiver, with
 * nothing of MetaRoCE in the way.
 *
 * One process, one thread, two memif ports on one socket: the server
 * sends bursts of frames of a 4 KiB data packet's size (4,170 bytes) and
 * the client receives them.  In copy mode the server's transmit copies
 * each frame into the shared ring and the client's receive copies it out
 * into an mbuf; in zero-copy mode (zero-copy=yes, the client's memory is
 * the ring) the client takes the frame in place.  The figures are this
 * thread's CPU time per frame for the server's allocate-and-send and for
 * the client's receive-and-free, in alternating rounds, each in a fresh
 * process pair of ports.  Both ends share one core, so the frames stay in
 * its cache: the copy cost is in-cache, a floor for two processes.
 *
 * Usage: bench_dpdk_memif [-n FRAMES] [-s FRAME_BYTES] [-z 0|1]
 *                         [-a ",MEMIF_ARGS"]   (default ",bsize=16384", the
 *                                             link's buffer size)
 * Prints "RESULT mode=copy|zc tx_ns=... rx_ns=..." (the mode chosen by -z;
 * compare_dpdk.sh runs both).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#define BURST 32

static double thread_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Creates memif port `name` with vdev args and one queue pair; returns
 * its port id, or -1. */
static int port_up(const char *name, const char *args, struct rte_mempool *pool)
{
    uint16_t pid;
    struct rte_eth_conf conf;
    memset(&conf, 0, sizeof conf);
    if (rte_vdev_init(name, args) < 0 ||
        rte_eth_dev_get_port_by_name(name, &pid) != 0 ||
        rte_eth_dev_configure(pid, 1, 1, &conf) < 0 ||
        rte_eth_rx_queue_setup(pid, 0, 1024, 0, NULL, pool) < 0 ||
        rte_eth_tx_queue_setup(pid, 0, 1024, 0, NULL) < 0 ||
        rte_eth_dev_start(pid) < 0)
        return -1;
    return pid;
}

int main(int argc, char **argv)
{
    unsigned n = 200000, flen = 4170;
    int zc = 0;
    const char *extra = ",bsize=16384";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-n"))
            n = (unsigned)strtoul(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "-s"))
            flen = (unsigned)strtoul(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "-z"))
            zc = atoi(argv[i + 1]) != 0;
        else if (!strcmp(argv[i], "-a"))
            extra = argv[i + 1];
    }
    if (!n || flen < 60 || flen > 9000) {
        fprintf(stderr, "usage: bench_dpdk_memif [-n FRAMES] [-s FRAME_BYTES "
                        "(60..9000)] [-z 0|1]\n");
        return 2;
    }
    char *eal[] = {"bench_dpdk_memif",
                   "--no-huge",
                   "--no-shconf",
                   "-m",
                   "256",
                   "--no-pci",
                   "--no-telemetry",
                   "-l",
                   "0",
                   "--single-file-segments",
                   "--log-level=lib.eal:warning",
                   NULL};
    if (rte_eal_init(11, eal) < 0) {
        fprintf(stderr, "bench_dpdk_memif: rte_eal_init failed\n");
        return 1;
    }
    struct rte_mempool *sp = rte_pktmbuf_pool_create(
        "srv", 4095, 256, 0, RTE_PKTMBUF_HEADROOM + 9216, SOCKET_ID_ANY);
    struct rte_mempool *cp = rte_pktmbuf_pool_create(
        "cli", 4095, 256, 0, RTE_PKTMBUF_HEADROOM + 9216, SOCKET_ID_ANY);
    char sock[64], sa[320], ca[320];
    snprintf(sock, sizeof sock, "/tmp/bench_dpdk_memif.%d.sock", (int)getpid());
    snprintf(sa, sizeof sa, "role=server,socket=%s%s", sock, extra);
    snprintf(ca, sizeof ca, "role=client,socket=%s%s%s", sock, extra,
             zc ? ",zero-copy=yes" : "");
    int s = sp ? port_up("net_memif0", sa, sp) : -1;
    int c = cp && s >= 0 ? port_up("net_memif1", ca, cp) : -1;
    if (s < 0 || c < 0) {
        fprintf(stderr, "bench_dpdk_memif: cannot start the memif pair\n");
        return 1;
    }
    struct rte_eth_link ls, lc;
    for (int t = 0; t < 500; t++) {
        rte_eth_link_get_nowait((uint16_t)s, &ls);
        rte_eth_link_get_nowait((uint16_t)c, &lc);
        if (ls.link_status && lc.link_status)
            break;
        usleep(10000);
    }
    if (!ls.link_status || !lc.link_status) {
        fprintf(stderr, "bench_dpdk_memif: the memif link did not come up\n");
        return 1;
    }
    double ttx = 0, trx = 0;
    unsigned sent = 0, got = 0, sum = 0;
    struct rte_mbuf *b[BURST];
    while (got < n) {
        double t0 = thread_secs();
        unsigned k = 0;
        if (sent < n && rte_pktmbuf_alloc_bulk(sp, b, BURST) == 0) {
            for (unsigned i = 0; i < BURST; i++) {
                uint8_t *p = (uint8_t *)rte_pktmbuf_append(b[i],
                                                           (uint16_t)flen);
                p[0] = (uint8_t)i;
            }
            k = rte_eth_tx_burst((uint16_t)s, 0, b, BURST);
            for (unsigned i = k; i < BURST; i++)
                rte_pktmbuf_free(b[i]);
            sent += k;
        }
        double t1 = thread_secs();
        unsigned r = rte_eth_rx_burst((uint16_t)c, 0, b, BURST);
        for (unsigned i = 0; i < r; i++) {
            sum += rte_pktmbuf_mtod(b[i], uint8_t *)[0];
            rte_pktmbuf_free(b[i]);
        }
        got += r;
        double t2 = thread_secs();
        ttx += t1 - t0;
        trx += t2 - t1;
        if (!k && !r && sent >= n)
            break; /* the rest was lost */
    }
    printf("RESULT mode=%s frame=%u frames=%u tx_ns=%.1f rx_ns=%.1f "
           "(sum %u)\n",
           zc ? "zc" : "copy", flen, got, ttx * 1e9 / sent, trx * 1e9 / got,
           sum);
    rte_eth_dev_stop((uint16_t)c);
    rte_eth_dev_stop((uint16_t)s);
    return 0;
}
