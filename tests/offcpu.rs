//! Off-CPU profiling: where threads wait, with rperf's recordings and simpleperf's.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

const BLOCKERS: [&str; 3] = [";do_nanosleep;", ";lock_mutex;", ";read_pipe;"];

fn record_offcpu(name: &str, target: &[&str]) -> PathBuf {
    let dir = scratch(name);
    let data = dir.join("off.data");
    let o = run(rperf().args(["record", "--trace-offcpu", "-o"]).arg(&data).args(target));
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

/// Folded off-CPU time (ns) of the sleeper thread: (total, in the known blocking functions).
fn sleeper_blocked_time(data: &Path) -> (u64, u64) {
    let o = run(rperf().args(["report", "--trace-offcpu", "off-cpu", "--format", "folded", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut total = 0;
    let mut known = 0;
    for line in stdout(&o).lines().filter(|l| l.starts_with("sleeper;")) {
        let (stack, weight) = line.rsplit_once(' ').unwrap();
        let w: u64 = weight.parse().unwrap();
        assert!(stack.ends_with(";[off-cpu]"), "off-CPU stacks are marked: {line}");
        total += w;
        if BLOCKERS.iter().any(|b| stack.contains(b)) {
            known += w;
        }
    }
    (total, known)
}

#[test]
fn blocked_time_goes_to_the_blocking_functions() {
    let p = programs();
    let data = record_offcpu("off_blocked", &["--", p.offcpu.to_str().unwrap(), "1"]);
    let (total, known) = sleeper_blocked_time(&data);
    assert!(total > 300_000_000, "the sleeper blocked for {total} ns");
    assert!(known as f64 >= 0.9 * total as f64, "{known} of {total} ns in the blocking functions");
}

#[test]
fn mixed_mode_gives_each_thread_its_wall_time() {
    let p = programs();
    let data = record_offcpu("off_mixed", &["--", p.offcpu.to_str().unwrap(), "1"]);
    let o = run(rperf().args(["report", "--sort", "comm", "--csv", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("Time in ns: "), "{text}");
    let rows = csv_rows(&text, ',');
    let share = |comm: &str| -> f64 {
        pct(&rows.iter().find(|r| r["Command"] == comm).unwrap_or_else(|| panic!("{comm}: {text}"))
            ["Overhead"])
    };
    // Three threads (main, spinner, sleeper) live for the whole run: a third of the time each.
    for comm in ["spinner", "sleeper"] {
        let s = share(comm);
        assert!((s - 100.0 / 3.0).abs() <= 5.0, "{comm}: {s}%\n{text}");
    }
    // On-CPU, the spinner's time is in spin_work.
    let o = run(rperf()
        .args(["report", "--trace-offcpu", "on-cpu", "--sort", "comm,symbol", "--comms", "spinner", "-i"])
        .arg(&data));
    let on = stdout(&o);
    let first = on.lines().find(|l| l.contains('%') && l.contains("spinner")).unwrap();
    assert!(first.ends_with("spin_work"), "{on}");
}

#[test]
fn attach_to_a_running_process() {
    let p = programs();
    let mut child = Command::new(&p.offcpu).arg("3").stdout(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let data = record_offcpu("off_pid", &["-p", &child.id().to_string(), "--duration", "0.7"]);
    child.kill().ok();
    child.wait().ok();
    let (total, known) = sleeper_blocked_time(&data);
    assert!(total > 200_000_000, "the sleeper blocked for {total} ns");
    assert!(known as f64 >= 0.9 * total as f64, "{known} of {total} ns in the blocking functions");
}

#[test]
fn simpleperf_offcpu_recordings_report_in_every_mode() {
    let dir = simpleperf_testdata();
    for file in ["perf_with_trace_offcpu.data", "perf_with_trace_offcpu_v2.data"] {
        for (mode, sections) in [("on-cpu", 1), ("off-cpu", 1), ("on-off-cpu", 2), ("mixed-on-off-cpu", 1)] {
            let o = run(rperf()
                .args(["report", "--trace-offcpu", mode, "--symfs"])
                .arg(&dir)
                .arg("-i")
                .arg(dir.join(file)));
            assert!(o.status.success(), "{file} {mode}: {}", stderr(&o));
            let text = stdout(&o);
            assert_eq!(text.matches("Time in ns: ").count(), sections, "{file} {mode}:\n{text}");
            let time: u64 =
                text.lines().find_map(|l| l.strip_prefix("Time in ns: ")).unwrap().parse().unwrap();
            assert!(time > 0, "{file} {mode}");
        }
    }
    // A recording without switch samples cannot be reported off-CPU.
    let o = run(rperf().args(["report", "--trace-offcpu", "off-cpu", "-i"]).arg(dir.join("perf.data")));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("record it with `rperf record --trace-offcpu`"), "{}", stderr(&o));
}
