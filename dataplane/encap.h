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

// encap_plain() in three stages, for a burst (dataplane/burst.h): encap_parse() parses and
// classifies each frame and writes nothing; encap_route() looks the routes of the whole burst up
// at once; encap_finish() checks the tunnel and writes the outer headers. encap_plain() is the
// three on one frame, so the staged burst and the per-frame shortcut are the same code. A frame a
// stage declines goes to process_inner_general() untouched.
inline constexpr uint16_t kEncapBulkMax = 64;
struct EncapPre {
    const uint8_t* l3 = nullptr;  // The IP header, in the frame.
    uint32_t hash = 0;            // flow_hash().
    uint32_t ip_len = 0;
    uint32_t tunnel = 0;  // After encap_route().
    int16_t cls = -1;
    uint8_t tos = 0;      // As received.
    uint8_t family = 0;   // 4 or 6: taken so far; 0: declined.
    bool bth = false;     // RoCEv2.
};
bool encap_parse(const Snapshot& s, uint16_t rx_port, const Frame& f, EncapPre& pre);
// Up to kEncapBulkMax entries; declines (family 0) those with no route.
void encap_route(const Snapshot& s, EncapPre* pre, uint16_t n);
bool encap_finish(const Snapshot& s, uint16_t rx_port, Frame& f, const EncapPre& pre,
                  Outcome& o);

}  // namespace dscpgw
