//! From addresses to functions: which binary an address is in, which symbol it hits, and the
//! DWARF unwinding of user stacks with those binaries' unwind tables. Binaries are loaded once,
//! on first use; failures are remembered too. Each (binary, offset) is symbolized once.
//!
//! The `Resolver` is made of parts with one job each: `Binaries` (finding and loading binaries,
//! the kernel's symbols, the symbols a recording stores), `JitSources` (JIT maps, jitdumps and
//! the GDB JIT interface's symbol files), `Interner` (functions, source lines and files), and
//! the unwinders and call-chain cache kept here; `naming` names every frame at the end.

mod binaries;
mod intern;
mod jit_sources;
mod kernel_source;
mod naming;
mod prefetch;
mod types;

use std::collections::HashMap;
use std::sync::Arc;

use linux_perf_data::SimpleperfFileRecord;
use rperf_symbols::BinaryFinder;
use rperf_unwind::{Arch, ChainFrame, CodeAddress, Context, ProcessUnwinder};

use crate::model::{DsoId, DsoKind, Model};
pub use binaries::{fetch_missing_binaries, is_kernel_address};
use binaries::{file_offset, Binaries};
use intern::Interner;
pub use jit_sources::JitSources;
pub use kernel_source::{kernel_source, vmlinux};
pub use types::{AddrId, Func, FuncId, KernelSource, Symbolized};
use types::{AddrKind, FrameAddr};

/// How stored (mangled) function names are shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NameStyle {
    /// Demangled with parameters, `func2(int, int)`, as simpleperf shows them.
    #[default]
    Full,
    /// Demangled without parameters, `func2`, as perf shows them.
    Short,
    /// As stored in the binary, `_Z5func2ii` (`--no-demangle`).
    Mangled,
}

/// What the report asks of naming, set once from its options.
#[derive(Clone, Copy, Debug)]
pub struct ResolveConfig {
    /// Read JIT maps and jitdumps on this machine whatever their owner (`--force`).
    pub trust_any_owner: bool,
    /// Name code without symbols by its place (`libfoo.so[+1a2b]`); off: `[unknown]`.
    pub show_ip: bool,
    /// How stored names are shown.
    pub names: NameStyle,
    /// Whether DWARF inline frames are read (on unless --no-inline).
    pub dwarf_inline: bool,
    /// Whether source lines are wanted (`--sort srcline`).
    pub want_srclines: bool,
    /// Whether each frame's source file and line are wanted (pprof).
    pub want_lines: bool,
}

impl ResolveConfig {
    /// Whether naming reads DWARF at all.
    fn reads_dwarf(&self) -> bool {
        self.dwarf_inline || self.want_srclines || self.want_lines
    }
}

/// Call chains whose frames `Resolver::frames` keeps, at most (a few hundred bytes each).
const MAX_CHAINS: usize = 1 << 12;

/// A call chain and its frames, with what resolving it depended on.
struct ResolvedChain {
    pid: i32,
    /// The process's mappings generation, its JIT code epoch, the kernel's mappings generation.
    state: (Option<u64>, usize, u64),
    chain: Vec<(CodeAddress, Context)>,
    frames: Vec<AddrId>,
}

/// Resolves addresses of one recording.
pub struct Resolver {
    config: ResolveConfig,
    binaries: Binaries,
    jit: JitSources,
    names: Interner,
    addrs: Vec<FrameAddr>,
    addr_index: rustc_hash::FxHashMap<(DsoId, u64, bool), AddrId>,
    /// Each process's unwinder, with the mappings' generation and the JIT symbol files' epoch
    /// it was built for.
    unwinders: rustc_hash::FxHashMap<i32, ((u64, usize), Arc<ProcessUnwinder>)>,
    /// The source frames of the addresses to name, by binary (`load_debug_info`).
    source_frames: HashMap<DsoId, HashMap<u64, Vec<rperf_symbols::SourceFrame>>>,
    /// The frames of recent call chains (`frames`).
    chains: rustc_hash::FxHashMap<u64, ResolvedChain>,
    /// Binaries being loaded while samples are read.
    prefetch: prefetch::Prefetch,
    arch: Arch,
    /// Warnings to show once (build-id mismatches, missing binaries).
    pub warnings: Vec<crate::Warning>,
}

impl Resolver {
    /// A resolver for a recording of `arch`: binaries found by `finder`, kernel symbols from
    /// `kernel`, the symbols and JIT sources the recording stores.
    pub fn new(
        config: ResolveConfig,
        finder: BinaryFinder,
        kernel: KernelSource,
        stored: Vec<SimpleperfFileRecord>,
        mut jit: JitSources,
        arch: Arch,
    ) -> Resolver {
        jit.take_stored_perf_maps(&stored);
        jit.trust_any_owner = config.trust_any_owner;
        Resolver {
            config,
            prefetch: prefetch::Prefetch::new(&finder, config.reads_dwarf()),
            binaries: Binaries::new(finder, kernel, stored),
            jit,
            names: Interner::default(),
            addrs: Vec::new(),
            addr_index: Default::default(),
            unwinders: Default::default(),
            chains: Default::default(),
            source_frames: Default::default(),
            arch,
            warnings: Vec::new(),
        }
    }

    /// A mapping of an APK at file offset `pgoff` as the library stored there (see
    /// `Binaries::apk_library`).
    pub fn apk_library(&mut self, path: &str, pgoff: u64) -> Option<(String, u64)> {
        self.binaries.apk_library(path, pgoff)
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
            self.jit.symfiles.epoch(pid, time),
            model.kernel.generation,
        );
        let mut h = rustc_hash::FxHasher::default();
        (pid, state).hash(&mut h);
        for f in chain {
            (f.addr, f.context).hash(&mut h);
        }
        let key = h.finish();
        out.clear();
        if let Some(seen) = self.chains.get(&key) {
            let same = seen.pid == pid
                && seen.state == state
                && seen.chain.len() == chain.len()
                && seen.chain.iter().zip(chain).all(|(a, b)| *a == (b.addr, b.context));
            if same {
                out.extend_from_slice(&seen.frames);
                return;
            }
        }
        for f in chain {
            out.push(self.frame(model, pid, f.addr, f.context, time));
        }
        // Bounded: a recording of ever new chains keeps only the recent ones.
        if self.chains.len() >= MAX_CHAINS {
            self.chains.clear();
        }
        let seen = ResolvedChain {
            pid,
            state,
            chain: chain.iter().map(|f| (f.addr, f.context)).collect(),
            frames: out.clone(),
        };
        self.chains.insert(key, seen);
    }

    /// Starts loading, beside the caller, the binaries of the frames met since the last call.
    pub fn load_ahead(&mut self, model: &Model) {
        self.prefetch.start(&self.addrs, model, &self.binaries.loaded);
    }

    /// Whether the frame `id` is in no mapping of its process (nor the kernel, nor JIT code).
    pub fn is_unmapped(&self, id: AddrId) -> bool {
        self.addrs.get(id as usize).is_some_and(|a| a.kind == AddrKind::Unknown)
    }

    /// The frame at `code` in process `pid` at `time`: which binary, and where in it. Cheap;
    /// names come later, from `symbolize`. A return address is looked up one byte back, in
    /// the call instruction, except in dex bytecode, where a caller's address is the dex pc of
    /// its invoke instruction itself.
    pub fn frame(
        &mut self,
        model: &mut Model,
        pid: i32,
        code: CodeAddress,
        ctx: Context,
        time: u64,
    ) -> AddrId {
        let mut at = self.place(model, pid, code.lookup(), ctx, time);
        at.returns = matches!(code, CodeAddress::ReturnAddress(_));
        if at.returns && at.kind == AddrKind::File && model.dsos[at.dso as usize].kind == DsoKind::Dex {
            at = self.place(model, pid, code.addr(), ctx, time);
        }
        let index = (at.dso, at.key, at.returns);
        if let Some(&id) = self.addr_index.get(&index) {
            return id;
        }
        let id = self.addrs.len() as AddrId;
        self.addrs.push(at);
        self.addr_index.insert(index, id);
        id
    }

    /// Where `addr` (a lookup address) is in process `pid` at `time`.
    fn place(&mut self, model: &mut Model, pid: i32, addr: u64, ctx: Context, time: u64) -> FrameAddr {
        let kernel = match ctx {
            Context::Kernel => true,
            Context::User => false,
            Context::Other => is_kernel_address(addr, self.arch),
        };
        let at = |dso, key, kind| FrameAddr { dso, key, kind, returns: false, in_map: key, runtime: addr };
        if kernel {
            let dso = match model.kernel.find(addr) {
                Some(m) => m.dso,
                None => self.binaries.kernel_dso(model),
            };
            return at(dso, addr, AddrKind::Kernel);
        }
        let mapping = model.processes.get(&pid).and_then(|s| s.find(addr)).copied();
        let anonymous = mapping.is_none_or(|m| model.dsos[m.dso as usize].kind == DsoKind::Anon);
        let runtime_code = mapping.is_none_or(|m| model.dsos[m.dso as usize].kind.is_jit());
        let symfile = if runtime_code { self.jit.symfiles.find(pid, addr, time) } else { None };
        if let Some(i) = symfile {
            return at(self.jit.symfile_dso(model, i, &mut self.binaries), addr, AddrKind::Symfile);
        }
        if anonymous {
            if let Some(jit) = self.jit.perf_map(model, pid, addr, &mut self.warnings) {
                return at(jit, addr, AddrKind::PerfMap);
            }
        }
        let unknown =
            |model: &mut Model| at(model.dso("[unknown]", None, DsoKind::Unknown), 0, AddrKind::Unknown);
        match mapping {
            None => unknown(model),
            // ART's JIT caches (simpleperf) store their symbols at the addresses the code ran at.
            Some(m) if model.dsos[m.dso as usize].kind == DsoKind::Jit => at(m.dso, addr, AddrKind::Jit),
            Some(m) => match file_offset(addr, &m) {
                Some(offset) => FrameAddr { in_map: addr - m.start, ..at(m.dso, offset, AddrKind::File) },
                None => unknown(model),
            },
        }
    }

    /// Names may be asked for before every sample is in, and again after (a live report).
    pub fn follow(&mut self) {
        self.binaries.follow_kernel();
    }

    /// Frees what unwinding and resolving keep between samples (unwind tables, recent call
    /// chains), once every sample is in.
    pub fn finish_unwinding(&mut self) {
        self.unwinders = Default::default();
        self.chains = Default::default();
        for b in self.binaries.loaded.values().flatten().filter(|b| b.unwind.is_some()) {
            b.elf.let_go_of_unwind_tables();
        }
    }

    /// The unwinder of process `pid` at `time`: its executable mappings with their unwind
    /// tables (and the JIT code live then). Made again when the process's mappings or its JIT
    /// code changed; an unwinder once handed out never changes, so samples of one stretch of
    /// time unwind with it side by side. None for a process the recording never described.
    pub fn unwinder(&mut self, model: &mut Model, pid: i32, time: u64) -> Option<Arc<ProcessUnwinder>> {
        let space = model.processes.get(&pid)?;
        let version = (space.generation, self.jit.symfiles.epoch(pid, time));
        if let Some((v, u)) = self.unwinders.get(&pid) {
            if *v == version {
                return Some(u.clone());
            }
        }
        let mut u = ProcessUnwinder::new(self.arch);
        let maps: Vec<_> = space.maps().iter().filter(|m| m.exec).copied().collect();
        for m in maps {
            let Some(b) = self.binaries.get(model, m.dso, &mut self.warnings) else { continue };
            let (Some(sections), Some(svma)) =
                (&b.unwind, rperf_symbols::mapping_vaddr(&b.elf.segments, m.pgoff))
            else {
                continue;
            };
            let bias = m.start.wrapping_sub(svma);
            u.add_module(&model.dsos[m.dso as usize].path, m.start..m.end, bias, sections);
        }
        // JIT code unwinds with the CFI its symbol file carries, at the addresses it ran at.
        let live: Vec<usize> = self.jit.symfiles.live(pid, time).collect();
        for i in live {
            let dso = self.jit.symfile_dso(model, i, &mut self.binaries);
            let (start, end) = self.jit.symfiles.files[i].code;
            if let Some(Some(sections)) =
                self.binaries.loaded.get(&dso).map(|b| b.as_ref().and_then(|b| b.unwind.clone()))
            {
                u.add_module(&model.dsos[dso as usize].path, start..end, 0, &sections);
            }
        }
        let u = Arc::new(u);
        self.unwinders.insert(pid, (version, u.clone()));
        Some(u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Mapping;
    use binaries::stored_vaddr;

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
