// Two workers share no written cache line on the packet path: what a worker writes per packet
// (its counter block, its RoCE conversation table's slots) lives in blocks of its own, aligned to
// and padded to whole 64-byte lines, allocated per worker as the control plane allocates them.
// (What the workers do share is read-only — the snapshot — or a documented exception taken only
// where configured: a policer's meter, a shaped port's scheduler.)
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/flow_table.h"
#include "dataplane/stats.h"

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

}  // namespace
}  // namespace dscpgw
