// Outer -> inner: validate, decapsulate, RFC 6040, DSCP on decap, bleaching detection.
#pragma once

#include "dataplane/pipeline.h"

namespace dscpgw {

struct Neighbor;

// What the shortcut decided for one flow of tunnelled IPv4 or IPv6 traffic over an IPv4 or IPv6
// underlay, so that its next packets skip both parses, the tunnel lookup, RFC 6040 and the DSCP
// policy (the decap side of the EncapCache, encap.h). The key is everything of the frame those
// steps read: the outer addresses (over IPv6 the source folded, below), TOS or traffic class and
// UDP destination port, the tunnel header's eight bytes, the inner addresses, TOS, UDP ports and
// BTH opcode, and the receiving port; not the outer UDP source port (the far end's entropy) nor an
// IPv6 flow label, which nothing decides by. Checked again on every hit: the lengths (outer against
// the frame and the port's MTU, UDP against the outer, inner against the UDP payload and the
// tunnel's inner MTU), the outer IPv4 header checksum or IPv6 UDP checksum (a zero one is its own
// key, filled only where the tunnel takes it), over IPv6 the whole source against the entry's
// tunnel's remote and the destination against the port's address, the inner destination MAC (no
// IEEE link-local), and for a routed LAN the host's neighbour slot (still its host's, resolved: the
// MAC is read from it on every hit, as the slow way does). A tagged LAN's frames leave with the
// entry's tag (the LAN's VLAN, the PCP its dscp_to_pcp gives the entry's DSCP).
struct alignas(128) DecapFlow {
    // Key: the outer IPv4 source and destination (IPv6: the source's two halves XORed), the inner
    // ones, as they lie in the frame (inner IPv6: a digest of them, which `inner_addrs6` holds
    // whole).
    uint64_t outer_addrs = 0, inner_addrs = 0;
    // Key: the inner UDP ports as they lie | inner TOS << 32 | BTH opcode << 40 (0 without a BTH)
    // | outer TOS or traffic class << 48 | receiving port << 56.
    uint64_t inner_rest = 0;
    uint64_t tunnel_hdr = 0;  // Key: the VXLAN or Geneve header as it lies.
    // Key: the outer UDP destination port as it lies | an IPv6 underlay << 16 | its UDP checksum
    // zero << 17 | inner IPv6 << 18 | 1 << 63 (decap_fast::kKeyV6 ...); 0: free.
    uint64_t outer_rest = 0;
    uint32_t port_mtu = 0;   // The receiving port's MTU: the outer IP length's limit.
    uint32_t inner_mtu = 0;  // The tunnel's: the inner IP length's limit.
    uint8_t tos = 0;         // The inner TOS sent.
    bool roce = false;       // The inner packet carries a BTH (UDP 4791).
    // The inner IPv4 header checksum's change for the key's inner TOS -> tos (inner IPv6: 1), 0
    // when it is kept.
    uint16_t tos_delta = 0;
    uint8_t out_port = 0;  // The tunnel's inner port.
    uint8_t lan = 0;       // kLanTransparent, kLanRouted (`host`... below) or kLanTagged (`tci`).
    // The burst loop's run of this flow's hits, as EncapFlow's (burst.h) but for the bytes as
    // received, which no decap counter needs; zero between bursts. In the key's line, as
    // everything a hit reads or writes.
    uint16_t run_n = 0;
    uint32_t run_qp = 0;
    uint32_t run_ip_bytes = 0;
    PacketNotes notes;  // The packet's notes but for its RoCE pointers.
    // A routed LAN: the inner destination's neighbour slot (DecapFlowCache::hosts) and its
    // Neighbor::reuse when filled; the LAN port's MAC, the frame's new source.
    uint32_t host = 0, host_reuse = 0;
    std::array<uint8_t, 6> lan_mac{};
    uint16_t tci = 0;  // A tagged LAN: the 802.1Q tag's PCP and VLAN.
    // Inner IPv6: the source and destination as they lie (the key's `inner_addrs` is their
    // digest), in lines of their own that only an inner IPv6 hit reads. They make the entry 256
    // bytes, a power of two, so that a set's address is a shift: at 192 the IPv4 hit ran five
    // instructions more.
    alignas(64) std::array<uint8_t, 32> inner_addrs6{};

    static constexpr uint64_t kKeyInner6 = uint64_t{1} << 18;  // In outer_rest.

    static constexpr uint8_t kLanTransparent = 0, kLanRouted = 1, kLanTagged = 2;
    // The frame's layer-2 header as it leaves: Ethernet, and a tagged LAN's 802.1Q tag.
    uint32_t l2_len() const {
        return lan == kLanTagged ? wire::kEthLen + wire::kVlanLen : wire::kEthLen;
    }

    uint8_t bth_opcode() const { return static_cast<uint8_t>(inner_rest >> 40); }  // The key's.
    bool inner_v6() const { return (outer_rest & kKeyInner6) != 0; }               // The key's.
    // The conversation's addresses: IPv4's (FlowTable::add4()), or IPv6's (FlowTable::add6()),
    // none for IPv4.
    uint64_t roce_addrs() const { return inner_addrs; }
    const uint8_t* roce_addrs6() const { return inner_v6() ? inner_addrs6.data() : nullptr; }
};
static_assert(sizeof(DecapFlow) == 256, "two cache lines an entry, and inner IPv6's addresses");
static_assert(kMaxPorts <= 256, "DecapFlow::out_port");

// A worker's DecapFlows, as EncapCache: two-way sets chosen by a hash of the key, bound to one
// snapshot (generation and address). 64 KB, of which a worker touches what its flows use.
struct DecapFlowCache {
    static constexpr unsigned kSetBits = 7, kWays = 2;
    const Snapshot* snap = nullptr;
    uint64_t generation = 0;
    bool useful = false;  // Some tunnel's flows can be kept (decap_fast::decap_cache_bind()).
    bool v6 = false;      // Some tunnel's underlay is IPv6.
    bool in6 = false;     // An inner IPv6 flow was filled since the cache was last emptied.
    const Neighbor* hosts = nullptr;  // The snapshot's neighbour slots (DecapFlow::host).
    DecapFlow flow[kWays << kSetBits];
};

using DecapHit = CacheHit<DecapFlow>;  // What decap_fast::decap_hit() found.

// The general path: every frame an outer port can receive (ARP/ND and echo for the VTEP, every
// drop with its reason).
Verdict process_outer_general(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& notes,
                              DecapCache* cache = nullptr);
// The shortcut: process_outer_general() for plain IPv4/IPv6 UDP outer and inner packets to this
// VTEP from a known tunnel that are delivered. Like encap_plain(), it writes nothing unless it
// takes the packet, declines every drop and unusual case, and shares the general path's tail.
// `flows`: the worker's DecapFlowCache (above), or none: with one, a hit is done from its entry
// (decap_fast::decap_hit(), decap_hit.h) and a success of the slow way fills an entry.
bool decap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o, DecapCache* cache,
                 DecapFlowCache* flows = nullptr);
// decap_plain() but for the hit, for the burst loop (which tries decap_hit() itself); the cache
// bound to `s` (decap_fast::decap_cache_bind()).
bool decap_slow(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o, DecapCache* cache,
                DecapFlowCache* flows);
// The verdict and notes decap_plain() gives a hit of `e`, `f` the frame as decap_hit() left it.
void decap_hit_outcome(const DecapFlow& e, const Frame& f, Outcome& o);

}  // namespace dscpgw
