/*
 * flow.h - what mroce-fabric-flow's two halves share: the control
 * messages of the exchange, the options, one connection's objects and
 * the helpers both use (mroce_fabric_flow.c: options, client, helpers;
 * flow_server.c: the server, one device for one or more connections).
 */
#ifndef MROCE_FABRIC_FLOW_H
#define MROCE_FABRIC_FLOW_H

#include <signal.h>
#include <stdint.h>

#include <mroce/mroce.h>

#define MSG_HELLO 0x48454c4fu
#define MSG_REGION 0x52454749u
#define MSG_DONE 0x444f4e45u
#define MSG_VERDICT 0x56455244u

struct ctrl {
    uint32_t type;
    uint32_t verify;
    uint64_t bytes, seed;
    uint64_t addr;
    uint32_t rkey;
    uint32_t pad;
    uint64_t mismatches;
};

struct flow_opts {
    int server;
    int conns; /* server: connections on one device (default 1) */
    const char *peer, *bind;
    uint16_t port, local_port, sport, sports, paths;
    uint64_t bytes;
    uint32_t msg, depth;
    int verify;
    uint64_t seed;
    double timeout;
    long at_ms;
    const char *run;
    const char *label;
    int interval_ms;
    int cc_none;
    uint32_t ooo_thresh, init_cwnd; /* 0: library default */
    int path_burst;                 /* 0: library default */
    double start_at;                /* CLOCK_REALTIME s; 0: at once */
    double target_qdelay_us;        /* 0: library default */
    double max_ack_delay_us;        /* 0: library default */
};
extern struct flow_opts O;

struct conn {
    mroce_device *dev;
    mroce_pd *pd;
    mroce_cq *cq;
    mroce_qp *qp;
    struct ctrl *ctl; /* [0] receive, [1] send */
    mroce_mr *ctl_mr;
};

extern volatile sig_atomic_t stop_sig; /* SIGTERM/SIGINT */

/* CLOCK_MONOTONIC seconds. */
double now_s(void);
/* Words of buf that differ from the pattern of seed. */
uint64_t check(const uint8_t *buf, uint64_t len, uint64_t seed);
/* Prints what failed (rc < 0: the library's error, else errno), exits 1. */
void die(const char *what, int rc);
/* Opens the device on port, its PD and CQ, and adds one QP (add_qp). */
void setup(struct conn *c, uint16_t port);
/* A QP with the options' attributes and its control buffers on c's
 * device, PD and CQ (already set). */
void add_qp(struct conn *c);
/* The QP's and device's counters and path slots, to stderr. */
void dump_state(struct conn *c, const char *why);
void post_ctl_recv(struct conn *c);
void send_ctl(struct conn *c, const struct ctrl *m);
/* Appends the QP's counters as " key=value" pairs to stdout. */
void print_qp(const char *role, struct conn *c);
/* The server (flow_server.c); returns the exit status. */
int run_server(void);

#endif
