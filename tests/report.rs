//! `rperf report` against Linux perf's own report of the same files, and on simpleperf's
//! recordings.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use common::*;

/// (dso file name, symbol) -> self overhead percent, from `perf report`.
fn perf_overheads(data: &Path) -> Vec<((String, String), f64)> {
    let o = run(Command::new("perf")
        .args([
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "dso,sym",
            "-g",
            "none",
            "--percent-limit",
            "0",
            "-i",
        ])
        .arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    stdout(&o)
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .filter_map(|l| {
            let l = l.trim();
            let (pct, rest) = l.split_once('%')?;
            let rest = rest.trim();
            let (dso, sym) = rest.split_once(char::is_whitespace)?;
            let sym = sym.trim().trim_start_matches("[.]").trim_start_matches("[k]").trim();
            // rperf names symbols without their version (`log`, not `log@@GLIBC_2.29`), as
            // simpleperf does.
            let sym = sym.split_once('@').map_or(sym, |(name, _)| name);
            Some(((dso.to_string(), sym.to_string()), pct.parse().ok()?))
        })
        .collect()
}

/// The same from `rperf report --sort dso,symbol --csv`.
fn rperf_overheads(data: &Path) -> HashMap<(String, String), f64> {
    // perf report names the containing function; rperf, like perf with --inline, would name
    // the inlined call.
    // Named as perf names them: without parameters (--short-names).
    let o = run(rperf()
        .args(["report", "--no-inline", "--short-names", "--sort", "dso,symbol", "--csv", "-i"])
        .arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut out = HashMap::new();
    for r in csv_rows(&stdout(&o), ',') {
        let base = r["Shared Object"].rsplit('/').next().unwrap().to_string();
        *out.entry((base, r["Symbol"].clone())).or_insert(0.0) += pct(&r["Overhead"]);
    }
    out
}

fn compare_with_perf(data: &Path) {
    let perf = perf_overheads(data);
    let ours = rperf_overheads(data);
    // Recordings of one hot function can have fewer than 10 entries: compare what there is.
    assert!(perf.len() >= 3, "perf's report has {} entries", perf.len());
    for ((dso, sym), pct) in perf.iter().take(10) {
        let mine = ours.get(&(dso.clone(), sym.clone())).copied().unwrap_or(0.0);
        assert!((mine - pct).abs() <= 1.0, "{dso} {sym}: perf {pct:.2}%, rperf {mine:.2}%\nrperf: {ours:?}");
    }
}

#[test]
fn same_answer_as_perf_on_a_dwarf_recording() {
    let p = programs();
    let dir = scratch("rep_dwarf");
    let data = dir.join("perf-dwarf.data");
    let o = run(Command::new("perf")
        .args(["record", "-q", "--call-graph", "dwarf", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&p.mixed)
        .args(["1", "2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    compare_with_perf(&data);
}

#[test]
fn same_answer_as_perf_on_a_frame_pointer_recording() {
    let p = programs();
    let dir = scratch("rep_fp");
    let data = dir.join("perf-fp.data");
    let o = run(Command::new("perf")
        .args(["record", "-q", "--call-graph", "fp", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&p.mixed_fp)
        .args(["1", "2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    compare_with_perf(&data);
}

/// Frame-pointer call chains through code built without frame pointers end at garbage return
/// addresses: the report says so once the share is large, with the remedy, rather than only
/// counting "Error Callchains".
#[test]
fn frame_pointer_chains_through_code_without_them_are_said_to_be_cut() {
    let p = programs();
    let say = "call chains end at a return address in no mapping";
    let broken = record_fp("rep_broken_chains", &p.mixed, &["1", "1"]);
    let o = run(rperf().args(["report", "-g", "--sort", "dso,symbol", "-i"]).arg(&broken));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(say) && stderr(&o).contains("record with -g (DWARF unwinding)"),
        "{}",
        stderr(&o)
    );
    let whole = record_fp("rep_whole_chains", &p.mixed_fp, &["1", "1"]);
    let o = run(rperf().args(["report", "-g", "--sort", "dso,symbol", "-i"]).arg(&whole));
    assert!(!stderr(&o).contains(say), "{}", stderr(&o));
}

#[test]
fn rperf_dwarf_recording_reports_full_call_chains() {
    let p = programs();
    let dir = scratch("rep_own");
    let data = dir.join("own.data");
    let o =
        run(rperf().args(["record", "-g", "-o"]).arg(&data).arg("--").arg(&p.workload).args(["0.5", "2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(rperf().args(["report", "--sort", "symbol", "-g", "callee", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    // Callee order: hot_loop's call graph lists its callers, innermost first.
    let entry = text
        .lines()
        .position(|l| l.ends_with("hot_loop") && l.contains('%') && !l.starts_with(' '))
        .unwrap_or_else(|| panic!("no hot_loop entry:\n{text}"));
    let lines: Vec<&str> =
        text.lines().skip(entry + 1).take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let chain = ["compute_inner", "compute_outer", "run_worker"];
    let pos: Vec<usize> = chain
        .iter()
        .map(|c| lines.iter().position(|l| l.ends_with(c)).unwrap_or_else(|| panic!("{c} missing:\n{text}")))
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.contains("main") && (text.contains("start_thread") || text.contains("clone")), "{text}");
    compare_with_perf(&data);
}

fn report_simpleperf(file: &str, args: &[&str]) -> std::process::Output {
    let dir = simpleperf_testdata();
    run(rperf().arg("report").arg("-i").arg(dir.join(file)).arg("--symfs").arg(&dir).args(args))
}

#[test]
fn every_simpleperf_recording_reports() {
    let dir = simpleperf_testdata();
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if !name.ends_with(".data") {
            continue;
        }
        let o = report_simpleperf(&name, &[]);
        if name == "invalid_perf.data" {
            assert!(!o.status.success(), "invalid_perf.data must be refused");
            let e = stderr(&o);
            assert!(e.contains("invalid_perf.data is not a readable perf.data file"), "{e}");
            assert!(!e.contains("panicked"), "{e}");
        } else {
            assert!(o.status.success(), "{name}: {}", stderr(&o));
            assert!(stdout(&o).contains("Event: "), "{name}: {}", stdout(&o));
        }
        checked += 1;
    }
    assert!(checked >= 27, "only {checked} recordings found in {}", dir.display());
}

#[test]
fn simpleperf_sample_counts_and_cpu_filter() {
    let o = report_simpleperf("perf.data", &[]);
    assert!(stdout(&o).contains("Samples: 2409\n"), "{}", stdout(&o));
    let o = report_simpleperf("perf.data", &["--cpu", "2"]);
    assert!(stdout(&o).contains("Samples: 603\n"), "{}", stdout(&o));
}

fn symbol_lines(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.trim().trim_start_matches(|c: char| "|-0123456789.% ".contains(c)).to_string())
        .collect()
}

#[test]
fn simpleperf_call_graph_orders() {
    let o = report_simpleperf("perf_g_fp.data", &["-g", "caller", "--sort", "symbol"]);
    let lines = symbol_lines(&stdout(&o));
    let main = lines.iter().position(|l| l == "main").expect("a main line");
    assert_eq!(lines[main + 1], "GlobalFunc", "{lines:?}");
    let o = report_simpleperf("perf_g_fp.data", &["-g", "callee", "--sort", "symbol"]);
    let lines = symbol_lines(&stdout(&o));
    let global = lines.iter().rposition(|l| l == "GlobalFunc").expect("a GlobalFunc line");
    assert_eq!(lines[global + 1], "main", "{lines:?}");
}

#[test]
fn simpleperf_children_and_self() {
    let o = report_simpleperf("perf_g_fp.data", &["--children", "--sort", "symbol", "--csv"]);
    let text = stdout(&o);
    let rows = csv_rows(&text, ',');
    let row = |sym: &str| -> (f64, f64) {
        let r = rows.iter().find(|r| r["Symbol"] == sym).unwrap_or_else(|| panic!("{sym}: {text}"));
        (pct(&r["Children"]), pct(&r["Self"]))
    };
    let (main_children, main_self) = row("main");
    let (global_children, global_self) = row("GlobalFunc");
    assert!(
        main_children >= global_children && global_children >= global_self && global_self >= main_self,
        "{text}"
    );
}

#[test]
fn simpleperf_jit_code_is_named() {
    let o = report_simpleperf("perf_with_jit_symbol.data", &["--sort", "dso"]);
    assert!(stdout(&o).contains("[JIT app cache]"), "{}", stdout(&o));
    let o = report_simpleperf("perf_with_jit_symbol.data", &["--sort", "dso,symbol"]);
    assert!(stdout(&o).contains("MainActivity$1.run"), "{}", stdout(&o));
}

#[test]
fn filters_select_samples() {
    let o = report_simpleperf("perf_with_multiple_pids_and_tids.data", &["--sort", "pid,tid", "--csv"]);
    let text = stdout(&o);
    let first_pid: i32 = csv_rows(&text, ',')[0]["Pid"].parse().unwrap();
    let o = report_simpleperf(
        "perf_with_multiple_pids_and_tids.data",
        &["--sort", "pid", "--csv", "--pids", &first_pid.to_string()],
    );
    let text = stdout(&o);
    let rows = csv_rows(&text, ',');
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["Overhead"], "100.00%", "{rows:?}");
}

#[test]
fn folded_and_svg_outputs() {
    let p = programs();
    let dir = scratch("rep_flame");
    let data = dir.join("fg.data");
    let o =
        run(rperf().args(["record", "-g", "-o"]).arg(&data).arg("--").arg(&p.workload).args(["0.3", "2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(rperf().args(["report", "-i"]).arg(&data));
    let samples: u64 = stdout(&o).lines().find_map(|l| l.strip_prefix("Samples: ")).unwrap().parse().unwrap();
    let o = run(rperf().args(["report", "--format", "folded", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let total: u64 = text.lines().map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(total, samples, "folded counts sum to the sample count");
    assert!(
        text.lines()
            .any(|l| l.starts_with("workload;")
                && l.contains(";run_worker;compute_outer;compute_inner;hot_loop ")),
        "{text}"
    );
    let svg = dir.join("fg.svg");
    let o = run(rperf().args(["report", "-i"]).arg(&data).arg("-o").arg(&svg));
    assert!(o.status.success(), "{}", stderr(&o));
    let body = std::fs::read_to_string(&svg).unwrap();
    assert!(body.starts_with("<?xml") && body.trim_end().ends_with("</svg>"));
    assert!(body.contains("hot_loop") && body.contains("compute_outer"));
}

#[test]
fn progress_shows_on_request_and_stays_off_a_pipe() {
    let file = simpleperf_testdata().join("perf_g_fp.data");
    let o = run(rperf().args(["report", "-o", "/dev/null", "-i"]).arg(&file).env("RPERF_PROGRESS", "always"));
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("\rrperf report: [") && err.contains("100.0% of"), "{err:?}");
    assert!(err.contains("symbolizing") && err.contains("\r\x1b[K"), "the line is cleared: {err:?}");
    // stderr here is a pipe, not a terminal: no progress.
    let o = run(rperf().args(["report", "-o", "/dev/null", "-i"]).arg(&file).env_remove("RPERF_PROGRESS"));
    assert!(!stderr(&o).contains("rperf report: ["), "{}", stderr(&o));
}

#[test]
fn symbols_stored_in_simpleperf_recordings_name_frames_without_the_binaries() {
    // No --symfs: /data/t2 is not on this machine, but the recording stores its symbols
    // (simpleperf's first file-feature layout, file offset of min_vaddr not recorded).
    let dir = simpleperf_testdata();
    let o = run(rperf().args(["report", "--sort", "symbol", "-i"]).arg(dir.join("perf_with_symbols.data")));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let share = |name: &str| -> f64 {
        text.lines()
            .find(|l| l.ends_with(&format!("  {name}")))
            .and_then(|l| l.split_whitespace().next()?.trim_end_matches('%').parse().ok())
            .unwrap_or(0.0)
    };
    assert!(share("main") > 30.0 && share("func2(int, int)") > 30.0, "{text}");
}

#[test]
fn jit_symbol_maps_stored_by_simpleperf_name_jit_code() {
    // simpleperf keeps the perf-PID.map it read as a stored file; the JIT code has no mapping.
    let o = report_simpleperf("perf_with_generic_git_symbols.data", &["--sort", "symbol"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let share: f64 = text
        .lines()
        .find(|l| l.ends_with("generic_jit_symbol_one"))
        .and_then(|l| l.split_whitespace().next()?.trim_end_matches('%').parse().ok())
        .unwrap_or(0.0);
    assert!(share > 90.0, "{text}");
    // Shown under the name simpleperf stored it under, as simpleperf shows it.
    let o = report_simpleperf("perf_with_generic_git_symbols.data", &["--sort", "dso,symbol"]);
    let text = stdout(&o);
    let row = |l: &str| {
        l.split_whitespace().skip(1).collect::<Vec<_>>() == ["perf-1142.map", "generic_jit_symbol_one"]
    };
    assert!(text.lines().any(row), "{text}");
}

#[test]
fn code_without_symbols_is_reported_per_address() {
    // perf_with_add_counter.data without kallsyms: kernel frames, most of its samples, have no
    // symbols.
    let dir = simpleperf_testdata();
    let data = dir.join("perf_with_add_counter.data");
    let o = run(rperf().args(["report", "--sort", "symbol", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let per_address = text.lines().filter(|l| l.contains("[kernel.kallsyms][+")).count();
    assert!(per_address > 1, "one entry per unnamed address:\n{text}");
    assert!(!text.lines().any(|l| l.ends_with("  [unknown]")), "{text}");
    // Mostly unnamed: one warning says which binary and what to do.
    let err = stderr(&o);
    assert_eq!(err.matches("code without symbols").count(), 1, "{err}");
    assert!(err.contains("[kernel.kallsyms]") && err.contains("--kallsyms"), "{err}");
    // --no-show-ip merges them, and the shares agree.
    let o = run(rperf().args(["report", "--sort", "symbol", "--no-show-ip", "-i"]).arg(&data));
    let merged = stdout(&o);
    let unknown: f64 = merged
        .lines()
        .find(|l| l.ends_with("  [unknown]"))
        .and_then(|l| l.split_whitespace().next()?.trim_end_matches('%').parse().ok())
        .expect("an [unknown] entry");
    let summed: f64 = text
        .lines()
        .filter(|l| l.contains("[kernel.kallsyms][+"))
        .filter_map(|l| l.split_whitespace().next()?.trim_end_matches('%').parse::<f64>().ok())
        .sum();
    assert!((unknown - summed).abs() < 0.05 * per_address as f64, "{unknown} vs {summed}");
}

/// perf's compressed recordings (`perf record -z`, zstd over every few records) read as the
/// same recording uncompressed would: every sample, each in its binary.
#[test]
fn compressed_recordings_are_read_whole() {
    let data = scratch("report_compressed").join("perf.data");
    let o = run(Command::new("perf")
        .args(["record", "-z", "-g", "-F", "4000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&programs().mixed)
        .args(["0.6", "2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let stats = stdout(&run(Command::new("perf").args(["report", "--stats", "-i"]).arg(&data)));
    let samples =
        stats.lines().find(|l| l.contains("SAMPLE events")).and_then(|l| l.split_whitespace().nth(2));
    let o = run(rperf().args(["report", "--sort", "dso", "-i"]).arg(&data));
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success() && err.is_empty(), "{err}");
    assert!(out.contains(&format!("Samples: {}\n", samples.unwrap())), "{out}\n{stats}");
    let dso = |name: &str| -> f64 {
        out.lines()
            .find(|l| l.trim_end().ends_with(name))
            .and_then(|l| l.split('%').next()?.trim().parse().ok())
            .unwrap_or(0.0)
    };
    let perf = stdout(&run(Command::new("perf")
        .args(["report", "--stdio", "--no-children", "--sort", "dso", "-g", "none", "-i"])
        .arg(&data)));
    let perf_dso = |name: &str| -> f64 {
        perf.lines()
            .find(|l| l.trim_end().ends_with(name) && l.contains('%'))
            .and_then(|l| l.split('%').next()?.trim().parse().ok())
            .unwrap_or(0.0)
    };
    for name in ["libc.so.6", "libm.so.6", "mixed"] {
        assert!(
            (dso(name) - perf_dso(name)).abs() < 0.02,
            "{name}: {} vs perf {}\n{out}\n{perf}",
            dso(name),
            perf_dso(name)
        );
    }
    assert!(dso("libc.so.6") > 10.0, "{out}");
}

/// The recording is opened once, and never looked up by its path again: every read goes
/// through that descriptor (the file the path names may change meanwhile). Checked with strace.
#[test]
fn the_recording_is_opened_once() {
    let dir = scratch("opened_once");
    let data = dir.join("in.data");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/fp.data"), &data).unwrap();
    let log = dir.join("strace.log");
    let o = Command::new("strace")
        .args(["-f", "-e", "trace=%file", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_rperf"))
        .args(["report", "-i"])
        .arg(&data)
        .arg("--symfs")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden"))
        .output()
        .expect("strace runs (the test command installs it)");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let log = std::fs::read_to_string(&log).unwrap();
    let uses: Vec<&str> = log.lines().filter(|l| l.contains("in.data")).collect();
    assert_eq!(uses.len(), 1, "the input's path is used once, to open it:\n{}", uses.join("\n"));
    assert!(uses[0].contains("open"), "{}", uses[0]);
}

#[test]
fn symbol_directories_may_be_repeated_and_are_searched_in_order() {
    let dir = simpleperf_testdata();
    let empty = scratch("symfs_empty");
    let data = dir.join("perf_g_fp.data");
    let with = |dirs: &[&Path]| {
        let mut c = rperf();
        c.args(["report", "--sort", "dso,symbol", "-i"]).arg(&data);
        for d in dirs {
            c.arg("--symfs").arg(d);
        }
        let o = run(&mut c);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let one = with(&[&dir]);
    assert!(one.contains("GlobalFunc"), "{one}");
    assert!(!with(&[&empty]).contains("GlobalFunc"));
    // The binary is found in the second folder, as in the only one.
    assert_eq!(with(&[&empty, &dir]), one);
}

/// The table of a plain report, and how many frames its longest stack kept.
fn table_and_depth(
    data: &Path,
    symfs: &Path,
    needs: Option<rperf_report::Needs>,
) -> (Vec<Vec<String>>, usize) {
    let opts = rperf_report::ReportOptions {
        input: data.to_path_buf(),
        symfs: vec![symfs.to_path_buf()],
        debuginfod: rperf_report::Debuginfod::Off,
        ..Default::default()
    };
    let profile = match needs {
        None => rperf_report::load(&opts),
        Some(needs) => rperf_report::load_with(&opts, needs).map(|(p, _)| p),
    };
    let p = profile.unwrap_or_else(|e| panic!("{}: {e}", data.display()));
    let rows = p.table(&opts, usize::MAX).rows.into_iter().map(|r| r.cells).collect();
    (rows, p.stacks.iter().map(<[_]>::len).max().unwrap_or(0))
}

/// The text table names only sampled frames: without call graphs it neither unwinds nor names
/// callers, and says what the same report says from whole stacks. Java processes keep their
/// stacks: shaping may hide their sampled frame (ART's machinery beside a Java method).
#[test]
fn the_table_reads_sampled_frames_and_agrees_with_whole_stacks() {
    let dir = simpleperf_testdata();
    let p = programs();
    let dwarf = scratch("rep_sampled").join("perf-dwarf.data");
    let o = run(Command::new("perf")
        .args(["record", "-q", "--call-graph", "dwarf", "-F", "2000", "-o"])
        .arg(&dwarf)
        .arg("--")
        .arg(&p.mixed)
        .args(["1", "2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut recordings = vec![dwarf.clone()];
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap();
        if name.ends_with(".data") && name != "invalid_perf.data" {
            recordings.push(path);
        }
    }
    assert!(recordings.len() >= 27, "simpleperf's recordings in {}", dir.display());
    let whole = rperf_report::Needs { callers: true, ..Default::default() };
    let mut java_kept = false;
    for data in &recordings {
        let (rows, depth) = table_and_depth(data, &dir, None);
        let (whole_rows, whole_depth) = table_and_depth(data, &dir, Some(whole));
        assert_eq!(rows, whole_rows, "{}: the table differs from whole stacks'", data.display());
        let name = data.file_name().unwrap().to_str().unwrap();
        if name == "perf_with_interpreter_frames.data" || name == "perf_with_jit_symbol.data" {
            assert!(depth > 1, "{name}: a Java process's stacks are kept");
            java_kept = true;
        } else if data == &dwarf {
            assert!(whole_depth > 1, "the DWARF recording unwinds to callers with them asked for");
            assert_eq!(depth, 1, "the plain table unwound the DWARF recording's stacks");
        }
    }
    assert!(java_kept, "the Java recordings were checked");
}
