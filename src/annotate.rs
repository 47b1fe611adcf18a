//! `rperf annotate`: command-line options to `rperf_report::AnnotateOptions`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use rperf_report::{AnnotateOptions, Filters, ReportOptions};

/// Show where inside the hottest functions the samples fall: per source line and per
/// instruction, with self and total shares (as perf annotate).
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  rperf annotate\n  rperf annotate --symbols hot_loop --source-dir ~/src/app\n  \
    rperf annotate -i app.data --symfs binary_cache --dsos libgame.so --format html -o annotate.html"
)]
pub struct AnnotateArgs {
    /// The recording.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Write here instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Only these functions (`;`-separated, with or without C++ parameters).
    #[arg(long = "symbols")]
    symbols: Option<String>,
    /// Only samples in these binaries (path or file name, `;`-separated).
    #[arg(long = "dsos")]
    dsos: Option<String>,
    /// How many of the hottest functions (without --symbols).
    #[arg(long = "functions", value_name = "N", default_value_t = 5)]
    functions: usize,
    /// Look source files up here when their recorded paths do not exist (build paths of
    /// another machine); may be repeated.
    #[arg(long = "source-dir", value_name = "DIR")]
    source_dirs: Vec<PathBuf>,
    /// Look binaries up here first (may be repeated: the folders are searched in order).
    #[arg(long = "symfs", value_name = "DIR", action = clap::ArgAction::Append)]
    symfs: Vec<PathBuf>,
    /// Look binaries up by build id anywhere under DIR, searched recursively (an NDK build's
    /// obj folder, a folder of unstripped libraries); may be repeated.
    #[arg(long = "symdir", value_name = "DIR", action = clap::ArgAction::Append)]
    symdirs: Vec<PathBuf>,
    #[command(flatten)]
    debuginfod: crate::debuginfod_args::DebuginfodArgs,
    /// Only this event.
    #[arg(short = 'e', long = "event")]
    event: Option<String>,
    /// Only samples in START,END (as rperf report --time).
    #[arg(long = "time", value_name = "START,END")]
    time: Option<String>,
    /// text (default) or html.
    #[arg(long = "format", default_value = "text")]
    format: String,
}

/// Runs `rperf annotate`.
pub fn run(a: AnnotateArgs) -> anyhow::Result<i32> {
    let html = match a.format.as_str() {
        "text" => false,
        "html" => true,
        f => bail!("--format {f}: use text or html"),
    };
    let split = |s: &Option<String>| -> Vec<String> {
        s.as_deref()
            .map(|s| s.split(';').filter(|x| !x.is_empty()).map(String::from).collect())
            .unwrap_or_default()
    };
    let time = a.time.as_deref().map(crate::target_args::parse_time_window).transpose()?;
    let report = ReportOptions {
        input: a.input.clone(),
        symfs: a.symfs.clone(),
        symdirs: crate::target_args::folders(&a.symdirs, "--symdir")?,
        debuginfod: a.debuginfod.choice()?,
        source_dirs: a.source_dirs.clone(),
        event: a.event.clone(),
        filters: Filters { dsos: split(&a.dsos), time, ..Default::default() },
        ..Default::default()
    };
    let opts = AnnotateOptions { report, functions: a.functions, symbols: split(&a.symbols), html };
    // The annotation counts call sites too: it needs every sample's callers.
    let needs = rperf_report::Needs { callers: true, ..opts.report.needs() };
    let (profile, _) = rperf_report::load_with(&opts.report, needs)?;
    crate::exit::warnings(&profile.warnings, None);
    match &a.output {
        Some(p) => {
            let mut file = crate::output_file::OutputFile::create(p)?;
            let mut out = std::io::BufWriter::new(file.file());
            rperf_report::annotate(&profile, &opts, &mut out)?;
            out.flush().with_context(|| format!("cannot write {}", p.display()))?;
            drop(out);
            file.finish()?;
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            rperf_report::annotate(&profile, &opts, &mut out)?;
            out.flush()?;
        }
    }
    crate::exit::late_symbol_notes();
    Ok(0)
}
