//! Damaged recordings: truncated at many offsets and corrupted by seeded random byte flips and
//! huge length/count fields. The reader must never panic or hang; it either reports what was
//! readable or fails with an error that names the problem.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::*;

/// A small xorshift generator: the same damage every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn small_recording() -> Vec<u8> {
    static ONCE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    ONCE.get_or_init(record_small).clone()
}

fn record_small() -> Vec<u8> {
    let p = programs();
    let dir = scratch("damaged_src");
    let data = dir.join("small.data");
    let o = run(rperf()
        .args(["record", "-g", "fp", "-F", "2000", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&p.workload_fp)
        .args(["0.1", "2"]));
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read(&data).unwrap()
}

/// Loads `bytes` as a recording on a worker thread, dumps it and renders it in every format;
/// fails the test on a panic or after 20 s.
fn load_survives(dir: &std::path::Path, bytes: Vec<u8>, what: &str) -> Result<(), String> {
    let path = dir.join(format!("{}.data", what.replace(|c: char| !c.is_ascii_alphanumeric(), "_")));
    std::fs::write(&path, &bytes).unwrap();
    let (tx, rx) = mpsc::channel();
    let p = path.clone();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(|| {
            use rperf_report::Format;
            let _ = rperf_report::dump(&p, &mut std::io::sink());
            // Loaded as for json, the profile holds what every format needs.
            let opts = rperf_report::ReportOptions {
                input: p,
                call_graph: Some(rperf_report::CallOrder::Caller),
                // The reader is under test, not DWARF: skip inline frames (slow in debug builds).
                inline: false,
                format: Format::Json,
                ..Default::default()
            };
            let profile = rperf_report::load(&opts).map_err(|e| e.to_string())?;
            for format in [
                Format::Text,
                Format::Folded,
                Format::Svg,
                Format::Html,
                Format::Pprof,
                Format::Gecko,
                Format::Json,
            ] {
                let o = rperf_report::ReportOptions { format, ..opts.clone() };
                profile.write(&mut std::io::sink(), &o, None).map_err(|e| format!("{format:?}: {e}"))?;
            }
            Ok(())
        });
        tx.send(r).ok();
    });
    let outcome =
        rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("{what}: no answer within 20 s"));
    std::fs::remove_file(&path).ok();
    match outcome {
        Err(_) => panic!("{what}: the reader panicked"),
        Ok(r) => r,
    }
}

#[test]
fn truncated_recordings_never_panic() {
    let bytes = small_recording();
    let dir = scratch("damaged_cut");
    let mut offsets: Vec<usize> = (0..300).collect();
    let mut rng = Rng(0x5eed_1234);
    offsets.extend((0..150).map(|_| (rng.next() as usize) % bytes.len()));
    let mut readable = 0;
    for &cut in &offsets {
        let r = load_survives(&dir, bytes[..cut].to_vec(), &format!("cut at {cut}"));
        match r {
            Ok(()) => readable += 1,
            Err(e) => assert!(!e.is_empty(), "an error names the problem"),
        }
    }
    // Cuts inside the data section keep the records before them readable.
    assert!(readable > 0, "no truncated file was readable");
}

#[test]
fn corrupted_recordings_never_panic() {
    let bytes = small_recording();
    let dir = scratch("damaged_flip");
    let mut rng = Rng(0xdead_beef);
    for i in 0..300 {
        let mut b = bytes.clone();
        match i % 3 {
            // A few random bytes.
            0 => {
                for _ in 0..4 {
                    let at = (rng.next() as usize) % b.len();
                    b[at] = rng.next() as u8;
                }
            }
            // A length or count field set huge: an aligned u64 or u32 anywhere, biased to the
            // header and attribute region where sizes live.
            1 => {
                let span = if rng.next().is_multiple_of(2) { 512.min(b.len()) } else { b.len() };
                let at = ((rng.next() as usize) % span.saturating_sub(8).max(1)) & !7;
                let v: u64 = [u64::MAX, 0xffff_ffff, 1 << 40, 0x7fff_ffff_ffff]
                    .get((rng.next() % 4) as usize)
                    .copied()
                    .unwrap();
                b[at..at + 8].copy_from_slice(&v.to_le_bytes());
            }
            // A record header's size field broken (u16 at offset 6 of a record).
            _ => {
                let at = 104 + ((rng.next() as usize) % (b.len() - 112));
                let at = at & !7;
                let v = [0u16, 1, 7, 0xffff][(rng.next() % 4) as usize];
                b[at + 6..at + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        if let Err(e) = load_survives(&dir, b, &format!("corruption {i}")) {
            assert!(!e.is_empty());
        }
    }
}

/// Records `cmd` into `data` with rperf and kills rperf (SIGKILL: no chance to finish the
/// file) once 256 KiB were flushed; `cmd` carries on alone.
fn record_and_kill(data: &std::path::Path, args: &[&str], cmd: &[&str]) {
    let mut rec = rperf()
        .arg("record")
        .args(args)
        .arg("-o")
        .arg(data)
        .arg("--")
        .args(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait for flushed data rather than for a time, so that a busy machine changes nothing.
    let start = std::time::Instant::now();
    while std::fs::metadata(data).map_or(0, |m| m.len()) < 256 << 10
        && start.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    rec.kill().unwrap();
    rec.wait().unwrap();
}

#[test]
fn killed_recording_reports_what_was_flushed() {
    let p = programs();
    let dir = scratch("damaged_killed");
    let data = dir.join("killed.data");
    let workload = p.workload_fp.to_str().unwrap();
    record_and_kill(&data, &["-g", "fp"], &[workload, "5", "1"]);
    // The workload was rperf's child; it carries on alone, so stop it.
    run(std::process::Command::new("pkill").args(["-f", p.workload_fp.to_str().unwrap()]));
    let o = run(rperf().args(["report", "--sort", "symbol", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    let samples: u64 = text.lines().find_map(|l| l.strip_prefix("Samples: ")).unwrap().parse().unwrap();
    // 256 KiB of frame-pointer samples is well over a thousand of them.
    assert!(samples > 1000, "{samples} samples survive:\n{text}");
    assert!(text.contains("hot_loop"), "{text}");
    assert!(stderr(&o).contains("the recorder was killed before it finished"), "{}", stderr(&o));
}

/// A recording reported while it is still being made is not called cut short: its recorder
/// holds the file, and the warning says to report it again once recording ends.
#[test]
fn a_recording_in_progress_is_said_to_be_one() {
    let p = programs();
    let dir = scratch("damaged_in_progress");
    let data = dir.join("live.data");
    let mut rec = rperf()
        .args(["record", "-g", "fp", "-o"])
        .arg(&data)
        .arg("--")
        .args([p.workload_fp.to_str().unwrap(), "30", "1"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while std::fs::metadata(&data).map_or(0, |m| m.len()) < 256 << 10
        && start.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = run(rperf().args(["report", "--sort", "symbol", "-i"]).arg(&data));
    // SIGINT ends the recording (and its command) cleanly.
    // SAFETY: kill with a pid of a child of this process.
    unsafe { libc::kill(rec.id() as i32, libc::SIGINT) };
    rec.wait().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("it is still being recorded (its recorder holds it)"), "{err}");
    assert!(!err.contains("killed"), "{err}");
    let o = run(rperf().args(["report", "--sort", "symbol", "-i"]).arg(&data));
    assert!(!stderr(&o).contains("no feature sections"), "{}", stderr(&o));
}

#[test]
fn a_data_size_left_at_zero_is_recovered_with_a_warning() {
    // Linux perf leaves the data size at 0 when it dies before finishing the file.
    let mut bytes = small_recording();
    bytes[48..56].copy_from_slice(&0u64.to_le_bytes());
    let dir = scratch("damaged_zero");
    let data = dir.join("zero.data");
    std::fs::write(&data, &bytes).unwrap();
    let o = run(rperf().args(["report", "--sort", "symbol", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("the recording was cut short; reading what is there"), "{}", stderr(&o));
    assert!(stdout(&o).contains("hot_loop"), "{}", stdout(&o));
    // A file cut in the middle of its data reads up to the cut.
    let cut = dir.join("cut.data");
    let whole = small_recording();
    let data_off = u64::from_le_bytes(whole[40..48].try_into().unwrap()) as usize;
    std::fs::write(&cut, &whole[..data_off + (whole.len() - data_off) / 2]).unwrap();
    let o = run(rperf().args(["report", "-i"]).arg(&cut));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("cut short"), "{}", stderr(&o));
}

#[test]
fn impossible_headers_name_the_field_and_offset() {
    let mut bytes = small_recording();
    bytes[32..40].copy_from_slice(&u64::MAX.to_le_bytes());
    let dir = scratch("damaged_header");
    let data = dir.join("bad.data");
    std::fs::write(&data, &bytes).unwrap();
    let o = run(rperf().args(["report", "-i"]).arg(&data));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("attribute section (header offset 24)") && !e.contains("panicked"), "{e}");
}

/// File offset of feature section `feat` of a perf.data image.
fn feature_offset(bytes: &[u8], feat: u32) -> usize {
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let table = u64_at(40) + u64_at(48);
    let index = (0..feat).filter(|b| bytes[72 + (*b / 8) as usize] & (1 << (b % 8)) != 0).count();
    assert!(bytes[72 + (feat / 8) as usize] & (1 << (feat % 8)) != 0, "feature {feat} is present");
    u64_at(table + 16 * index)
}

#[test]
fn huge_counts_inside_feature_sections_are_refused_not_allocated() {
    // Counts the reader would size an allocation by: the event descriptions' count, the command
    // line's string count, the host name's length.
    let dir = scratch("damaged_counts");
    for (feat, name) in [(12u32, "event-desc"), (11, "cmdline"), (3, "hostname")] {
        let mut bytes = small_recording();
        let at = feature_offset(&bytes, feat);
        bytes[at..at + 4].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
        let data = dir.join(format!("{name}.data"));
        std::fs::write(&data, &bytes).unwrap();
        let o = run(rperf().args(["report", "-i"]).arg(&data));
        let e = stderr(&o);
        assert!(o.status.success(), "{name}: {e}");
        assert!(
            e.contains(&format!("feature section {feat} (table entry at file offset"))
                && e.contains("ignored"),
            "{name}: {e}"
        );
        assert!(stdout(&o).contains("hot_loop"), "{name}: the samples are still reported");
    }
    // An MMAP2 record whose build-id length byte says 200 (at most 20 fit).
    let mut bytes = small_recording();
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize;
    let (mut at, end) = (u64_at(&bytes, 40), u64_at(&bytes, 40) + u64_at(&bytes, 48));
    let mut hit = false;
    while at + 8 <= end {
        let (t, misc) = (u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()), bytes[at + 5]);
        let size = u16::from_le_bytes([bytes[at + 6], bytes[at + 7]]) as usize;
        if t == 10 && misc & 0x40 != 0 {
            bytes[at + 8 + 32] = 200;
            hit = true;
            break;
        }
        at += size.max(8);
    }
    assert!(hit, "the recording has MMAP2 records with build ids");
    let data = dir.join("mmap2.data");
    std::fs::write(&data, &bytes).unwrap();
    let o = run(rperf().args(["report", "-i"]).arg(&data));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("1 records could not be decoded"), "{}", stderr(&o));
    // An attribute size of 0 would divide by zero.
    let mut bytes = small_recording();
    bytes[16..24].copy_from_slice(&0u64.to_le_bytes());
    let data = dir.join("attr0.data");
    std::fs::write(&data, &bytes).unwrap();
    let o = run(rperf().args(["report", "-i"]).arg(&data));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("attribute size (header offset 16) is 0"), "{}", stderr(&o));
}

/// A recording cut by SIGKILL has no feature sections (no stored kernel symbols, build ids or
/// kernel release). Made on this machine since its last boot, it reports as a finished one
/// would: kernel frames named from this kernel, and a warning says the file was cut. A cut
/// file from another boot (another `_text`, as KASLR gives) leaves kernel frames unnamed.
#[test]
fn killed_recording_names_kernel_frames_from_this_kernel() {
    let dir = scratch("damaged_killed_kernel");
    let data = dir.join("killed.data");
    record_and_kill(&data, &[], &["dd", "if=/dev/zero", "of=/dev/null", "bs=16", "count=100000000"]);
    run(std::process::Command::new("pkill").args(["-f", "count=100000000"]));
    let kernel_names = |data: &std::path::Path| {
        let o = run(rperf().args(["report", "--sort", "dso,symbol", "--csv", "-i"]).arg(data));
        assert!(o.status.success(), "{}", stderr(&o));
        let rows = csv_rows(&stdout(&o), ',');
        let named: f64 = rows
            .iter()
            .filter(|r| {
                r["Shared Object"] == "[kernel.kallsyms]" && !r["Symbol"].starts_with("[kernel.kallsyms]")
            })
            .map(|r| pct(&r["Overhead"]))
            .sum();
        (named, stderr(&o))
    };
    let (named, err) = kernel_names(&data);
    assert!(err.contains("was cut short") && err.contains("named from this kernel"), "{err}");
    // dd spends most of its time in the kernel.
    assert!(named > 30.0, "{named}% of the samples in named kernel code:\n{err}");
    // The same file as if made on another boot: its kernel mapping moved by 2 MiB.
    let mut bytes = std::fs::read(&data).unwrap();
    let data_off = u64::from_le_bytes(bytes[40..48].try_into().unwrap()) as usize;
    assert_eq!(
        u32::from_le_bytes(bytes[data_off..data_off + 4].try_into().unwrap()),
        1,
        "a kernel MMAP first"
    );
    let pgoff = data_off + 32;
    let moved = u64::from_le_bytes(bytes[pgoff..pgoff + 8].try_into().unwrap()) + (2 << 20);
    bytes[pgoff..pgoff + 8].copy_from_slice(&moved.to_le_bytes());
    let other = dir.join("other-boot.data");
    std::fs::write(&other, bytes).unwrap();
    let (named, err) = kernel_names(&other);
    assert!(err.contains("was cut short") && err.contains("--kallsyms"), "{err}");
    assert_eq!(named, 0.0, "{err}");
}
