#!/usr/bin/env bash
# Runs rperf's checks and tests, installing what they need first (Linux perf as the oracle,
# g++, binutils, xz, llvm-dwp and lld for the test programs, LLVM's lli as a JIT using the GDB JIT
# interface, Node and a JDK as JIT runtimes, util-linux for the
# permission tests, Go's pprof and headless Chromium to check the pprof and HTML outputs, an
# aarch64 cross-compiler and qemu user-mode emulation for the device builds, GNU time for the
# recorder's peak memory, tmux to drive
# rperf top in a terminal, strace to see what a report opens, Debian's debuginfod server to
# serve debug info to the client's tests, OpenCSD's library to decode ETM trace) and mounting
# tracefs for the tracepoint tests; protobuf, texttable and jinja2 (pip) for simpleperf's
# Python scripts, which the report library tests run (pandas and bokeh<3.4 for the newest
# scripts' purgatorio). The device binaries are built before the
# tests, which run them.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v perf >/dev/null 2>&1 || need+=(linux-perf)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v objcopy >/dev/null 2>&1 || need+=(binutils)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)
command -v setpriv >/dev/null 2>&1 || need+=(util-linux)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
command -v llvm-dwp >/dev/null 2>&1 || need+=(llvm)
command -v ld.lld >/dev/null 2>&1 || need+=(lld)
command -v lli >/dev/null 2>&1 || need+=(llvm-runtime)
command -v go >/dev/null 2>&1 || need+=(golang-go)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v qemu-aarch64-static >/dev/null 2>&1 || need+=(qemu-user-static)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v strace >/dev/null 2>&1 || need+=(strace)
command -v debuginfod >/dev/null 2>&1 || need+=(debuginfod)
[ -x /usr/bin/time ] || need+=(time)
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-aarch64-linux-gnu)
ldconfig -p 2>/dev/null | grep -q libopencsd_c_api.so.1 || need+=(libopencsd1)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
# simpleperf's Python scripts, which the report library tests run, import these (for the
# python3 on PATH, whichever it is).
if ! python3 -c 'import google.protobuf, texttable, jinja2, pandas, bokeh' 2>/dev/null; then
  python3 -m pip install -q protobuf texttable jinja2 pandas 'bokeh<3.4' 2>/dev/null ||
    python3 -m pip install -q --break-system-packages protobuf texttable jinja2 pandas 'bokeh<3.4'
fi
if [ ! -d /sys/kernel/tracing/events ] && [ "$(id -u)" = 0 ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

# Reports ask no debuginfod server unless a test names one.
unset DEBUGINFOD_URLS
# simpleperf's recordings: ../shared/testdata/simpleperf, or fetched and checked (see the
# script); first, so that a missing network fails at once.
RPERF_SIMPLEPERF_TESTDATA=$(./scripts/fetch-testdata.sh)
export RPERF_SIMPLEPERF_TESTDATA
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
./scripts/build-device.sh
# cargo prints one "test result" line per test binary; end with the sum of them all.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
# The report library the tests load with Python (a cdylib, which `cargo test` does not link).
cargo build -p rperf-reportlib
cargo test --workspace --no-fail-fast 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
passed=$(grep -Eo '[0-9]+ passed' "$log" | awk '{s+=$1} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' "$log" | awk '{s+=$1} END {print s+0}')
echo "tests: $passed passed, $failed failed"
exit "$status"
