//! `rperf report --time` (a window of the recording, in every output) and `--format script`
//! (perf script's layout, which other tools import).

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::*;
use serde_json::Value;

fn report(data: &Path, args: &[&str]) -> String {
    let o = run(rperf().arg("report").arg("-i").arg(data).args(args));
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    stdout(&o)
}

fn samples_line(text: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix("Samples: ")).unwrap().parse().unwrap()
}

#[test]
fn a_time_window_counts_the_samples_taken_in_it() {
    let data = record_fp("time_window", &programs().phases, &["before", "1"]);
    let times: Vec<u64> = report(&data, &["--format", "json"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["time"].as_u64().unwrap())
        .collect();
    let first = *times.iter().min().unwrap();
    let count = |from: u64, to: u64| times.iter().filter(|&&t| t >= from && t < to).count() as u64;
    // Seconds after the first sample.
    let want = count(first + 200_000_000, first + 600_000_000);
    // 0.4 s of a 1 s run: a share of the samples the run took, however busy the machine.
    assert!(want >= 20 && want * 10 > times.len() as u64, "{want} of {}", times.len());
    assert_eq!(samples_line(&report(&data, &["--time", "0.2,0.6", "--sort", "comm"])), want);
    // Timestamps of the recording's clock, and open ends.
    let (a, b) = (first + 300_000_000, first + 700_000_000);
    let window = format!("{a}ns,{b}ns");
    assert_eq!(samples_line(&report(&data, &["--time", &window, "--sort", "comm"])), count(a, b));
    assert_eq!(
        samples_line(&report(&data, &["--time", "0.5,", "--sort", "comm"])),
        count(first + 500_000_000, u64::MAX)
    );
    // Every output shows the same window: folded counts sum to it.
    let folded: u64 = report(&data, &["--time", "0.2,0.6", "--format", "folded"])
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(folded, want);
    // Bad windows say what is expected.
    let o = run(rperf().args(["report", "--time", "soon", "-i"]).arg(&data));
    assert!(!o.status.success() && stderr(&o).contains("START,END"), "{}", stderr(&o));
}

/// FlameGraph's stackcollapse-perf.pl, as a test parser: a header line starts a sample (its
/// first word is the command), frame lines give `address symbol (binary)` with an optional
/// `+0xOFFSET`, innermost first; an empty line ends the sample.
fn stackcollapse(script: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let mut comm = String::new();
    let mut frames: Vec<String> = Vec::new();
    let mut flush = |comm: &str, frames: &mut Vec<String>| {
        if comm.is_empty() {
            return;
        }
        let mut stack = vec![comm.to_string()];
        stack.extend(frames.drain(..).rev());
        *out.entry(stack.join(";")).or_insert(0) += 1;
    };
    for line in script.lines() {
        if line.is_empty() {
            flush(&comm, &mut frames);
            comm.clear();
        } else if let Some(frame) = line.strip_prefix('\t') {
            let frame = frame.trim_start();
            let (_, rest) = frame.split_once(' ').unwrap();
            let (sym, _dso) = rest.rsplit_once(" (").unwrap();
            let sym = match sym.rsplit_once("+0x") {
                Some((s, off)) if off.chars().all(|c| c.is_ascii_hexdigit()) => s,
                _ => sym,
            };
            frames.push(sym.replace(';', ":"));
        } else {
            comm = line.split(' ').next().unwrap().to_string();
        }
    }
    flush(&comm, &mut frames);
    out
}

/// Folded stacks with the binary's name of unnamed frames left out, as perf script prints them.
fn folded(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for l in text.lines() {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        let stack: Vec<&str> =
            stack.split(';').map(|f| if f.starts_with("[unknown] (") { "[unknown]" } else { f }).collect();
        *out.entry(stack.join(";")).or_insert(0) += n.parse::<u64>().unwrap();
    }
    out
}

#[test]
fn script_output_collapses_to_the_folded_stacks() {
    let p = programs();
    // Frame pointers with kernel frames, inline frames (inline.cpp), and a JIT recording from
    // a phone whose binary names hold spaces.
    let fp = record_fp("script_fp", &p.inline_cpp, &["1"]);
    let sp = simpleperf_testdata();
    let jit = sp.join("perf_with_jit_symbol.data");
    for (data, extra) in [(&fp, vec![]), (&jit, vec!["--symfs".to_string(), sp.display().to_string()])] {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let mut a = vec!["--format", "script"];
        a.extend(&extra);
        let script = report(data, &a);
        assert!(script.lines().next().unwrap().contains(": "), "{script}");
        let mut a = vec!["--format", "folded"];
        a.extend(&extra);
        assert_eq!(stackcollapse(&script), folded(&report(data, &a)), "{}", data.display());
    }
}
