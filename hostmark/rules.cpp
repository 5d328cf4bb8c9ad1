#include "hostmark/rules.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "config/config.h"

namespace dscpgw::hostmark {

static_assert(HM_KEY_UDP_PORT == ClassMatch::kUdpPort && HM_KEY_IS_UDP == ClassMatch::kIsUdp &&
                  HM_KEY_OPCODE_SHIFT == ClassMatch::kOpcodeShift &&
                  HM_KEY_HAS_BTH == ClassMatch::kHasBth &&
                  HM_KEY_PROTO_SHIFT == ClassMatch::kProtoShift,
              "the BPF program's class key must be the gateway's");
static_assert(HM_MAX_CLASSES >= kMaxClasses);
static_assert(sizeof(hm_rule) == 64);

std::string build_ruleset(const std::vector<ClassRule>& classes, hm_ruleset& rs) {
    std::memset(&rs, 0, sizeof rs);
    if (classes.size() > HM_MAX_CLASSES)
        return "at most " + std::to_string(HM_MAX_CLASSES) + " classes are supported";
    for (size_t i = 0; i < classes.size(); ++i) {
        const ClassRule& c = classes[i];
        if (!c.src.empty() || !c.dst.empty())
            return "class \"" + c.name +
                   "\": match.src/match.dst are not supported by dscpgw-hostmark (it marks a "
                   "host's own traffic; give it a config without address matches)";
        const ClassMatch m = compile_class(c);
        hm_rule& r = rs.rules[i];
        r.dscp_mask = m.dscp_mask;
        r.key = m.key;
        r.mask = m.mask;
        r.set_dscp = m.set_dscp;
        r.pcp = c.pcp;
        // Longer names are cut for display; the gateway allows them.
        std::snprintf(r.name, sizeof r.name, "%s", c.name.c_str());
    }
    rs.n = static_cast<uint32_t>(classes.size());
    return {};
}

std::string describe_rule(const hm_rule& r) {
    std::string s;
    const auto add = [&s](const std::string& part) {
        if (!s.empty()) s += ' ';
        s += part;
    };
    if ((r.mask & (uint64_t{0xff} << HM_KEY_PROTO_SHIFT)) != 0)
        add("proto=" + std::to_string((r.key >> HM_KEY_PROTO_SHIFT) & 0xff));
    if ((r.mask & HM_KEY_IS_UDP) != 0) add("udp/" + std::to_string(r.key & HM_KEY_UDP_PORT));
    if ((r.mask & HM_KEY_HAS_BTH) != 0) {
        char b[16];
        std::snprintf(b, sizeof b, "bth=0x%02x",
                      static_cast<unsigned>((r.key >> HM_KEY_OPCODE_SHIFT) & 0xff));
        add(b);
    }
    if (r.dscp_mask != ~uint64_t{0}) {
        std::string d;
        for (unsigned i = 0; i < 64; ++i)
            if ((r.dscp_mask >> i) & 1) {
                if (!d.empty()) d += ',';
                d += std::to_string(i);
            }
        add("dscp=" + d);
    }
    if (s.empty()) s = "any";
    s += " -> ";
    s += r.set_dscp >= 0 ? "dscp " + std::to_string(r.set_dscp) : std::string("dscp kept");
    if (r.pcp >= 0) s += ", pcp " + std::to_string(r.pcp);
    return s;
}

namespace {

std::string name_of(const hm_rule& r) {
    return std::string(r.name, strnlen(r.name, sizeof r.name));
}

// Label values escape backslash, double quote and newline (exposition format 0.0.4).
std::string label(const std::string& v) {
    std::string out;
    for (char ch : v) {
        if (ch == '\\' || ch == '"') {
            out += '\\';
            out += ch;
        } else if (ch == '\n') {
            out += "\\n";
        } else {
            out += ch;
        }
    }
    return out;
}

}  // namespace

std::string status_table(const Attachment& a, const hm_ruleset& rs, const Counters& c) {
    std::string out = "dscpgw-hostmark on " + a.device + ": ";
    if (!a.attached) return out + "not attached\n";
    char line[256];
    std::snprintf(line, sizeof line,
                  "attached (tc clsact egress, prog id %u, rules generation %" PRIu64 "%s)\n",
                  a.prog_id, a.generation,
                  a.created_clsact ? ", clsact qdisc added by dscpgw-hostmark" : "");
    out += line;
    std::snprintf(line, sizeof line, "  %-20s %-36s %12s %14s %10s %8s\n", "class",
                  "match -> action", "packets", "bytes", "dscp_rewr", "pcp_set");
    out += line;
    const auto row = [&](const std::string& name, const std::string& what, const hm_counter& k) {
        std::snprintf(line, sizeof line, "  %-20s %-36s %12llu %14llu %10llu %8llu\n", name.c_str(),
                      what.c_str(), k.packets, k.bytes, k.dscp_rewritten, k.pcp_set);
        out += line;
    };
    for (uint32_t i = 0; i < rs.n && i < HM_MAX_CLASSES; ++i)
        row(name_of(rs.rules[i]), describe_rule(rs.rules[i]), c[i]);
    row("(no class)", "IP, no class matched: untouched", c[HM_CTR_NO_CLASS]);
    row("(not IP)", "not IPv4/IPv6: untouched", c[HM_CTR_NOT_IP]);
    return out;
}

std::string prometheus_text(const std::vector<DeviceStatus>& devices) {
    // One HELP/TYPE pair per family, then its samples for every device (the exposition format
    // wants a family's samples together).
    std::string out;
    const auto family = [&out](const char* name, const char* type, const char* help) {
        out += std::string("# HELP ") + name + " " + help + "\n";
        out += std::string("# TYPE ") + name + " " + type + "\n";
    };
    const auto dev_label = [](const DeviceStatus& d) {
        return "device=\"" + label(d.attachment.device) + "\"";
    };
    family("dscpgw_hostmark_attached", "gauge",
           "Whether the dscpgw-hostmark tc egress classifier is attached to the device.");
    for (const DeviceStatus& d : devices)
        out += "dscpgw_hostmark_attached{" + dev_label(d) + "} " +
               (d.attachment.attached ? "1" : "0") + "\n";
    family("dscpgw_hostmark_rules_generation", "gauge",
           "Rule sets written since the program was loaded.");
    for (const DeviceStatus& d : devices)
        if (d.attachment.attached)
            out += "dscpgw_hostmark_rules_generation{" + dev_label(d) + "} " +
                   std::to_string(d.attachment.generation) + "\n";
    struct Metric {
        const char* name;
        const char* help;
        __u64 hm_counter::*field;
    };
    static constexpr Metric kMetrics[] = {
        {"dscpgw_hostmark_class_packets_total", "Egress packets per class.", &hm_counter::packets},
        {"dscpgw_hostmark_class_bytes_total", "Egress bytes per class.", &hm_counter::bytes},
        {"dscpgw_hostmark_class_dscp_rewrites_total",
         "Packets of the class whose DSCP was changed (ECN kept).", &hm_counter::dscp_rewritten},
        {"dscpgw_hostmark_class_pcp_rewrites_total",
         "VLAN-tagged packets of the class whose 802.1p priority was changed.",
         &hm_counter::pcp_set},
    };
    for (const Metric& m : kMetrics) {
        family(m.name, "counter", m.help);
        for (const DeviceStatus& d : devices) {
            if (!d.attachment.attached) continue;
            for (uint32_t i = 0; i < d.rules.n && i < HM_MAX_CLASSES; ++i)
                out += std::string(m.name) + "{" + dev_label(d) + ",class=\"" +
                       label(name_of(d.rules.rules[i])) + "\"} " +
                       std::to_string(d.counters[i].*m.field) + "\n";
        }
    }
    family("dscpgw_hostmark_unclassified_packets_total", "counter",
           "Egress packets left untouched: IP packets no class matched (reason=\"no_class\"), "
           "frames not IPv4/IPv6 (reason=\"not_ip\").");
    for (const DeviceStatus& d : devices) {
        if (!d.attachment.attached) continue;
        out += "dscpgw_hostmark_unclassified_packets_total{" + dev_label(d) +
               ",reason=\"no_class\"} " + std::to_string(d.counters[HM_CTR_NO_CLASS].packets) +
               "\n";
        out += "dscpgw_hostmark_unclassified_packets_total{" + dev_label(d) +
               ",reason=\"not_ip\"} " + std::to_string(d.counters[HM_CTR_NOT_IP].packets) + "\n";
    }
    return out;
}

}  // namespace dscpgw::hostmark
