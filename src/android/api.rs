//! `rperf android api prepare|collect`: recording started and stopped from the app's own code,
//! through simpleperf's app API (`ProfileSession` in Java/Kotlin or C++), as
//! api_profiler.py does it. `prepare` lets the device record apps and puts rperf where the app
//! API looks for a profiler (/data/local/tmp/simpleperf); the app then runs
//! `simpleperf record --in-app --stdio-controls-profiling …` — rperf, which takes that command
//! line — and its recordings land in its own folder; `collect` brings them back, with the
//! binaries they name.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use super::adb::{quote, Adb, DeviceArgs, DEVICE_DIR};
use super::choose::{has_system_simpleperf, SYSTEM_SIMPLEPERF};
use super::pull::{private_folder, pull_binaries, pull_recording};
use super::record::{device_abi, device_binary};

/// Record from the app's own code with simpleperf's app API (ProfileSession), as
/// api_profiler.py: `prepare` the device, run the app, `collect` its recordings.
#[derive(Args, Debug)]
pub struct ApiArgs {
    #[command(subcommand)]
    command: ApiCommand,
}

#[derive(Subcommand, Debug)]
enum ApiCommand {
    Prepare(PrepareArgs),
    Collect(CollectArgs),
}

/// Let the device record, and put rperf where the app API looks for a profiler
/// (/data/local/tmp/simpleperf).
#[derive(Args, Debug)]
struct PrepareArgs {
    /// The app's package name.
    #[arg(short = 'p', long = "app", value_name = "PKG")]
    app: String,
    /// Keep the permission to record for DAYS, across reboots (Android 13 and later; set by the
    /// device's own simpleperf). By default it ends at the next reboot.
    #[arg(short = 'd', long = "days", value_name = "DAYS")]
    days: Option<u32>,
    /// The most samples per second the kernel allows (Android 10 and later).
    #[arg(long = "max-sample-rate", default_value = "100000")]
    max_sample_rate: u64,
    /// The most CPU time the kernel spends sampling, in percent (Android 10 and later).
    #[arg(long = "max-cpu-percent", default_value = "25")]
    max_cpu_percent: u64,
    /// The most kernel buffer memory for recording, in KiB (Android 10 and later).
    #[arg(long = "max-memory-in-kb", default_value = "32800")]
    max_memory_in_kb: u64,
    /// The rperf binary for the device (default: target/device/ABI/rperf beside this rperf's
    /// build, as scripts/build-device.sh makes it).
    #[arg(long = "device-binary", value_name = "FILE")]
    device_binary: Option<PathBuf>,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Bring back the recordings the app made (its simpleperf_data folder), and the binaries they
/// name; the recordings are then removed from the device, as api_profiler.py does.
#[derive(Args, Debug)]
struct CollectArgs {
    /// The app's package name.
    #[arg(short = 'p', long = "app", value_name = "PKG")]
    app: String,
    /// Where the recordings go.
    #[arg(short = 'o', long = "out-dir", value_name = "DIR", default_value = "simpleperf_data")]
    out_dir: PathBuf,
    /// Where binaries are pulled to.
    #[arg(long = "binary-cache", default_value = "binary_cache")]
    binary_cache: PathBuf,
    /// Build folders holding unstripped copies of the app's libraries, taken instead of the
    /// device's when their build ids match (`-lib DIR` works too; may be repeated).
    #[arg(long = "lib", value_name = "DIR", action = clap::ArgAction::Append)]
    lib: Vec<PathBuf>,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Where the app API looks for a profiler before the system's.
const API_PROFILER: &str = "/data/local/tmp/simpleperf";
/// The tracepoint ids the app API hands its profiler (`--tracepoint-events`): the app's user
/// may not read tracefs.
const TRACEPOINT_FILE: &str = "/data/local/tmp/tracepoint_events";
/// The app API's folder for recordings, in the app's data folder.
const APP_DATA: &str = "simpleperf_data";

/// Runs `rperf android api`.
pub fn run(a: ApiArgs) -> anyhow::Result<i32> {
    match a.command {
        ApiCommand::Prepare(p) => prepare(p),
        ApiCommand::Collect(c) => collect(c),
    }
}

fn prepare(a: PrepareArgs) -> anyhow::Result<i32> {
    let adb = Adb::connect(&a.device)?;
    adb.check_installed(&a.app)?;
    let binary = device_binary(a.device_binary.as_deref(), device_abi(&adb)?)?;
    let sdk: u32 = adb.shell_ok(&["getprop", "ro.build.version.sdk"])?.parse().unwrap_or(0);
    if sdk >= 29 {
        adb.shell_ok(&["setprop", "debug.perf_event_max_sample_rate", &a.max_sample_rate.to_string()])?;
        adb.shell_ok(&["setprop", "debug.perf_cpu_time_max_percent", &a.max_cpu_percent.to_string()])?;
        adb.shell_ok(&["setprop", "debug.perf_event_mlock_kb", &a.max_memory_in_kb.to_string()])?;
    }
    adb.shell_ok(&["setprop", "security.perf_harden", "0"])?;
    if let Some(days) = a.days {
        if sdk < 33 {
            bail!("--days needs Android 13 or later (the device runs SDK {sdk}); leave it out");
        }
        // The device's own simpleperf keeps the permission across reboots.
        adb.shell_ok(&[SYSTEM_SIMPLEPERF, "api-prepare", "--app", &a.app, "--days", &days.to_string()])?;
    }
    adb.push(&binary, API_PROFILER)?;
    adb.shell_ok(&["chmod", "a+x", API_PROFILER])?;
    // Written where tracefs is readable, for --trace-offcpu from the app, in the format both
    // rperf and simpleperf read.
    let ids = format!("{API_PROFILER} list tracepoint --ids > {TRACEPOINT_FILE}");
    if let Err(e) = adb.shell_line_ok(&ids) {
        eprintln!(
            "rperf: tracepoint ids could not be listed on {} ({}); recordings with --trace-offcpu from the app will fail",
            adb.serial,
            rperf_symbols::text::printable(&e.to_string())
        );
    }
    eprintln!(
        "rperf: {} is ready: {API_PROFILER} is rperf, which the app API (ProfileSession) runs; run the app, then \
         `rperf android api collect --app {}`",
        adb.serial, a.app
    );
    Ok(0)
}

fn collect(a: CollectArgs) -> anyhow::Result<i32> {
    let adb = Adb::connect(&a.device)?;
    adb.check_installed(&a.app)?;
    let app = &a.app;
    // The recordings belong to the app's user: read as that user, through run-as when the app
    // is debuggable.
    let run_as = adb.shell(&["run-as", app, "id", "-u"])?;
    if !run_as.status.success() {
        let why = rperf_symbols::text::printable_cut(String::from_utf8_lossy(&run_as.stderr).trim(), 200);
        if has_system_simpleperf(&adb)? {
            return collect_through_simpleperf(&adb, &a, &why);
        }
        bail!(
            "cannot read the recordings of app {app} on {} (run-as {app}: {why}): it is not debuggable, and the \
             device has no {SYSTEM_SIMPLEPERF} to read them as the app",
            adb.serial
        );
    }
    // No folder yet: the app has recorded nothing.
    let listing = adb.shell(&["run-as", app, "ls", APP_DATA])?;
    let text = String::from_utf8_lossy(&listing.stdout);
    let names: Vec<&str> = text.lines().map(str::trim).filter(|n| n.ends_with(".data")).collect();
    if let Some(bad) = names.iter().find(|n| !plain_name(n)) {
        bail!("app {app} holds a recording named {:?}: rperf collects plain file names only", bad);
    }
    if names.is_empty() {
        eprintln!("rperf: app {app} on {} has no recordings in its {APP_DATA} folder", adb.serial);
        return Ok(0);
    }
    std::fs::create_dir_all(&a.out_dir).with_context(|| format!("cannot create {}", a.out_dir.display()))?;
    let landing = format!("{DEVICE_DIR}/rperf_collect.data");
    for name in &names {
        // run-as writes into the shell's file: the shell user may not read the app's folder.
        let copy = format!("run-as {} cat {APP_DATA}/{name} > {landing}", quote(app));
        adb.shell_line_ok(&copy)?;
        let local = a.out_dir.join(name);
        pull_recording(&adb, &landing, &local)?;
        adb.shell_ok(&["rm", "-f", &landing])?;
        adb.shell_ok(&["run-as", app, "rm", "-f", &format!("{APP_DATA}/{name}")])?;
        pull_binaries(&adb, &local, &a.binary_cache, &a.lib)?;
    }
    eprintln!(
        "rperf: {} recordings collected into {}; report one with `rperf report -i {}/{} --symfs {}`",
        names.len(),
        a.out_dir.display(),
        a.out_dir.display(),
        names[0],
        a.binary_cache.display()
    );
    Ok(0)
}

/// The largest recording taken out of a zip file.
const MAX_RECORDING: u64 = 64 << 30;

/// The recordings of an app that is not debuggable: only simpleperf_app_runner enters its
/// context, and it runs nothing but the device's simpleperf, whose `api-collect` zips them
/// (and removes them from the app's folder).
fn collect_through_simpleperf(adb: &Adb, a: &CollectArgs, why: &str) -> anyhow::Result<i32> {
    let app = &a.app;
    eprintln!(
        "rperf: app {app} is not debuggable (run-as: {why}): its recordings are read by the device's \
         {SYSTEM_SIMPLEPERF} (api-collect, through simpleperf_app_runner)"
    );
    let on_device = format!("{DEVICE_DIR}/simpleperf_data.zip");
    adb.shell_ok(&[SYSTEM_SIMPLEPERF, "api-collect", "--app", app, "-o", &on_device])?;
    let landing = private_folder()?;
    let zip = landing.path.join("simpleperf_data.zip");
    adb.pull(&on_device, &zip)?;
    adb.shell_ok(&["rm", "-f", &on_device])?;
    std::fs::create_dir_all(&a.out_dir).with_context(|| format!("cannot create {}", a.out_dir.display()))?;
    let names = unzip_recordings(&zip, &a.out_dir)?;
    for name in &names {
        pull_binaries(adb, &a.out_dir.join(name), &a.binary_cache, &a.lib)?;
    }
    eprintln!("rperf: {} recordings collected into {}", names.len(), a.out_dir.display());
    Ok(0)
}

/// Writes each recording in `zip` into `out_dir` under its file name (as `rperf record` writes
/// its output: a new 0600 file, never through a link); returns the names.
fn unzip_recordings(zip: &std::path::Path, out_dir: &std::path::Path) -> anyhow::Result<Vec<String>> {
    use std::io::Read;
    let file = std::fs::File::open(zip).with_context(|| format!("cannot read {}", zip.display()))?;
    let mut archive =
        zip::ZipArchive::new(file).context("the device's simpleperf api-collect wrote no zip file")?;
    let mut names = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).context("a damaged entry in simpleperf's zip file")?;
        let full =
            entry.name().context("an entry of simpleperf's zip file has no readable name")?.to_string();
        let name = full.rsplit('/').next().unwrap_or_default().to_string();
        if entry.is_dir() || !name.ends_with(".data") {
            continue;
        }
        if !plain_name(&name) {
            bail!(
                "simpleperf's zip file holds a recording named {:?}: rperf takes plain file names only",
                full
            );
        }
        let path = out_dir.join(&name);
        let mut out = crate::output_file::OutputFile::recording(&path)?;
        let copied = std::io::copy(&mut (&mut entry).take(MAX_RECORDING + 1), out.file())
            .with_context(|| format!("cannot write {}", path.display()))?;
        if copied > MAX_RECORDING {
            bail!("{name} in simpleperf's zip file is larger than {} GiB", MAX_RECORDING >> 30);
        }
        out.finish()?;
        eprintln!("rperf: collected {}", path.display());
        names.push(name);
    }
    Ok(names)
}

/// A file name rperf takes from the device: letters, digits, `.`, `-` and `_`, not hidden.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}
