//! `rperf top` in a real terminal: tmux runs it, send-keys presses its keys and capture-pane
//! reads the screen.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

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
