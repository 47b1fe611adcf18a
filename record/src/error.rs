//! Errors of the recorder, each naming what failed and what to do about it.

use std::path::PathBuf;

/// Everything that can stop `rperf record` (or the counting code that shares it).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An event name that cannot be used.
    #[error("event '{name}': {reason}; {remedy}")]
    Event {
        /// The name as given.
        name: String,
        /// What is wrong.
        reason: String,
        /// What the user can do.
        remedy: String,
    },
    /// perf_event_open refused an event.
    #[error("cannot open event '{event}' for {target}: {source}; {remedy}")]
    Open {
        /// The event's printed name.
        event: String,
        /// e.g. `pid 42 on cpu 1`.
        target: String,
        /// The kernel's answer.
        source: std::io::Error,
        /// What the user can do.
        remedy: String,
    },
    /// No process or thread matched a target.
    #[error("{0}")]
    NoTarget(String),
    /// A file could not be read or written.
    #[error("{path}: {source}{remedy}")]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
        /// Extra advice (may be empty).
        remedy: String,
    },
    /// Mapping a ring buffer failed.
    #[error("cannot map a {pages}-page ring buffer: {source}; {remedy}")]
    Mmap {
        /// Data pages asked for.
        pages: usize,
        /// The kernel's answer.
        source: std::io::Error,
        /// What the user can do.
        remedy: String,
    },
    /// The command to profile could not be started.
    #[error("cannot run '{command}': {source}")]
    Spawn {
        /// argv[0].
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// Options that do not fit together.
    #[error("{0}")]
    Usage(String),
}

impl Error {
    /// Builds a file error with advice for the common causes (read-only, disk full).
    pub fn file(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        let remedy = match source.raw_os_error() {
            Some(libc::ENOSPC) => "; the disk is full: free space or pass -o on another filesystem",
            Some(libc::EACCES) | Some(libc::EROFS) | Some(libc::EPERM) => {
                "; choose a writable place with -o FILE"
            }
            _ => "",
        };
        Error::File { path: path.into(), source, remedy: remedy.to_string() }
    }
}

/// The value of kernel.perf_event_paranoid.
pub fn paranoid_level() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").ok()?.trim().parse().ok()
}

/// The owner of task `tid` when it is another user's and rperf is not root: perf_event_open
/// refuses it whatever perf_event_paranoid says.
pub(crate) fn foreign_owner(tid: i32) -> Option<u32> {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let owner = (tid > 0 && me != 0).then(|| crate::procfs::uid_of(tid)).flatten()?;
    (owner != me).then_some(owner)
}

/// Explains a perf_event_open failure on task `tid` (-1 for a CPU) in terms a user can act on.
pub fn open_remedy(err: &std::io::Error, hardware: bool, system_wide: bool, tid: i32) -> String {
    let paranoid = paranoid_level().map_or("?".into(), |l| l.to_string());
    let foreign = foreign_owner(tid);
    match err.raw_os_error() {
        // Another user's process is off limits whatever perf_event_paranoid says.
        Some(libc::EACCES) | Some(libc::EPERM) if foreign.is_some() => format!(
            "{tid} belongs to uid {} and rperf runs as uid {}: profiling another user's process \
             needs root, CAP_PERFMON (with CAP_SYS_PTRACE), or running rperf as that user",
            foreign.unwrap_or_default(),
            // SAFETY: geteuid has no preconditions.
            unsafe { libc::geteuid() }
        ),
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_paranoid is {paranoid}; {} needs it at {} or lower \
             (`sysctl kernel.perf_event_paranoid={}`), or run as root or with CAP_PERFMON",
            if system_wide { "system-wide profiling" } else { "profiling with kernel samples" },
            if system_wide { 0 } else { 1 },
            if system_wide { 0 } else { 1 },
        ),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) if hardware => {
            "this machine has no PMU support for it (e.g. a VM): use a software event such as \
             -e cpu-clock"
                .into()
        }
        Some(libc::ESRCH) => "the process or thread has exited".into(),
        Some(libc::EMFILE) => "too many open files: raise `ulimit -n`".into(),
        Some(libc::EINVAL) => {
            "the kernel rejected these settings; try a lower -F, a smaller DWARF stack size, or \
             another event"
                .into()
        }
        _ => "see `rperf list` for the events this machine supports".into(),
    }
}
