/*
 * strings.c - the names libibverbs gives its enums (statuses, node types,
 * port states, events), and fork support, which needs nothing here:
 * libmroce pins no memory, so a child process shares nothing it must not.
 */
#include <infiniband/verbs.h>

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const s[] = {
        [IBV_WC_SUCCESS] = "success",
        [IBV_WC_LOC_LEN_ERR] = "local length error",
        [IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
        [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
        [IBV_WC_LOC_PROT_ERR] = "local protection error",
        [IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
        [IBV_WC_MW_BIND_ERR] = "memory management operation error",
        [IBV_WC_BAD_RESP_ERR] = "bad response error",
        [IBV_WC_LOC_ACCESS_ERR] = "local access error",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error",
        [IBV_WC_REM_OP_ERR] = "remote operation error",
        [IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
        [IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
        [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
        [IBV_WC_REM_ABORT_ERR] = "aborted error",
        [IBV_WC_INV_EECN_ERR] = "invalid EE context number",
        [IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
        [IBV_WC_FATAL_ERR] = "fatal error",
        [IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
        [IBV_WC_GENERAL_ERR] = "general error",
        [IBV_WC_TM_ERR] = "TM error",
        [IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
    };
    unsigned i = (unsigned)status;
    return i < sizeof(s) / sizeof(s[0]) && s[i] ? s[i] : "unknown";
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
    switch (node_type) {
    case IBV_NODE_CA:
        return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH:
        return "InfiniBand switch";
    case IBV_NODE_ROUTER:
        return "InfiniBand router";
    case IBV_NODE_RNIC:
        return "iWARP NIC";
    case IBV_NODE_USNIC:
        return "usNIC";
    case IBV_NODE_USNIC_UDP:
        return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED:
        return "unspecified";
    default:
        return "unknown";
    }
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
    switch (port_state) {
    case IBV_PORT_NOP:
        return "no state change (NOP)";
    case IBV_PORT_DOWN:
        return "down";
    case IBV_PORT_INIT:
        return "init";
    case IBV_PORT_ARMED:
        return "armed";
    case IBV_PORT_ACTIVE:
        return "active";
    case IBV_PORT_ACTIVE_DEFER:
        return "active defer";
    default:
        return "unknown";
    }
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
    switch (event) {
    case IBV_EVENT_QP_FATAL:
        return "local work queue catastrophic error";
    case IBV_EVENT_COMM_EST:
        return "communication established";
    case IBV_EVENT_PORT_ACTIVE:
        return "port active";
    case IBV_EVENT_PORT_ERR:
        return "port error";
    case IBV_EVENT_DEVICE_FATAL:
        return "local catastrophic error";
    default:
        return "unknown";
    }
}

int ibv_fork_init(void)
{
    return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
    return IBV_FORK_UNNEEDED;
}

/* Private to providers in rdma-core; exported all the same. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

int ibv_dontfork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
    (void)base;
    (void)size;
    return 0;
}
