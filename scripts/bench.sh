#!/usr/bin/env bash
# Micro-benchmark of the per-packet path (ns/packet for mark+encap and decap, 74/1082/4154-byte
# frames). Not a test: it prints figures. Extra arguments go to Google Benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
./build/tests/bench_packet --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_min_time=0.5 "$@"
