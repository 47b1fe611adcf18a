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

/// `data` with `record` inserted into its data section after the record at file offset `after`
/// (the feature sections that follow the data move along).
fn insert_record(data: &[u8], after: usize, record: &[u8]) -> Vec<u8> {
    let u64_at = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap());
    let (start, size) = (u64_at(40) as usize, u64_at(48) as usize);
    let at = after + u16::from_le_bytes([data[after + 6], data[after + 7]]) as usize;
    assert!(at <= start + size);
    let mut out = [&data[..at], record, &data[at..]].concat();
    out[48..56].copy_from_slice(&((size + record.len()) as u64).to_le_bytes());
    let features: u32 = data[72..104].iter().map(|b| b.count_ones()).sum();
    for i in 0..features as usize {
        let entry = start + size + record.len() + 16 * i;
        let offset = u64::from_le_bytes(out[entry..entry + 8].try_into().unwrap());
        out[entry..entry + 8].copy_from_slice(&(offset + record.len() as u64).to_le_bytes());
    }
    out
}

/// What the kernel lost of the side-band ring (mmap, comm, fork, exit records) is not lost
/// samples: an off-CPU report once put such losses on its first section, as if samples were
/// lost. Both counts are said apart, as perf does.
#[test]
fn lost_side_band_records_are_not_lost_samples() {
    let data = record_offcpu("offcpu_lost_sideband", &["--", "sleep", "0.05"]);
    let bytes = std::fs::read(&data).unwrap();
    // The first COMM record comes from the dummy event's ring: its sample-id trailer (pid/tid,
    // time, cpu, identifier) names that ring, and a LOST record there carries the same one.
    let (start, size) = (
        u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize,
        u64::from_le_bytes(bytes[48..56].try_into().unwrap()) as usize,
    );
    let mut at = start;
    let comm = loop {
        assert!(at + 8 <= start + size, "no COMM record");
        let t = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let n = u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
        if t == 3 {
            break at;
        }
        at += n;
    };
    let n = u16::from_le_bytes([bytes[comm + 6], bytes[comm + 7]]) as usize;
    let trailer = &bytes[comm + n - 32..comm + n];
    let id = &trailer[24..32];
    let mut lost = Vec::new();
    lost.extend_from_slice(&2u32.to_le_bytes()); // PERF_RECORD_LOST
    lost.extend_from_slice(&0u16.to_le_bytes());
    lost.extend_from_slice(&(8 + 16 + 32u16).to_le_bytes());
    lost.extend_from_slice(id);
    lost.extend_from_slice(&5000u64.to_le_bytes());
    lost.extend_from_slice(trailer);
    let hurt = data.with_file_name("lost.data");
    std::fs::write(&hurt, insert_record(&bytes, comm, &lost)).unwrap();
    let o = run(rperf().args(["report", "-i"]).arg(&hurt));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("Lost side-band records: 5000"), "{text}");
    assert!(!text.contains("Lost samples"), "{text}");
    assert!(stderr(&o).contains("lost 5000 side-band records"), "{}", stderr(&o));
    // The same report otherwise.
    let clean = stdout(&run(rperf().args(["report", "-i"]).arg(&data)));
    assert_eq!(text.replace("Lost side-band records: 5000 (mmap, comm, fork, exit)\n", ""), clean);
}
