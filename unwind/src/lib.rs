//! Stack unwinding: frame-pointer call chains recorded by the kernel, and DWARF CFI unwinding
//! of copied user stacks with framehop, for x86_64 and aarch64 recordings on any host.
//!
//! One small interface: registers and stack bytes in, code addresses out. The caller adds and
//! removes modules (binaries mapped into the process) and owns the rule cache.
//!
//! ```no_run
//! use rperf_unwind::{Arch, ProcessUnwinder, Regs, UnwindCache, UnwindSections};
//! let elf = std::fs::read("/bin/ls").unwrap();
//! let sections = UnwindSections::from_elf(&elf).unwrap();
//! let mut unwinder = ProcessUnwinder::new(Arch::X86_64);
//! unwinder.add_module("ls", 0x5555_0000..0x5556_0000, 0x5555_0000, &sections);
//! let mut cache = UnwindCache::new();
//! let regs = Regs { ip: 0x5555_1000, sp: 0x7fff_0000, fp: 0, lr: 0 };
//! let stack = [0u8; 64];
//! let unwound = unwinder.unwind(&mut cache, regs, &stack, 256);
//! println!("{} frames", unwound.frames.len());
//! ```
#![deny(missing_docs)]

mod callchain;
mod dwarf;

pub use callchain::{split_callchain, ChainFrame, Context};
pub use dwarf::{
    Arch, CodeAddress, PerfRegs, ProcessUnwinder, Regs, SectionBytes, Shared, UnwindCache, UnwindSections,
    Unwound,
};
