//! The file DWARF is read from, and what is said when one of its sections is left out.

use std::path::Path;

use object::ObjectSection;
use rperf_perfdata::inflate::Compression;

/// The file DWARF is read from: its path, for messages, and its identity (`origin_of`), under
/// which its inflated sections are kept (None: not kept).
#[derive(Clone, Copy)]
pub(super) struct Source<'a> {
    pub(super) path: &'a Path,
    pub(super) origin: Option<&'a str>,
}

impl Source<'_> {
    /// The same file, its sections not kept.
    pub(super) fn unkept(self) -> Self {
        Source { origin: None, ..self }
    }
}

/// How a section is compressed, in the inflater's terms; None when stored plainly. A
/// compression rperf does not know is refused with a note.
pub(super) fn compression(
    c: &object::CompressedData<'_>,
    section: &object::Section<'_, '_>,
    src: Source<'_>,
) -> Result<Option<Compression>, ()> {
    match c.format {
        object::CompressionFormat::None => Ok(None),
        object::CompressionFormat::Zlib => Ok(Some(Compression::Zlib)),
        object::CompressionFormat::Zstandard => Ok(Some(Compression::Zstd)),
        _ => {
            refused(section, src, "is compressed in a way rperf does not know");
            Err(())
        }
    }
}

/// Says that `section` of `src` is left out, and why.
pub(super) fn refused(section: &object::Section<'_, '_>, src: Source<'_>, why: &str) {
    crate::notes::note_about(
        src.path,
        format!(
            "the debug section {} of {} {why}; it is left out",
            crate::text::printable(section.name().unwrap_or("?")),
            crate::text::printable(&src.path.to_string_lossy())
        ),
    );
}
