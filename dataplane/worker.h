// The run-to-completion worker loop: poll every port, process, transmit.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "dataplane/snapshot.h"
#include "dataplane/stats.h"

struct rte_ring;
struct rte_rcu_qsbr;

namespace dscpgw {

class FlowTable;
struct TraceShared;

struct WorkerContext {
    // The published snapshot, replaced whole by a reload. A worker loads it once per poll and
    // processes every packet of that poll under it; then it reports a quiescent state to `rcu`
    // (thread id: `queue`), after which the control thread may free a snapshot it replaced.
    const std::atomic<const Snapshot*>* snap = nullptr;
    rte_rcu_qsbr* rcu = nullptr;
    FlowTable* flows = nullptr;      // This worker's RoCE conversations; none: not tracked.
    TraceShared* trace = nullptr;    // `ctl trace`: armed by the control thread; none: no trace.
    std::vector<uint16_t> eth_port;  // Config port index -> ethdev port id.
    std::vector<uint8_t>
        poll_rx;         // Config port index -> whether this worker polls an RX queue there.
    uint16_t queue = 0;  // This worker's RX queue (where polled) and TX queue on every port.
    // Config port index -> the TX queue the port's egress scheduler sends on (whoever holds its
    // lock sends: one queue keeps its packets in order), and the lock of that queue when it is
    // shared by the workers (nullptr: the worker's own queue).
    std::vector<uint16_t> sched_queue;
    std::atomic_flag* sched_tx_lock = nullptr;  // One per port.
    WorkerStats* stats = nullptr;
    const std::atomic<bool>* stop = nullptr;
    rte_ring* inject =
        nullptr;  // Frames the control thread asks this worker to send (m->port: config port).
    // Set (release) by worker_main as it returns: whoever waited for the lcore
    // (rte_eal_wait_lcore, whose synchronisation sits in the uninstrumented EAL) acquires it
    // before freeing the context, so the hand-back is visible to ThreadSanitizer as well.
    mutable std::atomic<bool> finished{false};
};

// Runs until *ctx.stop becomes true. Suitable for rte_eal_remote_launch (argument: WorkerContext*).
int worker_main(void* ctx);

}  // namespace dscpgw
