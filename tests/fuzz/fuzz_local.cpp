// libFuzzer target for the gateway's own traffic: ARP, Neighbor Discovery, ICMP/ICMPv6 echo, the
// underlay's Fragmentation Needed / Packet Too Big, and the ICMP errors the gateway builds. The
// first input byte picks the port (bit 0: routed LAN or underlay), whether the control thread has
// a probe outstanding for every neighbor (bit 1), whether entries are past their lock time
// (bit 2), and the MTU a too-big error carries (bits 3-7); the rest is the frame. Besides
// ASan/UBSan, it checks what must always hold: no neighbor ever gets a group or zero MAC, an
// ARP reply goes to a unicast MAC, an ICMP error the gateway builds has valid checksums and lies
// inside its buffer, the learned-host cap holds, and a path MTU never leaves [floor, configured].
#include <rte_cycles.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "config/config.h"
#include "dataplane/local.h"
#include "dataplane/neighbor.h"
#include "dataplane/pipeline.h"
#include "dataplane/wire.h"
#include "gateway/eal.h"

namespace {

using namespace dscpgw;

constexpr const char* kConfig = R"(
[[ports]]
name = "lan"
role = "inner"
device = "a"
ipv4 = "10.0.0.1/8"
ipv6 = "fd00::1/64"
mtu = 9000
[[ports]]
name = "wan"
role = "outer"
device = "b"
ipv4 = "198.18.0.1"
ipv6 = "2001:db8:18::1"
mtu = 9000
[[tunnels]]
name = "g4"
type = "geneve"
vni = 100
remote = "198.18.7.7"
next_hop = "198.18.0.254"
routes = ["172.16.0.0/12"]
mtu = 1500
[[tunnels]]
name = "v6"
type = "vxlan"
vni = 200
remote = "2001:db8:18::99"
next_hop = "fe80::1"
routes = ["fc00::/8"]
)";

NeighborTable* g_table = nullptr;
const Snapshot* g_snap = nullptr;

uint16_t fold_sum(const uint8_t* p, size_t n, uint32_t sum) {
    for (size_t i = 0; i + 1 < n; i += 2) sum += static_cast<uint32_t>(p[i] << 8 | p[i + 1]);
    if (n & 1) sum += static_cast<uint32_t>(p[n - 1] << 8);
    while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
    return static_cast<uint16_t>(sum);
}

// The ICMP error in `f` (Ethernet, the original's VLAN tags if any, IPv4/IPv6 + ICMP) sums right,
// by an independent sum. A tagged original gets its reply in the same VLAN.
void check_icmp_error(const Frame& f) {
    uint32_t l3 = 14;
    while (l3 + 20 <= f.len &&
           (wire::load16(f.data + l3 - 2) == 0x8100 || wire::load16(f.data + l3 - 2) == 0x88a8))
        l3 += 4;
    const uint8_t* ip = f.data + l3;
    if (f.len < l3 + 20) std::abort();
    if ((ip[0] >> 4) == 4) {
        const uint32_t hl = (ip[0] & 0xfu) * 4u, total = wire::load16(ip + 2);
        if (l3 + total > f.len || fold_sum(ip, hl, 0) != 0xffff) std::abort();
        if (fold_sum(ip + hl, total - hl, 0) != 0xffff) std::abort();
    } else {
        const uint32_t plen = wire::load16(ip + 4);
        if (l3 + 40 + plen > f.len) std::abort();
        const uint32_t pseudo = fold_sum(ip + 8, 32, 0) + plen + 58;
        if (fold_sum(ip + 40, plen, pseudo) != 0xffff) std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::string err;
    if (!eal_init(eal_args_offline(), err)) {
        std::fprintf(stderr, "%s\n", err.c_str());
        std::abort();
    }
    g_table = new NeighborTable();
    const Config cfg = parse_config(kConfig, "local.toml");
    g_snap = build_snapshot(cfg, {{2, 0, 0, 0, 0, 1}, {2, 0, 0, 0, 0, 2}}, *g_table).release();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2 || size > 9100) return 0;
    const uint16_t port = data[0] & 1;
    const uint64_t now = rte_get_tsc_cycles(), hz = rte_get_tsc_hz();
    for (size_t i = 0; i < g_table->size(); ++i) {
        Neighbor& n = g_table->at(i);
        n.probe_tsc.store((data[0] & 2) != 0 ? now : 0);
        if ((data[0] & 4) != 0) n.learned_tsc.store(now - 2 * hz);
    }
    const uint32_t mtu = 1280u + (data[0] >> 3) * 97u;
    const uint8_t* frame = data + 1;
    const auto len = static_cast<uint32_t>(size - 1);
    constexpr uint32_t kHeadroom = 128;
    std::unique_ptr<uint8_t[]> buf(new uint8_t[kHeadroom + len]);

    // The whole path, which dispatches the gateway's own traffic.
    std::memcpy(buf.get() + kHeadroom, frame, len);
    Frame f{buf.get() + kHeadroom, len, kHeadroom};
    const Outcome o = process_packet(*g_snap, port, f);
    if (o.local == LocalReply::arp && (f.len < 6 || (f.data[0] & 1) != 0)) std::abort();
    if (o.local != LocalReply::none && o.local != LocalReply::learned &&
        o.local != LocalReply::path_mtu &&
        (f.data < buf.get() || f.data + f.len > buf.get() + kHeadroom + len))
        std::abort();

    // The error the gateway would build for this frame as a too-big packet.
    ParsedPacket pp;
    if (parse_packet(frame, len, pp) == DropReason::none && pp.ip_ver != 0) {
        std::memcpy(buf.get() + kHeadroom, frame, len);
        f = Frame{buf.get() + kHeadroom, len, kHeadroom};
        const PortConf& p = g_snap->ports[0];
        if (make_too_big(p, p.icmp_src4.data(), p.icmp_src6.data(), mtu, f)) {
            if (f.data < buf.get() || f.data + f.len > buf.get() + kHeadroom + len) std::abort();
            check_icmp_error(f);
        }
    }

    // Invariants of what the table learned and the tunnels' path MTUs.
    g_table->drain_requests(now);
    for (size_t i = 0; i < g_table->size(); ++i) {
        const Neighbor& n = g_table->at(i);
        const uint64_t mac = n.mac.load();
        uint8_t m[6];
        unpack_mac(mac, m);
        if ((mac & kNeighborValid) != 0 && !unicast_mac(m)) std::abort();
    }
    if (g_table->learned_count(0) > kMaxLearnedPerPort) std::abort();
    for (const TunnelConf& t : g_snap->tunnels) {
        const uint32_t pm = t.path->mtu.load();
        if (pm > t.outer_mtu || pm < (t.outer_v6 ? kMinPathMtu6 : kMinPathMtu4)) std::abort();
    }
    return 0;
}
