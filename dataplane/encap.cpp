// Inner -> outer. The shortcut and the general path differ in how they parse and when they
// decline; from the route lookup on they share mark_inner(), check_tunnel() and encap_tail().
#include "dataplane/encap.h"

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include <algorithm>
#include <cstring>

#include "dataplane/cksum.h"
#include "dataplane/encap_hit.h"
#include "dataplane/local.h"
#include "dataplane/neighbor.h"
#include "dataplane/qos.h"
#include "dataplane/wire.h"

namespace dscpgw {

using namespace wire;
using namespace encap_fast;

namespace {

bool prefixes_match(const ClassRule& c, uint8_t ip_ver, const uint8_t* src, const uint8_t* dst) {
    if (!c.src.empty()) {
        bool hit = false;
        for (const Prefix& p : c.src) hit = hit || p.contains(ip_ver, src);
        if (!hit) return false;
    }
    if (!c.dst.empty()) {
        bool hit = false;
        for (const Prefix& p : c.dst) hit = hit || p.contains(ip_ver, dst);
        if (!hit) return false;
    }
    return true;
}

// CRC32-C of one word: the instruction itself where the build targets SSE4.2 (DPDK's
// rte_hash_crc_4byte() tests the CPU's capability on every call).
uint32_t crc32c(uint32_t data, uint32_t init) {
#ifdef __SSE4_2__
    return __builtin_ia32_crc32si(init, data);
#else
    return rte_hash_crc_4byte(data, init);
#endif
}

bool rule_matches(const ClassMatch& c, uint64_t key, unsigned dscp) {
    return (((c.dscp_mask >> dscp) & 1) != 0) & (((key ^ c.key) & c.mask) == 0);
}

// classify() from rule `i` on, for when a rule with prefixes is reached: out of line, so that the
// loop over the (usual) prefix-free rules makes no call and keeps everything in registers. It
// takes the addresses as values: a ParsedPacket passed by reference would have to live in memory.
__attribute__((noinline)) int classify_from(const Snapshot& s, int i, uint64_t key, unsigned dscp,
                                            uint8_t ip_ver, const uint8_t* src,
                                            const uint8_t* dst) {
    const int n = static_cast<int>(s.class_match.size());
    for (; i < n; ++i) {
        const ClassMatch& c = s.class_match[static_cast<size_t>(i)];
        if (rule_matches(c, key, dscp) &&
            (!c.prefixes || prefixes_match(s.classes[static_cast<size_t>(i)], ip_ver, src, dst)))
            return i;
    }
    return -1;
}

// The hot path inlines these two; classify() and flow_hash() are the same code out of line.
[[gnu::always_inline]] inline int classify_inline(const Snapshot& s, const ParsedPacket& pp) {
    const ClassMatch* m = s.class_match.data();
    const int n = static_cast<int>(s.class_match.size());
    const uint64_t key = class_key(pp);
    const unsigned dscp = pp.dscp();
    for (int i = 0; i < n; ++i) {
        if (!rule_matches(m[i], key, dscp)) continue;
        return m[i].prefixes ? classify_from(s, i, key, dscp, pp.ip_ver, pp.src, pp.dst) : i;
    }
    return -1;
}

[[gnu::always_inline]] inline uint32_t flow_hash_inline(const ParsedPacket& pp) {
    uint32_t h = pp.proto;
    const unsigned words = pp.ip_ver == 4 ? 1 : 4;
    for (unsigned i = 0; i < words; ++i) {
        h = crc32c(load32(pp.src + 4 * i), h);
        h = crc32c(load32(pp.dst + 4 * i), h);
    }
    if (pp.has_ports) h = crc32c((uint32_t{pp.sport} << 16) | pp.dport, h);
    // CRC32-C leaves the low bits of similar tuples correlated; fold the high half in.
    return h ^ (h >> 16);
}

}  // namespace

int classify(const Snapshot& s, const ParsedPacket& pp) { return classify_inline(s, pp); }

uint32_t flow_hash(const ParsedPacket& pp) { return flow_hash_inline(pp); }

namespace {

// Marks the inner packet for class `cls` (-1: none): the class's DSCP if it sets one, the ECN bits
// untouched. Returns the TOS the packet leaves with. kPlainFamily: 4 or 6 when the caller knows the
// frame is untagged of that family (the IP header at byte 14), else 0.
template <int kPlainFamily = 0>
[[gnu::always_inline]] inline uint8_t mark_inner(const Snapshot& s, const ParsedPacket& pp, int cls,
                                                 uint8_t* frame, PacketNotes& n) {
    const int8_t set = cls >= 0 ? s.class_match[static_cast<size_t>(cls)].set_dscp : -1;
    const uint8_t tos = set >= 0 ? static_cast<uint8_t>(set << 2 | (pp.tos & 3)) : pp.tos;
    if (tos != pp.tos) {
        if constexpr (kPlainFamily == 4)
            set_ipv4_tos(frame + kEthLen, tos);
        else if constexpr (kPlainFamily == 6)
            set_ipv6_tclass(frame + kEthLen, tos);
        else
            write_tos(pp, frame, tos);
        n.dscp_rewritten = true;
    }
    n.class_id = static_cast<int16_t>(cls);
    n.dscp_in = static_cast<int16_t>(pp.dscp());
    n.dscp_out = static_cast<int16_t>(tos >> 2);
    return tos;
}

// The DSCP the outer header inherits (the tunnel's `outer_dscp` maps it, or fixes it): the inner
// DSCP after marking for classified traffic and on a port that trusts its hosts' marks, else the
// port's `default_dscp`, so that an unclassified host cannot pick its own underlay priority.
// `trusted`: the DSCP is the gateway's own choice although no class matched (pcp_to_dscp).
inline uint8_t inherited_dscp(const PortConf& port, int cls, uint8_t tos, bool trusted = false) {
    return cls >= 0 || trusted || port.trust_dscp ? static_cast<uint8_t>(tos >> 2)
                                                  : port.default_dscp;
}

// Gives the packet DSCP `dscp`, its ECN bits kept, and notes it: the pcp_to_dscp map and the QoS
// stage both re-mark after mark_inner(). Returns the TOS it leaves with.
uint8_t remark(const ParsedPacket& pp, uint8_t* frame, uint8_t tos, unsigned dscp, PacketNotes& n) {
    const auto out = static_cast<uint8_t>(dscp << 2 | (tos & 3u));
    if (out != tos) write_tos(pp, frame, out);
    n.dscp_rewritten = dscp != pp.dscp();
    n.dscp_out = static_cast<int16_t>(dscp);
    return out;
}

// A flow as `adaptive` rates count it: a RoCE conversation (addresses and destination QP), else
// the 5-tuple; 64 bits of two CRC32-C chains, never 0 (a free slot).
uint64_t qos_flow_tag(const ParsedPacket& pp, const uint8_t* frame) {
    uint32_t a = 0x9e3779b9u ^ pp.ip_ver, b = 0x7f4a7c15u ^ pp.proto;
    const unsigned words = pp.ip_ver == 4 ? 1 : 4;
    for (unsigned i = 0; i < words; ++i) {
        a = crc32c(load32(pp.src + 4 * i), a);
        a = crc32c(load32(pp.dst + 4 * i), a);
        b = crc32c(load32(pp.dst + 4 * i), b);
        b = crc32c(load32(pp.src + 4 * i), b);
    }
    uint32_t rest = 0;
    if (pp.has_bth)
        rest = load32(frame + pp.l4_off + kUdpLen + 4) & 0xffffffu;  // Destination QP.
    else if (pp.has_ports)
        rest = uint32_t{pp.sport} << 16 | pp.dport;
    a = crc32c(rest, a);
    b = crc32c(rest ^ (pp.has_bth ? 0x80000000u : 0u), b);
    const uint64_t tag = uint64_t{a} << 32 | b;
    return tag != 0 ? tag : 1;
}

// The QoS stage of a class with `adaptive` rules and/or a policer, once the packet is known to
// leave through a tunnel: the adaptive rule's DSCP over the class's, then the policer's colour
// (yellow's and red's DSCP, or red's drop). Rewrites the inner TOS; returns it, or -1: drop.
__attribute__((noinline)) int qos_stage(const Snapshot& s, const ParsedPacket& pp, int cls,
                                        const Frame& f, PacketNotes& n, uint8_t tos,
                                        const QosClock& clk) {
    const ClassMatch& m = s.class_match[static_cast<size_t>(cls)];
    const uint64_t now = clk.now != QosClock::kReadTsc ? clk.now : rte_rdtsc();
    unsigned dscp = tos >> 2;
    if ((m.qos & ClassMatch::kQosAdaptive) != 0) {
        const ClassRule& r = s.classes[static_cast<size_t>(cls)];
        uint64_t pps = 0, bps = 0;
        const bool rated = clk.rates != nullptr;
        if (rated) clk.rates->update(qos_flow_tag(pp, f.data), now, pp.ip_len, pps, bps);
        for (size_t i = 0; i < r.adaptive.size(); ++i) {
            const AdaptiveRule& a = r.adaptive[i];
            if (pp.ip_len >= a.min_bytes && (a.min_pps == 0 || (rated && pps >= a.min_pps)) &&
                (a.min_bps == 0 || (rated && bps >= a.min_bps))) {
                dscp = a.dscp;
                n.adaptive1 = static_cast<uint8_t>(i + 1);
                n.qos_noted = true;
                break;
            }
        }
    }
    if ((m.qos & ClassMatch::kQosPolicer) != 0) {
        const PolicerConf& pc = s.policers[m.policer];
        Colour in = kGreen;
        if (pc.colour_aware) {
            if (pc.red >= 0 && pp.dscp() == pc.red)
                in = kRed;
            else if (pc.yellow >= 0 && pp.dscp() == pc.yellow)
                in = kYellow;
        }
        const Colour c = police(*s.meters[m.policer], now, pp.ip_len, in, pc.colour_aware);
        n.colour1 = static_cast<uint8_t>(c + 1);
        n.qos_noted = true;
        n.policer = m.policer;
        n.ip_len = pp.ip_len;
        if (c == kYellow && pc.yellow >= 0) dscp = static_cast<unsigned>(pc.yellow);
        if (c == kRed) {
            if (pc.red < 0) return -1;
            dscp = static_cast<unsigned>(pc.red);
        }
    }
    return remark(pp, f.data, tos, dscp, n);
}

// Whether tunnel `t` can take an inner frame of `inner_len` bytes (Ethernet + IP, no tags) with
// `headroom` bytes in front (tags included): nothing written. Sets the next hop's MAC (0: the
// template's).
template <bool kV6>
DropReason check_tunnel_family(const TunnelConf& t, const NeighborTable& neighbors,
                               uint32_t headroom, uint32_t inner_len, uint64_t& nh_mac) {
    constexpr uint32_t ip_hdr_len = kV6 ? kIpv6Len : kIpv4Len;
    if (ip_hdr_len + kUdpLen + 8 + inner_len > t.path->mtu.load(std::memory_order_relaxed))
        return DropReason::too_big;
    if (headroom < outer_hdr_len<kV6>()) return DropReason::no_headroom;
    nh_mac = 0;
    if (t.neighbor >= 0) {
        nh_mac = neighbors.at(static_cast<size_t>(t.neighbor)).mac.load(std::memory_order_relaxed);
        if ((nh_mac & kNeighborValid) == 0) return DropReason::no_neighbor;
    }
    return DropReason::none;
}

[[gnu::always_inline]] inline DropReason check_tunnel(const TunnelConf& t,
                                                      const NeighborTable& neighbors,
                                                      uint32_t headroom, uint32_t inner_len,
                                                      uint64_t& nh_mac) {
    return t.outer_v6 ? check_tunnel_family<true>(t, neighbors, headroom, inner_len, nh_mac)
                      : check_tunnel_family<false>(t, neighbors, headroom, inner_len, nh_mac);
}

// The outer headers of tunnel `t` for one flow, at `hdr`: the template with the next hop's MAC,
// the TOS and the entropy (source port, IPv6 flow label) in place; the lengths and checksums
// stay the template's zeros for outer_lengths(). `inner_tos`: the inner TOS after marking;
// `dscp`: inherited_dscp(); `hash`: flow_hash() of the inner packet.
template <bool kV6>
[[gnu::always_inline]] inline void outer_headers(const TunnelConf& t, uint8_t* hdr,
                                                 uint8_t inner_tos, uint8_t dscp, uint32_t hash,
                                                 uint64_t nh_mac) {
    std::memcpy(hdr, t.hdr.data(), outer_hdr_len<kV6>());
    if (nh_mac != 0) unpack_mac(nh_mac, hdr);
    const uint8_t ecn = t.ecn_rfc6040 ? static_cast<uint8_t>(inner_tos & 3) : kEcnNotEct;
    // One load for every outer_dscp policy: inherit, fixed or mapped (snapshot.h).
    const uint8_t tos = static_cast<uint8_t>(t.outer_map[dscp & 63u] << 2 | ecn);
    uint8_t* ip = hdr + kEthLen;
    store16(ip + (kV6 ? kIpv6Len : kIpv4Len), entropy_port(hash));
    if constexpr (!kV6)
        ip[kIpv4TosOff] = tos;
    else  // RFC 6438: the flow label carries the same entropy as the source port.
        store32(ip, 0x60000000u | uint32_t{tos} << 20 | (hash & 0xfffffu));
}

// Pushes the tunnel's outer headers in front of the inner frame, once check_tunnel() passed. The
// tunnel type only changes the template's bytes (built by the control side), so only the address
// family specialises the code. `tags`: VLAN tag bytes to remove.
template <bool kV6>
[[gnu::always_inline]] inline void encap_write(const TunnelConf& t, Frame& f, uint32_t tags,
                                               uint32_t inner_len, uint8_t inner_tos, uint8_t dscp,
                                               uint32_t hash, uint64_t nh_mac, bool& offload) {
    encap_room<kV6>(t, f, tags, inner_len);
    outer_headers<kV6>(t, f.data, inner_tos, dscp, hash, nh_mac);
    outer_lengths<kV6>(t, f.data, inner_len, offload);
}

// The tail of both paths, once tunnel `tunnel_idx` has taken the packet (check_tunnel() passed):
// the notes, then the outer headers. `tags`: VLAN tag bytes to remove (RFC 7348 section 6.1: the
// inner tag is local to the LAN); `tos`: the inner TOS after marking.
[[gnu::always_inline]] inline void encap_tail(const TunnelConf& t, uint32_t tunnel_idx,
                                              const ParsedPacket& pp, Frame& f, uint32_t tags,
                                              uint32_t inner_len, uint8_t tos, uint8_t dscp,
                                              uint64_t nh_mac, Verdict& v, PacketNotes& n) {
    n.tunnel_id = static_cast<int16_t>(tunnel_idx);
    n.outer_mapped = (t.outer_map_keys >> (dscp & 63u) & 1) != 0;
    v.out_port = t.outer_port;
    note_roce(n, pp, f.data);
    const uint32_t hash = flow_hash_inline(pp);
    if (t.outer_v6)
        encap_write<true>(t, f, tags, inner_len, tos, dscp, hash, nh_mac, v.tx_udp6_cksum);
    else
        encap_write<false>(t, f, tags, inner_len, tos, dscp, hash, nh_mac, v.tx_udp6_cksum);
}

// Records what the slow way decided for the flow of `pp` (encapsulated through tunnel `t` with
// inner TOS `tos`, outer DSCP `dscp`, notes `n` and entropy `hash`) in its set of `c`: the way it
// had, else the first, its entry moved to the second (fill_way()). `addrs6`: an IPv6 flow's source
// and destination (32 bytes), none for IPv4.
// The arguments are values: a ParsedPacket passed by reference would have to live in memory.
__attribute__((noinline)) void encap_fill(EncapCache& c, const EncapKey& k, const uint8_t* addrs6,
                                          const Snapshot& s, const TunnelConf& t,
                                          const PacketNotes& n, uint32_t max_ip_len, uint8_t tos,
                                          uint8_t dscp, uint32_t hash, uint64_t nh_mac) {
    static_assert(EncapCache::kWays == 2);
    c.v6 = c.v6 || addrs6 != nullptr;
    EncapFlow& e = fill_way(
        encap_flow_set(c, k),
        [&k, addrs6](const EncapFlow& f) {
            return addrs6 != nullptr ? encap_flow_is6(f, k, addrs6) : encap_flow_is(f, k);
        },
        [](const EncapFlow& f) { return f.rest != 0; });
    e.addrs = k.addrs;
    e.rest = k.rest;
    if (addrs6 != nullptr) std::memcpy(e.addrs6.data(), addrs6, e.addrs6.size());
    e.tunnel = &t;
    e.path_mtu = &t.path->mtu;
    e.neighbor = t.neighbor >= 0 ? &s.neighbors->at(static_cast<size_t>(t.neighbor)).mac : nullptr;
    e.nh_mac = nh_mac;
    e.notes = n;
    e.notes.roce_l3 = e.notes.roce_bth = nullptr;
    e.max_ip_len = static_cast<uint16_t>(std::min<uint32_t>(max_ip_len, 0xffff));
    e.tos = tos;
    e.roce = n.roce_bth != nullptr;
    e.offload = t.outer_v6 && t.tx_udp_offload && !t.udp6_zero_csum_tx;  // outer_lengths<true>()
    e.out_port = t.outer_port;
    // The key's TOS is the one received; an IPv4 frame's first IP byte is 0x45 (plain_ipv4_udp()).
    // IPv6 has no header checksum: 1 says only that the traffic class changes.
    const auto tos_in = static_cast<uint8_t>(k.rest >> 32);
    e.tos_delta = tos_in == tos       ? 0
                  : addrs6 != nullptr ? 1
                                      : ipv4_tos_csum_delta(0x45, tos_in, tos);
    e.hdr.fill(0);
    if (t.outer_v6) {
        e.hdr_len = outer_hdr_len<true>();
        outer_headers<true>(t, e.hdr.data(), tos, dscp, hash, nh_mac);
    } else {
        e.hdr_len = outer_hdr_len<false>();
        outer_headers<false>(t, e.hdr.data(), tos, dscp, hash, nh_mac);
        e.csum_base = ipv4_outer_csum_base(t, e.hdr.data());
    }
}

// encap_plain() for one inner family: a separate instance each, so that the IPv4 one carries
// nothing of IPv6's (its longer addresses and the out-of-line rte_lpm6_lookup() cost the IPv4
// path registers, spills and a failed store-to-load forwarding when they shared a body).
// `cache`: the worker's EncapCache, where key `key` missed (none: no cache); a success fills its
// entry.
template <bool kV6>
__attribute__((noinline)) bool encap_plain_family(const Snapshot& s, uint16_t rx_port, Frame& f,
                                                  Outcome& o, EncapCache* cache = nullptr,
                                                  const EncapKey* key = nullptr) {
    Verdict& v = o;
    PacketNotes& n = o;
    ParsedPacket pp;
    if (!parse_plain_udp_family<kV6>(f.data, f.len, pp)) return false;
    const PortConf& port = s.ports[rx_port];
    if (pp.ip_len > port.plain_mtu) return false;  // Too big, or a tagged LAN.
    if constexpr (kV6) {
        if (port.has_ipv6 && std::memcmp(pp.dst, port.ipv6.data(), 16) == 0) return false;
    } else {
        if (port.has_ipv4 && std::memcmp(pp.dst, port.ipv4.data(), 4) == 0) return false;
    }
    const int cls = classify_inline(s, pp);
    // A class with a policer or adaptive rules takes the general path's QoS stage.
    if (cls >= 0 && s.class_match[static_cast<size_t>(cls)].qos != 0) return false;
    uint32_t tunnel_idx = 0;
    if ((kV6 ? rte_lpm6_lookup(s.lpm6, pp.dst, &tunnel_idx)
             : rte_lpm_lookup(s.lpm4, load32(pp.dst), &tunnel_idx)) != 0)
        return false;
    const TunnelConf& t = s.tunnels[tunnel_idx];
    const uint32_t inner_len = kEthLen + pp.ip_len;
    uint64_t nh_mac = 0;
    if (check_tunnel(t, *s.neighbors, f.headroom, inner_len, nh_mac) != DropReason::none)
        return false;
    const uint8_t tos = mark_inner < kV6 ? 6 : 4 > (s, pp, cls, f.data, n);
    const uint8_t dscp = inherited_dscp(port, cls, tos);
    encap_tail(t, tunnel_idx, pp, f, 0, inner_len, tos, dscp, nh_mac, v, n);
    // The inner addresses have not moved (no tags here; a routed LAN rewrites only the MACs).
    if (cache != nullptr)
        encap_fill(*cache, *key, kV6 ? pp.src : nullptr, s, t, n, port.plain_mtu, tos, dscp,
                   flow_hash_inline(pp), nh_mac);
    return true;
}

}  // namespace

// Everything but a hit: a frame that is not of the cache's form, no cache, a miss (the entry
// filled when the frame is taken). Its own body, reached by a tail call from encap_plain(), so
// that the hit's saves no registers for it.
__attribute__((noinline)) bool encap_slow(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o,
                                          EncapCache* cache) {
    EncapKey key;
    uint32_t ip_len;
    bool bth;
    // Not that form: a short frame the parse may take uncached, or one it declines.
    if (f.len >= kEthLen && load16(f.data + kEthTypeOff) == kEtherTypeIpv6) {
        if (cache == nullptr || !encap_raw_key6(f.data, f.len, rx_port, key, ip_len, bth))
            return encap_plain_family<true>(s, rx_port, f, o);
        return encap_plain_family<true>(s, rx_port, f, o, cache, &key);
    }
    if (cache == nullptr || !encap_raw_key(f.data, f.len, rx_port, key, ip_len, bth))
        return encap_plain_family<false>(s, rx_port, f, o);
    return encap_plain_family<false>(s, rx_port, f, o, cache, &key);
}

void encap_hit_outcome(const EncapFlow& e, const Frame& f, Outcome& o) {
    PacketNotes& n = o;
    n = e.notes;
    if (e.roce) {  // note_roce() for the untagged IP frame behind the outer headers.
        n.roce_l3 = f.data + e.hdr_len + kEthLen;
        n.roce_bth = n.roce_l3 + (e.inner_v6() ? kIpv6Len : kIpv4Len) + kUdpLen;
    }
    o.out_port = e.out_port;
    o.tx_udp6_cksum = e.offload;
}

// With a cache, a hit from the entry (encap_hit()); the rest goes to encap_slow(), which parses
// (and on a miss fills the entry).
bool encap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o, EncapCache* cache) {
    if (likely(cache != nullptr)) {
        encap_cache_bind(*cache, s);
        if (const EncapHit h = encap_hit(rx_port, f, *cache); h.flow != nullptr) {
            encap_hit_outcome(*h.flow, f, o);
            return true;
        }
    }
    return encap_slow(s, rx_port, f, o, cache);
}

Verdict process_inner(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& notes,
                      const QosClock* qos, EncapCache* ecache) {
    Outcome o;
    if (encap_plain(s, rx_port, f, o, ecache)) {
        notes = o;
        return o;
    }
    return process_inner_general(s, rx_port, f, notes, qos != nullptr ? *qos : QosClock{});
}

Verdict process_inner_general(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& n,
                              const QosClock& qos) {
    Verdict v;
    n = PacketNotes{};
    ParsedPacket pp;
    if ((v.drop = parse_packet(f.data, f.len, pp)) != DropReason::none) return v;
    const PortConf& port = s.ports[rx_port];
    if (port.vlan != 0 && (pp.vlan_tags != 1 || pp.vid() != port.vlan ||
                           load16(f.data + kEthTypeOff) != kEtherTypeVlan)) {
        // One 802.1Q (C-)tag with the port's VLAN; an 802.1ad S-tag is another network's.
        v.drop = DropReason::wrong_vlan;
        return v;
    }
    if (pp.vlan_tags != 0) n.pcp_in1 = static_cast<uint8_t>(pp.pcp() + 1);
    if (larger_than_port(port, pp, f)) {
        v.drop = DropReason::too_big;
        return v;
    }
    if (local_on_inner(s, rx_port, pp, f, v)) return v;
    if (pp.ip_ver == 0) {
        v.drop = DropReason::not_ip;
        return v;
    }
    // Marked before routing: a packet dropped later is traced with the DSCP it would have had.
    const int cls = classify_inline(s, pp);
    uint8_t tos = mark_inner(s, pp, cls, f.data, n);
    const bool pcp_mapped = cls < 0 && pp.vlan_tags != 0 && port.has_pcp_to_dscp;
    if (pcp_mapped) {
        // An unclassified tagged frame: its 802.1p priority says the DSCP (a cos-dscp map).
        tos = remark(pp, f.data, tos, port.pcp_to_dscp[pp.pcp()], n);
        n.pcp_mapped = true;
        n.qos_noted = true;
    }
    uint32_t tunnel_idx = 0;
    const int rc = pp.ip_ver == 4 ? rte_lpm_lookup(s.lpm4, load32(pp.dst), &tunnel_idx)
                                  : rte_lpm6_lookup(s.lpm6, pp.dst, &tunnel_idx);
    if (rc != 0) {
        v.drop = DropReason::no_route;
        return v;
    }
    const TunnelConf& t = s.tunnels[tunnel_idx];
    n.tunnel_id = static_cast<int16_t>(tunnel_idx);
    v.out_port = t.outer_port;
    const uint32_t tags = pp.vlan_tags * kVlanLen;
    const uint32_t inner_len = kEthLen + pp.ip_len;  // Ethernet padding is not tunnelled.
    uint64_t nh_mac = 0;
    v.drop = check_tunnel(t, *s.neighbors, f.headroom + tags, inner_len, nh_mac);
    if (v.drop == DropReason::too_big && (pp.ip_ver == 6 || ipv4_df(pp, f.data))) {
        // RoCE sets DF: tell the sender the inner MTU that fits rather than dropping silently.
        v.pmtu = static_cast<uint16_t>(
            carried_inner_mtu(t, t.path->mtu.load(std::memory_order_relaxed)));
    }
    if (v.drop != DropReason::none) return v;
    if (cls >= 0 && s.class_match[static_cast<size_t>(cls)].qos != 0) {
        // Metered only once the packet is known to leave: what no tunnel takes uses no tokens.
        const int q = qos_stage(s, pp, cls, f, n, tos, qos);
        if (q < 0) {
            v.drop = DropReason::policed;
            return v;
        }
        tos = static_cast<uint8_t>(q);
    }
    encap_tail(t, tunnel_idx, pp, f, tags, inner_len, tos,
               inherited_dscp(port, cls, tos, pcp_mapped), nh_mac, v, n);
    return v;
}

}  // namespace dscpgw
