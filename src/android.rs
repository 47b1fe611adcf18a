//! `rperf android`: record an app on an Android device from the host, as simpleperf's
//! app_profiler.py does, and bring back the recording and the device's binaries
//! (binary_cache_builder.py's layout), so that `rperf report --symfs binary_cache` names the
//! frames. Everything on the device goes through `adb`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

/// Profile an Android app from this machine through adb: record on the device, pull perf.data
/// and the binaries it names.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  rperf android record --app com.example.app -- -g dwarf --duration 10\n  \
    rperf android record --app com.example.app --launch -s emulator-5554\n  \
    rperf android record --app com.example.app -a .SettingsActivity -- -g fp --duration 5\n  \
    rperf android record -np surfaceflinger -- -g dwarf --duration 10\n  \
    rperf android record --system-wide -- --duration 5\n  \
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

/// Record an app, a native program or the whole device: push rperf, record (an app as itself
/// through run-as when the device is not rooted), pull perf.data and the binaries it names.
#[derive(Args, Debug)]
struct RecordArgs {
    /// The app's package name.
    #[arg(long = "app", value_name = "PKG", required_unless_present_any = ["native_program", "system_wide"])]
    app: Option<String>,
    /// A native program on the device (`surfaceflinger`): every process of that name, as
    /// app_profiler.py's -np finds it with pidof, waiting until it runs (`-np NAME` works too).
    #[arg(long = "native-program", value_name = "NAME", conflicts_with_all = ["app", "system_wide"])]
    native_program: Option<String>,
    /// The whole device, as app_profiler.py's --system-wide (needs a rooted device, or
    /// security.perf_harden set to 0).
    #[arg(long = "system-wide", conflicts_with = "app")]
    system_wide: bool,
    /// Start the app's main activity once recording waits for it (the app is stopped first,
    /// so that its start is recorded).
    #[arg(long = "launch")]
    launch: bool,
    /// Start this activity of the app (`.SettingsActivity` or a full class name) once recording
    /// waits for it, instead of the main one, as app_profiler.py's -a does; implies --launch.
    #[arg(short = 'a', long = "activity", value_name = "ACTIVITY")]
    activity: Option<String>,
    #[command(flatten)]
    device: DeviceArgs,
    /// The recording on this machine.
    #[arg(short = 'o', long = "output", default_value = "perf.data")]
    output: PathBuf,
    /// Where binaries are pulled to.
    #[arg(long = "binary-cache", default_value = "binary_cache")]
    binary_cache: PathBuf,
    /// Build folders holding unstripped copies of the app's libraries: a binary whose build id
    /// matches a file under DIR (searched recursively) is taken from there instead of the
    /// device (`-lib DIR` works too; may be repeated).
    #[arg(long = "lib", value_name = "DIR", action = clap::ArgAction::Append)]
    lib: Vec<PathBuf>,
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
    /// Build folders holding unstripped copies of the binaries, taken instead of the device's
    /// when their build ids match (`-lib DIR` works too; may be repeated).
    #[arg(long = "lib", value_name = "DIR", action = clap::ArgAction::Append)]
    lib: Vec<PathBuf>,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Which device, and how long to wait for adb: the options of every `rperf android` command.
#[derive(Args, Debug)]
struct DeviceArgs {
    /// The device's serial (`adb devices`), when several are connected.
    #[arg(short = 's', value_name = "SERIAL")]
    serial: Option<String>,
    /// How long an adb command may take before rperf gives up on it; pushes and pulls get ten
    /// times as long.
    #[arg(long = "adb-timeout", value_name = "SECONDS", default_value = "30", value_parser = crate::target_args::parse_seconds)]
    adb_timeout: Duration,
}

const DEVICE_DIR: &str = "/data/local/tmp";

/// One device, through adb.
struct Adb {
    adb: PathBuf,
    serial: String,
    /// The most an adb command may take (pushes and pulls: ten times as much).
    timeout: Duration,
}

/// The most of an adb command's output kept (the rest is read and dropped): what rperf reads
/// of it is a few lines.
const OUTPUT_KEPT: usize = 1 << 20;

/// Runs `cmd` (an adb call, `what` in messages) for at most `limit`, keeping at most
/// `OUTPUT_KEPT` bytes of its stdout and of its stderr. An adb that never answers (a stuck
/// server, a device that stopped responding) is killed, and said so.
fn run_limited(cmd: &mut Command, limit: Duration, what: &str) -> anyhow::Result<Output> {
    use std::io::Read;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {what}"))?;
    let drain = |mut from: Box<dyn Read + Send>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 64 * 1024];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let room = OUTPUT_KEPT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
            tx.send(kept).ok();
        });
        rx
    };
    let out = drain(Box::new(child.stdout.take().expect("piped")));
    let err = drain(Box::new(child.stderr.take().expect("piped")));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            child.kill().ok();
            child.wait().ok();
            bail!(
                "{what} did not answer within {} s: the device or the adb server may be stuck (`adb kill-server`, \
                 reconnect the device), or give it longer with --adb-timeout SECONDS",
                limit.as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // What adb started and left running may hold the pipes open: its output is not waited for.
    let take =
        |rx: std::sync::mpsc::Receiver<Vec<u8>>| rx.recv_timeout(Duration::from_secs(1)).unwrap_or_default();
    Ok(Output { status, stdout: take(out), stderr: take(err) })
}

impl Adb {
    /// The device to use: the only one connected, or the one `-s` names.
    fn connect(device: &DeviceArgs) -> anyhow::Result<Adb> {
        let (serial, timeout) = (device.serial.as_deref(), device.adb_timeout);
        let adb = std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join("adb")).find(|p| p.is_file()))
            .context(
                "adb not found: install Android's platform tools (apt-get install adb) and put adb on PATH",
            )?;
        let o = run_limited(Command::new(&adb).arg("devices"), timeout, "adb devices")?;
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
        Ok(Adb { adb, serial, timeout })
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new(&self.adb);
        c.arg("-s").arg(&self.serial);
        c
    }

    /// `adb shell ARGS`, its output.
    fn shell(&self, args: &[&str]) -> anyhow::Result<Output> {
        let what = format!("adb shell {}", args.join(" "));
        run_limited(self.cmd().arg("shell").args(args), self.timeout, &what)
    }

    fn shell_ok(&self, args: &[&str]) -> anyhow::Result<String> {
        let o = self.shell(args)?;
        if !o.status.success() {
            bail!("adb shell {} failed: {}", args.join(" "), String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    }

    fn push(&self, from: &Path, to: &str) -> anyhow::Result<()> {
        let what = format!("adb push {} {to}", from.display());
        let o = run_limited(self.cmd().arg("push").arg(from).arg(to), self.timeout * 10, &what)?;
        if !o.status.success() {
            bail!("adb push {} {to} failed: {}", from.display(), String::from_utf8_lossy(&o.stderr).trim());
        }
        Ok(())
    }

    fn pull(&self, from: &str, to: &Path) -> anyhow::Result<()> {
        let what = format!("adb pull {from}");
        let o = run_limited(self.cmd().arg("pull").arg(from).arg(to), self.timeout * 10, &what)?;
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
    if (a.launch || a.activity.is_some()) && a.app.is_none() {
        bail!("--launch and -a start an app: name it with --app PKG");
    }
    let adb = Adb::connect(&a.device)?;
    let abi = match adb.shell_ok(&["getprop", "ro.product.cpu.abi"])?.as_str() {
        "arm64-v8a" => "arm64",
        "x86_64" => "x86_64",
        other => bail!("the device's ABI is {other}; rperf runs on arm64-v8a and x86_64 devices"),
    };
    let target = target(&adb, &a)?;
    let binary = device_binary(a.device_binary.as_deref(), abi)?;
    let on_device = format!("{DEVICE_DIR}/rperf");
    adb.push(&binary, &on_device)?;
    adb.shell_ok(&["chmod", "755", &on_device])?;
    let data = format!("{DEVICE_DIR}/perf.data");
    let mut args = vec![on_device.clone(), "record".into()];
    args.extend(target);
    args.extend(["-o".into(), data.clone()]);
    args.extend(a.record_options.iter().cloned());
    let app = a.app.as_deref().unwrap_or_default();
    let launch = a.launch || a.activity.is_some();
    if launch {
        adb.shell_ok(&["am", "force-stop", app])?;
    }
    let mut rec =
        adb.cmd().arg("shell").args(&args).stderr(Stdio::piped()).spawn().context("cannot run adb shell")?;
    let mut err = std::io::BufReader::new(rec.stderr.take().expect("piped"));
    if launch {
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
        let activity = match &a.activity {
            Some(name) => format!("{app}/{name}"),
            None => main_activity(&adb, app)?,
        };
        adb.shell_ok(&["am", "start", "-n", &activity])?;
    }
    std::io::copy(&mut err, &mut std::io::stderr())?;
    let status = rec.wait()?;
    if !status.success() {
        bail!("rperf record on the device failed ({status})");
    }
    // Pulled where only this user can reach, then given the output's name as `rperf record`
    // gives it: a new 0600 file, never written through a link.
    let landing = private_folder()?;
    let got = landing.path.join("perf.data");
    adb.pull(&data, &got)?;
    let mut out = crate::output_file::OutputFile::recording(&a.output)?;
    let copied = std::fs::File::open(&got).and_then(|mut from| std::io::copy(&mut from, out.file()));
    if let Err(e) = copied {
        bail!("cannot write {}: {e}", a.output.display());
    }
    out.finish()?;
    eprintln!("rperf: pulled {}", a.output.display());
    pull_binaries(&adb, &a.output, &a.binary_cache, &a.lib)?;
    eprintln!(
        "rperf: report with `rperf report -i {} --symfs {}`",
        a.output.display(),
        a.binary_cache.display()
    );
    Ok(0)
}

/// The options that name what the device's rperf records: the app (installed), the processes
/// of a native program (running), or the whole device.
fn target(adb: &Adb, a: &RecordArgs) -> anyhow::Result<Vec<String>> {
    if let Some(app) = &a.app {
        let packages = adb.shell_ok(&["pm", "list", "packages", app])?;
        if !packages.lines().any(|l| l.trim() == format!("package:{app}")) {
            bail!(
                "app {app} is not installed on {} (adb shell pm list packages lists it when it is)",
                adb.serial
            );
        }
        return Ok(vec!["--app".into(), app.clone()]);
    }
    if let Some(name) = &a.native_program {
        return Ok(vec!["-p".into(), wait_for_program(adb, name)?]);
    }
    Ok(vec!["-a".into()])
}

/// The processes named `name` on the device (a comma list of pids), once there is one: as
/// app_profiler.py's -np, rperf asks `pidof` until the program runs (Ctrl-C to give up).
fn wait_for_program(adb: &Adb, name: &str) -> anyhow::Result<String> {
    use rperf_symbols::text::{printable, printable_cut};
    let mut said = false;
    loop {
        // pidof prints nothing (and exits 1) while no process has the name.
        let o = adb.shell(&["pidof", name])?;
        let text = String::from_utf8_lossy(&o.stdout);
        let pids: Vec<&str> = text.split_whitespace().collect();
        if pids.iter().any(|p| p.parse::<u32>().is_err()) {
            bail!(
                "adb shell pidof {} answered {:?}, not process ids",
                printable(name),
                printable_cut(&text, 200)
            );
        }
        if !pids.is_empty() {
            return Ok(pids.join(","));
        }
        if !said {
            eprintln!(
                "rperf: waiting for native program {} on {} (Ctrl-C to stop)",
                printable(name),
                adb.serial
            );
            said = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
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

/// Pulls the binaries `data` names into `cache`; returns how many were pulled. Each is pulled
/// into a private folder of its own first, then copied into the cache through its descriptor
/// (`crate::binary_cache`). Device paths that cannot be cached are skipped, and listed.
fn pull_binaries(adb: &Adb, data: &Path, cache: &Path, lib: &[PathBuf]) -> anyhow::Result<usize> {
    use rperf_symbols::text::printable;
    let binaries = rperf_report::binaries(data)?;
    let built = crate::build_dirs::index(lib);
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
struct PrivateFolder {
    path: PathBuf,
}

impl Drop for PrivateFolder {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.path).ok();
    }
}

fn private_folder() -> anyhow::Result<PrivateFolder> {
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

/// app_profiler.py's one-dash long options, as `rperf android record` and `pull-binaries` spell
/// them: `-np NAME` becomes `--native-program NAME`, `-lib DIR` `--lib DIR` (before any `--`;
/// clap's short options are one letter).
pub fn expand_one_dash_options(args: Vec<String>) -> Vec<String> {
    if args.get(1).map(String::as_str) != Some("android") || args.get(2).map(String::as_str) != Some("record")
    {
        return args;
    }
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    args.into_iter()
        .enumerate()
        .map(|(i, a)| match a.as_str() {
            "-np" if i < end => "--native-program".to_string(),
            "-lib" if i < end => "--lib".to_string(),
            _ => a,
        })
        .collect()
}

/// Runs `rperf android`.
pub fn run(a: AndroidArgs) -> anyhow::Result<i32> {
    match a.command {
        AndroidCommand::Record(r) => record(r),
        AndroidCommand::PullBinaries(p) => {
            let adb = Adb::connect(&p.device)?;
            pull_binaries(&adb, &p.input, &p.output, &p.lib)?;
            Ok(0)
        }
    }
}
