// Neighbor resolution: MAC addresses of next hops learned by ARP and IPv6 Neighbor Discovery.
//
// Entries are created by the control side only (from the configuration: tunnels' `next_hop`); the
// set of entries is fixed while workers run, so lookups need no lock. Each entry's MAC is one
// 64-bit atomic word (bit 63: resolved), written by whichever side learns it (a worker that receives
// the ARP reply or Neighbor Advertisement, or the control thread) and read by workers once per
// packet: no torn reads, no locks.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "dataplane/packet.h"

namespace dscpgw {

inline constexpr size_t kMaxNeighbors = 256;
inline constexpr uint64_t kNeighborValid = uint64_t{1} << 63;

struct alignas(64) Neighbor {
    // Owner: workers and the control thread (rw, atomic); set-up: the control side.
    std::atomic<uint64_t> mac{0};       // kNeighborValid | the MAC in the low 48 bits; 0: unresolved.
    std::atomic<uint64_t> learned_tsc{0};  // When it was last confirmed.
    // Immutable once workers run.
    uint8_t family = 0;
    uint16_t port = 0;
    bool is_static = false;
    std::array<uint8_t, 16> addr{};
    // Control thread only.
    uint64_t last_probe_tsc = 0;
    uint32_t probes = 0;
};

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
    // Control side, before workers run. Returns the entry index, or -1 when full.
    int add(uint8_t family, uint16_t port, const uint8_t* addr);
    // An existing entry for (family, port, addr), or -1. Linear: the table holds next hops, not hosts.
    int find(uint8_t family, uint16_t port, const uint8_t* addr) const;
    Neighbor& at(size_t i) { return entries_[i]; }
    const Neighbor& at(size_t i) const { return entries_[i]; }
    size_t size() const { return size_; }

    // Workers: if the ARP packet or Neighbor Advertisement/Solicitation in `frame` tells the MAC of
    // one of our neighbors on `port`, record it. Returns true if it did.
    bool learn(uint16_t port, const ParsedPacket& pp, const uint8_t* frame, uint32_t len, uint64_t now_tsc);

private:
    std::array<Neighbor, kMaxNeighbors> entries_;
    size_t size_ = 0;
};

}  // namespace dscpgw
