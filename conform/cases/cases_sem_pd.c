/*
 * cases_sem_pd.c - semantics.md sections 6 and 7: protection domains
 * (PD_ALLOC and pd=, the remote side of SEM-27), the local checks at post
 * time (SEM-27), and the rights a region needs (SEM-28).
 */
#include <stdio.h>
#include <string.h>

#include "conform.h"

/* PD_ALLOC; the case is skipped if the agent has no PDs (ENOTSUP). */
static int pd_alloc(struct ct *t)
{
    return (int)ct_kv_u64(t, ct_agent(t, "PD_ALLOC"), "pd");
}

/* MR_REG in domain pd. */
static struct ct_mr mr_reg_pd(struct ct *t, uint32_t len, const char *access,
                              int fill, int pd)
{
    struct ct_mr m;
    const char *r = ct_agent(t, "MR_REG len=%u access=%s fill=%d pd=%d", len,
                             access, fill, pd);

    memset(&m, 0, sizeof(m));
    m.id = (int)ct_kv_u64(t, r, "mr");
    m.addr = ct_kv_u64(t, r, "addr");
    m.rkey = (uint32_t)ct_kv_u64(t, r, "rkey");
    m.lkey = (uint32_t)ct_kv_u64(t, r, "lkey");
    m.len = len;
    return m;
}

CT_CASE(more_pd_remote_write_other_domain, "SEM-27 SEM-17 REL-27 SEM-16",
        "region in PD 1 (lw,rw,rr,ra, filled 0x5e), QP in the implicit PD "
        "0: a WRITE with its RKey is NAKed REMOTE_ACCESS_KEY (as an "
        "unregistered key would be) and nothing is placed; a QP in PD 1 "
        "writes the same region with the same RKey: ACK, bytes placed")
{
    uint8_t d[64];
    int pd = pd_alloc(t);
    struct ct_mr mr = mr_reg_pd(t, 4096, "lw,rw,rr,ra", 0x5e, pd);
    struct ct_conn *c = ct_connect(t, "");
    struct ct_conn *k = ct_connect(t, "");
    struct ct_conn *o;
    struct ct_mr none = mr;
    uint32_t psn;
    char opts[32];

    /* The same refusal for a key that names no region (SEM-17 (b)). */
    none.rkey ^= 0x00ff0000;
    psn = ct_send_write(k, &none, 0, d, sizeof(d), 0);
    ct_expect_nak(k, psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);

    ct_pattern(d, sizeof(d), 171);
    psn = ct_send_write(c, &mr, 0, d, sizeof(d), 0);
    ct_expect_nak(c, psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x5e);

    snprintf(opts, sizeof(opts), "pd=%d", pd);
    o = ct_connect(t, opts);
    psn = ct_send_write(o, &mr, 0, d, sizeof(d), 0);
    ct_expect_ack(o, psn + 1, CT_WAIT);
    ct_expect_mem(t, &mr, 0, d, sizeof(d));
    ct_expect_mem_fill(t, &mr, sizeof(d), 4096 - sizeof(d), 0x5e);
}

CT_CASE(more_pd_remote_read_atomic_other_domain, "SEM-27 SEM-17 REL-27",
        "region of the implicit PD 0 (lw,rr,ra, filled 0x6f), QPs in a "
        "PD_ALLOC'd domain: a READ_REQ and a FETCH_ADD with its RKey are "
        "each NAKed REMOTE_ACCESS_KEY, no READ_RESP or ATOMIC_RESP, the "
        "region unchanged")
{
    int pd = pd_alloc(t);
    char opts[32];
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw,rr,ra", 0x6f);
    struct ct_conn *r, *a;
    struct mrw_pkt p;

    snprintf(opts, sizeof(opts), "pd=%d", pd);
    r = ct_connect(t, opts);
    a = ct_connect(t, opts);
    ct_pkt_read(r, &p, &mr, 0, 64);
    ct_send(r, &p);
    ct_consume(r, &p);
    ct_expect_nak(r, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_no_op(r, MROCE_OP_READ_RESP, CT_QUIET);

    ct_pkt_atomic(a, &p, MROCE_OP_FETCH_ADD, &mr, 8, 1, 0);
    ct_send(a, &p);
    ct_consume(a, &p);
    ct_expect_nak(a, p.base.psn, MROCE_NAK_REMOTE_ACCESS_KEY, CT_WAIT);
    ct_expect_no_op(a, MROCE_OP_ATOMIC_RESP, CT_QUIET);
    ct_expect_mem_fill(t, &mr, 0, 4096, 0x6f);
}

CT_CASE(ops_local_checks_at_post, "SEM-27 SEC-3 SEM-25",
        "posts whose local buffers fail the checks are refused with EACCESS "
        "and send nothing: a WRITE reaching past its region, a READ into a "
        "region without local write, a receive into one")
{
    struct ct_mr mr = ct_mr_reg(t, 4096, "lw", 0);
    struct ct_mr ro = ct_mr_reg(t, 4096, "rr", 0);
    struct ct_conn *c = ct_accept(t, "");
    const char *r;

    r = ct_agent_try(t,
                     "POST_SEND qp=%d wrid=1 op=WRITE mr=%d off=4000 "
                     "len=200 raddr=0x100 rkey=1",
                     c->aqp, mr.id);
    CT_REQUIRE(t, strncmp(r, "ERR EACCESS", 11) == 0,
               "WRITE from beyond its region: expected ERR EACCESS, got "
               "\"%s\"",
               r);
    r = ct_agent_try(t,
                     "POST_SEND qp=%d wrid=2 op=READ mr=%d off=0 len=64 "
                     "raddr=0x100 rkey=1",
                     c->aqp, ro.id);
    CT_REQUIRE(t, strncmp(r, "ERR EACCESS", 11) == 0,
               "READ into a region without local write: expected ERR "
               "EACCESS, got \"%s\"",
               r);
    r = ct_agent_try(t, "POST_RECV qp=%d wrid=3 mr=%d off=0 len=64", c->aqp,
                     ro.id);
    CT_REQUIRE(t, strncmp(r, "ERR EACCESS", 11) == 0,
               "receive into a region without local write: expected ERR "
               "EACCESS, got \"%s\"",
               r);
    ct_expect_silence(t, CT_QUIET);
    ct_expect_no_wc(t, c->aqp, "send", 0);
    ct_expect_no_wc(t, c->aqp, "recv", 0);
}

CT_CASE(sec_mr_remote_write_needs_local_write, "SEM-28 SEC-9",
        "MR_REG with rw or ra but not lw is refused with ERR EINVAL; with "
        "lw, and rr alone, it is accepted")
{
    static const char *const bad[] = {"rw", "ra", "rw,rr", "rr,ra", "rw,rr,ra"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *r = ct_agent_try(t, "MR_REG len=4096 access=%s", bad[i]);
        CT_REQUIRE(t, strncmp(r, "ERR EINVAL", 10) == 0,
                   "MR_REG access=%s: expected ERR EINVAL, got \"%s\"", bad[i],
                   r);
    }
    struct ct_mr ok1 = ct_mr_reg(t, 4096, "lw,rw,ra", 0);
    struct ct_mr ok2 = ct_mr_reg(t, 4096, "rr", 0);
    CT_REQUIRE(t, ok1.rkey != ok2.rkey, "two regions, one rkey 0x%x", ok1.rkey);
}
