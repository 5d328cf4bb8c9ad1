// The Prometheus exposition of a Report: every metric the gateway exports, built at scrape time
// (docs/metrics.md lists them).
#pragma once

#include <prometheus/metric_family.h>

#include <vector>

#include "control/report.h"

namespace dscpgw {

std::vector<prometheus::MetricFamily> metric_families(const Report& r);

}  // namespace dscpgw
