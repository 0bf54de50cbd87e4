/*
 * ctl.h - the control channel to the test agent
 * (docs/spec/conformance-agent.md): one TCP connection, one command line out,
 * one reply line back.
 */
#ifndef MROCE_CONFORM_CTL_H
#define MROCE_CONFORM_CTL_H

#include <stddef.h>

#define CT_CTL_LINE 140000 /* a 16 KiB MR_READ is 32 KiB of hex; room */

struct ct_ctl {
    int fd;                 /* TCP socket, -1 when closed */
    char rbuf[CT_CTL_LINE]; /* bytes received, not yet consumed */
    size_t rlen;
    char line[CT_CTL_LINE]; /* the last reply, NUL-terminated, no LF */
    int timeout_ms;         /* per reply */
    int verbose;            /* echo the dialogue to stderr */
};

/* Connects to "host:port" ("[v6]:port" for IPv6).  0 or -1 (errno). */
int ct_ctl_open(struct ct_ctl *c, const char *hostport, int timeout_ms);
void ct_ctl_close(struct ct_ctl *c);
/* Sends cmd (no LF) and reads one reply line into c->line.  0, or -1 if the
 * channel failed (closed, timeout); c->line then says why. */
int ct_ctl_cmd(struct ct_ctl *c, const char *cmd);

/* Splits "host:port" / "[host]:port" into host (cap bytes) and port.
 * 0 or -1. */
int ct_split_hostport(const char *s, char *host, size_t cap, unsigned *port);

#endif
