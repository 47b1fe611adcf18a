//! DWARF line and inline information (addr2line over gimli), read from the mapped binary or its
//! separate debug file, with split DWARF (`.dwo`) loaded on demand.

mod depth;
mod focus;
mod inflated;
mod sections;
mod source;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use addr2line::{LookupContinuation, LookupResult};
use object::{Object, ObjectSection};

use focus::{focused_dwarf, AddressRanges};
use sections::{dwarf_of, endian_of, load_section, Bytes, Reader, Source, BESIDE_INFO};

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

/// addr2line over some DWARF, and which of its units it may look up in.
struct Lookup {
    ctx: Mutex<addr2line::Context<Reader>>,
    guard: depth::DepthGuard,
}

impl Lookup {
    fn new(dwarf: gimli::Dwarf<Reader>, path: &Path) -> Option<Lookup> {
        let dwarf = Arc::new(dwarf);
        let ctx = addr2line::Context::from_arc_dwarf(dwarf.clone()).ok()?;
        Some(Lookup { ctx: Mutex::new(ctx), guard: depth::DepthGuard::new(dwarf, path.to_path_buf()) })
    }
}

/// The DWARF of one binary.
pub struct DebugInfo {
    /// addr2line over every compile unit, or only over those `focus` names.
    ctx: Lookup,
    /// When `ctx` holds only some compile units: the address ranges of those left out, sorted.
    /// Addresses inside them are looked up in `full`.
    left_out: Option<AddressRanges>,
    /// addr2line over every compile unit, built on first need when `ctx` holds only some.
    full: std::sync::OnceLock<Option<Lookup>>,
    /// A lookup needed split DWARF (a `.dwo` file or `.dwp` package beside this file).
    split: std::sync::atomic::AtomicBool,
    map: Arc<memmap2::Mmap>,
    /// The file the DWARF came from.
    pub path: PathBuf,
    /// The split DWARF package beside it (`FILE.dwp`), opened on first need.
    package: std::sync::OnceLock<Option<gimli::DwarfPackage<Reader>>>,
}

/// True when `obj` carries DWARF with line or function information.
pub fn has_dwarf(obj: &object::File<'_>) -> bool {
    obj.section_by_name(".debug_info").is_some_and(|s| s.size() > 0)
}

fn map_file(path: &Path) -> Option<Arc<memmap2::Mmap>> {
    let file = std::fs::File::open(path).ok()?;
    rperf_perfdata::mapped::map(&file).ok().map(Arc::new)
}

impl DebugInfo {
    /// DWARF from the ELF file mapped as `map` (at `path`), if it has any. `map` is a mapping of
    /// a file (`crate::map_bytes` makes one of bytes in memory).
    pub fn from_map(path: &Path, map: Arc<memmap2::Mmap>) -> Option<DebugInfo> {
        Self::from_map_for(path, map, &[])
    }

    /// DWARF from the ELF file mapped as `map`, prepared for looking up `addrs` (SVMAs): where
    /// the debug info is compressed and `.debug_aranges` tells which compile units hold them,
    /// only those units are parsed (a distribution's debug file holds thousands, and parsing
    /// each one's abbreviations and line table header costs tens of megabytes); other
    /// addresses are looked up in all of them, parsed on first need.
    pub fn from_map_for(path: &Path, map: Arc<memmap2::Mmap>, addrs: &[u64]) -> Option<DebugInfo> {
        let obj = object::File::parse(&map[..]).ok()?;
        if !has_dwarf(&obj) {
            return None;
        }
        let origin = origin_of(path);
        let src = Source { path, origin: origin.as_deref() };
        let focused = (!addrs.is_empty()).then(|| focused_dwarf(&obj, &map, addrs, src)).flatten();
        let (dwarf, left_out) = match focused {
            Some((dwarf, ranges)) => (dwarf, Some(ranges)),
            None => (dwarf_of(&obj, &map, src)?, None),
        };
        Some(DebugInfo {
            ctx: Lookup::new(dwarf, path)?,
            left_out,
            full: std::sync::OnceLock::new(),
            split: Default::default(),
            map,
            path: path.to_path_buf(),
            package: std::sync::OnceLock::new(),
        })
    }

    /// Whether a lookup so far needed split DWARF: what it found depends on other files than
    /// this one.
    pub fn reads_split_dwarf(&self) -> bool {
        self.split.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether `svma` is looked up in the units this was prepared for (`from_map_for`), not
    /// in all of them.
    pub fn focuses_on(&self, svma: u64) -> bool {
        !self.left_out.as_ref().is_some_and(|ranges| {
            let i = ranges.partition_point(|r| r.0 <= svma);
            i > 0 && svma < ranges[i - 1].1
        })
    }

    /// The frames at `svma`, innermost (inlined) first, the containing function last. Empty when
    /// the DWARF does not cover the address.
    pub fn frames(&self, svma: u64) -> Vec<SourceFrame> {
        let focused = self.focuses_on(svma);
        let ctx = if focused {
            &self.ctx
        } else {
            let full = self.full.get_or_init(|| {
                let obj = object::File::parse(&self.map[..]).ok()?;
                let origin = origin_of(&self.path);
                let src = Source { path: &self.path, origin: origin.as_deref() };
                Lookup::new(dwarf_of(&obj, &self.map, src)?, &self.path)
            });
            match full {
                Some(ctx) => ctx,
                None => return Vec::new(),
            }
        };
        // addr2line looks up [svma, svma + 1) without checking: no code lies at the last address.
        if svma == u64::MAX || !ctx.guard.allows(svma) {
            return Vec::new();
        }
        let ctx = ctx.ctx.lock().unwrap_or_else(|e| e.into_inner());
        let mut lookup = ctx.find_frames(svma);
        let iter = loop {
            match lookup {
                LookupResult::Output(r) => break r,
                LookupResult::Load { load, continuation } => {
                    self.split.store(true, std::sync::atomic::Ordering::Relaxed);
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

/// Inflates the compressed sections that naming reads in the ELF file mapped as `map` (at
/// `path`), and keeps them in the cache folder, each one not kept already. A report calls it
/// while it still reads samples, on the core the reading leaves free; naming then maps what
/// was kept instead of inflating it (most of a first report's naming, with a distribution's
/// debug files). `.debug_info`, the largest, is inflated beside the others, as naming does.
pub(crate) fn inflate_ahead(path: &Path, map: &memmap2::Mmap) {
    let Ok(obj) = object::File::parse(&map[..]) else { return };
    let Some(origin) = origin_of(path) else { return };
    let src = Source { path, origin: Some(&origin) };
    let inflate = |id: gimli::SectionId| {
        if let Some(section) = obj.section_by_name(id.name()) {
            inflated::inflate_section(&obj, &section, src, map);
        }
    };
    rayon::join(
        || inflate(gimli::SectionId::DebugInfo),
        || [gimli::SectionId::DebugAranges].into_iter().chain(BESIDE_INFO).for_each(inflate),
    );
}

/// The identity of the file at `path` (device, inode, size, modification time), as a name; None
/// for what is not a file.
pub(crate) fn origin_of(path: &Path) -> Option<String> {
    use std::hash::{Hash, Hasher};
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    // Fixed keys: the same file gets the same name in every report.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (m.dev(), m.ino(), m.size(), m.mtime(), m.mtime_nsec()).hash(&mut h);
    Some(format!("{:016x}", h.finish()))
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
            let src = Source { path: Path::new(&name), origin: None };
            let empty = Reader::new(Bytes::whole(Vec::new()), endian);
            gimli::DwarfPackage::load(
                |id| {
                    Ok::<_, gimli::Error>(load_section(
                        &obj,
                        &map,
                        endian,
                        id.dwo_name().unwrap_or(id.name()),
                        src,
                    ))
                },
                empty,
            )
            .ok()
        });
        let mut unit = package.as_ref()?.find_cu(load.dwo_id, &load.parent).ok()??;
        let mut name = self.path.clone().into_os_string();
        name.push(".dwp");
        if !depth::all_units_nest_within(&unit, Path::new(&name)) {
            return None;
        }
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
    let src = Source { path: &path, origin: None };
    // .dwo files name their sections with a .dwo suffix.
    let mut dwarf = gimli::Dwarf::load(|id| {
        Ok::<_, gimli::Error>(load_section(&obj, &map, endian, id.dwo_name().unwrap_or(id.name()), src))
    })
    .ok()?;
    if !depth::all_units_nest_within(&dwarf, &path) {
        return None;
    }
    dwarf.make_dwo(&load.parent);
    Some(Arc::new(dwarf))
}

#[cfg(test)]
mod tests {
    use super::focus::{may_refer_across_units, merge_ranges};
    use super::*;

    /// Builds a program of two compile units, with compressed DWARF or not, and returns it
    /// mapped. With `lto`, its two sources are linked with link-time optimization (GCC then
    /// refers from the unit of the optimized code to the units of the sources by section
    /// offset) and a third, `c.c`, built without, is added: a unit to leave out.
    /// The folder is removed when the returned guard is dropped.
    fn built_program(compressed: bool, lto: bool) -> (tempfile::TempDir, PathBuf, Arc<memmap2::Mmap>) {
        // A folder of each call's own: tests building the same program run side by side.
        let held = tempfile::Builder::new().prefix("rperf-dwarf-focus-").tempdir().unwrap();
        let dir = held.path().to_path_buf();
        let a = "static inline __attribute__((always_inline)) int twice(int x) { return x * 2 + x / 3; }\n\
                 int helper(int);\n\
                 int main(int argc, char **argv) { (void)argv; int s = 0; for (int i = 0; i < argc * 1000; i++) s += twice(i) ^ helper(i); return s & 1; }\n";
        let b = "static inline __attribute__((always_inline)) int square(int x) { return x * x - 7; }\n\
                 int helper(int x) { int s = 0; for (int i = 0; i < x; i++) s += square(i); return s; }\n";
        std::fs::write(dir.join("a.c"), a).unwrap();
        std::fs::write(dir.join("b.c"), b).unwrap();
        std::fs::write(dir.join("c.c"), "int other(int x) { return x * 3 + 1; }\n").unwrap();
        let exe = dir.join("two_units");
        let gz = if compressed { "-gz=zlib" } else { "-gz=none" };
        let gcc = |args: &[&str]| {
            let st = std::process::Command::new("gcc")
                .args(["-O2", "-g", gz])
                .args(args)
                .current_dir(&dir)
                .status()
                .expect("gcc builds the test program");
            assert!(st.success());
        };
        if lto {
            gcc(&["-fno-lto", "-c", "c.c", "-o", "c.o"]);
            gcc(&["-flto", "a.c", "b.c", "c.o", "-o", "two_units"]);
        } else {
            gcc(&["a.c", "b.c", "-o", "two_units"]);
        }
        let map = map_file(&exe).unwrap();
        (held, exe, map)
    }

    #[test]
    fn focused_lookups_answer_as_the_whole_dwarf() {
        focused_lookups(true);
        focused_lookups(false);
    }

    fn focused_lookups(compressed: bool) {
        let (_dir, exe, map) = built_program(compressed, false);
        let obj = object::File::parse(&map[..]).unwrap();
        let symbol = |name: &str| {
            use object::ObjectSymbol;
            let s = obj.symbols().find(|s| s.name() == Ok(name)).unwrap();
            (s.address(), s.size())
        };
        let (main_at, main_size) = symbol("main");
        let (helper_at, helper_size) = symbol("helper");
        let whole = DebugInfo::from_map(&exe, map.clone()).unwrap();
        assert!(whole.left_out.is_none());
        // Prepared for main's unit only: b.c's unit is left out, and looked up when asked.
        let focused = DebugInfo::from_map_for(&exe, map.clone(), &[main_at + 4]).unwrap();
        let ranges = focused.left_out.as_ref().expect("narrowed to one unit");
        assert!(!ranges.iter().any(|r| r.0 <= main_at && main_at < r.1));
        assert!(ranges.iter().any(|r| r.0 <= helper_at && helper_at < r.1));
        let addrs = (main_at..main_at + main_size).chain(helper_at..helper_at + helper_size);
        let mut inlined = 0;
        for a in addrs {
            let frames = focused.frames(a);
            assert_eq!(frames, whole.frames(a), "{a:#x}");
            inlined += usize::from(frames.len() > 1);
        }
        assert!(inlined > 0, "the program has inlined frames");
        assert!(focused.full.get().is_some(), "helper's unit was parsed on demand");
    }

    #[test]
    fn addresses_named_later_are_found_without_parsing_every_unit() {
        let (_dir, exe, map) = built_program(true, false);
        let obj = object::File::parse(&map[..]).unwrap();
        let at = |name: &str| {
            use object::ObjectSymbol;
            obj.symbols().find(|s| s.name() == Ok(name)).unwrap().address() + 4
        };
        let (main, helper) = (at("main"), at("helper"));
        let whole = DebugInfo::from_map(&exe, map.clone()).unwrap();
        let elf = crate::ElfInfo::load(&exe).unwrap();
        assert_eq!(elf.source_frames(&[main])[&main], whole.frames(main));
        // A live report asks again, for addresses of another unit.
        let later = elf.source_frames(&[helper]);
        assert_eq!(later[&helper], whole.frames(helper));
        assert!(!later[&helper].is_empty());
        let held = elf.debug_info().unwrap();
        if crate::cache::dir("frames").is_some() {
            // The frames found were kept: the DWARF loaded for them was let go of, and is
            // loaded now, for any address.
            assert!(held.left_out.is_none(), "no DWARF was held after the frames were kept");
        } else {
            assert!(held.left_out.is_some(), "the DWARF held is narrowed to main's unit");
            assert!(held.full.get().is_none(), "the later lookup parsed no other unit into it");
        }
    }

    #[test]
    fn units_referring_to_others_by_offset_are_not_narrowed() {
        let (_dir, exe, map) = built_program(true, true);
        let obj = object::File::parse(&map[..]).unwrap();
        let main = {
            use object::ObjectSymbol;
            obj.symbols().find(|s| s.name() == Ok("main")).unwrap().address()
        };
        let whole = DebugInfo::from_map(&exe, map.clone()).unwrap();
        let focused = DebugInfo::from_map_for(&exe, map.clone(), &[main]).unwrap();
        assert!(focused.left_out.is_none(), "kept units refer to others by section offset");
        assert_eq!(focused.frames(main), whole.frames(main));
        assert!(!whole.frames(main).is_empty());
    }

    #[test]
    fn abbreviations_that_refer_across_units_are_found() {
        let le = gimli::RunTimeEndian::Little;
        // Two tables: (1: DW_TAG_compile_unit, children, DW_AT_name/DW_FORM_string) and
        // (1: DW_TAG_variable, no children, DW_AT_const_value/DW_FORM_implicit_const -3,
        //  DW_AT_type/DW_FORM_ref_addr).
        let plain = [1, 0x11, 1, 0x03, 0x08, 0, 0, 0];
        let across = [1, 0x34, 0, 0x1c, 0x21, 0x7d, 0x49, 0x10, 0, 0, 0];
        let both: Vec<u8> = plain.iter().chain(&across).copied().collect();
        assert!(!may_refer_across_units(&both, 0, le));
        assert!(may_refer_across_units(&both, plain.len(), le));
        // Cut short, or past the section: assumed to refer.
        assert!(may_refer_across_units(&plain[..4], 0, le));
        assert!(may_refer_across_units(&plain, 100, le));
    }

    #[test]
    fn ranges_merge() {
        assert_eq!(merge_ranges([(1, 5), (3, 8), (8, 9), (10, 12)].into_iter()), vec![(1, 9), (10, 12)]);
    }
}
