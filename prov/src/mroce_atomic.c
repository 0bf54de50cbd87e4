/*
 * mroce_atomic.c - FI_ATOMIC: fi_atomic, fi_fetch_atomic, fi_compare_atomic
 * and their vector, msg and inject forms, the valid functions and the
 * domain's query_atomic.
 *
 * Every atomic is an active message executed by the target's provider:
 * the initiator sends an ATOMIC control message (mroce_proto.h: address,
 * key, op, datatype, count, the operands and compare values), the target's
 * progress checks the range against its open registrations, applies the op
 * element by element and answers with ATOMIC_RESP (a status and, for
 * fetching ops, the old values).  The initiator's request completes when
 * the response arrives, so a completion means the op has been applied at
 * the target (delivery complete).  Loss and reordering are the engine's
 * business: both messages are reliable MetaRoCE SENDs.
 *
 * Why not MetaRoCE's own FETCH_ADD / CMP_SWAP: they exist only for one
 * 64-bit word, and the engine applies them outside the provider's
 * execution of every other op and datatype, so the two mechanisms could not
 * be atomic with respect to each other on the same word.  One mechanism for
 * every op keeps all of them atomic with respect to one another (see
 * prov/README.md, "Atomics").
 *
 * Atomicity at the target: each element is read, computed and written
 * while the domain lock is held (every target-side execution runs in the
 * domain's progress, one at a time), and an element of 1, 2, 4 or 8 bytes
 * at an aligned address is moreover replaced with a CPU compare-and-swap
 * loop, so it stays atomic against CPU atomics other processes apply to
 * the same shared memory.  Elements are independent: an op on count > 1
 * elements is atomic per element, as fi_atomic(3) specifies.
 */
#define _GNU_SOURCE
#include <complex.h>
#include <stdlib.h>
#include <string.h>

#include "mroce_fi.h"

#define EP(fep) ((struct mfi_ep *)(fep))

/* The wire names ops and datatypes by libfabric's numbers. */
_Static_assert(FI_ATOMIC_READ == MFI_AMO_OP_READ, "wire op numbering");
_Static_assert(FI_CSWAP == MFI_AMO_OP_CSWAP, "wire op numbering");
_Static_assert(FI_MSWAP + 1 == MFI_AMO_OP_CNT, "wire op numbering");
_Static_assert(FI_UINT128 + 1 == MFI_AMO_DT_CNT, "wire datatype numbering");
_Static_assert(sizeof(long double) == 16, "long double is 16 bytes");

/* Largest operand array of one atomic (bytes): a request carries up to
 * two of them in one bounce buffer. */
#define MFI_AMO_MAX_BYTES 4096

/* A response that found the send queue full, kept for progress. */
struct mfi_amo_out {
    struct mfi_amo_out *next;
    struct mfi_conn *conn;
    size_t len;
    uint8_t data[];
};

enum { AMO_WRITE, AMO_FETCH, AMO_COMPARE }; /* the three families */

static int dt_class(unsigned dt) /* 0 integer, 1 real, 2 complex */
{
    if (dt <= FI_UINT64 || dt == FI_INT128 || dt == FI_UINT128)
        return 0;
    return dt == FI_FLOAT || dt == FI_DOUBLE || dt == FI_LONG_DOUBLE ? 1 : 2;
}

/* Whether op on dt is defined at all (the semantics of libfabric's
 * fi_atomic(3) and its software implementation). */
static int amo_defined(unsigned op, unsigned dt)
{
    if (op >= MFI_AMO_OP_CNT || dt >= MFI_AMO_DT_CNT)
        return 0;
    switch (op) {
    case FI_MIN:
    case FI_MAX:
    case FI_CSWAP_LE:
    case FI_CSWAP_LT:
    case FI_CSWAP_GE:
    case FI_CSWAP_GT:
        return dt_class(dt) != 2;
    case FI_BOR:
    case FI_BAND:
    case FI_BXOR:
    case FI_MSWAP:
        return dt_class(dt) == 0;
    default:
        return 1;
    }
}

/* Whether family fam may carry op (fi_atomicvalid and friends). */
static int amo_family_has(int fam, unsigned op)
{
    switch (fam) {
    case AMO_WRITE:
        return op <= FI_BXOR || op == FI_ATOMIC_WRITE;
    case AMO_FETCH:
        return op <= FI_ATOMIC_WRITE;
    default:
        return op >= FI_CSWAP && op <= FI_MSWAP;
    }
}

/* Elements of dt one atomic may carry (0: dt unknown). */
static size_t amo_max_count(unsigned dt)
{
    size_t sz = mfi_amo_dt_size(dt);
    size_t eager = (size_t)mfi_param.eager_size;
    if (eager < sizeof(struct mfi_amo))
        return 0;
    size_t room = (eager - sizeof(struct mfi_amo)) / 2;
    if (room > MFI_AMO_MAX_BYTES)
        room = MFI_AMO_MAX_BYTES;
    return sz ? room / sz : 0;
}

/* --- the operations, one element at a time --- */

/* new = op(old, src, cmp), built from the groups of cases each class of
 * datatype has: integers all of them, reals all but the bitwise ones,
 * complex numbers neither the bitwise nor the ordered ones.  Arithmetic is
 * done in U, for integers an unsigned type at least as wide as int, so
 * that overflow wraps. */
#define CALC_BEGIN(T)                   \
    {                                   \
        T d, s = 0, c = 0, n;           \
        memcpy(&d, old, sizeof(d));     \
        if (src)                        \
            memcpy(&s, src, sizeof(s)); \
        if (cmp)                        \
            memcpy(&c, cmp, sizeof(c)); \
        n = d;                          \
        switch (op) {
#define CALC_END                   \
    default:                       \
        break;                     \
        }                          \
        memcpy(nw, &n, sizeof(n)); \
        return;                    \
        }
#define CASES_ANY(T, U)           \
    case FI_SUM:                  \
        n = (T)((U)d + (U)s);     \
        break;                    \
    case FI_PROD:                 \
        n = (T)((U)d * (U)s);     \
        break;                    \
    case FI_LOR:                  \
        n = d != 0 || s != 0;     \
        break;                    \
    case FI_LAND:                 \
        n = d != 0 && s != 0;     \
        break;                    \
    case FI_LXOR:                 \
        n = (d == 0) != (s == 0); \
        break;                    \
    case FI_ATOMIC_WRITE:         \
        n = s;                    \
        break;                    \
    case FI_CSWAP:                \
        if (c == d)               \
            n = s;                \
        break;                    \
    case FI_CSWAP_NE:             \
        if (c != d)               \
            n = s;                \
        break;
#define CASES_ORDERED \
    case FI_MIN:      \
        if (s < d)    \
            n = s;    \
        break;        \
    case FI_MAX:      \
        if (s > d)    \
            n = s;    \
        break;        \
    case FI_CSWAP_LE: \
        if (c <= d)   \
            n = s;    \
        break;        \
    case FI_CSWAP_LT: \
        if (c < d)    \
            n = s;    \
        break;        \
    case FI_CSWAP_GE: \
        if (c >= d)   \
            n = s;    \
        break;        \
    case FI_CSWAP_GT: \
        if (c > d)    \
            n = s;    \
        break;
#define CASES_BITS(T)                \
    case FI_BOR:                     \
        n = (T)(d | s);              \
        break;                       \
    case FI_BAND:                    \
        n = (T)(d & s);              \
        break;                       \
    case FI_BXOR:                    \
        n = (T)(d ^ s);              \
        break;                       \
    case FI_MSWAP:                   \
        n = (T)((s & c) | (d & ~c)); \
        break;

#define CALC_INT(T, U) \
    CALC_BEGIN(T) CASES_ANY(T, U) CASES_ORDERED CASES_BITS(T) CALC_END
#define CALC_REAL(T) CALC_BEGIN(T) CASES_ANY(T, T) CASES_ORDERED CALC_END
#define CALC_CPLX(T) CALC_BEGIN(T) CASES_ANY(T, T) CALC_END

/* nw = the element's new value given its old one (amo_defined(op, dt)). */
static void amo_calc(unsigned op, unsigned dt, const void *old, const void *src,
                     const void *cmp, void *nw)
{
    switch (dt) {
    case FI_INT8:
        CALC_INT(int8_t, unsigned)
    case FI_UINT8:
        CALC_INT(uint8_t, unsigned)
    case FI_INT16:
        CALC_INT(int16_t, unsigned)
    case FI_UINT16:
        CALC_INT(uint16_t, unsigned)
    case FI_INT32:
        CALC_INT(int32_t, uint32_t)
    case FI_UINT32:
        CALC_INT(uint32_t, uint32_t)
    case FI_INT64:
        CALC_INT(int64_t, uint64_t)
    case FI_UINT64:
        CALC_INT(uint64_t, uint64_t)
    case FI_INT128:
        CALC_INT(__int128, unsigned __int128)
    case FI_UINT128:
        CALC_INT(unsigned __int128, unsigned __int128)
    case FI_FLOAT:
        CALC_REAL(float)
    case FI_DOUBLE:
        CALC_REAL(double)
    case FI_LONG_DOUBLE:
        CALC_REAL(long double)
    case FI_FLOAT_COMPLEX:
        CALC_CPLX(float complex)
    case FI_DOUBLE_COMPLEX:
        CALC_CPLX(double complex)
    case FI_LONG_DOUBLE_COMPLEX:
        CALC_CPLX(long double complex)
    default:
        memcpy(nw, old, mfi_amo_dt_size(dt));
        return;
    }
}

/* Applies op to the element at dst (sz bytes); its old value goes to res.
 * Aligned 1/2/4/8-byte elements are replaced by compare-and-swap. */
#define AMO_CAS(T)                                                           \
    {                                                                        \
        T *p = (T *)dst, o = __atomic_load_n(p, __ATOMIC_ACQUIRE), n;        \
        do {                                                                 \
            if (op == FI_ATOMIC_READ)                                        \
                break;                                                       \
            amo_calc(op, dt, &o, src, cmp, &n);                              \
        } while (!__atomic_compare_exchange_n(p, &o, n, 0, __ATOMIC_ACQ_REL, \
                                              __ATOMIC_ACQUIRE));            \
        memcpy(res, &o, sizeof(o));                                          \
        return;                                                              \
    }

static void amo_apply(unsigned op, unsigned dt, uint8_t *dst, const void *src,
                      const void *cmp, void *res)
{
    size_t sz = mfi_amo_dt_size(dt);
    if (((uintptr_t)dst & (sz - 1)) == 0) {
        switch (sz) {
        case 1:
            AMO_CAS(uint8_t)
        case 2:
            AMO_CAS(uint16_t)
        case 4:
            AMO_CAS(uint32_t)
        case 8:
            AMO_CAS(uint64_t)
        default:
            break;
        }
    }
    uint8_t old[32], nw[32];
    memcpy(old, dst, sz);
    memcpy(res, old, sz);
    if (op == FI_ATOMIC_READ)
        return;
    amo_calc(op, dt, old, src, cmp, nw);
    memcpy(dst, nw, sz);
}

/* --- target side --- */

static void amo_send_resp(struct mfi_ep *ep, struct mfi_conn *c,
                          const void *payload, size_t len)
{
    if (!ep->amo_resend &&
        mfi_send_ctrl(ep, c, MFI_PKT_ATOMIC_RESP, payload, len) == 0)
        return;
    /* The send queue (or the buffer pool) is full: progress retries, in
     * order, so the initiator's request is not lost. */
    struct mfi_amo_out *o = malloc(sizeof(*o) + len);
    if (!o) {
        MFI_WARN(FI_LOG_EP_DATA, "atomic response dropped: out of memory\n");
        return;
    }
    o->next = NULL;
    o->conn = c;
    o->len = len;
    memcpy(o->data, payload, len);
    struct mfi_amo_out **pp = &ep->amo_resend;
    while (*pp)
        pp = &(*pp)->next;
    *pp = o;
}

void mfi_atomic_progress(struct mfi_ep *ep)
{
    while (ep->amo_resend) {
        struct mfi_amo_out *o = ep->amo_resend;
        if (!o->conn->dead && mfi_send_ctrl(ep, o->conn, MFI_PKT_ATOMIC_RESP,
                                            o->data, o->len) < 0)
            return; /* still full: next progress call */
        ep->amo_resend = o->next;
        free(o);
    }
}

/* Executes the request in p; returns 0 or a positive FI_E* status, and
 * the old values in out (fetching ops). */
static uint32_t amo_exec(struct mfi_ep *ep, const struct mfi_pkt *p,
                         uint8_t *out)
{
    const struct mfi_amo *a = &p->amo;
    size_t sz = mfi_amo_dt_size(a->datatype);
    if (!amo_defined(a->op, a->datatype))
        return FI_EOPNOTSUPP;
    if ((uint64_t)a->count * sz > MFI_AMO_MAX_BYTES)
        return FI_EINVAL;
    size_t len = a->count * sz;
    struct mfi_mr *mr = mfi_mr_find(ep->dom, a->key, a->addr, len);
    if (!mr || (a->op != FI_ATOMIC_READ && !mr->writable))
        return FI_EACCES;
    const uint8_t *src = mfi_amo_operands(a->op) ? p->payload : NULL;
    const uint8_t *cmp = mfi_amo_operands(a->op) == 2 ? p->payload + len : NULL;
    uint8_t *dst = (uint8_t *)(uintptr_t)a->addr;
    for (size_t i = 0; i < a->count; i++)
        amo_apply(a->op, a->datatype, dst + i * sz, src ? src + i * sz : NULL,
                  cmp ? cmp + i * sz : NULL, out + i * sz);
    return 0;
}

static void amo_rx_request(struct mfi_ep *ep, struct mfi_conn *c,
                           const struct mfi_pkt *p)
{
    uint8_t resp[sizeof(struct mfi_amo_resp) + MFI_AMO_MAX_BYTES];
    struct mfi_amo_resp r = {p->amo.cookie, 0, 0};
    r.status = amo_exec(ep, p, resp + sizeof(r));
    size_t len = sizeof(r);
    if (!r.status && (p->amo.flags & MFI_AMO_FETCH))
        len += (size_t)p->amo.count * mfi_amo_dt_size(p->amo.datatype);
    memcpy(resp, &r, sizeof(r));
    if (r.status)
        MFI_INFO(FI_LOG_EP_DATA, "refused a peer's atomic: %s\n",
                 fi_strerror((int)r.status));
    /* FI_RMA_EVENT: the target of an atomic reports it itself (no
     * notice: its provider executed it). */
    if (!r.status)
        mfi_rmaev_report(ep, p->amo.op != FI_ATOMIC_READ, FI_ATOMIC,
                         p->amo.addr,
                         (size_t)p->amo.count *
                             mfi_amo_dt_size(p->amo.datatype),
                         1);
    if (!c->dead)
        amo_send_resp(ep, c, resp, len);
}

static void amo_rx_response(struct mfi_ep *ep, struct mfi_conn *c,
                            const struct mfi_pkt *p)
{
    for (struct mfi_op **pp = &ep->amo_wait; *pp; pp = &(*pp)->next) {
        struct mfi_op *op = *pp;
        if (op->cookie != p->amo_resp.cookie || op->conn != c)
            continue;
        *pp = op->next;
        uint32_t st = p->amo_resp.status;
        /* The initiator's write or read counter counts the op when it is
         * reported, on success and on error alike (op_cntr_slot). */
        if (st)
            mfi_op_fail(ep, op,
                        st == FI_EACCES || st == FI_EINVAL ||
                                st == FI_EOPNOTSUPP
                            ? (int)st
                            : FI_EIO,
                        0, 0, 0, FI_ADDR_NOTAVAIL);
        else if (p->plen != op->len)
            mfi_op_fail(ep, op, FI_EIO, 0, 0, 0, FI_ADDR_NOTAVAIL);
        else {
            mfi_copy_to_iov(op->iov, op->iov_count, p->payload, p->plen);
            mfi_op_complete(ep, op, 0, 0, 0, FI_ADDR_NOTAVAIL);
        }
        return;
    }
    MFI_INFO(FI_LOG_EP_DATA, "atomic response for no request: dropped\n");
}

void mfi_atomic_rx(struct mfi_ep *ep, struct mfi_buf *b,
                   const struct mfi_pkt *p)
{
    if (p->kind == MFI_PKT_ATOMIC)
        amo_rx_request(ep, b->conn, p);
    else
        amo_rx_response(ep, b->conn, p);
    mfi_unexp_release(ep, b);
}

void mfi_atomic_conn_failed(struct mfi_ep *ep, struct mfi_conn *c)
{
    for (struct mfi_op **pp = &ep->amo_wait; *pp;) {
        struct mfi_op *op = *pp;
        if (op->conn != c) {
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        mfi_op_fail(ep, op, FI_EIO, 0, 0, 0, FI_ADDR_NOTAVAIL);
    }
}

void mfi_atomic_close(struct mfi_ep *ep)
{
    while (ep->amo_resend) {
        struct mfi_amo_out *o = ep->amo_resend;
        ep->amo_resend = o->next;
        free(o);
    }
    ep->amo_wait = NULL; /* the requests are freed with ep->all_ops */
}

/* --- initiator side --- */

static size_t ioc_count(const struct fi_ioc *iov, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; iov && i < n; i++)
        c += iov[i].count;
    return c;
}

/* Copies the elements of iov (sz bytes each) to out. */
static void ioc_gather(uint8_t *out, const struct fi_ioc *iov, size_t n,
                       size_t sz)
{
    for (size_t i = 0; i < n; i++) {
        memcpy(out, iov[i].addr, iov[i].count * sz);
        out += iov[i].count * sz;
    }
}

static ssize_t amo_post(struct mfi_ep *ep, int fam,
                        const struct fi_msg_atomic *msg,
                        const struct fi_ioc *cmpv, size_t cmp_n,
                        struct fi_ioc *resv, size_t res_n, uint64_t flags,
                        int inject)
{
    unsigned op = msg->op, dt = msg->datatype;
    if (!ep->enabled)
        return -FI_EOPBADSTATE;
    if (!amo_family_has(fam, op) || !amo_defined(op, dt))
        return -FI_EOPNOTSUPP;
    if (msg->rma_iov_count != 1 || !msg->rma_iov ||
        msg->iov_count > MFI_IOV_LIMIT || cmp_n > MFI_IOV_LIMIT ||
        res_n > MFI_IOV_LIMIT || (flags & FI_REMOTE_CQ_DATA))
        return -FI_EINVAL;
    size_t sz = mfi_amo_dt_size(dt);
    size_t count = op == FI_ATOMIC_READ && !msg->iov_count
                       ? msg->rma_iov[0].count
                       : ioc_count(msg->msg_iov, msg->iov_count);
    if (!count || count != msg->rma_iov[0].count || count > amo_max_count(dt))
        return -FI_EINVAL;
    if ((fam != AMO_WRITE && ioc_count(resv, res_n) != count) ||
        (fam == AMO_COMPARE && ioc_count(cmpv, cmp_n) != count))
        return -FI_EINVAL;
    if (ep->tx_inflight >= MFI_TX_SIZE) {
        mfi_ep_progress(ep);
        if (ep->tx_inflight >= MFI_TX_SIZE)
            return -FI_EAGAIN;
    }
    int err = 0;
    struct mfi_peer *peer = mfi_conn_peer(ep, msg->addr, &err);
    struct mfi_conn *c = peer ? mfi_conn_tx(ep, peer, &err) : NULL;
    if (!c)
        return err;
    struct mfi_op *o = mfi_op_get(ep);
    if (!o)
        return -FI_ENOMEM;
    o->type = MFI_OP_ATOMIC;
    o->context = msg->context;
    o->cq_flags = FI_ATOMIC | (fam == AMO_WRITE ? FI_WRITE : FI_READ);
    o->op_flags = flags;
    o->nocomp = inject || (ep->tx_selective && !(flags & FI_COMPLETION));
    o->conn = c;
    o->cookie = ++ep->next_cookie;
    if (fam != AMO_WRITE) {
        for (size_t i = 0; i < res_n; i++) {
            o->iov[i].iov_base = resv[i].addr;
            o->iov[i].iov_len = resv[i].count * sz;
        }
        o->iov_count = res_n;
        o->len = count * sz;
    }

    uint8_t req[sizeof(struct mfi_amo) + 2 * MFI_AMO_MAX_BYTES];
    struct mfi_amo a = {msg->rma_iov[0].addr,
                        msg->rma_iov[0].key,
                        o->cookie,
                        (uint32_t)count,
                        (uint8_t)op,
                        (uint8_t)dt,
                        fam != AMO_WRITE ? MFI_AMO_FETCH : 0,
                        0};
    memcpy(req, &a, sizeof(a));
    size_t len = sizeof(a);
    if (mfi_amo_operands(op)) {
        ioc_gather(req + len, msg->msg_iov, msg->iov_count, sz);
        len += count * sz;
    }
    if (mfi_amo_operands(op) == 2) {
        ioc_gather(req + len, cmpv, cmp_n, sz);
        len += count * sz;
    }
    int rc = mfi_send_ctrl(ep, c, MFI_PKT_ATOMIC, req, len);
    if (rc < 0) {
        mfi_op_put(ep, o);
        return rc == -FI_ENOMEM ? -FI_EAGAIN : rc;
    }
    o->next = ep->amo_wait;
    ep->amo_wait = o;
    ep->tx_inflight++;
    return 0;
}

static ssize_t amo_locked(struct fid_ep *fep, int fam,
                          const struct fi_msg_atomic *msg,
                          const struct fi_ioc *cmpv, size_t cmp_n,
                          struct fi_ioc *resv, size_t res_n, uint64_t flags,
                          int inject)
{
    mfi_lock(EP(fep)->dom);
    ssize_t rc = amo_post(EP(fep), fam, msg, cmpv, cmp_n, resv, res_n, flags,
                          inject);
    mfi_unlock(EP(fep)->dom);
    return rc;
}

/* A fi_msg_atomic for the non-msg entry points. */
#define AMO_MSG(iov_, desc_, n_, dest_, addr_, key_, dt_, op_, ctx_) \
    struct fi_rma_ioc rma = {(addr_), 0, (key_)};                    \
    struct fi_msg_atomic msg = {.msg_iov = (iov_),                   \
                                .desc = (desc_),                     \
                                .iov_count = (n_),                   \
                                .addr = (dest_),                     \
                                .rma_iov = &rma,                     \
                                .rma_iov_count = 1,                  \
                                .datatype = (dt_),                   \
                                .op = (op_),                         \
                                .context = (ctx_)};                  \
    rma.count = ioc_count((iov_), (n_))

static ssize_t amo_write(struct fid_ep *fep, const void *buf, size_t count,
                         void *desc, fi_addr_t dest, uint64_t addr,
                         uint64_t key, enum fi_datatype dt, enum fi_op op,
                         void *context)
{
    struct fi_ioc iov = {(void *)buf, count};
    AMO_MSG(&iov, &desc, 1, dest, addr, key, dt, op, context);
    return amo_locked(fep, AMO_WRITE, &msg, NULL, 0, NULL, 0,
                      EP(fep)->tx_op_flags, 0);
}

static ssize_t amo_writev(struct fid_ep *fep, const struct fi_ioc *iov,
                          void **desc, size_t count, fi_addr_t dest,
                          uint64_t addr, uint64_t key, enum fi_datatype dt,
                          enum fi_op op, void *context)
{
    AMO_MSG(iov, desc, count, dest, addr, key, dt, op, context);
    return amo_locked(fep, AMO_WRITE, &msg, NULL, 0, NULL, 0,
                      EP(fep)->tx_op_flags, 0);
}

static ssize_t amo_writemsg(struct fid_ep *fep, const struct fi_msg_atomic *msg,
                            uint64_t flags)
{
    return amo_locked(fep, AMO_WRITE, msg, NULL, 0, NULL, 0, flags, 0);
}

/* The operand is copied into the request at post time, so the buffer is
 * free on return. */
static ssize_t amo_inject(struct fid_ep *fep, const void *buf, size_t count,
                          fi_addr_t dest, uint64_t addr, uint64_t key,
                          enum fi_datatype dt, enum fi_op op)
{
    struct fi_ioc iov = {(void *)buf, count};
    AMO_MSG(&iov, NULL, 1, dest, addr, key, dt, op, NULL);
    return amo_locked(fep, AMO_WRITE, &msg, NULL, 0, NULL, 0, 0, 1);
}

static ssize_t amo_readwrite(struct fid_ep *fep, const void *buf, size_t count,
                             void *desc, void *result, void *result_desc,
                             fi_addr_t dest, uint64_t addr, uint64_t key,
                             enum fi_datatype dt, enum fi_op op, void *context)
{
    struct fi_ioc iov = {(void *)buf, count}, res = {result, count};
    AMO_MSG(&iov, &desc, 1, dest, addr, key, dt, op, context);
    return amo_locked(fep, AMO_FETCH, &msg, NULL, 0, &res, 1,
                      EP(fep)->tx_op_flags, 0);
}

static ssize_t amo_readwritev(struct fid_ep *fep, const struct fi_ioc *iov,
                              void **desc, size_t count, struct fi_ioc *resultv,
                              void **result_desc, size_t result_count,
                              fi_addr_t dest, uint64_t addr, uint64_t key,
                              enum fi_datatype dt, enum fi_op op, void *context)
{
    AMO_MSG(iov, desc, count, dest, addr, key, dt, op, context);
    if (op == FI_ATOMIC_READ && !rma.count)
        rma.count = ioc_count(resultv, result_count);
    return amo_locked(fep, AMO_FETCH, &msg, NULL, 0, resultv, result_count,
                      EP(fep)->tx_op_flags, 0);
}

static ssize_t amo_readwritemsg(struct fid_ep *fep,
                                const struct fi_msg_atomic *msg,
                                struct fi_ioc *resultv, void **result_desc,
                                size_t result_count, uint64_t flags)
{
    return amo_locked(fep, AMO_FETCH, msg, NULL, 0, resultv, result_count,
                      flags, 0);
}

static ssize_t amo_compwrite(struct fid_ep *fep, const void *buf, size_t count,
                             void *desc, const void *compare,
                             void *compare_desc, void *result,
                             void *result_desc, fi_addr_t dest, uint64_t addr,
                             uint64_t key, enum fi_datatype dt, enum fi_op op,
                             void *context)
{
    struct fi_ioc iov = {(void *)buf, count}, cmp = {(void *)compare, count},
                  res = {result, count};
    AMO_MSG(&iov, &desc, 1, dest, addr, key, dt, op, context);
    return amo_locked(fep, AMO_COMPARE, &msg, &cmp, 1, &res, 1,
                      EP(fep)->tx_op_flags, 0);
}

static ssize_t
amo_compwritev(struct fid_ep *fep, const struct fi_ioc *iov, void **desc,
               size_t count, const struct fi_ioc *comparev, void **compare_desc,
               size_t compare_count, struct fi_ioc *resultv, void **result_desc,
               size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
               enum fi_datatype dt, enum fi_op op, void *context)
{
    AMO_MSG(iov, desc, count, dest, addr, key, dt, op, context);
    return amo_locked(fep, AMO_COMPARE, &msg, comparev, compare_count, resultv,
                      result_count, EP(fep)->tx_op_flags, 0);
}

static ssize_t amo_compwritemsg(struct fid_ep *fep,
                                const struct fi_msg_atomic *msg,
                                const struct fi_ioc *comparev,
                                void **compare_desc, size_t compare_count,
                                struct fi_ioc *resultv, void **result_desc,
                                size_t result_count, uint64_t flags)
{
    return amo_locked(fep, AMO_COMPARE, msg, comparev, compare_count, resultv,
                      result_count, flags, 0);
}

/* --- valid and query --- */

static int amo_valid(int fam, enum fi_datatype dt, enum fi_op op, size_t *count)
{
    if (!amo_family_has(fam, op) || !amo_defined(op, dt))
        return -FI_EOPNOTSUPP;
    if (count)
        *count = amo_max_count(dt);
    return 0;
}

static int amo_writevalid(struct fid_ep *fep, enum fi_datatype dt,
                          enum fi_op op, size_t *count)
{
    return amo_valid(AMO_WRITE, dt, op, count);
}

static int amo_readwritevalid(struct fid_ep *fep, enum fi_datatype dt,
                              enum fi_op op, size_t *count)
{
    return amo_valid(AMO_FETCH, dt, op, count);
}

static int amo_compwritevalid(struct fid_ep *fep, enum fi_datatype dt,
                              enum fi_op op, size_t *count)
{
    return amo_valid(AMO_COMPARE, dt, op, count);
}

int mfi_query_atomic(struct fid_domain *domain, enum fi_datatype dt,
                     enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
    if ((flags & FI_FETCH_ATOMIC) && (flags & FI_COMPARE_ATOMIC))
        return -FI_EINVAL;
    int fam = (flags & FI_COMPARE_ATOMIC) ? AMO_COMPARE
              : (flags & FI_FETCH_ATOMIC) ? AMO_FETCH
                                          : AMO_WRITE;
    size_t count;
    int rc = amo_valid(fam, dt, op, &count);
    if (rc == 0 && attr) {
        attr->size = mfi_amo_dt_size(dt);
        attr->count = count;
    }
    return rc;
}

struct fi_ops_atomic mfi_atomic_ops = {
    .size = sizeof(struct fi_ops_atomic),
    .write = amo_write,
    .writev = amo_writev,
    .writemsg = amo_writemsg,
    .inject = amo_inject,
    .readwrite = amo_readwrite,
    .readwritev = amo_readwritev,
    .readwritemsg = amo_readwritemsg,
    .compwrite = amo_compwrite,
    .compwritev = amo_compwritev,
    .compwritemsg = amo_compwritemsg,
    .writevalid = amo_writevalid,
    .readwritevalid = amo_readwritevalid,
    .compwritevalid = amo_compwritevalid,
};
