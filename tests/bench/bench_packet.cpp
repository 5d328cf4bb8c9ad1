// Micro-benchmarks of the per-packet path (ns/packet), on the pure code with no driver involved.
// Each iteration restores the first 128 bytes of the frame (all the path writes) and processes it;
// BM_Restore measures that restore alone so it can be subtracted.
#include <benchmark/benchmark.h>
#include <rte_cycles.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "dataplane/cksum.h"
#include "dataplane/pipeline.h"
#include "dataplane/qos.h"
#include "dataplane/sched.h"
#include "gateway/eal.h"
#include "tests/common/dataplane_fixture.h"
#include "tests/unit/builder.h"

namespace dscpgw {
namespace {

using test::Bytes;
using test::PacketBuilder;

const Snapshot* g_snap = nullptr;
const Snapshot* g_qos = nullptr;  // The wide config with a policed and an adaptive class first.

// Three classes of one shape (UDP 4791 and a received DSCP), to compare like with like: one
// plain, one with a policer (rates no packet exceeds: always green), one with adaptive rules.
constexpr const char* kQosClasses = R"(
[[policers]]
name = "cap"
cir = "1Tbps"
pir = "1Tbps"
[[classes]]
name = "same-shape"
match = { udp_dst_port = 4791, dscp = 14 }
dscp = 26
[[classes]]
name = "policed"
match = { udp_dst_port = 4791, dscp = 10 }
dscp = 26
policer = "cap"
[[classes]]
name = "adaptive"
match = { udp_dst_port = 4791, dscp = 12 }
dscp = 26
adaptive = [{ min_bytes = 1000, min_pps = 1000000, dscp = 34 }]
)";

// A RoCEv2 frame of `frame_len` bytes (74, 1082 or 4154: the 64-byte, 1 KB and 4 KB classes).
Bytes roce_frame(const char* dst, size_t frame_len, uint8_t tos = 0x02) {
    const size_t hdr = 14 + 20 + 8 + 12;
    return PacketBuilder()
        .eth()
        .ipv4("10.10.0.5", dst, tos)
        .udp(49152, 4791)
        .bth(0x0a)
        .payload(frame_len - hdr)
        .build();
}

void run(benchmark::State& state, uint16_t port, const Bytes& pkt, const Snapshot* snap = nullptr,
         bool clock = false) {
    if (snap == nullptr) snap = g_snap;
    // The QoS stage's clock and a worker's flow rates, as the burst glue hands them over.
    FlowRates rates(kAdaptiveFlows, rte_get_tsc_hz());
    QosClock clk{rte_rdtsc(), &rates};
    constexpr uint32_t kHeadroom = 128;
    constexpr size_t kRestore = 128;
    Bytes src = pkt;
    src.resize(std::max(kRestore, pkt.size()),
               0);  // A constant-size restore compiles to vector moves.
    std::vector<uint8_t> buf(kHeadroom + src.size());
    std::memcpy(buf.data() + kHeadroom, src.data(), src.size());
    for (auto _ : state) {
        std::memcpy(buf.data() + kHeadroom, src.data(), kRestore);
        Frame f{buf.data() + kHeadroom, static_cast<uint32_t>(pkt.size()), kHeadroom};
        clk.now += 100;  // 100 cycles per packet: one flow at tens of Mpps.
        const Verdict v = process_packet(*snap, port, f, nullptr, clock ? &clk : nullptr);
        benchmark::DoNotOptimize(v);
        benchmark::DoNotOptimize(f.data);
        if (v.drop != DropReason::none) {
            state.SkipWithError("packet dropped");
            break;
        }
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
    state.counters["frame_bytes"] = static_cast<double>(pkt.size());
}

void BM_Restore(benchmark::State& state) {
    const Bytes pkt = roce_frame("10.20.0.9", 1082);
    std::vector<uint8_t> buf(128 + pkt.size());
    for (auto _ : state) {
        std::memcpy(buf.data() + 128, pkt.data(), 128);
        benchmark::DoNotOptimize(buf.data());
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_MarkEncapGeneve4(benchmark::State& state) {
    run(state, 0, roce_frame("10.20.0.9", static_cast<size_t>(state.range(0))));
}

void BM_MarkEncapVxlan6(benchmark::State& state) {
    run(state, 0, roce_frame("192.168.0.9", static_cast<size_t>(state.range(0))));
}

Bytes outer_of(const Bytes& inner, bool v6) {
    if (v6)
        return PacketBuilder()
            .eth()
            .ipv6("2001:db8:18::99", "2001:db8:18::1", 26 << 2 | 2)
            .udp(50000, 4789)
            .vxlan(200)
            .raw(inner)
            .build();
    return PacketBuilder()
        .eth()
        .ipv4("198.18.7.7", "198.18.0.1", 26 << 2 | 2)
        .udp(50000, 6081, false)
        .geneve(100)
        .raw(inner)
        .build();
}

void BM_DecapGeneve4(benchmark::State& state) {
    run(state, 1, outer_of(roce_frame("10.10.0.9", static_cast<size_t>(state.range(0))), false));
}

void BM_DecapVxlan6(benchmark::State& state) {
    run(state, 1, outer_of(roce_frame("10.10.0.9", static_cast<size_t>(state.range(0))), true));
}

// The same frame into a class of the same shape without QoS, with a policer, with adaptive rules.
void BM_MarkEncapClassPlain(benchmark::State& state) {
    run(state, 0, roce_frame("10.20.0.9", static_cast<size_t>(state.range(0)), 14 << 2), g_qos,
        true);
}

void BM_MarkEncapClassPolicer(benchmark::State& state) {
    run(state, 0, roce_frame("10.20.0.9", static_cast<size_t>(state.range(0)), 10 << 2), g_qos,
        true);
}

void BM_MarkEncapClassAdaptive(benchmark::State& state) {
    run(state, 0, roce_frame("10.20.0.9", static_cast<size_t>(state.range(0)), 12 << 2), g_qos,
        true);
}

// The shared meter alone: one policer, every thread metering into it (threads stand in for
// workers; with 2 the lock's cache line bounces between the cores).
void BM_PoliceShared(benchmark::State& state) {
    static PolicerState st;
    if (state.thread_index() == 0) {
        PolicerConf pc;
        pc.name = "bench";
        pc.cir = pc.pir = uint64_t{1} << 50;
        pc.cbs = pc.pbs = 1 << 20;
        std::string why;
        if (!policer_init(st, pc, why)) state.SkipWithError(why.c_str());
    }
    for (auto _ : state) benchmark::DoNotOptimize(police(st, rte_rdtsc(), 1000, kGreen, false));
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

// The egress scheduler (Border QoS II) alone: one shaped port with the three queues of
// tests/golden/egress.toml (CNP strict and capped, RoCE data weight 70 with ECN, the rest 30).
// Per iteration one 1082-byte RoCE data frame is queued and whatever may leave is dequeued (and
// freed): range(0) = the port's rate in Mbit/s (0: no scheduler, the buffer, copy and free alone).
// At 100 Gbit/s the queue stays empty (configured but idle: each frame leaves at once); at 1 Gbit/s
// it is overloaded (the queue sits at its limit and most frames are dropped there, ECN-marked above
// max).
std::unique_ptr<Snapshot> sched_snapshot(uint64_t rate_mbps) {
    auto s = std::make_unique<Snapshot>();
    PortConf lan, wan;
    lan.name = "lan";
    wan.name = "wan";
    wan.role = PortRole::outer;
    wan.mtu = 1600;
    wan.rate = rate_mbps * 1000000;
    wan.burst = std::max<uint64_t>(wan.rate / 8 / 100000, 16000);  // The default: 10 us of rate.
    s->ports = {lan, wan};
    QueueConf cnp, roce, def;
    cnp.name = "cnp";
    cnp.port = roce.port = def.port = 1;
    cnp.strict = true;
    cnp.max_rate = wan.rate / 10;
    roce.name = "roce";
    roce.weight = 70;
    roce.limit = 4000000;
    roce.ecn = true;
    roce.ecn_min = 40000;
    roce.ecn_max = 60000;
    def.name = "default";
    def.weight = 30;
    def.any = true;
    s->queues = {cnp, roce, def};
    s->sched_plans.resize(2);
    SchedPlan& plan = s->sched_plans[1];
    plan.on = true;
    plan.nqueues = 3;
    plan.class_queue.fill(2);
    plan.class_queue[1] = 0;  // Class 0: CNPs.
    plan.class_queue[2] = 1;  // Class 1: RoCE data.
    plan.node_tunnel = {-1};
    s->scheds.resize(2);
    s->scheds[1] = std::make_shared<PortSched>(*s, 1, rte_get_tsc_hz());
    return s;
}

// As a worker drives it: a burst of 32 frames (buffers allocated, frames copied in, noted), one
// clock read and one lock for the burst, all queued, whatever may leave dequeued and freed.
// Arg: the port's rate in Mbit/s; 0: no scheduler (the buffers, copies and frees alone).
void BM_SchedEnqueueDequeue(benchmark::State& state) {
    static rte_mempool* pool = rte_pktmbuf_pool_create("bench_sched", 16383, 256, 0,
                                                       RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    if (pool == nullptr) {
        state.SkipWithError("no mbuf pool");
        return;
    }
    constexpr unsigned kBurst = 32;
    auto s = sched_snapshot(static_cast<uint64_t>(state.range(0)));
    PortSched& ps = *s->scheds[1];
    auto st = std::make_unique<WorkerStats>();
    ConfigCounters& cc = st->bank[0];
    const Bytes frame = roce_frame("10.20.0.9", 1082);
    rte_mbuf* burst[kBurst];
    Departure out[kBurst];
    uint64_t sent = 0;
    for (auto _ : state) {
        if (rte_pktmbuf_alloc_bulk(pool, burst, kBurst) != 0) {
            state.SkipWithError("mbuf pool exhausted");
            break;
        }
        for (rte_mbuf* m : burst) {
            std::memcpy(rte_pktmbuf_append(m, static_cast<uint16_t>(frame.size())), frame.data(),
                        frame.size());
            sched_note(m, kSchedEncap, 1, -1);
        }
        if (state.range(0) == 0) {
            rte_pktmbuf_free_bulk(burst, kBurst);
            sent += kBurst;
            continue;
        }
        const uint64_t now = rte_rdtsc();
        ps.lock();
        for (rte_mbuf* m : burst) {
            const EnqResult r = ps.enqueue(*s, 1, m, now, cc);
            if (dropped(r.action)) rte_pktmbuf_free(m);
        }
        const unsigned n = ps.dequeue(*s, 1, now, out, kBurst, *st, cc);
        ps.unlock();
        for (unsigned i = 0; i < n; ++i) rte_pktmbuf_free(out[i].m);
        sent += n;
    }
    state.counters["sent_share"] = static_cast<double>(sent) /
                                   static_cast<double>(std::max<uint64_t>(state.iterations(), 1)) /
                                   kBurst;
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBurst));
}

// The outer IPv6 UDP checksum's sum over a tunnelled frame: the scalar loop (arg 1 = 0), the AVX2
// loop (1), the AVX-512BW loop (2) and DPDK's __rte_raw_cksum() (3), on one machine; raw_sum()
// takes the widest the CPU has from 128 bytes on, the scalar loop below.
void BM_RawSum(benchmark::State& state) {
    std::vector<uint8_t> buf(static_cast<size_t>(state.range(0)));
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<uint8_t>(i * 131 + 7);
    const bool dpdk = state.range(1) == 3;
    const auto loop = static_cast<RawSumLoop>(dpdk ? 0 : state.range(1));
    if (loop > raw_sum_loop()) {
        state.SkipWithError("this CPU lacks the instructions");
        return;
    }
    using Sum = uint32_t (*)(const uint8_t*, size_t, uint32_t);
    const Sum sum =
        dpdk ? [](const uint8_t* p, size_t n, uint32_t s) { return __rte_raw_cksum(p, n, s); }
        : loop == RawSumLoop::kAvx512 ? raw_sum_avx512
        : loop == RawSumLoop::kAvx2   ? raw_sum_avx2
                                      : raw_sum_scalar;
    for (auto _ : state) {
        uint32_t s = sum(buf.data(), buf.size(), 0);
        benchmark::DoNotOptimize(s);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
    state.SetLabel(dpdk                          ? "__rte_raw_cksum"
                   : loop == RawSumLoop::kAvx512 ? "avx512bw"
                   : loop == RawSumLoop::kAvx2   ? "avx2"
                                                 : "scalar");
}

BENCHMARK(BM_Restore);
BENCHMARK(BM_SchedEnqueueDequeue)->Arg(0)->Arg(400000)->Arg(1000);
BENCHMARK(BM_PoliceShared)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_MarkEncapClassPlain)->Arg(74)->Arg(1082);
BENCHMARK(BM_MarkEncapClassPolicer)->Arg(74)->Arg(1082);
BENCHMARK(BM_MarkEncapClassAdaptive)->Arg(74)->Arg(1082);
BENCHMARK(BM_MarkEncapGeneve4)->Arg(74)->Arg(1082)->Arg(4154);
BENCHMARK(BM_MarkEncapVxlan6)->Arg(74)->Arg(1082)->Arg(4154);
BENCHMARK(BM_DecapGeneve4)->Arg(74)->Arg(1082)->Arg(4154);
BENCHMARK(BM_DecapVxlan6)->Arg(74)->Arg(1082)->Arg(4154);
BENCHMARK(BM_RawSum)->ArgsProduct({{32, 90, 1082, 4154, 9000}, {0, 1, 2, 3}});

}  // namespace
}  // namespace dscpgw

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    std::string err;
    if (!dscpgw::eal_init(dscpgw::eal_args_offline(), err)) {
        std::fprintf(stderr, "%s\n", err.c_str());
        return 1;
    }
    auto snap = dscpgw::test::wide_snapshot();
    dscpgw::g_snap = snap.get();
    auto qos = dscpgw::test::wide_snapshot(false, dscpgw::kQosClasses);
    dscpgw::g_qos = qos.get();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
