/*
 * secure_evp.h - libmroce's secure mode crypto: the engine's mre_crypto
 * callbacks over OpenSSL's libcrypto (EVP AES-GCM, HKDF-SHA256, HMAC), and
 * the master key from the device attributes or the environment
 * (docs/spec/security.md SEC-12..SEC-16).
 */
#ifndef MROCE_SECURE_EVP_H
#define MROCE_SECURE_EVP_H

#include <mroce/engine.h>
#include <stddef.h>
#include <stdint.h>

#define LIB_SEC_KEY_MIN 16
#define LIB_SEC_KEY_MAX 64

/* One secure domain's master key, with the PRK and handshake key derived
 * from it. */
struct lib_sec;

/* lib_sec_new derives the keys of SEC-13/SEC-14 from key[0..len) for suite
 * (enum mrw_sec_suite); that key is generation gen (SEC-31), the one sent
 * under.  0, MROCE_EINVAL (length, suite), MROCE_ENOMEM. */
int lib_sec_new(uint8_t suite, uint8_t gen, const uint8_t *key, size_t len,
                struct lib_sec **out);
/* Master key rotation (SEC-31..SEC-33), from the key of lib_sec_new.
 * lib_sec_add_key installs key[0..len) as generation gen,
 * for receiving (and for handshakes MAC'd under it), in place of the key
 * not sent under; lib_sec_use_key makes gen the one sent under (then
 * mre_ep_sec_use_gen tells the engine).  0 or MROCE_EINVAL (gen is the
 * one sent under / not held, bad length); add may return MROCE_ENOMEM. */
int lib_sec_add_key(struct lib_sec *s, uint8_t gen, const uint8_t *key,
                    size_t len);
int lib_sec_use_key(struct lib_sec *s, uint8_t gen);
uint8_t lib_sec_tx_gen(const struct lib_sec *s);
/* lib_sec_free wipes and frees it (NULL is fine). */
void lib_sec_free(struct lib_sec *s);
/* lib_sec_fill points cfg's secure mode at s: sec_suite and crypto. */
void lib_sec_fill(struct lib_sec *s, struct mre_ep_config *cfg);

/* lib_sec_parse_hex reads 32..128 hex digits (whitespace around them
 * allowed) into key; returns the key length or MROCE_EINVAL. */
int lib_sec_parse_hex(const char *hex, uint8_t *key);
/* lib_sec_read_key_file reads a key file of hex digits, refusing one that
 * others than its owner may read.  Returns the key length, or
 * MROCE_EINVAL with the reason on stderr. */
int lib_sec_read_key_file(const char *path, uint8_t *key);
/* lib_sec_suite_parse: "aes128gcm" (or "1"), "aes256gcm", "gmac" -> the
 * suite; 0 for anything else. */
uint8_t lib_sec_suite_parse(const char *s);

#endif /* MROCE_SECURE_EVP_H */
