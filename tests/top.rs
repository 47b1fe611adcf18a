//! `rperf top` in a real terminal: tmux runs it, send-keys presses its keys and capture-pane
//! reads the screen.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// One `rperf top` at a time: each refreshes by reading its whole recording, and three at once
/// on two cores answer keys late.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn tmux(args: &[&str]) -> std::process::Output {
    Command::new("tmux")
        .args(args)
        .output()
        .expect("tmux is needed (apt-get install tmux; the test command does)")
}

fn screen(session: &str) -> String {
    String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", session]).stdout).into_owned()
}

/// Waits up to `within` for the screen to satisfy `ok`; returns the last screen.
fn wait_for(session: &str, within: Duration, ok: impl Fn(&str) -> bool) -> String {
    let end = Instant::now() + within;
    loop {
        let s = screen(session);
        if ok(&s) || Instant::now() >= end {
            return s;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The first row of the table (after the header line and the column titles).
fn top_row(s: &str) -> String {
    s.lines().skip_while(|l| !l.starts_with("Overhead")).nth(1).unwrap_or_default().to_string()
}

#[test]
fn the_hot_function_tops_the_table_and_keys_work() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let session = format!("rperf-top-{}", std::process::id());
    let rperf = env!("CARGO_BIN_EXE_rperf");
    let workload = programs().workload_fp.display().to_string();
    let cmd = format!("{rperf} top --refresh 0.5 -- {workload} 30 1");
    let o = tmux(&["new-session", "-d", "-s", &session, "-x", "160", "-y", "40", &cmd]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Within three refreshes of the first samples.
    let first =
        wait_for(&session, Duration::from_secs(10), |s| s.contains(" samples") && !s.contains(": 0 samples"));
    assert!(first.contains("rperf top:"), "{first}");
    let s = wait_for(&session, Duration::from_millis(1600), |s| top_row(s).ends_with("hot_loop"));
    assert!(top_row(&s).ends_with("hot_loop"), "top row: {s}");
    // Pause freezes the sample count; d zooms into the selected row's binary; z zooms out.
    tmux(&["send-keys", "-t", &session, "p"]);
    let paused = wait_for(&session, Duration::from_secs(2), |s| s.contains("[paused]"));
    let count = |s: &str| {
        s.lines().next().unwrap_or_default().split_whitespace().nth(2).unwrap_or_default().to_string()
    };
    std::thread::sleep(Duration::from_millis(1200));
    assert_eq!(count(&screen(&session)), count(&paused), "paused, the table stays");
    tmux(&["send-keys", "-t", &session, "p"]);
    tmux(&["send-keys", "-t", &session, "d"]);
    let zoomed = wait_for(&session, Duration::from_secs(3), |s| s.contains("zoom: binary"));
    assert!(zoomed.contains(&format!("zoom: binary {workload}")), "{zoomed}");
    tmux(&["send-keys", "-t", &session, "q"]);
    let end = Instant::now() + Duration::from_secs(5);
    while tmux(&["has-session", "-t", &session]).status.success() {
        assert!(Instant::now() < end, "q did not quit: {}", screen(&session));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs `rperf top ARGS` in a terminal `width` columns wide until `ok` holds for its screen
/// (or 15 s pass), quits it and returns the last screen.
fn top_screen(args: &str, width: u32, ok: impl Fn(&str) -> bool) -> String {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let session = format!("rperf-top-{}-{width}", std::process::id());
    let cmd = format!("{} top --refresh 0.5 {args}", env!("CARGO_BIN_EXE_rperf"));
    let o = tmux(&["new-session", "-d", "-s", &session, "-x", &width.to_string(), "-y", "40", &cmd]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = wait_for(&session, Duration::from_secs(15), ok);
    tmux(&["send-keys", "-t", &session, "q"]);
    std::thread::sleep(Duration::from_millis(500));
    tmux(&["kill-session", "-t", &session]);
    s
}

/// The table's rows.
fn table(s: &str) -> Vec<&str> {
    s.lines()
        .skip_while(|l| !l.starts_with("Overhead"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

#[test]
fn dwarf_call_graphs_and_rows_that_fit_a_narrow_terminal() {
    let workload = programs().workload.display().to_string();
    // `-g dwarf` is the call-graph mode, not the command; DWARF unwinding finds the caller.
    let callers = |s: &str| s.split("Callers of the selected row:").nth(1).unwrap_or_default().to_string();
    let s = top_screen(&format!("-F 200 -g dwarf -- {workload} 30 1"), 30, |s| {
        table(s).first().is_some_and(|r| r.contains(" workload ")) && callers(s).contains("compute_inner")
    });
    // hot_loop's row is cut to the terminal's 30 columns, not wrapped onto the next line.
    let first = table(&s).first().copied().unwrap_or_default();
    assert!(first.contains(" workload ") && first.ends_with('…'), "{s}");
    assert!(callers(&s).contains("compute_inner"), "the caller of hot_loop:\n{s}");
    for r in table(&s) {
        assert!(r.split_whitespace().next().is_some_and(|p| p.ends_with('%')), "a wrapped row in:\n{s}");
        assert!(r.chars().count() <= 30, "{r}");
    }
}

#[test]
fn kernel_frames_are_named() {
    let named_kernel_row = |s: &str| {
        table(s).iter().any(|r| {
            let cells: Vec<&str> = r.split_whitespace().collect();
            cells.get(1) == Some(&"[kernel.kallsyms]") && cells.get(2).is_some_and(|f| !f.starts_with('['))
        })
    };
    let s = top_screen("-- dd if=/dev/zero of=/dev/null bs=512 count=400000000", 120, named_kernel_row);
    assert!(named_kernel_row(&s), "no kernel function named:\n{s}");
}
