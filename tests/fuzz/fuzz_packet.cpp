// libFuzzer target over both directions of the packet path. The first input byte picks the port
// (inner or outer) and the headroom; the rest is the frame. Built with ASan and UBSan, so any read
// past the frame or the buffer, or any undefined behaviour, stops the run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "config/config.h"
#include "dataplane/pipeline.h"
#include "gateway/eal.h"

namespace {

constexpr const char* kConfig = R"(
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
ipv6 = "2001:db8:18::1"
mtu = 9100
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

const dscpgw::Snapshot* g_snap = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::string err;
    if (!dscpgw::eal_init(dscpgw::eal_args_offline(), err)) {
        std::fprintf(stderr, "%s\n", err.c_str());
        std::abort();
    }
    static const dscpgw::Config cfg = dscpgw::parse_config(kConfig, "fuzz.toml");
    g_snap = dscpgw::build_snapshot(cfg, {{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}}).release();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1 || size > 16384) return 0;
    const uint16_t port = data[0] & 1;
    // Headroom from 0 to 127 bytes: encapsulation must never write before the buffer.
    const uint32_t headroom = (data[0] >> 1) & 0x7f;
    const size_t len = size - 1;
    // An exactly sized heap buffer, so ASan sees any access outside [buffer, buffer + headroom + len).
    std::unique_ptr<uint8_t[]> buf(new uint8_t[headroom + len]);
    std::memcpy(buf.get() + headroom, data + 1, len);
    dscpgw::Frame f{buf.get() + headroom, static_cast<uint32_t>(len), headroom};
    const dscpgw::Verdict v = dscpgw::process_packet(*g_snap, port, f);
    if (v.drop == dscpgw::DropReason::none) {
        // The result must lie inside the buffer.
        if (f.data < buf.get() || f.data + f.len > buf.get() + headroom + len + 0 ||
            f.headroom != static_cast<uint32_t>(f.data - buf.get()))
            std::abort();
        volatile uint8_t sink = 0;
        for (uint32_t i = 0; i < f.len; ++i) sink = static_cast<uint8_t>(sink + f.data[i]);
        (void)sink;
    }
    return 0;
}
