#!/usr/bin/env python3
"""Holds rperf's text report against Android's simpleperf, row for row.

For every recording given (default: the simpleperf corpus) and every option set (default, then
`--children`, `--sort dso,symbol`, `--sort comm,tid`), both tools report with the same options;
each of simpleperf's rows at or above --min-percent is looked for, character for character
(whitespace runs folded to one space), among rperf's rows of the same event section.

    scripts/compare_simpleperf.py [--corpus DIR] [--rperf BIN] [--simpleperf BIN]
                                  [--files a.data,b.data] [--symfs DIR] [--named-only]
                                  [--show N] [--json]

Prints one line per recording and option set (identical / simpleperf's rows), then the rows
that differ, each with the rperf row that comes closest; with --json, one JSON object.
--named-only looks only for the rows where simpleperf names a function (not `lib.so[+addr]`):
rperf may name more code than simpleperf (debug files simpleperf does not read).
A differing row whose only difference is the function's name, where both names are symbols at
one address of that binary (`log` and `logf64` in libm), is marked as an alias: README lists
the choice among aliases as a deliberate difference.
--names-only compares rows without their shares: what is named, not what it weighs (off-CPU
recordings, which rperf weighs as simpleperf's newer report library does; see README).
"""
import argparse
import difflib
import json
import os
import subprocess
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

OPTION_SETS = [[], ["--children"], ["--sort", "dso,symbol"], ["--sort", "comm,tid"]]

# Files that are not profiles to report: refused by both tools, or branch stacks that simpleperf
# reports with its own -b table.
SKIP = {"invalid_perf.data"}


def sections(text):
    """Event name -> list of rows (whitespace folded) of one report."""
    out = {}
    event = None
    rows = None
    for line in text.splitlines():
        if line.startswith("Event: "):
            event = line[len("Event: "):].split(" (type")[0]
            rows = None
            continue
        if line.startswith("Overhead") or line.startswith("Children"):
            rows = out.setdefault(event or "", [])
            continue
        if rows is None:
            continue
        if not line.strip():
            rows = None
            continue
        if line.startswith(" ") or line.startswith("|") or line.lstrip().startswith("|"):
            continue  # call-graph lines
        rows.append(" ".join(line.split()))
    return out


def share(row):
    first = row.split(" ", 1)[0]
    try:
        return float(first.rstrip("%"))
    except ValueError:
        return 0.0


def nearest(row, rows):
    """The row of rows most like row, judged on its columns after the first (the shares)."""
    key = row.split(" ", 1)[-1]
    tail = key.split(" ")[-1]
    pool = [r for r in rows if tail in r] or rows
    near = difflib.get_close_matches(row, pool[:200], n=1, cutoff=0.0)
    return near[0] if near else None


_ADDRESSES = {}


def symbol_addresses(path):
    """Name (version suffix dropped) -> set of addresses, from the binary's symbol tables."""
    if path not in _ADDRESSES:
        table = {}
        p = subprocess.run(["readelf", "-Ws", "--wide", path], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, errors="replace")
        for line in p.stdout.splitlines():
            cols = line.split()
            if len(cols) >= 8 and cols[3] == "FUNC":
                name = cols[7].split("@", 1)[0]
                table.setdefault(name, set()).add(int(cols[1], 16))
        _ADDRESSES[path] = table
    return _ADDRESSES[path]


def is_alias(theirs, ours, symfs):
    """Whether two rows differ only in the function name, the two names being one address."""
    if not ours:
        return False
    a, b = theirs.split(" "), ours.split(" ")
    if len(a) != len(b) or len(a) < 2 or a[:-1] != b[:-1] or a[-1] == b[-1]:
        return False
    dso = a[-2]
    path = os.path.join(symfs, dso.lstrip("/")) if symfs else dso
    if not os.path.isfile(path):
        return False
    table = symbol_addresses(path)
    return bool(table.get(a[-1], set()) & table.get(b[-1], set()))


def report(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors="replace")
    return p.returncode, p.stdout, p.stderr


def compare(args, data, opts):
    base = ["report", "-i", data] + (["--symfs", args.symfs] if args.symfs else []) + opts
    src, sout, serr = report([args.simpleperf] + base)
    if src != 0:
        return None
    _, rout, rerr = report([args.rperf] + base)
    theirs = sections(sout)
    ours = sections(rout)
    if args.names_only:
        ours = {event: [without_shares(r) for r in rows] for event, rows in ours.items()}
    total = same = 0
    misses = []
    for event, rows in theirs.items():
        have = Counter(ours.get(event, []))
        for row in rows:
            if share(row) < args.min_percent:
                continue
            if args.named_only and "[+" in row.rsplit(" ", 1)[-1]:
                continue
            total += 1
            if args.names_only:
                row = without_shares(row)
            if have[row] > 0:
                have[row] -= 1
                same += 1
            else:
                near = nearest(row, ours.get(event, []))
                misses.append({"event": event, "simpleperf": row, "rperf": near,
                               "alias": is_alias(row, near, args.symfs)})
    return {"file": os.path.basename(data), "options": " ".join(opts) or "(default)",
            "rows": total, "identical": same, "misses": misses,
            "rperf_error": rerr.strip().splitlines()[-1] if not rout and rerr.strip() else None}


def without_shares(row):
    """A row without its leading share columns (`12.34%`)."""
    fields = row.split(" ")
    while fields and fields[0].endswith("%"):
        fields.pop(0)
    return " ".join(fields)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=os.environ.get("RPERF_SIMPLEPERF_TESTDATA",
                                                       os.path.join(ROOT, "..", "shared",
                                                                    "testdata", "simpleperf")))
    ap.add_argument("--rperf", default=os.path.join(ROOT, "target", "release", "rperf"))
    ap.add_argument("--simpleperf", default=os.path.join(ROOT, "..", "shared", "simpleperf",
                                                         "bin", "simpleperf"))
    ap.add_argument("--files", help="comma-separated recordings (default: every .data file)")
    ap.add_argument("--symfs", help="symbol folder for both tools (default: the corpus; '' for none)")
    ap.add_argument("--named-only", action="store_true")
    ap.add_argument("--names-only", action="store_true")
    ap.add_argument("--min-percent", type=float, default=0.5)
    ap.add_argument("--show", type=int, default=20, help="differing rows to print per file")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.corpus = os.path.abspath(args.corpus)
    if args.symfs is None:
        args.symfs = args.corpus
    for what, path in (("corpus", args.corpus), ("rperf", args.rperf),
                       ("simpleperf", args.simpleperf)):
        if not os.path.exists(path):
            sys.exit(f"compare_simpleperf: {what} not found at {path}")
    if args.files:
        files = [f if os.path.isabs(f) else os.path.join(args.corpus, f)
                 for f in args.files.split(",")]
    else:
        files = sorted(os.path.join(args.corpus, f) for f in os.listdir(args.corpus)
                       if f.endswith(".data") and f not in SKIP)
    results = []
    for data in files:
        for opts in OPTION_SETS:
            r = compare(args, data, opts)
            if r is not None:
                results.append(r)
    rows = sum(r["rows"] for r in results)
    same = sum(r["identical"] for r in results)
    aliases = sum(m["alias"] for r in results for m in r["misses"])
    if args.json:
        json.dump({"rows": rows, "identical": same, "aliases": aliases, "results": results},
                  sys.stdout, indent=1)
        print()
        return
    for r in results:
        mark = "" if r["identical"] == r["rows"] else "  <-"
        print(f"{r['identical']:4}/{r['rows']:<4} {r['file']} {r['options']}{mark}")
        if r["rperf_error"]:
            print(f"      rperf: {r['rperf_error']}")
        for m in r["misses"][:args.show]:
            print(f"      simpleperf: {m['simpleperf']}" + ("  (alias)" if m["alias"] else ""))
            print(f"      rperf:      {m['rperf']}")
    pct = 100.0 * same / max(rows, 1)
    print(f"identical rows: {same} of {rows} ({pct:.2f}%); another {aliases} name an alias")


if __name__ == "__main__":
    main()
