// The per-packet path, on a byte span with headroom. Needs no EAL beyond the route and decap
// tables the snapshot holds, allocates nothing, never throws.
#pragma once

#include <rte_branch_prediction.h>

#include <cstdint>

#include "dataplane/counters.h"
#include "dataplane/drop_reason.h"
#include "dataplane/packet.h"
#include "dataplane/snapshot.h"

namespace dscpgw {

struct QosClock;
struct EncapCache;
struct DecapFlowCache;

// What the receiving device found of a frame's checksums, where it checked them: the mbuf's RX
// verdict bits as they lie there, shifted down three (rx_cksum_bits(), burst.h). GOOD sets a
// layer's good bit, BAD its bad bit, NONE (the field wrong but the data intact, as after a NIC
// changed the header) both, UNKNOWN neither. A layer is good where its good bit is set, bad where
// only its bad bit is, and with neither unknown: verified in software.
enum RxCksum : uint8_t { kRxL4Bad = 1, kRxIpBad = 2, kRxIpGood = 16, kRxL4Good = 32 };

// A frame in a buffer: `data` may move back into the headroom (encapsulation) or forward (VLAN
// removal, decapsulation); `len` is the frame's length.
struct Frame {
    uint8_t* data;
    uint32_t len;
    uint32_t headroom;
    uint8_t rx_cksum = 0;  // RxCksum bits.
};

// What the packet path decided: where the frame goes, or why it goes nowhere.
struct Verdict {
    DropReason drop = DropReason::none;
    LocalReply local = LocalReply::none;  // Answered: the frame is the reply, out of the RX port.
    uint16_t out_port = 0;
    uint16_t pmtu = 0;  // With too_big on the inner path: the MTU to signal back (DF or IPv6 only).
    bool tx_udp6_cksum = false;  // The outer IPv6 UDP checksum is the NIC's (pseudo-header set).
};

// What happened to the packet on the way: what the counters and the trace need, nothing the
// forwarding depends on.
struct PacketNotes {
    int16_t class_id = -1;    // Matching class, -1 for none (inner path only).
    int16_t tunnel_id = -1;   // The tunnel it entered or left by.
    int16_t dscp_in = -1;     // Inner path: the inner DSCP received. Outer path: the outer DSCP.
    int16_t dscp_out = -1;    // DSCP of the packet sent (inner path: the inner/outer DSCP).
    bool outer_path = false;  // Handled as tunnel traffic from an outer port (not a local reply).
    bool dscp_rewritten = false;
    bool outer_remarked = false;  // The outer DSCP was not what the far end sets.
    bool ce_marked = false;       // RFC 6040 turned an ECT inner packet CE.
    bool outer_mapped = false;    // Encap: the tunnel's outer_dscp map had an entry for it.
    // The QoS stage's notes, each 0 for none (so that, with the other zeros, they start in few
    // stores per packet) and otherwise the value plus one: read them through colour() & co.
    uint8_t colour1 = 0;      // Encap: the class policer's Colour.
    uint8_t adaptive1 = 0;    // Encap: the class's adaptive rule that set the DSCP.
    uint8_t pcp_in1 = 0;      // Encap: the tagged frame's PCP.
    uint8_t pcp_out1 = 0;     // Decap: the PCP of the tag the frame left with.
    uint8_t policer = 0;      // Encap, with a colour: the class's policer.
    bool pcp_mapped = false;  // Encap: the DSCP came from the port's pcp_to_dscp.
    bool pcp_set = false;     // Decap: the PCP came from the port's dscp_to_pcp.
    // Any of a colour, an adaptive rule, pcp_mapped, pcp_set: the counters look further only then.
    bool qos_noted = false;
    uint32_t ip_len = 0;  // Encap, with a colour: the IP length (what the policer metered).
    // A RoCEv2 packet (UDP 4791 with a BTH) carried through a tunnel: its inner IP header and BTH
    // in the frame as sent (neither moves during encapsulation, VLAN removal or decapsulation),
    // so that the worker can count CNPs and conversations without parsing the packet again.
    const uint8_t* roce_l3 = nullptr;
    const uint8_t* roce_bth = nullptr;

    int colour() const { return colour1 - 1; }  // -1: none.
    int adaptive_rule() const { return adaptive1 - 1; }
    int pcp_in() const { return pcp_in1 - 1; }
    int pcp_out() const { return pcp_out1 - 1; }
};

// Both, as one value: what tests, the fuzz target and the benchmark look at.
struct Outcome : Verdict, PacketNotes {};

// Records where a parsed packet's IP header and BTH are, when it is RoCEv2.
inline void note_roce(PacketNotes& n, const ParsedPacket& pp, const uint8_t* frame) {
    if (pp.has_bth) {
        n.roce_l3 = frame + pp.l3_off;
        n.roce_bth = frame + pp.l4_off + wire::kUdpLen;
    }
}

// The packet's side of ClassMatch's masked compare.
inline uint64_t class_key(const ParsedPacket& pp) {
    uint64_t k = uint64_t{pp.proto} << ClassMatch::kProtoShift;
    if (pp.proto == wire::kProtoUdp && pp.has_ports) k |= ClassMatch::kIsUdp | pp.dport;
    if (pp.has_bth) k |= ClassMatch::kHasBth | uint64_t{pp.bth_opcode} << ClassMatch::kOpcodeShift;
    if (pp.vlan_tags != 0) k |= ClassMatch::kHasTag | uint64_t{pp.pcp()} << ClassMatch::kPcpShift;
    return k;
}

// First-match classification; returns the class index or -1.
int classify(const Snapshot& s, const ParsedPacket& pp);

// ECMP entropy: a hash of the inner 5-tuple mapped into 49152..65535 (RFC 7348 section 5).
uint32_t flow_hash(const ParsedPacket& pp);
inline uint16_t entropy_port(uint32_t hash) {
    return static_cast<uint16_t>(0xc000u | (hash & 0x3fffu));
}

// A cache (DecapCache, EncapCache, DecapFlowCache) bound to snapshot `s` (address and generation);
// true when it was bound to another, so that the caller empties it.
template <typename Cache>
bool rebind(Cache& c, const Snapshot& s) {
    if (likely(c.snap == &s && c.generation == s.generation)) return false;
    c.snap = &s;
    c.generation = s.generation;
    return true;
}

// The last decapsulation-table hit, kept by the caller (a worker, for all its bursts: packets
// mostly come from one tunnel) so that they skip the hash lookup. Bound to one snapshot (address
// and generation): bind() empties it for another. An empty one's all-zero key (family 0) matches
// no packet's.
struct DecapCache {
    DecapKey key{};
    int16_t tunnel_id = -1;
    const Snapshot* snap = nullptr;
    uint64_t generation = 0;

    void bind(const Snapshot& s) {
        if (likely(!rebind(*this, s))) return;
        key = DecapKey{};
        tunnel_id = -1;
    }
};

// What a flow cache's hit found (encap_fast::encap_hit(), decap_fast::decap_hit()): the entry,
// and of the packet its (inner) IPv4 total length and, for RoCE, its BTH's bytes 4..7 as they lie
// (the destination QP: the conversation table's key).
template <typename Flow>
struct CacheHit {
    Flow* flow = nullptr;  // None: not a hit, and nothing written.
    uint32_t ip_len = 0;
    uint32_t qp = 0;
};

// The way of two-way set `set` that a flow cache fills for a key: the way that holds it, else
// the first, its entry (if any) moved to the second first. The newest flow is in the first way,
// which the hits compare first (a set's only flow, the usual case in a lightly used cache, costs
// one key compare); a new flow pushes the second way's out. The caller ends every held run
// before (an entry moves). `has(e)`: `e` holds the key; `used(e)`: `e` holds any.
template <typename Flow, typename Has, typename Used>
Flow& fill_way(Flow* set, Has has, Used used) {
    if (has(set[0])) return set[0];
    if (has(set[1])) return set[1];
    if (used(set[0])) set[1] = set[0];
    return set[0];
}

// Inner -> outer (dataplane/encap.h) and outer -> inner (dataplane/decap.h), each a shortcut for
// the common frame in front of a general path; both fill `notes` afresh.
// `qos`: the QoS stage's time and the worker's flow rates (qos.h); none: the TSC now, and
// `adaptive` rules see no rates.
// `ecache`: the worker's exact-match cache of inner IP flows (encap.h), or none.
Verdict process_inner(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& notes,
                      const QosClock* qos = nullptr, EncapCache* ecache = nullptr);
// `dflows`: the worker's exact-match cache of tunnelled IPv4 flows (decap.h), or none.
Verdict process_outer(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& notes,
                      DecapCache* cache = nullptr, DecapFlowCache* dflows = nullptr);

inline Outcome process_packet(const Snapshot& s, uint16_t rx_port, Frame& f,
                              DecapCache* cache = nullptr, const QosClock* qos = nullptr,
                              EncapCache* ecache = nullptr, DecapFlowCache* dflows = nullptr) {
    Outcome o;
    static_cast<Verdict&>(o) = s.ports[rx_port].role == PortRole::inner
                                   ? process_inner(s, rx_port, f, o, qos, ecache)
                                   : process_outer(s, rx_port, f, o, cache, dflows);
    return o;
}

}  // namespace dscpgw
