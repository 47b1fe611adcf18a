//! Bringing files back from the device: recordings (to a new 0600 file, never through a
//! link) and the binaries a recording names (into a binary cache, simpleperf's layout).

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;

use super::adb::{Adb, DeviceArgs};

/// Pull every binary a recording names with a build id from the device into a binary cache
/// (simpleperf's layout: the device's paths under the cache, and a build_id_list). Binaries
/// already cached with the same build id are skipped.
#[derive(Args, Debug)]
pub struct PullArgs {
    /// The recording.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// The binary cache.
    #[arg(short = 'o', long = "output", default_value = "binary_cache")]
    output: PathBuf,
    /// Build folders holding unstripped copies of the binaries, taken instead of the device's
    /// when their build ids match (`-lib DIR` works too; may be repeated).
    #[arg(long = "lib", value_name = "DIR", action = clap::ArgAction::Append)]
    lib: Vec<PathBuf>,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Where a recording and its binaries land on this machine: the options of `record` and `stop`.
#[derive(Args, Debug)]
pub struct Landing {
    /// The recording on this machine.
    #[arg(short = 'o', long = "output", default_value = "perf.data")]
    pub output: PathBuf,
    /// Where binaries are pulled to.
    #[arg(long = "binary-cache", default_value = "binary_cache")]
    pub binary_cache: PathBuf,
    /// Build folders holding unstripped copies of the app's libraries: a binary whose build id
    /// matches a file under DIR (searched recursively) is taken from there instead of the
    /// device (`-lib DIR` works too; may be repeated).
    #[arg(long = "lib", value_name = "DIR", action = clap::ArgAction::Append)]
    pub lib: Vec<PathBuf>,
}

impl Landing {
    /// Pulls the recording at `device_path` and the binaries it names, then says how to report.
    pub fn pull(&self, adb: &Adb, device_path: &str) -> anyhow::Result<()> {
        pull_recording(adb, device_path, &self.output)?;
        pull_binaries(adb, &self.output, &self.binary_cache, &self.lib)?;
        eprintln!(
            "rperf: report with `rperf report -i {} --symfs {}`",
            self.output.display(),
            self.binary_cache.display()
        );
        Ok(())
    }
}

/// Runs `rperf android pull-binaries`.
pub fn run(p: PullArgs) -> anyhow::Result<i32> {
    let adb = Adb::connect(&p.device)?;
    pull_binaries(&adb, &p.input, &p.output, &p.lib)?;
    Ok(0)
}

/// Pulls the recording at `device_path` to `output`: into a folder only this user can reach,
/// then given the output's name as `rperf record` gives it (a new 0600 file, never written
/// through a link).
pub fn pull_recording(adb: &Adb, device_path: &str, output: &Path) -> anyhow::Result<()> {
    let landing = private_folder()?;
    let got = landing.path.join("perf.data");
    adb.pull(device_path, &got)?;
    let mut out = crate::output_file::OutputFile::recording(output)?;
    let copied = std::fs::File::open(&got).and_then(|mut from| std::io::copy(&mut from, out.file()));
    if let Err(e) = copied {
        bail!("cannot write {}: {e}", output.display());
    }
    out.finish()?;
    eprintln!("rperf: pulled {}", output.display());
    Ok(())
}

/// Pulls the binaries `data` names into `cache`; returns how many were pulled. Each is pulled
/// into a private folder of its own first, then copied into the cache through its descriptor
/// (`crate::binary_cache`). Device paths that cannot be cached are skipped, and listed.
pub fn pull_binaries(adb: &Adb, data: &Path, cache: &Path, lib: &[PathBuf]) -> anyhow::Result<usize> {
    use rperf_symbols::text::printable;
    let binaries = rperf_report::binaries(data)?;
    let built = rperf_symbols::symdir::index(lib);
    let mut from_builds = 0;
    let store = crate::binary_cache::BinaryCache::open(cache)?;
    let mut list = store.read_list();
    let landing = private_folder()?;
    let mut pulled = 0;
    let mut skipped = Vec::new();
    for (path, build_id) in binaries {
        let parts = match crate::binary_cache::device_path(&path) {
            Ok(p) => p,
            Err(why) => {
                skipped.push(format!("{}: {why}", printable(&path)));
                continue;
            }
        };
        let id = format!("0x{}", rperf_symbols::buildid::hex(&build_id));
        let rel = parts.join("/");
        // An unstripped copy from the build folders replaces whatever the cache holds.
        if let Some(unstripped) = built.get(&rperf_symbols::buildid::hex(&build_id)) {
            if let Err(why) = store.store(&parts, unstripped) {
                skipped.push(format!("{}: {why}", printable(&path)));
                continue;
            }
            list.retain(|(_, p)| *p != rel);
            list.push((id, rel));
            from_builds += 1;
            continue;
        }
        if list.iter().any(|(i, p)| *i == id && *p == rel) && store.holds(&parts) {
            continue;
        }
        let local = landing.path.join("binary");
        std::fs::remove_file(&local).ok();
        if let Err(e) = adb.pull(&path, &local) {
            eprintln!("rperf: {}; its frames stay unnamed", printable(&e.to_string()));
            continue;
        }
        // A binary updated on the device since the recording is not the one recorded.
        let have = rperf_symbols::buildid::of_file(&local);
        if have.as_deref().is_some_and(|h| !rperf_symbols::buildid::same(&build_id, h)) {
            eprintln!(
                "rperf: {} on the device has another build id than the recorded one; not cached",
                printable(&path)
            );
            continue;
        }
        if let Err(why) = store.store(&parts, &local) {
            skipped.push(format!("{}: {why}", printable(&path)));
            continue;
        }
        list.retain(|(_, p)| *p != rel);
        list.push((id, rel));
        pulled += 1;
    }
    store.write_list(&list)?;
    eprintln!("rperf: {pulled} binaries pulled into {}", cache.display());
    if !lib.is_empty() {
        eprintln!("rperf: {from_builds} binaries taken from the build folders (-lib) instead");
    }
    if !skipped.is_empty() {
        eprintln!("rperf: {} binaries were not pulled (their frames stay unnamed):", skipped.len());
        for s in &skipped {
            eprintln!("  {}", printable(s));
        }
    }
    Ok(pulled)
}

/// A new folder of this user's in the temporary folder, removed when dropped: adb writes each
/// pulled file there, where no one else can reach it.
pub struct PrivateFolder {
    pub path: PathBuf,
}

impl Drop for PrivateFolder {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.path).ok();
    }
}

pub fn private_folder() -> anyhow::Result<PrivateFolder> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    for n in 0..100u32 {
        let path = base.join(format!("rperf-pull-{}-{n}", std::process::id()));
        // Made anew (an existing one is never used), readable by this user only.
        match std::fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(PrivateFolder { path }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => bail!(
                "cannot create a folder in {}: {e}; set TMPDIR to a folder rperf can write to",
                base.display()
            ),
        }
    }
    bail!("cannot create a folder of its own in {}; set TMPDIR to another", base.display())
}
