#include "dataplane/packet.h"

#include "dataplane/wire.h"

namespace dscpgw {

using namespace wire;

namespace {

bool is_ipv6_ext(uint8_t nh) {
    // Hop-by-hop, routing, fragment, destination options: the ones a router may skip.
    return nh == 0 || nh == 43 || nh == 44 || nh == 60;
}

}  // namespace

DropReason parse_packet_general(const uint8_t* data, uint32_t len, ParsedPacket& pp) {
    pp = ParsedPacket{};
    if (len < kEthLen) return DropReason::truncated;
    uint32_t off = kEthTypeOff;
    uint16_t et = load16(data + off);
    while ((et == kEtherTypeVlan || et == kEtherTypeQinQ) && pp.vlan_tags < 2) {
        off += kVlanLen;
        if (off + 2 > len) return DropReason::truncated;
        if (pp.vlan_tags == 0) pp.tci = load16(data + off - 2);
        et = load16(data + off);
        ++pp.vlan_tags;
    }
    off += 2;
    pp.l3_off = static_cast<uint16_t>(off);

    const uint8_t* ip = data + off;
    const uint32_t avail = len - off;
    uint32_t l4 = 0;
    if (et == kEtherTypeIpv4) {
        if (avail < kIpv4Len) return DropReason::truncated;
        if ((ip[0] >> 4) != 4) return DropReason::bad_ip_header;
        const uint32_t ihl = (ip[0] & 0xfu) * 4u;
        const uint32_t total = load16(ip + kIpv4TotalLenOff);
        if (ihl < kIpv4Len || total < ihl) return DropReason::bad_ip_header;
        if (total > avail) return DropReason::truncated;
        pp.ip_ver = 4;
        pp.tos = ip[kIpv4TosOff];
        pp.proto = ip[kIpv4ProtoOff];
        pp.ip_len = total;
        pp.src = ip + kIpv4SrcOff;
        pp.dst = ip + kIpv4DstOff;
        const uint16_t frag = load16(ip + kIpv4FragOff);
        pp.is_fragment = (frag & (kIpv4FlagMf | kIpv4FragOffsetMask)) != 0;
        if ((frag & kIpv4FragOffsetMask) != 0) return DropReason::none;  // No L4 header here.
        l4 = ihl;
    } else if (et == kEtherTypeIpv6) {
        if (avail < kIpv6Len) return DropReason::truncated;
        if ((ip[0] >> 4) != 6) return DropReason::bad_ip_header;
        const uint32_t total = kIpv6Len + load16(ip + kIpv6PayloadLenOff);
        // A jumbogram (payload length 0 with a hop-by-hop option) cannot occur below 64 KiB frames.
        if (total > avail) return DropReason::truncated;
        pp.ip_ver = 6;
        pp.tos = ipv6_tclass(ip);
        pp.ip_len = total;
        pp.src = ip + kIpv6SrcOff;
        pp.dst = ip + kIpv6DstOff;
        uint8_t nh = ip[kIpv6NextHdrOff];
        l4 = kIpv6Len;
        for (int i = 0; i < 8 && is_ipv6_ext(nh); ++i) {
            if (l4 + 8 > total) return DropReason::truncated;
            const uint8_t* ext = ip + l4;
            if (nh == 44) {
                pp.is_fragment = true;
                if ((load16(ext + 2) & 0xfff8) != 0) {  // Not the first fragment.
                    pp.proto = ext[0];
                    return DropReason::none;
                }
                nh = ext[0];
                l4 += 8;
            } else {
                nh = ext[0];
                l4 += (static_cast<uint32_t>(ext[1]) + 1) * 8;
            }
        }
        if (l4 > total) return DropReason::truncated;
        pp.proto = nh;
        if (is_ipv6_ext(nh)) return DropReason::none;  // Chain too long: no ports.
    } else {
        return DropReason::none;  // Not IP.
    }

    pp.l4_off = static_cast<uint16_t>(off + l4);
    if (pp.proto == 6 || pp.proto == 132) {
        // TCP and SCTP: the ports only feed the tunnel's source-port entropy.
        if (l4 + 4 <= pp.ip_len) {
            pp.sport = load16(ip + l4);
            pp.dport = load16(ip + l4 + 2);
            pp.has_ports = true;
        }
        return DropReason::none;
    }
    if (pp.proto != kProtoUdp) return DropReason::none;
    if (l4 + kUdpLen > pp.ip_len) return DropReason::truncated;
    const uint8_t* udp = ip + l4;
    pp.sport = load16(udp);
    pp.dport = load16(udp + 2);
    pp.has_ports = true;
    if (pp.dport == kRoceV2Port && !pp.is_fragment) {
        if (l4 + kUdpLen + kBthLen > pp.ip_len) return DropReason::truncated;
        pp.has_bth = true;
        pp.bth_opcode = udp[kUdpLen];
    }
    return DropReason::none;
}

}  // namespace dscpgw
