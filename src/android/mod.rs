//! `rperf android`: record an app on an Android device from the host, as simpleperf's
//! app_profiler.py does, and bring back the recording and the device's binaries
//! (binary_cache_builder.py's layout), so that `rperf report --symfs binary_cache` names the
//! frames. Everything on the device goes through `adb`:
//! - `adb`: the device, and every adb call bounded;
//! - `choose`: which profiler records an app there (rperf, or the device's own simpleperf);
//! - `record`: `rperf android record`, attached (`detached`: without USB), starting the app
//!   (`launch`);
//! - `simpleperf`: rperf's record options in simpleperf's spelling;
//! - `api`: recording from the app's code (simpleperf's app API);
//! - `pull`: recordings and binaries back to this machine.

mod adb;
mod api;
mod choose;
mod detached;
mod launch;
mod pull;
mod record;
mod simpleperf;

use clap::{Args, Subcommand};

/// Profile an Android app from this machine through adb: record on the device, pull perf.data
/// and the binaries it names.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  rperf android record --app com.example.app -- -g dwarf --duration 10\n  \
    rperf android record --app com.example.app --launch -s emulator-5554\n  \
    rperf android record --app com.example.app -a .SettingsActivity -- -g fp --duration 5\n  \
    rperf android record --app com.example.app -t com.example.app.StartupTest\n  \
    rperf android record -np surfaceflinger -- -g dwarf --duration 10\n  \
    rperf android record --system-wide -- --duration 5\n  \
    rperf android record --app com.example.app --no-usb -- -g fp; rperf android stop\n  \
    rperf android api prepare --app com.example.app; rperf android api collect --app com.example.app\n  \
    rperf android pull-binaries -i perf.data\n  rperf report --symfs binary_cache"
)]
pub struct AndroidArgs {
    #[command(subcommand)]
    command: AndroidCommand,
}

#[derive(Subcommand, Debug)]
enum AndroidCommand {
    Record(record::RecordArgs),
    Stop(detached::StopArgs),
    Api(api::ApiArgs),
    PullBinaries(pull::PullArgs),
}

/// app_profiler.py's one-dash long options, as `rperf android` spells them: `-np NAME` becomes
/// `--native-program NAME`, `-lib DIR` `--lib DIR` (before any `--`; clap's short options are
/// one letter).
pub fn expand_one_dash_options(args: Vec<String>) -> Vec<String> {
    if args.get(1).map(String::as_str) != Some("android") {
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
        AndroidCommand::Record(r) => record::run(r),
        AndroidCommand::Stop(s) => detached::stop(s),
        AndroidCommand::Api(a) => api::run(a),
        AndroidCommand::PullBinaries(p) => pull::run(p),
    }
}
