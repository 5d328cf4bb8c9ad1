// The gateway's log: DPDK log types per subsystem ("dscpgw.config", "dscpgw.neighbor", ...), so
// that the EAL's --log-level=dscpgw.neighbor:debug, [gateway] log_level and `dscpgw ctl log-level`
// all set the same levels. Messages go to stderr (journald under the unit), one line each:
// "dscpgw.TYPE: message", with "warning: " / "error: " after the type at those levels.
#pragma once

#include <cstdint>
#include <string>

namespace dscpgw {

// X(name, what it logs)
#define DSCPGW_LOG_TYPES(X)                                        \
    X(gateway, "start, workers, stop")                             \
    X(config, "configuration loading and warnings")                \
    X(port, "port setup, MTU and link changes")                    \
    X(reload, "reloads: accepted, refused, and why")               \
    X(neighbor, "ARP/ND probes, resolutions and expiries (debug)") \
    X(tunnel, "tunnel path MTU changes")                           \
    X(control, "the control socket, metrics endpoint and telemetry, log levels")

enum class Log : uint8_t {
#define DSCPGW_X(name, help) name,
    DSCPGW_LOG_TYPES(DSCPGW_X)
#undef DSCPGW_X
        count_
};

// Registers the types at `level` (an RTE_LOG_* value) unless an EAL --log-level already given
// names them, and sends DPDK's log (the EAL's included) to stderr. Call before rte_eal_init so
// that the EAL's --log-level options apply to these types.
void log_init(uint32_t level);
void log_msg(Log t, uint32_t level, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

// "error", "warning", "info", "debug"... or 1..8; 0 when it is none of them.
uint32_t log_level_parse(const std::string& s);
const char* log_level_name(uint32_t level);

// `ctl log-level`: every dscpgw.* type (and, with `all`, every DPDK type) with its level.
std::string log_levels(bool all);
// `ctl log-level TYPE LEVEL`: TYPE is a type or a glob ("dscpgw.*", "pmd.net.*"); false with a
// message when it names no registered type or LEVEL is not a level.
bool log_set_level(const std::string& type, const std::string& level, std::string& msg);

}  // namespace dscpgw
