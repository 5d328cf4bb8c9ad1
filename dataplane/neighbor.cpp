#include "dataplane/neighbor.h"

#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "dataplane/wire.h"

namespace dscpgw {

using namespace wire;

namespace {

// 32 bytes: rte_hash compares it with vector instructions.
struct NeighborKey {
    std::array<uint8_t, 16> addr{};
    uint16_t port = 0;
    uint8_t family = 0;
    uint8_t pad[13] = {};
};
static_assert(sizeof(NeighborKey) == 32);

struct NeighborRequest {
    NeighborKey key;
    uint64_t mac;
};
static_assert(sizeof(NeighborRequest) % 4 == 0);

NeighborKey make_key(uint8_t family, uint16_t port, const uint8_t* addr) {
    NeighborKey k;
    k.family = family;
    k.port = port;
    std::memcpy(k.addr.data(), addr, family == 4 ? 4 : 16);
    return k;
}

std::atomic<unsigned> g_tables{0};

}  // namespace

NeighborTable::NeighborTable() : entries_(new Neighbor[kMaxNeighbors]) {
    const std::string id = std::to_string(g_tables++);
    const std::string hname = "dscpgw_nbr_" + id, rname = "dscpgw_nbrq_" + id;
    rte_hash_parameters hp{};
    hp.name = hname.c_str();
    hp.entries = kMaxNeighbors * 2;
    hp.key_len = sizeof(NeighborKey);
    hp.hash_func = rte_hash_crc;
    hp.socket_id = SOCKET_ID_ANY;
    // Lock-free readers (the workers) against one writer (the control thread).
    hp.extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF;
    index_ = rte_hash_create(&hp);
    requests_ = rte_ring_create_elem(rname.c_str(), sizeof(NeighborRequest), 1024, SOCKET_ID_ANY,
                                     RING_F_SC_DEQ);
    if (index_ == nullptr || requests_ == nullptr) {
        rte_hash_free(index_);
        rte_ring_free(requests_);
        throw std::runtime_error(std::string("cannot allocate the neighbor table: ") +
                                 rte_strerror(rte_errno));
    }
}

NeighborTable::~NeighborTable() {
    rte_hash_free(index_);
    rte_ring_free(requests_);
}

int NeighborTable::add(uint8_t family, uint16_t port, const uint8_t* addr) {
    const int found = find(family, port, addr);
    if (found >= 0) return found;
    const size_t i = size_.load(std::memory_order_relaxed);
    if (i == kMaxNeighbors) return -1;
    Neighbor& n = entries_[i];
    n.family = family;
    n.port = port;
    std::memcpy(n.addr.data(), addr, family == 4 ? 4 : 16);
    const NeighborKey key = make_key(family, port, addr);
    // Published by the insertion (release in lock-free mode): readers see a complete entry.
    if (rte_hash_add_key_data(index_, &key, reinterpret_cast<void*>(i)) < 0) return -1;
    size_.store(i + 1, std::memory_order_release);
    return static_cast<int>(i);
}

int NeighborTable::find(uint8_t family, uint16_t port, const uint8_t* addr) const {
    const NeighborKey key = make_key(family, port, addr);
    void* data = nullptr;
    if (rte_hash_lookup_data(index_, &key, &data) < 0) return -1;
    return static_cast<int>(reinterpret_cast<uintptr_t>(data));
}

void NeighborTable::request(uint8_t family, uint16_t port, const uint8_t* addr, uint64_t mac) {
    NeighborRequest r{make_key(family, port, addr), mac};
    (void)rte_ring_mp_enqueue_elem(requests_, &r, sizeof r);
}

unsigned NeighborTable::drain_requests(uint64_t now_tsc) {
    NeighborRequest r[32];
    const unsigned n = rte_ring_sc_dequeue_burst_elem(requests_, r, sizeof r[0], 32, nullptr);
    for (unsigned i = 0; i < n; ++i) {
        const int idx = add(r[i].key.family, r[i].key.port, r[i].key.addr.data());
        if (idx < 0 || r[i].mac == 0) continue;
        Neighbor& e = entries_[static_cast<size_t>(idx)];
        if (e.is_static.load(std::memory_order_relaxed)) continue;
        e.mac.store(r[i].mac, std::memory_order_relaxed);
        e.learned_tsc.store(now_tsc, std::memory_order_relaxed);
    }
    return n;
}

bool NeighborTable::learn(uint16_t port, const ParsedPacket& pp, const uint8_t* frame, uint32_t len,
                          uint64_t now_tsc, bool adopt) {
    const uint8_t* ip = nullptr;
    const uint8_t* mac = nullptr;
    uint8_t family = 0;
    if (pp.ip_ver == 0) {
        // ARP (RFC 826), request or reply: the sender's addresses.
        const uint8_t* a = frame + pp.l3_off;
        if (load16(frame + pp.l3_off - 2) != kEtherTypeArp || !is_ipv4_arp(a, len - pp.l3_off))
            return false;
        family = 4;
        mac = a + 8;
        ip = a + 14;
        if (load32(ip) == 0) return false;  // An ARP probe (RFC 5227) has no sender yet.
    } else if (pp.ip_ver == 6 && pp.proto == kProtoIcmp6 && !pp.is_fragment && pp.l4_off != 0) {
        // Neighbor Advertisement: target + target link-layer address option; Neighbor
        // Solicitation: source + source link-layer address option (RFC 4861 sections 4.3, 4.4).
        const uint32_t end = pp.l3_off + pp.ip_len;
        const uint8_t* icmp = frame + pp.l4_off;
        if (pp.l4_off + 24u > end || frame[pp.l3_off + kIpv6HopLimitOff] != 255 || icmp[1] != 0)
            return false;
        uint8_t want_opt;
        if (icmp[0] == 136) {
            ip = icmp + 8;
            want_opt = 2;
        } else if (icmp[0] == 135) {
            ip = pp.src;
            want_opt = 1;
        } else {
            return false;
        }
        for (uint32_t off = pp.l4_off + 24u; off + 8 <= end;) {
            const uint8_t* o = frame + off;
            if (o[1] == 0) return false;  // A zero-length option is malformed (RFC 4861 4.6).
            if (o[0] == want_opt && o[1] == 1) {
                mac = o + 2;
                break;
            }
            off += o[1] * 8u;
        }
        if (mac == nullptr) return false;
        family = 6;
    } else {
        return false;
    }
    // A broadcast, multicast or zero MAC is never anyone's (RFC 1812 3.3.2).
    if (!unicast_mac(mac)) return false;
    const int i = find(family, port, ip);
    if (i < 0) {
        if (adopt) request(family, port, ip, kNeighborValid | pack_mac(mac));
        return false;
    }
    Neighbor& n = entries_[static_cast<size_t>(i)];
    if (n.is_static.load(std::memory_order_relaxed)) return false;
    n.mac.store(kNeighborValid | pack_mac(mac), std::memory_order_relaxed);
    n.learned_tsc.store(now_tsc, std::memory_order_relaxed);
    return true;
}

}  // namespace dscpgw
