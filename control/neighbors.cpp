#include "control/neighbors.h"

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "config/config.h"
#include "dataplane/local.h"
#include "dataplane/neighbor.h"

namespace dscpgw {

void maintain_neighbors(NeighborTable& table, const Snapshot& s, NeighborControl& ctl, uint64_t now,
                        uint64_t hz) {
    table.drain_requests(now);
    const auto secs = [hz](uint64_t dt) {
        return static_cast<double>(dt) / static_cast<double>(hz);
    };
    for (size_t i = 0; i < table.size(); ++i) {
        Neighbor& n = table.at(i);
        if (n.is_static.load(std::memory_order_relaxed)) continue;
        const uint64_t mac = n.mac.load(std::memory_order_relaxed);
        const uint64_t learned = n.learned_tsc.load(std::memory_order_relaxed);
        const bool fresh = (mac & kNeighborValid) != 0 && secs(now - learned) < kNeighborReachable;
        if (fresh) {
            n.probes = 0;
            continue;
        }
        if (n.last_probe_tsc != 0 && secs(now - n.last_probe_tsc) < kNeighborProbeInterval)
            continue;
        if ((mac & kNeighborValid) != 0 && n.probes >= kNeighborMaxProbes) {
            // Silent through every probe: stop sending to a MAC that is probably gone.
            n.mac.store(0, std::memory_order_relaxed);
            ++ctl.expired;
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
        n.last_probe_tsc = now;
        ++n.probes;
        ++ctl.probes_sent;
    }
}

std::vector<NeighborReport> neighbor_reports(const NeighborTable& table, const Snapshot& s) {
    std::vector<NeighborReport> out;
    for (size_t i = 0; i < table.size(); ++i) {
        const Neighbor& n = table.at(i);
        NeighborReport r;
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
