// Border QoS I: the config keys and their refusals, the policers on a controlled clock, adaptive
// marking, the per-flow rate estimator, and the tagged LAN in both directions.
#include <gtest/gtest.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include <memory>
#include <string>

#include "config/config.h"
#include "dataplane/burst.h"
#include "dataplane/neighbor.h"
#include "dataplane/pipeline.h"
#include "dataplane/qos.h"
#include "tests/unit/builder.h"

namespace dscpgw {
namespace {

using test::Bytes;
using test::PacketBuilder;

constexpr const char* kBase = R"([[ports]]
name = "lan"
role = "inner"
device = "a"
vlan = 100
dscp_to_pcp = { 26 = 3, 48 = 6, default = 1 }
pcp_to_dscp = [0, 8, 16, 24, 32, 46, 48, 56]
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
mac = "02:00:00:00:00:01"
mtu = 9000
rate = "100Mbps"
[[tunnels]]
name = "t"
type = "vxlan"
vni = 7
remote = "198.18.7.7"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.20.0.0/16"]
)";

std::string error_of(const std::string& text) {
    try {
        parse_config(text, "q.toml");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

// The policers and classes of the pipeline tests: 8 Mbit/s (1 MB/s) committed, 16 Mbit/s peak,
// buckets of two and four 1000-byte packets.
constexpr const char* kQos = R"(
[[policers]]
name = "cap"
cir = "8Mbps"
pir = "16%"
cbs = 2000
pbs = "4kB"
yellow = 28
[[policers]]
name = "aware"
cir = 8000000
pir = 8000000
cbs = 1000
pbs = 1000
colour_aware = true
yellow = 28
red = 8
[[classes]]
name = "cnp"
match = { udp_dst_port = 4791, bth_opcode = 0x81 }
dscp = 48
policer = "cap"
[[classes]]
name = "data"
match = { udp_dst_port = 4791, pcp = 3 }
dscp = 26
policer = "cap"
[[classes]]
name = "big"
match = { udp_dst_port = 4791, pcp = 4 }
dscp = 26
adaptive = [{ min_bytes = 900, min_pps = 20000, dscp = 34 }, { min_bps = "100Mbps", dscp = 36 }]
[[classes]]
name = "pre"
match = { udp_dst_port = 4791, pcp = 5 }
dscp = 26
policer = "aware"
)";

TEST(QosConfig, RatesSizesAndShares) {
    const Config c = parse_config(std::string(kBase) + kQos, "q.toml");
    ASSERT_EQ(c.policers.size(), 2u);
    EXPECT_EQ(c.ports[1].rate, 100000000u);
    EXPECT_EQ(c.policers[0].cir, 8000000u);
    EXPECT_EQ(c.policers[0].pir, 16000000u) << "16% of the outer port's 100Mbps";
    EXPECT_EQ(c.policers[0].cbs, 2000u);
    EXPECT_EQ(c.policers[0].pbs, 4000u);
    EXPECT_EQ(c.policers[0].yellow, 28);
    EXPECT_EQ(c.policers[0].red, kColourDrop);
    EXPECT_TRUE(c.policers[1].colour_aware);
    EXPECT_EQ(c.classes[0].policer, 0);
    EXPECT_EQ(c.classes[1].policer, 0) << "two classes, one policer";
    ASSERT_EQ(c.classes[2].adaptive.size(), 2u);
    EXPECT_EQ(c.classes[2].adaptive[1].min_bps, 100000000u);
    EXPECT_TRUE(c.classes[1].has_pcp);
    EXPECT_EQ(c.ports[0].vlan, 100);
    EXPECT_EQ(c.ports[0].dscp_to_pcp[26], 3);
    EXPECT_EQ(c.ports[0].dscp_to_pcp[0], 1) << "default";
    EXPECT_EQ(c.ports[0].pcp_to_dscp[5], 46);
    EXPECT_TRUE(c.warnings.empty());
    // Defaults: trtcm, 10 ms of each rate; units.
    const Config d = parse_config(std::string(kBase) +
                                      "[[policers]]\nname = \"p\"\ncir = \"1.5Gbps\"\npir = "
                                      "\"2G\"\n[[policers]]\nname = \"s\"\nmode = \"srtcm\"\ncir "
                                      "= \"80%\"\ncbs = \"1MiB\"\n"
                                      "[[classes]]\nname = \"c\"\npolicer = \"p\"\n"
                                      "[[classes]]\nname = \"d\"\npolicer = \"s\"\n",
                                  "q.toml");
    EXPECT_EQ(d.policers[0].mode, MeterMode::trtcm);
    EXPECT_EQ(d.policers[0].cir, 1500000000u);
    EXPECT_EQ(d.policers[0].cbs, 1500000000u / 800) << "10 ms of cir";
    EXPECT_EQ(d.policers[0].pbs, 2000000000u / 800) << "10 ms of pir";
    EXPECT_EQ(d.policers[1].mode, MeterMode::srtcm);
    EXPECT_EQ(d.policers[1].cir, 80000000u);
    EXPECT_EQ(d.policers[1].cbs, 1048576u);
    EXPECT_EQ(d.policers[1].pbs, 80000000u / 800) << "EBS: 10 ms of cir";
}

TEST(QosConfig, RefusalsNameKeyAndPosition) {
    const std::string base = kBase;
    const std::string pol = "[[policers]]\nname = \"p\"\n";
    const std::string use = "[[classes]]\nname = \"c\"\npolicer = \"p\"\n";
    struct Case {
        std::string text, want;
    };
    const Case cases[] = {
        {base + pol + "cir = \"20Mbps\"\npir = \"10Mbps\"\n" + use,
         "q.toml:26:7: policers[0].pir: pir 10000000 bit/s is below cir 20000000 bit/s"},
        {std::string(kBase).replace(std::string(kBase).find("rate = \"100Mbps\"\n"), 17, "") + pol +
             "cir = \"80%\"\npir = \"100%\"\n" + use,
         "policers[0].cir: a \"%\" rate needs the line rate of port \"wan\": set its `rate`"},
        {base + pol + "cir = \"8Mbps\"\npir = \"8Mbps\"\n" + use +
             "[[policers]]\nname = \"q\"\ncir = 1000\npir = 1000\n",
         ""},  // Accepted (a warning; see below).
        {base + pol + "mode = \"srtcm\"\ncir = \"8Mbps\"\npir = \"9Mbps\"\n" + use,
         "policers[0].pir: srtcm (RFC 2697) has one rate: cir, cbs and ebs"},
        {base + pol + "cir = \"8 furlongs\"\npir = 1\n" + use,
         "policers[0].cir: \"8 furlongs\" is not a rate"},
        {base + pol + "cir = \"120%\"\npir = 1\n" + use,
         "policers[0].cir: \"120%\" is not a share in 0..100%"},
        {base + pol + "cir = 1000\npir = 1000\ncbs = \"5%\"\n" + use,
         "policers[0].cbs: \"5%\": a share (%) is not valid here"},
        {base + pol + "cir = 1000\npir = 1000\ncolour_aware = true\n" + use,
         "policers[0].colour_aware: colour-aware metering tells a packet's colour by the yellow"},
        {base + pol + "cir = 7\npir = 100\n" + use,
         "policers[0].cir: a policer rate is at least 8 bit/s"},
        {base + "[[classes]]\nname = \"c\"\npolicer = \"nope\"\n",
         "classes[0].policer: no [[policers]] named \"nope\""},
        {base + "[[classes]]\nname = \"c\"\nadaptive = [{ dscp = 34 }]\n",
         "classes[0].adaptive[0]: a rule needs min_bytes, min_pps and/or min_bps"},
        {base + "[[classes]]\nname = \"c\"\nmatch = { pcp = 8 }\n",
         "classes[0].match.pcp: 8 is out of range 0..7"},
        {std::string(kBase).replace(std::string(kBase).find("pcp_to_dscp = [0, 8, 16, 24, 32, 46, "
                                                            "48, 56]"),
                                    44, "pcp_to_dscp = [0, 8, 16]"),
         "q.toml:7:15: ports[0].pcp_to_dscp: expected 8 DSCPs, one per PCP 0..7"},
        {std::string(kBase).replace(std::string(kBase).find("26 = 3"), 6, "64 = 3"),
         "ports[0].dscp_to_pcp.64: map keys are DSCP values 0..63; \"64\" is not one"},
        {std::string(kBase).replace(std::string(kBase).find("26 = 3"), 6, "26 = 9"),
         "ports[0].dscp_to_pcp.26: 9 is out of range 0..7"},
        {std::string(kBase).replace(std::string(kBase).find("vlan = 100\n"), 11, ""),
         "ports[0].dscp_to_pcp: decapsulated frames carry a PCP only in a VLAN tag"},
        {std::string(kBase).replace(std::string(kBase).find("vlan = 100\n"), 11,
                                    "vlan = 100\nipv4 = \"10.0.0.1/24\"\n"),
         "ports[0].vlan: a tagged LAN is supported on a transparent inner port only"},
        {base + "inner_vlan = \"keep\"\n",
         "tunnels[0].inner_vlan: inner port \"lan\" tags its frames (vlan)"},
        {std::string(kBase).replace(std::string(kBase).find("vlan = 100"), 10, "vlan = 4095"),
         "ports[0].vlan: 4095 is out of range 1..4094"},
    };
    for (const Case& c : cases) {
        const std::string e = error_of(c.text);
        if (c.want.empty())
            EXPECT_EQ(e, "");
        else
            EXPECT_NE(e.find(c.want), std::string::npos) << "want: " << c.want << "\ngot: " << e;
    }
    // dscpgw-hostmark reads the same classes: it cannot match on PCP, and leaves policers and
    // adaptive rules to the gateway (their names are not even resolved).
    try {
        parse_classes("[[classes]]\nname = \"c\"\nmatch = { pcp = 3 }\n", "h.toml");
        ADD_FAILURE() << "hostmark accepted match.pcp";
    } catch (const ConfigError& e) {
        EXPECT_NE(
            std::string(e.what()).find(
                "h.toml:3:17: classes[0].match.pcp: dscpgw-hostmark cannot match on the VLAN"),
            std::string::npos)
            << e.what();
    }
    EXPECT_EQ(parse_classes("[[classes]]\nname = \"c\"\ndscp = 26\npolicer = \"elsewhere\"\n"
                            "adaptive = [{ min_pps = 10, dscp = 34 }]\n",
                            "h.toml")
                  .size(),
              1u);
    // A policer no class uses loads, with a warning naming it and where it is.
    const Config w = parse_config(cases[2].text, "q.toml");
    ASSERT_EQ(w.warnings.size(), 1u);
    EXPECT_NE(w.warnings[0].find("q.toml:30:1: warning: policers[1]: policer \"q\" is used by no "
                                 "class"),
              std::string::npos)
        << w.warnings[0];
}

class Qos : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        cfg_ = new Config(parse_config(std::string(kBase) + kQos, "q.toml"));
        neighbors_ = new NeighborTable();
        snap_ =
            build_snapshot(*cfg_, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, *neighbors_).release();
    }
    static void TearDownTestSuite() {
        delete snap_;
        delete neighbors_;
        delete cfg_;
    }
    // One packet at `now` (TSC units) through the inner path.
    static Outcome send(const Bytes& in, uint64_t now, FlowRates* rates = nullptr,
                        Bytes* out = nullptr) {
        test::TestFrame t(in);
        const QosClock clk{now, rates};
        Outcome o = process_packet(*snap_, 0, t.frame, nullptr, &clk);
        if (out != nullptr && o.drop == DropReason::none) *out = t.bytes();
        return o;
    }
    static uint64_t ms(double x) {
        return static_cast<uint64_t>(x * static_cast<double>(rte_get_tsc_hz()) / 1000.0);
    }

    static inline Config* cfg_ = nullptr;
    static inline Snapshot* snap_ = nullptr;
    static inline NeighborTable* neighbors_ = nullptr;
};

// A tagged RoCE frame of `ip_len` IP bytes (VLAN `vid`, priority `pcp`).
Bytes tagged_roce(uint8_t pcp, size_t ip_len, uint8_t tos = 0, uint8_t opcode = 4,
                  uint16_t vid = 100, uint16_t sport = 49152) {
    return PacketBuilder()
        .eth({2, 0, 0, 0, 0x10, 1}, {2, 0, 0, 0, 0x10, 2}, static_cast<uint16_t>(pcp << 13 | vid))
        .ipv4("10.10.0.5", "10.20.0.9", tos)
        .udp(sport, 4791)
        .bth(opcode)
        .payload(ip_len - 20 - 8 - 12)
        .build();
}

// Inner TOS of an encapsulated IPv4-in-VXLAN-over-IPv4 frame, and its outer TOS.
uint8_t inner_tos(const Bytes& b) { return b[14 + 20 + 8 + 8 + 14 + 1]; }
uint8_t outer_tos(const Bytes& b) { return b[14 + 1]; }

TEST_F(Qos, TrtcmColoursSharedByTwoClassesOnTheGivenClock) {
    // RFC 2698 colour-blind: 2000 bytes committed, 4000 peak, both full at the first packet.
    const uint64_t t0 = ms(1000);
    const Bytes data = tagged_roce(3, 1000), cnp = tagged_roce(3, 1000, 0, 0x81);
    std::vector<int> colours;
    std::vector<uint8_t> dscps;
    for (int i = 0; i < 5; ++i) {
        Bytes out;
        const Outcome o = send(i % 2 ? cnp : data, t0, nullptr, &out);
        colours.push_back(o.colour());
        dscps.push_back(o.drop == DropReason::none ? static_cast<uint8_t>(inner_tos(out) >> 2)
                                                   : uint8_t{255});
        if (i == 4) {
            EXPECT_EQ(o.drop, DropReason::policed) << "red = drop";
        }
        if (i == 2) {
            EXPECT_EQ(outer_tos(out) >> 2, 28) << "the outer header inherits yellow";
        }
    }
    EXPECT_EQ(colours, (std::vector<int>{kGreen, kGreen, kYellow, kYellow, kRed}));
    EXPECT_EQ(dscps, (std::vector<uint8_t>{26, 48, 28, 28, 255})) << "class DSCP, then yellow's";
    // 1 ms at 1 MB/s committed (2 MB/s peak) buys one 1000-byte green packet, then one yellow.
    EXPECT_EQ(send(data, t0 + ms(1)).colour(), kGreen);
    EXPECT_EQ(send(data, t0 + ms(1)).colour(), kYellow);
    EXPECT_EQ(send(data, t0 + ms(1)).colour(), kRed);
    // A clock that runs backwards (another worker's earlier burst) buys nothing.
    EXPECT_EQ(send(data, t0).colour(), kRed);
}

TEST_F(Qos, ColourAwareKeepsPreColouredPacketsAtTheirColour) {
    const uint64_t t0 = ms(5000);
    EXPECT_EQ(send(tagged_roce(5, 500, 8 << 2), t0).colour(), kRed) << "pre-red (DSCP 8) stays red";
    EXPECT_EQ(send(tagged_roce(5, 500, 28 << 2), t0).colour(), kYellow) << "pre-yellow";
    Bytes out;
    EXPECT_EQ(send(tagged_roce(5, 400, 0), t0, nullptr, &out).colour(), kGreen);
    EXPECT_EQ(inner_tos(out) >> 2, 26);
    // Yellow used the peak bucket: a green-marked packet now finds it short and turns red.
    EXPECT_EQ(send(tagged_roce(5, 600, 0), t0).colour(), kRed);
    EXPECT_EQ(send(tagged_roce(5, 600, 0), t0).drop, DropReason::none)
        << "red = 8 here: re-marked, not dropped";
}

TEST_F(Qos, AdaptiveRulesFollowTheFlowRate) {
    FlowRates rates(64, rte_get_tsc_hz());
    const uint64_t t0 = ms(9000);
    // 1000-byte packets every 25 us: 40 kpps, 320 Mbit/s. The first packets see a low rate.
    int first_marked = -1;
    for (int i = 0; i < 800; ++i) {
        Bytes out;
        const Outcome o = send(tagged_roce(4, 1000), t0 + ms(0.025 * i), &rates, &out);
        if (o.adaptive_rule() == 0 && first_marked < 0) first_marked = i;
        if (i >= 400) {
            EXPECT_EQ(o.adaptive_rule(), 0) << i;
            EXPECT_EQ(inner_tos(out) >> 2, 34) << i;
        }
    }
    // The estimate reaches 20 kpps once 200 packets are in the window (5 ms), not before.
    EXPECT_GE(first_marked, 195);
    EXPECT_LE(first_marked, 205);
    // Small packets of the same flow: rule 0 needs 900 bytes, rule 1 needs 100 Mbit/s of them:
    // 64-byte packets at 40 kpps are 20 Mbit/s: the class's DSCP.
    FlowRates small(64, rte_get_tsc_hz());
    Outcome o;
    for (int i = 0; i < 800; ++i)
        o = send(tagged_roce(4, 64, 0, 4, 100, 40000), t0 + ms(0.025 * i), &small);
    EXPECT_EQ(o.adaptive_rule(), -1);
    EXPECT_EQ(o.dscp_out, 26);
    // 1000-byte packets at 15 kpps (120 Mbit/s): below rule 0's rate, above rule 1's bits.
    FlowRates mid(64, rte_get_tsc_hz());
    for (int i = 0; i < 600; ++i) o = send(tagged_roce(4, 1000), t0 + ms(i / 15.0), &mid);
    EXPECT_EQ(o.adaptive_rule(), 1);
    EXPECT_EQ(o.dscp_out, 36);
    // Without a worker's estimator (no rates), rate rules never match.
    EXPECT_EQ(send(tagged_roce(4, 1000), t0).adaptive_rule(), -1);
}

TEST(FlowRatesEstimator, SlidingWindowCounter) {
    const uint64_t hz = 1000000000;  // Nanoseconds.
    FlowRates r(16, hz);
    uint64_t pps = 0, bps = 0;
    // 1 packet per 100 us: 10 kpps; once two windows have passed the estimate is exact.
    for (uint64_t t = 0; t < 30000000; t += 100000) r.update(42, 1000 + t, 125, pps, bps);
    EXPECT_NEAR(static_cast<double>(pps), 10000, 150);
    EXPECT_NEAR(static_cast<double>(bps), 10e6, 150 * 1000);
    // Silence of two windows: the old counts are gone.
    r.update(42, 1000 + 60000000, 125, pps, bps);
    EXPECT_EQ(pps, 100u) << "one packet in a 10 ms window";
    // Another flow is counted apart.
    r.update(43, 1000 + 60000000, 125, pps, bps);
    EXPECT_EQ(pps, 100u);
}

TEST_F(Qos, TaggedLanBothWays) {
    // In: only VLAN 100 is taken, untagged frames and other VLANs are dropped and named.
    const Bytes untagged = PacketBuilder()
                               .eth()
                               .ipv4("10.10.0.5", "10.20.0.9", 0)
                               .udp(1, 4791)
                               .bth(4)
                               .payload(16)
                               .build();
    EXPECT_EQ(send(untagged, ms(1)).drop, DropReason::wrong_vlan);
    EXPECT_EQ(send(tagged_roce(3, 100, 0, 4, 200), ms(1)).drop, DropReason::wrong_vlan);
    Bytes s_tag = tagged_roce(3, 100);
    s_tag[12] = 0x88;  // 802.1ad: VLAN 100 of a provider bridge, not the LAN's 802.1Q VLAN 100.
    s_tag[13] = 0xa8;
    EXPECT_EQ(send(s_tag, ms(1)).drop, DropReason::wrong_vlan);
    Bytes two = tagged_roce(3, 100);
    two.insert(two.begin() + 16, {0x81, 0x00, 0x00, 0x05});  // A second tag inside.
    EXPECT_EQ(send(two, ms(1)).drop, DropReason::wrong_vlan);
    // An unclassified tagged frame gets its DSCP from its PCP (pcp_to_dscp), inside and outside,
    // and leaves without the tag.
    const Bytes tcp = PacketBuilder()
                          .eth({2, 0, 0, 0, 0x10, 1}, {2, 0, 0, 0, 0x10, 2}, 5 << 13 | 100)
                          .ipv4("10.10.0.5", "10.20.0.9", 2, 6)
                          .payload(40)
                          .build();
    Bytes out;
    const Outcome o = send(tcp, ms(1), nullptr, &out);
    ASSERT_EQ(o.drop, DropReason::none);
    EXPECT_TRUE(o.pcp_mapped);
    EXPECT_EQ(o.pcp_in(), 5);
    EXPECT_EQ(inner_tos(out), 46 << 2 | 2);
    EXPECT_EQ(outer_tos(out), 46 << 2 | 2);
    EXPECT_EQ(out.size(), 14 + 20 + 8 + 8 + 14 + 20 + 40u) << "tag removed";
    // Out: decapsulated frames get VLAN 100 and the PCP of their DSCP.
    for (auto [dscp, pcp] : {std::pair<uint8_t, uint16_t>{26, 3}, {48, 6}, {10, 1}}) {
        const Bytes inner = PacketBuilder()
                                .eth()
                                .ipv4("10.20.0.9", "10.10.0.5", static_cast<uint8_t>(dscp << 2))
                                .udp(1, 4791)
                                .bth(4)
                                .payload(16)
                                .build();
        const Bytes outer = PacketBuilder()
                                .eth({2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 0xfe})
                                .ipv4("198.18.7.7", "198.18.0.1", static_cast<uint8_t>(dscp << 2))
                                .udp(50000, 4789, false)
                                .vxlan(7)
                                .raw(inner)
                                .build();
        test::TestFrame t(outer);
        const Outcome d = process_packet(*snap_, 1, t.frame);
        ASSERT_EQ(d.drop, DropReason::none) << drop_reason_name(d.drop);
        const Bytes got = t.bytes();
        ASSERT_EQ(got.size(), inner.size() + 4);
        EXPECT_EQ(got[12], 0x81);
        EXPECT_EQ(got[13], 0x00);
        EXPECT_EQ((got[14] << 8 | got[15]), pcp << 13 | 100) << int{dscp};
        EXPECT_TRUE(std::equal(got.begin() + 16, got.end(), inner.begin() + 12));
        EXPECT_TRUE(std::equal(got.begin(), got.begin() + 12, inner.begin()));
        EXPECT_EQ(d.pcp_out(), pcp);
        EXPECT_TRUE(d.pcp_set);
    }
}

// A reload keeps the buckets of a policer it does not change (no free burst per reload) and gives
// a changed one fresh buckets.
TEST_F(Qos, ReloadKeepsUnchangedPolicersBuckets) {
    NeighborTable nt;
    const Config same = parse_config(std::string(kBase) + kQos, "q.toml");
    std::string changed_text = std::string(kBase) + kQos;
    changed_text.replace(changed_text.find("cbs = 2000"), 10, "cbs = 3000");
    const Config changed = parse_config(changed_text, "q.toml");
    auto a = build_snapshot(same, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, nt);
    const auto send_on = [&](const Snapshot& s, uint64_t now) {
        test::TestFrame t(tagged_roce(3, 1000));
        const QosClock clk{now};
        return process_packet(s, 0, t.frame, nullptr, &clk).colour();
    };
    const uint64_t t0 = ms(50000);
    for (int i = 0; i < 4; ++i) send_on(*a, t0);
    EXPECT_EQ(send_on(*a, t0), kRed) << "both buckets drained";
    auto b = build_snapshot(same, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, nt);
    EXPECT_EQ(carry_meters(*a, *b), 2u);
    EXPECT_EQ(b->meters[0].get(), a->meters[0].get());
    a.reset();  // The old snapshot retired: its meters live on in the new one.
    EXPECT_EQ(send_on(*b, t0), kRed) << "still drained after the reload";
    auto c = build_snapshot(changed, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, nt);
    EXPECT_EQ(carry_meters(*b, *c), 1u) << "\"cap\" changed, \"aware\" did not";
    EXPECT_EQ(send_on(*c, t0), kGreen) << "a changed policer starts full";
}

// The burst glue counts what the QoS stage noted: colours per policer (red drops included, bytes as
// IP lengths), adaptive hits per class, DSCPs from PCPs, PCPs from DSCPs; freed what it dropped.
TEST_F(Qos, BurstCountsColoursAdaptiveHitsAndPcpMaps) {
    rte_mempool* pool =
        rte_pktmbuf_pool_create("unit_qos_burst", 63, 0, 0, 2048 + RTE_PKTMBUF_HEADROOM, 0);
    ASSERT_NE(pool, nullptr);
    const unsigned start = rte_mempool_avail_count(pool);
    const auto put = [&](const Bytes& b) {
        rte_mbuf* m = rte_pktmbuf_alloc(pool);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(b.size())), b.data(), b.size());
        return m;
    };
    const Bytes tcp = PacketBuilder()
                          .eth({2, 0, 0, 0, 0x10, 1}, {2, 0, 0, 0, 0x10, 2}, 5 << 13 | 100)
                          .ipv4("10.10.0.5", "10.20.0.9", 0, 6)
                          .payload(40)
                          .build();
    // Five 1000-byte packets at one instant through "cap": green, green, yellow, yellow, red.
    rte_mbuf* pkts[7];
    for (int i = 0; i < 5; ++i) pkts[i] = put(tagged_roce(3, 1000));
    pkts[5] = put(tagged_roce(4, 1000));  // "big": adaptive, but no rate yet: not a hit.
    pkts[6] = put(tcp);
    auto st = std::make_unique<WorkerStats>();
    FlowRates rates(64, rte_get_tsc_hz());
    BurstState bs;
    bs.now_tsc = ms(20000);
    bs.rates = &rates;
    std::vector<rte_mbuf*> out;
    process_burst(
        *snap_, 0, pkts, 7, *st, bs, [&](uint16_t, rte_mbuf* m, bool) { out.push_back(m); },
        NoObserver{});
    EXPECT_EQ(out.size(), 6u) << "the red one dropped";
    const auto& pol = st->bank[0].policer;
    EXPECT_EQ(pol[PolicerCounter::green_packets][0].get(), 2u);
    EXPECT_EQ(pol[PolicerCounter::yellow_packets][0].get(), 2u);
    EXPECT_EQ(pol[PolicerCounter::red_packets][0].get(), 1u);
    EXPECT_EQ(pol[PolicerCounter::red_bytes][0].get(), 1000u) << "IP bytes";
    EXPECT_EQ(st->drops[static_cast<size_t>(DropReason::policed)].get(), 1u);
    EXPECT_EQ(st->bank[0].cls[ClassCounter::adaptive_hits][2].get(), 0u);
    EXPECT_EQ(st->dataplane[DataplaneCounter::pcp_to_dscp][0].get(), 1u);
    // 40 kpps of 1000-byte packets of the "big" flow for 10 ms.
    uint64_t hits = 0;
    for (int i = 0; i < 400; ++i) {
        rte_mbuf* m = put(tagged_roce(4, 1000));
        bs.now_tsc = ms(30000 + 0.025 * i);
        process_burst(
            *snap_, 0, &m, 1, *st, bs, [&](uint16_t, rte_mbuf* x, bool) { rte_pktmbuf_free(x); },
            NoObserver{});
        hits = st->bank[0].cls[ClassCounter::adaptive_hits][2].get();
    }
    // Rule 1 (100 Mbit/s) matches from the 125th packet (125 kB in the window), rule 0 (20 kpps)
    // from the 200th on: 276 hits of either.
    EXPECT_GE(hits, 272u);
    EXPECT_LE(hits, 280u);
    for (rte_mbuf* m : out) rte_pktmbuf_free(m);
    EXPECT_EQ(rte_mempool_avail_count(pool), start);
    rte_mempool_free(pool);
}

}  // namespace
}  // namespace dscpgw
