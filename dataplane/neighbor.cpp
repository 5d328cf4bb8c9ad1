#include "dataplane/neighbor.h"

#include <cstring>

#include "dataplane/wire.h"

namespace dscpgw {

using namespace wire;

int NeighborTable::add(uint8_t family, uint16_t port, const uint8_t* addr) {
    const int found = find(family, port, addr);
    if (found >= 0) return found;
    if (size_ == kMaxNeighbors) return -1;
    Neighbor& n = entries_[size_];
    n.family = family;
    n.port = port;
    std::memcpy(n.addr.data(), addr, family == 4 ? 4 : 16);
    return static_cast<int>(size_++);
}

int NeighborTable::find(uint8_t family, uint16_t port, const uint8_t* addr) const {
    const size_t alen = family == 4 ? 4 : 16;
    for (size_t i = 0; i < size_; ++i) {
        const Neighbor& n = entries_[i];
        if (n.family == family && n.port == port && std::memcmp(n.addr.data(), addr, alen) == 0)
            return static_cast<int>(i);
    }
    return -1;
}

bool NeighborTable::learn(uint16_t port, const ParsedPacket& pp, const uint8_t* frame, uint32_t len,
                          uint64_t now_tsc) {
    const uint8_t* ip = nullptr;
    const uint8_t* mac = nullptr;
    uint8_t family = 0;
    if (pp.ip_ver == 0) {
        // ARP (RFC 826), request or reply: the sender's addresses.
        const uint8_t* a = frame + pp.l3_off;
        if (load16(frame + pp.l3_off - 2) != kEtherTypeArp || len < pp.l3_off + 28u) return false;
        if (load16(a) != 1 || load16(a + 2) != kEtherTypeIpv4 || a[4] != 6 || a[5] != 4) return false;
        family = 4;
        mac = a + 8;
        ip = a + 14;
    } else if (pp.ip_ver == 6 && pp.proto == kProtoIcmp6 && !pp.is_fragment && pp.l4_off != 0) {
        // Neighbor Advertisement: target + target link-layer address option; Neighbor
        // Solicitation: source + source link-layer address option (RFC 4861 sections 4.3, 4.4).
        const uint32_t end = pp.l3_off + pp.ip_len;
        const uint8_t* icmp = frame + pp.l4_off;
        if (pp.l4_off + 24u > end || frame[pp.l3_off + kIpv6HopLimitOff] != 255 || icmp[1] != 0) return false;
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
    const int i = find(family, port, ip);
    if (i < 0 || entries_[static_cast<size_t>(i)].is_static) return false;
    Neighbor& n = entries_[static_cast<size_t>(i)];
    n.mac.store(kNeighborValid | pack_mac(mac), std::memory_order_relaxed);
    n.learned_tsc.store(now_tsc, std::memory_order_relaxed);
    return true;
}

}  // namespace dscpgw
