//! `perf script`'s default layout, so that tools that import perf script text (the Firefox
//! Profiler, speedscope, Perfetto's UI, FlameGraph's stackcollapse-perf.pl) open rperf's
//! recordings: per sample a line `comm pid/tid [cpu] seconds.micros: period event:`, then one
//! line per frame, innermost first (`\taddress symbol (binary)`), then an empty line. Samples
//! of every event, in time order. The address is the frame's place in its binary
//! (`vaddr_in_file`); inline frames repeat their address; off-CPU time ends in an `[off-cpu]`
//! frame, as in the other stack outputs.

use std::io::{self, Write};

use crate::profile::Profile;

/// Writes every sample.
pub fn write(out: &mut dyn Write, p: &Profile) -> io::Result<()> {
    let mut rows: Vec<(&str, &crate::profile::Row)> =
        p.shown_sections().flat_map(|s| s.rows.iter().map(move |r| (s.name.as_str(), r))).collect();
    rows.sort_by_key(|(_, r)| r.time);
    let names = &p.names;
    let mut w = io::BufWriter::new(out);
    for (event, r) in rows {
        let comm = crate::escape::printable(names.comm(r.thread.comm));
        writeln!(
            w,
            "{comm} {}/{} [{:03}] {}.{:06}: {:>10} {}: ",
            r.thread.pid,
            r.thread.tid,
            r.cpu,
            r.time / 1_000_000_000,
            r.time % 1_000_000_000 / 1000,
            r.weight,
            crate::escape::printable(event)
        )?;
        let marker = if r.off_cpu { p.off_cpu_marker } else { None };
        if let Some(m) = marker {
            writeln!(w, "\t{:>16x} {} ([off-cpu])", 0, names.func(m).name)?;
        }
        for &a in &p.stacks[r.stack as usize] {
            let addr = p.symbols.vaddr_in_file(a);
            for &f in p.symbols.funcs(a) {
                // Parsers take the binary as one word in parentheses.
                let dso = names.dso_of(f).display_name().replace(' ', "_");
                writeln!(
                    w,
                    "\t{addr:>16x} {} ({})",
                    crate::escape::printable(&names.func(f).name),
                    crate::escape::printable(&dso)
                )?;
            }
        }
        writeln!(w)?;
    }
    w.flush()
}
