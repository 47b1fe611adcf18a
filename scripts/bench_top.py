#!/usr/bin/env python3
"""`rperf top` on a busy process, two builds interleaved: the CPU time rperf itself spends
(its recorder and every refresh) over a fixed duration, and its peak RSS. The process is
`xz -9 -T1` compressing a few MB of /usr/bin again and again, sampled with `-p`, so that the
recording grows for the whole run; a refresh that reads the whole recording again costs more
as it grows, one that reads what was added does not.

    scripts/bench_top.py --before OLD/rperf --after target/release/rperf --rounds 3 --duration 20

With --perf, `perf top -p PID -e cpu-clock -F 1000 -d REFRESH --stdio` (Linux perf; its
refresh is whole seconds, so give --refresh 1 or more) is timed in the same rounds as a peer.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import tempfile
import time


def xz_loop(workdir):
    """Starts a shell compressing /usr/bin's files with xz in a loop; returns the Popen."""
    data = os.path.join(workdir, "xz.in")
    with open(data, "wb") as out:
        for name in sorted(os.listdir("/usr/bin"))[:400]:
            path = os.path.join("/usr/bin", name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    out.write(f.read(1 << 20))
            if out.tell() > 8 << 20:
                break
    loop = f"while :; do xz -9 -T1 -c {shlex.quote(data)} > /dev/null; done"
    return subprocess.Popen(["sh", "-c", loop], start_new_session=True)


def top_cpu(binary, pid, duration, refresh, workdir):
    """Runs `rperf top -p PID` (or, for binary "perf", `perf top`) in a pseudo-terminal for
    `duration` seconds; returns (user+sys seconds, peak RSS MiB) of the profiler."""
    if binary == "perf":
        return perf_top_cpu(pid, duration, refresh)
    out = os.path.join(workdir, "time.out")
    top = [binary, "top", "-p", str(pid), "--duration", str(duration), "--refresh", str(refresh), "-F", "1000"]
    timed = ["/usr/bin/time", "-o", out, "-f", "%U %S %M", *top]
    subprocess.run(["script", "-qec", shlex.join(timed), "/dev/null"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    user, sys_, rss = open(out).read().split()[-3:]
    return float(user) + float(sys_), int(rss) / 1024


def perf_top_cpu(pid, duration, refresh):
    """`perf top` has no duration and ignores the signals that would end it cleanly: its CPU
    time and peak RSS are read from /proc just before it is killed."""
    cmd = ["perf", "top", "-p", str(pid), "-e", "cpu-clock", "-F", "1000", "-d", str(max(1, round(refresh))), "--stdio"]
    term = subprocess.Popen(["script", "-qec", shlex.join(cmd), "/dev/null"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(0.5)
    perf = int(subprocess.check_output(["pgrep", "-n", "-f", "^perf top -p " + str(pid)]).split()[0])
    time.sleep(duration - 0.5)
    fields = open(f"/proc/{perf}/stat").read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    status = open(f"/proc/{perf}/status").read()
    rss = int(status.split("VmHWM:")[1].split()[0]) / 1024
    os.killpg(term.pid, 9)
    term.wait()
    return cpu, rss


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", required=True, help="an rperf binary to compare with")
    ap.add_argument("--after", required=True, help="the rperf binary measured")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=float, default=20, help="seconds of each top run")
    ap.add_argument("--refresh", type=float, default=0.5, help="top's refresh, seconds")
    ap.add_argument("--perf", action="store_true", help="time perf top too")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        load = xz_loop(workdir)
        try:
            pid = load.pid
            order = [("before", a.before), ("after", a.after)] + ([("perf", "perf")] if a.perf else [])
            runs = {name: [] for name, _ in order}
            for i in range(a.rounds):
                for name, binary in order if i % 2 == 0 else reversed(order):
                    runs[name].append(top_cpu(binary, pid, a.duration, a.refresh, workdir))
                    print(f"round {i + 1} {name}: {runs[name][-1][0]:.2f} s CPU, {runs[name][-1][1]:.1f} MiB")
        finally:
            os.killpg(load.pid, 9)
    med = {k: (statistics.median(c for c, _ in v), statistics.median(r for _, r in v)) for k, v in runs.items()}
    print(f"rperf top -p (xz -9 loop), {a.duration:g} s, refresh {a.refresh:g} s, medians of {a.rounds}:")
    for k in runs:
        print(f"  {k:6}: {med[k][0]:.2f} s CPU ({100 * med[k][0] / a.duration:.1f}% of a core), {med[k][1]:.1f} MiB peak")
    for k in [k for k in runs if k != "after"]:
        print(f"  after/{k}: CPU {med['after'][0] / med[k][0]:.2f}, RSS {med['after'][1] / med[k][1]:.2f}")


if __name__ == "__main__":
    main()
