// Table-driven tests of the per-packet path: built input, expected verdict and expected bytes.
#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include <cstring>
#include <map>
#include <random>
#include <set>

#include "config/config.h"
#include "dataplane/burst.h"
#include "dataplane/encap.h"
#include "dataplane/local.h"
#include "dataplane/neighbor.h"
#include "dataplane/pipeline.h"
#include "tests/unit/builder.h"

namespace dscpgw {
namespace {

using test::Bytes;
using test::PacketBuilder;

constexpr const char* kConfig = R"(
[[ports]]
name = "lan"
role = "inner"
device = "net_null0"
mtu = 1500

[[ports]]
name = "wan"
role = "outer"
device = "net_null1"
ipv4 = "198.18.0.1"
ipv6 = "2001:db8:18::1"
mac = "02:00:00:00:00:01"
mtu = 1600

[[tunnels]]
name = "g4"
type = "geneve"
vni = 100
remote = "198.18.7.7"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.20.0.0/16", "fd00:20::/48"]

[[tunnels]]
name = "v6"
type = "vxlan"
vni = 200
remote = "2001:db8:18::99"
next_hop_mac = "02:00:00:00:00:fd"
routes = ["10.30.0.0/16", "fd00:30::/48"]
ttl = 9

[[tunnels]]
name = "fixed"
type = "vxlan"
vni = 300
remote = "198.18.7.8"
next_hop_mac = "02:00:00:00:00:fc"
routes = ["10.40.0.0/16"]
outer_dscp = 34
ecn = "off"
inner_dscp_on_decap = "copy-outer"

[[tunnels]]
name = "narrow"
type = "geneve"
vni = 600
remote = "198.18.7.5"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.60.0.0/16"]
mtu = 1400

[[tunnels]]
name = "nh4"
type = "geneve"
vni = 700
remote = "198.18.7.9"
next_hop = "198.18.0.254"
routes = ["10.70.0.0/16"]

[[tunnels]]
name = "nh6"
type = "vxlan"
vni = 800
remote = "2001:db8:18::9"
next_hop = "fe80::1"
routes = ["10.80.0.0/16"]

[[classes]]
name = "cnp"
match = { udp_dst_port = 4791, bth_opcode = 0x81 }
dscp = 48

[[classes]]
name = "data"
match = { udp_dst_port = 4791 }
dscp = 26
)";

constexpr uint16_t kLan = 0, kWan = 1;
const std::array<uint8_t, 6> kWanMac{2, 0, 0, 0, 0, 1}, kNh4{2, 0, 0, 0, 0, 0xfe},
    kNh6{2, 0, 0, 0, 0, 0xfd}, kNhFixed{2, 0, 0, 0, 0, 0xfc};

class Pipeline : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        cfg_ = new Config(parse_config(kConfig, "unit.toml"));
        neighbors_ = new NeighborTable();
        snap_ =
            build_snapshot(*cfg_, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, *neighbors_).release();
    }
    static void TearDownTestSuite() {
        delete snap_;
        delete neighbors_;
        delete cfg_;
    }

    struct Out {
        Outcome v;
        Bytes bytes;
    };
    static Out run(uint16_t port, const Bytes& in, size_t headroom = 128) {
        test::TestFrame t(in, headroom);
        Out o;
        o.v = process_packet(*snap_, port, t.frame);
        if (o.v.drop == DropReason::none) o.bytes = t.bytes();
        return o;
    }

    static inline Config* cfg_ = nullptr;
    static inline Snapshot* snap_ = nullptr;
    static inline NeighborTable* neighbors_ = nullptr;
};

Bytes roce4(const std::string& src, const std::string& dst, uint8_t tos, uint8_t opcode = 4,
            size_t payload = 32, uint16_t sport = 49152, uint16_t vlan = 0) {
    return PacketBuilder()
        .eth({2, 0, 0, 0, 0x10, 1}, {2, 0, 0, 0, 0x10, 2}, vlan)
        .ipv4(src, dst, tos)
        .udp(sport, 4791)
        .bth(opcode)
        .payload(payload)
        .build();
}

Bytes roce6(const std::string& src, const std::string& dst, uint8_t tc, uint8_t opcode = 4) {
    return PacketBuilder()
        .eth()
        .ipv6(src, dst, tc)
        .udp(49152, 4791)
        .bth(opcode)
        .payload(32)
        .build();
}

uint16_t sport_of(const Bytes& outer, size_t ip_len) {
    return static_cast<uint16_t>(outer[14 + ip_len] << 8 | outer[15 + ip_len]);
}

// The inner packet with its TOS set, checksum recomputed by the builder: what marking must produce.
Bytes remark4(const std::string& src, const std::string& dst, uint8_t tos, uint8_t opcode = 4,
              size_t payload = 32, uint16_t sport = 49152) {
    return roce4(src, dst, tos, opcode, payload, sport);
}

TEST_F(Pipeline, EncapGeneveIpv4ExactBytes) {
    const Bytes in = roce4("10.10.0.5", "10.20.0.9", 0x02);
    const Out o = run(kLan, in);
    ASSERT_EQ(o.v.drop, DropReason::none);
    EXPECT_EQ(o.v.out_port, kWan);
    EXPECT_EQ(o.v.class_id, 1);
    EXPECT_EQ(o.v.dscp_in, 0);
    EXPECT_EQ(o.v.dscp_out, 26);
    EXPECT_TRUE(o.v.dscp_rewritten);
    const uint16_t sport = sport_of(o.bytes, 20);
    EXPECT_GE(sport, 49152);
    const Bytes inner = remark4("10.10.0.5", "10.20.0.9", 26 << 2 | 2);
    const Bytes expect = PacketBuilder()
                             .eth(kNh4, kWanMac)
                             .ipv4("198.18.0.1", "198.18.7.7", 26 << 2 | 2, 17, 0x4000, 0, 64, 0)
                             .udp(sport, 6081, false)
                             .geneve(100)
                             .raw(inner)
                             .build();
    EXPECT_EQ(o.bytes, expect);
}

TEST_F(Pipeline, EncapVxlanIpv6ExactBytes) {
    const Bytes in = roce4("10.10.0.5", "10.30.0.9", 0x01, 0x81);
    const Out o = run(kLan, in);
    ASSERT_EQ(o.v.drop, DropReason::none);
    const uint16_t sport = sport_of(o.bytes, 40);
    const uint32_t flow =
        (uint32_t{o.bytes[15]} & 0xf) << 16 | uint32_t{o.bytes[16]} << 8 | o.bytes[17];
    const Bytes inner = remark4("10.10.0.5", "10.30.0.9", 48 << 2 | 1, 0x81);
    const Bytes expect = PacketBuilder()
                             .eth(kNh6, kWanMac)
                             .ipv6("2001:db8:18::1", "2001:db8:18::99", 48 << 2 | 1, 17, 9, flow)
                             .udp(sport, 4789, true)
                             .vxlan(200)
                             .raw(inner)
                             .build();
    EXPECT_EQ(o.bytes, expect);
    EXPECT_EQ(flow & 0x3fff, sport & 0x3fff) << "flow label and source port carry the same hash";
}

TEST_F(Pipeline, EncapIpv6InnerAndFixedOuterDscp) {
    const Out o = run(kLan, roce6("fd00:10::1", "fd00:20::1", 46 << 2 | 3));
    ASSERT_EQ(o.v.drop, DropReason::none);
    EXPECT_EQ(o.bytes[15], 26 << 2 | 3) << "outer TOS inherits DSCP 26 and CE";
    const Bytes inner(o.bytes.begin() + 50, o.bytes.end());
    EXPECT_EQ(inner, PacketBuilder()
                         .eth()
                         .ipv6("fd00:10::1", "fd00:20::1", 26 << 2 | 3)
                         .udp(49152, 4791)
                         .bth(4)
                         .payload(32)
                         .build());

    const Out f = run(kLan, roce4("10.10.0.5", "10.40.0.1", 0x02));
    ASSERT_EQ(f.v.drop, DropReason::none);
    EXPECT_EQ(f.bytes[15], 34 << 2) << "fixed outer DSCP 34, ecn off -> Not-ECT";
    EXPECT_EQ(f.bytes[50 + 15], 26 << 2 | 2) << "inner still marked, ECN kept";
}

TEST_F(Pipeline, EncapStripsVlanAndPadding) {
    Bytes in = roce4("10.10.0.5", "10.20.0.9", 0, 4, 0, 49152, 7);
    const size_t ip_len = in.size() - 18;
    in.resize(in.size() + 6, 0xee);  // Trailing Ethernet padding.
    const Out o = run(kLan, in);
    ASSERT_EQ(o.v.drop, DropReason::none);
    EXPECT_EQ(o.bytes.size(), 50 + 14 + ip_len);
    EXPECT_EQ(Bytes(o.bytes.begin() + 50, o.bytes.end()),
              remark4("10.10.0.5", "10.20.0.9", 26 << 2, 4, 0));
}

TEST_F(Pipeline, FlowHashStableAndSpread) {
    std::set<uint16_t> ports;
    for (uint16_t f = 0; f < 256; ++f) {
        const Out a =
            run(kLan, roce4("10.10.0.5", "10.20.0.9", 0, 4, 8, static_cast<uint16_t>(49152 + f)));
        const Out b =
            run(kLan, roce4("10.10.0.5", "10.20.0.9", 0, 4, 99, static_cast<uint16_t>(49152 + f)));
        ASSERT_EQ(sport_of(a.bytes, 20), sport_of(b.bytes, 20)) << "flow " << f;
        ports.insert(sport_of(a.bytes, 20));
    }
    EXPECT_GE(ports.size(), 240u) << "256 flows should hit nearly 256 distinct ports";
}

TEST_F(Pipeline, Rfc6040DecapTable) {
    // Expected inner ECN for [outer][inner]; -1: drop (RFC 6040 section 4.2).
    const int table[4][4] = {
        {0, 1, 2, 3},   // Outer Not-ECT.
        {0, 1, 1, 3},   // Outer ECT(1): ECT(0) inner becomes ECT(1).
        {0, 1, 2, 3},   // Outer ECT(0).
        {-1, 3, 3, 3},  // Outer CE.
    };
    for (uint8_t oe = 0; oe < 4; ++oe) {
        for (uint8_t ie = 0; ie < 4; ++ie) {
            const Bytes inner = roce4("10.20.0.9", "10.10.0.5", static_cast<uint8_t>(26 << 2 | ie));
            const Bytes outer =
                PacketBuilder()
                    .eth(kWanMac, kNh4)
                    .ipv4("198.18.7.7", "198.18.0.1", static_cast<uint8_t>(26 << 2 | oe))
                    .udp(50000, 6081, false)
                    .geneve(100)
                    .raw(inner)
                    .build();
            const Out o = run(kWan, outer);
            if (table[oe][ie] < 0) {
                EXPECT_EQ(o.v.drop, DropReason::ecn_ce_on_not_ect);
                continue;
            }
            ASSERT_EQ(o.v.drop, DropReason::none) << int(oe) << "/" << int(ie);
            EXPECT_EQ(o.v.out_port, kLan);
            EXPECT_EQ(o.bytes, roce4("10.20.0.9", "10.10.0.5",
                                     static_cast<uint8_t>(26 << 2 | table[oe][ie])))
                << "outer " << int(oe) << " inner " << int(ie);
            EXPECT_EQ(o.v.ce_marked, table[oe][ie] == 3 && ie != 3);
            EXPECT_FALSE(o.v.outer_remarked);
        }
    }
}

TEST_F(Pipeline, DecapVxlanIpv6CopyOuterAndRemarked) {
    const Bytes inner = roce6("fd00:30::1", "fd00:10::1", 26 << 2 | 2);
    const Bytes outer = PacketBuilder()
                            .eth(kWanMac, kNh6)
                            .ipv6("2001:db8:18::99", "2001:db8:18::1", 0)
                            .udp(50000, 4789)
                            .vxlan(200)
                            .raw(inner)
                            .build();
    Out o = run(kWan, outer);
    ASSERT_EQ(o.v.drop, DropReason::none);
    EXPECT_EQ(o.bytes, inner) << "preserve";
    EXPECT_TRUE(o.v.outer_remarked)
        << "outer DSCP 0 under an inherit tunnel with inner 26: bleached";

    const Bytes inner4 = roce4("10.40.0.1", "10.10.0.5", 26 << 2 | 1);
    const Bytes outer4 = PacketBuilder()
                             .eth(kWanMac, kNhFixed)
                             .ipv4("198.18.7.8", "198.18.0.1", 12 << 2)
                             .udp(50000, 4789, false)
                             .vxlan(300)
                             .raw(inner4)
                             .build();
    o = run(kWan, outer4);
    ASSERT_EQ(o.v.drop, DropReason::none);
    EXPECT_EQ(o.bytes, roce4("10.40.0.1", "10.10.0.5", 12 << 2 | 1))
        << "copy-outer, ECN kept (ecn off)";
    EXPECT_TRUE(o.v.outer_remarked) << "fixed tunnel expects 34";
}

// Decapsulation hands the LAN IP (and on a transparent LAN ARP) only, without the bytes that
// trail the inner packet; a tunnel may keep inner VLAN tags and accept zero IPv6 UDP checksums.
TEST(Decap, DeliversOnlyWhatTheLanShouldSee) {
    const Config cfg = parse_config(R"(
[[ports]]
name = "lan"
role = "inner"
device = "a"
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
ipv6 = "2001:db8:18::1"
mtu = 9100
[[tunnels]]
name = "strict"
type = "vxlan"
vni = 1
remote = "2001:db8:18::99"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.20.0.0/16"]
[[tunnels]]
name = "lenient"
type = "vxlan"
vni = 2
remote = "2001:db8:18::99"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.30.0.0/16"]
inner_vlan = "keep"
udp6_zero_checksum_rx = true
)",
                                    "decap.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    auto decap = [&](uint32_t vni, const Bytes& inner, bool csum, Bytes* out = nullptr) {
        test::TestFrame t(PacketBuilder()
                              .eth()
                              .ipv6("2001:db8:18::99", "2001:db8:18::1", 0)
                              .udp(50000, 4789, csum)
                              .vxlan(vni)
                              .raw(inner)
                              .build());
        const Outcome o = process_packet(*snap, 1, t.frame);
        if (out != nullptr) *out = t.bytes();
        return o.drop;
    };
    const Bytes inner = roce4("10.20.0.9", "10.10.0.5", 0);
    Bytes out;
    EXPECT_EQ(decap(1, inner, false), DropReason::bad_checksum) << "zero checksum, strict";
    ASSERT_EQ(decap(2, inner, false, &out), DropReason::none) << "zero checksum allowed";
    EXPECT_EQ(out, inner);
    // 8,000 bytes after the inner IP packet are not delivered.
    Bytes trailing = inner;
    trailing.insert(trailing.end(), 8000, 0xee);
    ASSERT_EQ(decap(1, trailing, true, &out), DropReason::none);
    EXPECT_EQ(out, inner);
    const Bytes tagged = PacketBuilder()
                             .eth({2, 0, 0, 0, 0x10, 1}, {2, 0, 0, 0, 0x10, 2}, 100)
                             .ipv4("10.20.0.9", "10.10.0.5", 0)
                             .udp(1, 4791)
                             .bth(4)
                             .payload(16)
                             .build();
    EXPECT_EQ(decap(1, tagged, true), DropReason::inner_vlan);
    ASSERT_EQ(decap(2, tagged, true, &out), DropReason::none) << "inner_vlan = keep";
    EXPECT_EQ(out, tagged);
    // Transparent LAN: Ethernet/IPv4 ARP passes, shortened to its 28 bytes; IEEE link-local
    // destinations (here STP's 01:80:c2:00:00:00) never pass.
    Bytes arp = PacketBuilder().eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}).build();
    arp[12] = 0x08;
    arp[13] = 0x06;
    const Bytes arp_body = {0,  1,  8, 0, 6, 4, 0, 1, 2, 0, 0,  0,  0x10, 2,
                            10, 20, 0, 9, 0, 0, 0, 0, 0, 0, 10, 20, 0,    1};
    arp.insert(arp.end(), arp_body.begin(), arp_body.end());
    Bytes padded = arp;
    padded.insert(padded.end(), 18, 0);
    ASSERT_EQ(decap(1, padded, true, &out), DropReason::none);
    EXPECT_EQ(out, arp);
    Bytes stp = inner;
    std::copy_n(Bytes{0x01, 0x80, 0xc2, 0, 0, 0}.begin(), 6, stp.begin());
    EXPECT_EQ(decap(2, stp, true), DropReason::inner_link_local);
    Bytes not_link_local = inner;  // 01:80:c2:00:00:10 is outside the /44.
    std::copy_n(Bytes{0x01, 0x80, 0xc2, 0, 0, 0x10}.begin(), 6, not_link_local.begin());
    EXPECT_EQ(decap(1, not_link_local, true), DropReason::none);
}

// A jumbo LAN over a narrow tunnel: the config is accepted; packets exactly at the tunnel's MTU
// pass and one byte more gets the sender an ICMP error carrying what the tunnel carries; frames
// larger than the receiving port's MTU are dropped on ingress on both sides.
TEST(Mtu, JumboLanNarrowTunnelBoundaries) {
    const Config cfg = parse_config(R"(
[[ports]]
name = "lan"
role = "inner"
device = "a"
mtu = 9000
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
mtu = 1600
[[tunnels]]
name = "g"
type = "geneve"
vni = 100
remote = "198.18.7.7"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.20.0.0/16"]
mtu = 1400
)",
                                    "mtu.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    auto run_on = [&](uint16_t port, const Bytes& in) {
        test::TestFrame t(in);
        return process_packet(*snap, port, t.frame);
    };
    // roce4's IP packet: 20 + 8 + 12 + payload bytes; encapsulated over IPv4 + 50.
    Outcome o = run_on(0, roce4("10.10.0.5", "10.20.0.9", 0, 4, 1350 - 40));
    EXPECT_EQ(o.drop, DropReason::none) << "inner 1350 + 50 = the tunnel's 1400";
    o = run_on(0, roce4("10.10.0.5", "10.20.0.9", 0, 4, 1351 - 40));
    EXPECT_EQ(o.drop, DropReason::too_big);
    EXPECT_EQ(o.pmtu, 1350) << "the sender learns what the tunnel carries";
    o = run_on(0, roce4("10.10.0.5", "10.20.0.9", 0, 4, 9000 - 40));
    EXPECT_EQ(o.drop, DropReason::too_big);
    EXPECT_EQ(o.pmtu, 1350) << "a full jumbo packet from the LAN";
    o = run_on(0, roce4("10.10.0.5", "10.20.0.9", 0, 4, 9001 - 40));
    EXPECT_EQ(o.drop, DropReason::too_big);
    EXPECT_EQ(o.pmtu, 0) << "larger than the LAN port itself: dropped on ingress, no ICMP";
    auto outer = [&](size_t outer_ip_len) {
        const size_t inner_ip = outer_ip_len - 50;
        return PacketBuilder()
            .eth({2, 0, 0, 0, 0, 8}, {2, 0, 0, 0, 0, 0xfe})
            .ipv4("198.18.7.7", "198.18.0.1", 0)
            .udp(50000, 6081, false)
            .geneve(100)
            .raw(roce4("10.20.0.9", "10.10.0.5", 0, 4, inner_ip - 40))
            .build();
    };
    EXPECT_EQ(run_on(1, outer(1600)).drop, DropReason::none) << "exactly the outer port's MTU";
    EXPECT_EQ(run_on(1, outer(1601)).drop, DropReason::too_big) << "one byte more";
}

// ICMP errors from the underlay that quote the gateway's own tunnel packets lower the tunnel's
// path MTU (to a floor), others do not; the learned value ages back and survives a reload.
TEST(Mtu, PathMtuLearnedFromTheUnderlay) {
    const Config cfg = parse_config(std::string(kConfig), "unit.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    const TunnelConf& g4 = snap->tunnels[0];
    ASSERT_EQ(g4.name, "g4");
    // A tunnel packet as the gateway sends it, then the router's Fragmentation Needed about it.
    test::TestFrame sent(roce4("10.10.0.5", "10.20.0.9", 0, 4, 500));
    ASSERT_EQ(process_packet(*snap, kLan, sent.frame).drop, DropReason::none);
    const Bytes ours = sent.bytes();
    auto frag_needed = [&](uint16_t mtu, const Bytes& quoted, size_t quote_len = 28 + 8,
                           const std::string& to = "198.18.0.1") {
        Bytes icmp = {3, 4, 0, 0, 0, 0, static_cast<uint8_t>(mtu >> 8), static_cast<uint8_t>(mtu)};
        icmp.insert(icmp.end(), quoted.begin() + 14, quoted.begin() + 14 + quote_len);
        const uint16_t c = test::finish(test::sum16(icmp.data(), icmp.size()));
        icmp[2] = static_cast<uint8_t>(c >> 8);
        icmp[3] = static_cast<uint8_t>(c);
        return PacketBuilder()
            .eth(kWanMac, {2, 0, 0, 0, 0, 0xfe})
            .ipv4("198.18.9.1", to, 0, 1)
            .raw(icmp)
            .build();
    };
    auto deliver = [&](const Bytes& b) {
        test::TestFrame t(b);
        return process_packet(*snap, kWan, t.frame);
    };
    const auto path = [&] { return g4.path->mtu.load(); };
    EXPECT_EQ(path(), 1600u);
    Outcome o = deliver(frag_needed(1400, ours));
    EXPECT_EQ(o.local, LocalReply::path_mtu);
    EXPECT_EQ(o.tunnel_id, 0) << "lowered: counted for g4";
    EXPECT_EQ(path(), 1400u);
    // Now a DF packet that fit before gets the new, smaller MTU back.
    {
        test::TestFrame t(roce4("10.10.0.5", "10.20.0.9", 0, 4, 1400));
        const Outcome e = process_packet(*snap, kLan, t.frame);
        EXPECT_EQ(e.drop, DropReason::too_big);
        EXPECT_EQ(e.pmtu, 1350);
    }
    EXPECT_EQ(deliver(frag_needed(1500, ours)).local, LocalReply::path_mtu) << "consumed";
    EXPECT_EQ(path(), 1400u) << "a larger MTU never raises it";
    EXPECT_EQ(deliver(frag_needed(68, ours, 28)).local, LocalReply::path_mtu)
        << "only the UDP header quoted (RFC 792's minimum)";
    EXPECT_EQ(path(), 552u) << "never below 552 over IPv4";
    // Not ours: another source address in the quote, a wrong checksum, a quote too short, not
    // for our VTEP address.
    Bytes spoofed = ours;
    spoofed[14 + 12] = 10;
    EXPECT_EQ(deliver(frag_needed(600, spoofed)).drop, DropReason::not_tunnel);
    Bytes bad_csum = frag_needed(600, ours);
    bad_csum.back() ^= 1;
    EXPECT_EQ(deliver(bad_csum).drop, DropReason::not_tunnel);
    EXPECT_EQ(deliver(frag_needed(600, ours, 24)).drop, DropReason::not_tunnel);
    EXPECT_EQ(deliver(frag_needed(600, ours, 36, "198.18.0.2")).drop, DropReason::not_local);
    // Kept across a reload of the same tunnel; aged back after ten minutes.
    auto next = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    carry_path_mtus(*snap, *next);
    EXPECT_EQ(next->tunnels[0].path->mtu.load(), 552u);
    const uint64_t hz = rte_get_tsc_hz(), t0 = g4.path->lowered_tsc.load();
    EXPECT_EQ(age_path_mtus(*snap, t0 + (kPathMtuAgeSeconds - 1) * hz, hz), 0u);
    EXPECT_EQ(age_path_mtus(*snap, t0 + kPathMtuAgeSeconds * hz, hz), 1u);
    EXPECT_EQ(path(), 1600u);
}

// The flow caches' replacement (fill_way()): a set's first flow in the first way, which the hits
// compare first; a new flow there, the one it displaces moved to the second way and the second
// way's pushed out; a flow already in either way refilled where it is.
TEST(FlowCache, FillWayKeepsTheNewestInTheFirstWay) {
    struct Flow {
        int key = 0;  // 0: free.
    };
    Flow set[2];
    const auto fill = [&set](int key) {
        Flow& e = fill_way(
            set, [key](const Flow& f) { return f.key == key; },
            [](const Flow& f) { return f.key != 0; });
        e.key = key;
        return &e - set;
    };
    EXPECT_EQ(fill(1), 0);
    EXPECT_EQ(set[0].key, 1);
    EXPECT_EQ(set[1].key, 0);
    EXPECT_EQ(fill(1), 0);  // Refilled in place.
    EXPECT_EQ(fill(2), 0);  // 1 to the second way.
    EXPECT_EQ(set[1].key, 1);
    EXPECT_EQ(fill(1), 1);  // In the second way: refilled there, nothing moves.
    EXPECT_EQ(set[0].key, 2);
    EXPECT_EQ(fill(3), 0);  // 2 to the second way, 1 pushed out.
    EXPECT_EQ(set[0].key, 3);
    EXPECT_EQ(set[1].key, 2);
}

// The worker's encap flow cache: a hit gives what the slow way gives, byte for byte, and what may
// change under a snapshot (the next hop's MAC, the path MTU) or with it takes effect at once.
TEST(EncapCache, HitsEqualTheSlowWayAndFollowChanges) {
    const Config cfg = parse_config(kConfig, "unit.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    EncapCache cache;
    struct Run {
        Outcome v;
        Bytes bytes;
    };
    auto run = [&](const Snapshot& s, const Bytes& in, EncapCache* c, size_t headroom = 128) {
        test::TestFrame t(in, headroom);
        Run r;
        r.v = process_packet(s, kLan, t.frame, nullptr, nullptr, c);
        if (r.v.drop == DropReason::none) r.bytes = t.bytes();
        return r;
    };
    auto same = [](const Run& a, const Run& b) {
        return a.v.drop == b.v.drop && a.v.out_port == b.v.out_port &&
               a.v.class_id == b.v.class_id && a.v.tunnel_id == b.v.tunnel_id &&
               a.v.dscp_in == b.v.dscp_in && a.v.dscp_out == b.v.dscp_out &&
               a.v.dscp_rewritten == b.v.dscp_rewritten && a.v.outer_mapped == b.v.outer_mapped &&
               (a.v.roce_bth == nullptr) == (b.v.roce_bth == nullptr) &&
               a.v.tx_udp6_cksum == b.v.tx_udp6_cksum && a.v.pmtu == b.v.pmtu && a.bytes == b.bytes;
    };
    auto used = [&] {
        size_t n = 0;
        for (const EncapFlow& e : cache.flow) n += e.rest != 0;
        return n;
    };
    // Geneve and VXLAN, IPv4 and IPv6 outer, marked and unmarked, CNP and data, a fixed outer
    // DSCP, a non-RoCE UDP flow; each first fills its entry, then hits it.
    const std::vector<Bytes> flows = {
        roce4("10.10.0.5", "10.20.0.9", 0x02),
        roce4("10.10.0.5", "10.20.0.9", 26 << 2 | 1, 4, 500, 50000),
        roce4("10.10.0.5", "10.30.0.9", 0x01, 0x81),
        roce4("10.10.0.6", "10.40.0.9", 0x03),
        PacketBuilder()
            .eth()
            .ipv4("10.10.0.7", "10.20.1.1", 0x28)
            .udp(1234, 5678)
            .payload(64)
            .build(),
    };
    // Each flow forwarded by the slow way, then the same through the cache: filling, hitting.
    auto fill_then_hit = [&](const std::vector<Bytes>& list) {
        for (const Bytes& in : list) {
            const Run slow = run(*snap, in, nullptr);
            ASSERT_EQ(slow.v.drop, DropReason::none);
            EXPECT_TRUE(same(run(*snap, in, &cache), slow)) << "filling";
            EXPECT_TRUE(same(run(*snap, in, &cache), slow)) << "hitting";
        }
    };
    fill_then_hit(flows);
    EXPECT_EQ(used(), flows.size()) << "one entry a flow (no two collide here)";
    // Frames the cache must not take: each answered as the slow way answers it, twice.
    struct Edge {
        const char* what;
        Bytes frame;
    };
    auto as_slow_way = [&](const std::vector<Edge>& list) {
        for (const Edge& c : list) {
            const Run slow = run(*snap, c.frame, nullptr);
            EXPECT_TRUE(same(run(*snap, c.frame, &cache), slow)) << c.what;
            EXPECT_TRUE(same(run(*snap, c.frame, &cache), slow)) << c.what << ", again";
        }
    };
    // Another length, TTL and IP ID on a cached flow: only the key decides, the rest is the
    // packet's.
    const Bytes longer = PacketBuilder()
                             .eth({2, 0, 0, 0, 0x10, 1}, {2, 0, 0, 0, 0x10, 2})
                             .ipv4("10.10.0.5", "10.20.0.9", 0x02, 17, 0, 0, 3, 0x9999)
                             .udp(49152, 4791)
                             .bth(4)
                             .payload(1000)
                             .build();
    EXPECT_TRUE(same(run(*snap, longer, &cache), run(*snap, longer, nullptr)));
    // The hit really comes from the entry: a byte changed in it shows in the packet.
    {
        const Bytes& in = flows[0];
        EncapFlow* e = nullptr;
        for (EncapFlow& f : cache.flow)
            if (f.rest != 0 && f.notes.tunnel_id == 0 && f.max_ip_len == 1500 &&
                f.tos == (26 << 2 | 2))
                e = &f;
        ASSERT_NE(e, nullptr);
        e->hdr[0] ^= 0x80;
        const Run r = run(*snap, in, &cache);
        e->hdr[0] ^= 0x80;
        ASSERT_EQ(r.v.drop, DropReason::none);
        EXPECT_EQ(r.bytes[0], kNh4[0] ^ 0x80);
        EXPECT_TRUE(same(run(*snap, in, &cache), run(*snap, in, nullptr)));
    }
    // A hit reads the frame's bytes without parsing them: a frame the parse would not take as
    // plain untagged IPv4 UDP never hits, though it carries a cached flow's addresses, ports and
    // TOS at the usual offsets; and a short UDP frame is taken without the cache. Each answer is
    // the slow way's, the second time too.
    {
        const size_t before = used();
        auto mutated = [&](size_t off, uint8_t value) {
            Bytes b = flows[0];
            b[off] = value;
            return b;
        };
        auto total = [&](uint16_t len) {
            Bytes b = flows[0];
            b[16] = static_cast<uint8_t>(len >> 8);
            b[17] = static_cast<uint8_t>(len);
            return b;
        };
        Bytes tagged = flows[0];  // The cached flow itself behind an 802.1Q tag (VLAN 100).
        const uint8_t tag[] = {0x81, 0x00, 0x00, 100};
        tagged.insert(tagged.begin() + 12, std::begin(tag), std::end(tag));
        const std::vector<Edge> edges = {
            {"IHL 6", mutated(14, 0x46)},
            {"version 6 in an IPv4 frame", mutated(14, 0x65)},
            {"MF", mutated(20, 0x20)},
            {"fragment offset", mutated(21, 0x08)},
            {"TCP", mutated(23, 6)},
            {"ARP EtherType", mutated(13, 0x06)},
            {"total length without room for the BTH", total(20 + 8 + 11)},
            {"total length past the frame", total(static_cast<uint16_t>(flows[0].size() - 13))},
            {"total length below the UDP header", total(20 + 7)},
            {"802.1Q tag", tagged},
            {"53 bytes", Bytes(flows[0].begin(), flows[0].begin() + 53)},
            {"short UDP", PacketBuilder()
                              .eth()
                              .ipv4("10.10.0.7", "10.20.1.1", 0x28)
                              .udp(1234, 5678)
                              .payload(4)
                              .build()},
        };
        as_slow_way(edges);
        EXPECT_EQ(run(*snap, edges.back().frame, nullptr).v.drop, DropReason::none)
            << "the short UDP frame is forwarded";
        EXPECT_EQ(used(), before) << "none of them took an entry";
    }
    // Inner IPv6, from a key of its own (the addresses whole in the entry, a digest of them in
    // the key): the same answers as the slow way, filling and hitting, over either underlay.
    {
        const size_t before = used();
        const std::vector<Bytes> flows6 = {
            roce6("fd00:10::1", "fd00:20::1", 0x02),         // Marked 26, Geneve over IPv4.
            roce6("fd00:10::1", "fd00:20::1", 26 << 2 | 1),  // Already 26.
            roce6("fd00:10::2", "fd00:30::1", 0x01, 0x81),   // A CNP, VXLAN over IPv6.
            roce6("fd00:10::3", "fd00:30::7", 0x00, 0x0a),   // Data, marked 26.
            PacketBuilder()
                .eth()
                .ipv6("fd00:10::7", "fd00:20::9", 0x28)
                .udp(1234, 5678)
                .payload(64)
                .build(),
        };
        fill_then_hit(flows6);
        EXPECT_EQ(used(), before + flows6.size()) << "one entry an IPv6 flow";
        // Another length and hop limit on a cached flow: the rest is the packet's.
        Bytes longer6 = PacketBuilder()
                            .eth()
                            .ipv6("fd00:10::1", "fd00:20::1", 0x02)
                            .udp(49152, 4791)
                            .bth(4)
                            .payload(900)
                            .build();
        longer6[21] = 3;  // Hop limit.
        EXPECT_TRUE(same(run(*snap, longer6, &cache), run(*snap, longer6, nullptr)));
        EXPECT_EQ(used(), before + flows6.size());
        // A flow whose key (digest and the rest) equals a cached flow's: the source's bytes 0 and
        // 14 changed so that the digest's two words change alike. It misses, takes an entry of
        // its own, and the first flow keeps its own.
        Bytes twin = flows6[0];
        twin[22] ^= 1;
        twin[36] ^= 1;
        encap_fast::EncapKey k1, k2;
        uint32_t len1, len2;
        bool bth1, bth2;
        ASSERT_TRUE(encap_fast::encap_raw_key6(
            flows6[0].data(), static_cast<uint32_t>(flows6[0].size()), kLan, k1, len1, bth1));
        ASSERT_TRUE(encap_fast::encap_raw_key6(twin.data(), static_cast<uint32_t>(twin.size()),
                                               kLan, k2, len2, bth2));
        ASSERT_EQ(k1.addrs, k2.addrs);
        ASSERT_EQ(k1.rest, k2.rest);
        const Run slow_twin = run(*snap, twin, nullptr);
        const Run slow_first = run(*snap, flows6[0], nullptr);
        ASSERT_EQ(slow_twin.v.drop, DropReason::none);
        ASSERT_NE(Bytes(slow_twin.bytes.begin(), slow_twin.bytes.begin() + 50),
                  Bytes(slow_first.bytes.begin(), slow_first.bytes.begin() + 50))
            << "their outer headers differ (the entropy port), so a wrong hit would show";
        EXPECT_TRUE(same(run(*snap, twin, &cache), slow_twin)) << "the twin, filling";
        EXPECT_TRUE(same(run(*snap, twin, &cache), slow_twin)) << "the twin, hitting";
        EXPECT_TRUE(same(run(*snap, flows6[0], &cache), slow_first)) << "the first, hitting";
        EXPECT_EQ(used(), before + flows6.size() + 1);
        // Frames the IPv6 parse would not take as plain untagged IPv6 UDP, with a cached flow's
        // addresses, ports and traffic class: never a hit, no entry, the slow way's answer.
        const size_t cached = used();
        auto mutated6 = [&](size_t off, uint8_t value) {
            Bytes b = flows6[0];
            b[off] = value;
            return b;
        };
        auto payload6 = [&](uint16_t len) {
            Bytes b = flows6[0];
            b[18] = static_cast<uint8_t>(len >> 8);
            b[19] = static_cast<uint8_t>(len);
            return b;
        };
        Bytes tagged6 = flows6[0];
        const uint8_t tag[] = {0x81, 0x00, 0x00, 100};
        tagged6.insert(tagged6.begin() + 12, std::begin(tag), std::end(tag));
        const std::vector<Edge> edges6 = {
            {"hop-by-hop options", mutated6(20, 0)},
            {"TCP", mutated6(20, 6)},
            {"a fragment header", mutated6(20, 44)},
            {"version 4 in an IPv6 frame", mutated6(14, 0x40)},
            {"payload length without room for the BTH", payload6(8 + 11)},
            {"payload length past the frame",
             payload6(static_cast<uint16_t>(flows6[0].size() - 53))},
            {"payload length below the UDP header", payload6(7)},
            {"802.1Q tag", tagged6},
            {"73 bytes", Bytes(flows6[0].begin(), flows6[0].begin() + 73)},
        };
        as_slow_way(edges6);
        EXPECT_EQ(used(), cached) << "none of them took an entry";
        // The path MTU lowered under a cached IPv6 flow: too big, as the slow way says.
        snap->tunnels[0].path->mtu.store(100);
        const Run low6 = run(*snap, longer6, &cache);
        EXPECT_EQ(low6.v.drop, DropReason::too_big);
        EXPECT_TRUE(same(low6, run(*snap, longer6, nullptr)));
        snap->tunnels[0].path->mtu.store(1600);
    }
    // Too little headroom and a frame over the port's MTU: the slow way answers, as without it.
    EXPECT_EQ(run(*snap, flows[0], &cache, 20).v.drop, run(*snap, flows[0], nullptr, 20).v.drop);
    const Bytes jumbo = roce4("10.10.0.5", "10.20.0.9", 0x02, 4, 1480);
    EXPECT_TRUE(same(run(*snap, jumbo, &cache), run(*snap, jumbo, nullptr)));
    EXPECT_NE(run(*snap, jumbo, &cache).v.drop, DropReason::none);

    // A learned next hop, then another MAC for it: the cached flow follows.
    const int nh = table.find(4, kWan, Bytes{198, 18, 0, 254}.data());
    ASSERT_GE(nh, 0);
    const Bytes via_nh = roce4("10.10.0.5", "10.70.0.1", 0);
    EXPECT_EQ(run(*snap, via_nh, &cache).v.drop, DropReason::no_neighbor);
    for (uint8_t last : {uint8_t{0x11}, uint8_t{0x22}}) {
        const std::array<uint8_t, 6> mac{2, 0xaa, 0, 0, 0, last};
        table.at(static_cast<size_t>(nh)).mac.store(kNeighborValid | pack_mac(mac.data()));
        const Run r = run(*snap, via_nh, &cache);
        ASSERT_EQ(r.v.drop, DropReason::none);
        EXPECT_EQ(Bytes(r.bytes.begin(), r.bytes.begin() + 6), Bytes(mac.begin(), mac.end()));
        EXPECT_TRUE(same(run(*snap, via_nh, &cache), run(*snap, via_nh, nullptr)));
    }
    table.at(static_cast<size_t>(nh)).mac.store(0);
    EXPECT_EQ(run(*snap, via_nh, &cache).v.drop, DropReason::no_neighbor) << "forgotten";

    // The path MTU lowered under a cached flow: too big now, with the MTU to report.
    const Bytes mid = roce4("10.10.0.5", "10.20.0.9", 0x02, 4, 1200);
    ASSERT_EQ(run(*snap, mid, &cache).v.drop, DropReason::none);
    snap->tunnels[0].path->mtu.store(1200);
    const Run low = run(*snap, mid, &cache);
    EXPECT_EQ(low.v.drop, DropReason::too_big);
    EXPECT_TRUE(same(low, run(*snap, mid, nullptr)));
    snap->tunnels[0].path->mtu.store(1600);

    // A new configuration: the entries of the old one are gone, and the new marking applies.
    std::string text = kConfig;
    text.replace(text.rfind("dscp = 26"), 9, "dscp = 10");
    const Config cfg2 = parse_config(text, "unit.toml");
    auto next = build_snapshot(cfg2, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    next->generation = snap->generation + 1;
    const Run r2 = run(*next, flows[0], &cache);
    EXPECT_EQ(r2.v.dscp_out, 10);
    EXPECT_TRUE(same(r2, run(*next, flows[0], nullptr)));
    EXPECT_EQ(used(), 1u);
    EXPECT_EQ(cache.generation, next->generation);
}

// The worker's decapsulation-table cache: a hit is taken from it (a planted tunnel shows), it is
// kept while the snapshot is the same, and bind() to another address or generation empties it.
TEST(DecapCache, HitsComeFromItAndANewSnapshotEmptiesIt) {
    const Config cfg = parse_config(kConfig, "unit.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    const Bytes inner = roce4("10.20.0.9", "10.10.0.5", 26 << 2);
    const Bytes frame = PacketBuilder()
                            .eth(kWanMac, kNh4)
                            .ipv4("198.18.7.7", "198.18.0.1", 26 << 2)
                            .udp(50000, 6081, false)
                            .geneve(100)
                            .raw(inner)
                            .build();
    auto tunnel = [&](const Snapshot& s, DecapCache* c) {
        test::TestFrame t(frame);
        const Outcome o = process_packet(s, kWan, t.frame, c);
        EXPECT_EQ(o.drop, DropReason::none);
        return o.tunnel_id;
    };
    const int16_t right = tunnel(*snap, nullptr);
    ASSERT_GE(right, 0);
    ASSERT_GE(snap->tunnels.size(), 2u);
    const auto other = static_cast<int16_t>(right == 0 ? 1 : 0);
    DecapCache cache;
    cache.bind(*snap);
    EXPECT_EQ(tunnel(*snap, &cache), right) << "filled from the table";
    EXPECT_EQ(cache.tunnel_id, right);
    cache.tunnel_id = other;  // Planted: a hit answers from the cache, not the table.
    cache.bind(*snap);
    EXPECT_EQ(tunnel(*snap, &cache), other) << "kept for the same snapshot";
    ++snap->generation;  // Another configuration at the same address.
    cache.bind(*snap);
    EXPECT_EQ(cache.tunnel_id, -1);
    EXPECT_EQ(tunnel(*snap, &cache), right);
    auto next = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    next->generation = snap->generation;  // Another address, the same generation.
    cache.tunnel_id = other;
    cache.bind(*next);
    EXPECT_EQ(tunnel(*next, &cache), right);
    EXPECT_EQ(cache.snap, next.get());
}

// A routed LAN (the inner port has an address) behind one Geneve tunnel, for the routed-LAN tests.
constexpr const char* kRoutedConfig = R"(
[[ports]]
name = "lan"
role = "inner"
device = "a"
ipv4 = "10.10.0.1/24"
ipv6 = "fd00:10::1/64"
mac = "02:00:00:00:10:01"
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
mac = "02:00:00:00:00:01"
mtu = 1600
[[tunnels]]
name = "g4"
type = "geneve"
vni = 100
remote = "198.18.7.7"
next_hop_mac = "02:00:00:00:00:fe"
inner_mac = "02:00:00:00:0d:01"
routes = ["10.20.0.0/16", "fd00:20::/48"]
)";

// A tunnelled RoCE frame from kRoutedConfig's tunnel for LAN host `dst` (IPv4 or IPv6).
Bytes routed_lan_frame(const std::string& dst) {
    PacketBuilder b;
    b.eth({2, 0, 0, 0, 0, 0x77}, {2, 0, 0, 0, 0x0d, 1});
    if (dst.find(':') == std::string::npos)
        b.ipv4("10.20.0.9", dst, 26 << 2);
    else
        b.ipv6("fd00:20::9", dst, 26 << 2);
    const Bytes inner = b.udp(1, 4791).bth(4).payload(16).build();
    return PacketBuilder()
        .eth(kWanMac, kNh4)
        .ipv4("198.18.7.7", "198.18.0.1", 26 << 2)
        .udp(50000, 6081, false)
        .geneve(100)
        .raw(inner)
        .build();
}

// The decap flow cache on a routed LAN: a hit delivers to the host's MAC as its neighbour slot has
// it now (a changed MAC is followed, an unresolved one sends the packet the slow way), from the
// LAN port's MAC; a slot freed and given to another host, even one with the same MAC, is no longer
// the entry's (Neighbor::reuse), so the host's packets are dropped as the slow way drops them.
// Inner IPv4 and inner IPv6 (the host's slot in the IPv6 neighbour table) alike.
void routed_lan_hits_follow_the_hosts_slot(bool v6) {
    SCOPED_TRACE(v6 ? "inner IPv6" : "inner IPv4");
    const Config cfg = parse_config(kRoutedConfig, "routed.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    const Bytes frame = routed_lan_frame(v6 ? "fd00:10::5" : "10.10.0.5");
    const std::array<uint8_t, 6> host5{2, 0, 0, 0, 0x10, 5}, other{2, 0, 0, 0, 0x10, 6};
    const Bytes lan_mac{2, 0, 0, 0, 0x10, 1};
    uint8_t a5[16] = {10, 10, 0, 5}, a7[16] = {10, 10, 0, 7};
    if (v6) {
        const uint8_t net[16] = {0xfd, 0, 0, 0x10};
        std::memcpy(a5, net, sizeof net);
        std::memcpy(a7, net, sizeof net);
        a5[15] = 5;
        a7[15] = 7;
    }
    const uint8_t family = v6 ? 6 : 4;
    const int slot = table.add(family, 0, a5, false, 1);
    ASSERT_GE(slot, 0);
    Neighbor& n = table.at(static_cast<size_t>(slot));
    n.mac.store(kNeighborValid | pack_mac(host5.data()));
    DecapFlowCache cache;
    struct Out {
        DropReason drop;
        int16_t dscp;
        Bytes macs;  // The inner frame's destination and source as sent.
    };
    auto run = [&]() {
        test::TestFrame t(frame);
        const Outcome o = process_packet(*snap, kWan, t.frame, nullptr, nullptr, nullptr, &cache);
        const Bytes b = t.bytes();
        return Out{o.drop, o.dscp_out,
                   o.drop == DropReason::none ? Bytes(b.begin(), b.begin() + 12) : Bytes{}};
    };
    auto entry = [&]() -> DecapFlow* {
        for (DecapFlow& e : cache.flow)
            if (e.outer_rest != 0) return &e;
        return nullptr;
    };
    auto macs = [&](const std::array<uint8_t, 6>& dst) {
        Bytes b(dst.begin(), dst.end());
        b.insert(b.end(), lan_mac.begin(), lan_mac.end());
        return b;
    };
    Out o = run();
    ASSERT_EQ(o.drop, DropReason::none);
    EXPECT_EQ(o.macs, macs(host5));
    ASSERT_NE(entry(), nullptr) << "a routed LAN's flow is kept";
    EXPECT_EQ(entry()->lan, DecapFlow::kLanRouted);
    entry()->notes.dscp_out = 63;  // Planted: a hit answers from the entry.
    o = run();
    EXPECT_EQ(o.dscp, 63);
    EXPECT_EQ(o.macs, macs(host5));
    // The host's MAC changes in its slot: the hit delivers to the new one.
    n.mac.store(kNeighborValid | pack_mac(other.data()));
    o = run();
    EXPECT_EQ(o.dscp, 63);
    EXPECT_EQ(o.macs, macs(other));
    // Unresolved: the slow way drops the packet; resolved again, the entry serves again.
    n.mac.store(0);
    EXPECT_EQ(run().drop, DropReason::no_neighbor);
    n.mac.store(kNeighborValid | pack_mac(host5.data()));
    o = run();
    EXPECT_EQ(o.dscp, 63);
    EXPECT_EQ(o.macs, macs(host5));
    // The slot freed and given to another host with the same MAC: not the entry's host any more.
    table.remove(static_cast<size_t>(slot), 2);
    table.reclaim(uint64_t{1} << 62);
    ASSERT_EQ(table.add(family, 0, a7, false, 3), slot) << "the slot reused";
    n.mac.store(kNeighborValid | pack_mac(host5.data()));
    EXPECT_EQ(run().drop, DropReason::no_neighbor);
}

TEST(DecapFlowCache, RoutedLanHitsFollowTheHostsSlot) {
    routed_lan_hits_follow_the_hosts_slot(false);
    routed_lan_hits_follow_the_hosts_slot(true);
}

// The worker's decap flow cache: a hit is taken from its entry (a planted note shows), the entry
// is kept while the snapshot is the same, and another generation or another snapshot (here one
// whose tunnel copies the outer DSCP inward) empties it, so the packet follows the new policy.
TEST(DecapFlowCache, HitsComeFromItAndANewSnapshotEmptiesIt) {
    const Config cfg = parse_config(kConfig, "unit.toml");
    std::string text = kConfig;
    const std::string g4 = "routes = [\"10.20.0.0/16\", \"fd00:20::/48\"]\n";
    ASSERT_NE(text.find(g4), std::string::npos);
    text.replace(text.find(g4), g4.size(), g4 + "inner_dscp_on_decap = \"copy-outer\"\n");
    const Config copying = parse_config(text, "unit.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    const Bytes frame = PacketBuilder()
                            .eth(kWanMac, kNh4)
                            .ipv4("198.18.7.7", "198.18.0.1", 26 << 2)
                            .udp(50000, 6081, false)
                            .geneve(100)
                            .raw(roce4("10.20.0.9", "10.10.0.5", 10 << 2))
                            .build();
    DecapFlowCache cache;
    auto run = [&](const Snapshot& s, DecapFlowCache* c) {
        test::TestFrame t(frame);
        const Outcome o = process_packet(s, kWan, t.frame, nullptr, nullptr, nullptr, c);
        EXPECT_EQ(o.drop, DropReason::none);
        return o.dscp_out;
    };
    auto used = [&] {
        size_t n = 0;
        for (const DecapFlow& e : cache.flow) n += e.outer_rest != 0;
        return n;
    };
    EXPECT_EQ(run(*snap, nullptr), 10) << "preserved";
    EXPECT_EQ(run(*snap, &cache), 10);
    ASSERT_EQ(used(), 1u) << "filled";
    for (DecapFlow& e : cache.flow)
        if (e.outer_rest != 0) e.notes.dscp_out = 63;  // Planted: a hit answers from the entry.
    EXPECT_EQ(run(*snap, &cache), 63) << "kept for the same snapshot";
    ++snap->generation;  // Another configuration at the same address.
    EXPECT_EQ(run(*snap, &cache), 10);
    EXPECT_EQ(used(), 1u);
    auto next = build_snapshot(copying, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    next->generation = snap->generation;  // Another address, the same generation.
    EXPECT_EQ(run(*next, nullptr), 26) << "copied from the outer header";
    EXPECT_EQ(run(*next, &cache), 26);
    EXPECT_EQ(cache.snap, next.get());
}

// An IPv6 underlay's flows are kept too: a hit comes from the entry; the key holds the outer
// source folded, so a source with the same fold (the remote's halves swapped) must still be the
// slow way's to refuse; the UDP checksum is verified on every hit; a zero checksum fills its own
// entry only where the tunnel takes it.
TEST(DecapFlowCache, Ipv6UnderlayHitsAreExact) {
    const Config cfg = parse_config(kConfig, "unit.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    auto frame = [](const std::string& src, bool zero_csum = false) {
        Bytes b = PacketBuilder()
                      .eth(kWanMac, kNh6)
                      .ipv6(src, "2001:db8:18::1", 26 << 2)
                      .udp(50000, 4789)
                      .vxlan(200)
                      .raw(roce4("10.40.0.1", "10.10.0.5", 26 << 2 | 1))
                      .build();
        if (zero_csum) b[14 + 40 + 6] = b[14 + 40 + 7] = 0;
        return b;
    };
    DecapFlowCache cache;
    auto run = [&](const Bytes& in, DecapFlowCache* c) {
        test::TestFrame t(in);
        return process_packet(*snap, kWan, t.frame, nullptr, nullptr, nullptr, c);
    };
    auto used = [&] {
        size_t n = 0;
        for (const DecapFlow& e : cache.flow) n += e.outer_rest != 0;
        return n;
    };
    const Bytes good = frame("2001:db8:18::99");
    EXPECT_EQ(run(good, nullptr).drop, DropReason::none);
    EXPECT_EQ(run(good, &cache).drop, DropReason::none);
    ASSERT_EQ(used(), 1u) << "filled";
    for (DecapFlow& e : cache.flow)
        if (e.outer_rest != 0) e.notes.dscp_out = 63;  // Planted: a hit answers from the entry.
    EXPECT_EQ(run(good, &cache).dscp_out, 63) << "a hit";

    // The same fold from another source: not the tunnel's remote.
    const Bytes swapped = frame("0:0:0:99:2001:db8:18:0");
    EXPECT_EQ(run(swapped, nullptr).drop, DropReason::unknown_remote);
    EXPECT_EQ(run(swapped, &cache).drop, DropReason::unknown_remote);
    // A wrong checksum on the cached flow.
    Bytes bad = good;
    bad[14 + 40 + 6] ^= 0x10;
    EXPECT_EQ(run(bad, nullptr).drop, DropReason::bad_checksum);
    EXPECT_EQ(run(bad, &cache).drop, DropReason::bad_checksum);
    // Zero checksums: the tunnel does not take them, so no entry of their own.
    const Bytes zero = frame("2001:db8:18::99", true);
    EXPECT_EQ(run(zero, &cache).drop, DropReason::bad_checksum);
    EXPECT_EQ(used(), 1u);
    EXPECT_EQ(run(good, &cache).dscp_out, 63) << "still the planted entry";
}

// Tunnelled IPv6 packets are kept too, over either underlay: filling and hitting give the slow
// way's verdict, notes and bytes (RFC 6040 and the DSCP policy on the traffic class); a flow
// whose key digest equals a cached flow's gets an entry of its own; inner frames of other forms
// never hit.
TEST(DecapFlowCache, InnerIpv6HitsEqualTheSlowWay) {
    const Config cfg = parse_config(kConfig, "unit.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    auto over4 = [](const Bytes& inner, uint8_t tos) {
        return PacketBuilder()
            .eth(kWanMac, kNh4)
            .ipv4("198.18.7.7", "198.18.0.1", tos)
            .udp(50000, 6081, false)
            .geneve(100)
            .raw(inner)
            .build();
    };
    auto over6 = [](const Bytes& inner, uint8_t tc) {
        return PacketBuilder()
            .eth(kWanMac, kNh6)
            .ipv6("2001:db8:18::99", "2001:db8:18::1", tc)
            .udp(50000, 4789)
            .vxlan(200)
            .raw(inner)
            .build();
    };
    DecapFlowCache cache;
    struct Run {
        Outcome v;
        Bytes bytes;
    };
    auto run = [&](const Bytes& in, DecapFlowCache* c) {
        test::TestFrame t(in);
        Run r;
        r.v = process_packet(*snap, kWan, t.frame, nullptr, nullptr, nullptr, c);
        if (r.v.drop == DropReason::none) r.bytes = t.bytes();
        return r;
    };
    auto same = [](const Run& a, const Run& b) {
        return a.v.drop == b.v.drop && a.v.out_port == b.v.out_port &&
               a.v.tunnel_id == b.v.tunnel_id && a.v.dscp_in == b.v.dscp_in &&
               a.v.dscp_out == b.v.dscp_out && a.v.ce_marked == b.v.ce_marked &&
               a.v.outer_remarked == b.v.outer_remarked &&
               (a.v.roce_bth == nullptr) == (b.v.roce_bth == nullptr) && a.bytes == b.bytes;
    };
    auto used = [&] {
        size_t n = 0;
        for (const DecapFlow& e : cache.flow) n += e.outer_rest != 0;
        return n;
    };
    const std::vector<Bytes> flows = {
        over4(roce6("fd00:20::5", "fd00:10::9", 26 << 2 | 2), 26 << 2 | 2),
        over4(roce6("fd00:20::5", "fd00:10::9", 26 << 2 | 2), 26 << 2 | 3),  // CE outside.
        over4(roce6("fd00:20::6", "fd00:10::9", 48 << 2, 0x81), 48 << 2),    // A CNP.
        over6(roce6("fd00:30::5", "fd00:10::9", 26 << 2 | 1), 0 << 2 | 3),   // Bleached, CE.
        over6(PacketBuilder()
                  .eth()
                  .ipv6("fd00:30::7", "fd00:10::9", 0x28)
                  .udp(1234, 5678)
                  .payload(64)
                  .build(),
              0x28),
    };
    for (const Bytes& in : flows) {
        const Run slow = run(in, nullptr);
        ASSERT_EQ(slow.v.drop, DropReason::none);
        EXPECT_TRUE(same(run(in, &cache), slow)) << "filling";
        EXPECT_TRUE(same(run(in, &cache), slow)) << "hitting";
    }
    EXPECT_EQ(used(), flows.size()) << "one entry a flow";
    EXPECT_TRUE(cache.in6);
    ASSERT_NE(run(flows[1], nullptr).bytes, run(flows[0], nullptr).bytes)
        << "CE outside marks the inner traffic class";
    // The inner source's bytes 0 and 14 changed so that the digest's two words change alike: the
    // same key, another flow (an inner frame 70 bytes in).
    Bytes twin = flows[0];
    twin[50 + 22] ^= 1;
    twin[50 + 36] ^= 1;
    decap_fast::DecapFlowKey k1, k2;
    uint32_t t1, t2, i1, i2;
    bool b1, b2;
    ASSERT_TRUE((decap_fast::decap_raw_key<false, true>(
        flows[0].data(), static_cast<uint32_t>(flows[0].size()), kWan, k1, t1, i1, b1)));
    ASSERT_TRUE((decap_fast::decap_raw_key<false, true>(
        twin.data(), static_cast<uint32_t>(twin.size()), kWan, k2, t2, i2, b2)));
    ASSERT_EQ(0, std::memcmp(k1.w, k2.w, sizeof k1.w));
    for (DecapFlow& e : cache.flow)
        if (e.outer_rest != 0) e.notes.dscp_out = 63;  // Planted: a hit answers from the entry.
    const Run slow_twin = run(twin, nullptr);
    ASSERT_EQ(slow_twin.v.drop, DropReason::none);
    EXPECT_TRUE(same(run(twin, &cache), slow_twin)) << "the twin, filling";
    EXPECT_EQ(run(twin, &cache).v.dscp_out, slow_twin.v.dscp_out) << "the twin's own entry";
    EXPECT_EQ(run(flows[0], &cache).v.dscp_out, 63) << "the first keeps its entry";
    EXPECT_EQ(used(), flows.size() + 1);
    // Inner frames the parse would not take as plain IPv6 UDP, with a cached flow's addresses,
    // ports and traffic class: the slow way's answers, no entry.
    const size_t before = used();
    auto mutated = [&](size_t off, uint8_t value) {
        Bytes b = flows[0];
        b[50 + off] = value;
        return b;
    };
    const struct {
        const char* what;
        Bytes frame;
    } edges[] = {
        {"hop-by-hop options", mutated(20, 0)},
        {"TCP", mutated(20, 6)},
        {"payload length past the UDP payload", mutated(18, 0x7f)},
        {"payload length below the BTH", mutated(19, 8 + 11)},
        {"payload length below the UDP header", mutated(19, 7)},
        {"IEEE link-local destination",
         [&] {
             Bytes b = flows[0];
             const uint8_t mac[] = {0x01, 0x80, 0xc2, 0, 0, 0x0e};
             std::memcpy(b.data() + 50, mac, 6);
             return b;
         }()},
    };
    for (const auto& c : edges) {
        const Run slow = run(c.frame, nullptr);
        EXPECT_TRUE(same(run(c.frame, &cache), slow)) << c.what;
        EXPECT_TRUE(same(run(c.frame, &cache), slow)) << c.what << ", again";
    }
    EXPECT_EQ(used(), before) << "none of them took an entry";
}

// Two classes that both match a packet: the first listed wins, whichever it is.
TEST(Classify, FirstMatchWins) {
    const std::string ports = R"(
[[ports]]
name = "lan"
role = "inner"
device = "a"
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
mtu = 1600
[[tunnels]]
name = "t"
type = "vxlan"
vni = 1
remote = "198.18.7.7"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.20.0.0/16"]
)";
    const std::string a = "[[classes]]\nname = \"a\"\nmatch = { udp_dst_port = 4791 }\ndscp = 10\n";
    const std::string b = "[[classes]]\nname = \"b\"\nmatch = { ip_proto = 17 }\ndscp = 20\n";
    for (const bool a_first : {true, false}) {
        const Config cfg = parse_config(ports + (a_first ? a + b : b + a), "classes.toml");
        NeighborTable table;
        auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
        test::TestFrame t(roce4("10.10.0.5", "10.20.0.9", 0));
        const Outcome o = process_packet(*snap, 0, t.frame);
        ASSERT_EQ(o.drop, DropReason::none);
        EXPECT_EQ(o.class_id, 0) << "the first listed";
        EXPECT_EQ(o.dscp_out, a_first ? 10 : 20);
    }
}

// ARP for an address that is not the gateway's is not answered, on either side; nor is a
// gratuitous ARP for the gateway's own address.
TEST(Local, ArpOnlyForOurAddress) {
    PortConf port;
    port.has_ipv4 = true;
    port.ipv4 = {198, 18, 0, 1};
    port.mac = {2, 0, 0, 0, 0, 1};
    auto arp = [](const Bytes& spa, const Bytes& tpa) {
        Bytes b = PacketBuilder().eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}).build();
        b[12] = 0x08;
        b[13] = 0x06;
        const Bytes hdr = {0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0x10, 2};
        b.insert(b.end(), hdr.begin(), hdr.end());
        b.insert(b.end(), spa.begin(), spa.end());
        b.insert(b.end(), 6, 0);
        b.insert(b.end(), tpa.begin(), tpa.end());
        return b;
    };
    auto answer = [&](const Bytes& in) {
        test::TestFrame t(in);
        ParsedPacket pp;
        EXPECT_EQ(parse_packet(t.frame.data, t.frame.len, pp), DropReason::none);
        return answer_local(port, pp, t.frame);
    };
    EXPECT_EQ(answer(arp({198, 18, 0, 9}, {198, 18, 0, 1})), LocalReply::arp);
    EXPECT_EQ(answer(arp({198, 18, 0, 9}, {198, 18, 0, 77})), LocalReply::none) << "another host";
    EXPECT_EQ(answer(arp({198, 18, 0, 1}, {198, 18, 0, 1})), LocalReply::none) << "gratuitous";
}

// One case per drop reason; the test fails if a reason has no case.
TEST_F(Pipeline, EveryDropReason) {
    const Bytes inner = roce4("10.20.0.9", "10.10.0.5", 26 << 2);
    auto gen = [&](const std::string& src, const std::string& dst, uint32_t vni,
                   const Bytes& payload, uint8_t flags = 0, uint16_t proto = 0x6558,
                   const Bytes& opts = {}, uint8_t version = 0, uint16_t frag = 0x4000) {
        return PacketBuilder()
            .eth(kWanMac, kNh4)
            .ipv4(src, dst, 0, 17, frag)
            .udp(50000, 6081, false)
            .geneve(vni, opts, flags, proto, version)
            .raw(payload)
            .build();
    };
    Bytes arp = PacketBuilder().eth().payload(28).build();
    arp[12] = 0x08;
    arp[13] = 0x06;
    Bytes bad_ver = roce4("10.10.0.5", "10.20.0.9", 0);
    bad_ver[14] = 0x35;
    Bytes bad_ip_csum = gen("198.18.7.7", "198.18.0.1", 100, inner);
    bad_ip_csum[14 + 10] ^= 0x01;
    auto v6_outer = [&](const Bytes& payload, bool csum) {
        return PacketBuilder()
            .eth(kWanMac, kNh6)
            .ipv6("2001:db8:18::99", "2001:db8:18::1", 0)
            .udp(50000, 4789, csum)
            .vxlan(200)
            .raw(payload)
            .build();
    };
    Bytes bad_udp6_csum = v6_outer(inner, true);
    bad_udp6_csum[14 + 40 + 6] ^= 0x01;
    // Inner frames the LAN must not see: a VLAN tag, PFC/PAUSE to 01:80:c2:00:00:01, LLDP.
    Bytes tagged = PacketBuilder()
                       .eth({2, 0, 0, 0, 0x10, 1}, {2, 0, 0, 0, 0x10, 2}, 100)
                       .ipv4("10.20.0.9", "10.10.0.5", 0)
                       .udp(1, 4791)
                       .bth(4)
                       .payload(16)
                       .build();
    Bytes pause = inner;
    std::copy_n(Bytes{0x01, 0x80, 0xc2, 0, 0, 0x01}.begin(), 6, pause.begin());
    Bytes lldp = PacketBuilder().eth().payload(40).build();
    lldp[12] = 0x88;
    lldp[13] = 0xcc;
    // RFC 8926 options whose length claims one word beyond the UDP datagram, the rest of which
    // (and a whole valid inner frame) lies in the Ethernet trailer after the IP packet.
    Bytes hidden = gen("198.18.7.7", "198.18.0.1", 100, {}, 0, 0x6558, {0, 1, 0, 1});
    hidden[14 + 20 + 8] = 2;  // Option length: two words, the header's one plus one.
    hidden.insert(hidden.end(), 4, 0);
    hidden.insert(hidden.end(), inner.begin(), inner.end());
    struct Case {
        const char* what;
        uint16_t port;
        Bytes pkt;
        DropReason expect;
        size_t headroom = 128;
    };
    const Case cases[] = {
        {"truncated", kLan, Bytes(10, 0), DropReason::truncated},
        {"bad_ip_header", kLan, bad_ver, DropReason::bad_ip_header},
        {"not_ip", kLan, arp, DropReason::not_ip},
        {"no_route", kLan, roce4("10.10.0.5", "192.0.2.9", 0), DropReason::no_route},
        {"too_big", kLan, roce4("10.10.0.5", "10.60.0.9", 0, 4, 1400), DropReason::too_big},
        {"larger than the LAN port's MTU", kLan, roce4("10.10.0.5", "10.20.0.9", 0, 4, 1461),
         DropReason::too_big},
        {"no_headroom", kLan, roce4("10.10.0.5", "10.20.0.9", 0), DropReason::no_headroom, 49},
        {"not_local", kWan, gen("198.18.7.7", "198.18.0.2", 100, inner), DropReason::not_local},
        {"not_tunnel", kWan,
         PacketBuilder().eth().ipv4("198.18.7.7", "198.18.0.1", 0).udp(1, 53).payload(20).build(),
         DropReason::not_tunnel},
        {"outer_fragment", kWan,
         gen("198.18.7.7", "198.18.0.1", 100, inner, 0, 0x6558, {}, 0, 0x2000),
         DropReason::outer_fragment},
        {"unknown_remote", kWan, gen("198.18.7.6", "198.18.0.1", 100, inner),
         DropReason::unknown_remote},
        {"unknown_vni", kWan, gen("198.18.7.7", "198.18.0.1", 101, inner), DropReason::unknown_vni},
        {"bad_tunnel_header", kWan, gen("198.18.7.7", "198.18.0.1", 100, inner, 0, 0x6558, {}, 1),
         DropReason::bad_tunnel_header},
        {"unsupported_payload", kWan, gen("198.18.7.7", "198.18.0.1", 100, inner, 0, 0x0800),
         DropReason::unsupported_payload},
        {"bad_inner_frame", kWan, gen("198.18.7.7", "198.18.0.1", 100, Bytes(9, 1)),
         DropReason::bad_inner_frame},
        {"no_neighbor", kLan, roce4("10.10.0.5", "10.70.0.1", 0), DropReason::no_neighbor},
        {"ecn_ce_on_not_ect", kWan,
         PacketBuilder()
             .eth(kWanMac, kNh4)
             .ipv4("198.18.7.7", "198.18.0.1", 3)
             .udp(50000, 6081, false)
             .geneve(100)
             .raw(inner)
             .build(),
         DropReason::ecn_ce_on_not_ect},
        // Geneve header variants.
        {"critical option", kWan,
         gen("198.18.7.7", "198.18.0.1", 100, inner, 0, 0x6558, {0, 1, 0x80, 0}),
         DropReason::bad_tunnel_header},
        {"C flag", kWan, gen("198.18.7.7", "198.18.0.1", 100, inner, 0x40),
         DropReason::bad_tunnel_header},
        {"OAM", kWan, gen("198.18.7.7", "198.18.0.1", 100, inner, 0x80),
         DropReason::bad_tunnel_header},
        {"option length past option area", kWan,
         gen("198.18.7.7", "198.18.0.1", 100, inner, 0, 0x6558, {0, 1, 1, 3}),
         DropReason::bad_tunnel_header},
        {"VXLAN I flag clear", kWan,
         PacketBuilder()
             .eth(kWanMac, kNhFixed)
             .ipv4("198.18.7.8", "198.18.0.1", 0)
             .udp(50000, 4789, false)
             .vxlan(300, 0)
             .raw(inner)
             .build(),
         DropReason::bad_tunnel_header},
        {"inner too big", kWan,
         gen("198.18.7.7", "198.18.0.1", 100, roce4("10.20.0.9", "10.10.0.5", 0, 4, 1500)),
         DropReason::too_big},
        {"bad_checksum", kWan, bad_ip_csum, DropReason::bad_checksum},
        {"wrong IPv6 UDP checksum", kWan, bad_udp6_csum, DropReason::bad_checksum},
        {"zero IPv6 UDP checksum", kWan, v6_outer(inner, false), DropReason::bad_checksum},
        {"inner_vlan", kWan, gen("198.18.7.7", "198.18.0.1", 100, tagged), DropReason::inner_vlan},
        {"inner_link_local", kWan, gen("198.18.7.7", "198.18.0.1", 100, pause),
         DropReason::inner_link_local},
        {"inner_not_ip", kWan, gen("198.18.7.7", "198.18.0.1", 100, lldp),
         DropReason::inner_not_ip},
        {"Geneve options one word past the UDP payload, frame in the trailer", kWan, hidden,
         DropReason::bad_tunnel_header},
    };
    std::set<DropReason> covered;
    for (const Case& c : cases) {
        const Out o = run(c.port, c.pkt, c.headroom);
        EXPECT_EQ(o.v.drop, c.expect) << c.what << ": got " << drop_reason_name(o.v.drop);
        covered.insert(c.expect);
    }
    covered.insert(
        DropReason::multi_segment);  // Burst level: see Burst.CountsAndMultiSegmentDropped.
    covered.insert(DropReason::local_unhandled);  // Routed LAN ports only: see Neighbors.RoutedLan.
    covered.insert(DropReason::wrong_vlan);       // Tagged LAN ports only: Qos.TaggedLanBothWays.
    covered.insert(DropReason::policed);          // Policers: see Qos.TrtcmColours...
    for (size_t r = 1; r < kDropReasonCount; ++r)
        EXPECT_TRUE(covered.count(static_cast<DropReason>(r)))
            << "no case for " << kDropReasonInfo[r].name;
}

// Compiling a snapshot touches nothing live: the next hops and static neighbors it needs are
// staged, and reach the shared table only when applied (a reload that is accepted).
TEST(Neighbors, CompilingStagesThemApplyingAddsThem) {
    const Config cfg = parse_config(std::string(kConfig) +
                                        "\n[[neighbors]]\nport = \"wan\"\nip = "
                                        "\"198.18.0.253\"\nmac = \"02:00:00:00:00:aa\"\n",
                                    "unit.toml");
    NeighborTable table;
    SnapshotBuild b = compile_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    EXPECT_EQ(table.size(), 0u) << "nothing added while compiling";
    ASSERT_EQ(b.neighbors.entries.size(), 3u) << "the static neighbor and two next hops";
    for (const TunnelConf& t : b.snap->tunnels) EXPECT_EQ(t.neighbor, -1) << t.name;
    b.neighbors.apply(table, *b.snap);
    EXPECT_EQ(table.size(), 3u);
    const std::array<uint8_t, 4> st{198, 18, 0, 253};
    const int i = table.find(4, 1, st.data());
    ASSERT_GE(i, 0);
    EXPECT_TRUE(table.at(static_cast<size_t>(i)).is_static.load());
    int with_next_hop = 0;
    for (const TunnelConf& t : b.snap->tunnels)
        if (t.has_next_hop_ip) {
            ++with_next_hop;
            EXPECT_GE(t.neighbor, 0) << t.name;
        }
    EXPECT_EQ(with_next_hop, 2);
    // Compiled again over the filled table: nothing new is needed, the room check counts once.
    SnapshotBuild again = compile_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    again.neighbors.apply(table, *again.snap);
    EXPECT_EQ(table.size(), 3u);
}

// Next hops by IP: unresolved traffic is counted, an ARP reply or a Neighbor Advertisement on the
// outer port resolves them, and the learned MAC goes into the outer header.
TEST(Neighbors, LearnedFromArpAndNa) {
    const Config cfg = parse_config(kConfig, "unit.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    auto run_on = [&](uint16_t port, const Bytes& in, Bytes* out = nullptr) {
        test::TestFrame t(in);
        const Outcome v = process_packet(*snap, port, t.frame);
        if (out != nullptr) *out = t.bytes();
        return v;
    };
    EXPECT_EQ(run_on(kLan, roce4("10.10.0.5", "10.70.0.1", 0)).drop, DropReason::no_neighbor);
    EXPECT_EQ(run_on(kLan, roce4("10.10.0.5", "10.80.0.1", 0)).drop, DropReason::no_neighbor);

    // ARP reply from 198.18.0.254 (02:aa:..:01) to our VTEP.
    Bytes arp = PacketBuilder().eth(kWanMac, {2, 0xaa, 0, 0, 0, 1}).build();
    arp[12] = 0x08;
    arp[13] = 0x06;
    const Bytes body = {0,   1,  8, 0,   6, 4, 0, 2, 2, 0xaa, 0,   0,  0, 1,
                        198, 18, 0, 254, 2, 0, 0, 0, 0, 1,    198, 18, 0, 1};
    arp.insert(arp.end(), body.begin(), body.end());
    // The same reply claiming a broadcast, multicast or zero MAC teaches nothing.
    for (const Bytes& bad : {Bytes{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, Bytes{1, 0, 0x5e, 0, 0, 1},
                             Bytes{0, 0, 0, 0, 0, 0}}) {
        Bytes forged = arp;
        std::copy(bad.begin(), bad.end(), forged.begin() + 14 + 8);
        EXPECT_NE(run_on(kWan, forged).local, LocalReply::learned);
        EXPECT_EQ(run_on(kLan, roce4("10.10.0.5", "10.70.0.1", 0)).drop, DropReason::no_neighbor);
    }
    // Only an answer to our own probe teaches the underlay's next hop.
    const int nh4 = table.find(4, kWan, Bytes{198, 18, 0, 254}.data());
    ASSERT_GE(nh4, 0);
    Neighbor& e4 = table.at(static_cast<size_t>(nh4));
    EXPECT_EQ(run_on(kWan, arp).local, LocalReply::none) << "unsolicited reply, nothing asked";
    Bytes gratuitous = arp;  // A request from the next hop (gratuitous ARP): never an answer.
    gratuitous[14 + 7] = 1;
    e4.probe_tsc.store(rte_get_tsc_cycles());  // What the control thread's probe records.
    EXPECT_NE(run_on(kWan, gratuitous).local, LocalReply::learned);
    EXPECT_EQ(run_on(kWan, arp).local, LocalReply::learned);
    EXPECT_EQ(e4.probe_tsc.load(), 0u) << "answered";
    Bytes out;
    const Verdict v = run_on(kLan, roce4("10.10.0.5", "10.70.0.1", 0), &out);
    ASSERT_EQ(v.drop, DropReason::none);
    EXPECT_EQ(Bytes(out.begin(), out.begin() + 6), (Bytes{2, 0xaa, 0, 0, 0, 1}))
        << "learned MAC as destination";
    // Another MAC claiming the next hop: ignored within the lock time, ignored after it while the
    // old MAC answers (no probe outstanding), taken only as the answer to a probe of a silent one.
    Bytes hijack = arp;
    hijack[6 + 5] = 0x66;
    hijack[14 + 8 + 5] = 0x66;
    const uint64_t hz = rte_get_tsc_hz();
    e4.probe_tsc.store(rte_get_tsc_cycles());
    EXPECT_EQ(run_on(kWan, hijack).local, LocalReply::none) << "within the lock time";
    e4.probe_tsc.store(0);
    e4.learned_tsc.store(rte_get_tsc_cycles() - 2 * hz);
    EXPECT_EQ(run_on(kWan, hijack).local, LocalReply::none) << "nothing asked";
    EXPECT_EQ(run_on(kWan, arp).local, LocalReply::learned) << "the same MAC confirms";
    EXPECT_EQ(e4.mac.load() & 0xff, 1u);
    e4.learned_tsc.store(rte_get_tsc_cycles() - 40 * hz);
    e4.probe_tsc.store(rte_get_tsc_cycles());
    EXPECT_EQ(run_on(kWan, hijack).local, LocalReply::learned) << "answers our probe";
    EXPECT_EQ(e4.mac.load() & 0xff, 0x66u);

    // Neighbor Advertisement for fe80::1 with a target link-layer address option.
    auto ll = test::ip("fe80::1");
    Bytes na_body = {136, 0, 0, 0, 0x60, 0, 0, 0};
    na_body.insert(na_body.end(), ll.begin(), ll.end());
    for (int b : {2, 1, 2, 0xbb, 0, 0, 0, 2}) na_body.push_back(static_cast<uint8_t>(b));
    const Bytes na = test::with_icmp6_csum(PacketBuilder()
                                               .eth(kWanMac, {2, 0xbb, 0, 0, 0, 2})
                                               .ipv6("fe80::1", "2001:db8:18::1", 0, 58, 255)
                                               .raw(na_body)
                                               .build());
    EXPECT_EQ(run_on(kWan, na).local, LocalReply::none) << "not asked";
    const int nh6 = table.find(6, kWan, ll.data());
    ASSERT_GE(nh6, 0);
    table.at(static_cast<size_t>(nh6)).probe_tsc.store(rte_get_tsc_cycles());
    Bytes unsolicited_na = na;
    unsolicited_na[14 + 40 + 4] = 0x20;  // Override only, not Solicited.
    unsolicited_na = test::with_icmp6_csum(unsolicited_na);
    Bytes bad_csum_na = na;
    bad_csum_na[14 + 40 + 3] ^= 1;
    EXPECT_EQ(run_on(kWan, bad_csum_na).local, LocalReply::none) << "a wrong ICMPv6 checksum";
    EXPECT_EQ(run_on(kWan, unsolicited_na).local, LocalReply::none) << "an unsolicited NA";
    EXPECT_EQ(run_on(kWan, na).local, LocalReply::learned);
    ASSERT_EQ(run_on(kLan, roce4("10.10.0.5", "10.80.0.1", 0), &out).drop, DropReason::none);
    EXPECT_EQ(Bytes(out.begin(), out.begin() + 6), (Bytes{2, 0xbb, 0, 0, 0, 2}));

    // Hop limit below 255 is not Neighbor Discovery (RFC 4861 7.1.2); unknown senders teach
    // nothing.
    const Bytes forged = PacketBuilder()
                             .eth(kWanMac, {2, 0xcc, 0, 0, 0, 3})
                             .ipv6("fe80::1", "2001:db8:18::1", 0, 58, 64)
                             .raw(na_body)
                             .build();
    EXPECT_EQ(run_on(kWan, forged).local, LocalReply::none);
    Bytes stranger = arp;
    stranger[14 + 17] = 253;  // Sender 198.18.0.253: no tunnel's next hop.
    EXPECT_EQ(run_on(kWan, stranger).local, LocalReply::none);
}

// Routed LAN: the inner port has an address; decapsulated frames go to the host's MAC (resolved by
// ARP) from the port's MAC, and encapsulated ones are readdressed to the tunnel's inner_mac.
TEST(Neighbors, RoutedLan) {
    const Config cfg = parse_config(kRoutedConfig, "routed.toml");
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    auto run_on = [&](uint16_t port, const Bytes& in, Bytes* out = nullptr) {
        test::TestFrame t(in);
        const Outcome v = process_packet(*snap, port, t.frame);
        if (out != nullptr) *out = t.bytes();
        return v;
    };
    const std::array<uint8_t, 6> host5{2, 0, 0, 0, 0x10, 5}, host6{2, 0, 0, 0, 0x10, 6};
    auto tunnelled = [](const std::string& dst) { return routed_lan_frame(dst); };
    auto arp = [](uint16_t op, const std::array<uint8_t, 6>& sha, const Bytes& spa,
                  const Bytes& tpa) {
        Bytes b = PacketBuilder().eth({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, sha).build();
        b[12] = 0x08;
        b[13] = 0x06;
        const Bytes hdr = {0, 1, 8, 0, 6, 4, 0, static_cast<uint8_t>(op)};
        b.insert(b.end(), hdr.begin(), hdr.end());
        b.insert(b.end(), sha.begin(), sha.end());
        b.insert(b.end(), spa.begin(), spa.end());
        b.insert(b.end(), 6, 0);
        b.insert(b.end(), tpa.begin(), tpa.end());
        return b;
    };

    // Unknown host: counted, and the control thread is asked to resolve it.
    EXPECT_EQ(run_on(kWan, tunnelled("10.10.0.5")).drop, DropReason::no_neighbor);
    EXPECT_EQ(table.drain_requests(1), 1u);
    const int n5 = table.find(4, 0, Bytes{10, 10, 0, 5}.data());
    ASSERT_GE(n5, 0);
    EXPECT_EQ(table.at(static_cast<size_t>(n5)).mac.load() & kNeighborValid, 0u)
        << "created unresolved";
    EXPECT_EQ(run_on(kWan, tunnelled("10.10.0.5")).drop, DropReason::no_neighbor);
    // The host's ARP reply resolves it; the next packet goes to its MAC, from the LAN port's.
    EXPECT_EQ(run_on(kLan, arp(2, host5, {10, 10, 0, 5}, {10, 10, 0, 1})).local,
              LocalReply::learned);
    Bytes out;
    ASSERT_EQ(run_on(kWan, tunnelled("10.10.0.5"), &out).drop, DropReason::none);
    EXPECT_EQ(Bytes(out.begin(), out.begin() + 12),
              (Bytes{2, 0, 0, 0, 0x10, 5, 2, 0, 0, 0, 0x10, 1}));
    // A host that ARPs for the gateway is adopted: answered, and known without a probe.
    const Verdict q = run_on(kLan, arp(1, host6, {10, 10, 0, 6}, {10, 10, 0, 1}));
    EXPECT_EQ(q.local, LocalReply::arp);
    EXPECT_EQ(table.drain_requests(2), 1u);
    ASSERT_EQ(run_on(kWan, tunnelled("10.10.0.6"), &out).drop, DropReason::none);
    EXPECT_EQ(Bytes(out.begin(), out.begin() + 6), Bytes(host6.begin(), host6.end()));
    // Traffic for the gateway itself that is not ARP/ND/echo.
    EXPECT_EQ(
        run_on(
            kLan,
            PacketBuilder().eth().ipv4("10.10.0.5", "10.10.0.1", 0).udp(1, 53).payload(8).build())
            .drop,
        DropReason::local_unhandled);
    // Not on the LAN's prefix: no route (the gateway is no router beyond its LAN).
    EXPECT_EQ(run_on(kWan, tunnelled("10.11.0.5")).drop, DropReason::no_route);
    // ARP and Neighbor Discovery from the far side would poison the LAN's caches: never passed.
    auto tunnelled_frame = [&](const Bytes& inner) {
        return PacketBuilder()
            .eth(kWanMac, kNh4)
            .ipv4("198.18.7.7", "198.18.0.1", 0)
            .udp(50000, 6081, false)
            .geneve(100)
            .raw(inner)
            .build();
    };
    EXPECT_EQ(run_on(kWan, tunnelled_frame(arp(2, host5, {10, 10, 0, 9}, {10, 10, 0, 5}))).drop,
              DropReason::inner_not_ip);
    const Bytes na = PacketBuilder()
                         .eth()
                         .ipv6("fe80::9", "ff02::1", 0, 58, 255)
                         .raw(Bytes{136, 0, 0, 0, 0x20, 0, 0, 0})
                         .payload(16)
                         .build();
    EXPECT_EQ(run_on(kWan, tunnelled_frame(na)).drop, DropReason::inner_not_ip);
    // Encapsulation readdresses the inner frame to the far end's MAC, from the LAN port's.
    const Bytes from_host = PacketBuilder()
                                .eth({2, 0, 0, 0, 0x10, 1}, host5)
                                .ipv4("10.10.0.5", "10.20.0.9", 0)
                                .udp(1, 4791)
                                .bth(4)
                                .payload(16)
                                .build();
    ASSERT_EQ(run_on(kLan, from_host, &out).drop, DropReason::none);
    EXPECT_EQ(Bytes(out.begin() + 50, out.begin() + 62),
              (Bytes{2, 0, 0, 0, 0x0d, 1, 2, 0, 0, 0, 0x10, 1}));
}

TEST(Neighbors, ProbesAreWellFormed) {
    PortConf port;
    port.has_ipv4 = port.has_ipv6 = true;
    port.ipv4 = {198, 18, 0, 1};
    port.ipv6 = test::ip("2001:db8:18::1");
    port.mac = {2, 0, 0, 0, 0, 1};
    uint8_t buf[128];
    const uint8_t target4[4] = {198, 18, 0, 254};
    ASSERT_EQ(build_arp_request(port, target4, buf), 60u);
    EXPECT_EQ(Bytes(buf, buf + 6), Bytes(6, 0xff));
    EXPECT_EQ(Bytes(buf + 14, buf + 22), (Bytes{0, 1, 8, 0, 6, 4, 0, 1}));
    EXPECT_EQ(Bytes(buf + 38, buf + 42), (Bytes{198, 18, 0, 254}));
    const auto target6 = test::ip("2001:db8:18::abcd");
    const uint32_t len = build_neighbor_solicitation(port, target6.data(), buf);
    ASSERT_EQ(len, 14u + 40 + 32);
    EXPECT_EQ(Bytes(buf, buf + 6), (Bytes{0x33, 0x33, 0xff, 0, 0xab, 0xcd}));
    EXPECT_EQ(buf[14 + 7], 255) << "hop limit";
    // The ICMPv6 checksum verifies with an independent sum over pseudo-header and message.
    uint32_t sum = test::sum16(buf + 14 + 8, 32) + 58 + 32;
    sum = test::sum16(buf + 54, 32, sum);
    EXPECT_EQ(test::finish(sum), 0);
    PortConf bare;
    EXPECT_EQ(build_arp_request(bare, target4, buf), 0u);
}

// With UDP checksum offload on the outer port, the IPv6 outer UDP checksum field holds the
// pseudo-header sum for the device to complete, and the verdict says so.
// A frame to `dst` (10.30.0.0/16: the IPv6 tunnel "v6"; 10.20.0.0/16: an IPv4 one) through config
// `text`, the wan port offering UDP checksum offload or not; the verdict, and the frame in `out`.
Outcome encap_via(const std::string& text, bool offload, Bytes& out,
                  const char* dst = "10.30.0.9") {
    Config cfg = parse_config(text, "unit.toml");
    cfg.ports[kWan].tx_udp_cksum_offload = offload;
    NeighborTable table;
    auto snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, table);
    test::TestFrame t(roce4("10.10.0.5", dst, 0x02));
    const Outcome v = process_packet(*snap, kLan, t.frame);
    out = t.bytes();
    return v;
}

TEST(Offload, OuterIpv6UdpChecksumLeftToDevice) {
    Bytes out;
    const Outcome v = encap_via(kConfig, true, out);
    ASSERT_EQ(v.drop, DropReason::none);
    EXPECT_TRUE(v.tx_udp6_cksum);
    const uint32_t udp_len = static_cast<uint32_t>(out.size() - 14 - 40);
    uint32_t sum = test::sum16(out.data() + 14 + 8, 32) + 17 + udp_len;
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    EXPECT_EQ(out[14 + 40 + 6] << 8 | out[14 + 40 + 7], static_cast<int>(sum))
        << "pseudo-header sum, not complemented";
    // IPv4 outer tunnels never ask for it.
    Bytes out4;
    EXPECT_FALSE(encap_via(kConfig, true, out4, "10.20.0.9").tx_udp6_cksum);
}

// `udp6_zero_checksum_tx`: the IPv6 outer UDP checksum is zero (RFC 6935/6936), whether or not
// the device could have summed it, and nothing is left to the device.
TEST(Offload, ZeroOuterIpv6UdpChecksumWhenTheTunnelSaysSo) {
    std::string text = kConfig;
    const std::string key = "routes = [\"10.30.0.0/16\", \"fd00:30::/48\"]\nttl = 9\n";
    ASSERT_NE(text.find(key), std::string::npos);
    text.replace(text.find(key), key.size(), key + "udp6_zero_checksum_tx = true\n");
    for (const bool offload : {false, true}) {
        Bytes out;
        const Outcome v = encap_via(text, offload, out);
        ASSERT_EQ(v.drop, DropReason::none);
        EXPECT_FALSE(v.tx_udp6_cksum) << "offload " << offload;
        EXPECT_EQ(out[14 + 6], 17) << "UDP over IPv6";
        EXPECT_EQ(out[14 + 40 + 6] << 8 | out[14 + 40 + 7], 0)
            << "zero checksum, offload " << offload;
    }
}

TEST_F(Pipeline, NoHeadroomLeavesFrameUntouched) {
    const Bytes in = roce4("10.10.0.5", "10.20.0.9", 26 << 2);
    test::TestFrame t(in, 10);
    const Outcome v = process_packet(*snap_, kLan, t.frame);
    EXPECT_EQ(v.drop, DropReason::no_headroom);
    EXPECT_EQ(t.bytes(), in);
}

// The burst tests' world: the unit config's snapshot and a small mbuf pool to put frames in.
class Burst : public ::testing::Test {
  protected:
    void SetUp() override {
        snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, neighbors);
        pool = rte_pktmbuf_pool_create(("unit_burst" + std::to_string(++pools)).c_str(), 63, 0, 0,
                                       2048 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
        ASSERT_NE(pool, nullptr);
    }
    void TearDown() override {
        rte_mempool_free(pool);
        rte_mempool_free(big);
    }
    // A pool for the cache tests' 1.5 kBurst bursts.
    rte_mempool* big_pool() {
        big = rte_pktmbuf_pool_create(("unit_runs" + std::to_string(++pools)).c_str(), 255, 0, 0,
                                      2048 + RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
        EXPECT_NE(big, nullptr);
        return big;
    }
    rte_mbuf* put(const Bytes& b) {
        rte_mbuf* m = rte_pktmbuf_alloc(pool);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(b.size())), b.data(), b.size());
        return m;
    }

    const Config cfg = parse_config(kConfig, "unit.toml");
    NeighborTable neighbors;
    std::unique_ptr<Snapshot> snap;
    rte_mempool* pool = nullptr;
    rte_mempool* big = nullptr;
    static inline int pools = 0;
};

TEST_F(Burst, CountsAndMultiSegmentDropped) {
    const unsigned start = rte_mempool_avail_count(pool);
    rte_mbuf* pkts[4] = {
        put(roce4("10.10.0.5", "10.20.0.9", 0)), put(roce4("10.10.0.5", "10.20.0.9", 0, 0x81)),
        put(roce4("10.10.0.5", "192.0.2.1", 0)), put(roce4("10.10.0.5", "10.20.0.9", 0))};
    rte_mbuf* tail = rte_pktmbuf_alloc(pool);
    rte_pktmbuf_append(tail, 10);
    ASSERT_EQ(rte_pktmbuf_chain(pkts[3], tail), 0);
    auto st = std::make_unique<WorkerStats>();
    std::vector<rte_mbuf*> out;
    BurstState bs;
    process_burst(
        *snap, kLan, pkts, 4, *st, bs,
        [&](uint16_t port, rte_mbuf* m, bool) {
            EXPECT_EQ(port, kWan);
            out.push_back(m);
        },
        NoObserver{});
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0]->pkt_len, 50u + 14 + 20 + 8 + 12 + 32);
    EXPECT_EQ(out[0]->data_len, out[0]->pkt_len);
    EXPECT_EQ(st->port[PortCounter::rx_packets][kLan].get(), 4u);
    EXPECT_EQ(st->bank[0].cls[ClassCounter::packets][0].get(), 1u);
    EXPECT_EQ(st->bank[0].cls[ClassCounter::packets][1].get(), 2u);
    EXPECT_EQ(st->bank[0].cls[ClassCounter::bytes][1].get(), 2u * (14 + 20 + 8 + 12 + 32))
        << "bytes as received, before encapsulation";
    EXPECT_EQ(st->bank[0].tunnel[TunnelCounter::encap_packets][0].get(), 2u);
    EXPECT_EQ(st->drops[static_cast<size_t>(DropReason::no_route)].get(), 1u);
    EXPECT_EQ(st->drops[static_cast<size_t>(DropReason::multi_segment)].get(), 1u);
    EXPECT_EQ(st->dataplane[DataplaneCounter::dscp_rewrites][0].get(), 3u);
    for (rte_mbuf* m : out) rte_pktmbuf_free(m);
    EXPECT_EQ(rte_mempool_avail_count(pool), start) << "dropped packets are freed, none leaked";
}

// The unit config with tunnel "fixed"'s outer_dscp a map (26 -> 46, default 8).
Config mapped_config() {
    std::string text = kConfig;
    const std::string fixed = "outer_dscp = 34\n";
    EXPECT_NE(text.find(fixed), std::string::npos);
    text.replace(text.find(fixed), fixed.size(),
                 "outer_dscp = { map = { 26 = 46 }, default = 8 }\n");
    return parse_config(text, "unit.toml");
}

// A tunnel's outer_dscp map: one table for every policy; its own keys count as hits per tunnel,
// its default does not; the inner DSCP stays the class's.
TEST_F(Burst, OuterDscpMapAppliedAndHitsCounted) {
    const Config mapped = mapped_config();
    const uint16_t fixed_id = 2;
    ASSERT_EQ(mapped.tunnels[fixed_id].name, "fixed");
    EXPECT_EQ(mapped.tunnels[fixed_id].outer_map[26], 46);
    EXPECT_EQ(mapped.tunnels[fixed_id].outer_map[48], 8);
    EXPECT_EQ(mapped.tunnels[fixed_id].outer_map_keys, uint64_t{1} << 26);
    NeighborTable nt;
    auto ms = build_snapshot(mapped, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, nt);
    // RoCE data (class 26, a map key) twice, a CNP (class 48: the default).
    rte_mbuf* pkts[3] = {put(roce4("10.10.0.5", "10.40.0.9", 0)),
                         put(roce4("10.10.0.5", "10.40.0.9", 0, 0x81)),
                         put(roce4("10.10.0.5", "10.40.0.9", 0))};
    auto st = std::make_unique<WorkerStats>();
    std::vector<rte_mbuf*> out;
    BurstState bs;
    process_burst(
        *ms, kLan, pkts, 3, *st, bs, [&](uint16_t, rte_mbuf* m, bool) { out.push_back(m); },
        NoObserver{});
    ASSERT_EQ(out.size(), 3u);
    const auto outer_dscp = [](rte_mbuf* m) { return rte_pktmbuf_mtod(m, uint8_t*)[14 + 1] >> 2; };
    const auto inner_dscp = [](rte_mbuf* m) {
        return rte_pktmbuf_mtod(m, uint8_t*)[50 + 14 + 1] >> 2;
    };
    EXPECT_EQ(outer_dscp(out[0]), 46);
    EXPECT_EQ(outer_dscp(out[1]), 8);
    EXPECT_EQ(outer_dscp(out[2]), 46);
    EXPECT_EQ(inner_dscp(out[0]), 26);
    EXPECT_EQ(inner_dscp(out[1]), 48);
    EXPECT_EQ(st->bank[0].tunnel[TunnelCounter::outer_dscp_mapped][fixed_id].get(), 2u);
    EXPECT_EQ(st->bank[0].tunnel[TunnelCounter::encap_packets][fixed_id].get(), 3u);
    for (rte_mbuf* m : out) rte_pktmbuf_free(m);
}

// The flow caches' hits against the per-packet path, for the burst tests below: `frames` (with
// the device's RX flags `ol`) through process_burst() in bursts of the given sizes, with the
// worker's caches or without, with an observer or without (workers: NoObserver).
struct CacheRun {
    struct Seen {
        Verdict v;
        PacketNotes n;
        ptrdiff_t l3 = -1, bth = -1;  // The RoCE pointers, from the frame's start.
    };
    std::unique_ptr<WorkerStats> st = std::make_unique<WorkerStats>();
    std::unique_ptr<FlowTable> flows = std::make_unique<FlowTable>(8192);
    std::unique_ptr<EncapCache> encap = std::make_unique<EncapCache>();
    std::unique_ptr<DecapFlowCache> decap = std::make_unique<DecapFlowCache>();
    std::vector<std::pair<uint16_t, Bytes>> sent;
    std::vector<Seen> seen;
    size_t held = 0;  // Bursts that ended holding runs (hold).
};

// `hold`: the runs held across bursts as a worker holds them (BurstState::hold_runs), counted
// (flush_runs()) after one burst in five, as an idle poll would, and at the end.
CacheRun run_bursts(const Snapshot& s, uint16_t port, const std::vector<Bytes>& frames,
                    const std::vector<uint64_t>& ol, const std::vector<uint16_t>& bursts,
                    bool cached, bool observed, rte_mempool* pool, bool hold = false) {
    CacheRun res;
    BurstState bs;
    bs.hold_runs = hold;
    bs.flows = res.flows.get();
    bs.encap = cached ? res.encap.get() : nullptr;
    bs.decap_flows = cached ? res.decap.get() : nullptr;
    bs.now_tsc = 1;
    auto sink = [&](uint16_t out, rte_mbuf* m, bool) {
        const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
        res.sent.emplace_back(out, Bytes(d, d + m->data_len));
        rte_pktmbuf_free(m);
    };
    auto observe = [&](const rte_mbuf* m, const Verdict& v, const PacketNotes& n) {
        const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
        CacheRun::Seen x{v, n};
        if (n.roce_l3 != nullptr) x.l3 = n.roce_l3 - d, x.bth = n.roce_bth - d;
        x.n.roce_l3 = x.n.roce_bth = nullptr;
        res.seen.push_back(x);
    };
    size_t next = 0, held_bursts = 0;
    for (const uint16_t n : bursts) {
        std::vector<rte_mbuf*> pkts(n);
        for (uint16_t i = 0; i < n; ++i) {
            const Bytes& b = frames[next + i];
            pkts[i] = rte_pktmbuf_alloc(pool);
            std::memcpy(rte_pktmbuf_append(pkts[i], static_cast<uint16_t>(b.size())), b.data(),
                        b.size());
            pkts[i]->ol_flags = ol.empty() ? 0 : ol[next + i];
        }
        next += n;
        if (observed)
            process_burst(s, port, pkts.data(), n, *res.st, bs, sink, observe);
        else
            process_burst(s, port, pkts.data(), n, *res.st, bs, sink, NoObserver{});
        res.held += bs.runs_snap != nullptr;
        if (!hold) {
            EXPECT_EQ(bs.encap_runs.n + bs.decap_runs.n, 0) << "no run outlives its burst";
        } else if (++held_bursts % 5 == 0) {
            flush_runs(*res.st, bs);
        }
    }
    if (hold) {
        EXPECT_GT(res.held, 0u) << "runs were held across bursts";
        flush_runs(*res.st, bs);
        EXPECT_EQ(bs.encap_runs.n + bs.decap_runs.n, 0);
    }
    return res;
}

// Burst sizes for `frames` frames: 1 to kBurst, and one in eight 1.5 kBurst (process_burst()
// splits it).
std::vector<uint16_t> random_bursts(std::mt19937& rng, size_t frames) {
    std::vector<uint16_t> bursts;
    for (size_t done = 0; done < frames;) {
        const auto n = static_cast<uint16_t>(std::min<size_t>(
            rng() % 8 == 0 ? kBurst + kBurst / 2 : 1 + rng() % kBurst, frames - done));
        bursts.push_back(n);
        done += n;
    }
    return bursts;
}

// `r` counted, sent and observed exactly what the per-packet path `ref` did.
void expect_as_per_packet(const CacheRun& ref, const CacheRun& r, size_t frames) {
    auto words = [](const WorkerStats& st) {
        std::vector<uint64_t> w(sizeof st / 8);
        std::memcpy(w.data(), static_cast<const void*>(&st), sizeof st);
        return w;
    };
    auto table = [](const FlowTable& t) {
        std::vector<std::tuple<FlowKey, uint64_t, uint64_t, uint64_t, int16_t, bool>> rows;
        for (uint32_t i = 0; i < t.size(); ++i) {
            FlowSample f;
            if (t.read(i, f)) rows.emplace_back(f.key, f.pkts, f.bytes, f.cnps, f.tunnel, f.decap);
        }
        std::sort(rows.begin(), rows.end(),
                  [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
        return rows;
    };
    auto fields = [](const PacketNotes& n) {  // All but the RoCE pointers (Seen::l3, bth).
        return std::make_tuple(n.class_id, n.tunnel_id, n.dscp_in, n.dscp_out, n.outer_path,
                               n.dscp_rewritten, n.outer_remarked, n.ce_marked, n.outer_mapped,
                               n.colour1, n.adaptive1, n.pcp_in1, n.pcp_out1, n.policer,
                               n.pcp_mapped, n.pcp_set, n.qos_noted, n.ip_len);
    };
    EXPECT_EQ(ref.flows->evictions(), 0u) << "the table holds every conversation";
    const auto a = words(*ref.st), b = words(*r.st);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(b[i], a[i]) << "WorkerStats word " << i;
    EXPECT_TRUE(table(*r.flows) == table(*ref.flows));
    ASSERT_EQ(r.sent.size(), ref.sent.size());
    for (size_t i = 0; i < r.sent.size(); ++i) EXPECT_TRUE(r.sent[i] == ref.sent[i]) << i;
    if (r.seen.empty()) return;
    ASSERT_EQ(r.seen.size(), frames);
    ASSERT_EQ(ref.seen.size(), frames);
    for (size_t i = 0; i < frames; ++i) {
        const CacheRun::Seen &x = ref.seen[i], &y = r.seen[i];
        EXPECT_EQ(y.v.drop, x.v.drop) << i;
        EXPECT_EQ(y.v.out_port, x.v.out_port) << i;
        EXPECT_EQ(y.v.tx_udp6_cksum, x.v.tx_udp6_cksum) << i;
        EXPECT_EQ(y.v.local, x.v.local) << i;
        EXPECT_TRUE(fields(y.n) == fields(x.n)) << "notes of frame " << i;
        EXPECT_EQ(y.l3, x.l3) << i;
        EXPECT_EQ(y.bth, x.bth) << i;
    }
}

// A cache test's runs of the same frames and bursts: the per-packet path (no caches, observed),
// and with the caches: each burst's runs counted at its end (no observer, and observed), and the
// runs held across bursts, as workers run them.
struct CacheRuns {
    CacheRun per_packet, hits, observed, held;
};

CacheRuns run_four(const Snapshot& s, uint16_t port, const std::vector<Bytes>& frames,
                   const std::vector<uint64_t>& ol, const std::vector<uint16_t>& bursts,
                   rte_mempool* pool) {
    CacheRuns r;
    r.per_packet = run_bursts(s, port, frames, ol, bursts, false, true, pool);
    r.hits = run_bursts(s, port, frames, ol, bursts, true, false, pool);
    r.observed = run_bursts(s, port, frames, ol, bursts, true, true, pool);
    r.held = run_bursts(s, port, frames, ol, bursts, true, false, pool, true);
    return r;
}

// How many of `frames` the caches `r.hits` left would take as hits now (the cache did the work).
size_t warm_hits(const Snapshot& s, uint16_t port, const std::vector<Bytes>& frames,
                 const std::vector<uint64_t>& ol, const CacheRuns& r) {
    encap_fast::encap_cache_bind(*r.hits.encap, s);
    decap_fast::decap_cache_bind(*r.hits.decap, s);
    size_t n = 0;
    for (size_t i = 0; i < frames.size(); ++i) {
        test::TestFrame t(frames[i]);
        t.frame.rx_cksum = ol.empty() ? 0 : rx_cksum_bits(ol[i]);
        n += (s.ports[port].role == PortRole::inner
                  ? encap_fast::encap_hit(port, t.frame, *r.hits.encap).flow != nullptr
                  : decap_fast::decap_hit(port, t.frame, *r.hits.decap).flow != nullptr);
    }
    return n;
}

// A random flow of the cache tests: RoCE (one in ten plain UDP) from `src_net` ("10.20") to
// `dst_net`, a TOS of `toses`, one of a few BTH opcodes (the CNP among them) and a QP.
constexpr uint8_t kTestOpcodes[] = {0x04, 0x0a, 0x81, 0x00, 0x06};
struct TestFlow {
    std::string src, dst;
    uint16_t sport = 0, dport = 0;
    uint8_t tos = 0, opcode = 0;
    uint32_t dqp = 0;
    size_t tunnel = 0;  // The decap test's.
};

TestFlow random_flow(std::mt19937& rng, const std::string& src_net, const std::string& dst_net,
                     const std::vector<uint8_t>& toses) {
    auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
    TestFlow f;
    f.src = src_net + "." + std::to_string(pick(4)) + "." + std::to_string(1 + pick(200));
    f.dst = dst_net + "." + std::to_string(pick(4)) + "." + std::to_string(1 + pick(200));
    f.sport = static_cast<uint16_t>(49152 + pick(16000));
    f.dport = pick(10) == 0 ? 9999 : 4791;
    f.tos = toses[pick(static_cast<uint32_t>(toses.size()))];
    f.opcode = kTestOpcodes[pick(5)];
    f.dqp = 0x100 + pick(64);
    return f;
}

// The burst loop counts an encap hit in its flow entry's run and the counters once a run
// (BurstCounters::hit()): the counters, the conversation table, the frames sent and what an
// observer sees must be those of the per-packet path (no cache), whatever the mix: hot and cold
// flows (the cold ones push entries out of the cache mid-burst, refilled while other entries hold
// runs), CNPs, one 5-tuple carrying two destination QPs, an IPv6 underlay (its 70-byte headers in
// the tunnel's bytes), plain UDP, IPv6 inner frames, drops, tagged frames, and bursts over kBurst.
TEST_F(Burst, EncapHitRunsCountAsThePerPacketPath) {
    const Config mapped = mapped_config();
    NeighborTable nt;
    auto ms = build_snapshot(mapped, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, nt);
    // The frames, from a fixed seed.
    std::mt19937 rng(15);
    auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
    const char* nets[] = {"10.20", "10.30", "10.40", "10.70"};  // Geneve/IPv4, IPv6 underlay,
                                                                // the mapped one, no neighbour.
    const std::vector<uint8_t> toses = {0, 2, 26 << 2, 26 << 2 | 1, 48 << 2 | 2};
    auto flow = [&](bool hot) {
        return random_flow(rng, "10.10", nets[hot ? pick(3) : pick(4)], toses);
    };
    std::vector<TestFlow> hot, cold;
    for (int i = 0; i < 8; ++i) hot.push_back(flow(true));
    for (int i = 0; i < 600; ++i) cold.push_back(flow(false));
    std::vector<Bytes> frames;
    for (int i = 0; i < 6000; ++i) {
        const uint32_t r = pick(100);
        if (r < 5) {
            frames.push_back(roce6("fd00:10::" + std::to_string(1 + pick(9)),
                                   "fd00:20::" + std::to_string(1 + pick(9)), toses[pick(5)],
                                   kTestOpcodes[pick(5)]));
            continue;
        }
        if (r < 7) {
            frames.push_back(roce4("10.10.0.5", "192.0.2." + std::to_string(1 + pick(9)), 0));
            continue;
        }
        if (r < 8) {
            frames.push_back(roce4("10.10.0.5", "10.20.0.9", 0, 4, 32, 49152, 5));
            continue;
        }
        const TestFlow& f = r < 80 ? hot[pick(8)] : cold[pick(600)];
        // One in ten of a flow's packets to another QP: the entry's run changes hands.
        const uint32_t dqp = pick(10) == 0 ? f.dqp + 1 : f.dqp;
        PacketBuilder b;
        b.eth({2, 0, 0, 0, 0x10, 1}, {2, 0, 0, 0, 0x10, 2})
            .ipv4(f.src, f.dst, f.tos)
            .udp(f.sport, f.dport);
        if (f.dport == 4791) b.bth(f.opcode, dqp);
        frames.push_back(b.payload(pick(300)).build());
    }
    const CacheRuns r =
        run_four(*ms, kLan, frames, {}, random_bursts(rng, frames.size()), big_pool());

    // The mix reached what it is about, and the cache took most of it.
    const ConfigCounters& cc = r.per_packet.st->bank[0];
    uint64_t encaps = 0, cnps = 0;
    for (size_t t = 0; t < kMaxTunnels; ++t) {
        encaps += cc.tunnel[TunnelCounter::encap_packets][t].get();
        cnps += cc.tunnel[TunnelCounter::cnp_encap][t].get();
    }
    EXPECT_GT(encaps, 4000u);
    EXPECT_GT(cnps, 500u);
    EXPECT_GT(cc.tunnel[TunnelCounter::encap_packets][1].get(), 500u) << "the IPv6 underlay";
    EXPECT_GT(cc.tunnel[TunnelCounter::outer_dscp_mapped][2].get(), 200u);
    EXPECT_GT(r.per_packet.st->drops[static_cast<size_t>(DropReason::no_route)].get(), 50u);
    EXPECT_GT(r.per_packet.st->drops[static_cast<size_t>(DropReason::no_neighbor)].get(), 20u);
    EXPECT_GT(warm_hits(*ms, kLan, frames, {}, r), 4000u);
    expect_as_per_packet(r.per_packet, r.hits, frames.size());
    expect_as_per_packet(r.per_packet, r.observed, frames.size());
    expect_as_per_packet(r.per_packet, r.held, frames.size());
}

// The same for decap hits (DecapFlowCache): hot and cold flows over four IPv4 tunnels (Geneve and
// VXLAN, one that copies the outer DSCP and ignores ECN), outer TOS
// bleached, kept or CE-marked over every inner ECN, CNPs, two QPs a flow, and what must not hit:
// wrong outer checksums (and the device's verdicts both ways), IEEE link-local inner
// destinations, Geneve options (one critical, one mimicking a frame), an unknown VNI, truncated and
// padded frames, inner IPv6, an IPv6 underlay, inner packets over the LAN's MTU. To an untagged
// LAN, and to a tagged one (its VLAN, the PCP from its dscp_to_pcp), where hits push the tag.
TEST_F(Burst, DecapHitRunsCountAsThePerPacketPath) {
    std::mt19937 rng(16);
    auto pick = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
    struct Tunnel {
        const char* remote;
        uint16_t port;
        uint32_t vni;
        bool v6 = false;
    };
    // g4, fixed (copy-outer, ecn off), narrow, nh4, and v6 over an IPv6 underlay.
    const Tunnel tunnels[] = {{"198.18.7.7", 6081, 100},
                              {"198.18.7.8", 4789, 300},
                              {"198.18.7.5", 6081, 600},
                              {"198.18.7.9", 6081, 700},
                              {"2001:db8:18::99", 4789, 200, true}};
    const std::vector<uint8_t> inner_toses = {0,           1,           2,       3,
                                              26 << 2 | 2, 26 << 2 | 1, 48 << 2, 46 << 2 | 3};
    const uint8_t outer_toses[] = {0, 2, 3, 26 << 2, 26 << 2 | 2, 26 << 2 | 3, 34 << 2, 48 << 2};
    auto flow = [&]() {
        TestFlow f = random_flow(rng, "10.20", "10.10", inner_toses);
        f.tunnel = pick(5);
        return f;
    };
    std::vector<TestFlow> hot, cold;
    for (int i = 0; i < 8; ++i) hot.push_back(flow());
    for (int i = 0; i < 600; ++i) cold.push_back(flow());
    // 32 bytes of Geneve options whose bytes, read as a frame at the eight-byte header's inner
    // offset, are Ethernet/IPv4/UDP of the plain form: the key reads them, but the slow way
    // finds the inner frame 32 bytes on, so no entry may be filled from them.
    const Bytes mimic = {0x01, 0x02, 0x03, 0x07, 0, 0,  0,  0, 0, 0,  0,  0, 0x08, 0x00, 0x45, 0, 0,
                         28,   0,    0,    0x40, 0, 64, 17, 0, 0, 10, 20, 0, 1,    10,   10};
    std::vector<Bytes> frames;
    std::vector<uint64_t> ol;
    for (int i = 0; i < 6000; ++i) {
        // The unusual frames (r >= 80) mostly of hot flows too, so that they meet their entry.
        const uint32_t r = pick(100);
        const TestFlow& f = pick(100) < 85 ? hot[pick(8)] : cold[pick(600)];
        const Tunnel& tun = tunnels[f.tunnel];
        const uint32_t dqp = pick(10) == 0 ? f.dqp + 1 : f.dqp;
        std::array<uint8_t, 6> inner_dst{2, 0, 0, 0, 0x10, 1};
        if (r == 80 || r == 81) inner_dst = {0x01, 0x80, 0xc2, 0, 0, 0x0e};  // LLDP's.
        PacketBuilder in;
        if (r == 82 || r == 83) {
            in.eth(inner_dst).ipv6("fd00:20::5", "fd00:10::9", f.tos);
        } else {
            in.eth(inner_dst).ipv4(f.src, f.dst, f.tos);
        }
        in.udp(f.sport, f.dport);
        if (f.dport == 4791) in.bth(f.opcode, dqp);
        const Bytes inner = in.payload(r == 84 ? 1480 : pick(300)).build();
        PacketBuilder out;
        const uint8_t otos = outer_toses[pick(8)];
        if (r == 85 || r == 86 || tun.v6) {
            out.eth(kWanMac, kNh6).ipv6("2001:db8:18::99", "2001:db8:18::1", otos);
            out.udp(50000 + static_cast<uint16_t>(pick(100)), 4789, true).vxlan(200);
        } else {
            out.eth(kWanMac, kNh4).ipv4(tun.remote, "198.18.0.1", otos);
            out.udp(50000 + static_cast<uint16_t>(pick(100)), tun.port, false);
            const uint32_t vni = r == 87 ? 999 : tun.vni;
            if (tun.port == 4789)
                out.vxlan(vni);
            else
                out.geneve(vni, r == 88   ? Bytes{0x01, 0x02, 0x03, 0x00}  // An option,
                                : r == 96 ? Bytes{0x01, 0x02, 0x83, 0x00}  // a critical one,
                                : r == 97 ? mimic  // options that look like a frame.
                                          : Bytes{});
        }
        Bytes b = out.raw(inner).build();
        uint64_t flags = 0;
        if (r == 89) b[14 + 10] ^= 0x40;  // A wrong outer header checksum.
        if (r == 90) b[14 + 10] ^= 0x40, flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD;
        if (r == 91) flags = RTE_MBUF_F_RX_IP_CKSUM_BAD;
        if (r == 92) flags = RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_BAD;
        // Over IPv6 a wrong UDP checksum (a payload byte changed), which the device may vouch for.
        if (r == 98 || r == 99) b.back() ^= 0x20, flags = r == 99 ? RTE_MBUF_F_RX_L4_CKSUM_GOOD : 0;
        if (r == 93) b.resize(b.size() - 1 - pick(20));             // Truncated.
        if (r == 94 || r == 95) b.resize(b.size() + 1 + pick(30));  // Ethernet padding.
        frames.push_back(b);
        ol.push_back(flags);
    }
    const std::vector<uint16_t> bursts = random_bursts(rng, frames.size());
    std::string text = kConfig;
    const std::string lan = "device = \"net_null0\"\nmtu = 1500\n";
    ASSERT_NE(text.find(lan), std::string::npos);
    text.replace(text.find(lan), lan.size(),
                 lan + "vlan = 100\ndscp_to_pcp = { 26 = 3, 48 = 6, default = 1 }\n");
    auto tagged = build_snapshot(parse_config(text, "tagged.toml"),
                                 {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, neighbors);
    ASSERT_EQ(tagged->ports[kLan].vlan, 100);
    for (const Snapshot* s : {snap.get(), tagged.get()}) {
        SCOPED_TRACE(s == tagged.get() ? "tagged LAN" : "untagged LAN");
        rte_mempool_free(big);
        const CacheRuns r = run_four(*s, kWan, frames, ol, bursts, big_pool());

        const ConfigCounters& cc = r.per_packet.st->bank[0];
        uint64_t decaps = 0, cnps = 0, remarked = 0, ce = 0;
        for (size_t t = 0; t < kMaxTunnels; ++t) {
            decaps += cc.tunnel[TunnelCounter::decap_packets][t].get();
            cnps += cc.tunnel[TunnelCounter::cnp_decap][t].get();
            remarked += cc.tunnel[TunnelCounter::outer_dscp_remarked][t].get();
            ce += cc.tunnel[TunnelCounter::ecn_ce_marked][t].get();
        }
        EXPECT_GT(decaps, 3000u);
        EXPECT_GT(cnps, 300u);
        EXPECT_GT(remarked, 1000u);
        EXPECT_GT(ce, 200u);
        EXPECT_GT(r.per_packet.st->dataplane[DataplaneCounter::dscp_rewrites][0].get(), 500u);
        for (const DropReason d :
             {DropReason::bad_checksum, DropReason::inner_link_local, DropReason::bad_tunnel_header,
              DropReason::unknown_vni, DropReason::ecn_ce_on_not_ect, DropReason::too_big})
            EXPECT_GT(r.per_packet.st->drops[static_cast<size_t>(d)].get(), 10u)
                << drop_reason_name(d);
        EXPECT_EQ(r.per_packet.st->dataplane[DataplaneCounter::pcp_rewrites][0].get() > 3000,
                  s == tagged.get());
        EXPECT_GT(warm_hits(*s, kWan, frames, ol, r), 3000u);
        expect_as_per_packet(r.per_packet, r.hits, frames.size());
        expect_as_per_packet(r.per_packet, r.observed, frames.size());
        expect_as_per_packet(r.per_packet, r.held, frames.size());
    }
}

// A worker holds its hits' runs across bursts (BurstState::hold_runs): they reach the counters
// and the conversation table only at flush_runs(), and runs held under one snapshot are counted
// in its counter bank before a burst under the next one (which has the other bank) binds the
// cache, so a reload's retired bank gets every packet of its snapshot.
TEST_F(Burst, HeldRunsCountInTheirSnapshotsBank) {
    auto next = build_snapshot(cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, neighbors);
    next->bank = 1;
    next->generation = snap->generation + 1;
    auto st = std::make_unique<WorkerStats>();
    auto flows = std::make_unique<FlowTable>(1024);
    auto encap = std::make_unique<EncapCache>();
    BurstState bs;
    bs.hold_runs = true;
    bs.flows = flows.get();
    bs.encap = encap.get();
    bs.now_tsc = 1;
    size_t sent = 0;
    auto burst = [&](const Snapshot& s, uint16_t n) {
        std::vector<rte_mbuf*> pkts;
        for (uint16_t i = 0; i < n; ++i) pkts.push_back(put(roce4("10.10.0.5", "10.20.0.9", 0)));
        process_burst(
            s, kLan, pkts.data(), n, *st, bs,
            [&](uint16_t, rte_mbuf* m, bool) {
                ++sent;
                rte_pktmbuf_free(m);
            },
            NoObserver{});
    };
    auto encaps = [&](size_t bank) {
        uint64_t n = 0;
        for (size_t t = 0; t < kMaxTunnels; ++t)
            n += st->bank[bank].tunnel[TunnelCounter::encap_packets][t].get();
        return n;
    };
    auto conversation = [&] {
        uint64_t n = 0;
        for (uint32_t i = 0; i < flows->size(); ++i)
            if (FlowSample f; flows->read(i, f)) n += f.pkts;
        return n;
    };
    burst(*snap, 8);  // The first fills the entry (counted now), seven hits held.
    EXPECT_EQ(sent, 8u);
    EXPECT_EQ(encaps(0), 1u);
    EXPECT_EQ(conversation(), 1u);
    EXPECT_EQ(st->port[PortCounter::rx_packets][kLan].get(), 8u) << "the port's own, per burst";
    EXPECT_EQ(bs.runs_snap, snap.get());
    burst(*snap, 8);
    EXPECT_EQ(encaps(0), 1u) << "still held";
    burst(*next, 4);  // The held 15 to bank 0 first; one fill and three hits held under `next`.
    EXPECT_EQ(encaps(0), 16u);
    EXPECT_EQ(encaps(1), 1u);
    EXPECT_EQ(conversation(), 17u);
    EXPECT_EQ(bs.runs_snap, next.get());
    flush_runs(*st, bs);
    EXPECT_EQ(bs.runs_snap, nullptr);
    EXPECT_EQ(encaps(0), 16u);
    EXPECT_EQ(encaps(1), 4u);
    EXPECT_EQ(conversation(), 20u);
    EXPECT_EQ(st->bank[0].cls[ClassCounter::packets][kNoClass].get() +
                  st->bank[1].cls[ClassCounter::packets][kNoClass].get(),
              0u)
        << "a class took every packet";
    flush_runs(*st, bs);  // Nothing held: nothing counted twice.
    EXPECT_EQ(encaps(1), 4u);
}

// A DF packet too big for its tunnel gets an ICMP error, unless its sender is no unicast host
// (RFC 1812 4.3.2.7): then the error is counted as suppressed.
TEST_F(Burst, TooBigAnsweredOrSuppressed) {
    rte_mbuf* pkts[2] = {put(roce4("10.10.0.5", "10.60.0.9", 0, 4, 1400)),
                         put(roce4("224.0.0.9", "10.60.0.9", 0, 4, 1400))};
    auto st = std::make_unique<WorkerStats>();
    std::vector<rte_mbuf*> out;
    BurstState bs;
    process_burst(
        *snap, kLan, pkts, 2, *st, bs,
        [&](uint16_t port, rte_mbuf* m, bool) {
            EXPECT_EQ(port, kLan) << "the error goes back to the sender";
            out.push_back(m);
        },
        NoObserver{});
    EXPECT_EQ(out.size(), 1u);
    EXPECT_EQ(st->drops[static_cast<size_t>(DropReason::too_big)].get(), 2u);
    EXPECT_EQ(st->dataplane[DataplaneCounter::icmp_too_big_sent][0].get(), 1u);
    EXPECT_EQ(st->dataplane[DataplaneCounter::icmp_too_big_suppressed][0].get(), 1u);
    for (rte_mbuf* m : out) rte_pktmbuf_free(m);
}

// The device's checksum verdicts as RxCksum bits: GOOD a layer's good bit, BAD its bad bit, NONE
// (field wrong, data intact) both, UNKNOWN neither; the IP and L4 verdicts independent of each
// other and of the other offload flags.
TEST(RxCksumBits, EachVerdictOfEachLayer) {
    struct V {
        uint64_t ip, l4;
        uint8_t ip_bits, l4_bits;
    };
    const V ips[] = {{RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, 0, 0, 0},
                     {RTE_MBUF_F_RX_IP_CKSUM_GOOD, 0, kRxIpGood, 0},
                     {RTE_MBUF_F_RX_IP_CKSUM_BAD, 0, kRxIpBad, 0},
                     {RTE_MBUF_F_RX_IP_CKSUM_NONE, 0, kRxIpGood | kRxIpBad, 0}};
    const V l4s[] = {{0, RTE_MBUF_F_RX_L4_CKSUM_UNKNOWN, 0, 0},
                     {0, RTE_MBUF_F_RX_L4_CKSUM_GOOD, 0, kRxL4Good},
                     {0, RTE_MBUF_F_RX_L4_CKSUM_BAD, 0, kRxL4Bad},
                     {0, RTE_MBUF_F_RX_L4_CKSUM_NONE, 0, kRxL4Good | kRxL4Bad}};
    const uint64_t others = RTE_MBUF_F_RX_VLAN | RTE_MBUF_F_RX_RSS_HASH |
                            RTE_MBUF_F_RX_OUTER_L4_CKSUM_BAD | RTE_MBUF_F_RX_VLAN_STRIPPED |
                            RTE_MBUF_F_RX_OUTER_IP_CKSUM_BAD | RTE_MBUF_F_RX_IEEE1588_PTP;
    for (const V& ip : ips) {
        for (const V& l4 : l4s) {
            const auto want = static_cast<uint8_t>(ip.ip_bits | l4.l4_bits);
            EXPECT_EQ(rx_cksum_bits(ip.ip | l4.l4), want) << ip.ip << " " << l4.l4;
            EXPECT_EQ(rx_cksum_bits(ip.ip | l4.l4 | others), want) << ip.ip << " " << l4.l4;
        }
    }
}

// What the packet path makes of the device's verdict on the outer IPv4 header checksum: GOOD and
// NONE pass a wrong one (NONE: a NIC rewrote the header), BAD drops a right one, UNKNOWN leaves it
// to the software sum; an L4 verdict does not stand in for the IP one.
TEST_F(Burst, DeviceChecksumVerdictOnDecap) {
    const Bytes right = PacketBuilder()
                            .eth(kWanMac, kNh4)
                            .ipv4("198.18.7.7", "198.18.0.1", 0)
                            .udp(50000, 6081, false)
                            .geneve(100)
                            .raw(roce4("10.20.0.9", "10.10.0.5", 26 << 2))
                            .build();
    Bytes wrong = right;
    wrong[14 + 10] ^= 0x01;
    struct Case {
        const char* what;
        const Bytes* pkt;
        uint64_t ol;
        bool pass;
    };
    const Case cases[] = {
        {"right, unknown", &right, RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, true},
        {"wrong, unknown", &wrong, RTE_MBUF_F_RX_IP_CKSUM_UNKNOWN, false},
        {"wrong, good", &wrong, RTE_MBUF_F_RX_IP_CKSUM_GOOD, true},
        {"wrong, none", &wrong, RTE_MBUF_F_RX_IP_CKSUM_NONE, true},
        {"right, bad", &right, RTE_MBUF_F_RX_IP_CKSUM_BAD, false},
        {"wrong, L4 good only", &wrong, RTE_MBUF_F_RX_L4_CKSUM_GOOD, false},
        {"right, L4 bad only", &right, RTE_MBUF_F_RX_L4_CKSUM_BAD, true},
    };
    for (const Case& c : cases) {
        rte_mbuf* m = put(*c.pkt);
        m->ol_flags = c.ol;
        auto st = std::make_unique<WorkerStats>();
        BurstState bs;
        unsigned sent = 0;
        process_burst(
            *snap, kWan, &m, 1, *st, bs,
            [&](uint16_t port, rte_mbuf* out, bool) {
                EXPECT_EQ(port, kLan) << c.what;
                ++sent;
                rte_pktmbuf_free(out);
            },
            NoObserver{});
        EXPECT_EQ(sent, c.pass ? 1u : 0u) << c.what;
        EXPECT_EQ(st->drops[static_cast<size_t>(DropReason::bad_checksum)].get(), c.pass ? 0u : 1u)
            << c.what;
    }
}

}  // namespace
}  // namespace dscpgw
