#include "dataplane/neighbor.h"

#include <rte_cycles.h>
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

const char* neighbor_state_name(NeighborState s) {
    switch (s) {
        case NeighborState::incomplete:
            return "incomplete";
        case NeighborState::reachable:
            return "reachable";
        case NeighborState::stale:
            return "stale";
        case NeighborState::probe:
            return "probe";
        case NeighborState::failed:
            return "failed";
        case NeighborState::is_static:
            return "static";
    }
    return "?";
}

NeighborTable::NeighborTable() : entries_(new Neighbor[kMaxNeighbors]), learned_(kMaxPorts, 0) {
    const std::string id = std::to_string(g_tables++);
    const std::string hname = "dscpgw_nbr_" + id, rname = "dscpgw_nbrq_" + id;
    rte_hash_parameters hp{};
    hp.name = hname.c_str();
    hp.entries = kMaxNeighbors * 2;
    hp.key_len = sizeof(NeighborKey);
    hp.hash_func = rte_hash_crc;
    hp.socket_id = SOCKET_ID_ANY;
    // Lock-free readers (the workers) against one writer (the control thread). In this mode a
    // deleted key's slot is not freed by the deletion (no_free_on_del): remove() keeps it until
    // reclaim() knows no reader can be comparing against it.
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
    const auto hz = static_cast<double>(rte_get_tsc_hz());
    lock_tsc_ = static_cast<uint64_t>(kNeighborLockTime * hz);
    window_tsc_ = static_cast<uint64_t>(kNeighborProbeWindow * hz);
    grace_tsc_ = static_cast<uint64_t>(hz);
}

NeighborTable::~NeighborTable() {
    rte_hash_free(index_);
    rte_ring_free(requests_);
}

int NeighborTable::evict_lru_unresolved(uint16_t port, uint64_t now_tsc) {
    int victim = -1;
    const size_t n = size();
    for (size_t i = 0; i < n; ++i) {
        const Neighbor& e = entries_[i];
        if (!e.live || e.configured || e.port != port ||
            (e.mac.load(std::memory_order_relaxed) & kNeighborValid) != 0)
            continue;
        if (victim < 0 || e.used_tsc < entries_[static_cast<size_t>(victim)].used_tsc)
            victim = static_cast<int>(i);
    }
    if (victim >= 0) {
        remove(static_cast<size_t>(victim), now_tsc);
        ++evictions_;
    }
    return victim;
}

int NeighborTable::add(uint8_t family, uint16_t port, const uint8_t* addr, bool configured,
                       uint64_t now_tsc) {
    const int found = find(family, port, addr);
    if (found >= 0) {
        Neighbor& e = entries_[static_cast<size_t>(found)];
        if (configured && !e.configured) {
            // A learned host that the configuration now names: it moves to the configured share.
            if (configured_ == kMaxConfiguredNeighbors) return -1;
            e.configured = true;
            ++configured_;
            --learned_[e.port];
            --learned_total_;
        }
        e.used_tsc = now_tsc;
        return found;
    }
    if (port >= learned_.size()) return -1;
    if (configured) {
        if (configured_ == kMaxConfiguredNeighbors) return -1;
    } else if (learned_[port] >= kMaxLearnedPerPort || learned_total_ >= kMaxLearnedNeighbors) {
        if (evict_lru_unresolved(port, now_tsc) < 0) {
            ++refused_;
            return -1;
        }
    }
    size_t i;
    if (!free_.empty()) {
        i = free_.back();
        free_.pop_back();
    } else {
        i = size_.load(std::memory_order_relaxed);
        if (i == kMaxNeighbors) {
            ++refused_;
            return -1;
        }
    }
    Neighbor& n = entries_[i];
    n.mac.store(0, std::memory_order_relaxed);
    n.learned_tsc.store(0, std::memory_order_relaxed);
    n.probe_tsc.store(0, std::memory_order_relaxed);
    n.is_static.store(false, std::memory_order_relaxed);
    n.family = family;
    n.port = port;
    n.addr = {};
    std::memcpy(n.addr.data(), addr, family == 4 ? 4 : 16);
    n.configured = configured;
    n.failed = false;
    n.last_probe_tsc = n.failed_tsc = 0;
    n.used_tsc = now_tsc;
    n.probes = 0;
    const NeighborKey key = make_key(family, port, addr);
    // Published by the insertion (release in lock-free mode): readers see a complete entry.
    const int pos = rte_hash_add_key_data(index_, &key, reinterpret_cast<void*>(i));
    if (pos < 0) {
        free_.push_back(static_cast<uint32_t>(i));
        ++refused_;
        return -1;
    }
    n.key_pos = pos;
    n.live = true;
    if (i == size_.load(std::memory_order_relaxed)) size_.store(i + 1, std::memory_order_release);
    if (configured) {
        ++configured_;
    } else {
        ++learned_[port];
        ++learned_total_;
    }
    return static_cast<int>(i);
}

void NeighborTable::remove(size_t i, uint64_t now_tsc) {
    Neighbor& n = entries_[i];
    if (!n.live || n.configured) return;
    const NeighborKey key = make_key(n.family, n.port, n.addr.data());
    (void)rte_hash_del_key(index_, &key);
    // A worker that found the entry just before sees it unresolved, never another host's MAC; one
    // that kept its index sees another reuse count.
    n.reuse.store(n.reuse.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    n.mac.store(0, std::memory_order_relaxed);
    n.live = false;
    --learned_[n.port];
    --learned_total_;
    pending_.push_back({static_cast<uint32_t>(i), n.key_pos, now_tsc});
    n.key_pos = -1;
}

void NeighborTable::reclaim(uint64_t now_tsc) {
    size_t keep = 0;
    for (const Pending& p : pending_) {
        if (now_tsc - p.since < grace_tsc_) {
            pending_[keep++] = p;
            continue;
        }
        if (p.key_pos >= 0) (void)rte_hash_free_key_with_position(index_, p.key_pos);
        free_.push_back(p.index);
    }
    pending_.resize(keep);
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
        const int idx = add(r[i].key.family, r[i].key.port, r[i].key.addr.data(), false, now_tsc);
        if (idx < 0 || r[i].mac == 0) continue;
        Neighbor& e = entries_[static_cast<size_t>(idx)];
        if (e.is_static.load(std::memory_order_relaxed) ||
            (e.mac.load(std::memory_order_relaxed) & kNeighborValid) != 0)
            continue;  // Adopting never overwrites what is known.
        e.mac.store(r[i].mac, std::memory_order_relaxed);
        e.learned_tsc.store(now_tsc, std::memory_order_relaxed);
    }
    return n;
}

namespace {

bool in_prefix(const PortConf& pc, uint8_t family, const uint8_t* ip) {
    return family == 4 ? pc.has_ipv4 && prefix_match(pc.ipv4.data(), pc.ipv4_len, ip, false)
                       : pc.has_ipv6 && prefix_match(pc.ipv6.data(), pc.ipv6_len, ip, false);
}

}  // namespace

bool NeighborTable::learn(uint16_t port, const PortConf& pc, const ParsedPacket& pp,
                          const uint8_t* frame, uint32_t len, uint64_t now_tsc) {
    const uint8_t* ip = nullptr;
    const uint8_t* mac = nullptr;
    uint8_t family = 0;
    bool answer = false;  // An ARP reply or a solicited Neighbor Advertisement.
    if (pp.ip_ver == 0) {
        // ARP (RFC 826), request or reply: the sender's addresses.
        const uint8_t* a = frame + pp.l3_off;
        if (load16(frame + pp.l3_off - 2) != kEtherTypeArp || !is_ipv4_arp(a, len - pp.l3_off))
            return false;
        family = 4;
        mac = a + 8;
        ip = a + 14;
        answer = load16(a + 6) == 2;
        if (load32(ip) == 0) return false;  // An ARP probe (RFC 5227) has no sender yet.
    } else if (pp.ip_ver == 6 && pp.proto == kProtoIcmp6 && !pp.is_fragment && pp.l4_off != 0) {
        // Neighbor Advertisement: target + target link-layer address option; Neighbor
        // Solicitation: source + source link-layer address option (RFC 4861 sections 4.3, 4.4).
        const uint32_t end = pp.l3_off + pp.ip_len;
        const uint8_t* icmp = frame + pp.l4_off;
        if (pp.l4_off + 24u > end || frame[pp.l3_off + kIpv6HopLimitOff] != 255 || icmp[1] != 0)
            return false;
        // RFC 4861 7.1.1/7.1.2: the ICMPv6 checksum (over the pseudo-header) must verify.
        const uint32_t icmp_len = end - pp.l4_off;
        const uint32_t pseudo =
            sum16(frame + pp.l3_off + kIpv6SrcOff, 32) + icmp_len + uint32_t{kProtoIcmp6};
        if (csum_finish(sum16(icmp, icmp_len, pseudo)) != 0) return false;
        uint8_t want_opt;
        if (icmp[0] == 136) {
            ip = icmp + 8;
            want_opt = 2;
            answer = (icmp[4] & 0x40) != 0;  // Solicited.
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
    const bool outer = pc.role == PortRole::outer;
    // A routed LAN port's hosts are on its prefix; nothing else is learned or adopted.
    if (!outer && !in_prefix(pc, family, ip)) return false;
    const int i = find(family, port, ip);
    if (i < 0) {
        if (!outer) request(family, port, ip, kNeighborValid | pack_mac(mac));
        return false;
    }
    Neighbor& n = entries_[static_cast<size_t>(i)];
    if (n.is_static.load(std::memory_order_relaxed)) return false;
    const uint64_t want = kNeighborValid | pack_mac(mac);
    const uint64_t cur = n.mac.load(std::memory_order_relaxed);
    const uint64_t probe = n.probe_tsc.load(std::memory_order_relaxed);
    const bool asked = probe != 0 && now_tsc - probe < window_tsc_;
    // The underlay: only answers, and a first or new MAC only as the answer to our own probe.
    if (outer && !answer) return false;
    if ((cur & kNeighborValid) != 0) {
        if (now_tsc - n.learned_tsc.load(std::memory_order_relaxed) < lock_tsc_) return false;
        // A different MAC replaces a resolved one on the underlay only when the old one stopped
        // answering (the entry is being probed) and this answers the probe.
        if (cur != want && outer && !asked) return false;
    } else if (outer && !asked) {
        return false;
    }
    n.mac.store(want, std::memory_order_relaxed);
    n.learned_tsc.store(now_tsc, std::memory_order_relaxed);
    n.probe_tsc.store(0, std::memory_order_relaxed);
    return true;
}

}  // namespace dscpgw
