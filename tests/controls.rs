//! Recording controls: `--control fifo:CTL,ACK` pauses and resumes sampling, `--delay` starts it
//! late, `--exclude-perf` leaves rperf's own samples out; the report says how much of the
//! recording was sampled.

mod common;

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

fn sample_times(data: &Path) -> Vec<u64> {
    let o = run(rperf().args(["report", "--format", "json", "-i"]).arg(data));
    assert!(o.status.success(), "{}", stderr(&o));
    let mut t: Vec<u64> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["time"].as_u64().unwrap())
        .collect();
    t.sort_unstable();
    t
}

fn recorded_line(data: &Path) -> String {
    let o = run(rperf().args(["report", "--sort", "comm", "-i"]).arg(data));
    stdout(&o).lines().find(|l| l.starts_with("Recorded: ")).unwrap_or_default().to_string()
}

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

#[test]
fn control_pauses_and_resumes_sampling() {
    let dir = scratch("ctl_pause");
    let (ctl, ack) = (dir.join("ctl"), dir.join("ack"));
    mkfifo(&ctl);
    mkfifo(&ack);
    let data = dir.join("perf.data");
    let control = format!("fifo:{},{}", ctl.display(), ack.display());
    let rec = rperf()
        .args(["record", "-F", "2000", "--control", &control, "-o"])
        .arg(&data)
        .arg("--")
        .arg(&programs().workload_fp)
        .args(["2", "1"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut acks = std::io::BufReader::new(std::fs::File::open(&ack).unwrap());
    // Each command's time of writing and of its ack: sampling stops between the first pair and
    // starts again between the second, however late a busy machine makes either.
    let mut command = |c: &str| {
        let sent = Instant::now();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&ctl)
            .unwrap()
            .write_all(format!("{c}\n").as_bytes())
            .unwrap();
        let mut line = String::new();
        acks.read_line(&mut line).unwrap();
        assert_eq!(line, "ack\n", "{c}");
        (sent, Instant::now())
    };
    std::thread::sleep(Duration::from_millis(400));
    let (off_sent, off_acked) = command("disable");
    std::thread::sleep(Duration::from_millis(700));
    let (on_sent, on_acked) = command("enable");
    let out = rec.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let shortest = (on_sent - off_acked).as_nanos() as u64;
    let longest = (on_acked - off_sent).as_nanos() as u64;
    // The workload ran on the CPU throughout; its samples stop for the pause and only then. A
    // busy machine may keep it off the CPU for a while, never for as long as the pause.
    let t = sample_times(&data);
    let gaps: Vec<u64> = t.windows(2).map(|w| w[1] - w[0]).collect();
    let long: Vec<&u64> = gaps.iter().filter(|&&g| g > shortest / 2).collect();
    assert_eq!(long.len(), 1, "one pause of {shortest}..{longest} ns: {long:?}");
    let slack = 150_000_000;
    assert!(
        *long[0] >= shortest && *long[0] < longest + slack,
        "paused {} ms, the commands {} to {} ms apart",
        long[0] / 1_000_000,
        shortest / 1_000_000,
        longest / 1_000_000
    );
    // The report's sampled time leaves the pause out of the recording's.
    let line = recorded_line(&data);
    let seconds: Vec<f64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    assert_eq!(seconds.len(), 2, "{line}");
    let off = seconds[1] - seconds[0];
    assert!(
        off >= shortest as f64 / 1e9 - 0.01 && off < (longest + slack) as f64 / 1e9,
        "{line}: off {off:.3} s, the commands {shortest} to {longest} ns apart"
    );
}

#[test]
fn delay_starts_sampling_late() {
    let data = scratch("ctl_delay").join("perf.data");
    // The startup phase (0.4 s) ends before sampling starts (0.6 s).
    let o = run(rperf()
        .args(["record", "-F", "2000", "--delay", "600", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&programs().startup)
        .args(["0.4", "0.8"]));
    assert!(o.status.success(), "{}", stderr(&o));
    let o =
        run(rperf().args(["report", "--sort", "symbol", "--short-names", "--csv", "-n", "-i"]).arg(&data));
    let rows = csv_rows(&stdout(&o), ',');
    let n =
        |f: &str| rows.iter().find(|r| r["Symbol"] == f).map_or(0, |r| r["Sample"].parse::<u64>().unwrap());
    assert_eq!(n("startup_phase"), 0, "{rows:?}");
    assert!(n("steady_phase") > 200, "{rows:?}");
    let line = recorded_line(&data);
    assert!(line.starts_with("Recorded: 0.") && line.contains(" of 1."), "{line}");
}

/// Samples per pid of a system-wide DWARF recording made while a workload runs, and rperf's pid.
fn system_wide(name: &str, extra: &[&str]) -> (std::collections::HashMap<String, u64>, u32, u32) {
    let data = scratch(name).join("perf.data");
    let mut work =
        Command::new(&programs().workload_fp).args(["1.5", "2"]).stdout(Stdio::null()).spawn().unwrap();
    // DWARF stacks at 4 kHz keep rperf busy enough to be sampled itself.
    let rec = rperf()
        .args(["record", "-a", "-g", "-F", "4000", "--duration", "1", "-o"])
        .arg(&data)
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let me = rec.id();
    let out = rec.wait_with_output().unwrap();
    work.wait().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let o = run(rperf().args(["report", "--sort", "pid", "--csv", "-n", "-i"]).arg(&data));
    let rows = csv_rows(&stdout(&o), ',');
    (rows.iter().map(|r| (r["Pid"].clone(), r["Sample"].parse().unwrap())).collect(), me, work.id())
}

#[test]
fn exclude_perf_leaves_rperf_out_of_system_wide_recordings() {
    let (by_pid, me, _) = system_wide("ctl_with_perf", &[]);
    assert!(
        by_pid.get(&me.to_string()).is_some_and(|&n| n > 0),
        "rperf is sampled without the flag: {by_pid:?}"
    );
    let (by_pid, me, work2) = system_wide("ctl_exclude", &["--exclude-perf"]);
    assert!(!by_pid.contains_key(&me.to_string()), "rperf's own samples: {by_pid:?}");
    assert!(by_pid.get(&work2.to_string()).is_some_and(|&n| n > 1000), "{by_pid:?}");
}

/// A flood on --control (a 10 MB line, escape sequences) is neither kept nor echoed: the
/// recorder says a line was too long, quotes what it does not know escaped, and still obeys
/// the commands that follow. Names quoted in messages reach the terminal escaped too.
#[test]
fn control_floods_are_bounded_and_nothing_quoted_reaches_the_terminal_raw() {
    let dir = scratch("ctl_flood");
    let ctl = dir.join("ctl");
    mkfifo(&ctl);
    let data = dir.join("perf.data");
    let control = format!("fifo:{}", ctl.display());
    let rec = rperf()
        .args(["record", "--control", &control, "-o"])
        .arg(&data)
        .args(["--", "sleep", "30"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = std::fs::OpenOptions::new().write(true).open(&ctl).unwrap();
    w.write_all(&vec![b'A'; 10 << 20]).unwrap();
    w.write_all(b"\n\x1b[31mred\x1b]0;title\x07\nstop\n").unwrap();
    drop(w);
    let out = rec.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success() || out.status.code() == Some(143), "{err}");
    assert!(err.len() < 4096, "the flood was echoed: {} bytes of stderr", err.len());
    assert!(err.contains("longer than 256 bytes was ignored"), "{err}");
    assert!(err.contains("unknown command '\\x1b[31mred\\x1b]0;title\\x07'"), "{err}");
    assert!(!err.bytes().any(|b| b == 0x1b || b == 0x07), "raw control characters: {err:?}");
    // `stop` was obeyed: sleep 30 did not run to its end.
    assert!(std::fs::metadata(&data).unwrap().len() > 0);
    // A name from outside quoted in a note (an app name given on the command line here; the
    // same path prints comms and file names) is escaped.
    let o = run(rperf()
        .args(["record", "--duration", "0.2", "--app", "\x1b[2Japp\nrperf: error: forged", "-o"])
        .arg(dir.join("app.data")));
    let err = stderr(&o);
    assert!(err.contains("\\x1b[2Japp\\x0arperf: error: forged"), "{err}");
    assert!(!err.bytes().any(|b| b == 0x1b), "{err:?}");
}

/// simpleperf's `--stdio-controls-profiling`, as its app API drives it: `started` once
/// recording runs, `pause` and `resume` answered `ok`, anything else `error`, and the end of
/// stdin ends the recording.
#[test]
fn stdio_controls_pause_resume_and_stop_at_the_end_of_stdin() {
    let dir = scratch("ctl_stdio");
    let data = dir.join("perf.data");
    let mut target = Command::new(&programs().workload_fp).args(["30", "1"]).spawn().unwrap();
    let mut rec = rperf()
        .args(["record", "--stdio-controls-profiling", "-F", "2000", "-p", &target.id().to_string(), "-o"])
        .arg(&data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = rec.stdin.take().unwrap();
    let mut replies = std::io::BufReader::new(rec.stdout.take().unwrap());
    let mut reply = || {
        let mut line = String::new();
        replies.read_line(&mut line).unwrap();
        line
    };
    assert_eq!(reply(), "started\n");
    std::thread::sleep(Duration::from_millis(400));
    for (command, answer) in [("pause", "ok\n"), ("enable", "error\n")] {
        input.write_all(format!("{command}\n").as_bytes()).unwrap();
        assert_eq!(reply(), answer, "{command}");
    }
    std::thread::sleep(Duration::from_millis(700));
    input.write_all(b"resume\n").unwrap();
    assert_eq!(reply(), "ok\n");
    std::thread::sleep(Duration::from_millis(400));
    let closed = std::time::Instant::now();
    drop(input);
    let out = rec.wait_with_output().unwrap();
    target.kill().ok();
    target.wait().ok();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(closed.elapsed() < Duration::from_secs(5), "not stopped by the end of stdin");
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown command 'enable' (pause, resume)"));
    let t = sample_times(&data);
    let long = t.windows(2).filter(|w| w[1] - w[0] > 500_000_000).count();
    assert_eq!(long, 1, "one pause");
}
