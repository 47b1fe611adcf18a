//! The profile: every sample of a recording after unwinding and symbolization, in event
//! sections, filtered and weighted. It is the one place that knows the filters, the time
//! weighting of off-CPU recordings, event sections and `--max-stack`; every output renders it
//! and decides nothing of that itself, so text, flamegraphs, pprof, gecko and json agree.
//! These are its read-only types; `builder` makes it.

use std::path::PathBuf;

use crate::lists::Lists;
use crate::model::{Dso, ExecType};
use crate::resolve::{AddrId, Func, FuncId, Symbolized};

/// Index of a distinct address stack.
pub type StackId = u32;

/// The dex method a Java method compiled at run time was compiled from: its binary, function
/// and symbol start (simpleperf's `vaddr_in_file` for it).
pub type DexMethod = (crate::model::DsoId, FuncId, u64);

/// A thread as outputs show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Thread {
    /// Its name (interned in `Names::comms`).
    pub comm: u32,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
}

/// The samples of one thread with one stack, in one section.
#[derive(Clone, Copy, Debug)]
pub struct StackCount {
    /// The thread.
    pub thread: Thread,
    /// The stack.
    pub stack: StackId,
    /// Time spent off the CPU, blocked in this stack (off-CPU recordings).
    pub off_cpu: bool,
    /// How many samples.
    pub samples: u64,
    /// Their weight: event counts, or nanoseconds in time-weighted sections.
    pub weight: u64,
}

/// One sample, for outputs that show samples one by one (gecko, json).
#[derive(Clone, Copy, Debug, Default)]
pub struct Row {
    /// Perf clock time, ns.
    pub time: u64,
    /// The thread.
    pub thread: Thread,
    /// The CPU.
    pub cpu: u32,
    /// The stack.
    pub stack: StackId,
    /// Off-CPU time.
    pub off_cpu: bool,
    /// The sample's weight.
    pub weight: u64,
}

/// Where a frame ran: its run-time address and the mapping that held it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Place {
    /// The address as recorded (a return address for callers).
    pub ip: u64,
    /// The mapping's start, end (exclusive) and file offset; zeros outside every mapping.
    pub map: (u64, u64, u64),
}

/// What a section's weights count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Unit {
    /// The event's own counts (its periods).
    #[default]
    Events,
    /// Nanoseconds of wall-clock time (off-CPU recordings).
    Nanoseconds,
}

/// One event's samples (or, for off-CPU recordings, one way of weighing them).
#[derive(Clone, Debug, Default)]
pub struct Section {
    /// Event name.
    pub name: String,
    /// perf_event_attr type.
    pub type_: u32,
    /// perf_event_attr config.
    pub config: u64,
    /// What weights count.
    pub unit: Unit,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Samples whose stack could not be unwound to its end.
    pub truncated: u64,
    /// Samples whose call chain ended at a caller in no mapping (simpleperf's "error
    /// callchains").
    pub error_callchains: u64,
    /// Samples that passed the filters.
    pub samples: u64,
    /// Their total weight.
    pub weight: u64,
    /// Distinct (thread, stack) counts that passed the filters.
    pub stacks: Vec<StackCount>,
    /// Every sample that passed the filters, in time order, when rows were asked for.
    pub rows: Vec<Row>,
    /// The events of its samples' counter group (simpleperf's `--add-counter`); empty
    /// without a group.
    pub counters: Vec<String>,
    /// For each of `stacks`, what each of `counters` counted in its samples; empty without
    /// counters.
    pub counted: Vec<Vec<u64>>,
}

impl Section {
    /// Weights are time.
    pub fn time_in_ns(&self) -> bool {
        self.unit == Unit::Nanoseconds
    }
}

/// The names outputs print: threads, binaries, functions, source lines and files.
pub struct Names {
    /// Thread names.
    pub comms: Vec<String>,
    /// Binaries.
    pub dsos: Vec<Dso>,
    /// Functions.
    pub funcs: Vec<Func>,
    /// Interned `file:line` strings.
    pub srclines: Vec<String>,
    /// Interned source file paths.
    pub files: Vec<String>,
}

impl Names {
    /// A thread name.
    pub fn comm(&self, id: u32) -> &str {
        self.comms.get(id as usize).map_or("[unknown]", String::as_str)
    }

    /// A function.
    pub fn func(&self, id: FuncId) -> &Func {
        &self.funcs[id as usize]
    }

    /// The binary of a function.
    pub fn dso_of(&self, id: FuncId) -> &Dso {
        &self.dsos[self.funcs[id as usize].dso as usize]
    }

    /// A function's name for stack outputs; unknown code keeps its binary's name.
    pub fn func_name(&self, id: FuncId) -> String {
        match self.funcs.get(id as usize) {
            Some(f) if f.name == "[unknown]" => {
                let dso = self.dsos.get(f.dso as usize).map_or("?", |d| d.display_name());
                format!("[unknown] ({})", dso.rsplit('/').next().unwrap_or(dso))
            }
            Some(f) => f.name.clone(),
            None => "[unknown]".into(),
        }
    }
}

/// Facts about the recording that outputs print.
#[derive(Clone, Debug, Default)]
pub struct Info {
    /// The recording's file.
    pub input: PathBuf,
    /// The recording command line.
    pub cmdline: Option<String>,
    /// Architecture.
    pub arch: Option<String>,
    /// When the file was last written (about when the recording ended).
    pub written: Option<std::time::SystemTime>,
    /// Perf clock time of the first and last sample.
    pub time_range: (u64, u64),
    /// How long sampling was on and how long the recording lasted, in ns, where it says.
    pub recorded: Option<(u64, u64)>,
}

/// What the samples of the recording held before the filters: how many there were and, when
/// a filter on them was given, their thread names, processes, threads and CPUs.
#[derive(Clone, Debug, Default)]
pub struct Offered {
    /// Samples met, filtered or not.
    pub samples: u64,
    /// Their thread names.
    pub comms: std::collections::BTreeSet<String>,
    /// Their processes.
    pub pids: std::collections::BTreeSet<i32>,
    /// Their threads.
    pub tids: std::collections::BTreeSet<i32>,
    /// Their CPUs.
    pub cpus: std::collections::BTreeSet<u32>,
}

/// A recording, read, symbolized, filtered and weighted.
pub struct Profile {
    /// About the recording.
    pub info: Info,
    /// Event sections.
    pub sections: Vec<Section>,
    /// Names.
    pub names: Names,
    /// What each frame address was named.
    pub symbols: Symbolized,
    /// Distinct address stacks, innermost frame first.
    pub stacks: Lists<AddrId>,
    /// The functions of each distinct stack, innermost first (inline frames expanded).
    pub stack_funcs: Lists<FuncId>,
    /// How the code of each frame address of each stack runs (parallel to `stacks`).
    pub stack_exec: Lists<ExecType>,
    /// The functions `--dsos` and `--symbols` select, by id; None without those filters. With
    /// `--children` they select call-chain entries: a stack counts when any of its functions
    /// is selected, and only selected functions are entries of the text report.
    pub selected: Option<Vec<bool>>,
    /// The frame that marks off-CPU time in stack outputs, when there is any.
    pub off_cpu_marker: Option<FuncId>,
    /// Side-band records (mmap, comm, fork, exit) the kernel lost: samples after them may be
    /// given to the wrong binary or thread. Counted apart from lost samples, as perf does.
    pub lost_sideband: u64,
    /// Non-fatal problems met while reading.
    pub warnings: Vec<crate::Warning>,
    /// For each distinct stack, the index in its recorded stack of each frame shown (empty
    /// unless places were kept).
    pub stack_origin: Lists<u32>,
    /// The layouts of the recorded tracepoints' raw data, from the recording's tracing data.
    pub tracepoint_formats: Vec<rperf_perfdata::tracing::EventFormat>,
    /// Java methods compiled at run time, by frame address, as the dex methods they were
    /// compiled from, when `merge_java_methods` asked for them.
    pub java_dex: std::collections::HashMap<AddrId, DexMethod>,
    /// What the samples held before the filters, to say which filter matched nothing.
    pub offered: Offered,
    /// The threads the recording described, by thread id, as they were at its end: their
    /// process and name (an index of `Names::comms`).
    pub threads: rustc_hash::FxHashMap<i32, (i32, u32)>,
}

impl Profile {
    /// The section stack outputs show: the first with samples.
    pub fn main_section(&self) -> Option<&Section> {
        self.sections.iter().find(|s| s.samples > 0).or(self.sections.first())
    }

    /// Sections worth printing: those with samples, or the only one.
    pub fn shown_sections(&self) -> impl Iterator<Item = &Section> {
        let only = self.sections.len() == 1;
        self.sections.iter().filter(move |s| s.samples > 0 || only)
    }

    /// One warning when most of the samples are in code without symbols, naming the binaries
    /// that were not symbolized and how to supply them.
    pub fn unnamed_warning(&self) -> Option<crate::Warning> {
        let p = self;
        let s = p.main_section()?;
        let mut weight = 0u64;
        let mut binaries = std::collections::BTreeMap::<String, u64>::new();
        for c in &s.stacks {
            let Some(leaf) = p.frames(c.stack, c.off_cpu, false).next() else { continue };
            if p.symbols.is_unnamed(leaf) {
                weight = weight.saturating_add(c.weight);
                let b = binaries.entry(p.names.dso_of(leaf).display_name().to_string()).or_default();
                *b = b.saturating_add(c.weight);
            }
        }
        if weight == 0 || weight < s.weight / 2 {
            return None;
        }
        let mut top: Vec<(String, u64)> = binaries.into_iter().collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let names: Vec<String> = top.iter().take(5).map(|(n, _)| n.clone()).collect();
        let kernel = names
            .iter()
            .any(|n| n.starts_with("[kernel") || (n.starts_with('[') && n.ends_with(']') && n != "[vdso]"));
        let user = names.iter().any(|n| n.starts_with('/'));
        let mut remedies = Vec::new();
        if user {
            remedies.push(
                "pass --symfs DIR with copies of the binaries (simpleperf's binary_cache folder works)",
            );
        }
        if kernel {
            remedies.push("pass --kallsyms FILE with a copy of the recording machine's /proc/kallsyms");
        }
        if remedies.is_empty() {
            remedies.push("the code has no symbol table or JIT symbol map here");
        }
        Some(crate::Warning::Unnamed {
            percent: 100.0 * weight as f64 / s.weight.max(1) as f64,
            binaries: names,
            remedies,
        })
    }

    /// A warning when a fifth or more of the main section's samples have broken call chains
    /// (`Section::error_callchains`).
    pub fn broken_chains_warning(&self) -> Option<crate::Warning> {
        let s = self.main_section()?;
        (s.error_callchains > 0 && s.error_callchains * 5 >= s.samples).then(|| {
            crate::Warning::BrokenChains {
                percent: 100.0 * s.error_callchains as f64 / s.samples.max(1) as f64,
                event: s.name.clone(),
            }
        })
    }

    /// The functions of a counted stack, innermost first, with the off-CPU marker in front of
    /// off-CPU time when `marker` is asked for.
    pub fn frames(&self, stack: StackId, off_cpu: bool, marker: bool) -> impl Iterator<Item = FuncId> + '_ {
        let m = if off_cpu && marker { self.off_cpu_marker } else { None };
        m.into_iter().chain(self.stack_funcs[stack as usize].iter().copied())
    }
}

/// What the builder is told of each sample.
#[derive(Default)]
pub struct Sample<'a> {
    /// Index of the sample's event in the file.
    pub attr: usize,
    /// Perf clock time, ns (0 when not recorded).
    pub time: u64,
    /// The thread.
    pub thread: Thread,
    /// The CPU.
    pub cpu: u32,
    /// The event count.
    pub period: u64,
    /// Frame addresses, innermost first.
    pub addrs: &'a [AddrId],
    /// The stack could not be unwound to its end.
    pub truncated: bool,
    /// Its call chain ended at a caller in no mapping (a wrong return address): simpleperf's
    /// error callchain.
    pub broken_chain: bool,
    /// Its frames' run-time places, parallel to `addrs`, when kept.
    pub places: &'a [Place],
    /// Its tracepoint data, when kept.
    pub raw: Option<&'a [u8]>,
    /// What each counter of its counter group counted since the thread's previous sample,
    /// by event (simpleperf's `--add-counter`); empty without a group.
    pub counted: &'a [(usize, u64)],
    /// Its counter group's values as recorded (kept with its places).
    pub group: &'a [GroupValue],
}

/// One counter of a sample's counter group (simpleperf's `--add-counter`), as recorded: the
/// counter's running total.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupValue {
    /// Index of the counter's event in the file.
    pub event: u32,
    /// The counter's id (0 when the recording gives none).
    pub id: u64,
    /// Its running total.
    pub value: u64,
}

/// An event of the file.
#[derive(Clone, Debug)]
pub struct EventDesc {
    /// Name.
    pub name: String,
    /// perf_event_attr type.
    pub type_: u32,
    /// perf_event_attr config.
    pub config: u64,
}
