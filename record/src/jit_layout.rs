//! The GDB JIT interface as it lies in a process's memory: the descriptors a binary exports
//! (`__jit_debug_descriptor`, ART's `__dex_debug_descriptor`), their layout (standard and
//! ART's), list entries, reading another process's memory, and the code a symbol file covers.

use object::elf;
use object::read::elf::{ElfFile64, Sym};
use object::{Endianness, Object, ObjectSection, ObjectSymbol, SymbolIndex};
use rperf_perfdata::bytes::{u32_at, u64_at};
use rperf_symbols::LoadSegment;

/// The two lists a process may have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum List {
    /// `__jit_debug_descriptor`: ELF symbol files of JIT-compiled code.
    Jit,
    /// `__dex_debug_descriptor`: ART's in-memory dex files.
    Dex,
}

/// Where a binary keeps its descriptors: their virtual addresses and the load segments that
/// turn a mapping of the file into the binary's load bias.
#[derive(Debug)]
pub(crate) struct Exports {
    pub(crate) lists: Vec<(List, u64)>,
    pub(crate) segments: Vec<LoadSegment>,
}

/// A descriptor as read: the standard fields and ART's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Descriptor {
    /// 1 in every descriptor (GDB's and ART's): anything else was read at a wrong address.
    pub(crate) version: u32,
    pub(crate) action: u32,
    pub(crate) relevant: u64,
    pub(crate) first: u64,
    /// ART's variant: `Android1` (1) or `Android2` (2), with its lock and last action's time.
    pub(crate) art: Option<(u8, u32, u64)>,
}

impl Descriptor {
    pub(crate) const STANDARD: usize = 24;
    pub(crate) const ART: usize = 56;

    pub(crate) fn parse(b: &[u8; Self::ART]) -> Descriptor {
        // Both offsets lie inside the fixed-size array.
        let u32_at = |at: usize| u32_at(b, at).unwrap_or(0);
        let u64_at = |at: usize| u64_at(b, at).unwrap_or(0);
        let art = match &b[24..32] {
            b"Android1" => Some(1),
            b"Android2" => Some(2),
            _ => None,
        };
        Descriptor {
            version: u32_at(0),
            action: u32_at(4),
            relevant: u64_at(8),
            first: u64_at(16),
            art: art.map(|v| (v, u32_at(44), u64_at(48))),
        }
    }

    pub(crate) fn locked(&self) -> bool {
        self.art.is_some_and(|(_, seq, _)| seq % 2 == 1)
    }
}

/// One entry of a list, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Entry {
    pub(crate) at: u64,
    pub(crate) symfile: u64,
    pub(crate) size: u64,
    /// ART's registration time, 0 when not given.
    pub(crate) registered: u64,
}

/// A process's memory: `process_vm_readv`, else `/proc/PID/mem`.
pub(crate) struct Memory {
    pub(crate) pid: u32,
}

impl Memory {
    pub(crate) fn read(&self, addr: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: `local` covers `buf`, which lives through the call; the kernel checks `remote`.
        let n = unsafe { libc::process_vm_readv(self.pid as i32, &local, 1, &remote, 1, 0) };
        if n == buf.len() as isize {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if n >= 0 || err.raw_os_error() == Some(libc::ENOSYS) {
            use std::os::unix::fs::FileExt;
            let f = std::fs::File::open(format!("/proc/{}/mem", self.pid))?;
            return f.read_exact_at(buf, addr);
        }
        Err(err)
    }
}

/// The descriptors `path` exports in its dynamic symbol table, with its load segments; `None`
/// for binaries without them (most) and for files that are not regular 64-bit ELF files.
///
/// Every binary a process maps is asked, so the two names are looked up through the binary's
/// hash table (GNU's, else SysV's), as the dynamic linker does, not by reading every name.
pub(crate) fn exports_of(path: &str) -> Option<Exports> {
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let map = rperf_perfdata::mapped::map(&file).ok()?;
    let obj = object::File::parse(&map[..]).ok()?;
    let object::File::Elf64(elf) = &obj else { return None };
    let names = [(List::Jit, "__jit_debug_descriptor"), (List::Dex, "__dex_debug_descriptor")];
    let lists = defined_dynamic(elf, names);
    if lists.is_empty() {
        return None;
    }
    Some(Exports { lists, segments: LoadSegment::of(&obj) })
}

/// The addresses of the `names` that the dynamic symbol table defines.
fn defined_dynamic<const N: usize>(
    elf: &ElfFile64<'_, Endianness>,
    names: [(List, &str); N],
) -> Vec<(List, u64)> {
    let (endian, data) = (elf.endian(), elf.data());
    let sections = elf.elf_section_table();
    let Ok(symbols) = sections.symbols(endian, data, elf::SHT_DYNSYM) else { return Vec::new() };
    let versions = sections.versions(endian, data).ok().flatten().unwrap_or_default();
    let gnu = sections.gnu_hash(endian, data).ok().flatten();
    let sysv = sections.hash(endian, data).ok().flatten();
    let find = |name: &[u8]| {
        if let Some((table, _)) = &gnu {
            table.find(endian, name, elf::gnu_hash(name), None, &symbols, &versions)
        } else if let Some((table, _)) = &sysv {
            table.find(endian, name, elf::hash(name), None, &symbols, &versions)
        } else {
            // No hash table (a binary not made for the dynamic linker): every name is read.
            let strings = symbols.strings();
            symbols
                .iter()
                .enumerate()
                .find(|(_, s)| s.name(endian, strings) == Ok(name))
                .map(|(i, s)| (SymbolIndex(i), s))
        }
    };
    names
        .into_iter()
        .filter_map(|(list, name)| {
            let (_, sym) = find(name.as_bytes())?;
            sym.is_definition(endian).then(|| (list, sym.st_value(endian)))
        })
        .collect()
}

/// The code an ELF symbol file describes: its executable sections (whose addresses the runtime
/// set to where the code runs), else its function symbols.
pub(crate) fn code_range(image: &[u8]) -> (u64, u64) {
    let Ok(obj) = object::File::parse(image) else { return (0, 0) };
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    for s in obj.sections() {
        let exec = matches!(s.flags(), object::SectionFlags::Elf { sh_flags }
            if sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0);
        if exec && s.size() > 0 && s.address() != 0 {
            lo = lo.min(s.address());
            hi = hi.max(s.address().saturating_add(s.size()));
        }
    }
    if lo == u64::MAX {
        for s in obj.symbols().filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0) {
            lo = lo.min(s.address());
            hi = hi.max(s.address().saturating_add(s.size().max(1)));
        }
    }
    if lo == u64::MAX {
        (0, 0)
    } else {
        (lo, hi)
    }
}

/// What one read of a list found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Read {
    Changed,
    Unchanged,
    /// No consistent read (the lock held odd, the list changing under the walk): next poll.
    Busy,
    /// The process's memory can't be read (exited, not permitted, descriptor unmapped), or what
    /// is there is no descriptor.
    Gone,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_standard_and_art() {
        let mut b = [0u8; Descriptor::ART];
        b[0..4].copy_from_slice(&1u32.to_le_bytes());
        b[4..8].copy_from_slice(&1u32.to_le_bytes());
        b[8..16].copy_from_slice(&0x1000u64.to_le_bytes());
        b[16..24].copy_from_slice(&0x1000u64.to_le_bytes());
        let d = Descriptor::parse(&b);
        assert_eq!((d.action, d.relevant, d.first, d.art), (1, 0x1000, 0x1000, None));
        b[24..32].copy_from_slice(b"Android2");
        b[44..48].copy_from_slice(&7u32.to_le_bytes());
        b[48..56].copy_from_slice(&99u64.to_le_bytes());
        let d = Descriptor::parse(&b);
        assert_eq!(d.art, Some((2, 7, 99)));
        assert!(d.locked());
    }

    /// The descriptors as every dynamic symbol's name gives them.
    fn by_every_name(path: &std::path::Path) -> Option<Vec<(List, u64)>> {
        let data = std::fs::read(path).unwrap();
        let obj = object::File::parse(&data[..]).ok().filter(|o| o.is_64())?;
        let found = obj
            .dynamic_symbols()
            .filter(|s| s.is_definition())
            .filter_map(|s| match s.name().ok()? {
                "__jit_debug_descriptor" => Some((List::Jit, s.address())),
                "__dex_debug_descriptor" => Some((List::Dex, s.address())),
                _ => None,
            })
            .collect();
        Some(found)
    }

    /// tests/programs/jitrt.c, which exports `__jit_debug_descriptor`, linked with `hash_style`.
    fn runtime_linked(hash_style: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("rperf-jit-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join(format!("jitrt-{hash_style}"));
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/programs/jitrt.c");
        let st = std::process::Command::new("gcc")
            .args(["-O2", "-rdynamic", &format!("-Wl,--hash-style={hash_style}"), "-o"])
            .arg(&out)
            .arg(src)
            .status()
            .unwrap();
        assert!(st.success(), "building {src}");
        out
    }

    #[test]
    fn hash_table_lookups_find_what_every_name_gives() {
        // A runtime with GNU's hash table and one with SysV's export the JIT descriptor; the
        // toolchain's libraries (LLVM's, linked by lld, exports it too), the C library and
        // this test import or lack it.
        let mut files = vec![runtime_linked("gnu"), runtime_linked("sysv")];
        let sysroot = std::process::Command::new(std::env::var("RUSTC").unwrap_or("rustc".into()))
            .args(["--print", "sysroot"])
            .output()
            .unwrap();
        let lib = std::path::Path::new(std::str::from_utf8(&sysroot.stdout).unwrap().trim()).join("lib");
        files.extend(std::fs::read_dir(&lib).into_iter().flatten().map(|e| e.unwrap().path()));
        files.extend(["/lib/x86_64-linux-gnu/libc.so.6", "/proc/self/exe"].map(Into::into));
        for path in files.iter().filter(|p| p.is_file()) {
            let Some(expected) = by_every_name(path) else { continue };
            let found = exports_of(path.to_str().unwrap()).map(|e| e.lists).unwrap_or_default();
            let same = found.len() == expected.len() && expected.iter().all(|e| found.contains(e));
            assert!(same, "{}: {found:?}, every name gives {expected:?}", path.display());
        }
        for runtime in &files[..2] {
            let lists = by_every_name(runtime).unwrap_or_default();
            assert!(lists.iter().any(|(l, _)| *l == List::Jit), "{}: {lists:?}", runtime.display());
        }
        std::fs::remove_dir_all(files[0].parent().unwrap()).ok();
    }
}
