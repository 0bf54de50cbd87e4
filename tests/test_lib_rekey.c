/*
 * test_lib_rekey.c - a secure libmroce device pair replaces its master key
 * twice under a stream of WRITEs over loopback (docs/spec/security.md
 * SEC-31..SEC-33, mroce_device_add_key and mroce_device_use_key): both add
 * generation 1 for receiving, A sends under it, then B; then both add
 * generation 2 (which evicts generation 0) and use it.  Every WRITE must
 * complete, the bytes match, no packet be dropped as of a wrong key, tag
 * or mode, and each side's receiver must have seen the peer move once per
 * new key (sec_rekeys).  Also the calls' errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "libpair.h"

#define LEN (1u << 20)
#define CHUNKS 64

static const char key0[] = "000102030405060708090a0b0c0d0e0f"
                           "101112131415161718191a1b1c1d1e1f";

/* A key file (mode 600) of 32 bytes derived from seed. */
static void write_key(const char *path, unsigned seed)
{
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    chmod(path, 0600);
    for (int i = 0; i < 32; i++)
        fprintf(f, "%02x", (unsigned)(i * 37 + seed * 101) & 0xff);
    fprintf(f, "\n");
    fclose(f);
}

/* Waits for one completion on a's CQ, driving both devices. */
static int wait_one(struct side *a, struct side *b)
{
    struct mroce_wc wc;
    uint64_t until = now_ms() + 5000;
    while (now_ms() < until) {
        mroce_device_progress(b->dev);
        int n = mroce_poll_cq(a->cq, 1, &wc);
        if (n == 1)
            return CHECK_MSG(wc.status == MROCE_WC_SUCCESS, "wc status %d",
                             wc.status);
    }
    return CHECK_MSG(0, "no completion in 5 s");
}

int main(void)
{
    struct side a, b;
    char k1[64], k2[64];
    struct mroce_ep_counters ca, cb;
    int access = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
    snprintf(k1, sizeof k1, "/tmp/mroce_rekey1.%d", (int)getpid());
    snprintf(k2, sizeof k2, "/tmp/mroce_rekey2.%d", (int)getpid());
    write_key(k1, 1);
    write_key(k2, 2);
    unsetenv("MROCE_KEY_FILE");
    setenv("MROCE_KEY", key0, 1);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (!CHECK(side_open(&a, LEN, access, 0) == 0) ||
        !CHECK(side_open(&b, LEN, access, 0) == 0) || !connect_pair(&a, &b))
        return TESTUTIL_SUMMARY("test_lib_rekey");

    CHECK(mroce_device_use_key(a.dev, 1) == MROCE_EINVAL);     /* not added */
    CHECK(mroce_device_add_key(a.dev, 0, k1) == MROCE_EINVAL); /* in use */
    CHECK(mroce_device_add_key(a.dev, 1, "/nonexistent") == MROCE_EINVAL);
    for (uint32_t i = 0; i < LEN; i++)
        a.buf[i] = (uint8_t)(i * 7 + (i >> 10));
    for (int i = 0; i < CHUNKS; i++) {
        switch (i) {
        case 8:
            CHECK(mroce_device_add_key(a.dev, 1, k1) == 0);
            CHECK(mroce_device_add_key(b.dev, 1, k1) == 0);
            break;
        case 16:
            CHECK(mroce_device_use_key(a.dev, 1) == 0);
            break;
        case 24:
            CHECK(mroce_device_use_key(b.dev, 1) == 0);
            break;
        case 32: /* evicts generation 0 on both */
            mroce_device_get_counters(a.dev, &ca);
            mroce_device_get_counters(b.dev, &cb);
            CHECK_MSG(ca.sec_rekeys == 1 && cb.sec_rekeys == 1,
                      "moves seen by A %llu, by B %llu",
                      (unsigned long long)ca.sec_rekeys,
                      (unsigned long long)cb.sec_rekeys);
            CHECK(mroce_device_add_key(a.dev, 2, k2) == 0);
            CHECK(mroce_device_add_key(b.dev, 2, k2) == 0);
            break;
        case 48:
            CHECK(mroce_device_use_key(b.dev, 2) == 0);
            CHECK(mroce_device_use_key(a.dev, 2) == 0);
            break;
        }
        size_t off = (size_t)i * (LEN / CHUNKS);
        if (!CHECK(side_post(&a, MROCE_WR_WRITE, (uint64_t)i, off, LEN / CHUNKS,
                             &b, off) == 0) ||
            !wait_one(&a, &b))
            break;
    }
    CHECK(memcmp(a.buf, b.buf, LEN) == 0);
    mroce_device_get_counters(a.dev, &ca);
    mroce_device_get_counters(b.dev, &cb);
    CHECK_MSG(ca.sec_rekeys == 2 && cb.sec_rekeys == 2,
              "moves seen by A %llu, by B %llu",
              (unsigned long long)ca.sec_rekeys,
              (unsigned long long)cb.sec_rekeys);
    CHECK_MSG(ca.drop_key + ca.drop_auth + ca.drop_mode + ca.drop_replay == 0,
              "A drops key %llu auth %llu", (unsigned long long)ca.drop_key,
              (unsigned long long)ca.drop_auth);
    CHECK_MSG(cb.drop_key + cb.drop_auth + cb.drop_mode + cb.drop_replay == 0,
              "B drops key %llu auth %llu", (unsigned long long)cb.drop_key,
              (unsigned long long)cb.drop_auth);
    side_fini(&a);
    side_fini(&b);

    /* A clear device has no key to replace. */
    unsetenv("MROCE_KEY");
    memset(&a, 0, sizeof a);
    if (CHECK(side_open(&a, 4096, access, 0) == 0)) {
        CHECK(mroce_device_add_key(a.dev, 1, k1) == MROCE_EINVAL);
        CHECK(mroce_device_use_key(a.dev, 0) == MROCE_EINVAL);
    }
    side_fini(&a);
    unlink(k1);
    unlink(k2);
    return TESTUTIL_SUMMARY("test_lib_rekey");
}
