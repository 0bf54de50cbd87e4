/*
 * perf_main.c - mroce-perf's command line and main(): perftest-style options
 * into struct opts, then the run's shape, which the client decides (the
 * server learns it from HELLO), and a client or a server session
 * (perf_session.c).  The overview of the program, its protocol and its
 * memory is at the top of perf.h.  Exit status: 0 on success, 1 on an error
 * or a verify mismatch on either side, 2 on a usage error.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "perf.h"

/* perftest's test names and banners. */
const struct test_desc tests[T_COUNT] = {
    [T_WRITE_BW] = {"write_bw", "RDMA_Write BW Test", 0},
    [T_SEND_BW] = {"send_bw", "Send BW Test", 0},
    [T_READ_BW] = {"read_bw", "RDMA_Read BW Test", 0},
    [T_WRITE_LAT] = {"write_lat", "RDMA_Write Latency Test", 1},
    [T_SEND_LAT] = {"send_lat", "Send Latency Test", 1},
    [T_READ_LAT] = {"read_lat", "RDMA_Read Latency Test", 1},
    [T_ATOMIC_LAT] = {"atomic_lat", "Atomic FETCH_AND_ADD Latency Test", 1},
};

/* Global so LeakSanitizer sees everything reachable. */
struct perf P;

/* ------------------------------------------------------- command line --- */

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: mroce-perf TEST [SERVER] [options]\n"
        "  TEST: write_bw send_bw read_bw write_lat send_lat read_lat "
        "atomic_lat\n"
        "  Without SERVER: wait for a client.  With SERVER (an IPv4/IPv6 "
        "literal on\n"
        "  loopback, e.g. 127.0.0.1): connect and run.  The server takes the "
        "run's\n"
        "  shape (-s -a -n -D -q -t -r -b --verify -A --seed) from the "
        "client.\n"
        "options:\n"
        "  -s, --size=BYTES       message size (K/M suffix; default 65536, lat "
        "2)\n"
        "  -a, --all              sweep sizes 2 .. 2^23\n"
        "  -n, --iters=N          iterations per QP (default 5000 bw, 1000 "
        "lat;\n"
        "                         with -a at most 1 GiB per size unless -n is "
        "given)\n"
        "  -D, --duration=SEC     run for SEC seconds instead of -n "
        "iterations\n"
        "  -q, --qp=N             queue pairs (bw tests; 1..%d)\n"
        "  -p, --port=PORT        the server's MetaRoCE UDP port (default %u)\n"
        "      --local-port=PORT  the client's own UDP port (default: PORT + "
        "1)\n"
        "  -B, --bind=ADDR        local address (default 127.0.0.1, or ::1 "
        "with -6)\n"
        "      --paths=N          path entropies per QP (1..256; default 64)\n"
        "  -m, --mtu=BYTES        MTU (payload bytes per packet; default "
        "4096)\n"
        "  -t, --tx-depth=N       WRs in flight per QP (default 128 bw, 16 "
        "lat)\n"
        "  -r, --rx-depth=N       receives posted per QP (send tests; default "
        "512)\n"
        "  -b, --bidirectional    both sides send (bw tests)\n"
        "  -A, --atomic-type=T    FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
        "      --fault=SPEC       local fault injection, e.g.\n"
        "                         "
        "\"tx:drop=0.01,dup=0.001,reorder=0.01;rx:drop=0.01\"\n"
        "                         (keys drop dup reorder corrupt reorder_us "
        "seed;\n"
        "                         no tx:/rx: prefix means tx)\n"
        "      --json=FILE        write the results as JSON\n"
        "      --verify           check all data end to end (exit 1 on "
        "mismatch);\n"
        "                         the checking delays ACKs in app progress "
        "mode, so\n"
        "                         measure performance without it\n"
        "      --progress=MODE    app (default: polling drives progress) or "
        "thread\n"
        "  -4 / -6                IPv4 (default) / IPv6 loopback\n"
        "      --cc=ALGO          delay (default: delay+ECN) or none (fixed "
        "window)\n"
        "      --burst=N          consecutive packets per path pick (1..64)\n"
        "      --seed=N           verify pattern and fault injection seed\n"
        "      --min-rto=USEC     the QPs' minimum retransmission timeout "
        "(engine\n"
        "                         default 200); per side\n"
        "      --peer-timeout=SEC a QP fails once its peer has been silent "
        "this\n"
        "                         long, never sooner (engine default 5); per "
        "side\n"
        "      --encrypt[=SUITE]  secure mode (aes128gcm default, aes256gcm, "
        "gmac)\n"
        "                         with the key of MROCE_KEY_FILE or "
        "MROCE_KEY; both\n"
        "                         sides need it.  Without it: clear, "
        "whatever the\n"
        "                         environment holds\n"
        "      --rekey=FILE       with --encrypt: add FILE's master key as "
        "generation 1\n"
        "                         at start and send under it once 256 "
        "packets have\n"
        "                         arrived (rotation under traffic); both "
        "sides need it\n"
        "      --timeout=SEC      connect / handshake / peer-silence limit "
        "(default\n"
        "                         10); also bounds the server's wait for a "
        "client\n"
        "      --x-corrupt        testing: with --verify, send the last "
        "WRITE/SEND\n"
        "                         of each size with one byte wrong (must "
        "fail)\n"
        "  -h, --help\n"
        "Exit status: 0 on success; 1 on an error completion, a verify "
        "mismatch or\n"
        "a failure; 2 on a usage error.\n",
        MAX_QPS, MROCE_UDP_PORT);
}

static void bad_usage(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));
static void bad_usage(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "mroce-perf: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(mroce-perf --help for usage)\n");
    exit(2);
}

static uint64_t parse_u64(const char *s, const char *what, uint64_t lo,
                          uint64_t hi)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    uint64_t mult = 1;
    if (end != s && *end) {
        switch (toupper((unsigned char)*end)) {
        case 'K':
            mult = 1ull << 10;
            end++;
            break;
        case 'M':
            mult = 1ull << 20;
            end++;
            break;
        case 'G':
            mult = 1ull << 30;
            end++;
            break;
        default:
            break;
        }
    }
    if (errno || end == s || *end || *s == '-' || v > hi / mult ||
        v * mult < lo || v * mult > hi)
        bad_usage("bad %s '%s' (%" PRIu64 "..%" PRIu64 ")", what, s, lo, hi);
    return v * mult;
}

static double parse_double(const char *s, const char *what, double lo,
                           double hi)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi))
        bad_usage("bad %s '%s' (%g..%g)", what, s, lo, hi);
    return v;
}

/* "tx:drop=0.01,dup=0.001;rx:drop=0.01" (the MROCE_FAULT syntax). */
static void parse_fault(struct opts *o, const char *spec)
{
    char *copy = strdup(spec), *save1 = NULL;
    if (!copy)
        die("out of memory");
    for (char *part = strtok_r(copy, ";", &save1); part;
         part = strtok_r(NULL, ";", &save1)) {
        struct mroce_fault *f = &o->txf;
        if (!strncmp(part, "tx:", 3)) {
            part += 3;
        } else if (!strncmp(part, "rx:", 3)) {
            f = &o->rxf;
            part += 3;
        }
        char *save2 = NULL;
        for (char *kv = strtok_r(part, ",", &save2); kv;
             kv = strtok_r(NULL, ",", &save2)) {
            char *eq = strchr(kv, '=');
            if (!eq)
                bad_usage("bad --fault item '%s'", kv);
            *eq = 0;
            const char *v = eq + 1;
            if (!strcmp(kv, "drop"))
                f->drop = parse_double(v, "drop", 0, 1);
            else if (!strcmp(kv, "dup"))
                f->dup = parse_double(v, "dup", 0, 1);
            else if (!strcmp(kv, "reorder"))
                f->reorder = parse_double(v, "reorder", 0, 1);
            else if (!strcmp(kv, "corrupt"))
                f->corrupt = parse_double(v, "corrupt", 0, 1);
            else if (!strcmp(kv, "reorder_us"))
                f->reorder_us = (uint32_t)parse_u64(v, "reorder_us", 0,
                                                    1000000);
            else if (!strcmp(kv, "seed"))
                o->seed = parse_u64(v, "seed", 0, UINT64_MAX);
            else
                bad_usage("unknown --fault key '%s'", kv);
        }
    }
    free(copy);
    o->have_fault = 1;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    enum {
        O_PATHS = 256,
        O_FAULT,
        O_JSON,
        O_VERIFY,
        O_PROGRESS,
        O_CC,
        O_BURST,
        O_SEED,
        O_TIMEOUT,
        O_LPORT,
        O_XCORRUPT,
        O_MINRTO,
        O_PEERTO,
        O_ENCRYPT,
        O_REKEY
    };
    static const struct option lo[] = {
        {"size", required_argument, 0, 's'},
        {"all", no_argument, 0, 'a'},
        {"iters", required_argument, 0, 'n'},
        {"duration", required_argument, 0, 'D'},
        {"qp", required_argument, 0, 'q'},
        {"port", required_argument, 0, 'p'},
        {"local-port", required_argument, 0, O_LPORT},
        {"bind", required_argument, 0, 'B'},
        {"paths", required_argument, 0, O_PATHS},
        {"mtu", required_argument, 0, 'm'},
        {"tx-depth", required_argument, 0, 't'},
        {"rx-depth", required_argument, 0, 'r'},
        {"bidirectional", no_argument, 0, 'b'},
        {"atomic-type", required_argument, 0, 'A'},
        {"fault", required_argument, 0, O_FAULT},
        {"json", required_argument, 0, O_JSON},
        {"verify", no_argument, 0, O_VERIFY},
        {"progress", required_argument, 0, O_PROGRESS},
        {"cc", required_argument, 0, O_CC},
        {"burst", required_argument, 0, O_BURST},
        {"seed", required_argument, 0, O_SEED},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"x-corrupt", no_argument, 0, O_XCORRUPT},
        {"min-rto", required_argument, 0, O_MINRTO},
        {"peer-timeout", required_argument, 0, O_PEERTO},
        {"encrypt", optional_argument, 0, O_ENCRYPT},
        {"rekey", required_argument, 0, O_REKEY},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int seed_set = 0, size_set = 0, depth_set = 0;
    memset(o, 0, sizeof(*o));
    o->port = MROCE_UDP_PORT;
    o->family = 4;
    o->timeout = 10;
    o->rx_depth = 512;
    o->nqps = 1;
    o->cc = MROCE_CC_DELAY_ECN;
    int c;
    while ((c = getopt_long(argc, argv, "s:an:D:q:p:B:m:t:r:bA:46h", lo,
                            NULL)) != -1) {
        switch (c) {
        case 's':
            o->size = (uint32_t)parse_u64(optarg, "size", 1, 1u << 30);
            size_set = 1;
            break;
        case 'a':
            o->all = 1;
            break;
        case 'n':
            o->iters = parse_u64(optarg, "iterations", 1, 1ull << 40);
            break;
        case 'D':
            o->duration = parse_double(optarg, "duration", 0.001, 86400);
            break;
        case 'q':
            o->nqps = (uint32_t)parse_u64(optarg, "QP count", 1, MAX_QPS);
            break;
        case 'p':
            o->port = (uint16_t)parse_u64(optarg, "port", 1, 65535);
            break;
        case O_LPORT:
            o->local_port = (uint16_t)parse_u64(optarg, "port", 1, 65535);
            break;
        case 'B':
            o->bind = optarg;
            break;
        case O_PATHS:
            o->paths = (uint32_t)parse_u64(optarg, "paths", 1, 256);
            break;
        case 'm':
            o->mtu = (uint32_t)parse_u64(optarg, "MTU", 256, 64000);
            break;
        case 't':
            o->tx_depth = (uint32_t)parse_u64(optarg, "tx depth", 1, 1024);
            depth_set = 1;
            break;
        case 'r':
            o->rx_depth = (uint32_t)parse_u64(optarg, "rx depth", 1, 4096);
            break;
        case 'b':
            o->bidir = 1;
            break;
        case 'A':
            if (!strcasecmp(optarg, "FETCH_AND_ADD"))
                o->cs = 0;
            else if (!strcasecmp(optarg, "CMP_AND_SWAP"))
                o->cs = 1;
            else
                bad_usage("-A takes FETCH_AND_ADD or CMP_AND_SWAP");
            break;
        case O_FAULT:
            parse_fault(o, optarg);
            break;
        case O_JSON:
            o->json = optarg;
            break;
        case O_VERIFY:
            o->verify = 1;
            break;
        case O_PROGRESS:
            if (!strcmp(optarg, "app"))
                o->progress = MROCE_PROGRESS_APP;
            else if (!strcmp(optarg, "thread"))
                o->progress = MROCE_PROGRESS_THREAD;
            else
                bad_usage("--progress takes app or thread");
            break;
        case '4':
            o->family = 4;
            break;
        case '6':
            o->family = 6;
            break;
        case O_CC:
            if (!strcmp(optarg, "delay"))
                o->cc = MROCE_CC_DELAY_ECN;
            else if (!strcmp(optarg, "none"))
                o->cc = MROCE_CC_NONE;
            else
                bad_usage("--cc takes delay or none");
            break;
        case O_BURST:
            o->burst = (uint32_t)parse_u64(optarg, "burst", 1, 64);
            break;
        case O_SEED:
            o->seed = parse_u64(optarg, "seed", 0, UINT64_MAX);
            seed_set = 1;
            break;
        case O_TIMEOUT:
            o->timeout = parse_double(optarg, "timeout", 0.1, 86400);
            o->timeout_set = 1;
            break;
        case O_XCORRUPT:
            o->x_corrupt = 1;
            break;
        case O_MINRTO:
            o->min_rto_us = (uint32_t)parse_u64(optarg, "min RTO", 1, 10000000);
            break;
        case O_PEERTO:
            o->peer_timeout = parse_double(optarg, "peer timeout", 0, 3600);
            o->peer_timeout_set = 1;
            break;
        case O_ENCRYPT:
            if (!optarg || !strcmp(optarg, "aes128gcm"))
                o->encrypt = 1;
            else if (!strcmp(optarg, "aes256gcm"))
                o->encrypt = 2;
            else if (!strcmp(optarg, "gmac"))
                o->encrypt = 3;
            else
                bad_usage("--encrypt takes aes128gcm, aes256gcm or gmac");
            if (!(getenv("MROCE_KEY_FILE") && *getenv("MROCE_KEY_FILE")) &&
                !(getenv("MROCE_KEY") && *getenv("MROCE_KEY")))
                bad_usage("--encrypt needs a master key: MROCE_KEY_FILE or "
                          "MROCE_KEY");
            break;
        case O_REKEY:
            o->rekey = optarg;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            exit(2);
        }
    }
    if (optind >= argc)
        bad_usage("which test? (write_bw, send_bw, read_bw, write_lat, "
                  "send_lat, read_lat, atomic_lat)");
    o->test = -1;
    for (int t = 0; t < T_COUNT; t++)
        if (!strcmp(argv[optind], tests[t].name))
            o->test = t;
    if (o->test < 0)
        bad_usage("unknown test '%s'", argv[optind]);
    if (optind + 1 < argc)
        o->server = argv[optind + 1];
    if (optind + 2 < argc)
        bad_usage("unexpected argument '%s'", argv[optind + 2]);
    int lat = tests[o->test].lat;
    if (lat && o->nqps > 1)
        bad_usage("latency tests use one QP (-q 1)");
    if (lat && o->bidir)
        bad_usage("-b applies to bandwidth tests");
    if (o->test == T_ATOMIC_LAT && size_set && o->size != 8)
        bad_usage("atomics are 8 bytes (-s 8)");
    if (o->test == T_WRITE_LAT && o->size == 0 && size_set)
        bad_usage("write_lat needs -s 1 or more");
    if (!size_set)
        o->size = o->test == T_ATOMIC_LAT ? 8 : lat ? 2 : 65536;
    if (!depth_set)
        o->tx_depth = lat ? 16 : 128;
    if (!seed_set && !o->seed)
        o->seed = 0x5eed0000ull ^ (uint64_t)getpid() ^ now_ns();
    if (!o->local_port)
        o->local_port = (uint16_t)(o->port == 65535 ? 65534 : o->port + 1);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    parse_args(argc, argv, &P.o);
    const struct opts *o = &P.o;
    P.server = o->server == NULL;
    P.test = o->test;
    if (!P.server) {
        /* The client decides the run's shape. */
        P.bidir = o->bidir;
        P.verify = o->verify;
        P.cs = o->cs;
        P.seed = o->seed;
        P.nqps = o->nqps;
        P.tx_depth = o->tx_depth;
        P.rx_depth = o->rx_depth;
        P.duration_ms = o->duration > 0 ? (uint64_t)(o->duration * 1000.0) : 0;
        if (P.duration_ms == 0 && o->duration > 0)
            P.duration_ms = 1;
        if (o->all && o->test != T_ATOMIC_LAT) {
            P.size_min = 2;
            P.size_max = SWEEP_MAX_SIZE;
        } else {
            P.size_min = P.size_max = o->size;
        }
        if (o->iters)
            P.iters = o->iters;
        else if (tests[o->test].lat)
            P.iters = 1000;
        else {
            P.iters = 5000;
            P.iters_auto = o->all;
        }
        run_client();
    } else {
        run_server();
    }
    return P.mismatches || P.peer_mismatches ? 1 : 0;
}
