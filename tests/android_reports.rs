//! Reports of Android recordings say what simpleperf says: filters along call chains with
//! --children, Java stacks without ART's machinery, execution types, JIT methods grouped,
//! names with or without C++ parameters, `--sort vaddr_in_file`, simpleperf's CSV columns,
//! brief call graphs, and native libraries stored inside APKs. Expectations are derived from
//! the recordings (through rperf's JSON output of every sample, `nm`, or the test programs),
//! not copied from earlier output.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

fn report(file: &str, args: &[&str]) -> String {
    let dir = simpleperf_testdata();
    let o = run(rperf().arg("report").arg("-i").arg(dir.join(file)).arg("--symfs").arg(&dir).args(args));
    assert!(o.status.success(), "rperf report {file} {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// Every sample of a recording, from `--format json`.
fn samples(file: &str, args: &[&str]) -> Vec<Value> {
    let mut a = vec!["--format", "json"];
    a.extend_from_slice(args);
    report(file, &a).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn frames(sample: &Value) -> &Vec<Value> {
    sample["stack"].as_array().unwrap()
}

fn period(sample: &Value) -> u64 {
    sample["period"].as_u64().unwrap()
}

const LIBART: &str = "/apex/com.android.runtime/lib64/libart.so";

#[test]
fn children_filters_select_call_chain_entries() {
    let file = "perf_display_bitmaps.data";
    // What the filter should count, from every sample's stack (ART's frames shown, since the
    // filter names ART's library).
    let all = samples(file, &["--show-art-frames"]);
    let in_libart = |f: &Value| f["dso"] == LIBART;
    let children: u64 = all.iter().filter(|s| frames(s).iter().any(in_libart)).map(period).sum();
    let self_: u64 = all.iter().filter(|s| in_libart(&frames(s)[0])).map(period).sum();
    assert!(children > self_, "libart.so must call out of itself in this recording");

    let text = report(
        file,
        &["--show-art-frames", "--dsos", LIBART, "--children", "--raw-period", "--sort", "dso", "--csv"],
    );
    let rows = csv_rows(&text, ',');
    assert_eq!(rows.len(), 1, "only the selected binary is an entry:\n{text}");
    assert_eq!(rows[0]["Shared Object"], LIBART);
    assert_eq!(rows[0]["Children"].parse::<u64>().unwrap(), children, "{text}");
    assert_eq!(rows[0]["Self"].parse::<u64>().unwrap(), self_, "{text}");

    // Without --children the filter still selects samples by their sampled frame.
    let text =
        report(file, &["--show-art-frames", "--dsos", LIBART, "--raw-period", "--sort", "dso", "--csv"]);
    let rows = csv_rows(&text, ',');
    assert_eq!(rows.len(), 1, "{text}");
    assert_eq!(rows[0]["Overhead"].parse::<u64>().unwrap(), self_, "{text}");

    // A symbol filter selects call-chain entries the same way: a caller of the sampled code
    // gets every sample it is on.
    let caller = "art::Thread::CreateCallback(void*)";
    let expected: u64 =
        all.iter().filter(|s| frames(s).iter().any(|f| f["symbol"] == caller)).map(period).sum();
    assert!(expected > 0);
    let text = report(
        file,
        &[
            "--show-art-frames",
            "--symbols",
            caller,
            "--children",
            "--raw-period",
            "--sort",
            "symbol",
            "--csv",
        ],
    );
    let rows = csv_rows(&text, ',');
    assert_eq!(rows.len(), 1, "{text}");
    assert_eq!(rows[0]["Children"].parse::<u64>().unwrap(), expected, "{text}");
}

/// The frames of a stack as reports show them when ART's are hidden: without ART's frames,
/// and a compiled method that replaced its own interpreted frame shown once.
fn without_art(stack: &[Value]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = stack
        .iter()
        .filter(|f| f["execution_type"] != "art_method")
        .map(|f| {
            (f["symbol"].as_str().unwrap().to_string(), f["execution_type"].as_str().unwrap().to_string())
        })
        .collect();
    let mut i = 0;
    while i + 1 < out.len() {
        if out[i].1 == "jit_jvm_method"
            && out[i + 1].1 == "interpreted_jvm_method"
            && out[i].0 == out[i + 1].0
        {
            out.remove(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn art_frames_are_hidden_unless_asked_for() {
    for file in
        ["perf_with_jit_symbol.data", "perf_display_bitmaps.data", "perf_with_interpreter_frames.data"]
    {
        let shown = samples(file, &["--show-art-frames"]);
        let hidden = samples(file, &[]);
        assert_eq!(shown.len(), hidden.len(), "{file}");
        let mut art = 0;
        for (s, h) in shown.iter().zip(&hidden) {
            art += frames(s).iter().filter(|f| f["execution_type"] == "art_method").count();
            let h: Vec<(String, String)> = frames(h)
                .iter()
                .map(|f| (f["symbol"].as_str().unwrap().into(), f["execution_type"].as_str().unwrap().into()))
                .collect();
            assert_eq!(h, without_art(frames(s)), "{file}: a stack with ART's frames hidden");
        }
        assert!(art > 0, "{file} has ART frames next to Java methods");
    }
    // The Java stack of the JIT recording reads as methods, in every output.
    let folded = report("perf_with_jit_symbol.data", &["--format", "folded"]);
    let line = folded.lines().max_by_key(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).unwrap();
    assert!(
        line.starts_with(
            "BusyThread;__start_thread;__pthread_start(void*);java.lang.Thread.run;com.android.simpleperf.debuggable.MainActivity$1.run "
        ),
        "{line}"
    );
    for plumbing in [
        "art_quick_invoke_stub",
        "artQuickToInterpreterBridge",
        "mterp_op_invoke_interface",
        "art_jni_trampoline",
    ] {
        assert!(!folded.contains(plumbing), "{plumbing} in folded stacks");
        // The text report shows them, as `simpleperf report` does, unless told not to.
        let text = report("perf_with_jit_symbol.data", &["--sort", "symbol", "--children"]);
        assert!(text.contains(plumbing), "{plumbing} missing in the text report");
        let text =
            report("perf_with_jit_symbol.data", &["--sort", "symbol", "--children", "--hide-art-frames"]);
        assert!(!text.contains(plumbing), "{plumbing} in the text report with --hide-art-frames");
        let shown = report("perf_with_jit_symbol.data", &["--format", "folded", "--show-art-frames"]);
        assert!(shown.contains(plumbing), "{plumbing} missing with --show-art-frames");
    }
    // A JNI call keeps the native method ART's trampoline entered.
    assert!(folded.contains("java.lang.Thread.sleep;art::Monitor::Wait"), "{folded}");
}

#[test]
fn execution_types_in_json_and_pprof() {
    let file = "perf_with_jit_symbol.data";
    let all = samples(file, &[]);
    // The type follows the code: dex files are interpreted, ART's JIT cache compiled Java.
    for s in &all {
        for f in frames(s) {
            let dso = f["dso"].as_str().unwrap();
            let want = if dso.ends_with(".jar") || dso.ends_with(".vdex") || dso.ends_with(".dex") {
                "interpreted_jvm_method"
            } else if dso == "[JIT app cache]" {
                "jit_jvm_method"
            } else {
                "native_method"
            };
            assert_eq!(f["execution_type"], want, "{f}");
        }
    }
    // pprof carries each sample's types, innermost first, in a label.
    let mut want: HashMap<String, u64> = HashMap::new();
    for s in &all {
        let types: Vec<&str> = frames(s).iter().map(|f| f["execution_type"].as_str().unwrap()).collect();
        *want.entry(types.join(",")).or_default() += period(s);
    }
    let dir = scratch("android_pprof");
    let pb = dir.join("jit.pb.gz");
    let data = simpleperf_testdata();
    let o = run(rperf()
        .arg("report")
        .arg("-i")
        .arg(data.join(file))
        .arg("--symfs")
        .arg(&data)
        .arg("-o")
        .arg(&pb));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(Command::new("go").args(["tool", "pprof", "-tags"]).arg(&pb));
    assert!(o.status.success(), "go tool pprof: {}", stderr(&o));
    let text = stdout(&o);
    let mut got: HashMap<String, u64> = HashMap::new();
    let mut in_types = false;
    for l in text.lines() {
        if l.trim_start().starts_with("execution_types:") {
            in_types = true;
        } else if l.trim().is_empty() {
            in_types = false;
        } else if in_types {
            let (weight, types) = l.split_once("): ").unwrap();
            let weight: f64 = weight.trim().split(' ').next().unwrap().parse().unwrap();
            got.insert(types.trim().to_string(), weight as u64);
        }
    }
    assert_eq!(got, want, "{text}");
}

#[test]
fn jit_methods_are_one_function_each() {
    let file = "perf_with_jit_symbol.data";
    let method = "com.android.simpleperf.debuggable.MainActivity$1.run";
    let all = samples(file, &[]);
    let total: u64 = all.iter().map(period).sum();
    let leaf: u64 = all
        .iter()
        .filter(|s| frames(s)[0]["symbol"] == method && frames(s)[0]["execution_type"] == "jit_jvm_method")
        .map(period)
        .sum();
    let rows = csv_rows(&report(file, &["--sort", "dso,symbol", "--csv"]), ',');
    let jit: Vec<_> = rows.iter().filter(|r| r["Symbol"] == method).collect();
    assert_eq!(jit.len(), 1, "one entry for the method, whichever JIT symbol file holds it: {rows:?}");
    assert_eq!(jit[0]["Shared Object"], "[JIT app cache]");
    assert!((pct(&jit[0]["Overhead"]) - 100.0 * leaf as f64 / total as f64).abs() < 0.01, "{jit:?}");
    // simpleperf's own test: --sort dso shows the JIT cache.
    assert!(report(file, &["--sort", "dso"]).contains("[JIT app cache]"));
}

/// `rperf report ARGS --csv -n` of `data` as (name, samples) per row.
fn sample_counts(data: &Path, args: &[&str]) -> Vec<(String, u64)> {
    let o = run(rperf().args(["report", "--csv", "-n", "-i"]).arg(data).args(args));
    assert!(o.status.success(), "{}", stderr(&o));
    csv_rows(&stdout(&o), ',').iter().map(|r| (r["Symbol"].clone(), r["Sample"].parse().unwrap())).collect()
}

#[test]
fn names_with_or_without_parameters() {
    let data = record_fp("android_overload", &programs().overload, &["1"]);
    let short = sample_counts(&data, &["--sort", "symbol", "--short-names"]);
    // Named as perf names them, the overloads are two entries of one name.
    let spin: u64 = short.iter().filter(|(n, _)| n == "work::spin").map(|r| r.1).sum();
    assert_eq!(short.iter().filter(|(n, _)| n == "work::spin").count(), 2, "{short:?}");
    let full = sample_counts(&data, &["--sort", "symbol"]);
    let count = |rows: &[(String, u64)], name: &str| rows.iter().find(|(n, _)| n == name).map_or(0, |r| r.1);
    let (long, double) = (count(&full, "work::spin(long)"), count(&full, "work::spin(double)"));
    assert_eq!(long + double, spin, "{full:?}");
    assert!(long > 0 && double > 0, "{full:?}");
    assert!(!full.iter().any(|(n, _)| n == "work::spin"), "{full:?}");
    // --symbols matches either form, whichever form is shown.
    for (filter, want) in [("work::spin(long)", long), ("work::spin(double)", double), ("work::spin", spin)] {
        for names in [&[][..], &["--short-names"][..]] {
            let mut args = vec!["--sort", "comm", "--symbols", filter];
            args.extend_from_slice(names);
            let o = run(rperf().args(["report", "-n", "-i"]).arg(&data).args(&args));
            let text = stdout(&o);
            let samples: u64 =
                text.lines().find_map(|l| l.strip_prefix("Samples: ")).unwrap().parse().unwrap();
            assert_eq!(samples, want, "--symbols {filter} {names:?}:\n{text}");
        }
    }
}

#[test]
fn vaddr_in_file_is_the_address_in_the_binary() {
    let dir = simpleperf_testdata();
    let rows = csv_rows(&report("perf.data", &["--sort", "vaddr_in_file,symbol", "--csv"]), ',');
    // Function ranges from the binary's own symbol table.
    let o = run(Command::new("nm").args(["-S", "--defined-only"]).arg(dir.join("elf")));
    let ranges: HashMap<String, (u64, u64)> = stdout(&o)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (a, s) =
                (u64::from_str_radix(f.first()?, 16).ok()?, u64::from_str_radix(f.get(1)?, 16).ok()?);
            Some((f.get(3)?.to_string(), (a, a + s)))
        })
        .collect();
    let mut named = 0;
    for r in &rows {
        let vaddr = u64::from_str_radix(r["VaddrInFile"].trim_start_matches("0x"), 16).unwrap();
        let sym = &r["Symbol"];
        if let Some(&(start, end)) = ranges.get(sym.as_str()) {
            assert!(start <= vaddr && vaddr < end, "{sym} at {vaddr:#x} outside {start:#x}..{end:#x}");
            named += 1;
        } else if let Some(offset) = sym.split("[+").nth(1) {
            // Without the binary, its place is the address.
            assert_eq!(offset.trim_end_matches(']'), format!("{vaddr:x}"), "{r:?}");
        }
    }
    assert!(named >= 5, "{rows:?}");
    // Addresses split a function's share; they sum to it.
    let by_symbol = csv_rows(&report("perf.data", &["--sort", "symbol", "--csv"]), ',');
    let global = by_symbol.iter().find(|r| r["Symbol"] == "GlobalFunc").map(|r| pct(&r["Overhead"])).unwrap();
    let split: f64 = rows.iter().filter(|r| r["Symbol"] == "GlobalFunc").map(|r| pct(&r["Overhead"])).sum();
    assert!((global - split).abs() < 0.1, "{global} against {split}");
}

#[test]
fn csv_has_simpleperfs_columns_and_separator() {
    let text = report("perf.data", &["--csv", "--csv-separator", ";"]);
    let header = text.lines().find(|l| l.starts_with("Overhead")).unwrap();
    assert_eq!(header, "Overhead;Command;Pid;Tid;Shared Object;Symbol;EventCount;EventName");
    let total: u64 = text.lines().find_map(|l| l.strip_prefix("Event count: ")).unwrap().parse().unwrap();
    let rows = csv_rows(&text, ';');
    assert_eq!(rows.iter().map(|r| r["EventCount"].parse::<u64>().unwrap()).sum::<u64>(), total);
    assert!(rows.iter().all(|r| r["EventName"] == "cpu-cycles"), "{rows:?}");

    let text = report("perf.data", &["--csv", "--children", "-n"]);
    let header = text.lines().find(|l| l.starts_with("Children")).unwrap();
    assert_eq!(
        header,
        "Children,Self,Sample,Command,Pid,Tid,Shared Object,Symbol,AccEventCount,SelfEventCount,EventName"
    );
    let text = report("perf.data", &["--csv", "--print-event-count"]);
    let header = text.lines().find(|l| l.starts_with("Overhead")).unwrap();
    assert_eq!(header, "Overhead,EventCount,Command,Pid,Tid,Shared Object,Symbol");
    // Cells holding the separator are quoted.
    let text = report("perf_display_bitmaps.data", &["--csv", "--csv-separator", ":", "--sort", "symbol"]);
    let rows = csv_rows(&text, ':');
    assert!(rows.iter().any(|r| r["Symbol"].contains("::")), "{text}");
}

#[test]
fn brief_call_graphs_say_what_they_skip() {
    let brief = report("perf_g_fp.data", &["-g"]);
    assert!(brief.contains("[skipped in brief callgraph mode]"), "{brief}");
    let full = report("perf_g_fp.data", &["-g", "--full-callgraph"]);
    assert!(!full.contains("skipped in brief callgraph mode"), "{full}");
    // What is skipped is shown under its only caller: every function of the full report is in
    // the brief one's graphs.
    let graph_names = |t: &str| -> std::collections::BTreeSet<String> {
        t.lines()
            .filter(|l| l.starts_with("       "))
            .map(|l| l.rsplit("-- ").next().unwrap().trim().to_string())
            .filter(|n| !n.is_empty() && n != "|" && !n.starts_with('['))
            .collect()
    };
    assert_eq!(graph_names(&brief), graph_names(&full));
}

/// An APK holding `lib/x86_64/libhot.so` stored uncompressed at a page boundary (as zipalign
/// lays out Android's APKs), after another entry; returns the APK, the library's offset and
/// size, and the address of `hot_in_apk` in the library.
fn build_apk(dir: &Path) -> (PathBuf, u64, u64, u64) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/apklib.c");
    let lib = dir.join("libhot.so");
    let st = Command::new("gcc")
        .args(["-O2", "-g", "-fPIC", "-shared", "-fno-omit-frame-pointer", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let o = run(Command::new("nm").arg(&lib));
    let vaddr = stdout(&o)
        .lines()
        .find(|l| l.ends_with(" hot_in_apk"))
        .map(|l| u64::from_str_radix(l.split(' ').next().unwrap(), 16).unwrap())
        .expect("hot_in_apk in nm");
    let apk = dir.join("app/base.apk");
    std::fs::create_dir_all(apk.parent().unwrap()).unwrap();
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&apk).unwrap());
    let stored = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    use std::io::Write;
    zip.start_file("classes.dex", stored).unwrap();
    zip.write_all(&[7u8; 3000]).unwrap();
    zip.start_file("lib/x86_64/libhot.so", stored.with_alignment(4096)).unwrap();
    let bytes = std::fs::read(&lib).unwrap();
    zip.write_all(&bytes).unwrap();
    zip.finish().unwrap();
    let image = std::fs::read(&apk).unwrap();
    let offset = image.windows(bytes.len()).position(|w| w == bytes).expect("the library in the APK") as u64;
    assert_eq!(offset % 4096, 0);
    (apk, offset, bytes.len() as u64, vaddr)
}

/// (share of `hot_in_apk`, share of the library's samples, the library's name) in a report.
fn apk_shares(data: &Path, symfs: Option<&Path>) -> (f64, f64, String) {
    let mut cmd = rperf();
    cmd.args(["report", "--sort", "dso,symbol", "--csv", "-i"]).arg(data);
    if let Some(s) = symfs {
        cmd.arg("--symfs").arg(s);
    }
    let o = run(&mut cmd);
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = csv_rows(&stdout(&o), ',');
    let in_lib = |r: &&HashMap<String, String>| r["Shared Object"].contains("base.apk");
    let hot = rows.iter().filter(|r| r["Symbol"] == "hot_in_apk").map(|r| pct(&r["Overhead"])).sum();
    let lib = rows.iter().filter(in_lib).map(|r| pct(&r["Overhead"])).sum();
    let name = rows.iter().find(in_lib).map(|r| r["Shared Object"].clone()).unwrap_or_default();
    (hot, lib, name)
}

/// `data` rewritten the way simpleperf records a library mapped from an APK: the mapping
/// named `APK!/ENTRY`, its offset counted from the library.
fn as_simpleperf_records_it(data: &Path, apk: &Path, entry: &str, entry_offset: u64) -> PathBuf {
    let b = std::fs::read(data).unwrap();
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
    let (data_off, data_size) = (u64_at(40) as usize, u64_at(48) as usize);
    assert!(u64_at(24) as usize <= data_off, "attributes come before the data");
    let apk_name = apk.to_str().unwrap().as_bytes();
    let mut out = b[..data_off].to_vec();
    let mut at = data_off;
    while at < data_off + data_size {
        let kind = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let size = u16::from_le_bytes(b[at + 6..at + 8].try_into().unwrap()) as usize;
        let rec = &b[at..at + size];
        // PERF_RECORD_MMAP2: 72 bytes of fields, then the file name padded to 8 bytes, then
        // the sample id fields.
        let name_end = rec.get(72..).and_then(|r| r.iter().position(|&c| c == 0)).map(|n| 72 + n);
        if kind == 10 && name_end.is_some_and(|e| &rec[72..e] == apk_name) {
            let end = name_end.unwrap();
            let trailer = &rec[72 + (end - 72 + 1).div_ceil(8) * 8..];
            let mut name = format!("{}!/{entry}", apk.display()).into_bytes();
            name.push(0);
            name.resize(name.len().div_ceil(8) * 8, 0);
            let mut new = rec[..72].to_vec();
            let pgoff = u64::from_le_bytes(new[32..40].try_into().unwrap());
            new[32..40].copy_from_slice(&(pgoff - entry_offset).to_le_bytes());
            new.extend_from_slice(&name);
            new.extend_from_slice(trailer);
            let len = new.len() as u16;
            new[6..8].copy_from_slice(&len.to_le_bytes());
            out.extend_from_slice(&new);
        } else {
            out.extend_from_slice(rec);
        }
        at += size;
    }
    let delta = out.len() - (data_off + data_size);
    // Feature sections follow the data: their table moves by what the data grew.
    let features = b[data_off + data_size..].to_vec();
    let count: u32 = b[72..104].iter().map(|x| x.count_ones()).sum();
    let mut table = features.clone();
    for i in 0..count as usize {
        let o = u64::from_le_bytes(features[16 * i..16 * i + 8].try_into().unwrap());
        table[16 * i..16 * i + 8].copy_from_slice(&(o + delta as u64).to_le_bytes());
    }
    out[48..56].copy_from_slice(&((data_size + delta) as u64).to_le_bytes());
    out.extend_from_slice(&table);
    let path = data.with_file_name("simpleperf-form.data");
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn native_libraries_inside_an_apk() {
    let dir = scratch("android_apk");
    let (apk, offset, size, vaddr) = build_apk(&dir);
    let runner = dir.join("apkrun");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/apkrun.c");
    assert!(Command::new("gcc").args(["-O2", "-o"]).arg(&runner).arg(&src).status().unwrap().success());
    let data = dir.join("perf.data");
    let o = run(rperf()
        .args(["record", "-e", "cpu-clock", "-F", "2000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&runner)
        .arg(&apk)
        .args([offset.to_string(), size.to_string(), vaddr.to_string(), "1".into()]));
    assert!(o.status.success(), "{}", stderr(&o));

    // The APK where it was recorded: the mapping is the library in it, named.
    let (hot, lib, name) = apk_shares(&data, None);
    assert!(name.ends_with("base.apk!/lib/x86_64/libhot.so"), "{name}");
    assert!(lib > 80.0, "{lib}% in the library");
    assert!((hot - lib).abs() < 0.01, "all of the library's samples are named: {hot}% of {lib}%");

    // The APK under --symfs only (as the binary cache holds it).
    let symfs = dir.join("symfs");
    let moved = symfs.join(apk.strip_prefix("/").unwrap());
    std::fs::create_dir_all(moved.parent().unwrap()).unwrap();
    std::fs::rename(&apk, &moved).unwrap();
    let (unnamed, lib_without, _) = apk_shares(&data, None);
    assert_eq!(unnamed, 0.0, "without the APK nothing is named");
    let (hot2, lib2, _) = apk_shares(&data, Some(&symfs));
    assert!((hot2 - lib2).abs() < 0.01 && lib2 > 80.0, "{hot2}% of {lib2}% (before: {lib_without}%)");

    // simpleperf's form of the same mapping.
    std::fs::rename(&moved, &apk).unwrap();
    let sp = as_simpleperf_records_it(&data, &apk, "lib/x86_64/libhot.so", offset);
    let dump = stdout(&run(rperf().args(["dump", "-i"]).arg(&sp)));
    assert!(
        dump.contains("base.apk!/lib/x86_64/libhot.so"),
        "the rewritten recording has the simpleperf name"
    );
    std::fs::rename(&apk, &moved).unwrap();
    let (hot3, lib3, name3) = apk_shares(&sp, Some(&symfs));
    assert!(name3.ends_with("base.apk!/lib/x86_64/libhot.so"), "{name3}");
    assert!((hot3 - lib).abs() < 0.01, "{hot3}% against {lib}%");
    assert!((lib3 - lib).abs() < 0.01);
}

/// Folded stacks as simpleperf's golden files were made: without the sampled frame (their
/// script left it out), kernel frames without symbols as `unknown`, and no `_[j]`/`_[k]` tags.
fn as_in_goldens(text: &str, drop_leaf: bool) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    for line in text.lines() {
        let (stack, count) = line.rsplit_once(' ').unwrap();
        let mut frames: Vec<String> = stack
            .split(';')
            .map(|f| {
                let f = f.trim_end_matches("_[j]").trim_end_matches("_[k]");
                if f.starts_with("[kernel.kallsyms][+") {
                    "unknown".to_string()
                } else {
                    f.to_string()
                }
            })
            .collect();
        if drop_leaf && frames.len() > 1 {
            frames.pop();
        }
        *out.entry(frames.join(";")).or_default() += count.parse::<u64>().unwrap();
    }
    out
}

#[test]
fn folded_stacks_agree_with_simpleperfs_goldens() {
    let dir = simpleperf_testdata();
    for (file, golden, args) in [
        ("perf_with_jit_symbol.data", "perf_with_jit_symbol.foldedstack", &[][..]),
        ("perf_with_jit_symbol.data", "perf_with_jit_symbol.foldedstack_with_pid", &["--prefix", "pid"][..]),
        ("perf_with_jit_symbol.data", "perf_with_jit_symbol.foldedstack_with_tid", &["--prefix", "tid"][..]),
        // Two events: each sample counts in its own event (the ids are in the attribute
        // section only), the first event by default.
        ("perf_with_two_event_types.data", "perf_with_two_event_types.foldedstack", &[][..]),
        (
            "perf_with_two_event_types.data",
            "perf_with_two_event_types.foldedstack_cpu_clock",
            &["-e", "cpu-clock"][..],
        ),
    ] {
        let mut a = vec!["--format", "folded", "--full-names", "--event-counts"];
        a.extend_from_slice(args);
        let ours = as_in_goldens(&report(file, &a), true);
        let want = as_in_goldens(&std::fs::read_to_string(dir.join(golden)).unwrap(), false);
        assert_eq!(ours, want, "{golden}");
    }
}
