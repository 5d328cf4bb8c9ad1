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
#include <memory>

#include "dataplane/packet.h"

struct rte_hash;
struct rte_ring;

namespace dscpgw {

inline constexpr size_t kMaxNeighbors = 4096;
inline constexpr uint64_t kNeighborValid = uint64_t{1} << 63;

struct alignas(64) Neighbor {
    // Owner: workers and the control thread (rw, atomic); set-up: the control side.
    std::atomic<uint64_t> mac{0};  // kNeighborValid | the MAC in the low 48 bits; 0: unresolved.
    std::atomic<uint64_t> learned_tsc{0};  // When it was last confirmed.
    // Owner: the control thread (rw, when a snapshot that configures it is accepted); workers: ro.
    std::atomic<bool> is_static{false};
    // Written once by add(), before the entry is published in the index; immutable after.
    uint8_t family = 0;
    uint16_t port = 0;
    std::array<uint8_t, 16> addr{};
    // Control thread only.
    uint64_t last_probe_tsc = 0;
    uint32_t probes = 0;
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

inline void unpack_mac(uint64_t v, uint8_t* m) {
    for (int i = 5; i >= 0; --i, v >>= 8) m[i] = static_cast<uint8_t>(v);
}

class NeighborTable {
  public:
    NeighborTable();  // Needs rte_eal_init (the index and the request ring live in DPDK memory).
    ~NeighborTable();
    NeighborTable(const NeighborTable&) = delete;
    NeighborTable& operator=(const NeighborTable&) = delete;

    // Control thread only. Returns the entry index (existing or new), or -1 when full.
    int add(uint8_t family, uint16_t port, const uint8_t* addr);
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

    // Workers: if the ARP packet or Neighbor Advertisement/Solicitation in `frame` tells the MAC of
    // one of our neighbors on `port`, record it; with `adopt`, a sender we have no entry for is
    // requested (routed LAN ports learn their hosts from the ARP they send). True if recorded.
    bool learn(uint16_t port, const ParsedPacket& pp, const uint8_t* frame, uint32_t len,
               uint64_t now_tsc, bool adopt = false);

  private:
    std::unique_ptr<Neighbor[]> entries_;
    std::atomic<size_t> size_{0};
    rte_hash* index_ = nullptr;
    rte_ring* requests_ = nullptr;
};

}  // namespace dscpgw
