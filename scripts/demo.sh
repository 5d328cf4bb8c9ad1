#!/usr/bin/env bash
# The main job on a shipped example: install, build, then run the shipped sample workload (RoCE
# data, a CNP, VLAN-tagged and IPv6 RoCE, other traffic) through `dscpgw replay` with the example
# config, and decode a few of the encapsulated packets with tshark.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh

out=$(mktemp -d)/roce-mix-out.pcap
./build/dscpgw check --config config/example.toml
echo
./build/dscpgw replay --config config/example.toml --in config/samples/roce-mix.pcap --out "$out" --trace
echo
echo "== the encapsulated packets, decoded by tshark (outer DSCP,ECN / inner DSCP,ECN) =="
tshark -r "$out" -T fields -E separator='|' \
  -e frame.number -e frame.protocols -e ip.dsfield.dscp -e ipv6.tclass.dscp -e ip.dsfield.ecn \
  -e geneve.vni -e vxlan.vni -e infiniband.bth.opcode 2>/dev/null |
  awk -F'|' '{printf "frame %s  %-60s dscp(ip)=%s dscp(ipv6)=%s ecn=%s vni=%s%s bth_opcode=%s\n", $1, $2, $3, $4, $5, $6, $7, $8}'
echo "output written to $out"
