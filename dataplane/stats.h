// Per-worker counters. Each block has exactly one writer (its worker); readers (the replay summary,
// the control thread) load with relaxed ordering, so a plain add on the hot path suffices.
#pragma once

#include <atomic>
#include <cstdint>

#include "dataplane/drop_reason.h"
#include "dataplane/pipeline.h"
#include "dataplane/snapshot.h"

namespace dscpgw {

// A single-writer counter: relaxed load+store compiles to a plain add, yet a concurrent reader
// sees a whole value and the program has no data race.
class Counter {
  public:
    void add(uint64_t n) {
        v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    void inc() { add(1); }
    uint64_t get() const { return v_.load(std::memory_order_relaxed); }
    // Only while no worker can write it: the control thread clears a retired bank (below).
    void reset() { v_.store(0, std::memory_order_relaxed); }

  private:
    std::atomic<uint64_t> v_{0};
};

// Counters indexed by a snapshot's class or tunnel index. An index means something only within one
// snapshot, so each worker has two banks and counts into the one its snapshot names
// (Snapshot::bank). A reload publishes the new snapshot with the other bank; once every worker has
// passed a quiescent point the control thread folds the retired bank into per-name totals and
// clears it, so a class's or tunnel's counters stay exact and monotonic across any reload.
struct ConfigCounters {
    Counter class_pkts[kMaxClasses + 1], class_bytes[kMaxClasses + 1];  // Last: no class matched.
    Counter encap_pkts[kMaxTunnels], encap_bytes[kMaxTunnels];
    Counter decap_pkts[kMaxTunnels], decap_bytes[kMaxTunnels];
    Counter outer_dscp_remarked[kMaxTunnels];
    Counter ecn_ce_marked[kMaxTunnels];  // Inner ECT packets turned CE on decap.
    Counter cnp_encap[kMaxTunnels];      // RoCE CNPs sent into the tunnel (we are congested).
    Counter cnp_decap[kMaxTunnels];      // RoCE CNPs out of the tunnel (the far end is).

    void reset() {
        for (size_t i = 0; i <= kMaxClasses; ++i) {
            class_pkts[i].reset();
            class_bytes[i].reset();
        }
        for (Counter* a : {encap_pkts, encap_bytes, decap_pkts, decap_bytes, outer_dscp_remarked,
                           ecn_ce_marked, cnp_encap, cnp_decap})
            for (size_t i = 0; i < kMaxTunnels; ++i) a[i].reset();
    }
};

struct alignas(64) WorkerStats {
    // Owner: the worker that holds this block (rw); everyone else: ro.
    Counter rx_pkts[kMaxPorts], rx_bytes[kMaxPorts];
    Counter tx_pkts[kMaxPorts], tx_bytes[kMaxPorts];
    ConfigCounters bank[2];
    Counter drops[kDropReasonCount];
    Counter dscp_rewrites;
    Counter local_replies[static_cast<size_t>(LocalReply::count_)];  // ARP, echo, ND answered.
    Counter icmp_too_big_sent, icmp_rate_limited;
    Counter tx_failed;  // Accepted by the dataplane but refused by the port's TX queue.
    Counter busy_cycles, idle_cycles, polls;
};

inline constexpr size_t kNoClass = kMaxClasses;

}  // namespace dscpgw
