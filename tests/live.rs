//! A live report (`rperf_report::Live`, what `rperf top` shows) of a recording still being
//! written: each look reads only what was added, a record cut by the end of the file waits
//! until it is whole, and once the recording ends its profile is the report's.

mod common;

use std::io::Write;
use std::path::Path;

use common::*;
use rperf_report::{Live, ReportOptions, SortKey};

/// The perf.data header: its size, and where the data section's (offset, size) and the
/// feature bitmap are.
const HEADER_SIZE: usize = 104;
const DATA_AT: usize = 40;
const FEATURES_AT: usize = 72;

fn options(input: &Path) -> ReportOptions {
    ReportOptions {
        input: input.to_path_buf(),
        sort: vec![SortKey::Dso, SortKey::Symbol],
        debuginfod: rperf_report::Debuginfod::Off,
        ..Default::default()
    }
}

/// A profile's samples and top rows' cells.
type Look = (u64, Vec<Vec<String>>);

fn summary(p: &rperf_report::Profile, opts: &ReportOptions) -> Look {
    let t = p.table(opts, 5);
    (t.samples, t.rows.into_iter().map(|r| r.cells).collect())
}

/// Writes `full` to `path` a part at a time, as a recorder still at work leaves it: first
/// its header (with the data section's size a recorder writes as it goes, `size_while`),
/// attributes and the data section up to `cut` (inside a record), then the rest of the data
/// section, then the feature sections and the final header. After each part a live report
/// looks; returns the samples and top rows of each look and of the whole file's report.
fn follow(name: &str, full: &[u8], size_while: impl Fn(u64) -> u64) -> (Vec<Look>, [u64; 3]) {
    let u64_at = |at: usize| u64::from_le_bytes(full[at..at + 8].try_into().unwrap());
    let (data_at, data_size) = (u64_at(DATA_AT), u64_at(DATA_AT + 8));
    let data_end = (data_at + data_size) as usize;
    let cut = data_at as usize + data_size as usize * 2 / 5 + 3;
    let path = scratch(name).join("growing.data");
    // The header while recording: no feature sections yet.
    let with_size = |size: u64| {
        let mut h = full[..HEADER_SIZE].to_vec();
        h[DATA_AT + 8..DATA_AT + 16].copy_from_slice(&size.to_le_bytes());
        h[FEATURES_AT..].fill(0);
        h
    };
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&with_size(size_while(cut as u64 - data_at))).unwrap();
    f.write_all(&full[HEADER_SIZE..cut]).unwrap();
    let opts = options(&path);
    let mut live = Live::open(&opts).expect("a live report of a recording at work");
    let mut looks = Vec::new();
    let records_first = live.update().unwrap();
    looks.push(summary(&live.profile(), &opts));
    f.write_all(&full[cut..data_end]).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &with_size(size_while(data_size)), 0).unwrap();
    let records_second = live.update().unwrap();
    looks.push(summary(&live.profile(), &opts));
    f.write_all(&full[data_end..]).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &full[..HEADER_SIZE], 0).unwrap();
    let records_last = live.update().unwrap();
    looks.push(summary(&live.profile(), &opts));
    drop(f);
    let whole = rperf_report::load(&options(&path)).expect("the finished recording's report");
    looks.push(summary(&whole, &options(&path)));
    (looks, [records_first, records_second, records_last])
}

/// Once the recording ended, the live report says what the report says.
fn check_end(looks: &[Look]) {
    let [.., last, whole] = looks else { panic!("four looks") };
    assert!(whole.0 > 0);
    assert_eq!(last.0, whole.0, "once the recording ended, the live report counts what the report counts");
    assert_eq!(last.1, whole.1, "and shows the same rows");
}

#[test]
fn a_live_report_of_an_rperf_recording_reads_what_is_added() {
    let data = record_fp("live-rperf", &programs().mixed_fp, &[]);
    let full = std::fs::read(&data).unwrap();
    // rperf's recorder writes the data section's size at each flush, and ends a round at
    // each: each look shows more.
    let (looks, records) = follow("live-rperf", &full, |size| size);
    assert!(looks[0].0 > 0, "the first look has samples");
    assert!(looks[0].0 < looks[1].0, "a later look has more: {} then {}", looks[0].0, looks[1].0);
    assert!(records[0] < records[1] && records[1] <= records[2], "records read: {records:?}");
    check_end(&looks);
}

#[test]
fn a_live_report_of_a_perf_recording_waits_for_records_cut_in_two() {
    let dir = scratch("live-perf");
    let data = dir.join("perf.data");
    let o = run(std::process::Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-F", "2000", "-g", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&programs().mixed_fp));
    assert!(o.status.success(), "{}", stderr(&o));
    let full = std::fs::read(&data).unwrap();
    // perf writes it at the end only: until then the data section runs to the end of the
    // file, where a record may be cut in two. The records of a round not ended wait for its
    // end (a recording of one command may have no round marks at all, and all wait).
    let (looks, records) = follow("live-perf", &full, |_| 0);
    assert!(looks[0].0 <= looks[1].0 && records[0] <= records[1] && records[1] < records[2], "{records:?}");
    check_end(&looks);
}
