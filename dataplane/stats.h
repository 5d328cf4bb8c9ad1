// Per-worker counters. Each block has exactly one writer (its worker); readers (the replay summary,
// later the control thread) load with relaxed ordering, so a plain add on the hot path suffices.
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

  private:
    std::atomic<uint64_t> v_{0};
};

struct alignas(64) WorkerStats {
    // Owner: the worker that holds this block (rw); everyone else: ro.
    Counter rx_pkts[kMaxPorts], rx_bytes[kMaxPorts];
    Counter tx_pkts[kMaxPorts], tx_bytes[kMaxPorts];
    Counter class_pkts[kMaxClasses + 1], class_bytes[kMaxClasses + 1];  // Last: no class matched.
    Counter encap_pkts[kMaxTunnels], encap_bytes[kMaxTunnels];
    Counter decap_pkts[kMaxTunnels], decap_bytes[kMaxTunnels];
    Counter outer_dscp_remarked[kMaxTunnels];
    Counter ecn_ce_marked[kMaxTunnels];  // Inner ECT packets turned CE on decap.
    Counter drops[kDropReasonCount];
    Counter dscp_rewrites;
    Counter local_replies[static_cast<size_t>(LocalReply::count_)];  // ARP, echo, ND answered.
    Counter icmp_too_big_sent, icmp_rate_limited;
    Counter tx_failed;  // Accepted by the dataplane but refused by the port's TX queue.
    Counter busy_cycles, idle_cycles, polls;
};

inline constexpr size_t kNoClass = kMaxClasses;

}  // namespace dscpgw
