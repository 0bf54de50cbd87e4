/*
 * stubs.c - every other function of libibverbs.so.1's ABI
 * (libibverbs.map), so programs and the provider libraries linked with them
 * (libmlx5, libefa, librdmacm load with BIND_NOW) resolve all their
 * symbols.  Each stub sets errno to EOPNOTSUPP and fails: NULL where the
 * real function returns a pointer, EOPNOTSUPP where it returns a status.
 * Among them: address handles (UD), SRQs, XRC, memory windows, flows, work
 * queues, device memory, imports, multicast, the ibv_cmd_* and verbs_*
 * calls that only provider drivers make (no driver is ever loaded, so a
 * provider's constructor registering itself is a no-op).
 */
#include <errno.h>
#include <stddef.h>

/* clang-format off */
#define MV_STUB_INT(name) \
    long name(void); long name(void) { errno = EOPNOTSUPP; return EOPNOTSUPP; }
#define MV_STUB_PTR(name) \
    void *name(void); void *name(void) { errno = EOPNOTSUPP; return NULL; }
#define MV_STUB_VOID(name) void name(void); void name(void) {}
/* clang-format on */

/* A data symbol of IBVERBS_PRIVATE_34 read by providers. */
_Bool verbs_allow_disassociate_destroy;

MV_STUB_INT(ibv_copy_path_rec_from_kern)
MV_STUB_INT(ibv_copy_path_rec_to_kern)
MV_STUB_INT(ibv_copy_qp_attr_from_kern)
MV_STUB_INT(ibv_rate_to_mult)
MV_STUB_INT(mult_to_ibv_rate)
MV_STUB_INT(ibv_attach_mcast)
MV_STUB_INT(ibv_copy_ah_attr_from_kern)
MV_STUB_PTR(ibv_create_ah)
MV_STUB_PTR(ibv_create_ah_from_wc)
MV_STUB_PTR(ibv_create_srq)
MV_STUB_INT(ibv_destroy_ah)
MV_STUB_INT(ibv_destroy_srq)
MV_STUB_INT(ibv_detach_mcast)
MV_STUB_INT(ibv_init_ah_from_wc)
MV_STUB_INT(ibv_modify_srq)
MV_STUB_INT(ibv_query_srq)
MV_STUB_INT(ibv_rate_to_mbps)
MV_STUB_INT(ibv_rereg_mr)
MV_STUB_INT(ibv_resize_cq)
MV_STUB_INT(ibv_resolve_eth_l2_from_gid)
MV_STUB_INT(mbps_to_ibv_rate)
MV_STUB_PTR(ibv_import_device)
MV_STUB_PTR(ibv_import_mr)
MV_STUB_PTR(ibv_import_pd)
MV_STUB_INT(ibv_query_ece)
MV_STUB_INT(ibv_set_ece)
MV_STUB_VOID(ibv_unimport_mr)
MV_STUB_VOID(ibv_unimport_pd)
MV_STUB_PTR(ibv_reg_dmabuf_mr)
MV_STUB_PTR(ibv_import_dm)
MV_STUB_VOID(ibv_unimport_dm)
MV_STUB_PTR(ibv_query_qp_data_in_order)
MV_STUB_INT(__ioctl_final_num_attrs)
MV_STUB_INT(__verbs_log)
MV_STUB_INT(_verbs_init_and_alloc_context)
MV_STUB_INT(execute_ioctl)
MV_STUB_INT(ibv_cmd_advise_mr)
MV_STUB_INT(ibv_cmd_alloc_dm)
MV_STUB_INT(ibv_cmd_alloc_mw)
MV_STUB_INT(ibv_cmd_alloc_pd)
MV_STUB_INT(ibv_cmd_attach_mcast)
MV_STUB_INT(ibv_cmd_close_xrcd)
MV_STUB_INT(ibv_cmd_create_ah)
MV_STUB_INT(ibv_cmd_create_counters)
MV_STUB_INT(ibv_cmd_create_cq)
MV_STUB_INT(ibv_cmd_create_cq_ex)
MV_STUB_INT(ibv_cmd_create_flow)
MV_STUB_INT(ibv_cmd_create_flow_action_esp)
MV_STUB_INT(ibv_cmd_create_qp)
MV_STUB_INT(ibv_cmd_create_qp_ex)
MV_STUB_INT(ibv_cmd_create_qp_ex2)
MV_STUB_INT(ibv_cmd_create_rwq_ind_table)
MV_STUB_INT(ibv_cmd_create_srq)
MV_STUB_INT(ibv_cmd_create_srq_ex)
MV_STUB_INT(ibv_cmd_create_wq)
MV_STUB_INT(ibv_cmd_dealloc_mw)
MV_STUB_INT(ibv_cmd_dealloc_pd)
MV_STUB_INT(ibv_cmd_dereg_mr)
MV_STUB_INT(ibv_cmd_destroy_ah)
MV_STUB_INT(ibv_cmd_destroy_counters)
MV_STUB_INT(ibv_cmd_destroy_cq)
MV_STUB_INT(ibv_cmd_destroy_flow)
MV_STUB_INT(ibv_cmd_destroy_flow_action)
MV_STUB_INT(ibv_cmd_destroy_qp)
MV_STUB_INT(ibv_cmd_destroy_rwq_ind_table)
MV_STUB_INT(ibv_cmd_destroy_srq)
MV_STUB_INT(ibv_cmd_destroy_wq)
MV_STUB_INT(ibv_cmd_detach_mcast)
MV_STUB_INT(ibv_cmd_free_dm)
MV_STUB_INT(ibv_cmd_get_context)
MV_STUB_INT(ibv_cmd_modify_cq)
MV_STUB_INT(ibv_cmd_modify_flow_action_esp)
MV_STUB_INT(ibv_cmd_modify_qp)
MV_STUB_INT(ibv_cmd_modify_qp_ex)
MV_STUB_INT(ibv_cmd_modify_srq)
MV_STUB_INT(ibv_cmd_modify_wq)
MV_STUB_INT(ibv_cmd_open_qp)
MV_STUB_INT(ibv_cmd_open_xrcd)
MV_STUB_INT(ibv_cmd_poll_cq)
MV_STUB_INT(ibv_cmd_post_recv)
MV_STUB_INT(ibv_cmd_post_send)
MV_STUB_INT(ibv_cmd_post_srq_recv)
MV_STUB_INT(ibv_cmd_query_context)
MV_STUB_INT(ibv_cmd_query_device_any)
MV_STUB_INT(ibv_cmd_query_mr)
MV_STUB_INT(ibv_cmd_query_port)
MV_STUB_INT(ibv_cmd_query_qp)
MV_STUB_INT(ibv_cmd_query_srq)
MV_STUB_INT(ibv_cmd_read_counters)
MV_STUB_INT(ibv_cmd_reg_dm_mr)
MV_STUB_INT(ibv_cmd_reg_dmabuf_mr)
MV_STUB_INT(ibv_cmd_reg_mr)
MV_STUB_INT(ibv_cmd_req_notify_cq)
MV_STUB_INT(ibv_cmd_rereg_mr)
MV_STUB_INT(ibv_cmd_resize_cq)
MV_STUB_INT(ibv_read_ibdev_sysfs_file)
MV_STUB_INT(verbs_init_cq)
MV_STUB_INT(verbs_open_device)
MV_STUB_INT(verbs_register_driver_34)
MV_STUB_INT(verbs_set_ops)
MV_STUB_INT(verbs_uninit_context)
