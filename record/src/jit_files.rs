//! The runtimes' JIT files copied into the recording when it ends: symbol maps
//! (`/tmp/perf-PID.map`, rperf's `RPERF_PERF_MAPS` section) and jitdumps (`RPERF_JITDUMPS`).
//!
//! Any user can leave any file at `/tmp/perf-PID.map` for a process of theirs, so what is copied
//! is bounded and checked: each file at most `JitLimits::map` bytes, all of them together within
//! what `JitLimits::total` leaves after the GDB JIT interface's symbol files, a map only when
//! every line is `START SIZE NAME` text, a jitdump only when it starts with jitdump's magic.
//! Files are streamed into an unnamed temporary file, never held in memory whole; what was left
//! out, and why, is said once.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rperf_symbols::trusted::{self, Owners, Refusal};

use crate::jit_store::{size, JitLimits};

/// The longest line of a symbol map: a name longer than this is not a runtime's.
const MAX_LINE: u64 = 64 << 10;

/// jitdump's magic, `JiTD`, in either byte order.
const JITDUMP_MAGIC: [[u8; 4]; 2] = [*b"DTiJ", *b"JiTD"];

/// What is copied of the JIT files, within a budget.
pub(crate) struct JitFiles {
    per_file: u64,
    /// Bytes still allowed in all.
    budget: u64,
    total: u64,
    /// Files left out: over the per-file bound, past the total, not of their kind; with bytes.
    too_large: u64,
    over_total: u64,
    skipped_bytes: u64,
    /// Why individual files were refused (owner, kind, content), for the user.
    pub notes: Vec<String>,
}

/// A section being built in an unnamed temporary file.
struct Section {
    file: File,
    len: u64,
}

impl Section {
    fn new() -> std::io::Result<Section> {
        Ok(Section { file: crate::writer::unnamed_file()?, len: 0 })
    }

    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.file.write_all_at(bytes, self.len)?;
        self.len += bytes.len() as u64;
        Ok(())
    }
}

/// Why a file's content was not copied.
enum Skip {
    /// Not of its kind: the reason.
    Kind(String),
    /// It grew past the per-file bound while it was read.
    Large,
    Io(std::io::Error),
}

impl From<std::io::Error> for Skip {
    fn from(e: std::io::Error) -> Skip {
        Skip::Io(e)
    }
}

impl JitFiles {
    /// Copies within `limits`, with `used` bytes of the total already taken.
    pub fn new(limits: JitLimits, used: u64) -> JitFiles {
        JitFiles {
            per_file: limits.map,
            budget: limits.total.saturating_sub(used),
            total: limits.total,
            too_large: 0,
            over_total: 0,
            skipped_bytes: 0,
            notes: Vec::new(),
        }
    }

    /// The `RPERF_PERF_MAPS` section of the maps of `pids` (with each process's owner) that
    /// exist: for each, the pid (u32), the length (u32) and the text.
    pub fn perf_maps(&mut self, pids: &std::collections::BTreeMap<u32, Option<u32>>) -> Option<(File, u64)> {
        let mut section: Option<Section> = None;
        for (pid, owner) in pids {
            let path = format!("/tmp/perf-{pid}.map");
            let Some((file, len)) = self.open(&path, *owner) else { continue };
            let Some(out) = self.section(&mut section) else { break };
            let start = out.len;
            let copied = out
                .put(&pid.to_le_bytes())
                .and_then(|()| out.put(&[0; 4]))
                .map_err(Skip::Io)
                .and_then(|()| copy_map(file, self.per_file.min(self.budget).min(u32::MAX as u64), out));
            match copied {
                Ok(n) => {
                    out.file.write_all_at(&(n as u32).to_le_bytes(), start + 4).ok();
                    self.budget = self.budget.saturating_sub(n);
                }
                Err(why) => {
                    out.len = start;
                    self.skipped(&path, len, why);
                }
            }
        }
        finish(section)
    }

    /// The `RPERF_JITDUMPS` section of the jitdumps at `paths` (with each process's owner) that
    /// exist: for each, the path's length (u32), the path, the length (u64) and the contents.
    pub fn jitdumps(
        &mut self,
        paths: &std::collections::BTreeMap<String, Option<u32>>,
    ) -> Option<(File, u64)> {
        let mut section: Option<Section> = None;
        for (path, owner) in paths {
            let Some((file, len)) = self.open(path, *owner) else { continue };
            let Some(out) = self.section(&mut section) else { break };
            let start = out.len;
            let head = out
                .put(&(path.len() as u32).to_le_bytes())
                .and_then(|()| out.put(path.as_bytes()))
                .and_then(|()| out.put(&[0; 8]));
            let at = out.len;
            let copied =
                head.map_err(Skip::Io).and_then(|()| copy_jitdump(file, self.per_file.min(self.budget), out));
            match copied {
                Ok(n) => {
                    out.file.write_all_at(&n.to_le_bytes(), at - 8).ok();
                    self.budget = self.budget.saturating_sub(n);
                }
                Err(why) => {
                    out.len = start;
                    self.skipped(path, len, why);
                }
            }
        }
        finish(section)
    }

    /// The file at `path` and its length, when it may be read and fits what is left.
    fn open(&mut self, path: &str, owner: Option<u32>) -> Option<(File, u64)> {
        match trusted::open(Path::new(path), u64::MAX, Owners::Trusted(owner), false) {
            Ok((_, len)) if len > self.per_file => {
                self.too_large += 1;
                self.skipped_bytes = self.skipped_bytes.saturating_add(len);
                None
            }
            Ok((_, len)) if len > self.budget => {
                self.over_total += 1;
                self.skipped_bytes = self.skipped_bytes.saturating_add(len);
                None
            }
            Ok((file, len)) => Some((file, len)),
            Err(Refusal::Missing) => None,
            Err(Refusal::Unsafe(why)) => {
                self.notes.push(format!("{path} {why}; its JIT symbols are not kept in the recording"));
                None
            }
        }
    }

    fn section<'a>(&mut self, section: &'a mut Option<Section>) -> Option<&'a mut Section> {
        if section.is_none() {
            match Section::new() {
                Ok(s) => *section = Some(s),
                Err(e) => {
                    self.notes.push(format!(
                        "JIT symbol maps and jitdumps could not be kept in {} ({e}); set TMPDIR to a \
                         folder with room",
                        std::env::temp_dir().display()
                    ));
                    return None;
                }
            }
        }
        section.as_mut()
    }

    fn skipped(&mut self, path: &str, len: u64, why: Skip) {
        match why {
            Skip::Kind(why) => {
                self.notes.push(format!("{path} {why}; it is not kept in the recording"));
            }
            Skip::Large => {
                self.too_large += 1;
                self.skipped_bytes = self.skipped_bytes.saturating_add(len);
            }
            Skip::Io(e) => self.notes.push(format!("{path} could not be kept in the recording: {e}")),
        }
    }

    /// What the bounds left out, for the user.
    pub fn summary(&self) -> Option<String> {
        let left_out = self.too_large + self.over_total;
        if left_out == 0 {
            return None;
        }
        let mut why = Vec::new();
        if self.too_large > 0 {
            why.push(format!("{} larger than {} (--jit-max-map)", self.too_large, size(self.per_file)));
        }
        if self.over_total > 0 {
            why.push(format!(
                "{} past {} of JIT files in all (--jit-max-total)",
                self.over_total,
                size(self.total)
            ));
        }
        Some(format!(
            "{left_out} JIT symbol maps or jitdumps ({}) were not kept: {}; their code stays unnamed",
            size(self.skipped_bytes),
            why.join(", ")
        ))
    }
}

fn finish(section: Option<Section>) -> Option<(File, u64)> {
    section.filter(|s| s.len > 0).map(|s| (s.file, s.len))
}

/// Copies a symbol map to `out` a line at a time, checking each is `START SIZE NAME` (hex
/// numbers, a name without control characters); returns the bytes copied.
fn copy_map(file: File, limit: u64, out: &mut Section) -> Result<u64, Skip> {
    let mut reader = BufReader::with_capacity(1 << 16, file.take(limit.saturating_add(1)));
    let mut line = Vec::new();
    let mut copied = 0u64;
    let mut number = 0u64;
    loop {
        line.clear();
        let n = (&mut reader).take(MAX_LINE).read_until(b'\n', &mut line)?;
        if n == 0 {
            return Ok(copied);
        }
        number += 1;
        copied += n as u64;
        if copied > limit {
            return Err(Skip::Large);
        }
        let unended = n as u64 == MAX_LINE && line.last() != Some(&b'\n');
        if unended || !map_line(&line) {
            let what = if map_line(&line) {
                format!("line {number} is longer than {}", size(MAX_LINE))
            } else {
                format!("line {number} is not `START SIZE NAME`")
            };
            return Err(Skip::Kind(format!("is not a JIT symbol map ({what})")));
        }
        out.put(&line)?;
    }
}

/// Whether `line` (with its newline, if any) is a symbol map's line: two hex numbers (`0x`
/// allowed), then a name of printable text.
fn map_line(line: &[u8]) -> bool {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Ok(text) = std::str::from_utf8(line) else { return false };
    if text.is_empty() {
        return true;
    }
    let hex = |s: &str| {
        let s = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s);
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
    };
    let mut parts = text.splitn(3, ' ');
    let (Some(start), Some(len)) = (parts.next(), parts.next()) else { return false };
    hex(start) && hex(len) && parts.next().unwrap_or("").chars().all(|c| !c.is_control() || c == '\t')
}

/// Copies a jitdump to `out` when it starts with jitdump's magic; returns the bytes copied.
fn copy_jitdump(file: File, limit: u64, out: &mut Section) -> Result<u64, Skip> {
    let mut reader = file.take(limit.saturating_add(1));
    let mut buf = vec![0u8; 1 << 16];
    let mut copied = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Skip::Io(e)),
        };
        if copied == 0 && (n < 4 || !JITDUMP_MAGIC.iter().any(|m| buf[..4] == *m)) {
            return Err(Skip::Kind("is not a jitdump (no JiTD magic)".into()));
        }
        copied += n as u64;
        if copied > limit {
            return Err(Skip::Large);
        }
        out.put(&buf[..n])?;
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_lines_are_two_hex_numbers_and_a_name() {
        assert!(map_line(b"7f0000001000 40 LazyCompile:~main /app.js:1\n"));
        assert!(map_line(b"0x1000 0x20 py::f:/x.py\n"));
        assert!(map_line(b"1000 20\n"));
        assert!(map_line(b"\n"));
        assert!(!map_line(b"\0\0\0\0\0\0\0\0"));
        assert!(!map_line(b"hello world\n"));
        assert!(!map_line(b"1000 20 a\x1b[2Jb\n"));
        assert!(!map_line(b"1000 zz a\n"));
    }

    fn section_of(text: &[u8], limit: u64) -> Result<u64, Skip> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m");
        std::fs::write(&p, text).unwrap();
        let mut out = Section::new().unwrap();
        copy_map(File::open(&p).unwrap(), limit, &mut out)
    }

    #[test]
    fn a_map_is_copied_whole_or_not_at_all() {
        assert_eq!(section_of(b"1000 20 a\n2000 10 b\n", 100).ok(), Some(20));
        assert!(matches!(section_of(b"1000 20 a\n2000 10 b\n", 15), Err(Skip::Large)));
        match section_of(b"1000 20 a\n\0\0\0\0", 100) {
            Err(Skip::Kind(why)) => assert!(why.contains("line 2"), "{why}"),
            _ => panic!("zeros are not a map"),
        }
        let long = [b"1000 20 ".as_slice(), &vec![b'a'; MAX_LINE as usize]].concat();
        match section_of(&long, 1 << 20) {
            Err(Skip::Kind(why)) => assert!(why.contains("longer than"), "{why}"),
            _ => panic!("a line without end is not a map's"),
        }
    }
}
