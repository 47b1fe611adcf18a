//! Building the profile: samples arrive from the converter as address stacks
//! (`ProfileBuilder::add_sample`), are folded into distinct stacks per thread at once (memory
//! grows with distinct stacks, not with samples; per-sample rows are kept only when the caller
//! asks for them), weighed (off-CPU time), filtered, and named when the recording has been read
//! (`ProfileBuilder::finish`).

use std::collections::HashMap;
use std::hash::BuildHasher;

use crate::configs::ProfileConfig;
use crate::error::Error;
use crate::lists::Lists;
use crate::model::{DsoKind, ExecType, Model};
use crate::options::OffCpuMode;
use crate::profile::{
    EventDesc, GroupValue, Info, Names, Place, Profile, Row, Sample, Section, StackCount, StackId, Thread,
    Unit,
};
use crate::resolve::{AddrId, Func, FuncId, Symbolized};

/// How samples of an off-CPU recording are weighed: each sample of a thread by the time until
/// that thread's next sample, so a thread's lifetime is shared among its samples; a switch-out
/// sample's share is time spent off the CPU in the stack it blocked in.
#[derive(Clone)]
struct TimeRouting {
    switch_attr: usize,
    on_attr: usize,
    on_section: Option<usize>,
    off_section: Option<usize>,
}

/// The sample log, which only the builder that made it writes: a clone logs nothing.
struct Log(Option<crate::sample_log::SampleLog>);

impl Clone for Log {
    fn clone(&self) -> Log {
        Log(None)
    }
}

/// A thread's previous sample, waiting for its weight (`off_cpu`: a switch-out).
#[derive(Clone)]
struct Pending {
    row: Row,
    /// Its places, tracepoint data and counter group, when samples are logged.
    places: Vec<Place>,
    raw: Box<[u8]>,
    group: Box<[GroupValue]>,
}

/// What the sample log keeps of a sample besides its row.
#[derive(Clone, Copy)]
struct Logged<'a> {
    places: &'a [Place],
    raw: &'a [u8],
    group: &'a [GroupValue],
}

#[derive(Clone, Default)]
struct SectionCounts {
    counts: rustc_hash::FxHashMap<(Thread, StackId, bool), (u64, u64)>,
    rows: Vec<Row>,
    /// What each counter of the samples' counter group counted, per distinct stack.
    counted: rustc_hash::FxHashMap<(Thread, StackId, bool), Vec<u64>>,
}

/// Collects samples into a profile.
#[derive(Clone)]
pub struct ProfileBuilder {
    sections: Vec<Section>,
    counts: Vec<SectionCounts>,
    timing: Option<TimeRouting>,
    pending: HashMap<i32, Pending>,
    time_range: (u64, u64),
    /// Distinct stacks, by id, and the ids by the stacks' hashes (each stack is stored once).
    stacks: Lists<AddrId>,
    stack_index: hashbrown::HashTable<StackId>,
    filters: crate::options::Filters,
    max_stack: usize,
    keep_rows: bool,
    children: bool,
    show_art_frames: bool,
    merge_java: bool,
    /// The sections `--event` keeps, when given.
    only: Option<Vec<bool>>,
    /// Per event of the file: it only carries side-band records (a dummy event's mmap, comm,
    /// fork and exit records), so what its ring lost are those, not samples.
    sideband: Vec<bool>,
    event_names: Vec<String>,
    lost_sideband: u64,
    /// Every sample with its frames' places and tracepoint data (`Needs::places`).
    log: Log,
    tracepoint_formats: Vec<rperf_perfdata::tracing::EventFormat>,
    /// `--aggregate-threads`.
    pub threads: crate::thread_pools::ThreadPools,
    /// `--proguard-mapping-file`: Java names shown as they were written.
    proguard: Option<crate::proguard::ProguardMapping>,
    /// What the samples met before the filters.
    offered: crate::unmatched::OfferedIds,
}

impl ProfileBuilder {
    /// A builder for a recording with these events. `off_cpu_recording` says the recording was
    /// made for off-CPU weighting (rperf's or simpleperf's `--trace-offcpu`); `needs` says whether to keep
    /// every sample besides the distinct stacks.
    pub fn new(
        events: &[EventDesc],
        off_cpu_recording: bool,
        opts: &ProfileConfig,
        needs: crate::options::Needs,
    ) -> Result<ProfileBuilder, Error> {
        let (sections, timing) = if off_cpu_recording {
            let (s, t) = time_sections(events, opts.trace_offcpu)?;
            (s, Some(t))
        } else if opts.trace_offcpu.is_some() {
            return Err(Error::NotOffCpu);
        } else {
            (events.iter().map(|e| section(e.name.clone(), e.type_, e.config, Unit::Events)).collect(), None)
        };
        let only = match &opts.event {
            None => None,
            Some(e) => {
                let of = |s: &Section| s.name == *e || s.name.split(" (").next() == Some(e.as_str());
                if !sections.iter().any(of) {
                    let events = sections.iter().map(|s| s.name.clone()).collect();
                    return Err(Error::NoSuchEvent { event: e.clone(), events });
                }
                Some(sections.iter().map(of).collect())
            }
        };
        let counts = sections.iter().map(|_| SectionCounts::default()).collect();
        let mut proguard: Option<crate::proguard::ProguardMapping> = None;
        for path in &opts.proguard_mappings {
            proguard.get_or_insert_with(Default::default).add(path)?;
        }
        Ok(ProfileBuilder {
            sections,
            counts,
            timing,
            pending: HashMap::new(),
            time_range: (u64::MAX, 0),
            stacks: Lists::default(),
            stack_index: Default::default(),
            filters: opts.filters.clone(),
            offered: crate::unmatched::OfferedIds::new(&opts.filters),
            max_stack: opts.max_stack,
            keep_rows: needs.samples,
            children: opts.children,
            show_art_frames: opts.show_art_frames,
            merge_java: opts.merge_java_methods,
            only,
            sideband: events.iter().map(|e| e.type_ == 1 && e.config == 9).collect(),
            event_names: events.iter().map(|e| e.name.clone()).collect(),
            lost_sideband: 0,
            log: Log(match needs.places {
                true => {
                    Some(crate::sample_log::SampleLog::new().map_err(|source| Error::SampleLog { source })?)
                }
                false => None,
            }),
            tracepoint_formats: Vec::new(),
            threads: crate::thread_pools::ThreadPools::new(&opts.aggregate_threads),
            proguard,
        })
    }

    /// Adds a sample.
    pub fn add_sample(&mut self, model: &Model, s: &Sample<'_>) {
        if s.addrs.is_empty() {
            return;
        }
        if s.time > 0 {
            self.time_range = (self.time_range.0.min(s.time), self.time_range.1.max(s.time));
        }
        let addrs = &s.addrs[..s.addrs.len().min(self.max_stack.max(1))];
        let stack = self.intern_stack(addrs);
        let places = &s.places[..addrs.len().min(s.places.len())];
        let raw = s.raw.unwrap_or_default();
        let Some(tr) = &self.timing else {
            if s.attr < self.sections.len() {
                self.sections[s.attr].truncated += u64::from(s.truncated);
                self.sections[s.attr].error_callchains += u64::from(s.broken_chain);
                let row = Row {
                    time: s.time,
                    thread: s.thread,
                    cpu: s.cpu,
                    stack,
                    off_cpu: false,
                    weight: s.period,
                };
                let logged = Logged { places, raw, group: s.group };
                self.commit(model, s.attr, row, logged, s.counted);
            }
            return;
        };
        if s.attr != tr.switch_attr && s.attr != tr.on_attr {
            return;
        }
        let switch = s.attr == tr.switch_attr;
        if let Some(sec) = if switch { tr.off_section } else { tr.on_section } {
            self.sections[sec].truncated += u64::from(s.truncated);
            self.sections[sec].error_callchains += u64::from(s.broken_chain);
        }
        let on_section = tr.on_section;
        // The thread's switch-out waiting for its length ends here, counted under the thread's
        // name now, as simpleperf counts it: time that ran into an exec is the new program's.
        if let Some(prev) = self.pending.remove(&s.thread.tid) {
            let prev = Pending { row: Row { thread: s.thread, ..prev.row }, ..prev };
            self.settle(model, prev, s.time);
        }
        let row =
            Row { time: s.time, thread: s.thread, cpu: s.cpu, stack, off_cpu: switch, weight: s.period };
        if !switch {
            // On the CPU, a sample weighs the time its period says.
            if let Some(sec) = on_section {
                self.commit(model, sec, row, Logged { places, raw, group: s.group }, &[]);
            }
            return;
        }
        let (places, raw, group) = match self.log.0 {
            Some(_) => (places.to_vec(), raw.into(), s.group.into()),
            None => Default::default(),
        };
        self.pending.insert(s.thread.tid, Pending { row, places, raw, group });
    }

    /// A thread was switched in, or exited (recordings without switch records): the
    /// switch-out sample it waited in lasts until now.
    pub fn switched_in(&mut self, model: &Model, tid: i32, time: u64) {
        if self.timing.is_none() {
            return;
        }
        if let Some(prev) = self.pending.remove(&tid) {
            self.settle(model, prev, time);
        }
    }

    /// The recording's tracing data (a feature section, or a record in simpleperf's files):
    /// the layouts of its tracepoints' raw data. What cannot be read is left out.
    pub fn tracing_data(&mut self, data: &[u8]) {
        self.tracepoint_formats = rperf_perfdata::tracing::decode_formats(data);
    }

    /// The kernel lost `count` records of event `attr`'s ring: samples, or side-band records
    /// of an event that carries only those.
    pub fn lost(&mut self, attr: usize, count: u64) {
        if self.sideband.get(attr).copied().unwrap_or(false) {
            self.lost_sideband = self.lost_sideband.saturating_add(count);
            return;
        }
        let i = if self.timing.is_some() { 0 } else { attr };
        if let Some(s) = self.sections.get_mut(i) {
            s.lost = s.lost.saturating_add(count);
        }
    }

    fn intern_stack(&mut self, addrs: &[AddrId]) -> StackId {
        let hash_of = |stack: &[AddrId]| rustc_hash::FxBuildHasher.hash_one(stack);
        let (stacks, hash) = (&self.stacks, hash_of(addrs));
        if let Some(&id) = self.stack_index.find(hash, |&id| &stacks[id as usize] == addrs) {
            return id;
        }
        let id = self.stacks.len() as StackId;
        self.stacks.push(addrs.iter().copied());
        let stacks = &self.stacks;
        self.stack_index.insert_unique(hash, id, |&id| hash_of(&stacks[id as usize]));
        id
    }

    /// Gives a thread's switch-out sample its weight: the time until `until` (at least 1 ns,
    /// as simpleperf weighs it).
    fn settle(&mut self, model: &Model, prev: Pending, until: u64) {
        let Some(sec) = self.timing.as_ref().and_then(|tr| tr.off_section) else { return };
        let row = Row { weight: until.saturating_sub(prev.row.time).max(1), ..prev.row };
        let logged = Logged { places: &prev.places, raw: &prev.raw, group: &prev.group };
        self.commit(model, sec, row, logged, &[]);
    }

    /// Counts a weighed sample into a section, when it passes the thread filters.
    fn commit(&mut self, model: &Model, sec: usize, row: Row, logged: Logged<'_>, counted: &[(usize, u64)]) {
        let Row { time, thread, cpu, stack, off_cpu, weight } = row;
        let f = &self.filters;
        // Relative --time bounds count from the first sample (samples arrive in time order).
        let time = (time, self.time_range.0);
        self.offered.note(thread, cpu);
        let thread_name = &model.strings[thread.comm as usize];
        let process_name = || model.threads.get(&thread.pid).map_or("", |t| &model.strings[t.comm as usize]);
        if !f.keeps(thread, thread_name, process_name, cpu, time) {
            return;
        }
        let thread = self.threads.thread_of(thread, thread_name);
        let c = &mut self.counts[sec];
        let e = c.counts.entry((thread, stack, off_cpu)).or_default();
        e.0 = e.0.saturating_add(1);
        e.1 = e.1.saturating_add(weight);
        if !counted.is_empty() {
            let sums = c.counted.entry((thread, stack, off_cpu)).or_insert_with(|| vec![0; counted.len()]);
            sums.iter_mut().zip(counted).for_each(|(s, (_, v))| *s = s.saturating_add(*v));
            let names = &self.event_names;
            let section = &mut self.sections[sec];
            if section.counters.is_empty() {
                section.counters =
                    counted.iter().map(|(e, _)| names.get(*e).cloned().unwrap_or_default()).collect();
            }
        }
        let row = Row { thread, ..row };
        if self.keep_rows {
            c.rows.push(row);
        }
        if let Some(log) = &mut self.log.0 {
            let process = model.threads.get(&row.thread.pid).map(|t| t.comm);
            log.push(sec as u32, &row, process, (logged.places, logged.raw), logged.group);
        }
    }

    /// The recorded stacks as reports show them (`java::Shaper`), with each frame's execution
    /// type and, when places are kept, its index in the recorded stack.
    fn shape_stacks(
        &mut self,
        names: &Names,
        symbols: &Symbolized,
        java_dex: &std::collections::HashMap<AddrId, crate::profile::DexMethod>,
    ) -> (Lists<AddrId>, Lists<ExecType>, Lists<u32>) {
        let merged = self.merge_java.then_some(java_dex);
        let shaper = crate::java::Shaper::new(names, symbols, self.show_art_frames, merged);
        let frames = self.stacks.items().len();
        let mut stacks = Lists::with_capacity(self.stacks.len(), frames);
        let mut stack_exec = Lists::with_capacity(self.stacks.len(), frames);
        let mut stack_origin = Lists::default();
        for addrs in std::mem::take(&mut self.stacks).iter() {
            let (addrs, exec, origin) = shaper.shape(addrs.to_vec());
            stacks.push(addrs);
            stack_exec.push(exec);
            if self.log.0.is_some() {
                stack_origin.push(origin);
            }
        }
        stacks.shrink_to_fit();
        stack_exec.shrink_to_fit();
        (stacks, stack_exec, stack_origin)
    }

    /// Each section's index among those `--event` keeps (None for the others).
    fn shown_index(&self) -> Vec<Option<u32>> {
        let mut next = 0u32;
        (0..self.sections.len())
            .map(|i| {
                let shown = self.only.as_ref().is_none_or(|only| only[i]);
                next += u32::from(shown);
                shown.then(|| next - 1)
            })
            .collect()
    }

    /// Ends the recording: threads still alive get their last weights, frames are named (by
    /// `symbolize`), the symbol filters select stacks, and totals are made. With
    /// `Needs::places`, the logged samples come too, to be read one by one.
    pub fn finish(
        mut self,
        mut model: Model,
        symbolize: impl FnOnce(&mut Model) -> (Symbolized, Vec<Func>, Vec<String>, Vec<String>),
        info: Info,
        warnings: Vec<crate::Warning>,
    ) -> (Profile, Option<crate::sample_log::SampleReader>) {
        // Each thread's last sample, with no sample or exit after it, has no known length: it
        // is left out, as simpleperf leaves it out (a last switch-out weighed to the end of
        // the recording made a thread that slept through it the hottest).
        self.pending.clear();
        // Stacks are all in: their index goes before naming loads what it reads.
        self.stack_index = Default::default();
        let (symbols, mut funcs, srclines, files) = symbolize(&mut model);
        let any_off_cpu = self.counts.iter().any(|c| c.counts.keys().any(|k| k.2));
        let off_cpu_marker = any_off_cpu.then(|| {
            let dso = model.dso("[off-cpu]", None, DsoKind::Unknown);
            funcs.push(Func { dso, name: "[off-cpu]".into(), inlined: false, system: None });
            (funcs.len() - 1) as FuncId
        });
        self.proguard.iter().for_each(|m| m.rename(&mut funcs));
        let threads = model.threads.iter().map(|(&tid, t)| (tid, (t.pid, t.comm))).collect();
        let names = Names { comms: model.strings, dsos: model.dsos, funcs, srclines, files };
        // Java stacks read as methods (ART's frames hidden unless asked for).
        let java_dex = match self.merge_java {
            true => crate::java::dex_methods(&names, &symbols),
            false => Default::default(),
        };
        let (stacks, stack_exec, stack_origin) = self.shape_stacks(&names, &symbols, &java_dex);
        let count: usize = stacks.items().iter().map(|a| symbols.funcs(*a).len()).sum();
        let mut stack_funcs = Lists::with_capacity(stacks.len(), count);
        for addrs in stacks.iter() {
            stack_funcs.push(addrs.iter().flat_map(|a| symbols.funcs(*a).iter().copied()));
        }
        // Without --children the filters select samples by their sampled function; with it,
        // by any function of the call chain (simpleperf's semantics).
        let selected = self.filters.select(&names);
        let kept: Vec<bool> = stack_funcs
            .iter()
            .map(|f| match &selected {
                None => !f.is_empty(),
                Some(sel) if self.children => f.iter().any(|&x| sel[x as usize]),
                Some(sel) => f.first().is_some_and(|&leaf| sel[leaf as usize]),
            })
            .collect();
        for (section, counts) in self.sections.iter_mut().zip(std::mem::take(&mut self.counts)) {
            fill_section(section, counts, &kept);
        }
        let shown = self.shown_index();
        if let Some(only) = &self.only {
            let mut keep = only.iter();
            self.sections.retain(|_| *keep.next().expect("one flag per section"));
        }
        let sample_log = self.log.0.take().map(|log| log.finish(kept, shown));
        let mut warnings = warnings;
        if self.lost_sideband > 0 {
            warnings.push(crate::Warning::LostSideband { count: self.lost_sideband });
        }
        let mut info = info;
        info.time_range = if self.time_range.0 > self.time_range.1 { (0, 0) } else { self.time_range };
        let profile = Profile {
            info,
            sections: self.sections,
            offered: std::mem::take(&mut self.offered).named(&names.comms),
            names,
            symbols,
            stacks,
            stack_funcs,
            stack_exec,
            selected,
            off_cpu_marker,
            lost_sideband: self.lost_sideband,
            warnings,
            stack_origin,
            tracepoint_formats: std::mem::take(&mut self.tracepoint_formats),
            java_dex,
            threads,
        };
        (profile, sample_log)
    }
}

/// A section's stacks and rows from its counts, keeping the stacks the filters `kept`.
fn fill_section(section: &mut Section, mut counts: SectionCounts, kept: &[bool]) {
    let mut counted = std::mem::take(&mut counts.counted);
    let mut stacks: Vec<StackCount> = counts
        .counts
        .into_iter()
        .filter(|((_, stack, _), _)| kept[*stack as usize])
        .map(|((thread, stack, off_cpu), (samples, weight))| StackCount {
            thread,
            stack,
            off_cpu,
            samples,
            weight,
        })
        .collect();
    // A stable order, so that outputs are the same from run to run.
    stacks.sort_by_key(|s| (s.thread, s.stack, s.off_cpu));
    section.samples = stacks.iter().fold(0u64, |a, s| a.saturating_add(s.samples));
    section.weight = stacks.iter().fold(0u64, |a, s| a.saturating_add(s.weight));
    if !counted.is_empty() {
        let key = |s: &StackCount| (s.thread, s.stack, s.off_cpu);
        section.counted = stacks.iter().map(|s| counted.remove(&key(s)).unwrap_or_default()).collect();
    }
    section.stacks = stacks;
    let mut rows = counts.rows;
    rows.retain(|r| kept[r.stack as usize]);
    rows.sort_by_key(|r| r.time);
    section.rows = rows;
}

fn section(name: String, type_: u32, config: u64, unit: Unit) -> Section {
    Section { name, type_, config, unit, ..Default::default() }
}

/// The sections of an off-CPU recording in `mode` (mixed by default), and how its samples are
/// routed to them.
fn time_sections(
    events: &[EventDesc],
    mode: Option<OffCpuMode>,
) -> Result<(Vec<Section>, TimeRouting), Error> {
    use OffCpuMode::*;
    let switch_attr = events.iter().position(|e| e.name == "sched:sched_switch");
    let on_attr = events.iter().position(|e| rperf_perfdata::events::counts_cpu_time(&e.name));
    let on_attr =
        on_attr.or_else(|| events.iter().position(|e| e.name != "sched:sched_switch" && e.name != "dummy"));
    let (Some(switch_attr), Some(on_attr)) = (switch_attr, on_attr) else {
        return Err(Error::OffCpuEvents);
    };
    let mode = mode.unwrap_or(Mixed);
    let on = &events[on_attr];
    let mut sections = Vec::new();
    let (mut on_section, mut off_section) = (None, None);
    if matches!(mode, OnCpu | OnOffCpu) {
        on_section = Some(sections.len());
        sections.push(section(format!("{} (on-cpu time)", on.name), on.type_, on.config, Unit::Nanoseconds));
    }
    if matches!(mode, OffCpu | OnOffCpu) {
        off_section = Some(sections.len());
        let sw = &events[switch_attr];
        sections.push(section(
            "sched:sched_switch (off-cpu time)".into(),
            sw.type_,
            sw.config,
            Unit::Nanoseconds,
        ));
    }
    if mode == Mixed {
        on_section = Some(0);
        off_section = Some(0);
        // Named as simpleperf names it: the on-CPU event (its header says the weights are time).
        sections.push(section(on.name.clone(), on.type_, on.config, Unit::Nanoseconds));
    }
    Ok((sections, TimeRouting { switch_attr, on_attr, on_section, off_section }))
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
