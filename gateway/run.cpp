// `dscpgw run`: opens the configured ports and runs one run-to-completion worker.
#include <pthread.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <map>
#include <thread>

#include "config/config.h"
#include "control/log.h"
#include "control/neighbors.h"
#include "control/report.h"
#include "dataplane/burst.h"
#include "dataplane/neighbor.h"
#include "dataplane/worker.h"
#include "gateway/commands.h"
#include "gateway/control_thread.h"
#include "gateway/eal.h"

namespace dscpgw {

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};

void on_signal(int) { g_stop.store(true); }
void on_hup(int) { g_reload.store(true); }

// The ethdev name a device string creates: the PCI address, or the vdev name before its arguments.
std::string device_name(const std::string& dev) { return dev.substr(0, dev.find(',')); }

constexpr uint16_t kRxDesc = 1024, kTxDesc = 1024;
constexpr unsigned kPoolCache = 256;

struct PortPlan {
    uint16_t rxq = 1, txq = 1;
    uint16_t rxd = kRxDesc, txd = kTxDesc;
    uint16_t max_txq = 1;
};

// Queue counts: one RX queue per worker where the device has them (RSS spreads flows), fewer
// otherwise (place_rx_queues() shares such ports' queues out among the workers); one TX queue per
// worker, required, so no worker ever shares a TX queue.
bool plan_port(uint16_t pid, const PortConf& pc, unsigned workers, PortPlan& plan,
               std::string& err) {
    rte_eth_dev_info info{};
    const int rc = rte_eth_dev_info_get(pid, &info);
    if (rc != 0) {
        err = "cannot read device info: " + std::string(rte_strerror(-rc));
        return false;
    }
    if (info.max_tx_queues < workers) {
        err =
            "the device offers " + std::to_string(info.max_tx_queues) + " TX queue(s) but " +
            std::to_string(workers) +
            " workers each need their own; lower [gateway] workers or give the device more queues";
        return false;
    }
    const uint32_t max_mtu = std::min<uint32_t>(
        info.max_mtu, info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN);
    if (pc.mtu > max_mtu) {
        err = "mtu " + std::to_string(pc.mtu) + " exceeds the device's maximum " +
              std::to_string(max_mtu);
        return false;
    }
    if (!pc.rx_workers.empty()) {
        // The operator's placement: a queue per entry, each on the worker it names.
        if (pc.rx_workers.size() > std::max<uint16_t>(info.max_rx_queues, 1)) {
            err = "rx_workers names " + std::to_string(pc.rx_workers.size()) +
                  " RX queues but the device offers " + std::to_string(info.max_rx_queues);
            return false;
        }
        for (const uint16_t w : pc.rx_workers)
            if (w >= workers) {
                err = "rx_workers names worker " + std::to_string(w) + " but there are " +
                      std::to_string(workers) + " (0.." + std::to_string(workers - 1) + ")";
                return false;
            }
        plan.rxq = static_cast<uint16_t>(pc.rx_workers.size());
    } else {
        plan.rxq = static_cast<uint16_t>(
            std::min<unsigned>(workers, std::max<uint16_t>(info.max_rx_queues, 1)));
    }
    plan.txq = static_cast<uint16_t>(workers);
    plan.max_txq = info.max_tx_queues;
    return true;
}

bool setup_port(uint16_t pid, PortConf& pc, PortPlan& plan, rte_mempool* pool, std::string& err) {
    rte_eth_dev_info info{};
    rte_eth_dev_info_get(pid, &info);
    rte_eth_conf conf{};
    conf.rxmode.mtu = pc.mtu;
    // The outer IPv6 UDP checksum covers the whole datagram; a device that computes it saves the
    // worker ~40 ns per KB. (IPv4 headers are patched from precomputed sums: cheaper than offload.)
    if (pc.role == PortRole::outer && (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0)
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    // Received tunnel packets have their outer checksums verified: by the device where it can
    // (the RX flags), in software otherwise.
    if (pc.role == PortRole::outer)
        conf.rxmode.offloads |=
            (RTE_ETH_RX_OFFLOAD_IPV4_CKSUM | RTE_ETH_RX_OFFLOAD_UDP_CKSUM) & info.rx_offload_capa;
    if (plan.rxq > 1 && info.flow_type_rss_offloads != 0) {
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf =
            (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP | RTE_ETH_RSS_TCP) & info.flow_type_rss_offloads;
    }
    int rc = rte_eth_dev_configure(pid, plan.rxq, plan.txq, &conf);
    if (rc != 0) {
        err = "configure failed: " + std::string(rte_strerror(-rc));
        return false;
    }
    rte_eth_dev_adjust_nb_rx_tx_desc(pid, &plan.rxd, &plan.txd);
    const int socket = rte_eth_dev_socket_id(pid);
    for (uint16_t q = 0; q < plan.rxq; ++q)
        if ((rc = rte_eth_rx_queue_setup(pid, q, plan.rxd, socket, nullptr, pool)) != 0) {
            err = "RX queue " + std::to_string(q) + " setup failed: " + rte_strerror(-rc);
            return false;
        }
    for (uint16_t q = 0; q < plan.txq; ++q)
        if ((rc = rte_eth_tx_queue_setup(pid, q, plan.txd, socket, nullptr)) != 0) {
            err = "TX queue " + std::to_string(q) + " setup failed: " + rte_strerror(-rc);
            return false;
        }
    rc = rte_eth_dev_set_mtu(pid, static_cast<uint16_t>(pc.mtu));
    if (rc != 0 && rc != -ENOTSUP)
        log_msg(Log::port, RTE_LOG_WARNING,
                "port %s: cannot set MTU %u (%s); continuing with the device's", pc.name.c_str(),
                pc.mtu, rte_strerror(-rc));
    pc.tx_udp_cksum_offload = (conf.txmode.offloads & RTE_ETH_TX_OFFLOAD_UDP_CKSUM) != 0;
    if ((rc = rte_eth_dev_start(pid)) != 0) {
        err = "start failed: " + std::string(rte_strerror(-rc));
        return false;
    }
    // A transparent inner port is a bump in the wire: it must see frames for every host behind the
    // tunnel, so it is promiscuous. A port with an address owns its configured MAC instead, and
    // needs multicast for IPv6 Neighbor Discovery; where the device cannot take the MAC, it falls
    // back to promiscuous mode so frames for that MAC still arrive.
    const bool transparent = pc.role == PortRole::inner && !pc.has_ipv4 && !pc.has_ipv6;
    bool promisc = transparent || !pc.has_mac;
    if (!transparent && pc.has_mac) {
        rte_ether_addr a{};
        std::copy(pc.mac.begin(), pc.mac.end(), a.addr_bytes);
        if (rte_eth_dev_default_mac_addr_set(pid, &a) != 0) {
            log_msg(Log::port, RTE_LOG_NOTICE,
                    "port %s: the device keeps its own MAC; promiscuous mode receives %s",
                    pc.name.c_str(), format_mac(pc.mac).c_str());
            promisc = true;
        }
    }
    if (promisc)
        rte_eth_promiscuous_enable(pid);
    else
        rte_eth_allmulticast_enable(pid);
    return true;
}

// Pins `t` to the online CPUs no EAL lcore runs on; where every CPU has an lcore, it stays on
// the main lcore's CPUs and the operator is told that the control thread shares a worker's core.
void place_control_thread(std::thread& t) {
    cpu_set_t free_cpus;
    CPU_ZERO(&free_cpus);
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<size_t>(c), &free_cpus);
    for (unsigned l = 0; l < RTE_MAX_LCORE; ++l) {
        if (!rte_lcore_is_enabled(l)) continue;
        const rte_cpuset_t cs = rte_lcore_cpuset(l);
        for (size_t c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &cs)) CPU_CLR(c, &free_cpus);
    }
    if (CPU_COUNT(&free_cpus) != 0 &&
        pthread_setaffinity_np(t.native_handle(), sizeof free_cpus, &free_cpus) == 0) {
        log_msg(Log::gateway, RTE_LOG_INFO,
                "one lcore: the control thread runs on the %d CPU(s) the EAL does not use",
                CPU_COUNT(&free_cpus));
    } else {
        log_msg(Log::gateway, RTE_LOG_WARNING,
                "one lcore and no CPU left for the control thread: it shares the worker's core "
                "(give the EAL a second lcore, such as -l 0,1)");
    }
}

// What `run` holds between its steps: the devices, their pools and the neighbor table.
struct Ports {
    std::vector<uint16_t> eth_port;
    std::vector<PortPlan> plans;
    std::vector<int> socket;
    std::map<int, rte_mempool*> pools;  // One per NUMA socket that has ports.
    unsigned mbufs_at_start = 0;
    uint32_t max_frame = 0;  // Largest frame an mbuf holds.
    std::vector<std::array<uint8_t, 6>> macs;
    // Worker -> the RX queues it polls (place_rx_queues()).
    std::vector<std::vector<RxPoll>> rx;

    ~Ports() {
        for (auto& [sock, mp] : pools) rte_mempool_free(mp);
    }
    unsigned mbufs_in_use() const {
        unsigned n = 0;
        for (const auto& [sock, mp] : pools) n += rte_mempool_in_use_count(mp);
        return n;
    }
};

// Step 1: the EAL, with every configured device (PCI addresses allowed, the rest as vdevs).
bool start_eal(const Config& cfg, const std::string& log_level) {
    std::vector<std::string> args = cfg.eal_args;
    if (!log_level.empty()) args.push_back("--log-level=" + log_level);
    bool any_pci = false;
    for (const auto& p : cfg.ports) {
        if (is_pci_address(p.device)) {
            args.insert(args.end(), {"-a", p.device});
            any_pci = true;
        } else {
            args.insert(args.end(), {"--vdev", p.device});
        }
    }
    if (!any_pci) args.emplace_back("--no-pci");
    std::string err;
    if (!eal_init(args, err)) {
        std::fprintf(stderr, "dscpgw run: %s\n", err.c_str());
        return false;
    }
    return true;
}

// Step 2: the worker lcores (every lcore but the main one, which is the control thread); none when
// the EAL has one lcore, which then forwards. 0 workers: [gateway] workers asks for too many.
unsigned plan_workers(const Config& cfg, std::vector<unsigned>& lcores) {
    for (unsigned l = rte_get_next_lcore(-1, 1, 0); l < RTE_MAX_LCORE;
         l = rte_get_next_lcore(l, 1, 0))
        lcores.push_back(l);
    if (cfg.workers != 0 && cfg.workers > lcores.size()) {
        std::fprintf(stderr,
                     "dscpgw run: [gateway] workers = %u needs %u worker lcores besides the main "
                     "one; the EAL has %zu (set -l in [eal] args)\n",
                     cfg.workers, cfg.workers, lcores.size());
        return 0;
    }
    return cfg.workers != 0 ? cfg.workers
                            : static_cast<unsigned>(std::max<size_t>(lcores.size(), 1));
}

// Step 3: find, plan and start every port, with mbuf pools sized for their queues.
// `worker_lcores`: each worker's lcore.
bool open_ports(Config& cfg, const std::vector<unsigned>& worker_lcores, Ports& ports) {
    const auto workers = static_cast<unsigned>(worker_lcores.size());
    const size_t nports = cfg.ports.size();
    ports.eth_port.resize(nports);
    ports.plans.resize(nports);
    ports.socket.resize(nports);
    uint32_t max_mtu = 0;
    std::map<int, uint32_t> socket_mbufs;
    std::string err;
    for (size_t i = 0; i < nports; ++i) {
        const PortConf& pc = cfg.ports[i];
        if (rte_eth_dev_get_port_by_name(device_name(pc.device).c_str(), &ports.eth_port[i]) != 0) {
            std::fprintf(stderr,
                         "dscpgw run: ports[%zu] (%s): device \"%s\" was not found by DPDK\n", i,
                         pc.name.c_str(), pc.device.c_str());
            return false;
        }
        if (!plan_port(ports.eth_port[i], pc, workers, ports.plans[i], err)) {
            std::fprintf(stderr, "dscpgw run: port %s (%s): %s\n", pc.name.c_str(),
                         pc.device.c_str(), err.c_str());
            return false;
        }
        // One more TX queue, where the device has it, for a shaped port's egress scheduler
        // (dataplane/sched.h) when several workers may run it: whichever does sends there, so
        // its packets leave in the order it chose (one worker sends on its own queue).
        bool shaped = pc.rate != 0;
        for (const TunnelConf& t : cfg.tunnels) shaped |= t.outer_port == i && t.rate != 0;
        if (shaped && workers > 1 && ports.plans[i].max_txq > workers)
            ports.plans[i].txq = static_cast<uint16_t>(workers + 1);
        else if (shaped && workers > 1)
            log_msg(Log::port, RTE_LOG_WARNING,
                    "port %s: the device has no TX queue for the egress scheduler; shaped "
                    "packets leave by the sending worker's queue and may be reordered",
                    pc.name.c_str());
        max_mtu = std::max(max_mtu, pc.mtu);
        const int sock = rte_eth_dev_socket_id(ports.eth_port[i]);
        ports.socket[i] = sock < 0 ? static_cast<int>(rte_socket_id()) : sock;
        // Every descriptor of every queue may hold an mbuf, plus a burst in flight per worker.
        socket_mbufs[ports.socket[i]] +=
            ports.plans[i].rxq * kRxDesc + ports.plans[i].txq * kTxDesc + workers * 2 * kBurst;
        // A shaped port's queues hold mbufs: the buffers its scheduler may hold (sched_buffers();
        // a reload that raises the limits past these runs short at RX: rx_nombuf).
        if (shaped) {
            uint64_t limits = 0;
            for (const QueueConf& q : cfg.queues)
                if (q.port == i) limits += q.limit;
            if (limits == 0) limits = QueueConf{}.limit;
            socket_mbufs[ports.socket[i]] += sched_buffers(limits);
        }
    }
    const uint32_t room =
        std::max<uint32_t>(RTE_MBUF_DEFAULT_DATAROOM, max_mtu + 14 + 8 + 4) + RTE_PKTMBUF_HEADROOM;
    ports.max_frame = room - RTE_PKTMBUF_HEADROOM;
    for (auto& [sock, n] : socket_mbufs) {
        const uint32_t count = n + (workers + 1) * kPoolCache;
        rte_mempool* mp =
            rte_pktmbuf_pool_create(("dscpgw_rx_s" + std::to_string(sock)).c_str(), count,
                                    kPoolCache, 0, static_cast<uint16_t>(room), sock);
        if (mp == nullptr) {
            std::fprintf(
                stderr,
                "dscpgw run: cannot create an mbuf pool of %u x %u bytes on socket %d: %s\n", count,
                room, sock, rte_strerror(rte_errno));
            return false;
        }
        ports.pools[sock] = mp;
    }
    ports.mbufs_at_start = ports.mbufs_in_use();
    for (size_t i = 0; i < nports; ++i) {
        PortConf& pc = cfg.ports[i];
        if (!setup_port(ports.eth_port[i], pc, ports.plans[i], ports.pools.at(ports.socket[i]),
                        err)) {
            std::fprintf(stderr, "dscpgw run: port %s (%s): %s\n", pc.name.c_str(),
                         pc.device.c_str(), err.c_str());
            return false;
        }
        rte_ether_addr a{};
        rte_eth_macaddr_get(ports.eth_port[i], &a);
        std::array<uint8_t, 6> m{};
        std::copy(std::begin(a.addr_bytes), std::end(a.addr_bytes), m.begin());
        ports.macs.push_back(m);
        log_msg(Log::port, RTE_LOG_INFO,
                "port %s: %s, %u RX / %u TX queues of %u / %u descriptors, mtu %u%s",
                pc.name.c_str(), pc.device.c_str(), ports.plans[i].rxq, ports.plans[i].txq,
                ports.plans[i].rxd, ports.plans[i].txd, pc.mtu,
                pc.tx_udp_cksum_offload ? ", UDP checksum offload" : "");
    }
    RxPlacementInput in;
    for (size_t i = 0; i < nports; ++i) {
        in.queues.push_back(ports.plans[i].rxq);
        in.pinned.push_back(cfg.ports[i].rx_workers);
        in.port_socket.push_back(rte_eth_dev_socket_id(ports.eth_port[i]));
    }
    for (const unsigned l : worker_lcores)
        in.worker_socket.push_back(static_cast<int>(rte_lcore_to_socket_id(l)));
    ports.rx = place_rx_queues(in);
    for (auto& polls : ports.rx)
        for (RxPoll& r : polls) r.eth_port = ports.eth_port[r.port];
    // Port -> queue -> the worker polling it, for the log.
    std::vector<std::vector<unsigned>> owner(nports);
    for (size_t i = 0; i < nports; ++i) owner[i].resize(ports.plans[i].rxq);
    for (unsigned w = 0; w < workers; ++w)
        for (const RxPoll& r : ports.rx[w]) owner[r.port][r.queue] = w;
    for (size_t i = 0; i < nports; ++i) {
        std::string on;
        int away = -1;  // A worker on another socket than the device's.
        for (unsigned q = 0; q < owner[i].size(); ++q) {
            const unsigned w = owner[i][q];
            on += ' ';  // Piecewise: GCC 12's -Wrestrict misreads " " + std::string.
            on += std::to_string(q);
            on += "->";
            on += std::to_string(w);
            if (in.port_socket[i] >= 0 && in.worker_socket[w] != in.port_socket[i])
                away = static_cast<int>(w);
        }
        log_msg(Log::port, RTE_LOG_INFO, "port %s: RX queue->worker%s%s", cfg.ports[i].name.c_str(),
                on.c_str(), cfg.ports[i].rx_workers.empty() ? "" : " (rx_workers)");
        if (away >= 0)
            log_msg(Log::port, RTE_LOG_WARNING,
                    "port %s: the device is on NUMA socket %d but worker %d, on socket %d, polls "
                    "it: its packets cross the interconnect (rx_workers can keep its queues on "
                    "socket %d's workers)",
                    cfg.ports[i].name.c_str(), in.port_socket[i], away,
                    in.worker_socket[static_cast<size_t>(away)], in.port_socket[i]);
    }
    return true;
}

// Step 4: the workers on their lcores and the control loop until SIGINT/SIGTERM; returns the
// seconds it forwarded.
double forward(ControlPlane& cp, const Ports& ports, const std::vector<unsigned>& lcores,
               unsigned workers, rte_ring* inject) {
    const bool on_main = lcores.empty();
    std::vector<WorkerContext> ctxs(workers);
    // The locks of the schedulers' own TX queues, shared by the workers.
    const auto tx_locks = std::make_unique<std::atomic_flag[]>(kMaxPorts);
    for (unsigned w = 0; w < workers; ++w) {
        WorkerContext& c = ctxs[w];
        c.snap = cp.published();
        c.rcu = cp.rcu();
        c.flows = cp.flows(w);
        c.trace = cp.trace();
        c.eth_port = ports.eth_port;
        c.queue = static_cast<uint16_t>(w);
        c.stats = cp.stats(w);
        c.stop = &g_stop;
        c.inject = w == 0 ? inject : nullptr;
        c.rx = ports.rx[w];
        for (const PortPlan& plan : ports.plans)
            c.sched_queue.push_back(static_cast<uint16_t>(plan.txq > workers ? workers : w));
        c.sched_tx_lock = tx_locks.get();
    }
    const auto t0 = std::chrono::steady_clock::now();
    // The control loop: the control socket, SIGHUP reloads, neighbors, flows, link changes.
    const auto control_loop = [&] {
        while (!g_stop.load()) {
            cp.run_once(50);
            if (std::string msg; g_reload.exchange(false)) cp.reload(msg, "SIGHUP: ");
        }
    };
    if (!on_main) {
        for (unsigned w = 0; w < workers; ++w)
            rte_eal_remote_launch(worker_main, &ctxs[w], lcores[w]);
        control_loop();  // The main lcore is the control thread.
        for (unsigned w = 0; w < workers; ++w) {
            rte_eal_wait_lcore(lcores[w]);
            while (!ctxs[w].finished.load(std::memory_order_acquire)) {
            }
        }
    } else {
        // One lcore: it forwards; the control thread is an ordinary thread on the CPUs the EAL
        // does not use, or, where there are none, sharing the worker's (said at start).
        std::thread control(control_loop);
        place_control_thread(control);
        worker_main(&ctxs[0]);  // Signals still stop it.
        control.join();
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int cmd_run(const std::string& config, const std::string& log_level) {
    Config cfg;
    try {
        cfg = load_config(config);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "dscpgw: invalid config:\n%s\n", e.what());
        return 2;
    }
    // The types exist before the EAL parses its --log-level options, which then override
    // [gateway] log_level for the types they name.
    log_init(log_level_parse(cfg.log_level));
    for (const std::string& w : cfg.warnings) log_msg(Log::config, RTE_LOG_NOTICE, "%s", w.c_str());
    if (!start_eal(cfg, log_level)) return 1;
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    std::signal(SIGHUP, on_hup);
    // Declared first, destroyed last: whatever lives in DPDK memory is gone before the EAL is.
    struct EalCleanup {
        ~EalCleanup() { rte_eal_cleanup(); }
    } eal_cleanup;

    std::vector<unsigned> lcores;
    const unsigned workers = plan_workers(cfg, lcores);
    if (workers == 0) return 2;
    std::vector<unsigned> worker_lcores;
    for (unsigned w = 0; w < workers; ++w)
        worker_lcores.push_back(lcores.empty() ? rte_get_main_lcore() : lcores[w]);
    Ports ports;
    if (!open_ports(cfg, worker_lcores, ports)) return 1;

    auto neighbors = std::make_unique<NeighborTable>();
    ControlSetup setup;
    try {
        setup.snap = build_snapshot(cfg, ports.macs, *neighbors);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dscpgw run: %s\n", e.what());
        return 1;
    }
    // The control thread's frames (neighbor probes) go out through worker 0's TX queues.
    rte_ring* inject =
        rte_ring_create("dscpgw_inject", 512, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    if (inject == nullptr) {
        std::fprintf(stderr, "dscpgw run: cannot create the control ring: %s\n",
                     rte_strerror(rte_errno));
        return 1;
    }
    // Frames left in the ring go back to their pool, so this runs before the pools are freed.
    struct RingCleanup {
        rte_ring* r;
        void release() {
            for (void* left = nullptr; r != nullptr && rte_ring_dequeue(r, &left) == 0;)
                rte_pktmbuf_free(static_cast<rte_mbuf*>(left));
            rte_ring_free(r);
            r = nullptr;
        }
        ~RingCleanup() { release(); }
    } ring_cleanup{inject};
    setup.cfg = cfg;
    setup.macs = ports.macs;
    setup.eth_port = ports.eth_port;
    setup.max_frame = ports.max_frame;
    setup.worker_lcores = worker_lcores;
    setup.worker_rx = ports.rx;
    for (auto& [sock, mp] : ports.pools) setup.pools.push_back(mp);
    setup.neighbors = neighbors.get();
    setup.nctl = NeighborControl{ports.pools.at(ports.socket[0]), inject};
    std::unique_ptr<ControlPlane> cp;
    try {
        cp = std::make_unique<ControlPlane>(std::move(setup));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dscpgw run: %s\n", e.what());
        return 1;
    }

    std::string on;
    for (unsigned w = 0; w < workers; ++w) {
        on += ' ';  // Appended piecewise: GCC 12's -Wrestrict misreads " " + std::string.
        on += std::to_string(worker_lcores[w]);
    }
    log_msg(Log::gateway, RTE_LOG_INFO,
            "running: %zu ports, %zu tunnels, %zu classes, %u worker(s) on lcore(s)%s",
            cfg.ports.size(), cfg.tunnels.size(), cfg.classes.size(), workers, on.c_str());
    const double elapsed = forward(*cp, ports, lcores, workers, inject);

    // Step 5: the summary, from the same report ctl and Prometheus render, read before the
    // devices close.
    cp->notify_stopping();
    log_msg(Log::gateway, RTE_LOG_INFO, "stopping");
    print_run_summary(stdout, cp->report(), elapsed);
    for (const uint16_t pid : ports.eth_port) {
        rte_eth_dev_stop(pid);
        rte_eth_dev_close(pid);
    }
    cp.reset();
    neighbors.reset();
    ring_cleanup.release();
    std::printf("mbufs in use after shutdown: %u (at start: %u)\n", ports.mbufs_in_use(),
                ports.mbufs_at_start);
    std::fflush(stdout);
    return 0;
}

}  // namespace dscpgw
