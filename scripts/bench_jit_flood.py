#!/usr/bin/env python3
"""JIT flood benchmark: a runtime that registers far more GDB JIT symbol files than any real one.

Runs tests/programs/jitrt.c's `flood` mode (N entries of BYTES each, then SECONDS of work in C)
under `rperf record` (frame pointers and DWARF), interleaved with the same recording under
`--no-jit-interface` (the recorder without the reader, as the peer that pays nothing for it),
and prints for each run: samples recorded and lost, the recorder's peak RSS, the file size, and
rperf's line about the symbol files it left out. The targets: peak RSS at most 64 MiB and less
than 1% of samples lost with the reader on.

Usage: scripts/bench_jit_flood.py [--runs 5] [--entries 100000] [--bytes 8192] [--seconds 3]
"""
import argparse
import os
import re
import subprocess
import tempfile

from benchutil import run_with_peak_rss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--entries", type=int, default=100000)
    ap.add_argument("--bytes", type=int, default=8192)
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    rperf = os.path.join(ROOT, "target/release/rperf")
    with tempfile.TemporaryDirectory() as tmp:
        jitrt = os.path.join(tmp, "jitrt")
        subprocess.run(["gcc", "-O2", "-rdynamic", "-o", jitrt, os.path.join(ROOT, "tests/programs/jitrt.c")],
                       check=True)
        flood = [jitrt, "flood", str(a.entries), str(a.bytes), str(a.seconds)]
        data = os.path.join(tmp, "flood.data")
        print(f"{a.entries} symbol files of {a.bytes} B, {a.seconds} s of work, {a.runs} interleaved runs")
        print(f"{'mode':<28} {'samples':>8} {'lost':>7} {'lost %':>7} {'peak RSS':>10} {'file MB':>8}  left out")
        worst = {}
        for _ in range(a.runs):
            for name, extra in [("fp, reader on", []), ("fp, --no-jit-interface", ["--no-jit-interface"]),
                                ("dwarf, reader on", ["-g", "dwarf"]),
                                ("dwarf, --no-jit-interface", ["-g", "dwarf", "--no-jit-interface"])]:
                err, rss = run_with_peak_rss([rperf, "record", *extra, "-o", data, "--", *flood])
                m = re.search(r"Samples recorded: (\d+)\. Samples lost: (\d+)", err)
                samples, lost = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
                pct = 100.0 * lost / max(1, samples + lost)
                size = os.path.getsize(data) / 1e6 if os.path.exists(data) else 0.0
                left = re.search(r"(\d+) JIT symbol files \([^)]*\) were not kept", err)
                print(f"{name:<28} {samples:>8} {lost:>7} {pct:>6.2f}% {rss / 1024:>8.1f} MiB {size:>8.1f}  "
                      f"{left.group(1) if left else 0}")
                w = worst.setdefault(name, [0.0, 0])
                w[0], w[1] = max(w[0], pct), max(w[1], rss)
        print()
        for name, (pct, rss) in worst.items():
            print(f"worst of {a.runs}: {name:<28} lost {pct:.2f}%, peak RSS {rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
