#!/usr/bin/env python3
"""The report library's speed and memory: simpleperf's report_sample.py over librperf_report.so.

The recording: xz compressing a file (a program nobody here wrote), recorded by
`rperf record -g dwarf -F 4000` until the file holds at least --min-mb MB. Then, interleaved
for --runs rounds, each with peak RSS:
- `report_sample.py -i FILE` (simpleperf's script, unchanged, on rperf's library; output to
  /dev/null): the whole job;
- a loop that only calls GetNextSample and GetCallChainOfCurrentSample through
  `simpleperf_report_lib.py`: the library's share of that job;
- `rperf report -i FILE` (text, to /dev/null): the peer for memory;
- Python with `simpleperf_report_lib.py` and the library loaded, reading nothing: what the
  interpreter holds before the library reads a sample.

Prints medians and the ratios the issue targets: the library's share of report_sample.py's
time (goal <= 20%), and the memory report_sample.py's process grows by over that Python
baseline while the library reads the file, against rperf report's peak (goal <= 1); the whole
process's peak against rperf report's is printed too.

Usage: scripts/bench_report_lib.py [--runs 3] [--min-mb 100] [--keep DIR]
                                  [--scripts scripts|scripts-newest]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchutil import run_with_peak_rss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMPLEPERF = os.path.join(ROOT, "..", "shared", "simpleperf")

LOOP = """
import sys
sys.path.insert(0, sys.argv[1])
from simpleperf_report_lib import ReportLib
lib = ReportLib(sys.argv[2])
lib.SetRecordFile(sys.argv[3])
n = 0
while lib.GetNextSample() is not None:
    n += lib.GetCallChainOfCurrentSample().nr
print(n)
"""

BASELINE = """
import sys
sys.path.insert(0, sys.argv[1])
from simpleperf_report_lib import ReportLib
lib = ReportLib(sys.argv[2])
"""


def timed(cmd):
    start = time.monotonic()
    err, rss = run_with_peak_rss(cmd)
    return time.monotonic() - start, rss, err


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--min-mb", type=int, default=100)
    ap.add_argument("--keep", help="keep the recording and scripts in this folder")
    ap.add_argument("--scripts", default="scripts", choices=["scripts", "scripts-newest"],
                    help="which generation of simpleperf's scripts runs")
    args = ap.parse_args()
    rperf = os.path.join(ROOT, "target", "release", "rperf")
    lib = os.path.join(ROOT, "target", "release", "librperf_report.so")
    for f in (rperf, lib):
        if not os.path.exists(f):
            sys.exit(f"{f} is missing: run cargo build --release")
    work = args.keep or tempfile.mkdtemp(prefix="rperf-bench-lib-")
    os.makedirs(work, exist_ok=True)
    scripts = os.path.join(work, "scripts")
    if not os.path.isdir(scripts):
        shutil.copytree(os.path.join(SIMPLEPERF, args.scripts), scripts)
        os.makedirs(os.path.join(scripts, "bin", "linux", "x86_64"), exist_ok=True)
    shutil.copy(lib, os.path.join(scripts, "bin", "linux", "x86_64", "libsimpleperf_report.so"))
    data = os.path.join(work, "perf.data")
    if not os.path.exists(data) or os.path.getsize(data) < args.min_mb << 20:
        payload = os.path.join(work, "payload")
        with open(payload, "wb") as f:
            f.write(os.urandom(8 << 20) + bytes(range(256)) * (64 << 12))
        size = 0
        seconds = 4
        while size < args.min_mb << 20:
            subprocess.run([rperf, "record", "-g", "dwarf", "-F", "4000", "-o", data, "--duration", str(seconds),
                            "--", "sh", "-c", f"while :; do xz -9 -T1 -c {payload} > /dev/null; done"],
                           check=False, capture_output=True)
            size = os.path.getsize(data)
            seconds *= 2
    print(f"recording: {data} ({os.path.getsize(data) >> 20} MB), xz -9 under rperf record -g dwarf -F 4000")
    jobs = {
        "report_sample.py": [sys.executable, os.path.join(scripts, "report_sample.py"), "-i", data],
        "library loop": [sys.executable, "-c", LOOP, scripts, lib, data],
        "rperf report": [rperf, "report", "-i", data],
        "Python baseline": [sys.executable, "-c", BASELINE, scripts, lib],
    }
    times = {k: [] for k in jobs}
    peaks = {k: [] for k in jobs}
    for _ in range(args.runs):
        for name, cmd in jobs.items():
            t, rss, err = timed(cmd)
            times[name].append(t)
            peaks[name].append(rss)
    for name in jobs:
        print(f"{name:18} {statistics.median(times[name]):7.2f} s  {statistics.median(peaks[name]) / 1024:7.1f} MiB")
    share = statistics.median(a / b for a, b in zip(times["library loop"], times["report_sample.py"]))
    grown = statistics.median((a - c) / b for a, b, c in
                              zip(peaks["report_sample.py"], peaks["rperf report"], peaks["Python baseline"]))
    memory = statistics.median(a / b for a, b in zip(peaks["report_sample.py"], peaks["rperf report"]))
    print(f"library's share of report_sample.py: {share:.1%} (goal <= 20%)")
    print(f"report_sample.py's growth over the Python baseline / rperf report's peak: {grown:.2f} (goal <= 1)")
    print(f"report_sample.py's whole peak / rperf report's: {memory:.2f}")
    if not args.keep:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
