#!/usr/bin/env python3
"""How soon `rperf record --app NAME` samples an app that starts after it: the delay from the
app's start to its first sample, median over N launches, and the share of the app's startup
phase in its samples against its share of the run.

Each launch starts `rperf record --app NAME -F 4000`, waits for its "waiting for app" line, then
starts tests/programs/startup.cpp under the app's name (its first argument, as Android names an
app's processes). The app is busy from main() to its end and prints how long its two phases took;
its last sample in steady_phase marks the end of the second phase (within one sampling period,
0.25 ms), so main() started that long before it. The delay is the app's first sample minus
that start: the time from main() to the first sample; a negative delay means rperf sampled the
app before main(), while the dynamic linker loaded it (exec precedes main() by about a
millisecond).

Usage: scripts/bench_app_start.py [--launches 20] [--rperf target/release/rperf]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "com.example.benchstart"


def launch(rperf, exe, data, duration):
    extra = ["--duration", str(duration)] if duration else []
    rec = subprocess.Popen([rperf, "record", "--app", NAME, "-F", "4000", "-o", data] + extra,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = ""
    while "waiting for" not in seen:
        line = rec.stderr.readline()
        if not line:
            sys.exit(f"rperf ended early: {seen}")
        seen += line
    app = subprocess.run([NAME, "0.2", "0.3"], executable=exe, capture_output=True, text=True, check=True)
    # Wall time of each phase (to place main() on the samples' clock), then CPU time (the work).
    startup, steady, startup_cpu, steady_cpu = map(float, app.stdout.split()[:4])
    rec.communicate()
    rows = subprocess.run([rperf, "report", "--format", "json", "-i", data], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    samples = [json.loads(r) for r in rows]
    leaf = [s["stack"][0]["symbol"] for s in samples]
    first = min(s["time"] for s in samples)
    end = max(s["time"] for s, f in zip(samples, leaf) if f == "steady_phase")
    in_startup = sum(1 for f in leaf if f == "startup_phase")
    in_steady = sum(1 for f in leaf if f == "steady_phase")
    main_start = end / 1e9 - (startup + steady)
    delay = first / 1e9 - main_start
    return delay, in_startup / max(1, in_startup + in_steady), startup_cpu / (startup_cpu + steady_cpu)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--rperf", default=os.path.join(ROOT, "target/release/rperf"))
    ap.add_argument("--duration", type=float, help="stop each recording after this long (for rperf builds that do not stop when the app exits)")
    args = ap.parse_args()
    if args.rperf == os.path.join(ROOT, "target/release/rperf"):
        subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    tmp = tempfile.mkdtemp(prefix="rperf-bench-app-")
    exe = os.path.join(tmp, "startup")
    subprocess.run(["g++", "-O2", "-g", "-fno-omit-frame-pointer", os.path.join(ROOT, "tests/programs/startup.cpp"),
                    "-o", exe], check=True)
    results = [launch(args.rperf, exe, os.path.join(tmp, f"app{i}.data"), args.duration) for i in range(args.launches)]
    delays = sorted(r[0] * 1000 for r in results)
    print(f"launches: {args.launches}")
    print(f"main()-to-first-sample delay: median {statistics.median(delays):.2f} ms, "
          f"min {delays[0]:.2f} ms, max {delays[-1]:.2f} ms")
    share = statistics.median(r[1] for r in results) * 100
    work = statistics.median(r[2] for r in results) * 100
    print(f"startup phase: {share:.1f}% of the samples, {work:.1f}% of the work (medians)")


if __name__ == "__main__":
    main()
