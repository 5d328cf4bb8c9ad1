// Neighbor resolution: MAC addresses of next hops and LAN hosts, learned by ARP and IPv6 Neighbor
// Discovery.
//
// Entries are created by the control thread only: from the configuration (tunnels' `next_hop`,
// [[neighbors]]) and from requests workers post on an MP/SC ring (a LAN host a decapsulated packet
// is for, or one that ARPed for the gateway). The index is an rte_hash in lock-free read mode with
// that single writer, so workers look up without locks. Each entry's MAC is one 64-bit atomic word
// (bit 63: resolved), written by whichever side learns it and read by workers once per packet.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "dataplane/packet.h"
#include "dataplane/snapshot.h"

struct rte_hash;
struct rte_ring;

namespace dscpgw {

// Room: configured entries (tunnels' next hops, [[neighbors]]) have their own share, so that no
// number of LAN hosts can make a reload fail; learned LAN hosts are capped per routed port.
inline constexpr size_t kMaxNeighbors = 8192;
inline constexpr size_t kMaxConfiguredNeighbors = 4096;
inline constexpr size_t kMaxLearnedNeighbors = kMaxNeighbors - kMaxConfiguredNeighbors;
inline constexpr size_t kMaxLearnedPerPort = 1024;
inline constexpr size_t kMaxStaticNeighbors = 2048;
inline constexpr uint64_t kNeighborValid = uint64_t{1} << 63;
// A resolved MAC is not changed again by ARP/ND within this time (1 s, as Linux's locktime).
inline constexpr double kNeighborLockTime = 1.0;
// An answer counts as one to our probe when it comes this soon after it.
inline constexpr double kNeighborProbeWindow = 3.0;

// RFC 4861 section 7.3.2's states, as the control thread derives them.
enum class NeighborState : uint8_t { incomplete, reachable, stale, probe, failed, is_static };
const char* neighbor_state_name(NeighborState s);

struct alignas(64) Neighbor {
    // Owner: workers and the control thread (rw, atomic); set-up: the control side.
    std::atomic<uint64_t> mac{0};  // kNeighborValid | the MAC in the low 48 bits; 0: unresolved.
    std::atomic<uint64_t> learned_tsc{0};  // When it was last confirmed.
    // When the control thread last probed an entry it had no confirmation for; 0 once an answer
    // confirmed it. Workers accept a first or changed MAC on an outer port only within
    // kNeighborProbeWindow of it: only answers to our own questions teach there.
    std::atomic<uint64_t> probe_tsc{0};
    // Owner: the control thread (+1 in remove(), before the slot may serve another host); workers:
    // ro. A worker that kept the slot's index (a decap flow cache entry for a routed LAN's host)
    // sees from it that the slot is no longer its host's.
    std::atomic<uint32_t> reuse{0};
    // Owner: the control thread (rw, when a snapshot that configures it is accepted); workers: ro.
    std::atomic<bool> is_static{false};
    // Written once by add(), before the entry is published in the index; immutable after.
    uint8_t family = 0;
    uint16_t port = 0;
    std::array<uint8_t, 16> addr{};
    // Control thread only.
    bool live = false;        // In the index (a removed entry waits to be reused).
    bool configured = false;  // A next hop or [[neighbors]] entry: never evicted or removed.
    bool failed = false;      // Unanswered kNeighborMaxProbes times.
    uint64_t last_probe_tsc = 0, failed_tsc = 0;
    uint64_t used_tsc = 0;  // Created or last asked for by a worker: LRU among unresolved hosts.
    uint32_t probes = 0;
    int32_t key_pos = -1;  // The index's key slot, freed once no worker can still be reading it.
};

// Not a group (broadcast, multicast) and not all zero: a MAC a frame may be sent to or learned as.
inline bool unicast_mac(const uint8_t* m) {
    return (m[0] & 1) == 0 && (m[0] | m[1] | m[2] | m[3] | m[4] | m[5]) != 0;
}

inline uint64_t pack_mac(const uint8_t* m) {
    uint64_t v = 0;
    for (int i = 0; i < 6; ++i) v = v << 8 | m[i];
    return v;
}

// The low 48 bits of `v` as the six bytes of a MAC: one byte swap and a six-byte store.
inline void unpack_mac(uint64_t v, uint8_t* m) {
    const uint64_t be = __builtin_bswap64(v << 16);
    std::memcpy(m, &be, 6);
}

class NeighborTable {
  public:
    NeighborTable();  // Needs rte_eal_init (the index and the request ring live in DPDK memory).
    ~NeighborTable();
    NeighborTable(const NeighborTable&) = delete;
    NeighborTable& operator=(const NeighborTable&) = delete;

    // Control thread only. Returns the entry index (existing or new), or -1 when there is no
    // room: `configured` entries within kMaxConfiguredNeighbors; learned ones within
    // kMaxLearnedPerPort per port and kMaxLearnedNeighbors, evicting the least recently used
    // unresolved learned entry of the port when full (resolved hosts are never evicted).
    int add(uint8_t family, uint16_t port, const uint8_t* addr, bool configured = false,
            uint64_t now_tsc = 0);
    // Control thread only: takes a learned entry out of the index; its slot is reused once no
    // worker can still hold its index (reclaim()).
    void remove(size_t i, uint64_t now_tsc);
    // Control thread only: makes removed slots older than a grace period (one second: a worker
    // looks an entry up and reads it within one burst) available again.
    void reclaim(uint64_t now_tsc);
    size_t configured_count() const { return configured_; }
    size_t learned_count(uint16_t port) const {
        return port < learned_.size() ? learned_[port] : 0;
    }
    uint64_t evictions() const { return evictions_; }
    uint64_t refused() const { return refused_; }
    // Any thread, lock-free: the entry for (family, port, addr), or -1.
    int find(uint8_t family, uint16_t port, const uint8_t* addr) const;
    Neighbor& at(size_t i) { return entries_[i]; }
    const Neighbor& at(size_t i) const { return entries_[i]; }
    size_t size() const { return size_.load(std::memory_order_acquire); }

    // Workers: asks the control thread to create an entry (with its MAC when known, else 0 to
    // resolve). Never blocks; a full ring drops the request (it will be asked again).
    void request(uint8_t family, uint16_t port, const uint8_t* addr, uint64_t mac);
    // Control thread: creates the requested entries. Returns how many requests it took.
    unsigned drain_requests(uint64_t now_tsc);

    // Workers: if the ARP packet or Neighbor Advertisement/Solicitation in `frame`, received on
    // port `port` (configured as `pc`), tells the MAC of one of our neighbors, record it. True if
    // recorded (learned or confirmed). Never a group or zero MAC. An outer port learns only its
    // existing entries (next hops, static), only from answers (ARP reply, solicited NA): a first
    // or changed MAC only within kNeighborProbeWindow of our probe, and a resolved entry only
    // after kNeighborLockTime. A routed inner port learns senders inside its prefix, adopting
    // (requesting) those it has no entry for; a resolved MAC changes only after the lock time.
    bool learn(uint16_t port, const PortConf& pc, const ParsedPacket& pp, const uint8_t* frame,
               uint32_t len, uint64_t now_tsc);

  private:
    int evict_lru_unresolved(uint16_t port, uint64_t now_tsc);

    std::unique_ptr<Neighbor[]> entries_;
    std::atomic<size_t> size_{0};  // High-water mark: entries [0, size) may be in use.
    uint64_t lock_tsc_ = 0, window_tsc_ = 0, grace_tsc_ = 0;
    // Control thread only.
    std::vector<uint32_t> free_;
    struct Pending {
        uint32_t index;
        int32_t key_pos;
        uint64_t since;
    };
    std::vector<Pending> pending_;
    std::vector<size_t> learned_;  // Per port.
    size_t configured_ = 0, learned_total_ = 0;
    uint64_t evictions_ = 0, refused_ = 0;
    rte_hash* index_ = nullptr;
    rte_ring* requests_ = nullptr;
};

}  // namespace dscpgw
