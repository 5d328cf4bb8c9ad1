// The one list of reasons the dataplane drops a packet. Each becomes a counter, a trace verdict and
// (with the control plane) the `reason` label of the drop metric, so a name is a contract: add,
// never rename.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dscpgw {

#define DSCPGW_DROP_REASONS(X)                                                                 \
    X(truncated, "frame ends before the headers it announces")                                 \
    X(bad_ip_header, "IP version, header length or total length inconsistent with the frame")  \
    X(not_ip,                                                                                  \
      "frame on an inner port is not IPv4/IPv6, so it can be neither classified nor routed")   \
    X(no_route, "inner destination matches no tunnel route")                                   \
    X(too_big, "packet would exceed the IP MTU of the port it leaves by")                      \
    X(no_headroom, "buffer lacks the headroom for the outer headers")                          \
    X(multi_segment, "chained buffer; the gateway needs the frame in one segment")             \
    X(not_local, "outer packet not addressed to a VTEP address of the receiving port")         \
    X(not_tunnel, "outer packet is not UDP to the UDP port of a tunnel on the receiving port") \
    X(outer_fragment, "outer packet is an IP fragment; tunnel packets are not reassembled")    \
    X(unknown_remote, "tunnel packet from a source that is no tunnel's remote")                \
    X(unknown_vni, "tunnel packet from a known remote carrying a VNI no tunnel of it has")     \
    X(bad_tunnel_header,                                                                       \
      "VXLAN I flag clear, Geneve version not 0, options past the packet, unknown critical "   \
      "option or OAM frame")                                                                   \
    X(unsupported_payload, "Geneve protocol type other than Ethernet (0x6558)")                \
    X(bad_inner_frame, "decapsulated frame too short or its inner IP header malformed")        \
    X(ecn_ce_on_not_ect, "outer CE over a Not-ECT inner packet (RFC 6040 section 4.2)")        \
    X(local_unhandled,                                                                         \
      "addressed to the gateway itself but not ARP, Neighbor Solicitation or echo")            \
    X(no_neighbor, "the tunnel's next hop is not resolved (yet) by ARP/ND")

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
