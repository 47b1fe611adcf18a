//! Source frames kept between reports: what the DWARF of one debug file says of the addresses
//! reports asked about (the functions inlined there, innermost first, and their lines), in
//! rperf's cache folder, so that a later report naming the same addresses loads no DWARF at
//! all. Loading a distribution's debug file and looking addresses up in it is most of what
//! naming the frames of a large recording costs.
//!
//! A file is kept per debug file: `frames/BUILD_ID-FILE`, FILE standing for the debug file's
//! device, inode, size and time (another file with the same build id, or the same file
//! changed, has frames of its own). Its first line names the format and the rperf build that
//! wrote it; any other is not read.

use std::collections::HashMap;
use std::path::Path;

use crate::SourceFrame;

/// The most bytes of kept frames; the oldest files go first.
const KEEP: u64 = 64 << 20;

/// The largest kept file read (a file of a debug file asked about millions of addresses is
/// not worth holding).
const LARGEST: u64 = 16 << 20;

/// The frames kept for one debug file.
pub struct KeptFrames {
    dir: crate::cache::Dir,
    name: String,
    frames: HashMap<u64, Vec<SourceFrame>>,
    added: bool,
}

impl KeptFrames {
    /// The frames kept for the debug file `file` of build id `build_id` (empty when none
    /// are, or the file can't be identified); None without a cache folder.
    pub fn open(build_id: &[u8], file: &Path) -> Option<KeptFrames> {
        let (dir, name) = place(build_id, file)?;
        let frames = dir
            .map(&name, None)
            .filter(|m| m.len() as u64 <= LARGEST)
            .and_then(|m| decode(&m))
            .unwrap_or_default();
        Some(KeptFrames { dir, name, frames, added: false })
    }

    /// Whether a file of frames is kept for the debug file `file` of build id `build_id`.
    pub fn exist(build_id: &[u8], file: &Path) -> bool {
        place(build_id, file).is_some_and(|(dir, name)| dir.stat(&name).is_some())
    }

    /// The frames kept for `svma`.
    pub fn get(&self, svma: u64) -> Option<&Vec<SourceFrame>> {
        self.frames.get(&svma)
    }

    /// Keeps the frames at `svma`.
    pub fn insert(&mut self, svma: u64, frames: Vec<SourceFrame>) {
        self.frames.insert(svma, frames);
        self.added = true;
    }

    /// Writes the file again when frames were added.
    pub fn save(&self) {
        use std::io::Write;
        if !self.added {
            return;
        }
        let Ok(mut f) = self.dir.create(&self.name) else { return };
        if f.write_all(&encode(&self.frames)).is_ok() && f.finish().is_ok() {
            self.dir.prune(KEEP);
        }
    }

    /// All the frames kept, taken.
    pub fn into_frames(self) -> HashMap<u64, Vec<SourceFrame>> {
        self.frames
    }
}

/// The cache folder and the name of the file of frames kept for the debug file `file`.
fn place(build_id: &[u8], file: &Path) -> Option<(crate::cache::Dir, String)> {
    let origin = crate::dwarf::origin_of(file)?;
    let id = crate::buildid::hex(build_id);
    if id.is_empty() {
        return None;
    }
    Some((crate::cache::dir("frames")?, format!("{id}-{origin}")))
}

/// The first line of a file: its format and the rperf that wrote it, by version and by the
/// identity of its executable (what frames are made of may change from build to build).
fn header() -> &'static str {
    static HEADER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HEADER.get_or_init(|| {
        let exe = std::env::current_exe().ok().and_then(|p| crate::dwarf::origin_of(&p)).unwrap_or_default();
        format!("rperf kept frames 1 {} {exe}\n", env!("CARGO_PKG_VERSION"))
    })
}

/// No string: u32::MAX as its length; no line: u32::MAX.
const NONE: u32 = u32::MAX;

fn encode(frames: &HashMap<u64, Vec<SourceFrame>>) -> Vec<u8> {
    let mut out = header().as_bytes().to_vec();
    let string = |out: &mut Vec<u8>, s: &Option<String>| match s {
        Some(s) => {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        None => out.extend_from_slice(&NONE.to_le_bytes()),
    };
    for (svma, list) in frames {
        out.extend_from_slice(&svma.to_le_bytes());
        out.extend_from_slice(&(list.len() as u32).to_le_bytes());
        for f in list {
            string(&mut out, &f.raw_name);
            string(&mut out, &f.file);
            out.extend_from_slice(&f.line.unwrap_or(NONE).to_le_bytes());
        }
    }
    out
}

/// The frames of a kept file; None when it is not one this rperf wrote whole.
fn decode(bytes: &[u8]) -> Option<HashMap<u64, Vec<SourceFrame>>> {
    let mut rest = bytes.strip_prefix(header().as_bytes())?;
    let mut take = |n: usize| -> Option<&[u8]> {
        let (a, b) = (rest.get(..n)?, rest.get(n..)?);
        rest = b;
        Some(a)
    };
    let mut out = HashMap::new();
    while let Some(svma) = take(8) {
        let svma = u64::from_le_bytes(svma.try_into().ok()?);
        let n = u32::from_le_bytes(take(4)?.try_into().ok()?);
        let mut list = Vec::with_capacity((n as usize).min(64));
        for _ in 0..n {
            let mut string = || -> Option<Option<String>> {
                let len = u32::from_le_bytes(take(4)?.try_into().ok()?);
                if len == NONE {
                    return Some(None);
                }
                Some(Some(String::from_utf8(take(len as usize)?.to_vec()).ok()?))
            };
            let raw_name = string()?;
            let file = string()?;
            let line = u32::from_le_bytes(take(4)?.try_into().ok()?);
            list.push(SourceFrame { raw_name, file, line: (line != NONE).then_some(line) });
        }
        out.insert(svma, list);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_back_as_written() {
        let f = |n: Option<&str>, file: Option<&str>, line| SourceFrame {
            raw_name: n.map(str::to_string),
            file: file.map(str::to_string),
            line,
        };
        let mut frames = HashMap::new();
        frames.insert(0x1000, vec![f(Some("inner"), Some("a.c"), Some(3)), f(Some("outer"), None, None)]);
        frames.insert(0x2000, Vec::new());
        frames.insert(0x3000, vec![f(None, Some("é.c"), Some(0))]);
        let bytes = encode(&frames);
        assert_eq!(decode(&bytes), Some(frames));
        // Cut short anywhere, or written by another format: not read.
        for cut in header().len() + 1..bytes.len() {
            let partial = decode(&bytes[..cut]);
            assert!(partial.is_none() || partial.is_some_and(|p| p.len() < 3), "{cut}");
        }
        assert_eq!(decode(b"rperf kept frames 0 0.0.0\n"), None);
    }
}
