/*
 * test_prov_getinfo.c - fi_getinfo answers as fi_getinfo(3) says, the
 * points fabtests' fi_getinfo_test checks:
 *   - an ordering asked for (tx/rx msg_order, comp_order) is given, or
 *     there is no fi_info (-FI_ENODATA);
 *   - mr_mode holds no bit the application did not set, for every
 *     combination of the mode bits; RMA asked for with a mode that lacks
 *     FI_MR_PROV_KEY | FI_MR_VIRT_ADDR is -FI_ENODATA, and without RMA
 *     asked for the fi_info comes without it;
 *   - API 1.0: FI_MR_UNSPEC means FI_MR_BASIC, FI_MR_SCALABLE is refused;
 *   - the domain capabilities FI_LOCAL_COMM | FI_REMOTE_COMM are in
 *     info->caps and domain_attr->caps, never in tx_attr or rx_attr.
 *
 * Single process, no traffic.  Needs FI_PROVIDER_PATH to name the
 * directory of libmroce-fi.so (CTest sets it).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "prov_fi_test.h"

#define PROV_KEY_VIRT (FI_MR_PROV_KEY | FI_MR_VIRT_ADDR)
#define DOMAIN_CAPS (FI_LOCAL_COMM | FI_REMOTE_COMM)
#define RMA_CAPS \
    (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

static struct fi_info *hints_new(void)
{
    struct fi_info *h = fi_allocinfo();
    h->fabric_attr->prov_name = strdup("mroce");
    h->ep_attr->type = FI_EP_RDM;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED | PROV_KEY_VIRT;
    return h;
}

static int getinfo(uint32_t version, struct fi_info *h, struct fi_info **out)
{
    *out = NULL;
    return fi_getinfo(version, NULL, NULL, 0, h, out);
}

static const uint64_t order_bits[] = {FI_ORDER_RAR,        FI_ORDER_RAW,
                                      FI_ORDER_RAS,        FI_ORDER_WAR,
                                      FI_ORDER_WAW,        FI_ORDER_WAS,
                                      FI_ORDER_SAR,        FI_ORDER_SAW,
                                      FI_ORDER_SAS,        FI_ORDER_DATA,
                                      FI_ORDER_RMA_RAR,    FI_ORDER_RMA_RAW,
                                      FI_ORDER_RMA_WAR,    FI_ORDER_RMA_WAW,
                                      FI_ORDER_ATOMIC_RAR, FI_ORDER_ATOMIC_RAW,
                                      FI_ORDER_ATOMIC_WAR, FI_ORDER_ATOMIC_WAW};

/* Every ordering bit, alone and with FI_ORDER_SAS, on tx and on rx:
 * returned with the bit set, or not at all. */
static void test_msg_order(void)
{
    int refused = 0;
    for (int rx = 0; rx < 2; rx++)
        for (size_t i = 0; i < sizeof(order_bits) / sizeof(order_bits[0]); i++)
            for (int sas = 0; sas < 2; sas++) {
                uint64_t want = order_bits[i] | (sas ? FI_ORDER_SAS : 0);
                struct fi_info *h = hints_new(), *fi;
                if (rx)
                    h->rx_attr->msg_order = want;
                else
                    h->tx_attr->msg_order = want;
                int rc = getinfo(FI_VERSION(1, 17), h, &fi);
                CHECK(rc == 0 || rc == -FI_ENODATA);
                refused += rc == -FI_ENODATA;
                for (struct fi_info *p = fi; p; p = p->next) {
                    uint64_t got = rx ? p->rx_attr->msg_order
                                      : p->tx_attr->msg_order;
                    if ((got & want) != want) {
                        fprintf(stderr,
                                "%s msg_order 0x%llx asked, 0x%llx "
                                "given\n",
                                rx ? "rx" : "tx", (unsigned long long)want,
                                (unsigned long long)got);
                        failures++;
                    }
                }
                fi_freeinfo(fi);
                fi_freeinfo(h);
            }
    /* The provider promises send-after-send and no more. */
    CHECK(refused > 0);
    struct fi_info *h = hints_new(), *fi;
    h->tx_attr->msg_order = FI_ORDER_SAS;
    h->rx_attr->msg_order = FI_ORDER_SAS;
    CHECK(getinfo(FI_VERSION(1, 17), h, &fi) == 0);
    fi_freeinfo(fi);
    h->tx_attr->msg_order = 0;
    h->rx_attr->msg_order = 0;
    h->tx_attr->comp_order = FI_ORDER_STRICT;
    CHECK(getinfo(FI_VERSION(1, 17), h, &fi) == -FI_ENODATA);
    fi_freeinfo(fi);
    fi_freeinfo(h);
}

static const uint64_t mr_bits[] = {FI_MR_LOCAL,     FI_MR_RAW,
                                   FI_MR_VIRT_ADDR, FI_MR_ALLOCATED,
                                   FI_MR_PROV_KEY,  FI_MR_MMU_NOTIFY,
                                   FI_MR_RMA_EVENT, FI_MR_ENDPOINT};

/* Every combination of the mode bits, caps unset (the provider's own):
 * never a bit more than asked. */
static void test_mr_mode_bits(void)
{
    int n = sizeof(mr_bits) / sizeof(mr_bits[0]), given = 0;
    for (int combo = 0; combo < 1 << n; combo++) {
        int mode = 0;
        for (int b = 0; b < n; b++)
            if (combo & (1 << b))
                mode |= (int)mr_bits[b];
        struct fi_info *h = hints_new(), *fi;
        h->domain_attr->mr_mode = mode;
        int rc = getinfo(FI_VERSION(1, 17), h, &fi);
        CHECK(rc == 0 || rc == -FI_ENODATA);
        for (struct fi_info *p = fi; p; p = p->next) {
            given++;
            int got = p->domain_attr->mr_mode;
            if (got & ~mode) {
                fprintf(stderr, "mr_mode 0x%x asked, 0x%x given\n", mode, got);
                failures++;
            }
            /* RMA only with the modes it needs. */
            if ((p->caps & RMA_CAPS) &&
                (got & PROV_KEY_VIRT) != PROV_KEY_VIRT) {
                fprintf(stderr, "mr_mode 0x%x: RMA given with 0x%x\n", mode,
                        got);
                failures++;
            }
        }
        fi_freeinfo(fi);
        fi_freeinfo(h);
    }
    CHECK(given == 1 << n); /* every mode serves messaging at least */

    /* RMA asked for: only with both bits. */
    struct fi_info *h = hints_new(), *fi;
    h->caps = FI_MSG | FI_RMA;
    h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_ALLOCATED;
    CHECK(getinfo(FI_VERSION(1, 17), h, &fi) == -FI_ENODATA);
    fi_freeinfo(fi);
    h->domain_attr->mr_mode = PROV_KEY_VIRT;
    CHECK(getinfo(FI_VERSION(1, 17), h, &fi) == 0);
    if (fi) {
        CHECK((fi->caps & FI_RMA) != 0);
        CHECK(fi->domain_attr->mr_mode == PROV_KEY_VIRT);
    }
    fi_freeinfo(fi);
    /* Not asked for: messaging without RMA. */
    h->caps = 0;
    h->domain_attr->mr_mode = 0;
    CHECK(getinfo(FI_VERSION(1, 17), h, &fi) == 0);
    if (fi) {
        CHECK((fi->caps & RMA_CAPS) == 0);
        CHECK((fi->caps & (FI_MSG | FI_TAGGED)) == (FI_MSG | FI_TAGGED));
        CHECK(fi->domain_attr->mr_mode == 0);
    }
    fi_freeinfo(fi);
    /* FI_MR_SCALABLE: application keys, which the provider cannot take. */
    h->caps = FI_RMA;
    h->domain_attr->mr_mode = FI_MR_SCALABLE;
    CHECK(getinfo(FI_VERSION(1, 17), h, &fi) == -FI_ENODATA);
    fi_freeinfo(fi);
    h->domain_attr->mr_mode = FI_MR_BASIC;
    CHECK(getinfo(FI_VERSION(1, 17), h, &fi) == 0);
    if (fi)
        CHECK(fi->domain_attr->mr_mode == FI_MR_BASIC);
    fi_freeinfo(fi);
    fi_freeinfo(h);
}

/* API 1.0: mr_mode is the old enum. */
static void test_mr_v1_0(void)
{
    struct fi_info *h = hints_new(), *fi;
    h->caps = FI_MSG | FI_RMA;
    h->domain_attr->mr_mode = FI_MR_UNSPEC;
    CHECK(getinfo(FI_VERSION(1, 0), h, &fi) == 0);
    if (fi)
        CHECK(fi->domain_attr->mr_mode == FI_MR_BASIC);
    fi_freeinfo(fi);
    h->domain_attr->mr_mode = FI_MR_BASIC;
    CHECK(getinfo(FI_VERSION(1, 0), h, &fi) == 0);
    if (fi)
        CHECK(fi->domain_attr->mr_mode == FI_MR_BASIC);
    fi_freeinfo(fi);
    h->domain_attr->mr_mode = FI_MR_SCALABLE;
    CHECK(getinfo(FI_VERSION(1, 0), h, &fi) == -FI_ENODATA);
    fi_freeinfo(fi);
    fi_freeinfo(h);
    /* No hints at all. */
    CHECK(fi_getinfo(FI_VERSION(1, 0), NULL, NULL, 0, NULL, &fi) == 0);
    for (struct fi_info *p = fi; p; p = p->next)
        if (!strcmp(p->fabric_attr->prov_name, "mroce"))
            CHECK(p->domain_attr->mr_mode == FI_MR_BASIC);
    fi_freeinfo(fi);
}

static void check_caps(const struct fi_info *fi, const char *what)
{
    if ((fi->tx_attr->caps | fi->rx_attr->caps) & DOMAIN_CAPS) {
        fprintf(stderr, "%s: domain caps in tx 0x%llx / rx 0x%llx\n", what,
                (unsigned long long)fi->tx_attr->caps,
                (unsigned long long)fi->rx_attr->caps);
        failures++;
    }
    CHECK((fi->domain_attr->caps & DOMAIN_CAPS) == DOMAIN_CAPS);
    CHECK((fi->tx_attr->caps & ~fi->caps) == 0);
    CHECK((fi->rx_attr->caps & ~fi->caps) == 0);
    CHECK((fi->tx_attr->caps & (FI_MSG | FI_TAGGED)) ==
          (fi->caps & (FI_MSG | FI_TAGGED)));
    CHECK((fi->rx_attr->caps & (FI_MSG | FI_TAGGED)) ==
          (fi->caps & (FI_MSG | FI_TAGGED)));
}

static void test_caps(void)
{
    struct fi_info *h = hints_new(), *fi;
    CHECK(getinfo(FI_VERSION(1, 17), h, &fi) == 0);
    if (fi)
        check_caps(fi, "caps unset");
    fi_freeinfo(fi);
    h->caps = FI_TAGGED | FI_RMA;
    CHECK(getinfo(FI_VERSION(1, 17), h, &fi) == 0);
    if (fi)
        check_caps(fi, "FI_TAGGED | FI_RMA");
    fi_freeinfo(fi);
    fi_freeinfo(h);
    CHECK(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &fi) == 0);
    for (struct fi_info *p = fi; p; p = p->next)
        if (!strcmp(p->fabric_attr->prov_name, "mroce"))
            check_caps(p, "no hints");
    fi_freeinfo(fi);
}

int main(void)
{
    prov_keep_mapped();
    test_msg_order();
    test_mr_mode_bits();
    test_mr_v1_0();
    test_caps();
    if (failures) {
        fprintf(stderr, "test_prov_getinfo: %d failures\n", failures);
        return 1;
    }
    printf("test_prov_getinfo: ok\n");
    return 0;
}
