//! Naming every frame address at the end of a report: binaries loaded and symbol tables
//! read side by side, DWARF inline frames and source lines, kernel modules, JIT caches.

use std::collections::HashMap;
use std::sync::Arc;

use super::binaries::{load_binary, stored_vaddr, Binary};
use super::intern::Place;
use super::types::{AddrKind, FrameAddr, Func, Symbolized};
use super::{NameStyle, Resolver};
use crate::model::{DsoId, DsoKind, Model};

/// The most names a naming thread keeps demangled.
const DEMANGLED_MAX: usize = 1 << 16;

thread_local! {
    /// Names this thread demangled in one style, by stored name.
    static DEMANGLED: std::cell::RefCell<(NameStyle, rustc_hash::FxHashMap<Box<str>, String>)> =
        Default::default();
}

/// Lets go of the names every thread kept demangled: naming is over.
fn forget_demangled() {
    let forget = || DEMANGLED.with_borrow_mut(|kept| *kept = Default::default());
    rayon::broadcast(|_| forget());
    forget();
}

/// The names found for one frame address.
#[derive(Default)]
struct Named {
    /// Inlined calls, innermost first: demangled name, name as stored, where in it.
    inlined: Vec<(String, Option<String>, Place)>,
    /// The containing function.
    function: Option<String>,
    /// Its name as stored (mangled).
    system: Option<String>,
    /// Where in the containing function.
    place: Place,
    /// `file:line` of the address.
    srcline: Option<String>,
    /// The address in the binary's own address space (simpleperf's `vaddr_in_file`), when it
    /// could be told.
    vaddr: Option<u64>,
    /// The containing symbol's start and length, in the same address space.
    range: Option<(u64, u64)>,
}

/// How many addresses are named at a time.
const NAMING_BATCH: usize = 4096;

impl Resolver {
    /// Names every frame seen, once per (binary, offset), loading binaries and looking up
    /// symbols in parallel, and hands over the tables: what each frame address was named, the
    /// functions, source lines and source files; its warnings go to `warnings`. What naming
    /// held (symbol tables, debug info, mapped binaries) is let go on return, before the
    /// profile is made from the tables.
    pub fn finish_symbols(
        mut self,
        model: &mut Model,
        warnings: &mut Vec<crate::Warning>,
    ) -> (Symbolized, Vec<Func>, Vec<String>, Vec<String>) {
        let mut symbolized = self.symbolize(model);
        warnings.append(&mut self.warnings);
        warnings.extend(self.binaries.take_debuginfod_summary().into_iter().map(crate::Warning::Symbols));
        forget_demangled();
        let names = std::mem::take(&mut self.names);
        symbolized.unnamed = names.unnamed;
        (symbolized, names.funcs, names.srclines, names.files)
    }

    /// The names of the addresses met so far, for a profile of part of a recording: the
    /// resolver goes on naming the addresses of later samples.
    pub fn symbols_so_far(&mut self, model: &mut Model) -> (Symbolized, Vec<Func>, Vec<String>, Vec<String>) {
        let mut symbolized = self.symbolize(model);
        symbolized.unnamed = self.names.unnamed.clone();
        self.warnings.clear();
        (symbolized, self.names.funcs.clone(), self.names.srclines.clone(), self.names.files.clone())
    }

    fn symbolize(&mut self, model: &mut Model) -> Symbolized {
        use rayon::prelude::*;
        let cache_of = self.prepare(model);
        let model = &*model;
        let addrs = std::mem::take(&mut self.addrs);
        let mut out = Symbolized {
            locations: addrs.iter().map(|a| (a.dso, a.key)).collect(),
            spans: Vec::new(),
            flat: Vec::new(),
            places: Vec::new(),
            srcline: Vec::new(),
            vaddrs: Vec::with_capacity(addrs.len()),
            ranges: Vec::with_capacity(addrs.len()),
            unnamed: Default::default(),
        };
        // Named a batch at a time, side by side, and interned before the next: the names
        // found for every address at once (a C++ compiler's run has tens of thousands, each
        // with its demangled and stored names) had been the largest thing a report held.
        for batch in addrs.chunks(NAMING_BATCH) {
            let this = &*self;
            let names: Vec<Named> = batch.par_iter().map(|a| this.name_of(model, a)).collect();
            self.intern_names(model, batch, names, &cache_of, &mut out);
        }
        self.addrs = addrs;
        out
    }

    /// Loads what naming reads (kernel symbols, binaries, their symbol tables and DWARF) and
    /// returns the DSO each JIT cache's functions belong to.
    fn prepare(&mut self, model: &mut Model) -> HashMap<DsoId, DsoId> {
        // ART keeps JIT-compiled methods in many symbol files of one cache; a method is one
        // function of the cache (`[JIT app cache]`) whichever file holds it.
        let mut cache_of: HashMap<DsoId, DsoId> = self.jit.symfile_func_dso.clone();
        for &FrameAddr { dso, kind, .. } in &self.addrs {
            if kind != AddrKind::Jit || cache_of.contains_key(&dso) {
                continue;
            }
            if let Some(cache) = crate::model::art_jit_cache(&model.dsos[dso as usize].path) {
                let id = model.dso(cache, None, DsoKind::Jit);
                cache_of.insert(dso, id);
            }
        }
        self.load_binaries(model);
        if self.config.reads_dwarf() {
            self.load_debug_info();
        }
        // Last: the running kernel's symbols may still be read on a thread of low priority,
        // which gets a core while binaries are loaded.
        if self.addrs.iter().any(|a| a.kind == AddrKind::Kernel) {
            let addrs = &self.addrs;
            let kernel_addrs =
                || addrs.iter().filter(|a| a.kind == AddrKind::Kernel).map(|a| a.key).collect();
            self.binaries.kernel(kernel_addrs, &mut self.warnings);
            self.assign_modules(model);
        }
        cache_of
    }

    /// Loads the binaries of the frames to name, and their symbol tables, side by side.
    fn load_binaries(&mut self, model: &Model) {
        use rayon::prelude::*;
        for (dso, b) in self.prefetch.finish() {
            self.binaries.loaded.entry(dso).or_insert(Some(b));
        }
        let wanted: Vec<DsoId> = {
            let mut v: Vec<DsoId> = self
                .addrs
                .iter()
                .filter(|a| a.kind == AddrKind::File && !self.binaries.loaded.contains_key(&a.dso))
                .map(|a| a.dso)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let loaded: Vec<(DsoId, Option<Arc<Binary>>, Option<crate::Warning>)> = wanted
            .par_iter()
            .map(|&d| {
                let (b, w) = load_binary(&self.binaries.finder, &model.dsos[d as usize]);
                (d, b, w)
            })
            .collect();
        let mut held = Vec::new();
        for (d, b, w) in loaded {
            self.binaries.loaded.insert(d, b);
            held.extend(w.map(|w| (d, w)));
        }
        let mut dsos: Vec<DsoId> =
            self.addrs.iter().filter(|a| a.kind == AddrKind::File).map(|a| a.dso).collect();
        dsos.sort_unstable();
        dsos.dedup();
        // What this machine lacks, from debuginfod servers; a binary fetched makes the warning
        // about its local copy moot.
        let fetched = self.binaries.fetch_for_naming(model, &dsos, self.config.reads_dwarf());
        self.warnings.extend(held.into_iter().filter(|(d, _)| !fetched.contains(d)).map(|(_, w)| w));
        // Symbol tables (read on first use: a binary loaded only to unwind through is never
        // named), before debug info, so that what reading them holds for a while is let go of
        // first.
        let named: Vec<&Arc<Binary>> = {
            let mut named: Vec<&Arc<Binary>> =
                dsos.iter().filter_map(|d| self.binaries.loaded.get(d)?.as_ref()).collect();
            // The largest first, each a task of its own: the threads end close together.
            named.sort_by_key(|b| std::cmp::Reverse(b.elf.data.len()));
            named
        };
        named.par_iter().with_max_len(1).for_each(|b| {
            b.elf.symbols();
        });
    }

    /// The names found for frame addresses `addrs`, interned into `out`: what each address
    /// was named.
    fn intern_names(
        &mut self,
        model: &Model,
        addrs: &[FrameAddr],
        names: Vec<Named>,
        cache_of: &HashMap<DsoId, DsoId>,
        out: &mut Symbolized,
    ) {
        for (a, named) in addrs.iter().zip(names) {
            let (dso, kind) = (a.dso, a.kind);
            let start = out.flat.len() as u32;
            // The frame's own address in its binary, as simpleperf names code without a
            // symbol: the ELF address where the binary tells it, else the place in the mapping.
            let own = a.own(named.vaddr.unwrap_or(a.in_map));
            out.vaddrs.push(own);
            out.ranges.push(named.range.unwrap_or((own, 0)));
            let func_dso = cache_of.get(&dso).copied().unwrap_or(dso);
            let place_name = || {
                let path = model.dsos[func_dso as usize].display_name();
                format!("{}[+{own:x}]", path.rsplit('/').next().unwrap_or(path))
            };
            for (name, system, place) in &named.inlined {
                out.flat.push(self.names.func(func_dso, name, system.as_deref(), true));
                if self.config.want_lines {
                    let p = self.names.file(place);
                    out.places.push(p);
                }
            }
            // Code without a symbol is named by its place (`libfoo.so[+1a2b]`, kernel code
            // `[kernel.kallsyms][+ffffffff8109981c]` whichever module holds it), one entry per
            // address as simpleperf reports it, unless --no-show-ip merges them into [unknown].
            let unnamed = match kind {
                AddrKind::Unknown => None,
                _ if !self.config.show_ip => None,
                AddrKind::Kernel => Some(format!("[kernel.kallsyms][+{own:x}]")),
                _ => Some(place_name()),
            };
            let function = named.function.as_deref().or(unnamed.as_deref()).unwrap_or("[unknown]");
            let id = self.names.func(func_dso, function, named.system.as_deref(), false);
            if named.function.is_none() {
                self.names.unnamed.insert(id);
            }
            out.flat.push(id);
            if self.config.want_lines {
                let p = self.names.file(&named.place);
                out.places.push(p);
            }
            out.spans.push((start, out.flat.len() as u32 - start));
            out.srcline.push(match self.config.want_srclines {
                true => self.names.srcline(named.srcline.unwrap_or_else(place_name)),
                false => 0,
            });
        }
    }

    /// The source frames of every address to name in a binary with DWARF, binaries side by
    /// side: kept from earlier reports, else looked up in DWARF loaded for the addresses.
    fn load_debug_info(&mut self) {
        use rayon::prelude::*;
        let mut by_binary: HashMap<DsoId, Vec<u64>> = HashMap::new();
        for &FrameAddr { dso, key, kind, .. } in &self.addrs {
            if kind != AddrKind::File {
                continue;
            }
            let Some(Some(b)) = self.binaries.loaded.get(&dso) else { continue };
            if let Some(vaddr) = b.elf.offset_to_vaddr(key) {
                by_binary.entry(dso).or_default().push(vaddr);
            }
        }
        let binaries = &self.binaries.loaded;
        self.source_frames = by_binary
            .par_iter()
            .filter_map(|(dso, vaddrs)| {
                let b = binaries.get(dso)?.as_ref()?;
                Some((*dso, b.elf.source_frames(vaddrs)))
            })
            .collect();
    }

    /// Kernel frames outside every recorded kernel map belong to the module the kallsyms
    /// snapshot names for their address (`[ext4]`), as perf shows them.
    fn assign_modules(&mut self, model: &mut Model) {
        let Some(k) = self.binaries.kernel.loaded() else { return };
        for a in self.addrs.iter_mut() {
            if a.kind != AddrKind::Kernel || model.dsos[a.dso as usize].path != "[kernel.kallsyms]" {
                continue;
            }
            if let Some(m) = k.module_of(a.key) {
                a.dso = model.dso(&format!("[{m}]"), None, DsoKind::Kernel);
            }
        }
    }

    /// A stored (mangled) name as reports show it. Every address of a function asks for its
    /// name, so each naming thread keeps the names it demangled (up to `DEMANGLED` of them).
    fn demangle(&self, name: &str) -> String {
        let style = self.config.names;
        if style == NameStyle::Mangled {
            return name.to_string();
        }
        DEMANGLED.with_borrow_mut(|(kept_style, memo)| {
            if *kept_style != style || memo.len() >= DEMANGLED_MAX {
                *kept_style = style;
                memo.clear();
            }
            if let Some(shown) = memo.get(name) {
                return shown.clone();
            }
            let shown = match style {
                NameStyle::Short => rperf_symbols::demangle(name),
                _ => rperf_symbols::demangle_full(name),
            };
            memo.insert(name.into(), shown.clone());
            shown
        })
    }

    /// A symbol's name as reports show it, and as stored.
    fn symbol_names(&self, s: &rperf_symbols::Symbol) -> Named {
        Named {
            function: Some(self.demangle(&s.name)),
            system: Some(s.name.clone()),
            range: Some((s.start, s.end.saturating_sub(s.start))),
            ..Default::default()
        }
    }

    fn name_of(&self, model: &Model, at: &FrameAddr) -> Named {
        let (dso, key, kind) = (at.dso, at.key, at.kind);
        let plain = |function: Option<String>| Named { function, ..Default::default() };
        match kind {
            AddrKind::Kernel => match self.binaries.kernel.loaded() {
                Some(k) => {
                    let in_image = k.file_text.and_then(|text| image_address(model, key, text));
                    let named = k.table.lookup(in_image.unwrap_or(key)).map(|s| self.symbol_names(&s));
                    Named { vaddr: in_image, ..named.unwrap_or_default() }
                }
                None => plain(None),
            },
            AddrKind::Unknown => plain(None),
            AddrKind::PerfMap => plain(
                self.jit
                    .perf_map_of_dso
                    .get(&dso)
                    .and_then(|pid| self.jit.perf_maps.get(pid)?.as_ref())
                    .and_then(|(_, t)| t.lookup(key))
                    .map(|s| s.name.clone()),
            ),
            AddrKind::Symfile => {
                let Some(Some(b)) = self.binaries.loaded.get(&dso) else { return plain(None) };
                let symbol = b.elf.symbols().lookup(key);
                if self.config.reads_dwarf() {
                    if let Some(named) = self.dwarf_names(&b.elf, key, symbol.as_ref(), None) {
                        return named;
                    }
                }
                symbol.map(|s| Named { vaddr: Some(key), ..self.symbol_names(&s) }).unwrap_or_default()
            }
            AddrKind::Jit => {
                let path = &model.dsos[dso as usize].path;
                self.binaries
                    .stored
                    .get(path)
                    .and_then(|t| t.table.lookup(key))
                    .map(|s| self.symbol_names(&s))
                    .unwrap_or_default()
            }
            AddrKind::File => {
                if let Some(Some(b)) = self.binaries.loaded.get(&dso) {
                    if let Some(vaddr) = b.elf.offset_to_vaddr(key) {
                        let symbol = b.elf.symbols().lookup(vaddr);
                        if self.config.reads_dwarf() {
                            let kept = self.source_frames.get(&dso).and_then(|f| f.get(&vaddr));
                            if let Some(named) = self.dwarf_names(&b.elf, vaddr, symbol.as_ref(), kept) {
                                return named;
                            }
                        }
                        if let Some(sym) = symbol {
                            return Named { vaddr: Some(vaddr), ..self.symbol_names(&sym) };
                        }
                        return Named { vaddr: Some(vaddr), ..Default::default() };
                    }
                }
                let Some(t) = self.binaries.stored.get(&model.dsos[dso as usize].path) else {
                    return plain(None);
                };
                // u64::MAX is simpleperf's "not recorded" (ART's oat files): the mapping then
                // starts at min_vaddr, as simpleperf reads such files; the in-memory files of
                // ART's JIT and dex loading (`./TemporaryFile-*`) store run-time addresses.
                let candidates = if t.file_offset_of_min_vaddr == u64::MAX {
                    [at.in_map.checked_add(t.min_vaddr), Some(at.runtime)]
                } else {
                    [stored_vaddr(key, t.min_vaddr, t.file_offset_of_min_vaddr), None]
                };
                let Some(first) = candidates.into_iter().flatten().next() else { return plain(None) };
                let found = candidates.into_iter().flatten().find_map(|v| Some((v, t.table.lookup(v)?)));
                match found {
                    Some((vaddr, s)) => Named { vaddr: Some(vaddr), ..self.symbol_names(&s) },
                    None => Named { vaddr: Some(first), ..Default::default() },
                }
            }
        }
    }

    /// Inline frames and the source line at `vaddr` from the binary's DWARF. The containing
    /// function keeps its symbol-table name (`symbol`), as perf names it.
    fn dwarf_names(
        &self,
        elf: &rperf_symbols::ElfInfo,
        vaddr: u64,
        symbol: Option<&rperf_symbols::Symbol>,
        kept: Option<&Vec<rperf_symbols::SourceFrame>>,
    ) -> Option<Named> {
        let looked_up;
        let frames = match kept {
            Some(frames) => frames,
            None => {
                looked_up = elf.debug_info()?.frames(vaddr);
                &looked_up
            }
        };
        let (outer, inner) = frames.split_last()?;
        let srcline = frames.first().and_then(|f| {
            let file = f.file.as_deref()?;
            Some(format!("{}:{}", file.rsplit('/').next().unwrap_or(file), f.line.unwrap_or(0)))
        });
        let place =
            |f: &rperf_symbols::SourceFrame| Place { file: f.file.clone(), line: f.line.unwrap_or(0) };
        let inlined = if self.config.dwarf_inline {
            inner
                .iter()
                .map(|f| {
                    let name = f.raw_name.as_deref().map_or("[unknown]".into(), |n| self.demangle(n));
                    (name, f.raw_name.clone(), place(f))
                })
                .collect()
        } else {
            Vec::new()
        };
        // Without inline frames the sampled line is the one the whole address belongs to.
        let at = if self.config.dwarf_inline { outer } else { &frames[0] };
        let (function, system) = match symbol {
            Some(s) => (Some(self.demangle(&s.name)), Some(s.name.clone())),
            None => (outer.raw_name.as_deref().map(|n| self.demangle(n)), outer.raw_name.clone()),
        };
        let range = symbol.map(|s| (s.start, s.end.saturating_sub(s.start)));
        Some(Named { inlined, function, system, place: place(at), srcline, vaddr: Some(vaddr), range })
    }
}

/// A running kernel's address `addr` in its image (`vmlinux`), whose `.text` starts at `text`:
/// the kernel placed `.text` at the start of its kernel mapping (KASLR), as simpleperf maps it.
/// None outside the core kernel's mapping, or where the recording gives its start as 0.
fn image_address(model: &Model, addr: u64, text: u64) -> Option<u64> {
    let m = model.kernel.find(addr)?;
    let core = model.dsos[m.dso as usize].path.starts_with("[kernel.kallsyms]");
    (core && m.start != 0).then(|| addr - m.start + text)
}

#[cfg(test)]
mod tests {
    use super::{forget_demangled, DEMANGLED};

    #[test]
    fn names_kept_demangled_are_let_go_on_every_thread() {
        // A pool of its own, which other tests' naming does not use.
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let keep = || DEMANGLED.with_borrow_mut(|(_, memo)| memo.insert("_Z1fv".into(), "f()".into()));
        let kept = || DEMANGLED.with_borrow(|(_, memo)| memo.capacity());
        pool.install(|| {
            rayon::broadcast(|_| keep());
            assert!(rayon::broadcast(|_| kept()).iter().all(|&n| n > 0));
            forget_demangled();
            assert_eq!(rayon::broadcast(|_| kept()), vec![0; 3]);
        });
    }
}
