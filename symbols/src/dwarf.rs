//! DWARF line and inline information (addr2line over gimli), read from the mapped binary or its
//! separate debug file, with split DWARF (`.dwo`) loaded on demand.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use addr2line::{LookupContinuation, LookupResult};
use object::{Object, ObjectSection};

/// Bytes of a mapped file or of a decompressed section, shared by every reader of it.
#[derive(Clone)]
pub struct Bytes {
    owner: Arc<dyn AsRef<[u8]> + Send + Sync>,
    start: usize,
    len: usize,
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({} bytes)", self.len)
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &(*self.owner).as_ref()[self.start..self.start + self.len]
    }
}

// SAFETY: the bytes live in an Arc'd owner that is never mutated, so the slice's address is
// stable across moves and clones of `Bytes`.
unsafe impl stable_deref_trait::StableDeref for Bytes {}
// SAFETY: as above; clones share the same owner.
unsafe impl stable_deref_trait::CloneStableDeref for Bytes {}

type Reader = gimli::EndianReader<gimli::RunTimeEndian, Bytes>;

/// One frame at an address: a function, and where in its source the address (or the call into
/// the next inner frame) is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFrame {
    /// The function's linkage or DWARF name, not demangled.
    pub raw_name: Option<String>,
    /// Source file.
    pub file: Option<String>,
    /// Line.
    pub line: Option<u32>,
}

/// The DWARF of one binary.
pub struct DebugInfo {
    ctx: Mutex<addr2line::Context<Reader>>,
    /// The file the DWARF came from.
    pub path: PathBuf,
    /// The split DWARF package beside it (`FILE.dwp`), opened on first need.
    package: std::sync::OnceLock<Option<gimli::DwarfPackage<Reader>>>,
}

/// True when `obj` carries DWARF with line or function information.
pub fn has_dwarf(obj: &object::File<'_>) -> bool {
    obj.section_by_name(".debug_info").is_some_and(|s| s.size() > 0)
}

fn load_section(
    obj: &object::File<'_>,
    map: &Arc<memmap2::Mmap>,
    endian: gimli::RunTimeEndian,
    name: &str,
) -> Reader {
    let empty = || Bytes { owner: Arc::new(Vec::<u8>::new()), start: 0, len: 0 };
    if name.is_empty() {
        return Reader::new(empty(), endian);
    }
    let bytes = match obj.section_by_name(name).map(|s| s.uncompressed_data()) {
        // Borrowed data lies inside the mapping: share it without a copy.
        Some(Ok(Cow::Borrowed(b))) => match (b.as_ptr() as usize).checked_sub(map.as_ptr() as usize) {
            Some(start) if start + b.len() <= map.len() => Bytes { owner: map.clone(), start, len: b.len() },
            _ => empty(),
        },
        // Compressed sections (SHF_COMPRESSED, .zdebug) are inflated once.
        Some(Ok(Cow::Owned(v))) => {
            let len = v.len();
            Bytes { owner: Arc::new(v), start: 0, len }
        }
        _ => empty(),
    };
    Reader::new(bytes, endian)
}

fn endian_of(obj: &object::File<'_>) -> gimli::RunTimeEndian {
    if obj.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    }
}

/// Sections that names and lines never read: variable locations and macros, often the largest
/// part of a debug file. They are left empty rather than inflated.
fn unused(id: gimli::SectionId) -> bool {
    use gimli::SectionId::*;
    matches!(id, DebugLoc | DebugLocLists | DebugMacinfo | DebugMacro)
}

fn dwarf_of(obj: &object::File<'_>, map: &Arc<memmap2::Mmap>) -> Option<gimli::Dwarf<Reader>> {
    let endian = endian_of(obj);
    gimli::Dwarf::load(|id| {
        let name = if unused(id) { "" } else { id.name() };
        Ok::<_, gimli::Error>(load_section(obj, map, endian, name))
    })
    .ok()
}

fn map_file(path: &Path) -> Option<Arc<memmap2::Mmap>> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: read-only mapping of a debug file; see ElfInfo::load.
    unsafe { memmap2::Mmap::map(&file) }.ok().map(Arc::new)
}

impl DebugInfo {
    /// DWARF from the ELF file mapped as `map` (at `path`), if it has any.
    pub fn from_map(path: &Path, map: Arc<memmap2::Mmap>) -> Option<DebugInfo> {
        let obj = object::File::parse(&map[..]).ok()?;
        if !has_dwarf(&obj) {
            return None;
        }
        let dwarf = dwarf_of(&obj, &map)?;
        let ctx = addr2line::Context::from_dwarf(dwarf).ok()?;
        Some(DebugInfo {
            ctx: Mutex::new(ctx),
            path: path.to_path_buf(),
            package: std::sync::OnceLock::new(),
        })
    }

    /// The frames at `svma`, innermost (inlined) first, the containing function last. Empty when
    /// the DWARF does not cover the address.
    pub fn frames(&self, svma: u64) -> Vec<SourceFrame> {
        let ctx = self.ctx.lock().unwrap_or_else(|e| e.into_inner());
        let mut lookup = ctx.find_frames(svma);
        let iter = loop {
            match lookup {
                LookupResult::Output(r) => break r,
                LookupResult::Load { load, continuation } => {
                    lookup = continuation.resume(load_dwo(&load).or_else(|| self.packaged_unit(&load)));
                }
            }
        };
        let Ok(mut iter) = iter else { return Vec::new() };
        let mut out = Vec::new();
        while let Ok(Some(f)) = iter.next() {
            let raw_name = f.function.as_ref().and_then(|n| n.raw_name().ok()).map(|n| n.into_owned());
            let (file, line) = match &f.location {
                Some(l) => (l.file.map(str::to_string), l.line),
                None => (None, None),
            };
            out.push(SourceFrame { raw_name, file, line });
            if out.len() > 256 {
                break; // corrupt DWARF can describe endless inline chains
            }
        }
        out
    }
}

impl DebugInfo {
    /// A split unit from the DWARF package `FILE.dwp` beside the file, by its dwo id.
    fn packaged_unit(&self, load: &addr2line::SplitDwarfLoad<Reader>) -> Option<Arc<gimli::Dwarf<Reader>>> {
        let package = self.package.get_or_init(|| {
            let mut name = self.path.clone().into_os_string();
            name.push(".dwp");
            let map = map_file(Path::new(&name))?;
            let obj = object::File::parse(&map[..]).ok()?;
            let endian = endian_of(&obj);
            let empty = Reader::new(Bytes { owner: Arc::new(Vec::<u8>::new()), start: 0, len: 0 }, endian);
            gimli::DwarfPackage::load(
                |id| {
                    Ok::<_, gimli::Error>(load_section(
                        &obj,
                        &map,
                        endian,
                        id.dwo_name().unwrap_or(id.name()),
                    ))
                },
                empty,
            )
            .ok()
        });
        let mut unit = package.as_ref()?.find_cu(load.dwo_id, &load.parent).ok()??;
        unit.make_dwo(&load.parent);
        Some(Arc::new(unit))
    }
}

/// Loads a split DWARF unit from `comp_dir/path` (a `.dwo` file), checking its dwo id.
fn load_dwo(load: &addr2line::SplitDwarfLoad<Reader>) -> Option<Arc<gimli::Dwarf<Reader>>> {
    use gimli::Reader as _;
    let mut path = PathBuf::new();
    if let Some(dir) = &load.comp_dir {
        path.push(dir.to_string_lossy().ok()?.as_ref());
    }
    path.push(load.path.as_ref()?.to_string_lossy().ok()?.as_ref());
    let map = map_file(&path)?;
    let obj = object::File::parse(&map[..]).ok()?;
    let endian = endian_of(&obj);
    // .dwo files name their sections with a .dwo suffix.
    let mut dwarf = gimli::Dwarf::load(|id| {
        Ok::<_, gimli::Error>(load_section(&obj, &map, endian, id.dwo_name().unwrap_or(id.name())))
    })
    .ok()?;
    dwarf.make_dwo(&load.parent);
    Some(Arc::new(dwarf))
}
