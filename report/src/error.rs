//! The errors that stop a report: each names the file, offset, option or event at fault and
//! says what to do. The CLI prints them (`src/exit.rs`).

use std::path::PathBuf;
use std::sync::Arc;

use rperf_perfdata::checked::FileError;

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
    /// The report library's sample log (a temporary file) could not be made.
    #[error("cannot make a temporary file for the samples in {}: {source}; set TMPDIR to a writable folder", std::env::temp_dir().display())]
    SampleLog {
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
    /// `--filter-file` gives times of another clock than the recording's.
    #[error("--filter-file: its times are of the {filter} clock, but the recording's timestamps are of the {recording} clock; take the times from this recording (rperf report --format json gives each sample's) and write `CLOCK {recording}` in the file")]
    FilterClock {
        /// The recording's clock.
        recording: String,
        /// The filter file's clock.
        filter: String,
    },
    /// `--proguard-mapping-file` names a file that is not a mapping.
    #[error("--proguard-mapping-file {}: {why}; give the mapping.txt R8 or ProGuard wrote for this build", path.display())]
    Proguard {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
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

/// Why the records stop being readable at a file offset.
#[derive(Debug, Clone)]
pub struct RecordError {
    /// Where the unreadable record starts.
    pub offset: u64,
    /// What is wrong there.
    pub problem: Problem,
}

/// What is wrong with a record (each message names the offset).
#[derive(Debug, Clone)]
pub enum Problem {
    /// The data section ends inside a record header.
    HeaderCut {
        /// Bytes left.
        left: u64,
    },
    /// A record header whose size cannot be (under 8 bytes).
    Size {
        /// The size it gives.
        size: u64,
    },
    /// A record reaching past the end of the data section.
    PastEnd {
        /// Its size.
        size: u64,
        /// Where the data section ends.
        end: u64,
    },
    /// A compressed record that does not inflate.
    Compressed {
        /// What is wrong with it.
        why: String,
    },
    /// The file could not be mapped there.
    Map(Arc<std::io::Error>),
}

impl RecordError {
    /// Why a walk over a data section that ends at `end` stopped.
    pub fn stopped(stop: rperf_perfdata::walk::Stop<RecordError>, end: u64) -> RecordError {
        use rperf_perfdata::walk::Stop;
        let (offset, problem) = match stop {
            Stop::HeaderCut { at, left } => (at, Problem::HeaderCut { left }),
            Stop::TooSmall { at, size } => (at, Problem::Size { size }),
            Stop::PastEnd { at, size } => (at, Problem::PastEnd { size, end }),
            Stop::Unreadable { error, .. } => return error,
        };
        RecordError { offset, problem }
    }
}

impl std::error::Error for RecordError {}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.offset;
        match &self.problem {
            Problem::HeaderCut { left } => {
                write!(f, "the data section ends inside the record header at file offset {at} ({left} bytes left)")
            }
            Problem::Size { size } => write!(f, "the record header at file offset {at} has size {size}"),
            Problem::PastEnd { size, end } => write!(
                f,
                "the record at file offset {at} ({size} bytes) reaches past the end of the data section at {end}"
            ),
            Problem::Compressed { why } => write!(f, "the compressed record at file offset {at} {why}"),
            Problem::Map(e) => write!(f, "cannot map the file at offset {at}: {e}"),
        }
    }
}
