// `dscpgw run`: opens the configured ports and runs one run-to-completion worker.
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#include <atomic>
#include <cinttypes>
#include <csignal>
#include <cstdio>
#include <regex>
#include <thread>

#include "config/config.h"
#include "control/report.h"
#include "dataplane/burst.h"
#include "dataplane/worker.h"
#include "gateway/commands.h"
#include "gateway/eal.h"

namespace dscpgw {

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

bool is_pci_address(const std::string& dev) {
    static const std::regex pci("^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]$");
    return std::regex_match(dev, pci);
}

// The ethdev name a device string creates: the PCI address, or the vdev name before its arguments.
std::string device_name(const std::string& dev) { return dev.substr(0, dev.find(',')); }

constexpr uint16_t kRxDesc = 1024, kTxDesc = 1024;

bool setup_port(uint16_t pid, const PortConf& pc, rte_mempool* pool, std::string& err) {
    rte_eth_dev_info info{};
    int rc = rte_eth_dev_info_get(pid, &info);
    if (rc != 0) {
        err = "cannot read device info: " + std::string(rte_strerror(-rc));
        return false;
    }
    rte_eth_conf conf{};
    conf.rxmode.mtu = pc.mtu;
    rc = rte_eth_dev_configure(pid, 1, 1, &conf);
    if (rc != 0) {
        err = "configure failed: " + std::string(rte_strerror(-rc));
        return false;
    }
    uint16_t rxd = kRxDesc, txd = kTxDesc;
    rte_eth_dev_adjust_nb_rx_tx_desc(pid, &rxd, &txd);
    const int socket = rte_eth_dev_socket_id(pid);
    if ((rc = rte_eth_rx_queue_setup(pid, 0, rxd, socket, nullptr, pool)) != 0 ||
        (rc = rte_eth_tx_queue_setup(pid, 0, txd, socket, nullptr)) != 0) {
        err = "queue setup failed: " + std::string(rte_strerror(-rc));
        return false;
    }
    rc = rte_eth_dev_set_mtu(pid, static_cast<uint16_t>(pc.mtu));
    if (rc != 0 && rc != -ENOTSUP)
        std::fprintf(stderr, "dscpgw: port %s: cannot set MTU %u (%s); continuing with the device's\n",
                     pc.name.c_str(), pc.mtu, rte_strerror(-rc));
    if ((rc = rte_eth_dev_start(pid)) != 0) {
        err = "start failed: " + std::string(rte_strerror(-rc));
        return false;
    }
    // The gateway is a bump in the wire on the inner side and a VTEP on the outer side; without
    // promiscuous mode a transparent inner port would miss frames for hosts behind the tunnel.
    rte_eth_promiscuous_enable(pid);
    return true;
}

}  // namespace

int cmd_run(const std::string& config) {
    Config cfg;
    try {
        cfg = load_config(config);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "dscpgw: invalid config:\n%s\n", e.what());
        return 2;
    }
    std::vector<std::string> args = cfg.eal_args;
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
        return 1;
    }
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);

    WorkerContext ctx;
    uint32_t max_mtu = 0;
    for (size_t i = 0; i < cfg.ports.size(); ++i) {
        uint16_t pid = 0;
        if (rte_eth_dev_get_port_by_name(device_name(cfg.ports[i].device).c_str(), &pid) != 0) {
            std::fprintf(stderr, "dscpgw run: ports[%zu] (%s): device \"%s\" was not found by DPDK\n", i,
                         cfg.ports[i].name.c_str(), cfg.ports[i].device.c_str());
            rte_eal_cleanup();
            return 1;
        }
        ctx.eth_port.push_back(pid);
        max_mtu = std::max(max_mtu, cfg.ports[i].mtu);
    }
    // Every queue's ring and a burst in flight per port, plus the per-lcore caches.
    const uint32_t nports = static_cast<uint32_t>(cfg.ports.size());
    const uint32_t nb_mbufs = nports * (kRxDesc + kTxDesc + 2 * kBurst) + 2 * 256;
    const uint32_t room = std::max<uint32_t>(RTE_MBUF_DEFAULT_DATAROOM, max_mtu + 14 + 8 + 4) +
                          RTE_PKTMBUF_HEADROOM;
    rte_mempool* pool = rte_pktmbuf_pool_create("dscpgw_rx", nb_mbufs, 256, 0, static_cast<uint16_t>(room),
                                                static_cast<int>(rte_socket_id()));
    if (pool == nullptr) {
        std::fprintf(stderr, "dscpgw run: cannot create mbuf pool of %u x %u bytes: %s\n", nb_mbufs, room,
                     rte_strerror(rte_errno));
        rte_eal_cleanup();
        return 1;
    }
    std::vector<std::array<uint8_t, 6>> macs;
    for (size_t i = 0; i < cfg.ports.size(); ++i) {
        if (!setup_port(ctx.eth_port[i], cfg.ports[i], pool, err)) {
            std::fprintf(stderr, "dscpgw run: port %s (%s): %s\n", cfg.ports[i].name.c_str(),
                         cfg.ports[i].device.c_str(), err.c_str());
            rte_eal_cleanup();
            return 1;
        }
        rte_ether_addr a{};
        rte_eth_macaddr_get(ctx.eth_port[i], &a);
        std::array<uint8_t, 6> m{};
        std::copy(std::begin(a.addr_bytes), std::end(a.addr_bytes), m.begin());
        macs.push_back(m);
    }
    std::unique_ptr<Snapshot> snap;
    try {
        snap = build_snapshot(cfg, macs);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "dscpgw run: %s\n", e.what());
        rte_eal_cleanup();
        return 1;
    }
    auto stats = std::make_unique<WorkerStats>();
    ctx.snap = snap.get();
    ctx.stats = stats.get();
    ctx.stop = &g_stop;

    const unsigned worker = rte_get_next_lcore(-1, 1, 0);
    std::printf("dscpgw: running: %zu ports, %zu tunnels, %zu classes, worker on lcore %u\n",
                cfg.ports.size(), cfg.tunnels.size(), cfg.classes.size(),
                worker < RTE_MAX_LCORE ? worker : rte_get_main_lcore());
    std::fflush(stdout);
    if (worker < RTE_MAX_LCORE) {
        rte_eal_remote_launch(worker_main, &ctx, worker);
        while (!g_stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        rte_eal_wait_lcore(worker);
    } else {
        worker_main(&ctx);  // Single lcore: the main lcore polls; signals still stop it.
    }

    std::printf("dscpgw: stopping\n");
    for (size_t i = 0; i < cfg.ports.size(); ++i) {
        rte_eth_stats es{};
        rte_eth_stats_get(ctx.eth_port[i], &es);
        std::printf("ethdev %s: ipackets %" PRIu64 " opackets %" PRIu64 " imissed %" PRIu64 " ierrors %" PRIu64
                    " oerrors %" PRIu64 " rx_nombuf %" PRIu64 "\n",
                    cfg.ports[i].name.c_str(), es.ipackets, es.opackets, es.imissed, es.ierrors, es.oerrors,
                    es.rx_nombuf);
        rte_eth_dev_stop(ctx.eth_port[i]);
        rte_eth_dev_close(ctx.eth_port[i]);
    }
    print_counters(stdout, *snap, {stats.get()});
    const uint64_t pkts = [&] {
        uint64_t n = 0;
        for (size_t i = 0; i < cfg.ports.size(); ++i) n += stats->rx_pkts[i].get();
        return n;
    }();
    if (pkts != 0)
        std::printf("worker: %.1f busy cycles per packet\n",
                    static_cast<double>(stats->busy_cycles.get()) / static_cast<double>(pkts));
    std::printf("mbufs in use after shutdown: %u\n", rte_mempool_in_use_count(pool));
    std::fflush(stdout);
    snap.reset();
    rte_mempool_free(pool);
    rte_eal_cleanup();
    return 0;
}

}  // namespace dscpgw
