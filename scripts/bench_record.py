#!/usr/bin/env python3
"""Recording overhead benchmark: rperf record vs perf record on the same workload.

Runs the 2-thread CPU-bound C++ workload (tests/programs/workload.cpp, -O2 -g) unprofiled, under
`perf record` and under `rperf record`, at -F 4000, in fp and dwarf modes (rperf's DWARF mode
both unwinding while recording, its default, and with --no-post-unwind), and prints per run:
wall-time slowdown, samples recorded and lost, the recorder's peak RSS, bytes per sample and,
for DWARF runs, the share of samples whose unwound stack (by perf script) reaches the thread
entry (main / start_thread / clone).

Usage: scripts/bench_record.py [--rounds 1500] [--depth 0] [--repeat 3]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from benchutil import run_with_peak_rss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(out_dir):
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    exe = os.path.join(out_dir, "workload")
    subprocess.run(["g++", "-O2", "-g", "-pthread", "-fno-omit-frame-pointer",
                    os.path.join(ROOT, "tests/programs/workload.cpp"), "-o", exe], check=True)
    return exe


def timed(cmd):
    """Runs cmd; returns (wall seconds, stderr)."""
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = p.communicate()
    wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err}")
    return wall, err


def peak_rss_kib(cmd):
    """Peak RSS of the recorder itself."""
    return run_with_peak_rss(cmd)[1]


def script_stats(data):
    out = subprocess.run(["perf", "script", "-F", "tid,ip,sym", "-i", data],
                         capture_output=True, text=True).stdout
    samples = complete = 0
    for block in out.split("\n\n"):
        lines = [l for l in block.splitlines() if l.strip()]
        if not lines:
            continue
        samples += 1
        syms = " ".join(lines[1:])
        if re.search(r"\b(main|start_thread|clone3?|__clone)\b", syms):
            complete += 1
    return samples, complete


def perf_counts(data):
    """Samples and lost samples as perf report reads them."""
    out = subprocess.run(["perf", "report", "--stats", "-i", data], capture_output=True, text=True).stdout
    s = re.search(r"SAMPLE events:\s+(\d+)", out)
    lost = 0
    m = re.search(r"Total Lost Samples:\s+(\d+)", subprocess.run(
        ["perf", "report", "--stdio", "-i", data, "--sort", "pid"], capture_output=True, text=True).stdout)
    if m:
        lost = int(m.group(1))
    return (int(s.group(1)) if s else 0), lost


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1500, help="work per thread (about 1 ms a round)")
    ap.add_argument("--depth", type=int, default=0, help="extra recursive frames above the hot loop")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rperf-bench-")
    exe = build(tmp)
    rperf = os.path.join(ROOT, "target/release/rperf")
    work = [exe, "0", "2", str(args.depth), str(args.rounds)]

    base = min(timed(work)[0] for _ in range(args.repeat))
    print(f"workload: 2 threads, depth {args.depth}, {args.rounds} rounds each; unprofiled wall {base:.3f}s (best of {args.repeat})")
    print(f"{'recorder':24} {'mode':6} {'slowdown':>9} {'samples':>8} {'lost':>6} {'peakRSS':>9} {'B/sample':>9} {'complete':>9}")
    for mode in ["fp", "dwarf"]:
        tools = ["perf", "rperf"] + (["rperf --no-post-unwind"] if mode == "dwarf" else [])
        for tool in tools:
            data = os.path.join(tmp, f"{tool.replace(' ', '')}-{mode}.data")
            if tool == "perf":
                cg = "fp" if mode == "fp" else "dwarf"
                cmd = ["perf", "record", "-q", "-F", "4000", "--call-graph", cg, "-o", data, "--"] + work
            else:
                extra = tool.split()[1:]
                cmd = [rperf, "record", "-F", "4000", "-g", mode] + extra + ["-o", data, "--"] + work
            walls = [timed(cmd)[0] for _ in range(args.repeat)]
            wall = min(walls)
            rss = peak_rss_kib(cmd)
            samples, lost = perf_counts(data)
            size = os.path.getsize(data)
            comp = ""
            if mode == "dwarf":
                n, c = script_stats(data)
                comp = f"{100.0 * c / max(n, 1):.2f}%"
            print(f"{tool:24} {mode:6} {wall / base:8.3f}x {samples:8d} {lost:6d} {rss / 1024:8.1f}M "
                  f"{size / max(samples, 1):9.0f} {comp:>9}", flush=True)


if __name__ == "__main__":
    main()
