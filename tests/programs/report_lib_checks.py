#!/usr/bin/env python3
"""What simpleperf's tests of its report library (AOSP
`system/extras/simpleperf/scripts/test/report_lib_test.py`) check on the recordings of its
corpus, checked through simpleperf's own `simpleperf_report_lib.py` on the library found beside
it (rperf's, installed as `bin/linux/x86_64/libsimpleperf_report.so`).

Usage: report_lib_checks.py SCRIPTS_DIR CORPUS_DIR
Prints one line per check, `ok NAME`, `FAIL NAME: why`, or `skip NAME: why` (a check of a
`ReportLib` method these scripts lack), then `N of M` (M: the checks not skipped); exits 1 when
one failed. Checks of files the corpus lacks are left out.
"""
import os
import sys
import tempfile

SCRIPTS, CORPUS = sys.argv[1], sys.argv[2]
sys.path.insert(0, SCRIPTS)
from simpleperf_report_lib import ReportLib  # noqa: E402

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def opened(name, setup=None):
    lib = ReportLib()
    if setup:
        setup(lib)
    lib.SetRecordFile(os.path.join(CORPUS, name))
    return lib


def each_sample_keep(lib):
    """The samples of an open library, which stays open."""
    while lib.GetNextSample():
        yield lib.GetCurrentSample()


def each_sample(lib):
    """The samples of an open library, closed after the last."""
    yield from each_sample_keep(lib)
    lib.Close()


def frames(lib):
    """The sample's symbol, then its call chain's."""
    yield lib.GetSymbolOfCurrentSample()
    chain = lib.GetCallChainOfCurrentSample()
    for i in range(chain.nr):
        yield chain.entries[i].symbol


@check
def build_id_of_a_path():
    lib = opened('perf_with_symbols.data')
    got = lib.GetBuildIdForPath('/data/t2')
    lib.Close()
    assert got == '0x70f1fe24500fc8b0d9eb477199ca1ca21acca4de', got


@check
def stored_symbols_have_address_and_length():
    lib = opened('perf_with_symbols.data')
    found = set()
    for _ in each_sample_keep(lib):
        s = lib.GetSymbolOfCurrentSample()
        if s.symbol_name == 'func2(int, int)':
            found.add((s.symbol_addr, s.symbol_len))
    lib.Close()
    assert found == {(0x4004ed, 0x14)}, found


@check
def sample_fields():
    lib = opened('perf_with_symbols.data')
    seen = None
    for s in each_sample_keep(lib):
        if s.ip == 0x4004ff and s.time == 7637889424953:
            seen = (s.pid, s.tid, s.thread_comm, s.cpu, s.period,
                    lib.GetEventOfCurrentSample().name, lib.GetCallChainOfCurrentSample().nr)
    lib.Close()
    assert seen == (15926, 15926, 't2', 5, 694614, 'cpu-cycles', 0), seen


@check
def meta_info():
    lib = opened('perf_with_trace_offcpu_v2.data')
    m = lib.MetaInfo()
    lib.Close()
    assert 'simpleperf_version' in m and 'product_props' in m, m
    assert m['system_wide_collection'] == 'false' and m['trace_offcpu'] == 'true', m
    assert m['event_type_info'] == 'cpu-clock,1,0\nsched:sched_switch,2,91', m


@check
def event_names_from_meta_info():
    lib = opened('perf_with_tracepoint_event.data')
    names = {lib.GetEventOfCurrentSample().name for _ in each_sample_keep(lib)}
    lib.Close()
    assert {'sched:sched_switch', 'cpu-cycles'} <= names, names


@check
def record_command():
    lib = opened('perf_with_trace_offcpu_v2.data')
    cmd = lib.GetRecordCmd()
    lib.Close()
    assert cmd == ('/data/user/0/com.google.samples.apps.sunflower/simpleperf record '
                   '--app com.google.samples.apps.sunflower --add-meta-info app_type=debuggable '
                   '--in-app --tracepoint-events /data/local/tmp/tracepoint_events --out-fd 3 '
                   '--stop-signal-fd 4 -g --size-limit 500k --trace-offcpu -e cpu-clock:u'), cmd


@check
def off_cpu_time_in_epoll():
    lib = opened('perf_with_trace_offcpu_v2.data')
    total = in_epoll = 0
    events = set()
    for s in each_sample_keep(lib):
        total += s.period
        events.add(lib.GetEventOfCurrentSample().name)
        if any(f.symbol_name == '__epoll_pwait' for f in frames(lib)):
            in_epoll += s.period
    lib.Close()
    assert events == {'cpu-clock:u'}, events
    assert in_epoll / total > 0.30, (in_epoll, total)


def has_art_frame(setup):
    lib = opened('perf_with_interpreter_frames.data', setup)
    found = any(f.symbol_name == 'artMterpAsmInstructionStart'
                for _ in each_sample_keep(lib) for f in list(frames(lib))[1:])
    lib.Close()
    return found


@check
def art_frames_shown_when_asked():
    assert not has_art_frame(None)
    assert not has_art_frame(lambda lib: lib.ShowArtFrames(False))
    assert has_art_frame(lambda lib: lib.ShowArtFrames(True))


@check
def removed_methods():
    lib = opened('perf_display_bitmaps.data', lambda lib: lib.RemoveMethod('android.view'))
    methods = {f.symbol_name for _ in each_sample_keep(lib) for f in frames(lib)}
    lib.Close()
    assert not any('android.view' in m for m in methods)
    assert any('android.widget' in m for m in methods)


def jit_files_and_cache(setup):
    """Whether frames are in ART's old JIT debug files (`./TemporaryFile-XXXXXX`), and whether
    frames are in `[JIT cache]`."""
    lib = opened('perf_with_interpreter_frames.data', setup)
    dsos = {f.dso_name for _ in each_sample_keep(lib) for f in frames(lib)}
    lib.Close()
    return any('TemporaryFile-' in d for d in dsos), '[JIT cache]' in dsos


@check
def java_methods_merged_by_default():
    # As simpleperf's newer library does: merging, the compiled methods left in the old JIT
    # files are shown in `[JIT cache]`.
    assert jit_files_and_cache(None) == (False, True)
    assert jit_files_and_cache(lambda lib: lib.MergeJavaMethods(True)) == (False, True)
    assert jit_files_and_cache(lambda lib: lib.MergeJavaMethods(False)) == (True, False)


@check
def jit_app_cache():
    lib = opened('perf_with_jit_symbol.data')
    dsos = {f.dso_name for _ in each_sample_keep(lib) for f in frames(lib)}
    lib.Close()
    assert '[JIT app cache]' in dsos, dsos


@check
def tracing_data():
    lib = opened('perf_with_tracepoint_event.data')
    found = False
    for _ in each_sample_keep(lib):
        data = lib.GetTracingDataOfCurrentSample()
        if lib.GetEventOfCurrentSample().name != 'sched:sched_switch':
            assert data is None, data
            continue
        assert 'prev_pid' in data and 'next_comm' in data, data
        found |= data['prev_pid'] == 9896 and data['next_comm'] == 'swapper/4'
    lib.Close()
    assert found


def mode_counts(mode):
    """{event: (samples, period)} the library gives v2 in an off-CPU mode."""
    lib = opened('perf_with_trace_offcpu_v2.data')
    lib.SetTraceOffCpuMode(mode)
    got = {}
    for s in each_sample_keep(lib):
        n, p = got.get(lib.GetEventOfCurrentSample().name, (0, 0))
        got[lib.GetEventOfCurrentSample().name] = (n + 1, p + s.period)
    lib.Close()
    return got


# Each mode's (samples, period) by event, as simpleperf's test of its newer library gives them:
# on-CPU samples keep their period, a switch-out sample weighs the time until its thread's next
# sample or switch-in.
OFF_CPU_MODES = {
    'on-cpu': {'cpu-clock:u': (208, 52000000)},
    'off-cpu': {'sched:sched_switch': (91, 344124304)},
    'on-off-cpu': {'cpu-clock:u': (208, 52000000), 'sched:sched_switch': (91, 344124304)},
    'mixed-on-off-cpu': {'cpu-clock:u': (299, 396124304)},
}


@check
def off_cpu_modes():
    lib = ReportLib()
    for call in (lib.GetSupportedTraceOffCpuModes, lambda: lib.SetTraceOffCpuMode('on-cpu')):
        try:
            call()
            raise AssertionError('allowed before SetRecordFile')
        except RuntimeError:
            pass
    lib.Close()
    modes = ['on-cpu', 'off-cpu', 'on-off-cpu', 'mixed-on-off-cpu']
    lib = opened('perf_with_trace_offcpu_v2.data')
    assert sorted(lib.GetSupportedTraceOffCpuModes()) == sorted(modes), lib.GetSupportedTraceOffCpuModes()
    lib.Close()
    got = {mode: mode_counts(mode) for mode in modes}
    assert got == OFF_CPU_MODES, got
    lib = opened('perf.data')
    assert lib.GetSupportedTraceOffCpuModes() == []
    try:
        lib.SetTraceOffCpuMode('on-cpu')
        raise AssertionError('an off-CPU mode was set on a recording not made for it')
    except RuntimeError:
        pass
    lib.Close()


def values_for_filter(filters, field):
    lib = opened('perf_display_bitmaps.data', lambda lib: lib.SetSampleFilter(filters))
    return {getattr(s, field) for s in each_sample(lib)}


@check
def sample_filters():
    tids = lambda f: values_for_filter(f, 'tid')  # noqa: E731
    assert 31850 not in tids(['--exclude-pid', '31850'])
    assert 31850 in tids(['--include-pid', '31850'])
    assert 31881 not in tids(['--exclude-tid', '31881'])
    assert 31881 in tids(['--include-tid', '31881'])
    app = 'com.example.android.displayingbitmaps'
    assert 31881 not in tids(['--exclude-process-name', app])
    assert 31881 in tids(['--include-process-name', app])
    assert 31850 not in tids(['--exclude-thread-name', app])
    assert 31850 in tids(['--include-thread-name', app])
    assert 31856 not in tids(['--exclude-thread-name', 'Jit thread pool'])
    assert 31856 in tids(['--include-thread-name', 'Jit thread pool'])
    with tempfile.NamedTemporaryFile('w', suffix='.filter') as f:
        f.write('GLOBAL_BEGIN 684943449406175\nGLOBAL_END 684943449406176')
        f.flush()
        got = tids(['--filter-file', f.name])
    assert 31881 in got and 31850 not in got, got


@check
def cpu_filter():
    cpus = values_for_filter(['--cpu', '0,1-2'], 'cpu')
    assert {0, 1, 2} <= cpus and 3 not in cpus, cpus


def thread_names(setup):
    lib = opened('perf_display_bitmaps.data', setup)
    names = {}
    for s in each_sample(lib):
        names[s.thread_comm] = names.get(s.thread_comm, 0) + 1
    return names


@check
def aggregated_threads():
    names = thread_names(None)
    assert (names['AsyncTask #3'], names['AsyncTask #4']) == (6, 13), names
    names = thread_names(lambda lib: lib.AggregateThreads(['AsyncTask.*']))
    assert names['AsyncTask.*'] == 19 and 'AsyncTask #3' not in names and 'AsyncTask #4' not in names


def symbol_names(setup):
    lib = opened('perf_display_bitmaps.data', setup)
    names = {lib.GetSymbolOfCurrentSample().symbol_name for _ in each_sample_keep(lib)}
    lib.Close()
    return names


@check
def demangling():
    readable = 'art::InternTable::Table::VisitRoots(art::RootVisitor*)'
    mangled = '_ZN3art11InternTable5Table10VisitRootsEPNS_11RootVisitorE'
    names = symbol_names(None)
    assert readable in names and mangled not in names
    names = symbol_names(lambda lib: lib.DisableDemangle())
    assert readable not in names and mangled in names


@check
def process_names():
    lib = opened('perf_display_bitmaps.data')
    names = {lib.GetProcessNameOfCurrentSample() for _ in each_sample_keep(lib)}
    lib.Close()
    assert names == {'com.example.android.displayingbitmaps'}, names


@check
def event_counters():
    lib = opened('perf_with_add_counter.data')
    seen = set()
    for s in each_sample_keep(lib):
        c = lib.GetEventCountersOfCurrentSample()
        seen.add(tuple((c.event_counter[i].name, c.event_counter[i].id) for i in range(c.nr)))
        if s.time == 163881994146395:
            first = [c.event_counter[i].count for i in range(c.nr)]
    lib.Close()
    assert seen == {(('cpu-cycles', 8470), ('instructions', 8471))}, seen
    assert first == [3520, 295], first


@check
def all_build_ids():
    lib = opened('perf_with_symbols.data')
    ids = lib.GetAllBuildIds()
    lib.Close()
    assert ids['/data/t2'] == '0x70f1fe24500fc8b0d9eb477199ca1ca21acca4de', ids


@check
def threads():
    lib = opened('perf_display_bitmaps.data')
    app = 'com.example.android.displayingbitmaps'
    assert lib.GetThread(31850) == (31850, 31850, app), lib.GetThread(31850)
    assert lib.GetThread(31881) == (31850, 31881, 'RenderThread'), lib.GetThread(31881)
    assert lib.GetThread(-5) is None
    lib.Close()


@check
def symbols_of_a_binary():
    lib = opened('perf_with_symbols.data')
    symbols = lib.GetSymbols('/data/t2')
    missing = lib.GetSymbols('/no/such/binary')
    lib.Close()
    assert (0x4004ed, 0x14, 'func2(int, int)') in symbols, symbols
    assert symbols == sorted(symbols), symbols
    assert missing is None, missing


NEEDS = {
    'removed_methods': 'RemoveMethod',
    'demangling': 'DisableDemangle',
    'process_names': 'GetProcessNameOfCurrentSample',
    'event_counters': 'GetEventCountersOfCurrentSample',
    'all_build_ids': 'GetAllBuildIds',
    'threads': 'GetThread',
    'symbols_of_a_binary': 'GetSymbols',
}
failed = skipped = 0
for fn in CHECKS:
    needed = NEEDS.get(fn.__name__)
    if needed and not hasattr(ReportLib, needed):
        skipped += 1
        print(f'skip {fn.__name__}: these scripts have no ReportLib.{needed}')
        continue
    try:
        fn()
        print(f'ok {fn.__name__}')
    except Exception as e:  # noqa: BLE001 - every failure is reported by name
        failed += 1
        print(f'FAIL {fn.__name__}: {type(e).__name__} {e}')
print(f'{len(CHECKS) - failed - skipped} of {len(CHECKS) - skipped}')
sys.exit(1 if failed else 0)
