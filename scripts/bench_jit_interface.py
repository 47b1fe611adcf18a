#!/usr/bin/env python3
"""What reading the GDB JIT interface costs while recording: a runtime (tests/programs/jitrt.c,
`many` mode) registers N functions (10,000 by default), each with its own in-memory ELF symbol
file, calling the functions registered so far after each registration. A fixed amount of work,
so the workload's wall time shows the slowdown.

Interleaved runs of: the workload alone; `rperf record` with the JIT interface read (the
default); `rperf record --no-jit-interface`. Medians of the workload's wall time (as it measures
itself), rperf's CPU time (user + system, from wait4), and, from the recording: symbol files
stored, their bytes, bytes per stored file, reads of the descriptor and of list entries, and
the samples named after a registered function.

Usage: scripts/bench_jit_interface.py [--functions 10000] [--calls 400] [--runs 5]
                                      [--rperf target/release/rperf]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def workload_seconds(out):
    """The workload's own measure: `phase many START_NS END_NS`."""
    for line in out.splitlines():
        t = line.split()
        if len(t) == 4 and t[0] == "phase":
            return (int(t[3]) - int(t[2])) / 1e9
    sys.exit(f"no phase line in: {out!r}")


def cpu_of(cmd):
    """Runs cmd; returns (stdout, stderr, CPU seconds of cmd and its children)."""
    before = os.times()
    p = subprocess.run(cmd, capture_output=True, text=True)
    after = os.times()
    if p.returncode != 0:
        sys.exit(f"{cmd} failed: {p.stderr}")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return p.stdout, p.stderr, cpu


def info(rperf, data):
    text = subprocess.run([rperf, "dump", "-i", data], capture_output=True, text=True, check=True).stdout
    kv = {}
    for line in text.splitlines():
        k, sep, v = line.strip().partition("=")
        if sep and v.isdigit():
            kv[k] = int(v)
    return kv


def named_share(rperf, data):
    text = subprocess.run([rperf, "report", "-i", data, "--sort", "dso"], capture_output=True, text=True,
                          check=True).stdout
    for line in text.splitlines():
        t = line.split()
        if len(t) >= 2 and t[-1] == "[JIT]":
            return float(t[0].rstrip("%"))
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--functions", type=int, default=10000)
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rperf", default=os.path.join(ROOT, "target/release/rperf"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rperf-bench-jit-")
    exe = os.path.join(tmp, "jitrt")
    subprocess.run(["gcc", "-O2", "-rdynamic", "-o", exe, os.path.join(ROOT, "tests/programs/jitrt.c")],
                   check=True)
    work = [exe, "many", str(a.functions), str(a.calls)]
    data = os.path.join(tmp, "perf.data")
    modes = {"alone": None, "rperf": [], "rperf --no-jit-interface": ["--no-jit-interface"]}
    wall = {m: [] for m in modes}
    cpu = {m: [] for m in modes if m != "alone"}
    last = {}
    for _ in range(a.runs):
        for mode, extra in modes.items():
            if extra is None:
                out, _, _ = cpu_of(work)
            else:
                out, _, c = cpu_of([a.rperf, "record", "-o", data] + extra + ["--"] + work)
                cpu[mode].append(c)
                last[mode] = (info(a.rperf, data), named_share(a.rperf, data), os.path.getsize(data))
            wall[mode].append(workload_seconds(out))
    base = statistics.median(wall["alone"])
    print(f"workload: {a.functions} functions registered, {a.calls} calls after each; {a.runs} interleaved runs")
    for mode in modes:
        w = statistics.median(wall[mode])
        line = f"{mode:26} workload {w:.3f} s ({100 * (w / base - 1):+.1f}%)"
        if mode in cpu:
            line += f", rperf + workload CPU {statistics.median(cpu[mode]):.3f} s"
            kv, share, size = last[mode]
            files, nbytes = kv.get("jit_symfiles", 0), kv.get("jit_symfile_bytes", 0)
            line += (f", {files} symbol files stored ({nbytes} B, {nbytes / files if files else 0:.0f} B each),"
                     f" {kv.get('jit_descriptor_reads', 0)} descriptor reads, {kv.get('jit_entry_reads', 0)}"
                     f" entry reads, recording {size / 1e6:.2f} MB, {share:.1f}% of samples in [JIT]")
        print(line)


if __name__ == "__main__":
    main()
