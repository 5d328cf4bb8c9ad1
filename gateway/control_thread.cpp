#include "gateway/control_thread.h"

#include <CivetServer.h>
#include <prometheus/text_serializer.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mempool.h>
#include <rte_rcu_qsbr.h>
#include <rte_telemetry.h>
#include <rte_version.h>

#include <chrono>
#include <stdexcept>

#include "control/log.h"
#include "control/metrics.h"
#include "control/render.h"
#include "control/telemetry.h"
#include "control/trace.h"
#include "dataplane/local.h"
#include "dataplane/neighbor.h"
#include "dataplane/qos.h"
#include "dataplane/sched.h"

#ifndef DSCPGW_VERSION
#define DSCPGW_VERSION "unknown"
#endif

namespace dscpgw {

namespace {

std::mutex g_instance_mu;  // Guards g_instance against the telemetry thread.
ControlPlane* g_instance = nullptr;

double unix_now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// civetweb's listening_ports: "ADDR:PORT", "[V6]:PORT", or "+PORT" for every IPv4 and IPv6
// address.
std::string civet_port(const std::string& listen) {
    if (listen.rfind("*:", 0) == 0) return "+" + listen.substr(2);
    if (listen.rfind(":", 0) == 0) return "+" + listen.substr(1);
    return listen;
}

// The endpoint serves several scrapers at once, and a client that connects and stalls holds one
// of its threads for at most the request timeout, never the endpoint.
constexpr const char* kMetricsThreads = "8";
constexpr const char* kMetricsRequestTimeoutMs = "5000";

}  // namespace

// GET /metrics: the gateway's families in Prometheus' text format, and nothing else (a
// prometheus-cpp Exposer would add its own unprefixed exposer_* families to every scrape).
class MetricsHandler : public CivetHandler {
  public:
    explicit MetricsHandler(std::function<std::vector<prometheus::MetricFamily>()> f)
        : f_(std::move(f)) {}
    bool handleGet(CivetServer*, mg_connection* conn) override {
        const std::string body = prometheus::TextSerializer().Serialize(f_());
        mg_printf(conn,
                  "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                  "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                  body.size());
        mg_write(conn, body.data(), body.size());
        return true;
    }

  private:
    std::function<std::vector<prometheus::MetricFamily>()> f_;
};

namespace {

void log_line(Log t, const std::string& s, uint32_t level = RTE_LOG_INFO) {
    log_msg(t, level, "%s", s.c_str());
}

}  // namespace

ControlPlane::ControlPlane(ControlSetup setup) : setup_(std::move(setup)) {
    const size_t workers = std::max<size_t>(setup_.worker_lcores.size(), 1);
    for (size_t w = 0; w < workers; ++w) {
        stats_.push_back(std::make_unique<WorkerStats>());
        stats_ptrs_.push_back(stats_.back().get());
        if (setup_.cfg.flow_entries != 0)
            flows_.push_back(std::make_unique<FlowTable>(
                setup_.cfg.flow_entries, stats_.back()->worker[WorkerCounter::flow_evictions]));
    }
    published_.store(setup_.snap.get(), std::memory_order_release);
    start_time_ = last_reload_time_ = unix_now();
    link_state_.assign(setup_.eth_port.size(), -1);

    server_ = std::make_unique<ControlServer>(setup_.cfg.control_socket);
    if (!setup_.cfg.metrics_listen.empty()) {
        metrics_handler_ = std::make_unique<MetricsHandler>([this] {
            std::lock_guard<std::mutex> g(mu_);
            return metric_families(gather(false, true));
        });
        try {
            http_ = std::make_unique<CivetServer>(std::vector<std::string>{
                "listening_ports", civet_port(setup_.cfg.metrics_listen), "num_threads",
                kMetricsThreads, "request_timeout_ms", kMetricsRequestTimeoutMs});
        } catch (const std::exception& e) {
            throw std::runtime_error("[metrics] listen = \"" + setup_.cfg.metrics_listen +
                                     "\": cannot listen there: " + e.what());
        }
        http_->addHandler("/metrics", metrics_handler_.get());
        log_line(Log::control, "metrics: http://" + setup_.cfg.metrics_listen + "/metrics");
    }
    // Last of what can fail: a throw above leaves nothing behind (members clean up themselves).
    const size_t sz = rte_rcu_qsbr_get_memsize(static_cast<uint32_t>(workers));
    rcu_ = static_cast<rte_rcu_qsbr*>(rte_zmalloc("dscpgw_rcu", sz, RTE_CACHE_LINE_SIZE));
    if (rcu_ == nullptr || rte_rcu_qsbr_init(rcu_, static_cast<uint32_t>(workers)) != 0) {
        rte_free(rcu_);
        throw std::runtime_error("cannot allocate the RCU state: " +
                                 std::string(rte_strerror(rte_errno)));
    }
    watch_ = std::make_unique<WorkerWatch>(rcu_, static_cast<unsigned>(workers));
    {
        std::lock_guard<std::mutex> g(g_instance_mu);
        g_instance = this;
    }
    static bool registered = false;  // rte_telemetry cannot unregister; once per process.
    if (!registered) {
        registered = true;
        for (const TelemetryCommand& c : kTelemetryCommands)
            rte_telemetry_register_cmd(std::string(c.path).c_str(), telemetry,
                                       std::string(c.help).c_str());
    }
    log_line(Log::control, "control socket " + server_->path());
}

ControlPlane::~ControlPlane() {
    {
        std::lock_guard<std::mutex> g(g_instance_mu);
        g_instance = nullptr;
    }
    http_.reset();  // Stops the HTTP threads before what they read goes.
    metrics_handler_.reset();
    server_.reset();
    rte_free(rcu_);
}

Report ControlPlane::gather(bool with_flows, bool scrape) {
    const Snapshot& s = *setup_.snap;
    const std::vector<const WorkerStats*> ws(stats_ptrs_.begin(), stats_ptrs_.end());
    Report r;
    r.version = DSCPGW_VERSION;
    r.dpdk_version = rte_version();
    if (r.dpdk_version.rfind("DPDK ", 0) == 0) r.dpdk_version.erase(0, 5);
    r.config_path = setup_.cfg.path;
    r.start_time = start_time_;
    r.now = unix_now();
    r.last_reload_time = last_reload_time_;
    r.last_reload_ok = last_reload_ok_;
    r.last_reload_error = last_reload_error_;
    r.last_reload_seconds = last_reload_seconds_;
    r.reloads_ok = reloads_ok_;
    r.reloads_failed = reloads_failed_;
    r.tsc_hz = rte_get_tsc_hz();
    fill_counters(r, s, totals_, ws, scrape);
    for (size_t i = 0; i < setup_.eth_port.size(); ++i) {
        PortReport& p = r.ports[i];
        rte_eth_stats es{};
        if (rte_eth_stats_get(setup_.eth_port[i], &es) == 0) {
#define DSCPGW_X(field, metric, label, unit, column, help, member) \
    p.dev[DeviceCounter::field] = es.member;
            DSCPGW_DEVICE_COUNTERS(DSCPGW_X)
#undef DSCPGW_X
        }
        rte_eth_link link{};
        if (rte_eth_link_get_nowait(setup_.eth_port[i], &link) == 0) {
            p.link_up = link.link_status ? 1 : 0;
            p.speed_mbps = link.link_status ? link.link_speed : 0;
        }
    }
    for (size_t w = 0; w < r.workers.size(); ++w) {
        r.workers[w].lcore = w < setup_.worker_lcores.size() ? setup_.worker_lcores[w] : 0;
        if (w < setup_.worker_rx.size())
            for (const RxPoll& q : setup_.worker_rx[w])
                r.workers[w].rx.emplace_back(setup_.cfg.ports[q.port].name, q.queue);
    }
    for (size_t t = 0; t < s.tunnels.size(); ++t) {
        TunnelReport& tr = r.tunnels[t];
        const TunnelConf& tc = s.tunnels[t];
        if (tc.neighbor >= 0) {
            const Neighbor& n = setup_.neighbors->at(static_cast<size_t>(tc.neighbor));
            tr.next_hop = format_ip(n.family, n.addr.data());
            tr.next_hop_resolved = (n.mac.load(std::memory_order_relaxed) & kNeighborValid) ? 1 : 0;
        }
        if (auto it = cnp_rate_.find(tr.name); it != cnp_rate_.end()) {
            tr.cnp_encap_rate = it->second.first;
            tr.cnp_decap_rate = it->second.second;
        }
    }
    r.neighbors = neighbor_reports(*setup_.neighbors, s);
    r.probes_sent = setup_.nctl.probes_sent;
    r.probes_failed = setup_.nctl.probes_failed;
    r.neighbors_expired = setup_.nctl.expired;
    r.probes_limited = setup_.nctl.probes_limited;
    r.neighbors_removed = setup_.nctl.removed;
    r.neighbors_evicted = setup_.neighbors->evictions();
    r.neighbors_refused = setup_.neighbors->refused();
    for (rte_mempool* mp : setup_.pools) {
        r.mbufs_in_use += rte_mempool_in_use_count(mp);
        r.mbufs_total += mp->size;
    }
    r.flow_slots = flows_.empty() ? 0 : flows_[0]->size();
    r.flows_tracked = agg_.size();
    if (with_flows) r.flows = agg_.report(s);
    return r;
}

bool ControlPlane::reload(std::string& msg, const std::string& origin) {
    bool ok;
    if (sd_ready_) sd_.send("RELOADING=1");
    {
        std::lock_guard<std::mutex> g(mu_);
        ok = reload_locked(msg);
    }
    if (sd_ready_) {
        const uint64_t now = rte_rdtsc();
        sd_.send("READY=1\nSTATUS=" + status_line(now, rte_get_tsc_hz()));
    }
    // A refused reload's message ends with the problems; an accepted one's with its warnings.
    log_line(Log::reload,
             origin + (msg.empty() || msg.back() != '\n' ? msg : msg.substr(0, msg.size() - 1)),
             ok ? RTE_LOG_INFO : RTE_LOG_WARNING);
    return ok;
}

bool ControlPlane::reload_locked(std::string& msg) {
    last_reload_time_ = unix_now();
    const auto t0 = std::chrono::steady_clock::now();
    const auto took = [&] {
        last_reload_seconds_ =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    const auto fail = [&](const std::string& why) {
        took();
        last_reload_ok_ = false;
        last_reload_error_ = why;
        ++reloads_failed_;
        msg = "reload refused, the running configuration (generation " +
              std::to_string(setup_.snap->generation) + ") is unchanged:\n" + why;
        return false;
    };
    Config next;
    try {
        next = load_config(setup_.cfg.path);
    } catch (const ConfigError& e) {
        return fail(e.what());
    }
    const std::vector<std::string> why = restart_reasons(setup_.cfg, next);
    if (!why.empty()) {
        std::string all = "these changes need a restart of the gateway (dscpgw run):";
        for (const auto& w : why) all += "\n  " + w;
        return fail(all);
    }
    for (size_t i = 0; i < next.ports.size(); ++i)
        next.ports[i].tx_udp_cksum_offload = setup_.cfg.ports[i].tx_udp_cksum_offload;
    // Compiling touches nothing live; what the snapshot needs besides itself is staged in `build`.
    SnapshotBuild build;
    try {
        build = compile_snapshot(next, setup_.macs, *setup_.neighbors);
    } catch (const std::exception& e) {
        return fail(e.what());
    }
    // The last step that may refuse, as it touches the devices: a port MTU change (rolled back
    // on failure; the snapshot's MTU checks follow it).
    if (std::string err; !apply_mtus(next, err)) return fail(err);
    // Accepted: from here nothing fails. The staged neighbors go live before the snapshot that
    // points at them.
    std::unique_ptr<Snapshot> snap = std::move(build.snap);
    build.neighbors.apply(*setup_.neighbors, *snap);
    snap->bank = static_cast<uint8_t>(setup_.snap->bank ^ 1);
    snap->generation = setup_.snap->generation + 1;
    carry_path_mtus(*setup_.snap, *snap);
    carry_meters(*setup_.snap, *snap);
    carry_scheds(*setup_.snap, *snap);
    // Publish, then wait until every worker has finished the poll it may have begun under the
    // old snapshot; only then is the old one (and its counter bank) no longer in use.
    published_.store(snap.get(), std::memory_order_release);
    // rte_rcu_qsbr_synchronize() spelled out with the header's inline start/check, so that the
    // wait's acquire loads are compiled here, where ThreadSanitizer sees them (DPDK's libraries
    // are not instrumented, and an unseen wait reads as a race on everything freed after it).
    rte_rcu_qsbr_check(rcu_, rte_rcu_qsbr_start(rcu_), true);
    // Packets queued in a scheduler the new policy replaced go on in the new one.
    migrate_backlogs(*setup_.snap, *snap);
    totals_.fold(*setup_.snap, stats_ptrs_);
    std::swap(setup_.snap, snap);
    if (next.log_level != setup_.cfg.log_level) {
        rte_log_set_level_pattern("dscpgw.*", log_level_parse(next.log_level));
        log_line(Log::control,
                 "[gateway] log_level " + setup_.cfg.log_level + " -> " + next.log_level,
                 RTE_LOG_NOTICE);
    }
    setup_.cfg = std::move(next);
    snap.reset();  // The retired snapshot: its tables are freed here, off the fast path.
    took();
    last_reload_ok_ = true;
    last_reload_error_.clear();
    ++reloads_ok_;
    const Snapshot& s = *setup_.snap;
    msg = "reloaded " + setup_.cfg.path + ": generation " + std::to_string(s.generation) + ", " +
          std::to_string(s.classes.size()) + " classes, " + std::to_string(s.tunnels.size()) +
          " tunnels, live in " + std::to_string(static_cast<int>(last_reload_seconds_ * 1e6)) +
          " us\n";
    for (const std::string& w : setup_.cfg.warnings) msg += w + "\n";
    return true;
}

bool ControlPlane::apply_mtus(const Config& next, std::string& err) {
    std::vector<size_t> changed;
    for (size_t i = 0; i < next.ports.size(); ++i) {
        const PortConf &cur = setup_.cfg.ports[i], &nx = next.ports[i];
        if (cur.mtu == nx.mtu) continue;
        const uint32_t frame = nx.mtu + 14 + 8 + 4;  // Ethernet, two VLAN tags, FCS.
        int rc = 0;
        if (frame > setup_.max_frame) {
            err = "ports[" + std::to_string(i) + "] (" + nx.name + "): mtu " +
                  std::to_string(nx.mtu) + " needs " + std::to_string(frame) +
                  "-byte buffers; they were sized for " + std::to_string(setup_.max_frame) +
                  " bytes at start: restart the gateway (dscpgw run) for a larger MTU";
        } else if ((rc = rte_eth_dev_set_mtu(setup_.eth_port[i], static_cast<uint16_t>(nx.mtu))) !=
                       0 &&
                   rc != -ENOTSUP) {
            err = "ports[" + std::to_string(i) + "] (" + nx.name + "): the device refused mtu " +
                  std::to_string(nx.mtu) + ": " + rte_strerror(-rc);
        } else {
            changed.push_back(i);
            continue;
        }
        for (size_t j : changed)
            rte_eth_dev_set_mtu(setup_.eth_port[j], static_cast<uint16_t>(setup_.cfg.ports[j].mtu));
        return false;
    }
    for (size_t i : changed)
        log_line(Log::port, "port " + next.ports[i].name + ": mtu " +
                                std::to_string(setup_.cfg.ports[i].mtu) + " -> " +
                                std::to_string(next.ports[i].mtu));
    return true;
}

std::string ControlPlane::handle(const std::string& request, bool& ok) {
    CtlRequest req;
    std::string err;
    if (!parse_ctl_request(request, req, err)) {
        ok = false;
        return err;
    }
    if (req.cmd == CtlCommand::log_level) {
        if (req.log_type.empty()) {
            ok = true;
            return log_levels(req.all);
        }
        std::string msg;
        ok = log_set_level(req.log_type, req.log_level, msg);
        if (ok)
            log_line(Log::control, "ctl log-level: " + msg.substr(0, msg.size() - 1),
                     RTE_LOG_NOTICE);
        return msg;
    }
    if (req.cmd == CtlCommand::trace) return handle_trace(req, ok);
    if (req.cmd == CtlCommand::reload) {
        std::string msg;
        ok = reload(msg);
        return msg + (ok ? "" : "\n");
    }
    std::lock_guard<std::mutex> g(mu_);
    return render(gather(req.cmd == CtlCommand::flows), req);
}

void ControlPlane::periodic() {
    const uint64_t now = rte_rdtsc(), hz = rte_get_tsc_hz();
    {
        std::lock_guard<std::mutex> g(mu_);
        maintain_neighbors(*setup_.neighbors, *setup_.snap, setup_.nctl, now, hz);
        if (now - last_flow_tsc_ >= hz) {
            const double dt = last_flow_tsc_ == 0 ? 0
                                                  : static_cast<double>(now - last_flow_tsc_) /
                                                        static_cast<double>(hz);
            last_flow_tsc_ = now;
            std::vector<const FlowTable*> tables;
            for (auto& f : flows_) tables.push_back(f.get());
            agg_.sample(tables, now, hz);
            // CNPs per second per tunnel, from the exact per-name counters.
            const auto tt = totals_.tunnels(*setup_.snap, {stats_ptrs_.begin(), stats_ptrs_.end()});
            for (size_t t = 0; t < tt.size(); ++t) {
                const std::string& name = setup_.snap->tunnels[t].name;
                auto& prev = cnp_prev_[name];
                const std::pair<uint64_t, uint64_t> cur{tt[t][TunnelCounter::cnp_encap],
                                                        tt[t][TunnelCounter::cnp_decap]};
                if (dt > 0)
                    cnp_rate_[name] = {static_cast<double>(cur.first - prev.first) / dt,
                                       static_cast<double>(cur.second - prev.second) / dt};
                prev = cur;
            }
        }
    }
    if (now - last_tick_tsc_ >= hz) {
        last_tick_tsc_ = now;
        {
            std::lock_guard<std::mutex> g(mu_);
            age_path_mtus(*setup_.snap, now, hz);
            // Path MTU changes are rare and matter to whoever reads the log of a slow transfer.
            for (const TunnelConf& t : setup_.snap->tunnels) {
                const uint32_t mtu = t.path->mtu.load(std::memory_order_relaxed);
                uint32_t& seen = path_mtu_seen_[t.name];
                if (seen == 0) seen = t.outer_mtu;
                if (mtu == seen) continue;
                char buf[200];
                std::snprintf(buf, sizeof buf,
                              mtu < seen ? "tunnel %s: path MTU %u (was %u): ICMP from the underlay"
                                         : "tunnel %s: path MTU back to %u (was %u)",
                              t.name.c_str(), mtu, seen);
                log_line(Log::tunnel, buf, RTE_LOG_NOTICE);
                seen = mtu;
            }
        }
        for (size_t i = 0; i < setup_.eth_port.size(); ++i) {
            rte_eth_link link{};
            if (rte_eth_link_get_nowait(setup_.eth_port[i], &link) != 0) continue;
            const int up = link.link_status;
            if (up == link_state_[i]) continue;
            link_state_[i] = up;
            const PortConf& pc = setup_.cfg.ports[i];
            char buf[160];
            if (up)
                std::snprintf(buf, sizeof buf, "port %s: link up, %u Mbps, %s duplex",
                              pc.name.c_str(), link.link_speed, link.link_duplex ? "full" : "half");
            else
                std::snprintf(buf, sizeof buf, "port %s: link down", pc.name.c_str());
            log_line(Log::port, buf, up ? RTE_LOG_INFO : RTE_LOG_WARNING);
        }
    }
    // A trace nobody has read for 30 s: its client is gone.
    if (trace_.armed.load(std::memory_order_relaxed) != 0 && now - trace_read_tsc_ >= 30 * hz) {
        trace_.armed.store(0, std::memory_order_release);
        log_line(Log::control, "trace: not read for 30 s, stopped", RTE_LOG_NOTICE);
    }
    notify_systemd(now, hz);
}

std::string ControlPlane::handle_trace(const CtlRequest& req, bool& ok) {
    using Op = CtlRequest::TraceOp;
    std::vector<std::string> ports;
    for (const PortConf& p : setup_.cfg.ports) ports.push_back(p.name);
    // Armed, or a claimed slot still being filled (the worker that took the last one disarms
    // before it writes it): ctl keeps reading.
    const auto state = [this](uint32_t recorded) {
        const uint32_t claimed =
            std::min(trace_.next.load(std::memory_order_relaxed), trace_.count);
        const bool running =
            trace_.armed.load(std::memory_order_relaxed) != 0 || recorded < claimed;
        return "STATE recorded=" + std::to_string(recorded) +
               " count=" + std::to_string(trace_.count) + " armed=" + (running ? "1" : "0") + "\n";
    };
    ok = true;
    switch (req.trace_op) {
        case Op::none:
            ok = false;
            return "trace is run by dscpgw ctl trace (the socket takes trace --start, --read N, "
                   "--stop)\n";
        case Op::start: {
            const int32_t port =
                req.trace_port.empty() ? -1 : setup_.cfg.port_index(req.trace_port);
            if (!req.trace_port.empty()) {
                if (port < 0) {
                    ok = false;
                    std::string names;
                    for (const std::string& p : ports) names += (names.empty() ? "" : ", ") + p;
                    return "no port \"" + req.trace_port + "\" (ports: " + names + ")\n";
                }
            }
            if (!req.trace_class.empty()) {
                bool found = false;
                std::string names;
                for (const auto& c : setup_.snap->classes) {
                    found = found || c.name == req.trace_class;
                    names += (names.empty() ? "" : ", ") + c.name;
                }
                if (!found) {
                    ok = false;
                    return "no class \"" + req.trace_class + "\" (classes: " + names + ")\n";
                }
            }
            // A trace already running is replaced: once every worker has left the bursts that
            // saw it armed (one poll each), its slots can be reset.
            trace_.armed.store(0, std::memory_order_release);
            rte_rcu_qsbr_check(rcu_, rte_rcu_qsbr_start(rcu_), true);
            for (uint32_t i = 0; i < kTraceMax; ++i)
                trace_.rec[i].ready.store(0, std::memory_order_relaxed);
            trace_.next.store(0, std::memory_order_relaxed);
            trace_.port = port;
            trace_.any_class = req.trace_class.empty();
            trace_name(trace_.cls, req.trace_class);
            trace_.count = req.trace_count;
            trace_read_tsc_ = rte_rdtsc();
            trace_.armed.store(++trace_session_ == 0 ? ++trace_session_ : trace_session_,
                               std::memory_order_release);
            log_line(Log::control,
                     "trace: " + std::to_string(req.trace_count) + " packet(s)" +
                         (port >= 0 ? " from " + req.trace_port : "") +
                         (req.trace_class.empty() ? "" : " of class " + req.trace_class));
            return state(0);
        }
        case Op::read: {
            trace_read_tsc_ = rte_rdtsc();
            uint32_t recorded = 0;
            while (recorded < trace_.count &&
                   trace_.rec[recorded].ready.load(std::memory_order_acquire) != 0)
                ++recorded;
            std::string body;
            const uint32_t from = std::min(req.trace_from, recorded);
            if (req.json) {
                body = "{\"count\":" + std::to_string(trace_.count) +
                       ",\"recorded\":" + std::to_string(recorded) + ",\"records\":[";
                for (uint32_t i = from; i < recorded; ++i)
                    body += (i == from ? "" : ",") + trace_record_json(i + 1, trace_.rec[i], ports);
                body += "]}\n";
            } else {
                for (uint32_t i = from; i < recorded; ++i)
                    body += trace_record_text(i + 1, trace_.rec[i], ports);
            }
            return state(recorded) + body;
        }
        case Op::stop:
            trace_.armed.store(0, std::memory_order_release);
            return "STATE recorded=0 count=" + std::to_string(trace_.count) + " armed=0\n";
    }
    return "";
}

std::string ControlPlane::status_line(uint64_t now, uint64_t hz) {
    uint64_t rx = 0, tx = 0;
    unsigned up = 0;
    for (size_t i = 0; i < setup_.eth_port.size(); ++i) {
        rte_eth_stats st{};
        if (rte_eth_stats_get(setup_.eth_port[i], &st) == 0) {
            rx += st.ipackets;
            tx += st.opackets;
        }
        up += i < link_state_.size() && link_state_[i] > 0 ? 1 : 0;
    }
    const double dt = sd_status_tsc_ == 0
                          ? 0
                          : static_cast<double>(now - sd_status_tsc_) / static_cast<double>(hz);
    char buf[200];
    if (dt > 0)
        std::snprintf(buf, sizeof buf,
                      "generation %llu; %u/%zu ports up; %zu workers polling; rx %.0f pps, tx %.0f "
                      "pps",
                      static_cast<unsigned long long>(setup_.snap->generation), up,
                      setup_.eth_port.size(), stats_.size(), static_cast<double>(rx - sd_rx_) / dt,
                      static_cast<double>(tx - sd_tx_) / dt);
    else
        std::snprintf(buf, sizeof buf, "generation %llu; %u/%zu ports up; %zu workers polling",
                      static_cast<unsigned long long>(setup_.snap->generation), up,
                      setup_.eth_port.size(), stats_.size());
    sd_rx_ = rx;
    sd_tx_ = tx;
    sd_status_tsc_ = now;
    return buf;
}

void ControlPlane::notify_systemd(uint64_t now, uint64_t hz) {
    if (!sd_.enabled()) return;
    if (!sd_ready_) {
        if (!watch_->ready()) return;
        sd_ready_ = true;
        sd_watchdog_tsc_ = sd_progress_tsc_ = now;
        sd_.send("READY=1\nSTATUS=" + status_line(now, hz));
        log_line(Log::gateway, "ready: every worker polling (systemd notified)");
        return;
    }
    const uint64_t wd = sd_.watchdog_usec();
    // Fed at half the interval, only when every worker passed a quiescent state since the last
    // time: a worker stuck in a loop or blocked stops it, and systemd restarts the gateway.
    if (wd != 0 && static_cast<double>(now - sd_watchdog_tsc_) >=
                       static_cast<double>(wd) * 1e-6 * static_cast<double>(hz) / 2) {
        sd_watchdog_tsc_ = now;
        if (watch_->progressed()) {
            sd_.send("WATCHDOG=1");
            sd_progress_tsc_ = now;
            if (sd_stalled_) log_line(Log::gateway, "every worker polls again", RTE_LOG_NOTICE);
            sd_stalled_ = false;
        } else if (!sd_stalled_) {
            sd_stalled_ = true;
            char buf[160];
            std::snprintf(
                buf, sizeof buf,
                "a worker has not polled for %.0f ms: the systemd watchdog is not fed",
                static_cast<double>(now - sd_progress_tsc_) * 1e3 / static_cast<double>(hz));
            log_line(Log::gateway, buf, RTE_LOG_WARNING);
        }
    }
    if (now - sd_status_tsc_ >= 2 * hz) sd_.send("STATUS=" + status_line(now, hz));
}

void ControlPlane::notify_stopping() const {
    if (sd_ready_) sd_.send("STOPPING=1\nSTATUS=stopping");
}

void ControlPlane::run_once(int wait_ms) {
    server_->serve(wait_ms, [this](const std::string& req, bool& ok) { return handle(req, ok); });
    periodic();
}

Report ControlPlane::report() {
    std::lock_guard<std::mutex> g(mu_);
    return gather(false);
}

int ControlPlane::telemetry(const char* cmd, const char*, rte_tel_data* d) {
    std::lock_guard<std::mutex> gi(g_instance_mu);
    ControlPlane* cp = g_instance;
    if (cp == nullptr) return -EAGAIN;
    std::lock_guard<std::mutex> g(cp->mu_);
    render_telemetry(cp->gather(false), cmd, d);
    return 0;
}

}  // namespace dscpgw
