//! The whole symbol table of one binary a recording names, found as reports find it (`--symfs`,
//! symbol folders, this machine, APKs, matched by the recorded build id), else the symbols the
//! recording stores for it (simpleperf's file feature). The report library hands it out
//! (`ReadSymbolsForPath`).

use std::path::Path;

use rperf_symbols::{BinaryFinder, ElfInfo, Found, SymbolTable};

use crate::error::Error;
use crate::options::ReportOptions;
use crate::resolve::NameStyle;

/// One function of a binary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinarySymbol {
    /// Its start, in the binary's address space.
    pub addr: u64,
    /// Its length in bytes.
    pub len: u64,
    /// Its name as reports show it.
    pub name: String,
}

/// The functions of the binary the recording `opts.input` names `path`, by address; None when
/// neither the binary nor symbols stored for it are found.
pub fn binary_symbols(opts: &ReportOptions, path: &str) -> Result<Option<Vec<BinarySymbol>>, Error> {
    let rec = crate::load::open(&opts.load_config(Default::default()))?;
    let build_id = rec.build_ids.get(path).filter(|b| b.iter().any(|&x| x != 0));
    let mut finder = BinaryFinder::new(&opts.symfs);
    finder.add_symdirs(&opts.symdirs);
    let elf = match finder.find(path, build_id.map(Vec::as_slice)) {
        Found::File(file) => ElfInfo::load_with_debug_roots(&file, &finder.debug_roots()).ok(),
        Found::Fetched(f) => ElfInfo::from_mapped(&f.path, f.map).ok(),
        Found::Embedded { apk, entry } => {
            ElfInfo::load_range(Path::new(path), &apk, entry.offset, entry.size).ok()
        }
        Found::BuildIdMismatch(_) | Found::Missing => None,
    };
    let stored;
    let table = match elf.as_ref().map(ElfInfo::symbols).filter(|t| !t.is_empty()) {
        Some(t) => t,
        None => {
            let Some(r) = rec.stored_symbols.iter().find(|r| r.path == path) else { return Ok(None) };
            stored =
                SymbolTable::new(r.symbol.iter().map(|s| (s.vaddr, s.len as u64, s.name.clone())).collect());
            &stored
        }
    };
    Ok(Some(
        table
            .iter()
            .map(|s| BinarySymbol { addr: s.start, len: s.end - s.start, name: shown(&s.name, opts.names) })
            .collect(),
    ))
}

/// A stored name as reports show it.
fn shown(name: &str, style: NameStyle) -> String {
    match style {
        NameStyle::Full => rperf_symbols::demangle_full(name),
        NameStyle::Short => rperf_symbols::demangle(name),
        NameStyle::Mangled => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_style() {
        assert_eq!(shown("_Z5func2ii", NameStyle::Full), "func2(int, int)");
        assert_eq!(shown("_Z5func2ii", NameStyle::Short), "func2");
        assert_eq!(shown("_Z5func2ii", NameStyle::Mangled), "_Z5func2ii");
    }
}
