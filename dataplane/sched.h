// Border QoS on egress: a port's shaper (token bucket of `rate` and `burst`), tunnel shapers
// nested in it, and the port's `[[queues]]`: strict queues (capped by `max_rate`) served first in
// config order, weighted queues by deficit round robin, each with a byte `limit` and ECN marking
// from queue depth. One PortSched per shaped port, shared by every worker behind a lock (as a
// policer's meter is): rates and shares are then exact whatever RSS does. It runs on the time the
// caller gives (the TSC in workers, the capture's timestamps in `replay`) and computes each
// packet's departure time, so `replay` shows exactly what a policy does to a burst.
#pragma once

#include <rte_mbuf.h>
#include <rte_pause.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dataplane/snapshot.h"
#include "dataplane/stats.h"

namespace dscpgw {

__extension__ typedef unsigned __int128 SchedU128;

// What the burst glue leaves in a forwarded packet's mbuf for the egress stage, in m->hash.sched
// (unused once a packet is received): the kind, the class and tunnel (each +1, 0: none).
enum SchedKind : uint8_t { kSchedOther = 0, kSchedEncap = 1, kSchedDecap = 2 };
inline void sched_note(rte_mbuf* m, uint8_t kind, int16_t class_id, int16_t tunnel_id) {
    m->hash.sched.queue_id = static_cast<uint32_t>(static_cast<uint16_t>(class_id + 1)) |
                             static_cast<uint32_t>(static_cast<uint16_t>(tunnel_id + 1)) << 16;
    m->hash.sched.traffic_class = kind;
    m->hash.sched.color = 0;
    m->hash.sched.reserved = 0;
}

// A token bucket as GCRA (the theoretical arrival time of the next byte): `burst` bytes deep,
// filling at `rate` bits per second. Times in the caller's units, with 32 fractional bits so
// that a 64-byte frame at 100 Gbit/s costs its exact fraction of a cycle.
class Shaper {
  public:
    void set(uint64_t rate_bps, uint64_t burst_bytes, uint64_t hz) {
        on_ = rate_bps != 0;
        if (!on_) return;
        per_byte_ = (static_cast<SchedU128>(8) * hz << 32) / rate_bps;
        tau_ = per_byte_ * burst_bytes;
    }
    bool on() const { return on_; }
    // The earliest time a frame of `len` bytes conforms (0: at once).
    uint64_t eligible(uint32_t len) const {
        if (!on_) return 0;
        const SchedU128 c = per_byte_ * len;
        const SchedU128 slack = tau_ > c ? tau_ - c : 0;
        if (tat_ <= slack) return 0;
        return static_cast<uint64_t>((tat_ - slack + 0xffffffffu) >> 32);
    }
    void charge(uint64_t t, uint32_t len) {
        if (!on_) return;
        const SchedU128 tt = static_cast<SchedU128>(t) << 32;
        tat_ = (tat_ > tt ? tat_ : tt) + per_byte_ * len;
    }

  private:
    bool on_ = false;
    SchedU128 per_byte_ = 0, tau_ = 0, tat_ = 0;
};

struct SchedEntry {
    rte_mbuf* m;
    uint64_t t_enq;
};

enum class EnqAction : uint8_t { queued, marked, drop_limit, drop_not_ect, drop_buffers, bypass };
inline bool dropped(EnqAction a) {
    return a == EnqAction::drop_limit || a == EnqAction::drop_not_ect ||
           a == EnqAction::drop_buffers;
}

// The packet buffers a shaped port's queues may hold (their limits in 512-byte frames on
// average, at most 32768): `run` adds them to the port's mbuf pool, and the scheduler drops
// (reason "buffers") rather than hold more, so that small frames filling a queue never starve
// the pool that every port receives into.
inline uint32_t sched_buffers(uint64_t limits) {
    return static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(limits / 512, 64), 32768));
}
struct EnqResult {
    int16_t queue = -1;  // Port-local queue index.
    uint64_t depth = 0;  // The queue's bytes before this packet.
    EnqAction action = EnqAction::bypass;
};

struct Departure {
    rte_mbuf* m;
    uint64_t time;
};

class PortSched {
  public:
    // The scheduler of port `port` of `s` (whose `queues`, rates and tunnels it takes), on a clock
    // of `hz` units per second.
    PortSched(const Snapshot& s, uint16_t port, uint64_t hz);
    ~PortSched();  // Frees what is still queued.
    PortSched(const PortSched&) = delete;
    PortSched& operator=(const PortSched&) = delete;

    // What must be equal for a reload to keep this scheduler (and its queued packets and
    // buckets): rates, bursts, the queues' parameters, the shaped tunnels in order.
    static std::string signature(const Snapshot& s, uint16_t port);
    const std::string& signature() const { return sig_; }

    void lock() {
        while (lock_.test_and_set(std::memory_order_acquire))
            while (lock_.test(std::memory_order_relaxed)) rte_pause();
    }
    bool try_lock() { return !lock_.test_and_set(std::memory_order_acquire); }
    void unlock() { lock_.clear(std::memory_order_release); }

    // Under the lock. Queues `m` at `now`, or drops it (the caller frees it on a drop; on bypass,
    // a frame of the gateway's own, it sends it as it is).
    EnqResult enqueue(const Snapshot& s, uint16_t port, rte_mbuf* m, uint64_t now,
                      ConfigCounters& cc);
    // Under the lock. Up to `max` packets whose departure time is at most `now`, in order.
    unsigned dequeue(const Snapshot& s, uint16_t port, uint64_t now, Departure* out, unsigned max,
                     WorkerStats& st, ConfigCounters& cc);
    // Under the lock: moves every packet of `from` into the queue of the same name here (else the
    // last queue that takes unclassified traffic), keeping their enqueue times. For a reload.
    void take_backlog(PortSched& from);

    uint64_t backlog() const { return backlog_.load(std::memory_order_relaxed); }
    size_t queues() const { return nq_; }
    // Any thread: a queue's depth now (bytes, packets), and its largest depth in bytes since
    // the last take_peak() (which resets it to the depth now).
    uint64_t depth_bytes(size_t q) const;
    uint64_t depth_packets(size_t q) const;
    uint64_t peak_bytes(size_t q) const;
    uint64_t take_peak(size_t q);

  private:
    struct Fifo {
        std::unique_ptr<SchedEntry[]> e;
        uint32_t mask = 0, head = 0, tail = 0;
        bool empty() const { return head == tail; }
        bool full() const { return tail - head > mask; }
        SchedEntry& front() { return e[head & mask]; }
    };
    struct Queue {
        std::string name;
        bool strict = false, ecn = false, any = false;
        uint64_t limit = 0, ecn_min = 0, ecn_max = 0;
        // The marking probability per byte above ecn_min, x 2^64 (max_probability x 2^32 over
        // max - min, in 32 more fractional bits): a multiply per packet instead of a division.
        SchedU128 ecn_slope = 0;
        uint32_t quantum = 0;
        Shaper cap;
        std::vector<Fifo> fifo;  // Per node.
        uint64_t bytes = 0, pkts = 0;
        int64_t deficit = 0;
        bool visited = false;
        uint16_t rr = 0;  // The node served next on a tie.
        std::atomic<uint64_t> g_bytes{0}, g_pkts{0}, g_peak{0};
    };
    bool push(Queue& q, size_t node, rte_mbuf* m, uint64_t t);
    void gauges(Queue& q);
    uint64_t rnd();

    std::string sig_;
    std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
    // Clock ticks to nanoseconds by a multiply (a 128-bit division per packet cost ~40 cycles):
    // 32 fractional bits, exact on a nanosecond clock.
    SchedU128 ns_per_tick_ = 0;
    uint64_t ns(uint64_t ticks) const {
        return static_cast<uint64_t>((ticks * ns_per_tick_) >> 32);
    }
    uint32_t lref_ = 0;  // The port's largest frame.
    Shaper port_;
    std::vector<Shaper> nodes_;  // Node 0 (the port's own traffic) has no shaper.
    std::vector<uint64_t> ef_;   // Scratch of dequeue(): each queue's and node's eligible time.
    std::unique_ptr<Queue[]> q_;
    size_t nq_ = 0;
    std::vector<uint16_t> weighted_;  // Indices of the weighted queues, DRR order.
    size_t drr_ = 0;
    uint64_t clock_ = 0;  // The last departure time.
    uint64_t rng_ = 0x9e3779b97f4a7c15ull;
    uint64_t max_pkts_ = 0;             // sched_buffers() of the queues' limits.
    std::atomic<uint64_t> backlog_{0};  // Packets held: queued, or departed and not yet taken.
    // An idle port's fast path: while nothing is queued, a packet that may leave at once is
    // accounted as departed at enqueue and waits here for the next dequeue(), which returns
    // these first (they left before anything queued after them).
    static constexpr uint32_t kReady = 64;
    Departure ready_[kReady];
    uint32_t ready_head_ = 0, ready_tail_ = 0;
    uint64_t queued_ = 0;          // Packets in the queues' FIFOs.
    uint64_t pending_shaped_ = 0;  // Bytes the fast path sent, for the port's shaper_bytes.
    // When the head of queue `q`'s node `k`, `len` bytes, may leave by the buckets it needs.
    uint64_t head_ready(const Queue& q, size_t k, uint32_t len, uint64_t port_ready) const;
    // A departure at `t` from queue `qi`'s node `k` (enqueued at `t_enq`): the buckets charged,
    // the queue's counters and the tunnel's.
    void depart(const SchedPlan& plan, size_t qi, size_t k, uint32_t len, uint64_t t,
                uint64_t t_enq, ConfigCounters& cc);
};

// Control thread, before `to` replaces `from`: a port whose scheduler signature is unchanged
// keeps its scheduler; returns how many were kept.
size_t carry_scheds(const Snapshot& from, Snapshot& to);
// Control thread, once no worker can reach `from`: the packets queued in schedulers `to` did not
// keep move into `to`'s.
void migrate_backlogs(Snapshot& from, Snapshot& to);

}  // namespace dscpgw
