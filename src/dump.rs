//! `rperf dump`: a recording's header, features and records, decoded.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

/// Print every header field, feature section and record of a recording, decoded.
#[derive(Args, Debug)]
pub struct DumpArgs {
    /// The recording.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
}

/// Runs `rperf dump`.
pub fn run(a: DumpArgs) -> anyhow::Result<i32> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    rperf_report::dump(&a.input, &mut out)?;
    out.flush()?;
    Ok(0)
}
