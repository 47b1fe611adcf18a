//! Narrowed DWARF: only the compile units that hold the addresses a report names, read out of
//! `.debug_info` in one pass (inflating it as a stream when compressed).

use std::collections::HashSet;
use std::sync::Arc;

use object::{Object, ObjectSection};

use super::inflated::Inflated;
use super::sections::{endian_of, load_section, unused, Bytes, Reader, Source, BESIDE_INFO};
use super::source::{compression, refused};

/// The DWARF of `obj` with only the compile units that `.debug_aranges` says hold `addrs`, and
/// the address ranges of those left out. `.debug_info` is read through once (inflated as a
/// stream when compressed) and only the kept units are copied out, so neither the whole
/// section nor the other units' abbreviations and line tables are ever in memory. Units
/// without address ranges there, and units that are not compile units, are kept. None when
/// the DWARF can't be narrowed this way: no `.debug_aranges`, 64-bit DWARF, a compression other
/// than zlib, references from a kept unit into another (DW_FORM_ref_addr: offsets change), or
/// nothing to leave out.
pub(super) fn focused_dwarf(
    obj: &object::File<'_>,
    map: &Arc<memmap2::Mmap>,
    addrs: &[u64],
    src: Source<'_>,
) -> Option<(gimli::Dwarf<Reader>, AddressRanges)> {
    let endian = endian_of(obj);
    let ranges = arange_units(&load_section(obj, map, endian, ".debug_aranges", src).into());
    if ranges.is_empty() {
        return None;
    }
    let listed: HashSet<usize> = ranges.iter().map(|r| r.2).collect();
    let wanted = units_holding(&ranges, addrs);
    let section = obj.section_by_name(".debug_info")?;
    let compressed = section.compressed_data().ok()?;
    // The other sections are loaded (inflated, when compressed) beside the pass over
    // `.debug_info`, on another thread of the pool when one is free.
    let (units, others) = rayon::join(
        || {
            read_units(obj, &section, compressed, src, endian, |at| {
                !listed.contains(&at) || wanted.contains(&at)
            })
        },
        || other_sections(obj, map, endian, src),
    );
    let (info, left_out) = units?;
    if left_out.is_empty() {
        return None;
    }
    if let Some((offset, size)) =
        section.file_range().filter(|_| compressed.format != object::CompressionFormat::None)
    {
        rperf_perfdata::mapped::let_go(map, offset, size);
    }
    let abbrev = others.iter().find(|(id, _)| *id == gimli::SectionId::DebugAbbrev)?.1.clone();
    if refers_across_units(&info, abbrev.bytes(), endian)? {
        return None;
    }
    let left_out = merge_ranges(ranges.iter().filter(|r| left_out.contains(&r.2)).map(|r| (r.0, r.1)));
    let info = Bytes::whole(info);
    let dwarf = gimli::Dwarf::load(|id| {
        Ok::<_, gimli::Error>(match id {
            gimli::SectionId::DebugInfo => Reader::new(info.clone(), endian),
            // Its unit offsets are those of the whole section: addr2line finds each unit's
            // ranges in the unit itself instead.
            gimli::SectionId::DebugAranges => load_section(obj, map, endian, "", src.unkept()),
            id if unused(id) => load_section(obj, map, endian, "", src.unkept()),
            id => match others.iter().find(|(loaded, _)| *loaded == id) {
                Some((_, r)) => r.clone(),
                None => load_section(obj, map, endian, id.name(), src),
            },
        })
    })
    .ok()?;
    Some((dwarf, left_out))
}

/// The sections naming reads beside `.debug_info` (and `.debug_aranges`, read first).
fn other_sections(
    obj: &object::File<'_>,
    map: &Arc<memmap2::Mmap>,
    endian: gimli::RunTimeEndian,
    src: Source<'_>,
) -> Vec<(gimli::SectionId, Reader)> {
    BESIDE_INFO.into_iter().map(|id| (id, load_section(obj, map, endian, id.name(), src))).collect()
}

/// The units of `.debug_info` that `keep` accepts, read in one pass (inflating the section as
/// a stream, and keeping it inflated for the next report, when compressed; see `copy_units`):
/// their bytes and the offsets of those left out.
fn read_units(
    obj: &object::File<'_>,
    section: &object::Section<'_, '_>,
    compressed: object::CompressedData<'_>,
    src: Source<'_>,
    endian: gimli::RunTimeEndian,
    keep: impl Fn(usize) -> bool,
) -> Option<(Vec<u8>, HashSet<usize>)> {
    let inflated = Inflated::of(obj, section, src.origin);
    let kept = inflated.as_ref().and_then(|k| k.map());
    // The section inflated as it is read is kept for the next time.
    let mut keeping = None;
    let reader = match (compression(&compressed, section, src).ok()?, &kept) {
        (_, Some(kept)) => Units::Bytes(&kept[..]),
        (None, _) => Units::Bytes(compressed.data),
        // Inflated 1 MiB at a time: in small pieces, inflating costs several times more.
        (Some(format), _) => {
            let (data, declared) = (compressed.data, compressed.uncompressed_size);
            let inflate = match rperf_perfdata::inflate::reader(format, data, data.len() as u64, declared) {
                Ok(stream) => stream,
                Err(why) => {
                    refused(section, src, &why.to_string());
                    return None;
                }
            };
            keeping = inflated.as_ref().and_then(|k| k.new_file());
            let tee = Tee { from: inflate, to: keeping.as_mut() };
            Units::Stream(Box::new(std::io::BufReader::with_capacity(1 << 20, tee)))
        }
    };
    let (info, left_out, read) = copy_units(reader, endian, keep)?;
    if let (Some(file), Some(inflated)) = (keeping, &inflated) {
        // Read to its end and written whole: complete.
        if read as u64 == inflated.len && file.written() == inflated.len && file.finish().is_ok() {
            inflated.keep_within_budget();
        }
    }
    Some((info, left_out))
}

/// (begin, end, unit offset) of every address range `.debug_aranges` lists, by begin.
pub(super) fn arange_units(aranges: &gimli::DebugAranges<Reader>) -> Vec<(u64, u64, usize)> {
    let mut ranges = Vec::new();
    let mut headers = aranges.headers();
    while let Ok(Some(h)) = headers.next() {
        let unit = h.debug_info_offset().0;
        let mut entries = h.entries();
        while let Ok(Some(e)) = entries.next() {
            let r = e.range();
            if r.end > r.begin {
                ranges.push((r.begin, r.end, unit));
            }
        }
    }
    ranges.sort_unstable();
    ranges
}

/// The units whose ranges hold one of `addrs`.
fn units_holding(ranges: &[(u64, u64, usize)], addrs: &[u64]) -> HashSet<usize> {
    let mut wanted = HashSet::new();
    for &a in addrs {
        let i = ranges.partition_point(|r| r.0 <= a);
        if let Some(&(_, end, unit)) = i.checked_sub(1).map(|i| &ranges[i]) {
            if a < end {
                wanted.insert(unit);
            }
        }
    }
    wanted
}

/// Reads the units of `.debug_info` from `reader`, copying out those `keep` accepts (by their
/// offset) and every unit that is not a compile unit: the kept units' bytes, the offsets of
/// those left out, and how many bytes were read. None for 64-bit DWARF or bytes that are not
/// units.
fn copy_units(
    mut reader: Units<'_>,
    endian: gimli::RunTimeEndian,
    keep: impl Fn(usize) -> bool,
) -> Option<(Vec<u8>, HashSet<usize>, usize)> {
    let u16_of = |b: [u8; 2]| match endian {
        gimli::RunTimeEndian::Little => u16::from_le_bytes(b),
        gimli::RunTimeEndian::Big => u16::from_be_bytes(b),
    };
    let u32_of = |b: [u8; 4]| match endian {
        gimli::RunTimeEndian::Little => u32::from_le_bytes(b),
        gimli::RunTimeEndian::Big => u32::from_be_bytes(b),
    };
    // Walk the units: a 4-byte length, then version (2 bytes) and, from DWARF 5, the type.
    let mut info = Vec::new();
    let mut left_out = HashSet::new();
    let mut at = 0usize;
    loop {
        let mut head = [0u8; 8];
        match reader.read_exact(&mut head[..4]) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(_) => return None,
        }
        let len = u32_of(head[..4].try_into().expect("4 bytes"));
        if !(4..0xffff_fff0).contains(&len) {
            return None; // 64-bit DWARF, or not a unit
        }
        reader.read_exact(&mut head[4..8]).ok()?;
        let compile = match u16_of([head[4], head[5]]) {
            2..=4 => true,
            5 => head[6] == gimli::DW_UT_compile.0,
            _ => return None,
        };
        let rest = len as usize - 4;
        if compile && !keep(at) {
            reader.skip(rest)?;
            left_out.insert(at);
        } else {
            info.extend_from_slice(&head);
            reader.copy_to(rest, &mut info)?;
        }
        at += len as usize + 4;
    }
    Some((info, left_out, at))
}

/// Whether a unit of `info` (units copied out of `.debug_info`) may refer to another by
/// section offset: such a reference needs an abbreviation with that form, so the units'
/// abbreviations are read rather than every entry. None when the units do not parse.
fn refers_across_units(info: &[u8], abbrev: &[u8], endian: gimli::RunTimeEndian) -> Option<bool> {
    let debug_info = gimli::DebugInfo::new(info, endian);
    let mut units = debug_info.units();
    let mut checked = HashSet::new();
    while let Some(h) = units.next().ok()? {
        let offset = h.debug_abbrev_offset().0;
        if checked.insert(offset) && may_refer_across_units(abbrev, offset, endian) {
            return Some(true);
        }
    }
    Some(false)
}

/// Whether the abbreviations at `offset` in `.debug_abbrev` let an entry refer to another
/// unit by section offset (DW_FORM_ref_addr, or a form given in the entry); true when they do
/// not parse. (gimli parses abbreviations but does not list them.)
pub(super) fn may_refer_across_units(abbrev: &[u8], offset: usize, endian: gimli::RunTimeEndian) -> bool {
    use gimli::Reader as _;
    let Some(bytes) = abbrev.get(offset..) else { return true };
    let mut r = gimli::EndianSlice::new(bytes, endian);
    let mut walk = || -> gimli::Result<bool> {
        // Each: code, tag, a children byte, then (name, form) pairs up to (0, 0); a code of 0
        // ends the table.
        while r.read_uleb128()? != 0 {
            r.read_uleb128()?;
            r.read_u8()?;
            loop {
                let (name, form) = (r.read_uleb128()?, gimli::DwForm(r.read_uleb128_u16()?));
                if name == 0 && form.0 == 0 {
                    break;
                }
                match form {
                    gimli::DW_FORM_ref_addr | gimli::DW_FORM_indirect => return Ok(true),
                    gimli::DW_FORM_implicit_const => {
                        r.read_sleb128()?;
                    }
                    _ => {}
                }
            }
        }
        Ok(false)
    };
    walk().unwrap_or(true)
}

/// Where `.debug_info`'s units are read from: bytes in memory (uncompressed, or kept inflated),
/// or a stream inflating them.
enum Units<'a> {
    Bytes(&'a [u8]),
    Stream(Box<dyn std::io::Read + 'a>),
}

impl Units<'_> {
    fn read_exact(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        match self {
            Units::Bytes(b) => std::io::Read::read_exact(b, buf),
            Units::Stream(r) => r.read_exact(buf),
        }
    }

    /// Passes over `n` bytes.
    fn skip(&mut self, n: usize) -> Option<()> {
        match self {
            Units::Bytes(b) => *b = b.get(n..)?,
            Units::Stream(r) => {
                let skipped =
                    std::io::copy(&mut std::io::Read::take(r, n as u64), &mut std::io::sink()).ok()?;
                (skipped == n as u64).then_some(())?
            }
        }
        Some(())
    }

    /// Appends the next `n` bytes to `out`.
    fn copy_to(&mut self, n: usize, out: &mut Vec<u8>) -> Option<()> {
        match self {
            Units::Bytes(b) => {
                out.extend_from_slice(b.get(..n)?);
                *b = &b[n..];
            }
            Units::Stream(r) => {
                let copied = std::io::copy(&mut std::io::Read::take(r, n as u64), out).ok()?;
                (copied == n as u64).then_some(())?
            }
        }
        Some(())
    }
}

/// A reader that writes what it reads to `to` as well; writing stops at the first error.
struct Tee<'a, R> {
    from: R,
    to: Option<&'a mut crate::cache::NewFile>,
}

impl<R: std::io::Read> std::io::Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use std::io::Write;
        let n = self.from.read(buf)?;
        if let Some(to) = &mut self.to {
            if to.write_all(&buf[..n]).is_err() {
                self.to = None;
            }
        }
        Ok(n)
    }
}

/// Sorted, non-overlapping address ranges.
pub(super) type AddressRanges = Vec<(u64, u64)>;

/// Sorted ranges with overlapping and adjacent ones merged.
pub(super) fn merge_ranges(ranges: impl Iterator<Item = (u64, u64)>) -> AddressRanges {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (b, e) in ranges {
        match out.last_mut() {
            Some(last) if b <= last.1 => last.1 = last.1.max(e),
            _ => out.push((b, e)),
        }
    }
    out
}
