/*
 * seeded_fault.h - deliberate spec violations for the conformance suite's
 * self-test (docs/spec/conformance-agent.md section 5, conform/README.md).
 *
 * The suite must be able to fail.  A second copy of the codec, engine and
 * library, compiled with -DMROCE_SEEDED_FAULTS=1, lets the conformance
 * agent (mroce-conform-agent-faults --fault NAME) switch on exactly one of
 * the faults below; each is an `if (MROCE_SEEDED_FAULT(ID))` at the place
 * where the requirement it breaks is enforced.  In every normal build the
 * macro is the constant 0, the compiler drops those branches, and nothing
 * here defines a symbol: the standard libraries carry no fault code
 * (tests/check_engine_symbols.sh and conform/agent.cmake check that).
 *
 * The list and the selected fault live here, in the lowest layer that
 * checks one (the codec); every layer above includes this header.  The
 * engine's own fault code, the responder's duplicate path, is in
 * src/engine/seeded_dup.h.
 *
 * The list is an X-macro: X(ID, "name").  What each one does and which
 * requirement it violates is documented in conform/README.md.
 */
#ifndef MROCE_SEEDED_FAULT_H
#define MROCE_SEEDED_FAULT_H

/* clang-format off */
#define MROCE_SEEDED_FAULT_LIST(X)                \
    X(CRC_SKIP, "crc_skip")                       \
    X(VERSION_ANY, "version_any")                 \
    X(TOKEN_ANY, "token_any")                     \
    X(ACK_BEFORE_PLACE, "ack_before_place")       \
    X(ACK_UNRECEIVED, "ack_unreceived")           \
    X(SACK_OFF_BY_ONE, "sack_off_by_one")         \
    X(ATOMIC_TWICE, "atomic_twice")               \
    X(DUP_SEND_TWICE, "dup_send_twice")           \
    X(DUP_NO_FLAG, "dup_no_flag")                 \
    X(WRITE_PAST_END, "write_past_end")           \
    X(IGNORE_ACCESS, "ignore_access")             \
    X(NAK_WRONG_CODE, "nak_wrong_code")           \
    X(NAK_SILENT, "nak_silent")                   \
    X(ENTROPY_NO_ECHO, "entropy_no_echo")         \
    X(ECN_IGNORE, "ecn_ignore")                   \
    X(ACK_DELAY_LONG, "ack_delay_long")           \
    X(WINDOW_ANY, "window_any")                   \
    /* STREAM word and CONN extensions (cases_wire_ext.c): */ \
    X(STREAM_ZERO_OK, "stream_zero_ok")           \
    X(STREAM_CTL_OK, "stream_ctl_ok")             \
    X(CONN_EXT_LAX, "conn_ext_lax")               \
    X(CONN_EXT_STRICT, "conn_ext_strict")         \
    /* streams (cases_streams.c): */              \
    X(STREAM_EXT_ALWAYS, "stream_ext_always")     \
    X(STREAM_NO_MIN, "stream_no_min")             \
    X(STREAM_FLAG_ANY, "stream_flag_any")         \
    X(STREAM_MSN_GLOBAL, "stream_msn_global")     \
    X(STREAM_RECV_HOL, "stream_recv_hol")         \
    X(STREAM_SEND_HOL, "stream_send_hol")         \
    X(STREAM_RNR_NAK0, "stream_rnr_nak0")         \
    /* shared stream state (cases_streams_shared.c): */ \
    X(STREAM_RESP_ANY, "stream_resp_any")         \
    X(STREAM_RESP_WAITS_OTHER, "stream_resp_waits_other") \
    X(STREAM_DUP_NEW, "stream_dup_new")           \
    X(STREAM_RQ_RING, "stream_rq_ring")           \
    X(STREAM_POOL_HOG, "stream_pool_hog")         \
    X(STREAM_RNR_HOLDS, "stream_rnr_holds")       \
    /* planes (cases_planes.c): */               \
    X(PLANES_ALWAYS, "planes_always")             \
    X(PLANES_RESP_UNASKED, "planes_resp_unasked") \
    X(PLANES_TX_ZERO, "planes_tx_zero")           \
    X(PLANES_NO_DOWN, "planes_no_down")           \
    X(PLANES_NEVER_UP, "planes_never_up")         \
    /* per-path windows, rate hints (cases_cc_path.c): */ \
    X(PATH_CWND_IGNORE, "path_cwnd_ignore")       \
    X(RATE_NOT_NEGOTIATED, "rate_not_negotiated") \
    X(RATE_ONE_SIDED, "rate_one_sided")           \
    X(RATE_SHARE_LINK, "rate_share_link")         \
    X(RATE_NO_CAP, "rate_no_cap")                 \
    X(RATE_NO_PACE, "rate_no_pace")               \
    /* share requests before data (cases_cc_ask.c): */ \
    X(RATE_NO_REQUEST, "rate_no_request")         \
    X(RATE_ASK_FOREVER, "rate_ask_forever")       \
    X(RATE_REQ_NOT_ACTIVE, "rate_req_not_active") \
    X(RATE_NO_GATHER, "rate_no_gather")           \
    X(RATE_LONE_GATHER, "rate_lone_gather")       \
    X(RATE_FIRST_BURST, "rate_first_burst")       \
    X(RATE_FIXED_START, "rate_fixed_start")       \
    X(RATE_NO_REASK, "rate_no_reask")             \
    X(RATE_ACTIVE_SHORT, "rate_active_short")     \
    /* plane quorum, shared plane health (cases_planes.c): */ \
    X(PLANES_NO_QUORUM, "planes_no_quorum")       \
    X(PLANES_NO_SHARE, "planes_no_share")         \
    /* plane re-homing, holds, probe backoff (cases_planes.c): */ \
    X(PLANES_NO_REHOME, "planes_no_rehome")       \
    X(PLANES_NO_RETURN, "planes_no_return")       \
    X(PLANES_NO_HOLD, "planes_no_hold")           \
    X(PLANES_NO_BACKOFF, "planes_no_backoff")     \
    /* secure mode (cases_secure.c): */           \
    X(SEC_TAG_SKIP, "sec_tag_skip")               \
    X(SEC_REPLAY_OK, "sec_replay_ok")             \
    X(SEC_KEYID_ANY, "sec_keyid_any")             \
    X(SEC_CLEAR_OK, "sec_clear_ok")               \
    X(SEC_ROTATE_STUCK, "sec_rotate_stuck")       \
    X(SEC_GEN_IGNORED, "sec_gen_ignored")         \
    /* the SACK span (cases_rel_sack.c): */       \
    X(SACK_SPAN_UNNEGOTIATED, "sack_span_unnegotiated") \
    /* slot homes, plane shares, path windows (cases_planes_paths.c): */ \
    X(PLANE_HOME_BLOCK, "plane_home_block")       \
    X(PLANE_IGNORE_WEIGHT, "plane_ignore_weight") \
    X(PATH_FRESH_FULL, "path_fresh_full")         \
    X(PATH_GROW_FAST, "path_grow_fast")           \
    X(PATH_NO_FLOOR, "path_no_floor")             \
    X(RATEHINT_EARLY, "ratehint_early")           \
    X(SLOT_MOVE_KEEPS_WEIGHT, "slot_move_keeps_weight") \
    X(PLANE_SEND_UNUSABLE, "plane_send_unusable")
/* clang-format on */

#ifdef MROCE_SEEDED_FAULTS

enum mrw_seeded_fault {
    MROCE_SF_NONE = 0,
#define MROCE_X_ENUM(id, name) MROCE_SF_##id,
    MROCE_SEEDED_FAULT_LIST(MROCE_X_ENUM)
#undef MROCE_X_ENUM
        MROCE_SF_COUNT
};

/* The one fault in effect (MROCE_SF_NONE: behave correctly).  Set once,
 * before the engine runs, by mrw_seeded_fault_select(). */
extern int mrw_seeded_fault_active;

#define MROCE_SEEDED_FAULT(id) (mrw_seeded_fault_active == MROCE_SF_##id)

/* Select the fault called name ("" or "none": no fault).  Returns its
 * number (>= 0), or -1 if no fault has that name. */
int mrw_seeded_fault_select(const char *name);
/* Name of fault i, 1 <= i < MROCE_SF_COUNT; NULL otherwise. */
const char *mrw_seeded_fault_name(int i);

#else

#define MROCE_SEEDED_FAULT(id) 0

#endif
#endif /* MROCE_SEEDED_FAULT_H */
