//! Target options and value parsers shared by the subcommands (record, stat, top; report and
//! annotate for --time).

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
    /// Every process of app NAME, as Android names them and simpleperf finds them: the file
    /// name of the first argument of its command line is NAME or NAME:PROCESS. rperf waits for
    /// the app to start when it is not running.
    #[arg(long = "app", value_name = "NAME")]
    pub app: Option<String>,
    /// The command to launch (after `--`).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
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

/// The events of `-e` options, each a comma list.
pub fn parse_events(lists: &[String]) -> anyhow::Result<Vec<rperf_record::EventSpec>> {
    let mut out = Vec::new();
    for l in lists {
        out.extend(rperf_record::parse_event_list(l)?);
    }
    Ok(out)
}

/// `--time START,END` of report and annotate: seconds after the first sample (`2.5`) or clock
/// timestamps (`683802777472700ns`); either end may be empty.
pub fn parse_time_window(
    t: &str,
) -> anyhow::Result<(Option<rperf_report::TimeBound>, Option<rperf_report::TimeBound>)> {
    use anyhow::Context;
    let (start, end) =
        t.split_once(',').with_context(|| format!("--time {t}: give START,END (either may be empty)"))?;
    let bound = |b: &str| -> anyhow::Result<Option<rperf_report::TimeBound>> {
        if b.trim().is_empty() {
            return Ok(None);
        }
        rperf_report::TimeBound::parse(b).map(Some).with_context(|| {
            format!("--time {t}: '{b}' is neither seconds (2.5) nor a timestamp in nanoseconds (683802777472700ns)")
        })
    };
    let (start, end) = (bound(start)?, bound(end)?);
    use rperf_report::TimeBound::{Absolute, Relative};
    if let (Some(Relative(a)), Some(Relative(b))) | (Some(Absolute(a)), Some(Absolute(b))) = (start, end) {
        if b <= a {
            anyhow::bail!("--time {t}: the window ends before it starts; give START,END with END after START (e.g. 2,5)");
        }
    }
    Ok((start, end))
}

/// `--percent-limit P`: a percentage from 0 to 100.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a percentage: give a number from 0 to 100, e.g. 0.5")),
    }
}

/// `--duration SECONDS`: a positive, finite number of seconds that a duration can hold.
pub fn parse_seconds(s: &str) -> Result<std::time::Duration, String> {
    let bad = || format!("'{s}' is not a duration: give a positive number of seconds, e.g. 2.5");
    let v: f64 = s.trim().parse().map_err(|_| bad())?;
    if v.is_nan() || v <= 0.0 {
        return Err(bad());
    }
    std::time::Duration::try_from_secs_f64(v)
        .map_err(|_| format!("'{s}' seconds is longer than rperf can wait"))
}

/// A CPU list given on the command line.
#[derive(Clone, Debug)]
pub struct CpuList(pub Vec<u32>);

/// `--cpu LIST` for recording and counting: CPUs that are online here.
pub fn parse_online_cpus(s: &str) -> Result<CpuList, String> {
    let cpus = rperf_record::sys::parse_cpu_list(s)?;
    if cpus.is_empty() {
        return Err(format!("'{s}' names no CPU"));
    }
    let online = rperf_record::sys::online_cpus();
    if let Some(bad) = cpus.iter().find(|c| !online.contains(c)) {
        let list: Vec<String> = online.iter().map(u32::to_string).collect();
        return Err(format!("CPU {bad} is not online (online: {})", list.join(",")));
    }
    Ok(CpuList(cpus))
}

/// `-m PAGES`: a power of two of at least one page.
pub fn parse_pages(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n.is_power_of_two() => Ok(n),
        Ok(n) => Err(format!(
            "{n} is not a power of two: give 1, 2, 4, ... pages (e.g. {})",
            n.max(1).next_power_of_two()
        )),
        Err(_) => Err(format!("'{s}' is not a number of pages")),
    }
}

/// The folders given to `option`, each checked to be one.
pub fn folders(dirs: &[std::path::PathBuf], option: &str) -> anyhow::Result<Vec<std::path::PathBuf>> {
    for d in dirs {
        if !d.is_dir() {
            bail!("{option} {}: no such folder", d.display());
        }
    }
    Ok(dirs.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_positive_and_finite() {
        assert_eq!(parse_seconds("1.5").unwrap(), std::time::Duration::from_millis(1500));
        for bad in ["-1", "0", "nan", "inf", "1e30", "x"] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pages_are_powers_of_two() {
        assert_eq!(parse_pages("64"), Ok(64));
        assert!(parse_pages("3").unwrap_err().contains("power of two"));
        assert!(parse_pages("0").is_err());
    }
}
