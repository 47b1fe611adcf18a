//! Compressed debug sections kept inflated in the cache folder, by build id and file, so that
//! later reports map them instead of inflating them again.

use std::io::{Read, Write};
use std::sync::Arc;

use object::{Object, ObjectSection};

use super::source::{compression, refused, Source};

/// The most bytes of inflated sections kept in the cache; the oldest go first.
const KEEP_INFLATED: u64 = 1 << 30;

/// Where a compressed debug section is kept inflated: by the build id of its file, so that
/// the next report maps it instead of inflating it again.
pub(super) struct Inflated {
    dir: crate::cache::Dir,
    name: String,
    pub(super) len: u64,
}

impl Inflated {
    /// None for sections stored uncompressed, in files without a build id, or of no file on
    /// disk (`origin`: the file's identity, `origin_of`).
    pub(super) fn of(
        obj: &object::File<'_>,
        section: &object::Section<'_, '_>,
        origin: Option<&str>,
    ) -> Option<Inflated> {
        let origin = origin?;
        let c = section.compressed_data().ok()?;
        if c.format == object::CompressionFormat::None {
            return None;
        }
        let id = crate::buildid::hex(obj.build_id().ok()??);
        let name = section.name().ok()?.trim_start_matches(['.', '_', 'z']);
        if id.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let dir = crate::cache::dir("debug")?;
        // Named by the file too: another file claiming the build id (a binary from a
        // recording's --symfs folder, say) never reads or replaces what this one kept.
        Some(Inflated { dir, name: format!("{id}-{origin}.{name}"), len: c.uncompressed_size })
    }

    /// The kept bytes, mapped.
    pub(super) fn map(&self) -> Option<Arc<memmap2::Mmap>> {
        self.dir.map(&self.name, Some(self.len))
    }

    pub(super) fn new_file(&self) -> Option<crate::cache::NewFile> {
        self.dir.create(&self.name).ok()
    }

    /// Keeps `bytes`, the whole section inflated.
    pub(super) fn keep(&self, bytes: &[u8]) {
        if bytes.len() as u64 != self.len {
            return;
        }
        if let Some(mut f) = self.new_file() {
            if f.write_all(bytes).is_ok() && f.finish().is_ok() {
                self.dir.prune(KEEP_INFLATED);
            }
        }
    }

    /// Removes the oldest kept sections beyond the cache's budget.
    pub(super) fn keep_within_budget(&self) {
        self.dir.prune(KEEP_INFLATED);
    }
}

/// Inflates `section` of `obj` (a file mapped as `map`, of identity `origin`) into the cache,
/// unless it is kept already, as a stream (bounded memory).
pub(super) fn inflate_section(
    obj: &object::File<'_>,
    section: &object::Section<'_, '_>,
    src: Source<'_>,
    map: &memmap2::Mmap,
) {
    let Some(inflated) = Inflated::of(obj, section, src.origin) else { return };
    // A section larger than the cache keeps is left to naming, as one kept already.
    if inflated.len > KEEP_INFLATED || inflated.map().is_some() {
        return;
    }
    let Ok(compressed) = section.compressed_data() else { return };
    let Ok(Some(format)) = compression(&compressed, section, src) else { return };
    let read = Spent { map, data: compressed.data, read: 0, gone: 0 };
    let stream =
        match rperf_perfdata::inflate::reader(format, read, compressed.data.len() as u64, inflated.len) {
            Ok(stream) => stream,
            Err(why) => return refused(section, src, &why.to_string()),
        };
    let Some(mut file) = inflated.new_file() else { return };
    let whole = copy_inflated(stream, &mut file, inflated.len);
    if whole && file.written() == inflated.len && file.finish().is_ok() {
        inflated.keep_within_budget();
    }
    // The compressed bytes are not read again.
    if let Some((offset, size)) = section.file_range() {
        rperf_perfdata::mapped::let_go(map, offset, size);
    }
}

/// Compressed bytes lying in `map`, read once: those read are let go of a megabyte at a time,
/// so that inflating a large section holds little of it.
struct Spent<'a> {
    map: &'a memmap2::Mmap,
    data: &'a [u8],
    read: usize,
    /// How many of the bytes read were let go of.
    gone: usize,
}

impl Read for Spent<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (&self.data[self.read..]).read(buf)?;
        self.read += n;
        if self.read - self.gone >= 1 << 20 {
            // let_go checks that the range lies in the mapping.
            if let Some(at) = (self.data.as_ptr() as usize).checked_sub(self.map.as_ptr() as usize) {
                rperf_perfdata::mapped::let_go(
                    self.map,
                    (at + self.gone) as u64,
                    (self.read - self.gone) as u64,
                );
            }
            self.gone = self.read;
        }
        Ok(n)
    }
}

/// Copies what `inflate` gives into `to`, 1 MiB at a time (in small pieces, inflating costs
/// several times more); false on an error, or past `len` bytes.
fn copy_inflated(mut inflate: impl Read, to: &mut crate::cache::NewFile, len: u64) -> bool {
    let mut buf = vec![0; 1 << 20];
    loop {
        match inflate.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) if to.written() + n as u64 <= len => {
                if to.write_all(&buf[..n]).is_err() {
                    return false;
                }
            }
            Ok(_) => return false,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}
