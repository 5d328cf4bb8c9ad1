// Two workers share no written cache line on the packet path: what a worker writes per packet
// (its counter block, its RoCE conversation table's slots) lives in blocks of its own, aligned to
// and padded to whole 64-byte lines, allocated per worker as the control plane allocates them.
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

constexpr uintptr_t kLine = 64;

static_assert(alignof(WorkerStats) == kLine && sizeof(WorkerStats) % kLine == 0,
              "a worker's counter block is whole cache lines");
static_assert(alignof(FlowSlot) == kLine && sizeof(FlowSlot) % kLine == 0,
              "a conversation slot is whole cache lines");

struct Span {
    uintptr_t first_line, last_line;
};

template <typename T>
Span lines_of(const T* p, size_t n = 1) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    return {a / kLine, (a + sizeof(T) * n - 1) / kLine};
}

bool disjoint(Span a, Span b) { return a.last_line < b.first_line || b.last_line < a.first_line; }

TEST(WorkerLayout, CounterBlocksOfTwoWorkersShareNoLine) {
    // As ControlPlane allocates them (gateway/control_thread.cpp): one make_unique per worker.
    std::vector<std::unique_ptr<WorkerStats>> w;
    for (int i = 0; i < 4; ++i) w.push_back(std::make_unique<WorkerStats>());
    for (size_t i = 0; i < w.size(); ++i) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(w[i].get()) % kLine, 0u) << "worker " << i;
        for (size_t j = i + 1; j < w.size(); ++j)
            EXPECT_TRUE(disjoint(lines_of(w[i].get()), lines_of(w[j].get())))
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
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pa) % kLine, 0u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pb) % kLine, 0u);
    EXPECT_TRUE(disjoint(lines_of(pa, a.size()), lines_of(pb, b.size())));
    EXPECT_TRUE(disjoint(lines_of(pa, a.size()), lines_of(sb.get())));
    EXPECT_TRUE(disjoint(lines_of(pb, b.size()), lines_of(sa.get())));
}

// RX queues to workers: every queue of every port polled by exactly one worker, a worker at most
// one queue a port; ports with a queue per worker keep queue w on worker w, and single-queue ports
// go round the workers instead of all landing on worker 0.
TEST(RxPlacement, EveryQueueOnceSharedOutRoundTheWorkers) {
    constexpr uint16_t X = kNoRxQueue;
    using P = std::vector<std::vector<uint16_t>>;
    EXPECT_EQ(place_rx_queues({2, 2}, 2), (P{{0, 0}, {1, 1}}));
    EXPECT_EQ(place_rx_queues({1, 1}, 2), (P{{0, X}, {X, 0}}));
    EXPECT_EQ(place_rx_queues({1, 1, 2}, 2), (P{{0, X, 0}, {X, 0, 1}}));
    EXPECT_EQ(place_rx_queues({1, 1}, 1), (P{{0, 0}}));
    // Three workers: the two-queue port continues after the one-queue port, the full port does
    // not move the turn, the last one-queue port wraps round.
    EXPECT_EQ(place_rx_queues({1, 2, 3, 1}, 3), (P{{0, X, 0, 0}, {X, 0, 1, X}, {X, 1, 2, X}}));
    for (unsigned workers = 1; workers <= 5; ++workers) {
        const std::vector<uint16_t> rxq = {1, 3, 5, 2, 1, 1, 4};
        const P at = place_rx_queues(rxq, workers);
        ASSERT_EQ(at.size(), workers);
        std::vector<unsigned> load(workers, 0);
        for (size_t p = 0; p < rxq.size(); ++p) {
            const unsigned n = std::min<unsigned>(rxq[p], workers);
            std::vector<int> seen(n, 0);
            for (unsigned w = 0; w < workers; ++w) {
                ASSERT_EQ(at[w].size(), rxq.size());
                if (at[w][p] == X) continue;
                ASSERT_LT(at[w][p], n) << "port " << p << " worker " << w;
                ++seen[at[w][p]];
                ++load[w];
                if (n == workers) {
                    EXPECT_EQ(at[w][p], w) << "a full port keeps queue w on worker w";
                }
            }
            for (unsigned q = 0; q < n; ++q)
                EXPECT_EQ(seen[q], 1) << "port " << p << " queue " << q;
        }
        const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
        EXPECT_LE(*hi - *lo, 1u) << workers << " workers: queues shared out evenly";
    }
}

}  // namespace
}  // namespace dscpgw
