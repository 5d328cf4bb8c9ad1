#include "control/metrics.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <set>
#include <string_view>

namespace dscpgw {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

class Families {
  public:
    explicit Families(uint64_t tsc_hz)
        : cycle_seconds_(tsc_hz != 0 ? 1.0 / static_cast<double>(tsc_hz) : 0) {}
    MetricFamily& family(std::string name, std::string help, MetricType type) {
        out_.push_back(MetricFamily{std::move(name), std::move(help), type, {}});
        return out_.back();
    }
    void counter(const char* name, const char* help, double v, Labels l = {}) {
        add(family(name, help, MetricType::Counter), v, std::move(l));
    }
    void gauge(const char* name, const char* help, double v, Labels l = {}) {
        add(family(name, help, MetricType::Gauge), v, std::move(l));
    }
    // One sample of `f`.
    static void add(MetricFamily& f, double v, Labels l) {
        ClientMetric m;
        m.label = std::move(l);
        if (f.type == MetricType::Counter)
            m.counter.value = v;
        else
            m.gauge.value = v;
        f.metric.push_back(std::move(m));
    }
    // A family with one sample per element of `items`, labelled `label` = name(item).
    template <typename Items, typename Name, typename Value>
    void each(const char* name, const char* help, MetricType type, const Items& items,
              const char* label, Name&& label_of, Value&& value_of) {
        MetricFamily& f = family(name, help, type);
        for (const auto& it : items) add(f, value_of(it), {{label, label_of(it)}});
    }
    // The families of one counter list (dataplane/counters.h): a family per distinct metric, a
    // sample per item and entry, labelled with the entry's label and `label` = name(item).
    // `unclassified`: the class entries as the families of the packets no class matched.
    template <typename Family, typename Items, typename Name, typename Values>
    void list(const char* label, const Items& items, Name&& label_of, Values&& values_of,
              bool unclassified = false,
              const std::function<Labels(const typename Items::value_type&)>& extra = {}) {
        std::vector<MetricFamily*> fam(Family::count, nullptr);
        for (size_t e = 0; e < Family::count; ++e) {
            const CounterInfo& c = Family::info[e];
            for (size_t k = 0; k < e; ++k)
                if (Family::info[k].metric == c.metric) fam[e] = fam[k];
            if (fam[e] != nullptr) continue;
            if (unclassified)
                fam[e] =
                    &family("dscpgw_unclassified_" + std::string(c.metric.substr(6)),
                            "Inner IP packets no class matched, in " + std::string(c.unit) + ".",
                            MetricType::Counter);
            else
                fam[e] = &family("dscpgw_" + std::string(c.metric), std::string(c.help),
                                 MetricType::Counter);
        }
        for (const auto& it : items) {
            const auto& v = values_of(it);
            for (size_t e = 0; e < Family::count; ++e) {
                Labels l;
                if (const std::string_view el = Family::info[e].label; !el.empty()) {
                    const size_t eq = el.find('=');
                    l.push_back({std::string(el.substr(0, eq)), std::string(el.substr(eq + 1))});
                }
                if (extra) {
                    Labels x = extra(it);
                    l.insert(l.end(), x.begin(), x.end());
                }
                if (label != nullptr) l.push_back({label, label_of(it)});
                // Time is counted in nanoseconds or TSC cycles and exposed in seconds (the
                // families' names).
                const std::string_view unit = Family::info[e].unit;
                const double scale = unit == "nanoseconds" ? 1e-9
                                     : unit == "cycles"    ? cycle_seconds_
                                                           : 1.0;
                add(*fam[e], static_cast<double>(v[e]) * scale, std::move(l));
            }
        }
    }
    std::vector<MetricFamily> take() {
        return {std::make_move_iterator(out_.begin()), std::make_move_iterator(out_.end())};
    }

  private:
    double cycle_seconds_;
    std::deque<MetricFamily> out_;  // Stable addresses while families are added.
};

double d(uint64_t v) { return static_cast<double>(v); }

const auto no_label = [](const auto&) { return std::string(); };

}  // namespace

namespace {

// "HEAD: name = help; ...", from a list whose entry 0 is "none".
template <typename Info, size_t N>
std::string enumerated_help(std::string head, const Info (&list)[N]) {
    for (size_t i = 1; i < N; ++i)
        head.append(i == 1 ? ": " : "; ").append(list[i].name).append(" = ").append(list[i].help);
    return head.append(".");
}

}  // namespace

std::string drops_help() {
    return enumerated_help("Packets the dataplane dropped, by reason", kDropReasonInfo);
}

std::string local_replies_help() {
    return enumerated_help("Frames for the gateway's own addresses, by what became of them",
                           kLocalReplyInfo);
}

std::vector<MetricFamily> metric_families(const Report& r) {
    Families f(r.tsc_hz);
    constexpr auto C = MetricType::Counter;
    constexpr auto G = MetricType::Gauge;
    f.gauge("dscpgw_build_info", "dscpgw's version and the DPDK it runs on; always 1.", 1,
            {{"version", r.version}, {"dpdk", r.dpdk_version}});
    f.gauge("dscpgw_start_time_seconds", "When the gateway started, in Unix seconds.",
            r.start_time);
    f.gauge("dscpgw_config_generation",
            "Generation of the running configuration snapshot; grows by one per successful load.",
            d(r.generation));
    f.gauge("dscpgw_config_last_reload_timestamp_seconds",
            "When the configuration was last loaded or a reload last attempted (Unix seconds).",
            r.last_reload_time);
    f.gauge("dscpgw_config_last_reload_success",
            "1 if the last configuration load or reload succeeded, 0 if it was refused.",
            r.last_reload_ok ? 1 : 0);
    f.gauge("dscpgw_config_last_reload_duration_seconds",
            "How long the last reload took: read, validate, compile, publish, and wait until every "
            "worker left the old snapshot.",
            r.last_reload_seconds);
    MetricFamily& rl = f.family("dscpgw_config_reloads_total",
                                "Configuration reloads (control socket or SIGHUP) by result.", C);
    Families::add(rl, d(r.reloads_ok), {{"result", "success"}});
    Families::add(rl, d(r.reloads_failed), {{"result", "failure"}});

    const auto port_name = [](const PortReport& p) { return p.name; };
    f.each("dscpgw_port_up", "Link state of the port: 1 up, 0 down.", G, r.ports, "port", port_name,
           [](const PortReport& p) { return p.link_up > 0 ? 1.0 : 0.0; });
    f.each("dscpgw_port_speed_bytes_per_second",
           "Link speed the device reports (0 while the link is down).", G, r.ports, "port",
           port_name, [](const PortReport& p) { return p.speed_mbps * 125000.0; });
    f.list<PortCounter>("port", r.ports, port_name, [](const PortReport& p) { return p.t; });
    f.list<DeviceCounter>("port", r.ports, port_name, [](const PortReport& p) { return p.dev; });

    f.list<ClassCounter>(
        "class", r.classes, [](const ClassReport& c) { return c.name; },
        [](const ClassReport& c) { return c.t; });
    // The packets no class matched: the class families' entries under "unclassified_".
    static_assert(ClassCounter::info[0].metric.substr(0, 6) == "class_");
    f.list<ClassCounter>(
        nullptr, std::array<ClassTotals, 1>{r.unclassified}, no_label,
        [](const ClassTotals& t) { return t; }, true);
    const auto tunnel_name = [](const TunnelReport& t) { return t.name; };
    f.list<TunnelCounter>("tunnel", r.tunnels, tunnel_name,
                          [](const TunnelReport& t) { return t.t; });

    f.list<PolicerCounter>(
        "policer", r.policers, [](const PolicerReport& p) { return p.name; },
        [](const PolicerReport& p) { return p.t; });
    f.each(
        "dscpgw_policer_cir_bytes_per_second",
        "The policer's committed rate (cir) in bytes per second, as configured (\"%\" "
        "resolved): compare with rate(dscpgw_policer_bytes_total).",
        G, r.policers, "policer", [](const PolicerReport& p) { return p.name; },
        [](const PolicerReport& p) { return static_cast<double>(p.cir) / 8.0; });

    // The egress queues: counters, and depth gauges (now, and the largest since the last scrape).
    const auto queue_name = [](const QueueReport& q) { return q.name; };
    const auto queue_port = [](const QueueReport& q) { return Labels{{"port", q.port}}; };
    f.list<QueueCounter>(
        "queue", r.queues, queue_name, [](const QueueReport& q) { return q.t; }, false, queue_port);
    MetricFamily& qd = f.family("dscpgw_queue_depth_bytes",
                                "Bytes (Ethernet frames) waiting in the egress queue now.", G);
    MetricFamily& qp = f.family("dscpgw_queue_depth_max_bytes",
                                "The egress queue's largest depth in bytes since the last scrape "
                                "of the Prometheus endpoint.",
                                G);
    MetricFamily& ql =
        f.family("dscpgw_queue_limit_bytes", "The egress queue's limit in bytes.", G);
    for (const QueueReport& q : r.queues) {
        Families::add(qd, d(q.depth_bytes), {{"port", q.port}, {"queue", q.name}});
        Families::add(qp, d(q.peak_bytes), {{"port", q.port}, {"queue", q.name}});
        Families::add(ql, d(q.limit), {{"port", q.port}, {"queue", q.name}});
    }
    f.each("dscpgw_port_shaper_rate_bytes_per_second",
           "The port's shaper rate (its `rate`) in bytes per second; 0: not shaped.", G, r.ports,
           "port", port_name,
           [](const PortReport& p) { return static_cast<double>(p.rate) / 8.0; });

    f.each("dscpgw_tunnel_path_mtu_bytes",
           "Path MTU the tunnel uses now (outer IP bytes): its configured mtu, or less while an "
           "ICMP error from the underlay holds it lower (10 minutes).",
           G, r.tunnels, "tunnel", tunnel_name,
           [](const TunnelReport& t) { return static_cast<double>(t.path_mtu); });

    MetricFamily& drops = f.family("dscpgw_drops_total", drops_help(), C);
    for (size_t i = 1; i < kDropReasonCount; ++i)
        Families::add(drops, d(r.drops[i]), {{"reason", std::string(kDropReasonInfo[i].name)}});
    MetricFamily& local = f.family("dscpgw_local_packets_total", local_replies_help(), C);
    for (size_t i = 1; i < kLocalReplyCount; ++i)
        Families::add(local, d(r.local_replies[i]),
                      {{"kind", std::string(kLocalReplyInfo[i].name)}});
    f.list<DataplaneCounter>(nullptr, std::array<Totals<DataplaneCounter>, 1>{r.dataplane},
                             no_label, [](const auto& t) { return t; });

    MetricFamily& nb = f.family(
        "dscpgw_neighbor_resolved",
        "Neighbor (next hop or LAN host) resolution: 1 resolved or static, 0 unresolved.", G);
    uint64_t resolved = 0;
    for (const NeighborReport& n : r.neighbors) {
        Families::add(nb, n.mac.empty() ? 0 : 1, {{"address", n.addr}, {"port", n.port}});
        resolved += n.mac.empty() ? 0 : 1;
    }
    MetricFamily& nbs = f.family("dscpgw_neighbors", "Neighbor entries by state.", G);
    Families::add(nbs, d(resolved), {{"state", "resolved"}});
    Families::add(nbs, d(r.neighbors.size() - resolved), {{"state", "unresolved"}});
    f.counter("dscpgw_neighbor_probes_total", "ARP requests and Neighbor Solicitations sent.",
              d(r.probes_sent));
    f.counter("dscpgw_neighbor_expired_total",
              "Learned MACs forgotten after their owner stopped answering probes.",
              d(r.neighbors_expired));
    f.counter("dscpgw_neighbor_probes_rate_limited_total",
              "Probes not sent this second because the port had sent its 50.", d(r.probes_limited));
    f.counter("dscpgw_neighbor_removed_total",
              "Learned LAN hosts removed after a minute in the failed state.",
              d(r.neighbors_removed));
    f.counter("dscpgw_neighbor_evicted_total",
              "Unresolved learned LAN hosts evicted (least recently used) to make room for "
              "another on a port at its cap.",
              d(r.neighbors_evicted));
    f.counter("dscpgw_neighbor_refused_total",
              "LAN hosts not learned because their port was at its cap with every host resolved.",
              d(r.neighbors_refused));

    std::vector<std::pair<std::string, const WorkerReport*>> ws;
    for (size_t w = 0; w < r.workers.size(); ++w) ws.emplace_back(std::to_string(w), &r.workers[w]);
    f.list<WorkerCounter>(
        "worker", ws, [](const auto& p) { return p.first; },
        [](const auto& p) { return p.second->t; });
    f.gauge("dscpgw_tsc_hertz", "TSC frequency: cycles per second of the worker counters.",
            d(r.tsc_hz));
    f.gauge("dscpgw_mempool_mbufs_in_use", "Packet buffers in use (all pools).", d(r.mbufs_in_use));
    f.gauge("dscpgw_mempool_mbufs", "Packet buffers in the pools.", d(r.mbufs_total));
    f.gauge("dscpgw_flows_tracked", "RoCE conversations in the workers' flow tables.",
            d(r.flows_tracked));
    return f.take();
}

}  // namespace dscpgw

namespace dscpgw {

namespace {

// Markdown table cells hold no pipes.
std::string cell(const std::string& s) {
    std::string o;
    for (const char c : s) {
        if (c == '|') o.push_back('\\');
        o.push_back(c);
    }
    return o;
}

}  // namespace

std::string metrics_doc_table() {
    // One of everything, so that every family has a sample and every label shows.
    Report r;
    r.ports.resize(1);
    r.ports[0].name = "lan";
    r.classes.resize(1);
    r.classes[0].name = "roce";
    r.tunnels.resize(1);
    r.tunnels[0].name = "t";
    r.policers.resize(1);
    r.policers[0].name = "p";
    r.workers.resize(1);
    r.queues.resize(1);
    r.queues[0].port = "wan";
    r.queues[0].name = "cnp";
    r.neighbors.push_back({"198.18.0.254", "wan", "", "incomplete", false});
    const std::set<std::string> item_labels = {"port",    "class", "tunnel",  "worker", "address",
                                               "version", "dpdk",  "policer", "queue"};
    std::string o = "| metric | type | labels | meaning |\n|---|---|---|---|\n";
    for (const MetricFamily& f : metric_families(r)) {
        std::vector<std::pair<std::string, std::vector<std::string>>> labels;
        for (const auto& m : f.metric)
            for (const auto& l : m.label) {
                auto it = std::find_if(labels.begin(), labels.end(),
                                       [&](const auto& x) { return x.first == l.name; });
                if (it == labels.end()) it = labels.insert(labels.end(), {l.name, {}});
                if (std::find(it->second.begin(), it->second.end(), l.value) == it->second.end())
                    it->second.push_back(l.value);
            }
        std::string ls;
        for (const auto& [name, values] : labels) {
            ls += (ls.empty() ? "`" : ", `") + name + "`";
            if (item_labels.count(name) != 0) continue;
            if (values.size() > 6) {
                ls += " (below)";
                continue;
            }
            for (size_t i = 0; i < values.size(); ++i)
                ls += (i == 0 ? " = `" : " / `") + values[i] + "`";
        }
        // A help that lists its label's values (name = meaning; ...) is shown up to the list.
        std::string help = f.help;
        if (help.find(" = ") != std::string::npos) help = help.substr(0, help.find(": ")) + ".";
        o += "| `" + f.name + "` | " +
             (f.type == prometheus::MetricType::Counter ? "counter" : "gauge") + " | " + ls +
             " | " + cell(help) + " |\n";
    }
    return o;
}

std::string drop_reasons_doc_table() {
    std::string o = "| reason | meaning |\n|---|---|\n";
    for (size_t i = 1; i < kDropReasonCount; ++i)
        o += "| `" + std::string(kDropReasonInfo[i].name) + "` | " +
             cell(std::string(kDropReasonInfo[i].help)) + " |\n";
    return o;
}

std::string regenerate_docs(const std::string& text) {
    static const std::string begin = "<!-- generated: ", end = "<!-- end generated -->";
    std::string out;
    size_t pos = 0;
    for (size_t b; (b = text.find(begin, pos)) != std::string::npos;) {
        const size_t name_end = text.find(' ', b + begin.size());
        const size_t head_end = text.find('\n', b);
        const size_t e = text.find(end, head_end);
        if (name_end == std::string::npos || head_end == std::string::npos ||
            e == std::string::npos)
            break;
        const std::string name = text.substr(b + begin.size(), name_end - b - begin.size());
        out += text.substr(pos, head_end + 1 - pos);
        if (name == "metrics")
            out += metrics_doc_table();
        else if (name == "drop-reasons")
            out += drop_reasons_doc_table();
        else
            out += text.substr(head_end + 1, e - head_end - 1);  // Unknown: kept as it is.
        pos = e;
    }
    return out + text.substr(pos);
}

}  // namespace dscpgw
