/*
 * secure_evp.c - the crypto behind secure mode in libmroce: the engine's
 * mre_crypto callbacks implemented with OpenSSL's libcrypto (EVP AES-GCM,
 * which uses AES-NI and VAES/VPCLMULQDQ where the CPU has them; HKDF and
 * HMAC with SHA-256), and reading the master key (SEC-12).
 *
 * A key handle is an EVP_CIPHER_CTX keyed once: sealing and opening set only
 * the nonce, so the AES key schedule and GHASH key are computed once per
 * connection and epoch, not per packet.  The cipher is fetched once per
 * domain (no implicit fetch per key), and the per-packet calls are the
 * fewest OpenSSL 3 allows: the nonce alone through EVP_*Init_ex2, the AAD
 * and the data in place, the final call, and the tag through the
 * provider's parameter directly rather than the legacy ctrl.
 *
 * A domain holds up to two master keys, each with its generation (SEC-31):
 * the one it sends under and the one before or after it, so that a new
 * master key replaces the old under traffic (SEC-32).
 */
#include "secure_evp.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <mroce/wire.h>

#define SEC_SALT "MetaRoCE v1"
#define SEC_LABEL_HS "mroce handshake"

struct lib_master {
    uint8_t valid;
    uint8_t gen;
    size_t key_len;
    uint8_t key[LIB_SEC_KEY_MAX]; /* the master key */
    uint8_t k_hs[32];             /* SEC-14 */
};

struct lib_sec {
    uint8_t suite;
    uint8_t tx_gen; /* the generation sent under */
    struct lib_master m[2];
    EVP_CIPHER *cipher; /* the suite's AES-GCM, fetched once */
};

static struct lib_master *master_of(struct lib_sec *s, uint8_t gen)
{
    for (int i = 0; i < 2; i++)
        if (s->m[i].valid && s->m[i].gen == gen)
            return &s->m[i];
    return NULL;
}

/* HKDF-SHA256 (extract and expand) of the master key with info. */
static int hkdf(const struct lib_master *s, const uint8_t *info,
                size_t info_len, uint8_t *out, size_t out_len)
{
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *kc = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
    OSSL_PARAM p[5];
    int ok = 0;
    if (kc) {
        p[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST,
                                                (char *)"SHA256", 0);
        p[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY,
                                                 (void *)s->key, s->key_len);
        p[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
                                                 (void *)SEC_SALT,
                                                 sizeof(SEC_SALT) - 1);
        p[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO,
                                                 (void *)info, info_len);
        p[4] = OSSL_PARAM_construct_end();
        ok = EVP_KDF_derive(kc, out, out_len, p) == 1;
    }
    EVP_KDF_CTX_free(kc);
    EVP_KDF_free(kdf);
    return ok ? 0 : -1;
}

static int cb_key_new_gen(void *user, uint8_t gen, uint8_t suite,
                          const uint8_t *info, size_t info_len, void **key)
{
    struct lib_sec *s = user;
    const struct lib_master *m = master_of(s, gen);
    uint8_t k[32];
    size_t kl = suite == MROCE_SUITE_AES256_GCM ? 32 : 16;
    EVP_CIPHER_CTX *c = NULL;
    *key = NULL;
    if (!m || suite != s->suite || hkdf(m, info, info_len, k, kl) < 0)
        return -1;
    c = EVP_CIPHER_CTX_new();
    if (!c || EVP_CipherInit_ex2(c, s->cipher, k, NULL, 1, NULL) != 1) {
        EVP_CIPHER_CTX_free(c);
        OPENSSL_cleanse(k, sizeof k);
        return -1;
    }
    OPENSSL_cleanse(k, sizeof k);
    *key = c;
    return 0;
}

static int cb_key_new(void *user, uint8_t suite, const uint8_t *info,
                      size_t info_len, void **key)
{
    struct lib_sec *s = user;
    return cb_key_new_gen(user, s->tx_gen, suite, info, info_len, key);
}

static void cb_key_free(void *user, void *key)
{
    (void)user;
    EVP_CIPHER_CTX_free(key);
}

static int cb_seal(void *user, void *key, const uint8_t *nonce,
                   const uint8_t *aad, size_t aad_len, const uint8_t *in,
                   size_t len, uint8_t *out, uint8_t *tag)
{
    EVP_CIPHER_CTX *c = key;
    OSSL_PARAM p[2] = {OSSL_PARAM_construct_octet_string(
                           OSSL_CIPHER_PARAM_AEAD_TAG, tag, MROCE_SEC_TAG_LEN),
                       OSSL_PARAM_END};
    int n;
    (void)user;
    if (aad_len > INT32_MAX || len > INT32_MAX ||
        EVP_EncryptInit_ex2(c, NULL, NULL, nonce, NULL) != 1 ||
        EVP_EncryptUpdate(c, NULL, &n, aad, (int)aad_len) != 1 ||
        (len && EVP_EncryptUpdate(c, out, &n, in, (int)len) != 1) ||
        EVP_EncryptFinal_ex(c, out + len, &n) != 1 ||
        EVP_CIPHER_CTX_get_params(c, p) != 1)
        return -1;
    return 0;
}

static int cb_open(void *user, void *key, const uint8_t *nonce,
                   const uint8_t *aad, size_t aad_len, const uint8_t *in,
                   size_t len, uint8_t *out, const uint8_t *tag)
{
    EVP_CIPHER_CTX *c = key;
    OSSL_PARAM p[2] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG,
                                          (void *)tag, MROCE_SEC_TAG_LEN),
        OSSL_PARAM_END};
    int n;
    (void)user;
    if (aad_len > INT32_MAX || len > INT32_MAX ||
        EVP_DecryptInit_ex2(c, NULL, NULL, nonce, NULL) != 1 ||
        EVP_DecryptUpdate(c, NULL, &n, aad, (int)aad_len) != 1 ||
        (len && EVP_DecryptUpdate(c, out, &n, in, (int)len) != 1) ||
        EVP_CIPHER_CTX_set_params(c, p) != 1 ||
        EVP_DecryptFinal_ex(c, out ? out + len : NULL, &n) != 1)
        return -1;
    return 0;
}

static int hs_mac_of(const struct lib_master *m, const uint8_t *msg, size_t len,
                     uint8_t *mac)
{
    uint8_t full[32];
    unsigned int n = 0;
    if (!m ||
        !HMAC(EVP_sha256(), m->k_hs, sizeof m->k_hs, msg, len, full, &n) ||
        n != sizeof full)
        return -1;
    memcpy(mac, full, MROCE_SEC_MAC_LEN);
    return 0;
}

static int cb_hs_mac(void *user, const uint8_t *msg, size_t len, uint8_t *mac)
{
    struct lib_sec *s = user;
    return hs_mac_of(master_of(s, s->tx_gen), msg, len, mac);
}

/* SEC-33: a CONNECT MAC'd under either master key held. */
static int cb_hs_check(void *user, const uint8_t *msg, size_t len,
                       const uint8_t *mac)
{
    struct lib_sec *s = user;
    uint8_t want[MROCE_SEC_MAC_LEN];
    for (int i = 0; i < 2; i++)
        if (s->m[i].valid && hs_mac_of(&s->m[i], msg, len, want) == 0 &&
            CRYPTO_memcmp(want, mac, MROCE_SEC_MAC_LEN) == 0)
            return 0;
    return -1;
}

/* Fills m with key, generation gen, and its handshake key. */
static int master_set(struct lib_master *m, uint8_t gen, const uint8_t *key,
                      size_t len)
{
    OPENSSL_cleanse(m, sizeof(*m));
    m->gen = gen;
    m->key_len = len;
    memcpy(m->key, key, len);
    if (hkdf(m, (const uint8_t *)SEC_LABEL_HS, sizeof(SEC_LABEL_HS) - 1,
             m->k_hs, sizeof m->k_hs) < 0) {
        OPENSSL_cleanse(m, sizeof(*m));
        return MROCE_ENOMEM;
    }
    m->valid = 1;
    return 0;
}

int lib_sec_add_key(struct lib_sec *s, uint8_t gen, const uint8_t *key,
                    size_t len)
{
    if (!s || len < LIB_SEC_KEY_MIN || len > LIB_SEC_KEY_MAX ||
        gen == s->tx_gen)
        return MROCE_EINVAL;
    /* The slot not sent under: the older key, or gen's own. */
    int i = s->m[0].valid && s->m[0].gen == s->tx_gen ? 1 : 0;
    return master_set(&s->m[i], gen, key, len);
}

int lib_sec_use_key(struct lib_sec *s, uint8_t gen)
{
    if (!s || !master_of(s, gen))
        return MROCE_EINVAL;
    s->tx_gen = gen;
    return 0;
}

uint8_t lib_sec_tx_gen(const struct lib_sec *s)
{
    return s->tx_gen;
}

int lib_sec_new(uint8_t suite, uint8_t gen, const uint8_t *key, size_t len,
                struct lib_sec **out)
{
    *out = NULL;
    if (len < LIB_SEC_KEY_MIN || len > LIB_SEC_KEY_MAX ||
        suite < MROCE_SUITE_AES128_GCM || suite > MROCE_SUITE_AES128_GMAC)
        return MROCE_EINVAL;
    struct lib_sec *s = calloc(1, sizeof(*s));
    if (!s)
        return MROCE_ENOMEM;
    s->suite = suite;
    s->tx_gen = gen;
    s->cipher = EVP_CIPHER_fetch(NULL,
                                 suite == MROCE_SUITE_AES256_GCM
                                     ? "AES-256-GCM"
                                     : "AES-128-GCM",
                                 NULL);
    if (!s->cipher || master_set(&s->m[0], gen, key, len) < 0) {
        lib_sec_free(s);
        return MROCE_ENOMEM;
    }
    *out = s;
    return 0;
}

void lib_sec_free(struct lib_sec *s)
{
    if (!s)
        return;
    EVP_CIPHER_free(s->cipher);
    OPENSSL_cleanse(s, sizeof(*s));
    free(s);
}

void lib_sec_fill(struct lib_sec *s, struct mre_ep_config *cfg)
{
    cfg->sec_suite = s->suite;
    cfg->crypto.key_new = cb_key_new;
    cfg->crypto.key_free = cb_key_free;
    cfg->crypto.seal = cb_seal;
    cfg->crypto.open = cb_open;
    cfg->crypto.hs_mac = cb_hs_mac;
    cfg->crypto.key_new_gen = cb_key_new_gen;
    cfg->crypto.hs_check = cb_hs_check;
    cfg->crypto.user = s;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int lib_sec_parse_hex(const char *hex, uint8_t *key)
{
    size_t n = 0;
    const char *p = hex;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    while (hexval(p[0]) >= 0) {
        if (hexval(p[1]) < 0 || n == LIB_SEC_KEY_MAX)
            return MROCE_EINVAL;
        key[n++] = (uint8_t)(hexval(p[0]) << 4 | hexval(p[1]));
        p += 2;
    }
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p || n < LIB_SEC_KEY_MIN)
        return MROCE_EINVAL;
    return (int)n;
}

int lib_sec_read_key_file(const char *path, uint8_t *key)
{
    char buf[4 * LIB_SEC_KEY_MAX + 2];
    struct stat st;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "libmroce: key file %s: %s\n", path, strerror(errno));
        return MROCE_EINVAL;
    }
    if (fstat(fileno(f), &st) < 0 || (st.st_mode & 077)) {
        fprintf(stderr,
                "libmroce: key file %s: readable by others (chmod 600)\n",
                path);
        fclose(f);
        return MROCE_EINVAL;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    int rc = lib_sec_parse_hex(buf, key);
    OPENSSL_cleanse(buf, sizeof buf);
    if (rc < 0)
        fprintf(stderr, "libmroce: key file %s: want 32 to 128 hex digits\n",
                path);
    return rc;
}

uint8_t lib_sec_suite_parse(const char *s)
{
    if (!s || !strcmp(s, "aes128gcm") || !strcmp(s, "1"))
        return MROCE_SUITE_AES128_GCM;
    if (!strcmp(s, "aes256gcm") || !strcmp(s, "2"))
        return MROCE_SUITE_AES256_GCM;
    if (!strcmp(s, "gmac") || !strcmp(s, "3"))
        return MROCE_SUITE_AES128_GMAC;
    return 0;
}
