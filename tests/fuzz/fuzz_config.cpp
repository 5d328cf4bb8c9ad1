// libFuzzer target for the config loader: any bytes as a config file. parse_config() must either
// accept (and then compile into a snapshot, or refuse with std::runtime_error when DPDK memory
// runs out) or throw ConfigError with a message; never crash, hang, leak or throw anything else.
// Accepted configs are also compared with themselves and with a base config by restart_reasons(),
// as a reload does.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/config.h"
#include "dataplane/neighbor.h"
#include "gateway/eal.h"

namespace {

dscpgw::NeighborTable* g_neighbors = nullptr;
dscpgw::Config* g_base = nullptr;

constexpr const char* kBase = R"(
[[ports]]
name = "lan"
role = "inner"
device = "a"
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
[[tunnels]]
name = "t"
type = "vxlan"
vni = 1
remote = "198.18.0.2"
next_hop = "198.18.0.254"
routes = ["10.0.0.0/8"]
)";

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::string err;
    if (!dscpgw::eal_init(dscpgw::eal_args_offline(), err)) {
        std::fprintf(stderr, "%s\n", err.c_str());
        std::abort();
    }
    g_neighbors = new dscpgw::NeighborTable();
    g_base = new dscpgw::Config(dscpgw::parse_config(kBase, "base.toml"));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 65536) return 0;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    dscpgw::Config cfg;
    try {
        cfg = dscpgw::parse_config(text, "fuzz.toml");
    } catch (const dscpgw::ConfigError& e) {
        if (std::string_view(e.what()).empty()) std::abort();  // Every refusal says why.
        return 0;
    }
    if (!dscpgw::restart_reasons(cfg, cfg).empty()) std::abort();  // A config equals itself.
    (void)dscpgw::restart_reasons(*g_base, cfg);
    // Replay's made-up MACs, one per port.
    std::vector<std::array<uint8_t, 6>> macs(cfg.ports.size(), {2, 0, 0, 0, 0, 1});
    try {
        const dscpgw::SnapshotBuild b = dscpgw::compile_snapshot(cfg, macs, *g_neighbors);
        if (b.snap == nullptr || b.snap->tunnels.size() != cfg.tunnels.size()) std::abort();
    } catch (const std::runtime_error&) {
        // DPDK memory for the tables, or the neighbor table's configured share: said, refused.
    }
    return 0;
}
