#include "dataplane/pipeline.h"

#include <rte_cycles.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include <cstring>

#include "dataplane/local.h"
#include "dataplane/neighbor.h"
#include "dataplane/wire.h"

namespace dscpgw {

using namespace wire;

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

// The TOS a packet of class `cls` (-1: none) leaves with: the class's DSCP if it sets one, the
// ECN bits untouched.
uint8_t marked_tos(const Snapshot& s, int cls, uint8_t tos) {
    const int8_t set = cls >= 0 ? s.class_match[static_cast<size_t>(cls)].set_dscp : -1;
    return set >= 0 ? static_cast<uint8_t>(set << 2 | (tos & 3)) : tos;
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

uint16_t fold(uint32_t sum) {
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(sum);
}

void write_tos(const ParsedPacket& pp, uint8_t* frame, uint8_t tos) {
    uint8_t* ip = frame + pp.l3_off;
    if (pp.ip_ver == 4)
        set_ipv4_tos(ip, tos);
    else
        set_ipv6_tclass(ip, tos);
}

template <bool kV6>
constexpr uint32_t outer_hdr_len() {
    return static_cast<uint32_t>(kEthLen + (kV6 ? kIpv6Len : kIpv4Len) + kUdpLen + 8);
}

// Whether tunnel `t` can take an inner frame of `inner_len` bytes (Ethernet + IP, no tags) with
// `headroom` bytes in front (tags included): the checks of encap(), nothing written. Sets the
// next hop's MAC (0: the template's).
template <bool kV6>
DropReason encap_check(const TunnelConf& t, const NeighborTable& neighbors, uint32_t headroom,
                       uint32_t inner_len, uint64_t& nh_mac) {
    constexpr uint32_t ip_hdr_len = kV6 ? kIpv6Len : kIpv4Len;
    if (ip_hdr_len + kUdpLen + 8 + inner_len > t.outer_mtu) return DropReason::too_big;
    if (headroom < outer_hdr_len<kV6>()) return DropReason::no_headroom;
    nh_mac = 0;
    if (t.neighbor >= 0) {
        nh_mac = neighbors.at(static_cast<size_t>(t.neighbor)).mac.load(std::memory_order_relaxed);
        if ((nh_mac & kNeighborValid) == 0) return DropReason::no_neighbor;
    }
    return DropReason::none;
}

// Pushes the tunnel's outer headers in front of the inner frame, once encap_check() passed. The
// tunnel type only changes the template's bytes (built by the control side), so only the address
// family specialises the code. `tags`: VLAN tag bytes to remove; `hash`: flow_hash() of the inner
// packet; `inner_tos`: its TOS after marking.
template <bool kV6>
[[gnu::always_inline]] inline void encap_write(const TunnelConf& t, Frame& f, uint32_t tags,
                                              uint32_t inner_len,
                 uint8_t inner_tos, uint32_t hash, uint64_t nh_mac, bool& offload) {
    constexpr uint32_t hdr_len = outer_hdr_len<kV6>();
    constexpr uint32_t ip_hdr_len = kV6 ? kIpv6Len : kIpv4Len;
    const uint32_t outer_ip_len = ip_hdr_len + kUdpLen + 8 + inner_len;
    if (tags != 0) {
        std::memmove(f.data + tags, f.data, 2 * 6);
        f.data += tags;
        f.headroom += tags;
    }
    if (t.has_inner_mac) {  // Routed LAN: the frame was addressed to us; readdress it to the far
                            // end.
        std::memcpy(f.data, t.inner_mac.data(), 6);
        std::memcpy(f.data + 6, t.inner_src_mac.data(), 6);
    }
    f.data -= hdr_len;
    f.headroom -= hdr_len;
    f.len = hdr_len + inner_len;
    std::memcpy(f.data, t.hdr.data(), hdr_len);
    if (nh_mac != 0) unpack_mac(nh_mac, f.data);

    const uint8_t ecn = t.ecn_rfc6040 ? static_cast<uint8_t>(inner_tos & 3) : kEcnNotEct;
    const uint8_t dscp = t.outer_dscp >= 0 ? static_cast<uint8_t>(t.outer_dscp)
                                           : static_cast<uint8_t>(inner_tos >> 2);
    const uint8_t tos = static_cast<uint8_t>(dscp << 2 | ecn);
    uint8_t* ip = f.data + kEthLen;
    uint8_t* udp = ip + ip_hdr_len;
    const uint16_t udp_len = static_cast<uint16_t>(kUdpLen + 8 + inner_len);
    store16(udp, entropy_port(hash));
    store16(udp + 4, udp_len);
    if constexpr (!kV6) {
        ip[kIpv4TosOff] = tos;
        store16(ip + kIpv4TotalLenOff, static_cast<uint16_t>(outer_ip_len));
        store16(ip + kIpv4CsumOff,
                static_cast<uint16_t>(~fold(t.hdr_csum_base + tos + outer_ip_len)));
        // The outer UDP checksum stays zero, as RFC 7348 and RFC 8926 allow over IPv4.
    } else {
        // RFC 6438: the flow label carries the same entropy as the source port.
        store32(ip, 0x60000000u | uint32_t{tos} << 20 | (hash & 0xfffffu));
        store16(ip + kIpv6PayloadLenOff, udp_len);
        // Over IPv6 the UDP checksum is mandatory (RFC 8200 section 8.1).
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
        sum = __rte_raw_cksum(udp, udp_len, sum);
        uint16_t csum = static_cast<uint16_t>(~fold(sum));
        if (csum == 0) csum = 0xffff;
        std::memcpy(udp + 6, &csum, sizeof csum);
    }
}

// Pushes the tunnel's outer headers in front of the inner frame (general path).
template <bool kV6>
DropReason encap(const TunnelConf& t, const NeighborTable& neighbors, Frame& f,
                 const ParsedPacket& pp, uint8_t inner_tos, uint16_t& pmtu, bool& offload) {
    // RFC 7348 section 6.1: the inner VLAN tag is local to the LAN and not carried; the inner
    // frame is also trimmed to its IP packet (Ethernet padding is not tunnelled).
    const uint32_t tags = pp.vlan_tags * kVlanLen;
    const uint32_t inner_len = kEthLen + pp.ip_len;
    uint64_t nh_mac = 0;
    const DropReason r = encap_check<kV6>(t, neighbors, f.headroom + tags, inner_len, nh_mac);
    if (r == DropReason::too_big) {
        // RoCE sets DF: tell the sender the inner MTU that fits rather than dropping silently.
        constexpr uint32_t overhead = (kV6 ? kIpv6Len : kIpv4Len) + kUdpLen + 8 + kEthLen;
        if (pp.ip_ver == 6 || ipv4_df(pp, f.data))
            pmtu = static_cast<uint16_t>(t.outer_mtu - overhead);
    }
    if (r != DropReason::none) return r;
    encap_write<kV6>(t, f, tags, inner_len, inner_tos, flow_hash_inline(pp), nh_mac, offload);
    return DropReason::none;
}

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

const PortConf::TunnelUdpPort* tunnel_udp_port(const PortConf& port, uint16_t dport) {
    const PortConf::TunnelUdpPort* tp = nullptr;
    for (const auto& u : port.tunnel_udp_ports)
        if (u.udp_port == dport) tp = &u;
    return tp;
}

// The decapsulation table, through the burst's one-entry cache when the caller keeps one.
bool lookup_tunnel(const Snapshot& s, const DecapKey& key, DecapCache* cache, uint16_t& tid) {
    if (cache != nullptr && cache->tunnel_id >= 0 && cache->key == key) {
        tid = static_cast<uint16_t>(cache->tunnel_id);
        return true;
    }
    void* data = nullptr;
    if (rte_hash_lookup_data(s.decap, &key, &data) < 0) return false;
    tid = static_cast<uint16_t>(reinterpret_cast<uintptr_t>(data));
    if (cache != nullptr) *cache = DecapCache{key, static_cast<int16_t>(tid)};
    return true;
}

// What decapsulation does to the inner IP packet's TOS: bleaching detection, RFC 6040, the
// DSCP-on-decap policy. Sets `tos` (the inner TOS to send) and v.outer_remarked / v.ce_marked;
// false when RFC 6040 says drop (CE on a Not-ECT inner packet).
bool decap_marks(const TunnelConf& t, const ParsedPacket& op, const ParsedPacket& ip, Verdict& v,
                 uint8_t& tos) {
    const int16_t expected = t.outer_dscp >= 0 ? t.outer_dscp : ip.dscp();
    v.outer_remarked = op.dscp() != expected;
    int ecn = ip.ecn();
    if (t.ecn_rfc6040) {
        ecn = rfc6040_decap(op.ecn(), ip.ecn());
        if (ecn < 0) return false;
        v.ce_marked = ecn == kEcnCe && ip.ecn() != kEcnCe;
    }
    const uint8_t dscp = t.decap_dscp == kDscpPreserve    ? ip.dscp()
                         : t.decap_dscp == kDscpCopyOuter ? op.dscp()
                                                          : static_cast<uint8_t>(t.decap_dscp);
    tos = static_cast<uint8_t>(dscp << 2 | ecn);
    return true;
}

// Routed LAN port `lan_port`: the MAC (with kNeighborValid) of the host `ip` is for, resolved by
// ARP/ND, or why there is none (no_route: not on the LAN's prefix; no_neighbor: unresolved, and
// with `request` a resolution is asked of the control thread for an unknown host).
[[gnu::always_inline]] inline DropReason lan_host_mac(const Snapshot& s, uint16_t lan_port,
                                                      const ParsedPacket& ip, bool request,
                                                      uint64_t& mac) {
    const PortConf& lan = s.ports[lan_port];
    const bool v4 = ip.ip_ver == 4;
    if (!(v4 ? lan.has_ipv4 : lan.has_ipv6) ||
        !prefix_match(v4 ? lan.ipv4.data() : lan.ipv6.data(), v4 ? lan.ipv4_len : lan.ipv6_len,
                      ip.dst, false))
        return DropReason::no_route;
    const int n = s.neighbors->find(ip.ip_ver, lan_port, ip.dst);
    mac = n < 0 ? 0 : s.neighbors->at(static_cast<size_t>(n)).mac.load(std::memory_order_relaxed);
    if ((mac & kNeighborValid) != 0) return DropReason::none;
    if (n < 0 && request) s.neighbors->request(ip.ip_ver, lan_port, ip.dst, 0);
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

}  // namespace

namespace {

bool for_port(const PortConf& port, const ParsedPacket& pp) {
    return pp.ip_ver == 4 ? port.has_ipv4 && std::memcmp(pp.dst, port.ipv4.data(), 4) == 0
                          : port.has_ipv6 && std::memcmp(pp.dst, port.ipv6.data(), 16) == 0;
}

bool is_nd(const ParsedPacket& pp, const uint8_t* frame, uint8_t type) {
    return pp.ip_ver == 6 && pp.proto == kProtoIcmp6 && pp.l4_off != 0 &&
           pp.l4_off < pp.l3_off + pp.ip_len && frame[pp.l4_off] == type;
}

bool is_ns(const ParsedPacket& pp, const uint8_t* frame) { return is_nd(pp, frame, 135); }

// ARP, NS and NA may tell a neighbor's MAC; a question for us is answered as well. Returns what
// the packet became: a reply to send, `learned` (consumed), or none (not ours).
LocalReply neighbor_traffic(const Snapshot& s, uint16_t rx_port, const ParsedPacket& pp, Frame& f) {
    // A routed LAN port adopts the hosts that talk to it (their ARP/NS tells their MAC).
    const PortConf& port = s.ports[rx_port];
    const bool adopt = port.role == PortRole::inner && (port.has_ipv4 || port.has_ipv6);
    const bool learned = s.neighbors->learn(rx_port, pp, f.data, f.len, rte_rdtsc(), adopt);
    const LocalReply r = answer_local(s.ports[rx_port], pp, f);
    return r != LocalReply::none ? r : learned ? LocalReply::learned : LocalReply::none;
}

}  // namespace

namespace {

// encap_plain() for one inner family: a separate instance each, so that the IPv4 one carries
// nothing of IPv6's (its longer addresses and the out-of-line rte_lpm6_lookup() cost the IPv4
// path registers, spills and a failed store-to-load forwarding when they shared a body).
template <bool kV6>
__attribute__((noinline)) bool encap_plain_family(const Snapshot& s, uint16_t rx_port, Frame& f,
                                                  Verdict& v) {
    ParsedPacket pp;
    if (!parse_plain_udp_family<kV6>(f.data, f.len, pp)) return false;
    const PortConf& port = s.ports[rx_port];
    if constexpr (kV6) {
        if (port.has_ipv6 && std::memcmp(pp.dst, port.ipv6.data(), 16) == 0) return false;
    } else {
        if (port.has_ipv4 && std::memcmp(pp.dst, port.ipv4.data(), 4) == 0) return false;
    }
    const int cls = classify_inline(s, pp);
    uint32_t nh = 0;
    if ((kV6 ? rte_lpm6_lookup(s.lpm6, pp.dst, &nh)
             : rte_lpm_lookup(s.lpm4, load32(pp.dst), &nh)) != 0)
        return false;
    const TunnelConf& t = s.tunnels[nh];
    const uint32_t inner_len = kEthLen + pp.ip_len;
    uint64_t nh_mac = 0;
    if ((t.outer_v6 ? encap_check<true>(t, *s.neighbors, f.headroom, inner_len, nh_mac)
                    : encap_check<false>(t, *s.neighbors, f.headroom, inner_len, nh_mac)) !=
        DropReason::none)
        return false;

    const uint8_t tos = marked_tos(s, cls, pp.tos);
    if (tos != pp.tos) {
        if constexpr (kV6)
            set_ipv6_tclass(f.data + kEthLen, tos);
        else
            set_ipv4_tos(f.data + kEthLen, tos);
        v.dscp_rewritten = true;
    }
    v.class_id = static_cast<int16_t>(cls);
    v.dscp_in = static_cast<int16_t>(pp.dscp());
    v.dscp_out = static_cast<int16_t>(tos >> 2);
    v.tunnel_id = static_cast<int16_t>(nh);
    v.out_port = t.outer_port;
    note_roce(v, pp, f.data);
    const uint32_t hash = flow_hash_inline(pp);
    if (t.outer_v6)
        encap_write<true>(t, f, 0, inner_len, tos, hash, nh_mac, v.tx_udp6_cksum);
    else
        encap_write<false>(t, f, 0, inner_len, tos, hash, nh_mac, v.tx_udp6_cksum);
    return true;
}

}  // namespace

bool encap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Verdict& v) {
    if (f.len >= kEthLen && load16(f.data + kEthTypeOff) == kEtherTypeIpv6)
        return encap_plain_family<true>(s, rx_port, f, v);
    return encap_plain_family<false>(s, rx_port, f, v);
}

Verdict process_inner(const Snapshot& s, uint16_t rx_port, Frame& f) {
    Verdict v;
    if (encap_plain(s, rx_port, f, v)) return v;
    return process_inner_general(s, rx_port, f);
}

Verdict process_inner_general(const Snapshot& s, uint16_t rx_port, Frame& f) {
    Verdict v;
    ParsedPacket pp;
    if ((v.drop = parse_packet(f.data, f.len, pp)) != DropReason::none) return v;
    const PortConf& port = s.ports[rx_port];
    // Routed mode: the LAN's hosts talk to the gateway's own address on this port.
    if ((port.has_ipv4 || port.has_ipv6) &&
        (pp.ip_ver == 0 || for_port(port, pp) || is_ns(pp, f.data) || is_nd(pp, f.data, 136))) {
        v.local = pp.ip_ver == 0 || pp.proto == kProtoIcmp6 ? neighbor_traffic(s, rx_port, pp, f)
                                                            : answer_local(port, pp, f);
        if (v.local != LocalReply::none) {
            v.out_port = rx_port;
            return v;
        }
        if (pp.ip_ver != 0 && for_port(port, pp)) {
            v.drop = DropReason::local_unhandled;
            return v;
        }
    }
    if (pp.ip_ver == 0) {
        v.drop = DropReason::not_ip;
        return v;
    }
    v.dscp_in = pp.dscp();
    v.class_id = static_cast<int16_t>(classify_inline(s, pp));
    const uint8_t tos = marked_tos(s, v.class_id, pp.tos);
    if (tos != pp.tos) {
        write_tos(pp, f.data, tos);
        v.dscp_rewritten = true;
    }
    v.dscp_out = tos >> 2;

    uint32_t nh = 0;
    const int rc = pp.ip_ver == 4 ? rte_lpm_lookup(s.lpm4, load32(pp.dst), &nh)
                                  : rte_lpm6_lookup(s.lpm6, pp.dst, &nh);
    if (rc != 0) {
        v.drop = DropReason::no_route;
        return v;
    }
    const TunnelConf& t = s.tunnels[nh];
    v.tunnel_id = static_cast<int16_t>(nh);
    v.out_port = t.outer_port;
    note_roce(v, pp, f.data);
    v.drop = t.outer_v6 ? encap<true>(t, *s.neighbors, f, pp, tos, v.pmtu, v.tx_udp6_cksum)
                        : encap<false>(t, *s.neighbors, f, pp, tos, v.pmtu, v.tx_udp6_cksum);
    return v;
}

bool decap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Verdict& v, DecapCache* cache) {
    ParsedPacket op;
    if (!parse_plain_udp(f.data, f.len, op)) return false;
    const PortConf& port = s.ports[rx_port];
    if (!for_port(port, op)) return false;
    const PortConf::TunnelUdpPort* tp = tunnel_udp_port(port, op.dport);
    if (tp == nullptr) return false;
    const uint8_t* udp = f.data + op.l4_off;
    const uint32_t udp_len = load16(udp + 4);
    if (udp_len < kUdpLen || op.l4_off + udp_len > op.l3_off + op.ip_len) return false;
    uint32_t th_len = 0, vni = 0;
    if (parse_tunnel_header(tp->type, udp + kUdpLen, udp_len - static_cast<uint32_t>(kUdpLen),
                            th_len, vni) != DropReason::none)
        return false;
    uint16_t tid;
    if (!lookup_tunnel(
            s, make_decap_key(op.ip_ver, op.src, vni, op.dport, static_cast<uint8_t>(rx_port)),
            cache, tid))
        return false;
    const TunnelConf& t = s.tunnels[tid];
    const uint32_t inner_off = op.l4_off + static_cast<uint32_t>(kUdpLen) + th_len;
    uint8_t* inner = f.data + inner_off;
    const uint32_t inner_len = op.l4_off + udp_len - inner_off;
    ParsedPacket ip;
    if (!parse_plain_udp(inner, inner_len, ip) || ip.ip_len > t.inner_mtu) return false;
    Verdict w;
    uint8_t tos = 0;
    if (!decap_marks(t, op, ip, w, tos)) return false;
    const PortConf& lan = s.ports[t.inner_port];
    uint64_t mac = 0;
    if ((lan.has_ipv4 || lan.has_ipv6) &&
        lan_host_mac(s, t.inner_port, ip, false, mac) != DropReason::none)
        return false;

    if (mac != 0) {
        unpack_mac(mac, inner);
        std::memcpy(inner + 6, lan.mac.data(), 6);
    }
    const auto dscp = static_cast<uint8_t>(tos >> 2);
    if (tos != ip.tos) {
        write_tos(ip, inner, tos);
        w.dscp_rewritten = dscp != ip.dscp();
    }
    w.decap = true;
    w.dscp_in = op.dscp();
    w.dscp_out = dscp;
    w.tunnel_id = static_cast<int16_t>(tid);
    w.out_port = t.inner_port;
    note_roce(w, ip, inner);
    v = w;
    f.data = inner;
    f.headroom += inner_off;
    f.len = inner_len;
    return true;
}

Verdict process_outer(const Snapshot& s, uint16_t rx_port, Frame& f, DecapCache* cache) {
    Verdict v;
    if (decap_plain(s, rx_port, f, v, cache)) return v;
    return process_outer_general(s, rx_port, f, cache);
}

Verdict process_outer_general(const Snapshot& s, uint16_t rx_port, Frame& f, DecapCache* cache) {
    Verdict v;
    v.decap = true;
    const PortConf& port = s.ports[rx_port];
    ParsedPacket op;
    if ((v.drop = parse_packet(f.data, f.len, op)) != DropReason::none) return v;
    if (op.ip_ver == 0 || is_ns(op, f.data) || is_nd(op, f.data, 136)) {
        // The underlay resolves our VTEP address, and we resolve our next hops: ARP and ND.
        v.local = neighbor_traffic(s, rx_port, op, f);
        if (v.local != LocalReply::none) {
            v.out_port = rx_port;
            v.decap = false;
            return v;
        }
        v.drop = op.ip_ver == 0 ? DropReason::not_tunnel : DropReason::not_local;
        return v;
    }
    v.dscp_in = op.dscp();
    if (!for_port(port, op)) {
        v.drop = DropReason::not_local;
        return v;
    }
    if (op.is_fragment) {
        v.drop = DropReason::outer_fragment;
        return v;
    }
    if (op.proto != kProtoUdp) {
        // The VTEP answers pings so the underlay can check the path to it.
        if (op.proto == kProtoIcmp || op.proto == kProtoIcmp6) {
            v.local = answer_local(port, op, f);
            if (v.local != LocalReply::none) {
                v.out_port = rx_port;
                v.decap = false;
                return v;
            }
        }
        v.drop = DropReason::not_tunnel;
        return v;
    }
    const PortConf::TunnelUdpPort* tp = tunnel_udp_port(port, op.dport);
    if (tp == nullptr) {
        v.drop = DropReason::not_tunnel;
        return v;
    }

    const uint8_t* udp = f.data + op.l4_off;
    const uint32_t udp_len = load16(udp + 4);
    const uint32_t ip_end = op.l3_off + op.ip_len;
    if (udp_len < kUdpLen || op.l4_off + udp_len > ip_end) {
        v.drop = DropReason::truncated;
        return v;
    }
    const uint8_t* th = udp + kUdpLen;
    uint32_t th_len = 0, vni = 0;
    v.drop =
        parse_tunnel_header(tp->type, th, udp_len - static_cast<uint32_t>(kUdpLen), th_len, vni);
    if (v.drop != DropReason::none) return v;

    const DecapKey key =
        make_decap_key(op.ip_ver, op.src, vni, op.dport, static_cast<uint8_t>(rx_port));
    uint16_t tid;
    if (!lookup_tunnel(s, key, cache, tid)) {
        v.drop = classify_decap_miss(s, key);
        return v;
    }
    const TunnelConf& t = s.tunnels[tid];
    v.tunnel_id = static_cast<int16_t>(tid);

    const uint32_t inner_off = op.l4_off + static_cast<uint32_t>(kUdpLen) + th_len;
    uint8_t* inner = f.data + inner_off;
    const uint32_t inner_len = op.l4_off + udp_len - inner_off;
    ParsedPacket ip;
    if (parse_packet(inner, inner_len, ip) != DropReason::none) {
        v.drop = DropReason::bad_inner_frame;
        return v;
    }
    if (ip.ip_ver != 0) {
        uint8_t tos = 0;
        if (!decap_marks(t, op, ip, v, tos)) {
            v.drop = DropReason::ecn_ce_on_not_ect;
            return v;
        }
        const auto dscp = static_cast<uint8_t>(tos >> 2);
        if (ip.ip_len > t.inner_mtu) {
            v.drop = DropReason::too_big;
            return v;
        }
        const PortConf& lan = s.ports[t.inner_port];
        if (lan.has_ipv4 || lan.has_ipv6) {
            // Routed LAN: deliver to the host's own MAC, from ours, resolved by ARP/ND.
            uint64_t mac = 0;
            if ((v.drop = lan_host_mac(s, t.inner_port, ip, true, mac)) != DropReason::none)
                return v;
            unpack_mac(mac, inner);
            std::memcpy(inner + 6, lan.mac.data(), 6);
        }
        if (tos != ip.tos) {
            write_tos(ip, inner, tos);
            v.dscp_rewritten = dscp != ip.dscp();
        }
        v.dscp_out = dscp;
        note_roce(v, ip, inner);
    }
    f.data = inner;
    f.headroom += inner_off;
    f.len = inner_len;
    v.out_port = t.inner_port;
    return v;
}

}  // namespace dscpgw
