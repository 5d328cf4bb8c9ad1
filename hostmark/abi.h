/* The maps shared by dscpgw-hostmark's BPF program (hostmark.bpf.c) and its loader (main.cpp).
 * Plain C, included by both; every layout change must change HM_ABI_VERSION, which the loader
 * checks before it updates a program that is already attached. */
#ifndef DSCPGW_HOSTMARK_ABI_H
#define DSCPGW_HOSTMARK_ABI_H

#include <linux/types.h>

#define HM_ABI_VERSION 1
#define HM_MAX_CLASSES 64
#define HM_NAME_LEN 32

/* The class key of a packet, the same bits as the gateway's ClassMatch (dataplane/snapshot.h):
 * the UDP destination port with an is-UDP bit, the BTH opcode with a has-BTH bit, the IP
 * protocol. A rule matches when ((key ^ rule.key) & rule.mask) == 0 and the packet's DSCP bit is
 * set in rule.dscp_mask. */
#define HM_KEY_UDP_PORT 0xffffULL
#define HM_KEY_IS_UDP (1ULL << 16)
#define HM_KEY_OPCODE_SHIFT 17
#define HM_KEY_HAS_BTH (1ULL << 25)
#define HM_KEY_PROTO_SHIFT 26

struct hm_rule {
    __u64 dscp_mask;
    __u64 key;
    __u64 mask;
    __s8 set_dscp; /* -1: keep the packet's DSCP */
    __s8 pcp;      /* -1: keep the VLAN tag's priority */
    __u8 pad[6];
    char name[HM_NAME_LEN]; /* For `status`; the program does not read it. */
};

/* One complete rule set; the loader writes the inactive one of two and then flips
 * hm_state.active, so that a packet sees either the old rules or the new ones, never a mix. */
struct hm_ruleset {
    __u32 n;
    __u32 pad;
    struct hm_rule rules[HM_MAX_CLASSES];
};

struct hm_state {
    __u32 abi;            /* HM_ABI_VERSION of the loader that attached the program */
    __u32 active;         /* Index of the ruleset in use: 0 or 1 */
    __u32 created_clsact; /* 1: attach created the clsact qdisc, so detach may remove it */
    __u32 pad;
    __u64 generation; /* Incremented by every attach that writes rules */
};

/* Per-CPU counters, indexed by class; then the packets no class took and those not parsed as IP. */
#define HM_CTR_NO_CLASS HM_MAX_CLASSES
#define HM_CTR_NOT_IP (HM_MAX_CLASSES + 1)
#define HM_NUM_COUNTERS (HM_MAX_CLASSES + 2)

struct hm_counter {
    __u64 packets;
    __u64 bytes;
    __u64 dscp_rewritten; /* The DSCP changed (ECN is always kept). */
    __u64 pcp_set;        /* A VLAN tag's priority changed. */
};

#endif
