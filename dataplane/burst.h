// The mbuf glue around the per-packet path: one burst in, each packet handed to process_packet(),
// counters updated, survivors handed to a sink. Workers and `dscpgw replay` both run exactly this.
#pragma once

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include <algorithm>
#include <type_traits>

#include "dataplane/decap.h"
#include "dataplane/decap_hit.h"
#include "dataplane/encap.h"
#include "dataplane/encap_hit.h"
#include "dataplane/flow_table.h"
#include "dataplane/local.h"
#include "dataplane/qos.h"
#include "dataplane/sched.h"
#include "dataplane/stats.h"

namespace dscpgw {

inline constexpr uint16_t kBurst = 32;

// How many frames a worker asks of an RX queue next, given the length of the first frame its last
// burst from that queue held: about 32 KB of frames (kBurst under 2 KB, 16 under 4 KB, 8 under
// 8 KB), and kBurst again for jumbo frames. A PMD that copies frames into mbufs (net_pcap, memif,
// af_packet, vhost) leaves a burst's last frames in L1; a burst that fits there is still in L1
// when the packet path sums a frame (an IPv6 UDP checksum without the device's offload), where 32
// frames of 4 KB, 130 KB, are not. On the Zen 5 host (docs/performance.md), with software
// checksums: +6 % encap and +12-14 % decap at 2 and 4 KB; where nothing is summed within 2 %
// either way. Jumbo frames gain nothing: 8 a poll, 72 KB, do not fit (1-4 % lost), and 4 a poll
// gained 3-4 % with software checksums but lost 4-6 % without, the calls costing more than L1
// saves.
constexpr uint16_t rx_burst_for(uint32_t frame_len) {
    return frame_len < 2048 ? kBurst : frame_len < 4096 ? 16 : frame_len < 8192 ? 8 : kBurst;
}

// A token bucket of `rate` tokens per second, `rate` deep.
struct TokenBucket {
    uint64_t tokens = 0;
    uint64_t last_tsc = 0;

    bool take(uint32_t rate) {
        if (rate == 0) return false;
        const uint64_t now = rte_rdtsc(), hz = rte_get_tsc_hz();
        if (last_tsc == 0) {
            last_tsc = now;
            tokens = rate;
        }
        const uint64_t earned = (now - last_tsc) * rate / hz;
        if (earned != 0) {
            tokens = std::min<uint64_t>(tokens + earned, rate);
            last_tsc = now;
        }
        if (tokens == 0) return false;
        --tokens;
        return true;
    }
};

// The flow-cache hits not yet counted (EncapFlow, DecapFlow), counted per entry rather than per
// packet: the entry says everything the counters need (class, tunnel, marks, CNP, the
// conversation's addresses), so a hit adds its lengths to its entry's run (run_*) and the counters
// see each run once: when a packet of another destination QP takes the entry's run, before the
// slow way may refill (and so change) an entry, and at the end of the burst, or for a worker
// (BurstState::hold_runs) at flush_runs(). Interleaved queue pairs keep a run each. `flow`: the
// entries holding a run, each once (an entry is listed while its run_n is not 0), so room for
// every entry of the cache.
template <typename Flow>
struct HitRuns {
    static constexpr size_t kEntries = EncapCache::kWays << EncapCache::kSetBits;
    static_assert(kEntries == (DecapFlowCache::kWays << DecapFlowCache::kSetBits));
    uint16_t n = 0;
    Flow* flow[kEntries];
};

// Per-worker mutable state of the burst function: the ICMP token buckets ([gateway] icmp_rate
// each: RFC 1812 4.3.2.8 and RFC 4443 2.4(f) rate-limit errors; echo replies are limited alike,
// separately, so that pings cannot use up the errors path MTU discovery needs).
struct BurstState {
    TokenBucket icmp_errors, echo_replies;
    FlowTable* flows = nullptr;   // The worker's RoCE conversations; none in replay.
    FlowRuns flow_runs;           // This burst's conversations, not yet in `flows`.
    uint64_t now_tsc = 0;         // Set by the worker once per poll: the flows' timestamps.
    FlowRates* rates = nullptr;   // The worker's `adaptive` flow rates (policers run on now_tsc).
    EncapCache* encap = nullptr;  // The worker's inner IP flows (encap.h); none: no cache.
    DecapCache decap;             // The worker's last decapsulation-table hit.
    // The worker's tunnelled IP flows, over either underlay (decap.h); none: no cache.
    DecapFlowCache* decap_flows = nullptr;
    HitRuns<EncapFlow> encap_runs;  // Cache hits not yet counted.
    HitRuns<DecapFlow> decap_runs;
    // A worker keeps the runs across bursts (true), so that a flow's packets reach the counters
    // and the conversation table once every many bursts rather than once a burst, and counts them
    // in flush_runs(): at an idle poll, after kHoldPolls busy ones, before a burst under another
    // snapshot, and before its quiescent report (no run may outlive the snapshot whose counter
    // bank it counts in). False (replay, tests): at the end of each burst.
    bool hold_runs = false;
    const Snapshot* runs_snap = nullptr;  // Runs are held, made under this snapshot; none: none.
    uint8_t runs_bank = 0;                // Its counter bank.
    uint32_t runs_polls = 0;              // Busy polls since the first whose runs are held.

    HitRuns<EncapFlow>& runs(const EncapFlow*) { return encap_runs; }
    HitRuns<DecapFlow>& runs(const DecapFlow*) { return decap_runs; }
};

// The headers of a frame: the first cache line, and on an outer port the second, where a
// tunnelled packet's inner headers are (from byte 50 over IPv4, 70 over IPv6).
inline void prefetch_headers(const rte_mbuf* m, bool outer) {
    const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
    rte_prefetch0(d);
    if (outer) rte_prefetch0(d + RTE_CACHE_LINE_SIZE);
}

// The device's verdict on the outer checksums, as RxCksum bits: DPDK's own, one shift and a mask
// (the RX flags give NONE as GOOD | BAD, so the packet path's "good bit first" reads it as good).
inline uint8_t rx_cksum_bits(uint64_t ol) {
    static_assert(RTE_MBUF_F_RX_IP_CKSUM_GOOD == kRxIpGood << 3 &&
                  RTE_MBUF_F_RX_IP_CKSUM_BAD == kRxIpBad << 3 &&
                  RTE_MBUF_F_RX_IP_CKSUM_NONE ==
                      (RTE_MBUF_F_RX_IP_CKSUM_GOOD | RTE_MBUF_F_RX_IP_CKSUM_BAD));
    static_assert(RTE_MBUF_F_RX_L4_CKSUM_GOOD == kRxL4Good << 3 &&
                  RTE_MBUF_F_RX_L4_CKSUM_BAD == kRxL4Bad << 3 &&
                  RTE_MBUF_F_RX_L4_CKSUM_NONE ==
                      (RTE_MBUF_F_RX_L4_CKSUM_GOOD | RTE_MBUF_F_RX_L4_CKSUM_BAD));
    return static_cast<uint8_t>((ol >> 3) & (kRxIpGood | kRxIpBad | kRxL4Good | kRxL4Bad));
}

// Writes a processed Frame (moved start, new length) back into its single-segment mbuf.
inline void frame_to_mbuf(const Frame& f, rte_mbuf* m) {
    m->data_off = static_cast<uint16_t>(f.headroom);
    m->data_len = static_cast<uint16_t>(f.len);
    m->pkt_len = f.len;
}

// The outer IPv6 UDP checksum is the NIC's (the pseudo-header sum is in place).
inline void set_udp6_cksum_offload(rte_mbuf* m) {
    m->ol_flags =
        (m->ol_flags & ~RTE_MBUF_F_TX_OFFLOAD_MASK) | RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_UDP_CKSUM;
    m->l2_len = 14;
    m->l3_len = 40;
}

// Per-burst accumulation of an indexed (packets, bytes) counter pair: consecutive packets of a
// burst mostly hit the same class and tunnel, so the shared counters are written once per run of
// equal indices rather than once per packet (house style: count in locals, flush once).
class RunCounter {
  public:
    RunCounter(Counter* pkts, Counter* bytes) : pkts_(pkts), bytes_(bytes) {}
    void add(size_t idx, uint64_t len, uint64_t n = 1) {
        if (idx != idx_) {
            flush();
            idx_ = idx;
        }
        n_ += n;
        b_ += len;
    }
    void flush() {
        if (n_ == 0) return;
        pkts_[idx_].add(n_);
        bytes_[idx_].add(b_);
        n_ = b_ = 0;
    }

  private:
    Counter* pkts_;
    Counter* bytes_;
    size_t idx_ = 0;
    uint64_t n_ = 0, b_ = 0;
};

// The QoS stage's notes of an inner packet: colour, adaptive rule, DSCP from PCP. Out of line and
// given the counter blocks, not the BurstCounters: an object whose address escaped could no longer
// keep its running sums in registers.
__attribute__((noinline)) inline void count_qos(ConfigCounters& cc, WorkerStats& st,
                                                const PacketNotes& n) {
    if (n.colour() >= 0) {
        const auto c = static_cast<size_t>(n.colour());
        cc.policer[PolicerCounter::green_packets + c][n.policer].inc();
        cc.policer[PolicerCounter::green_bytes + c][n.policer].add(n.ip_len);
    }
    if (n.adaptive_rule() >= 0)
        cc.cls[ClassCounter::adaptive_hits][static_cast<size_t>(n.class_id)].inc();
    if (n.pcp_mapped) st.dataplane[DataplaneCounter::pcp_to_dscp][0].inc();
}

// The counters one burst writes, in locals until flush().
class BurstCounters {
  public:
    BurstCounters(WorkerStats& st, uint8_t bank)
        : st_(st),
          cc_(st.bank[bank]),
          classes_(cc_.cls[ClassCounter::packets], cc_.cls[ClassCounter::bytes]),
          encaps_(cc_.tunnel[TunnelCounter::encap_packets], cc_.tunnel[TunnelCounter::encap_bytes]),
          decaps_(cc_.tunnel[TunnelCounter::decap_packets],
                  cc_.tunnel[TunnelCounter::decap_bytes]) {}

    // Every packet, whatever became of it: its DSCP rewrite, and on the inner path (kOuter
    // false) its class, bytes as received; an IP packet no class matched counts as unclassified.
    template <bool kOuter>
    void processed(const PacketNotes& n, uint32_t in_len) {
        if (!kOuter && n.dscp_in >= 0) {
            classes_.add(n.class_id >= 0 ? static_cast<size_t>(n.class_id) : kNoClass, in_len);
            if (unlikely(n.qos_noted)) count_qos(cc_, st_, n);
        }
        rewrites_ += n.dscp_rewritten;
    }
    // A packet through a tunnel, as sent: the tunnel's counters, and for RoCE its CNPs and its
    // conversation in the worker's flow table.
    template <bool kOuter>
    void forwarded(const PacketNotes& n, uint32_t out_len, BurstState& bs) {
        const auto t = static_cast<size_t>(n.tunnel_id);
        if (kOuter) {
            decaps_.add(t, out_len);
            if (unlikely(n.qos_noted)) st_.dataplane[DataplaneCounter::pcp_rewrites][0].inc();
            if (n.outer_remarked) cc_.tunnel[TunnelCounter::outer_dscp_remarked][t].inc();
            if (n.ce_marked) cc_.tunnel[TunnelCounter::ecn_ce_marked][t].inc();
        } else {
            encaps_.add(t, out_len);
            if (n.outer_mapped) cc_.tunnel[TunnelCounter::outer_dscp_mapped][t].inc();
        }
        if (n.roce_bth == nullptr) return;
        const bool cnp = n.roce_bth[0] == kBthOpcodeCnp;
        if (cnp) cc_.tunnel[kOuter ? TunnelCounter::cnp_decap : TunnelCounter::cnp_encap][t].inc();
        if (bs.flows != nullptr)
            bs.flows->add(bs.flow_runs, n.roce_l3, n.roce_bth, n.tunnel_id, kOuter, cnp,
                          bs.now_tsc);
    }
    // A flow-cache hit (encap_hit(), decap_hit()) of `in_len` bytes as received, in its entry's
    // run.
    template <typename Hit>
    void hit(const Hit& h, uint32_t in_len, BurstState& bs) {
        auto& e = *h.flow;
        if (unlikely(e.run_n == 0 || e.run_qp != h.qp)) start_run(e, h.qp, bs);
        ++e.run_n;
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(e)>, EncapFlow>)
            e.run_bytes += uint64_t{in_len} << 32 | h.ip_len;
        else
            e.run_ip_bytes += h.ip_len;
    }
    // Every run of one direction's cache to the counters: at the end of the burst (held runs: at
    // flush_runs()), and before the slow way may refill (and so change) an entry holding a run.
    template <typename Flow>
    void hit_runs(HitRuns<Flow>& runs, BurstState& bs) {
        for (uint16_t i = 0; i < runs.n; ++i) end_run(*runs.flow[i], bs);
        runs.n = 0;
    }
    void local(LocalReply r) { st_.local[static_cast<size_t>(r)].inc(); }
    void path_mtu_lowered(size_t tunnel) {
        cc_.tunnel[TunnelCounter::path_mtu_lowered][tunnel].inc();
    }
    void drop(DropReason r) { st_.drops[static_cast<size_t>(r)].inc(); }
    void dataplane(size_t field) { st_.dataplane[field][0].inc(); }
    // The running sums to the counters.
    void flush() {
        classes_.flush();
        encaps_.flush();
        decaps_.flush();
        if (rewrites_ != 0) st_.dataplane[DataplaneCounter::dscp_rewrites][0].add(rewrites_);
        rewrites_ = 0;
    }
    // The same at the end of a burst of `n` packets from `rx_port`, with its port counters.
    void flush(uint16_t rx_port, uint16_t n, uint64_t rx_bytes) {
        flush();
        st_.port[PortCounter::rx_packets][rx_port].add(n);
        st_.port[PortCounter::rx_bytes][rx_port].add(rx_bytes);
    }

  private:
    // A run of `e` for destination QP `qp`: the entry's first of the burst, or after its run of
    // another QP.
    template <typename Flow>
    __attribute__((noinline)) void start_run(Flow& e, uint32_t qp, BurstState& bs) {
        if (e.run_n != 0) {
            end_run(e, bs);
        } else {
            HitRuns<Flow>& runs = bs.runs(&e);
            runs.flow[runs.n++] = &e;  // A packet each at most: process_burst() splits.
        }
        e.run_qp = qp;
    }
    // What processed<kOuter>() and forwarded<kOuter>() count of each packet, for the run's
    // packets. Out of line: inlined at the end of the burst loop it cost the hit 9 instructions.
    template <typename Flow>
    __attribute__((noinline)) void end_run(Flow& e, BurstState& bs) {
        constexpr bool kDecap = std::is_same_v<Flow, DecapFlow>;
        const uint32_t n = e.run_n;
        if (n == 0) return;
        uint32_t ip_bytes;
        if constexpr (kDecap)
            ip_bytes = e.run_ip_bytes;
        else
            ip_bytes = e.run_ip_bytes();
        const PacketNotes& notes = e.notes;
        const auto t = static_cast<size_t>(notes.tunnel_id);
        if (notes.dscp_rewritten) rewrites_ += n;
        if constexpr (kDecap) {
            // Each packet left as its inner Ethernet header (and a tagged LAN's tag) and IP packet.
            decaps_.add(t, ip_bytes + uint64_t{n} * e.l2_len(), n);
            if (unlikely(notes.qos_noted)) st_.dataplane[DataplaneCounter::pcp_rewrites][0].add(n);
            if (notes.outer_remarked) cc_.tunnel[TunnelCounter::outer_dscp_remarked][t].add(n);
            if (notes.ce_marked) cc_.tunnel[TunnelCounter::ecn_ce_marked][t].add(n);
        } else {
            if (notes.dscp_in >= 0)  // Always, for IPv4: as processed<false>() has it.
                classes_.add(notes.class_id >= 0 ? static_cast<size_t>(notes.class_id) : kNoClass,
                             e.run_in_bytes(), n);
            // Each packet left as the outer headers, its inner Ethernet header and its IP packet.
            encaps_.add(t, ip_bytes + uint64_t{n} * (e.hdr_len + wire::kEthLen), n);
            if (notes.outer_mapped) cc_.tunnel[TunnelCounter::outer_dscp_mapped][t].add(n);
        }
        if (e.roce) {
            const bool cnp = e.bth_opcode() == kBthOpcodeCnp;
            if (cnp)
                cc_.tunnel[kDecap ? TunnelCounter::cnp_decap : TunnelCounter::cnp_encap][t].add(n);
            if (bs.flows != nullptr) {
                if (const uint8_t* a6 = e.roce_addrs6(); unlikely(a6 != nullptr))
                    bs.flows->add6(bs.flow_runs, a6, e.run_qp, notes.tunnel_id, kDecap, n, ip_bytes,
                                   cnp ? n : 0, bs.now_tsc);
                else
                    bs.flows->add4(bs.flow_runs, e.roce_addrs(), e.run_qp, notes.tunnel_id, kDecap,
                                   n, ip_bytes, cnp ? n : 0, bs.now_tsc);
            }
        }
        e.run_n = 0;
        if constexpr (kDecap)
            e.run_ip_bytes = 0;
        else
            e.run_bytes = 0;
    }

    WorkerStats& st_;
    ConfigCounters& cc_;
    RunCounter classes_, encaps_, decaps_;
    uint64_t rewrites_ = 0;
};

// How long a worker holds its runs (BurstState::hold_runs) under traffic, in busy polls: the
// counters and the conversation table are this far behind the packets at most (64 polls of 32
// packets: about 70 us at 30 Mpps), and a reload waits as long for the worker's quiescent report.
// A poll receives kMaxPorts * kBurst packets at most, so a run stays under 65,536 packets
// (EncapFlow::run_n) and its bytes under 2^32 (65,535 each at most).
inline constexpr uint32_t kHoldPolls = 64;
static_assert(kHoldPolls * kMaxPorts * kBurst < 65536);

// Every held run to the counters of the bank it was made under, and to the conversation table
// (BurstState::hold_runs).
__attribute__((noinline)) inline void flush_runs(WorkerStats& st, BurstState& bs) {
    if (bs.runs_snap == nullptr) return;
    BurstCounters count(st, bs.runs_bank);
    if (bs.encap_runs.n != 0) count.hit_runs(bs.encap_runs, bs);
    if (bs.decap_runs.n != 0) count.hit_runs(bs.decap_runs, bs);
    count.flush();
    if (bs.flows != nullptr) bs.flows->flush(bs.flow_runs, bs.now_tsc);
    bs.runs_snap = nullptr;
    bs.runs_polls = 0;
}

// Turns a packet dropped too_big into the ICMP error its sender needs, within [gateway] icmp_rate;
// false: nothing to send (the caller frees the packet).
inline bool send_too_big(const Snapshot& s, uint16_t rx_port, rte_mbuf* m, uint16_t pmtu,
                         BurstCounters& count, BurstState& bs) {
    if (!bs.icmp_errors.take(s.icmp_rate)) {
        count.dataplane(DataplaneCounter::icmp_rate_limited);
        return false;
    }
    const PortConf& port = s.ports[rx_port];
    Frame f{rte_pktmbuf_mtod(m, uint8_t*), m->data_len, rte_pktmbuf_headroom(m)};
    if (!make_too_big(port, port.has_icmp_src4 ? port.icmp_src4.data() : nullptr,
                      port.has_icmp_src6 ? port.icmp_src6.data() : nullptr, pmtu, f)) {
        count.dataplane(DataplaneCounter::icmp_too_big_suppressed);
        return false;
    }
    frame_to_mbuf(f, m);
    count.dataplane(DataplaneCounter::icmp_too_big_sent);
    return true;
}

// The direction's flow-cache hit (decap_hit<kV6>(), encap_hit<kV6>()).
template <bool kOuter, bool kV6>
[[gnu::always_inline]] inline auto flow_cache_hit(uint16_t rx_port, Frame& f, BurstState& bs) {
    if constexpr (kOuter)
        return decap_fast::decap_hit<kV6>(rx_port, f, *bs.decap_flows);
    else
        return encap_fast::encap_hit<kV6>(rx_port, f, *bs.encap);
}

// Whether the direction's flow cache may hit in this burst: it has one, and (decap) it may hold
// flows (DecapFlowCache::useful). The cache bound to the burst's snapshot (bind_burst()).
template <bool kOuter>
inline bool burst_cached(const BurstState& bs) {
    if constexpr (kOuter)
        return bs.decap_flows != nullptr && bs.decap_flows->useful;
    else
        return bs.encap != nullptr;
}

// Before a burst under `s` (the snapshot may change between bursts): runs held under another
// snapshot counted in its bank, then the direction's caches bound to `s` (which may empty them).
// Returns burst_cached<kOuter>().
template <bool kOuter>
inline bool bind_burst(const Snapshot& s, WorkerStats& st, BurstState& bs) {
    if (unlikely(bs.runs_snap != nullptr && bs.runs_snap != &s)) flush_runs(st, bs);
    if constexpr (kOuter) {
        bs.decap.bind(s);
        if (bs.decap_flows != nullptr) decap_fast::decap_cache_bind(*bs.decap_flows, s);
    } else if (bs.encap != nullptr) {
        encap_fast::encap_cache_bind(*bs.encap, s);
    }
    return burst_cached<kOuter>(bs);
}

// The observer of workers: none, so that the burst loop builds no notes for it.
struct NoObserver {
    void operator()(const rte_mbuf*, const Verdict&, const PacketNotes&) const {}
};

// The burst loop for one direction (kOuter: from an outer port). Sink: void operator()(uint16_t
// out_port, rte_mbuf* m, bool queue), `queue`: the port's egress scheduler takes the packet (a
// shaped port, sched_note() written; never the gateway's own frames). Observer: void
// operator()(const rte_mbuf*, const Verdict&, const PacketNotes&), called for every packet after
// processing (a no-op in workers).
//
// kPlain: the burst's invariants the loop would otherwise test on every packet, settled once by
// process_burst(): the direction has a flow cache that may hold flows, and no port is shaped (so
// no hit is queued). Without it the same loop tests both per packet. kV6: the direction's cache
// may hold flows of inner IPv6 packets (EncapCache::v6, DecapFlowCache::in6), so its hits look
// for them too (encap_hit<true>(), decap_hit<true>()).
template <bool kOuter, bool kPlain, bool kV6 = false, typename Sink, typename Observer>
inline void process_burst_dir(const Snapshot& s, uint16_t rx_port, rte_mbuf** pkts, uint16_t n,
                              WorkerStats& st, BurstState& bs, Sink&& sink, Observer&& observe) {
    uint64_t rx_bytes = 0;
    BurstCounters count(st, s.bank);
    DecapCache& decap_cache = bs.decap;
    const bool cached = kPlain || burst_cached<kOuter>(bs);
    auto& hit_runs =
        bs.runs(static_cast<std::conditional_t<kOuter, DecapFlow, EncapFlow>*>(nullptr));
    // The whole burst's headers first: a loop of its own costs fewer instructions than a
    // look-ahead test in the packet loop, and leaves every load of the burst in flight.
    for (uint16_t i = 0; i < n; ++i) prefetch_headers(pkts[i], kOuter);
    // Walked by pointer: an index and a count lived on the stack here (no register left), two
    // instructions a packet more.
    rte_mbuf** const end = pkts + n;
    for (rte_mbuf** next = pkts; next != end; ++next) {
        rte_mbuf* m = *next;
        const uint32_t in_len = m->pkt_len;
        rx_bytes += in_len;
        // A flow-cache hit: counted in its entry's run (BurstCounters::hit()), its notes built
        // only for an observer.
        if (likely(cached && m->nb_segs == 1)) {
            Frame f{rte_pktmbuf_mtod(m, uint8_t*), m->data_len, rte_pktmbuf_headroom(m),
                    kOuter ? rx_cksum_bits(m->ol_flags) : uint8_t{0}};
            const auto h = flow_cache_hit<kOuter, kV6>(rx_port, f, bs);
            if (likely(h.flow != nullptr)) {
                const auto& e = *h.flow;
                frame_to_mbuf(f, m);
                if constexpr (!kOuter)
                    if (unlikely(e.offload)) set_udp6_cksum_offload(m);
                count.hit(h, in_len, bs);
                if constexpr (!std::is_same_v<std::remove_cvref_t<Observer>, NoObserver>) {
                    Outcome o;
                    if constexpr (kOuter)
                        decap_hit_outcome(e, f, o);
                    else
                        encap_hit_outcome(e, f, o);
                    observe(static_cast<const rte_mbuf*>(m), o, o);
                }
                const bool queue = !kPlain && (s.shaped_ports >> e.out_port & 1u);
                if (queue)
                    sched_note(m, kOuter ? kSchedDecap : kSchedEncap, e.notes.class_id,
                               e.notes.tunnel_id);
                sink(e.out_port, m, queue);
                continue;
            }
            if (hit_runs.n != 0) count.hit_runs(hit_runs, bs);
        }
        Outcome o;  // The verdict and the notes, both filled by the path.
        Verdict& v = o;
        PacketNotes& notes = o;
        bool plain = false;
        if (unlikely(m->nb_segs != 1)) {
            v.drop = DropReason::multi_segment;
        } else {
            Frame f{rte_pktmbuf_mtod(m, uint8_t*), m->data_len, rte_pktmbuf_headroom(m),
                    kOuter ? rx_cksum_bits(m->ol_flags) : uint8_t{0}};
            // The common case in few steps (the shortcut takes it or leaves it untouched): not a
            // hit (above), so the slow way, or without a cache the whole shortcut.
            if constexpr (kOuter)
                plain =
                    decap_slow(s, rx_port, f, o, &decap_cache, cached ? bs.decap_flows : nullptr);
            else
                plain = encap_slow(s, rx_port, f, o, bs.encap);
            if (unlikely(!plain)) {
                if constexpr (kOuter)
                    v = process_outer_general(s, rx_port, f, notes, &decap_cache);
                else
                    v = process_inner_general(s, rx_port, f, notes, QosClock{bs.now_tsc, bs.rates});
            }
            if (likely(plain) || v.drop == DropReason::none) {  // Also true for local replies.
                frame_to_mbuf(f, m);
                if (!kOuter && v.tx_udp6_cksum) set_udp6_cksum_offload(m);
            }
        }
        count.processed<kOuter>(notes, in_len);
        observe(static_cast<const rte_mbuf*>(m), v, notes);
        if (unlikely(!plain)) {
            if (v.local != LocalReply::none) {
                const bool echo =
                    v.local == LocalReply::icmp_echo || v.local == LocalReply::icmp6_echo;
                if (echo && !bs.echo_replies.take(s.icmp_rate)) {
                    count.dataplane(DataplaneCounter::echo_rate_limited);
                    rte_pktmbuf_free(m);
                    continue;
                }
                count.local(v.local);
                if (v.local == LocalReply::path_mtu && notes.tunnel_id >= 0)
                    count.path_mtu_lowered(static_cast<size_t>(notes.tunnel_id));
                if (v.local == LocalReply::learned || v.local == LocalReply::path_mtu) {
                    rte_pktmbuf_free(m);
                } else {
                    sink(v.out_port, m, false);  // The gateway's own: not queued on egress.
                }
                continue;
            }
            if (v.drop != DropReason::none) {
                count.drop(v.drop);
                if (v.pmtu != 0 && send_too_big(s, rx_port, m, v.pmtu, count, bs)) {
                    sink(rx_port, m, false);
                    continue;
                }
                rte_pktmbuf_free(m);
                continue;
            }
        }
        count.forwarded<kOuter>(notes, m->pkt_len, bs);
        // For the egress queues: what the packet is, so that they need not parse it again (only
        // a port with a scheduler reads it).
        const bool queue = s.shaped_ports >> v.out_port & 1u;
        if (queue)
            sched_note(m, kOuter ? kSchedDecap : kSchedEncap, notes.class_id, notes.tunnel_id);
        sink(v.out_port, m, queue);
    }
    if (hit_runs.n != 0) {
        if (!bs.hold_runs) {
            count.hit_runs(hit_runs, bs);
        } else if (bs.runs_snap == nullptr) {
            bs.runs_snap = &s;
            bs.runs_bank = s.bank;
        }
    }
    count.flush(rx_port, n, rx_bytes);
    if (bs.flows != nullptr) bs.flows->flush(bs.flow_runs, bs.now_tsc);
}

// process_burst_dir() in a body of its own.
template <bool kOuter, bool kPlain, bool kV6, typename Sink, typename Observer>
__attribute__((noinline)) void process_burst_apart(const Snapshot& s, uint16_t rx_port,
                                                   rte_mbuf** pkts, uint16_t n, WorkerStats& st,
                                                   BurstState& bs, Sink&& sink,
                                                   Observer&& observe) {
    process_burst_dir<kOuter, kPlain, kV6>(s, rx_port, pkts, n, st, bs, sink, observe);
}

// process_burst_dir()'s instance for a burst of `k` packets, kPlain and kV6 as settled for it,
// each in a body of its own: inlined into the worker loop, encap's usual one ran 12 instructions
// a packet more (callgrind-worker.py; the register allocation differs, not the code).
template <bool kOuter, typename Sink, typename Observer>
inline void process_burst_as(bool plain, bool v6, const Snapshot& s, uint16_t rx_port,
                             rte_mbuf** pkts, uint16_t k, WorkerStats& st, BurstState& bs,
                             Sink&& sink, Observer&& observe) {
    if (plain && !v6) {
        process_burst_apart<kOuter, true, false>(s, rx_port, pkts, k, st, bs, sink, observe);
    } else if (plain) {
        process_burst_apart<kOuter, true, true>(s, rx_port, pkts, k, st, bs, sink, observe);
    } else if (!v6) {
        process_burst_apart<kOuter, false, false>(s, rx_port, pkts, k, st, bs, sink, observe);
    } else {
        process_burst_apart<kOuter, false, true>(s, rx_port, pkts, k, st, bs, sink, observe);
    }
}

// One burst from `rx_port` (any length), each packet through the per-packet path, counted, and
// what survives handed to the sink. Workers and `dscpgw replay` both run exactly this.
template <typename Sink, typename Observer>
inline void process_burst(const Snapshot& s, uint16_t rx_port, rte_mbuf** pkts, uint16_t n,
                          WorkerStats& st, BurstState& bs, Sink&& sink, Observer&& observe) {
    // kBurst at a time at most, as a worker receives them.
    for (uint16_t done = 0; done < n;) {
        const auto k = static_cast<uint16_t>(std::min<int>(n - done, kBurst));
        if (s.ports[rx_port].role == PortRole::inner) {
            const bool plain = bind_burst<false>(s, st, bs) && s.shaped_ports == 0;
            process_burst_as<false>(plain, bs.encap != nullptr && bs.encap->v6, s, rx_port,
                                    pkts + done, k, st, bs, sink, observe);
        } else {
            const bool plain = bind_burst<true>(s, st, bs) && s.shaped_ports == 0;
            process_burst_as<true>(plain, bs.decap_flows != nullptr && bs.decap_flows->in6, s,
                                   rx_port, pkts + done, k, st, bs, sink, observe);
        }
        done = static_cast<uint16_t>(done + k);
    }
}

}  // namespace dscpgw
