//! rperf's reporter: reads perf.data from rperf, Linux perf and simpleperf, unwinds and
//! symbolizes the samples, aggregates them and writes reports.
//!
//! The pipeline runs one way: records (in time order) → process model → unwound stacks →
//! functions → aggregate → output. Aggregation is streaming: memory grows with distinct stacks,
//! not with samples.
//!
//! ```no_run
//! let opts = rperf_report::ReportOptions { input: "perf.data".into(), ..Default::default() };
//! let profile = rperf_report::load(&opts).unwrap();
//! profile.write_text(&mut std::io::stdout(), &opts).unwrap();
//! ```
#![deny(missing_docs)]

mod aggregate;
mod dump;
mod flame;
mod gecko;
mod html;
mod input;
mod json;
mod model;
mod options;
mod pprof;
mod progress;
mod resolve;
mod run;
mod text;

pub use dump::dump;
pub use options::{CallOrder, Filters, Format, OffCpuMode, ReportOptions, SortKey, StackPrefix};
pub use run::{load, Profile};

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
    #[error("{path} is not a readable perf.data file: {reason}; check that it was written completely (rperf dump -i FILE shows what is readable)")]
    Format {
        /// The file.
        path: std::path::PathBuf,
        /// What the reader found.
        reason: String,
    },
}
