// SPDX-License-Identifier: BSD-3-Clause OR GPL-2.0
/* dscpgw-hostmark: a tc clsact egress classifier that marks a GPU host's RoCE traffic with the
 * DSCP (and, on VLAN-tagged frames, the 802.1p priority) of its class, as the gateway's
 * [[classes]] define them. First matching class wins; ECN is always kept; the IPv4 header
 * checksum is updated incrementally. RoCEv2's ICRC masks the TOS/traffic class, so re-marking
 * does not invalidate it. The program never drops: every packet continues (TC_ACT_UNSPEC, so
 * filters after it on the hook still run). */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>

/* After the kernel's types, which they use. */
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define ROCE_V2_PORT 4791
#define BTH_LEN 12
#define HEADERS_MAX 256 /* What the parser may need to read: tags, IPv6 + extensions, UDP, BTH. */
#define IPV6_EXT_MAX 8  /* As the gateway's parser */

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, struct hm_ruleset);
} hm_rules SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, struct hm_state);
} hm_state SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, HM_NUM_COUNTERS);
    __type(key, __u32);
    __type(value, struct hm_counter);
} hm_counters SEC(".maps");

struct vlan_hdr {
    __be16 tci;
    __be16 proto;
};

static __always_inline void count(__u32 idx, __u32 len, int dscp_rewritten, int pcp_set) {
    struct hm_counter* c = bpf_map_lookup_elem(&hm_counters, &idx);
    if (!c) return;
    c->packets++;
    c->bytes += len;
    c->dscp_rewritten += dscp_rewritten;
    c->pcp_set += pcp_set;
}

/* The UDP part of a class key: the destination port, and for RoCEv2 the BTH opcode when the
 * datagram holds a whole BTH (never in a fragment). `l4` is the UDP header's offset in the IP
 * packet and `total` the IP packet's length per its header. */
static __always_inline __u64 udp_key(struct udphdr* udp, void* end, __u32 l4, __u32 total,
                                     int fragment) {
    if ((void*)(udp + 1) > end) return 0;
    const __u16 dport = bpf_ntohs(udp->dest);
    __u64 key = HM_KEY_IS_UDP | dport;
    __u8* bth = (void*)(udp + 1);
    if (dport == ROCE_V2_PORT && !fragment && l4 + sizeof(*udp) + BTH_LEN <= total &&
        (void*)(bth + 1) <= end)
        key |= HM_KEY_HAS_BTH | (__u64)*bth << HM_KEY_OPCODE_SHIFT;
    return key;
}

static __always_inline int is_ipv6_ext(__u8 nh) {
    return nh == 0 || nh == 43 || nh == 44 || nh == 60;
}

SEC("tc")
int hostmark_egress(struct __sk_buff* skb) {
    __u32 zero = 0;
    struct hm_state* st = bpf_map_lookup_elem(&hm_state, &zero);
    if (!st) return TC_ACT_UNSPEC;
    __u32 slot = st->active & 1;
    struct hm_ruleset* rs = bpf_map_lookup_elem(&hm_rules, &slot);
    if (!rs) return TC_ACT_UNSPEC;
    const __u32 pkt_len = skb->len;

    /* On egress the headers are normally linear already; pull them in when they are not. */
    __u32 want = pkt_len < HEADERS_MAX ? pkt_len : HEADERS_MAX;
    if ((long)skb->data + want > (long)skb->data_end) bpf_skb_pull_data(skb, want);
    void* data = (void*)(long)skb->data;
    void* end = (void*)(long)skb->data_end;

    struct ethhdr* eth = data;
    if ((void*)(eth + 1) > end) goto not_ip;
    __u32 off = sizeof(*eth);
    __be16 ethertype = eth->h_proto;
    __u32 tag_off = 0; /* The outermost in-frame VLAN tag, 0: none */
#pragma unroll
    for (int i = 0; i < 2; i++) {
        if (ethertype != bpf_htons(ETH_P_8021Q) && ethertype != bpf_htons(ETH_P_8021AD)) break;
        struct vlan_hdr* vh = data + off;
        if ((void*)(vh + 1) > end) goto not_ip;
        if (!tag_off) tag_off = off;
        ethertype = vh->proto;
        off += sizeof(*vh);
    }

    __u8 tos, proto;
    __u64 key = 0;
    int v4;
    if (ethertype == bpf_htons(ETH_P_IP)) {
        struct iphdr* ip = data + off;
        if ((void*)(ip + 1) > end || ip->version != 4 || ip->ihl < 5) goto not_ip;
        v4 = 1;
        tos = ip->tos;
        proto = ip->protocol;
        const __u32 ihl = ip->ihl * 4;
        const __u32 total = bpf_ntohs(ip->tot_len);
        const __u16 frag = bpf_ntohs(ip->frag_off);
        const int fragment = (frag & 0x3fff) != 0; /* MF or an offset */
        if (proto == IPPROTO_UDP && (frag & 0x1fff) == 0 && ihl + sizeof(struct udphdr) <= total)
            key = udp_key((void*)ip + ihl, end, ihl, total, fragment);
    } else if (ethertype == bpf_htons(ETH_P_IPV6)) {
        struct ipv6hdr* ip6 = data + off;
        if ((void*)(ip6 + 1) > end || ip6->version != 6) goto not_ip;
        v4 = 0;
        tos = (__u8)(ip6->priority << 4 | ip6->flow_lbl[0] >> 4);
        const __u32 total = sizeof(*ip6) + bpf_ntohs(ip6->payload_len);
        __u8 nh = ip6->nexthdr;
        __u32 l4 = sizeof(*ip6);
        int fragment = 0, first = 1;
#pragma unroll
        for (int i = 0; i < IPV6_EXT_MAX; i++) {
            if (!is_ipv6_ext(nh)) break;
            __u8* ext = (void*)ip6 + l4;
            if ((void*)(ext + 8) > end) goto classify_no_l4;
            if (nh == 44) {
                fragment = 1;
                first = (bpf_ntohs(*(__be16*)(ext + 2)) & 0xfff8) == 0;
                nh = ext[0];
                l4 += 8;
                if (!first) break;
            } else {
                nh = ext[0];
                l4 += ((__u32)ext[1] + 1) * 8;
            }
            if (l4 > HEADERS_MAX) goto classify_no_l4;
        }
        proto = nh;
        if (nh == IPPROTO_UDP && first && l4 + sizeof(struct udphdr) <= total && l4 <= HEADERS_MAX)
            key = udp_key((void*)ip6 + l4, end, l4, total, fragment);
        goto classify;
    classify_no_l4:
        proto = nh;
        key = 0;
    } else {
        goto not_ip;
    }

classify:;
    key |= (__u64)proto << HM_KEY_PROTO_SHIFT;
    const __u8 dscp = tos >> 2;
    __u32 n = rs->n;
    int cls = -1;
    for (__u32 i = 0; i < HM_MAX_CLASSES; i++) {
        if (i >= n) break;
        const struct hm_rule* r = &rs->rules[i];
        if (((key ^ r->key) & r->mask) == 0 && ((r->dscp_mask >> dscp) & 1)) {
            cls = (int)i;
            break;
        }
    }
    if (cls < 0) {
        count(HM_CTR_NO_CLASS, pkt_len, 0, 0);
        return TC_ACT_UNSPEC;
    }
    const struct hm_rule* r = &rs->rules[cls & (HM_MAX_CLASSES - 1)];
    const __s8 set_dscp = r->set_dscp, pcp = r->pcp;

    int rewritten = 0, pcp_set = 0;
    const __u8 new_tos = set_dscp >= 0 ? (__u8)((__u8)set_dscp << 2 | (tos & 3)) : tos;
    if (new_tos != tos) {
        rewritten = 1;
        if (v4) {
            struct iphdr* ip = data + off;
            if ((void*)(ip + 1) > end) goto done;
            const __be16 old_word = *(__be16*)ip;
            ip->tos = new_tos;
            const __be16 new_word = *(__be16*)ip;
            /* Invalidates the packet pointers: nothing below reads the packet directly. */
            bpf_l3_csum_replace(skb, off + offsetof(struct iphdr, check), old_word, new_word, 2);
        } else {
            struct ipv6hdr* ip6 = data + off;
            if ((void*)(ip6 + 1) > end) goto done;
            ip6->priority = new_tos >> 4;
            ip6->flow_lbl[0] = (__u8)((new_tos & 0xf) << 4 | (ip6->flow_lbl[0] & 0xf));
        }
    }
    if (pcp >= 0) {
        if (tag_off) {
            /* The tag is in the frame: rewrite its priority bits. */
            data = (void*)(long)skb->data;
            end = (void*)(long)skb->data_end;
            if (tag_off > 64) goto done;
            struct vlan_hdr* vh = data + tag_off;
            if ((void*)(vh + 1) > end) goto done;
            const __u16 tci = bpf_ntohs(vh->tci);
            const __u16 new_tci = (__u16)((tci & 0x1fff) | (__u16)pcp << 13);
            if (new_tci != tci) {
                vh->tci = bpf_htons(new_tci);
                pcp_set = 1;
            }
        } else if (skb->vlan_present) {
            /* The tag travels beside the frame (VLAN TX offload): replace it. */
            const __u16 tci = (__u16)skb->vlan_tci;
            const __u16 new_tci = (__u16)((tci & 0x1fff) | (__u16)pcp << 13);
            const __be16 vlan_proto = (__be16)skb->vlan_proto;
            if (new_tci != tci && bpf_skb_vlan_pop(skb) == 0) {
                if (bpf_skb_vlan_push(skb, vlan_proto, new_tci) == 0) pcp_set = 1;
            }
        }
    }
done:
    count((__u32)cls & (HM_MAX_CLASSES - 1), pkt_len, rewritten, pcp_set);
    return TC_ACT_UNSPEC;

not_ip:
    count(HM_CTR_NOT_IP, pkt_len, 0, 0);
    return TC_ACT_UNSPEC;
}
