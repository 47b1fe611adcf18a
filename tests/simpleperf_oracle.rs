//! Android's real simpleperf as the oracle: rperf's text report says what simpleperf's says,
//! row for row, on simpleperf's corpus and on recordings simpleperf makes here; and simpleperf
//! reads rperf's recordings with every sample in a binary.
//!
//! The row comparison is `scripts/compare_simpleperf.py` (the same figures README quotes).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// (identical rows, simpleperf's rows, rows naming another alias at the same address, the rows
/// that differ otherwise) of the comparison script.
fn compare(args: &[&str]) -> (u64, u64, u64, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/compare_simpleperf.py");
    let o = run(Command::new("python3")
        .arg(&script)
        .args(["--json", "--rperf", env!("CARGO_BIN_EXE_rperf"), "--simpleperf"])
        .arg(simpleperf())
        .arg("--corpus")
        .arg(simpleperf_testdata())
        .args(args));
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("the script's JSON");
    let mut misses = String::new();
    for r in v["results"].as_array().unwrap() {
        for m in r["misses"].as_array().unwrap().iter().filter(|m| m["alias"] != true) {
            misses += &format!(
                "{} {}\n  simpleperf: {}\n  rperf:      {}\n",
                r["file"], r["options"], m["simpleperf"], m["rperf"]
            );
        }
    }
    (v["identical"].as_u64().unwrap(), v["rows"].as_u64().unwrap(), v["aliases"].as_u64().unwrap(), misses)
}

#[test]
fn corpus_reports_match_simpleperf_row_for_row() {
    let (same, rows, _, misses) = compare(&[]);
    assert!(rows > 3000, "simpleperf printed only {rows} rows");
    // README's figure: 3,442 of 3,715 (the off-CPU recordings weighed on purpose as simpleperf's
    // newer library weighs them: their rows are held by name below).
    assert!(same >= 3442, "{same} of {rows} rows identical; differing:\n{misses}");
    let (same, rows, _, misses) =
        compare(&["--names-only", "--files", "perf_with_trace_offcpu.data,perf_with_trace_offcpu_v2.data"]);
    assert_eq!(same, rows, "off-CPU rows by name; differing:\n{misses}");
}

/// A switch-out sample taken inside execve holds the old program's user addresses: they are
/// named from the old program's mappings, which stay until the new program's replace them, as
/// in simpleperf. (Names only: rperf weighs off-CPU samples as simpleperf's newer library does.)
#[test]
fn samples_inside_execve_name_the_old_programs_frames() {
    let (same, rows, _, misses) = compare(&["--names-only", "--files", "perf_with_trace_offcpu.data"]);
    assert!(rows > 30, "{rows}");
    assert!(!misses.contains(" execve"), "{same} of {rows}:\n{misses}");
}

/// Records `program` with simpleperf (`record` then `fix-meta.py`, as its README says).
fn simpleperf_record(name: &str, call_graph: &str, program: &Path) -> PathBuf {
    let dir = scratch(name);
    let data = dir.join("perf.data");
    let o = run(Command::new(simpleperf())
        .args(["record", "-e", "cpu-clock", "--call-graph", call_graph, "-o"])
        .arg(&data)
        .arg(program)
        .arg("1"));
    assert!(o.status.success(), "{}", stderr(&o));
    let fix = simpleperf().parent().unwrap().join("../fix-meta.py");
    let o = run(Command::new("python3").arg(&fix).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

#[test]
fn fresh_simpleperf_recordings_match_on_every_row_simpleperf_names() {
    let p = programs();
    let fp = simpleperf_record("oracle_fp", "fp", &p.mixed_fp);
    let dwarf = simpleperf_record("oracle_dwarf", "dwarf", &p.mixed);
    let files = format!("{},{}", fp.display(), dwarf.display());
    let (same, rows, aliases, misses) = compare(&["--files", &files, "--symfs", "", "--named-only"]);
    assert!(rows >= 40, "simpleperf named only {rows} rows");
    // Aliases at one address (`log` and `logf64`) are a deliberate difference, see README; how
    // many rows they reach depends on where the samples fell.
    assert!(
        (same + aliases) * 100 >= rows * 95,
        "{same} of {rows} rows identical, {aliases} more name an alias; differing:\n{misses}"
    );
}

#[test]
fn simpleperf_reads_rperf_recordings() {
    let p = programs();
    for (name, cg, program) in
        [("oracle_rperf_fp", "fp", &p.mixed_fp), ("oracle_rperf_dwarf", "dwarf", &p.mixed)]
    {
        let data = scratch(name).join("perf.data");
        let o = run(rperf()
            .args(["record", "-e", "cpu-clock", "--call-graph", cg, "-o"])
            .arg(&data)
            .arg(program)
            .arg("1"));
        assert!(o.status.success(), "{}", stderr(&o));
        let theirs = run(Command::new(simpleperf()).args(["report", "--sort", "dso", "-i"]).arg(&data));
        assert!(theirs.status.success(), "{}", stderr(&theirs));
        let text = stdout(&theirs);
        // Every sample lands in a binary: simpleperf sees the mappings before the samples.
        let unknown: f64 = text
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some("unknown"))
            .filter_map(|l| l.split_whitespace().next()?.trim_end_matches('%').parse::<f64>().ok())
            .sum();
        assert!(unknown < 0.5, "{cg}: simpleperf puts {unknown}% in unknown:\n{text}");
        // And it sees the same binaries with the same shares as rperf.
        let ours = stdout(&run(rperf().args(["report", "--sort", "dso", "-i"]).arg(&data)));
        let rows = |t: &str| -> Vec<String> {
            t.lines()
                .skip_while(|l| !l.starts_with("Overhead"))
                .skip(1)
                .take_while(|l| !l.is_empty())
                .filter(|l| {
                    l.split_whitespace()
                        .next()
                        .is_some_and(|p| p.trim_end_matches('%').parse::<f64>().is_ok_and(|p| p >= 0.5))
                })
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect()
        };
        assert_eq!(rows(&text), rows(&ours), "{cg}: simpleperf:\n{text}\nrperf:\n{ours}");
    }
}

/// (share, function) of each call-graph node of the first entry, in the order printed.
fn graph_nodes(text: &str) -> Vec<(String, String)> {
    text.lines()
        .skip_while(|l| !l.starts_with("Children"))
        .skip(2)
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| {
            let (_, rest) = l.split_once("--")?;
            let (share, name) = rest.split_once("-- ")?;
            Some((share.to_string(), name.trim().to_string()))
        })
        .collect()
}

#[test]
fn call_graph_shares_are_of_the_parent_as_simpleperf_prints_them() {
    let dir = simpleperf_testdata();
    let file = dir.join("perf_test_max_stack_and_percent_limit.data");
    let args = ["report", "-g", "--sort", "symbol", "--symfs"];
    let theirs = stdout(&run(Command::new(simpleperf()).args(args).arg(&dir).arg("-i").arg(&file)));
    let ours = stdout(&run(rperf().args(args).arg(&dir).arg("-i").arg(&file)));
    let (theirs, ours) = (graph_nodes(&theirs), graph_nodes(&ours));
    assert!(theirs.len() >= 10, "{theirs:?}");
    // rperf also gives the entry itself a share (100%) where simpleperf prints none.
    let ours: Vec<_> = ours.into_iter().filter(|(s, _)| s != "100.00%").collect();
    assert_eq!(ours[..10], theirs[..10]);
}

#[test]
fn print_event_count_gives_each_added_counter_as_simpleperf_does() {
    let dir = simpleperf_testdata();
    let file = dir.join("perf_with_add_counter.data");
    let args = ["report", "--print-event-count", "--symfs"];
    let table = |o: std::process::Output| -> Vec<String> {
        stdout(&o)
            .lines()
            .skip_while(|l| !l.starts_with("Overhead"))
            .take_while(|l| !l.is_empty())
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    let theirs = table(run(Command::new(simpleperf()).args(args).arg(&dir).arg("-i").arg(&file)));
    let ours = table(run(rperf().args(args).arg(&dir).arg("-i").arg(&file)));
    assert!(theirs[0].contains("EventCount_cpu-cycles EventCount_instructions"), "{theirs:?}");
    assert!(theirs.len() > 10, "{theirs:?}");
    assert_eq!(ours, theirs);
}

#[test]
fn callers_in_no_mapping_end_the_stack_as_in_simpleperf() {
    let dir = simpleperf_testdata();
    let file = dir.join("wrong_ip_callchain_perf.data");
    let args = ["report", "-g", "--full-callgraph", "--sort", "symbol", "--symfs"];
    let theirs = stdout(&run(Command::new(simpleperf()).args(args).arg(&dir).arg("-i").arg(&file)));
    let ours = stdout(&run(rperf().args(args).arg(&dir).arg("-i").arg(&file)));
    // 20 samples end in a return address outside every mapping; simpleperf counts them as
    // error call chains and shows their stacks without it.
    assert!(theirs.contains("Error Callchains: 20,"), "{theirs}");
    assert_eq!(theirs.matches("unknown").count(), 0);
    assert!(ours.lines().count() > 100, "{ours}");
    assert_eq!(ours.matches("unknown").count(), 0, "{ours}");
    // And says how many, as simpleperf does when call chains are shown.
    let line = |text: &str| text.lines().find(|l| l.starts_with("Error Callchains:")).map(str::to_string);
    assert_eq!(line(&ours), line(&theirs));
    let flat = stdout(&run(rperf().args(["report", "--symfs"]).arg(&dir).arg("-i").arg(&file)));
    assert_eq!(line(&flat), None, "said without call chains");
}

/// The kernel writes a thread's EXIT record early in its exit, and samples of the rest of the
/// exit follow it. rperf gives them to the thread, as perf does; simpleperf forgets the thread
/// at the record and calls them `unknown` (README: where rperf differs on purpose).
#[test]
fn samples_after_a_threads_exit_record_stay_its_own() {
    let data = scratch("after_exit").join("exits.data");
    let churn = "i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i+1)); done";
    let o =
        run(rperf().args(["record", "-a", "-F", "4000", "-o"]).arg(&data).args(["--", "sh", "-c", churn]));
    assert!(o.status.success(), "{}", stderr(&o));
    // Samples of `true` that come after their thread's EXIT record, in time order (perf's).
    let o = run(Command::new("perf")
        .args(["script", "--show-task-events", "-F", "comm,pid,tid,event", "-i"])
        .arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut exited = std::collections::HashSet::new();
    let (mut after_exit, mut samples) = (0, 0);
    for line in stdout(&o).lines() {
        let toks: Vec<&str> = line.split_whitespace().collect();
        let Some(tid) =
            toks.iter().find_map(|t| t.split_once('/').and_then(|(_, tid)| tid.parse::<u32>().ok()))
        else {
            continue;
        };
        if line.contains("PERF_RECORD_EXIT") {
            exited.insert(tid);
        } else if line.contains("PERF_RECORD_") {
            exited.remove(&tid);
        } else {
            samples += 1;
            after_exit += usize::from(exited.contains(&tid) && toks.first() == Some(&"true"));
        }
    }
    assert!(after_exit >= 10, "only {after_exit} samples of `true` after an EXIT record: nothing to check");
    // Their share, in percent. Threads no record names at all are `unknown` to every reader.
    let after_exit_pct = 100.0 * after_exit as f64 / samples as f64;
    let shares = |text: &str| -> Vec<(String, f64)> {
        text.lines()
            .filter_map(|l| {
                let (share, comm) = l.split_once('%')?;
                Some((comm.trim().to_string(), share.trim().parse().ok()?))
            })
            .collect()
    };
    let o = run(rperf().args(["report", "--sort", "comm", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let ours = shares(&stdout(&o));
    let unknown = |rows: &[(String, f64)]| rows.iter().find(|(c, _)| c == "unknown").map_or(0.0, |r| r.1);
    assert!(
        unknown(&ours) < after_exit_pct / 2.0,
        "{after_exit_pct:.2}% of samples after EXIT records: {ours:?}"
    );
    let perfs = run(Command::new("perf").args(["report", "--stdio", "--sort", "comm", "-i"]).arg(&data));
    let theirs = shares(&stdout(&perfs));
    let true_share = |rows: &[(String, f64)]| rows.iter().find(|(c, _)| c == "true").map_or(0.0, |r| r.1);
    assert!((true_share(&ours) - true_share(&theirs)).abs() < 0.05, "rperf {ours:?}\nperf {theirs:?}");
    let o = run(Command::new(simpleperf()).args(["report", "--sort", "comm", "-i"]).arg(&data));
    let simpleperfs = shares(&stdout(&o));
    assert!(
        unknown(&simpleperfs) >= after_exit_pct / 2.0,
        "simpleperf gave the samples after EXIT records ({after_exit_pct:.2}%) to their threads: {simpleperfs:?}"
    );
}
