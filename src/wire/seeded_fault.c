/*
 * seeded_fault.c - the selected seeded fault (see seeded_fault.h).
 *
 * Compiled into the codec of every build, but empty unless
 * MROCE_SEEDED_FAULTS is defined: only the fault build used by
 * mroce-conform-agent-faults gets the global and the selection function.
 * No OS or libc calls (the codec's rule), so names are compared by hand.
 */
#include "seeded_fault.h"

#ifdef MROCE_SEEDED_FAULTS

int mrw_seeded_fault_active = MROCE_SF_NONE;

static const char *const fault_names[MROCE_SF_COUNT] = {"none",
#define MROCE_X_NAME(id, name) name,
                                                        MROCE_SEEDED_FAULT_LIST(
                                                            MROCE_X_NAME)
#undef MROCE_X_NAME
};

static int same(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

int mrw_seeded_fault_select(const char *name)
{
    if (!name || !*name) {
        mrw_seeded_fault_active = MROCE_SF_NONE;
        return MROCE_SF_NONE;
    }
    for (int i = 0; i < MROCE_SF_COUNT; i++)
        if (same(name, fault_names[i])) {
            mrw_seeded_fault_active = i;
            return i;
        }
    return -1;
}

const char *mrw_seeded_fault_name(int i)
{
    return i >= 1 && i < MROCE_SF_COUNT ? fault_names[i] : 0;
}

#else

/* Normal builds: nothing (ISO C wants a declaration in every file). */
typedef int mrw_seeded_fault_unused;

#endif
