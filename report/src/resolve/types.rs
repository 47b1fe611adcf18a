//! The read-only results of resolving: function and address ids, functions, and what each
//! frame address was named.

use rperf_symbols::KernelSymbols;

use crate::model::DsoId;

/// Where kernel symbols come from: ready, or a loader run on the first kernel frame (reading
/// /proc/kallsyms costs tens of milliseconds, which recordings without kernel frames skip).
pub enum KernelSource {
    /// Loaded.
    Ready(KernelSymbols),
    /// To load on first use, for the kernel addresses given (a loader may leave out symbols
    /// no address needs); returns the symbols and possibly a warning.
    Pending(KernelLoader),
    /// Loaded for the kernel addresses met so far, and loaded again when others come (a live
    /// report): the loader, the symbols, and how many addresses they were loaded for.
    Following(KernelLoader, KernelSymbols, Option<usize>),
}

impl KernelSource {
    /// The symbols, once loaded.
    pub fn loaded(&self) -> Option<&KernelSymbols> {
        match self {
            KernelSource::Ready(k) | KernelSource::Following(_, k, _) => Some(k),
            KernelSource::Pending(_) => None,
        }
    }
}

/// Loads kernel symbols for the kernel addresses given; returns them and possibly a warning.
pub type KernelLoader = Box<dyn FnMut(&[u64]) -> (KernelSymbols, Option<String>) + Send + Sync>;

/// Index of an interned function.
pub type FuncId = u32;

/// Index of a distinct frame: a binary and a place in it.
pub type AddrId = u32;

/// How a frame's place is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AddrKind {
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

/// A frame address to name: its binary and the place in it.
#[derive(Clone, Copy, Debug)]
pub(super) struct FrameAddr {
    pub dso: DsoId,
    /// Where to look it up: a file offset for binaries, the address itself for kernel and JIT
    /// code (for a return address, one byte back, in the call).
    pub key: u64,
    pub kind: AddrKind,
    /// A return address, looked up one byte back.
    pub returns: bool,
    /// The lookup address less its mapping's start, for binaries (the place simpleperf names
    /// code by when the binary is not at hand); `key` for the rest.
    pub in_map: u64,
    /// The lookup address itself.
    pub runtime: u64,
}

impl FrameAddr {
    /// `at` (a place found from the lookup address) as the frame's own address: one byte on
    /// for a return address.
    pub fn own(&self, at: u64) -> u64 {
        at.wrapping_add(self.returns as u64)
    }
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
    pub(super) locations: Vec<(DsoId, u64)>,
    pub(super) spans: Vec<(u32, u32)>,
    pub(super) flat: Vec<FuncId>,
    /// Where in its function each entry of `flat` is: (file id + 1 or 0, line), when lines
    /// were wanted.
    pub(super) places: Vec<(u32, u32)>,
    /// Interned `file:line` (or `binary[+offset]`) of each frame address.
    pub srcline: Vec<u32>,
    /// Each frame address in its binary's own address space (simpleperf's `vaddr_in_file`):
    /// the ELF virtual address where the binary or its stored symbols tell it, else the place.
    pub(super) vaddrs: Vec<u64>,
    /// The start and length of each frame address's containing symbol, in the address space
    /// of `vaddrs` (the address itself and 0 without a symbol).
    pub(super) ranges: Vec<(u64, u64)>,
    /// Functions that stand for code without a symbol (named `[unknown]` or `BINARY[+hex]`).
    pub(super) unnamed: std::collections::HashSet<FuncId>,
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

    /// The start and length of the symbol containing frame address `a`, in the address space
    /// of `vaddr_in_file` (the address itself and 0 when no symbol holds it).
    pub fn symbol_range(&self, a: AddrId) -> (u64, u64) {
        self.ranges[a as usize]
    }

    /// Function `f` stands for code without a symbol.
    pub fn is_unnamed(&self, f: FuncId) -> bool {
        self.unnamed.contains(&f)
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
            ranges: (0..n as u64).map(|i| (i, 0)).collect(),
            unnamed: Default::default(),
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
