// The encap cache's hit (EncapCache, encap.h), inline: encap_plain() and the burst loop (burst.h)
// run it in their own bodies, so that the frame stays in registers and no call saves any.
#pragma once

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>

#include <cstring>

#include "dataplane/cksum.h"
#include "dataplane/encap.h"
#include "dataplane/packet.h"
#include "dataplane/wire.h"

// Internal to the encapsulation (encap.cpp uses all of it; the burst loop encap_cache_bind() and
// encap_hit()); wire's names unqualified as in encap.cpp.
namespace dscpgw::encap_fast {

using namespace wire;

template <bool kV6>
constexpr uint32_t outer_hdr_len() {
    return static_cast<uint32_t>(kEthLen + (kV6 ? kIpv6Len : kIpv4Len) + kUdpLen + 8);
}

// The outer IPv4 header's sum without its total length: the tunnel's template words
// (TunnelConf::hdr_csum_base) and the TOS at `hdr` (as outer_headers() left it), folded to 16 bits
// (EncapFlow::csum_base keeps it).
inline uint16_t ipv4_outer_csum_base(const TunnelConf& t, const uint8_t* hdr) {
    return fold(t.hdr_csum_base + hdr[kEthLen + kIpv4TosOff]);
}

// The lengths and the header checksum of the outer IPv4 and UDP headers at `hdr` for an inner frame
// of `inner_len` bytes, from ipv4_outer_csum_base(): base + length < 2 * 0xffff, so one fold lands
// in 1..0xffff, where the two folds of the unfolded sum land (both nonzero). The outer UDP checksum
// stays zero, as RFC 7348 and RFC 8926 allow over IPv4.
[[gnu::always_inline]] inline void ipv4_outer_lengths(uint8_t* hdr, uint16_t csum_base,
                                                      uint32_t inner_len) {
    uint8_t* ip = hdr + kEthLen;
    const uint32_t outer_ip_len = kIpv4Len + kUdpLen + 8 + inner_len;
    store16(ip + kIpv4Len + 4, static_cast<uint16_t>(outer_ip_len - kIpv4Len));
    store16(ip + kIpv4TotalLenOff, static_cast<uint16_t>(outer_ip_len));
    const uint32_t sum = csum_base + outer_ip_len;
    store16(ip + kIpv4CsumOff, static_cast<uint16_t>(~((sum & 0xffff) + (sum >> 16))));
}

// The per-packet part of the outer headers at `hdr` (as outer_headers() left them) for an inner
// frame of `inner_len` bytes: lengths and checksums. `offload`: set when the device is to sum
// the outer UDP datagram.
template <bool kV6>
[[gnu::always_inline]] inline void outer_lengths(const TunnelConf& t, uint8_t* hdr,
                                                 uint32_t inner_len, bool& offload) {
    if constexpr (!kV6) {
        ipv4_outer_lengths(hdr, ipv4_outer_csum_base(t, hdr), inner_len);
    } else {
        uint8_t* ip = hdr + kEthLen;
        uint8_t* udp = ip + kIpv6Len;
        const uint16_t udp_len = static_cast<uint16_t>(kUdpLen + 8 + inner_len);
        store16(udp + 4, udp_len);
        store16(ip + kIpv6PayloadLenOff, udp_len);
        // Over IPv6 the UDP checksum is mandatory (RFC 8200 section 8.1), unless the tunnel says
        // its far end takes zero checksums (RFC 6935/6936; Linux's udp6zerocsumrx).
        if (t.udp6_zero_csum_tx) return;
        // DPDK's raw checksum sums words in host order; the base is kept in the same order.
        uint32_t sum = t.hdr_csum_base + rte_cpu_to_be_16(udp_len);
        if (t.tx_udp_offload) {
            // The NIC sums the datagram; it wants the pseudo-header sum in place (DPDK's contract
            // for RTE_MBUF_F_TX_UDP_CKSUM), set by the burst glue's flags.
            const auto pseudo = fold(sum);
            std::memcpy(udp + 6, &pseudo, sizeof pseudo);
            offload = true;
            return;
        }
        sum = raw_sum(udp, udp_len, sum);  // AVX2 where the CPU has it (cksum.h).
        uint16_t csum = static_cast<uint16_t>(~fold(sum));
        if (csum == 0) csum = 0xffff;
        std::memcpy(udp + 6, &csum, sizeof csum);
    }
}

// Makes room for the outer headers in front of the inner frame: `tags` bytes of VLAN tags
// removed, the inner Ethernet header readdressed in routed mode.
template <bool kV6>
[[gnu::always_inline]] inline void encap_room(const TunnelConf& t, Frame& f, uint32_t tags,
                                              uint32_t inner_len) {
    constexpr uint32_t hdr_len = outer_hdr_len<kV6>();
    if (tags != 0) {
        std::memmove(f.data + tags, f.data, 2 * 6);
        f.data += tags;
        f.headroom += tags;
    }
    if (t.has_inner_mac) {
        // Routed LAN: the frame was addressed to us; readdress it to the far end.
        std::memcpy(f.data, t.inner_mac.data(), 6);
        std::memcpy(f.data + 6, t.inner_src_mac.data(), 6);
    }
    f.data -= hdr_len;
    f.headroom -= hdr_len;
    f.len = hdr_len + inner_len;
}

// The EncapCache key of an untagged IPv4 or IPv6 UDP frame (encap_raw_key(), encap_raw_key6()).
struct EncapKey {
    uint64_t addrs, rest;
};

// The set of key `k`: its first way.
[[gnu::always_inline]] inline EncapFlow* encap_flow_set(EncapCache& c, const EncapKey& k) {
    const uint64_t h = (k.addrs ^ k.rest) * 0x9e3779b97f4a7c15u;
    constexpr size_t kSetBytes = EncapCache::kWays * sizeof(EncapFlow);
    return reinterpret_cast<EncapFlow*>(reinterpret_cast<char*>(c.flow) +
                                        (h >> (64 - EncapCache::kSetBits)) * kSetBytes);
}

inline bool encap_flow_is(const EncapFlow& e, const EncapKey& k) {
    return e.addrs == k.addrs && e.rest == k.rest;
}

// The same for an IPv6 key, whose `addrs` is a digest: the source and destination at `a` (32
// bytes, as they lie in the packet) against the entry's.
inline bool encap_flow_is6(const EncapFlow& e, const EncapKey& k, const uint8_t* a) {
    const bool key = encap_flow_is(e, k), addrs = same32(a, e.addrs6.data());
    return key & addrs;  // Both, without a branch.
}

// An EncapFlow hit: what encap_plain_family<kV6>() would do to the frame, from the entry, once the
// per-packet checks pass (`ip_len`: the frame's IP length, IPv4's total length or IPv6's 40 +
// payload length; its TOS is the key's). The notes and verdict are the entry's
// (encap_hit_outcome()). False (nothing written): the slow way decides (and refills the entry).
template <bool kV6>
[[gnu::always_inline]] inline bool encap_cached(const EncapFlow& e, uint32_t ip_len, Frame& f) {
    const uint32_t hdr_len = e.hdr_len;
    // The outer IP packet is the outer headers but Ethernet, and the inner frame with its own.
    if (ip_len > e.max_ip_len || f.headroom < hdr_len ||
        hdr_len + ip_len > e.path_mtu->load(std::memory_order_relaxed))
        return false;
    if (e.neighbor != nullptr && e.neighbor->load(std::memory_order_relaxed) != e.nh_mac)
        return false;
    const TunnelConf& t = *e.tunnel;
    if (e.tos_delta != 0) {
        if constexpr (kV6)
            set_ipv6_tclass(f.data + kEthLen, e.tos);  // No header checksum to mend.
        else
            set_ipv4_tos_delta(f.data + kEthLen, e.tos, e.tos_delta);
    }
    const uint32_t inner_len = kEthLen + ip_len;
    bool offload = false;  // The entry's (encap_fill()).
    if (hdr_len == outer_hdr_len<false>()) {
        encap_room<false>(t, f, 0, inner_len);
        std::memcpy(f.data, e.hdr.data(), outer_hdr_len<false>());
        ipv4_outer_lengths(f.data, e.csum_base, inner_len);  // The entry's sum: no TOS load.
    } else {
        encap_room<true>(t, f, 0, inner_len);
        std::memcpy(f.data, e.hdr.data(), outer_hdr_len<true>());
        outer_lengths<true>(t, f.data, inner_len, offload);
    }
    return true;
}

// The EncapCache key of an untagged IPv4 UDP frame read straight from its bytes, with the checks
// of parse_plain_udp_family<false>() on the same words: EtherType IPv4, version 4 without options,
// UDP, no fragment, a total length that fits the frame and holds the UDP header (and a BTH on the
// RoCEv2 port). The key: the addresses and UDP ports as they lie (byte order does not matter to a
// key), the TOS, the BTH opcode (0 without a BTH) and the receiving port. For frames of at least 54
// bytes (the least a RoCEv2 frame has), so that the BTH opcode's byte is inside the frame; false:
// the parse decides (it may yet take a short frame).
[[gnu::always_inline]] inline bool encap_raw_key(const uint8_t* d, uint32_t len, uint16_t rx_port,
                                                 EncapKey& k, uint32_t& ip_len, bool& bth) {
    static_assert(kEthLen + kIpv4Len + kUdpLen + kBthLen == 54);
    static_assert(kMaxPorts < (1u << 14), "the receiving port takes bits 48-61 of the key");
    if (len < kEthLen + kIpv4Len + kUdpLen + kBthLen || !plain_ipv4_udp(d)) return false;
    const uint32_t total = load16(d + kEthLen + kIpv4TotalLenOff);
    const uint8_t* udp = d + kEthLen + kIpv4Len;
    bth = load16(udp + 2) == kRoceV2Port;
    // least <= total <= len - kEthLen as one unsigned compare: len >= 54 > kEthLen + least, so
    // the right side does not wrap, and a total under least wraps to more than it.
    const uint32_t least = kIpv4Len + kUdpLen + (bth ? kBthLen : 0);
    if (total - least > len - kEthLen - least) return false;
    uint32_t ports;
    std::memcpy(&k.addrs, d + kEthLen + kIpv4SrcOff, sizeof k.addrs);
    std::memcpy(&ports, udp, sizeof ports);
    const uint64_t op = bth ? udp[kUdpLen] : 0;
    k.rest = uint64_t{ports} | uint64_t{d[kEthLen + kIpv4TosOff]} << 32 | op << 40 |
             uint64_t{rx_port} << 48 | uint64_t{1} << 63;
    ip_len = total;
    return true;
}

// The EncapCache key of an untagged IPv6 UDP frame without extension headers, read straight from
// its bytes with the checks of parse_plain_udp_family<true>(), as encap_raw_key() for IPv4: the
// key's `addrs` is a digest of the source and destination (wire::ipv6_addrs_digest()), the rest
// as IPv4's with the traffic class for the TOS and bit 62 set. For frames of at least 74 bytes (the
// least an IPv6 RoCEv2 frame has). `ip_len`: 40 + the payload length.
[[gnu::always_inline]] inline bool encap_raw_key6(const uint8_t* d, uint32_t len, uint16_t rx_port,
                                                  EncapKey& k, uint32_t& ip_len, bool& bth) {
    static_assert(kEthLen + kIpv6Len + kUdpLen + kBthLen == 74);
    static_assert(kMaxPorts < (1u << 14), "the receiving port takes bits 48-61 of the key");
    if (len < kEthLen + kIpv6Len + kUdpLen + kBthLen || !plain_ipv6_udp(d)) return false;
    const uint8_t* ip = d + kEthLen;
    const uint32_t total = kIpv6Len + load16(ip + kIpv6PayloadLenOff);
    const uint8_t* udp = ip + kIpv6Len;
    bth = load16(udp + 2) == kRoceV2Port;
    // As encap_raw_key(): least <= total <= len - kEthLen in one unsigned compare.
    const uint32_t least = kIpv6Len + kUdpLen + (bth ? kBthLen : 0);
    if (total - least > len - kEthLen - least) return false;
    k.addrs = ipv6_addrs_digest(ip + kIpv6SrcOff);  // Source and destination, contiguous.
    uint32_t ports;
    std::memcpy(&ports, udp, sizeof ports);
    const uint64_t op = bth ? udp[kUdpLen] : 0;
    k.rest = uint64_t{ports} | uint64_t{ipv6_tclass(ip)} << 32 | op << 40 |
             uint64_t{rx_port} << 48 | uint64_t{3} << 62;
    ip_len = total;
    return true;
}

// Empties `c` when it was filled under another snapshot than `s` (another address or generation):
// once a burst, before encap_hit().
inline void encap_cache_bind(EncapCache& c, const Snapshot& s) {
    if (unlikely(rebind(c, s))) {
        for (EncapFlow& e : c.flow) e.rest = 0;
        c.v6 = false;
    }
}

// encap_hit() once the frame's key `key` is read (encap_raw_key(), or encap_raw_key6() for kV6).
template <bool kV6>
[[gnu::always_inline]] inline EncapHit encap_hit_key(Frame& f, EncapCache& cache,
                                                     const EncapKey& key, uint32_t ip_len,
                                                     bool bth) {
    constexpr uint32_t l4_off = kEthLen + (kV6 ? kIpv6Len : kIpv4Len);
    EncapFlow* set = encap_flow_set(cache, key);
    EncapFlow* e;
    if constexpr (kV6) {
        const uint8_t* a = f.data + kEthLen + kIpv6SrcOff;
        e = encap_flow_is6(set[0], key, a)   ? &set[0]
            : encap_flow_is6(set[1], key, a) ? &set[1]
                                             : nullptr;
    } else {
        e = encap_flow_is(set[0], key) ? &set[0] : encap_flow_is(set[1], key) ? &set[1] : nullptr;
    }
    if (e == nullptr) return {};
    // As it lies, as FlowTable::add() reads it; within the frame (the key took at least 54 or 74
    // bytes). Read before the headers move; 0 without a BTH (a mask, not a branch).
    uint32_t qp;
    std::memcpy(&qp, f.data + l4_off + kUdpLen + 4, sizeof qp);
    qp &= -static_cast<uint32_t>(bth);
    if (!encap_cached<kV6>(*e, ip_len, f)) return {};
    return {e, ip_len, qp};
}

// An EncapCache hit of frame `f`: the frame encapsulated from its flow's entry when it is of the
// cache's form, cached, and the entry's per-packet checks pass; else nothing written and no flow
// returned. It fills no entry. The cache must be bound to `s` (encap_cache_bind()). IPv4 first,
// then, with kV6, IPv6: the burst loop has an instance without it for a cache that holds no IPv6
// flow (EncapCache::v6), as IPv6's registers cost the IPv4 hit five instructions a packet.
template <bool kV6 = true>
[[gnu::always_inline]] inline EncapHit encap_hit(uint16_t rx_port, Frame& f, EncapCache& cache) {
    EncapKey key;
    uint32_t ip_len;
    bool bth;
    if (likely(encap_raw_key(f.data, f.len, rx_port, key, ip_len, bth)))
        return encap_hit_key<false>(f, cache, key, ip_len, bth);
    if constexpr (kV6) {
        if (encap_raw_key6(f.data, f.len, rx_port, key, ip_len, bth))
            return encap_hit_key<true>(f, cache, key, ip_len, bth);
    }
    return {};
}

}  // namespace dscpgw::encap_fast
