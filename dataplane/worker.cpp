#include "dataplane/worker.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_rcu_qsbr.h>
#include <rte_ring.h>

#include <algorithm>
#include <map>

#include "dataplane/burst.h"
#include "dataplane/sched.h"
#include "dataplane/trace.h"

namespace dscpgw {

namespace {

// A port's packets waiting for rte_eth_tx_burst(), and their bytes, summed as they are queued
// (where each packet's length was just written) rather than read back from every mbuf at flush.
struct TxQueue {
    uint16_t n = 0;
    uint64_t bytes = 0;
    rte_mbuf* pkts[kBurst];

    void push(rte_mbuf* m) {
        bytes += m->pkt_len;
        pkts[n++] = m;
    }
};

void flush(const WorkerContext& c, size_t port, TxQueue& q) {
    if (q.n == 0) return;
    uint64_t bytes = q.bytes;
    q.bytes = 0;
    const uint16_t sent = rte_eth_tx_burst(c.eth_port[port], c.queue, q.pkts, q.n);
    for (uint16_t i = sent; i < q.n; ++i) {
        bytes -= q.pkts[i]->pkt_len;
        rte_pktmbuf_free(q.pkts[i]);
    }
    c.stats->port[PortCounter::tx_packets][port].add(sent);
    c.stats->port[PortCounter::tx_bytes][port].add(bytes);
    if (sent != q.n) c.stats->dataplane[DataplaneCounter::tx_failed][0].add(q.n - sent);
    q.n = 0;
}

// The packets one RX burst left for a scheduled port.
struct SchedStage {
    uint16_t n = 0;
    rte_mbuf* pkts[kBurst];
};

// Sends what the port's scheduler lets go at `now`, on the scheduler's TX queue. Under its lock.
void sched_drain(const WorkerContext& c, const Snapshot& s, size_t port, PortSched& ps,
                 uint64_t now, ConfigCounters& cc) {
    Departure out[kBurst];
    rte_mbuf* pkts[kBurst];
    std::atomic_flag* tl = c.sched_tx_lock != nullptr ? &c.sched_tx_lock[port] : nullptr;
    for (unsigned round = 0; round < 8; ++round) {
        const unsigned n =
            ps.dequeue(s, static_cast<uint16_t>(port), now, out, kBurst, *c.stats, cc);
        if (n == 0) return;
        uint64_t bytes = 0;
        for (unsigned i = 0; i < n; ++i) {
            pkts[i] = out[i].m;
            bytes += out[i].m->pkt_len;
        }
        if (tl != nullptr)
            while (tl->test_and_set(std::memory_order_acquire)) rte_pause();
        const uint16_t sent =
            rte_eth_tx_burst(c.eth_port[port], c.sched_queue[port], pkts, static_cast<uint16_t>(n));
        if (tl != nullptr) tl->clear(std::memory_order_release);
        for (unsigned i = sent; i < n; ++i) {
            bytes -= pkts[i]->pkt_len;
            rte_pktmbuf_free(pkts[i]);
        }
        c.stats->port[PortCounter::tx_packets][port].add(sent);
        c.stats->port[PortCounter::tx_bytes][port].add(bytes);
        if (sent != n) c.stats->dataplane[DataplaneCounter::tx_failed][0].add(n - sent);
        if (n < kBurst) return;
    }
}

// Queues a burst's packets for `port` and sends what may go now.
void sched_run(const WorkerContext& c, const Snapshot& s, size_t port, SchedStage& stage,
               uint64_t now, TracePending& traced) {
    if (stage.n == 0) return;
    PortSched& ps = *s.scheds[port];
    ConfigCounters& cc = c.stats->bank[s.bank];
    ps.lock();
    for (uint16_t i = 0; i < stage.n; ++i) {
        const EnqResult r = ps.enqueue(s, static_cast<uint16_t>(port), stage.pkts[i], now, cc);
        if (unlikely(traced.n != 0) && r.queue >= 0)  // `ctl trace`: the queue it entered.
            traced.queued(
                stage.pkts[i],
                s.queues[s.sched_plans[port].first_queue + static_cast<size_t>(r.queue)].name,
                r.depth, static_cast<uint8_t>(r.action));
        if (dropped(r.action)) rte_pktmbuf_free(stage.pkts[i]);
    }
    stage.n = 0;
    sched_drain(c, s, port, ps, now, cc);
    ps.unlock();
}

// A packet to a shaped port's egress scheduler, through its stage. Out of line: inlined into the
// burst loop, its arguments were loaded for every packet.
__attribute__((noinline)) void to_sched(const WorkerContext& c, const Snapshot& s, uint16_t out,
                                        rte_mbuf* m, SchedStage* stage, uint64_t t0,
                                        TracePending& traced) {
    SchedStage& g = stage[out];
    g.pkts[g.n++] = m;
    if (g.n == kBurst) sched_run(c, s, out, g, t0, traced);
}

// A processed packet to its port: the egress scheduler when the burst loop says `queue` (a
// shaped port, not the gateway's own frame), else the port's TX queue.
inline void to_port(const WorkerContext& c, const Snapshot& s, uint16_t out, rte_mbuf* m,
                    bool queue, TxQueue* txq, SchedStage* stage, uint64_t t0,
                    TracePending& traced) {
    if (queue) return to_sched(c, s, out, m, stage, t0, traced);
    TxQueue& q = txq[out];
    q.push(m);
    if (q.n == kBurst) flush(c, out, q);
}

// One RX burst under an armed trace: its input headers kept, each matching packet recorded.
// The burst state goes in and comes back by value, so that the worker's own never has its
// address taken.
__attribute__((noinline, cold)) BurstState process_traced(const WorkerContext& c, const Snapshot& s,
                                                          uint16_t port, rte_mbuf** pkts,
                                                          uint16_t n, WorkerStats& st,
                                                          BurstState bs, TxQueue* txq,
                                                          SchedStage* stage, uint64_t t0,
                                                          TracePending& pending) {
    TraceBurst tb(*c.trace, s, c.queue, port, pkts, n, pending);
    process_burst(
        s, port, pkts, n, st, bs,
        [&](uint16_t out, rte_mbuf* m, bool queue) {
            to_port(c, s, out, m, queue, txq, stage, t0, pending);
        },
        tb);
    return bs;
}

}  // namespace

std::vector<std::vector<RxPoll>> place_rx_queues(const RxPlacementInput& in) {
    const auto workers = static_cast<unsigned>(in.worker_socket.size());
    std::vector<std::vector<RxPoll>> at(workers);
    std::map<int, unsigned> next;  // Socket (-1: all workers) -> the turn of its next queue.
    for (size_t p = 0; p < in.queues.size(); ++p) {
        const unsigned n = in.queues[p];
        const auto port = static_cast<uint16_t>(p);
        if (p < in.pinned.size() && !in.pinned[p].empty()) {
            for (unsigned q = 0; q < n && q < in.pinned[p].size(); ++q)
                if (in.pinned[p][q] < workers)
                    at[in.pinned[p][q]].push_back({port, static_cast<uint16_t>(q), 0});
            continue;
        }
        if (n == workers) {
            for (unsigned q = 0; q < n; ++q) at[q].push_back({port, static_cast<uint16_t>(q), 0});
            continue;
        }
        const int sock = p < in.port_socket.size() ? in.port_socket[p] : -1;
        std::vector<unsigned> local;
        for (unsigned w = 0; w < workers && sock >= 0; ++w)
            if (in.worker_socket[w] == sock) local.push_back(w);
        const int key = local.empty() ? -1 : sock;
        if (local.empty())
            for (unsigned w = 0; w < workers; ++w) local.push_back(w);
        unsigned& turn = next[key];
        for (unsigned q = 0; q < n; ++q)
            at[local[(turn + q) % local.size()]].push_back({port, static_cast<uint16_t>(q), 0});
        turn = static_cast<unsigned>((turn + n) % local.size());
    }
    return at;
}

int worker_main(void* arg) {
    const WorkerContext& c = *static_cast<const WorkerContext*>(arg);
    TxQueue txq[kMaxPorts];
    SchedStage stage[kMaxPorts];
    TracePending traced;  // `ctl trace` records waiting for their egress queue (this poll only).
    BurstState bs;
    bs.flows = c.flows;
    bs.hold_runs = true;
    // The `adaptive` rules' flow rates: this worker's, allocated once before the loop.
    FlowRates rates(kAdaptiveFlows, rte_get_tsc_hz());
    bs.rates = &rates;
    // The flow caches, on this thread's stack: their memory is the worker's NUMA node's.
    EncapCache encap;
    bs.encap = &encap;
    DecapFlowCache decap_flows;
    bs.decap_flows = &decap_flows;
    WorkerStats& st = *c.stats;
    rte_rcu_qsbr_thread_register(c.rcu, c.queue);
    rte_rcu_qsbr_thread_online(c.rcu, c.queue);
    while (!c.stop->load(std::memory_order_relaxed)) {
        const uint64_t t0 = rte_rdtsc();
        bs.now_tsc = t0;
        const Snapshot& s = *c.snap->load(std::memory_order_acquire);
        const size_t nports = s.ports.size();  // Fixed for the process: a reload keeps the ports.
        uint32_t got = 0;
        for (const RxPoll& r : c.rx) {
            const uint16_t p = r.port;
            rte_mbuf* pkts[kBurst];
            const uint16_t n = rte_eth_rx_burst(r.eth_port, r.queue, pkts, r.want);
            if (n == 0) continue;
            got += n;
            r.want = rx_burst_for(pkts[0]->pkt_len);
            // `ctl trace`: one load per burst of a line only arming writes. The traced burst is
            // out of line and gets copies, not the addresses, of this loop's scalars: locals
            // whose address escaped would be reloaded after every call of the packet path.
            if (unlikely(c.trace != nullptr &&
                         c.trace->armed.load(std::memory_order_acquire) != 0 &&
                         (c.trace->port < 0 || c.trace->port == static_cast<int32_t>(p)))) {
                bs = process_traced(c, s, p, pkts, n, st, bs, txq, stage, t0, traced);
            } else {
                process_burst(
                    s, p, pkts, n, st, bs,
                    [&](uint16_t out, rte_mbuf* m, bool queue) {
                        to_port(c, s, out, m, queue, txq, stage, t0, traced);
                    },
                    NoObserver{});
            }
            // Drain after each RX burst: latency stays one burst, and no timer is needed.
            for (size_t o = 0; o < nports; ++o) {
                flush(c, o, txq[o]);
                sched_run(c, s, o, stage[o], t0, traced);
            }
            if (unlikely(traced.n != 0)) traced.finish();
        }
        // Shaped ports send as their tokens come, whoever's poll it is; a worker that finds
        // another one at it goes on.
        for (size_t o = 0; o < nports; ++o) {
            PortSched* ps = s.scheds[o].get();
            if (ps == nullptr || ps->backlog() == 0 || !ps->try_lock()) continue;
            sched_drain(c, s, o, *ps, rte_rdtsc(), st.bank[s.bank]);
            ps->unlock();
        }
        if (c.inject != nullptr) {
            rte_mbuf* ctl[kBurst];
            const unsigned n =
                rte_ring_sc_dequeue_burst(c.inject, reinterpret_cast<void**>(ctl), kBurst, nullptr);
            for (unsigned i = 0; i < n; ++i) {
                TxQueue& q = txq[ctl[i]->port];
                q.push(ctl[i]);
                if (q.n == kBurst) flush(c, ctl[i]->port, q);
            }
            for (size_t o = 0; n != 0 && o < nports; ++o) flush(c, o, txq[o]);
        }
        const uint64_t dt = rte_rdtsc() - t0;
        (got != 0 ? st.worker[WorkerCounter::busy_cycles] : st.worker[WorkerCounter::idle_cycles])
            ->add(dt);
        if (got != 0) st.worker[WorkerCounter::rx_packets]->add(got);
        st.worker[WorkerCounter::polls]->inc();
        // The held runs to the counters (BurstState::hold_runs): when traffic pauses, and every
        // kHoldPolls polls under it.
        if (bs.runs_snap != nullptr && (got == 0 || ++bs.runs_polls >= kHoldPolls))
            flush_runs(st, bs);
        // Nothing of `s` is used past here: a snapshot replaced before this point may be freed.
        // Not while runs counting in its bank are held: the reload that replaced it waits for
        // them.
        if (bs.runs_snap == nullptr) rte_rcu_qsbr_quiescent(c.rcu, c.queue);
    }
    flush_runs(st, bs);
    rte_rcu_qsbr_thread_offline(c.rcu, c.queue);
    rte_rcu_qsbr_thread_unregister(c.rcu, c.queue);
    c.finished.store(true, std::memory_order_release);
    return 0;
}

}  // namespace dscpgw
