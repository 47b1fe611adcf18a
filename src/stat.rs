//! `rperf stat`: count events for a target and print them the way perf does, with the derived
//! figures people act on (GHz, IPC, miss rates, CPUs utilized, rates per second).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::bail;
use clap::Args;
use rperf_record::{launch, parse_event, parse_event_list, procfs, CountOptions, Counters, Reading, Target};
use rperf_symbols::text::printable;

mod figures;
use figures::{grouped, is_time, mean_rsd, metric};

/// Count events (hardware, software, tracepoints) for a command, processes, threads, an app or
/// the whole system.
#[derive(Args, Debug)]
#[command(
    after_help = "Examples:\n  rperf stat -- ./server\n  rperf stat -e cache-misses,cache-references -- make\n  \
    rperf stat -p 1234 --duration 5 --per-thread\n  rperf stat -a --interval 1000 --duration 10\n  rperf stat -r 5 --csv -- ./bench"
)]
pub struct StatArgs {
    /// Events, comma-separated (see `rperf list`). Default: perf's set.
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    events: Vec<String>,
    /// Events counted together as one group (scheduled on the PMU at the same time).
    #[arg(long = "group", value_name = "EVENTS")]
    groups: Vec<String>,
    #[command(flatten)]
    target: crate::target_args::TargetArgs,
    /// Only count on these CPUs (e.g. 0-3,6).
    #[arg(long = "cpu", value_name = "LIST", value_parser = crate::target_args::parse_online_cpus)]
    cpu: Option<crate::target_args::CpuList>,
    /// Do not count new threads and child processes.
    #[arg(long = "no-inherit")]
    no_inherit: bool,
    /// Stop after SECONDS.
    #[arg(long = "duration", value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::target_args::parse_seconds)]
    duration: Option<Duration>,
    /// Print counts every MS milliseconds (each block holds that interval's counts).
    #[arg(short = 'I', long = "interval", value_name = "MS")]
    interval: Option<u64>,
    /// One line per thread (with -p, -t or --app).
    #[arg(long = "per-thread")]
    per_thread: bool,
    /// One line per CPU core (with -a or --cpu).
    #[arg(long = "per-core")]
    per_core: bool,
    /// Run the command N times; print means and relative standard deviations.
    #[arg(short = 'r', long = "repeat", value_name = "N", default_value_t = 1)]
    repeat: usize,
    /// Comma-separated output (perf's -x, layout).
    #[arg(long = "csv", conflicts_with = "json")]
    csv: bool,
    /// One JSON object per line.
    #[arg(long = "json")]
    json: bool,
    /// Write the counts to FILE instead of stderr.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
}

/// perf stat's default events, in its order; the bool marks events shown only where the
/// machine supports them.
const DEFAULT_EVENTS: &[(&str, bool)] = &[
    ("task-clock", false),
    ("context-switches", false),
    ("cpu-migrations", false),
    ("page-faults", false),
    ("cpu-cycles", false),
    ("stalled-cycles-frontend", true),
    ("stalled-cycles-backend", true),
    ("instructions", false),
    ("branch-instructions", false),
    ("branch-misses", false),
    ("cache-references", true),
    ("cache-misses", true),
];

/// One finished count of every event, for one row (all, a thread, or a core).
#[derive(Clone, Debug, Default)]
struct Row {
    label: Option<String>,
    readings: Vec<Option<Reading>>,
}

/// Counts per row key, summed over the counters that belong to it.
fn rows(counters: &Counters, readings: &[Reading], args: &StatArgs) -> Vec<Row> {
    let n = counters.events.len();
    let mut by_key: BTreeMap<String, Vec<Option<Reading>>> = BTreeMap::new();
    for (f, r) in counters.fds.iter().zip(readings) {
        let key = if args.per_thread {
            let pid = procfs::tgid_of(f.tid).unwrap_or(f.tid);
            let comm = procfs::comm_of(pid, f.tid).unwrap_or_else(|| "?".into());
            format!("{comm}-{}", f.tid)
        } else if args.per_core {
            core_label(f.cpu)
        } else {
            String::new()
        };
        let row = by_key.entry(key).or_insert_with(|| vec![None; n]);
        row[f.event].get_or_insert_with(Reading::default).add(r);
    }
    if by_key.is_empty() {
        by_key.insert(String::new(), vec![None; n]);
    }
    let mut out: Vec<Row> = by_key
        .into_iter()
        .map(|(k, readings)| Row { label: (!k.is_empty()).then_some(k), readings })
        .collect();
    // Breakdowns are sorted by the first event's count, largest first.
    if out.len() > 1 {
        out.sort_by(|a, b| {
            let v = |r: &Row| r.readings.first().copied().flatten().and_then(|x| x.scaled()).unwrap_or(0.0);
            v(b).partial_cmp(&v(a)).unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    out
}

fn core_label(cpu: i32) -> String {
    let topo = |f: &str| {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{f}"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "0".into())
    };
    format!("S{}-C{}", topo("physical_package_id"), topo("core_id"))
}

struct Printer<'a> {
    out: &'a mut dyn Write,
    csv: bool,
    json: bool,
}

impl Printer<'_> {
    /// Prints one block of rows; `runs` holds each row's readings per run (for -r).
    fn block(
        &mut self,
        names: &[String],
        runs: &[Vec<Row>],
        seconds: f64,
        timestamp: Option<f64>,
    ) -> std::io::Result<()> {
        let last = runs.last().expect("at least one run");
        for (ri, row) in last.iter().enumerate() {
            let mut values: BTreeMap<String, f64> = BTreeMap::new();
            for (ei, name) in names.iter().enumerate() {
                let per_run: Vec<f64> =
                    runs.iter().filter_map(|r| r.get(ri)?.readings[ei].and_then(|x| x.scaled())).collect();
                if !per_run.is_empty() {
                    values.insert(name.split(':').next().unwrap_or(name).to_string(), mean_rsd(&per_run).0);
                }
            }
            for (ei, name) in names.iter().enumerate() {
                let reading = row.readings[ei];
                let per_run: Vec<f64> =
                    runs.iter().filter_map(|r| r.get(ri)?.readings[ei].and_then(|x| x.scaled())).collect();
                self.line(
                    name,
                    reading,
                    &per_run,
                    &values,
                    seconds,
                    timestamp,
                    row.label.as_deref(),
                    runs.len() > 1,
                )?;
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn line(
        &mut self,
        name: &str,
        reading: Option<Reading>,
        per_run: &[f64],
        all: &BTreeMap<String, f64>,
        seconds: f64,
        timestamp: Option<f64>,
        label: Option<&str>,
        repeated: bool,
    ) -> std::io::Result<()> {
        let (mean, rsd) = mean_rsd(per_run);
        let counted = reading.and_then(|r| r.scaled()).is_some();
        let status = match reading {
            None => Some("<not supported>"),
            Some(_) if !counted => Some("<not counted>"),
            Some(_) => None,
        };
        let time = is_time(name);
        let l = Line {
            name,
            timestamp,
            label,
            status,
            time,
            shown: if time { mean / 1e6 } else { mean },
            unit: if time { "msec" } else { "" },
            running: reading.map_or(0, |r| r.running),
            running_pct: reading
                .filter(|r| r.enabled > 0)
                .map(|r| 100.0 * r.running as f64 / r.enabled as f64)
                .unwrap_or(0.0),
            metric: if status.is_none() { metric(name, mean, all, seconds) } else { None },
            rsd: repeated.then_some(rsd),
        };
        let text = if self.json {
            l.json()
        } else if self.csv {
            l.csv()
        } else {
            l.text()
        };
        writeln!(self.out, "{text}")
    }
}

/// One counter's line of output, in each format.
struct Line<'a> {
    name: &'a str,
    timestamp: Option<f64>,
    label: Option<&'a str>,
    /// `<not supported>` or `<not counted>`, in place of a value.
    status: Option<&'static str>,
    time: bool,
    shown: f64,
    unit: &'static str,
    running: u64,
    running_pct: f64,
    metric: Option<(f64, String)>,
    /// The relative standard deviation over repeated runs.
    rsd: Option<f64>,
}

impl Line<'_> {
    fn json(&self) -> String {
        let mut fields = Vec::new();
        if let Some(t) = self.timestamp {
            fields.push(format!("\"interval\" : {t:.9}"));
        }
        if let Some(l) = self.label {
            fields.push(format!("\"thread\" : \"{}\"", l.replace('"', "'")));
        }
        let value = self.status.map_or_else(|| format!("{:.6}", self.shown), str::to_string);
        fields.push(format!("\"counter-value\" : \"{value}\""));
        fields.push(format!("\"unit\" : \"{}\"", self.unit));
        fields.push(format!("\"event\" : \"{}\"", self.name));
        fields.push(format!("\"event-runtime\" : {}", self.running));
        fields.push(format!("\"pcnt-running\" : {:.2}", self.running_pct));
        if let Some((v, u)) = &self.metric {
            fields.push(format!("\"metric-value\" : \"{v:.6}\""));
            fields.push(format!("\"metric-unit\" : \"{u}\""));
        }
        if let Some(rsd) = self.rsd {
            fields.push(format!("\"variance\" : {rsd:.2}"));
        }
        format!("{{{}}}", fields.join(", "))
    }

    fn csv(&self) -> String {
        let mut cols = Vec::new();
        if let Some(t) = self.timestamp {
            cols.push(format!("{t:.9}"));
        }
        if let Some(l) = self.label {
            cols.push(l.to_string());
        }
        cols.push(self.status.map_or_else(|| format!("{:.2}", self.shown), str::to_string));
        cols.push(self.unit.to_string());
        cols.push(self.name.to_string());
        // With -r, perf's column of the relative standard deviation over the runs.
        if let Some(rsd) = self.rsd {
            cols.push(format!("{rsd:.2}%"));
        }
        cols.push(self.running.to_string());
        cols.push(format!("{:.2}", self.running_pct));
        cols.push(self.metric.as_ref().map_or(String::new(), |(v, _)| format!("{v:.2}")));
        cols.push(self.metric.as_ref().map_or(String::new(), |(_, u)| u.clone()));
        cols.join(",")
    }

    fn text(&self) -> String {
        let mut s = String::new();
        if let Some(t) = self.timestamp {
            s.push_str(&format!("{t:>14.9} "));
        }
        if let Some(l) = self.label {
            s.push_str(&format!("{l:<20} "));
        }
        let value =
            self.status.map_or_else(|| grouped(self.shown, if self.time { 2 } else { 0 }), str::to_string);
        s.push_str(&format!("{value:>18} {:<5}{:<26}", self.unit, self.name));
        if let Some((v, u)) = &self.metric {
            s.push_str(&format!(" #  {v:>8.3} {u}"));
        }
        if let (Some(rsd), None) = (self.rsd, self.status) {
            s.push_str(&format!("  ( +- {rsd:.2}% )"));
        }
        if self.status.is_none() && self.running_pct < 99.995 {
            s.push_str(&format!("  ({:.2}%)", self.running_pct));
        }
        s.trim_end().to_string()
    }
}

fn event_groups(a: &StatArgs) -> anyhow::Result<Vec<Vec<rperf_record::EventSpec>>> {
    let mut groups = Vec::new();
    for e in &a.events {
        groups.extend(parse_event_list(e)?.into_iter().map(|s| vec![s]));
    }
    for g in &a.groups {
        groups.push(parse_event_list(g)?);
    }
    if groups.is_empty() {
        groups = DEFAULT_EVENTS
            .iter()
            .map(|(n, optional)| (parse_event(n).expect("built-in event"), optional))
            .filter(|(spec, optional)| !**optional || rperf_record::event_supported(spec).is_ok())
            .map(|(spec, _)| vec![spec])
            .collect();
    }
    Ok(groups)
}

struct RunOutcome {
    rows: Vec<Row>,
    seconds: f64,
    exit: Option<(i32, f64, f64)>,
}

/// Waits for app `name` to start, as `record --app` and simpleperf's `stat --app` do; false
/// when Ctrl-C stops the wait first.
fn wait_for_app(name: &str) -> bool {
    launch::install_signal_handlers();
    launch::reset_stop_signal();
    let waiting = || eprintln!("rperf: waiting for app {} to start (Ctrl-C to stop)", printable(name));
    let started = rperf_record::target::AppWatcher::new(name).wait(|| launch::stop_signal().0 != 0, waiting);
    if !started {
        eprintln!("rperf: stopped before app {} started; nothing was counted", printable(name));
    }
    started
}

/// Prints the counters' notes, once however many runs -r asks for.
fn say_once(notes: &[String]) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        notes.iter().for_each(|n| eprintln!("rperf: {}", printable(n)));
    }
}

/// Counts once; prints interval blocks as they come.
fn run_once(
    opts: &CountOptions,
    a: &StatArgs,
    printer: &mut Printer<'_>,
    names: &[String],
) -> anyhow::Result<RunOutcome> {
    // Counting ends when the processes, threads or app processes it counts have exited.
    let watched = match &opts.target {
        Target::Processes(p) | Target::Threads(p) => p.clone(),
        Target::App(name) => rperf_record::target::app_processes(name),
        _ => Vec::new(),
    };
    let mut counters = Counters::open(opts)?;
    say_once(&counters.notes);
    launch::install_signal_handlers();
    launch::reset_stop_signal();
    let start = Instant::now();
    counters.start()?;
    let deadline = a.duration.map(|d| start + d);
    let interval = a.interval.map(Duration::from_millis);
    let mut next_tick = interval.map(|i| start + i);
    let mut previous = vec![Reading::default(); counters.fds.len()];
    let mut exit = None;
    loop {
        let now = Instant::now();
        let mut wake = now + Duration::from_millis(20);
        for t in [deadline, next_tick].into_iter().flatten() {
            wake = wake.min(t);
        }
        std::thread::sleep(wake.saturating_duration_since(now));
        if let Some(child) = &counters.child {
            if let Some(e) = child.try_wait_with_times() {
                exit = Some(e);
                break;
            }
        }
        if launch::stop_signal().0 != 0 || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        if let (Some(tick), Some(iv)) = (next_tick, interval) {
            if Instant::now() >= tick {
                let now = counters.read();
                let delta: Vec<Reading> = now.iter().zip(&previous).map(|(n, p)| n.since(p)).collect();
                let rows = rows(&counters, &delta, a);
                printer.block(names, &[rows], iv.as_secs_f64(), Some(start.elapsed().as_secs_f64()))?;
                previous = now;
                next_tick = Some(tick + iv);
            }
        }
        if !watched.is_empty()
            && watched.iter().all(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
        {
            break;
        }
    }
    let readings = counters.read();
    let seconds = start.elapsed().as_secs_f64();
    if let (Some(child), None) = (&counters.child, exit) {
        let (sig, _, from_user) = launch::stop_signal();
        if sig == 0 {
            child.kill(libc::SIGTERM);
        } else if from_user {
            child.kill(sig);
        }
        exit = Some(child.wait_with_times());
    }
    let final_rows = if let (Some(iv), Some(tick)) = (interval, next_tick) {
        let delta: Vec<Reading> = readings.iter().zip(&previous).map(|(n, p)| n.since(p)).collect();
        let rows = rows(&counters, &delta, a);
        // The last, possibly shorter, interval (perf prints it too), unless it is empty.
        let last = iv.saturating_sub(tick.saturating_duration_since(Instant::now()));
        if last >= Duration::from_millis(5) {
            printer.block(names, std::slice::from_ref(&rows), last.as_secs_f64(), Some(seconds))?;
        }
        rows
    } else {
        rows(&counters, &readings, a)
    };
    Ok(RunOutcome { rows: final_rows, seconds, exit })
}

/// Runs `rperf stat`.
pub fn run(a: StatArgs) -> anyhow::Result<i32> {
    let target = a.target.resolve("stat")?;
    check_modes(&a, &target)?;
    let groups = event_groups(&a)?;
    let names: Vec<String> = groups.iter().flatten().map(|s| s.display_name()).collect();
    let cpus = a.cpu.clone().map(|c| c.0);
    let per_cpu = a.per_core && cpus.is_none();
    let opts = CountOptions {
        target: target.clone(),
        groups,
        cpus: if per_cpu { Some(rperf_record::sys::online_cpus()) } else { cpus },
        inherit: !a.no_inherit,
        per_thread: a.per_thread,
    };
    let mut out: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(crate::output_file::OutputFile::direct(p)?),
        None => Box::new(std::io::stderr()),
    };
    let mut printer = Printer { out: &mut *out, csv: a.csv, json: a.json };
    let text = !a.csv && !a.json;
    if text && a.interval.is_some() {
        writeln!(
            printer.out,
            "#{:>14} {}{:>18} unit events",
            "time",
            if a.per_thread || a.per_core { format!("{:<21}", "thread/core") } else { String::new() },
            "counts"
        )?;
    }
    if let Target::App(name) = &target {
        if !wait_for_app(name) {
            return Ok(130);
        }
    }
    let mut runs = Vec::new();
    let mut seconds = Vec::new();
    let mut exit_code = 0;
    let mut times = (0.0, 0.0);
    for _ in 0..a.repeat {
        let r = run_once(&opts, &a, &mut printer, &names)?;
        if let Some((code, user, sys)) = r.exit {
            exit_code = if exit_code == 0 { code } else { exit_code };
            times = (user, sys);
        }
        seconds.push(r.seconds);
        runs.push(r.rows);
        if launch::stop_signal().0 != 0 {
            break;
        }
    }
    let (elapsed, elapsed_rsd) = mean_rsd(&seconds);
    if text && a.interval.is_none() {
        let runs_note = if a.repeat > 1 { format!(" ({} runs)", runs.len()) } else { String::new() };
        writeln!(printer.out, "\n Performance counter stats for {}{runs_note}:\n", described(&target))?;
    }
    if a.interval.is_none() {
        printer.block(&names, &runs, elapsed, None)?;
    }
    if text {
        if a.repeat > 1 {
            writeln!(
                printer.out,
                "\n {elapsed:>14.9} +- {:.9} seconds time elapsed  ( +- {elapsed_rsd:.2}% )",
                elapsed * elapsed_rsd / 100.0
            )?;
        } else {
            writeln!(printer.out, "\n {elapsed:>14.9} seconds time elapsed")?;
        }
        if matches!(target, Target::Command(_)) {
            writeln!(printer.out, "\n {:>14.9} seconds user\n {:>14.9} seconds sys", times.0, times.1)?;
        }
        writeln!(printer.out)?;
    }
    printer.out.flush()?;
    Ok(exit_code)
}

/// Refuses modes that do not fit the target.
fn check_modes(a: &StatArgs, target: &Target) -> anyhow::Result<()> {
    if a.per_thread && matches!(target, Target::Command(_)) {
        bail!("--per-thread needs running threads to list: use -p PID, -t TID or --app NAME");
    }
    if a.per_core && !matches!(target, Target::SystemWide) && a.cpu.is_none() {
        bail!("--per-core needs per-CPU counters: use -a or --cpu LIST");
    }
    if a.repeat == 0 || (a.repeat > 1 && !matches!(target, Target::Command(_))) {
        bail!("-r N repeats a launched command: give N >= 1 and a command");
    }
    if a.interval.is_some_and(|i| i < 10) {
        bail!("--interval must be at least 10 ms");
    }
    Ok(())
}

/// What was counted, as perf's summary names it.
fn described(target: &Target) -> String {
    let ids = |v: &[i32]| v.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
    match target {
        Target::Command(argv) => format!("'{}'", argv.join(" ")),
        Target::Processes(p) => format!("process id '{}'", ids(p)),
        Target::Threads(t) => format!("thread id '{}'", ids(t)),
        Target::SystemWide => "'system wide'".into(),
        Target::App(n) => format!("app '{n}'"),
    }
}
