#!/usr/bin/env bash
# Regenerates the tables in the docs that derive from the code's lists (metrics, drop reasons).
set -euo pipefail
cd "$(dirname "$0")/.."
ninja -C build tests/gen_docs >/dev/null
./build/tests/gen_docs docs/metrics.md docs/packet-path.md
