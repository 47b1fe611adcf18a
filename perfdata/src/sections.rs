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
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_prefix("jit-")?.strip_suffix(".dump")?.parse::<u32>().ok().map(|p| p as i32)
}

/// `RPERF_INFO`: how the recording was made, as `key=value` lines (the shape of simpleperf's
/// meta info). Readers ignore keys they do not know.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordingInfo {
    /// Recorded with `--trace-offcpu`: cpu-clock samples plus a sample at every switch-out,
    /// to be weighted by time.
    pub trace_offcpu: bool,
}

impl RecordingInfo {
    /// The section's bytes.
    pub fn encode(&self) -> Vec<u8> {
        format!("trace_offcpu={}\n", self.trace_offcpu).into_bytes()
    }

    /// Reads the section.
    pub fn decode(d: &[u8]) -> RecordingInfo {
        let text = String::from_utf8_lossy(d);
        let mut info = RecordingInfo::default();
        for (key, value) in text.lines().filter_map(|l| l.split_once('=')) {
            if key.trim() == "trace_offcpu" {
                info.trace_offcpu = value.trim() == "true";
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
    fn jitdump_names() {
        assert_eq!(jitdump_pid("/home/u/.debug/jit/x/jit-1234.dump"), Some(1234));
        assert_eq!(jitdump_pid("jit-abc.dump"), None);
        assert_eq!(jitdump_pid("/tmp/jit-12.dumpx"), None);
    }

    #[test]
    fn recording_info_round_trips() {
        let info = RecordingInfo { trace_offcpu: true };
        assert_eq!(RecordingInfo::decode(&info.encode()), info);
        assert_eq!(RecordingInfo::decode(b"future=1\n"), RecordingInfo::default());
    }
}
