#!/usr/bin/env python3
"""Off-CPU recording overhead: a pipe ping-pong (tests/programs/pingpong.cpp, two threads, one
context switch per message) unprofiled, under `rperf record -g` and under
`rperf record --trace-offcpu` (DWARF and fp call graphs). Prints wall time, slowdown, samples
and file size per sample.

Usage: scripts/bench_offcpu.py [--rounds 100000] [--repeat 3]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(cmd):
    start = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stderr}")
    return time.monotonic() - start, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=100000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    rperf = os.path.join(ROOT, "target/release/rperf")
    tmp = tempfile.mkdtemp(prefix="rperf-bench-offcpu-")
    exe = os.path.join(tmp, "pingpong")
    subprocess.run(["g++", "-O2", "-g", "-pthread", os.path.join(ROOT, "tests/programs/pingpong.cpp"), "-o", exe],
                   check=True)
    work = [exe, str(args.rounds)]
    base = min(timed(work)[0] for _ in range(args.repeat))
    print(f"pingpong {args.rounds} rounds: unprofiled {base:.3f} s (best of {args.repeat})")
    runs = [
        ("record -g fp", ["-g", "fp"]),
        ("record --trace-offcpu -g fp", ["--trace-offcpu", "-g", "fp"]),
        ("record -g (dwarf)", ["-g"]),
        ("record --trace-offcpu (dwarf)", ["--trace-offcpu"]),
    ]
    for name, extra in runs:
        data = os.path.join(tmp, "perf.data")
        best = None
        for _ in range(args.repeat):
            wall, err = timed([rperf, "record", "-o", data] + extra + ["--"] + work)
            best = wall if best is None else min(best, wall)
        m = re.search(r"Samples recorded: (\d+)\. Samples lost: (\d+)", err)
        samples, lost = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        size = os.path.getsize(data)
        print(f"{name:32} {best:7.3f} s  {best / base:6.2f}x  samples {samples:7d}  lost {lost:6d}  "
              f"{size / max(samples, 1):7.0f} B/sample", flush=True)


if __name__ == "__main__":
    main()
