//! JIT code named through the GDB JIT interface, read while recording: LLVM's `lli` running a
//! hot loop written in LLVM IR, and a test runtime (tests/programs/jitrt.c) that registers and
//! unregisters functions in the same memory, with GDB's descriptor and with ART's.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use common::*;

/// tests/programs/jitrt.c, built once, exporting its descriptor as runtimes do.
fn jitrt() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let dir = scratch("jitrt_build");
        let out = dir.join("jitrt");
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/jitrt.c");
        let st = Command::new("gcc").args(["-O2", "-rdynamic", "-o"]).arg(&out).arg(&src).status().unwrap();
        assert!(st.success(), "building jitrt.c");
        out
    })
}

/// Records `cmd` and returns the recording and the command's output.
fn record(name: &str, args: &[&str], cmd: &[&str]) -> (PathBuf, String, String) {
    let data = scratch(name).join("perf.data");
    let o = run(rperf().arg("record").args(args).arg("-o").arg(&data).arg("--").args(cmd));
    assert!(o.status.success(), "{}", stderr(&o));
    (data, stdout(&o), stderr(&o))
}

fn report(data: &Path, args: &[&str]) -> String {
    let o = run(rperf().arg("report").arg("-i").arg(data).args(args));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

/// The share of the samples (in %) whose leaf function is `name`, from folded stacks.
/// The share of `name`'s leaves among the user-mode stacks of `--annotate`d folded stacks (the
/// kernel's time in interrupts varies from machine to machine).
fn folded_leaf_share(folded: &str, name: &str) -> f64 {
    let (mut hit, mut all) = (0u64, 0u64);
    for l in folded.lines() {
        let Some((stack, n)) = l.rsplit_once(' ') else { continue };
        let n: u64 = n.parse().unwrap();
        if stack.ends_with("_[k]") {
            continue;
        }
        all += n;
        if stack.rsplit(';').next().is_some_and(|leaf| leaf.trim_end_matches("_[j]") == name) {
            hit += n;
        }
    }
    100.0 * hit as f64 / all.max(1) as f64
}

/// The Overhead of `name`'s row in a text report.
fn text_share(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.split_whitespace().last() == Some(name))
        .map(|l| pct(l.split_whitespace().next().unwrap()))
        .sum()
}

/// The Overhead of the rows of a text report (`--sort comm,pid,tid,dso,symbol`) in `dso`.
fn dso_share(text: &str, dso: &str) -> f64 {
    text.lines()
        .filter(|l| l.split_whitespace().nth(4) == Some(dso))
        .map(|l| pct(l.split_whitespace().next().unwrap()))
        .sum()
}

/// `(time in ns, leaf function)` of every sample, from `--format script`.
fn sample_leaves(data: &Path) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut time = None;
    for l in report(data, &["--format", "script"]).lines() {
        if l.is_empty() {
            continue;
        }
        if !l.starts_with('\t') {
            // `comm pid/tid [cpu] SECONDS.MICROS: period event:`
            time = l.split_whitespace().find_map(|t| {
                let (s, us) = t.strip_suffix(':')?.split_once('.')?;
                Some(s.parse::<u64>().ok()? * 1_000_000_000 + us.parse::<u64>().ok()? * 1000)
            });
            continue;
        }
        if let Some(t) = time.take() {
            out.push((t, l.split_whitespace().nth(1).unwrap_or("").to_string()));
        }
    }
    out
}

/// The runtime's `phase NAME START END` lines.
fn phases(out: &str) -> BTreeMap<String, (u64, u64)> {
    out.lines()
        .filter_map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            (t.len() == 4 && t[0] == "phase")
                .then(|| (t[1].to_string(), (t[2].parse().unwrap(), t[3].parse().unwrap())))
        })
        .collect()
}

/// `key=value` lines of the recording info in `rperf dump`.
fn recording_info(data: &Path) -> BTreeMap<String, u64> {
    let o = run(rperf().args(["dump", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter_map(|l| l.trim().split_once('='))
        .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
        .collect()
}

/// The `rperf dump` lines of the stored JIT symbol files.
fn dumped_symfiles(data: &Path) -> Vec<String> {
    let o = run(rperf().args(["dump", "-i"]).arg(data));
    let text = stdout(&o);
    text.lines()
        .skip_while(|l| !l.starts_with("JIT symbol files"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::to_string)
        .collect()
}

#[test]
fn lli_hot_loop_is_named_and_unwound() {
    let ll = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/hot_loop.ll");
    let (data, _, _) = record("jit_lli", &["-g", "dwarf"], &["lli", ll.to_str().unwrap()]);
    // lli has exited: the names come from the symbol file kept in the recording.
    let text = report(&data, &[]);
    // Of the user-mode samples: the kernel's time in interrupts varies from machine to machine.
    let share = text_share(&text, "hot_loop") / (100.0 - dso_share(&text, "[kernel.kallsyms]")) * 100.0;
    assert!(share >= 90.0, "hot_loop has {share}% of user-mode samples:\n{text}");
    let folded = report(&data, &["--format", "folded", "--annotate"]);
    let share = folded_leaf_share(&folded, "hot_loop");
    assert!(share >= 90.0, "hot_loop leaves {share}% of folded stacks:\n{folded}");
    // Unwound through the JIT code with its CFI: lli's own frames lie under the JIT's main,
    // and JIT frames are marked.
    let through = folded
        .lines()
        .filter(|l| l.contains(";main_[j];hot_loop_[j] "))
        .filter(|l| l.split(';').position(|f| f == "main_[j]").is_some_and(|i| i >= 3))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum::<u64>();
    let all: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert!(
        through * 10 >= all * 8,
        "{through} of {all} stacks run through lli into the JIT code:\n{folded}"
    );
    let files = dumped_symfiles(&data);
    assert!(files.iter().any(|f| f.contains("hot_loop")), "{files:?}");
    every_output_marks_jit(&data, "hot_loop");
    // perf skips the section it does not know.
    let o = run(Command::new("perf").args(["report", "--stdio", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn relocatable_object_with_dwarf_has_lines_inline_frames_and_unwinds() {
    // Registered as LLVM registers what it compiled: a relocatable object whose sections' addresses
    // are set to where they were loaded, with DWARF and .eh_frame still to be relocated.
    let dir = scratch("jit_object");
    let obj = dir.join("jitcode.o");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/programs/jitcode.c");
    assert!(Command::new("gcc")
        .args(["-O1", "-g", "-c", "-o"])
        .arg(&obj)
        .arg(&src)
        .status()
        .unwrap()
        .success());
    let mix_line =
        std::fs::read_to_string(&src).unwrap().lines().position(|l| l.contains("MIX_LINE")).unwrap() + 1;
    let (data, _, _) = record(
        "jit_object_rec",
        &["-g", "dwarf"],
        &[jitrt().to_str().unwrap(), "object", obj.to_str().unwrap(), "1"],
    );
    let text = report(&data, &["--inline", "--sort", "symbol,srcline"]);
    let mix = text
        .lines()
        .filter(|l| l.contains("mix (inlined)") && l.ends_with(&format!("jitcode.c:{mix_line}")))
        .map(|l| pct(l.split_whitespace().next().unwrap()))
        .sum::<f64>();
    let hot = text_share(&report(&data, &["--sort", "symbol", "--no-inline"]), "jit_hot");
    assert!(mix >= 30.0 && hot >= 90.0, "mix {mix}%, jit_hot {hot}%:\n{text}");
    // Unwound with the object's .eh_frame back into the runtime that called it.
    let folded = report(&data, &["--format", "folded"]);
    let through: u64 = folded
        .lines()
        .filter(|l| l.contains(";main;call_jit;jit_hot"))
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    let all: u64 = folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert!(through * 10 >= all * 9, "{through} of {all} stacks run main;call_jit;jit_hot:\n{folded}");
}

/// `name` is JIT code in every output: text's DSO, json's `jit`, html's kind, gecko's category,
/// pprof's mapping (its symbol file), script's DSO.
fn every_output_marks_jit(data: &Path, name: &str) {
    let dir = scratch(&format!("jit_outputs_{name}"));
    assert!(report(data, &["--sort", "dso,symbol"]).lines().any(|l| l.ends_with(&format!("[JIT]  {name}"))
        || (l.contains("[JIT]") && l.split_whitespace().last() == Some(name))));
    let json: Vec<serde_json::Value> =
        report(data, &["--format", "json"]).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let frames: Vec<&serde_json::Value> =
        json.iter().flat_map(|r| r["stack"].as_array().unwrap()).filter(|f| f["symbol"] == name).collect();
    assert!(
        !frames.is_empty() && frames.iter().all(|f| f["jit"] == true && f["dso"] == "[JIT]"),
        "{frames:?}"
    );
    let page = dir.join("report.html");
    report(data, &["-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(&format!("[\"{name}\",\"[JIT]\",\"j\"]")), "html marks {name} as JIT code");
    let gecko: serde_json::Value = serde_json::from_str(&report(data, &["--format", "gecko"])).unwrap();
    let categories: Vec<&str> =
        gecko["meta"]["categories"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
    let jit = categories.iter().position(|c| *c == "JIT").expect("a JIT category") as u64;
    let marked = gecko["threads"].as_array().unwrap().iter().any(|t| {
        let strings = t["stringArray"].as_array().unwrap();
        let funcs = &t["funcTable"];
        (0..t["frameTable"]["length"].as_u64().unwrap() as usize).any(|i| {
            let func = t["frameTable"]["func"][i].as_u64().unwrap() as usize;
            let fname = &strings[funcs["name"][func].as_u64().unwrap() as usize];
            fname == name && t["frameTable"]["category"][i].as_u64() == Some(jit)
        })
    });
    assert!(marked, "gecko puts {name} in the JIT category");
    let pb = dir.join("cpu.pb.gz");
    report(data, &["-o", pb.to_str().unwrap()]);
    let o = run(Command::new("go").args(["tool", "pprof", "-raw"]).arg(&pb));
    let raw = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    // Each symbol file is a mapping of its own: `N: START/LIMIT/OFFSET [JIT symbol file ...]`.
    let mapping = raw
        .lines()
        .find_map(|l| {
            l.split_once(&format!(" {name} ")).and_then(|(head, _)| head.rsplit_once("M=")).map(|(_, m)| m)
        })
        .unwrap_or_else(|| panic!("no location of {name}: {raw}"));
    let in_jit =
        raw.lines().any(|l| l.starts_with(&format!("{mapping}: ")) && l.contains(" [JIT symbol file "));
    assert!(in_jit, "pprof maps {name} to a JIT symbol file: {raw}");
    let script = report(data, &["--format", "script"]);
    assert!(script.lines().any(|l| l.contains(&format!(" {name} ([JIT])"))), "script");
}

/// When a stored symbol file was registered and removed, from its `rperf dump` line.
fn symfile_times(files: &[String], name: &str) -> (u64, u64) {
    let line =
        files.iter().find(|f| f.ends_with(&format!(": {name}"))).unwrap_or_else(|| panic!("{files:?}"));
    let ns = |after: &str| -> u64 {
        let t = line.split(after).nth(1).unwrap().split([',', ':']).next().unwrap();
        let (s, frac) = t.split_once('.').unwrap();
        s.parse::<u64>().unwrap() * 1_000_000_000 + frac.parse::<u64>().unwrap()
    };
    let removed = if line.contains("removed by ") { ns("removed by ") } else { u64::MAX };
    (ns("registered "), removed)
}

/// Samples of each period are named after the function that ran then. ART stamps its entries
/// with their registration time; GDB's descriptor carries no times, so a new file counts from
/// the read before it (`exact` false): samples of the first period from then on may carry the
/// second name, and the test checks that bound is never late instead.
fn check_periods(data: &Path, out: &str, exact: bool) {
    let p = phases(out);
    let (first, second) = (p["jit_first"], p["jit_second"]);
    let files: Vec<String> = dumped_symfiles(data).into_iter().filter(|f| !f.contains(" dex ")).collect();
    let (second_registered, _) = symfile_times(&files, "jit_second");
    let (_, first_removed) = symfile_times(&files, "jit_first");
    // Registered no later, removed no earlier, than the truth.
    assert!(second_registered <= second.0 && first_removed >= first.1, "{files:?} {p:?}");
    let first_end = if exact {
        assert!(second_registered >= first.1, "ART's own time: {files:?} {p:?}");
        first.1
    } else {
        first.1.min(second_registered)
    };
    let leaves = sample_leaves(data);
    for (name, (start, end)) in [("jit_first", (first.0, first_end)), ("jit_second", second)] {
        // The script gives times in microseconds: a sample shown at `t` ran in [t, t + 999 ns],
        // so only samples whose whole microsecond lies in the period are counted in it.
        let within: Vec<&(u64, String)> =
            leaves.iter().filter(|(t, _)| *t >= start && *t + 999 <= end).collect();
        assert!(within.len() > 100, "{} samples in {name}'s period", within.len());
        let named = within.iter().filter(|(_, f)| f == name).count();
        let wrong: Vec<_> =
            within.iter().filter(|(_, f)| f.starts_with("jit_") && f != name).take(5).collect();
        assert!(wrong.is_empty(), "samples of {name}'s period ({start}..={end}) named otherwise: {wrong:?}");
        assert!(named * 10 >= within.len() * 9, "{named} of {} samples in {name}'s period", within.len());
    }
    // Both files are kept, each naming its function, over the same code.
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(files[0].ends_with(": jit_first") && files[1].ends_with(": jit_second"), "{files:?}");
    // The text report names both (each ran half the time; how many samples each got depends
    // on how busy the machine was).
    let text = report(data, &[]);
    assert!(text_share(&text, "jit_first") >= 20.0 && text_share(&text, "jit_second") >= 20.0, "{text}");
}

#[test]
fn two_functions_in_one_place_gdb_descriptor() {
    let (data, out, _) = record("jit_gdb", &[], &[jitrt().to_str().unwrap(), "gdb", "1"]);
    check_periods(&data, &out, false);
    let info = recording_info(&data);
    assert_eq!(info.get("jit_symfiles"), Some(&2), "{info:?}");
    // --no-jit-interface reads nothing: the code stays unnamed.
    let (data, _, _) =
        record("jit_gdb_off", &["--no-jit-interface"], &[jitrt().to_str().unwrap(), "gdb", "0.3"]);
    assert_eq!(recording_info(&data).get("jit_descriptor_reads"), None);
    assert!(!report(&data, &[]).contains("jit_first"));
}

#[test]
fn two_functions_in_one_place_art_descriptor() {
    // ART stamps each entry with its registration time: no margin. Registering the second
    // function holds the lock odd for 300 ms with a half-made entry, which must not be stored.
    for magic in ["Android2", "Android1"] {
        let data = scratch(&format!("jit_art_{magic}")).join("perf.data");
        let o = run(rperf()
            .args(["record", "-o"])
            .arg(&data)
            .args(["--", jitrt().to_str().unwrap(), "art", "1"])
            .env("JITRT_ART_MAGIC", magic));
        assert!(o.status.success(), "{}", stderr(&o));
        // The in-memory dex file ART lists beside the JIT code is kept too.
        let mut files = dumped_symfiles(&data);
        let dex = files.iter().position(|f| f.contains(" dex ") && f.contains("112 bytes"));
        files.remove(dex.unwrap_or_else(|| panic!("{magic}: no dex file in {files:?}")));
        let lines = files.iter().map(|f| format!("{f}\n")).collect::<String>();
        assert!(!lines.contains("not a readable ELF"), "{magic}: {lines}");
        check_periods(&data, &stdout(&o), true);
        let info = recording_info(&data);
        assert_eq!(
            info.get("jit_symfile_bytes"),
            Some(&(960 + 112)),
            "{magic}: two 480-byte symbol files, one dex: {info:?}"
        );
    }
}

#[test]
fn a_process_that_registers_nothing_costs_no_walks() {
    let (data, _, _) = record("jit_none", &[], &[jitrt().to_str().unwrap(), "none", "3"]);
    let info = recording_info(&data);
    assert_eq!(info.get("jit_entry_reads"), Some(&0), "{info:?}");
    assert_eq!(info.get("jit_symfiles"), Some(&0), "{info:?}");
    // Its two descriptors (JIT code and dex files) are read at start, then less and less
    // often: far fewer than a read each per 100 ms (60).
    let reads = info["jit_descriptor_reads"];
    assert!((2..=16).contains(&reads), "{reads} descriptor reads in 3 s: {info:?}");
    // A program without the interface is never read.
    let (data, _, _) = record("jit_without", &[], &["sleep", "0.2"]);
    assert_eq!(recording_info(&data).get("jit_descriptor_reads"), None);
}

#[test]
fn unreadable_memory_is_said_once_and_recording_goes_on() {
    // rperf as an unprivileged user; the runtime makes itself non-dumpable after its events
    // are open, so that its memory can't be read (process_vm_readv: EPERM).
    let dir = scratch("jit_refused");
    std::os::unix::fs::chown(&dir, Some(23461), Some(23461)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.join("perf.data");
    let o = run(Command::new("setpriv")
        .args(["--reuid=23461", "--regid=23461", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_rperf"))
        .args(["record", "-o"])
        .arg(&data)
        .args(["--", jitrt().to_str().unwrap(), "gdb", "0.5"])
        .env("JITRT_NOT_DUMPABLE", "1"));
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.matches("cannot read the JIT interface of pid").count(), 1, "{err}");
    let text = report(&data, &[]);
    assert!(text.contains("Samples: ") && !text.contains("jit_first"), "{text}");
}

/// rperf run under /usr/bin/time: its output and its peak RSS in KiB.
fn record_measured(data: &Path, args: &[&str], cmd: &[&str]) -> (Output, u64) {
    let rss = data.with_extension("rss");
    let o = run(Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss)
        .arg(env!("CARGO_BIN_EXE_rperf"))
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(data)
        .arg("--")
        .args(cmd));
    let kib = std::fs::read_to_string(&rss).unwrap().trim().lines().last().unwrap().parse().unwrap();
    (o, kib)
}

/// A hostile runtime registering 100,000 symbol files (8 KiB each) once grew the recorder to
/// 2.4 GB; symbol files of 64 MiB were copied whole. What is copied is bounded per file and in
/// all, kept out of memory, and what was left out is said.
#[test]
fn a_flood_of_symbol_files_is_bounded() {
    let dir = scratch("jit_flood");
    let data = dir.join("flood.data");
    let jit = jitrt().to_str().unwrap();
    let (o, rss) =
        record_measured(&data, &["--jit-max-total", "24M"], &[jit, "flood", "100000", "8192", "1"]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(rss < 64 * 1024, "the recorder peaked at {rss} KiB:\n{err}");
    assert!(err.contains("JIT symbol files") && err.contains("were not kept"), "{err}");
    let len = std::fs::metadata(&data).unwrap().len();
    assert!(len < 40 << 20, "{len} bytes: more than --jit-max-total of symbol files");
    let kept = recording_info(&data)["jit_symfiles"];
    assert!(kept > 100, "{kept} symbol files kept");
    // The report reads what was kept.
    let text = report(&data, &[]);
    assert!(text.contains("Samples: "), "{text}");
    // Symbol files larger than --jit-max-image are not copied at all.
    let (o, _) = record_measured(&data, &["--jit-max-image", "1M"], &[jit, "flood", "3", "2000000", "0.2"]);
    let err = stderr(&o);
    assert!(err.contains("3 larger than 1.0 MiB (--jit-max-image)"), "{err}");
    assert_eq!(recording_info(&data).get("jit_symfiles"), Some(&0));
}

/// System-wide, a runtime that starts after the machine was quiet is read as soon as the
/// records of its mappings come (the recorder lets ticks without such records go by, and so
/// would find it only at its next pass, seconds later, after this process is gone).
#[test]
fn system_wide_a_runtime_started_on_a_quiet_machine_is_read() {
    let data = scratch("jit_system_wide").join("perf.data");
    // A low rate, so that no sample ring fills enough to wake the recorder on its own.
    let rec = rperf()
        .args(["record", "-a", "-F", "49", "--duration", "10", "-o"])
        .arg(&data)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(3));
    // jit_first runs 2.5 s, then jit_second 2.5 s: each much longer than a tick (2 s).
    let runtime =
        Command::new(jitrt()).args(["gdb", "2.5"]).stdout(std::process::Stdio::null()).spawn().unwrap();
    let pid = runtime.id().to_string();
    let o = runtime.wait_with_output().unwrap();
    assert!(o.status.success());
    let o = rec.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // Other tests' runtimes may run meanwhile: this one's samples only.
    let text = report(&data, &["--pids", &pid, "--sort", "symbol"]);
    for name in ["jit_first", "jit_second"] {
        assert!(text_share(&text, name) >= 20.0, "{name}: {text}");
    }
}
