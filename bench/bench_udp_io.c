/*
 * bench_udp_io.c - which kernel send interface suits the UDP datapath on
 * loopback: plain sendmsg of GSO bursts (what src/udp does), MSG_ZEROCOPY,
 * and io_uring (IORING_OP_SENDMSG, several sockets' bursts per
 * io_uring_enter, which sendmmsg cannot do across sockets).
 *
 *   bench_udp_io [-n bursts] [-g segs_per_burst] [-s seg_bytes] [-p paths]
 *
 * One thread sends bursts of g segments of s bytes (UDP GSO) round robin
 * over p source sockets (paths) to one receive socket with UDP GRO, and
 * drains it after every round, as the library does.  It reports the
 * throughput and the nanoseconds per packet spent in the send calls.  A
 * measurement that informed the datapath's design, never a test.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define MAXP 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- minimal io_uring (no liburing on this system) --- */
struct uring {
    int fd;
    unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
};

static int uring_init(struct uring *u, unsigned entries)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    u->fd = (int)syscall(__NR_io_uring_setup, entries, &p);
    if (u->fd < 0)
        return -1;
    size_t sql = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cql = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (p.features & IORING_FEAT_SINGLE_MMAP)
        sql = cql = sql > cql ? sql : cql;
    uint8_t *sq = mmap(NULL, sql, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQ_RING);
    uint8_t *cq = (p.features & IORING_FEAT_SINGLE_MMAP)
                      ? sq
                      : mmap(NULL, cql, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_POPULATE, u->fd,
                             IORING_OFF_CQ_RING);
    u->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
                   PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd,
                   IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || u->sqes == MAP_FAILED)
        return -1;
    u->sq_tail = (unsigned *)(sq + p.sq_off.tail);
    u->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    u->sq_array = (unsigned *)(sq + p.sq_off.array);
    u->cq_head = (unsigned *)(cq + p.cq_off.head);
    u->cq_tail = (unsigned *)(cq + p.cq_off.tail);
    u->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
    u->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    return 0;
}

static void uring_sendmsg(struct uring *u, int fd, struct msghdr *m)
{
    unsigned tail = *u->sq_tail, idx = tail & *u->sq_mask;
    struct io_uring_sqe *e = &u->sqes[idx];
    memset(e, 0, sizeof(*e));
    e->opcode = IORING_OP_SENDMSG;
    e->fd = fd;
    e->addr = (uint64_t)(uintptr_t)m;
    e->len = 1;
    u->sq_array[idx] = idx;
    __atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
}

/* Submits n and waits for n completions; returns failed sends. */
static int uring_submit_wait(struct uring *u, unsigned n)
{
    int bad = 0;
    if (syscall(__NR_io_uring_enter, u->fd, n, n, IORING_ENTER_GETEVENTS, NULL,
                0) < 0)
        return (int)n;
    unsigned head = *u->cq_head;
    while (head != __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE)) {
        if (u->cqes[head & *u->cq_mask].res < 0)
            bad++;
        head++;
    }
    __atomic_store_n(u->cq_head, head, __ATOMIC_RELEASE);
    return bad;
}

/* --- the experiment --- */

enum { M_SENDMSG, M_ZEROCOPY, M_URING, M_NMODES };
static const char *mode_name[] = {"sendmsg+GSO", "MSG_ZEROCOPY+GSO",
                                  "io_uring SENDMSG+GSO"};

static size_t drain_rx(int fd, uint8_t *bufs, int batch)
{
    struct mmsghdr mm[64];
    struct iovec iov[64];
    size_t bytes = 0;
    for (;;) {
        for (int i = 0; i < batch; i++) {
            iov[i].iov_base = bufs + (size_t)i * 65536;
            iov[i].iov_len = 65536;
            memset(&mm[i], 0, sizeof(mm[i]));
            mm[i].msg_hdr.msg_iov = &iov[i];
            mm[i].msg_hdr.msg_iovlen = 1;
        }
        int r = recvmmsg(fd, mm, (unsigned)batch, MSG_DONTWAIT, NULL);
        if (r <= 0)
            return bytes;
        for (int i = 0; i < r; i++)
            bytes += mm[i].msg_len;
    }
}

/* Reads zerocopy completion notifications; returns how many sends they
 * covered and whether the kernel had to copy. */
static unsigned zc_reap(int fd, int *copied)
{
    unsigned done = 0;
    for (;;) {
        uint8_t ctrl[128];
        struct msghdr m;
        memset(&m, 0, sizeof(m));
        m.msg_control = ctrl;
        m.msg_controllen = sizeof(ctrl);
        if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            return done;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            struct sock_extended_err *ee = (void *)CMSG_DATA(c);
            if (ee->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
                continue;
            done += ee->ee_data - ee->ee_info + 1;
            if (ee->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
                *copied = 1;
        }
    }
}

int main(int argc, char **argv)
{
    long nbursts = 200000;
    int segs = 15, seg = 4160, paths = 8, opt;
    while ((opt = getopt(argc, argv, "n:g:s:p:")) != -1) {
        switch (opt) {
        case 'n':
            nbursts = atol(optarg);
            break;
        case 'g':
            segs = atoi(optarg);
            break;
        case 's':
            seg = atoi(optarg);
            break;
        case 'p':
            paths = atoi(optarg);
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-n bursts] [-g segs] [-s bytes] [-p paths]\n",
                    argv[0]);
            return 2;
        }
    }
    if (segs < 1 || segs > 64 || seg < 64 || (long)segs * seg > 65000 ||
        paths < 1 || paths > MAXP)
        return 2;
    int one = 1, rcv = 8 << 20;
    int rx = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv));
    setsockopt(rx, SOL_UDP, UDP_GRO, &one, sizeof(one));
    if (bind(rx, (struct sockaddr *)&sin, sizeof(sin)) < 0)
        return 1;
    socklen_t sl = sizeof(sin);
    getsockname(rx, (struct sockaddr *)&sin, &sl);
    int tx[MAXP];
    for (int p = 0; p < paths; p++) {
        tx[p] = socket(AF_INET, SOCK_DGRAM, 0);
        setsockopt(tx[p], SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one));
    }
    size_t burst_bytes = (size_t)segs * (size_t)seg;
    /* Page-aligned payload: what zerocopy pins. */
    uint8_t *payload = aligned_alloc(4096,
                                     (burst_bytes + 4095) / 4096 * 4096 * MAXP);
    uint8_t *rbufs = malloc(64 * 65536);
    memset(payload, 0xab, burst_bytes * (size_t)paths);
    struct msghdr msgs[MAXP];
    struct iovec iovs[MAXP];
    uint8_t ctrls[MAXP][CMSG_SPACE(sizeof(uint16_t))];
    for (int p = 0; p < paths; p++) {
        iovs[p].iov_base = payload + (size_t)p * burst_bytes;
        iovs[p].iov_len = burst_bytes;
        memset(&msgs[p], 0, sizeof(msgs[p]));
        msgs[p].msg_name = &sin;
        msgs[p].msg_namelen = sizeof(sin);
        msgs[p].msg_iov = &iovs[p];
        msgs[p].msg_iovlen = 1;
        if (segs > 1) {
            msgs[p].msg_control = ctrls[p];
            msgs[p].msg_controllen = sizeof(ctrls[p]);
            struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[p]);
            c->cmsg_level = SOL_UDP;
            c->cmsg_type = UDP_SEGMENT;
            c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
            uint16_t gs = (uint16_t)seg;
            memcpy(CMSG_DATA(c), &gs, sizeof(gs));
        }
    }
    struct uring ring;
    memset(&ring, 0, sizeof(ring));
    int have_uring = uring_init(&ring, 256) == 0;
    printf("bursts of %d x %d B over %d paths, loopback, receiver with GRO\n",
           segs, seg, paths);
    for (int mode = 0; mode < M_NMODES; mode++) {
        if (mode == M_URING && !have_uring) {
            printf("%-22s: io_uring unavailable (%s)\n", mode_name[mode],
                   strerror(errno));
            continue;
        }
        long sent = 0, errors = 0;
        unsigned zc_pending = 0;
        int copied = 0;
        double tsend = 0, t0 = now_s();
        size_t rbytes = 0;
        while (sent < nbursts) {
            double a = now_s();
            if (mode == M_URING) {
                for (int p = 0; p < paths; p++)
                    uring_sendmsg(&ring, tx[p], &msgs[p]);
                errors += uring_submit_wait(&ring, (unsigned)paths);
            } else {
                for (int p = 0; p < paths; p++) {
                    int fl = mode == M_ZEROCOPY ? MSG_ZEROCOPY : 0;
                    if (sendmsg(tx[p], &msgs[p], fl) < 0)
                        errors++;
                    else if (mode == M_ZEROCOPY)
                        zc_pending++;
                }
                if (mode == M_ZEROCOPY) {
                    /* The buffer may not be reused before its completion
                     * arrives: wait for all of them each round. */
                    for (int p = 0; p < paths; p++)
                        zc_pending -= zc_reap(tx[p], &copied);
                    while (zc_pending) {
                        for (int p = 0; p < paths; p++)
                            zc_pending -= zc_reap(tx[p], &copied);
                    }
                }
            }
            tsend += now_s() - a;
            sent += paths;
            rbytes += drain_rx(rx, rbufs, 64);
        }
        double el = now_s() - t0;
        double pkts = (double)sent * segs;
        printf("%-22s: %6.2f Gbit/s delivered, send %.0f ns/packet, %.0f "
               "packets/s%s%s\n",
               mode_name[mode], (double)rbytes * 8 / el / 1e9,
               tsend / pkts * 1e9, pkts / el, errors ? " (send errors)" : "",
               mode == M_ZEROCOPY && copied ? " (kernel reported COPIED)" : "");
    }
    return 0;
}
