//! The errors that stop a report.

/// Errors that stop a report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Options that do not fit the recording.
    #[error("{0}")]
    Usage(String),
    /// The file is not a readable perf.data file.
    #[error("{path} is not a readable perf.data file: {reason}; check that it is a recording and was written completely (rperf dump -i FILE shows what is readable)")]
    Format {
        /// The file.
        path: std::path::PathBuf,
        /// What the reader found.
        reason: String,
    },
}
