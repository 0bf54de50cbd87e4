/*
 * mroce_fi_ext.h - the mroce provider's own extension to libfabric:
 * introspection of a domain's connections, for tests and measurements
 * (libfabric applications need none of it).  Opened with
 *
 *   struct mroce_fi_conn_ops *ops;
 *   fi_open_ops(&domain->fid, MROCE_FI_CONN_OPS, 0, (void **)&ops, NULL);
 *
 * Header-only and free of provider internals, so a program that loads
 * the provider through FI_PROVIDER_PATH can include it.
 */
#ifndef MROCE_FI_EXT_H
#define MROCE_FI_EXT_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fi_domain.h>

#define MROCE_FI_CONN_OPS "mroce_conn_ops_v1"

/* A domain's libmroce QPs, counted over all its endpoints. */
struct mroce_fi_conn_stats {
    uint32_t endpoints; /* endpoints open */
    uint32_t devices;   /* libmroce devices (UDP ports) they use */
    uint32_t qps;       /* QPs that are connected or connecting (not
                           listening, not failed) */
    uint32_t listening; /* QPs listening for new peers */
    uint32_t peer_qps;  /* of qps, those whose peer endpoint belongs to
                           the domain named by the call's peer name */
};

struct mroce_fi_conn_ops {
    size_t size; /* sizeof(struct mroce_fi_conn_ops) */
    /* Fills *st for domain; peer_qps counts the QPs to the domain of the
     * endpoint whose name (fi_getname) is peer, peer_len bytes (NULL:
     * 0).  0, or -FI_EINVAL for a name that is not the provider's. */
    int (*stats)(struct fid_domain *domain, const void *peer, size_t peer_len,
                 struct mroce_fi_conn_stats *st);
};

/* Secure mode (docs/spec/security.md section 6) of a domain opened with
 * FI_MROCE_KEY_FILE (or libmroce's MROCE_KEY_FILE / MROCE_KEY):
 *
 *   struct mroce_fi_sec_ops *sec;
 *   fi_open_ops(&domain->fid, MROCE_FI_SEC_OPS, 0, (void **)&sec, NULL);
 */
#define MROCE_FI_SEC_OPS "mroce_sec_ops_v1"

/* Secure-mode counters, summed over a domain's devices (libmroce's
 * struct mroce_ep_counters of the same names). */
struct mroce_fi_sec_counters {
    uint64_t drop_auth;   /* a tag that did not verify */
    uint64_t drop_key;    /* a key id the receiver does not hold */
    uint64_t drop_replay; /* a Seq seen before or below the window */
    uint64_t drop_mode;   /* clear on a secure QP, or the reverse */
    uint64_t rekeys;      /* receive sides that moved to a new master key */
};

struct mroce_fi_sec_ops {
    size_t size; /* sizeof(struct mroce_fi_sec_ops) */
    /* Master key rotation under traffic (SEC-31..SEC-33), for every
     * device of the domain: first every domain of the secure domain adds
     * the next generation gen (key_file: a key file; NULL: libmroce's
     * MROCE_KEY_FILE, else MROCE_KEY, read again), then each uses it.
     * 0, or
     * -FI_EINVAL: the domain is clear, the key unusable, gen in use (add)
     * or not added (use). */
    int (*add_key)(struct fid_domain *domain, uint8_t gen,
                   const char *key_file);
    int (*use_key)(struct fid_domain *domain, uint8_t gen);
    /* Fills *c; 0 or -FI_EINVAL. */
    int (*counters)(struct fid_domain *domain, struct mroce_fi_sec_counters *c);
};

#endif /* MROCE_FI_EXT_H */
