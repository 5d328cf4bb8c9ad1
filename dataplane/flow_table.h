// A worker's table of RoCE conversations: (source, destination, destination QP) with packets,
// bytes and CNPs. Fixed size, allocated once; a packet updates a slot in place and allocates
// nothing. Four-way set-associative: a new conversation takes a free slot of its set, else the one
// that has been idle longest, so idle conversations are evicted by active ones and memory stays
// bounded whatever the traffic.
//
// Single writer (the worker); the control thread reads concurrently. A slot's key is guarded by a
// sequence number (odd while the worker rewrites it); the reader retries a slot whose number moved
// and the counters are relaxed atomics, so it never sees a torn key or a torn value.
#pragma once

#include <rte_hash_crc.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>

namespace dscpgw {

inline constexpr uint8_t kBthOpcodeCnp = 0x81;

// No padding: the key is hashed and copied as bytes.
struct FlowKey {
    uint8_t src[16] = {}, dst[16] = {};  // IPv4: the first four bytes, the rest zero.
    uint32_t dqp = 0;                     // Destination queue pair (24 bits).
    uint32_t family = 0;                  // 4 or 6.

    bool operator==(const FlowKey& o) const {
        return family == o.family && dqp == o.dqp && std::memcmp(src, o.src, 16) == 0 &&
               std::memcmp(dst, o.dst, 16) == 0;
    }
    bool operator<(const FlowKey& o) const {
        if (family != o.family) return family < o.family;
        if (dqp != o.dqp) return dqp < o.dqp;
        if (const int c = std::memcmp(src, o.src, 16); c != 0) return c < 0;
        return std::memcmp(dst, o.dst, 16) < 0;
    }
};

struct alignas(64) FlowSlot {
    std::atomic<uint32_t> seq{0};  // Odd: the key is being rewritten. 0: never used.
    // Owner: the worker (rw); the control thread reads under `seq`.
    FlowKey key;
    std::atomic<int16_t> tunnel{-1};
    std::atomic<uint8_t> decap{0};  // 1: the conversation comes out of the tunnel.
    std::atomic<uint64_t> born_tsc{0}, last_tsc{0};
    std::atomic<uint64_t> pkts{0}, bytes{0}, cnps{0};
};

struct FlowSample {
    FlowKey key;
    uint64_t born_tsc = 0, last_tsc = 0, pkts = 0, bytes = 0, cnps = 0;
    int16_t tunnel = -1;
    bool decap = false;
};

class FlowTable {
  public:
    static constexpr unsigned kWays = 4;

    // `entries` is rounded up to a power of two, at least kWays.
    explicit FlowTable(uint32_t entries) {
        uint32_t n = kWays;
        while (n < entries) n <<= 1;
        size_ = n;
        slots_ = std::make_unique<FlowSlot[]>(n);
    }

    uint32_t size() const { return size_; }
    const FlowSlot& slot(uint32_t i) const { return slots_[i]; }

    // Worker: counts one packet of `k`.
    void update(const FlowKey& k, int16_t tunnel, bool decap, uint32_t len, bool cnp,
                uint64_t now) {
        const uint32_t h = rte_hash_crc(&k, sizeof k, 0);
        FlowSlot* set = &slots_[(h * kWays) & (size_ - 1)];
        FlowSlot* victim = nullptr;  // A free slot, else the one idle longest.
        uint64_t victim_last = UINT64_MAX;
        for (unsigned w = 0; w < kWays; ++w) {
            FlowSlot& s = set[w];
            const uint32_t q = s.seq.load(std::memory_order_relaxed);
            if (q == 0) {
                if (victim_last != 0) victim = &s, victim_last = 0;
                continue;
            }
            if (s.key == k) {
                bump(s, tunnel, decap, len, cnp, now);
                return;
            }
            const uint64_t last = s.last_tsc.load(std::memory_order_relaxed) + 1;
            if (last < victim_last) victim = &s, victim_last = last;
        }
        const uint32_t q = victim->seq.load(std::memory_order_relaxed);
        if (q != 0) evictions_.store(evictions_.load(std::memory_order_relaxed) + 1,
                                     std::memory_order_relaxed);
        victim->seq.store(q | 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        victim->key = k;
        victim->pkts.store(0, std::memory_order_relaxed);
        victim->bytes.store(0, std::memory_order_relaxed);
        victim->cnps.store(0, std::memory_order_relaxed);
        victim->born_tsc.store(now, std::memory_order_relaxed);
        victim->seq.store((q | 1) + 1, std::memory_order_release);
        bump(*victim, tunnel, decap, len, cnp, now);
    }

    // Control thread: a consistent copy of slot `i`; false if unused or being rewritten.
    bool read(uint32_t i, FlowSample& out) const {
        const FlowSlot& s = slots_[i];
        const uint32_t q1 = s.seq.load(std::memory_order_acquire);
        if (q1 == 0 || (q1 & 1) != 0) return false;
        const auto rlx = std::memory_order_relaxed;
        std::memcpy(&out.key, &s.key, sizeof out.key);
        out.born_tsc = s.born_tsc.load(rlx);
        out.last_tsc = s.last_tsc.load(rlx);
        out.pkts = s.pkts.load(rlx);
        out.bytes = s.bytes.load(rlx);
        out.cnps = s.cnps.load(rlx);
        out.tunnel = s.tunnel.load(rlx);
        out.decap = s.decap.load(rlx) != 0;
        std::atomic_thread_fence(std::memory_order_acquire);
        return s.seq.load(rlx) == q1;
    }

    uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }

  private:
    static void bump(FlowSlot& s, int16_t tunnel, bool decap, uint32_t len, bool cnp,
                     uint64_t now) {
        const auto rel = std::memory_order_relaxed;
        s.pkts.store(s.pkts.load(rel) + 1, rel);
        s.bytes.store(s.bytes.load(rel) + len, rel);
        if (cnp) s.cnps.store(s.cnps.load(rel) + 1, rel);
        s.last_tsc.store(now, rel);
        s.tunnel.store(tunnel, rel);
        s.decap.store(decap ? 1 : 0, rel);
    }

    std::unique_ptr<FlowSlot[]> slots_;
    uint32_t size_ = 0;
    std::atomic<uint64_t> evictions_{0};
};

}  // namespace dscpgw
