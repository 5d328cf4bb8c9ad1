// Header parsing on a byte span. Reads nothing past `len`.
#pragma once

#include <array>
#include <cstdint>

#include "dataplane/drop_reason.h"

namespace dscpgw {

struct ParsedPacket {
    uint16_t l3_off = 0;    // Offset of the IP header (after Ethernet and any VLAN tags).
    uint8_t vlan_tags = 0;  // Number of 802.1Q/802.1ad tags between the source MAC and EtherType.
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
    uint8_t ecn() const { return static_cast<uint8_t>(tos & 3); }
};

// Parses Ethernet (up to two VLAN tags), IPv4 (with options) or IPv6 (with extension headers), UDP
// and, for UDP destination port 4791, the RoCEv2 BTH. Returns DropReason::none on success; a frame
// that is not IP parses successfully with ip_ver 0.
DropReason parse_packet(const uint8_t* data, uint32_t len, ParsedPacket& pp);

}  // namespace dscpgw
