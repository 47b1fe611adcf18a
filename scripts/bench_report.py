#!/usr/bin/env python3
"""Report speed and memory benchmark: rperf report against perf report, `cat` and samply.

Three recordings, each made with Linux perf (so every tool reads the same file):
- a large DWARF recording: tests/programs/mixed.cpp (-O2 -g, 2 threads) under
  `perf record --call-graph dwarf` at 4000 Hz until the file holds at least --min-mb MB;
- a small frame-pointer recording: the same program built with frame pointers, `perf record -g`
  for 0.5 s;
- a Node JIT recording: `node --perf-basic-prof tests/programs/hot.js` under `perf record -g`.

Each is reported by `rperf report -g` and `perf report --stdio` (output to /dev/null), and the
large one is also read by `cat FILE > /dev/null` (the time of reading it from the page cache);
the large and the small one are, with samply installed (`cargo install samply`), imported by
`samply import --save-only`.
Runs are interleaved (a busy moment of the machine weighs on every command alike), each one
right after an untimed `cat` of its recording (machines that reclaim idle page cache would
otherwise time reading from disk); medians of --runs are shown, with peak RSS (wait4), and the
issue's targets checked against them.

rperf keeps the running kernel's symbols and inflated debug sections in its cache folder
(RPERF_CACHE_DIR, a fresh folder of the benchmark's): the runs after the first use them, as
every report after the first does. The first report's time, with an empty cache folder, is
timed too for the large and the small recording ("empty cache").

With --baseline BIN (an rperf binary built from an earlier commit), the same reports are timed
with it too, for before/after checks.

With --only-rperf, only rperf and the baseline are timed (many runs, for before/after checks).

Usage: scripts/bench_report.py [--runs 5] [--min-mb 300] [--baseline BIN] [--keep DIR] [--only-rperf]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(cmd, warm=None, empty=None):
    """(wall seconds, peak RSS MiB) of cmd, stdout discarded: the wall time to the millisecond,
    the peak RSS from wait4 (the largest of the command's processes). `warm` is read first, and
    the folder `empty` emptied, untimed."""
    if warm:
        subprocess.run(["cat", warm], stdout=subprocess.DEVNULL, check=True)
    if empty:
        shutil.rmtree(empty, ignore_errors=True)
    with tempfile.TemporaryFile() as errfile:
        start = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errfile)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - start
        p.returncode = os.waitstatus_to_exitcode(status)
        errfile.seek(0)
        err = errfile.read().decode(errors="replace")
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024


def build(src, exe, extra):
    subprocess.run(["g++", "-O2", "-g", "-pthread", *extra, os.path.join(ROOT, "tests/programs", src), "-o", exe],
                   check=True)


def recordings(tmp, min_mb):
    """(name, path) of the three recordings, made in tmp unless already there."""
    out = []
    big = os.path.join(tmp, "dwarf.data")
    if not os.path.exists(big):
        exe = os.path.join(tmp, "mixed")
        build("mixed.cpp", exe, [])
        seconds = 4.0
        while True:
            subprocess.run(["perf", "record", "-q", "-F", "4000", "--call-graph", "dwarf", "-o", big, "--", exe,
                            str(seconds), "2"], check=True, stdout=subprocess.DEVNULL)
            size = os.path.getsize(big) / 1e6
            if size >= min_mb:
                break
            seconds *= min_mb / size * 1.1
    out.append(("large DWARF", big))
    small = os.path.join(tmp, "fp.data")
    if not os.path.exists(small):
        exe = os.path.join(tmp, "mixed_fp")
        build("mixed.cpp", exe, ["-fno-omit-frame-pointer"])
        subprocess.run(["perf", "record", "-q", "-F", "4000", "-g", "-o", small, "--", exe, "0.5", "2"],
                       check=True, stdout=subprocess.DEVNULL)
    out.append(("small frame-pointer", small))
    jit = os.path.join(tmp, "node.data")
    if shutil.which("node") and not os.path.exists(jit):
        subprocess.run(["perf", "record", "-q", "-g", "-o", jit, "--", "node", "--perf-basic-prof",
                        os.path.join(ROOT, "tests/programs/hot.js")], check=True, stdout=subprocess.DEVNULL,
                       cwd=tmp)
    if os.path.exists(jit):
        out.append(("Node JIT", jit))
    return out


def samples_of(data):
    stats = subprocess.run(["perf", "report", "--stats", "-i", data], capture_output=True, text=True).stdout
    return next((l.split(":")[1].split()[0] for l in stats.splitlines() if "SAMPLE events" in l), "?")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5, help="runs per command (medians are shown)")
    ap.add_argument("--min-mb", type=float, default=300, help="size of the large DWARF recording")
    ap.add_argument("--baseline", help="another rperf binary to time on the same reports")
    ap.add_argument("--keep", help="a folder for the recordings, reused when they are there")
    ap.add_argument("--only-rperf", action="store_true",
                    help="time rperf (and --baseline) only: many runs for before/after checks")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    rperf = os.path.join(ROOT, "target/release/rperf")
    tmp = args.keep or tempfile.mkdtemp(prefix="rperf-bench-report-")
    os.makedirs(tmp, exist_ok=True)
    files = recordings(tmp, args.min_mb)
    os.environ["RPERF_CACHE_DIR"] = os.path.join(tmp, "cache")
    empty_cache = os.path.join(tmp, "empty-cache")
    samply = shutil.which("samply")
    runs = []  # (file name, command name, command)
    for name, data in files:
        print(f"{name}: {data}: {os.path.getsize(data) / 1e6:.1f} MB, {samples_of(data)} samples")
        runs.append((name, "rperf report -g", [rperf, "report", "-g", "-i", data]))
        if args.baseline:
            runs.append((name, "baseline rperf report -g", [args.baseline, "report", "-g", "-i", data]))
        if args.only_rperf:
            continue
        runs.append((name, "perf report --stdio", ["perf", "report", "--stdio", "-i", data]))
        if name in ("large DWARF", "small frame-pointer"):
            runs.append((name, "rperf report -g, empty cache",
                         ["env", f"RPERF_CACHE_DIR={empty_cache}", rperf, "report", "-g", "-i", data]))
            if name == "large DWARF":
                runs.append((name, "cat", ["sh", "-c", f"cat '{data}' > /dev/null"]))
            if samply:
                runs.append((name, "samply import --save-only",
                             ["samply", "import", "--save-only", "-o", os.path.join(tmp, "samply.json.gz"), data]))
    data_of = dict(files)
    for _, _, cmd in runs:
        measure(cmd)  # warm the page cache, symbol files and rperf's cache
    taken = {(f, n): [] for f, n, _ in runs}
    for _ in range(args.runs):
        for f, n, cmd in runs:
            empty = empty_cache if "empty cache" in n else None
            taken[(f, n)].append(measure(cmd, warm=data_of[f], empty=empty))
    med = {}
    for f, n, _ in runs:
        walls = sorted(w for w, _ in taken[(f, n)])
        rsss = sorted(r for _, r in taken[(f, n)])
        med[(f, n)] = (walls[len(walls) // 2], rsss[len(rsss) // 2])
    print()
    for f, n, _ in runs:
        wall, rss = med[(f, n)]
        print(f"{f:20} {n:30} {wall:8.3f} s  {rss:8.1f} MiB peak RSS")
    print()
    if args.baseline:
        for f, _ in files:
            bw, brss = med[(f, "baseline rperf report -g")]
            nw, nrss = med[(f, "rperf report -g")]
            print(f"{f}: against the baseline: {nw / bw:.2f}x its time, {nrss / brss:.2f}x its peak RSS")
    if args.only_rperf:
        return
    big = "large DWARF"
    rw, _ = med[(big, "rperf report -g")]
    cw, _ = med[(big, "cat")]
    print(f"target: large DWARF report <= 1.5x cat: {rw / cw:.2f}x ({rw:.3f} s vs {cw:.3f} s)")
    if samply:
        sw, _ = med[(big, "samply import --save-only")]
        print(f"target: >= 1.5x faster than samply import: {sw / rw:.2f}x")
    ew, _ = med[(big, "rperf report -g, empty cache")]
    print(f"  (first report, empty cache: {ew / cw:.2f}x cat, {ew:.3f} s)")
    worst = max(r for (f, n), (_, r) in med.items() if n.startswith("rperf report -g"))
    print(f"target: report memory <= 32 MiB on every file: largest {worst:.1f} MiB")
    sw, _ = med[("small frame-pointer", "rperf report -g")]
    pw, _ = med[("small frame-pointer", "perf report --stdio")]
    print(f"target: small frame-pointer file no slower than perf report: {sw:.3f} s vs {pw:.3f} s")
    if samply:
        small = "small frame-pointer"
        ew, _ = med[(small, "rperf report -g, empty cache")]
        sw, _ = med[(small, "samply import --save-only")]
        print(f"target: small frame-pointer file, first report <= 0.5x samply import: {ew / sw:.2f}x "
              f"({ew:.3f} s vs {sw:.3f} s)")


if __name__ == "__main__":
    main()
