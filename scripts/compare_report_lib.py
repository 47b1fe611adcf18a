#!/usr/bin/env python3
"""Compares what a report library gives simpleperf's scripts with what simpleperf reports.

Reads RECORDING through `simpleperf_report_lib.py` (from simpleperf's scripts folder) with the
library given (rperf's librperf_report.so), sample by sample: event, time, thread, period and
call chain, each frame as (binary, symbol name, vaddr_in_file). The same samples are read from
`simpleperf report-sample --protobuf --show-callchain` of the same recording, and the two are
compared as multisets (simpleperf writes samples in file order). The library names frames left
in ART's old JIT debug files (`TemporaryFile-XXXXXX`) `[JIT cache]`, as simpleperf's newer
library does; the shared simpleperf's report-sample names them by file: its frames are read
with that name too.

    scripts/compare_report_lib.py --lib target/release/librperf_report.so \\
        --scripts ../shared/simpleperf/scripts [--symfs DIR] [--json] RECORDING

Exit status 0 when every sample matches.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare_report_sample  # noqa: E402


def library_samples(lib_path, scripts, recording, symfs):
    sys.path.insert(0, scripts)
    from simpleperf_report_lib import ReportLib  # pylint: disable=import-outside-toplevel
    lib = ReportLib(lib_path)
    lib.SetRecordFile(recording)
    if symfs:
        lib.SetSymfs(symfs)
    out = collections.Counter()
    while True:
        sample = lib.GetNextSample()
        if sample is None:
            break
        event = lib.GetEventOfCurrentSample().name
        symbol = lib.GetSymbolOfCurrentSample()
        chain = lib.GetCallChainOfCurrentSample()
        frames = [symbol] + [chain.entries[i].symbol for i in range(chain.nr)]
        key = tuple((s.dso_name, "[unknown]" if s.symbol_name == "unknown" else s.symbol_name,
                     "%x" % s.vaddr_in_file) for s in frames)
        out[(event, str(sample.time), str(sample.tid), str(sample.period), key)] += 1
    lib.Close()
    return out


def newer_jit_cache_names(samples):
    """The samples with frames of ART's old JIT debug files named `[JIT cache]`."""
    out = collections.Counter()
    for (event, time, tid, period, key), n in samples.items():
        key = tuple(("[JIT cache]" if "TemporaryFile-" in dso.rsplit("/", 1)[-1] else dso, name, vaddr)
                    for dso, name, vaddr in key)
        out[(event, time, tid, period, key)] += n
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("recording")
    ap.add_argument("--lib", required=True)
    ap.add_argument("--scripts", required=True, help="simpleperf's scripts folder")
    ap.add_argument("--symfs", help="where the recording's binaries are (simpleperf: --symdir)")
    ap.add_argument("--simpleperf", default=os.environ.get("RPERF_SIMPLEPERF", compare_report_sample.DEFAULT_SIMPLEPERF))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--show", type=int, default=2)
    args = ap.parse_args()
    actual = library_samples(os.path.abspath(args.lib), args.scripts, args.recording, args.symfs)
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, "simpleperf.trace")
        cmd = [args.simpleperf, "report-sample", "--protobuf", "--show-callchain", "--remove-gaps", "0", "-i", args.recording,
               "-o", trace]
        if args.symfs:
            cmd += ["--symdir", args.symfs]
        subprocess.run(cmd, capture_output=True, check=True)
        expected, _ = compare_report_sample.samples(compare_report_sample.dump(args.simpleperf, trace))
    expected = newer_jit_cache_names(expected)
    total = sum(expected.values())
    same = sum((expected & actual).values())
    result = {"expected": total, "actual": sum(actual.values()), "same": same}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{same} of {total} samples identical; the library gave {result['actual']}")
        for s in list((expected - actual).elements())[:args.show]:
            print("missing:", s)
        for s in list((actual - expected).elements())[:args.show]:
            print("extra:  ", s)
    sys.exit(0 if same == total == result["actual"] else 1)


if __name__ == "__main__":
    main()
