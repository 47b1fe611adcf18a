//! The simpleperf-style text report: a header, then per event a table of entries sorted by
//! overhead, each optionally followed by its call graph.

use std::collections::HashMap;
use std::io::{self, Write};

use rayon::prelude::*;

use super::aggregate::{Entry, EntryKey, EventAggregate};
use super::call_tree::CallTree;
use super::common::pct;
use crate::configs::TextConfig;
use crate::options::SortKey;
use crate::profile::{Names, Profile};

/// About how many rows and call-graph nodes are rendered at once, on every thread, before they
/// are written; an entry's tree of more nodes is written straight out.
const RENDERED_NODES: usize = 16384;

/// A report column for an entry, printable.
fn column(names: &Names, key: SortKey, k: &EntryKey) -> String {
    let text = match key {
        SortKey::Comm => names.comm(k.comm).to_string(),
        SortKey::Pid => k.pid.to_string(),
        SortKey::Tid => k.tid.to_string(),
        SortKey::Dso | SortKey::DsoTo => dso_label(names, k.dso),
        SortKey::Symbol | SortKey::SymbolTo => func_label(names, k.func),
        SortKey::DsoFrom => dso_label(names, k.from_dso),
        SortKey::SymbolFrom => func_label(names, k.from_func),
        SortKey::Srcline => match k.srcline {
            0 => "[unknown]".into(),
            l => names.srclines.get(l as usize - 1).cloned().unwrap_or_else(|| "[unknown]".into()),
        },
        SortKey::VaddrInFile => format!("{:#x}", k.vaddr),
    };
    crate::escape::printable(&text).into_owned()
}

/// A shared object's name for the text report.
fn dso_label(names: &Names, id: u32) -> String {
    names.dsos.get(id as usize).map_or("[unknown]".into(), |d| d.display_name().to_string())
}

/// A function's name for the text report: inlined calls are marked.
fn func_label(names: &Names, id: u32) -> String {
    match names.funcs.get(id as usize) {
        Some(f) if f.inlined => format!("{} (inlined)", crate::escape::printable(&f.name)),
        Some(f) => crate::escape::printable(&f.name).into_owned(),
        None => "[unknown]".into(),
    }
}

fn write_header(out: &mut dyn Write, p: &Profile) -> io::Result<()> {
    if let Some(c) = &p.info.cmdline {
        writeln!(out, "Cmdline: {}", crate::escape::printable(c))?;
    }
    if let Some(a) = &p.info.arch {
        writeln!(out, "Arch: {}", crate::escape::printable(a))?;
    }
    // Sampling that was off for part of the recording (--delay, --control) is said.
    if let Some((on, all)) = p.info.recorded.filter(|(on, all)| on + 1_000_000 < *all) {
        writeln!(
            out,
            "Recorded: {:.3} s of {:.3} s (sampling was off for the rest)",
            on as f64 / 1e9,
            all as f64 / 1e9
        )?;
    }
    if p.lost_sideband > 0 {
        writeln!(out, "Lost side-band records: {} (mmap, comm, fork, exit)", p.lost_sideband)?;
    }
    Ok(())
}

/// Writes the whole text report: the header, then a table per event section.
pub fn write(out: &mut dyn Write, p: &Profile, opts: &TextConfig) -> io::Result<()> {
    write_header(out, p)?;
    for s in p.shown_sections() {
        let agg = EventAggregate::of_section(p, s, opts);
        writeln!(
            out,
            "Event: {} (type {}, config {})",
            crate::escape::printable(&s.name),
            s.type_,
            s.config
        )?;
        writeln!(out, "Samples: {}", s.samples)?;
        // Said of stacks where stacks are shown (as simpleperf says error callchains): the
        // table alone reads only sampled frames.
        let stacks_shown = opts.children || opts.call_graph.is_some();
        if s.error_callchains > 0 && stacks_shown {
            let share = 100.0 * s.error_callchains as f64 / s.samples.max(1) as f64;
            writeln!(out, "Error Callchains: {}, {share:.6}%", s.error_callchains)?;
        }
        if s.time_in_ns() {
            writeln!(out, "Time in ns: {}", s.weight)?;
        } else {
            writeln!(out, "Event count: {}", s.weight)?;
        }
        if s.lost > 0 {
            writeln!(out, "Lost samples: {}", s.lost)?;
        }
        if s.truncated > 0 && stacks_shown {
            writeln!(out, "Truncated stacks: {}", s.truncated)?;
        }
        writeln!(out)?;
        write_section(out, &agg, s, &p.names, opts)?;
    }
    Ok(())
}

/// The main section's table as the text report prints it, for a display of its own (`rperf
/// top`): the section's samples, the column titles, and each row's cells in the report's
/// order, with the row's binary and function where the sort keys give them.
pub struct Table {
    /// Samples of the section.
    pub samples: u64,
    /// Column titles.
    pub titles: Vec<String>,
    /// The rows, at most the number asked for.
    pub rows: Vec<TableRow>,
}

/// One row of a `Table`.
pub struct TableRow {
    /// Cells, printable, in the order of the titles.
    pub cells: Vec<String>,
    /// The binary's name, with `dso` among the sort keys.
    pub dso: Option<String>,
    /// The function, with `symbol` among the sort keys.
    pub func: Option<crate::resolve::FuncId>,
}

/// The first `n` rows of the main section's table (see `Table`).
pub fn table(p: &Profile, opts: &TextConfig, n: usize) -> Table {
    let Some(s) = p.main_section() else { return Table { samples: 0, titles: Vec::new(), rows: Vec::new() } };
    let agg = EventAggregate::of_section(p, s, opts);
    let has = |k| opts.sort.contains(&k);
    let rows = sorted_entries(&agg, s.weight, &p.names, opts)
        .into_iter()
        .take(n)
        .map(|(k, e)| TableRow {
            cells: row(k, e, s, &p.names, s.weight, opts),
            dso: has(SortKey::Dso).then(|| dso_label(&p.names, k.dso)),
            func: has(SortKey::Symbol).then_some(k.func),
        })
        .collect();
    Table { samples: s.samples, titles: column_titles(opts, s), rows }
}

/// Self weight per (binary, function) of the main section, and the section's total.
fn self_weights(p: &Profile) -> (HashMap<(String, String), u64>, u64) {
    let mut by = HashMap::new();
    let Some(s) = p.main_section() else { return (by, 0) };
    for c in &s.stacks {
        let leaf = p.frames(c.stack, c.off_cpu, false).next().expect("stacks are not empty");
        let key = (
            crate::escape::printable(p.names.dso_of(leaf).display_name()).into_owned(),
            func_label(&p.names, leaf),
        );
        // Weights come from the file: sums saturate (a fuzzer find, in tests/fuzz-regressions).
        let w: &mut u64 = by.entry(key).or_default();
        *w = w.saturating_add(c.weight);
    }
    (by, s.weight)
}

/// Writes a comparison of `p` with `base`, as `perf diff` shows one: each function's share of
/// the samples (self) in the base and now, and the change, largest change first.
pub fn write_diff(out: &mut dyn Write, p: &Profile, base: &Profile, opts: &TextConfig) -> io::Result<()> {
    write_header(out, p)?;
    let (new, new_total) = self_weights(p);
    let (old, old_total) = self_weights(base);
    let mut keys: Vec<&(String, String)> = new.keys().chain(old.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut rows: Vec<(f64, f64, &(String, String))> = keys
        .into_iter()
        .map(|k| (pct(*old.get(k).unwrap_or(&0), old_total), pct(*new.get(k).unwrap_or(&0), new_total), k))
        .filter(|(b, n, _)| b.max(*n) >= opts.percent_limit)
        .collect();
    rows.sort_by(|a, b| (b.1 - b.0).abs().total_cmp(&(a.1 - a.0).abs()).then_with(|| a.2.cmp(b.2)));
    writeln!(
        out,
        "Baseline: {} ({} samples)",
        base.info.input.display(),
        base.main_section().map_or(0, |s| s.samples)
    )?;
    writeln!(out, "New: {} ({} samples)", p.info.input.display(), p.main_section().map_or(0, |s| s.samples))?;
    writeln!(out)?;
    if opts.csv {
        writeln!(
            out,
            "{}",
            ["Baseline", "New", "Delta", "Shared Object", "Symbol"].join(&opts.csv_separator)
        )?;
        for (b, n, (dso, sym)) in rows {
            let sep = opts.csv_separator.as_str();
            let cells = [
                format!("{b:.2}%"),
                format!("{n:.2}%"),
                format!("{:+.2}%", n - b),
                csv_field(dso, sep),
                csv_field(sym, sep),
            ];
            writeln!(out, "{}", cells.join(sep))?;
        }
        return Ok(());
    }
    let dso_w = rows.iter().map(|r| r.2 .0.chars().count()).max().unwrap_or(0).max("Shared Object".len());
    writeln!(out, "{:<9} {:<9} {:<9} {:<dso_w$}  Symbol", "Baseline", "New", "Delta", "Shared Object")?;
    for (b, n, (dso, sym)) in rows {
        let delta = format!("{:+.2}%", n - b);
        writeln!(out, "{:<9} {:<9} {delta:<9} {dso:<dso_w$}  {sym}", format!("{b:.2}%"), format!("{n:.2}%"))?;
    }
    writeln!(out)?;
    Ok(())
}

fn write_section(
    out: &mut dyn Write,
    agg: &EventAggregate,
    section: &crate::profile::Section,
    names: &Names,
    opts: &TextConfig,
) -> io::Result<()> {
    let total = section.weight;
    let entries = sorted_entries(agg, total, names, opts);
    let head = column_titles(opts, section);
    // Rows are made as they are written, a few at a time (twice when padded: once to measure
    // the columns), never all held: a large report has tens of thousands.
    let row_of = |(k, e): &(&EntryKey, &Entry)| row(k, e, section, names, total, opts);
    if opts.csv {
        let sep = opts.csv_separator.as_str();
        writeln!(out, "{}", head.iter().map(|c| csv_field(c, sep)).collect::<Vec<_>>().join(sep))?;
        for r in entries.iter().map(row_of) {
            writeln!(out, "{}", r.iter().map(|c| csv_field(c, sep)).collect::<Vec<_>>().join(sep))?;
        }
        writeln!(out)?;
        return Ok(());
    }
    // Rows are measured and rendered on every thread where call graphs follow them; the flat
    // table's measured no faster so (waking the threads cost what they saved).
    let parallel = opts.call_graph.is_some();
    let widths = column_widths(&entries, &head, row_of, parallel);
    // Each cell padded to its column's width, but the last.
    let line = |out: &mut dyn Write, cells: &[String]| -> io::Result<()> {
        let last = cells.len() - 1;
        for (i, c) in cells.iter().enumerate() {
            match i == last {
                true => writeln!(out, "{c}")?,
                false => write!(out, "{c:<w$}  ", w = widths[i])?,
            }
        }
        Ok(())
    };
    line(out, &head)?;
    let no_tree = super::call_tree::CallTree::default();
    let graph = |out: &mut dyn Write, e: &Entry| -> io::Result<()> {
        // A brief call graph leaves out what another entry's graph shows whole: the graph of
        // an entry reached from only one other entry is part of that one's.
        if !opts.full_callgraph && matches!(e.parent, super::aggregate::Parent::One(_)) {
            writeln!(out, "       [skipped in brief callgraph mode]")?;
        } else {
            let limit = super::aggregate::tree_limit(opts);
            let max_depth = opts.call_graph_depth.unwrap_or(usize::MAX);
            let style = TreeStyle { names, total, limit, raw: opts.raw_period, max_depth };
            write_tree(out, e.tree.as_deref().unwrap_or(&no_tree), &style)?;
        }
        writeln!(out)
    };
    // Entries are rendered a few at a time, then written in order; a large tree is written
    // straight out, never held as text.
    let nodes = |e: &Entry| e.tree.as_ref().map_or(0, |t| t.nodes.len());
    let held = |e: &Entry| opts.call_graph.is_some() && nodes(e) <= RENDERED_NODES;
    let render = |e: &(&EntryKey, &Entry)| -> io::Result<Vec<u8>> {
        let mut text = Vec::new();
        line(&mut text, &row_of(e))?;
        if held(e.1) {
            graph(&mut text, e.1)?;
        }
        Ok(text)
    };
    let graph_after = |out: &mut dyn Write, e: &Entry| match opts.call_graph.is_some() && !held(e) {
        true => graph(out, e),
        false => Ok(()),
    };
    write_entries(out, &entries, parallel, |e| 1 + if held(e) { nodes(e) } else { 0 }, render, graph_after)?;
    writeln!(out)?;
    Ok(())
}

type Row<'a> = (&'a EntryKey, &'a Entry);

/// The widest cell of each column, the titles `head` included, of the rows `row_of` makes.
fn column_widths(
    entries: &[Row<'_>],
    head: &[String],
    row_of: impl Fn(&Row<'_>) -> Vec<String> + Sync,
    parallel: bool,
) -> Vec<usize> {
    let widest = |mut a: Vec<usize>, b: Vec<usize>| {
        a.iter_mut().zip(b).for_each(|(a, b)| *a = (*a).max(b));
        a
    };
    let cell_widths = |e| row_of(e).iter().map(|c| c.chars().count()).collect::<Vec<usize>>();
    let head_widths = || head.iter().map(String::len).collect::<Vec<usize>>();
    match parallel {
        true => entries.par_iter().map(cell_widths).reduce(head_widths, widest),
        false => entries.iter().map(cell_widths).fold(head_widths(), widest),
    }
}

/// Writes the entries in order, each as `render` makes its text and then what `after` writes
/// straight out. With `parallel`, rendered on every thread a few at a time (about
/// `RENDERED_NODES` of what `cost` counts); else each written as soon as it is rendered.
fn write_entries(
    out: &mut dyn Write,
    entries: &[Row<'_>],
    parallel: bool,
    cost: impl Fn(&Entry) -> usize,
    render: impl Fn(&Row<'_>) -> io::Result<Vec<u8>> + Sync,
    after: impl Fn(&mut dyn Write, &Entry) -> io::Result<()>,
) -> io::Result<()> {
    if !parallel {
        for e in entries {
            out.write_all(&render(e)?)?;
            after(out, e.1)?;
        }
        return Ok(());
    }
    let mut rest = entries;
    while !rest.is_empty() {
        let mut held = 0;
        let fits = |e: &&Row<'_>| {
            let fits = held < RENDERED_NODES;
            held += cost(e.1);
            fits
        };
        let (these, after_these) = rest.split_at(rest.iter().take_while(fits).count().max(1));
        rest = after_these;
        let texts: Vec<io::Result<Vec<u8>>> = these.par_iter().map(&render).collect();
        for (e, text) in these.iter().zip(texts) {
            out.write_all(&text?)?;
            after(out, e.1)?;
        }
    }
    Ok(())
}

/// The entries shown, in simpleperf's order: by weight, entries whose call graph is skipped
/// after those shown, then by self weight, then by name; those under `--percent-limit` left
/// out.
fn sorted_entries<'a>(
    agg: &'a EventAggregate,
    total: u64,
    names: &Names,
    opts: &TextConfig,
) -> Vec<(&'a EntryKey, &'a Entry)> {
    let mut entries: Vec<(&EntryKey, &Entry)> = agg.entries.iter().collect();
    let dsos: Vec<&str> = names.dsos.iter().map(|d| d.display_name()).collect();
    let weight = |e: &Entry| if opts.children { e.children } else { e.period };
    let skipped =
        |e: &Entry| opts.call_graph.is_some() && matches!(e.parent, super::aggregate::Parent::One(_));
    entries.retain(|(_, e)| weight(e) > 0 && pct(weight(e), total) >= opts.percent_limit);
    let order = |a: &(&EntryKey, &Entry), b: &(&EntryKey, &Entry)| {
        weight(b.1)
            .cmp(&weight(a.1))
            .then_with(|| skipped(a.1).cmp(&skipped(b.1)))
            .then_with(|| b.1.period.cmp(&a.1.period))
            .then_with(|| by_names(names, &dsos, a.0, b.0))
    };
    // On every thread where call graphs follow, as the rows are rendered (see write_section).
    match opts.call_graph.is_some() {
        true => entries.par_sort_by(order),
        false => entries.sort_by(order),
    }
    entries
}

/// Entries in the order of what they show, as simpleperf compares them: thread name, process,
/// thread, binary, function, source line, address. Ids are the order names were met in,
/// which depends on how much of each stack was read.
fn by_names(names: &Names, dsos: &[&str], a: &EntryKey, b: &EntryKey) -> std::cmp::Ordering {
    let dso = |id: u32| dsos.get(id as usize).copied().unwrap_or("");
    let func = |id: u32| names.funcs.get(id as usize).map_or("", |f| f.name.as_str());
    let line =
        |id: u32| id.checked_sub(1).and_then(|l| names.srclines.get(l as usize)).map_or("", String::as_str);
    names
        .comm(a.comm)
        .cmp(names.comm(b.comm))
        .then(a.pid.cmp(&b.pid))
        .then(a.tid.cmp(&b.tid))
        .then_with(|| dso(a.dso).cmp(dso(b.dso)))
        .then_with(|| func(a.func).cmp(func(b.func)))
        .then_with(|| line(a.srcline).cmp(line(b.srcline)))
        .then(a.vaddr.cmp(&b.vaddr))
        .then_with(|| dso(a.from_dso).cmp(dso(b.from_dso)))
        .then_with(|| func(a.from_func).cmp(func(b.from_func)))
        .then_with(|| a.cmp(b))
}

/// Whether event counts are columns: as simpleperf names them; CSV output always has them,
/// with the event's name.
fn shows_event_counts(opts: &TextConfig) -> bool {
    opts.print_event_count || opts.csv
}

/// Whether `--print-event-count` shows a column per counter of the section's counter group
/// (`EventCount_cpu-cycles`, `EventCount_instructions`), as simpleperf shows a recording made
/// with `--add-counter`; with --children, two per counter (`AccEventCount_cpu-cycles`,
/// `SelfEventCount_cpu-cycles`, ...).
fn per_counter(opts: &TextConfig, section: &crate::profile::Section) -> bool {
    opts.print_event_count && !section.counters.is_empty()
}

fn column_titles(opts: &TextConfig, section: &crate::profile::Section) -> Vec<String> {
    let mut head: Vec<String> = Vec::new();
    if opts.children {
        head.push("Children".into());
        head.push("Self".into());
    } else {
        head.push("Overhead".into());
    }
    if opts.show_samples {
        head.push("Sample".into());
    }
    let counts_head: &[&str] =
        if opts.children { &["AccEventCount", "SelfEventCount"] } else { &["EventCount"] };
    if per_counter(opts, section) {
        for c in &section.counters {
            let c = crate::escape::printable(c);
            head.extend(counts_head.iter().map(|h| format!("{h}_{c}")));
        }
    } else if opts.print_event_count {
        head.extend(counts_head.iter().map(|s| s.to_string()));
    }
    head.extend(opts.sort.iter().map(|k| k.title().to_string()));
    if shows_event_counts(opts) && !opts.print_event_count {
        head.extend(counts_head.iter().map(|s| s.to_string()));
        head.push("EventName".into());
    }
    head
}

/// One entry's cells, in the order of `column_titles`.
fn row(
    k: &EntryKey,
    e: &Entry,
    section: &crate::profile::Section,
    names: &Names,
    total: u64,
    opts: &TextConfig,
) -> Vec<String> {
    let fmt_share = |v: u64| if opts.raw_period { v.to_string() } else { format!("{:.2}%", pct(v, total)) };
    let mut r = Vec::new();
    if opts.children {
        r.push(fmt_share(e.children));
    }
    r.push(fmt_share(e.period));
    if opts.show_samples {
        r.push(e.samples.to_string());
    }
    let mut counts = Vec::new();
    if opts.children {
        counts.push(e.children.to_string());
    }
    counts.push(e.period.to_string());
    if per_counter(opts, section) {
        let n = section.counters.len();
        for i in 0..n {
            if opts.children {
                r.push(e.counted_in(i, n, true).to_string());
            }
            r.push(e.counted_in(i, n, false).to_string());
        }
    } else if opts.print_event_count {
        r.extend(counts.iter().cloned());
    }
    r.extend(opts.sort.iter().map(|key| column(names, *key, k)));
    if shows_event_counts(opts) && !opts.print_event_count {
        r.extend(counts);
        r.push(crate::escape::printable(&section.name).into_owned());
    }
    r
}

/// A CSV field, quoted when it holds the separator, a quote or a line break.
fn csv_field(s: &str, sep: &str) -> String {
    if s.contains(sep) || s.contains(['"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// How call trees are printed.
struct TreeStyle<'a> {
    names: &'a Names,
    /// The event's total.
    total: u64,
    /// Nodes under this share of the total (percent) are left out.
    limit: f64,
    /// Event counts instead of shares.
    raw: bool,
    /// Levels printed below the entry's own node (simpleperf's `--max-stack`).
    max_depth: usize,
}

/// Prints a call tree perf-style: chains of single callers continue on the next line, branches
/// get `|--xx.xx%--` markers. Shares are of the parent node, as simpleperf shows them (of the
/// entry at the top); nodes under `limit` percent of the event's total are left out; levels
/// (a node with the chain of single callers it continues into) below `max_depth` too.
fn write_tree(out: &mut dyn Write, tree: &CallTree, style: &TreeStyle<'_>) -> io::Result<()> {
    let indent = "       ".to_string();
    writeln!(out, "{indent}|")?;
    if tree.nodes.is_empty() {
        return Ok(());
    }
    write_children(out, tree, 0, &indent, style, None)
}

/// Prints the children of `node`, which is at level `depth` (None for the tree's root, above
/// the entry's own node).
fn write_children(
    out: &mut dyn Write,
    tree: &CallTree,
    node: usize,
    indent: &str,
    style: &TreeStyle<'_>,
    depth: Option<usize>,
) -> io::Result<()> {
    let (names, total) = (style.names, style.total);
    let mut kids: Vec<usize> = tree.children(node);
    kids.sort_by(|a, b| tree.nodes[*b].period.cmp(&tree.nodes[*a].period));
    kids.retain(|&k| pct(tree.nodes[k].period, total) >= style.limit);
    let parent = tree.nodes[node].period;
    if kids.len() == 1 && tree.nodes[kids[0]].period == parent && depth.is_some() {
        let k = kids[0];
        writeln!(out, "{indent}{}", func_label(names, tree.nodes[k].func))?;
        return write_children(out, tree, k, indent, style, depth);
    }
    let depth = depth.map_or(0, |d| d + 1);
    if depth > style.max_depth {
        return Ok(());
    }
    let n = kids.len();
    for (i, &k) in kids.iter().enumerate() {
        // As simpleperf shows them: a node's share of its parent (of the entry at the top).
        let share = if style.raw {
            tree.nodes[k].period.to_string()
        } else {
            format!("{:.2}%", pct(tree.nodes[k].period, parent))
        };
        let last = i + 1 == n;
        let marker = if last { "--" } else { "|--" };
        let label = format!("{marker}{share}-- ");
        writeln!(out, "{indent}{label}{}", func_label(names, tree.nodes[k].func))?;
        let pad = if last { " ".repeat(label.len()) } else { format!("|{}", " ".repeat(label.len() - 1)) };
        let child_indent = format!("{indent}{pad}");
        write_children(out, tree, k, &child_indent, style, Some(depth))?;
        if !last {
            writeln!(out, "{indent}|")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries are written in their order, each followed by what is written after it, however
    /// they are shared into rounds and threads, an entry heavier than a round included.
    #[test]
    fn entries_are_written_in_order_across_rounds() {
        let keys: Vec<EntryKey> = (0..40).map(|func| EntryKey { func, ..Default::default() }).collect();
        let heavy = |k: &EntryKey| if k.func == 7 { 2 * RENDERED_NODES } else { k.func as usize * 500 };
        let entries: Vec<Entry> =
            keys.iter().map(|k| Entry { samples: heavy(k) as u64, ..Default::default() }).collect();
        let rows: Vec<Row<'_>> = keys.iter().zip(&entries).collect();
        let expected: String = keys.iter().map(|k| format!("row {}\nafter {}\n", k.func, heavy(k))).collect();
        for parallel in [false, true] {
            let mut out = Vec::new();
            let render = |(k, _): &Row<'_>| Ok(format!("row {}\n", k.func).into_bytes());
            let after = |out: &mut dyn Write, e: &Entry| writeln!(out, "after {}", e.samples);
            write_entries(&mut out, &rows, parallel, |e| e.samples as usize, render, after).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected, "parallel: {parallel}");
        }
    }
}
