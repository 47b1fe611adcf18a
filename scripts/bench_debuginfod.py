#!/usr/bin/env python3
"""debuginfod benchmark: a report of a recording of 20 stripped binaries whose debug info a
local debuginfod server holds, cold (empty client cache), warm (everything cached) and against
the same report with the unstripped binaries in place (local debug info).

The workload: a program and 19 shared libraries, generated here, each with a hot function and
an inlined helper, built -O2 -g with frame pointers; stripped copies are recorded
(`rperf record -g fp -F 4000`, --seconds long). Debian's `debuginfod -F` serves the unstripped
ones on a loopback port. Each round times, in a rotating order:
- cold: `rperf report` with DEBUGINFOD_URLS set and the client cache emptied first;
- warm: the same with the cache the cold runs filled;
- local: `rperf report --no-debuginfod` with unstripped copies renamed into the recorded paths.
The report is `--sort dso,symbol,srcline -g caller` (symbols, source lines and inline frames).
The three must print the same report; medians of --runs are shown with the ratios the issue
names: cold vs warm, and warm vs local (target: at most 1.05).

Usage: scripts/bench_debuginfod.py [--runs 11] [--seconds 2] [--keep DIR]
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBS = 19

LIB = """static volatile unsigned long sink_{n};
static inline __attribute__((always_inline)) unsigned long inner_{n}(unsigned long a, long i) {{
    return a * {mul} + ((unsigned long)i ^ (a >> {shift}));
}}
{filler}__attribute__((noinline)) unsigned long work_{n}(long iters) {{
    unsigned long a = {n};
    for (long i = 0; i < iters; i++) a = inner_{n}(a, i);
    sink_{n} = a;
    return a;
}}
"""


def main_source():
    decls = "".join(f"unsigned long work_{n}(long iters);\n" for n in range(1, LIBS + 1))
    calls = "".join(f"        s += work_{n}(20000);\n" for n in range(1, LIBS + 1))
    return f"""#include <stdlib.h>
#include <time.h>
{decls}static volatile unsigned long sink;
static inline __attribute__((always_inline)) unsigned long main_inner(unsigned long a, long i) {{
    return a * 29 + ((unsigned long)i ^ (a >> 5));
}}
static __attribute__((noinline)) unsigned long main_work(long iters) {{
    unsigned long a = 1;
    for (long i = 0; i < iters; i++) a = main_inner(a, i);
    sink = a;
    return a;
}}
int main(int argc, char **argv) {{
    double seconds = argc > 1 ? atof(argv[1]) : 1;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {{
        unsigned long s = main_work(20000);
{calls}        sink = s;
        clock_gettime(CLOCK_MONOTONIC, &t);
    }} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
    return 0;
}}
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def build(work):
    """Builds full/ (unstripped) and run/ (stripped copies); returns their build ids."""
    full, run = os.path.join(work, "full"), os.path.join(work, "run")
    os.makedirs(full)
    os.makedirs(run)
    flags = ["gcc", "-O2", "-g", "-fno-omit-frame-pointer"]
    for n in range(1, LIBS + 1):
        src = os.path.join(work, f"lib{n:02}.c")
        with open(src, "w") as f:
            # Cold code beside the hot function, as real libraries have: debug info of ~1 MB.
            filler = "".join(
                f"__attribute__((noinline)) unsigned long cold_{n}_{k}(unsigned long x) "
                f"{{ for (int i = 0; i < {k % 13 + 2}; i++) x = x * {k} + (x >> {k % 9 + 1}); return x; }}\n"
                for k in range(1, 2001))
            f.write(LIB.format(n=n, mul=31 + 2 * n, shift=3 + n % 7, filler=filler))
        sh(flags + ["-shared", "-fPIC", src, "-o", os.path.join(full, f"libw{n:02}.so")])
    src = os.path.join(work, "main.c")
    with open(src, "w") as f:
        f.write(main_source())
    libs = [f"-lw{n:02}" for n in range(1, LIBS + 1)]
    sh(flags + [src, "-o", os.path.join(full, "main"), "-L", full] + libs + ["-Wl,-rpath,$ORIGIN"])
    ids = []
    for name in sorted(os.listdir(full)):
        shutil.copy2(os.path.join(full, name), os.path.join(run, name))
        sh(["strip", "--strip-all", os.path.join(run, name)])
        note = sh(["readelf", "-n", os.path.join(full, name)], capture_output=True, text=True).stdout
        ids.append(re.search(r"Build ID: ([0-9a-f]+)", note).group(1))
    return full, run, ids


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(full, ids, work):
    port = free_port()
    server = subprocess.Popen(
        ["debuginfod", "-F", full, "-p", str(port), "-d", os.path.join(work, "db.sqlite")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    for bid in ids:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/buildid/{bid}/debuginfo", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                sys.exit(f"debuginfod did not serve {bid} within 60 s")
            time.sleep(0.1)
    return server, url


def timed(cmd, env):
    start = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {p.stderr}")
    return took, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--keep", help="work in this folder and keep it")
    args = ap.parse_args()
    rperf = os.path.join(ROOT, "target", "release", "rperf")
    if not os.access(rperf, os.X_OK):
        sys.exit("build rperf first: cargo build --release")
    if not shutil.which("debuginfod"):
        sys.exit("debuginfod is missing: apt-get install debuginfod")
    work = args.keep or tempfile.mkdtemp(prefix="rperf-bench-debuginfod-")
    if args.keep:
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
    full, run, ids = build(work)
    data = os.path.join(work, "perf.data")
    sh([rperf, "record", "-g", "fp", "-F", "4000", "-o", data, "--", os.path.join(run, "main"), str(args.seconds)],
       stderr=subprocess.DEVNULL)
    server, url = start_server(full, ids, work)
    cache = os.path.join(work, "debuginfod-cache")
    base = dict(os.environ, RPERF_CACHE_DIR=os.path.join(work, "rperf-cache"), RPERF_PROGRESS="never")
    base.pop("DEBUGINFOD_URLS", None)
    served = dict(base, DEBUGINFOD_URLS=url, DEBUGINFOD_CACHE_PATH=cache)
    report = [rperf, "report", "-i", data, "--sort", "dso,symbol,srcline", "-g", "caller"]
    stripped = os.path.join(work, "run.stripped")

    def cold():
        shutil.rmtree(cache, ignore_errors=True)
        return timed(report, served)

    def warm():
        return timed(report, served)

    # The unstripped copies trade places with the stripped ones by renaming: the same files
    # every time, as a machine with its debug info installed has them.
    unstripped = os.path.join(work, "run.full")
    shutil.copytree(full, unstripped)

    def local():
        os.rename(run, stripped)
        os.rename(unstripped, run)
        try:
            return timed(report + ["--no-debuginfod"], base)
        finally:
            os.rename(run, unstripped)
            os.rename(stripped, run)

    try:
        kinds = {"cold": cold, "warm": warm, "local": local}
        # Untimed: fills the caches every kind reads (rperf's, the client's, the page cache).
        outputs = {k: f()[1:] for k, f in kinds.items()}
        if len({o[0] for o in outputs.values()}) != 1:
            sys.exit("cold, warm and local reports differ")
        fetched = re.search(r"fetched (\d+) files? \(([\d.]+) MB\) in ([\d.]+) s", outputs["cold"][1])
        if not fetched or int(fetched.group(1)) != len(ids):
            sys.exit(f"the cold report did not fetch {len(ids)} files: {outputs['cold'][1]}")
        if "fetched" in outputs["warm"][1]:
            sys.exit(f"the warm report fetched: {outputs['warm'][1]}")
        times = {k: [] for k in kinds}
        fetch_times = []
        order = list(kinds)
        for r in range(args.runs):
            for k in order[r % 3:] + order[:r % 3]:
                took, _, err = kinds[k]()
                times[k].append(took)
                if k == "cold":
                    fetch_times.append(float(re.search(r"in ([\d.]+) s into", err).group(1)))
    finally:
        server.terminate()
        server.wait()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"workload: a program and {LIBS} libraries, stripped, recorded with rperf record -g fp -F 4000 "
          f"for {args.seconds} s; {len(ids)} debug files of {float(fetched.group(2)):.1f} MB served by debuginfod")
    print(f"report: rperf report -i perf.data {' '.join(report[4:])}; medians of {args.runs} interleaved runs")
    print(f"{'':8}{'median s':>10}")
    for k in kinds:
        print(f"{k:8}{med[k]:10.3f}")
    print(f"cold fetch (the summary's time for {len(ids)} files): median {statistics.median(fetch_times):.3f} s")
    print(f"cold / warm:  {med['cold'] / med['warm']:.2f}x")
    ratio = med["warm"] / med["local"]
    print(f"warm / local: {ratio:.3f}x (target <= 1.05: {'met' if ratio <= 1.05 else 'NOT met'})")


if __name__ == "__main__":
    main()
