// The decap flow cache's hit (DecapFlowCache, decap.h), inline: decap_plain() and the burst loop
// (burst.h) run it in their own bodies, as the encap cache's (encap_hit.h).
#pragma once

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>

#include <cstring>

#include "dataplane/cksum.h"
#include "dataplane/decap.h"
#include "dataplane/neighbor.h"
#include "dataplane/packet.h"
#include "dataplane/snapshot.h"
#include "dataplane/wire.h"

// Internal to the decapsulation (decap.cpp uses all of it; the burst loop decap_cache_bind() and
// decap_hit()); wire's names unqualified as in decap.cpp.
namespace dscpgw::decap_fast {

using namespace wire;

// Where the inner frame starts behind the outer IP header (IPv4 without options, IPv6 without
// extension headers), UDP and an eight-byte tunnel header, and the least frame the cache takes: an
// inner RoCEv2 frame's headers (Ethernet, IPv4 or, kIn6, IPv6, UDP, BTH) behind that, so that
// every byte the key reads is inside the frame.
template <bool kV6>
inline constexpr uint32_t kInnerOff = kEthLen + (kV6 ? kIpv6Len : kIpv4Len) + kUdpLen + 8;
template <bool kV6, bool kIn6 = false>
inline constexpr uint32_t kLeastFrame = kInnerOff<kV6> + kEthLen +
                                        (kIn6 ? kIpv6Len : kIpv4Len) + kUdpLen + kBthLen;
static_assert(kInnerOff<false> == 50 && kLeastFrame<false> == 104);
static_assert(kInnerOff<true> == 70 && kLeastFrame<true> == 124);
static_assert(kLeastFrame<false, true> == 124 && kLeastFrame<true, true> == 144);

// DecapFlow::outer_rest beside the outer UDP destination port: an IPv6 underlay, its UDP
// checksum zero, and the entry in use.
inline constexpr uint64_t kKeyV6 = uint64_t{1} << 16;
inline constexpr uint64_t kKeyZeroCsum = uint64_t{1} << 17;
inline constexpr uint64_t kKeyInner6 = DecapFlow::kKeyInner6;  // The inner packet is IPv6.
inline constexpr uint64_t kKeyUsed = uint64_t{1} << 63;

// An IEEE 802.1 reserved destination (01-80-C2-00-00-0x): never forwarded by a bridge.
inline bool ieee_link_local(const uint8_t* dst_mac) {
    return load32(dst_mac) == 0x0180c200u && dst_mac[4] == 0 && (dst_mac[5] & 0xf0) == 0;
}

// The DecapFlowCache key: DecapFlow's first five words.
struct DecapFlowKey {
    uint64_t w[5];
};

// The key of a tunnelled IPv4 (kIn6: IPv6) packet read straight from the frame's bytes, with the
// checks of decap_plain()'s two parses and length tests on the same words: both headers of the
// plain form (plain_ipv4_udp() or plain_ipv6_udp() on either side: EtherType, the version without
// options or extension headers, UDP, no fragment), the outer IP packet within the frame, the UDP
// datagram within it, the inner IP packet within the UDP payload behind an eight-byte tunnel
// header, and at least its UDP header (and a BTH on the RoCEv2 port). Each length a 16-bit field
// (an IPv6 one plus 40), so the sums do not wrap. An IPv6 underlay's key holds the outer source
// folded to eight bytes and not the destination: a hit compares both whole (outer6_ok()); an
// inner IPv6 packet's a digest of its addresses, as encap_raw_key6(), compared whole on a hit.
// `total`, `itotal`: the outer and inner IP lengths; `bth`: the inner packet is RoCEv2. False: the
// slow way decides.
template <bool kV6, bool kIn6 = false>
[[gnu::always_inline]] inline bool decap_raw_key(const uint8_t* d, uint32_t len, uint16_t rx_port,
                                                 DecapFlowKey& k, uint32_t& total, uint32_t& itotal,
                                                 bool& bth) {
    static_assert(kMaxPorts <= 256, "the receiving port takes bits 56-63 of the key");
    constexpr uint32_t hl = kV6 ? kIpv6Len : kIpv4Len;
    constexpr uint32_t ihl = kIn6 ? kIpv6Len : kIpv4Len;
    if (len < kLeastFrame<kV6, kIn6> || !(kV6 ? plain_ipv6_udp(d) : plain_ipv4_udp(d)) ||
        !(kIn6 ? plain_ipv6_udp(d + kInnerOff<kV6>) : plain_ipv4_udp(d + kInnerOff<kV6>)))
        return false;
    const uint8_t* ip = d + kEthLen;
    const uint8_t* udp = ip + hl;
    const uint8_t* inner_ip = d + kInnerOff<kV6> + kEthLen;
    const uint8_t* inner_udp = inner_ip + ihl;
    total = kV6 ? kIpv6Len + load16(ip + kIpv6PayloadLenOff) : load16(ip + kIpv4TotalLenOff);
    const uint32_t udp_len = load16(udp + 4);
    itotal = kIn6 ? kIpv6Len + load16(inner_ip + kIpv6PayloadLenOff)
                  : load16(inner_ip + kIpv4TotalLenOff);
    bth = load16(inner_udp + 2) == kRoceV2Port;
    const uint32_t least = ihl + kUdpLen + (bth ? kBthLen : 0);
    if (total + kEthLen > len || udp_len + hl > total || itotal + kUdpLen + 8 + kEthLen > udp_len ||
        itotal < least)
        return false;
    uint32_t ports;
    uint16_t dport;
    if constexpr (kV6) {
        uint64_t hi, lo;
        std::memcpy(&hi, ip + kIpv6SrcOff, 8);
        std::memcpy(&lo, ip + kIpv6SrcOff + 8, 8);
        k.w[0] = hi ^ lo;
    } else {
        std::memcpy(&k.w[0], ip + kIpv4SrcOff, 8);
    }
    uint64_t inner_tos;
    if constexpr (kIn6) {
        k.w[1] = ipv6_addrs_digest(inner_ip + kIpv6SrcOff);
        inner_tos = ipv6_tclass(inner_ip);
    } else {
        std::memcpy(&k.w[1], inner_ip + kIpv4SrcOff, 8);
        inner_tos = inner_ip[kIpv4TosOff];
    }
    std::memcpy(&ports, inner_udp, sizeof ports);
    const uint64_t op = bth ? inner_udp[kUdpLen] : 0;
    const uint64_t outer_tos = kV6 ? ipv6_tclass(ip) : ip[kIpv4TosOff];
    k.w[2] =
        uint64_t{ports} | inner_tos << 32 | op << 40 | outer_tos << 48 | uint64_t{rx_port} << 56;
    std::memcpy(&k.w[3], udp + kUdpLen, 8);
    std::memcpy(&dport, udp + 2, sizeof dport);
    k.w[4] = uint64_t{dport} | kKeyUsed | (kIn6 ? kKeyInner6 : 0);
    if constexpr (kV6) k.w[4] |= kKeyV6 | (load16(udp + 6) == 0 ? kKeyZeroCsum : 0);
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

// The same for an inner IPv6 key, whose inner addresses are a digest: the inner source and
// destination at `a` (32 bytes, as they lie in the packet) against the entry's.
inline bool decap_flow_is6(const DecapFlow& e, const DecapFlowKey& k, const uint8_t* a) {
    const bool key = decap_flow_is(e, k), addrs = same32(a, e.inner_addrs6.data());
    return key & addrs;  // Both, without a branch.
}

// Empties `c` when it was filled under another snapshot than `s` (another address or generation),
// and says whether any tunnel's flows can be kept and whether any over IPv6; once a burst, before
// decap_hit().
inline void decap_cache_bind(DecapFlowCache& c, const Snapshot& s) {
    if (likely(!rebind(c, s))) return;
    for (DecapFlow& e : c.flow) e.outer_rest = 0;
    c.in6 = false;
    c.hosts = s.neighbors != nullptr ? &s.neighbors->at(0) : nullptr;
    c.useful = !s.tunnels.empty();
    c.v6 = false;
    for (const TunnelConf& t : s.tunnels) c.v6 = c.v6 || t.outer_v6;
}

// The UDP checksum (not zero) of the `udp_len`-byte datagram at `udp` behind the IPv6 header at
// `ip`: the device's verdict where it gave one (RxCksum bits `rx_cksum`), else summed here. A sum
// over data that includes a right checksum is 0xffff.
[[gnu::always_inline]] inline bool udp6_csum_ok(const uint8_t* ip, const uint8_t* udp,
                                                uint32_t udp_len, uint8_t rx_cksum) {
    if ((rx_cksum & (kRxL4Good | kRxL4Bad)) != 0) return (rx_cksum & kRxL4Good) != 0;
    // The raw sum adds words in host order; the pseudo-header's numbers are added alike. Its
    // addresses lie just before a UDP header that follows the IPv6 header: one sum then.
    const uint32_t lens =
        rte_cpu_to_be_16(static_cast<uint16_t>(udp_len)) + rte_cpu_to_be_16(kProtoUdp);
    if (udp == ip + kIpv6Len) return fold(raw_sum(ip + kIpv6SrcOff, 32 + udp_len, lens)) == 0xffff;
    return fold(raw_sum(udp, udp_len, raw_sum(ip + kIpv6SrcOff, 32, lens))) == 0xffff;
}

// An IPv6 underlay's hit of entry `e`, the outer IPv6 header at `ip`: the source its tunnel's
// remote and the destination the receiving port's address, whole (the key holds the source
// folded, and not the destination), and the UDP checksum right; a zero one (`zero_csum`: the
// key's kKeyZeroCsum) passes, as its entry exists only where the tunnel takes zero checksums (the
// slow way filled it). No key by reference: where this is not inlined, the key would have to
// live in memory in every hit of the burst loop.
inline bool outer6_ok(const DecapFlowCache& c, uint16_t rx_port, const DecapFlow& e, bool zero_csum,
                      const uint8_t* ip, uint8_t rx_cksum) {
    const Snapshot& s = *c.snap;
    const TunnelConf& t = s.tunnels[static_cast<size_t>(e.notes.tunnel_id)];
    if (std::memcmp(ip + kIpv6SrcOff, t.remote.data(), 16) != 0 ||
        std::memcmp(ip + kIpv6DstOff, s.ports[rx_port].ipv6.data(), 16) != 0)
        return false;
    if (zero_csum) return true;
    const uint8_t* udp = ip + kIpv6Len;
    return udp6_csum_ok(ip, udp, load16(udp + 4), rx_cksum);
}

// decap_hit() for a frame whose key decap_raw_key<kV6, kIn6>() read.
template <bool kV6, bool kIn6 = false>
[[gnu::always_inline]] inline DecapHit decap_keyed(uint16_t rx_port, Frame& f, DecapFlowCache& c,
                                                   const DecapFlowKey& key, uint32_t total,
                                                   uint32_t itotal, bool bth) {
    constexpr uint32_t inner_off = kInnerOff<kV6>;
    constexpr uint32_t ihl = kIn6 ? kIpv6Len : kIpv4Len;
    uint8_t* d = f.data;
    DecapFlow* set = decap_flow_set(c, key);
    DecapFlow* e;
    if constexpr (kIn6) {
        const uint8_t* a = d + inner_off + kEthLen + kIpv6SrcOff;
        e = decap_flow_is6(set[0], key, a)   ? &set[0]
            : decap_flow_is6(set[1], key, a) ? &set[1]
                                             : nullptr;
    } else {
        e = decap_flow_is(set[0], key) ? &set[0] : decap_flow_is(set[1], key) ? &set[1] : nullptr;
    }
    if (e == nullptr || total > e->port_mtu || itotal > e->inner_mtu) return {};
    if constexpr (kV6) {
        if (!outer6_ok(c, rx_port, *e, (key.w[4] & kKeyZeroCsum) != 0, d + kEthLen, f.rx_cksum))
            return {};
    } else {
        // The outer header checksum: the device's verdict where it gave one (outer_csum_ok()).
        if ((f.rx_cksum & (kRxIpGood | kRxIpBad)) != 0 ? (f.rx_cksum & kRxIpGood) == 0
                                                       : !ipv4_header_sum_ok(d + kEthLen, 5))
            return {};
    }
    if (ieee_link_local(d + inner_off)) return {};
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
        unpack_mac(host_mac, d + inner_off);
        std::memcpy(d + inner_off + 6, e->lan_mac.data(), 6);
    }
    // As it lies, as FlowTable::add() reads it; inside the frame (kLeastFrame). 0 without a BTH
    // (a mask, not a branch).
    uint32_t qp;
    std::memcpy(&qp, d + inner_off + kEthLen + ihl + kUdpLen + 4, sizeof qp);
    qp &= -static_cast<uint32_t>(bth);
    if (e->tos_delta != 0) {
        if constexpr (kIn6)
            set_ipv6_tclass(d + inner_off + kEthLen, e->tos);  // No header checksum to mend.
        else
            set_ipv4_tos_delta(d + inner_off + kEthLen, e->tos, e->tos_delta);
    }
    // Ethernet padding is not delivered (decap_tail()).
    if (unlikely(!transparent) && e->lan == DecapFlow::kLanTagged) {
        // The LAN's tag behind the addresses, as decap_tail() pushes it.
        f.data = push_vlan_tag(d + inner_off, e->tci);
        f.headroom += inner_off - kVlanLen;
        f.len = kEthLen + kVlanLen + itotal;
        return {e, itotal, qp};
    }
    f.data = d + inner_off;
    f.headroom += inner_off;
    f.len = kEthLen + itotal;
    return {e, itotal, qp};
}

// A DecapFlowCache hit of frame `f`: the inner frame decapsulated from its flow's entry when the
// frame is of the cache's form, cached, and the per-packet checks pass; else nothing written and
// no flow returned. It fills no entry. The cache must be bound to the snapshot
// (decap_cache_bind()). An IPv4 packet inside first; then, with kIn6, an IPv6 one: the burst loop
// has an instance without it for a cache that holds no inner IPv6 flow (DecapFlowCache::in6), as
// for the encap cache's IPv6 (encap_hit()).
template <bool kIn6 = true>
[[gnu::always_inline]] inline DecapHit decap_hit(uint16_t rx_port, Frame& f, DecapFlowCache& c) {
    DecapFlowKey key;
    uint32_t total, itotal;
    bool bth;
    if (!decap_raw_key<false>(f.data, f.len, rx_port, key, total, itotal, bth)) {
        if (c.v6 && decap_raw_key<true>(f.data, f.len, rx_port, key, total, itotal, bth))
            return decap_keyed<true>(rx_port, f, c, key, total, itotal, bth);
        if constexpr (kIn6) {
            if (decap_raw_key<false, true>(f.data, f.len, rx_port, key, total, itotal, bth))
                return decap_keyed<false, true>(rx_port, f, c, key, total, itotal, bth);
            if (c.v6 && decap_raw_key<true, true>(f.data, f.len, rx_port, key, total, itotal, bth))
                return decap_keyed<true, true>(rx_port, f, c, key, total, itotal, bth);
        }
        return {};
    }
    return decap_keyed<false>(rx_port, f, c, key, total, itotal, bth);
}

}  // namespace dscpgw::decap_fast
