//! The report library (`librperf_report.so`, simpleperf's C interface): simpleperf's own Python
//! scripts run on it unchanged, on simpleperf's corpus and on rperf's recordings, and what they
//! read agrees with what simpleperf reports; `rperf report --format report-sample` writes what
//! simpleperf's report-sample reader reads, with simpleperf's samples.
//!
//! The library is built by `cargo build` (scripts/test.sh builds it before the tests); the
//! comparisons are `scripts/compare_report_lib.py` and `scripts/compare_report_sample.py`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::library::{library, path_with_stand_in_adb, script, scripts};
use common::*;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn corpus(file: &str) -> String {
    simpleperf_testdata().join(file).display().to_string()
}

/// (identical samples, simpleperf's samples, the library's samples) of the library against
/// simpleperf's report-sample, for a corpus recording.
fn compare_library(file: &str) -> (u64, u64, u64) {
    let o = run(Command::new("python3")
        .arg(root().join("scripts/compare_report_lib.py"))
        .args(["--json", "--lib"])
        .arg(library())
        .arg("--scripts")
        .arg(scripts())
        .arg("--symfs")
        .arg(simpleperf_testdata())
        .arg("--simpleperf")
        .arg(simpleperf())
        .arg(corpus(file)));
    let v: serde_json::Value =
        serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{file}: {e}: {}", stderr(&o)));
    (v["same"].as_u64().unwrap(), v["expected"].as_u64().unwrap(), v["actual"].as_u64().unwrap())
}

#[test]
fn the_library_gives_simpleperfs_samples_on_the_corpus() {
    // Every sample, frame for frame: binary, function and vaddr_in_file.
    for file in [
        "perf_g_fp.data",
        "perf_with_symbols.data",
        "perf_with_jit_symbol.data",
        "perf_with_two_event_types.data",
        "perf_with_tracepoint_event.data",
        "perf_with_multiple_pids_and_tids.data",
        "perf_with_callchain_record.data",
    ] {
        let (same, expected, actual) = compare_library(file);
        assert!(expected > 0, "{file}: simpleperf reported no samples");
        assert_eq!((same, actual), (expected, expected), "{file}");
    }
    // Java apps: ART's interpreter, JIT caches and in-memory JIT files, merged into methods.
    for file in ["perf_with_interpreter_frames.data", "perf_display_bitmaps.data"] {
        let (same, expected, actual) = compare_library(file);
        assert_eq!(actual, expected, "{file}: sample counts");
        assert!(same * 100 >= expected * 97, "{file}: {same} of {expected} samples identical");
    }
}

#[test]
fn report_sample_protobuf_is_read_by_simpleperf_with_its_samples() {
    let dir = scratch("report_sample_protobuf");
    for file in [
        "perf_g_fp.data",
        "perf_with_symbols.data",
        "perf_with_jit_symbol.data",
        "perf_with_multiple_pids_and_tids.data",
    ] {
        let ours = dir.join(format!("{file}.trace"));
        let o = run(rperf()
            .args(["report", "--symfs"])
            .arg(simpleperf_testdata())
            .args(["-i", &corpus(file), "-o"])
            .arg(&ours));
        assert!(o.status.success(), "{}", stderr(&o));
        let theirs = dir.join(format!("{file}.simpleperf.trace"));
        let o = run(Command::new(simpleperf())
            .args(["report-sample", "--protobuf", "--show-callchain", "--remove-gaps", "0", "--symdir"])
            .arg(simpleperf_testdata())
            .args(["-i", &corpus(file), "-o"])
            .arg(&theirs));
        assert!(o.status.success(), "{}", stderr(&o));
        let o = run(Command::new("python3")
            .arg(root().join("scripts/compare_report_sample.py"))
            .arg("--simpleperf")
            .arg(simpleperf())
            .arg(&theirs)
            .arg(&ours));
        assert!(o.status.success(), "{file}: {}{}", stdout(&o), stderr(&o));
    }
}

/// An rperf recording of the mixed C++ test program, DWARF call graphs.
fn rperf_recording() -> &'static Path {
    static DATA: OnceLock<PathBuf> = OnceLock::new();
    DATA.get_or_init(|| {
        let data = scratch("report_library_dwarf").join("perf.data");
        let o = run(rperf()
            .args(["record", "-g", "dwarf", "-F", "1000", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&programs().mixed)
            .arg("1"));
        assert!(o.status.success(), "{}", stderr(&o));
        data
    })
}

#[test]
fn simpleperfs_scripts_run_unchanged_on_rperfs_recordings() {
    let data = rperf_recording().display().to_string();
    let dir = scratch("report_library_scripts_run");
    // report_sample.py: one header line per sample; as many as rperf report counts.
    let text = script("report_sample.py", &["-i", &data], &dir);
    let heads: Vec<&str> =
        text.lines().filter(|l| !l.starts_with('\t') && !l.is_empty() && !l.starts_with('#')).collect();
    let samples = heads.len();
    // `comm\tpid/tid [cpu] time: period event:`
    let periods: u64 = heads
        .iter()
        .map(|l| l.rsplit(' ').nth(1).and_then(|p| p.parse::<u64>().ok()).expect("a period"))
        .sum();
    let o = run(rperf().args(["report", "--format", "json", "-i", &data]));
    let json_samples = stdout(&o).lines().filter(|l| l.contains("\"time\"")).count();
    assert_eq!(samples, json_samples, "report_sample.py and rperf report --format json count samples alike");
    assert!(
        text.contains("main"),
        "report_sample.py names the program's functions:\n{}",
        &text[..text.len().min(2000)]
    );
    // stackcollapse.py: folded stacks whose counts add up to the samples' periods.
    let folded = script("stackcollapse.py", &["-i", &data], &dir);
    let total: u64 = folded.lines().filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok()).sum();
    assert_eq!(total, periods, "stackcollapse.py counts every sample once");
    // pprof_proto_generator.py: a profile go tool pprof opens, naming the functions.
    let pprof = dir.join("pprof.profile");
    script("pprof_proto_generator.py", &["-i", &data, "-o", pprof.to_str().unwrap()], &dir);
    let o = run(Command::new("go").args(["tool", "pprof", "-top"]).arg(&pprof));
    assert!(o.status.success(), "go tool pprof: {}", stderr(&o));
    assert!(stdout(&o).contains("main"), "{}", stdout(&o));
    // gecko_profile_generator.py: the Firefox Profiler's JSON with the recorded thread.
    let gecko = script("gecko_profile_generator.py", &["-i", &data], &dir);
    let v: serde_json::Value = serde_json::from_str(&gecko).expect("gecko JSON");
    let threads = v["threads"].as_array().expect("threads");
    assert!(threads.iter().any(|t| t["samples"]["data"].as_array().is_some_and(|d| !d.is_empty())));
    // report_html.py (-j 2): the page embeds the samples' data.
    let html = dir.join("report.html");
    script("report_html.py", &["-i", &data, "-o", html.to_str().unwrap(), "--no_browser", "-j", "2"], &dir);
    let page = std::fs::read_to_string(&html).unwrap();
    let start = page.find("<script id=\"record_data\" type=\"application/json\">").expect("record_data");
    let rest = &page[start..];
    let body = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    let v: serde_json::Value = serde_json::from_str(body).expect("report_html's embedded JSON");
    let event_count: u64 =
        v["sampleInfo"].as_array().unwrap().iter().map(|e| e["eventCount"].as_u64().unwrap()).sum();
    assert!(event_count > 0, "report_html.py counted no events");
    assert!(page.contains("main"));
    // inferno: a flamegraph page.
    let flame = dir.join("flame.html");
    let o = run(Command::new("bash")
        .arg(scripts().join("inferno.sh"))
        .args(["-sc", "--record_file", &data, "-o", flame.to_str().unwrap(), "--no_browser"])
        .current_dir(&dir));
    assert!(o.status.success(), "inferno: {}", stderr(&o));
    assert!(std::fs::read_to_string(&flame).unwrap().contains("<svg"));
    // annotate.py: per-file source annotation from the symbols the library gives.
    script("annotate.py", &["-i", &data], &dir);
    assert!(dir.join("annotated_files/summary").is_file());
    // binary_cache_builder.py: the recorded binaries, found by the build ids the library gives
    // in a local folder (-lib); the phone is a stand-in adb that pulls nothing.
    let path = path_with_stand_in_adb(&dir);
    let program = &programs().mixed;
    let o = run(Command::new("python3")
        .arg(scripts().join("binary_cache_builder.py"))
        .args(["-i", &data, "-lib"])
        .arg(program.parent().unwrap())
        .env("PATH", path)
        .current_dir(&dir));
    assert!(o.status.success(), "binary_cache_builder.py: {}", stderr(&o));
    let cached = dir.join("binary_cache").join(build_id_hex(program)).join("mixed");
    assert!(cached.is_file(), "{} missing: {}", cached.display(), stderr(&o));
}

#[test]
fn script_options_reach_the_library() {
    let dir = scratch("report_library_options");
    let lines = |args: &[&str]| -> Vec<String> {
        let text = script("report_sample.py", args, &dir);
        text.lines()
            .filter(|l| !l.starts_with('\t') && !l.is_empty() && !l.starts_with('#'))
            .map(String::from)
            .collect()
    };
    // Sample filters: pid, tid, thread name, exclusions, CPUs.
    let multi = corpus("perf_with_multiple_pids_and_tids.data");
    let all = lines(&["-i", &multi]);
    let tids: std::collections::BTreeSet<String> =
        all.iter().filter_map(|l| l.split_whitespace().nth(1)?.split('/').nth(1).map(String::from)).collect();
    assert!(tids.len() >= 2, "{tids:?}");
    let tid = tids.iter().next().unwrap().clone();
    let only = lines(&["-i", &multi, "--tid", &tid]);
    assert!(!only.is_empty() && only.iter().all(|l| l.contains(&format!("/{tid} "))), "--tid {tid}");
    let without = lines(&["-i", &multi, "--exclude-tid", &tid]);
    assert_eq!(only.len() + without.len(), all.len(), "--exclude-tid leaves the rest");
    let cpu0 = lines(&["-i", &multi, "--cpu", "0"]);
    assert!(cpu0.iter().all(|l| l.contains("[000]")), "--cpu 0");
    // Thread aggregation: every thread of the pool under one.
    let folded = script("stackcollapse.py", &["-i", &multi, "--tid", "--aggregate-threads", ".*"], &dir);
    let threads: std::collections::BTreeSet<&str> =
        folded.lines().filter_map(|l| l.split(';').next()).collect();
    assert_eq!(threads.len(), 1, "--aggregate-threads .* makes one thread: {threads:?}");
    // ART's frames: hidden by default, shown when asked.
    let java = corpus("perf_with_interpreter_frames.data");
    let plain = script("report_sample.py", &["-i", &java], &dir);
    let art = script("report_sample.py", &["-i", &java, "--show-art-frames"], &dir);
    assert!(!plain.contains("art::interpreter::Execute") && art.contains("art::interpreter::Execute"));
    // Off-CPU modes of an off-CPU recording.
    let offcpu = corpus("perf_with_trace_offcpu_v2.data");
    let events = |mode: &str| -> std::collections::BTreeSet<String> {
        lines(&["-i", &offcpu, "--trace-offcpu", mode])
            .iter()
            .filter_map(|l| l.rsplit(' ').next().map(|e| e.trim_end_matches(':').to_string()))
            .collect()
    };
    assert_eq!(events("on-off-cpu").len(), 2, "two events");
    assert_eq!(events("mixed-on-off-cpu").len(), 1, "one event");
    assert!(events("off-cpu").iter().all(|e| e == "sched:sched_switch"));
}

/// A field's value as a number where it is one (simpleperf's dump prints some in hex).
fn field_value(v: &str) -> String {
    let v = v.trim();
    let n = match v.strip_prefix("0x") {
        Some(h) => i128::from_str_radix(h, 16).ok(),
        None => v.parse::<i128>().ok(),
    };
    n.map_or_else(|| v.to_string(), |n| n.to_string())
}

#[test]
fn tracepoint_fields_are_simpleperfs() {
    // simpleperf keeps the tracepoint formats in a record of the data section, not in the
    // feature section perf uses: every sched_switch sample's fields, as simpleperf's dump
    // decodes them.
    let file = corpus("perf_with_tracepoint_event.data");
    let dump = stdout(&run(Command::new(simpleperf()).args(["dump", &file])));
    let mut theirs: Vec<Vec<(String, String)>> = Vec::new();
    let mut lines = dump.lines().peekable();
    while let Some(l) = lines.next() {
        if l.trim() == "tracepoint fields:" {
            let mut fields = Vec::new();
            while let Some(f) = lines.next_if(|f| f.starts_with("    ")) {
                let (name, value) = f.trim().split_once(": ").unwrap_or((f.trim(), ""));
                fields.push((name.to_string(), field_value(value)));
            }
            theirs.push(fields);
        }
    }
    let text = script("report_sample.py", &["-i", &file, "--show_tracing_data"], &scratch("tracing_fields"));
    let mut ours: Vec<Vec<(String, String)>> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(l) = lines.next() {
        if l.trim() == "tracing data:" {
            let mut fields = Vec::new();
            while let Some(f) = lines.next_if(|f| f.starts_with("\t\t")) {
                let (name, value) = f.trim().split_once(" : ").unwrap_or((f.trim(), ""));
                fields.push((name.to_string(), field_value(value)));
            }
            ours.push(fields);
        }
    }
    assert!(theirs.len() >= 3, "simpleperf decoded {} tracepoint samples", theirs.len());
    assert!(theirs[0].iter().any(|(n, v)| n == "next_comm" && !v.is_empty()), "{:?}", theirs[0]);
    theirs.sort();
    ours.sort();
    assert_eq!(ours, theirs);
}

#[test]
fn proguard_mappings_name_obfuscated_methods() {
    let dir = scratch("report_library_proguard");
    let java = corpus("perf_with_interpreter_frames.data");
    let mapping = dir.join("mapping.txt");
    std::fs::write(
        &mapping,
        "com.example.Looper -> android.os.Looper:\n    1:9:void loopOnce(int):40:48 -> loop\n",
    )
    .unwrap();
    let plain = script("report_sample.py", &["-i", &java], &dir);
    assert!(plain.contains("android.os.Looper.loop"));
    let mapped = script(
        "report_sample.py",
        &["-i", &java, "--proguard-mapping-file", mapping.to_str().unwrap()],
        &dir,
    );
    assert!(mapped.contains("com.example.Looper.loopOnce") && !mapped.contains("android.os.Looper.loop "));
    // rperf report takes the same file.
    let o = run(rperf()
        .args(["report", "--children", "--sort", "symbol", "--proguard-mapping-file"])
        .arg(&mapping)
        .args(["--symfs", simpleperf_testdata().to_str().unwrap(), "-i", &java]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("com.example.Looper.loopOnce"));
    // A file that is not a mapping is refused, naming it.
    std::fs::write(&mapping, "not a mapping\n").unwrap();
    let o = run(rperf().args(["report", "--proguard-mapping-file"]).arg(&mapping).args(["-i", &java]));
    assert!(!o.status.success() && stderr(&o).contains("mapping.txt"), "{}", stderr(&o));
}

/// Calls the library through ctypes with arguments a careless script might pass.
#[test]
fn bad_arguments_and_damaged_files_give_errors_not_crashes() {
    let dir = scratch("report_library_bad");
    let damaged = dir.join("damaged.data");
    let mut bytes = std::fs::read(simpleperf_testdata().join("perf_g_fp.data")).unwrap();
    let cut = bytes.len() / 2;
    bytes.truncate(cut);
    for b in bytes.iter_mut().skip(200).step_by(7) {
        *b ^= 0x5a;
    }
    std::fs::write(&damaged, &bytes).unwrap();
    let program = format!(
        r#"
import ctypes as ct
lib = ct.CDLL({lib:?})
lib.CreateReportLib.restype = ct.c_void_p
for f in ["SetRecordFile", "SetSymfs", "SetKallsymsFile", "SetTraceOffCpuMode", "AddProguardMappingFile", "SetSampleFilter", "AggregateThreads", "SetLogSeverity"]:
    getattr(lib, f).restype = ct.c_bool
for f in ["GetNextSample", "GetEventOfCurrentSample", "GetSymbolOfCurrentSample", "GetCallChainOfCurrentSample", "GetTracingDataOfCurrentSample", "GetSupportedTraceOffCpuModes", "GetBuildIdForPath", "GetFeatureSection"]:
    getattr(lib, f).restype = ct.c_void_p
for f in ["SetRecordFile", "SetSymfs", "GetNextSample", "GetCallChainOfCurrentSample", "GetFeatureSection"]:
    getattr(lib, f).argtypes = None
h = ct.c_void_p(lib.CreateReportLib())
null = ct.c_void_p(None)
results = []
results.append(lib.SetRecordFile(null, b"x"))
results.append(lib.SetRecordFile(h, null))
results.append(lib.SetRecordFile(h, b"/nonexistent/perf.data"))
results.append(lib.SetSymfs(h, b"/nonexistent"))
results.append(lib.SetSampleFilter(h, null, 3))
results.append(lib.SetSampleFilter(h, (ct.c_char_p * 1)(b"--include-pid"), 1))
results.append(lib.SetSampleFilter(h, (ct.c_char_p * 2)(b"--include-pid", b"abc"), 2))
results.append(lib.SetSampleFilter(h, (ct.c_char_p * 2)(b"--include-thread-name", b"("), 2))
results.append(lib.SetLogSeverity(h, b"loud"))
results.append(lib.GetCallChainOfCurrentSample(h) is not None)
results.append(lib.GetNextSample(null) is not None)
results.append(lib.SetRecordFile(h, {damaged:?}.encode()))
n = 0
while lib.GetNextSample(h):
    n += 1
print("results", results, "samples", n)
h2 = ct.c_void_p(lib.CreateReportLib())
print("modes", lib.SetTraceOffCpuMode(h2, b"off-cpu"))
lib.DestroyReportLib(h)
lib.DestroyReportLib(h2)
lib.DestroyReportLib(null)
print("alive")
"#,
        lib = library().display().to_string(),
        damaged = damaged.display().to_string(),
    );
    let o = run(Command::new("python3").arg("-c").arg(&program));
    let out = stdout(&o);
    assert!(o.status.success(), "the Python process died: {}\n{}", out, stderr(&o));
    assert!(out.contains("alive"), "{out}");
    let results = out.lines().find(|l| l.starts_with("results")).unwrap();
    // Every bad call fails; the damaged file is either refused or read as far as it goes.
    assert!(
        results.starts_with(
            "results [False, False, False, False, False, False, False, False, False, False, False,"
        ),
        "{results}"
    );
    assert!(out.contains("modes False"), "{out}");
    let err = stderr(&o);
    assert!(err.contains("SetRecordFile") && err.contains("/nonexistent/perf.data"), "{err}");
    assert!(err.contains("--include-pid") && err.contains("abc"), "{err}");
}

/// Samples per thread of a gecko profile: tid -> count.
fn gecko_samples(json: &str) -> std::collections::BTreeMap<String, u64> {
    let d: serde_json::Value = serde_json::from_str(json).unwrap();
    d["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let n =
                t["samples"]["length"].as_u64().or(t["samples"]["data"].as_array().map(|a| a.len() as u64));
            (t["tid"].to_string().trim_matches('"').to_string(), n.unwrap())
        })
        .collect()
}

#[test]
fn remove_gaps_leaves_out_what_gecko_profile_generator_leaves_out() {
    let dir = scratch("report_library_gaps");
    let file = corpus("perf_display_bitmaps.data");
    let symfs = simpleperf_testdata().display().to_string();
    let mut totals = Vec::new();
    for gap in ["0", "3"] {
        let theirs = script(
            "gecko_profile_generator.py",
            &["-i", &file, "--symfs", &symfs, "--remove-gaps", gap],
            &dir,
        );
        let o = run(rperf().args([
            "report",
            "--format",
            "gecko",
            "--remove-gaps",
            gap,
            "--symfs",
            &symfs,
            "-i",
            &file,
        ]));
        assert!(o.status.success(), "{}", stderr(&o));
        let ours = gecko_samples(&stdout(&o));
        assert_eq!(ours, gecko_samples(&theirs), "--remove-gaps {gap}");
        totals.push(ours.values().sum::<u64>());
    }
    assert!(totals[1] < totals[0], "short runs of broken stacks are left out: {totals:?}");
}
