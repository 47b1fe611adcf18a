//! Hostile recordings: numbers from the file that would size an allocation, overflow an
//! address or a timestamp, and inputs that are not recordings at all. Each case is a regression
//! of a failure once found; each must end in a report or a clear error, never a panic (exit
//! 101), an abort or a hang, in `report` (every format) and `dump`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;

/// A small frame-pointer recording, as bytes.
fn recording() -> Vec<u8> {
    static ONCE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        std::fs::read(record_fp("hostile_src", &programs().workload_fp, &["0.1", "2"])).unwrap()
    })
    .clone()
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// (file offset, type, size) of every record of the data section.
fn records(b: &[u8]) -> Vec<(usize, u32, usize)> {
    let (start, size) = (u64_at(b, 40) as usize, u64_at(b, 48) as usize);
    let mut out = Vec::new();
    let mut at = start;
    while at + 8 <= start + size {
        let t = u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
        let n = u16::from_le_bytes([b[at + 6], b[at + 7]]) as usize;
        out.push((at, t, n));
        at += n;
    }
    out
}

/// Runs rperf with a time limit; a hang fails the test.
fn rperf_limited(args: &[&str], file: &Path) -> Output {
    let o = run(Command::new("timeout").arg("30").arg(env!("CARGO_BIN_EXE_rperf")).args(args).arg(file));
    assert_ne!(o.status.code(), Some(124), "{args:?} hung");
    o
}

/// `report` in every format and `dump` end without a panic, an abort or a hang; returns the
/// text report's output.
fn survives(name: &str, bytes: &[u8]) -> Output {
    let dir = scratch(&format!("hostile_{name}"));
    let file = dir.join("perf.data");
    std::fs::write(&file, bytes).unwrap();
    for format in ["folded", "svg", "html", "pprof", "gecko", "json"] {
        let o = rperf_limited(&["report", "--format", format, "-i"], &file);
        check_ended_cleanly(&o, &format!("{name}: report --format {format}"));
    }
    let o = rperf_limited(&["dump", "-i"], &file);
    check_ended_cleanly(&o, &format!("{name}: dump"));
    let o = rperf_limited(&["report", "--diff", file.to_str().unwrap(), "-i"], &file);
    check_ended_cleanly(&o, &format!("{name}: report --diff"));
    let o = rperf_limited(&["report", "-i"], &file);
    check_ended_cleanly(&o, &format!("{name}: report"));
    o
}

fn check_ended_cleanly(o: &Output, what: &str) {
    use std::os::unix::process::ExitStatusExt;
    assert!(o.status.signal().is_none(), "{what}: killed by signal {:?}: {}", o.status.signal(), stderr(o));
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(1),
        "{what}: exit {:?}: {}",
        o.status.code(),
        stderr(o)
    );
    assert!(!stderr(o).contains("panicked"), "{what}: {}", stderr(o));
}

#[test]
fn a_data_section_ending_inside_a_record_header_is_read_up_to_it() {
    let mut b = recording();
    // The header's data size ends 4 bytes into the last record's header.
    let data_at = u64_at(&b, 40) as usize;
    let (last, _, _) = *records(&b).last().unwrap();
    b[48..56].copy_from_slice(&((last + 4 - data_at) as u64).to_le_bytes());
    let o = survives("header_cut", &b);
    assert!(!stdout(&o).is_empty() || !stderr(&o).is_empty());
}

#[test]
fn an_auxtrace_record_claiming_terabytes_is_cut_to_the_file() {
    let mut b = recording();
    // Replace the first record by an AUXTRACE record of the same length that claims 2^44
    // bytes of trace data after it.
    let (at, _, size) = records(&b)[0];
    assert!(size >= 48);
    b[at..at + 4].copy_from_slice(&71u32.to_le_bytes());
    b[at + 8..at + 16].copy_from_slice(&(1u64 << 44).to_le_bytes());
    let o = survives("auxtrace", &b);
    assert!(stderr(&o).contains("AUXTRACE record at file offset"), "{}", stderr(&o));
}

#[test]
fn a_mapping_offset_near_two_to_the_64_does_not_overflow() {
    let mut b = recording();
    let mut changed = 0;
    for (at, t, _) in records(&b) {
        if t == 10 {
            // MMAP2: header, pid, tid, addr, len, pgoff.
            b[at + 32..at + 40].copy_from_slice(&u64::MAX.to_le_bytes());
            changed += 1;
        }
    }
    assert!(changed > 0);
    let o = survives("pgoff", &b);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn samples_far_apart_in_time() {
    let mut b = recording();
    let samples: Vec<usize> = records(&b).into_iter().filter(|r| r.1 == 9).map(|r| r.0).collect();
    // rperf's samples: header, id, ip, pid/tid, time.
    b[samples[0] + 32..samples[0] + 40].copy_from_slice(&1u64.to_le_bytes());
    let last = *samples.last().unwrap();
    b[last + 32..last + 40].copy_from_slice(&(u64::MAX - 1).to_le_bytes());
    let o = survives("time", &b);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn dump_uses_the_checked_reader() {
    let b = recording();
    // An attribute size of 0 (dump divided by it) and one of 2^63.
    for (name, v) in [("attr0", 0u64), ("attrhuge", 1 << 63)] {
        let mut bad = b.clone();
        bad[16..24].copy_from_slice(&v.to_le_bytes());
        let o = survives(name, &bad);
        assert!(stderr(&o).contains("attribute size (header offset 16)"), "{}", stderr(&o));
    }
    // A feature section sized near 2^64.
    let mut bad = b.clone();
    let table = (u64_at(&b, 40) + u64_at(&b, 48)) as usize;
    bad[table + 8..table + 16].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
    survives("featsize", &bad);
    // A cut recording: dump reads what report reads, and says what it repaired.
    // Cut in the middle of the data section, whatever the number of samples.
    let (data_at, data_size) = (u64_at(&b, 40) as usize, u64_at(&b, 48) as usize);
    assert!(data_size > 0);
    let cut = &b[..data_at + data_size / 2];
    let dir = scratch("hostile_cut");
    let file = dir.join("perf.data");
    std::fs::write(&file, cut).unwrap();
    let o = rperf_limited(&["dump", "-i"], &file);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("repaired: the data section") || stdout(&o).contains("repaired: the feature"),
        "{}",
        stdout(&o)
    );
    let report = rperf_limited(&["report", "-i"], &file);
    assert!(report.status.success(), "{}", stderr(&report));
}

#[test]
fn inputs_that_are_not_recordings_say_what_they_are() {
    let dir = scratch("hostile_inputs");
    let o = rperf_limited(&["report", "-i"], &dir);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    let random: PathBuf = dir.join("random.data");
    let mut x = 0x9e3779b97f4a7c15u64;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&random, bytes).unwrap();
    for cmd in ["report", "dump"] {
        let o = rperf_limited(&[cmd, "-i"], &random);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains("where perf.data files start with PERFILE2"), "{}", stderr(&o));
        assert!(!stderr(&o).contains("Invalid argument"), "{}", stderr(&o));
    }
}

#[test]
fn kallsyms_must_be_a_file() {
    let dir = scratch("hostile_kallsyms");
    let data = dir.join("perf.data");
    std::fs::write(&data, recording()).unwrap();
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (file, what) in [(Path::new("/dev/zero"), "a device"), (fifo.as_path(), "a FIFO")] {
        let o = run(Command::new("timeout")
            .arg("30")
            .arg(env!("CARGO_BIN_EXE_rperf"))
            .args(["report", "--kallsyms"])
            .arg(file)
            .arg("-i")
            .arg(&data));
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(stderr(&o).contains(what), "{}", stderr(&o));
    }
}

#[test]
fn symfs_lookups_stay_inside_it() {
    // The recorded binary is gone from its path; a copy lies outside the symbol directory.
    let dir = scratch("hostile_symfs");
    let prog = dir.join("workload_fp");
    copy_executable(&programs().workload_fp, &prog);
    let data = record_fp("hostile_symfs_rec", &prog, &["0.2", "1"]);
    let outside = dir.join("elsewhere");
    std::fs::rename(&prog, &outside).unwrap();
    let symfs = dir.join("symfs");
    std::fs::create_dir_all(&symfs).unwrap();
    let named = || {
        let o = run(rperf().args(["report", "--sort", "symbol", "--symfs"]).arg(&symfs).arg("-i").arg(&data));
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).contains("hot_loop")
    };
    // A link inside the symbol directory that leads out of it is not followed.
    std::os::unix::fs::symlink(&outside, symfs.join("workload_fp")).unwrap();
    assert!(!named(), "a link out of --symfs was followed");
    // A build_id_list entry that climbs out is not used either.
    std::fs::remove_file(symfs.join("workload_fp")).unwrap();
    let id = build_id_hex(&outside);
    std::fs::write(symfs.join("build_id_list"), format!("{id}=../elsewhere\n")).unwrap();
    assert!(!named(), "a build_id_list entry with .. was followed");
    // The binary itself, inside: found by its name.
    std::fs::copy(&outside, symfs.join("workload_fp")).unwrap();
    assert!(named());
}

/// Every input that once made rperf panic, abort or hang (found by the fuzz target or by
/// hand), kept in `tests/fuzz-regressions/`, is replayed through `dump` and `report` in every
/// format.
#[test]
fn fuzz_regressions_replay() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-regressions");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_none_or(|e| e != "md"))
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no inputs in {}", dir.display());
    for input in inputs {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        survives(&format!("regression_{name}"), &std::fs::read(&input).unwrap());
    }
}
