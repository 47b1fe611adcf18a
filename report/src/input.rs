//! Opening recordings: the parts of the file header linux-perf-data does not hand out, and
//! event names.

use std::io::Read;
use std::path::Path;

/// (type, config) of each attribute, in file order, read from the attribute section.
pub fn raw_attrs(path: &Path) -> Vec<(u32, u64)> {
    let mut head = [0u8; 40];
    let Ok(mut f) = std::fs::File::open(path) else { return Vec::new() };
    if f.read_exact(&mut head).is_err() || &head[..8] != b"PERFILE2" {
        return Vec::new();
    }
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let attr_size = u64_at(&head, 16);
    let (off, size) = (u64_at(&head, 24), u64_at(&head, 32));
    if attr_size < 16 || size > (1 << 24) {
        return Vec::new();
    }
    use std::io::{Seek, SeekFrom};
    let mut buf = vec![0u8; size as usize];
    if f.seek(SeekFrom::Start(off)).is_err() || f.read_exact(&mut buf).is_err() {
        return Vec::new();
    }
    buf.chunks(attr_size as usize)
        .filter(|c| c.len() >= 16)
        .map(|c| (u32::from_le_bytes(c[0..4].try_into().unwrap()), u64_at(c, 8)))
        .collect()
}

/// A printable name for a generic event when the file does not name it.
pub fn event_name(type_: u32, config: u64) -> String {
    const HW: [&str; 10] = [
        "cpu-cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branch-instructions",
        "branch-misses",
        "bus-cycles",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
        "ref-cycles",
    ];
    const SW: [&str; 10] = [
        "cpu-clock",
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
        "minor-faults",
        "major-faults",
        "alignment-faults",
        "emulation-faults",
        "dummy",
    ];
    match (type_, config) {
        (0, c) if (c as usize) < HW.len() => HW[c as usize].into(),
        (1, c) if (c as usize) < SW.len() => SW[c as usize].into(),
        (2, c) => format!("tracepoint:{c}"),
        (4, c) => format!("r{c:x}"),
        (t, c) => format!("event(type {t}, config {c:#x})"),
    }
}
