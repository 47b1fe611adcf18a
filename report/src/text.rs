//! The simpleperf-style text report: a header, then per event a table of entries sorted by
//! overhead, each optionally followed by its call graph.

use std::io::{self, Write};

use crate::aggregate::{CallTree, Entry, EntryKey, EventAggregate};
use crate::model::Model;
use crate::options::{ReportOptions, SortKey};
use crate::resolve::Func;

/// Facts about the recording printed above the tables.
pub struct Header {
    /// The recording command line.
    pub cmdline: Option<String>,
    /// Architecture.
    pub arch: Option<String>,
}

/// One event's section.
pub struct Section<'a> {
    /// Event name.
    pub name: String,
    /// perf_event_attr type.
    pub type_: u32,
    /// perf_event_attr config.
    pub config: u64,
    /// Aggregated samples.
    pub agg: &'a EventAggregate,
    /// Samples the kernel reported lost.
    pub lost: u64,
    /// Samples whose stack could not be unwound to its end.
    pub truncated: u64,
    /// The event count is time in nanoseconds (off-CPU recordings).
    pub time_in_ns: bool,
}

/// Names the report prints.
pub struct Names<'a> {
    /// The model (strings, DSOs).
    pub model: &'a Model,
    /// Functions.
    pub funcs: &'a [Func],
    /// Source lines.
    pub srclines: &'a [String],
}

impl Names<'_> {
    fn column(&self, key: SortKey, k: &EntryKey) -> String {
        match key {
            SortKey::Comm => self.model.strings[k.comm as usize].clone(),
            SortKey::Pid => k.pid.to_string(),
            SortKey::Tid => k.tid.to_string(),
            SortKey::Dso => self
                .model
                .dsos
                .get(k.dso as usize)
                .map_or("[unknown]".into(), |d| d.display_name().to_string()),
            SortKey::Symbol => self.func(k.func),
            SortKey::Srcline => match k.srcline {
                0 => "[unknown]".into(),
                l => self.srclines.get(l as usize - 1).cloned().unwrap_or_else(|| "[unknown]".into()),
            },
        }
    }

    /// A function's name for the text report: inlined calls are marked.
    fn func(&self, id: u32) -> String {
        match self.funcs.get(id as usize) {
            Some(f) if f.inlined => format!("{} (inlined)", f.name),
            Some(f) => f.name.clone(),
            None => "[unknown]".into(),
        }
    }

    /// A function's name for stack outputs; unknown code keeps its binary's name.
    pub fn func_name(&self, id: u32) -> String {
        match self.funcs.get(id as usize) {
            Some(f) if f.name == "[unknown]" => {
                let dso = self.model.dsos.get(f.dso as usize).map_or("?", |d| d.display_name());
                format!("[unknown] ({})", dso.rsplit('/').next().unwrap_or(dso))
            }
            Some(f) => f.name.clone(),
            None => "[unknown]".into(),
        }
    }

    /// A thread name.
    pub fn comm(&self, id: u32) -> &str {
        &self.model.strings[id as usize]
    }
}

fn pct(part: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * part as f64 / total as f64
    }
}

/// Writes the whole text report.
pub fn write(
    out: &mut dyn Write,
    header: &Header,
    sections: &[Section<'_>],
    names: &Names<'_>,
    opts: &ReportOptions,
) -> io::Result<()> {
    if let Some(c) = &header.cmdline {
        writeln!(out, "Cmdline: {c}")?;
    }
    if let Some(a) = &header.arch {
        writeln!(out, "Arch: {a}")?;
    }
    for s in sections {
        write_section(out, s, names, opts)?;
    }
    Ok(())
}

fn write_section(
    out: &mut dyn Write,
    s: &Section<'_>,
    names: &Names<'_>,
    opts: &ReportOptions,
) -> io::Result<()> {
    writeln!(out, "Event: {} (type {}, config {})", s.name, s.type_, s.config)?;
    writeln!(out, "Samples: {}", s.agg.samples)?;
    if s.time_in_ns {
        writeln!(out, "Time in ns: {}", s.agg.period)?;
    } else {
        writeln!(out, "Event count: {}", s.agg.period)?;
    }
    if s.lost > 0 {
        writeln!(out, "Lost samples: {}", s.lost)?;
    }
    if s.truncated > 0 {
        writeln!(out, "Truncated stacks: {}", s.truncated)?;
    }
    writeln!(out)?;
    let total = s.agg.period;
    let mut entries: Vec<(&EntryKey, &Entry)> = s.agg.entries.iter().collect();
    let weight = |e: &Entry| if opts.children { e.children } else { e.period };
    entries.sort_by(|a, b| weight(b.1).cmp(&weight(a.1)).then_with(|| a.0.cmp(b.0)));
    entries.retain(|(_, e)| weight(e) > 0 && pct(weight(e), total) >= opts.percent_limit);

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
    if opts.print_event_count {
        head.push("EventCount".into());
    }
    head.extend(opts.sort.iter().map(|k| k.title().to_string()));
    let fmt_share = |v: u64| if opts.raw_period { v.to_string() } else { format!("{:.2}%", pct(v, total)) };
    let rows: Vec<Vec<String>> = entries
        .iter()
        .map(|(k, e)| {
            let mut r = Vec::new();
            if opts.children {
                r.push(fmt_share(e.children));
            }
            r.push(fmt_share(e.period));
            if opts.show_samples {
                r.push(e.samples.to_string());
            }
            if opts.print_event_count {
                r.push(e.period.to_string());
            }
            r.extend(opts.sort.iter().map(|key| names.column(*key, k)));
            r
        })
        .collect();
    if opts.csv {
        writeln!(out, "{}", head.join(","))?;
        for r in &rows {
            writeln!(out, "{}", r.iter().map(|c| csv_field(c)).collect::<Vec<_>>().join(","))?;
        }
        writeln!(out)?;
        return Ok(());
    }
    let mut widths: Vec<usize> = head.iter().map(String::len).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let last = cells.len() - 1;
        cells
            .iter()
            .enumerate()
            .map(|(i, c)| if i == last { c.clone() } else { format!("{c:<w$}", w = widths[i]) })
            .collect::<Vec<_>>()
            .join("  ")
    };
    writeln!(out, "{}", line(&head))?;
    for (r, (_, e)) in rows.iter().zip(&entries) {
        writeln!(out, "{}", line(r))?;
        if opts.call_graph.is_some() {
            let limit = if opts.full_callgraph { opts.percent_limit } else { opts.percent_limit.max(0.5) };
            write_tree(out, &e.tree, names, total, limit, opts.raw_period)?;
            writeln!(out)?;
        }
    }
    writeln!(out)?;
    Ok(())
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Prints a call tree perf-style: chains of single callers continue on the next line, branches
/// get `|--xx.xx%--` markers. Shares are of the event's total.
fn write_tree(
    out: &mut dyn Write,
    tree: &CallTree,
    names: &Names<'_>,
    total: u64,
    limit: f64,
    raw: bool,
) -> io::Result<()> {
    let indent = "       ".to_string();
    writeln!(out, "{indent}|")?;
    write_children(out, tree, 0, &indent, names, total, limit, raw, true)
}

#[allow(clippy::too_many_arguments)]
fn write_children(
    out: &mut dyn Write,
    tree: &CallTree,
    node: usize,
    indent: &str,
    names: &Names<'_>,
    total: u64,
    limit: f64,
    raw: bool,
    top: bool,
) -> io::Result<()> {
    let mut kids: Vec<usize> = tree.nodes[node].children.iter().map(|&c| c as usize).collect();
    kids.sort_by(|a, b| tree.nodes[*b].period.cmp(&tree.nodes[*a].period));
    kids.retain(|&k| pct(tree.nodes[k].period, total) >= limit);
    let parent = tree.nodes[node].period;
    if kids.len() == 1 && tree.nodes[kids[0]].period == parent && !top {
        let k = kids[0];
        writeln!(out, "{indent}{}", names.func(tree.nodes[k].func))?;
        return write_children(out, tree, k, indent, names, total, limit, raw, false);
    }
    let n = kids.len();
    for (i, &k) in kids.iter().enumerate() {
        let share = if raw {
            tree.nodes[k].period.to_string()
        } else {
            format!("{:.2}%", pct(tree.nodes[k].period, total))
        };
        let last = i + 1 == n;
        let marker = if last { "--" } else { "|--" };
        let label = format!("{marker}{share}-- ");
        writeln!(out, "{indent}{label}{}", names.func(tree.nodes[k].func))?;
        let pad = if last { " ".repeat(label.len()) } else { format!("|{}", " ".repeat(label.len() - 1)) };
        let child_indent = format!("{indent}{pad}");
        write_children(out, tree, k, &child_indent, names, total, limit, raw, false)?;
        if !last {
            writeln!(out, "{indent}|")?;
        }
    }
    Ok(())
}
