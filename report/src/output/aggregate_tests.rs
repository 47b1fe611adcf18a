//! Entries, their counts and call trees, folded from hand-made samples.

use super::*;
use crate::ReportOptions;

fn funcs() -> Vec<Func> {
    ["leaf", "mid", "main"]
        .iter()
        .map(|n| Func { dso: 0, name: n.to_string(), inlined: false, system: None })
        .collect()
}

/// A sample of thread 1 with `frames`, innermost first.
fn sample(period: u64, frames: &[FuncId]) -> ResolvedSample<'_> {
    ResolvedSample {
        comm: 0,
        pid: 1,
        tid: 1,
        srcline: 0,
        period,
        samples: 1,
        frames,
        vaddrs: &[],
        counted: &[],
    }
}

#[test]
fn self_and_children() {
    let opts = ReportOptions { children: true, sort: vec![SortKey::Symbol], ..Default::default() };
    let cfg = AggregateConfig::new(&opts.text_config());
    let mut agg = EventAggregate::default();
    let f = funcs();
    agg.add(&cfg, &sample(10, &[0, 1, 2]), &f, None);
    agg.add(&cfg, &sample(5, &[1, 2]), &f, None);
    let get = |func| agg.entries.get(&EntryKey { func, ..Default::default() }).unwrap().clone();
    assert_eq!((get(0).period, get(0).children), (10, 10));
    assert_eq!((get(1).period, get(1).children), (5, 15));
    assert_eq!((get(2).period, get(2).children), (0, 15));
    assert_eq!(agg.period, 15);
}

#[test]
fn caller_tree_runs_root_to_leaf() {
    let opts = ReportOptions {
        call_graph: Some(CallOrder::Caller),
        sort: vec![SortKey::Symbol],
        ..Default::default()
    };
    let cfg = AggregateConfig::new(&opts.text_config());
    let mut agg = EventAggregate::default();
    agg.add(&cfg, &sample(1, &[0, 1, 2]), &funcs(), None);
    let e = agg.entries.values().next().unwrap();
    let tree = e.tree.as_deref().expect("a call graph");
    let first = tree.children(0)[0];
    assert_eq!(tree.nodes[first].func, 2);
}

/// A recording of simpleperf's corpus, shared beside the project; fails loudly when missing.
fn simpleperf_recording(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir =
        std::env::var_os("RPERF_SIMPLEPERF_TESTDATA").map(std::path::PathBuf::from).unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/testdata/simpleperf")
        });
    let file = dir.join(name);
    assert!(
        file.is_file(),
        "simpleperf test recording {} not found: set RPERF_SIMPLEPERF_TESTDATA",
        file.display()
    );
    (dir, file)
}

/// Every entry of an aggregate with its counts, what it is reached from and its call tree, in
/// the order of their keys.
fn entries_in_full(agg: &EventAggregate) -> Vec<String> {
    let mut entries: Vec<_> = agg.entries.iter().collect();
    entries.sort_by_key(|(k, _)| **k);
    let tree = |e: &Entry| e.tree.as_ref().map(|t| format!("{:?}", t.nodes));
    entries
        .into_iter()
        .map(|(k, e)| {
            let counts = (e.samples, e.period, e.children, &e.counted, e.parent);
            format!("{k:?} {counts:?} {:?}", tree(e))
        })
        .collect()
}

#[test]
fn stacks_folded_by_two_threads_give_what_one_thread_gives() {
    let (dir, file) = simpleperf_recording("perf_with_interpreter_frames.data");
    let by_symbol = vec![SortKey::Comm, SortKey::Pid, SortKey::Tid, SortKey::Dso, SortKey::Symbol];
    let by_line = vec![SortKey::Dso, SortKey::Symbol, SortKey::Srcline];
    // Brief call graphs: the entries are counted first, without trees.
    let cases = [
        (CallOrder::Caller, by_symbol.clone()),
        (CallOrder::Callee, by_symbol),
        (CallOrder::Caller, by_line),
        (CallOrder::Caller, vec![SortKey::Dso]),
    ];
    for (order, sort) in cases {
        let call_graph = Some(order);
        let opts = ReportOptions {
            input: file.clone(),
            symfs: vec![dir.clone()],
            children: true,
            call_graph,
            sort,
            ..Default::default()
        };
        let profile = crate::load(&opts).unwrap();
        let section = profile.main_section().unwrap();
        assert!(section.stacks.len() > 1000, "{} stack counts", section.stacks.len());
        let text = opts.text_config();
        let fold = |parallel_from| {
            let cfg = AggregateConfig { parallel_from, ..AggregateConfig::new(&text) };
            entries_in_full(&EventAggregate::of_section_with(&profile, section, &text, &cfg))
        };
        let (one, two) = (fold(usize::MAX), fold(1));
        let trees = two.iter().filter(|e| !e.ends_with("None")).count();
        assert!(trees > 0, "no call tree was grown");
        assert!(one == two, "{call_graph:?} {:?}: the entries differ", opts.sort);
    }
}

#[test]
fn a_recursive_function_counts_once_per_entry_it_is_on_the_stack() {
    let sample = ResolvedSample { srcline: 4, ..sample(10, &[0, 1, 0, 2, 1]) };
    let children = |sort: Vec<SortKey>| {
        let opts = ReportOptions { children: true, sort, ..Default::default() };
        let cfg = AggregateConfig::new(&opts.text_config());
        let mut agg = EventAggregate::default();
        agg.add(&cfg, &sample, &funcs(), None);
        agg.add(&cfg, &ResolvedSample { frames: &[1, 1, 2], ..sample }, &funcs(), None);
        let mut got: Vec<_> = agg.entries.iter().map(|(k, e)| (k.func, k.srcline, e.children)).collect();
        got.sort();
        got
    };
    // By function: the repeated frames of a stack add nothing more.
    assert_eq!(children(vec![SortKey::Symbol]), [(0, 0, 10), (1, 0, 20), (2, 0, 20)]);
    // By function and line: the sampled frame is an entry of its own, its function's other
    // frames another.
    assert_eq!(
        children(vec![SortKey::Symbol, SortKey::Srcline]),
        [(0, 0, 10), (0, 5, 10), (1, 0, 20), (1, 5, 10), (2, 0, 20)]
    );
}

#[test]
fn halves_merge_the_same_whichever_is_larger() {
    let opts = ReportOptions { children: true, sort: vec![SortKey::Symbol], ..Default::default() };
    let cfg = AggregateConfig::new(&opts.text_config());
    let fold = |stacks: &[&[FuncId]]| {
        let mut agg = EventAggregate { counts_only: true, ..Default::default() };
        stacks.iter().for_each(|s| agg.add(&cfg, &sample(10, s), &funcs(), None));
        agg
    };
    let (big, small): (&[&[FuncId]], &[&[FuncId]]) = (&[&[0, 1, 2], &[1, 2], &[2]], &[&[0, 2]]);
    let merged = |into: &[&[FuncId]], from: &[&[FuncId]]| {
        let mut agg = fold(into);
        agg.merge(fold(from));
        entries_in_full(&agg)
    };
    let (one_way, other_way) = (merged(big, small), merged(small, big));
    assert_eq!(one_way, other_way);
    let all = fold(&[&[0, 1, 2], &[1, 2], &[2], &[0, 2]]);
    assert_eq!(one_way, entries_in_full(&all));
    assert_eq!(one_way.len(), 3);
}
