//! The writer's rounds: records leave in time order, and samples are counted as written.

use super::PerfDataWriter;
use crate::sys::record_type;
use rperf_perfdata::encode::{put_header, put_u64};

/// A record of `type_` whose body is `tag`.
fn record(type_: u32, tag: u64) -> Vec<u8> {
    let mut r = Vec::new();
    put_header(&mut r, type_, 0, 16);
    put_u64(&mut r, tag);
    r
}

/// (type, tag) of each record of the data section of the file at `path`.
fn data_records(path: &std::path::Path) -> Vec<(u32, u64)> {
    let bytes = std::fs::read(path).unwrap();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (offset, size) = (word(40), word(48));
    let data = &bytes[offset..offset + size];
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let size = u16::from_le_bytes([data[at + 6], data[at + 7]]) as usize;
        let type_ = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
        let tag = if size >= 16 { word(offset + at + 8) as u64 } else { 0 };
        out.push((type_, tag));
        at += size;
    }
    out
}

#[test]
fn each_round_is_written_in_time_order() {
    let dir = std::env::temp_dir().join(format!("rperf-writer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("rounds.data");
    let mut w = PerfDataWriter::create(&path, &[]).unwrap();
    // A round out of order (two rings drained one after the other), then one in order.
    for (t, type_) in [(5, record_type::SAMPLE), (3, record_type::COMM), (4, record_type::SAMPLE)] {
        w.write_record_at(&record(type_, t), Some(t)).unwrap();
    }
    w.finish_round().unwrap();
    for (t, type_) in [(6, record_type::FORK), (7, record_type::SAMPLE), (8, record_type::SAMPLE)] {
        w.write_record_at(&record(type_, t), Some(t)).unwrap();
    }
    w.finish_round().unwrap();
    w.write_record_at(&record(record_type::SAMPLE, 9), Some(9)).unwrap();
    w.finish_round().unwrap();
    let round = rperf_perfdata::encode::FINISHED_ROUND;
    let (sample, comm, fork) = (record_type::SAMPLE, record_type::COMM, record_type::FORK);
    let expected = [(comm, 3), (sample, 4), (sample, 5), (round, 0)]
        .into_iter()
        .chain([(fork, 6), (sample, 7), (sample, 8), (round, 0), (sample, 9), (round, 0)])
        .collect::<Vec<_>>();
    assert_eq!(w.samples_written(), 5);
    w.finish(&[], Vec::new()).unwrap();
    w.publish().unwrap();
    assert_eq!(data_records(&path), expected);
    std::fs::remove_dir_all(&dir).ok();
}
