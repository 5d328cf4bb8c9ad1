#include "control/report.h"

#include <cinttypes>
#include <cmath>
#include <sstream>

#include "config/config.h"
#include "dataplane/pipeline.h"

namespace dscpgw {

namespace {

// A counter summed over the workers: a scalar one, or element `i` of an array one.
uint64_t sum(const std::vector<const WorkerStats*>& ws, Counter WorkerStats::*field) {
    uint64_t total = 0;
    for (const WorkerStats* w : ws) total += (w->*field).get();
    return total;
}

template <size_t N>
uint64_t sum(const std::vector<const WorkerStats*>& ws, Counter (WorkerStats::*field)[N],
             size_t i) {
    uint64_t total = 0;
    for (const WorkerStats* w : ws) total += (w->*field)[i].get();
    return total;
}

template <size_t N>
uint64_t sum_bank(const std::vector<const WorkerStats*>& ws, uint8_t bank,
                  Counter (ConfigCounters::*field)[N], size_t i) {
    uint64_t total = 0;
    for (const WorkerStats* w : ws) total += (w->bank[bank].*field)[i].get();
    return total;
}

constexpr Counter (ConfigCounters::*kTunnelCounters[kTunnelFields])[kMaxTunnels] = {
    &ConfigCounters::encap_pkts,          &ConfigCounters::encap_bytes,
    &ConfigCounters::decap_pkts,          &ConfigCounters::decap_bytes,
    &ConfigCounters::outer_dscp_remarked, &ConfigCounters::ecn_ce_marked,
    &ConfigCounters::cnp_encap,           &ConfigCounters::cnp_decap,
};

ClassTotals class_live(const Snapshot& s, const std::vector<const WorkerStats*>& ws, size_t i) {
    return {sum_bank(ws, s.bank, &ConfigCounters::class_pkts, i),
            sum_bank(ws, s.bank, &ConfigCounters::class_bytes, i)};
}

TunnelTotals tunnel_live(const Snapshot& s, const std::vector<const WorkerStats*>& ws, size_t i) {
    TunnelTotals t{};
    for (size_t f = 0; f < kTunnelFields; ++f) t[f] = sum_bank(ws, s.bank, kTunnelCounters[f], i);
    return t;
}

template <typename A>
void add_to(A& a, const A& b) {
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
}

}  // namespace

void NamedTotals::fold(const Snapshot& retired, const std::vector<WorkerStats*>& workers) {
    const std::vector<const WorkerStats*> ws(workers.begin(), workers.end());
    for (size_t i = 0; i < retired.classes.size(); ++i)
        add_to(classes_[retired.classes[i].name], class_live(retired, ws, i));
    add_to(unclassified_, class_live(retired, ws, kNoClass));
    for (size_t i = 0; i < retired.tunnels.size(); ++i)
        add_to(tunnels_[retired.tunnels[i].name], tunnel_live(retired, ws, i));
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

void fill_counters(Report& r, const Snapshot& s, const NamedTotals& totals,
                   const std::vector<const WorkerStats*>& ws) {
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
        PortReport& p = r.ports[i];
        p.mtu = s.ports[i].mtu;
        p.rx_pkts = sum(ws, &WorkerStats::rx_pkts, i);
        p.rx_bytes = sum(ws, &WorkerStats::rx_bytes, i);
        p.tx_pkts = sum(ws, &WorkerStats::tx_pkts, i);
        p.tx_bytes = sum(ws, &WorkerStats::tx_bytes, i);
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
        t.t = tt[i];
    }
    r.drops.clear();
    for (size_t d = 1; d < kDropReasonCount; ++d)
        r.drops.emplace_back(std::string(kDropReasonInfo[d].name), sum(ws, &WorkerStats::drops, d));
    r.local_replies.clear();
    for (size_t l = 1; l < static_cast<size_t>(LocalReply::count_); ++l)
        r.local_replies.emplace_back(kLocalReplyNames[l], sum(ws, &WorkerStats::local_replies, l));
    r.dscp_rewrites = sum(ws, &WorkerStats::dscp_rewrites);
    r.icmp_too_big_sent = sum(ws, &WorkerStats::icmp_too_big_sent);
    r.icmp_rate_limited = sum(ws, &WorkerStats::icmp_rate_limited);
    r.tx_failed = sum(ws, &WorkerStats::tx_failed);
    r.workers.resize(ws.size());
    for (size_t w = 0; w < ws.size(); ++w) {
        WorkerReport& wr = r.workers[w];
        wr.rx_pkts = 0;
        for (size_t i = 0; i < s.ports.size(); ++i) wr.rx_pkts += ws[w]->rx_pkts[i].get();
        wr.busy_cycles = ws[w]->busy_cycles.get();
        wr.idle_cycles = ws[w]->idle_cycles.get();
        wr.polls = ws[w]->polls.get();
    }
}

void print_counters(std::FILE* out, const Report& r) {
    std::fprintf(out, "ports:\n");
    for (const PortReport& p : r.ports)
        std::fprintf(out,
                     "  %-16s rx %" PRIu64 " pkts %" PRIu64 " bytes, tx %" PRIu64 " pkts %" PRIu64
                     " bytes\n",
                     p.name.c_str(), p.rx_pkts, p.rx_bytes, p.tx_pkts, p.tx_bytes);
    std::fprintf(out, "classes:\n");
    for (const ClassReport& c : r.classes)
        std::fprintf(out, "  %-16s %" PRIu64 " pkts %" PRIu64 " bytes\n", c.name.c_str(), c.t[0],
                     c.t[1]);
    std::fprintf(out, "  %-16s %" PRIu64 " pkts %" PRIu64 " bytes\n", "(no class)",
                 r.unclassified[0], r.unclassified[1]);
    std::fprintf(out, "dscp_rewrites: %" PRIu64 "\n", r.dscp_rewrites);
    std::fprintf(out, "local:\n");
    for (const auto& [name, n] : r.local_replies)
        std::fprintf(out, "  %-20s %" PRIu64 "\n", name.c_str(), n);
    std::fprintf(out, "  %-20s %" PRIu64 "\n", "icmp_too_big_sent", r.icmp_too_big_sent);
    std::fprintf(out, "  %-20s %" PRIu64 "\n", "icmp_rate_limited", r.icmp_rate_limited);
    std::fprintf(out, "tunnels:\n");
    for (const TunnelReport& t : r.tunnels)
        std::fprintf(out,
                     "  %-16s encap %" PRIu64 " pkts %" PRIu64 " bytes, decap %" PRIu64
                     " pkts %" PRIu64 " bytes, outer_dscp_remarked %" PRIu64
                     ", ecn_ce_marked %" PRIu64 ", cnp in %" PRIu64 " out %" PRIu64 "\n",
                     t.name.c_str(), t.t[kEncapPkts], t.t[kEncapBytes], t.t[kDecapPkts],
                     t.t[kDecapBytes], t.t[kOuterRemarked], t.t[kEcnCeMarked], t.t[kCnpEncap],
                     t.t[kCnpDecap]);
    std::fprintf(out, "drops:\n");
    uint64_t total = 0;
    for (const auto& [name, n] : r.drops) {
        total += n;
        if (n != 0) std::fprintf(out, "  %-20s %" PRIu64 "\n", name.c_str(), n);
    }
    std::fprintf(out, "  %-20s %" PRIu64 "\n", "total", total);
    if (r.tx_failed != 0) std::fprintf(out, "tx_failed: %" PRIu64 "\n", r.tx_failed);
}

void print_counters(std::FILE* out, const Snapshot& s, const std::vector<const WorkerStats*>& ws) {
    Report r;
    fill_counters(r, s, NamedTotals{}, ws);
    print_counters(out, r);
}

}  // namespace dscpgw
