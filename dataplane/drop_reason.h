// The one list of reasons the dataplane drops a packet. Each becomes a counter, a trace verdict and
// (with the control plane) the `reason` label of the drop metric, so a name is a contract: add,
// never rename.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dscpgw {

#define DSCPGW_DROP_REASONS(X)                                                                     \
    X(truncated,                                                                                   \
      "the frame ends before a header it announces (Ethernet, VLAN, IP, UDP, BTH, UDP length)")    \
    X(bad_ip_header,                                                                               \
      "IP version differs from the EtherType, IHL below 5, or total length inconsistent with "     \
      "the header or the frame")                                                                   \
    X(not_ip,                                                                                      \
      "a frame on an inner port that is neither IPv4 nor IPv6 (ARP, LLDP...): it can be neither "  \
      "classified nor routed")                                                                     \
    X(no_route, "no tunnel route covers the inner destination")                                    \
    X(too_big,                                                                                     \
      "a received frame larger than its port's MTU, an encapsulated packet larger than the "       \
      "tunnel's path MTU, or a decapsulated one larger than the inner port's MTU")                 \
    X(no_headroom,                                                                                 \
      "the buffer has too little headroom for the outer headers (never with DPDK's 128-byte "      \
      "default)")                                                                                  \
    X(multi_segment,                                                                               \
      "a chained buffer: the gateway needs the frame in one segment (pools are sized so that a "   \
      "port's MTU fits)")                                                                          \
    X(not_local, "an outer packet not addressed to the receiving port's VTEP address")             \
    X(not_tunnel, "an outer packet that is not UDP to a tunnel UDP port of the receiving port")    \
    X(outer_fragment, "an outer IP fragment (tunnel packets are not reassembled)")                 \
    X(unknown_remote, "a tunnel packet from an address that is no tunnel's remote")                \
    X(unknown_vni, "a tunnel packet from a known remote with a VNI none of its tunnels has")       \
    X(bad_tunnel_header,                                                                           \
      "VXLAN I flag clear; Geneve version not 0, options past the packet, a critical option or "   \
      "an OAM frame")                                                                              \
    X(unsupported_payload,                                                                         \
      "Geneve protocol type other than Ethernet (0x6558), such as GCP's IPv4-in-Geneve")           \
    X(bad_inner_frame, "a decapsulated frame shorter than Ethernet or with a malformed IP header") \
    X(ecn_ce_on_not_ect, "outer CE over a Not-ECT inner packet (RFC 6040 section 4.2)")            \
    X(local_unhandled,                                                                             \
      "addressed to a routed LAN port's own address, but not ARP, Neighbor Discovery or echo")     \
    X(no_neighbor,                                                                                 \
      "the tunnel's next hop, or a routed LAN's host, is not resolved (yet) by "                   \
      "ARP/ND")                                                                                    \
    X(bad_checksum,                                                                                \
      "an outer IPv4 header checksum or IPv6 UDP checksum that is wrong, or an IPv6 UDP checksum " \
      "of zero on a tunnel without udp6_zero_checksum_rx (RFC 6935/6936)")                         \
    X(inner_vlan,                                                                                  \
      "a decapsulated frame with an 802.1Q/802.1ad tag, on a tunnel without inner_vlan = "         \
      "\"keep\"")                                                                                  \
    X(inner_link_local,                                                                            \
      "a decapsulated frame to an IEEE 802.1 link-local address (01:80:c2:00:00:00/44: PAUSE, "    \
      "PFC, STP, LACP, LLDP), which no bridge or router forwards")                                 \
    X(inner_not_ip,                                                                                \
      "a decapsulated frame that is neither IPv4 nor IPv6, or on a routed LAN is ARP or Neighbor " \
      "Discovery (a transparent LAN also gets ARP and ND)")                                        \
    X(wrong_vlan, "a frame on a tagged inner port (vlan) without that VLAN as its one 802.1Q tag") \
    X(policed, "a red packet of a policer whose red action is \"drop\"")

enum class DropReason : uint8_t {
    none = 0,
#define DSCPGW_X(name, help) name,
    DSCPGW_DROP_REASONS(DSCPGW_X)
#undef DSCPGW_X
        count_
};

inline constexpr size_t kDropReasonCount = static_cast<size_t>(DropReason::count_);

struct DropReasonInfo {
    std::string_view name;
    std::string_view help;
};

inline constexpr DropReasonInfo kDropReasonInfo[kDropReasonCount] = {{"none", "not dropped"},
#define DSCPGW_X(name, help) {#name, help},
                                                                     DSCPGW_DROP_REASONS(DSCPGW_X)
#undef DSCPGW_X
};

inline constexpr std::string_view drop_reason_name(DropReason r) {
    return kDropReasonInfo[static_cast<size_t>(r)].name;
}

}  // namespace dscpgw
