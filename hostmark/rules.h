// dscpgw-hostmark's userspace side that needs neither root nor a kernel: the gateway's classes
// turned into the BPF program's rule set, and the counters turned into text (a table, or the
// Prometheus exposition format for node_exporter's textfile collector).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/snapshot.h"
#include "hostmark/abi.h"

namespace dscpgw::hostmark {

// Fills `rs` from the classes, in order (first match wins, as in the gateway). Returns an empty
// string, or why the classes cannot run on a host (match keys the program does not implement).
std::string build_ruleset(const std::vector<ClassRule>& classes, hm_ruleset& rs);

// Counters summed over CPUs, indexed as the program's hm_counters map.
using Counters = std::array<hm_counter, HM_NUM_COUNTERS>;

struct Attachment {
    std::string device;
    bool attached = false;
    uint32_t prog_id = 0;
    uint64_t generation = 0;
    bool created_clsact = false;
};

// A class's match keys and actions as one short line, e.g. "udp/4791 bth=0x81 -> dscp 48".
std::string describe_rule(const hm_rule& r);

// What `status` reports of one device; `rules` and `counters` are read only when attached.
struct DeviceStatus {
    Attachment attachment;
    hm_ruleset rules{};
    Counters counters{};
};

std::string status_table(const Attachment& a, const hm_ruleset& rs, const Counters& c);
// The devices' metrics, each family once (HELP, TYPE, then every device's samples).
std::string prometheus_text(const std::vector<DeviceStatus>& devices);

}  // namespace dscpgw::hostmark
