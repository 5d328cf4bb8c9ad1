#include "dataplane/sched.h"

#include <algorithm>
#include <cstring>

#include "dataplane/packet.h"
#include "dataplane/pipeline.h"
#include "dataplane/wire.h"

namespace dscpgw {

using namespace wire;

namespace {

// The largest frame a port sends: its MTU, Ethernet, one VLAN tag (a DRR quantum covers it).
uint32_t max_frame(const PortConf& p) { return p.mtu + 14 + 4; }

uint32_t pow2_at_least(uint64_t n) {
    uint32_t c = 64;
    while (c < n && c < (1u << 20)) c <<= 1;
    return c;
}

// The ECN field of the frame's (outermost) IP header, and where that header is; false: not IP.
bool frame_ecn(const uint8_t* d, uint32_t len, uint8_t& ecn) {
    ParsedPacket pp;
    if (parse_packet(d, len, pp) != DropReason::none || pp.ip_ver == 0) return false;
    ecn = pp.ecn();
    return true;
}

void set_ce(const ParsedPacket& pp, uint8_t* d) {
    write_tos(pp, d, static_cast<uint8_t>(pp.tos | kEcnCe));
}

// Marks the packet CE: its IP header, and in a tunnel packet the inner one as well (a decapsulator
// that ignores the outer ECN still passes the mark on). The outer UDP checksum over IPv6, when
// computed in software, is patched for the inner IPv6 traffic class (an inner IPv4 header's own
// checksum keeps its sum, and so the UDP checksum, unchanged).
void mark_ce(const Snapshot& s, rte_mbuf* m, int tunnel) {
    uint8_t* d = rte_pktmbuf_mtod(m, uint8_t*);
    const uint32_t len = m->data_len;
    ParsedPacket outer;
    if (parse_packet(d, len, outer) != DropReason::none || outer.ip_ver == 0) return;
    set_ce(outer, d);
    if (tunnel < 0 || static_cast<size_t>(tunnel) >= s.tunnels.size()) return;
    const uint32_t off = s.tunnels[static_cast<size_t>(tunnel)].hdr_len;
    if (off >= len) return;
    ParsedPacket inner;
    if (parse_packet_general(d + off, len - off, inner) != DropReason::none || inner.ip_ver == 0 ||
        (inner.tos & 3) == kEcnNotEct)
        return;
    uint8_t* ip = d + off + inner.l3_off;
    const uint16_t before = load16(ip);
    set_ce(inner, d + off);
    const uint16_t after = load16(ip);
    if (inner.ip_ver != 6 || outer.ip_ver != 6 || (m->ol_flags & RTE_MBUF_F_TX_UDP_CKSUM) != 0)
        return;
    uint8_t* udp = d + outer.l4_off;
    const uint16_t ck = load16(udp + 6);
    if (ck == 0) return;
    uint16_t nc = csum_update16(ck, before, after);
    if (nc == 0) nc = 0xffff;
    store16(udp + 6, nc);
}

}  // namespace

std::string PortSched::signature(const Snapshot& s, uint16_t port) {
    const PortConf& p = s.ports[port];
    std::string sig =
        std::to_string(p.rate) + "/" + std::to_string(p.burst) + "/" + std::to_string(p.mtu);
    for (const QueueConf& q : s.queues) {
        if (q.port != port) continue;
        sig += "|" + q.name + "," + std::to_string(q.strict) + "," + std::to_string(q.max_rate) +
               "," + std::to_string(q.limit) + "," + std::to_string(q.weight) + "," +
               std::to_string(q.ecn) + "," + std::to_string(q.ecn_min) + "," +
               std::to_string(q.ecn_max) + "," + std::to_string(q.ecn_max_probability) + "," +
               std::to_string(q.any);
    }
    for (const TunnelConf& t : s.tunnels)
        if (t.outer_port == port && t.rate != 0)
            sig += "|t:" + t.name + "," + std::to_string(t.rate) + "," + std::to_string(t.burst);
    return sig;
}

PortSched::PortSched(const Snapshot& s, uint16_t port, uint64_t hz)
    : sig_(signature(s, port)), ns_per_tick_((static_cast<SchedU128>(1000000000u) << 32) / hz) {
    const PortConf& p = s.ports[port];
    lref_ = max_frame(p);
    port_.set(p.rate, std::max<uint64_t>(p.burst, lref_), hz);
    size_t nodes = 1;
    for (const TunnelConf& t : s.tunnels)
        if (t.outer_port == port && t.rate != 0) ++nodes;
    nodes_.resize(nodes);
    size_t k = 1;
    for (const TunnelConf& t : s.tunnels)
        if (t.outer_port == port && t.rate != 0)
            nodes_[k++].set(t.rate, std::max<uint64_t>(t.burst, max_frame(p)), hz);
    uint64_t limits = 0;
    for (const QueueConf& qc : s.queues)
        if (qc.port == port) {
            ++nq_;
            limits += qc.limit;
        }
    max_pkts_ = sched_buffers(limits);
    q_ = std::make_unique<Queue[]>(nq_);
    ef_.assign(nq_ * nodes, UINT64_MAX);
    uint32_t min_weight = UINT32_MAX;
    for (const QueueConf& qc : s.queues)
        if (qc.port == port && !qc.strict) min_weight = std::min(min_weight, qc.weight);
    const uint32_t unit =
        min_weight == UINT32_MAX ? 0 : (max_frame(p) + min_weight - 1) / min_weight;
    size_t i = 0;
    for (const QueueConf& qc : s.queues) {
        if (qc.port != port) continue;
        Queue& q = q_[i];
        q.name = qc.name;
        q.strict = qc.strict;
        q.any = qc.any;
        q.limit = qc.limit;
        q.ecn = qc.ecn;
        q.ecn_min = qc.ecn_min;
        q.ecn_max = qc.ecn_max;
        const uint64_t p32 = static_cast<uint64_t>(qc.ecn_max_probability * 4294967296.0);
        if (qc.ecn_max > qc.ecn_min)
            q.ecn_slope = (static_cast<SchedU128>(p32) << 32) / (qc.ecn_max - qc.ecn_min);
        q.quantum = qc.weight * unit;
        if (qc.strict && qc.max_rate != 0)
            q.cap.set(qc.max_rate, std::max<uint64_t>(qc.limit / 100, max_frame(p)), hz);
        // Room for the limit in minimum-size frames.
        const uint32_t cap = pow2_at_least(qc.limit / 60 + 1);
        q.fifo.resize(nodes);
        for (Fifo& f : q.fifo) {
            f.e = std::make_unique<SchedEntry[]>(cap);
            f.mask = cap - 1;
        }
        if (!qc.strict) weighted_.push_back(static_cast<uint16_t>(i));
        ++i;
    }
}

PortSched::~PortSched() {
    for (; ready_head_ != ready_tail_; ++ready_head_)
        rte_pktmbuf_free(ready_[ready_head_ % kReady].m);
    for (size_t i = 0; i < nq_; ++i)
        for (Fifo& f : q_[i].fifo)
            while (!f.empty()) {
                rte_pktmbuf_free(f.front().m);
                ++f.head;
            }
}

uint64_t PortSched::rnd() {
    rng_ ^= rng_ >> 12;
    rng_ ^= rng_ << 25;
    rng_ ^= rng_ >> 27;
    return (rng_ * 0x2545f4914f6cdd1dull) >> 32;
}

void PortSched::gauges(Queue& q) {
    q.g_bytes.store(q.bytes, std::memory_order_relaxed);
    q.g_pkts.store(q.pkts, std::memory_order_relaxed);
    if (q.bytes > q.g_peak.load(std::memory_order_relaxed))
        q.g_peak.store(q.bytes, std::memory_order_relaxed);
}

bool PortSched::push(Queue& q, size_t node, rte_mbuf* m, uint64_t t) {
    Fifo& f = q.fifo[node];
    if (f.full()) return false;
    f.e[f.tail++ & f.mask] = {m, t};
    q.bytes += m->pkt_len;
    ++q.pkts;
    ++queued_;
    backlog_.store(backlog_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    gauges(q);
    return true;
}

EnqResult PortSched::enqueue(const Snapshot& s, uint16_t port, rte_mbuf* m, uint64_t now,
                             ConfigCounters& cc) {
    EnqResult r;
    const SchedPlan& plan = s.sched_plans[port];
    const uint8_t kind = m->hash.sched.traffic_class;
    if (kind == kSchedOther || nq_ == 0) return r;  // The gateway's own frames: not queued.
    int cls = -1, tun = static_cast<int>(m->hash.sched.queue_id >> 16) - 1;
    if (kind == kSchedEncap) {
        cls = static_cast<int>(m->hash.sched.queue_id & 0xffff) - 1;
    } else if (plan.classify_decap) {
        ParsedPacket pp;
        if (parse_packet(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, pp) ==
                DropReason::none &&
            pp.ip_ver != 0)
            cls = classify(s, pp);
    }
    const size_t qi = plan.class_queue[static_cast<size_t>(cls + 1)];
    const size_t node =
        kind == kSchedEncap && tun >= 0 && static_cast<size_t>(tun) < plan.tunnel_node.size()
            ? plan.tunnel_node[static_cast<size_t>(tun)]
            : 0;
    Queue& q = q_[qi < nq_ ? qi : nq_ - 1];
    r.queue = static_cast<int16_t>(&q - q_.get());
    r.depth = q.bytes;
    const size_t gq = plan.first_queue + static_cast<size_t>(r.queue);
    const uint32_t len = m->pkt_len;
    r.action = EnqAction::queued;
    uint8_t ecn = kEcnNotEct;
    if (q.bytes + len > q.limit) {
        r.action = EnqAction::drop_limit;
    } else if (backlog_.load(std::memory_order_relaxed) >= max_pkts_) {
        r.action = EnqAction::drop_buffers;
    } else if (q.ecn && q.bytes > q.ecn_min) {
        const bool ip = frame_ecn(rte_pktmbuf_mtod(m, const uint8_t*), m->data_len, ecn);
        const bool ect = ip && ecn != kEcnNotEct;
        if (q.bytes >= q.ecn_max) {
            r.action = ect ? EnqAction::marked : EnqAction::drop_not_ect;
        } else if (ect) {
            // Linear from 0 at min to max_probability at max.
            const uint64_t p = static_cast<uint64_t>((q.ecn_slope * (q.bytes - q.ecn_min)) >> 32);
            if (rnd() < p) r.action = EnqAction::marked;
        }
    }
    if (r.action == EnqAction::marked) {
        if (ecn == kEcnCe) {
            r.action = EnqAction::queued;  // Already CE: nothing to change.
        } else {
            mark_ce(s, m, kind == kSchedEncap ? tun : -1);
            cc.queue[QueueCounter::ce_marked][gq].inc();
        }
    }
    const size_t k = node < q.fifo.size() ? node : 0;
    if (r.action == EnqAction::queued && queued_ == 0 && ready_tail_ - ready_head_ < kReady) {
        // Nothing queued: it leaves now if every bucket it needs has the tokens (judged as
        // dequeue() judges a head, so that the result is the same, only cheaper).
        const uint64_t t =
            std::max({clock_, now, head_ready(q, k, len, q.strict ? 0 : port_.eligible(lref_))});
        if (t <= now) {
            depart(plan, static_cast<size_t>(r.queue), k, len, t, now, cc);
            if (port_.on()) pending_shaped_ += len;
            ready_[ready_tail_++ % kReady] = {m, t};
            backlog_.store(backlog_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            return r;
        }
    }
    if ((r.action == EnqAction::queued || r.action == EnqAction::marked) && !push(q, k, m, now))
        r.action = EnqAction::drop_limit;
    if (r.action == EnqAction::drop_limit) cc.queue[QueueCounter::drop_limit][gq].inc();
    if (r.action == EnqAction::drop_not_ect) cc.queue[QueueCounter::drop_not_ect][gq].inc();
    if (r.action == EnqAction::drop_buffers) cc.queue[QueueCounter::drop_buffers][gq].inc();
    return r;
}

unsigned PortSched::dequeue(const Snapshot& s, uint16_t port, uint64_t now, Departure* out,
                            unsigned max, WorkerStats& st, ConfigCounters& cc) {
    const SchedPlan& plan = s.sched_plans[port];
    unsigned n = 0;
    uint64_t e_q[kMaxQueuesPerPort];
    uint16_t node_q[kMaxQueuesPerPort];
    // The backlog and the depth gauges are published once per call (depths only fall here, so
    // no peak is missed).
    uint64_t left = backlog();
    uint32_t touched = 0;
    if (pending_shaped_ != 0) {
        st.port[PortCounter::shaper_bytes][port].add(pending_shaped_);
        pending_shaped_ = 0;
    }
    while (n < max && ready_head_ != ready_tail_) {
        out[n++] = ready_[ready_head_++ % kReady];
        --left;
    }
    while (n < max && left != 0) {
        uint64_t tmin = UINT64_MAX;
        const size_t nn = nodes_.size();
        // When the port has tokens for its largest frame: every weighted queue's head is judged
        // by that, so that a shorter frame does not win a DRR turn for its length alone (the
        // tokens a shorter one leaves stay in the bucket, which holds at least that frame: the
        // rate is kept). A strict queue's head by its own length: a CNP need not wait for the
        // tokens of a frame it is not.
        const uint64_t port_ready = port_.eligible(lref_);
        for (size_t i = 0; i < nq_; ++i) {
            Queue& q = q_[i];
            e_q[i] = UINT64_MAX;
            if (q.pkts == 0) continue;
            for (size_t k = 0; k < nn; ++k) {
                Fifo& f = q.fifo[k];
                uint64_t& e = ef_[i * nn + k];
                e = UINT64_MAX;
                if (f.empty()) continue;
                const SchedEntry& h = f.front();
                const uint32_t len = h.m->pkt_len;
                e = std::max(h.t_enq, head_ready(q, k, len, port_ready));
                e_q[i] = std::min(e_q[i], e);
            }
            tmin = std::min(tmin, e_q[i]);
        }
        if (tmin == UINT64_MAX) break;
        const uint64_t t = std::max(clock_, tmin);
        if (t > now) break;
        // Within a queue, the nodes (the port's own traffic, each shaped tunnel) eligible at t
        // take turns.
        for (size_t i = 0; i < nq_; ++i) {
            if (e_q[i] > t) continue;
            for (size_t j = 0; j < nn; ++j) {
                const size_t k = q_[i].rr + j < nn ? q_[i].rr + j : q_[i].rr + j - nn;
                if (ef_[i * nn + k] <= t) {
                    node_q[i] = static_cast<uint16_t>(k);
                    break;
                }
            }
        }
        // Strict queues first, in config order; then deficit round robin over the weighted ones
        // eligible now (a visit adds the quantum once; the quantum covers the largest frame, so
        // a round serves every eligible queue).
        Queue* pick = nullptr;
        for (size_t i = 0; i < nq_ && pick == nullptr; ++i)
            if (q_[i].strict && e_q[i] <= t) pick = &q_[i];
        for (size_t tries = 0; pick == nullptr && tries < 2 * weighted_.size() + 1; ++tries) {
            const uint16_t wi = weighted_[drr_];
            Queue& q = q_[wi];
            if (e_q[wi] <= t) {
                if (!q.visited) {
                    q.deficit += q.quantum;
                    q.visited = true;
                }
                const uint32_t len = q.fifo[node_q[wi]].front().m->pkt_len;
                if (q.deficit >= static_cast<int64_t>(len)) {
                    q.deficit -= len;
                    pick = &q;
                    break;
                }
            } else if (q.pkts == 0) {
                q.deficit = 0;
            }
            q.visited = false;
            if (++drr_ == weighted_.size()) drr_ = 0;
        }
        if (pick == nullptr) break;  // Cannot happen: some queue was eligible.
        const size_t qi = static_cast<size_t>(pick - q_.get());
        const size_t k = node_q[qi];
        Fifo& f = pick->fifo[k];
        const SchedEntry h = f.front();
        ++f.head;
        const uint32_t len = h.m->pkt_len;
        // Whose tokens held it, and for how long: since it was queued or the last departure.
        const uint64_t base = std::max(clock_, h.t_enq);
        if (t > base) {
            const uint64_t pe = pick->strict ? port_.eligible(len) : port_ready;
            const uint64_t ne = nodes_[k].eligible(len);
            const uint64_t waited = ns(t - base);
            if (pe > base && pe >= ne)
                st.port[PortCounter::shaper_throttled][port].add(waited);
            else if (ne > base && k < plan.node_tunnel.size() && plan.node_tunnel[k] >= 0)
                cc.tunnel[TunnelCounter::shaper_throttled][static_cast<size_t>(plan.node_tunnel[k])]
                    .add(waited);
        }
        depart(plan, qi, k, len, t, h.t_enq, cc);
        pick->bytes -= len;
        --pick->pkts;
        --queued_;
        --left;
        touched |= 1u << qi;
        if (port_.on()) st.port[PortCounter::shaper_bytes][port].add(len);
        out[n++] = {h.m, t};
    }
    if (n != 0) {
        backlog_.store(left, std::memory_order_relaxed);
        for (size_t i = 0; i < nq_; ++i)
            if (touched & 1u << i) gauges(q_[i]);
    }
    return n;
}

uint64_t PortSched::head_ready(const Queue& q, size_t k, uint32_t len, uint64_t port_ready) const {
    // A weighted head by the port's tokens for its largest frame (`port_ready`), a strict one by
    // its own length and its cap (see dequeue()).
    if (!q.strict) return std::max(port_ready, nodes_[k].eligible(len));
    return std::max({port_.eligible(len), nodes_[k].eligible(len), q.cap.eligible(len)});
}

void PortSched::depart(const SchedPlan& plan, size_t qi, size_t k, uint32_t len, uint64_t t,
                       uint64_t t_enq, ConfigCounters& cc) {
    Queue& q = q_[qi];
    port_.charge(t, len);
    nodes_[k].charge(t, len);
    if (q.strict) q.cap.charge(t, len);
    q.rr = static_cast<uint16_t>(k + 1 < q.fifo.size() ? k + 1 : 0);
    clock_ = t;
    const size_t gq = plan.first_queue + qi;
    cc.queue[QueueCounter::packets][gq].inc();
    cc.queue[QueueCounter::bytes][gq].add(len);
    cc.queue[QueueCounter::delay][gq].add(ns(t - t_enq));
    if (k < plan.node_tunnel.size() && plan.node_tunnel[k] >= 0)
        cc.tunnel[TunnelCounter::shaper_bytes][static_cast<size_t>(plan.node_tunnel[k])].add(len);
}

void PortSched::take_backlog(PortSched& from) {
    for (size_t i = 0; i < from.nq_; ++i) {
        Queue& fq = from.q_[i];
        Queue* to = nullptr;
        for (size_t j = 0; j < nq_ && to == nullptr; ++j)
            if (q_[j].name == fq.name) to = &q_[j];
        for (size_t j = nq_; to == nullptr && j-- > 0;)
            if (q_[j].any) to = &q_[j];
        if (to == nullptr) to = &q_[nq_ - 1];
        for (size_t k = 0; k < fq.fifo.size(); ++k) {
            Fifo& f = fq.fifo[k];
            while (!f.empty()) {
                const SchedEntry e = f.front();
                ++f.head;
                if (!push(*to, k < to->fifo.size() ? k : 0, e.m, e.t_enq)) rte_pktmbuf_free(e.m);
            }
        }
        fq.bytes = fq.pkts = 0;
        from.gauges(fq);
    }
    // What had departed there and not been taken leaves first here.
    for (; from.ready_head_ != from.ready_tail_; ++from.ready_head_) {
        const Departure d = from.ready_[from.ready_head_ % kReady];
        if (ready_tail_ - ready_head_ < kReady) {
            ready_[ready_tail_++ % kReady] = d;
            backlog_.store(backlog_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        } else if (!push(q_[nq_ - 1], 0, d.m, d.time)) {
            rte_pktmbuf_free(d.m);
        }
    }
    from.queued_ = 0;
    from.backlog_.store(0, std::memory_order_relaxed);
}

uint64_t PortSched::depth_bytes(size_t q) const {
    return q_[q].g_bytes.load(std::memory_order_relaxed);
}
uint64_t PortSched::depth_packets(size_t q) const {
    return q_[q].g_pkts.load(std::memory_order_relaxed);
}
uint64_t PortSched::peak_bytes(size_t q) const {
    return q_[q].g_peak.load(std::memory_order_relaxed);
}
uint64_t PortSched::take_peak(size_t q) {
    return q_[q].g_peak.exchange(q_[q].g_bytes.load(std::memory_order_relaxed),
                                 std::memory_order_relaxed);
}

size_t carry_scheds(const Snapshot& from, Snapshot& to) {
    size_t kept = 0;
    for (size_t p = 0; p < to.scheds.size() && p < from.scheds.size(); ++p) {
        if (to.scheds[p] == nullptr || from.scheds[p] == nullptr) continue;
        if (from.scheds[p]->signature() != to.scheds[p]->signature()) continue;
        to.scheds[p] = from.scheds[p];
        ++kept;
    }
    return kept;
}

void migrate_backlogs(Snapshot& from, Snapshot& to) {
    for (size_t p = 0; p < from.scheds.size(); ++p) {
        PortSched* old = from.scheds[p].get();
        if (old == nullptr || old->backlog() == 0) continue;
        PortSched* now = p < to.scheds.size() ? to.scheds[p].get() : nullptr;
        if (now == old) continue;
        old->lock();
        if (now != nullptr) {
            now->lock();
            now->take_backlog(*old);
            now->unlock();
        }
        old->unlock();
        // Without a scheduler now, the old one's destructor frees what it holds.
    }
}

}  // namespace dscpgw
