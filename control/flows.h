// The control thread's view of the workers' RoCE flow tables: conversations merged across
// workers, with rates over the interval between two samples.
#pragma once

#include <map>
#include <vector>

#include "control/report.h"
#include "dataplane/flow_table.h"

namespace dscpgw {

class FlowAggregator {
  public:
    // Reads every table (`tables[w]` is worker w's; entries may be null). Rates are per second
    // over the time since the previous call.
    void sample(const std::vector<const FlowTable*>& tables, uint64_t now_tsc, uint64_t tsc_hz);
    // The conversations of the last sample, tunnel names from `s`.
    std::vector<FlowReport> report(const Snapshot& s) const;
    size_t size() const { return flows_.size(); }

  private:
    struct Agg {
        uint64_t pkts = 0, bytes = 0, cnps = 0, last_tsc = 0;
        uint64_t dpkts = 0, dbytes = 0, dcnps = 0;  // Since the previous sample.
        int16_t tunnel = -1;
        bool decap = false;
    };
    struct Seen {  // A slot as the previous sample saw it.
        uint64_t born = 0, pkts = 0, bytes = 0, cnps = 0;
    };
    std::map<FlowKey, Agg> flows_;
    std::vector<std::vector<Seen>> seen_;
    uint64_t prev_tsc_ = 0, now_tsc_ = 0, hz_ = 1;
};

}  // namespace dscpgw
