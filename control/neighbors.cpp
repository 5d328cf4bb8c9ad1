#include "control/neighbors.h"

#include <rte_cycles.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "config/config.h"
#include "control/log.h"
#include "dataplane/local.h"
#include "dataplane/neighbor.h"

namespace dscpgw {

NeighborState neighbor_state(const Neighbor& n, uint64_t now, uint64_t hz) {
    if (n.is_static.load(std::memory_order_relaxed)) return NeighborState::is_static;
    if (n.failed) return NeighborState::failed;
    const uint64_t mac = n.mac.load(std::memory_order_relaxed);
    if ((mac & kNeighborValid) == 0) return NeighborState::incomplete;
    const uint64_t learned = n.learned_tsc.load(std::memory_order_relaxed);
    if (static_cast<double>(now - learned) < kNeighborReachable * static_cast<double>(hz))
        return NeighborState::reachable;
    return n.probes == 0 ? NeighborState::stale : NeighborState::probe;
}

void maintain_neighbors(NeighborTable& table, const Snapshot& s, NeighborControl& ctl, uint64_t now,
                        uint64_t hz) {
    table.drain_requests(now);
    table.reclaim(now);
    const auto secs = [hz](uint64_t dt) {
        return static_cast<double>(dt) / static_cast<double>(hz);
    };
    for (size_t i = 0; i < table.size(); ++i) {
        Neighbor& n = table.at(i);
        if (!n.live || n.is_static.load(std::memory_order_relaxed) || n.port >= s.ports.size())
            continue;
        const uint64_t mac = n.mac.load(std::memory_order_relaxed);
        const uint64_t learned = n.learned_tsc.load(std::memory_order_relaxed);
        if ((mac & kNeighborValid) != 0 && secs(now - learned) < kNeighborReachable) {
            n.probes = 0;  // Reachable.
            n.failed = false;
            continue;
        }
        if (n.failed) {
            if (!n.configured) {
                // Nobody answers for this LAN address: forget it (a packet for it asks again).
                if (secs(now - n.failed_tsc) >= kNeighborFailedHold) {
                    log_msg(Log::neighbor, RTE_LOG_DEBUG, "%s on %s: unanswered, removed",
                            format_ip(n.family, n.addr.data()).c_str(),
                            s.ports[n.port].name.c_str());
                    table.remove(i, now);
                    ++ctl.removed;
                }
                continue;
            }
            if (secs(now - n.last_probe_tsc) < kNeighborFailedRetry) continue;
        } else {
            if (n.probes != 0 && secs(now - n.last_probe_tsc) < kNeighborProbeInterval) continue;
            if (n.probes >= kNeighborMaxProbes) {
                // Silent through every probe: stop sending to a MAC that is probably gone, and
                // stop asking (a next hop slowly, a LAN host not at all).
                if ((mac & kNeighborValid) != 0) {
                    n.mac.store(0, std::memory_order_relaxed);
                    ++ctl.expired;
                }
                log_msg(Log::neighbor, n.configured ? RTE_LOG_WARNING : RTE_LOG_DEBUG,
                        "%s on %s: no answer to %u probes, %s",
                        format_ip(n.family, n.addr.data()).c_str(), s.ports[n.port].name.c_str(),
                        static_cast<unsigned>(n.probes),
                        (mac & kNeighborValid) != 0 ? "its MAC expired" : "unresolved");
                n.failed = true;
                n.failed_tsc = now;
                continue;
            }
        }
        // At most kNeighborProbesPerPort probes a second leave a port, whatever the LAN asks for.
        if (now - ctl.budget_tsc[n.port] >= hz) {
            ctl.budget_tsc[n.port] = now;
            ctl.budget[n.port] = kNeighborProbesPerPort;
        }
        if (ctl.budget[n.port] == 0) {
            ++ctl.probes_limited;
            continue;
        }
        rte_mbuf* m = rte_pktmbuf_alloc(ctl.pool);
        if (m == nullptr) {
            ++ctl.probes_failed;
            continue;
        }
        uint8_t* p = rte_pktmbuf_mtod(m, uint8_t*);
        const PortConf& port = s.ports[n.port];
        const uint32_t len = n.family == 4 ? build_arp_request(port, n.addr.data(), p)
                                           : build_neighbor_solicitation(port, n.addr.data(), p);
        m->data_len = static_cast<uint16_t>(len);
        m->pkt_len = len;
        m->port = n.port;  // The config port index; the worker maps it to its TX queue.
        if (len == 0 || rte_ring_sp_enqueue(ctl.inject, m) != 0) {
            rte_pktmbuf_free(m);
            ++ctl.probes_failed;
            continue;
        }
        --ctl.budget[n.port];
        // Workers take a first or changed MAC on an outer port only as the answer to this.
        n.probe_tsc.store(now, std::memory_order_relaxed);
        n.last_probe_tsc = now;
        if (!n.failed) ++n.probes;
        ++ctl.probes_sent;
        log_msg(Log::neighbor, RTE_LOG_DEBUG, "%s on %s: %s sent (probe %u)",
                format_ip(n.family, n.addr.data()).c_str(), port.name.c_str(),
                n.family == 4 ? "ARP request" : "neighbor solicitation",
                static_cast<unsigned>(n.probes));
    }
}

std::vector<NeighborReport> neighbor_reports(const NeighborTable& table, const Snapshot& s) {
    std::vector<NeighborReport> out;
    const uint64_t now = rte_get_tsc_cycles(), hz = rte_get_tsc_hz();
    for (size_t i = 0; i < table.size(); ++i) {
        const Neighbor& n = table.at(i);
        if (!n.live) continue;
        NeighborReport r;
        r.state = neighbor_state_name(neighbor_state(n, now, hz));
        r.addr = format_ip(n.family, n.addr.data());
        r.port = n.port < s.ports.size() ? s.ports[n.port].name : "?";
        r.is_static = n.is_static.load(std::memory_order_relaxed);
        const uint64_t mac = n.mac.load(std::memory_order_relaxed);
        if (mac & kNeighborValid) {
            std::array<uint8_t, 6> m{};
            unpack_mac(mac, m.data());
            r.mac = format_mac(m);
        }
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace dscpgw
