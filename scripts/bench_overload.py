#!/usr/bin/env python3
"""Overload benchmark: recording at a rate the machine cannot sustain.

Records the whole system (`-a -F 50000 -g dwarf,STACK`) while the 2-thread CPU workload runs
and a shell starts hundreds of short-lived processes (fork + exec of /bin/true), with rperf and
with perf, and prints for each: samples written, samples lost, stacks cut, side-band records
lost, the recorder's peak RSS, the file size, and whether the short-lived processes were
attributed right (every sample in /usr/bin/true's code under the comm `true`; samples of comm
`true` whose binary is unknown).

Usage: scripts/bench_overload.py [--seconds 4] [--children 400] [--stack 65528]
"""
import argparse
import os
import re
import subprocess
import tempfile

from benchutil import run_with_peak_rss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(out_dir):
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    exe = os.path.join(out_dir, "workload")
    subprocess.run(["g++", "-O2", "-g", "-pthread", os.path.join(ROOT, "tests/programs/workload.cpp"),
                    "-o", exe], check=True)
    return exe


def attribution(rperf, data):
    """(samples in /usr/bin/true, of those under comm `true`, samples of comm `true` in [unknown])."""
    out = subprocess.run([rperf, "report", "-i", data, "--sort", "comm,dso", "-n", "--csv"],
                         capture_output=True, text=True).stdout
    in_true = right = unknown = 0
    for line in out.splitlines():
        f = line.split(",")
        if len(f) < 4 or not f[1].strip().isdigit():
            continue
        n, comm, dso = int(f[1]), f[2].strip(), f[3].strip()
        if dso.endswith("/true"):
            in_true += n
            right += n if comm == "true" else 0
        if comm == "true" and dso == "[unknown]":
            unknown += n
    return in_true, right, unknown


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--children", type=int, default=400)
    ap.add_argument("--stack", type=int, default=65528)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="rperf-overload-")
    exe = build(tmp)
    rperf = os.path.join(ROOT, "target/release/rperf")
    job = (f"{exe} {args.seconds} 2 0 0 & for i in $(seq {args.children}); do /bin/true; done; wait")
    print(f"load: `-a -F 50000 -g dwarf,{args.stack}` over {args.seconds}s of 2 busy threads and "
          f"{args.children} fork+exec of /bin/true")
    print(f"{'recorder':8} {'samples':>8} {'lost':>8} {'cut':>8} {'sb lost':>8} {'peakRSS':>8} {'file':>9} "
          f"{'true ok':>10} {'true [unk]':>10}")
    for tool in ["perf", "rperf"]:
        data = os.path.join(tmp, f"{tool}.data")
        if tool == "perf":
            cmd = ["perf", "record", "-a", "-F", "50000", "--call-graph", f"dwarf,{args.stack}", "-o", data,
                   "--", "sh", "-c", job]
        else:
            cmd = [rperf, "record", "-a", "-F", "50000", "-g", f"dwarf,{args.stack}", "-o", data,
                   "--", "sh", "-c", job]
        err, rss = run_with_peak_rss(cmd)
        if tool == "rperf":
            m = re.search(r"Samples recorded: (\d+)\. Samples lost: (\d+)", err)
            samples, lost = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
            cut = re.search(r"(\d+) samples had their stack copies cut", err)
            sb = re.search(r"(\d+) mmap/comm/fork/exit records were lost", err)
            cut = int(cut.group(1)) if cut else 0
            sb = int(sb.group(1)) if sb else 0
        else:
            stats = subprocess.run(["perf", "report", "--stats", "-i", data], capture_output=True,
                                   text=True).stdout
            m = re.search(r"SAMPLE events:\s+(\d+)", stats)
            samples = int(m.group(1)) if m else 0
            m = re.search(r"LOST_SAMPLES events:\s+(\d+)", stats)
            lost_ev = re.search(r"LOST events:\s+(\d+)", stats)
            out = subprocess.run(["perf", "report", "--stdio", "-i", data, "--sort", "pid"],
                                 capture_output=True, text=True).stdout
            m = re.search(r"Total Lost Samples:\s+(\d+)", out)
            lost = int(m.group(1)) if m else 0
            cut = 0
            sb = f"{lost_ev.group(1)}?" if lost_ev else 0
        in_true, right, unknown = attribution(rperf, data)
        ok = f"{right}/{in_true}"
        print(f"{tool:8} {samples:8d} {lost:8d} {cut:8d} {sb!s:>8} {rss / 1024:7.1f}M "
              f"{os.path.getsize(data) / 1e6:8.1f}M {ok:>10} {unknown:10d}", flush=True)
    print("(perf has one ring per CPU for samples and side-band records alike; its LOST events count "
          "records of any kind, shown with '?')")


if __name__ == "__main__":
    main()
