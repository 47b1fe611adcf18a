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

fn report(data: &Path, args: &[&str]) -> Vec<u8> {
    let o = run(rperf().arg("report").arg("-i").arg(data).args(args));
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    o.stdout
}

/// The Firefox Profiler's processed format (the gecko output): (weight type, total weight) of
/// all threads' samples.
fn gecko_weights(data: &Path) -> (std::collections::BTreeSet<String>, f64) {
    let g: serde_json::Value = serde_json::from_slice(&report(data, &["--format", "gecko"])).unwrap();
    let mut types = std::collections::BTreeSet::new();
    let mut total = 0.0;
    for t in g["threads"].as_array().unwrap() {
        let s = &t["samples"];
        types.insert(s["weightType"].as_str().unwrap_or("samples").to_string());
        let n = s["length"].as_u64().unwrap() as usize;
        // A missing weight column means 1 per sample (the format's documentation).
        total += (0..n).map(|i| s["weight"].get(i).and_then(|w| w.as_f64()).unwrap_or(1.0)).sum::<f64>();
    }
    (types, total)
}

#[test]
fn gecko_weighs_off_cpu_samples_in_milliseconds() {
    let data = scratch("gecko_offcpu").join("perf.data");
    let o = run(rperf().args(["record", "--trace-offcpu", "-o"]).arg(&data).arg(&programs().offcpu));
    assert!(o.status.success(), "{}", stderr(&o));
    let ns: u64 = String::from_utf8(report(&data, &["--format", "json"]))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["period"].as_u64().unwrap())
        .sum();
    let (types, ms) = gecko_weights(&data);
    assert_eq!(types.into_iter().collect::<Vec<_>>(), ["tracing-ms"]);
    assert!(ns > 0 && (ms - ns as f64 / 1e6).abs() < 1e-6 * ms, "{ms} ms against {ns} ns");
    // A sampled recording counts samples.
    let data = record("gecko_sampled", &[]);
    let (types, count) = gecko_weights(&data);
    let rows = String::from_utf8(report(&data, &["--format", "json"])).unwrap().lines().count();
    assert_eq!((types.into_iter().collect::<Vec<_>>(), count as usize), (vec!["samples".to_string()], rows));
}
