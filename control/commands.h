// The `dscpgw ctl` commands: one list, from which the control thread parses requests, `dscpgw ctl`
// and the control socket print their usage, and the renderers take their view.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dscpgw {

// X(identifier, name, arguments, what it shows or does)
#define DSCPGW_CTL_COMMANDS(X)                                                                    \
    X(status, "status", "", "the gateway: version, configuration generation, last reload, ports") \
    X(stats, "stats", "", "counters: ports, classes, tunnels, drops, local traffic, workers")     \
    X(tunnels, "tunnels", "", "tunnels: type, VNI, endpoints, ports, next hop")                   \
    X(classes, "classes", "", "classes: the DSCP each sets, packets and bytes")                   \
    X(policers, "policers", "",                                                                   \
      "policers: mode, rates, bursts, colour actions, packets and bytes by colour")               \
    X(queues, "queues", "",                                                                       \
      "egress queues and shapers: rates, limits, ECN, depth, sent, marks, drops")                 \
    X(neighbors, "neighbors", "", "next hops and LAN hosts resolved by ARP/ND")                   \
    X(flows, "flows", " [--top N]",                                                               \
      "the heaviest and the most congested RoCE conversations (N: 1..10000)")                     \
    X(reload, "reload", "",                                                                       \
      "re-read the configuration file and apply it without a restart, or refuse it")              \
    X(log_level, "log-level", " [TYPE LEVEL]",                                                    \
      "log levels (--all: DPDK's too), or set TYPE (a name or glob) to LEVEL (error..debug)")     \
    X(trace, "trace", " [--count N] [--port P] [--class C] [--timeout S]",                        \
      "what the workers do to the next N matching packets: headers in/out, class, DSCP, ECN, "    \
      "tunnel, verdict")

enum class CtlCommand : uint8_t {
#define DSCPGW_X(id, name, args, help) id,
    DSCPGW_CTL_COMMANDS(DSCPGW_X)
#undef DSCPGW_X
        count_
};

struct CtlCommandInfo {
    std::string_view name, args, help;
};
inline constexpr CtlCommandInfo kCtlCommands[] = {
#define DSCPGW_X(id, name, args, help) {name, args, help},
    DSCPGW_CTL_COMMANDS(DSCPGW_X)
#undef DSCPGW_X
};

struct CtlRequest {
    CtlCommand cmd = CtlCommand::status;
    bool json = false;                // Views only: JSON instead of a table.
    size_t top = 20;                  // flows: how many of each.
    bool all = false;                 // log-level: every DPDK log type, not only the gateway's.
    std::string log_type, log_level;  // log-level TYPE LEVEL; empty: list the levels.
    // trace: what ctl asks of the gateway (`dscpgw ctl trace` drives it: start, reads, stop).
    enum class TraceOp : uint8_t { none, start, read, stop };
    TraceOp trace_op = TraceOp::none;
    uint32_t trace_count = 10;  // 1..kTraceMax packets.
    std::string trace_port;     // The port they arrive on; empty: any.
    std::string trace_class;    // The class they match; empty: any.
    uint32_t trace_from = 0;    // read: the first record wanted.
    double trace_timeout = 10;  // Seconds ctl waits for the packets (client side).
};

// Parses one request line ("flows --top 5 --json"); false with `err` (a line for the operator)
// when it is not one.
bool parse_ctl_request(const std::string& line, CtlRequest& req, std::string& err);

// "status | stats | ... | flows [--top N] | reload", and the same as an indented list with help.
std::string ctl_synopsis();
std::string ctl_help(const char* indent);

}  // namespace dscpgw
