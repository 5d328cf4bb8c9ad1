// The run-to-completion worker loop: poll every port, process, transmit.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "dataplane/snapshot.h"
#include "dataplane/stats.h"

struct rte_ring;

namespace dscpgw {

struct WorkerContext {
    const Snapshot* snap = nullptr;
    std::vector<uint16_t> eth_port;  // Config port index -> ethdev port id.
    std::vector<uint8_t>
        poll_rx;         // Config port index -> whether this worker polls an RX queue there.
    uint16_t queue = 0;  // This worker's RX queue (where polled) and TX queue on every port.
    WorkerStats* stats = nullptr;
    const std::atomic<bool>* stop = nullptr;
    rte_ring* inject =
        nullptr;  // Frames the control thread asks this worker to send (m->port: config port).
};

// Runs until *ctx.stop becomes true. Suitable for rte_eal_remote_launch (argument: WorkerContext*).
int worker_main(void* ctx);

}  // namespace dscpgw
