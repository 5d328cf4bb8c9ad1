// Outer -> inner: validate, decapsulate, RFC 6040, DSCP on decap, bleaching detection.
#pragma once

#include "dataplane/pipeline.h"

namespace dscpgw {

// The general path: every frame an outer port can receive (ARP/ND and echo for the VTEP, every
// drop with its reason).
Verdict process_outer_general(const Snapshot& s, uint16_t rx_port, Frame& f, PacketNotes& notes,
                              DecapCache* cache = nullptr);
// The shortcut: process_outer_general() for plain IPv4/IPv6 UDP outer and inner packets to this
// VTEP from a known tunnel that are delivered. Like encap_plain(), it writes nothing unless it
// takes the packet, declines every drop and unusual case, and shares the general path's tail.
bool decap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o, DecapCache* cache);

// decap_plain() in three stages, for a burst (dataplane/burst.h), as encap_plain() is: parse and
// check the outer headers of each frame (nothing written), look the tunnels of the whole burst up
// at once, then parse the inner packet and decapsulate. decap_plain() is the three on one frame.
inline constexpr uint16_t kDecapBulkMax = 64;  // RTE_HASH_LOOKUP_BULK_MAX.
inline constexpr uint16_t kNoTunnel = 0xffff;
struct DecapPre {
    ParsedPacket outer;
    DecapKey key;
    uint16_t udp_len = 0, th_len = 0;
    uint16_t tid = kNoTunnel;  // After decap_lookup().
    bool ok = false;           // Taken so far.
};
bool decap_parse(const Snapshot& s, uint16_t rx_port, const Frame& f, DecapPre& pre);
// Up to kDecapBulkMax entries, through and into `cache` when given; declines (ok false) the keys
// no tunnel has.
void decap_lookup(const Snapshot& s, DecapPre* pre, uint16_t n, DecapCache* cache);
bool decap_finish(const Snapshot& s, Frame& f, const DecapPre& pre, Outcome& o);

}  // namespace dscpgw
