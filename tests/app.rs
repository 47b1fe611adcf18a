//! `rperf record --app NAME` with Android's meaning: a process belongs to the app when the file
//! name of the first argument of its command line is NAME or starts with `NAME:`, as simpleperf
//! finds an app's processes. Processes are started under the
//! app's name (as `exec -a` does), the way Android names an app's processes.

mod common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStderr, Command, Stdio};

use common::*;

/// Starts `program args` with its first argument set to `name`.
fn start_as(name: &str, program: &Path, args: &[&str]) -> Child {
    Command::new(program).arg0(name).args(args).stdout(Stdio::piped()).spawn().unwrap()
}

/// Starts `rperf record --app NAME ARGS -o DATA` and returns once it says it is waiting.
fn record_app(name: &str, data: &Path, args: &[&str]) -> (Child, BufReader<ChildStderr>, String) {
    let mut rec = rperf()
        .args(["record", "--app", name, "-g", "fp", "-F", "2000", "-o"])
        .arg(data)
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(rec.stderr.take().unwrap());
    let mut seen = String::new();
    let waiting = format!("waiting for app {name} to start (Ctrl-C to stop)");
    while !seen.contains(&waiting) {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "rperf ended early: {seen}");
        seen.push_str(&line);
    }
    (rec, err, seen)
}

/// Samples per pid in a recording.
fn samples_by_pid(data: &Path) -> std::collections::HashMap<i32, u64> {
    let o = run(rperf().args(["report", "--sort", "pid", "-n", "--csv", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    csv_rows(&stdout(&o), ',')
        .iter()
        .map(|r| (r["Pid"].parse().unwrap(), r["Sample"].parse().unwrap()))
        .collect()
}

#[test]
fn only_the_named_app_and_its_extra_processes_are_recorded() {
    let p = programs();
    let dir = scratch("app_names");
    let data = dir.join("perf.data");
    // An app whose name shares its first 15 bytes with the one recorded.
    let mut other = start_as("com.example.myanotherapp", &p.workload_fp, &["2.5", "1"]);
    let (mut rec, mut err, mut seen) = record_app("com.example.myapp", &data, &["--duration", "1.5"]);
    let mut app = start_as("com.example.myapp", &p.workload_fp, &["1", "1"]);
    let mut remote = start_as("com.example.myapp:remote", &p.workload_fp, &["1", "1"]);
    // A program started by its path: simpleperf matches the file name.
    let mut pathed = start_as("./build/com.example.myapp", &p.workload_fp, &["1", "1"]);
    let mut second_other = start_as("com.example.myapp2", &p.workload_fp, &["1", "1"]);
    for c in [&mut app, &mut remote, &mut pathed, &mut second_other] {
        c.wait().unwrap();
    }
    std::io::Read::read_to_string(&mut err, &mut seen).unwrap();
    assert!(rec.wait().unwrap().success(), "{seen}");
    other.kill().ok();
    other.wait().ok();
    let by_pid = samples_by_pid(&data);
    let count = |c: &Child| by_pid.get(&(c.id() as i32)).copied().unwrap_or(0);
    assert!(count(&app) > 200, "the app: {by_pid:?}\n{seen}");
    assert!(count(&remote) > 200, "its :remote process: {by_pid:?}\n{seen}");
    assert!(count(&pathed) > 200, "./build/com.example.myapp: {by_pid:?}\n{seen}");
    assert_eq!(count(&other), 0, "com.example.myanotherapp was recorded: {by_pid:?}");
    assert_eq!(count(&second_other), 0, "com.example.myapp2 was recorded: {by_pid:?}");
}

#[test]
fn the_startup_of_an_app_is_recorded_and_recording_stops_when_it_exits() {
    let p = programs();
    let dir = scratch("app_startup");
    let data = dir.join("perf.data");
    let name = "com.example.startup";
    let (mut rec, mut err, mut seen) = record_app(name, &data, &[]);
    let app = start_as(name, &p.startup, &["0.2", "0.6"]);
    let out_pid = app.id();
    let out = app.wait_with_output().unwrap();
    // The app says how long each phase took, then the CPU time each used: the work each did
    // (on a busy machine, less than its time), then the CPU time it had used when main() began.
    let phases: Vec<f64> =
        String::from_utf8_lossy(&out.stdout).split_whitespace().map(|x| x.parse().unwrap()).collect();
    let (startup_work, steady_work, before_main) = (phases[2], phases[3], phases[4]);
    // No --duration and no signal: rperf stops because the app exited.
    std::io::Read::read_to_string(&mut err, &mut seen).unwrap();
    assert!(rec.wait().unwrap().success(), "{seen}");
    assert!(seen.contains(&format!("every process of app {name} exited; recording stopped")), "{seen}");
    // rperf says how much CPU time the app had used when its events were open; on a busy
    // machine it may get to run late. The startup work it could see is what came after that,
    // and it must have seen some.
    let attached_after = seen
        .split_once(&format!("attached to pid {} of app {name}, after ", out_pid))
        .and_then(|(_, rest)| rest.split_once(" ms of its CPU time"))
        .map(|(ms, _)| ms.parse::<f64>().unwrap() / 1e3)
        .unwrap_or_else(|| panic!("no attach note with the app's CPU time: {seen}"));
    let missed = (attached_after - before_main).max(0.0);
    assert!(missed < startup_work, "attached after {missed:.3} s of the {startup_work:.3} s startup: {seen}");
    let work_share = (startup_work - missed) / (startup_work + steady_work - missed);
    let o =
        run(rperf().args(["report", "--sort", "symbol", "--short-names", "-n", "--csv", "-i"]).arg(&data));
    let rows = csv_rows(&stdout(&o), ',');
    let n =
        |f: &str| rows.iter().find(|r| r["Symbol"] == f).map_or(0.0, |r| r["Sample"].parse::<f64>().unwrap());
    let (startup, steady) = (n("startup_phase"), n("steady_phase"));
    // A cpu-clock sample per 0.5 ms of the app's CPU time (-F 2000): on a busy machine the app
    // gets less of it in its wall time, and so fewer samples.
    let seen_work = startup_work + steady_work - missed;
    let sampled = startup + steady;
    assert!(
        sampled >= 30.0 && sampled >= 0.4 * seen_work * 2000.0,
        "{seen_work:.3} s of work seen: {rows:?}"
    );
    let sample_share = startup / sampled;
    // Within three standard deviations of sampling so many, and never closer than 5 points.
    let tolerance = (3.0 * (work_share * (1.0 - work_share) / sampled).sqrt()).max(0.05);
    assert!(
        (sample_share - work_share).abs() < tolerance,
        "startup: {:.1}% of the samples, {:.1}% of the work seen ({missed:.3} s missed)",
        100.0 * sample_share,
        100.0 * work_share
    );
}
