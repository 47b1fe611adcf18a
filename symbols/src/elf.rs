//! Loading an ELF file: its build id, load segments and symbol table.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};

use crate::{Binding, Error, SymbolTable};

/// (address, size, name, binding) of function symbols, names borrowed from the file.
type RawSymbols<'a> = Vec<(u64, u64, &'a str, Binding)>;

/// A PT_LOAD segment: how file offsets map to virtual addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment {
    /// p_vaddr.
    pub vaddr: u64,
    /// p_offset.
    pub offset: u64,
    /// p_filesz.
    pub filesz: u64,
    /// Executable (PF_X).
    pub exec: bool,
}

/// What rperf needs from one ELF binary.
pub struct ElfInfo {
    /// Where it was loaded from.
    pub path: PathBuf,
    /// The GNU build id, if any.
    pub build_id: Option<Vec<u8>>,
    /// Load segments.
    pub segments: Vec<LoadSegment>,
    /// Function symbols (.symtab, else .dynsym), read on first use (`symbols`).
    symbols: std::sync::OnceLock<SymbolTable>,
    /// The mapped file, for unwind sections and debug info.
    pub data: Arc<memmap2::Mmap>,
    debuglink: Option<String>,
    debug_roots: Vec<PathBuf>,
    /// A separate debug file found elsewhere (fetched from a debuginfod server), looked at
    /// before the local candidates.
    debug_file: std::sync::OnceLock<(PathBuf, Arc<memmap2::Mmap>)>,
    debug: std::sync::OnceLock<Option<crate::DebugInfo>>,
}

impl ElfInfo {
    /// The address of section `name`, when the file has it.
    pub fn section_address(&self, name: &str) -> Option<u64> {
        let obj = object::File::parse(&self.data[..]).ok()?;
        let address = obj.section_by_name(name)?.address();
        Some(address)
    }

    /// The address and file offset of section `name`, when the file holds its bytes.
    pub fn section_place(&self, name: &str) -> Option<(u64, u64)> {
        let obj = object::File::parse(&self.data[..]).ok()?;
        let section = obj.section_by_name(name)?;
        Some((section.address(), section.file_range()?.0))
    }

    /// Maps and parses `path`.
    pub fn load(path: &Path) -> Result<ElfInfo, Error> {
        Self::load_with_debug_roots(path, &[])
    }

    /// Maps and parses `path`; separate debug files are also looked for under `roots` (symbol
    /// directories laid out like `/`, like perf's build-id cache, or keyed by build id).
    pub fn load_with_debug_roots(path: &Path, roots: &[PathBuf]) -> Result<ElfInfo, Error> {
        let file = std::fs::File::open(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
        let map =
            rperf_perfdata::mapped::map(&file).map_err(|e| Error::Io { path: path.into(), source: e })?;
        Self::from_map(path, Arc::new(map), roots)
    }

    /// Maps and parses the ELF image stored at `offset`, `len` bytes long, in the file `path`
    /// (a library inside an APK), named `name`.
    pub fn load_range(name: &Path, path: &Path, offset: u64, len: u64) -> Result<ElfInfo, Error> {
        let io = |e| Error::Io { path: path.into(), source: e };
        let file = std::fs::File::open(path).map_err(io)?;
        let len = usize::try_from(len).map_err(|_| io(std::io::Error::other("entry too large")))?;
        let map = rperf_perfdata::mapped::map_range(&file, offset, len, false).map_err(io)?;
        Self::from_map(name, Arc::new(map), &[])
    }

    /// Parses an image held in memory (the vDSO kept in a recording, a JIT symbol file), named
    /// `name`.
    pub fn from_bytes(name: &Path, bytes: &[u8]) -> Result<ElfInfo, Error> {
        let map = rperf_perfdata::mapped::map_bytes(bytes)
            .map_err(|e| Error::Io { path: name.into(), source: e })?;
        Self::from_map(name, map, &[])
    }

    /// Parses a file already mapped (fetched into a cache), named `path`.
    pub fn from_mapped(path: &Path, data: Arc<memmap2::Mmap>) -> Result<ElfInfo, Error> {
        Self::from_map(path, data, &[])
    }

    fn from_map(path: &Path, data: Arc<memmap2::Mmap>, roots: &[PathBuf]) -> Result<ElfInfo, Error> {
        let obj = object::File::parse(&data[..])
            .map_err(|e| Error::Parse { path: path.into(), reason: e.to_string() })?;
        let build_id = obj.build_id().ok().flatten().map(<[u8]>::to_vec);
        let segments = LoadSegment::of(&obj);
        let debuglink = debuglink_of(&obj);
        Ok(ElfInfo {
            path: path.into(),
            build_id,
            segments,
            symbols: std::sync::OnceLock::new(),
            data,
            debuglink,
            debug_roots: roots.to_vec(),
            debug_file: std::sync::OnceLock::new(),
            debug: std::sync::OnceLock::new(),
        })
    }

    /// Uses `map` (named `path`) as this binary's separate debug file, before any found on
    /// this machine; false when its build id is another, or when symbols or DWARF were read
    /// already.
    pub fn attach_debug_file(&self, path: &Path, map: Arc<memmap2::Mmap>) -> bool {
        let matches = match (&self.build_id, crate::buildid::of_image(&map)) {
            (Some(want), Some(have)) => crate::buildid::same(want, &have),
            _ => false,
        };
        if !matches || self.symbols.get().is_some() || self.debug.get().is_some() {
            return false;
        }
        self.debug_file.set((path.to_path_buf(), map)).is_ok()
    }

    /// Whether a separate debug file would add to what this machine has: the binary carries
    /// no DWARF and no local debug file was found (and, when `dwarf` is false, the binary has
    /// no full symbol table either).
    pub fn lacks_debug_info(&self, dwarf: bool) -> bool {
        if self.debug_file.get().is_some() {
            return false;
        }
        let Ok(obj) = object::File::parse(&self.data[..]) else { return false };
        if crate::dwarf::has_dwarf(&obj) || (!dwarf && obj.section_by_name(".symtab").is_some()) {
            return false;
        }
        self.dwarf_file().is_none()
    }

    /// The bytes of the symbol table this binary holds (.symtab and .strtab, else .dynsym
    /// and .dynstr): about what reading it touches. A stripped binary's full table may be in
    /// a debug file besides.
    pub fn symbol_table_bytes(&self) -> u64 {
        let Ok(obj) = object::File::parse(&self.data[..]) else { return 0 };
        let size = |name| obj.section_by_name(name).map_or(0, |s| s.size());
        match size(".symtab") {
            0 => size(".dynsym") + size(".dynstr"),
            n => n + size(".strtab"),
        }
    }

    /// Lets go of the pages that unwinding through this binary touched (its CFI and code),
    /// once no more unwinding is to come: they read back from the file if touched again.
    pub fn let_go_of_unwind_tables(&self) {
        if let Ok(obj) = object::File::parse(&self.data[..]) {
            let_go_of_sections(&self.data, &obj, &[".eh_frame", ".eh_frame_hdr", ".debug_frame", ".text"]);
        }
    }

    /// Function symbols (.symtab, else .dynsym, with MiniDebugInfo's), read on first use: a
    /// binary loaded to unwind through it may never be named, and a report reads the tables
    /// of the binaries it names side by side.
    pub fn symbols(&self) -> &SymbolTable {
        self.symbols.get_or_init(|| match object::File::parse(&self.data[..]) {
            Ok(obj) => symbol_table(
                &obj,
                &self.data,
                self.debug_file.get().map(|f| &f.1),
                &self.path,
                self.build_id.as_deref(),
                self.debuglink.as_deref(),
                &self.debug_roots,
            ),
            // Parsed when loaded: the same bytes parse again.
            Err(_) => SymbolTable::default(),
        })
    }

    /// The DWARF for this binary, loaded on first use: from the binary itself, else from its
    /// separate debug file (by build id, then .gnu_debuglink), whose build id must match.
    pub fn debug_info(&self) -> Option<&crate::DebugInfo> {
        self.debug_info_for(&[])
    }

    /// The DWARF for this binary, as `debug_info` gives it; when this call loads it, it is
    /// prepared for looking up `addrs` (SVMAs), which parses less of a large debug file
    /// (`DebugInfo::from_map_for`). Any address can still be looked up.
    pub fn debug_info_for(&self, addrs: &[u64]) -> Option<&crate::DebugInfo> {
        self.debug_info_in(|| self.dwarf_file(), addrs)
    }

    /// `debug_info_for`, with the DWARF file found by `find` when this call loads it.
    fn debug_info_in(
        &self,
        find: impl FnOnce() -> Option<(PathBuf, Arc<memmap2::Mmap>)>,
        addrs: &[u64],
    ) -> Option<&crate::DebugInfo> {
        self.debug
            .get_or_init(|| {
                let (path, map) = find()?;
                crate::DebugInfo::from_map_for(&path, map, addrs)
            })
            .as_ref()
    }

    /// The file with this binary's DWARF, mapped: the binary itself, else its separate debug
    /// file (by build id, then .gnu_debuglink), whose build id must match.
    fn dwarf_file(&self) -> Option<(PathBuf, Arc<memmap2::Mmap>)> {
        let has_dwarf = |map: &memmap2::Mmap| {
            object::File::parse(&map[..]).is_ok_and(|obj| crate::dwarf::has_dwarf(&obj))
        };
        if has_dwarf(&self.data) {
            return Some((self.path.clone(), self.data.clone()));
        }
        if let Some((path, map)) = self.debug_file.get().filter(|f| has_dwarf(&f.1)) {
            return Some((path.clone(), map.clone()));
        }
        debug_file_candidates(
            &self.path,
            self.build_id.as_deref(),
            self.debuglink.as_deref(),
            &self.debug_roots,
        )
        .into_iter()
        .find_map(|cand| {
            let map = open_matching(&cand, self.build_id.as_deref()).filter(|m| has_dwarf(m))?;
            Some((cand, map))
        })
    }

    /// Inflates this binary's compressed DWARF sections into rperf's cache folder, where
    /// naming then maps them (`source_frames`); nothing when they are kept already, or when
    /// frames are kept for its debug file (a report naming the same addresses reads no DWARF).
    /// For a report to call while it still reads samples.
    pub fn inflate_dwarf_ahead(&self) {
        let Some((path, map)) = self.dwarf_file() else { return };
        if self.build_id.as_deref().is_none_or(|id| crate::kept_frames::KeptFrames::exist(id, &path)) {
            return;
        }
        crate::dwarf::inflate_ahead(&path, &map);
    }

    /// The source frames at each of `svmas` (SVMAs), as `DebugInfo::frames` gives them (none
    /// for an address the DWARF does not cover; an empty map without DWARF). Frames an
    /// earlier report kept in rperf's cache folder for the same debug file are read back;
    /// only the other addresses are looked up, in DWARF loaded for them, and then kept too
    /// (unless they needed split DWARF, which lies in other files).
    pub fn source_frames(&self, svmas: &[u64]) -> std::collections::HashMap<u64, Vec<crate::SourceFrame>> {
        let Some(found) = self.dwarf_file() else { return Default::default() };
        let dwarf_path = found.0.clone();
        let kept = self.build_id.as_deref().and_then(|id| crate::kept_frames::KeptFrames::open(id, &found.0));
        let missing: Vec<u64> =
            svmas.iter().copied().filter(|&a| kept.as_ref().is_none_or(|k| k.get(a).is_none())).collect();
        // DWARF loaded for other addresses (a live report names new ones at each look) would
        // look these up in every unit, parsing them all (tens of MB for a distribution's debug
        // file): DWARF prepared for these is made for this call instead. So is DWARF loaded to
        // find frames that are then kept: naming reads the kept frames, and held through
        // naming, libc6-dbg's had raised a first report's peak by 5.7 MiB (perf's g++
        // recording, `report -g`).
        let fresh;
        let debug = match self.debug.get() {
            _ if missing.is_empty() => None,
            Some(None) => None,
            Some(Some(d)) if missing.iter().all(|&a| d.focuses_on(a)) => Some(d),
            None if kept.is_none() => self.debug_info_in(|| Some(found), &missing),
            _ => {
                fresh = crate::DebugInfo::from_map_for(&found.0, found.1.clone(), &missing);
                fresh.as_ref()
            }
        };
        let Some(mut kept) = kept else {
            return missing.iter().map(|&a| (a, debug.map(|d| d.frames(a)).unwrap_or_default())).collect();
        };
        if let Some(debug) = debug {
            for a in missing {
                kept.insert(a, debug.frames(a));
            }
            // Split DWARF's frames depend on the `.dwo` and `.dwp` files too: not kept. Nor are
            // those of a file something was left out of, so that each report says what.
            if !debug.reads_split_dwarf() && !crate::notes::left_out_of(&dwarf_path) {
                kept.save();
            }
        }
        kept.into_frames()
    }

    /// The virtual address (SVMA) of file offset `offset`, through the load segment holding it.
    pub fn offset_to_vaddr(&self, offset: u64) -> Option<u64> {
        offset_to_vaddr(&self.segments, offset)
    }

    /// The file's bytes at virtual addresses `start..end` (code to disassemble), when one load
    /// segment holds them all.
    pub fn bytes_at(&self, start: u64, end: u64) -> Option<&[u8]> {
        let s = self.segments.iter().find(|s| start >= s.vaddr && end <= s.vaddr.saturating_add(s.filesz))?;
        let from = usize::try_from(s.offset.checked_add(start - s.vaddr)?).ok()?;
        let to = from.checked_add(usize::try_from(end.checked_sub(start)?).ok()?)?;
        self.data.get(from..to)
    }
}

impl LoadSegment {
    /// The load segments of an ELF file.
    pub fn of(obj: &object::File<'_>) -> Vec<LoadSegment> {
        obj.segments()
            .filter_map(|s| {
                let (offset, filesz) = s.file_range();
                let exec = matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & object::elf::PF_X != 0);
                Some(LoadSegment { vaddr: s.address(), offset, filesz, exec })
                    .filter(|_| filesz > 0 || s.size() > 0)
            })
            .collect()
    }
}

/// The virtual address where an executable mapping of the file from offset `pgoff` begins
/// (mmap offsets are page-aligned: the page holding a segment's start may begin before the
/// segment's own offset). A segment's file offsets and addresses differ by the same amount all
/// through it, so `mapping start - this` is the binary's load bias. The sum wraps, as the bias
/// does.
///
/// Where segments share a page of the file (lld lays them out so: the code's first page also
/// holds the end of the read-only data, at another address), the executable segment is the
/// one mapped.
pub fn mapping_vaddr(segments: &[LoadSegment], pgoff: u64) -> Option<u64> {
    let page = 4096u64;
    let holds = |s: &&LoadSegment| {
        pgoff >= s.offset & !(page - 1) && pgoff < s.offset.saturating_add(s.filesz.max(1))
    };
    let s = segments.iter().filter(holds).find(|s| s.exec).or_else(|| segments.iter().find(holds))?;
    Some(s.vaddr.wrapping_sub(s.offset).wrapping_add(pgoff))
}

/// The virtual address of a file offset by the load segments. Both come from files (the
/// binary's headers, the recording's offsets), so the sum is checked.
fn offset_to_vaddr(segments: &[LoadSegment], offset: u64) -> Option<u64> {
    let s =
        segments.iter().find(|s| offset >= s.offset && offset < s.offset.saturating_add(s.filesz.max(1)))?;
    s.vaddr.checked_add(offset - s.offset)
}

/// The function symbols of a binary mapped as `data`: its .symtab, else its separate debug
/// file's, else MiniDebugInfo's and .dynsym's; with its PLT stubs. Names stay in the mapped
/// files (`SymbolTable::with_names_in`), whose symbol table pages are let go once read (the
/// names read back a page at a time as they are shown).
fn symbol_table(
    obj: &object::File<'_>,
    data: &Arc<memmap2::Mmap>,
    attached: Option<&Arc<memmap2::Mmap>>,
    path: &Path,
    build_id: Option<&[u8]>,
    debuglink: Option<&str>,
    roots: &[PathBuf],
) -> SymbolTable {
    let plt = plt_symbols(obj);
    // The .symtab of `file`, mapped as `map`, with the PLT stubs; its pages let go once read.
    let symtab = |file: &object::File<'_>, map: &Arc<memmap2::Mmap>| {
        let [symtab, strtab] = [".symtab", ".strtab"].map(|name| section_ranges(file, &[name]));
        let mut raw = text_symbols(file, file.symbols());
        // Read through: ordering the symbols reads names (.strtab), not .symtab.
        let_go_of_ranges(map, &symtab);
        if raw.is_empty() {
            let_go_of_ranges(map, &strtab);
            return None;
        }
        raw.extend(plt.iter().copied());
        let table = SymbolTable::with_names_in(raw, Some(map.clone()));
        let_go_of_ranges(map, &strtab);
        Some(table)
    };
    if let Some(table) = symtab(obj, data) {
        return table;
    }
    // Stripped: the full table may be in a separate debug file.
    let local = debug_file_candidates(path, build_id, debuglink, roots)
        .into_iter()
        .filter_map(|cand| open_matching(&cand, build_id));
    for map in attached.cloned().into_iter().chain(local) {
        let Ok(dbg) = object::File::parse(&map[..]) else { continue };
        if let Some(table) = symtab(&dbg, &map) {
            return table;
        }
    }
    // MiniDebugInfo keeps the local function symbols that .dynsym lacks.
    let packed = minidebuginfo(obj);
    let inner = packed.as_deref().and_then(|b| object::File::parse(b).ok());
    let (dynsym, dynstr) =
        (section_ranges(obj, &[".dynsym", ".gnu.hash"]), section_ranges(obj, &[".dynstr"]));
    let mut raw = inner.as_ref().map(|i| text_symbols(i, i.symbols())).unwrap_or_default();
    raw.extend(text_symbols(obj, obj.dynamic_symbols()));
    let_go_of_ranges(data, &dynsym);
    raw.extend(plt);
    let table = SymbolTable::with_names_in(raw, Some(data.clone()));
    let_go_of_ranges(data, &dynstr);
    table
}

/// Lets go of the pages of `names`' sections in `map`: read once, they are not needed again
/// (and are read back in from the page cache if they are).
fn let_go_of_sections(map: &memmap2::Mmap, obj: &object::File<'_>, names: &[&str]) {
    let_go_of_ranges(map, &section_ranges(obj, names));
}

/// Where `names`' sections lie in the file. Found before any is let go of: reading the
/// section headers and their names would map back the pages around them (the kernel maps
/// up to 64 KiB around a fault), which lie beside .symtab and .strtab.
fn section_ranges(obj: &object::File<'_>, names: &[&str]) -> Vec<(u64, u64)> {
    names.iter().filter_map(|name| obj.section_by_name(name).and_then(|s| s.file_range())).collect()
}

fn let_go_of_ranges(map: &memmap2::Mmap, ranges: &[(u64, u64)]) {
    for &(offset, size) in ranges {
        rperf_perfdata::mapped::let_go(map, offset, size);
    }
}

/// Function symbols, plus labels (untyped symbols) in executable sections such as ld.so's
/// `_start`, which perf names too; ARM mapping symbols (`$x`, `$d`) are not functions.
fn text_symbols<'a>(obj: &object::File<'a>, syms: object::read::SymbolIterator<'a, '_>) -> RawSymbols<'a> {
    let executable = |index: Option<object::SectionIndex>| {
        let flags = index.and_then(|i| obj.section_by_index(i).ok()).map(|s| s.flags());
        matches!(flags, Some(object::SectionFlags::Elf { sh_flags }) if sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0)
    };
    syms.filter(|s| s.address() != 0)
        .filter(|s| match s.kind() {
            SymbolKind::Text => true,
            SymbolKind::Unknown => {
                executable(s.section_index())
                    && s.name().is_ok_and(|n| !n.is_empty() && !n.starts_with('$') && !n.starts_with(".L"))
            }
            _ => false,
        })
        .filter_map(|s| {
            let binding = if s.is_weak() {
                Binding::Weak
            } else if s.is_global() {
                Binding::Global
            } else {
                Binding::Local
            };
            Some((s.address(), s.size(), s.name().ok()?, binding))
        })
        .collect()
}

/// PLT stubs have no symbols; name them `@plt`, as perf does when it cannot tell the target.
fn plt_symbols(obj: &object::File<'_>) -> RawSymbols<'static> {
    [".plt", ".plt.sec", ".plt.got"]
        .iter()
        .filter_map(|n| obj.section_by_name(n))
        .filter(|s| s.size() > 0)
        .map(|s| (s.address(), s.size(), "@plt", Binding::Weak))
        .collect()
}

/// The most a `.gnu_debugdata` section may inflate to (real ones are a few MiB), and to at
/// most `rperf_perfdata::inflate::MAX_RATIO` times its own size.
const MINIDEBUGINFO_LIMIT: usize = 64 << 20;

/// Function symbols from MiniDebugInfo: an xz-compressed ELF file in `.gnu_debugdata` whose
/// .symtab holds the symbols a stripped binary's .dynsym lacks (Fedora, Android).
/// The ELF file MiniDebugInfo packs in `.gnu_debugdata`, inflated.
fn minidebuginfo(obj: &object::File<'_>) -> Option<Vec<u8>> {
    let packed = obj.section_by_name(".gnu_debugdata")?.data().ok()?;
    let limit =
        packed.len().saturating_mul(rperf_perfdata::inflate::MAX_RATIO as usize).min(MINIDEBUGINFO_LIMIT);
    let mut out = LimitedVec(Vec::new(), limit);
    lzma_rs::xz_decompress(&mut std::io::Cursor::new(packed), &mut out).ok()?;
    Some(out.0)
}

/// A Vec that refuses to grow past MINIDEBUGINFO_LIMIT (a corrupt stream cannot exhaust memory).
struct LimitedVec(Vec<u8>, usize);

impl std::io::Write for LimitedVec {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > self.1 {
            return Err(std::io::Error::other(".gnu_debugdata inflates past its limit"));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Where separate debug files for `path` may be: by build id under /usr/lib/debug/.build-id and
/// in perf's build-id cache (`~/.debug/.build-id/xx/rest/debug`), and by .gnu_debuglink name
/// beside the binary, in its .debug/ folder and under /usr/lib/debug. Each of `roots` is
/// searched first: as a root file system (`ROOT/usr/lib/debug/...`), as a build-id cache
/// (`ROOT/.build-id/xx/rest.debug`, `ROOT/.build-id/xx/rest/debug`).
pub fn debug_file_candidates(
    path: &Path,
    build_id: Option<&[u8]>,
    debuglink: Option<&str>,
    roots: &[PathBuf],
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let home = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug"));
    if let Some(id) = build_id.filter(|b| b.len() >= 2) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let (dir, rest) = (&hex[..2], &hex[2..]);
        for root in roots {
            for rel in [
                format!("usr/lib/debug/.build-id/{dir}/{rest}.debug"),
                format!(".build-id/{dir}/{rest}.debug"),
                format!(".build-id/{dir}/{rest}/debug"),
            ] {
                out.extend(crate::locate::inside(root, Path::new(&rel)));
            }
        }
        out.push(PathBuf::from(format!("/usr/lib/debug/.build-id/{dir}/{rest}.debug")));
        if let Some(cache) = &home {
            out.push(cache.join(format!(".build-id/{dir}/{rest}/debug")));
        }
    }
    // A debuglink names a file, never a path: one with a `/` (`../../etc/shadow`) is ignored.
    let debuglink = debuglink.filter(|l| !l.contains('/') && *l != ".." && !l.is_empty());
    if let (Some(link), Some(dir)) = (debuglink, path.parent()) {
        out.push(dir.join(link));
        out.push(dir.join(".debug").join(link));
        let rel = dir.strip_prefix("/").unwrap_or(dir);
        for root in roots {
            out.extend(crate::locate::inside(root, &Path::new("usr/lib/debug").join(rel).join(link)));
        }
        out.push(Path::new("/usr/lib/debug").join(rel).join(link));
    }
    out.retain(|p| p != path);
    out
}

fn debuglink_of(obj: &object::File<'_>) -> Option<String> {
    let d = obj.section_by_name(".gnu_debuglink")?.data().ok()?;
    let end = d.iter().position(|c| *c == 0)?;
    std::str::from_utf8(&d[..end]).ok().map(str::to_string)
}

/// Maps `path` if it is an ELF file whose build id matches `want` (or either has none).
fn open_matching(path: &Path, want: Option<&[u8]>) -> Option<Arc<memmap2::Mmap>> {
    let file = std::fs::File::open(path).ok()?;
    let map = Arc::new(rperf_perfdata::mapped::map(&file).ok()?);
    let obj = object::File::parse(&map[..]).ok()?;
    if let (Some(want), Some(have)) = (want, obj.build_id().ok().flatten()) {
        if !crate::buildid::same(want, have) {
            return None;
        }
    }
    drop(obj);
    Some(map)
}

#[cfg(test)]
#[path = "elf_tests.rs"]
mod tests;
