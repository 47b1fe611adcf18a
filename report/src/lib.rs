//! rperf's reporter: reads perf.data from rperf, Linux perf and simpleperf, unwinds and
//! symbolizes the samples and writes reports.
//!
//! The pipeline runs one way, a module each:
//! - `load` opens the file and checks its header and sections;
//! - `convert` turns records (in time order) into the process model (`model`) and samples
//!   with address stacks, unwinding user stacks (`rperf-unwind`) and resolving addresses to
//!   binaries (`resolve`, `jit`);
//! - `profile` holds the symbolized samples in event sections: the one owner of filters,
//!   off-CPU time weighting, event sections and `--max-stack`;
//! - `output` renders a profile in each format, and nothing else.
//!
//! Memory grows with distinct stacks, not with samples (per-sample rows are kept only for the
//! formats that show samples one by one; the report library's samples, with their frames'
//! run-time places, are written to a temporary file as they are counted: `sample_log`).
//!
//! ```no_run
//! let opts = rperf_report::ReportOptions { input: "perf.data".into(), ..Default::default() };
//! let profile = rperf_report::load(&opts).unwrap();
//! profile.write(&mut std::io::stdout(), &opts, None).unwrap();
//! ```
#![deny(missing_docs)]

mod annotate;
mod binary_symbols;
mod builder;
mod configs;
mod convert;
mod decode;
mod decoded;
mod dump;
mod error;
mod escape;
mod filter_file;
mod handoff;
mod java;
mod jit;
mod lists;
mod live;
mod load;
mod model;
mod options;
mod output;
mod profile;
mod progress;
mod proguard;
mod records;
mod resolve;
mod sample_log;
mod sort_key;
mod thread_pools;
mod unmatched;
mod warning;
mod windows;

pub use annotate::{annotate, AnnotateOptions, FunctionCode};
pub use binary_symbols::{binary_symbols, BinarySymbol};
pub use dump::dump;
pub use error::Error;
pub use filter_file::TimeRanges;
pub use lists::Lists;
pub use live::Live;
pub use load::{binaries, facts, Facts};
pub use model::{Dso, DsoKind, ExecType};
pub use options::{
    CallOrder, Debuginfod, Filters, Format, Needs, OffCpuMode, ReportOptions, SortKey, StackPrefix, TimeBound,
};
pub use output::{Table, TableRow};
pub use profile::{GroupValue, Offered, Place, Profile, Row, Section, Thread, Unit};
pub use proguard::ProguardMapping;
pub use resolve::NameStyle;
pub use sample_log::{LoggedSample, SampleReader};
pub use unmatched::{FilterOutcome, Miss};
pub use warning::Warning;

/// Reads a recording into a profile: load, convert, symbolize.
pub fn load(opts: &ReportOptions) -> Result<Profile, Error> {
    Ok(load_with(opts, opts.needs())?.0)
}

/// Reads a recording into a profile that keeps what `needs` says, whatever the format of
/// `opts`; with `Needs::places` (the report library), also every sample with its frames'
/// places, to be read one at a time.
pub fn load_with(opts: &ReportOptions, needs: Needs) -> Result<(Profile, Option<SampleReader>), Error> {
    let load = opts.load_config(needs);
    convert::convert_with(load::open(&load)?, &load, &opts.profile_config())
}

impl Profile {
    /// Writes the report in the format `opts` asks for; with `base` (the profile of
    /// `opts.diff_base`, loaded by the caller), a comparison against it.
    pub fn write(
        &self,
        out: &mut dyn std::io::Write,
        opts: &ReportOptions,
        base: Option<&Profile>,
    ) -> std::io::Result<()> {
        output::write(out, self, opts, base)
    }

    /// The first `n` rows of the text report's table, as cells (for a live display).
    pub fn table(&self, opts: &ReportOptions, n: usize) -> Table {
        output::table(self, &opts.text_config(), n)
    }
}
