#!/usr/bin/env bash
# Installs, builds and runs every test: the formatting check (clang-format), unit tests (release,
# again under ASan+UBSan and under ThreadSanitizer), the golden
# replay tests against the real binary (scapy/tshark as decoders), the live namespace tests (the
# kernel's VXLAN as the gateway's peer; Linux TCP with and without ECN through the shaper;
# dscpgw-hostmark's BPF classifier on a veth), the Debian package (built, unpacked, run, lintian;
# man pages and completion), the control plane (control socket, Prometheus, systemd notify,
# telemetry, reloads under load), Pktgen-DPDK over memif (when PKTGEN_SRC names its source), the
# concurrent tests again with a ThreadSanitizer build of the
# gateway (workers and the control thread on pcap and memif vdevs, reloads under RCU, reloads under
# load), and bounded libFuzzer runs.
# Ends with "N passed, N failed[, N skipped]"; exits non-zero if anything failed.
# FUZZ_SECONDS (default 60) bounds the packet fuzzer; FUZZ_CONFIG_SECONDS and FUZZ_LOCAL_SECONDS
# (default 20 each) the config and local-traffic fuzzers.
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

# Formatting: every C/C++ source as .clang-format has it; a diff fails the run.
echo "== format (clang-format, .clang-format)"
unformatted=()
while IFS= read -r f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done < <(git ls-files '*.cpp' '*.h' '*.c' 2>/dev/null || find . -path ./build\* -prune -o \( -name '*.cpp' -o -name '*.h' -o -name '*.c' \) -print)
if [ ${#unformatted[@]} -eq 0 ]; then
  echo "   1 passed, 0 failed"
  passed=$((passed + 1))
else
  echo "   not formatted (clang-format -i FILE): ${unformatted[*]}"
  echo "   0 passed, 1 failed"
  failed=$((failed + 1))
fi

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
# ThreadSanitizer: a report stops the process (exit 66), which fails the test that ran it.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
  gtest unit-tsan ./build-tsan/tests/unit_tests

# The Python suites print PASS/FAIL/SKIP lines and end with "<name>: N passed, N failed, N skipped".
suite() {
  local name=$1 title=$2; shift 2
  echo "== $name ($title)"
  "$@" >"$log/$name.log" 2>&1
  grep -E '^(PASS|FAIL|SKIP)' "$log/$name.log" | sed 's/^/   /'
  local summary p f s
  summary=$(grep -E "^[a-z_-]+: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$" "$log/$name.log" | tail -1)
  if [ -z "$summary" ]; then
    tail -30 "$log/$name.log"
    failed=$((failed + 1))
    return
  fi
  read -r p f s < <(echo "$summary" | sed -E "s/^[a-z_-]+: ([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped/\1 \2 \3/")
  [ "$f" -ne 0 ] && grep -A12 '^FAIL' "$log/$name.log"
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

pysuite() { local name=$1 title=$2; shift 2; suite "$name" "$title" /usr/bin/python3 "$@"; }

pysuite golden "dscpgw replay/run + scapy/tshark" tests/golden/test_replay.py "$PWD/build/dscpgw"
pysuite interop "dscpgw run between network namespaces, Linux kernel VXLAN as the peer" \
  tests/interop/test_kernel_vxlan.py "$PWD/build/dscpgw"
pysuite live-qos "a Linux TCP flow with and without ECN through the 100 Mbit/s shaper, CNP probes" \
  tests/interop/test_live_qos.py "$PWD/build/dscpgw"
pysuite hostmark "dscpgw-hostmark's eBPF classifier on a veth between namespaces" \
  tests/hostmark/test_hostmark.py "$PWD/build/hostmark/dscpgw-hostmark"
pysuite doctor "dscpgw doctor against fake /proc and /sys roots; the path MTU probe between namespaces" \
  tests/doctor/test_doctor.py "$PWD/build/dscpgw"
pysuite package "the Debian package: dpkg-buildpackage, contents, packaged binaries, lintian; man pages, completion" \
  tests/package/test_package.py "$PWD/build"
pysuite control "dscpgw ctl, Prometheus (promtool, a real server), telemetry, reloads under load" \
  tests/control/test_control.py "$PWD/build/dscpgw"
# Pktgen-DPDK (built from PKTGEN_SRC; SKIP with the reason without it) against `dscpgw run` over
# two memif pairs: the CNP mix, IPv6 and Geneve decap at 1 % of the link, loss and DSCP/ECN checked.
suite pktgen "Pktgen-DPDK over memif and vhost-user, short form of scripts/bench-pktgen.sh" \
  bash scripts/bench-pktgen.sh --quick --dscpgw "$PWD/build/dscpgw"

# The concurrent tests again, with the ThreadSanitizer build: `dscpgw run` with workers and the
# control thread (two workers on one CPU with reloads under RCU; pcap and memif vdevs),
# and the control plane's suite (ctl, Prometheus, telemetry, reloads, reloads under load).
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp"
# The two-gateway memif test is left to the release run: there one gateway is a memif client,
# whose connection net_memif's interrupt thread sets up and the exit path frees, inside the
# uninstrumented EAL (stacks that end at librte_eal, which no suppression short of all of the EAL
# can match); the memif server with testpmd as its peer still runs here.
GOLDEN_SKIP=run_two_gateways_round_trip_over_memif GOLDEN_ONLY=run_ pysuite golden-tsan "dscpgw run under ThreadSanitizer" \
  tests/golden/test_replay.py "$PWD/build-tsan/dscpgw"
DSCPGW_LOAD_RATE=800 DSCPGW_LOAD_PACKETS=24000 DSCPGW_LOAD_RX_SHARE=0.95 \
  DSCPGW_LOAD_MIN_OK=3 DSCPGW_LOAD_MIN_BAD=1 pysuite control-tsan "the control plane under ThreadSanitizer" \
  tests/control/test_control.py "$PWD/build-tsan/dscpgw"
unset TSAN_OPTIONS

# Three libFuzzer targets (ASan+UBSan): the packet path in both directions, the config loader,
# and the gateway's own traffic (ARP, ND, ICMP). Each starts from its seeds.
corpus=$log/corpus
/usr/bin/python3 tests/fuzz/make_corpus.py "$corpus/packet-seeds" >/dev/null 2>&1
/usr/bin/python3 tests/fuzz/make_local_corpus.py "$corpus/local-seeds" >/dev/null 2>&1
mkdir -p "$corpus/config-seeds"
cp config/*.toml tests/golden/gw.toml tests/golden/qos.toml "$corpus/config-seeds/"
for target in packet:${FUZZ_SECONDS:-60}:9300 config:${FUZZ_CONFIG_SECONDS:-20}:8192 \
              local:${FUZZ_LOCAL_SECONDS:-20}:9300; do
  name=${target%%:*}; rest=${target#*:}; secs=${rest%%:*}; maxlen=${rest#*:}
  echo "== fuzz-$name (libFuzzer, ASan+UBSan, ${secs}s)"
  mkdir -p "$corpus/$name-work"
  if ASAN_OPTIONS=detect_leaks=0 ./build-san/tests/fuzz_$name -max_total_time="$secs" \
       -max_len="$maxlen" -print_final_stats=1 -artifact_prefix="$log/$name-" "$corpus/$name-work" \
       "$corpus/$name-seeds" >"$log/fuzz-$name.log" 2>&1; then
    grep -E '^(Done|stat::number_of_executed_units)' "$log/fuzz-$name.log" | sed 's/^/   /'
    echo "   1 passed, 0 failed"
    passed=$((passed + 1))
  else
    tail -40 "$log/fuzz-$name.log"
    ls "$log/$name"-crash-* "$log/$name"-leak-* 2>/dev/null
    echo "   0 passed, 1 failed"
    failed=$((failed + 1))
  fi
done

echo
if [ "$skipped" -ne 0 ]; then
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
