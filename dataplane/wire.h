// Wire formats and big-endian load/store helpers.
//
// Inner headers sit at arbitrary offsets once a frame is encapsulated or a VLAN tag is removed, so
// every field is read and written through the memcpy-based helpers below, never through a cast
// pointer. The structs exist to document the layouts and to pin their sizes; code addresses fields
// by the offsets next to them.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dscpgw::wire {

inline uint16_t load16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_bswap16(v);
}

inline uint32_t load32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return __builtin_bswap32(v);
}

inline void store16(uint8_t* p, uint16_t v) {
    v = __builtin_bswap16(v);
    std::memcpy(p, &v, sizeof v);
}

inline void store32(uint8_t* p, uint32_t v) {
    v = __builtin_bswap32(v);
    std::memcpy(p, &v, sizeof v);
}

// An IPv6 source and destination (32 bytes at `a`, as they lie) as one 64-bit flow-cache key
// word: each 64-bit word rotated apart before they are XORed, so that addresses alike in their
// prefixes or in their ends do not cancel. A digest: a hit compares the addresses whole
// (same32()).
[[gnu::always_inline]] inline uint64_t ipv6_addrs_digest(const uint8_t* a) {
    uint64_t w[4];
    std::memcpy(w, a, sizeof w);
    return w[0] ^ std::rotl(w[1], 16) ^ std::rotl(w[2], 32) ^ std::rotl(w[3], 48);
}

// Whether the 32 bytes at `a` and `b` are equal, without a branch.
[[gnu::always_inline]] inline bool same32(const uint8_t* a, const uint8_t* b) {
    uint64_t x[4], y[4];
    std::memcpy(x, a, sizeof x);
    std::memcpy(y, b, sizeof y);
    return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) == 0;
}

inline constexpr uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr uint16_t kEtherTypeVlan = 0x8100;
inline constexpr uint16_t kEtherTypeQinQ = 0x88a8;
inline constexpr uint16_t kEtherTypeTeb = 0x6558;  // Transparent Ethernet Bridging.

inline constexpr uint8_t kProtoUdp = 17;
inline constexpr uint16_t kRoceV2Port = 4791;
inline constexpr uint16_t kVxlanPort = 4789;
inline constexpr uint16_t kGenevePort = 6081;
inline constexpr uint8_t kBthOpcodeCnp = 0x81;

// Ethernet II.
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                    Destination MAC (6 bytes)                  |
// +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                               |      Source MAC (6 bytes)     |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
// |                                                               |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |          EtherType            |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
struct EthHdr {
    uint8_t dst[6];
    uint8_t src[6];
    uint8_t ether_type[2];
};
static_assert(sizeof(EthHdr) == 14);
inline constexpr size_t kEthLen = 14;
inline constexpr size_t kEthTypeOff = 12;

// IEEE 802.1Q tag, following the source MAC: TPID 0x8100, then PCP(3) DEI(1) VID(12), then the
// encapsulated EtherType.
struct VlanTag {
    uint8_t tpid[2];
    uint8_t tci[2];
};
static_assert(sizeof(VlanTag) == 4);
inline constexpr size_t kVlanLen = 4;

// IPv4 (RFC 791).
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |Version|  IHL  |   DSCP    |ECN|          Total Length         |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |         Identification        |Flags|      Fragment Offset    |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |  Time to Live |    Protocol   |         Header Checksum       |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                       Source Address                          |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                    Destination Address                        |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                    Options (IHL > 5)                          |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
struct Ipv4Hdr {
    uint8_t ver_ihl;
    uint8_t tos;
    uint8_t total_length[2];
    uint8_t id[2];
    uint8_t frag[2];
    uint8_t ttl;
    uint8_t proto;
    uint8_t csum[2];
    uint8_t src[4];
    uint8_t dst[4];
};
static_assert(sizeof(Ipv4Hdr) == 20);
inline constexpr size_t kIpv4Len = 20;
inline constexpr size_t kIpv4TosOff = 1;
inline constexpr size_t kIpv4TotalLenOff = 2;
inline constexpr size_t kIpv4FragOff = 6;
inline constexpr size_t kIpv4TtlOff = 8;
inline constexpr size_t kIpv4ProtoOff = 9;
inline constexpr size_t kIpv4CsumOff = 10;
inline constexpr size_t kIpv4SrcOff = 12;
inline constexpr size_t kIpv4DstOff = 16;
inline constexpr uint16_t kIpv4FlagDf = 0x4000;
inline constexpr uint16_t kIpv4FlagMf = 0x2000;
inline constexpr uint16_t kIpv4FragOffsetMask = 0x1fff;

// IPv6 (RFC 8200).
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |Version| Traffic Class |           Flow Label                  |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |         Payload Length        |  Next Header  |   Hop Limit   |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                     Source Address (16 bytes)                 |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                  Destination Address (16 bytes)               |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// The traffic class straddles bytes 0 and 1; see ipv6_tclass()/set_ipv6_tclass().
struct Ipv6Hdr {
    uint8_t vtc_flow[4];
    uint8_t payload_length[2];
    uint8_t next_header;
    uint8_t hop_limit;
    uint8_t src[16];
    uint8_t dst[16];
};
static_assert(sizeof(Ipv6Hdr) == 40);
inline constexpr size_t kIpv6Len = 40;
inline constexpr size_t kIpv6PayloadLenOff = 4;
inline constexpr size_t kIpv6NextHdrOff = 6;
inline constexpr size_t kIpv6HopLimitOff = 7;
inline constexpr size_t kIpv6SrcOff = 8;
inline constexpr size_t kIpv6DstOff = 24;

inline uint8_t ipv6_tclass(const uint8_t* ip6) {
    return static_cast<uint8_t>((load16(ip6) >> 4) & 0xff);
}

inline void set_ipv6_tclass(uint8_t* ip6, uint8_t tc) {
    uint16_t w = load16(ip6);
    w = static_cast<uint16_t>((w & 0xf00f) | (static_cast<uint16_t>(tc) << 4));
    store16(ip6, w);
}

// UDP (RFC 768).
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |          Source Port          |       Destination Port        |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |            Length             |           Checksum            |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
struct UdpHdr {
    uint8_t src_port[2];
    uint8_t dst_port[2];
    uint8_t length[2];
    uint8_t csum[2];
};
static_assert(sizeof(UdpHdr) == 8);
inline constexpr size_t kUdpLen = 8;

// VXLAN (RFC 7348 section 5).
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |R|R|R|R|I|R|R|R|            Reserved                           |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                VXLAN Network Identifier (VNI) |   Reserved    |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// The I flag must be set; reserved bits are sent as zero and ignored on receipt.
struct VxlanHdr {
    uint8_t flags;
    uint8_t reserved1[3];
    uint8_t vni[3];
    uint8_t reserved2;
};
static_assert(sizeof(VxlanHdr) == 8);
inline constexpr size_t kVxlanLen = 8;
inline constexpr uint8_t kVxlanFlagI = 0x08;

// Geneve (RFC 8926 section 3.4).
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |Ver|  Opt Len  |O|C|    Rsvd.  |          Protocol Type        |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |        Virtual Network Identifier (VNI)       |    Reserved   |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |                    Variable-Length Options                    |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// Opt Len counts 4-byte words. Each option: class(16) type(8, high bit = critical) R(3) len(5
// words) then data.
struct GeneveHdr {
    uint8_t ver_optlen;
    uint8_t flags;
    uint8_t protocol[2];
    uint8_t vni[3];
    uint8_t reserved;
};
static_assert(sizeof(GeneveHdr) == 8);
inline constexpr size_t kGeneveLen = 8;
inline constexpr size_t kGeneveOptHdrLen = 4;
inline constexpr uint8_t kGeneveFlagOam = 0x80;
inline constexpr uint8_t kGeneveFlagCritical = 0x40;
inline constexpr uint8_t kGeneveOptCritical = 0x80;

// InfiniBand Base Transport Header, carried by RoCEv2 right after UDP (IBTA Annex A17).
//  0                   1                   2                   3
//  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |    OpCode     |S|M|Pad|TVer |         Partition Key           |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |F|B|  Resv6    |            Destination QP                     |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// |A|  Resv7      |            Packet Sequence Number             |
// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
// The invariant CRC at the end of the packet masks the IP TOS/traffic class, TTL/hop limit, flow
// label, IPv4 header checksum and UDP checksum, so DSCP/ECN rewrites leave it valid.
struct BthHdr {
    uint8_t opcode;
    uint8_t flags;
    uint8_t pkey[2];
    uint8_t resv_dqp[4];
    uint8_t ack_psn[4];
};
static_assert(sizeof(BthHdr) == 12);
inline constexpr size_t kBthLen = 12;

// ECN codepoints (RFC 3168) in the low two bits of the TOS / traffic-class byte.
inline constexpr uint8_t kEcnNotEct = 0;
inline constexpr uint8_t kEcnEct1 = 1;
inline constexpr uint8_t kEcnEct0 = 2;
inline constexpr uint8_t kEcnCe = 3;

// RFC 1624 equation 3, HC' = ~(~HC + ~m + m') for one 16-bit word changing from m to m', in two
// steps: the change ~m + m' folded to 16 bits, then its sum with ~HC. A change the same for many
// packets (the encap cache's TOS re-mark) is summed once. Grouping does not alter the result:
// one's-complement addition is associative, and gives 0 only where every term is 0.
inline uint16_t csum_change16(uint16_t old_word, uint16_t new_word) {
    uint32_t sum = static_cast<uint32_t>(static_cast<uint16_t>(~old_word)) + new_word;
    sum = (sum & 0xffff) + (sum >> 16);  // Two 16-bit terms: one fold leaves 16 bits.
    return static_cast<uint16_t>(sum);
}
inline uint16_t csum_apply16(uint16_t hc, uint16_t change) {
    uint32_t sum = static_cast<uint32_t>(static_cast<uint16_t>(~hc)) + change;
    sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}
inline uint16_t csum_update16(uint16_t hc, uint16_t old_word, uint16_t new_word) {
    return csum_apply16(hc, csum_change16(old_word, new_word));
}

// One's-complement sum of big-endian 16-bit words (RFC 1071), unfolded; for the slow paths that
// build whole headers (ICMP errors, Neighbor Advertisements).
inline uint32_t sum16(const uint8_t* p, size_t n, uint32_t sum = 0) {
    for (size_t i = 0; i + 1 < n; i += 2) sum += load16(p + i);
    if (n & 1) sum += static_cast<uint32_t>(p[n - 1]) << 8;
    return sum;
}

// A 32-bit one's-complement sum folded to 16 bits (two steps suffice below 2^32), not inverted.
inline uint16_t fold(uint32_t sum) {
    sum = (sum & 0xffff) + (sum >> 16);
    sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(sum);
}

// A 64-bit sum of 32-bit words reduced to 32 bits by end-around carries: congruent modulo
// 0xffffffff and so modulo 0xffff (0xffffffff = 0xffff * 0x10001), and zero only if the sum was.
inline uint32_t fold64(uint64_t sum) {
    sum = (sum & 0xffffffffu) + (sum >> 32);
    sum = (sum & 0xffffffffu) + (sum >> 32);
    return static_cast<uint32_t>(sum);
}

// Whether an IPv4 header of `ihl` 32-bit words (5..15, all present) carries a right checksum: its
// one's-complement sum is 0xffff. Words are added as they lie in memory, 32 bits at a time into 64:
// a handful of instructions for the usual 20 bytes, where a 16-bit loop costs several times that.
// No fold: a one's-complement sum is the plain sum modulo 0xffff (2^16 = 1 there), with 0xffff
// standing for a nonzero multiple of it; a 32-bit word is its two 16-bit halves' sum modulo 0xffff,
// and the other byte order multiplies the sum by 256, prime to 0xffff. So the header is right
// exactly when the 64-bit sum is a nonzero multiple of 0xffff, which the compiler tests with one
// multiplication by the inverse of 0xffff and a compare.
[[gnu::always_inline]] inline bool ipv4_header_sum_ok(const uint8_t* ip, unsigned ihl) {
    const auto word = [ip](unsigned i) {
        uint32_t w;
        std::memcpy(&w, ip + 4 * i, sizeof w);
        return static_cast<uint64_t>(w);
    };
    uint64_t sum = word(0) + word(1) + word(2) + word(3) + word(4);  // The 20 fixed bytes.
    for (unsigned i = 5; i < ihl; ++i) sum += word(i);               // Options, if any.
    return sum != 0 && sum % 0xffff == 0;
}

inline uint16_t csum_finish(uint32_t sum) {
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
}

inline constexpr uint16_t kEtherTypeArp = 0x0806;

// An Ethernet/IPv4 ARP packet (RFC 826) of at least 28 bytes at `a` (`len` available): htype 1,
// ptype IPv4, address lengths 6 and 4. Operation at +6, sender MAC/IP at +8/+14, target at +18/+24.
inline constexpr size_t kArpLen = 28;
inline bool is_ipv4_arp(const uint8_t* a, size_t len) {
    return len >= kArpLen && load16(a) == 1 && load16(a + 2) == kEtherTypeIpv4 && a[4] == 6 &&
           a[5] == 4;
}
inline constexpr uint8_t kProtoIcmp = 1;
inline constexpr uint8_t kProtoIcmp6 = 58;

// Rewrites the TOS byte of an IPv4 header and patches its checksum incrementally. The one's-
// complement sum does not depend on byte order, so the words are taken as they lie in memory.
inline void set_ipv4_tos(uint8_t* ip4, uint8_t tos) {
    uint16_t old_word, csum;
    std::memcpy(&old_word, ip4, 2);
    std::memcpy(&csum, ip4 + kIpv4CsumOff, 2);
    uint8_t bytes[2] = {ip4[0], tos};
    uint16_t new_word;
    std::memcpy(&new_word, bytes, 2);
    csum = csum_update16(csum, old_word, new_word);
    std::memcpy(ip4 + kIpv4CsumOff, &csum, 2);
    ip4[kIpv4TosOff] = tos;
}

// The checksum change set_ipv4_tos() makes (csum_change16()) when the TOS of a header starting
// with byte `b0` (version/IHL) goes from `old_tos` to `new_tos`: for a cache that sees the same
// change on every packet of a flow (set_ipv4_tos_delta()). Never 0 where b0 is neither 0 nor
// 0xff (0x45 here; both terms are then nonzero), so 0 can mean "none".
inline uint16_t ipv4_tos_csum_delta(uint8_t b0, uint8_t old_tos, uint8_t new_tos) {
    const uint8_t old_bytes[2] = {b0, old_tos}, new_bytes[2] = {b0, new_tos};
    uint16_t m, m1;
    std::memcpy(&m, old_bytes, 2);
    std::memcpy(&m1, new_bytes, 2);
    return csum_change16(m, m1);
}

// An 802.1Q tag (TPID 0x8100, `tci`: PCP << 13 | VLAN) pushed behind the addresses of the Ethernet
// frame at `frame`, which must have kVlanLen bytes of room in front; the frame's new start.
inline uint8_t* push_vlan_tag(uint8_t* frame, uint16_t tci) {
    uint8_t* tagged = frame - kVlanLen;
    std::memmove(tagged, frame, 12);
    store16(tagged + 12, kEtherTypeVlan);
    store16(tagged + 14, tci);
    return tagged;
}

// set_ipv4_tos() with the checksum's change precomputed by ipv4_tos_csum_delta() for this header's
// first byte and TOS: the same bytes, one fold a packet instead of two.
inline void set_ipv4_tos_delta(uint8_t* ip4, uint8_t tos, uint16_t delta) {
    uint16_t csum;
    std::memcpy(&csum, ip4 + kIpv4CsumOff, 2);
    csum = csum_apply16(csum, delta);
    std::memcpy(ip4 + kIpv4CsumOff, &csum, 2);
    ip4[kIpv4TosOff] = tos;
}

}  // namespace dscpgw::wire
