//! The report library at the edges of what a recording or a caller may hand it: tracepoint
//! formats whose fields lie outside any sample's data, a second `SetRecordFile` while the first
//! recording's feature sections are still held, and files named for mappings and filters that
//! are not files. The Python process running simpleperf's scripts must not crash.

mod common;

use std::process::Command;

use common::library::{library, script};
use common::*;

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// `bytes` (a recording) with `from` replaced by `to` in its sched_switch format, in the tracing
/// data section (feature 1): the format's and the section's sizes and the later sections'
/// offsets follow.
fn with_format_edit(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let index = (u64_at(bytes, 40) + u64_at(bytes, 48)) as usize;
    let bits = &bytes[72..104];
    let ids: Vec<usize> = (0..256).filter(|i| bits[i / 8] & (1 << (i % 8)) != 0).collect();
    let slot = ids.iter().position(|&i| i == 1).expect("a tracing data section");
    let (off, size) =
        (u64_at(bytes, index + 16 * slot) as usize, u64_at(bytes, index + 16 * slot + 8) as usize);
    let section = &bytes[off..off + size];
    let text_at =
        section.windows(18).position(|w| w == b"name: sched_switch").expect("sched_switch's format");
    let len = u64_at(section, text_at - 8) as usize;
    let text = std::str::from_utf8(&section[text_at..text_at + len]).unwrap();
    assert!(text.contains(from), "{text}");
    let edited = text.replacen(from, to, 1);
    let delta = edited.len() as i64 - text.len() as i64;
    let mut out = bytes[..off + text_at - 8].to_vec();
    out.extend_from_slice(&(edited.len() as u64).to_le_bytes());
    out.extend_from_slice(edited.as_bytes());
    out.extend_from_slice(&bytes[off + text_at + len..]);
    let shift = |v: u64| if v as usize > off { (v as i64 + delta) as u64 } else { v };
    for (k, _) in ids.iter().enumerate() {
        let at = index + 16 * k;
        let v = shift(u64_at(&out, at));
        out[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    let sized = index + 16 * slot + 8;
    out[sized..sized + 8].copy_from_slice(&((size as i64 + delta) as u64).to_le_bytes());
    let attrs = shift(u64_at(&out, 24));
    out[24..32].copy_from_slice(&attrs.to_le_bytes());
    out
}

/// A field at offset 2,000,000,028 of a 64-byte record: readers would index two gigabytes past
/// the sample's data. It is left out of the format; the other fields read as before.
#[test]
fn a_tracepoint_field_outside_every_sample_is_left_out() {
    let dir = scratch("library_far_field");
    let data = dir.join("perf.data");
    record_sched_switch(&data);
    let plain = script("report_sample.py", &["-i", data.to_str().unwrap(), "--show_tracing_data"], &dir);
    assert!(plain.contains("prev_pid"), "{plain}");
    let far = dir.join("far.data");
    let edited = with_format_edit(&std::fs::read(&data).unwrap(), "offset:24;", "offset:2000000028;");
    std::fs::write(&far, edited).unwrap();
    let text = script("report_sample.py", &["-i", far.to_str().unwrap(), "--show_tracing_data"], &dir);
    assert!(text.contains("next_comm") && !text.contains("prev_pid"), "{text}");
    let fields =
        |t: &str| t.lines().filter(|l| l.contains("next_pid")).map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(fields(&text), fields(&plain), "the other fields read as before");
    // Every output reads the recording as well.
    for format in ["text", "json", "script", "report-sample"] {
        let o =
            run(rperf().args(["report", "--format", format, "-o"]).arg(dir.join("out")).arg("-i").arg(&far));
        assert!(o.status.success(), "{format}: {}", stderr(&o));
    }
}

/// Runs `program` (Python, with `lib` bound to the library) and returns its stdout.
fn python(program: &str, env: &[(&str, &str)]) -> String {
    let head = format!(
        "import ctypes as ct\nlib = ct.CDLL({:?})\nlib.CreateReportLib.restype = ct.c_void_p\n",
        library().display().to_string()
    );
    let mut cmd = Command::new("python3");
    cmd.arg("-c").arg(format!("{head}{program}"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = run(&mut cmd);
    assert!(o.status.success(), "the Python process died ({:?}):\n{}\n{}", o.status, stdout(&o), stderr(&o));
    stdout(&o)
}

/// lib.rs promises that feature sections stay valid until the handle is destroyed: a second
/// `SetRecordFile` must not free what the first recording's handed out. (glibc fills freed
/// memory under MALLOC_PERTURB_, so reading freed bytes shows.)
#[test]
fn feature_sections_outlive_a_second_record_file() {
    let dir = scratch("library_second_file");
    let first = dir.join("perf.data");
    record_sched_switch(&first);
    let second = dir.join("second.data");
    std::fs::copy(&first, &second).unwrap();
    let program = format!(
        r#"
class Feature(ct.Structure):
    _fields_ = [("data", ct.c_void_p), ("data_size", ct.c_uint32)]
lib.GetFeatureSection.restype = ct.POINTER(Feature)
lib.GetFeatureSection.argtypes = [ct.c_void_p, ct.c_char_p]
lib.SetRecordFile.argtypes = [ct.c_void_p, ct.c_char_p]
h = ct.c_void_p(lib.CreateReportLib())
assert lib.SetRecordFile(h, {first:?}.encode())
held = []
for name in [b"tracing_data", b"cmdline", b"build_id", b"event_desc"]:
    f = lib.GetFeatureSection(h, name)
    if f:
        held.append((name, f[0].data, f[0].data_size, ct.string_at(f[0].data, f[0].data_size)))
assert held
assert lib.SetRecordFile(h, {second:?}.encode())
for name in [b"tracing_data", b"cmdline"]:
    lib.GetFeatureSection(h, name)
junk = [bytearray(1 << 16) for _ in range(64)]
for name, ptr, size, copy in held:
    print(name.decode(), "same" if ct.string_at(ptr, size) == copy else "changed")
lib.DestroyReportLib(h)
"#,
        first = first.display().to_string(),
        second = second.display().to_string(),
    );
    let out = python(&program, &[("MALLOC_PERTURB_", "165")]);
    assert!(out.contains("tracing_data same"), "{out}");
    assert!(!out.contains("changed"), "{out}");
}

/// A mapping file or filter file that is a device, a FIFO or a folder is refused by name, in
/// the library and in `rperf report`, rather than read until memory runs out or for ever.
#[test]
fn mapping_and_filter_files_must_be_files() {
    let dir = scratch("library_named_files");
    let data = dir.join("perf.data");
    record_sched_switch(&data);
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let zero = dir.join("zero");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    let program = format!(
        r#"
lib.SetRecordFile.argtypes = [ct.c_void_p, ct.c_char_p]
lib.AddProguardMappingFile.argtypes = [ct.c_void_p, ct.c_char_p]
lib.AddProguardMappingFile.restype = ct.c_bool
lib.SetSampleFilter.argtypes = [ct.c_void_p, ct.POINTER(ct.c_char_p), ct.c_int]
lib.SetSampleFilter.restype = ct.c_bool
h = ct.c_void_p(lib.CreateReportLib())
assert lib.SetRecordFile(h, {data:?}.encode())
for path in [{zero:?}, {fifo:?}, {dir:?}]:
    print("mapping", lib.AddProguardMappingFile(h, path.encode()))
    args = (ct.c_char_p * 2)(b"--filter-file", path.encode())
    print("filter", lib.SetSampleFilter(h, args, 2))
lib.DestroyReportLib(h)
"#,
        data = data.display().to_string(),
        zero = zero.display().to_string(),
        fifo = fifo.display().to_string(),
        dir = dir.display().to_string(),
    );
    let o = run(Command::new("timeout").args(["60", "python3", "-c"]).arg(format!(
        "import ctypes as ct\nlib = ct.CDLL({:?})\nlib.CreateReportLib.restype = ct.c_void_p\n{program}",
        library().display().to_string()
    )));
    assert!(o.status.success(), "{:?}: {}\n{}", o.status, stdout(&o), stderr(&o));
    assert_eq!(stdout(&o).matches("False").count(), 6, "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("is not a regular file (a device)") && err.contains("is not a regular file (a FIFO)"),
        "{err}"
    );
    for (option, path, why) in [
        ("--proguard-mapping-file", &zero, "is not a regular file (a device)"),
        ("--filter-file", &fifo, "is not a regular file (a FIFO)"),
    ] {
        let o = run(Command::new("timeout")
            .arg("60")
            .arg(env!("CARGO_BIN_EXE_rperf"))
            .args(["report", option])
            .arg(path)
            .arg("-i")
            .arg(&data));
        assert_eq!(o.status.code(), Some(1), "{option}: {}", stderr(&o));
        assert!(stderr(&o).contains(why) && stderr(&o).contains(path.to_str().unwrap()), "{}", stderr(&o));
    }
    // A range that ends before it begins is refused with its line.
    let filter = dir.join("filter.txt");
    std::fs::write(&filter, "GLOBAL_BEGIN 2000\nGLOBAL_END 1000\n").unwrap();
    let o = run(rperf().args(["report", "--filter-file"]).arg(&filter).arg("-i").arg(&data));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("line 2: the range ends at 1000, before it begins at 2000 (line 1)")
            && stderr(&o).contains("filter.txt"),
        "{}",
        stderr(&o)
    );
}
