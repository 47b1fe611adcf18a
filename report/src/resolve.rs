//! From addresses to functions: which binary an address is in, which symbol it hits, and the
//! DWARF unwinding of user stacks with those binaries' unwind tables. Binaries are loaded once,
//! on first use; failures are remembered too. Each (binary, offset) is symbolized once.

use std::collections::HashMap;
use std::sync::Arc;

use linux_perf_data::{SimpleperfFileRecord, SimpleperfTypeSpecificInfo};
use rperf_symbols::{BinaryFinder, ElfInfo, Found, KernelSymbols, SymbolTable};
use rperf_unwind::{Arch, ChainFrame, Context, ProcessUnwinder, UnwindSections};

use crate::model::{DsoId, DsoKind, Model};

/// Where kernel symbols come from: ready, or a loader run on the first kernel frame (reading
/// /proc/kallsyms costs tens of milliseconds, which recordings without kernel frames skip).
pub enum KernelSource {
    /// Loaded.
    Ready(KernelSymbols),
    /// To load on first use, for the kernel addresses given (a loader may leave out symbols
    /// no address needs); returns the symbols and possibly a warning.
    Pending(KernelLoader),
}

/// Loads kernel symbols for the kernel addresses given; returns them and possibly a warning.
pub type KernelLoader = Box<dyn FnMut(&[u64]) -> (KernelSymbols, Option<String>) + Send + Sync>;

/// Index of an interned function.
pub type FuncId = u32;

/// Index of a distinct frame: a binary and a place in it.
pub type AddrId = u32;

/// How a frame's place is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AddrKind {
    /// A kernel address.
    Kernel,
    /// A file offset in a binary.
    File,
    /// A run-time address in a JIT cache.
    Jit,
    /// A run-time address named by a JIT symbol map (`/tmp/perf-PID.map`).
    PerfMap,
    /// A run-time address in code a symbol file of the GDB JIT interface describes.
    Symfile,
    /// Outside every mapping.
    Unknown,
}

/// A function: its binary and its name.
#[derive(Clone, Debug)]
pub struct Func {
    /// The DSO.
    pub dso: DsoId,
    /// Demangled name, or `[unknown]`.
    pub name: String,
    /// An inlined call: a frame of its own, inside the function of the next outer frame.
    pub inlined: bool,
    /// The name as the binary stores it (mangled), when it differs from `name`.
    pub system: Option<String>,
}

/// What symbolization made of every frame address: its binary and place, its functions
/// (innermost inlined call first, the containing function last) and its source line.
pub struct Symbolized {
    /// (binary, place in it) of each frame address: a file offset for binaries, the address
    /// itself for kernel and JIT code.
    locations: Vec<(DsoId, u64)>,
    spans: Vec<(u32, u32)>,
    flat: Vec<FuncId>,
    /// Where in its function each entry of `flat` is: (file id + 1 or 0, line), when lines
    /// were wanted.
    places: Vec<(u32, u32)>,
    /// Interned `file:line` (or `binary[+offset]`) of each frame address.
    pub srcline: Vec<u32>,
    /// Each frame address in its binary's own address space (simpleperf's `vaddr_in_file`):
    /// the ELF virtual address where the binary or its stored symbols tell it, else the place.
    vaddrs: Vec<u64>,
}

impl Symbolized {
    /// The binary of frame address `a` and the place in it: a file offset for binaries, the
    /// address itself for kernel and JIT code.
    pub fn location(&self, a: AddrId) -> (DsoId, u64) {
        self.locations[a as usize]
    }

    /// Frame address `a` in its binary's own address space (simpleperf's `vaddr_in_file`).
    pub fn vaddr_in_file(&self, a: AddrId) -> u64 {
        self.vaddrs[a as usize]
    }

    /// How many frame addresses there are.
    pub fn len(&self) -> usize {
        self.locations.len()
    }

    /// Frame address `i` names function `i`, in binary 0 (for tests of what consumes names).
    #[cfg(test)]
    pub fn identity(n: usize) -> Symbolized {
        Symbolized {
            locations: (0..n as u64).map(|i| (0, i)).collect(),
            spans: (0..n as u32).map(|i| (i, 1)).collect(),
            flat: (0..n as u32).collect(),
            places: Vec::new(),
            srcline: vec![0; n],
            vaddrs: (0..n as u64).collect(),
        }
    }

    /// The functions of frame address `a`, innermost first.
    pub fn funcs(&self, a: AddrId) -> &[FuncId] {
        let (start, len) = self.spans[a as usize];
        &self.flat[start as usize..(start + len) as usize]
    }

    /// Where in each of `funcs(a)` the address is: (source file id + 1, or 0 when unknown;
    /// line). Empty unless the resolver wanted lines.
    pub fn places(&self, a: AddrId) -> &[(u32, u32)] {
        let (start, len) = self.spans[a as usize];
        self.places.get(start as usize..(start + len) as usize).unwrap_or(&[])
    }
}

/// A source position.
#[derive(Default)]
struct Place {
    file: Option<String>,
    line: u32,
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
}

/// Symbols the recording carries itself (simpleperf's file feature).
struct StoredTable {
    table: SymbolTable,
    min_vaddr: u64,
    file_offset_of_min_vaddr: u64,
}

struct Binary {
    elf: ElfInfo,
    unwind: Option<Arc<UnwindSections>>,
}

/// Call chains whose frames `Resolver::frames` keeps, at most (a few hundred bytes each).
const MAX_CHAINS: usize = 1 << 12;

/// A call chain and its frames, with what resolving it depended on.
struct ResolvedChain {
    pid: i32,
    /// The process's mappings generation, its JIT code epoch, the kernel's mappings generation.
    state: (Option<u64>, usize, u64),
    chain: Vec<(u64, Context)>,
    frames: Vec<AddrId>,
}

/// Resolves addresses of one recording.
pub struct Resolver {
    finder: BinaryFinder,
    binaries: HashMap<DsoId, Option<Arc<Binary>>>,
    stored: HashMap<String, StoredTable>,
    /// JIT symbol maps simpleperf stored in the recording, by pid.
    stored_perf_maps: HashMap<i32, Vec<(u64, u64, String)>>,
    kernel: KernelSource,
    kernel_dso: Option<DsoId>,
    /// Interned functions.
    pub funcs: Vec<Func>,
    /// Functions by binary, name, inlined or not, and name as stored: C++ overloads are
    /// functions of their own even when named without their parameters, as perf shows them.
    func_index: HashMap<(DsoId, String, bool, Option<String>), FuncId>,
    /// Interned source lines.
    pub srclines: Vec<String>,
    srcline_index: HashMap<String, u32>,
    /// Read JIT maps and jitdumps on this machine whatever their owner (`--force`).
    pub trust_any_owner: bool,
    /// Name code without symbols by its place (`libfoo.so[+0x1a2b]`); off: `[unknown]`.
    pub show_ip: bool,
    /// Demangled names with their parameters (`func2(int, int)`), as simpleperf prints them.
    pub full_names: bool,
    /// Functions that stand for code without a symbol.
    pub unnamed: std::collections::HashSet<FuncId>,
    /// Whether DWARF is read: inline frames (on unless --no-inline) and source lines.
    pub dwarf_inline: bool,
    /// Whether source lines are wanted (`--sort srcline`).
    pub want_srclines: bool,
    /// Whether each frame's source file and line are wanted (pprof).
    pub want_lines: bool,
    /// Interned source file paths (for `Symbolized::places`).
    pub files: Vec<String>,
    file_index: HashMap<String, u32>,
    addrs: Vec<(DsoId, u64, AddrKind)>,
    addr_index: rustc_hash::FxHashMap<(DsoId, u64), AddrId>,
    /// Each process's unwinder, with the mappings' generation and the JIT symbol files' epoch
    /// it was built for.
    unwinders: rustc_hash::FxHashMap<i32, ((u64, usize), Arc<ProcessUnwinder>)>,
    /// The source frames of the addresses to name, by binary (`load_debug_info`).
    source_frames: HashMap<DsoId, HashMap<u64, Vec<rperf_symbols::SourceFrame>>>,
    /// The frames of recent call chains (`frames`).
    chains: rustc_hash::FxHashMap<u64, ResolvedChain>,
    /// JIT symbol maps kept in the recording, by pid (text of `/tmp/perf-PID.map`).
    pub embedded_perf_maps: HashMap<i32, String>,
    /// jitdump files kept in the recording, by pid.
    pub embedded_jitdumps: HashMap<i32, Vec<u8>>,
    perf_maps: HashMap<i32, Option<(DsoId, SymbolTable)>>,
    perf_map_of_dso: HashMap<DsoId, i32>,
    /// Symbol files of the GDB JIT interface kept in the recording.
    pub symfiles: crate::jit::Symfiles,
    /// The DSO of each symbol file seen, and the DSO its functions belong to (`[JIT]`, or
    /// ART's cache).
    symfile_dsos: HashMap<usize, DsoId>,
    symfile_func_dso: HashMap<DsoId, DsoId>,
    /// The libraries stored in each APK mapped (by recorded path).
    apks: HashMap<String, Option<Vec<rperf_symbols::apk::Entry>>>,
    arch: Arch,
    /// Warnings to show once (build-id mismatches, missing binaries).
    pub warnings: Vec<String>,
}

impl Resolver {
    /// A resolver for a recording of `arch`.
    pub fn new(
        finder: BinaryFinder,
        kernel: KernelSource,
        stored: Vec<SimpleperfFileRecord>,
        arch: Arch,
    ) -> Resolver {
        // simpleperf stores the JIT symbol maps it read as files named `perf-PID.map`.
        let stored_perf_maps = stored
            .iter()
            .filter_map(|r| {
                let pid =
                    r.path.rsplit('/').next()?.strip_prefix("perf-")?.strip_suffix(".map")?.parse().ok()?;
                Some((pid, r.symbol.iter().map(|s| (s.vaddr, s.len as u64, s.name.clone())).collect()))
            })
            .collect();
        let stored = stored
            .into_iter()
            .map(|r| {
                let file_offset_of_min_vaddr = match &r.type_specific_msg {
                    // u64::MAX is simpleperf's "not recorded": file offsets then count from
                    // min_vaddr, as simpleperf reads such files.
                    Some(SimpleperfTypeSpecificInfo::ElfFile(e))
                        if e.file_offset_of_min_vaddr != u64::MAX =>
                    {
                        e.file_offset_of_min_vaddr
                    }
                    _ => 0,
                };
                let raw = r.symbol.iter().map(|s| (s.vaddr, s.len as u64, s.name.clone())).collect();
                (
                    r.path.clone(),
                    StoredTable {
                        table: SymbolTable::new(raw),
                        min_vaddr: r.min_vaddr,
                        file_offset_of_min_vaddr,
                    },
                )
            })
            .collect();
        Resolver {
            finder,
            binaries: HashMap::new(),
            stored,
            stored_perf_maps,
            kernel,
            kernel_dso: None,
            funcs: Vec::new(),
            func_index: HashMap::new(),
            srclines: Vec::new(),
            srcline_index: HashMap::new(),
            trust_any_owner: false,
            show_ip: true,
            full_names: false,
            unnamed: Default::default(),
            dwarf_inline: true,
            want_srclines: false,
            want_lines: false,
            files: Vec::new(),
            file_index: HashMap::new(),
            addrs: Vec::new(),
            addr_index: Default::default(),
            unwinders: Default::default(),
            chains: Default::default(),
            source_frames: Default::default(),
            embedded_perf_maps: HashMap::new(),
            embedded_jitdumps: HashMap::new(),
            perf_maps: HashMap::new(),
            perf_map_of_dso: HashMap::new(),
            symfiles: Default::default(),
            symfile_dsos: HashMap::new(),
            symfile_func_dso: HashMap::new(),
            apks: HashMap::new(),
            arch,
            warnings: Vec::new(),
        }
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

    /// Kernel symbols for the kernel addresses seen, loaded when there are any.
    fn kernel(&mut self) -> &KernelSymbols {
        if let KernelSource::Pending(load) = &mut self.kernel {
            let addrs: Vec<u64> =
                self.addrs.iter().filter(|a| a.2 == AddrKind::Kernel).map(|a| a.1).collect();
            let (symbols, warning) = load(&addrs);
            self.warnings.extend(warning);
            self.kernel = KernelSource::Ready(symbols);
        }
        match &self.kernel {
            KernelSource::Ready(k) => k,
            KernelSource::Pending(_) => unreachable!("loaded above"),
        }
    }

    fn intern_with_system(&mut self, dso: DsoId, name: &str, system: Option<&str>, inlined: bool) -> FuncId {
        let system = system.filter(|s| *s != name).map(str::to_string);
        let key = (dso, name.to_string(), inlined, system);
        if let Some(&id) = self.func_index.get(&key) {
            return id;
        }
        let id = self.funcs.len() as FuncId;
        self.funcs.push(Func { dso, name: key.1.clone(), inlined, system: key.3.clone() });
        self.func_index.insert(key, id);
        id
    }

    fn intern_file(&mut self, place: &Place) -> (u32, u32) {
        let Some(file) = &place.file else { return (0, place.line) };
        if let Some(&id) = self.file_index.get(file) {
            return (id + 1, place.line);
        }
        let id = self.files.len() as u32;
        self.files.push(file.clone());
        self.file_index.insert(file.clone(), id);
        (id + 1, place.line)
    }

    fn intern_srcline(&mut self, s: String) -> u32 {
        if let Some(&id) = self.srcline_index.get(&s) {
            return id;
        }
        let id = self.srclines.len() as u32;
        self.srclines.push(s.clone());
        self.srcline_index.insert(s, id);
        id
    }

    fn binary(&mut self, model: &Model, dso: DsoId) -> Option<Arc<Binary>> {
        if let Some(b) = self.binaries.get(&dso) {
            return b.clone();
        }
        let (loaded, warning) = load_binary(&self.finder, &model.dsos[dso as usize]);
        self.warnings.extend(warning);
        self.binaries.insert(dso, loaded.clone());
        loaded
    }

    fn kernel_dso(&mut self, model: &mut Model) -> DsoId {
        *self.kernel_dso.get_or_insert_with(|| model.dso("[kernel.kallsyms]", None, DsoKind::Kernel))
    }

    /// The frames of `chain` in process `pid` at `time`, as `frame` gives each, into `out`.
    /// A call chain seen before in the same state of the process (its mappings and JIT code,
    /// and the kernel's modules) resolves to the same frames: those are reused, and most
    /// samples repeat a recent chain.
    pub fn frames(
        &mut self,
        model: &mut Model,
        pid: i32,
        chain: &[ChainFrame],
        time: u64,
        out: &mut Vec<AddrId>,
    ) {
        use std::hash::{Hash, Hasher};
        let state = (
            model.processes.get(&pid).map(|s| s.generation),
            self.symfiles.epoch(pid, time),
            model.kernel.generation,
        );
        let mut h = rustc_hash::FxHasher::default();
        (pid, state).hash(&mut h);
        for f in chain {
            (f.addr.lookup(), f.context).hash(&mut h);
        }
        let key = h.finish();
        out.clear();
        if let Some(seen) = self.chains.get(&key) {
            let same = seen.pid == pid
                && seen.state == state
                && seen.chain.len() == chain.len()
                && seen.chain.iter().zip(chain).all(|(a, b)| *a == (b.addr.lookup(), b.context));
            if same {
                out.extend_from_slice(&seen.frames);
                return;
            }
        }
        for f in chain {
            out.push(self.frame(model, pid, f.addr.lookup(), f.context, time));
        }
        // Bounded: a recording of ever new chains keeps only the recent ones.
        if self.chains.len() >= MAX_CHAINS {
            self.chains.clear();
        }
        let seen = ResolvedChain {
            pid,
            state,
            chain: chain.iter().map(|f| (f.addr.lookup(), f.context)).collect(),
            frames: out.clone(),
        };
        self.chains.insert(key, seen);
    }

    /// The frame at `addr` (a lookup address: return addresses already minus one) in process
    /// `pid` at `time`: which binary, and where in it. Cheap; names come later, from
    /// `symbolize`.
    pub fn frame(&mut self, model: &mut Model, pid: i32, addr: u64, ctx: Context, time: u64) -> AddrId {
        let kernel = match ctx {
            Context::Kernel => true,
            Context::User => false,
            Context::Other => is_kernel_address(addr, self.arch),
        };
        let (dso, key, kind) = if kernel {
            let dso = match model.kernel.find(addr) {
                Some(m) => m.dso,
                None => self.kernel_dso(model),
            };
            (dso, addr, AddrKind::Kernel)
        } else {
            let mapping = model.processes.get(&pid).and_then(|s| s.find(addr)).copied();
            let anonymous = mapping.is_none_or(|m| model.dsos[m.dso as usize].kind == DsoKind::Anon);
            let runtime_code = mapping.is_none_or(|m| model.dsos[m.dso as usize].kind.is_jit());
            let symfile = if runtime_code { self.symfiles.find(pid, addr, time) } else { None };
            let jit = if anonymous && symfile.is_none() { self.perf_map(model, pid, addr) } else { None };
            match (jit, mapping) {
                _ if symfile.is_some() => {
                    (self.symfile_dso(model, symfile.unwrap_or_default()), addr, AddrKind::Symfile)
                }
                (Some(jit), _) => (jit, addr, AddrKind::PerfMap),
                (None, None) => (model.dso("[unknown]", None, DsoKind::Unknown), 0, AddrKind::Unknown),
                // ART's JIT caches (simpleperf) store their symbols at the addresses the code ran at.
                (None, Some(m)) if model.dsos[m.dso as usize].kind == DsoKind::Jit => {
                    (m.dso, addr, AddrKind::Jit)
                }
                (None, Some(m)) => match file_offset(addr, &m) {
                    Some(offset) => (m.dso, offset, AddrKind::File),
                    None => (model.dso("[unknown]", None, DsoKind::Unknown), 0, AddrKind::Unknown),
                },
            }
        };
        if let Some(&id) = self.addr_index.get(&(dso, key)) {
            return id;
        }
        let id = self.addrs.len() as AddrId;
        self.addrs.push((dso, key, kind));
        self.addr_index.insert((dso, key), id);
        id
    }

    /// The DSO of symbol file `i`, made and loaded on first use; its functions belong to the
    /// ART JIT cache its code is in (`[JIT app cache]`), else to `[JIT]`.
    fn symfile_dso(&mut self, model: &mut Model, i: usize) -> DsoId {
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
        self.binaries.insert(dso, binary);
        let func_dso = model.dso(cache.unwrap_or("[JIT]"), None, DsoKind::Jit);
        self.symfile_dsos.insert(i, dso);
        self.symfile_func_dso.insert(dso, func_dso);
        dso
    }

    /// The DSO of `pid`'s JIT symbol map when it names `addr`: the map kept in the recording,
    /// else `/tmp/perf-PID.map` on this machine (recordings by perf).
    fn perf_map(&mut self, model: &mut Model, pid: i32, addr: u64) -> Option<DsoId> {
        if !self.perf_maps.contains_key(&pid) {
            let loaded = self.load_jit_symbols(model, pid);
            self.perf_maps.insert(pid, loaded);
        }
        let (dso, table) = self.perf_maps.get(&pid)?.as_ref()?;
        table.covers(addr).then_some(*dso)
    }

    /// A JIT map or jitdump on this machine: a regular file of this user or root (of anyone
    /// with `--force`), at most 1 GiB; a refusal is said once, with the remedy.
    fn read_jit_file(&mut self, path: &str) -> Option<Vec<u8>> {
        use rperf_symbols::trusted::{self, Owners, Refusal};
        let (owners, follow) =
            if self.trust_any_owner { (Owners::Anyone, true) } else { (Owners::Trusted(None), false) };
        match trusted::read(std::path::Path::new(path), 1 << 30, owners, follow) {
            Ok(b) => Some(b),
            Err(Refusal::Missing) => None,
            Err(Refusal::Unsafe(why)) => {
                self.warnings.push(format!(
                    "{path} {why}; its JIT symbols are not read (rperf report --force reads JIT files of any owner)"
                ));
                None
            }
        }
    }

    /// The JIT symbols of `pid`: its perf map and its jitdump's code-load records, from the
    /// recording's copies or else from the files on this machine.
    fn load_jit_symbols(&mut self, model: &mut Model, pid: i32) -> Option<(DsoId, SymbolTable)> {
        let map_text = match self.embedded_perf_maps.remove(&pid) {
            Some(t) => Some(t),
            None => self
                .read_jit_file(&format!("/tmp/perf-{pid}.map"))
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
            None => dump_path.as_ref().and_then(|p| self.read_jit_file(p)),
        };
        let stored = self.stored_perf_maps.remove(&pid);
        if map_text.is_none() && dump.is_none() && stored.is_none() {
            return None;
        }
        let mut raw = map_text.as_deref().map(crate::jit::parse_perf_map).unwrap_or_default();
        raw.extend(stored.into_iter().flatten());
        if let Some(d) = &dump {
            raw.extend(crate::jit::parse_jitdump(d));
        }
        let name = match (&dump, &dump_path) {
            (Some(_), Some(p)) => p.clone(),
            (Some(_), None) => format!("jit-{pid}.dump"),
            _ => format!("/tmp/perf-{pid}.map"),
        };
        let dso = model.dso(&name, None, DsoKind::Jit);
        self.perf_map_of_dso.insert(dso, pid);
        Some((dso, SymbolTable::new(raw)))
    }

    /// Names every frame seen, once per (binary, offset), loading binaries and looking up
    /// symbols in parallel, and hands over the tables: what each frame address was named, the
    /// functions, source lines and source files.
    pub fn finish_symbols(&mut self, model: &mut Model) -> (Symbolized, Vec<Func>, Vec<String>, Vec<String>) {
        let symbolized = self.symbolize(model);
        let funcs = std::mem::take(&mut self.funcs);
        (symbolized, funcs, std::mem::take(&mut self.srclines), std::mem::take(&mut self.files))
    }

    fn symbolize(&mut self, model: &mut Model) -> Symbolized {
        use rayon::prelude::*;
        if self.addrs.iter().any(|a| a.2 == AddrKind::Kernel) {
            self.kernel();
            self.assign_modules(model);
        }
        // ART keeps JIT-compiled methods in many symbol files of one cache; a method is one
        // function of the cache (`[JIT app cache]`) whichever file holds it.
        let mut cache_of: HashMap<DsoId, DsoId> = self.symfile_func_dso.clone();
        for &(dso, _, kind) in &self.addrs {
            if kind != AddrKind::Jit || cache_of.contains_key(&dso) {
                continue;
            }
            if let Some(cache) = crate::model::art_jit_cache(&model.dsos[dso as usize].path) {
                let id = model.dso(cache, None, DsoKind::Jit);
                cache_of.insert(dso, id);
            }
        }
        let model = &*model;
        let wanted: Vec<DsoId> = {
            let mut v: Vec<DsoId> = self
                .addrs
                .iter()
                .filter(|a| a.2 == AddrKind::File && !self.binaries.contains_key(&a.0))
                .map(|a| a.0)
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let loaded: Vec<(DsoId, Option<Arc<Binary>>, Option<String>)> = wanted
            .par_iter()
            .map(|&d| {
                let (b, w) = load_binary(&self.finder, &model.dsos[d as usize]);
                (d, b, w)
            })
            .collect();
        for (d, b, w) in loaded {
            self.binaries.insert(d, b);
            self.warnings.extend(w);
        }
        // Symbol tables (read on first use: a binary loaded only to unwind through is never
        // named), before debug info, so that what reading them holds for a while is let go of
        // first.
        let named: Vec<&Arc<Binary>> = {
            let mut dsos: Vec<DsoId> =
                self.addrs.iter().filter(|a| a.2 == AddrKind::File).map(|a| a.0).collect();
            dsos.sort_unstable();
            dsos.dedup();
            let mut named: Vec<&Arc<Binary>> =
                dsos.iter().filter_map(|d| self.binaries.get(d)?.as_ref()).collect();
            // The largest first, each a task of its own: the threads end close together.
            named.sort_by_key(|b| std::cmp::Reverse(b.elf.data.len()));
            named
        };
        named.par_iter().with_max_len(1).for_each(|b| {
            b.elf.symbols();
        });
        if self.dwarf_inline || self.want_srclines || self.want_lines {
            self.load_debug_info();
        }
        let this = &*self;
        let names: Vec<Named> =
            this.addrs.par_iter().map(|&(dso, key, kind)| this.name_of(model, dso, key, kind)).collect();
        let addrs = std::mem::take(&mut self.addrs);
        let mut out = Symbolized {
            locations: addrs.iter().map(|&(dso, key, _)| (dso, key)).collect(),
            spans: Vec::new(),
            flat: Vec::new(),
            places: Vec::new(),
            srcline: Vec::new(),
            vaddrs: Vec::with_capacity(addrs.len()),
        };
        for (&(dso, key, kind), named) in addrs.iter().zip(names) {
            let start = out.flat.len() as u32;
            out.vaddrs.push(named.vaddr.unwrap_or(key));
            let func_dso = cache_of.get(&dso).copied().unwrap_or(dso);
            for (name, system, place) in &named.inlined {
                out.flat.push(self.intern_with_system(func_dso, name, system.as_deref(), true));
                if self.want_lines {
                    let p = self.intern_file(place);
                    out.places.push(p);
                }
            }
            // Code without a symbol is named by its place (`libfoo.so[+0x1a2b]`: the offset in
            // the file, or the address for kernel and JIT code), one entry per address as
            // simpleperf and perf report it, unless --no-show-ip merges them into [unknown].
            let unnamed = match kind {
                AddrKind::Unknown => None,
                _ if !self.show_ip => None,
                _ => {
                    let path = model.dsos[func_dso as usize].display_name();
                    Some(format!("{}[+{key:#x}]", path.rsplit('/').next().unwrap_or(path)))
                }
            };
            let function = named.function.as_deref().or(unnamed.as_deref()).unwrap_or("[unknown]");
            let id = self.intern_with_system(func_dso, function, named.system.as_deref(), false);
            if named.function.is_none() {
                self.unnamed.insert(id);
            }
            out.flat.push(id);
            if self.want_lines {
                let p = self.intern_file(&named.place);
                out.places.push(p);
            }
            out.spans.push((start, out.flat.len() as u32 - start));
            let line = named.srcline.unwrap_or_else(|| {
                let path = model.dsos[func_dso as usize].display_name();
                format!("{}[+{key:x}]", path.rsplit('/').next().unwrap_or(path))
            });
            out.srcline.push(if self.want_srclines { self.intern_srcline(line) } else { 0 });
        }
        self.addrs = addrs;
        out
    }

    /// The source frames of every address to name in a binary with DWARF, binaries side by
    /// side: kept from earlier reports, else looked up in DWARF loaded for the addresses.
    fn load_debug_info(&mut self) {
        use rayon::prelude::*;
        let mut by_binary: HashMap<DsoId, Vec<u64>> = HashMap::new();
        for &(dso, key, kind) in &self.addrs {
            if kind != AddrKind::File {
                continue;
            }
            let Some(Some(b)) = self.binaries.get(&dso) else { continue };
            if let Some(vaddr) = b.elf.offset_to_vaddr(key) {
                by_binary.entry(dso).or_default().push(vaddr);
            }
        }
        let binaries = &self.binaries;
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
        let KernelSource::Ready(k) = &self.kernel else { return };
        for (dso, key, kind) in self.addrs.iter_mut() {
            if *kind != AddrKind::Kernel || model.dsos[*dso as usize].path != "[kernel.kallsyms]" {
                continue;
            }
            if let Some(m) = k.module_of(*key) {
                *dso = model.dso(&format!("[{m}]"), None, DsoKind::Kernel);
            }
        }
    }

    /// A stored (mangled) name as reports show it.
    fn demangle(&self, name: &str) -> String {
        if self.full_names {
            rperf_symbols::demangle_full(name)
        } else {
            rperf_symbols::demangle(name)
        }
    }

    /// A symbol's name as reports show it, and as stored.
    fn symbol_names(&self, s: &rperf_symbols::Symbol) -> Named {
        Named { function: Some(self.demangle(&s.name)), system: Some(s.name.clone()), ..Default::default() }
    }

    fn name_of(&self, model: &Model, dso: DsoId, key: u64, kind: AddrKind) -> Named {
        let plain = |function: Option<String>| Named { function, ..Default::default() };
        match kind {
            AddrKind::Kernel => match &self.kernel {
                KernelSource::Ready(k) => {
                    k.table.lookup(key).map(|s| self.symbol_names(&s)).unwrap_or_default()
                }
                KernelSource::Pending(_) => plain(None),
            },
            AddrKind::Unknown => plain(None),
            AddrKind::PerfMap => plain(
                self.perf_map_of_dso
                    .get(&dso)
                    .and_then(|pid| self.perf_maps.get(pid)?.as_ref())
                    .and_then(|(_, t)| t.lookup(key))
                    .map(|s| s.name.clone()),
            ),
            AddrKind::Symfile => {
                let Some(Some(b)) = self.binaries.get(&dso) else { return plain(None) };
                let symbol = b.elf.symbols().lookup(key);
                if self.dwarf_inline || self.want_srclines || self.want_lines {
                    if let Some(named) = self.dwarf_names(&b.elf, key, symbol.as_ref(), None) {
                        return named;
                    }
                }
                symbol.map(|s| Named { vaddr: Some(key), ..self.symbol_names(&s) }).unwrap_or_default()
            }
            AddrKind::Jit => {
                let path = &model.dsos[dso as usize].path;
                self.stored
                    .get(path)
                    .and_then(|t| t.table.lookup(key))
                    .map(|s| self.symbol_names(&s))
                    .unwrap_or_default()
            }
            AddrKind::File => {
                if let Some(Some(b)) = self.binaries.get(&dso) {
                    if let Some(vaddr) = b.elf.offset_to_vaddr(key) {
                        let symbol = b.elf.symbols().lookup(vaddr);
                        if self.dwarf_inline || self.want_srclines || self.want_lines {
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
                let Some(t) = self.stored.get(&model.dsos[dso as usize].path) else { return plain(None) };
                let Some(vaddr) = stored_vaddr(key, t.min_vaddr, t.file_offset_of_min_vaddr) else {
                    return plain(None);
                };
                let named = t.table.lookup(vaddr).map(|s| self.symbol_names(&s)).unwrap_or_default();
                Named { vaddr: Some(vaddr), ..named }
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
        let inlined = if self.dwarf_inline {
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
        let at = if self.dwarf_inline { outer } else { &frames[0] };
        let (function, system) = match symbol {
            Some(s) => (Some(self.demangle(&s.name)), Some(s.name.clone())),
            None => (outer.raw_name.as_deref().map(|n| self.demangle(n)), outer.raw_name.clone()),
        };
        Some(Named { inlined, function, system, place: place(at), srcline, vaddr: Some(vaddr) })
    }

    /// Frees what unwinding keeps between samples, once every sample is in.
    pub fn finish_unwinding(&mut self) {
        self.unwinders = Default::default();
    }

    /// The unwinder of process `pid` at `time`: its executable mappings with their unwind
    /// tables (and the JIT code live then). Made again when the process's mappings or its JIT
    /// code changed; an unwinder once handed out never changes, so samples of one stretch of
    /// time unwind with it side by side. None for a process the recording never described.
    pub fn unwinder(&mut self, model: &mut Model, pid: i32, time: u64) -> Option<Arc<ProcessUnwinder>> {
        let space = model.processes.get(&pid)?;
        let version = (space.generation, self.symfiles.epoch(pid, time));
        if let Some((v, u)) = self.unwinders.get(&pid) {
            if *v == version {
                return Some(u.clone());
            }
        }
        let mut u = ProcessUnwinder::new(self.arch);
        let maps: Vec<_> = space.maps().iter().filter(|m| m.exec).copied().collect();
        for m in maps {
            let Some(b) = self.binary(model, m.dso) else { continue };
            let (Some(sections), Some(svma)) = (&b.unwind, b.elf.offset_to_vaddr(m.pgoff)) else {
                continue;
            };
            let bias = m.start.wrapping_sub(svma);
            u.add_module(&model.dsos[m.dso as usize].path, m.start..m.end, bias, sections);
        }
        // JIT code unwinds with the CFI its symbol file carries, at the addresses it ran at.
        let live: Vec<usize> = self.symfiles.live(pid, time).collect();
        for i in live {
            let dso = self.symfile_dso(model, i);
            let (start, end) = self.symfiles.files[i].code;
            if let Some(Some(sections)) =
                self.binaries.get(&dso).map(|b| b.as_ref().and_then(|b| b.unwind.clone()))
            {
                u.add_module(&model.dsos[dso as usize].path, start..end, 0, &sections);
            }
        }
        let u = Arc::new(u);
        self.unwinders.insert(pid, (version, u.clone()));
        Some(u)
    }
}

/// The file offset of `addr` in mapping `m`. The mapping's offset comes from the recording, so
/// the sum is checked: a MMAP2 record with a `pgoff` near 2^64 gives no offset (a regression
/// test, `file_offsets_never_overflow`, and tests/hostile.rs, cover it).
fn file_offset(addr: u64, m: &crate::model::Mapping) -> Option<u64> {
    addr.checked_sub(m.start)?.checked_add(m.pgoff)
}

/// The virtual address of file offset `key` in a binary whose symbols the recording stores,
/// by the stored `min_vaddr` and its file offset; None where the recording's numbers overflow.
fn stored_vaddr(key: u64, min_vaddr: u64, file_offset_of_min_vaddr: u64) -> Option<u64> {
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
fn load_binary(finder: &BinaryFinder, d: &crate::model::Dso) -> (Option<Arc<Binary>>, Option<String>) {
    if d.kind == DsoKind::Vdso {
        let elf = finder
            .find_vdso(d.build_id.as_deref())
            .and_then(|image| ElfInfo::from_bytes(std::path::Path::new("[vdso]"), &image).ok());
        return (
            elf.map(|elf| {
                let unwind =
                    UnwindSections::from_shared(elf.data.clone()).filter(|u| u.has_cfi()).map(Arc::new);
                Arc::new(Binary { elf, unwind })
            }),
            None,
        );
    }
    if d.kind != DsoKind::File {
        return (None, None);
    }
    match finder.find(&d.path, d.build_id.as_deref()) {
        Found::File(path) => match ElfInfo::load_with_debug_roots(&path, &finder.debug_roots()) {
            Ok(elf) => {
                let unwind = UnwindSections::from_shared(elf.data.clone()).filter(|u| u.has_cfi()).map(Arc::new);
                (Some(Arc::new(Binary { elf, unwind })), None)
            }
            Err(e) => (None, Some(format!("cannot read {}: {e}", path.display()))),
        },
        Found::Embedded { apk, entry } => {
            let name = format!("{}!/{}", apk.display(), entry.name);
            match ElfInfo::load_range(std::path::Path::new(&name), &apk, entry.offset, entry.size) {
                Ok(elf) => {
                    let unwind = UnwindSections::from_shared(elf.data.clone()).filter(|u| u.has_cfi()).map(Arc::new);
                    (Some(Arc::new(Binary { elf, unwind })), None)
                }
                Err(e) => (None, Some(format!("cannot read {name}: {e}"))),
            }
        }
        Found::BuildIdMismatch(path) => (
            None,
            Some(format!(
                "{} has another build id than the recorded {}; not used for {} (pass --symfs with the right binary)",
                path.display(),
                d.build_id.as_deref().map(rperf_symbols::buildid::hex).unwrap_or_default(),
                d.path
            )),
        ),
        Found::Missing => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mapping;

    #[test]
    fn file_offsets_never_overflow() {
        let m = Mapping { start: 0x1000, end: 0x2000, pgoff: u64::MAX - 4, dso: 0, exec: true };
        assert_eq!(file_offset(0x1004, &m), Some(u64::MAX));
        assert_eq!(file_offset(0x1008, &m), None);
        assert_eq!(file_offset(0x0fff, &m), None);
    }

    #[test]
    fn stored_symbol_addresses_never_overflow() {
        assert_eq!(stored_vaddr(0x100, 0x4000, 0x100), Some(0x4000));
        assert_eq!(stored_vaddr(u64::MAX, 1, 0), None);
        assert_eq!(stored_vaddr(0, 0, 1), None);
    }
}
