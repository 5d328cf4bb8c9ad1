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
    // Config port index -> the RX queue this worker polls there (place_rx_queues()), or
    // kNoRxQueue.
    std::vector<uint16_t> rx_queue;
    uint16_t queue = 0;  // This worker's index: its TX queue on every port, its RCU thread id.
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

inline constexpr uint16_t kNoRxQueue = 0xffff;

// Which worker polls each RX queue: rx_queues[p] queues on config port p (each at most
// `workers`), result[w][p] the queue worker w polls on port p or kNoRxQueue. A port with a queue
// per worker gives worker w its queue w (RSS spreads flows over all of them). The queues of ports
// with fewer go round the workers in turn, continuing where the previous such port stopped, so
// that single-queue devices (af_packet, tap, memif, pcap) are shared out and no worker idles
// while another polls several. A worker polls at most one queue of a port.
std::vector<std::vector<uint16_t>> place_rx_queues(const std::vector<uint16_t>& rx_queues,
                                                   unsigned workers);

// Runs until *ctx.stop becomes true. Suitable for rte_eal_remote_launch (argument: WorkerContext*).
int worker_main(void* ctx);

}  // namespace dscpgw
