#include "control/flows.h"

#include "config/config.h"

namespace dscpgw {

void FlowAggregator::sample(const std::vector<const FlowTable*>& tables, uint64_t now,
                            uint64_t hz) {
    prev_tsc_ = now_tsc_ == 0 ? now : now_tsc_;
    now_tsc_ = now;
    hz_ = hz == 0 ? 1 : hz;
    flows_.clear();
    seen_.resize(tables.size());
    for (size_t w = 0; w < tables.size(); ++w) {
        const FlowTable* t = tables[w];
        if (t == nullptr) continue;
        seen_[w].resize(t->size());
        for (uint32_t i = 0; i < t->size(); ++i) {
            FlowSample fs;
            Seen& prev = seen_[w][i];
            if (!t->read(i, fs)) continue;
            // A slot that was taken by another conversation since counts from zero.
            const bool same = prev.born == fs.born_tsc && fs.pkts >= prev.pkts;
            Agg& a = flows_[fs.key];
            a.pkts += fs.pkts;
            a.bytes += fs.bytes;
            a.cnps += fs.cnps;
            a.dpkts += fs.pkts - (same ? prev.pkts : 0);
            a.dbytes += fs.bytes - (same ? prev.bytes : 0);
            a.dcnps += fs.cnps - (same ? prev.cnps : 0);
            if (fs.last_tsc >= a.last_tsc) {
                a.last_tsc = fs.last_tsc;
                a.tunnel = fs.tunnel;
                a.decap = fs.decap;
            }
            prev = {fs.born_tsc, fs.pkts, fs.bytes, fs.cnps};
        }
    }
}

std::vector<FlowReport> FlowAggregator::report(const Snapshot& s) const {
    std::vector<FlowReport> out;
    const double dt = static_cast<double>(now_tsc_ - prev_tsc_) / static_cast<double>(hz_);
    const auto rate = [dt](uint64_t n) { return dt > 0 ? static_cast<double>(n) / dt : 0.0; };
    for (const auto& [k, a] : flows_) {
        FlowReport f;
        const auto fam = static_cast<uint8_t>(k.family);
        f.src = format_ip(fam, k.src);
        f.dst = format_ip(fam, k.dst);
        f.dqp = k.dqp;
        f.tunnel = a.tunnel >= 0 && static_cast<size_t>(a.tunnel) < s.tunnels.size()
                       ? s.tunnels[static_cast<size_t>(a.tunnel)].name
                       : "";
        f.decap = a.decap;
        f.pkts = a.pkts;
        f.bytes = a.bytes;
        f.cnps = a.cnps;
        f.pps = rate(a.dpkts);
        f.bps = rate(a.dbytes);
        f.cnps_per_s = rate(a.dcnps);
        f.idle_s = now_tsc_ > a.last_tsc
                       ? static_cast<double>(now_tsc_ - a.last_tsc) / static_cast<double>(hz_)
                       : 0.0;
        out.push_back(std::move(f));
    }
    return out;
}

}  // namespace dscpgw
