//! The kernel ABI: perf_event_open, its ioctls, and the record layout constants.
//!
//! This is the only module in rperf that talks to the kernel's perf interface directly; it
//! also holds the one setting of the C library's allocator (`fixed_heap_thresholds`).

// The constants are the kernel headers' (through perf-event-open-sys), under short names;
// the headers document them.
#![allow(missing_docs)]

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

pub use perf_event_open_sys::bindings::{perf_event_attr, perf_event_mmap_page};

/// `perf_event_attr.type` values.
pub mod attr_type {
    use perf_event_open_sys::bindings as b;
    pub const HARDWARE: u32 = b::PERF_TYPE_HARDWARE;
    pub const SOFTWARE: u32 = b::PERF_TYPE_SOFTWARE;
    pub const TRACEPOINT: u32 = b::PERF_TYPE_TRACEPOINT;
    pub const HW_CACHE: u32 = b::PERF_TYPE_HW_CACHE;
    pub const RAW: u32 = b::PERF_TYPE_RAW;
}

/// `sample_type` bits.
pub mod sample {
    use perf_event_open_sys::bindings as b;
    pub const IP: u64 = b::PERF_SAMPLE_IP as u64;
    pub const TID: u64 = b::PERF_SAMPLE_TID as u64;
    pub const TIME: u64 = b::PERF_SAMPLE_TIME as u64;
    pub const ADDR: u64 = b::PERF_SAMPLE_ADDR as u64;
    pub const READ: u64 = b::PERF_SAMPLE_READ as u64;
    pub const CALLCHAIN: u64 = b::PERF_SAMPLE_CALLCHAIN as u64;
    pub const ID: u64 = b::PERF_SAMPLE_ID as u64;
    pub const CPU: u64 = b::PERF_SAMPLE_CPU as u64;
    pub const PERIOD: u64 = b::PERF_SAMPLE_PERIOD as u64;
    pub const STREAM_ID: u64 = b::PERF_SAMPLE_STREAM_ID as u64;
    pub const RAW: u64 = b::PERF_SAMPLE_RAW as u64;
    pub const BRANCH_STACK: u64 = b::PERF_SAMPLE_BRANCH_STACK as u64;
    pub const REGS_USER: u64 = b::PERF_SAMPLE_REGS_USER as u64;
    pub const STACK_USER: u64 = b::PERF_SAMPLE_STACK_USER as u64;
    pub const IDENTIFIER: u64 = b::PERF_SAMPLE_IDENTIFIER as u64;
}

/// `perf_event_header.type` values written by the kernel.
pub mod record_type {
    use perf_event_open_sys::bindings as b;
    pub const MMAP: u32 = b::PERF_RECORD_MMAP;
    pub const LOST: u32 = b::PERF_RECORD_LOST;
    pub const COMM: u32 = b::PERF_RECORD_COMM;
    pub const EXIT: u32 = b::PERF_RECORD_EXIT;
    pub const THROTTLE: u32 = b::PERF_RECORD_THROTTLE;
    pub const UNTHROTTLE: u32 = b::PERF_RECORD_UNTHROTTLE;
    pub const FORK: u32 = b::PERF_RECORD_FORK;
    pub const SAMPLE: u32 = b::PERF_RECORD_SAMPLE;
    pub const MMAP2: u32 = b::PERF_RECORD_MMAP2;
    pub const LOST_SAMPLES: u32 = b::PERF_RECORD_LOST_SAMPLES;
}

/// `perf_event_header.misc` bits.
pub mod misc {
    use perf_event_open_sys::bindings as b;
    pub const CPUMODE_MASK: u16 = b::PERF_RECORD_MISC_CPUMODE_MASK as u16;
    pub const KERNEL: u16 = b::PERF_RECORD_MISC_KERNEL as u16;
    pub const USER: u16 = b::PERF_RECORD_MISC_USER as u16;
    pub const COMM_EXEC: u16 = b::PERF_RECORD_MISC_COMM_EXEC as u16;
    pub const MMAP_BUILD_ID: u16 = b::PERF_RECORD_MISC_MMAP_BUILD_ID as u16;
}

/// `PERF_COUNT_SW_DUMMY`: a software event that never counts, opened for its side-band records.
pub const SW_DUMMY: u64 = perf_event_open_sys::bindings::PERF_COUNT_SW_DUMMY as u64;

/// Callchain context markers (`PERF_CONTEXT_*`), stored as u64 in callchains.
pub const PERF_CONTEXT_MAX: u64 = perf_event_open_sys::bindings::PERF_CONTEXT_MAX;
pub const PERF_CONTEXT_KERNEL: u64 = perf_event_open_sys::bindings::PERF_CONTEXT_KERNEL;
pub const PERF_CONTEXT_USER: u64 = perf_event_open_sys::bindings::PERF_CONTEXT_USER;

/// The attribute size rperf writes into perf.data files (`PERF_ATTR_SIZE_VER7`), which every
/// perf since 5.x reads without complaint.
pub const FILE_ATTR_SIZE: u32 = perf_event_open_sys::bindings::PERF_ATTR_SIZE_VER7;

/// The user registers a DWARF-mode sample records, and the count of them.
#[cfg(target_arch = "x86_64")]
pub const USER_REGS_MASK: u64 = 0xff_0fff; // ax..ss and r8..r15, without ds/es/fs/gs.
#[cfg(target_arch = "aarch64")]
pub const USER_REGS_MASK: u64 = (1 << 33) - 1; // x0..x30, sp, pc.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const USER_REGS_MASK: u64 = 0;

/// Bit of the stack pointer in the user register mask.
#[cfg(target_arch = "x86_64")]
pub const SP_REG_BIT: u32 = perf_event_open_sys::bindings::PERF_REG_X86_SP;
#[cfg(target_arch = "aarch64")]
pub const SP_REG_BIT: u32 = perf_event_open_sys::bindings::PERF_REG_ARM64_SP;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const SP_REG_BIT: u32 = 0;

/// Bit of the instruction pointer in the user register mask.
#[cfg(target_arch = "x86_64")]
pub const IP_REG_BIT: u32 = perf_event_open_sys::bindings::PERF_REG_X86_IP;
#[cfg(target_arch = "aarch64")]
pub const IP_REG_BIT: u32 = perf_event_open_sys::bindings::PERF_REG_ARM64_PC;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const IP_REG_BIT: u32 = 0;

/// Where the instruction pointer is among a sample's user registers.
pub const IP_REG_INDEX: usize = (USER_REGS_MASK & ((1u64 << IP_REG_BIT) - 1)).count_ones() as usize;

/// Largest user stack copy the kernel accepts in one sample (the record size is a u16).
pub const MAX_STACK_USER: u32 = 65528;

/// Opens one perf event.
///
/// # Safety
/// `attr` must be a fully initialised attribute; the caller owns the returned fd.
pub fn perf_event_open(
    attr: &mut perf_event_attr,
    pid: i32,
    cpu: i32,
    group_fd: RawFd,
) -> io::Result<OwnedFd> {
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong =
        perf_event_open_sys::bindings::PERF_FLAG_FD_CLOEXEC as libc::c_ulong;
    // SAFETY: `attr` is a valid, initialised perf_event_attr that outlives the call; the kernel
    // only reads it (and may write back `size`).
    let fd = unsafe { perf_event_open_sys::perf_event_open(attr, pid, cpu, group_fd, PERF_FLAG_FD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us and nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// `PERF_EVENT_IOC_ENABLE`.
pub fn ioc_enable(fd: RawFd) -> io::Result<()> {
    // SAFETY: ENABLE takes no pointer argument; an invalid fd only yields EBADF.
    check(unsafe { perf_event_open_sys::ioctls::ENABLE(fd, 0) })
}

/// `PERF_EVENT_IOC_DISABLE`.
pub fn ioc_disable(fd: RawFd) -> io::Result<()> {
    // SAFETY: DISABLE takes no pointer argument; an invalid fd only yields EBADF.
    check(unsafe { perf_event_open_sys::ioctls::DISABLE(fd, 0) })
}

/// `PERF_EVENT_IOC_SET_OUTPUT`: send `fd`'s records to `target`'s ring buffer.
pub fn ioc_set_output(fd: RawFd, target: RawFd) -> io::Result<()> {
    // SAFETY: SET_OUTPUT takes an fd number, no pointer.
    check(unsafe { perf_event_open_sys::ioctls::SET_OUTPUT(fd, target) })
}

/// `PERF_EVENT_IOC_ID`: the kernel's id for this event, as found in samples.
pub fn ioc_id(fd: RawFd) -> io::Result<u64> {
    let mut id = 0u64;
    // SAFETY: ID writes one u64 through the pointer, which points at a live local.
    check(unsafe { perf_event_open_sys::ioctls::ID(fd, &mut id) })?;
    Ok(id)
}

/// Returns the attribute as the bytes that perf.data stores (`FILE_ATTR_SIZE` long).
pub fn attr_bytes(attr: &perf_event_attr) -> Vec<u8> {
    let mut copy = *attr;
    copy.size = FILE_ATTR_SIZE;
    let len = std::mem::size_of::<perf_event_attr>().min(FILE_ATTR_SIZE as usize);
    // SAFETY: perf_event_attr is a plain-old-data repr(C) struct; reading `len` <= its size bytes
    // from a live value is sound.
    let bytes = unsafe { std::slice::from_raw_parts(&copy as *const _ as *const u8, len) };
    let mut out = bytes.to_vec();
    out.resize(FILE_ATTR_SIZE as usize, 0);
    out
}

/// Number of CPUs the kernel can report on (online ones are listed in
/// /sys/devices/system/cpu/online).
pub fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(s.trim()).ok())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n as u32).collect()
        })
}

/// Parses a CPU list like `0-3,5,7-8`.
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let bad = || format!("bad CPU list item '{part}' (expected N or N-M, e.g. 0-3,5)");
        if let Some((a, b)) = part.split_once('-') {
            let a: u32 = a.trim().parse().map_err(|_| bad())?;
            let b: u32 = b.trim().parse().map_err(|_| bad())?;
            if b < a || b - a > 4096 {
                return Err(bad());
            }
            cpus.extend(a..=b);
        } else {
            cpus.push(part.trim().parse().map_err(|_| bad())?);
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The clock samples are stamped with (`record --clockid`), which the recorder also times
/// what it reads from the recorded processes with.
static SAMPLE_CLOCK: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(libc::CLOCK_MONOTONIC);

/// Sets the clock samples are stamped with.
pub(crate) fn set_sample_clock(clockid: i32) {
    SAMPLE_CLOCK.store(clockid, std::sync::atomic::Ordering::Relaxed);
}

/// Now, on `clockid`, in ns (0 if the clock cannot be read).
pub fn clock_ns(clockid: i32) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime fills a local timespec.
    if unsafe { libc::clock_gettime(clockid, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

/// Now, on the clock samples are stamped with, in ns.
pub(crate) fn sample_clock_ns() -> u64 {
    clock_ns(SAMPLE_CLOCK.load(std::sync::atomic::Ordering::Relaxed))
}

/// The resolution of `clockid`, in ns; None for a clock this kernel does not have.
pub fn clock_resolution_ns(clockid: i32) -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_getres fills a local timespec.
    if unsafe { libc::clock_getres(clockid, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// The page size of this machine.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Has the C library's allocator give freed memory back to the kernel once 128 KiB of it lie at
/// the top of the heap, and map blocks from 128 KiB up on their own, whatever blocks were freed
/// before: glibc otherwise raises both bounds to the largest block freed (up to 32 MiB), and
/// a report's freed memory then stays in its resident set (5 MiB of `report -g`'s 37 MiB on a
/// g++ compile's recording). Other C libraries keep their own policy.
pub fn fixed_heap_thresholds() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's tunables; any value is accepted.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, 128 << 10);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-3,5").unwrap(), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("x").is_err());
    }

    #[test]
    fn attr_bytes_are_file_sized() {
        // SAFETY: an all-zero attr is a valid value of this POD type.
        let attr: perf_event_attr = unsafe { std::mem::zeroed() };
        let b = attr_bytes(&attr);
        assert_eq!(b.len(), FILE_ATTR_SIZE as usize);
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), FILE_ATTR_SIZE);
    }
}
