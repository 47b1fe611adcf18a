#!/usr/bin/env python3
"""Symbolization benchmark: rperf report vs perf report on the same recordings.

For each recording (by default: rperf recordings of the inline workload, of mixed.cpp with DWARF
call graphs, of Node with --perf-basic-prof, and a perf recording of mixed.cpp), prints
  - the share of sampled frames (callchain entries) that get a name, in each tool's report
    (`perf script -F ip,sym` for perf, folded stacks for rperf), and
  - the time of a report with inline frames and source lines: `perf report -g srcline --stdio`
    against `rperf report -g --sort srcline`.

Usage: scripts/bench_symbols.py [--seconds 2] [FILE ...]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RPERF = os.path.join(ROOT, "target/release/rperf")


def timed(cmd, cwd=None):
    start = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=cwd)
    return time.monotonic() - start, p.stdout


def perf_named_share(data):
    out = subprocess.run(["perf", "script", "-F", "ip,sym", "-i", data], capture_output=True, text=True).stdout
    frames = named = 0
    for line in out.splitlines():
        parts = line.split(None, 1)
        if not parts or not all(c in "0123456789abcdef" for c in parts[0]):
            continue
        frames += 1
        if len(parts) > 1 and "[unknown]" not in parts[1]:
            named += 1
    return named, frames


def rperf_named_share(data):
    out = subprocess.run([RPERF, "report", "--format", "folded", "-i", data],
                         capture_output=True, text=True).stdout
    frames = named = 0
    for line in out.splitlines():
        stack, _, count = line.rpartition(" ")
        n = int(count)
        for f in stack.split(";")[1:]:  # the first entry is the thread name
            frames += n
            if not f.startswith("[unknown]"):
                named += n
    return named, frames


def record_defaults(tmp, seconds):
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    progs = {}
    for name, extra in [("inline", ["-fno-omit-frame-pointer"]), ("mixed", [])]:
        exe = os.path.join(tmp, name)
        subprocess.run(["g++", "-O2", "-g", "-pthread"] + extra +
                       [os.path.join(ROOT, "tests/programs", name + ".cpp"), "-o", exe], check=True)
        progs[name] = exe
    files = []
    runs = [
        ("rperf-inline-fp.data", [RPERF, "record", "-g", "fp", "-o"], [progs["inline"], str(seconds)]),
        ("rperf-mixed-dwarf.data", [RPERF, "record", "-g", "-o"], [progs["mixed"], str(seconds), "2"]),
        ("rperf-node-fp.data", [RPERF, "record", "-g", "fp", "-o"],
         ["node", "--perf-basic-prof", os.path.join(ROOT, "tests/programs/hot.js")]),
        ("perf-mixed-dwarf.data", ["perf", "record", "-q", "--call-graph", "dwarf", "-o"],
         [progs["mixed"], str(seconds), "2"]),
    ]
    for name, rec, cmd in runs:
        data = os.path.join(tmp, name)
        subprocess.run(rec + [data, "--"] + cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       cwd=tmp)
        files.append(data)
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    files = args.files or record_defaults(tempfile.mkdtemp(prefix="rperf-bench-sym-"), args.seconds)
    print(f"{'file':26} {'perf named':>12} {'rperf named':>12} {'perf -g srcline':>16} {'rperf srcline':>14} {'speedup':>8}")
    for data in files:
        pn, pf = perf_named_share(data)
        rn, rf = rperf_named_share(data)
        timed(["perf", "report", "-g", "srcline", "--stdio", "-i", data])  # warm caches
        pt, _ = timed(["perf", "report", "-g", "srcline", "--stdio", "-i", data])
        timed([RPERF, "report", "-g", "--sort", "srcline", "-i", data])
        rt, _ = timed([RPERF, "report", "-g", "--sort", "srcline", "-i", data])
        print(f"{os.path.basename(data):26} {100 * pn / max(pf, 1):11.2f}% {100 * rn / max(rf, 1):11.2f}% "
              f"{pt:15.2f}s {rt:13.2f}s {pt / max(rt, 1e-3):7.1f}x", flush=True)


if __name__ == "__main__":
    sys.exit(main())
