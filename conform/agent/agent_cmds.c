/*
 * agent_cmds.c - the control commands of docs/spec/conformance-agent.md
 * over libmroce: DEVICE (endpoint settings such as rx_credit_bytes, which
 * libmroce fixes at device open: the device is reopened in place), protection
 * domains (PD_ALLOC, PD_FREE; pd=0 is the implicit one), memory regions
 * (page-aligned buffers with a zeroed guard tail), RESET and the dispatch
 * table; the QP commands are in agent_qp.c.
 *
 * Each command names its allowed keys in the table at the bottom; the
 * dispatcher rejects any other key before the handler runs, and handlers
 * check every value's range before it reaches the library.  Objects are
 * named by small integers (ids) counted from 1 per session.  The library
 * does the protocol's own checks (local keys, ranges, states): its refusals
 * come back as ERR codes, which is what the suite wants to see.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent.h"

/* --- object lookup --- */

struct agent_mr *agent_find_mr(struct agent *a, const struct agent_cmd *c,
                               struct agent_reply *r)
{
    uint64_t id;
    if (agent_arg_u64(c, "mr", INT32_MAX, 0, &id) != 0) {
        agent_reply_err(r, "EINVAL", "mr=<id> required");
        return NULL;
    }
    for (int i = 0; i < AGENT_MAX_MR; i++)
        if (a->mrs[i].id && (uint64_t)a->mrs[i].id == id)
            return &a->mrs[i];
    agent_reply_err(r, "ENOENT", "no region %llu", (unsigned long long)id);
    return NULL;
}

struct agent_qp *agent_find_qp(struct agent *a, const struct agent_cmd *c,
                               struct agent_reply *r)
{
    uint64_t id;
    if (agent_arg_u64(c, "qp", INT32_MAX, 0, &id) != 0) {
        agent_reply_err(r, "EINVAL", "qp=<id> required");
        return NULL;
    }
    for (int i = 0; i < AGENT_MAX_QP; i++)
        if (a->qps[i] && (uint64_t)a->qps[i]->id == id)
            return a->qps[i];
    agent_reply_err(r, "ENOENT", "no QP %llu", (unsigned long long)id);
    return NULL;
}

mroce_pd *agent_find_pd(struct agent *a, const struct agent_cmd *c,
                        struct agent_reply *r)
{
    uint64_t id;
    if (agent_arg_u64(c, "pd", INT32_MAX, 0, &id) < 0) {
        agent_reply_err(r, "EINVAL", "pd=<id>");
        return NULL;
    }
    if (id == 0)
        return a->pd;
    for (int i = 0; i < AGENT_MAX_PD; i++)
        if (a->pds[i].id && (uint64_t)a->pds[i].id == id)
            return a->pds[i].pd;
    agent_reply_err(r, "ENOENT", "no PD %llu", (unsigned long long)id);
    return NULL;
}

int agent_lib_err(struct agent_reply *r, const char *what, int rc)
{
    agent_reply_err(r, agent_err_code(rc), "%s: %s", what, mroce_strerror(rc));
    return -1;
}

/* --- objects --- */

static void mr_free(struct agent_mr *m)
{
    free(m->buf);
    memset(m, 0, sizeof(*m));
}

void agent_qp_free(struct agent *a, int slot)
{
    struct agent_qp *q = a->qps[slot];
    if (q->qp)
        mroce_destroy_qp(q->qp);
    if (q->scq)
        mroce_destroy_cq(q->scq);
    if (q->rcq)
        mroce_destroy_cq(q->rcq);
    free(q);
    a->qps[slot] = NULL;
}

/* Closes the device and opens it again on the same UDP address and port
 * with rx_credit_bytes (the session holds no objects).  0, or -1 with an
 * ERR in r (if r) when even the old settings could not be restored: the
 * agent cannot go on then (a->dev NULL, a->quit set). */
static int device_reopen(struct agent *a, uint32_t rx_credit_bytes,
                         struct agent_reply *r)
{
    uint32_t old = a->rx_credit_bytes;
    uint8_t old_planes = a->planes_old;
    mroce_pd_free(a->pd);
    mroce_device_close(a->dev);
    a->reopening = 1;
    int rc = agent_open_device(a, rx_credit_bytes);
    if (rc < 0)
        a->planes = old_planes;
    if (rc < 0 && agent_open_device(a, old) == 0) {
        a->reopening = 0;
        if (r)
            agent_lib_err(r, "device_open", rc);
        return -1;
    }
    a->reopening = 0;
    if (rc < 0) {
        fprintf(stderr, "mroce-conform-agent: cannot reopen UDP %s:%u: %s\n",
                a->udp_host, a->udp_port, mroce_strerror(rc));
        a->quit = 1;
        if (r)
            agent_reply_err(r, "EIO", "UDP endpoint lost: %s",
                            mroce_strerror(rc));
        return -1;
    }
    return 0;
}

int agent_reset(struct agent *a)
{
    if (!a->dev)
        return -1;
    for (int i = 0; i < AGENT_MAX_QP; i++)
        if (a->qps[i])
            agent_qp_free(a, i);
    for (int i = 0; i < AGENT_MAX_MR; i++) {
        struct agent_mr *m = &a->mrs[i];
        if (!m->id)
            continue;
        int rc = mroce_dereg_mr(m->mr);
        if (rc < 0) {
            /* Still referenced (cannot be once its QPs are gone): keep the
             * memory rather than free what the engine may touch. */
            fprintf(stderr, "mroce-conform-agent: RESET: region %d: %s\n",
                    m->id, mroce_strerror(rc));
            m->id = 0;
            continue;
        }
        mr_free(m);
    }
    for (int i = 0; i < AGENT_MAX_PD; i++) {
        if (!a->pds[i].id)
            continue;
        int rc = mroce_pd_free(a->pds[i].pd);
        if (rc < 0)
            fprintf(stderr, "mroce-conform-agent: RESET: PD %d: %s\n",
                    a->pds[i].id, mroce_strerror(rc));
        memset(&a->pds[i], 0, sizeof(a->pds[i]));
    }
    a->next_mr_id = a->next_qp_id = a->next_pd_id = 1;
    /* DEVICE settings last until RESET: back to the defaults. */
    if (a->rx_credit_bytes != 0 || a->planes > 1 || a->sec_suite) {
        a->planes_old = a->planes;
        a->planes = 1;
        a->sec_suite = 0;
        memset(a->sec_key, 0, sizeof a->sec_key);
        if (device_reopen(a, 0, NULL) < 0)
            return -1;
    }
    return 0;
}

/* The byte order of a 64-bit atomic target in this process's memory
 * (AGENT-18): libmroce's responder operates on native integers (SEM-12). */
static const char *atomic_order(void)
{
    const uint64_t one = 1;
    uint8_t first;
    memcpy(&first, &one, 1);
    return first ? "le" : "be";
}

static int cmd_hello(struct agent *a, struct agent_cmd *c,
                     struct agent_reply *r)
{
    agent_reply_add(r, "version=1 impl=%s udp_port=%u atomic_order=%s", a->impl,
                    (unsigned)mroce_device_port(a->dev), atomic_order());
    return 0;
}

static int cmd_reset(struct agent *a, struct agent_cmd *c,
                     struct agent_reply *r)
{
    if (agent_reset(a) < 0) {
        agent_reply_err(r, "EIO", "UDP endpoint lost");
        return -1;
    }
    return 0;
}

/* DEVICE rx_credit_bytes=N: endpoint settings, which libmroce fixes when
 * the device opens.  Only in an empty session (no QP, region or PD), so
 * the device is reopened on the same address and port; RESET restores
 * the defaults. */
static int cmd_device(struct agent *a, struct agent_cmd *c,
                      struct agent_reply *r)
{
    uint64_t credit, planes;
    uint8_t cur = a->planes > 1 ? a->planes : 1;
    if (agent_arg_u64(c, "rx_credit_bytes", UINT64_MAX, a->rx_credit_bytes,
                      &credit) < 0) {
        agent_reply_err(r, "EINVAL", "rx_credit_bytes=N");
        return -1;
    }
    if (agent_arg_u64(c, "planes", UINT64_MAX, cur, &planes) < 0 ||
        planes == 0) {
        agent_reply_err(r, "EINVAL", "planes=N");
        return -1;
    }
    /* AGENT-25: up to 8 planes, on IPv4 loopback (127/8 is all local). */
    if (planes > 8 || (planes > 1 && strncmp(a->udp_host, "127.", 4) != 0)) {
        agent_reply_err(r, "ENOTSUP", "planes=%llu (1..8, IPv4 loopback)",
                        (unsigned long long)planes);
        return -1;
    }
    if (credit > 0xffffffffull) {
        agent_reply_err(r, "ENOTSUP", "rx_credit_bytes above 2^32-1");
        return -1;
    }
    for (int i = 0; i < AGENT_MAX_QP; i++)
        if (a->qps[i]) {
            agent_reply_err(r, "ESTATE",
                            "DEVICE needs a session without "
                            "QPs, regions or PDs (RESET first)");
            return -1;
        }
    for (int i = 0; i < AGENT_MAX_MR; i++)
        if (a->mrs[i].id) {
            agent_reply_err(r, "ESTATE",
                            "DEVICE needs a session without "
                            "QPs, regions or PDs (RESET first)");
            return -1;
        }
    for (int i = 0; i < AGENT_MAX_PD; i++)
        if (a->pds[i].id) {
            agent_reply_err(r, "ESTATE",
                            "DEVICE needs a session without "
                            "QPs, regions or PDs (RESET first)");
            return -1;
        }
    /* Secure mode (security.md section 6): key=HEX (32..128 digits) and
     * suite=1..3 (default 1); key= with nothing turns it off. */
    const char *key = agent_arg(c, "key");
    uint64_t suite;
    if (agent_arg_u64(c, "suite", 3, a->sec_suite ? a->sec_suite : 1, &suite) <
            0 ||
        suite == 0 ||
        (key && *key &&
         (strlen(key) < 32 || strlen(key) > 128 || strlen(key) % 2 ||
          strspn(key, "0123456789abcdefABCDEF") != strlen(key)))) {
        agent_reply_err(r, "EINVAL", "key=HEX (32..128 digits) suite=1..3");
        return -1;
    }
    int sec_change = 0;
    if (key) {
        uint8_t want = *key ? (uint8_t)suite : 0;
        sec_change = want != a->sec_suite || strcmp(key, a->sec_key) != 0;
        if (sec_change) {
            snprintf(a->sec_key, sizeof a->sec_key, "%s", key);
            a->sec_suite = want;
        }
    }
    if ((uint32_t)credit != a->rx_credit_bytes || planes != cur || sec_change) {
        a->planes_old = a->planes;
        a->planes = (uint8_t)planes;
        if (device_reopen(a, (uint32_t)credit, r) < 0)
            return -1;
    }
    agent_reply_add(r, "rx_credit_bytes=%u", a->rx_credit_bytes);
    if (a->planes > 1 || agent_arg(c, "planes") != NULL)
        agent_reply_add(r, "planes=%u", a->planes > 1 ? a->planes : 1);
    if (a->sec_suite)
        agent_reply_add(r, "suite=%u", a->sec_suite);
    return 0;
}

/* SEC_KEY gen=N key=HEX: a new master key of generation N for receiving
 * (mroce_device_add_key); SEC_KEY gen=N use=1: send under it
 * (mroce_device_use_key).  security.md SEC-31..SEC-33. */
static int cmd_sec_key(struct agent *a, struct agent_cmd *c,
                       struct agent_reply *r)
{
    uint64_t gen, use;
    const char *key = agent_arg(c, "key");
    if (agent_arg_u64(c, "gen", 256, 256, &gen) < 0 || gen > 255 ||
        agent_arg_u64(c, "use", 1, 0, &use) < 0 || (!key && !use) ||
        (key && (strlen(key) < 32 || strlen(key) > 128 || strlen(key) % 2 ||
                 strspn(key, "0123456789abcdefABCDEF") != strlen(key)))) {
        agent_reply_err(r, "EINVAL", "gen=0..255 and key=HEX or use=1");
        return -1;
    }
    if (!a->dev || !a->sec_suite) {
        agent_reply_err(r, "ESTATE", "not a secure device (DEVICE key=)");
        return -1;
    }
    int rc = 0;
    if (key) { /* as a file only the agent can read, removed at once */
        char kpath[] = "/tmp/mroce-agent-key.XXXXXX";
        int kfd = mkstemp(kpath);
        if (kfd < 0 || fchmod(kfd, 0600) < 0 ||
            write(kfd, key, strlen(key)) < 0)
            rc = MROCE_EINVAL;
        else
            rc = mroce_device_add_key(a->dev, (uint8_t)gen, kpath);
        if (kfd >= 0) {
            close(kfd);
            unlink(kpath);
        }
    }
    if (rc == 0 && use)
        rc = mroce_device_use_key(a->dev, (uint8_t)gen);
    if (rc < 0) {
        agent_reply_err(r, "EINVAL", "gen=%u refused (%d)", (unsigned)gen, rc);
        return -1;
    }
    agent_reply_add(r, "gen=%u", (unsigned)gen);
    return 0;
}

static int cmd_pd_alloc(struct agent *a, struct agent_cmd *c,
                        struct agent_reply *r)
{
    struct agent_pd *p = NULL;
    for (int i = 0; i < AGENT_MAX_PD && !p; i++)
        if (!a->pds[i].id)
            p = &a->pds[i];
    if (!p) {
        agent_reply_err(r, "ENOMEM", "too many PDs");
        return -1;
    }
    int rc = mroce_pd_alloc(a->dev, &p->pd);
    if (rc < 0) {
        p->pd = NULL;
        return agent_lib_err(r, "pd_alloc", rc);
    }
    p->id = a->next_pd_id++;
    agent_reply_add(r, "pd=%d", p->id);
    return 0;
}

static int cmd_pd_free(struct agent *a, struct agent_cmd *c,
                       struct agent_reply *r)
{
    uint64_t id;
    if (agent_arg_u64(c, "pd", INT32_MAX, 0, &id) != 0) {
        agent_reply_err(r, "EINVAL", "pd=<id> required");
        return -1;
    }
    if (id == 0) {
        agent_reply_err(r, "ESTATE", "pd=0 is the implicit PD");
        return -1;
    }
    for (int i = 0; i < AGENT_MAX_PD; i++) {
        struct agent_pd *p = &a->pds[i];
        if (!p->id || (uint64_t)p->id != id)
            continue;
        int rc = mroce_pd_free(p->pd);
        if (rc < 0)
            return agent_lib_err(r, "pd_free", rc);
        memset(p, 0, sizeof(*p));
        return 0;
    }
    agent_reply_err(r, "ENOENT", "no PD %llu", (unsigned long long)id);
    return -1;
}

static int cmd_quit(struct agent *a, struct agent_cmd *c, struct agent_reply *r)
{
    a->quit = 1;
    return 0;
}

static int cmd_mr_reg(struct agent *a, struct agent_cmd *c,
                      struct agent_reply *r)
{
    uint64_t len, fill;
    const char *acc_s = agent_arg(c, "access");
    if (agent_arg_u64(c, "len", UINT64_MAX, 0, &len) != 0 || !acc_s ||
        agent_arg_u64(c, "fill", 255, 0, &fill) < 0) {
        agent_reply_err(r, "EINVAL", "len=N access=<flags> [fill=B]");
        return -1;
    }
    int acc = agent_parse_access(acc_s);
    if (acc < 0) {
        agent_reply_err(r, "EINVAL", "access: lw,rw,rr,ra or none");
        return -1;
    }
    mroce_pd *pd = agent_find_pd(a, c, r);
    if (!pd)
        return -1;
    if (len > AGENT_MAX_MR_LEN) {
        agent_reply_err(r, "ENOMEM", "at most %u bytes per region",
                        AGENT_MAX_MR_LEN);
        return -1;
    }
    struct agent_mr *m = NULL;
    for (int i = 0; i < AGENT_MAX_MR && !m; i++)
        if (!a->mrs[i].id)
            m = &a->mrs[i];
    if (!m) {
        agent_reply_err(r, "ENOMEM", "too many regions");
        return -1;
    }
    void *buf = NULL;
    /* The guard tail keeps even an engine that writes past a region's end
     * (the write_past_end seeded fault) inside this allocation. */
    if (posix_memalign(&buf, 4096, (size_t)len + AGENT_MR_GUARD) != 0) {
        agent_reply_err(r, "ENOMEM", "allocation failed");
        return -1;
    }
    memset(buf, (int)fill, (size_t)len);
    memset((uint8_t *)buf + len, 0, AGENT_MR_GUARD);
    int rc = mroce_reg_mr(pd, buf, (size_t)len, (unsigned)acc, &m->mr);
    if (rc < 0) {
        free(buf);
        m->mr = NULL;
        return agent_lib_err(r, "reg_mr", rc);
    }
    m->buf = buf;
    m->len = (size_t)len;
    m->id = a->next_mr_id++;
    /* Remote Address is the virtual address (AGENT-6, SEM-6): the engine
     * checks raddr against the region's [addr, addr + len). */
    agent_reply_add(r, "mr=%d addr=0x%llx rkey=0x%x lkey=0x%x", m->id,
                    (unsigned long long)(uintptr_t)buf, mroce_mr_rkey(m->mr),
                    mroce_mr_lkey(m->mr));
    return 0;
}

/* off=N len=N inside the region (agent-side access to its memory). */
static int mr_range(struct agent_mr *m, const struct agent_cmd *c,
                    uint64_t maxlen, uint64_t *off, uint64_t *len,
                    struct agent_reply *r)
{
    if (agent_arg_u64(c, "off", UINT64_MAX, 0, off) != 0 ||
        agent_arg_u64(c, "len", maxlen, 0, len) != 0 || *off > m->len ||
        *len > m->len - *off) {
        agent_reply_err(r, "EINVAL",
                        "off=N len=N within the region (%zu "
                        "bytes), len at most %llu",
                        m->len, (unsigned long long)maxlen);
        return -1;
    }
    return 0;
}

static int cmd_mr_write(struct agent *a, struct agent_cmd *c,
                        struct agent_reply *r)
{
    struct agent_mr *m = agent_find_mr(a, c, r);
    if (!m)
        return -1;
    uint64_t off;
    const char *hex = agent_arg(c, "hex");
    if (agent_arg_u64(c, "off", UINT64_MAX, 0, &off) != 0 || !hex ||
        off > m->len) {
        agent_reply_err(r, "EINVAL", "off=N hex=<bytes> within the region");
        return -1;
    }
    /* Decode first, so a bad digit leaves the region untouched. */
    size_t n = strlen(hex) / 2;
    uint8_t *tmp = malloc(n ? n : 1);
    if (!tmp) {
        agent_reply_err(r, "ENOMEM", "allocation failed");
        return -1;
    }
    if (n > m->len - off || agent_hex_decode(hex, tmp, n) < 0) {
        free(tmp);
        agent_reply_err(r, "EINVAL",
                        "hex: pairs of hex digits, within the "
                        "region");
        return -1;
    }
    memcpy(m->buf + off, tmp, n);
    free(tmp);
    return 0;
}

static int cmd_mr_read(struct agent *a, struct agent_cmd *c,
                       struct agent_reply *r)
{
    struct agent_mr *m = agent_find_mr(a, c, r);
    uint64_t off, len;
    if (!m || mr_range(m, c, AGENT_MAX_READ, &off, &len, r) < 0)
        return -1;
    agent_reply_hex(r, "hex", m->buf + off, (size_t)len);
    return 0;
}

static int cmd_mr_dereg(struct agent *a, struct agent_cmd *c,
                        struct agent_reply *r)
{
    struct agent_mr *m = agent_find_mr(a, c, r);
    if (!m)
        return -1;
    int rc = mroce_dereg_mr(m->mr);
    if (rc < 0)
        return agent_lib_err(r, "dereg_mr", rc);
    mr_free(m);
    return 0;
}

/* --- dispatch --- */

static const struct {
    const char *verb;
    const char *keys; /* allowed keys, space separated */
    agent_cmd_fn *fn;
} commands[] = {
    {"HELLO", "", cmd_hello},
    {"RESET", "", cmd_reset},
    {"DEVICE", "rx_credit_bytes planes key suite", cmd_device},
    {"SEC_KEY", "gen key use", cmd_sec_key},
    {"PD_ALLOC", "", cmd_pd_alloc},
    {"PD_FREE", "pd", cmd_pd_free},
    {"MR_REG", "len access fill pd", cmd_mr_reg},
    {"MR_WRITE", "mr off hex", cmd_mr_write},
    {"MR_READ", "mr off len", cmd_mr_read},
    {"MR_DEREG", "mr", cmd_mr_dereg},
    {"QP_CREATE",
     "mtu npaths window max_rd_atomic cc min_rto_us retry rnr_retry pd "
     "handshake_timeout_ms max_ack_delay_us peer_timeout_ms max_streams "
     "rate_hint path_burst path_reuse target_qdelay_us max_recv_wr",
     agent_cmd_qp_create},
    {"QP_LISTEN", "qp", agent_cmd_qp_listen},
    {"QP_CONNECT", "qp host port rqpn", agent_cmd_qp_connect},
    {"QP_STATE", "qp", agent_cmd_qp_state},
    {"QP_ERROR", "qp", agent_cmd_qp_error},
    {"QP_CLOSE", "qp", agent_cmd_qp_close},
    {"QP_DESTROY", "qp", agent_cmd_qp_destroy},
    {"POST_RECV", "qp wrid mr off len stream", agent_cmd_post_recv},
    {"POST_SEND",
     "qp wrid op mr off len raddr rkey imm add cmp swap inline fence signaled "
     "solicited stream",
     agent_cmd_post_send},
    {"POLL", "qp cq wait_ms", agent_cmd_poll},
    {"COUNTERS", "qp", agent_cmd_counters},
    {"QUIT", "", cmd_quit},
};

void agent_execute(struct agent *a, char *line, struct agent_reply *r)
{
    struct agent_cmd c;
    const char *why = NULL;
    if (!a->dev) {
        agent_reply_err(r, "EIO", "UDP endpoint lost");
        a->quit = 1;
        return;
    }
    if (agent_parse_line(line, &c, &why) < 0) {
        agent_reply_err(r, "EINVAL", "%s", why);
        return;
    }
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        if (strcmp(c.verb, commands[i].verb) != 0)
            continue;
        if (agent_check_keys(&c, commands[i].keys, &why) < 0) {
            agent_reply_err(r, "EINVAL", "%s for %s", why, commands[i].verb);
            return;
        }
        agent_reply_ok(r);
        if (commands[i].fn(a, &c, r) == 0 && r->overflow)
            agent_reply_err(r, "EIO", "reply too long");
        return;
    }
    agent_reply_err(r, "EINVAL", "unknown command");
}
