//! `--debuginfod[=URLS]` and `--no-debuginfod`, for the commands that name code.

use anyhow::bail;
use rperf_report::Debuginfod;

/// Whether debug info missing here is fetched from debuginfod servers.
#[derive(clap::Args, Debug, Default)]
pub struct DebuginfodArgs {
    /// Fetch debug info and binaries missing here (after --symfs and local files) from
    /// debuginfod servers: the space-separated URLS, else those in DEBUGINFOD_URLS. On by
    /// default when DEBUGINFOD_URLS is set.
    #[arg(long = "debuginfod", value_name = "URLS", num_args = 0..=1, default_missing_value = "")]
    debuginfod: Option<String>,
    /// Never ask debuginfod servers, whatever DEBUGINFOD_URLS says.
    #[arg(long = "no-debuginfod", conflicts_with = "debuginfod")]
    no_debuginfod: bool,
}

impl DebuginfodArgs {
    /// The choice the options make.
    pub fn choice(&self) -> anyhow::Result<Debuginfod> {
        Ok(match (&self.debuginfod, self.no_debuginfod) {
            (_, true) => Debuginfod::Off,
            (None, false) => Debuginfod::FromEnv,
            (Some(urls), false) if !urls.trim().is_empty() => Debuginfod::Urls(urls.clone()),
            (Some(_), false) => {
                if Debuginfod::FromEnv.config().is_none() {
                    bail!(
                        "--debuginfod: DEBUGINFOD_URLS names no server; name them: \
                         --debuginfod='https://debuginfod.debian.net'"
                    );
                }
                Debuginfod::FromEnv
            }
        })
    }
}
