#include "control/trace.h"

#include <cinttypes>
#include <cstdio>

#include "control/render.h"
#include "dataplane/counters.h"
#include "dataplane/drop_reason.h"

namespace dscpgw {

namespace {

uint16_t be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t be24(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) << 16 | static_cast<uint32_t>(p[1]) << 8 | p[2];
}

std::string mac(const uint8_t* p) {
    char b[18];
    std::snprintf(b, sizeof b, "%02x:%02x:%02x:%02x:%02x:%02x", p[0], p[1], p[2], p[3], p[4], p[5]);
    return b;
}

std::string ip4(const uint8_t* p) {
    char b[16];
    std::snprintf(b, sizeof b, "%u.%u.%u.%u", p[0], p[1], p[2], p[3]);
    return b;
}

std::string ip6(const uint8_t* p) {
    char b[40];
    std::snprintf(b, sizeof b, "%x:%x:%x:%x:%x:%x:%x:%x", be16(p), be16(p + 2), be16(p + 4),
                  be16(p + 6), be16(p + 8), be16(p + 10), be16(p + 12), be16(p + 14));
    return b;
}

constexpr uint16_t kVxlanPort = 4789, kGenevePort = 6081, kRocePort = 4791;

// Appends what it can read of an Ethernet frame at `off`; `depth` 1 inside a tunnel.
void decode_eth(const uint8_t* p, size_t cap, size_t off, int depth, FrameInfo& fi);

void decode_l4(const uint8_t* p, size_t cap, size_t off, uint8_t proto, int depth, FrameInfo& fi) {
    std::string& o = fi.headers;
    char b[96];
    if (proto == 17) {
        if (cap < off + 8) {
            o += " UDP (truncated)";
            return;
        }
        const uint16_t sport = be16(p + off), dport = be16(p + off + 2);
        std::snprintf(b, sizeof b, " UDP %u > %u", sport, dport);
        o += b;
        off += 8;
        if (dport == kRocePort) {
            if (cap < off + 12) {
                o += " BTH (truncated)";
                return;
            }
            std::snprintf(b, sizeof b, " BTH opcode 0x%02x%s qp 0x%x psn %u", p[off],
                          p[off] == wire::kBthOpcodeCnp ? " (CNP)" : "", be24(p + off + 5),
                          be24(p + off + 9));
            o += b;
        } else if ((dport == kVxlanPort || dport == kGenevePort) && depth == 0) {
            if (cap < off + 8) {
                o += dport == kVxlanPort ? " VXLAN (truncated)" : " Geneve (truncated)";
                return;
            }
            if (dport == kVxlanPort) {
                std::snprintf(b, sizeof b, " VXLAN vni %u |", be24(p + off + 4));
                o += b;
                decode_eth(p, cap, off + 8, depth + 1, fi);
            } else {
                const size_t opts = (p[off] & 0x3fu) * 4u;
                const uint16_t inner = be16(p + off + 2);
                std::snprintf(b, sizeof b, " Geneve vni %u%s |", be24(p + off + 4),
                              opts != 0 ? " (options)" : "");
                o += b;
                if (inner == 0x6558) decode_eth(p, cap, off + 8 + opts, depth + 1, fi);
            }
        }
    } else if (proto == 6) {
        if (cap < off + 4) {
            o += " TCP (truncated)";
            return;
        }
        std::snprintf(b, sizeof b, " TCP %u > %u", be16(p + off), be16(p + off + 2));
        o += b;
    } else if (proto == 1 || proto == 58) {
        if (cap < off + 2) {
            o += " ICMP (truncated)";
            return;
        }
        std::snprintf(b, sizeof b, " %s type %u code %u", proto == 1 ? "ICMP" : "ICMPv6", p[off],
                      p[off + 1]);
        o += b;
    } else {
        std::snprintf(b, sizeof b, " proto %u", proto);
        o += b;
    }
}

void decode_eth(const uint8_t* p, size_t cap, size_t off, int depth, FrameInfo& fi) {
    std::string& o = fi.headers;
    if (cap < off + 14) {
        o += " (truncated)";
        return;
    }
    if (depth != 0) o += " ";
    o += mac(p + off + 6) + " > " + mac(p + off);
    uint16_t et = be16(p + off + 12);
    off += 14;
    char b[128];
    for (int tags = 0; (et == 0x8100 || et == 0x88a8) && tags < 2; ++tags) {
        if (cap < off + 4) {
            o += " vlan (truncated)";
            return;
        }
        std::snprintf(b, sizeof b, " vlan %u pcp %u", be16(p + off) & 0xfffu, p[off] >> 5);
        o += b;
        et = be16(p + off + 2);
        off += 4;
    }
    int tos = -1;
    uint8_t proto = 0;
    if (et == 0x0800) {
        if (cap < off + 20 || (p[off] & 0xf) < 5) {
            o += " IPv4 (truncated)";
            return;
        }
        tos = p[off + 1];
        proto = p[off + 9];
        o += " IPv4 " + ip4(p + off + 12) + " > " + ip4(p + off + 16);
        off += (p[off] & 0xfu) * 4u;
    } else if (et == 0x86dd) {
        if (cap < off + 40) {
            o += " IPv6 (truncated)";
            return;
        }
        tos = (p[off] & 0xf) << 4 | p[off + 1] >> 4;
        proto = p[off + 6];
        o += " IPv6 " + ip6(p + off + 8) + " > " + ip6(p + off + 24);
        off += 40;
    } else if (et == 0x0806) {
        o += " ARP";
        return;
    } else {
        std::snprintf(b, sizeof b, " ethertype 0x%04x", et);
        o += b;
        return;
    }
    std::snprintf(b, sizeof b, " dscp %d ecn %s", tos >> 2, ecn_name(tos & 3));
    o += b;
    if (depth == 0) {
        fi.dscp = tos >> 2;
        fi.ecn = tos & 3;
    }
    decode_l4(p, cap, off, proto, depth, fi);
}

// A JSON string (appended piecewise: GCC 12's -Wrestrict misreads "\"" + s + "\"").
std::string jstr(const std::string& s) {
    std::string o;
    o.reserve(s.size() + 2);
    o.push_back('"');
    o.append(json_escape(s));
    o.push_back('"');
    return o;
}

std::string quoted_or_null(const char* s) { return s[0] == '\0' ? "null" : jstr(s); }

std::string port_name(const std::vector<std::string>& ports, uint16_t i) {
    return i < ports.size() ? ports[i] : "?";
}

std::string hex(const uint8_t* p, size_t n) {
    std::string o;
    char b[3];
    for (size_t i = 0; i < n; ++i) {
        std::snprintf(b, sizeof b, "%02x", p[i]);
        o += b;
    }
    return o;
}

constexpr const char* kColours[] = {"green", "yellow", "red"};
// EnqAction (dataplane/sched.h), as JSON names and as replay --trace's queue_drop= words.
constexpr const char* kQueueActions[] = {"queued",       "marked",       "drop_limit",
                                         "drop_not_ect", "drop_buffers", "bypass"};
constexpr const char* kQueueDrops[] = {"", "", "limit", "ecn_not_ect", "buffers", ""};

}  // namespace

const char* ecn_name(int ecn) {
    static constexpr const char* kNames[] = {"not-ect", "ect1", "ect0", "ce"};
    return ecn >= 0 && ecn <= 3 ? kNames[ecn] : "-";
}

FrameInfo decode_frame(const uint8_t* p, size_t cap, size_t len) {
    FrameInfo fi;
    decode_eth(p, cap, 0, 0, fi);
    if (cap < len) fi.headers += " ...";
    return fi;
}

std::string trace_verdict(const TraceRecord& r, const std::vector<std::string>& ports) {
    std::string o;
    if (r.local != LocalReply::none)
        o = "reply=" + std::string(kLocalReplyInfo[static_cast<size_t>(r.local)].name) +
            " port=" + port_name(ports, r.out_port);
    else if (r.drop == DropReason::none)
        o = std::string(r.outer_path ? "decap" : "encap") + " port=" + port_name(ports, r.out_port);
    else
        o = "drop=" + std::string(drop_reason_name(r.drop)) + (r.pmtu != 0 ? " pmtu" : "");
    if (r.outer_remarked) o += " outer_dscp_remarked";
    if (r.ce_marked) o += " ce_marked";
    if (r.colour >= 0 && r.colour < 3) o += std::string(" colour=") + kColours[r.colour];
    // The egress queue, as replay --trace shows it.
    if (r.queue[0] != '\0') {
        o += std::string(" queue=") + r.queue + " depth=" + std::to_string(r.queue_depth);
        if (r.queue_action < std::size(kQueueActions) && r.queue_action != 0)
            o += r.queue_action == 1 ? std::string(" ce")
                                     : std::string(" queue_drop=") + kQueueDrops[r.queue_action];
    }
    return o;
}

std::string trace_headers(const FrameInfo& in, uint32_t in_len, const FrameInfo* out,
                          uint32_t out_len) {
    std::string o = "    in  " + std::to_string(in_len) + " B: " + in.headers + "\n";
    if (out != nullptr) o += "    out " + std::to_string(out_len) + " B: " + out->headers + "\n";
    return o;
}

std::string trace_record_text(size_t seq, const TraceRecord& r,
                              const std::vector<std::string>& ports) {
    const FrameInfo in = decode_frame(r.in, r.in_cap, r.in_len);
    const FrameInfo out = decode_frame(r.out, r.out_cap, r.out_len);
    char dscp[32] = "-";
    if (r.dscp_in >= 0 && r.dscp_out >= 0)
        std::snprintf(dscp, sizeof dscp, "%d->%d", r.dscp_in, r.dscp_out);
    else if (r.dscp_in >= 0)
        std::snprintf(dscp, sizeof dscp, "%d", r.dscp_in);
    const std::string cls = r.cls[0] != '\0' ? r.cls : r.outer_path ? "(decap)" : "(none)";
    char head[160];
    std::snprintf(head, sizeof head, "#%zu worker=%u port=%s gen=%" PRIu64 " ", seq, r.worker,
                  port_name(ports, r.rx_port).c_str(), r.generation);
    std::string o = head;
    o += "class=" + cls + " dscp=" + dscp + " ecn=" + ecn_name(in.ecn) +
         (r.out_cap != 0 ? std::string("->") + ecn_name(out.ecn) : std::string()) +
         " tunnel=" + (r.tunnel[0] != '\0' ? r.tunnel : "-") + " " + trace_verdict(r, ports) + "\n";
    return o + trace_headers(in, r.in_len, r.out_cap != 0 ? &out : nullptr, r.out_len);
}

std::string trace_record_json(size_t seq, const TraceRecord& r,
                              const std::vector<std::string>& ports) {
    const FrameInfo in = decode_frame(r.in, r.in_cap, r.in_len);
    const FrameInfo out = decode_frame(r.out, r.out_cap, r.out_len);
    const bool sent = r.out_cap != 0;
    std::string verdict = r.local != LocalReply::none  ? "reply"
                          : r.drop != DropReason::none ? "drop"
                          : r.outer_path               ? "decap"
                                                       : "encap";
    char b[256];
    std::snprintf(b, sizeof b,
                  "{\"seq\":%zu,\"worker\":%u,\"rx_port\":\"%s\",\"generation\":%" PRIu64
                  ",\"class\":%s,\"tunnel\":%s,",
                  seq, r.worker, json_escape(port_name(ports, r.rx_port)).c_str(), r.generation,
                  quoted_or_null(r.cls).c_str(), quoted_or_null(r.tunnel).c_str());
    std::string o = b;
    const auto num = [](int v) { return v >= 0 ? std::to_string(v) : std::string("null"); };
    const auto ecn = [](int v) { return v >= 0 ? jstr(ecn_name(v)) : std::string("null"); };
    o += "\"dscp_in\":" + num(r.dscp_in) + ",\"dscp_out\":" + num(r.dscp_out) +
         ",\"ecn_in\":" + ecn(in.ecn) + ",\"ecn_out\":" + ecn(sent ? out.ecn : -1) +
         ",\"verdict\":\"" + verdict + "\"";
    o += ",\"out_port\":" + (sent ? jstr(port_name(ports, r.out_port)) : std::string("null"));
    o += ",\"drop_reason\":" + (r.drop != DropReason::none
                                    ? jstr(std::string(drop_reason_name(r.drop)))
                                    : std::string("null"));
    o +=
        ",\"reply\":" + (r.local != LocalReply::none
                             ? jstr(std::string(kLocalReplyInfo[static_cast<size_t>(r.local)].name))
                             : std::string("null"));
    o += ",\"colour\":" +
         (r.colour >= 0 && r.colour < 3 ? jstr(kColours[r.colour]) : std::string("null"));
    o += ",\"queue\":" +
         (r.queue[0] != '\0'
              ? "{\"name\":" + jstr(r.queue) + ",\"depth_bytes\":" + std::to_string(r.queue_depth) +
                    ",\"action\":" +
                    jstr(r.queue_action < std::size(kQueueActions) ? kQueueActions[r.queue_action]
                                                                   : "?") +
                    "}"
              : std::string("null"));
    o += std::string(",\"outer_dscp_remarked\":") + (r.outer_remarked ? "true" : "false") +
         ",\"ce_marked\":" + (r.ce_marked ? "true" : "false");
    o += ",\"in\":{\"length\":" + std::to_string(r.in_len) + ",\"headers\":\"" +
         json_escape(in.headers) + "\",\"hex\":\"" + hex(r.in, r.in_cap) + "\"}";
    o += ",\"out\":" +
         (sent ? "{\"length\":" + std::to_string(r.out_len) + ",\"headers\":\"" +
                     json_escape(out.headers) + "\",\"hex\":\"" + hex(r.out, r.out_cap) + "\"}"
               : std::string("null"));
    return o + "}";
}

}  // namespace dscpgw
