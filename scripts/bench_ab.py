#!/usr/bin/env python3
"""Two rperf builds on the same recordings: `rperf report` (or other report arguments) timed
in interleaved runs, with peak RSS from GNU time. Prints each file's medians and the ratio of
the second build to the first, then their geometric means. For holding a change to "within
N% of before". Each build reads and writes a cache folder of its own (a temporary one, warmed
by one untimed report of each file), so that each runs as it does on a machine it has run on;
with `--cold`, the folder is emptied before every timed run (a first report on a machine):

    scripts/bench_ab.py --before OLD/rperf --after target/release/rperf --runs 7 FILES...
"""
import argparse
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time


def run(binary, args, path, cache, cold=False):
    if cold:
        shutil.rmtree(cache)
        os.mkdir(cache, 0o700)
    cmd = ["/usr/bin/time", "-f", "%M", binary, "report", *args, "-i", path]
    env = dict(os.environ, RPERF_CACHE_DIR=cache)
    start = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    rss_kib = int(p.stderr.strip().splitlines()[-1])
    return wall, rss_kib / 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="the rperf binary before the change")
    ap.add_argument("--after", required=True, help="the rperf binary after it")
    ap.add_argument("--runs", type=int, default=7, help="interleaved runs of each per file")
    ap.add_argument("--args", default="", help="report arguments besides -i (space-separated)")
    ap.add_argument("--cold", action="store_true", help="empty each build's cache folder before every timed run")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    args = a.args.split()
    # A binary's code pages count in its RSS as far as the page cache holds them (the kernel
    # maps cached pages around each fault): both binaries are read whole first, so that
    # neither's RSS depends on how much of it the cache happened to keep.
    for binary in (a.before, a.after):
        with open(binary, "rb") as f:
            while f.read(1 << 20):
                pass
    # Each build has a cache folder of its own, warmed by one untimed report of each file:
    # what a build keeps there (the DWARF frames it named) is not read by another build, so
    # a shared folder would have each run load the DWARF the other's run replaced.
    work = tempfile.mkdtemp(prefix="bench-ab-")
    caches = {"before": os.path.join(work, "before"), "after": os.path.join(work, "after")}
    for c in caches.values():
        os.mkdir(c, 0o700)
    time_ratios, rss_ratios = [], []
    print(f"{'file':50} {'before s':>9} {'after s':>9} {'ratio':>6} {'before MiB':>10} {'after MiB':>10} {'ratio':>6}")
    for path in a.files:
        runs = {"before": [], "after": []}
        order = [("before", a.before), ("after", a.after)]
        for name, binary in order:  # the page cache and each build's cache folder warm
            run(binary, args, path, caches[name])
        for i in range(a.runs):
            for name, binary in order if i % 2 == 0 else reversed(order):
                runs[name].append(run(binary, args, path, caches[name], a.cold))
        med = {k: (statistics.median(w for w, _ in v), statistics.median(r for _, r in v)) for k, v in runs.items()}
        tr, rr = med["after"][0] / med["before"][0], med["after"][1] / med["before"][1]
        time_ratios.append(tr)
        rss_ratios.append(rr)
        print(f"{path[-50:]:50} {med['before'][0]:9.3f} {med['after'][0]:9.3f} {tr:6.2f} "
              f"{med['before'][1]:10.1f} {med['after'][1]:10.1f} {rr:6.2f}")
    shutil.rmtree(work, ignore_errors=True)
    gmean = lambda v: math.exp(sum(map(math.log, v)) / len(v))
    print(f"geometric mean of after/before: time {gmean(time_ratios):.3f}, peak RSS {gmean(rss_ratios):.3f}")


if __name__ == "__main__":
    main()
