// The control thread of `dscpgw run` (the EAL-free parts are in control/): owns the running config
// and snapshot, reloads (control socket, SIGHUP), neighbor probing, flow sampling, and serves the
// control socket, the Prometheus endpoint and DPDK telemetry. Workers never wait on it; it waits on
// them only in rte_rcu_qsbr_synchronize() after publishing a snapshot, which takes one poll of each
// worker.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config/config.h"
#include "control/commands.h"
#include "control/flows.h"
#include "control/neighbors.h"
#include "control/report.h"
#include "control/sdnotify.h"
#include "control/socket.h"
#include "dataplane/flow_table.h"
#include "dataplane/stats.h"
#include "dataplane/trace.h"
#include "dataplane/worker.h"

struct rte_mempool;
struct rte_rcu_qsbr;
struct rte_tel_data;

class CivetServer;

namespace dscpgw {

class MetricsHandler;
class NeighborTable;

struct ControlSetup {
    Config cfg;  // As loaded and adjusted by port setup (tx_udp_cksum_offload).
    std::unique_ptr<Snapshot> snap;
    std::vector<std::array<uint8_t, 6>> macs;
    std::vector<uint16_t> eth_port;
    std::vector<unsigned> worker_lcores;         // Lcore of each worker.
    std::vector<std::vector<RxPoll>> worker_rx;  // The RX queues each worker polls.
    std::vector<rte_mempool*> pools;
    uint32_t max_frame = 0;  // Largest frame an mbuf holds: bounds a live MTU change.
    NeighborTable* neighbors = nullptr;
    NeighborControl nctl;
};

class ControlPlane {
  public:
    // Starts the control socket, the Prometheus endpoint and telemetry; throws std::runtime_error
    // with a message for the operator when one cannot start.
    explicit ControlPlane(ControlSetup setup);
    ~ControlPlane();

    // What workers read: the published snapshot and the RCU variable guarding its replacement.
    const std::atomic<const Snapshot*>* published() const { return &published_; }
    rte_rcu_qsbr* rcu() const { return rcu_; }
    WorkerStats* stats(unsigned w) { return stats_[w].get(); }
    FlowTable* flows(unsigned w) { return flows_.empty() ? nullptr : flows_[w].get(); }
    size_t workers() const { return stats_.size(); }
    TraceShared* trace() { return &trace_; }

    // One round of the control loop: serves the socket for up to `wait_ms`, then periodic work.
    void run_once(int wait_ms);
    // Reload from the config file; returns true when the new config is live. `msg` says what
    // happened (errors: the file:line:column list or the restart reasons); it is also logged,
    // after `origin` ("SIGHUP: " or nothing).
    bool reload(std::string& msg, const std::string& origin = "");

    // Everything the control plane knows, as ctl, Prometheus, telemetry and the exit summary
    // render it (flows excepted).
    Report report();

    // systemd: STOPPING=1 (the workers are told to stop). No-op when not under systemd.
    void notify_stopping() const;

    // Telemetry callbacks (rte_telemetry has no user pointer: they find the one instance).
    static int telemetry(const char* cmd, const char* params, rte_tel_data* d);

  private:
    // Caller holds mu_. Flows: only `ctl flows` lists them. `scrape`: a Prometheus scrape (the
    // queues' largest depths restart).
    Report gather(bool with_flows, bool scrape = false);
    std::string handle(const std::string& request, bool& ok);
    bool reload_locked(std::string& msg);
    // Sets the devices to `next`'s port MTUs; on failure restores those already changed.
    bool apply_mtus(const Config& next, std::string& err);
    void periodic();
    // `ctl trace`: arm (after the workers left any burst of an earlier trace), read, disarm.
    std::string handle_trace(const CtlRequest& req, bool& ok);
    // systemd (Type=notify): READY=1 once every worker polls, WATCHDOG=1 while every worker
    // keeps polling, STATUS= with the ports and rates every few seconds.
    void notify_systemd(uint64_t now, uint64_t hz);
    std::string status_line(uint64_t now, uint64_t hz);

    mutable std::mutex mu_;  // Control thread, exposer threads, telemetry thread.
    ControlSetup setup_;
    std::atomic<const Snapshot*> published_{nullptr};
    rte_rcu_qsbr* rcu_ = nullptr;
    std::vector<std::unique_ptr<WorkerStats>> stats_;
    std::vector<WorkerStats*> stats_ptrs_;  // The same, as the counter code takes them.
    std::vector<std::unique_ptr<FlowTable>> flows_;
    NamedTotals totals_;
    FlowAggregator agg_;
    double start_time_ = 0, last_reload_time_ = 0, last_reload_seconds_ = 0;
    bool last_reload_ok_ = true;
    std::string last_reload_error_;
    uint64_t reloads_ok_ = 0, reloads_failed_ = 0;
    uint64_t last_tick_tsc_ = 0, last_flow_tsc_ = 0;
    std::map<std::string, std::pair<uint64_t, uint64_t>> cnp_prev_;  // Tunnel -> (encap, decap).
    std::map<std::string, std::pair<double, double>> cnp_rate_;
    std::map<std::string, uint32_t> path_mtu_seen_;  // Per tunnel name: the path MTU last logged.
    std::vector<int> link_state_;
    TraceShared trace_;
    uint32_t trace_session_ = 0;
    uint64_t trace_read_tsc_ = 0;  // The last start or read: an abandoned trace is disarmed.
    SystemdNotifier sd_;
    std::unique_ptr<WorkerWatch> watch_;
    bool sd_ready_ = false, sd_stalled_ = false;
    uint64_t sd_watchdog_tsc_ = 0, sd_status_tsc_ = 0, sd_progress_tsc_ = 0;
    uint64_t sd_rx_ = 0, sd_tx_ = 0;  // Ports' packets at the last STATUS.
    std::unique_ptr<ControlServer> server_;
    std::unique_ptr<MetricsHandler> metrics_handler_;
    std::unique_ptr<CivetServer> http_;  // The Prometheus endpoint ([metrics] listen).
};

}  // namespace dscpgw
