//! What each stage of a report reads of its options, split from `ReportOptions` once: loading
//! and converting the records (`LoadConfig`), making the profile (`ProfileConfig`), and each
//! output format (`TextConfig`, `FlameConfig` for folded stacks and SVG flamegraphs,
//! `HtmlConfig`). A stage sees its own part only; adding an option to one stage touches its
//! part and the CLI.

use std::path::PathBuf;

use crate::options::{
    CallOrder, Debuginfod, Filters, Needs, OffCpuMode, ReportOptions, SortKey, StackPrefix,
};

/// What loading a recording and converting its records read.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The recording.
    pub input: PathBuf,
    /// Where binaries are looked up first, and folders searched for them by build id.
    pub symfs: Vec<PathBuf>,
    pub symdirs: Vec<PathBuf>,
    pub debuginfod: Debuginfod,
    /// Kernel symbols to use instead of the recording's.
    pub kallsyms: Option<PathBuf>,
    /// How frames are named: name style, inline frames, unnamed code by address, and source
    /// lines for a `srcline` column.
    pub names: crate::resolve::NameStyle,
    pub inline: bool,
    pub show_ip: bool,
    pub srclines: bool,
    /// JIT maps and jitdumps read whatever their owner (`-f`).
    pub force: bool,
    /// Samples are their branch stacks' taken branches (`-b`).
    pub branches: bool,
    /// Frames kept per sample.
    pub max_stack: usize,
    /// The clock a `--filter-file`'s times are of, checked against the recording's.
    pub filter_clock: Option<String>,
    /// What the outputs need kept.
    pub needs: Needs,
}

/// What making the profile reads: which samples count and how they weigh.
#[derive(Clone, Debug)]
pub struct ProfileConfig {
    pub filters: Filters,
    pub trace_offcpu: Option<OffCpuMode>,
    pub event: Option<String>,
    /// Stacks kept for Children columns.
    pub children: bool,
    pub max_stack: usize,
    pub show_art_frames: bool,
    pub merge_java_methods: bool,
    pub proguard_mappings: Vec<PathBuf>,
    pub aggregate_threads: Vec<regex::Regex>,
}

/// The text report (and `rperf top`'s table).
#[derive(Clone, Debug)]
pub struct TextConfig {
    pub sort: Vec<SortKey>,
    pub children: bool,
    pub call_graph: Option<CallOrder>,
    pub call_graph_depth: Option<usize>,
    pub percent_limit: f64,
    pub full_callgraph: bool,
    pub show_samples: bool,
    pub raw_period: bool,
    pub print_event_count: bool,
    pub csv: bool,
    pub csv_separator: String,
    /// Entries of branch samples name where branches came from.
    pub branches: bool,
    pub inline_entries: bool,
}

/// Folded stacks and SVG flamegraphs.
#[derive(Clone, Debug)]
pub struct FlameConfig {
    pub prefix: StackPrefix,
    pub annotate: bool,
    pub percent_limit: f64,
    pub event_counts: bool,
    pub inverted: bool,
    pub reverse: bool,
    /// The title; by default rperf, the event, and the recordings compared.
    pub title: Option<String>,
    pub input: PathBuf,
    pub diff_base: Option<PathBuf>,
}

/// The HTML report: its flamegraphs, and where its code view reads binaries and sources.
#[derive(Clone, Debug)]
pub struct HtmlConfig {
    pub flame: FlameConfig,
    pub symfs: Vec<PathBuf>,
    pub source_dirs: Vec<PathBuf>,
}

impl ReportOptions {
    /// What loading must keep for the format and its options: the text report shows callers
    /// only in call graphs and with `--children`; `--symbols` and `--dsos` name callers too,
    /// to say which values only callers match.
    pub fn needs(&self) -> Needs {
        let mut needs = self.format.needs();
        let names_callers = !self.filters.symbols.is_empty() || !self.filters.dsos.is_empty();
        needs.callers |= self.children || self.call_graph.is_some() || names_callers;
        needs
    }

    /// What loading reads, for outputs that need `needs`.
    pub fn load_config(&self, needs: Needs) -> LoadConfig {
        LoadConfig {
            input: self.input.clone(),
            symfs: self.symfs.clone(),
            symdirs: self.symdirs.clone(),
            debuginfod: self.debuginfod.clone(),
            kallsyms: self.kallsyms.clone(),
            names: self.names,
            inline: self.inline,
            show_ip: self.show_ip,
            srclines: self.sort.contains(&SortKey::Srcline),
            force: self.force,
            branches: self.branches,
            max_stack: self.max_stack,
            filter_clock: self.filters.time_ranges.as_ref().map(|r| r.clock.clone()),
            needs,
        }
    }

    /// What making the profile reads.
    pub fn profile_config(&self) -> ProfileConfig {
        ProfileConfig {
            filters: self.filters.clone(),
            trace_offcpu: self.trace_offcpu,
            event: self.event.clone(),
            children: self.children,
            max_stack: self.max_stack,
            show_art_frames: self.show_art_frames,
            merge_java_methods: self.merge_java_methods,
            proguard_mappings: self.proguard_mappings.clone(),
            aggregate_threads: self.aggregate_threads.clone(),
        }
    }

    /// What the text report reads.
    pub fn text_config(&self) -> TextConfig {
        TextConfig {
            sort: self.sort.clone(),
            children: self.children,
            call_graph: self.call_graph,
            call_graph_depth: self.call_graph_depth,
            percent_limit: self.percent_limit,
            full_callgraph: self.full_callgraph,
            show_samples: self.show_samples,
            raw_period: self.raw_period,
            print_event_count: self.print_event_count,
            csv: self.csv,
            csv_separator: self.csv_separator.clone(),
            branches: self.branches,
            inline_entries: self.inline_entries,
        }
    }

    /// What folded stacks and flamegraphs read.
    pub fn flame_config(&self) -> FlameConfig {
        FlameConfig {
            prefix: self.prefix,
            annotate: self.annotate,
            percent_limit: self.percent_limit,
            event_counts: self.event_counts,
            inverted: self.inverted,
            reverse: self.reverse,
            title: self.title.clone(),
            input: self.input.clone(),
            diff_base: self.diff_base.clone(),
        }
    }

    /// What the HTML report reads.
    pub fn html_config(&self) -> HtmlConfig {
        HtmlConfig {
            flame: self.flame_config(),
            symfs: self.symfs.clone(),
            source_dirs: self.source_dirs.clone(),
        }
    }
}
