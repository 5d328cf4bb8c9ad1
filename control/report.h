// Human-readable counter summary, summed over worker stats blocks.
#pragma once

#include <cstdio>
#include <vector>

#include "dataplane/snapshot.h"
#include "dataplane/stats.h"

namespace dscpgw {

void print_counters(std::FILE* out, const Snapshot& s,
                    const std::vector<const WorkerStats*>& workers);

}  // namespace dscpgw
