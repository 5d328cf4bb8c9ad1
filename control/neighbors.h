// The control thread's side of neighbor resolution: probe unresolved next hops once a second,
// re-probe those not confirmed for kReachable, and forget those that stay silent.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "control/report.h"

struct rte_mempool;
struct rte_ring;

namespace dscpgw {

class NeighborTable;
struct Snapshot;

struct NeighborControl {
    rte_mempool* pool = nullptr;
    rte_ring* inject =
        nullptr;  // To a worker, which transmits (the control thread owns no TX queue).
    uint64_t probes_sent = 0, probes_failed = 0, expired = 0;
};

inline constexpr double kNeighborProbeInterval = 1.0;  // Seconds.
inline constexpr double kNeighborReachable = 30.0;     // Confirmed this recently: no probe.
inline constexpr uint32_t kNeighborMaxProbes = 3;      // Unanswered probes before a MAC is dropped.

void maintain_neighbors(NeighborTable& table, const Snapshot& s, NeighborControl& ctl,
                        uint64_t now_tsc, uint64_t tsc_hz);

// Every entry: address, port, MAC (empty while unresolved), static or learned.
std::vector<NeighborReport> neighbor_reports(const NeighborTable& table, const Snapshot& s);

}  // namespace dscpgw
