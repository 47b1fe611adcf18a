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
mod demangle;
mod dwarf;
mod elf;
pub mod jit;
pub mod kallsyms;
pub mod kallsyms_cache;
mod kept_frames;
mod kernel;
mod locate;
mod table;
pub mod text;
pub mod trusted;

pub use demangle::{demangle, demangle_full};
pub use dwarf::{DebugInfo, SourceFrame};
pub use elf::{debug_file_candidates, mapping_vaddr, ElfInfo, LoadSegment};
pub use kernel::KernelSymbols;
pub use locate::{inside, running_vdso, BinaryFinder, Found};
pub use table::{Binding, Symbol, SymbolTable};

/// Errors of loading symbol sources.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or mapped.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not an ELF file this reader understands.
    #[error("{path}: not a readable ELF file: {reason}")]
    Parse {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
}

/// Bytes held in memory (an image kept in a recording), in a memory file mapped read-only, so
/// that they are read like a file on disk: every mapping the symbolizer reads is of a file,
/// whose pages `let_go` may drop.
pub fn map_bytes(bytes: &[u8]) -> std::io::Result<std::sync::Arc<memmap2::Mmap>> {
    use std::io::Write;
    use std::os::fd::FromRawFd;
    // SAFETY: memfd_create takes a NUL-terminated name and flags; the descriptor it returns is
    // owned by the File from here on.
    let fd = unsafe { libc::memfd_create(c"rperf-image".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor that nothing else owns.
    let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
    file.write_all(bytes)?;
    if bytes.is_empty() {
        file.set_len(1)?; // an empty mapping is an error
    }
    // SAFETY: the memory file is this process's own and is never written again.
    Ok(std::sync::Arc::new(unsafe { memmap2::Mmap::map(&file) }?))
}

/// Lets go of the pages holding `size` bytes at `offset` of a read-only file mapping: the
/// process's memory no longer counts them, and the kernel reads them back in (from the page
/// cache) if they are touched again. Only for mappings of files (`memmap2::Mmap::map`, shared):
/// in anonymous memory, the bytes would be lost.
pub(crate) fn let_go(map: &memmap2::Mmap, offset: u64, size: u64) {
    let (Ok(offset), Ok(size)) = (usize::try_from(offset), usize::try_from(size)) else { return };
    if offset.checked_add(size).is_some_and(|end| end <= map.len()) {
        // SAFETY: the mapping is of a file opened read-only and never written through, so
        // dropping its pages loses nothing: they read back from the file.
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, size) };
    }
}
