// The per-packet path, on a byte span with headroom. Needs no EAL beyond the route and decap
// tables the snapshot holds, allocates nothing, never throws.
#pragma once

#include <cstdint>

#include "dataplane/drop_reason.h"
#include "dataplane/packet.h"
#include "dataplane/snapshot.h"

namespace dscpgw {

// A frame in a buffer: `data` may move back into the headroom (encapsulation) or forward (VLAN
// removal, decapsulation); `len` is the frame's length.
struct Frame {
    uint8_t* data;
    uint32_t len;
    uint32_t headroom;
};

// Replies the gateway makes to traffic for its own addresses (dataplane/local.h).
// `learned`: an ARP/ND packet told a neighbor's MAC; it is consumed, nothing is sent.
enum class LocalReply : uint8_t { none, arp, icmp_echo, nd_advert, icmp6_echo, learned, count_ };
inline constexpr const char* kLocalReplyNames[] = {
    "none", "arp_reply", "icmp_echo_reply", "nd_advert", "icmp6_echo_reply", "neighbor_learned"};

struct Verdict {
    DropReason drop = DropReason::none;
    uint16_t out_port = 0;
    int16_t class_id = -1;  // Matching class, -1 for none (inner path only).
    int16_t tunnel_id = -1;
    int16_t dscp_in = -1;   // Inner path: inner DSCP received. Outer path: outer DSCP.
    int16_t dscp_out = -1;  // DSCP of the packet sent (inner path: the inner/outer DSCP).
    bool decap = false;
    bool dscp_rewritten = false;
    bool outer_remarked = false;
    bool ce_marked = false;
    bool tx_udp6_cksum =
        false;  // The outer IPv6 UDP checksum is left to the NIC (pseudo-header in place).
    LocalReply local =
        LocalReply::none;  // Answered locally: the frame is the reply, out of rx port.
    uint16_t pmtu = 0;  // With too_big on the inner path: the MTU to signal back (DF or IPv6 only).
    // A RoCEv2 packet (UDP 4791 with a BTH) carried through a tunnel: its inner IP header and BTH
    // in the frame as sent (neither moves during encapsulation, VLAN removal or decapsulation),
    // so that the worker can count CNPs and conversations without parsing the packet again.
    const uint8_t* roce_l3 = nullptr;
    const uint8_t* roce_bth = nullptr;
};

// Records where a parsed packet's IP header and BTH are, when it is RoCEv2.
inline void note_roce(Verdict& v, const ParsedPacket& pp, const uint8_t* frame) {
    if (pp.has_bth) {
        v.roce_l3 = frame + pp.l3_off;
        v.roce_bth = frame + pp.l4_off + wire::kUdpLen;
    }
}

// The packet's side of ClassMatch's masked compare.
inline uint64_t class_key(const ParsedPacket& pp) {
    uint64_t k = uint64_t{pp.proto} << ClassMatch::kProtoShift;
    if (pp.proto == wire::kProtoUdp && pp.has_ports) k |= ClassMatch::kIsUdp | pp.dport;
    if (pp.has_bth) k |= ClassMatch::kHasBth | uint64_t{pp.bth_opcode} << ClassMatch::kOpcodeShift;
    return k;
}

// First-match classification; returns the class index or -1.
int classify(const Snapshot& s, const ParsedPacket& pp);

// ECMP entropy: a hash of the inner 5-tuple mapped into 49152..65535 (RFC 7348 section 5).
uint32_t flow_hash(const ParsedPacket& pp);
inline uint16_t entropy_port(uint32_t hash) {
    return static_cast<uint16_t>(0xc000u | (hash & 0x3fffu));
}

// The last decapsulation-table hit, kept by the caller for the packets of one burst (which mostly
// come from one tunnel) so that they skip the hash lookup. Valid for one snapshot only: the burst
// glue starts each burst with an empty one.
struct DecapCache {
    DecapKey key{};
    int16_t tunnel_id = -1;
};

// Inner -> outer: classify, mark, route, encapsulate.
Verdict process_inner(const Snapshot& s, uint16_t rx_port, Frame& f);
// The same without the shortcut below: the reference the fuzz target compares it with.
Verdict process_inner_general(const Snapshot& s, uint16_t rx_port, Frame& f);
// The shortcut: process_inner_general() for the frame the gateway exists for (untagged IPv4
// without options or IPv6 without extension headers, UDP, a route, a tunnel that takes it), the
// same decisions and bytes in straight-line code. Everything is checked before anything is written, so a frame it declines
// (false) reaches the general path untouched; it declines every drop, local reply and unusual
// case. process_inner() is this, else the general path.
bool encap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Verdict& v);
// Outer -> inner: validate, decapsulate, RFC 6040, DSCP-on-decap, bleaching detection.
Verdict process_outer(const Snapshot& s, uint16_t rx_port, Frame& f, DecapCache* cache = nullptr);
// The same without the shortcut below (the fuzz target's reference).
Verdict process_outer_general(const Snapshot& s, uint16_t rx_port, Frame& f,
                              DecapCache* cache = nullptr);
// The shortcut: process_outer_general() for plain IPv4/UDP outer and inner packets to this VTEP
// from a known tunnel that are delivered, in straight-line code; like encap_plain(), it writes
// nothing unless it takes the packet, and declines every drop and unusual case.
bool decap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Verdict& v, DecapCache* cache);

inline Verdict process_packet(const Snapshot& s, uint16_t rx_port, Frame& f,
                              DecapCache* cache = nullptr) {
    return s.ports[rx_port].role == PortRole::inner ? process_inner(s, rx_port, f)
                                                    : process_outer(s, rx_port, f, cache);
}

}  // namespace dscpgw
