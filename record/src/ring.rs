//! The kernel's per-event ring buffer: mapping it and handing out the records it holds.

use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU64, Ordering};

use crate::sys::{page_size, perf_event_mmap_page};

/// A mapped perf ring buffer (one metadata page followed by `2^n` data pages).
pub struct RingBuffer {
    base: NonNull<u8>,
    map_len: usize,
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the mapping is owned by this value alone; the kernel writes to it concurrently, which
// is what the head/tail protocol below is for, whichever thread holds the value.
unsafe impl Send for RingBuffer {}

impl RingBuffer {
    /// Maps the ring buffer of `fd` with `data_pages` data pages (a power of two).
    pub fn map(fd: RawFd, data_pages: usize) -> io::Result<RingBuffer> {
        debug_assert!(data_pages.is_power_of_two());
        let page = page_size();
        let map_len = (data_pages + 1) * page;
        // SAFETY: we ask for a fresh shared mapping of a perf fd; the kernel validates the size,
        // and we keep the returned region alive until Drop unmaps it.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(ptr as *mut u8).expect("mmap returned null on success");
        Ok(RingBuffer { base, map_len, data_offset: page, data_size: data_pages * page })
    }

    fn meta(&self) -> *mut perf_event_mmap_page {
        self.base.as_ptr() as *mut perf_event_mmap_page
    }

    fn head_tail(&self) -> (&AtomicU64, &AtomicU64) {
        // SAFETY: data_head and data_tail are naturally aligned u64 fields of the metadata page,
        // which lives as long as `self`; the kernel accesses them atomically too.
        unsafe {
            let meta = self.meta();
            (
                AtomicU64::from_ptr(std::ptr::addr_of_mut!((*meta).data_head)),
                AtomicU64::from_ptr(std::ptr::addr_of_mut!((*meta).data_tail)),
            )
        }
    }

    /// Bytes written by the kernel and not yet consumed.
    pub fn pending(&self) -> u64 {
        let (head, tail) = self.head_tail();
        head.load(Ordering::Acquire).wrapping_sub(tail.load(Ordering::Relaxed))
    }

    /// The data pages, where `peek` says each record lies.
    pub fn data(&self) -> &[u8] {
        // SAFETY: [data_offset, data_offset + data_size) lies inside our mapping, which lives as
        // long as `self`. The kernel never writes between the tail it was last given and its
        // head, so the records `peek` hands out stay as they are until `release`.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(self.data_offset), self.data_size) }
    }

    /// Calls `f` with each complete record (header included) now in the buffer, and where it
    /// lies in `data()`: None for a record that wraps around the end, passed as a copy (made
    /// in `scratch`). Returns where the records end: their space stays the reader's, and
    /// they stay where `data()` has them, until `release` is given it.
    pub fn peek(&self, scratch: &mut Vec<u8>, mut f: impl FnMut(Option<usize>, &[u8])) -> u64 {
        let (head_a, tail_a) = self.head_tail();
        let head = head_a.load(Ordering::Acquire);
        let mut tail = tail_a.load(Ordering::Relaxed);
        let data = self.data();
        let mask = self.data_size as u64 - 1;
        while head.wrapping_sub(tail) >= 8 {
            let start = (tail & mask) as usize;
            // Records are 8-byte aligned in a ring of whole pages: a header never wraps.
            let size = match data.get(start + 6..start + 8) {
                Some(s) => u16::from_le_bytes([s[0], s[1]]) as u64,
                None => 0,
            };
            if size < 8 || size > head.wrapping_sub(tail) {
                // A zero or oversized header means the buffer is inconsistent; drop what is left
                // rather than looping forever.
                if size < 8 {
                    tail = head;
                }
                break;
            }
            let size = size as usize;
            if start + size <= data.len() {
                f(Some(start), &data[start..start + size]);
            } else {
                scratch.resize(size, 0);
                copy_wrapped(data, start, scratch);
                f(None, scratch);
            }
            tail = tail.wrapping_add(size as u64);
        }
        tail
    }

    /// Gives the kernel back the space of the records `peek` handed out, up to `end`, which
    /// it returned.
    pub fn release(&self, end: u64) {
        let (_, tail_a) = self.head_tail();
        fence(Ordering::SeqCst);
        tail_a.store(end, Ordering::Release);
    }
}

fn copy_wrapped(data: &[u8], start: usize, out: &mut [u8]) {
    let first = (data.len() - start).min(out.len());
    out[..first].copy_from_slice(&data[start..start + first]);
    let rest = out.len() - first;
    out[first..].copy_from_slice(&data[..rest]);
}

impl Drop for RingBuffer {
    fn drop(&mut self) {
        // SAFETY: base/map_len are exactly what mmap returned, and no borrow of the mapping
        // outlives `self`.
        unsafe {
            libc::munmap(self.base.as_ptr() as *mut libc::c_void, self.map_len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of `data_pages` pages of anonymous memory, written as the kernel writes one.
    fn anonymous(data_pages: usize) -> RingBuffer {
        let page = page_size();
        let map_len = (data_pages + 1) * page;
        // SAFETY: a fresh anonymous mapping, unmapped by the ring's Drop.
        let ptr = unsafe {
            let flags = libc::MAP_SHARED | libc::MAP_ANONYMOUS;
            libc::mmap(std::ptr::null_mut(), map_len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0)
        };
        assert_ne!(ptr, libc::MAP_FAILED);
        let base = NonNull::new(ptr as *mut u8).unwrap();
        RingBuffer { base, map_len, data_offset: page, data_size: data_pages * page }
    }

    /// Writes records of `sizes` bytes from `head` on, tagged with their number, as the kernel
    /// would; the new head.
    fn produce(ring: &RingBuffer, mut head: u64, sizes: &[usize]) -> u64 {
        let mask = ring.data_size as u64 - 1;
        for (n, &size) in sizes.iter().enumerate() {
            let mut rec = vec![n as u8; size];
            rec[6..8].copy_from_slice(&(size as u16).to_le_bytes());
            for (i, b) in rec.iter().enumerate() {
                let at = ring.data_offset + ((head + i as u64) & mask) as usize;
                // SAFETY: `at` lies in the ring's data pages.
                unsafe { *ring.base.as_ptr().add(at) = *b };
            }
            head += size as u64;
        }
        ring.head_tail().0.store(head, Ordering::Release);
        head
    }

    #[test]
    fn peeked_records_stay_where_they_are_until_released() {
        let ring = anonymous(1);
        let size = ring.data_size;
        // Start near the end, so that the third record wraps around it.
        let start = (size - 48) as u64;
        ring.release(start);
        let head = produce(&ring, start, &[16, 24, 32, 8]);
        let mut seen = Vec::new();
        let end = ring.peek(&mut Vec::new(), |at, rec| seen.push((at, rec[0], rec.len())));
        assert_eq!(end, head);
        assert_eq!(
            seen,
            [(Some(size - 48), 0, 16), (Some(size - 32), 1, 24), (None, 2, 32), (Some(24), 3, 8)]
        );
        // Nothing is handed back until release: the kernel sees all of it pending.
        assert_eq!(ring.pending(), 80);
        assert_eq!(&ring.data()[size - 32..size - 31], &[1]);
        ring.release(end);
        assert_eq!(ring.pending(), 0);
    }

    #[test]
    fn wrapped_copy() {
        let data = [1, 2, 3, 4, 5, 6, 7, 8];
        let mut out = [0; 4];
        copy_wrapped(&data, 6, &mut out);
        assert_eq!(out, [7, 8, 1, 2]);
    }
}
