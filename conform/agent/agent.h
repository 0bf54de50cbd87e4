/*
 * agent.h - mroce-conform-agent: the conformance suite's test agent over
 * libmroce (docs/spec/conformance-agent.md, AGENT-1..12).
 *
 * The tester (mroce-conform) crafts MetaRoCE packets itself and sends them
 * to this agent's UDP port; over a separate line-based TCP control channel
 * it tells the agent what to register, post, poll and read back.  Files:
 *   agent_main.c   command line, the UDP device, the TCP listener and the
 *                  line reader (one controller at a time)
 *   agent_proto.c  the control syntax: splitting a line into a verb and
 *                  key=value arguments, numbers, hex, names, replies
 *   agent_cmds.c   dispatch, DEVICE (endpoint settings, by reopening the
 *                  device in place), PDs, regions, RESET
 *   agent_qp.c     QPs with their two CQs, posts, polls, counters
 * Every byte from the control channel is untrusted: a malformed line gets
 * `ERR EINVAL`, never a crash or an out-of-bounds access.
 */
#ifndef MROCE_CONFORM_AGENT_H
#define MROCE_CONFORM_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include <mroce/mroce.h>

#define AGENT_MAX_LINE 65536  /* AGENT-1: bytes per command, LF excluded */
#define AGENT_MAX_ARGS 24     /* key=value pairs per command */
#define AGENT_MAX_REPLY 65600 /* longest reply: MR_READ of 16384 bytes */
#define AGENT_MAX_MR 1024     /* live regions */
#define AGENT_MAX_QP 256      /* live QPs */
#define AGENT_MAX_PD 64       /* protection domains besides the implicit 0 */
#define AGENT_MAX_MR_LEN (256u << 20) /* bytes per region (ENOMEM above) */
#define AGENT_MR_GUARD 64       /* zeroed bytes allocated past each region */
#define AGENT_MAX_READ 16384    /* MR_READ len limit (spec table) */
#define AGENT_OPRING 256        /* posted send ops remembered per QP */
#define AGENT_MAX_WAIT_MS 60000 /* POLL wait_ms is clamped to this */

/* --- agent_proto.c: syntax --- */

struct agent_arg {
    const char *key; /* points into the line */
    const char *val;
};

struct agent_cmd {
    const char *verb;
    struct agent_arg args[AGENT_MAX_ARGS];
    int nargs;
};

/* Split line (NUL-terminated, LF and CR removed, modified in place) into
 * a verb and key=value arguments.  0, or -1 with a reason in *why. */
int agent_parse_line(char *line, struct agent_cmd *cmd, const char **why);
/* Every argument's key must appear in the space-separated list allowed,
 * and only once.  0, or -1 (*why names the culprit, static storage). */
int agent_check_keys(const struct agent_cmd *cmd, const char *allowed,
                     const char **why);
/* Value of key, or NULL. */
const char *agent_arg(const struct agent_cmd *cmd, const char *key);
/* Decimal or 0x-hex unsigned number fitting in max.  0 if present and
 * valid, 1 if absent (*v = dflt), -1 if malformed or above max. */
int agent_arg_u64(const struct agent_cmd *cmd, const char *key, uint64_t max,
                  uint64_t dflt, uint64_t *v);
int agent_parse_u64(const char *s, uint64_t max, uint64_t *v);
/* Hex string to bytes; returns byte count or -1 (odd length, bad digit,
 * more than cap bytes). */
long agent_hex_decode(const char *s, uint8_t *out, size_t cap);
/* "lw,rw,rr,ra" or "none" to enum mroce_access bits; -1 if malformed. */
int agent_parse_access(const char *s);
/* AGENT-7 op name to enum mroce_wr_opcode; -1 if unknown. */
int agent_parse_op(const char *s);
const char *agent_op_name(int wr_opcode);
/* AGENT-8 names of completion statuses and WC opcodes. */
const char *agent_status_name(int wc_status);
const char *agent_wc_op_name(int wc_opcode);

/* One reply line being built (no LF until agent_reply_end). */
struct agent_reply {
    char buf[AGENT_MAX_REPLY];
    size_t len;
    int overflow;
};
void agent_reply_ok(struct agent_reply *r);
/* ERR <code> <text>; replaces whatever was built. */
void agent_reply_err(struct agent_reply *r, const char *code, const char *fmt,
                     ...) __attribute__((format(printf, 3, 4)));
/* Appends " " and the formatted text. */
void agent_reply_add(struct agent_reply *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void agent_reply_hex(struct agent_reply *r, const char *key, const uint8_t *p,
                     size_t n);
/* ERR code for a libmroce error. */
const char *agent_err_code(int err);

/* --- agent_cmds.c: objects and commands --- */

struct agent_mr {
    int id;       /* 0 = free slot */
    uint8_t *buf; /* len + AGENT_MR_GUARD bytes, page aligned */
    size_t len;
    mroce_mr *mr;
};

struct agent_op {
    uint64_t wrid;
    uint8_t op; /* enum mroce_wr_opcode */
    uint8_t used;
};

struct agent_qp {
    int id; /* 0 = free slot */
    mroce_qp *qp;
    mroce_cq *scq, *rcq;
    struct agent_op ops[AGENT_OPRING]; /* recent posts, to name IMM ops */
    uint32_t op_next;
};

struct agent_pd {
    int id; /* 0 = free slot (pd=0 names the implicit a->pd) */
    mroce_pd *pd;
};

struct agent {
    mroce_device *dev;
    mroce_pd *pd;     /* the implicit domain, pd=0 */
    const char *impl; /* HELLO impl= */
    /* The UDP endpoint (--udp), kept so DEVICE can reopen it in place. */
    char udp_host[46];        /* INET6_ADDRSTRLEN */
    uint16_t udp_port;        /* 0 until bound */
    uint32_t rx_credit_bytes; /* DEVICE setting in effect; 0 = default */
    uint8_t planes;           /* DEVICE planes= in effect (AGENT-25); 0 or
                                 1 = one plane */
    uint8_t planes_old;       /* the setting before the current DEVICE */
    char planes_list[8 * 16]; /* the planes' addresses, for libmroce */
    /* DEVICE key= suite=: secure mode's master key (hex) and suite, 0 =
     * clear (docs/spec/security.md section 6). */
    char sec_key[132];
    uint8_t sec_suite;
    struct agent_pd pds[AGENT_MAX_PD]; /* PD_ALLOC'd domains */
    struct agent_mr mrs[AGENT_MAX_MR];
    struct agent_qp *qps[AGENT_MAX_QP];
    int next_mr_id, next_qp_id, next_pd_id;
    int quit;      /* QUIT seen: close the connection after the reply */
    int reopening; /* agent_open_device: a DEVICE/RESET reopen */
};

/* Lookups by the qp= / mr= argument; NULL after an ERR reply. */
struct agent_mr *agent_find_mr(struct agent *a, const struct agent_cmd *c,
                               struct agent_reply *r);
struct agent_qp *agent_find_qp(struct agent *a, const struct agent_cmd *c,
                               struct agent_reply *r);
/* The domain named by the optional pd= argument (absent or 0: the
 * implicit one); NULL after an ERR reply. */
mroce_pd *agent_find_pd(struct agent *a, const struct agent_cmd *c,
                        struct agent_reply *r);
/* ERR reply for a libmroce error; returns -1. */
int agent_lib_err(struct agent_reply *r, const char *what, int rc);
/* Destroys the QP in slot (and its CQs). */
void agent_qp_free(struct agent *a, int slot);

/* Command handlers: 0 with an OK reply being built, or -1 after an ERR
 * reply.  agent_cmds.c: HELLO RESET QUIT MR_*; agent_qp.c: the rest. */
typedef int agent_cmd_fn(struct agent *a, struct agent_cmd *c,
                         struct agent_reply *r);
agent_cmd_fn agent_cmd_qp_create, agent_cmd_qp_listen, agent_cmd_qp_connect,
    agent_cmd_qp_state, agent_cmd_qp_error, agent_cmd_qp_close,
    agent_cmd_qp_destroy, agent_cmd_post_recv, agent_cmd_post_send,
    agent_cmd_poll, agent_cmd_counters;

/* agent_main.c: opens the device (and the implicit PD) on a->udp_host,
 * a->udp_port (0: a free port, then recorded) with rx_credit_bytes; a
 * fixed port is retried briefly (DEVICE reopens it in place).  0 or a
 * libmroce error, a->dev NULL then. */
int agent_open_device(struct agent *a, uint32_t rx_credit_bytes);

/* Runs one command line (LF/CR already stripped) and builds the reply. */
void agent_execute(struct agent *a, char *line, struct agent_reply *r);
/* Destroys every QP, region and allocated PD and restores the device's
 * default settings (RESET; also when a controller leaves).  0, or -1 if
 * the device could not be reopened (the agent cannot go on). */
int agent_reset(struct agent *a);

#endif /* MROCE_CONFORM_AGENT_H */
