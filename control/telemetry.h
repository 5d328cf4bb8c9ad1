// The DPDK telemetry view of a Report (/dscpgw/* on the EAL's telemetry socket).
#pragma once

#include <string_view>

#include "control/report.h"

struct rte_tel_data;

namespace dscpgw {

struct TelemetryCommand {
    std::string_view path, help;
};
inline constexpr TelemetryCommand kTelemetryCommands[] = {
    {"/dscpgw/stats", "dscpgw counters: totals, drops by reason, per class and port"},
    {"/dscpgw/tunnels", "dscpgw tunnels with their counters"},
    {"/dscpgw/classes", "dscpgw classes: DSCP set, packets, bytes"},
    {"/dscpgw/policers", "dscpgw policers: rates, packets and bytes by colour"},
    {"/dscpgw/queues", "dscpgw egress queues: depth, sent, ECN marks, drops"},
    {"/dscpgw/config", "dscpgw running configuration: file, generation, last reload"},
};

// Fills `d` with the answer to `cmd` (one of kTelemetryCommands). Telemetry names hold only
// [A-Za-z0-9_/]: a class called "roce-cnp" shows as roce_cnp.
void render_telemetry(const Report& r, std::string_view cmd, rte_tel_data* d);

}  // namespace dscpgw
