//! JIT code's names: the JIT symbol maps (`/tmp/perf-PID.map`) and jitdumps, kept in the
//! recording or read on this machine, and the symbol files of the GDB JIT interface.

use std::collections::HashMap;
use std::sync::Arc;

use linux_perf_data::SimpleperfFileRecord;
use rperf_symbols::{ElfInfo, SymbolTable};
use rperf_unwind::UnwindSections;

use super::binaries::{Binaries, Binary};
use crate::model::{DsoId, DsoKind, Model};

/// The JIT sources of one recording.
#[derive(Default)]
pub struct JitSources {
    /// JIT symbol maps kept in the recording, by pid (text of `/tmp/perf-PID.map`).
    pub embedded_perf_maps: HashMap<i32, String>,
    /// jitdump files kept in the recording, by pid.
    pub embedded_jitdumps: HashMap<i32, Vec<u8>>,
    /// Symbol files of the GDB JIT interface kept in the recording.
    pub symfiles: crate::jit::Symfiles,
    /// JIT symbol maps simpleperf stored in the recording, by pid.
    stored_perf_maps: HashMap<i32, StoredMap>,
    pub(super) perf_maps: HashMap<i32, Option<(DsoId, SymbolTable)>>,
    pub(super) perf_map_of_dso: HashMap<DsoId, i32>,
    /// The DSO of each symbol file seen, and the DSO its functions belong to (`[JIT]`, or
    /// ART's cache).
    symfile_dsos: HashMap<usize, DsoId>,
    pub(super) symfile_func_dso: HashMap<DsoId, DsoId>,
    /// Read JIT maps and jitdumps on this machine whatever their owner (`--force`).
    pub(super) trust_any_owner: bool,
}

/// A JIT symbol map simpleperf stored in the recording: the name it stored it under, and its
/// symbols (start, length, name).
type StoredMap = (String, Vec<(u64, u64, String)>);

impl JitSources {
    /// simpleperf stores the JIT symbol maps it read as files named `perf-PID.map`.
    pub(super) fn take_stored_perf_maps(&mut self, stored: &[SimpleperfFileRecord]) {
        self.stored_perf_maps = stored
            .iter()
            .filter_map(|r| {
                let pid =
                    r.path.rsplit('/').next()?.strip_prefix("perf-")?.strip_suffix(".map")?.parse().ok()?;
                let symbols = r.symbol.iter().map(|s| (s.vaddr, s.len as u64, s.name.clone())).collect();
                Some((pid, (r.path.clone(), symbols)))
            })
            .collect();
    }

    /// The DSO of symbol file `i`, made and loaded on first use; its functions belong to the
    /// ART JIT cache its code is in (`[JIT app cache]`), else to `[JIT]`.
    pub(super) fn symfile_dso(&mut self, model: &mut Model, i: usize, binaries: &mut Binaries) -> DsoId {
        if let Some(&d) = self.symfile_dsos.get(&i) {
            return d;
        }
        let f = &self.symfiles.files[i];
        let mapping = model.processes.get(&(f.pid as i32)).and_then(|s| s.find(f.code.0));
        let cache = mapping.and_then(|m| crate::model::art_jit_cache(&model.dsos[m.dso as usize].path));
        let name = format!("[JIT symbol file {} of pid {}]", i, f.pid);
        let dso = model.dso(&name, None, DsoKind::Jit);
        let linked = rperf_symbols::jit::link(&f.image);
        let binary = ElfInfo::from_bytes(std::path::Path::new(&name), &linked).ok().map(|elf| {
            let unwind = UnwindSections::from_elf(&linked).filter(|u| u.has_cfi()).map(Arc::new);
            Arc::new(Binary { elf, unwind })
        });
        binaries.loaded.insert(dso, binary);
        let func_dso = model.dso(cache.unwrap_or("[JIT]"), None, DsoKind::Jit);
        self.symfile_dsos.insert(i, dso);
        self.symfile_func_dso.insert(dso, func_dso);
        dso
    }

    /// The DSO of `pid`'s JIT symbol map when it names `addr`: the map kept in the recording,
    /// else `/tmp/perf-PID.map` on this machine (recordings by perf).
    pub(super) fn perf_map(
        &mut self,
        model: &mut Model,
        pid: i32,
        addr: u64,
        warnings: &mut Vec<crate::Warning>,
    ) -> Option<DsoId> {
        if !self.perf_maps.contains_key(&pid) {
            let loaded = self.load_jit_symbols(model, pid, warnings);
            self.perf_maps.insert(pid, loaded);
        }
        let (dso, table) = self.perf_maps.get(&pid)?.as_ref()?;
        table.covers(addr).then_some(*dso)
    }

    /// A JIT map or jitdump on this machine: a regular file of this user or root (of anyone
    /// with `--force`), at most 1 GiB; a refusal is said once, with the remedy.
    fn read_jit_file(&self, path: &str, warnings: &mut Vec<crate::Warning>) -> Option<Vec<u8>> {
        use rperf_symbols::trusted::{self, Owners, Refusal};
        let (owners, follow) =
            if self.trust_any_owner { (Owners::Anyone, true) } else { (Owners::Trusted(None), false) };
        match trusted::read(std::path::Path::new(path), 1 << 30, owners, follow) {
            Ok(b) => Some(b),
            Err(Refusal::Missing) => None,
            Err(Refusal::Unsafe(why)) => {
                warnings
                    .push(crate::Warning::JitFileRefused { path: path.to_string(), why: why.to_string() });
                None
            }
        }
    }

    /// The JIT symbols of `pid`: its perf map and its jitdump's code-load records, from the
    /// recording's copies or else from the files on this machine.
    fn load_jit_symbols(
        &mut self,
        model: &mut Model,
        pid: i32,
        warnings: &mut Vec<crate::Warning>,
    ) -> Option<(DsoId, SymbolTable)> {
        let map_text = match self.embedded_perf_maps.remove(&pid) {
            Some(t) => Some(t),
            None => self
                .read_jit_file(&format!("/tmp/perf-{pid}.map"), warnings)
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
        };
        // The runtime announces its jitdump with an executable mmap of the file.
        let dump_path = model.processes.get(&pid).and_then(|space| {
            space
                .maps()
                .iter()
                .map(|m| model.dsos[m.dso as usize].path.clone())
                .find(|p| rperf_perfdata::jitdump_pid(p) == Some(pid))
        });
        let dump = match self.embedded_jitdumps.remove(&pid) {
            Some(d) => Some(d),
            None => dump_path.as_ref().and_then(|p| self.read_jit_file(p, warnings)),
        };
        let (stored_name, stored) = self.stored_perf_maps.remove(&pid).unzip();
        if map_text.is_none() && dump.is_none() && stored.is_none() {
            return None;
        }
        let mut raw = map_text.as_deref().map(crate::jit::parse_perf_map).unwrap_or_default();
        raw.extend(stored.into_iter().flatten());
        if let Some(d) = &dump {
            raw.extend(crate::jit::parse_jitdump(d));
        }
        let name = match (&dump, &dump_path, stored_name) {
            (Some(_), Some(p), _) => p.clone(),
            (Some(_), None, _) => format!("jit-{pid}.dump"),
            // The map simpleperf stored is shown by the name it stored it under, as simpleperf
            // shows it.
            (None, _, Some(stored)) if map_text.is_none() => stored,
            _ => format!("/tmp/perf-{pid}.map"),
        };
        let dso = model.dso(&name, None, DsoKind::Jit);
        self.perf_map_of_dso.insert(dso, pid);
        Some((dso, SymbolTable::new(raw)))
    }
}
