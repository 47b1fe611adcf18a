#!/usr/bin/env python3
"""rperf against perf, simpleperf and samply on programs nobody here wrote.

Workloads (inputs made in the work folder, the same on every run):
- g++:     `g++ -O2 -std=c++17 -c` of a translation unit that includes <bits/stdc++.h>
           (libstdc++'s headers: a large translation unit);
- xz:      `xz -9 -T1` of 6 MB of the first files of /usr/bin;
- cpython: /usr/bin/python3 running the standard library's pure-Python difflib
           (SequenceMatcher over two 9 KB versions of npm's source);
- node:    node running the `diff` package npm ships (diffWords over two 60 KB versions of the
           same text; `--perf-basic-prof` for its JIT code, under every recorder).

Recording: each workload alone, then under `rperf record`, `perf record`, simpleperf's
`record` (../shared/simpleperf/bin/simpleperf) and `samply record` (when installed: `cargo
install samply`), all at 4000 Hz of cpu-clock with DWARF call graphs (each tool's default stack
size); samply takes stacks its own way. Rounds are interleaved (each round runs every command
once, in a rotating order), and medians are shown: the wall time over the program alone, and the
recorder's own peak RSS (VmHWM of its process, sampled every 20 ms; the program's memory is not
counted) and its own CPU time: the user and system time of the whole command (wait4) less the
program's own, which GNU time inside the recorder reports (10 ms steps; the kernel's sampling
work in the program's context counts as the program's).

`floor` is the kernel's part, which every perf_events sampler pays: the program's own elapsed
time (GNU time, 10 ms steps) while `perf record` samples it at 4000 Hz without call graphs.
Each recorder's overhead above it is its own. `rperf-nocg` (only when `--recorders` names it) is
rperf without call graphs: between it and rperf lies what DWARF call graphs cost;
`--stack-sizes 8192,16384` adds rperf with those DWARF stack sizes (`rperf-dwarf,SIZE`).

Every program runs under GNU time, alone too, and a second table gives its own CPU time (user +
system) under each recorder over its time alone (the median of the rounds' ratios) and how its
system time moved. That time holds the kernel's sampling work in the program's context and what
the work costs it after (caches; in a VM, the hypervisor's part of each timer interrupt). For
rperf the table gives the share of samples whose stack its unwinding cut (`Unwound while recording`).

Reporting: each recording (of the last round) is read by every tool that reads it: `rperf
report` (perf.data of rperf, perf and simpleperf), `perf report --stdio` (rperf's and perf's),
`simpleperf report` (all three) and `samply import --save-only` (rperf's and perf's; samply
keeps addresses for its server to name, so its import does not symbolize). `cat FILE` times
reading the file from the page cache. rperf's cache folder is one of the benchmark's, warmed by
one untimed report of each rperf reader; `rperf cold` is rperf with a folder of its own emptied
before each run, as a first report on a machine is; `rperf -g` is its call-tree report, the
peer of samply's import (which builds one call tree).

`--baseline OTHER_RPERF` adds another rperf build (`base`) to the recording rounds, and the
median of each round's rperf/base wall-time ratio; `--recorders` picks the peers that record.

Usage: scripts/bench_peers.py [--rounds 3] [--report-rounds N] [--only g++,xz] [--readers LIST]
                              [--recorders LIST] [--stack-sizes LIST] [--baseline OTHER_RPERF]
                              [--keep DIR [--reuse]]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchutil import run_measured, run_with_peak_rss

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMPLEPERF = os.path.join(ROOT, "../shared/simpleperf/bin/simpleperf")
# simpleperf's recordings made on plain Linux need their meta info fixed to be read (its README).
FIX_META = os.path.join(ROOT, "../shared/simpleperf/fix-meta.py")
NPM = "/usr/lib/node_modules/npm"


def inputs(work):
    """Writes the workloads' inputs into work; returns {workload: command}."""
    tu = os.path.join(work, "tu.cpp")
    with open(tu, "w") as f:
        f.write("#include <bits/stdc++.h>\nint main() { std::regex r(\"a+b\"); "
                "std::map<std::string, std::vector<int>> m; return (int)m.size() + std::regex_match(\"aab\", r); }\n")
    xz_in = os.path.join(work, "xz.in")
    if not os.path.exists(xz_in):
        names = sorted(os.listdir("/usr/bin"))
        with open(xz_in, "wb") as out:
            for n in names:
                p = os.path.join("/usr/bin", n)
                if os.path.isfile(p) and not os.path.islink(p) and out.tell() < 6_000_000:
                    with open(p, "rb") as f:
                        out.write(f.read(6_000_000 - out.tell()))
    sources = sorted(os.path.join(d, n) for d, _, ns in os.walk(os.path.join(NPM, "lib")) for n in ns
                     if n.endswith(".js"))
    text = "".join(open(p, encoding="utf-8", errors="replace").read() for p in sources)[:200_000]
    lines = text.split("\n")
    changed = [l.replace("const", "let") if i % 7 == 3 else l for i, l in enumerate(lines) if i % 11 != 5]
    for name, t in (("a.txt", text), ("b.txt", "\n".join(changed))):
        with open(os.path.join(work, name), "w") as f:
            f.write(t)
    py = os.path.join(work, "work.py")
    with open(py, "w") as f:
        f.write("import difflib, sys\n"
                f"a = open({os.path.join(work, 'a.txt')!r}).read()[:9000]\n"
                f"b = open({os.path.join(work, 'b.txt')!r}).read()[:9000]\n"
                "print(len(difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()))\n")
    js = os.path.join(work, "work.js")
    with open(js, "w") as f:
        f.write(f"const Diff = require({os.path.join(NPM, 'node_modules/diff')!r});\n"
                "const fs = require('fs');\n"
                f"const a = fs.readFileSync({os.path.join(work, 'a.txt')!r}, 'utf8').slice(0, 60000);\n"
                f"const b = fs.readFileSync({os.path.join(work, 'b.txt')!r}, 'utf8').slice(0, 60000);\n"
                "let n = 0;\nfor (let i = 0; i < 3; i++) n += Diff.diffWords(a, b).length;\nconsole.log(n);\n")
    return {
        "g++": ["g++", "-O2", "-std=c++17", "-c", tu, "-o", "/dev/null"],
        "xz": ["xz", "-9", "-T1", "-k", "-f", "-c", xz_in],
        "cpython": ["/usr/bin/python3", py],
        "node": ["node", "--perf-basic-prof", js],
    }


def recorders(rperf, baseline=None, stack_sizes=()):
    """{tool: (command before the program, given the output path, the output's file name)};
    `baseline`, another rperf build, records as `base`."""
    out = {
        "rperf": (lambda o: [rperf, "record", "-e", "cpu-clock", "-F", "4000", "--call-graph", "dwarf", "-o", o,
                             "--"], "rperf.data"),
        "perf": (lambda o: ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "--call-graph", "dwarf",
                            "-o", o, "--"], "perf.data"),
        "simpleperf": (lambda o: [SIMPLEPERF, "record", "-e", "cpu-clock", "-f", "4000", "--call-graph", "dwarf",
                                  "-o", o], "simpleperf.data"),
    }
    if baseline:
        out["base"] = (lambda o: [baseline, *out["rperf"][0](o)[1:]], "base.data")
    if shutil.which("samply"):
        out["samply"] = (lambda o: ["samply", "record", "-s", "-r", "4000", "-o", o, "--"], "samply.json.gz")
    # rperf without call graphs (named in --recorders only): what the call graphs add.
    out["rperf-nocg"] = (lambda o: [rperf, "record", "-e", "cpu-clock", "-F", "4000", "-o", o, "--"],
                         "rperf-nocg.data")
    # rperf with other DWARF stack sizes (named by --stack-sizes): what a smaller copy saves
    # the program, and how many more stacks it cuts.
    for size in stack_sizes:
        out[f"rperf-dwarf,{size}"] = (lambda o, size=size: [rperf, "record", "-e", "cpu-clock", "-F", "4000",
                                                            "--call-graph", f"dwarf,{size}", "-o", o, "--"],
                                      f"rperf-dwarf-{size}.data")
    # The kernel's sampling alone: the program's own time (GNU time inside perf, as for every
    # recorder) while perf samples it at 4000 Hz without call graphs, leaving out perf's start
    # and its build-id pass.
    out["floor"] = (lambda o: ["perf", "record", "-q", "-e", "cpu-clock", "-F", "4000", "-o", o, "--"],
                    "floor.data")
    return out


def readers(rperf, work):
    """{tool: (command given the recording, the recorders whose files it reads)}."""
    out = {
        "rperf": (lambda f: [rperf, "report", "-i", f], {"rperf", "perf", "simpleperf"}),
        "rperf cold": (lambda f: [rperf, "report", "-i", f], {"rperf", "perf", "simpleperf"}),
        # The call-tree report (simpleperf's brief caller graphs), against samply's import,
        # which builds one call tree.
        "rperf -g": (lambda f: [rperf, "report", "-g", "-i", f], {"rperf", "perf", "simpleperf"}),
        "perf": (lambda f: ["perf", "report", "--stdio", "-i", f], {"rperf", "perf"}),
        "simpleperf": (lambda f: [SIMPLEPERF, "report", "-i", f], {"rperf", "perf", "simpleperf"}),
        "cat": (lambda f: ["cat", f], {"rperf", "perf", "simpleperf"}),
    }
    if shutil.which("samply"):
        out["samply"] = (lambda f: ["samply", "import", "-s", "-o", os.path.join(work, "import.json.gz"), f],
                         {"rperf", "perf"})
    return out


def timed(cmd, cwd):
    """(wall seconds, the command's own peak RSS in MiB, CPU seconds of the command and the
    processes it waited for, its stderr): a recorder's RSS, sampled (its program's memory is not
    counted)."""
    start = time.perf_counter()
    err, hwm, cpu = run_measured(cmd, cwd=cwd, check=True)
    wall = time.perf_counter() - start
    return wall, hwm / 1024, cpu, err


def cut_share(err):
    """The share of samples whose stack rperf's unwinding stopped before the end (its
    `Unwound while recording` line), or NaN where the recorder printed none."""
    m = re.search(r"Unwound while recording: \d+ samples, \d+ \(([\d.]+)%\) stopped", err)
    return float(m.group(1)) / 100 if m else float("nan")


def program_times(path):
    """The elapsed, user and system seconds GNU time wrote to path (its last three figures)."""
    with open(path) as f:
        elapsed, user, system = (float(x) for x in f.read().split()[-3:])
    return elapsed, user, system


def timed_report(cmd, cwd, env=None):
    """(wall seconds, peak RSS in MiB) of a command that starts no other process: the RSS from
    GNU time's wait4, exact however short the run (wait4 from this Python process would count
    the memory the child had before exec, Python's own)."""
    with tempfile.NamedTemporaryFile("r") as rss, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *cmd], stdout=subprocess.DEVNULL,
                           stderr=err, cwd=cwd, env=env)
        wall = time.perf_counter() - start
        if p.returncode != 0:
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd)} failed:\n{err.read().decode(errors='replace')[-2000:]}")
        kib = int(rss.read().split()[-1])
    return wall, kib / 1024, ""


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def record_rounds(work, programs, tools, rounds):
    """{(workload, tool or 'alone'): [(wall, MiB)]}, rounds interleaved; the last round's
    recordings stay in work/WORKLOAD/."""
    results = {}
    for r in range(rounds):
        for w, cmd in programs.items():
            folder = os.path.join(work, w)
            os.makedirs(folder, exist_ok=True)
            order = ["alone", *tools]
            order = order[r % len(order):] + order[:r % len(order)]
            for t in order:
                # Every program runs under GNU time (inside the recorder), alone as well, for
                # its own CPU time: the kernel's sampling work in its context is counted there.
                make, name = tools[t] if t != "alone" else (lambda o: [], "alone")
                out = os.path.join(folder, name)
                full = make(out) + ["/usr/bin/time", "-f", "%e %U %S", "-o", out + ".program"] + cmd
                wall, mib, cpu, err = timed(full, folder)
                elapsed, user, system = program_times(out + ".program")
                program = user + system
                if t == "floor":
                    wall, cpu = elapsed, float("nan")
                elif t != "alone":
                    cpu -= program
                if t == "simpleperf":
                    subprocess.run(["python3", FIX_META, out], check=True)
                cut = cut_share(err) if t.startswith("rperf") or t == "base" else float("nan")
                results.setdefault((w, t), []).append((wall, mib, cpu, program, cut, system))
                print(f"  round {r + 1} {w:8} {t:14} {wall:7.3f} s {mib:7.1f} MiB {cpu:6.2f} s CPU, "
                      f"program {program:6.2f} s", file=sys.stderr)
    return results


def report_rounds(work, programs, tools, reads, rounds):
    """{(workload, recorder, reader): [(wall, MiB)]}, rounds interleaved after one untimed `cat`
    of the file and one untimed report by each rperf reader (which fills rperf's cache folder
    with what each names). Reader `rperf cold` is rperf with a cache folder of its own emptied
    first, as a first report on a machine is; the others' folder stays warm."""
    results = {}
    cold = os.environ["RPERF_CACHE_DIR"] + "-cold"
    cold_env = dict(os.environ, RPERF_CACHE_DIR=cold)
    for w in programs:
        folder = os.path.join(work, w)
        for rec, (_, name) in tools.items():
            f = os.path.join(folder, name)
            who = [t for t, (_, reads_from) in reads.items() if rec in reads_from]
            if not os.path.exists(f) or not who:
                continue
            subprocess.run(["cat", f], stdout=subprocess.DEVNULL, check=True)
            for t in ["rperf", *(t for t in who if t == "rperf -g")]:
                timed_report(reads[t][0](f), folder)
            for r in range(rounds):
                for t in who[r % len(who):] + who[:r % len(who)]:
                    env = None
                    if t == "rperf cold":
                        shutil.rmtree(cold, ignore_errors=True)
                        env = cold_env
                    wall, mib, _ = timed_report(reads[t][0](f), folder, env)
                    results.setdefault((w, rec, t), []).append((wall, mib))
                    print(f"  report {w:8} {rec:10} by {t:10} {wall:7.3f} s {mib:7.1f} MiB", file=sys.stderr)
    return results


def field(run, i):
    """Field i of a round's figures (NaN in figures an older run saved without it)."""
    return run[i] if len(run) > i else float("nan")


def print_program_table(programs, names, rec):
    """The program's own CPU time under each recorder, over its time alone (the median of the
    rounds' ratios: a round runs every command once, so a slow stretch of the host moves both),
    how much of it is system time (the median of the rounds' differences), and the share of
    samples whose stack rperf's unwinding cut."""
    print("\n## The program's own CPU time (user + system, GNU time) over alone's, median of the rounds' "
          "ratios; the system time's part; rperf: share of stacks cut\n")
    print("| workload | alone CPU s | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for w in programs:
        alone = rec[(w, "alone")]
        cells = []
        for t in names:
            runs = rec.get((w, t), [])
            ratio = median([field(x, 3) / field(a, 3) for x, a in zip(runs, alone)])
            cut = median([field(x, 4) for x in runs])
            system = median([field(x, 5) - field(a, 5) for x, a in zip(runs, alone)])
            cells.append(f"{(ratio - 1) * 100:+.1f}% (system {system:+.2f} s)"
                         + (f", {cut * 100:.2f}% cut" if cut == cut else ""))
        print(f"| {w} | {median([field(a, 3) for a in alone]):.2f} | " + " | ".join(cells) + " |")


def print_tables(programs, tools, rec, rep):
    print("\n## Recording: wall time over the program alone, the recorder's peak RSS and own CPU s (medians)\n")
    names = list(tools)
    print("| workload | alone s | " + " | ".join(f"{t} overhead, MiB, CPU s" for t in names)
          + " | rperf overhead / peer's | rperf above the floor |")
    print("|---|---|" + "---|" * len(names) + "---|---|")
    for w in programs:
        alone = median([x[0] for x in rec[(w, "alone")]])
        cells, over = [], {}
        for t in names:
            runs = rec.get((w, t), [])
            over[t] = median([x[0] for x in runs]) / alone - 1
            cpu = median([field(x, 2) for x in runs])
            cells.append(f"{over[t] * 100:+.1f}%, {median([x[1] for x in runs]):.1f}"
                         + (f", {cpu:.2f}" if cpu == cpu else ""))
        ratios = ", ".join(f"{t} {over['rperf'] / over[t]:.2f}" for t in names
                           if not t.startswith("rperf") and over[t] > 0)
        above = f"{((1 + over['rperf']) / (1 + over['floor']) - 1) * 100:+.1f}%" if "floor" in over else "-"
        print(f"| {w} | {alone:.3f} | " + " | ".join(cells) + f" | {ratios} | {above} |")
    print_program_table(programs, names, rec)
    if "base" in names:
        print("\nrperf's wall time over base's, median of the rounds' ratios: " + ", ".join(
            f"{w} {median([a[0] / b[0] for a, b in zip(rec[(w, 'rperf')], rec[(w, 'base')])]):.3f}"
            for w in programs))
        print("rperf's own CPU over base's, median of the rounds' ratios: " + ", ".join(
            f"{w} {median([a[2] / b[2] for a, b in zip(rec[(w, 'rperf')], rec[(w, 'base')])]):.3f}"
            for w in programs))
    print("\n## Reporting each recording: median wall s, peak MiB; ratio: the reader's time / rperf's\n")
    print("| workload | recorded by | reader | s | MiB | / rperf |")
    print("|---|---|---|---|---|---|")
    for w in programs:
        for r in tools:
            base = rep.get((w, r, "rperf"))
            for (w2, r2, t), runs in sorted(rep.items()):
                if (w2, r2) != (w, r):
                    continue
                s, mib = median([x[0] for x in runs]), median([x[1] for x in runs])
                ratio = f"{s / median([x[0] for x in base]):.2f}" if base else "-"
                print(f"| {w} | {r} | {t} | {s:.3f} | {mib:.1f} | {ratio} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (medians are shown)")
    ap.add_argument("--only", help="comma-separated workloads (g++, xz, cpython, node)")
    ap.add_argument("--report-rounds", type=int, help="interleaved rounds of reports (default: --rounds)")
    ap.add_argument("--readers", help="comma-separated readers to time (rperf, rperf cold, rperf -g, perf, simpleperf, samply, "
                                      "cat; rperf always); default all")
    ap.add_argument("--recorders", help="comma-separated recorders (perf, simpleperf, samply, floor, "
                                        "rperf-nocg; rperf always); default all but rperf-nocg")
    ap.add_argument("--baseline", help="another rperf build, recording in the same rounds as `base`")
    ap.add_argument("--stack-sizes", default="",
                    help="comma-separated DWARF stack sizes to record rperf with as well (`rperf-dwarf,SIZE`)")
    ap.add_argument("--keep", help="work folder (kept; a temporary one otherwise)")
    ap.add_argument("--reuse", action="store_true",
                    help="with --keep: reuse the recordings and recording figures an earlier run left there")
    args = ap.parse_args()
    if not os.path.exists(SIMPLEPERF):
        sys.exit(f"simpleperf not found at {SIMPLEPERF}")
    subprocess.run(["cargo", "build", "--release", "-q"], cwd=ROOT, check=True)
    rperf = os.path.join(ROOT, "target/release/rperf")
    work = args.keep or tempfile.mkdtemp(prefix="rperf-bench-peers-")
    os.makedirs(work, exist_ok=True)
    os.environ["RPERF_CACHE_DIR"] = os.path.join(work, "rperf-cache")
    shutil.rmtree(os.environ["RPERF_CACHE_DIR"], ignore_errors=True)
    programs = inputs(work)
    if args.only:
        programs = {w: c for w, c in programs.items() if w in args.only.split(",")}
    sizes = [int(x) for x in args.stack_sizes.split(",") if x]
    tools = recorders(rperf, args.baseline, sizes)
    if args.recorders:
        keep = {"rperf", "base", *args.recorders.split(","), *(f"rperf-dwarf,{x}" for x in sizes)}
        tools = {t: r for t, r in tools.items() if t in keep}
    else:
        tools.pop("rperf-nocg")
    saved = os.path.join(work, "recording.json")
    if args.reuse and os.path.exists(saved):
        with open(saved) as f:
            rec = {tuple(k.split("|")): v for k, v in json.load(f).items()}
    else:
        rec = record_rounds(work, programs, tools, args.rounds)
        with open(saved, "w") as f:
            json.dump({"|".join(k): v for k, v in rec.items()}, f)
    reads = readers(rperf, work)
    if args.readers:
        keep = {"rperf", *args.readers.split(",")}
        reads = {t: r for t, r in reads.items() if t in keep}
    rep = report_rounds(work, programs, tools, reads, args.report_rounds or args.rounds)
    rounds = max(len(runs) for (_, t), runs in rec.items() if t == "alone")
    print(f"# bench_peers.py, {rounds} recording rounds: {os.uname().nodename}, {os.cpu_count()} CPUs; work folder {work}")
    print_tables(programs, tools, rec, rep)


if __name__ == "__main__":
    main()
