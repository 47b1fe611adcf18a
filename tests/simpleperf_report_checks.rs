//! What simpleperf's own report tests (AOSP `system/extras/simpleperf/cmd_report_test.cpp`)
//! check on the recordings of its corpus, checked on rperf's report: the same files, options
//! and expectations, with `--symfs` the corpus folder as those tests give it.
//!
//! Left out: the checks on files the corpus lacks (native libraries in an APK, big trace data,
//! the kernel-symbol recording, the symfs folders for the ELF-reading warnings) and on recordings made on a device. One
//! check differs on purpose: the off-CPU share of `SleepFunction` (see `off_cpu_time`).

mod common;

use std::path::PathBuf;

use common::*;

struct Report {
    code: i32,
    text: String,
    err: String,
}

impl Report {
    /// The non-empty lines, trimmed, as simpleperf's tests read them.
    fn lines(&self) -> Vec<&str> {
        self.text.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
    }

    /// Whether every line of the table (after its `Overhead` title) holds one of `any`.
    fn every_row_holds(&self, any: &[&str]) -> bool {
        let lines = self.lines();
        let Some(title) = lines.iter().position(|l| l.contains("Overhead")) else { return false };
        let rows = &lines[title + 1..];
        !rows.is_empty() && rows.iter().all(|l| any.iter().any(|s| l.contains(s)))
    }

    /// The count of the `Samples:` line.
    fn samples(&self) -> u64 {
        let line = self.text.lines().find_map(|l| l.strip_prefix("Samples: "));
        line.and_then(|n| n.trim().parse().ok()).unwrap_or(0)
    }
}

fn corpus(file: &str) -> PathBuf {
    simpleperf_testdata().join(file)
}

/// `rperf report -i FILE --symfs SYMFS ARGS`.
fn report_in(file: &str, symfs: Option<PathBuf>, args: &[&str]) -> Report {
    let mut cmd = rperf();
    cmd.arg("report").arg("-i").arg(corpus(file));
    if let Some(dir) = symfs {
        cmd.arg("--symfs").arg(dir);
    }
    let o = run(cmd.args(args));
    Report { code: o.status.code().unwrap_or(-1), text: stdout(&o), err: stderr(&o) }
}

fn report(file: &str, args: &[&str]) -> Report {
    let r = report_in(file, Some(simpleperf_testdata()), args);
    assert_eq!(r.code, 0, "{file} {args:?}: {}", r.err);
    r
}

#[test]
fn symbols_from_the_binary_and_from_mini_debug_info() {
    assert!(report("perf.data", &[]).text.contains("GlobalFunc"));
    assert!(report("perf_with_mini_debug_info.data", &[]).text.contains("GlobalFunc"));
}

#[test]
fn sort_keys_name_their_columns() {
    let r = report("perf.data", &["--sort", "pid"]);
    let lines = r.lines();
    let title = lines.iter().position(|l| l.contains("Pid")).expect("a Pid column");
    assert!(title + 2 < lines.len(), "{}", r.text);
    let r = report("perf.data", &["--sort", "comm,pid,dso,symbol"]);
    let title = r.lines().into_iter().find(|l| l.contains("Overhead")).expect("a title").to_string();
    for column in ["Command", "Pid", "Shared Object", "Symbol"] {
        assert!(title.contains(column), "{title}");
    }
    assert!(!title.contains("Tid"), "{title}");
    assert!(report("perf.data", &["--sort", "vaddr_in_file"]).text.contains("VaddrInFile"));
}

/// (children, self) of each name in a `--children --sort symbol` table.
fn children_and_self(r: &Report) -> std::collections::HashMap<String, (f64, f64)> {
    let mut map = std::collections::HashMap::new();
    for l in r.lines() {
        let cells: Vec<&str> = l.split_whitespace().collect();
        if let [c, s, name, ..] = cells[..] {
            if let (Some(c), Some(s)) = (c.strip_suffix('%'), s.strip_suffix('%')) {
                if let (Ok(c), Ok(s)) = (c.parse(), s.parse()) {
                    map.entry(name.to_string()).or_insert((c, s));
                }
            }
        }
    }
    map
}

#[test]
fn children_include_the_callees() {
    let r = report("perf_g_fp.data", &["--children", "--sort", "symbol"]);
    let map = children_and_self(&r);
    let (func, main) = (map["GlobalFunc"], map["main"]);
    assert!(main.0 >= func.0 && func.0 >= func.1 && func.1 >= main.1, "{}", r.text);
}

/// Whether a line naming `first` is followed directly by one naming `second`.
fn followed(r: &Report, first: &str, second: &str) -> bool {
    r.lines().windows(2).any(|w| w[0].contains(first) && w[1].contains(second))
}

#[test]
fn call_graphs_in_caller_and_callee_order() {
    assert!(followed(&report("perf_g_fp.data", &["-g"]), "main", "GlobalFunc"));
    assert!(followed(&report("perf_g_fp.data", &["-g", "callee"]), "GlobalFunc", "main"));
    assert!(followed(&report("perf_g_fp.data", &["-g", "caller"]), "main", "GlobalFunc"));
    assert!(report("perf_g_fp.data", &["-g"]).text.contains("skipped in brief callgraph mode"));
    let full = report("perf_g_fp.data", &["-g", "--full-callgraph"]);
    assert!(!full.text.contains("skipped in brief callgraph mode"));
}

const PIDS: &str = "perf_with_multiple_pids_and_tids.data";

#[test]
fn process_and_thread_filters() {
    let all = report(PIDS, &["--sort", "pid"]);
    assert!(!all.every_row_holds(&["17441"]) && !all.every_row_holds(&["17441", "17443"]));
    for pids in ["--pids", "--include-pid"] {
        assert!(report(PIDS, &["--sort", "pid", pids, "17441"]).every_row_holds(&["17441"]));
        let both = report(PIDS, &["--sort", "pid", pids, "17441,17443"]);
        assert!(both.every_row_holds(&["17441", "17443"]));
    }
    // A process filter keeps all of its threads.
    let threads = report(PIDS, &["--sort", "tid", "--pids", "17441"]);
    assert!(threads.text.contains("17441") && threads.text.contains("17445"));
    let all = report(PIDS, &["--sort", "tid"]);
    assert!(!all.every_row_holds(&["17441"]) && !all.every_row_holds(&["17441", "17445"]));
    for tids in ["--tids", "--include-tid"] {
        assert!(report(PIDS, &["--sort", "tid", tids, "17441"]).every_row_holds(&["17441"]));
        let both = report(PIDS, &["--sort", "tid", tids, "17441,17445"]);
        assert!(both.every_row_holds(&["17441", "17445"]));
    }
    let r = report(PIDS, &["--sort", "pid", "--exclude-pid", "17441"]);
    assert!(r.every_row_holds(&["17443", "17444"]));
    let r = report(PIDS, &["--sort", "tid", "--exclude-tid", "17441,17443,17444"]);
    assert!(r.every_row_holds(&["17445", "17446", "17447"]));
    let r = report(PIDS, &["--sort", "tid", "--include-tid", "17441,17443,17444"]);
    assert!(r.every_row_holds(&["17441", "17443", "17444"]));
    for (exclude, include) in [
        ("--exclude-process-name", "--include-process-name"),
        ("--exclude-thread-name", "--include-thread-name"),
    ] {
        assert!(report(PIDS, &["--sort", "comm", exclude, "t1"]).every_row_holds(&["simpleperf"]));
        assert!(report(PIDS, &["--sort", "comm", include, "t1"]).every_row_holds(&["t1"]));
    }
    for option in ["--pids", "--tids"] {
        let r = report_in(PIDS, Some(simpleperf_testdata()), &[option, "2,bogus"]);
        assert_ne!(r.code, 0);
        assert!(r.err.contains("bogus"), "{}", r.err);
    }
}

#[test]
fn name_filters() {
    let all = report("perf.data", &["--sort", "comm"]);
    assert!(!all.every_row_holds(&["t1"]) && !all.every_row_holds(&["t1", "t2"]));
    assert!(report("perf.data", &["--sort", "comm", "--comms", "t1"]).every_row_holds(&["t1"]));
    assert!(report("perf.data", &["--sort", "comm", "--comms", "t1,t2"]).every_row_holds(&["t1", "t2"]));
    let all = report("perf.data", &["--sort", "dso"]);
    assert!(!all.every_row_holds(&["/t1"]) && !all.every_row_holds(&["/t1", "/t2"]));
    assert!(report("perf.data", &["--sort", "dso", "--dsos", "/t1"]).every_row_holds(&["/t1"]));
    assert!(report("perf.data", &["--sort", "dso", "--dsos", "/t1,/t2"]).every_row_holds(&["/t1", "/t2"]));
    let f = "perf_with_symbols.data";
    let func2 = "func2(int, int)";
    let all = report(f, &["--sort", "symbol"]);
    assert!(!all.every_row_holds(&[func2]) && !all.every_row_holds(&["main", func2]));
    assert!(report(f, &["--sort", "symbol", "--symbols", func2]).every_row_holds(&[func2]));
    let both = report(f, &["--sort", "symbol", "--symbols", "main;func2(int, int)"]);
    assert!(both.every_row_holds(&["main", func2]));
}

#[test]
fn dso_and_symbol_filters_select_layers_of_the_call_chain() {
    let f = "perf_display_bitmaps.data";
    let libart = "/apex/com.android.runtime/lib64/libart.so";
    let r = report(f, &["--dsos", libart, "--children", "--raw-period", "--sort", "dso"]);
    assert!(r.text.contains(&format!("63500000  43250000  {libart}")), "{}", r.text);
    let r = report(f, &["--symbols", "MterpInvokeVirtual", "--children", "--raw-period", "--sort", "symbol"]);
    assert!(r.text.contains("51500000  2500000  MterpInvokeVirtual"), "{}", r.text);
}

#[test]
fn branch_stacks_name_both_ends() {
    let r = report("perf_b.data", &["-b", "--sort", "symbol_from,symbol_to"]);
    let lines = r.lines();
    let title = lines.iter().position(|l| l.contains("Overhead")).expect("a title");
    let pairs: std::collections::HashSet<(&str, &str)> = lines[title + 1..]
        .iter()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            Some((*cells.get(1)?, *cells.get(2)?))
        })
        .collect();
    assert!(pairs.contains(&("GlobalFunc", "CalledFunc")), "{}", r.text);
    assert!(pairs.contains(&("CalledFunc", "GlobalFunc")), "{}", r.text);
    // Each of the 150 samples' 16 branches is a sample of the branch report.
    assert_eq!(r.samples(), 2400, "{}", r.text);
    let r = report_in("perf_b.data", None, &["--sort", "symbol_from"]);
    assert_ne!(r.code, 0);
    assert!(r.err.contains("with -b only"), "{}", r.err);
}

#[test]
fn two_events_get_a_section_each() {
    let t = report("perf_with_two_event_types.data", &[]).text;
    // Each in turn, after the one before.
    let mut at = 0;
    for word in ["cpu-cycles", "Samples:", "cpu-clock", "Samples:"] {
        at += t[at..].find(word).unwrap_or_else(|| panic!("no {word} after byte {at}: {t}")) + word.len();
    }
}

#[test]
fn symbols_stored_in_the_recording() {
    assert!(report("perf_with_symbols.data", &[]).text.contains("main"));
    assert!(report("perf_with_symbols_for_nonzero_minvaddr_dso.data", &[]).text.contains("memcpy"));
    let both = report("perf_with_symbols.data", &["--symfs", simpleperf_testdata().to_str().unwrap()]);
    assert!(both.text.contains("main"));
}

#[test]
fn symbol_folders_and_no_symfs() {
    let r = report_in("perf.data", None, &["--symdir", simpleperf_testdata().to_str().unwrap()]);
    assert!(r.text.contains("GlobalFunc"), "{}", r.err);
    assert_eq!(report_in("perf.data", None, &[]).code, 0);
}

#[test]
fn build_ids_are_checked() {
    let data = simpleperf_testdata().join("data");
    let right =
        report_in("perf_for_build_id_check.data", Some(data.join("correct_symfs_for_build_id_check")), &[]);
    assert!(right.text.contains("main"), "{}", right.err);
    let wrong =
        report_in("perf_for_build_id_check.data", Some(data.join("wrong_symfs_for_build_id_check")), &[]);
    assert_eq!(wrong.code, 0, "{}", wrong.err);
    assert!(!wrong.text.contains("main"), "{}", wrong.text);
    assert!(wrong.err.contains("build id mismatch"), "{}", wrong.err);
}

#[test]
fn unknown_symbols_show_their_address_unless_told_not_to() {
    assert!(!report("perf.data", &[]).text.contains("unknown"));
    assert!(report("perf.data", &["--no-show-ip"]).text.contains("unknown"));
}

#[test]
fn other_recorders_and_broken_files() {
    assert!(report("generated_by_linux_perf.data", &[]).lines().len() > 2);
    assert_ne!(report_in("invalid_perf.data", None, &[]).code, 0);
}

#[test]
fn max_stack_limits_the_printed_call_graph_and_percent_limit_its_nodes() {
    let f = "perf_test_max_stack_and_percent_limit.data";
    let has = |args: &[&str]| report(f, &[&["-g"], args].concat()).text.contains("89.03");
    assert!(has(&[]));
    assert!(!has(&["--max-stack", "0"]));
    assert!(has(&["--max-stack", "2"]));
    assert!(!has(&["--percent-limit", "90"]));
    assert!(has(&["--percent-limit", "70"]));
    // The depth is of the printed graph: the shares stay those of the whole stacks.
    let first_row = |args: &[&str]| report(f, &[&["-g"], args].concat()).lines()[6].to_string();
    assert_eq!(first_row(&["--max-stack", "0"]), first_row(&[]));
}

#[test]
fn percent_limit_hides_small_entries() {
    let t = report("perf.data", &[]).text;
    assert!(t.contains("7.70%") && t.contains("3.23%"), "{t}");
    let t = report("perf.data", &["--percent-limit", "3.24"]).text;
    assert!(t.contains("7.70%") && !t.contains("3.23%"), "{t}");
}

#[test]
fn kallsyms_and_raw_periods() {
    let kallsyms = simpleperf_testdata().join("kallsyms");
    assert!(report("perf.data", &["--kallsyms", kallsyms.to_str().unwrap()])
        .text
        .contains("FakeKernelSymbol"));
    let t = report("perf.data", &["--raw-period"]).text;
    assert!(t.contains("GlobalFunc") && !t.contains('%'), "{t}");
}

#[test]
fn csv_columns_and_separator() {
    assert!(report("perf.data", &["--csv"]).text.contains("EventCount,EventName"));
    let t = report("perf_g_fp.data", &["--children", "--csv"]).text;
    assert!(t.contains("AccEventCount,SelfEventCount,EventName"), "{t}");
    let t = report("perf.data", &["--csv", "--csv-separator", ";"]).text;
    assert!(t.contains("EventCount;EventName") && t.contains(";cpu-cycles"), "{t}");
}

#[test]
fn jit_code() {
    assert!(report("perf_with_jit_symbol.data", &["--sort", "dso"]).text.contains("[JIT app cache]"));
    assert!(report("perf_with_jit_symbol.data", &["--dsos", "[JIT app cache]"])
        .text
        .contains("[JIT app cache]"));
    let t = report("perf_with_generic_git_symbols.data", &["--sort", "symbol"]).text;
    assert!(t.contains("generic_jit_symbol_one"), "{t}");
}

#[test]
fn cpu_filters() {
    assert_eq!(report("perf.data", &[]).samples(), 2409);
    assert_eq!(report("perf.data", &["--cpu", "2"]).samples(), 603);
    assert_eq!(report("perf.data", &["--cpu", "2-6,16"]).samples(), 1806);
    assert_eq!(report("perf.data", &["--cpu", "2-6", "--cpu", "16"]).samples(), 1806);
    assert_ne!(report_in("perf.data", None, &["--cpu", "-2"]).code, 0);
}

/// Whether a line holds these cells, in order, with only blanks between them.
fn has_cells(t: &str, cells: &[&str]) -> bool {
    t.lines().any(|l| {
        let words: Vec<&str> = l.split_whitespace().collect();
        words.windows(cells.len()).any(|w| w == cells)
    })
}

#[test]
fn event_counts_per_counter() {
    let t = report("perf.data", &["--print-event-count"]).text;
    assert!(has_cells(&t, &["325005586", "elf", "26083", "26083", "/elf", "GlobalFunc"]), "{t}");
    let f = "perf_with_add_counter.data";
    let t = report(f, &["--print-event-count"]).text;
    assert!(has_cells(&t, &["EventCount_cpu-cycles", "EventCount_instructions"]), "{t}");
    let dl_addr = t.lines().find(|l| l.contains("_dl_addr")).expect("_dl_addr");
    assert!(has_cells(dl_addr, &["175099", "140443", "sleep", "689664", "689664"]), "{t}");
    let t = report(f, &["--print-event-count", "--children"]).text;
    let titles = ["AccEventCount_cpu-cycles", "SelfEventCount_cpu-cycles"];
    assert!(has_cells(
        &t,
        &[&titles[..], &["AccEventCount_instructions", "SelfEventCount_instructions"]].concat()
    ));
    let dl_addr = t.lines().find(|l| l.contains("_dl_addr")).expect("_dl_addr");
    assert!(has_cells(dl_addr, &["175099", "175099", "140443", "140443", "sleep", "689664"]), "{t}");
    let start = t.lines().find(|l| l.contains("__libc_start_main")).expect("__libc_start_main");
    assert!(has_cells(start, &["366116", "0", "297474", "0", "sleep", "689664"]), "{t}");
}

#[test]
fn filter_files_and_their_clock() {
    let dir = scratch("simpleperf_checks_filter");
    let file = dir.join("filter");
    std::fs::write(&file, "GLOBAL_BEGIN 684943449406175\nGLOBAL_END 684943449406176").unwrap();
    let f = file.to_str().unwrap();
    assert_eq!(report("perf_display_bitmaps.data", &["--filter-file", f]).samples(), 1);
    // perf.data's timestamps are of perf's clock; the file's, of the monotonic clock.
    let r = report_in("perf.data", None, &["--filter-file", f]);
    assert_ne!(r.code, 0);
    assert!(r.err.contains("monotonic clock") && r.err.contains("perf clock"), "{}", r.err);
    std::fs::write(&file, "CLOCK perf\nGLOBAL_BEGIN 0\n").unwrap();
    assert_eq!(report("perf.data", &["--filter-file", f]).samples(), 2409);
}

/// Off-CPU time as simpleperf's newer report library weighs it: on-CPU samples keep their
/// period, a switch-out sample weighs the time until its thread's next sample (this recording
/// has no switch records). The library gives the same samples (2,367, 1,641,010,159 ns) and
/// SleepFunction's 43.71% of them; the shared simpleperf's report, which weighs every sample by
/// the time to the next one, prints 38.76% (README, "Differences kept on purpose").
#[test]
fn off_cpu_time() {
    let r = report("perf_with_trace_offcpu.data", &["--children"]);
    assert!(r.text.contains("Samples: 2367\nTime in ns: 1641010159\n"), "{}", r.text);
    let line = r.lines().into_iter().find(|l| l.contains("SleepFunction")).expect("SleepFunction");
    let share: f64 = line.split('%').next().unwrap().parse().unwrap();
    assert!((share - 43.71).abs() <= 0.011, "{line}");
}
