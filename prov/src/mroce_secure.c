/*
 * mroce_secure.c - the provider's secure mode (docs/spec/security.md
 * section 6): the FI_MROCE_KEY_FILE, FI_MROCE_KEY_GEN and
 * FI_MROCE_SECURE_SUITE parameters handed to every libmroce device a
 * domain opens (each unset: libmroce's MROCE_KEY_FILE / MROCE_KEY,
 * MROCE_KEY_GEN and MROCE_SECURE_SUITE apply), and the MROCE_FI_SEC_OPS
 * extension (mroce_fi_ext.h) that rotates the master key of every device
 * of a domain under traffic (SEC-31..SEC-33).
 *
 * The parameters are read at each device open, not once, so that a
 * program may open domains of different secure domains one after the
 * other.  A secure domain's endpoints are all secure: libfabric has no
 * per-connection security attribute, so the provider does not offer
 * SEC-34's per-QP mode.
 */
#include <string.h>

#include "mroce_fi.h"
#include "mroce_fi_ext.h"

int mfi_sec_attr(struct mroce_device_attr *a)
{
    char *s = NULL;
    int gen;
    fi_param_get_str(&mfi_prov, "key_file", (char **)&a->key_file); /* SEC-12 */
    if (fi_param_get_str(&mfi_prov, "secure_suite", &s) == FI_SUCCESS && s &&
        *s) {
        if (!strcmp(s, "aes128gcm"))
            a->secure_suite = 1;
        else if (!strcmp(s, "aes256gcm"))
            a->secure_suite = 2;
        else if (!strcmp(s, "gmac"))
            a->secure_suite = 3;
        else {
            MFI_WARN(FI_LOG_DOMAIN,
                     "FI_MROCE_SECURE_SUITE=%s unknown (aes128gcm, "
                     "aes256gcm, gmac)\n",
                     s);
            return -FI_EINVAL;
        }
    }
    if (fi_param_get_int(&mfi_prov, "key_gen", &gen) == FI_SUCCESS) {
        if (gen < 0 || gen > 255) {
            MFI_WARN(FI_LOG_DOMAIN, "FI_MROCE_KEY_GEN=%d not in 0-255\n", gen);
            return -FI_EINVAL;
        }
        a->key_gen = (uint8_t)gen;
    }
    return 0;
}

/* Applies add (or use) to the domain's device and to every device of its
 * own an endpoint holds, open or closed; the first failure stops it. */
static int sec_each(struct fid_domain *domain, int add, uint8_t gen,
                    const char *key_file)
{
    struct mfi_domain *d = (struct mfi_domain *)domain;
    if (!d || d->dom.fid.fclass != FI_CLASS_DOMAIN)
        return -FI_EINVAL;
    mfi_lock(d);
    int rc = add ? mroce_device_add_key(d->dev, gen, key_file)
                 : mroce_device_use_key(d->dev, gen);
    for (int list = 0; list < 2 && rc == 0; list++)
        for (struct mfi_ep *ep = list ? d->zombies : d->eps; ep && rc == 0;
             ep = ep->dom_next)
            if (ep->own_dev)
                rc = add ? mroce_device_add_key(ep->dev, gen, key_file)
                         : mroce_device_use_key(ep->dev, gen);
    mfi_unlock(d);
    return rc == 0 ? 0 : -FI_EINVAL;
}

static int sec_add_key(struct fid_domain *domain, uint8_t gen,
                       const char *key_file)
{
    return sec_each(domain, 1, gen, key_file);
}

static int sec_use_key(struct fid_domain *domain, uint8_t gen)
{
    return sec_each(domain, 0, gen, NULL);
}

static void sec_add_counters(mroce_device *dev, struct mroce_fi_sec_counters *c)
{
    struct mroce_ep_counters ec;
    mroce_device_get_counters(dev, &ec);
    c->drop_auth += ec.drop_auth;
    c->drop_key += ec.drop_key;
    c->drop_replay += ec.drop_replay;
    c->drop_mode += ec.drop_mode;
    c->rekeys += ec.sec_rekeys;
}

/* Sums the secure-mode counters of the domain's devices. */
static int sec_counters(struct fid_domain *domain,
                        struct mroce_fi_sec_counters *c)
{
    struct mfi_domain *d = (struct mfi_domain *)domain;
    if (!d || !c || d->dom.fid.fclass != FI_CLASS_DOMAIN)
        return -FI_EINVAL;
    memset(c, 0, sizeof(*c));
    mfi_lock(d);
    sec_add_counters(d->dev, c);
    for (int list = 0; list < 2; list++)
        for (struct mfi_ep *ep = list ? d->zombies : d->eps; ep;
             ep = ep->dom_next)
            if (ep->own_dev)
                sec_add_counters(ep->dev, c);
    mfi_unlock(d);
    return 0;
}

static struct mroce_fi_sec_ops sec_ops = {
    .size = sizeof(struct mroce_fi_sec_ops),
    .add_key = sec_add_key,
    .use_key = sec_use_key,
    .counters = sec_counters,
};

void *mfi_sec_ops(void)
{
    return &sec_ops;
}
