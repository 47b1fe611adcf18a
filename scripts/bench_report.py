#!/usr/bin/env python3
"""Report speed benchmark: `rperf report -g` vs `perf report --stdio` on the same DWARF recording.

Records tests/programs/mixed.cpp (-O2 -g, 2 threads) with `perf record --call-graph dwarf`
at 4000 Hz (at least 25k samples and 200 MB unless --seconds is lowered), then reports it with
both tools, output to /dev/null, and prints wall time and peak RSS of each (GNU time). With
samply installed (`cargo install samply`), `samply import --save-only` is timed too.

With --baseline BIN (an rperf binary built from an earlier commit), the same reports are timed
with it too, interleaved with this build's over --runs runs (medians), for before/after checks.

Usage: scripts/bench_report.py [--seconds 4] [--data FILE] [--baseline BIN] [--runs 5]
       scripts/bench_report.py --seconds 40   (a multi-GB recording: memory must stay bounded)
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(cmd):
    """(wall seconds, peak RSS MiB) of cmd, stdout discarded."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr[-2000:]}")
    wall, rss = out.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss) / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--data", help="an existing DWARF recording to report")
    ap.add_argument("--baseline", help="another rperf binary to time on the same reports")
    ap.add_argument("--runs", type=int, default=1, help="runs per command (medians are shown)")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    rperf = os.path.join(ROOT, "target/release/rperf")
    data = args.data
    if not data:
        tmp = tempfile.mkdtemp(prefix="rperf-bench-report-")
        exe = os.path.join(tmp, "mixed")
        subprocess.run(["g++", "-O2", "-g", "-pthread", os.path.join(ROOT, "tests/programs/mixed.cpp"), "-o", exe],
                       check=True)
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-F", "4000", "--call-graph", "dwarf", "-o", data, "--", exe,
                        str(args.seconds), "2"], check=True, stdout=subprocess.DEVNULL)
    stats = subprocess.run(["perf", "report", "--stats", "-i", data], capture_output=True, text=True).stdout
    samples = next((l.split(":")[1].split()[0] for l in stats.splitlines() if "SAMPLE events" in l), "?")
    print(f"recording: {data}: {os.path.getsize(data) / 1e6:.0f} MB, {samples} samples")
    runs = [
        ("perf report --stdio", ["perf", "report", "--stdio", "-i", data]),
        ("rperf report -g", [rperf, "report", "-g", "-i", data]),
        ("rperf report", [rperf, "report", "-i", data]),
    ]
    if args.baseline:
        runs.append(("baseline rperf report -g", [args.baseline, "report", "-g", "-i", data]))
        runs.append(("baseline rperf report", [args.baseline, "report", "-i", data]))
    if shutil.which("samply"):
        runs.append(("samply import --save-only", ["samply", "import", "--save-only", "-o",
                                                    os.path.join(tempfile.mkdtemp(), "p.json"), data]))
    for _, cmd in runs:
        measure(cmd)  # warm the page cache and symbol files
    # Interleaved runs, so that a busy moment of the machine weighs on every command alike.
    samples = {name: [] for name, _ in runs}
    for _ in range(args.runs):
        for name, cmd in runs:
            samples[name].append(measure(cmd))
    results = {}
    for name, _ in runs:
        walls = sorted(w for w, _ in samples[name])
        rsss = sorted(r for _, r in samples[name])
        results[name] = (walls[len(walls) // 2], rsss[len(rsss) // 2])
        wall, rss = results[name]
        print(f"{name:28} {wall:8.3f} s  {rss:8.1f} MiB peak RSS", flush=True)
    pw, prss = results["perf report --stdio"]
    rw, rrss = results["rperf report -g"]
    print(f"rperf report -g is {pw / rw:.1f}x faster than perf report, with {rrss / prss:.2f}x its peak RSS")
    if args.baseline:
        bw, brss = results["baseline rperf report -g"]
        print(f"against the baseline: {rw / bw:.2f}x its time, {rrss / brss:.2f}x its peak RSS")


if __name__ == "__main__":
    main()
