// Compiles a validated Config into the Snapshot workers read: per-tunnel outer-header templates,
// the route tables (rte_lpm / rte_lpm6) and the decap table (rte_hash).
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_hash_crc.h>
#include <rte_ip.h>
#include <rte_lpm.h>
#include <rte_lpm6.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "config/config.h"
#include "dataplane/neighbor.h"
#include "dataplane/qos.h"
#include "dataplane/sched.h"
#include "dataplane/wire.h"

namespace dscpgw {

using namespace wire;

Snapshot::~Snapshot() {
    rte_lpm_free(lpm4);
    rte_lpm6_free(lpm6);
    rte_hash_free(decap);
}

namespace {

// The egress schedulers: every port with a rate, queues or a shaped tunnel gets one; a port with a
// rate and no [[queues]] has one queue for everything ("default", 1 MB).
void compile_scheds(Snapshot& s, const Config& cfg) {
    const size_t np = s.ports.size();
    s.sched_plans.assign(np, SchedPlan{});
    s.scheds.assign(np, nullptr);
    for (size_t p = 0; p < np; ++p) {
        bool shaped_tunnel = false;
        for (const TunnelConf& t : s.tunnels) shaped_tunnel |= t.outer_port == p && t.rate != 0;
        size_t count = 0;
        for (const QueueConf& q : cfg.queues) count += q.port == p;
        if (count == 0 && s.ports[p].rate == 0 && !shaped_tunnel) continue;
        SchedPlan& plan = s.sched_plans[p];
        plan.on = true;
        plan.first_queue = static_cast<uint16_t>(s.queues.size());
        if (count == 0) {
            QueueConf d;
            d.name = "default";
            d.port = static_cast<uint16_t>(p);
            d.any = true;
            d.implicit = true;
            s.queues.push_back(d);
        } else {
            for (const QueueConf& q : cfg.queues)
                if (q.port == p) s.queues.push_back(q);
        }
        plan.nqueues = static_cast<uint16_t>(s.queues.size() - plan.first_queue);
        plan.classify_decap = plan.nqueues > 1;
        uint8_t any = 0;
        for (uint16_t i = 0; i < plan.nqueues; ++i)
            if (s.queues[plan.first_queue + i].any) any = static_cast<uint8_t>(i);
        plan.class_queue.fill(any);
        for (uint16_t i = 0; i < plan.nqueues; ++i)
            for (const std::string& cn : s.queues[plan.first_queue + i].classes)
                for (size_t c = 0; c < s.classes.size(); ++c)
                    if (s.classes[c].name == cn) plan.class_queue[c + 1] = static_cast<uint8_t>(i);
        plan.tunnel_node.assign(s.tunnels.size(), 0);
        plan.node_tunnel.assign(1, -1);
        for (size_t t = 0; t < s.tunnels.size(); ++t)
            if (s.tunnels[t].outer_port == p && s.tunnels[t].rate != 0) {
                plan.tunnel_node[t] = static_cast<uint16_t>(plan.node_tunnel.size());
                plan.node_tunnel.push_back(static_cast<int16_t>(t));
            }
        s.scheds[p] = std::make_shared<PortSched>(s, static_cast<uint16_t>(p), rte_get_tsc_hz());
        s.shaped_ports |= 1u << p;
    }
}

// Makes the DPDK object names (lpm, hash) of every snapshot unique within the process.
std::atomic<uint64_t> g_table_seq{0};

void build_template(TunnelConf& t, const std::array<uint8_t, 6>& src_mac,
                    const std::array<uint8_t, 6>& dst_mac) {
    uint8_t* h = t.hdr.data();
    std::memcpy(h, dst_mac.data(), 6);
    std::memcpy(h + 6, src_mac.data(), 6);
    uint8_t* ip = h + kEthLen;
    uint8_t* udp;
    if (!t.outer_v6) {
        store16(h + kEthTypeOff, kEtherTypeIpv4);
        ip[0] = 0x45;
        store16(ip + kIpv4FragOff, kIpv4FlagDf);
        ip[kIpv4TtlOff] = t.ttl;
        ip[kIpv4ProtoOff] = kProtoUdp;
        std::memcpy(ip + kIpv4SrcOff, t.local.data(), 4);
        std::memcpy(ip + kIpv4DstOff, t.remote.data(), 4);
        uint32_t sum = 0;
        for (size_t i = 0; i < kIpv4Len; i += 2) sum += load16(ip + i);
        t.hdr_csum_base = sum;
        udp = ip + kIpv4Len;
    } else {
        store16(h + kEthTypeOff, kEtherTypeIpv6);
        store32(ip, 0x60000000u);
        ip[kIpv6NextHdrOff] = kProtoUdp;
        ip[kIpv6HopLimitOff] = t.ttl;
        std::memcpy(ip + kIpv6SrcOff, t.local.data(), 16);
        std::memcpy(ip + kIpv6DstOff, t.remote.data(), 16);
        t.hdr_csum_base = __rte_raw_cksum(ip + kIpv6SrcOff, 32, 0) + rte_cpu_to_be_16(kProtoUdp);
        udp = ip + kIpv6Len;
    }
    store16(udp + 2, t.udp_port);
    uint8_t* th = udp + kUdpLen;
    if (t.type == TunnelType::vxlan) {
        th[0] = kVxlanFlagI;
    } else {
        store16(th + 2, kEtherTypeTeb);  // Version 0, no options, O and C clear.
    }
    store32(th + 4, t.vni << 8);
    t.hdr_len = static_cast<uint8_t>(udp + kUdpLen + 8 - h);
}

}  // namespace

void StagedNeighbors::apply(NeighborTable& table, Snapshot& s) const {
    for (const Entry& e : entries) {
        const int i = table.add(e.family, e.port, e.addr.data(), true, rte_get_tsc_cycles());
        if (i < 0) throw std::logic_error("neighbor table full after compile checked it");
        Neighbor& n = table.at(static_cast<size_t>(i));
        if (e.is_static) {
            n.is_static.store(true, std::memory_order_relaxed);
            n.mac.store(kNeighborValid | pack_mac(e.mac.data()), std::memory_order_relaxed);
        }
        if (e.tunnel >= 0)
            s.tunnels[static_cast<size_t>(e.tunnel)].neighbor = static_cast<int16_t>(i);
    }
}

std::unique_ptr<Snapshot> build_snapshot(const Config& cfg,
                                         const std::vector<std::array<uint8_t, 6>>& port_macs,
                                         NeighborTable& neighbors) {
    SnapshotBuild b = compile_snapshot(cfg, port_macs, neighbors);
    b.neighbors.apply(neighbors, *b.snap);
    return std::move(b.snap);
}

SnapshotBuild compile_snapshot(const Config& cfg,
                               const std::vector<std::array<uint8_t, 6>>& port_macs,
                               const NeighborTable& neighbors) {
    SnapshotBuild build;
    build.snap = std::make_unique<Snapshot>();
    Snapshot* s = build.snap.get();
    StagedNeighbors& staged = build.neighbors;
    // The snapshot reads the table the control thread keeps; only apply() writes it.
    s->neighbors = const_cast<NeighborTable*>(&neighbors);
    for (const auto& sn : cfg.neighbors) {
        StagedNeighbors::Entry e;
        e.family = sn.family;
        e.port = sn.port;
        std::copy(sn.addr.begin(), sn.addr.end(), e.addr.begin());
        e.is_static = true;
        e.mac = sn.mac;
        staged.entries.push_back(e);
    }
    s->ports = cfg.ports;
    s->icmp_rate = cfg.icmp_rate;
    // Effective MACs, and where each port's ICMP errors come from.
    const PortConf* v4src = nullptr;
    const PortConf* v6src = nullptr;
    for (const PortConf& p : s->ports) {
        if (p.role != PortRole::outer) continue;
        if (v4src == nullptr && p.has_ipv4) v4src = &p;
        if (v6src == nullptr && p.has_ipv6) v6src = &p;
    }
    for (size_t i = 0; i < s->ports.size(); ++i) {
        PortConf& p = s->ports[i];
        if (!p.has_mac) p.mac = port_macs.at(i);
        p.plain_mtu = p.vlan != 0 ? 0 : p.mtu;
        const PortConf* a4 = p.has_ipv4 ? &p : v4src;
        const PortConf* a6 = p.has_ipv6 ? &p : v6src;
        if ((p.has_icmp_src4 = a4 != nullptr)) p.icmp_src4 = a4->ipv4;
        if ((p.has_icmp_src6 = a6 != nullptr)) p.icmp_src6 = a6->ipv6;
    }
    s->classes = cfg.classes;
    for (const ClassRule& c : s->classes) s->class_match.push_back(compile_class(c));
    s->policers = cfg.policers;
    for (const PolicerConf& pc : s->policers) {
        auto m = std::make_shared<PolicerState>();
        std::string why;
        if (!policer_init(*m, pc, why)) throw std::runtime_error(why);
        s->meters.push_back(std::move(m));
    }
    s->tunnels = cfg.tunnels;
    s->paths = std::make_unique<TunnelPath[]>(s->tunnels.size());
    for (size_t i = 0; i < s->tunnels.size(); ++i) {
        s->tunnels[i].path = &s->paths[i];
        s->paths[i].mtu.store(s->tunnels[i].outer_mtu, std::memory_order_relaxed);
    }
    const std::string suffix = std::to_string(++g_table_seq);

    size_t n4 = 0, n6 = 0;
    for (const auto& t : s->tunnels)
        for (const auto& r : t.routes) (r.family == 4 ? n4 : n6)++;

    rte_lpm_config c4{};
    c4.max_rules = static_cast<uint32_t>(std::max<size_t>(n4, 16));
    c4.number_tbl8s = static_cast<uint32_t>(std::max<size_t>(n4 * 2, 256));
    s->lpm4 = rte_lpm_create(("dscpgw_lpm4_" + suffix).c_str(), SOCKET_ID_ANY, &c4);
    rte_lpm6_config c6{};
    c6.max_rules = static_cast<uint32_t>(std::max<size_t>(n6, 16));
    c6.number_tbl8s = static_cast<uint32_t>(std::max<size_t>(n6 * 14, 256));
    s->lpm6 = rte_lpm6_create(("dscpgw_lpm6_" + suffix).c_str(), SOCKET_ID_ANY, &c6);
    rte_hash_parameters hp{};
    const std::string hname = "dscpgw_decap_" + suffix;
    hp.name = hname.c_str();
    hp.entries = static_cast<uint32_t>(std::max<size_t>(s->tunnels.size() * 2, 64));
    hp.key_len = sizeof(DecapKey);
    hp.hash_func = rte_hash_crc;
    hp.socket_id = SOCKET_ID_ANY;
    s->decap = rte_hash_create(&hp);
    // Say which table could not be had, and how big it was: DPDK's errno is often stale here.
    const auto refuse = [](const std::string& what) {
        throw std::runtime_error("cannot allocate " + what +
                                 " in DPDK memory: raise [eal] args -m (or the hugepages) or "
                                 "reduce the routes and tunnels");
    };
    if (s->lpm4 == nullptr)
        refuse("the IPv4 route table (rte_lpm, " + std::to_string(c4.max_rules) + " rules, " +
               std::to_string(c4.number_tbl8s) + " tbl8 groups, at least 64 MiB)");
    if (s->lpm6 == nullptr)
        refuse("the IPv6 route table (rte_lpm6, " + std::to_string(c6.max_rules) + " rules, " +
               std::to_string(c6.number_tbl8s) + " tbl8 groups)");
    if (s->decap == nullptr)
        refuse("the decapsulation table (rte_hash, " + std::to_string(hp.entries) + " entries)");

    for (size_t i = 0; i < s->tunnels.size(); ++i) {
        TunnelConf& t = s->tunnels[i];
        const PortConf& op = s->ports[t.outer_port];
        build_template(t, op.mac, cfg.next_hop_macs.at(i));
        t.inner_src_mac = s->ports[t.inner_port].mac;
        t.tx_udp_offload = op.tx_udp_cksum_offload;
        if (t.has_next_hop_ip) {
            StagedNeighbors::Entry e;
            e.family = t.outer_v6 ? 6 : 4;
            e.port = t.outer_port;
            std::copy(t.next_hop.begin(), t.next_hop.end(), e.addr.begin());
            e.tunnel = static_cast<int>(i);
            staged.entries.push_back(e);
        }
        for (const auto& r : t.routes) {
            const int rc =
                r.family == 4
                    ? rte_lpm_add(s->lpm4, load32(r.addr.data()), r.len, static_cast<uint32_t>(i))
                    : rte_lpm6_add(s->lpm6, r.addr.data(), r.len, static_cast<uint32_t>(i));
            if (rc < 0)
                throw std::runtime_error("tunnel \"" + t.name + "\": cannot add route " +
                                         format_prefix(r) + ": " + rte_strerror(-rc));
        }
        const DecapKey key = make_decap_key(t.outer_v6 ? 6 : 4, t.remote.data(), t.vni, t.udp_port,
                                            static_cast<uint8_t>(t.outer_port));
        const int rc = rte_hash_add_key_data(s->decap, &key,
                                             reinterpret_cast<void*>(static_cast<uintptr_t>(i)));
        if (rc < 0)
            throw std::runtime_error("tunnel \"" + t.name +
                                     "\": cannot add decap entry: " + rte_strerror(-rc));
    }
    compile_scheds(*s, cfg);
    // Room for every staged entry the table does not have yet (counting each address once).
    size_t fresh = 0;
    for (size_t k = 0; k < staged.entries.size(); ++k) {
        const auto& e = staged.entries[k];
        bool seen = neighbors.find(e.family, e.port, e.addr.data()) >= 0;
        for (size_t j = 0; j < k && !seen; ++j) {
            const auto& o = staged.entries[j];
            seen = o.family == e.family && o.port == e.port && o.addr == e.addr;
        }
        fresh += seen ? 0 : 1;
    }
    // Configured entries have their own share: learned LAN hosts never take their room.
    if (neighbors.configured_count() + fresh > kMaxConfiguredNeighbors)
        throw std::runtime_error(
            "neighbor table full: " + std::to_string(fresh) + " new next hops or static " +
            "neighbors needed, " +
            std::to_string(kMaxConfiguredNeighbors - neighbors.configured_count()) + " free");
    return build;
}

}  // namespace dscpgw
