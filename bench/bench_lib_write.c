/*
 * bench_lib_write.c - loopback WRITE throughput of libmroce between two
 * processes, with the datapath's syscall and GSO/GRO counters.
 *
 *   bench_lib_write [-s msg_bytes] [-d depth] [-t seconds] [-m app|thread]
 *                   [-G] [-R] [-c none|delay] [-q target_qdelay_us]
 *                   [-b path_burst] [-w init_cwnd_kib] [-r min_rto_us]
 *   -G: no GSO, -R: no GRO; -c/-q/-b/-w: requester QP attributes.
 *   -1: one process, one thread driving both devices (APP mode): measures
 *       the CPU cost per packet without cross-process scheduling noise.
 *
 * The parent is the requester: it keeps `depth` signaled WRITEs of
 * msg_bytes in flight to the child's region for the given time and reports
 * goodput, packets per second and syscalls per packet on both sides.  A
 * measurement, never a pass/fail test; numbers depend on the machine.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mroce/mroce.h>

struct hello {
    uint16_t port;
    uint32_t rkey;
    uint64_t addr;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int open_dev(mroce_device **dev, int mode, int gso, int gro)
{
    for (int i = 0; i < 50; i++) {
        struct mroce_device_attr a;
        mroce_device_attr_default(&a);
        a.progress = (uint8_t)mode;
        a.use_gso = (uint8_t)gso;
        a.use_gro = (uint8_t)gro;
        a.port = (uint16_t)(30000 +
                            ((unsigned)getpid() * 31u + (unsigned)i * 977u) %
                                20000u);
        int rc = mroce_device_open(&a, dev);
        if (rc != MROCE_EADDR)
            return rc;
    }
    return MROCE_EADDR;
}

static void print_udp(const char *who, mroce_device *dev, double secs)
{
    struct mroce_udp_counters u;
    mroce_device_get_udp_counters(dev, &u);
    double pkts = (double)(u.tx_pkts + u.rx_pkts);
    double sys = (double)(u.tx_syscalls + u.rx_syscalls - u.rx_empty);
    printf("%s: tx %llu pkts / %llu syscalls (%llu GSO sends, %.1f seg/send), "
           "rx %llu pkts / %llu datagrams / %llu syscalls (%llu empty); %.3f "
           "syscalls/pkt "
           "(empty polls excluded); "
           "%.0f pkts/s; rounds %llu sleeps %llu; tx_err %llu eagain %llu\n",
           who, (unsigned long long)u.tx_pkts,
           (unsigned long long)u.tx_syscalls,
           (unsigned long long)u.tx_gso_sends,
           u.tx_gso_sends ? (double)u.tx_gso_segs / (double)u.tx_gso_sends
                          : 0.0,
           (unsigned long long)u.rx_pkts, (unsigned long long)u.rx_datagrams,
           (unsigned long long)u.rx_syscalls, (unsigned long long)u.rx_empty,
           pkts ? sys / pkts : 0.0, pkts / secs,
           (unsigned long long)u.progress_rounds,
           (unsigned long long)u.thread_sleeps, (unsigned long long)u.tx_errors,
           (unsigned long long)u.tx_eagain);
}

int main(int argc, char **argv)
{
    size_t msg = 65536;
    int depth = 16, mode = MROCE_PROGRESS_APP, gso = 1, gro = 1;
    int cc = -1, burst = 0, cwnd_kib = 0, single = 0;
    double qdelay_us = -1, rto_us = 0;
    double secs = 2.0;
    int opt;
    while ((opt = getopt(argc, argv, "s:d:t:m:GRc:q:b:w:r:1")) != -1) {
        switch (opt) {
        case 's':
            msg = strtoul(optarg, NULL, 0);
            break;
        case 'd':
            depth = atoi(optarg);
            break;
        case 't':
            secs = atof(optarg);
            break;
        case 'm':
            mode = !strcmp(optarg, "thread");
            break;
        case 'G':
            gso = 0;
            break;
        case 'R':
            gro = 0;
            break;
        case 'c':
            cc = strcmp(optarg, "none") ? MROCE_CC_DELAY_ECN : MROCE_CC_NONE;
            break;
        case 'q':
            qdelay_us = atof(optarg);
            break;
        case 'b':
            burst = atoi(optarg);
            break;
        case 'w':
            cwnd_kib = atoi(optarg);
            break;
        case 'r':
            rto_us = atof(optarg);
            break;
        case '1':
            single = 1;
            mode = MROCE_PROGRESS_APP;
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-s bytes] [-d depth] [-t s] [-m app|thread] "
                    "[-G] [-R]\n",
                    argv[0]);
            return 2;
        }
    }
    int up[2], down[2];
    if (pipe(up) || pipe(down))
        return 1;
    size_t region = msg * (size_t)depth;
    mroce_device *rdev = NULL;
    pid_t child = single ? 1 : fork();
    if (single) {
        mroce_pd *pd;
        mroce_cq *cq;
        mroce_qp *qp;
        mroce_mr *mr;
        struct mroce_qp_init_attr qa;
        if (open_dev(&rdev, mode, gso, gro) < 0)
            return 1;
        uint8_t *buf = calloc(1, region);
        mroce_pd_alloc(rdev, &pd);
        mroce_create_cq(rdev, 1024, &cq);
        mroce_qp_init_attr_default(&qa);
        qa.send_cq = qa.recv_cq = cq;
        mroce_create_qp(pd, &qa, &qp);
        mroce_reg_mr(pd, buf, region,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE, &mr);
        struct hello h = {mroce_device_port(rdev), mroce_mr_rkey(mr),
                          (uintptr_t)buf};
        mroce_listen(qp);
        if (write(up[1], &h, sizeof(h)) != sizeof(h))
            return 1;
    } else if (child == 0) {
        /* Responder: a region to write into, and progress until told. */
        mroce_device *dev;
        mroce_pd *pd;
        mroce_cq *cq;
        mroce_qp *qp;
        mroce_mr *mr;
        struct mroce_qp_init_attr qa;
        if (open_dev(&dev, mode, gso, gro) < 0)
            _exit(1);
        uint8_t *buf = calloc(1, region);
        mroce_pd_alloc(dev, &pd);
        mroce_create_cq(dev, 1024, &cq);
        mroce_qp_init_attr_default(&qa);
        qa.send_cq = qa.recv_cq = cq;
        mroce_create_qp(pd, &qa, &qp);
        mroce_reg_mr(pd, buf, region,
                     MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE, &mr);
        struct hello h = {mroce_device_port(dev), mroce_mr_rkey(mr),
                          (uintptr_t)buf};
        mroce_listen(qp);
        if (write(up[1], &h, sizeof(h)) != sizeof(h))
            _exit(1);
        double t0 = 0;
        char c;
        /* Until the parent writes to the pipe. */
        for (;;) {
            if (mode == MROCE_PROGRESS_APP) {
                for (int i = 0; i < 1000; i++)
                    mroce_device_progress(dev);
            } else {
                usleep(1000);
            }
            struct timeval tv = {0, 0};
            fd_set fds;
            FD_ZERO(&fds);
            FD_SET(down[0], &fds);
            if (select(down[0] + 1, &fds, NULL, NULL, &tv) > 0)
                break;
            if (t0 == 0 && mroce_qp_get_state(qp) == MROCE_QPS_RTS)
                t0 = now_s();
        }
        if (read(down[0], &c, 1) != 1)
            _exit(1);
        print_udp("responder", dev, now_s() - t0);
        fflush(stdout);
        mroce_device_close(dev);
        free(buf);
        _exit(0);
    }
    struct hello h;
    if (read(up[0], &h, sizeof(h)) != sizeof(h))
        return 1;
    mroce_device *dev;
    mroce_pd *pd;
    mroce_cq *cq;
    mroce_qp *qp;
    mroce_mr *mr;
    struct mroce_qp_init_attr qa;
    if (open_dev(&dev, mode, gso, gro) < 0)
        return 1;
    uint8_t *buf = calloc(1, msg);
    mroce_pd_alloc(dev, &pd);
    mroce_create_cq(dev, 1024, &cq);
    mroce_qp_init_attr_default(&qa);
    qa.send_cq = qa.recv_cq = cq;
    qa.eng.max_send_wr = 1024;
    if (cc >= 0)
        qa.eng.cc_algo = (uint8_t)cc;
    if (qdelay_us >= 0)
        qa.eng.target_qdelay = (mroce_tstamp)(qdelay_us * 1000);
    if (rto_us > 0)
        qa.eng.min_rto = (mroce_tstamp)(rto_us * 1000);
    if (burst)
        qa.eng.path_burst = (uint8_t)burst;
    if (cwnd_kib)
        qa.eng.init_cwnd = (uint32_t)cwnd_kib * 1024;
    mroce_create_qp(pd, &qa, &qp);
    mroce_reg_mr(pd, buf, msg, MROCE_ACCESS_LOCAL_WRITE, &mr);
    int rc;
    if (single) {
        rc = mroce_connect_start(qp, "127.0.0.1", h.port, 0);
        for (int i = 0;
             i < 100000 && mroce_qp_get_state(qp) == MROCE_QPS_CONNECTING;
             i++) {
            mroce_device_progress(rdev);
            mroce_device_progress(dev);
        }
        if (mroce_qp_get_state(qp) != MROCE_QPS_RTS)
            rc = MROCE_ETIMEDOUT;
    } else {
        rc = mroce_connect(qp, "127.0.0.1", h.port, 0, 2000);
    }
    if (rc) {
        fprintf(stderr, "connect: %s\n", mroce_strerror(rc));
        kill(child, SIGKILL);
        return 1;
    }
    struct mroce_sge sge = {(uintptr_t)buf, (uint32_t)msg, mroce_mr_lkey(mr)};
    struct mroce_send_wr wr, *bad;
    memset(&wr, 0, sizeof(wr));
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = MROCE_WR_WRITE;
    wr.send_flags = MROCE_SEND_SIGNALED;
    wr.rkey = h.rkey;
    uint64_t posted = 0, done = 0, errors = 0;
    double t0 = now_s(), t1 = t0;
    int outstanding = 0;
    struct mroce_wc wc[64];
    while ((t1 = now_s()) - t0 < secs) {
        while (outstanding < depth) {
            wr.wr_id = posted;
            wr.remote_addr = h.addr + (posted % (uint64_t)depth) * msg;
            if (mroce_post_send(qp, &wr, &bad))
                break;
            posted++;
            outstanding++;
        }
        if (single)
            mroce_device_progress(rdev);
        int n = mroce_poll_cq(cq, 64, wc);
        for (int i = 0; i < n; i++) {
            if (wc[i].status != MROCE_WC_SUCCESS)
                errors++;
            done++;
            outstanding--;
        }
        if (n < 0 || errors)
            break;
    }
    double el = t1 - t0;
    printf("WRITE %zu B x depth %d, %s progress, gso %d gro %d: %llu msgs in "
           "%.2f s = "
           "%.2f Gbit/s, %.0f msgs/s%s\n",
           msg, depth, mode ? "thread" : "app", gso, gro,
           (unsigned long long)done, el,
           (double)done * (double)msg * 8 / el / 1e9, (double)done / el,
           errors ? " (ERRORS)" : "");
    print_udp("requester", dev, el);
    struct mroce_qp_counters qc;
    mroce_qp_get_counters(qp, &qc);
    printf("requester qp: tx_data %llu retx %llu (path %llu ooo %llu rto %llu "
           "probe %llu) "
           "timeouts %llu (spurious %llu) cwnd %llu srtt %llu ns\n",
           (unsigned long long)qc.tx_data_pkts,
           (unsigned long long)qc.retx_pkts, (unsigned long long)qc.retx_path,
           (unsigned long long)qc.retx_ooo, (unsigned long long)qc.retx_rto,
           (unsigned long long)qc.retx_probe, (unsigned long long)qc.timeouts,
           (unsigned long long)qc.spurious_rto, (unsigned long long)qc.cwnd,
           (unsigned long long)qc.srtt);
    fflush(stdout);
    if (single) {
        print_udp("responder", rdev, el);
        mroce_device_close(rdev);
    } else {
        if (write(down[1], "x", 1) != 1)
            return 1;
        waitpid(child, NULL, 0);
    }
    mroce_device_close(dev);
    free(buf);
    return 0;
}
