//! DWARF CFI unwinding of copied user stacks with framehop.

use std::ops::Range;
use std::sync::Arc;

use framehop::aarch64::{CacheAarch64, UnwindRegsAarch64, UnwinderAarch64};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection};

/// The architecture of a recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// x86_64.
    X86_64,
    /// arm64.
    Aarch64,
}

impl Arch {
    /// From a perf.data arch string (`x86_64`, `aarch64`, `arm64`).
    pub fn from_name(s: &str) -> Option<Arch> {
        match s {
            "x86_64" | "amd64" => Some(Arch::X86_64),
            "aarch64" | "arm64" => Some(Arch::Aarch64),
            _ => None,
        }
    }
}

/// Where the registers unwinding needs are in a sample's user registers, by perf's register
/// numbers for the architecture (`PERF_REG_X86_*`, `PERF_REG_ARM64_*` in the kernel's uapi).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerfRegs {
    /// Instruction pointer (x86_64 ip, arm64 pc).
    pub ip: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer (x86_64 bp, arm64 x29).
    pub fp: u64,
    /// Link register (arm64 x30); None on x86_64.
    pub lr: Option<u64>,
}

impl Arch {
    /// perf's numbers of the registers unwinding reads.
    pub fn perf_regs(self) -> PerfRegs {
        match self {
            Arch::X86_64 => PerfRegs { ip: 8, sp: 7, fp: 6, lr: None },
            Arch::Aarch64 => PerfRegs { ip: 32, sp: 31, fp: 29, lr: Some(30) },
        }
    }
}

impl Regs {
    /// The registers of a sample, read by perf register number through `get`; None without
    /// an instruction and a stack pointer.
    pub fn from_perf(arch: Arch, get: impl Fn(u64) -> Option<u64>) -> Option<Regs> {
        let n = arch.perf_regs();
        Some(Regs {
            ip: get(n.ip)?,
            sp: get(n.sp)?,
            fp: get(n.fp).unwrap_or(0),
            lr: n.lr.and_then(&get).unwrap_or(0),
        })
    }
}

/// A code address and what it means: the sampled instruction, or a return address (whose call
/// instruction is at `addr - 1` for symbol and line lookup).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeAddress {
    /// The instruction pointer at the sample.
    InstructionPointer(u64),
    /// A return address found on the stack.
    ReturnAddress(u64),
}

impl CodeAddress {
    /// The address to look up symbols and lines with.
    pub fn lookup(&self) -> u64 {
        match *self {
            CodeAddress::InstructionPointer(a) => a,
            CodeAddress::ReturnAddress(a) => a.saturating_sub(1),
        }
    }

    /// The raw address.
    pub fn addr(&self) -> u64 {
        match *self {
            CodeAddress::InstructionPointer(a) | CodeAddress::ReturnAddress(a) => a,
        }
    }
}

/// The registers unwinding starts from.
#[derive(Clone, Copy, Debug, Default)]
pub struct Regs {
    /// Instruction pointer / pc.
    pub ip: u64,
    /// Stack pointer.
    pub sp: u64,
    /// Frame pointer (rbp / x29).
    pub fp: u64,
    /// Link register (aarch64 x30; unused on x86_64).
    pub lr: u64,
}

/// Bytes a file or buffer holds, shared by whoever reads them (a mapped binary's sections
/// are read in place, never copied).
pub type Shared = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A section's bytes: a range of shared bytes.
#[derive(Clone)]
pub struct SectionBytes {
    owner: Shared,
    range: Range<usize>,
}

impl std::ops::Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &(*self.owner).as_ref()[self.range.clone()]
    }
}

impl std::fmt::Debug for SectionBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SectionBytes({} bytes)", self.range.len())
    }
}

impl Default for SectionBytes {
    fn default() -> SectionBytes {
        SectionBytes::owned(Vec::new())
    }
}

impl SectionBytes {
    fn owned(bytes: Vec<u8>) -> SectionBytes {
        let range = 0..bytes.len();
        SectionBytes { owner: Arc::new(bytes), range }
    }
}

/// The unwind sections of one binary, shared between every process that maps it.
#[derive(Clone, Debug, Default)]
pub struct UnwindSections {
    /// What framehop counts CFI addresses from (it keeps them as 32-bit offsets).
    base_svma: u64,
    text_svma: Option<Range<u64>>,
    text: Option<SectionBytes>,
    eh_frame_svma: Option<Range<u64>>,
    eh_frame: Option<SectionBytes>,
    eh_frame_hdr_svma: Option<Range<u64>>,
    eh_frame_hdr: Option<SectionBytes>,
    debug_frame: Option<SectionBytes>,
}

/// The bytes of section `s`: in place, or inflated when compressed (under the bounds of
/// `rperf_perfdata::inflate`: a hostile binary cannot declare its way to gigabytes).
fn section_bytes<'d>(s: &object::Section<'d, '_>) -> Option<std::borrow::Cow<'d, [u8]>> {
    use rperf_perfdata::inflate::{inflate, Compression};
    let c = s.compressed_data().ok()?;
    let format = match c.format {
        object::CompressionFormat::None => return Some(std::borrow::Cow::Borrowed(c.data)),
        object::CompressionFormat::Zlib => Compression::Zlib,
        object::CompressionFormat::Zstandard => Compression::Zstd,
        _ => return None,
    };
    inflate(format, c.data, c.uncompressed_size).ok().map(std::borrow::Cow::Owned)
}

impl UnwindSections {
    /// Extracts .eh_frame, .eh_frame_hdr, .debug_frame and .text from ELF bytes (copied).
    pub fn from_elf(data: &[u8]) -> Option<UnwindSections> {
        Self::extract(data, None, true)
    }

    /// Like `from_elf`, reading the sections in place in `data` (a mapped binary): nothing is
    /// copied but compressed sections, and only the pages unwinding touches are read.
    pub fn from_shared(data: Shared) -> Option<UnwindSections> {
        // Every section that points into `data` holds it.
        Self::extract((*data).as_ref(), Some(&data), true)
    }

    /// Like `from_elf`, without the code: the CFI alone, a fraction of a binary's size (what a
    /// recorder keeps for every binary it unwinds through).
    pub fn cfi_of_elf(data: &[u8]) -> Option<UnwindSections> {
        Self::extract(data, None, false)
    }

    fn extract(data: &[u8], shared: Option<&Shared>, with_text: bool) -> Option<UnwindSections> {
        let obj = object::File::parse(data).ok()?;
        let sect = |name: &str| {
            let s = obj.section_by_name(name)?;
            let svma = s.address()..s.address() + s.size();
            let bytes = match (section_bytes(&s)?, shared) {
                // In place, when the bytes lie in the shared data.
                (std::borrow::Cow::Borrowed(b), Some(owner)) => {
                    let start = (b.as_ptr() as usize).checked_sub(data.as_ptr() as usize)?;
                    SectionBytes { owner: owner.clone(), range: start..start + b.len() }
                }
                (b, _) => SectionBytes::owned(b.into_owned()),
            };
            Some((svma, bytes))
        };
        let (text_svma, text) = if with_text {
            sect(".text").unzip()
        } else {
            (obj.section_by_name(".text").map(|s| s.address()..s.address() + s.size()), None)
        };
        let (eh_frame_svma, eh_frame) = sect(".eh_frame").unzip();
        let (eh_frame_hdr_svma, eh_frame_hdr) = sect(".eh_frame_hdr").unzip();
        let debug_frame = sect(".debug_frame").map(|(_, d)| d);
        // Linked binaries start near 0; JIT code's symbol files hold run-time addresses
        // (0x7f...), which count from the lowest of them.
        let starts: Vec<u64> =
            [&text_svma, &eh_frame_svma, &eh_frame_hdr_svma].into_iter().flatten().map(|r| r.start).collect();
        let base_svma = match starts.iter().max() {
            Some(&top) if top > u64::from(u32::MAX) => starts.iter().copied().min().unwrap_or(0),
            _ => 0,
        };
        Some(UnwindSections {
            base_svma,
            text_svma,
            text,
            eh_frame_svma,
            eh_frame,
            eh_frame_hdr_svma,
            eh_frame_hdr,
            debug_frame,
        })
    }

    /// True when there is any CFI to unwind with.
    pub fn has_cfi(&self) -> bool {
        self.eh_frame.is_some() || self.debug_frame.is_some()
    }

    fn section_info(&self) -> ExplicitModuleSectionInfo<SectionBytes> {
        ExplicitModuleSectionInfo {
            base_svma: self.base_svma,
            text_svma: self.text_svma.clone(),
            text: self.text.clone(),
            eh_frame_svma: self.eh_frame_svma.clone(),
            eh_frame: self.eh_frame.clone(),
            eh_frame_hdr_svma: self.eh_frame_hdr_svma.clone(),
            eh_frame_hdr: self.eh_frame_hdr.clone(),
            debug_frame: self.debug_frame.clone(),
            ..Default::default()
        }
    }
}

/// How many of framehop's rule caches an `UnwindCache` spreads addresses over. One holds 509
/// rules, one per address modulo 509: too few for a large program's return addresses (a g++
/// compile missed on one frame in five). An address goes to the cache its quotient by 509
/// picks, so that the caches together hold 509 × WAYS rules.
const WAYS: usize = 16;

/// framehop's rule caches, owned by the caller and shared across processes; made when the
/// first stack of their architecture is unwound.
pub struct UnwindCache {
    x86: Vec<CacheX86_64>,
    arm: Vec<CacheAarch64>,
}

impl UnwindCache {
    /// Empty caches.
    pub fn new() -> UnwindCache {
        UnwindCache { x86: Vec::new(), arm: Vec::new() }
    }
}

impl Default for UnwindCache {
    fn default() -> Self {
        Self::new()
    }
}

/// The cache of `ways` that holds the rule for `address`.
fn way_of<C>(ways: &mut Vec<C>, new: impl Fn() -> C, address: FrameAddress) -> &mut C {
    if ways.is_empty() {
        ways.extend((0..WAYS).map(|_| new()));
    }
    &mut ways[(address.address_for_lookup() / 509) as usize % WAYS]
}

/// The result of unwinding one sample.
#[derive(Clone, Debug, Default)]
pub struct Unwound {
    /// Frames, innermost first.
    pub frames: Vec<CodeAddress>,
    /// True when unwinding stopped before reaching the end of the stack.
    pub truncated: bool,
}

/// The modules of one process's address space.
#[derive(Clone)]
pub enum ProcessUnwinder {
    /// x86_64 process.
    X86(UnwinderX86_64<SectionBytes>),
    /// arm64 process.
    Arm(UnwinderAarch64<SectionBytes>),
}

fn convert(f: FrameAddress) -> CodeAddress {
    match f {
        FrameAddress::InstructionPointer(a) => CodeAddress::InstructionPointer(a),
        FrameAddress::ReturnAddress(a) => CodeAddress::ReturnAddress(a.get()),
    }
}

impl ProcessUnwinder {
    /// An empty address space.
    pub fn new(arch: Arch) -> ProcessUnwinder {
        match arch {
            Arch::X86_64 => ProcessUnwinder::X86(UnwinderX86_64::new()),
            Arch::Aarch64 => ProcessUnwinder::Arm(UnwinderAarch64::new()),
        }
    }

    /// Adds a binary mapped at `avma` whose addresses are its SVMAs plus `bias`.
    pub fn add_module(&mut self, name: &str, avma: Range<u64>, bias: u64, sections: &UnwindSections) {
        // framehop places the module by the address its base SVMA is loaded at.
        let base_avma = bias.wrapping_add(sections.base_svma);
        let module = Module::new(name.to_string(), avma, base_avma, sections.section_info());
        match self {
            ProcessUnwinder::X86(u) => u.add_module(module),
            ProcessUnwinder::Arm(u) => u.add_module(module),
        }
    }

    /// Removes the module that starts at `start`.
    pub fn remove_module(&mut self, start: u64) {
        match self {
            ProcessUnwinder::X86(u) => u.remove_module(start),
            ProcessUnwinder::Arm(u) => u.remove_module(start),
        }
    }

    /// Unwinds from `regs` over `stack` (the bytes copied from `regs.sp` upward), at most
    /// `max_frames` frames.
    pub fn unwind(&self, cache: &mut UnwindCache, regs: Regs, stack: &[u8], max_frames: usize) -> Unwound {
        let mut frames = Vec::new();
        let truncated = self.unwind_each(cache, regs, stack, max_frames, |f| frames.push(f));
        Unwound { frames, truncated }
    }

    /// `unwind`, handing each frame (innermost first) to `frame` as it is found; returns whether
    /// the stack was cut short.
    pub fn unwind_each(
        &self,
        cache: &mut UnwindCache,
        regs: Regs,
        stack: &[u8],
        max_frames: usize,
        mut frame: impl FnMut(CodeAddress),
    ) -> bool {
        let sp = regs.sp;
        let mut read = |addr: u64| -> Result<u64, ()> {
            let off = addr.checked_sub(sp).ok_or(())? as usize;
            let bytes = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(bytes.try_into().map_err(|_| ())?))
        };
        let (mut found, mut truncated, regs_ip) = (0, false, regs.ip);
        // framehop's `iter_frames`, with the rule cache picked for each frame's address.
        macro_rules! walk {
            ($unwinder:expr, $regs:expr, $caches:expr, $new_cache:expr) => {{
                let mut regs = $regs;
                let mut address = FrameAddress::InstructionPointer(regs_ip);
                loop {
                    if found >= max_frames {
                        truncated = true;
                        break;
                    }
                    frame(convert(address));
                    found += 1;
                    if found >= max_frames {
                        truncated = true;
                        break;
                    }
                    let cache = way_of($caches, $new_cache, address);
                    match $unwinder.unwind_frame(address, &mut regs, cache, &mut read) {
                        Ok(Some(ra)) => match FrameAddress::from_return_address(ra) {
                            Some(next) => address = next,
                            None => {
                                truncated = true;
                                break;
                            }
                        },
                        Ok(None) => break,
                        Err(_) => {
                            truncated = true;
                            break;
                        }
                    }
                }
            }};
        }
        match self {
            ProcessUnwinder::X86(u) => {
                walk!(u, UnwindRegsX86_64::new(regs.ip, regs.sp, regs.fp), &mut cache.x86, CacheX86_64::new)
            }
            ProcessUnwinder::Arm(u) => {
                walk!(u, UnwindRegsAarch64::new(regs.lr, regs.sp, regs.fp), &mut cache.arm, CacheAarch64::new)
            }
        }
        truncated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_pointer_fallback_walks_a_synthetic_stack() {
        // No CFI: framehop falls back to the frame-pointer chain.
        let u = ProcessUnwinder::new(Arch::X86_64);
        let mut cache = UnwindCache::new();
        let sp = 0x1000u64;
        // [sp+0]=saved rbp -> 0x1010, [sp+8]=return 0x401234; [0x1010]=0, [0x1018]=0x405678
        let mut stack = vec![0u8; 0x20];
        stack[0..8].copy_from_slice(&0x1010u64.to_le_bytes());
        stack[8..16].copy_from_slice(&0x401234u64.to_le_bytes());
        stack[0x18..0x20].copy_from_slice(&0x405678u64.to_le_bytes());
        let r = u.unwind(&mut cache, Regs { ip: 0x400100, sp, fp: sp, lr: 0 }, &stack, 64);
        assert_eq!(r.frames[0], CodeAddress::InstructionPointer(0x400100));
        assert_eq!(r.frames[1].lookup(), 0x401233);
        let cut = u.unwind(&mut cache, Regs { ip: 0x400100, sp, fp: sp, lr: 0 }, &stack, 2);
        assert_eq!(cut.frames, r.frames[..2]);
        assert!(cut.truncated);
    }

    #[test]
    fn addresses_that_share_a_framehop_slot_go_to_different_caches() {
        let mut ways: Vec<u64> = Vec::new();
        let mut way = |a: u64| {
            let w = way_of(&mut ways, || 0, FrameAddress::InstructionPointer(a));
            *w += 1;
            w as *const u64 as usize
        };
        let first = way(0x401234);
        assert_eq!(way(0x401234), first);
        // framehop's cache holds one rule per address modulo 509.
        let others: Vec<usize> = (1..WAYS as u64).map(|k| way(0x401234 + 509 * k)).collect();
        assert!(!others.contains(&first));
        assert_eq!(others.iter().collect::<std::collections::HashSet<_>>().len(), WAYS - 1);
        assert_eq!(ways.len(), WAYS);
        assert_eq!(ways.iter().sum::<u64>(), WAYS as u64 + 1);
    }
}
