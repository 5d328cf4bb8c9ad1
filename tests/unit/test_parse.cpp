#include <gtest/gtest.h>

#include "dataplane/packet.h"
#include "tests/unit/builder.h"

namespace dscpgw {
namespace {

using test::Bytes;
using test::PacketBuilder;

TEST(Parse, RoceV4Tagged) {
    auto p = PacketBuilder()
                 .eth({}, {}, 10)
                 .ipv4("10.0.0.1", "10.0.0.2", 0x6a)
                 .udp(1000, 4791)
                 .bth(0x81)
                 .payload(16)
                 .build();
    ParsedPacket pp;
    ASSERT_EQ(parse_packet(p.data(), static_cast<uint32_t>(p.size()), pp), DropReason::none);
    EXPECT_EQ(pp.vlan_tags, 1);
    EXPECT_EQ(pp.l3_off, 18);
    EXPECT_EQ(pp.ip_ver, 4);
    EXPECT_EQ(pp.dscp(), 26);
    EXPECT_EQ(pp.ecn(), 2);
    EXPECT_TRUE(pp.has_bth);
    EXPECT_EQ(pp.bth_opcode, 0x81);
    EXPECT_EQ(pp.dport, 4791);
    EXPECT_EQ(pp.ip_len, p.size() - 18);
}

TEST(Parse, Ipv4OptionsAndPadding) {
    auto p = PacketBuilder().eth().ipv4("10.0.0.1", "10.0.0.2", 0, 17, 0, 2).udp(1, 2).build();
    p.resize(60, 0);  // Ethernet padding is not part of the IP packet.
    ParsedPacket pp;
    ASSERT_EQ(parse_packet(p.data(), 60, pp), DropReason::none);
    EXPECT_EQ(pp.l4_off, 14 + 28);
    EXPECT_EQ(pp.ip_len, 28u + 8u);
}

TEST(Parse, Ipv6ExtensionHeadersAndFragments) {
    // Hop-by-hop (8 bytes) then UDP.
    auto p = PacketBuilder()
                 .eth()
                 .ipv6("fd00::1", "fd00::2", 0xb8, 0)
                 .raw({17, 0, 5, 2, 0, 0, 1, 0})
                 .udp(7, 4791)
                 .bth(4)
                 .build();
    ParsedPacket pp;
    ASSERT_EQ(parse_packet(p.data(), static_cast<uint32_t>(p.size()), pp), DropReason::none);
    EXPECT_EQ(pp.proto, 17);
    EXPECT_EQ(pp.l4_off, 14 + 40 + 8);
    EXPECT_TRUE(pp.has_bth);
    EXPECT_EQ(pp.dscp(), 46);
    // A non-first fragment has no transport header.
    auto f = PacketBuilder()
                 .eth()
                 .ipv6("fd00::1", "fd00::2", 0, 44)
                 .raw({17, 0, 0x01, 0x00, 0, 0, 0, 1})
                 .payload(40)
                 .build();
    ASSERT_EQ(parse_packet(f.data(), static_cast<uint32_t>(f.size()), pp), DropReason::none);
    EXPECT_TRUE(pp.is_fragment);
    EXPECT_FALSE(pp.has_ports);
    EXPECT_EQ(pp.proto, 17);
    // An IPv4 non-first fragment likewise.
    auto f4 = PacketBuilder().eth().ipv4("10.0.0.1", "10.0.0.2", 0, 17, 0x0010).payload(30).build();
    ASSERT_EQ(parse_packet(f4.data(), static_cast<uint32_t>(f4.size()), pp), DropReason::none);
    EXPECT_TRUE(pp.is_fragment);
    EXPECT_FALSE(pp.has_ports);
}

TEST(Parse, NotIp) {
    auto p = PacketBuilder().eth().payload(46).build();
    p[12] = 0x08;
    p[13] = 0x06;
    ParsedPacket pp;
    ASSERT_EQ(parse_packet(p.data(), static_cast<uint32_t>(p.size()), pp), DropReason::none);
    EXPECT_EQ(pp.ip_ver, 0);
}

struct BadCase {
    const char* what;
    Bytes pkt;
    DropReason expect;
};

TEST(Parse, MalformedTable) {
    auto good = PacketBuilder()
                    .eth()
                    .ipv4("10.0.0.1", "10.0.0.2", 0)
                    .udp(1, 4791)
                    .bth(4)
                    .payload(4)
                    .build();
    auto bad_ver = good;
    bad_ver[14] = 0x65;
    auto bad_ihl = good;
    bad_ihl[14] = 0x43;
    auto long_total = good;
    long_total[16] = 0x05;
    auto short_total = good;
    short_total[16] = 0;
    short_total[17] = 10;
    auto v6 = PacketBuilder().eth().ipv6("fd00::1", "fd00::2", 0).udp(1, 2).build();
    auto v6_long = v6;
    v6_long[18] = 0x10;
    auto bad_v6_ver = v6;
    bad_v6_ver[14] = 0x40;
    auto udp_cut = PacketBuilder().eth().ipv4("10.0.0.1", "10.0.0.2", 0, 17).payload(4).build();
    auto bth_cut =
        PacketBuilder().eth().ipv4("10.0.0.1", "10.0.0.2", 0).udp(1, 4791).payload(8).build();
    const BadCase cases[] = {
        {"empty", {}, DropReason::truncated},
        {"13 bytes", Bytes(13, 0), DropReason::truncated},
        {"VLAN tag cut", Bytes{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x81, 0, 0, 1},
         DropReason::truncated},
        {"IPv4 header cut", Bytes(good.begin(), good.begin() + 30), DropReason::truncated},
        {"IPv4 version 6 under 0x0800", bad_ver, DropReason::bad_ip_header},
        {"IHL 3", bad_ihl, DropReason::bad_ip_header},
        {"total length past frame", long_total, DropReason::truncated},
        {"total length below IHL", short_total, DropReason::bad_ip_header},
        {"IPv6 payload past frame", v6_long, DropReason::truncated},
        {"IPv6 version 4 under 0x86dd", bad_v6_ver, DropReason::bad_ip_header},
        {"UDP header cut", udp_cut, DropReason::truncated},
        {"BTH cut", bth_cut, DropReason::truncated},
    };
    for (const auto& c : cases) {
        ParsedPacket pp;
        EXPECT_EQ(parse_packet(c.pkt.data(), static_cast<uint32_t>(c.pkt.size()), pp), c.expect)
            << c.what;
    }
}

// Every prefix of a valid packet parses without reading past its end (ASan checks the reads).
TEST(Parse, EveryTruncationIsSafe) {
    const Bytes pkts[] = {
        PacketBuilder()
            .eth({}, {}, 5)
            .ipv4("10.0.0.1", "10.0.0.2", 0, 17, 0, 1)
            .udp(1, 4791)
            .bth(4)
            .payload(8)
            .build(),
        PacketBuilder()
            .eth()
            .ipv6("fd00::1", "fd00::2", 0, 0)
            .raw({17, 0, 5, 2, 0, 0, 1, 0})
            .udp(7, 4791)
            .bth(4)
            .build(),
    };
    for (const auto& p : pkts) {
        for (size_t n = 0; n < p.size(); ++n) {
            Bytes cut(p.begin(), p.begin() + static_cast<long>(n));
            ParsedPacket pp;
            const DropReason r = parse_packet(cut.data(), static_cast<uint32_t>(n), pp);
            EXPECT_NE(r, DropReason::none) << "length " << n;
        }
    }
}

}  // namespace
}  // namespace dscpgw
