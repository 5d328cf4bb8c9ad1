#!/usr/bin/env bash
# Builds dscpgw: build/ (release: the binary, unit tests, benchmarks; DPDK linked in, meson's
# dpdk_static) and, with --sanitize, build-san/ (clang, ASan+UBSan, the libFuzzer target) and
# build-tsan/ (clang, ThreadSanitizer: the binary and the unit tests, for the concurrent tests),
# both with DPDK's shared libraries (uninstrumented either way).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f build/build.ninja ]; then
  meson setup build --buildtype=release >/dev/null
fi
ninja -C build >/dev/null

if [ "${1:-}" = "--sanitize" ]; then
  if [ ! -f build-san/build.ninja ]; then
    CC=clang CXX=clang++ meson setup build-san --buildtype=debug -Doptimization=1 \
      -Db_sanitize=address,undefined -Db_lundef=false -Dfuzz=true -Dbench=false -Ddpdk_static=false \
      -Dcpp_args=-fno-sanitize-recover=all -Dcpp_link_args=-fno-sanitize-recover=all >/dev/null
  fi
  ninja -C build-san >/dev/null
  if [ ! -f build-tsan/build.ninja ]; then
    CC=clang CXX=clang++ meson setup build-tsan --buildtype=debug -Doptimization=1 \
      -Db_sanitize=thread -Db_lundef=false -Dbench=false -Ddpdk_static=false >/dev/null
  fi
  ninja -C build-tsan dscpgw tests/unit_tests >/dev/null
fi
