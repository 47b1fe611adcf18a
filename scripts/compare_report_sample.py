#!/usr/bin/env python3
"""Compares two report-sample protobuf files as simpleperf's own reader shows them.

Both files are printed with `simpleperf report-sample --dump-protobuf-report`; each sample is
then read as (event, time, thread, event count, call chain), its call chain as (file path,
symbol name, vaddr_in_file) per frame, so that files and symbols numbered in another order
still compare equal. Samples are compared as multisets (simpleperf writes them in file order,
rperf in time order).

    scripts/compare_report_sample.py [--simpleperf BIN] [--json] EXPECTED.trace ACTUAL.trace

Prints how many samples of EXPECTED are in ACTUAL unchanged, and the first that are not.
Exit status 0 when every sample matches and the counts agree.
"""

import argparse
import collections
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SIMPLEPERF = os.path.join(HERE, "..", "..", "shared", "simpleperf", "bin", "simpleperf")


def dump(simpleperf, path):
    out = subprocess.run([simpleperf, "report-sample", "--dump-protobuf-report", path],
                         capture_output=True, text=True, errors="replace", check=False)
    if out.returncode != 0:
        sys.exit(f"simpleperf cannot read {path}: {out.stderr.strip()}")
    return out.stdout


def parse(text):
    """Records of a dump: a list of (kind, {field: [values]}) with call chain entries apart."""
    records = []
    current = None
    for line in text.splitlines():
        if not line.startswith(" "):
            head = line.split(":")[0].split(" ")[0]
            current = (head, collections.defaultdict(list), [])
            records.append(current)
            continue
        if current is None:
            continue
        key, _, value = line.strip().partition(": ")
        if key == "callchain:" or line.strip() == "callchain:":
            continue
        if line.startswith("    ") and key in ("vaddr_in_file", "file_id", "symbol_id", "execution_type"):
            chain = current[2]
            if key == "vaddr_in_file":
                chain.append({})
            if chain:
                chain[-1][key] = value
            continue
        current[1][key].append(value)
    return records


def samples(text):
    records = parse(text)
    files = {}
    events = []
    for kind, fields, _ in records:
        if kind == "file":
            files[fields["id"][0]] = (fields["path"][0] if fields["path"] else "", fields["symbol"])
        elif kind == "meta_info":
            events = fields["event_type"]
    out = collections.Counter()
    lost = None
    for kind, fields, chain in records:
        if kind == "lost_situation":
            lost = int(fields["lost_count"][0]) if fields["lost_count"] else 0
        if kind != "sample":
            continue
        frames = []
        for e in chain:
            path, symbols = files.get(e.get("file_id"), ("?", []))
            sid = int(e.get("symbol_id", "-1"))
            name = symbols[sid] if 0 <= sid < len(symbols) else "[unknown]"
            frames.append((path, name, e.get("vaddr_in_file")))
        event_id = int(fields["event_type_id"][0]) if fields["event_type_id"] else 0
        event = events[event_id] if event_id < len(events) else str(event_id)
        out[(event, fields["time"][0], fields["thread_id"][0], fields["event_count"][0],
             tuple(frames))] += 1
    return out, lost


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("expected")
    ap.add_argument("actual")
    ap.add_argument("--simpleperf", default=os.environ.get("RPERF_SIMPLEPERF", DEFAULT_SIMPLEPERF))
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--show", type=int, default=3, help="how many differing samples to print")
    args = ap.parse_args()
    expected, lost_e = samples(dump(args.simpleperf, args.expected))
    actual, lost_a = samples(dump(args.simpleperf, args.actual))
    total = sum(expected.values())
    same = sum((expected & actual).values())
    result = {"expected": total, "actual": sum(actual.values()), "same": same,
              "lost_expected": lost_e, "lost_actual": lost_a}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{same} of {total} samples identical; {result['actual']} samples in {args.actual}")
        for s in list((expected - actual).elements())[:args.show]:
            print("missing:", s)
        for s in list((actual - expected).elements())[:args.show]:
            print("extra:  ", s)
    ok = same == total == result["actual"] and lost_e == lost_a
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
