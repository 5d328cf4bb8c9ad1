// Two workers share no written cache line on the packet path, nor a 128-byte pair of lines: what a
// worker writes per packet (its counter block, its RoCE conversation table's slots) lives in
// blocks of its own, aligned to and padded to whole 128-byte blocks, allocated per worker as the
// control plane allocates them.
// (What the workers do share is read-only — the snapshot — or a documented exception taken only
// where configured: a policer's meter, a shaped port's scheduler.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/flow_table.h"
#include "dataplane/stats.h"
#include "dataplane/worker.h"

namespace dscpgw {
namespace {

// Lines go in pairs: an x86 core's spatial prefetcher fetches a line's neighbour in its 128-byte
// block, so a worker's written block is whole pairs of its own (kWorkerBlockAlign).
constexpr uintptr_t kBlock = kWorkerBlockAlign;

static_assert(alignof(WorkerStats) == kBlock && sizeof(WorkerStats) % kBlock == 0,
              "a worker's counter block is whole 128-byte blocks");
static_assert(alignof(FlowSlot) == kBlock && sizeof(FlowSlot) % kBlock == 0,
              "a conversation slot is whole 128-byte blocks");

struct Span {
    uintptr_t first, last;
};

template <typename T>
Span blocks_of(const T* p, size_t n = 1) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    return {a / kBlock, (a + sizeof(T) * n - 1) / kBlock};
}

bool disjoint(Span a, Span b) { return a.last < b.first || b.last < a.first; }

TEST(WorkerLayout, CounterBlocksOfTwoWorkersShareNoLine) {
    // As ControlPlane allocates them (gateway/control_thread.cpp): one make_unique per worker.
    std::vector<std::unique_ptr<WorkerStats>> w;
    for (int i = 0; i < 4; ++i) w.push_back(std::make_unique<WorkerStats>());
    for (size_t i = 0; i < w.size(); ++i) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(w[i].get()) % kBlock, 0u) << "worker " << i;
        for (size_t j = i + 1; j < w.size(); ++j)
            EXPECT_TRUE(disjoint(blocks_of(w[i].get()), blocks_of(w[j].get())))
                << "workers " << i << " and " << j;
    }
}

TEST(WorkerLayout, ConversationSlotsOfTwoWorkersShareNoLine) {
    // Each worker's table, its evictions counted in the worker's own block (as the control plane
    // builds them): the table object itself is not written per packet.
    auto sa = std::make_unique<WorkerStats>(), sb = std::make_unique<WorkerStats>();
    FlowTable a(64, sa->worker[WorkerCounter::flow_evictions]);
    FlowTable b(64, sb->worker[WorkerCounter::flow_evictions]);
    const FlowSlot* pa = a.slot_array();
    const FlowSlot* pb = b.slot_array();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pa) % kBlock, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pb) % kBlock, 0u);
    EXPECT_TRUE(disjoint(blocks_of(pa, a.size()), blocks_of(pb, b.size())));
    EXPECT_TRUE(disjoint(blocks_of(pa, a.size()), blocks_of(sb.get())));
    EXPECT_TRUE(disjoint(blocks_of(pb, b.size()), blocks_of(sa.get())));
}

// The placement of `queues` (RX queues per port) on `workers` workers, as result[w] = the (port,
// queue) pairs worker w polls.
using Polls = std::vector<std::vector<std::pair<int, int>>>;
Polls place(std::vector<uint16_t> queues, unsigned workers,
            std::vector<std::vector<uint16_t>> pinned = {}, std::vector<int> port_socket = {},
            std::vector<int> worker_socket = {}) {
    RxPlacementInput in{std::move(queues), std::move(pinned), std::move(port_socket),
                        std::move(worker_socket)};
    if (in.worker_socket.empty()) in.worker_socket.assign(workers, 0);
    Polls out;
    for (const std::vector<RxPoll>& w : place_rx_queues(in)) {
        out.emplace_back();
        for (const RxPoll& r : w) {
            EXPECT_EQ(r.eth_port, 0) << "left for the caller";
            out.back().emplace_back(r.port, r.queue);
        }
    }
    return out;
}

// RX queues to workers: every queue of every port polled by exactly one worker; ports with a
// queue per worker keep queue w on worker w, and single-queue ports go round the workers instead
// of all landing on worker 0.
TEST(RxPlacement, EveryQueueOnceSharedOutRoundTheWorkers) {
    EXPECT_EQ(place({2, 2}, 2), (Polls{{{0, 0}, {1, 0}}, {{0, 1}, {1, 1}}}));
    EXPECT_EQ(place({1, 1}, 2), (Polls{{{0, 0}}, {{1, 0}}}));
    EXPECT_EQ(place({1, 1, 2}, 2), (Polls{{{0, 0}, {2, 0}}, {{1, 0}, {2, 1}}}));
    EXPECT_EQ(place({1, 1}, 1), (Polls{{{0, 0}, {1, 0}}}));
    // Three workers: the two-queue port continues after the one-queue port, the full port does
    // not move the turn, the last one-queue port wraps round.
    EXPECT_EQ(place({1, 2, 3, 1}, 3),
              (Polls{{{0, 0}, {2, 0}, {3, 0}}, {{1, 0}, {2, 1}}, {{1, 1}, {2, 2}}}));
    for (unsigned workers = 1; workers <= 5; ++workers) {
        std::vector<uint16_t> rxq = {1, 3, 5, 2, 1, 1, 4};
        for (uint16_t& n : rxq) n = static_cast<uint16_t>(std::min<unsigned>(n, workers));
        const Polls at = place(rxq, workers);
        ASSERT_EQ(at.size(), workers);
        std::vector<std::vector<int>> seen(rxq.size());
        for (size_t p = 0; p < rxq.size(); ++p) seen[p].assign(rxq[p], 0);
        for (unsigned w = 0; w < workers; ++w)
            for (const auto& [p, q] : at[w]) {
                ASSERT_LT(q, rxq[p]) << "port " << p << " worker " << w;
                ++seen[p][q];
                if (rxq[p] == workers) {
                    EXPECT_EQ(q, static_cast<int>(w)) << "a full port keeps queue w on worker w";
                }
            }
        for (size_t p = 0; p < rxq.size(); ++p)
            for (int n : seen[p]) EXPECT_EQ(n, 1) << "port " << p;
        const auto [lo, hi] = std::minmax_element(
            at.begin(), at.end(), [](const auto& a, const auto& b) { return a.size() < b.size(); });
        EXPECT_LE(hi->size() - lo->size(), 1u) << workers << " workers: queues shared out evenly";
    }
}

// `rx_workers`: a pinned port's queues go where the config says, several to one worker if it
// says so, and leave the turn of the others alone.
TEST(RxPlacement, PinnedQueuesGoToTheirWorkers) {
    EXPECT_EQ(place({2, 1}, 2, {{1, 1}, {}}), (Polls{{{1, 0}}, {{0, 0}, {0, 1}}}));
    EXPECT_EQ(place({3}, 2, {{0, 1, 0}}), (Polls{{{0, 0}, {0, 2}}, {{0, 1}}}));
    // A pinned port with a queue per worker, reversed: not the full port's w -> w.
    EXPECT_EQ(place({2, 1}, 2, {{1, 0}, {}}), (Polls{{{0, 1}, {1, 0}}, {{0, 0}}}));
}

// NUMA: a short port's queues go round its own socket's workers (all of them where it has none
// or the socket is unknown), each socket keeping its own turn.
TEST(RxPlacement, ShortPortsStayOnTheirSocket) {
    // Workers 0, 1 on socket 0, workers 2, 3 on socket 1.
    const std::vector<int> ws = {0, 0, 1, 1};
    EXPECT_EQ(place({1, 1, 1, 1, 2}, 4, {}, {1, 1, 0, -1, 1}, ws),
              (Polls{{{2, 0}, {3, 0}}, {}, {{0, 0}, {4, 0}}, {{1, 0}, {4, 1}}}));
    // A socket without workers: round all of them.
    EXPECT_EQ(place({1, 1, 1}, 4, {}, {2, 2, 2}, ws), (Polls{{{0, 0}}, {{1, 0}}, {{2, 0}}, {}}));
    // A full port still gives every worker its queue, whatever the sockets.
    EXPECT_EQ(place({4}, 4, {}, {1}, ws), (Polls{{{0, 0}}, {{0, 1}}, {{0, 2}}, {{0, 3}}}));
}

}  // namespace
}  // namespace dscpgw
