#!/usr/bin/env bash
# Installs, builds and runs every test: unit tests (release, and again under ASan+UBSan), the golden
# replay tests against the real binary (scapy/tshark as decoders), the live namespace tests (the
# kernel's VXLAN as the gateway's peer; dscpgw-hostmark's BPF classifier on a veth), the control
# plane (control socket, Prometheus, telemetry, reloads under load), and a bounded
# libFuzzer run.
# Ends with "N passed, N failed[, N skipped]"; exits non-zero if anything failed.
# FUZZ_SECONDS (default 60) bounds the fuzzer.
set -uo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }
if ! bash scripts/build.sh --sanitize; then
  echo "build failed"
  echo "0 passed, 1 failed"
  exit 1
fi

passed=0 failed=0 skipped=0
log=$(mktemp -d)

# gtest prints "[  PASSED  ] N tests." and, on failure, "[  FAILED  ] N tests, listed below:".
gtest() {
  local name=$1; shift
  echo "== $name"
  "$@" --gtest_brief=1 >"$log/$name.log" 2>&1
  local rc=$?
  local p f
  p=$(grep -oP '^\[  PASSED  \] \K[0-9]+' "$log/$name.log" | tail -1)
  f=$(grep -oP '^\[  FAILED  \] \K[0-9]+(?= tests?, listed below)' "$log/$name.log" | tail -1)
  p=${p:-0} f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi  # crashed or sanitizer abort
  [ "$f" -ne 0 ] && tail -50 "$log/$name.log"
  echo "   $p passed, $f failed"
  passed=$((passed + p)) failed=$((failed + f))
}

gtest unit ./build/tests/unit_tests
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  gtest unit-asan-ubsan ./build-san/tests/unit_tests

# The Python suites print PASS/FAIL/SKIP lines and end with "<name>: N passed, N failed, N skipped".
pysuite() {
  local name=$1 title=$2; shift 2
  echo "== $name ($title)"
  /usr/bin/python3 "$@" >"$log/$name.log" 2>&1
  grep -E '^(PASS|FAIL|SKIP)' "$log/$name.log" | sed 's/^/   /'
  local summary p f s
  summary=$(grep -E "^$name: " "$log/$name.log" | tail -1)
  if [ -z "$summary" ]; then
    tail -30 "$log/$name.log"
    failed=$((failed + 1))
    return
  fi
  read -r p f s < <(echo "$summary" | sed -E "s/$name: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped/\1 \2 \3/")
  [ "$f" -ne 0 ] && grep -A12 '^FAIL' "$log/$name.log"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

pysuite golden "dscpgw replay/run + scapy/tshark" tests/golden/test_replay.py "$PWD/build/dscpgw"
pysuite interop "dscpgw run between network namespaces, Linux kernel VXLAN as the peer" \
  tests/interop/test_kernel_vxlan.py "$PWD/build/dscpgw"
pysuite hostmark "dscpgw-hostmark's eBPF classifier on a veth between namespaces" \
  tests/hostmark/test_hostmark.py "$PWD/build/hostmark/dscpgw-hostmark"
pysuite control "dscpgw ctl, Prometheus (promtool, a real server), telemetry, reloads under load" \
  tests/control/test_control.py "$PWD/build/dscpgw"

echo "== fuzz (libFuzzer, ASan+UBSan, ${FUZZ_SECONDS:-60}s over both directions)"
corpus=$log/corpus
/usr/bin/python3 tests/fuzz/make_corpus.py "$corpus/seeds" >/dev/null 2>&1
mkdir -p "$corpus/work"
if ASAN_OPTIONS=detect_leaks=0 ./build-san/tests/fuzz_packet -max_total_time="${FUZZ_SECONDS:-60}" \
     -max_len=9300 -print_final_stats=1 -artifact_prefix="$log/" "$corpus/work" "$corpus/seeds" \
     >"$log/fuzz.log" 2>&1; then
  grep -E '^(Done|stat::number_of_executed_units)' "$log/fuzz.log" | sed 's/^/   /'
  echo "   1 passed, 0 failed"
  passed=$((passed + 1))
else
  tail -40 "$log/fuzz.log"
  ls "$log"/crash-* "$log"/leak-* 2>/dev/null
  echo "   0 passed, 1 failed"
  failed=$((failed + 1))
fi

echo
if [ "$skipped" -ne 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
