//! The ring buffers of a recording: one per CPU for samples and one for side-band records,
//! sized to fit the locked-memory budget.

use std::os::fd::RawFd;

use crate::ring::RingBuffer;
use crate::sys;
use crate::Error;

/// Ring-buffer pages per CPU for side-band records of a command's or some processes' recording.
pub(crate) const SIDEBAND_PAGES: usize = 64;

/// Ring-buffer pages per CPU for side-band records of a system-wide recording: every process of
/// the machine writes its mmap, comm, fork and exit records there, and where processes come and
/// go fast, the rings' wake-ups are most of what recording costs. 2 MiB per CPU (perf's 516 KiB
/// rings, half full, wake it four times as often), and at most 64 MiB in all on a machine of
/// many CPUs, at least 256 KiB each. `scripts/bench_idle.py --load` measured the sizes.
pub(crate) fn sideband_pages_system_wide(cpus: usize) -> usize {
    let page = sys::page_size();
    let pages = ((64 << 20) / cpus.max(1) / page).clamp((256 << 10) / page, (2 << 20) / page).max(1);
    // The largest power of two not above it.
    1 << (usize::BITS - 1 - pages.leading_zeros())
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_wide_side_band_rings_shrink_on_many_cpus_to_a_floor() {
        let kib = |cpus| sideband_pages_system_wide(cpus) * sys::page_size() / 1024;
        assert_eq!(kib(2), 2048);
        assert_eq!(kib(32), 2048);
        assert_eq!(kib(48), 1024, "a power of two under 64 MiB in all");
        assert_eq!(kib(128), 512);
        assert_eq!(kib(4096), 256);
        assert!(sideband_pages_system_wide(0).is_power_of_two());
    }
}
