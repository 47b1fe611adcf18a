//! DWARF call graphs unwound while recording (`--post-unwind`, the default): samples go into the
//! file with call chains instead of stack copies, which every reader takes as they are.

mod common;

use std::path::Path;

use common::*;

fn record(name: &str, args: &[&str], cmd: &[&str]) -> (std::path::PathBuf, String) {
    let data = scratch(name).join("perf.data");
    let o = run(rperf().args(["record", "-g", "dwarf"]).args(args).arg("-o").arg(&data).arg("--").args(cmd));
    assert!(o.status.success(), "{}", stderr(&o));
    (data, stderr(&o))
}

fn samples_recorded(err: &str) -> u64 {
    err.split("Samples recorded: ").nth(1).unwrap().split('.').next().unwrap().parse().unwrap()
}

/// (stacks, weight) of the folded report.
fn folded(data: &Path) -> Vec<(Vec<String>, u64)> {
    let o = run(rperf().args(["report", "--format", "folded", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            (stack.split(';').map(str::to_string).collect(), n.parse().unwrap())
        })
        .collect()
}

/// The share (in %) of the samples whose leaf is `leaf` that `pred` accepts.
fn share_of(stacks: &[(Vec<String>, u64)], leaf: &str, pred: impl Fn(&[String]) -> bool) -> f64 {
    let with_leaf: Vec<_> = stacks.iter().filter(|(s, _)| s.last().is_some_and(|l| l == leaf)).collect();
    let all: u64 = with_leaf.iter().map(|(_, n)| n).sum();
    let ok: u64 = with_leaf.iter().filter(|(s, _)| pred(s)).map(|(_, n)| n).sum();
    assert!(all > 100, "{all} samples in {leaf}");
    100.0 * ok as f64 / all as f64
}

fn dump(data: &Path) -> String {
    let o = run(rperf().args(["dump", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
}

#[test]
fn dwarf_samples_carry_call_chains_not_stacks() {
    let workload = programs().workload.to_str().unwrap();
    let (data, err) = record("pu_default", &[], &[workload, "0.5", "2"]);
    let samples = samples_recorded(&err);
    // Every sample unwound, and said so.
    assert!(err.contains(&format!("Unwound while recording: {samples} samples")), "{err}");
    let attrs: String =
        dump(&data).lines().filter(|l| l.contains("cpu-clock") && l.contains("ids")).collect();
    assert!(
        attrs.contains("CALLCHAIN") && !attrs.contains("STACK_USER") && !attrs.contains("REGS_USER"),
        "{attrs}"
    );
    let bytes = std::fs::metadata(&data).unwrap().len();
    assert!(bytes / samples <= 400, "{} bytes per sample", bytes / samples);
    // The stacks are complete: hot_loop's callers up to the thread's entry.
    let stacks = folded(&data);
    let complete = share_of(&stacks, "hot_loop", |s| {
        s.windows(3).any(|w| w == ["run_worker", "compute_outer", "compute_inner"])
            && s.iter().any(|f| f == "main" || f == "start_thread" || f.starts_with("clone"))
    });
    assert!(complete >= 99.0, "{complete}% of hot_loop's stacks complete");
    // perf reads the same call chains.
    let script = parse_script(&perf_script(&data));
    let through = script.iter().filter(|s| s.frames.iter().any(|f| f == "compute_outer")).count();
    assert!(through * 10 >= script.len() * 8, "{through} of {} perf script samples", script.len());

    // --no-post-unwind keeps the stacks for the report to unwind: the same stacks, many times
    // the bytes.
    let (raw, err) = record("pu_off", &["--no-post-unwind"], &[workload, "0.5", "2"]);
    assert!(!err.contains("Unwound while recording"), "{err}");
    let attrs: String = dump(&raw).lines().filter(|l| l.contains("cpu-clock") && l.contains("ids")).collect();
    assert!(attrs.contains("STACK_USER"), "{attrs}");
    let raw_bytes = std::fs::metadata(&raw).unwrap().len() / samples_recorded(&err);
    assert!(raw_bytes > 10 * (bytes / samples), "{raw_bytes} against {} bytes per sample", bytes / samples);
    let complete_raw =
        share_of(&folded(&raw), "hot_loop", |s| s.windows(2).any(|w| w == ["run_worker", "compute_outer"]));
    assert!(complete_raw >= 99.0, "{complete_raw}% complete without post-unwind");
}

#[test]
fn a_binary_deleted_while_recording_still_unwinds() {
    // The binary's CFI is read when it is mapped: deleting it later doesn't matter. Without
    // post-unwind the report has nothing to unwind with.
    let dir = scratch("pu_deleted");
    let exe = dir.join("doomed");
    copy_executable(&programs().workload, &exe);
    let script = format!("{} 1.2 1 & sleep 0.6; rm {}; wait", exe.display(), exe.display());
    let frames = |data: &Path| -> f64 {
        // Unnamed (the binary is gone), so count frames: _start -> __libc_start_main -> ... ->
        // main -> run_worker -> compute_outer -> compute_inner -> hot_loop.
        let stacks = folded(data);
        let in_doomed: Vec<_> =
            stacks.iter().filter(|(s, _)| s.first().is_some_and(|c| c == "doomed")).collect();
        let all: u64 = in_doomed.iter().map(|(_, n)| n).sum();
        let deep: u64 = in_doomed.iter().filter(|(s, _)| s.len() >= 8).map(|(_, n)| n).sum();
        assert!(all > 500, "{all} samples of doomed");
        100.0 * deep as f64 / all as f64
    };
    let (data, _) = record("pu_deleted_rec", &[], &["sh", "-c", &script]);
    assert!(!exe.exists());
    let unwound = frames(&data);
    assert!(unwound >= 95.0, "{unwound}% of the stacks are whole");
    copy_executable(&programs().workload, &exe);
    let (raw, _) = record("pu_deleted_raw", &["--no-post-unwind"], &["sh", "-c", &script]);
    let later = frames(&raw);
    assert!(later < 50.0, "{later}% whole when the report unwinds without the binary");
}

/// A library linked by lld: the code's first page in the file also holds the read-only data
/// before it, which is mapped a page lower, so the code is not where its file offset alone
/// would put it. Its CFI is found at the code's own addresses, whether rperf unwinds while
/// recording or when reporting (perf's recording, with stack copies).
#[test]
fn a_library_linked_by_lld_unwinds() {
    let dir = scratch("pu_lld");
    let (lib, main) = (dir.join("liblldlayout.so"), dir.join("lld_main"));
    let programs = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/programs");
    let gcc = |args: &[&str]| {
        let o = run(std::process::Command::new("gcc").args(["-O1", "-g", "-fomit-frame-pointer"]).args(args));
        assert!(o.status.success(), "gcc {args:?}: {}", stderr(&o));
    };
    let lib_src = format!("{programs}/lld_lib.c");
    gcc(&["-shared", "-fPIC", "-fuse-ld=lld", &lib_src, "-o", lib.to_str().unwrap()]);
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    gcc(&[&format!("{programs}/lld_main.c"), lib.to_str().unwrap(), &rpath, "-o", main.to_str().unwrap()]);
    // The layout this is about: the code segment's offset and address differ, mid-page.
    let headers = stdout(&run(std::process::Command::new("readelf").args(["-lW"]).arg(&lib)));
    let code: Vec<&str> = headers
        .lines()
        .find(|l| l.contains("LOAD") && l.contains("R E"))
        .unwrap()
        .split_whitespace()
        .collect();
    let (offset, vaddr) =
        (u64::from_str_radix(&code[1][2..], 16).unwrap(), u64::from_str_radix(&code[2][2..], 16).unwrap());
    assert!(offset % 4096 != 0 && offset != vaddr, "{headers}");

    let whole = |stacks: &[(Vec<String>, u64)]| {
        share_of(stacks, "lld_leaf", |s| {
            s.windows(3).any(|w| w == ["lld_outer", "lld_middle", "lld_leaf"])
                && s.iter().any(|f| f == "main")
        })
    };
    let (data, _) = record("pu_lld_rec", &[], &[main.to_str().unwrap()]);
    let unwound = whole(&folded(&data));
    assert!(unwound >= 95.0, "{unwound}% of the stacks unwound while recording are whole");
    let perf_data = dir.join("perf.data");
    let o = run(std::process::Command::new("perf")
        .args(["record", "-q", "--call-graph", "dwarf", "-o"])
        .arg(&perf_data)
        .arg("--")
        .arg(&main));
    assert!(o.status.success(), "perf record: {}", stderr(&o));
    let reported = whole(&folded(&perf_data));
    assert!(reported >= 95.0, "{reported}% of the stacks unwound by the report are whole");
}
