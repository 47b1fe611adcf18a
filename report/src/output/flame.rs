//! Stack outputs: folded stacks and flamegraph SVGs (through inferno), plain and differential.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::configs::FlameConfig;
use crate::model::DsoKind;
use crate::options::StackPrefix;
use crate::profile::{Names, Profile, Section};

/// How stacks become folded lines.
#[derive(Clone, Copy, Debug)]
pub struct FoldStyle {
    /// Weights are event counts (else sample counts).
    pub by_period: bool,
    /// What the root names besides the thread.
    pub prefix: StackPrefix,
    /// Kernel frames end in `_[k]`, JIT frames in `_[j]`.
    pub annotate: bool,
    /// Stacks under this share (percent) of the total are left out.
    pub percent_limit: f64,
}

impl FoldStyle {
    /// The style the options ask for; weights of time-weighted sections are always time.
    pub fn new(opts: &FlameConfig, section: &Section) -> FoldStyle {
        FoldStyle {
            by_period: opts.event_counts || section.time_in_ns(),
            prefix: opts.prefix,
            annotate: opts.annotate,
            percent_limit: opts.percent_limit,
        }
    }
}

/// A frame's name in stack outputs: `;` (the separator) replaced, kernel and JIT code tagged
/// when asked.
fn frame_name(names: &Names, id: u32, annotate: bool) -> String {
    let name = crate::escape::printable(&names.func_name(id)).replace(';', ":");
    if !annotate {
        return name;
    }
    match names.dso_of(id).kind {
        DsoKind::Kernel => format!("{name}_[k]"),
        k if k.is_jit() => format!("{name}_[j]"),
        _ => name,
    }
}

/// Folded lines of a section, root first and leaf last, prefixed by the thread name (and pid
/// or tid), with their weights; off-CPU time ends in an `[off-cpu]` frame; identical lines are
/// merged and the result is sorted.
pub fn folded_lines(p: &Profile, section: &Section, style: FoldStyle) -> Vec<(String, u64)> {
    let mut merged: BTreeMap<String, u64> = BTreeMap::new();
    let total = if style.by_period { section.weight } else { section.samples };
    let min = (style.percent_limit / 100.0 * total as f64).ceil() as u64;
    let names = &p.names;
    for c in &section.stacks {
        let weight = if style.by_period { c.weight } else { c.samples };
        if weight == 0 || weight < min {
            continue;
        }
        let comm = crate::escape::printable(names.comm(c.thread.comm)).replace(';', ":");
        let mut line = match style.prefix {
            StackPrefix::Comm => comm,
            StackPrefix::Pid => format!("{comm}-{}", c.thread.pid),
            StackPrefix::Tid => format!("{comm}-{}/{}", c.thread.pid, c.thread.tid),
        };
        let frames: Vec<u32> = p.frames(c.stack, c.off_cpu, true).collect();
        for f in frames.iter().rev() {
            line.push(';');
            line.push_str(&frame_name(names, *f, style.annotate));
        }
        let w = merged.entry(line).or_default();
        *w = w.saturating_add(weight);
    }
    merged.into_iter().collect()
}

/// Folded lines of the section stack outputs show.
pub fn main_lines(p: &Profile, opts: &FlameConfig) -> Vec<(String, u64)> {
    match p.main_section() {
        Some(s) => folded_lines(p, s, FoldStyle::new(opts, s)),
        None => Vec::new(),
    }
}

/// Writes folded stacks of the section stack outputs show (one event: weights of different
/// events do not add up; `--event` picks another).
pub fn write_folded(out: &mut dyn Write, p: &Profile, opts: &FlameConfig) -> io::Result<()> {
    for (line, weight) in main_lines(p, opts) {
        writeln!(out, "{line} {weight}")?;
    }
    Ok(())
}

/// Writes differential folded stacks, `stack base_count new_count` (the input of
/// flamegraph.pl and inferno for differential flamegraphs), normalized to the same total.
pub fn write_diff_folded(
    out: &mut dyn Write,
    p: &Profile,
    base: &Profile,
    opts: &FlameConfig,
) -> io::Result<()> {
    out.write_all(diff_lines(&main_lines(base, opts), &main_lines(p, opts))?.as_bytes())
}

/// Flamegraph settings.
pub struct SvgStyle<'a> {
    /// Title.
    pub title: &'a str,
    /// What the counts are, for tooltips (`samples`, `ns`, ...).
    pub count_name: &'a str,
    /// Icicle graph: roots at the top.
    pub inverted: bool,
    /// Leaf functions at the root.
    pub reverse: bool,
}

fn inferno_options(style: &SvgStyle<'_>) -> inferno::flamegraph::Options<'static> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = style.title.to_string();
    opts.count_name = style.count_name.to_string();
    opts.reverse_stack_order = style.reverse;
    if style.inverted {
        opts.direction = inferno::flamegraph::Direction::Inverted;
    }
    opts
}

/// Writes a flamegraph SVG of folded lines (inferno's, with its search and zoom).
pub fn write_svg(out: &mut dyn Write, lines: &[(String, u64)], style: &SvgStyle<'_>) -> io::Result<()> {
    let text: Vec<String> = lines.iter().map(|(l, w)| format!("{l} {w}")).collect();
    let mut opts = inferno_options(style);
    inferno::flamegraph::from_lines(&mut opts, text.iter().map(String::as_str), out)
        .map_err(|e| io::Error::other(e.to_string()))
}

/// Writes a differential flamegraph: the shape of `new`, red where a stack grew against `base`
/// and blue where it shrank (counts are scaled to the same total first).
pub fn write_diff_svg(
    out: &mut dyn Write,
    base: &[(String, u64)],
    new: &[(String, u64)],
    style: &SvgStyle<'_>,
) -> io::Result<()> {
    let diff = diff_lines(base, new)?;
    // The flamegraph merges neighbouring lines, so they go in sorted.
    let mut lines: Vec<&str> = diff.lines().collect();
    lines.sort_unstable();
    let mut opts = inferno_options(style);
    inferno::flamegraph::from_lines(&mut opts, lines, out).map_err(|e| io::Error::other(e.to_string()))
}

/// `stack base_count new_count` lines, normalized to the same total (inferno's differential
/// folding).
pub fn diff_lines(base: &[(String, u64)], new: &[(String, u64)]) -> io::Result<String> {
    let text = |lines: &[(String, u64)]| lines.iter().map(|(l, w)| format!("{l} {w}\n")).collect::<String>();
    let opts = inferno::differential::Options { normalize: true, ..Default::default() };
    let mut diff = Vec::new();
    inferno::differential::from_readers(opts, text(base).as_bytes(), text(new).as_bytes(), &mut diff)?;
    String::from_utf8(diff).map_err(io::Error::other)
}
