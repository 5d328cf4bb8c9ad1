// dscpgw-hostmark's kernel-free half: the gateway's classes as BPF rules, and the counters as text.
#include <gtest/gtest.h>

#include "config/config.h"
#include "hostmark/rules.h"

namespace dscpgw::hostmark {
namespace {

constexpr const char* kClasses = R"(
[[ports]]
name = "lan"
role = "inner"
device = "net_null0"
[[classes]]
name = "roce-cnp"
match = { udp_dst_port = 4791, bth_opcode = 0x81 }
dscp = 48
pcp = 6
[[classes]]
name = "roce-data"
match = { udp_dst_port = 4791 }
dscp = 26
[[classes]]
name = "keep-ef"
match = { ip_proto = 17, dscp = [46, 47] }
dscp = "preserve"
[[classes]]
name = "a-name-longer-than-thirty-one-characters"
)";

TEST(Hostmark, RulesAreTheGatewaysCompiledClasses) {
    const auto classes = parse_classes(kClasses, "t.toml");
    ASSERT_EQ(classes.size(), 4u);
    hm_ruleset rs{};
    ASSERT_EQ(build_ruleset(classes, rs), "");
    ASSERT_EQ(rs.n, 4u);
    for (size_t i = 0; i < classes.size(); ++i) {
        const ClassMatch m = compile_class(classes[i]);
        EXPECT_EQ(rs.rules[i].key, m.key) << i;
        EXPECT_EQ(rs.rules[i].mask, m.mask) << i;
        EXPECT_EQ(rs.rules[i].dscp_mask, m.dscp_mask) << i;
        EXPECT_EQ(rs.rules[i].set_dscp, m.set_dscp) << i;
    }
    EXPECT_EQ(rs.rules[0].pcp, 6);
    EXPECT_EQ(rs.rules[1].pcp, -1);
    EXPECT_EQ(rs.rules[2].set_dscp, -1);
    EXPECT_EQ(rs.rules[2].dscp_mask, (uint64_t{1} << 46) | (uint64_t{1} << 47));
    EXPECT_EQ(rs.rules[0].key, HM_KEY_IS_UDP | 4791 | HM_KEY_HAS_BTH | uint64_t{0x81} << 17);
    EXPECT_STREQ(rs.rules[3].name, "a-name-longer-than-thirty-one-c");  // Cut to fit, terminated.
    EXPECT_EQ(rs.rules[3].mask, 0u);                                    // Matches anything.

    EXPECT_EQ(describe_rule(rs.rules[0]), "udp/4791 bth=0x81 -> dscp 48, pcp 6");
    EXPECT_EQ(describe_rule(rs.rules[2]), "proto=17 dscp=46,47 -> dscp kept");
    EXPECT_EQ(describe_rule(rs.rules[3]), "any -> dscp kept");
}

TEST(Hostmark, RefusesWhatTheProgramCannotMatch) {
    hm_ruleset rs{};
    const auto classes = parse_classes(
        "[[classes]]\nname = \"p\"\nmatch = { src = \"10.0.0.0/8\" }\ndscp = 1\n", "p.toml");
    EXPECT_NE(build_ruleset(classes, rs).find("class \"p\": match.src/match.dst are not supported"),
              std::string::npos);
}

TEST(Hostmark, ClassesOnlyLoaderStillChecksWhatItReads) {
    try {
        parse_classes("[[classes]]\nname = \"x\"\npcp = 8\n[typo]\n", "bad.toml");
        FAIL() << "no error";
    } catch (const ConfigError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("bad.toml:3:7: classes[0].pcp"), std::string::npos) << what;
        EXPECT_NE(what.find("typo: unknown key"), std::string::npos) << what;
    }
    // A gateway's other sections are not validated here (no [[ports]] needed).
    EXPECT_EQ(parse_classes("[[classes]]\nname = \"x\"\n", "ok.toml").size(), 1u);
    // The gateway itself accepts pcp and range-checks it the same way.
    EXPECT_THROW(parse_config(std::string(kClasses) + "pcp = -1\n", "g.toml"), ConfigError);
}

TEST(Hostmark, PrometheusTextNamesAndEscapes) {
    hm_ruleset rs{};
    rs.n = 1;
    std::snprintf(rs.rules[0].name, sizeof rs.rules[0].name, "%s", "we\"ird\\");
    Counters c{};
    c[0] = {5, 500, 4, 1};
    c[HM_CTR_NO_CLASS].packets = 7;
    c[HM_CTR_NOT_IP].packets = 2;
    DeviceStatus d{{"eth0", true, 42, 3, true}, rs, c};
    const std::string t = prometheus_text({d});
    EXPECT_NE(t.find("dscpgw_hostmark_attached{device=\"eth0\"} 1\n"), std::string::npos) << t;
    EXPECT_NE(
        t.find("dscpgw_hostmark_class_packets_total{device=\"eth0\",class=\"we\\\"ird\\\\\"} 5\n"),
        std::string::npos)
        << t;
    EXPECT_NE(t.find("# TYPE dscpgw_hostmark_class_bytes_total counter\n"), std::string::npos);
    EXPECT_NE(t.find("class_dscp_rewrites_total{device=\"eth0\",class=\"we\\\"ird\\\\\"} 4\n"),
              std::string::npos);
    EXPECT_NE(t.find("unclassified_packets_total{device=\"eth0\",reason=\"no_class\"} 7\n"),
              std::string::npos);
    EXPECT_NE(t.find("unclassified_packets_total{device=\"eth0\",reason=\"not_ip\"} 2\n"),
              std::string::npos);
    // Two devices: each family's HELP/TYPE once, its samples for both; a detached device has
    // only the attached gauge.
    DeviceStatus e{{"eth1", true, 43, 1, false}, rs, c};
    const std::string two = prometheus_text({d, e});
    EXPECT_EQ(two.find("# TYPE dscpgw_hostmark_class_packets_total"),
              two.rfind("# TYPE dscpgw_hostmark_class_packets_total"));
    const auto pos0 = two.find("class_packets_total{device=\"eth0\"");
    const auto pos1 = two.find("class_packets_total{device=\"eth1\"");
    EXPECT_NE(pos0, std::string::npos);
    EXPECT_NE(pos1, std::string::npos);
    EXPECT_EQ(two.find("# TYPE", pos0), two.find("# TYPE", pos1)) << "samples not grouped";
    d.attachment.attached = false;
    const std::string off = prometheus_text({d});
    EXPECT_NE(off.find("dscpgw_hostmark_attached{device=\"eth0\"} 0\n"), std::string::npos);
    EXPECT_EQ(off.find("device=\"eth0\",class="), std::string::npos) << off;
    EXPECT_EQ(status_table(d.attachment, rs, c), "dscpgw-hostmark on eth0: not attached\n");
}

}  // namespace
}  // namespace dscpgw::hostmark
