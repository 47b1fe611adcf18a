//! Counting mode (`rperf stat`): counters opened for a target and read, without sampling.

use std::os::fd::{AsRawFd, OwnedFd};

use crate::error::open_remedy;
use crate::event::EventSpec;
use crate::launch::Launched;
use crate::sys::{self, perf_event_attr};
use crate::target::{self, Target};
use crate::{procfs, Error};

const FORMAT_TOTAL_TIME_ENABLED: u64 = 1;
const FORMAT_TOTAL_TIME_RUNNING: u64 = 2;

/// What to count and where.
#[derive(Clone, Debug)]
pub struct CountOptions {
    /// The target.
    pub target: Target,
    /// Event groups; each inner list is scheduled together (a single event is a group of one).
    pub groups: Vec<Vec<EventSpec>>,
    /// CPUs; None means per task on any CPU (all online CPUs for system-wide counting).
    pub cpus: Option<Vec<u32>>,
    /// Count new threads and children too.
    pub inherit: bool,
    /// One counter per thread (for -p/-t breakdowns) instead of one per process.
    pub per_thread: bool,
}

/// One counter value with its scheduling times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reading {
    /// Raw count.
    pub value: u64,
    /// Nanoseconds the counter was enabled.
    pub enabled: u64,
    /// Nanoseconds it was actually counting (less than enabled when multiplexed).
    pub running: u64,
}

impl Reading {
    /// The count scaled for multiplexing; None when it never ran.
    pub fn scaled(&self) -> Option<f64> {
        if self.running == 0 {
            return None;
        }
        Some(self.value as f64 * self.enabled as f64 / self.running as f64)
    }

    /// Adds another reading (sums of counters of one event).
    pub fn add(&mut self, o: &Reading) {
        self.value += o.value;
        self.enabled += o.enabled;
        self.running += o.running;
    }

    /// The difference since an earlier reading of the same counter.
    pub fn since(&self, earlier: &Reading) -> Reading {
        Reading {
            value: self.value.saturating_sub(earlier.value),
            enabled: self.enabled.saturating_sub(earlier.enabled),
            running: self.running.saturating_sub(earlier.running),
        }
    }
}

/// One opened counter.
pub struct CounterFd {
    /// Index into `Counters::events`.
    pub event: usize,
    /// Thread (or -1 for every thread on a CPU).
    pub tid: i32,
    /// CPU (or -1 for any).
    pub cpu: i32,
    fd: OwnedFd,
}

/// An event being counted.
#[derive(Clone, Debug)]
pub struct CountedEvent {
    /// The event.
    pub spec: EventSpec,
    /// False when this machine cannot count it (`<not supported>`).
    pub supported: bool,
    /// Why not, when not supported.
    pub reason: Option<String>,
}

/// Open counters for a target.
pub struct Counters {
    /// Events, in the order given.
    pub events: Vec<CountedEvent>,
    /// Their counters.
    pub fds: Vec<CounterFd>,
    /// The launched command, if any.
    pub child: Option<Launched>,
    /// What the user should know of how counting was set up (user space only, ...).
    pub notes: Vec<String>,
    enable_on_start: bool,
}

fn base_attr(spec: &EventSpec, inherit: bool, enable_on_exec: bool) -> perf_event_attr {
    // SAFETY: all-zero is a valid perf_event_attr; the fields counting needs are set below.
    let mut a: perf_event_attr = unsafe { std::mem::zeroed() };
    a.type_ = spec.type_;
    a.size = std::mem::size_of::<perf_event_attr>() as u32;
    a.config = spec.config;
    a.read_format = FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING;
    a.set_disabled(1);
    a.set_inherit(u64::from(inherit));
    a.set_enable_on_exec(u64::from(enable_on_exec));
    a.set_exclude_kernel(u64::from(spec.exclude_kernel));
    a.set_exclude_user(u64::from(spec.exclude_user));
    a.set_exclude_hv(1);
    a
}

fn unsupported(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) | Some(libc::EINVAL)
    )
}

/// The (task, cpu) pairs to open each event on, and whether counters are inherited by new
/// threads.
fn places(opts: &CountOptions, child: Option<&Launched>) -> Result<(Vec<(i32, i32)>, bool), Error> {
    let mut places: Vec<(i32, i32)> = Vec::new();
    let cpus: Vec<i32> = match &opts.cpus {
        Some(list) => list.iter().map(|c| *c as i32).collect(),
        None => vec![-1],
    };
    let mut on_threads = |tids: Vec<i32>| {
        for tid in tids {
            places.extend(cpus.iter().map(|&c| (tid, c)));
        }
    };
    let mut inherit = opts.inherit;
    match &opts.target {
        Target::Command(_) => on_threads(vec![child.expect("launched").pid]),
        Target::Processes(pids) => {
            // Without --per-thread, one counter on each thread: later threads inherit the
            // leader's. With it, nothing is inherited.
            inherit &= !opts.per_thread;
            for &pid in pids {
                on_threads(procfs::threads_of(pid));
            }
        }
        Target::Threads(tids) => {
            inherit = false;
            on_threads(tids.clone());
        }
        Target::SystemWide => {
            let all: Vec<i32> = match &opts.cpus {
                Some(l) => l.iter().map(|c| *c as i32).collect(),
                None => sys::online_cpus().into_iter().map(|c| c as i32).collect(),
            };
            inherit = false;
            places.extend(all.into_iter().map(|c| (-1, c)));
        }
        Target::App(name) => {
            let pids = target::app_processes(name);
            if pids.is_empty() {
                return Err(Error::NoTarget(format!(
                    "no running process of app '{name}'; start it first, or use `rperf stat -- CMD`"
                )));
            }
            for pid in pids {
                on_threads(procfs::threads_of(pid));
            }
        }
    }
    Ok((places, inherit))
}

/// Whether the kernel refused for want of permission.
fn denied(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EACCES) | Some(libc::EPERM))
}

/// Opens one counter on (task, cpu). Where counting the kernel is not allowed, counts user
/// space only, as perf does; the first time, `user_only` gets the note that says so.
fn open_counter(
    spec: &EventSpec,
    attr: &mut perf_event_attr,
    (tid, cpu): (i32, i32),
    group_fd: i32,
    user_only: &mut Option<String>,
) -> std::io::Result<OwnedFd> {
    let modified = spec.exclude_kernel || spec.exclude_user;
    if user_only.is_some() && !modified {
        attr.set_exclude_kernel(1);
        attr.set_exclude_hv(1);
    }
    let opened = sys::perf_event_open(attr, tid, cpu, group_fd);
    let Err(e) = &opened else { return opened };
    let foreign = crate::error::foreign_owner(tid).is_some();
    if !(denied(e) && tid != -1 && !modified && attr.exclude_kernel() == 0 && !foreign) {
        return opened;
    }
    attr.set_exclude_kernel(1);
    attr.set_exclude_hv(1);
    let opened = sys::perf_event_open(attr, tid, cpu, group_fd);
    if opened.is_ok() && user_only.is_none() {
        *user_only = Some(format!(
            "not allowed to count the kernel (perf_event_paranoid={}); counting user space \
             only; run as root (or with CAP_PERFMON) or set `sysctl \
             kernel.perf_event_paranoid=1` to count the kernel too",
            crate::error::paranoid_level().map_or("?".into(), |l| l.to_string())
        ));
    }
    opened
}

/// The error of a counter the kernel refused, with what to do about it.
fn open_error(spec: &EventSpec, attr: &perf_event_attr, (tid, cpu): (i32, i32), e: std::io::Error) -> Error {
    let modified = spec.exclude_kernel || spec.exclude_user;
    Error::Open {
        event: spec.display_name(),
        target: if tid == -1 { format!("cpu {cpu}") } else { format!("tid {tid}") },
        remedy: if attr.exclude_kernel() != 0 && !modified && denied(&e) {
            // User space alone was refused too: not a kernel-sample matter.
            format!(
                "counting even user space only was refused (perf_event_paranoid is {}); \
                 set it to 2 or lower, or run as root or with CAP_PERFMON \
                 (a container may refuse perf_event_open altogether)",
                crate::error::paranoid_level().map_or("?".into(), |l| l.to_string())
            )
        } else {
            open_remedy(&e, spec.is_hardware(), tid == -1, tid)
        },
        source: e,
    }
}

impl Counters {
    /// Opens every event for the target. Events the machine cannot count are kept and marked
    /// unsupported; other failures (permissions, no such process) are errors.
    pub fn open(opts: &CountOptions) -> Result<Counters, Error> {
        let child = match &opts.target {
            Target::Command(argv) => Some(Launched::prepare(argv)?),
            _ => None,
        };
        let enable_on_exec = child.is_some();
        let (places, inherit) = places(opts, child.as_ref())?;
        let mut events = Vec::new();
        let mut fds = Vec::new();
        // Without the right to count the kernel (perf_event_paranoid 2), count user space, as
        // perf does; said once.
        let mut user_only = None;
        for group in &opts.groups {
            let first = events.len();
            for spec in group {
                events.push(CountedEvent { spec: spec.clone(), supported: true, reason: None });
            }
            for &(tid, cpu) in &places {
                let mut leader: Option<i32> = None;
                for (gi, spec) in group.iter().enumerate() {
                    let ei = first + gi;
                    if !events[ei].supported {
                        continue;
                    }
                    let mut attr = base_attr(spec, inherit && group.len() == 1, enable_on_exec);
                    if group.len() > 1 && leader.is_none() {
                        // A group leader starts the whole group.
                        attr.set_disabled(1);
                    } else if group.len() > 1 {
                        attr.set_disabled(0);
                        attr.set_enable_on_exec(0);
                    }
                    match open_counter(spec, &mut attr, (tid, cpu), leader.unwrap_or(-1), &mut user_only) {
                        Ok(fd) => {
                            if group.len() > 1 && leader.is_none() {
                                leader = Some(fd.as_raw_fd());
                            }
                            fds.push(CounterFd { event: ei, tid, cpu, fd });
                        }
                        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => break,
                        Err(e) if unsupported(&e) => {
                            events[ei].supported = false;
                            events[ei].reason = Some(e.to_string());
                        }
                        Err(e) => return Err(open_error(spec, &attr, (tid, cpu), e)),
                    }
                }
            }
        }
        let notes = user_only.into_iter().collect();
        Ok(Counters { events, fds, child, notes, enable_on_start: !enable_on_exec })
    }

    /// Starts counting: lets the launched command exec (its counters start there), or enables
    /// the counters of running targets.
    pub fn start(&mut self) -> Result<(), Error> {
        if self.enable_on_start {
            for f in &self.fds {
                sys::ioc_enable(f.fd.as_raw_fd()).ok();
            }
        }
        if let Some(c) = self.child.as_mut() {
            c.start()?;
        }
        Ok(())
    }

    /// Reads every counter.
    pub fn read(&self) -> Vec<Reading> {
        self.fds
            .iter()
            .map(|f| {
                let mut buf = [0u64; 3];
                // SAFETY: reading at most 24 bytes into a local array of 3 u64.
                let n = unsafe { libc::read(f.fd.as_raw_fd(), buf.as_mut_ptr() as *mut libc::c_void, 24) };
                if n == 24 {
                    Reading { value: buf[0], enabled: buf[1], running: buf[2] }
                } else {
                    Reading::default()
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_event;

    #[test]
    fn scaling_for_multiplexing() {
        let r = Reading { value: 100, enabled: 200, running: 100 };
        assert_eq!(r.scaled(), Some(200.0));
        assert_eq!(Reading { value: 5, enabled: 10, running: 0 }.scaled(), None);
    }

    #[test]
    fn counts_own_task_clock() {
        let opts = CountOptions {
            target: Target::Threads(vec![unsafe { libc::gettid() }]),
            groups: vec![vec![parse_event("task-clock").unwrap()]],
            cpus: None,
            inherit: false,
            per_thread: false,
        };
        let mut c = Counters::open(&opts).unwrap();
        c.start().unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let r = c.read();
        assert!(r[0].value > 0 && r[0].running > 0, "{r:?}");
    }
}
