#!/usr/bin/env python3
"""Call-tree report benchmark on a g++ compile (cc1plus: code nobody here wrote).

Records `g++ -O2 -c` of a translation unit that includes the whole C++ standard library and
instantiates deep templates, with `rperf record -g -F 4000` (DWARF call graphs, unwound while
recording), then times reports of it that build call trees, interleaved, each right after an
untimed `cat` of the recording:

- `rperf report -g` (simpleperf's brief caller graphs) and `rperf report --children`;
- with --baseline BIN, the same with another rperf binary (an earlier commit), for before/after;
- `perf report -g --stdio` on the same file, as the peer.

Prints the median wall time and peak RSS (VmHWM) of each command over --runs, and the ratios.

Usage: scripts/bench_call_tree.py [--runs 7] [--baseline BIN] [--keep DIR]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchutil import run_with_peak_rss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SOURCE = r"""
#include <bits/stdc++.h>
template <int N> struct Chain { static long v() { return Chain<N - 1>::v() * 3 + N; } };
template <> struct Chain<0> { static long v() { return 1; } };
int main() {
  std::map<std::string, std::vector<std::pair<int, double>>> m;
  std::regex r("(a+)(b*)c?");
  std::unordered_map<int, std::string> u;
  for (int i = 0; i < 100; i++) u[i] = std::to_string(i);
  std::sort(m["x"].begin(), m["x"].end());
  return int(Chain<400>::v() + long(u.size()) + std::regex_match("aab", r));
}
"""


def record(rperf, folder):
    data = os.path.join(folder, "cc1plus.data")
    if os.path.exists(data):
        return data
    src = os.path.join(folder, "big.cpp")
    with open(src, "w") as f:
        f.write(SOURCE)
    subprocess.run([rperf, "record", "-g", "-F", "4000", "-o", data, "--", "g++", "-O2", "-c", src,
                    "-o", os.path.join(folder, "big.o")], check=True, stderr=subprocess.DEVNULL)
    return data


def timed(cmd, data):
    subprocess.run(["cat", data], stdout=subprocess.DEVNULL, check=True)
    start = time.monotonic()
    err, rss = run_with_peak_rss(cmd)
    return time.monotonic() - start, rss, err


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--baseline", help="another rperf binary, timed on the same reports")
    ap.add_argument("--keep", help="a folder for the recording, reused when it is there")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    rperf = os.path.join(ROOT, "target", "release", "rperf")
    folder = args.keep or tempfile.mkdtemp(prefix="rperf-bench-cc1-")
    os.makedirs(folder, exist_ok=True)
    data = record(rperf, folder)
    print(f"recording: {data} ({os.path.getsize(data) / 1e6:.1f} MB)")
    commands = {}
    for name, binary in [("rperf", rperf), ("baseline", args.baseline)]:
        if binary:
            commands[f"{name} report -g"] = [binary, "report", "-i", data, "-g"]
            commands[f"{name} report --children"] = [binary, "report", "-i", data, "--children"]
    commands["perf report -g"] = ["perf", "report", "-i", data, "-g", "--stdio", "--force"]
    results = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, cmd in commands.items():
            wall, rss, err = timed(cmd, data)
            if "error" in err.lower() and not name.startswith("perf"):
                sys.exit(f"{name} failed: {err}")
            results[name].append((wall, rss))
    medians = {n: (statistics.median(w for w, _ in r), statistics.median(m for _, m in r))
               for n, r in results.items()}
    print(f"{'command':<28} {'median s':>9} {'peak MiB':>9}")
    for name, (wall, rss) in medians.items():
        print(f"{name:<28} {wall:>9.3f} {rss / 1024:>9.1f}")
    base = medians["rperf report -g"]
    for other in ["baseline report -g", "perf report -g"]:
        if other in medians:
            w, m = medians[other]
            print(f"rperf report -g against {other}: {base[0] / w:.2f}x the time, "
                  f"{base[1] / m:.2f}x the memory")


if __name__ == "__main__":
    main()
