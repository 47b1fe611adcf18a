//! Symbolization: ELF symbol tables, kernel symbols, demangling, and finding the right binary
//! for a recorded path and build id.
//!
//! Each binary is mapped, not read, and its table is built once and shared; lookups are a
//! binary search. The caller decides which binary belongs to which address range and passes
//! file-relative virtual addresses (SVMAs) here.
//!
//! ```no_run
//! let elf = rperf_symbols::ElfInfo::load(std::path::Path::new("/bin/ls")).unwrap();
//! if let Some(sym) = elf.symbols().lookup(0x4000) { println!("{}", sym.name); }
//! ```
#![deny(missing_docs)]

pub mod apk;
pub mod buildid;
pub mod cache;
pub mod debuginfod;
mod demangle;
mod dwarf;
mod elf;
mod error;
pub mod jit;
pub mod kallsyms;
pub mod kallsyms_cache;
mod kept_frames;
mod kernel;
mod locate;
pub mod notes;
pub mod symdir;
mod table;
pub mod text;
pub mod trusted;

pub use demangle::{demangle, demangle_full};
pub use dwarf::{DebugInfo, SourceFrame};
pub use elf::{debug_file_candidates, mapping_vaddr, ElfInfo, LoadSegment};
pub use error::Error;
pub use kernel::KernelSymbols;
pub use locate::{inside, running_vdso, BinaryFinder, Found};
pub use table::{Binding, Symbol, SymbolTable};
