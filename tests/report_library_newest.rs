//! simpleperf's newest scripts (`scripts-newest`, which bind more of the report library's C
//! interface) run unmodified on rperf's library: on simpleperf's corpus, on a fresh recording
//! of a program nobody here wrote, and with the values simpleperf's own tests of that
//! generation check. The shared simpleperf's scripts load the same library
//! (report_library.rs).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::library::{library, path_with_stand_in_adb, script_in, scripts, scripts_newest};
use common::*;

fn corpus(file: &str) -> String {
    simpleperf_testdata().join(file).display().to_string()
}

/// Runs a script of the newest generation.
fn newest(name: &str, args: &[&str], cwd: &Path) -> String {
    script_in(scripts_newest(), name, args, cwd)
}

/// `xz -9` compressing 8 MB of random bytes, recorded by rperf with DWARF call graphs.
fn xz_recording() -> &'static Path {
    static DATA: OnceLock<PathBuf> = OnceLock::new();
    DATA.get_or_init(|| {
        let dir = scratch("report_library_newest_xz");
        let input = dir.join("input");
        let bytes: Vec<u8> = (0..8_000_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        std::fs::write(&input, bytes).unwrap();
        let data = dir.join("perf.data");
        let o = run(rperf()
            .args(["record", "-g", "-o"])
            .arg(&data)
            .args(["--", "xz", "-k", "-f", "-9"])
            .arg(&input));
        assert!(o.status.success(), "{}", stderr(&o));
        data
    })
}

/// What simpleperf's tests of its report library check (tests/programs/report_lib_checks.py),
/// through each generation's `simpleperf_report_lib.py`: the newest binds every lookup.
#[test]
fn simpleperfs_report_library_checks_hold_for_both_generations() {
    let checks = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/report_lib_checks.py");
    for (scripts, want) in [(scripts_newest(), 21), (scripts(), 15)] {
        let o = run(Command::new("python3").arg(&checks).arg(scripts).arg(simpleperf_testdata()));
        let out = stdout(&o);
        assert!(o.status.success(), "{}: {out}\n{}", scripts.display(), stderr(&o));
        assert!(out.ends_with(&format!("{want} of {want}\n")), "{}: {out}", scripts.display());
    }
}

/// The folded stacks of `stackcollapse.py` are those simpleperf's tests expect, file for file.
#[test]
fn stackcollapse_gives_simpleperfs_expected_stacks() {
    let dir = scratch("report_library_newest_folded");
    let sorted = |text: &str| {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    for (file, args, expected) in [
        ("perf_with_jit_symbol.data", &["--jit"][..], "perf_with_jit_symbol.foldedstack"),
        ("perf_with_jit_symbol.data", &["--jit", "--pid"], "perf_with_jit_symbol.foldedstack_with_pid"),
        ("perf_with_jit_symbol.data", &["--jit", "--tid"], "perf_with_jit_symbol.foldedstack_with_tid"),
        ("perf_with_jit_symbol.data", &["--addrs"], "perf_with_jit_symbol.foldedstack_addrs"),
        ("perf_with_jit_symbol.data", &["--kernel"], "perf_with_jit_symbol.foldedstack_with_kernel"),
        ("perf_with_two_event_types.data", &[], "perf_with_two_event_types.foldedstack"),
        (
            "perf_with_two_event_types.data",
            &["--event-filter", "cpu-clock"],
            "perf_with_two_event_types.foldedstack_cpu_clock",
        ),
    ] {
        let input = corpus(file);
        let got = newest("stackcollapse.py", &[&["-i", input.as_str()], args].concat(), &dir);
        let want = std::fs::read_to_string(simpleperf_testdata().join(expected)).unwrap();
        assert_eq!(sorted(&got), sorted(&want), "{file} {args:?}");
    }
}

/// report_html.py's off-CPU modes count what simpleperf's newer library counts.
#[test]
fn report_html_counts_off_cpu_time_as_simpleperf_does() {
    let dir = scratch("report_library_newest_html");
    let input = corpus("perf_with_trace_offcpu_v2.data");
    for (mode, want) in [
        ("on-cpu", vec![("cpu-clock:u", 52_000_000)]),
        ("off-cpu", vec![("sched:sched_switch", 344_124_304)]),
        ("on-off-cpu", vec![("cpu-clock:u", 52_000_000), ("sched:sched_switch", 344_124_304)]),
        ("mixed-on-off-cpu", vec![("cpu-clock:u", 396_124_304)]),
    ] {
        newest("report_html.py", &["-i", &input, "--trace-offcpu", mode, "--no_browser"], &dir);
        let got = event_counts(&dir.join("report.html"));
        let want: Vec<(String, u64)> = want.into_iter().map(|(e, n)| (e.to_string(), n)).collect();
        assert_eq!(got, want, "{mode}");
    }
    // rperf's own report counts the same.
    let o = run(rperf().args(["report", "-i", &input]));
    assert!(stdout(&o).contains("Samples: 299\nTime in ns: 396124304\n"), "{}", stdout(&o));
}

/// Each event's name and count in report_html.py's page (its embedded JSON nests call trees
/// deeper than serde_json reads: Python reads it).
fn event_counts(page: &Path) -> Vec<(String, u64)> {
    let program = r#"
import json, sys
page = open(sys.argv[1]).read()
start = page.find('>', page.find('type="application/json"')) + 1
data = json.loads(page[start:page.find('</script>', start)])
for e in data['sampleInfo']:
    print(e['eventName'], e['eventCount'])
"#;
    let o = run(Command::new("python3").arg("-c").arg(program).arg(page));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| {
            let (name, count) = l.rsplit_once(' ').unwrap();
            (name.to_string(), count.parse().unwrap())
        })
        .collect()
}

/// pprof_proto_generator.py: every location lies within its mapping (frames outside every
/// mapping too), and `--tagroot comm` names each sample's process.
#[test]
fn pprof_locations_lie_within_their_mappings() {
    let dir = scratch("report_library_newest_pprof");
    let check = format!(
        r#"
import sys
sys.path.insert(0, {scripts:?})
from pprof_proto_generator import load_pprof_profile
p = load_pprof_profile('pprof.profile')
outside = [l.address for l in p.location
           if not p.mapping[l.mapping_id - 1].memory_start <= l.address <= p.mapping[l.mapping_id - 1].memory_limit]
print(len(p.location), len(outside))
"#,
        scripts = scripts_newest().display().to_string()
    );
    for file in ["perf_with_interpreter_frames.data", "perf_display_bitmaps.data"] {
        newest("pprof_proto_generator.py", &["-i", &corpus(file)], &dir);
        let o = run(Command::new("python3").arg("-c").arg(&check).current_dir(&dir));
        let counts = stdout(&o);
        let (locations, outside) = counts.trim().split_once(' ').expect(&counts);
        assert!(locations.parse::<u32>().unwrap() > 100, "{file}: {counts}");
        assert_eq!(outside, "0", "{file}: locations outside their mapping");
    }
    newest(
        "pprof_proto_generator.py",
        &["-i", &corpus("perf_display_bitmaps.data"), "--tagroot", "comm", "thread_comm"],
        &dir,
    );
    let shown = newest("pprof_proto_generator.py", &["--show"], &dir);
    assert!(
        shown.contains("process:com.example.android.displayingbitmaps"),
        "{}",
        &shown[..2000.min(shown.len())]
    );
}

/// Every data-reading script of the newest generation runs on a fresh recording of xz.
#[test]
fn newest_scripts_run_unchanged_on_a_fresh_recording() {
    let data = xz_recording().display().to_string();
    let dir = scratch("report_library_newest_run");
    let text = newest("report_sample.py", &["-i", &data], &dir);
    assert!(text.contains("lzma") || text.contains("xz"), "{}", &text[..2000.min(text.len())]);
    let folded = newest("stackcollapse.py", &["-i", &data], &dir);
    assert!(folded.lines().all(|l| l.starts_with("xz;")), "{}", &folded[..2000.min(folded.len())]);
    newest("pprof_proto_generator.py", &["-i", &data], &dir);
    assert!(dir.join("pprof.profile").is_file());
    let gecko = newest("gecko_profile_generator.py", &["-i", &data], &dir);
    let v: serde_json::Value = serde_json::from_str(&gecko).expect("gecko JSON");
    assert!(!v["threads"].as_array().unwrap().is_empty());
    newest("report_html.py", &["-i", &data, "--no_browser"], &dir);
    let total: u64 = event_counts(&dir.join("report.html")).iter().map(|(_, n)| n).sum();
    assert!(total > 0);
    newest("annotate.py", &["-i", &data], &dir);
    assert!(dir.join("annotated_files/summary").is_file());
    let flame = dir.join("flame.html");
    let o = run(Command::new("python3")
        .arg(scripts_newest().join("inferno/inferno.py"))
        .args(["-sc", "--record_file", &data, "-o", flame.to_str().unwrap(), "--no_browser"])
        .current_dir(&dir));
    assert!(o.status.success(), "inferno: {}", stderr(&o));
    assert!(std::fs::read_to_string(&flame).unwrap().contains("<svg"));
    newest("sample_filter.py", &["-i", &data, "--split-time-range", "2"], &dir);
    let filter = std::fs::read_to_string(dir.join("sample_filter_part1")).unwrap();
    assert!(filter.contains("GLOBAL_BEGIN") && filter.contains("GLOBAL_END"), "{filter}");
    let page = dir.join("purgatorio.html");
    newest("purgatorio/purgatorio.py", &["-i", &data, "-o", page.to_str().unwrap()], &dir);
    assert!(std::fs::read_to_string(&page).unwrap().contains("Bokeh"));
    // binary_cache_builder.py collects every binary the library names with a build id
    // (GetAllBuildIds) from a local folder; the phone is a stand-in adb that pulls nothing.
    let lib_dir = dir.join("binaries");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let xz = which("xz");
    std::fs::copy(&xz, lib_dir.join("xz")).unwrap();
    let path = path_with_stand_in_adb(&dir);
    let o = run(Command::new("python3")
        .arg(scripts_newest().join("binary_cache_builder.py"))
        .args(["-i", &data, "-lib"])
        .arg(&lib_dir)
        .env("PATH", path)
        .current_dir(&dir));
    assert!(o.status.success(), "binary_cache_builder.py: {}", stderr(&o));
    let cached = dir.join("binary_cache").join(build_id_hex(&xz)).join("xz");
    assert!(cached.is_file(), "{} missing: {}", cached.display(), stderr(&o));
}

/// The path of a program on PATH.
fn which(program: &str) -> PathBuf {
    let o = run(Command::new("sh").arg("-c").arg(format!("command -v {program}")));
    PathBuf::from(stdout(&o).trim())
}

/// The instructions `simpleperf inject` says `etm/perf_etm.data` ran: the sum over its
/// AutoFDO address ranges (`start-end:count`, both ends instructions of 4 bytes) of each
/// range's instructions times its count.
fn instructions_simpleperf_decodes(dir: &Path) -> u64 {
    let etm = simpleperf_testdata().join("etm");
    let out = dir.join("inject.txt");
    let o = run(Command::new(simpleperf())
        .arg("inject")
        .arg("-i")
        .arg(etm.join("perf_etm.data"))
        .arg("--symdir")
        .arg(&etm)
        .arg("-o")
        .arg(&out));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&out).unwrap();
    // The first section: the number of ranges, then one range per line.
    let mut lines = text.lines();
    let n: usize = lines.next().unwrap().parse().unwrap();
    lines
        .take(n)
        .map(|l| {
            let (range, count) = l.split_once(':').unwrap();
            let (a, b) = range.split_once('-').unwrap();
            let (a, b) = (u64::from_str_radix(a, 16).unwrap(), u64::from_str_radix(b, 16).unwrap());
            ((b - a) / 4 + 1) * count.parse::<u64>().unwrap()
        })
        .sum()
}

/// report_etm.py and report_fuchsia.py decode simpleperf's ETM recording through the library
/// (SetETMCallback, GetThread, ConvertETMAddressToVaddrInFile): as many instructions as
/// simpleperf's own decoder finds, each range disassembled from the binary cache.
#[test]
fn etm_scripts_decode_the_trace_as_simpleperf_does() {
    let dir = scratch("report_library_newest_etm");
    let cache = dir.join("binary_cache");
    std::fs::create_dir_all(cache.join("data/local/tmp")).unwrap();
    let etm = simpleperf_testdata().join("etm");
    std::fs::copy(etm.join("etm_test_loop"), cache.join("data/local/tmp/etm_test_loop")).unwrap();
    let data = etm.join("perf_etm.data").display().to_string();
    let cache_arg = cache.display().to_string();
    let out = newest("report_etm.py", &["-i", &data, "--binary_cache", &cache_arg], &dir);
    let want = instructions_simpleperf_decodes(&dir);
    assert!(want > 900, "simpleperf inject: {want} instructions");
    assert!(
        out.contains(&format!("Total decoded instructions: {want}\n")),
        "{}",
        &out[out.len().saturating_sub(500)..]
    );
    assert!(out.contains("PID: 17235, TID: 17235, comm: etm_test_loop"), "{}", &out[..1000.min(out.len())]);
    assert!(
        out.contains("CPU7 /data/local/tmp/etm_test_loop: 0x1000 -> 0x1004"),
        "{}",
        &out[..1000.min(out.len())]
    );
    // report_fuchsia.py writes its trace.
    let fxt = dir.join("out.fxt").display().to_string();
    newest("report_fuchsia.py", &["-i", &data, "--binary_cache", &cache_arg, "-o", &fxt], &dir);
    assert!(std::fs::metadata(&fxt).unwrap().len() > 0);
    // A callback that raises: Python reports it, decoding goes on, and the process lives.
    let program = format!(
        r#"
import sys
sys.path.insert(0, {scripts:?})
from simpleperf_report_lib import ReportLib
lib = ReportLib()
lib.SetRecordFile({data:?})
lib.SetSymfs({cache:?})
calls = []
def fail(trace_id, element):
    calls.append(trace_id)
    raise ValueError('a script error')
lib.SetETMCallback(fail)
while lib.GetNextSample():
    pass
lib.Close()
print('alive', len(calls))
"#,
        scripts = scripts_newest().display().to_string(),
        cache = cache_arg,
    );
    let o = run(Command::new("python3").arg("-c").arg(&program));
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let calls: u64 = out.trim().strip_prefix("alive ").unwrap_or_else(|| panic!("{out}")).parse().unwrap();
    assert!(calls > 200, "{calls} elements handed on");
    assert!(stderr(&o).contains("a script error"), "{}", stderr(&o));
    // Trace the file lacks is said, and the script still ends.
    let missing = etm.join("perf_with_missing_aux_data.data").display().to_string();
    let o = run(Command::new("python3")
        .arg(scripts_newest().join("report_etm.py"))
        .args(["-i", &missing, "--binary_cache", &cache_arg])
        .current_dir(&dir));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("AUX records point at trace the file lacks"), "{}", stderr(&o));
}

/// The lookups the newest scripts bind, called through ctypes as a careless script might:
/// errors, never a crash.
#[test]
fn new_lookups_refuse_bad_calls() {
    let program = format!(
        r#"
import ctypes as ct
lib = ct.CDLL({lib:?})
lib.CreateReportLib.restype = ct.c_void_p
class Thread(ct.Structure):
    _fields_ = [('pid', ct.c_int), ('tid', ct.c_int), ('comm', ct.c_char_p)]
class DsoAddress(ct.Structure):
    _fields_ = [('path', ct.c_char_p), ('offset', ct.c_uint64)]
lib.GetThread.restype = Thread
lib.ConvertETMAddressToVaddrInFile.restype = DsoAddress
lib.ConvertETMAddressToVaddrInFile.argtypes = [ct.c_void_p, ct.c_uint8, ct.c_uint64]
lib.RemoveMethod.restype = ct.c_bool
for f in ["GetEventCountersOfCurrentSample", "GetProcessNameOfCurrentSample", "GetAllBuildIds", "ReadSymbolsForPath", "GetNextSample"]:
    getattr(lib, f).restype = ct.c_void_p
null = ct.c_void_p(None)
h = ct.c_void_p(lib.CreateReportLib())
r = []
r.append(lib.RemoveMethod(h, b"("))
r.append(lib.RemoveMethod(null, b"x"))
r.append(lib.RemoveMethod(h, null))
r.append(lib.GetEventCountersOfCurrentSample(h))
r.append(lib.GetProcessNameOfCurrentSample(null))
r.append(lib.GetAllBuildIds(h))
r.append(lib.ReadSymbolsForPath(h, null))
t = lib.GetThread(null, 1)
r.append((t.pid, t.comm))
a = lib.ConvertETMAddressToVaddrInFile(h, 3, 0x1000)
r.append((a.path, a.offset))
lib.SetETMCallback(h, null)
lib.DisableDemangle(null)
print("results", r)
lib.SetRecordFile(h, {data:?}.encode())
lib.DisableDemangle(h)
lib.GetSymbolOfCurrentSample.restype = ct.POINTER(ct.c_char_p)
names = set()
while lib.GetNextSample(h):
    names.add(lib.GetSymbolOfCurrentSample(h)[2])
print("mangled", b"_Z5func2ii" in names, b"func2(int, int)" in names)
lib.RemoveMethod.argtypes = [ct.c_void_p, ct.c_char_p]
print("late", lib.RemoveMethod(h, b"main"))
lib.DestroyReportLib(h)
print("alive")
"#,
        lib = library().display().to_string(),
        data = corpus("perf_with_symbols.data"),
    );
    let o = run(Command::new("python3").arg("-c").arg(&program));
    let out = stdout(&o);
    assert!(o.status.success(), "the Python process died: {out}\n{}", stderr(&o));
    assert!(out.contains("alive"), "{out}");
    assert!(
        out.contains("results [False, False, False, None, None, None, None, (-1, None), (None, 0)]"),
        "{out}"
    );
    assert!(out.contains("mangled True False"), "{out}");
    assert!(out.contains("late False"), "{out}");
    let err = stderr(&o);
    for said in [
        "RemoveMethod: `(` is not a regular expression",
        "GetEventCountersOfCurrentSample: no sample at hand",
        "SetETMCallback: the callback is null",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
}
