// Border QoS II: the egress scheduler (dataplane/sched.h) on a nanosecond clock, with the queues of
// tests/golden/egress.toml and frames the pipeline encapsulated: the GCRA shaper's exactness, an
// idle link, strict priority and its cap, DRR shares, ECN marking and limits, the depth gauges,
// and a reload that keeps or replaces the scheduler with its queued packets.
#include <gtest/gtest.h>
#include <rte_mbuf.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "dataplane/neighbor.h"
#include "dataplane/pipeline.h"
#include "dataplane/sched.h"
#include "dataplane/wire.h"
#include "tests/unit/builder.h"

namespace dscpgw {
namespace {

using test::Bytes;
using test::PacketBuilder;

constexpr uint64_t kHz = 1000000000;  // The scheduler's clock: nanoseconds.
constexpr uint16_t kWan = 1;

std::string egress_toml() {
    std::ifstream f(std::string(DSCPGW_SOURCE_ROOT) + "/tests/golden/egress.toml");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

// An inner RoCE frame of `ip_len` IP bytes from the LAN to the tunnel "cloud" (10.20/16) or
// "capped" (10.30/16).
Bytes roce(size_t ip_len, uint8_t tos, uint8_t opcode = 4, const char* dst = "10.20.0.9") {
    return PacketBuilder()
        .eth()
        .ipv4("10.10.0.5", dst, tos)
        .udp(49152, 4791)
        .bth(opcode)
        .payload(ip_len - 20 - 8 - 12)
        .build();
}

// An ECT(0) UDP frame of `ip_len` IP bytes that no class takes (the "*" queue's).
Bytes other_udp(size_t ip_len) {
    return PacketBuilder()
        .eth()
        .ipv4("10.10.0.5", "10.20.0.9", 2)
        .udp(1234, 5001)
        .payload(ip_len - 28)
        .build();
}

class Sched : public ::testing::Test {
  protected:
    void SetUp() override {
        pool_ = rte_pktmbuf_pool_create(("unit_sched_" + std::to_string(++n_)).c_str(), 16383, 0, 0,
                                        2048 + RTE_PKTMBUF_HEADROOM, 0);
        ASSERT_NE(pool_, nullptr);
        start_ = rte_mempool_avail_count(pool_);
        load(egress_toml());
        st_ = std::make_unique<WorkerStats>();
    }
    void TearDown() override {
        snap_.reset();
        EXPECT_EQ(rte_mempool_avail_count(pool_), start_) << "every mbuf back in the pool";
        rte_mempool_free(pool_);
    }
    void load(const std::string& text) {
        cfg_ = parse_config(text, "egress.toml");
        snap_ = build_snapshot(cfg_, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, nt_);
    }
    // The inner frame through the pipeline (class, encapsulation), into an mbuf noted as the burst
    // glue notes it.
    rte_mbuf* encap(const Bytes& in) {
        test::TestFrame t(in);
        const Outcome o = process_packet(*snap_, 0, t.frame);
        EXPECT_EQ(o.drop, DropReason::none);
        EXPECT_EQ(o.out_port, kWan);
        rte_mbuf* m = rte_pktmbuf_alloc(pool_);
        EXPECT_NE(m, nullptr);
        std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(t.frame.len)), t.frame.data,
                    t.frame.len);
        sched_note(m, kSchedEncap, o.class_id, o.tunnel_id);
        return m;
    }
    ConfigCounters& cc() { return st_->bank[0]; }
    EnqResult enq(PortSched& ps, rte_mbuf* m, uint64_t now) {
        const EnqResult r = ps.enqueue(*snap_, kWan, m, now, cc());
        if (r.action != EnqAction::queued && r.action != EnqAction::marked) rte_pktmbuf_free(m);
        return r;
    }
    // Everything that may leave by `now`, freed; departure times and the queue each came from.
    std::vector<Departure> drain(PortSched& ps, uint64_t now, unsigned max = 1u << 20) {
        std::vector<Departure> all;
        Departure d[64];
        while (all.size() < max) {
            const unsigned n = ps.dequeue(
                *snap_, kWan, now, d, static_cast<unsigned>(std::min<size_t>(64, max - all.size())),
                *st_, cc());
            if (n == 0) break;
            all.insert(all.end(), d, d + n);
        }
        return all;
    }
    void free_all(std::vector<Departure>& ds) {
        for (Departure& d : ds) rte_pktmbuf_free(d.m);
        ds.clear();
    }
    uint64_t queue_counter(size_t f, size_t q) {
        return cc().queue[f][snap_->sched_plans[kWan].first_queue + q].get();
    }

    static inline int n_ = 0;
    rte_mempool* pool_ = nullptr;
    unsigned start_ = 0;
    Config cfg_;
    NeighborTable nt_;
    std::unique_ptr<Snapshot> snap_;
    std::unique_ptr<WorkerStats> st_;
};

// 100 Mbit/s is 80 ns a byte: 10000 frames of 1000 bytes after a burst of 16 kB leave exactly
// 80 us apart, the last at (10000 - 16) x 80 us without drift (32 fractional bits).
TEST(Shaper, GcraExactOverManyFrames) {
    Shaper s;
    s.set(100000000, 16000, kHz);
    uint64_t t = 0, last = 0;
    unsigned at_once = 0;
    for (int i = 0; i < 10000; ++i) {
        t = std::max(t, s.eligible(1000));
        if (t == 0) ++at_once;
        s.charge(t, 1000);
        last = t;
    }
    EXPECT_EQ(at_once, 16u) << "the burst: 16 frames at once";
    EXPECT_EQ(last, (10000u - 16u) * 80000u);
    // An odd rate: 3 bytes per 7 ns...; 1e6 frames of 64 bytes at 1 Gbit/s = 512 ns each.
    Shaper g;
    g.set(1000000000, 64, kHz);
    t = 0;
    for (int i = 0; i < 1000000; ++i) {
        t = std::max(t, g.eligible(64));
        g.charge(t, 64);
    }
    EXPECT_EQ(t, 999999u * 512u);
}

TEST_F(Sched, IdleLinkSendsAtOnce) {
    PortSched ps(*snap_, kWan, kHz);
    const uint64_t t0 = 5000000;
    const EnqResult r = enq(ps, encap(roce(1000, 2)), t0);
    EXPECT_EQ(r.action, EnqAction::queued);
    EXPECT_EQ(r.depth, 0u);
    auto out = drain(ps, t0);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].time, t0) << "no added latency";
    EXPECT_EQ(ps.backlog(), 0u);
    free_all(out);
}

// A CNP queued behind 100 data frames leaves next (strict), and CNPs beyond the strict queue's
// cap (10 Mbit/s, bucket = limit / 100 = 2560 bytes) wait for it.
TEST_F(Sched, StrictFirstThenCappedByMaxRate) {
    PortSched ps(*snap_, kWan, kHz);
    const uint64_t t0 = 1000000;
    for (int i = 0; i < 100; ++i) ASSERT_EQ(enq(ps, encap(roce(1000, 2)), t0).queue, 1);
    std::vector<EnqResult> cnp;
    for (int i = 0; i < 20; ++i) cnp.push_back(enq(ps, encap(roce(1000, 2, 0x81)), t0));
    EXPECT_EQ(cnp[0].queue, 0) << "roce-cnp -> cnp";
    auto out = drain(ps, t0 + 1000000000);
    ASSERT_EQ(out.size(), 120u);
    std::vector<uint64_t> cnp_times;
    for (const Departure& d : out) {
        const uint8_t outer_dscp = rte_pktmbuf_mtod(d.m, uint8_t*)[15] >> 2;
        if (outer_dscp == 48) cnp_times.push_back(d.time);
    }
    ASSERT_EQ(cnp_times.size(), 20u);
    const double frame = out[0].m->pkt_len;  // Every frame here has the same length.
    // The port's 16 kB burst lets the first data frames leave at once, as they come (nothing is
    // queued then); from the first frame that had to wait on, CNPs go ahead of every queued one.
    size_t at_once = 0;
    while (at_once < out.size() && out[at_once].time == t0) ++at_once;
    EXPECT_GT(at_once, 0u);
    EXPECT_LE(at_once, static_cast<size_t>(16000 / frame) + 1);
    EXPECT_EQ(rte_pktmbuf_mtod(out[at_once].m, uint8_t*)[15] >> 2, 48)
        << "the first frame that waited is a CNP, ahead of ~90 queued data frames";
    EXPECT_LE(static_cast<double>(cnp_times[0] - t0), (16000 + frame) * 80.0)
        << "within the burst and one frame";
    // Capped: after the cap's bucket (limit / 100 = 2560 bytes, two frames), one frame's worth
    // of tokens at 10 Mbit/s (800 ns a byte) per CNP on average; data frames fill the gaps.
    EXPECT_NEAR(static_cast<double>(cnp_times[19] - cnp_times[3]) / 16.0, frame * 800.0,
                frame * 800.0 * 0.01);
    // The port shaper: never ahead of 100 Mbit/s (80 ns a byte) after its 16 kB burst, and busy
    // while data is queued: the last data frame leaves as the port's rate says.
    const double burst_frames = 16000 / frame;
    size_t last_data = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        EXPECT_GE(static_cast<double>(out[i].time - t0) + 1.0,
                  (static_cast<double>(i + 1) - burst_frames) * frame * 80.0)
            << "departure " << i << " ahead of the port's rate";
        if (rte_pktmbuf_mtod(out[i].m, uint8_t*)[15] >> 2 == 26) last_data = i;
    }
    EXPECT_NEAR(static_cast<double>(out[last_data].time - t0),
                (static_cast<double>(last_data + 1) - burst_frames) * frame * 80.0,
                2 * frame * 80.0);
    EXPECT_EQ(queue_counter(QueueCounter::packets, 0), 20u);
    EXPECT_EQ(queue_counter(QueueCounter::packets, 1), 100u);
    EXPECT_EQ(queue_counter(QueueCounter::bytes, 1), static_cast<uint64_t>(100 * frame));
    free_all(out);
}

// Weights 70/30 under overload of both, frames of different sizes (bytes count, not packets).
TEST_F(Sched, DrrSharesByBytes) {
    PortSched ps(*snap_, kWan, kHz);
    const uint64_t t0 = 1000000;
    // Data 1000-byte frames, everything else (a UDP port no class takes) 300-byte ones.
    for (int i = 0; i < 3000; ++i) enq(ps, encap(roce(1000, 2)), t0);
    const Bytes other = other_udp(300);
    for (int i = 0; i < 3000; ++i) ASSERT_EQ(enq(ps, encap(other), t0).queue, 2);
    // 40 ms at 100 Mbit/s: 500 kB, neither queue runs dry.
    auto out = drain(ps, t0 + 40000000);
    std::map<uint8_t, uint64_t> bytes;
    for (const Departure& d : out) bytes[rte_pktmbuf_mtod(d.m, uint8_t*)[15] >> 2] += d.m->pkt_len;
    const double roce_share =
        static_cast<double>(bytes[26]) / static_cast<double>(bytes[26] + bytes[0]);
    EXPECT_NEAR(roce_share, 0.70, 0.70 * 0.02) << bytes[26] << " / " << bytes[0];
    EXPECT_NEAR(static_cast<double>(bytes[26] + bytes[0]), 500000.0 + 16000.0, 2000.0)
        << "the port's rate over 40 ms, plus its burst";
    free_all(out);
    auto rest = drain(ps, UINT64_MAX / 2);
    EXPECT_EQ(ps.backlog(), 0u);
    free_all(rest);
}

// The roce queue: ECN from 40 kB (p = 0) to 60 kB (p = 1); Not-ECT dropped from 60 kB; the
// default queue: everything dropped past its 1 MB limit. Nothing dequeues meanwhile.
TEST_F(Sched, EcnRampNotEctDropsAndLimit) {
    PortSched ps(*snap_, kWan, kHz);
    const uint64_t t0 = 1000000;
    uint64_t below = 0, ramp_marked = 0, ramp = 0, above_marked = 0, above = 0;
    rte_mbuf* first_marked = nullptr;
    while (true) {
        rte_mbuf* m = encap(roce(1000, 2));  // ECT(0)
        const EnqResult r = enq(ps, m, t0);
        ASSERT_EQ(r.queue, 1);
        if (r.depth >= 200000) break;
        const bool marked = r.action == EnqAction::marked;
        if (marked && first_marked == nullptr) first_marked = m;
        if (r.depth <= 40000) {
            below += marked;
        } else if (r.depth < 60000) {
            ++ramp;
            ramp_marked += marked;
        } else {
            ++above;
            above_marked += marked;
        }
    }
    EXPECT_EQ(below, 0u) << "no marks at or below min";
    EXPECT_GT(ramp_marked, 0u);
    EXPECT_LT(ramp_marked, ramp) << "marks with rising probability between min and max";
    EXPECT_EQ(above_marked, above) << "every ECT packet marked from max";
    ASSERT_NE(first_marked, nullptr);
    // CE on the outer header and on the inner one (Geneve over IPv4: 14 + 20 + 8 + 8 + 14).
    const uint8_t* d = rte_pktmbuf_mtod(first_marked, uint8_t*);
    EXPECT_EQ(d[15] & 3, 3) << "outer CE";
    const size_t inner_ip = snap_->tunnels[0].hdr_len + 14;
    EXPECT_EQ(d[inner_ip + 1] & 3, 3) << "inner CE";
    EXPECT_EQ(d[inner_ip + 1] >> 2, 26) << "DSCP kept";
    // Both IPv4 header checksums still verify.
    for (const size_t ip : {size_t{14}, inner_ip}) {
        uint32_t sum = 0;
        for (size_t i = 0; i < 20; i += 2) sum += uint32_t{d[ip + i]} << 8 | d[ip + i + 1];
        while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
        EXPECT_EQ(sum, 0xffffu) << "IPv4 checksum at " << ip;
    }
    EXPECT_EQ(enq(ps, encap(roce(1000, 0)), t0).action, EnqAction::drop_not_ect);
    EXPECT_EQ(queue_counter(QueueCounter::drop_not_ect, 1), 1u);
    EXPECT_EQ(queue_counter(QueueCounter::ce_marked, 1), ramp_marked + above_marked + 1);
    // The default queue's limit: 1 MB of Ethernet frames, then every frame dropped.
    const Bytes other = other_udp(1000);
    uint64_t queued = 0;
    EnqResult r;
    while ((r = enq(ps, encap(other), t0)).action == EnqAction::queued) ++queued;
    ASSERT_GT(queued, 0u);
    const uint64_t frame = r.depth / queued;
    EXPECT_EQ(r.action, EnqAction::drop_limit);
    EXPECT_EQ(r.depth, queued * frame);
    EXPECT_LE(r.depth, 1000000u);
    EXPECT_GT(r.depth + frame, 1000000u) << "dropped only when the frame would not fit";
    EXPECT_EQ(ps.depth_bytes(2), r.depth);
    EXPECT_EQ(ps.depth_packets(2), queued);
    EXPECT_EQ(queue_counter(QueueCounter::drop_limit, 2), 1u);
    // The peak gauge: the largest depth since the last take, then reset to the depth now.
    EXPECT_EQ(ps.take_peak(1), ps.depth_bytes(1));
    auto out = drain(ps, UINT64_MAX / 2);
    EXPECT_EQ(ps.depth_bytes(1), 0u);
    const uint64_t peak = ps.peak_bytes(1);
    EXPECT_GT(peak, 0u) << "the peak survives until taken";
    EXPECT_EQ(ps.take_peak(1), peak);
    EXPECT_EQ(ps.peak_bytes(1), 0u);
    free_all(out);
}

// Small frames reach the port's buffer budget before any byte limit: the queues' limits (5.256 MB
// here) in 512-byte frames, 10265 buffers; past it every packet is dropped as "buffers", so a full
// queue of 100-byte frames never drains the pool the ports receive into.
TEST_F(Sched, SmallFramesStopAtTheBufferBudget) {
    PortSched ps(*snap_, kWan, kHz);
    const uint64_t budget = sched_buffers(256000 + 4000000 + 1000000);
    ASSERT_EQ(budget, 10265u);
    uint64_t kept = 0, dropped_buffers = 0;
    for (uint64_t i = 0; i < budget + 50; ++i) {
        const EnqResult r = enq(ps, encap(roce(60, 2)), 1000);
        ASSERT_EQ(r.queue, 1);
        kept += r.action == EnqAction::queued || r.action == EnqAction::marked;
        dropped_buffers += r.action == EnqAction::drop_buffers;
    }
    EXPECT_EQ(kept, budget);
    EXPECT_EQ(dropped_buffers, 50u);
    EXPECT_LT(ps.depth_bytes(1), 4000000u / 2) << "well under the byte limit";
    EXPECT_EQ(queue_counter(QueueCounter::drop_buffers, 1), 50u);
    auto out = drain(ps, UINT64_MAX / 2);
    EXPECT_EQ(out.size(), budget);
    free_all(out);
}

// The gateway's own frames (no note) bypass the queues.
TEST_F(Sched, OwnFramesBypass) {
    PortSched ps(*snap_, kWan, kHz);
    rte_mbuf* m = encap(roce(200, 2));
    sched_note(m, kSchedOther, -1, -1);
    EXPECT_EQ(ps.enqueue(*snap_, kWan, m, 1, cc()).action, EnqAction::bypass);
    EXPECT_EQ(ps.backlog(), 0u);
    rte_pktmbuf_free(m);
}

// A tunnel shaped to 20 Mbit/s inside the 100 Mbit/s port holds up only itself: the other
// tunnel's frames in the same queue take the rest of the port.
TEST_F(Sched, TunnelShaperHoldsOnlyItsTunnel) {
    PortSched ps(*snap_, kWan, kHz);
    const uint64_t t0 = 1000000;
    for (int i = 0; i < 2000; ++i) {
        enq(ps, encap(roce(1000, 2, 4, "10.30.0.9")), t0);  // capped
        enq(ps, encap(roce(1000, 2, 4, "10.20.0.9")), t0);  // cloud
    }
    auto out = drain(ps, t0 + 100000000);  // 100 ms
    std::map<int, uint64_t> bytes;
    for (const Departure& d : out) {
        // The outer destination tells the tunnels apart: 198.18.7.8 is "capped".
        bytes[rte_pktmbuf_mtod(d.m, uint8_t*)[14 + 19]] += d.m->pkt_len;
    }
    const double capped = static_cast<double>(bytes[8]) * 8 / 0.1,
                 cloud = static_cast<double>(bytes[7]) * 8 / 0.1;
    EXPECT_NEAR(capped, 20e6, 20e6 * 0.02 + 8000 * 8 / 0.1) << "20 Mbit/s and its 8 kB burst";
    EXPECT_NEAR(capped + cloud, 100e6, 100e6 * 0.02 + 16000 * 8 / 0.1) << "the port's rate";
    free_all(out);
    auto rest = drain(ps, UINT64_MAX / 2);
    free_all(rest);
}

// A reload with the same policy keeps the scheduler (its packets and buckets); a changed one gets
// a new scheduler and the old one's packets, by queue name, in order, with their enqueue times.
TEST_F(Sched, ReloadKeepsOrMigratesTheBacklog) {
    const uint64_t t0 = 1000000;
    std::shared_ptr<PortSched> old = snap_->scheds[kWan];
    ASSERT_NE(old, nullptr);
    old->lock();
    for (int i = 0; i < 30; ++i) old->enqueue(*snap_, kWan, encap(roce(1000, 2)), t0, cc());
    for (int i = 0; i < 5; ++i) old->enqueue(*snap_, kWan, encap(roce(1000, 2, 0x81)), t0, cc());
    old->unlock();
    ASSERT_EQ(old->backlog(), 35u);
    // The first data frames left at once (the port's burst) and wait to be taken; the rest queue.
    const uint64_t at_once = 30 - old->depth_packets(1);
    ASSERT_GT(at_once, 0u);
    ASSERT_EQ(old->depth_packets(0), 5u);

    NeighborTable nt2;
    std::unique_ptr<Snapshot> same =
        build_snapshot(cfg_, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, nt2);
    EXPECT_EQ(carry_scheds(*snap_, *same), 1u);
    EXPECT_EQ(same->scheds[kWan].get(), old.get()) << "unchanged: the same scheduler";
    migrate_backlogs(*snap_, *same);
    EXPECT_EQ(old->backlog(), 35u) << "nothing to move";

    std::string text = egress_toml();
    const size_t w = text.find("weight = 70");
    ASSERT_NE(w, std::string::npos);
    text.replace(w, 11, "weight = 60");
    const Config changed_cfg = parse_config(text, "egress.toml");
    NeighborTable nt3;
    std::unique_ptr<Snapshot> changed =
        build_snapshot(changed_cfg, {{2, 0, 0, 0, 0, 9}, {2, 0, 0, 0, 0, 8}}, nt3);
    EXPECT_EQ(carry_scheds(*same, *changed), 0u) << "a changed weight: a new scheduler";
    PortSched* fresh = changed->scheds[kWan].get();
    ASSERT_NE(fresh, old.get());
    migrate_backlogs(*same, *changed);
    EXPECT_EQ(old->backlog(), 0u);
    EXPECT_EQ(fresh->backlog(), 35u);
    EXPECT_EQ(fresh->depth_packets(0), 5u) << "the CNPs into cnp";
    EXPECT_EQ(fresh->depth_packets(1), 30u - at_once) << "the queued data into roce";
    snap_ = std::move(changed);
    same.reset();
    old.reset();
    // What had left leaves first, at its time; then the queued, their enqueue times kept, the
    // strict CNPs first (a changed scheduler starts with full buckets, as a changed policer does).
    auto out = drain(*fresh, t0, static_cast<unsigned>(at_once));
    ASSERT_EQ(out.size(), at_once);
    for (const Departure& d : out) {
        EXPECT_EQ(d.time, t0);
        EXPECT_EQ(rte_pktmbuf_mtod(d.m, uint8_t*)[15] >> 2, 26);
    }
    free_all(out);
    out = drain(*fresh, t0, 1);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(rte_pktmbuf_mtod(out[0].m, uint8_t*)[15] >> 2, 48) << "a CNP first";
    free_all(out);
    // The rest stay queued: the snapshot's destructor frees them (TearDown counts the pool).
    EXPECT_EQ(fresh->backlog(), 34u - at_once);
}

}  // namespace
}  // namespace dscpgw
