//! Writing perf.data (the `PERFILE2` format that Linux perf, hotspot and samply read).
//!
//! Layout: the 104-byte file header; a reserved region for the event attributes and their ids;
//! the data section; then the feature-section index followed by the feature contents. The header
//! is written first and rewritten at every flush, so a recording cut short (SIGKILL, power loss,
//! full disk) stays readable up to its last flushed record.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::sys::record_type;
use crate::Error;

const MAGIC: &[u8; 8] = b"PERFILE2";
const HEADER_SIZE: u64 = 104;
/// Room for attributes and ids at the front of the file; ids beyond it move the attribute
/// section behind the features at finish time.
const ATTR_RESERVE: u64 = 64 * 1024;
const FLUSH_AT: usize = 1 << 20;

/// Feature section numbers (`HEADER_*` in perf's header.h).
#[allow(missing_docs)] // perf's header.h names and documents these.
pub mod feature {
    pub const TRACING_DATA: u32 = 1;
    pub const BUILD_ID: u32 = 2;
    pub const HOSTNAME: u32 = 3;
    pub const OSRELEASE: u32 = 4;
    pub const VERSION: u32 = 5;
    pub const ARCH: u32 = 6;
    pub const NRCPUS: u32 = 7;
    pub const CPUDESC: u32 = 8;
    pub const TOTAL_MEM: u32 = 10;
    pub const CMDLINE: u32 = 11;
    pub const EVENT_DESC: u32 = 12;
    /// rperf's own section: the kallsyms lines needed to symbolize the recorded kernel
    /// addresses. Tools that do not know it skip it, as perf does for numbers it does not know.
    pub const RPERF_KALLSYMS: u32 = 192;
    /// rperf's copy of the JIT symbol maps (`/tmp/perf-PID.map`) of the recorded processes.
    pub const RPERF_PERF_MAPS: u32 = 193;
    /// rperf's copy of the jitdump files (`jit-PID.dump`) the recorded runtimes wrote.
    pub const RPERF_JITDUMPS: u32 = 194;
    /// rperf's copy of the vDSO image the recorded processes ran with.
    pub const RPERF_VDSO: u32 = 195;
}

/// One event attribute as stored in the file.
#[derive(Clone, Debug)]
pub struct FileAttr {
    /// The attribute bytes (`sys::attr_bytes`).
    pub attr: Vec<u8>,
    /// Sample ids that belong to this attribute.
    pub ids: Vec<u64>,
    /// Event name for HEADER_EVENT_DESC.
    pub name: String,
}

/// Streams records into a perf.data file.
pub struct PerfDataWriter {
    file: File,
    path: PathBuf,
    data_offset: u64,
    data_size: u64,
    buf: Vec<u8>,
    attrs_at_front: Option<(u64, u64)>,
}

impl PerfDataWriter {
    /// Creates `path` and writes a valid, empty file with the given attributes.
    pub fn create(path: &Path, attrs: &[FileAttr]) -> Result<PerfDataWriter, Error> {
        let file = File::create(path).map_err(|e| Error::file(path, e))?;
        let mut w = PerfDataWriter {
            file,
            path: path.to_path_buf(),
            data_offset: HEADER_SIZE + ATTR_RESERVE,
            data_size: 0,
            buf: Vec::with_capacity(FLUSH_AT * 2),
            attrs_at_front: None,
        };
        w.write_front_attrs(attrs)?;
        w.write_header(&[])?;
        Ok(w)
    }

    /// Bytes of records written so far (flushed or buffered).
    pub fn data_len(&self) -> u64 {
        self.data_size + self.buf.len() as u64
    }

    /// Updates the attributes stored at the front (e.g. ids of events opened later).
    pub fn update_attrs(&mut self, attrs: &[FileAttr]) -> Result<(), Error> {
        self.write_front_attrs(attrs)?;
        self.write_header(&[])
    }

    fn write_front_attrs(&mut self, attrs: &[FileAttr]) -> Result<(), Error> {
        let (bytes, fits) = encode_attrs(attrs, HEADER_SIZE, ATTR_RESERVE);
        if fits {
            self.file.write_all_at(&bytes, HEADER_SIZE).map_err(|e| Error::file(&self.path, e))?;
            self.attrs_at_front = Some((HEADER_SIZE, attr_section_len(attrs)));
        }
        Ok(())
    }

    /// Appends one record (header included).
    pub fn write_record(&mut self, record: &[u8]) -> Result<(), Error> {
        self.buf.extend_from_slice(record);
        if self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    /// Appends a FINISHED_ROUND record, which tells readers that every record before it may be
    /// sorted and processed, and flushes, so that a crash loses at most the current round.
    pub fn finish_round(&mut self) -> Result<(), Error> {
        let mut r = Vec::with_capacity(8);
        put_header(&mut r, record_type::FINISHED_ROUND, 0, 8);
        self.write_record(&r)?;
        self.flush()
    }

    /// Writes buffered records and makes the header cover them.
    pub fn flush(&mut self) -> Result<(), Error> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let result = self.file.write_all_at(&self.buf, self.data_offset + self.data_size);
        match result {
            Ok(()) => {
                self.data_size += self.buf.len() as u64;
                self.buf.clear();
                self.write_header(&[])
            }
            Err(e) => {
                // Keep what fits: write whole records one by one until the disk refuses, so the
                // file ends on a record boundary and the header covers every complete record.
                let buf = std::mem::take(&mut self.buf);
                let mut at = 0;
                while at + 8 <= buf.len() {
                    let size = u16::from_le_bytes([buf[at + 6], buf[at + 7]]) as usize;
                    if size < 8 || at + size > buf.len() {
                        break;
                    }
                    let rec = &buf[at..at + size];
                    if self.file.write_all_at(rec, self.data_offset + self.data_size).is_err() {
                        break;
                    }
                    self.data_size += size as u64;
                    at += size;
                }
                self.write_header(&[]).ok();
                Err(Error::file(&self.path, e))
            }
        }
    }

    fn write_header(&mut self, features: &[u32]) -> Result<(), Error> {
        let (attr_off, attr_len) = self.attrs_at_front.unwrap_or((HEADER_SIZE, 0));
        let h = encode_header(attr_off, attr_len, self.data_offset, self.data_size, features);
        self.file.write_all_at(&h, 0).map_err(|e| Error::file(&self.path, e))
    }

    /// Writes the feature sections and the final attributes, and closes the file.
    pub fn finish(&mut self, attrs: &[FileAttr], features: Vec<(u32, Vec<u8>)>) -> Result<u64, Error> {
        self.flush()?;
        let path = self.path.clone();
        let err = |e: io::Error| Error::file(&path, e);
        let mut features = features;
        features.push((feature::EVENT_DESC, encode_event_desc(attrs)));
        features.sort_by_key(|(id, _)| *id);
        features.dedup_by_key(|(id, _)| *id);

        let index_off = self.data_offset + self.data_size;
        let mut offset = index_off + 16 * features.len() as u64;
        let mut index = Vec::new();
        let mut body = Vec::new();
        for (_, content) in &features {
            put_u64(&mut index, offset);
            put_u64(&mut index, content.len() as u64);
            body.extend_from_slice(content);
            offset += content.len() as u64;
        }
        self.file.seek(SeekFrom::Start(index_off)).map_err(err)?;
        self.file.write_all(&index).map_err(err)?;
        self.file.write_all(&body).map_err(err)?;

        let (bytes, fits) = encode_attrs(attrs, HEADER_SIZE, ATTR_RESERVE);
        if fits {
            self.file.write_all_at(&bytes, HEADER_SIZE).map_err(err)?;
            self.attrs_at_front = Some((HEADER_SIZE, attr_section_len(attrs)));
        } else {
            let (bytes, _) = encode_attrs(attrs, offset, u64::MAX);
            self.file.write_all_at(&bytes, offset).map_err(err)?;
            self.attrs_at_front = Some((offset, attr_section_len(attrs)));
            offset += bytes.len() as u64;
        }
        self.file.set_len(offset).map_err(err)?;
        let ids: Vec<u32> = features.iter().map(|(id, _)| *id).collect();
        self.write_header(&ids)?;
        self.file.sync_data().ok();
        Ok(offset)
    }
}

fn attr_section_len(attrs: &[FileAttr]) -> u64 {
    attrs.len() as u64 * (crate::sys::FILE_ATTR_SIZE as u64 + 16)
}

/// Encodes the attribute section (attr + ids section pointer each) followed by the id arrays,
/// placed at `base`. Returns the bytes and whether they fit in `limit` bytes.
fn encode_attrs(attrs: &[FileAttr], base: u64, limit: u64) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut ids_off = base + attr_section_len(attrs);
    let mut ids = Vec::new();
    for a in attrs {
        out.extend_from_slice(&a.attr);
        put_u64(&mut out, ids_off);
        put_u64(&mut out, 8 * a.ids.len() as u64);
        for id in &a.ids {
            put_u64(&mut ids, *id);
        }
        ids_off += 8 * a.ids.len() as u64;
    }
    out.extend_from_slice(&ids);
    let fits = out.len() as u64 <= limit;
    (out, fits)
}

fn encode_header(attr_off: u64, attr_len: u64, data_off: u64, data_len: u64, features: &[u32]) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_SIZE as usize);
    h.extend_from_slice(MAGIC);
    put_u64(&mut h, HEADER_SIZE);
    put_u64(&mut h, crate::sys::FILE_ATTR_SIZE as u64 + 16);
    put_u64(&mut h, attr_off);
    put_u64(&mut h, attr_len);
    put_u64(&mut h, data_off);
    put_u64(&mut h, data_len);
    put_u64(&mut h, 0); // event_types (unused since perf 2.6.3x)
    put_u64(&mut h, 0);
    let mut bits = [0u64; 4];
    for f in features {
        bits[(*f / 64) as usize] |= 1 << (f % 64);
    }
    for b in bits {
        put_u64(&mut h, b);
    }
    debug_assert_eq!(h.len() as u64, HEADER_SIZE);
    h
}

fn encode_event_desc(attrs: &[FileAttr]) -> Vec<u8> {
    let mut out = Vec::new();
    put_u32(&mut out, attrs.len() as u32);
    put_u32(&mut out, crate::sys::FILE_ATTR_SIZE);
    for a in attrs {
        out.extend_from_slice(&a.attr);
        put_u32(&mut out, a.ids.len() as u32);
        put_string(&mut out, &a.name);
        for id in &a.ids {
            put_u64(&mut out, *id);
        }
    }
    out
}

/// Appends a little-endian u64.
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a little-endian u32.
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a record header.
pub fn put_header(out: &mut Vec<u8>, type_: u32, misc: u16, size: u16) {
    put_u32(out, type_);
    out.extend_from_slice(&misc.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
}

/// Appends a perf header string: u32 length (NUL included, padded to 64), then the bytes.
pub fn put_string(out: &mut Vec<u8>, s: &str) {
    let len = (s.len() + 1).next_multiple_of(64);
    put_u32(out, len as u32);
    out.extend_from_slice(s.as_bytes());
    out.resize(out.len() + len - s.len(), 0);
}

/// Encodes a feature that is one string.
pub fn string_feature(s: &str) -> Vec<u8> {
    let mut v = Vec::new();
    put_string(&mut v, s);
    v
}

/// Encodes HEADER_CMDLINE.
pub fn cmdline_feature(args: &[String]) -> Vec<u8> {
    let mut v = Vec::new();
    put_u32(&mut v, args.len() as u32);
    for a in args {
        put_string(&mut v, a);
    }
    v
}

/// Encodes HEADER_NRCPUS.
pub fn nrcpus_feature(available: u32, online: u32) -> Vec<u8> {
    let mut v = Vec::new();
    put_u32(&mut v, available);
    put_u32(&mut v, online);
    v
}

/// One HEADER_BUILD_ID entry.
#[derive(Clone, Debug)]
pub struct BuildIdEntry {
    /// Process id (-1 for the kernel, as perf writes it).
    pub pid: i32,
    /// True for kernel images and modules.
    pub kernel: bool,
    /// The build id (at most 20 bytes).
    pub build_id: Vec<u8>,
    /// The file's path (`[kernel.kallsyms]` for the kernel).
    pub path: String,
}

/// Encodes HEADER_BUILD_ID: one `build_id_event` per binary.
pub fn build_id_feature(entries: &[BuildIdEntry]) -> Vec<u8> {
    let mut v = Vec::new();
    for e in entries {
        let name_len = (e.path.len() + 1).next_multiple_of(64);
        let size = 8 + 4 + 24 + name_len;
        let misc = crate::sys::misc::BUILD_ID_SIZE
            | if e.kernel { crate::sys::misc::KERNEL } else { crate::sys::misc::USER };
        put_header(&mut v, record_type::HEADER_BUILD_ID, misc, size as u16);
        v.extend_from_slice(&e.pid.to_le_bytes());
        let n = e.build_id.len().min(20);
        let mut id = [0u8; 24];
        id[..n].copy_from_slice(&e.build_id[..n]);
        id[20] = n as u8;
        v.extend_from_slice(&id);
        v.extend_from_slice(e.path.as_bytes());
        v.resize(v.len() + name_len - e.path.len(), 0);
    }
    v
}

/// The `/tmp/perf-PID.map` files of `pids` that exist, as rperf's feature section 193: for each,
/// the pid (u32), the length (u32) and the map's text. Kept in the recording so that reports
/// work after the runtime has exited, /tmp was cleaned, or on another machine.
pub fn perf_maps_feature(pids: &std::collections::BTreeSet<u32>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for pid in pids {
        let Ok(text) = std::fs::read(format!("/tmp/perf-{pid}.map")) else { continue };
        let Ok(len) = u32::try_from(text.len()) else { continue };
        out.extend_from_slice(&pid.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&text);
    }
    (!out.is_empty()).then_some(out)
}

/// True for a runtime's jitdump file (`jit-PID.dump`), announced by an executable mmap of it.
pub fn is_jitdump(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.strip_prefix("jit-")
        .and_then(|r| r.strip_suffix(".dump"))
        .is_some_and(|pid| pid.parse::<u32>().is_ok())
}

/// The jitdump files that exist, as rperf's feature section 194: for each, the path's length
/// (u32), the path, the length of the contents (u64) and the contents.
pub fn jitdumps_feature(paths: &std::collections::BTreeSet<String>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for path in paths {
        let Ok(data) = std::fs::read(path) else { continue };
        out.extend_from_slice(&(path.len() as u32).to_le_bytes());
        out.extend_from_slice(path.as_bytes());
        out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        out.extend_from_slice(&data);
    }
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_padded_to_64() {
        let v = string_feature("x86_64");
        assert_eq!(u32::from_le_bytes(v[..4].try_into().unwrap()), 64);
        assert_eq!(v.len(), 68);
        assert_eq!(&v[4..10], b"x86_64");
    }

    #[test]
    fn header_sets_feature_bits() {
        let h = encode_header(104, 0, 200, 10, &[2, 3, 192]);
        assert_eq!(&h[..8], MAGIC);
        let bits0 = u64::from_le_bytes(h[72..80].try_into().unwrap());
        assert_eq!(bits0, 0b1100);
        let bits3 = u64::from_le_bytes(h[96..104].try_into().unwrap());
        assert_eq!(bits3, 1);
    }
}
