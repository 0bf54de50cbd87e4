/*
 * ct_int.h - the tester's internal state, shared by the framework files
 * (runner.c, agent.c, peer.c, expect.c, main.c, helpers_*.c); cases see
 * only conform.h.
 */
#ifndef MROCE_CONFORM_INT_H
#define MROCE_CONFORM_INT_H

#include <setjmp.h>
#include <stdio.h>

#include "conform.h"
#include "ctl.h"
#include "net.h"

#define CT_MAX_CONNS 16

enum ct_result { CT_PASS, CT_FAIL, CT_SKIP };

/* Options and state of the whole run. */
struct ct_run {
    struct ct_ctl ctl; /* control channel to the agent */
    struct ct_net net; /* UDP sockets */
    double slow;       /* wait multiplier (--slow) */
    int verbose;       /* -v */
    uint64_t seed;     /* --seed */
    uint32_t next_qpn; /* tester QPNs, fresh per connection */
    char impl[128];    /* agent's impl= from HELLO */
    int atomic_be;     /* HELLO atomic_order: 1 be, 0 le, -1 not reported */
};

/* One case's context. */
struct ct {
    struct ct_run *run;
    const struct ct_case *cs;
    jmp_buf jb; /* ct_fail/ct_skip jump back here */
    enum ct_result result;
    char msg[2048]; /* failure or skip reason */
    char log[8192]; /* recent diagnostics (ct_log) */
    size_t loglen;
    uint64_t rng;                        /* ct_rand state */
    struct ct_conn *conns[CT_MAX_CONNS]; /* owned, freed by the runner */
    int nconns;
    struct ct_rx rx; /* ct_recv's buffer */
    char desc[512];  /* ct_describe's buffer */
};

/* Registry (runner.c). */
const struct ct_case *const *ct_cases(int *n);

/* Runs the selected cases; returns the number of failures.  Writes TAP to
 * tap (may be NULL), JUnit XML to junit_path (may be NULL), the summary to
 * sum. */
int ct_run_all(struct ct_run *run, const char *filter, FILE *tap,
               const char *junit_path, FILE *sum);

/* Milliseconds left until deadline (ns, ct_now_ns's clock), rounded up;
 * 0 once it has passed. */
int ct_left_ms(uint64_t deadline);

/* The next packet the IUT sends to c's QPN before deadline (ns), or NULL
 * when none comes.  Packets for other QPNs are logged (ct_log) and
 * skipped; a malformed one, or one other than a CONNECT_REQ that does not
 * carry c's Token (CONN-14), fails the case. */
const struct ct_rx *ct_next_until(struct ct_conn *c, uint64_t deadline);

/* Describes a decoded packet into buf. */
void ct_pkt_fmt(const struct mrw_pkt *p, char *buf, size_t cap);

#endif
