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

}  // namespace dscpgw
