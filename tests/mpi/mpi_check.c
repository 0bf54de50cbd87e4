/*
 * mpi_check.c - MPI over a libfabric provider, every value checked.
 *
 * Run on 4 ranks (any number from 2 works) by tests/mpi/run_mpi.sh with
 * Open MPI's cm PML and ofi MTL, so that every point-to-point message and
 * every collective below travels as tagged messages through the provider
 * named there (issue 7: `mroce`; `tcp;ofi_rxm` as the reference).
 *
 * Each test fills its buffers from a pattern that depends on the sender,
 * the receiver, the tag and the index, and checks every byte or element it
 * receives, every status (source, tag, count) and guard bytes past the end
 * of every receive buffer.  The tests:
 *   p2p_blocking      ring exchange, MPI_Send/MPI_Ssend + MPI_Recv, 0 B-1 MiB
 *   p2p_nonblocking   every pair, 4 tags each, Isend/Irecv, receives posted
 *                     in reverse tag order, half before and half after the
 *                     sends (expected and unexpected), 0 B-1 MiB
 *   p2p_tag_order     three tags received in an order other than sent
 *   p2p_wildcards     MPI_ANY_SOURCE and/or MPI_ANY_TAG, each message seen
 *                     once and messages from one source in send order
 *   p2p_probe         MPI_Probe/MPI_Iprobe (peek) and MPI_Mprobe/MPI_Mrecv
 *                     (claim) with wildcards
 *   p2p_cancel        a receive nobody sends to is cancelled; traffic goes
 *                     on afterwards
 *   p2p_unexpected    256 messages sent before any receive is posted
 *   allreduce         int32/uint32/int64/double; SUM MAX MIN PROD BAND BOR
 *                     BXOR; 1 to 262144 elements (1 MiB); also MPI_IN_PLACE
 *   alltoall          1 to 65536 int32 per pair (1 MiB per rank)
 *   p2p_protnone      pairs of ranks, 1 MiB messages both ways, MPI_Send
 *                     and batches of MPI_Isend + MPI_Waitall; each send
 *                     buffer is made PROT_NONE as soon as its send has
 *                     completed: a provider that still reads it (say, to
 *                     resend a lost packet) crashes the rank
 *
 * Rank 0 prints one line per test and a closing "mpi_check: N passed,
 * M failed"; every rank exits 1 if any check failed anywhere, so mpirun
 * exits non-zero.  MPI_CHECK_TIMEOUT (seconds, default 300) bounds the run:
 * a rank still running then is killed by SIGALRM.  MPI_CHECK_TESTS="a b"
 * runs only the tests named; MPI_CHECK_INJECT=1 flips one received byte
 * (rank 1, p2p_blocking, 64 KiB) to show that a mismatch fails the run;
 * MPI_CHECK_VERBOSE=1 prints rank 0's time for each ring exchange and
 * each allreduce.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB (1 << 20)
#define GUARD 64        /* guard bytes past every receive buffer */
#define GUARD_BYTE 0xA5 /* what the guard bytes hold */
#define MAX_REPORTS 8   /* mismatches printed per rank and test */
#define NTAGS 4         /* tags per pair in p2p_nonblocking */
#define NWILD 3         /* messages per source in p2p_wildcards */
#define NUNEXP 256      /* messages in p2p_unexpected */

static int rank;         /* this process's rank in MPI_COMM_WORLD */
static int nranks;       /* size of MPI_COMM_WORLD */
static long n_checks;    /* values checked in the current test */
static long n_fail;      /* mismatches in the current test */
static const char *test; /* name of the current test */
static int inject;       /* MPI_CHECK_INJECT set: corrupt one byte */
static int verbose;      /* MPI_CHECK_VERBOSE set: time each case */

/* Message sizes in bytes for the point-to-point tests: around the usual
 * eager/rendezvous and packet boundaries, up to 1 MiB. */
static const int sizes[] = {0,      1,      8,      63,      64,    65,
                            1000,   4095,   4096,   8193,    65535, 65536,
                            131072, 262145, 524288, MIB - 1, MIB};
#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

/* Records a mismatch; prints the first MAX_REPORTS of each test. */
static void fail(const char *fmt, ...)
{
    if (n_fail++ < MAX_REPORTS) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "rank %d: %s: ", rank, test);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

/* Counts one check; records a mismatch unless ok. */
#define CHECK(ok, ...)         \
    do {                       \
        n_checks++;            \
        if (!(ok))             \
            fail(__VA_ARGS__); \
    } while (0)

/* A 32-bit mix of four integers (a murmur3-style finaliser). */
static uint32_t mix(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    uint32_t x = a * 0x9E3779B1u ^ b * 0x85EBCA77u ^ c * 0xC2B2AE3Du ^
                 d * 0x27D4EB2Fu;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    x *= 0x297A2D39u;
    x ^= x >> 15;
    return x;
}

/* The byte at index i of the message src sends dst with tag. */
static uint8_t pat(int src, int dst, int tag, size_t i)
{
    return (uint8_t)(mix((uint32_t)src, (uint32_t)dst, (uint32_t)tag,
                         (uint32_t)i) >>
                     11);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", rank, n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* A send buffer of len bytes holding the pattern of (src, dst, tag). */
static uint8_t *make_msg(int src, int dst, int tag, size_t len)
{
    uint8_t *b = xmalloc(len);
    for (size_t i = 0; i < len; i++)
        b[i] = pat(src, dst, tag, i);
    return b;
}

/* A receive buffer of cap bytes (filled with a byte no pattern is checked
 * against) followed by GUARD guard bytes. */
static uint8_t *make_rbuf(size_t cap)
{
    uint8_t *b = xmalloc(cap + GUARD);
    memset(b, 0x5A, cap);
    memset(b + cap, GUARD_BYTE, GUARD);
    return b;
}

/* Checks len bytes of b against the pattern of (src, dst, tag) and the
 * guard bytes at b[cap..cap+GUARD).  One check per byte; the first wrong
 * byte of a buffer is reported. */
static void check_msg(const uint8_t *b, size_t len, size_t cap, int src,
                      int dst, int tag)
{
    long bad = 0;
    size_t first = 0;
    for (size_t i = 0; i < len; i++) {
        if (b[i] != pat(src, dst, tag, i) && bad++ == 0)
            first = i;
    }
    n_checks += (long)len;
    if (bad)
        fail("message %d->%d tag %d (%zu B): %ld wrong bytes, first at %zu "
             "(0x%02x, expected 0x%02x)",
             src, dst, tag, len, bad, first, b[first],
             pat(src, dst, tag, first));
    for (size_t i = cap; i < cap + GUARD; i++)
        CHECK(b[i] == GUARD_BYTE,
              "message %d->%d tag %d: guard byte %zu "
              "past the buffer overwritten",
              src, dst, tag, i - cap);
}

/* Checks a receive status against the expected source, tag and count. */
static void check_status(const MPI_Status *st, int src, int tag, int len)
{
    int count = -1;
    MPI_Get_count(st, MPI_BYTE, &count);
    CHECK(st->MPI_SOURCE == src, "status source %d, expected %d",
          st->MPI_SOURCE, src);
    CHECK(st->MPI_TAG == tag, "status tag %d, expected %d", st->MPI_TAG, tag);
    CHECK(count == len, "status count %d from %d tag %d, expected %d", count,
          src, tag, len);
}

static int right(int k)
{
    return (rank + k) % nranks;
}

static int left(int k)
{
    return (rank - k % nranks + nranks) % nranks;
}

/* Ring exchange with blocking calls: even ranks send then receive, odd
 * ranks receive then send, so the ring cannot deadlock whatever the
 * protocol.  Odd sizes go by MPI_Ssend (completes only once matched). */
static void t_p2p_blocking(void)
{
    int dst = right(1), src = left(1);
    uint8_t *rb = make_rbuf(MIB);
    for (int si = 0; si < NSIZES; si++) {
        int len = sizes[si], tag = 1000 + si;
        uint8_t *sb = make_msg(rank, dst, tag, (size_t)len);
        MPI_Status st = {0};
        memset(rb, 0x5A, MIB);
        double t0 = MPI_Wtime();
        for (int phase = 0; phase < 2; phase++) {
            if ((phase == 0) == (rank % 2 == 0)) {
                if (si % 2)
                    MPI_Ssend(sb, len, MPI_BYTE, dst, tag, MPI_COMM_WORLD);
                else
                    MPI_Send(sb, len, MPI_BYTE, dst, tag, MPI_COMM_WORLD);
            } else {
                MPI_Recv(rb, MIB, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st);
            }
        }
        if (verbose && rank == 0)
            printf("    ring %d B%s: %.3f ms\n", len, si % 2 ? " (Ssend)" : "",
                   (MPI_Wtime() - t0) * 1e3);
        if (inject && rank == 1 && len == 65536)
            rb[len / 2] ^= 1; /* the checker's own check: must be caught */
        check_status(&st, src, tag, len);
        check_msg(rb, (size_t)len, MIB, src, rank, tag);
        free(sb);
    }
    free(rb);
}

/* Size of the t-th message src sends dst in p2p_nonblocking. */
static int nb_size(int src, int dst, int t)
{
    return sizes[(src * 5 + dst * 3 + t * 7) % NSIZES];
}

/* Every pair, NTAGS tags each way.  Receives for even tags are posted
 * before the sends, those for odd tags after a barrier (so their messages
 * are mostly unexpected); each group is posted in reverse tag order. */
static void t_p2p_nonblocking(void)
{
    int npeer = nranks - 1, n = npeer * NTAGS;
    MPI_Request *sreq = xmalloc(sizeof(*sreq) * (size_t)n);
    MPI_Request *rreq = xmalloc(sizeof(*rreq) * (size_t)n);
    MPI_Status *st = xmalloc(sizeof(*st) * (size_t)n);
    uint8_t **sb = xmalloc(sizeof(*sb) * (size_t)n);
    uint8_t **rb = xmalloc(sizeof(*rb) * (size_t)n);

    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            MPI_Barrier(MPI_COMM_WORLD);
        for (int k = 1; k <= npeer; k++) {
            int src = left(k);
            for (int t = NTAGS - 1; t >= 0; t--) {
                if (t % 2 != pass)
                    continue;
                int i = (k - 1) * NTAGS + t, len = nb_size(src, rank, t);
                rb[i] = make_rbuf((size_t)len);
                MPI_Irecv(rb[i], len, MPI_BYTE, src, 2000 + t, MPI_COMM_WORLD,
                          &rreq[i]);
            }
        }
        if (pass == 0) {
            for (int k = 1; k <= npeer; k++) {
                int dst = right(k);
                for (int t = 0; t < NTAGS; t++) {
                    int i = (k - 1) * NTAGS + t, len = nb_size(rank, dst, t);
                    sb[i] = make_msg(rank, dst, 2000 + t, (size_t)len);
                    MPI_Isend(sb[i], len, MPI_BYTE, dst, 2000 + t,
                              MPI_COMM_WORLD, &sreq[i]);
                }
            }
        }
    }
    MPI_Waitall(n, rreq, st);
    MPI_Waitall(n, sreq, MPI_STATUSES_IGNORE);
    for (int k = 1; k <= npeer; k++) {
        int src = left(k);
        for (int t = 0; t < NTAGS; t++) {
            int i = (k - 1) * NTAGS + t, len = nb_size(src, rank, t);
            check_status(&st[i], src, 2000 + t, len);
            check_msg(rb[i], (size_t)len, (size_t)len, src, rank, 2000 + t);
            free(rb[i]);
            free(sb[i]);
        }
    }
    free(sreq);
    free(rreq);
    free(st);
    free(sb);
    free(rb);
}

/* Three messages to the right neighbour, received by tag in another order
 * than sent: 3003, 3001, 3002. */
static void t_p2p_tag_order(void)
{
    static const int len[3] = {100, 70000, 10};
    static const int order[3] = {2, 0, 1};
    int dst = right(1), src = left(1);
    MPI_Request req[3];
    uint8_t *sb[3];
    for (int t = 0; t < 3; t++) {
        sb[t] = make_msg(rank, dst, 3001 + t, (size_t)len[t]);
        MPI_Isend(sb[t], len[t], MPI_BYTE, dst, 3001 + t, MPI_COMM_WORLD,
                  &req[t]);
    }
    uint8_t *rb = make_rbuf(MIB);
    for (int j = 0; j < 3; j++) {
        int t = order[j];
        MPI_Status st;
        memset(rb, 0x5A, MIB);
        MPI_Recv(rb, MIB, MPI_BYTE, src, 3001 + t, MPI_COMM_WORLD, &st);
        check_status(&st, src, 3001 + t, len[t]);
        check_msg(rb, (size_t)len[t], MIB, src, rank, 3001 + t);
    }
    MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    for (int t = 0; t < 3; t++)
        free(sb[t]);
    free(rb);
}

/* Size of the k-th message src sends in p2p_wildcards: small, large
 * (rendezvous for most providers), tiny. */
static int wild_size(int src, int k)
{
    static const int base[NWILD] = {10, 40000, 3};
    return base[k] + src;
}

/* Every rank takes a turn as root; the others each send it NWILD messages
 * with tags 4000 + 10 * src + k.  Mode 0: the root receives with
 * MPI_ANY_SOURCE and MPI_ANY_TAG; mode 1: MPI_ANY_SOURCE with each tag;
 * mode 2: each source with MPI_ANY_TAG.  Each message must arrive once,
 * its contents must match what its status names, and messages from one
 * source must match in the order sent (MPI's non-overtaking rule). */
static void t_p2p_wildcards(void)
{
    uint8_t *rb = make_rbuf(MIB);
    for (int mode = 0; mode < 3; mode++) {
        for (int root = 0; root < nranks; root++) {
            if (rank != root) {
                MPI_Request req[NWILD];
                uint8_t *sb[NWILD];
                for (int k = 0; k < NWILD; k++) {
                    int tag = 4000 + 10 * rank + k, len = wild_size(rank, k);
                    sb[k] = make_msg(rank, root, tag, (size_t)len);
                    MPI_Isend(sb[k], len, MPI_BYTE, root, tag, MPI_COMM_WORLD,
                              &req[k]);
                }
                MPI_Waitall(NWILD, req, MPI_STATUSES_IGNORE);
                for (int k = 0; k < NWILD; k++)
                    free(sb[k]);
                continue;
            }
            int *next = xmalloc(sizeof(int) * (size_t)nranks);
            memset(next, 0, sizeof(int) * (size_t)nranks);
            int total = (nranks - 1) * NWILD;
            for (int j = 0; j < total; j++) {
                int want_src = MPI_ANY_SOURCE, want_tag = MPI_ANY_TAG;
                if (mode == 1) { /* tags round-robin over the sources */
                    int s = j % (nranks - 1), k = j / (nranks - 1);
                    s = (root + 1 + s) % nranks;
                    want_tag = 4000 + 10 * s + k;
                } else if (mode == 2) {
                    want_src = (root + 1 + j / NWILD) % nranks;
                }
                MPI_Status st;
                memset(rb, 0x5A, MIB);
                MPI_Recv(rb, MIB, MPI_BYTE, want_src, want_tag, MPI_COMM_WORLD,
                         &st);
                int src = st.MPI_SOURCE, tag = st.MPI_TAG;
                int k = tag - 4000 - 10 * src;
                if (src < 0 || src >= nranks || src == root || k < 0 ||
                    k >= NWILD) {
                    CHECK(0, "mode %d: unexpected source %d tag %d", mode, src,
                          tag);
                    continue;
                }
                CHECK(want_src == MPI_ANY_SOURCE || src == want_src,
                      "mode %d: source %d, asked for %d", mode, src, want_src);
                CHECK(want_tag == MPI_ANY_TAG || tag == want_tag,
                      "mode %d: tag %d, asked for %d", mode, tag, want_tag);
                CHECK(mode == 1 || k == next[src],
                      "mode %d: from %d got message %d before %d (overtaken)",
                      mode, src, k, next[src]);
                next[src] = k + 1;
                int count = -1;
                MPI_Get_count(&st, MPI_BYTE, &count);
                CHECK(count == wild_size(src, k),
                      "mode %d: count %d from %d tag %d, expected %d", mode,
                      count, src, tag, wild_size(src, k));
                check_msg(rb, (size_t)wild_size(src, k), MIB, src, root, tag);
            }
            for (int s = 0; s < nranks; s++)
                CHECK(s == root || next[s] == NWILD,
                      "mode %d: got %d of %d messages from %d", mode, next[s],
                      NWILD, s);
            free(next);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(rb);
}

/* Probe then receive.  Each rank sends its right neighbour a message with
 * tag 5000 + rank (peeked by MPI_Probe with wildcards, then received by
 * the source and tag its status gave) and one with tag 5100 + rank
 * (claimed by MPI_Improbe with wildcards, polled, then MPI_Mrecv). */
static void t_p2p_probe(void)
{
    int dst = right(1), src = left(1);
    int len0 = 777 + 1000 * rank, len1 = 200000 + rank;
    int exp0 = 777 + 1000 * src, exp1 = 200000 + src;
    MPI_Request req[2];
    uint8_t *sb0 = make_msg(rank, dst, 5000 + rank, (size_t)len0);
    uint8_t *sb1 = make_msg(rank, dst, 5100 + rank, (size_t)len1);
    MPI_Isend(sb0, len0, MPI_BYTE, dst, 5000 + rank, MPI_COMM_WORLD, &req[0]);

    MPI_Status st;
    int count = -1;
    MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    check_status(&st, src, 5000 + src, exp0);
    MPI_Get_count(&st, MPI_BYTE, &count);
    if (count < 0 || count > MIB)
        count = MIB;
    uint8_t *rb = make_rbuf((size_t)count);
    int flag = 0;
    /* the probed message is still there for MPI_Iprobe and MPI_Recv */
    while (!flag)
        MPI_Iprobe(st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &flag, &st);
    check_status(&st, src, 5000 + src, exp0);
    MPI_Recv(rb, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
             &st);
    check_status(&st, src, 5000 + src, exp0);
    check_msg(rb, (size_t)exp0, (size_t)count, src, rank, 5000 + src);
    free(rb);

    MPI_Isend(sb1, len1, MPI_BYTE, dst, 5100 + rank, MPI_COMM_WORLD, &req[1]);
    MPI_Message msg;
    flag = 0;
    while (!flag)
        MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg,
                    &st);
    check_status(&st, src, 5100 + src, exp1);
    /* a claimed message is no longer visible to probes */
    int again = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &again,
               MPI_STATUS_IGNORE);
    CHECK(!again, "a message claimed by MPI_Improbe is still probed");
    rb = make_rbuf((size_t)exp1);
    MPI_Mrecv(rb, exp1, MPI_BYTE, &msg, &st);
    check_status(&st, src, 5100 + src, exp1);
    check_msg(rb, (size_t)exp1, (size_t)exp1, src, rank, 5100 + src);
    free(rb);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    free(sb0);
    free(sb1);
}

/* A wildcard-source receive nobody sends to is cancelled; then a message
 * with another tag still arrives intact. */
static void t_p2p_cancel(void)
{
    uint8_t *rb = make_rbuf(64);
    MPI_Request req;
    MPI_Status st;
    int cancelled = 0;
    MPI_Irecv(rb, 64, MPI_BYTE, MPI_ANY_SOURCE, 6000, MPI_COMM_WORLD, &req);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(cancelled, "receive not cancelled");
    for (int i = 0; i < 64 + GUARD; i++)
        CHECK(rb[i] == (i < 64 ? 0x5A : GUARD_BYTE),
              "cancelled receive wrote byte %d", i);
    free(rb);

    int dst = right(1), src = left(1), len = 5000;
    uint8_t *sb = make_msg(rank, dst, 6001, (size_t)len);
    rb = make_rbuf((size_t)len);
    MPI_Sendrecv(sb, len, MPI_BYTE, dst, 6001, rb, len, MPI_BYTE, src, 6001,
                 MPI_COMM_WORLD, &st);
    check_status(&st, src, 6001, len);
    check_msg(rb, (size_t)len, (size_t)len, src, rank, 6001);
    free(sb);
    free(rb);
}

/* NUNEXP messages of 1-256 bytes sent to the right neighbour before it
 * posts any receive (a barrier separates them), received in order. */
static void t_p2p_unexpected(void)
{
    int dst = right(1), src = left(1);
    MPI_Request *req = xmalloc(sizeof(*req) * NUNEXP);
    uint8_t *sb = xmalloc((size_t)NUNEXP * 256);
    for (int i = 0; i < NUNEXP; i++) {
        int len = 1 + (i * 37) % 256;
        for (int j = 0; j < len; j++)
            sb[i * 256 + j] = pat(rank, dst, 7000 + i, (size_t)j);
        MPI_Isend(sb + i * 256, len, MPI_BYTE, dst, 7000 + i, MPI_COMM_WORLD,
                  &req[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    uint8_t *rb = make_rbuf(256);
    for (int i = 0; i < NUNEXP; i++) {
        int len = 1 + (i * 37) % 256;
        MPI_Status st;
        memset(rb, 0x5A, 256);
        MPI_Recv(rb, 256, MPI_BYTE, src, 7000 + i, MPI_COMM_WORLD, &st);
        check_status(&st, src, 7000 + i, len);
        check_msg(rb, (size_t)len, 256, src, rank, 7000 + i);
    }
    MPI_Waitall(NUNEXP, req, MPI_STATUSES_IGNORE);
    free(req);
    free(sb);
    free(rb);
}

/* Contributions to allreduce: rank r's element i. */
static int32_t ar_i32(int r, int i)
{
    return (int32_t)((i * 31 + r * 7919 + 1) % 2001) - 1000;
}

static int32_t ar_prod(int r, int i)
{
    static const int32_t v[3] = {2, -1, 1};
    return v[(i + r) % 3];
}

static uint32_t ar_u32(int r, int i)
{
    return mix((uint32_t)r, (uint32_t)i, 0xA11, 0);
}

static int64_t ar_i64(int r, int i)
{
    return (int64_t)ar_i32(r, i) * 1000000007LL + r;
}

enum ar_kind { AR_I32, AR_U32, AR_I64, AR_DBL };

/* One reduction to check: its element type and operation (the inputs are
 * ar_in(), the expected results ar_expect()). */
struct ar_case {
    const char *name;  /* printed on a mismatch */
    enum ar_kind kind; /* element type */
    MPI_Op op;         /* the reduction */
};

/* The value rank r contributes to element i of case c, as int64 bits. */
static int64_t ar_in(const struct ar_case *c, int r, int i)
{
    if (c->kind == AR_U32)
        return (int64_t)ar_u32(r, i);
    if (c->kind == AR_I64)
        return ar_i64(r, i);
    if (c->op == MPI_PROD)
        return ar_prod(r, i);
    return ar_i32(r, i);
}

/* The expected result of element i of case c, computed here. */
static int64_t ar_expect(const struct ar_case *c, int i)
{
    int64_t acc = ar_in(c, 0, i);
    for (int r = 1; r < nranks; r++) {
        int64_t v = ar_in(c, r, i);
        if (c->op == MPI_SUM)
            acc += v;
        else if (c->op == MPI_MAX)
            acc = v > acc ? v : acc;
        else if (c->op == MPI_MIN)
            acc = v < acc ? v : acc;
        else if (c->op == MPI_PROD)
            acc *= v;
        else if (c->op == MPI_BAND)
            acc &= v;
        else if (c->op == MPI_BOR)
            acc |= v;
        else if (c->op == MPI_BXOR)
            acc ^= v;
    }
    return acc;
}

static MPI_Datatype ar_type(enum ar_kind k)
{
    return k == AR_I32   ? MPI_INT32_T
           : k == AR_U32 ? MPI_UINT32_T
           : k == AR_I64 ? MPI_INT64_T
                         : MPI_DOUBLE;
}

static size_t ar_elsize(enum ar_kind k)
{
    return k == AR_I32 || k == AR_U32 ? 4 : 8;
}

static void ar_store(enum ar_kind k, void *buf, int i, int64_t v)
{
    if (k == AR_I32)
        ((int32_t *)buf)[i] = (int32_t)v;
    else if (k == AR_U32)
        ((uint32_t *)buf)[i] = (uint32_t)v;
    else if (k == AR_I64)
        ((int64_t *)buf)[i] = v;
    else
        ((double *)buf)[i] = (double)v;
}

static int64_t ar_load(enum ar_kind k, const void *buf, int i)
{
    if (k == AR_I32)
        return ((const int32_t *)buf)[i];
    if (k == AR_U32)
        return ((const uint32_t *)buf)[i];
    if (k == AR_I64)
        return ((const int64_t *)buf)[i];
    return (int64_t)((const double *)buf)[i];
}

/* Every case at every count; half of them (alternating over both) reduce
 * MPI_IN_PLACE.  The
 * double cases use integers well inside 2^53, so sums are exact. */
static void t_allreduce(void)
{
    static const int counts[] = {1, 2, 7, 1000, 16384, 262144};
    const struct ar_case cases[] = {
        {"int32 SUM", AR_I32, MPI_SUM},    {"int32 MAX", AR_I32, MPI_MAX},
        {"int32 MIN", AR_I32, MPI_MIN},    {"int32 PROD", AR_I32, MPI_PROD},
        {"uint32 BAND", AR_U32, MPI_BAND}, {"uint32 BOR", AR_U32, MPI_BOR},
        {"uint32 BXOR", AR_U32, MPI_BXOR}, {"int64 SUM", AR_I64, MPI_SUM},
        {"double SUM", AR_DBL, MPI_SUM},   {"double MAX", AR_DBL, MPI_MAX},
    };
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        const struct ar_case *c = &cases[ci];
        for (size_t ni = 0; ni < sizeof(counts) / sizeof(counts[0]); ni++) {
            int n = counts[ni], in_place = (int)((ci + ni) % 2);
            size_t es = ar_elsize(c->kind);
            void *in = xmalloc((size_t)n * es);
            uint8_t *out = make_rbuf((size_t)n * es);
            for (int i = 0; i < n; i++)
                ar_store(c->kind, in_place ? (void *)out : in, i,
                         ar_in(c, rank, i));
            double t0 = MPI_Wtime();
            MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, n,
                          ar_type(c->kind), c->op, MPI_COMM_WORLD);
            if (verbose && rank == 0)
                printf("    allreduce %s x %d%s: %.3f ms\n", c->name, n,
                       in_place ? " in place" : "", (MPI_Wtime() - t0) * 1e3);
            long bad = 0;
            int first = -1;
            for (int i = 0; i < n; i++) {
                int64_t want = ar_expect(c, i);
                if (c->kind == AR_U32 || c->kind == AR_I32)
                    want = c->kind == AR_U32 ? (int64_t)(uint32_t)want
                                             : (int64_t)(int32_t)want;
                if (ar_load(c->kind, out, i) != want && bad++ == 0)
                    first = i;
            }
            n_checks += n;
            if (bad)
                fail("%s, %d elements%s: %ld wrong, first at %d (%lld, "
                     "expected %lld)",
                     c->name, n, in_place ? " in place" : "", bad, first,
                     (long long)ar_load(c->kind, out, first),
                     (long long)ar_expect(c, first));
            for (size_t g = 0; g < GUARD; g++)
                CHECK(out[(size_t)n * es + g] == GUARD_BYTE,
                      "%s, %d elements: guard byte %zu overwritten", c->name, n,
                      g);
            free(in);
            free(out);
        }
    }
}

/* Element k of what rank src sends rank dst in alltoall. */
static int32_t a2a_val(int src, int dst, int k)
{
    return (int32_t)mix((uint32_t)src, (uint32_t)dst, (uint32_t)k, 0xA2A);
}

static void t_alltoall(void)
{
    static const int counts[] = {1, 5, 1024, 65536};
    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        int n = counts[ci];
        size_t bytes = (size_t)n * (size_t)nranks * sizeof(int32_t);
        int32_t *sb = xmalloc(bytes);
        int32_t *rb = (int32_t *)make_rbuf(bytes);
        for (int p = 0; p < nranks; p++)
            for (int k = 0; k < n; k++)
                sb[p * n + k] = a2a_val(rank, p, k);
        MPI_Alltoall(sb, n, MPI_INT32_T, rb, n, MPI_INT32_T, MPI_COMM_WORLD);
        for (int p = 0; p < nranks; p++) {
            long bad = 0;
            int first = -1;
            for (int k = 0; k < n; k++)
                if (rb[p * n + k] != a2a_val(p, rank, k) && bad++ == 0)
                    first = k;
            n_checks += n;
            if (bad)
                fail("%d per pair: %ld wrong from %d, first at %d (%d, "
                     "expected %d)",
                     n, bad, p, first, rb[p * n + first],
                     a2a_val(p, rank, first));
        }
        for (size_t g = 0; g < GUARD; g++)
            CHECK(((uint8_t *)rb)[bytes + g] == GUARD_BYTE,
                  "%d per pair: guard byte %zu overwritten", n, g);
        free(sb);
        free(rb);
    }
}

/* p2p_protnone: the ring of send buffers (mmap, so that each can be
 * protected on its own) and the messages per direction and call. */
#define PN_BUFS 8
#define PN_MSGS 96
#define PN_BATCH 4

static void pn_protect(uint8_t *b, int prot)
{
    if (mprotect(b, MIB, prot)) {
        perror("mprotect");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* Sends PN_MSGS blocking then PN_MSGS non-blocking 1 MiB messages to dst
 * from the ring, protecting each buffer once its send is complete. */
static void pn_send(uint8_t **ring, int dst)
{
    int next = 0;
    for (int m = 0; m < PN_MSGS; m++) {
        uint8_t *b = ring[next++ % PN_BUFS];
        int tag = 3000 + m;
        pn_protect(b, PROT_READ | PROT_WRITE);
        for (size_t i = 0; i < MIB; i++)
            b[i] = pat(rank, dst, tag, i);
        MPI_Send(b, MIB, MPI_BYTE, dst, tag, MPI_COMM_WORLD);
        pn_protect(b, PROT_NONE);
    }
    for (int m = 0; m < PN_MSGS; m += PN_BATCH) {
        MPI_Request rq[PN_BATCH];
        uint8_t *bs[PN_BATCH];
        for (int k = 0; k < PN_BATCH; k++) {
            int tag = 3000 + PN_MSGS + m + k;
            bs[k] = ring[next++ % PN_BUFS];
            pn_protect(bs[k], PROT_READ | PROT_WRITE);
            for (size_t i = 0; i < MIB; i++)
                bs[k][i] = pat(rank, dst, tag, i);
            MPI_Isend(bs[k], MIB, MPI_BYTE, dst, tag, MPI_COMM_WORLD, &rq[k]);
        }
        MPI_Waitall(PN_BATCH, rq, MPI_STATUSES_IGNORE);
        for (int k = 0; k < PN_BATCH; k++)
            pn_protect(bs[k], PROT_NONE);
    }
}

static void pn_recv(int src)
{
    uint8_t *rb = make_rbuf(MIB);
    for (int m = 0; m < 2 * PN_MSGS; m++) {
        int tag = 3000 + m;
        MPI_Status st = {0};
        MPI_Recv(rb, MIB, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st);
        check_status(&st, src, tag, MIB);
        check_msg(rb, MIB, MIB, src, rank, tag);
    }
    free(rb);
}

/* Ranks pair up (0-1, 2-3, ...; an odd last rank sits out); the even rank
 * sends first, then the odd one. */
static void t_p2p_protnone(void)
{
    int peer = rank ^ 1;
    if (peer >= nranks)
        return;
    uint8_t *ring[PN_BUFS];
    for (int i = 0; i < PN_BUFS; i++) {
        ring[i] = mmap(NULL, MIB, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (ring[i] == MAP_FAILED) {
            perror("mmap");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    for (int phase = 0; phase < 2; phase++) {
        if ((rank & 1) == phase)
            pn_send(ring, peer);
        else
            pn_recv(peer);
    }
    /* The last buffers stay protected until the peer has had time to
     * acknowledge everything. */
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < PN_BUFS; i++)
        munmap(ring[i], MIB);
}

static const struct {
    const char *name;
    void (*fn)(void);
} tests[] = {
    {"p2p_blocking", t_p2p_blocking},
    {"p2p_nonblocking", t_p2p_nonblocking},
    {"p2p_tag_order", t_p2p_tag_order},
    {"p2p_wildcards", t_p2p_wildcards},
    {"p2p_probe", t_p2p_probe},
    {"p2p_cancel", t_p2p_cancel},
    {"p2p_unexpected", t_p2p_unexpected},
    {"allreduce", t_allreduce},
    {"alltoall", t_alltoall},
    {"p2p_protnone", t_p2p_protnone},
};

int main(int argc, char **argv)
{
    const char *to = getenv("MPI_CHECK_TIMEOUT");
    alarm(to ? (unsigned)atoi(to) : 300u);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks < 2) {
        if (rank == 0)
            fprintf(stderr, "mpi_check: needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    if (rank == 0)
        printf("mpi_check: %d ranks\n", nranks);
    const char *only = getenv("MPI_CHECK_TESTS");
    inject = getenv("MPI_CHECK_INJECT") != NULL;
    verbose = getenv("MPI_CHECK_VERBOSE") != NULL;
    int passed = 0, failed = 0;
    for (size_t t = 0; t < sizeof(tests) / sizeof(tests[0]); t++) {
        test = tests[t].name;
        if (only && !strstr(only, test))
            continue;
        n_checks = n_fail = 0;
        double t0 = MPI_Wtime();
        tests[t].fn();
        double dt = MPI_Wtime() - t0;
        long mine[2] = {n_checks, n_fail}, all[2];
        MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        /* a test that checked nothing fails too */
        int ok = all[1] == 0 && all[0] > 0;
        if (ok)
            passed++;
        else
            failed++;
        if (rank == 0) {
            printf("  %-16s %s  %11ld values checked, %ld mismatches "
                   "(%.2f s)\n",
                   test, ok ? "ok  " : "FAIL", all[0], all[1], dt);
            fflush(stdout);
        }
    }
    if (rank == 0)
        printf("mpi_check: %d passed, %d failed\n", passed, failed);
    MPI_Finalize();
    return failed ? 1 : 0;
}
