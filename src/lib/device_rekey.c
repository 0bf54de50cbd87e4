/*
 * device_rekey.c - a secure device's new master key under traffic
 * (docs/spec/security.md SEC-31..SEC-33): installed for receiving first
 * (mroce_device_add_key), then sent under (mroce_device_use_key), when
 * the engine moves every connection to its next epoch under it.
 */
#include <stdlib.h>
#include <string.h>

#include "lib_int.h"
#include "secure_evp.h"

int mroce_device_add_key(mroce_device *dev, uint8_t gen, const char *key_file)
{
    uint8_t key[LIB_SEC_KEY_MAX];
    const char *file = key_file, *hex = NULL;
    int n, rc = lib_check(dev, MAGIC_DEV);
    if (rc < 0)
        return rc;
    if (!dev->sec)
        return MROCE_EINVAL; /* a clear device has no key to replace */
    if (!file) {
        file = getenv("MROCE_KEY_FILE");
        if (!file || !*file)
            hex = getenv("MROCE_KEY");
    }
    if (file && *file)
        n = lib_sec_read_key_file(file, key);
    else
        n = hex && *hex ? lib_sec_parse_hex(hex, key) : MROCE_EINVAL;
    if (n < 0)
        return MROCE_EINVAL;
    lib_lock(dev);
    rc = lib_sec_add_key(dev->sec, gen, key, (size_t)n);
    lib_unlock(dev);
    memset(key, 0, sizeof key);
    return rc;
}

int mroce_device_use_key(mroce_device *dev, uint8_t gen)
{
    int rc = lib_check(dev, MAGIC_DEV);
    if (rc < 0)
        return rc;
    if (!dev->sec)
        return MROCE_EINVAL;
    lib_lock(dev);
    rc = lib_sec_use_key(dev->sec, gen);
    if (rc == 0)
        rc = mre_ep_sec_use_gen(dev->ep, gen);
    lib_unlock(dev);
    return rc;
}
