/*
 * agent_proto.c - the control channel's syntax (AGENT-1..3): a verb and
 * key=value arguments separated by single spaces; numbers in decimal or
 * 0x-hex; byte strings in hex; access flags, op and status names; and the
 * one-line replies, `OK key=value...` or `ERR CODE text`.
 *
 * Nothing here trusts its input: every number is range-checked as it is
 * parsed, hex is validated digit by digit against the output's capacity,
 * and replies are built in a fixed buffer that cannot overflow (an
 * over-long reply turns into `ERR EIO`).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"

int agent_parse_line(char *line, struct agent_cmd *cmd, const char **why)
{
    memset(cmd, 0, sizeof(*cmd));
    for (const char *c = line; *c; c++)
        if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) {
            *why = "control characters or non-ASCII bytes in the line";
            return -1;
        }
    if (!*line) {
        *why = "empty line";
        return -1;
    }
    char *p = line;
    char *sp = strchr(p, ' ');
    if (sp)
        *sp = '\0';
    cmd->verb = p;
    if (!*cmd->verb) {
        *why = "line starts with a space";
        return -1;
    }
    if (strchr(cmd->verb, '=')) {
        *why = "line starts with an argument, not a verb";
        return -1;
    }
    while (sp) {
        p = sp + 1;
        sp = strchr(p, ' ');
        if (sp)
            *sp = '\0';
        char *eq = strchr(p, '=');
        if (!*p || !eq || eq == p || !eq[1]) {
            *why = "arguments must be key=value separated by single spaces";
            return -1;
        }
        if (cmd->nargs == AGENT_MAX_ARGS) {
            *why = "too many arguments";
            return -1;
        }
        *eq = '\0';
        cmd->args[cmd->nargs].key = p;
        cmd->args[cmd->nargs].val = eq + 1;
        cmd->nargs++;
    }
    return 0;
}

int agent_check_keys(const struct agent_cmd *cmd, const char *allowed,
                     const char **why)
{
    for (int i = 0; i < cmd->nargs; i++) {
        const char *k = cmd->args[i].key;
        size_t kl = strlen(k);
        int ok = 0;
        for (const char *s = allowed; *s;) {
            size_t n = strcspn(s, " ");
            if (n == kl && memcmp(s, k, n) == 0) {
                ok = 1;
                break;
            }
            s += n;
            while (*s == ' ')
                s++;
        }
        if (!ok) {
            *why = "unknown key";
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(cmd->args[j].key, k) == 0) {
                *why = "key given twice";
                return -1;
            }
    }
    return 0;
}

const char *agent_arg(const struct agent_cmd *cmd, const char *key)
{
    for (int i = 0; i < cmd->nargs; i++)
        if (strcmp(cmd->args[i].key, key) == 0)
            return cmd->args[i].val;
    return NULL;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int agent_parse_u64(const char *s, uint64_t max, uint64_t *v)
{
    uint64_t x = 0;
    if (!s || !*s)
        return -1;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s += 2;
        if (!*s)
            return -1;
        for (; *s; s++) {
            int d = hexval(*s);
            if (d < 0 || x > (UINT64_MAX >> 4))
                return -1;
            x = x << 4 | (uint64_t)d;
        }
    } else {
        for (; *s; s++) {
            if (*s < '0' || *s > '9')
                return -1;
            uint64_t d = (uint64_t)(*s - '0');
            if (x > (UINT64_MAX - d) / 10)
                return -1;
            x = x * 10 + d;
        }
    }
    if (x > max)
        return -1;
    *v = x;
    return 0;
}

int agent_arg_u64(const struct agent_cmd *cmd, const char *key, uint64_t max,
                  uint64_t dflt, uint64_t *v)
{
    const char *s = agent_arg(cmd, key);
    if (!s) {
        *v = dflt;
        return 1;
    }
    return agent_parse_u64(s, max, v);
}

long agent_hex_decode(const char *s, uint8_t *out, size_t cap)
{
    size_t n = strlen(s);
    if (n % 2 || n / 2 > cap)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return (long)(n / 2);
}

int agent_parse_access(const char *s)
{
    static const struct {
        const char *name;
        int bit;
    } flags[] = {
        {"lw", MROCE_ACCESS_LOCAL_WRITE},
        {"rw", MROCE_ACCESS_REMOTE_WRITE},
        {"rr", MROCE_ACCESS_REMOTE_READ},
        {"ra", MROCE_ACCESS_REMOTE_ATOMIC},
    };
    if (strcmp(s, "none") == 0)
        return 0;
    int acc = 0;
    while (1) {
        size_t n = strcspn(s, ",");
        int found = 0;
        for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
            if (n == 2 && memcmp(s, flags[i].name, 2) == 0) {
                acc |= flags[i].bit;
                found = 1;
            }
        if (!found)
            return -1;
        if (!s[n])
            return acc;
        s += n + 1;
    }
}

static const char *const op_names[] = {
    [MROCE_WR_SEND] = "SEND",         [MROCE_WR_SEND_WITH_IMM] = "SEND_IMM",
    [MROCE_WR_WRITE] = "WRITE",       [MROCE_WR_WRITE_WITH_IMM] = "WRITE_IMM",
    [MROCE_WR_READ] = "READ",         [MROCE_WR_FETCH_ADD] = "FETCH_ADD",
    [MROCE_WR_CMP_SWAP] = "CMP_SWAP",
};

int agent_parse_op(const char *s)
{
    for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
        if (op_names[i] && strcmp(s, op_names[i]) == 0)
            return (int)i;
    return -1;
}

const char *agent_op_name(int op)
{
    if (op < 0 || (size_t)op >= sizeof(op_names) / sizeof(op_names[0]))
        return "UNKNOWN";
    return op_names[op];
}

const char *agent_status_name(int st)
{
    switch (st) {
    case MROCE_WC_SUCCESS:
        return "SUCCESS";
    case MROCE_WC_LOC_LEN_ERR:
        return "LOC_LEN_ERR";
    case MROCE_WC_LOC_PROT_ERR:
        return "LOC_PROT_ERR";
    case MROCE_WC_REM_ACCESS_ERR:
        return "REM_ACCESS_ERR";
    case MROCE_WC_REM_INV_REQ_ERR:
        return "REM_INV_REQ_ERR";
    case MROCE_WC_REM_OP_ERR:
        return "REM_OP_ERR";
    case MROCE_WC_RNR_RETRY_EXC_ERR:
        return "RNR_RETRY_EXC_ERR";
    case MROCE_WC_RETRY_EXC_ERR:
        return "RETRY_EXC_ERR";
    case MROCE_WC_WR_FLUSH_ERR:
        return "WR_FLUSH_ERR";
    default:
        return "GENERAL_ERR"; /* LOC_QP_OP_ERR has no AGENT-8 name */
    }
}

const char *agent_wc_op_name(int op)
{
    switch (op) {
    case MROCE_WC_SEND:
        return "SEND";
    case MROCE_WC_WRITE:
        return "WRITE";
    case MROCE_WC_READ:
        return "READ";
    case MROCE_WC_FETCH_ADD:
        return "FETCH_ADD";
    case MROCE_WC_CMP_SWAP:
        return "CMP_SWAP";
    case MROCE_WC_RECV:
        return "RECV";
    case MROCE_WC_RECV_WITH_IMM:
        return "RECV_IMM";
    default:
        return "UNKNOWN";
    }
}

const char *agent_err_code(int err)
{
    switch (err) {
    case MROCE_EINVAL:
    case MROCE_ERANGE:
    case MROCE_EADDR:
        return "EINVAL";
    case MROCE_ENOMEM:
        return "ENOMEM";
    case MROCE_ESTATE:
    case MROCE_EBUSY:
        return "ESTATE";
    case MROCE_EFULL:
        return "EFULL";
    case MROCE_ENOENT:
    case MROCE_EDESTROYED:
        return "ENOENT";
    case MROCE_EACCESS:
        return "EACCESS";
    case MROCE_EFAULT:
        return "EFAULT";
    default:
        return "EIO";
    }
}

/* --- replies --- */

static void reply_vadd(struct agent_reply *r, const char *fmt, va_list ap)
{
    if (r->overflow)
        return;
    size_t room = sizeof(r->buf) - r->len;
    int n = vsnprintf(r->buf + r->len, room, fmt, ap);
    if (n < 0 || (size_t)n >= room) {
        r->overflow = 1;
        return;
    }
    r->len += (size_t)n;
}

void agent_reply_ok(struct agent_reply *r)
{
    r->len = 0;
    r->overflow = 0;
    memcpy(r->buf, "OK", 3);
    r->len = 2;
}

void agent_reply_err(struct agent_reply *r, const char *code, const char *fmt,
                     ...)
{
    va_list ap;
    r->len = 0;
    r->overflow = 0;
    r->buf[0] = '\0';
    agent_reply_add(r, "ERR %s", code);
    va_start(ap, fmt);
    if (r->len < sizeof(r->buf) - 1) {
        r->buf[r->len++] = ' ';
        r->buf[r->len] = '\0';
    }
    reply_vadd(r, fmt, ap);
    va_end(ap);
    /* Free text must stay one printable line whatever went into it. */
    for (size_t i = 0; i < r->len; i++)
        if ((unsigned char)r->buf[i] < 0x20 || (unsigned char)r->buf[i] > 0x7e)
            r->buf[i] = '?';
}

void agent_reply_add(struct agent_reply *r, const char *fmt, ...)
{
    va_list ap;
    if (r->len && !r->overflow) {
        if (r->len + 1 >= sizeof(r->buf)) {
            r->overflow = 1;
            return;
        }
        r->buf[r->len++] = ' ';
        r->buf[r->len] = '\0';
    }
    va_start(ap, fmt);
    reply_vadd(r, fmt, ap);
    va_end(ap);
}

void agent_reply_hex(struct agent_reply *r, const char *key, const uint8_t *p,
                     size_t n)
{
    static const char digits[] = "0123456789abcdef";
    agent_reply_add(r, "%s=", key);
    if (r->overflow)
        return;
    if (r->len + 2 * n + 1 > sizeof(r->buf)) {
        r->overflow = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        r->buf[r->len++] = digits[p[i] >> 4];
        r->buf[r->len++] = digits[p[i] & 15];
    }
    r->buf[r->len] = '\0';
}
