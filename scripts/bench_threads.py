#!/usr/bin/env python3
"""rperf report's side-by-side decoding and unwinding, by the number of threads: the same report
with rayon's pool at each of --threads (RAYON_NUM_THREADS; with two or fewer, rperf takes its
serial path), in interleaved rounds (each round runs every count once, in a rotating order).
Prints each count's median wall time and the median of its per-round ratio to 2 threads, and
whether every count printed the same report. For machines with more than two cores.

Usage: scripts/bench_threads.py --input FILE [--symfs DIR] [--kallsyms FILE] [--rperf BIN]
                                [--threads 1,2,4,8,16] [--rounds 9]

Made for a copy of a DWARF recording and the binaries it names, taken to the machine measured:
e.g. `perf record -z --call-graph dwarf,8192 -F 4000 -o xz.data -- xz -9 -T1 -c BIG > /dev/null`,
the binaries it names under a symfs folder, and this machine's /proc/kallsyms.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--input", required=True)
    ap.add_argument("--symfs")
    ap.add_argument("--kallsyms")
    ap.add_argument("--rperf", default=os.path.join(ROOT, "target/release/rperf"))
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    base = [args.rperf, "report", "-i", args.input]
    if args.symfs:
        base += ["--symfs", args.symfs]
    if args.kallsyms:
        base += ["--kallsyms", args.kallsyms]
    threads = [int(t) for t in args.threads.split(",")]
    if 2 not in threads:
        threads.append(2)
    cache = tempfile.mkdtemp(prefix="rperf-bench-threads-")
    print(f"cpus: {os.cpu_count()}; {' '.join(base)}")
    for name, extra in {"flat": [], "--children -g": ["--children", "-g"]}.items():
        times = {n: [] for n in threads}
        outs = {}

        def run(n):
            env = dict(os.environ, RAYON_NUM_THREADS=str(n), RPERF_CACHE_DIR=cache)
            start = time.monotonic()
            p = subprocess.run(base + extra, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode != 0:
                sys.exit(f"rperf report failed with {n} threads: {p.stderr.decode()[-2000:]}")
            return time.monotonic() - start, p.stdout

        run(max(threads))  # the cache folder filled once
        for r in range(args.rounds):
            for n in threads[r % len(threads):] + threads[:r % len(threads)]:
                t, out = run(n)
                times[n].append(t)
                outs.setdefault(n, out)
        same = all(outs[n] == outs[2] for n in threads)
        print(f"\n{name}: {args.rounds} interleaved rounds; reports {'identical' if same else 'DIFFER'}")
        for n in threads:
            ratio = statistics.median(a / b for a, b in zip(times[n], times[2]))
            print(f"  {n:>3} threads: median {statistics.median(times[n]):.3f} s, "
                  f"per-round ratio to 2 threads {ratio:.2f}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
