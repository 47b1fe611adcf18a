//! Unwinding user stacks while recording (`--post-unwind`, the default with `-g dwarf`), as
//! simpleperf does on Android: each sample's copied stack is unwound with the CFI of the
//! binaries the process has mapped, and the sample goes into the file with a call chain
//! (the kernel's part, then `PERF_CONTEXT_USER` and the user frames) instead of its registers
//! and stack bytes. perf, `perf script` and rperf read such samples as frame-pointer ones.
//!
//! The binaries are opened and their unwind sections read when a process maps them, so that
//! code deleted, replaced or unmapped before its samples are unwound still unwinds right. Only
//! the CFI sections are kept (not the code), once per binary, shared by every process.

use std::sync::Arc;

use rperf_symbols::{mapping_vaddr, LoadSegment};
use rperf_unwind::{Arch, CodeAddress, ProcessUnwinder, Regs, UnwindCache, UnwindSections};
use rustc_hash::FxHashMap;

use crate::sample::SampleView;
use crate::sys::{self, sample};

/// The most frames a stack is unwound to.
const MAX_FRAMES: usize = 1024;

/// A binary's CFI and how its file offsets map to its addresses.
struct Binary {
    sections: Arc<UnwindSections>,
    segments: Vec<LoadSegment>,
}

/// One module of a process: where it is mapped, its CFI, and its load bias.
#[derive(Clone)]
struct Module {
    start: u64,
    end: u64,
    bias: u64,
    sections: Arc<UnwindSections>,
}

/// A process's modules; the unwinder is built from them when a sample needs it. A child
/// shares its parent's modules (and unwinder) until either maps something.
#[derive(Clone, Default)]
struct Space {
    modules: Arc<Vec<Module>>,
    unwinder: Option<Arc<ProcessUnwinder>>,
    /// Made by an exec: nothing of the parent's is in it.
    execed: bool,
}

impl Space {
    fn add(&mut self, m: Module) {
        let modules = Arc::make_mut(&mut self.modules);
        modules.retain(|o| o.end <= m.start || o.start >= m.end);
        modules.push(m);
        self.unwinder = None;
    }
}

/// Unwinds samples as they are recorded.
pub(crate) struct PostUnwinder {
    arch: Arch,
    binaries: FxHashMap<String, Option<Arc<Binary>>>,
    processes: FxHashMap<u32, Space>,
    vdso: Option<Arc<Binary>>,
    exited: Vec<u32>,
    cache: UnwindCache,
    /// Samples unwound.
    pub unwound: u64,
    /// Samples whose unwinding stopped before the stack's end.
    pub incomplete: u64,
}

impl PostUnwinder {
    pub fn new() -> PostUnwinder {
        let arch = if cfg!(target_arch = "aarch64") { Arch::Aarch64 } else { Arch::X86_64 };
        let vdso = rperf_symbols::running_vdso().and_then(|image| load(&image));
        PostUnwinder {
            arch,
            binaries: FxHashMap::default(),
            processes: FxHashMap::default(),
            vdso,
            exited: Vec::new(),
            cache: UnwindCache::new(),
            unwound: 0,
            incomplete: 0,
        }
    }

    /// An executable mapping of `path` (file offset `pgoff`) at `start..start+len` in `pid`.
    pub fn mmap(&mut self, pid: u32, start: u64, len: u64, pgoff: u64, path: &str) {
        let binary = if path == "[vdso]" {
            self.vdso.clone()
        } else if let Some(known) = self.binaries.get(path) {
            known.clone()
        } else if path.starts_with('/') {
            self.binaries.entry(path.to_string()).or_insert_with(|| load_file(path)).clone()
        } else {
            None
        };
        let Some(b) = binary else { return };
        let Some(svma) = mapping_vaddr(&b.segments, pgoff) else { return };
        let end = start.saturating_add(len);
        self.processes.entry(pid).or_default().add(Module {
            start,
            end,
            bias: start.wrapping_sub(svma),
            sections: b.sections.clone(),
        });
    }

    /// JIT code the process registered (its symbol file's CFI), at the addresses it runs at.
    pub fn jit_code(&mut self, pid: u32, code: (u64, u64), image: &[u8]) {
        let linked = rperf_symbols::jit::link(image);
        let Some(sections) = UnwindSections::from_elf(&linked).filter(|s| s.has_cfi()) else { return };
        if code.0 < code.1 {
            let m = Module { start: code.0, end: code.1, bias: 0, sections: Arc::new(sections) };
            self.processes.entry(pid).or_default().add(m);
        }
    }

    /// A new process: a copy of its parent's modules. Rings are drained one CPU after the
    /// other, so the child's own records (an exec, mappings) may come first: what they made
    /// stays, and an exec'd child takes nothing of its parent's.
    pub fn fork(&mut self, parent: u32, child: u32) {
        if parent == child {
            return;
        }
        let Some(from) = self.processes.get(&parent) else { return };
        let (inherited, unwinder) = (from.modules.clone(), from.unwinder.clone());
        let space = self.processes.entry(child).or_default();
        if space.execed {
            return;
        }
        if space.modules.is_empty() {
            (space.modules, space.unwinder) = (inherited, unwinder);
            return;
        }
        let modules = Arc::make_mut(&mut space.modules);
        for m in inherited.iter() {
            if modules.iter().all(|o| o.end <= m.start || o.start >= m.end) {
                modules.push(m.clone());
            }
        }
        space.unwinder = None;
    }

    /// The process ran a new program: its old modules are gone.
    pub fn exec(&mut self, pid: u32) {
        self.processes.insert(pid, Space { execed: true, ..Default::default() });
    }

    /// The process exited. Its last samples may still be in the sample rings, drained after
    /// the side-band ones: its modules go at the end of the drain.
    pub fn exit(&mut self, pid: u32) {
        self.exited.push(pid);
    }

    /// Every ring was drained: exited processes have no samples left.
    pub fn end_of_drain(&mut self) {
        for pid in std::mem::take(&mut self.exited) {
            self.processes.remove(&pid);
        }
    }

    /// The sample `v` (laid out for `sample_type`, a DWARF sample) with its user stack unwound
    /// into its call chain and its registers and stack copy dropped; a sample without user
    /// registers (in a kernel thread) keeps its kernel call chain alone. None when the record
    /// isn't laid out as its attribute says. `regs_mask` says which user registers it holds.
    pub fn rewrite(&mut self, v: &SampleView<'_>, sample_type: u64, regs_mask: u64) -> Option<Vec<u8>> {
        let rec = v.record;
        let chain_at = v.callchain_at?;
        let chain_end = chain_at.checked_add(8 + 8 * v.callchain.len())?;
        let regs_abi_at = v.regs_abi_at?;
        if sample_type & sample::STACK_USER == 0 {
            return None;
        }
        let stack_at = v.stack_at?;
        let (size, dyn_size) = crate::sample::stack_sizes(rec, stack_at)?;
        let stack_end = stack_at.checked_add(16 + size as usize)?;
        let stack_end = if size == 0 { stack_at + 8 } else { stack_end };
        let mut user: Vec<u64> = Vec::new();
        let reg = |n: u64| -> Option<u64> {
            if n >= 64 || regs_mask & (1 << n) == 0 {
                return None;
            }
            v.user_reg((regs_mask & ((1u64 << n) - 1)).count_ones() as usize)
        };
        if let Some(regs) = v.regs_at.and_then(|_| Regs::from_perf(self.arch, reg)) {
            let data = stack_at + 8;
            let len = (dyn_size.min(size)) as usize;
            let stack = rec.get(data..data.checked_add(len)?)?;
            let unwinder = self.unwinder(v.pid);
            let mut unwound = match &unwinder {
                Some(u) => u.unwind(&mut self.cache, regs, stack, MAX_FRAMES),
                None => rperf_unwind::Unwound {
                    frames: vec![CodeAddress::InstructionPointer(regs.ip)],
                    truncated: true,
                },
            };
            // The kernel's own unwinder ends a frame-pointer chain the same way.
            if unwound.frames.is_empty() {
                unwound.frames.push(CodeAddress::InstructionPointer(regs.ip));
            }
            self.unwound += 1;
            self.incomplete += u64::from(unwound.truncated);
            user.push(sys::PERF_CONTEXT_USER);
            user.extend(unwound.frames.iter().map(CodeAddress::addr));
        }
        let nr = v.callchain.len() + user.len();
        let mut out = Vec::with_capacity(chain_at + 8 * (nr + 1) + (regs_abi_at - chain_end));
        out.extend_from_slice(&rec[..chain_at]);
        out.extend_from_slice(&(nr as u64).to_le_bytes());
        for &a in v.callchain.iter().chain(&user) {
            out.extend_from_slice(&a.to_le_bytes());
        }
        // Raw tracepoint data sits between the call chain and the registers.
        out.extend_from_slice(rec.get(chain_end..regs_abi_at)?);
        out.extend_from_slice(rec.get(stack_end..)?);
        let new_size = u16::try_from(out.len()).ok()?;
        out[6..8].copy_from_slice(&new_size.to_le_bytes());
        Some(out)
    }

    /// Whether `addr` is in a module of `pid` (code the unwinder has CFI for).
    pub fn covers(&self, pid: u32, addr: u64) -> bool {
        self.processes.get(&pid).is_some_and(|s| s.modules.iter().any(|m| (m.start..m.end).contains(&addr)))
    }

    fn unwinder(&mut self, pid: u32) -> Option<Arc<ProcessUnwinder>> {
        let arch = self.arch;
        let space = self.processes.get_mut(&pid)?;
        if space.unwinder.is_none() {
            let mut u = ProcessUnwinder::new(arch);
            for m in space.modules.iter() {
                u.add_module("", m.start..m.end, m.bias, &m.sections);
            }
            space.unwinder = Some(Arc::new(u));
        }
        space.unwinder.clone()
    }
}

/// The attribute of a recording whose samples are unwound while recording: a call chain
/// instead of user registers and a stack copy.
pub(crate) fn unwound_attr(mut a: sys::perf_event_attr) -> sys::perf_event_attr {
    if a.sample_type & sample::STACK_USER != 0 {
        a.sample_type &= !(sample::REGS_USER | sample::STACK_USER);
        a.sample_type |= sample::CALLCHAIN;
        a.sample_regs_user = 0;
        a.sample_stack_user = 0;
        a.set_exclude_callchain_user(0);
    }
    a
}

fn load_file(path: &str) -> Option<Arc<Binary>> {
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let map = rperf_perfdata::mapped::map(&file).ok()?;
    load(&map)
}

fn load(image: &[u8]) -> Option<Arc<Binary>> {
    let segments = LoadSegment::of(&object::File::parse(image).ok()?);
    let sections = UnwindSections::cfi_of_elf(image).filter(|s| s.has_cfi())?;
    Some(Arc::new(Binary { sections: Arc::new(sections), segments }))
}

#[cfg(test)]
mod tests {
    use super::PostUnwinder;

    #[test]
    fn a_child_shares_its_parents_modules_until_either_maps_something() {
        let exe = std::env::current_exe().unwrap();
        let exe = exe.to_str().unwrap();
        let mut u = PostUnwinder::new();
        u.mmap(1, 0x10_0000, 0x1000, 0, exe);
        assert!(u.covers(1, 0x10_0800), "the parent's mapping");
        u.fork(1, 2);
        assert!(u.covers(2, 0x10_0800), "inherited");
        u.mmap(2, 0x20_0000, 0x1000, 0, exe);
        assert!(u.covers(2, 0x20_0800) && !u.covers(1, 0x20_0800), "the child's own mapping is its alone");
        u.mmap(1, 0x30_0000, 0x1000, 0, exe);
        assert!(!u.covers(2, 0x30_0800), "and the parent's new one the parent's");
        u.exec(2);
        assert!(!u.covers(2, 0x10_0800) && u.covers(1, 0x10_0800), "an exec leaves the parent as it was");
        // A child whose own records came first keeps them and gains its parent's.
        u.mmap(3, 0x40_0000, 0x1000, 0, exe);
        u.fork(1, 3);
        assert!(u.covers(3, 0x40_0800) && u.covers(3, 0x10_0800) && !u.covers(1, 0x40_0800));
    }
}
