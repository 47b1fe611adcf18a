//! rperf's own feature sections (ids in `feature`): how each is laid out, with its encoder
//! and its decoder side by side. Decoders read what is there and stop at the first entry that
//! runs past the section's end: the rest of a damaged section is dropped, never trusted.

use std::collections::HashMap;

/// Reads little-endian fields from a section, refusing to go past its end.
struct Cursor<'a> {
    b: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.b.get(..n)?, self.b.get(n..)?);
        self.b = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn is_empty(&self) -> bool {
        self.b.is_empty()
    }
}

/// `RPERF_PERF_MAPS`: for each process, its pid (u32), the map's length (u32) and the text
/// of its `/tmp/perf-PID.map`. Maps over 4 GiB are left out.
pub fn encode_perf_maps(maps: &[(u32, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (pid, text) in maps {
        let Ok(len) = u32::try_from(text.len()) else { continue };
        out.extend_from_slice(&pid.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(text);
    }
    out
}

/// The maps of `RPERF_PERF_MAPS`, by pid.
pub fn decode_perf_maps(d: &[u8]) -> HashMap<i32, String> {
    let mut c = Cursor { b: d };
    let mut out = HashMap::new();
    while !c.is_empty() {
        let Some(pid) = c.u32() else { break };
        let Some(text) = c.u32().and_then(|len| c.take(len as usize)) else { break };
        out.insert(pid as i32, String::from_utf8_lossy(text).into_owned());
    }
    out
}

/// `RPERF_JITDUMPS`: for each jitdump file, the path's length (u32), the path, the length of
/// the contents (u64) and the contents.
pub fn encode_jitdumps(dumps: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (path, data) in dumps {
        out.extend_from_slice(&(path.len() as u32).to_le_bytes());
        out.extend_from_slice(path.as_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(data);
    }
    out
}

/// The jitdumps of `RPERF_JITDUMPS`, by the pid in their file names.
pub fn decode_jitdumps(d: &[u8]) -> HashMap<i32, Vec<u8>> {
    let mut c = Cursor { b: d };
    let mut out = HashMap::new();
    while !c.is_empty() {
        let Some(path) = c.u32().and_then(|n| c.take(n as usize)) else { break };
        let Some(data) = c.u64().and_then(|n| c.take(usize::try_from(n).ok()?)) else { break };
        if let Some(pid) = jitdump_pid(&String::from_utf8_lossy(path)) {
            out.insert(pid, data.to_vec());
        }
    }
    out
}

/// The pid in a runtime's jitdump file name, `jit-PID.dump` (the runtime announces the file
/// with an executable mmap of it).
pub fn jitdump_pid(path: &str) -> Option<i32> {
    let path = path.strip_suffix(".dump")?;
    let name = &path[path.rfind('/').map_or(0, |i| i + 1)..];
    name.strip_prefix("jit-")?.parse::<u32>().ok().map(|p| p as i32)
}

/// What a JIT symbol file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymfileKind {
    /// An ELF image naming JIT-compiled code (`__jit_debug_descriptor`'s entries).
    Elf,
    /// An in-memory dex file (ART's `__dex_debug_descriptor`).
    Dex,
}

/// A symbol file a runtime registered through the GDB JIT interface, copied from its memory
/// while recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitSymfile {
    /// The process.
    pub pid: u32,
    /// ELF image or dex file.
    pub kind: SymfileKind,
    /// When the code was registered, in the samples' clock: the runtime's own timestamp where
    /// it gives one (ART), else the last read that did not see it (no later than the truth).
    pub registered_ns: u64,
    /// When it was seen unregistered (no earlier than the truth); `u64::MAX` while registered
    /// when recording ended.
    pub removed_ns: u64,
    /// The code it describes, `start..end` in the process (an ELF image's executable sections,
    /// a dex file's own bytes); empty when it names none.
    pub code: (u64, u64),
    /// The file's bytes.
    pub image: Vec<u8>,
}

/// `RPERF_JIT_SYMFILES`: for each symbol file, pid (u32), kind (u32: 0 ELF, 1 dex),
/// registered and removed times (u64), code start and end (u64), the image's length (u64) and
/// the image.
pub fn encode_jit_symfiles(files: &[JitSymfile]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in files {
        out.extend_from_slice(&encode_jit_symfile_head(f, f.image.len() as u64));
        out.extend_from_slice(&f.image);
    }
    out
}

/// One entry of `RPERF_JIT_SYMFILES` up to its image (of `image_len` bytes), which follows it:
/// for a writer that keeps images elsewhere until the recording ends. The removed time sits
/// `JIT_SYMFILE_REMOVED_AT` bytes into it, to be updated in place.
pub fn encode_jit_symfile_head(f: &JitSymfile, image_len: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(48);
    out.extend_from_slice(&f.pid.to_le_bytes());
    out.extend_from_slice(&(f.kind as u32).to_le_bytes());
    for v in [f.registered_ns, f.removed_ns, f.code.0, f.code.1, image_len] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Where an entry's removed time (u64) sits in it (`encode_jit_symfile_head`).
pub const JIT_SYMFILE_REMOVED_AT: u64 = 16;

/// The symbol files of `RPERF_JIT_SYMFILES`, in the order they were seen.
pub fn decode_jit_symfiles(d: &[u8]) -> Vec<JitSymfile> {
    let mut c = Cursor { b: d };
    let mut out = Vec::new();
    while !c.is_empty() {
        let entry = (|| {
            let pid = c.u32()?;
            let kind = match c.u32()? {
                0 => SymfileKind::Elf,
                1 => SymfileKind::Dex,
                _ => return None,
            };
            let (registered_ns, removed_ns, start, end) = (c.u64()?, c.u64()?, c.u64()?, c.u64()?);
            let image = c.u64().and_then(|n| c.take(usize::try_from(n).ok()?))?.to_vec();
            Some(JitSymfile { pid, kind, registered_ns, removed_ns, code: (start, end), image })
        })();
        match entry {
            Some(e) => out.push(e),
            None => break,
        }
    }
    out
}

/// How much reading the JIT interface cost while recording.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitReads {
    /// Reads of a descriptor.
    pub descriptors: u64,
    /// Reads of list entries (one per entry visited).
    pub entries: u64,
    /// Symbol files copied, and their bytes.
    pub symfiles: u64,
    /// Bytes of symbol files copied.
    pub bytes: u64,
}

/// `RPERF_INFO`: how the recording was made, as `key=value` lines (the shape of simpleperf's
/// meta info). Readers ignore keys they do not know.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordingInfo {
    /// Recorded with `--trace-offcpu`: cpu-clock samples plus a sample at every switch-out,
    /// to be weighted by time.
    pub trace_offcpu: bool,
    /// How long sampling was on (less than `elapsed_ns` with `--delay` or `--control`).
    pub recorded_ns: Option<u64>,
    /// How long the recording lasted.
    pub elapsed_ns: Option<u64>,
    /// What reading the GDB JIT interface cost, when a recorded process has one.
    pub jit_reads: Option<JitReads>,
    /// How many processes began and ended without a sample, their task records (FORK, COMM,
    /// MMAP, EXIT) left out; None when every task record was kept.
    pub processes_left_out: Option<u64>,
}

impl RecordingInfo {
    /// The section's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!("trace_offcpu={}\n", self.trace_offcpu);
        if let (Some(r), Some(e)) = (self.recorded_ns, self.elapsed_ns) {
            s.push_str(&format!("recorded_ns={r}\nelapsed_ns={e}\n"));
        }
        if let Some(j) = &self.jit_reads {
            s.push_str(&format!(
                "jit_descriptor_reads={}\njit_entry_reads={}\njit_symfiles={}\njit_symfile_bytes={}\n",
                j.descriptors, j.entries, j.symfiles, j.bytes
            ));
        }
        if let Some(n) = self.processes_left_out {
            s.push_str(&format!("processes_left_out={n}\n"));
        }
        s.into_bytes()
    }

    /// Reads the section.
    pub fn decode(d: &[u8]) -> RecordingInfo {
        let text = String::from_utf8_lossy(d);
        let mut info = RecordingInfo::default();
        for (key, value) in text.lines().filter_map(|l| l.split_once('=')) {
            match key.trim() {
                "trace_offcpu" => info.trace_offcpu = value.trim() == "true",
                "recorded_ns" => info.recorded_ns = value.trim().parse().ok(),
                "elapsed_ns" => info.elapsed_ns = value.trim().parse().ok(),
                "processes_left_out" => info.processes_left_out = value.trim().parse().ok(),
                "jit_descriptor_reads" | "jit_entry_reads" | "jit_symfiles" | "jit_symfile_bytes" => {
                    let j = info.jit_reads.get_or_insert_with(JitReads::default);
                    let n = value.trim().parse().unwrap_or(0);
                    match key.trim() {
                        "jit_descriptor_reads" => j.descriptors = n,
                        "jit_entry_reads" => j.entries = n,
                        "jit_symfiles" => j.symfiles = n,
                        _ => j.bytes = n,
                    }
                }
                _ => {}
            }
        }
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_maps_round_trip_and_stop_at_a_cut() {
        let d = encode_perf_maps(&[(7, b"1000 20 a\n".to_vec()), (8, b"2000 10 b\n".to_vec())]);
        let m = decode_perf_maps(&d);
        assert_eq!((m[&7].as_str(), m[&8].as_str()), ("1000 20 a\n", "2000 10 b\n"));
        // The second entry cut short is dropped; the first survives.
        let m = decode_perf_maps(&d[..d.len() - 3]);
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn jitdumps_round_trip_by_pid() {
        let d =
            encode_jitdumps(&[("/tmp/jit-42.dump".into(), vec![1, 2, 3]), ("/tmp/x.dump".into(), vec![9])]);
        let m = decode_jitdumps(&d);
        assert_eq!(m.len(), 1);
        assert_eq!(m[&42], vec![1, 2, 3]);
        // A length past the end stops the decoder without reading it.
        let mut bad = d.clone();
        bad[4 + 16..4 + 16 + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_jitdumps(&bad).is_empty());
    }

    #[test]
    fn jit_symfiles_round_trip_and_stop_at_a_cut() {
        let f = |pid, kind, image: &[u8]| JitSymfile {
            pid,
            kind,
            registered_ns: 10,
            removed_ns: u64::MAX,
            code: (0x1000, 0x1040),
            image: image.to_vec(),
        };
        let files = vec![f(7, SymfileKind::Elf, b"\x7fELF"), f(8, SymfileKind::Dex, b"dex\n035")];
        let d = encode_jit_symfiles(&files);
        assert_eq!(decode_jit_symfiles(&d), files);
        assert_eq!(decode_jit_symfiles(&d[..d.len() - 1]), files[..1]);
        // An image length past the end stops the decoder without reading it.
        let mut bad = d.clone();
        bad[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode_jit_symfiles(&bad).is_empty());
    }

    #[test]
    fn jitdump_names() {
        assert_eq!(jitdump_pid("/home/u/.debug/jit/x/jit-1234.dump"), Some(1234));
        assert_eq!(jitdump_pid("jit-abc.dump"), None);
        assert_eq!(jitdump_pid("/tmp/jit-12.dumpx"), None);
    }

    #[test]
    fn recording_info_round_trips() {
        let info = RecordingInfo {
            trace_offcpu: true,
            recorded_ns: Some(5),
            elapsed_ns: Some(9),
            jit_reads: Some(JitReads { descriptors: 3, entries: 2, symfiles: 1, bytes: 900 }),
            processes_left_out: Some(7),
        };
        assert_eq!(RecordingInfo::decode(&info.encode()), info);
        assert_eq!(RecordingInfo::decode(b"future=1\n"), RecordingInfo::default());
    }
}
