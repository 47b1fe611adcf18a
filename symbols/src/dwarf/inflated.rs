//! Compressed debug sections kept inflated in the cache folder, by build id and file, so that
//! later reports map them instead of inflating them again.

use std::sync::Arc;

use object::{Object, ObjectSection};

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
            use std::io::Write;
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
