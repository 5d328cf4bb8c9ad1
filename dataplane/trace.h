// The live packet trace (`dscpgw ctl trace`): the control thread arms it with a count and filters;
// the workers record the next matching packets (headers in and out, class, DSCP, tunnel, colour,
// verdict) into slots the control thread reads. Off, it costs each RX burst one load of a line
// nobody writes and a predicted branch; on, a burst copies its input headers once and each
// recorded packet claims a slot with one atomic add.
#pragma once

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string_view>

#include "dataplane/pipeline.h"
#include "dataplane/snapshot.h"

namespace dscpgw {

inline constexpr size_t kTraceHeader = 128;  // Bytes of each frame kept, as received and as sent.
inline constexpr uint32_t kTraceMax = 1000;  // Packets one trace records at most.
inline constexpr size_t kTraceName = 32;     // Class and tunnel names, truncated.
inline constexpr uint16_t kTraceBurst = 32;  // The largest RX burst a traced burst may be.

struct TraceRecord {
    std::atomic<uint32_t> ready{0};  // Set (release) once the worker has filled the rest.
    uint16_t worker = 0, rx_port = 0, out_port = 0;
    DropReason drop = DropReason::none;
    LocalReply local = LocalReply::none;
    int16_t class_id = -1, tunnel_id = -1, dscp_in = -1, dscp_out = -1;
    int8_t colour = -1;  // The class policer's colour (0 green, 1 yellow, 2 red), -1 none.
    bool outer_path = false, outer_remarked = false, ce_marked = false;
    uint16_t pmtu = 0;
    uint64_t generation = 0;  // The configuration it was processed under.
    uint64_t tsc = 0;
    uint32_t in_len = 0, out_len = 0;
    uint16_t in_cap = 0, out_cap = 0;  // How much of in/out holds the frame (out: 0 if dropped).
    // A shaped port's egress queue: which, its depth before the packet, what it did (EnqAction:
    // queued, marked, drop_limit, drop_not_ect, drop_buffers); queue[0] == 0: not queued.
    uint8_t queue_action = 0;
    uint64_t queue_depth = 0;
    char cls[kTraceName] = {}, tunnel[kTraceName] = {}, queue[kTraceName] = {};
    uint8_t in[kTraceHeader] = {}, out[kTraceHeader] = {};
};

struct TraceShared {
    // Nonzero while armed: read by every worker once per RX burst, written only by arm/disarm.
    alignas(64) std::atomic<uint32_t> armed{0};
    // The filters and the count, written before `armed` (release).
    int32_t port = -1;  // Config port index the packets arrive on; -1: any.
    bool any_class = true;
    char cls[kTraceName] = {};
    uint32_t count = 0;
    // The next slot to claim: written only while armed.
    alignas(64) std::atomic<uint32_t> next{0};
    std::unique_ptr<TraceRecord[]> rec{new TraceRecord[kTraceMax]};
};

inline void trace_name(char (&dst)[kTraceName], std::string_view s) {
    const size_t n = std::min(s.size(), kTraceName - 1);
    std::memcpy(dst, s.data(), n);
    dst[n] = '\0';
}

// Records a traced burst left for the egress scheduler: they become ready once their queue is
// known (sched_run, in the same poll). Local to one worker.
struct TracePending {
    uint16_t n = 0;
    const rte_mbuf* m[kTraceBurst];
    TraceRecord* rec[kTraceBurst];

    // After the scheduler took (or dropped) `mb` into `queue` of `depth` bytes.
    void queued(const rte_mbuf* mb, std::string_view queue, uint64_t depth, uint8_t action) {
        for (uint16_t k = 0; k < n; ++k) {
            if (m[k] != mb) continue;
            TraceRecord& r = *rec[k];
            trace_name(r.queue, queue);
            r.queue_depth = depth;
            r.queue_action = action;
            r.ready.store(1, std::memory_order_release);
            m[k] = m[n - 1];
            rec[k] = rec[n - 1];
            --n;
            return;
        }
    }
    // What the scheduler did not see (none, normally): ready without a queue.
    void finish() {
        for (uint16_t k = 0; k < n; ++k) rec[k]->ready.store(1, std::memory_order_release);
        n = 0;
    }
};

// One traced RX burst: the input headers copied before processing, then, as the burst code's
// observer (called once per packet, in order, after processing), a slot filled for each packet
// that matches until the count is reached.
class TraceBurst {
  public:
    TraceBurst(TraceShared& t, const Snapshot& s, uint16_t worker, uint16_t rx_port,
               rte_mbuf* const* pkts, uint16_t n, TracePending& pending)
        : t_(t), s_(s), pending_(pending), worker_(worker), rx_port_(rx_port) {
        n_ = std::min(n, kTraceBurst);
        for (uint16_t k = 0; k < n_; ++k) {
            const rte_mbuf* m = pkts[k];
            in_cap_[k] = static_cast<uint16_t>(std::min<size_t>(m->data_len, kTraceHeader));
            in_len_[k] = m->pkt_len;
            std::memcpy(in_[k], rte_pktmbuf_mtod(m, const uint8_t*), in_cap_[k]);
        }
    }

    void operator()(const rte_mbuf* m, const Verdict& v, const PacketNotes& n) {
        const uint16_t k = i_++;
        if (k >= n_) return;
        const char* cls =
            n.class_id >= 0 ? s_.classes[static_cast<size_t>(n.class_id)].name.c_str() : nullptr;
        if (!t_.any_class && (cls == nullptr || std::strncmp(cls, t_.cls, kTraceName - 1) != 0))
            return;
        const uint32_t idx = t_.next.fetch_add(1, std::memory_order_relaxed);
        if (idx >= t_.count) return;
        if (idx + 1 == t_.count) t_.armed.store(0, std::memory_order_relaxed);  // The last one.
        TraceRecord& r = t_.rec[idx];
        r.worker = worker_;
        r.rx_port = rx_port_;
        r.out_port = v.out_port;
        r.drop = v.drop;
        r.local = v.local;
        r.pmtu = v.pmtu;
        r.class_id = n.class_id;
        r.tunnel_id = n.tunnel_id;
        r.dscp_in = n.dscp_in;
        r.dscp_out = n.dscp_out;
        r.colour = static_cast<int8_t>(n.colour());
        r.outer_path = n.outer_path;
        r.outer_remarked = n.outer_remarked;
        r.ce_marked = n.ce_marked;
        r.generation = s_.generation;
        r.tsc = rte_rdtsc();
        trace_name(r.cls, cls != nullptr ? std::string_view(cls) : std::string_view());
        trace_name(r.tunnel,
                   n.tunnel_id >= 0
                       ? std::string_view(s_.tunnels[static_cast<size_t>(n.tunnel_id)].name)
                       : std::string_view());
        r.in_len = in_len_[k];
        r.in_cap = in_cap_[k];
        std::memcpy(r.in, in_[k], in_cap_[k]);
        const bool sent = v.drop == DropReason::none && v.local != LocalReply::learned &&
                          v.local != LocalReply::path_mtu;
        r.out_len = sent ? m->pkt_len : 0;
        r.out_cap = sent ? static_cast<uint16_t>(std::min<size_t>(m->data_len, kTraceHeader)) : 0;
        std::memcpy(r.out, rte_pktmbuf_mtod(m, const uint8_t*), r.out_cap);
        r.queue[0] = '\0';
        r.queue_action = 0;
        r.queue_depth = 0;
        // Forwarded to a shaped port: ready once its egress queue is known.
        if (sent && v.local == LocalReply::none && (s_.shaped_ports >> v.out_port & 1u) != 0 &&
            pending_.n < kTraceBurst) {
            pending_.m[pending_.n] = m;
            pending_.rec[pending_.n++] = &r;
            return;
        }
        r.ready.store(1, std::memory_order_release);
    }

  private:
    TraceShared& t_;
    const Snapshot& s_;
    TracePending& pending_;
    uint16_t worker_, rx_port_;
    uint16_t n_ = 0, i_ = 0;
    uint16_t in_cap_[kTraceBurst];
    uint32_t in_len_[kTraceBurst];
    uint8_t in_[kTraceBurst][kTraceHeader];
};

}  // namespace dscpgw
