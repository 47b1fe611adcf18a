//! From addresses to functions: which binary an address is in, which symbol it hits, and the
//! DWARF unwinding of user stacks with those binaries' unwind tables. Binaries are loaded once,
//! on first use; failures are remembered too. Each (binary, offset) is symbolized once.

use std::collections::HashMap;
use std::sync::Arc;

use linux_perf_data::{SimpleperfFileRecord, SimpleperfTypeSpecificInfo};
use rperf_symbols::{BinaryFinder, ElfInfo, Found, KernelSymbols, SymbolTable};
use rperf_unwind::{Arch, Context, ProcessUnwinder, UnwindCache, UnwindSections};

use crate::model::{DsoId, DsoKind, Model};

/// Where kernel symbols come from: ready, or a loader run on the first kernel frame (reading
/// /proc/kallsyms costs tens of milliseconds, which recordings without kernel frames skip).
pub enum KernelSource {
    /// Loaded.
    Ready(KernelSymbols),
    /// To load on first use; returns the symbols and possibly a warning.
    Pending(Box<dyn FnMut() -> (KernelSymbols, Option<String>)>),
}

/// Index of an interned function.
pub type FuncId = u32;

/// A function: its binary and its name.
#[derive(Clone, Debug)]
pub struct Func {
    /// The DSO.
    pub dso: DsoId,
    /// Demangled name, or `[unknown]`.
    pub name: String,
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

/// Resolves addresses of one recording.
pub struct Resolver {
    finder: BinaryFinder,
    binaries: HashMap<DsoId, Option<Arc<Binary>>>,
    stored: HashMap<String, StoredTable>,
    kernel: KernelSource,
    kernel_dso: Option<DsoId>,
    /// Interned functions.
    pub funcs: Vec<Func>,
    func_index: HashMap<(DsoId, String), FuncId>,
    cache: HashMap<(DsoId, u64), FuncId>,
    unwinders: HashMap<i32, (u64, ProcessUnwinder)>,
    unwind_cache: UnwindCache,
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
        let stored = stored
            .into_iter()
            .map(|r| {
                let file_offset_of_min_vaddr = match &r.type_specific_msg {
                    Some(SimpleperfTypeSpecificInfo::ElfFile(e)) => e.file_offset_of_min_vaddr,
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
            kernel,
            kernel_dso: None,
            funcs: Vec::new(),
            func_index: HashMap::new(),
            cache: HashMap::new(),
            unwinders: HashMap::new(),
            unwind_cache: UnwindCache::new(),
            arch,
            warnings: Vec::new(),
        }
    }

    /// Kernel symbols, loaded on the first kernel frame.
    fn kernel(&mut self) -> &KernelSymbols {
        if let KernelSource::Pending(load) = &mut self.kernel {
            let (symbols, warning) = load();
            self.warnings.extend(warning);
            self.kernel = KernelSource::Ready(symbols);
        }
        match &self.kernel {
            KernelSource::Ready(k) => k,
            KernelSource::Pending(_) => unreachable!("loaded above"),
        }
    }

    fn intern(&mut self, dso: DsoId, name: &str) -> FuncId {
        if let Some(&id) = self.func_index.get(&(dso, name.to_string())) {
            return id;
        }
        let id = self.funcs.len() as FuncId;
        self.funcs.push(Func { dso, name: name.to_string() });
        self.func_index.insert((dso, name.to_string()), id);
        id
    }

    fn binary(&mut self, model: &Model, dso: DsoId) -> Option<Arc<Binary>> {
        if let Some(b) = self.binaries.get(&dso) {
            return b.clone();
        }
        let d = &model.dsos[dso as usize];
        let loaded = if d.kind == DsoKind::File {
            match self.finder.find(&d.path, d.build_id.as_deref()) {
                Found::File(path) => match ElfInfo::load(&path) {
                    Ok(elf) => {
                        let unwind =
                            UnwindSections::from_elf(&elf.data).filter(|u| u.has_cfi()).map(Arc::new);
                        Some(Arc::new(Binary { elf, unwind }))
                    }
                    Err(e) => {
                        self.warnings.push(format!("cannot read {}: {e}", path.display()));
                        None
                    }
                },
                Found::BuildIdMismatch(path) => {
                    self.warnings.push(format!(
                        "{} has another build id than the recorded {}; not used for {} (pass --symfs with the right binary)",
                        path.display(),
                        d.build_id.as_deref().map(hex).unwrap_or_default(),
                        d.path
                    ));
                    None
                }
                Found::Missing => None,
            }
        } else {
            None
        };
        self.binaries.insert(dso, loaded.clone());
        loaded
    }

    fn kernel_dso(&mut self, model: &mut Model) -> DsoId {
        *self.kernel_dso.get_or_insert_with(|| model.dso("[kernel.kallsyms]", None, DsoKind::Kernel))
    }

    /// The function at `addr` (a lookup address: return addresses already minus one) in
    /// process `pid`.
    pub fn resolve(&mut self, model: &mut Model, pid: i32, addr: u64, ctx: Context) -> FuncId {
        let kernel = match ctx {
            Context::Kernel => true,
            Context::User => false,
            Context::Other => is_kernel_address(addr, self.arch),
        };
        if kernel {
            let dso = match model.kernel.find(addr) {
                Some(m) => m.dso,
                None => self.kernel_dso(model),
            };
            if let Some(&f) = self.cache.get(&(dso, addr)) {
                return f;
            }
            let name = self.kernel().table.lookup(addr).map(|s| s.name.clone());
            let f = self.intern(dso, name.as_deref().unwrap_or("[unknown]"));
            self.cache.insert((dso, addr), f);
            return f;
        }
        let mapping = model.processes.get(&pid).and_then(|s| s.find(addr)).copied();
        let Some(m) = mapping else {
            let dso = model.dso("[unknown]", None, DsoKind::Unknown);
            return self.intern(dso, "[unknown]");
        };
        // ART's JIT caches (simpleperf) store their symbols at the addresses the code ran at.
        let jit = model.dsos[m.dso as usize].display_name().starts_with("[JIT");
        let offset = if jit { addr } else { addr - m.start + m.pgoff };
        if let Some(&f) = self.cache.get(&(m.dso, offset)) {
            return f;
        }
        let name = if jit {
            let path = &model.dsos[m.dso as usize].path;
            self.stored.get(path).and_then(|t| t.table.lookup(addr)).map(|s| s.demangled())
        } else {
            self.symbol_name(model, m.dso, offset)
        };
        let f = self.intern(m.dso, name.as_deref().unwrap_or("[unknown]"));
        self.cache.insert((m.dso, offset), f);
        f
    }

    fn symbol_name(&mut self, model: &Model, dso: DsoId, offset: u64) -> Option<String> {
        if let Some(b) = self.binary(model, dso) {
            if let Some(vaddr) = b.elf.offset_to_vaddr(offset) {
                if let Some(s) = b.elf.symbols.lookup(vaddr) {
                    return Some(s.demangled());
                }
            }
        }
        let path = &model.dsos[dso as usize].path;
        let t = self.stored.get(path)?;
        let vaddr = (offset + t.min_vaddr).checked_sub(t.file_offset_of_min_vaddr)?;
        t.table.lookup(vaddr).map(|s| s.demangled())
    }

    /// Unwinds a user stack of process `pid` with the binaries mapped there now.
    pub fn unwind(
        &mut self,
        model: &Model,
        pid: i32,
        regs: rperf_unwind::Regs,
        stack: &[u8],
        max: usize,
    ) -> rperf_unwind::Unwound {
        let Some(space) = model.processes.get(&pid) else {
            return rperf_unwind::Unwound {
                frames: vec![rperf_unwind::CodeAddress::InstructionPointer(regs.ip)],
                truncated: true,
            };
        };
        let generation = space.generation;
        let stale = self.unwinders.get(&pid).is_none_or(|(g, _)| *g != generation);
        if stale {
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
            self.unwinders.insert(pid, (generation, u));
        }
        let (_, u) = &self.unwinders[&pid];
        u.unwind(&mut self.unwind_cache, regs, stack, max)
    }
}

/// Kernel addresses by architecture convention, for frames recorded without a context marker.
pub fn is_kernel_address(addr: u64, arch: Arch) -> bool {
    match arch {
        Arch::X86_64 => addr >= 0xffff_8000_0000_0000,
        Arch::Aarch64 => addr >= 0xffff_0000_0000_0000,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
