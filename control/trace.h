// Reading packet traces: a decoder of the headers a trace keeps (Ethernet, VLAN, IPv4/IPv6, UDP,
// TCP, ICMP, BTH, VXLAN and Geneve with the frame inside), every read bounds-checked against what
// was captured, and the renderings of a live trace's records (`dscpgw ctl trace`, text and JSON).
// `dscpgw replay --trace` takes its ECN fields from the same decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/trace.h"

namespace dscpgw {

struct FrameInfo {
    std::string
        headers;  // "02:..:05 > 02:..:01 IPv4 10.10.0.5 > 10.20.0.9 dscp 0 ecn ect0 UDP ..."
    int dscp = -1, ecn = -1;  // The outermost IP header's; -1: no IP header.
};

// `cap` bytes of a frame whose length on the wire is `len`.
FrameInfo decode_frame(const uint8_t* p, size_t cap, size_t len);

// "not-ect", "ect1", "ect0", "ce"; "-" for -1.
const char* ecn_name(int ecn);

// The verdict words a trace line ends with, as `replay --trace` prints them: "encap port=wan",
// "decap port=lan", "drop=REASON", "reply=NAME port=P", and the flags after them.
std::string trace_verdict(const TraceRecord& r, const std::vector<std::string>& ports);

// The two lines under a trace line: "    in  74 B: ..." and, when something was sent, "    out
// ...".
std::string trace_headers(const FrameInfo& in, uint32_t in_len, const FrameInfo* out,
                          uint32_t out_len);

// One record: a line of fields, then the headers in and out (text); or one JSON object.
std::string trace_record_text(size_t seq, const TraceRecord& r,
                              const std::vector<std::string>& ports);
std::string trace_record_json(size_t seq, const TraceRecord& r,
                              const std::vector<std::string>& ports);

}  // namespace dscpgw
