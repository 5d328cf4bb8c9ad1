// `dscpgw replay`: runs a capture through the workers' burst code, with no NIC and no hugepages.
#include <pcap/pcap.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "control/report.h"
#include "control/trace.h"
#include "dataplane/burst.h"
#include "dataplane/neighbor.h"
#include "dataplane/qos.h"
#include "dataplane/sched.h"
#include "gateway/commands.h"
#include "gateway/eal.h"

namespace dscpgw {

namespace {

// Replay has no devices: a port without a configured `mac` gets a fixed locally administered one.
std::array<uint8_t, 6> replay_mac(size_t port) {
    return {0x02, 0x00, 0x00, 0x00, 0x00, static_cast<uint8_t>(port + 1)};
}

// The QoS part of a trace line: the policer's colour, the adaptive rule, the 802.1p priority.
std::string qos_trace(const PacketNotes& n) {
    static constexpr const char* kColours[] = {"green", "yellow", "red"};
    std::string q;
    if (n.colour() >= 0) q += std::string(" colour=") + kColours[n.colour() & 3];
    if (n.adaptive_rule() >= 0) q += " adaptive=" + std::to_string(n.adaptive_rule());
    if (n.pcp_in() >= 0)
        q += " pcp=" + std::to_string(n.pcp_in()) + (n.pcp_mapped ? "(mapped)" : "");
    if (n.pcp_out() >= 0) q += " pcp=" + std::to_string(n.pcp_out());
    return q;
}

// The outermost IP header's ECN of a frame: "ecn=IN->OUT" ("ecn=IN" when nothing was sent).
std::string ecn_field(int ecn_in, int ecn_out) {
    std::string e = std::string(" ecn=") + ecn_name(ecn_in);
    if (ecn_out >= 0) e += std::string("->") + ecn_name(ecn_out);
    return ecn_in < 0 && ecn_out < 0 ? std::string(" ecn=-") : e;
}

std::string trace_line(uint64_t index, const Snapshot& s, const Verdict& v, const PacketNotes& n,
                       const std::string& ecn) {
    char line[1024];
    const char* cls = "-";
    if (n.outer_path)
        cls = "(decap)";
    else if (n.class_id >= 0)
        cls = s.classes[static_cast<size_t>(n.class_id)].name.c_str();
    else if (n.dscp_in >= 0)
        cls = "(none)";
    char dscp[32] = "-";
    if (n.dscp_in >= 0 && n.dscp_out >= 0)
        std::snprintf(dscp, sizeof dscp, "%d->%d", n.dscp_in, n.dscp_out);
    else if (n.dscp_in >= 0)
        std::snprintf(dscp, sizeof dscp, "%d", n.dscp_in);
    const char* tun =
        n.tunnel_id >= 0 ? s.tunnels[static_cast<size_t>(n.tunnel_id)].name.c_str() : "-";
    if (v.local != LocalReply::none)
        std::snprintf(line, sizeof line, "%" PRIu64 " class=- dscp=-%s tunnel=- reply=%s port=%s",
                      index, ecn.c_str(),
                      std::string(kLocalReplyInfo[static_cast<size_t>(v.local)].name).c_str(),
                      s.ports[v.out_port].name.c_str());
    else if (v.drop == DropReason::none)
        std::snprintf(
            line, sizeof line, "%" PRIu64 " class=%s dscp=%s%s tunnel=%s %s port=%s%s%s%s", index,
            cls, dscp, ecn.c_str(), tun, n.outer_path ? "decap" : "encap",
            s.ports[v.out_port].name.c_str(), n.outer_remarked ? " outer_dscp_remarked" : "",
            n.ce_marked ? " ce_marked" : "", qos_trace(n).c_str());
    else
        std::snprintf(line, sizeof line, "%" PRIu64 " class=%s dscp=%s%s tunnel=%s drop=%s%s%s",
                      index, cls, dscp, ecn.c_str(), tun,
                      std::string(drop_reason_name(v.drop)).c_str(), v.pmtu ? " pmtu" : "",
                      qos_trace(n).c_str());
    return line;
}

// The egress queue's part of a trace line: which queue, its depth before the packet, and what
// it did (marked CE, dropped and why).
std::string queue_trace(const Snapshot& s, uint16_t port, const EnqResult& r) {
    if (r.action == EnqAction::bypass || r.queue < 0) return "";
    const QueueConf& q = s.queues[s.sched_plans[port].first_queue + static_cast<size_t>(r.queue)];
    std::string t = " queue=" + q.name + " depth=" + std::to_string(r.depth);
    if (r.action == EnqAction::marked) t += " ce";
    if (r.action == EnqAction::drop_limit) t += " queue_drop=limit";
    if (r.action == EnqAction::drop_not_ect) t += " queue_drop=ecn_not_ect";
    if (r.action == EnqAction::drop_buffers) t += " queue_drop=buffers";
    return t;
}

// A time on the TSC's scale back to capture nanoseconds (rounded up: the inverse of capture_tsc).
timeval tsc_to_ts(uint64_t t, uint64_t hz) {
    __extension__ typedef unsigned __int128 u128;
    const auto ns = static_cast<uint64_t>((static_cast<u128>(t) * 1000000000u + hz - 1) / hz);
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(ns / 1000000000u);
    tv.tv_usec = static_cast<suseconds_t>(ns % 1000000000u);
    return tv;
}

// The timestamp precision of a capture file: nanoseconds for the 0xa1b23c4d magic (either byte
// order) and for pcapng (libpcap reads it at any resolution), microseconds otherwise.
int capture_precision(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    uint32_t magic = 0;
    if (f != nullptr) {
        if (std::fread(&magic, sizeof magic, 1, f) != 1) magic = 0;
        std::fclose(f);
    }
    return magic == 0xa1b23c4du || magic == 0x4d3cb2a1u ? PCAP_TSTAMP_PRECISION_NANO
                                                        : PCAP_TSTAMP_PRECISION_MICRO;
}

// A capture timestamp (nanoseconds) on the TSC's scale: the policers' and estimators' clock.
uint64_t capture_tsc(const timeval& ts, uint64_t hz) {
    __extension__ typedef unsigned __int128 u128;
    const u128 ns = static_cast<u128>(static_cast<uint64_t>(ts.tv_sec)) * 1000000000u +
                    static_cast<uint64_t>(ts.tv_usec);
    return static_cast<uint64_t>(ns * hz / 1000000000u);
}

// Which simulated worker receives a frame: RSS on the inner 5-tuple (non-IP: worker 0).
unsigned replay_worker(const rte_mbuf* m, unsigned workers) {
    if (workers <= 1) return 0;
    ParsedPacket pp;
    if (parse_packet(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, pp) != DropReason::none ||
        pp.ip_ver == 0)
        return 0;
    return flow_hash(pp) % workers;
}

}  // namespace

int cmd_replay(const ReplayOptions& o) {
    Config cfg;
    try {
        cfg = load_config(o.config);
    } catch (const ConfigError& e) {
        std::fprintf(stderr, "dscpgw: invalid config:\n%s\n", e.what());
        return 2;
    }
    for (const std::string& w : cfg.warnings) std::fprintf(stderr, "dscpgw: %s\n", w.c_str());
    int rx_port = o.port.empty() ? cfg.first_port(PortRole::inner) : cfg.port_index(o.port);
    if (rx_port < 0) {
        if (o.port.empty())
            std::fprintf(stderr,
                         "dscpgw replay: the config has no inner port; name one with --port\n");
        else
            std::fprintf(stderr, "dscpgw replay: --port %s: no such port in %s\n", o.port.c_str(),
                         o.config.c_str());
        return 2;
    }

    char errbuf[PCAP_ERRBUF_SIZE] = {};
    // Timestamps in nanoseconds whatever the file has (libpcap scales microseconds); the output
    // keeps the input's precision.
    const int precision = capture_precision(o.in);
    pcap_t* in =
        pcap_open_offline_with_tstamp_precision(o.in.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
    if (in == nullptr) {
        std::fprintf(stderr, "dscpgw replay: cannot read %s: %s\n", o.in.c_str(), errbuf);
        return 2;
    }
    if (pcap_datalink(in) != DLT_EN10MB) {
        std::fprintf(stderr,
                     "dscpgw replay: %s: link type %s, only Ethernet captures are supported\n",
                     o.in.c_str(), pcap_datalink_val_to_name(pcap_datalink(in)));
        pcap_close(in);
        return 2;
    }
    pcap_t* dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, precision);
    pcap_dumper_t* out = pcap_dump_open(dead, o.out.c_str());
    if (out == nullptr) {
        std::fprintf(stderr, "dscpgw replay: cannot write %s: %s\n", o.out.c_str(),
                     pcap_geterr(dead));
        pcap_close(dead);
        pcap_close(in);
        return 2;
    }

    std::string err;
    if (!eal_init(eal_args_offline(), err)) {
        std::fprintf(stderr, "dscpgw replay: %s\n", err.c_str());
        return 1;
    }
    int rc = 0;
    {
        std::vector<std::array<uint8_t, 6>> macs;
        for (size_t i = 0; i < cfg.ports.size(); ++i) macs.push_back(replay_mac(i));
        // Replay learns neighbors from ARP/ND in the capture but sends no probes of its own.
        auto neighbors_owner = std::make_unique<NeighborTable>();
        NeighborTable& neighbors = *neighbors_owner;
        std::unique_ptr<Snapshot> snap;
        try {
            snap = build_snapshot(cfg, macs, neighbors);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "dscpgw replay: %s\n", e.what());
            return 1;
        }
        // One buffer size that holds any capturable frame, as a jumbo-capable port's pool would.
        constexpr uint16_t kDataRoom = UINT16_MAX;
        rte_mempool* pool =
            rte_pktmbuf_pool_create("replay", 8 * kBurst - 1, 0, 0, kDataRoom, SOCKET_ID_ANY);
        // The egress queues hold frames while they wait: buffers for the usual sizes in numbers.
        bool queued = false;
        for (const auto& q : snap->scheds) queued |= q != nullptr;
        rte_mempool* small = queued
                                 ? rte_pktmbuf_pool_create("replay_q", 65535, 0, 0,
                                                           RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY)
                                 : nullptr;
        if (pool == nullptr || (queued && small == nullptr)) {
            std::fprintf(stderr, "dscpgw replay: cannot create mbuf pool: %s\n",
                         rte_strerror(rte_errno));
            return 1;
        }
        // Simulated workers: each its own counters, flow rates and burst state; the snapshot and
        // its policers are shared, as in `run`. Packets keep the capture's order.
        const unsigned nw = o.workers;
        std::vector<std::unique_ptr<WorkerStats>> stats;
        std::vector<std::unique_ptr<FlowRates>> rates;
        std::vector<std::unique_ptr<EncapCache>> encap;
        std::vector<std::unique_ptr<DecapFlowCache>> decap;
        std::vector<BurstState> bs(nw);
        const uint64_t hz = rte_get_tsc_hz();
        for (unsigned w = 0; w < nw; ++w) {
            stats.push_back(std::make_unique<WorkerStats>());
            rates.push_back(std::make_unique<FlowRates>(kAdaptiveFlows, hz));
            bs[w].rates = rates.back().get();
            encap.push_back(std::make_unique<EncapCache>());
            bs[w].encap = encap.back().get();
            decap.push_back(std::make_unique<DecapFlowCache>());
            bs[w].decap_flows = decap.back().get();
        }
        const uint32_t max_frame = kDataRoom - RTE_PKTMBUF_HEADROOM;
        struct Tx {
            uint16_t port;
            rte_mbuf* m;
            timeval ts;
            unsigned worker;
        };
        // Every scheduler sends what may leave by `now`; the frames in departure order.
        const auto advance = [&](uint64_t now, std::vector<Tx>& tx) {
            const size_t from = tx.size();
            std::vector<std::pair<uint64_t, size_t>> order;
            for (size_t p = 0; p < snap->scheds.size(); ++p) {
                PortSched* ps = snap->scheds[p].get();
                if (ps == nullptr) continue;
                Departure d[kBurst];
                for (unsigned got;
                     (got = ps->dequeue(*snap, static_cast<uint16_t>(p), now, d, kBurst, *stats[0],
                                        stats[0]->bank[snap->bank])) != 0;)
                    for (unsigned i = 0; i < got; ++i) {
                        order.emplace_back(d[i].time, tx.size());
                        tx.push_back(
                            {static_cast<uint16_t>(p), d[i].m, tsc_to_ts(d[i].time, hz), 0});
                    }
            }
            if (order.size() < 2) return;
            std::stable_sort(order.begin(), order.end(),
                             [](const auto& a, const auto& b) { return a.first < b.first; });
            std::vector<Tx> sorted;
            for (const auto& [t, i] : order) sorted.push_back(tx[i]);
            std::copy(sorted.begin(), sorted.end(), tx.begin() + static_cast<ptrdiff_t>(from));
        };
        const auto write = [&](std::vector<Tx>& tx) {
            for (const Tx& t : tx) {
                pcap_pkthdr ph{};
                ph.ts = t.ts;
                // The dumper writes tv_usec as is: nanoseconds into a nanosecond file.
                if (precision == PCAP_TSTAMP_PRECISION_MICRO) ph.ts.tv_usec /= 1000;
                ph.caplen = ph.len = t.m->pkt_len;
                pcap_dump(reinterpret_cast<u_char*>(out), &ph,
                          rte_pktmbuf_mtod(t.m, const u_char*));
                stats[t.worker]->port[PortCounter::tx_packets][t.port].inc();
                stats[t.worker]->port[PortCounter::tx_bytes][t.port].add(t.m->pkt_len);
                rte_pktmbuf_free(t.m);
            }
            tx.clear();
        };

        uint64_t index = 0, skipped = 0;
        bool done = false;
        while (!done) {
            rte_mbuf* burst[kBurst];
            pcap_pkthdr hdrs[kBurst];
            uint64_t idxs[kBurst];
            uint64_t times[kBurst];
            uint16_t n = 0;
            while (n < kBurst) {
                pcap_pkthdr* h;
                const u_char* bytes;
                const int r = pcap_next_ex(in, &h, &bytes);
                if (r != 1) {
                    if (r == PCAP_ERROR) {
                        std::fprintf(stderr, "dscpgw replay: %s: %s\n", o.in.c_str(),
                                     pcap_geterr(in));
                        rc = 1;
                    }
                    done = true;
                    break;
                }
                ++index;
                if (h->caplen > max_frame) {
                    std::fprintf(stderr,
                                 "dscpgw replay: frame %" PRIu64
                                 " (%u bytes) exceeds the buffer size, skipped\n",
                                 index, h->caplen);
                    ++skipped;
                    continue;
                }
                rte_mbuf* m = nullptr;
                if (small != nullptr && h->caplen + kMaxOuterHdr <= RTE_MBUF_DEFAULT_DATAROOM)
                    m = rte_pktmbuf_alloc(small);
                if (m == nullptr) m = rte_pktmbuf_alloc(pool);
                if (m == nullptr) {
                    std::fprintf(stderr,
                                 "dscpgw replay: frame %" PRIu64
                                 ": out of buffers (the egress queues hold too many frames)\n",
                                 index);
                    return 1;
                }
                std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(h->caplen)), bytes,
                            h->caplen);
                hdrs[n] = *h;
                idxs[n] = index;
                times[n] = capture_tsc(h->ts, hz);
                burst[n++] = m;
            }
            if (n == 0) continue;
            std::vector<Tx> tx;
            // The observer runs for every packet, in order, before the sink may take it; its
            // running position tells the sink which input frame it got.
            uint16_t seen = 0;
            // Each frame a burst of its own, of the worker RSS gives it, at its capture time
            // (workers take the time once per burst: here every packet has its own).
            for (uint16_t k = 0; k < n; ++k) {
                const unsigned w = replay_worker(burst[k], nw);
                bs[w].now_tsc = times[k];
                // The queues first send what left before this frame arrived.
                advance(times[k], tx);
                std::string line;
                // The headers and ECN as received, from the live trace's own decoder.
                const FrameInfo hdr_in =
                    o.trace ? decode_frame(rte_pktmbuf_mtod(burst[k], const uint8_t*),
                                           burst[k]->data_len, burst[k]->pkt_len)
                            : FrameInfo{};
                const uint32_t in_len = burst[k]->pkt_len;
                std::string headers;
                process_burst(
                    *snap, static_cast<uint16_t>(rx_port), burst + k, 1, *stats[w], bs[w],
                    [&](uint16_t port, rte_mbuf* m, bool queue) {
                        PortSched* ps = snap->scheds[port].get();
                        if (!queue || ps == nullptr) {
                            tx.push_back({port, m, hdrs[seen - 1].ts, w});
                            return;
                        }
                        const EnqResult r =
                            ps->enqueue(*snap, port, m, times[k], stats[w]->bank[snap->bank]);
                        line += queue_trace(*snap, port, r);
                        if (dropped(r.action)) rte_pktmbuf_free(m);
                    },
                    [&](const rte_mbuf* m, const Verdict& v, const PacketNotes& notes) {
                        ++seen;
                        if (!o.trace) return;
                        const bool sent = v.drop == DropReason::none &&
                                          v.local != LocalReply::learned &&
                                          v.local != LocalReply::path_mtu;
                        const FrameInfo hdr_out =
                            sent ? decode_frame(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len,
                                                m->pkt_len)
                                 : FrameInfo{};
                        line = trace_line(idxs[seen - 1], *snap, v, notes,
                                          ecn_field(hdr_in.ecn, sent ? hdr_out.ecn : -1));
                        headers =
                            trace_headers(hdr_in, in_len, sent ? &hdr_out : nullptr, m->pkt_len);
                    });
                if (o.trace) std::printf("%s\n%s", line.c_str(), headers.c_str());
                // An idle queue sends the frame at once.
                advance(times[k], tx);
            }
            // Replay is its own control thread: it creates the neighbor entries workers asked for
            // (it sends no probes).
            neighbors.drain_requests(rte_rdtsc());
            if (done) advance(UINT64_MAX - 1, tx);  // What the queues still hold, as it leaves.
            write(tx);
        }
        pcap_dump_close(out);
        pcap_close(dead);
        pcap_close(in);
        std::printf("replayed %" PRIu64 " frames from %s as received on port %s%s\n",
                    index - skipped, o.in.c_str(),
                    cfg.ports[static_cast<size_t>(rx_port)].name.c_str(),
                    skipped ? " (some skipped, see above)" : "");
        std::vector<const WorkerStats*> ws;
        for (const auto& st : stats) ws.push_back(st.get());
        print_counters(stdout, *snap, ws);
        if (nw > 1) {
            std::printf("workers:\n");
            for (unsigned w = 0; w < nw; ++w)
                std::printf("  %-16u rx %" PRIu64 " pkts\n", w,
                            stats[w]->port[PortCounter::rx_packets][rx_port].get());
        }
        for (auto& q : snap->scheds) q.reset();  // Their frames go back to the pools first.
        rte_mempool_free(pool);
        rte_mempool_free(small);
    }
    rte_eal_cleanup();
    return rc;
}

}  // namespace dscpgw
