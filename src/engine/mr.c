/*
 * mr.c - memory regions: registration, keys, and the checks that keep every
 * remote access inside registered memory with the right permission.
 *
 * The responder calls mre_mr_check_remote() on every WRITE, READ and atomic
 * packet before it touches memory (SEM-*, SEC-*).  Registration checks what
 * arithmetic can (SEM-28 (a)-(c): no empty range, no range past the end of
 * the address space, no remote write without local write); whether the
 * memory is mapped is for the layer that can make OS calls (libmroce).  Keys are a slot index and
 * an 8-bit random generation, so a stale key from a deregistered region is
 * unlikely to name a new one.  The SGE helpers copy between a message offset
 * and a scatter-gather list; their callers have checked the lists at post
 * time, so they only need to respect the lists' lengths.
 */
#include "engine_int.h"
#include "../wire/seeded_fault.h"

mre_mr *mre_mr_lookup(mre_ep *ep, uint32_t key)
{
    uint32_t slot = key >> 8;
    if (slot >= ep->nmr_slots)
        return NULL;
    mre_mr *mr = ep->mrs[slot];
    return mr && mr->key == key ? mr : NULL;
}

mre_mr *mre_mr_check_remote(mre_ep *ep, uint32_t pd, uint32_t rkey,
                            uint64_t addr, uint64_t len, unsigned access,
                            uint8_t *nak)
{
    mre_mr *mr = mre_mr_lookup(ep, rkey);
    /* A region of another protection domain does not exist for this QP. */
    if (!mr || mr->pd != pd) {
        *nak = MROCE_NAK_REMOTE_ACCESS_KEY;
        return NULL;
    }
    uint64_t start = (uint64_t)(uintptr_t)mr->addr;
    /* Overflow-safe containment: addr >= start and addr+len <= start+len. */
    if (addr < start || addr - start > mr->len ||
        len > mr->len - (addr - start) + MROCE_SEEDED_FAULT(WRITE_PAST_END)) {
        *nak = MROCE_SEEDED_FAULT(NAK_WRONG_CODE)
                   ? MROCE_NAK_REMOTE_ACCESS_KEY
                   : MROCE_NAK_REMOTE_ACCESS_BOUNDS;
        return NULL;
    }
    if ((mr->access & access) != access && !MROCE_SEEDED_FAULT(IGNORE_ACCESS)) {
        *nak = MROCE_NAK_REMOTE_ACCESS_PERM;
        return NULL;
    }
    return mr;
}

int mre_mr_reg(mre_ep *ep, void *addr, size_t len, unsigned access,
               mre_mr **pmr)
{
    return mre_mr_reg_pd(ep, 0, addr, len, access, pmr);
}

int mre_mr_reg_check(const void *addr, size_t len, unsigned access)
{
    if (!addr || !len || (access & ~15u))
        return MROCE_EINVAL;
    /* Remote write or atomic access needs local write, as in verbs
     * (SEM-28 (b)). */
    if ((access & (MROCE_ACCESS_REMOTE_WRITE | MROCE_ACCESS_REMOTE_ATOMIC)) &&
        !(access & MROCE_ACCESS_LOCAL_WRITE))
        return MROCE_EINVAL;
    /* The last byte must not lie past the end of the address space: a
     * range that wraps would pass mre_mr_check_remote() for every
     * address above addr (SEM-28 (c), SEC-9). */
    if (len - 1 > UINTPTR_MAX - (uintptr_t)addr)
        return MROCE_EFAULT;
    return 0;
}

int mre_mr_reg_pd(mre_ep *ep, uint32_t pd, void *addr, size_t len,
                  unsigned access, mre_mr **pmr)
{
    if (!ep || !pmr)
        return MROCE_EINVAL;
    int rc = mre_mr_reg_check(addr, len, access);
    if (rc < 0)
        return rc;
    uint32_t slot = 0;
    while (slot < ep->nmr_slots && ep->mrs[slot])
        slot++;
    if (slot == ep->nmr_slots) {
        uint32_t n = ep->nmr_slots ? ep->nmr_slots * 2 : 64;
        if (n > (1u << 24))
            return MROCE_ENOMEM;
        mre_mr **t = mre_mem_calloc(&ep->mem, n, sizeof(*t));
        if (!t)
            return MROCE_ENOMEM;
        if (ep->nmr_slots)
            memcpy(t, ep->mrs, ep->nmr_slots * sizeof(*t));
        mre_mem_free(&ep->mem, ep->mrs);
        ep->mrs = t;
        ep->nmr_slots = n;
    }
    mre_mr *mr = mre_mem_calloc(&ep->mem, 1, sizeof(*mr));
    if (!mr)
        return MROCE_ENOMEM;
    uint8_t gen = 0;
    ep->cfg.rand(&gen, 1, ep->cfg.rand_user);
    mr->ep = ep;
    mr->addr = addr;
    mr->len = len;
    mr->access = access;
    mr->pd = pd;
    mr->key = slot << 8 | gen;
    ep->mrs[slot] = mr;
    *pmr = mr;
    return 0;
}

int mre_mr_dereg(mre_mr *mr)
{
    if (!mr)
        return MROCE_EINVAL;
    if (mr->refs)
        return MROCE_EBUSY;
    mre_ep *ep = mr->ep;
    ep->mrs[mr->key >> 8] = NULL;
    mre_mem_free(&ep->mem, mr);
    return 0;
}

void mre_mr_free_all(mre_ep *ep)
{
    for (uint32_t i = 0; i < ep->nmr_slots; i++)
        mre_mem_free(&ep->mem, ep->mrs[i]);
    mre_mem_free(&ep->mem, ep->mrs);
    ep->mrs = NULL;
    ep->nmr_slots = 0;
}

uint32_t mre_mr_lkey(const mre_mr *mr)
{
    return mr ? mr->key : 0;
}
uint32_t mre_mr_rkey(const mre_mr *mr)
{
    return mr ? mr->key : 0;
}

const uint8_t *mre_mr_sge_span(const struct mroce_sge *sge, int n, uint32_t off,
                               uint32_t len)
{
    for (int i = 0; i < n; i++) {
        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        if (sge[i].length - off < len)
            return NULL;
        return (const uint8_t *)(uintptr_t)sge[i].addr + off;
    }
    return NULL;
}

void mre_mr_sge_gather(const struct mroce_sge *sge, int n, uint32_t off,
                       uint8_t *dst, uint32_t len)
{
    for (int i = 0; i < n && len; i++) {
        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        uint32_t k = sge[i].length - off;
        if (k > len)
            k = len;
        memcpy(dst, (const uint8_t *)(uintptr_t)sge[i].addr + off, k);
        dst += k;
        len -= k;
        off = 0;
    }
}

uint32_t mre_mr_sge_gather_crc(const struct mroce_sge *sge, int n, uint32_t off,
                               uint8_t *dst, uint32_t len, uint32_t crc)
{
    for (int i = 0; i < n && len; i++) {
        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        uint32_t k = sge[i].length - off;
        if (k > len)
            k = len;
        crc = mrw_pkt_crc_copy(crc, dst,
                               (const uint8_t *)(uintptr_t)sge[i].addr + off,
                               k);
        dst += k;
        len -= k;
        off = 0;
    }
    return crc;
}

void mre_mr_sge_scatter(const struct mroce_sge *sge, int n, uint32_t off,
                        const uint8_t *src, uint32_t len)
{
    for (int i = 0; i < n && len; i++) {
        if (off >= sge[i].length) {
            off -= sge[i].length;
            continue;
        }
        uint32_t k = sge[i].length - off;
        if (k > len)
            k = len;
#ifdef MROCE_MEASURE_NO_PLACE
        /* Measurement builds only (bench/limits_fi.sh): what placing bulk
         * payloads costs; runs under 4 KiB (control messages) are placed. */
        if (k < 4096)
#endif
            memcpy((uint8_t *)(uintptr_t)sge[i].addr + off, src, k);
        src += k;
        len -= k;
        off = 0;
    }
}
