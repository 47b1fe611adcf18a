//! Stack outputs: folded stacks and flamegraph SVGs (through inferno).

use std::io::{self, Write};

use crate::aggregate::EventAggregate;
use crate::text::Names;

/// Folded lines, root first and leaf last, prefixed by the thread name, with sample counts
/// (or event counts with `by_period`).
pub fn folded_lines(agg: &EventAggregate, names: &Names<'_>, by_period: bool) -> Vec<String> {
    let mut lines: Vec<String> = agg
        .stacks
        .iter()
        .map(|((comm, frames), (period, samples))| {
            let weight = if by_period { period } else { samples };
            let mut line = names.comm(*comm).replace(';', ":");
            for f in frames.iter().rev() {
                line.push(';');
                line.push_str(&names.func_name(*f).replace(';', ":"));
            }
            format!("{line} {weight}")
        })
        .collect();
    lines.sort();
    lines
}

/// Writes folded stacks.
pub fn write_folded(
    out: &mut dyn Write,
    agg: &EventAggregate,
    names: &Names<'_>,
    by_period: bool,
) -> io::Result<()> {
    for l in folded_lines(agg, names, by_period) {
        writeln!(out, "{l}")?;
    }
    Ok(())
}

/// Writes a flamegraph SVG titled `title`, widths by samples or (`by_period`) event counts,
/// named `count_name` in the tooltips.
pub fn write_svg(
    out: &mut dyn Write,
    agg: &EventAggregate,
    names: &Names<'_>,
    title: &str,
    count_name: &str,
    by_period: bool,
) -> io::Result<()> {
    let lines = folded_lines(agg, names, by_period);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = count_name.to_string();
    inferno::flamegraph::from_lines(&mut opts, lines.iter().map(String::as_str), out)
        .map_err(|e| io::Error::other(e.to_string()))
}
