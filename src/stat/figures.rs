//! The figures `rperf stat` prints beside its counts, as perf prints them: derived metrics,
//! digit grouping, and the mean and relative standard deviation of repeated runs.

use std::collections::BTreeMap;

/// A figure derived from a count and its peers, perf-style.
pub fn metric(name: &str, value: f64, all: &BTreeMap<String, f64>, seconds: f64) -> Option<(f64, String)> {
    let get = |n: &str| all.get(n).copied().filter(|v| *v > 0.0);
    let base = name.split(':').next().unwrap_or(name);
    match base {
        "task-clock" | "cpu-clock" => Some((value / 1e9 / seconds.max(1e-9), "CPUs utilized".into())),
        "cpu-cycles" => get("task-clock").map(|t| (value / t, "GHz".into())),
        "instructions" => get("cpu-cycles").map(|c| (value / c, "insn per cycle".into())),
        "branch-misses" => {
            get("branch-instructions").map(|b| (100.0 * value / b, "% of all branches".into()))
        }
        "cache-misses" => get("cache-references").map(|c| (100.0 * value / c, "% of all cache refs".into())),
        "stalled-cycles-frontend" => {
            get("cpu-cycles").map(|c| (100.0 * value / c, "% frontend cycles idle".into()))
        }
        "stalled-cycles-backend" => {
            get("cpu-cycles").map(|c| (100.0 * value / c, "% backend cycles idle".into()))
        }
        _ => {
            // Rates are per second of CPU time counted, as perf prints them, when task-clock is
            // there; per second of wall time otherwise.
            let secs = get("task-clock").map_or(seconds, |t| t / 1e9);
            let rate = value / secs.max(1e-9);
            let (v, unit) = if rate >= 1e9 {
                (rate / 1e9, "G/sec")
            } else if rate >= 1e6 {
                (rate / 1e6, "M/sec")
            } else if rate >= 1e3 {
                (rate / 1e3, "K/sec")
            } else {
                (rate, "/sec")
            };
            Some((v, unit.into()))
        }
    }
}

pub fn is_time(name: &str) -> bool {
    matches!(name.split(':').next(), Some("task-clock") | Some("cpu-clock"))
}

/// `v` with `decimals` decimals and its thousands grouped by commas.
pub fn grouped(v: f64, decimals: usize) -> String {
    let s = format!("{v:.decimals$}");
    let (int, frac) = s.split_once('.').map_or((s.as_str(), None), |(a, b)| (a, Some(b)));
    let neg = int.starts_with('-');
    let digits: Vec<char> = int.trim_start_matches('-').chars().collect();
    let mut out = String::new();
    for (i, c) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(*c);
    }
    let mut r = if neg { format!("-{out}") } else { out };
    if let Some(f) = frac {
        r.push('.');
        r.push_str(f);
    }
    r
}

/// Mean and relative standard deviation (percent) of repeated values.
pub fn mean_rsd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n.max(1.0);
    if values.len() < 2 || mean == 0.0 {
        return (mean, 0.0);
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    // Standard deviation of the mean, relative, as perf prints it.
    (mean, 100.0 * (var / n).sqrt() / mean)
}
