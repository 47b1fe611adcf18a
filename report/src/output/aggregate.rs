//! The text report's view of a section: its counted stacks folded into entries (by the sort
//! keys) with self and children counts and call trees.

use std::ops::Range;

use rustc_hash::{FxHashMap, FxHashSet};

use super::call_tree::{CallTree, PathScratch};
use super::common::pct;
use super::first_on_stack::FirstOnStack;
use crate::configs::TextConfig;
use crate::options::{CallOrder, SortKey};
use crate::profile::{Profile, Section};
use crate::resolve::{Func, FuncId};

/// A sample after unwinding and symbolization.
pub struct ResolvedSample<'a> {
    /// Thread name (interned).
    pub comm: u32,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Event count of the samples.
    pub period: u64,
    /// How many samples had this stack.
    pub samples: u64,
    /// Source line of the sampled address (interned by the resolver).
    pub srcline: u32,
    /// Functions, innermost first.
    pub frames: &'a [FuncId],
    /// Each frame's address in its binary (`vaddr_in_file`), when sorted by it; else empty.
    pub vaddrs: &'a [u64],
    /// What each counter of the section's counter group counted in the samples; else empty.
    pub counted: &'a [u64],
}

/// What identifies a report entry; fields not in the sort keys are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryKey {
    /// Thread name (interned).
    pub comm: u32,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// DSO id.
    pub dso: u32,
    /// Function id.
    pub func: u32,
    /// Source line id.
    pub srcline: u32,
    /// The address in the binary (`vaddr_in_file`).
    pub vaddr: u64,
    /// With `-b`: the DSO id the branch left.
    pub from_dso: u32,
    /// With `-b`: the function id the branch left.
    pub from_func: u32,
}

/// Adds a sample's counter values to an entry's, at `at` (its self values at 0, with
/// --children its accumulated ones after them); counts come from the file: sums saturate.
fn add_counted(to: &mut Box<[u64]>, at: usize, counted: &[u64]) {
    if to.len() < at + counted.len() {
        let mut grown = vec![0; at + counted.len()];
        grown[..to.len()].copy_from_slice(to);
        *to = grown.into_boxed_slice();
    }
    to[at..].iter_mut().zip(counted).for_each(|(a, v)| *a = a.saturating_add(*v));
}

/// One line of the report: a report holds one per distinct key (tens of thousands on a large
/// compile's), so what most entries never use takes no room.
#[derive(Clone, Debug, Default)]
pub struct Entry {
    /// Samples whose innermost frame is this entry.
    pub samples: u64,
    /// Their event count (self).
    pub period: u64,
    /// What each counter of the section's counter group counted in them (self), then, with
    /// --children, in the samples with this entry anywhere in the stack (`counted_in`).
    pub counted: Box<[u64]>,
    /// Event count of samples with this entry anywhere in the stack (with --children).
    pub children: u64,
    /// The call graph under the entry, when it has one.
    pub tree: Option<Box<CallTree>>,
    /// The entries next to this one on the way from the call graphs' roots (its callers in
    /// caller order, its callees in callee order): when there is only one, this entry's call
    /// graph is part of that one's, and brief call graphs skip it.
    pub parent: Parent,
}

impl Entry {
    /// What counter `i` of `n` counted: in this entry's own samples, or with `accumulated`
    /// in every sample with the entry on its stack.
    pub fn counted_in(&self, i: usize, n: usize, accumulated: bool) -> u64 {
        self.counted.get(i + if accumulated { n } else { 0 }).copied().unwrap_or(0)
    }

    /// The entry's call graph, made at its first path.
    fn tree_mut(&mut self) -> &mut CallTree {
        self.tree.get_or_insert_default()
    }
}

/// The entries a call-graph entry is reached from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Parent {
    /// Not reached from another entry (yet).
    #[default]
    None,
    /// Always from this one.
    One(Neighbour),
    /// From several, or it is itself where call graphs start.
    Many,
}

/// An entry next to another on a stack, by what can tell it from that one: both keys come
/// from the same sample, so their thread and branch fields are the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Neighbour([u32; 5]);

impl From<EntryKey> for Neighbour {
    fn from(k: EntryKey) -> Neighbour {
        Neighbour([k.dso, k.func, k.srcline, k.vaddr as u32, (k.vaddr >> 32) as u32])
    }
}

impl Parent {
    /// With `other`, what the stacks each was seen on say together.
    fn merge(&mut self, other: Parent) {
        match other {
            Parent::None => {}
            Parent::One(k) => self.add(Some(k)),
            Parent::Many => *self = Parent::Many,
        }
    }

    fn add(&mut self, p: Option<Neighbour>) {
        *self = match (*self, p) {
            (_, None) | (Parent::Many, _) => Parent::Many,
            (Parent::None, Some(k)) => Parent::One(k),
            (Parent::One(a), Some(k)) if a == k => Parent::One(a),
            (Parent::One(_), Some(_)) => Parent::Many,
        };
    }
}

/// The aggregate of one event.
#[derive(Default)]
pub struct EventAggregate {
    /// Samples counted.
    pub samples: u64,
    /// Their event count.
    pub period: u64,
    /// Entries.
    pub entries: FxHashMap<EntryKey, Entry>,
    /// Entries are counted without call trees (`grow_trees` builds those shown).
    counts_only: bool,
    /// The entries met so far on the stack being added.
    met: FirstOnStack<EntryKey>,
}

/// What aggregation needs to know of the options.
#[derive(Clone, Debug)]
pub struct AggregateConfig {
    keys: [bool; 9],
    children: bool,
    /// `-b`: each stack is a branch's target and then its source.
    branches: bool,
    call_graph: Option<CallOrder>,
    /// Inlined functions are entries of their own, their self time split out of the
    /// function they were inlined into (`--inline`); by default a sample's self time is the
    /// containing function's, as simpleperf and perf count it.
    split_inline: bool,
    /// Sections of at least this many stack counts are folded by two threads.
    parallel_from: usize,
}

impl AggregateConfig {
    /// From report options.
    pub fn new(opts: &TextConfig) -> AggregateConfig {
        let has = |k| opts.sort.contains(&k);
        AggregateConfig {
            keys: [
                has(SortKey::Comm),
                has(SortKey::Pid),
                has(SortKey::Tid),
                has(SortKey::Dso) || has(SortKey::DsoTo),
                has(SortKey::Symbol) || has(SortKey::SymbolTo),
                has(SortKey::Srcline),
                has(SortKey::VaddrInFile),
                has(SortKey::DsoFrom),
                has(SortKey::SymbolFrom),
            ],
            children: opts.children,
            branches: opts.branches,
            call_graph: opts.call_graph,
            split_inline: opts.inline_entries,
            parallel_from: PARALLEL_STACKS,
        }
    }

    /// The frame a sample's self time goes to: the sampled function, or the function that
    /// contains the sampled address when inlined calls are not entries of their own.
    fn self_frame(&self, s: &ResolvedSample<'_>, funcs: &[Func]) -> usize {
        if self.split_inline {
            return 0;
        }
        s.frames.iter().position(|&f| !funcs.get(f as usize).is_some_and(|f| f.inlined)).unwrap_or(0)
    }

    /// A branch's target and source functions, from a `-b` stack (target, then source): the
    /// functions that hold the addresses (the inlined ones, with `--inline`).
    fn branch_ends(&self, p: &Profile, stack: u32) -> Option<[FuncId; 2]> {
        let end = |a: &crate::resolve::AddrId| {
            let funcs = p.symbols.funcs(*a);
            let holder = funcs.iter().find(|&&f| !p.names.funcs.get(f as usize).is_some_and(|f| f.inlined));
            if self.split_inline { funcs.first() } else { holder.or(funcs.first()) }.copied()
        };
        match p.stacks.get(stack as usize)? {
            [to, from] => Some([end(to)?, end(from)?]),
            _ => None,
        }
    }

    /// Whether entries are told apart by address.
    pub fn by_vaddr(&self) -> bool {
        self.keys[6]
    }

    /// Whether the frames of one stack that hold one function are all one entry and those of
    /// two functions two: the sort keys hold the symbol, but neither source line (only the
    /// sampled frame has one) nor address.
    fn entry_per_func(&self) -> bool {
        self.keys[4] && !self.keys[5] && !self.keys[6] && !self.branches
    }

    fn key(&self, s: &ResolvedSample<'_>, i: usize, funcs: &[Func]) -> EntryKey {
        let func = s.frames[i];
        let [c, p, t, d, f, l, v, df, sf] = self.keys;
        let from = if self.branches { s.frames.get(1).copied() } else { None };
        EntryKey {
            comm: if c { s.comm } else { 0 },
            pid: if p { s.pid } else { 0 },
            tid: if t { s.tid } else { 0 },
            dso: if d { funcs[func as usize].dso } else { 0 },
            func: if f { func } else { 0 },
            // The source line belongs to the sampled address, so only the entry that gets the
            // sample's self time has one.
            srcline: if l && i == self.self_frame(s, funcs) { s.srcline + 1 } else { 0 },
            vaddr: if v { s.vaddrs.get(i).copied().unwrap_or(0) } else { 0 },
            from_dso: if df { from.map_or(0, |f| funcs[f as usize].dso) } else { 0 },
            from_func: if sf { from.unwrap_or(0) } else { 0 },
        }
    }
}

/// Sections of fewer stack counts are folded on one thread.
const PARALLEL_STACKS: usize = 4096;

/// The least share of the section's weight a call-tree node has to be shown (percent): the
/// `--percent-limit`, and in brief call graphs at least 0.5%.
pub(super) fn tree_limit(opts: &TextConfig) -> f64 {
    if opts.full_callgraph {
        opts.percent_limit
    } else {
        opts.percent_limit.max(0.5)
    }
}

impl EventAggregate {
    /// The entries of one section of a profile.
    pub fn of_section(p: &Profile, section: &Section, opts: &TextConfig) -> EventAggregate {
        Self::of_section_with(p, section, opts, &AggregateConfig::new(opts))
    }

    /// `of_section` with `cfg`, made from `opts`.
    fn of_section_with(
        p: &Profile,
        section: &Section,
        opts: &TextConfig,
        cfg: &AggregateConfig,
    ) -> EventAggregate {
        if cfg.children && cfg.call_graph.is_some() && !opts.full_callgraph && !cfg.branches {
            // A brief call graph shows no tree for an entry always reached from one other
            // (its graph is part of that one's), nor for one under the least share a node
            // shows (a node's share is at most its entry's): found first, so that only the
            // trees shown are built, and each then cut to the nodes shown.
            let mut agg = Self::fold(p, section, cfg, true);
            let limit = tree_limit(opts);
            let shows = |weight: u64| pct(weight, section.weight) >= limit;
            let shown =
                agg.entries.iter().filter(|(_, e)| !matches!(e.parent, Parent::One(_)) && shows(e.children));
            let shown: FxHashSet<EntryKey> = shown.map(|(k, _)| *k).collect();
            agg.grow_trees(p, section, cfg, &shown, shows);
            return agg;
        }
        Self::fold(p, section, cfg, false)
    }

    /// Folds a section's stacks in, with every entry's call tree unless `counts_only`. Counts
    /// alone are folded in two halves at once, then merged.
    fn fold(p: &Profile, section: &Section, cfg: &AggregateConfig, counts_only: bool) -> EventAggregate {
        let fold = |stacks: Range<usize>| {
            let mut agg = EventAggregate { counts_only, ..Default::default() };
            let (funcs, selected) = (&p.names.funcs, p.selected.as_deref());
            each_sample(p, section, cfg, stacks, |_, sample| agg.add(cfg, sample, funcs, selected));
            agg
        };
        let n = section.stacks.len();
        if !counts_only || n < cfg.parallel_from {
            return fold(0..n);
        }
        let (mut agg, other) = rayon::join(|| fold(0..n / 2), || fold(n / 2..n));
        agg.merge(other);
        agg
    }

    /// Adds the counts of `other`, folded without trees from other stacks of the section.
    /// The smaller table is added to the larger, grown once to the size of both together:
    /// each table that growing step by step makes is held beside both halves.
    fn merge(&mut self, mut other: EventAggregate) {
        self.samples = self.samples.saturating_add(other.samples);
        self.period = self.period.saturating_add(other.period);
        if other.entries.len() > self.entries.len() {
            std::mem::swap(&mut self.entries, &mut other.entries);
        }
        let new = other.entries.keys().filter(|k| !self.entries.contains_key(k)).count();
        self.entries.reserve(new);
        for (key, o) in other.entries {
            let e = self.entries.entry(key).or_default();
            e.samples = e.samples.saturating_add(o.samples);
            e.period = e.period.saturating_add(o.period);
            e.children = e.children.saturating_add(o.children);
            add_counted(&mut e.counted, 0, &o.counted);
            e.parent.merge(o.parent);
        }
    }

    /// Builds the call trees of the entries `shown`, each cut to the nodes whose weight `shows`
    /// keeps, the entries shared out between threads.
    fn grow_trees(
        &mut self,
        p: &Profile,
        section: &Section,
        cfg: &AggregateConfig,
        shown: &FxHashSet<EntryKey>,
        shows: impl Fn(u64) -> bool + Sync,
    ) {
        use rayon::prelude::*;
        let mut keys: Vec<EntryKey> = shown.iter().copied().collect();
        keys.sort_unstable();
        let (starts, mut paths) = shown_paths(p, section, cfg, &keys);
        let caller = cfg.call_graph == Some(CallOrder::Caller);
        // A path's `d`th function from the entry: towards the sampled one in caller order,
        // towards the root in callee order.
        let step = |(n, i): (u32, u32), d: usize| {
            let frames = &p.stack_funcs[section.stacks[n as usize].stack as usize];
            let i = i as usize;
            if caller {
                i.checked_sub(d).map(|j| frames[j])
            } else {
                frames.get(i + d).copied()
            }
        };
        let weight = |n: u32| section.stacks[n as usize].weight;
        let mut rest = &mut paths[..];
        let mut each = Vec::with_capacity(keys.len());
        for (e, key) in keys.iter().enumerate() {
            let (these, after) = rest.split_at_mut((starts[e + 1] - starts[e]) as usize);
            rest = after;
            if !these.is_empty() {
                each.push((key, these));
            }
        }
        let trees: Vec<(&EntryKey, CallTree)> = each
            .into_par_iter()
            .map_init(PathScratch::default, |scratch, (key, these)| {
                (key, CallTree::from_paths(these, step, weight, &shows, scratch))
            })
            .collect();
        for (key, tree) in trees {
            if let Some(e) = self.entries.get_mut(key) {
                e.tree = Some(Box::new(tree));
            }
        }
    }

    /// Folds one sample in; only functions in `selected` (all, when None) become entries.
    /// Counts come from the file, so sums saturate instead of overflowing on corrupt periods
    /// (a regression found by tests/damaged_files.rs).
    pub fn add(
        &mut self,
        cfg: &AggregateConfig,
        s: &ResolvedSample<'_>,
        funcs: &[Func],
        selected: Option<&[bool]>,
    ) {
        if s.frames.is_empty() {
            return;
        }
        let at = if cfg.branches { 0 } else { cfg.self_frame(s, funcs) };
        let is_selected = |f: FuncId| selected.is_none_or(|sel| sel.get(f as usize).copied().unwrap_or(true));
        self.samples = self.samples.saturating_add(s.samples);
        self.period = self.period.saturating_add(s.period);
        if is_selected(s.frames[at]) {
            let key = cfg.key(s, at, funcs);
            let e = self.entries.entry(key).or_default();
            e.samples = e.samples.saturating_add(s.samples);
            e.period = e.period.saturating_add(s.period);
            add_counted(&mut e.counted, 0, s.counted);
        }
        if cfg.branches {
            // A branch has no call chain: its children are itself, as simpleperf counts them.
            if cfg.children && is_selected(s.frames[0]) {
                let e = self.entries.entry(cfg.key(s, 0, funcs)).or_default();
                e.children = e.children.saturating_add(s.period);
            }
            return;
        }
        if !cfg.children {
            let key = cfg.key(s, at, funcs);
            let e = self.entries.entry(key).or_default();
            match cfg.call_graph {
                Some(CallOrder::Callee) => e.tree_mut().add_path(s.frames.iter().copied(), s.period),
                Some(CallOrder::Caller) => e.tree_mut().add_path(s.frames.iter().rev().copied(), s.period),
                None => {}
            }
            return;
        }
        // Inclusive counts: every distinct entry on the stack gets the sample once.
        let mut met = std::mem::take(&mut self.met);
        met.start(funcs.len());
        let last = s.frames.len() - 1;
        for (i, _) in s.frames.iter().enumerate().filter(|(_, &f)| is_selected(f)) {
            let key = cfg.key(s, i, funcs);
            if !met.first(cfg.entry_per_func().then_some(s.frames[i]), key) {
                continue;
            }
            // The entry this one is reached from in this stack, as simpleperf counts it: the
            // sampled function in caller order and the outermost caller in callee order end
            // the walk and count nothing; the root a walk starts from is reached from nowhere;
            // a neighbour the filters leave out is no entry.
            let neighbour =
                |j: usize| is_selected(s.frames[j]).then(|| Neighbour::from(cfg.key(s, j, funcs)));
            let from = match cfg.call_graph {
                Some(CallOrder::Caller) if i > 0 => Some((i < last).then(|| neighbour(i + 1)).flatten()),
                Some(CallOrder::Callee) if i < last => Some((i > 0).then(|| neighbour(i - 1)).flatten()),
                _ => None,
            };
            let e = self.entries.entry(key).or_default();
            if let Some(from) = from {
                e.parent.add(from);
            }
            e.children = e.children.saturating_add(s.period);
            add_counted(&mut e.counted, s.counted.len(), s.counted);
            if self.counts_only {
                continue;
            }
            match cfg.call_graph {
                // The functions this entry called, down to the sampled one.
                Some(CallOrder::Caller) => {
                    e.tree_mut().add_path(s.frames[..=i].iter().rev().copied(), s.period)
                }
                // The callers of this entry.
                Some(CallOrder::Callee) => e.tree_mut().add_path(s.frames[i..].iter().copied(), s.period),
                None => {}
            }
        }
        self.met = met;
    }
}

/// Where each of the entries `keys` first is on each stack, innermost first, as `add` counts
/// it, as (stack count, frame) paths grouped by entry, each entry's in the section's order,
/// and where each entry's begin (with the end after the last). Counted first (both halves of
/// the stacks at once), so that the list is made at its size and filled in order in place:
/// with the entries, it is the largest thing a call-graph report holds.
fn shown_paths(
    p: &Profile,
    section: &Section,
    cfg: &AggregateConfig,
    keys: &[EntryKey],
) -> (Vec<u32>, Vec<(u32, u32)>) {
    let id: FxHashMap<EntryKey, u32> = keys.iter().zip(0..).map(|(k, i)| (*k, i)).collect();
    let funcs = &p.names.funcs;
    let is_selected =
        |f: FuncId| p.selected.as_deref().is_none_or(|s| s.get(f as usize).copied().unwrap_or(true));
    // Most frames are of functions no shown entry is of: passed over without a key.
    let mut of_shown = vec![!cfg.keys[4]; funcs.len()];
    for k in keys.iter().filter(|_| cfg.keys[4]) {
        if let Some(f) = of_shown.get_mut(k.func as usize) {
            *f = true;
        }
    }
    let may_be_shown = |f: FuncId| of_shown.get(f as usize).is_none_or(|&s| s) && is_selected(f);
    let by_func = cfg.entry_per_func();
    let each_path = |stacks: Range<usize>, f: &mut dyn FnMut(u32, (u32, u32))| {
        let mut met = FirstOnStack::default();
        each_sample(p, section, cfg, stacks, |n, s| {
            met.start(funcs.len());
            for i in (0..s.frames.len()).filter(|&i| may_be_shown(s.frames[i])) {
                let key = cfg.key(s, i, funcs);
                if let Some(&e) = id.get(&key).filter(|_| met.first(by_func.then_some(s.frames[i]), key)) {
                    f(e, (n as u32, i as u32));
                }
            }
        })
    };
    let count = |stacks: Range<usize>| {
        let mut starts = vec![0u32; keys.len() + 1];
        each_path(stacks, &mut |e, _| starts[e as usize + 1] += 1);
        starts
    };
    let n = section.stacks.len();
    let mut starts = if n < cfg.parallel_from {
        count(0..n)
    } else {
        let (a, b) = rayon::join(|| count(0..n / 2), || count(n / 2..n));
        a.iter().zip(&b).map(|(a, b)| a + b).collect()
    };
    for e in 0..keys.len() {
        starts[e + 1] += starts[e];
    }
    let mut paths = vec![(0u32, 0u32); starts[keys.len()] as usize];
    let mut next = starts.clone();
    each_path(0..n, &mut |e, path| {
        paths[next[e as usize] as usize] = path;
        next[e as usize] += 1;
    });
    (starts, paths)
}

/// Each stack count of a section as a sample, with its index: its frames (a branch's target
/// and source with `-b`), their addresses in their binaries when sorted by them, its source
/// line and counters.
fn each_sample(
    p: &Profile,
    section: &Section,
    cfg: &AggregateConfig,
    stacks: Range<usize>,
    mut f: impl FnMut(usize, &ResolvedSample<'_>),
) {
    let mut vaddrs = Vec::new();
    for (i, c) in section.stacks.iter().enumerate().take(stacks.end).skip(stacks.start) {
        let branch;
        let frames = if cfg.branches {
            let Some(ends) = cfg.branch_ends(p, c.stack) else { continue };
            branch = ends;
            &branch[..]
        } else {
            &p.stack_funcs[c.stack as usize][..]
        };
        vaddrs.clear();
        if cfg.by_vaddr() {
            for &a in &p.stacks[c.stack as usize] {
                let v = p.symbols.vaddr_in_file(a);
                vaddrs.extend(p.symbols.funcs(a).iter().map(|_| v));
            }
        }
        let srcline = p.stacks[c.stack as usize].first().map_or(0, |a| p.symbols.srcline[*a as usize]);
        let t = c.thread;
        let sample = ResolvedSample {
            comm: t.comm,
            pid: t.pid,
            tid: t.tid,
            period: c.weight,
            samples: c.samples,
            srcline,
            frames,
            vaddrs: &vaddrs,
            counted: section.counted.get(i).map_or(&[], Vec::as_slice),
        };
        f(i, &sample);
    }
}

#[cfg(test)]
#[path = "aggregate_tests.rs"]
mod tests;
