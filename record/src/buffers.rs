//! The ring buffers of a recording: one per CPU for samples and one for side-band records,
//! sized to fit the locked-memory budget.

use std::os::fd::RawFd;

use crate::ring::RingBuffer;
use crate::sys;
use crate::Error;

/// Ring-buffer pages per CPU for side-band records. System-wide, every process of the machine
/// writes its mmap, comm, fork and exit records there: where processes come and go fast, a
/// ring four times larger woke the recording four times less often (`scripts/bench_idle.py
/// --load`: 2.9 ms/s of CPU against 4.4 with 64 pages).
pub(crate) const SIDEBAND_PAGES: usize = 64;
pub(crate) const SIDEBAND_PAGES_SYSTEM_WIDE: usize = 256;

pub(crate) struct CpuBuffer {
    pub(crate) cpu: u32,
    pub(crate) fd: RawFd,
    pub(crate) ring: RingBuffer,
}

/// Sizes the sample and side-band ring buffers (data pages per CPU) to fit the locked-memory
/// budget of an unprivileged user: kernel.perf_event_mlock_kb per online CPU plus RLIMIT_MEMLOCK,
/// where each ring also costs its metadata page. Root is not limited.
pub(crate) fn fit_mlock_budget(wanted: usize, rings: usize, side_wanted: usize) -> (usize, usize) {
    let side = |p: usize| side_wanted.min((p / 4).max(1));
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 || rings == 0 {
        return (wanted, side_wanted);
    }
    let page_kb = (sys::page_size() / 1024).max(1) as u64;
    let mlock_kb: u64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_mlock_kb")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(516);
    // SAFETY: getrlimit fills a local struct.
    let mut rl: libc::rlimit = unsafe { std::mem::zeroed() };
    unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) };
    if rl.rlim_cur == libc::RLIM_INFINITY {
        return (wanted, side_wanted);
    }
    let budget_kb = mlock_kb * sys::online_cpus().len() as u64 + rl.rlim_cur / 1024;
    let per_ring = (budget_kb / page_kb / rings as u64) as usize;
    let mut pages = wanted;
    while pages > 1 && pages + 1 + side(pages) + 1 > per_ring {
        pages /= 2;
    }
    (pages, side(pages))
}

/// Maps a ring buffer of `pages` data pages, halving the size while the locked-memory limit
/// refuses it. Returns the ring and the pages it got.
pub(crate) fn map_halving(fd: RawFd, mut pages: usize) -> Result<(RingBuffer, usize), Error> {
    loop {
        match RingBuffer::map(fd, pages) {
            Ok(r) => return Ok((r, pages)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM) | Some(libc::ENOMEM)) && pages > 1 => {
                pages /= 2;
            }
            Err(e) => {
                let mlock_kb = std::fs::read_to_string("/proc/sys/kernel/perf_event_mlock_kb")
                    .map_or("?".into(), |s| s.trim().to_string());
                return Err(Error::Mmap {
                    pages,
                    source: e,
                    remedy: format!(
                        "the locked-memory budget for ring buffers is used up \
                         (kernel.perf_event_mlock_kb={mlock_kb} per CPU, plus `ulimit -l`); raise \
                         `sysctl kernel.perf_event_mlock_kb`, raise `ulimit -l`, run as root, or record \
                         fewer CPUs (--cpu) or threads"
                    ),
                });
            }
        }
    }
}
