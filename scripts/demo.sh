#!/usr/bin/env bash
# Builds rperf and profiles the bundled demo workload (tests/programs/workload.cpp: two threads
# in a known hot function), writing everything to demo-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v g++ >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq g++; }
cargo build --release -q
out=demo-out
mkdir -p "$out"
g++ -O2 -g -pthread tests/programs/workload.cpp -o "$out/workload"
rperf=target/release/rperf
echo "== rperf record -g (DWARF call graphs) of the demo workload"
"$rperf" record -g -o "$out/perf.data" -- "$out/workload" 2 2
echo "== rperf report --sort dso,symbol -g callee"
"$rperf" report -i "$out/perf.data" --sort dso,symbol -g callee --percent-limit 1 | head -40
"$rperf" report -i "$out/perf.data" -o "$out/flamegraph.svg"
"$rperf" report -i "$out/perf.data" -o "$out/stacks.folded"
"$rperf" report -i "$out/perf.data" -o "$out/report.html"
"$rperf" report -i "$out/perf.data" -o "$out/cpu.pb.gz"
echo "== flamegraph: $out/flamegraph.svg (folded stacks: $out/stacks.folded)"
echo "== interactive report: $out/report.html, pprof: $out/cpu.pb.gz"
