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

// An RX queue a worker polls: config port index, queue, and the port's ethdev id.
struct RxPoll {
    uint16_t port = 0;
    uint16_t queue = 0;
    uint16_t eth_port = 0;
    // How many frames to ask the queue for next (rx_burst_for()). Each worker polls its own
    // copies of its RxPoll entries and alone writes this.
    mutable uint16_t want = 32;  // kBurst
};

struct WorkerContext {
    // The published snapshot, replaced whole by a reload. A worker loads it once per poll and
    // processes every packet of that poll under it; then it reports a quiescent state to `rcu`
    // (thread id: `queue`), after which the control thread may free a snapshot it replaced.
    const std::atomic<const Snapshot*>* snap = nullptr;
    rte_rcu_qsbr* rcu = nullptr;
    FlowTable* flows = nullptr;      // This worker's RoCE conversations; none: not tracked.
    TraceShared* trace = nullptr;    // `ctl trace`: armed by the control thread; none: no trace.
    std::vector<uint16_t> eth_port;  // Config port index -> ethdev port id.
    std::vector<RxPoll> rx;          // The RX queues this worker polls (place_rx_queues()).
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

// What the RX queues are placed by (place_rx_queues()), per config port: its RX queue count, the
// worker of each queue where the config pins them (`rx_workers`; empty: placed here), the NUMA
// socket of its device (-1: unknown); per worker, the socket of its lcore.
struct RxPlacementInput {
    std::vector<uint16_t> queues;
    std::vector<std::vector<uint16_t>> pinned;
    std::vector<int> port_socket;
    std::vector<int> worker_socket;
};

// Which worker polls each RX queue: result[w] the queues worker w polls, in port and queue order
// (eth_port left 0 for the caller). Every queue is polled by exactly one worker. A pinned queue
// goes to its worker. A port with a queue per worker gives worker w its queue w (RSS spreads
// flows over all of them). The queues of other ports go round the workers on the device's socket
// (all of them where none is, or the socket is unknown) in turn, continuing where the previous
// such port on that socket stopped, so that single-queue devices (af_packet, tap, memif, pcap) are
// shared out, no worker idles while another polls several, and none polls a device across the
// interconnect when a worker of its own socket could.
std::vector<std::vector<RxPoll>> place_rx_queues(const RxPlacementInput& in);

// Runs until *ctx.stop becomes true. Suitable for rte_eal_remote_launch (argument: WorkerContext*).
int worker_main(void* ctx);

}  // namespace dscpgw
