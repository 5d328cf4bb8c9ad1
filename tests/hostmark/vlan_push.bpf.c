// SPDX-License-Identifier: BSD-3-Clause OR GPL-2.0
/* Test helper for tests/hostmark: stands in for a VLAN device with TX VLAN offload, which this
 * machine's kernel lacks (no 8021q). Attached to tc egress ahead of dscpgw-hostmark, it gives IPv4
 * UDP frames from source port 42003 a VLAN 100 tag in the skb's metadata (priority 0), so that
 * hostmark sees skb->vlan_present as it would behind a real VLAN device. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>

/* After the kernel's types, which they use. */
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tc")
int push_vlan(struct __sk_buff* skb) {
    void* data = (void*)(long)skb->data;
    void* end = (void*)(long)skb->data_end;
    struct ethhdr* eth = data;
    if ((void*)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || skb->vlan_present)
        return TC_ACT_UNSPEC;
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > end || ip->ihl != 5 || ip->protocol != IPPROTO_UDP) return TC_ACT_UNSPEC;
    struct udphdr* udp = (void*)(ip + 1);
    if ((void*)(udp + 1) > end || udp->source != bpf_htons(42003)) return TC_ACT_UNSPEC;
    bpf_skb_vlan_push(skb, bpf_htons(ETH_P_8021Q), 100);
    return TC_ACT_UNSPEC;
}
