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

/// A writer of a new recording in a folder of its own named `name` (removed by the caller).
fn writer(name: &str) -> (std::path::PathBuf, std::path::PathBuf, PerfDataWriter) {
    let dir = std::env::temp_dir().join(format!("rperf-writer-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("perf.data");
    let w = PerfDataWriter::create(&path, &[]).unwrap();
    (dir, path, w)
}

#[test]
fn each_round_is_written_in_time_order() {
    let (dir, path, mut w) = writer("rounds");
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

#[test]
fn a_large_round_is_written_in_parts_and_the_writer_holds_little() {
    let (dir, path, mut w) = writer("parts");
    // One pass over two rings that hold 8 MiB of 4 KiB samples between them, their times
    // interleaved.
    let sample = |t: u64| {
        let mut r = Vec::new();
        put_header(&mut r, record_type::SAMPLE, 0, 4096);
        put_u64(&mut r, t);
        r.resize(4096, 0);
        r
    };
    let n = 2048u64;
    // What the writer may hold, records and buffers each: a fraction of the round.
    let held = 4 << 20;
    for t in (0..n).map(|i| 2 * i).chain((0..n).map(|i| 2 * i + 1)) {
        w.write_record_at(&sample(t), Some(t)).unwrap();
        assert!(w.round.copied_len() < held, "a round of {} bytes held", w.round.copied_len());
    }
    w.finish_round().unwrap();
    assert!(w.round.capacity() <= 2 * held && w.buf.capacity() <= 2 * held);
    assert_eq!(w.samples_written(), 2 * n);
    w.finish(&[], Vec::new()).unwrap();
    w.publish().unwrap();
    let written = data_records(&path);
    let mut times: Vec<u64> = written.iter().filter(|r| r.0 == record_type::SAMPLE).map(|r| r.1).collect();
    assert_eq!(written.last().map(|r| r.0), Some(rperf_perfdata::encode::FINISHED_ROUND));
    // Each part is in time order; together they hold every record once.
    assert!(times.windows(2).filter(|p| p[1] < p[0]).count() < 8);
    times.sort_unstable();
    assert_eq!(times, (0..2 * n).collect::<Vec<_>>());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn records_left_in_their_rings_are_written_in_time_order_with_the_copied_ones() {
    let (dir, path, mut w) = writer("placed");
    // Two rings' data, as a pass drains them: each in time order, their times interleaved.
    let rings: Vec<Vec<u8>> = [[1u64, 4, 6], [2, 3, 7]]
        .iter()
        .map(|times| times.iter().flat_map(|&t| record(record_type::SAMPLE, t)).collect())
        .collect();
    for (ring, data) in rings.iter().enumerate() {
        for at in (0..data.len()).step_by(16) {
            let rec = &data[at..at + 16];
            let t = u64::from_le_bytes(rec[8..16].try_into().unwrap());
            w.place_record(ring as u32, at, rec, Some(t));
        }
    }
    // A record rewritten on the way (an unwound sample) is copied.
    w.write_record_at(&record(record_type::COMM, 5), Some(5)).unwrap();
    assert_eq!(w.round.copied_len(), 16, "records left in their rings are not copied");
    let data: Vec<&[u8]> = rings.iter().map(Vec::as_slice).collect();
    w.write_round_from(&data, &Default::default()).unwrap();
    assert!(w.round.is_empty());
    w.finish_round().unwrap();
    assert_eq!(w.samples_written(), 6);
    assert_eq!(w.sample_times(), Some((1, 7)));
    w.finish(&[], Vec::new()).unwrap();
    w.publish().unwrap();
    let (sample, comm) = (record_type::SAMPLE, record_type::COMM);
    let expected = [(sample, 1), (sample, 2), (sample, 3), (sample, 4), (comm, 5), (sample, 6), (sample, 7)];
    let written = data_records(&path);
    assert_eq!(written[..7], expected);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn task_records_of_left_out_processes_are_not_written() {
    let (dir, path, mut w) = writer("left_out");
    // Copied and already in time order (written without a sort), then a round to sort: the
    // FORK, COMM, MMAP2 and EXIT records of process 7 go, its sample and process 8's stay.
    let (sample, comm, fork) = (record_type::SAMPLE, record_type::COMM, record_type::FORK);
    let (mmap2, exit) = (record_type::MMAP2, record_type::EXIT);
    let left_out: rustc_hash::FxHashSet<u32> = [7].into_iter().collect();
    for records in [
        [(fork, 7, 1), (comm, 7, 2), (sample, 7, 3), (mmap2, 7, 4), (exit, 7, 5), (comm, 8, 6)],
        [(comm, 8, 9), (fork, 7, 7), (sample, 7, 8), (exit, 7, 10), (mmap2, 8, 11), (mmap2, 7, 12)],
    ] {
        for (type_, pid, t) in records {
            w.write_record_at(&record(type_, pid), Some(t)).unwrap();
        }
        w.write_round_from(&[], &left_out).unwrap();
        w.finish_round().unwrap();
    }
    w.finish(&[], Vec::new()).unwrap();
    w.publish().unwrap();
    let round = rperf_perfdata::encode::FINISHED_ROUND;
    let expected = [(sample, 7), (comm, 8), (round, 0), (sample, 7), (comm, 8), (mmap2, 8), (round, 0)];
    assert_eq!(data_records(&path), expected);
    std::fs::remove_dir_all(&dir).ok();
}
