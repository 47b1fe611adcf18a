//! Input files mapped into memory: the one place rperf maps a file it reads (recordings,
//! binaries, debug files, cache entries), and so the one place outside the recorder with
//! `unsafe` code.
//!
//! A mapping of a file that another process truncates while it is read faults; every profiler
//! that maps binaries accepts that risk, and rperf maps only files opened read-only and never
//! writes through a mapping.

use std::fs::File;
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

pub use memmap2::Mmap;

/// Maps all of `file` read-only.
pub fn map(file: &File) -> std::io::Result<Mmap> {
    // SAFETY: a read-only shared mapping of a file opened for reading; rperf never writes to
    // files it maps (see the module's note on truncation).
    unsafe { Mmap::map(file) }
}

/// Maps `len` bytes of `file` at `offset` read-only; `populate` asks the kernel to fill the
/// page table now, on the caller's thread, instead of at each first touch.
pub fn map_range(file: &File, offset: u64, len: usize, populate: bool) -> std::io::Result<Mmap> {
    let mut options = memmap2::MmapOptions::new();
    options.offset(offset).len(len);
    if populate {
        options.populate();
    }
    // SAFETY: as in `map`.
    unsafe { options.map(file) }
}

/// A window of a file of `file_len` bytes: at least `size` bytes (and at least the `n` bytes at
/// `at`, which it holds) from the page that holds `at`, up to the end of the file. Returns the
/// window's file offset and its mapping. The record walkers of recordings read them through
/// windows, so that a large file is neither copied through read() nor mapped whole (its pages
/// would count as memory in use).
pub fn window(
    file: &File,
    file_len: u64,
    at: u64,
    n: u64,
    size: u64,
    populate: bool,
) -> std::io::Result<(u64, Mmap)> {
    const PAGE: u64 = 4096;
    let start = at / PAGE * PAGE;
    let len = size.max(at.saturating_add(n) - start).min(file_len.saturating_sub(start));
    let len = usize::try_from(len).map_err(|_| std::io::Error::other("a window larger than memory"))?;
    Ok((start, map_range(file, start, len, populate)?))
}

/// Bytes held in memory (an image kept in a recording), in a memory file mapped read-only, so
/// that they are read like a file on disk: every mapping the symbolizer reads is of a file,
/// whose pages `let_go` may drop.
pub fn map_bytes(bytes: &[u8]) -> std::io::Result<Arc<Mmap>> {
    // SAFETY: memfd_create takes a NUL-terminated name and flags, and returns a new descriptor.
    let fd = unsafe { libc::memfd_create(c"rperf-image".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor that nothing else owns.
    let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(bytes)?;
    if bytes.is_empty() {
        file.set_len(1)?; // an empty mapping is an error
    }
    Ok(Arc::new(map(&file)?))
}

/// Lets go of the pages holding `size` bytes at `offset` of a read-only file mapping: the
/// process's memory no longer counts them, and the kernel reads them back in (from the page
/// cache) if they are touched again. Mappings made here are all of files, so nothing is lost.
pub fn let_go(map: &Mmap, offset: u64, size: u64) {
    let (Ok(offset), Ok(size)) = (usize::try_from(offset), usize::try_from(size)) else { return };
    if offset.checked_add(size).is_some_and(|end| end <= map.len()) {
        // SAFETY: the mapping is of a file opened read-only and never written through, so
        // dropping its pages loses nothing: they read back from the file.
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, size) };
    }
}

/// Asks the CPU to bring the first cache lines of `bytes` (up to `head` bytes) and its last
/// line into the cache: a hint for data read next, which never faults.
pub fn prefetch(bytes: &[u8], head: usize) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes[..head.min(bytes.len())].chunks(64).chain(bytes.rchunks(64).take(1)) {
        // SAFETY: a prefetch is a hint that never faults, here for memory the slice owns.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(line.as_ptr().cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, head);
}

/// A range of bytes of a shared owner (a mapping, or an inflated section): cheap to clone,
/// and at a fixed address for as long as any clone lives, as gimli's readers require.
#[derive(Clone)]
pub struct SharedBytes {
    owner: Arc<dyn AsRef<[u8]> + Send + Sync>,
    start: usize,
    len: usize,
}

impl SharedBytes {
    /// `len` bytes of `owner` from `start`; `None` when that range is not inside it.
    pub fn new(owner: Arc<dyn AsRef<[u8]> + Send + Sync>, start: usize, len: usize) -> Option<SharedBytes> {
        let end = start.checked_add(len)?;
        (end <= (*owner).as_ref().len()).then_some(SharedBytes { owner, start, len })
    }

    /// All of `bytes`.
    pub fn whole(bytes: Vec<u8>) -> SharedBytes {
        let len = bytes.len();
        SharedBytes { owner: Arc::new(bytes), start: 0, len }
    }
}

impl std::fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SharedBytes({} bytes)", self.len)
    }
}

impl std::ops::Deref for SharedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &(*self.owner).as_ref()[self.start..self.start + self.len]
    }
}

// SAFETY: the bytes live in an Arc'd owner that is never mutated, so the slice's address is
// stable across moves and clones of `SharedBytes`.
unsafe impl stable_deref_trait::StableDeref for SharedBytes {}
// SAFETY: as above; clones share the same owner.
unsafe impl stable_deref_trait::CloneStableDeref for SharedBytes {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_mapped_and_ranges_checked() {
        let m = map_bytes(b"hello").unwrap();
        assert_eq!(&m[..], b"hello");
        let_go(&m, 0, 4096); // past the end: nothing happens
        let_go(&m, 0, 5);
        assert_eq!(&m[..], b"hello", "pages of a file read back");
        let owner: Arc<dyn AsRef<[u8]> + Send + Sync> = Arc::new(b"abcdef".to_vec());
        assert_eq!(&*SharedBytes::new(owner.clone(), 2, 3).unwrap(), b"cde");
        assert!(SharedBytes::new(owner.clone(), 4, 3).is_none());
        assert!(SharedBytes::new(owner, usize::MAX, 2).is_none());
    }
}
