//! The errors that stop a report: each names the file, offset, option or event at fault and
//! says what to do. The CLI prints them (`src/exit.rs`).

use std::path::PathBuf;

use rperf_perfdata::checked::FileError;

use crate::records::RecordError;

/// Errors that stop a report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A folder was given where a recording was expected.
    #[error("{} is a directory, not a recording; give the perf.data file inside it with -i", path.display())]
    Directory {
        /// The folder.
        path: PathBuf,
    },
    /// The file is not a readable perf.data file.
    #[error("{} is not a readable perf.data file: {reason}; check that it is a recording and was written completely (rperf dump -i FILE shows what is readable)", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What the reader found, and where.
        reason: Unreadable,
    },
    /// `--event` names an event the recording does not have.
    #[error("--event {event}: the recording has no such event; it has {}", events.join(", "))]
    NoSuchEvent {
        /// The event asked for.
        event: String,
        /// The recording's events.
        events: Vec<String>,
    },
    /// `--trace-offcpu` on a recording not made for it.
    #[error(
        "--trace-offcpu needs a recording made for it: record it with `rperf record --trace-offcpu` (or simpleperf's --trace-offcpu)"
    )]
    NotOffCpu,
    /// An off-CPU recording without the events off-CPU time is weighed by.
    #[error("this off-CPU recording lacks its sched:sched_switch or cpu-clock event")]
    OffCpuEvents,
    /// `--kallsyms` names a file that is not one to read.
    #[error("--kallsyms {}: the file {why}; give a copy of /proc/kallsyms", path.display())]
    Kallsyms {
        /// The file.
        path: PathBuf,
        /// Why it is not read.
        why: String,
    },
}

/// Why a file is not a readable recording.
#[derive(Debug, thiserror::Error)]
pub enum Unreadable {
    /// Its header (offsets and sizes checked against the file).
    #[error(transparent)]
    Header(#[from] FileError),
    /// Its metadata, as the metadata reader found it.
    #[error("{0}")]
    Metadata(String),
    /// Its first record.
    #[error(transparent)]
    Records(#[from] RecordError),
}
