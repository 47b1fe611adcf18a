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
            Some(((dso.to_string(), sym.to_string()), pct.parse().ok()?))
        })
        .collect()
}

/// The same from `rperf report --sort dso,symbol --csv`.
fn rperf_overheads(data: &Path) -> HashMap<(String, String), f64> {
    let o = run(rperf().args(["report", "--sort", "dso,symbol", "--csv", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut out = HashMap::new();
    for l in stdout(&o).lines().filter(|l| l.contains("%,")) {
        let mut it = l.splitn(3, ',');
        let (Some(pct), Some(dso), Some(sym)) = (it.next(), it.next(), it.next()) else { continue };
        let base = dso.rsplit('/').next().unwrap().to_string();
        let sym = sym.trim_matches('"').replace("\"\"", "\"");
        *out.entry((base, sym)).or_insert(0.0) += pct.trim_end_matches('%').parse::<f64>().unwrap();
    }
    out
}

fn compare_with_perf(data: &Path) {
    let perf = perf_overheads(data);
    let ours = rperf_overheads(data);
    assert!(perf.len() >= 10, "perf's report has {} entries", perf.len());
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
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    // Callee order: hot_loop's callers follow it, innermost first.
    let chain = ["compute_inner", "compute_outer", "run_worker"];
    let pos: Vec<usize> = chain
        .iter()
        .map(|c| lines.iter().position(|l| l.ends_with(c)).unwrap_or_else(|| panic!("{c} missing:\n{text}")))
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(text.contains("main") && (text.contains("start_thread") || text.contains("clone")), "{text}");
    compare_with_perf(&data);
}
