// The decap flow cache's hit (DecapFlowCache, decap.h), inline: decap_plain() and the burst loop
// (burst.h) run it in their own bodies, as the encap cache's (encap_hit.h).
#pragma once

#include <rte_branch_prediction.h>

#include <cstring>

#include "dataplane/decap.h"
#include "dataplane/neighbor.h"
#include "dataplane/packet.h"
#include "dataplane/wire.h"

// Internal to the decapsulation (decap.cpp uses all of it; the burst loop decap_cache_bind() and
// decap_hit()); wire's names unqualified as in decap.cpp.
namespace dscpgw::decap_fast {

using namespace wire;

// Where the inner frame starts behind IPv4, UDP and an eight-byte tunnel header, and the least
// frame the cache takes: an inner RoCEv2 frame's headers (Ethernet, IPv4, UDP, BTH) behind that,
// so that every byte the key reads is inside the frame.
inline constexpr uint32_t kInnerOff = kEthLen + kIpv4Len + kUdpLen + 8;
inline constexpr uint32_t kLeastFrame = kInnerOff + kEthLen + kIpv4Len + kUdpLen + kBthLen;
static_assert(kInnerOff == 50 && kLeastFrame == 104);

// An IEEE 802.1 reserved destination (01-80-C2-00-00-0x): never forwarded by a bridge.
inline bool ieee_link_local(const uint8_t* dst_mac) {
    return load32(dst_mac) == 0x0180c200u && dst_mac[4] == 0 && (dst_mac[5] & 0xf0) == 0;
}

// The DecapFlowCache key: DecapFlow's first five words.
struct DecapFlowKey {
    uint64_t w[5];
};

// The key of an IPv4-in-IPv4 tunnelled frame read straight from its bytes, with the checks of
// decap_plain()'s two parses and length tests on the same words: both headers of the plain form
// (plain_ipv4_udp(): EtherType, version 4 without options, UDP, no fragment), the outer IP packet
// within the frame, the UDP datagram within it, the inner IP packet within the UDP payload behind
// an eight-byte tunnel header, and at least its UDP header (and a BTH on the RoCEv2 port). Each
// length a 16-bit field, so the sums do not wrap. `total`, `itotal`: the outer and inner IP
// lengths; `bth`: the inner packet is RoCEv2. False: the slow way decides.
[[gnu::always_inline]] inline bool decap_raw_key(const uint8_t* d, uint32_t len, uint16_t rx_port,
                                                 DecapFlowKey& k, uint32_t& total, uint32_t& itotal,
                                                 bool& bth) {
    static_assert(kMaxPorts <= 256, "the receiving port takes bits 56-63 of the key");
    if (len < kLeastFrame || !plain_ipv4_udp(d) || !plain_ipv4_udp(d + kInnerOff)) return false;
    const uint8_t* udp = d + kEthLen + kIpv4Len;
    const uint8_t* inner_ip = d + kInnerOff + kEthLen;
    const uint8_t* inner_udp = inner_ip + kIpv4Len;
    total = load16(d + kEthLen + kIpv4TotalLenOff);
    const uint32_t udp_len = load16(udp + 4);
    itotal = load16(inner_ip + kIpv4TotalLenOff);
    bth = load16(inner_udp + 2) == kRoceV2Port;
    const uint32_t least = kIpv4Len + kUdpLen + (bth ? kBthLen : 0);
    if (total + kEthLen > len || udp_len + kIpv4Len > total ||
        itotal + kUdpLen + 8 + kEthLen > udp_len || itotal < least)
        return false;
    uint32_t ports;
    uint16_t dport;
    std::memcpy(&k.w[0], d + kEthLen + kIpv4SrcOff, 8);
    std::memcpy(&k.w[1], inner_ip + kIpv4SrcOff, 8);
    std::memcpy(&ports, inner_udp, sizeof ports);
    const uint64_t op = bth ? inner_udp[kUdpLen] : 0;
    k.w[2] = uint64_t{ports} | uint64_t{inner_ip[kIpv4TosOff]} << 32 | op << 40 |
             uint64_t{d[kEthLen + kIpv4TosOff]} << 48 | uint64_t{rx_port} << 56;
    std::memcpy(&k.w[3], udp + kUdpLen, 8);
    std::memcpy(&dport, udp + 2, sizeof dport);
    k.w[4] = uint64_t{dport} | uint64_t{1} << 63;
    return true;
}

// The set of key `k`: its first way.
[[gnu::always_inline]] inline DecapFlow* decap_flow_set(DecapFlowCache& c, const DecapFlowKey& k) {
    const uint64_t h = (k.w[0] ^ k.w[1] ^ k.w[2] ^ k.w[3] ^ k.w[4]) * 0x9e3779b97f4a7c15u;
    return &c.flow[(h >> (64 - DecapFlowCache::kSetBits)) * DecapFlowCache::kWays];
}

inline bool decap_flow_is(const DecapFlow& e, const DecapFlowKey& k) {
    return ((e.outer_addrs ^ k.w[0]) | (e.inner_addrs ^ k.w[1]) | (e.inner_rest ^ k.w[2]) |
            (e.tunnel_hdr ^ k.w[3]) | (e.outer_rest ^ k.w[4])) == 0;
}

// Empties `c` when it was filled under another snapshot than `s` (another address or generation),
// and says whether any tunnel's flows can be kept (an IPv4 underlay: DecapFlow); once a burst,
// before decap_hit().
inline void decap_cache_bind(DecapFlowCache& c, const Snapshot& s) {
    if (likely(!rebind(c, s))) return;
    for (DecapFlow& e : c.flow) e.outer_rest = 0;
    c.hosts = s.neighbors != nullptr ? &s.neighbors->at(0) : nullptr;
    c.useful = false;
    for (const TunnelConf& t : s.tunnels) c.useful = c.useful || !t.outer_v6;
}

// A DecapFlowCache hit of frame `f`: the inner frame decapsulated from its flow's entry when the
// frame is of the cache's form, cached, and the per-packet checks pass; else nothing written and
// no flow returned. It fills no entry. The cache must be bound to the snapshot
// (decap_cache_bind()).
[[gnu::always_inline]] inline DecapHit decap_hit(uint16_t rx_port, Frame& f, DecapFlowCache& c) {
    DecapFlowKey key;
    uint32_t total, itotal;
    bool bth;
    uint8_t* d = f.data;
    if (!decap_raw_key(d, f.len, rx_port, key, total, itotal, bth)) return {};
    DecapFlow* set = decap_flow_set(c, key);
    DecapFlow* e = decap_flow_is(set[0], key)   ? &set[0]
                   : decap_flow_is(set[1], key) ? &set[1]
                                                : nullptr;
    if (e == nullptr || total > e->port_mtu || itotal > e->inner_mtu) return {};
    // The outer header checksum: the device's verdict where it gave one (outer_csum_ok()).
    if ((f.rx_cksum & (kRxIpGood | kRxIpBad)) != 0 ? (f.rx_cksum & kRxIpGood) == 0
                                                   : !ipv4_header_sum_ok(d + kEthLen, 5))
        return {};
    if (ieee_link_local(d + kInnerOff)) return {};
    // A routed LAN: the host's slot still its own (not freed since the fill) and resolved; the
    // frame readdressed to its MAC as it is now (as decap_tail() reads it), from the LAN port's.
    // The last check, so its writes may come with it.
    // (A transparent LAN, the usual one, tests the kind once.)
    const bool transparent = e->lan == DecapFlow::kLanTransparent;
    if (unlikely(!transparent) && e->lan == DecapFlow::kLanRouted) {
        const Neighbor& h = c.hosts[e->host];
        if (h.reuse.load(std::memory_order_relaxed) != e->host_reuse) return {};
        const uint64_t host_mac = h.mac.load(std::memory_order_relaxed);
        if ((host_mac & kNeighborValid) == 0) return {};
        unpack_mac(host_mac, d + kInnerOff);
        std::memcpy(d + kInnerOff + 6, e->lan_mac.data(), 6);
    }
    // As it lies, as FlowTable::add() reads it; inside the frame (kLeastFrame). 0 without a BTH
    // (a mask, not a branch).
    uint32_t qp;
    std::memcpy(&qp, d + kInnerOff + kEthLen + kIpv4Len + kUdpLen + 4, sizeof qp);
    qp &= -static_cast<uint32_t>(bth);
    if (e->tos_delta != 0) set_ipv4_tos_delta(d + kInnerOff + kEthLen, e->tos, e->tos_delta);
    // Ethernet padding is not delivered (decap_tail()).
    if (unlikely(!transparent) && e->lan == DecapFlow::kLanTagged) {
        // The LAN's tag behind the addresses, as decap_tail() pushes it.
        f.data = push_vlan_tag(d + kInnerOff, e->tci);
        f.headroom += kInnerOff - kVlanLen;
        f.len = kEthLen + kVlanLen + itotal;
        return {e, itotal, qp};
    }
    f.data = d + kInnerOff;
    f.headroom += kInnerOff;
    f.len = kEthLen + itotal;
    return {e, itotal, qp};
}

}  // namespace dscpgw::decap_fast
