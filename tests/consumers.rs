//! Tools that open rperf's recordings read what they need from them: perf's time features
//! (sample time range, clock id and clock data) for `perf report --time PERCENT` and
//! `perf script -F tod`, with the clock chosen by `record --clockid`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn record(name: &str, args: &[&str]) -> PathBuf {
    let data = scratch(name).join("perf.data");
    let o = run(rperf()
        .args(["record", "-g", "fp", "-F", "2000", "-o"])
        .arg(&data)
        .args(args)
        .arg("--")
        .arg(&programs().phases)
        .args(["before", "1"]));
    assert!(o.status.success(), "{}", stderr(&o));
    data
}

fn perf(args: &[&str], data: &Path) -> String {
    let o = run(Command::new("perf").args(args).arg("-i").arg(data));
    assert!(o.status.success(), "perf {args:?}: {}", stderr(&o));
    stdout(&o)
}

fn shell(cmd: &str) -> String {
    stdout(&run(Command::new("sh").args(["-c", cmd]))).trim().to_string()
}

#[test]
fn perf_reads_the_sample_time_range_and_the_clock() {
    let before = shell("date +%F");
    let data = record("clock_default", &[]);
    let after = shell("date +%F");
    let header = perf(&["report", "--header-only"], &data);
    assert!(header.contains("# time of first sample :"), "{header}");
    assert!(header.contains("# clockid: monotonic (1)"), "{header}");
    // Percent slices of the recording, which need the sample time range: halves add up.
    let count = |time: &str| perf(&["script", "-F", "comm", "--time", time], &data).lines().count();
    let all = perf(&["script", "-F", "comm"], &data).lines().count();
    let (first, second) = (count("0%-50%"), count("50%-100%"));
    assert!(first > 0 && second > 0 && first + second == all, "{first} + {second} of {all}");
    // The time of day of each sample, from the clock data.
    let tod = perf(&["script", "-F", "tod"], &data);
    let day = tod.split_whitespace().next().unwrap_or_default().to_string();
    assert!(day == before || day == after, "perf script -F tod says {day}, today is {before}:\n{tod:.300}");

    // --clockid realtime: sample times are seconds since the epoch.
    let now: f64 = shell("date +%s").parse().unwrap();
    let data = record("clock_realtime", &["--clockid", "realtime"]);
    assert!(perf(&["report", "--header-only"], &data).contains("# clockid: realtime (0)"));
    let first: f64 = perf(&["script", "-F", "time"], &data)
        .split_whitespace()
        .next()
        .and_then(|t| t.trim_end_matches(':').parse().ok())
        .expect("a sample time");
    assert!((first - now).abs() < 600.0, "first sample at {first}, now {now}");
    // rperf reads them too.
    let o = run(rperf().args(["report", "--sort", "comm", "-i"]).arg(&data));
    assert!(o.status.success() && stdout(&o).contains("phases"), "{}", stderr(&o));

    let o = run(rperf()
        .args(["record", "-k", "sundial", "-o"])
        .arg(scratch("clock_bad").join("x.data"))
        .arg("true"));
    assert!(!o.status.success() && stderr(&o).contains("monotonic_raw"), "{}", stderr(&o));
}
