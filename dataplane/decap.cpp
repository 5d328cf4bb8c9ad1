// Outer -> inner. The shortcut and the general path differ in how they parse and when they
// decline; once the tunnel is known and the inner frame parsed they share decap_tail().
#include "dataplane/decap.h"

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_hash.h>
#include <rte_ip.h>

#include <cstring>

#include "dataplane/cksum.h"
#include "dataplane/decap_hit.h"
#include "dataplane/local.h"
#include "dataplane/neighbor.h"
#include "dataplane/wire.h"

namespace dscpgw {

using namespace wire;
using namespace decap_fast;

namespace {

// The RFC 6040 section 4.2 decapsulation table (normal mode). Returns the inner ECN to emit, or
// -1 when the packet must be dropped.
int rfc6040_decap(uint8_t outer_ecn, uint8_t inner_ecn) {
    if (outer_ecn == kEcnCe) return inner_ecn == kEcnNotEct ? -1 : kEcnCe;
    if (outer_ecn == kEcnEct1 && inner_ecn == kEcnEct0) return kEcnEct1;
    return inner_ecn;
}

// Validates the tunnel header at `h` (the UDP payload, `len` bytes) and returns its length.
DropReason parse_tunnel_header(TunnelType type, const uint8_t* h, uint32_t len, uint32_t& hdr_len,
                               uint32_t& vni) {
    if (len < 8) return DropReason::truncated;
    vni = load32(h + 4) >> 8;
    if (type == TunnelType::vxlan) {
        if ((h[0] & kVxlanFlagI) == 0) return DropReason::bad_tunnel_header;
        hdr_len = kVxlanLen;
        return DropReason::none;
    }
    if ((h[0] >> 6) != 0) return DropReason::bad_tunnel_header;
    const uint32_t opt_len = (h[0] & 0x3fu) * 4u;
    if (kGeneveLen + opt_len > len) return DropReason::bad_tunnel_header;
    // No option is understood here, so a critical one (C flag, or a type with its high bit set)
    // forbids decapsulation (RFC 8926 section 3.5.1); an OAM frame is for the endpoint itself.
    if ((h[1] & (kGeneveFlagOam | kGeneveFlagCritical)) != 0) return DropReason::bad_tunnel_header;
    for (uint32_t off = 0; off < opt_len;) {
        if (off + kGeneveOptHdrLen > opt_len) return DropReason::bad_tunnel_header;
        const uint8_t* o = h + kGeneveLen + off;
        if ((o[2] & kGeneveOptCritical) != 0) return DropReason::bad_tunnel_header;
        off += static_cast<uint32_t>(kGeneveOptHdrLen) + (o[3] & 0x1fu) * 4u;
        if (off > opt_len) return DropReason::bad_tunnel_header;
    }
    if (load16(h + 2) != kEtherTypeTeb) return DropReason::unsupported_payload;
    hdr_len = kGeneveLen + opt_len;
    return DropReason::none;
}

// parse_tunnel_header() with the form nearly every packet has checked inline in one word: VXLAN
// with its I flag, or Geneve version 0 with no options, no OAM or critical flag, carrying Ethernet.
// Both accept exactly what parse_tunnel_header() accepts for these, with the same results.
[[gnu::always_inline]] inline DropReason tunnel_header(TunnelType type, const uint8_t* h,
                                                       uint32_t len, uint32_t& hdr_len,
                                                       uint32_t& vni) {
    if (likely(len >= 8) &&
        (type == TunnelType::vxlan
             ? (h[0] & kVxlanFlagI) != 0
             : (load32(h) & (0xff00'ffffu | uint32_t{kGeneveFlagOam | kGeneveFlagCritical}
                                                << 16)) == kEtherTypeTeb)) {
        static_assert(kVxlanLen == 8 && kGeneveLen == 8);
        vni = load32(h + 4) >> 8;
        hdr_len = 8;
        return DropReason::none;
    }
    return parse_tunnel_header(type, h, len, hdr_len, vni);
}

const PortConf::TunnelUdpPort* tunnel_udp_port(const PortConf& port, uint16_t dport) {
    const PortConf::TunnelUdpPort* tp = nullptr;
    for (const auto& u : port.tunnel_udp_ports)
        if (u.udp_port == dport) tp = &u;
    return tp;
}

// The outer IPv4 header checksum, or the outer IPv6 UDP checksum of the `udp_len`-byte datagram at
// `udp` when it is not zero (whether zero may pass is the tunnel's to say): the device's verdict
// where it gave one, else summed here. A sum over data that includes a right checksum is 0xffff.
[[gnu::always_inline]] inline bool outer_csum_ok(const ParsedPacket& outer, const Frame& f,
                                                 const uint8_t* udp, uint32_t udp_len) {
    const uint8_t* ip = f.data + outer.l3_off;
    if (outer.ip_ver == 4) {
        if ((f.rx_cksum & (kRxIpGood | kRxIpBad)) != 0) return (f.rx_cksum & kRxIpGood) != 0;
        return ipv4_header_sum_ok(ip, ip[0] & 0xfu);
    }
    if (udp == nullptr || load16(udp + 6) == 0) return true;
    return udp6_csum_ok(ip, udp, udp_len, f.rx_cksum);
}

// The decapsulation table itself, filling the caller's cache when it keeps one.
__attribute__((noinline)) bool lookup_tunnel_table(const Snapshot& s, const DecapKey& key,
                                                   DecapCache* cache, uint16_t& tid) {
    void* data = nullptr;
    if (rte_hash_lookup_data(s.decap, &key, &data) < 0) return false;
    tid = static_cast<uint16_t>(reinterpret_cast<uintptr_t>(data));
    if (cache != nullptr) {
        cache->key = key;
        cache->tunnel_id = static_cast<int16_t>(tid);
    }
    return true;
}

// The decapsulation table, through the burst's one-entry cache when the caller keeps one: a hit
// inline, with the key in registers. An empty cache's key (all zero, family 0) matches no packet's.
[[gnu::always_inline]] inline bool lookup_tunnel(const Snapshot& s, const DecapKey& key,
                                                 DecapCache* cache, uint16_t& tid) {
    if (cache != nullptr && cache->key == key) {
        tid = static_cast<uint16_t>(cache->tunnel_id);
        return true;
    }
    return lookup_tunnel_table(s, key, cache, tid);
}

// What decapsulation does to the inner IP packet's TOS: bleaching detection, RFC 6040, the
// DSCP-on-decap policy. Sets `tos` (the inner TOS to send) and the notes' outer_remarked /
// ce_marked; false when RFC 6040 says drop (CE on a Not-ECT inner packet).
[[gnu::always_inline]] inline bool decap_marks(const Snapshot& s, const TunnelConf& t,
                                               const ParsedPacket& outer, const ParsedPacket& in,
                                               PacketNotes& n, uint8_t& tos) {
    // What a far end with this tunnel's outer_dscp policy sends over this inner DSCP.
    int expected = t.outer_map[in.dscp()];
    // A far end with this config sent unclassified traffic from an untrusting port with its
    // default_dscp (mapped) outside (the inner DSCP is then not what the outer carried):
    // classified here again, only where that can change the verdict (the outer DSCP is what
    // default_dscp maps to, and differs from what the inner one maps to), to tell it from
    // bleaching.
    const PortConf& lan = s.ports[t.inner_port];
    const int unclassified = t.outer_map[lan.default_dscp & 63u];
    if (outer.dscp() != expected && outer.dscp() == unclassified && !lan.trust_dscp &&
        classify(s, in) < 0)
        expected = unclassified;
    n.outer_remarked = outer.dscp() != expected;
    int ecn = in.ecn();
    if (t.ecn_rfc6040) {
        ecn = rfc6040_decap(outer.ecn(), in.ecn());
        if (ecn < 0) return false;
        n.ce_marked = ecn == kEcnCe && in.ecn() != kEcnCe;
    }
    const uint8_t dscp = t.decap_dscp == kDscpPreserve    ? in.dscp()
                         : t.decap_dscp == kDscpCopyOuter ? outer.dscp()
                                                          : static_cast<uint8_t>(t.decap_dscp);
    tos = static_cast<uint8_t>(dscp << 2 | ecn);
    return true;
}

// Routed LAN port `lan_port`: the MAC (with kNeighborValid) of the host `in` is for, resolved by
// ARP/ND, or why there is none (no_route: not on the LAN's prefix; no_neighbor: unresolved, and
// with `request` a resolution is asked of the control thread for an unknown host).
[[gnu::always_inline]] inline DropReason lan_host_mac(const Snapshot& s, uint16_t lan_port,
                                                      const ParsedPacket& in, bool request,
                                                      uint64_t& mac) {
    const PortConf& lan = s.ports[lan_port];
    const bool v4 = in.ip_ver == 4;
    if (!(v4 ? lan.has_ipv4 : lan.has_ipv6) ||
        !prefix_match(v4 ? lan.ipv4.data() : lan.ipv6.data(), v4 ? lan.ipv4_len : lan.ipv6_len,
                      in.dst, false))
        return DropReason::no_route;
    const int n = s.neighbors->find(in.ip_ver, lan_port, in.dst);
    mac = n < 0 ? 0 : s.neighbors->at(static_cast<size_t>(n)).mac.load(std::memory_order_relaxed);
    if ((mac & kNeighborValid) != 0) return DropReason::none;
    if (n < 0 && request) s.neighbors->request(in.ip_ver, lan_port, in.dst, 0);
    return DropReason::no_neighbor;
}

// Names why no tunnel took a packet that passed every other check. Only dropped packets get here.
DropReason classify_decap_miss(const Snapshot& s, const DecapKey& key) {
    for (const TunnelConf& t : s.tunnels) {
        if (t.outer_port == key.rx_port() && t.udp_port == key.udp_port() &&
            t.outer_v6 == (key.family() == 6) && key.remote_is(t.remote))
            return DropReason::unknown_vni;
    }
    return DropReason::unknown_remote;
}

// What of a decapsulated frame the LAN may see: no IEEE link-local destination, no VLAN tag unless
// the tunnel keeps them, IPv4/IPv6 (and on a transparent LAN Ethernet/IPv4 ARP and ND) only; the
// frame shortened to its IP packet or ARP message, as encapsulation does. Neighbor Discovery on a
// routed LAN is the gateway's own business with its hosts, never the far side's.
[[gnu::always_inline]] inline DropReason inner_l2_check(const TunnelConf& t, const PortConf& lan,
                                                        const ParsedPacket& in,
                                                        const uint8_t* inner, uint32_t& inner_len) {
    if (ieee_link_local(inner)) return DropReason::inner_link_local;
    if (in.vlan_tags != 0 && !t.inner_vlan_keep) return DropReason::inner_vlan;
    const bool routed = lan.has_ipv4 || lan.has_ipv6;
    if (in.ip_ver == 0) {
        if (routed || load16(inner + in.l3_off - 2) != kEtherTypeArp ||
            !is_ipv4_arp(inner + in.l3_off, inner_len - in.l3_off))
            return DropReason::inner_not_ip;
        inner_len = in.l3_off + static_cast<uint32_t>(kArpLen);
        return DropReason::none;
    }
    if (routed && in.proto == kProtoIcmp6 && !in.is_fragment && in.l4_off < inner_len &&
        inner[in.l4_off] >= 133 && inner[in.l4_off] <= 137)
        return DropReason::inner_not_ip;
    inner_len = in.l3_off + in.ip_len;
    return DropReason::none;
}

// The tail of both paths, once tunnel `tid` is known and the inner frame (`inner_len` bytes at
// `inner_off`) parsed as `in`: every check first, then the writes, so that the shortcut can
// decline on anything but none. `request`: ask the control thread to resolve an unknown LAN host.
[[gnu::always_inline]] inline DropReason decap_tail(const Snapshot& s, uint16_t tid,
                                                    const ParsedPacket& outer,
                                                    const ParsedPacket& in, Frame& f,
                                                    uint32_t inner_off, uint32_t inner_len,
                                                    bool request, Verdict& v, PacketNotes& n) {
    const TunnelConf& t = s.tunnels[tid];
    uint8_t* inner = f.data + inner_off;
    const PortConf& lan = s.ports[t.inner_port];
    if (const DropReason r = inner_l2_check(t, lan, in, inner, inner_len); r != DropReason::none)
        return r;
    if (in.ip_ver != 0) {
        uint8_t tos = 0;
        if (!decap_marks(s, t, outer, in, n, tos)) return DropReason::ecn_ce_on_not_ect;
        if (in.ip_len > t.inner_mtu) return DropReason::too_big;
        if (lan.has_ipv4 || lan.has_ipv6) {
            // Routed LAN: deliver to the host's own MAC, from ours, resolved by ARP/ND.
            uint64_t mac = 0;
            if (const DropReason r = lan_host_mac(s, t.inner_port, in, request, mac);
                r != DropReason::none)
                return r;
            unpack_mac(mac, inner);
            std::memcpy(inner + 6, lan.mac.data(), 6);
        }
        const auto dscp = static_cast<uint8_t>(tos >> 2);
        if (tos != in.tos) {
            write_tos(in, inner, tos);
            n.dscp_rewritten = dscp != in.dscp();
        }
        n.dscp_out = dscp;
        note_roce(n, in, inner);
    }
    if (lan.vlan != 0) {
        // A tagged LAN: the frame leaves with its VLAN, the priority from its DSCP.
        const uint8_t pcp = lan.has_dscp_to_pcp && n.dscp_out >= 0
                                ? lan.dscp_to_pcp[static_cast<size_t>(n.dscp_out)]
                                : uint8_t{0};
        inner = push_vlan_tag(inner, static_cast<uint16_t>(pcp << 13 | lan.vlan));
        inner_off -= static_cast<uint32_t>(kVlanLen);
        inner_len += static_cast<uint32_t>(kVlanLen);
        n.pcp_out1 = static_cast<uint8_t>(pcp + 1);
        n.pcp_set = lan.has_dscp_to_pcp && n.dscp_out >= 0;
        n.qos_noted = n.pcp_set;
    }
    f.data = inner;
    f.headroom += inner_off;
    f.len = inner_len;
    v.out_port = t.inner_port;
    return DropReason::none;
}

Verdict outer_general(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& n,
                      DecapCache* cache) {
    Verdict v;
    const PortConf& port = s.ports[rx_port];
    ParsedPacket outer;
    if ((v.drop = parse_packet(f.data, f.len, outer)) != DropReason::none) return v;
    if (larger_than_port(port, outer, f)) {
        v.drop = DropReason::too_big;
        return v;
    }
    if (outer.ip_ver == 4 && !outer_csum_ok(outer, f, nullptr, 0)) {
        v.drop = DropReason::bad_checksum;
        return v;
    }
    if (neighbor_on_outer(s, rx_port, outer, f, v)) return v;
    n.dscp_in = outer.dscp();
    if (!addressed_to(port, outer)) {
        v.drop = DropReason::not_local;
        return v;
    }
    if (outer.is_fragment) {
        v.drop = DropReason::outer_fragment;
        return v;
    }
    if (outer.proto != kProtoUdp) {
        // The underlay's word on our packets' size; and the VTEP answers pings so the underlay
        // can check the path to it.
        if (path_mtu_on_outer(s, rx_port, outer, f, v, n)) return v;
        if (!echo_on_outer(port, rx_port, outer, f, v)) v.drop = DropReason::not_tunnel;
        return v;
    }
    const PortConf::TunnelUdpPort* tp = tunnel_udp_port(port, outer.dport);
    if (tp == nullptr) {
        v.drop = DropReason::not_tunnel;
        return v;
    }
    const uint8_t* udp = f.data + outer.l4_off;
    const uint32_t udp_len = load16(udp + 4);
    if (udp_len < kUdpLen || outer.l4_off + udp_len > outer.l3_off + outer.ip_len) {
        v.drop = DropReason::truncated;
        return v;
    }
    if (outer.ip_ver == 6 && !outer_csum_ok(outer, f, udp, udp_len)) {
        v.drop = DropReason::bad_checksum;
        return v;
    }
    uint32_t th_len = 0, vni = 0;
    v.drop = tunnel_header(tp->type, udp + kUdpLen, udp_len - static_cast<uint32_t>(kUdpLen),
                           th_len, vni);
    if (v.drop != DropReason::none) return v;
    const DecapKey key =
        make_decap_key(outer.ip_ver, outer.src, vni, outer.dport, static_cast<uint8_t>(rx_port));
    uint16_t tid;
    if (!lookup_tunnel(s, key, cache, tid)) {
        v.drop = classify_decap_miss(s, key);
        return v;
    }
    n.tunnel_id = static_cast<int16_t>(tid);
    if (outer.ip_ver == 6 && load16(udp + 6) == 0 && !s.tunnels[tid].udp6_zero_csum_rx) {
        v.drop = DropReason::bad_checksum;
        return v;
    }
    const uint32_t inner_off = outer.l4_off + static_cast<uint32_t>(kUdpLen) + th_len;
    const uint32_t inner_len = outer.l4_off + udp_len - inner_off;
    ParsedPacket in;
    if (parse_packet(f.data + inner_off, inner_len, in) != DropReason::none) {
        v.drop = DropReason::bad_inner_frame;
        return v;
    }
    v.drop = decap_tail(s, tid, outer, in, f, inner_off, inner_len, true, v, n);
    return v;
}

// decap_plain() without the flow cache: both parses, the tunnel, the tail.
bool decap_parsed(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o, DecapCache* cache) {
    Verdict& v = o;
    PacketNotes& n = o;
    ParsedPacket outer;
    if (!parse_plain_udp(f.data, f.len, outer)) return false;
    const PortConf& port = s.ports[rx_port];
    if (!addressed_to(port, outer) || outer.ip_len > port.mtu) return false;
    const PortConf::TunnelUdpPort* tp = tunnel_udp_port(port, outer.dport);
    if (tp == nullptr) return false;
    const uint8_t* udp = f.data + outer.l4_off;
    const uint32_t udp_len = load16(udp + 4);
    if (udp_len < kUdpLen || outer.l4_off + udp_len > outer.l3_off + outer.ip_len) return false;
    if (!outer_csum_ok(outer, f, udp, udp_len)) return false;
    uint32_t th_len = 0, vni = 0;
    if (tunnel_header(tp->type, udp + kUdpLen, udp_len - static_cast<uint32_t>(kUdpLen), th_len,
                      vni) != DropReason::none)
        return false;
    uint16_t tid;
    if (!lookup_tunnel(s,
                       make_decap_key(outer.ip_ver, outer.src, vni, outer.dport,
                                      static_cast<uint8_t>(rx_port)),
                       cache, tid))
        return false;
    if (outer.ip_ver == 6 && load16(udp + 6) == 0 && !s.tunnels[tid].udp6_zero_csum_rx)
        return false;
    const uint32_t inner_off = outer.l4_off + static_cast<uint32_t>(kUdpLen) + th_len;
    const uint32_t inner_len = outer.l4_off + udp_len - inner_off;
    ParsedPacket in;
    if (!parse_plain_udp(f.data + inner_off, inner_len, in)) return false;
    if (decap_tail(s, tid, outer, in, f, inner_off, inner_len, false, v, n) != DropReason::none)
        return false;
    n.outer_path = true;
    n.dscp_in = outer.dscp();
    n.tunnel_id = static_cast<int16_t>(tid);
    return true;
}

// Records what the slow way decided for the flow of key `k` (its notes `n`, the frame as sent at
// `out`, its IPv4 or IPv6 header at `ip`) in its set `set`, as encap_fill() does. A routed LAN's
// entry keeps the host's neighbour slot and its reuse count (the slow way resolved the host just
// now; found again, and nothing is filled when the control thread removed it meanwhile); a tagged
// LAN's entry the tag the slow way pushed.
__attribute__((noinline)) void decap_fill(DecapFlow* set, const DecapFlowKey& k, const Snapshot& s,
                                          uint16_t rx_port, const PacketNotes& n,
                                          const uint8_t* out, const uint8_t* ip) {
    static_assert(DecapFlowCache::kWays == 2);
    const TunnelConf& t = s.tunnels[static_cast<size_t>(n.tunnel_id)];
    const PortConf& lan = s.ports[t.inner_port];
    const bool routed = lan.has_ipv4 || lan.has_ipv6;
    const bool in6 = (k.w[4] & kKeyInner6) != 0;
    const uint8_t family = in6 ? 6 : 4;
    const uint8_t* dst = ip + (in6 ? kIpv6DstOff : kIpv4DstOff);
    int host = -1;
    uint32_t reuse = 0;
    if (routed) {
        host = s.neighbors->find(family, t.inner_port, dst);
        if (host < 0) return;
        // remove() takes the key out of the index before it counts the reuse (release): a count
        // that is already the next one shows the key gone from the second lookup.
        reuse = s.neighbors->at(static_cast<size_t>(host)).reuse.load(std::memory_order_acquire);
        if (s.neighbors->find(family, t.inner_port, dst) != host) return;
    }
    const uint8_t* addrs6 = in6 ? ip + kIpv6SrcOff : nullptr;
    DecapFlow& e = fill_way(
        set,
        [&k, addrs6](const DecapFlow& f) {
            return addrs6 != nullptr ? decap_flow_is6(f, k, addrs6) : decap_flow_is(f, k);
        },
        [](const DecapFlow& f) { return f.outer_rest != 0; });
    const uint8_t tos = in6 ? ipv6_tclass(ip) : ip[kIpv4TosOff];
    if (in6) std::memcpy(e.inner_addrs6.data(), addrs6, e.inner_addrs6.size());
    e.outer_addrs = k.w[0];
    e.inner_addrs = k.w[1];
    e.inner_rest = k.w[2];
    e.tunnel_hdr = k.w[3];
    e.outer_rest = k.w[4];
    e.port_mtu = s.ports[rx_port].mtu;
    e.inner_mtu = t.inner_mtu;
    e.tos = tos;
    e.roce = n.roce_bth != nullptr;
    // The key's inner TOS is the one received; an inner IPv4 header's first byte is 0x45. IPv6
    // has no header checksum: 1 says only that the traffic class changes.
    const auto tos_in = static_cast<uint8_t>(k.w[2] >> 32);
    e.tos_delta = tos_in == tos ? 0 : in6 ? 1 : ipv4_tos_csum_delta(0x45, tos_in, tos);
    e.out_port = static_cast<uint8_t>(t.inner_port);
    e.notes = n;
    e.notes.roce_l3 = e.notes.roce_bth = nullptr;
    e.lan = routed          ? DecapFlow::kLanRouted
            : lan.vlan != 0 ? DecapFlow::kLanTagged
                            : DecapFlow::kLanTransparent;
    if (routed) {
        e.host = static_cast<uint32_t>(host);
        e.host_reuse = reuse;
        e.lan_mac = lan.mac;
    }
    if (lan.vlan != 0) e.tci = load16(out + kEthLen);
}

// decap_slow() for a frame whose key decap_raw_key<kV6, kIn6>() read: the slow way, and on a
// success the flow's entry filled.
template <bool kV6, bool kIn6 = false>
bool decap_slow_keyed(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o, DecapCache* cache,
                      DecapFlowCache& flows, const DecapFlowKey& key) {
    uint8_t* const d = f.data;
    if (!decap_parsed(s, rx_port, f, o, cache)) return false;
    if constexpr (kIn6) flows.in6 = true;
    // The inner frame where the key read it (an eight-byte tunnel header; a tagged LAN's tag pushed
    // in front of it).
    const uint32_t tag =
        s.ports[s.tunnels[static_cast<size_t>(o.tunnel_id)].inner_port].vlan != 0 ? kVlanLen : 0;
    if (f.data + tag == d + kInnerOff<kV6>)
        decap_fill(decap_flow_set(flows, key), key, s, rx_port, o, f.data,
                   d + kInnerOff<kV6> + kEthLen);
    return true;
}

}  // namespace

// Everything but a hit; a success on a frame of the cache's form fills the flow's entry.
bool decap_slow(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o, DecapCache* cache,
                DecapFlowCache* flows) {
    DecapFlowKey key;
    uint32_t total, itotal;
    bool bth;
    if (flows != nullptr && flows->useful) {
        if (decap_raw_key<false>(f.data, f.len, rx_port, key, total, itotal, bth))
            return decap_slow_keyed<false>(s, rx_port, f, o, cache, *flows, key);
        if (flows->v6 && decap_raw_key<true>(f.data, f.len, rx_port, key, total, itotal, bth))
            return decap_slow_keyed<true>(s, rx_port, f, o, cache, *flows, key);
        if (decap_raw_key<false, true>(f.data, f.len, rx_port, key, total, itotal, bth))
            return decap_slow_keyed<false, true>(s, rx_port, f, o, cache, *flows, key);
        if (flows->v6 && decap_raw_key<true, true>(f.data, f.len, rx_port, key, total, itotal, bth))
            return decap_slow_keyed<true, true>(s, rx_port, f, o, cache, *flows, key);
    }
    return decap_parsed(s, rx_port, f, o, cache);
}

void decap_hit_outcome(const DecapFlow& e, const Frame& f, Outcome& o) {
    PacketNotes& n = o;
    n = e.notes;
    if (e.roce) {  // note_roce() for the inner frame (behind a tagged LAN's tag).
        n.roce_l3 = f.data + e.l2_len();
        n.roce_bth = n.roce_l3 + (e.inner_v6() ? kIpv6Len : kIpv4Len) + kUdpLen;
    }
    o.out_port = e.out_port;
}

bool decap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o, DecapCache* cache,
                 DecapFlowCache* flows) {
    if (flows != nullptr) {
        decap_cache_bind(*flows, s);
        if (flows->useful) {
            if (const DecapHit h = decap_hit(rx_port, f, *flows); h.flow != nullptr) {
                decap_hit_outcome(*h.flow, f, o);
                return true;
            }
        }
    }
    return decap_slow(s, rx_port, f, o, cache, flows);
}

Verdict process_outer_general(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& notes,
                              DecapCache* cache) {
    notes = PacketNotes{};
    const Verdict v = outer_general(s, rx_port, f, notes, cache);
    notes.outer_path = v.local == LocalReply::none;
    return v;
}

Verdict process_outer(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& notes,
                      DecapCache* cache, DecapFlowCache* flows) {
    Outcome o;
    if (decap_plain(s, rx_port, f, o, cache, flows)) {
        notes = o;
        return o;
    }
    return process_outer_general(s, rx_port, f, notes, cache);
}

}  // namespace dscpgw
