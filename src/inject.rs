//! `rperf inject`: a recording's ETM instruction trace as AutoFDO's text input, as
//! `simpleperf inject` writes it (`rperf_etm::autofdo`).

use std::collections::HashMap;
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
    /// The recordings: `a.data,b.data,...`; `@FILE` names a file that lists recordings, one
    /// per line. Their counts add up.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: String,
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
    let keep = move |path: &str| keep.as_ref().is_none_or(|r| r.is_match(path));
    let mut profile = rperf_etm::autofdo::AutoFdo::default();
    let mut bases: HashMap<String, u64> = HashMap::new();
    let mut build_ids: HashMap<String, Vec<u8>> = HashMap::new();
    for input in inputs(&a.input)? {
        let mut binaries = binaries(&a, &input)?;
        let one = decode(&input, &mut binaries, &keep)?;
        for path in one.binaries.keys() {
            bases.entry(path.clone()).or_insert_with(|| binaries.first_load_vaddr(path));
            if let Some(id) = binaries.build_id(path) {
                build_ids.entry(path.clone()).or_insert_with(|| id.to_vec());
            }
        }
        profile.merge(one);
    }
    if profile.binaries.is_empty() {
        let matching =
            a.binary.as_ref().map(|r| format!(" and whose path matches --binary {}", r.escape_debug()));
        eprintln!(
            "rperf: no instruction ran in a binary that was found{}: pass the folders that hold \
             the recorded binaries with --symdir (a binary cache works)",
            matching.unwrap_or_default()
        );
    }
    let text = profile.text(|p| bases[p], |p| build_ids.get(p).cloned());
    let mut file = crate::output_file::OutputFile::create(&a.output)?;
    file.file().write_all(text.as_bytes()).with_context(|| format!("cannot write {}", a.output.display()))?;
    file.finish()?;
    Ok(0)
}

/// The recordings `-i` names: comma-separated, `@FILE` for a file listing them one per line.
fn inputs(arg: &str) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for item in arg.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.strip_prefix('@') {
            Some(list) => {
                let meta = std::fs::metadata(list).with_context(|| format!("-i @{list}"))?;
                if !meta.is_file() || meta.len() > 1 << 20 {
                    bail!("-i @{list}: a list of recordings is a file of at most 1 MiB");
                }
                let text = std::fs::read_to_string(list).with_context(|| format!("-i @{list}"))?;
                out.extend(text.lines().map(str::trim).filter(|l| !l.is_empty()).map(PathBuf::from));
            }
            None => out.push(PathBuf::from(item)),
        }
    }
    if out.is_empty() {
        bail!("-i names no recording");
    }
    Ok(out)
}

/// The binaries of `input`, found in the folders given.
fn binaries(a: &InjectArgs, input: &std::path::Path) -> anyhow::Result<rperf_etm::Binaries> {
    let build_ids = rperf_report::facts(input)?.build_ids;
    let mut finder = rperf_symbols::BinaryFinder::new(&a.symfs);
    finder.add_symdirs(&a.symdirs);
    Ok(rperf_etm::Binaries::new(finder, build_ids))
}

/// What `input`'s ETM trace ran, in the binaries `keep` accepts.
fn decode(
    input: &std::path::Path,
    binaries: &mut rperf_etm::Binaries,
    keep: &dyn Fn(&str) -> bool,
) -> anyhow::Result<rperf_etm::autofdo::AutoFdo> {
    let recording = rperf_etm::EtmRecording::open(input).map_err(anyhow::Error::msg)?;
    let Some(recording) = recording else {
        bail!(
            "{} holds no ETM trace: record one with `-e cs-etm` on an Arm device with CoreSight",
            input.display()
        );
    };
    let state = std::sync::Mutex::new(rperf_etm::State::default());
    let mut collector = rperf_etm::autofdo::Collector::new(binaries, Box::new(keep));
    let summary = rperf_etm::decode(&recording, &state, &mut collector).map_err(anyhow::Error::msg)?;
    if summary.resets > 0 {
        eprintln!(
            "rperf: {}: the decoder met trace it could not follow {} times and went on after it",
            input.display(),
            summary.resets
        );
    }
    if summary.missing > 0 {
        eprintln!(
            "rperf: {}: {} of {} AUX records point at trace the file lacks; that trace is left out",
            input.display(),
            summary.missing,
            summary.aux_records
        );
    }
    Ok(collector.finish())
}
