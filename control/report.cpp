#include "control/report.h"

#include <cinttypes>

namespace dscpgw {

namespace {

// A counter summed over the workers: a scalar one, or element `i` of an array one.
uint64_t sum(const std::vector<const WorkerStats*>& ws, Counter WorkerStats::*field) {
    uint64_t total = 0;
    for (const WorkerStats* w : ws) total += (w->*field).get();
    return total;
}

template <size_t N>
uint64_t sum(const std::vector<const WorkerStats*>& ws, Counter (WorkerStats::*field)[N],
             size_t i) {
    uint64_t total = 0;
    for (const WorkerStats* w : ws) total += (w->*field)[i].get();
    return total;
}

}  // namespace

void print_counters(std::FILE* out, const Snapshot& s, const std::vector<const WorkerStats*>& ws) {
    std::fprintf(out, "ports:\n");
    for (size_t i = 0; i < s.ports.size(); ++i) {
        std::fprintf(out,
                     "  %-16s rx %" PRIu64 " pkts %" PRIu64 " bytes, tx %" PRIu64 " pkts %" PRIu64
                     " bytes\n",
                     s.ports[i].name.c_str(), sum(ws, &WorkerStats::rx_pkts, i),
                     sum(ws, &WorkerStats::rx_bytes, i), sum(ws, &WorkerStats::tx_pkts, i),
                     sum(ws, &WorkerStats::tx_bytes, i));
    }
    std::fprintf(out, "classes:\n");
    for (size_t i = 0; i <= s.classes.size(); ++i) {
        const size_t slot = i < s.classes.size() ? i : kNoClass;
        const char* name = i < s.classes.size() ? s.classes[i].name.c_str() : "(no class)";
        std::fprintf(out, "  %-16s %" PRIu64 " pkts %" PRIu64 " bytes\n", name,
                     sum(ws, &WorkerStats::class_pkts, slot),
                     sum(ws, &WorkerStats::class_bytes, slot));
    }
    std::fprintf(out, "dscp_rewrites: %" PRIu64 "\n", sum(ws, &WorkerStats::dscp_rewrites));
    std::fprintf(out, "local:\n");
    for (size_t r = 1; r < static_cast<size_t>(LocalReply::count_); ++r)
        std::fprintf(out, "  %-20s %" PRIu64 "\n", kLocalReplyNames[r],
                     sum(ws, &WorkerStats::local_replies, r));
    std::fprintf(out, "  %-20s %" PRIu64 "\n", "icmp_too_big_sent",
                 sum(ws, &WorkerStats::icmp_too_big_sent));
    std::fprintf(out, "  %-20s %" PRIu64 "\n", "icmp_rate_limited",
                 sum(ws, &WorkerStats::icmp_rate_limited));
    std::fprintf(out, "tunnels:\n");
    for (size_t i = 0; i < s.tunnels.size(); ++i) {
        std::fprintf(
            out,
            "  %-16s encap %" PRIu64 " pkts %" PRIu64 " bytes, decap %" PRIu64 " pkts %" PRIu64
            " bytes, outer_dscp_remarked %" PRIu64 ", ecn_ce_marked %" PRIu64 "\n",
            s.tunnels[i].name.c_str(), sum(ws, &WorkerStats::encap_pkts, i),
            sum(ws, &WorkerStats::encap_bytes, i), sum(ws, &WorkerStats::decap_pkts, i),
            sum(ws, &WorkerStats::decap_bytes, i), sum(ws, &WorkerStats::outer_dscp_remarked, i),
            sum(ws, &WorkerStats::ecn_ce_marked, i));
    }
    std::fprintf(out, "drops:\n");
    uint64_t total = 0;
    for (size_t r = 1; r < kDropReasonCount; ++r) {
        const uint64_t n = sum(ws, &WorkerStats::drops, r);
        total += n;
        if (n != 0)
            std::fprintf(out, "  %-20s %" PRIu64 "\n", std::string(kDropReasonInfo[r].name).c_str(),
                         n);
    }
    std::fprintf(out, "  %-20s %" PRIu64 "\n", "total", total);
    const uint64_t txf = sum(ws, &WorkerStats::tx_failed);
    if (txf != 0) std::fprintf(out, "tx_failed: %" PRIu64 "\n", txf);
}

}  // namespace dscpgw
