//! `rperf android`: record an app on an Android device from the host, as simpleperf's
//! app_profiler.py does, and bring back the recording and the device's binaries
//! (binary_cache_builder.py's layout), so that `rperf report --symfs binary_cache` names the
//! frames. Everything on the device goes through `adb`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

/// Profile an Android app from this machine through adb: record on the device, pull perf.data
/// and the binaries it names.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  rperf android record --app com.example.app -- -g dwarf --duration 10\n  \
    rperf android record --app com.example.app --launch -s emulator-5554\n  \
    rperf android pull-binaries -i perf.data\n  rperf report --symfs binary_cache"
)]
pub struct AndroidArgs {
    #[command(subcommand)]
    command: AndroidCommand,
}

#[derive(Subcommand, Debug)]
enum AndroidCommand {
    Record(RecordArgs),
    PullBinaries(PullArgs),
}

/// Record an app on the device: push rperf, record (as the app through run-as when the device
/// is not rooted), pull perf.data and the binaries it names.
#[derive(Args, Debug)]
struct RecordArgs {
    /// The app's package name.
    #[arg(long = "app", value_name = "PKG")]
    app: String,
    /// Start the app's main activity once recording waits for it (the app is stopped first,
    /// so that its start is recorded).
    #[arg(long = "launch")]
    launch: bool,
    /// The device's serial (`adb devices`), when several are connected.
    #[arg(short = 's', value_name = "SERIAL")]
    serial: Option<String>,
    /// The recording on this machine.
    #[arg(short = 'o', long = "output", default_value = "perf.data")]
    output: PathBuf,
    /// Where binaries are pulled to.
    #[arg(long = "binary-cache", default_value = "binary_cache")]
    binary_cache: PathBuf,
    /// The rperf binary for the device (default: target/device/ABI/rperf beside this rperf's
    /// build, as scripts/build-device.sh makes it).
    #[arg(long = "device-binary", value_name = "FILE")]
    device_binary: Option<PathBuf>,
    /// Options for `rperf record` on the device (after `--`).
    #[arg(last = true)]
    record_options: Vec<String>,
}

/// Pull every binary a recording names with a build id from the device into a binary cache
/// (simpleperf's layout: the device's paths under the cache, and a build_id_list). Binaries
/// already cached with the same build id are skipped.
#[derive(Args, Debug)]
struct PullArgs {
    /// The recording.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// The binary cache.
    #[arg(short = 'o', long = "output", default_value = "binary_cache")]
    output: PathBuf,
    /// The device's serial.
    #[arg(short = 's', value_name = "SERIAL")]
    serial: Option<String>,
}

const DEVICE_DIR: &str = "/data/local/tmp";

/// One device, through adb.
struct Adb {
    adb: PathBuf,
    serial: String,
}

impl Adb {
    /// The device to use: the only one connected, or the one `serial` names.
    fn connect(serial: Option<&str>) -> anyhow::Result<Adb> {
        let adb = std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join("adb")).find(|p| p.is_file()))
            .context(
                "adb not found: install Android's platform tools (apt-get install adb) and put adb on PATH",
            )?;
        let o = Command::new(&adb)
            .arg("devices")
            .output()
            .with_context(|| format!("cannot run {}", adb.display()))?;
        let text = String::from_utf8_lossy(&o.stdout);
        let devices: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("List of devices"))
            .skip(1)
            .filter_map(|l| l.split_once('\t').filter(|(_, state)| *state == "device").map(|(s, _)| s))
            .collect();
        let serial = match (serial, devices.as_slice()) {
            (_, []) => bail!("no device: connect one with USB debugging on (adb devices lists none)"),
            (Some(s), found) if !found.contains(&s) => {
                bail!("no device {s}: adb devices lists {}", found.join(", "))
            }
            (Some(s), _) => s.to_string(),
            (None, [one]) => one.to_string(),
            (None, several) => bail!("several devices ({}): pick one with -s SERIAL", several.join(", ")),
        };
        Ok(Adb { adb, serial })
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new(&self.adb);
        c.arg("-s").arg(&self.serial);
        c
    }

    /// `adb shell ARGS`, its output.
    fn shell(&self, args: &[&str]) -> anyhow::Result<Output> {
        self.cmd().arg("shell").args(args).stdin(Stdio::null()).output().context("cannot run adb shell")
    }

    fn shell_ok(&self, args: &[&str]) -> anyhow::Result<String> {
        let o = self.shell(args)?;
        if !o.status.success() {
            bail!("adb shell {} failed: {}", args.join(" "), String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    }

    fn push(&self, from: &Path, to: &str) -> anyhow::Result<()> {
        let o = self.cmd().arg("push").arg(from).arg(to).output().context("cannot run adb push")?;
        if !o.status.success() {
            bail!("adb push {} {to} failed: {}", from.display(), String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(())
    }

    fn pull(&self, from: &str, to: &Path) -> anyhow::Result<()> {
        let o = self.cmd().arg("pull").arg(from).arg(to).output().context("cannot run adb pull")?;
        if !o.status.success() {
            bail!("adb pull {from} failed: {}", String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(())
    }
}

/// The device binary for an ABI: the one given, or the device build beside this rperf's.
fn device_binary(given: Option<&Path>, abi: &str) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let exe = std::env::current_exe().context("cannot find rperf's own binary")?;
    // target/release/rperf -> target/device/ABI/rperf
    let candidate = exe.parent().and_then(Path::parent).map(|t| t.join("device").join(abi).join("rperf"));
    candidate.filter(|p| p.is_file()).with_context(|| {
        format!(
            "no rperf build for {abi} devices: run scripts/build-device.sh, or give one with --device-binary"
        )
    })
}

fn record(a: RecordArgs) -> anyhow::Result<i32> {
    let adb = Adb::connect(a.serial.as_deref())?;
    let abi = match adb.shell_ok(&["getprop", "ro.product.cpu.abi"])?.as_str() {
        "arm64-v8a" => "arm64",
        "x86_64" => "x86_64",
        other => bail!("the device's ABI is {other}; rperf runs on arm64-v8a and x86_64 devices"),
    };
    let packages = adb.shell_ok(&["pm", "list", "packages", &a.app])?;
    if !packages.lines().any(|l| l.trim() == format!("package:{}", a.app)) {
        bail!(
            "app {} is not installed on {} (adb shell pm list packages lists it when it is)",
            a.app,
            adb.serial
        );
    }
    let binary = device_binary(a.device_binary.as_deref(), abi)?;
    let on_device = format!("{DEVICE_DIR}/rperf");
    adb.push(&binary, &on_device)?;
    adb.shell_ok(&["chmod", "755", &on_device])?;
    let data = format!("{DEVICE_DIR}/perf.data");
    let mut args =
        vec![on_device.clone(), "record".into(), "--app".into(), a.app.clone(), "-o".into(), data.clone()];
    args.extend(a.record_options.iter().cloned());
    if a.launch {
        adb.shell_ok(&["am", "force-stop", &a.app])?;
    }
    let mut rec =
        adb.cmd().arg("shell").args(&args).stderr(Stdio::piped()).spawn().context("cannot run adb shell")?;
    let mut err = std::io::BufReader::new(rec.stderr.take().expect("piped"));
    if a.launch {
        // Start the app once rperf waits for it, so that its start is recorded.
        let mut seen = String::new();
        while !seen.contains("waiting for app") {
            let mut line = String::new();
            if std::io::BufRead::read_line(&mut err, &mut line)? == 0 {
                break;
            }
            eprint!("{line}");
            seen.push_str(&line);
        }
        let activity = main_activity(&adb, &a.app)?;
        adb.shell_ok(&["am", "start", "-n", &activity])?;
    }
    std::io::copy(&mut err, &mut std::io::stderr())?;
    let status = rec.wait()?;
    if !status.success() {
        bail!("rperf record on the device failed ({status})");
    }
    adb.pull(&data, &a.output)?;
    eprintln!("rperf: pulled {}", a.output.display());
    pull_binaries(&adb, &a.output, &a.binary_cache)?;
    eprintln!(
        "rperf: report with `rperf report -i {} --symfs {}`",
        a.output.display(),
        a.binary_cache.display()
    );
    Ok(0)
}

/// The app's launcher activity (`PKG/.MainActivity`), as the package manager resolves it.
fn main_activity(adb: &Adb, pkg: &str) -> anyhow::Result<String> {
    let out = adb.shell_ok(&[
        "cmd",
        "package",
        "resolve-activity",
        "--brief",
        "-c",
        "android.intent.category.LAUNCHER",
        pkg,
    ])?;
    out.lines()
        .last()
        .filter(|l| l.contains('/'))
        .map(|l| l.trim().to_string())
        .with_context(|| format!("app {pkg} has no launcher activity to start; start it yourself"))
}

/// Pulls the binaries `data` names into `cache`; returns how many were pulled.
fn pull_binaries(adb: &Adb, data: &Path, cache: &Path) -> anyhow::Result<usize> {
    let binaries = rperf_report::binaries(data)?;
    std::fs::create_dir_all(cache).with_context(|| format!("cannot create {}", cache.display()))?;
    let list_path = cache.join("build_id_list");
    let mut list: Vec<(String, String)> = std::fs::read_to_string(&list_path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('=').map(|(id, p)| (id.trim().to_string(), p.trim().to_string())))
        .collect();
    let mut pulled = 0;
    for (path, build_id) in binaries {
        let id = format!("0x{}", rperf_symbols::buildid::hex(&build_id));
        let rel = path.trim_start_matches('/').to_string();
        let Some(local) = rperf_symbols::inside(cache, Path::new(&rel)) else { continue };
        let cached = list.iter().any(|(i, p)| *i == id && *p == rel) && local.is_file();
        if cached {
            continue;
        }
        if let Some(dir) = local.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        if let Err(e) = adb.pull(&path, &local) {
            eprintln!("rperf: {}; its frames stay unnamed", rperf_symbols::text::printable(&e.to_string()));
            continue;
        }
        // A binary updated on the device since the recording is not the one recorded.
        let have = rperf_symbols::buildid::of_file(&local);
        if have.as_deref().is_some_and(|h| !rperf_symbols::buildid::same(&build_id, h)) {
            eprintln!(
                "rperf: {} on the device has another build id than the recorded one; not cached",
                rperf_symbols::text::printable(&path)
            );
            std::fs::remove_file(&local).ok();
            continue;
        }
        list.retain(|(_, p)| *p != rel);
        list.push((id, rel));
        pulled += 1;
    }
    let text: String = list.iter().map(|(id, p)| format!("{id}={p}\n")).collect();
    std::fs::write(&list_path, text).with_context(|| format!("cannot write {}", list_path.display()))?;
    eprintln!("rperf: {pulled} binaries pulled into {}", cache.display());
    Ok(pulled)
}

/// Runs `rperf android`.
pub fn run(a: AndroidArgs) -> anyhow::Result<i32> {
    match a.command {
        AndroidCommand::Record(r) => record(r),
        AndroidCommand::PullBinaries(p) => {
            let adb = Adb::connect(p.serial.as_deref())?;
            pull_binaries(&adb, &p.input, &p.output)?;
            Ok(0)
        }
    }
}
