#!/usr/bin/env python3
"""Complete stacks on deep recursion: tests/programs/recursion.cpp recurses 20 to 80 frames deep
(up to about 27 KiB of stack) and spins at the bottom. Recorded at -F 4000 with DWARF call
graphs by rperf (unwinding while recording, the default), rperf --no-post-unwind, perf with
its default 8 KiB stack copies and perf with 64 KiB (the most the kernel copies), it prints per
recorder: samples, lost samples, bytes per sample in the file, and the share of samples whose
stack reaches main (`perf script` unwinds perf's files; rperf's post-unwound files carry their
call chains, which perf script prints as they are).

Usage: scripts/bench_deep_recursion.py [--seconds 3] [--rperf target/release/rperf]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def complete_share(data):
    """Samples of the workload's thread, and how many reach main, by perf script."""
    out = subprocess.run(["perf", "script", "-F", "comm,ip,sym", "-i", data], capture_output=True,
                         text=True).stdout
    samples = complete = 0
    for block in out.split("\n\n"):
        lines = [l for l in block.splitlines() if l.strip()]
        if not lines or not lines[0].strip().startswith("recursion"):
            continue
        # Only samples in the recursion: the hot spin() at the bottom, or descend().
        syms = " ".join(lines)
        if not re.search(r"\b(spin|descend)\b", syms):
            continue
        samples += 1
        if re.search(r"\bmain\b", syms):
            complete += 1
    return samples, complete


def lost_samples(data):
    out = subprocess.run(["perf", "report", "--stats", "-i", data], capture_output=True, text=True).stdout
    m = re.search(r"LOST_SAMPLES events:\s+(\d+)", out) or re.search(r"LOST events:\s+(\d+)", out)
    s = re.search(r"SAMPLE events:\s+(\d+)", out)
    return (int(s.group(1)) if s else 0), (int(m.group(1)) if m else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rperf", default=os.path.join(ROOT, "target/release/rperf"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rperf-bench-recursion-")
    exe = os.path.join(tmp, "recursion")
    subprocess.run(["g++", "-O2", "-g", "-o", exe, os.path.join(ROOT, "tests/programs/recursion.cpp")],
                   check=True)
    work = [exe, str(a.seconds)]
    runs = {
        "rperf": [a.rperf, "record", "-F", "4000", "-g", "dwarf"],
        "rperf --no-post-unwind": [a.rperf, "record", "-F", "4000", "-g", "dwarf", "--no-post-unwind"],
        "perf, 8 KiB": ["perf", "record", "-q", "-F", "4000", "--call-graph", "dwarf,8192"],
        "perf, 64 KiB": ["perf", "record", "-q", "-F", "4000", "--call-graph", "dwarf,65528"],
    }
    print(f"recursion 20-80 frames deep for {a.seconds} s at 4 kHz")
    print(f"{'recorder':24} {'samples':>8} {'lost':>6} {'B/sample':>9} {'reach main':>11}")
    for name, cmd in runs.items():
        data = os.path.join(tmp, name.replace(" ", "").replace(",", "") + ".data")
        p = subprocess.run(cmd + ["-o", data, "--"] + work, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"{name} failed: {p.stderr}")
        samples, lost = lost_samples(data)
        n, c = complete_share(data)
        size = os.path.getsize(data)
        print(f"{name:24} {samples:8d} {lost:6d} {size / max(samples, 1):9.0f} {100.0 * c / max(n, 1):10.2f}%",
              flush=True)


if __name__ == "__main__":
    main()
