// Header parsing on a byte span. Reads nothing past `len`.
#pragma once

#include <rte_byteorder.h>

#include <array>
#include <cstdint>
#include <cstring>

#include "dataplane/drop_reason.h"
#include "dataplane/wire.h"

namespace dscpgw {

struct ParsedPacket {
    uint16_t l3_off = 0;    // Offset of the IP header (after Ethernet and any VLAN tags).
    uint8_t vlan_tags = 0;  // Number of 802.1Q/802.1ad tags between the source MAC and EtherType.
    uint16_t tci = 0;       // The outermost tag's TCI (PCP << 13 | DEI << 12 | VID) with vlan_tags.
    uint8_t ip_ver = 0;     // 0 (not IP), 4 or 6.
    uint8_t tos = 0;        // TOS / traffic-class byte: DSCP << 2 | ECN.
    uint8_t proto = 0;      // Transport protocol (after IPv6 extension headers).
    bool is_fragment = false;  // Any fragment (IPv4 MF or offset, IPv6 fragment header).
    bool has_ports = false;    // sport/dport valid: UDP, TCP or SCTP, first fragment.
    bool has_bth = false;
    uint16_t l4_off = 0;  // Offset of the transport header when the protocol was reached.
    uint32_t ip_len = 0;  // Length of the IP packet per its header (excludes Ethernet padding).
    uint16_t sport = 0, dport = 0;
    uint8_t bth_opcode = 0;
    const uint8_t* src = nullptr;  // Points into the frame: 4 or 16 bytes.
    const uint8_t* dst = nullptr;

    uint8_t dscp() const { return static_cast<uint8_t>(tos >> 2); }
    uint8_t pcp() const { return static_cast<uint8_t>(tci >> 13); }
    uint16_t vid() const { return tci & 0xfffu; }
    uint8_t ecn() const { return static_cast<uint8_t>(tos & 3); }
};

// Sets the TOS / traffic class of the IP packet `pp` describes in `frame`.
inline void write_tos(const ParsedPacket& pp, uint8_t* frame, uint8_t tos) {
    uint8_t* ip = frame + pp.l3_off;
    if (pp.ip_ver == 4)
        wire::set_ipv4_tos(ip, tos);
    else
        wire::set_ipv6_tclass(ip, tos);
}

// Parses Ethernet (up to two VLAN tags), IPv4 (with options) or IPv6 (with extension headers), UDP
// and, for UDP destination port 4791, the RoCEv2 BTH. Returns DropReason::none on success; a frame
// that is not IP parses successfully with ip_ver 0.
DropReason parse_packet_general(const uint8_t* data, uint32_t len, ParsedPacket& pp);

// Whether the frame at `d` (at least 28 bytes) is untagged IPv4 without options, carrying UDP,
// not a fragment: EtherType 08 00 and version/IHL 45 at bytes 12-14, the MF bit and the fragment
// offset clear and protocol 17 at bytes 20-23 (DF and the TTL may be anything). Two loads, two
// masks, one compare.
inline bool plain_ipv4_udp(const uint8_t* d) {
    static_assert(RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN, "the masks read bytes in that order");
    static_assert(wire::kEtherTypeIpv4 == 0x0800 && wire::kProtoUdp == 17 &&
                  (wire::kIpv4FlagMf | wire::kIpv4FragOffsetMask) == 0x3fff);
    uint64_t w0, w1;
    std::memcpy(&w0, d + 12, sizeof w0);  // EtherType, version/IHL, TOS, total length, ID.
    std::memcpy(&w1, d + 20, sizeof w1);  // Flags/fragment offset, TTL, protocol, checksum, ...
    return (((w0 & 0xffffffu) ^ 0x450008u) | ((w1 & 0xff00ff3fu) ^ 0x11000000u)) == 0;
}

// Whether the frame at `d` (at least 21 bytes) is untagged IPv6 without extension headers
// carrying UDP: EtherType 86 DD and version 6 at bytes 12-14, next header 17 at byte 20.
inline bool plain_ipv6_udp(const uint8_t* d) {
    static_assert(RTE_BYTE_ORDER == RTE_LITTLE_ENDIAN, "the mask reads bytes in that order");
    static_assert(wire::kEtherTypeIpv6 == 0x86dd && wire::kProtoUdp == 17);
    uint32_t w;
    std::memcpy(&w, d + 12, sizeof w);  // EtherType, version and the traffic class's top.
    return ((w & 0xf0ffffu) ^ 0x60dd86u) == 0 && d[wire::kEthLen + wire::kIpv6NextHdrOff] == 17;
}

// The common frame (untagged, IPv4 without options or IPv6 without extension headers, not a
// fragment, carrying UDP) in straight-line code. Returns true with `pp` exactly as
// parse_packet_general() would fill it; false for any other or malformed frame, leaving `pp`
// unspecified (the fuzz target checks the equivalence). `kFormChecked` (IPv4): the caller has
// already seen len >= 42 and plain_ipv4_udp().
template <bool kV6, bool kFormChecked = false>
inline bool parse_plain_udp_family(const uint8_t* data, uint32_t len, ParsedPacket& pp) {
    using namespace wire;
    static_assert(!(kV6 && kFormChecked));
    constexpr uint32_t hl = kV6 ? kIpv6Len : kIpv4Len;
    if (!kFormChecked && len < kEthLen + hl + kUdpLen) return false;
    const uint8_t* ip = data + kEthLen;
    uint32_t total;
    if constexpr (!kV6) {
        if (!kFormChecked && !plain_ipv4_udp(data)) return false;
        total = load16(ip + kIpv4TotalLenOff);
        pp.ip_ver = 4;
        pp.tos = ip[kIpv4TosOff];
        pp.src = ip + kIpv4SrcOff;
        pp.dst = ip + kIpv4DstOff;
    } else {
        total = kIpv6Len + load16(ip + kIpv6PayloadLenOff);
        if (!plain_ipv6_udp(data)) return false;
        pp.ip_ver = 6;
        pp.tos = ipv6_tclass(ip);
        pp.src = ip + kIpv6SrcOff;
        pp.dst = ip + kIpv6DstOff;
    }
    // hl + 8 <= total <= len - 14 as one unsigned compare: len >= 14 + hl + 8 keeps the right side
    // from wrapping, and a total under hl + 8 wraps to more than it.
    if (total - (hl + kUdpLen) > len - kEthLen - (hl + kUdpLen)) return false;
    const uint8_t* udp = ip + hl;
    const uint16_t dport = load16(udp + 2);
    const bool bth = dport == kRoceV2Port;
    if (bth && total < hl + kUdpLen + kBthLen) return false;
    pp.l3_off = kEthLen;
    pp.vlan_tags = 0;
    pp.tci = 0;
    pp.proto = kProtoUdp;
    pp.is_fragment = false;
    pp.has_ports = true;
    pp.has_bth = bth;
    pp.l4_off = static_cast<uint16_t>(kEthLen + hl);
    pp.ip_len = total;
    pp.sport = load16(udp);
    pp.dport = dport;
    pp.bth_opcode = bth ? udp[kUdpLen] : 0;
    return true;
}

// Either family: the IPv4 form's own test first (it includes the EtherType), so that an IPv4
// frame, nearly every packet, pays for no IPv6 EtherType compare.
inline bool parse_plain_udp(const uint8_t* data, uint32_t len, ParsedPacket& pp) {
    using namespace wire;
    if (__builtin_expect(len >= kEthLen + kIpv4Len + kUdpLen && plain_ipv4_udp(data), 1))
        return parse_plain_udp_family<false, true>(data, len, pp);
    if (len >= kEthLen && load16(data + kEthTypeOff) == kEtherTypeIpv6)
        return parse_plain_udp_family<true>(data, len, pp);
    return false;
}

inline DropReason parse_packet(const uint8_t* data, uint32_t len, ParsedPacket& pp) {
    return parse_plain_udp(data, len, pp) ? DropReason::none : parse_packet_general(data, len, pp);
}

}  // namespace dscpgw
