//! `rperf report`: command-line options to `rperf_report::ReportOptions`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use rperf_report::{CallOrder, Filters, Format, NameStyle, OffCpuMode, ReportOptions, SortKey, StackPrefix};

/// Report a recording (from rperf, Linux perf or simpleperf): overheads by command, process,
/// thread, shared object and function, with call graphs.
#[derive(Args, Debug)]
#[command(after_help = "Examples:\n  rperf report\n  rperf report --sort dso,symbol\n  \
    rperf report -g caller --percent-limit 1\n  rperf report -i app.data --symfs ./binaries --children\n  \
    rperf report -o profile.html\n  rperf report -o cpu.pb.gz && go tool pprof -top cpu.pb.gz\n  \
    rperf report --diff before.data -i after.data\n  \
    rperf report --diff before.data -i after.data -o diff.svg\n\n\
    Reports keep the running kernel's symbols (per boot), inflated debug sections (by build id)\n\
    and what debug info said of the addresses they named (by debug file) in $RPERF_CACHE_DIR,\n\
    else $XDG_CACHE_HOME/rperf, else ~/.cache/rperf, for the reports after them; deleting that\n\
    folder is safe.")]
pub struct ReportArgs {
    /// The recording.
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    input: PathBuf,
    /// Write the report here instead of stdout.
    #[arg(short = 'o', long = "output")]
    output: Option<PathBuf>,
    /// Sort keys, comma-separated: comm, pid, tid, dso, symbol, srcline (file:line of the
    /// sampled address, from DWARF), vaddr_in_file (the address in its binary).
    #[arg(short = 's', long = "sort", default_value = "comm,pid,tid,dso,symbol")]
    sort: String,
    /// Children (inclusive) and Self columns; on with -g, as in simpleperf and perf.
    #[arg(long = "children")]
    children: bool,
    /// With -g: only Self, each entry's call graph made of the samples taken in it.
    #[arg(long = "no-children", conflicts_with = "children")]
    no_children: bool,
    /// Call graph under each entry: caller (default; what the entry calls) or callee (who
    /// calls it). Each node's share is of its parent, as simpleperf prints it.
    #[arg(short = 'g', num_args = 0..=1, default_missing_value = "caller", value_name = "ORDER")]
    call_graph: Option<String>,
    /// Report the taken branches of a recording made with branch stacks (simpleperf's or perf's
    /// `record -b`/`-j`): each is an entry at its target, and the sort keys dso_from,
    /// symbol_from, dso_to and symbol_to name its ends. Text output only.
    #[arg(short = 'b', long = "branch-stack")]
    branches: bool,
    /// In the text report, print at most N levels of call graph under each entry (as simpleperf
    /// does; the shares stay those of the whole stacks); in the other formats, keep at most N
    /// frames per sample, innermost first (as perf does).
    #[arg(long = "max-stack", value_name = "N")]
    max_stack: Option<usize>,
    /// Hide entries and call-graph nodes under P percent.
    #[arg(long = "percent-limit", value_name = "P", default_value_t = 0.0, allow_negative_numbers = true, value_parser = crate::target_args::parse_percent)]
    percent_limit: f64,
    /// Print every call graph whole; by default nodes under 0.5% are left out, and the call
    /// graph of an entry that its only caller's graph already shows is skipped.
    #[arg(long = "full-callgraph")]
    full_callgraph: bool,
    /// Only these commands (`,`- or `;`-separated; may be repeated).
    #[arg(long = "comms", action = clap::ArgAction::Append)]
    comms: Vec<String>,
    /// Only these processes (`,`- or `;`-separated; may be repeated; `--include-pid` is the
    /// same).
    #[arg(long = "pids", visible_alias = "include-pid", action = clap::ArgAction::Append)]
    pids: Vec<String>,
    /// Only these threads (`,`- or `;`-separated; may be repeated; `--include-tid` is the same).
    #[arg(long = "tids", visible_alias = "include-tid", action = clap::ArgAction::Append)]
    tids: Vec<String>,
    /// Only samples in these shared objects (path or file name, `,`- or `;`-separated; may be
    /// repeated). With --children, samples that have them anywhere in the call chain.
    #[arg(long = "dsos", action = clap::ArgAction::Append)]
    dsos: Vec<String>,
    /// Only samples in these functions (`;`-separated, as C++ names hold commas; may be
    /// repeated), named with or without C++ parameters. With --children, samples that have
    /// them anywhere in the call chain.
    #[arg(long = "symbols", action = clap::ArgAction::Append)]
    symbols: Vec<String>,
    /// Only samples taken in START,END: seconds after the recording's first sample (`2.5,4`),
    /// or timestamps of the recording's clock in nanoseconds (`683802777472700ns,…`, as JSON
    /// output and simpleperf's filter files give them); either end may be left out (`2.5,`).
    #[arg(long = "time", value_name = "START,END")]
    time: Option<String>,
    /// Only samples taken on these CPUs (e.g. 0-3,6; may be repeated).
    #[arg(long = "cpu", action = clap::ArgAction::Append)]
    cpu: Vec<String>,
    /// Leave out these processes (`,`-separated; may be repeated).
    #[arg(long = "exclude-pid", value_name = "PIDS", action = clap::ArgAction::Append)]
    exclude_pid: Vec<String>,
    /// Leave out these threads (`,`-separated; may be repeated).
    #[arg(long = "exclude-tid", value_name = "TIDS", action = clap::ArgAction::Append)]
    exclude_tid: Vec<String>,
    /// Only processes whose name contains a match of REGEX (may be repeated: any of them).
    #[arg(long = "include-process-name", value_name = "REGEX", action = clap::ArgAction::Append)]
    include_process_name: Vec<String>,
    /// Leave out processes whose name contains a match of REGEX (may be repeated).
    #[arg(long = "exclude-process-name", value_name = "REGEX", action = clap::ArgAction::Append)]
    exclude_process_name: Vec<String>,
    /// Only threads whose name contains a match of REGEX (may be repeated: any of them).
    #[arg(long = "include-thread-name", value_name = "REGEX", action = clap::ArgAction::Append)]
    include_thread_name: Vec<String>,
    /// Leave out threads whose name contains a match of REGEX (may be repeated).
    #[arg(long = "exclude-thread-name", value_name = "REGEX", action = clap::ArgAction::Append)]
    exclude_thread_name: Vec<String>,
    /// Only samples in the time ranges of FILE (simpleperf's filter file: GLOBAL_BEGIN,
    /// PROCESS_BEGIN PID, THREAD_BEGIN TID and their _END lines, in ns of the clock a `CLOCK`
    /// line names, monotonic if none; it must be the recording's clock).
    #[arg(long = "filter-file", value_name = "FILE")]
    filter_file: Option<String>,
    /// Count threads whose names match the same REGEX as one thread, named REGEX (a thread
    /// pool as one); may be repeated.
    #[arg(long = "aggregate-threads", value_name = "REGEX", num_args = 1.., action = clap::ArgAction::Append)]
    aggregate_threads: Vec<String>,
    /// De-obfuscate Java and Kotlin names with this ProGuard/R8 mapping.txt (may be repeated).
    #[arg(long = "proguard-mapping-file", value_name = "FILE", action = clap::ArgAction::Append)]
    proguard_mapping_file: Vec<PathBuf>,
    /// Look binaries up here first: by recorded path, by file name, and through build_id_list
    /// (may be repeated: the folders are searched in order).
    #[arg(long = "symfs", value_name = "DIR", action = clap::ArgAction::Append)]
    symfs: Vec<PathBuf>,
    /// Look binaries up by build id anywhere under DIR, searched recursively (an NDK build's
    /// obj folder, a folder of unstripped libraries); may be repeated.
    #[arg(long = "symdir", value_name = "DIR", action = clap::ArgAction::Append)]
    symdirs: Vec<PathBuf>,
    #[command(flatten)]
    debuginfod: crate::debuginfod_args::DebuginfodArgs,
    /// Source files for the HTML report's code panel: looked for under DIR by their recorded
    /// path or its trailing components (may be repeated). Without it, recorded source paths
    /// owned by this user or root are read.
    #[arg(long = "source-dir", value_name = "DIR", action = clap::ArgAction::Append)]
    source_dirs: Vec<PathBuf>,
    /// Kernel symbols from this file instead of the recording's.
    #[arg(long = "kallsyms", value_name = "FILE")]
    kallsyms: Option<PathBuf>,
    /// Add a Sample (count) column.
    #[arg(short = 'n')]
    show_samples: bool,
    /// Add an EventCount column; for a recording with a counter group (simpleperf's
    /// --add-counter), a column per counter (EventCount_cpu-cycles, ...).
    #[arg(long = "print-event-count")]
    print_event_count: bool,
    /// Show raw event counts instead of percentages.
    #[arg(long = "raw-period")]
    raw_period: bool,
    /// Comma-separated output.
    #[arg(long = "csv")]
    csv: bool,
    /// The separator of --csv output.
    #[arg(long = "csv-separator", value_name = "SEP", default_value = ",")]
    csv_separator: String,
    /// Name C++ functions with their parameters (`func2(int, int)`), as simpleperf does (the
    /// default).
    #[arg(long = "full-names", overrides_with_all = ["short_names", "no_demangle"])]
    full_names: bool,
    /// Name C++ functions without their parameters (`func2`), as perf does.
    #[arg(long = "short-names", overrides_with_all = ["full_names", "no_demangle"])]
    short_names: bool,
    /// Name functions as their binaries store them (`_Z5func2ii`), as perf's --no-demangle.
    #[arg(long = "no-demangle", overrides_with_all = ["full_names", "short_names"])]
    no_demangle: bool,
    /// The text report on standard output, as perf's --stdio (rperf's report is text unless
    /// --format or -o says otherwise; it has no interactive browser).
    #[arg(long = "stdio")]
    stdio: bool,
    /// perf's option for kernel symbols from a vmlinux image: rperf reads the image from a
    /// --symfs folder, or kernel symbols from the recording or --kallsyms FILE.
    #[arg(long = "vmlinux", value_name = "FILE", hide = true)]
    vmlinux: Option<PathBuf>,
    /// Show ART's frames (interpreter, trampolines, JIT plumbing) around Java and Kotlin
    /// methods. The text report shows them by default, as `simpleperf report` does; stack
    /// outputs hide them, as simpleperf's scripts do, so Java stacks read as methods.
    #[arg(long = "show-art-frames", overrides_with = "hide_art_frames")]
    show_art_frames: bool,
    /// Hide ART's frames around Java and Kotlin methods, in the text report too.
    #[arg(long = "hide-art-frames", overrides_with = "show_art_frames")]
    hide_art_frames: bool,
    /// Only this event (as the report names it, e.g. cpu-clock or sched:sched_switch), in
    /// every output; by default the text report shows every event and stack outputs the first
    /// with samples.
    #[arg(short = 'e', long = "event", value_name = "EVENT")]
    event: Option<String>,
    /// Weight folded stacks and flamegraphs by event counts instead of sample counts
    /// (off-CPU recordings are always weighted by time).
    #[arg(long = "event-counts")]
    event_counts: bool,
    /// Do not show inlined calls as frames of their own (they are read from DWARF otherwise).
    #[arg(long = "no-inline")]
    no_inline: bool,
    /// In the table, inlined functions are entries of their own, with the self time of the
    /// code inlined into their callers; by default self time is the function that contains
    /// the sampled address, as simpleperf and perf count it (call graphs and stack outputs
    /// show inlined calls either way).
    #[arg(long = "inline", conflicts_with = "no_inline")]
    inline: bool,
    /// For recordings made with --trace-offcpu: on-cpu, off-cpu, on-off-cpu (two events) or
    /// mixed-on-off-cpu (one event of wall-clock time; the default for such recordings).
    #[arg(long = "trace-offcpu", value_name = "MODE")]
    trace_offcpu: Option<String>,
    /// Output format: text, folded (stacks for flamegraph tools), svg (a flamegraph), html (an
    /// interactive, self-contained page), pprof (gzipped profile.proto), gecko (Firefox
    /// Profiler), json (one line per sample), script (perf script's text) or report-sample
    /// (simpleperf's protobuf, for Android Studio). Inferred from the -o file's extension
    /// (.folded, .svg, .html, .pb.gz or .pprof, .gecko.json, .json, .script, .trace) when not
    /// given.
    #[arg(long = "format", value_name = "FMT")]
    format: Option<String>,
    /// Folded stacks and flamegraphs: prefix stacks with the process (comm-PID) or thread
    /// (comm-PID/TID).
    #[arg(long = "prefix", value_name = "pid|tid")]
    prefix: Option<String>,
    /// Folded stacks and flamegraphs: tag kernel frames `_[k]` and JIT frames `_[j]`.
    #[arg(long = "annotate")]
    annotate: bool,
    /// Gecko output: leave out runs of at most N consecutive samples of a thread whose stacks
    /// do not reach the thread's entry (a smoother Stack Chart), as simpleperf's
    /// gecko_profile_generator.py --remove-gaps (whose default is 3; rperf's is 0, keep all).
    #[arg(long = "remove-gaps", value_name = "N", default_value_t = 0)]
    remove_gaps: usize,
    /// Flamegraph title.
    #[arg(long = "title")]
    title: Option<String>,
    /// Flamegraph as an icicle graph (callers at the top).
    #[arg(long = "inverted")]
    inverted: bool,
    /// Flamegraph with stacks reversed (sampled functions at the root, their callers above).
    #[arg(long = "reverse")]
    reverse: bool,
    /// Read JIT symbol maps (/tmp/perf-PID.map) and jitdumps whatever their owner; by default
    /// only regular files of this user or root are read, as perf does.
    #[arg(short = 'f', long = "force")]
    force: bool,
    /// Merge code without symbols into one [unknown] entry per binary instead of one
    /// `BINARY[+hex]` entry per address, as simpleperf names it.
    #[arg(long = "no-show-ip")]
    no_show_ip: bool,
    /// Compare -i against this base recording: text lists functions by the change of their
    /// share (as perf diff), folded writes `stack base new` lines, svg and html colour frames
    /// red where time grew and blue where it shrank.
    #[arg(long = "diff", value_name = "BASE")]
    diff: Option<PathBuf>,
}

/// The output format: --format, else the -o file's extension, else text.
fn output_format(a: &ReportArgs) -> anyhow::Result<Format> {
    let format = match (&a.format, &a.output) {
        (Some(f), _) => {
            Format::parse(f).with_context(|| format!("unknown --format '{f}': use {}", Format::names()))?
        }
        (None, Some(o)) => Format::from_extension(o).unwrap_or(Format::Text),
        (None, None) => Format::Text,
    };
    perf_spellings(a, format)?;
    Ok(format)
}

/// perf's options that rperf takes as they are, or names rperf's own for.
fn perf_spellings(a: &ReportArgs, format: Format) -> anyhow::Result<()> {
    if a.stdio && format != Format::Text {
        bail!("--stdio asks for the text report, not {}: leave out one of them", format.name());
    }
    if let Some(v) = &a.vmlinux {
        bail!(
            "--vmlinux {}: rperf reads a kernel image from a symbol folder: put it there as \
             `vmlinux` (or named by the folder's build_id_list) and pass --symfs DIR; otherwise \
             kernel code is named from the kernel symbols kept in the recording, from \
             /proc/kallsyms when the recording was made on this machine, or from a copy of the \
             recorded machine's /proc/kallsyms given with --kallsyms FILE",
            v.display()
        );
    }
    Ok(())
}

/// The items of a list option given once or more, split at `seps`.
fn split_list(s: &[String], seps: &[char]) -> Vec<String> {
    s.iter().flat_map(|s| s.split(seps)).map(str::trim).filter(|x| !x.is_empty()).map(String::from).collect()
}

fn ids(s: &[String], what: &str) -> anyhow::Result<Vec<i32>> {
    split_list(s, &[';', ','])
        .iter()
        .map(|x| x.parse().with_context(|| format!("--{what}: '{x}' is not a number")))
        .collect()
}

/// Checks the options that go together: `-b` with the text report without call graphs, the
/// branch ends' sort keys with `-b`, a CSV separator that CSV can hold.
fn check_combinations(
    a: &ReportArgs,
    format: Format,
    graph: Option<CallOrder>,
    sort: &[SortKey],
) -> anyhow::Result<()> {
    if a.branches && (format != Format::Text || graph.is_some()) {
        bail!("-b reports branches in the text report, without call graphs: leave out -g and --format");
    }
    if sort.iter().any(|k| k.is_branch_end()) && !a.branches {
        bail!("--sort: dso_from, symbol_from, dso_to and symbol_to are sort keys with -b only");
    }
    if a.csv_separator.is_empty() || a.csv_separator.contains(['\n', '"']) {
        bail!(
            "--csv-separator {:?}: give one or more characters other than a newline or a quote",
            a.csv_separator
        );
    }
    Ok(())
}

fn name_style(a: &ReportArgs) -> NameStyle {
    if a.no_demangle {
        NameStyle::Mangled
    } else if a.short_names {
        NameStyle::Short
    } else {
        NameStyle::Full
    }
}

fn options(a: &ReportArgs) -> anyhow::Result<ReportOptions> {
    let sort = sort_keys(&a.sort)?;
    let call_graph = match a.call_graph.as_deref() {
        None => None,
        Some("caller") => Some(CallOrder::Caller),
        Some("callee") => Some(CallOrder::Callee),
        Some(o) => bail!("-g {o}: use caller or callee"),
    };
    let format = output_format(a)?;
    let prefix = match a.prefix.as_deref() {
        None => StackPrefix::Comm,
        Some("pid") => StackPrefix::Pid,
        Some("tid") => StackPrefix::Tid,
        Some(p) => bail!("--prefix {p}: use pid or tid"),
    };
    if a.diff.is_some() && !format.compares() {
        bail!("--diff compares two recordings in text, folded, svg or html output, not {}", format.name());
    }
    check_combinations(a, format, call_graph, &sort)?;
    Ok(ReportOptions {
        input: a.input.clone(),
        symfs: a.symfs.clone(),
        symdirs: crate::target_args::folders(&a.symdirs, "--symdir")?,
        debuginfod: a.debuginfod.choice()?,
        source_dirs: a.source_dirs.clone(),
        kallsyms: a.kallsyms.clone(),
        sort,
        inline: !a.no_inline,
        inline_entries: a.inline,
        children: a.children || (call_graph.is_some() && !a.no_children),
        call_graph,
        max_stack: if format == Format::Text { usize::MAX } else { a.max_stack.unwrap_or(usize::MAX) },
        call_graph_depth: if format == Format::Text { a.max_stack } else { None },
        branches: a.branches,
        percent_limit: a.percent_limit,
        full_callgraph: a.full_callgraph,
        event: a.event.clone(),
        csv_separator: a.csv_separator.clone(),
        names: name_style(a),
        show_art_frames: a.show_art_frames || (format == Format::Text && !a.hide_art_frames),
        filters: filters(a)?,
        show_samples: a.show_samples,
        raw_period: a.raw_period,
        print_event_count: a.print_event_count,
        csv: a.csv,
        format,
        event_counts: a.event_counts,
        prefix,
        annotate: a.annotate,
        title: a.title.clone(),
        inverted: a.inverted,
        reverse: a.reverse,
        diff_base: a.diff.clone(),
        force: a.force,
        show_ip: !a.no_show_ip,
        trace_offcpu: a.trace_offcpu.as_deref().map(off_cpu_mode).transpose()?,
        aggregate_threads: a
            .aggregate_threads
            .iter()
            .map(|r| {
                regex::Regex::new(r)
                    .with_context(|| format!("--aggregate-threads {r:?}: not a regular expression"))
            })
            .collect::<anyhow::Result<_>>()?,
        proguard_mappings: a.proguard_mapping_file.clone(),
        // As simpleperf's report-sample writes them.
        merge_java_methods: format == Format::ReportSample,
        remove_gaps: a.remove_gaps,
    })
}

fn sort_keys(keys: &str) -> anyhow::Result<Vec<SortKey>> {
    let sort = keys
        .split(',')
        .filter(|k| !k.trim().is_empty())
        .map(|k| {
            SortKey::parse(k).with_context(|| {
                format!(
                    "unknown sort key '{k}': use comm, pid, tid, dso, symbol, srcline, vaddr_in_file \
                     (and, with -b, dso_from, symbol_from, dso_to, symbol_to)"
                )
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    if sort.is_empty() {
        bail!("--sort needs at least one key");
    }
    Ok(sort)
}

/// The sample filters of `--comms`, `--pids`, `--tids`, `--dsos`, `--symbols`, `--cpu`, `--time`.
fn filters(a: &ReportArgs) -> anyhow::Result<Filters> {
    let mut f = Filters {
        comms: split_list(&a.comms, &[';', ',']),
        pids: ids(&a.pids, "pids")?,
        tids: ids(&a.tids, "tids")?,
        dsos: split_list(&a.dsos, &[';', ',']),
        symbols: split_list(&a.symbols, &[';']),
        time: a.time.as_deref().map(crate::target_args::parse_time_window).transpose()?,
        ..Filters::default()
    };
    let simpleperf_style = [
        ("--cpu", &a.cpu),
        ("--exclude-pid", &a.exclude_pid),
        ("--exclude-tid", &a.exclude_tid),
        ("--include-process-name", &a.include_process_name),
        ("--exclude-process-name", &a.exclude_process_name),
        ("--include-thread-name", &a.include_thread_name),
        ("--exclude-thread-name", &a.exclude_thread_name),
    ];
    for (option, values) in simpleperf_style {
        for v in values {
            f.add_simpleperf_option(option, v).map_err(anyhow::Error::msg)?;
        }
    }
    if let Some(file) = &a.filter_file {
        f.add_simpleperf_option("--filter-file", file).map_err(anyhow::Error::msg)?;
    }
    Ok(f)
}

fn off_cpu_mode(m: &str) -> anyhow::Result<OffCpuMode> {
    OffCpuMode::parse(m)
        .with_context(|| format!("--trace-offcpu {m}: use on-cpu, off-cpu, on-off-cpu or mixed-on-off-cpu"))
}

/// Runs `rperf report`.
pub fn run(a: ReportArgs) -> anyhow::Result<i32> {
    rperf_record::sys::fixed_heap_thresholds();
    let opts = options(&a)?;
    let profile = rperf_report::load(&opts)?;
    crate::exit::warnings(&profile.warnings, None);
    check_filters(&profile, &opts)?;
    let base = match &opts.diff_base {
        Some(path) => {
            let base_opts = ReportOptions { input: path.clone(), diff_base: None, ..opts.clone() };
            let base =
                rperf_report::load(&base_opts).with_context(|| format!("--diff {}", path.display()))?;
            crate::exit::warnings(&base.warnings, Some(path));
            Some(base)
        }
        None => None,
    };
    match &a.output {
        Some(p) => {
            let mut file = crate::output_file::OutputFile::create(p)?;
            let mut out = std::io::BufWriter::new(file.file());
            profile.write(&mut out, &opts, base.as_ref())?;
            out.flush().with_context(|| format!("cannot write {}", p.display()))?;
            drop(out);
            file.finish()?;
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            profile.write(&mut out, &opts, base.as_ref())?;
            out.flush()?;
        }
    }
    crate::exit::late_symbol_notes();
    // The process ends now and its memory with it: the profile's many allocations are not
    // freed one by one first (a few percent of a large report's time).
    std::mem::forget((profile, base));
    Ok(0)
}

/// Says which filter values matched no sample: a warning when others did, an error (and no
/// report) when no sample is left.
fn check_filters(profile: &rperf_report::Profile, opts: &ReportOptions) -> anyhow::Result<()> {
    let filters = &opts.filters;
    let outcome = profile.filter_outcome(filters);
    let p = |s: &str| rperf_symbols::text::printable(s).into_owned();
    let lines: Vec<String> = outcome
        .misses
        .iter()
        .map(|m| format!("{} {} matches nothing: {}", m.option, p(&m.value), m.hint))
        .collect();
    if outcome.empty {
        let by_function = !filters.symbols.is_empty() || !filters.dsos.is_empty();
        if lines.is_empty() && by_function && !opts.children {
            eprintln!(
                "rperf: --symbols and --dsos select the function a sample was taken in; the ones \
                 given are only callers: add --children to count the samples with them anywhere \
                 in the call chain"
            );
        } else if lines.is_empty() {
            eprintln!("rperf: each filter matches some samples, but no sample matches them all");
        }
        for l in &lines {
            eprintln!("rperf: {l}");
        }
        bail!(
            "no sample of {} passes the filters, so no report was written; run `rperf report` \
             without filters to see what the recording holds",
            p(&profile.info.input.display().to_string())
        );
    }
    for l in lines {
        eprintln!("rperf: warning: {l}");
    }
    Ok(())
}
