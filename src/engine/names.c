/*
 * names.c - printable names for the engine's enums, generated from the same
 * X-macros as the enums so they cannot drift.
 */
#include "engine_int.h"

const char *mre_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define MROCE_X_CASE(name, val, desc) \
    case val:                         \
        return desc;
        MROCE_ERRORS(MROCE_X_CASE)
#undef MROCE_X_CASE
    default:
        return "unknown error";
    }
}

const char *mroce_wc_status_str(enum mroce_wc_status st)
{
    static const char *const names[] = {
#define MROCE_X_NAME(name, desc) desc,
        MROCE_WC_STATUSES(MROCE_X_NAME)
#undef MROCE_X_NAME
    };
    return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

const char *mroce_qp_state_str(enum mroce_qp_state st)
{
    static const char *const names[] = {
#define MROCE_X_NAME(name) #name,
        MROCE_QP_STATES(MROCE_X_NAME)
#undef MROCE_X_NAME
    };
    return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}
