#!/usr/bin/env bash
# Installs what dscpgw needs to build, run and test on Debian 12. Idempotent; skips apt when every
# package is already present. With --ovs also Open vSwitch with DPDK, for bench-forward.py
# --peer ovs only (its package enables a system service: not installed by default).
set -euo pipefail

packages=(
  # Build, and the formatting check of the test run.
  build-essential meson ninja-build pkg-config clang libclang-rt-14-dev clang-format
  libdpdk-dev dpdk libtomlplusplus-dev libpcap-dev
  # The control plane: Prometheus' data model and text format (prometheus-cpp), served by civetweb.
  prometheus-cpp-dev libcivetweb-dev
  # dscpgw-hostmark: libbpf, the BPF skeleton generator (libbpf's pkg-config file names libelf/zlib).
  libbpf-dev libelf-dev zlib1g-dev bpftool linux-libc-dev
  # Tests and benchmarks.
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-scapy tshark
  # promtool, Prometheus' own checker of the exposition format.
  prometheus
  # dpdk-testpmd, the forwarding floor the throughput benchmark compares against.
  dpdk-dev
  # Building Pktgen-DPDK for scripts/bench-pktgen.sh (from PKTGEN_SRC); script(1) gives it a terminal.
  libnuma-dev patch bsdutils
  # Live tests and the demo: namespaces, veth, the kernel's VXLAN as a peer.
  iproute2 ethtool iputils-ping
  # systemd-analyze: the unit file's checks (verify, security score).
  systemd
  # The Debian package (dpkg-buildpackage, lintian), its man pages and bash completion.
  debhelper dpkg-dev fakeroot lintian man-db groff-base bash-completion
)
if [ "${1:-}" = "--ovs" ]; then
  packages+=(openvswitch-switch-dpdk)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# tshark asks whether non-root users may capture; answer no without a prompt.
echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
