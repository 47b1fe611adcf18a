//! `rperf stat` and `rperf list` on real programs, compared with `perf stat`.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;

/// event -> value from perf-style CSV lines (`value,unit,event,...`).
fn csv_values(text: &str) -> std::collections::HashMap<String, String> {
    text.lines()
        .filter(|l| l.matches(',').count() >= 4)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].to_string(), f[0].to_string())
        })
        .collect()
}

#[test]
fn counts_match_perf_stat() {
    // perf and rperf count in the same run, so a busy machine weighs on both alike: perf counts
    // rperf and the workload it launches, rperf counts the workload. Their difference is
    // rperf's own share, which is small.
    let p = programs();
    let events = "task-clock,page-faults,context-switches";
    // CPU work, then 200 MiB touched: enough of each that rperf's own share is small.
    let work = format!("{} 0 2 0 400 && perl -e '$x = \"a\" x (200 << 20)'", p.workload.display());
    let o = run(Command::new("perf")
        .args(["stat", "-x,", "-o", "/dev/stdout", "-e", events, "--"])
        .arg(env!("CARGO_BIN_EXE_rperf"))
        .args(["stat", "--csv", "-e", events, "--", "sh", "-c", &work]));
    assert!(o.status.success(), "{}", stderr(&o));
    let perf = csv_values(&stdout(&o));
    let mine = csv_values(&stderr(&o));
    for ev in ["task-clock", "page-faults"] {
        let a: f64 = mine[ev].parse().unwrap();
        let b: f64 = perf[ev].parse().unwrap();
        assert!(a <= b && a >= 0.9 * b, "{ev}: rperf {a}, perf (rperf included) {b}");
    }
    assert!(mine.contains_key("context-switches"));
}

#[test]
fn hardware_events_without_a_pmu_are_not_supported_but_do_not_fail() {
    let o = run(rperf().args(["stat", "-e", "cpu-cycles,instructions,task-clock", "--", "true"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    if has_pmu() {
        assert!(!e.contains("<not supported>"), "{e}");
    } else {
        assert_eq!(e.matches("<not supported>").count(), 2, "{e}");
    }
    assert!(
        e.contains("msec task-clock") && e.contains("seconds time elapsed") && e.contains("seconds user"),
        "{e}"
    );
}

#[test]
fn interval_blocks() {
    let o = run(rperf().args(["stat", "-a", "-e", "task-clock", "--interval", "100", "--duration", "1"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let blocks = stderr(&o).lines().filter(|l| l.contains("task-clock") && !l.starts_with('#')).count();
    assert!((9..=11).contains(&blocks), "{blocks} blocks:\n{}", stderr(&o));
}

#[test]
fn per_thread_lists_each_thread() {
    let p = programs();
    let mut child = Command::new(&p.workload).args(["3", "3"]).stderr(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id() as i32;
    let tids: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let o = run(rperf()
        .args(["stat", "-e", "task-clock", "--per-thread", "--duration", "0.3", "-p"])
        .arg(pid.to_string()));
    child.kill().ok();
    child.wait().ok();
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(tids.len(), 3);
    for tid in tids {
        assert!(e.contains(&format!("workload-{tid} ")), "thread {tid} missing:\n{e}");
    }
}

#[test]
fn csv_and_json_parse() {
    let o = run(rperf().args(["stat", "--csv", "-e", "task-clock,page-faults,cpu-cycles", "--", "true"]));
    let text = stderr(&o);
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 3, "{text}");
    for l in &lines {
        assert_eq!(l.split(',').count(), 7, "{l}");
    }
    let o = run(rperf().args(["stat", "--json", "-e", "task-clock,page-faults", "--", "true"]));
    let text = stderr(&o);
    let objs: Vec<serde_json::Value> =
        text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).expect(l)).collect();
    assert_eq!(objs.len(), 2);
    assert_eq!(objs[0]["event"], "task-clock");
    assert!(objs[1]["counter-value"].as_str().unwrap().parse::<f64>().unwrap() > 0.0);
}

#[test]
fn exit_code_and_repeats() {
    let o = run(rperf().args(["stat", "-e", "task-clock", "--", "sh", "-c", "exit 7"]));
    assert_eq!(o.status.code(), Some(7));
    let o = run(rperf().args(["stat", "-r", "3", "-e", "task-clock", "--", "true"]));
    assert!(o.status.success());
    let e = stderr(&o);
    assert!(e.contains("(3 runs)") && e.contains("+-"), "{e}");
}

#[test]
fn list_shows_groups_and_tracepoints() {
    let o = run(rperf().args(["list", "tracepoint"]));
    assert!(o.status.success());
    assert!(stdout(&o).lines().any(|l| l.trim() == "sched:sched_switch"), "{}", stdout(&o));
    let o = run(rperf().arg("list"));
    let text = stdout(&o);
    assert!(text.contains("List of software events:") && text.contains("  cpu-clock\n"), "{text}");
    if !has_pmu() {
        assert!(text.contains("cpu-cycles  # not supported on this machine"), "{text}");
    }
    let o = run(rperf().args(["list", "bogus"]));
    assert!(!o.status.success());
}

#[test]
fn interrupt_prints_the_counts_so_far() {
    let p = programs();
    let child = rperf()
        .args(["stat", "-e", "task-clock", "--"])
        .arg(&p.workload)
        .args(["10", "1"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(600));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let start = std::time::Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(4));
    let e = stderr(&o);
    assert!(e.contains("msec task-clock"), "{e}");
    assert_eq!(o.status.code(), Some(130), "the command's own exit from SIGINT: {e}");
}

#[test]
fn stat_app_waits_for_the_app_and_ends_with_it() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    let mut stat = rperf()
        .args(["stat", "--csv", "-e", "task-clock", "--app", "com.example.statapp"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(stat.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("waiting for app com.example.statapp to start") {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "rperf stat ended early: {seen}");
        seen.push_str(&line);
    }
    // The app starts after rperf: it is counted from its start to its end.
    let app =
        Command::new(&programs().workload_fp).arg0("com.example.statapp").args(["1", "1"]).output().unwrap();
    let cpu: f64 = stderr(&app).trim().strip_prefix("workload: cpu_seconds=").unwrap().parse().unwrap();
    let end = std::time::Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = stat.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < end, "rperf stat did not end with the app");
        std::thread::sleep(Duration::from_millis(50));
    };
    std::io::Read::read_to_string(&mut err, &mut seen).unwrap();
    assert!(status.success(), "{seen}");
    let ms: f64 = csv_values(&seen)["task-clock"].parse().unwrap();
    // The app's main thread and its worker: at least the worker's CPU time.
    assert!(ms >= cpu * 1000.0 * 0.9, "task-clock {ms} ms, the app's worker ran {cpu} s:\n{seen}");
}

#[test]
fn the_output_is_never_written_through_a_link() {
    let dir = scratch("stat_output_link");
    let target = dir.join("target.txt");
    let link = dir.join("counts.txt");
    std::fs::write(&target, "kept").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let o = run(rperf().args(["stat", "-e", "task-clock", "-o"]).arg(&link).args(["--", "true"]));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept");
    // A regular file is written (and truncated first).
    let o = run(rperf().args(["stat", "-e", "task-clock", "-o"]).arg(&target).args(["--", "true"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&target).unwrap().contains("task-clock"));
}
