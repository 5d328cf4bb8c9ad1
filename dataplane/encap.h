// Inner -> outer: classify, mark, route, encapsulate.
#pragma once

#include "dataplane/pipeline.h"

namespace dscpgw {

// What the shortcut decided for one inner IPv4 or IPv6 flow, so that its next packets skip the
// classification, the route lookup, the tunnel's checks and the outer header's assembly (OVS's
// exact-match cache, for one direction). The key is everything of the packet those steps read:
// the addresses, the UDP ports, the TOS (traffic class), the BTH opcode and the receiving port.
// What can change without a new snapshot is checked again on every hit: the packet's length
// against the port's plain MTU and the tunnel's live path MTU, the headroom, and the next hop's
// MAC.
struct alignas(64) EncapFlow {
    // Key: the IPv4 source and destination as they lie in the packet; IPv6: a digest of its
    // source and destination (encap_raw_key6()), which `addrs6` holds whole.
    uint64_t addrs = 0;
    // Key: the UDP ports as in the packet | TOS << 32 | BTH opcode << 40 (0 without a BTH) |
    // receiving port << 48 | inner IPv6 << 62 | 1 << 63; 0: a free entry.
    uint64_t rest = 0;
    const TunnelConf* tunnel = nullptr;
    const std::atomic<uint32_t>* path_mtu = nullptr;  // The tunnel's.
    const std::atomic<uint64_t>* neighbor = nullptr;  // The next hop's MAC word, or none.
    uint64_t nh_mac = 0;      // What check_tunnel() found (0: the template's MAC).
    PacketNotes notes;        // The packet's notes but for its RoCE pointers.
    uint16_t max_ip_len = 0;  // The receiving port's plain_mtu (at most 65,535: a total length).
    // IPv4 outer: the outer IP header's sum without its total length (TunnelConf::hdr_csum_base
    // and the TOS), folded to 16 bits, so that adding the length takes one fold.
    uint16_t csum_base = 0;
    uint8_t tos = 0;       // The inner TOS after marking.
    uint8_t hdr_len = 0;   // Of the outer headers: 50 (IPv4) or 70 (IPv6).
    bool roce = false;     // The flow carries a BTH (UDP 4791).
    bool offload = false;  // The device sums the outer UDP datagram (IPv6, tx_udp_offload).
    // IPv4: the inner header checksum's change for the key's TOS -> tos
    // (wire::ipv4_tos_csum_delta()); IPv6: 1. Both 0 when marking leaves the TOS as it came.
    uint16_t tos_delta = 0;
    uint16_t out_port = 0;  // The tunnel's outer port.
    // The burst loop's run of this flow's hits (burst.h: EncapRuns), not yet counted: their
    // destination QP (EncapHit::qp), number, and bytes as received and as IPv4 total lengths
    // (32 bits hold 65,535 frames of 65,535 bytes). All zero between bursts; where the packet
    // path writes, so they sit in the lines a hit reads anyway.
    uint32_t run_qp = 0;
    // The outer headers, TOS, entropy port, flow label and next-hop MAC in place; the lengths and
    // checksums are the packet's (kept zero here).
    alignas(8) std::array<uint8_t, kMaxOuterHdr> hdr{};
    uint16_t run_n = 0;
    // The run's IPv4 total lengths in the low 32 bits, its bytes as received in the high: one add
    // a hit (two 32-bit adds were vectorised into five instructions). The low half cannot carry
    // into the high (above).
    uint64_t run_bytes = 0;

    // IPv6: the source and destination as they lie in the packet (the key's `addrs` is their
    // digest), in a line of their own that only an IPv6 hit reads.
    alignas(64) std::array<uint8_t, 32> addrs6{};

    uint32_t run_ip_bytes() const { return static_cast<uint32_t>(run_bytes); }
    uint32_t run_in_bytes() const { return static_cast<uint32_t>(run_bytes >> 32); }

    uint8_t bth_opcode() const { return static_cast<uint8_t>(rest >> 40); }  // The key's.
    bool inner_v6() const { return (rest >> 62 & 1) != 0; }                  // The key's.
    // The conversation's addresses: IPv4's (FlowTable::add4()), or IPv6's (FlowTable::add6()),
    // none for IPv4.
    uint64_t roce_addrs() const { return addrs; }
    const uint8_t* roce_addrs6() const { return inner_v6() ? addrs6.data() : nullptr; }
};

// A worker's EncapFlows: two-way sets chosen by a hash of the key (a new flow takes the first
// way, its entry moving to the second and pushing the older out), bound to one snapshot
// (generation and address): encap_plain() empties it when handed another. 64 KB, of which a
// worker touches what its flows use.
struct EncapCache {
    static constexpr unsigned kSetBits = 7, kWays = 2;
    const Snapshot* snap = nullptr;
    uint64_t generation = 0;
    bool v6 = false;  // An IPv6 flow was filled since the cache was last emptied.
    EncapFlow flow[kWays << kSetBits];
};
static_assert(sizeof(EncapFlow) == 256, "three cache lines an entry, and IPv6's addresses");

using EncapHit = CacheHit<EncapFlow>;  // What encap_fast::encap_hit() found.

// The general path: every frame an inner port can receive (tags, options, extension headers,
// traffic for the gateway itself, drops with their reasons).
Verdict process_inner_general(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& notes,
                              const QosClock& qos);
// The shortcut: process_inner_general() for the frame the gateway exists for (untagged IPv4
// without options or IPv6 without extension headers, UDP, a route, a tunnel that takes it).
// Everything is checked before anything is written, so a frame it declines (false) reaches the
// general path untouched; it declines every drop, local reply and unusual case. Both end in the
// same tail (encap.cpp), so they differ only in how they parse and when they decline.
// `o` starts default (both parts): one pointer, as the hot path's registers are few.
// `cache`: the worker's EncapCache (below), or none.
bool encap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o,
                 EncapCache* cache = nullptr);

// The two halves of encap_plain() with a cache, for the burst loop, which counts a hit from its
// entry (burst.h) and so needs neither its notes nor its verdict: encap_fast::encap_hit()
// (encap_hit.h, inline), and encap_slow() for everything else, as encap_plain() (it may fill an
// entry, and so move another). The cache bound to `s` (encap_fast::encap_cache_bind()).
bool encap_slow(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o, EncapCache* cache);
// The verdict and notes encap_plain() gives a hit of `e`, `f` the frame as encap_hit() left it.
void encap_hit_outcome(const EncapFlow& e, const Frame& f, Outcome& o);

}  // namespace dscpgw
