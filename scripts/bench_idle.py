#!/usr/bin/env python3
"""System-wide recording at steady state: what `rperf record -a` costs a machine, against
`perf record -a`, at low rates (19 Hz and 99 Hz of cpu-clock, perf's and simpleperf's usual
rates for always-on profiling).

Each recorder runs system-wide into a file of the benchmark's work folder. After a settling time
(startup: opening events on every CPU, the /proc scan of every process), the recorder's CPU time
(all its threads, from /proc/PID/task/*/schedstat) is read twice, a measured window apart:
CPU milliseconds per second of recording, at steady state. Its peak RSS (VmHWM) is read at the
end of the window. Rounds are interleaved (each round runs every recorder once, in a rotating
order); the table shows medians and the median of each round's rperf/perf ratio. A second
pair of columns gives the recorder's CPU over the whole recording (start-up and the work after
the stop included, from the kernel's accounting of the reaped process) per second recorded:
perf reads its whole file again after the stop to find the binaries its samples hit, work
that rperf does as the records come and that the steady-state window sees only in rperf.

The machine's own load is what it is: a background load (`--load`, a shell loop forking `true`
continually, so that processes come and go) shows the cost of following new processes;
`--waiting-rustc N` keeps N rustc processes waiting on their input (each maps LLVM's library,
whose GDB JIT descriptor the recorder reads), as on a machine where Rust is being built.

perf sizes its ring buffers, as root, from kernel.perf_event_mlock_kb (each CPU's ring about
that size), and wakes when one is half full: the larger the rings, the fewer its wake-ups and
writes. simpleperf's `record` raises the setting from the kernel's default (516 KiB) to 8200
and leaves it there, after which perf records system-wide into 8 MiB rings, at about half the
CPU under `--load` (measured here: 0.45–0.6 ms/s against 0.9–1.3 at 516). The benchmark sets
it for its run (`--mlock-kb`, the kernel's default unless given) and puts it back after.

Usage: scripts/bench_idle.py [--rounds 5] [--settle 3] [--window 10] [--rates 19,99]
                             [--load] [--waiting-rustc N] [--call-graph fp|dwarf]
                             [--baseline OTHER_RPERF [--baseline-args ARGS]] [--mlock-kb 516]
                             [--perf-no-buildid]

`--baseline` adds another rperf build (`base`) to the rounds; rperf's line then also gives
the median of its per-round CPU ratio to it. `--baseline-args` adds options to the baseline's
command: with `--baseline target/release/rperf`, the same build with and without them. The last
column is the file's size per second of the recording.
"""
import argparse
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RPERF = os.path.join(ROOT, "target/release/rperf")


def cpu_seconds(pid):
    """CPU seconds of process pid, summed over its live threads, in nanoseconds of the
    scheduler's accounting (/proc/PID/task/TID/schedstat: clock ticks are too coarse here)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e9


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def command(tool, rate, out, call_graph, baseline=None, baseline_args=()):
    if tool in ("rperf", "base"):
        cmd = [RPERF if tool == "rperf" else baseline, "record", "-a", "-F", str(rate), "-o", out]
        if call_graph:
            cmd += ["--call-graph", call_graph]
        if tool == "base":
            cmd += list(baseline_args)
    else:
        cmd = ["perf", "record", "-a", "-F", str(rate), "-o", out, "--quiet"]
        if tool == "perf-B":
            cmd.append("--no-buildid")
        if call_graph:
            cmd += ["--call-graph", call_graph]
    return cmd


def measure(tool, rate, work, args):
    """(CPU ms per second at steady state, peak RSS KiB, CPU ms per second of the whole
    recording, MB of file per second of the whole recording) of one system-wide recording.

    The whole recording's CPU is the recorder's, from its start to its exit (the kernel's
    accounting of the reaped child): its start-up and what it does after the stop count too,
    per second recorded (from its start to the stop signal). perf reads its file again after
    the stop to find the binaries its samples hit (build ids), where rperf notes them as the
    records come: the steady-state window sees only rperf's part of that work."""
    out = os.path.join(work, f"{tool}.data")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    p = subprocess.Popen(command(tool, rate, out, args.call_graph, args.baseline, args.baseline_args.split()),
                         stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(args.settle)
        if p.poll() is not None:
            sys.exit(f"{tool} record stopped early: {p.stderr.read()[-2000:]}")
        t0, c0 = time.monotonic(), cpu_seconds(p.pid)
        time.sleep(args.window)
        t1, c1 = time.monotonic(), cpu_seconds(p.pid)
        rss = peak_rss_kib(p.pid)
    finally:
        stop = time.monotonic()
        p.send_signal(2)
        _, err = p.communicate(timeout=120)
    if p.returncode not in (0, 130, -2):
        sys.exit(f"{tool} record failed ({p.returncode}): {err[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    whole = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    size = os.path.getsize(out) / 1e6
    os.unlink(out)
    return 1000 * (c1 - c0) / (t1 - t0), rss, 1000 * whole / (stop - start), size / (stop - start)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--settle", type=float, default=3.0)
    ap.add_argument("--window", type=float, default=10.0)
    ap.add_argument("--rates", default="19,99")
    ap.add_argument("--load", action="store_true", help="fork `true` continually while measuring")
    ap.add_argument("--waiting-rustc", type=int, default=0, metavar="N",
                    help="N rustc processes waiting on their input while measuring (each maps "
                         "LLVM's library, which exports the GDB JIT interface)")
    ap.add_argument("--call-graph", choices=["fp", "dwarf"])
    ap.add_argument("--baseline", help="another rperf build, measured in the same rounds as `base`")
    ap.add_argument("--baseline-args", default="", metavar="ARGS",
                    help="options added to the baseline's command line (with --baseline naming this "
                         "build: the same rperf with and without them)")
    ap.add_argument("--perf-no-buildid", action="store_true",
                    help="also measure `perf record --no-buildid` (perf-B), which skips the pass "
                         "over its file after the stop, and records no build ids")
    ap.add_argument("--mlock-kb", type=int, default=516,
                    help="kernel.perf_event_mlock_kb for the run (perf's ring size as root)")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    tools = ["rperf", "perf"] + (["base"] if args.baseline else []) + (["perf-B"] if args.perf_no_buildid else [])
    load = None
    if args.load:
        load = subprocess.Popen(["sh", "-c", "while :; do /bin/true; done"])
    waiting = [subprocess.Popen("sleep 100000 | exec rustc - -o /dev/null", shell=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
               for _ in range(args.waiting_rustc)]
    mlock = "/proc/sys/kernel/perf_event_mlock_kb"
    with open(mlock) as f:
        mlock_before = f.read().strip()
    try:
        with open(mlock, "w") as f:
            f.write(str(args.mlock_kb))
        with tempfile.TemporaryDirectory(prefix="rperf-bench-idle-") as work:
            print(f"perf_event_mlock_kb {args.mlock_kb} (was {mlock_before})")
            print(f"system-wide, {args.window:g} s windows after {args.settle:g} s, "
                  f"{args.rounds} interleaved rounds, call graph: {args.call_graph or 'none'}, "
                  f"load: {'forking' if args.load else 'none'}"
                  f"{f', {args.waiting_rustc} rustc waiting' if waiting else ''}; CPU of the recorder only")
            print(f"{'rate':>5}  {'tool':<6} {'CPU ms/s':>9} {'peak RSS':>10}  {'CPU vs perf':>11}  "
                  f"{'whole, ms/s':>11} {'vs perf':>8} {'file MB/s':>10}")
            for rate in [int(r) for r in args.rates.split(",")]:
                results = {t: [] for t in tools}
                for r in range(args.rounds):
                    order = tools[r % len(tools):] + tools[:r % len(tools)]
                    for t in order:
                        results[t].append(measure(t, rate, work, args))
                for t in tools:
                    cpu = statistics.median(x[0] for x in results[t])
                    rss = statistics.median(x[1] for x in results[t]) / 1024
                    ratio = ""
                    if t == "rperf":
                        ratio = statistics.median(a[0] / max(b[0], 1e-9)
                                                  for a, b in zip(results["rperf"], results["perf"]))
                        ratio = f"{ratio:.2f}×"
                        if args.baseline:
                            base = statistics.median(a[0] / max(b[0], 1e-9)
                                                     for a, b in zip(results["rperf"], results["base"]))
                            ratio += f" ({base:.2f}× base)"
                    whole = statistics.median(x[2] for x in results[t])
                    whole_ratio = ""
                    if t == "rperf":
                        whole_ratio = statistics.median(a[2] / max(b[2], 1e-9)
                                                        for a, b in zip(results["rperf"], results["perf"]))
                        whole_ratio = f"{whole_ratio:.2f}×"
                    written = statistics.median(x[3] for x in results[t])
                    spread = ", ".join(f"{x[0]:.2f}" for x in results[t])
                    print(f"{rate:>5}  {t:<6} {cpu:>9.2f} {rss:>8.1f} MiB  {ratio:>11}  {whole:>11.2f} "
                          f"{whole_ratio:>8} {written:>10.2f}   ({spread})")
    finally:
        with open(mlock, "w") as f:
            f.write(mlock_before)
        if load:
            load.kill()
        for w in waiting:
            os.killpg(w.pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
