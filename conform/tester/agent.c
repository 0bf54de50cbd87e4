/*
 * agent.c - typed commands of the test agent for cases: registering and
 * reading memory, posting receives, polling completions, QP states.  Each
 * wraps one line of docs/spec/conformance-agent.md.  An ERR reply fails the
 * case with the command and the reply, except ERR ENOTSUP, which skips it:
 * the IUT cannot do what the case needs (AGENT-9).  Memory comparisons
 * report the first differing offset, so a failure says what was (not)
 * placed.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ct_int.h"

static const char *agent_v(struct ct *t, int strict, const char *fmt,
                           va_list ap)
{
    static char cmd[CT_CTL_LINE];
    struct ct_ctl *c = &t->run->ctl;

    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    if (ct_ctl_cmd(c, cmd) < 0)
        ct_fail(t, "agent: %s", c->line);
    if (strict && strncmp(c->line, "OK", 2) != 0) {
        if (strncmp(c->line, "ERR ENOTSUP", 11) == 0)
            ct_skip(t, "agent cannot do \"%.80s\": %s", cmd, c->line);
        ct_fail(t, "agent: \"%.100s\" answered \"%.200s\"", cmd, c->line);
    }
    return c->line;
}

const char *ct_agent(struct ct *t, const char *fmt, ...)
{
    va_list ap;
    const char *r;

    va_start(ap, fmt);
    r = agent_v(t, 1, fmt, ap);
    va_end(ap);
    return r;
}

const char *ct_agent_try(struct ct *t, const char *fmt, ...)
{
    va_list ap;
    const char *r;

    va_start(ap, fmt);
    r = agent_v(t, 0, fmt, ap);
    va_end(ap);
    return r;
}

/* Finds " key=" in reply; returns the value's start or NULL. */
static const char *kv_find(const char *reply, const char *key)
{
    size_t kl = strlen(key);
    const char *p = reply;

    while ((p = strstr(p, key)) != NULL) {
        if ((p == reply || p[-1] == ' ') && p[kl] == '=')
            return p + kl + 1;
        p += kl;
    }
    return NULL;
}

int ct_kv_str(const char *reply, const char *key, char *buf, size_t cap)
{
    const char *v = kv_find(reply, key);
    size_t n;

    if (!v)
        return -1;
    n = strcspn(v, " ");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, v, n);
    buf[n] = 0;
    return 0;
}

uint64_t ct_kv_u64(struct ct *t, const char *reply, const char *key)
{
    const char *v = kv_find(reply, key);
    char *end;
    uint64_t x;

    if (!v)
        ct_fail(t, "agent reply \"%.200s\" lacks %s=", reply, key);
    x = strtoull(v, &end, 0);
    if (end == v || (*end && *end != ' '))
        ct_fail(t, "agent reply: %s= is not a number in \"%.200s\"", key,
                reply);
    return x;
}

struct ct_mr ct_mr_reg(struct ct *t, uint32_t len, const char *access, int fill)
{
    struct ct_mr mr;
    const char *r = ct_agent(t, "MR_REG len=%u access=%s fill=%d", len, access,
                             fill);

    mr.id = (int)ct_kv_u64(t, r, "mr");
    mr.addr = ct_kv_u64(t, r, "addr");
    mr.rkey = (uint32_t)ct_kv_u64(t, r, "rkey");
    mr.lkey = (uint32_t)ct_kv_u64(t, r, "lkey");
    mr.len = len;
    return mr;
}

void ct_mr_write(struct ct *t, const struct ct_mr *mr, uint32_t off,
                 const void *data, uint32_t len)
{
    static char hex[2 * 16384 + 1];
    const uint8_t *d = data;

    while (len) {
        uint32_t n = len > 16384 ? 16384 : len;
        for (uint32_t i = 0; i < n; i++)
            snprintf(hex + 2 * i, 3, "%02x", d[i]);
        hex[2 * n] = 0;
        ct_agent(t, "MR_WRITE mr=%d off=%u hex=%s", mr->id, off, hex);
        d += n;
        off += n;
        len -= n;
    }
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

void ct_mr_read(struct ct *t, const struct ct_mr *mr, uint32_t off, void *buf,
                uint32_t len)
{
    uint8_t *out = buf;

    while (len) {
        uint32_t n = len > 16384 ? 16384 : len;
        const char *r = ct_agent(t, "MR_READ mr=%d off=%u len=%u", mr->id, off,
                                 n);
        const char *h = kv_find(r, "hex");

        if (!h || strcspn(h, " ") != 2 * (size_t)n)
            ct_fail(t, "agent: MR_READ of %u bytes answered \"%.100s\"", n, r);
        for (uint32_t i = 0; i < n; i++) {
            int a = hexval(h[2 * i]), b = hexval(h[2 * i + 1]);
            if (a < 0 || b < 0)
                ct_fail(t, "agent: MR_READ returned bad hex");
            out[i] = (uint8_t)(a << 4 | b);
        }
        out += n;
        off += n;
        len -= n;
    }
}

static void mem_cmp(struct ct *t, const struct ct_mr *mr, uint32_t off,
                    const uint8_t *want, uint8_t fill, uint32_t len)
{
    uint8_t *got = malloc(len ? len : 1);
    uint32_t i, bad = 0;

    if (!got)
        ct_fail(t, "out of memory");
    ct_mr_read(t, mr, off, got, len);
    for (i = 0; i < len; i++) {
        uint8_t w = want ? want[i] : fill;
        if (got[i] != w)
            break;
    }
    if (i < len) {
        uint8_t w = want ? want[i] : fill, g = got[i];
        for (uint32_t j = i; j < len; j++)
            bad += got[j] != (want ? want[j] : fill);
        free(got);
        ct_fail(t,
                "memory of mr %d at offset %u: expected 0x%02x, got 0x%02x "
                "(%u of %u bytes from offset %u differ)",
                mr->id, off + i, w, g, bad, len, off);
    }
    free(got);
}

void ct_expect_mem(struct ct *t, const struct ct_mr *mr, uint32_t off,
                   const void *data, uint32_t len)
{
    mem_cmp(t, mr, off, data, 0, len);
}

void ct_expect_mem_fill(struct ct *t, const struct ct_mr *mr, uint32_t off,
                        uint32_t len, uint8_t byte)
{
    mem_cmp(t, mr, off, NULL, byte, len);
}

void ct_post_recv(struct ct *t, int qp, uint64_t wrid, const struct ct_mr *mr,
                  uint32_t off, uint32_t len)
{
    if (mr)
        ct_agent(t, "POST_RECV qp=%d wrid=%llu mr=%d off=%u len=%u", qp,
                 (unsigned long long)wrid, mr->id, off, len);
    else
        ct_agent(t, "POST_RECV qp=%d wrid=%llu", qp, (unsigned long long)wrid);
}

struct ct_wc ct_poll(struct ct *t, int qp, const char *cq, int wait_ms)
{
    struct ct_wc wc;
    const char *r;

    memset(&wc, 0, sizeof(wc));
    r = ct_agent(t, "POLL qp=%d cq=%s wait_ms=%d", qp, cq, wait_ms);
    wc.n = (int)ct_kv_u64(t, r, "n");
    if (!wc.n)
        return wc;
    wc.wrid = ct_kv_u64(t, r, "wrid");
    if (ct_kv_str(r, "status", wc.status, sizeof(wc.status)) < 0 ||
        ct_kv_str(r, "op", wc.op, sizeof(wc.op)) < 0)
        ct_fail(t, "agent: POLL reply \"%.200s\" lacks status= or op=", r);
    wc.len = (uint32_t)ct_kv_u64(t, r, "len");
    if (kv_find(r, "imm")) {
        wc.has_imm = 1;
        wc.imm = (uint32_t)ct_kv_u64(t, r, "imm");
    }
    if (kv_find(r, "stream"))
        wc.stream = (uint32_t)ct_kv_u64(t, r, "stream");
    return wc;
}

struct ct_wc ct_expect_wc(struct ct *t, int qp, const char *cq, uint64_t wrid,
                          const char *status, int wait_ms)
{
    struct ct_wc wc = ct_poll(t, qp, cq, ct_ms(t, wait_ms));

    if (!wc.n)
        ct_fail(t,
                "%s completion wrid %llu: expected %s within %d ms, got "
                "none",
                cq, (unsigned long long)wrid, status, ct_ms(t, wait_ms));
    if (wc.wrid != wrid || strcmp(wc.status, status) != 0)
        ct_fail(t, "%s completion: expected wrid %llu %s, got wrid %llu %s", cq,
                (unsigned long long)wrid, status, (unsigned long long)wc.wrid,
                wc.status);
    return wc;
}

void ct_expect_no_wc(struct ct *t, int qp, const char *cq, int wait_ms)
{
    struct ct_wc wc = ct_poll(t, qp, cq, ct_ms(t, wait_ms));

    if (wc.n)
        ct_fail(t,
                "%s queue: expected no completion, got wrid %llu %s op %s "
                "len %u",
                cq, (unsigned long long)wc.wrid, wc.status, wc.op, wc.len);
}

const char *ct_qp_state(struct ct *t, int qp)
{
    static char st[32];
    const char *r = ct_agent(t, "QP_STATE qp=%d", qp);

    if (ct_kv_str(r, "state", st, sizeof(st)) < 0)
        ct_fail(t, "agent: QP_STATE reply \"%.100s\" lacks state=", r);
    return st;
}

void ct_expect_qp_state(struct ct *t, int qp, const char *state, int wait_ms)
{
    uint64_t end = ct_now_ns() + (uint64_t)ct_ms(t, wait_ms) * 1000000u;
    const char *st;

    for (;;) {
        st = ct_qp_state(t, qp);
        if (strcmp(st, state) == 0)
            return;
        if (ct_now_ns() >= end)
            break;
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    ct_fail(t, "agent QP %d: expected state %s, got %s", qp, state, st);
}
