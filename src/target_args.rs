//! Target options shared by `rperf record` and `rperf stat`.

use anyhow::bail;
use clap::Args;
use rperf_record::{target, Target};

/// What to profile or count.
#[derive(Args, Debug, Clone)]
pub struct TargetArgs {
    /// These processes: pids, or regexes matched against process names (comma list).
    #[arg(short = 'p', long = "pid", value_name = "PIDS")]
    pub pids: Option<String>,
    /// Only these threads (comma list).
    #[arg(short = 't', long = "tid", value_name = "TIDS")]
    pub tids: Option<String>,
    /// Every process on the selected CPUs.
    #[arg(short = 'a', long = "all-cpus")]
    pub system_wide: bool,
    /// Every process whose name (comm or argv[0]) is NAME.
    #[arg(long = "app", value_name = "NAME")]
    pub app: Option<String>,
    /// The command to launch (after `--`).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl TargetArgs {
    /// True for `-a -- CMD`: everything, for as long as the command runs.
    pub fn system_wide_with_command(&self) -> bool {
        self.system_wide
            && !self.command.is_empty()
            && self.pids.is_none()
            && self.tids.is_none()
            && self.app.is_none()
    }

    /// Resolves the chosen target; `verb` is the subcommand, for messages.
    pub fn resolve(&self, verb: &str) -> anyhow::Result<Target> {
        let chosen = [
            self.pids.is_some(),
            self.tids.is_some(),
            self.system_wide,
            self.app.is_some(),
            !self.command.is_empty(),
        ]
        .iter()
        .filter(|x| **x)
        .count();
        if chosen == 0 {
            bail!("nothing to profile: give a command (`rperf {verb} -- ./prog`), -p PID, -t TID, -a or --app NAME");
        }
        if chosen > 1 && !self.system_wide_with_command() {
            bail!("choose one target: a command, -p, -t, --app, or -a (-a may be combined with a command that sets the duration)");
        }
        Ok(if self.system_wide {
            Target::SystemWide
        } else if let Some(p) = &self.pids {
            Target::Processes(target::resolve_processes(p)?)
        } else if let Some(t) = &self.tids {
            Target::Threads(target::resolve_threads(t)?)
        } else if let Some(app) = &self.app {
            Target::App(app.clone())
        } else {
            Target::Command(self.command.clone())
        })
    }
}
