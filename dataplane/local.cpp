#include "dataplane/local.h"

#include <rte_cycles.h>

#include <algorithm>
#include <cstring>

#include "dataplane/neighbor.h"
#include "dataplane/wire.h"

namespace dscpgw {

using namespace wire;

namespace {

constexpr uint8_t kIcmpEchoReply = 0, kIcmpUnreachable = 3, kIcmpEcho = 8;
constexpr uint8_t kIcmpFragNeeded = 4;
constexpr uint8_t kIcmp6TooBig = 2, kIcmp6Echo = 128, kIcmp6EchoReply = 129;
constexpr uint8_t kNdSolicit = 135, kNdAdvert = 136;
constexpr uint8_t kTtl = 64;

// Ethernet: the reply goes back to whoever sent the request, from the port's own MAC.
void reply_l2(const PortConf& port, uint8_t* frame) {
    std::memcpy(frame, frame + 6, 6);
    std::memcpy(frame + 6, port.mac.data(), 6);
}

bool unicast4(const uint8_t* a) { return a[0] != 0 && a[0] < 224 && load32(a) != 0xffffffffu; }

// A source the gateway may answer or send an error to (RFC 1812 4.3.2.7, RFC 4443 2.4(e)): a
// unicast host address that is not loopback, not the port's own address and, on a port with a
// prefix, not its directed broadcast.
bool host_source4(const PortConf& port, const uint8_t* a) {
    if (!unicast4(a) || a[0] == 127) return false;
    if (!port.has_ipv4) return true;
    if (std::memcmp(a, port.ipv4.data(), 4) == 0) return false;
    if (port.ipv4_len >= 31) return true;
    const uint32_t host_bits = 0xffffffffu >> port.ipv4_len;
    return !prefix_match(port.ipv4.data(), port.ipv4_len, a, false) ||
           (load32(a) & host_bits) != host_bits;
}

bool host_source6(const PortConf& port, const uint8_t* a) {
    static constexpr uint8_t kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static constexpr uint8_t kUnspecified[16] = {};
    return a[0] != 0xff && std::memcmp(a, kUnspecified, 16) != 0 &&
           std::memcmp(a, kLoopback, 16) != 0 && std::memcmp(a, kMappedPrefix, 12) != 0 &&
           !(port.has_ipv6 && std::memcmp(a, port.ipv6.data(), 16) == 0);
}

// The checksum of an ICMP/ICMPv6 message of `len` bytes at `icmp` (with `pseudo`, the IPv6
// pseudo-header sum, or 0) is right.
bool icmp_csum_ok(const uint8_t* icmp, uint32_t len, uint32_t pseudo = 0) {
    return csum_finish(sum16(icmp, len, pseudo)) == 0;
}

uint32_t pseudo6(const uint8_t* ip, uint32_t len, uint8_t nh) {
    return sum16(ip + kIpv6SrcOff, 32) + (len >> 16) + (len & 0xffff) + nh;
}

LocalReply answer_arp(const PortConf& port, const ParsedPacket& pp, Frame& f) {
    uint8_t* a = f.data + pp.l3_off;
    // A request for our address; gratuitous ARP (sender == target) is no question.
    if (!port.has_ipv4 || !is_ipv4_arp(a, f.len - pp.l3_off) || load16(a + 6) != 1)
        return LocalReply::none;
    if (std::memcmp(a + 24, port.ipv4.data(), 4) != 0 || std::memcmp(a + 14, a + 24, 4) == 0)
        return LocalReply::none;
    // The answer goes to the sender's MAC: a unicast one, from a host (or an RFC 5227 probe,
    // sender 0.0.0.0) that is not ourselves.
    static constexpr uint8_t kZero4[4] = {};
    if (!unicast_mac(a + 8) || !unicast_mac(f.data + 6) ||
        (std::memcmp(a + 14, kZero4, 4) != 0 && !host_source4(port, a + 14)))
        return LocalReply::none;
    std::memcpy(a + 18, a + 8, 10);  // Target <- sender (MAC and IP).
    std::memcpy(a + 8, port.mac.data(), 6);
    std::memcpy(a + 14, port.ipv4.data(), 4);
    store16(a + 6, 2);
    std::memcpy(f.data, a + 18, 6);
    std::memcpy(f.data + 6, port.mac.data(), 6);
    f.len = pp.l3_off + static_cast<uint32_t>(kArpLen);
    return LocalReply::arp;
}

LocalReply answer_echo4(const PortConf& port, const ParsedPacket& pp, Frame& f) {
    uint8_t* ip = f.data + pp.l3_off;
    const uint32_t ihl = (ip[0] & 0xfu) * 4u;
    if (pp.is_fragment || pp.ip_len < ihl + 8) return LocalReply::none;
    uint8_t* icmp = ip + ihl;
    const uint32_t icmp_len = pp.ip_len - ihl;
    if (icmp[0] != kIcmpEcho || icmp[1] != 0 || !host_source4(port, pp.src) ||
        !unicast_mac(f.data + 6) || !icmp_csum_ok(icmp, icmp_len))
        return LocalReply::none;
    reply_l2(port, f.data);
    std::memcpy(ip + kIpv4DstOff, ip + kIpv4SrcOff, 4);
    std::memcpy(ip + kIpv4SrcOff, port.ipv4.data(), 4);
    const uint16_t old_ttl = load16(ip + kIpv4TtlOff);
    const uint16_t new_ttl = static_cast<uint16_t>(kTtl << 8 | ip[kIpv4ProtoOff]);
    store16(ip + kIpv4TtlOff, new_ttl);
    store16(ip + kIpv4CsumOff, csum_update16(load16(ip + kIpv4CsumOff), old_ttl, new_ttl));
    // Summed anew: an incremental update gives 0x0000 where 0xffff is right (all-zero message).
    icmp[0] = kIcmpEchoReply;
    store16(icmp + 2, 0);
    store16(icmp + 2, csum_finish(sum16(icmp, icmp_len)));
    f.len = pp.l3_off + pp.ip_len;
    return LocalReply::icmp_echo;
}

LocalReply answer_echo6(const PortConf& port, const ParsedPacket& pp, Frame& f) {
    uint8_t* ip = f.data + pp.l3_off;
    uint8_t* icmp = f.data + pp.l4_off;
    if (pp.is_fragment || pp.l4_off + 8u > pp.l3_off + pp.ip_len) return LocalReply::none;
    const uint32_t icmp_len = pp.l3_off + pp.ip_len - pp.l4_off;
    if (icmp[0] != kIcmp6Echo || icmp[1] != 0 || !host_source6(port, pp.src) ||
        !unicast_mac(f.data + 6) ||
        !icmp_csum_ok(icmp, icmp_len, pseudo6(ip, icmp_len, kProtoIcmp6)))
        return LocalReply::none;
    reply_l2(port, f.data);
    std::memcpy(ip + kIpv6DstOff, ip + kIpv6SrcOff, 16);
    std::memcpy(ip + kIpv6SrcOff, port.ipv6.data(), 16);
    ip[kIpv6HopLimitOff] = kTtl;
    icmp[0] = kIcmp6EchoReply;
    store16(icmp + 2, 0);
    store16(icmp + 2, csum_finish(sum16(icmp, icmp_len, pseudo6(ip, icmp_len, kProtoIcmp6))));
    f.len = pp.l3_off + pp.ip_len;
    return LocalReply::icmp6_echo;
}

// RFC 4861 section 7.2.4: a solicited advertisement for our address, with our MAC as the target
// link-layer address option. A DAD probe (source ::) is answered to all-nodes, unsolicited.
LocalReply answer_ns(const PortConf& port, const ParsedPacket& pp, Frame& f) {
    const uint8_t* ip = f.data + pp.l3_off;
    const uint8_t* ns = f.data + pp.l4_off;
    if (pp.l4_off + 24u > pp.l3_off + pp.ip_len) return LocalReply::none;
    if (ns[0] != kNdSolicit || ns[1] != 0 || ip[kIpv6HopLimitOff] != 255) return LocalReply::none;
    if (std::memcmp(ns + 8, port.ipv6.data(), 16) != 0) return LocalReply::none;
    // RFC 4861 section 7.1.1: the checksum, options of non-zero length, and from an unspecified
    // source only to the solicited-node group and without a source link-layer address option.
    // Answers go only to a unicast host that is not ourselves (or, for DAD, to all nodes).
    const uint32_t ns_len = pp.l3_off + pp.ip_len - pp.l4_off;
    if (!icmp_csum_ok(ns, ns_len, pseudo6(ip, ns_len, kProtoIcmp6)) || !unicast_mac(f.data + 6))
        return LocalReply::none;
    bool has_sllao = false;
    for (uint32_t off = 24; off < ns_len;) {
        if (off + 2 > ns_len || ns[off + 1] == 0) return LocalReply::none;
        has_sllao = has_sllao || ns[off] == 1;
        off += ns[off + 1] * 8u;
        if (off > ns_len) return LocalReply::none;
    }
    static constexpr uint8_t kUnspecified[16] = {};
    const bool dad = std::memcmp(ip + kIpv6SrcOff, kUnspecified, 16) == 0;
    static constexpr uint8_t kSolicitedPrefix[13] = {0xff, 0x02, 0, 0, 0, 0,   0,
                                                     0,    0,    0, 0, 1, 0xff};
    if (dad ? has_sllao || std::memcmp(ip + kIpv6DstOff, kSolicitedPrefix, 13) != 0
            : !host_source6(port, ip + kIpv6SrcOff))
        return LocalReply::none;
    uint8_t dst_ip[16] = {0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    uint8_t dst_mac[6] = {0x33, 0x33, 0, 0, 0, 1};
    if (!dad) {
        std::memcpy(dst_ip, ip + kIpv6SrcOff, 16);
        std::memcpy(dst_mac, f.data + 6, 6);
    }
    const uint32_t l2 = pp.l3_off;
    constexpr uint32_t kNaLen = 24 + 8;
    const uint32_t need = l2 + static_cast<uint32_t>(kIpv6Len) + kNaLen;
    if (need >
        f.len) {  // A request without options is shorter than our answer: grow into headroom.
        const uint32_t grow = need - f.len;
        if (f.headroom < grow) return LocalReply::none;
        std::memmove(f.data - grow, f.data, l2);
        f.data -= grow;
        f.headroom -= grow;
    }
    f.len = need;
    uint8_t* e = f.data;
    std::memcpy(e, dst_mac, 6);
    std::memcpy(e + 6, port.mac.data(), 6);
    uint8_t* o = e + l2;
    store32(o, 0x60000000u);
    store16(o + kIpv6PayloadLenOff, kNaLen);
    o[kIpv6NextHdrOff] = kProtoIcmp6;
    o[kIpv6HopLimitOff] = 255;
    std::memcpy(o + kIpv6SrcOff, port.ipv6.data(), 16);
    std::memcpy(o + kIpv6DstOff, dst_ip, 16);
    uint8_t* na = o + kIpv6Len;
    na[0] = kNdAdvert;
    na[1] = 0;
    store16(na + 2, 0);
    store32(na + 4, dad ? 0x20000000u : 0x60000000u);  // Override, and Solicited unless DAD.
    std::memcpy(na + 8, port.ipv6.data(), 16);
    na[24] = 2;  // Target link-layer address option, one 8-byte unit.
    na[25] = 1;
    std::memcpy(na + 26, port.mac.data(), 6);
    store16(na + 2, csum_finish(sum16(na, kNaLen, pseudo6(o, kNaLen, kProtoIcmp6))));
    return LocalReply::nd_advert;
}

}  // namespace

LocalReply answer_local(const PortConf& port, const ParsedPacket& pp, Frame& f) {
    if (pp.ip_ver == 0) {
        if (load16(f.data + pp.l3_off - 2) != kEtherTypeArp) return LocalReply::none;
        return answer_arp(port, pp, f);
    }
    if (pp.ip_ver == 4) {
        if (!port.has_ipv4 || pp.proto != kProtoIcmp ||
            std::memcmp(pp.dst, port.ipv4.data(), 4) != 0)
            return LocalReply::none;
        return answer_echo4(port, pp, f);
    }
    if (!port.has_ipv6 || pp.proto != kProtoIcmp6 || pp.is_fragment || pp.l4_off == 0 ||
        pp.l4_off >= pp.l3_off + pp.ip_len)
        return LocalReply::none;
    if (f.data[pp.l4_off] == kNdSolicit) return answer_ns(port, pp, f);
    if (std::memcmp(pp.dst, port.ipv6.data(), 16) != 0) return LocalReply::none;
    return answer_echo6(port, pp, f);
}

uint32_t build_arp_request(const PortConf& port, const uint8_t* target, uint8_t* out) {
    if (!port.has_ipv4) return 0;
    std::memset(out, 0, 60);
    std::memset(out, 0xff, 6);
    std::memcpy(out + 6, port.mac.data(), 6);
    store16(out + kEthTypeOff, kEtherTypeArp);
    uint8_t* a = out + kEthLen;
    store16(a, 1);
    store16(a + 2, kEtherTypeIpv4);
    a[4] = 6;
    a[5] = 4;
    store16(a + 6, 1);
    std::memcpy(a + 8, port.mac.data(), 6);
    std::memcpy(a + 14, port.ipv4.data(), 4);
    std::memcpy(a + 24, target, 4);
    return 60;  // Padded to the Ethernet minimum.
}

uint32_t build_neighbor_solicitation(const PortConf& port, const uint8_t* target, uint8_t* out) {
    if (!port.has_ipv6) return 0;
    constexpr uint32_t kNsLen = 24 + 8;
    // Solicited-node multicast ff02::1:ffXX:XXXX and its MAC 33:33:ff:XX:XX:XX (RFC 4291, 2464).
    uint8_t group[16] = {0xff, 0x02, 0, 0, 0,    0,          0,          0,
                         0,    0,    0, 1, 0xff, target[13], target[14], target[15]};
    const uint8_t mac[6] = {0x33, 0x33, 0xff, target[13], target[14], target[15]};
    std::memcpy(out, mac, 6);
    std::memcpy(out + 6, port.mac.data(), 6);
    store16(out + kEthTypeOff, kEtherTypeIpv6);
    uint8_t* ip = out + kEthLen;
    store32(ip, 0x60000000u);
    store16(ip + kIpv6PayloadLenOff, kNsLen);
    ip[kIpv6NextHdrOff] = kProtoIcmp6;
    ip[kIpv6HopLimitOff] = 255;
    std::memcpy(ip + kIpv6SrcOff, port.ipv6.data(), 16);
    std::memcpy(ip + kIpv6DstOff, group, 16);
    uint8_t* ns = ip + kIpv6Len;
    std::memset(ns, 0, kNsLen);
    ns[0] = kNdSolicit;
    std::memcpy(ns + 8, target, 16);
    ns[24] = 1;  // Source link-layer address option.
    ns[25] = 1;
    std::memcpy(ns + 26, port.mac.data(), 6);
    store16(ns + 2, csum_finish(sum16(ns, kNsLen, pseudo6(ip, kNsLen, kProtoIcmp6))));
    return static_cast<uint32_t>(kEthLen + kIpv6Len) + kNsLen;
}

bool ipv4_df(const ParsedPacket& pp, const uint8_t* frame) {
    return pp.ip_ver == 4 && (load16(frame + pp.l3_off + kIpv4FragOff) & kIpv4FlagDf) != 0;
}

bool make_too_big(const PortConf& port, const uint8_t* src4, const uint8_t* src6, uint32_t mtu,
                  Frame& f) {
    ParsedPacket pp;
    if (parse_packet(f.data, f.len, pp) != DropReason::none || pp.ip_ver == 0) return false;
    // Never about a frame sent to a link-layer group, nor back to a group or zero MAC.
    if (!unicast_mac(f.data) || !unicast_mac(f.data + 6)) return false;
    uint8_t* ip = f.data + pp.l3_off;
    const uint8_t* l4 = f.data + pp.l4_off;
    if (pp.ip_ver == 4) {
        // Never about a non-first fragment, an ICMP error, or to a source that is no host.
        if (src4 == nullptr || (load16(ip + kIpv4FragOff) & kIpv4FragOffsetMask) != 0 ||
            !host_source4(port, pp.src) || std::memcmp(pp.src, src4, 4) == 0)
            return false;
        if (pp.proto == kProtoIcmp && pp.l4_off + 1u <= pp.l3_off + pp.ip_len &&
            l4[0] != kIcmpEcho && l4[0] != kIcmpEchoReply)
            return false;
        constexpr uint32_t kHdr = kIpv4Len + 8;
        // The error is built in place, in the original's bytes: it must be longer than the
        // headers added (any packet too big for a tunnel is; found by fuzz_local).
        if (pp.ip_len <= kHdr) return false;
        // RFC 1812 4.3.2.3: as much of the original as fits in 576 bytes.
        const uint32_t quote = std::min<uint32_t>(pp.ip_len - kHdr, 576 - kHdr);
        uint8_t orig_src[4];
        std::memcpy(orig_src, ip + kIpv4SrcOff, 4);
        std::memmove(ip + kHdr, ip, quote);
        reply_l2(port, f.data);
        std::memset(ip, 0, kHdr);
        ip[0] = 0x45;
        ip[kIpv4TosOff] = 0xc0;  // CS6, as routers send control traffic.
        store16(ip + kIpv4TotalLenOff, static_cast<uint16_t>(kHdr + quote));
        ip[kIpv4TtlOff] = kTtl;
        ip[kIpv4ProtoOff] = kProtoIcmp;
        std::memcpy(ip + kIpv4SrcOff, src4, 4);
        std::memcpy(ip + kIpv4DstOff, orig_src, 4);
        store16(ip + kIpv4CsumOff, csum_finish(sum16(ip, kIpv4Len)));
        uint8_t* icmp = ip + kIpv4Len;
        icmp[0] = kIcmpUnreachable;
        icmp[1] = kIcmpFragNeeded;
        store16(icmp + 6, static_cast<uint16_t>(std::min<uint32_t>(mtu, 0xffff)));
        store16(icmp + 2, csum_finish(sum16(icmp, 8 + quote)));
        f.len = pp.l3_off + kHdr + quote;
        return true;
    }
    if (src6 == nullptr || !host_source6(port, pp.src) || std::memcmp(pp.src, src6, 16) == 0)
        return false;
    if (pp.proto == kProtoIcmp6 && !pp.is_fragment && pp.l4_off + 1u <= pp.l3_off + pp.ip_len &&
        l4[0] < 128)
        return false;
    constexpr uint32_t kHdr = kIpv6Len + 8;
    if (pp.ip_len <= kHdr) return false;
    // RFC 4443 2.4(c): as much as fits in the minimum IPv6 MTU.
    const uint32_t quote = std::min<uint32_t>(pp.ip_len - kHdr, 1280 - kHdr);
    uint8_t orig_src[16];
    std::memcpy(orig_src, ip + kIpv6SrcOff, 16);
    std::memmove(ip + kHdr, ip, quote);
    reply_l2(port, f.data);
    std::memset(ip, 0, kHdr);
    store32(ip, 0x60000000u);
    store16(ip + kIpv6PayloadLenOff, static_cast<uint16_t>(8 + quote));
    ip[kIpv6NextHdrOff] = kProtoIcmp6;
    ip[kIpv6HopLimitOff] = kTtl;
    std::memcpy(ip + kIpv6SrcOff, src6, 16);
    std::memcpy(ip + kIpv6DstOff, orig_src, 16);
    uint8_t* icmp = ip + kIpv6Len;
    icmp[0] = kIcmp6TooBig;
    store32(icmp + 4, mtu);
    store16(icmp + 2, csum_finish(sum16(icmp, 8 + quote, pseudo6(ip, 8 + quote, kProtoIcmp6))));
    f.len = pp.l3_off + kHdr + quote;
    return true;
}

namespace {

bool is_nd(const ParsedPacket& pp, const uint8_t* frame, uint8_t type) {
    return pp.ip_ver == 6 && pp.proto == kProtoIcmp6 && pp.l4_off != 0 &&
           pp.l4_off < pp.l3_off + pp.ip_len && frame[pp.l4_off] == type;
}

// ARP, NS and NA may tell a neighbor's MAC; a question for us is answered as well. Returns what
// the packet became: a reply to send, `learned` (consumed), or none (not ours).
LocalReply neighbor_traffic(const Snapshot& s, uint16_t rx_port, const ParsedPacket& pp, Frame& f) {
    // A routed LAN port adopts the hosts on its prefix that talk to it (their ARP/NS tells
    // their MAC); an outer port learns its next hops from answers to its own probes.
    const bool learned =
        s.neighbors->learn(rx_port, s.ports[rx_port], pp, f.data, f.len, rte_rdtsc());
    const LocalReply r = answer_local(s.ports[rx_port], pp, f);
    return r != LocalReply::none ? r : learned ? LocalReply::learned : LocalReply::none;
}

}  // namespace

bool local_on_inner(const Snapshot& s, uint16_t rx_port, const ParsedPacket& pp, Frame& f,
                    Verdict& v) {
    const PortConf& port = s.ports[rx_port];
    // Routed mode: the LAN's hosts talk to the gateway's own address on this port.
    if (!(port.has_ipv4 || port.has_ipv6)) return false;
    const bool ours = pp.ip_ver != 0 && addressed_to(port, pp);
    if (!(pp.ip_ver == 0 || ours || is_nd(pp, f.data, kNdSolicit) || is_nd(pp, f.data, kNdAdvert)))
        return false;
    v.local = pp.ip_ver == 0 || pp.proto == kProtoIcmp6 ? neighbor_traffic(s, rx_port, pp, f)
                                                        : answer_local(port, pp, f);
    if (v.local != LocalReply::none) {
        v.out_port = rx_port;
        return true;
    }
    if (!ours) return false;
    v.drop = DropReason::local_unhandled;
    return true;
}

bool neighbor_on_outer(const Snapshot& s, uint16_t rx_port, const ParsedPacket& pp, Frame& f,
                       Verdict& v) {
    if (!(pp.ip_ver == 0 || is_nd(pp, f.data, kNdSolicit) || is_nd(pp, f.data, kNdAdvert)))
        return false;
    v.local = neighbor_traffic(s, rx_port, pp, f);
    if (v.local != LocalReply::none)
        v.out_port = rx_port;
    else
        v.drop = pp.ip_ver == 0 ? DropReason::not_tunnel : DropReason::not_local;
    return true;
}

namespace {

// Lowers (or, at the same value, confirms) `t`'s path MTU to `mtu`; true when it went down.
bool lower_path_mtu(const TunnelConf& t, uint32_t mtu, uint64_t now) {
    TunnelPath& p = *t.path;
    mtu = std::min(mtu, t.outer_mtu);
    uint32_t cur = p.mtu.load(std::memory_order_relaxed);
    while (mtu < cur)
        if (p.mtu.compare_exchange_weak(cur, mtu, std::memory_order_relaxed)) {
            p.lowered_tsc.store(now, std::memory_order_relaxed);
            p.lowered.fetch_add(1, std::memory_order_relaxed);
            return true;
        }
    if (mtu == cur && cur < t.outer_mtu) p.lowered_tsc.store(now, std::memory_order_relaxed);
    return false;
}

}  // namespace

bool path_mtu_on_outer(const Snapshot& s, uint16_t rx_port, const ParsedPacket& pp, Frame& f,
                       Verdict& v, PacketNotes& n) {
    const PortConf& port = s.ports[rx_port];
    const bool v6 = pp.ip_ver == 6;
    const uint32_t end = pp.l3_off + pp.ip_len;
    if (pp.proto != (v6 ? kProtoIcmp6 : kProtoIcmp) || pp.is_fragment || pp.l4_off + 8u > end)
        return false;
    const uint8_t* icmp = f.data + pp.l4_off;
    const uint32_t icmp_len = end - pp.l4_off;
    const uint8_t* q = icmp + 8;  // The quoted packet: ours, if this is for us at all.
    const uint32_t qlen = icmp_len - 8;
    uint32_t mtu = 0, qhl = 0;
    if (!v6) {
        if (icmp[0] != 3 || icmp[1] != 4 || !icmp_csum_ok(icmp, icmp_len)) return false;
        mtu = load16(icmp + 6);
        if (qlen < kIpv4Len + kUdpLen || (q[0] >> 4) != 4) return false;
        qhl = (q[0] & 0xfu) * 4u;
        if (qhl < kIpv4Len || qlen < qhl + kUdpLen || q[kIpv4ProtoOff] != kProtoUdp ||
            !port.has_ipv4 || std::memcmp(q + kIpv4SrcOff, port.ipv4.data(), 4) != 0)
            return false;
    } else {
        if (icmp[0] != 2 || icmp[1] != 0 ||
            !icmp_csum_ok(icmp, icmp_len, pseudo6(f.data + pp.l3_off, icmp_len, kProtoIcmp6)))
            return false;
        mtu = load32(icmp + 4);
        qhl = kIpv6Len;
        if (qlen < kIpv6Len + kUdpLen || (q[0] >> 4) != 6 || q[kIpv6NextHdrOff] != kProtoUdp ||
            !port.has_ipv6 || std::memcmp(q + kIpv6SrcOff, port.ipv6.data(), 16) != 0)
            return false;
    }
    const uint8_t* qdst = q + (v6 ? kIpv6DstOff : kIpv4DstOff);
    const uint8_t* udp = q + qhl;
    const uint16_t dport = load16(udp + 2);
    // RFC 792 promises 8 bytes past the IP header (the UDP header); most routers quote more, and
    // then the VNI (at byte 4 of both VXLAN and Geneve headers) says which tunnel it was.
    const bool has_vni = qlen >= qhl + kUdpLen + 8;
    const uint32_t vni = has_vni ? load32(udp + kUdpLen + 4) >> 8 : 0;
    const auto same_path = [&](const TunnelConf& t) {
        return t.outer_port == rx_port && t.outer_v6 == v6 &&
               std::memcmp(t.remote.data(), qdst, v6 ? 16 : 4) == 0;
    };
    int own = -1;
    for (size_t i = 0; i < s.tunnels.size() && own < 0; ++i) {
        const TunnelConf& t = s.tunnels[i];
        if (same_path(t) && t.udp_port == dport && (!has_vni || t.vni == vni))
            own = static_cast<int>(i);
    }
    if (own < 0) return false;
    v.local = LocalReply::path_mtu;
    // A zero MTU comes from a pre-RFC 1191 router: nothing to learn. The path is the remote's, so
    // every tunnel to it learns; the floors keep a forged message from shrinking it to nothing.
    if (mtu == 0) return true;
    mtu = std::max(mtu, v6 ? kMinPathMtu6 : kMinPathMtu4);
    const uint64_t now = rte_get_tsc_cycles();
    for (size_t i = 0; i < s.tunnels.size(); ++i)
        if (same_path(s.tunnels[i]) && lower_path_mtu(s.tunnels[i], mtu, now) &&
            static_cast<int>(i) == own)
            n.tunnel_id = static_cast<int16_t>(own);
    return true;
}

size_t age_path_mtus(const Snapshot& s, uint64_t now_tsc, uint64_t tsc_hz) {
    size_t n = 0;
    for (const TunnelConf& t : s.tunnels) {
        TunnelPath& p = *t.path;
        if (p.mtu.load(std::memory_order_relaxed) >= t.outer_mtu) continue;
        if (now_tsc - p.lowered_tsc.load(std::memory_order_relaxed) < kPathMtuAgeSeconds * tsc_hz)
            continue;
        p.mtu.store(t.outer_mtu, std::memory_order_relaxed);
        ++n;
    }
    return n;
}

void carry_path_mtus(const Snapshot& from, const Snapshot& to) {
    for (const TunnelConf& o : from.tunnels) {
        const uint32_t mtu = o.path->mtu.load(std::memory_order_relaxed);
        if (mtu >= o.outer_mtu) continue;
        for (const TunnelConf& t : to.tunnels)
            if (t.name == o.name && t.outer_v6 == o.outer_v6 && t.remote == o.remote &&
                from.ports[o.outer_port].name == to.ports[t.outer_port].name) {
                t.path->mtu.store(std::min(mtu, t.outer_mtu), std::memory_order_relaxed);
                t.path->lowered_tsc.store(o.path->lowered_tsc.load(std::memory_order_relaxed),
                                          std::memory_order_relaxed);
            }
    }
}

bool echo_on_outer(const PortConf& port, uint16_t rx_port, const ParsedPacket& pp, Frame& f,
                   Verdict& v) {
    if (pp.proto != kProtoIcmp && pp.proto != kProtoIcmp6) return false;
    v.local = answer_local(port, pp, f);
    if (v.local == LocalReply::none) return false;
    v.out_port = rx_port;
    return true;
}

}  // namespace dscpgw
