// The control thread's side of neighbor resolution, one state machine per entry (RFC 4861
// 7.3.2, Linux's neigh as the reference): incomplete (probed once a second) -> reachable
// (confirmed within kNeighborReachable) -> stale (probe it) -> probe (up to kNeighborMaxProbes
// unanswered) -> failed: a next hop is retried every kNeighborFailedRetry, a learned LAN host is
// removed after kNeighborFailedHold. Probes are limited per port.
#pragma once

#include <cstdint>
#include <cstdio>
#include <vector>

#include "control/report.h"
#include "dataplane/neighbor.h"

struct rte_mempool;
struct rte_ring;

namespace dscpgw {

class NeighborTable;
struct Snapshot;

inline constexpr double kNeighborProbeInterval = 1.0;   // Seconds.
inline constexpr double kNeighborReachable = 30.0;      // Confirmed this recently: no probe.
inline constexpr uint32_t kNeighborMaxProbes = 3;       // Unanswered probes before `failed`.
inline constexpr double kNeighborFailedRetry = 10.0;    // A failed next hop: one probe per this.
inline constexpr double kNeighborFailedHold = 60.0;     // A failed LAN host: removed after this.
inline constexpr uint32_t kNeighborProbesPerPort = 50;  // Probes per second per port, at most.

struct NeighborControl {
    rte_mempool* pool = nullptr;
    rte_ring* inject =
        nullptr;  // To a worker, which transmits (the control thread owns no TX queue).
    uint64_t probes_sent = 0, probes_failed = 0, expired = 0, removed = 0, probes_limited = 0;
    // Per port: probes still allowed this second, and when the second began.
    std::array<uint32_t, kMaxPorts> budget{};
    std::array<uint64_t, kMaxPorts> budget_tsc{};
};

// The state an entry is in (RFC 4861 7.3.2 as Linux keeps it).
NeighborState neighbor_state(const Neighbor& n, uint64_t now_tsc, uint64_t tsc_hz);

void maintain_neighbors(NeighborTable& table, const Snapshot& s, NeighborControl& ctl,
                        uint64_t now_tsc, uint64_t tsc_hz);

// Every entry: address, port, MAC (empty while unresolved), static or learned.
std::vector<NeighborReport> neighbor_reports(const NeighborTable& table, const Snapshot& s);

}  // namespace dscpgw
