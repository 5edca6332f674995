/*
 * nccl_class.h - a job's priority class (0 = highest, 7 = lowest) as NCCL's
 * network knobs: NCCL_IB_TC / NCCL_IB_SL for communicators created without a
 * config, and ncclConfig_t.trafficClass (NCCL >= 2.25) for those created with
 * one. No NCCL or CUDA dependency: unit-tested on its own (test_nccl_class).
 */
#ifndef NCCL_CLASS_H
#define NCCL_CLASS_H

/* Where the RDMA devices are listed (device/ports/N/link_layer). */
#define HM_NCCL_SYSFS_IB "/sys/class/infiniband"

/* RoCE traffic class (NCCL_IB_TC = DSCP << 2) and InfiniBand service level
 * (NCCL_IB_SL) of class prio; -1 for a class outside [0, 7]. */
int hm_nccl_class_tc(int prio);
int hm_nccl_class_sl(int prio);

/*
 * ncclConfig_t.trafficClass for class prio on this node. NCCL's IB transport
 * uses that one integer both as the service level (InfiniBand: 4 bits) and as the
 * GRH traffic class (RoCE: DSCP << 2), so the value must suit the link: the RoCE
 * traffic class when every RDMA port under sysfs_ib (normally HM_NCCL_SYSFS_IB)
 * is Ethernet, else the service level (valid on InfiniBand, harmless elsewhere:
 * on RoCE, TC 0-7 is best effort). -1 for a class outside [0, 7].
 */
int hm_nccl_config_traffic_class(int prio, const char *sysfs_ib);

#endif
