//! `rperf android record`: record an app, a native program or the whole device, with rperf
//! pushed to the device or with the device's own simpleperf (see `choose`), then pull the
//! recording and the binaries it names.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;

use super::adb::{command_line, Adb, DeviceArgs, DEVICE_DATA, DEVICE_DIR};
use super::choose::{self, Recorder, RecorderChoice};
use super::launch::{waits_for_app, Start};
use super::pull::Landing;

/// Record an app, a native program or the whole device: record on the device (an app with
/// rperf pushed there when the app is debuggable or the device rooted, else with the device's
/// own simpleperf), pull perf.data and the binaries it names.
#[derive(Args, Debug)]
pub struct RecordArgs {
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
    #[arg(long = "launch", conflicts_with_all = ["activity", "test"])]
    launch: bool,
    /// Start this activity of the app (`.SettingsActivity` or a full class name) once recording
    /// waits for it, instead of the main one, as app_profiler.py's -a does.
    #[arg(short = 'a', long = "activity", value_name = "ACTIVITY", conflicts_with = "test")]
    activity: Option<String>,
    /// Run this instrumentation test class of the app once recording waits for it (`am
    /// instrument` with androidx's AndroidJUnitRunner), as app_profiler.py's -t does.
    #[arg(short = 't', long = "test", value_name = "CLASS")]
    test: Option<String>,
    /// Which profiler records on the device: `rperf` (pushed there; the app must be
    /// debuggable, or the device rooted), `simpleperf` (the device's /system/bin/simpleperf,
    /// Android 10 and later: the only one Android lets record a profileable app on a phone
    /// that is not rooted), or `auto`, which picks and says why.
    #[arg(long = "recorder", value_enum, default_value = "auto")]
    recorder: RecorderChoice,
    /// Start recording and return: unplug the USB cable, run the scenario, plug it back in, then
    /// `rperf android stop` ends the recording and pulls it (run_simpleperf_without_usb_connection.py's
    /// workflow).
    #[arg(long = "no-usb")]
    no_usb: bool,
    #[command(flatten)]
    device: DeviceArgs,
    #[command(flatten)]
    landing: Landing,
    /// The rperf binary for the device (default: target/device/ABI/rperf beside this rperf's
    /// build, as scripts/build-device.sh makes it).
    #[arg(long = "device-binary", value_name = "FILE")]
    device_binary: Option<PathBuf>,
    /// Options for `rperf record` on the device (after `--`); for the device's simpleperf they
    /// are translated to its spelling, and ones it lacks are refused.
    #[arg(last = true)]
    record_options: Vec<String>,
}

/// The device binary for an ABI: the one given, or the device build beside this rperf's.
pub fn device_binary(given: Option<&Path>, abi: &str) -> anyhow::Result<PathBuf> {
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

/// The device's ABI, as rperf's device builds name it.
pub fn device_abi(adb: &Adb) -> anyhow::Result<&'static str> {
    Ok(match adb.shell_ok(&["getprop", "ro.product.cpu.abi"])?.as_str() {
        "arm64-v8a" => "arm64",
        "x86_64" => "x86_64",
        other => bail!("the device's ABI is {other}; rperf runs on arm64-v8a and x86_64 devices"),
    })
}

/// Runs `rperf android record`.
pub fn run(a: RecordArgs) -> anyhow::Result<i32> {
    if (a.launch || a.activity.is_some() || a.test.is_some()) && a.app.is_none() {
        bail!("--launch, -a and -t start an app: name it with --app PKG");
    }
    let adb = Adb::connect(&a.device)?;
    super::detached::check_none_runs(&adb)?;
    if let Some(app) = &a.app {
        adb.check_installed(app)?;
    }
    let chosen = choose::choose(&adb, a.app.as_deref(), a.recorder)?;
    eprintln!("rperf: {}", rperf_symbols::text::printable(&chosen.why));
    // Checked before waiting for a native program to run.
    let options = match chosen.recorder {
        Recorder::Rperf => a.record_options.clone(),
        Recorder::Simpleperf => super::simpleperf::translate(&a.record_options)?,
    };
    let target = target(&adb, &a)?;
    let mut args = match chosen.recorder {
        Recorder::Rperf => {
            let binary = device_binary(a.device_binary.as_deref(), device_abi(&adb)?)?;
            let on_device = format!("{DEVICE_DIR}/rperf");
            adb.push(&binary, &on_device)?;
            adb.shell_ok(&["chmod", "755", &on_device])?;
            vec![on_device, "record".into()]
        }
        Recorder::Simpleperf => vec![choose::SYSTEM_SIMPLEPERF.to_string(), "record".into()],
    };
    args.extend(target);
    args.extend(["-o".into(), DEVICE_DATA.into()]);
    args.extend(options);
    let start =
        a.app.as_deref().and_then(|app| Start::new(app, a.launch, a.activity.as_deref(), a.test.as_deref()));
    if let Some(s) = &start {
        adb.shell_ok(&["am", "force-stop", s.app])?;
    }
    if a.no_usb {
        super::detached::start(&adb, &args, start.as_ref())?;
        return Ok(0);
    }
    record_attached(&adb, &args, start.as_ref())?;
    a.landing.pull(&adb, DEVICE_DATA)?;
    Ok(0)
}

/// Runs the recorder on the device while adb stays connected, starting the app (`start`) once
/// the recorder waits for it.
fn record_attached(adb: &Adb, args: &[String], start: Option<&Start>) -> anyhow::Result<()> {
    let mut rec = adb
        .cmd()
        .arg("shell")
        .arg(command_line(args))
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run adb shell")?;
    let mut err = std::io::BufReader::new(rec.stderr.take().expect("piped"));
    if let Some(start) = start {
        // Started once the recorder waits for it, so that its start is recorded.
        loop {
            let mut line = String::new();
            if std::io::BufRead::read_line(&mut err, &mut line)? == 0 {
                break;
            }
            eprint!("{}", rperf_symbols::text::printable(&line));
            if waits_for_app(&line) {
                break;
            }
        }
        start.run(adb)?;
    }
    std::io::copy(&mut err, &mut std::io::stderr())?;
    let status = rec.wait()?;
    if !status.success() {
        bail!("{} record on the device failed ({status})", args[0]);
    }
    Ok(())
}

/// The options that name what the device's recorder records: the app, the processes of a
/// native program (once it runs), or the whole device.
fn target(adb: &Adb, a: &RecordArgs) -> anyhow::Result<Vec<String>> {
    if let Some(app) = &a.app {
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
