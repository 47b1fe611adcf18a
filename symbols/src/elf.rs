//! Loading an ELF file: its build id, load segments and symbol table.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};

use crate::{Error, SymbolTable};

/// A PT_LOAD segment: how file offsets map to virtual addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadSegment {
    /// p_vaddr.
    pub vaddr: u64,
    /// p_offset.
    pub offset: u64,
    /// p_filesz.
    pub filesz: u64,
}

/// What rperf needs from one ELF binary.
pub struct ElfInfo {
    /// Where it was loaded from.
    pub path: PathBuf,
    /// The GNU build id, if any.
    pub build_id: Option<Vec<u8>>,
    /// Load segments.
    pub segments: Vec<LoadSegment>,
    /// Function symbols (.symtab, else .dynsym).
    pub symbols: SymbolTable,
    /// The mapped file, for unwind sections and debug info.
    pub data: Arc<memmap2::Mmap>,
}

impl ElfInfo {
    /// Maps and parses `path`.
    pub fn load(path: &Path) -> Result<ElfInfo, Error> {
        let file = std::fs::File::open(path).map_err(|e| Error::Io { path: path.into(), source: e })?;
        // SAFETY: mapped read-only; binaries changing under a running report is outside what a
        // profiler can guard against (every symbolizer maps them).
        let map =
            unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::Io { path: path.into(), source: e })?;
        let data = Arc::new(map);
        let obj = object::File::parse(&data[..])
            .map_err(|e| Error::Parse { path: path.into(), reason: e.to_string() })?;
        let build_id = obj.build_id().ok().flatten().map(<[u8]>::to_vec);
        let segments = obj
            .segments()
            .filter_map(|s| {
                let (offset, filesz) = s.file_range();
                Some(LoadSegment { vaddr: s.address(), offset, filesz })
                    .filter(|_| filesz > 0 || s.size() > 0)
            })
            .collect();
        let collect = |syms: object::read::SymbolIterator<'_, '_>| -> Vec<(u64, u64, String)> {
            syms.filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
                .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
                .collect()
        };
        let mut raw = collect(obj.symbols());
        if raw.is_empty() {
            raw = collect(obj.dynamic_symbols());
        }
        Ok(ElfInfo { path: path.into(), build_id, segments, symbols: SymbolTable::new(raw), data })
    }

    /// The virtual address (SVMA) of file offset `offset`, through the load segment holding it.
    pub fn offset_to_vaddr(&self, offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| offset >= s.offset && offset < s.offset.saturating_add(s.filesz.max(1)))
            .map(|s| s.vaddr + (offset - s.offset))
    }
}
