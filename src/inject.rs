//! `rperf inject`: a recording's ETM instruction trace as AutoFDO's text input, as
//! `simpleperf inject` writes it (`rperf_etm::autofdo`).

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;

/// Decode the ETM instruction trace of a recording (`-e cs-etm`) into AutoFDO's text input:
/// per binary, how often each address range ran and each branch was taken (as simpleperf
/// inject).
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  rperf inject -i perf.data --symdir binary_cache -o autofdo.txt")]
pub struct InjectArgs {
    /// The recording.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Write here.
    #[arg(short = 'o', default_value = "perf_inject.data")]
    output: PathBuf,
    /// The output's format: `autofdo` (the only one rperf writes).
    #[arg(long = "output", value_name = "FORMAT", default_value = "autofdo")]
    format: String,
    /// Find binaries under DIR (recursively, by build id), as simpleperf's --symdir (may be
    /// repeated). The trace can only be decoded where the code it ran is found.
    #[arg(long = "symdir", value_name = "DIR")]
    symdirs: Vec<PathBuf>,
    /// Find binaries by their recorded paths under DIR (may be repeated).
    #[arg(long = "symfs", value_name = "DIR")]
    symfs: Vec<PathBuf>,
    /// Only binaries whose path matches this regular expression.
    #[arg(long = "binary", value_name = "REGEX")]
    binary: Option<String>,
}

pub fn run(a: InjectArgs) -> anyhow::Result<i32> {
    if a.format != "autofdo" {
        bail!("--output {}: rperf writes the `autofdo` text format only", a.format.escape_debug());
    }
    let keep = match &a.binary {
        Some(r) => Some(regex::Regex::new(r).with_context(|| format!("--binary {}", r.escape_debug()))?),
        None => None,
    };
    let input = &a.input;
    let recording = rperf_etm::EtmRecording::open(input).map_err(anyhow::Error::msg)?;
    let Some(recording) = recording else {
        bail!(
            "{} holds no ETM trace: record one with `-e cs-etm` on an Arm device with CoreSight",
            input.display()
        );
    };
    let build_ids = rperf_report::facts(input)?.build_ids;
    let mut finder = rperf_symbols::BinaryFinder::new(&a.symfs);
    finder.add_symdirs(&a.symdirs);
    let mut binaries = rperf_etm::Binaries::new(finder, build_ids);
    let state = std::sync::Mutex::new(rperf_etm::State::default());
    let keep = Box::new(move |path: &str| keep.as_ref().is_none_or(|r| r.is_match(path)));
    let mut collector = rperf_etm::autofdo::Collector::new(&mut binaries, keep);
    let summary = rperf_etm::decode(&recording, &state, &mut collector).map_err(anyhow::Error::msg)?;
    let profile = collector.finish();
    if summary.missing > 0 {
        eprintln!(
            "rperf: {} of {} AUX records point at trace the file lacks; that trace is left out",
            summary.missing, summary.aux_records
        );
    }
    if profile.binaries.is_empty() {
        eprintln!(
            "rperf: no instruction ran in a binary that was found: pass the folders that hold the \
             recorded binaries with --symdir (a binary cache works)"
        );
    }
    let bases: std::collections::HashMap<String, u64> =
        profile.binaries.keys().map(|p| (p.clone(), binaries.first_load_vaddr(p))).collect();
    let text = profile.text(|p| bases[p], |p| binaries.build_id(p).map(<[u8]>::to_vec));
    let mut file = crate::output_file::OutputFile::create(&a.output)?;
    file.file().write_all(text.as_bytes()).with_context(|| format!("cannot write {}", a.output.display()))?;
    file.finish()?;
    Ok(0)
}
