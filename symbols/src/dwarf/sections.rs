//! Loading a binary's DWARF sections: shared from its mapping when stored plainly, inflated
//! once (and kept in the cache folder) when compressed, left empty when never read.

use std::borrow::Cow;
use std::sync::Arc;

pub(super) use super::source::Source;
use super::source::{compression, refused};
use object::{Object, ObjectSection};
pub(super) use rperf_perfdata::mapped::SharedBytes as Bytes;

use super::inflated::Inflated;

/// What gimli reads DWARF through.
pub(super) type Reader = gimli::EndianReader<gimli::RunTimeEndian, Bytes>;

/// The bytes of `section`: in place when stored plainly, inflated under the bounds of
/// `rperf_perfdata::inflate` when compressed; None, with a note naming the file and the
/// section, when they cannot be had.
pub(super) fn section_bytes<'d>(section: &object::Section<'d, '_>, src: Source<'_>) -> Option<Cow<'d, [u8]>> {
    let c = section.compressed_data().ok()?;
    let Some(format) = compression(&c, section, src).ok()? else { return Some(Cow::Borrowed(c.data)) };
    match rperf_perfdata::inflate::inflate(format, c.data, c.uncompressed_size) {
        Ok(v) => Some(Cow::Owned(v)),
        Err(why) => {
            refused(section, src, &why.to_string());
            None
        }
    }
}

pub(super) fn load_section(
    obj: &object::File<'_>,
    map: &Arc<memmap2::Mmap>,
    endian: gimli::RunTimeEndian,
    name: &str,
    src: Source<'_>,
) -> Reader {
    let empty = || Bytes::whole(Vec::new());
    if name.is_empty() {
        return Reader::new(empty(), endian);
    }
    let section = obj.section_by_name(name);
    let inflated = section.as_ref().and_then(|s| Inflated::of(obj, s, src.origin));
    if let Some(kept) = inflated.as_ref().and_then(Inflated::map) {
        let len = kept.len();
        return Reader::new(Bytes::new(kept, 0, len).unwrap_or_else(empty), endian);
    }
    let bytes = match section.as_ref().and_then(|s| section_bytes(s, src)) {
        // Borrowed data lies inside the mapping: share it without a copy.
        Some(Cow::Borrowed(b)) => match (b.as_ptr() as usize).checked_sub(map.as_ptr() as usize) {
            Some(start) => Bytes::new(map.clone(), start, b.len()).unwrap_or_else(empty),
            None => empty(),
        },
        // Compressed sections (SHF_COMPRESSED, .zdebug) are inflated once; the compressed
        // bytes are not read again, so their pages are let go of (they stay in the page
        // cache, and are read back in if ever touched).
        Some(Cow::Owned(v)) => {
            if let Some((offset, size)) = section.as_ref().and_then(|s| s.file_range()) {
                rperf_perfdata::mapped::let_go(map, offset, size);
            }
            if let Some(k) = &inflated {
                k.keep(&v);
            }
            Bytes::whole(v)
        }
        _ => empty(),
    };
    Reader::new(bytes, endian)
}

pub(super) fn endian_of(obj: &object::File<'_>) -> gimli::RunTimeEndian {
    if obj.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    }
}

/// The sections naming reads beside `.debug_info` and `.debug_aranges`, when it narrows the
/// DWARF to the compile units holding its addresses (`focus`).
pub(super) const BESIDE_INFO: [gimli::SectionId; 8] = {
    use gimli::SectionId::*;
    [DebugAbbrev, DebugLine, DebugStr, DebugLineStr, DebugRngLists, DebugRanges, DebugAddr, DebugStrOffsets]
};

/// Sections that names and lines never read: variable locations and macros, often the largest
/// part of a debug file. They are left empty rather than inflated.
pub(super) fn unused(id: gimli::SectionId) -> bool {
    use gimli::SectionId::*;
    matches!(id, DebugLoc | DebugLocLists | DebugMacinfo | DebugMacro)
}

pub(super) fn dwarf_of(
    obj: &object::File<'_>,
    map: &Arc<memmap2::Mmap>,
    src: Source<'_>,
) -> Option<gimli::Dwarf<Reader>> {
    let endian = endian_of(obj);
    gimli::Dwarf::load(|id| {
        let name = if unused(id) { "" } else { id.name() };
        Ok::<_, gimli::Error>(load_section(obj, map, endian, name, src))
    })
    .ok()
}
