// Per-worker counters, laid out by the families of dataplane/counters.h. Each block has exactly one
// writer (its worker); readers (the replay summary, the control thread) load with relaxed
// ordering, so a plain add on the hot path suffices.
#pragma once

#include <cstdint>

#include "dataplane/counters.h"
#include "dataplane/drop_reason.h"
#include "dataplane/snapshot.h"

namespace dscpgw {

inline constexpr size_t kNoClass = kMaxClasses;

// Counters indexed by a snapshot's class or tunnel index. An index means something only within one
// snapshot, so each worker has two banks and counts into the one its snapshot names
// (Snapshot::bank). A reload publishes the new snapshot with the other bank; once every worker has
// passed a quiescent point the control thread folds the retired bank into per-name totals and
// clears it, so a class's or tunnel's counters stay exact and monotonic across any reload.
struct ConfigCounters {
    CounterBlock<ClassCounter, kMaxClasses + 1> cls;  // Last: no class matched (kNoClass).
    CounterBlock<TunnelCounter, kMaxTunnels> tunnel;
    CounterBlock<PolicerCounter, kMaxPolicers> policer;
    CounterBlock<QueueCounter, kMaxQueues> queue;

    void reset() {
        queue.reset();
        cls.reset();
        tunnel.reset();
        policer.reset();
    }
};

struct alignas(kWorkerBlockAlign) WorkerStats {
    // Owner: the worker that holds this block (rw); everyone else: ro.
    CounterBlock<PortCounter, kMaxPorts> port;
    ConfigCounters bank[2];
    Counter drops[kDropReasonCount];
    Counter local[kLocalReplyCount];
    CounterBlock<DataplaneCounter, 1> dataplane;
    CounterBlock<WorkerCounter, 1> worker;
};

}  // namespace dscpgw
