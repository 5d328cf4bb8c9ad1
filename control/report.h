// The control side's view of the gateway: counters summed over the per-worker blocks (never
// touching the workers), kept per class and tunnel *name* across reloads, and rendered as text
// tables, JSON (the control socket) and Prometheus families (control/metrics.h).
#pragma once

#include <array>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "control/device_counters.h"
#include "dataplane/snapshot.h"
#include "dataplane/stats.h"

namespace dscpgw {

using TunnelTotals = Totals<TunnelCounter>;
using ClassTotals = Totals<ClassCounter>;
using PolicerTotals = Totals<PolicerCounter>;
using QueueTotals = Totals<QueueCounter>;

// Per-name totals that survive reloads. A reload retires a snapshot's bank: once no worker can
// write it any more, fold() adds it to the totals of the names that snapshot gave its indices and
// clears it, ready for the snapshot after next. live() adds the current bank to those totals.
class NamedTotals {
  public:
    void fold(const Snapshot& retired, const std::vector<WorkerStats*>& workers);
    std::vector<ClassTotals> classes(const Snapshot& cur,
                                     const std::vector<const WorkerStats*>& ws) const;
    ClassTotals unclassified(const Snapshot& cur, const std::vector<const WorkerStats*>& ws) const;
    std::vector<TunnelTotals> tunnels(const Snapshot& cur,
                                      const std::vector<const WorkerStats*>& ws) const;
    std::vector<PolicerTotals> policers(const Snapshot& cur,
                                        const std::vector<const WorkerStats*>& ws) const;
    std::vector<QueueTotals> queues(const Snapshot& cur,
                                    const std::vector<const WorkerStats*>& ws) const;

  private:
    std::map<std::string, ClassTotals> classes_;
    std::map<std::string, TunnelTotals> tunnels_;
    std::map<std::string, PolicerTotals> policers_;
    std::map<std::string, QueueTotals> queues_;  // By "port/queue".
    ClassTotals unclassified_{};
};

struct PortReport {
    std::string name, device, role;
    int link_up = -1;  // -1: unknown (no device, as in replay).
    uint32_t mtu = 0;
    uint32_t speed_mbps = 0;
    uint64_t rate = 0, burst = 0;  // The shaper: bits per second, bytes (0: none).
    Totals<PortCounter> t{};       // The workers'.
    Totals<DeviceCounter> dev{};   // The device's (rte_eth_stats), where there is one.
};

struct ClassReport {
    std::string name;
    int set_dscp = -1;
    ClassTotals t{};
};

struct PolicerReport {
    std::string name, mode;
    uint64_t cir = 0, pir = 0, cbs = 0, pbs = 0;  // Bits per second, bytes (srtcm: pbs is EBS).
    bool colour_aware = false;
    int yellow = kColourKeep, red = kColourDrop;
    std::vector<std::string> classes;  // The classes that share it.
    PolicerTotals t{};
};

struct QueueReport {
    std::string name, port;
    bool strict = false, ecn = false, implicit = false;
    uint32_t weight = 0;
    uint64_t max_rate = 0, limit = 0, ecn_min = 0, ecn_max = 0;
    double ecn_max_probability = 0;
    std::vector<std::string> classes;  // "*" included.
    uint64_t depth_bytes = 0, depth_packets = 0, peak_bytes = 0;
    QueueTotals t{};
};

struct TunnelReport {
    std::string name, type, local, remote, outer_port, inner_port, next_hop;
    uint32_t vni = 0;
    uint16_t udp_port = 0;
    int next_hop_resolved = -1;    // -1: a static next-hop MAC; 0/1: ARP/ND state.
    uint32_t mtu = 0;              // Configured path MTU (the tunnel's mtu or its outer port's).
    uint64_t rate = 0, burst = 0;  // The tunnel's shaper (0: none).
    uint32_t path_mtu = 0;         // Now: lower while an ICMP error from the underlay holds.
    uint32_t carries = 0;          // The largest inner IP packet it carries now.
    double path_mtu_age = -1;      // Seconds since an ICMP error last lowered it; -1: configured.
    TunnelTotals t{};
    double cnp_encap_rate = 0, cnp_decap_rate = 0;  // Per second, over the last second.
};

struct WorkerReport {
    unsigned lcore = 0;
    std::vector<std::pair<std::string, uint16_t>> rx;  // The RX queues it polls: port, queue.
    Totals<WorkerCounter> t{};
};

struct NeighborReport {
    std::string addr, port, mac;  // mac empty: unresolved.
    std::string state;            // neighbor_state_name().
    bool is_static = false;
};

struct FlowReport {
    std::string src, dst, tunnel;
    uint32_t dqp = 0;
    bool decap = false;
    uint64_t pkts = 0, bytes = 0, cnps = 0;
    double pps = 0, bps = 0, cnps_per_s = 0, idle_s = 0;
};

struct Report {
    std::string version, config_path, dpdk_version;
    uint64_t generation = 0;
    double start_time = 0, now = 0;  // Unix seconds.
    double last_reload_time = 0;     // The start, or the last reload attempt.
    bool last_reload_ok = true;      // The start counts as a successful load.
    std::string last_reload_error;
    double last_reload_seconds = 0;  // Validate + compile + publish + wait for the workers.
    uint64_t reloads_ok = 0, reloads_failed = 0;
    uint64_t tsc_hz = 0;
    std::vector<PortReport> ports;
    std::vector<ClassReport> classes;
    ClassTotals unclassified{};
    std::vector<TunnelReport> tunnels;
    std::vector<PolicerReport> policers;
    std::vector<QueueReport> queues;
    std::array<uint64_t, kDropReasonCount> drops{};          // By DropReason; [0] unused.
    std::array<uint64_t, kLocalReplyCount> local_replies{};  // By LocalReply; [0] unused.
    Totals<DataplaneCounter> dataplane{};
    std::vector<WorkerReport> workers;
    std::vector<NeighborReport> neighbors;
    uint64_t probes_sent = 0, probes_failed = 0, neighbors_expired = 0;
    uint64_t probes_limited = 0, neighbors_removed = 0, neighbors_evicted = 0,
             neighbors_refused = 0;
    uint64_t mbufs_in_use = 0, mbufs_total = 0;
    std::vector<FlowReport> flows;  // Filled only for `flows`.
    size_t flows_tracked = 0;       // Conversations at the last sample.
    uint32_t flow_slots = 0;        // Per worker; 0: flows not tracked.
};

// The counters of a Report from the snapshot and the worker blocks (what replay and the control
// plane share); ports, neighbors and the rest are the caller's.
// `scrape`: a Prometheus scrape, which restarts the queues' largest depths.
void fill_counters(Report& r, const Snapshot& s, const NamedTotals& totals,
                   const std::vector<const WorkerStats*>& ws, bool scrape = false);

// The summary `replay` and `run` print at the end.
void print_counters(std::FILE* out, const Report& r);
// What `run` prints when it stops: devices, counters, neighbors, workers, the rates over `elapsed`
// seconds.
void print_run_summary(std::FILE* out, const Report& r, double elapsed);
// Convenience for replay: one snapshot, no reloads.
void print_counters(std::FILE* out, const Snapshot& s,
                    const std::vector<const WorkerStats*>& workers);

}  // namespace dscpgw
