// A small packet builder for unit tests. Lengths and checksums are computed here, independently of
// the code under test (a plain RFC 1071 sum over bytes, no DPDK helpers).
#pragma once

#include <arpa/inet.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/pipeline.h"

namespace dscpgw::test {

using Bytes = std::vector<uint8_t>;

inline uint32_t sum16(const uint8_t* p, size_t n, uint32_t sum = 0) {
    for (size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    if (n & 1) sum += static_cast<uint32_t>(p[n - 1] << 8);
    return sum;
}

inline uint16_t finish(uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

inline std::array<uint8_t, 16> ip(const std::string& s) {
    std::array<uint8_t, 16> a{};
    if (inet_pton(AF_INET, s.c_str(), a.data()) != 1) inet_pton(AF_INET6, s.c_str(), a.data());
    return a;
}

class PacketBuilder {
  public:
    PacketBuilder& eth(const std::array<uint8_t, 6>& dst = {2, 0, 0, 0, 0x10, 1},
                       const std::array<uint8_t, 6>& src = {2, 0, 0, 0, 0x10, 2},
                       uint16_t vlan = 0) {
        b_.insert(b_.end(), dst.begin(), dst.end());
        b_.insert(b_.end(), src.begin(), src.end());
        if (vlan != 0) {
            put16(0x8100);
            put16(vlan);
        }
        type_off_ = b_.size();
        put16(0);
        return *this;
    }
    PacketBuilder& ipv4(const std::string& src, const std::string& dst, uint8_t tos,
                        uint8_t proto = 17, uint16_t frag = 0x4000, size_t option_words = 0,
                        uint8_t ttl = 64, uint16_t id = 0x1234) {
        set16(type_off_, 0x0800);
        l3_ = b_.size();
        v6_ = false;
        b_.push_back(static_cast<uint8_t>(0x40 | (5 + option_words)));
        b_.push_back(tos);
        put16(0);
        put16(id);
        put16(frag);
        b_.push_back(ttl);
        b_.push_back(proto);
        put16(0);
        auto s = ip(src), d = ip(dst);
        b_.insert(b_.end(), s.begin(), s.begin() + 4);
        b_.insert(b_.end(), d.begin(), d.begin() + 4);
        for (size_t i = 0; i < option_words; ++i) put32(0x94040000);  // Router Alert.
        return *this;
    }
    PacketBuilder& ipv6(const std::string& src, const std::string& dst, uint8_t tc, uint8_t nh = 17,
                        uint8_t hlim = 64, uint32_t flow = 0x12345) {
        set16(type_off_, 0x86dd);
        l3_ = b_.size();
        v6_ = true;
        put32(0x60000000u | uint32_t{tc} << 20 | flow);
        put16(0);
        b_.push_back(nh);
        b_.push_back(hlim);
        auto s = ip(src), d = ip(dst);
        b_.insert(b_.end(), s.begin(), s.end());
        b_.insert(b_.end(), d.begin(), d.end());
        return *this;
    }
    PacketBuilder& udp(uint16_t sport, uint16_t dport, bool csum = true) {
        l4_ = b_.size();
        udp_csum_ = csum;
        put16(sport);
        put16(dport);
        put32(0);
        return *this;
    }
    PacketBuilder& bth(uint8_t opcode, uint32_t dqp = 0x12) {
        b_.push_back(opcode);
        b_.push_back(0);
        put16(0xffff);
        put32(dqp);
        put32(1);
        return *this;
    }
    PacketBuilder& payload(size_t n, uint8_t seed = 0) {
        for (size_t i = 0; i < n; ++i) b_.push_back(static_cast<uint8_t>(seed + i));
        return *this;
    }
    PacketBuilder& raw(const Bytes& x) {
        b_.insert(b_.end(), x.begin(), x.end());
        return *this;
    }
    PacketBuilder& vxlan(uint32_t vni, uint8_t flags = 0x08) {
        put32(uint32_t{flags} << 24);
        put32(vni << 8);
        return *this;
    }
    PacketBuilder& geneve(uint32_t vni, const Bytes& options = {}, uint8_t flags = 0,
                          uint16_t proto = 0x6558, uint8_t version = 0) {
        b_.push_back(static_cast<uint8_t>(version << 6 | (options.size() / 4)));
        b_.push_back(flags);
        put16(proto);
        put32(vni << 8);
        return raw(options);
    }

    Bytes build() {
        Bytes b = b_;
        if (l3_ == kNone) return b;
        const size_t end = b.size();
        if (!v6_) {
            store16(b, l3_ + 2, static_cast<uint16_t>(end - l3_));
            store16(b, l3_ + 10, finish(sum16(&b[l3_], (b[l3_] & 0xf) * 4u)));
        } else {
            store16(b, l3_ + 4, static_cast<uint16_t>(end - l3_ - 40));
        }
        if (l4_ != kNone) {
            const auto ulen = static_cast<uint16_t>(end - l4_);
            store16(b, l4_ + 4, ulen);
            if (udp_csum_) {
                uint32_t s = v6_ ? sum16(&b[l3_ + 8], 32) : sum16(&b[l3_ + 12], 8);
                s += 17 + ulen;
                s = sum16(&b[l4_], ulen, s);
                uint16_t c = finish(s);
                store16(b, l4_ + 6, c == 0 ? 0xffff : c);
            }
        }
        return b;
    }

  private:
    static constexpr size_t kNone = SIZE_MAX;
    void put16(uint16_t v) {
        b_.push_back(static_cast<uint8_t>(v >> 8));
        b_.push_back(static_cast<uint8_t>(v));
    }
    void put32(uint32_t v) {
        put16(static_cast<uint16_t>(v >> 16));
        put16(static_cast<uint16_t>(v));
    }
    void set16(size_t off, uint16_t v) {
        b_[off] = static_cast<uint8_t>(v >> 8);
        b_[off + 1] = static_cast<uint8_t>(v);
    }
    static void store16(Bytes& b, size_t off, uint16_t v) {
        b[off] = static_cast<uint8_t>(v >> 8);
        b[off + 1] = static_cast<uint8_t>(v);
    }
    Bytes b_;
    size_t type_off_ = 0, l3_ = kNone, l4_ = kNone;
    bool v6_ = false, udp_csum_ = true;
};

// Fills in the ICMPv6 checksum of an untagged Ethernet/IPv6 frame whose next header is ICMPv6.
inline Bytes with_icmp6_csum(Bytes b) {
    const size_t l3 = 14, l4 = l3 + 40, len = b.size() - l4;
    b[l4 + 2] = b[l4 + 3] = 0;
    uint32_t s = sum16(&b[l3 + 8], 32) + static_cast<uint32_t>(len) + 58;
    const uint16_t c = finish(sum16(&b[l4], len, s));
    b[l4 + 2] = static_cast<uint8_t>(c >> 8);
    b[l4 + 3] = static_cast<uint8_t>(c);
    return b;
}

// A buffer with headroom, as an mbuf gives the dataplane.
struct TestFrame {
    explicit TestFrame(const Bytes& pkt, size_t headroom = 128) : buf(headroom + pkt.size()) {
        std::copy(pkt.begin(), pkt.end(), buf.begin() + static_cast<long>(headroom));
        frame = {buf.data() + headroom, static_cast<uint32_t>(pkt.size()),
                 static_cast<uint32_t>(headroom)};
    }
    Bytes bytes() const { return Bytes(frame.data, frame.data + frame.len); }
    Bytes buf;
    Frame frame;
};

}  // namespace dscpgw::test
