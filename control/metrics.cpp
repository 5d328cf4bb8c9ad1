#include "control/metrics.h"

namespace dscpgw {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

class Families {
  public:
    MetricFamily& family(const char* name, const char* help, MetricType type) {
        out_.push_back(MetricFamily{name, help, type, {}});
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
    std::vector<MetricFamily> take() { return std::move(out_); }

  private:
    std::vector<MetricFamily> out_;
};

double d(uint64_t v) { return static_cast<double>(v); }

}  // namespace

std::vector<MetricFamily> metric_families(const Report& r) {
    Families f;
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
    f.each("dscpgw_port_up", "Link state of the port: 1 up, 0 down.", G, r.ports, "port",
           port_name, [](const PortReport& p) { return p.link_up > 0 ? 1.0 : 0.0; });
    f.each("dscpgw_port_speed_bytes_per_second",
           "Link speed the device reports (0 while the link is down).", G, r.ports, "port",
           port_name, [](const PortReport& p) { return p.speed_mbps * 125000.0; });
    const struct {
        const char* name;
        const char* help;
        uint64_t PortReport::*field;
    } port_counters[] = {
        {"dscpgw_port_rx_packets_total", "Packets the device received (ethdev ipackets).",
         &PortReport::eth_ipackets},
        {"dscpgw_port_tx_packets_total", "Packets the device sent (ethdev opackets).",
         &PortReport::eth_opackets},
        {"dscpgw_port_rx_bytes_total", "Bytes the device received (ethdev ibytes).",
         &PortReport::eth_ibytes},
        {"dscpgw_port_tx_bytes_total", "Bytes the device sent (ethdev obytes).",
         &PortReport::eth_obytes},
        {"dscpgw_port_rx_errors_total", "Erroneous received packets (ethdev ierrors).",
         &PortReport::eth_ierrors},
        {"dscpgw_port_tx_errors_total", "Failed transmissions (ethdev oerrors).",
         &PortReport::eth_oerrors},
        {"dscpgw_port_rx_missed_total",
         "Packets the device dropped because the RX queues were full (ethdev imissed).",
         &PortReport::eth_imissed},
        {"dscpgw_port_rx_nombuf_total",
         "Receive buffer allocation failures (ethdev rx_nombuf).", &PortReport::eth_rx_nombuf},
        {"dscpgw_port_dataplane_rx_packets_total",
         "Packets the workers took from the port's RX queues.", &PortReport::rx_pkts},
        {"dscpgw_port_dataplane_tx_packets_total",
         "Packets the workers handed to the port's TX queues and the device accepted.",
         &PortReport::tx_pkts},
    };
    for (const auto& pc : port_counters)
        f.each(pc.name, pc.help, C, r.ports, "port", port_name,
               [&](const PortReport& p) { return d(p.*pc.field); });

    const auto class_name = [](const ClassReport& c) { return c.name; };
    f.each("dscpgw_class_packets_total", "Packets classified into the class (inner path).", C,
           r.classes, "class", class_name, [](const ClassReport& c) { return d(c.t[0]); });
    f.each("dscpgw_class_bytes_total", "Bytes of the packets classified into the class.", C,
           r.classes, "class", class_name, [](const ClassReport& c) { return d(c.t[1]); });
    f.counter("dscpgw_unclassified_packets_total", "IP packets on the inner path no class matched.",
              d(r.unclassified[0]));
    f.counter("dscpgw_unclassified_bytes_total", "Bytes of the IP packets no class matched.",
              d(r.unclassified[1]));

    const auto tunnel_name = [](const TunnelReport& t) { return t.name; };
    const struct {
        const char* name;
        const char* help;
        size_t field;
    } tunnel_counters[] = {
        {"dscpgw_tunnel_encap_packets_total", "Packets encapsulated into the tunnel.", kEncapPkts},
        {"dscpgw_tunnel_encap_bytes_total", "Bytes sent into the tunnel, outer headers included.",
         kEncapBytes},
        {"dscpgw_tunnel_decap_packets_total", "Packets decapsulated from the tunnel.", kDecapPkts},
        {"dscpgw_tunnel_decap_bytes_total", "Bytes of the inner frames out of the tunnel.",
         kDecapBytes},
        {"dscpgw_tunnel_outer_dscp_remarked_total",
         "Tunnel packets whose outer DSCP differs from the inner: a network in between bleached "
         "or rewrote it.",
         kOuterRemarked},
        {"dscpgw_tunnel_ecn_ce_marked_total",
         "Inner ECT packets marked CE on decapsulation because the outer header carried CE "
         "(RFC 6040).",
         kEcnCeMarked},
    };
    for (const auto& tc : tunnel_counters)
        f.each(tc.name, tc.help, C, r.tunnels, "tunnel", tunnel_name,
               [&](const TunnelReport& t) { return d(t.t[tc.field]); });
    MetricFamily& cnp = f.family(
        "dscpgw_tunnel_cnp_packets_total",
        "RoCEv2 congestion notification packets (BTH opcode 0x81) through the tunnel; direction "
        "encap: sent to the far side (congestion here), decap: received from it.",
        C);
    MetricFamily& cnp_rate = f.family(
        "dscpgw_tunnel_cnp_packets_per_second",
        "CNPs per second through the tunnel over the last second, by direction.", G);
    for (const TunnelReport& t : r.tunnels) {
        Families::add(cnp, d(t.t[kCnpEncap]), {{"direction", "encap"}, {"tunnel", t.name}});
        Families::add(cnp, d(t.t[kCnpDecap]), {{"direction", "decap"}, {"tunnel", t.name}});
        Families::add(cnp_rate, t.cnp_encap_rate, {{"direction", "encap"}, {"tunnel", t.name}});
        Families::add(cnp_rate, t.cnp_decap_rate, {{"direction", "decap"}, {"tunnel", t.name}});
    }

    f.each("dscpgw_drops_total", "Packets the dataplane dropped, by reason (docs/metrics.md).", C,
           r.drops, "reason", [](const auto& p) { return p.first; },
           [](const auto& p) { return d(p.second); });
    f.counter("dscpgw_dscp_rewrites_total", "Packets whose DSCP the gateway rewrote.",
              d(r.dscp_rewrites));
    f.counter("dscpgw_icmp_too_big_sent_total",
              "ICMP Fragmentation Needed / Packet Too Big messages sent for path MTU discovery.",
              d(r.icmp_too_big_sent));
    f.counter("dscpgw_icmp_rate_limited_total",
              "ICMP errors not sent because of [gateway] icmp_rate.", d(r.icmp_rate_limited));
    f.each("dscpgw_local_replies_total",
           "Packets for the gateway's own addresses it answered or learned from.", C,
           r.local_replies, "kind", [](const auto& p) { return p.first; },
           [](const auto& p) { return d(p.second); });
    f.counter("dscpgw_tx_failed_total",
              "Packets the dataplane sent that the port's TX queue refused (freed).",
              d(r.tx_failed));

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

    std::vector<std::pair<std::string, const WorkerReport*>> ws;
    for (size_t w = 0; w < r.workers.size(); ++w)
        ws.emplace_back(std::to_string(w), &r.workers[w]);
    const auto wname = [](const auto& p) { return p.first; };
    f.each("dscpgw_worker_busy_cycles_total",
           "TSC cycles the worker spent on polls that received packets.", C, ws, "worker", wname,
           [](const auto& p) { return d(p.second->busy_cycles); });
    f.each("dscpgw_worker_idle_cycles_total", "TSC cycles the worker spent on empty polls.", C,
           ws, "worker", wname, [](const auto& p) { return d(p.second->idle_cycles); });
    f.each("dscpgw_worker_packets_total",
           "Packets the worker received; busy cycles / packets = cycles per packet.", C, ws,
           "worker", wname, [](const auto& p) { return d(p.second->rx_pkts); });
    f.each("dscpgw_worker_polls_total", "Poll loop iterations of the worker.", C, ws, "worker",
           wname, [](const auto& p) { return d(p.second->polls); });
    f.each("dscpgw_worker_flow_evictions_total",
           "RoCE conversations the worker's flow table evicted to make room.", C, ws, "worker",
           wname, [](const auto& p) { return d(p.second->flow_evictions); });
    f.gauge("dscpgw_tsc_hertz", "TSC frequency: cycles per second of the worker counters.",
            d(r.tsc_hz));
    f.gauge("dscpgw_mempool_mbufs_in_use", "Packet buffers in use (all pools).",
            d(r.mbufs_in_use));
    f.gauge("dscpgw_mempool_mbufs", "Packet buffers in the pools.", d(r.mbufs_total));
    f.gauge("dscpgw_flows_tracked", "RoCE conversations in the workers' flow tables.",
            d(r.flows_tracked));
    return f.take();
}

}  // namespace dscpgw
