#!/usr/bin/env bash
# Pktgen-DPDK as the line-rate client of `dscpgw run` over two memif pairs (vhost-user pairs for
# the jumbo profiles, which DPDK 22.11's memif cannot carry): builds Pktgen-DPDK
# against the system DPDK, then runs scripts/bench-pktgen.py (the profiles of scripts/pktgen/,
# Pktgen's sent/received rates and loss, the gateway's counters, DSCP/ECN decoded by tshark).
#
# Usage: PKTGEN_SRC=DIR|TARBALL scripts/bench-pktgen.sh [--quick] [bench-pktgen.py options]
#   PKTGEN_SRC      Pktgen-DPDK 23.06.1 source: an unpacked tree or its .tar.gz (the newest
#                   release that builds against Debian 12's DPDK 22.11; upstream:
#                   github.com/pktgen/Pktgen-DPDK, tag pktgen-23.06.1)
#   PKTGEN_PATCHES  patch files applied (patch -p1) to a tarball's tree; default: the *.patch
#                   files beside the tarball. Pktgen 23.06.1 panics on a port that cannot set its
#                   MTU, as DPDK 22.11's net_memif cannot: the fix is one line (accept -ENOTSUP
#                   from rte_eth_dev_set_mtu in app/pktgen-port-cfg.c).
#   PKTGEN_BUILD    where Pktgen is built and kept between runs (default: build-pktgen/)
#   PKTGEN          a Pktgen binary to use instead of building one
#   --quick         the short form scripts/test.sh runs: the CNP mix, IPv6, Geneve decap and the
#                   4154-byte frames both ways (over vhost-user), 3 s
#                   each at 1 % of the link, judged (--check): every packet accounted for, no
#                   drops but a full TX ring's (<= 0.1 %), DSCP/ECN right.
#                   Prints SKIP lines with the reason when Pktgen cannot be had.
# Without --quick, every profile for 5 s at the profile's rate (100 %), figures printed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
quick=0 args=()
for a in "$@"; do
  if [ "$a" = --quick ]; then quick=1; else args+=("$a"); fi
done
QUICK_PROFILES=roce-mix,roce6-1082,decap-geneve-1082,roce-4154,decap-vxlan-4154

skip() {  # the reason, as the test suite reports it
  if [ "$quick" = 1 ]; then
    for p in ${QUICK_PROFILES//,/ }; do echo "SKIP $p: $1"; done
    echo "pktgen: 0 passed, 0 failed, $(echo ${QUICK_PROFILES//,/ } | wc -w) skipped"
    exit 0
  fi
  echo "bench-pktgen: $1" >&2
  exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root (DPDK's runtime directory, memif sockets)"

build_pktgen() {
  local src=${PKTGEN_SRC:-}
  [ -n "$src" ] || skip "PKTGEN_SRC is not set (a Pktgen-DPDK 23.06.1 source directory or tarball)"
  [ -e "$src" ] || skip "PKTGEN_SRC=$src does not exist"
  local dest=${PKTGEN_BUILD:-$ROOT/build-pktgen}
  local id
  if [ -d "$src" ]; then id="dir $(cd "$src" && pwd)"; else id="tar $(sha256sum "$src" | cut -d' ' -f1)"; fi
  local patches=()
  if [ -n "${PKTGEN_PATCHES:-}" ]; then
    read -r -a patches <<<"$PKTGEN_PATCHES"
  elif [ -f "$src" ]; then
    shopt -s nullglob
    patches=("$(dirname "$src")"/*.patch)
    shopt -u nullglob
  fi
  for p in "${patches[@]}"; do id+=" $(sha256sum "$p" | cut -d' ' -f1)"; done
  if [ -x "$dest/tree/build/app/pktgen" ] && [ "$(cat "$dest/source" 2>/dev/null)" = "$id" ]; then
    PKTGEN=$dest/tree/build/app/pktgen
    return
  fi
  for tool in meson ninja pkg-config; do
    command -v $tool >/dev/null || skip "$tool not found (scripts/install-deps.sh installs it)"
  done
  pkg-config --exists libdpdk || skip "libdpdk-dev not installed"
  for h in numa.h pcap/pcap.h; do
    [ -e /usr/include/$h ] || skip "/usr/include/$h missing (libnuma-dev, libpcap-dev)"
  done
  rm -rf "$dest" && mkdir -p "$dest"
  if [ -d "$src" ]; then
    cp -a "$src" "$dest/tree"
  else
    mkdir "$dest/tree"
    tar -xzf "$src" -C "$dest/tree" --strip-components=1 || skip "cannot unpack $src"
    for p in "${patches[@]}"; do
      patch -p1 -s -d "$dest/tree" <"$p" || skip "patch $p does not apply to $src"
    done
  fi
  grep -q 'ENOTSUP' "$dest/tree/app/pktgen-port-cfg.c" ||
    echo "bench-pktgen: warning: this Pktgen panics on net_memif's MTU (see PKTGEN_PATCHES)" >&2
  echo "bench-pktgen: building Pktgen-DPDK from $src in $dest (about 1.5 minutes on 2 cores)" >&2
  # Lua off: its library does not find DPDK's headers with the system DPDK.
  if ! (cd "$dest/tree" && meson setup build -Denable_lua=false >"$dest/build.log" 2>&1 &&
        ninja -C build >>"$dest/build.log" 2>&1); then
    tail -20 "$dest/build.log" >&2
    skip "Pktgen-DPDK did not build (log: $dest/build.log)"
  fi
  echo "$id" >"$dest/source"
  PKTGEN=$dest/tree/build/app/pktgen
}

if [ -z "${PKTGEN:-}" ]; then build_pktgen; fi
[ -x "$PKTGEN" ] || skip "PKTGEN=$PKTGEN is not executable"
if [ "$quick" = 1 ]; then
  args=(--check --profiles "$QUICK_PROFILES" --seconds 3 --rate 1 "${args[@]}")
fi
exec /usr/bin/python3 "$ROOT/scripts/bench-pktgen.py" --pktgen "$PKTGEN" "${args[@]}"
