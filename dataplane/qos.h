// Border QoS on the encapsulation path: the shared policers (RFC 2698 / RFC 2697 meters from
// rte_meter) and the per-flow rate estimator behind a class's `adaptive` rules. Both run on the
// time the caller gives (QosClock): the TSC in workers, the capture's timestamps in `replay`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dataplane/policer.h"
#include "dataplane/snapshot.h"

namespace dscpgw {

// Sets up `st` for `p`; false (with `why`) if rte_meter refuses the parameters.
bool policer_init(PolicerState& st, const PolicerConf& p, std::string& why);

// Control thread, before `to` replaces `from`: a policer that keeps its name, mode, rates and
// bursts keeps its meter (the buckets as they are, shared by the workers on either snapshot
// while both run); a changed one starts with full buckets. Returns how many were kept.
size_t carry_meters(const Snapshot& from, Snapshot& to);

// Per-flow packet and bit rates over a sliding window of kRateWindowMs, per worker (RSS keeps a
// flow on one worker). The estimator is the sliding-window counter: time is cut into windows of W
// starting at the flow's first packet; the estimate at time t, e into the current window, is
//   prev × (W − e) / W + cur
// (prev: the previous window's count, none if it was empty or longer ago; cur: this window's,
// this packet included), divided by W. It follows a steady rate exactly and a change within one
// window, with two counters per quantity and no per-packet history. The table is set-associative
// like FlowTable and keyed by a 64-bit hash of the flow (a collision merges two flows' rates, at
// odds of about 2^-64 per pair); a new flow takes its set's slot idle longest.
inline constexpr uint64_t kRateWindowMs = 10;
inline constexpr uint32_t kAdaptiveFlows = 16384;  // Per worker.

struct RateSlot {
    uint64_t tag = 0;  // 0: free.
    uint64_t win_start = 0, last = 0;
    uint64_t cur_pkts = 0, prev_pkts = 0, cur_bytes = 0, prev_bytes = 0;
};

class FlowRates {
  public:
    static constexpr unsigned kWays = 4;

    // `entries` rounded up to a power of two; `hz`: time units per second.
    FlowRates(uint32_t entries, uint64_t hz);

    // Counts a packet of `len` IP bytes of flow `tag` (non-zero) at `now`; returns the flow's
    // packets and bits per second, this packet included.
    void update(uint64_t tag, uint64_t now, uint32_t len, uint64_t& pps, uint64_t& bps);

    uint64_t window() const { return window_; }

  private:
    std::unique_ptr<RateSlot[]> slots_;
    uint32_t size_ = 0;
    uint64_t window_ = 0;  // Time units in kRateWindowMs.
    uint64_t per_second_ = 0;
};

// The QoS stage's time and per-worker state, handed to the packet path's general half.
struct QosClock {
    static constexpr uint64_t kReadTsc = UINT64_MAX;
    uint64_t now = kReadTsc;     // TSC units: the policers' and the estimator's time.
    FlowRates* rates = nullptr;  // The worker's; none: `adaptive` rules see no flow rate.
};

}  // namespace dscpgw
