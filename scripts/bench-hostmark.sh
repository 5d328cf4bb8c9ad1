#!/usr/bin/env bash
# Per-packet cost of dscpgw-hostmark's BPF program, measured by the kernel itself
# (BPF_PROG_TEST_RUN with repeat=1000000: average ns per run of the program on one frame) for a
# RoCE data frame over IPv4 and IPv6, a CNP, and a frame no class takes. Not a test: it prints
# figures. Needs root (loading BPF).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 - "$tmp/frames.pcap" <<'PY'
import logging, sys
logging.getLogger("scapy.runtime").setLevel(logging.ERROR)
sys.path.insert(0, "tests/golden")
from scapy.all import wrpcap
import pktlib
wrpcap(sys.argv[1], [pktlib.roce("10.10.0.5", "10.20.0.9", opcode=0x0A, tos=2, payload=1024),
                     pktlib.roce("10.10.0.5", "10.20.0.9", opcode=0x81, tos=0),
                     pktlib.roce("2001:db8:10::5", "2001:db8:20::9", opcode=0x0A, tos=2, payload=1024),
                     pktlib.other("10.10.0.5", "10.20.0.9", proto="udp")])
PY
./build/tests/hostmark_equivalence config/example.toml "$tmp/frames.pcap" --bench
