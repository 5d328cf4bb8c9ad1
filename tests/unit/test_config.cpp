#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "config/config.h"

namespace dscpgw {
namespace {

std::string error_of(const std::string& text) {
    try {
        parse_config(text, "t.toml");
    } catch (const ConfigError& e) {
        return e.what();
    }
    return "";
}

constexpr const char* kPorts = R"([[ports]]
name = "lan"
role = "inner"
device = "a"
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
mtu = 9000
)";

TEST(Config, Defaults) {
    const Config c = parse_config(std::string(kPorts) + R"([[tunnels]]
name = "t"
type = "geneve"
vni = 5
remote = "198.18.0.2"
next_hop_mac = "02:00:00:00:00:01"
[[classes]]
name = "any"
)",
                                  "t.toml");
    ASSERT_EQ(c.tunnels.size(), 1u);
    const TunnelConf& t = c.tunnels[0];
    EXPECT_EQ(t.udp_port, 6081);
    EXPECT_EQ(t.ttl, 64);
    EXPECT_TRUE(t.ecn_rfc6040);
    EXPECT_EQ(t.outer_dscp, kDscpInherit);
    EXPECT_EQ(t.decap_dscp, kDscpPreserve);
    EXPECT_EQ(t.outer_port, 1);
    EXPECT_EQ(t.inner_port, 0);
    EXPECT_EQ(c.ports[0].mtu, 1500u);
    EXPECT_EQ(c.log_level, "info");
    EXPECT_EQ(parse_config("[gateway]\nlog_level = \"debug\"\n" + std::string(kPorts), "t.toml")
                  .log_level,
              "debug");
    EXPECT_EQ(c.classes[0].set_dscp, kDscpPreserve);
    ASSERT_EQ(c.ports[1].tunnel_udp_ports.size(), 1u);
    EXPECT_EQ(c.ports[1].tunnel_udp_ports[0].type, TunnelType::geneve);
}

TEST(Config, ErrorsNameKeyAndPosition) {
    const std::string tun = std::string(kPorts) +
                            "[[tunnels]]\nname = \"t\"\ntype = \"vxlan\"\nvni = 1\n"
                            "remote = \"198.18.0.2\"\nnext_hop_mac = \"02:00:00:00:00:01\"\n";
    struct Case {
        std::string text, expect;
    } cases[] = {
        {"[gateway]\nx = 1\n", "t.toml:2:5: gateway.x: unknown key"},
        {"[gateway]\nworkers = 0\n", "gateway.workers: 0 is out of range 1..128"},
        {"[gateway]\nlog_level = \"loud\"\n",
         "t.toml:2:13: gateway.log_level: \"loud\": expected emergency, alert, critical, error, "
         "warning, notice, info or debug"},
        {"[gateway]\nlog_level = 7\n", "gateway.log_level: expected a string"},
        {"[metric]\n", "t.toml:1:1: metric: unknown key"},
        {"[metrics]\nlisten = \"9550\"\n",
         "t.toml:2:10: metrics.listen: expected \"ADDRESS:PORT\""},
        {"[metrics]\nlisten = \"127.0.0.1:0\"\n", "metrics.listen: expected"},
        {"[metrics]\nlisten = \"localhost:9550\"\n", "metrics.listen: expected"},
        {"[metrics]\nflows = 70000\n", "metrics.flows: 70000 is out of range 0..65536"},
        {"[metrics]\nport = 1\n", "metrics.port: unknown key"},
        {"[control]\nsocket = \"run/x.sock\"\n", "control.socket: expected an absolute path"},
        {std::string(kPorts) + "[[ports]]\nname = \"lan\"\nrole = \"inner\"\ndevice = \"c\"\n",
         "t.toml:12:8: ports[2].name: duplicate port name \"lan\""},
        {std::string(kPorts) +
             "[[ports]]\nname = \"x\"\nrole = \"outer\"\ndevice = \"b\"\nipv4 = \"198.18.0.9\"\n",
         "ports[2].device: device \"b\" is used by another port"},
        {std::string(kPorts) + "[[ports]]\nname = \"x\"\nrole = \"outer\"\ndevice = \"c\"\n",
         "t.toml:11:1: ports[2]: an outer port needs a local VTEP address"},
        {tun + "vni = 2\n", "TOML syntax error"},
        {tun + "outer_dscp = \"keep\"\n",
         "tunnels[0].outer_dscp: \"keep\" is not valid; expected 0..63 or \"inherit\""},
        {tun + "ecn = true\n", "tunnels[0].ecn: expected a string"},
        {tun + "ttl = 0\n", "tunnels[0].ttl: 0 is out of range 1..255"},
        {tun + "routes = [\"10.0.0.0/8\", 7]\n", "tunnels[0].routes[1]: expected a string"},
        {tun + "routes = [\"10.0.0.0/8\"]\n[[tunnels]]\nname = \"u\"\ntype = \"vxlan\"\nvni = "
               "2\nremote = \"198.18.0.3\"\n"
               "next_hop_mac = \"02:00:00:00:00:01\"\nroutes = [\"10.0.0.0/8\"]\n",
         "tunnels[1].routes: route 10.0.0.0/8 is already routed to tunnel \"t\""},
        {tun + "[[tunnels]]\nname = \"u\"\ntype = \"geneve\"\nudp_dst_port = 4789\nvni = 2\nremote "
               "= \"198.18.0.3\"\n"
               "next_hop_mac = \"02:00:00:00:00:01\"\n",
         "tunnels[1].udp_dst_port: UDP port 4789 already carries VXLAN for tunnel \"t\""},
        {tun + "[[tunnels]]\nname = \"u\"\ntype = \"vxlan\"\nvni = 1\nremote = \"198.18.0.2\"\n"
               "next_hop_mac = \"02:00:00:00:00:01\"\n",
         "tunnels[1]: same remote, VNI and UDP port as tunnel \"t\""},
        {tun + "port = \"lan\"\n", "tunnels[0].port: \"lan\" is not an outer port"},
        {std::string(kPorts) + "[[tunnels]]\nname = \"t\"\n",
         "tunnels[0].type: missing (required)"},
        {std::string(kPorts) +
             "[[classes]]\nname = \"c\"\nmatch = { bth_opcode = 129, udp_dst_port = 53 }\n",
         "bth_opcode only exists on UDP port 4791"},
        {std::string(kPorts) + "[[classes]]\nname = \"c\"\nmatch = { dscp = [1, 99] }\n",
         "classes[0].match.dscp[1]: 99 is out of range 0..63"},
        {std::string(kPorts) + "[[classes]]\nname = \"c\"\nmatch = { src = \"fd00::/129\" }\n",
         "prefix length must be 0..128"},
        {std::string(kPorts) + "[[classes]]\nname = \"c\"\nmatch = { sport = 1 }\n",
         "classes[0].match.sport: unknown key"},
        {"", "ports: missing: at least one [[ports]] is required"},
        {std::string(kPorts) + "[[classes]]\nname = \"c\"\ndscp = 64\n",
         "t.toml:13:8: classes[0].dscp: 64 is out of range 0..63"},
        {tun + "inner_vlan = \"pass\"\n",
         "tunnels[0].inner_vlan: \"pass\" is not valid; expected \"drop\" or \"keep\""},
        {tun + "udp6_zero_checksum_rx = 1\n",
         "tunnels[0].udp6_zero_checksum_rx: expected true or false"},
        {std::string(kPorts) + "trust_dscp = true\n",
         "ports[1].trust_dscp: only inner ports classify"},
        {"[[ports]]\nname = \"lan\"\nrole = \"inner\"\ndevice = \"a\"\ndefault_dscp = 64\n",
         "ports[0].default_dscp: 64 is out of range 0..63"},
    };
    for (const auto& c : cases) {
        const std::string err = error_of(c.text);
        EXPECT_NE(err.find(c.expect), std::string::npos) << "expected \"" << c.expect << "\" in:\n"
                                                         << err;
    }
}

TEST(Config, MetricsAndControlSections) {
    const Config d = parse_config(kPorts, "t.toml");
    EXPECT_EQ(d.metrics_listen, "");
    EXPECT_EQ(d.control_socket, kDefaultControlSocket);
    EXPECT_EQ(d.flow_entries, kDefaultFlowEntries);
    for (const char* l : {"127.0.0.1:9550", "[::1]:9550", "*:9550", ":9550", "0.0.0.0:1"}) {
        const Config c = parse_config(std::string(kPorts) + "[metrics]\nlisten = \"" + l +
                                          "\"\nflows = 0\n[control]\nsocket = \"/tmp/g.sock\"\n",
                                      "t.toml");
        EXPECT_EQ(c.metrics_listen, l);
        EXPECT_EQ(c.flow_entries, 0u);
        EXPECT_EQ(c.control_socket, "/tmp/g.sock");
    }
}

// What a reload may change live, and what needs a restart (gateway/control_thread.cpp refuses
// those).
TEST(Config, RestartReasons) {
    const std::string base = std::string(kPorts) +
                             "[[classes]]\nname = \"c\"\nmatch = { udp_dst_port = 4791 }\n"
                             "dscp = 26\n";
    const Config a = parse_config(base, "t.toml");
    EXPECT_TRUE(restart_reasons(a, parse_config(base, "t.toml")).empty());
    // Classes, DSCP values, tunnels, routes: live.
    std::string live = base;
    live.replace(live.find("dscp = 26"), 9, "dscp = 46");
    live +=
        "[[tunnels]]\nname = \"t\"\ntype = \"vxlan\"\nvni = 1\nremote = \"198.18.0.2\"\n"
        "next_hop_mac = \"02:00:00:00:00:01\"\nroutes = [\"10.0.0.0/8\"]\n";
    EXPECT_TRUE(restart_reasons(a, parse_config(live, "t.toml")).empty());
    // A port MTU is the control plane's to check against its buffers, not a restart reason.
    std::string mtu = base;
    mtu.replace(mtu.find("device = \"a\""), 12, "device = \"a\"\nmtu = 1400");
    EXPECT_TRUE(restart_reasons(a, parse_config(mtu, "t.toml")).empty());
    const struct {
        std::string text, expect;
    } cases[] = {
        {"[gateway]\nworkers = 2\n" + base, "[gateway] workers changed"},
        {"[eal]\nargs = [\"-l\", \"0\"]\n" + base, "[eal] args changed"},
        {"[metrics]\nflows = 64\n" + base, "[metrics] flows changed"},
        {"[metrics]\nlisten = \"127.0.0.1:9\"\n" + base, "[metrics] listen changed"},
        {"[control]\nsocket = \"/tmp/x\"\n" + base, "[control] socket changed"},
    };
    std::vector<std::string> why;
    for (const auto& c : cases) {
        why = restart_reasons(a, parse_config(c.text, "t.toml"));
        ASSERT_EQ(why.size(), 1u) << c.text;
        EXPECT_EQ(why[0], c.expect);
    }
    std::string rxw = base;
    rxw.replace(rxw.find("device = \"a\""), 12, "device = \"a\"\nrx_workers = [0]");
    why = restart_reasons(a, parse_config(rxw, "t.toml"));
    ASSERT_EQ(why.size(), 1u);
    EXPECT_EQ(why[0], "ports[0] (lan): rx_workers changed");
    std::string dev = base;
    dev.replace(dev.find("device = \"a\""), 12, "device = \"z\"");
    why = restart_reasons(a, parse_config(dev, "t.toml"));
    ASSERT_EQ(why.size(), 1u);
    EXPECT_NE(why[0].find("device changed"), std::string::npos) << why[0];
}

// `rx_workers`: RX queue q on worker rx_workers[q]; indexes below `workers` when the config gives
// it (else `run` checks them against the lcores).
TEST(Config, RxWorkers) {
    const auto with = [](const std::string& value, const std::string& head = "") {
        std::string t = head + kPorts;
        t.replace(t.find("device = \"a\""), 12, "device = \"a\"\nrx_workers = " + value);
        return t;
    };
    EXPECT_TRUE(parse_config(kPorts, "t.toml").ports[0].rx_workers.empty());
    EXPECT_EQ(parse_config(with("[1, 0, 1]"), "t.toml").ports[0].rx_workers,
              (std::vector<uint16_t>{1, 0, 1}));
    EXPECT_EQ(parse_config(with("[127]"), "t.toml").ports[0].rx_workers,
              (std::vector<uint16_t>{127}));
    EXPECT_EQ(
        parse_config(with("[1, 1]", "[gateway]\nworkers = 2\n"), "t.toml").ports[0].rx_workers,
        (std::vector<uint16_t>{1, 1}));
    const struct {
        std::string text, expect;
    } bad[] = {
        {with("[]"), "ports[0].rx_workers: expected an array of 1..128 worker indexes"},
        {with("1"), "ports[0].rx_workers: expected an array of 1..128 worker indexes"},
        {with("[0, \"1\"]"), "ports[0].rx_workers[1]: expected an integer 0..127"},
        {with("[-1]"), "ports[0].rx_workers[0]: -1 is out of range 0..127"},
        {with("[0, 2]", "[gateway]\nworkers = 2\n"),
         "ports[0].rx_workers[1]: 2 is out of range 0..1"},
    };
    for (const auto& b : bad) {
        const std::string err = error_of(b.text);
        EXPECT_NE(err.find(b.expect), std::string::npos) << b.text << "\n" << err;
    }
    std::string many = "[0";
    for (int i = 1; i < 129; ++i) many += ", 0";
    EXPECT_NE(error_of(with(many + "]")).find("expected an array of 1..128"), std::string::npos);
}

TEST(Config, AllProblemsReportedAtOnce) {
    const std::string err =
        error_of("[[ports]]\nname = 1\nrole = \"middle\"\ndevice = \"a\"\nmtu = 5\n");
    EXPECT_NE(err.find("ports[0].name: expected a string"), std::string::npos) << err;
    EXPECT_NE(err.find("ports[0].role: \"middle\" is not valid"), std::string::npos) << err;
    EXPECT_NE(err.find("ports[0].mtu: 5 is out of range"), std::string::npos) << err;
}

TEST(Config, PrefixAndMacParsing) {
    std::string why;
    auto p = parse_prefix("fd00:20::/48", why);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->family, 6);
    EXPECT_EQ(p->len, 48);
    EXPECT_EQ(format_prefix(*p), "fd00:20::/48");
    EXPECT_FALSE(parse_prefix("10.0.0.0", why));
    EXPECT_FALSE(parse_prefix("10.0.0.0/", why));
    EXPECT_FALSE(parse_prefix("10.0.0.0/8x", why));
    EXPECT_FALSE(parse_prefix("10.0.0.1/31", why));
    EXPECT_TRUE(parse_prefix("0.0.0.0/0", why));
    std::array<uint8_t, 6> m{};
    EXPECT_TRUE(parse_mac("02:aB:00:00:00:fe", m));
    EXPECT_EQ(format_mac(m), "02:ab:00:00:00:fe");
    EXPECT_FALSE(parse_mac("02:ab:00:00:00", m));
    EXPECT_FALSE(parse_mac("02-ab-00-00-00-fe", m));
    EXPECT_FALSE(parse_mac("02:ab:00:00:00:fg", m));
}

TEST(Config, PrefixContains) {
    std::string why;
    auto p = *parse_prefix("10.20.128.0/17", why);
    const uint8_t in[4] = {10, 20, 200, 1}, out[4] = {10, 20, 127, 1};
    EXPECT_TRUE(p.contains(4, in));
    EXPECT_FALSE(p.contains(4, out));
    EXPECT_FALSE(p.contains(6, in));
}

// Values that cannot be right are refused with the reason; names are bounded and stay unique in
// every interface that shows them.
TEST(Config, RefusesValuesThatCannotBeRight) {
    const auto tunnel = [](const std::string& extra, const std::string& remote = "198.18.0.2",
                           const std::string& name = "t") {
        return std::string(kPorts) + "[[tunnels]]\nname = \"" + name +
               "\"\ntype = \"vxlan\"\nvni = 1\nremote = \"" + remote + "\"\n" + extra;
    };
    const std::string mac = "next_hop_mac = \"02:00:00:00:00:01\"\n";
    struct Case {
        std::string text, expect;
    } cases[] = {
        {tunnel(mac, "0.0.0.0"), "tunnels[0].remote: \"0.0.0.0\" is in 0.0.0.0/8"},
        {tunnel(mac, "255.255.255.255"), "is reserved or the limited broadcast address"},
        {tunnel(mac, "224.0.0.5"), "\"224.0.0.5\" is a multicast address"},
        {tunnel(mac, "127.0.0.1"), "is a loopback address"},
        {tunnel(mac, "::ffff:198.18.0.2"), "is an IPv4-mapped address"},
        {tunnel(mac, "::"), "is the unspecified address"},
        {tunnel(mac, "198.18.0.1"),
         "tunnels[0].remote: remote 198.18.0.1 is the VTEP address of outer port \"wan\""},
        {tunnel("next_hop_mac = \"ff:ff:ff:ff:ff:ff\"\n"),
         "tunnels[0].next_hop_mac: \"ff:ff:ff:ff:ff:ff\" is a broadcast or multicast"},
        {tunnel("next_hop_mac = \"01:00:5e:00:00:01\"\n"), "(group) MAC"},
        {tunnel("next_hop_mac = \"00:00:00:00:00:00\"\n"), "is all zero"},
        {tunnel("next_hop = \"198.18.0.254\"\n"), ""},
        {tunnel("next_hop = \"224.1.1.1\"\n"), "tunnels[0].next_hop: \"224.1.1.1\" is a multicast"},
        {tunnel(mac, "198.18.0.2", ""), "\"\" is not a valid tunnel name"},
        {tunnel(mac, "198.18.0.2", "a b"), "\"a b\" is not a valid tunnel name"},
        {tunnel(mac, "198.18.0.2", "a\\nb"), "is not a valid tunnel name"},
        {tunnel(mac, "198.18.0.2", std::string(64, 'x')), "1-63 characters"},
        {std::string(kPorts) + "[[classes]]\nname = \"a-b\"\n[[classes]]\nname = \"a_b\"\n",
         "classes[1].name: class name \"a_b\" shows as \"a_b\" in DPDK telemetry"},
        {std::string(kPorts) + "[[neighbors]]\nport = \"wan\"\nip = \"198.18.0.9\"\nmac = "
                               "\"ff:ff:ff:ff:ff:ff\"\n",
         "neighbors[0].mac: \"ff:ff:ff:ff:ff:ff\" is a broadcast"},
    };
    for (const Case& c : cases) {
        const std::string err = error_of(c.text);
        if (c.expect.empty()) {
            EXPECT_EQ(err, "") << c.text;
            continue;
        }
        EXPECT_NE(err.find(c.expect), std::string::npos)
            << "want: " << c.expect << "\ngot: " << err;
    }
    // A 63-character name with every allowed kind of character is fine.
    const std::string ok = std::string(60, 'a') + "-_.";
    EXPECT_EQ(error_of(tunnel(mac, "198.18.0.2", ok)), "");
}

// A config is a regular file of bounded size: a FIFO neither blocks nor loads, a device that never
// ends (/dev/zero) is refused before it is read.
TEST(Config, OnlyBoundedRegularFiles) {
    const std::string fifo = ::testing::TempDir() + "/dscpgw-config-fifo";
    ::unlink(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const auto error_loading = [](const std::string& path) {
        try {
            load_config(path);
        } catch (const ConfigError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(error_loading(fifo).find("not a regular file"), std::string::npos);
    ::unlink(fifo.c_str());
    EXPECT_NE(error_loading("/dev/zero").find("not a regular file"), std::string::npos);
    const std::string big = ::testing::TempDir() + "/dscpgw-config-big.toml";
    {
        std::ofstream f(big);
        f << std::string(kMaxConfigBytes + 1, '#');
    }
    EXPECT_NE(error_loading(big).find("a config file is at most"), std::string::npos);
    ::unlink(big.c_str());
    EXPECT_NE(error_loading("/nonexistent/dscpgw.toml").find("cannot open config file"),
              std::string::npos);
}

// Route validation is O(n log n): 100,000 routes load (a quadratic check took minutes), and a
// duplicate among them is still found.
TEST(Config, ManyRoutes) {
    std::string routes = "routes = [";
    for (uint32_t i = 0; i < 100000; ++i)
        routes += "\"10." + std::to_string(i >> 16) + "." + std::to_string((i >> 8) & 0xff) + "." +
                  std::to_string(i & 0xff) + "/32\",";
    const std::string text = std::string(kPorts) +
                             "[[tunnels]]\nname = \"t\"\ntype = \"vxlan\"\nvni = 1\n"
                             "remote = \"198.18.0.2\"\nnext_hop_mac = \"02:00:00:00:00:01\"\n";
    const Config c = parse_config(text + routes + "]\n", "t.toml");
    EXPECT_EQ(c.tunnels[0].routes.size(), 100000u);
    EXPECT_NE(error_of(text + routes + "\"10.0.0.7/32\"]\n").find("is already routed to tunnel"),
              std::string::npos);
}

// One error per mistake: a port MTU out of range is not reported again as the default the checks
// after it would have used.
TEST(Config, OneErrorPerMistake) {
    std::string text = std::string(kPorts) +
                       "[[tunnels]]\nname = \"t\"\ntype = \"vxlan\"\nvni = 1\n"
                       "remote = \"198.18.0.2\"\nnext_hop_mac = \"02:00:00:00:00:01\"\n";
    text.replace(text.find("mtu = 9000"), 10, "mtu = 99999");
    const std::string err = error_of(text);
    EXPECT_NE(err.find("ports[1].mtu: 99999 is out of range"), std::string::npos) << err;
    EXPECT_EQ(err.find("cannot carry"), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 0) << err;
}

// `check` warns of a class an earlier one shadows (classes match first to last), naming both and
// their lines, and of none where the earlier class is narrower or disjoint.
TEST(Config, ShadowedClassesWarned) {
    const auto warnings_of = [](const std::string& classes) {
        std::vector<std::string> w;
        parse_classes(classes, "c.toml", &w);
        return w;
    };
    const std::string data = "[[classes]]\nname = \"data\"\nmatch = { udp_dst_port = 4791 }\n";
    const std::string cnp =
        "[[classes]]\nname = \"cnp\"\nmatch = { udp_dst_port = 4791, bth_opcode = 0x81 }\n";
    auto w = warnings_of(data + cnp);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_NE(w[0].find("c.toml:4:1: warning: classes[1]: class \"cnp\" can never match: class "
                        "\"data\" (classes[0], line 1)"),
              std::string::npos)
        << w[0];
    EXPECT_TRUE(warnings_of(cnp + data).empty());  // The narrower first: both live.
    // DSCP sets and prefixes: within the earlier class's, shadowed; reaching beyond, not.
    const std::string any_af = "[[classes]]\nname = \"af\"\nmatch = { dscp = [10, 12, 14] }\n";
    EXPECT_EQ(
        warnings_of(any_af + "[[classes]]\nname = \"af11\"\nmatch = { dscp = [10] }\n").size(), 1u);
    EXPECT_TRUE(warnings_of(any_af + "[[classes]]\nname = \"more\"\nmatch = { dscp = [10, 18] }\n")
                    .empty());
    const std::string net = "[[classes]]\nname = \"net\"\nmatch = { dst = \"10.0.0.0/8\" }\n";
    EXPECT_EQ(warnings_of(net + "[[classes]]\nname = \"sub\"\nmatch = { dst = \"10.1.0.0/16\", "
                                "ip_proto = 6 }\n")
                  .size(),
              1u);
    EXPECT_TRUE(warnings_of(net + "[[classes]]\nname = \"wide\"\nmatch = { dst = \"0.0.0.0/0\" }\n")
                    .empty());
    EXPECT_TRUE(warnings_of(net +
                            "[[classes]]\nname = \"other\"\nmatch = { dst = [\"10.1.0.0/16\", "
                            "\"11.0.0.0/8\"] }\n")
                    .empty());
    // Different values of one key, or a key only the earlier class tests: disjoint or wider.
    EXPECT_TRUE(warnings_of("[[classes]]\nname = \"tcp\"\nmatch = { ip_proto = 6 }\n"
                            "[[classes]]\nname = \"udp\"\nmatch = { ip_proto = 17 }\n")
                    .empty());
    EXPECT_TRUE(
        warnings_of(cnp + "[[classes]]\nname = \"all-roce\"\nmatch = { udp_dst_port = 4791 }\n")
            .empty());
    // A class without a match takes everything: every later class is dead, each said once.
    w = warnings_of("[[classes]]\nname = \"all\"\n" + data + cnp);
    EXPECT_EQ(w.size(), 2u);
}

}  // namespace
}  // namespace dscpgw
