// A worker's table of RoCE conversations: (source, destination, destination QP) with packets,
// bytes and CNPs. Fixed size, allocated once; a packet updates a slot in place and allocates
// nothing. Four-way set-associative: a new conversation takes a free slot of its set, else the one
// that has been idle longest, so idle conversations are evicted by active ones and memory stays
// bounded whatever the traffic.
//
// Single writer (the worker); the control thread reads concurrently. A slot's key is guarded by a
// sequence number (odd while the worker rewrites it); the reader retries a slot whose number moved.
// The key's words and the counters are relaxed atomics, so the reader never sees a torn key or a
// torn value and the program has no data race (the ThreadSanitizer run checks it).
#pragma once

#include <rte_branch_prediction.h>
#include <rte_byteorder.h>
#include <rte_hash_crc.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>

#include "dataplane/counters.h"

namespace dscpgw {

inline constexpr uint8_t kBthOpcodeCnp = 0x81;

// A conversation as the control thread reads it (the table stores PackedFlowKey, below).
struct FlowKey {
    uint8_t src[16] = {}, dst[16] = {};  // IPv4: the first four bytes, the rest zero.
    uint32_t dqp = 0;                    // Destination queue pair (24 bits).
    uint32_t family = 0;                 // 4 or 6.

    bool operator==(const FlowKey& o) const {
        uint64_t a[5], b[5];
        std::memcpy(a, this, sizeof a);
        std::memcpy(b, &o, sizeof b);
        return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3]) | (a[4] ^ b[4])) == 0;
    }
    bool operator<(const FlowKey& o) const {
        if (family != o.family) return family < o.family;
        if (dqp != o.dqp) return dqp < o.dqp;
        if (const int c = std::memcmp(src, o.src, 16); c != 0) return c < 0;
        return std::memcmp(dst, o.dst, 16) < 0;
    }
};

static_assert(sizeof(FlowKey) == 40);

// A conversation as the table stores it: the addresses as they lie in the packet (IPv4: source
// and destination in the first word, the other three zero), then the BTH's bytes 4..7 with the
// reserved byte cleared (the destination QP, network order) and the family above them. The worker
// builds it from the headers without byte swaps, and an IPv4 key hashes in two steps, not five;
// the family word is never zero, so an unused slot (all zero) matches no key.
struct PackedFlowKey {
    uint64_t w[5] = {0, 0, 0, 0, 0};

    bool v4() const { return (w[4] >> 32) == 4; }
    uint32_t hash() const {
        uint32_t h = rte_hash_crc_8byte(w[0], rte_hash_crc_8byte(w[4], 0));
        if (!v4()) {
            h = rte_hash_crc_8byte(w[1], h);
            h = rte_hash_crc_8byte(w[2], h);
            h = rte_hash_crc_8byte(w[3], h);
        }
        return h;
    }
    static PackedFlowKey of(const FlowKey& k) {
        PackedFlowKey p;
        if (k.family == 4) {
            std::memcpy(p.w, k.src, 4);
            std::memcpy(reinterpret_cast<uint8_t*>(p.w) + 4, k.dst, 4);
        } else {
            std::memcpy(p.w, k.src, 16);
            std::memcpy(p.w + 2, k.dst, 16);
        }
        p.w[4] = rte_cpu_to_be_32(k.dqp & 0xffffff) | uint64_t{k.family} << 32;
        return p;
    }
    FlowKey unpacked() const {
        FlowKey k;
        k.family = static_cast<uint32_t>(w[4] >> 32);
        k.dqp = rte_be_to_cpu_32(static_cast<uint32_t>(w[4])) & 0xffffff;
        if (v4()) {
            std::memcpy(k.src, w, 4);
            std::memcpy(k.dst, reinterpret_cast<const uint8_t*>(w) + 4, 4);
        } else {
            std::memcpy(k.src, w, 16);
            std::memcpy(k.dst, w + 2, 16);
        }
        return k;
    }
};

struct alignas(kWorkerBlockAlign) FlowSlot {
    std::atomic<uint32_t> seq{0};  // Odd: the key is being rewritten. 0: never used.
    std::atomic<int16_t> tunnel{-1};
    std::atomic<uint8_t> decap{0};  // 1: the conversation comes out of the tunnel.
    // Owner: the worker (rw); the control thread reads under `seq`. Relaxed atomic words (plain
    // moves on x86), so that the reader's retried copy is no data race either. The words a hit
    // reads and writes first share the slot's first cache line: key, last_tsc, pkts.
    std::atomic<uint64_t> key[5] = {};
    std::atomic<uint64_t> last_tsc{0}, pkts{0};
    std::atomic<uint64_t> bytes{0}, cnps{0}, born_tsc{0};

    bool key_is(const PackedFlowKey& k) const {
        const auto rlx = std::memory_order_relaxed;
        return ((key[0].load(rlx) ^ k.w[0]) | (key[1].load(rlx) ^ k.w[1]) |
                (key[2].load(rlx) ^ k.w[2]) | (key[3].load(rlx) ^ k.w[3]) |
                (key[4].load(rlx) ^ k.w[4])) == 0;
    }
    void set_key(const PackedFlowKey& k) {
        for (size_t i = 0; i < std::size(k.w); ++i) key[i].store(k.w[i], std::memory_order_relaxed);
    }
    FlowKey get_key() const {
        PackedFlowKey k;
        for (size_t i = 0; i < std::size(k.w); ++i) k.w[i] = key[i].load(std::memory_order_relaxed);
        return k.unpacked();
    }
};

// The packets of one conversation counted but not yet in the table; a cache line each (an entry
// of FlowRuns is found with a shift).
// `cnps` apart from `n`: GCC 12 otherwise adds the two as one vector, in five instructions.
struct alignas(64) FlowRun {
    uint32_t cnps = 0;
    uint64_t w[4] = {0, 0, 0, 0};  // Source and destination address bytes as in the packet.
    uint64_t tag =
        0;  // BTH bytes 4..7 | tunnel << 32 | decap << 48 | IPv4 << 49 | 1 << 50; 0: none.
    uint64_t bytes = 0;
    uint32_t n = 0;
};

// A worker's conversations of the burst, not yet in the table, direct-mapped by their destination
// QP's low bits: consecutive packets of one conversation (most bursts) accumulate in one entry,
// and queue pairs interleaved packet by packet reach the table once each per burst rather than
// once a packet. Two conversations on one entry take turns (the one leaving is written to the
// table).
struct FlowRuns {
    static constexpr unsigned kEntries = 16;
    FlowRun run[kEntries];
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
    // `evictions`: where to count evicted conversations (the worker's counter block), if anywhere
    // but the table itself.
    explicit FlowTable(uint32_t entries, Counter* evictions = nullptr) {
        if (evictions != nullptr) evictions_ = evictions;
        uint32_t n = kWays;
        while (n < entries) n <<= 1;
        size_ = n;
        slots_ = std::make_unique<FlowSlot[]>(n);
    }

    uint32_t size() const { return size_; }

    // Worker: counts one RoCE packet from its IP header and BTH, in its entry of `runs` until
    // another conversation takes the entry or flush(runs) writes them at the end of the burst.
    // IPv4 inline; IPv6 (longer addresses) out of line, so that it costs the IPv4 loop no
    // registers.
    void add(FlowRuns& runs, const uint8_t* l3, const uint8_t* bth, int16_t tunnel, bool decap,
             bool cnp, uint64_t now) {
        // Everything but the addresses in one word: BTH bytes 4..7 as they lie (reserved byte,
        // dest QP), then tunnel, direction, family and a valid bit.
        uint32_t qp_raw;
        std::memcpy(&qp_raw, bth + 4, 4);
        FlowRun& run = runs.run[(qp_raw >> 24) & (FlowRuns::kEntries - 1)];  // QP's low bits.
        const uint64_t tag = tag_of(qp_raw, tunnel, decap);
        if (unlikely((l3[0] >> 4) != 4)) {
            add_v6(run, l3, tag, cnp, now);
            return;
        }
        uint64_t a;
        std::memcpy(&a, l3 + 12, 8);  // Source and destination, contiguous.
        count4(run, a, tag, 1, static_cast<uint32_t>(l3[2] << 8 | l3[3]), cnp, now);
    }

    // Worker: counts `n` packets of one IPv4 RoCE conversation at once (`bytes` their IP
    // lengths, `cnps` of them CNPs): `addrs` the source and destination as they lie in the
    // packet, `qp_raw` the BTH's bytes 4..7 as they lie. The flow caches' hits (burst.h).
    void add4(FlowRuns& runs, uint64_t addrs, uint32_t qp_raw, int16_t tunnel, bool decap,
              uint32_t n, uint64_t bytes, uint32_t cnps, uint64_t now) {
        FlowRun& run = runs.run[(qp_raw >> 24) & (FlowRuns::kEntries - 1)];
        count4(run, addrs, tag_of(qp_raw, tunnel, decap), n, bytes, cnps, now);
    }

    // Worker: the same for IPv6, `addrs` the source and destination (32 bytes) as they lie.
    void add6(FlowRuns& runs, const uint8_t* addrs, uint32_t qp_raw, int16_t tunnel, bool decap,
              uint32_t n, uint64_t bytes, uint32_t cnps, uint64_t now) {
        FlowRun& run = runs.run[(qp_raw >> 24) & (FlowRuns::kEntries - 1)];
        count6(run, addrs, tag_of(qp_raw, tunnel, decap), n, bytes, cnps, now);
    }

    // Worker: writes every conversation of `runs` to the table (the end of a burst). A scan of
    // the entries, not a mask of the used ones: the mask would cost every packet a write.
    void flush(FlowRuns& runs, uint64_t now) {
        for (FlowRun& run : runs.run)
            if (run.n != 0) flush(run, now);
    }

    // One conversation's packets to the table.
    void flush(FlowRun& run, uint64_t now) {
        if (run.n == 0) return;
        PackedFlowKey k;
        const bool v4 = (run.tag >> 49 & 1) != 0;
        k.w[0] = run.w[0];
        if (!v4) {
            k.w[1] = run.w[1];
            k.w[2] = run.w[2];
            k.w[3] = run.w[3];
        }
        k.w[4] = (run.tag & 0xffffff00) | uint64_t{v4 ? 4u : 6u} << 32;
        update(k, static_cast<int16_t>(run.tag >> 32 & 0xffff), (run.tag >> 48 & 1) != 0, run.n,
               run.bytes, run.cnps, now);
        run.n = 0;
        run.bytes = run.cnps = 0;
        run.tag = 0;
    }

    // Counts `pkts` packets of `k` (`bytes` their IP length, `cnps` of them CNPs; `k.family` 4
    // or 6): tests, and callers with a key of their own.
    void update(const FlowKey& k, int16_t tunnel, bool decap, uint64_t pkts, uint64_t bytes,
                uint64_t cnps, uint64_t now) {
        update(PackedFlowKey::of(k), tunnel, decap, pkts, bytes, cnps, now);
    }

    // Worker: the same from the table's own form of the key. A hit reads only the keys of the
    // set; the victim (a free slot, else the one idle longest) is looked for on a miss.
    void update(const PackedFlowKey& k, int16_t tunnel, bool decap, uint64_t pkts, uint64_t bytes,
                uint64_t cnps, uint64_t now) {
        FlowSlot* set = &slots_[(k.hash() * kWays) & (size_ - 1)];
        for (unsigned w = 0; w < kWays; ++w) {
            if (set[w].key_is(k)) {
                bump(set[w], tunnel, decap, pkts, bytes, cnps, now);
                return;
            }
        }
        FlowSlot* victim = set;
        uint64_t victim_last = UINT64_MAX;
        for (unsigned w = 0; w < kWays; ++w) {
            FlowSlot& s = set[w];
            if (s.seq.load(std::memory_order_relaxed) == 0) {
                victim = &s;
                break;
            }
            const uint64_t last = s.last_tsc.load(std::memory_order_relaxed);
            if (last < victim_last) victim = &s, victim_last = last;
        }
        const uint32_t q = victim->seq.load(std::memory_order_relaxed);
        if (q != 0) evictions_->inc();
        victim->seq.store(q | 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        victim->set_key(k);
        victim->pkts.store(0, std::memory_order_relaxed);
        victim->bytes.store(0, std::memory_order_relaxed);
        victim->cnps.store(0, std::memory_order_relaxed);
        victim->born_tsc.store(now, std::memory_order_relaxed);
        victim->seq.store((q | 1) + 1, std::memory_order_release);
        bump(*victim, tunnel, decap, pkts, bytes, cnps, now);
    }

    // Control thread: a consistent copy of slot `i`; false if unused or being rewritten.
    bool read(uint32_t i, FlowSample& out) const {
        const FlowSlot& s = slots_[i];
        const uint32_t q1 = s.seq.load(std::memory_order_acquire);
        if (q1 == 0 || (q1 & 1) != 0) return false;
        const auto rlx = std::memory_order_relaxed;
        out.key = s.get_key();
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

    uint64_t evictions() const { return evictions_->get(); }
    // The slots, for tests of their layout (tests/unit/test_layout.cpp).
    const FlowSlot* slot_array() const { return slots_.get(); }

  private:
    // A run's tag but for the family bit.
    static uint64_t tag_of(uint32_t qp_raw, int16_t tunnel, bool decap) {
        return qp_raw | uint64_t{static_cast<uint16_t>(tunnel)} << 32 | uint64_t{decap} << 48 |
               uint64_t{1} << 50;
    }

    // add() and add4() for IPv4 addresses `a` in `run` (the entry of the QP's low bits), `tag`
    // without the IPv4 bit.
    [[gnu::always_inline]] void count4(FlowRun& run, uint64_t a, uint64_t tag, uint32_t n,
                                       uint64_t bytes, uint32_t cnps, uint64_t now) {
        const uint64_t tag4 = tag | uint64_t{1} << 49;
        if (((a ^ run.w[0]) | (tag4 ^ run.tag)) != 0) {
            flush(run, now);
            run.w[0] = a;
            run.tag = tag4;
        }
        run.n += n;
        run.bytes += bytes;
        run.cnps += cnps;
    }

    // add() for an IPv6 packet, `tag` without the IPv4 bit.
    __attribute__((noinline)) void add_v6(FlowRun& run, const uint8_t* l3, uint64_t tag, bool cnp,
                                          uint64_t now) {
        count6(run, l3 + 8, tag, 1, 40 + static_cast<uint32_t>(l3[4] << 8 | l3[5]), cnp, now);
    }

    // add_v6() and add6() for the IPv6 source and destination at `addrs` (32 bytes) in `run`.
    [[gnu::always_inline]] void count6(FlowRun& run, const uint8_t* addrs, uint64_t tag, uint32_t n,
                                       uint64_t bytes, uint32_t cnps, uint64_t now) {
        uint64_t a[4];
        std::memcpy(a, addrs, 32);
        if (((a[0] ^ run.w[0]) | (a[1] ^ run.w[1]) | (a[2] ^ run.w[2]) | (a[3] ^ run.w[3]) |
             (tag ^ run.tag)) != 0) {
            flush(run, now);
            std::memcpy(run.w, a, 32);
            run.tag = tag;
        }
        run.n += n;
        run.bytes += bytes;
        run.cnps += cnps;
    }

    static void bump(FlowSlot& s, int16_t tunnel, bool decap, uint64_t pkts, uint64_t bytes,
                     uint64_t cnps, uint64_t now) {
        const auto rel = std::memory_order_relaxed;
        s.pkts.store(s.pkts.load(rel) + pkts, rel);
        s.bytes.store(s.bytes.load(rel) + bytes, rel);
        if (cnps != 0) s.cnps.store(s.cnps.load(rel) + cnps, rel);
        s.last_tsc.store(now, rel);
        s.tunnel.store(tunnel, rel);
        s.decap.store(decap ? 1 : 0, rel);
    }

    std::unique_ptr<FlowSlot[]> slots_;
    uint32_t size_ = 0;
    Counter own_evictions_;
    Counter* evictions_ = &own_evictions_;  // The worker's flow_evictions counter when given.
};

}  // namespace dscpgw
