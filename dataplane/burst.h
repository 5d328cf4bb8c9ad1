// The mbuf glue around the per-packet path: one burst in, each packet handed to process_packet(),
// counters updated, survivors handed to a sink. Workers and `dscpgw replay` both run exactly this.
#pragma once

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_prefetch.h>

#include "dataplane/flow_table.h"
#include "dataplane/local.h"
#include "dataplane/pipeline.h"
#include "dataplane/stats.h"

namespace dscpgw {

inline constexpr uint16_t kBurst = 32;
inline constexpr uint16_t kPrefetchAhead = 4;

// Per-worker mutable state of the burst function: the ICMP error token bucket (RFC 1812 4.3.2.8
// and RFC 4443 2.4(f): ICMP errors must be rate-limited).
struct BurstState {
    uint64_t icmp_tokens = 0;
    uint64_t icmp_last_tsc = 0;
    FlowTable* flows = nullptr;  // The worker's RoCE conversations; none in replay.
    FlowRun flow_run;            // This burst's current conversation, not yet in `flows`.
    uint64_t now_tsc = 0;        // Set by the worker once per poll: the flows' timestamps.

    bool take_icmp_token(uint32_t rate) {
        if (rate == 0) return false;
        const uint64_t now = rte_rdtsc(), hz = rte_get_tsc_hz();
        if (icmp_last_tsc == 0) {
            icmp_last_tsc = now;
            icmp_tokens = rate;
        }
        const uint64_t earned = (now - icmp_last_tsc) * rate / hz;
        if (earned != 0) {
            icmp_tokens = std::min<uint64_t>(icmp_tokens + earned, rate);
            icmp_last_tsc = now;
        }
        if (icmp_tokens == 0) return false;
        --icmp_tokens;
        return true;
    }
};

// The headers of a frame: the first cache line, and on an outer port the second, where a
// tunnelled packet's inner headers are (from byte 50 over IPv4, 70 over IPv6).
inline void prefetch_headers(const rte_mbuf* m, bool outer) {
    const auto* d = rte_pktmbuf_mtod(m, const uint8_t*);
    rte_prefetch0(d);
    if (outer) rte_prefetch0(d + RTE_CACHE_LINE_SIZE);
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

// A RoCE packet that went through a tunnel (the pipeline noted where its IP header and BTH are):
// its CNPs counted per tunnel and direction, its conversation in the worker's flow table.
inline void account_roce(ConfigCounters& cc, BurstState& bs, const Verdict& v) {
    if (v.roce_bth == nullptr) return;
    const auto t = static_cast<size_t>(v.tunnel_id);
    const bool cnp = v.roce_bth[0] == kBthOpcodeCnp;
    if (cnp) (v.decap ? cc.cnp_decap : cc.cnp_encap)[t].inc();
    if (bs.flows != nullptr)
        bs.flows->add(bs.flow_run, v.roce_l3, v.roce_bth, v.tunnel_id, v.decap, cnp, bs.now_tsc);
}

// Per-burst accumulation of an indexed (packets, bytes) counter pair: consecutive packets of a
// burst mostly hit the same class and tunnel, so the shared counters are written once per run of
// equal indices rather than once per packet (house style: count in locals, flush once).
class RunCounter {
  public:
    RunCounter(Counter* pkts, Counter* bytes) : pkts_(pkts), bytes_(bytes) {}
    void add(size_t idx, uint64_t len) {
        if (idx != idx_) {
            flush();
            idx_ = idx;
        }
        ++n_;
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

// Sink: void operator()(uint16_t out_port, rte_mbuf* m). Observer: void operator()(const rte_mbuf*,
// const Verdict&), called for every packet after processing (a no-op in workers).
template <typename Sink, typename Observer>
inline void process_burst(const Snapshot& s, uint16_t rx_port, rte_mbuf** pkts, uint16_t n,
                          WorkerStats& st, BurstState& bs, Sink&& sink, Observer&& observe) {
    uint64_t rx_bytes = 0, rewrites = 0;
    ConfigCounters& cc = st.bank[s.bank];
    RunCounter classes(cc.class_pkts, cc.class_bytes), encaps(cc.encap_pkts, cc.encap_bytes),
        decaps(cc.decap_pkts, cc.decap_bytes);
    DecapCache decap_cache;  // This burst's only: the snapshot may change between bursts.
    const bool inner = s.ports[rx_port].role == PortRole::inner;
    for (uint16_t i = 0; i < n && i < kPrefetchAhead; ++i) prefetch_headers(pkts[i], !inner);
    for (uint16_t i = 0; i < n; ++i) {
        if (i + kPrefetchAhead < n) prefetch_headers(pkts[i + kPrefetchAhead], !inner);
        rte_mbuf* m = pkts[i];
        const uint32_t in_len = m->pkt_len;
        rx_bytes += in_len;
        Verdict v;
        if (unlikely(m->nb_segs != 1)) {
            v.drop = DropReason::multi_segment;
        } else {
            Frame f{rte_pktmbuf_mtod(m, uint8_t*), m->data_len, rte_pktmbuf_headroom(m)};
            if (inner && likely(encap_plain(s, rx_port, f, v))) {
                // The common case in few steps: marked and encapsulated, nothing else to decide.
                frame_to_mbuf(f, m);
                if (v.tx_udp6_cksum) set_udp6_cksum_offload(m);
                classes.add(v.class_id >= 0 ? static_cast<size_t>(v.class_id) : kNoClass, in_len);
                rewrites += v.dscp_rewritten;
                observe(static_cast<const rte_mbuf*>(m), v);
                account_roce(cc, bs, v);
                encaps.add(static_cast<size_t>(v.tunnel_id), m->pkt_len);
                sink(v.out_port, m);
                continue;
            }
            if (!inner && likely(decap_plain(s, rx_port, f, v, &decap_cache))) {
                frame_to_mbuf(f, m);
                observe(static_cast<const rte_mbuf*>(m), v);
                account_roce(cc, bs, v);
                decaps.add(static_cast<size_t>(v.tunnel_id), m->pkt_len);
                rewrites += v.dscp_rewritten;
                if (v.outer_remarked) cc.outer_dscp_remarked[static_cast<size_t>(v.tunnel_id)].inc();
                if (v.ce_marked) cc.ecn_ce_marked[static_cast<size_t>(v.tunnel_id)].inc();
                sink(v.out_port, m);
                continue;
            }
            v = inner ? process_inner_general(s, rx_port, f)
                      : process_outer_general(s, rx_port, f, &decap_cache);
            if (likely(v.drop == DropReason::none)) {  // Also true for local replies.
                frame_to_mbuf(f, m);
                if (v.tx_udp6_cksum) set_udp6_cksum_offload(m);
            }
        }
        // Class bytes are those of the packet as classified.
        if (!v.decap && v.class_id != -1)
            classes.add(static_cast<size_t>(v.class_id), in_len);
        else if (!v.decap && v.dscp_in >= 0)
            classes.add(kNoClass, in_len);
        rewrites += v.dscp_rewritten;
        observe(static_cast<const rte_mbuf*>(m), v);
        if (unlikely(v.local != LocalReply::none)) {
            st.local_replies[static_cast<size_t>(v.local)].inc();
            if (v.local == LocalReply::learned)
                rte_pktmbuf_free(m);
            else
                sink(v.out_port, m);
            continue;
        }
        if (unlikely(v.drop != DropReason::none)) {
            st.drops[static_cast<size_t>(v.drop)].inc();
            if (v.pmtu != 0) {
                if (bs.take_icmp_token(s.icmp_rate)) {
                    const PortConf& port = s.ports[rx_port];
                    Frame f{rte_pktmbuf_mtod(m, uint8_t*), m->data_len, rte_pktmbuf_headroom(m)};
                    if (make_too_big(port, port.has_icmp_src4 ? port.icmp_src4.data() : nullptr,
                                     port.has_icmp_src6 ? port.icmp_src6.data() : nullptr, v.pmtu,
                                     f)) {
                        frame_to_mbuf(f, m);
                        st.icmp_too_big_sent.inc();
                        sink(rx_port, m);
                        continue;
                    }
                } else {
                    st.icmp_rate_limited.inc();
                }
            }
            rte_pktmbuf_free(m);
            continue;
        }
        const size_t t = static_cast<size_t>(v.tunnel_id);
        account_roce(cc, bs, v);
        if (v.decap) {
            decaps.add(t, m->pkt_len);
            if (v.outer_remarked) cc.outer_dscp_remarked[t].inc();
            if (v.ce_marked) cc.ecn_ce_marked[t].inc();
        } else {
            encaps.add(t, m->pkt_len);
        }
        sink(v.out_port, m);
    }
    classes.flush();
    encaps.flush();
    decaps.flush();
    if (bs.flows != nullptr) bs.flows->flush(bs.flow_run, bs.now_tsc);
    if (rewrites != 0) st.dscp_rewrites.add(rewrites);
    st.rx_pkts[rx_port].add(n);
    st.rx_bytes[rx_port].add(rx_bytes);
}

struct NoObserver {
    void operator()(const rte_mbuf*, const Verdict&) const {}
};

}  // namespace dscpgw
