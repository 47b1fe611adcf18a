#!/usr/bin/env bash
# Builds rperf and profiles the bundled demo workload (tests/programs/workload.cpp: two threads
# in a known hot function), writing everything to demo-out/.
#   RPERF      an rperf binary to use instead of building one (the tests use theirs)
#   DEMO_OUT   the folder to write to (default demo-out)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v g++ >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq g++; }
if [ -z "${RPERF:-}" ]; then
  cargo build --release -q
fi
rperf=${RPERF:-target/release/rperf}
out=${DEMO_OUT:-demo-out}
mkdir -p "$out"
g++ -O2 -g -pthread tests/programs/workload.cpp -o "$out/workload"
echo "== rperf record -g (DWARF call graphs) of the demo workload"
"$rperf" record -g -o "$out/perf.data" -- "$out/workload" 2 2
echo "== rperf report --sort dso,symbol --percent-limit 1"
"$rperf" report -i "$out/perf.data" --sort dso,symbol --percent-limit 1
"$rperf" report -i "$out/perf.data" --sort dso,symbol -g callee --percent-limit 1 -o "$out/callgraph.txt"
"$rperf" report -i "$out/perf.data" -o "$out/flamegraph.svg"
"$rperf" report -i "$out/perf.data" -o "$out/stacks.folded"
"$rperf" report -i "$out/perf.data" -o "$out/report.html"
"$rperf" report -i "$out/perf.data" -o "$out/cpu.pb.gz"
echo "== call graphs (who calls each function): $out/callgraph.txt"
echo "== flamegraph: $out/flamegraph.svg (folded stacks: $out/stacks.folded)"
echo "== interactive report: $out/report.html, pprof: $out/cpu.pb.gz"
