/*
 * mr.h - memory regions and scatter/gather lists (mr.c): key lookup, the
 * remote access check, and copies between a message offset and an SGE
 * list.
 */
#ifndef MROCE_ENGINE_MR_H
#define MROCE_ENGINE_MR_H

#include <stdint.h>

/* The registered region whose key (lkey == rkey) is key, or NULL. */
mre_mr *mre_mr_lookup(mre_ep *ep, uint32_t key);

/* Check a peer's access to [addr, addr+len) under rkey with rights access
 * (enum mroce_access) in protection domain pd.  Returns the region, or
 * NULL with *nak set to the NAK code that says why: REMOTE_ACCESS_KEY (no
 * such region in pd), REMOTE_ACCESS_BOUNDS (outside it), REMOTE_ACCESS_PERM
 * (rights missing). */
mre_mr *mre_mr_check_remote(mre_ep *ep, uint32_t pd, uint32_t rkey,
                            uint64_t addr, uint64_t len, unsigned access,
                            uint8_t *nak);

/* Free every region of the endpoint and its slot table (mre_ep_del()). */
void mre_mr_free_all(mre_ep *ep);

/* The memory of bytes [off, off+len) of the n-entry SGE list if one SGE
 * holds them all (zero-copy transmit), else NULL. */
const uint8_t *mre_mr_sge_span(const struct mroce_sge *sge, int n, uint32_t off,
                               uint32_t len);

/* Copy len bytes from message offset off of the SGE list to dst. */
void mre_mr_sge_gather(const struct mroce_sge *sge, int n, uint32_t off,
                       uint8_t *dst, uint32_t len);

/* The same, continuing the packet CRC crc over the bytes as it copies them
 * (mrw_pkt_crc_copy); returns the CRC. */
uint32_t mre_mr_sge_gather_crc(const struct mroce_sge *sge, int n, uint32_t off,
                               uint8_t *dst, uint32_t len, uint32_t crc);

/* Copy len bytes from src to message offset off of the SGE list. */
void mre_mr_sge_scatter(const struct mroce_sge *sge, int n, uint32_t off,
                        const uint8_t *src, uint32_t len);

#endif /* MROCE_ENGINE_MR_H */
