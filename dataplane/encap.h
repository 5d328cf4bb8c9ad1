// Inner -> outer: classify, mark, route, encapsulate.
#pragma once

#include "dataplane/pipeline.h"

namespace dscpgw {

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
bool encap_plain(const Snapshot& s, uint16_t rx_port, Frame& f, Outcome& o);

}  // namespace dscpgw
