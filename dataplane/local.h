// Traffic for the gateway itself: ARP, ICMP echo, IPv6 Neighbor Discovery and ICMPv6 echo for a
// port's own addresses, and the ICMP messages the gateway originates (Fragmentation Needed, Packet
// Too Big). Each function rewrites the received frame in place into the reply, so no buffer is
// allocated; the reply leaves by the port the request came in on.
#pragma once

#include <cstdint>
#include <cstring>

#include "dataplane/packet.h"
#include "dataplane/pipeline.h"
#include "dataplane/snapshot.h"

namespace dscpgw {

// Whether an IP packet is addressed to `port`'s own address.
inline bool addressed_to(const PortConf& port, const ParsedPacket& pp) {
    return pp.ip_ver == 4 ? port.has_ipv4 && std::memcmp(pp.dst, port.ipv4.data(), 4) == 0
                          : port.has_ipv6 && std::memcmp(pp.dst, port.ipv6.data(), 16) == 0;
}

// A received frame larger than its port's MTU (an IP packet longer than `mtu`, or a non-IP
// payload), which a correctly configured neighbour never sends: dropped too_big on ingress.
inline bool larger_than_port(const PortConf& port, const ParsedPacket& pp, const Frame& f) {
    return (pp.ip_ver != 0 ? pp.ip_len : f.len - pp.l3_off) > port.mtu;
}

// Local dispatch of the general paths. Each returns true when the frame was the gateway's own
// business, with `v` saying what became of it (a reply in `f` out of `rx_port`, consumed, or a
// drop); false leaves `f` and `v` untouched.
// Inner port: on a routed LAN port, ARP, Neighbor Discovery and traffic for the port's address.
bool local_on_inner(const Snapshot& s, uint16_t rx_port, const ParsedPacket& pp, Frame& f,
                    Verdict& v);
// Outer port: ARP and Neighbor Discovery (the underlay resolves our VTEP, we our next hops).
bool neighbor_on_outer(const Snapshot& s, uint16_t rx_port, const ParsedPacket& pp, Frame& f,
                       Verdict& v);
// Outer port: ICMP Fragmentation Needed (RFC 1191) or ICMPv6 Packet Too Big (RFC 8201) to the
// VTEP address (checked by the caller) quoting one of the gateway's own tunnel packets (source
// this port's VTEP address, destination a tunnel's remote, UDP to its port, and its VNI where the
// quote reaches it). Lowers the path MTU of every tunnel to that remote from this port, never below
// 552 (IPv4) / 1280 (IPv6) nor above the configured; consumed (LocalReply::path_mtu), with `n`'s
// tunnel_id set to the quoted tunnel when its path MTU went down.
bool path_mtu_on_outer(const Snapshot& s, uint16_t rx_port, const ParsedPacket& pp, Frame& f,
                       Verdict& v, PacketNotes& n);
// Control thread, about once a second: a path MTU nothing lowered or confirmed for
// kPathMtuAgeSeconds goes back to the configured one (RFC 1191 section 6.3, RFC 8201 section 4),
// so that a path that grew again is found. Returns how many tunnels went back.
size_t age_path_mtus(const Snapshot& s, uint64_t now_tsc, uint64_t tsc_hz);
// Control thread, before `to` replaces `from`: learned path MTUs of tunnels that keep their name,
// outer port and remote survive the reload (capped by the new configured MTU).
void carry_path_mtus(const Snapshot& from, const Snapshot& to);
// Outer port: an ICMP/ICMPv6 echo request to the VTEP address (checked by the caller).
bool echo_on_outer(const PortConf& port, uint16_t rx_port, const ParsedPacket& pp, Frame& f,
                   Verdict& v);

// Answers `f` (parsed as `pp`) if it is an ARP request, a Neighbor Solicitation, or an ICMP/ICMPv6
// echo request for one of `port`'s addresses. Returns what was answered, or LocalReply::none with
// the frame untouched.
LocalReply answer_local(const PortConf& port, const ParsedPacket& pp, Frame& f);

// Turns an inner packet that is too big for its tunnel into the ICMP error its sender needs
// (RFC 1191 Fragmentation Needed with `mtu`, or RFC 8201 Packet Too Big), addressed back to it.
// `src4`/`src6` is the address the error comes from. Returns false, frame untouched, when no error
// may be sent (not a first fragment, an ICMP error itself, a multicast source...).
bool make_too_big(const PortConf& port, const uint8_t* src4, const uint8_t* src6, uint32_t mtu,
                  Frame& f);

// Probes the control side sends to resolve a next hop, written to `out` (at least 128 bytes):
// a broadcast ARP request, or a Neighbor Solicitation to the target's solicited-node multicast
// address. Return the frame length, 0 if the port lacks an address of that family.
uint32_t build_arp_request(const PortConf& port, const uint8_t* target, uint8_t* out);
uint32_t build_neighbor_solicitation(const PortConf& port, const uint8_t* target, uint8_t* out);

// Whether an inner IPv4 packet has DF set (IPv6 packets are never fragmented by routers).
bool ipv4_df(const ParsedPacket& pp, const uint8_t* frame);

}  // namespace dscpgw
