//! Plain settings of a report, filled in by the CLI.

use std::path::PathBuf;

pub use crate::sort_key::SortKey;

/// Direction of call graphs under each entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallOrder {
    /// From callers down to the entry (simpleperf's default).
    Caller,
    /// From the entry up to its callers.
    Callee,
}

/// Which samples count.
#[derive(Clone, Debug, Default)]
pub struct Filters {
    /// Command names.
    pub comms: Vec<String>,
    /// Process ids.
    pub pids: Vec<i32>,
    /// Thread ids.
    pub tids: Vec<i32>,
    /// Shared objects (path or basename) of the sampled frame.
    pub dsos: Vec<String>,
    /// Function names of the sampled frame.
    pub symbols: Vec<String>,
    /// CPUs.
    pub cpus: Vec<u32>,
    /// Only samples taken in `[start, end)` (`--time`); an absent end is open.
    pub time: Option<(Option<TimeBound>, Option<TimeBound>)>,
    /// Process ids left out.
    pub exclude_pids: Vec<i32>,
    /// Thread ids left out.
    pub exclude_tids: Vec<i32>,
    /// Processes whose name (its main thread's) contains a match of any of these, when given.
    pub process_names: Vec<regex::Regex>,
    /// Processes whose name contains a match of any of these are left out.
    pub exclude_process_names: Vec<regex::Regex>,
    /// Threads whose name contains a match of any of these, when given.
    pub thread_names: Vec<regex::Regex>,
    /// Threads whose name contains a match of any of these are left out.
    pub exclude_thread_names: Vec<regex::Regex>,
    /// Time ranges of a filter file (`--filter-file`, simpleperf's format).
    pub time_ranges: Option<crate::filter_file::TimeRanges>,
}

impl Filters {
    /// Adds one of simpleperf's sample filter options (as its report commands and its report
    /// library take them): `--cpu LIST`, `--exclude-pid`/`--include-pid`/`--exclude-tid`/
    /// `--include-tid` `ID,ID,...`, `--exclude-process-name`/`--include-process-name`/
    /// `--exclude-thread-name`/`--include-thread-name` `REGEX`, `--filter-file FILE`. The error
    /// names the option and what is wrong with its value.
    pub fn add_simpleperf_option(&mut self, option: &str, value: &str) -> Result<(), String> {
        let ids = || -> Result<Vec<i32>, String> {
            value
                .split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(|x| x.parse().map_err(|_| format!("{option}: `{}` is not a number", x.escape_debug())))
                .collect()
        };
        let regex = || {
            regex::Regex::new(value)
                .map_err(|e| format!("{option}: `{}` is not a regular expression: {e}", value.escape_debug()))
        };
        match option {
            "--cpu" => self.cpus.extend(parse_cpu_list(value).map_err(|e| format!("--cpu: {e}"))?),
            "--exclude-pid" => self.exclude_pids.extend(ids()?),
            "--exclude-tid" => self.exclude_tids.extend(ids()?),
            "--include-pid" | "--pid" => self.pids.extend(ids()?),
            "--include-tid" | "--tid" => self.tids.extend(ids()?),
            "--exclude-process-name" => self.exclude_process_names.push(regex()?),
            "--include-process-name" => self.process_names.push(regex()?),
            "--exclude-thread-name" => self.exclude_thread_names.push(regex()?),
            "--include-thread-name" | "--comm" => self.thread_names.push(regex()?),
            "--filter-file" => {
                // A filter file is lines of text: a few megabytes for the largest.
                let text = crate::proguard::read_named(std::path::Path::new(value), 64 << 20)
                    .map_err(|e| format!("--filter-file {}: {e}", value.escape_debug()))?;
                let text = String::from_utf8(text)
                    .map_err(|_| format!("--filter-file {}: not text (UTF-8)", value.escape_debug()))?;
                let ranges = crate::filter_file::TimeRanges::parse(&text)
                    .map_err(|e| format!("--filter-file {}: {e}", value.escape_debug()))?;
                self.time_ranges = Some(ranges);
            }
            _ => return Err(format!("unknown sample filter option `{}`", option.escape_debug())),
        }
        Ok(())
    }

    /// Whether a sample of `thread` (named `thread_name`, in a process named `process_name`)
    /// on `cpu` at `time` (with the recording's first sample time, for relative bounds) passes
    /// the filters on threads, processes, CPUs and time.
    pub(crate) fn keeps<'a>(
        &self,
        thread: crate::profile::Thread,
        thread_name: &str,
        process_name: impl Fn() -> &'a str,
        cpu: u32,
        (time, first): (u64, u64),
    ) -> bool {
        let any = |res: &[regex::Regex], name: &str| res.iter().any(|r| r.is_match(name));
        if let Some((start, end)) = self.time {
            if start.is_some_and(|s| time < s.at(first)) || end.is_some_and(|e| time >= e.at(first)) {
                return false;
            }
        }
        !((!self.pids.is_empty() && !self.pids.contains(&thread.pid))
            || (!self.tids.is_empty() && !self.tids.contains(&thread.tid))
            || (!self.cpus.is_empty() && !self.cpus.contains(&cpu))
            || (!self.comms.is_empty() && !self.comms.iter().any(|c| c == thread_name))
            || self.exclude_pids.contains(&thread.pid)
            || self.exclude_tids.contains(&thread.tid)
            || (!self.thread_names.is_empty() && !any(&self.thread_names, thread_name))
            || any(&self.exclude_thread_names, thread_name)
            || (!self.process_names.is_empty() && !any(&self.process_names, process_name()))
            || any(&self.exclude_process_names, process_name())
            || self.time_ranges.as_ref().is_some_and(|r| !r.keeps(thread.pid, thread.tid, time)))
    }

    /// Which functions the `--dsos` and `--symbols` filters select, by function id; None when
    /// neither is given. A symbol matches in either form, with or without C++ parameters
    /// (`func2` or `func2(int, int)`); a binary by its path or its file name.
    pub fn select(&self, names: &crate::profile::Names) -> Option<Vec<bool>> {
        if self.symbols.is_empty() && self.dsos.is_empty() {
            return None;
        }
        let selected = names
            .funcs
            .iter()
            .map(|func| {
                let symbol_ok = self.symbols.is_empty()
                    || self.symbols.contains(&func.name)
                    || func.system.as_deref().is_some_and(|raw| {
                        let short = rperf_symbols::demangle(raw);
                        let full = rperf_symbols::demangle_full(raw);
                        self.symbols.iter().any(|s| *s == short || *s == full || s == raw)
                    });
                let dso_ok = self.dsos.is_empty()
                    || self.dsos.iter().any(|x| names_dso(x, &names.dsos[func.dso as usize]));
                symbol_ok && dso_ok
            })
            .collect();
        Some(selected)
    }
}

/// Whether a `--dsos` value names the binary `d`: by its path, its shown name or its file name.
pub(crate) fn names_dso(value: &str, d: &crate::model::Dso) -> bool {
    let shown = d.display_name();
    value == shown || value == d.path || Some(value) == shown.rsplit('/').next()
}

/// One end of a `--time` window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeBound {
    /// Nanoseconds after the recording's first sample.
    Relative(u64),
    /// A timestamp of the recording's clock, in nanoseconds (as JSON's `time` and simpleperf's
    /// filter files give them).
    Absolute(u64),
}

impl TimeBound {
    /// Parses `1.5` (seconds after the first sample) or `683802777472700ns` (a timestamp).
    pub fn parse(s: &str) -> Option<TimeBound> {
        let s = s.trim();
        if let Some(ns) = s.strip_suffix("ns") {
            return ns.parse().ok().map(TimeBound::Absolute);
        }
        let secs: f64 = s.parse().ok().filter(|v: &f64| v.is_finite() && *v >= 0.0)?;
        Some(TimeBound::Relative((secs * 1e9).round() as u64))
    }

    /// The timestamp this bound is, for a recording whose first sample is at `first`.
    pub fn at(self, first: u64) -> u64 {
        match self {
            TimeBound::Relative(ns) => first.saturating_add(ns),
            TimeBound::Absolute(t) => t,
        }
    }
}

/// Output format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The text report.
    Text,
    /// Brendan Gregg's folded stacks: `comm;root;...;leaf count`.
    Folded,
    /// A flamegraph SVG.
    Svg,
    /// One self-contained HTML file: flamegraph, function table, callers and callees.
    Html,
    /// Gzipped pprof profile.proto.
    Pprof,
    /// The Firefox Profiler's format.
    Gecko,
    /// JSON Lines: one record per sample with its symbolized stack.
    Json,
    /// `perf script`'s default layout: a line per sample, then a line per frame.
    Script,
    /// simpleperf's report-sample protobuf (`cmd_report_sample.proto`), which Android Studio
    /// imports.
    ReportSample,
}

/// What loading must keep for a format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// The format shows samples one by one, so the profile keeps every sample.
    pub samples: bool,
    /// The format shows each frame's source file and line.
    pub lines: bool,
    /// Every sample is logged with its frames' run-time addresses and mappings and its
    /// tracepoint data, to be read one at a time (the report library's per-sample interface;
    /// `load_with` gives the log).
    pub places: bool,
    /// The format shows each sample's callers. Without them a sample's stack is its sampled
    /// frame alone (in processes that run no Java code, whose sampled frame shaping never
    /// changes): callers are neither unwound nor named, and stacks are not counted as
    /// truncated or broken.
    pub callers: bool,
}

/// What rperf knows of a format besides how to render it (`output`): its name, the file
/// name endings that imply it, what it needs from loading, and whether it compares two
/// recordings (`--diff`). Adding a format: a variant above, a row here, and its module in
/// `output/`.
struct FormatInfo {
    format: Format,
    name: &'static str,
    endings: &'static [&'static str],
    needs: Needs,
    compares: bool,
}

const STACKS: Needs = Needs { samples: false, lines: false, places: false, callers: true };
const FORMATS: [FormatInfo; 9] = [
    FormatInfo {
        format: Format::Text,
        name: "text",
        endings: &[".txt"],
        needs: Needs { callers: false, ..STACKS },
        compares: true,
    },
    FormatInfo {
        format: Format::Folded,
        name: "folded",
        endings: &[".folded"],
        needs: STACKS,
        compares: true,
    },
    FormatInfo { format: Format::Svg, name: "svg", endings: &[".svg"], needs: STACKS, compares: true },
    FormatInfo {
        format: Format::Html,
        name: "html",
        endings: &[".html", ".htm"],
        needs: Needs { samples: true, lines: false, ..STACKS },
        compares: true,
    },
    FormatInfo {
        format: Format::Pprof,
        name: "pprof",
        endings: &[".pb.gz", ".pprof", ".pb"],
        needs: Needs { samples: false, lines: true, ..STACKS },
        compares: false,
    },
    FormatInfo {
        format: Format::Gecko,
        name: "gecko",
        endings: &[".gecko.json", ".gecko"],
        needs: Needs { samples: true, lines: false, ..STACKS },
        compares: false,
    },
    FormatInfo {
        format: Format::Json,
        name: "json",
        endings: &[".json", ".jsonl"],
        needs: Needs { samples: true, lines: true, ..STACKS },
        compares: false,
    },
    FormatInfo {
        format: Format::Script,
        name: "script",
        endings: &[".script"],
        needs: Needs { samples: true, lines: false, ..STACKS },
        compares: false,
    },
    FormatInfo {
        format: Format::ReportSample,
        name: "report-sample",
        endings: &[".trace"],
        needs: Needs { samples: true, lines: false, ..STACKS },
        compares: false,
    },
];

impl Format {
    fn info(self) -> &'static FormatInfo {
        FORMATS.iter().find(|f| f.format == self).expect("every format has a row")
    }

    /// Every format name, for messages: `text, folded, ... or script`.
    pub fn names() -> String {
        let names: Vec<&str> = FORMATS.iter().map(|f| f.name).collect();
        let (last, rest) = names.split_last().expect("formats");
        format!("{} or {last}", rest.join(", "))
    }

    /// Parses a format name.
    pub fn parse(s: &str) -> Option<Format> {
        FORMATS.iter().find(|f| f.name == s).map(|f| f.format)
    }

    /// The format an output file name implies: `.folded`, `.svg`, `.html`, `.pb.gz`/`.pprof`,
    /// `.gecko.json` (Firefox Profiler), `.json`, `.txt`; the longest ending that matches.
    pub fn from_extension(path: &std::path::Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        FORMATS
            .iter()
            .flat_map(|f| f.endings.iter().map(move |e| (e.len(), f.format, *e)))
            .filter(|(_, _, e)| name.ends_with(e))
            .max_by_key(|(len, _, _)| *len)
            .map(|(_, f, _)| f)
    }

    /// What loading must keep for this format, whatever its options ask
    /// (`ReportOptions::needs` adds those).
    pub fn needs(self) -> Needs {
        self.info().needs
    }

    /// Whether the format compares two recordings (`--diff`).
    pub fn compares(self) -> bool {
        self.info().compares
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        self.info().name
    }
}

/// What folded stacks are prefixed with besides the thread name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StackPrefix {
    /// The thread name only.
    #[default]
    Comm,
    /// `comm-PID`.
    Pid,
    /// `comm-PID/TID`.
    Tid,
}

/// How recordings made with `--trace-offcpu` are weighted (simpleperf's mode names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffCpuMode {
    /// Only samples taken while running.
    OnCpu,
    /// Only the time between a switch-out and the thread's next sample.
    OffCpu,
    /// Both, as two events.
    OnOffCpu,
    /// Both under one event: the threads' wall-clock time.
    Mixed,
}

impl OffCpuMode {
    /// Parses simpleperf's names.
    pub fn parse(s: &str) -> Option<OffCpuMode> {
        Some(match s {
            "on-cpu" => OffCpuMode::OnCpu,
            "off-cpu" => OffCpuMode::OffCpu,
            "on-off-cpu" => OffCpuMode::OnOffCpu,
            "mixed-on-off-cpu" => OffCpuMode::Mixed,
            _ => return None,
        })
    }
}

/// Whether debug info and binaries missing on this machine are fetched from debuginfod
/// servers, after `--symfs` and local files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Debuginfod {
    /// From the servers in `DEBUGINFOD_URLS`, when it names any.
    #[default]
    FromEnv,
    /// Never (`--no-debuginfod`).
    Off,
    /// From these servers (space-separated), whatever `DEBUGINFOD_URLS` says.
    Urls(String),
}

impl Debuginfod {
    /// The client's configuration, when servers are to be asked.
    pub fn config(&self) -> Option<rperf_symbols::debuginfod::Config> {
        match self {
            Debuginfod::FromEnv => rperf_symbols::debuginfod::Config::from_env(None),
            Debuginfod::Off => None,
            Debuginfod::Urls(urls) => rperf_symbols::debuginfod::Config::from_env(Some(urls)),
        }
    }
}

/// Everything `report` needs.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// The recording.
    pub input: PathBuf,
    /// Where binaries are looked up first.
    pub symfs: Vec<PathBuf>,
    /// Folders searched recursively for binaries by build id.
    pub symdirs: Vec<PathBuf>,
    /// Whether debug info and binaries missing here are fetched from debuginfod servers.
    pub debuginfod: Debuginfod,
    /// Kernel symbols to use instead of the recording's.
    pub kallsyms: Option<PathBuf>,
    /// Where source files are looked for (`--source-dir`, as simpleperf's `--source_dirs`):
    /// recorded paths under them, or their trailing components (build paths of another
    /// machine). Without them, a recorded source path is read when this user or root owns it.
    pub source_dirs: Vec<PathBuf>,
    /// Sort keys (default comm,pid,tid,dso,symbol).
    pub sort: Vec<SortKey>,
    /// Children (inclusive) and Self columns.
    pub children: bool,
    /// Call graphs under entries.
    pub call_graph: Option<CallOrder>,
    /// Frames kept per sample (innermost first).
    pub max_stack: usize,
    /// `-b`: each taken branch of a sample's branch stack is a sample of its own, at the
    /// branch's target, that remembers where the branch came from (`dso_from`, `symbol_from`).
    pub branches: bool,
    /// Levels of call graph the text report prints under an entry (simpleperf's `--max-stack`);
    /// all when None.
    pub call_graph_depth: Option<usize>,
    /// Hide entries and call-graph nodes below this share (percent).
    pub percent_limit: f64,
    /// Print every call-graph node (not only branches and their chains).
    pub full_callgraph: bool,
    /// Sample filters.
    pub filters: Filters,
    /// `-n`: a Samples column.
    pub show_samples: bool,
    /// Show raw event counts instead of percentages (`--raw-period`).
    pub raw_period: bool,
    /// An Event count column (`--print-event-count`).
    pub print_event_count: bool,
    /// Comma-separated output.
    pub csv: bool,
    /// The separator of `--csv` output (`,` by default).
    pub csv_separator: String,
    /// Output format.
    pub format: Format,
    /// Weighting of off-CPU recordings; None picks mixed for them.
    pub trace_offcpu: Option<OffCpuMode>,
    /// Only this event's section (an event name as the report prints it, or the event of an
    /// off-CPU section).
    pub event: Option<String>,
    /// Stack outputs weighted by event counts instead of sample counts (always for time).
    pub event_counts: bool,
    /// Inlined calls as frames of their own, from DWARF (`--no-inline` turns it off).
    pub inline: bool,
    /// In the text report's table, inlined functions are entries of their own, with the self
    /// time of the addresses inlined into their callers (`--inline`); off, a sample's self
    /// time is the function that contains its address, as simpleperf and perf count it.
    pub inline_entries: bool,
    /// Folded stacks and flamegraphs: what the root frame names.
    pub prefix: StackPrefix,
    /// Folded stacks and flamegraphs: kernel frames end in `_[k]`, JIT frames in `_[j]`.
    pub annotate: bool,
    /// Flamegraph title (default: rperf and the event).
    pub title: Option<String>,
    /// Flamegraphs grow downwards (icicle graph).
    pub inverted: bool,
    /// Flamegraphs with stacks reversed: leaf functions at the root, callers above.
    pub reverse: bool,
    /// Read JIT maps and jitdumps on this machine whatever their owner or type (`-f`).
    pub force: bool,
    /// Name code without symbols by binary and offset (`libfoo.so[+1a2b]`), one entry per
    /// address; off (`--no-show-ip`), all of a binary's unnamed code is `[unknown]`.
    pub show_ip: bool,
    /// How C++ and Rust names are shown: demangled with their parameters (simpleperf's
    /// way), without them (perf's), or as stored in the binary.
    pub names: crate::resolve::NameStyle,
    /// Show ART's frames (interpreter, trampolines, JIT plumbing) next to Java methods; off,
    /// they are hidden, so Java and Kotlin stacks read as methods.
    pub show_art_frames: bool,
    /// A comparison against this base recording: a table of functions (text), differential
    /// folded stacks, or a differential flamegraph (svg, html). The caller loads it.
    pub diff_base: Option<PathBuf>,
    /// Threads whose names match the same one of these are counted as one thread (the first
    /// seen), so that a thread pool reads as one.
    pub aggregate_threads: Vec<regex::Regex>,
    /// ProGuard/R8 mapping files: obfuscated Java and Kotlin names are shown as they map.
    pub proguard_mappings: Vec<PathBuf>,
    /// Gecko output: runs of at most this many consecutive samples of a thread whose stacks do
    /// not reach the thread's entry are left out, as simpleperf's gecko_profile_generator.py
    /// `--remove-gaps` leaves them out (0: every sample is kept).
    pub remove_gaps: usize,
    /// Java methods compiled at run time read as the dex methods they were compiled from
    /// (`Profile::java_dex`), as simpleperf's report library and report-sample show them.
    pub merge_java_methods: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            input: PathBuf::from("perf.data"),
            symfs: Vec::new(),
            symdirs: Vec::new(),
            debuginfod: Debuginfod::default(),
            source_dirs: Vec::new(),
            kallsyms: None,
            sort: vec![SortKey::Comm, SortKey::Pid, SortKey::Tid, SortKey::Dso, SortKey::Symbol],
            children: false,
            call_graph: None,
            max_stack: usize::MAX,
            call_graph_depth: None,
            branches: false,
            percent_limit: 0.0,
            full_callgraph: false,
            filters: Filters::default(),
            show_samples: false,
            raw_period: false,
            print_event_count: false,
            csv: false,
            csv_separator: ",".into(),
            format: Format::Text,
            trace_offcpu: None,
            event_counts: false,
            event: None,
            inline: true,
            inline_entries: false,
            prefix: StackPrefix::Comm,
            annotate: false,
            title: None,
            inverted: false,
            reverse: false,
            diff_base: None,
            force: false,
            show_ip: true,
            names: crate::resolve::NameStyle::Full,
            show_art_frames: false,
            aggregate_threads: Vec::new(),
            proguard_mappings: Vec::new(),
            merge_java_methods: false,
            remove_gaps: 0,
        }
    }
}

/// A CPU list as simpleperf and `rperf report --cpu` take it: numbers and ranges,
/// comma-separated (`0,2-3`); any CPUs (the recording may come from a bigger machine), but a
/// list that makes sense.
fn parse_cpu_list(s: &str) -> Result<Vec<u32>, String> {
    let mut cpus = Vec::new();
    for item in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        let bad = || format!("`{}` is not a CPU or a range of CPUs", item.escape_debug());
        let (a, b) = item.split_once('-').unwrap_or((item, item));
        let (a, b): (u32, u32) = (a.trim().parse().map_err(|_| bad())?, b.trim().parse().map_err(|_| bad())?);
        if a > b || b - a > 4096 {
            return Err(bad());
        }
        cpus.extend(a..=b);
    }
    if cpus.is_empty() {
        return Err(format!("`{}` names no CPU", s.escape_debug()));
    }
    Ok(cpus)
}
