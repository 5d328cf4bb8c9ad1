// One dataplane config shared by the fuzzer and the micro-benchmark: jumbo MTUs, both tunnel types
// over both outer families, every DSCP-on-decap mode and the usual RoCE classes.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "dataplane/neighbor.h"

namespace dscpgw::test {

inline constexpr const char* kWideConfig = R"(
[[ports]]
name = "lan"
role = "inner"
device = "a"
mtu = 9000
@LAN_ADDRESSES@
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
ipv6 = "2001:db8:18::1"
mtu = 9100
@WAN_KEYS@
[[tunnels]]
name = "g4"
type = "geneve"
vni = 100
remote = "198.18.7.7"
next_hop_mac = "02:00:00:00:00:fe"
routes = ["10.0.0.0/8", "fd00::/8"]
[[tunnels]]
name = "v6"
type = "vxlan"
vni = 200
remote = "2001:db8:18::99"
next_hop_mac = "02:00:00:00:00:fd"
routes = ["192.168.0.0/16", "fc00::/8"]
inner_dscp_on_decap = "copy-outer"
[[tunnels]]
name = "v4"
type = "vxlan"
vni = 300
remote = "198.18.7.8"
next_hop_mac = "02:00:00:00:00:fc"
routes = ["172.16.0.0/12"]
outer_dscp = 10
ecn = "off"
inner_dscp_on_decap = 12
[[classes]]
name = "cnp"
match = { udp_dst_port = 4791, bth_opcode = 0x81 }
dscp = 48
[[classes]]
name = "data"
match = { udp_dst_port = 4791, dscp = [0, 26], src = ["10.0.0.0/8", "fd00::/8"] }
dscp = 26
[[classes]]
name = "tcp"
match = { ip_proto = 6 }
dscp = 8
)";

// Needs an initialised EAL (the route and decap tables live in DPDK memory). `routed`: the lan port
// has addresses (routed LAN mode) instead of being transparent.
// `first`: TOML put before the config's classes (policers, classes that match first); `lan`:
// more keys of the transparent lan port.
// Border QoS on the wide config, for the fuzzer: a tagged LAN with both 802.1p maps, classes with
// a policer no packet exceeds, a policer every packet exceeds (red re-marked, not dropped) and a
// size-only adaptive rule, so that a packet's verdict is the same however often it is run.
inline constexpr const char* kQosLan =
    "vlan = 100\ndscp_to_pcp = { 26 = 3, 48 = 6, default = 1 }\n"
    "pcp_to_dscp = [0, 8, 16, 24, 32, 46, 48, 56]\n";
inline constexpr const char* kQosFirst = R"(
[[policers]]
name = "huge"
cir = "1Tbps"
pir = "1Tbps"
[[policers]]
name = "tiny"
cir = 8
pir = 8
cbs = 1
pbs = 1
yellow = 28
red = 12
[[classes]]
name = "policed-green"
match = { udp_dst_port = 4791, pcp = 3 }
dscp = 26
policer = "huge"
[[classes]]
name = "policed-red"
match = { dscp = 10 }
policer = "tiny"
[[classes]]
name = "adaptive"
match = { pcp = 5 }
dscp = 0
adaptive = [{ min_bytes = 500, dscp = 34 }]
)";

// Border QoS II on the wide config, for the fuzzer: both ports shaped, a tunnel shaped inside the
// wan port, CNPs strict, everything else in a queue that marks (or drops Not-ECT) from its second
// packet on, so that CE marking runs on whatever the path forwards.
inline constexpr const char* kEgressPort = "rate = \"100Gbps\"\n";
inline constexpr const char* kEgressFirst = R"(
[[queues]]
port = "wan"
name = "cnp"
classes = ["cnp"]
priority = "strict"
max_rate = "10%"
[[queues]]
port = "wan"
name = "rest"
classes = ["*"]
ecn = { min = 1, max = 1 }
[[queues]]
port = "lan"
name = "cnp"
classes = ["cnp"]
priority = "strict"
[[queues]]
port = "lan"
name = "rest"
classes = ["*"]
weight = 3
ecn = { min = 1, max = 2, max_probability = 0.5 }
)";

inline std::unique_ptr<Snapshot> wide_snapshot(bool routed = false, const char* first = "",
                                               const char* lan = "", const char* wan = "") {
    std::string text = kWideConfig;
    text.replace(text.find("@LAN_ADDRESSES@"), 15,
                 routed ? "ipv4 = \"10.0.0.1/8\"\nipv6 = \"fd00::1/64\"" : lan);
    text.replace(text.find("@WAN_KEYS@"), 10, wan);
    text.insert(text.find("[[classes]]"), first);
    static NeighborTable neighbors;
    const Config cfg = parse_config(text, "wide.toml");
    return build_snapshot(cfg, {{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}}, neighbors);
}

}  // namespace dscpgw::test
