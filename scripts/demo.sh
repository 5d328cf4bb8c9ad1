#!/usr/bin/env bash
# The main job: install, build, then
#  - as root on a kernel with veth and vxlan: the live demo (scripts/demo_live.py): dscpgw between
#    two network namespaces it creates, the Linux kernel's VXLAN as the cloud's tunnel end, a mixed
#    RoCE/CNP/TCP workload, tshark's decoding on both sides of the tunnel and the counters;
#  - otherwise (or with --replay): the shipped sample workload through `dscpgw replay` with the
#    example config, its per-packet trace and counters, and tshark's decoding of the output.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh

if [ "${1:-}" != "--replay" ] && [ "$(id -u)" -eq 0 ]; then
  if /usr/bin/python3 scripts/demo_live.py "$PWD/build/dscpgw"; then
    exit 0
  fi
  echo "(live demo not possible here; replaying the sample capture instead)"
fi

out=$(mktemp -d)/roce-mix-out.pcap
./build/dscpgw check --config config/example.toml
echo
./build/dscpgw replay --config config/example.toml --in config/samples/roce-mix.pcap --out "$out" --trace
echo
echo "== the encapsulated packets, decoded by tshark (outer,inner DSCP and ECN) =="
tshark -r "$out" -T fields -E separator='|' \
  -e frame.number -e frame.protocols -e ip.dsfield.dscp -e ipv6.tclass.dscp -e ip.dsfield.ecn \
  -e geneve.vni -e vxlan.vni -e infiniband.bth.opcode 2>/dev/null |
  awk -F'|' '{printf "frame %s  %-60s dscp(ip)=%s dscp(ipv6)=%s ecn=%s vni=%s%s bth_opcode=%s\n", $1, $2, $3, $4, $5, $6, $7, $8}'
echo "output written to $out"
