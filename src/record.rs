//! `rperf record`: command-line options to `rperf_record::RecordOptions`, and the summary.

use crate::log::{say, Level};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use rperf_record::{
    parse_event, record, CallGraph, Rate, RecordOptions, Recorder, StopReason, Target, DEFAULT_DWARF_STACK,
};

/// Sample a command, processes, threads, an app or the whole system into perf.data.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  rperf record -g -- ./server --port 8080\n  \
    rperf record --app com.example -g dwarf --duration 10\n  \
    rperf record -p 1234 -F 999 -g fp -o server.data\n  rperf record -a -e sched:sched_switch -- sleep 1")]
pub struct RecordArgs {
    /// Events to sample, comma-separated (see `rperf list`), each with optional :u/:k.
    /// Default: cpu-cycles, or cpu-clock where the CPU's PMU is not available.
    #[arg(short = 'e', long = "event", value_name = "EVENTS")]
    events: Vec<String>,
    /// Samples per second per thread (default 4000; tracepoints default to every event).
    #[arg(short = 'F', long = "freq", visible_short_alias = 'f', value_name = "FREQ")]
    freq: Option<u64>,
    /// Sample once every PERIOD events.
    #[arg(short = 'c', long = "count", value_name = "PERIOD", conflicts_with = "freq")]
    period: Option<u64>,
    /// Call graphs: `fp` (frame pointers) or `dwarf[,STACK_SIZE]`. `-g` alone means dwarf.
    #[arg(long = "call-graph", value_name = "MODE")]
    call_graph: Option<String>,
    /// Record where threads wait as well as where they run: cpu-clock samples plus a sample
    /// with its call graph at every switch-out (sched:sched_switch). Implies -g when no call
    /// graph mode is given.
    #[arg(long = "trace-offcpu")]
    trace_offcpu: bool,
    #[command(flatten)]
    target: crate::target_args::TargetArgs,
    /// Only sample on these CPUs (e.g. 0-3,6).
    #[arg(long = "cpu", value_name = "LIST", value_parser = crate::target_args::parse_online_cpus)]
    cpu: Option<crate::target_args::CpuList>,
    /// Do not follow new threads and child processes.
    #[arg(long = "no-inherit")]
    no_inherit: bool,
    /// Stop after SECONDS (fractions allowed).
    #[arg(long = "duration", value_name = "SECONDS", allow_negative_numbers = true, value_parser = crate::target_args::parse_seconds)]
    duration: Option<Duration>,
    /// Output file, created readable by its owner only; an existing file (or link) there is
    /// moved to FILE.old when recording starts.
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "perf.data")]
    output: PathBuf,
    /// Ring-buffer data pages per CPU (a power of two).
    #[arg(short = 'm', long = "mmap-pages", value_name = "PAGES", value_parser = crate::target_args::parse_pages)]
    mmap_pages: Option<usize>,
    /// Stop when the recorded data reaches SIZE (e.g. 500M, 2G).
    #[arg(long = "size-limit", value_name = "SIZE")]
    size_limit: Option<String>,
    /// Start sampling MS milliseconds after recording starts (after the command's exec).
    #[arg(short = 'D', long = "delay", value_name = "MS")]
    delay: Option<u64>,
    /// Take `enable`, `disable`, `stop` and `ping` commands, one per line, from the fifo CTL,
    /// answering `ack` on the fifo ACK (as perf's --control fifo:CTL,ACK).
    #[arg(long = "control", value_name = "fifo:CTL[,ACK]")]
    control: Option<String>,
    /// Leave out rperf's own samples (`-a` samples rperf too).
    #[arg(long = "exclude-perf")]
    exclude_perf: bool,
    /// Keep the FORK, COMM, MMAP and EXIT records of processes that began and ended without
    /// a sample (left out by default: no profile shows them).
    #[arg(long = "all-task-events")]
    all_task_events: bool,
    /// Don't read the GDB JIT interface of the recorded processes (LLVM's JIT, ART, Mono...
    /// register symbol files of their JIT code there, which rperf copies into the recording).
    #[arg(long = "no-jit-interface")]
    no_jit_interface: bool,
    /// The largest JIT symbol file copied (bytes, or with K, M, G); larger ones are left out
    /// and counted.
    #[arg(long = "jit-max-image", value_name = "SIZE", default_value = "16M")]
    jit_max_image: String,
    /// The most bytes of JIT symbol files, symbol maps and jitdumps copied in all; the rest
    /// are left out and counted.
    #[arg(long = "jit-max-total", value_name = "SIZE", default_value = "256M")]
    jit_max_total: String,
    /// The largest JIT symbol map (/tmp/perf-PID.map) or jitdump copied into the recording;
    /// larger ones are left out and counted.
    #[arg(long = "jit-max-map", value_name = "SIZE", default_value = "64M")]
    jit_max_map: String,
    /// With DWARF call graphs, keep each sample's registers and stack copy in the file for
    /// `rperf report` to unwind (on another machine, with other binaries), instead of unwinding
    /// while recording (`--post-unwind`, the default).
    #[arg(long = "no-post-unwind")]
    no_post_unwind: bool,
    /// Unwind DWARF stacks while recording and store call chains (the default).
    #[arg(long = "post-unwind", conflicts_with = "no_post_unwind")]
    post_unwind: bool,
    /// The clock samples are stamped with: monotonic (the default), monotonic_raw, realtime,
    /// boottime, tai, or a clock number. The file records it with one moment on the wall
    /// clock, so `perf script -F tod` shows the time of day.
    #[arg(short = 'k', long = "clockid", value_name = "CLOCK", default_value = "monotonic")]
    clockid: String,
    /// When --duration, --size-limit or a stop command ends the recording and so the launched
    /// command, exit with the command's exit code (143 for its SIGTERM) rather than 0.
    #[arg(long = "use-cmd-exit-code")]
    use_cmd_exit_code: bool,
    /// Take `pause` and `resume` on stdin, answering `ok` on stdout (`started` once recording
    /// runs); stop at the end of stdin. simpleperf's option, which its app API
    /// (`ProfileSession`) drives, so that apps record a chosen code path with rperf.
    #[arg(long = "stdio-controls-profiling", conflicts_with = "control")]
    stdio_controls: bool,
    /// Read tracepoint ids from FILE where tracefs cannot be read (an app's user on Android):
    /// lines of `system:name id`, as `rperf list tracepoint --ids` prints them.
    #[arg(long = "tracepoint-events", value_name = "FILE")]
    tracepoint_events: Option<PathBuf>,
    /// Messages under LEVEL are left out: verbose, debug, info (the default), warning, error
    /// or fatal (simpleperf's levels).
    #[arg(long = "log", value_name = "LEVEL", value_parser = crate::log::parse_level)]
    log: Option<crate::log::Level>,
    /// Write messages to Android's log (`adb logcat -s rperf`) instead of stderr.
    #[arg(long = "log-to-android-buffer")]
    log_to_android_buffer: bool,
    /// Running in the app's context already: as the app's user, started by rperf through
    /// run-as, by simpleperf_app_runner or by the app itself (simpleperf's option).
    #[arg(long = "in-app", hide = true)]
    in_app: bool,
    /// Write the recording into this open file descriptor.
    #[arg(long = "out-fd", hide = true, requires = "in_app")]
    out_fd: Option<i32>,
    /// Stop when this file descriptor becomes readable or is closed.
    #[arg(long = "stop-fd", visible_alias = "stop-signal-fd", hide = true, requires = "in_app")]
    stop_fd: Option<i32>,
}

/// Rewrites simpleperf-style `-g [fp|dwarf[,N]]` of `rperf record` and `rperf top` into
/// `--call-graph=...`, so that `-g` alone (followed by the command) means DWARF for both, as in
/// simpleperf: frame pointers give broken callers through code built without them (most -O2
/// builds), and `top -g` means what `record -g` means. Only the subcommand counts:
/// `rperf report -i record -g` keeps its `-g`.
pub fn expand_short_g(args: Vec<String>) -> Vec<String> {
    if !matches!(args.get(1).map(String::as_str), Some("record" | "top")) {
        return args;
    }
    let alone = "dwarf";
    let mut out = Vec::with_capacity(args.len());
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        if a == "--" {
            out.push(a);
            out.extend(it);
            break;
        }
        if a == "-g" {
            let next_is_mode =
                it.peek().is_some_and(|n| n == "fp" || n == "dwarf" || n.starts_with("dwarf,") || n == "lbr");
            let mode = if next_is_mode { it.next().unwrap() } else { alone.into() };
            out.push(format!("--call-graph={mode}"));
            continue;
        }
        out.push(a);
    }
    out
}

pub fn parse_call_graph(mode: &str) -> anyhow::Result<CallGraph> {
    let (kind, size) = match mode.split_once(',') {
        Some((k, s)) => (k, Some(s)),
        None => (mode, None),
    };
    match kind {
        "fp" if size.is_none() => Ok(CallGraph::FramePointer),
        "dwarf" => {
            let stack_size = match size {
                None => DEFAULT_DWARF_STACK,
                Some(s) => {
                    let n: u32 = s.parse().with_context(|| format!("bad DWARF stack size '{s}'"))?;
                    if n == 0 || n > rperf_record::sys::MAX_STACK_USER {
                        bail!("DWARF stack size must be between 8 and {}", rperf_record::sys::MAX_STACK_USER);
                    }
                    n.next_multiple_of(8)
                }
            };
            Ok(CallGraph::Dwarf { stack_size })
        }
        _ => bail!("unknown call-graph mode '{mode}': use fp or dwarf[,STACK_SIZE]"),
    }
}

/// Parses sizes like `4096`, `500K`, `500M`, `2G`.
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M') => (&s[..s.len() - 1], 1 << 20),
        Some('G') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    let n: u64 = num.parse().with_context(|| format!("bad size '{s}' (e.g. 500M, 2G)"))?;
    n.checked_mul(mult).context("size too large")
}

fn options(a: RecordArgs, argv: &[String]) -> anyhow::Result<RecordOptions> {
    let target = a.target.resolve("record")?;
    let mut events = crate::target_args::parse_events(&a.events)?;
    let mut call_graph_mode = a.call_graph.clone();
    if a.trace_offcpu {
        if events.iter().any(|e| e.name != "cpu-clock") {
            bail!("--trace-offcpu samples cpu-clock and sched:sched_switch; leave out -e (or give -e cpu-clock)");
        }
        events = vec![parse_event("cpu-clock")?, parse_event("sched:sched_switch")?];
        call_graph_mode.get_or_insert_with(|| "dwarf".into());
    }
    let rate = match (a.freq, a.period) {
        (Some(f), _) => Some(Rate::Frequency(f)),
        (_, Some(c)) => Some(Rate::Period(c)),
        _ => None,
    };
    let call_graph = call_graph_mode.as_deref().map(parse_call_graph).transpose()?.unwrap_or(CallGraph::None);
    let cpus = a.cpu.map(|c| c.0);
    let duration = a.duration;
    let control = match a.control.as_deref() {
        None => None,
        Some(c) => {
            let fifos = c
                .strip_prefix("fifo:")
                .with_context(|| format!("--control {c}: give fifo:CTL[,ACK], two fifos made with mkfifo"))?;
            let (ctl, ack) = match fifos.split_once(',') {
                Some((c, a)) => (PathBuf::from(c), Some(PathBuf::from(a))),
                None => (PathBuf::from(fifos), None),
            };
            Some((ctl, ack))
        }
    };
    if a.out_fd.is_none() {
        check_output_writable(&a.output)?;
    }
    Ok(RecordOptions {
        events,
        rate,
        call_graph,
        cpus,
        inherit: !a.no_inherit,
        duration,
        mmap_pages: a.mmap_pages,
        size_limit: a.size_limit.as_deref().map(parse_size).transpose()?,
        trace_offcpu: a.trace_offcpu,
        cmdline: argv.to_vec(),
        out_fd: a.out_fd,
        stop_fd: a.stop_fd,
        delay: a.delay.map(Duration::from_millis),
        control,
        stdio_controls: a.stdio_controls,
        exclude_perf: a.exclude_perf,
        all_task_events: a.all_task_events,
        jit_interface: !a.no_jit_interface,
        jit_limits: rperf_record::JitLimits {
            image: parse_size(&a.jit_max_image).context("--jit-max-image")?,
            total: parse_size(&a.jit_max_total).context("--jit-max-total")?,
            map: parse_size(&a.jit_max_map).context("--jit-max-map")?,
        },
        post_unwind: !a.no_post_unwind,
        clockid: rperf_record::parse_clockid(&a.clockid).map_err(anyhow::Error::msg)?,
        ..RecordOptions::new(target, a.output)
    })
}

/// Fails as starting it would when `program` (a path, or a name looked up in PATH) names no
/// file that can be run.
fn check_runnable(program: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let runnable =
        |p: &std::path::Path| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    let found = if program.contains('/') {
        runnable(std::path::Path::new(program))
    } else {
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path).any(|dir| runnable(&dir.join(program)))
    };
    if !found {
        let why = match std::path::Path::new(program).metadata() {
            Ok(m) if m.is_dir() => "it is a directory".to_string(),
            Ok(_) if program.contains('/') => "it is not executable (chmod +x)".to_string(),
            _ if program.contains('/') => "no such file".to_string(),
            _ => "not found in PATH".to_string(),
        };
        bail!("cannot run '{}': {why}", rperf_symbols::text::printable(program));
    }
    Ok(())
}

fn check_output_writable(path: &std::path::Path) -> anyhow::Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    if !dir.is_dir() {
        bail!("cannot write {}: directory {} does not exist", path.display(), dir.display());
    }
    Ok(())
}

/// Runs `rperf record`; returns the launched command's exit code (0 otherwise).
pub fn run(a: RecordArgs, argv: &[String]) -> anyhow::Result<i32> {
    if a.log.is_some() || a.log_to_android_buffer {
        if let Some(why) = crate::log::configure(a.log.unwrap_or(Level::Info), a.log_to_android_buffer) {
            say(Level::Warning, &format!("rperf: {why}"));
        }
    }
    if let Some(file) = &a.tracepoint_events {
        rperf_record::event::use_tracepoint_ids_from(file.clone());
    }
    // An app of another user is recorded as that user, through run-as.
    if let (Some(pkg), false) = (&a.target.app, a.in_app) {
        if let crate::run_as::Plan::RunAs(run_as) = crate::run_as::plan(pkg)? {
            check_output_writable(&a.output)?;
            return crate::run_as::record(&run_as, pkg, argv, &a.output);
        }
    }
    let system_wide_with_command = a.target.system_wide_with_command();
    let command = a.target.command.clone();
    // Before the events are planned: a command that cannot run is the one thing to say.
    if let Some(program) = command.first() {
        check_runnable(program)?;
    }
    let use_cmd_exit_code = a.use_cmd_exit_code;
    let mut opts = options(a, argv)?;
    if system_wide_with_command {
        // `rperf record -a -- sleep 5`: profile everything while the command runs.
        opts.target = Target::SystemWide;
        return run_system_wide_with(opts, command);
    }
    let summary = record(&opts, &mut |note| say(Level::Info, &format!("rperf: {note}")))?;
    if let (StopReason::AppExited, Target::App(name)) = (&summary.stop, &opts.target) {
        say(Level::Info, &format!("rperf: every process of app {name} exited; recording stopped"));
    }
    report_summary(&opts, &summary);
    match &summary.stop {
        StopReason::WriteError(e) => {
            let text = format!(
                "rperf: recording stopped early: {e}; {} holds the {} samples written before",
                opts.output.display(),
                summary.samples_written
            );
            say(Level::Error, &text);
            Ok(summary.exit_code.filter(|c| *c != 0).unwrap_or(1))
        }
        StopReason::Duration | StopReason::SizeLimit | StopReason::Requested => {
            let planned = match &summary.stop {
                StopReason::Duration => "--duration elapsed",
                StopReason::SizeLimit => "--size-limit was reached",
                _ => "a stop was asked for",
            };
            match (summary.exit_code, &opts.target) {
                (Some(code), Target::Command(argv)) => {
                    let stopped = match code {
                        c if c > 128 => format!("was stopped (signal {})", c - 128),
                        c => format!("exited with code {c}"),
                    };
                    let exit = if use_cmd_exit_code { code } else { 0 };
                    let hint = if use_cmd_exit_code {
                        ""
                    } else {
                        " (--use-cmd-exit-code gives the command's code)"
                    };
                    let text = format!(
                        "rperf: {planned}: the command {} {stopped} as recording ended; rperf exits with {exit}{hint}",
                        &argv[0]
                    );
                    say(Level::Info, &text);
                    Ok(exit)
                }
                _ => Ok(0),
            }
        }
        _ => Ok(summary.exit_code.unwrap_or(0)),
    }
}

fn run_system_wide_with(opts: RecordOptions, command: Vec<String>) -> anyhow::Result<i32> {
    let mut child = std::process::Command::new(&command[0])
        .args(&command[1..])
        .spawn()
        .with_context(|| format!("cannot run '{}'", command[0]))?;
    // Everything is recorded until the command exits.
    let recording =
        match Recorder::start(opts.clone(), Box::new(|note| say(Level::Info, &format!("rperf: {note}")))) {
            Ok(r) => r,
            Err(e) => {
                child.kill().ok();
                child.wait().ok();
                return Err(e.into());
            }
        };
    let status = child.wait();
    recording.stop();
    let summary = recording.summary()?;
    report_summary(&opts, &summary);
    Ok(status?.code().unwrap_or(0))
}

fn report_summary(opts: &RecordOptions, s: &rperf_record::RecordSummary) {
    let total = s.samples + s.lost;
    let pct = if total > 0 { 100.0 * s.lost as f64 / total as f64 } else { 0.0 };
    say(Level::Info, &format!("Samples recorded: {}. Samples lost: {} ({:.2}%)", s.samples, s.lost, pct));
    if s.unwound > 0 {
        say(
            Level::Info,
            &format!(
                "Unwound while recording: {} samples, {} ({:.2}%) stopped before the stack's end",
                s.unwound,
                s.unwind_incomplete,
                100.0 * s.unwind_incomplete as f64 / s.unwound as f64
            ),
        );
    }
    if s.cut_stacks > 0 {
        let text = format!(
            "rperf: {} samples had their stack copies cut to 1 KiB while the ring buffers were more than \
             half full (their call chains may end early)",
            s.cut_stacks
        );
        say(Level::Warning, &text);
    }
    if s.lost_sideband > 0 {
        let text = format!(
            "rperf: {} mmap/comm/fork/exit records were lost; some samples may be attributed to the wrong \
             binary or thread",
            s.lost_sideband
        );
        say(Level::Warning, &text);
    }
    if s.lost > 0 {
        say(
            Level::Warning,
            "rperf: to lose fewer samples, give the ring buffers more pages (-m), sample less often (-F), \
             or copy less stack per sample (-g dwarf,SIZE)",
        );
    }
    say(Level::Info, &format!("rperf: wrote {} ({:.1} MB)", opts.output.display(), s.bytes as f64 / 1e6));
}
