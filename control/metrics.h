// The Prometheus exposition of a Report: every metric the gateway exports, built at scrape time
// (docs/metrics.md lists them).
#pragma once

#include <prometheus/metric_family.h>

#include <vector>

#include "control/report.h"

namespace dscpgw {

std::vector<prometheus::MetricFamily> metric_families(const Report& r);

// The HELP of the labelled families whose label values come from a list.
std::string drops_help();
std::string local_replies_help();

// The tables of docs/metrics.md: every family metric_families() exports, and the drop reasons
// (also in docs/packet-path.md). Generated, so that the docs cannot drift from the code.
std::string metrics_doc_table();
std::string drop_reasons_doc_table();
// `text` (a doc page) with every block between "<!-- generated: NAME ... -->" and
// "<!-- end generated -->" replaced by the current table NAME (metrics, drop-reasons).
std::string regenerate_docs(const std::string& text);

}  // namespace dscpgw
