#include "control/report.h"

#include <rte_cycles.h>

#include <cinttypes>
#include <cmath>
#include <sstream>

#include "config/config.h"
#include "dataplane/pipeline.h"
#include "dataplane/sched.h"

namespace dscpgw {

namespace {

// A family's totals for `item`, summed over the workers' blocks.
template <typename Family, typename Block>
Totals<Family> sum(const std::vector<const WorkerStats*>& ws, Block&& block, size_t item) {
    Totals<Family> t{};
    for (const WorkerStats* w : ws) add_to(t, block(*w).totals(item));
    return t;
}

ClassTotals class_live(const Snapshot& s, const std::vector<const WorkerStats*>& ws, size_t i) {
    return sum<ClassCounter>(
        ws, [&](const WorkerStats& w) -> const auto& { return w.bank[s.bank].cls; }, i);
}

TunnelTotals tunnel_live(const Snapshot& s, const std::vector<const WorkerStats*>& ws, size_t i) {
    return sum<TunnelCounter>(
        ws, [&](const WorkerStats& w) -> const auto& { return w.bank[s.bank].tunnel; }, i);
}

PolicerTotals policer_live(const Snapshot& s, const std::vector<const WorkerStats*>& ws, size_t i) {
    return sum<PolicerCounter>(
        ws, [&](const WorkerStats& w) -> const auto& { return w.bank[s.bank].policer; }, i);
}

QueueTotals queue_live(const Snapshot& s, const std::vector<const WorkerStats*>& ws, size_t i) {
    return sum<QueueCounter>(
        ws, [&](const WorkerStats& w) -> const auto& { return w.bank[s.bank].queue; }, i);
}

std::string queue_key(const Snapshot& s, size_t i) {
    return s.ports[s.queues[i].port].name + "/" + s.queues[i].name;
}

template <size_t N>
std::array<uint64_t, N> sum_array(const std::vector<const WorkerStats*>& ws,
                                  const Counter (WorkerStats::*field)[N]) {
    std::array<uint64_t, N> t{};
    for (const WorkerStats* w : ws)
        for (size_t i = 0; i < N; ++i) t[i] += (w->*field)[i].get();
    return t;
}

}  // namespace

void NamedTotals::fold(const Snapshot& retired, const std::vector<WorkerStats*>& workers) {
    const std::vector<const WorkerStats*> ws(workers.begin(), workers.end());
    for (size_t i = 0; i < retired.classes.size(); ++i)
        add_to(classes_[retired.classes[i].name], class_live(retired, ws, i));
    add_to(unclassified_, class_live(retired, ws, kNoClass));
    for (size_t i = 0; i < retired.tunnels.size(); ++i)
        add_to(tunnels_[retired.tunnels[i].name], tunnel_live(retired, ws, i));
    for (size_t i = 0; i < retired.policers.size(); ++i)
        add_to(policers_[retired.policers[i].name], policer_live(retired, ws, i));
    for (size_t i = 0; i < retired.queues.size(); ++i)
        add_to(queues_[queue_key(retired, i)], queue_live(retired, ws, i));
    for (WorkerStats* w : workers) w->bank[retired.bank].reset();
}

std::vector<ClassTotals> NamedTotals::classes(const Snapshot& cur,
                                              const std::vector<const WorkerStats*>& ws) const {
    std::vector<ClassTotals> out;
    for (size_t i = 0; i < cur.classes.size(); ++i) {
        ClassTotals t = class_live(cur, ws, i);
        if (auto it = classes_.find(cur.classes[i].name); it != classes_.end())
            add_to(t, it->second);
        out.push_back(t);
    }
    return out;
}

ClassTotals NamedTotals::unclassified(const Snapshot& cur,
                                      const std::vector<const WorkerStats*>& ws) const {
    ClassTotals t = class_live(cur, ws, kNoClass);
    add_to(t, unclassified_);
    return t;
}

std::vector<TunnelTotals> NamedTotals::tunnels(const Snapshot& cur,
                                               const std::vector<const WorkerStats*>& ws) const {
    std::vector<TunnelTotals> out;
    for (size_t i = 0; i < cur.tunnels.size(); ++i) {
        TunnelTotals t = tunnel_live(cur, ws, i);
        if (auto it = tunnels_.find(cur.tunnels[i].name); it != tunnels_.end())
            add_to(t, it->second);
        out.push_back(t);
    }
    return out;
}

std::vector<PolicerTotals> NamedTotals::policers(const Snapshot& cur,
                                                 const std::vector<const WorkerStats*>& ws) const {
    std::vector<PolicerTotals> out;
    for (size_t i = 0; i < cur.policers.size(); ++i) {
        PolicerTotals t = policer_live(cur, ws, i);
        if (auto it = policers_.find(cur.policers[i].name); it != policers_.end())
            add_to(t, it->second);
        out.push_back(t);
    }
    return out;
}

std::vector<QueueTotals> NamedTotals::queues(const Snapshot& cur,
                                             const std::vector<const WorkerStats*>& ws) const {
    std::vector<QueueTotals> out;
    for (size_t i = 0; i < cur.queues.size(); ++i) {
        QueueTotals t = queue_live(cur, ws, i);
        if (auto it = queues_.find(queue_key(cur, i)); it != queues_.end()) add_to(t, it->second);
        out.push_back(t);
    }
    return out;
}

void fill_counters(Report& r, const Snapshot& s, const NamedTotals& totals,
                   const std::vector<const WorkerStats*>& ws, bool scrape) {
    r.generation = s.generation;
    if (r.ports.size() != s.ports.size()) {
        r.ports.resize(s.ports.size());
        for (size_t i = 0; i < s.ports.size(); ++i) {
            r.ports[i].name = s.ports[i].name;
            r.ports[i].device = s.ports[i].device;
            r.ports[i].role = s.ports[i].role == PortRole::inner ? "inner" : "outer";
        }
    }
    for (size_t i = 0; i < s.ports.size(); ++i) {
        r.ports[i].mtu = s.ports[i].mtu;
        r.ports[i].rate = s.ports[i].rate;
        r.ports[i].burst = s.ports[i].rate != 0 ? s.ports[i].burst : 0;
        r.ports[i].t = sum<PortCounter>(
            ws, [](const WorkerStats& w) -> const auto& { return w.port; }, i);
    }
    const auto ct = totals.classes(s, ws);
    r.classes.clear();
    for (size_t i = 0; i < s.classes.size(); ++i)
        r.classes.push_back({s.classes[i].name, s.classes[i].set_dscp, ct[i]});
    r.unclassified = totals.unclassified(s, ws);
    const auto tt = totals.tunnels(s, ws);
    r.tunnels.resize(s.tunnels.size());
    for (size_t i = 0; i < s.tunnels.size(); ++i) {
        TunnelReport& t = r.tunnels[i];
        const TunnelConf& c = s.tunnels[i];
        t.name = c.name;
        t.type = c.type == TunnelType::vxlan ? "vxlan" : "geneve";
        t.vni = c.vni;
        t.udp_port = c.udp_port;
        t.remote = format_ip(c.outer_v6 ? 6 : 4, c.remote.data());
        t.local = format_ip(c.outer_v6 ? 6 : 4, c.local.data());
        t.outer_port = s.ports[c.outer_port].name;
        t.inner_port = s.ports[c.inner_port].name;
        t.mtu = c.outer_mtu;
        t.rate = c.rate;
        t.burst = c.rate != 0 ? c.burst : 0;
        t.path_mtu = c.path != nullptr ? c.path->mtu.load(std::memory_order_relaxed) : c.outer_mtu;
        t.carries = carried_inner_mtu(c, t.path_mtu);
        if (t.path_mtu < t.mtu)
            t.path_mtu_age =
                static_cast<double>(rte_get_tsc_cycles() -
                                    c.path->lowered_tsc.load(std::memory_order_relaxed)) /
                static_cast<double>(rte_get_tsc_hz());
        t.t = tt[i];
    }
    const auto pt = totals.policers(s, ws);
    r.policers.resize(s.policers.size());
    for (size_t i = 0; i < s.policers.size(); ++i) {
        PolicerReport& p = r.policers[i];
        const PolicerConf& c = s.policers[i];
        p.name = c.name;
        p.mode = c.mode == MeterMode::trtcm ? "trtcm" : "srtcm";
        p.cir = c.cir;
        p.pir = c.pir;
        p.cbs = c.cbs;
        p.pbs = c.pbs;
        p.colour_aware = c.colour_aware;
        p.yellow = c.yellow;
        p.red = c.red;
        p.classes.clear();
        for (const ClassRule& cl : s.classes)
            if (cl.policer == static_cast<int>(i)) p.classes.push_back(cl.name);
        p.t = pt[i];
    }
    const auto qt = totals.queues(s, ws);
    r.queues.resize(s.queues.size());
    for (size_t i = 0; i < s.queues.size(); ++i) {
        QueueReport& q = r.queues[i];
        const QueueConf& c = s.queues[i];
        q.name = c.name;
        q.port = s.ports[c.port].name;
        q.strict = c.strict;
        q.implicit = c.implicit;
        q.weight = c.strict ? 0 : c.weight;
        q.max_rate = c.max_rate;
        q.limit = c.limit;
        q.ecn = c.ecn;
        q.ecn_min = c.ecn_min;
        q.ecn_max = c.ecn_max;
        q.ecn_max_probability = c.ecn ? c.ecn_max_probability : 0;
        q.classes = c.classes;
        if (c.any) q.classes.emplace_back("*");
        const PortSched* ps = c.port < s.scheds.size() ? s.scheds[c.port].get() : nullptr;
        const size_t at = i - s.sched_plans[c.port].first_queue;
        if (ps != nullptr && at < ps->queues()) {
            q.depth_bytes = ps->depth_bytes(at);
            q.depth_packets = ps->depth_packets(at);
            q.peak_bytes = scrape ? const_cast<PortSched*>(ps)->take_peak(at) : ps->peak_bytes(at);
        }
        q.t = qt[i];
    }
    r.drops = sum_array(ws, &WorkerStats::drops);
    r.local_replies = sum_array(ws, &WorkerStats::local);
    r.dataplane = sum<DataplaneCounter>(
        ws, [](const WorkerStats& w) -> const auto& { return w.dataplane; }, 0);
    r.workers.resize(ws.size());
    for (size_t w = 0; w < ws.size(); ++w) r.workers[w].t = ws[w]->worker.totals(0);
}

void print_counters(std::FILE* out, const Report& r) {
    using P = PortCounter;
    using C = ClassCounter;
    using T = TunnelCounter;
    using D = DataplaneCounter;
    std::fprintf(out, "ports:\n");
    for (const PortReport& p : r.ports)
        std::fprintf(out,
                     "  %-16s rx %" PRIu64 " pkts %" PRIu64 " bytes, tx %" PRIu64 " pkts %" PRIu64
                     " bytes\n",
                     p.name.c_str(), p.t[P::rx_packets], p.t[P::rx_bytes], p.t[P::tx_packets],
                     p.t[P::tx_bytes]);
    std::fprintf(out, "classes:\n");
    for (const ClassReport& c : r.classes)
        std::fprintf(out, "  %-16s %" PRIu64 " pkts %" PRIu64 " bytes\n", c.name.c_str(),
                     c.t[C::packets], c.t[C::bytes]);
    std::fprintf(out, "  %-16s %" PRIu64 " pkts %" PRIu64 " bytes\n", "(no class)",
                 r.unclassified[C::packets], r.unclassified[C::bytes]);
    bool adaptive = false;
    for (const ClassReport& c : r.classes) adaptive = adaptive || c.t[C::adaptive_hits] != 0;
    if (adaptive) {
        std::fprintf(out, "adaptive:\n");
        for (const ClassReport& c : r.classes)
            std::fprintf(out, "  %-16s %" PRIu64 " pkts\n", c.name.c_str(), c.t[C::adaptive_hits]);
    }
    std::fprintf(out, "dscp_rewrites: %" PRIu64 "\n", r.dataplane[D::dscp_rewrites]);
    std::fprintf(out, "local:\n");
    for (size_t l = 1; l < kLocalReplyCount; ++l)
        std::fprintf(out, "  %-20s %" PRIu64 "\n", std::string(kLocalReplyInfo[l].name).c_str(),
                     r.local_replies[l]);
    std::fprintf(out, "  %-20s %" PRIu64 "\n", "icmp_too_big_sent",
                 r.dataplane[D::icmp_too_big_sent]);
    std::fprintf(out, "  %-20s %" PRIu64 "\n", "icmp_rate_limited",
                 r.dataplane[D::icmp_rate_limited]);
    // One line per tunnel in a fixed shape (scripts read it); ctl and Prometheus have every field.
    std::fprintf(out, "tunnels:\n");
    for (const TunnelReport& t : r.tunnels)
        std::fprintf(out,
                     "  %-16s encap %" PRIu64 " pkts %" PRIu64 " bytes, decap %" PRIu64
                     " pkts %" PRIu64 " bytes, outer_dscp_remarked %" PRIu64
                     ", ecn_ce_marked %" PRIu64 ", cnp in %" PRIu64 " out %" PRIu64 "\n",
                     t.name.c_str(), t.t[T::encap_packets], t.t[T::encap_bytes],
                     t.t[T::decap_packets], t.t[T::decap_bytes], t.t[T::outer_dscp_remarked],
                     t.t[T::ecn_ce_marked], t.t[T::cnp_encap], t.t[T::cnp_decap]);
    if (!r.policers.empty()) {
        using L = PolicerCounter;
        std::fprintf(out, "policers:\n");
        for (const PolicerReport& p : r.policers)
            std::fprintf(out,
                         "  %-16s green %" PRIu64 " pkts %" PRIu64 " bytes, yellow %" PRIu64
                         " pkts %" PRIu64 " bytes, red %" PRIu64 " pkts %" PRIu64 " bytes\n",
                         p.name.c_str(), p.t[L::green_packets], p.t[L::green_bytes],
                         p.t[L::yellow_packets], p.t[L::yellow_bytes], p.t[L::red_packets],
                         p.t[L::red_bytes]);
    }
    if (!r.queues.empty()) {
        using Q = QueueCounter;
        std::fprintf(out, "queues:\n");
        for (const QueueReport& q : r.queues)
            std::fprintf(out,
                         "  %-16s sent %" PRIu64 " pkts %" PRIu64 " bytes, ce_marked %" PRIu64
                         ", drops ecn_not_ect %" PRIu64 " limit %" PRIu64 " buffers %" PRIu64
                         ", mean delay %.1f us, depth %" PRIu64 " bytes (max %" PRIu64 ")\n",
                         (q.port + "/" + q.name).c_str(), q.t[Q::packets], q.t[Q::bytes],
                         q.t[Q::ce_marked], q.t[Q::drop_not_ect], q.t[Q::drop_limit],
                         q.t[Q::drop_buffers],
                         q.t[Q::packets] ? static_cast<double>(q.t[Q::delay]) / 1e3 /
                                               static_cast<double>(q.t[Q::packets])
                                         : 0.0,
                         q.depth_bytes, q.peak_bytes);
        const auto shaper = [&](const std::string& name, uint64_t rate, uint64_t bytes,
                                uint64_t throttled_ns) {
            if (rate != 0)
                std::fprintf(out,
                             "  shaper %-9s %" PRIu64 " bit/s: sent %" PRIu64
                             " bytes, throttled %.6f s\n",
                             name.c_str(), rate, bytes, static_cast<double>(throttled_ns) / 1e9);
        };
        for (const PortReport& p : r.ports)
            shaper(p.name, p.rate, p.t[P::shaper_bytes], p.t[P::shaper_throttled]);
        for (const TunnelReport& t : r.tunnels)
            shaper(t.name, t.rate, t.t[T::shaper_bytes], t.t[T::shaper_throttled]);
    }
    if (r.dataplane[D::pcp_rewrites] != 0 || r.dataplane[D::pcp_to_dscp] != 0)
        std::fprintf(out, "pcp: pcp_rewrites %" PRIu64 ", pcp_to_dscp %" PRIu64 "\n",
                     r.dataplane[D::pcp_rewrites], r.dataplane[D::pcp_to_dscp]);
    std::fprintf(out, "drops:\n");
    uint64_t total = 0;
    for (size_t d = 1; d < kDropReasonCount; ++d) {
        total += r.drops[d];
        if (r.drops[d] != 0)
            std::fprintf(out, "  %-20s %" PRIu64 "\n", std::string(kDropReasonInfo[d].name).c_str(),
                         r.drops[d]);
    }
    std::fprintf(out, "  %-20s %" PRIu64 "\n", "total", total);
    if (r.dataplane[D::tx_failed] != 0)
        std::fprintf(out, "tx_failed: %" PRIu64 "\n", r.dataplane[D::tx_failed]);
}

void print_counters(std::FILE* out, const Snapshot& s, const std::vector<const WorkerStats*>& ws) {
    Report r;
    fill_counters(r, s, NamedTotals{}, ws);
    print_counters(out, r);
}

void print_run_summary(std::FILE* out, const Report& r, double elapsed) {
    using D = DeviceCounter;
    for (const PortReport& p : r.ports)
        std::fprintf(out,
                     "ethdev %s: ipackets %" PRIu64 " opackets %" PRIu64 " imissed %" PRIu64
                     " ierrors %" PRIu64 " oerrors %" PRIu64 " rx_nombuf %" PRIu64 "\n",
                     p.name.c_str(), p.dev[D::device_rx_packets], p.dev[D::device_tx_packets],
                     p.dev[D::device_rx_missed], p.dev[D::device_rx_errors],
                     p.dev[D::device_tx_errors], p.dev[D::device_rx_nombuf]);
    print_counters(out, r);
    if (!r.neighbors.empty()) {
        std::fprintf(out, "neighbors:\n");
        for (const NeighborReport& n : r.neighbors)
            std::fprintf(out, "  %-28s port %-8s %s%s\n", n.addr.c_str(), n.port.c_str(),
                         n.mac.empty() ? "unresolved" : n.mac.c_str(),
                         n.is_static ? " (static)" : "");
        std::fprintf(out,
                     "neighbor probes: sent %" PRIu64 ", failed %" PRIu64 ", expired %" PRIu64 "\n",
                     r.probes_sent, r.probes_failed, r.neighbors_expired);
    }
    uint64_t rx = 0, tx = 0;
    for (size_t w = 0; w < r.workers.size(); ++w) {
        const Totals<WorkerCounter>& t = r.workers[w].t;
        const uint64_t n = t[WorkerCounter::rx_packets], busy = t[WorkerCounter::busy_cycles],
                       all = busy + t[WorkerCounter::idle_cycles];
        rx += n;
        std::fprintf(out, "worker %zu: rx %" PRIu64 " pkts, busy %.1f cycles/pkt, %.1f%% busy\n", w,
                     n, n ? static_cast<double>(busy) / static_cast<double>(n) : 0.0,
                     all ? 100.0 * static_cast<double>(busy) / static_cast<double>(all) : 0.0);
    }
    for (const PortReport& p : r.ports) tx += p.t[PortCounter::tx_packets];
    std::fprintf(out,
                 "forwarded: rx %" PRIu64 " tx %" PRIu64
                 " pkts in %.3f s: %.3f Mpps rx, %.3f Mpps tx\n",
                 rx, tx, elapsed, static_cast<double>(rx) / elapsed / 1e6,
                 static_cast<double>(tx) / elapsed / 1e6);
}

}  // namespace dscpgw
