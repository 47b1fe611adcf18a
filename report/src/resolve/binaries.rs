//! Binaries: found (on this machine, in `--symfs`, in APKs, by build id) and loaded once
//! each, with their symbols and unwind tables; the kernel's symbols, loaded on first need; and
//! the symbols a simpleperf recording stores.

use std::collections::HashMap;
use std::sync::Arc;

use linux_perf_data::{SimpleperfFileRecord, SimpleperfTypeSpecificInfo};
use rperf_symbols::debuginfod::{Artifact, Cached, Want};
use rperf_symbols::{BinaryFinder, ElfInfo, Found, KernelSymbols, SymbolTable};
use rperf_unwind::{Arch, UnwindSections};

use super::types::KernelSource;
use crate::model::{DsoId, DsoKind, Model};

/// Symbols the recording carries itself (simpleperf's file feature).
pub(super) struct StoredTable {
    pub(super) table: SymbolTable,
    pub(super) min_vaddr: u64,
    pub(super) file_offset_of_min_vaddr: u64,
}

pub(super) struct Binary {
    pub(super) elf: ElfInfo,
    pub(super) unwind: Option<Arc<UnwindSections>>,
}

impl Binary {
    /// A loaded ELF file, with its unwind tables when it has any.
    fn new(elf: ElfInfo) -> Arc<Binary> {
        let unwind = UnwindSections::from_shared(elf.data.clone()).filter(|u| u.has_cfi()).map(Arc::new);
        Arc::new(Binary { elf, unwind })
    }
}

/// The binaries of one recording.
pub(super) struct Binaries {
    pub(super) finder: BinaryFinder,
    /// Each DSO's binary, once looked for (None: not found or unreadable).
    pub(super) loaded: HashMap<DsoId, Option<Arc<Binary>>>,
    /// Symbols the recording stores, by recorded path.
    pub(super) stored: HashMap<String, StoredTable>,
    /// The libraries stored in each APK mapped (by recorded path).
    apks: HashMap<String, Option<Vec<rperf_symbols::apk::Entry>>>,
    pub(super) kernel: KernelSource,
    kernel_dso: Option<DsoId>,
}

impl Binaries {
    pub(super) fn new(
        finder: BinaryFinder,
        kernel: KernelSource,
        stored: Vec<SimpleperfFileRecord>,
    ) -> Binaries {
        let stored = stored
            .into_iter()
            .map(|r| {
                // u64::MAX is simpleperf's "not recorded" (see `name_of`).
                let file_offset_of_min_vaddr = match &r.type_specific_msg {
                    Some(SimpleperfTypeSpecificInfo::ElfFile(e)) => e.file_offset_of_min_vaddr,
                    _ => 0,
                };
                let raw = r.symbol.iter().map(|s| (s.vaddr, s.len as u64, s.name.clone())).collect();
                let table = SymbolTable::new(raw);
                (r.path.clone(), StoredTable { table, min_vaddr: r.min_vaddr, file_offset_of_min_vaddr })
            })
            .collect();
        Binaries { finder, loaded: HashMap::new(), stored, apks: HashMap::new(), kernel, kernel_dso: None }
    }

    /// A mapping of an APK at file offset `pgoff` (as Linux perf records Android's libraries,
    /// mapped straight from the APK) as the library stored there: its path as simpleperf
    /// records it (`X.apk!/lib/abi/libfoo.so`) and the offset in the library. None when the
    /// APK is not found or no library is stored at that offset.
    pub fn apk_library(&mut self, path: &str, pgoff: u64) -> Option<(String, u64)> {
        if !path.ends_with(".apk") {
            return None;
        }
        let finder = &self.finder;
        let entries =
            self.apks.entry(path.to_string()).or_insert_with(|| finder.apk_entries(path)).as_ref()?;
        let e = rperf_symbols::apk::entry_at(entries, pgoff).filter(|e| e.name.ends_with(".so"))?;
        Some((format!("{path}!/{}", e.name), pgoff - e.offset))
    }

    /// The binary of `dso`, loaded on first use; why it could not be used goes to `warnings`.
    pub(super) fn get(
        &mut self,
        model: &Model,
        dso: DsoId,
        warnings: &mut Vec<crate::Warning>,
    ) -> Option<Arc<Binary>> {
        if let Some(b) = self.loaded.get(&dso) {
            return b.clone();
        }
        let (loaded, warning) = load_binary(&self.finder, &model.dsos[dso as usize]);
        warnings.extend(warning);
        self.loaded.insert(dso, loaded.clone());
        loaded
    }

    /// Fetches from debuginfod servers what naming `dsos` needs and this machine lacks: the
    /// binaries not found here, and the debug files of binaries without DWARF (`dwarf`) or
    /// without a full symbol table. Debug files cached before are attached right away, side
    /// by side; the rest is fetched, and the binaries fetched are loaded. The DSOs loaded so
    /// come back.
    pub(super) fn fetch_for_naming(&mut self, model: &Model, dsos: &[DsoId], dwarf: bool) -> Vec<DsoId> {
        use rayon::prelude::*;
        let Some(client) = self.finder.debuginfod() else { return Vec::new() };
        // Telling what a binary lacks parses it, and the cache may have it: side by side.
        let wanted: Vec<(DsoId, Want)> = dsos
            .par_iter()
            .flat_map_iter(|&d| {
                let dso = &model.dsos[d as usize];
                let id =
                    dso.build_id.as_ref().filter(|b| b.iter().any(|x| *x != 0) && dso.kind == DsoKind::File);
                let want = |artifact| Want {
                    build_id: id.cloned().unwrap_or_default(),
                    artifact,
                    name: dso.path.clone(),
                };
                let wants = match (id, self.loaded.get(&d)) {
                    (None, _) => vec![],
                    (Some(_), Some(Some(b))) if !b.elf.lacks_debug_info(dwarf) => vec![],
                    (Some(id), Some(Some(b))) => match client.cached(id, Artifact::Debuginfo) {
                        Cached::Here(f) => {
                            b.elf.attach_debug_file(&f.path, f.map);
                            vec![]
                        }
                        Cached::NotOnServers => vec![],
                        Cached::Unknown => vec![want(Artifact::Debuginfo)],
                    },
                    (Some(_), _) => vec![want(Artifact::Executable), want(Artifact::Debuginfo)],
                };
                wants.into_iter().map(move |w| (d, w))
            })
            .collect();
        if wanted.is_empty() {
            return Vec::new();
        }
        let mut fetching: Vec<DsoId> = wanted.iter().map(|(d, _)| *d).collect();
        fetching.dedup();
        self.finder.fetch(wanted.into_iter().map(|(_, w)| w).collect());
        let mut reloaded = Vec::new();
        for &d in &fetching {
            let dso = &model.dsos[d as usize];
            let id = dso.build_id.as_deref();
            if matches!(self.loaded.get(&d), Some(None) | None)
                && self.finder.fetched(id, Artifact::Executable).is_some()
            {
                let (b, _) = load_binary(&self.finder, dso);
                reloaded.extend(b.is_some().then_some(d));
                self.loaded.insert(d, b);
            }
        }
        // Checking a debug file's build id parses it: side by side.
        fetching.par_iter().for_each(|d| {
            let id = model.dsos[*d as usize].build_id.as_deref();
            if let (Some(Some(b)), Some(f)) =
                (self.loaded.get(d), self.finder.fetched(id, Artifact::Debuginfo))
            {
                b.elf.attach_debug_file(&f.path, f.map.clone());
            }
        });
        reloaded
    }

    /// What the debuginfod client has to say, once.
    pub(super) fn take_debuginfod_summary(&self) -> Vec<String> {
        self.finder.debuginfod().map(|c| c.take_summary()).unwrap_or_default()
    }

    /// The DSO of kernel addresses outside every recorded kernel mapping.
    pub(super) fn kernel_dso(&mut self, model: &mut Model) -> DsoId {
        *self.kernel_dso.get_or_insert_with(|| model.dso("[kernel.kallsyms]", None, DsoKind::Kernel))
    }

    /// Kernel symbols for the kernel addresses given, loaded on first need.
    pub(super) fn kernel(
        &mut self,
        addrs: impl FnOnce() -> Vec<u64>,
        warnings: &mut Vec<crate::Warning>,
    ) -> &KernelSymbols {
        match &mut self.kernel {
            KernelSource::Pending(load) => {
                let (symbols, warning) = load(&addrs());
                warnings.extend(warning.map(crate::Warning::Symbols));
                self.kernel = KernelSource::Ready(symbols);
            }
            KernelSource::Following(load, symbols, loaded_for) => {
                let addrs = addrs();
                if *loaded_for != Some(addrs.len()) {
                    let (s, warning) = load(&addrs);
                    warnings.extend(warning.map(crate::Warning::Symbols));
                    (*symbols, *loaded_for) = (s, Some(addrs.len()));
                }
            }
            KernelSource::Ready(_) => {}
        }
        self.kernel.loaded().expect("loaded above")
    }

    /// Kernel symbols are loaded again whenever kernel addresses were added since (a live
    /// report).
    pub(super) fn follow_kernel(&mut self) {
        let kernel = std::mem::replace(&mut self.kernel, KernelSource::Ready(KernelSymbols::default()));
        self.kernel = match kernel {
            KernelSource::Pending(load) => KernelSource::Following(load, KernelSymbols::default(), None),
            other => other,
        };
    }
}

/// Fetches from debuginfod servers, side by side, the binaries of the recording's build-id
/// table that are not on this machine, so that unwinding user stacks can read them.
pub fn fetch_missing_binaries(
    finder: &mut BinaryFinder,
    model: &Model,
    build_ids: &HashMap<String, Vec<u8>>,
) {
    let wanted = build_ids
        .iter()
        .filter(|(path, id)| {
            model.kind_of(path) == DsoKind::File
                && matches!(finder.find(path, Some(id)), Found::Missing | Found::BuildIdMismatch(_))
        })
        .map(|(path, id)| Want { build_id: id.clone(), artifact: Artifact::Executable, name: path.clone() })
        .collect();
    finder.fetch(wanted);
}

/// The file offset of `addr` in mapping `m`. The mapping's offset comes from the recording, so
/// the sum is checked: a MMAP2 record with a `pgoff` near 2^64 gives no offset (a regression
/// test, `file_offsets_never_overflow`, and tests/hostile.rs, cover it).
pub(super) fn file_offset(addr: u64, m: &crate::model::Mapping) -> Option<u64> {
    addr.checked_sub(m.start)?.checked_add(m.pgoff)
}

/// The virtual address of file offset `key` in a binary whose symbols the recording stores,
/// by the stored `min_vaddr` and its file offset; None where the recording's numbers overflow.
pub(super) fn stored_vaddr(key: u64, min_vaddr: u64, file_offset_of_min_vaddr: u64) -> Option<u64> {
    key.checked_add(min_vaddr)?.checked_sub(file_offset_of_min_vaddr)
}

/// Kernel addresses by architecture convention, for frames recorded without a context marker.
pub fn is_kernel_address(addr: u64, arch: Arch) -> bool {
    match arch {
        Arch::X86_64 => addr >= 0xffff_8000_0000_0000,
        Arch::Aarch64 => addr >= 0xffff_0000_0000_0000,
    }
}

/// Finds and loads the binary for a DSO; the warning says why a candidate was not used.
fn unreadable(path: impl std::fmt::Display, why: impl std::fmt::Display) -> crate::Warning {
    crate::Warning::BinaryUnreadable { path: path.to_string(), why: why.to_string() }
}

pub(super) fn load_binary(
    finder: &BinaryFinder,
    d: &crate::model::Dso,
) -> (Option<Arc<Binary>>, Option<crate::Warning>) {
    if d.kind == DsoKind::Vdso {
        let elf = finder
            .find_vdso(d.build_id.as_deref())
            .and_then(|image| ElfInfo::from_bytes(std::path::Path::new("[vdso]"), &image).ok());
        return (elf.map(Binary::new), None);
    }
    if d.kind != DsoKind::File {
        return (None, None);
    }
    match finder.find(&d.path, d.build_id.as_deref()) {
        Found::File(path) => match ElfInfo::load_with_debug_roots(&path, &finder.debug_roots()) {
            Ok(elf) => (Some(Binary::new(elf)), None),
            Err(e) => (None, Some(unreadable(path.display(), e))),
        },
        Found::Fetched(f) => match ElfInfo::from_mapped(&f.path, f.map) {
            Ok(elf) => (Some(Binary::new(elf)), None),
            Err(e) => (None, Some(unreadable(f.path.display(), e))),
        },
        Found::Embedded { apk, entry } => {
            let name = format!("{}!/{}", apk.display(), entry.name);
            match ElfInfo::load_range(std::path::Path::new(&name), &apk, entry.offset, entry.size) {
                Ok(elf) => (Some(Binary::new(elf)), None),
                Err(e) => (None, Some(unreadable(&name, e))),
            }
        }
        Found::BuildIdMismatch(path) => (
            None,
            Some(crate::Warning::BuildIdMismatch {
                found: path,
                recorded: d.build_id.as_deref().map(rperf_symbols::buildid::hex).unwrap_or_default(),
                dso: d.path.clone(),
            }),
        ),
        Found::Missing => (None, None),
    }
}
